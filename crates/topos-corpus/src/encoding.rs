//! How input bytes become text, and what was wrong with them.
//!
//! Text inputs are UTF-8 by default, and strictly: a byte sequence that is not UTF-8 is an
//! error naming the file, the line and the byte, because the alternatives are silently wrong —
//! replacing a Latin-1 `é` (0xE9) by U+FFFD, which is not a letter, cuts "café" to "caf" and
//! drops "naïve" as a two-letter word. The user chooses instead: `latin1` (ISO-8859-1: every
//! byte is the code point of its value), `windows-1252` (Latin-1 with the printable characters
//! Windows puts at 0x80–0x9F: curly quotes, dashes, €), or `utf-8-lossy` (invalid sequences
//! become U+FFFD, and their bytes and documents are counted and reported).
//!
//! Other legacy encodings are decoded by `encoding_rs` (the WHATWG Encoding Standard), under any
//! of its labels: `gbk`/`gb18030`, `big5`, `shift_jis`, `euc-jp`, `euc-kr`, `windows-1251`,
//! `koi8-r`, `iso-8859-2` … `iso-8859-16`, the other `windows-125x`, and so on. A byte
//! sequence malformed in that encoding becomes U+FFFD and is counted and reported, as under
//! `utf-8-lossy`. UTF-16 is refused: the readers cut lines at the byte `\n`. A UTF-16 file is
//! recognised by its byte-order mark or by every other byte being zero ([`utf16_at_start`]) and
//! refused under every `--encoding` with the command that converts it: read as UTF-8 it fails at
//! its first byte, and read as Latin-1 (the advice for other invalid bytes) it "works", giving a
//! vocabulary of single letters.
//!
//! A UTF-8 byte-order mark (U+FEFF at the start of a file, as Windows tools write) is not part
//! of the text: the readers drop it from a file's first line (`readers::LineReader::next_line`), and the
//! tokenizer treats one anywhere else as a separator.

