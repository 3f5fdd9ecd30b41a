//! Rényi differential privacy (RDP) accounting for R releases of the discrete Laplace mechanism,
//! and the calibration of their noise scale to a target (ε, δ).
//!
//! # Why
//!
//! Basic sequential composition (Theorem 3 of the thesis) charges R releases R·ε_r: the noise
//! scale of each grows linearly in R. Rényi DP (Mironov 2017, "Rényi Differential Privacy")
//! composes by adding Rényi divergences of one order α, which for mechanisms that are far from
//! their worst case on most outputs — Laplace noise is — grows like R·ε_r²/2 for small ε_r, so
//! for many releases the scale grows like √R instead of R, at the price of a δ > 0.
//!
//! # The mechanism's RDP curve
//!
//! A mechanism M is (α, τ)-RDP if D_α(M(A) ‖ M(B)) ≤ τ for all neighbours A, B (Mironov 2017,
//! Definition 4). For the **continuous** Laplace mechanism of scale b and sensitivity Δ, with
//! x = Δ/b (Mironov 2017, Table II, Laplace row; α > 1):
//!
//! ```text
//! τ(α) = 1/(α−1) · ln( α/(2α−1) · e^{(α−1)x} + (α−1)/(2α−1) · e^{−αx} )
//! ```
//!
//! For the **discrete** Laplace P(z) = c·q^{|z|}, q = e^{−1/b}, c = (1−q)/(1+q), and an integer
//! shift k ≥ 0, the sum Σ_z P(z)^α P(z−k)^{1−α} over the integers splits into three geometric
//! series (z ≤ 0, 0 < z < k, z ≥ k), which gives, with r = q^{2α−1},
//!
//! ```text
//! Σ = c·A·e^{(α−1)k/b} + c·B·e^{−αk/b},   c·A = 1/(1+q) + (1−q)·r / ((1+q)(1−r)),
//!                                        c·B = (q − r) / ((1+q)(1−r))
//! ```
//!
//! ([`discrete_laplace_rdp`]; a test checks it against the brute-force sum). As b → ∞ with k/b
//! fixed, c·A → α/(2α−1) and c·B → (α−1)/(2α−1): the continuous curve. c·A, c·B > 0, so ln Σ is
//! a log-sum-exp of affine functions of k, hence **convex in k** with value 0 at k = 0, hence
//! superadditive: Σ_i τ(k_i) ≤ τ(Σ_i k_i). A release of many noisy cells (the V × K word-topic
//! counts, each with independent noise) whose true values move by an integer vector of L1 norm
//! at most Δ therefore has RDP at most that of one cell moved by Δ — the worst case puts a whole
//! document into one cell. The Rényi divergence is symmetric in the direction of the shift (the
//! noise is symmetric), so adding and removing a document are covered alike.
//!
//! # Composition and conversion
//!
//! R adaptively composed releases of (α, τ)-RDP are (α, R·τ)-RDP (Mironov 2017, Proposition 1).
//! (α, ρ)-RDP implies (ε, δ)-DP with
//!
//! ```text
//! ε = ρ + ln(1 − 1/α) − (ln δ + ln α)/(α − 1)
//! ```
//!
//! (Canonne, Kamath & Steinke 2020, "The Discrete Gaussian for Differential Privacy",
//! Proposition 12; also Asoodeh et al. 2020; the form TensorFlow Privacy uses). It is never
//! larger than Mironov's Proposition 3, ε = ρ + ln(1/δ)/(α − 1), which [`mironov_conversion`]
//! keeps for the tests. The order is chosen by minimising ε over a fixed grid of [`orders`]
//! (1.001 to 10⁶, log-spaced): a grid minimum is a valid bound at its order, so coarseness only
//! costs tightness, never privacy.
//!
//! # Calibration
//!
//! [`calibrate`] finds the smallest scale b whose composed guarantee is ≤ the target (ε, δ), by
//! bisection on ln b (the converted ε decreases in b at every order), compares it with basic
//! composition's R·Δ/ε (pure ε, δ = 0), and returns whichever scale is smaller, saying which
//! accountant it is. With few releases and small δ basic composition usually wins (the
//! conversion costs about √(2R·ln(1/δ))·ε_r); RDP wins once R reaches a few dozen.

