//! The memory planner: from the corpus sizes, K and the device's free memory (or `--gpu-memory`),
//! decide whether the corpus stays on the GPU or streams through it in chunks, and say so before
//! anything is allocated (SaberLDA §3.1.2; CuLDA_CGS §5.1, WorkSchedule2).
//!
//! What always lives on the device: the word-topic counts twice (B read during a sweep, B'
//! accumulated for the next, 4 bytes a cell each, dense or in ezLDA's hybrid format: see
//! `word_topics`) or, when two copies would not fit or would push the corpus out, once
//! ([`CountCopies::One`]: B is recounted from the new assignments after the sweep), the topic
//! totals, and the per-warp histograms of the doc-topic rebuild. What scales with the corpus, per token: its document and position (4 + 4
//! bytes), its topic (2) and, for the chunk being sampled, its doc-topic row entry (2 + 4). A
//! corpus whose arrays fit next to the model is uploaded once ("resident"); otherwise it is cut
//! into chunks of whole documents that flow through two device slots, so one chunk's transfer
//! overlaps the other's sampling ("streamed").

use super::word_topics::WordTopicFormat;
use std::fmt;

/// Bytes kept free for the CUDA context, the module and the allocator's slack.
pub const RESERVE_BYTES: u64 = 512 << 20;
/// Bytes per token of a chunk on the device: document (4), position (4), topic (2).
pub const TOKEN_BYTES: u64 = 10;
/// Bytes per token of the doc-topic rows of the chunk being sampled: topic and count packed in 4
/// bytes (8 when a document has 65,536 tokens or more, see `engine::wide_rows`).
pub fn row_bytes(longest_doc: u64) -> u64 {
    if wide_rows(longest_doc) {
        8
    } else {
        4
    }
}
/// Whether doc-topic row entries need 64 bits: a count of a document of 65,536 tokens or more
/// does not fit the 16 bits beside the topic.
pub fn wide_rows(longest_doc: u64) -> bool {
    longest_doc > u64::from(u16::MAX)
}

/// Bytes per document: token offset (4) and row length (4).
pub const DOC_BYTES: u64 = 8;
/// Bytes per work item (word, start, length, padding).
pub const ITEM_BYTES: u64 = 16;
/// Most tokens one work item (one thread block) samples: frequent words are split (ezLDA §1.5.1).
pub const ITEM_MAX_TOKENS: u64 = 4096;
/// Documents of at most this many tokens are counted by the doc-topic rebuild in a hash table in
/// shared memory (kernels.cu's `HASH_SLOTS` / 2); a longer one needs a K-entry histogram of its
/// warp's in device memory.
pub const REBUILD_HASHED_TOKENS: u64 = 512;

/// Whether the doc-topic rebuild needs its per-warp histograms: some document is longer than
/// [`REBUILD_HASHED_TOKENS`].
pub fn rebuild_histograms(longest_doc: u64) -> bool {
    longest_doc > REBUILD_HASHED_TOKENS
}

/// Warps of the doc-topic rebuild: as many as fill the device, and, when they need histograms
/// of K entries each, fewer at large K so that the histograms stay under 256 MiB.
pub fn rebuild_warps(k: u32, multiprocessors: u32, longest_doc: u64) -> u64 {
    let fill = u64::from(multiprocessors.max(1)) * 64;
    if !rebuild_histograms(longest_doc) {
        return fill.max(256);
    }
    let cap = (256u64 << 20) / (4 * u64::from(k.max(1)));
    fill.min(cap).max(256)
}

/// Cells (u32) of the rebuild's histograms: K per warp, or one unused cell when no document
/// needs them (at K = 32,768 that frees 256 MiB for the corpus).
pub fn rebuild_scratch_cells(k: u32, multiprocessors: u32, longest_doc: u64) -> u64 {
    if rebuild_histograms(longest_doc) {
        rebuild_warps(k, multiprocessors, longest_doc) * u64::from(k)
    } else {
        1
    }
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
    /// Cells (u32) of the word-topic counts when hybrid (`word_topics::cells`; dense they are
    /// `words × topics`).
    pub hybrid_cells: u64,
    /// The word-topic format asked for; `None` lets the planner choose: dense while the corpus
    /// stays resident beside it, hybrid when that saves streaming or makes the model fit.
    pub format: Option<WordTopicFormat>,
    /// ezlda's three-branch sampling: beside the rows, each token's word and C1/C2 pair.
    pub three_branch: bool,
    /// Copies of the word-topic counts asked for; `None` lets the planner choose (one engine
    /// only: several engines sum B′ between them, so they keep two).
    pub copies: Option<CountCopies>,
}

