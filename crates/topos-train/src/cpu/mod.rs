//! The CPU device: [`engine::Trainer`] on a thread pool.

pub mod engine;

use crate::device::Device;
use crate::engine::{Engine, EngineSetup};
use crate::memory::{shared_items, MemoryEstimate, RunShape};
use crate::sampler::Sampler;
use crate::TrainError;

/// The registry entry.
pub struct Cpu;

impl Device for Cpu {
    fn name(&self) -> &'static str {
        "cpu"
    }
    fn summary(&self) -> &'static str {
        "every core of this machine (--threads), the same model for any number of threads"
    }
    fn usable(&self) -> Result<(), String> {
        Ok(())
    }
    fn present(&self) -> bool {
        true
    }
    fn ordinal_refusal(&self) -> Option<&'static str> {
        Some("the CPU is one device, with no index; choose how many of its cores a run uses with --threads")
    }
    fn runs(&self, _sampler: &dyn Sampler) -> bool {
        true
    }
    fn supports_private(&self) -> bool {
        true
    }
    fn learns_priors(&self) -> bool {
        true
    }
    fn takes_fixed_counts(&self) -> bool {
        true
    }
    fn joins_workers(&self) -> bool {
        true
    }
    fn open(
        &self,
        ordinal: Option<usize>,
        setup: EngineSetup,
    ) -> Result<Box<dyn Engine>, TrainError> {
        if ordinal.is_some_and(|o| o > 0) {
            return Err(TrainError::Unsupported(
                "there is one CPU device, cpu (or cpu:0); --threads sets how many cores it uses"
                    .into(),
            ));
        }
        match setup.sampler.cpu() {
            crate::sampler::CpuImplementation::Sweep(_) => Ok(Box::new(engine::open(setup)?)),
            crate::sampler::CpuImplementation::Engine(open) => open(setup),
        }
    }
    /// The assignments (2 B a token), the PDOW layout (8 B a token, 8 B per word of each
    /// partition, and the sort's scratch for one partition), the sparse document-topic rows (6 B a non-zero, at most one a token) and
    /// word-topic rows (6 B a non-zero), the sampler's own working memory, and what every run
    /// holds ([`shared_items`]).
    fn host_memory(&self, shape: &RunShape, sampler: &dyn Sampler) -> MemoryEstimate {
        let s = shape;
        if !sampler.keeps_assignments() {
            // An engine of its own: its items, and what every run holds.
            let mut items = sampler.cpu_memory(s);
            items.extend(shared_items(s));
            return MemoryEstimate::new(items);
        }
        let nnz_doc = s.tokens.min(s.docs.saturating_mul(s.topics));
        let mut items = vec![
            ("assignments (2 B/token)", 2 * s.tokens),
            (
                "PDOW layout (8 B/token; as much again while a partition is sorted)",
                8 * s.tokens
                    + 16 * s.words.min(s.tokens)
                    + crate::layout::SORT_SCRATCH_BYTES * s.tokens,
            ),
            (
                "doc-topic rows (6 B/non-zero)",
                6 * nnz_doc + 8 * (s.docs + 1),
            ),
            (
                "word-topic rows (6 B/non-zero)",
                6 * s.word_topic_nonzeros() + 8 * (s.words + 1) + 8 * s.topics,
            ),
        ];
        if s.workers > 1 {
            // The exchange holds this process's counts and the sum beside the current ones.
            items.push((
                "word-topic rows of the exchange, local and summed (6 B/non-zero each)",
                12 * s.word_topic_nonzeros(),
            ));
        }
        items.extend(sampler.cpu_memory(s));
        items.extend(shared_items(s));
        MemoryEstimate::new(items)
    }
}
