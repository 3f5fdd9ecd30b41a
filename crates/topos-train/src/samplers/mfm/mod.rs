//! Mean-for-Mode estimation (Tristan, Tassarotti & Steele, "Efficient training of LDA on a GPU
//! by Mean-for-Mode estimation", ICML 2015): an uncollapsed sampler whose θ and φ are the means
//! of their conditionals given the last iteration's counts (§2, Fig. 2), so no token's topic is
//! kept between iterations, with counts that are only incremented and so may be approximate
//! (§4.1), drawn densely or from the S / R_m / Q_mv buckets (§5, Alg. 3).
//!
//! The paper's draw, p(z = k) ∝ (tpd[m][k] + α_k)(wpt[k][v] + β)/(wt[k] + Vβ) with the counts
//! of the last iteration, is ESCA's (SaberLDA Eq. 1): the token's own earlier draw stays in the
//! counts, because there is no stored assignment to take out, so a topic a document holds once
//! tends to keep itself and the model trails `cgs` where `esca`'s does (short documents). By
//! default ([`OwnDraw::Removed`]) the draw takes out that earlier draw's *expected* count instead
//! ([`OwnDraw`] derives it), which brings the model to `cgs`'s at equal iterations with no
//! per-token state; `--own-draw kept` is the paper's conditional. What `mfm` buys is memory.

pub mod counters;
pub mod cpu;
pub mod gpu;

use crate::memory::RunShape;
use crate::sampler::{
    CpuImplementation, Determinism, Exactness, GpuImplementation, Sampler, SamplerSettings,
    Setting, SettingValues,
};
use counters::CounterWidth;

/// The registry entry.
pub struct Mfm;

impl Sampler for Mfm {
    fn name(&self) -> &'static str {
        "mfm"
    }
    fn summary(&self) -> &'static str {
        "Mean-for-Mode estimation: every token drawn from the means of θ and φ given the last iteration's counts; no assignments kept; counters of 32, 8 or 4 bits (--counters)"
    }
    fn when_to_use(&self) -> &'static str {
        "when memory matters more than the speed: no per-token state, and with --counters approx8 29% less peak memory than cgs on 20M tokens at K = 100 (but the dense V x K counts of its sweep cost more than cgs at large K); with its own earlier draw removed in expectation (--own-draw removed, the default) its model is cgs's at equal iterations up to K = 1,000 (exact and approx8 within 0.02 nats/token, approx4 within 0.035; at K = 10,000 0.03 below, at 32,768 0.10 below, where the word's count still holds the token; the removal costs a third of its CPU speed and 4-12% on the GPU), with the paper's draw (--own-draw kept) esca's, 0.03-0.12 below cgs on short documents; 1.8-4x slower than esca on one thread with the paper's draw, 2.5-6x with it removed, 6x on 16 threads at K = 1,000; on the GPU 4 B a token (approx8: 58% of cgs's device memory at K = 1,000, 61% at 10,000, but 3.5x at 32,768, where cgs keeps hybrid rows) at 0.15-0.24 of esca's speed (0.03 at K = 32,768); the same model for any number of threads, processes or GPUs; no checkpoints, learned priors or fixed counts"
    }
    fn reference(&self) -> &'static str {
        "Tristan, Tassarotti & Steele (ICML 2015) §2 Fig. 2, §3 Alg. 1, §4.1 (approximate counters), §5 Alg. 3 (S / R_m / Q_mv buckets)"
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
    fn keeps_assignments(&self) -> bool {
        false
    }
    fn state(&self) -> &'static str {
        "no assignments: each document's and each word's non-zero counts, as counters of 32, 8 or 4 bits beside a 2-byte topic"
    }
    fn state_bytes_per_token(&self) -> u64 {
        0
    }
    fn cpu_memory(&self, shape: &RunShape) -> Vec<(&'static str, u64)> {
        let nnz_doc = shape.tokens.min(shape.docs.saturating_mul(shape.topics));
        vec![
            (
                "words' new counts while sampling (4 B × V × K)",
                4 * shape.words * shape.topics,
            ),
            (
                "document rows, kept and new (at most 2 × 6 B a non-zero)",
                12 * nnz_doc + 16 * (shape.docs + 1),
            ),
            (
                "word rows and their weights (at most 14 B a non-zero)",
                14 * shape.word_topic_nonzeros() + 8 * (shape.words + 1),
            ),
            (
                "per-thread rows (about 36 B × K)",
                shape.threads.max(1) * shape.topics * 36,
            ),
        ]
    }
    fn default_partitions(&self, _tokens: u64, threads: usize) -> usize {
        // The model does not depend on it: enough to keep every thread busy.
        (threads * 4).max(1)
    }
    fn cpu(&self) -> CpuImplementation {
        CpuImplementation::Engine(cpu::open)
    }
    fn gpu(&self) -> Option<GpuImplementation> {
        Some(GpuImplementation::Engine(gpu::open))
    }
    fn settings(&self) -> &'static [&'static Setting] {
        static TAKES: [&Setting; 2] = [&COUNTERS, &OWN_DRAW];
        &TAKES
    }
}

