//! LDA training: the run, the samplers, the devices and the transports.
//!
//! * [`run`]: a whole training run as a library type: configuration → [`run::Run`] → observer
//!   callbacks ([`run::Observer`]) for progress, log lines and the summary. The CLI, the Python
//!   package and the report are thin layers over it.
//! * [`sampler`] and [`samplers`]: what a sampler is (one trait) and the registry of them, one
//!   folder per sampler with one file per device (`esca`: SaberLDA's ESCA; `cgs`: sparse
//!   collapsed Gibbs, the reference and the default).
//! * [`device`] and [`engine`]: where a run executes (the registry: [`cpu`], and [`cuda`] with
//!   the `cuda` feature or a disabled stub without it) and what a device does in a run (the
//!   iteration, reading state back in pieces).
//! * [`transport`]: the collectives of a run's workers (the registry: `local`, `mpi`);
//!   [`shard`]: one process's share of the documents in a multi-process run.
//! * [`layout`]: the PDOW layout (partition by document, order by word), SaberLDA §3.1.4;
//!   [`counts`]: the M-step, counts rebuilt from the assignments; [`loglik`]: training
//!   log-likelihood.
//! * [`checkpoint`]: resumable state; [`memory`]: host memory estimates.
//! * [`private`]: differentially private training (`--private`): capped documents, the sampler
//!   reading noisy releases of the word-topic counts; proof sketch there.
//! * [`synthetic`]: corpora drawn from the LDA generative model with known topics.

pub mod checkpoint;
pub mod counts;
pub mod cpu;
pub mod cuda;
pub mod device;
pub mod engine;
pub mod engine_group;
pub mod exchange;
pub mod fixed_sum;
pub mod layout;
pub mod loglik;
pub mod memory;
pub mod priors;
pub mod private;
pub mod run;
pub mod sampler;
pub mod samplers;
pub mod seeds;
pub mod settings;
pub mod shard;
pub mod synthetic;
pub mod transport;
pub mod update;

pub use checkpoint::{Checkpoint, CheckpointHeader};
pub use cpu::engine::{IterationStats, TrainOptions, Trainer};
pub use device::{Device, DeviceChoice, DEVICES};
pub use engine::{DeviceOptions, Engine, EngineSetup, Start, TrainDocs};
pub use private::{BudgetSplit, PrivateMechanism, PrivateOptions, Releases};
pub use run::{LogLine, Observer, Run, RunConfig, RunError, Summary};
pub use sampler::{
    sampler_named, EzldaDepth, MhSteps, Sampler, SamplerInfo, SamplerSettings, Setting,
    SettingDefaults,
};
pub use samplers::SAMPLERS;
pub use transport::{Transport, TransportKind, TRANSPORTS};

/// Why training could not start, go on or finish.
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
    #[error("a training document has {found} tokens but private training was promised at most {cap} per document; cap the documents first")]
    DocumentOverCap { found: usize, cap: u32 },
    #[error(transparent)]
    Privacy(#[from] topos_privacy::PrivacyError),
    #[error(transparent)]
    Transport(#[from] transport::TransportError),
    /// An accelerator failed (the message says which call and what to do).
    #[error("{0}")]
    Device(String),
    /// What the device or settings cannot do (the message says what to use instead).
    #[error("{0}")]
    Unsupported(String),
}
