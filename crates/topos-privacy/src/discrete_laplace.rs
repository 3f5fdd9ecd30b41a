//! The discrete Laplace (two-sided geometric) mechanism for integer answers.
//!
//! P(Z = z) ∝ exp(−|z|/b) on the integers. Adding it to a count with L1 sensitivity Δ at scale
//! b = Δ/ε is ε-differentially private, like the Laplace mechanism of Definition 3.3.3 and
//! Theorem 1, but the output stays an integer and, crucially, the sampler is *exact*: CKS 2020
//! Algorithm 2 with the scale as a ratio of integers t/s, built from Bernoulli(exp(−γ)) draws on
//! rationals ([`crate::bernoulli`]). No floating-point number is involved in a draw, so the
//! output distribution is exactly the one the privacy proof assumes (Mironov 2012 shows how the
//! textbook `x + b·ln(U)` sampler leaks the input through the floating-point values it can and
//! cannot produce).
//!
//! Batched noise ([`DiscreteLaplace::add_to_i64`], [`DiscreteLaplace::add_to_u32_clamped`]) is
//! cut into fixed chunks of [`CHUNK`] entries, chunk i drawing from ChaCha20 stream i of a key
//! taken from the caller's source: parallel on all cores, and the same noise for any number of
//! threads.

use crate::bernoulli::bernoulli_exp_neg;
use crate::exact::{epsilon_floor33, gcd};
use crate::{Epsilon, NoiseSource, PrivacyError};
use rayon::prelude::*;

/// Entries per independently keyed chunk of batched noise.
pub const CHUNK: usize = 1 << 14;

/// Integers of the scale stay below this, so U + t·V fits in 128 bits for any V below 2^27
/// (P(V ≥ 2^27) = e^{−2^27}).
const LIMIT: u128 = 1 << 100;

/// Largest supported scale: P(|Z| > 2^63) = e^{−128} at this scale, so i64 answers hold the noise.
const MAX_SCALE: u128 = 1 << 56;

/// The discrete Laplace distribution with scale t/s (t, s positive integers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DiscreteLaplace {
    t: u128,
    s: u128,
}

impl DiscreteLaplace {
    /// Scale `t/s` exactly.
    pub fn with_scale_ratio(t: u128, s: u128) -> Result<Self, PrivacyError> {
        if t == 0 || s == 0 {
            return Err(PrivacyError::Unsupported(
                "a discrete Laplace scale must be positive".into(),
            ));
        }
        let g = gcd(t, s);
        let (t, s) = (t / g, s / g);
        if t >= LIMIT || s >= LIMIT {
            return Err(PrivacyError::Unsupported(format!(
                "noise scale {t}/{s} is outside the exact sampler's range (ε or the sensitivity is too extreme)"
            )));
        }
        if t / s >= MAX_SCALE {
            return Err(PrivacyError::Unsupported(format!(
                "noise scale {:.3e} is too large to add to 64-bit counts",
                t as f64 / s as f64
            )));
        }
        Ok(DiscreteLaplace { t, s })
    }

    /// The mechanism for an integer query with L1 sensitivity `l1_sensitivity` at privacy `eps`:
    /// scale Δ/ε, with ε first rounded down to 33 significant bits (never less private).
    pub fn calibrated(l1_sensitivity: u64, eps: Epsilon) -> Result<Self, PrivacyError> {
        if l1_sensitivity == 0 {
            return Err(PrivacyError::NotPositive {
                what: "sensitivity",
                value: 0.0,
            });
        }
        let (m, e) = epsilon_floor33(eps.get());
        let delta = l1_sensitivity as u128;
        let too_extreme = || {
            PrivacyError::Unsupported(format!(
                "ε = {eps} with sensitivity {l1_sensitivity} is outside the exact sampler's range"
            ))
        };
        let (t, s) = if e <= 0 {
            let sh = (-e) as u32;
            if sh >= 100 || delta.leading_zeros() <= sh {
                return Err(too_extreme());
            }
            (delta << sh, m as u128)
        } else {
            let sh = e as u32;
            if sh >= 64 {
                return Err(too_extreme());
            }
            (delta, (m as u128) << sh)
        };
        Self::with_scale_ratio(t, s)
    }

    /// The scale b (as a double, for display and tests).
    pub fn scale(&self) -> f64 {
        self.t as f64 / self.s as f64
    }

    /// The privacy this scale gives a query of L1 sensitivity `l1_sensitivity`: Δ/b.
    pub fn epsilon_for(&self, l1_sensitivity: u64) -> f64 {
        l1_sensitivity as f64 * self.s as f64 / self.t as f64
    }

    /// p = exp(−1/b), the ratio of successive probabilities.
    fn ratio(&self) -> f64 {
        (-(self.s as f64) / self.t as f64).exp()
    }

    /// P(Z = z) = (1 − p)/(1 + p) · p^|z|.
    pub fn pmf(&self, z: i64) -> f64 {
        let p = self.ratio();
        (1.0 - p) / (1.0 + p) * p.powf(z.unsigned_abs() as f64)
    }

    /// Var Z = 2p/(1 − p)² (≈ 2b² for large b, the Laplace variance of Definition 3.3.2).
    pub fn variance(&self) -> f64 {
        let p = self.ratio();
        2.0 * p / ((1.0 - p) * (1.0 - p))
    }

