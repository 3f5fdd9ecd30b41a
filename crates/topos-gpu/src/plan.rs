//! The memory planner: from the corpus sizes, K and the device's free memory (or `--gpu-memory`),
//! decide whether the corpus stays on the GPU or streams through it in chunks, and say so before
//! anything is allocated (SaberLDA §3.1.2; CuLDA_CGS §5.1, WorkSchedule2).
//!
//! What always lives on the device: the dense word-topic counts twice (B read during a sweep, B'
//! accumulated for the next, 4 bytes a cell each), the topic totals, and the per-warp histograms of
//! the doc-topic rebuild. What scales with the corpus, per token: its document and position (4 + 4
//! bytes), its topic (2) and, for the chunk being sampled, its doc-topic row entry (2 + 4). A
//! corpus whose arrays fit next to the model is uploaded once ("resident"); otherwise it is cut
//! into chunks of whole documents that flow through two device slots, so one chunk's transfer
//! overlaps the other's sampling ("streamed").

use std::fmt;

/// Bytes kept free for the CUDA context, the module and the allocator's slack.
pub const RESERVE_BYTES: u64 = 512 << 20;
/// Bytes per token of a chunk on the device: document (4), position (4), topic (2).
pub const TOKEN_BYTES: u64 = 10;
/// Bytes per token of the doc-topic rows of the chunk being sampled: topic (2) and count (4).
pub const ROW_BYTES: u64 = 6;
/// Bytes per document: token offset (4) and row length (4).
pub const DOC_BYTES: u64 = 8;
/// Bytes per work item (word, start, length, padding).
pub const ITEM_BYTES: u64 = 16;
/// Most tokens one work item (one thread block) samples: frequent words are split (ezLDA §1.5.1).
pub const ITEM_MAX_TOKENS: u64 = 4096;
/// Warps of the doc-topic rebuild, each with a K-entry histogram: as many as fill the device,
/// fewer at large K so that the histograms stay under 256 MiB.
pub fn rebuild_warps(k: u32, multiprocessors: u32) -> u64 {
    let fill = u64::from(multiprocessors.max(1)) * 64;
    let cap = (256u64 << 20) / (4 * u64::from(k.max(1)));
    fill.min(cap).max(256)
}

/// What the planner is told.
#[derive(Clone, Copy, Debug)]
pub struct PlanInput {
    pub tokens: u64,
    pub docs: u64,
    pub words: u64,
    pub topics: u32,
    /// Tokens of the longest document (a chunk holds whole documents).
    pub longest_doc: u64,
    /// Device memory the run may use: `--gpu-memory`, or the device's free memory.
    pub budget: u64,
    pub multiprocessors: u32,
    /// Tokens per partition when resident (doc rows of one partition are rebuilt and sampled at a
    /// time; smaller partitions keep them in L2, larger ones rebuild fewer trees).
    pub partition_tokens: u64,
    /// Plan as if the corpus did not fit (tests, benchmarks of the streaming path).
    pub force_streaming: bool,
}

/// How the corpus meets the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Uploaded once; partitions sampled one after another.
    Resident,
    /// Chunks copied in and out every iteration through two device slots.
    Streamed,
}

/// The decision, with the numbers behind it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Plan {
    pub mode: Mode,
    /// Document ranges the corpus is cut into (partitions when resident, chunks when streamed).
    pub chunks: usize,
    /// Target tokens per chunk.
    pub chunk_tokens: u64,
    /// Device bytes of the model (B and B', totals, normalizers).
    pub model_bytes: u64,
    /// Device bytes of the rebuild histograms.
    pub scratch_bytes: u64,
    /// Device bytes of the corpus arrays (all of them when resident, two slots when streamed).
    pub corpus_bytes: u64,
    /// The budget planned against.
    pub budget: u64,
}

