//! `topos knn`: every document's k nearest documents over bag-of-words rows of a corpus file
//! (counts, TF-IDF or binary, optionally L1- or L2-normalized), by any of the 15 distances of
//! `topos-distance`. Also the shared plumbing of `topos similar`: metric and device options, the
//! thread pool, batched search with a progress bar, and output: JSONL or CSV (streamed, to
//! stdout or a file written atomically), or with `--json` one JSON document.
//!
//! Every neighbour's score is named for what it is: `distance` (smaller is nearer) for 14
//! metrics, `similarity` (larger is nearer) for dot-product. A query with no word known to the
//! index (an all-zero row) has no meaningful neighbours under any metric (every distance to it is
//! the same, or undefined), so it gets an empty list and is counted, never arbitrary neighbours.

use crate::ui::Ui;
use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Instant;
use topos_corpus::{Corpus, Docs};
use topos_cuda::DeviceSpec;
use topos_distance::{Backend, CpuBackend, CsrMatrix, Metric, PreparedIndex, RowNorm};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Corpus file: its training documents are the index (and the queries, unless --queries or
    /// --heldout).
    pub corpus: PathBuf,
    /// Search for the documents of this corpus (its training documents, or its held-out ones
    /// with --heldout); words are matched to the index corpus's vocabulary by spelling.
    #[arg(long)]
    pub queries: Option<PathBuf>,
    /// Use held-out documents as queries (of --queries if given, else of CORPUS).
    #[arg(long)]
    pub heldout: bool,
    #[command(flatten)]
    pub search: SearchArgs,
    /// Row values: counts, tfidf (count × (ln((1 + N)/(1 + df)) + 1), df over the index
    /// documents) or binary.
    #[arg(long, default_value = "counts", value_parser = ["counts", "tfidf", "binary"])]
    pub weighting: String,
    /// Row normalization after weighting: none, l1 (rows sum to 1) or l2 (unit length).
    #[arg(long, default_value = "none", value_parser = ["none", "l1", "l2"])]
    pub norm: String,
    /// Keep each document as a candidate for itself (by default a document is not its own
    /// neighbour when the queries are the index documents).
    #[arg(long)]
    pub include_self: bool,
}

/// Options shared by `knn` and `similar`.
#[derive(clap::Args, Debug)]
pub struct SearchArgs {
    /// Neighbours per query.
    #[arg(short, default_value_t = 10)]
    pub k: usize,
    /// Distance: correlation, cosine, dice, dot-product, euclidean, canberra, chebyshev,
    /// hamming, hellinger, jaccard, jensen-shannon, kl-divergence, manhattan, minkowski (with
    /// --p), russell-rao.
    #[arg(long)]
    pub metric: Option<String>,
    /// Minkowski's exponent p (≥ 1).
    #[arg(long)]
    pub p: Option<f64>,
    /// Where to compute: auto (a GPU when one is usable, the CPU otherwise; it says which), cpu,
    /// cuda or cuda:N. Both give the same neighbours.
    #[arg(long, default_value = "auto")]
    pub device: DeviceSpec,
    /// Worker threads (0 = all cores); results do not depend on it.
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Device memory the index may take on a GPU, e.g. 20GiB (default: all that is free); a
    /// larger index is streamed through the GPU in row chunks, with the same results.
    #[arg(long, value_parser = topos_train::memory::parse_bytes)]
    pub gpu_memory: Option<u64>,
    /// Queries per batch (memory is bounded by the batch, never by queries × documents);
    /// default 1,024 on the CPU, 65,536 on a GPU.
    #[arg(long)]
    pub batch: Option<usize>,
    /// Output format: jsonl (one line per query, streamed) or csv (one line per neighbour).
    /// With --json and no -o, stdout is one JSON document instead, results included.
    #[arg(long, value_parser = ["jsonl", "csv"])]
    pub format: Option<String>,
    /// Write here (atomically) instead of stdout.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

impl SearchArgs {
    /// The metric from --metric and --p (`default` when --metric is absent).
    pub fn metric(&self, default: Metric) -> Result<Metric> {
        let metric = match (&self.metric, self.p) {
            (None, None) => default,
            (None, Some(_)) => bail!("--p is Minkowski's exponent: use it with --metric minkowski"),
            (Some(name), Some(p)) if name.trim().eq_ignore_ascii_case("minkowski") => {
                Metric::minkowski(p)?
            }
            (Some(_), Some(_)) => {
                bail!("--p is Minkowski's exponent: use it with --metric minkowski")
            }
            (Some(name), None) if name.trim().eq_ignore_ascii_case("minkowski") => {
                bail!("--metric minkowski needs its exponent: add --p P (p >= 1, e.g. --p 3)")
            }
            (Some(name), None) => name.parse()?,
        };
        Ok(metric)
    }

