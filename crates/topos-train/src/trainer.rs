//! The training loop: initial assignments, E-step / M-step iterations on a thread pool,
//! log-likelihood, checkpoints, and the final model.

use crate::checkpoint::Checkpoint;
use crate::counts::{count_doc_topics, count_word_topics, WordTopics};
use crate::layout::Layout;
use crate::private::{longest_document, PrivateOptions, Releases};
use crate::{cgs, esca, loglik};
use rayon::prelude::*;
use std::sync::OnceLock;
use std::time::Instant;
use topos_corpus::{Docs, Vocabulary};
use topos_model::{DocTopics, Hyperparameters, Provenance, TopicModel};
use topos_sampling::{CounterRng, Stream};

/// A training algorithm (`--algo`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    /// SaberLDA's ESCA: all tokens sampled from the previous iteration's counts. Bit-identical for
    /// any number of threads.
    Esca,
    /// Sparse collapsed Gibbs sampling (the reference), AD-LDA over a fixed number of partitions.
    /// Bit-identical for any number of threads at a given partition count.
    Cgs,
}

impl Algorithm {
    /// The name used on the command line and in files.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Esca => "esca",
            Algorithm::Cgs => "cgs",
        }
    }

    /// Parses a name.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "esca" => Some(Algorithm::Esca),
            "cgs" => Some(Algorithm::Cgs),
            _ => None,
        }
    }
}

/// Settings of a run.
#[derive(Clone, Debug)]
pub struct TrainOptions {
    pub algorithm: Algorithm,
    pub hyper: Hyperparameters,
    pub seed: u64,
    /// Worker threads; 0 means all cores.
    pub threads: usize,
    /// Partitions of the documents; `None` picks [`default_partitions`].
    pub partitions: Option<usize>,
    /// Checksum of the corpus (recorded in checkpoints and the model).
    pub corpus_checksum: u64,
}

/// Why training could not start or resume.
#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    #[error("the training set has no tokens; prepare the corpus with a smaller --holdout or looser pruning")]
    EmptyCorpus,
    #[error("the corpus uses word id {found} but the vocabulary has only {vocab} words; the corpus file is inconsistent")]
    WordOutOfRange { found: u32, vocab: usize },
    #[error("checkpoint does not match this run: {0}")]
    CheckpointMismatch(String),
    #[error("could not start {0} worker threads: {1}")]
    ThreadPool(usize, String),
    #[error("private training needs the esca sampler: cgs changes counts token by token inside a partition, so documents influence each other without a noisy release")]
    PrivateNeedsEsca,
    #[error("a training document has {found} tokens but private training was promised at most {cap} per document; cap the documents first")]
    DocumentOverCap { found: usize, cap: u32 },
    #[error("{0}")]
    Privacy(#[from] topos_privacy::PrivacyError),
    /// An accelerator failed (the message says which call and what to do).
    #[error("{0}")]
    Device(String),
}

/// Partition count for a corpus. CGS results depend on it (AD-LDA merges partitions once per
/// iteration), so it is a function of the corpus alone: about one partition per 250K tokens,
/// rounded up to a multiple of 4 (so that 2 and 4 threads get equal shares), at most 64. ESCA
/// results do not depend on it at all; ESCA uses enough partitions to keep every thread busy.
pub fn default_partitions(algorithm: Algorithm, num_tokens: u64, threads: usize) -> usize {
    match algorithm {
        Algorithm::Cgs => ((num_tokens / 250_000).clamp(1, 64) as usize).next_multiple_of(4),
        Algorithm::Esca => (threads * 4).max(1),
    }
}

/// Timing and quality of one iteration.
#[derive(Clone, Copy, Debug)]
pub struct IterationStats {
    /// Completed iterations after this one.
    pub iteration: u32,
    /// Seconds spent in this iteration (sampling and count rebuild).
    pub seconds: f64,
    /// Tokens sampled per second in this iteration.
    pub tokens_per_second: f64,
}

