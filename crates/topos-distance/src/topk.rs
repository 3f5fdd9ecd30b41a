//! Top-k selection without sorting whole rows: a bounded max-heap of the k best (key, index)
//! pairs seen so far, O(n log k) per query and O(k) memory.
//!
//! Order is total and independent of threads: by key, then by index (smaller first). Keys are
//! compared as integers through [`ordered`], which maps every `f64` to a `u64` with the same
//! order (−0 and +0 are one value; every NaN is one value, after +∞), so a NaN distance (SciPy's
//! 0/0 cases) sorts last instead of breaking the comparison.

/// A `u64` whose unsigned order is the numeric order of `x` (NaN last, −0 = +0).
#[inline]
pub fn ordered(x: f64) -> u64 {
    let x = if x.is_nan() { f64::NAN } else { x + 0.0 };
    let bits = x.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    }
}

/// The inverse of [`ordered`].
#[inline]
pub fn from_ordered(u: u64) -> f64 {
    if u >> 63 == 1 {
        f64::from_bits(u & !(1 << 63))
    } else {
        f64::from_bits(!u)
    }
}

/// Up to this k the pairs are kept as a sorted array (an insertion costs a few compares and
/// moves, without the heap's unpredictable branches); above it, as a binary heap.
const SORTED_UP_TO: usize = 32;

/// A (key, index) pair as one integer whose order is (key, then index).
#[inline]
fn pack(key: u64, index: u32) -> u128 {
    (u128::from(key) << 32) | u128::from(index)
}

#[inline]
fn unpack(item: u128) -> (u64, u32) {
    ((item >> 32) as u64, item as u32)
}

/// The k smallest (key, index) pairs of a stream.
#[derive(Clone, Debug)]
pub struct TopK {
    k: usize,
    /// The pairs ([`pack`]ed): sorted ascending when k ≤ [`SORTED_UP_TO`], else a max-heap.
    items: Vec<u128>,
    /// The worst key kept, as f64 (+∞ until k pairs are kept, and while the worst is NaN).
    threshold: f64,
}

impl TopK {
    /// An empty selection of at most `k` pairs.
    pub fn new(k: usize) -> Self {
        Self {
            k,
            items: Vec::with_capacity(k),
            threshold: f64::INFINITY,
        }
    }

    /// Keys strictly above this value cannot enter (a cheap pre-filter for the caller).
    #[inline]
    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    #[inline]
    fn sorted(&self) -> bool {
        self.k <= SORTED_UP_TO
    }

    /// Offers a pair; kept if it is among the k smallest so far.
    #[inline]
    pub fn offer(&mut self, key: f64, index: u32) {
        if self.k == 0 {
            return;
        }
        let item = pack(ordered(key), index);
        let full = self.items.len() == self.k;
        if self.sorted() {
            if full {
                if item >= self.items[self.k - 1] {
                    return;
                }
                self.items.pop();
            }
            let at = self.items.iter().filter(|&&x| x < item).count();
            self.items.insert(at, item);
        } else if !full {
            self.items.push(item);
            self.sift_up(self.items.len() - 1);
        } else if item < self.items[0] {
            self.items[0] = item;
            self.sift_down(0);
        } else {
            return;
        }
        if self.items.len() == self.k {
            self.update_threshold();
        }
    }

    fn update_threshold(&mut self) {
        let worst = if self.sorted() {
            self.items[self.k - 1]
        } else {
            self.items[0]
        };
        let worst = from_ordered(unpack(worst).0);
        self.threshold = if worst.is_nan() { f64::INFINITY } else { worst };
    }

    fn sift_up(&mut self, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.items[i] <= self.items[parent] {
                break;
            }
            self.items.swap(i, parent);
            i = parent;
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.items.len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut largest = i;
            if l < n && self.items[l] > self.items[largest] {
                largest = l;
            }
            if r < n && self.items[r] > self.items[largest] {
                largest = r;
            }
            if largest == i {
                break;
            }
            self.items.swap(i, largest);
            i = largest;
        }
    }

    /// The kept pairs, best first, and an empty selection for the next query.
    pub fn drain_sorted(&mut self) -> impl Iterator<Item = (f64, u32)> + '_ {
        if !self.sorted() {
            self.items.sort_unstable();
        }
        self.threshold = f64::INFINITY;
        self.items.drain(..).map(|x| {
            let (k, i) = unpack(x);
            (from_ordered(k), i)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordered_is_monotone_and_invertible() {
        let xs = [
            f64::NEG_INFINITY,
            -1e300,
            -1.0,
            -1e-300,
            0.0,
            1e-300,
            1.0,
            1e300,
            f64::INFINITY,
            f64::NAN,
        ];
        for w in xs.windows(2) {
            assert!(ordered(w[0]) < ordered(w[1]), "{} < {}", w[0], w[1]);
        }
        assert_eq!(ordered(-0.0), ordered(0.0));
        for &x in &xs[..9] {
            assert_eq!(from_ordered(ordered(x)), x);
        }
        assert!(from_ordered(ordered(-f64::NAN)).is_nan());
    }

    #[test]
    fn keeps_the_k_smallest_with_ties_by_index() {
        let keys = [5.0, 1.0, f64::NAN, 3.0, 1.0, 0.5, 3.0, 9.0];
        let mut t = TopK::new(4);
        for (i, &k) in keys.iter().enumerate() {
            t.offer(k, i as u32);
        }
        assert_eq!(t.threshold(), 3.0);
        let got: Vec<(f64, u32)> = t.drain_sorted().collect();
        assert_eq!(got, vec![(0.5, 5), (1.0, 1), (1.0, 4), (3.0, 3)]);
        // Same result whatever the order of arrival.
        let mut t = TopK::new(4);
        for (i, &k) in keys.iter().enumerate().rev() {
            t.offer(k, i as u32);
        }
        let rev: Vec<(f64, u32)> = t.drain_sorted().collect();
        assert_eq!(rev, vec![(0.5, 5), (1.0, 1), (1.0, 4), (3.0, 3)]);
    }

    #[test]
    fn sorted_array_and_heap_keep_the_same_pairs() {
        // k = 10 is kept sorted, k = 40 as a heap; both must give the 10 / 40 smallest of a
        // stream with ties and NaNs, in (key, index) order.
        let mut x = 12345u64;
        let keys: Vec<f64> = (0..500)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                match x >> 60 {
                    0 => f64::NAN,
                    1 => 0.5,
                    _ => (x >> 11) as f64 / (1u64 << 53) as f64,
                }
            })
            .collect();
        for k in [1, 10, 32, 33, 40, 500] {
            let mut t = TopK::new(k);
            for (i, &key) in keys.iter().enumerate() {
                t.offer(key, i as u32);
            }
            let got: Vec<u32> = t.drain_sorted().map(|p| p.1).collect();
            let mut want: Vec<(u64, u32)> = keys
                .iter()
                .enumerate()
                .map(|(i, &key)| (ordered(key), i as u32))
                .collect();
            want.sort_unstable();
            let want: Vec<u32> = want.iter().take(k).map(|p| p.1).collect();
            assert_eq!(got, want, "k = {k}");
        }
    }

    #[test]
    fn nan_sorts_last_and_is_kept_when_needed() {
        let mut t = TopK::new(3);
        t.offer(f64::NAN, 0);
        t.offer(2.0, 1);
        t.offer(f64::NAN, 2);
        assert_eq!(t.threshold(), f64::INFINITY);
        t.offer(1.0, 3);
        let got: Vec<u32> = t.drain_sorted().map(|p| p.1).collect();
        assert_eq!(got, vec![3, 1, 0]);
    }
}