    /// Checks what can be checked before loading anything: k, batch, and the output.
    pub fn validate(&self, ui: Ui) -> Result<()> {
        if self.k == 0 {
            bail!("-k must be at least 1");
        }
        if self.batch == Some(0) {
            bail!("--batch must be at least 1");
        }
        if ui.json && self.output.is_none() && self.format.as_deref() == Some("csv") {
            bail!("--json prints one JSON document on stdout; write the CSV to a file with -o FILE, or drop --json");
        }
        Ok(())
    }

    /// The output's format: `--format`, else JSONL.
    fn format(&self) -> &str {
        self.format.as_deref().unwrap_or("jsonl")
    }

    /// Where results go (see [`Output`]).
    pub fn output(&self, ui: Ui, metric: Metric) -> Result<Output> {
        let format = if ui.json && self.output.is_none() {
            Format::Document
        } else if self.format() == "csv" {
            Format::Csv
        } else {
            Format::Jsonl
        };
        Output::open(self.output.as_deref(), format, metric)
    }

    /// The engine --device names, opened (a GPU that cannot be used is a one-line error; under
    /// auto it is passed over, and `ui` says so), with its batch size.
    pub fn engine(&self, ui: Ui) -> Result<(Box<dyn Backend>, usize)> {
        #[cfg(feature = "cuda")]
        let gpu = |ordinal| -> Result<(Box<dyn Backend>, usize)> {
            let b = topos_distance::gpu::CudaBackend::open(ordinal)?
                .with_memory_budget(self.gpu_memory);
            ui.info(format!(
                "searching on cuda:{} ({})",
                b.info().ordinal,
                b.info().name
            ));
            Ok((Box::new(b), self.batch.unwrap_or(65_536)))
        };
        #[cfg(not(feature = "cuda"))]
        let gpu = |_ordinal: Option<usize>| -> Result<(Box<dyn Backend>, usize)> {
            bail!("this build of topos has no GPU support (built without the `cuda` feature); rebuild with default features or use --device cpu")
        };
        let cpu =
            || -> (Box<dyn Backend>, usize) { (Box::new(CpuBackend), self.batch.unwrap_or(1024)) };
        match self.device {
            DeviceSpec::Cpu => Ok(cpu()),
            DeviceSpec::Cuda(ordinal) => gpu(ordinal),
            DeviceSpec::Auto => {
                let usable = cfg!(feature = "cuda")
                    && topos_cuda::device::device_count().is_ok_and(|n| n > 0)
                    && topos_cuda::device::nvrtc_present();
                if !usable {
                    return Ok(cpu());
                }
                gpu(None).or_else(|e| {
                    ui.info(format!("not using the GPU: {e}"));
                    Ok(cpu())
                })
            }
        }
    }
}

/// The output's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// One JSON object per query, streamed.
    Jsonl,
    /// `query,rank,neighbor,SCORE`, streamed.
    Csv,
    /// `--json` on stdout: one JSON document, results in its `results` (kept in memory:
    /// queries × k neighbours).
    Document,
}

/// What a neighbour's score is called: `distance` (smaller is nearer) or, for dot-product,
/// `similarity` (larger is nearer).
pub fn score_name(metric: Metric) -> &'static str {
    if metric.is_similarity() {
        "similarity"
    } else {
        "distance"
    }
}

/// Where results go: a file written atomically or stdout, as JSONL or CSV (flushed after every
/// batch, so memory stays bounded), or kept for one JSON document.
pub struct Output {
    file: Option<topos_io::AtomicFile>,
    format: Format,
    score: &'static str,
    buf: Vec<u8>,
    results: Vec<serde_json::Value>,
    /// Queries with no word known to the index (given an empty list).
    pub empty_queries: u64,
    /// Neighbours whose score is not a number (null in the output): correlation between rows
    /// of which one has all values equal, for one.
    pub undefined_scores: u64,
}

