//! Sampling from a short, explicitly listed discrete distribution (the sparse branch p₁ of ESCA
//! and of the sparse collapsed Gibbs sampler, SaberLDA Alg. 2 lines 4–9).

/// Returns the first `i` with `cumulative[i] > x`, or the last index if rounding left none.
/// `cumulative` holds inclusive prefix sums and must not be empty.
#[inline]
pub fn search_prefix_f32(cumulative: &[f32], x: f32) -> usize {
    cumulative
        .iter()
        .position(|&c| c > x)
        .unwrap_or(cumulative.len() - 1)
}

/// `f64` variant of [`search_prefix_f32`].
#[inline]
pub fn search_prefix_f64(cumulative: &[f64], x: f64) -> usize {
    cumulative
        .iter()
        .position(|&c| c > x)
        .unwrap_or(cumulative.len() - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_first_exceeding() {
        let c = [1.0f32, 1.0, 3.0, 6.0];
        assert_eq!(search_prefix_f32(&c, 0.0), 0);
        assert_eq!(search_prefix_f32(&c, 1.0), 2);
        assert_eq!(search_prefix_f32(&c, 5.99), 3);
        assert_eq!(search_prefix_f32(&c, 6.0), 3);
        assert_eq!(search_prefix_f64(&[0.5, 1.0], 0.7), 1);
    }
}
