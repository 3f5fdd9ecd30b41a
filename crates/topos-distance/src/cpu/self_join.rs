//! The self-join: k-NN of every index row against the index itself, each pair computed once.
//!
//! For a [symmetric](Kernel::SYMMETRIC) kernel the accumulator of rows (i, r) is that of
//! (r, i), bit for bit: the same products, summed over the same shared columns in the same
//! (ascending) order. So query i walks only the index entries of rows r ≥ i (the upper
//! triangle: half the scatter), and each pair's accumulator yields both keys, i's key of r
//! (offered to i's selection) and r's key of i (offered to r's). Every pair is expanded once
//! in each direction, as in the dense scan; only the intersection pass is halved, which is
//! where a corpus of common words spends its time (20 Newsgroups: 3.8·10⁸ intersecting pairs
//! for 10⁸ row pairs).
//!
//! **Batches.** Query batches must come in ascending order from row 0: row r's selection is
//! complete once queries 0..=r have run (the pairs with i < r arrived from those queries, the
//! pairs with i ≥ r from r's own), so each batch's answers are final when it ends, and the
//! selections of later rows wait in the state meanwhile: O(n·k) memory, the size of the answer
//! itself. A batch out of order, or queries that are not the index's own rows, take the
//! ordinary path (same answers).
//!
//! **Threads.** A row's selection can receive offers from several queries at once; it sits
//! behind a mutex, and a lock-free copy of its limit (threshold plus error slack, which only
//! falls) lets almost every offer be rejected without locking. The selection keeps the k
//! smallest (key, index) pairs, a total order, and every pair's key is a function of the pair
//! alone, so the answers do not depend on which thread offers first: bit-identical for any
//! number of threads, and to the ordinary path.
//!
//! **When.** Only for indexes whose queries touch most rows on average (Σⱼ df(j)² ≥ n²/2, with
//! df(j) the rows holding column j): a sparse corpus is cheaper on the ordinary path, which
//! expands only the touched rows; this one expands every pair.

use super::{any_not_above, block_counts, fold, offer_pair, Prepared, Scratch, EXPAND_BLOCK};
use crate::backend::Neighbors;
use crate::kernel::{Kernel, QueryView};
use crate::topk::TopK;
use crate::CsrMatrix;
use std::cmp::Ordering as Cmp;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The largest self-join state (n selections of k pairs) the engine keeps; beyond it the
/// ordinary path runs.
const MAX_STATE_BYTES: usize = 2 << 30;

/// Queries a worker answers between renewals of its snapshot of the rows' limits.
const SNAPSHOT_QUERIES: usize = 16;

/// The selections of the rows whose answers are not yet final.
pub(super) struct SelfJoin {
    k: usize,
    /// The first row of the next batch.
    next: usize,
    /// Per index row, the best (key, index) pairs offered so far.
    best: Vec<Mutex<TopK>>,
    /// Per index row, its selection's threshold plus the row's error slack as a query
    /// (`f64` bits): a key above it cannot enter.
    limit: Vec<AtomicU64>,
}

impl SelfJoin {
    fn new(n: usize, k: usize) -> SelfJoin {
        SelfJoin {
            k,
            next: 0,
            best: (0..n).map(|_| Mutex::new(TopK::new(k))).collect(),
            limit: (0..n)
                .map(|_| AtomicU64::new(f64::INFINITY.to_bits()))
                .collect(),
        }
    }
}

