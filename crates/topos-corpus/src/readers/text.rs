//! Readers of text documents: one per line, one per `.txt` file, or one per JSONL object.

use super::{ByteCounter, Decoder, InputFormat, LineReader, Resolved};
use crate::encoding::line_of;
use crate::CorpusError;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A stream of text documents (`Send`, so that it can be read on its own thread while earlier
/// documents are tokenized).
pub trait TextSource: Send {
    /// Reads the next document into `doc` (replacing its contents). Returns false at the end.
    fn next_doc(&mut self, doc: &mut String) -> Result<bool, CorpusError>;
}

/// Opens the text reader for `input` (`text_field` names the JSONL field), decoding with
/// `decoder`. Bytes read from disk are counted in `counter`.
pub fn open(
    input: &Resolved,
    text_field: &str,
    counter: &ByteCounter,
    decoder: &Decoder,
) -> Result<Box<dyn TextSource + Send>, CorpusError> {
    Ok(match input.format {
        InputFormat::Lines => Box::new(Lines {
            lines: LineReader::open(&input.files[0], counter)?,
            decoder: decoder.clone(),
        }),
        InputFormat::Jsonl => Box::new(Jsonl {
            lines: LineReader::open(&input.files[0], counter)?,
            field: text_field.to_string(),
            buf: Vec::new(),
            decoder: decoder.clone(),
        }),
        InputFormat::Dir => Box::new(Dir {
            files: input.files.clone(),
            next: 0,
            counter: counter.clone(),
            decoder: decoder.clone(),
        }),
        f => unreachable!("{f} is not a text format"),
    })
}

/// One document per line; a blank line is an (empty) document so that document `i` is line
/// `i + 1`.
struct Lines {
    lines: LineReader,
    decoder: Decoder,
}

impl TextSource for Lines {
    fn next_doc(&mut self, doc: &mut String) -> Result<bool, CorpusError> {
        let mut bytes = std::mem::take(doc).into_bytes();
        if !self.lines.next_line(&mut bytes)? {
            return Ok(false);
        }
        *doc = self.decoder.line(bytes, &self.lines)?;
        Ok(true)
    }
}

/// The `.txt` files (any case of the extension) under `dir`, recursively, in sorted path order so
/// that document numbers do not depend on the file system's listing order. Hidden entries (names
/// starting with `.`) and symbolic links to directories are skipped; the other files that are
/// not read are counted in `skipped` by their lower-cased extension ("" for none), so that
/// `prepare` can say what it left out.
pub fn list_txt_files(
    dir: &Path,
    skipped: &mut BTreeMap<String, u64>,
) -> Result<Vec<PathBuf>, CorpusError> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries =
            std::fs::read_dir(&d).map_err(|e| CorpusError::io(&d, "list the directory", e))?;
        for e in entries {
            let e = e.map_err(|e| CorpusError::io(&d, "list the directory", e))?;
            if e.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let path = e.path();
            let ft = e
                .file_type()
                .map_err(|e| CorpusError::io(&path, "read the file type of", e))?;
            if ft.is_dir() {
                stack.push(path);
            } else if ft.is_file() || (ft.is_symlink() && path.is_file()) {
                // `.txt`, or `.txt.gz` (read through gzip, as a file of lines is).
                let name = e.file_name().to_string_lossy().to_ascii_lowercase();
                if name.ends_with(".txt") || name.ends_with(".txt.gz") {
                    out.push(path);
                } else {
                    let ext = name.rsplit_once('.').map_or("", |(_, ext)| ext);
                    *skipped.entry(ext.to_string()).or_default() += 1;
                }
            }
        }
    }
    out.sort();
    Ok(out)
}

/// One document per file.
struct Dir {
    files: Vec<PathBuf>,
    next: usize,
    counter: ByteCounter,
    decoder: Decoder,
}

