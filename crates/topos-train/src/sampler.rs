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
use std::collections::BTreeMap;
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
    fn settings(&self) -> &'static [Setting] {
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
    pub settings: SamplerSettings,
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

/// A per-sampler setting of a run: one variant per knob, its flag, bounds and default. A sampler
/// lists those it takes ([`Sampler::settings`]); [`SamplerSettings`] holds the values a run asks
/// for, and the CPU sweep reads them from [`SweepInput::settings`]. Adding one: a variant here,
/// a field of [`SamplerSettings`] with its validated type, its flag in `topos train`, and the
/// sampler's `settings()` (CONTRIBUTING.md, "Add a sampler").
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Setting {
    /// ezLDA's bound depth g ([`EzldaDepth`]).
    EzldaG,
    /// mhLDA's proposal pairs per token and iteration ([`MhSteps`]).
    MhSteps,
    /// Mean-for-Mode's counter width in bits ([`CounterWidth`]: 32 exact, 8 or 4).
    Counters,
}

impl Setting {
    /// Every setting.
    pub const ALL: [Setting; 3] = [Setting::EzldaG, Setting::MhSteps, Setting::Counters];

    /// The name checkpoints and model files record it under.
    pub fn key(self) -> &'static str {
        match self {
            Setting::EzldaG => "ezlda_g",
            Setting::MhSteps => "mh_steps",
            Setting::Counters => "counter_bits",
        }
    }
    /// The `topos train` flag.
    pub fn flag(self) -> &'static str {
        match self {
            Setting::EzldaG => "--ezlda-g",
            Setting::MhSteps => "--mh-steps",
            Setting::Counters => "--counters",
        }
    }
    /// What it does, for `topos algos` and `--help`.
    pub fn describe(self) -> &'static str {
        match self {
            Setting::EzldaG => "depth g of the bound S_est (thesis Eq. 1.10): the g most popular topics of each word are looked up in the document, so larger g skips more document branches at more cost per token; a speed knob only, the model is the same for every g (CPU; the GPU kernel implements g = 2)",
            Setting::MhSteps => "Metropolis-Hastings proposal pairs (one word, one document proposal) per token and iteration (default 4 on the GPU, 2 on the CPU, whose sweep refreshes the documents' counts between its word-proposal and document-proposal phases); more mix better per iteration and cost more; changes the model, so the model and checkpoints record it when given",
            Setting::Counters => "how wide each of Mean-for-Mode's counts is kept: exact (32 bits), approx8 or approx4 (Morris's geometric scale, each count rounded without bias when the sweep ends, Tristan et al. §4.1); the model records it",
        }
    }
    /// Its value when not given, the paper's (the GPU's, where the CPU's differs:
    /// [`Setting::default_on`]).
    pub fn default_value(self) -> u32 {
        match self {
            Setting::EzldaG => u32::from(EzldaDepth::DEFAULT.0),
            Setting::MhSteps => MhSteps::DEFAULT.0,
            Setting::Counters => CounterWidth::Exact.bits(),
        }
    }
    /// Its smallest and largest values.
    pub fn range(self) -> (u32, u32) {
        match self {
            Setting::EzldaG => (1, u32::from(EzldaDepth::MAX)),
            Setting::MhSteps => (1, MhSteps::MAX),
            Setting::Counters => (4, 32),
        }
    }
    /// Its value when not given, on a device that takes `defaults`.
    pub fn default_on(self, defaults: SettingDefaults) -> u32 {
        match (self, defaults) {
            (Setting::MhSteps, SettingDefaults::Cpu) => MhSteps::CPU_DEFAULT.0,
            _ => self.default_value(),
        }
    }
    /// Whether its value when not given depends on the device (`--mh-steps`: 4 on the GPU,
    /// [`MhSteps::CPU_DEFAULT`] on the CPU): then a value given is recorded even when it equals
    /// [`Setting::default_value`], so that a record never depends on the device it is read on.
    pub fn default_depends_on_device(self) -> bool {
        SettingDefaults::ALL
            .iter()
            .any(|&d| self.default_on(d) != self.default_value())
    }
    /// Whether the model depends on it (then checkpoints and models record it).
    pub fn changes_model(self) -> bool {
        match self {
            Setting::EzldaG => false,
            Setting::MhSteps | Setting::Counters => true,
        }
    }
    /// A value of it for people: `approx8` for `--counters`, the number otherwise.
    pub fn show(self, value: u32) -> String {
        match (self, CounterWidth::from_bits(value)) {
            (Setting::Counters, Some(w)) => w.name().to_string(),
            _ => value.to_string(),
        }
    }
    /// The values it takes, for people: `1..64`, or `exact|approx8|approx4`.
    pub fn choices(self) -> String {
        match self {
            Setting::Counters => CounterWidth::ALL.map(|w| w.name()).join("|"),
            _ => {
                let (lo, hi) = self.range();
                format!("{lo}..{hi}")
            }
        }
    }
    /// The value `settings` asks for, if it sets this one.
    pub fn given(self, settings: &SamplerSettings) -> Option<u32> {
        match self {
            Setting::EzldaG => settings.ezlda_g.map(|g| u32::from(g.0)),
            Setting::MhSteps => settings.mh_steps.map(|s| s.0),
            Setting::Counters => settings.counters.map(CounterWidth::bits),
        }
    }
    /// The value `settings` runs with (the default when not given).
    pub fn value(self, settings: &SamplerSettings) -> u32 {
        self.given(settings).unwrap_or_else(|| self.default_value())
    }
    /// Its value in a run on a device that takes `defaults` for settings left out.
    pub fn value_on(self, settings: &SamplerSettings, defaults: SettingDefaults) -> u32 {
        self.given(settings)
            .unwrap_or_else(|| self.default_on(defaults))
    }
    /// The setting recorded as `key`.
    pub fn from_key(key: &str) -> Option<Setting> {
        Setting::ALL.into_iter().find(|s| s.key() == key)
    }
    /// Sets it to `value` in `settings`, checked.
    pub fn set(self, settings: &mut SamplerSettings, value: u32) -> Result<(), SettingError> {
        match self {
            Setting::EzldaG => settings.ezlda_g = Some(EzldaDepth::new(value)?),
            Setting::MhSteps => settings.mh_steps = Some(MhSteps::new(value)?),
            Setting::Counters => {
                settings.counters = Some(CounterWidth::from_bits(value).ok_or_else(|| {
                    SettingError(format!(
                        "--counters must be {}, got {value} bits",
                        Setting::Counters.choices().replace('|', ", ")
                    ))
                })?)
            }
        }
        Ok(())
    }
}