impl<'a, K: Kernel + 'a> Prepared<'a, K> {
    /// Whether the index's queries touch most of its rows on average: Σⱼ df(j)² ≥ n²/2.
    pub(super) fn pairs_dense(csc_offsets: &[u64], n_rows: usize) -> bool {
        let pairs: f64 = csc_offsets
            .windows(2)
            .map(|w| (w[1] - w[0]) as f64)
            .map(|df| df * df)
            .sum();
        pairs >= (n_rows as f64).powi(2) / 2.0
    }

    /// Whether rows `rows` of `queries` are the index's own rows, bit for bit.
    fn same_rows(&self, queries: &CsrMatrix, rows: &Range<usize>) -> bool {
        rows.end <= self.csr.n_rows()
            && queries.n_cols() == self.csr.n_cols()
            && rows.clone().all(|r| {
                let (a, b) = (queries.row(r), self.csr.row(r));
                a.indices == b.indices
                    && a.values.len() == b.values.len()
                    && a.values
                        .iter()
                        .zip(b.values)
                        .all(|(x, y)| x.to_bits() == y.to_bits())
            })
    }

    /// The batch `rows` by the self-join, if it can take that path (see the module
    /// documentation); `None` sends it down the ordinary path. The queries must be a matrix of
    /// all the index's rows: a caller that asks for a few rows' neighbours passes those rows
    /// alone, and the self-join would spend its reverse half on rows never asked for.
    pub(super) fn knn_self_join(
        &self,
        queries: &CsrMatrix,
        rows: &Range<usize>,
        k: usize,
        exclude_self: bool,
    ) -> Option<Neighbors> {
        // Per row: its selection's mutex, vector and limit (~72 bytes with the allocation's
        // header) and k pairs of 16 bytes.
        let state_bytes = self.csr.n_rows().saturating_mul(k.saturating_mul(16) + 72);
        if !K::SYMMETRIC
            || K::NEEDS_QUERY_ORDER
            || !self.pairs_dense
            || state_bytes > MAX_STATE_BYTES
            || queries.n_rows() != self.csr.n_rows()
            || !self.same_rows(queries, rows)
        {
            return None;
        }
        let mut guard = self.self_join.lock().unwrap_or_else(|e| e.into_inner());
        if rows.start == 0 {
            *guard = Some(SelfJoin::new(self.csr.n_rows(), k));
        }
        let state = guard
            .as_mut()
            .filter(|s| s.next == rows.start && s.k == k)?;
        // Invalid until the batch completes: a batch that panics leaves a state that only a
        // new self-join from row 0 replaces.
        state.next = usize::MAX;
        let start = rows.start;
        let shared: &SelfJoin = state;
        super::parallel_chunks(
            rows.len(),
            || self.scratch(k),
            |s, range| {
                for i in range {
                    self.self_join_query(start + i, exclude_self, s, shared);
                }
            },
        );
        let mut out = Neighbors {
            k,
            indices: Vec::with_capacity(rows.len() * k),
            distances: Vec::with_capacity(rows.len() * k),
        };
        for r in rows.clone() {
            let mut best = std::mem::replace(
                &mut *state.best[r].lock().unwrap_or_else(|e| e.into_inner()),
                TopK::new(0),
            );
            for (key, i) in best.drain_sorted() {
                out.indices.push(i);
                out.distances.push(self.kernel.distance(key) as f32);
            }
        }
        state.next = rows.end;
        if state.next == self.csr.n_rows() {
            *guard = None;
        }
        Some(out)
    }

    /// Query row `i` against index rows i.. (see the module documentation).
    fn self_join_query(&self, i: usize, exclude_self: bool, s: &mut Scratch, state: &SelfJoin) {
        let k = &self.kernel;
        let ix = self.view();
        let q = QueryView::of_index_row(&ix, i);
        let n = self.csr.n_rows();
        let acc: &mut [f64] = &mut s.acc;
        let count: &mut [u32] = &mut s.count;
        if s.cursor.is_empty() {
            s.cursor = vec![0; self.csr.n_cols()];
        }
        // Pass 1: the intersection, upper triangle only (each column lists its rows in order).
        for (p, (&j, &a)) in q.row.indices.iter().zip(q.row.values).enumerate() {
            if let Some(&next) = q.row.indices.get(p + 2) {
                self.csc
                    .prefetch_at(s.cursor[next as usize].max(self.csc.col_offsets[next as usize]));
            }
            // The column's first entry at or after row i: this worker's queries come in
            // ascending order, so its cursor only moves forward.
            let end = self.csc.col_offsets[j as usize + 1] as usize;
            let cursor = &mut s.cursor[j as usize];
            let mut from = (*cursor as usize).max(self.csc.col_offsets[j as usize] as usize);
            while from < end && (self.csc.entries[from].0 as usize) < i {
                from += 1;
            }
            *cursor = from as u64;
            for &(r, b) in &self.csc.entries[from..end] {
                fold(k, a, b, &q, &ix, r as usize, acc, count);
            }
        }
        // Pass 2, i's keys of rows i.., straight into its shared selection, whose threshold
        // already reflects the pairs that earlier queries offered it.
        let slack = k.max_error(&q, &ix);
        {
            let mut best = state.best[i].lock().unwrap_or_else(|e| e.into_inner());
            let limit = best.threshold() + slack;
            let offer = |r: usize, a: f64, c: u32, sink: &mut TopK, limit: &mut f64| -> bool {
                offer_pair(k, &q, &ix, r, a, c, slack, sink, limit)
            };
            let skip = exclude_self.then_some(i);
            let limit = self.offer_block(
                i..n,
                skip,
                &q,
                &ix,
                acc,
                count,
                false,
                &mut *best,
                limit,
                &offer,
            );
            state.limit[i].store(limit.to_bits(), Ordering::Relaxed);
        }
        // Pass 3, the keys of rows i+1.. as queries of index row i, each into its row's
        // selection. Then the accumulators are zeroed for the next query. The rows' limits are
        // read from this worker's snapshot of the shared ones, renewed every few queries: a
        // limit only falls, so a stale one lets more keys through to the shared test, never
        // fewer, and a block of keys is tested against it in a vectorized loop.
        if s.snapshot.len() != n || s.snapshot_age >= SNAPSHOT_QUERIES {
            s.snapshot.resize(n, f64::INFINITY);
            for (v, l) in s.snapshot[i..].iter_mut().zip(&state.limit[i..]) {
                *v = f64::from_bits(l.load(Ordering::Relaxed));
            }
            s.snapshot_age = 0;
        }
        s.snapshot_age += 1;
        let snapshot: &mut [f64] = &mut s.snapshot;
        let mut keys = [0f64; EXPAND_BLOCK];
        let mut base = i + 1;
        while base < n {
            let end = (base + EXPAND_BLOCK).min(n);
            let keys = &mut keys[..end - base];
            let counts = block_counts::<K>(count, base..end);
            k.keys_transposed(&acc[base..end], counts, &ix, base, i, keys);
            if !any_not_above(keys, |t| snapshot[base + t]) {
                base = end;
                continue;
            }
            for (t, &key) in keys.iter().enumerate() {
                let r = base + t;
                if key.partial_cmp(&snapshot[r]) == Some(Cmp::Greater) {
                    continue;
                }
                let limit = f64::from_bits(state.limit[r].load(Ordering::Relaxed));
                snapshot[r] = limit;
                if key.partial_cmp(&limit) != Some(Cmp::Greater) {
                    let qr = QueryView::of_index_row(&ix, r);
                    let slack_r = k.max_error(&qr, &ix);
                    let c = if K::NEEDS_COUNT { count[r] } else { 0 };
                    let mut best = state.best[r].lock().unwrap_or_else(|e| e.into_inner());
                    // The limit again, under the lock: other queries may have lowered it.
                    let mut limit = best.threshold() + slack_r;
                    offer_pair(k, &qr, &ix, i, acc[r], c, slack_r, &mut *best, &mut limit);
                    state.limit[r].store(limit.to_bits(), Ordering::Relaxed);
                    snapshot[r] = limit;
                }
            }
            base = end;
        }
        acc[i..].fill(0.0);
        if K::NEEDS_COUNT {
            count[i..].fill(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::with_kernel;
    use crate::Metric;

    /// Rows of awkward kinds with about `density` non-zeros: empty rows, one-value rows,
    /// duplicates, near-duplicates, negated rows (when `signed`), constant rows, mixed scales.
    fn matrix(seed: u64, n_rows: usize, n_cols: usize, density: f64, signed: bool) -> CsrMatrix {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut unit = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut rows: Vec<Vec<f32>> = Vec::new();
        for i in 0..n_rows {
            let mut row = vec![0f32; n_cols];
            match i % 8 {
                0 => {}
                1 => row[(unit() * n_cols as f64) as usize] = 1.5,
                2 if i > 2 => row = rows[(unit() * i as f64) as usize].clone(),
                3 => row.fill(2.0),
                6 if signed => {
                    // Anti-parallel to an earlier row: cosine and correlation at their top, 2.
                    row = rows[(unit() * i as f64) as usize]
                        .iter()
                        .map(|v| -v)
                        .collect();
                }
                4 if i > 4 => {
                    row = rows[(unit() * i as f64) as usize].clone();
                    if let Some(v) = row.iter_mut().find(|v| **v != 0.0) {
                        *v *= 1.0 + 1e-4;
                    }
                }
                _ => {
                    let scale = [1e-3f32, 1.0, 1e3][i % 3];
                    for v in row.iter_mut() {
                        if unit() < density {
                            let s = if signed && unit() < 0.5 { -1.0 } else { 1.0 };
                            *v = s * scale * (0.05 + 2.0 * unit()) as f32;
                        }
                    }
                }
            }
            rows.push(row);
        }
        CsrMatrix::from_dense(&rows, n_cols).unwrap()
    }

    fn bits(n: &Neighbors) -> (Vec<u32>, Vec<u32>) {
        let d = n.distances.iter().map(|x| x.to_bits()).collect();
        (n.indices.clone(), d)
    }

    fn check<K: Kernel>(m: &CsrMatrix, metric: Metric, kernel: K) {
        let p = Prepared::new(m, metric, kernel);
        let n = m.n_rows();
        if !K::SYMMETRIC {
            assert!(p.knn_self_join(m, &(0..n), 3, false).is_none(), "{metric}");
            return;
        }
        assert!(p.pairs_dense, "{metric}");
        for exclude_self in [false, true] {
            for k in [1, 4, n - 1] {
                let want = bits(&p.knn_ordinary(m, 0..n, k, exclude_self));
                let whole = p.knn_self_join(m, &(0..n), k, exclude_self).unwrap();
                assert_eq!(
                    bits(&whole),
                    want,
                    "{metric} k = {k}, exclude_self {exclude_self}"
                );
                // Batches in order, on three threads.
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(3)
                    .build()
                    .unwrap();
                let batched = pool.install(|| {
                    let mut out = p.knn_self_join(m, &(0..7), k, exclude_self).unwrap();
                    for b in (7..n).step_by(7) {
                        let rows = b..(b + 7).min(n);
                        out.extend(p.knn_self_join(m, &rows, k, exclude_self).unwrap());
                    }
                    out
                });
                assert_eq!(bits(&batched), want, "{metric} k = {k} in batches");
            }
        }
        // Out of order, a changed k, or queries that are not the index's rows: the ordinary
        // path answers instead.
        assert!(p.knn_self_join(m, &(7..14), 3, false).is_none());
        assert!(p.knn_self_join(m, &(0..7), 3, false).is_some());
        assert!(p.knn_self_join(m, &(14..21), 3, false).is_none());
        assert!(p.knn_self_join(m, &(7..14), 4, false).is_none());
        let other = matrix(99, n, m.n_cols(), 0.4, !metric.requires_non_negative());
        assert!(p.knn_self_join(&other, &(0..7), 3, false).is_none());
        // The index's first rows alone: a caller after a few rows' neighbours.
        let end = m.offsets()[7] as usize;
        let head = CsrMatrix::new(
            m.n_cols(),
            m.offsets()[..8].to_vec(),
            m.indices()[..end].to_vec(),
            m.values()[..end].to_vec(),
        )
        .unwrap();
        assert!(p.knn_self_join(&head, &(0..7), 3, false).is_none());
    }

    #[test]
    fn each_pair_once_gives_the_ordinary_answers_bit_for_bit() {
        let mut metrics = Metric::all(3.0).to_vec();
        metrics.push(Metric::Minkowski(1.5));
        for metric in metrics {
            let m = matrix(7, 45, 12, 0.4, !metric.requires_non_negative());
            with_kernel!(metric, kernel => check(&m, metric, kernel));
        }
    }

    #[test]
    fn several_blocks_of_rows_and_snapshot_renewals() {
        // 600 rows: three blocks of keys, and every worker renews its snapshot of the limits.
        for metric in [
            Metric::Cosine,
            Metric::Euclidean,
            Metric::Jaccard,
            Metric::Manhattan,
        ] {
            let m = matrix(11, 600, 30, 0.2, !metric.requires_non_negative());
            with_kernel!(metric, kernel => {
                let p = Prepared::new(&m, metric, kernel);
                let want = bits(&p.knn_ordinary(&m, 0..600, 5, true));
                let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
                let got = pool.install(|| {
                    let mut out = p.knn_self_join(&m, &(0..250), 5, true).unwrap();
                    out.extend(p.knn_self_join(&m, &(250..600), 5, true).unwrap());
                    out
                });
                assert_eq!(bits(&got), want, "{metric}");
            });
        }
    }

    /// `keys` and `keys_transposed` against `finish`: NaN where the key is NaN, else NaN or at
    /// most the key (the pre-filter may let a row through, never keep one out).
    fn check_prefilter<K: Kernel>(m: &CsrMatrix, metric: Metric, kernel: K) {
        if K::NEEDS_QUERY_ORDER {
            return; // Chebyshev keeps the default (the key itself)
        }
        let p = Prepared::new(m, metric, kernel);
        let ix = p.view();
        let n = m.n_rows();
        let allowed = |v: f64, key: f64| {
            if key.is_nan() {
                v.is_nan()
            } else {
                v.is_nan() || v <= key
            }
        };
        for i in 0..n {
            let q = QueryView::of_index_row(&ix, i);
            let (mut acc, mut count) = (vec![0f64; n], vec![0u32; n]);
            for (&j, &a) in q.row.indices.iter().zip(q.row.values) {
                for &(r, b) in p.csc.col(j) {
                    let r = r as usize;
                    let x = p.kernel.product(a, b, &q, &ix, r);
                    acc[r] = if K::MAX_MONOID {
                        acc[r].max(x)
                    } else {
                        acc[r] + x
                    };
                    count[r] += 1;
                }
            }
            let counts: &[u32] = if K::NEEDS_COUNT { &count } else { &[] };
            let mut v = vec![0f64; n];
            p.kernel.keys(&acc, counts, &q, &ix, 0, &mut v);
            for r in 0..n {
                let key = p.kernel.finish(acc[r], count[r], &q, &ix, r).0;
                assert!(
                    allowed(v[r], key),
                    "{metric} ({i}, {r}): {} for key {key}",
                    v[r]
                );
            }
            if K::SYMMETRIC {
                p.kernel.keys_transposed(&acc, counts, &ix, 0, i, &mut v);
                for r in 0..n {
                    let qr = QueryView::of_index_row(&ix, r);
                    let key = p.kernel.finish(acc[r], count[r], &qr, &ix, i).0;
                    assert!(
                        allowed(v[r], key),
                        "{metric} ({r}, {i}): {} for key {key}",
                        v[r]
                    );
                }
            }
        }
    }

    #[test]
    fn prefilter_values_never_exceed_the_keys() {
        let mut metrics = Metric::all(3.0).to_vec();
        metrics.push(Metric::Minkowski(1.5));
        for metric in metrics {
            for (seed, density) in [(5, 0.4), (6, 0.05)] {
                let m = matrix(seed, 60, 20, density, !metric.requires_non_negative());
                with_kernel!(metric, kernel => check_prefilter(&m, metric, kernel));
            }
        }
    }

    #[test]
    fn a_sparse_index_takes_the_ordinary_path() {
        // Row i holds columns i and i + 1: Σ df² ≈ 4n, far below n²/2.
        let rows: Vec<Vec<f32>> = (0..64)
            .map(|i| {
                let mut r = vec![0f32; 65];
                r[i] = 1.0;
                r[i + 1] = 2.0;
                r
            })
            .collect();
        let m = CsrMatrix::from_dense(&rows, 65).unwrap();
        let p = Prepared::new(&m, Metric::Cosine, crate::expanded::Cosine);
        assert!(!p.pairs_dense);
        assert!(p.knn_self_join(&m, &(0..64), 3, false).is_none());
    }
}
