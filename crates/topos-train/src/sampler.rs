//! What a sampler is, for every part of Topos that must know (the run, the devices, checkpoints,
//! the model file, memory estimates, `--help`, `topos algos`, the private-training rule): one
//! trait, one static registry ([`crate::samplers::SAMPLERS`], one line per sampler), and one
//! file per device that implements it (`samplers/NAME/cpu.rs`, `samplers/NAME/gpu.rs`).
//!
//! Nothing outside `samplers/` matches on a sampler's name: a new sampler is a folder there and
//! a line in the registry (CONTRIBUTING.md, "Add a sampler").

use crate::counts::WordTopics;
use crate::layout::Partition;
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
    /// The CPU implementation.
    fn cpu(&self) -> &'static dyn CpuSampler;
    /// The GPU implementation, if it has one.
    fn gpu(&self) -> Option<GpuKernelSpec>;
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
        }
    }
}
