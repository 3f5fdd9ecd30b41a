//! Differentially private training (`topos train --private`, issue 3 part 4).
//!
//! # What is released, and what is protected
//!
//! Neighbouring corpora differ by **one training document added or removed**. The released
//! object is the model file: a word-topic count matrix and its guarantee. Noising only the final
//! counts of a Gibbs sampler would not be private — every assignment of every iteration depends
//! on every document through the counts — so the guarantee here covers the **whole run**:
//!
//! 1. **Contribution cap.** Every training document **contributes** at most `L` of its tokens to
//!    a release ([`counted`]: all of them if it has ≤ L, else L positions spread evenly over it,
//!    a choice that depends on its own length only). A release counts, for each document, the
//!    word and current topic of its counted tokens ([`contribution_counts`]); each adds 1 to
//!    exactly one cell, so adding or removing a document changes the released counts B by at
//!    most `L` in L1 norm, *whatever its assignments*. The sampler itself reads **whole**
//!    documents: a document's other tokens move only its own state (z_d, A_d), which is never
//!    released, so capping them would cost data without buying any privacy. (Until issue 25 the
//!    documents themselves were cut to their first L tokens: on 20 Newsgroups, K = 20, L = 50,
//!    that cost 0.31 nats/token of held-out likelihood without noise, BENCHMARKS.md.)
//! 2. **Releases.** The true B is never read by the sampler. It is **released** R times
//!    (`--releases`, [`PrivateOptions::releases`]) as B̃ = max(0, B + Z), Z i.i.d. discrete
//!    Laplace of scale b on **all** V × K cells, or, with the word release (the default,
//!    [`WordRelease`]), first on the V word counts and then on the rows of the vocabulary it
//!    chose ([`topos_privacy::DiscreteLaplace`], exact
//!    sampler, ChaCha20 keyed from the OS), with topic totals n_k = Σ_v B̃_vk derived from B̃
//!    (never the true totals). R − 1 releases happen before iterations spread evenly over the
//!    T iterations ([`PrivateOptions::release_before`]; the first before iteration 1, of the
//!    random start, which depends on which words the documents hold); the last one, of the
//!    final assignments after iteration T, is the model.
//! 3. **Sampler.** Only ESCA is allowed: within an iteration every token of document d (all of
//!    them, counted or not) is drawn from (its own document-topic row A_d, the **latest
//!    release** B̃, its own random numbers).
//!    Between releases the sampler keeps reading the same B̃ while each document's own
//!    assignments and A_d move on; they are never released. Iterations therefore cost no
//!    privacy, only releases do. CGS is refused: its counts change token by token inside a
//!    partition, so one document's assignments feed into the others' without any release.
//! 4. **Calibration.** b is the smaller of basic composition's R·L/ε (pure ε-DP) and the scale
//!    at which R releases meet (ε, δ) by Rényi DP (`--delta`, [`topos_privacy::rdp`]); the
//!    guarantee records which.
//!
//! # Proof sketch
//!
//! Fix the sampler's random numbers of every token of every document other than the added or
//! removed one, d*, to be the same in both worlds (a measure-preserving coupling: they are
//! i.i.d. uniform, see the caveat below). Induct over releases: if the releases B̃_1..B̃_{j−1}
//! are equal in both worlds, then every other document's assignments are equal too, whatever
//! number of iterations ran in between, because a document's state z_d (hence A_d) is a
//! function of its own tokens, its own random numbers and the releases only. So the counts B at
//! release j, a sum of per-document contributions that are each a function of that document's
//! state alone, differ only by d*'s contribution: an integer vector of L1 norm ≤ L (step 1),
//! however long d* is and whatever its uncounted tokens did. Release j is then
//! the discrete Laplace mechanism on a query of L1 sensitivity L given the previous releases:
//! L/b-DP (Theorem 1, discrete form), and (α, τ_α(L))-RDP for every α > 1 (the worst vector of
//! L1 norm L puts all of it in one cell, [`topos_privacy::rdp`]). Clamping at 0, deriving n_k,
//! and all the sampling between releases are post-processing. Adaptive sequential composition
//! over the R releases — Theorem 3 (ε = R·L/b) or RDP's Proposition 1 (R·τ_α, then converted
//! to (ε, δ)) — gives the guarantee; averaging over the coupled randomness keeps the bound.
//! Everything else in the model file is either a public parameter (K, α, β, T, R, L, δ, the
//! vocabulary — treated as public, as everywhere in `topos-privacy`) or withheld: the
//! provenance of a private model records seed, corpus checksum and the document and token
//! counts as 0, because each of them is an exact function of the data. The file holds no
//! per-document state: not the assignments, not A.
//!
//! # The Gaussian mechanism (`--mechanism gaussian`, issue 25), proof
//!
//! The same run, coupling and releases as above, with two changes: what a document
//! contributes, and the noise. Every step:
//!
//! 1. **Contribution clipped in L2 norm.** Releases count in units of 1/G of a token
//!    (G = [`CONTRIBUTION_UNITS`]). Document d contributes [`l2_contribution`]: the integer
//!    vector (c_wk), c_wk = ⌊G·f·n_wk/√n_w⌋ with n_wk its tokens of word w currently in topic
//!    k, n_w = Σ_k n_wk and f = min(1, C/√len_d), C = `--l2-clip`: a function of d's own
//!    tokens and topics only. Since (Σ_k c_wk)² ≥ Σ_k c_wk² for non-negative terms and
//!    Σ_k c_wk ≤ G·f·√n_w, ‖(c_wk)‖₂² ≤ Σ_w G²f²n_w = G²f²·len_d ≤ (G·C)², whatever d's length
//!    and topics; the bound is also checked in integers (and the cells shrunk if rounding ever
//!    broke it). Its contribution to the word release is (Σ_k c_wk)_w, of squared L2 norm
//!    ≤ (G·C)² by the same sum. Restricting a release to the rows of a vocabulary can only
//!    drop coordinates.
//! 2. **Sensitivity of each release.** By the coupling of the proof sketch (unchanged: it never
//!    used the noise's law), if the releases before release j are equal in both worlds, every
//!    other document's assignments are equal, so the units of release j differ exactly by
//!    d*'s contribution: an integer vector of L2 norm ≤ G·C (step 1). (Each cell's sum
//!    saturates at `u32::MAX`; min(·, MAX) can only shrink a cell's difference, so the bound
//!    holds then too, and the sum does not depend on the order documents are added in.)
//!    Release j adds independent discrete Gaussian noise N_Z(0, σ_j²) to each released cell
//!    ([`DiscreteGaussian`], exact), so given the earlier releases it is
//!    **ρ_j-zCDP with ρ_j = (G·C)²/(2σ_j²)** (CKS20 Theorem 4 per cell; Rényi divergences of
//!    independent cells add: [`topos_privacy::discrete_gaussian`]). σ_j is fixed before the
//!    first release (step 4). Which cells are released (the vocabulary of release j, the words
//!    with ũ_w ≥ [`VOCABULARY_FRACTION`]·K·σ_j) is a function of release 1 and of public
//!    numbers, fixed given the earlier releases. The word release's empirical-Bayes posterior
//!    means ([`topos_privacy::empirical_bayes`]: a function of the V noisy counts and σ_1),
//!    clamping at 0, the projection of rows, the tail, the seeded random split the sampler reads
//!    first ([`WordRelease::random_split`]: a function of ũ and of fresh randomness independent
//!    of the data), dividing units back into counts and deriving totals are post-processing.
//! 3. **Composition.** R is fixed before the first release: given (`--releases`), or
//!    [`gaussian_releases`] of T. The R releases are adaptively composed: the run is
//!    Σ_j ρ_j-zCDP = ρ-zCDP (Bun & Steinke 2016, Lemma 2.3; the ρ_j need not be equal) for every
//!    fixed value of the coupled random numbers. The output's law in each world is the mixture
//!    of these over the same distribution of the coupled numbers (independent of the data), and
//!    the Rényi divergence is jointly quasi-convex (van Erven & Harremoës 2014, Theorem 13:
//!    D_α(Σ λ_i P_i ‖ Σ λ_i Q_i) ≤ max_i D_α(P_i ‖ Q_i)), so the bound αρ holds for the run
//!    at every α > 1: the run is ρ-zCDP.
//! 4. **Calibration and conversion.** [`Releases::new`] takes ρ = [`zcdp::rho_for`](ε, δ),
//!    the largest ρ whose conversion is ≤ ε (the smaller of Bun–Steinke's ρ + 2√(ρ·ln 1/δ) and
//!    the RDP conversion of CKS20 Proposition 12 over a grid of orders, ρ-zCDP being (α, αρ)-RDP
//!    for every α), gives release j the share s_j of it ([`gaussian_shares`], public, Σ_j s_j
//!    = 1), sets σ_j² = (G·C)²/(2·s_j·ρ·(1 − 10⁻⁹)), rounded **up** to a multiple of 1/1024 by
//!    the exact sampler (the margin absorbs floating-point rounding), and records
//!    ρ_total = Σ_j (G·C)²/(2σ_j²) ≤ ρ (rounded up in the last places) in the
//!    guarantee with (ε, δ): the model is (ε, δ)-DP for adding or removing one document.
//!
//! No cap L is chosen (no `cap_epsilon`): C is a public parameter. δ > 0 is required (a
//! Gaussian mechanism is never pure ε).
//!
//! # Caveats, stated in the docs and in `--help`
//!
//! * **The sampling seed is secret.** The coupling above needs each document's random numbers to
//!   be independent of where the document sits in the corpus. The counter-based generator is
//!   keyed by the global token index, so with a *known* seed an adversary who knows every other
//!   document could recompute every other assignment in both worlds (indices shift by d*'s
//!   length) and tell them apart. Private runs therefore key the Philox training stream with 64
//!   bits from the operating system, never recorded; `--seed` is ignored. The guarantee then
//!   holds treating Philox4x32-10 under a secret key as a random function, a computational
//!   assumption (its key is 64 bits). Keying the sampler with ChaCha20 instead would remove the
//!   assumption (a change in `esca.rs`/`topos-sampling`).
//! * Private runs are **not reproducible**: both the noise and the sampling key come from the OS.
//! * Only the model file is the release. What `train` prints (document and token counts, the
//!   held-out log-likelihood, which also reads the held-out documents) is for the data holder;
//!   the training log-likelihood (a function of the true assignments) is not computed at all.
//!   The `.doctopics` side file and checkpoints hold true per-document state and are never
//!   written for a private run.
//! * Noise is dense: every released cell gets noise (all V × K without the word release; the
//!   V word counts, then |H| × K cells, with it), O(cells) time and memory per release, not
//!   O(non-zeros); at small ε the clamped noise dominates the counts (mean of max(0, Z) ≈ b/2
//!   per cell).

use crate::counts::WordTopics;
use topos_corpus::{Docs, OwnedDocs};
use topos_privacy::rdp::{self, Chosen};
use topos_privacy::{
    zcdp, Composition, DiscreteGaussian, DiscreteLaplace, Epsilon, Guarantee, NoiseSource,
    PrivacyError,
};

/// Releases of a private run when `--releases` is not given (at most T + 1): one release the
/// sampler reads (of the random start) and the model. Chosen by measurement on 20 Newsgroups
/// (BENCHMARKS.md, "Utility of differentially private training", K = 20, L = 50, T = 50): at
/// every ε ≤ 100 two releases gave the best held-out likelihood (by 0.03–0.13 nats over three,
/// and more over five or more), because the noise of the final release, not how long the
/// sampler learned, decides utility there; more releases paid off only from ε ≈ 1,000, where
/// the noise is below one count per cell. Measured before the word release and whole-document
/// sampling (issue 25); with them, two releases are the word release and the model, so the
/// sampler reads only a random split of the noisy word counts, and two still win: ε = 10 gives
/// −9.048 with R = 2, −9.108 with 3, −9.209 with 5; ε = 1 −9.730 and −9.872 with 2 and 3
/// (`bench/dp_utility.sh`, 2026-11-26).
pub const DEFAULT_RELEASES: u32 = 2;

/// δ of a private run when `--delta` is not given, at most: 10⁻⁶, well below 1/n for corpora of
/// up to ~10⁴ training documents (a δ near 1/n would allow releasing a whole document outright);
/// larger corpora get a smaller one ([`default_delta`]). A run
/// checks it against its n ([`delta_against_documents`]: refused when δ ≥ 1/n, a warning
/// above 1/(100·n)). The default mechanism (Gaussian) is (ε, δ)-DP with this δ; with
/// `--mechanism laplace` δ only buys less noise when the Rényi accountant wins (many releases,
/// dozens), and with the default two releases basic composition wins and the guarantee is pure
/// ε (δ = 0). `--delta 0` asks for pure ε (Laplace).
pub const DEFAULT_DELTA: f64 = 1e-6;

/// δ of a private run when `--delta` is not given, for n training documents: [`DEFAULT_DELTA`],
/// or below 1/(100·n) where that is smaller, rounded down to a power of ten (10⁻⁷ for 20
/// Newsgroups' 10,204 documents), so that the default never draws [`delta_against_documents`]'s
/// warning. n is treated as public, as for that check.
pub fn default_delta(n: u64) -> f64 {
    let bound = 0.01 / n.max(1) as f64;
    if DEFAULT_DELTA <= bound {
        return DEFAULT_DELTA;
    }
    // The largest power of ten at most `bound` (checked against it: log10 can round up).
    let mut e = bound.log10().floor() as i32;
    while 10f64.powi(e) > bound {
        e -= 1;
    }
    10f64.powi(e)
}

/// What a private run's δ is, against its number of training documents n.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeltaCheck {
    /// δ ≤ 1/(100·n): nothing to say.
    Fine,
    /// 1/(100·n) < δ < 1/n: allowed, with this warning (one line).
    Warn(String),
    /// δ ≥ 1/n: refused, with this reason and what to do (one line).
    Refuse(String),
}

/// δ against the number of training documents n (0 < δ < 1). An (ε, δ) guarantee with δ ≥ 1/n
/// is met by a mechanism that publishes one training document at random outright, so such a
/// run is refused; above 1/(100·n) it is allowed with a warning. n is **treated as public**
/// for this check (like the vocabulary): whether a run is refused depends on it.
pub fn delta_against_documents(delta: f64, n: u64) -> DeltaCheck {
    let n_f = n.max(1) as f64;
    if delta * n_f >= 1.0 {
        DeltaCheck::Refuse(format!(
            "δ = {delta:e} is at least 1/n for n = {n} training documents (such a δ allows publishing a whole document); use --delta below {:.2e}, ideally at most {:.2e} (1/(100·n)), or --delta 0 for pure ε (the number of training documents is treated as public for this check)",
            1.0 / n_f,
            0.01 / n_f
        ))
    } else if delta * n_f * 100.0 > 1.0 {
        DeltaCheck::Warn(format!(
            "warning: δ = {delta:e} is above 1/(100·n) = {:.2e} for n = {n} training documents: δ should be much smaller than 1/n; consider --delta {:.2e} or less, or --delta 0 for pure ε",
            0.01 / n_f,
            0.01 / n_f
        ))
    } else {
        DeltaCheck::Fine
    }
}

/// Share of the run's ε spent choosing the cap L privately when the user does not set it
/// (`--max-doc-tokens` left out): ε_L = ε/20; the releases share the other 95%. See [`choose_cap`].
pub const CAP_EPSILON_SHARE: f64 = 0.05;

/// The quantile of the training documents' lengths that the automatic cap aims at: q = 1/4
/// (numerator, denominator). Chosen by measurement (BENCHMARKS.md, "Private training, issue 25:
/// utility against corpus size"): on 20 Newsgroups the best measured cap at ε ≤ 10 was L = 50,
/// its lower quartile (median 78); on the synthetic corpora (median 99, lower quartile 75) L
/// from 20 to 75 scored within 0.04 nats at ε = 1 and L = 100, 150 lost 0.06, 0.15. Below the
/// shortest documents every document contributes L tokens, so the signal per cell grows like L
/// and the noise too (b = R·L/ε): no gain; above the lower quartile a quarter of the documents
/// stop adding signal while the noise keeps growing.
pub const CAP_QUANTILE: (u64, u64) = (1, 4);

/// What a private run promises and how long it is.
#[derive(Clone, Copy, Debug)]
pub struct PrivateOptions {
    /// The total ε of the run (every release together, and the choice of the cap when it was
    /// made privately: `cap_epsilon`).
    pub epsilon: Epsilon,
    /// The part of `epsilon` spent choosing `max_doc_tokens` privately ([`choose_cap`]); 0 when
    /// the cap was given. The releases are calibrated to `epsilon − cap_epsilon`. With
    /// `max_doc_tokens` 0 (the Laplace mechanism) the cap is still to be chosen, by the run,
    /// with this ε, once its budget is charged ([`PrivateOptions::cap_to_choose`]).
    pub cap_epsilon: f64,
    /// The δ the Rényi accountant may use (0: pure ε, basic composition only).
    pub delta: f64,
    /// Per-document token cap L (the L1 sensitivity of the word-topic counts).
    pub max_doc_tokens: u32,
    /// Planned iterations T.
    pub iterations: u32,
    /// Noisy releases R of the word-topic counts, the final model included: R − 1 releases the
    /// sampler reads, spread evenly over the T iterations, and the model. 1 ≤ R ≤ T + 1, and
    /// R ≥ 2 when T ≥ 1 (the sampler needs something to read).
    pub releases: u32,
    /// The first release is of the **word counts** (V cells) instead of the word-topic counts
    /// (V × K cells); it picks the vocabulary the later releases noise (see [`WordRelease`]).
    pub word_release: bool,
    /// The noise: discrete Laplace on contributions capped at `max_doc_tokens` tokens (pure ε or
    /// Rényi), or discrete Gaussian on contributions clipped in L2 norm (zCDP, (ε, δ); see
    /// [`PrivateMechanism::Gaussian`]).
    pub mechanism: PrivateMechanism,
}

