//! A training run as a library type: a [`RunConfig`] in, an [`Observer`] told what happens, a
//! [`Summary`] out. The `topos train` command, the Python package and the report are thin
//! layers over it, so the schedule of evaluations and checkpoints, the log format, the output
//! files and the privacy ledger are written once, here.
//!
//! **Outputs are one unit** (issue 18). Every path the run will write is checked before any
//! work: the model's and side file's directories accept a new file, the checkpoint's too, the log
//! opens. At the end the model (and its `.doctopics`, which records the model's checksum) are
//! staged complete under temporary names, then renamed: an error before the renames replaces
//! nothing; a crash between them leaves a pair that `eval` and `similar` refuse by checksum, never
//! a silent mismatch. A run without `--doc-topics` removes an older side file after its model is
//! in place (a private run before, so true per-document counts never sit beside a private model).
//! With checkpoints on, the final state is checkpointed before the outputs are written, and the
//! checkpoint is removed once they are: a failure to write the model loses no training.
//!
//! **Privacy budget** is charged when the run starts to use the data: after every check that
//! could refuse it (settings, calibration, outputs, the budget itself, the device), before the
//! private cap is chosen, any release is drawn, any log-likelihood is shown or any model file is
//! staged. A refused run charges nothing and has shown nothing of the data beyond the corpus's public shape; a run that fails or
//! is killed after the charge has spent its ε (the safe direction: charging at the end let a run
//! killed between staging its model and the charge leave a model, and its progress lines,
//! uncharged). An over-budget run is refused at the start, and again at the charge if another
//! query spent the budget meanwhile.

use crate::checkpoint::{CheckpointHeader, CheckpointWriter, LearnedPriors};
use crate::counts::WordTopics;
use crate::device::{Device, DeviceChoice};
use crate::engine::{for_each_row_piece, DeviceOptions, Engine, EngineSetup, Start, TrainDocs};
use crate::memory::{Bytes, MemoryEstimate, RunShape};
use crate::private::{delta_against_documents, DeltaCheck, PrivateOptions, Releases};
use crate::sampler::{Determinism, Sampler};
use crate::transport::{Transport, TransportKind};
use crate::{Checkpoint, TrainError};
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use topos_corpus::{Corpus, Docs};
use topos_model::{
    Alpha, DocTopicsWriter, FoldInOptions, Hyperparameters, ModelWriter, Phi, Provenance,
};

/// Tokens of assignments read back per piece (checkpoints, document-topic counts).
const TOKENS_PER_PIECE: u64 = 1 << 24;

/// The corpus of a run: a file (opened by the run; its ledger, if any, is charged by a private
/// run) or one already in memory.
#[derive(Clone)]
pub enum CorpusSource {
    File(PathBuf),
    Loaded {
        corpus: Arc<Corpus>,
        /// Where it was read from, for the ledger (`None`: nothing is charged).
        path: Option<PathBuf>,
    },
}

/// Everything a run needs to know.
#[derive(Clone)]
pub struct RunConfig {
    pub corpus: CorpusSource,
    /// The model file to write.
    pub output: PathBuf,
    pub sampler: &'static dyn Sampler,
    /// The sampler's settings (`--ezlda-g`, `--mh-steps`): a setting the sampler does not take
    /// is refused at the start; those that change the model are recorded in it and in
    /// checkpoints ([`crate::sampler::SamplerSettings::recorded`]).
    pub sampler_settings: crate::sampler::SamplerSettings,
    pub hyper: Hyperparameters,
    /// Total iterations (also when resuming).
    pub iterations: u32,
    pub seed: u64,
    /// Host worker threads (0: all cores).
    pub threads: usize,
    /// Document partitions of a CPU run (`None`: the sampler's default).
    pub partitions: Option<usize>,
    pub device: DeviceChoice,
    pub device_options: DeviceOptions,
    pub transport: &'static dyn TransportKind,
    /// Training log-likelihood every N iterations (0: only at the end).
    pub eval_every: u32,
    /// Held-out log-likelihood every N iterations (`None`: with a log, as `eval_every`;
    /// otherwise only at the end).
    pub heldout_every: Option<u32>,
    /// JSON lines, one per evaluation, appended.
    pub log: Option<PathBuf>,
    /// A checkpoint every N iterations (0: never).
    pub checkpoint_every: u32,
    /// The checkpoint file (`None`: the output path with `.ckpt` appended).
    pub checkpoint: Option<PathBuf>,
    /// Continue from the checkpoint.
    pub resume: bool,
    /// Also write the training documents' topic counts beside the model.
    pub doc_topics: bool,
    /// Differentially private training.
    pub private: Option<PrivateOptions>,
    /// No held-out evaluation at all (speed runs).
    pub skip_heldout: bool,
    /// No training log-likelihood (speed runs).
    pub skip_train_ll: bool,
    /// Learn an asymmetric α and a symmetric β from the counts on this schedule (`None`: the
    /// priors of `hyper` stay fixed). See [`crate::priors`].
    pub optimize_priors: Option<crate::priors::PriorSchedule>,
    /// Word-topic counts added to the sampled ones at every iteration (V of the corpus, K of
    /// `hyper`): an earlier model's (`topos update`) or seed words' (`--seed-words`); see
    /// [`EngineSetup::fixed_counts`].
    pub fixed_counts: Option<Arc<WordTopics>>,
}

impl RunConfig {
    /// A run of `sampler` (the default sampler when `None`) on the corpus file `corpus` writing
    /// `output`, every other setting at its default (those of `topos train`).
    pub fn new(
        corpus: impl Into<PathBuf>,
        output: impl Into<PathBuf>,
        hyper: Hyperparameters,
    ) -> Self {
        Self {
            corpus: CorpusSource::File(corpus.into()),
            output: output.into(),
            sampler: crate::sampler::default_sampler(),
            sampler_settings: crate::sampler::SamplerSettings::default(),
            hyper,
            iterations: 200,
            seed: 1,
            threads: 0,
            partitions: None,
            device: DeviceChoice::Auto,
            device_options: DeviceOptions::default(),
            transport: &crate::transport::Local,
            eval_every: 10,
            heldout_every: None,
            log: None,
            checkpoint_every: 0,
            checkpoint: None,
            resume: false,
            doc_topics: false,
            private: None,
            skip_heldout: false,
            skip_train_ll: false,
            optimize_priors: None,
            fixed_counts: None,
        }
    }

    /// The checkpoint file.
    pub fn checkpoint_path(&self) -> PathBuf {
        self.checkpoint.clone().unwrap_or_else(|| {
            let mut p = self.output.clone().into_os_string();
            p.push(".ckpt");
            PathBuf::from(p)
        })
    }
}