use crate::PrivacyError;

/// Rényi orders α searched: 1 + 10^u for u from −3 to 6 in steps of 1/64 (577 orders).
pub fn orders() -> impl Iterator<Item = f64> {
    (0..=576).map(|i| 1.0 + 10f64.powf(-3.0 + f64::from(i) / 64.0))
}

/// The RDP of the continuous Laplace mechanism at order α > 1 when the answer moves by
/// `shift_over_scale` = Δ/b (Mironov 2017, Table II), in nats.
pub fn laplace_rdp(alpha: f64, shift_over_scale: f64) -> f64 {
    let x = shift_over_scale;
    let a = alpha;
    // ln of a positive combination of exponentials, computed from the larger exponent.
    let t1 = (a / (2.0 * a - 1.0)).ln() + (a - 1.0) * x;
    let t2 = ((a - 1.0) / (2.0 * a - 1.0)).ln() - a * x;
    log_add(t1, t2) / (a - 1.0)
}

/// The RDP at order α > 1 of discrete Laplace noise of scale `scale` (P(z) ∝ e^{−|z|/b}) when
/// the integer answer moves by `shift`, in nats: the closed form of the module docs, which is the
/// exact sum over the integer support.
pub fn discrete_laplace_rdp(alpha: f64, scale: f64, shift: u64) -> f64 {
    if shift == 0 {
        return 0.0;
    }
    let a = alpha;
    let inv_b = 1.0 / scale;
    let q = (-inv_b).exp();
    let one_minus_q = -(-inv_b).exp_m1();
    let one_minus_r = -(-(2.0 * a - 1.0) * inv_b).exp_m1();
    let r = 1.0 - one_minus_r;
    // q − r = q·(1 − q^{2α−2}), without cancellation.
    let q_minus_r = -q * (-(2.0 * a - 2.0) * inv_b).exp_m1();
    let ca = 1.0 / (1.0 + q) + one_minus_q * r / ((1.0 + q) * one_minus_r);
    let cb = q_minus_r / ((1.0 + q) * one_minus_r);
    let k = shift as f64;
    let t1 = ca.ln() + (a - 1.0) * k * inv_b;
    let t2 = if cb > 0.0 {
        cb.ln() - a * k * inv_b
    } else {
        f64::NEG_INFINITY
    };
    (log_add(t1, t2) / (a - 1.0)).max(0.0)
}

/// ln(e^x + e^y).
fn log_add(x: f64, y: f64) -> f64 {
    let (hi, lo) = if x >= y { (x, y) } else { (y, x) };
    if lo == f64::NEG_INFINITY {
        return hi;
    }
    hi + (lo - hi).exp().ln_1p()
}

/// ε of (ε, δ)-DP implied by (α, ρ)-RDP (Canonne–Kamath–Steinke 2020, Proposition 12).
pub fn conversion(rdp: f64, alpha: f64, delta: f64) -> f64 {
    rdp + (-1.0 / alpha).ln_1p() - (delta.ln() + alpha.ln()) / (alpha - 1.0)
}

/// ε of (ε, δ)-DP implied by (α, ρ)-RDP by Mironov 2017, Proposition 3 (looser; for tests).
pub fn mironov_conversion(rdp: f64, alpha: f64, delta: f64) -> f64 {
    rdp + (1.0 / delta).ln() / (alpha - 1.0)
}

/// The best (ε, order) of R releases of discrete Laplace noise of scale `scale`, each of L1
/// sensitivity `sensitivity`, composed by RDP and converted at δ.
pub fn composed_epsilon(scale: f64, sensitivity: u64, releases: u64, delta: f64) -> (f64, f64) {
    let mut best = (f64::INFINITY, f64::NAN);
    for alpha in orders() {
        let rho = releases as f64 * discrete_laplace_rdp(alpha, scale, sensitivity);
        let eps = conversion(rho, alpha, delta);
        if eps < best.0 {
            best = (eps, alpha);
        }
    }
    best
}

/// RDP is chosen only if its scale is below this fraction of basic composition's: an (ε, δ)
/// guarantee is weaker in kind than pure ε (δ is a probability of unbounded loss), so it must
/// buy a real reduction in noise, not the last 0.01% that a very large order gives.
pub const RENYI_MIN_GAIN: f64 = 0.99;

