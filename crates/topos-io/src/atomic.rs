//! Write-to-temporary-then-rename, for one file or for several that must change together.
//!
//! A file is written under a hidden temporary name in its destination's directory
//! (`.NAME.XXXXXX.tmp`) and renamed over the real name only once complete and synced, so a crash
//! never leaves half a file under the real name. The temporary is **locked** (an advisory lock
//! the operating system drops when its holder dies) for as long as it is being written: a later
//! writer of the same name deletes the temporaries nobody holds, so a process killed in the
//! middle of writing a multi-gigabyte model leaves nothing behind for long (issue 18, row 11).
//!
//! Several files that belong together (a model and its document-topic side file) are *staged*
//! first ([`AtomicFile::stage`]: complete and synced under their temporary names) and renamed
//! only when all of them are ready, so an error while writing any of them replaces none.

use crate::FormatError;
use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// A file being written under a temporary name in the destination's directory. [`AtomicFile::commit`]
/// flushes, syncs and renames it to the real name; dropping it uncommitted deletes the temporary,
/// so an error or a crash never leaves a partial file under the real name.
pub struct AtomicFile {
    tmp: Option<BufWriter<tempfile::NamedTempFile>>,
    path: PathBuf,
}

/// A complete, synced file under its temporary name, waiting to be renamed into place by
/// [`Staged::persist`]. Dropped unpersisted, the temporary is deleted.
#[derive(Debug)]
pub struct Staged {
    tmp: tempfile::NamedTempFile,
    path: PathBuf,
}

fn dir_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

fn temp_prefix(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!(".{name}.")
}

/// The temporaries of `path`'s writers, live or dead (files named like ours in its directory),
/// each opened for writing so that its lock can be tried. Files that cannot be opened are
/// skipped: neither caller can do anything with them.
fn temporaries(path: &Path) -> impl Iterator<Item = (PathBuf, File)> {
    let prefix = temp_prefix(path);
    std::fs::read_dir(dir_of(path))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(move |entry| {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if !(name.starts_with(&prefix) && name.ends_with(".tmp")) {
                return None;
            }
            let p = entry.path();
            let f = File::options().read(true).write(true).open(&p).ok()?;
            Some((p, f))
        })
}

/// Whether a live process is writing `path` now: one of its temporaries (named like ours) is
/// locked. A run holds such a temporary for its whole length ([`AtomicFile::claim`]), so a
/// second run, or another command, writing the same file is refused at its start instead of
/// silently replacing the first's output when both finish.
pub fn live_writer(path: &Path) -> bool {
    temporaries(path).any(|(_, f)| f.try_lock().is_err())
}

/// Deletes the temporaries of earlier writers of `path` that died before renaming them: files
/// named like ours whose lock nobody holds. Returns how many were removed. Best effort: a
/// temporary that cannot be opened or removed is left alone.
pub fn remove_stale_temporaries(path: &Path) -> usize {
    // A live writer holds the lock; a dead one's lock went with it.
    temporaries(path)
        .filter(|(p, f)| f.try_lock().is_ok() && std::fs::remove_file(p).is_ok())
        .count()
}

/// Whether `path` is named as a corpus's privacy ledger or its lock (`NAME.ledger`,
/// `NAME.ledger.lock`, `topos_privacy::ledger`): the record of the privacy budget spent on a
/// corpus, which only the ledger itself rewrites ([`AtomicFile::create_ledger`]). An output
/// renamed over it would erase that record (and a user who then removed the unreadable file
/// would start from a fresh budget); one renamed over the lock would let two processes hold it.
pub fn is_ledger_name(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(".ledger") || n.ends_with(".ledger.lock"))
}

/// Refuses a `path` that exists and is not a regular file (following symbolic links): the
/// rename that ends an atomic write would put a regular file in its place. Also refuses an
/// existing privacy ledger or its lock ([`is_ledger_name`]).
fn refuse_special(path: &Path) -> Result<(), FormatError> {
    refuse_special_file(path)?;
    refuse_ledger(path)
}

