//! The held-out split. Whether a document is held out depends only on the seed and its index in the
//! input, never on the other documents, on batching or on threads: the same input and seed give
//! the same split, and appending documents to an input does not move the earlier ones.

use topos_sampling::{CounterRng, Stream};

/// Whether the document at input index `index` is held out, for a held-out fraction `holdout` in
/// [0, 1).
#[inline]
pub fn is_heldout(seed: u64, index: u64, holdout: f64) -> bool {
    holdout > 0.0 && CounterRng::new(seed, Stream::Split, 0, index).next_f64() < holdout
}

/// Checks that `holdout` is a fraction in [0, 1).
pub fn validate_holdout(holdout: f64) -> Result<(), String> {
    if (0.0..1.0).contains(&holdout) {
        Ok(())
    } else {
        Err(format!(
            "holdout must be a fraction in [0, 1), got {holdout}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_fraction_honoured() {
        let n = 20_000u64;
        let a: Vec<bool> = (0..n).map(|i| is_heldout(7, i, 0.1)).collect();
        let b: Vec<bool> = (0..n).map(|i| is_heldout(7, i, 0.1)).collect();
        assert_eq!(a, b);
        let held = a.iter().filter(|&&h| h).count() as f64 / n as f64;
        // Binomial sd = sqrt(0.1 * 0.9 / 20000) ≈ 0.0021; 5 sd.
        assert!((held - 0.1).abs() < 0.011, "{held}");
        let c: Vec<bool> = (0..n).map(|i| is_heldout(8, i, 0.1)).collect();
        assert_ne!(a, c, "another seed, another split");
        assert!((0..n).all(|i| !is_heldout(7, i, 0.0)));
        // Monotone in the fraction: a larger fraction holds out a superset.
        assert!((0..n).all(|i| !is_heldout(7, i, 0.1) || is_heldout(7, i, 0.3)));
    }

    #[test]
    fn validate() {
        assert!(validate_holdout(0.0).is_ok() && validate_holdout(0.99).is_ok());
        for bad in [1.0, -0.1, f64::NAN] {
            assert!(validate_holdout(bad).unwrap_err().contains("holdout"));
        }
    }
}
