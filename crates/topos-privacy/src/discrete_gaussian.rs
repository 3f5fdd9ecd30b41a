//! The discrete Gaussian mechanism for integer answers (issue 25).
//!
//! P(Z = z) ∝ exp(−z²/(2σ²)) on the integers (Canonne, Kamath & Steinke 2020, "The Discrete
//! Gaussian for Differential Privacy", CKS20 below). Its point: privacy is charged by the **L2**
//! norm of how much the answer can move, not the L1 norm, and releases compose in
//! zero-concentrated DP ([`crate::zcdp`]) by adding ρ, so R releases need noise growing like √R
//! instead of R.
//!
//! # Privacy (the facts the proofs in `topos-train` use)
//!
//! * **One coordinate.** For integers μ, μ′ and every α > 1,
//!   D_α(N_Z(μ, σ²) ‖ N_Z(μ′, σ²)) ≤ α·(μ − μ′)²/(2σ²) (CKS20, Theorem 4 and its proof,
//!   Proposition 5: the Rényi divergence of two discrete Gaussians with integer means is at most
//!   that of the continuous ones).
//! * **Many coordinates.** Independent noise on every coordinate: the Rényi divergence of
//!   product distributions is the sum of the coordinates' (van Erven & Harremoës 2014,
//!   Theorem 28), so an integer vector query whose answer moves by a vector Δ gives
//!   D_α ≤ α·‖Δ‖₂²/(2σ²) for every α > 1, i.e. **ρ-zCDP with ρ = Δ₂²/(2σ²)** when ‖Δ‖₂ ≤ Δ₂
//!   for all neighbours (Bun & Steinke 2016, Definition 1.1; CKS20 state the same as their
//!   multivariate theorem). Clamping or dropping coordinates afterwards is post-processing.
//!
//! # The sampler: exact, integers only
//!
//! σ² is held as a ratio of integers n/d (rounded **up** from the calibrated float, so the
//! noise is never smaller than the proof needs). CKS20 Algorithm 3: with t = ⌊σ⌋ + 1, draw
//! Y from the discrete Laplace of scale t ([`DiscreteLaplace`], itself exact) and accept it with
//! probability exp(−(|Y| − σ²/t)²/(2σ²)) ([`bernoulli_exp_neg`] on the rational
//! (|Y|·t·d − n)² / (2·n·d·t²)); the accepted Y is exactly N_Z(0, σ²). No floating-point number
//! enters a draw. The expected number of proposals is below 2 for σ ≥ 1 (CKS20, §5).
//!
//! Batched noise ([`DiscreteGaussian::add_to_u32_clamped`]) uses the same fixed chunks and
//! ChaCha20 sub-streams as the discrete Laplace's: the same noise for any number of threads.

use crate::bernoulli::bernoulli_exp_neg;
use crate::discrete_laplace::CHUNK;
use crate::{DiscreteLaplace, NoiseSource, PrivacyError};
use rayon::prelude::*;

/// The denominator d of σ² = n/d: σ² is rounded up to a multiple of 1/1024.
const DEN: u128 = 1 << 10;

/// Largest σ² supported, 2^40 (σ ≈ 10⁶). It keeps 2·n·d·t² below 2^102, so whenever
/// (|Y|·t·d − n)² would overflow 128 bits the acceptance probability is below e^{−2^26}, and
/// rejecting it then changes the law by less than that.
const MAX_VARIANCE: u128 = 1 << 40;

/// The discrete Gaussian distribution N_Z(0, σ²) with σ² = n/d.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DiscreteGaussian {
    n: u128,
    d: u128,
    /// t = ⌊σ⌋ + 1, the discrete Laplace scale of the proposals.
    t: u128,
    proposal: DiscreteLaplace,
}

