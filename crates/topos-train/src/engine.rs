//! What a device does in a run: the iteration, and reading its state back a piece at a time.
//!
//! An [`Engine`] is one device's side of one run (the CPU [`crate::Trainer`], the GPU engine of
//! `cuda/`). It does not own the run: the schedule of evaluations and checkpoints, the log, the
//! outputs and the privacy ledger belong to [`crate::run::Run`], which drives any engine the same
//! way:
//!
//! ```text
//! sample (E-step) → exchange (the transport sums the counts of every worker) → commit (M-step)
//! ```
//!
//! State is read back in pieces ([`Engine::word_topics`], [`Engine::assignments`]), so that a
//! device-resident run never needs the whole state on the host at once.

use crate::counts::WordTopics;
use crate::sampler::Sampler;
use crate::transport::Transport;
use crate::{Checkpoint, TrainError};
use std::ops::Range;
use std::sync::Arc;
use topos_corpus::{Corpus, Docs, OwnedDocs};
use topos_model::Hyperparameters;

/// The training documents of a run, owned (no borrowed lifetime), so a run can be held by a
/// long-lived object such as a Python model.
#[derive(Clone)]
pub enum TrainDocs {
    /// The training part of a corpus (memory-mapped or in memory).
    Corpus(Arc<Corpus>),
    /// Documents built for the run (a private run's capped documents, tests).
    Owned(Arc<OwnedDocs>),
    /// One process's share of a multi-process run ([`crate::shard::Shard::docs_of`]): the
    /// documents of `parent` whose tokens are `tokens`, with their offsets rebased to 0.
    Shard {
        parent: Box<TrainDocs>,
        offsets: Arc<[u64]>,
        tokens: Range<usize>,
    },
}

impl TrainDocs {
    /// The documents.
    pub fn view(&self) -> Docs<'_> {
        match self {
            TrainDocs::Corpus(c) => c.train(),
            TrainDocs::Owned(d) => d.view(),
            TrainDocs::Shard {
                parent,
                offsets,
                tokens,
            } => Docs::new(offsets, &parent.view().tokens()[tokens.clone()]),
        }
    }
}

impl From<OwnedDocs> for TrainDocs {
    fn from(d: OwnedDocs) -> Self {
        TrainDocs::Owned(Arc::new(d))
    }
}

/// Where a run starts.
#[derive(Clone, Debug)]
pub enum Start {
    /// Every token's topic uniform at random, keyed by (seed, token): the same on every device.
    Fresh,
    /// A checkpoint's assignments and iteration (already checked against the run's settings).
    Resume(Checkpoint),
}

/// Device settings a run passes through to the engine (those that do not apply are ignored).
#[derive(Clone, Copy, Debug, Default)]
pub struct DeviceOptions {
    /// Device memory the run may use (`None`: what is free).
    pub memory_budget: Option<u64>,
    /// Tokens per device-resident partition (tuning; `None`: the engine's default).
    pub partition_tokens: Option<u64>,
    /// Stream the corpus through the device even when it fits (tests of the streaming path).
    pub force_streaming: bool,
    /// The GPU's word-topic format (`dense` or `hybrid`; `None`: the planner's choice or
    /// `TOPOS_GPU_WORD_TOPICS`). For tests and benchmarks.
    pub word_topics: Option<&'static str>,
    /// One copy of the word-topic counts on the GPU, recounted after each sweep, even when two
    /// fit (tests of the recount; `TOPOS_GPU_COUNT_COPIES=1` for benchmarks).
    pub one_count_copy: bool,
    /// 64-bit document-row entries on the GPU even when every document is shorter than 65,536
    /// tokens (tests of the wide path).
    pub wide_rows: bool,
}

/// Everything an engine needs to open.
#[derive(Clone)]
pub struct EngineSetup {
    pub docs: TrainDocs,
    pub num_words: usize,
    pub sampler: &'static dyn Sampler,
    /// The sampler's settings (`--ezlda-g`, `--mh-steps`), already checked against it.
    pub settings: crate::sampler::SamplerSettings,
    pub hyper: Hyperparameters,
    pub seed: u64,
    /// Worker threads on the host (at least 1).
    pub threads: usize,
    /// Document partitions of a CPU run (`None`: the sampler's default).
    pub partitions: Option<usize>,
    pub start: Start,
    pub device: DeviceOptions,
    /// The run's workers: with several, this engine holds its share of the documents and sums
    /// counts through it ([`crate::shard`]).
    pub transport: Arc<dyn Transport>,
    /// Word-topic counts added to the sampled ones at every iteration, as if tokens outside the
    /// corpus held them fixed: an earlier model's counts (`topos update`) or seed words'
    /// pseudo-counts (`--seed-words`). The same on every worker; part of the model written.
    /// Only devices that [`crate::device::Device::takes_fixed_counts`] accept them.
    pub fixed_counts: Option<Arc<WordTopics>>,
}