/// Whose defaults the sampler settings a run leaves out take, where they differ between devices
/// ([`Setting::default_on`]; `--mh-steps` is 2 on the CPU, whose sweep refreshes the documents'
/// counts between its two proposal phases, and 4 on the GPU). Each engine says which its device
/// takes ([`crate::Engine::setting_defaults`]); a device with defaults of its own is a variant
/// here and an arm in [`Setting::default_on`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SettingDefaults {
    Cpu,
    Gpu,
}

impl SettingDefaults {
    /// Every kind of defaults.
    pub const ALL: [SettingDefaults; 2] = [SettingDefaults::Cpu, SettingDefaults::Gpu];
}

/// Why a sampler setting was refused (one line that names the flag).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SettingError(pub String);

fn out_of_range(setting: Setting, value: impl std::fmt::Display) -> SettingError {
    let (lo, hi) = setting.range();
    SettingError(format!(
        "{} must be a whole number from {lo} to {hi}, got {value}",
        setting.flag()
    ))
}

/// ezLDA's bound depth g of Eq. (1.10), 1 to [`EzldaDepth::MAX`]: per word, the bound reads
/// the document's counts at the g most popular topics K₁…K_g and bounds the rest by a_{g+1}
/// (`samplers/ezlda/cpu.rs`). The thesis uses 2 ("significantly better than g = 1 with similar
/// overhead", §1.3.2), the default. The maximum, 16: every token pays g binary searches in its
/// document's row before it may skip building that row, and ezLDA is chosen for documents
/// averaging under 20 tokens (`--algo auto`), whose rows hold fewer than 20 topics, so beyond
/// 16 the bound costs about what it saves; it also keeps the per-word top list (sorted by
/// insertion, O(g) per topic of the word's row) small.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct EzldaDepth(u8);

