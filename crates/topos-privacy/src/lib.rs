//! Differential privacy for Topos (thesis chapter 3, with the corrections of issue 3).
//!
//! # Noise: which approach, and why
//!
//! Noise is drawn on the CPU by samplers **ported from the approach of OpenDP and Google's
//! library**, not by depending on the `opendp` crate (whose default build compiles GMP/MPFR):
//!
//! * [`DiscreteLaplace`] — the two-sided geometric distribution on the integers, sampled
//!   *exactly* by Canonne, Kamath & Steinke 2020, Algorithms 1–2: Bernoulli(exp(−γ)) for
//!   rational γ from uniform integers, the scale b = Δ/ε held as a ratio of integers. No
//!   floating-point number enters a draw. This is the mechanism for counts (document counts,
//!   histograms, the word-topic counts of private training).
//! * [`LaplaceMechanism`] — the Laplace mechanism for reals (Definition 3.3.3) as OpenDP does
//!   it: the answer is snapped to a power-of-two lattice 2^k chosen from the sensitivity, exact
//!   discrete Laplace noise is added on the lattice, and the noise is calibrated to cover the
//!   rounding. The set of possible outputs does not depend on the input, so the floating-point
//!   attack on `x + b·ln(U)` samplers (Mironov 2012) does not apply.
//! * Randomness comes from [`NoiseSource`]: ChaCha20 keyed with 256 bits from the operating
//!   system ([`NoiseSource::from_os`]). [`NoiseSource::insecure_seeded`] exists for statistical
//!   tests and reproducible audits only.
//!
//! # Accounting
//!
//! [`Epsilon`] and [`Sensitivity`] cannot be zero, negative or NaN. [`Composition`] is
//! sequential (Theorem 3, sum) or parallel over disjoint parts (Theorem 4, max). [`Stable`] is a
//! c-stable transformation (Definition 3.3.4) and implements Theorem 2 **as corrected**: c·ε, not
//! "ε × ε" as printed. [`ledger::Ledger`] is the per-corpus budget (`CORPUS.ledger`), charged
//! atomically before anything is released; an over-budget query is refused and releases nothing.
//! [`rdp`] is a tighter accountant for many releases of the discrete Laplace mechanism: Rényi
//! DP (Mironov 2017) composed over R releases and converted to (ε, δ), with [`rdp::calibrate`]
//! choosing the smaller noise scale of it and basic composition for a target (ε, δ).
//!
//! # Allocation
//!
//! [`allocate::Problem`] splits a total ε over sub-queries by minimising Σ S_i²/ε_i² (Eq. 3.6;
//! the Laplace variance is twice that, a factor the thesis omits and which does not move the
//! optimum) under Σ ε_i = ε or max ε_i = ε and extra linear constraints ([`constraint`]), by the
//! *modified* differential multiplier method ([`mdmm`]; the basic method of Eq. 3.12 lacks the
//! damping that makes the saddle point attracting). It is checked against the closed form
//! ε_i = ε·S_i^{2/3}/Σ S_j^{2/3} and the thesis's examples (3/ε², 27/ε², 36/ε²).
//!
//! # Queries and training
//!
//! [`query`] answers document counts by word and histograms of document length, each call
//! charged once. For private training, [`DiscreteLaplace::calibrated`] with the L1 sensitivity
//! (the per-document token cap) and the ε of one release (scale from [`rdp::calibrate`]), then
//! [`DiscreteLaplace::add_to_u32_clamped`] (or [`DiscreteLaplace::add_to_i64`]) on the counts:
//! batched, parallel, and the same for any number of threads given the source. Or (issue 25)
//! [`DiscreteGaussian`] (CKS 2020, Algorithm 3, exact) calibrated to an L2 sensitivity and a
//! ρ of zero-concentrated DP, composed and converted to (ε, δ) by [`zcdp`]. A [`Guarantee`]
//! records what was promised, for the model file and for display. [`audit`] is a statistical
//! privacy tester in the manner of Google's stochastic tester.

pub mod accounting;
pub mod allocate;
pub mod audit;
pub mod bernoulli;
pub mod constraint;
pub mod discrete_gaussian;
pub mod discrete_laplace;
pub mod empirical_bayes;
pub mod epsilon;
pub mod error;
pub mod exact;
pub mod guarantee;
pub mod laplace;
pub mod ledger;
pub mod mdmm;
pub mod query;
pub mod rdp;
pub mod rng;
pub mod stats;
pub mod zcdp;

pub use accounting::{Composition, Stable};
pub use discrete_gaussian::DiscreteGaussian;
pub use discrete_laplace::DiscreteLaplace;
pub use epsilon::{Epsilon, Sensitivity};
pub use error::PrivacyError;
pub use guarantee::{Accountant, Guarantee, Mechanism, Neighbours};
pub use laplace::LaplaceMechanism;
pub use ledger::Ledger;
pub use rng::NoiseSource;
