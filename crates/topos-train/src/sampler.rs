//! What a sampler is, for every part of Topos that must know (the run, the devices, checkpoints,
//! the model file, memory estimates, `--help`, `topos algos`, the private-training rule): one
//! trait, one static registry ([`crate::samplers::SAMPLERS`], one line per sampler), and one
//! file per device that implements it (`samplers/NAME/cpu.rs`, `samplers/NAME/gpu.rs`).
//!
//! Nothing outside `samplers/` matches on a sampler's name: a new sampler is a folder there and
//! a line in the registry (CONTRIBUTING.md, "Add a sampler").

use crate::counts::WordTopics;
use crate::layout::Partition;
pub use crate::samplers::mfm::counters::CounterWidth;
use topos_corpus::Docs;
use topos_model::DocTopics;

/// How far a sampler's model is a function of its inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Determinism {
    /// The same seed gives the same model for any number of threads and any partitioning
    /// (every token reads only frozen counts and its own counter-based random numbers).
    AnyThreadsAnyPartitions,
    /// The same model for any number of threads at a given number of partitions (which depends
    /// only on the corpus unless set): counts change within a partition as it is sampled.
    AnyThreadsFixedPartitions,
}

impl Determinism {
    /// For people.
    pub fn describe(self) -> &'static str {
        match self {
            Determinism::AnyThreadsAnyPartitions => {
                "same seed, same model for any threads, partitions and GPU chunking"
            }
            Determinism::AnyThreadsFixedPartitions => {
                "same seed, same model for any threads at a fixed number of partitions"
            }
        }
    }
}

/// What a sampler's draws follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Exactness {
    /// The collapsed Gibbs conditional with the token's own assignment removed.
    Exact,
    /// An approximation of it (say which in the sampler's summary).
    Approximate,
}

/// What the GPU engine's sampling kernel must do for a sampler (`samplers/NAME/gpu.rs`). Plain
/// data, so it exists in builds without the `cuda` feature too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuKernelSpec {
    /// Remove the token's own assignment from its document's, word's and topic's counts
    /// (collapsed Gibbs against the previous iteration's counts), or keep it (ESCA).
    pub exclude_own_assignment: bool,
    /// ezLDA's three-branch sampling (thesis §1.3.2): each word's most likely topic as a third
    /// branch, tokens that provably draw it skipping their document row (needs
    /// `exclude_own_assignment`: it is built on the exact draw).
    pub three_branch: bool,
    /// mhLDA's Metropolis-Hastings chain per token (thesis ch. 2, Eq. 2.1-2.2; the kernel
    /// `sample_mh`) against the exact conditional, with the run's `--mh-steps` proposal pairs,
    /// instead of a direct draw (needs `exclude_own_assignment`: its target is fcgs's).
    pub metropolis_hastings: bool,
}

/// A sampler: the registry entry. Every method is a fact about the algorithm, not about a run.
pub trait Sampler: Sync {
    /// The name on the command line, in checkpoints and in model files.
    fn name(&self) -> &'static str;
    /// One line for `--help` and `topos algos`.
    fn summary(&self) -> &'static str;
    /// When to choose it, for `topos algos`.
    fn when_to_use(&self) -> &'static str;
    /// Where its algorithm comes from (paper and section).
    fn reference(&self) -> &'static str;
    fn exactness(&self) -> Exactness;
    fn determinism(&self) -> Determinism;
    /// Whether `--private` may use it: every token must read only its own document and counts
    /// frozen for the iteration (which a noisy release can replace).
    fn supports_private(&self) -> bool;
    /// What it keeps between iterations, for people.
    fn state(&self) -> &'static str;
    /// Bytes of state it keeps per token between iterations (the assignment: 2 bytes).
    fn state_bytes_per_token(&self) -> u64 {
        2
    }
    /// CPU working memory beyond the shared arrays (see [`crate::memory`]), by item.
    fn cpu_memory(&self, shape: &crate::memory::RunShape) -> Vec<(&'static str, u64)>;
    /// Document partitions of a CPU run of `tokens` tokens on `threads` threads.
    fn default_partitions(&self, tokens: u64, threads: usize) -> usize;
    /// The CPU implementation: a sweep over the assignments that the CPU engine drives, or, for
    /// a sampler whose state is not the assignments (`mfm`), an engine of its own.
    fn cpu(&self) -> CpuImplementation;
    /// Whether it keeps every token's topic between iterations (what checkpoints, `--resume`,
    /// learned priors and several workers are built on). `mfm` does not: that is its saving.
    fn keeps_assignments(&self) -> bool {
        true
    }
    /// The GPU implementation, if it has one.
    fn gpu(&self) -> Option<GpuImplementation>;
    /// The run settings it takes ([`SamplerSettings`]; `topos train --ezlda-g`, `--mh-steps`):
    /// none by default. A setting given for a sampler that does not list it is refused.
    fn settings(&self) -> &'static [&'static Setting] {
        &[]
    }
}