/// The noise mechanism of a private run (`train --private --mechanism`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrivateMechanism {
    /// Discrete Laplace noise; each document contributes at most L = `max_doc_tokens` tokens
    /// (L1 sensitivity L), the original mechanism (module documentation).
    Laplace,
    /// Discrete Gaussian noise (issue 25). Each document contributes a vector of L2 norm ≤ C,
    /// C = `l2_clip` ([`l2_contribution`]: √-weighted, scaled, in units of 1/16 of a token);
    /// `max_doc_tokens` is not used. Release j is C²/(2σ_j²)-zCDP, σ_j from its share of ρ
    /// ([`gaussian_shares`]), and the R releases compose to ρ, converted to (ε, δ)
    /// ([`topos_privacy::zcdp`]); δ > 0 is required. See "The Gaussian mechanism" in the module
    /// documentation for the proof.
    Gaussian {
        /// The clipping norm C (every document's contribution has L2 norm ≤ C).
        l2_clip: u32,
        /// How ρ is split over the releases ([`gaussian_split`] chooses it from public numbers).
        split: BudgetSplit,
    },
}

/// How a Gaussian run splits its ρ over its releases ([`gaussian_shares`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BudgetSplit {
    /// The word counts [`WORD_RELEASE_SHARE`], the model [`MODEL_RELEASE_SHARE`], the sampling
    /// releases the rest: where the corpus is small against the noise, the model's rows and the
    /// word counts are what the score needs, and the sampler learns enough from frequent words.
    Focused,
    /// Every release the same share: where the signal is large, the sampling releases teach the
    /// sampler topics that the focused split's noisy ones do not.
    Equal,
}

impl BudgetSplit {
    /// Its name as `privacy plan` and the run print it.
    pub fn name(self) -> &'static str {
        match self {
            BudgetSplit::Focused => "focused",
            BudgetSplit::Equal => "equal",
        }
    }
}

/// The [`release_signal`] from which a Gaussian run splits ρ equally over its releases
/// ([`BudgetSplit::Equal`]) instead of [`BudgetSplit::Focused`]. Measured (BENCHMARKS.md, "the
/// budget where it buys the most", one draw each, T = 20 or 50): the focused split won at
/// s ≈ 870–7,100 (20 Newsgroups at ε = 1 and 10, by 0.05–0.06), 8,500 (synthetic 10M at ε = 1,
/// by 0.03) and 41,900 (20 Newsgroups at ε = 100, by 0.08 over the old equal split); the two
/// tied at 65,700 (synthetic 10M at ε = 10: −8.253 against −8.264) and the equal split won by
/// 0.16 at 73,500 (synthetic 100M at ε = 1: −8.135 against −8.297). The threshold sits between
/// the last focused win and the tie; few draws back it.
pub const EQUAL_SPLIT_SIGNAL: f64 = 50_000.0;

/// The public signal statistic of a Gaussian run: s = n·C·√ρ/K, for n training documents,
/// clipping norm C, the run's total ρ (zCDP) and K topics. It is n·C² (at most the number of
/// tokens the documents can contribute to a release) spread over the K topics, in units of the
/// noise σ = C/√ρ of a run of two equal releases: how many noise units a topic's counts hold at
/// most.
/// It reads nothing of the data but n, which the run treats as public already (its check of δ,
/// [`delta_against_documents`]).
pub fn release_signal(documents: u64, clip: u32, rho: f64, topics: u32) -> f64 {
    documents as f64 * f64::from(clip) * rho.max(0.0).sqrt() / f64::from(topics.max(1))
}

/// The budget split of a Gaussian run (issue 25 part 3) and the [`release_signal`] it was
/// chosen from: [`BudgetSplit::Equal`] from [`EQUAL_SPLIT_SIGNAL`], else
/// [`BudgetSplit::Focused`]. A function of public parameters only (ε, δ, n, K, C), so the
/// choice costs no privacy.
pub fn gaussian_split(
    epsilon: f64,
    delta: f64,
    documents: u64,
    topics: u32,
    clip: u32,
) -> Result<(BudgetSplit, f64), PrivacyError> {
    let rho = zcdp::rho_for(epsilon, delta)?;
    let signal = release_signal(documents, clip, rho, topics);
    let split = if signal >= EQUAL_SPLIT_SIGNAL {
        BudgetSplit::Equal
    } else {
        BudgetSplit::Focused
    };
    Ok((split, signal))
}

/// The fewest releases of a Gaussian private run when `--releases` is not given (at most T + 1):
/// the word release, nine releases the sampler reads and the model. With the budget split of
/// [`gaussian_shares`] the sampling releases cost a tenth of ρ together, so the sampler can learn
/// topics without drowning the model in noise. Measured (BENCHMARKS.md, "Private training,
/// issue 25: the budget where it buys the most"): R = 11 beat R = 2 at every ε measured (0.1 …
/// 10 on 20 Newsgroups, 1 and 10 on the synthetic 1M corpus).
pub const GAUSSIAN_RELEASES_MIN: u32 = 11;

/// The most releases of a Gaussian private run when `--releases` is not given: a release every
/// other iteration up to T = 50; longer runs keep 26, spread evenly (every 8 iterations at the
/// default T = 200, where on the synthetic 1M corpus 26 did as well as 51 and 0.02–0.04 better
/// than 101, a release every other iteration). Between releases the sampler reads frozen noisy
/// counts, so each release is one step of learning; the noise a release needs grows only like
/// √R. Measured at T = 50 (BENCHMARKS.md, "Private training, issue 25: a release every other
/// iteration"): on the synthetic corpora R = 26 beat R = 11 by 0.14 (10M, ε = 1), 0.29 (10M,
/// ε = 3), 0.32 (10M, ε = 10) and 0.39 nats/token (100M, ε = 1; two draws each), and R = 51 did
/// no better than 26; on 20 Newsgroups, where the topics stand less far above the noise,
/// R = 26 tied R = 11 at ε = 1, 10 and 30 (within 0.012), lost 0.03 at ε = 0.1 and won 0.02 at
/// ε = 100.
pub const GAUSSIAN_RELEASES_MAX: u32 = 26;

/// The releases R of a Gaussian run when `--releases` is not given (issue 25 part 3): one every
/// other iteration, T/2 + 1, kept between [`GAUSSIAN_RELEASES_MIN`] and
/// [`GAUSSIAN_RELEASES_MAX`], and at most T + 1. A function of T only, so the choice costs no
/// privacy.
pub fn gaussian_releases(iterations: u32) -> u32 {
    (iterations / 2 + 1)
        .clamp(GAUSSIAN_RELEASES_MIN, GAUSSIAN_RELEASES_MAX)
        .min(iterations.saturating_add(1))
}

/// The share of the run's ρ that the word release takes (Gaussian mechanism). The word counts
/// are what the model's rare words are scored by, and what picks each release's vocabulary: at
/// ε = 10 on 20 Newsgroups, with the rows released without noise, the word release's noise cost
/// nothing once every word's row was released, but the rows of the words it left out cost 0.2
/// nats (BENCHMARKS.md). Measured 0.3 / 0.5 / 0.7 / 0.9: 0.5–0.8 best.
pub const WORD_RELEASE_SHARE: f64 = 0.5;

/// The share of ρ the model (the last release) takes when sampling releases come between it and
/// the word release; they share the rest equally. The sampler learns topics from the frequent
/// words, whose counts stand far above even a large noise, while the model's rows are scored on
/// every word: noise buys most there. Measured 0.3 / 0.4 / 0.45 / 0.5 with the word release at
/// 0.4–0.6: 0.4 best, and the sampling releases' noise alone cost nothing measurable at ε = 10.
pub const MODEL_RELEASE_SHARE: f64 = 0.4;

/// The share of the run's ρ that each release j of a Gaussian run spends, in release order
/// (word release first when there is one, the model last); they sum to 1. Equal shares for
/// [`BudgetSplit::Equal`]. Focused, with a word release:
/// [`WORD_RELEASE_SHARE`], then the sampling releases, then the model with
/// [`MODEL_RELEASE_SHARE`] (all but the word release's share when no sampling release comes
/// between). Without one, the model takes [`MODEL_RELEASE_SHARE`] and the sampling releases the
/// rest, or everything when it is the only release. Public: a function of R and of whether there
/// is a word release.
pub fn gaussian_shares(releases: u32, word_release: bool, split: BudgetSplit) -> Vec<f64> {
    let r = releases.max(1) as usize;
    if split == BudgetSplit::Equal {
        return vec![1.0 / r as f64; r];
    }
    let words = if word_release && r >= 2 {
        WORD_RELEASE_SHARE
    } else {
        0.0
    };
    let middle = r - 1 - usize::from(words > 0.0);
    let model = if middle == 0 {
        1.0 - words
    } else {
        MODEL_RELEASE_SHARE
    };
    let mut shares = Vec::with_capacity(r);
    if words > 0.0 {
        shares.push(words);
    }
    shares.extend(std::iter::repeat_n(
        (1.0 - words - model) / middle.max(1) as f64,
        middle,
    ));
    shares.push(model);
    shares
}

/// The smallest ε (at `delta`) for which every release of a Gaussian run of `releases`
/// releases stays within the exact sampler's range ([`DiscreteGaussian::max_variance`]): the
/// release with the smallest share s of ρ has σ² = (G·C)²/(2·s·ρ), so ρ must be at least
/// (G·C)²/(2·s·max σ²). Public (a function of the settings only). With 26 releases (the
/// default from T = 50) and their focused split the sampling releases take a 240th of ρ each,
/// so at C = 12 runs below about ε = 0.0113 (δ = 10⁻⁷; 0.0096 at δ = 10⁻⁶) need fewer
/// releases; with eleven (a ninetieth each), ε = 0.0067.
pub fn gaussian_smallest_epsilon(
    releases: u32,
    word_release: bool,
    split: BudgetSplit,
    clip: u32,
    delta: f64,
) -> f64 {
    let share = gaussian_shares(releases, word_release, split)
        .into_iter()
        .fold(f64::INFINITY, f64::min);
    let c = f64::from(clip) * f64::from(CONTRIBUTION_UNITS);
    // The calibration rounds σ² up by a relative 10⁻¹² and ρ down by 10⁻⁹: a margin of 10⁻⁶
    // keeps every ε at or above this one calibratable.
    let rho = c * c / (2.0 * share * DiscreteGaussian::max_variance()) * (1.0 + 1e-6);
    zcdp::epsilon(rho, delta)
}

/// The Gaussian mechanism releases counts in units of 1/`CONTRIBUTION_UNITS` of a token: a
/// document's contribution is real-valued (√-weighted and scaled, [`l2_contribution`]) and is
/// floored to this lattice, so that the noise stays the exact discrete Gaussian on integers. The
/// released units are divided back into counts (post-processing) before the sampler reads them.
/// 16 keeps the flooring's loss under 1/16 of a token a cell.
pub const CONTRIBUTION_UNITS: u32 = 16;

/// A word's row is released (it joins the vocabulary H of that release) when its noisy count ũ_w
/// is at least this fraction of K·σ_j, σ_j the release's noise. Rows below it get the tail's
/// shares ([`WordRelease::compose`]). Measured at ε = 10 on 20 Newsgroups (BENCHMARKS.md): 1 (the
/// Laplace mechanism's threshold is 1; with R = 5 and equal shares 0.5 gave −8.980, 0.2 −8.970,
/// 0.1 −8.954): a word whose row is released with noise still beats the tail's topic-free shares.
pub const VOCABULARY_FRACTION: f64 = 0.1;

/// The clipping norm C of `--mechanism gaussian` when `--l2-clip` is not given. Chosen by
/// measurement on 20 Newsgroups (BENCHMARKS.md, "Private training, issue 25: the Gaussian
/// mechanism").
pub const DEFAULT_L2_CLIP: u32 = 12;

impl PrivateOptions {
    /// Number of noisy releases, the final model included.
    pub fn releases(&self) -> u64 {
        u64::from(self.releases)
    }

    /// The ε the R releases share: the run's ε less what choosing the cap spent.
    pub fn release_epsilon(&self) -> f64 {
        self.epsilon.get() - self.cap_epsilon
    }

    /// Whether the Laplace mechanism's cap L is still to be chosen privately (with
    /// `cap_epsilon`): a run chooses it only after its budget is charged, so that a run refused
    /// or stopped before then has read nothing of the data and shown nothing of it.
    pub fn cap_to_choose(&self) -> bool {
        self.mechanism == PrivateMechanism::Laplace
            && self.max_doc_tokens == 0
            && self.cap_epsilon > 0.0
    }

    /// These options with the cap `choice` made ([`choose_cap`] at `cap_epsilon`).
    pub fn with_cap(self, choice: CapChoice) -> Self {
        Self {
            max_doc_tokens: choice.cap,
            cap_epsilon: choice.epsilon,
            ..self
        }
    }

    /// These options with each extreme of the caps [`choose_cap`] can choose in turn: what a
    /// run calibrates before it charges, so that no cap it then draws is one whose releases
    /// cannot be calibrated (b = R·L/ε grows with L).
    pub fn with_every_extreme_cap(self) -> [Self; 2] {
        let grid = cap_candidates();
        [grid[0], *grid.last().expect("a grid")].map(|cap| Self {
            max_doc_tokens: cap,
            ..self
        })
    }

    /// Why these settings cannot run, if they cannot (one line).
    pub fn check(&self) -> Result<(), PrivacyError> {
        let (t, r) = (self.iterations, self.releases);
        let bad = |m: String| Err(PrivacyError::Unsupported(m));
        if !(0.0..self.epsilon.get()).contains(&self.cap_epsilon) {
            return bad(format!(
                "the ε spent choosing the cap ({}) must be in [0, ε = {})",
                self.cap_epsilon,
                self.epsilon.get()
            ));
        }
        if let PrivateMechanism::Gaussian { l2_clip, .. } = self.mechanism {
            if self.cap_epsilon > 0.0 {
                return bad(format!(
                    "--mechanism gaussian chooses no token cap, so no ε is spent on one (cap_epsilon must be 0, got {})",
                    self.cap_epsilon
                ));
            }
            if l2_clip == 0 {
                return Err(PrivacyError::NotPositive {
                    what: "the L2 clipping norm (--l2-clip)",
                    value: 0.0,
                });
            }
            if !(self.delta > 0.0 && self.delta < 1.0) {
                return bad(format!(
                    "--mechanism gaussian is (ε, δ)-private and needs --delta in (0, 1), got {}",
                    self.delta
                ));
            }
        } else if self.cap_to_choose() && cap_epsilon_steps(self.cap_epsilon) < 1.0 {
            // Checked here, before a run charges its budget, rather than by `choose_cap` after.
            return bad(format!(
                "the cap's share of ε ({:e}) is below 2⁻³², the least the private choice of the cap can spend: give --max-doc-tokens",
                self.cap_epsilon
            ));
        } else if self.max_doc_tokens == 0 && self.cap_epsilon == 0.0 {
            return Err(PrivacyError::NotPositive {
                what: "the document token cap (--max-doc-tokens)",
                value: 0.0,
            });
        }
        if !(0.0..1.0).contains(&self.delta) {
            return bad(format!("--delta must be in [0, 1), got {}", self.delta));
        }
        if self.word_release && t == 0 {
            return bad("a word release needs at least 1 iteration (it is not the model)".into());
        }
        if t == 0 && r != 1 {
            return bad(format!(
                "a private run of 0 iterations makes exactly 1 release (the model), not {r}"
            ));
        }
        if t > 0 && !(2..=t.saturating_add(1)).contains(&r) {
            return bad(format!(
                "--releases must be between 2 and {} (T + 1) for {t} iterations, got {r}: one release is the model, the others are what the sampler reads",
                u64::from(t) + 1
            ));
        }
        Ok(())
    }

    /// Whether the sampler gets a fresh release before iteration `iteration` (1-based): the
    /// R − 1 sampling releases happen after ⌊j·T/(R−1)⌋ completed iterations, j = 0..R−2, so
    /// the first iteration always has one and the gaps differ by at most one iteration.
    pub fn release_before(&self, iteration: u32) -> bool {
        let (t, r) = (u64::from(self.iterations), u64::from(self.releases));
        if r < 2 || iteration == 0 || u64::from(iteration) > t {
            return false;
        }
        let done = u64::from(iteration) - 1;
        // Is done = ⌊j·T/(R−1)⌋ for some j? The smallest j with ⌊j·T/(R−1)⌋ ≥ done is
        // ⌈done·(R−1)/T⌉.
        let j = (done * (r - 1)).div_ceil(t);
        j < r - 1 && j * t / (r - 1) == done
    }
}

/// Whether token `i` (0-based) of a document of `len` tokens is one of the at most `cap` tokens
/// the document **contributes** to a release: all of them when `len ≤ cap`, else exactly `cap`
/// positions spread evenly over the document (token i counts iff ⌊(i+1)·cap/len⌋ > ⌊i·cap/len⌋,
/// which holds for exactly `cap` values of i). The choice depends only on the document's own
/// length, never on other documents or on any assignment, so it is part of the document's own
/// contribution (proof step 1 in the module documentation).
pub fn counted(i: usize, len: usize, cap: u32) -> bool {
    let (i, len, cap) = (i as u64, len as u64, u64::from(cap));
    len <= cap || (i + 1) * cap / len > i * cap / len
}

/// The contribution of every document to a release, as dense word-major counts (V × K,
/// `w·K + k`): the word and current topic of each of its [`counted`] tokens. `assignments` holds
/// the topic of every token of `docs` in corpus order. One document adds at most `cap` to the
/// L1 norm of the result, whatever its assignments: the L1 sensitivity of every release.
pub fn contribution_counts(
    docs: Docs<'_>,
    assignments: &[u16],
    num_words: usize,
    num_topics: u32,
    cap: u32,
) -> Vec<u32> {
    assert_eq!(
        docs.tokens().len(),
        assignments.len(),
        "one topic per token"
    );
    let k = num_topics as usize;
    let mut dense = vec![0u32; num_words * k];
    let mut at = 0usize;
    for d in docs.iter() {
        let z = &assignments[at..at + d.len()];
        for (i, (&w, &t)) in d.iter().zip(z).enumerate() {
            if counted(i, d.len(), cap) {
                dense[w as usize * k + usize::from(t)] += 1;
            }
        }
        at += d.len();
    }
    dense
}

