//! SaberLDA's W-ary sampling tree (Chen et al., SaberLDA §3.2.4, Fig. 6 and 7), W = 32.
//!
//! The bottom level holds the inclusive prefix sums of the weights; the i-th node of a level above
//! is the last prefix sum of the i-th block of W nodes below. Finding where `x` falls is one scan of
//! W contiguous values per level (a warp vote on the GPU, a vectorizable loop on the CPU), so a
//! sample costs O(log_W K) and the build is one prefix sum, O(K). SaberLDA uses it for the dense
//! branch p₂(k) ∝ B̂_vk of ESCA, built once per word per iteration.

/// Branching factor: one warp (32 lanes) or 32 contiguous floats (one 128-byte line).
pub const W: usize = 32;

/// A W-ary sampling tree over non-negative `f32` weights.
#[derive(Clone, Debug, Default)]
pub struct WaryTree {
    /// `levels[0]` is the bottom (prefix sums of the weights, padded to a multiple of W with the
    /// total); each further level has one node per block of W nodes below; the last has ≤ W.
    levels: Vec<Vec<f32>>,
    len: usize,
}

impl WaryTree {
    /// An empty tree; call [`WaryTree::rebuild`] before sampling.
    pub fn new() -> Self {
        Self::default()
    }

    /// A tree over `weights`.
    pub fn from_weights(weights: &[f32]) -> Self {
        let mut t = Self::new();
        t.rebuild(weights.iter().copied());
        t
    }

    /// Rebuilds the tree over new weights, reusing the allocation.
    pub fn rebuild(&mut self, weights: impl ExactSizeIterator<Item = f32>) {
        let n = weights.len();
        self.len = n;
        if self.levels.is_empty() {
            self.levels.push(Vec::new());
        }
        let bottom = &mut self.levels[0];
        bottom.clear();
        let mut acc = 0.0f32;
        for w in weights {
            debug_assert!(w >= 0.0);
            acc += w;
            bottom.push(acc);
        }
        let padded = n.div_ceil(W).max(1) * W;
        bottom.resize(padded, acc);
        let mut level = 0;
        while self.levels[level].len() > W {
            let above: Vec<f32> = self.levels[level].chunks(W).map(|c| c[W - 1]).collect();
            let padded = above.len().div_ceil(W) * W;
            let last = *above.last().unwrap();
            level += 1;
            if self.levels.len() <= level {
                self.levels.push(Vec::new());
            }
            let dst = &mut self.levels[level];
            dst.clear();
            dst.extend_from_slice(&above);
            if dst.len() > W {
                dst.resize(padded, last);
            }
        }
        self.levels.truncate(level + 1);
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
    pub fn total(&self) -> f32 {
        self.levels
            .first()
            .and_then(|b| b.last())
            .copied()
            .unwrap_or(0.0)
    }

    /// The index `i` with `prefix[i-1] <= u·total < prefix[i]`, for `u` uniform in [0, 1):
    /// index `i` is drawn with probability `weight[i] / total`. Zero weights are never drawn.
    /// The total must be positive.
    #[inline]
    pub fn sample(&self, u: f32) -> usize {
        let total = self.total();
        debug_assert!(total > 0.0);
        let x = u * total;
        let mut block = 0usize;
        for level in self.levels.iter().rev() {
            let start = block * W;
            let end = (start + W).min(level.len());
            let nodes = &level[start..end];
            // First node whose prefix exceeds x; rounding can leave none (x ≥ total), then the
            // last block is the right one.
            let off = nodes.iter().position(|&c| c > x).unwrap_or(nodes.len() - 1);
            block = start + off;
        }
        // `block` is now an index into the bottom level; step back over trailing padding or
        // zero-weight entries that rounding could land on.
        let bottom = &self.levels[0];
        let mut i = block.min(self.len - 1);
        while i > 0 && bottom[i] == bottom[i - 1] {
            i -= 1;
        }
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CounterRng, Stream};

    fn check_distribution(weights: &[f32]) {
        let tree = WaryTree::from_weights(weights);
        let total: f32 = weights.iter().sum();
        assert!((tree.total() - total).abs() <= 1e-4 * total);
        let n = 400_000;
        let mut counts = vec![0u32; weights.len()];
        let mut rng = CounterRng::new(11, Stream::Synthetic, 0, weights.len() as u64);
        for _ in 0..n {
            counts[tree.sample(rng.next_f32())] += 1;
        }
        for (i, (&c, &w)) in counts.iter().zip(weights).enumerate() {
            if w == 0.0 {
                assert_eq!(c, 0, "zero weight {i} drawn");
                continue;
            }
            let p = f64::from(w / total);
            let sd = (n as f64 * p * (1.0 - p)).sqrt();
            assert!(
                (c as f64 - n as f64 * p).abs() < 5.0 * sd + 2.0,
                "index {i}: {c} vs {}",
                n as f64 * p
            );
        }
    }

    #[test]
    fn samples_match_weights_at_every_depth() {
        check_distribution(&[1.0]);
        check_distribution(&[0.0, 3.0, 1.0]);
        check_distribution(&(0..32).map(|i| (i % 5) as f32).collect::<Vec<_>>());
        check_distribution(
            &(0..1000)
                .map(|i| ((i * 7919) % 13) as f32)
                .collect::<Vec<_>>(),
        );
        let mut big = vec![0.0f32; 40_000];
        big[0] = 5.0;
        big[33_000] = 2.0;
        big[39_999] = 1.0;
        check_distribution(&big);
    }

    #[test]
    fn extreme_uniforms_stay_in_range() {
        let tree = WaryTree::from_weights(&[0.0, 1.0, 0.0, 2.0, 0.0]);
        assert_eq!(tree.sample(0.0), 1);
        assert_eq!(tree.sample(0.999_999_9), 3);
        let mut t = tree.clone();
        t.rebuild([0.5f32; 100].into_iter());
        assert_eq!(t.len(), 100);
        assert_eq!(t.sample(0.0), 0);
        assert_eq!(t.sample(0.999_999_9), 99);
    }
}