impl TextSource for Dir {
    fn next_doc(&mut self, doc: &mut String) -> Result<bool, CorpusError> {
        let Some(path) = self.files.get(self.next) else {
            return Ok(false);
        };
        self.next += 1;
        let mut bytes = std::fs::read(path).map_err(|e| CorpusError::io(path, "read", e))?;
        self.counter.add(bytes.len() as u64);
        if bytes.starts_with(&[0x1f, 0x8b]) {
            // A `.txt.gz` (gzip by its magic bytes, as the line reader recognises it).
            let mut text = Vec::new();
            std::io::Read::read_to_end(
                &mut flate2::bufread::MultiGzDecoder::new(&bytes[..]),
                &mut text,
            )
            .map_err(|cause| CorpusError::Gzip {
                path: path.display().to_string(),
                cause,
            })?;
            bytes = text;
        }
        // UTF-16 is refused whatever the encoding (under Latin-1 it would "decode").
        if let Some(u) = crate::encoding::utf16_at_start(&bytes) {
            return Err(CorpusError::input(
                path,
                u.advice(&path.display().to_string()),
            ));
        }
        // The whole file is one document; an error names the line and byte within it.
        if self.decoder.encoding == crate::Encoding::Utf8 {
            if let Err(e) = std::str::from_utf8(&bytes) {
                let (line, col) = line_of(&bytes, e.valid_up_to());
                let start = e.valid_up_to() - col;
                let within = crate::encoding::Invalid::at(&bytes[start..], col);
                return Err(CorpusError::line(path, line, within.describe()));
            }
        }
        *doc = self
            .decoder
            .encoding
            .decode(bytes, &self.decoder.stats)
            .map_err(|e| CorpusError::input(path, e.describe()))?;
        Ok(true)
    }
}

/// One JSON object per line; the document is the string in `field`. A blank line is an (empty)
/// document, so document `i` is line `i + 1`; `null` is an empty document.
struct Jsonl {
    lines: LineReader,
    field: String,
    buf: Vec<u8>,
    decoder: Decoder,
}

impl TextSource for Jsonl {
    fn next_doc(&mut self, doc: &mut String) -> Result<bool, CorpusError> {
        if !self.lines.next_line(&mut self.buf)? {
            return Ok(false);
        }
        doc.clear();
        if self.buf.iter().all(u8::is_ascii_whitespace) {
            return Ok(true);
        }
        // Decoded first (JSON text is UTF-8; a Latin-1 file is converted; a byte-order mark
        // dropped), then parsed; the line's allocation is handed back to `buf` afterwards.
        let line = self
            .decoder
            .line(std::mem::take(&mut self.buf), &self.lines)?;
        if line.bytes().all(|b| b.is_ascii_whitespace()) {
            // A first line of only a byte-order mark.
            self.buf = line.into_bytes();
            return Ok(true);
        }
        let found = json_text_field(&line, &self.field, doc).map_err(|e| self.lines.error(e));
        self.buf = line.into_bytes();
        found.map(|()| true)
    }
}

/// Whether `line` is a JSON object: input that would be read as plain text keys and all, which
/// `infer` and `report --source` warn about when no `--text-field` is given.
pub fn looks_like_json_object(line: &str) -> bool {
    line.trim_start().starts_with('{')
        && serde_json::from_str::<serde_json::Value>(line).is_ok_and(|v| v.is_object())
}

/// The text of one JSONL line: the string in `field` of the JSON object `line`, copied into
/// `out` (emptied first; `null` leaves it empty). What `prepare` reads from JSONL input, for a
/// command that reads new documents in the same form (`infer --text-field`). The error says what
/// is wrong with the line, without its number.
pub fn json_text_field(line: &str, field: &str, out: &mut String) -> Result<(), String> {
    out.clear();
    let mut de = serde_json::Deserializer::from_str(line);
    let found = FieldSeed { field, out }
        .deserialize(&mut de)
        .and_then(|found| de.end().map(|_| found))
        .map_err(|e| {
            format!("is not a valid JSON object ({e}); JSONL needs one object per line")
        })?;
    match found {
        Found::Text | Found::Null => Ok(()),
        Found::Missing => Err(format!(
            "has no field \"{field}\"; name the text field with --text-field"
        )),
        Found::NotText(kind) => Err(format!(
            "field \"{field}\" is {kind}, not a string; name the text field with --text-field"
        )),
    }
}

enum Found {
    Text,
    Null,
    Missing,
    NotText(&'static str),
}

/// Deserializes one JSON object, copying the string of `field` into `out` and skipping every
/// other value without building it (records often carry large metadata).
struct FieldSeed<'a> {
    field: &'a str,
    out: &'a mut String,
}

