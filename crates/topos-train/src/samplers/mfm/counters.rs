//! Mean-for-Mode's approximate counters (Tristan et al. §4.1, after Morris 1978): a count kept
//! in 8 or 4 bits as the index X of a level L(X) on a geometric scale, as Morris's counter keeps
//! log_a of its count, with an exact start as in Csűrös's floating-point counters: L(x) = x up
//! to a few, then levels a ratio r apart, so that the many small counts of a sparse model stay
//! exact and the few large ones are kept to a few per cent.
//!
//! **Why rounding, not Morris's increments.** Morris increments X in place with probability
//! a^(−X); under parallel sampling the order of the increments to one counter depends on the
//! threads' timing, and so does the value, which would break the sampler's promise of the same
//! model for any number of threads. Mean-for-Mode clears its counts every iteration (§4.1:
//! "the only updates to their entries are increments"), so the sweep can count exactly and the
//! commit round each count n once, without bias, to one of the two levels around it:
//! L(x) ≤ n < L(x + 1), X = x + 1 with probability (n − L(x)) / (L(x + 1) − L(x)). The random
//! number is keyed by (seed, iteration, counter), so the value does not depend on the threads.
//! E[L(X)] = n exactly, as for Morris's estimator, and the variance is smaller: (n − L(x))
//! (L(x + 1) − n), a relative standard error of at most (r − 1) / (2√r) between levels r apart,
//! against √((a − 1)/2) for Morris's counter of base a.
//!
//! Levels are integers, so sums of estimates (the topic totals n_k) are exact and order-free.
//!
//! **Levels stretched to the run** ([`CounterScale`]). Morris chooses the base of his counter
//! from the largest count it must hold (1978, §2: a register of b bits and a base a cover counts
//! up to about a^(2^b)). No counter of a run can exceed the largest count one cell can reach: the
//! tokens of the corpus's most frequent word (a word's cell) or of its longest document (a
//! document's cell). So the geometric part of the scale ends there rather than at a width-wide
//! constant: on 20 Newsgroups (6,729 and 5,651) approx4's ratio is 1.9 instead of 3.65 and its
//! worst relative error 35% instead of 69% (approx8's 1.7% instead of 5.9%), which took approx4's held-out loss against exact
//! counters from 0.06-0.11 to about 0.02 nats/token (BENCHMARKS.md, "mfm with its own draw
//! removed"). Every worker derives the same bound from the whole corpus, so the model stays a
//! function of the seed.

use std::sync::Arc;

/// How wide each count is kept (`--counters`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CounterWidth {
    /// 32-bit exact counts.
    Exact,
    /// 8-bit counters: exact up to 16, then 239 levels a constant ratio apart up to the run's
    /// largest count ([`CounterScale`]): 1.7% apart for 20 Newsgroups, 8.8% for a count of 2³³;
    /// relative standard error at most 1.7% and 5.9% there.
    Approx8,
    /// 4-bit counters: 0, 1, 2, 3, then 12 levels a constant ratio apart up to the run's largest
    /// count: 1.9 times apart for 20 Newsgroups, 3.65 for 2²⁴; relative standard error at most
    /// 35% and 69% there.
    Approx4,
}

impl CounterWidth {
    /// Every width, exact first.
    pub const ALL: [CounterWidth; 3] = [
        CounterWidth::Exact,
        CounterWidth::Approx8,
        CounterWidth::Approx4,
    ];

    /// Bits a count takes (what checkpoints and models record).
    pub const fn bits(self) -> u32 {
        match self {
            CounterWidth::Exact => 32,
            CounterWidth::Approx8 => 8,
            CounterWidth::Approx4 => 4,
        }
    }
    /// The width of `bits` bits.
    pub fn from_bits(bits: u32) -> Option<CounterWidth> {
        CounterWidth::ALL.into_iter().find(|w| w.bits() == bits)
    }
    /// The name on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            CounterWidth::Exact => "exact",
            CounterWidth::Approx8 => "approx8",
            CounterWidth::Approx4 => "approx4",
        }
    }
    /// The width named `name`.
    pub fn from_name(name: &str) -> Option<CounterWidth> {
        CounterWidth::ALL.into_iter().find(|w| w.name() == name)
    }

    /// Its registers' levels and the integers kept exactly below the geometric part (`None`
    /// when exact).
    fn shape(self) -> Option<(usize, u64)> {
        match self {
            CounterWidth::Exact => None,
            CounterWidth::Approx8 => Some((256, 16)),
            CounterWidth::Approx4 => Some((16, 3)),
        }
    }
}