impl EzldaDepth {
    /// The thesis's g.
    pub const DEFAULT: EzldaDepth = EzldaDepth(2);
    /// The largest g accepted (see the type's documentation).
    pub const MAX: u8 = 16;

    /// g, checked.
    pub fn new(g: u32) -> Result<Self, SettingError> {
        if (1..=u32::from(Self::MAX)).contains(&g) {
            Ok(Self(g as u8))
        } else {
            Err(out_of_range(Setting::EzldaG, g))
        }
    }
    /// g.
    pub const fn get(self) -> usize {
        self.0 as usize
    }
}

impl std::str::FromStr for EzldaDepth {
    type Err = SettingError;
    fn from_str(s: &str) -> Result<Self, SettingError> {
        s.trim()
            .parse::<u32>()
            .map_err(|_| out_of_range(Setting::EzldaG, format!("{s:?}")))
            .and_then(Self::new)
    }
}

/// mhLDA's proposal pairs per token and iteration, 1 to [`MhSteps::MAX`]. The thesis draws one
/// pair (§2.2.2, Figure 2.1). The default depends on the device: 4 on the GPU, which reached a
/// given held-out value soonest against counts frozen for the whole iteration; 2 on the CPU
/// ([`MhSteps::CPU_DEFAULT`]), whose sweep runs the document proposals in a word phase and the
/// word proposals in a document phase with the documents' counts refreshed between them
/// (WarpLDA's two phases, `samplers/mh/cpu.rs`), so each pair mixes more (`samplers/mh/mod.rs`).
/// The maximum, 64: on the GPU each pair costs two O(1) draws and up to two lookups of the
/// document's row, so 64 pairs cost about 16 times the default's sweep (8 pairs already took
/// 2.4 times 4's time for 0.02 nats/token); a chain that needs more should use an exact
/// sampler (`fcgs`, `ezlda`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct MhSteps(u32);

impl MhSteps {
    /// The default (see the type's documentation).
    pub const DEFAULT: MhSteps = MhSteps(4);
    /// The default of the CPU sweep (see the type's documentation).
    pub const CPU_DEFAULT: MhSteps = MhSteps(2);
    /// The largest number of pairs accepted.
    pub const MAX: u32 = 64;

    /// The number of pairs, checked.
    pub fn new(steps: u32) -> Result<Self, SettingError> {
        if (1..=Self::MAX).contains(&steps) {
            Ok(Self(steps))
        } else {
            Err(out_of_range(Setting::MhSteps, steps))
        }
    }
    /// The number of pairs.
    pub const fn get(self) -> u32 {
        self.0
    }
}

impl std::str::FromStr for MhSteps {
    type Err = SettingError;
    fn from_str(s: &str) -> Result<Self, SettingError> {
        s.trim()
            .parse::<u32>()
            .map_err(|_| out_of_range(Setting::MhSteps, format!("{s:?}")))
            .and_then(Self::new)
    }
}

/// The per-sampler settings of a run ([`Setting`]): what was asked for, `None` for a setting
/// left at its default. Each value is valid by construction; whether the run's sampler takes
/// it is [`SamplerSettings::check_for`]'s question.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SamplerSettings {
    /// `ezlda`'s bound depth g (`None`: [`EzldaDepth::DEFAULT`]).
    pub ezlda_g: Option<EzldaDepth>,
    /// `mh`'s proposal pairs per token (`None`: [`MhSteps::DEFAULT`] on the GPU,
    /// [`MhSteps::CPU_DEFAULT`] on the CPU).
    pub mh_steps: Option<MhSteps>,
    /// `mfm`'s counter width (`None`: exact).
    pub counters: Option<CounterWidth>,
}

impl SamplerSettings {
    /// The bound depth ezlda runs with.
    pub fn ezlda_g(&self) -> EzldaDepth {
        self.ezlda_g.unwrap_or(EzldaDepth::DEFAULT)
    }
    /// The counter width mfm runs with.
    pub fn counters(&self) -> CounterWidth {
        self.counters.unwrap_or(CounterWidth::Exact)
    }
    /// The proposal pairs mh runs with on the GPU.
    pub fn mh_steps(&self) -> MhSteps {
        self.mh_steps.unwrap_or(MhSteps::DEFAULT)
    }
    /// The proposal pairs mh runs with on the CPU.
    pub fn mh_steps_cpu(&self) -> MhSteps {
        self.mh_steps.unwrap_or(MhSteps::CPU_DEFAULT)
    }

