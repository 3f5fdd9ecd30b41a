//! `mh`: the Metropolis–Hastings sampler of mhLDA (thesis chapter 2, §2.2.2–2.2.3, after
//! LightLDA and WarpLDA): every token alternates a word proposal q_w(k) ∝ B_wk + β and a
//! document proposal q_d(k) ∝ A_dk + α_k, each accepted with the rate of Eq. (2.2), so a token
//! costs a few draws and lookups whatever K, against the previous iteration's counts (as
//! ESCA and the GPU's cgs read them). CPU for now. Each proposal is drawn by a binary search in a
//! row's prefix sums (O(log) of the row's non-zeros, not of K; alias tables would make it O(1)).

pub mod cpu;

use crate::memory::RunShape;
use crate::sampler::{CpuSampler, Determinism, Exactness, GpuKernelSpec, Sampler};

/// Proposal pairs (one word proposal, one document proposal) per token and iteration: WarpLDA's
/// and the thesis's experiments use one or two; two mixes better per iteration for little cost.
pub const MH_STEPS: u32 = 2;

/// The registry entry.
pub struct Mh;

impl Sampler for Mh {
    fn name(&self) -> &'static str {
        "mh"
    }
    fn summary(&self) -> &'static str {
        "mhLDA's Metropolis-Hastings: word and document proposals in turn, accepted by Eq. (2.2) against the previous iteration's counts with the token's own assignment removed; a few draws per token whatever K"
    }
    fn when_to_use(&self) -> &'static str {
        "not yet on the CPU: there it is slower than cgs (0.65x its tokens/s at K = 1,000 on 20 Newsgroups) and ends lower at equal iterations; the CPU reference of the coming GPU sampler, whose cost per token does not grow with K"
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
        "the topic of every token (2 B); document-topic rows and their prefix sums rebuilt every iteration"
    }
    fn cpu_memory(&self, shape: &RunShape) -> Vec<(&'static str, u64)> {
        vec![
            // Per thread: the current word's dense counts and prefix sums.
            (
                "MH per-thread rows",
                shape.threads.max(1) * shape.topics * 12,
            ),
            // Prefix sums of the document-topic rows: at most one per token.
            ("MH document prefix sums", shape.tokens * 4),
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
        None
    }
}