/// The counters of a run: a width, and for an approximate one its levels L(0) = 0 < L(1) < …,
/// whose geometric part ends at the largest count any counter of the run can hold (the module's
/// documentation says why). Cheap to clone (the levels are shared).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CounterScale {
    width: CounterWidth,
    levels: Option<Arc<[u64]>>,
}

impl CounterScale {
    /// The scale of `width` for counts up to `largest` (a count beyond it saturates at the top
    /// level; levels are consecutive integers while `largest` is smaller than their number).
    pub fn new(width: CounterWidth, largest: u64) -> Self {
        let levels = width.shape().map(|(count, exact)| {
            geometric_levels(count, exact, largest.max(count as u64 - 1)).into()
        });
        CounterScale { width, levels }
    }
    /// The scale of a run over the documents `docs` whose words have `word_tokens` tokens each
    /// (every worker passes the whole corpus, so all derive the same levels): counts up to the
    /// larger of the most frequent word's tokens and the longest document's.
    pub fn for_corpus(
        width: CounterWidth,
        docs: topos_corpus::Docs<'_>,
        word_tokens: &[u64],
    ) -> Self {
        if width == CounterWidth::Exact {
            return CounterScale::new(width, 0);
        }
        let word = word_tokens.iter().copied().max().unwrap_or(0);
        let doc = docs
            .offsets()
            .windows(2)
            .map(|w| w[1] - w[0])
            .max()
            .unwrap_or(0);
        CounterScale::new(width, word.max(doc))
    }
    /// The width.
    pub fn width(&self) -> CounterWidth {
        self.width
    }
    /// The levels (`None` when exact).
    pub fn levels(&self) -> Option<&[u64]> {
        self.levels.as_deref()
    }

    /// The register that keeps `n`: `n` itself when exact, else the index of a level around it
    /// chosen by `u` (uniform in [0, 1)) so that the level's mean is `n` (saturating at the top).
    pub fn round(&self, n: u64, u: f64) -> u32 {
        let Some(levels) = self.levels() else {
            return n.min(u64::from(u32::MAX)) as u32;
        };
        let top = levels.len() - 1;
        if n >= levels[top] {
            return top as u32;
        }
        // levels[x] ≤ n < levels[x + 1].
        let x = levels.partition_point(|&l| l <= n) - 1;
        let (lo, hi) = (levels[x], levels[x + 1]);
        let up = (n - lo) as f64 / (hi - lo) as f64;
        if u < up {
            x as u32 + 1
        } else {
            x as u32
        }
    }

    /// The count a register stands for.
    #[inline]
    pub fn estimate(&self, register: u32) -> u64 {
        match &self.levels {
            None => u64::from(register),
            Some(levels) => levels[register as usize],
        }
    }

    /// The largest relative standard error of a rounded count: between levels lo < hi more
    /// than one apart it is at most (hi − lo) / (2√(lo·hi)) (the peak of √((n − lo)(hi − n)) /
    /// n); counts on a level are exact.
    pub fn worst_relative_error(&self) -> f64 {
        self.levels().map_or(0.0, |l| {
            l.windows(2)
                .filter(|w| w[0] > 0 && w[1] - w[0] > 1)
                .map(|w| (w[1] - w[0]) as f64 / (2.0 * (w[0] as f64 * w[1] as f64).sqrt()))
                .fold(0.0, f64::max)
        })
    }
}

