//! `mh`: the Metropolis–Hastings sampler of mhLDA (thesis chapter 2, §2.2.2–2.2.3, after
//! LightLDA and WarpLDA): every token alternates a word proposal q_w(k) ∝ B_wk + β and a
//! document proposal q_d(k) ∝ A_dk + α_k (Eq. 2.1), each accepted with the rate of Eq. (2.2)
//! against the previous iteration's counts with the token's own assignment removed (as ESCA and
//! the GPU's cgs read them). On the CPU (`cpu.rs`) each proposal is drawn in O(1): the word's
//! from a per-word alias table built once per iteration, the document's by taking the frozen
//! topic of a uniformly random token of the document (WarpLDA's trick), each mixed with its
//! prior part. On the GPU (`gpu.rs`, the kernel `sample_mh`) the word proposal is LightLDA's
//! (B_wk + β)/(n_k + Vβ) from the word's sampling tree, and A_dk is read from the document's
//! frozen doc-topic row (in registers for short rows).

pub mod cpu;
pub mod gpu;

use crate::memory::RunShape;
use crate::sampler::{CpuSampler, Determinism, Exactness, GpuKernelSpec, Sampler, Setting};

/// Proposal pairs (one word proposal, one document proposal) per token and iteration when the
/// run does not set them (`--mh-steps`, [`crate::sampler::MhSteps`]). The thesis's mhLDA draws
/// one pair per iteration (§2.2.2, Figure 2.1); WarpLDA one per phase, with the counts refreshed
/// between its two phases. Against counts frozen for the whole iteration one pair mixes too
/// little: on 20 Newsgroups at K = 100, one thread, seed 1, held-out after 50 iterations
/// (seconds on the loaded 2-core VM): 1 pair −8.3286 (15.4 s), 2 −8.2256 (21.6 s), 4 −8.1738
/// (27.0 s), 8 −8.1546 (64.7 s); `fcgs`'s exact draw −8.1432. Four reaches a given value
/// soonest, so the default stays 4 rather than the thesis's 1. The number changes the chain:
/// models and checkpoints record a run's value when it is not 4.
pub const MH_STEPS: u32 = crate::sampler::MhSteps::DEFAULT.get();

/// The registry entry.
pub struct Mh;

impl Sampler for Mh {
    fn name(&self) -> &'static str {
        "mh"
    }
    fn summary(&self) -> &'static str {
        "mhLDA's Metropolis-Hastings: 4 pairs (--mh-steps) of word and document proposals per token, accepted by Eq. (2.2) against the previous iteration's counts with the token's own assignment removed; CPU: each drawn in O(1) (a per-word alias table; the topic of a random token of the document); GPU: the word proposal (B+β)/(n+Vβ) from the word's sampling tree, the document's from its frozen row, A_dk read from the row in registers"
    }
    fn when_to_use(&self) -> &'static str {
        "not on the CPU: on one thread it samples 1.5M tokens/s at K = 100 and 1,000 alike (20 Newsgroups; cgs 9.3M and 5.7M, WarpLDA 9M) and ends below cgs at equal iterations, so it reaches a held-out value 4-12x later than cgs and 4-6x later than WarpLDA; on the GPU (--device cuda, resident or streamed; the same model for any chunking, not the CPU's) 0.16-0.38x cgs's tokens/s (H100: 290-500M); at K = 10,000 and more it ends 0.03-0.04 nats/token above cgs at equal iterations (Gutenberg, NYTimes-shaped: values cgs does not reach in 200 iterations), at K = 1,000 below it, and it reaches cgs's values later in time (BENCHMARKS.md)"
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
        "the topic of every token (2 B); document-topic rows rebuilt every iteration, with per-word alias tables on the CPU (the GPU draws from its per-word sampling tree and holds short rows in registers)"
    }
    fn cpu_memory(&self, shape: &RunShape) -> Vec<(&'static str, u64)> {
        vec![
            // Per thread: the current word's dense counts, and a copy of the partition's
            // assignments (the frozen topics the document proposal reads): partitions are
            // 4 per thread, so a quarter of a thread's share of the tokens at 2 bytes each.
            (
                "MH per-thread rows",
                shape.threads.max(1) * shape.topics * 4 + shape.tokens / 2,
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
    fn cpu(&self) -> &'static dyn CpuSampler {
        &cpu::MhCpu
    }
    fn gpu(&self) -> Option<GpuKernelSpec> {
        Some(gpu::KERNEL)
    }
    fn settings(&self) -> &'static [Setting] {
        &[Setting::MhSteps]
    }
}