/// `--counters` / `counters=`: the width of Mean-for-Mode's counts ([`CounterWidth`]), recorded
/// as its bits (`counter_bits`: 32, 8 or 4).
pub static COUNTERS: Setting = Setting {
    key: "counter_bits",
    flag: "--counters",
    keyword: "counters",
    value_name: "WIDTH",
    describe: "how wide each of Mean-for-Mode's counts is kept: exact (32 bits), approx8 or approx4 (Morris's geometric scale, each count rounded without bias when the sweep ends, Tristan et al. §4.1); the model records it",
    values: SettingValues::Named(&[
        ("exact", CounterWidth::Exact.bits()),
        ("approx8", CounterWidth::Approx8.bits()),
        ("approx4", CounterWidth::Approx4.bits()),
    ]),
    default: CounterWidth::Exact.bits(),
    cpu_default: CounterWidth::Exact.bits(),
    changes_model: true,
};

/// The counter width a run's settings ask for.
pub fn counter_width(settings: &SamplerSettings) -> CounterWidth {
    CounterWidth::from_bits(COUNTERS.value(settings)).unwrap_or(CounterWidth::Exact)
}

/// What the draw does with the token's own draw of the last iteration, which is part of the
/// counts it reads and which `mfm` does not keep.
///
/// Collapsed Gibbs (Griffiths & Steyvers 2004, Eq. 5) draws a token from its document's counts
/// *without* the token, (A¬_dk + α_k), A¬_dk = A_dk − [z_prev = k]. Mean-for-Mode keeps no z_prev
/// (Tristan et al. §2), so the paper draws from A_dk itself, as ESCA does: a topic the document
/// holds once through this very token keeps a weight of 1 + α_k instead of α_k, which on short
/// documents holds the model 0.08-0.13 nats/token below `cgs` (BENCHMARKS.md).
///
/// `Removed` takes out the indicator's expectation given what is kept. Of the document's A_dk
/// tokens in topic k, the one at hand had topic k with probability
///
/// ```text
/// π_k = A_dk φ_kv / D_mv,      φ_kv = (wpt[k][v] + β)/(wt[k] + Vβ),   D_mv = Σ_j A_dj φ_jv
/// ```
///
/// (the posterior of its earlier topic given the document's counts and the point estimate φ,
/// which is what Mean-for-Mode draws from), and the document factor of the collapsed
/// conditional is linear in the indicator, so its expectation is exact given π:
///
/// ```text
/// p(z = k) ∝ (A_dk − π_k + α_k) φ_kv  =  A_dk φ_kv (1 − φ_kv / D_mv)  +  α_k φ_kv
/// ```
///
/// Every weight is ≥ 0 (A_dk φ_kv ≤ D_mv, so A_dk − π_k ≥ A_dk − 1 ≥ 0 for a non-zero A_dk), only
/// the document's non-zeros change, and D_mv is the sum the draw already forms. The word's count
/// keeps the token (a word's row carries many tokens; taking π out of it too measured worse:
/// BENCHMARKS.md, "mfm with its own draw removed").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OwnDraw {
    /// Tristan et al.'s conditional: the counts as they are (ESCA's draw).
    Kept,
    /// The earlier draw's expected count taken out of the document's row (the default).
    Removed,
}

impl OwnDraw {
    /// Its recorded value (`own_draw`).
    pub fn code(self) -> u32 {
        match self {
            OwnDraw::Kept => 0,
            OwnDraw::Removed => 1,
        }
    }
}