/// Why a run could not start or finish. One line each, saying what to do.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Train(#[from] TrainError),
    #[error(transparent)]
    Corpus(#[from] topos_corpus::CorpusError),
    #[error(transparent)]
    Model(#[from] topos_model::ModelError),
    #[error(transparent)]
    Format(#[from] topos_io::FormatError),
    #[error(transparent)]
    Privacy(#[from] topos_privacy::PrivacyError),
    #[error("{0}")]
    Invalid(String),
    #[error("cannot write {path}: {cause}{}", topos_io::output_advice(.cause))]
    Output { path: String, cause: std::io::Error },
    #[error("this run needs about {needed} of host memory ({items}) but only {available} is available; use fewer topics (-k), a smaller corpus, or a machine with more memory")]
    Memory {
        needed: Bytes,
        available: Bytes,
        items: String,
    },
}

/// A random tag for this process's log lines ([`LogLine::process`]): the standard library's
/// randomly keyed hasher over the process id and the time.
fn process_tag() -> String {
    use std::hash::{BuildHasher, Hash, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    std::process::id().hash(&mut h);
    std::time::SystemTime::now().hash(&mut h);
    format!("{:016x}", h.finish())
}

/// One evaluation point, as written to the log.
#[derive(Serialize, Clone, Debug)]
pub struct LogLine {
    pub iteration: u32,
    /// The iteration this process's run started from: 0 for a fresh run, the checkpoint's for
    /// `--resume`. `--log` appends, so this is how a reader of the file tells a resumed run
    /// (whose lines replace those its killed predecessor logged after the checkpoint) from a
    /// new run.
    pub run_started_at: u32,
    /// Drawn at random by each process that logs: runs appended to one file (or a resume and the
    /// run it resumes) are told apart by it, whatever their iterations.
    pub process: String,
    /// Cumulative training seconds (sampling, exchange and count rebuild; evaluation excluded).
    pub seconds: f64,
    pub tokens_per_second: f64,
    pub train_ll: Option<f64>,
    pub heldout_ll: Option<f64>,
    /// Of `seconds`, those this process spent in the transport's collectives (summing counts,
    /// waiting for the slowest process): present in a run of several processes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub communication_seconds: Option<f64>,
    /// Σ_k α_k and β as they stand (present when the run learns its priors).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alpha_sum: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub beta: Option<f64>,
    /// Of this iteration's tokens, the fractions that skipped the final sampling and the
    /// construction of their document branch (S′): present for a sampler that skips work on
    /// some tokens (`ezlda`, thesis §1.3), summed over every worker.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped_final_fraction: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped_construction_fraction: Option<f64>,
}

/// Progress after an iteration, for progress bars.
#[derive(Serialize, Clone, Debug)]
pub struct Progress {
    pub iteration: u32,
    pub iterations: u32,
    pub tokens_per_second: f64,
    /// Seconds since the first iteration of this process.
    pub elapsed_seconds: f64,
    /// Seconds to the last iteration at the mean pace so far.
    pub eta_seconds: f64,
    /// The latest training log-likelihood per token computed.
    pub train_ll: Option<f64>,
    /// The latest held-out log-likelihood per token computed.
    pub heldout_ll: Option<f64>,
    /// Cumulative seconds in the transport's collectives (several processes only).
    pub communication_seconds: Option<f64>,
    /// What this iteration's tokens skipped (every worker's), for a sampler that reports it.
    pub skipped: Option<crate::sampler::SweepCounters>,
}

/// Where a private run's ε was charged (the default: nowhere, the corpus has no budget).
#[derive(Serialize, Debug, Clone, Default)]
pub struct LedgerStatus {
    /// The ledger file, or `null` when the corpus has no budget (nothing was charged).
    pub path: Option<String>,
    pub charged: bool,
    pub spent: Option<f64>,
    pub remaining: Option<f64>,
    pub total: Option<f64>,
    /// The ledger's δ spent and total, when it budgets δ (`privacy budget --total-delta`).
    pub spent_delta: Option<f64>,
    pub total_delta: Option<f64>,
}

impl From<&topos_privacy::Ledger> for LedgerStatus {
    /// The ledger's totals just after a charge to it.
    fn from(l: &topos_privacy::Ledger) -> Self {
        let budgets_delta = l.total_delta() > 0.0;
        Self {
            path: Some(l.path().display().to_string()),
            charged: true,
            spent: Some(l.spent()),
            remaining: Some(l.remaining()),
            total: Some(l.total()),
            spent_delta: budgets_delta.then(|| l.spent_delta()),
            total_delta: budgets_delta.then(|| l.total_delta()),
        }
    }
}

/// What a run reports at the end.
#[derive(Serialize, Debug, Clone)]
pub struct Summary {
    pub model: String,
    pub algorithm: String,
    /// The settings the sampler ran with (every one it takes, defaults included: `ezlda_g`,
    /// `mh_steps`); empty for a sampler without settings.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub sampler_settings: std::collections::BTreeMap<String, u32>,
    pub topics: u32,
    /// The document prior of the model: a number when symmetric, one value per topic when
    /// learned (`--optimize-priors`).
    pub alpha: topos_model::Alpha,
    pub beta: f64,
    /// The schedule the priors were learned on (`null`: fixed priors).
    pub optimize_priors: Option<crate::priors::PriorSchedule>,
    pub iterations: u32,
    pub threads: usize,
    pub partitions: usize,
    pub train_tokens: u64,
    /// Training seconds of this process (sampling, exchange, count rebuild).
    pub seconds: f64,
    pub tokens_per_second: f64,
    /// Training log-likelihood per token (not computed for a private run: it reads the true
    /// assignments).
    pub train_ll: Option<f64>,
    pub heldout_ll: Option<f64>,
    pub heldout_perplexity: Option<f64>,
    /// The host memory estimate the run was admitted with.
    pub estimated_memory_bytes: u64,
    /// The process's peak resident memory so far, as the kernel counts it (Linux's `VmHWM`;
    /// `null` elsewhere): what the estimate is checked against.
    pub peak_memory_bytes: Option<u64>,
    pub memory_estimate: MemoryEstimate,
    /// The guarantee of a private run (`null` otherwise).
    pub privacy: Option<topos_model::Guarantee>,
    /// Noise scale per count of a private run's model (the last release; every release of the
    /// Laplace mechanism has it).
    pub noise_scale: Option<f64>,
    /// The noise of every release in words ([`crate::Releases::noise_summary`]), for a private
    /// run.
    pub noise_summary: Option<String>,
    /// How a private run was accounted against the corpus's privacy budget.
    pub ledger: Option<LedgerStatus>,
    /// Where the run executed ("cpu (16 threads)", "cuda:0 (NVIDIA H100 80GB HBM3)").
    pub device: String,
    /// The device's memory plan (`null` on the CPU).
    pub gpu_plan: Option<serde_json::Value>,
    /// The transport (`local`, `mpi`).
    pub transport: String,
    /// Processes of the run (1 but under MPI); the first one's summary is the run's.
    pub workers: usize,
    /// This process's index among them (not in the JSON: only the first reports).
    #[serde(skip)]
    pub rank: usize,
    /// Bytes this process sent to the transport's collectives.
    pub communicated_bytes: u64,
    /// How the counts were exchanged between processes: iterations each way (dense blocks
    /// all-reduced, or sparse rows scattered to their owners and gathered; `null` with one).
    pub exchange: Option<crate::exchange::ExchangeReport>,
    /// The `.doctopics` file written, if any.
    pub doc_topics: Option<String>,
    /// Where the process's time went.
    pub phases: Phases,
}

/// Seconds spent in each part of a run, for people tuning it and for benchmarks (the sampling
/// loop is `seconds`; everything else is around it).
#[derive(Serialize, Debug, Clone, Default)]
pub struct Phases {
    /// Opening the corpus, checking the outputs, planning, opening the device (uploading the
    /// corpus, drawing the start, compiling the kernels).
    pub start: f64,
    /// Training log-likelihoods.
    pub train_ll: f64,
    /// Held-out evaluations.
    pub heldout: f64,
    /// Checkpoints.
    pub checkpoints: f64,
    /// A private run's noisy releases.
    pub releases: f64,
    /// Learning the priors (`--optimize-priors`).
    pub priors: f64,
    /// Writing the model and its side file.
    pub outputs: f64,
    /// Of the sampling loop, the transport's collectives (several processes only).
    pub communication: f64,
    /// Of the sampling loop, the engine's exchange: summing the workers' counts, however it is
    /// done (through the transport, or on the GPUs by NCCL), from when its counts were ready;
    /// 0 with one worker.
    pub exchange: f64,
}

/// Told what a run does, as it does it. Every method has a default that ignores it.
pub trait Observer {
    /// A status line for people ("memory needed: …", "training on cuda:0 …").
    fn info(&mut self, message: &str) {
        let _ = message;
    }
    /// A warning for people (its text starts "warning: "): something the run does that the user
    /// may not want (a δ near what the guarantee allows, say). Unlike [`Observer::info`] it is
    /// never silenced: a terminal prints it even with `--quiet`. By default it goes where
    /// `info` goes.
    fn warn(&mut self, message: &str) {
        self.info(message);
    }
    /// After every iteration.
    fn progress(&mut self, progress: &Progress) {
        let _ = progress;
    }
    /// After every evaluation (the line also written to the log).
    fn evaluated(&mut self, line: &LogLine) {
        let _ = line;
    }
    /// After a checkpoint is written.
    fn checkpointed(&mut self, path: &Path, iteration: u32) {
        let _ = (path, iteration);
    }
}

/// An observer that ignores everything.
pub struct Silent;
impl Observer for Silent {}

/// The private state of a run.
struct PrivateRun {
    releases: Releases,
    ledger: LedgerStatus,
}

/// A run in progress: the corpus, the engine on its device, the transport, the schedule.
pub struct Run {
    /// A locked temporary beside the model held for the whole run (the first process's), so
    /// that no other run or command starts writing the same model meanwhile
    /// (`topos_io::AtomicFile::claim`); dropped with the run.
    _output_claim: Option<topos_io::AtomicFile>,
    config: RunConfig,
    corpus: Arc<Corpus>,
    docs: TrainDocs,
    engine: Box<dyn Engine>,
    transport: Arc<dyn Transport>,
    private: Option<PrivateRun>,
    log: Option<std::io::BufWriter<std::fs::File>>,
    estimate: MemoryEstimate,
    /// Held-out documents' distinct words (sorted), for φ of those words only.
    heldout_words: Vec<u32>,
    heldout_every: u32,
    has_heldout: bool,
    /// The seed of the run's sampler (a private run's is drawn from the OS, never shown).
    seed: u64,
    train_seconds: f64,
    sampled_tokens: u64,
    first_step: Option<Instant>,
    start_iteration: u32,
    /// [`LogLine::process`].
    process: String,
    last_train_ll: Option<(u32, f64)>,
    last_heldout_ll: Option<(u32, f64)>,
    phases: Phases,
    /// The α and β the run started from (what its checkpoints are matched against; the
    /// priors it learns are recorded beside them).
    starting_priors: (f64, f64),
    /// What its checkpoints record of the fixed counts.
    fixed_checksum: Option<u64>,
}

/// Whether `device` can honour the run's options beyond its sampler: privacy, learned priors,
/// fixed counts (what `--device auto` filters on).
fn can_run_options(device: &dyn Device, config: &RunConfig) -> bool {
    device_refusal(device, config).is_none()
}

/// Why `device` cannot run `config`'s options, one line naming the devices that can, or `None`.
/// The one place a run's options meet the devices' capabilities (the `Device` trait's
/// `supports_private`, `learns_priors`, `takes_fixed_counts`): a device named on the command
/// line is refused with this line, and `--device auto` passes over the devices it refuses. A new
/// capability is a method of `Device` and a clause here (CONTRIBUTING.md, "Add a device").
fn device_refusal(device: &dyn Device, config: &RunConfig) -> Option<String> {
    let able = |can: fn(&dyn Device) -> bool| -> Vec<&'static str> {
        crate::device::DEVICES
            .iter()
            .filter(|d| can(**d))
            .map(|d| d.name())
            .collect()
    };
    if config.private.is_some() && !device.supports_private() {
        let able = able(|d| d.supports_private());
        return Some(format!(
            "--private training runs on {} only, not {} (its noise must come from the host's secure generator); use --device {} or auto",
            able.join(", "),
            device.name(),
            able.join(" or --device ")
        ));
    }
    let learned =
        config.optimize_priors.is_some() || config.hyper.alpha.symmetric_value().is_none();
    if learned && !device.learns_priors() {
        let able = able(|d| d.learns_priors());
        let what = if config.optimize_priors.is_some() {
            "--optimize-priors"
        } else {
            "an asymmetric alpha"
        };
        return Some(format!(
            "{what} runs on {} only for now, not {}; use --device {} or auto",
            able.join(", "),
            device.name(),
            able.join(" or --device ")
        ));
    }
    if let Some(why) = device.settings_refusal(config.sampler, &config.sampler_settings) {
        return Some(why);
    }
    if config.fixed_counts.is_some() && !device.takes_fixed_counts() {
        return Some(format!(
            "updating a model and seed words run on the CPU only for now, not {}; use --device cpu or auto",
            device.name()
        ));
    }
    None
}

/// The one α a checkpoint header records for the priors a run starts from: the symmetric value,
/// or the mean of an asymmetric α given by a library caller.
fn starting_alpha(h: &Hyperparameters) -> f64 {
    h.alpha.symmetric_value().unwrap_or_else(|| h.alpha.mean())
}

fn open_for_append(path: &Path) -> Result<std::fs::File, RunError> {
    // A log appended to a privacy ledger would make it unreadable (and its budget lost to a
    // user who removes it): refused as every output is, through a link too (appending writes
    // to what the link names).
    let named = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    for name in [path, named.as_path()] {
        if let Err(topos_io::FormatError::Io { cause, .. }) = topos_io::refuse_ledger(name) {
            return Err(RunError::Output {
                path: path.display().to_string(),
                cause,
            });
        }
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|cause| RunError::Output {
            path: path.display().to_string(),
            cause,
        })
}

/// Checks that `path`'s directory accepts a new file for it (and clears dead writers'
/// temporaries), without touching `path` itself.
fn check_writable(path: &Path) -> Result<(), RunError> {
    topos_io::AtomicFile::check_creatable(path).map_err(output_error)
}

/// An output check's failure as the run reports it: another live writer of the path is named as
/// such (its cause already says what to do), anything else the I/O error can be is
/// [`RunError::Output`], whose advice is about the directory.
fn output_error(e: topos_io::FormatError) -> RunError {
    match e {
        topos_io::FormatError::Io { path, cause }
            if cause.kind() == std::io::ErrorKind::ResourceBusy =>
        {
            RunError::Invalid(format!("cannot write {path}: {cause}"))
        }
        topos_io::FormatError::Io { path, cause } => RunError::Output { path, cause },
        other => RunError::Format(other),
    }
}

/// The most worker threads a run takes per core of the machine ([`Run::start`] refuses more).
pub const MAX_THREADS_PER_CORE: usize = 8;

/// Refuses a run whose outputs would overwrite its corpus or each other: the model and its
/// `.doctopics`, the checkpoint (which the run removes once the outputs are in place, so a
/// checkpoint at the model's path would delete the model) and the log.
fn check_distinct_paths(
    config: &RunConfig,
    doc_topics: &Path,
    checkpoint: &Path,
) -> Result<(), RunError> {
    let mut outputs: Vec<(&str, &Path)> = vec![("the model (-o)", &config.output)];
    if config.doc_topics {
        outputs.push(("the document-topic file (--doc-topics)", doc_topics));
    }
    if config.checkpoint_every > 0 || config.resume {
        outputs.push(("the checkpoint (--checkpoint)", checkpoint));
    }
    if let Some(log) = &config.log {
        outputs.push(("the log (--log)", log));
    }
    let corpus = match &config.corpus {
        CorpusSource::File(p) => Some(p.as_path()),
        CorpusSource::Loaded { path, .. } => path.as_deref(),
    };
    for (i, &(what, path)) in outputs.iter().enumerate() {
        if let Some(c) = corpus.filter(|c| topos_io::same_file(path, c)) {
            return Err(RunError::Invalid(format!(
                "{what} would be written over the corpus {} that the run trains on; give it another path",
                c.display()
            )));
        }
        if let Some((other, _)) = outputs[..i]
            .iter()
            .find(|(_, p)| topos_io::same_file(path, p))
        {
            return Err(RunError::Invalid(format!(
                "{what} and {other} are the same file {}; give them different paths",
                path.display()
            )));
        }
    }
    Ok(())
}

/// The distinct words of `docs`, sorted.
fn distinct_words(docs: Docs<'_>) -> Vec<u32> {
    let mut words: Vec<u32> = docs.tokens().to_vec();
    words.sort_unstable();
    words.dedup();
    words
}

impl Run {
    /// Checks the configuration, the outputs, the memory and the budget, and opens the engine:
    /// everything that can refuse the run does so here, before any training.
    pub fn start(config: RunConfig, observer: &mut dyn Observer) -> Result<Run, RunError> {
        let started = Instant::now();
        // A benchmark switch with a typo must not run silently as if it were unset.
        crate::exchange::check_forced_way().map_err(RunError::Invalid)?;
        // The device's slow start (a GPU's driver and context) overlaps reading the corpus;
        // whatever the chosen device did not take is let go when `start` returns, whichever way.
        struct ReleaseUnused;
        impl Drop for ReleaseUnused {
            fn drop(&mut self) {
                for d in crate::device::DEVICES {
                    d.release_prepared();
                }
            }
        }
        let _release_unused = ReleaseUnused;
        // Under a launcher each process opens the GPU of its local rank, not the first: nothing
        // is prewarmed (a context on GPU 0 from every process would crowd the first's).
        let launched = crate::transport::launched_by().is_some();
        match config.device {
            _ if launched => {}
            DeviceChoice::Named { device, ordinal } if device.runs(config.sampler) => {
                device.prepare(ordinal)
            }
            DeviceChoice::Auto => {
                let first = crate::device::DEVICES
                    .iter()
                    .find(|d| d.runs(config.sampler) && can_run_options(**d, &config));
                if let Some(d) = first {
                    d.prepare(None);
                }
            }
            _ => {}
        }
        // The workers: with several, every one runs this same schedule, the first alone writes
        // files and tells the observer.
        let transport: Arc<dyn Transport> =
            Arc::from(config.transport.connect().map_err(TrainError::from)?);
        let workers = transport.workers();
        let root = transport.is_root();
        // The first worker checks the whole corpus file; the others read only their share of its
        // tokens, and check that their file is the first's.
        let (corpus, corpus_path) = match &config.corpus {
            CorpusSource::File(p) if !root => (Arc::new(Corpus::open_share(p)?), Some(p.clone())),
            CorpusSource::File(p) => (Arc::new(Corpus::open(p)?), Some(p.clone())),
            CorpusSource::Loaded { corpus, path } => (corpus.clone(), path.clone()),
        };
        if workers > 1 {
            let sums = transport
                .all_gather_bytes(&corpus.checksum().to_le_bytes())
                .map_err(TrainError::from)?;
            if let Some(r) = sums.iter().position(|c| c[..] != sums[0][..]) {
                return Err(RunError::Invalid(format!(
                    "process {r} reads another corpus than process 0 at {} (the files' checksums differ); every process needs the same file",
                    corpus_path
                        .as_ref()
                        .map_or_else(|| "its path".to_string(), |p| p.display().to_string())
                )));
            }
        }
        let mut silent = Silent;
        let observer: &mut dyn Observer = if root { observer } else { &mut silent };
        if workers > 1 {
            if config.private.is_some() {
                return Err(RunError::Invalid(format!(
                    "--private runs in one process (its noise and ledger are one process's); this run has {workers}: run it without mpirun"
                )));
            }
            if let DeviceChoice::Every { device } = config.device {
                return Err(RunError::Invalid(format!(
                    "--device {}:all trains on every device of one process; under mpirun use --device {} (each process takes the device of its rank on its machine)",
                    device.name(),
                    device.name()
                )));
            }
            if let DeviceChoice::Named { device, .. } = config.device {
                if !device.joins_workers() {
                    let able: Vec<&str> = crate::device::DEVICES
                        .iter()
                        .filter(|d| d.joins_workers())
                        .map(|d| d.name())
                        .collect();
                    return Err(RunError::Invalid(format!(
                        "--device {} runs in one process for now; {workers} processes train on --device {}",
                        device.name(),
                        able.join(" or ")
                    )));
                }
            }
        }
        let sampler = config.sampler;
        config
            .sampler_settings
            .check_for(sampler)
            .map_err(|e| RunError::Invalid(e.0))?;
        let mut h = config.hyper.clone();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = if config.threads == 0 {
            cores
        } else {
            config.threads
        };
        // Every thread is a real OS thread with its own stack and rows: tens of thousands of
        // them stall the machine long before the run starts. The model does not depend on the
        // count, so nothing is lost by refusing more than this machine can use.
        let most = MAX_THREADS_PER_CORE * cores;
        if threads > most {
            return Err(RunError::Invalid(format!(
                "--threads {threads} is more than {MAX_THREADS_PER_CORE} threads per core on this machine's {cores} cores; use --threads {cores} (or 0 for all cores): the model is the same for any thread count"
            )));
        }

        // Learned priors: on a device that learns them, never from private data.
        if let Some(p) = config.optimize_priors {
            if p.every == 0 {
                return Err(RunError::Invalid(
                    "--optimize-priors needs an interval of at least 1 iteration".into(),
                ));
            }
            if config.private.is_some() {
                return Err(RunError::Invalid("--optimize-priors cannot be used with --private: priors learned from the training counts would be released without noise".into()));
            }
        }
        if let Some(f) = &config.fixed_counts {
            if config.private.is_some() {
                return Err(RunError::Invalid("--private cannot start from fixed counts (topos update, --seed-words): train the private model from its corpus alone".into()));
            }
            if f.num_words() != corpus.vocab().len() || f.num_topics != h.num_topics {
                return Err(RunError::Invalid(format!(
                    "fixed counts of {} words and {} topics for a corpus of {} words and K = {}",
                    f.num_words(),
                    f.num_topics,
                    corpus.vocab().len(),
                    h.num_topics
                )));
            }
        }
        // A sampler that keeps no assignments (mfm): what is built on them.
        if !sampler.keeps_assignments() {
            let name = sampler.name();
            let refused = if config.checkpoint_every > 0 || config.resume {
                Some("write or resume checkpoints (--checkpoint-every, --resume): they hold every token's topic")
            } else if config.optimize_priors.is_some() {
                Some("learn priors (--optimize-priors): they are re-estimated from the assignments")
            } else if config.fixed_counts.is_some() {
                Some("start from fixed counts (topos update, --seed-words)")
            } else {
                None
            };
            if let Some(what) = refused {
                return Err(RunError::Invalid(format!(
                    "--algo {name} keeps no topic assignments between iterations (that is its memory saving), so it cannot {what}; use --algo {} for that",
                    crate::sampler::default_sampler().name()
                )));
            }
        }
        // Private runs: what they refuse, and their capped documents.
        if config.private.is_some() {
            if !sampler.supports_private() {
                return Err(RunError::Invalid(format!(
                    "--private needs --algo {}: {} does not support private training (every token must read only its own document and counts frozen between noisy releases; see `topos algos`)",
                    crate::sampler::default_private_sampler().name(),
                    sampler.name()
                )));
            }
            if config.checkpoint_every > 0 || config.resume {
                return Err(RunError::Invalid("--private cannot write or resume checkpoints: they hold every token's true topic, which is private data".into()));
            }
            if config.doc_topics {
                return Err(RunError::Invalid("--private cannot write --doc-topics: the training documents' topic counts are private data".into()));
            }
        }
        // A device named for the run must have what its options need.
        if let DeviceChoice::Named { device, .. } | DeviceChoice::Every { device } = config.device {
            if let Some(why) = device_refusal(device, &config) {
                return Err(RunError::Invalid(why));
            }
        }
        // Learned priors whose first update would come after the last iteration would never be
        // learned: the run would train with the priors it started from and record a schedule it
        // never ran (the default burn-in, 50, outlasts a short run).
        if let Some(p) = config.optimize_priors {
            let first = crate::priors::first_update(p);
            if first > u64::from(config.iterations) {
                return Err(RunError::Invalid(format!(
                    "--optimize-priors {} after --optimize-burn-in {} would first learn the priors after iteration {first}, but the run ends at iteration {} (--iters): they would stay as they started; lower --optimize-burn-in or raise --iters",
                    p.every, p.burn_in, config.iterations
                )));
            }
        }
        // Calibrate now, so bad settings or an ε the exact sampler cannot represent are refused
        // before anything (for a cap still to be chosen, at both ends of the caps it can
        // choose); the guarantee's δ is what the ledger is checked for and charged.
        let private_delta = match &config.private {
            Some(p) => {
                let delta = |o: PrivateOptions| -> Result<f64, RunError> {
                    Ok(
                        Releases::new(o, topos_privacy::NoiseSource::insecure_seeded(0))?
                            .guarantee()
                            .delta
                            .unwrap_or(0.0),
                    )
                };
                // The settings as given (a cap still to choose among them), then calibrated.
                p.check()?;
                Some(if p.cap_to_choose() {
                    let [lo, hi] = p.with_every_extreme_cap();
                    delta(lo)?.max(delta(hi)?)
                } else {
                    delta(*p)?
                })
            }
            None => None,
        };
        // δ against the number of training documents n (treated as public for this check, like
        // the vocabulary): an (ε, δ) guarantee with δ ≥ 1/n allows a mechanism that publishes one
        // random document outright, so it is refused; δ > 1/(100·n) is allowed with a warning.
        if let Some(delta) = private_delta.filter(|&d| d > 0.0) {
            let n = corpus.train().len() as u64;
            match delta_against_documents(delta, n) {
                DeltaCheck::Refuse(why) => return Err(RunError::Invalid(why)),
                DeltaCheck::Warn(why) => observer.warn(&why),
                DeltaCheck::Fine => {}
            }
        }
        // A private run samples whole documents: only what each contributes to a release is
        // capped (`private::counted`), so the cap costs no data the guarantee does not need.
        let docs = TrainDocs::Corpus(corpus.clone());
        let view = docs.view();

        // Outputs: every path the run will write, checked before any work (by the worker that
        // writes them).
        let doc_topics_path = topos_model::doc_topics_path(&config.output);
        let ckpt_path = config.checkpoint_path();
        check_distinct_paths(&config, &doc_topics_path, &ckpt_path)?;
        let output_claim = if root {
            Some(topos_io::AtomicFile::claim(&config.output).map_err(output_error)?)
        } else {
            None
        };
        if root {
            if config.doc_topics {
                check_writable(&doc_topics_path)?;
            }
            if config.checkpoint_every > 0 {
                check_writable(&ckpt_path)?;
            }
            // A finished run removes its checkpoint, so one still there is an interrupted run's
            // work: a fresh run would write over it (and remove it when done) without a word,
            // and a private model would sit beside every token's true topic (refused rather
            // than removed: the checkpoint is someone's training).
            let private = config.private.is_some();
            if (config.checkpoint_every > 0 || private) && !config.resume && ckpt_path.exists() {
                let what = match Checkpoint::read(&ckpt_path) {
                    Ok(c) => format!(
                        "the checkpoint of an unfinished run (iteration {})",
                        c.header.iteration
                    ),
                    Err(_) => "a file that is not a usable checkpoint".to_string(),
                };
                return Err(RunError::Invalid(if private {
                    format!(
                        "{} holds {what}, every token's true topic, which must not sit beside a private model: resume or remove it, or give the private model another name (-o)",
                        ckpt_path.display()
                    )
                } else {
                    format!(
                        "{} holds {what}; add --resume to continue it, or remove the file to start over",
                        ckpt_path.display()
                    )
                }));
            }
        }
        let log = match &config.log {
            Some(p) if root => Some(std::io::BufWriter::new(open_for_append(p)?)),
            _ => None,
        };

        // Resume: the checkpoint must belong to this corpus and these settings.
        let expected = CheckpointHeader {
            algorithm: sampler.name().to_string(),
            num_topics: h.num_topics,
            alpha: starting_alpha(&h),
            beta: h.beta,
            seed: config.seed,
            partitions: 0,
            corpus_checksum: corpus.checksum(),
            iteration: 0,
            priors: config.optimize_priors.map(|schedule| LearnedPriors {
                schedule,
                alpha: h.alpha.values().to_vec(),
                beta: h.beta,
            }),
            fixed_counts: config
                .fixed_counts
                .as_deref()
                .map(crate::checkpoint::fixed_counts_checksum),
            sampler_settings: config.sampler_settings.recorded(sampler),
        };
        let starting_priors = (expected.alpha, expected.beta);
        let fixed_checksum = expected.fixed_counts;
        let mut partitions = config.partitions;
        let start = if config.resume {
            let c = Checkpoint::read(&ckpt_path).map_err(|e| {
                RunError::Invalid(format!("cannot resume (no usable checkpoint): {e}"))
            })?;
            let fixed = sampler.determinism() == Determinism::AnyThreadsFixedPartitions;
            let got = &c.header;
            let mut want = expected.clone();
            want.partitions = partitions.map_or(got.partitions, |p| p as u32);
            got.check_resumes(&want, fixed)
                .map_err(TrainError::CheckpointMismatch)?;
            if c.assignments.len() as u64 != view.num_tokens() {
                return Err(TrainError::CheckpointMismatch(format!(
                    "{} tokens in the checkpoint, {} in the corpus",
                    c.assignments.len(),
                    view.num_tokens()
                ))
                .into());
            }
            if got.iteration > config.iterations {
                return Err(RunError::Invalid(format!(
                    "the checkpoint is at iteration {}, beyond --iters {}; resume with --iters {} or more, or train anew without --resume",
                    got.iteration, config.iterations, got.iteration
                )));
            }
            if fixed {
                partitions = Some(got.partitions as usize);
            }
            // The priors as learned when the checkpoint was written: the next iteration samples
            // with them, as the uninterrupted run's would.
            if let Some(p) = &got.priors {
                h = Hyperparameters::with_alpha(
                    Alpha::from_values(p.alpha.clone())
                        .map_err(|e| RunError::Invalid(format!("cannot resume: {e}")))?,
                    Some(p.beta),
                )
                .map_err(|e| RunError::Invalid(format!("cannot resume: {e}")))?;
            }
            observer.info(&format!(
                "resuming from {} at iteration {}",
                ckpt_path.display(),
                got.iteration
            ));
            Start::Resume(c)
        } else {
            Start::Fresh
        };

        // The ledger: an over-budget private run is refused now (checked, not charged; the
        // charge comes once the device is open, below).
        let private_ledger = match (&config.private, private_delta, &corpus_path) {
            (Some(p), Some(delta), Some(path)) if topos_privacy::ledger::has_ledger(path) => {
                topos_privacy::Ledger::check_approx(path, corpus.checksum(), p.epsilon, delta)?;
                Some(path.clone())
            }
            _ => None,
        };
        let heldout = corpus.heldout();
        // Document completion scores the second half of a document given its first, so it needs
        // a held-out document of 2 tokens or more; without one the run is not evaluated on held-out
        // documents (said now), rather than failing when it first evaluates them.
        let scorable = heldout.iter().any(|d| d.len() >= 2);
        if !heldout.is_empty() && !scorable && !config.skip_heldout {
            observer.warn(&format!(
                "none of the {} held-out documents has the 2 tokens document completion needs: no held-out log-likelihood will be reported (prepare the corpus with longer documents held out)",
                heldout.len()
            ));
        }
        let has_heldout = scorable && !config.skip_heldout;
        let heldout_words = if has_heldout {
            distinct_words(heldout)
        } else {
            Vec::new()
        };
        observer.info(&format!(
            "corpus: {} documents, {} tokens, {} words; K = {}, alpha = {}, beta = {}; {}{} on {} thread{}{}",
            view.len(),
            view.num_tokens(),
            corpus.vocab().len(),
            h.num_topics,
            h.alpha,
            h.beta,
            sampler.name(),
            sampler
                .settings()
                .iter()
                .map(|s| match (s.given(&config.sampler_settings), s.default_depends_on_device()) {
                    (Some(v), _) => format!(" ({} {})", s.flag(), s.show(v)),
                    // The device is not chosen yet: "training on" names the value.
                    (None, true) => String::new(),
                    (None, false) => format!(" ({} {})", s.flag(), s.show(s.default_value())),
                })
                .collect::<String>(),
            threads,
            if threads == 1 { "" } else { "s" },
            if workers > 1 {
                format!(" in each of {workers} processes ({} transport)", transport.name())
            } else {
                String::new()
            }
        ));
        // A process of several holds its share of the documents (the estimate's largest items).
        let share = |n: u64| n.div_ceil(workers as u64);
        let shape = RunShape {
            tokens: share(view.num_tokens()),
            docs: share(view.len() as u64),
            words: corpus.vocab().len() as u64,
            topics: u64::from(h.num_topics),
            threads: threads as u64,
            heldout_tokens: if has_heldout { heldout.num_tokens() } else { 0 },
            heldout_words: heldout_words.len() as u64,
            doc_topics: config.doc_topics,
            private: config.private.is_some(),
            workers: workers as u64,
        };

        // A private run keys its sampler with OS randomness that is never recorded; its noise
        // comes from the same source, calibrated once the budget is charged (below).
        let (noise, seed) = match &config.private {
            Some(_) => {
                let mut source = topos_privacy::NoiseSource::from_os()?;
                let seed = source.next_u64();
                (Some(source), seed)
            }
            None => (None, config.seed),
        };
        let resumed = match &start {
            Start::Resume(c) => Some(c.header.clone()),
            Start::Fresh => None,
        };
        let setup = EngineSetup {
            docs: docs.clone(),
            num_words: corpus.vocab().len(),
            sampler,
            settings: config.sampler_settings.clone(),
            hyper: h.clone(),
            seed,
            threads,
            partitions,
            start,
            device: config.device_options,
            transport: transport.clone(),
            fixed_counts: config.fixed_counts.clone(),
        };
        let admit = |device: &dyn Device, observer: &mut dyn Observer| {
            let estimate = device.host_memory(&shape, sampler);
            observer.info(&format!(
                "host memory needed: about {} ({})",
                Bytes(estimate.total()),
                estimate.describe()
            ));
            // The processes of one machine share its memory.
            let on_this_machine = crate::transport::local_size().unwrap_or(1).max(1) as u64;
            if let Some(avail) = topos_model::mem::available_memory().map(|a| a / on_this_machine) {
                if estimate.total() > avail {
                    return Err(RunError::Memory {
                        needed: Bytes(estimate.total()),
                        available: Bytes(avail),
                        items: estimate.describe(),
                    });
                }
            }
            Ok(estimate)
        };
        let (engine, estimate) = match config.device {
            DeviceChoice::Named { device, ordinal } => {
                if !device.runs(sampler) {
                    return Err(RunError::Invalid(format!(
                        "the {} sampler does not run on {}; see `topos algos`",
                        sampler.name(),
                        device.name()
                    )));
                }
                device.usable().map_err(RunError::Invalid)?;
                let estimate = admit(device, observer)?;
                (device.open(ordinal, setup)?, estimate)
            }
            DeviceChoice::Every { device } => {
                if !device.runs(sampler)
                    || !device.joins_workers()
                    || (config.private.is_some() && !device.supports_private())
                {
                    return Err(RunError::Invalid(format!(
                        "--device {}:all cannot run {}{}: see `topos algos`",
                        device.name(),
                        sampler.name(),
                        if config.private.is_some() {
                            " privately"
                        } else {
                            ""
                        }
                    )));
                }
                device.usable().map_err(RunError::Invalid)?;
                let n = device.count().map_err(RunError::Invalid)?;
                let estimate = admit(device, observer)?;
                observer.info(&format!(
                    "{n} devices of {}: one share of the documents each, counts summed in this process",
                    device.name()
                ));
                (open_group(device, n, &setup)?, estimate)
            }
            DeviceChoice::Auto => {
                // The devices in order; the last is the fallback, whose refusal is the run's.
                let candidates: Vec<&dyn Device> = crate::device::DEVICES
                    .iter()
                    .copied()
                    .filter(|d| {
                        d.runs(sampler)
                            && can_run_options(*d, &config)
                            && (workers == 1 || d.joins_workers())
                    })
                    .collect();
                if workers > 1 {
                    // Every worker must open the same kind of device (their collectives differ):
                    // each names the first it could use, and all take the last named, so a
                    // worker without a usable GPU moves everyone to the CPU. A failure to open
                    // it is then the run's error, never a quiet fallback.
                    let mine = candidates
                        .iter()
                        .position(|d| d.usable().is_ok() && admit(*d, &mut Silent).is_ok())
                        .unwrap_or(candidates.len().saturating_sub(1));
                    let votes = transport
                        .all_gather_bytes(&(mine as u64).to_le_bytes())
                        .map_err(TrainError::from)?;
                    let chosen = votes
                        .iter()
                        .map(|v| u64::from_le_bytes(v[..8].try_into().expect("8 bytes")) as usize)
                        .max()
                        .unwrap_or(0);
                    let device = *candidates.get(chosen).ok_or_else(|| {
                        RunError::Invalid(
                            "no device can run this sampler; see `topos algos`".into(),
                        )
                    })?;
                    device.usable().map_err(RunError::Invalid)?;
                    let estimate = admit(device, observer)?;
                    (device.open(None, setup.clone())?, estimate)
                } else {
                    let mut opened = None;
                    for (i, &device) in candidates.iter().enumerate() {
                        let fallback = i + 1 == candidates.len();
                        let attempt = device
                            .usable()
                            .map_err(RunError::Invalid)
                            .and_then(|()| admit(device, observer))
                            .and_then(|estimate| Ok((device.open(None, setup.clone())?, estimate)));
                        match attempt {
                            Ok(e) => {
                                opened = Some(e);
                                break;
                            }
                            Err(e) if fallback => return Err(e),
                            // A device this machine does not have is passed over in silence.
                            Err(_) if !device.present() => {}
                            Err(e) => observer.info(&format!("not using {}: {e}", device.name())),
                        }
                    }
                    opened.ok_or_else(|| {
                        RunError::Invalid(
                            "no device can run this sampler; see `topos algos`".into(),
                        )
                    })?
                }
            }
        };
        // The settings whose default depends on the device, now that it is known.
        if let Some(header) = &resumed {
            header
                .check_device_settings(sampler, &config.sampler_settings, engine.setting_defaults())
                .map_err(TrainError::CheckpointMismatch)?;
        }
        if let Some(plan) = engine.plan() {
            observer.info(&format!(
                "device plan: {}",
                plan.get("summary")
                    .and_then(|s| s.as_str())
                    .map_or_else(|| plan.to_string(), str::to_string)
            ));
        }
        observer.info(&format!(
            "training on {}{}",
            device_description(engine.as_ref(), workers),
            sampler
                .settings()
                .iter()
                .filter(|s| s.default_depends_on_device())
                .map(|s| format!(
                    ", {} {}",
                    s.flag(),
                    s.show(s.value_on(&config.sampler_settings, engine.setting_defaults()))
                ))
                .collect::<String>()
        ));

        // A private run's budget is charged now, before the data is read for anything the run
        // shows or writes (the cap, the releases, the log-likelihoods, a staged model): from here
        // on it is spent, whether the run ends with a model or not. Everything the run could be
        // refused for was checked above.
        let private = match (config.private, noise) {
            (Some(options), Some(mut source)) => {
                let ledger = match &private_ledger {
                    Some(corpus_path) => {
                        let l = topos_privacy::Ledger::charge_approx(
                            corpus_path,
                            corpus.checksum(),
                            &charge_query(&options, h.num_topics),
                            options.epsilon,
                            private_delta.unwrap_or(0.0),
                        )?;
                        LedgerStatus::from(&l)
                    }
                    None => LedgerStatus::default(),
                };
                let options = if options.cap_to_choose() {
                    let choice = crate::private::choose_cap(
                        view.iter().map(<[u32]>::len),
                        topos_privacy::Epsilon::new(options.cap_epsilon)?,
                        &mut source,
                    )?;
                    let (a, m) = crate::private::CAP_QUANTILE;
                    observer.info(&format!(
                        "--max-doc-tokens not given: L = {} tokens per document, near the {a}/{m} quantile of the training documents' lengths, chosen privately (exponential mechanism) with ε = {:.4} of the run's {}; the releases share the other {:.4}",
                        choice.cap,
                        choice.epsilon,
                        options.epsilon.get(),
                        options.epsilon.get() - choice.epsilon
                    ));
                    options.with_cap(choice)
                } else {
                    options
                };
                let r = Releases::new(options, source)?;
                // What the model will record may not exceed what was charged (δ was charged as
                // the larger of the two extreme caps' calibrations, the same ε).
                let recorded = r.guarantee();
                let charged_delta = private_delta.unwrap_or(0.0);
                if recorded.epsilon != options.epsilon.get()
                    || recorded.delta.unwrap_or(0.0) > charged_delta
                {
                    return Err(RunError::Invalid(format!(
                        "internal error: the model's guarantee (ε = {}, δ = {:e}) exceeds what was checked and charged (ε = {}, δ = {charged_delta:e}); nothing is released",
                        recorded.epsilon,
                        recorded.delta.unwrap_or(0.0),
                        options.epsilon.get()
                    )));
                }
                let o = r.options();
                let accountant = match r.calibration().chosen {
                    topos_privacy::rdp::Chosen::Basic => "basic composition, pure ε".to_string(),
                    topos_privacy::rdp::Chosen::Renyi { order } => {
                        format!("Rényi DP at order {order:.3}, δ = {:e}", o.delta)
                    }
                    topos_privacy::rdp::Chosen::Zcdp { rho } => {
                        format!("zCDP, ρ = {rho:.6} in all, δ = {:e}", o.delta)
                    }
                };
                let how = match o.mechanism {
                    crate::PrivateMechanism::Laplace => format!(
                        "documents capped at {} tokens, discrete Laplace noise scale {:.3} per count (basic composition would need {:.3})",
                        o.max_doc_tokens,
                        r.scale(),
                        f64::from(o.max_doc_tokens) * o.releases() as f64 / o.release_epsilon(),
                    ),
                    crate::PrivateMechanism::Gaussian { l2_clip, .. } => format!(
                        "every document's contribution (√-weighted) clipped to L2 norm {l2_clip}, discrete Gaussian noise {} (per count)",
                        r.noise_summary()
                    ),
                };
                // Say plainly which kind of guarantee this is: the default (Gaussian) is
                // (ε, δ), not pure ε.
                let delta = r.guarantee().delta.unwrap_or(0.0);
                let kind = if delta > 0.0 {
                    format!(
                        "(ε, δ)-DP with ε = {}, δ = {delta:e}, not pure ε (--mechanism laplace or --delta 0 gives pure ε)",
                        o.epsilon.get()
                    )
                } else {
                    format!("pure ε-DP with ε = {}", o.epsilon.get())
                };
                observer.info(&format!(
                    "private: {kind}, over {} release{} ({accountant}), {how}; {}",
                    o.releases(),
                    if o.releases() == 1 { "" } else { "s" },
                    match (&ledger.path, ledger.remaining) {
                        (Some(path), Some(remaining)) => format!(
                            "charged to {path} now (ε = {remaining} remains): spent even if the run stops before its model is written"
                        ),
                        _ => "no privacy budget set for this corpus, nothing charged".to_string(),
                    }
                ));
                Some(PrivateRun {
                    releases: r,
                    ledger,
                })
            }
            _ => None,
        };
        let heldout_every = config.heldout_every.unwrap_or(if config.log.is_some() {
            config.eval_every
        } else {
            0
        });
        let start_iteration = engine.iteration();
        let mut config = config;
        config.hyper = h;
        let mut run = Run {
            _output_claim: output_claim,
            config,
            corpus,
            docs,
            engine,
            transport,
            private,
            log,
            estimate,
            heldout_words,
            heldout_every,
            has_heldout,
            seed,
            train_seconds: 0.0,
            sampled_tokens: 0,
            first_step: None,
            start_iteration,
            process: process_tag(),
            last_train_ll: None,
            last_heldout_ll: None,
            phases: Phases::default(),
            starting_priors,
            fixed_checksum,
        };
        // A private run of 0 iterations releases its start as the model.
        run.release_if_due()?;
        run.phases.start = started.elapsed().as_secs_f64();
        Ok(run)
    }

    /// The corpus.
    pub fn corpus(&self) -> &Arc<Corpus> {
        &self.corpus
    }

    /// Completed iterations.
    pub fn iteration(&self) -> u32 {
        self.engine.iteration()
    }

    /// Whether every iteration has run.
    pub fn is_done(&self) -> bool {
        self.iteration() >= self.config.iterations
    }

    /// The engine (for tests and tools that read its state).
    pub fn engine_mut(&mut self) -> &mut dyn Engine {
        self.engine.as_mut()
    }

    /// A private run's next release, when its schedule asks for one (see
    /// [`Releases::release_if_due`]).
    fn release_if_due(&mut self) -> Result<(), RunError> {
        if let Some(p) = self.private.as_mut() {
            let t = Instant::now();
            p.releases.release_if_due(
                self.engine.as_mut(),
                self.docs.view(),
                self.corpus.vocab().len(),
            )?;
            self.phases.releases += t.elapsed().as_secs_f64();
        }
        Ok(())
    }

    /// Runs the next iteration with the evaluations, log line and checkpoint due after it.
    /// Returns `false` when every iteration had already run.
    pub fn step(&mut self, observer: &mut dyn Observer) -> Result<bool, RunError> {
        if self.is_done() {
            return Ok(false);
        }
        let mut silent = Silent;
        let observer: &mut dyn Observer = if self.transport.is_root() {
            observer
        } else {
            &mut silent
        };
        let communicated = self.transport.seconds();
        let t0 = Instant::now();
        self.first_step.get_or_insert(t0);
        fault_if_asked(self.transport.rank(), self.engine.iteration() + 1)?;
        self.engine.iterate(self.transport.as_ref())?;
        let skipped = self.sweep_counters()?;
        if let Some(x) = self.engine.exchange_report() {
            self.phases.exchange = x.seconds;
        }
        let seconds = t0.elapsed().as_secs_f64();
        self.train_seconds += seconds;
        self.phases.communication += self.transport.seconds() - communicated;
        let communication_seconds =
            (self.transport.workers() > 1).then_some(self.phases.communication);
        // A private run's release of this state: what the next iteration reads, or after the
        // last iteration the model.
        self.release_if_due()?;
        let tokens = self.docs.view().num_tokens();
        self.sampled_tokens += tokens;
        let it = self.engine.iteration();
        if self.config.optimize_priors.is_some_and(|p| p.due(it)) {
            let t = Instant::now();
            self.learn_priors(observer)?;
            self.phases.priors += t.elapsed().as_secs_f64();
        }
        let is_last = it == self.config.iterations;
        let due = |every: u32| every > 0 && it.is_multiple_of(every);
        let t = Instant::now();
        let train_ll = if self.private.is_none()
            && !self.config.skip_train_ll
            && (due(self.config.eval_every) || is_last)
        {
            Some(self.engine.log_likelihood()?)
        } else {
            None
        };
        self.phases.train_ll += t.elapsed().as_secs_f64();
        let heldout_ll = if self.has_heldout && due(self.heldout_every) {
            Some(self.heldout_ll()?)
        } else {
            None
        };
        if let Some(ll) = train_ll {
            self.last_train_ll = Some((it, ll));
        }
        if let Some(ll) = heldout_ll {
            self.last_heldout_ll = Some((it, ll));
        }
        let tokens_per_second = tokens as f64 / seconds.max(1e-9);
        let log_due = train_ll.is_some() || heldout_ll.is_some() || due(self.config.eval_every);
        if log_due {
            let line = LogLine {
                iteration: it,
                run_started_at: self.start_iteration,
                process: self.process.clone(),
                seconds: self.train_seconds,
                tokens_per_second,
                train_ll,
                heldout_ll,
                communication_seconds,
                alpha_sum: self
                    .config
                    .optimize_priors
                    .map(|_| self.config.hyper.alpha.sum()),
                beta: self.config.optimize_priors.map(|_| self.config.hyper.beta),
                skipped_final_fraction: skipped.map(|c| c.skipped_final_fraction()),
                skipped_construction_fraction: skipped.map(|c| c.skipped_construction_fraction()),
            };
            if let Some(w) = self.log.as_mut() {
                let out = |e: std::io::Error| RunError::Output {
                    path: self
                        .config
                        .log
                        .as_ref()
                        .map_or(String::new(), |p| p.display().to_string()),
                    cause: e,
                };
                writeln!(
                    w,
                    "{}",
                    serde_json::to_string(&line).expect("a log line serializes")
                )
                .map_err(out)?;
                w.flush().map_err(out)?;
            }
            observer.evaluated(&line);
        }
        let elapsed = self.first_step.map_or(0.0, |t| t.elapsed().as_secs_f64());
        let done_here = it - self.start_iteration;
        observer.progress(&Progress {
            iteration: it,
            iterations: self.config.iterations,
            tokens_per_second,
            elapsed_seconds: elapsed,
            eta_seconds: elapsed / f64::from(done_here.max(1))
                * f64::from(self.config.iterations - it),
            train_ll: self.last_train_ll.map(|x| x.1),
            heldout_ll: self.last_heldout_ll.map(|x| x.1),
            communication_seconds,
            skipped,
        });
        if self.config.checkpoint_every > 0 && (due(self.config.checkpoint_every) || is_last) {
            let t = Instant::now();
            let path = self.config.checkpoint_path();
            self.write_checkpoint(&path)?;
            self.phases.checkpoints += t.elapsed().as_secs_f64();
            observer.checkpointed(&path, it);
        }
        Ok(true)
    }

    /// What the last sample's tokens skipped, summed over the workers (every worker runs the
    /// same sampler, so all of them report or none does).
    fn sweep_counters(&mut self) -> Result<Option<crate::sampler::SweepCounters>, RunError> {
        let Some(mine) = self.engine.sweep_counters() else {
            return Ok(None);
        };
        if self.transport.workers() == 1 {
            return Ok(Some(mine));
        }
        let mut sums = [mine.tokens, mine.skipped_construction, mine.skipped_final];
        self.transport
            .sum_u64(&mut sums)
            .map_err(TrainError::from)?;
        Ok(Some(crate::sampler::SweepCounters {
            tokens: sums[0],
            skipped_construction: sums[1],
            skipped_final: sums[2],
        }))
    }

    /// Re-estimates α and β from the current state ([`crate::priors`]); the next iteration
    /// samples with them, and the model is written with them. Collective with several workers
    /// (their documents' histograms are summed; the counts are everyone's already).
    fn learn_priors(&mut self, observer: &mut dyn Observer) -> Result<(), RunError> {
        let (docs, words) = self.engine.prior_statistics()?.ok_or_else(|| {
            RunError::Invalid(format!(
                "{} cannot learn priors; use --device cpu",
                device_description(self.engine.as_ref(), self.transport.workers())
            ))
        })?;
        let docs = docs.across_workers(self.transport.as_ref())?;
        let learned = crate::priors::learn(&self.config.hyper, &docs, &words)?;
        self.engine.set_priors(&learned)?;
        observer.info(&format!(
            "priors learned at iteration {}: alpha {}, beta {:.6}",
            self.engine.iteration(),
            learned.alpha,
            learned.beta
        ));
        self.config.hyper = learned;
        Ok(())
    }

    /// Writes a checkpoint of the current state, the assignments streamed from the engine.
    fn write_checkpoint(&mut self, path: &Path) -> Result<(), RunError> {
        let h = &self.config.hyper;
        let tokens = self.docs.view().num_tokens();
        let header = CheckpointHeader {
            algorithm: self.config.sampler.name().to_string(),
            num_topics: h.num_topics,
            alpha: self.starting_priors.0,
            beta: self.starting_priors.1,
            seed: self.seed,
            partitions: self.engine.partitions() as u32,
            corpus_checksum: self.corpus.checksum(),
            iteration: self.engine.iteration(),
            priors: self.config.optimize_priors.map(|schedule| LearnedPriors {
                schedule,
                alpha: h.alpha.values().to_vec(),
                beta: h.beta,
            }),
            fixed_counts: self.fixed_checksum,
            sampler_settings: self.config.sampler_settings.recorded(self.config.sampler),
        };
        // Every worker sends its assignments piece by piece; the first writes them.
        let mut w = if self.transport.is_root() {
            Some(CheckpointWriter::create(path, &header, tokens)?)
        } else {
            None
        };
        let mut buf = Vec::new();
        let mut start = 0u64;
        while start < tokens {
            let n = TOKENS_PER_PIECE.min(tokens - start);
            buf.resize(n as usize, 0);
            self.engine.assignments(start, &mut buf)?;
            if let Some(w) = w.as_mut() {
                w.push(&buf)?;
            }
            start += n;
        }
        if let Some(w) = w {
            w.stage()?.persist()?;
        }
        Ok(())
    }

    /// Held-out log-likelihood per token of the model as it stands (a private run: of its
    /// latest release), by document completion with φ of the held-out words only.
    fn heldout_ll(&mut self) -> Result<f64, RunError> {
        let t = Instant::now();
        let ll = self.heldout_ll_inner();
        self.phases.heldout += t.elapsed().as_secs_f64();
        ll
    }

    fn heldout_ll_inner(&mut self) -> Result<f64, RunError> {
        if self.private.is_none() {
            if let Some(ll) = self.heldout_on_engine()? {
                return Ok(ll);
            }
        }
        let v = self.corpus.vocab().len();
        let h = self.config.hyper.clone();
        let words = &self.heldout_words;
        let phi = |totals: &[u64]| {
            Phi::builder_for_words(
                v,
                h.beta,
                totals,
                words,
                topos_model::mem::available_memory(),
            )
        };
        let builder = match self.private.as_ref().and_then(|p| p.releases.latest()) {
            Some(b) => {
                let mut builder = phi(&b.totals)?;
                for &w in words {
                    let (t, c) = b.row(w);
                    builder.push_row(w, t, c);
                }
                builder
            }
            None => {
                let mut builder = phi(&self.engine.topic_totals()?)?;
                let mut piece = WordTopics::default();
                // Only the pieces that hold held-out words.
                for_each_row_piece(
                    self.engine.as_mut(),
                    v,
                    &mut piece,
                    |first, rows| {
                        for i in 0..rows.num_words() as u32 {
                            let (t, c) = rows.row(i);
                            builder.push_row(first + i, t, c);
                        }
                        Ok::<(), RunError>(())
                    },
                    words,
                )?;
                builder
            }
        };
        let phi = builder.finish();
        if self.private.is_some() {
            return self.evaluate_heldout(&phi);
        }
        let corpus = self.corpus.clone();
        evaluate_heldout_with(self.engine.as_mut(), &corpus, &self.config, &phi)
    }

    /// Document completion done by the engine (a GPU's), the host's numbers bit for bit; `None`
    /// where the engine leaves it to the host.
    fn heldout_on_engine(&mut self) -> Result<Option<f64>, RunError> {
        let corpus = self.corpus.clone();
        let opts = FoldInOptions {
            seed: self.config.seed,
            ..FoldInOptions::default()
        };
        match self.engine.heldout_arguments(corpus.heldout(), &opts)? {
            Some(args) => {
                let h = &self.config.hyper;
                let r = topos_model::heldout_from_arguments(h, corpus.heldout(), &args)?;
                Ok(Some(r.ll_per_token))
            }
            None => Ok(None),
        }
    }

    /// Document completion on the held-out documents with `phi` (of their words at least).
    fn evaluate_heldout(&self, phi: &Phi) -> Result<f64, RunError> {
        let opts = FoldInOptions {
            seed: self.config.seed,
            ..FoldInOptions::default()
        };
        let h = self.config.hyper.clone();
        let result = topos_model::heldout_log_likelihood(phi, &h, self.corpus.heldout(), &opts)?;
        Ok(result.ll_per_token)
    }

    /// Runs every remaining iteration and writes the outputs.
    pub fn run_to_end(mut self, observer: &mut dyn Observer) -> Result<Summary, RunError> {
        while self.step(observer)? {}
        self.finish(observer)
    }

    /// Writes the model (and its side file) and reports (a private run was charged at its start).
    pub fn finish(mut self, observer: &mut dyn Observer) -> Result<Summary, RunError> {
        if !self.is_done() {
            return Err(RunError::Invalid(format!(
                "the run is at iteration {} of {}; step it to the end first",
                self.iteration(),
                self.config.iterations
            )));
        }
        let mut silent = Silent;
        let observer: &mut dyn Observer = if self.transport.is_root() {
            observer
        } else {
            &mut silent
        };
        self.release_if_due()?;
        let it = self.engine.iteration();
        let h = self.config.hyper.clone();
        let vocab = self.corpus.vocab().clone();
        let docs = self.docs.clone();
        let view = docs.view();
        let t = Instant::now();
        let train_ll = match self.last_train_ll {
            Some((i, ll)) if i == it => Some(ll),
            _ if self.private.is_none() && !self.config.skip_train_ll => {
                Some(self.engine.log_likelihood()?)
            }
            _ => None,
        };
        self.phases.train_ll += t.elapsed().as_secs_f64();
        let mut heldout_ll = match self.last_heldout_ll {
            Some((i, ll)) if i == it => Some(ll),
            // A private run's model is a release in memory: evaluate it now. An ordinary run's
            // φ is built from the rows read back for the model file, in the same pass.
            _ if self.has_heldout && self.private.is_some() => Some(self.heldout_ll()?),
            _ => None,
        };
        if heldout_ll.is_none() && self.has_heldout && self.private.is_none() {
            let t = Instant::now();
            heldout_ll = self.heldout_on_engine()?;
            self.phases.heldout += t.elapsed().as_secs_f64();
        }
        let heldout_with_model = heldout_ll.is_none() && self.has_heldout;
        if !self.transport.is_root() {
            // The first worker writes the files; the others send it their assignments for the
            // side file, in its three passes, and report nothing.
            if self.config.doc_topics {
                let mut rows = DocRowCounter::new(h.num_topics as usize);
                for _ in 0..3 {
                    self.for_each_doc_piece(view, &mut rows, |_, _| Ok(()))?;
                }
            }
            return Ok(self.summary(it, train_ll, heldout_ll, None, None, None));
        }

        // The model, staged under a temporary name.
        let writing = Instant::now();
        let output = self.config.output.clone();
        let (staged_model, model_checksum, guarantee) = match &self.private {
            Some(p) => {
                let b = p
                    .releases
                    .latest()
                    .expect("a private run has released its model");
                // A private model withholds every fact that is an exact function of the data.
                let provenance = Provenance {
                    algorithm: self.config.sampler.name().to_string(),
                    iterations: it,
                    seed: 0,
                    corpus_checksum: 0,
                    num_docs: 0,
                    num_tokens: 0,
                    sampler_settings: self.config.sampler_settings.recorded(self.config.sampler),
                };
                let g = p.releases.guarantee();
                let mut w = ModelWriter::create(
                    &output,
                    &vocab,
                    h.clone(),
                    &provenance,
                    &b.totals,
                    Some(g.clone()),
                    self.corpus.tokenizer().cloned(),
                )?;
                for v in 0..vocab.len() as u32 {
                    let (t, c) = b.row(v);
                    w.push_word(t, c)?;
                }
                let (staged, sum) = w.stage()?;
                (staged, sum, Some(g))
            }
            None => {
                let provenance = Provenance {
                    algorithm: self.config.sampler.name().to_string(),
                    iterations: it,
                    seed: self.seed,
                    corpus_checksum: self.corpus.checksum(),
                    num_docs: view.len() as u64,
                    num_tokens: view.num_tokens(),
                    sampler_settings: self.config.sampler_settings.recorded(self.config.sampler),
                };
                let totals = self.engine.topic_totals()?;
                let mut w = ModelWriter::create(
                    &output,
                    &vocab,
                    h.clone(),
                    &provenance,
                    &totals,
                    None,
                    self.corpus.tokenizer().cloned(),
                )?;
                let mut phi = if heldout_with_model {
                    Some(Phi::builder_for_words(
                        vocab.len(),
                        h.beta,
                        &totals,
                        &self.heldout_words,
                        topos_model::mem::available_memory(),
                    )?)
                } else {
                    None
                };
                let mut piece = WordTopics::default();
                for_each_row_piece(
                    self.engine.as_mut(),
                    vocab.len(),
                    &mut piece,
                    |first, rows| {
                        for i in 0..rows.num_words() as u32 {
                            let (t, c) = rows.row(i);
                            w.push_word(t, c)?;
                            if let Some(b) = phi.as_mut() {
                                b.push_row(first + i, t, c);
                            }
                        }
                        Ok::<(), RunError>(())
                    },
                    &[],
                )?;
                // The file is completed and synced while the held-out documents are folded in.
                let (corpus, config) = (self.corpus.clone(), &self.config);
                let engine = self.engine.as_mut();
                let (staged, evaluated) = std::thread::scope(|scope| {
                    let staging = scope.spawn(move || w.stage());
                    let evaluated = phi.map(|b| {
                        let t = Instant::now();
                        evaluate_heldout_with(engine, &corpus, config, &b.finish())
                            .map(|ll| (ll, t.elapsed().as_secs_f64()))
                    });
                    (
                        staging.join().expect("staging the model does not panic"),
                        evaluated,
                    )
                });
                let (staged, sum) = staged?;
                if let Some(e) = evaluated {
                    let (ll, seconds) = e?;
                    self.phases.heldout += seconds;
                    heldout_ll = Some(ll);
                }
                (staged, sum, None)
            }
        };
        let doc_topics_path = topos_model::doc_topics_path(&output);
        let staged_doc_topics = if self.config.doc_topics {
            Some(self.stage_doc_topics(&doc_topics_path, model_checksum)?)
        } else {
            None
        };

        // Release the files (a private run's budget was charged at its start).
        let mut ledger = None;
        if let Some(p) = &mut self.private {
            ledger = Some(p.ledger.clone());
            // True per-document counts never sit beside a private model.
            remove_if_present(&doc_topics_path)?;
        }
        if let Some(s) = staged_doc_topics {
            s.persist()?;
        }
        staged_model.persist()?;
        if !self.config.doc_topics {
            remove_if_present(&doc_topics_path)?;
        }
        // The outputs are in place: the checkpoint has served its purpose.
        if self.config.checkpoint_every > 0 || self.config.resume {
            remove_if_present(&self.config.checkpoint_path())?;
        }
        self.phases.outputs = writing.elapsed().as_secs_f64();
        if let Some(x) = self.engine.exchange_report() {
            observer.info(&format!(
                "exchanged counts between {} processes: {} times as sparse rows, {} as dense blocks; {:.1} of {:.1} sampling seconds in communication ({:.1} waiting for the slowest process's sweep), {} sent by this process",
                self.transport.workers(),
                x.sparse,
                x.dense,
                self.phases.communication,
                x.waiting_seconds,
                self.train_seconds,
                Bytes(self.transport.bytes_sent())
            ));
        }
        let p = &self.phases;
        observer.info(&format!(
            "wrote {}; seconds: start {:.2}, sampling {:.2}, training log-likelihood {:.2}, held-out {:.2}, checkpoints {:.2}, outputs {:.2}",
            output.display(),
            p.start,
            self.train_seconds,
            p.train_ll,
            p.heldout,
            p.checkpoints,
            p.outputs
        ));

        let doc_topics_written = self
            .config
            .doc_topics
            .then(|| doc_topics_path.display().to_string());
        Ok(self.summary(
            it,
            train_ll,
            heldout_ll,
            guarantee,
            ledger,
            doc_topics_written,
        ))
    }

    /// The summary of a finished run.
    fn summary(
        &mut self,
        it: u32,
        train_ll: Option<f64>,
        heldout_ll: Option<f64>,
        guarantee: Option<topos_model::Guarantee>,
        ledger: Option<LedgerStatus>,
        doc_topics: Option<String>,
    ) -> Summary {
        let h = self.config.hyper.clone();
        let view = self.docs.view();
        Summary {
            model: self.config.output.display().to_string(),
            algorithm: self.config.sampler.name().to_string(),
            sampler_settings: self
                .config
                .sampler
                .settings()
                .iter()
                .map(|s| {
                    let defaults = self.engine.setting_defaults();
                    (
                        s.key().to_string(),
                        s.value_on(&self.config.sampler_settings, defaults),
                    )
                })
                .collect(),
            topics: h.num_topics,
            alpha: h.alpha,
            beta: h.beta,
            optimize_priors: self.config.optimize_priors,
            iterations: it,
            threads: self.engine.threads(),
            partitions: self.engine.partitions(),
            train_tokens: view.num_tokens(),
            seconds: self.train_seconds,
            tokens_per_second: if self.train_seconds > 0.0 {
                self.sampled_tokens as f64 / self.train_seconds
            } else {
                0.0
            },
            train_ll,
            heldout_ll,
            heldout_perplexity: heldout_ll.map(|ll| (-ll).exp()),
            estimated_memory_bytes: self.estimate.total(),
            peak_memory_bytes: peak_resident_bytes(),
            memory_estimate: self.estimate.clone(),
            noise_scale: self.private.as_ref().map(|p| p.releases.scale()),
            noise_summary: self.private.as_ref().map(|p| p.releases.noise_summary()),
            privacy: guarantee,
            ledger,
            device: device_description(self.engine.as_ref(), self.transport.workers()),
            gpu_plan: self.engine.plan(),
            transport: self.transport.name().to_string(),
            workers: self.transport.workers(),
            rank: self.transport.rank(),
            communicated_bytes: self.transport.bytes_sent(),
            exchange: self.engine.exchange_report(),
            doc_topics,
            phases: self.phases.clone(),
        }
    }

    /// The training documents' topic counts, streamed from the engine's assignments in three
    /// passes (row lengths, topics, counts: the side file's layout).
    fn stage_doc_topics(
        &mut self,
        path: &Path,
        model_checksum: u64,
    ) -> Result<topos_io::Staged, RunError> {
        let k = self.config.hyper.num_topics;
        let docs = self.docs.clone();
        let view = docs.view();
        let mut rows = DocRowCounter::new(k as usize);
        // Pass 1: the number of non-zeros of every row.
        let mut lengths = Vec::new();
        let mut nnz = 0u64;
        self.for_each_doc_piece(view, &mut rows, |r, _| {
            nnz += r.topics.len() as u64;
            lengths.extend(r.lengths.iter().copied());
            Ok(())
        })?;
        let mut w = DocTopicsWriter::create(path, model_checksum, k, view.len() as u64, nnz)?;
        w.push_lengths(lengths)?;
        self.for_each_doc_piece(view, &mut rows, |r, _| Ok(w.push_topics(&r.topics)?))?;
        self.for_each_doc_piece(view, &mut rows, |r, _| Ok(w.push_counts(&r.counts)?))?;
        Ok(w.stage()?)
    }

    /// Calls `f` with the document-topic rows of consecutive pieces of documents.
    fn for_each_doc_piece(
        &mut self,
        view: Docs<'_>,
        rows: &mut DocRowCounter,
        mut f: impl FnMut(&DocRowCounter, std::ops::Range<usize>) -> Result<(), RunError>,
    ) -> Result<(), RunError> {
        let offsets = view.offsets();
        let mut z = Vec::new();
        let mut kept = topos_model::DocTopics {
            num_topics: 0,
            offsets: Vec::new(),
            topics: Vec::new(),
            counts: Vec::new(),
        };
        let mut d = 0usize;
        while d < view.len() {
            // Whole documents, about a piece of tokens.
            let start = offsets[d];
            let mut e = offsets.partition_point(|&o| o <= start + TOKENS_PER_PIECE) - 1;
            e = e.clamp(d + 1, view.len());
            let end = offsets[e];
            if !self.engine.doc_topic_rows(d..e, &mut kept)? {
                z.resize((end - start) as usize, 0);
                self.engine.assignments(start, &mut z)?;
                rows.count(&offsets[d..=e], &z);
            } else {
                rows.take(&kept);
            }
            f(rows, d..e)?;
            d = e;
        }
        Ok(())
    }
}

/// Sparse document-topic rows of a piece of documents.
struct DocRowCounter {
    scratch: Vec<u32>,
    touched: Vec<u16>,
    lengths: Vec<u64>,
    topics: Vec<u16>,
    counts: Vec<u32>,
}

impl DocRowCounter {
    fn new(k: usize) -> Self {
        Self {
            scratch: vec![0; k],
            touched: Vec::new(),
            lengths: Vec::new(),
            topics: Vec::new(),
            counts: Vec::new(),
        }
    }

    /// The rows an engine kept ([`Engine::doc_topic_rows`]).
    fn take(&mut self, kept: &topos_model::DocTopics) {
        self.lengths.clear();
        self.lengths
            .extend(kept.offsets.windows(2).map(|w| w[1] - w[0]));
        self.topics.clone_from(&kept.topics);
        self.counts.clone_from(&kept.counts);
    }

    /// Rows of the documents whose (absolute) offsets are `offsets`, from their tokens' topics.
    fn count(&mut self, offsets: &[u64], z: &[u16]) {
        self.lengths.clear();
        self.topics.clear();
        self.counts.clear();
        let base = offsets[0];
        for w in offsets.windows(2) {
            let before = self.topics.len();
            crate::counts::count_row(
                z[(w[0] - base) as usize..(w[1] - base) as usize]
                    .iter()
                    .copied(),
                &mut self.scratch,
                &mut self.touched,
                &mut self.topics,
                &mut self.counts,
            );
            self.lengths.push((self.topics.len() - before) as u64);
        }
    }
}

/// Document completion on `corpus`'s held-out documents with `phi` (of their words at least)
/// and the run's seed, by the engine when it takes a φ the host built (a GPU's, for a sparse φ),
/// else on the host: the same numbers either way.
fn evaluate_heldout_with(
    engine: &mut dyn Engine,
    corpus: &Corpus,
    config: &RunConfig,
    phi: &Phi,
) -> Result<f64, RunError> {
    let opts = FoldInOptions {
        seed: config.seed,
        ..FoldInOptions::default()
    };
    if let Some(args) = engine.heldout_arguments_with_phi(corpus.heldout(), phi, &opts)? {
        let r = topos_model::heldout_from_arguments(&config.hyper, corpus.heldout(), &args)?;
        return Ok(r.ll_per_token);
    }
    let r = topos_model::heldout_log_likelihood(phi, &config.hyper, corpus.heldout(), &opts)?;
    Ok(r.ll_per_token)
}

/// Every one of `n` devices of `device` opened at once (an engine each, with its share of the
/// documents), as one engine.
fn open_group(
    device: &'static dyn Device,
    n: usize,
    setup: &EngineSetup,
) -> Result<Box<dyn Engine>, RunError> {
    use crate::transport::InProcess;
    let transports: Vec<Arc<InProcess>> = InProcess::group(n).into_iter().map(Arc::new).collect();
    let setups: Vec<EngineSetup> = transports
        .iter()
        .map(|t| {
            let mut member = setup.clone();
            member.transport = t.clone();
            member
        })
        .collect();
    let opened =
        crate::engine_group::on_each_member(&transports, setups, "opening a device", |i, s, _| {
            device.open(Some(i), s)
        });
    let mut members = Vec::with_capacity(n);
    for (i, r) in opened.into_iter().enumerate() {
        members.push(r.map_err(|e| RunError::Invalid(format!("{}:{i}: {e}", device.name())))?);
    }
    Ok(Box::new(crate::engine_group::EngineGroup::new(
        members, transports,
    )))
}

/// What a private run's charge records as its query: the settings that decide its guarantee
/// (the cap as "chosen" when the run chooses it after charging).
fn charge_query(o: &PrivateOptions, topics: u32) -> String {
    match o.mechanism {
        crate::PrivateMechanism::Laplace => format!(
            "train --private -k {topics} --iters {} --releases {} --epsilon {} --max-doc-tokens {}",
            o.iterations,
            o.releases,
            o.epsilon.get(),
            if o.cap_to_choose() {
                "chosen".to_string()
            } else {
                o.max_doc_tokens.to_string()
            }
        ),
        crate::PrivateMechanism::Gaussian { l2_clip, .. } => format!(
            "train --private --mechanism gaussian -k {topics} --iters {} --releases {} --epsilon {} --delta {} --l2-clip {l2_clip}",
            o.iterations,
            o.releases,
            o.epsilon.get(),
            o.delta
        ),
    }
}

/// The device line of the progress and the summary: the engine's device and, under several
/// processes, that each of them runs one ("cuda:0 (NVIDIA H200) in each of 2 processes").
fn device_description(engine: &dyn Engine, workers: usize) -> String {
    let device = engine.describe();
    if workers > 1 {
        format!("{device} in each of {workers} processes")
    } else {
        device
    }
}

/// The fault-injection switch of the multi-process tests: `TOPOS_FAULT=RANK:ITERATION` makes
/// worker RANK fail while sampling iteration ITERATION, as a worker whose device errors would.
fn fault_if_asked(rank: usize, iteration: u32) -> Result<(), RunError> {
    let Ok(spec) = std::env::var("TOPOS_FAULT") else {
        return Ok(());
    };
    let parsed = spec
        .split_once(':')
        .and_then(|(r, i)| Some((r.parse::<usize>().ok()?, i.parse::<u32>().ok()?)));
    match parsed {
        Some((r, i)) if (r, i) == (rank, iteration) => Err(RunError::Invalid(format!(
            "injected fault (TOPOS_FAULT={spec}) at iteration {iteration}"
        ))),
        Some(_) => Ok(()),
        None => Err(RunError::Invalid(format!(
            "TOPOS_FAULT={spec:?}: expected RANK:ITERATION"
        ))),
    }
}

/// The peak resident memory of this process (`VmHWM` in `/proc/self/status`), where the system
/// reports it.
pub fn peak_resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn remove_if_present(path: &Path) -> Result<(), RunError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(cause) => Err(RunError::Output {
            path: path.display().to_string(),
            cause,
        }),
    }
}
