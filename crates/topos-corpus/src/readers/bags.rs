//! Readers of bag-of-words inputs, whose words are given by a vocabulary file: the UCI
//! `docword`/`vocab` pair and LDA-C. A document is a list of `(word id, count)` pairs over the
//! input vocabulary (0-based ids).

use super::{
    excerpt, read_vocab_file_with, ByteCounter, Decoder, InputFormat, LineReader, Resolved,
};
use crate::CorpusError;

/// A stream of bag-of-words documents.
pub trait BagSource {
    /// Reads the next document into `doc` (cleared first) as `(input word id, count)` pairs.
    /// Returns false at the end.
    fn next_doc(&mut self, doc: &mut Vec<(u32, u32)>) -> Result<bool, CorpusError>;
}

/// Opens the reader for `input` and reads its vocabulary (decoded with `decoder`).
pub fn open(
    input: &Resolved,
    counter: &ByteCounter,
    decoder: &Decoder,
) -> Result<(Box<dyn BagSource>, Vec<String>), CorpusError> {
    let vocab_path = input
        .vocab
        .as_deref()
        .expect("resolved bag input has a vocabulary");
    let vocab = read_vocab_file_with(vocab_path, decoder)?;
    let lines = LineReader::open(&input.files[0], counter)?;
    let src: Box<dyn BagSource> = match input.format {
        InputFormat::Uci => {
            let r = Uci::open(lines)?;
            if r.v != vocab.len() as u64 {
                return Err(CorpusError::input(
                    &input.files[0],
                    format!(
                        "the header says V = {} words but {} has {}; the docword and vocab files must come from the same corpus",
                        r.v,
                        vocab_path.display(),
                        vocab.len()
                    ),
                ));
            }
            Box::new(r)
        }
        InputFormat::Ldac => Box::new(Ldac {
            lines,
            v: vocab.len() as u64,
            buf: Vec::new(),
        }),
        f => unreachable!("{f} is not a bag-of-words format"),
    };
    Ok((src, vocab))
}

/// Empty documents a UCI header may imply beyond its number of entries (see `Uci::open`).
const MAX_EMPTY_DOCS: u64 = 1_000_000;

fn parse_u64(s: &str) -> Option<u64> {
    s.parse().ok()
}

/// UCI bag of words: header lines D, V, NNZ, then `docID wordID count` lines (1-based ids),
/// sorted by document. Documents without a line (ids skipped) are empty documents, so document
/// `i` is docID `i + 1`.
struct Uci {
    lines: LineReader,
    d: u64,
    v: u64,
    nnz: u64,
    /// 1-based id of the document to emit next.
    next: u64,
    /// An entry read ahead that belongs to a later document.
    pending: Option<(u64, u32, u32)>,
    seen: u64,
    last_doc: u64,
    eof: bool,
    buf: Vec<u8>,
}

impl Uci {
    fn open(mut lines: LineReader) -> Result<Self, CorpusError> {
        let mut header = [0u64; 3];
        let names = [
            "the number of documents D",
            "the vocabulary size V",
            "the number of entries NNZ",
        ];
        let mut buf = Vec::new();
        for (h, name) in header.iter_mut().zip(names) {
            if !lines.next_line(&mut buf)? {
                return Err(CorpusError::input(
                    lines.path(),
                    format!("ends before the header line with {name}; a UCI docword file starts with D, V and NNZ, one per line"),
                ));
            }
            let text = String::from_utf8_lossy(&buf);
            *h = parse_u64(text.trim()).ok_or_else(|| {
                lines.error(format!(
                    "expected {name} (UCI header), found '{}'",
                    excerpt(&text, 40)
                ))
            })?;
        }
        if header[1] > u64::from(u32::MAX) {
            return Err(lines.error("the vocabulary size V exceeds 2^32 - 1 words"));
        }
        // Every non-empty document has an entry, so at least D − NNZ documents are empty, and
        // each is read (and counted) in turn: a header claiming 2^60 documents over a handful of
        // entries would keep prepare busy for centuries. Far more empty documents than entries
        // means the header is wrong.
        let (d, nnz) = (header[0], header[2]);
        if d.saturating_sub(nnz) > nnz.max(MAX_EMPTY_DOCS) {
            return Err(CorpusError::input(
                lines.path(),
                format!(
                    "the header says D = {d} documents but NNZ = {nnz} entries, so at least {} documents would be empty; the header is wrong (fix D)",
                    d - nnz
                ),
            ));
        }
        Ok(Self {
            lines,
            d: header[0],
            v: header[1],
            nnz: header[2],
            next: 1,
            pending: None,
            seen: 0,
            last_doc: 0,
            eof: false,
            buf,
        })
    }