/// How the next iteration's word-topic counts are made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CountCopies {
    /// B is read while the sampler adds each new assignment to B′ (atomics), and B′ becomes B:
    /// no extra pass, twice the memory.
    Two,
    /// Only B: the sweep writes no counts, and B is cleared and recounted from the new
    /// assignments after it (`count_words`, the same integer sums, so the same model bit for
    /// bit). Half the model's memory, at the price of one more pass over the assignments (a
    /// second trip through the GPU for each chunk of a streamed corpus). SaberLDA keeps two
    /// copies (§3.1); this is what lets K = 32,768 on a PubMed-sized vocabulary fit in 6 GB.
    One,
}

impl CountCopies {
    fn count(self) -> u64 {
        match self {
            CountCopies::Two => 2,
            CountCopies::One => 1,
        }
    }
    /// How many times the counts are stored, in words ("once", "twice"), for messages.
    fn times(self) -> &'static str {
        match self {
            CountCopies::Two => "twice",
            CountCopies::One => "once",
        }
    }
}

/// Bytes per token of what the chunk being sampled needs beside its arrays: its doc-topic rows,
/// and for three-branch sampling each token's C1/C2 pair (a row entry's width).
fn chunk_bytes(input: &PlanInput) -> u64 {
    let row = row_bytes(input.longest_doc);
    if input.three_branch {
        2 * row
    } else {
        row
    }
}

/// Bytes per token kept with every chunk's arrays: for three-branch sampling each token's word.
fn token_extra_bytes(input: &PlanInput) -> u64 {
    if input.three_branch {
        4
    } else {
        0
    }
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
    /// How the word-topic counts are stored.
    pub format: WordTopicFormat,
    /// One or two copies of them.
    pub copies: CountCopies,
    /// Tokens of the longest document (whether the doc-topic rebuild needs histograms).
    pub longest_doc: u64,
    /// Device bytes of the model (B and B' or B alone, the row index, totals, normalizers).
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
            "; {:.2} GiB of {:.2} GiB (model {:.2} {}{}, histograms {:.2}, corpus {:.2})",
            g(self.total()),
            g(self.budget),
            g(self.model_bytes),
            self.format,
            match self.copies {
                CountCopies::Two => "",
                CountCopies::One => " once, recounted after each sweep",
            },
            g(self.scratch_bytes),
            g(self.corpus_bytes)
        )
    }
}

