//! The CPU engine: the assignments and both count matrices in host memory, the E-step on a
//! thread pool over the PDOW partitions (SaberLDA Alg. 1), the M-step rebuilding the counts from
//! the assignments ([`crate::counts`]).

use crate::counts::{count_doc_topics, count_word_topics, WordTopics};
use crate::engine::{Engine, EngineSetup, Start, TrainDocs};
use crate::exchange::ExchangeReport;
use crate::layout::Layout;
use crate::sampler::{Sampler, SweepCounters, SweepInput};
use crate::shard::{even_ranges, Shard};
use crate::transport::{Local, Transport};
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
    /// The sampler's settings (`--ezlda-g`, `--mh-steps`), passed to every sweep.
    pub settings: crate::sampler::SamplerSettings,
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
    /// What the sweep's tokens skipped, for a sampler that reports it
    /// ([`crate::sampler::PartitionSweep::counters`]).
    pub counters: Option<SweepCounters>,
}

/// The topic of every token uniform at random, keyed by (seed, token): what every device
/// starts from (the GPU draws the same numbers on the device).
pub fn initial_assignments(num_tokens: u64, num_topics: u32, seed: u64) -> Vec<u16> {
    initial_assignments_of(0..num_tokens, num_topics, seed)
}

/// [`initial_assignments`] of the tokens `tokens` (global indices) only: a process's share.
pub fn initial_assignments_of(tokens: Range<u64>, num_topics: u32, seed: u64) -> Vec<u16> {
    tokens
        .into_par_iter()
        .map(|t| CounterRng::new(seed, Stream::Init, 0, t).below(num_topics) as u16)
        .collect()
}