/// A training run in progress.
pub struct Trainer<'a> {
    docs: Docs<'a>,
    num_words: usize,
    opts: TrainOptions,
    layout: Layout,
    z: Vec<u16>,
    iteration: u32,
    /// Document-topic counts of the current assignments. ESCA samples from them, so it rebuilds
    /// them every iteration; CGS keeps its own per-partition rows and rebuilds these only when
    /// asked (log-likelihood, model output), which saves a pass over the corpus per iteration.
    doc_topics: OnceLock<DocTopics>,
    word_topics: WordTopics,
    pool: rayon::ThreadPool,
    /// Private runs only: the noisy releases, the only counts the sampler reads.
    private: Option<Releases>,
}

impl<'a> Trainer<'a> {
    /// Starts a run with uniformly random initial assignments (keyed by seed and token).
    pub fn new(docs: Docs<'a>, num_words: usize, opts: TrainOptions) -> Result<Self, TrainError> {
        let k = opts.hyper.num_topics;
        let seed = opts.seed;
        let z: Vec<u16> = (0..docs.num_tokens())
            .into_par_iter()
            .map(|t| CounterRng::new(seed, Stream::Init, 0, t).below(k) as u16)
            .collect();
        Self::with_state(docs, num_words, opts, z, 0)
    }

    /// Continues a run from a checkpoint, which must have been made with the same corpus and
    /// settings.
    pub fn resume(
        docs: Docs<'a>,
        num_words: usize,
        mut opts: TrainOptions,
        ckpt: Checkpoint,
    ) -> Result<Self, TrainError> {
        let mismatch = |what: String| Err(TrainError::CheckpointMismatch(what));
        if ckpt.corpus_checksum != opts.corpus_checksum {
            return mismatch("it was made for a different corpus file".into());
        }
        if ckpt.assignments.len() as u64 != docs.num_tokens() {
            return mismatch(format!(
                "{} tokens in the checkpoint, {} in the corpus",
                ckpt.assignments.len(),
                docs.num_tokens()
            ));
        }
        if ckpt.algorithm != opts.algorithm.name() {
            return mismatch(format!(
                "algorithm {} in the checkpoint, {} requested",
                ckpt.algorithm,
                opts.algorithm.name()
            ));
        }
        let h = opts.hyper;
        if ckpt.num_topics != h.num_topics
            || ckpt.alpha != h.alpha
            || ckpt.beta != h.beta
            || ckpt.seed != opts.seed
        {
            return mismatch(format!(
                "checkpoint has K={} alpha={} beta={} seed={}, requested K={} alpha={} beta={} seed={}",
                ckpt.num_topics, ckpt.alpha, ckpt.beta, ckpt.seed, h.num_topics, h.alpha, h.beta, opts.seed
            ));
        }
        if opts.algorithm == Algorithm::Cgs {
            match opts.partitions {
                Some(p) if p as u32 != ckpt.partitions => {
                    return mismatch(format!(
                        "{} partitions in the checkpoint, {p} requested",
                        ckpt.partitions
                    ))
                }
                _ => opts.partitions = Some(ckpt.partitions as usize),
            }
        }
        Self::with_state(docs, num_words, opts, ckpt.assignments, ckpt.iteration)
    }

    fn with_state(
        docs: Docs<'a>,
        num_words: usize,
        opts: TrainOptions,
        z: Vec<u16>,
        iteration: u32,
    ) -> Result<Self, TrainError> {
        if docs.num_tokens() == 0 {
            return Err(TrainError::EmptyCorpus);
        }
        let bound = docs.max_word_id_bound();
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
            .unwrap_or_else(|| default_partitions(opts.algorithm, docs.num_tokens(), threads));
        let k = opts.hyper.num_topics;
        let (layout, word_topics) = pool.install(|| {
            let layout = Layout::build(docs, partitions);
            let b = count_word_topics(&layout, &z, num_words, k);
            (layout, b)
        });
        let doc_topics = OnceLock::new();
        let mut opts = opts;
        opts.partitions = Some(layout.partitions.len());
        Ok(Self {
            docs,
            num_words,
            opts,
            layout,
            z,
            iteration,
            doc_topics,
            word_topics,
            pool,
            private: None,
        })
    }

