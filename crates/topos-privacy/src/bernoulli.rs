//! Bernoulli(exp(−γ)) for a rational γ ≥ 0, exactly, with integer arithmetic only.
//!
//! Canonne, Kamath & Steinke, "The Discrete Gaussian for Differential Privacy" (NeurIPS 2020),
//! Algorithm 1. For γ ≤ 1 it draws A₁, A₂, … ~ Bernoulli(γ/k) until the first failure at step K
//! and returns whether K is odd: P(K odd) = Σ_k (−1)^{k−1}… = e^{−γ}. For γ > 1 it multiplies
//! ⌊γ⌋ independent Bernoulli(e^{−1}) with one Bernoulli(e^{−(γ−⌊γ⌋)}). Every Bernoulli(n/d) is a
//! uniform integer below d compared with n ([`NoiseSource::bernoulli_ratio`]), so no floating-point
//! rounding can bias the result — the property the discrete Laplace sampler relies on.

use crate::NoiseSource;

/// Bernoulli(exp(−num/den)), exactly (den ≥ 1).
pub fn bernoulli_exp_neg(num: u128, den: u128, src: &mut NoiseSource) -> bool {
    debug_assert!(den > 0);
    let mut num = num;
    while num > den {
        if !bernoulli_exp_neg_at_most_one(1, 1, src) {
            return false;
        }
        num -= den;
    }
    bernoulli_exp_neg_at_most_one(num, den, src)
}

/// Bernoulli(exp(−γ)) for γ = num/den ∈ [0, 1].
#[inline]
fn bernoulli_exp_neg_at_most_one(num: u128, den: u128, src: &mut NoiseSource) -> bool {
    debug_assert!(num <= den);
    if num == 0 {
        return true;
    }
    // The first draw is Bernoulli(γ), certain when γ = 1.
    let mut k: u128 = if num == den { 2 } else { 1 };
    loop {
        // A ~ Bernoulli(γ/k) = Bernoulli(num / (den·k)); when den·k would overflow, as the
        // product of Bernoulli(num/den) and Bernoulli(1/k), which has the same law.
        let a = match den.checked_mul(k) {
            Some(dk) => src.bernoulli_ratio(num, dk),
            None => src.bernoulli_ratio(num, den) && src.below_u128(k) == 0,
        };
        if !a {
            break;
        }
        k += 1;
    }
    k % 2 == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Frequencies within 5 standard deviations of exp(−γ) (false alarm ≈ 6e-7 per case).
    #[test]
    fn matches_exp_minus_gamma() {
        let mut src = NoiseSource::insecure_seeded(11);
        let n = 100_000u32;
        for (num, den) in [
            (0u128, 1u128),
            (1, 3),
            (1, 1),
            (7, 2),
            (5, 1),
            (1, 1u128 << 90),
        ] {
            let p = (-(num as f64) / den as f64).exp();
            let hits = (0..n)
                .filter(|_| bernoulli_exp_neg(num, den, &mut src))
                .count() as f64;
            let sd = (n as f64 * p * (1.0 - p)).sqrt().max(1.0);
            assert!(
                (hits - n as f64 * p).abs() < 5.0 * sd,
                "γ = {num}/{den}: {hits} vs {}",
                n as f64 * p
            );
        }
    }

    #[test]
    fn wrong_probability_is_detected() {
        // The same check has power: Bernoulli(exp(-1)) is far from exp(-1.1).
        let mut src = NoiseSource::insecure_seeded(12);
        let n = 100_000u32;
        let hits = (0..n).filter(|_| bernoulli_exp_neg(1, 1, &mut src)).count() as f64;
        let p = (-1.1f64).exp();
        let sd = (n as f64 * p * (1.0 - p)).sqrt();
        assert!((hits - n as f64 * p).abs() > 5.0 * sd);
    }
}