impl Output {
    pub fn open(path: Option<&Path>, format: Format, metric: Metric) -> Result<Output> {
        let file = match path {
            Some(p) => Some(
                topos_io::AtomicFile::create(p)
                    .with_context(|| format!("cannot write {}", p.display()))?,
            ),
            None => None,
        };
        let mut out = Output {
            file,
            format,
            score: score_name(metric),
            buf: Vec::new(),
            results: Vec::new(),
            empty_queries: 0,
            undefined_scores: 0,
        };
        if format == Format::Csv {
            writeln!(out.buf, "query,rank,neighbor,{}", out.score)?;
        }
        Ok(out)
    }

    /// Appends one query's neighbours as (document id, score); `query` is a document id or a
    /// label (JSON value).
    pub fn push(&mut self, query: &serde_json::Value, neighbours: &[(u64, f32)]) -> Result<()> {
        self.undefined_scores += neighbours.iter().filter(|n| !n.1.is_finite()).count() as u64;
        match self.format {
            Format::Csv => {
                let q = match query {
                    serde_json::Value::String(s) => format!("\"{}\"", s.replace('"', "\"\"")),
                    other => other.to_string(),
                };
                for (rank, (doc, score)) in neighbours.iter().enumerate() {
                    writeln!(self.buf, "{q},{},{doc},{score}", rank + 1)?;
                }
            }
            Format::Jsonl | Format::Document => {
                let list: Vec<serde_json::Value> = neighbours
                    .iter()
                    .map(|&(doc, score)| {
                        let mut o = serde_json::Map::new();
                        o.insert("doc".into(), doc.into());
                        o.insert(self.score.into(), score.into());
                        serde_json::Value::Object(o)
                    })
                    .collect();
                let line = serde_json::json!({ "query": query, "neighbors": list });
                if self.format == Format::Document {
                    self.results.push(line);
                } else {
                    serde_json::to_writer(&mut self.buf, &line)?;
                    self.buf.push(b'\n');
                }
            }
        }
        Ok(())
    }

    /// Writes what is buffered (called once per batch, so memory stays bounded).
    pub fn flush(&mut self) -> Result<()> {
        match &mut self.file {
            Some(f) => f.write_all(&self.buf)?,
            None => std::io::stdout().lock().write_all(&self.buf)?,
        }
        self.buf.clear();
        Ok(())
    }

    /// Flushes and, for a file, renames it into place; returns the results kept for a JSON
    /// document (empty unless [`Format::Document`]).
    pub fn finish(mut self) -> Result<Vec<serde_json::Value>> {
        self.flush()?;
        if let Some(f) = self.file.take() {
            f.commit()?;
        }
        Ok(std::mem::take(&mut self.results))
    }
}

/// What `knn` and `similar` report besides the neighbours: on stdout with `--json` (one
/// document, with the results unless they went to a file), else a status line.
#[derive(Serialize)]
pub struct Summary {
    pub queries: usize,
    pub documents: usize,
    pub k: usize,
    pub metric: String,
    /// `distance` (smaller is nearer) or `similarity` (larger is nearer).
    pub score: &'static str,
    /// Queries with no word known to the index: their neighbour lists are empty.
    pub queries_without_known_words: u64,
    /// Neighbours whose score is undefined (null), said on stderr too.
    pub undefined_scores: u64,
    pub seconds: f64,
    pub output: Option<PathBuf>,
    /// The neighbours of every query (with `--json` and no `-o`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub results: Option<Vec<serde_json::Value>>,
}

