//! Sparse collapsed Gibbs sampling, the reference: exact within a partition (the token's own
//! assignment removed; SparseLDA's buckets, Yao et al. 2009), AD-LDA across partitions.

pub mod cpu;
pub mod gpu;

use crate::memory::RunShape;
use crate::sampler::{CpuImplementation, Determinism, Exactness, GpuImplementation, Sampler};

/// The registry entry.
pub struct Cgs;

impl Sampler for Cgs {
    fn name(&self) -> &'static str {
        "cgs"
    }
    fn summary(&self) -> &'static str {
        "sparse collapsed Gibbs, the reference: exact within a partition, partitions merged once per iteration (AD-LDA)"
    }
    fn when_to_use(&self) -> &'static str {
        "the default: the best model at equal iterations on every corpus measured, and the fastest on one CPU thread"
    }
    fn reference(&self) -> &'static str {
        "Griffiths & Steyvers 2004; SparseLDA (Yao et al. 2009); CuLDA_CGS §6 on the GPU"
    }
    fn exactness(&self) -> Exactness {
        Exactness::Exact
    }
    fn determinism(&self) -> Determinism {
        Determinism::AnyThreadsFixedPartitions
    }
    fn supports_private(&self) -> bool {
        // Counts change token by token inside a partition: documents would influence each
        // other without a noisy release in between.
        false
    }
    fn state(&self) -> &'static str {
        "the topic of every token (2 B); each partition keeps its own document rows while it is sampled"
    }
    fn cpu_memory(&self, shape: &RunShape) -> Vec<(&'static str, u64)> {
        // Every partition being sampled holds updatable copies of its words' rows, with room
        // for one new topic per token (a bound: 6 B per non-zero and per token, 8 B per word).
        let nnz_word = shape.tokens.min(shape.words * shape.topics);
        vec![
            (
                "CGS partition word rows",
                6 * shape.tokens + shape.threads.max(1) * (6 * nnz_word + 8 * shape.words),
            ),
            (
                "CGS per-thread document rows",
                shape.threads.max(1) * shape.topics * 40,
            ),
        ]
    }
    fn default_partitions(&self, tokens: u64, _threads: usize) -> usize {
        // CGS results depend on it (AD-LDA merges partitions once per iteration), so it is a
        // function of the corpus alone: about one partition per 250K tokens, rounded up to a
        // multiple of 4 (so that 2 and 4 threads get equal shares), at most 64.
        ((tokens / 250_000).clamp(1, 64) as usize).next_multiple_of(4)
    }
    fn cpu(&self) -> CpuImplementation {
        CpuImplementation::Sweep(&cpu::CgsCpu)
    }
    fn gpu(&self) -> Option<GpuImplementation> {
        Some(GpuImplementation::Kernel(gpu::KERNEL))
    }
}
