//! The Laplace mechanism for real answers (Definition 3.3.3, Theorem 1), made safe for
//! floating point the way OpenDP and Google's library do it: snap to a lattice, add exact
//! integer noise on the lattice.
//!
//! The textbook sampler `x + b·ln(U)` is not private as implemented: doubles near x are spaced
//! unevenly, so the set of outputs it can produce depends on x and an observer can tell inputs
//! apart from a single output (Mironov 2012, "On significance of the least significant bits for
//! differential privacy"). Here the answer x is rounded to the nearest multiple of a power of two
//! g = 2^k chosen from the sensitivity alone (k = ⌊log₂ S⌋ − 32, so the lattice is ~10⁻⁹ of S),
//! exact discrete Laplace noise ([`DiscreteLaplace`]) is added to the integer x/g, and the
//! integer is converted back. Every possible output is a lattice point whatever x is, and the
//! final conversion to a double is a fixed function of the private integer (post-processing).
//!
//! Rounding can move each coordinate by up to half a lattice step, so neighbouring inputs can
//! differ by up to S/g + d lattice units over d coordinates; the noise is calibrated to
//! ⌈S/g⌉ + d units, a relative increase of about d·2⁻³², so the guarantee ε holds exactly.

use crate::{DiscreteLaplace, Epsilon, NoiseSource, PrivacyError, Sensitivity};

/// Lattice steps per unit of sensitivity: g = 2^(⌊log₂ S⌋ − PRECISION_BITS).
const PRECISION_BITS: i32 = 32;

/// The snapped Laplace mechanism for a vector of `dims` reals with L1 sensitivity S.
#[derive(Clone, Debug)]
pub struct LaplaceMechanism {
    k: i32,
    dims: usize,
    noise: DiscreteLaplace,
}

/// 2^k as a double (k in the normal range).
fn pow2(k: i32) -> f64 {
    debug_assert!((-1022..=1023).contains(&k));
    f64::from_bits(((k + 1023) as u64) << 52)
}

impl LaplaceMechanism {
    /// The mechanism for a query of L1 sensitivity `sensitivity` over `dims` coordinates at
    /// privacy `eps`.
    pub fn new(sensitivity: Sensitivity, eps: Epsilon, dims: usize) -> Result<Self, PrivacyError> {
        if dims == 0 {
            return Err(PrivacyError::BadQuery(
                "a query must have at least one value".into(),
            ));
        }
        let s = sensitivity.get();
        let exponent = ((s.to_bits() >> 52) & 0x7ff) as i32 - 1023;
        let k = exponent - PRECISION_BITS;
        if !(-1022..=1023).contains(&k) || exponent < -1000 {
            return Err(PrivacyError::Unsupported(format!(
                "sensitivity {s} is outside the supported range"
            )));
        }
        // S/g is exact (a power-of-two scaling) and below 2^33.
        let units = (s / pow2(k)).ceil() as u64 + dims as u64;
        let noise = DiscreteLaplace::calibrated(units, eps)?;
        Ok(LaplaceMechanism { k, dims, noise })
    }

    /// The lattice step g = 2^k every output is a multiple of.
    pub fn granularity(&self) -> f64 {
        pow2(self.k)
    }

    /// The Laplace scale b of the noise, in the answer's units.
    pub fn scale(&self) -> f64 {
        self.noise.scale() * self.granularity()
    }

    /// The noisy answer: every coordinate snapped to the lattice plus independent noise.
    pub fn release(&self, values: &[f64], src: &mut NoiseSource) -> Result<Vec<f64>, PrivacyError> {
        if values.len() != self.dims {
            return Err(PrivacyError::BadQuery(format!(
                "the mechanism was calibrated for {} values, got {}",
                self.dims,
                values.len()
            )));
        }
        let g = self.granularity();
        let inv = pow2(-self.k);
        let limit = (1u128 << 100) as f64;
        values
            .iter()
            .map(|&x| {
                let units = (x * inv).round();
                if !units.is_finite() || units.abs() >= limit {
                    return Err(PrivacyError::BadQuery(format!(
                        "value {x} is too large for a noise lattice of step {g:e}"
                    )));
                }
                let noisy = units as i128 + self.noise.sample(src) as i128;
                Ok(noisy as f64 * g)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_lie_on_the_lattice_whatever_the_input() {
        let m = LaplaceMechanism::new(
            Sensitivity::new(1.0).unwrap(),
            Epsilon::new(1.0).unwrap(),
            1,
        )
        .unwrap();
        assert_eq!(m.granularity(), 2f64.powi(-32));
        let mut src = NoiseSource::insecure_seeded(5);
        for x in [0.0, 0.1, 1.0 / 3.0, 1e6 + 0.123456789] {
            for _ in 0..100 {
                let y = m.release(&[x], &mut src).unwrap()[0];
                let u = y / m.granularity();
                assert_eq!(u, u.round(), "{x} → {y}");
            }
        }
        // Scale covers the rounding: b ≥ S/ε, by a hair.
        assert!(m.scale() >= 1.0 && m.scale() < 1.0 + 1e-9);
        assert!(m.release(&[1.0, 2.0], &mut src).is_err());
        assert!(m.release(&[f64::NAN], &mut src).is_err());
    }
}
