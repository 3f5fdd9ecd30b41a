//! `topos._topos.Model`: a trained `.tmod` model, and what `topos-model` does with one (top
//! words, inference by fold-in, held-out log-likelihood by document completion). Inference and
//! evaluation run with the GIL released, on a pool of the threads asked for; their results do
//! not depend on the number of threads (the fold-in's random numbers are keyed by token).

use crate::corpus::PyCorpus;
use crate::csr::{rows_to_docs, shuffle_tokens, CsrArrays};
use crate::errors::{guard, to_py, value_error};
use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use topos_corpus::{Corpus, Docs, OwnedDocs, Tokenizer};
use topos_model::{
    doc_to_ids, heldout_log_likelihood, infer, summarize, FoldInOptions, HeldOut, Hyperparameters,
    Phi, TopicModel,
};

/// Runs `f` on a pool of `threads` workers (0: all cores), as the CLI's `--threads`.
pub fn in_pool<T: Send>(threads: usize, f: impl FnOnce() -> PyResult<T> + Send) -> PyResult<T> {
    let mut b = rayon::ThreadPoolBuilder::new();
    if threads > 0 {
        b = b.num_threads(threads);
    }
    let pool = b.build().map_err(|e| {
        pyo3::exceptions::PyRuntimeError::new_err(format!("cannot start worker threads: {e}"))
    })?;
    pool.install(f)
}

fn foldin(sweeps: u32, burn_in: u32, seed: u64) -> PyResult<FoldInOptions> {
    let o = FoldInOptions {
        sweeps,
        burn_in,
        seed,
    };
    o.validate().map_err(to_py)?;
    Ok(o)
}

/// A trained topic model.
#[pyclass(name = "Model", module = "topos._topos", frozen)]
pub struct PyModel {
    pub model: TopicModel,
    /// φ, built on first use (V × K floats): inference and evaluation read it.
    phi: OnceLock<Phi>,
}

impl PyModel {
    pub fn new(model: TopicModel) -> Self {
        Self {
            model,
            phi: OnceLock::new(),
        }
    }

    fn phi(&self) -> PyResult<&Phi> {
        if let Some(p) = self.phi.get() {
            return Ok(p);
        }
        let p = Phi::from_model(&self.model).map_err(to_py)?;
        Ok(self.phi.get_or_init(|| p))
    }

    /// θ of `docs` as a dense (documents × K) array; a document without a known word gets the
    /// prior's mixture (uniform).
    fn thetas(&self, docs: Docs<'_>, opts: &FoldInOptions) -> PyResult<Array2<f64>> {
        let phi = self.phi()?;
        let thetas = infer(phi, &self.model.hyper, docs, opts).map_err(to_py)?;
        let k = self.model.num_topics();
        let mut out = Array2::<f64>::zeros((thetas.len(), k));
        for (mut row, t) in out.rows_mut().into_iter().zip(&thetas) {
            for (j, x) in row.iter_mut().enumerate() {
                *x = t.probability(j);
            }
        }
        Ok(out)
    }
}

fn heldout_dict<'py>(py: Python<'py>, h: &HeldOut) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("heldout_ll", h.ll_per_token)?;
    d.set_item("perplexity", h.perplexity)?;
    d.set_item("docs_scored", h.docs_scored)?;
    d.set_item("docs_skipped", h.docs_skipped)?;
    d.set_item("tokens_observed", h.tokens_observed)?;
    d.set_item("tokens_scored", h.tokens_scored)?;
    Ok(d)
}

/// The documents to score by document completion: a corpus's held-out documents in their
/// stored order (what `topos eval` scores), or count rows with their tokens in a fixed
/// pseudo-random order (`csr::shuffle_tokens` says why).
fn heldout_docs(
    corpus: Option<&PyCorpus>,
    rows: Option<(CsrArrays<'_>, PyReadonlyArray1<'_, i64>)>,
    seed: u64,
) -> PyResult<HeldoutDocs> {
    match (corpus, rows) {
        (Some(c), None) => {
            if c.corpus.heldout().is_empty() {
                return Err(value_error(
                    "the corpus has no held-out documents; prepare it with --holdout (e.g. 0.1)",
                ));
            }
            Ok(HeldoutDocs::Corpus(Arc::clone(&c.corpus)))
        }
        (None, Some((m, counts))) => {
            let s = m.slices()?;
            let counts = counts
                .as_slice()
                .map_err(|_| value_error("data must be contiguous"))?;
            if counts.len() != s.indices.len() {
                return Err(value_error("data and indices differ in length"));
            }
            Ok(HeldoutDocs::Rows(shuffle_tokens(
                rows_to_docs(s, counts, None),
                seed,
            )))
        }
        _ => Err(value_error("give either a corpus or count rows")),
    }
}

