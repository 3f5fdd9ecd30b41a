//! The CPU engine: the assignments and both count matrices in host memory, the E-step on a
//! thread pool over the PDOW partitions (SaberLDA Alg. 1), the M-step rebuilding the counts from
//! the assignments ([`crate::counts`]).

use crate::counts::{count_doc_topics, count_word_topics, WordTopics};
use crate::engine::{Engine, EngineSetup, Start, TrainDocs};
use crate::layout::Layout;
use crate::sampler::{Sampler, SweepInput};
use crate::transport::Transport;
use crate::{loglik, TrainError};
use rayon::prelude::*;
use std::ops::Range;
use std::sync::{Arc, OnceLock};
use std::time::Instant;
use topos_corpus::{Docs, Vocabulary};
use topos_model::{DocTopics, Hyperparameters, Provenance, TopicModel};
use topos_sampling::{CounterRng, Stream};

/// Settings of a CPU run (what [`Trainer::new`] needs beside the documents).
#[derive(Clone, Debug)]
pub struct TrainOptions {
    pub sampler: &'static dyn Sampler,
    pub hyper: Hyperparameters,
    pub seed: u64,
    /// Worker threads; 0 means all cores.
    pub threads: usize,
    /// Partitions of the documents; `None` picks the sampler's default.
    pub partitions: Option<usize>,
}

/// Timing of one iteration.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct IterationStats {
    /// Completed iterations after this one.
    pub iteration: u32,
    /// Seconds spent in this iteration (sampling, exchange and count rebuild).
    pub seconds: f64,
    /// Tokens sampled per second in this iteration.
    pub tokens_per_second: f64,
}

/// The topic of every token uniform at random, keyed by (seed, token): what every device
/// starts from (the GPU draws the same numbers on the device).
pub fn initial_assignments(num_tokens: u64, num_topics: u32, seed: u64) -> Vec<u16> {
    (0..num_tokens)
        .into_par_iter()
        .map(|t| CounterRng::new(seed, Stream::Init, 0, t).below(num_topics) as u16)
        .collect()
}

/// A training run on the CPU.
pub struct Trainer {
    docs: TrainDocs,
    num_words: usize,
    sampler: &'static dyn Sampler,
    hyper: Hyperparameters,
    seed: u64,
    layout: Layout,
    z: Vec<u16>,
    iteration: u32,
    /// Document-topic counts of the current assignments. ESCA samples from them, so it rebuilds
    /// them every iteration; CGS keeps its own per-partition rows and rebuilds these only when
    /// asked (log-likelihood, model output), which saves a pass over the corpus per iteration.
    doc_topics: OnceLock<DocTopics>,
    word_topics: WordTopics,
    pool: rayon::ThreadPool,
    /// Private runs: the noisy release the sampler reads instead of the word-topic counts.
    release: Option<Arc<WordTopics>>,
    /// Whether `z` was sampled and the counts not yet rebuilt.
    sampled: bool,
}

impl Trainer {
    /// Starts a run with uniformly random initial assignments (keyed by seed and token).
    pub fn new(
        docs: impl Into<TrainDocs>,
        num_words: usize,
        opts: TrainOptions,
    ) -> Result<Self, TrainError> {
        Self::open(docs.into(), num_words, opts, Start::Fresh)
    }