    /// Refuses a setting given for a sampler that does not take it, naming those that do.
    pub fn check_for(&self, sampler: &dyn Sampler) -> Result<(), SettingError> {
        for setting in Setting::ALL {
            if setting.given(self).is_some() && !sampler.settings().contains(&setting) {
                let takers: Vec<&str> = crate::samplers::SAMPLERS
                    .iter()
                    .filter(|s| s.settings().contains(&setting))
                    .map(|s| s.name())
                    .collect();
                return Err(SettingError(format!(
                    "{} applies to --algo {} only, and this run uses {}; leave {} out or choose --algo {}",
                    setting.flag(),
                    takers.join(" or "),
                    sampler.name(),
                    setting.flag(),
                    takers.join(" or --algo ")
                )));
            }
        }
        Ok(())
    }

    /// What a checkpoint and the model record of a run of `sampler`: the settings it takes that
    /// change its model, where they differ from their defaults (or are given at all, for a
    /// setting whose default depends on the device), by key. Empty for a run at the defaults,
    /// so its files are byte for byte those of a build without settings.
    pub fn recorded(&self, sampler: &dyn Sampler) -> BTreeMap<String, u32> {
        sampler
            .settings()
            .iter()
            .filter(|s| {
                s.changes_model()
                    && s.given(self)
                        .is_some_and(|v| v != s.default_value() || s.default_depends_on_device())
            })
            .map(|s| (s.key().to_string(), s.value(self)))
            .collect()
    }