/// Why no plan fits.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PlanError {
    #[error("the word-topic counts alone need {need_gib:.2} GiB on the GPU ({words} words × {topics} topics, {}, in the smaller of the dense and hybrid formats, plus histograms) but the budget is {budget_gib:.2} GiB; use fewer topics (-k), prune the vocabulary, raise --gpu-memory or train with --device cpu", .copies.times())]
    ModelTooLarge {
        words: u64,
        topics: u32,
        /// The fewest copies the run could keep ([`CountCopies::times`] in the message).
        copies: CountCopies,
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

/// Above this many topics the hybrid word-topic format is preferred even when dense fits. Measured
/// on an H100 (NYTimes-shaped corpus, tokens/s of iterations 21-40, BENCHMARKS.md): equal at
/// K = 1,024 and 10,000 (within 0.6%), hybrid 14% faster at K = 32,768, where a dense row is
/// 128 KiB of DRAM traffic per work item even for a word of a few tokens.
pub const HYBRID_ABOVE_TOPICS: u32 = 10_000;

/// Plans a run: in the format asked for, or, when none is, hybrid above
/// [`HYBRID_ABOVE_TOPICS`], and below it dense if the corpus then stays resident and hybrid
/// otherwise (it frees memory for the corpus, or is the only one that fits).
pub fn plan(input: &PlanInput) -> Result<Plan, PlanError> {
    if input.topics > u32::from(u16::MAX) {
        return Err(PlanError::TooManyTopics(input.topics));
    }
    match input.copies {
        Some(c) => plan_copies(input, c),
        // Two copies while the corpus stays resident beside them (no extra pass). Else one copy
        // if that keeps it resident (a pass over device memory is cheaper than streaming), or
        // is all that fits, or if two would cut the streamed corpus into at least
        // `ONE_COPY_CHUNK_RATIO` times as many chunks: every chunk rebuilds the tree of each
        // word it holds, and fewer, larger chunks outweigh the recount's second trip.
        None => match plan_copies(input, CountCopies::Two) {
            Ok(p) if p.mode == Mode::Resident || input.force_streaming => Ok(p),
            two => match (two, plan_copies(input, CountCopies::One)) {
                (_, Ok(one)) if one.mode == Mode::Resident => Ok(one),
                (Ok(two), Ok(one)) if two.chunks < ONE_COPY_CHUNK_RATIO * one.chunks => Ok(two),
                (_, Ok(one)) => Ok(one),
                (two, Err(e)) => two.or(Err(e)),
            },
        },
    }
}

/// When both copy counts stream the corpus, one copy is chosen if two would need this many times
/// as many chunks. Measured on an H100 (BENCHMARKS.md, "One copy of the word-topic counts"):
/// NYTimes-shaped K = 1,024 at 1.3 GiB, 43 chunks with two copies against 16 with one, one copy
/// 9% faster; at 1.6 GiB, 16 against 10, two copies 19% faster; PubMed-shaped K = 32,768 at
/// 12 GB, 55 against 12, one copy 1.8× faster.
pub const ONE_COPY_CHUNK_RATIO: usize = 2;

fn plan_copies(input: &PlanInput, copies: CountCopies) -> Result<Plan, PlanError> {
    let prefer_hybrid = input.topics > HYBRID_ABOVE_TOPICS;
    match input.format {
        Some(f) => plan_format(input, f, copies),
        None => match plan_format(input, WordTopicFormat::Dense, copies) {
            Ok(p) if !prefer_hybrid && (p.mode == Mode::Resident || input.force_streaming) => Ok(p),
            dense => plan_format(input, WordTopicFormat::Hybrid, copies).or(dense),
        },
    }
}

fn plan_format(
    input: &PlanInput,
    format: WordTopicFormat,
    copies: CountCopies,
) -> Result<Plan, PlanError> {
    let k = u64::from(input.topics);
    let dense_cells = input.words * k;
    let cells = match format {
        WordTopicFormat::Dense => dense_cells,
        WordTopicFormat::Hybrid => input.hybrid_cells,
    };
    // B (and B'), the row index (offset and slots per word), totals and normalizers.
    let model_bytes = copies.count() * cells * 4 + input.words * 12 + k * 12;
    let scratch_bytes =
        rebuild_scratch_cells(input.topics, input.multiprocessors, input.longest_doc) * 4;
    let usable = input.budget.saturating_sub(RESERVE_BYTES);
    if model_bytes + scratch_bytes >= usable {
        let smallest = dense_cells.min(input.hybrid_cells);
        // The least a run needs: one copy, unless the caller asked for two.
        let least = match input.copies {
            Some(CountCopies::Two) => CountCopies::Two,
            _ => CountCopies::One,
        };
        return Err(PlanError::ModelTooLarge {
            words: input.words,
            topics: input.topics,
            copies: least,
            need_gib: gib(least.count() * smallest * 4
                + input.words * 12
                + k * 12
                + scratch_bytes
                + RESERVE_BYTES),
            budget_gib: gib(input.budget),
        });
    }
    let avail = usable - model_bytes - scratch_bytes;
    let tokens = input.tokens.max(1);
    let part = input.partition_tokens.max(1);
    let partitions = tokens.div_ceil(part).min(input.docs.max(1));
    let per_partition = tokens.div_ceil(partitions);
    let resident = corpus_arrays(tokens, input.docs, input.words, partitions)
        + tokens * token_extra_bytes(input)
        + (per_partition + input.longest_doc) * chunk_bytes(input);
    if !input.force_streaming && resident <= avail {
        return Ok(Plan {
            mode: Mode::Resident,
            chunks: partitions as usize,
            chunk_tokens: per_partition,
            format,
            copies,
            longest_doc: input.longest_doc,
            model_bytes,
            scratch_bytes,
            corpus_bytes: resident,
            budget: input.budget,
        });
    }
    // Two slots, each a chunk's arrays and rows; a chunk may overshoot its target by one document.
    let per_token_slot =
        TOKEN_BYTES + token_extra_bytes(input) + chunk_bytes(input) + DOC_BYTES + ITEM_BYTES;
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
        format,
        copies,
        longest_doc: input.longest_doc,
        model_bytes,
        scratch_bytes,
        corpus_bytes: 2 * (chunk_tokens + input.longest_doc) * per_token_slot,
        budget: input.budget,
    })
}

#[cfg(test)]
mod tests {
    use super::super::word_topics::cells;
    use super::*;