    /// The next `(doc, word, count)` entry (0-based word), or `None` at the end of the file (after
    /// checking NNZ).
    fn entry(&mut self) -> Result<Option<(u64, u32, u32)>, CorpusError> {
        if self.eof {
            return Ok(None);
        }
        loop {
            if !self.lines.next_line(&mut self.buf)? {
                self.eof = true;
                if self.seen != self.nnz {
                    return Err(CorpusError::input(
                        self.lines.path(),
                        format!(
                            "the header says NNZ = {} entries but the file has {}; the file is truncated or its header is wrong",
                            self.nnz, self.seen
                        ),
                    ));
                }
                return Ok(None);
            }
            // A line that is not text cannot be an entry (it used to read as a blank line and
            // be skipped).
            let Ok(text) = std::str::from_utf8(&self.buf) else {
                return Err(self.bad_line());
            };
            let mut f = text.split_ascii_whitespace();
            let (Some(a), Some(b), Some(c)) = (f.next(), f.next(), f.next()) else {
                if text.trim().is_empty() {
                    continue;
                }
                return Err(self.bad_line());
            };
            if f.next().is_some() {
                return Err(self.bad_line());
            }
            let (Some(doc), Some(word), Some(count)) = (parse_u64(a), parse_u64(b), parse_u64(c))
            else {
                return Err(self.bad_line());
            };
            self.seen += 1;
            if doc == 0 || doc > self.d {
                return Err(self.lines.error(format!(
                    "document id {doc} is out of range 1..={} (the header's D)",
                    self.d
                )));
            }
            if doc < self.last_doc {
                return Err(self.lines.error(format!(
                    "document id {doc} comes after {}; UCI entries must be sorted by document id",
                    self.last_doc
                )));
            }
            self.last_doc = doc;
            if word == 0 || word > self.v {
                return Err(self.lines.error(format!(
                    "word id {word} is out of range 1..={} (the header's V); the docword and vocab files do not match",
                    self.v
                )));
            }
            let count = u32::try_from(count)
                .map_err(|_| self.lines.error(format!("count {count} exceeds 2^32 - 1")))?;
            return Ok(Some((doc, (word - 1) as u32, count)));
        }
    }

    fn bad_line(&self) -> CorpusError {
        self.lines.error(format!(
            "expected `docID wordID count`, found '{}'",
            excerpt(&String::from_utf8_lossy(&self.buf), 60)
        ))
    }
}

impl BagSource for Uci {
    fn next_doc(&mut self, doc: &mut Vec<(u32, u32)>) -> Result<bool, CorpusError> {
        doc.clear();
        if self.next > self.d {
            // Reads to the end so that stray entries and a wrong NNZ are reported.
            // (`entry` rejects document ids above D, so nothing can be left.)
            if self.pending.is_none() && self.entry()?.is_some() {
                return Err(self.lines.error("entry after the last document"));
            }
            return Ok(false);
        }
        loop {
            let e = match self.pending.take() {
                Some(e) => Some(e),
                None => self.entry()?,
            };
            match e {
                Some((d, w, c)) if d == self.next => {
                    if c > 0 {
                        doc.push((w, c));
                    }
                }
                Some(e) => {
                    self.pending = Some(e);
                    break;
                }
                None => break,
            }
        }
        self.next += 1;
        Ok(true)
    }
}

/// LDA-C: one document per line, `N id:count id:count ...` with N distinct 0-based ids. A blank
/// line is an empty document, so document `i` is line `i + 1`.
struct Ldac {
    lines: LineReader,
    v: u64,
    buf: Vec<u8>,
}

