//! Updatable weights with O(1) updates and O(K/32 + 32) sampling: a two-level sum (weights in
//! blocks of 32, one running sum per block and one for the total).
//!
//! The exact collapsed Gibbs sampler changes two weights of each of its K-sized branches after
//! every token but samples from a branch only when the uniform lands in it, which for the smoothing
//! branch (α·β/(n_k + Vβ)) and the word branch of a converged model is a few percent of tokens.
//! An F+ tree (Yu et al. 2015) pays O(log₂ K) on *every* update to make those rare draws
//! O(log₂ K); here updates are two additions and the rare draw scans the block sums and then one
//! block. Running sums accumulate rounding error, so they are recomputed from the weights after
//! every `K + 4096` updates (amortized O(1)); between recomputations the relative error of a sum
//! stays near `updates × f64::EPSILON`, far below what changes a draw's distribution.

const BLOCK: usize = 32;

/// Weights in blocks of 32 with running block sums and total.
#[derive(Clone, Debug, Default)]
pub struct BlockedSums {
    weights: Vec<f64>,
    blocks: Vec<f64>,
    total: f64,
    updates_since_exact: usize,
}

impl BlockedSums {
    /// Sums over `weights`, built in O(K).
    pub fn from_weights(weights: &[f64]) -> Self {
        let mut s = Self::default();
        s.rebuild(weights);
        s
    }

    /// Replaces all weights, reusing the allocation.
    pub fn rebuild(&mut self, weights: &[f64]) {
        self.weights.clear();
        self.weights.extend_from_slice(weights);
        self.recompute();
    }

    /// Recomputes the block sums and the total exactly from the weights.
    fn recompute(&mut self) {
        self.blocks.clear();
        self.blocks
            .extend(self.weights.chunks(BLOCK).map(|c| c.iter().sum::<f64>()));
        self.total = self.blocks.iter().sum();
        self.updates_since_exact = 0;
    }

    /// Number of weights.
    pub fn len(&self) -> usize {
        self.weights.len()
    }

    /// Whether there are no weights.
    pub fn is_empty(&self) -> bool {
        self.weights.is_empty()
    }

    /// Sum of all weights.
    #[inline]
    pub fn total(&self) -> f64 {
        self.total
    }

    /// The weight at `i`.
    #[inline]
    pub fn get(&self, i: usize) -> f64 {
        self.weights[i]
    }

    /// Sets the weight at `i` (must be ≥ 0).
    #[inline]
    pub fn set(&mut self, i: usize, w: f64) {
        debug_assert!(w >= 0.0);
        let delta = w - self.weights[i];
        self.weights[i] = w;
        self.blocks[i / BLOCK] += delta;
        self.total += delta;
        self.updates_since_exact += 1;
        if self.updates_since_exact > self.weights.len() + 4096 {
            self.recompute();
        }
    }

    /// Draws `i` with probability `weight[i] / total` for `x` uniform in [0, total). Zero weights
    /// are never drawn (rounding in the running sums can only move a draw to the last positive
    /// weight). At least one weight must be positive.
    #[inline]
    pub fn sample(&self, x: f64) -> usize {
        let mut x = x;
        let last_block = self.blocks.len() - 1;
        let mut b = 0;
        while b < last_block && x >= self.blocks[b] {
            x -= self.blocks[b];
            b += 1;
        }
        let start = b * BLOCK;
        let end = (start + BLOCK).min(self.weights.len());
        let mut last_positive = None;
        for i in start..end {
            let w = self.weights[i];
            if w > 0.0 {
                if x < w {
                    return i;
                }
                x -= w;
                last_positive = Some(i);
            }
        }
        // Only rounding gets here: take the last positive weight of the block, or of all.
        last_positive
            .or_else(|| self.weights.iter().rposition(|&w| w > 0.0))
            .expect("BlockedSums::sample needs a positive weight")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CounterRng, Stream};

    #[test]
    fn updates_and_samples_like_the_weights() {
        let mut w = vec![0.0; 70];
        w[3] = 1.0;
        w[40] = 2.0;
        w[69] = 1.0;
        let mut t = BlockedSums::from_weights(&w);
        assert_eq!(t.total(), 4.0);
        t.set(40, 4.0);
        t.set(3, 0.0);
        t.set(5, 1.0);
        assert_eq!(t.total(), 6.0);
        assert_eq!(t.get(40), 4.0);
        let mut rng = CounterRng::new(5, Stream::Synthetic, 0, 0);
        let mut counts = vec![0u32; 70];
        let n = 120_000;
        for _ in 0..n {
            counts[t.sample(rng.next_f64() * t.total())] += 1;
        }
        assert_eq!(counts.iter().sum::<u32>(), n);
        for (i, p) in [(5, 1.0 / 6.0), (40, 4.0 / 6.0), (69, 1.0 / 6.0)] {
            let sd = (n as f64 * p * (1.0 - p)).sqrt();
            assert!((counts[i] as f64 - n as f64 * p).abs() < 5.0 * sd);
        }
        assert_eq!(t.sample(0.0), 5);
        // Past the total (rounding): the last positive weight, never a zero one.
        assert_eq!(t.sample(6.5), 69);
    }

    #[test]
    fn running_sums_stay_exact_enough_over_many_updates() {
        let k = 1000;
        let mut t = BlockedSums::from_weights(&vec![0.5; k]);
        let mut rng = CounterRng::new(9, Stream::Synthetic, 0, 0);
        for _ in 0..200_000 {
            let i = (rng.next_u32() as usize) % k;
            t.set(i, rng.next_f64() * 1e-3);
        }
        let exact: f64 = (0..k).map(|i| t.get(i)).sum();
        assert!((t.total() - exact).abs() <= 1e-12 * exact);
    }
}