    /// People's words for a record of [`SamplerSettings::recorded`]: "--mh-steps 8", or the
    /// given text when it is empty.
    pub fn describe_recorded(recorded: &BTreeMap<String, u32>, empty: &str) -> String {
        if recorded.is_empty() {
            return empty.to_string();
        }
        recorded
            .iter()
            .map(|(k, v)| match Setting::from_key(k) {
                Some(s) => format!("{} {}", s.flag(), s.show(*v)),
                None => format!("{k} = {v}"),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The settings a record of [`SamplerSettings::recorded`] describes (a checkpoint's): a
    /// name this build does not know, or a value out of range, is refused.
    pub fn from_recorded(
        recorded: &BTreeMap<String, u32>,
    ) -> Result<SamplerSettings, SettingError> {
        let mut s = SamplerSettings::default();
        for (k, v) in recorded {
            let setting = Setting::from_key(k).ok_or_else(|| {
                SettingError(format!(
                    "unknown sampler setting {k:?} (written by a newer topos?)"
                ))
            })?;
            setting.set(&mut s, *v)?;
        }
        Ok(s)
    }
}

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
    pub fn of(s: Setting) -> Self {
        let (min, max) = s.range();
        SettingInfo {
            flag: s.flag(),
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
            settings: s.settings().iter().map(|&x| SettingInfo::of(x)).collect(),
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

#[cfg(test)]
mod settings_tests {
    use super::*;

    #[test]
    fn bad_values_are_refused_in_one_line_naming_the_flag() {
        assert_eq!(EzldaDepth::new(1).unwrap().get(), 1);
        assert_eq!(EzldaDepth::new(16).unwrap().get(), 16);
        assert_eq!("3".parse::<EzldaDepth>().unwrap().get(), 3);
        for bad in ["0", "17", "-1", "two", ""] {
            let e = bad.parse::<EzldaDepth>().unwrap_err().to_string();
            assert!(
                e.starts_with("--ezlda-g must be a whole number from 1 to 16, got"),
                "{e}"
            );
            assert!(!e.contains('\n'));
        }
        assert_eq!(MhSteps::new(64).unwrap().get(), 64);
        let e = "0".parse::<MhSteps>().unwrap_err().to_string();
        assert_eq!(e, "--mh-steps must be a whole number from 1 to 64, got 0");
        assert!(MhSteps::new(65).is_err());
        // The defaults are what the samplers ran with before they could be set.
        assert_eq!(SamplerSettings::default().ezlda_g().get(), 2);
        assert_eq!(SamplerSettings::default().mh_steps().get(), 4);
        assert_eq!(SamplerSettings::default().mh_steps_cpu().get(), 2);
        assert_eq!(crate::samplers::mh::MH_STEPS, 4);
    }

    #[test]
    fn a_setting_is_refused_for_a_sampler_that_does_not_take_it() {
        let named = |n: &str| sampler_named(n).unwrap();
        let mh = SamplerSettings {
            mh_steps: Some(MhSteps::new(8).unwrap()),
            ..SamplerSettings::default()
        };
        let g = SamplerSettings {
            ezlda_g: Some(EzldaDepth::new(3).unwrap()),
            ..SamplerSettings::default()
        };
        assert!(mh.check_for(named("mh")).is_ok());
        assert!(g.check_for(named("ezlda")).is_ok());
        assert!(SamplerSettings::default().check_for(named("cgs")).is_ok());
        let e = mh.check_for(named("cgs")).unwrap_err().to_string();
        assert_eq!(
            e,
            "--mh-steps applies to --algo mh only, and this run uses cgs; leave --mh-steps out or choose --algo mh"
        );
        let e = g.check_for(named("mh")).unwrap_err().to_string();
        assert!(
            e.starts_with("--ezlda-g applies to --algo ezlda only"),
            "{e}"
        );
        // Every setting is taken by some sampler, so the message always names one.
        for s in Setting::ALL {
            assert!(crate::samplers::SAMPLERS
                .iter()
                .any(|x| x.settings().contains(&s)));
        }
    }

    #[test]
    fn only_settings_that_change_the_model_and_are_given_are_recorded() {
        let named = |n: &str| sampler_named(n).unwrap();
        let both = SamplerSettings {
            ezlda_g: Some(EzldaDepth::new(3).unwrap()),
            mh_steps: Some(MhSteps::new(8).unwrap()),
            counters: Some(CounterWidth::Approx4),
        };
        // g is a speed knob: never recorded.
        assert!(both.recorded(named("ezlda")).is_empty());
        let r = both.recorded(named("mh"));
        assert_eq!(r.into_iter().collect::<Vec<_>>(), [("mh_steps".into(), 8)]);
        // mh's default depends on the device (4 on the GPU, 2 on the CPU): a value given is
        // recorded even when it is one of them; none given, nothing is.
        let four = SamplerSettings {
            mh_steps: Some(MhSteps::new(4).unwrap()),
            ..SamplerSettings::default()
        };
        let r = four.recorded(named("mh"));
        assert_eq!(r.into_iter().collect::<Vec<_>>(), [("mh_steps".into(), 4)]);
        assert!(SamplerSettings::default().recorded(named("mh")).is_empty());
        // A record reads back, and says what it is.
        let r = both.recorded(named("mh"));
        assert_eq!(
            SamplerSettings::from_recorded(&r).unwrap().mh_steps(),
            both.mh_steps()
        );
        assert_eq!(SamplerSettings::describe_recorded(&r, "-"), "--mh-steps 8");
        assert_eq!(
            SamplerSettings::describe_recorded(&BTreeMap::new(), "-"),
            "-"
        );
        let unknown = BTreeMap::from([("warp".to_string(), 1)]);
        assert!(SamplerSettings::from_recorded(&unknown).is_err());
    }

    #[test]
    fn sampler_info_lists_the_settings() {
        let info = SamplerInfo::of(sampler_named("mh").unwrap());
        assert_eq!(info.settings.len(), 1);
        assert_eq!(info.settings[0].flag, "--mh-steps");
        assert_eq!(info.settings[0].default, 4);
        assert!(info.settings[0].changes_model);
        let info = SamplerInfo::of(sampler_named("ezlda").unwrap());
        assert_eq!(info.settings[0].flag, "--ezlda-g");
        assert!(!info.settings[0].changes_model);
        assert!(SamplerInfo::of(sampler_named("cgs").unwrap())
            .settings
            .is_empty());
    }
}
