//! Walker's alias method in Vose's O(K) construction ("A linear algorithm for generating random
//! numbers with a given distribution", 1991): O(1) per sample after the build. SaberLDA §3.2.4
//! rejects it on the GPU because the build is sequential; on the CPU it competes with the W-ary
//! tree for ESCA's dense branch.

/// An alias table over non-negative weights.
#[derive(Clone, Debug, Default)]
pub struct AliasTable {
    prob: Vec<f32>,
    alias: Vec<u32>,
    total: f64,
    small: Vec<u32>,
    large: Vec<u32>,
    scaled: Vec<f64>,
}

impl AliasTable {
    /// A table over `weights`.
    pub fn from_weights(weights: &[f32]) -> Self {
        let mut t = Self::default();
        t.rebuild(weights);
        t
    }

    /// Rebuilds over new weights, reusing the allocations.
    pub fn rebuild(&mut self, weights: &[f32]) {
        let n = weights.len();
        self.total = weights.iter().map(|&w| f64::from(w)).sum();
        self.prob.clear();
        self.prob.resize(n, 1.0);
        self.alias.clear();
        self.alias.extend(0..n as u32);
        if n == 0 || self.total <= 0.0 {
            return;
        }
        self.scaled.clear();
        let scale = n as f64 / self.total;
        self.scaled
            .extend(weights.iter().map(|&w| f64::from(w) * scale));
        self.small.clear();
        self.large.clear();
        for (i, &s) in self.scaled.iter().enumerate() {
            if s < 1.0 {
                self.small.push(i as u32);
            } else {
                self.large.push(i as u32);
            }
        }
        while let (Some(&s), Some(&l)) = (self.small.last(), self.large.last()) {
            self.small.pop();
            self.prob[s as usize] = self.scaled[s as usize] as f32;
            self.alias[s as usize] = l;
            self.scaled[l as usize] -= 1.0 - self.scaled[s as usize];
            if self.scaled[l as usize] < 1.0 {
                self.large.pop();
                self.small.push(l);
            }
        }
        // Leftovers are 1 up to rounding.
        for &i in self.small.iter().chain(self.large.iter()) {
            self.prob[i as usize] = 1.0;
        }
    }

    /// Sum of the weights.
    pub fn total(&self) -> f64 {
        self.total
    }

    /// Number of weights.
    pub fn len(&self) -> usize {
        self.prob.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.prob.is_empty()
    }

    /// Draws an index from a uniform `u` in [0, 1) (one number: the integer part picks the column,
    /// the fraction decides between it and its alias).
    #[inline]
    pub fn sample(&self, u: f64) -> usize {
        let n = self.prob.len();
        let x = u * n as f64;
        let col = (x as usize).min(n - 1);
        let frac = (x - col as f64) as f32;
        if frac < self.prob[col] {
            col
        } else {
            self.alias[col] as usize
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CounterRng, Stream};

    #[test]
    fn alias_matches_weights() {
        let w = [0.5f32, 0.0, 3.0, 1.5, 0.0, 5.0];
        let t = AliasTable::from_weights(&w);
        let total: f32 = w.iter().sum();
        let n = 300_000;
        let mut counts = [0u32; 6];
        let mut rng = CounterRng::new(2, Stream::Synthetic, 0, 0);
        for _ in 0..n {
            counts[t.sample(rng.next_f64())] += 1;
        }
        for i in 0..6 {
            let p = f64::from(w[i] / total);
            if p == 0.0 {
                assert_eq!(counts[i], 0);
            } else {
                let sd = (n as f64 * p * (1.0 - p)).sqrt();
                assert!((counts[i] as f64 - n as f64 * p).abs() < 5.0 * sd);
            }
        }
    }
}
