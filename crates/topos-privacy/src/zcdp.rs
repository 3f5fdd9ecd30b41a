//! Zero-concentrated differential privacy (zCDP): the accountant of the discrete Gaussian
//! mechanism ([`crate::discrete_gaussian`]), composition, and conversion to (ε, δ).
//!
//! # Definitions and facts used (every step of the training proof cites one of these)
//!
//! * **zCDP** (Bun & Steinke 2016, "Concentrated Differential Privacy: Simplifications,
//!   Extensions, and Lower Bounds", Definition 1.1): M is ρ-zCDP if D_α(M(x) ‖ M(x′)) ≤ ρ·α for
//!   all neighbours x, x′ and every α > 1. Equivalently M is (α, ρ·α)-RDP for every α > 1.
//! * **The discrete Gaussian** with σ² on an integer vector query of L2 sensitivity Δ₂ is
//!   Δ₂²/(2σ²)-zCDP ([`crate::discrete_gaussian`]: CKS20 Theorem 4 per coordinate, Rényi
//!   divergences of independent coordinates add).
//! * **Adaptive composition** (Bun & Steinke 2016, Lemma 2.3): running a ρ₁-zCDP mechanism and
//!   then a ρ₂-zCDP mechanism chosen from the first's output is (ρ₁ + ρ₂)-zCDP; by induction R
//!   releases of ρ_j each are Σ_j ρ_j-zCDP.
//! * **Post-processing** (Bun & Steinke 2016, Lemma 1.8): a function of a ρ-zCDP output, with
//!   randomness independent of the data, is ρ-zCDP.
//! * **Conversion to (ε, δ)**, two valid bounds, the smaller is used ([`epsilon`]):
//!   1. Bun & Steinke 2016, Proposition 1.3: ρ-zCDP ⇒ (ρ + 2·√(ρ·ln(1/δ)), δ)-DP.
//!   2. ρ-zCDP is (α, αρ)-RDP for every α > 1, and (α, τ)-RDP ⇒ (ε, δ)-DP with
//!      ε = τ + ln(1 − 1/α) − (ln δ + ln α)/(α − 1) (Canonne, Kamath & Steinke 2020,
//!      Proposition 12, the conversion [`crate::rdp::conversion`] already uses); minimised over
//!      the fixed grid of orders [`crate::rdp::orders`]: any order of the grid is a valid bound,
//!      so the grid only costs tightness.
//!
//! Calibration ([`rho_for`]) inverts the conversion by bisection on ρ, keeping the side whose
//! ε is ≤ the target: the returned ρ always converts to at most the asked ε.

use crate::rdp;
use crate::PrivacyError;

/// ε of (ε, δ)-DP implied by ρ-zCDP: the smaller of Bun–Steinke's closed form and the RDP
/// conversion over the order grid. δ in (0, 1).
pub fn epsilon(rho: f64, delta: f64) -> f64 {
    epsilon_with_order(rho, delta).0
}

/// [`epsilon`] and the Rényi order that gave it (`None` when the closed form won).
pub fn epsilon_with_order(rho: f64, delta: f64) -> (f64, Option<f64>) {
    debug_assert!(rho >= 0.0 && delta > 0.0 && delta < 1.0);
    let closed = rho + 2.0 * (rho * (1.0 / delta).ln()).sqrt();
    let mut best = (closed, None);
    for alpha in rdp::orders() {
        let e = rdp::conversion(alpha * rho, alpha, delta);
        if e < best.0 {
            best = (e, Some(alpha));
        }
    }
    best
}

/// The largest ρ (up to a relative 10⁻¹²) whose conversion at δ is at most `epsilon`.
///
/// A pure function of (ε, δ); the last answer of each thread is remembered, because audits
/// calibrate thousands of tiny runs with the same (ε, δ) and one bisection costs ~40 × 577
/// conversions.
pub fn rho_for(epsilon: f64, delta: f64) -> Result<f64, PrivacyError> {
    thread_local! {
        static LAST: std::cell::Cell<Option<(u64, u64, f64)>> = const { std::cell::Cell::new(None) };
    }
    let key = (epsilon.to_bits(), delta.to_bits());
    if let Some((e, d, rho)) = LAST.with(std::cell::Cell::get) {
        if (e, d) == key {
            return Ok(rho);
        }
    }
    let rho = rho_for_uncached(epsilon, delta)?;
    LAST.with(|c| c.set(Some((key.0, key.1, rho))));
    Ok(rho)
}

fn rho_for_uncached(epsilon: f64, delta: f64) -> Result<f64, PrivacyError> {
    if !(epsilon.is_finite() && epsilon > 0.0) {
        return Err(PrivacyError::NotPositive {
            what: "ε",
            value: epsilon,
        });
    }
    if !(delta > 0.0 && delta < 1.0) {
        return Err(PrivacyError::Unsupported(format!(
            "the Gaussian mechanism is (ε, δ)-private and needs δ in (0, 1), got {delta}"
        )));
    }
    // ε(ρ) ≥ ρ (both bounds), so ρ = ε is too much; ρ small enough always fits.
    let (mut lo, mut hi) = (0.0f64, epsilon);
    let mut probe = epsilon;
    while self::epsilon(probe, delta) > epsilon {
        hi = probe;
        probe /= 2.0;
        if probe < 1e-300 {
            return Err(PrivacyError::Unsupported(format!(
                "no ρ meets ε = {epsilon} at δ = {delta}"
            )));
        }
    }
    lo = lo.max(probe);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if self::epsilon(mid, delta) <= epsilon {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= lo * 1e-12 {
            break;
        }
    }
    debug_assert!(self::epsilon(lo, delta) <= epsilon);
    Ok(lo)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversion_is_never_above_the_closed_form_and_calibration_inverts_it() {
        for &delta in &[1e-5, 1e-6, 1e-9] {
            for &rho in &[1e-4, 0.01, 0.1, 1.0, 5.0] {
                let closed = rho + 2.0 * (rho * (1.0f64 / delta).ln()).sqrt();
                let e = epsilon(rho, delta);
                assert!(e <= closed && e > rho, "ρ {rho} δ {delta}: {e} vs {closed}");
            }
            for &eps in &[0.1, 1.0, 10.0] {
                let rho = rho_for(eps, delta).unwrap();
                let e = epsilon(rho, delta);
                assert!(e <= eps && e > eps * (1.0 - 1e-9), "{eps}: {e}");
                // Bun–Steinke alone would allow less: the RDP conversion is tighter here.
                let s =
                    (-(1.0f64 / delta).ln().sqrt() + ((1.0f64 / delta).ln() + eps).sqrt()).powi(2);
                assert!(rho >= s * (1.0 - 1e-9), "{eps}: {rho} < {s}");
            }
        }
        // Values worked by hand: ε = 10, δ = 10⁻⁶ (ln 1/δ = 13.816): the closed form gives
        // ρ = (√(13.816 + 10) − √13.816)² = 1.355.
        let rho = rho_for(10.0, 1e-6).unwrap();
        assert!(rho > 1.355, "{rho}");
        assert!(rho_for(1.0, 0.0).is_err());
        assert!(rho_for(0.0, 1e-6).is_err());
    }
}