/// How a sampler runs on the CPU.
#[derive(Clone, Copy)]
pub enum CpuImplementation {
    /// A sweep over the assignments, driven by the CPU engine ([`crate::Trainer`]).
    Sweep(&'static dyn CpuSampler),
    /// An engine of its own, opened by this function (its state is not the assignments).
    Engine(fn(crate::engine::EngineSetup) -> Result<Box<dyn crate::Engine>, crate::TrainError>),
}

impl CpuImplementation {
    /// The sweep, for a sampler the CPU engine drives.
    pub fn sweep(self) -> Option<&'static dyn CpuSampler> {
        match self {
            CpuImplementation::Sweep(s) => Some(s),
            CpuImplementation::Engine(_) => None,
        }
    }
}

/// How a sampler runs on a GPU.
#[derive(Clone, Copy)]
pub enum GpuImplementation {
    /// What the shared GPU engine's sampling kernel does for it (`cuda/`).
    Kernel(GpuKernelSpec),
    /// An engine of its own, opened on GPU `ordinal` by this function (`mfm`, whose state is
    /// not the assignments the shared engine is built around).
    Engine(OpenGpuEngine),
}

/// Opens a sampler's own GPU engine on GPU `ordinal` (`None`: the default one).
pub type OpenGpuEngine = fn(
    Option<usize>,
    crate::engine::EngineSetup,
) -> Result<Box<dyn crate::Engine>, crate::TrainError>;

impl GpuImplementation {
    /// The kernel spec, for a sampler the shared GPU engine runs.
    pub fn kernel(self) -> Option<GpuKernelSpec> {
        match self {
            GpuImplementation::Kernel(k) => Some(k),
            GpuImplementation::Engine(_) => None,
        }
    }
}

/// What one CPU sweep reads: the counts of the previous iteration (frozen) and the run's keys.
#[derive(Clone, Copy)]
pub struct SweepInput<'a> {
    pub docs: Docs<'a>,
    /// Document-topic counts of the current assignments, when [`CpuSampler::needs_doc_topics`].
    pub doc_topics: Option<&'a DocTopics>,
    /// Word-topic counts the sweep samples from (a noisy release in a private run).
    pub word_topics: &'a WordTopics,
    /// The document prior, one α_k per topic (learned by `--optimize-priors`, else symmetric).
    pub alpha: &'a topos_model::Alpha,
    pub beta: f64,
    pub seed: u64,
    /// The iteration being sampled (1 for the first): keys the random numbers.
    pub iteration: u32,
    /// The run's per-sampler settings (each sampler reads its own).
    pub settings: &'a SamplerSettings,
}

/// A sampler on the CPU (`samplers/NAME/cpu.rs`).
pub trait CpuSampler: Sync {
    /// Whether each sweep reads the document-topic counts of the whole corpus rebuilt from the
    /// assignments (ESCA), or keeps its own rows per partition (CGS), which saves a pass.
    fn needs_doc_topics(&self) -> bool;
    /// Derives what every partition's sweep reads this iteration (normalizers, trees).
    fn prepare<'a>(&self, input: SweepInput<'a>) -> Box<dyn PartitionSweep + 'a>;
}

/// One iteration's sweep, run on every partition in parallel.
pub trait PartitionSweep: Sync {
    /// Samples every token of `partition`, writing the new topics into `z` (the partition's
    /// slice of the assignments, corpus order).
    fn sweep(&self, partition: &Partition, z: &mut [u16]);
    /// What the tokens of every [`PartitionSweep::sweep`] so far did, for a sampler that skips
    /// work on some tokens (`ezlda`); `None` (the default): it reports nothing.
    fn counters(&self) -> Option<SweepCounters> {
        None
    }
}

/// What one iteration's tokens did in a sampler that can skip work on a token (ezLDA's
/// three-branch sampling, thesis §1.3): shown in the progress line and written to `--log`.
/// Integer counts, so summing them over partitions, threads, GPU chunks or processes gives the
/// same numbers in any order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SweepCounters {
    /// Tokens sampled.
    pub tokens: u64,
    /// Of them, those whose topic was settled before their document branch (S′) was built:
    /// the bound S_est already placed their random number in the max-topic branch.
    pub skipped_construction: u64,
    /// Of them, those drawn into the max-topic branch, so without a final sampling in the
    /// document or prior branches (includes `skipped_construction`).
    pub skipped_final: u64,
}

impl SweepCounters {
    /// The sum of `self` and `other`.
    pub fn plus(self, other: SweepCounters) -> SweepCounters {
        SweepCounters {
            tokens: self.tokens + other.tokens,
            skipped_construction: self.skipped_construction + other.skipped_construction,
            skipped_final: self.skipped_final + other.skipped_final,
        }
    }