/// What one document **contributes** to a release of the Gaussian mechanism, clipped to L2 norm
/// `clip` = C: cells (word w, topic k, units) in units of 1/[`CONTRIBUTION_UNITS`] of a token, a
/// deterministic function of the document's own tokens and topics (never of other documents).
///
/// Each token of word w weighs 1/√n_w (n_w: w's occurrences in the document) and the whole
/// document is scaled by f = min(1, C/√len): cell (w, k) is ⌊G·f·n_wk/√n_w⌋, G the units. So a
/// word's row sums to at most G·f·√n_w, and
///
///   Σ_{w,k} cell_wk² ≤ Σ_w (Σ_k cell_wk)² ≤ G²·f²·Σ_w n_w = G²·f²·len ≤ (G·C)²
///
/// (the first step: a sum of non-negative terms squared is at least the sum of their squares).
/// The bound is then checked in integers, and the cells shrunk should floating-point rounding
/// ever break it, so **the L2 norm is ≤ G·C exactly**, for the word release (the rows' sums) as
/// for every word-topic release, whatever the topics.
///
/// Why √-weighting (issue 25): a document that repeats a word says less about the word's topic
/// than its count suggests (burstiness), and counting whole documents costs noise. Against the
/// water-filling this replaced (each distinct word once, then twice, … while Σ c_w² ≤ C², whole
/// tokens), on 20 Newsgroups without noise (K = 20, T = 50) the model scored −8.66 against −8.78
/// with 11 releases and −8.87 against −8.92 with 2; scaling the counts themselves (weight 1)
/// scored −8.78 and −8.97 (BENCHMARKS.md, "the budget where it buys the most").
pub fn l2_contribution(doc: &[u32], topics: &[u16], clip: u32) -> Vec<(u32, u16, u32)> {
    let mut cells = Vec::new();
    l2_contribution_into(doc, topics, clip, &mut Vec::new(), &mut cells);
    cells
}

/// [`l2_contribution`] into `cells` (cleared first), with `keys` as scratch: a release calls it
/// once a document, so it reuses both buffers instead of allocating two vectors each time.
fn l2_contribution_into(
    doc: &[u32],
    topics: &[u16],
    clip: u32,
    keys: &mut Vec<u64>,
    cells: &mut Vec<(u32, u16, u32)>,
) {
    assert_eq!(doc.len(), topics.len(), "one topic per token");
    // (word, topic) packed into one key, word in the high bits: sorting u64s is several times
    // faster than sorting pairs, and the order is the same.
    keys.clear();
    keys.extend(
        doc.iter()
            .zip(topics)
            .map(|(&w, &t)| u64::from(w) << 16 | u64::from(t)),
    );
    keys.sort_unstable();
    let units = f64::from(CONTRIBUTION_UNITS);
    let f = units * (f64::from(clip) / (doc.len().max(1) as f64).sqrt()).min(1.0);
    cells.clear();
    for word in keys.chunk_by(|a, b| a >> 16 == b >> 16) {
        let root = (word.len() as f64).sqrt();
        for topic in word.chunk_by(|a, b| a == b) {
            let c = (f * topic.len() as f64 / root).floor() as u32;
            if c > 0 {
                cells.push(((topic[0] >> 16) as u32, topic[0] as u16, c));
            }
        }
    }
    let budget = (u128::from(clip) * u128::from(CONTRIBUTION_UNITS)).pow(2);
    let norm2 =
        |cells: &[(u32, u16, u32)]| -> u128 { cells.iter().map(|c| u128::from(c.2).pow(2)).sum() };
    while norm2(cells) > budget {
        // Only floating-point rounding can get here (the bound above is exact in reals).
        for c in cells.iter_mut() {
            c.2 -= c.2.div_ceil(1024);
        }
    }
}

/// [`contribution_counts`] for the Gaussian mechanism: every document's [`l2_contribution`],
/// summed, in units of 1/[`CONTRIBUTION_UNITS`] (dense V × K, `w·K + k`). One document changes
/// the result by a vector of L2 norm ≤ G·C, whatever its assignments: the L2 sensitivity of
/// every release, of the word counts (row sums) as of the word-topic counts.
///
/// Every release makes one, so it runs on all threads: the documents' contributions (a sort
/// each, most of the time) in parallel, a batch of documents at a time so that memory stays
/// bounded, each group of documents sorting its cells into shards of the vocabulary, and then
/// the shards' rows summed in parallel. The result does not depend on the thread count: the
/// cells are non-negative, so a sum saturating at `u32::MAX` is min(sum, `u32::MAX`) in any
/// order.
pub fn contribution_units_l2(
    docs: Docs<'_>,
    assignments: &[u16],
    num_words: usize,
    num_topics: u32,
    clip: u32,
) -> Vec<u32> {
    assert_eq!(
        docs.tokens().len(),
        assignments.len(),
        "one topic per token"
    );
    units_l2(docs, Some(assignments), num_words, num_topics, clip)
}

/// [`contribution_units_l2`], with every token in topic 0 when `assignments` is `None` (the
/// word counts, without a topic a token held in memory for them).
fn units_l2(
    docs: Docs<'_>,
    assignments: Option<&[u16]>,
    num_words: usize,
    num_topics: u32,
    clip: u32,
) -> Vec<u32> {
    use rayon::prelude::*;
    let k = num_topics as usize;
    let mut dense = vec![0u32; num_words * k];
    if dense.is_empty() {
        return dense;
    }
    let rows_per_shard = num_words.div_ceil((rayon::current_num_threads() * 4).min(num_words));
    let shards = num_words.div_ceil(rows_per_shard);
    let offsets = docs.offsets();
    let mut lo = 0;
    while lo < docs.len() {
        // The next documents up to CONTRIBUTION_BATCH_TOKENS tokens (at least one document).
        let end = offsets[lo] + CONTRIBUTION_BATCH_TOKENS;
        let hi = (offsets[1..].partition_point(|&o| o <= end)).clamp(lo + 1, docs.len());
        let groups: Vec<Vec<Vec<(u32, u16, u32)>>> = (lo..hi)
            .into_par_iter()
            .chunks(CONTRIBUTION_GROUP)
            .map(|group| {
                let mut by_shard = vec![Vec::new(); shards];
                let (mut keys, mut cells, mut zeros) = (Vec::new(), Vec::new(), Vec::new());
                for d in group {
                    let start = docs.doc_start(d) as usize;
                    let doc = docs.doc(d);
                    let z = match assignments {
                        Some(a) => &a[start..start + doc.len()],
                        None => {
                            zeros.resize(doc.len(), 0u16);
                            &zeros[..doc.len()]
                        }
                    };
                    l2_contribution_into(doc, z, clip, &mut keys, &mut cells);
                    for &cell in &cells {
                        assert!(
                            (cell.0 as usize) < num_words && usize::from(cell.1) < k,
                            "word {} topic {} outside {num_words} × {k}",
                            cell.0,
                            cell.1
                        );
                        by_shard[cell.0 as usize / rows_per_shard].push(cell);
                    }
                }
                by_shard
            })
            .collect();
        dense
            .par_chunks_mut(rows_per_shard * k)
            .enumerate()
            .for_each(|(shard, rows)| {
                let first = shard * rows_per_shard;
                for (w, t, c) in groups.iter().flat_map(|g| g[shard].iter().copied()) {
                    let cell = &mut rows[(w as usize - first) * k + usize::from(t)];
                    *cell = cell.saturating_add(c);
                }
            });
        lo = hi;
    }
    dense
}

/// Tokens whose documents' contributions [`contribution_units_l2`] holds at once: a document
/// has at most one cell (12 bytes) a token, so about 50 MB of cells a batch, plus one document
/// longer than the batch on its own.
const CONTRIBUTION_BATCH_TOKENS: u64 = 1 << 22;
/// Documents one task of [`contribution_units_l2`] works through.
const CONTRIBUTION_GROUP: usize = 512;

/// Every document cut to its first `max_tokens` tokens (deterministic: no data-dependent choice).
/// No longer used by a run (the sampler reads whole documents; only what a document contributes
/// to a release is capped, by [`counted`]); kept for tools that want capped copies.
pub fn cap_documents(docs: Docs<'_>, max_tokens: u32) -> OwnedDocs {
    let mut out = OwnedDocs::new();
    for d in docs.iter() {
        out.push(&d[..d.len().min(max_tokens as usize)]);
    }
    out
}

/// The number of tokens of the longest document.
pub fn longest_document(docs: Docs<'_>) -> usize {
    docs.iter().map(<[u32]>::len).max().unwrap_or(0)
}

/// The caps [`choose_cap`] chooses from: every length from 1 to 8, then a geometric grid of
/// ratio 2^{1/4} to 4,096 (1, 2, …, 8, 10, 11, 13, 16, 19, 23, 27, 32, 38, 45, 54, 64, 76, 91,
/// 108, 128, …). Public: fixed in the code, never read from the data. Each candidate c stands
/// for the lengths [c, next candidate); the small ones are there for corpora of very short
/// documents (titles, tweets), whose lower quartile would otherwise lie below the whole grid,
/// where every candidate ties and the draw was uniform up to 4,096; above 4,096 the noise
/// b = R·L/ε dwarfs any count.
pub fn cap_candidates() -> Vec<u32> {
    let mut out: Vec<u32> = (1..=8).collect();
    let mut x = 8.0f64;
    while *out.last().expect("not empty") < 4_096 {
        x *= 2f64.powf(0.25);
        let c = (x.round() as u32).min(4_096);
        if c > *out.last().expect("not empty") {
            out.push(c);
        }
    }
    out
}

/// The score [`choose_cap`] minimises for each candidate of `grid`: how far, in units of
/// 1/m documents, the q = a/m quantile's rank lies outside the candidate's bucket of lengths
/// [c, c_next): s(c) = max(0, m·#{|d| < c} − a·n, a·n − m·#{|d| < c_next}) (c_next = ∞ for the
/// last). 0 for the bucket that holds the quantile.
fn cap_scores(lengths: impl Iterator<Item = usize>, grid: &[u32]) -> Vec<u128> {
    let (a, m) = CAP_QUANTILE;
    // below[i] = #{d : |d| < grid[i]}, by a histogram of the lengths over the grid's intervals.
    let mut hist = vec![0u64; grid.len() + 1];
    let mut n = 0u64;
    for len in lengths {
        n += 1;
        // The first candidate above len: documents with |d| < c for every c from there on.
        let i = grid.partition_point(|&c| c as usize <= len);
        hist[i] += 1;
    }
    let mut below = Vec::with_capacity(grid.len() + 1);
    let mut acc = 0u64;
    for h in &hist[..grid.len()] {
        acc += h;
        below.push(acc);
    }
    below.push(n);
    below
        .windows(2)
        .map(|w| {
            let over = (m * w[0]).saturating_sub(a * n);
            let under = (a * n).saturating_sub(m * w[1]);
            u128::from(over.max(under))
        })
        .collect()
}

/// The cap L a run without `--max-doc-tokens` uses, and how it was chosen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CapChoice {
    /// The chosen cap.
    pub cap: u32,
    /// The ε the choice spent (the rounded-down ε the mechanism actually ran at, ≤ the ε asked).
    pub epsilon: f64,
}

/// Chooses the cap L privately: the exponential mechanism (McSherry & Talwar 2007) for the
/// [`CAP_QUANTILE`] q = a/m of the documents' lengths, over the public grid [`cap_candidates`].
///
/// # Why it is ε_L-differentially private (proof step 0 of the run)
///
/// Each candidate c stands for the bucket of lengths [c, c_next) (c_next the next candidate, ∞
/// for the last), and its score is u(c) = −max(0, X, Y) with X = m·#{d : |d| < c} − a·n and
/// Y = a·n − m·#{d : |d| < c_next}, n the number of documents ([`cap_scores`]): minus m times
/// the distance, in documents, from the q-quantile's rank to the bucket (0 inside it). Adding
/// or removing one document changes n by 1 and each count by 0 or 1 in the same direction, so
/// X and Y each move by a or by m − a, and max(0, X, Y), 1-Lipschitz in the larger of the two
/// moves, by at most Δ = max(a, m − a) (3 for q = 1/4), for every candidate at once. (The
/// earlier score, −|m·#{|d| < c} − a·n| alone, tied every candidate above the longest
/// document: on a corpus of 5-token documents the cap was uniform from 8 to 4,096.) The output is c with probability
/// ∝ exp(ε'·s(c)/(2Δ)), which is ε'-DP (McSherry–Talwar, Theorem 6; Dwork & Roth, Theorem
/// 3.10), with ε' = ⌊ε_L·2³²⌋/2³² ≤ ε_L. The draw is **exact**: a candidate is proposed
/// uniformly and accepted with probability exp(−ε'·(s_max − s(c))/(2Δ)) (a rational exponent,
/// [`topos_privacy::bernoulli::bernoulli_exp_neg`]: integers only), so the accepted candidate has
/// exactly the law ∝ exp(ε'·s(c)/(2Δ)) (s_max only rescales every weight by the same factor),
/// after at most |grid| proposals on average. Only buckets the quantile's rank falls in score
/// 0 (two at most, when it lands on their boundary), so ties are rare: all documents of 20
/// tokens put it in [19, 23), all of 5 tokens in [5, 6).
/// The number of proposals depends on the data; like the discrete Laplace sampler's running
/// time it is not part of the release (the guarantee covers the model file).
///
/// The cap is then a fixed input of the releases: each is L/b-DP given L (step 1 of the
/// module documentation holds for any L chosen before the first release), so by sequential
/// composition a run spends ε_L here and ε − ε_L on its releases, ε in all (with the Rényi
/// accountant: (ε_L, 0) then (ε − ε_L, δ) compose to (ε, δ)). The chosen L is recorded in the
/// model (it is part of the release), the ε it spent in its guarantee (`cap_epsilon`).
///
/// Accuracy: with probability ≥ 1 − e^{−t} the chosen cap's rank is within
/// (2Δ/(m·ε'))·(ln |grid| + t) documents of the quantile's (Dwork & Roth, Theorem 3.11): at
/// ε_L = 0.05 (ε = 1, q = 1/4: 2Δ/m = 1.5) 30·(ln 44 + t) ≈ 114 + 30·t documents, about 1%
/// of a corpus of 10,000 (and the grid's step, 19%, bounds how far the cap can sit from the
/// quantile's length when ranks are dense).
pub fn choose_cap(
    lengths: impl Iterator<Item = usize>,
    epsilon: Epsilon,
    source: &mut NoiseSource,
) -> Result<CapChoice, PrivacyError> {
    let (a, m) = CAP_QUANTILE;
    let grid = cap_candidates();
    let score = cap_scores(lengths, &grid);
    let best = *score.iter().min().expect("a grid");
    let delta = u128::from(a.max(m - a));
    // ε' = k / 2³², rounded down: the mechanism is never less private than asked.
    let k = cap_epsilon_steps(epsilon.get());
    if k < 1.0 {
        return Err(PrivacyError::NotPositive {
            what: "ε for choosing the cap (below 2⁻³²)",
            value: epsilon.get(),
        });
    }
    let k = k.min(2f64.powi(64)) as u128;
    let den = delta << 33;
    loop {
        let i = source.below_u32(grid.len() as u32) as usize;
        // γ = ε'·(s_max − s(c))/(2Δ) = k·(|…|_c − |…|_best) / (2³³·Δ).
        if topos_privacy::bernoulli::bernoulli_exp_neg(k * (score[i] - best), den, source) {
            return Ok(CapChoice {
                cap: grid[i],
                epsilon: k as f64 / 2f64.powi(32),
            });
        }
    }
}

/// The ε [`choose_cap`] runs at, in steps of 2⁻³² (rounded down: never less private than
/// asked); it needs at least one.
fn cap_epsilon_steps(epsilon: f64) -> f64 {
    (epsilon * 2f64.powi(32)).floor()
}

/// The exact q-quantile ([`CAP_QUANTILE`]) of the lengths, snapped to the grid as
/// [`choose_cap`] scores it (the bucket that holds it, the larger when it lands on a
/// boundary): what the private choice aims at. Not private: for `privacy plan`'s advice and for tests.
pub fn cap_target(lengths: impl Iterator<Item = usize>) -> u32 {
    let grid = cap_candidates();
    let score = cap_scores(lengths, &grid);
    *grid
        .iter()
        .zip(&score)
        .rev()
        .min_by_key(|&(_, &s)| s)
        .expect("a grid")
        .0
}

/// Which tokens [`scored_word_counts`] counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScoredTokens {
    /// The held-out documents' tokens.
    HeldOut,
    /// The training documents' tokens, for a corpus without a held-out part.
    Training,
}

impl ScoredTokens {
    /// `held-out` or `training`, as plans print it.
    pub fn name(self) -> &'static str {
        match self {
            Self::HeldOut => "held-out",
            Self::Training => "training",
        }
    }
}

/// The tokens a plan scores a word distribution on ([`unigram_ll`]), counted per word of a
/// vocabulary of `num_words`: the held-out documents' when they hold any token, else the
/// training documents' (a corpus prepared without `--holdout`), and which of the two it was.
pub fn scored_word_counts(
    heldout: Docs<'_>,
    training: Docs<'_>,
    num_words: usize,
) -> (Vec<u64>, ScoredTokens) {
    let count = |docs: Docs<'_>| {
        let mut n = vec![0u64; num_words];
        for &w in docs.tokens() {
            n[w as usize] += 1;
        }
        n
    };
    let held = count(heldout);
    if held.iter().any(|&h| h > 0) {
        (held, ScoredTokens::HeldOut)
    } else {
        (count(training), ScoredTokens::Training)
    }
}

/// The log-likelihood per token of `heldout` (counts per word) under the unigram model whose
/// word w has mass m_w + β (normalised over the vocabulary); 0 when nothing is held out. What
/// every simulated margin, and `privacy plan`'s non-private unigram reference, are scored by.
pub fn unigram_ll(heldout: &[u64], mass: &[f64], beta: f64) -> f64 {
    let total: f64 = mass.iter().map(|m| m + beta).sum();
    let (mut ll, mut n) = (0.0, 0u64);
    for (&h, &m) in heldout.iter().zip(mass) {
        if h > 0 {
            ll += h as f64 * ((m + beta) / total).ln();
            n += h;
        }
    }
    if n == 0 {
        0.0
    } else {
        ll / n as f64
    }
}

/// Every word's count as the Gaussian mechanism's releases see it, without noise: the row sums
/// of the documents' [`l2_contribution`]s (√-weighted, clipped to L2 norm `clip`), in units of
/// 1/[`CONTRIBUTION_UNITS`] token, over a vocabulary of `num_words`. What
/// [`clipped_unigram_ll`] and [`simulated_gaussian_unigram_ll`] score: computed once for both.
///
/// It is [`contribution_units_l2`] with every token in one topic (K = 1), on every thread,
/// without holding a topic per token (a document's zeros at a time). One topic floors each word's √-weighted count once, where
/// the release floors it once a topic, so a word's count here is at least its row's sum there
/// (by under one unit a topic the word holds).
pub fn clipped_word_units(docs: Docs<'_>, num_words: usize, clip: u32) -> Vec<u32> {
    units_l2(docs, None, num_words, 1, clip)
}