use serde::{Serialize, Serializer};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The encoding of text inputs (`prepare --encoding`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// UTF-8; an invalid byte is an error (the default).
    #[default]
    Utf8,
    /// UTF-8; invalid sequences are replaced by U+FFFD, counted and reported.
    Utf8Lossy,
    /// ISO-8859-1: byte b is U+00bb.
    Latin1,
    /// Windows-1252: Latin-1 but for 0x80–0x9F (the WHATWG table; its five unassigned bytes
    /// map to the C1 controls of their value, as browsers do).
    Windows1252,
    /// Another encoding of the Encoding Standard (not UTF-8 or UTF-16), by `encoding_rs`;
    /// malformed sequences become U+FFFD, counted and reported.
    Legacy(&'static encoding_rs::Encoding),
}

impl Serialize for Encoding {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

/// What to tell a user whose input is not UTF-8.
pub const HINT: &str = "if the input is Latin-1 or Windows-1252 text give --encoding latin1 or --encoding windows-1252 (other legacy encodings too: gbk, big5, shift_jis, euc-kr, windows-1251, koi8-r, iso-8859-2, ...); to replace invalid bytes (counted in the summary) give --encoding utf-8-lossy";

/// Windows-1252's 0x80–0x9F.
const CP1252_HIGH: [char; 32] = [
    '\u{20ac}', '\u{81}', '\u{201a}', '\u{192}', '\u{201e}', '\u{2026}', '\u{2020}', '\u{2021}',
    '\u{2c6}', '\u{2030}', '\u{160}', '\u{2039}', '\u{152}', '\u{8d}', '\u{17d}', '\u{8f}',
    '\u{90}', '\u{2018}', '\u{2019}', '\u{201c}', '\u{201d}', '\u{2022}', '\u{2013}', '\u{2014}',
    '\u{2dc}', '\u{2122}', '\u{161}', '\u{203a}', '\u{153}', '\u{9d}', '\u{17e}', '\u{178}',
];

/// How bytes show that they are UTF-16 ([`utf16_at_start`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Utf16 {
    /// A UTF-16 byte-order mark (FF FE or FE FF): iconv's `UTF-16` reads the order from it.
    Bom,
    /// Every other byte zero, the zeros second (ASCII text in UTF-16LE, as Windows writes it).
    LittleEndian,
    /// Every other byte zero, the zeros first.
    BigEndian,
    /// Every other byte zero in a line that does not start the file, where the order cannot be
    /// told (a UTF-16LE line starts with the zero byte of the previous line's `\n`).
    Unknown,
}

impl Utf16 {
    /// What to say of a file that is UTF-16 this way: what it is and the command that converts it
    /// (`file` names it in the command; `FILE` when unknown).
    pub fn advice(self, file: &str) -> String {
        let (why, from, or) = match self {
            Utf16::Bom => ("starts with a UTF-16 byte-order mark", "UTF-16", ""),
            Utf16::LittleEndian => ("every other byte is zero", "UTF-16LE", ""),
            Utf16::BigEndian => ("every other byte is zero", "UTF-16BE", ""),
            Utf16::Unknown => (
                "every other byte is zero",
                "UTF-16LE",
                " (-f UTF-16BE if the text comes out garbled)",
            ),
        };
        format!(
            "the input is UTF-16 ({why}), which Topos does not read (not under any --encoding: lines are cut at the byte \\n); convert it to UTF-8 first: iconv -f {from} -t UTF-8 {file} > {file}.utf8{or}"
        )
    }
}

/// Whether `start` (the first bytes of a file, or of a line) is UTF-16: a byte-order mark, or at
/// least four 16-bit units of which every one has a zero byte on the same side and a non-zero
/// byte on the other (text in UTF-16 without a mark; no text in an 8-bit encoding or UTF-8 has
/// NUL bytes so regularly). Only the first 64 bytes are looked at.
pub fn utf16_at_start(start: &[u8]) -> Option<Utf16> {
    if start.starts_with(&[0xff, 0xfe]) || start.starts_with(&[0xfe, 0xff]) {
        return Some(Utf16::Bom);
    }
    let head = &start[..start.len().min(64) & !1];
    if head.len() < 8 {
        return None;
    }
    let units = || head.chunks_exact(2);
    if units().all(|u| u[0] != 0 && u[1] == 0) {
        Some(Utf16::LittleEndian)
    } else if units().all(|u| u[0] == 0 && u[1] != 0) {
        Some(Utf16::BigEndian)
    } else {
        None
    }
}

/// [`utf16_at_start`] of an input whose first line, `line`, was just read from `after`: judged on
/// the input's first 64 bytes, the line's and those buffered after it (a first line of a few
/// characters is too short to tell on its own). Nothing is consumed from `after`; a read error
/// there leaves the line alone to judge (the next read reports it).
pub fn utf16_at_first_line(line: &[u8], after: &mut impl std::io::BufRead) -> Option<Utf16> {
    let mut head = line[..line.len().min(64)].to_vec();
    if head.len() < 64 {
        if let Ok(more) = after.fill_buf() {
            head.extend_from_slice(&more[..more.len().min(64 - head.len())]);
        }
    }
    utf16_at_start(&head)
}

/// An invalid UTF-8 sequence: where it starts (byte offset in the decoded unit), its first byte,
/// and whether the unit looks like UTF-16 (then the advice is to convert it, not the Latin-1 of
/// [`HINT`], which would give a vocabulary of single letters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Invalid {
    pub offset: usize,
    pub byte: u8,
    pub utf16: Option<Utf16>,
}

impl Invalid {
    /// The error at byte `offset` of `bytes` (a line, a file).
    pub fn at(bytes: &[u8], offset: usize) -> Self {
        Invalid {
            offset,
            byte: bytes[offset],
            // A line's order is not the file's (see `Utf16::Unknown`); a mark is a mark.
            utf16: utf16_at_start(bytes).map(|u| match u {
                Utf16::Bom => Utf16::Bom,
                _ => Utf16::Unknown,
            }),
        }
    }

