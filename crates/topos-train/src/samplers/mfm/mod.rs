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
//! default ([`OwnDraw::Balanced`]) the draw is the collapsed conditional's expectation over where
//! that earlier draw was, with that posterior balanced over the document's tokens ([`OwnDraw`]
//! derives it), which brings the model to `cgs`'s at equal iterations with no per-token state;
//! `--own-draw kept` is the paper's conditional. What `mfm` buys is memory.

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
        "when memory matters more than the speed: no per-token state, and with --counters approx8 29% less peak memory than cgs on 20M tokens at K = 100 (but the dense V x K counts of its sweep cost more than cgs at large K); with collapsed Gibbs's conditional in expectation over its own earlier draw, that posterior balanced over each short document's tokens (--own-draw balanced, the default), its model is within 0.011 nats/token of cgs's at equal iterations on the GPU and 0.018 on the CPU on every corpus measured (8-token documents, arXiv, 20 Newsgroups, Gutenberg to K = 10,000, the NYTimes-shaped corpus); --own-draw removed (each token's posterior alone) is 0.025-0.04 below cgs on 8-token documents and as good elsewhere, and balancing runs at 0.6-0.96 of its speed on the GPU (0.6-0.8 on one CPU thread) where it balances (short documents) and at its speed elsewhere; with the paper's draw (--own-draw kept) esca's, 0.03-0.12 below cgs on short documents; 1.8-4x slower than esca on one thread with the paper's draw, and the removal runs at 0.5-0.63 of the paper's draw's speed on one thread; on the GPU 4 B a token (approx8: 58% of cgs's device memory at K = 1,000 at cgs's held-out value, 61% at 10,000, but 3.5x at 32,768, where cgs keeps hybrid rows) at 0.08-0.1 of cgs's speed (0.07 at K = 32,768 on Gutenberg); the same model for any number of threads, processes or GPUs; no checkpoints, learned priors or fixed counts"
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
/// Collapsed Gibbs (Griffiths & Steyvers 2004, Eq. 5) draws a token from counts *without* the
/// token: with A = tpd[m][k], b = wpt[k][v], inv = 1/(wt[k] + Vβ) and z' its earlier topic,
///
/// ```text
/// w_k(z') = (A − [z' = k] + α_k)(b − [z' = k] + β) / (wt[k] − [z' = k] + Vβ)
/// ```
///
/// Mean-for-Mode keeps no z' (Tristan et al. §2), so the paper draws from w_k with the counts as
/// they are, as ESCA does: a topic the document holds once through this very token keeps a weight
/// of 1 + α_k instead of α_k, and a word of few tokens keeps its own count of 1 against β. That
/// holds the model 0.04–0.13 nats/token below `cgs` (BENCHMARKS.md).
///
/// What is kept says where z' can have been: in a topic that both the document's row and the
/// word's row hold (the counts include it), and, tokens of a topic falling into documents and
/// words independently, in topic k with probability
///
/// ```text
/// π_k = A b inv / D'_mv,      D'_mv = Σ_j A_j b_j inv_j      (zero unless A ≥ 1 and b ≥ 1)
/// ```
///
/// `Removed` draws from the conditional's expectation over that posterior (`Balanced`, below,
/// changes only the posterior),
///
/// ```text
/// w_k = (1 − π_k)(A + α_k)(b + β) inv  +  π_k (A − 1 + α_k)(b − 1 + β) inv⁻,    inv⁻ = 1/(wt[k] − 1 + Vβ)
/// ```
///
/// which splits into the buckets of §5 with every piece ≥ 0 wherever π_k > 0 (A, b ≥ 1):
///
/// ```text
/// Q'_k = (1 − π_k)(A + α_k) b inv + π_k (A − 1 + α_k)(b − 1) inv⁻                over the word's non-zeros
/// R'_k = (1 − π_k) A β inv + π_k [(A − 1) β inv⁻ + α_k β (inv⁻ − inv)]            over the document's
/// S_k  = α_k β inv                                                                unchanged
/// ```
///
/// Only topics both rows hold change, and Q'_k = Q_k − π_k G_k with π_k linear in 1/D'_mv, so a
/// form that visits the word's row finds every mass in one pass
/// ([`cpu`]'s `draw_word_side_removed`). Measured (BENCHMARKS.md, "mfm's own draw out of the
/// word's count too"): within 0.013 nats/token of `cgs` at equal iterations from K = 100 to
/// 32,768 on 20 Newsgroups, arXiv, Gutenberg and the NYTimes-shaped corpus, and 0.024–0.040
/// below on 8-token documents, where the loss is π itself: it weighs each token alone.
///
/// `Balanced` (the default) keeps those weights with π balanced over the document's tokens:
/// their earlier draws put exactly A_k of them in topic k, so the matrix π_jk of the document's
/// tokens has row sums 1 and column sums A_k, which the independent π meets only on average (two
/// tokens whose words favour a topic the document holds once each get most of that one count).
/// Its maximum-entropy form π_jk = r_j c_k b_jk inv_k, found by Sinkhorn scaling, replaces A_k
/// in π's numerator and in D'_mv by the document's scalings c_k ([`cpu`]'s `Frozen::balance`,
/// also the GPU kernel's), so every form of the draw is `Removed`'s with c in place of A. Short
/// documents with small counts only (`cpu::balances`). Measured (BENCHMARKS.md, "mfm's own draw
/// balanced over the document"): within 0.011 of `cgs` on every corpus there on one H100 (0.018
/// on the CPU), 8-token documents included (−0.011 / −0.004 / +0.003 at K = 100 / 300 / 1,000).
///
/// `Document` takes the indicator's expectation out of the document's count only, with π_k =
/// A φ_kv / D_mv (φ_kv = (b + β) inv, D_mv = Σ_j A_j φ_jv): p(z = k) ∝ (A − π_k + α_k) φ_kv,
/// exact in expectation for the document's factor, which is linear in the indicator. It was the
/// default on 2026-11-27 until this change: better on very short documents, but wherever the
/// word's own count matters (large K, rare words) it keeps ESCA's pull: 0.045 below `cgs` on
/// arXiv at K = 1,000, 0.10 on Gutenberg at 32,768.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OwnDraw {
    /// Tristan et al.'s conditional: the counts as they are (ESCA's draw).
    Kept,
    /// The earlier draw's expected count taken out of the document's row only.
    Document,
    /// The collapsed conditional's expectation over the earlier draw: out of the document's and
    /// the word's counts, π weighing each token alone.
    Removed,
    /// `Removed` with π balanced over the document's tokens: their earlier draws fill the
    /// document's counts exactly, a constraint `Removed`'s π meets only on average
    /// (Sinkhorn scaling, [`cpu`]'s `Frozen::balance`).
    Balanced,
}