    /// The smallest k with P(|Z| > k) ≤ `alpha`, e.g. the half-width of a 95% interval for
    /// `alpha` = 0.05: P(|Z| > k) = 2p^{k+1}/(1 + p).
    pub fn half_width(&self, alpha: f64) -> u64 {
        let p = self.ratio();
        if p <= 0.0 {
            return 0;
        }
        let k1 = ((alpha * (1.0 + p) / 2.0).ln() / p.ln()).ceil();
        (k1 - 1.0).max(0.0) as u64
    }

    /// One draw (CKS 2020, Algorithm 2).
    pub fn sample(&self, src: &mut NoiseSource) -> i64 {
        loop {
            // X = U + t·V is geometric with ratio e^{−1/t}: U uniform below t accepted with
            // probability e^{−U/t}, V geometric with ratio e^{−1}.
            let u = src.below_u128(self.t);
            if u != 0 && !bernoulli_exp_neg(u, self.t, src) {
                continue;
            }
            let mut v: u128 = 0;
            while bernoulli_exp_neg(1, 1, src) {
                v += 1;
            }
            let Some(x) = self.t.checked_mul(v).and_then(|tv| tv.checked_add(u)) else {
                continue; // V ≥ 2^27: probability e^{−2^27}
            };
            // Y = ⌊X/s⌋ is geometric with ratio e^{−s/t}; a random sign, rejecting −0.
            let y = if x <= u64::MAX as u128 && self.s <= u64::MAX as u128 {
                ((x as u64) / (self.s as u64)) as u128
            } else {
                x / self.s
            };
            if y > i64::MAX as u128 {
                continue;
            }
            let negative = src.bit();
            if negative && y == 0 {
                continue;
            }
            return if negative { -(y as i64) } else { y as i64 };
        }
    }

    /// Adds independent noise to every value (saturating at the i64 range), in parallel.
    pub fn add_to_i64(&self, values: &mut [i64], src: &mut NoiseSource) {
        let key = src.fork_key();
        values
            .par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(c, chunk)| {
                let mut r = NoiseSource::substream(key, c as u64);
                for v in chunk {
                    *v = v.saturating_add(self.sample(&mut r));
                }
            });
    }

    /// `counts` plus independent noise, as signed values (noisy counts can be negative).
    pub fn noisy_u32(&self, counts: &[u32], src: &mut NoiseSource) -> Vec<i64> {
        let mut out: Vec<i64> = counts.iter().map(|&c| c as i64).collect();
        self.add_to_i64(&mut out, src);
        out
    }

    /// Replaces every count by max(0, count + noise), saturating at u32::MAX. Clamping is
    /// post-processing of the private value, so it costs no privacy; it biases small counts up.
    pub fn add_to_u32_clamped(&self, counts: &mut [u32], src: &mut NoiseSource) {
        let key = src.fork_key();
        counts
            .par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(c, chunk)| {
                let mut r = NoiseSource::substream(key, c as u64);
                for v in chunk {
                    let x = (*v as i64).saturating_add(self.sample(&mut r));
                    *v = x.clamp(0, u32::MAX as i64) as u32;
                }
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibration_is_exact_and_never_less_private() {
        let eps = |x| Epsilon::new(x).unwrap();
        let d = DiscreteLaplace::calibrated(1, eps(1.0)).unwrap();
        assert_eq!((d.t, d.s), (1, 1));
        let d = DiscreteLaplace::calibrated(500, eps(0.25)).unwrap();
        assert_eq!((d.t, d.s), (2000, 1));
        for (delta, e) in [(1u64, 0.1), (3, 0.3), (500, 0.005), (1, 7.0), (1, 1e-6)] {
            let d = DiscreteLaplace::calibrated(delta, eps(e)).unwrap();
            let got = d.epsilon_for(delta);
            assert!(got <= e && got > e * (1.0 - 1e-9), "{delta} {e}: {got}");
        }
        assert!(DiscreteLaplace::calibrated(1 << 40, eps(1e-9)).is_err());
        assert!(DiscreteLaplace::calibrated(0, eps(1.0)).is_err());
    }

    #[test]
    fn batches_do_not_depend_on_threads() {
        let d = DiscreteLaplace::calibrated(1, Epsilon::new(0.5).unwrap()).unwrap();
        let counts: Vec<u32> = (0..3 * CHUNK as u32 + 17).collect();
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let a = one.install(|| d.noisy_u32(&counts, &mut NoiseSource::insecure_seeded(3)));
        let b = d.noisy_u32(&counts, &mut NoiseSource::insecure_seeded(3));
        assert_eq!(a, b);
        assert_ne!(a, counts.iter().map(|&c| c as i64).collect::<Vec<_>>());
        let mut c = vec![0u32; 1000];
        d.add_to_u32_clamped(&mut c, &mut NoiseSource::insecure_seeded(4));
        assert!(c.iter().any(|&x| x > 0));
    }

    #[test]
    fn half_width_matches_the_tail() {
        let d = DiscreteLaplace::calibrated(1, Epsilon::new(0.5).unwrap()).unwrap();
        let k = d.half_width(0.05) as i64;
        let tail = |k: i64| 1.0 - (-k..=k).map(|z| d.pmf(z)).sum::<f64>();
        assert!(tail(k) <= 0.05 && tail(k - 1) > 0.05);
    }
}
