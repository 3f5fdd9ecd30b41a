//! The CUDA device: one NVIDIA GPU holding the whole run (issue 16: device-resident).
//!
//! * [`plan`]: the memory planner (resident or streamed in chunks), printed before a run.
//! * [`word_topics`]: the word-topic counts dense or in ezLDA's hybrid dense/hashed format.
//! * [`chunks`]: the work items and document offsets of a chunk.
//! * `engine` (with the `cuda` feature): the kernels (CUDA C in `kernels.cu`, compiled by NVRTC
//!   for the device at hand, cached on disk) and one iteration on the device; `enabled`: the
//!   [`crate::Engine`] over it. Without the feature, `disabled` says the build has no GPU support.
//!
//! What stays on the host in a run: the corpus file (memory-mapped), the word-topic row index
//! (O(V)), the staging buffers the corpus is copied through (and, where the host sorts it, one
//! piece of PDOW arrays while they are built), held-out evaluation with a sparse φ, and for a
//! streamed corpus its page-locked chunks. The start (assignments drawn with the CPU's
//! counter-based numbers), the PDOW sort of a resident corpus, the training log-likelihood,
//! held-out document completion with a dense φ and the counts live on the device; the model file,
//! checkpoints and document-topic counts are written from state copied back a piece at a time.

pub mod chunks;
pub mod plan;
pub mod word_topics;

#[cfg(feature = "cuda")]
mod enabled;
#[cfg(feature = "cuda")]
pub mod engine;
#[cfg(feature = "cuda")]
pub(crate) use enabled::join_nccl;
#[cfg(feature = "cuda")]
pub use enabled::CudaEngine;
#[cfg(feature = "cuda")]
pub(crate) use enabled::PAGEABLE_NOTE;

#[cfg(not(feature = "cuda"))]
mod disabled;

/// The registry entry.
pub struct Cuda;

/// The GPU's sampler settings: the kernels implement ezLDA's bound at depth g = 2 only
/// (`word_top2` in `kernels.cu` keeps each word's two most popular topics K₁, K₂ and the bound
/// a₃, and the count rebuild each token's C₁/C₂ pair beside its chunk). Another g would need
/// top-(g + 1) lists per word and g counts per token resident on the device, not a compile-time
/// constant, so it is refused; the CPU runs any g to the same model. mh's `--mh-steps` is an
/// argument of its kernel (`sample_mh`), so every value runs on the GPU.
pub(crate) fn settings_refusal(
    sampler: &dyn crate::Sampler,
    settings: &crate::sampler::SamplerSettings,
) -> Option<String> {
    let three_branch = sampler
        .gpu()
        .and_then(|g| g.kernel())
        .is_some_and(|k| k.three_branch);
    let g = crate::samplers::ezlda::EzldaDepth::of(settings);
    (three_branch && g != crate::sampler::EzldaDepth::DEFAULT).then(|| {
        format!(
            "--ezlda-g {} runs on the CPU only: the GPU kernel implements g = {} (each word's two most popular topics); use --device cpu (the model is the same for every g) or leave --ezlda-g out",
            g.get(),
            crate::sampler::EzldaDepth::DEFAULT.get()
        )
    })
}

/// Default tokens per resident partition: at small K, partitions whose doc-topic rows stay near
/// L2 pay off (measured on the H100, NYTimes-shaped corpus: 7 partitions 1,986M tokens/s at
/// K = 1,024 against 1,766M for one); at large K every partition rebuilds every word's K-leaf
/// tree, so one partition wins (1,135M against 907M at K = 10,000).
pub fn default_partition_tokens(topics: u32) -> u64 {
    if topics <= 2048 {
        16_000_000
    } else {
        u64::from(u32::MAX)
    }
}

/// Most PDOW entries built on the host at once: 2²⁷, staged page-locked at 8 bytes an entry, plus
/// the sort's 8 bytes of scratch (2 GiB in all). Each piece is one pass over the partition's
/// tokens, so larger pieces cost fewer passes (a 745M-token partition: 6).
pub const PIECE_TOKENS: usize = 1 << 27;

/// Largest piece staged in two page-locked pairs, one sorted into while the other is copied to
/// the device (many small partitions); larger pieces use one pair, since page-locking costs
/// about 0.4 s a GiB, more than the copy it would hide.
pub const DOUBLE_STAGING_MAX_TOKENS: usize = 1 << 25;

/// Host bytes of the PDOW pieces being built, for pieces of `piece` entries: the staging pairs
/// and the sort's scratch.
pub fn piece_bytes(piece: u64) -> u64 {
    let pairs = if piece <= DOUBLE_STAGING_MAX_TOKENS as u64 {
        2
    } else {
        1
    };
    (8 * pairs + crate::layout::SORT_SCRATCH_BYTES) * piece
}

/// The host memory of a run on the GPU: what every run holds ([`crate::memory::shared_items`]),
/// the word-topic row index and the training tokens of every word (20 B a word), the PDOW pieces
/// being built ([`piece_bytes`]: page-locked staging and the sort's scratch, at most 2 GiB),
/// the CUDA driver and context, and for a corpus streamed
/// through the device its page-locked chunks (10 B a token and the work items); a resumed run
/// also reads its checkpoint (2 B a token).
pub fn host_memory(
    shape: &crate::memory::RunShape,
    streamed: bool,
    resume: bool,
) -> crate::memory::MemoryEstimate {
    let s = shape;
    let mut items = crate::memory::shared_items(s);
    items.push(("word-topic row index (20 B/word)", 20 * s.words));
    items.push((
        "PDOW pieces being built (16-24 B/token of a piece, at most 2 GiB)",
        piece_bytes(s.tokens.min(PIECE_TOKENS as u64)),
    ));
    items.push(("CUDA driver and context", 512 << 20));
    if streamed {
        items.push((
            "page-locked chunks of a streamed corpus (10 B/token + items)",
            10 * s.tokens + 16 * (s.tokens / plan::ITEM_MAX_TOKENS + s.words),
        ));
    }
    if resume {
        items.push(("checkpoint being resumed (2 B/token)", 2 * s.tokens));
    }
    crate::memory::MemoryEstimate::new(items)
}