    const GIB: u64 = 1 << 30;

    /// Zipf(1) token counts of `words` words over `tokens` tokens.
    fn zipf(words: u64, tokens: u64) -> Vec<u64> {
        let h: f64 = (1..=words).map(|r| 1.0 / r as f64).sum();
        (1..=words)
            .map(|r| ((tokens as f64 / (h * r as f64)) as u64).max(1))
            .collect()
    }

    fn corpus(budget: u64, k: u32, words: u64) -> PlanInput {
        let counts = zipf(words, 99_542_125);
        PlanInput {
            tokens: 99_542_125,
            docs: 299_752,
            words,
            topics: k,
            longest_doc: 2_000,
            budget,
            multiprocessors: 132,
            partition_tokens: 16_000_000,
            force_streaming: false,
            hybrid_cells: cells(&counts, k, WordTopicFormat::Hybrid),
            format: None,
            three_branch: false,
            copies: None,
        }
    }

    fn nytimes(budget: u64, k: u32) -> PlanInput {
        corpus(budget, k, 101_636)
    }

    #[test]
    fn nytimes_fits_an_h100() {
        let p = plan(&nytimes(78 * GIB, 1024)).unwrap();
        assert_eq!(p.mode, Mode::Resident);
        assert_eq!(p.chunks, 7);
        // Dense while the corpus stays resident beside it. B and B': 2 × 101,636 × 1,024 × 4
        // bytes, the row index and the totals.
        assert_eq!(p.format, WordTopicFormat::Dense);
        assert_eq!(
            p.model_bytes,
            2 * 101_636 * 1024 * 4 + 101_636 * 12 + 1024 * 12
        );
        assert!(p.total() < 3 * GIB, "{p}");
        assert!(p.to_string().contains("resident"), "{p}");
    }