impl Summary {
    /// Prints the summary: the JSON document with `--json`; else, with `-o`, one result line on
    /// stdout, and without, a status line on stderr. Queries without a known word are always
    /// said on stderr (their empty lists are part of the results).
    pub fn print(self, ui: Ui) -> Result<()> {
        if self.queries_without_known_words > 0 {
            eprintln!(
                "warning: {} of {} queries have no word known to the index; their neighbour lists are empty",
                self.queries_without_known_words, self.queries
            );
        }
        if self.undefined_scores > 0 {
            let why = if self.metric == "correlation" {
                "correlation is undefined when a row's values are all equal; use cosine for such rows"
            } else {
                "the metric is not finite for those pairs of rows"
            };
            eprintln!(
                "warning: {} neighbour scores are undefined (null in the output): {why}",
                self.undefined_scores
            );
        }
        if ui.json {
            return ui.result(&self, || {});
        }
        let nearer = if self.score == "similarity" {
            " (a similarity: larger is nearer)"
        } else {
            ""
        };
        match &self.output {
            Some(p) => ui.result(&self, || {
                println!(
                    "{} x {} neighbours ({}{nearer}) in {:.2} s -> {}",
                    crate::ui::count(self.queries as u64, "query", "queries"),
                    self.k,
                    self.metric,
                    self.seconds,
                    p.display()
                )
            }),
            None => {
                ui.info(format!(
                    "{} ({}{nearer}) in {:.2} s",
                    crate::ui::count(self.queries as u64, "query", "queries"),
                    self.metric,
                    self.seconds
                ));
                Ok(())
            }
        }
    }
}

/// Runs `f` on a pool of `threads` workers (0: all cores).
pub fn with_threads<T: Send>(threads: usize, f: impl FnOnce() -> Result<T> + Send) -> Result<T> {
    let mut b = rayon::ThreadPoolBuilder::new();
    if threads > 0 {
        b = b.num_threads(threads);
    }
    b.build().context("cannot start worker threads")?.install(f)
}

/// Searches the rows `rows` of `queries` in batches against a prepared index, with a progress
/// bar, and writes each query's neighbours (`index_ids[row]` as document ids) to `out`.
/// `query_label(i)` names query row i in the output; `exclude_self` skips index row i for
/// query row i.
#[allow(clippy::too_many_arguments)]
pub fn search(
    prepared: &dyn PreparedIndex,
    queries: &CsrMatrix,
    rows: Range<usize>,
    k: usize,
    batch: usize,
    exclude_self: bool,
    index_ids: &[u64],
    query_label: impl Fn(usize) -> serde_json::Value,
    out: &mut Output,
    ui: Ui,
) -> Result<()> {
    let bar = ui.bar(
        rows.len() as u64,
        "{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} queries ({per_sec}, eta {eta})",
    );
    let mut start = rows.start;
    while start < rows.end {
        let end = (start + batch).min(rows.end);
        let nn = prepared.knn(queries, start..end, k, exclude_self)?;
        for i in 0..nn.len() {
            if queries.row(start + i).indices.is_empty() {
                // No known word: every index row is equally near (or undefined); no neighbours.
                out.empty_queries += 1;
                out.push(&query_label(start + i), &[])?;
                continue;
            }
            let (idx, dist) = nn.row(i);
            let list: Vec<(u64, f32)> = idx
                .iter()
                .zip(dist)
                .map(|(&r, &d)| (index_ids[r as usize], d))
                .collect();
            out.push(&query_label(start + i), &list)?;
        }
        out.flush()?;
        bar.set_position((end - rows.start) as u64);
        start = end;
    }
    bar.finish_and_clear();
    Ok(())
}

/// Bag-of-words rows of `docs` (word ids below `n_words`): counts of each word, columns sorted.
/// `map` translates the documents' word ids into the index vocabulary (None: dropped).
pub fn bag_of_words(
    docs: Docs,
    n_words: usize,
    map: Option<&[Option<u32>]>,
) -> Result<(CsrMatrix, u64)> {
    let mut offsets = Vec::with_capacity(docs.len() + 1);
    offsets.push(0u64);
    let (mut indices, mut values) = (Vec::new(), Vec::new());
    let mut dropped = 0u64;
    let mut ids: Vec<u32> = Vec::new();
    for doc in docs.iter() {
        ids.clear();
        match map {
            Some(m) => {
                for &w in doc {
                    match m.get(w as usize).copied().flatten() {
                        Some(v) => ids.push(v),
                        None => dropped += 1,
                    }
                }
            }
            None => ids.extend_from_slice(doc),
        }
        ids.sort_unstable();
        let mut i = 0;
        while i < ids.len() {
            let w = ids[i];
            let mut j = i;
            while j < ids.len() && ids[j] == w {
                j += 1;
            }
            if w as usize >= n_words {
                bail!("word id {w} is outside the vocabulary of {n_words} words");
            }
            indices.push(w);
            values.push((j - i) as f32);
            i = j;
        }
        offsets.push(indices.len() as u64);
    }
    Ok((CsrMatrix::new(n_words, offsets, indices, values)?, dropped))
}