impl BagSource for Ldac {
    fn next_doc(&mut self, doc: &mut Vec<(u32, u32)>) -> Result<bool, CorpusError> {
        doc.clear();
        if !self.lines.next_line(&mut self.buf)? {
            return Ok(false);
        }
        let text =
            std::str::from_utf8(&self.buf).map_err(|_| self.lines.error("is not valid UTF-8"))?;
        let mut fields = text.split_ascii_whitespace();
        let Some(n) = fields.next() else {
            return Ok(true);
        };
        let n = parse_u64(n).ok_or_else(|| {
            self.lines.error(format!(
                "expected the number of distinct words, found '{}'; LDA-C lines read `N id:count ...`",
                excerpt(n, 40)
            ))
        })?;
        for f in fields {
            let pair = f
                .split_once(':')
                .and_then(|(a, b)| Some((parse_u64(a)?, parse_u64(b)?)));
            let Some((id, count)) = pair else {
                return Err(self.lines.error(format!(
                    "expected `id:count`, found '{}'; LDA-C lines read `N id:count ...`",
                    excerpt(f, 40)
                )));
            };
            if id >= self.v {
                return Err(self.lines.error(format!(
                    "word id {id} is out of range 0..{} (the vocabulary has {} words); the data and vocabulary files do not match",
                    self.v, self.v
                )));
            }
            let count = u32::try_from(count)
                .map_err(|_| self.lines.error(format!("count {count} exceeds 2^32 - 1")))?;
            if count > 0 {
                doc.push((id as u32, count));
            }
        }
        let pairs = text.split_ascii_whitespace().count() as u64 - 1;
        if pairs != n {
            return Err(self.lines.error(format!(
                "says {n} distinct words but lists {pairs} id:count pairs"
            )));
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::readers::resolve;
    use std::path::Path;

    type Bags = Vec<Vec<(u32, u32)>>;

    fn read_all(path: &Path, format: InputFormat) -> Result<(Bags, Vec<String>), CorpusError> {
        let r = resolve(path, format, None)?;
        let (mut src, vocab) = open(&r, &ByteCounter::default(), &Decoder::default())?;
        let mut docs = vec![];
        let mut doc = vec![];
        while src.next_doc(&mut doc)? {
            docs.push(doc.clone());
        }
        Ok((docs, vocab))
    }

    fn uci(dir: &Path, docword: &str, vocab: &str) -> Result<Vec<Vec<(u32, u32)>>, CorpusError> {
        std::fs::write(dir.join("docword.t.txt"), docword).unwrap();
        std::fs::write(dir.join("vocab.t.txt"), vocab).unwrap();
        read_all(&dir.join("docword.t.txt"), InputFormat::Uci).map(|r| r.0)
    }

    #[test]
    fn uci_reads_documents_with_gaps() {
        let dir = tempfile::tempdir().unwrap();
        let docs = uci(
            dir.path(),
            "4\n3\n4\n1 1 2\n1 3 1\n3 2 5\n3 3 1\n",
            "a\nb\nc\n",
        )
        .unwrap();
        assert_eq!(
            docs,
            vec![vec![(0, 2), (2, 1)], vec![], vec![(1, 5), (2, 1)], vec![]]
        );
    }

    /// A byte-order mark (Windows tools write one) before a bag-of-words file's first number
    /// is dropped, as the text readers drop it, instead of failing the header.
    #[test]
    fn a_byte_order_mark_before_the_numbers_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let docs = uci(dir.path(), "\u{feff}2\n2\n2\n1 1 2\n2 2 1\n", "a\nb\n").unwrap();
        assert_eq!(docs, vec![vec![(0, 2)], vec![(1, 1)]]);
        let p = dir.path().join("x.ldac");
        std::fs::write(dir.path().join("x.tokens"), "\u{feff}a\nb\n").unwrap();
        std::fs::write(&p, "\u{feff}1 1:4\n").unwrap();
        let (docs, vocab) = read_all(&p, InputFormat::Ldac).unwrap();
        assert_eq!(
            (docs, vocab),
            (vec![vec![(1, 4)]], vec!["a".into(), "b".into()])
        );
    }

    #[test]
    fn uci_errors() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let err = |docword: &str| uci(d, docword, "a\nb\nc\n").unwrap_err().to_string();
        let e = err("2\n4\n1\n1 1 1\n");
        assert!(e.contains("V = 4") && e.contains("has 3"), "{e}");
        let e = err("2\n3\n1\n1 4 1\n");
        assert!(
            e.contains("line 4") && e.contains("word id 4 is out of range"),
            "{e}"
        );
        let e = err("2\n3\n1\n3 1 1\n");
        assert!(e.contains("line 4") && e.contains("document id 3"), "{e}");
        let e = err("2\n3\n3\n1 1 1\n");
        assert!(e.contains("NNZ = 3") && e.contains("has 1"), "{e}");
        let e = err("2\n3\n2\n2 1 1\n1 1 1\n");
        assert!(e.contains("line 5") && e.contains("sorted"), "{e}");
        let e = err("2\nthree\n1\n");
        assert!(e.contains("line 2") && e.contains("vocabulary size"), "{e}");
        let e = err("2\n3\n1\n1 1\n");
        assert!(
            e.contains("line 4") && e.contains("docID wordID count"),
            "{e}"
        );
        let e = err("2\n3\n");
        assert!(e.contains("NNZ"), "{e}");
        // Found by the property tests: a carriage return inside a line was quoted as is and
        // broke the one-line message.
        let e = err("\rx 9\n3\n1\n");
        assert!(!e.contains('\r') && e.contains("found '\\rx 9'"), "{e:?}");
        let e = err("2\n3\n1\n1 1 \x0b\r1\n");
        assert!(!e.contains('\r'), "{e:?}");
        // A header whose D would make prepare read 2^60 empty documents.
        let e = err("1152921504606846976\n3\n1\n1 1 1\n");
        assert!(
            e.contains("D = 1152921504606846976") && e.contains("fix D"),
            "{e}"
        );
    }

    #[test]
    fn ldac_reads_and_checks() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.ldac");
        std::fs::write(dir.path().join("x.tokens"), "a\nb\nc\n").unwrap();
        std::fs::write(&p, "2 0:3 2:1\n0\n\n1 1:4\n").unwrap();
        let (docs, vocab) = read_all(&p, InputFormat::Ldac).unwrap();
        assert_eq!(vocab, ["a", "b", "c"]);
        assert_eq!(
            docs,
            vec![vec![(0, 3), (2, 1)], vec![], vec![], vec![(1, 4)]]
        );
        for (bad, want) in [
            ("1 3:1\n", "word id 3 is out of range"),
            ("2 0:1\n", "says 2 distinct words but lists 1"),
            ("1 0-1\n", "expected `id:count`"),
            ("x 0:1\n", "number of distinct words"),
        ] {
            std::fs::write(&p, bad).unwrap();
            let e = read_all(&p, InputFormat::Ldac).unwrap_err().to_string();
            assert!(e.contains("line 1") && e.contains(want), "{e}");
        }
    }
}