    /// Starts a differentially private run (see [`crate::private`]): ESCA only, every document
    /// of `docs` at most `private.max_doc_tokens` tokens (cap them with
    /// [`crate::private::cap_documents`]), every iteration sampling from the latest of R − 1
    /// noisy releases of the word-topic counts, and the model the R-th release. The seed of `opts` is ignored: the
    /// sampling key is drawn from `source` and never revealed, so runs are not reproducible.
    pub fn new_private(
        docs: Docs<'a>,
        num_words: usize,
        mut opts: TrainOptions,
        private: PrivateOptions,
        mut source: topos_privacy::NoiseSource,
    ) -> Result<Self, TrainError> {
        if opts.algorithm != Algorithm::Esca {
            return Err(TrainError::PrivateNeedsEsca);
        }
        let longest = longest_document(docs);
        if longest > private.max_doc_tokens as usize {
            return Err(TrainError::DocumentOverCap {
                found: longest,
                cap: private.max_doc_tokens,
            });
        }
        opts.seed = source.next_u64();
        let releases = Releases::new(private, source)?;
        let mut t = Self::new(docs, num_words, opts)?;
        t.private = Some(releases);
        if private.iterations == 0 {
            t.release_final();
        }
        Ok(t)
    }

    /// The final release (of the current assignments), which becomes the model.
    fn release_final(&mut self) {
        if let Some(p) = self.private.as_mut() {
            let b = &self.word_topics;
            self.pool.install(|| {
                p.release(b);
            });
        }
    }

    /// The releases of a private run; `None` for an ordinary run.
    pub fn privacy(&self) -> Option<&Releases> {
        self.private.as_ref()
    }

    /// Runs one iteration: the E-step over all partitions in parallel, then the M-step.
    pub fn step(&mut self) -> IterationStats {
        let start = Instant::now();
        let next = self.iteration + 1;
        let seed = self.opts.seed;
        let h = self.opts.hyper;
        let Self {
            docs,
            layout,
            z,
            doc_topics,
            word_topics,
            pool,
            num_words,
            opts,
            private,
            ..
        } = self;
        pool.install(|| {
            if opts.algorithm == Algorithm::Esca {
                doc_topics.get_or_init(|| count_doc_topics(*docs, z, h.num_topics));
            }
            let slices = split_by_partition(z, layout);
            match opts.algorithm {
                Algorithm::Esca => {
                    let a = doc_topics.get().expect("built above");
                    // A private run samples from the latest noisy release of B (with totals
                    // summed from the release), never from B itself; a new release is made
                    // only on the schedule of `PrivateOptions::release_before`.
                    let b: &WordTopics = match private.as_mut() {
                        Some(p) => {
                            if p.options().release_before(next) {
                                p.release(word_topics);
                            }
                            p.latest().expect("iteration 1 always has a release")
                        }
                        None => word_topics,
                    };
                    let frozen = esca::Frozen::new(a, b, h.alpha, h.beta);
                    slices
                        .into_par_iter()
                        .zip(layout.partitions.par_iter())
                        .for_each(|(zp, p)| {
                            let mut scratch = esca::Scratch::new(&frozen);
                            esca::sweep_partition(p, zp, &frozen, &mut scratch, seed, next);
                        });
                }
                Algorithm::Cgs => {
                    let shared = cgs::Shared {
                        word_topics,
                        doc_starts: docs.offsets(),
                        tokens: docs.tokens(),
                        alpha: h.alpha,
                        beta: h.beta,
                    };
                    slices
                        .into_par_iter()
                        .zip(layout.partitions.par_iter())
                        .for_each(|(zp, p)| {
                            let mut scratch = cgs::Scratch::new(h.k());
                            cgs::sweep_partition(p, zp, &shared, &mut scratch, seed, next);
                        });
                }
            }
            *doc_topics = OnceLock::new();
            if opts.algorithm == Algorithm::Esca {
                let _ = doc_topics.set(count_doc_topics(*docs, z, h.num_topics));
            }
            *word_topics = count_word_topics(layout, z, *num_words, h.num_topics);
        });
        self.iteration = next;
        if self
            .private
            .as_ref()
            .is_some_and(|p| p.options().iterations == next)
        {
            self.release_final();
        }
        let seconds = start.elapsed().as_secs_f64();
        IterationStats {
            iteration: next,
            seconds,
            tokens_per_second: self.docs.num_tokens() as f64 / seconds.max(1e-9),
        }
    }

