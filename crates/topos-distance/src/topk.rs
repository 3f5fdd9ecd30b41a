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

/// The k smallest (key, index) pairs of a stream.
#[derive(Clone, Debug)]
pub struct TopK {
    k: usize,
    /// Max-heap on (ordered key, index).
    heap: Vec<(u64, u32)>,
    /// The worst key kept, as f64 (+∞ until the heap is full, and while the worst is NaN).
    threshold: f64,
}

impl TopK {
    /// An empty selection of at most `k` pairs.
    pub fn new(k: usize) -> Self {
        Self {
            k,
            heap: Vec::with_capacity(k),
            threshold: f64::INFINITY,
        }
    }

    /// Keys strictly above this value cannot enter (a cheap pre-filter for the caller).
    #[inline]
    pub fn threshold(&self) -> f64 {
        self.threshold
    }

    /// Offers a pair; kept if it is among the k smallest so far.
    #[inline]
    pub fn offer(&mut self, key: f64, index: u32) {
        if self.k == 0 {
            return;
        }
        let item = (ordered(key), index);
        if self.heap.len() < self.k {
            self.heap.push(item);
            self.sift_up(self.heap.len() - 1);
            if self.heap.len() == self.k {
                self.update_threshold();
            }
        } else if item < self.heap[0] {
            self.heap[0] = item;
            self.sift_down(0);
            self.update_threshold();
        }
    }

    fn update_threshold(&mut self) {
        let worst = from_ordered(self.heap[0].0);
        self.threshold = if worst.is_nan() { f64::INFINITY } else { worst };
    }

    fn sift_up(&mut self, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.heap[i] <= self.heap[parent] {
                break;
            }
            self.heap.swap(i, parent);
            i = parent;
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut largest = i;
            if l < n && self.heap[l] > self.heap[largest] {
                largest = l;
            }
            if r < n && self.heap[r] > self.heap[largest] {
                largest = r;
            }
            if largest == i {
                break;
            }
            self.heap.swap(i, largest);
            i = largest;
        }
    }

    /// The kept pairs, best first, and an empty selection for the next query.
    pub fn drain_sorted(&mut self) -> impl Iterator<Item = (f64, u32)> + '_ {
        self.heap.sort_unstable();
        self.threshold = f64::INFINITY;
        self.heap.drain(..).map(|(k, i)| (from_ordered(k), i))
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