/// The held-out log-likelihood per token of the word distribution a Gaussian run's releases
/// estimate, **without noise**: the clipped word counts `clipped` ([`clipped_word_units`]) with
/// β per word. The ceiling of the model's unigram margin at any ε: clipping makes long and bursty
/// documents count for less than their tokens, so on a small corpus it already scores below the
/// unigram model of the raw counts (20 Newsgroups: −8.889 against −8.798, BENCHMARKS.md,
/// "where ε = 10 loses on 20 Newsgroups"), and a private model can beat that model only through
/// its topics. Reads exact counts: advice for the data holder, not private.
pub fn clipped_unigram_ll(clipped: &[u32], heldout: &[u64], beta: f64) -> f64 {
    let units = f64::from(CONTRIBUTION_UNITS);
    let mass: Vec<f64> = clipped.iter().map(|&c| f64::from(c) / units).collect();
    unigram_ll(heldout, &mass, beta)
}

/// The held-out log-likelihood per token of the unigram margin of a Gaussian run's model,
/// simulated once: the documents' √-weighted word counts clipped at `clip`, `u`
/// ([`clipped_word_units`]), get the word release's noise `word_sigma` and its empirical-Bayes
/// posterior means; the words whose count reaches [`VOCABULARY_FRACTION`]·K·`model_sigma` get the
/// model's row total (the same counts with the noise of K cells of σ_model, combined with ũ as
/// the run combines them), the others ũ; each word's share of the total, with β per word,
/// scores `heldout` (counts per word). Both σ are in tokens. It reads exact counts: advice for
/// the data holder, not private.
///
/// What it leaves out is the topics: measured minus simulated grows with what the sampling
/// releases can teach ([`GAUSSIAN_PREDICTION_OFFSET`]).
pub fn simulated_gaussian_unigram_ll(
    u: &[u32],
    heldout: &[u64],
    num_topics: u32,
    clip: u32,
    (word_sigma, model_sigma): (f64, f64),
    beta: f64,
    source: &mut NoiseSource,
) -> Result<f64, PrivacyError> {
    assert_eq!(u.len(), heldout.len(), "one count per word");
    let units = f64::from(CONTRIBUTION_UNITS);
    let (sw, sm) = (word_sigma * units, model_sigma * units);
    let sensitivity = f64::from(clip) * units;
    let word = DiscreteGaussian::calibrated(sensitivity, sensitivity.powi(2) / (2.0 * sw * sw))?;
    let noisy = word.noisy_u32(u, source);
    let means = topos_privacy::empirical_bayes::posterior_means(&noisy, word.sigma());
    let k = f64::from(num_topics);
    let (var_rows, var_word) = (k * sm * sm, sw * sw);
    let threshold = VOCABULARY_FRACTION * k * sm;
    let mut mass: Vec<f64> = means.iter().map(|&m| m.round().max(0.0)).collect();
    // The model's rows, as the run releases them: only the vocabulary's (ũ_w ≥ threshold), each
    // Σ_k x_wk = u_w plus the noise of K cells, σ_m each, drawn cell by cell (one draw of K·σ_m²
    // would leave the exact sampler's range first); combined with ũ_w by inverse variance.
    let head: Vec<usize> = (0..mass.len()).filter(|&w| mass[w] >= threshold).collect();
    let cell = DiscreteGaussian::calibrated(sensitivity, sensitivity.powi(2) / (2.0 * sm * sm))?;
    let mut sums: Vec<i64> = head.iter().map(|&w| i64::from(u[w])).collect();
    let zeros = vec![0u32; head.len()];
    for _ in 0..num_topics {
        for (s, z) in sums.iter_mut().zip(cell.noisy_u32(&zeros, source)) {
            *s += z;
        }
    }
    for (&w, &x) in head.iter().zip(&sums) {
        mass[w] = (mass[w] * var_rows + x as f64 * var_word) / (var_rows + var_word);
    }
    for m in &mut mass {
        *m = m.max(1.0) / units;
    }
    Ok(unigram_ll(heldout, &mass, beta))
}

/// Measured minus simulated ([`simulated_gaussian_unigram_ll`]) for a default Gaussian run, the
/// mean over the calibration runs with a signal ([`release_signal`]) below
/// [`GAUSSIAN_PREDICTION_MAX_SIGNAL`] (BENCHMARKS.md, "Private training, issue 25: a release
/// every other iteration", calibration table; default releases, two draws each unless said):
/// 20 Newsgroups (K = 20, T = 50, R = 26) at ε = 0.1, 1, 3: −0.090, −0.123; −0.031, −0.048;
/// −0.028, −0.029; synthetic 1M (T = 50, R = 26) at ε = 1, 3: +0.025, +0.019; +0.065, +0.042;
/// synthetic 1M (T = 20, R = 11) at ε = 1: +0.023 (one draw). Mean −0.016, rounded to −0.02.
pub const GAUSSIAN_PREDICTION_OFFSET: f64 = -0.02;

/// Half-width of the band around a Gaussian run's prediction: the largest deviation of a
/// calibration run from simulated + [`GAUSSIAN_PREDICTION_OFFSET`] was 0.103 (20 Newsgroups at
/// ε = 0.1), rounded up with room for draws not seen.
pub const GAUSSIAN_PREDICTION_BAND: f64 = 0.12;

/// The signal from which `privacy plan` does not predict a Gaussian run's utility: there the
/// topics the releases teach add more than the band (measured minus simulated: +0.19 on
/// synthetic 1M at ε = 10, s ≈ 7,000, and +0.24 on synthetic 10M at ε = 1, s ≈ 8,500, both
/// T = 50; +0.059 and more at larger signals), so the simulated margin is only a floor. Between
/// the largest calibrated signal (2,428: 20 Newsgroups at ε = 3) and 7,000, at their geometric
/// mean, rounded. 20 Newsgroups at ε = 10 (s ≈ 7,100, −0.016) would still fit the band: its
/// topics stand less far above the noise than a synthetic corpus's.
pub const GAUSSIAN_PREDICTION_MAX_SIGNAL: f64 = 4_000.0;

/// How far the held-out log-likelihood per token of a default private run (word release, R = 2)
/// sits from its simulated noisy unigram model ([`simulated_unigram_ll`]): measured minus
/// simulated, the mean over the eight calibration settings of BENCHMARKS.md ("Private training,
/// issue 25: utility against corpus size", calibration table): 20 Newsgroups (K = 20, L = 50)
/// at ε = 1, 10, 100: −0.047, −0.035, −0.033; synthetic corpora of 1M, 10M, 100M tokens
/// (K = 20, L = 50, ε = 1): +0.001, +0.008, −0.007; the CI test's small synthetic corpus (108k
/// tokens, K = 5, T = 10, automatic L, 40 draws each) at ε = 1 and 10: +0.044, +0.012. Mean
/// −0.007.
pub const PREDICTION_OFFSET: f64 = -0.01;

/// Half-width of the band `privacy plan` states around its prediction: the largest deviation of
/// a single calibration run from simulated + [`PREDICTION_OFFSET`] was 0.096 (the small
/// synthetic corpus at ε = 1, the highest of 40 draws, whose spread is σ = 0.019); the band is
/// half as much again, for the run's own noise and corpora unlike the calibration ones (at 0.1
/// a CI run failed the plan's test with a draw of −6.581 against −6.689 ± 0.1). Calibrated for ε from 1 to 100, 10⁵ to 10⁸ tokens,
/// K = 5 to 20; outside that it is an extrapolation.
pub const PREDICTION_BAND: f64 = 0.15;

/// The held-out log-likelihood per token of the **noisy unigram model** a default private run
/// (word release, R = 2) amounts to, simulated from exact counts: what `privacy plan` predicts
/// from (not private: it reads the corpus's true counts, so its output is advice for the data
/// holder, not covered by any guarantee).
///
/// With R = 2 the sampler reads only a random split of the noisy word counts, so the model's
/// topics carry little beyond its word frequencies (BENCHMARKS.md); its marginal word
/// distribution is what the simulation draws: ũ_w = max(0, u_w + Z_w) (the word release, u_w
/// the counted tokens of word w), the vocabulary H = {ũ_w ≥ K·b}; a word of H gets
/// Σ_k max(0, u_w/K + Z_wk) (its row of the model, the counts spread evenly over the topics),
/// any other word its tail count ([`WordRelease::tail_count`]); p(w) ∝ that + β. The score is
/// Σ_w h_w·ln p(w) / Σ_w h_w over `heldout` word counts h. `source` draws the simulated noise
/// (any source: nothing is released).
pub fn simulated_unigram_ll(
    counted: &[u64],
    heldout: &[u64],
    num_topics: u32,
    scale: f64,
    beta: f64,
    source: &mut NoiseSource,
) -> Result<f64, PrivacyError> {
    assert_eq!(counted.len(), heldout.len(), "one count per word");
    // The mechanism at scale b: ε = 1/b for sensitivity 1 (the exact sampler's rounding aside).
    let mech = DiscreteLaplace::calibrated(1, Epsilon::new(1.0 / scale)?)?;
    let mut u: Vec<u32> = counted
        .iter()
        .map(|&c| c.min(u64::from(u32::MAX)) as u32)
        .collect();
    mech.add_to_u32_clamped(&mut u, source);
    let words = WordRelease::new(u, num_topics, scale);
    let k = num_topics as usize;
    let head: Vec<usize> = (0..counted.len()).filter(|&w| words.head[w]).collect();
    let mut cells = vec![0u32; head.len() * k];
    for (row, &w) in cells.chunks_exact_mut(k).zip(&head) {
        let (q, r) = (counted[w] / k as u64, (counted[w] % k as u64) as usize);
        for (t, c) in row.iter_mut().enumerate() {
            *c = (q + u64::from(t < r)).min(u64::from(u32::MAX)) as u32;
        }
    }
    mech.add_to_u32_clamped(&mut cells, source);
    let mut mass: Vec<f64> = words.noisy.iter().map(|&n| words.tail_count(n)).collect();
    for (row, &w) in cells.chunks_exact(k).zip(&head) {
        mass[w] = row.iter().map(|&c| f64::from(c)).sum();
    }
    Ok(unigram_ll(heldout, &mass, beta))
}

/// The Euclidean projection of a noisy row x onto {y ≥ 0 : Σ y = max(0, total)}, rounded to
/// integers: y_k = max(0, x_k − τ) with τ solving Σ_k max(0, x_k − τ) = total. A function of
/// released values only (post-processing: no privacy cost). Against clamping each cell at 0,
/// it removes the upward bias of max(0, noise) on the cells where a word does not occur (about
/// 0.4σ each, K of them per row) while keeping the row's best total.
pub fn project_row(x: &[i64], total: f64) -> Vec<u32> {
    let total = total.max(0.0);
    let mut sorted: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    sorted.sort_unstable_by(|a, b| b.total_cmp(a));
    let (mut acc, mut tau) = (0.0, f64::NEG_INFINITY);
    for (j, &v) in sorted.iter().enumerate() {
        acc += v;
        let t = (acc - total) / (j + 1) as f64;
        if v > t {
            tau = t;
        }
    }
    if tau == f64::NEG_INFINITY || total == 0.0 {
        return vec![0; x.len()];
    }
    x.iter()
        .map(|&v| ((v as f64 - tau).max(0.0).round()).min(f64::from(u32::MAX)) as u32)
        .collect()
}

/// The state of the releases of one private run: the mechanism, how it was calibrated, the
/// noise source, the latest release and the pure ε each release spent.
pub struct Releases {
    options: PrivateOptions,
    calibration: rdp::Calibration,
    /// The noise of each release, in release order (the same for every release of the Laplace
    /// mechanism; [`gaussian_shares`] of ρ for the Gaussian one).
    mechanisms: Vec<Noise>,
    /// Units of a count in the released cells: 1, or [`CONTRIBUTION_UNITS`] for the Gaussian
    /// mechanism (divided back before the sampler or the model reads a release).
    units: u32,
    source: NoiseSource,
    spent: Vec<f64>,
    latest: Option<WordTopics>,
    words: Option<WordRelease>,
}

/// The word release of a run with [`PrivateOptions::word_release`], and what is derived from it.
///
/// # Why it is private, and what it buys
///
/// Release 1 is ũ_w = max(0, u_w + Z_w), u_w = Σ_k B_wk the number of counted tokens of word w
/// (the row sums of the contributions of step 1), Z_w discrete Laplace of the run's scale b.
/// Removing a document moves u by at most L in L1 norm (its counted tokens, each in one word),
/// so this release is exactly as private as a word-topic release (L/b-DP, (α, τ_α(L))-RDP): it
/// is one of the R releases the calibration composes, and the guarantee is unchanged in form
/// and in value. Everything below is a function of the releases and of fresh randomness
/// independent of the data, i.e. post-processing:
///
/// * the **vocabulary** H = {w : ũ_w ≥ K·b}: the words whose counts, split over K topics, can
///   stand above noise of scale b per cell. Later releases noise (and release) only the |H|·K
///   cells of those rows: the contributions restricted to H, whose sensitivity is still ≤ L;
///   the other rows are not released at all.
/// * the **tail**: a word w ∉ H gets, in topic k, S·c_w·π_k, with c_w = ũ_w where ũ_w ≥ 2b and
///   otherwise the mean of ũ over all words below 2b (their own counts are mostly noise), never
///   below 1 ([`WordRelease::tail_count`]), π_k the share of
///   topic k in the latest release's vocabulary counts (1/K before there is one) and S = K;
///   rows of H get S·B̃_wk. Scaling every row by S keeps the tail's fractional shares in
///   integers; the model's counts are then pseudo-counts (φ is what they mean).
/// * what the sampler reads before the first word-topic release: ũ_w split over the K topics
///   at random (multinomially, as a random start splits a word's tokens), which breaks the
///   symmetry between topics the way a random start does, and one seed word per topic drawn
///   from the ranks of ũ ([`WordRelease::random_split`]), which breaks it faster.
///
/// On 20 Newsgroups the V × K noise was what drowned the signal (one counted token per cell);
/// with H of a few hundred words the noise mass falls by two orders of magnitude
/// (BENCHMARKS.md, "Utility of differentially private training").
#[derive(Clone, Debug)]
pub struct WordRelease {
    /// ũ, the noisy word counts: in tokens for the Laplace mechanism; for the Gaussian one the
    /// rounded empirical-Bayes posterior means, in units of 1/[`CONTRIBUTION_UNITS`] token.
    pub noisy: Vec<u32>,
    /// Whether each word is in the vocabulary H.
    pub head: Vec<bool>,
    /// What a word outside H counts ([`WordRelease::tail_count`]).
    pub tail: TailCounts,
}

/// What a word outside the vocabulary H counts in the tail's topic-free shares: the two
/// mechanisms denoise the word counts differently, so the choice is a type, not two fields one of
/// them leaves unused.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TailCounts {
    /// The Laplace mechanism's raw noisy counts: a word with ũ_w < `low` (2b, about twice the
    /// noise) is mostly noise, so it counts `mean`, the mean of ũ over those words, instead.
    LowBand { low: f64, mean: f64 },
    /// The Gaussian mechanism's empirical-Bayes posterior means: already pulled to where the true
    /// counts lie, so every word keeps its own.
    Own,
}

impl WordRelease {
    /// The vocabulary H from the noisy word counts: ũ_w ≥ K·b.
    pub fn new(noisy: Vec<u32>, num_topics: u32, scale: f64) -> Self {
        let threshold = f64::from(num_topics) * scale;
        let head = noisy.iter().map(|&u| f64::from(u) >= threshold).collect();
        let low = 2.0 * scale;
        let (sum, n) = noisy
            .iter()
            .filter(|&&u| f64::from(u) < low)
            .fold((0.0, 0u64), |(s, n), &u| (s + f64::from(u), n + 1));
        let mean = if n == 0 {
            1.0
        } else {
            (sum / n as f64).max(1.0)
        };
        Self {
            noisy,
            head,
            tail: TailCounts::LowBand { low, mean },
        }
    }

    /// The word release of the Gaussian mechanism: the empirical-Bayes posterior means of the
    /// noisy counts ([`topos_privacy::empirical_bayes`]), rounded. Every word keeps its own
    /// count (no low band: the posterior means already pull the noise band to where the true
    /// counts lie); the vocabulary is set per release ([`WordRelease::set_vocabulary`]), empty
    /// until then.
    pub fn from_posterior_means(means: &[f64]) -> Self {
        Self {
            noisy: means
                .iter()
                .map(|&m| m.round().clamp(0.0, f64::from(u32::MAX)) as u32)
                .collect(),
            head: vec![false; means.len()],
            tail: TailCounts::Own,
        }
    }

    /// The vocabulary H of the next release: the words with ũ_w ≥ `threshold`.
    pub fn set_vocabulary(&mut self, threshold: f64) {
        for (h, &u) in self.head.iter_mut().zip(&self.noisy) {
            *h = f64::from(u) >= threshold;
        }
    }

    /// Number of words in the vocabulary H.
    pub fn vocabulary(&self) -> usize {
        self.head.iter().filter(|&&h| h).count()
    }

    /// Dense word-major pseudo-counts: S·B̃ on the rows of H (`released`, dense V × K; its other
    /// rows are ignored) and S·max(ũ_w, 1)·π_k on the others, S = K.
    pub fn compose(&self, released: &[u32], num_topics: u32) -> Vec<u32> {
        let k = num_topics as usize;
        let mut mass = vec![0u64; k];
        for (row, _) in released.chunks_exact(k).zip(&self.head).filter(|(_, &h)| h) {
            for (m, &c) in mass.iter_mut().zip(row) {
                *m += u64::from(c);
            }
        }
        let total: u64 = mass.iter().sum();
        let share: Vec<f64> = mass
            .iter()
            .map(|&m| {
                if total == 0 {
                    1.0 / k as f64
                } else {
                    m as f64 / total as f64
                }
            })
            .collect();
        let s = f64::from(num_topics);
        let mut out = vec![0u32; released.len()];
        for ((o, r), (&u, &h)) in out
            .chunks_exact_mut(k)
            .zip(released.chunks_exact(k))
            .zip(self.noisy.iter().zip(&self.head))
        {
            for t in 0..k {
                let x = if h {
                    s * f64::from(r[t])
                } else {
                    s * self.tail_count(u) * share[t]
                };
                o[t] = x.round().min(f64::from(u32::MAX)) as u32;
            }
        }
        out
    }