    /// Training log-likelihood per token under the current counts (the true ones: for a private
    /// run this is not private, and `topos train --private` does not compute it).
    pub fn log_likelihood(&self) -> f64 {
        let h = self.opts.hyper;
        self.pool.install(|| {
            loglik::log_likelihood_per_token(
                self.docs,
                &self.layout,
                self.doc_topics(),
                &self.word_topics,
                h.alpha,
                h.beta,
            )
        })
    }

    /// Replaces the assignments with those `fill` writes (corpus order; e.g. copied back from a
    /// GPU that sampled the same corpus from the same start) and recounts, as if this trainer had
    /// run `iteration` iterations itself.
    pub fn load_assignments<E>(
        &mut self,
        iteration: u32,
        fill: impl FnOnce(&mut [u16]) -> Result<(), E>,
    ) -> Result<(), E> {
        fill(&mut self.z)?;
        self.iteration = iteration;
        let k = self.opts.hyper.num_topics;
        let Self {
            layout,
            z,
            num_words,
            pool,
            ..
        } = self;
        self.word_topics = pool.install(|| count_word_topics(layout, z, *num_words, k));
        self.doc_topics = OnceLock::new();
        Ok(())
    }

    /// The PDOW layout in use.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The settings of the run.
    pub fn options(&self) -> &TrainOptions {
        &self.opts
    }

    /// The training documents.
    pub fn docs(&self) -> Docs<'a> {
        self.docs
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
                .install(|| count_doc_topics(self.docs, &self.z, self.opts.hyper.num_topics))
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

    /// The state for `--resume`.
    ///
    /// # Panics
    /// For a private run: a checkpoint holds the true assignments, which are never written.
    pub fn checkpoint(&self) -> Checkpoint {
        assert!(
            self.private.is_none(),
            "a private run's assignments are private data: no checkpoint"
        );
        let h = self.opts.hyper;
        Checkpoint {
            algorithm: self.opts.algorithm.name().to_string(),
            num_topics: h.num_topics,
            alpha: h.alpha,
            beta: h.beta,
            seed: self.opts.seed,
            partitions: self.layout.partitions.len() as u32,
            corpus_checksum: self.opts.corpus_checksum,
            iteration: self.iteration,
            assignments: self.z.clone(),
        }
    }

    /// The model as it stands. For a private run: the latest noisy release (after the last
    /// iteration, the final one), never the true counts, with the run's guarantee and a
    /// provenance that withholds seed, corpus checksum and document and token counts (all 0);
    /// before the first iteration, all-zero counts (nothing released yet). No new noise is
    /// drawn, so calling it costs no privacy.
    pub fn model(&self, vocab: Vocabulary) -> TopicModel {
        assert_eq!(
            vocab.len(),
            self.num_words,
            "vocabulary does not match the corpus"
        );
        let mut provenance = Provenance {
            algorithm: self.opts.algorithm.name().to_string(),
            iterations: self.iteration,
            seed: self.opts.seed,
            corpus_checksum: self.opts.corpus_checksum,
            num_docs: self.docs.len() as u64,
            num_tokens: self.docs.num_tokens(),
        };
        let Some(p) = &self.private else {
            let dense = self.pool.install(|| self.word_topics.to_dense());
            return TopicModel::from_counts(vocab, self.opts.hyper, dense, provenance);
        };
        // A private model is the last noisy release, and withholds every fact that is an exact
        // function of the data (see `private.rs`).
        let dense = match p.latest() {
            Some(b) => self.pool.install(|| b.to_dense()),
            None => vec![0; self.num_words * self.opts.hyper.k()],
        };
        provenance.seed = 0;
        provenance.corpus_checksum = 0;
        provenance.num_docs = 0;
        provenance.num_tokens = 0;
        TopicModel::from_counts(vocab, self.opts.hyper, dense, provenance)
            .with_privacy(p.guarantee())
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
