//! Input formats: what a path holds, and streaming readers for each format.
//!
//! Every reader yields documents one at a time, in a deterministic order, holding at most one
//! document (plus I/O buffers) in memory, and can be opened again for the second pass. Documents
//! are numbered from 0 in that order; the number is the document's *original index*, kept in the
//! corpus file so that later tools can name documents (for line-based inputs it is the line number
//! minus one).
//!
//! * [`text`]: text to be tokenized: one document per line, a directory of `.txt` files, JSONL;
//! * [`bags`]: bags of words over a given vocabulary: UCI `docword`/`vocab` pairs and LDA-C.

pub mod bags;
pub mod text;

use crate::encoding::{DecodeStats, Encoding};
use crate::CorpusError;
use flate2::bufread::MultiGzDecoder;
use rustc_hash::FxHashSet;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The kind of input [`crate::prepare`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum InputFormat {
    /// A text file with one document per line, optionally gzip-compressed (the default for files).
    Lines,
    /// A directory tree of `.txt` files, one document per file, in sorted path order.
    Dir,
    /// JSON Lines (`.jsonl`, `.ndjson`, optionally `.gz`): one object per line, the document text
    /// in a named string field.
    Jsonl,
    /// UCI bag of words: `docword.NAME.txt[.gz]` (header D, V, NNZ; then `docID wordID count`,
    /// 1-based) with `vocab.NAME.txt` beside it. A directory holding one such pair is detected too.
    Uci,
    /// LDA-C (`.ldac`, `.dat`): lines `N id:count ...` with 0-based ids, and a vocabulary file
    /// (one word per line; found as the same stem with `.tokens` or `.vocab`, or `vocab.txt`).
    Ldac,
}

impl InputFormat {
    /// All formats, for help texts.
    pub const ALL: [InputFormat; 5] = [
        InputFormat::Lines,
        InputFormat::Dir,
        InputFormat::Jsonl,
        InputFormat::Uci,
        InputFormat::Ldac,
    ];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            InputFormat::Lines => "lines",
            InputFormat::Dir => "dir",
            InputFormat::Jsonl => "jsonl",
            InputFormat::Uci => "uci",
            InputFormat::Ldac => "ldac",
        }
    }

    /// Whether documents are bags of words over a given vocabulary (no tokenizing).
    pub fn is_bag_of_words(self) -> bool {
        matches!(self, InputFormat::Uci | InputFormat::Ldac)
    }

    /// Guesses the format from the path: a directory is [`InputFormat::Uci`] if it holds a
    /// `docword.*.txt[.gz]` file and [`InputFormat::Dir`] otherwise; a file is chosen by its name
    /// (`docword.*` → UCI, `.jsonl`/`.ndjson` → JSONL, `.ldac`/`.dat` → LDA-C, `.gz` looked
    /// through) and is [`InputFormat::Lines`] otherwise.
    pub fn detect(path: &Path) -> Result<InputFormat, CorpusError> {
        let meta =
            std::fs::metadata(path).map_err(|e| CorpusError::io(path, "read the input", e))?;
        if meta.is_dir() {
            return Ok(if find_docword(path)?.is_some() {
                InputFormat::Uci
            } else {
                InputFormat::Dir
            });
        }
        let mut head = [0u8; 5];
        let n = File::open(path)
            .and_then(|mut f| f.read(&mut head))
            .map_err(|e| CorpusError::io(path, "read the input", e))?;
        if &head[..n] == b"TOPOS" {
            return Err(CorpusError::input(
                path,
                "is a Topos file (a prepared corpus or a model), not raw input; give the text or bag-of-words input",
            ));
        }
        let name = file_name(path).to_ascii_lowercase();
        let base = name.strip_suffix(".gz").unwrap_or(&name);
        Ok(if uci_name(base).is_some() {
            InputFormat::Uci
        } else if base.ends_with(".jsonl") || base.ends_with(".ndjson") {
            InputFormat::Jsonl
        } else if base.ends_with(".ldac") || base.ends_with(".dat") {
            InputFormat::Ldac
        } else {
            InputFormat::Lines
        })
    }
}

