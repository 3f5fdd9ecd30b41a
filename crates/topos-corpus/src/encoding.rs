//! How input bytes become text, and what was wrong with them.
//!
//! Text inputs are UTF-8 by default, and strictly: a byte sequence that is not UTF-8 is an
//! error naming the file, the line and the byte, because the alternatives are silently wrong —
//! replacing a Latin-1 `é` (0xE9) by U+FFFD, which is not a letter, cuts "café" to "caf" and
//! drops "naïve" as a two-letter word. The user chooses instead: `latin1` (ISO-8859-1: every
//! byte is the code point of its value), `windows-1252` (Latin-1 with the printable characters
//! Windows puts at 0x80–0x9F: curly quotes, dashes, €), or `utf-8-lossy` (invalid sequences
//! become U+FFFD, and their bytes and documents are counted and reported).

use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The encoding of text inputs (`prepare --encoding`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub enum Encoding {
    /// UTF-8; an invalid byte is an error (the default).
    #[default]
    #[serde(rename = "utf-8")]
    Utf8,
    /// UTF-8; invalid sequences are replaced by U+FFFD, counted and reported.
    #[serde(rename = "utf-8-lossy")]
    Utf8Lossy,
    /// ISO-8859-1: byte b is U+00bb.
    #[serde(rename = "latin1")]
    Latin1,
    /// Windows-1252: Latin-1 but for 0x80–0x9F (the WHATWG table; its five unassigned bytes
    /// map to the C1 controls of their value, as browsers do).
    #[serde(rename = "windows-1252")]
    Windows1252,
}

/// What to tell a user whose input is not UTF-8.
pub const HINT: &str = "if the input is Latin-1 or Windows-1252 text give --encoding latin1 or --encoding windows-1252; to replace invalid bytes (counted in the summary) give --encoding utf-8-lossy";

/// Windows-1252's 0x80–0x9F.
const CP1252_HIGH: [char; 32] = [
    '\u{20ac}', '\u{81}', '\u{201a}', '\u{192}', '\u{201e}', '\u{2026}', '\u{2020}', '\u{2021}',
    '\u{2c6}', '\u{2030}', '\u{160}', '\u{2039}', '\u{152}', '\u{8d}', '\u{17d}', '\u{8f}',
    '\u{90}', '\u{2018}', '\u{2019}', '\u{201c}', '\u{201d}', '\u{2022}', '\u{2013}', '\u{2014}',
    '\u{2dc}', '\u{2122}', '\u{161}', '\u{203a}', '\u{153}', '\u{9d}', '\u{17e}', '\u{178}',
];

/// An invalid UTF-8 sequence: where it starts (byte offset in the decoded unit) and its first
/// byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Invalid {
    pub offset: usize,
    pub byte: u8,
}

impl Invalid {
    /// "invalid UTF-8 at byte N (0xXX); <what to do>".
    pub fn describe(&self) -> String {
        format!(
            "invalid UTF-8 at byte {} (0x{:02x}); {HINT}",
            self.offset + 1,
            self.byte
        )
    }
}

/// Invalid bytes replaced under `utf-8-lossy`, shared by the threads that read.
#[derive(Clone, Debug, Default)]
pub struct DecodeStats(Arc<[AtomicU64; 2]>);

impl DecodeStats {
    /// Bytes replaced by U+FFFD.
    pub fn invalid_bytes(&self) -> u64 {
        self.0[0].load(Ordering::Relaxed)
    }
    /// Documents (or vocabulary lines) with at least one replaced byte.
    pub fn units_with_invalid(&self) -> u64 {
        self.0[1].load(Ordering::Relaxed)
    }
    fn add(&self, bytes: u64) {
        self.0[0].fetch_add(bytes, Ordering::Relaxed);
        self.0[1].fetch_add(1, Ordering::Relaxed);
    }
}

impl std::str::FromStr for Encoding {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s.to_ascii_lowercase().replace('_', "-").as_str() {
            "utf-8" | "utf8" => Encoding::Utf8,
            "utf-8-lossy" | "utf8-lossy" => Encoding::Utf8Lossy,
            "latin1" | "latin-1" | "iso-8859-1" | "iso8859-1" => Encoding::Latin1,
            "windows-1252" | "cp1252" => Encoding::Windows1252,
            _ => {
                return Err(format!(
                    "unknown encoding {s:?}; use utf-8, utf-8-lossy, latin1 or windows-1252"
                ))
            }
        })
    }
}