enum HeldoutDocs {
    Corpus(Arc<Corpus>),
    Rows(OwnedDocs),
}

impl HeldoutDocs {
    fn view(&self) -> Docs<'_> {
        match self {
            HeldoutDocs::Corpus(c) => c.heldout(),
            HeldoutDocs::Rows(d) => d.view(),
        }
    }
}

#[pymethods]
impl PyModel {
    /// Reads a `.tmod` file.
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        py.detach(|| {
            guard("load", || {
                Ok(PyModel::new(TopicModel::read(&path).map_err(to_py)?))
            })
        })
    }

    /// The model file's bytes (what `save` writes), for pickling.
    fn _to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = py.detach(|| self.model.to_file_bytes()).map_err(to_py)?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// A model from a model file's bytes (checked as a file is: magic, version, checksum).
    #[staticmethod]
    fn _from_bytes(py: Python<'_>, bytes: &[u8]) -> PyResult<Self> {
        py.detach(|| {
            guard("Model unpickling", || {
                let m = TopicModel::from_file_bytes(bytes, std::path::Path::new("<pickled model>"))
                    .map_err(to_py)?;
                Ok(PyModel::new(m))
            })
        })
    }

    /// Writes the model to a `.tmod` file (atomically): the same bytes `topos train` writes.
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        py.detach(|| guard("Model.save", || self.model.write(&path).map_err(to_py)))
    }

    #[getter]
    fn num_topics(&self) -> usize {
        self.model.num_topics()
    }

    #[getter]
    fn num_words(&self) -> usize {
        self.model.num_words()
    }

    /// α: a float when symmetric, one value per topic when learned (`optimize_priors`).
    #[getter]
    fn alpha<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let a = &self.model.hyper.alpha;
        Ok(match a.symmetric_value() {
            Some(x) => x.into_pyobject(py)?.into_any(),
            None => a.values().to_vec().into_pyobject(py)?.into_any(),
        })
    }

    #[getter]
    fn beta(&self) -> f64 {
        self.model.hyper.beta
    }

    #[getter]
    fn vocabulary(&self) -> Vec<String> {
        self.model.vocab.words().to_vec()
    }

    /// How the model was trained: sampler, iterations, seed, corpus checksum and sizes.
    #[getter]
    fn provenance<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let p = &self.model.provenance;
        let d = PyDict::new(py);
        d.set_item("algorithm", &p.algorithm)?;
        d.set_item("iterations", p.iterations)?;
        d.set_item("seed", p.seed)?;
        d.set_item("corpus_checksum", format!("{:016x}", p.corpus_checksum))?;
        d.set_item("num_docs", p.num_docs)?;
        d.set_item("num_tokens", p.num_tokens)?;
        d.set_item("private", self.model.privacy.is_some())?;
        // Sampler settings that change the model, where not at their defaults (`mh_steps`).
        let settings = PyDict::new(py);
        for (name, value) in &p.sampler_settings {
            settings.set_item(name, value)?;
        }
        d.set_item("sampler_settings", settings)?;
        Ok(d)
    }

    /// The tokenizer options new text is cut with (`None` for a model of a count matrix).
    #[getter]
    fn tokenizer(&self) -> Option<String> {
        self.model.tokenizer.as_ref().map(|t| t.describe())
    }

    /// The `top` most probable words of every topic with φ_kw, most probable first.
    #[pyo3(signature = (top=10))]
    fn topics(&self, py: Python<'_>, top: usize) -> Vec<Vec<(String, f64)>> {
        let report = py.detach(|| summarize(&self.model, top));
        report
            .topics
            .into_iter()
            .map(|t| {
                t.top_words
                    .into_iter()
                    .map(|w| (w.word, w.probability))
                    .collect()
            })
            .collect()
    }

    /// Word-topic counts B as a (V, K) array of the model's counts.
    fn _word_topic<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray2<u32>> {
        let (v, k) = (self.model.num_words(), self.model.num_topics());
        Array2::from_shape_vec((v, k), self.model.word_topic.clone())
            .expect("V x K counts")
            .into_pyarray(py)
    }

    /// θ of texts cut as the model's corpus was cut.
    #[pyo3(signature = (texts, sweeps=50, burn_in=10, seed=1, threads=0))]
    fn _infer_texts<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<String>,
        sweeps: u32,
        burn_in: u32,
        seed: u64,
        threads: usize,
    ) -> PyResult<(Bound<'py, PyArray2<f64>>, usize)> {
        let opts = foldin(sweeps, burn_in, seed)?;
        let Some(spec) = &self.model.tokenizer else {
            return Err(value_error(
                "this model does not record how its corpus's text was cut (it was trained on a count matrix or by an older topos); give count rows to transform/infer instead of texts",
            ));
        };
        spec.check().map_err(value_error)?;
        let out = py.detach(|| {
            guard("Model.infer", || {
                in_pool(threads, || {
                    let tokenizer = Tokenizer::from_spec(spec).map_err(value_error)?;
                    let mut docs = OwnedDocs::new();
                    let mut unknown = 0;
                    for t in &texts {
                        let toks = tokenizer.tokens(t);
                        let refs: Vec<&str> = toks.iter().map(String::as_str).collect();
                        let ids = doc_to_ids(&self.model.vocab, &refs);
                        unknown += usize::from(ids.is_empty());
                        docs.push(&ids);
                    }
                    Ok((self.thetas(docs.view(), &opts)?, unknown))
                })
            })
        })?;
        // The documents without a known word: Python's caller warns (the CLI does too).
        Ok((out.0.into_pyarray(py), out.1))
    }

    /// θ of count rows over the model's vocabulary.
    #[pyo3(signature = (indptr, indices, counts, sweeps=50, burn_in=10, seed=1, threads=0))]
    #[allow(clippy::too_many_arguments)]
    fn _infer_counts<'py>(
        &self,
        py: Python<'py>,
        indptr: PyReadonlyArray1<'py, i64>,
        indices: PyReadonlyArray1<'py, i32>,
        counts: PyReadonlyArray1<'py, i64>,
        sweeps: u32,
        burn_in: u32,
        seed: u64,
        threads: usize,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let opts = foldin(sweeps, burn_in, seed)?;
        let m = CsrArrays {
            indptr,
            indices,
            n_cols: self.model.num_words(),
        };
        let s = m.slices()?;
        let counts = counts
            .as_slice()
            .map_err(|_| value_error("data must be contiguous"))?;
        let out = py.detach(|| {
            guard("Model.transform", || {
                in_pool(threads, || {
                    let docs = rows_to_docs(s, counts, None);
                    self.thetas(docs.view(), &opts)
                })
            })
        })?;
        Ok(out.into_pyarray(py))
    }

    /// Held-out log-likelihood per token by document completion (`topos eval`'s evaluator) of
    /// a corpus's held-out documents or of count rows over the model's vocabulary.
    #[pyo3(signature = (corpus=None, indptr=None, indices=None, counts=None, sweeps=50, burn_in=10, seed=1, threads=0))]
    #[allow(clippy::too_many_arguments)]
    fn _heldout<'py>(
        &self,
        py: Python<'py>,
        corpus: Option<PyRef<'py, PyCorpus>>,
        indptr: Option<PyReadonlyArray1<'py, i64>>,
        indices: Option<PyReadonlyArray1<'py, i32>>,
        counts: Option<PyReadonlyArray1<'py, i64>>,
        sweeps: u32,
        burn_in: u32,
        seed: u64,
        threads: usize,
    ) -> PyResult<Bound<'py, PyDict>> {
        let opts = foldin(sweeps, burn_in, seed)?;
        let rows = rows_of(indptr, indices, counts, self.model.num_words())?;
        if let Some(c) = &corpus {
            if c.corpus.vocab().len() != self.model.num_words() {
                return Err(value_error(format!(
                    "the corpus has {} words but the model has {}",
                    c.corpus.vocab().len(),
                    self.model.num_words()
                )));
            }
        }
        let docs = heldout_docs(corpus.as_deref(), rows, seed)?;
        let h = py.detach(|| {
            guard("Model.score", || {
                in_pool(threads, || {
                    heldout_log_likelihood(self.phi()?, &self.model.hyper, docs.view(), &opts)
                        .map_err(to_py)
                })
            })
        })?;
        heldout_dict(py, &h)
    }

    fn __repr__(&self) -> String {
        let p = &self.model.provenance;
        format!(
            "Model({} topics over {} words; {} for {} iterations, seed {})",
            self.model.num_topics(),
            self.model.num_words(),
            p.algorithm,
            p.iterations,
            p.seed
        )
    }
}