    /// What a word outside H counts: ũ_w, or the mean of the low band when ũ_w < 2b
    /// ([`TailCounts`]); never below 1.
    pub fn tail_count(&self, u: u32) -> f64 {
        match self.tail {
            TailCounts::LowBand { low, mean } if f64::from(u) < low => mean,
            _ => f64::from(u).max(1.0),
        }
    }

    /// ũ split over the topics at random: each of ũ_w's tokens (ũ_w is in units of 1/`units`
    /// token: ũ_w/`units`, rounded) goes to a uniformly random topic, `units` units at a time,
    /// as a random start splits a word's tokens; one draw a token, not a unit (the Gaussian
    /// mechanism's units are 1/16 token, and the sampler reads whole tokens anyway); then every
    /// topic k is **seeded** ([`seed_ranks`], [`SEED_BOOST`]): one word w drawn uniformly from
    /// the words ranked [`seed_ranks`]`(V)` by ũ (most frequent first) gets max(its share,
    /// `SEED_BOOST`·ũ_w) in topic k.
    ///
    /// Why: the sampler's topics start as near-identical copies of the unigram, and each later
    /// release is one step of EM that only amplifies their small random differences, so a run
    /// of few releases ends before the topics separate. A seed word makes topic k claim the
    /// documents that use it, so the next release already counts the words that co-occur with
    /// it. Measured (BENCHMARKS.md, "beating the unigram model at ε = 10"): with 11 releases it
    /// gained 0.02–0.04 nats/token (20 Newsgroups without noise, synthetic 1M at ε = 10,
    /// synthetic 10M at ε = 1); with 2 releases it changes nothing measurable.
    ///
    /// Privacy: a function of ũ (a release) and of fresh randomness independent of the data:
    /// post-processing, no cost (step 2 of "The Gaussian mechanism"; the same for Laplace).
    pub fn random_split(&self, num_topics: u32, units: u32, source: &mut NoiseSource) -> Vec<u32> {
        assert!(units >= 1, "a token is at least one unit");
        let k = num_topics as usize;
        let mut out = vec![0u32; self.noisy.len() * k];
        for (row, &u) in out.chunks_exact_mut(k).zip(&self.noisy) {
            let tokens = (u64::from(u) + u64::from(units / 2)) / u64::from(units);
            for _ in 0..tokens {
                let cell = &mut row[source.below_u32(num_topics) as usize];
                *cell = cell.saturating_add(units);
            }
        }
        let mut ranked: Vec<usize> = (0..self.noisy.len()).collect();
        // Ties broken by word id: the order is a function of ũ alone.
        ranked.sort_unstable_by_key(|&w| (std::cmp::Reverse(self.noisy[w]), w));
        let candidates = &ranked[seed_ranks(ranked.len())];
        if !candidates.is_empty() {
            for t in 0..k {
                let w = candidates[source.below_u32(candidates.len() as u32) as usize];
                let seeded =
                    (SEED_BOOST * f64::from(self.noisy[w])).min(f64::from(u32::MAX)) as u32;
                out[w * k + t] = out[w * k + t].max(seeded);
            }
        }
        out
    }
}

/// The ranks (by noisy count ũ, most frequent first, 0-based) from which the seed word of each
/// topic is drawn ([`WordRelease::random_split`]): below rank 30 words are too common to mark a
/// topic, beyond rank 1,000 too rare to claim documents. Set by judgment, then measured once
/// (BENCHMARKS.md); not tuned.
pub const SEED_RANKS: std::ops::Range<usize> = 30..1000;

/// The ranks seed words are drawn from in a vocabulary of `v` words: [`SEED_RANKS`], cut at v,
/// and starting at v/10 instead for vocabularies under 300 words (so that small corpora, the
/// audit's included, are seeded too). Public: a function of V only.
pub fn seed_ranks(v: usize) -> std::ops::Range<usize> {
    SEED_RANKS.start.min(v / 10)..SEED_RANKS.end.min(v)
}

/// How much a topic's seed word weighs in the first sampled release: `SEED_BOOST` times its
/// noisy count ũ_w (its other topics keep about ũ_w/K each).
pub const SEED_BOOST: f64 = 10.0;

/// The noise of every release of a run.
#[derive(Clone, Copy, Debug)]
enum Noise {
    Laplace(DiscreteLaplace),
    Gaussian(DiscreteGaussian),
}

impl Noise {
    fn scale(&self) -> f64 {
        match self {
            Noise::Laplace(m) => m.scale(),
            Noise::Gaussian(m) => m.sigma(),
        }
    }

    fn add_to_u32_clamped(&self, cells: &mut [u32], source: &mut NoiseSource) {
        match self {
            Noise::Laplace(m) => m.add_to_u32_clamped(cells, source),
            Noise::Gaussian(m) => m.add_to_u32_clamped(cells, source),
        }
    }
}

impl std::fmt::Debug for Releases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Releases")
            .field("options", &self.options)
            .field("calibration", &self.calibration)
            .field("scale", &self.scale())
            .field("releases", &self.spent.len())
            .finish()
    }
}

impl Releases {
    /// Calibrates the mechanism: the smallest scale b for which R releases of sensitivity L meet
    /// (ε, δ) by basic composition (b = R·L/ε, pure ε) or by Rényi DP at δ
    /// ([`rdp::calibrate`]), then rounded up by the exact sampler (ε per release rounded down
    /// to 33 bits: never less private).
    ///
    /// The Gaussian mechanism: ρ = the largest total whose conversion at δ is ≤ the releases'
    /// ε ([`zcdp::rho_for`]), release j gets its share s_j·ρ ([`gaussian_shares`]) and
    /// σ_j² = (G·C)²/(2·s_j·ρ) in units of 1/G token, rounded up by the sampler.
    pub fn new(options: PrivateOptions, source: NoiseSource) -> Result<Self, PrivacyError> {
        options.check()?;
        if options.cap_to_choose() {
            return Err(PrivacyError::Unsupported(
                "the token cap is still to be chosen (choose_cap, then PrivateOptions::with_cap) before the releases are calibrated".into(),
            ));
        }
        if let PrivateMechanism::Gaussian { l2_clip, split } = options.mechanism {
            let rho = zcdp::rho_for(options.release_epsilon(), options.delta)?;
            // Released in units of 1/G of a token, so the sensitivity is G·C in those units.
            let c = f64::from(l2_clip) * f64::from(CONTRIBUTION_UNITS);
            let smallest = gaussian_smallest_epsilon(
                options.releases,
                options.word_release,
                split,
                l2_clip,
                options.delta,
            );
            if options.release_epsilon() < smallest {
                // Rounded up, so that the ε the message names is one that works.
                let up = |e: f64| (e * 1e4).ceil() / 1e4;
                let fewer = if options.releases > 2 {
                    let two = gaussian_smallest_epsilon(
                        2,
                        options.word_release,
                        split,
                        l2_clip,
                        options.delta,
                    );
                    format!(", or fewer releases (--releases 2 from ε = {:.4})", up(two))
                } else {
                    String::new()
                };
                return Err(PrivacyError::Unsupported(format!(
                    "ε = {} is too small for {} Gaussian release{} (the noisiest σ² would exceed the exact sampler's 2^40): use --epsilon {:.4} or more (δ = {:e}){fewer}",
                    options.release_epsilon(),
                    options.releases,
                    if options.releases == 1 { "" } else { "s" },
                    up(smallest),
                    options.delta,
                )));
            }
            // A relative margin of 10⁻⁹ below ρ absorbs every floating-point rounding of the
            // calibration (ρ_j is rounded up in its last places by `rho_for`): the recorded
            // total is then ≤ ρ, whose conversion is ≤ ε.
            let mechanisms = gaussian_shares(options.releases, options.word_release, split)
                .into_iter()
                .map(|share| {
                    DiscreteGaussian::calibrated(c, rho * (1.0 - 1e-9) * share).map(Noise::Gaussian)
                })
                .collect::<Result<Vec<_>, _>>()?;
            let total: f64 = mechanisms
                .iter()
                .map(|m| match m {
                    Noise::Gaussian(m) => m.rho_for(c),
                    Noise::Laplace(_) => unreachable!("made above"),
                })
                .sum();
            let model_sigma = mechanisms.last().expect("R ≥ 1").scale();
            let calibration = rdp::Calibration {
                scale: model_sigma / f64::from(CONTRIBUTION_UNITS),
                chosen: Chosen::Zcdp { rho: total },
                epsilon: zcdp::epsilon(total, options.delta),
            };
            debug_assert!(calibration.epsilon <= options.release_epsilon());
            return Ok(Self {
                options,
                calibration,
                mechanisms,
                units: CONTRIBUTION_UNITS,
                source,
                spent: Vec::new(),
                latest: None,
                words: None,
            });
        }
        let l = u64::from(options.max_doc_tokens);
        let calibration = rdp::calibrate(
            options.release_epsilon(),
            options.delta,
            l,
            options.releases(),
        )?;
        let eps_r = Epsilon::new(l as f64 / calibration.scale)?;
        let mechanism = DiscreteLaplace::calibrated(l, eps_r)?;
        debug_assert!(mechanism.scale() >= calibration.scale * (1.0 - 1e-12));
        Ok(Self {
            options,
            calibration,
            mechanisms: vec![Noise::Laplace(mechanism); options.releases as usize],
            units: 1,
            source,
            spent: Vec::new(),
            latest: None,
            words: None,
        })
    }

    /// The run's settings.
    pub fn options(&self) -> &PrivateOptions {
        &self.options
    }

    /// How the noise scale was chosen (accountant, scale before the sampler's rounding, ε).
    pub fn calibration(&self) -> &rdp::Calibration {
        &self.calibration
    }

    /// The noise scale of the model (the last release), in tokens: b of every release of the
    /// Laplace mechanism (after the sampler's rounding, ≥ the calibrated one); σ of the model's
    /// release for the Gaussian mechanism, whose releases differ ([`Releases::scales`]).
    pub fn scale(&self) -> f64 {
        self.scales().last().copied().unwrap_or(0.0)
    }

    /// The noise scale of every release, in release order, in tokens.
    pub fn scales(&self) -> Vec<f64> {
        self.mechanisms
            .iter()
            .map(|m| m.scale() / f64::from(self.units))
            .collect()
    }

    /// The noise scales in words, per count: "σ = 7.071 on the word counts, 31.623 on each of
    /// the 9 releases the sampler reads, 10.000 on the model" (the parts the run has).
    pub fn noise_summary(&self) -> String {
        let scales = self.scales();
        let word = self.options.word_release && scales.len() >= 2;
        let mut parts = Vec::new();
        if word {
            parts.push(format!("{:.3} on the word counts", scales[0]));
        }
        let middle = &scales[usize::from(word)..scales.len().saturating_sub(1)];
        if let Some(m) = middle.first() {
            parts.push(match middle.len() {
                1 => format!("{m:.3} on the release the sampler reads"),
                n => format!("{m:.3} on each of the {n} releases the sampler reads"),
            });
        }
        parts.push(format!("{:.3} on the model", self.scale()));
        format!("σ = {}", parts.join(", "))
    }

    /// The noise of the next release, in the released units.
    fn next_noise(&self) -> Noise {
        assert!(
            (self.spent.len() as u64) < self.options.releases(),
            "a private run planned {} releases; one more would exceed its ε",
            self.options.releases()
        );
        self.mechanisms[self.spent.len()]
    }

    /// What a release of `noise` spends: its pure ε (Laplace) or its ρ (Gaussian).
    fn cost(&self, noise: Noise) -> f64 {
        match (noise, self.options.mechanism) {
            (Noise::Laplace(m), _) => m.epsilon_for(u64::from(self.options.max_doc_tokens)),
            (Noise::Gaussian(m), PrivateMechanism::Gaussian { l2_clip, .. }) => {
                m.rho_for(f64::from(l2_clip) * f64::from(self.units))
            }
            (Noise::Gaussian(_), PrivateMechanism::Laplace) => unreachable!("made together"),
        }
    }

    /// Released units back into counts (rounded): post-processing.
    fn to_counts(&self, mut cells: Vec<u32>) -> Vec<u32> {
        if self.units > 1 {
            let u = self.units;
            for c in &mut cells {
                // In u64: a cell saturated at u32::MAX must not wrap to 0.
                *c = ((u64::from(*c) + u64::from(u / 2)) / u64::from(u)) as u32;
            }
        }
        cells
    }

    /// The pure ε each release made so far spent on its own, L/b (what basic composition adds);
    /// for the Gaussian mechanism the ρ of zCDP each spent, C²/(2σ²) (what zCDP adds).
    pub fn spent(&self) -> &[f64] {
        &self.spent
    }

    /// The latest release, which the sampler reads or (after the last iteration) the model.
    pub fn latest(&self) -> Option<&WordTopics> {
        self.latest.as_ref()
    }

    /// Releases `b` with fresh noise and returns the release.
    ///
    /// # Panics
    /// If the run has already made all of its planned releases: more would exceed its ε.
    pub fn release(&mut self, b: &WordTopics) -> &WordTopics {
        self.release_dense(b.to_dense(), b.num_topics)
    }

    /// Releases dense word-major counts (`w·K + k`) with fresh noise on every cell, clamped at
    /// 0, and returns the release (topic totals summed from the noisy counts).
    ///
    /// # Panics
    /// If the run has already made all of its planned releases: more would exceed its ε.
    pub fn release_dense(&mut self, mut dense: Vec<u32>, num_topics: u32) -> &WordTopics {
        self.noise(&mut dense);
        let dense = self.to_counts(dense);
        self.latest
            .insert(WordTopics::from_dense(&dense, num_topics))
    }

    /// Adds fresh noise to `cells` (clamped at 0) and accounts one release.
    ///
    /// # Panics
    /// If the run has already made all of its planned releases: more would exceed its ε.
    fn noise(&mut self, cells: &mut [u32]) {
        let noise = self.next_noise();
        noise.add_to_u32_clamped(cells, &mut self.source);
        self.spent.push(self.cost(noise));
    }

    /// `cells` plus fresh noise, signed (not clamped), and one release accounted as
    /// [`Releases::noise`] accounts it.
    fn noise_signed(&mut self, cells: &[u32]) -> Vec<i64> {
        let noise = self.next_noise();
        let out = match noise {
            Noise::Gaussian(m) => m.noisy_u32(cells, &mut self.source),
            Noise::Laplace(m) => m.noisy_u32(cells, &mut self.source),
        };
        self.spent.push(self.cost(noise));
        out
    }

    /// The word release and its vocabulary, once made.
    pub fn words(&self) -> Option<&WordRelease> {
        self.words.as_ref()
    }

    /// A release of a run with a word release: the first is of the word counts (row sums of
    /// `dense`), the later ones of the rows of the vocabulary only; both composed into the
    /// pseudo-counts the sampler reads and the model holds ([`WordRelease`]).
    fn release_with_words(&mut self, dense: Vec<u32>, num_topics: u32) -> &WordTopics {
        let k = num_topics as usize;
        let gaussian = matches!(self.next_noise(), Noise::Gaussian(_));
        let view = match &self.words {
            None => {
                // Saturating (a sum in u64, capped): a wrapped sum would break the sensitivity
                // bound; capping moves it by at most the document's contribution.
                let u: Vec<u32> = dense
                    .chunks_exact(k)
                    .map(|r| {
                        let sum: u64 = r.iter().map(|&c| u64::from(c)).sum();
                        sum.min(u64::from(u32::MAX)) as u32
                    })
                    .collect();
                let words = if gaussian {
                    // Signed noisy counts, denoised by their empirical-Bayes posterior means
                    // (post-processing: a function of the release and the public σ).
                    let sigma = self.next_noise().scale();
                    let noisy = self.noise_signed(&u);
                    let means = topos_privacy::empirical_bayes::posterior_means(&noisy, sigma);
                    WordRelease::from_posterior_means(&means)
                } else {
                    let mut u = u;
                    self.noise(&mut u);
                    WordRelease::new(u, num_topics, self.scale())
                };
                let split = words.random_split(num_topics, self.units, &mut self.source);
                self.words = Some(words);
                split
            }
            Some(_) => {
                let row_noise = self.next_noise().scale();
                if gaussian {
                    // This release's vocabulary: the rows that can stand above its own noise.
                    let threshold = VOCABULARY_FRACTION * k as f64 * row_noise;
                    self.words
                        .as_mut()
                        .expect("made by the first release")
                        .set_vocabulary(threshold);
                }
                let words = self.words.as_ref().expect("made by the first release");
                let head = words.head.clone();
                let mut cells: Vec<u32> = dense
                    .chunks_exact(k)
                    .zip(&head)
                    .filter(|(_, &h)| h)
                    .flat_map(|(r, _)| r.iter().copied())
                    .collect();
                if gaussian {
                    // Signed noisy rows, projected onto non-negative rows of a better total
                    // (post-processing, [`project_row`]) instead of clamped cell by cell.
                    let word_noise = self.mechanisms[0].scale();
                    let noisy = self.noise_signed(&cells);
                    let words = self.words.as_ref().expect("made by the first release");
                    // Σ_k x_k and ũ_w estimate about the same u_w (a document's contribution to
                    // a word's row sums to the same whatever its topics, up to the floor of each
                    // topic's cell) with variances K·σ_j²
                    // and at most σ_1²: inverse-variance weights.
                    let (var_rows, var_word) =
                        (k as f64 * row_noise * row_noise, word_noise * word_noise);
                    let mut at = 0usize;
                    for (_, &u) in head.iter().zip(&words.noisy).filter(|(&h, _)| h) {
                        let x = &noisy[at..at + k];
                        let sum: i64 = x.iter().sum();
                        let total = (f64::from(u) * var_rows + sum as f64 * var_word)
                            / (var_rows + var_word);
                        cells[at..at + k].copy_from_slice(&project_row(x, total));
                        at += k;
                    }
                } else {
                    self.noise(&mut cells);
                }
                let mut released = vec![0u32; dense.len()];
                let mut next = cells.chunks_exact(k);
                for (row, _) in released.chunks_exact_mut(k).zip(&head).filter(|(_, &h)| h) {
                    row.copy_from_slice(next.next().expect("one noisy row per word of H"));
                }
                self.words
                    .as_ref()
                    .expect("made by the first release")
                    .compose(&released, num_topics)
            }
        };
        let view = self.to_counts(view);
        self.latest
            .insert(WordTopics::from_dense(&view, num_topics))
    }