    /// Opens a run from `start` (fresh or a checkpoint already checked against the settings).
    pub fn open(
        docs: TrainDocs,
        num_words: usize,
        opts: TrainOptions,
        start: Start,
    ) -> Result<Self, TrainError> {
        let view = docs.view();
        if view.num_tokens() == 0 {
            return Err(TrainError::EmptyCorpus);
        }
        let bound = view.max_word_id_bound();
        if bound as usize > num_words {
            return Err(TrainError::WordOutOfRange {
                found: bound - 1,
                vocab: num_words,
            });
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(opts.threads)
            .build()
            .map_err(|e| TrainError::ThreadPool(opts.threads, e.to_string()))?;
        let threads = pool.current_num_threads();
        let partitions = opts
            .partitions
            .unwrap_or_else(|| opts.sampler.default_partitions(view.num_tokens(), threads));
        let k = opts.hyper.num_topics;
        let (z, iteration) = match start {
            Start::Fresh => (
                pool.install(|| initial_assignments(view.num_tokens(), k, opts.seed)),
                0,
            ),
            Start::Resume(c) => {
                if c.assignments.len() as u64 != view.num_tokens() {
                    return Err(TrainError::CheckpointMismatch(format!(
                        "{} tokens in the checkpoint, {} in the corpus",
                        c.assignments.len(),
                        view.num_tokens()
                    )));
                }
                (c.assignments, c.header.iteration)
            }
        };
        let (layout, word_topics) = pool.install(|| {
            let layout = Layout::build(view, partitions);
            let b = count_word_topics(&layout, &z, num_words, k);
            (layout, b)
        });
        Ok(Self {
            docs,
            num_words,
            sampler: opts.sampler,
            hyper: opts.hyper,
            seed: opts.seed,
            layout,
            z,
            iteration,
            doc_topics: OnceLock::new(),
            word_topics,
            pool,
            release: None,
            sampled: false,
        })
    }

    /// Runs one whole iteration (sample, commit) in one process: for tests and tools that drive
    /// the CPU directly rather than through [`crate::run::Run`].
    pub fn step(&mut self) -> IterationStats {
        let start = Instant::now();
        self.sample_inner();
        self.commit_inner();
        let seconds = start.elapsed().as_secs_f64();
        IterationStats {
            iteration: self.iteration,
            seconds,
            tokens_per_second: self.docs().num_tokens() as f64 / seconds.max(1e-9),
        }
    }

    fn sample_inner(&mut self) {
        let next = self.iteration + 1;
        let Self {
            docs,
            layout,
            z,
            doc_topics,
            word_topics,
            pool,
            sampler,
            hyper,
            seed,
            release,
            ..
        } = self;
        let docs = docs.view();
        let cpu = sampler.cpu();
        pool.install(|| {
            let a = cpu
                .needs_doc_topics()
                .then(|| doc_topics.get_or_init(|| count_doc_topics(docs, z, hyper.num_topics)));
            let b: &WordTopics = release.as_deref().unwrap_or(word_topics);
            let sweep = cpu.prepare(SweepInput {
                docs,
                doc_topics: a,
                word_topics: b,
                alpha: hyper.alpha,
                beta: hyper.beta,
                seed: *seed,
                iteration: next,
            });
            split_by_partition(z, layout)
                .into_par_iter()
                .zip(layout.partitions.par_iter())
                .for_each(|(zp, p)| sweep.sweep(p, zp));
        });
        self.sampled = true;
    }

    fn commit_inner(&mut self) {
        let k = self.hyper.num_topics;
        let Self {
            docs,
            layout,
            z,
            doc_topics,
            word_topics,
            pool,
            num_words,
            sampler,
            ..
        } = self;
        let docs = docs.view();
        pool.install(|| {
            *doc_topics = OnceLock::new();
            if sampler.cpu().needs_doc_topics() {
                let _ = doc_topics.set(count_doc_topics(docs, z, k));
            }
            *word_topics = count_word_topics(layout, z, *num_words, k);
        });
        self.iteration += 1;
        self.sampled = false;
    }

    /// Training log-likelihood per token under the current counts (the true ones: for a private
    /// run this is not private, and `topos train --private` does not compute it).
    pub fn log_likelihood(&self) -> f64 {
        let h = self.hyper;
        self.pool.install(|| {
            loglik::log_likelihood_per_token(
                self.docs(),
                &self.layout,
                self.doc_topics(),
                &self.word_topics,
                h.alpha,
                h.beta,
            )
        })
    }

    /// The sampler.
    pub fn sampler(&self) -> &'static dyn Sampler {
        self.sampler
    }

