//! Readers of text documents: one per line, one per `.txt` file, or one per JSONL object.

use super::{into_text, ByteCounter, InputFormat, LineReader, Resolved};
use crate::CorpusError;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use std::path::{Path, PathBuf};

/// A stream of text documents (`Send`, so that it can be read on its own thread while earlier
/// documents are tokenized).
pub trait TextSource: Send {
    /// Reads the next document into `doc` (replacing its contents). Returns false at the end.
    fn next_doc(&mut self, doc: &mut String) -> Result<bool, CorpusError>;
}

/// Opens the text reader for `input` (`text_field` names the JSONL field). Bytes read from disk are
/// counted in `counter`.
pub fn open(
    input: &Resolved,
    text_field: &str,
    counter: &ByteCounter,
) -> Result<Box<dyn TextSource + Send>, CorpusError> {
    Ok(match input.format {
        InputFormat::Lines => Box::new(Lines {
            lines: LineReader::open(&input.files[0], counter)?,
        }),
        InputFormat::Jsonl => Box::new(Jsonl {
            lines: LineReader::open(&input.files[0], counter)?,
            field: text_field.to_string(),
            buf: Vec::new(),
        }),
        InputFormat::Dir => Box::new(Dir {
            files: input.files.clone(),
            next: 0,
            counter: counter.clone(),
        }),
        f => unreachable!("{f} is not a text format"),
    })
}

/// One document per line; a blank line is an (empty) document so that document `i` is line
/// `i + 1`.
struct Lines {
    lines: LineReader,
}

impl TextSource for Lines {
    fn next_doc(&mut self, doc: &mut String) -> Result<bool, CorpusError> {
        let mut bytes = std::mem::take(doc).into_bytes();
        let more = self.lines.next_line(&mut bytes)?;
        *doc = into_text(bytes);
        Ok(more)
    }
}

/// The `.txt` files (any case of the extension) under `dir`, recursively, in sorted path order so
/// that document numbers do not depend on the file system's listing order. Hidden entries (names
/// starting with `.`) and symbolic links to directories are skipped.
pub fn list_txt_files(dir: &Path) -> Result<Vec<PathBuf>, CorpusError> {
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
            } else if (ft.is_file() || (ft.is_symlink() && path.is_file()))
                && path
                    .extension()
                    .is_some_and(|x| x.eq_ignore_ascii_case("txt"))
            {
                out.push(path);
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
}

impl TextSource for Dir {
    fn next_doc(&mut self, doc: &mut String) -> Result<bool, CorpusError> {
        let Some(path) = self.files.get(self.next) else {
            return Ok(false);
        };
        self.next += 1;
        let bytes = std::fs::read(path).map_err(|e| CorpusError::io(path, "read", e))?;
        self.counter.add(bytes.len() as u64);
        *doc = into_text(bytes);
        Ok(true)
    }
}

/// One JSON object per line; the document is the string in `field`. A blank line is an (empty)
/// document, so document `i` is line `i + 1`; `null` is an empty document.
struct Jsonl {
    lines: LineReader,
    field: String,
    buf: Vec<u8>,
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
        let mut de = serde_json::Deserializer::from_slice(&self.buf);
        let found = FieldSeed {
            field: &self.field,
            out: doc,
        }
        .deserialize(&mut de)
        .and_then(|found| de.end().map(|_| found))
        .map_err(|e| {
            self.lines.error(format!(
                "is not a valid JSON object ({e}); JSONL needs one object per line"
            ))
        })?;
        match found {
            Found::Text => Ok(true),
            Found::Null => Ok(true),
            Found::Missing => Err(self.lines.error(format!(
                "has no field \"{}\"; name the text field with --text-field",
                self.field
            ))),
            Found::NotText(kind) => Err(self.lines.error(format!(
                "field \"{}\" is {kind}, not a string; name the text field with --text-field",
                self.field
            ))),
        }
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
        let r = resolve(path, format, None)?;
        let mut src = open(&r, field, &ByteCounter::default())?;
        let mut docs = vec![];
        let mut doc = String::new();
        while src.next_doc(&mut doc)? {
            docs.push(doc.clone());
        }
        Ok(docs)
    }

    #[test]
    fn lines_keep_blank_lines_and_survive_bad_utf8() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("docs.txt");
        std::fs::write(&p, b"first doc\n\nthird \xff doc\n").unwrap();
        assert_eq!(
            read_all(&p, InputFormat::Lines, "").unwrap(),
            ["first doc", "", "third \u{fffd} doc"]
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
}