    /// "invalid UTF-8 at byte N (0xXX); <what to do>".
    pub fn describe(&self) -> String {
        let advice = match self.utf16 {
            Some(u) => u.advice("FILE"),
            None => HINT.to_string(),
        };
        format!(
            "invalid UTF-8 at byte {} (0x{:02x}); {advice}",
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
            _ => match encoding_rs::Encoding::for_label_no_replacement(s.trim().as_bytes()) {
                Some(e) if e == encoding_rs::UTF_16LE || e == encoding_rs::UTF_16BE => {
                    return Err(format!(
                        "{s:?} (UTF-16) is not supported: lines are cut at the byte \\n; convert the input to UTF-8 first (iconv -f {} -t UTF-8)",
                        e.name()
                    ))
                }
                Some(e) if e == encoding_rs::UTF_8 => Encoding::Utf8,
                Some(e) if e == encoding_rs::WINDOWS_1252 => Encoding::Windows1252,
                Some(e) => Encoding::Legacy(e),
                None => {
                    return Err(format!(
                        "unknown encoding {s:?}; use utf-8, utf-8-lossy, latin1, windows-1252 or another label of the Encoding Standard (gbk, gb18030, big5, shift_jis, euc-jp, euc-kr, windows-1251, koi8-r, iso-8859-2, ...)"
                    ))
                }
            },
        })
    }
}

impl std::fmt::Display for Encoding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

impl Encoding {
    /// The name accepted by `--encoding` (lower-case).
    pub fn name(self) -> std::borrow::Cow<'static, str> {
        match self {
            Encoding::Utf8 => "utf-8".into(),
            Encoding::Utf8Lossy => "utf-8-lossy".into(),
            Encoding::Latin1 => "latin1".into(),
            Encoding::Windows1252 => "windows-1252".into(),
            Encoding::Legacy(e) => e.name().to_ascii_lowercase().into(),
        }
    }

    /// Whether bytes that are not valid in the encoding are replaced (and counted) rather than
    /// refused: `utf-8-lossy` and the [`Encoding::Legacy`] ones. (Latin-1 and Windows-1252 have
    /// no invalid bytes.)
    pub fn replaces_invalid(self) -> bool {
        matches!(self, Encoding::Utf8Lossy | Encoding::Legacy(_))
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
                        return Err(Invalid::at(&bytes, offset));
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
            Encoding::Legacy(e) => {
                if bytes.is_ascii() && e.is_ascii_compatible() {
                    return Ok(String::from_utf8(bytes).expect("ASCII is UTF-8"));
                }
                Ok(decode_counting(e, &bytes, stats))
            }
        }
    }
}