/// Refuses writing to `path` when it exists (a dangling link included) under a ledger's name
/// ([`is_ledger_name`]): the one refusal every output shares, whether it replaces its file
/// (an atomic write: the name itself is checked, since the rename replaces a link, not what it
/// names) or appends to it (a log: pass the name the link resolves to as well).
pub fn refuse_ledger(path: &Path) -> Result<(), FormatError> {
    if is_ledger_name(path) && std::fs::symlink_metadata(path).is_ok() {
        return Err(FormatError::io(
            path,
            crate::Refusal::io(
                std::io::ErrorKind::PermissionDenied,
                "it is a corpus's privacy ledger (the budget spent on it), which no output may replace; name another file",
            ),
        ));
    }
    Ok(())
}

/// [`refuse_special`] without the ledger's names.
fn refuse_special_file(path: &Path) -> Result<(), FormatError> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    let why = if meta.is_dir() {
        (
            std::io::ErrorKind::IsADirectory,
            "it is a directory, which is never replaced; name a file (in it, or elsewhere)",
        )
    } else if !meta.is_file() {
        (
            std::io::ErrorKind::InvalidInput,
            "it is not a regular file (a device, a pipe or a socket), which writing here would replace; name a file",
        )
    } else {
        return Ok(());
    };
    Err(FormatError::io(path, crate::Refusal::io(why.0, why.1)))
}

impl AtomicFile {
    /// Starts writing `path`: checks that its directory accepts a new file (so a run can refuse a
    /// bad output path before any work, by creating and dropping one), removes temporaries that
    /// dead writers left, and locks its own.
    ///
    /// A `path` that exists and is not a regular file is refused: a directory, and also a
    /// device, a pipe or a socket (`/dev/null`, `/dev/stdout`, a FIFO), which the final rename
    /// would replace with a regular file — as root, `/dev/null` itself.
    pub fn create(path: &Path) -> Result<Self, FormatError> {
        refuse_special(path)?;
        Self::create_checked(path)
    }

    /// [`AtomicFile::create`] for a privacy ledger rewriting itself: the one writer that may
    /// replace a file named as a ledger ([`is_ledger_name`]).
    pub fn create_ledger(path: &Path) -> Result<Self, FormatError> {
        refuse_special_file(path)?;
        Self::create_checked(path)
    }

    /// [`AtomicFile::create`] once `path` is known not to be special.
    fn create_checked(path: &Path) -> Result<Self, FormatError> {
        remove_stale_temporaries(path);
        let tmp = tempfile::Builder::new()
            .prefix(&temp_prefix(path))
            .suffix(".tmp")
            .tempfile_in(dir_of(path))
            .map_err(|e| FormatError::io(path, e))?;
        tmp.as_file().lock().map_err(|e| FormatError::io(path, e))?;
        // tempfile creates 0600 files; a model or corpus is an ordinary file (0644 before umask).
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o644));
        }
        Ok(Self {
            tmp: Some(BufWriter::with_capacity(1 << 20, tmp)),
            path: path.to_path_buf(),
        })
    }

    /// Checks, before any work, that a file can later be written at `path` this way: `path` is
    /// not a directory and its directory accepts a new file (a temporary is created beside it
    /// and removed, which also clears dead writers' temporaries). `path` itself is not touched.
    /// Every command checks its outputs with this, so that a bad path fails in one line before
    /// the work it would have lost.
    pub fn check_creatable(path: &Path) -> Result<(), FormatError> {
        Self::claim(path).map(drop)
    }

    /// [`AtomicFile::check_creatable`]'s checks, also refusing a `path` that another live
    /// process is writing ([`live_writer`]), and a locked temporary beside `path` kept until the
    /// claim is dropped (never renamed into place): what a long run holds so that no other
    /// writer of its output starts while it works.
    pub fn claim(path: &Path) -> Result<AtomicFile, FormatError> {
        refuse_special(path)?;
        if live_writer(path) {
            return Err(FormatError::io(
                path,
                crate::Refusal::io(
                    std::io::ErrorKind::ResourceBusy,
                    "another process is writing it now; wait for it to finish, or write to another path",
                ),
            ));
        }
        Self::create_checked(path)
    }

    /// Appends bytes.
    pub fn write_all(&mut self, bytes: &[u8]) -> Result<(), FormatError> {
        self.tmp
            .as_mut()
            .expect("write after commit")
            .write_all(bytes)
            .map_err(|e| FormatError::io(&self.path, e))
    }

    /// Overwrites bytes at `offset` from the start (for a header whose checksum is known only at
    /// the end); later writes go on at the end.
    pub fn write_at(&mut self, offset: u64, bytes: &[u8]) -> Result<(), FormatError> {
        let io = |e| FormatError::io(&self.path, e);
        let w = self.tmp.as_mut().expect("write after commit");
        w.flush().map_err(io)?;
        let f = w.get_mut().as_file_mut();
        f.seek(SeekFrom::Start(offset)).map_err(io)?;
        f.write_all(bytes).map_err(io)?;
        f.seek(SeekFrom::End(0)).map_err(io)?;
        Ok(())
    }

    /// The destination path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Completes the file under its temporary name (flushed and synced), to be renamed later.
    pub fn stage(mut self) -> Result<Staged, FormatError> {
        let w = self.tmp.take().expect("commit twice");
        let tmp = w
            .into_inner()
            .map_err(|e| FormatError::io(&self.path, e.into_error()))?;
        tmp.as_file()
            .sync_all()
            .map_err(|e| FormatError::io(&self.path, e))?;
        Ok(Staged {
            tmp,
            path: std::mem::take(&mut self.path),
        })
    }

    /// Makes the file visible under its real name.
    pub fn commit(self) -> Result<(), FormatError> {
        self.stage()?.persist()
    }
}