    #[test]
    fn small_budget_streams_in_chunks_that_fit() {
        let budget = 3 * GIB / 2;
        let mut i = nytimes(budget, 1024);
        i.copies = Some(CountCopies::Two);
        let p = plan(&i).unwrap();
        assert_eq!(p.mode, Mode::Streamed);
        // Streamed either way: the hybrid counts leave more room for each chunk.
        assert_eq!(p.format, WordTopicFormat::Hybrid);
        let mut dense = i;
        dense.format = Some(WordTopicFormat::Dense);
        let d = plan(&dense).unwrap();
        assert!(d.chunk_tokens < p.chunk_tokens, "{d} vs {p}");
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
    fn hybrid_counts_fit_where_dense_do_not() {
        // PubMed's vocabulary at K = 32,768 in 20 GiB: the dense counts alone need 34 GiB.
        let mut i = corpus(20 * GIB, 32_768, 141_043);
        i.format = Some(WordTopicFormat::Dense);
        i.copies = Some(CountCopies::Two);
        assert!(matches!(
            plan(&i).unwrap_err(),
            PlanError::ModelTooLarge { .. }
        ));
        i.format = None;
        i.copies = None;
        let p = plan(&i).unwrap();
        assert_eq!(p.format, WordTopicFormat::Hybrid);
        assert_eq!(p.copies, CountCopies::Two);
        assert_eq!(p.mode, Mode::Resident, "{p}");
        assert!(p.to_string().contains("hybrid"), "{p}");
    }

    /// PubMed's shape: 737.8M tokens in 8.2M documents over 141,043 words.
    fn pubmed(budget: u64, k: u32) -> PlanInput {
        let (tokens, words) = (737_800_000, 141_043);
        PlanInput {
            tokens,
            docs: 8_200_000,
            words,
            topics: k,
            longest_doc: 400,
            budget,
            multiprocessors: 132,
            partition_tokens: 16_000_000,
            force_streaming: false,
            hybrid_cells: cells(&zipf(words, tokens), k, WordTopicFormat::Hybrid),
            format: None,
            three_branch: false,
            copies: None,
        }
    }

    #[test]
    fn one_copy_of_the_counts_where_two_do_not_fit() {
        // K = 32,768 on PubMed's vocabulary: two hybrid copies do not fit 6 GB, one does, and
        // the corpus streams beside it.
        let budget = 6_000_000_000;
        let mut two = pubmed(budget, 32_768);
        two.copies = Some(CountCopies::Two);
        let e = plan(&two).unwrap_err();
        assert!(e.to_string().contains("twice"), "{e}");
        let p = plan(&pubmed(budget, 32_768)).unwrap();
        assert_eq!(p.copies, CountCopies::One, "{p}");
        assert_eq!(p.format, WordTopicFormat::Hybrid, "{p}");
        assert_eq!(p.mode, Mode::Streamed, "{p}");
        assert!(p.total() + RESERVE_BYTES <= budget, "{p}");
        assert!(p.to_string().contains("once"), "{p}");
        // Where even one copy does not fit, the error says what the least is.
        let e = plan(&pubmed(GIB, 32_768)).unwrap_err();
        assert!(e.to_string().contains("once"), "{e}");
    }

    #[test]
    fn one_copy_when_two_would_stream_in_many_more_chunks() {
        // PubMed's shape at K = 32,768 in 8 GB: both stream, two copies in three times the
        // chunks of one.
        let budget = 8_000_000_000;
        let mut two = pubmed(budget, 32_768);
        two.copies = Some(CountCopies::Two);
        let (t, p) = (plan(&two).unwrap(), plan(&pubmed(budget, 32_768)).unwrap());
        assert_eq!((t.mode, p.mode), (Mode::Streamed, Mode::Streamed));
        assert!(t.chunks >= ONE_COPY_CHUNK_RATIO * p.chunks, "{t} vs {p}");
        assert_eq!(p.copies, CountCopies::One, "{p}");
        // NYTimes at K = 1,024 in 1.6 GiB: two copies stream in fewer than twice one copy's
        // chunks, and keep the single trip.
        let i = nytimes(GIB + 6 * GIB / 10, 1024);
        let p = plan(&i).unwrap();
        assert_eq!(
            (p.mode, p.copies),
            (Mode::Streamed, CountCopies::Two),
            "{p}"
        );
    }

    #[test]
    fn one_copy_when_it_keeps_the_corpus_resident() {
        // Two dense copies (0.78 GiB) push NYTimes (1.0 GiB of arrays) out of 2.1 GiB at
        // K = 1,024; one keeps it resident.
        let mut i = nytimes(2 * GIB + GIB / 10, 1024);
        i.format = Some(WordTopicFormat::Dense);
        let mut two = i;
        two.copies = Some(CountCopies::Two);
        assert_eq!(plan(&two).unwrap().mode, Mode::Streamed);
        let p = plan(&i).unwrap();
        assert_eq!(
            (p.mode, p.copies),
            (Mode::Resident, CountCopies::One),
            "{p}"
        );
        // With room for both, two (no extra pass).
        assert_eq!(
            plan(&nytimes(78 * GIB, 1024)).unwrap().copies,
            CountCopies::Two
        );
    }

    #[test]
    fn hybrid_is_preferred_at_large_k() {
        assert_eq!(
            plan(&nytimes(78 * GIB, 10_000)).unwrap().format,
            WordTopicFormat::Dense
        );
        assert_eq!(
            plan(&nytimes(78 * GIB, 32_768)).unwrap().format,
            WordTopicFormat::Hybrid
        );
    }

    #[test]
    fn model_too_large_says_what_to_do() {
        let e = plan(&corpus(GIB, 32_768, 141_043)).unwrap_err();
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
        assert_eq!(rebuild_warps(1024, 132, 2_000), 132 * 64);
        assert_eq!(rebuild_warps(32_768, 132, 2_000), 2048);
        assert!(rebuild_warps(65_535, 1, 2_000) >= 256);
        assert_eq!(rebuild_scratch_cells(32_768, 132, 2_000), 2048 * 32_768);
    }

    #[test]
    fn the_rebuild_hash_table_is_what_the_planner_assumes() {
        let kernels = include_str!("kernels.cu");
        let slots = format!("#define HASH_SLOTS {}", 2 * REBUILD_HASHED_TOKENS);
        assert!(kernels.contains(&slots), "kernels.cu lacks {slots:?}");
        assert!(kernels.contains("bool hashed = 2 * len <= HASH_SLOTS;"));
    }

    #[test]
    fn short_documents_need_no_histograms() {
        // Every document counted in shared memory: all the warps, one cell of scratch.
        assert_eq!(rebuild_warps(32_768, 132, 512), 132 * 64);
        assert_eq!(rebuild_scratch_cells(32_768, 132, 512), 1);
        assert_eq!(rebuild_scratch_cells(32_768, 132, 513), 2048 * 32_768);
        let p = plan(&pubmed(6_000_000_000, 32_768)).unwrap();
        assert_eq!(p.scratch_bytes, 4, "{p}");
    }
}