impl Plan {
    /// Total device bytes the run allocates (the reserve not included).
    pub fn total(&self) -> u64 {
        self.model_bytes + self.scratch_bytes + self.corpus_bytes
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let g = |b: u64| b as f64 / (1u64 << 30) as f64;
        match self.mode {
            Mode::Resident => write!(
                f,
                "corpus resident on the GPU in {} partition{} of about {:.1}M tokens",
                self.chunks,
                if self.chunks == 1 { "" } else { "s" },
                self.chunk_tokens as f64 / 1e6
            )?,
            Mode::Streamed => write!(
                f,
                "corpus streamed through the GPU in {} chunks of about {:.1}M tokens (two in flight)",
                self.chunks,
                self.chunk_tokens as f64 / 1e6
            )?,
        }
        write!(
            f,
            "; {:.2} GiB of {:.2} GiB (model {:.2}, histograms {:.2}, corpus {:.2})",
            g(self.total()),
            g(self.budget),
            g(self.model_bytes),
            g(self.scratch_bytes),
            g(self.corpus_bytes)
        )
    }
}

/// Why no plan fits.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PlanError {
    #[error("the word-topic counts alone need {need_gib:.2} GiB on the GPU (2 × {words} words × {topics} topics × 4 bytes, plus histograms) but the budget is {budget_gib:.2} GiB; use fewer topics (-k), prune the vocabulary, raise --gpu-memory or train with --device cpu")]
    ModelTooLarge {
        words: u64,
        topics: u32,
        need_gib: f64,
        budget_gib: f64,
    },
    #[error("a document of {longest} tokens does not fit in a streaming chunk of {chunk} tokens under this budget; raise --gpu-memory or train with --device cpu")]
    DocumentTooLarge { longest: u64, chunk: u64 },
    #[error("K = {0} is beyond the GPU engine's 65,535 topics")]
    TooManyTopics(u32),
}

fn gib(b: u64) -> f64 {
    b as f64 / (1u64 << 30) as f64
}

/// Bytes of the corpus arrays for `tokens` tokens of `docs` documents over at most `words` words
/// in `chunks` chunks (items bounded by distinct words plus the splits of frequent words).
fn corpus_arrays(tokens: u64, docs: u64, words: u64, chunks: u64) -> u64 {
    let items = (words * chunks).min(tokens) + tokens / ITEM_MAX_TOKENS + chunks;
    tokens * TOKEN_BYTES + (docs + chunks) * DOC_BYTES + items * ITEM_BYTES
}