/// Applies the weighting (idf from `index`'s document frequencies) and normalization in place.
fn weight(m: CsrMatrix, idf: Option<&[f32]>, binary: bool, norm: &str) -> Result<CsrMatrix> {
    let (n_cols, offsets, indices, mut values) = m.into_parts();
    if binary {
        values.iter_mut().for_each(|v| *v = 1.0);
    }
    if let Some(idf) = idf {
        for (v, &c) in values.iter_mut().zip(&indices) {
            *v *= idf[c as usize];
        }
    }
    let mut m = CsrMatrix::new(n_cols, offsets, indices, values)?;
    match norm {
        "l1" => m.normalize_rows(RowNorm::L1),
        "l2" => m.normalize_rows(RowNorm::L2),
        _ => {}
    }
    Ok(m)
}

/// Smoothed inverse document frequency over the rows of `m`: ln((1 + N)/(1 + df)) + 1 (> 0,
/// so no weight becomes a stored zero).
fn idf(m: &CsrMatrix) -> Vec<f32> {
    let mut df = vec![0u64; m.n_cols()];
    for &c in m.indices() {
        df[c as usize] += 1;
    }
    let n = m.n_rows() as f64;
    df.iter()
        .map(|&d| (((1.0 + n) / (1.0 + d as f64)).ln() + 1.0) as f32)
        .collect()
}

