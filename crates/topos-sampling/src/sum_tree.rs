//! An updatable binary sum tree over `f64` weights (the F+ tree of Yu et al., "A scalable
//! asynchronous distributed algorithm for topic modeling", WWW'15).
//!
//! The exact collapsed Gibbs sampler changes two weights after every token; this tree updates a
//! weight and samples in O(log₂ K). A node is recomputed as the sum of its children on every update
//! (never incremented), so no rounding error accumulates however long the tree lives.

/// A complete binary tree in heap order: node 1 is the root, leaves start at `cap`.
#[derive(Clone, Debug, Default)]
pub struct SumTree {
    nodes: Vec<f64>,
    cap: usize,
    len: usize,
}

impl SumTree {
    /// A tree over `weights`, built in O(K).
    pub fn from_weights(weights: &[f64]) -> Self {
        let mut t = Self::default();
        t.rebuild(weights);
        t
    }

    /// Replaces all weights, reusing the allocation.
    pub fn rebuild(&mut self, weights: &[f64]) {
        let len = weights.len();
        let cap = len.next_power_of_two().max(1);
        self.len = len;
        self.cap = cap;
        self.nodes.clear();
        self.nodes.resize(2 * cap, 0.0);
        self.nodes[cap..cap + len].copy_from_slice(weights);
        for i in (1..cap).rev() {
            self.nodes[i] = self.nodes[2 * i] + self.nodes[2 * i + 1];
        }
    }

    /// Number of weights.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the tree holds no weights.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Sum of all weights.
    #[inline]
    pub fn total(&self) -> f64 {
        self.nodes.get(1).copied().unwrap_or(0.0)
    }

    /// The weight at `i`.
    #[inline]
    pub fn get(&self, i: usize) -> f64 {
        self.nodes[self.cap + i]
    }

    /// Sets the weight at `i` and recomputes its ancestors.
    #[inline]
    pub fn set(&mut self, i: usize, w: f64) {
        debug_assert!(i < self.len && w >= 0.0);
        let mut n = self.cap + i;
        self.nodes[n] = w;
        while n > 1 {
            n >>= 1;
            self.nodes[n] = self.nodes[2 * n] + self.nodes[2 * n + 1];
        }
    }

    /// Draws `i` with probability `weight[i] / total` for `u` uniform in [0, 1). Zero weights are
    /// never drawn. The total must be positive.
    #[inline]
    pub fn sample(&self, u: f64) -> usize {
        let mut x = u * self.total();
        let mut n = 1;
        while n < self.cap {
            let left = self.nodes[2 * n];
            let right = self.nodes[2 * n + 1];
            if x < left || right <= 0.0 {
                n *= 2;
            } else {
                x -= left;
                n = 2 * n + 1;
            }
        }
        n - self.cap
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CounterRng, Stream};

    #[test]
    fn updates_and_samples() {
        let mut t = SumTree::from_weights(&[1.0, 0.0, 2.0, 0.0, 1.0]);
        assert_eq!(t.total(), 4.0);
        t.set(1, 4.0);
        t.set(2, 0.0);
        assert_eq!(t.total(), 6.0);
        assert_eq!(t.get(1), 4.0);
        let mut rng = CounterRng::new(5, Stream::Synthetic, 0, 0);
        let mut counts = [0u32; 5];
        let n = 120_000;
        for _ in 0..n {
            counts[t.sample(rng.next_f64())] += 1;
        }
        assert_eq!(counts[2] + counts[3], 0);
        for (i, p) in [(0, 1.0 / 6.0), (1, 4.0 / 6.0), (4, 1.0 / 6.0)] {
            let sd = (n as f64 * p * (1.0 - p)).sqrt();
            assert!((counts[i] as f64 - n as f64 * p).abs() < 5.0 * sd);
        }
        assert_eq!(t.sample(0.0), 0);
        assert_eq!(t.sample(0.999_999_999), 4);
    }
}