/// A training run on the CPU: the whole corpus, or in a multi-process run this process's share of
/// it ([`Shard`]), with the counts of the whole corpus summed through the transport.
pub struct Trainer {
    /// The documents this process samples (its share in a multi-process run).
    docs: TrainDocs,
    num_words: usize,
    sampler: &'static dyn Sampler,
    /// The sampler's CPU sweep.
    sweep: &'static dyn crate::sampler::CpuSampler,
    settings: crate::sampler::SamplerSettings,
    hyper: Hyperparameters,
    seed: u64,
    layout: Layout,
    z: Vec<u16>,
    iteration: u32,
    /// Counts added to the sampled ones ([`EngineSetup::fixed_counts`]).
    fixed: Option<Arc<WordTopics>>,
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
    /// What the last sweep's tokens skipped (samplers that report it).
    counters: Option<SweepCounters>,
    /// The run's workers (one: [`Local`]).
    transport: Arc<dyn Transport>,
    /// This process's share of a multi-process run (`None`: the whole corpus).
    shard: Option<Shard>,
    /// The summed counts of the last exchange, installed by the commit.
    exchanged: Option<WordTopics>,
    /// Training tokens of the whole run (every process's share).
    global_tokens: u64,
    /// How the exchanges moved their bytes.
    exchanges: ExchangeReport,
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
        Self::open_with(docs, num_words, opts, start, Arc::new(Local))
    }

    /// [`Trainer::open`] as one of the workers of `transport`: with several, this process
    /// samples its share of `docs` (whole partitions of the single-process layout) and the
    /// counts are summed across the workers, so every worker holds the whole corpus's counts.
    /// Collective: every worker opens at the same point of the run.
    pub fn open_with(
        all_docs: TrainDocs,
        num_words: usize,
        opts: TrainOptions,
        start: Start,
        transport: Arc<dyn Transport>,
    ) -> Result<Self, TrainError> {
        let Some(sweep) = opts.sampler.cpu().sweep() else {
            return Err(TrainError::Unsupported(format!(
                "{} keeps no assignments and runs in an engine of its own (the cpu device opens it)",
                opts.sampler.name()
            )));
        };
        let whole = all_docs.view();
        if whole.num_tokens() == 0 {
            return Err(TrainError::EmptyCorpus);
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(opts.threads)
            .build()
            .map_err(|e| TrainError::ThreadPool(opts.threads, e.to_string()))?;
        let threads = pool.current_num_threads();
        let workers = transport.workers();
        let partitions = opts.partitions.unwrap_or_else(|| {
            use crate::sampler::Determinism;
            match opts.sampler.determinism() {
                // The model does not depend on it: each process keeps its threads busy.
                Determinism::AnyThreadsAnyPartitions if workers > 1 => {
                    workers
                        * opts
                            .sampler
                            .default_partitions(whole.num_tokens() / workers as u64, threads)
                }
                _ => opts.sampler.default_partitions(whole.num_tokens(), threads),
            }
        });
        let shard = if workers > 1 {
            // Every process must cut the corpus alike: the first's count (its default depends
            // on its threads, which another machine may have more or fewer of).
            let counts = transport.all_gather_bytes(&(partitions as u64).to_le_bytes())?;
            let partitions = counts
                .first()
                .and_then(|c| c.get(..8))
                .map_or(partitions, |c| {
                    u64::from_le_bytes(c.try_into().expect("8 bytes")) as usize
                });
            Some(Shard::of(whole, partitions, transport.rank(), workers)?)
        } else {
            None
        };
        let docs = match &shard {
            Some(s) => s.docs_of(&all_docs),
            None => all_docs.clone(),
        };
        let view = docs.view();
        let bound = view.max_word_id_bound();
        if bound as usize > num_words {
            return Err(TrainError::WordOutOfRange {
                found: bound - 1,
                vocab: num_words,
            });
        }
        let k = opts.hyper.num_topics;
        let tokens = shard
            .as_ref()
            .map_or(0..whole.num_tokens(), |s| s.tokens.clone());
        let (z, iteration) = match start {
            Start::Fresh => (
                pool.install(|| initial_assignments_of(tokens, k, opts.seed)),
                0,
            ),
            Start::Resume(c) => {
                if c.assignments.len() as u64 != whole.num_tokens() {
                    return Err(TrainError::CheckpointMismatch(format!(
                        "{} tokens in the checkpoint, {} in the corpus",
                        c.assignments.len(),
                        whole.num_tokens()
                    )));
                }
                let z = match &shard {
                    Some(_) => c.assignments[tokens.start as usize..tokens.end as usize].to_vec(),
                    None => c.assignments,
                };
                (z, c.header.iteration)
            }
        };
        let (layout, local) = pool.install(|| {
            let layout = match &shard {
                Some(s) => Layout::build_ranges(view, s.partitions.clone(), s.tokens.start),
                None => Layout::build(view, partitions),
            };
            let b = count_word_topics(&layout, &z, num_words, k);
            (layout, b)
        });
        let mut exchanges = ExchangeReport::default();
        // In the pool: the exchange's host work runs on this process's threads.
        let word_topics = pool.install(|| {
            crate::exchange::sum_across_workers(local, None, transport.as_ref(), &mut exchanges)
        })?;
        Ok(Self {
            docs,
            num_words,
            sampler: opts.sampler,
            sweep,
            settings: opts.settings,
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
            counters: None,
            transport,
            shard,
            exchanged: None,
            global_tokens: whole.num_tokens(),
            exchanges,
            fixed: None,
        })
    }

    /// Adds `fixed` to the word-topic counts now and after every exchange
    /// ([`EngineSetup::fixed_counts`]).
    pub fn with_fixed_counts(mut self, fixed: Arc<WordTopics>) -> Result<Self, TrainError> {
        if fixed.num_words() != self.num_words || fixed.num_topics != self.hyper.num_topics {
            return Err(TrainError::Unsupported(format!(
                "fixed counts of {} words and {} topics for a run of {} words and {} topics",
                fixed.num_words(),
                fixed.num_topics,
                self.num_words,
                self.hyper.num_topics
            )));
        }
        self.word_topics = self.pool.install(|| self.word_topics.plus(&fixed));
        self.fixed = Some(fixed);
        Ok(self)
    }

    /// Runs one whole iteration (sample, commit) in one process: for tests and tools that drive
    /// the CPU directly rather than through [`crate::run::Run`].
    pub fn step(&mut self) -> IterationStats {
        let start = Instant::now();
        self.sample_inner();
        let transport = self.transport.clone();
        self.exchange_inner(transport.as_ref())
            .expect("a single-process trainer's exchange cannot fail");
        self.commit_inner();
        let seconds = start.elapsed().as_secs_f64();
        IterationStats {
            iteration: self.iteration,
            seconds,
            tokens_per_second: self.docs().num_tokens() as f64 / seconds.max(1e-9),
            counters: self.counters,
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
            sweep,
            settings,
            hyper,
            seed,
            release,
            ..
        } = self;
        let docs = docs.view();
        let cpu = *sweep;
        let counters = pool.install(|| {
            let a = cpu
                .needs_doc_topics()
                .then(|| doc_topics.get_or_init(|| count_doc_topics(docs, z, hyper.num_topics)));
            let b: &WordTopics = release.as_deref().unwrap_or(word_topics);
            let sweep = cpu.prepare(SweepInput {
                docs,
                doc_topics: a,
                word_topics: b,
                alpha: &hyper.alpha,
                beta: hyper.beta,
                seed: *seed,
                iteration: next,
                settings,
            });
            split_by_partition(z, layout)
                .into_par_iter()
                .zip(layout.partitions.par_iter())
                .for_each(|(zp, p)| sweep.sweep(p, zp));
            sweep.counters()
        });
        self.counters = counters;
        self.sampled = true;
    }

    /// The M-step's counts: this process's, summed with every other worker's.
    fn exchange_inner(&mut self, transport: &dyn Transport) -> Result<(), TrainError> {
        let k = self.hyper.num_topics;
        let local = self
            .pool
            .install(|| count_word_topics(&self.layout, &self.z, self.num_words, k));
        let summed = self.pool.install(|| {
            crate::exchange::sum_across_workers(
                local,
                Some(&self.word_topics),
                transport,
                &mut self.exchanges,
            )
        })?;
        self.exchanged = Some(match &self.fixed {
            Some(f) => self.pool.install(|| summed.plus(f)),
            None => summed,
        });
        Ok(())
    }

    fn commit_inner(&mut self) {
        let k = self.hyper.num_topics;
        let Self {
            docs,
            z,
            doc_topics,
            word_topics,
            pool,
            sweep,
            exchanged,
            ..
        } = self;
        let docs = docs.view();
        pool.install(|| {
            *doc_topics = OnceLock::new();
            if sweep.needs_doc_topics() {
                let _ = doc_topics.set(count_doc_topics(docs, z, k));
            }
        });
        *word_topics = exchanged
            .take()
            .expect("the exchange comes before the commit");
        self.iteration += 1;
        self.sampled = false;
    }

    /// Training log-likelihood per token under the current counts (the true ones: for a private
    /// run this is not private, and `topos train --private` does not compute it). Collective in
    /// a multi-process run: each process sums its share exactly, and the sums are added.
    ///
    /// # Panics
    /// If the transport fails (never with one process): use the [`Engine`] method instead.
    pub fn log_likelihood(&self) -> f64 {
        self.try_log_likelihood()
            .expect("the transport failed while summing the likelihood")
    }

    /// [`Trainer::log_likelihood`], with the transport's failure as an error.
    pub fn try_log_likelihood(&self) -> Result<f64, TrainError> {
        let h = &self.hyper;
        let mine = self.pool.install(|| {
            loglik::log_likelihood_sum(
                self.docs(),
                &self.layout,
                self.doc_topics(),
                &self.word_topics,
                &h.alpha,
                h.beta,
            )
        });
        let total = crate::fixed_sum::FixedSum::from_le_bytes(
            crate::shard::sum_fixed(
                self.transport.as_ref(),
                i128::from_le_bytes(mine.to_le_bytes()),
            )?
            .to_le_bytes(),
        );
        let n = self.global_tokens;
        Ok(if n == 0 {
            0.0
        } else {
            total.value() / n as f64
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

    /// Number of partitions of the run (every process's, in a multi-process run).
    pub fn partitions(&self) -> usize {
        self.shard
            .as_ref()
            .map_or(self.layout.partitions.len(), |s| s.total_partitions)
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
            sampler_settings: self.settings.recorded(self.sampler),
        };
        let dense = self.pool.install(|| self.word_topics.to_dense());
        TopicModel::from_counts(vocab, self.hyper.clone(), dense, provenance)
    }
}

impl Engine for Trainer {
    fn describe(&self) -> String {
        format!(
            "cpu ({} thread{})",
            self.threads(),
            if self.threads() == 1 { "" } else { "s" }
        )
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
    fn sweep_counters(&self) -> Option<SweepCounters> {
        self.counters
    }
    fn exchange(&mut self, transport: &dyn Transport) -> Result<(), TrainError> {
        crate::engine::check_sampled(self.sampled)?;
        self.exchange_inner(transport)
    }
    fn commit(&mut self) -> Result<(), TrainError> {
        crate::engine::check_sampled(self.sampled)?;
        self.commit_inner();
        Ok(())
    }
    fn log_likelihood(&mut self) -> Result<f64, TrainError> {
        self.try_log_likelihood()
    }
    fn heldout_arguments(
        &mut self,
        docs: Docs<'_>,
        opts: &topos_model::FoldInOptions,
    ) -> Result<Option<Vec<f64>>, TrainError> {
        // One process evaluates on the host as the run does; several split the documents, each
        // folding in its share with φ of the whole corpus's counts, and concatenate.
        let Some(shard) = &self.shard else {
            return Ok(None);
        };
        let mine = even_ranges(docs.len(), shard.workers)[shard.rank].clone();
        let mut words: Vec<u32> = docs.tokens().to_vec();
        words.sort_unstable();
        words.dedup();
        let b = &self.word_topics;
        let mut builder = topos_model::Phi::builder_for_words(
            self.num_words,
            self.hyper.beta,
            &b.totals,
            &words,
            topos_model::mem::available_memory(),
        )
        .map_err(|e| TrainError::Unsupported(e.to_string()))?;
        for &w in &words {
            let (t, c) = b.row(w);
            builder.push_row(w, t, c);
        }
        let phi = builder.finish();
        let args = self
            .pool
            .install(|| topos_model::heldout_arguments(&phi, &self.hyper, docs, opts, mine))
            .map_err(|e| TrainError::Unsupported(e.to_string()))?;
        let bytes: Vec<u8> = args.iter().flat_map(|x| x.to_le_bytes()).collect();
        let mut all = Vec::with_capacity(docs.num_tokens() as usize);
        for part in self.transport.all_gather_bytes(&bytes)? {
            all.extend(
                part.chunks_exact(8)
                    .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes"))),
            );
        }
        Ok(Some(all))
    }
    fn topic_totals(&mut self) -> Result<Vec<u64>, TrainError> {
        Ok(self.word_topics.totals.clone())
    }
    fn exchange_report(&self) -> Option<ExchangeReport> {
        self.shard.as_ref().map(|_| self.exchanges.clone())
    }
    fn word_topics(&mut self, words: Range<u32>, out: &mut WordTopics) -> Result<(), TrainError> {
        copy_rows(&self.word_topics, words, out);
        Ok(())
    }
    fn assignments(&mut self, start: u64, out: &mut [u16]) -> Result<(), TrainError> {
        let Some(shard) = &self.shard else {
            let s = start as usize;
            out.copy_from_slice(&self.z[s..s + out.len()]);
            return Ok(());
        };
        let z = &self.z;
        crate::shard::gather_assignments(
            shard,
            self.transport.as_ref(),
            start,
            out,
            |local, part| {
                let s = local as usize;
                part.copy_from_slice(&z[s..s + part.len()]);
                Ok(())
            },
        )
    }
    fn prior_statistics(
        &mut self,
    ) -> Result<Option<(crate::priors::DocHistograms, crate::priors::WordHistogram)>, TrainError>
    {
        let k = self.hyper.k();
        Ok(Some(self.pool.install(|| {
            (
                crate::priors::DocHistograms::of(self.docs(), &self.z, k),
                crate::priors::WordHistogram::of(&self.word_topics),
            )
        })))
    }

    fn set_priors(&mut self, hyper: &topos_model::Hyperparameters) -> Result<(), TrainError> {
        if hyper.num_topics != self.hyper.num_topics {
            return Err(TrainError::Unsupported(format!(
                "priors for K = {} given to a run of K = {}",
                hyper.num_topics, self.hyper.num_topics
            )));
        }
        self.hyper = hyper.clone();
        Ok(())
    }

    fn sample_from_release(&mut self, counts: Arc<WordTopics>) -> Result<(), TrainError> {
        self.release = Some(counts);
        Ok(())
    }
}

/// Copies rows `words` of `b` into `out` (cleared first; totals left empty).
pub fn copy_rows(b: &WordTopics, words: Range<u32>, out: &mut WordTopics) {
    out.clear_rows(b.num_topics);
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
    let fixed = setup.fixed_counts.clone();
    let trainer = Trainer::open_with(
        setup.docs,
        setup.num_words,
        TrainOptions {
            sampler: setup.sampler,
            hyper: setup.hyper,
            seed: setup.seed,
            threads: setup.threads,
            partitions: setup.partitions,
            settings: setup.settings,
        },
        setup.start,
        setup.transport,
    )?;
    match fixed {
        Some(b) => trainer.with_fixed_counts(b),
        None => Ok(trainer),
    }
}