/// `bytes` decoded by `e` (no BOM sniffing), each malformed sequence replaced by U+FFFD and its
/// bytes counted in `stats`.
fn decode_counting(e: &'static encoding_rs::Encoding, bytes: &[u8], stats: &DecodeStats) -> String {
    use encoding_rs::DecoderResult;
    let mut decoder = e.new_decoder_without_bom_handling();
    let mut out = String::with_capacity(
        decoder
            .max_utf8_buffer_length_without_replacement(bytes.len())
            .unwrap_or(bytes.len() * 3)
            + 16,
    );
    let mut src = bytes;
    let mut bad = 0u64;
    loop {
        let (result, read) = decoder.decode_to_string_without_replacement(src, &mut out, true);
        src = &src[read..];
        match result {
            DecoderResult::InputEmpty => break,
            DecoderResult::OutputFull => out.reserve(src.len() * 3 + 16),
            DecoderResult::Malformed(len, _) => {
                bad += u64::from(len);
                out.push('\u{fffd}');
            }
        }
    }
    if bad > 0 {
        stats.add(bad);
    }
    out
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
                byte: 0xe9,
                utf16: None,
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

    #[test]
    fn utf16_is_named_with_the_command_that_converts_it() {
        let le: Vec<u8> = "alpha beta\n"
            .encode_utf16()
            .flat_map(|u| u.to_le_bytes())
            .collect();
        let be: Vec<u8> = "alpha beta\n"
            .encode_utf16()
            .flat_map(|u| u.to_be_bytes())
            .collect();
        assert_eq!(utf16_at_start(&le), Some(Utf16::LittleEndian));
        assert_eq!(utf16_at_start(&be), Some(Utf16::BigEndian));
        assert_eq!(utf16_at_start(&[0xff, 0xfe, b'a', 0]), Some(Utf16::Bom));
        assert_eq!(utf16_at_start(&[0xfe, 0xff]), Some(Utf16::Bom));
        // Text, short units and a lone NUL are not UTF-16.
        for text in [
            &b"alpha beta gamma"[..],
            b"a\0b\0",
            b"a\0b\0c\0dd\0e\0",
            b"",
        ] {
            assert_eq!(utf16_at_start(text), None, "{text:?}");
        }
        // Decoded as UTF-8, a file with a mark fails at its first byte: the advice is iconv, not
        // --encoding latin1.
        let mut bom = vec![0xff, 0xfe];
        bom.extend_from_slice(&le);
        let e = Encoding::Utf8
            .decode(bom, &DecodeStats::default())
            .unwrap_err();
        assert_eq!((e.offset, e.byte, e.utf16), (0, 0xff, Some(Utf16::Bom)));
        let d = e.describe();
        assert!(
            d.contains("UTF-16") && d.contains("iconv -f UTF-16 -t UTF-8 FILE > FILE.utf8"),
            "{d}"
        );
        assert!(!d.contains("latin1") && !d.contains('\n'), "{d}");
        // Without a mark, a non-ASCII letter (é is E9 00) fails; the zeros still say UTF-16.
        let cafe: Vec<u8> = "café au lait"
            .encode_utf16()
            .flat_map(|u| u.to_le_bytes())
            .collect();
        let e = Encoding::Utf8
            .decode(cafe, &DecodeStats::default())
            .unwrap_err();
        assert_eq!(e.utf16, Some(Utf16::Unknown));
        assert!(
            e.describe().contains("iconv -f UTF-16LE"),
            "{}",
            e.describe()
        );
        let a = Utf16::LittleEndian.advice("u16.txt");
        assert!(
            a.contains("iconv -f UTF-16LE -t UTF-8 u16.txt > u16.txt.utf8"),
            "{a}"
        );
    }

    #[test]
    fn legacy_encodings_by_encoding_rs() {
        let stats = DecodeStats::default();
        let gbk: Encoding = "GBK".parse().unwrap();
        assert!(matches!(gbk, Encoding::Legacy(_)) && gbk.replaces_invalid());
        assert_eq!(gbk.name(), "gbk");
        assert_eq!(gbk.name().parse::<Encoding>().unwrap(), gbk);
        assert_eq!(gbk.to_string(), "gbk");
        assert_eq!(serde_json::to_string(&gbk).unwrap(), "\"gbk\"");
        assert_eq!(
            serde_json::to_string(&Encoding::Utf8Lossy).unwrap(),
            "\"utf-8-lossy\""
        );
        // 北京 天气 in GBK; ASCII passes through.
        let bytes = b"\xb1\xb1\xbe\xa9 \xcc\xec\xc6\xf8 ok".to_vec();
        assert_eq!(gbk.decode(bytes, &stats).unwrap(), "北京 天气 ok");
        assert_eq!(stats.invalid_bytes(), 0);
        // A lone lead byte at the end is malformed: replaced and counted.
        assert_eq!(
            gbk.decode(b"\xb1\xb1\xbe".to_vec(), &stats).unwrap(),
            "北\u{fffd}"
        );
        assert_eq!((stats.invalid_bytes(), stats.units_with_invalid()), (1, 1));
        for (label, text, bytes) in [
            (
                "windows-1251",
                "Привет мир",
                &b"\xcf\xf0\xe8\xe2\xe5\xf2 \xec\xe8\xf0"[..],
            ),
            ("shift_jis", "日本", &b"\x93\xfa\x96\x7b"[..]),
            ("iso-8859-2", "Łódź", &b"\xa3\xf3d\xbc"[..]),
        ] {
            let e: Encoding = label.parse().unwrap();
            assert_eq!(e.decode(bytes.to_vec(), &stats).unwrap(), text, "{label}");
        }
        // The names of the four built-in ones keep their meaning (the Encoding Standard maps
        // "latin1" to windows-1252; Topos means ISO-8859-1).
        assert_eq!("latin-1".parse::<Encoding>().unwrap(), Encoding::Latin1);
        assert_eq!("utf-8".parse::<Encoding>().unwrap(), Encoding::Utf8);
        assert_eq!(
            "unicode-1-1-utf-8".parse::<Encoding>().unwrap(),
            Encoding::Utf8
        );
        let e = "utf-16le".parse::<Encoding>().unwrap_err();
        assert!(e.contains("iconv"), "{e}");
        let e = "ebcdic".parse::<Encoding>().unwrap_err();
        assert!(e.contains("gbk") && !e.contains('\n'), "{e}");
    }
}