    /// The release the schedule asks for now, if any: before iteration `engine.iteration() + 1`
    /// one the sampler will read (given to the engine), or after the last iteration the model.
    /// Reads the current topic of every token of `docs` (the engine's documents, whole) and
    /// releases the documents' contributions ([`contribution_counts`]: at most L counted tokens
    /// each) with fresh noise.
    pub fn release_if_due(
        &mut self,
        engine: &mut dyn crate::Engine,
        docs: Docs<'_>,
        num_words: usize,
    ) -> Result<(), crate::TrainError> {
        let o = self.options;
        let next = engine.iteration() + 1;
        let for_sampling = o.release_before(next);
        let last = engine.iteration() == o.iterations && (self.spent.len() as u64) < o.releases();
        if !(for_sampling || last) {
            return Ok(());
        }
        let k = engine.topic_totals()?.len() as u32;
        let mut z = vec![0u16; docs.tokens().len()];
        engine.assignments(0, &mut z)?;
        let dense = match o.mechanism {
            PrivateMechanism::Laplace => {
                contribution_counts(docs, &z, num_words, k, o.max_doc_tokens)
            }
            PrivateMechanism::Gaussian { l2_clip, .. } => {
                contribution_units_l2(docs, &z, num_words, k, l2_clip)
            }
        };
        let released = if o.word_release {
            self.release_with_words(dense, k).clone()
        } else {
            self.release_dense(dense, k).clone()
        };
        if for_sampling {
            engine.sample_from_release(std::sync::Arc::new(released))?;
        }
        Ok(())
    }

    /// The guarantee of the whole run, for the model file: ε (and δ when the Rényi accountant
    /// was used) over R releases of sensitivity L composed sequentially, documents capped at L
    /// tokens, add/remove-one-document neighbours, the noise scale.
    pub fn guarantee(&self) -> Guarantee {
        if let (PrivateMechanism::Gaussian { l2_clip, .. }, Chosen::Zcdp { rho }) =
            (self.options.mechanism, self.calibration.chosen)
        {
            let g = Guarantee::discrete_gaussian(
                self.options.epsilon.get(),
                self.options.delta,
                self.options.releases(),
                f64::from(l2_clip),
                rho,
            )
            .with_noise_scale(self.scale());
            return if self.options.cap_epsilon > 0.0 {
                g.with_cap_epsilon(self.options.cap_epsilon)
            } else {
                g
            };
        }
        let g = Guarantee::discrete_laplace(
            self.options.epsilon.get(),
            Composition::Sequential,
            self.options.releases(),
            f64::from(self.options.max_doc_tokens),
        )
        .with_max_doc_tokens(self.options.max_doc_tokens)
        .with_noise_scale(self.scale());
        let g = if self.options.cap_epsilon > 0.0 {
            g.with_cap_epsilon(self.options.cap_epsilon)
        } else {
            g
        };
        match self.calibration.chosen {
            Chosen::Basic => g,
            Chosen::Renyi { order } => g.with_renyi(order, self.options.delta),
            Chosen::Zcdp { .. } => unreachable!("only the Gaussian mechanism is accounted in zCDP"),
        }
    }
}