impl std::fmt::Display for Encoding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Encoding {
    /// The name accepted by `--encoding`.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Utf8 => "utf-8",
            Encoding::Utf8Lossy => "utf-8-lossy",
            Encoding::Latin1 => "latin1",
            Encoding::Windows1252 => "windows-1252",
        }
    }

    /// `bytes` (one document, line or file) as text. Valid UTF-8 is moved, not copied, under the
    /// two UTF-8 encodings; under `utf-8-lossy` replacements are counted in `stats`.
    pub fn decode(self, bytes: Vec<u8>, stats: &DecodeStats) -> Result<String, Invalid> {
        match self {
            Encoding::Utf8 | Encoding::Utf8Lossy => match String::from_utf8(bytes) {
                Ok(s) => Ok(s),
                Err(e) => {
                    let bytes = e.into_bytes();
                    if self == Encoding::Utf8 {
                        let offset = std::str::from_utf8(&bytes)
                            .err()
                            .map_or(0, |e| e.valid_up_to());
                        return Err(Invalid {
                            offset,
                            byte: bytes[offset],
                        });
                    }
                    let invalid: usize = bytes.utf8_chunks().map(|c| c.invalid().len()).sum();
                    stats.add(invalid as u64);
                    Ok(String::from_utf8_lossy(&bytes).into_owned())
                }
            },
            Encoding::Latin1 => Ok(if bytes.is_ascii() {
                String::from_utf8(bytes).expect("ASCII is UTF-8")
            } else {
                bytes.iter().map(|&b| char::from(b)).collect()
            }),
            Encoding::Windows1252 => Ok(if bytes.is_ascii() {
                String::from_utf8(bytes).expect("ASCII is UTF-8")
            } else {
                bytes
                    .iter()
                    .map(|&b| match b {
                        0x80..=0x9f => CP1252_HIGH[usize::from(b - 0x80)],
                        _ => char::from(b),
                    })
                    .collect()
            }),
        }
    }
}

/// The 1-based line of byte `offset` in `bytes`, and the offset within that line.
pub fn line_of(bytes: &[u8], offset: usize) -> (u64, usize) {
    let before = &bytes[..offset.min(bytes.len())];
    let line = before.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
    let start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    (line, offset - start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_lossy_latin1_and_windows_1252() {
        let latin1 = b"caf\xe9 na\xefve".to_vec();
        let stats = DecodeStats::default();
        let e = Encoding::Utf8.decode(latin1.clone(), &stats).unwrap_err();
        assert_eq!(
            e,
            Invalid {
                offset: 3,
                byte: 0xe9
            }
        );
        assert!(
            e.describe().contains("byte 4 (0xe9)") && e.describe().contains("--encoding latin1")
        );
        assert_eq!(
            Encoding::Latin1.decode(latin1.clone(), &stats).unwrap(),
            "café naïve"
        );
        assert_eq!(
            Encoding::Windows1252
                .decode(b"\x93quoted\x94 \x80 5 \x81".to_vec(), &stats)
                .unwrap(),
            "\u{201c}quoted\u{201d} € 5 \u{81}"
        );
        assert_eq!(stats.invalid_bytes(), 0);
        assert_eq!(
            Encoding::Utf8Lossy.decode(latin1, &stats).unwrap(),
            "caf\u{fffd} na\u{fffd}ve"
        );
        assert_eq!((stats.invalid_bytes(), stats.units_with_invalid()), (2, 1));
        assert_eq!(Encoding::Utf8.decode("é".into(), &stats).unwrap(), "é");
        for (s, e) in [
            ("UTF8", Encoding::Utf8),
            ("iso-8859-1", Encoding::Latin1),
            ("cp1252", Encoding::Windows1252),
            ("utf-8-lossy", Encoding::Utf8Lossy),
        ] {
            assert_eq!(s.parse::<Encoding>().unwrap(), e);
            assert_eq!(e.name().parse::<Encoding>().unwrap(), e);
        }
        assert!("ebcdic".parse::<Encoding>().is_err());
        assert_eq!(line_of(b"ab\ncd\nef", 7), (3, 1));
        assert_eq!(line_of(b"ab", 1), (1, 1));
    }
}