impl Staged {
    /// The destination path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the complete file lies until it is persisted (readable, e.g. memory-mapped, by
    /// work that must succeed before the file may take its real name).
    pub fn temp_path(&self) -> &Path {
        self.tmp.path()
    }

    /// Renames the file into place.
    pub fn persist(self) -> Result<(), FormatError> {
        self.tmp
            .persist(&self.path)
            .map_err(|e| FormatError::io(&self.path, e.error))?;
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.tmp.as_mut().expect("write after commit").write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.tmp.as_mut().expect("write after commit").flush()
    }
}

/// A Topos file (`header ‖ payload`) written piece by piece: the payload streams through an XXH3
/// hasher and the header is filled in at the end, so a file of any size is written without
/// holding its payload in memory. The bytes are exactly those of [`crate::write_file`] for the
/// same payload.
pub struct StreamingFile {
    file: AtomicFile,
    kind: crate::Kind,
    version: u32,
    hasher: xxhash_rust::xxh3::Xxh3,
    len: u64,
}

impl StreamingFile {
    /// Starts a file of `kind` and `version` at `path` (under a temporary name).
    pub fn create(kind: &crate::Kind, version: u32, path: &Path) -> Result<Self, FormatError> {
        let mut file = AtomicFile::create(path)?;
        file.write_all(&[0u8; crate::HEADER_LEN])?;
        Ok(Self {
            file,
            kind: *kind,
            version,
            hasher: xxhash_rust::xxh3::Xxh3::new(),
            len: 0,
        })
    }

    /// Appends payload bytes.
    pub fn write(&mut self, bytes: &[u8]) -> Result<(), FormatError> {
        self.hasher.update(bytes);
        self.len += bytes.len() as u64;
        self.file.write_all(bytes)
    }

    /// Writes the header and completes the file under its temporary name; returns it with the
    /// payload's checksum (what [`crate::check`] reports for the file).
    pub fn stage(mut self) -> Result<(Staged, u64), FormatError> {
        let sum = self.hasher.digest();
        let header = crate::header_with(&self.kind, self.version, self.len, sum);
        self.file.write_at(0, &header)?;
        Ok((self.file.stage()?, sum))
    }

    /// Completes the file and renames it into place; returns the payload's checksum.
    pub fn commit(self) -> Result<u64, FormatError> {
        let (staged, sum) = self.stage()?;
        staged.persist()?;
        Ok(sum)
    }
}