/// One whole private training run in memory, driven as [`crate::Run`] drives one on the CPU:
/// ESCA on one thread, its sampler keyed with 64 bits drawn from `source` (a real run draws
/// them from the OS and never records them), the releases calibrated and noised from the same
/// `source`, and a release whenever the schedule asks ([`Releases::release_if_due`] after the
/// start and after every iteration; the last is the model). Returns the releases:
/// [`Releases::latest`] is the model, [`Releases::words`] the word release.
///
/// For audits that run many private trainings on tiny neighbouring corpora
/// (`tests/private_audit.rs`): it is the mechanism of `train --private` without the corpus file,
/// the ledger and the model file that [`crate::Run`] adds around it.
pub fn train_in_memory(
    docs: std::sync::Arc<OwnedDocs>,
    num_words: usize,
    hyper: topos_model::Hyperparameters,
    options: PrivateOptions,
    mut source: NoiseSource,
) -> Result<Releases, crate::TrainError> {
    let seed = source.next_u64();
    let mut releases = Releases::new(options, source)?;
    let opts = crate::TrainOptions {
        sampler: &crate::samplers::esca::Esca,
        hyper,
        seed,
        threads: 1,
        partitions: None,
        settings: Default::default(),
    };
    let mut engine = crate::Trainer::new(crate::TrainDocs::Owned(docs.clone()), num_words, opts)?;
    releases.release_if_due(&mut engine, docs.view(), num_words)?;
    for _ in 0..options.iterations {
        engine.step();
        releases.release_if_due(&mut engine, docs.view(), num_words)?;
    }
    Ok(releases)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_default_delta_is_never_warned_about() {
        for n in [
            1u64, 248, 9_999, 10_000, 10_001, 10_204, 99_999, 1_000_000, 8_282_000,
        ] {
            let d = default_delta(n);
            assert!(d <= DEFAULT_DELTA, "n = {n}");
            assert_eq!(
                delta_against_documents(d, n),
                DeltaCheck::Fine,
                "n = {n}: {d:e}"
            );
            // Not needlessly small: within a factor ten of the bound, or the default itself.
            assert!(
                d == DEFAULT_DELTA || d * 10.0 > 0.01 / n as f64,
                "n = {n}: {d:e}"
            );
        }
        assert_eq!(default_delta(10_204), 1e-7);
        assert_eq!(default_delta(248), 1e-6);
    }

    use super::*;

    #[test]
    fn delta_is_refused_at_one_over_n_and_warned_above_a_hundredth_of_it() {
        assert!(matches!(
            delta_against_documents(1e-3, 1000),
            DeltaCheck::Refuse(_)
        ));
        assert!(matches!(
            delta_against_documents(0.5, 10),
            DeltaCheck::Refuse(_)
        ));
        assert!(matches!(
            delta_against_documents(9e-4, 1000),
            DeltaCheck::Warn(_)
        ));
        assert!(matches!(
            delta_against_documents(1.1e-5, 1000),
            DeltaCheck::Warn(_)
        ));
        assert_eq!(delta_against_documents(1e-5, 1000), DeltaCheck::Fine);
        assert_eq!(delta_against_documents(1e-6, 10_000), DeltaCheck::Fine);
        assert!(matches!(
            delta_against_documents(1e-6, 100_000),
            DeltaCheck::Warn(_)
        ));
    }

    fn eps(x: f64) -> Epsilon {
        Epsilon::new(x).unwrap()
    }

    #[test]
    fn the_cap_grid_is_public_increasing_and_bounded() {
        let g = cap_candidates();
        assert_eq!(
            &g[..17],
            &[1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 13, 16, 19, 23, 27, 32, 38]
        );
        assert!(g.windows(2).all(|w| w[0] < w[1]), "{g:?}");
        assert_eq!(*g.last().unwrap(), 4_096);
        assert_eq!(g.len(), 44);
        assert!(
            g.contains(&45) && g.contains(&54) && g.contains(&76),
            "{g:?}"
        );
    }

    /// Lengths 1..=n of `n` documents: the lower quartile is about n/4.
    fn ramp(n: usize) -> impl Iterator<Item = usize> + Clone {
        1..=n
    }

    #[test]
    fn the_private_cap_is_the_lower_quartile_at_large_epsilon_and_follows_the_exponential_law() {
        // The target: the bucket of the grid that holds the lower quartile.
        // Lengths 1..=400: 100 documents below 101, in the bucket [91, 108).
        assert_eq!(cap_target(ramp(400)), 91);
        // All of one length: the bucket that holds it, even below 8 or above every candidate.
        assert_eq!(cap_target(std::iter::repeat_n(30, 50)), 27);
        assert_eq!(cap_target(std::iter::repeat_n(5, 2000)), 5);
        assert_eq!(cap_target(std::iter::repeat_n(9000, 20)), 4_096);
        let mut src = NoiseSource::insecure_seeded(3);
        for _ in 0..20 {
            let c = choose_cap(ramp(400), eps(50.0), &mut src).unwrap();
            assert_eq!(c.cap, 91);
            assert!(c.epsilon <= 50.0 && c.epsilon > 50.0 - 1e-9);
        }
        // At ε_L = 0.05 the frequencies match exp(ε·s/(2Δ)) normalised (5 sd per candidate).
        let lens: Vec<usize> = (0..200).map(|i| 10 + (i * 7) % 90).collect();
        let grid = cap_candidates();
        let n = lens.len() as f64;
        let e = 0.05;
        let below = |c: f64| lens.iter().filter(|&&l| (l as f64) < c).count() as f64;
        let w: Vec<f64> = grid
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                let next = grid.get(i + 1).map_or(f64::INFINITY, |&x| f64::from(x));
                let s = (4.0 * below(f64::from(c)) - n)
                    .max(n - 4.0 * below(next))
                    .max(0.0);
                (e * -s / 6.0).exp()
            })
            .collect();
        let z: f64 = w.iter().sum();
        let draws = 20_000;
        let mut hits = vec![0u32; grid.len()];
        for _ in 0..draws {
            let c = choose_cap(lens.iter().copied(), eps(e), &mut src).unwrap();
            hits[grid.iter().position(|&g| g == c.cap).unwrap()] += 1;
        }
        for (i, (&h, &wi)) in hits.iter().zip(&w).enumerate() {
            let p = wi / z;
            let sd = (draws as f64 * p * (1.0 - p)).sqrt().max(1.0);
            assert!(
                (f64::from(h) - draws as f64 * p).abs() < 5.0 * sd,
                "candidate {} drawn {h} times, expected {:.1}",
                grid[i],
                draws as f64 * p
            );
        }
        // No documents: every candidate scores 0 (uniform), still a valid cap.
        assert!(
            choose_cap(std::iter::empty(), eps(1.0), &mut src)
                .unwrap()
                .cap
                >= 1
        );
        // Documents shorter than 8 (5 tokens each): the cap is theirs, not uniform up to
        // 4,096 as when every candidate tied above them.
        for _ in 0..20 {
            let c = choose_cap(std::iter::repeat_n(5, 2000), eps(1.0), &mut src).unwrap();
            assert_eq!(c.cap, 5);
        }
        assert!(choose_cap(ramp(10), eps(1e-12), &mut src).is_err());
    }

    #[test]
    fn a_privately_chosen_cap_takes_its_share_of_epsilon_from_the_releases() {
        let opts = PrivateOptions {
            epsilon: eps(1.0),
            delta: 0.0,
            max_doc_tokens: 19,
            iterations: 5,
            releases: 2,
            word_release: true,
            cap_epsilon: 0.05,
            mechanism: PrivateMechanism::Laplace,
        };
        let r = Releases::new(opts, NoiseSource::insecure_seeded(1)).unwrap();
        // b = R·L/(ε − ε_L) = 38/0.95 = 40.
        assert!((r.scale() - 40.0).abs() < 1e-6, "{}", r.scale());
        let g = r.guarantee();
        assert_eq!((g.epsilon, g.cap_epsilon), (1.0, Some(0.05)));
        assert_eq!(g.max_doc_tokens, Some(19));
        for bad in [1.0, 2.0, -0.1] {
            let o = PrivateOptions {
                cap_epsilon: bad,
                ..opts
            };
            assert!(Releases::new(o, NoiseSource::insecure_seeded(1)).is_err());
        }
    }

    #[test]
    fn caps_documents_by_keeping_their_first_tokens() {
        let docs: OwnedDocs = [&[1u32, 2, 3, 4][..], &[], &[5, 6]].into_iter().collect();
        let capped = cap_documents(docs.view(), 3);
        let rows: Vec<&[u32]> = capped.view().iter().collect();
        assert_eq!(rows, vec![&[1, 2, 3][..], &[], &[5, 6]]);
        assert_eq!(longest_document(capped.view()), 3);
        assert_eq!(longest_document(docs.view()), 4);
    }

    #[test]
    fn a_document_contributes_at_most_the_cap_whatever_its_length_and_topics() {
        for cap in [1u32, 3, 7, 50] {
            for len in 0..200usize {
                let n = (0..len).filter(|&i| counted(i, len, cap)).count();
                assert_eq!(n, len.min(cap as usize), "len {len} cap {cap}");
            }
        }
        // Neighbouring corpora: removing any one document moves the counts by exactly
        // min(len, cap) in L1 norm, for any assignments.
        let mut x = 12345u64;
        let mut next = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        let (v, k, cap) = (30usize, 4u32, 5u32);
        let lens: Vec<usize> = (0..12).map(|_| next(15) as usize).collect();
        let docs: OwnedDocs = lens
            .iter()
            .map(|&n| (0..n).map(|_| next(v as u64) as u32).collect::<Vec<u32>>())
            .collect::<Vec<_>>()
            .iter()
            .map(Vec::as_slice)
            .collect();
        let z: Vec<u16> = (0..docs.view().num_tokens())
            .map(|_| next(u64::from(k)) as u16)
            .collect();
        let all = contribution_counts(docs.view(), &z, v, k, cap);
        let mut at = 0usize;
        for (d, &n) in lens.iter().enumerate() {
            let mut without = OwnedDocs::new();
            let mut zw = Vec::new();
            let mut pos = 0usize;
            for (e, doc) in docs.view().iter().enumerate() {
                if e != d {
                    without.push(doc);
                    zw.extend_from_slice(&z[pos..pos + doc.len()]);
                }
                pos += doc.len();
            }
            let rest = contribution_counts(without.view(), &zw, v, k, cap);
            let l1: u64 = all
                .iter()
                .zip(&rest)
                .map(|(&a, &b)| u64::from(a.abs_diff(b)))
                .sum();
            assert_eq!(l1, n.min(cap as usize) as u64, "document {d}");
            at += n;
        }
        assert_eq!(at, z.len());
    }

    #[test]
    fn plans_score_the_held_out_tokens_or_else_the_training_ones() {
        let mut train = OwnedDocs::new();
        train.push(&[0, 1, 1]);
        train.push(&[2]);
        let mut held = OwnedDocs::new();
        held.push(&[1, 3]);
        assert_eq!(
            scored_word_counts(held.view(), train.view(), 4),
            (vec![0, 1, 0, 1], ScoredTokens::HeldOut)
        );
        let mut empty = OwnedDocs::new();
        empty.push(&[]);
        assert_eq!(
            scored_word_counts(empty.view(), train.view(), 4),
            (vec![1, 2, 1, 0], ScoredTokens::Training)
        );
        assert_eq!(ScoredTokens::Training.name(), "training");
    }

    #[test]
    fn a_release_sums_every_documents_contribution_the_same_for_any_thread_count() {
        // Documents long and short, words repeated, some past the clip, over several batches so
        // that the batching is crossed too (made smaller by a cap on the tokens); a vocabulary
        // not a multiple of the shards, with words up to the last.
        let (v, k) = (1_003usize, 7u32);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        let mut docs = OwnedDocs::new();
        let mut topics = Vec::new();
        for d in 0..CONTRIBUTION_BATCH_TOKENS as usize / 10 {
            let len = if d % 97 == 0 { 400 } else { next(30) as usize };
            let words: Vec<u32> = (0..len)
                .map(|_| match next(4) {
                    0 => next(v as u64) as u32,
                    _ => (next(40) * next(25)) as u32,
                })
                .collect();
            topics.extend(words.iter().map(|_| next(u64::from(k)) as u16));
            docs.push(&words);
        }
        let mut want = vec![0u32; v * k as usize];
        let mut at = 0;
        for doc in docs.view().iter() {
            for (w, t, c) in l2_contribution(doc, &topics[at..at + doc.len()], 12) {
                want[w as usize * k as usize + usize::from(t)] += c;
            }
            at += doc.len();
        }
        for threads in [1, 3, 8] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let got = pool.install(|| contribution_units_l2(docs.view(), &topics, v, k, 12));
            assert!(got == want, "{threads} threads");
        }
        assert!(docs.view().num_tokens() > CONTRIBUTION_BATCH_TOKENS);
        assert!(want[(v - 1) * k as usize..].iter().any(|&c| c > 0));
        // The word counts of the plan and the margins: every token in one topic, each word's
        // count floored once a document, and at least the sum of its row above.
        let mut words = vec![0u32; v];
        for doc in docs.view().iter() {
            for (w, _, c) in l2_contribution(doc, &vec![0; doc.len()], 12) {
                words[w as usize] += c;
            }
        }
        assert!(clipped_word_units(docs.view(), v, 12) == words);
        for (w, row) in want.chunks(k as usize).enumerate() {
            assert!(words[w] >= row.iter().sum::<u32>(), "word {w}");
        }
        assert!(contribution_units_l2(OwnedDocs::new().view(), &[], 0, k, 12).is_empty());
    }

    #[test]
    fn l2_contributions_are_bounded_whatever_the_document_and_weigh_repeats_by_their_root() {
        // Σ cell² ≤ (G·C)² for every document and assignment; a word's row sums to at most
        // G·f·√n_w; the contribution is a function of the document and its topics alone.
        let mut x = 777u64;
        let mut next = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        let g = u64::from(CONTRIBUTION_UNITS);
        for clip in [1u32, 2, 3, 7, 12] {
            for _ in 0..200 {
                let len = next(300) as usize;
                let vocab = 1 + next(40);
                let doc: Vec<u32> = (0..len).map(|_| next(vocab) as u32).collect();
                let z: Vec<u16> = (0..len).map(|_| next(5) as u16).collect();
                let cells = l2_contribution(&doc, &z, clip);
                let sq: u64 = cells.iter().map(|c| u64::from(c.2).pow(2)).sum();
                assert!(
                    sq <= (g * u64::from(clip)).pow(2),
                    "C = {clip}: Σ cell² = {sq}"
                );
                // Row sums bound the word release's contribution the same way.
                let mut rows = std::collections::HashMap::<u32, u64>::new();
                for c in &cells {
                    *rows.entry(c.0).or_default() += u64::from(c.2);
                }
                let rsq: u64 = rows.values().map(|v| v * v).sum();
                assert!(
                    rsq <= (g * u64::from(clip)).pow(2),
                    "C = {clip}: rows {rsq}"
                );
                assert_eq!(cells, l2_contribution(&doc, &z, clip));
            }
        }
        // A short document of distinct words: each counts one whole token (G units), whatever
        // its topics.
        let doc: Vec<u32> = (0..100).collect();
        let z = vec![3u16; 100];
        let cells = l2_contribution(&doc, &z, 12);
        assert_eq!(cells.len(), 100);
        assert!(cells.iter().all(|c| c.2 == CONTRIBUTION_UNITS && c.1 == 3));
        // A word repeated 4 times in a short document weighs √4 = 2 tokens, split by topic.
        let cells = l2_contribution(&[7, 7, 7, 7, 8], &[0, 0, 1, 1, 0], 12);
        assert_eq!(cells, vec![(7, 0, 16), (7, 1, 16), (8, 0, 16)]);
        // A document of one word, 576 tokens, C = 3: scaled by 3/24, the word counts
        // exactly C tokens.
        let cells = l2_contribution(&[5u32; 576], &[0u16; 576], 3);
        assert_eq!(cells, vec![(5, 0, 3 * CONTRIBUTION_UNITS)]);
        assert!(l2_contribution(&[], &[], 3).is_empty());
    }

    #[test]
    fn projection_keeps_the_total_and_is_non_negative() {
        assert_eq!(project_row(&[10, -3, 2], 12.0), vec![10, 0, 2]);
        // Sum 4, total 12: every cell above τ = −8/3 is raised by 8/3 (5.67, 3.67, 2.67),
        // then rounded.
        assert_eq!(project_row(&[3, 1, 0, -20], 12.0), vec![6, 4, 3, 0]);
        assert_eq!(project_row(&[-5, -2], 0.0), vec![0, 0]);
        assert_eq!(project_row(&[-5, -2], -3.0), vec![0, 0]);
        // τ = −5.5: (0.5, 3.5), rounded half away from zero.
        assert_eq!(project_row(&[-5, -2], 4.0), vec![1, 4]);
        let y = project_row(&[100, 50, -40, 7], 150.0);
        assert!((i64::from(y.iter().sum::<u32>()) - 150).abs() <= 2, "{y:?}");
    }

    /// ln Σ_x exp(f(x)) over the integers lo..=hi, stable (max subtracted first).
    fn log_sum_exp(lo: i64, hi: i64, f: impl Fn(f64) -> f64) -> f64 {
        let m = (lo..=hi)
            .map(|x| f(x as f64))
            .fold(f64::NEG_INFINITY, f64::max);
        m + (lo..=hi).map(|x| (f(x as f64) - m).exp()).sum::<f64>().ln()
    }

    /// The exact Rényi divergence D_α(N_Z(0, σ²) ‖ N_Z(c, σ²)) of two discrete Gaussians whose
    /// means differ by the integer c, computed from the pmfs, in log space:
    /// (1/(α − 1))·ln Σ_x P(x)^α·Q(x)^{1−α}. The summand is ∝ exp(−(x − x₀)²/(2σ²)) with
    /// x₀ = (1 − α)·c, so the sum runs over x₀ ± 12σ (the rest is below e^{−72}, far under
    /// f64's precision relative to the peak); ln Z by the same sum around 0.
    fn discrete_gaussian_renyi(alpha: f64, c: i64, var: f64) -> f64 {
        let sd = var.sqrt();
        let w = (12.0 * sd).ceil() as i64 + 2;
        let ln_z = log_sum_exp(-w, w, |x| -x * x / (2.0 * var));
        let lp = |x: f64| -x * x / (2.0 * var) - ln_z;
        let lq = |x: f64| -(x - c as f64).powi(2) / (2.0 * var) - ln_z;
        let x0 = ((1.0 - alpha) * c as f64).round() as i64;
        let ln_sum = log_sum_exp(x0 - w, x0 + w, |x| alpha * lp(x) + (1.0 - alpha) * lq(x));
        ln_sum / (alpha - 1.0)
    }

    /// The calibration chain, with power: σ exactly as training calibrates it
    /// ([`Releases::new`]) for (ε, δ, C, R), then the **exact** Rényi divergence of the discrete
    /// Gaussian pmfs N_Z(0, σ²) vs N_Z(C, σ²) at the orders of the accountant's grid
    /// ([`rdp::orders`], those up to 1,000, a subset, so the minimum can only be larger),
    /// composed over the R releases (R·D_α), converted to (ε, δ) by the accountant's RDP
    /// conversion ([`rdp::conversion`], CKS20 Proposition 12) and minimised over α: it must be
    /// ≤ the target ε. A 1-D shift of norm C is the worst case among contributions of L2 norm
    /// ≤ C up to the bound CKS20 prove (Canonne, Kamath & Steinke 2020, Theorem 4 and its
    /// multivariate form: D_α ≤ α·‖Δ‖₂²/(2σ²) for every integer Δ, with equality approached by
    /// a shift along one axis as σ grows), so this checks ρ, σ, R and the conversion
    /// together, independently of the accountant's closed forms. Control: the same chain with a
    /// factor-2 mistake (σ²/2, i.e. σ/√2) must exceed the target — the sampling audits only see
    /// ~10× errors in ρ.
    #[test]
    fn the_calibrated_sigma_meets_epsilon_by_the_exact_discrete_gaussian_divergence() {
        let delta = 1e-6;
        let orders: Vec<f64> = rdp::orders().filter(|&a| a <= 1_000.0).collect();
        // Releases differ in σ (their shares of ρ): compose the divergences of each. Released
        // in units of 1/G, so the shift is C·G and σ is in units.
        let chain_epsilon = |vars: &[f64], c: i64| -> f64 {
            orders
                .iter()
                .map(|&a| {
                    let d: f64 = vars.iter().map(|&v| discrete_gaussian_renyi(a, c, v)).sum();
                    rdp::conversion(d, a, delta)
                })
                .fold(f64::INFINITY, f64::min)
        };
        let g = f64::from(CONTRIBUTION_UNITS);
        for target in [1.0, 10.0] {
            for (c, r) in [(12u32, 2u32), (12, 3)] {
                let opts = PrivateOptions {
                    epsilon: eps(target),
                    delta,
                    max_doc_tokens: 0,
                    iterations: 4,
                    releases: r,
                    word_release: true,
                    cap_epsilon: 0.0,
                    mechanism: PrivateMechanism::Gaussian {
                        l2_clip: c,
                        split: BudgetSplit::Focused,
                    },
                };
                let rel = Releases::new(opts, NoiseSource::insecure_seeded(0)).unwrap();
                let vars: Vec<f64> = rel.scales().iter().map(|s| (s * g).powi(2)).collect();
                let shift = i64::from(c * CONTRIBUTION_UNITS);
                let got = chain_epsilon(&vars, shift);
                assert!(
                    got <= target,
                    "ε = {target}, C = {c}, R = {r}: σ = {} gives ε = {got}",
                    rel.scale()
                );
                // Tight: within 1% of the target (the calibration leaves little on the table).
                assert!(got > 0.99 * target, "ε = {target}, R = {r}: {got}");
                // Control: a factor-2 mistake in σ² (σ/√2, or equivalently ρ doubled) is caught.
                let halved: Vec<f64> = vars.iter().map(|v| v / 2.0).collect();
                let wrong = chain_epsilon(&halved, shift);
                assert!(
                    wrong > target * 1.2,
                    "σ/√2 passed: ε = {target}, R = {r}: {wrong}"
                );
            }
        }
    }

    #[test]
    fn too_small_an_epsilon_is_refused_with_the_smallest_that_works() {
        let opts = |epsilon: f64, releases: u32| PrivateOptions {
            epsilon: eps(epsilon),
            delta: 1e-7,
            max_doc_tokens: 0,
            iterations: 50,
            releases,
            word_release: true,
            cap_epsilon: 0.0,
            mechanism: PrivateMechanism::Gaussian {
                l2_clip: 12,
                split: BudgetSplit::Focused,
            },
        };
        let smallest = gaussian_smallest_epsilon(11, true, BudgetSplit::Focused, 12, 1e-7);
        assert!(smallest > 0.005 && smallest < 0.01, "{smallest}");
        // Just above: every release calibrates; just below: one line naming the smallest ε and
        // what to change, before any noise is drawn.
        assert!(Releases::new(opts(smallest * 1.001, 11), NoiseSource::insecure_seeded(1)).is_ok());
        let e = Releases::new(opts(smallest * 0.999, 11), NoiseSource::insecure_seeded(1))
            .unwrap_err()
            .to_string();
        assert!(e.contains("--releases 2") && !e.contains('\n'), "{e}");
        // The ε it names (rounded up) is accepted.
        let named: f64 = e
            .split("--epsilon ")
            .nth(1)
            .and_then(|t| t.split(' ').next())
            .unwrap()
            .parse()
            .unwrap();
        assert!(named >= smallest && named < smallest + 1e-4, "{e}");
        assert!(Releases::new(opts(named, 11), NoiseSource::insecure_seeded(1)).is_ok());
        // Two releases: no "fewer releases" to suggest.
        let e = Releases::new(opts(1e-5, 2), NoiseSource::insecure_seeded(1))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("2 Gaussian releases") && !e.contains("fewer"),
            "{e}"
        );
        // Fewer releases, a smaller share to the noisiest: two releases go far lower.
        let two = gaussian_smallest_epsilon(2, true, BudgetSplit::Focused, 12, 1e-7);
        assert!(two < smallest / 5.0, "{two} {smallest}");
        assert!(Releases::new(opts(two * 1.001, 2), NoiseSource::insecure_seeded(1)).is_ok());
    }

    #[test]
    fn gaussian_releases_are_accounted_in_zcdp() {
        let opts = PrivateOptions {
            epsilon: eps(1.0),
            delta: 1e-6,
            max_doc_tokens: 0,
            iterations: 4,
            releases: 2,
            word_release: true,
            cap_epsilon: 0.0,
            mechanism: PrivateMechanism::Gaussian {
                l2_clip: 12,
                split: BudgetSplit::Focused,
            },
        };
        let mut r = Releases::new(opts, NoiseSource::insecure_seeded(3)).unwrap();
        let rho = zcdp::rho_for(1.0, 1e-6).unwrap();
        // Release j: σ_j² = C²/(2·ρ·share_j) in tokens, rounded up (in units of 1/G).
        for (sigma, share) in r
            .scales()
            .iter()
            .zip(gaussian_shares(2, true, BudgetSplit::Focused))
        {
            let s2 = 144.0 / (2.0 * rho * share);
            let g2 = f64::from(CONTRIBUTION_UNITS).powi(2);
            assert!(
                sigma.powi(2) >= s2 && sigma.powi(2) < s2 + 0.01 / g2,
                "{sigma} against {}",
                s2.sqrt()
            );
        }
        assert_eq!(r.scale(), r.scales()[1]);
        let (v, k) = (50usize, 2u32);
        let mut dense = vec![0u32; v * 2];
        dense[0] = 5_000;
        r.release_with_words(dense.clone(), k);
        r.release_with_words(dense, k);
        let g = r.guarantee();
        let total: f64 = r.spent().iter().sum();
        assert!(total <= g.accountant.zcdp_rho.unwrap() * (1.0 + 1e-12));
        assert!(zcdp::epsilon(g.accountant.zcdp_rho.unwrap(), 1e-6) <= 1.0);
        assert_eq!(g.delta, Some(1e-6));
        assert_eq!(g.l2_sensitivity, Some(12.0));
        assert_eq!((g.sensitivity, g.max_doc_tokens), (None, None));
        assert_eq!(g.mechanism, topos_privacy::Mechanism::DiscreteGaussian);
        // δ = 0, a zero clip and an ε spent on a cap (Gaussian chooses none) are refused.
        for bad in [
            PrivateOptions { delta: 0.0, ..opts },
            PrivateOptions {
                cap_epsilon: 0.05,
                ..opts
            },
            PrivateOptions {
                mechanism: PrivateMechanism::Gaussian {
                    l2_clip: 0,
                    split: BudgetSplit::Focused,
                },
                ..opts
            },
        ] {
            assert!(Releases::new(bad, NoiseSource::insecure_seeded(1)).is_err());
        }
    }

    #[test]
    fn releases_are_noisy_clamped_and_accounted() {
        let opts = PrivateOptions {
            epsilon: eps(1.0),
            delta: 0.0,
            max_doc_tokens: 10,
            iterations: 4,
            releases: 5,
            word_release: false,
            cap_epsilon: 0.0,
            mechanism: PrivateMechanism::Laplace,
        };
        assert_eq!(opts.releases(), 5);
        let mut r = Releases::new(opts, NoiseSource::insecure_seeded(5)).unwrap();
        assert!((r.scale() - 50.0).abs() < 1e-6, "{}", r.scale());
        let b = WordTopics {
            num_topics: 3,
            offsets: vec![0, 1, 1],
            topics: vec![2],
            counts: vec![1000],
            totals: vec![0, 0, 1000],
        };
        for _ in 0..5 {
            let out = r.release(&b).clone();
            assert_eq!(out.num_words(), 2);
            assert_eq!(
                out.totals.iter().sum::<u64>(),
                out.counts.iter().map(|&c| u64::from(c)).sum::<u64>()
            );
            assert_ne!(out, b);
        }
        let total: f64 = r.spent().iter().sum();
        let g = r.guarantee();
        assert!(
            total <= g.epsilon && total > g.epsilon * (1.0 - 1e-9),
            "{total}"
        );
        assert_eq!(g.accountant.releases, 5);
        assert_eq!((g.sensitivity, g.max_doc_tokens), (Some(10.0), Some(10)));
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            r.release(&b);
        }));
        assert!(caught.is_err(), "a sixth release must be refused");
        let zero = PrivateOptions {
            max_doc_tokens: 0,
            ..opts
        };
        assert!(Releases::new(zero, NoiseSource::insecure_seeded(1)).is_err());
        for (iterations, releases) in [(4, 1), (4, 6), (0, 2)] {
            let bad = PrivateOptions {
                iterations,
                releases,
                ..opts
            };
            let e = Releases::new(bad, NoiseSource::insecure_seeded(1)).unwrap_err();
            assert!(e.to_string().contains("release"), "{e}");
        }
        // Pure ε (δ = 0): basic composition, no δ in the guarantee.
        assert_eq!((g.delta, g.accountant.renyi_order), (None, None));
        assert_eq!(g.noise_scale, Some(r.scale()));
    }

    #[test]
    fn the_seeded_split_reads_only_the_word_release_and_seeds_every_topic_once() {
        // ũ over 1,200 words, all distinct so that ranks are unambiguous: word w has 2,000 − w.
        let noisy: Vec<u32> = (0..1200u32).map(|w| 2000 - w).collect();
        let words = WordRelease::new(noisy.clone(), 8, 3.0);
        let k = 8usize;
        let split = |seed| words.random_split(8, 1, &mut NoiseSource::insecure_seeded(seed));
        // A function of ũ and the fresh randomness only: the same draws give the same split.
        assert_eq!(split(5), split(5));
        let out = split(5);
        for (w, row) in out.chunks_exact(k).enumerate() {
            let u = noisy[w];
            let total: u64 = row.iter().map(|&c| u64::from(c)).sum();
            let seeded: Vec<usize> = (0..k)
                .filter(|&t| f64::from(row[t]) >= SEED_BOOST * f64::from(u))
                .collect();
            if seeded.is_empty() {
                // Unseeded words are split exactly: ũ_w units over the topics.
                assert_eq!(total, u64::from(u), "word {w}");
            } else {
                // Seeds come from the ranks 30..1000 of ũ (here: word id = rank).
                assert!(
                    seed_ranks(1200).contains(&w),
                    "word {w} seeded outside the ranks"
                );
            }
        }
        // Every topic has a seed: a cell of at least SEED_BOOST·ũ_w.
        for t in 0..k {
            assert!(
                out.chunks_exact(k)
                    .zip(&noisy)
                    .any(|(row, &u)| f64::from(row[t]) >= SEED_BOOST * f64::from(u)),
                "topic {t} has no seed"
            );
        }
        // The ranks: 30..1000 for large vocabularies, from V/10 for small ones, never past V.
        assert_eq!(seed_ranks(1200), 30..1000);
        assert_eq!(seed_ranks(500), 30..500);
        assert_eq!(seed_ranks(20), 2..20);
        assert_eq!(seed_ranks(5), 0..5);
        assert!(seed_ranks(0).is_empty());
        // A small vocabulary (the audit's) is seeded too.
        let few = WordRelease::new(vec![7; 5], 2, 1.0);
        let out = few.random_split(2, 1, &mut NoiseSource::insecure_seeded(1));
        for t in 0..2 {
            assert!(
                out.chunks_exact(2).any(|r| r[t] >= 70),
                "topic {t} has no seed"
            );
        }
        // In units of 1/16 token (the Gaussian mechanism): whole tokens are split, 16 units a
        // draw, so an unseeded row holds ũ_w rounded to whole tokens, in multiples of 16.
        let units = CONTRIBUTION_UNITS;
        let out = words.random_split(8, units, &mut NoiseSource::insecure_seeded(5));
        for (w, row) in out.chunks_exact(k).enumerate().skip(1000) {
            let tokens = (noisy[w] + units / 2) / units;
            assert!(row.iter().all(|&c| c % units == 0), "word {w}: {row:?}");
            assert_eq!(row.iter().sum::<u32>(), tokens * units, "word {w}");
        }
    }

    #[test]
    fn the_default_gaussian_releases_and_their_shares_of_rho() {
        assert_eq!(gaussian_releases(50), GAUSSIAN_RELEASES_MAX);
        assert_eq!(gaussian_releases(200), GAUSSIAN_RELEASES_MAX);
        assert_eq!(gaussian_releases(30), 16);
        assert_eq!(gaussian_releases(20), GAUSSIAN_RELEASES_MIN);
        assert_eq!(gaussian_releases(10), GAUSSIAN_RELEASES_MIN);
        assert_eq!(gaussian_releases(4), 5);
        assert_eq!(gaussian_releases(0), 1);
        let close = |a: &[f64], b: &[f64]| {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-12)
        };
        // Word counts, nine sampling releases, the model.
        let s = gaussian_shares(11, true, BudgetSplit::Focused);
        assert!(close(&s[..1], &[WORD_RELEASE_SHARE]));
        assert!(close(&s[10..], &[MODEL_RELEASE_SHARE]));
        let mid = (1.0 - WORD_RELEASE_SHARE - MODEL_RELEASE_SHARE) / 9.0;
        assert!(s[1..10].iter().all(|&x| (x - mid).abs() < 1e-12), "{s:?}");
        for (r, w) in [
            (1, false),
            (2, true),
            (2, false),
            (3, true),
            (5, false),
            (51, true),
        ] {
            let s = gaussian_shares(r, w, BudgetSplit::Focused);
            assert_eq!(s.len(), r as usize);
            assert!(
                (s.iter().sum::<f64>() - 1.0).abs() < 1e-12,
                "{r} {w}: {s:?}"
            );
            assert!(s.iter().all(|&x| x > 0.0));
        }
        assert!(close(
            &gaussian_shares(2, true, BudgetSplit::Focused),
            &[WORD_RELEASE_SHARE, 0.5]
        ));
        assert!(close(
            &gaussian_shares(1, false, BudgetSplit::Focused),
            &[1.0]
        ));
        assert!(close(
            &gaussian_shares(2, false, BudgetSplit::Focused),
            &[0.6, 0.4]
        ));
        assert!(close(
            &gaussian_shares(4, true, BudgetSplit::Equal),
            &[0.25; 4]
        ));
    }

    #[test]
    fn clipping_keeps_short_plain_documents_and_shrinks_long_bursty_ones() {
        // Documents of distinct words, no longer than C² tokens: each contributes its raw counts,
        // so the clipped counts are the unigram model's.
        let mut plain = OwnedDocs::new();
        for d in 0..40u32 {
            let doc: Vec<u32> = (0..9u32).map(|i| (d + i * 3) % 20).collect();
            plain.push(&doc);
        }
        let held: Vec<u64> = (0..20u64).map(|w| 1 + w % 4).collect();
        let raw = |docs: &OwnedDocs| {
            let mut c = vec![0f64; 20];
            for d in docs.view().iter() {
                for &w in d {
                    c[w as usize] += 1.0;
                }
            }
            unigram_ll(&held, &c, 0.01)
        };
        let clipped = clipped_unigram_ll(&clipped_word_units(plain.view(), 20, 3), &held, 0.01);
        assert!(
            (clipped - raw(&plain)).abs() < 1e-12,
            "{clipped} {}",
            raw(&plain)
        );
        // One long document repeating word 0 (held out rarely): raw counts give word 0 much of the
        // mass, the clipped counts √-weight and scale it down, which here scores better; and the
        // clipped score does not depend on it beyond its clipped contribution.
        let mut bursty = plain.clone();
        bursty.push(&[0u32; 400]);
        let with_burst = clipped_unigram_ll(&clipped_word_units(bursty.view(), 20, 3), &held, 0.01);
        assert!(with_burst > raw(&bursty), "{with_burst} {}", raw(&bursty));
        assert!(
            with_burst < clipped,
            "the burst still moves some mass to word 0"
        );
    }

    #[test]
    fn the_simulated_gaussian_margin_tends_to_the_weighted_unigram_as_the_noise_vanishes() {
        // 400 documents over 50 words, Zipf-ish; held out: the same distribution.
        let mut docs = OwnedDocs::new();
        let mut held = vec![0u64; 50];
        for d in 0..400u32 {
            let doc: Vec<u32> = (0..30u32)
                .map(|i| ((d * 7 + i * i) % 50) / (1 + i % 3))
                .collect();
            for &w in &doc {
                held[w as usize] += 1;
            }
            docs.push(&doc);
        }
        let run = |sigma: f64| {
            simulated_gaussian_unigram_ll(
                &clipped_word_units(docs.view(), 50, 12),
                &held,
                5,
                12,
                (sigma, sigma),
                0.01,
                &mut NoiseSource::insecure_seeded(3),
            )
            .unwrap()
        };
        // The exact √-weighted unigram, scored the same way.
        let mut u = vec![0f64; 50];
        for d in docs.view().iter() {
            for (w, _, c) in l2_contribution(d, &vec![0u16; d.len()], 12) {
                u[w as usize] += f64::from(c) / f64::from(CONTRIBUTION_UNITS);
            }
        }
        let total: f64 = u.iter().map(|x| x.max(1.0 / 16.0) + 0.01).sum();
        let n: u64 = held.iter().sum();
        let exact: f64 = held
            .iter()
            .zip(&u)
            .filter(|(&h, _)| h > 0)
            .map(|(&h, &x)| h as f64 * ((x.max(1.0 / 16.0) + 0.01) / total).ln())
            .sum::<f64>()
            / n as f64;
        let (quiet, loud) = (run(1e-3), run(200.0));
        assert!((quiet - exact).abs() < 1e-3, "{quiet} against {exact}");
        assert!(
            loud < quiet - 0.01,
            "noise must cost: {loud} against {quiet}"
        );
        assert!(loud > -(50f64.ln()) - 1.0, "{loud}");
    }

    #[test]
    fn each_release_spends_its_share_word_counts_first_and_the_model_last() {
        for (word_release, split) in [
            (true, BudgetSplit::Focused),
            (false, BudgetSplit::Focused),
            (true, BudgetSplit::Equal),
        ] {
            let opts = PrivateOptions {
                epsilon: eps(2.0),
                delta: 1e-6,
                max_doc_tokens: 0,
                iterations: 6,
                releases: 5,
                word_release,
                cap_epsilon: 0.0,
                mechanism: PrivateMechanism::Gaussian { l2_clip: 12, split },
            };
            let mut r = Releases::new(opts, NoiseSource::insecure_seeded(5)).unwrap();
            let (v, k) = (30usize, 3u32);
            let mut dense = vec![0u32; v * 3];
            dense[0] = 50_000;
            for _ in 0..5 {
                if word_release {
                    r.release_with_words(dense.clone(), k);
                } else {
                    r.release_dense(dense.clone(), k);
                }
            }
            let total: f64 = r.spent().iter().sum();
            let shares = gaussian_shares(5, word_release, split);
            for (j, (spent, share)) in r.spent().iter().zip(&shares).enumerate() {
                assert!(
                    (spent / total - share).abs() < 1e-4,
                    "{word_release} {split:?}: release {j} spent {} of ρ, its share is {share}",
                    spent / total
                );
            }
            assert!(total <= r.guarantee().accountant.zcdp_rho.unwrap() * (1.0 + 1e-12));
        }
    }

    #[test]
    fn the_budget_split_follows_the_public_signal() {
        // 20 Newsgroups' shape (10,204 documents, K = 20, C = 12, δ = 1e-7) at ε = 1, 10 and
        // 100: focused; synthetic 100M (10⁶ documents, δ = 1e-9) at ε = 1: equal.
        for e in [1.0, 10.0, 100.0] {
            let (split, _) = gaussian_split(e, 1e-7, 10_204, 20, 12).unwrap();
            assert_eq!(split, BudgetSplit::Focused, "ε = {e}");
        }
        let (split, s) = gaussian_split(1.0, 1e-9, 1_000_068, 20, 12).unwrap();
        assert_eq!(split, BudgetSplit::Equal);
        assert!(s >= EQUAL_SPLIT_SIGNAL);
        // s = n·C·√ρ/K exactly.
        let rho = zcdp::rho_for(10.0, 1e-7).unwrap();
        let (_, s10) = gaussian_split(10.0, 1e-7, 10_204, 20, 12).unwrap();
        assert!((s10 - 10_204.0 * 12.0 * rho.sqrt() / 20.0).abs() < 1e-6 * s10);
        // More documents or more ε never goes back from equal to focused.
        let mut equal = false;
        for n in [10u64, 1_000, 10_000, 100_000, 1_000_000, 10_000_000] {
            let (split, _) = gaussian_split(1.0, 1e-8, n, 20, 12).unwrap();
            assert!(!equal || split == BudgetSplit::Equal);
            equal = split == BudgetSplit::Equal;
        }
        assert!(equal);
    }

    #[test]
    fn a_word_release_spends_one_of_the_releases_and_noises_only_its_vocabulary() {
        let opts = PrivateOptions {
            epsilon: eps(2.0),
            delta: 0.0,
            max_doc_tokens: 10,
            iterations: 4,
            releases: 3,
            word_release: true,
            cap_epsilon: 0.0,
            mechanism: PrivateMechanism::Laplace,
        };
        let mut r = Releases::new(opts, NoiseSource::insecure_seeded(7)).unwrap();
        // b = R·L/ε = 15: the vocabulary is ũ ≥ K·b = 30 (K = 2).
        assert!((r.scale() - 15.0).abs() < 1e-6, "{}", r.scale());
        let (v, k) = (400usize, 2u32);
        // Words 0..4 are frequent (10,000 tokens each, all in topic 0), the others absent.
        let mut dense = vec![0u32; v * 2];
        for w in 0..4 {
            dense[w * 2] = 10_000;
        }
        let first = r.release_with_words(dense.clone(), k).clone();
        assert_eq!(r.spent().len(), 1);
        let words = r.words().unwrap().clone();
        assert_eq!(
            words.noisy.len(),
            v,
            "one noisy count per word, not per cell"
        );
        assert!(words.head[..4].iter().all(|&h| h));
        // Absent words pass K·b = 30 with probability about e^{-2} / 2 each.
        let false_words = words.vocabulary() - 4;
        assert!(
            false_words < 60,
            "{false_words} absent words in the vocabulary"
        );
        // The first view splits ũ over the topics: its row sums are ũ.
        for w in 0..v {
            let (_, c) = first.row(w as u32);
            assert_eq!(c.iter().sum::<u32>(), words.noisy[w]);
        }
        let second = r.release_with_words(dense.clone(), k).clone();
        // Vocabulary rows are S·(B + noise): topic 0 of word 0 ≈ 2·10,000, topic 1 near 0.
        let row = |b: &WordTopics, w: u32| {
            let mut out = [0u32; 2];
            let (t, c) = b.row(w);
            for (&t, &c) in t.iter().zip(c) {
                out[usize::from(t)] = c;
            }
            out
        };
        let r0 = row(&second, 0);
        assert!(r0[0] > 19_000 && r0[0] < 21_000 && r0[0] % 2 == 0, "{r0:?}");
        assert!(r0[1] < 600 && r0[1] % 2 == 0, "{r0:?}");
        // A word outside the vocabulary is not noised again: its row is the tail's share, the
        // same in every release that follows.
        let tail = (4..v).find(|&w| !words.head[w]).unwrap() as u32;
        let third = r.release_with_words(dense, k).clone();
        let (a, b) = (row(&second, tail), row(&third, tail));
        let expect = |rel: &WordTopics| {
            let head_mass: Vec<f64> = (0..2)
                .map(|t| {
                    (0..v as u32)
                        .filter(|&w| words.head[w as usize])
                        .map(|w| f64::from(row(rel, w)[t]))
                        .sum::<f64>()
                })
                .collect();
            let all = head_mass[0] + head_mass[1];
            let c = words.tail_count(words.noisy[tail as usize]);
            [0, 1].map(|t| (2.0 * c * head_mass[t] / all).round() as u32)
        };
        assert_eq!(a, expect(&second));
        assert_eq!(b, expect(&third));
        // Three releases, each L/b; a fourth is refused.
        assert_eq!(r.spent().len(), 3);
        let total: f64 = r.spent().iter().sum();
        let g = r.guarantee();
        assert!(
            total <= g.epsilon && total > g.epsilon * (1.0 - 1e-9),
            "{total}"
        );
        assert_eq!(g.accountant.releases, 3);
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            r.release_with_words(vec![0; v * 2], k);
        }));
        assert!(caught.is_err(), "a fourth release must be refused");
        // A run of 0 iterations has no room for a word release.
        let zero = PrivateOptions {
            iterations: 0,
            releases: 1,
            ..opts
        };
        assert!(Releases::new(zero, NoiseSource::insecure_seeded(1)).is_err());
    }

    #[test]
    fn releases_are_spread_evenly_over_the_iterations() {
        let at = |iterations, releases| {
            let o = PrivateOptions {
                epsilon: eps(1.0),
                delta: 0.0,
                max_doc_tokens: 1,
                iterations,
                releases,
                word_release: false,
                cap_epsilon: 0.0,
                mechanism: PrivateMechanism::Laplace,
            };
            (0..=iterations + 1)
                .filter(|&i| o.release_before(i))
                .collect::<Vec<u32>>()
        };
        // After 0, 12, 25, 37 completed iterations; the fifth release is the model.
        assert_eq!(at(50, 5), vec![1, 13, 26, 38]);
        assert_eq!(at(50, 51), (1..=50).collect::<Vec<_>>());
        assert_eq!(at(50, 2), vec![1]);
        assert_eq!(at(3, 3), vec![1, 2]);
        assert_eq!(at(0, 1), Vec::<u32>::new());
        for t in 1..40 {
            for r in 2..=t + 1 {
                let v = at(t, r);
                assert_eq!(v.len() as u32, r - 1, "T={t} R={r}: {v:?}");
                assert_eq!(v[0], 1);
            }
        }
    }

    #[test]
    fn many_releases_use_the_renyi_accountant() {
        let opts = PrivateOptions {
            epsilon: eps(1.0),
            delta: 1e-6,
            max_doc_tokens: 50,
            iterations: 200,
            releases: 201,
            word_release: false,
            cap_epsilon: 0.0,
            mechanism: PrivateMechanism::Laplace,
        };
        let r = Releases::new(opts, NoiseSource::insecure_seeded(5)).unwrap();
        let g = r.guarantee();
        assert!(g.accountant.renyi_order.is_some(), "{g:?}");
        assert_eq!(g.delta, Some(1e-6));
        // Well below basic composition's 201·50/1 = 10,050.
        assert!(r.scale() < 0.6 * 10_050.0, "{}", r.scale());
        // With δ = 0 the same run is pure ε at the basic scale.
        let pure = Releases::new(
            PrivateOptions { delta: 0.0, ..opts },
            NoiseSource::insecure_seeded(5),
        )
        .unwrap();
        assert!((pure.scale() - 10_050.0).abs() < 1e-3, "{}", pure.scale());
        assert_eq!(pure.guarantee().delta, None);
    }

    /// φ (K × V row-major) of word-topic counts.
    fn phi(b: &WordTopics, beta: f64) -> Vec<f64> {
        let (k, v) = (b.num_topics as usize, b.num_words());
        let mut out = vec![0.0; k * v];
        for w in 0..v {
            let (ts, cs) = b.row(w as u32);
            let mut row = vec![0u32; k];
            for (&t, &c) in ts.iter().zip(cs) {
                row[t as usize] = c;
            }
            for t in 0..k {
                let norm = b.totals[t] as f64 + v as f64 * beta;
                out[t * v + w] = (f64::from(row[t]) + beta) / norm;
            }
        }
        out
    }

    #[test]
    fn private_esca_adds_noise_and_recovers_separated_topics_at_large_epsilon() {
        use crate::samplers::esca::Esca;
        use crate::synthetic::{generate, match_topics, SyntheticSpec, TopicShape};
        use crate::{Engine, TrainOptions, Trainer};
        use topos_model::Hyperparameters;
        let spec = SyntheticSpec {
            num_docs: 400,
            num_words: 300,
            num_topics: 5,
            mean_doc_len: 60,
            alpha: topos_model::Alpha::symmetric(5, 0.1),
            shape: TopicShape::Dirichlet { beta: 0.05 },
            seed: 11,
        };
        let corpus = generate(&spec);
        let cap = 60;
        // Whole documents: the sampler reads them all, releases count at most `cap` tokens each.
        let capped = std::sync::Arc::new(cap_documents(corpus.docs.view(), u32::MAX));
        let opts = TrainOptions {
            sampler: &Esca,
            hyper: Hyperparameters::new(5, Some(0.1), Some(0.01)).unwrap(),
            seed: 3,
            threads: 2,
            partitions: None,
            settings: Default::default(),
        };
        let iterations = 60;
        let private = PrivateOptions {
            epsilon: eps(1000.0),
            delta: 0.0,
            max_doc_tokens: cap,
            iterations,
            releases: 31,
            word_release: false,
            cap_epsilon: 0.0,
            mechanism: PrivateMechanism::Laplace,
        };
        let source = || NoiseSource::insecure_seeded(21);
        // As a run drives it: a release whenever the schedule asks, then the iteration.
        let docs = crate::TrainDocs::Owned(capped.clone());
        let mut t = Trainer::new(docs.clone(), spec.num_words, opts.clone()).unwrap();
        let mut r = Releases::new(private, source()).unwrap();
        let mut plain = Trainer::new(docs, spec.num_words, opts).unwrap();
        r.release_if_due(&mut t, capped.view(), spec.num_words)
            .unwrap();
        for _ in 0..iterations {
            t.step();
            r.release_if_due(&mut t, capped.view(), spec.num_words)
                .unwrap();
            plain.step();
        }
        assert_eq!(Engine::iteration(&t), iterations);
        assert_eq!(r.spent().len(), 31);
        let g = r.guarantee();
        let total: f64 = r.spent().iter().sum();
        assert!(total <= g.epsilon && total > g.epsilon * (1.0 - 1e-9));
        // With a cap above every length, the contributions are the engine's own counts: the
        // assignments are read in the documents' order.
        let mut z = vec![0u16; capped.view().tokens().len()];
        Engine::assignments(&mut t, 0, &mut z).unwrap();
        let whole = contribution_counts(capped.view(), &z, spec.num_words, 5, u32::MAX);
        assert_eq!(whole, t.word_topics().to_dense());
        // The release is noisy, not the true counts.
        let released = r.latest().unwrap();
        assert_ne!(released, t.word_topics());
        // The sampler read the releases: its counts differ from an ordinary run's.
        assert_ne!(t.word_topics(), plain.word_topics());
        // Strongly separated topics are still recovered at ε = 1000.
        let js = match_topics(&corpus.topics, &phi(released, 0.01), spec.num_words);
        let mean = js.iter().sum::<f64>() / js.len() as f64;
        let js_plain = match_topics(&corpus.topics, &phi(t.word_topics(), 0.01), spec.num_words);
        assert!(
            mean < 0.05,
            "private run did not recover the topics: {js:?} (its true counts: {js_plain:?})"
        );

        // Zero iterations: the one release is the final one.
        let mut t0 = Trainer::new(
            crate::TrainDocs::Owned(capped.clone()),
            spec.num_words,
            TrainOptions {
                sampler: &Esca,
                hyper: Hyperparameters::new(5, Some(0.1), Some(0.01)).unwrap(),
                seed: 3,
                threads: 1,
                partitions: None,
                settings: Default::default(),
            },
        )
        .unwrap();
        let zero = PrivateOptions {
            iterations: 0,
            releases: 1,
            ..private
        };
        let mut r0 = Releases::new(zero, source()).unwrap();
        r0.release_if_due(&mut t0, capped.view(), spec.num_words)
            .unwrap();
        r0.release_if_due(&mut t0, capped.view(), spec.num_words)
            .unwrap();
        assert_eq!(r0.spent().len(), 1);
    }
}
