//! `mh`: the Metropolis–Hastings sampler of mhLDA (thesis chapter 2, §2.2.2–2.2.3, after
//! LightLDA and WarpLDA): every token runs word proposals q_w(k) ∝ B_wk + β and document
//! proposals q_d(k) ∝ A_dk + α_k (Eq. 2.1), each accepted with the rate of Eq. (2.2) against its
//! exact collapsed conditional with its own assignment removed (as fcgs and the GPU's cgs read
//! the counts), each drawn in O(1) as a mixture of a count and the prior.
//!
//! On the CPU (`cpu.rs`) the sweep is WarpLDA's (Chen et al. 2016): a word phase, word by word
//! with the word's row in cache, runs every token's document proposals (the topic of a random
//! other token of its document) and draws its word proposals (a per-word alias table); a
//! document phase, document by document with the document's row recounted after the word phase
//! and in cache, runs the word proposals. Counts are frozen within each phase, so the model is
//! the same for any threads and partitions. On the GPU (`gpu.rs`, the kernel `sample_mh`) each
//! token alternates the two proposals against the counts frozen for the iteration; the word
//! proposal is LightLDA's (B_wk + β)/(n_k + Vβ) from the word's sampling tree, and A_dk is read
//! from the document's frozen doc-topic row (in registers for short rows).

pub mod cpu;
pub mod gpu;

use crate::memory::RunShape;
use crate::sampler::{
    CpuImplementation, Determinism, Exactness, GpuImplementation, Sampler, SamplerSettings,
    Setting, SettingDefaults, SettingError, SettingValues,
};

/// Proposal pairs (one word proposal, one document proposal) per token and iteration on the GPU
/// when the run does not set them (`--mh-steps`, [`crate::sampler::MhSteps`]). The thesis's
/// mhLDA draws one pair per iteration (§2.2.2, Figure 2.1); WarpLDA one per phase, with the
/// counts refreshed between its two phases. Against counts frozen for the whole iteration one
/// pair mixes too little: measured with the earlier CPU sweep of the same design (20
/// Newsgroups, K = 100, one thread, seed 1, held-out after 50 iterations, seconds on the loaded
/// 2-core VM): 1 pair −8.3286 (15.4 s), 2 −8.2256 (21.6 s), 4 −8.1738 (27.0 s), 8 −8.1546
/// (64.7 s); `fcgs`'s exact draw −8.1432. Four reached a given value soonest, so the GPU's
/// default is 4 rather than the thesis's 1.
pub const MH_STEPS: u32 = MhSteps::DEFAULT.get();

/// The CPU's default ([`crate::sampler::MhSteps::CPU_DEFAULT`]). Its two-phase sweep refreshes
/// the documents' counts between the document proposals and the word proposals, so a pair mixes
/// more than against counts frozen for the iteration. 20 Newsgroups, one thread, seed 1, α =
/// 50/K, held-out after 100 iterations (seconds of training; the 2-core VM, lightly loaded,
/// one run after the other): K = 100: 1 pair −8.1746 (8.9 s), 2 −8.1117 (14.2 s), 4 −8.0885
/// (20.5 s); K = 1,000: 1 −7.9569 (10.5 s), 2 −7.8880 (13.1 s), 4 −7.8551 (22.7 s). To
/// WarpLDA's 100-iteration values (−8.1337, −7.9433; BENCHMARKS.md): 1 pair not in 100
/// iterations, 2 pairs 11.7 s and 7.7 s, 4 pairs 12.2 s and 8.8 s (held-out every 10
/// iterations). Two is soonest at both K. The number changes the chain: models and
/// checkpoints record a value given.
pub const MH_STEPS_CPU: u32 = MhSteps::CPU_DEFAULT.get();

/// The registry entry.
pub struct Mh;