    /// Fraction of the tokens that skipped the final sampling (0 with no tokens).
    pub fn skipped_final_fraction(&self) -> f64 {
        self.skipped_final as f64 / self.tokens.max(1) as f64
    }

    /// Fraction of the tokens that skipped the construction of S′ (0 with no tokens).
    pub fn skipped_construction_fraction(&self) -> f64 {
        self.skipped_construction as f64 / self.tokens.max(1) as f64
    }
}

pub use crate::samplers::ezlda::EzldaDepth;
pub use crate::samplers::mh::MhSteps;
pub use crate::settings::{SamplerSettings, Setting, SettingDefaults, SettingError, SettingValues};

/// Why a sampler name was refused.
#[derive(Debug, thiserror::Error)]
#[error("unknown sampler {name:?}; the samplers are {known} (see `topos algos`)")]
pub struct UnknownSampler {
    pub name: String,
    pub known: String,
}

/// The sampler named `name`.
pub fn sampler_named(name: &str) -> Result<&'static dyn Sampler, UnknownSampler> {
    crate::samplers::SAMPLERS
        .iter()
        .copied()
        .find(|s| s.name() == name)
        .ok_or_else(|| UnknownSampler {
            name: name.to_string(),
            known: sampler_names().join(", "),
        })
}

/// The registered samplers' names, in registry order (the first is the default).
pub fn sampler_names() -> Vec<&'static str> {
    crate::samplers::SAMPLERS.iter().map(|s| s.name()).collect()
}

/// The default sampler: the first of the registry.
pub fn default_sampler() -> &'static dyn Sampler {
    crate::samplers::SAMPLERS[0]
}

/// The default sampler of a private run: the first that supports it.
pub fn default_private_sampler() -> &'static dyn Sampler {
    crate::samplers::SAMPLERS
        .iter()
        .copied()
        .find(|s| s.supports_private())
        .expect("a registered sampler supports private training")
}

/// What `--algo auto` chose, and why (printed at the start of training).
#[derive(Clone, Debug)]
pub struct AutoChoice {
    pub sampler: &'static dyn Sampler,
    pub reason: &'static str,
}

/// `--algo auto`: the sampler for a run of `topics` topics over documents of `mean_doc_len`
/// tokens on `device`, private or not. The rule, from BENCHMARKS.md ("fcgs", held-out at equal
/// iterations on three corpora and tokens/s on one CPU thread and on an H100):
///
/// 1. `--private`: the only sampler private training accepts (`esca`).
/// 2. A GPU named (`cuda`, `cuda:N`, `cuda:all`): `fcgs`. On a GPU `cgs` runs the same kernel;
///    `esca` is 1.02-1.2x faster there over 200 iterations but ends 0.08-0.22 nats/token worse.
/// 3. K >= 1,000 and documents averaging under 20 tokens: on the CPU named (`--device cpu`),
///    `ezlda` (fcgs's exact conditional, 1.1-1.7x fcgs's tokens/s on one thread at K = 1,000 and
///    within 0.011 nats/token of `cgs` at K = 100: BENCHMARKS.md, "The `ezlda` sampler on the
///    CPU"); with `--device auto`, which may land on a GPU where ezlda runs at 0.85-0.9x fcgs's
///    speed, `fcgs` (8-word documents at K = 1,000: 0.96-1.2x `cgs`'s tokens/s on one thread, and
///    what a GPU runs for `cgs`).
/// 4. Otherwise `cgs` (the best held-out value at equal iterations on every corpus measured, and
///    on one thread the fastest at K = 100 or on 20 Newsgroups at K = 1,000; a GPU runs it as
///    fcgs).
///
/// It never picks a sampler the table shows both slower and worse than another.
pub fn auto_sampler(
    private: bool,
    device: crate::DeviceChoice,
    topics: u32,
    mean_doc_len: f64,
) -> AutoChoice {
    let named = |name: &str| sampler_named(name).expect("a registered sampler");
    let (gpu, cpu) = match device {
        crate::DeviceChoice::Named { device, .. } | crate::DeviceChoice::Every { device } => {
            (device.name() != "cpu", device.name() == "cpu")
        }
        crate::DeviceChoice::Auto => (false, false),
    };
    if private {
        AutoChoice {
            sampler: default_private_sampler(),
            reason: "--private: the only sampler private training accepts",
        }
    } else if gpu {
        AutoChoice {
            sampler: named("fcgs"),
            reason: "a GPU: the exact conditional (cgs runs the same kernel there); esca is 1.02-1.2x faster but ends 0.08-0.22 nats/token worse",
        }
    } else if topics >= 1_000 && mean_doc_len < 20.0 && cpu {
        AutoChoice {
            sampler: named("ezlda"),
            reason: "K >= 1,000 and short documents on the CPU: fcgs's exact conditional with the three-branch skips, 1.1-1.7x fcgs's speed, within 0.011 nats/token of cgs",
        }
    } else if topics >= 1_000 && mean_doc_len < 20.0 {
        AutoChoice {
            sampler: named("fcgs"),
            reason: "K >= 1,000 and short documents, device chosen at run time: about cgs's speed on the CPU, what a GPU runs for cgs, within 0.01 nats/token",
        }
    } else {
        AutoChoice {
            sampler: named("cgs"),
            reason: "the best model at equal iterations, and the fastest on one CPU thread at this shape (a GPU runs it as fcgs)",
        }
    }
}