/// `count` integer levels: L(x) = x up to `exact`, then L(x) = round(exact · r^(x − exact)) with
/// r such that the last is `top` (and each at least one above the one before).
fn geometric_levels(count: usize, exact: u64, top: u64) -> Vec<u64> {
    let steps = (count - 1) as f64 - exact as f64;
    let r = (top as f64 / exact as f64).powf(1.0 / steps);
    let mut out: Vec<u64> = (0..=exact).collect();
    while out.len() < count {
        let x = (out.len() as u64 - exact) as i32;
        let l = ((exact as f64 * r.powi(x)).round() as u64).max(out[out.len() - 1] + 1);
        out.push(l);
    }
    out
}

/// Registers of one width, stored at that width: 4 bytes each when exact, 1 byte for 8 bits,
/// two to a byte for 4 bits.
#[derive(Clone, Debug)]
pub struct Registers {
    scale: CounterScale,
    len: usize,
    bytes: Vec<u8>,
    exact: Vec<u32>,
}

impl Registers {
    /// No registers, of `scale`.
    pub fn new(scale: CounterScale) -> Self {
        Registers {
            scale,
            len: 0,
            bytes: Vec::new(),
            exact: Vec::new(),
        }
    }
    /// Their width.
    pub fn width(&self) -> CounterWidth {
        self.scale.width
    }
    /// How many.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Appends a register (a value [`CounterWidth::round`] returned).
    pub fn push(&mut self, register: u32) {
        match self.scale.width {
            CounterWidth::Exact => self.exact.push(register),
            CounterWidth::Approx8 => self.bytes.push(register as u8),
            CounterWidth::Approx4 => {
                if self.len.is_multiple_of(2) {
                    self.bytes.push(register as u8 & 0x0f);
                } else {
                    *self.bytes.last_mut().expect("the first nibble") |= (register as u8) << 4;
                }
            }
        }
        self.len += 1;
    }
    /// Appends every register of `other` (same width).
    pub fn extend(&mut self, other: &Registers) {
        debug_assert_eq!(self.scale, other.scale);
        if self.scale.width == CounterWidth::Approx4 && !self.len.is_multiple_of(2) {
            for i in 0..other.len {
                self.push(other.get(i));
            }
            return;
        }
        self.exact.extend_from_slice(&other.exact);
        self.bytes.extend_from_slice(&other.bytes);
        self.len += other.len;
    }
    /// The `i`-th register.
    #[inline]
    pub fn get(&self, i: usize) -> u32 {
        match self.scale.width {
            CounterWidth::Exact => self.exact[i],
            CounterWidth::Approx8 => u32::from(self.bytes[i]),
            CounterWidth::Approx4 => u32::from((self.bytes[i / 2] >> ((i % 2) * 4)) & 0x0f),
        }
    }
    /// The count the `i`-th register stands for.
    #[inline]
    pub fn estimate(&self, i: usize) -> u64 {
        self.scale.estimate(self.get(i))
    }
    /// Bytes they take.
    pub fn bytes(&self) -> usize {
        self.bytes.len() + 4 * self.exact.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use topos_sampling::{CounterRng, Stream};

    #[test]
    fn levels_start_exact_and_grow_geometrically() {
        let s8 = CounterScale::new(CounterWidth::Approx8, 1 << 33);
        let l8 = s8.levels().unwrap();
        assert_eq!(l8.len(), 256);
        assert_eq!(&l8[..18], &(0..18).collect::<Vec<u64>>()[..]);
        assert!(l8.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(l8[255], 1 << 33);
        // About 8.8% apart once past the integers.
        let r = l8[200] as f64 / l8[199] as f64;
        assert!((r - 1.0877).abs() < 1e-3, "{r}");
        let s4 = CounterScale::new(CounterWidth::Approx4, 1 << 24);
        let l4 = s4.levels().unwrap();
        assert_eq!(&l4[..6], &[0, 1, 2, 3, 11, 40]);
        assert_eq!(l4[15], 1 << 24);
        // The error bounds the widths' documentation states, at 2³³ and 2²⁴ and at 20
        // Newsgroups' largest count (its most frequent word's 6,729 tokens).
        let e8 = s8.worst_relative_error();
        let e4 = s4.worst_relative_error();
        assert!((0.058..=0.060).contains(&e8), "{e8}");
        assert!((0.68..=0.70).contains(&e4), "{e4}");
        let e8 = CounterScale::new(CounterWidth::Approx8, 6_729).worst_relative_error();
        let e4 = CounterScale::new(CounterWidth::Approx4, 6_729).worst_relative_error();
        assert!((0.015..=0.018).contains(&e8), "{e8}");
        assert!((0.34..=0.36).contains(&e4), "{e4}");
        // Fewer counts than levels: every level an integer, every count exact.
        let small = CounterScale::new(CounterWidth::Approx8, 100);
        assert_eq!(small.levels().unwrap(), &(0..256).collect::<Vec<u64>>()[..]);
        assert_eq!(small.worst_relative_error(), 0.0);
        // The top is the largest count.
        assert_eq!(
            *CounterScale::new(CounterWidth::Approx4, 6_729)
                .levels()
                .unwrap()
                .last()
                .unwrap(),
            6_729
        );
    }

    #[test]
    fn registers_pack_at_their_width_and_read_back() {
        for w in CounterWidth::ALL {
            let scale = CounterScale::new(w, 1 << 20);
            let top = scale.levels().map_or(1_000_000, |l| l.len() as u32 - 1);
            let values: Vec<u32> = (0..37).map(|i| (i * 7) % (top + 1)).collect();
            let mut r = Registers::new(scale.clone());
            let mut half = Registers::new(scale);
            for (i, &v) in values.iter().enumerate() {
                if i < 5 {
                    r.push(v);
                } else {
                    half.push(v);
                }
            }
            r.extend(&half);
            assert_eq!(r.len(), values.len());
            for (i, &v) in values.iter().enumerate() {
                assert_eq!(r.get(i), v, "{w:?} {i}");
            }
            let expect = match w {
                CounterWidth::Exact => 4 * 37,
                CounterWidth::Approx8 => 37,
                CounterWidth::Approx4 => 19,
            };
            assert_eq!(r.bytes(), expect, "{w:?}");
        }
    }

    /// The statistical test of the counters: for counts n across the scale, the mean of many
    /// independent roundings is n within 5 standard errors, and the relative standard deviation
    /// stays within its bound ([`CounterScale::worst_relative_error`], plus 5% for sampling),
    /// for the widths' scales at a large and a small largest count. With 4,000 roundings per
    /// count and about 50 counts over the four scales, a 5-σ false alarm on a correct counter is below 1 in
    /// 10⁴ for the whole test (two-sided normal tail 5.7 · 10⁻⁷ per mean).
    #[test]
    fn rounding_is_unbiased_with_the_stated_relative_error() {
        let trials = 4000u64;
        for w in [
            CounterScale::new(CounterWidth::Approx8, 1 << 33),
            CounterScale::new(CounterWidth::Approx4, 1 << 24),
            CounterScale::new(CounterWidth::Approx8, 6_729),
            CounterScale::new(CounterWidth::Approx4, 6_729),
        ] {
            let bound = w.worst_relative_error();
            let mut n = 1u64;
            while n < w.levels().unwrap().last().copied().unwrap() / 2 {
                let mut sum = 0.0;
                let mut sq = 0.0;
                for t in 0..trials {
                    let u = CounterRng::new(9, Stream::Synthetic, n as u32, t).next_f64();
                    let e = w.estimate(w.round(n, u)) as f64;
                    sum += e;
                    sq += e * e;
                }
                let mean = sum / trials as f64;
                let var = (sq / trials as f64 - mean * mean).max(0.0);
                let se = (var / trials as f64).sqrt();
                assert!(
                    (mean - n as f64).abs() <= 5.0 * se + 1e-9,
                    "{w:?}: n {n}, mean {mean}, se {se}"
                );
                let rel = var.sqrt() / n as f64;
                assert!(
                    rel <= bound * 1.05 + 1e-9,
                    "{w:?}: n {n}, rel sd {rel} > {bound}"
                );
                n = n * 3 + 1;
            }
        }
        // Exact keeps the count; a count beyond the top level saturates.
        assert_eq!(
            CounterScale::new(CounterWidth::Exact, 0).round(123_456, 0.9),
            123_456
        );
        assert_eq!(
            CounterScale::new(CounterWidth::Approx4, 1 << 24).round(u64::MAX, 0.0),
            15
        );
    }
}