impl Sampler for Mh {
    fn name(&self) -> &'static str {
        "mh"
    }
    fn summary(&self) -> &'static str {
        "mhLDA's Metropolis-Hastings: pairs (--mh-steps; default 2 on the CPU, 4 on the GPU) of word and document proposals per token, each drawn in O(1) and accepted by Eq. (2.2) against the token's exact collapsed conditional with its own assignment removed; CPU: WarpLDA's two phases, the document proposals (the topic of a random other token of the document) in a word phase with the word's row in cache, then the word proposals (a per-word alias table) in a document phase with the document's row recounted and in cache; GPU: both against the previous iteration's counts, the word proposal (B+β)/(n+Vβ) from the word's sampling tree, the document's from its frozen row, A_dk read from the row in registers"
    }
    fn when_to_use(&self) -> &'static str {
        "on the CPU for a quick, loose model at large K: on one thread (20 Newsgroups, 2 pairs) it samples 12-13M tokens/s at K = 100 and 1,000 alike (WarpLDA 17M and 15M, cgs 12M and 7M in the same calls) and reaches WarpLDA's 100-iteration held-out value 1.4x sooner than WarpLDA at K = 1,000 (and sooner than cgs), at K = 100 about when WarpLDA does (1.07x later at 10-iteration checkpoints) and later than cgs; it ends below cgs at equal iterations (0.04-0.06 nats/token at 300), so for a tight model use cgs or fcgs; on the GPU (--device cuda, resident or streamed; the same model for any chunking, not the CPU's; 4 pairs) 0.16-0.38x cgs's tokens/s (H100: 290-500M); at K = 10,000 and more it ends 0.03-0.04 nats/token above cgs at equal iterations (Gutenberg, NYTimes-shaped: values cgs does not reach in 200 iterations), at K = 1,000 below it, and it reaches cgs's values later in time (BENCHMARKS.md)"
    }
    fn reference(&self) -> &'static str {
        "ezLDA/mhLDA thesis ch. 2, §2.2.2-2.2.3, Eq. (2.1)-(2.2); WarpLDA (Chen et al. 2016)"
    }
    fn exactness(&self) -> Exactness {
        Exactness::Approximate
    }
    fn determinism(&self) -> Determinism {
        Determinism::AnyThreadsAnyPartitions
    }
    fn supports_private(&self) -> bool {
        false
    }
    fn state(&self) -> &'static str {
        "the topic of every token (2 B); per-word alias tables rebuilt every iteration on the CPU, whose sweep recounts each document's row itself (the GPU rebuilds the document-topic rows, draws from its per-word sampling tree and holds short rows in registers)"
    }
    fn cpu_memory(&self, shape: &RunShape) -> Vec<(&'static str, u64)> {
        vec![
            // Per thread: the current word's and document's dense counts, and the partition's
            // records (4 + N 16-bit words a token: its topics, B_wc, its N proposals; N = 2, the
            // CPU's default): partitions are 4 per thread, so a quarter of the tokens at once.
            (
                "MH per-thread rows",
                shape.threads.max(1) * shape.topics * 8
                    + shape.tokens / 4 * (4 + u64::from(MH_STEPS_CPU)) * 2,
            ),
            // Alias tables of the word-topic rows: 6 bytes per non-zero, at most one per token.
            (
                "MH word alias tables",
                shape.tokens.min(shape.words * shape.topics) * 6,
            ),
        ]
    }
    fn default_partitions(&self, _tokens: u64, threads: usize) -> usize {
        // The model does not depend on it: enough to keep every thread busy.
        (threads * 4).max(1)
    }
    fn cpu(&self) -> CpuImplementation {
        CpuImplementation::Sweep(&cpu::MhCpu)
    }
    fn gpu(&self) -> Option<GpuImplementation> {
        Some(GpuImplementation::Kernel(gpu::KERNEL))
    }
    fn settings(&self) -> &'static [&'static Setting] {
        static TAKES: [&Setting; 1] = [&MH_STEPS_SETTING];
        &TAKES
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
        MH_STEPS_SETTING.check(steps).map(Self)
    }
    /// The number of pairs.
    pub const fn get(self) -> u32 {
        self.0
    }
    /// The pairs a run's settings ask for on a device that takes `defaults`.
    pub fn of(settings: &SamplerSettings, defaults: SettingDefaults) -> Self {
        Self(MH_STEPS_SETTING.value_on(settings, defaults))
    }
}

impl std::str::FromStr for MhSteps {
    type Err = SettingError;
    fn from_str(s: &str) -> Result<Self, SettingError> {
        MH_STEPS_SETTING.parse(s).map(Self)
    }
}

/// `--mh-steps` / `mh_steps=`: [`MhSteps`].
pub static MH_STEPS_SETTING: Setting = Setting {
    key: "mh_steps",
    flag: "--mh-steps",
    keyword: "mh_steps",
    value_name: "N",
    describe: "Metropolis-Hastings proposal pairs (one word, one document proposal) per token and iteration (default 4 on the GPU, 2 on the CPU, whose sweep refreshes the documents' counts between its word-proposal and document-proposal phases); more mix better per iteration and cost more; changes the model, so the model and checkpoints record it when given",
    values: SettingValues::Range {
        lo: 1,
        hi: MhSteps::MAX,
    },
    default: MhSteps::DEFAULT.0,
    cpu_default: MhSteps::CPU_DEFAULT.0,
    changes_model: true,
};