impl EngineSetup {
    /// A fresh run of `sampler` on `docs` with everything else at its default: the sampler's
    /// default settings and partitions, one worker, no fixed counts, the device's own options
    /// (tests and tools that open an engine without a [`crate::Run`]).
    pub fn fresh(
        docs: TrainDocs,
        num_words: usize,
        sampler: &'static dyn Sampler,
        hyper: Hyperparameters,
        seed: u64,
        threads: usize,
    ) -> Self {
        EngineSetup {
            docs,
            num_words,
            sampler,
            settings: Default::default(),
            hyper,
            seed,
            threads,
            partitions: None,
            start: Start::Fresh,
            device: DeviceOptions::default(),
            transport: Arc::new(crate::transport::Local),
            fixed_counts: None,
        }
    }
}

/// One device's side of a run.
pub trait Engine: Send {
    /// Where the run executes, for people ("cpu (16 threads)", "cuda:0 (NVIDIA H100 80GB HBM3)"):
    /// this engine's device only. The run adds that several processes each run one
    /// ([`crate::run`]'s `device_description`), since an engine's share of the documents does
    /// not say whether its fellows are processes or members of one group.
    fn describe(&self) -> String;
    /// Host worker threads.
    fn threads(&self) -> usize;
    /// Document partitions (CPU) or chunks (GPU).
    fn partitions(&self) -> usize;
    /// Completed iterations.
    fn iteration(&self) -> u32;
    /// How the device holds the run, for the summary (`null` on the CPU; the GPU memory plan).
    fn plan(&self) -> Option<serde_json::Value> {
        None
    }
    /// Whose defaults a sampler setting left out takes here ([`crate::Setting::value_on`]:
    /// `--mh-steps` is 2 on the CPU, 4 on the GPU).
    fn setting_defaults(&self) -> crate::sampler::SettingDefaults {
        crate::sampler::SettingDefaults::Cpu
    }

    /// E-step of the next iteration: every token sampled from the current counts.
    fn sample(&mut self) -> Result<(), TrainError>;
    /// What the tokens of the last [`Engine::sample`] (this worker's) skipped, for a sampler that
    /// reports it (`ezlda`); `None` (the default): nothing to report. The run sums it over the
    /// workers and shows it in the progress line and the log.
    fn sweep_counters(&self) -> Option<crate::sampler::SweepCounters> {
        None
    }
    /// Sums the counts this worker built in [`Engine::sample`] with every other worker's
    /// (nothing to do with one worker).
    fn exchange(&mut self, transport: &dyn Transport) -> Result<(), TrainError>;
    /// M-step: the summed counts become the current ones and the iteration is complete.
    fn commit(&mut self) -> Result<(), TrainError>;
    /// One whole iteration: [`Engine::sample`], [`Engine::exchange`], [`Engine::commit`]. An
    /// engine group overrides it to run the three on each member in one round of its threads
    /// (a round per call, three an iteration, cost `--device cuda:all` about 0.3 ms an
    /// iteration on four GPUs: BENCHMARKS.md, "One round of threads an iteration").
    fn iterate(&mut self, transport: &dyn Transport) -> Result<(), TrainError> {
        self.sample()?;
        self.exchange(transport)?;
        self.commit()
    }

