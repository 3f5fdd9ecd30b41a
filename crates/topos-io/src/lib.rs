//! File plumbing shared by every Topos file format (corpus `.tcorp`, model `.tmod`, document-topic
//! side files, checkpoints).
//!
//! Every file is `header ‖ payload`. The 32-byte header holds an 8-byte magic naming the kind of
//! file, a format version, the payload length and an XXH3-64 checksum of the payload, so a foreign,
//! truncated, corrupted or too-new file is recognised before anything is parsed ([`check`]).
//! Files are written through [`AtomicFile`]: to a temporary file in the same directory that is
//! renamed over the real name only once complete, so a crash never leaves half a file behind.

mod atomic;
mod codec;
pub mod mem;

pub use atomic::{
    is_ledger_name, live_writer, refuse_ledger, remove_stale_temporaries, AtomicFile, Staged,
    StreamingFile,
};
pub use codec::{ByteReader, ByteWriter};

use std::path::Path;

/// Bytes in the header.
pub const HEADER_LEN: usize = 32;

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    #[error("{path}: not a {kind} file (unrecognised magic bytes){looks_like}")]
    Foreign {
        path: String,
        kind: &'static str,
        /// What the file seems to be instead, as "; it is ..." (empty when unknown).
        looks_like: String,
    },
    #[error("{path}: {kind} format version {found} is not supported by this build (it reads versions {supported}); {hint}")]
    Version {
        path: String,
        kind: &'static str,
        found: u32,
        supported: String,
        hint: &'static str,
    },
    #[error("{path}: truncated {kind} file ({actual} bytes, expected {expected}); re-create it")]
    Truncated {
        path: String,
        kind: &'static str,
        actual: u64,
        expected: u64,
    },
    #[error("{path}: corrupted {kind} file (checksum mismatch); re-create it")]
    Corrupt { path: String, kind: &'static str },
    /// `what` may quote the file (a decoder's message about a string in it), so its line
    /// breaks are printed as spaces: the message stays one line.
    #[error("{path}: malformed {kind} file: {}", what.replace(['\r', '\n'], " "))]
    Malformed {
        path: String,
        kind: &'static str,
        what: String,
    },
    /// The operating system's error is part of the message and deliberately not also exposed
    /// as `source()`: a caller that prints the chain (anyhow's `{:#}`) would print it twice.
    #[error("{path}: {cause}")]
    Io { path: String, cause: std::io::Error },
}

impl FormatError {
    /// An I/O error on `path`.
    pub fn io(path: &Path, cause: std::io::Error) -> Self {
        FormatError::Io {
            path: path.display().to_string(),
            cause,
        }
    }
}

/// What a file kind's header must look like.
#[derive(Clone, Copy, Debug)]
pub struct Kind {
    /// Human name used in messages, e.g. "Topos corpus".
    pub name: &'static str,
    /// The 8 magic bytes.
    pub magic: [u8; 8],
    /// Versions this build reads.
    pub supported: &'static [u32],
    /// What to tell a user who has a version this build cannot read.
    pub version_hint: &'static str,
}

/// An error and its causes joined into one line, as anyhow's `{:#}` does, except that a cause
/// whose text the message already contains is not repeated: a library error that prints its
/// cause and also returns it from `source()` (or wraps another error with `#[error("{0}")]`
/// and `#[from]`) would otherwise show the OS error twice. Line breaks inside a message become
/// spaces, so the error stays one line whatever a dependency writes. The CLI prints it after
/// `error: `, and the Python package raises it, so both say the same words.
pub fn one_line(e: &(dyn std::error::Error + 'static)) -> String {
    let mut msg = String::new();
    let mut cause = Some(e);
    while let Some(c) = cause {
        let text = c.to_string();
        if !(text.is_empty() || msg.contains(&text)) {
            if !msg.is_empty() {
                msg.push_str(": ");
            }
            msg.push_str(&text);
        }
        cause = c.source();
    }
    msg.replace(['\r', '\n'], " ")
}

/// The advice that follows "cannot write PATH: CAUSE" for an output that cannot be written: an
/// error of the operating system (a missing directory, no permission, a full disk) is about the
/// directory; a refusal Topos made itself (a directory, a device, a ledger, a live writer)
/// already says what to do, and advice about the directory would contradict it.
pub fn output_advice(cause: &std::io::Error) -> &'static str {
    if cause.get_ref().is_some_and(|e| e.is::<Refusal>()) {
        ""
    } else {
        "; check that the directory exists and is writable"
    }
}

