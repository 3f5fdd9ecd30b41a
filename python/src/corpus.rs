//! `topos._topos.Corpus`: a `.tcorp` corpus, prepared from texts by `topos-corpus`'s own
//! `prepare` (the same two passes, tokenizer and pruning as `topos prepare`), built from a count
//! matrix, or opened from a file.

use crate::csr::{docs_to_rows, rows_to_docs, CsrArrays};
use crate::errors::{guard, to_py, value_error};
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use topos_corpus::split::is_heldout;
use topos_corpus::{
    Corpus, InputFormat, Language, OwnedDocs, PrepareOptions, PruneOptions, Segmenter,
    TokenizerOptions, Vocabulary,
};

/// A corpus: training documents, held-out documents and their vocabulary.
#[pyclass(name = "Corpus", module = "topos._topos", frozen)]
pub struct PyCorpus {
    pub corpus: Arc<Corpus>,
    /// The file it was opened from (`None`: built in memory or prepared into a temporary file).
    pub path: Option<PathBuf>,
    /// What `prepare` reported (JSON), for a corpus prepared from texts.
    report: Option<String>,
}

impl PyCorpus {
    pub fn new(corpus: Corpus, path: Option<PathBuf>) -> Self {
        Self {
            corpus: Arc::new(corpus),
            path,
            report: None,
        }
    }
}