/// Which accountant a calibration chose.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Chosen {
    /// Basic sequential composition (Theorem 3): pure ε, δ = 0.
    Basic,
    /// Rényi DP at this order, converted to (ε, δ).
    Renyi { order: f64 },
    /// The discrete Gaussian mechanism composed in zCDP to `rho` in all, converted to (ε, δ)
    /// ([`crate::zcdp`]); `scale` is then σ.
    Zcdp { rho: f64 },
}

/// A noise scale for R releases and how it was accounted.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Calibration {
    /// The discrete Laplace scale b of every release.
    pub scale: f64,
    /// The accountant whose bound at this scale meets the target.
    pub chosen: Chosen,
    /// The ε the chosen accountant gives at `scale` (≤ the target).
    pub epsilon: f64,
}

/// The smallest discrete Laplace scale for `releases` releases of L1 sensitivity `sensitivity`
/// that is (ε, δ)-DP in total, by basic composition (scale R·Δ/ε, δ = 0) or by RDP at `delta`,
/// whichever is smaller (by at least 1% for RDP, [`RENYI_MIN_GAIN`]). `delta` = 0 means pure ε:
/// basic composition only.
pub fn calibrate(
    epsilon: f64,
    delta: f64,
    sensitivity: u64,
    releases: u64,
) -> Result<Calibration, PrivacyError> {
    if !(epsilon.is_finite() && epsilon > 0.0) {
        return Err(PrivacyError::NotPositive {
            what: "ε",
            value: epsilon,
        });
    }
    if !(0.0..1.0).contains(&delta) {
        return Err(PrivacyError::Unsupported(format!(
            "δ must be in [0, 1), got {delta}"
        )));
    }
    if sensitivity == 0 || releases == 0 {
        return Err(PrivacyError::Unsupported(
            "calibration needs a positive sensitivity and at least one release".into(),
        ));
    }
    let basic = Calibration {
        scale: releases as f64 * sensitivity as f64 / epsilon,
        chosen: Chosen::Basic,
        epsilon,
    };
    if delta == 0.0 {
        return Ok(basic);
    }
    let eps_at = |b: f64| composed_epsilon(b, sensitivity, releases, delta);
    let mut hi = basic.scale * RENYI_MIN_GAIN;
    if eps_at(hi).0 > epsilon {
        return Ok(basic); // RDP cannot beat basic composition by enough here.
    }
    // eps_at(lo) > ε: far too little noise.
    let mut lo = hi;
    loop {
        lo /= 2.0;
        if eps_at(lo).0 > epsilon {
            break;
        }
        if lo < hi * 1e-12 {
            break;
        }
    }
    for _ in 0..100 {
        let mid = (lo * hi).sqrt();
        if eps_at(mid).0 <= epsilon {
            hi = mid;
        } else {
            lo = mid;
        }
        if hi / lo < 1.0 + 1e-12 {
            break;
        }
    }
    let (eps, order) = eps_at(hi);
    debug_assert!(eps <= epsilon);
    Ok(Calibration {
        scale: hi,
        chosen: Chosen::Renyi { order },
        epsilon: eps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DiscreteLaplace, NoiseSource};

    /// Σ_z P(z)^α P(z−k)^{1−α} by brute force over |z| ≤ a wide bound.
    fn brute(alpha: f64, b: f64, k: i64) -> f64 {
        let q: f64 = (-1.0 / b).exp();
        let c = (1.0 - q) / (1.0 + q);
        let lp = |z: i64| c.ln() + z.unsigned_abs() as f64 * q.ln();
        let bound = k + (60.0 * b * alpha) as i64 + 50;
        let terms: Vec<f64> = (-bound..=bound)
            .map(|z| alpha * lp(z) + (1.0 - alpha) * lp(z - k))
            .collect();
        let m = terms.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        (m + terms.iter().map(|t| (t - m).exp()).sum::<f64>().ln()) / (alpha - 1.0)
    }

    #[test]
    fn discrete_laplace_rdp_is_the_exact_sum() {
        for &b in &[0.7, 2.0, 10.0, 55.0] {
            for &alpha in &[1.01, 1.5, 2.0, 8.0, 40.0] {
                for &k in &[1i64, 2, 5, 20] {
                    let closed = discrete_laplace_rdp(alpha, b, k as u64);
                    let sum = brute(alpha, b, k);
                    assert!(
                        (closed - sum).abs() <= 1e-9 * sum.abs().max(1.0),
                        "b={b} α={alpha} k={k}: {closed} vs {sum}"
                    );
                }
            }
        }
    }

    #[test]
    fn laplace_rdp_matches_mironovs_closed_form_and_limits() {
        // Table II at α = 2, x = 1: ln(2/3·e + 1/3·e^{−2}).
        let want = ((2.0 / 3.0) * 1f64.exp() + (1.0 / 3.0) * (-2f64).exp()).ln();
        assert!((laplace_rdp(2.0, 1.0) - want).abs() < 1e-14);
        for &x in &[0.01, 0.3, 1.0, 4.0] {
            // α → ∞: the pure ε = x; α → 1: KL = x + e^{−x} − 1; never above x.
            assert!((laplace_rdp(1e7, x) - x).abs() < 1e-5 * x.max(1.0));
            let kl = x + (-x).exp() - 1.0;
            assert!((laplace_rdp(1.0 + 1e-7, x) - kl).abs() < 1e-5, "{x}");
            for alpha in orders() {
                assert!(laplace_rdp(alpha, x) <= x * (1.0 + 1e-12));
            }
            // The discrete curve tends to the continuous one at a large scale (k/b = x fixed).
            let b = 1e5;
            let k = (x * b) as u64;
            for &alpha in &[1.5, 3.0, 30.0] {
                let d = discrete_laplace_rdp(alpha, b, k);
                let c = laplace_rdp(alpha, k as f64 / b);
                assert!(
                    (d - c).abs() < 1e-4 * c.max(1e-3),
                    "x={x} α={alpha}: {d} vs {c}"
                );
            }
        }
    }

    #[test]
    fn discrete_rdp_is_superadditive_in_the_shift() {
        // What makes one cell moved by Δ the worst case of a vector of L1 norm Δ.
        for &b in &[0.5, 3.0, 40.0] {
            for &alpha in &[1.1, 2.0, 16.0] {
                let f = |k| discrete_laplace_rdp(alpha, b, k);
                for i in 0..30u64 {
                    for j in 0..30u64 {
                        assert!(f(i) + f(j) <= f(i + j) * (1.0 + 1e-12) + 1e-15);
                    }
                }
                for k in 1..30u64 {
                    // and never more than the pure ε = k/b.
                    assert!(f(k) <= k as f64 / b * (1.0 + 1e-12));
                }
            }
        }
    }

    #[test]
    fn one_release_converts_to_no_more_than_the_pure_epsilon() {
        for &eps in &[0.1, 1.0, 5.0] {
            for &delta in &[1e-9, 1e-6, 1e-3] {
                let b = 10.0 / eps; // Δ = 10
                let (e, _) = composed_epsilon(b, 10, 1, delta);
                assert!(e <= eps * (1.0 + 1e-6) + 1e-5, "ε={eps} δ={delta}: {e}");
                // and the Proposition 12 conversion is never looser than Mironov's.
                for alpha in [1.5, 4.0, 100.0] {
                    let rho = discrete_laplace_rdp(alpha, b, 10);
                    assert!(conversion(rho, alpha, delta) <= mironov_conversion(rho, alpha, delta));
                }
            }
        }
    }

    #[test]
    fn calibration_meets_the_target_and_is_monotone() {
        let l = 50;
        let scale = |eps, delta, r| calibrate(eps, delta, l, r).unwrap().scale;
        for &r in &[1u64, 5, 50, 500] {
            for &delta in &[1e-9, 1e-6, 1e-3] {
                let c = calibrate(1.0, delta, l, r).unwrap();
                assert!(c.epsilon <= 1.0, "{c:?}");
                if let Chosen::Renyi { .. } = c.chosen {
                    assert!(composed_epsilon(c.scale, l, r, delta).0 <= 1.0);
                    assert!(c.scale <= r as f64 * l as f64);
                }
            }
        }
        // Less noise for a larger ε or δ, more for more releases.
        let epsilons = [0.1, 0.3, 1.0, 3.0, 10.0, 100.0];
        for w in epsilons.windows(2) {
            for &r in &[2u64, 20, 200] {
                assert!(scale(w[0], 1e-6, r) > scale(w[1], 1e-6, r), "{w:?} R={r}");
            }
        }
        for w in [1e-12, 1e-9, 1e-6, 1e-3].windows(2) {
            assert!(scale(1.0, w[0], 200) > scale(1.0, w[1], 200), "{w:?}");
            assert!(scale(1.0, w[0], 2) >= scale(1.0, w[1], 2), "{w:?}");
        }
        for w in [1u64, 2, 5, 10, 50, 100, 1000].windows(2) {
            assert!(scale(1.0, 1e-6, w[0]) < scale(1.0, 1e-6, w[1]), "{w:?}");
        }
        // δ = 0: basic composition only.
        let c = calibrate(1.0, 0.0, l, 50).unwrap();
        assert_eq!((c.chosen, c.scale), (Chosen::Basic, 2500.0));
        assert!(calibrate(0.0, 1e-6, l, 5).is_err());
        assert!(calibrate(1.0, 1.0, l, 5).is_err());
        assert!(calibrate(1.0, 1e-6, 0, 5).is_err());
    }

    #[test]
    fn renyi_beats_basic_composition_for_many_releases() {
        // One release: basic is optimal (pure ε of the mechanism).
        assert_eq!(calibrate(1.0, 1e-6, 50, 1).unwrap().chosen, Chosen::Basic);
        for &r in &[200u64, 1000] {
            let c = calibrate(1.0, 1e-6, 50, r).unwrap();
            assert!(matches!(c.chosen, Chosen::Renyi { .. }), "R={r}: {c:?}");
            let basic = r as f64 * 50.0;
            assert!(c.scale < 0.6 * basic, "R={r}: {} vs {basic}", c.scale);
        }
        // Scale ~ √R for many releases: 4× the releases, about 2× the scale.
        let s1 = calibrate(1.0, 1e-6, 1, 2000).unwrap().scale;
        let s4 = calibrate(1.0, 1e-6, 1, 8000).unwrap().scale;
        assert!((s4 / s1 - 2.0).abs() < 0.25, "{}", s4 / s1);
    }

    /// A cheap statistical check of the composed guarantee on the worst case (the whole shift in
    /// one cell): the privacy loss of R releases of one count, Σ_i (|z_i − Δ| − |z_i|)/b under
    /// neighbours 0 and Δ, sampled with the exact sampler. (ε, δ)-DP gives
    /// δ ≥ E[(1 − e^{ε−loss})₊] ≥ ½·P(loss > ε + ln 2), so P(loss > ε + ln 2) ≤ 2δ.
    #[test]
    fn privacy_loss_exceeds_epsilon_rarely() {
        let (r, l, eps, delta) = (100u64, 1u64, 2.0, 1e-3);
        let c = calibrate(eps, delta, l, r).unwrap();
        assert!(matches!(c.chosen, Chosen::Renyi { .. }));
        let m = DiscreteLaplace::calibrated(l, crate::Epsilon::new(l as f64 / c.scale).unwrap())
            .unwrap();
        let b = m.scale();
        assert!(b >= c.scale);
        let mut src = NoiseSource::insecure_seeded(7);
        let trials = 2000;
        let (mut over, mut above_eps) = (0, 0);
        for _ in 0..trials {
            let loss: f64 = (0..r)
                .map(|_| {
                    let z = m.sample(&mut src);
                    ((z - l as i64).abs() - z.abs()) as f64 / b
                })
                .sum();
            if loss > eps + std::f64::consts::LN_2 {
                over += 1;
            }
            if loss > eps / 2.0 {
                above_eps += 1;
            }
        }
        // Expected at most 2δ·trials = 4; more than 12 has probability < 1e-3 under Poisson(4).
        assert!(over <= 12, "{over} of {trials} losses above ε + ln 2");
        // And the calibration is not vacuous: the loss does reach the order of ε.
        assert!(
            above_eps > 0,
            "no loss above ε/2: the noise is far larger than needed"
        );
    }
}