impl OwnDraw {
    /// Its recorded value (`own_draw`).
    pub fn code(self) -> u32 {
        match self {
            OwnDraw::Kept => 0,
            OwnDraw::Document => 1,
            OwnDraw::Removed => 2,
            OwnDraw::Balanced => 3,
        }
    }

    /// Whether the draw takes the earlier draw out of the word's count too (π over the topics
    /// both rows hold).
    pub fn out_of_word(self) -> bool {
        matches!(self, OwnDraw::Removed | OwnDraw::Balanced)
    }
}

/// `--own-draw` / `own_draw=`: [`OwnDraw`], recorded as 0 (kept), 1 (document), 2 (removed) or 3
/// (balanced).
pub static OWN_DRAW: Setting = Setting {
    key: "own_draw",
    flag: "--own-draw",
    keyword: "own_draw",
    value_name: "HOW",
    describe: "what Mean-for-Mode's draw does with the token's own earlier draw, which it does not keep: balanced (the collapsed conditional's expectation over where that draw was, out of the document's and the word's counts, with the posterior over the document's earlier draws balanced to its counts where they are small: within 0.011 nats/token of cgs on 8-token documents), removed (the same, each token's posterior alone: 0.025-0.04 below cgs on 8-token documents), document (out of the document's count only: up to 0.10 below cgs at large K, where a word's own count matters) or kept (Tristan et al.'s conditional, esca's: trails cgs on short documents); the model records it",
    values: SettingValues::Named(&[("balanced", 3), ("removed", 2), ("document", 1), ("kept", 0)]),
    default: 3,
    cpu_default: 3,
    changes_model: true,
};

/// The treatment of the token's own earlier draw a run's settings ask for.
pub fn own_draw(settings: &SamplerSettings) -> OwnDraw {
    match OWN_DRAW.value(settings) {
        0 => OwnDraw::Kept,
        1 => OwnDraw::Document,
        2 => OwnDraw::Removed,
        _ => OwnDraw::Balanced,
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
    /// Each word's tokens in the whole corpus (the scale's largest word count; the CPU engine's
    /// weights of the draw's forms): the same on every worker. Empty where neither reads them
    /// (exact counters on the GPU).
    pub word_tokens: Vec<u64>,
    pub token_base: u64,
    pub doc_base: u64,
    /// Training tokens of the whole run.
    pub global_tokens: u64,
}

impl WorkerShare {
    /// Checks what `mfm` refuses at any device (a checkpoint, fixed counts, no tokens, a word
    /// outside the vocabulary) and cuts this worker's share.
    /// `count_words`: the engine reads [`WorkerShare::word_tokens`] (else they are counted only
    /// where the counters' scale needs them, the approximate widths).
    pub fn open(
        setup: &crate::engine::EngineSetup,
        count_words: bool,
    ) -> Result<Self, crate::TrainError> {
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
        let width = counter_width(&setup.settings);
        let word_tokens = if count_words || width != CounterWidth::Exact {
            crate::layout::word_counts(whole.tokens(), setup.num_words)
        } else {
            Vec::new()
        };
        let scale = counters::CounterScale::for_corpus(width, whole, &word_tokens);
        let t = &setup.transport;
        let workers = t.workers();
        if workers == 1 {
            return Ok(WorkerShare {
                docs: setup.docs.clone(),
                scale,
                word_tokens,
                token_base: 0,
                doc_base: 0,
                global_tokens: whole.num_tokens(),
            });
        }
        let shard = crate::shard::Shard::of(whole, workers, t.rank(), workers)?;
        Ok(WorkerShare {
            docs: shard.docs_of(&setup.docs),
            scale,
            word_tokens,
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