#[pymethods]
impl PyCorpus {
    /// Prepares a corpus from texts with Topos's tokenizer, as `topos prepare` does for a JSONL
    /// file of the same texts (same options, same file).
    #[staticmethod]
    #[pyo3(signature = (texts, *, holdout=0.0, seed=0, min_df=5, max_df=0.5, max_vocab=None,
        tokenizer="words", language="english", min_len=None, stem=false, keep_stopwords=false,
        keep_numbers=false, keep_case=false))]
    #[allow(clippy::too_many_arguments)]
    fn from_texts(
        py: Python<'_>,
        texts: Vec<String>,
        holdout: f64,
        seed: u64,
        min_df: u64,
        max_df: f64,
        max_vocab: Option<usize>,
        tokenizer: &str,
        language: &str,
        min_len: Option<usize>,
        stem: bool,
        keep_stopwords: bool,
        keep_numbers: bool,
        keep_case: bool,
    ) -> PyResult<Self> {
        if texts.is_empty() {
            return Err(value_error("texts is empty: give at least one document"));
        }
        let segmenter: Segmenter = tokenizer.parse().map_err(value_error)?;
        let language: Language = language.parse().map_err(value_error)?;
        let opts = PrepareOptions {
            format: Some(InputFormat::Jsonl),
            tokenizer: TokenizerOptions {
                segmenter,
                language,
                lowercase: !keep_case,
                english_stopwords: !keep_stopwords,
                stopword_file: None,
                min_len: min_len.unwrap_or_else(|| segmenter.default_min_len()),
                stem,
                drop_numbers: !keep_numbers,
            },
            prune: PruneOptions {
                min_df,
                max_df,
                max_vocab,
            },
            holdout,
            seed,
            ..PrepareOptions::default()
        };
        py.detach(|| {
            guard("Corpus.from_texts", || {
                // `prepare` reads files in two streaming passes, so the texts go through a
                // temporary JSONL file (one object per line holds texts with line breaks). The
                // corpus is memory-mapped, and the mapping outlives the file's name.
                let dir = tempfile::tempdir().map_err(to_py)?;
                let input = dir.path().join("texts.jsonl");
                let output = dir.path().join("corpus.tcorp");
                let mut f = std::io::BufWriter::new(std::fs::File::create(&input).map_err(to_py)?);
                for t in &texts {
                    serde_json::to_writer(&mut f, &serde_json::json!({ "text": t }))
                        .map_err(|e| to_py(std::io::Error::other(e)))?;
                    f.write_all(b"\n").map_err(to_py)?;
                }
                f.flush().map_err(to_py)?;
                drop(f);
                // The temporary file is ours, not the caller's: its name and the command line's
                // flags do not belong in the message.
                let report =
                    topos_corpus::prepare(&input, &output, &opts, &mut |_| {}).map_err(|e| {
                        let msg = topos_io::one_line(&e)
                            .replace(&input.display().to_string(), "the texts")
                            .replace(
                                "check the input format (jsonl) and --text-field",
                                "check that the texts hold words the options keep",
                            )
                            .replace("--min-df", "min_df")
                            .replace("--max-df", "max_df");
                        crate::errors::value_error(msg)
                    })?;
                let corpus = Corpus::open(&output).map_err(to_py)?;
                let mut c = PyCorpus::new(corpus, None);
                c.report = serde_json::to_string(&report).ok();
                Ok(c)
            })
        })
    }

    /// Opens a `.tcorp` file (memory-mapped).
    #[staticmethod]
    fn open(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        py.detach(|| {
            guard("Corpus.open", || {
                let c = Corpus::open(&path).map_err(to_py)?;
                Ok(PyCorpus::new(c, Some(path)))
            })
        })
    }

    /// A corpus of count rows (checked by the Python layer: canonical CSR, non-negative integer
    /// counts). Rows are held out by `prepare`'s deterministic split (`holdout`, `seed`); empty
    /// rows are left out, as `prepare` leaves out empty documents. Returns the corpus and, for its training and
    /// held-out documents, the rows they came from.
    #[staticmethod]
    #[pyo3(signature = (indptr, indices, counts, n_cols, words, holdout=0.0, seed=0))]
    #[allow(clippy::type_complexity, clippy::too_many_arguments)]
    fn _from_counts<'py>(
        py: Python<'py>,
        indptr: PyReadonlyArray1<'py, i64>,
        indices: PyReadonlyArray1<'py, i32>,
        counts: PyReadonlyArray1<'py, i64>,
        n_cols: usize,
        words: Vec<String>,
        holdout: f64,
        seed: u64,
    ) -> PyResult<(Self, Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<i64>>)> {
        if words.len() != n_cols {
            return Err(value_error(format!(
                "the vocabulary has {} words but the matrix has {n_cols} columns",
                words.len()
            )));
        }
        let m = CsrArrays {
            indptr,
            indices,
            n_cols,
        };
        let s = m.slices()?;
        let counts = counts
            .as_slice()
            .map_err(|_| value_error("data must be contiguous"))?;
        if counts.len() != s.indices.len() {
            return Err(value_error("data and indices differ in length"));
        }
        topos_corpus::split::validate_holdout(holdout).map_err(value_error)?;
        let (c, train_rows, heldout_rows) = py.detach(|| {
            guard("Corpus.from_csr", || {
                let vocab = Vocabulary::new(words);
                if let Some(w) = vocab.first_duplicate() {
                    return Err(value_error(format!(
                        "the vocabulary has the word {:?} twice",
                        vocab.word(w)
                    )));
                }
                let nonempty = |r: usize| {
                    (s.indptr[r] as usize..s.indptr[r + 1] as usize).any(|i| counts[i] > 0)
                };
                let is_heldout = |r: usize| is_heldout(seed, r as u64, holdout);
                let train_rows: Vec<usize> = (0..s.n_rows())
                    .filter(|&r| nonempty(r) && !is_heldout(r))
                    .collect();
                let heldout_rows: Vec<usize> = (0..s.n_rows())
                    .filter(|&r| nonempty(r) && is_heldout(r))
                    .collect();
                let train = rows_to_docs(s, counts, Some(&train_rows));
                let held = if heldout_rows.is_empty() {
                    OwnedDocs::new()
                } else {
                    rows_to_docs(s, counts, Some(&heldout_rows))
                };
                Ok((
                    Corpus::from_parts(vocab, train, held),
                    train_rows,
                    heldout_rows,
                ))
            })
        })?;
        let to_i64 = |v: Vec<usize>| v.into_iter().map(|r| r as i64).collect::<Vec<_>>();
        Ok((
            PyCorpus::new(c, None),
            to_i64(train_rows).into_pyarray(py),
            to_i64(heldout_rows).into_pyarray(py),
        ))
    }

    /// Writes the corpus to a `.tcorp` file (atomically).
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        py.detach(|| guard("Corpus.save", || self.corpus.write(&path).map_err(to_py)))
    }

    /// The training (or held-out) documents as CSR arrays of counts: (indptr, indices, counts).
    #[pyo3(signature = (heldout=false))]
    #[allow(clippy::type_complexity)]
    fn _counts<'py>(
        &self,
        py: Python<'py>,
        heldout: bool,
    ) -> PyResult<(
        Bound<'py, PyArray1<i64>>,
        Bound<'py, PyArray1<i32>>,
        Bound<'py, PyArray1<i64>>,
    )> {
        let (indptr, indices, counts) = py.detach(|| {
            let docs = if heldout {
                self.corpus.heldout()
            } else {
                self.corpus.train()
            };
            docs_to_rows(docs)
        });
        Ok((
            indptr.into_pyarray(py),
            indices.into_pyarray(py),
            counts.into_pyarray(py),
        ))
    }

    /// Training documents.
    #[getter]
    fn num_docs(&self) -> usize {
        self.corpus.train().len()
    }

    /// Held-out documents.
    #[getter]
    fn num_heldout(&self) -> usize {
        self.corpus.heldout().len()
    }

    /// Training tokens.
    #[getter]
    fn num_tokens(&self) -> u64 {
        self.corpus.train().num_tokens()
    }

    /// Vocabulary size.
    #[getter]
    fn num_words(&self) -> usize {
        self.corpus.vocab().len()
    }

    /// The vocabulary, by word id.
    #[getter]
    fn vocabulary(&self) -> Vec<String> {
        self.corpus.vocab().words().to_vec()
    }

    /// Indices of the training documents in the input (documents left out as empty are
    /// skipped).
    #[getter]
    fn train_ids<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u64>> {
        self.corpus.train_ids().to_vec().into_pyarray(py)
    }

    /// Indices of the held-out documents in the input.
    #[getter]
    fn heldout_ids<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u64>> {
        self.corpus.heldout_ids().to_vec().into_pyarray(py)
    }

    /// The tokenizer options the corpus records, in words (`None` for a corpus of counts).
    #[getter]
    fn tokenizer(&self) -> Option<String> {
        self.corpus.tokenizer().map(|t| t.describe())
    }

    /// What preparing the texts kept and dropped (JSON), for a corpus from `from_texts`.
    #[getter]
    fn _report(&self) -> Option<String> {
        self.report.clone()
    }

    /// The payload checksum (as `topos` prints it).
    #[getter]
    fn checksum(&self) -> String {
        format!("{:016x}", self.corpus.checksum())
    }

    fn __repr__(&self) -> String {
        format!(
            "Corpus({} training documents, {} held out, {} tokens, {} words)",
            self.num_docs(),
            self.num_heldout(),
            self.num_tokens(),
            self.num_words()
        )
    }
}