/// `--own-draw` / `own_draw=`: [`OwnDraw`], recorded as 0 (kept) or 1 (removed).
pub static OWN_DRAW: Setting = Setting {
    key: "own_draw",
    flag: "--own-draw",
    keyword: "own_draw",
    value_name: "HOW",
    describe: "what Mean-for-Mode's draw does with the token's own earlier draw, which it does not keep: removed (its expected count taken out of the document's row: collapsed Gibbs's conditional in expectation, cgs's model at equal iterations up to K = 1,000) or kept (Tristan et al.'s conditional, esca's: trails cgs on short documents); the model records it",
    values: SettingValues::Named(&[("removed", 1), ("kept", 0)]),
    default: 1,
    cpu_default: 1,
    changes_model: true,
};

/// The treatment of the token's own earlier draw a run's settings ask for.
pub fn own_draw(settings: &SamplerSettings) -> OwnDraw {
    if OWN_DRAW.value(settings) == OwnDraw::Kept.code() {
        OwnDraw::Kept
    } else {
        OwnDraw::Removed
    }
}

/// A worker's part of an `mfm` run, what the CPU and GPU engines open alike: its contiguous share
/// of the documents (all of them with one worker), and the first global token and document of
/// that share, which key its random numbers and its cells' roundings. The model does not depend
/// on the cut: the workers sum the words' exact counts before every one rounds them alike.
pub(crate) struct WorkerShare {
    pub docs: crate::engine::TrainDocs,
    /// The run's counters, their levels derived from the whole corpus
    /// ([`counters::CounterScale::for_corpus`]): the same on every worker.
    pub scale: counters::CounterScale,
    pub token_base: u64,
    pub doc_base: u64,
    /// Training tokens of the whole run.
    pub global_tokens: u64,
}

impl WorkerShare {
    /// Checks what `mfm` refuses at any device (a checkpoint, fixed counts, no tokens, a word
    /// outside the vocabulary) and cuts this worker's share.
    pub fn open(setup: &crate::engine::EngineSetup) -> Result<Self, crate::TrainError> {
        use crate::TrainError;
        let name = setup.sampler.name();
        if let crate::engine::Start::Resume(_) = setup.start {
            return Err(TrainError::Unsupported(format!(
                "--algo {name} keeps no assignments, so it cannot resume a checkpoint"
            )));
        }
        if setup.fixed_counts.is_some() {
            return Err(TrainError::Unsupported(format!(
                "--algo {name} cannot start from fixed counts (topos update, --seed-words) yet; use --algo cgs"
            )));
        }
        let whole = setup.docs.view();
        if whole.num_tokens() == 0 {
            return Err(TrainError::EmptyCorpus);
        }
        let bound = whole.max_word_id_bound();
        if bound as usize > setup.num_words {
            return Err(TrainError::WordOutOfRange {
                found: bound - 1,
                vocab: setup.num_words,
            });
        }
        let scale = counters::CounterScale::for_corpus(
            counter_width(&setup.settings),
            whole,
            setup.num_words,
        );
        let t = &setup.transport;
        let workers = t.workers();
        if workers == 1 {
            return Ok(WorkerShare {
                docs: setup.docs.clone(),
                scale,
                token_base: 0,
                doc_base: 0,
                global_tokens: whole.num_tokens(),
            });
        }
        let shard = crate::shard::Shard::of(whole, workers, t.rank(), workers)?;
        Ok(WorkerShare {
            docs: shard.docs_of(&setup.docs),
            scale,
            token_base: shard.tokens.start,
            doc_base: shard.docs.start as u64,
            global_tokens: whole.num_tokens(),
        })
    }
}

/// The documents of the global range `docs` that a worker holding `held` documents from
/// `doc_base` on has, as its local indices (empty where it holds none of them).
pub(crate) fn local_docs(
    docs: std::ops::Range<usize>,
    doc_base: u64,
    held: usize,
) -> std::ops::Range<usize> {
    let end = doc_base + held as u64;
    let lo = (docs.start as u64).clamp(doc_base, end);
    let hi = (docs.end as u64).clamp(lo, end);
    (lo - doc_base) as usize..(hi - doc_base) as usize
}