/// A path Topos refuses to write by its own rule (a directory, a device, a ledger, a path
/// another process is writing), carried inside an `std::io::Error` so that
/// [`output_advice`] knows its message already says what to do.
#[derive(Debug)]
pub struct Refusal(pub &'static str);

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for Refusal {}

impl Refusal {
    /// The refusal as an I/O error of `kind`.
    pub fn io(kind: std::io::ErrorKind, why: &'static str) -> std::io::Error {
        std::io::Error::new(kind, Refusal(why))
    }
}

/// Whether `a` and `b` name the same file, whether or not it exists yet: each is resolved
/// through its nearest existing directory (symbolic links, `.` and `..`), and two existing
/// files are also compared by device and inode (hard links). A command checks its outputs
/// against its inputs and against each other with this before any work, so that no output can
/// be written over a file the command reads or another output of the same run.
pub fn same_file(a: &Path, b: &Path) -> bool {
    fn resolve(p: &Path) -> Option<std::path::PathBuf> {
        if let Ok(c) = std::fs::canonicalize(p) {
            return Some(c);
        }
        let name = p.file_name()?;
        let parent = match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        Some(std::fs::canonicalize(parent).ok()?.join(name))
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b)) {
            if x.dev() == y.dev() && x.ino() == y.ino() {
                return true;
            }
        }
    }
    matches!((resolve(a), resolve(b)), (Some(x), Some(y)) if x == y)
}

/// XXH3-64 of `bytes`.
pub fn checksum(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

/// The header for `payload` in `version` of `kind`.
pub fn header(kind: &Kind, version: u32, payload: &[u8]) -> [u8; HEADER_LEN] {
    header_with(kind, version, payload.len() as u64, checksum(payload))
}

/// The header for a payload of `len` bytes whose XXH3-64 is `sum`.
pub fn header_with(kind: &Kind, version: u32, len: u64, sum: u64) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..8].copy_from_slice(&kind.magic);
    h[8..12].copy_from_slice(&version.to_le_bytes());
    // 12..16 reserved (zero)
    h[16..24].copy_from_slice(&len.to_le_bytes());
    h[24..32].copy_from_slice(&sum.to_le_bytes());
    h
}

/// A verified file: its version, payload and payload checksum.
#[derive(Debug)]
pub struct Checked<'a> {
    pub version: u32,
    pub payload: &'a [u8],
    pub checksum: u64,
}

/// Verifies the header of `bytes` (a whole file) against `kind` and returns the payload.
pub fn check<'a>(kind: &Kind, path: &Path, bytes: &'a [u8]) -> Result<Checked<'a>, FormatError> {
    let checked = check_header(kind, path, bytes)?;
    if checksum(checked.payload) != checked.checksum {
        return Err(FormatError::Corrupt {
            path: path.display().to_string(),
            kind: kind.name,
        });
    }
    Ok(checked)
}

/// What a file that is not the expected kind seems to be, for the error: another Topos file, or
/// text (which `topos prepare` turns into a corpus).
fn looks_like(bytes: &[u8]) -> String {
    let what = match bytes.get(..8) {
        Some(b"TOPOSCRP") => "a Topos corpus file",
        Some(b"TOPOSMOD") => "a Topos model file",
        Some(b"TOPOSCKP") => "a Topos checkpoint",
        Some(b"TOPOSDTC") => "a Topos document-topic file",
        _ => {
            let head = &bytes[..bytes.len().min(4096)];
            if head.starts_with(&[0x1f, 0x8b]) {
                return "; it is gzip-compressed (text? `topos prepare` makes a corpus of it)"
                    .into();
            }
            // UTF-8 without NUL bytes (a character cut by the 4 KiB window still counts).
            let valid = match std::str::from_utf8(head) {
                Ok(_) => head.len(),
                Err(e) if e.error_len().is_none() => e.valid_up_to(),
                Err(_) => 0,
            };
            let text = valid > 0 && !head[..valid].contains(&0);
            if text {
                return "; it looks like text: `topos prepare` makes a corpus of it".into();
            }
            return String::new();
        }
    };
    format!("; it is {what}")
}

/// [`check`] but for the payload's checksum, which reads every byte: for a process that will
/// read only part of a large file another process checked whole (the `checksum` returned is the
/// header's, to compare with that process's).
pub fn check_header<'a>(
    kind: &Kind,
    path: &Path,
    bytes: &'a [u8],
) -> Result<Checked<'a>, FormatError> {
    let p = || path.display().to_string();
    if bytes.len() < 8 || bytes[..8] != kind.magic {
        return Err(FormatError::Foreign {
            path: p(),
            kind: kind.name,
            looks_like: looks_like(bytes),
        });
    }
    if bytes.len() < HEADER_LEN {
        return Err(FormatError::Truncated {
            path: p(),
            kind: kind.name,
            actual: bytes.len() as u64,
            expected: HEADER_LEN as u64,
        });
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
    if !kind.supported.contains(&version) {
        return Err(FormatError::Version {
            path: p(),
            kind: kind.name,
            found: version,
            supported: kind
                .supported
                .iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            hint: kind.version_hint,
        });
    }
    let len = u64::from_le_bytes(bytes[16..24].try_into().unwrap());
    let sum = u64::from_le_bytes(bytes[24..32].try_into().unwrap());
    // Saturating: a damaged length field near 2^64 must read as "truncated", not overflow.
    let expected = (HEADER_LEN as u64).saturating_add(len);
    if (bytes.len() as u64) < expected {
        return Err(FormatError::Truncated {
            path: p(),
            kind: kind.name,
            actual: bytes.len() as u64,
            expected,
        });
    }
    if (bytes.len() as u64) > expected {
        return Err(FormatError::Malformed {
            path: p(),
            kind: kind.name,
            what: format!(
                "{} trailing bytes after the payload",
                bytes.len() as u64 - expected
            ),
        });
    }
    let payload = &bytes[HEADER_LEN..];
    Ok(Checked {
        version,
        payload,
        checksum: sum,
    })
}