/// ⌊√x⌋ for integers.
fn isqrt(x: u128) -> u128 {
    if x < 2 {
        return x;
    }
    let mut r = (x as f64).sqrt() as u128;
    while r * r > x {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= x {
        r += 1;
    }
    r
}

impl DiscreteGaussian {
    /// σ² = `n`/`d` exactly (positive integers).
    pub fn with_variance_ratio(n: u128, d: u128) -> Result<Self, PrivacyError> {
        if n == 0 || d == 0 || d > DEN {
            return Err(PrivacyError::Unsupported(format!(
                "a discrete Gaussian variance must be a positive ratio n/d with d ≤ {DEN}, got {n}/{d}"
            )));
        }
        if n / d >= MAX_VARIANCE {
            return Err(PrivacyError::Unsupported(format!(
                "discrete Gaussian variance {:.3e} is outside the exact sampler's range (ε is too small)",
                n as f64 / d as f64
            )));
        }
        // ⌊σ⌋ = ⌊√⌊n/d⌋⌋.
        let t = isqrt(n / d) + 1;
        Ok(Self {
            n,
            d,
            t,
            proposal: DiscreteLaplace::with_scale_ratio(t, 1)?,
        })
    }

    /// The mechanism for an integer vector query whose answer moves by at most `l2_sensitivity`
    /// in L2 norm between neighbours, at `rho`-zCDP: σ² = Δ₂²/(2ρ), rounded up to a multiple of
    /// 1/1024 (never less private; [`DiscreteGaussian::rho_for`] gives the ρ actually met).
    pub fn calibrated(l2_sensitivity: f64, rho: f64) -> Result<Self, PrivacyError> {
        if !(l2_sensitivity.is_finite() && l2_sensitivity > 0.0) {
            return Err(PrivacyError::NotPositive {
                what: "L2 sensitivity",
                value: l2_sensitivity,
            });
        }
        if !(rho.is_finite() && rho > 0.0) {
            return Err(PrivacyError::NotPositive {
                what: "ρ (zCDP)",
                value: rho,
            });
        }
        let var = l2_sensitivity * l2_sensitivity / (2.0 * rho);
        // Rounded up, with a relative margin of 10⁻¹² for the floating-point rounding of the
        // product, so that n/d ≥ the exact Δ₂²/(2ρ).
        let n = (var * DEN as f64 * (1.0 + 1e-12)).ceil();
        if !(n.is_finite() && n < (MAX_VARIANCE * DEN) as f64) {
            return Err(PrivacyError::Unsupported(format!(
                "discrete Gaussian variance {var:.3e} is outside the exact sampler's range (ε is too small)"
            )));
        }
        let n = (n as u128).max(1);
        let out = Self::with_variance_ratio(n, DEN)?;
        debug_assert!(out.rho_for(l2_sensitivity) <= rho * (1.0 + 1e-14));
        Ok(out)
    }

    /// The largest σ² the exact sampler supports (2^40), for callers that say in advance which
    /// settings it cannot serve.
    pub fn max_variance() -> f64 {
        MAX_VARIANCE as f64
    }

    /// σ² as a double.
    pub fn variance(&self) -> f64 {
        self.n as f64 / self.d as f64
    }

    /// σ as a double (the "noise scale" recorded in a guarantee).
    pub fn sigma(&self) -> f64 {
        self.variance().sqrt()
    }

    /// The ρ of zCDP this noise gives a query of L2 sensitivity `l2_sensitivity`: Δ₂²/(2σ²),
    /// rounded up in the last place (so a sum of them never understates the total).
    pub fn rho_for(&self, l2_sensitivity: f64) -> f64 {
        let r = l2_sensitivity * l2_sensitivity * self.d as f64 / (2.0 * self.n as f64);
        r * (1.0 + 4.0 * f64::EPSILON)
    }

    /// P(Z = z) = exp(−z²/(2σ²)) / Σ_y exp(−y²/(2σ²)) (the sum over |y| ≤ 40σ + 10, whose tail
    /// is below e^{−800}).
    pub fn pmf(&self, z: i64) -> f64 {
        let v = self.variance();
        let bound = (40.0 * v.sqrt() + 10.0) as i64;
        let norm: f64 = (-bound..=bound)
            .map(|y| (-(y as f64).powi(2) / (2.0 * v)).exp())
            .sum();
        (-(z as f64).powi(2) / (2.0 * v)).exp() / norm
    }

    /// One draw (CKS20, Algorithm 3).
    pub fn sample(&self, src: &mut NoiseSource) -> i64 {
        loop {
            let y = self.proposal.sample(src);
            // γ = (|Y| − σ²/t)²/(2σ²) = (|Y|·t·d − n)² / (2·n·d·t²).
            let a = u128::from(y.unsigned_abs());
            let Some(num) = a
                .checked_mul(self.t)
                .and_then(|x| x.checked_mul(self.d))
                .map(|x| x.abs_diff(self.n))
                .and_then(|x| x.checked_mul(x))
            else {
                continue; // acceptance probability below e^{−2^26} (see MAX_VARIANCE)
            };
            let den = 2 * self.n * self.d * self.t * self.t;
            if bernoulli_exp_neg(num, den, src) {
                return y;
            }
        }
    }

    /// `counts` plus independent noise, as signed values.
    pub fn noisy_u32(&self, counts: &[u32], src: &mut NoiseSource) -> Vec<i64> {
        let key = src.fork_key();
        let mut out: Vec<i64> = counts.iter().map(|&c| i64::from(c)).collect();
        out.par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(c, chunk)| {
                let mut r = NoiseSource::substream(key, c as u64);
                for v in chunk {
                    *v = v.saturating_add(self.sample(&mut r));
                }
            });
        out
    }

    /// Replaces every count by max(0, count + noise), saturating at u32::MAX (clamping is
    /// post-processing).
    pub fn add_to_u32_clamped(&self, counts: &mut [u32], src: &mut NoiseSource) {
        let key = src.fork_key();
        counts
            .par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(c, chunk)| {
                let mut r = NoiseSource::substream(key, c as u64);
                for v in chunk {
                    let x = i64::from(*v).saturating_add(self.sample(&mut r));
                    *v = x.clamp(0, i64::from(u32::MAX)) as u32;
                }
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibration_rounds_the_variance_up() {
        for (l2, rho) in [(1.0, 0.5), (12.0, 0.01), (15.0, 1.3), (3.0, 1e-4)] {
            let g = DiscreteGaussian::calibrated(l2, rho).unwrap();
            let exact = l2 * l2 / (2.0 * rho);
            assert!(g.variance() >= exact && g.variance() < exact + 1.0 / 512.0);
            assert!(g.rho_for(l2) <= rho * (1.0 + 1e-12) && g.rho_for(l2) > rho * 0.999);
        }
        assert!(DiscreteGaussian::calibrated(0.0, 1.0).is_err());
        assert!(DiscreteGaussian::calibrated(1.0, 0.0).is_err());
        assert!(DiscreteGaussian::calibrated(1e6, 1e-9).is_err());
        assert_eq!(isqrt(99), 9);
        assert_eq!(isqrt(100), 10);
        assert_eq!(isqrt((1u128 << 80) - 1), (1u128 << 40) - 1);
    }

    /// The same seed gives the same draws, whatever the number of threads.
    #[test]
    fn draws_are_determined_by_the_seed() {
        let g = DiscreteGaussian::calibrated(10.0, 0.5).unwrap();
        let counts: Vec<u32> = (0..2 * CHUNK as u32 + 5).collect();
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let a = one.install(|| g.noisy_u32(&counts, &mut NoiseSource::insecure_seeded(9)));
        let b = g.noisy_u32(&counts, &mut NoiseSource::insecure_seeded(9));
        let c = g.noisy_u32(&counts, &mut NoiseSource::insecure_seeded(10));
        assert_eq!(a, b);
        assert_ne!(a, c);
        let mut s1 = NoiseSource::insecure_seeded(4);
        let mut s2 = NoiseSource::insecure_seeded(4);
        let x: Vec<i64> = (0..100).map(|_| g.sample(&mut s1)).collect();
        let y: Vec<i64> = (0..100).map(|_| g.sample(&mut s2)).collect();
        assert_eq!(x, y);
    }

    /// Pearson's χ² of 200,000 draws against the pmf, cells |z| ≤ 3σ one each plus two tails,
    /// then **cells of expected count < 5 merged** into their neighbour towards the centre (the
    /// tails pooled inwards until every cell expects ≥ 5: at σ² = 1/4 the |z| = 2 cells and the
    /// tails expect < 1 draw, where the χ² approximation of the statistic's law fails and the
    /// real false-alarm rate would be ~5·10⁻³, not the nominal one). Compared with the χ²
    /// quantile at a nominal false-alarm rate of 10⁻⁶ (Wilson–Hilferty), honest up to the χ²
    /// approximation's error with every expected count ≥ 5 (well below 10⁻³ per case); fixed
    /// seeds, so the test itself is deterministic. The same test rejects a Gaussian of 1.1σ
    /// drawn against the pmf of σ (power).
    #[test]
    fn draws_follow_the_pmf_chi_square() {
        /// Merges cells (observed, expected) whose expected count is below `min` into their
        /// neighbour towards the middle, from both ends inwards.
        fn pool(cells: &[(f64, f64)], min: f64) -> Vec<(f64, f64)> {
            let mut v = cells.to_vec();
            while v.len() > 2 && v[0].1 < min {
                let (o, e) = v.remove(0);
                v[0].0 += o;
                v[0].1 += e;
            }
            while v.len() > 2 && v[v.len() - 1].1 < min {
                let (o, e) = v.pop().unwrap();
                let last = v.len() - 1;
                v[last].0 += o;
                v[last].1 += e;
            }
            v
        }
        fn chi2(g: &DiscreteGaussian, pmf_of: &DiscreteGaussian, seed: u64) -> (f64, f64) {
            let n = 200_000usize;
            let k = (3.0 * pmf_of.sigma()).ceil() as i64;
            let mut hist = vec![0u64; (2 * k + 3) as usize];
            let mut src = NoiseSource::insecure_seeded(seed);
            for _ in 0..n {
                let z = g.sample(&mut src).clamp(-k - 1, k + 1);
                hist[(z + k + 1) as usize] += 1;
            }
            let mut p = vec![0.0; hist.len()];
            for z in -k..=k {
                p[(z + k + 1) as usize] = pmf_of.pmf(z);
            }
            let inner: f64 = p.iter().sum();
            p[0] = (1.0 - inner) / 2.0;
            p[hist.len() - 1] = (1.0 - inner) / 2.0;
            let cells: Vec<(f64, f64)> = hist
                .iter()
                .zip(&p)
                .map(|(&o, &q)| (o as f64, q * n as f64))
                .collect();
            let cells = pool(&cells, 5.0);
            assert!(cells.iter().all(|c| c.1 >= 5.0), "{cells:?}");
            let stat: f64 = cells.iter().map(|&(o, e)| (o - e).powi(2) / e).sum();
            // Wilson–Hilferty: χ²_df quantile ≈ df·(1 − 2/(9df) + z·√(2/(9df)))³, z = 4.753
            // for an upper tail of 10⁻⁶.
            let df = (cells.len() - 1) as f64;
            let q = df * (1.0 - 2.0 / (9.0 * df) + 4.753 * (2.0 / (9.0 * df)).sqrt()).powi(3);
            (stat, q)
        }
        for (i, var) in [(1u128, 4u128), (1, 1), (7, 2), (25, 1), (400, 1)]
            .into_iter()
            .enumerate()
        {
            let g = DiscreteGaussian::with_variance_ratio(var.0, var.1).unwrap();
            let sum: f64 = (-200..=200).map(|z| g.pmf(z)).sum();
            assert!((sum - 1.0).abs() < 1e-9);
            let (stat, q) = chi2(&g, &g, 100 + i as u64);
            assert!(
                stat < q,
                "σ² = {}/{}: χ² = {stat:.1} ≥ {q:.1}",
                var.0,
                var.1
            );
        }
        let g = DiscreteGaussian::with_variance_ratio(100, 1).unwrap();
        let wide = DiscreteGaussian::with_variance_ratio(121, 1).unwrap();
        let (stat, q) = chi2(&wide, &g, 7);
        assert!(stat > q, "σ = 11 passed as σ = 10: χ² = {stat:.1} < {q:.1}");
        // Mean 0 and variance σ² (within 6 standard errors).
        let mut src = NoiseSource::insecure_seeded(8);
        let n = 100_000;
        let xs: Vec<f64> = (0..n).map(|_| g.sample(&mut src) as f64).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| x * x).sum::<f64>() / n as f64;
        assert!(mean.abs() < 6.0 * (100.0 / n as f64).sqrt(), "{mean}");
        assert!(
            (var - 100.0).abs() < 6.0 * 100.0 * (2.0 / n as f64).sqrt(),
            "{var}"
        );
    }
}