/// Count rows given as three optional arrays: all or none.
#[allow(clippy::type_complexity)]
fn rows_of<'py>(
    indptr: Option<PyReadonlyArray1<'py, i64>>,
    indices: Option<PyReadonlyArray1<'py, i32>>,
    counts: Option<PyReadonlyArray1<'py, i64>>,
    n_cols: usize,
) -> PyResult<Option<(CsrArrays<'py>, PyReadonlyArray1<'py, i64>)>> {
    match (indptr, indices, counts) {
        (Some(indptr), Some(indices), Some(c)) => Ok(Some((
            CsrArrays {
                indptr,
                indices,
                n_cols,
            },
            c,
        ))),
        (None, None, None) => Ok(None),
        _ => Err(value_error("count rows need indptr, indices and data")),
    }
}

/// Held-out log-likelihood per token under any topic-word matrix (K, V) with rows summing to 1,
/// by `topos eval`'s document completion with prior `alpha`, of a corpus's held-out documents
/// or of count rows: scores other systems' topics with Topos's evaluator.
#[pyfunction]
#[pyo3(signature = (topic_word, alpha, corpus=None, indptr=None, indices=None, counts=None, sweeps=50, burn_in=10, seed=1, threads=0))]
#[allow(clippy::too_many_arguments)]
pub fn _heldout_topic_word<'py>(
    py: Python<'py>,
    topic_word: PyReadonlyArray2<'py, f64>,
    alpha: f64,
    corpus: Option<PyRef<'py, PyCorpus>>,
    indptr: Option<PyReadonlyArray1<'py, i64>>,
    indices: Option<PyReadonlyArray1<'py, i32>>,
    counts: Option<PyReadonlyArray1<'py, i64>>,
    sweeps: u32,
    burn_in: u32,
    seed: u64,
    threads: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let opts = foldin(sweeps, burn_in, seed)?;
    let tw = topic_word.as_array();
    let (k, v) = (tw.nrows(), tw.ncols());
    // β does not enter document completion (φ is given); any valid value will do.
    let hyper = Hyperparameters::new(k as u32, Some(alpha), Some(0.01)).map_err(to_py)?;
    if let Some(c) = &corpus {
        if c.corpus.vocab().len() != v {
            return Err(value_error(format!(
                "the corpus has {} words but topic_word has {v}",
                c.corpus.vocab().len()
            )));
        }
    }
    let rows = rows_of(indptr, indices, counts, v)?;
    let docs = heldout_docs(corpus.as_deref(), rows, seed)?;
    // Word-major, as `Phi` stores it.
    let mut probs = vec![0f32; v * k];
    for ((t, w), &p) in tw.indexed_iter() {
        probs[w * k + t] = p as f32;
    }
    let h = py.detach(|| {
        guard("heldout_log_likelihood", || {
            in_pool(threads, || {
                let phi = Phi::from_probabilities(v, k, probs).map_err(to_py)?;
                heldout_log_likelihood(&phi, &hyper, docs.view(), &opts).map_err(to_py)
            })
        })
    })?;
    heldout_dict(py, &h)
}