impl<'de> DeserializeSeed<'de> for FieldSeed<'_> {
    type Value = Found;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Found, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for FieldSeed<'_> {
    type Value = Found;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Found, A::Error> {
        let mut found = Found::Missing;
        while let Some(is_field) = map.next_key_seed(KeySeed(self.field))? {
            if is_field && matches!(found, Found::Missing) {
                found = map.next_value_seed(ValueSeed { out: self.out })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// Whether a key is the text field (compared without allocating).
struct KeySeed<'a>(&'a str);

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = bool;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E>(self, v: &str) -> Result<bool, E> {
        Ok(v == self.0)
    }
}

/// The value of the text field: a string is copied out; anything else is named.
struct ValueSeed<'a> {
    out: &'a mut String,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Found;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Found, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_> {
    type Value = Found;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E>(self, v: &str) -> Result<Found, E> {
        self.out.push_str(v);
        Ok(Found::Text)
    }
    fn visit_unit<E>(self) -> Result<Found, E> {
        Ok(Found::Null)
    }
    fn visit_none<E>(self) -> Result<Found, E> {
        Ok(Found::Null)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Found, E> {
        Ok(Found::NotText("a boolean"))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Found, E> {
        Ok(Found::NotText("a number"))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Found, E> {
        Ok(Found::NotText("a number"))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Found, E> {
        Ok(Found::NotText("a number"))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut s: A) -> Result<Found, A::Error> {
        while s.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Found::NotText("an array"))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Found, A::Error> {
        while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Found::NotText("an object"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::readers::resolve;

    fn read_all(path: &Path, format: InputFormat, field: &str) -> Result<Vec<String>, CorpusError> {
        read_decoded(path, format, field, &Decoder::default())
    }

    fn read_decoded(
        path: &Path,
        format: InputFormat,
        field: &str,
        decoder: &Decoder,
    ) -> Result<Vec<String>, CorpusError> {
        let r = resolve(path, format, None)?;
        let mut src = open(&r, field, &ByteCounter::default(), decoder)?;
        let mut docs = vec![];
        let mut doc = String::new();
        while src.next_doc(&mut doc)? {
            docs.push(doc.clone());
        }
        Ok(docs)
    }

    #[test]
    fn invalid_utf8_is_refused_by_default_and_decoded_as_asked() {
        use crate::encoding::Encoding;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("docs.txt");
        std::fs::write(&p, b"first doc\n\nthird caf\xe9 na\xefve doc\n").unwrap();
        // Strict by default: the file, line, byte and what to do, in one line.
        let e = read_all(&p, InputFormat::Lines, "")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("docs.txt: line 3: invalid UTF-8 at byte 10 (0xe9)")
                && e.contains("--encoding latin1")
                && !e.contains('\n'),
            "{e}"
        );
        let latin1 = Decoder {
            encoding: Encoding::Latin1,
            ..Decoder::default()
        };
        assert_eq!(
            read_decoded(&p, InputFormat::Lines, "", &latin1).unwrap(),
            ["first doc", "", "third café naïve doc"]
        );
        let lossy = Decoder {
            encoding: Encoding::Utf8Lossy,
            ..Decoder::default()
        };
        assert_eq!(
            read_decoded(&p, InputFormat::Lines, "", &lossy).unwrap(),
            ["first doc", "", "third caf\u{fffd} na\u{fffd}ve doc"]
        );
        assert_eq!(lossy.stats.invalid_bytes(), 2);
        assert_eq!(lossy.stats.units_with_invalid(), 1);
        // A directory's file names its line; JSONL is decoded before it is parsed.
        let d = dir.path().join("dir");
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("a.txt"), b"ok\nstill ok\nbad \xe9\n").unwrap();
        let e = read_all(&d, InputFormat::Dir, "").unwrap_err().to_string();
        assert!(e.contains("a.txt: line 3: invalid UTF-8 at byte 5"), "{e}");
        assert_eq!(
            read_decoded(&d, InputFormat::Dir, "", &latin1).unwrap(),
            ["ok\nstill ok\nbad é\n"]
        );
        let j = dir.path().join("d.jsonl");
        std::fs::write(&j, b"{\"text\": \"caf\xe9\"}\n").unwrap();
        let e = read_all(&j, InputFormat::Jsonl, "text")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 1: invalid UTF-8"), "{e}");
        assert_eq!(
            read_decoded(&j, InputFormat::Jsonl, "text", &latin1).unwrap(),
            ["café"]
        );
    }

    #[test]
    fn dir_walks_sorted_recursively() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("b/sub")).unwrap();
        std::fs::create_dir_all(d.join(".git")).unwrap();
        for (name, text) in [
            ("b/sub/z.txt", "bz"),
            ("b/a.TXT", "ba"),
            ("a.txt", "a"),
            ("c.md", "not text"),
            (".hidden.txt", "hidden"),
            (".git/x.txt", "git"),
        ] {
            std::fs::write(d.join(name), text).unwrap();
        }
        assert_eq!(
            read_all(d, InputFormat::Dir, "").unwrap(),
            ["a", "ba", "bz"]
        );
        // A `.txt.gz` is read through gzip; a corrupt one is a gzip error naming it.
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut enc, "packed text".as_bytes()).unwrap();
        std::fs::write(d.join("b/c.txt.gz"), enc.finish().unwrap()).unwrap();
        assert_eq!(
            read_all(d, InputFormat::Dir, "").unwrap(),
            ["a", "ba", "packed text", "bz"]
        );
        std::fs::write(d.join("b/c.txt.gz"), [0x1f, 0x8b, 8, 0, 1, 2]).unwrap();
        let e = read_all(d, InputFormat::Dir, "").unwrap_err().to_string();
        assert!(e.contains("c.txt.gz"), "{e}");
    }

    #[test]
    fn jsonl_field_extraction_and_errors() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d.jsonl");
        std::fs::write(
            &p,
            "{\"id\": 1, \"meta\": {\"text\": \"nested\"}, \"text\": \"caf\\u00e9 one\"}\n\
             \n\
             {\"text\": null, \"tags\": [1, 2]}\n\
             {\"body\": \"x\", \"text\": \"two\"}\n",
        )
        .unwrap();
        assert_eq!(
            read_all(&p, InputFormat::Jsonl, "text").unwrap(),
            ["café one", "", "", "two"]
        );
        assert_eq!(
            read_all(&p, InputFormat::Jsonl, "body")
                .unwrap_err()
                .to_string(),
            format!(
                "{}: line 1: has no field \"body\"; name the text field with --text-field",
                p.display()
            )
        );
        std::fs::write(&p, "{\"text\": \"ok\"}\n{\"text\": 3}\n").unwrap();
        let e = read_all(&p, InputFormat::Jsonl, "text")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2") && e.contains("a number"), "{e}");
        std::fs::write(&p, "{\"text\": \"ok\"}\n{\"text\": \"unterminated}\n").unwrap();
        let e = read_all(&p, InputFormat::Jsonl, "text")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 2") && e.contains("not a valid JSON"),
            "{e}"
        );
        std::fs::write(&p, "[\"text\"]\n").unwrap();
        let e = read_all(&p, InputFormat::Jsonl, "text")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 1") && e.contains("not a valid JSON object"),
            "{e}"
        );
        std::fs::write(&p, "{\"text\": \"a\"} {\"text\": \"b\"}\n").unwrap();
        assert!(read_all(&p, InputFormat::Jsonl, "text").is_err());
    }

    #[test]
    fn a_byte_order_mark_starting_jsonl_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d.jsonl");
        std::fs::write(&p, "\u{feff}{\"text\": \"one\"}\n{\"text\": \"two\"}\n").unwrap();
        assert_eq!(
            read_all(&p, InputFormat::Jsonl, "text").unwrap(),
            ["one", "two"]
        );
        // Gzip-compressed too, and a first line of only the mark is a blank line.
        std::fs::write(&p, "\u{feff}\n{\"text\": \"two\"}\n").unwrap();
        assert_eq!(
            read_all(&p, InputFormat::Jsonl, "text").unwrap(),
            ["", "two"]
        );
        let gz = dir.path().join("d.jsonl.gz");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut enc, "\u{feff}{\"text\": \"one\"}\n".as_bytes()).unwrap();
        std::fs::write(&gz, enc.finish().unwrap()).unwrap();
        assert_eq!(read_all(&gz, InputFormat::Jsonl, "text").unwrap(), ["one"]);
        // Only the first line's: one later is inside the text, and JSON refuses it.
        std::fs::write(&p, "{\"text\": \"one\"}\n\u{feff}{\"text\": \"two\"}\n").unwrap();
        let e = read_all(&p, InputFormat::Jsonl, "text")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2"), "{e}");
    }

    #[test]
    fn utf16_files_are_refused_with_iconv() {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = vec![0xff, 0xfe];
        bytes.extend("alpha beta\n".encode_utf16().flat_map(u16::to_le_bytes));
        let lines = dir.path().join("u16.txt");
        std::fs::write(&lines, &bytes).unwrap();
        let sub = dir.path().join("texts");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(sub.join("a.txt"), &bytes).unwrap();
        for (p, format) in [(&lines, InputFormat::Lines), (&sub, InputFormat::Dir)] {
            let latin1 = Decoder {
                encoding: crate::Encoding::Latin1,
                ..Decoder::default()
            };
            for decoder in [Decoder::default(), latin1] {
                let e = read_decoded(p, format, "text", &decoder)
                    .unwrap_err()
                    .to_string();
                assert!(
                    e.contains("UTF-16") && e.contains("iconv -f UTF-16 -t UTF-8"),
                    "{e}"
                );
            }
        }
    }
}