/// Plans a run.
pub fn plan(input: &PlanInput) -> Result<Plan, PlanError> {
    let k = u64::from(input.topics);
    if input.topics > u32::from(u16::MAX) {
        return Err(PlanError::TooManyTopics(input.topics));
    }
    let model_bytes = 2 * input.words * k * 4 + k * 12;
    let scratch_bytes = rebuild_warps(input.topics, input.multiprocessors) * k * 4;
    let usable = input.budget.saturating_sub(RESERVE_BYTES);
    if model_bytes + scratch_bytes >= usable {
        return Err(PlanError::ModelTooLarge {
            words: input.words,
            topics: input.topics,
            need_gib: gib(model_bytes + scratch_bytes + RESERVE_BYTES),
            budget_gib: gib(input.budget),
        });
    }
    let avail = usable - model_bytes - scratch_bytes;
    let tokens = input.tokens.max(1);
    let part = input.partition_tokens.max(1);
    let partitions = tokens.div_ceil(part).min(input.docs.max(1));
    let per_partition = tokens.div_ceil(partitions);
    let resident = corpus_arrays(tokens, input.docs, input.words, partitions)
        + (per_partition + input.longest_doc) * ROW_BYTES;
    if !input.force_streaming && resident <= avail {
        return Ok(Plan {
            mode: Mode::Resident,
            chunks: partitions as usize,
            chunk_tokens: per_partition,
            model_bytes,
            scratch_bytes,
            corpus_bytes: resident,
            budget: input.budget,
        });
    }
    // Two slots, each a chunk's arrays and rows; a chunk may overshoot its target by one document.
    let per_token_slot = TOKEN_BYTES + ROW_BYTES + DOC_BYTES + ITEM_BYTES;
    let mut chunk = (avail / 2 / per_token_slot).saturating_sub(input.longest_doc);
    if input.force_streaming {
        chunk = chunk.min(tokens.div_ceil(4).max(input.longest_doc));
    }
    if chunk < input.longest_doc || chunk == 0 {
        return Err(PlanError::DocumentTooLarge {
            longest: input.longest_doc,
            chunk,
        });
    }
    let chunks = tokens.div_ceil(chunk).max(2).min(input.docs.max(1));
    let chunk_tokens = tokens.div_ceil(chunks);
    Ok(Plan {
        mode: Mode::Streamed,
        chunks: chunks as usize,
        chunk_tokens,
        model_bytes,
        scratch_bytes,
        corpus_bytes: 2 * (chunk_tokens + input.longest_doc) * per_token_slot,
        budget: input.budget,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    fn nytimes(budget: u64, k: u32) -> PlanInput {
        PlanInput {
            tokens: 99_542_125,
            docs: 299_752,
            words: 101_636,
            topics: k,
            longest_doc: 2_000,
            budget,
            multiprocessors: 132,
            partition_tokens: 16_000_000,
            force_streaming: false,
        }
    }

    #[test]
    fn nytimes_fits_an_h100() {
        let p = plan(&nytimes(78 * GIB, 1024)).unwrap();
        assert_eq!(p.mode, Mode::Resident);
        assert_eq!(p.chunks, 7);
        // B and B': 2 × 101,636 × 1,024 × 4 bytes.
        assert_eq!(p.model_bytes, 2 * 101_636 * 1024 * 4 + 1024 * 12);
        assert!(p.total() < 3 * GIB, "{p}");
        assert!(p.to_string().contains("resident"), "{p}");
    }

    #[test]
    fn small_budget_streams_in_chunks_that_fit() {
        let budget = 2 * GIB;
        let p = plan(&nytimes(budget, 1024)).unwrap();
        assert_eq!(p.mode, Mode::Streamed);
        assert!(p.chunks >= 2);
        assert!(p.total() + RESERVE_BYTES <= budget, "{p}");
        assert!(p.chunk_tokens * p.chunks as u64 >= 99_542_125);
        assert!(p.to_string().contains("streamed"), "{p}");
    }

    #[test]
    fn forced_streaming_uses_at_least_four_chunks() {
        let mut i = nytimes(78 * GIB, 1024);
        i.force_streaming = true;
        let p = plan(&i).unwrap();
        assert_eq!(p.mode, Mode::Streamed);
        assert!(p.chunks >= 4, "{p}");
    }

    #[test]
    fn model_too_large_says_what_to_do() {
        // PubMed's vocabulary at K = 32,768 in 20 GiB: the dense counts alone need 34 GiB.
        let mut i = nytimes(20 * GIB, 32_768);
        i.words = 141_043;
        let e = plan(&i).unwrap_err();
        assert!(matches!(e, PlanError::ModelTooLarge { .. }));
        let msg = e.to_string();
        assert!(msg.contains("--gpu-memory") && msg.contains("-k"), "{msg}");
    }

    #[test]
    fn a_document_larger_than_a_chunk_is_refused() {
        let mut i = nytimes(GIB + GIB / 2, 1024);
        i.longest_doc = 90_000_000;
        assert!(matches!(
            plan(&i).unwrap_err(),
            PlanError::DocumentTooLarge { .. }
        ));
    }

    #[test]
    fn too_many_topics() {
        assert_eq!(
            plan(&nytimes(78 * GIB, 70_000)).unwrap_err(),
            PlanError::TooManyTopics(70_000)
        );
    }

    #[test]
    fn histograms_shrink_at_large_k() {
        assert_eq!(rebuild_warps(1024, 132), 132 * 64);
        assert_eq!(rebuild_warps(32_768, 132), 2048);
        assert!(rebuild_warps(65_535, 1) >= 256);
    }
}