impl std::fmt::Debug for dyn Sampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A sampler's registry entry as data, for `topos algos --json` and the Python package.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SamplerInfo {
    pub name: &'static str,
    pub default: bool,
    pub summary: &'static str,
    pub when_to_use: &'static str,
    pub reference: &'static str,
    pub exactness: Exactness,
    pub determinism: Determinism,
    pub private_training: bool,
    pub devices: Vec<&'static str>,
    pub state: &'static str,
    pub state_bytes_per_token: u64,
    /// The run settings it takes (`topos train --ezlda-g`, `--mh-steps`).
    pub settings: Vec<SettingInfo>,
}

/// A per-sampler setting as `topos algos` shows it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SettingInfo {
    /// The `topos train` flag.
    pub flag: &'static str,
    /// The Python keyword of `topos.train`.
    pub keyword: &'static str,
    /// The name model files and checkpoints record it under.
    pub key: &'static str,
    /// The default (on the GPU where it depends on the device).
    pub default: u32,
    /// The default on the CPU (the same as `default` unless it depends on the device).
    pub cpu_default: u32,
    pub min: u32,
    pub max: u32,
    /// The values it takes, for people (`1..64`, `exact|approx8|approx4`).
    pub choices: String,
    /// The default, for people (`exact` for `--counters`).
    pub shown_default: String,
    /// Whether the model depends on it (models and checkpoints then record it).
    pub changes_model: bool,
    pub description: &'static str,
}

impl SettingInfo {
    /// The entry of `s`.
    pub fn of(s: &Setting) -> Self {
        let (min, max) = s.range();
        SettingInfo {
            flag: s.flag(),
            keyword: s.keyword,
            key: s.key(),
            default: s.default_value(),
            cpu_default: s.default_on(SettingDefaults::Cpu),
            min,
            max,
            choices: s.choices(),
            shown_default: s.show(s.default_value()),
            changes_model: s.changes_model(),
            description: s.describe(),
        }
    }
}

impl SamplerInfo {
    /// The entry of `s`.
    pub fn of(s: &'static dyn Sampler) -> Self {
        let devices = crate::device::DEVICES
            .iter()
            .filter(|d| d.runs(s))
            .map(|d| d.name())
            .collect();
        SamplerInfo {
            name: s.name(),
            default: s.name() == default_sampler().name(),
            summary: s.summary(),
            when_to_use: s.when_to_use(),
            reference: s.reference(),
            exactness: s.exactness(),
            determinism: s.determinism(),
            private_training: s.supports_private(),
            devices,
            state: s.state(),
            state_bytes_per_token: s.state_bytes_per_token(),
            settings: s.settings().iter().map(|x| SettingInfo::of(x)).collect(),
        }
    }
}

#[cfg(test)]
mod auto_tests {
    use super::*;
    use crate::DeviceChoice;

    #[test]
    fn auto_follows_its_documented_rule() {
        let cpu = DeviceChoice::Named {
            device: crate::device::DEVICES
                .iter()
                .copied()
                .find(|d| d.name() == "cpu")
                .unwrap(),
            ordinal: None,
        };
        let gpu = DeviceChoice::Every {
            device: crate::device::DEVICES
                .iter()
                .copied()
                .find(|d| d.name() != "cpu")
                .unwrap(),
        };
        let pick = |private, device, k, len| auto_sampler(private, device, k, len).sampler.name();
        assert_eq!(pick(true, gpu, 1000, 8.0), "esca");
        assert_eq!(pick(false, gpu, 100, 300.0), "fcgs");
        assert_eq!(pick(false, cpu, 100, 300.0), "cgs");
        assert_eq!(pick(false, cpu, 100, 8.0), "cgs");
        assert_eq!(pick(false, cpu, 1000, 300.0), "cgs");
        assert_eq!(pick(false, cpu, 1000, 8.0), "ezlda");
        assert_eq!(pick(false, DeviceChoice::Auto, 1000, 8.0), "fcgs");
        assert_eq!(pick(false, DeviceChoice::Auto, 50, 8.0), "cgs");
    }
}