impl std::fmt::Display for InputFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for InputFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.to_ascii_lowercase();
        InputFormat::ALL
            .into_iter()
            .find(|f| f.name() == s || (s == "lda-c" && *f == InputFormat::Ldac))
            .ok_or_else(|| {
                format!(
                    "unknown input format '{s}'; expected one of: {}",
                    InputFormat::ALL.map(|f| f.name()).join(", ")
                )
            })
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `NAME` of `docword.NAME.txt`, given a name without `.gz`.
fn uci_name(base: &str) -> Option<&str> {
    base.strip_prefix("docword.")?.strip_suffix(".txt")
}

/// The single `docword.*.txt[.gz]` file directly in `dir`, if any.
fn find_docword(dir: &Path) -> Result<Option<PathBuf>, CorpusError> {
    let mut found = Vec::new();
    for e in std::fs::read_dir(dir).map_err(|e| CorpusError::io(dir, "list the directory", e))? {
        let e = e.map_err(|e| CorpusError::io(dir, "list the directory", e))?;
        let name = e.file_name().to_string_lossy().to_ascii_lowercase();
        if uci_name(name.strip_suffix(".gz").unwrap_or(&name)).is_some() {
            found.push(e.path());
        }
    }
    found.sort();
    match found.len() {
        0 => Ok(None),
        1 => Ok(found.pop()),
        _ => Err(CorpusError::input(
            dir,
            format!(
                "holds {} UCI docword files ({}); name the one to prepare",
                found.len(),
                found
                    .iter()
                    .map(|p| file_name(p))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}

/// Counts bytes read from disk, for progress reports (compressed bytes for gzip inputs, so that
/// progress can be compared to the file size). Shared with the thread that reads.
#[derive(Clone, Debug, Default)]
pub struct ByteCounter(Arc<AtomicU64>);

impl ByteCounter {
    /// Bytes counted so far.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
    pub(crate) fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }
}

struct Counting<R> {
    inner: R,
    counter: ByteCounter,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.counter.add(n as u64);
        Ok(n)
    }
}

/// What to say when a text input is one of Topos's own binary files (by its magic bytes), which
/// would otherwise fail as invalid UTF-8 with advice about encodings that cannot help.
fn topos_binary_file(head: &[u8]) -> Option<&'static str> {
    match head.get(..8)? {
        b"TOPOSCRP" => Some(
            "this is a Topos corpus file, already prepared, not text: train, eval and update read it as it is; `topos export CORPUS -o DIR` writes its documents as text",
        ),
        b"TOPOSMOD" => Some(
            "this is a Topos model file, not text: give it where a command asks for a model",
        ),
        b"TOPOSCKP" | b"TOPOSDTC" => Some("this is a Topos binary file (a checkpoint or document-topic counts), not text"),
        _ => None,
    }
}

/// Lines of a text file that may be gzip-compressed (recognised by its magic bytes, whatever the
/// name), with the line number for error messages.
pub struct LineReader {
    path: PathBuf,
    inner: Box<dyn BufRead + Send>,
    gz: bool,
    line: u64,
    stdin: bool,
}

impl LineReader {
    /// Opens `path`, counting the bytes read from disk in `counter`.
    pub fn open(path: &Path, counter: &ByteCounter) -> Result<Self, CorpusError> {
        let f = File::open(path).map_err(|e| CorpusError::io(path, "open the input", e))?;
        Self::over(path, Box::new(f), counter, false)
    }

    /// Standard input, read as a file is (gzip recognised, UTF-16 refused, line numbers), and
    /// named "stdin" in errors.
    pub fn stdin(counter: &ByteCounter) -> Result<Self, CorpusError> {
        Self::over(
            Path::new("stdin"),
            Box::new(std::io::stdin()),
            counter,
            true,
        )
    }

    fn over(
        path: &Path,
        input: Box<dyn Read + Send>,
        counter: &ByteCounter,
        stdin: bool,
    ) -> Result<Self, CorpusError> {
        let mut raw = BufReader::with_capacity(
            1 << 16,
            Counting {
                inner: input,
                counter: counter.clone(),
            },
        );
        let head = raw
            .fill_buf()
            .map_err(|e| CorpusError::io(path, "read the input", e))?;
        if let Some(what) = topos_binary_file(head) {
            return Err(CorpusError::input(path, what));
        }
        let gz = head.starts_with(&[0x1f, 0x8b]);
        let inner: Box<dyn BufRead + Send> = if gz {
            Box::new(BufReader::with_capacity(1 << 16, MultiGzDecoder::new(raw)))
        } else {
            Box::new(raw)
        };
        Ok(Self {
            path: path.to_path_buf(),
            inner,
            gz,
            line: 0,
            stdin,
        })
    }

    /// Reads the next line, without its `\n` or `\r\n`, into `buf` (cleared first). Returns false
    /// at the end of the file.
    pub fn next_line(&mut self, buf: &mut Vec<u8>) -> Result<bool, CorpusError> {
        buf.clear();
        let n = self.inner.read_until(b'\n', buf).map_err(|e| {
            use std::io::ErrorKind::*;
            if self.gz && matches!(e.kind(), InvalidInput | InvalidData | UnexpectedEof) {
                CorpusError::Gzip {
                    path: self.path.display().to_string(),
                    cause: e,
                }
            } else {
                CorpusError::io(&self.path, "read the input", e)
            }
        })?;
        if n == 0 {
            return Ok(false);
        }
        self.line += 1;
        if self.line == 1 {
            // UTF-16 is refused whatever the encoding: as Latin-1 it would "decode" into a
            // vocabulary of single letters.
            if let Some(u) = crate::encoding::utf16_at_first_line(buf, &mut self.inner) {
                // The advice names a file to convert: stdin's text has one somewhere.
                let file = if self.stdin {
                    "FILE".to_string()
                } else {
                    self.path.display().to_string()
                };
                return Err(self.error(u.advice(&file)));
            }
            // A UTF-8 byte-order mark (Windows tools write one) is not text: kept, it would be
            // glued to the first word or break the first JSON object or number. Dropped here,
            // before any decoding, for every reader of lines.
            if buf.starts_with(b"\xef\xbb\xbf") {
                buf.drain(..3);
            }
        }
        if buf.last() == Some(&b'\n') {
            buf.pop();
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
        }
        Ok(true)
    }

    /// The 1-based number of the line last read.
    pub fn line_number(&self) -> u64 {
        self.line
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// An error about the line last read.
    pub fn error(&self, what: impl Into<String>) -> CorpusError {
        CorpusError::line(&self.path, self.line, what)
    }
}

/// At most `max` characters of input `text`, fit to quote in a one-line error message: control
/// characters (a lone carriage return, a form feed, ...) are written as escapes, so no input can
/// break the message into lines or rewrite the terminal.
pub fn excerpt(text: &str, max: usize) -> String {
    let mut out = String::new();
    for c in text.chars().take(max) {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// How a reader turns bytes into text ([`Encoding`]) and where it counts replaced bytes.
#[derive(Clone, Debug, Default)]
pub struct Decoder {
    pub encoding: Encoding,
    pub stats: DecodeStats,
}

impl Decoder {
    /// `bytes` as text, or the error for the line `lines` last read (whose byte-order mark, on
    /// the first line, [`LineReader::next_line`] has already dropped).
    pub(crate) fn line(&self, bytes: Vec<u8>, lines: &LineReader) -> Result<String, CorpusError> {
        self.encoding
            .decode(bytes, &self.stats)
            .map_err(|e| lines.error(e.describe()))
    }
}

/// Reads a vocabulary file: one word per line (surrounding white space trimmed), optionally
/// gzip-compressed, in UTF-8. Empty lines and repeated words are errors, since ids are line
/// numbers.
pub fn read_vocab_file(path: &Path) -> Result<Vec<String>, CorpusError> {
    read_vocab_file_with(path, &Decoder::default())
}

/// [`read_vocab_file`] in the input's encoding.
pub fn read_vocab_file_with(path: &Path, decoder: &Decoder) -> Result<Vec<String>, CorpusError> {
    let mut r = LineReader::open(path, &ByteCounter::default())?;
    let mut words = Vec::new();
    let mut seen = FxHashSet::default();
    let mut buf = Vec::new();
    while r.next_line(&mut buf)? {
        let line = decoder.line(std::mem::take(&mut buf), &r)?;
        let w = line.trim();
        if w.is_empty() {
            return Err(r.error(
                "is empty; a vocabulary file has exactly one word per line (ids are line numbers)",
            ));
        }
        if !seen.insert(w.to_string()) {
            return Err(r.error(format!(
                "repeats the word '{}'; each word may appear once (ids are line numbers)",
                excerpt(w, 60)
            )));
        }
        words.push(w.to_string());
    }
    Ok(words)
}

/// An input resolved to the files it is read from.
#[derive(Clone, Debug)]
pub struct Resolved {
    pub format: InputFormat,
    /// The file or directory given.
    pub path: PathBuf,
    /// The files read, in order (the `.txt` files of a directory; the docword or LDA-C file).
    pub files: Vec<PathBuf>,
    /// The vocabulary file of a bag-of-words input.
    pub vocab: Option<PathBuf>,
    /// Total size of `files` on disk.
    pub bytes: u64,
    /// A directory's files that are not read (not `.txt` or `.txt.gz`), by lower-cased
    /// extension ("" for none); empty for other inputs.
    pub skipped: BTreeMap<String, u64>,
}

/// Finds the files behind `path` for `format` (`vocab` overrides the vocabulary file of a
/// bag-of-words input).
pub fn resolve(
    path: &Path,
    format: InputFormat,
    vocab: Option<&Path>,
) -> Result<Resolved, CorpusError> {
    let meta = std::fs::metadata(path).map_err(|e| CorpusError::io(path, "read the input", e))?;
    let want_dir = format == InputFormat::Dir;
    if meta.is_dir() && !want_dir && format != InputFormat::Uci {
        return Err(CorpusError::input(
            path,
            format!(
                "is a directory, but the {format} format reads a file; give the file, or use the dir format"
            ),
        ));
    }
    if !meta.is_dir() && want_dir {
        return Err(CorpusError::input(
            path,
            "is a file, but the dir format reads a directory of .txt files",
        ));
    }
    let mut skipped = BTreeMap::new();
    let files = match format {
        InputFormat::Dir => text::list_txt_files(path, &mut skipped)?,
        InputFormat::Uci if meta.is_dir() => vec![find_docword(path)?.ok_or_else(|| {
            CorpusError::input(
                path,
                "holds no docword.NAME.txt[.gz] file of the UCI format",
            )
        })?],
        _ => vec![path.to_path_buf()],
    };
    let vocab = match format {
        _ if !format.is_bag_of_words() => None,
        _ if vocab.is_some() => vocab.map(Path::to_path_buf),
        InputFormat::Uci => Some(uci_vocab(&files[0])?),
        _ => Some(ldac_vocab(&files[0])?),
    };
    let mut bytes = 0;
    for f in &files {
        bytes += std::fs::metadata(f)
            .map_err(|e| CorpusError::io(f, "read the input", e))?
            .len();
    }
    Ok(Resolved {
        format,
        path: path.to_path_buf(),
        files,
        vocab,
        bytes,
        skipped,
    })
}

fn sibling_candidates(file: &Path, names: &[String]) -> Result<PathBuf, CorpusError> {
    let dir = file.parent().unwrap_or(Path::new("."));
    names
        .iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            CorpusError::input(
                file,
                format!(
                    "no vocabulary file found beside it (looked for {}); name it with --vocab",
                    names.join(", ")
                ),
            )
        })
}

/// `vocab.NAME.txt[.gz]` (or `vocab.txt`) beside `docword.NAME.txt[.gz]`.
fn uci_vocab(docword: &Path) -> Result<PathBuf, CorpusError> {
    let name = file_name(docword);
    let base = name.strip_suffix(".gz").unwrap_or(&name);
    let mut names = Vec::new();
    if let Some(stem) = uci_name(base) {
        names.push(format!("vocab.{stem}.txt"));
        names.push(format!("vocab.{stem}.txt.gz"));
    }
    names.push("vocab.txt".to_string());
    sibling_candidates(docword, &names)
}

/// `STEM.tokens`, `STEM.vocab` or `vocab.txt` beside an LDA-C file.
fn ldac_vocab(data: &Path) -> Result<PathBuf, CorpusError> {
    let stem = data
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    sibling_candidates(
        data,
        &[
            format!("{stem}.tokens"),
            format!("{stem}.vocab"),
            "vocab.txt".to_string(),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn topos_files_given_as_text_are_named_not_decoded() {
        let dir = tempfile::tempdir().unwrap();
        let counter = ByteCounter::default();
        for (magic, says) in [
            (&b"TOPOSCRP"[..], "a Topos corpus file"),
            (&b"TOPOSMOD"[..], "a Topos model file"),
            (&b"TOPOSDTC"[..], "a Topos binary file"),
            (&b"TOPOSCKP"[..], "a Topos binary file"),
        ] {
            let path = dir.path().join("input.txt");
            let mut bytes = magic.to_vec();
            bytes.extend_from_slice(&[0xdd, 0xff, 0x00, 0x01]);
            std::fs::write(&path, &bytes).unwrap();
            let e = LineReader::open(&path, &counter)
                .err()
                .expect("refused")
                .to_string();
            assert!(e.contains(says) && e.contains("input.txt"), "{e}");
        }
        // Text that merely starts with the word is text.
        let path = dir.path().join("text.txt");
        std::fs::write(&path, "TOPOS is a word\n").unwrap();
        let mut r = LineReader::open(&path, &counter).unwrap();
        let mut line = Vec::new();
        assert!(r.next_line(&mut line).unwrap());
        assert_eq!(line, b"TOPOS is a word");
    }

    #[test]
    fn detection() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| {
            let p = dir.path().join(n);
            std::fs::write(&p, "x\n").unwrap();
            p
        };
        let d = |p: PathBuf| InputFormat::detect(&p).unwrap();
        assert_eq!(d(p("a.txt")), InputFormat::Lines);
        assert_eq!(d(p("a.txt.gz")), InputFormat::Lines);
        assert_eq!(d(p("a.JSONL")), InputFormat::Jsonl);
        assert_eq!(d(p("a.ndjson.gz")), InputFormat::Jsonl);
        assert_eq!(d(p("x.ldac")), InputFormat::Ldac);
        assert_eq!(d(p("docword.kos.txt.gz")), InputFormat::Uci);
        assert_eq!(d(dir.path().to_path_buf()), InputFormat::Uci);
        let sub = dir.path().join("texts");
        std::fs::create_dir(&sub).unwrap();
        assert_eq!(d(sub), InputFormat::Dir);
        std::fs::write(dir.path().join("c.tcorp"), b"TOPOSCRP\x01\0\0\0").unwrap();
        let err = InputFormat::detect(&dir.path().join("c.tcorp")).unwrap_err();
        assert!(err.to_string().contains("is a Topos file"), "{err}");
        let err = InputFormat::detect(&dir.path().join("nope")).unwrap_err();
        assert!(err.to_string().contains("nope"), "{err}");
        assert_eq!("LDA-C".parse::<InputFormat>(), Ok(InputFormat::Ldac));
        assert!("csv".parse::<InputFormat>().unwrap_err().contains("jsonl"));
    }

    #[test]
    fn resolve_finds_vocab_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("docword.nips.txt"), "0\n0\n0\n").unwrap();
        let r = resolve(dir.path(), InputFormat::Uci, None).unwrap_err();
        assert!(r.to_string().contains("vocab.nips.txt"), "{r}");
        std::fs::write(dir.path().join("vocab.nips.txt"), "a\n").unwrap();
        let r = resolve(dir.path(), InputFormat::Uci, None).unwrap();
        assert_eq!(r.vocab.unwrap(), dir.path().join("vocab.nips.txt"));
        assert_eq!(r.files, [dir.path().join("docword.nips.txt")]);
        assert_eq!(r.bytes, 6);

        std::fs::write(dir.path().join("ap.dat"), "1 0:1\n").unwrap();
        assert!(resolve(&dir.path().join("ap.dat"), InputFormat::Ldac, None).is_err());
        std::fs::write(dir.path().join("ap.tokens"), "a\n").unwrap();
        let r = resolve(&dir.path().join("ap.dat"), InputFormat::Ldac, None).unwrap();
        assert_eq!(r.vocab.unwrap(), dir.path().join("ap.tokens"));

        let e = resolve(dir.path(), InputFormat::Lines, None).unwrap_err();
        assert!(e.to_string().contains("is a directory"), "{e}");
    }

    #[test]
    fn line_reader_plain_gzip_and_bad_gzip() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("a.txt");
        std::fs::write(&plain, "one\r\ntwo\n\nthree").unwrap();
        let gz = dir.path().join("a.txt.gz");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(b"one\r\ntwo\n\nthree").unwrap();
        let gz_bytes = enc.finish().unwrap();
        std::fs::write(&gz, &gz_bytes).unwrap();
        for p in [&plain, &gz] {
            let c = ByteCounter::default();
            let mut r = LineReader::open(p, &c).unwrap();
            let mut lines = vec![];
            let mut buf = vec![];
            while r.next_line(&mut buf).unwrap() {
                lines.push(String::from_utf8(buf.clone()).unwrap());
            }
            assert_eq!(lines, ["one", "two", "", "three"]);
            assert_eq!(r.line_number(), 4);
            assert_eq!(c.get(), std::fs::metadata(p).unwrap().len());
        }
        // A truncated gzip stream is reported as such.
        std::fs::write(&gz, &gz_bytes[..gz_bytes.len() - 12]).unwrap();
        let mut r = LineReader::open(&gz, &ByteCounter::default()).unwrap();
        let mut buf = vec![];
        let err = loop {
            match r.next_line(&mut buf) {
                Ok(true) => continue,
                Ok(false) => panic!("truncated gzip read to the end"),
                Err(e) => break e.to_string(),
            }
        };
        assert!(err.contains("gzip"), "{err}");
    }

    #[test]
    fn excerpts_are_one_line() {
        assert_eq!(
            excerpt("a\rb\n\u{12}c\u{85}", 10),
            "a\\rb\\n\\u{12}c\\u{85}"
        );
        assert_eq!(excerpt("café", 3), "caf");
    }

    #[test]
    fn vocab_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("v.txt");
        std::fs::write(&p, "alpha\n beta \ngamma\n").unwrap();
        assert_eq!(read_vocab_file(&p).unwrap(), ["alpha", "beta", "gamma"]);
        std::fs::write(&p, "alpha\n\ngamma\n").unwrap();
        assert!(read_vocab_file(&p)
            .unwrap_err()
            .to_string()
            .contains("line 2"));
        std::fs::write(&p, "alpha\nbeta\nalpha\n").unwrap();
        let e = read_vocab_file(&p).unwrap_err().to_string();
        assert!(e.contains("line 3") && e.contains("repeats"), "{e}");
        // A byte-order mark is not part of the first word.
        std::fs::write(&p, "\u{feff}alpha\nbeta\n").unwrap();
        assert_eq!(read_vocab_file(&p).unwrap(), ["alpha", "beta"]);
    }

    #[test]
    fn utf16_is_refused_at_the_first_line_whatever_the_encoding() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("u16.txt");
        let mut bytes = vec![0xff, 0xfe];
        bytes.extend(
            "alpha beta\nalpha delta\n"
                .encode_utf16()
                .flat_map(u16::to_le_bytes),
        );
        std::fs::write(&p, &bytes).unwrap();
        for encoding in [Encoding::Utf8, Encoding::Latin1, Encoding::Windows1252] {
            let e = read_vocab_file_with(
                &p,
                &Decoder {
                    encoding,
                    ..Decoder::default()
                },
            )
            .unwrap_err()
            .to_string();
            assert!(
                e.contains("line 1")
                    && e.contains("UTF-16")
                    && e.contains(&format!("iconv -f UTF-16 -t UTF-8 {}", p.display())),
                "{e}"
            );
            assert!(!e.contains("--encoding latin1") && !e.contains('\n'), "{e}");
        }
        // Without a mark: the zeros say UTF-16LE.
        std::fs::write(&p, &bytes[2..]).unwrap();
        let mut r = LineReader::open(&p, &ByteCounter::default()).unwrap();
        let e = r.next_line(&mut Vec::new()).unwrap_err().to_string();
        assert!(e.contains("iconv -f UTF-16LE"), "{e}");
        // A first line too short to tell on its own ("id"): the file's first bytes tell.
        let short: Vec<u8> = "id\nriver water fishing boat\n"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        std::fs::write(&p, short).unwrap();
        let mut r = LineReader::open(&p, &ByteCounter::default()).unwrap();
        let e = r.next_line(&mut Vec::new()).unwrap_err().to_string();
        assert!(e.contains("iconv -f UTF-16LE"), "{e}");
    }
}