    /// The PDOW layout in use.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The training documents.
    pub fn docs(&self) -> Docs<'_> {
        self.docs.view()
    }

    /// Completed iterations.
    pub fn iteration(&self) -> u32 {
        self.iteration
    }

    /// Topic of every token, in corpus order.
    pub fn assignments(&self) -> &[u16] {
        &self.z
    }

    /// Current word-topic counts.
    pub fn word_topics(&self) -> &WordTopics {
        &self.word_topics
    }

    /// Current document-topic counts of the training documents.
    pub fn doc_topics(&self) -> &DocTopics {
        self.doc_topics.get_or_init(|| {
            self.pool
                .install(|| count_doc_topics(self.docs(), &self.z, self.hyper.num_topics))
        })
    }

    /// Number of partitions in use.
    pub fn partitions(&self) -> usize {
        self.layout.partitions.len()
    }

    /// Number of worker threads.
    pub fn threads(&self) -> usize {
        self.pool.current_num_threads()
    }

    /// The model as it stands, dense (V × K): for tests and small tools; a run writes its model
    /// file from sparse rows instead.
    pub fn model(&self, vocab: Vocabulary) -> TopicModel {
        assert_eq!(
            vocab.len(),
            self.num_words,
            "vocabulary does not match the corpus"
        );
        let provenance = Provenance {
            algorithm: self.sampler.name().to_string(),
            iterations: self.iteration,
            seed: self.seed,
            corpus_checksum: 0,
            num_docs: self.docs().len() as u64,
            num_tokens: self.docs().num_tokens(),
        };
        let dense = self.pool.install(|| self.word_topics.to_dense());
        TopicModel::from_counts(vocab, self.hyper, dense, provenance)
    }
}

impl Engine for Trainer {
    fn describe(&self) -> String {
        format!("cpu ({} threads)", self.threads())
    }
    fn threads(&self) -> usize {
        Trainer::threads(self)
    }
    fn partitions(&self) -> usize {
        Trainer::partitions(self)
    }
    fn iteration(&self) -> u32 {
        self.iteration
    }
    fn sample(&mut self) -> Result<(), TrainError> {
        self.sample_inner();
        Ok(())
    }
    fn exchange(&mut self, transport: &dyn Transport) -> Result<(), TrainError> {
        // The counts are rebuilt from the assignments at commit; with one worker they are this
        // worker's own. Several workers need a transport that sums sparse rows.
        crate::engine::exchange_with_one_worker(
            "CPU",
            transport,
            "multi-process training comes with the MPI transport",
        )
    }
    fn commit(&mut self) -> Result<(), TrainError> {
        crate::engine::check_sampled(self.sampled)?;
        self.commit_inner();
        Ok(())
    }
    fn log_likelihood(&mut self) -> Result<f64, TrainError> {
        Ok(Trainer::log_likelihood(self))
    }
    fn topic_totals(&mut self) -> Result<Vec<u64>, TrainError> {
        Ok(self.word_topics.totals.clone())
    }
    fn word_topics(&mut self, words: Range<u32>, out: &mut WordTopics) -> Result<(), TrainError> {
        copy_rows(&self.word_topics, words, out);
        Ok(())
    }
    fn assignments(&mut self, start: u64, out: &mut [u16]) -> Result<(), TrainError> {
        let s = start as usize;
        out.copy_from_slice(&self.z[s..s + out.len()]);
        Ok(())
    }
    fn sample_from_release(&mut self, counts: Arc<WordTopics>) -> Result<(), TrainError> {
        self.release = Some(counts);
        Ok(())
    }
}

/// Copies rows `words` of `b` into `out` (cleared first; totals left empty).
pub fn copy_rows(b: &WordTopics, words: Range<u32>, out: &mut WordTopics) {
    out.num_topics = b.num_topics;
    out.offsets.clear();
    out.topics.clear();
    out.counts.clear();
    out.totals.clear();
    out.offsets.push(0);
    for v in words {
        let (t, c) = b.row(v);
        out.topics.extend_from_slice(t);
        out.counts.extend_from_slice(c);
        out.offsets.push(out.topics.len() as u64);
    }
}

/// Splits the assignments (corpus order) into each partition's contiguous slice.
fn split_by_partition<'z>(mut z: &'z mut [u16], layout: &Layout) -> Vec<&'z mut [u16]> {
    let mut out = Vec::with_capacity(layout.partitions.len());
    for p in &layout.partitions {
        let (head, tail) = z.split_at_mut(p.num_tokens);
        out.push(head);
        z = tail;
    }
    debug_assert!(z.is_empty());
    out
}

/// Opens a CPU engine for a run.
pub(crate) fn open(setup: EngineSetup) -> Result<Trainer, TrainError> {
    Trainer::open(
        setup.docs,
        setup.num_words,
        TrainOptions {
            sampler: setup.sampler,
            hyper: setup.hyper,
            seed: setup.seed,
            threads: setup.threads,
            partitions: setup.partitions,
        },
        setup.start,
    )
}