/// Writes `header ‖ payload` to `path` atomically.
pub fn write_file(
    kind: &Kind,
    version: u32,
    path: &Path,
    payload: &[u8],
) -> Result<(), FormatError> {
    let mut f = AtomicFile::create(path)?;
    f.write_all(&header(kind, version, payload))?;
    f.write_all(payload)?;
    f.commit()
}

#[cfg(test)]
mod tests {
    #[test]
    fn same_file_sees_through_dots_links_and_files_not_yet_written() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir(d.join("sub")).unwrap();
        std::fs::write(d.join("a"), b"x").unwrap();
        assert!(same_file(&d.join("a"), &d.join("sub/../a")));
        assert!(same_file(&d.join("new"), &d.join("sub/../new")));
        assert!(!same_file(&d.join("a"), &d.join("b")));
        assert!(!same_file(&d.join("missing/x"), &d.join("missing/y")));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(d.join("a"), d.join("link")).unwrap();
            assert!(same_file(&d.join("link"), &d.join("a")));
            std::fs::hard_link(d.join("a"), d.join("hard")).unwrap();
            assert!(same_file(&d.join("hard"), &d.join("a")));
        }
    }

    use super::*;

    const KIND: Kind = Kind {
        name: "test",
        magic: *b"TOPOSTST",
        supported: &[1, 2],
        version_hint: "upgrade topos",
    };

    /// Found by the property tests (a mutated private model): a decoder's message that quotes
    /// the file, here serde_json's "unknown field" with a line break in the field's name, is
    /// still one line.
    #[test]
    fn a_malformed_file_is_reported_in_one_line_whatever_it_quotes() {
        let e = FormatError::Malformed {
            path: "m.tmod".into(),
            kind: "model",
            what: "privacy guarantee: unknown field `eps\nilon`, expected one of `epsilon`\r\n"
                .into(),
        };
        let msg = e.to_string();
        assert!(!msg.contains('\n') && !msg.contains('\r'), "{msg:?}");
        assert!(msg.contains("unknown field `eps ilon`"), "{msg}");
    }

    /// Found by the property tests: a length field near 2^64 overflowed `32 + len` (a panic in
    /// debug builds, a wrong "trailing bytes" message in release).
    #[test]
    fn a_huge_length_field_reads_as_truncated() {
        let kind = Kind {
            name: "test",
            magic: *b"TOPOSTST",
            supported: &[1],
            version_hint: "",
        };
        let mut bytes = header(&kind, 1, b"payload").to_vec();
        bytes.extend_from_slice(b"payload");
        for len in [u64::MAX, u64::MAX - 31, u64::MAX - 20] {
            bytes[16..24].copy_from_slice(&len.to_le_bytes());
            let e = check(&kind, Path::new("x"), &bytes).unwrap_err();
            assert!(matches!(e, FormatError::Truncated { .. }), "{e}");
        }
    }

    #[test]
    fn roundtrip_and_every_refusal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.bin");
        write_file(&KIND, 2, &path, b"hello payload").unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let c = check(&KIND, &path, &bytes).unwrap();
        assert_eq!(c.version, 2);
        assert_eq!(c.payload, b"hello payload");

        let err = |b: &[u8]| check(&KIND, &path, b).unwrap_err().to_string();
        assert!(err(b"PK\x03\x04 zip file").contains("not a test file"));
        // What the file is instead, when that is known.
        let foreign = err(b"PK\x03\x04\x00 zip");
        assert!(!foreign.contains("; it"), "{foreign}");
        assert!(err(b"TOPOSMOD and more").contains("; it is a Topos model file"));
        assert!(err("river water fish\nbank money, caf\u{e9}".as_bytes())
            .contains("it looks like text: `topos prepare` makes a corpus of it"));
        assert!(err(&[0x1f, 0x8b, 8, 0]).contains("gzip-compressed"));
        assert!(err(&bytes[..bytes.len() - 3]).contains("truncated"));
        let mut bad = bytes.clone();
        *bad.last_mut().unwrap() ^= 1;
        assert!(err(&bad).contains("checksum"));
        let mut v9 = bytes.clone();
        v9[8] = 9;
        let msg = err(&v9);
        assert!(msg.contains("version 9") && msg.contains("1, 2"), "{msg}");
        let mut long = bytes.clone();
        long.push(0);
        assert!(err(&long).contains("trailing"));
        // No temporary files left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