    /// Training log-likelihood per token of the current state.
    fn log_likelihood(&mut self) -> Result<f64, TrainError>;
    /// Held-out document completion of `docs` with the current counts, done by the engine
    /// itself: the argument of every scored token's logarithm, which
    /// [`topos_model::heldout_from_arguments`] turns into [`topos_model::heldout_log_likelihood`]'s
    /// numbers bit for bit. `None` (the default) leaves it to the host.
    fn heldout_arguments(
        &mut self,
        docs: Docs<'_>,
        opts: &topos_model::FoldInOptions,
    ) -> Result<Option<Vec<f64>>, TrainError> {
        let _ = (docs, opts);
        Ok(None)
    }
    /// [`Engine::heldout_arguments`] with a φ the host built (of the held-out words at least),
    /// for an engine that cannot derive it itself (a GPU with a sparse φ). `None` (the default)
    /// leaves the evaluation to the host.
    fn heldout_arguments_with_phi(
        &mut self,
        docs: Docs<'_>,
        phi: &topos_model::Phi,
        opts: &topos_model::FoldInOptions,
    ) -> Result<Option<Vec<f64>>, TrainError> {
        let _ = (docs, phi, opts);
        Ok(None)
    }
    /// How this engine's exchanges moved their bytes (`None`: it had nothing to exchange).
    fn exchange_report(&self) -> Option<crate::exchange::ExchangeReport> {
        None
    }
    /// Column sums n_k of the current word-topic counts.
    fn topic_totals(&mut self) -> Result<Vec<u64>, TrainError>;
    /// The current word-topic counts of `words` as sparse rows (topics increasing), appended to
    /// `out` (cleared first; its `totals` are left empty).
    fn word_topics(&mut self, words: Range<u32>, out: &mut WordTopics) -> Result<(), TrainError>;
    /// The current topic of tokens `start..start + out.len()` (corpus order).
    fn assignments(&mut self, start: u64, out: &mut [u16]) -> Result<(), TrainError>;
    /// The document-topic rows of documents `docs` (this worker's indices), into `out`
    /// (cleared first), for an engine that keeps them instead of assignments (`mfm`): `true`.
    /// `false` (the default): the run counts them from [`Engine::assignments`].
    fn doc_topic_rows(
        &mut self,
        docs: Range<usize>,
        out: &mut topos_model::DocTopics,
    ) -> Result<bool, TrainError> {
        let _ = (docs, out);
        Ok(false)
    }
    /// What learned priors are re-estimated from (`topos train --optimize-priors`, see
    /// [`crate::priors`]): the histograms of this worker's documents' topic counts and those of
    /// the (global) word-topic counts. `None` (the default): the engine cannot learn priors.
    fn prior_statistics(
        &mut self,
    ) -> Result<Option<(crate::priors::DocHistograms, crate::priors::WordHistogram)>, TrainError>
    {
        Ok(None)
    }
    /// Samples with the priors of `hyper` (same K) from the next iteration on. Only engines whose
    /// device [`crate::device::Device::learns_priors`] support it.
    fn set_priors(&mut self, hyper: &topos_model::Hyperparameters) -> Result<(), TrainError> {
        let _ = hyper;
        Err(TrainError::Unsupported(
            "learned priors (--optimize-priors) run on the CPU only for now; use --device cpu"
                .into(),
        ))
    }
    /// From the next sample on, reads `counts` (a noisy release of the word-topic counts)
    /// instead of the true ones. Only engines that private training may run on support it.
    fn sample_from_release(&mut self, counts: Arc<WordTopics>) -> Result<(), TrainError> {
        let _ = counts;
        Err(TrainError::Unsupported(
            "private training runs on the CPU only (its noise comes from the CPU's secure generator); use --device cpu".into(),
        ))
    }
}

/// The exchange of an engine that runs with one worker: nothing to sum, and a transport of
/// several workers refused with what would be needed (`multi`: the transport that will bring it).
pub fn exchange_with_one_worker(
    engine: &str,
    transport: &dyn Transport,
    multi: &str,
) -> Result<(), TrainError> {
    if transport.workers() > 1 {
        return Err(TrainError::Unsupported(format!(
            "the {engine} engine runs with one worker; the {} transport has {} ({multi})",
            transport.name(),
            transport.workers()
        )));
    }
    Ok(())
}

/// Refuses a commit that no sample came before.
pub fn check_sampled(sampled: bool) -> Result<(), TrainError> {
    if sampled {
        Ok(())
    } else {
        Err(TrainError::Unsupported(
            "commit without a sample before it".into(),
        ))
    }
}

/// Words read back from an engine per piece (for the model file and held-out evaluation): at
/// most 1,024 rows of K counts in host memory at once.
pub const WORDS_PER_PIECE: u32 = 1024;

/// Calls `f(first_word, rows)` for consecutive pieces of the engine's word-topic rows; with a
/// non-empty `only` (sorted word ids), only for the pieces that hold one of them.
pub fn for_each_row_piece<E: From<TrainError>>(
    engine: &mut dyn Engine,
    num_words: usize,
    piece: &mut WordTopics,
    mut f: impl FnMut(u32, &WordTopics) -> Result<(), E>,
    only: &[u32],
) -> Result<(), E> {
    let v = num_words as u32;
    let mut first = 0u32;
    while first < v {
        let end = first.saturating_add(WORDS_PER_PIECE).min(v);
        let wanted = only.is_empty() || {
            let i = only.partition_point(|&w| w < first);
            i < only.len() && only[i] < end
        };
        if wanted {
            engine.word_topics(first..end, piece)?;
            f(first, piece)?;
        }
        first = end;
    }
    Ok(())
}

/// Every word-topic row of the engine as one sparse matrix with its totals.
pub fn read_all_rows(engine: &mut dyn Engine, num_words: usize) -> Result<WordTopics, TrainError> {
    let totals = engine.topic_totals()?;
    let mut all = WordTopics {
        num_topics: totals.len() as u32,
        offsets: vec![0],
        topics: Vec::new(),
        counts: Vec::new(),
        totals,
    };
    let mut piece = WordTopics::default();
    for_each_row_piece(
        engine,
        num_words,
        &mut piece,
        |_, rows| {
            let base = all.topics.len() as u64;
            all.topics.extend_from_slice(&rows.topics);
            all.counts.extend_from_slice(&rows.counts);
            all.offsets
                .extend(rows.offsets[1..].iter().map(|o| o + base));
            Ok::<(), TrainError>(())
        },
        &[],
    )?;
    Ok(all)
}