impl Write for StreamingFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        StreamingFile::write(self, buf).map_err(std::io::Error::other)?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIND: crate::Kind = crate::Kind {
        name: "test",
        magic: *b"TOPOSTST",
        supported: &[1],
        version_hint: "",
    };

    #[test]
    fn a_privacy_ledger_and_its_lock_are_replaced_only_by_the_ledger() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = dir.path().join("c.tcorp.ledger");
        let lock = dir.path().join("c.tcorp.ledger.lock");
        // Not there yet: any writer may create them (the ledger's first write among them).
        AtomicFile::check_creatable(&ledger).unwrap();
        for p in [&ledger, &lock] {
            std::fs::write(p, b"spent").unwrap();
            for refused in [
                AtomicFile::create(p).map(drop),
                AtomicFile::check_creatable(p),
            ] {
                let e = refused.unwrap_err().to_string();
                assert!(e.contains("privacy ledger"), "{e}");
            }
            assert_eq!(std::fs::read(p).unwrap(), b"spent");
        }
        let mut own = AtomicFile::create_ledger(&ledger).unwrap();
        own.write_all(b"spent more").unwrap();
        own.commit().unwrap();
        assert_eq!(std::fs::read(&ledger).unwrap(), b"spent more");
        assert!(!is_ledger_name(&dir.path().join("c.tcorp")));
        assert!(!is_ledger_name(&dir.path().join("ledger")));
    }

    #[test]
    fn directories_devices_and_sockets_are_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let msg = |p: &Path| AtomicFile::check_creatable(p).unwrap_err().to_string();
        assert!(msg(dir.path()).contains("it is a directory"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileTypeExt;
            let socket = dir.path().join("s.sock");
            let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
            assert!(
                msg(&socket).contains("not a regular file"),
                "{}",
                msg(&socket)
            );
            assert!(std::fs::metadata(&socket).unwrap().file_type().is_socket());
            let null = Path::new("/dev/null");
            if null.exists() {
                assert!(msg(null).contains("not a regular file"));
                assert!(std::fs::metadata(null)
                    .unwrap()
                    .file_type()
                    .is_char_device());
            }
        }
        // A regular file, and a name not yet written, are fine.
        let f = dir.path().join("f");
        AtomicFile::check_creatable(&f).unwrap();
        std::fs::write(&f, b"x").unwrap();
        AtomicFile::check_creatable(&f).unwrap();
        assert_eq!(std::fs::read(&f).unwrap(), b"x");
        // While a claim is held, the name is refused to every other writer's check; a plain
        // write (the claim holder's own) still goes through.
        let claim = AtomicFile::claim(&f).unwrap();
        assert!(live_writer(&f));
        assert!(
            msg(&f).contains("another process is writing it now"),
            "{}",
            msg(&f)
        );
        let mut own = AtomicFile::create(&f).unwrap();
        own.write_all(b"y").unwrap();
        own.commit().unwrap();
        drop(claim);
        assert!(!live_writer(&f));
        AtomicFile::check_creatable(&f).unwrap();
        assert_eq!(std::fs::read(&f).unwrap(), b"y");
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn streaming_equals_whole_and_stale_temporaries_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let whole = dir.path().join("whole.bin");
        let streamed = dir.path().join("streamed.bin");
        let payload: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
        crate::write_file(&KIND, 1, &whole, &payload).unwrap();
        let mut s = StreamingFile::create(&KIND, 1, &streamed).unwrap();
        for piece in payload.chunks(7777) {
            s.write(piece).unwrap();
        }
        let sum = s.commit().unwrap();
        assert_eq!(
            std::fs::read(&whole).unwrap(),
            std::fs::read(&streamed).unwrap()
        );
        assert_eq!(sum, crate::checksum(&payload));

        // A temporary whose writer died (nobody holds its lock) is removed by the next writer of
        // that name; one still being written is not.
        let dead = dir.path().join(".whole.bin.abc123.tmp");
        std::fs::write(&dead, b"half a model").unwrap();
        let live = AtomicFile::create(&whole).unwrap();
        assert!(!dead.exists());
        let other = AtomicFile::create(&whole).unwrap();
        let temps = || {
            std::fs::read_dir(dir.path())
                .unwrap()
                .filter(|e| {
                    let n = e.as_ref().unwrap().file_name();
                    n.to_string_lossy().ends_with(".tmp")
                })
                .count()
        };
        assert_eq!(temps(), 2, "a live writer's temporary was removed");
        drop(live);
        drop(other);
        assert_eq!(temps(), 0);
    }

    #[test]
    fn staged_files_appear_only_when_persisted() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let mut f = AtomicFile::create(&a).unwrap();
        f.write_all(b"x").unwrap();
        let staged = f.stage().unwrap();
        assert!(!a.exists());
        staged.persist().unwrap();
        assert_eq!(std::fs::read(&a).unwrap(), b"x");
        let mut g = AtomicFile::create(&a).unwrap();
        g.write_all(b"y").unwrap();
        drop(g.stage().unwrap());
        assert_eq!(std::fs::read(&a).unwrap(), b"x");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
