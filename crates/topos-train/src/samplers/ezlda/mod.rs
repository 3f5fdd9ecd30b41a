//! `ezlda`: ezLDA's three-branch sampling (thesis ch. 1, §1.3, Eq. 1.6–1.10) on the exact
//! collapsed conditional of `fcgs` (the token's own assignment removed, the other counts frozen
//! from the previous iteration). Each word's most popular topic K₁ (the largest
//! (B_vk + β)/(n_k + Vβ)) is a branch of its own; a token whose random number falls in it under
//! the bound S_est of Eq. (1.10) (g = 2) is settled without building its document branch, and
//! one that falls in it once the branch is built is settled without a final sampling. Both skips
//! are decisions the full draw would take with the same random number, so the draw stays exact
//! (derivation in `cpu.rs`); unlike the naive dropping of §1.3.4, every token is drawn every
//! iteration. On the CPU (`cpu.rs`) and the GPU (`gpu.rs`, the kernel `sample_ezlda`); the progress
//! line and `--log` show the fractions skipped.

pub mod cpu;
pub mod gpu;

use crate::memory::RunShape;
use crate::sampler::{
    CpuImplementation, Determinism, Exactness, GpuImplementation, Sampler, SamplerSettings,
    Setting, SettingError, SettingValues,
};

/// The registry entry.
pub struct Ezlda;

impl Sampler for Ezlda {
    fn name(&self) -> &'static str {
        "ezlda"
    }
    fn summary(&self) -> &'static str {
        "ezLDA's three-branch sampling: each word's most popular topic as a branch of its own, tokens settled there skip their document branch (S_est bound of depth g, --ezlda-g, default 2); the exact conditional of fcgs"
    }
    fn when_to_use(&self) -> &'static str {
        "fcgs's exact conditional, the same model for any threads and partitions, 0.006-0.011 nats/token below cgs at 200 iterations (K = 100, three corpora); on one CPU thread 1.1-1.7x fcgs's speed at K = 1,000 (level with cgs on short documents), about fcgs's at K = 100, where cgs is faster; shows the fractions of tokens that skip work; on the GPU 0.8-0.9x fcgs's speed (BENCHMARKS.md)"
    }
    fn reference(&self) -> &'static str {
        "ezLDA/mhLDA thesis ch. 1, §1.3, Eq. (1.6)-(1.10); Griffiths & Steyvers 2004 (the conditional)"
    }
    fn exactness(&self) -> Exactness {
        Exactness::Exact
    }
    fn determinism(&self) -> Determinism {
        Determinism::AnyThreadsAnyPartitions
    }
    fn supports_private(&self) -> bool {
        // The bound and the branches read the token's own word count, which a noisy release
        // perturbs (as fcgs's acceptance does).
        false
    }
    fn state(&self) -> &'static str {
        "the topic of every token (2 B); document-topic rows rebuilt every iteration"
    }
    fn cpu_memory(&self, shape: &RunShape) -> Vec<(&'static str, u64)> {
        vec![
            // Per thread: a_k (8 B), the row position (4 B), the word's and the document's
            // prefix sums (8 B each) over at most K topics.
            (
                "ezlda per-thread rows",
                shape.threads.max(1) * shape.topics * 28,
            ),
            // Per iteration: 1/(n_k + Vβ) and with one token fewer, β/(n_k + Vβ), α_k, the
            // smoothing prefix sums (8 B each) and the topics in order (2 B).
            ("ezlda per-iteration arrays", shape.topics * 42),
        ]
    }
    fn default_partitions(&self, _tokens: u64, threads: usize) -> usize {
        // The model does not depend on it: enough to keep every thread busy.
        (threads * 4).max(1)
    }
    fn cpu(&self) -> CpuImplementation {
        CpuImplementation::Sweep(&cpu::EzldaCpu { skip: true })
    }
    fn gpu(&self) -> Option<GpuImplementation> {
        Some(GpuImplementation::Kernel(gpu::KERNEL))
    }
    fn settings(&self) -> &'static [&'static Setting] {
        // g decides only which tokens may skip building their document branch, never a draw:
        // the same model for every g (`cpu.rs`).
        static TAKES: [&Setting; 1] = [&EZLDA_G];
        &TAKES
    }
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
        EZLDA_G.check(g).map(|g| Self(g as u8))
    }
    /// g.
    pub const fn get(self) -> usize {
        self.0 as usize
    }
    /// The g a run's settings ask for (the CPU and the GPU share the default).
    pub fn of(settings: &SamplerSettings) -> Self {
        Self(EZLDA_G.value(settings) as u8)
    }
}

impl std::str::FromStr for EzldaDepth {
    type Err = SettingError;
    fn from_str(s: &str) -> Result<Self, SettingError> {
        EZLDA_G.parse(s).map(|g| Self(g as u8))
    }
}

/// `--ezlda-g` / `ezlda_g=`: [`EzldaDepth`].
pub static EZLDA_G: Setting = Setting {
    key: "ezlda_g",
    flag: "--ezlda-g",
    keyword: "ezlda_g",
    value_name: "G",
    describe: "depth g of the bound S_est (thesis Eq. 1.10): the g most popular topics of each word are looked up in the document, so larger g skips more document branches at more cost per token; a speed knob only, the model is the same for every g (CPU; the GPU kernel implements g = 2)",
    values: SettingValues::Range {
        lo: 1,
        hi: EzldaDepth::MAX as u32,
    },
    default: EzldaDepth::DEFAULT.0 as u32,
    cpu_default: EzldaDepth::DEFAULT.0 as u32,
    changes_model: false,
};