pub fn run(args: Args, ui: Ui) -> Result<()> {
    if let Some(out) = &args.search.output {
        super::check_output(
            out,
            &[
                ("the corpus", Some(&args.corpus)),
                ("the queries", args.queries.as_deref()),
            ],
        )?;
    }
    args.search.validate(ui)?;
    let metric = args.search.metric(Metric::Cosine)?;
    if metric == Metric::KlDivergence {
        // KL(p‖q) is +∞ whenever the query has a word the candidate lacks, which for sparse
        // bag-of-words rows is nearly every pair: the "neighbours" would be index order.
        bail!(
            "kl-divergence is infinite between bag-of-words rows whenever the query has a word the other document lacks (nearly always); use jensen-shannon or hellinger, which are finite on sparse rows, or `topos similar`, which searches smoothed topic mixtures where kl-divergence is finite"
        );
    }
    let t0 = Instant::now();
    let corpus = Corpus::open(&args.corpus)?;
    let n_words = corpus.vocab().len();
    let (counts, _) = bag_of_words(corpus.train(), n_words, None)?;
    if counts.n_rows() == 0 {
        bail!(
            "{} has no training documents to search",
            args.corpus.display()
        );
    }
    let other = match &args.queries {
        Some(p) => Some(Corpus::open(p)?),
        None => None,
    };
    let same_docs = other.is_none() && !args.heldout;
    let (query_counts, query_ids, dropped) = if same_docs {
        (None, corpus.train_ids().to_vec(), 0)
    } else {
        let qc = other.as_ref().unwrap_or(&corpus);
        let (docs, ids) = if args.heldout {
            (qc.heldout(), qc.heldout_ids())
        } else {
            (qc.train(), qc.train_ids())
        };
        if docs.is_empty() {
            bail!(
                "no {} documents to use as queries",
                if args.heldout { "held-out" } else { "training" }
            );
        }
        let map: Option<Vec<Option<u32>>> = other.as_ref().map(|o| {
            o.vocab()
                .words()
                .iter()
                .map(|w| corpus.vocab().id(w))
                .collect()
        });
        let (m, dropped) = bag_of_words(docs, n_words, map.as_deref())?;
        (Some(m), ids.to_vec(), dropped)
    };
    let idf_w = (args.weighting == "tfidf").then(|| idf(&counts));
    let binary = args.weighting == "binary";
    let index = weight(counts, idf_w.as_deref(), binary, &args.norm)?;
    let queries = match query_counts {
        Some(q) => weight(q, idf_w.as_deref(), binary, &args.norm)?,
        None => index.clone(),
    };
    let exclude_self = same_docs && !args.include_self;
    ui.info(format!(
        "{} x {}, {} words, {} non-zeros; {metric}, {} weighting, norm {}{}",
        crate::ui::count(queries.n_rows() as u64, "query", "queries"),
        crate::ui::count(index.n_rows() as u64, "document", "documents"),
        n_words,
        index.nnz(),
        args.weighting,
        args.norm,
        if dropped > 0 {
            format!("; {dropped} query tokens not in the index vocabulary dropped")
        } else {
            String::new()
        }
    ));
    let k = args.search.k;
    let max = index.n_rows() - usize::from(exclude_self);
    if k > max {
        bail!(
            "-k {k} is more than the {max} candidate documents{}",
            if exclude_self {
                " (a document is not its own neighbour; --include-self counts it)"
            } else {
                ""
            }
        );
    }
    let mut out = args.search.output(ui, metric)?;
    let index_ids = corpus.train_ids();
    with_threads(args.search.threads, || {
        let (engine, batch) = args.search.engine(ui)?;
        let prepared = engine.prepare(&index, metric)?;
        search(
            prepared.as_ref(),
            &queries,
            0..queries.n_rows(),
            k,
            batch,
            exclude_self,
            index_ids,
            |i| serde_json::Value::from(query_ids[i]),
            &mut out,
            ui,
        )
    })?;
    let (empty, undefined) = (out.empty_queries, out.undefined_scores);
    let results = out.finish()?;
    Summary {
        queries: queries.n_rows(),
        documents: index.n_rows(),
        k,
        metric: metric.to_string(),
        score: score_name(metric),
        queries_without_known_words: empty,
        undefined_scores: undefined,
        seconds: t0.elapsed().as_secs_f64(),
        output: args.search.output.clone(),
        results: (ui.json && args.search.output.is_none()).then_some(results),
    }
    .print(ui)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use topos_testkit::{assert_one_line, config};

    fn args(metric: Option<String>, p: Option<f64>) -> SearchArgs {
        SearchArgs {
            k: 10,
            metric,
            p,
            device: DeviceSpec::Cpu,
            threads: 0,
            gpu_memory: None,
            batch: None,
            format: None,
            output: None,
        }
    }

    /// A metric spec as a user might write it: a known name (any case, `_` for `-`), a prefix,
    /// a `minkowski:P` form, or noise.
    fn spec() -> impl Strategy<Value = String> {
        let names: Vec<String> = Metric::NAMES
            .iter()
            .map(|n| n.to_string())
            .chain(["l1", "L2", "js", "kl", "dot", "cityblock"].map(String::from))
            .collect();
        prop_oneof![
            prop::sample::select(names.clone()),
            (prop::sample::select(names), "[ _:A-Z0-9.eE+-]{0,8}").prop_map(|(n, s)| n + &s),
            "minkowski:[0-9.eEinfa+-]{0,8}",
            any::<String>(),
        ]
    }

    proptest! {
        #![proptest_config(config(512))]

        /// `--metric` and `--p`: a metric or a one-line error, never a panic; a name that parses
        /// prints back to a spec that parses to the same metric.
        #[test]
        fn metric_specs(name in proptest::option::of(spec()), p in proptest::option::of(prop_oneof![
            any::<f64>(), Just(f64::NAN), Just(f64::INFINITY), Just(0.5), Just(3.0)
        ])) {
            match args(name, p).metric(Metric::Cosine) {
                Ok(m) => {
                    let back: Metric = m.to_string().parse().unwrap();
                    prop_assert_eq!(back, m);
                }
                Err(e) => assert_one_line(&format!("{e:#}")),
            }
        }

        /// `--gpu-memory` sizes: a size of at least one byte, or a one-line error.
        #[test]
        fn gpu_memory_sizes(s in prop_oneof![
            "[0-9]{0,22}(\\.[0-9]{0,4})?[ ]?(B|k|KiB|MB|mib|G|GiB|TiB|tb|x|)",
            any::<String>(),
        ]) {
            match topos_train::memory::parse_bytes(&s) {
                Ok(n) => prop_assert!(n >= 1),
                Err(e) => assert_one_line(&e),
            }
        }
    }
}
