//! The multithreaded CPU engine.
//!
//! **Layout.** The index is transposed once into compressed sparse columns (an inverted index:
//! for each column, the index rows that have it). A query then touches only the index entries
//! in its own columns — exactly the intersection pairs, the work of a sparse dot product — and
//! scatters ⊗ into a dense accumulator with one slot per index row (Gustavson's SpGEMM row by
//! row). A scan over the accumulator applies the expansion to every index row (rows with an
//! empty intersection still have a distance, from their aggregates alone) and feeds the top-k
//! selection. The paper's GPU kernel avoids the transpose to save device memory (§1 item 3);
//! on the CPU the copy costs O(nnz) memory once and saves scanning every index non-zero per
//! query (200× less work on the benchmark matrix).
//!
//! **Rows the query does not touch** have a key that depends on the row aggregates alone and
//! grows with [`Kernel::untouched_rank`]; when a query touches few rows (sparse mode) they are
//! visited in rank order, stopping at the first that cannot enter the top k, and the touched
//! rows, marked in a bitset, are expanded in row order. Queries whose columns are common,
//! touching most rows (dense mode), scan all rows a block at a time instead: a vectorized loop
//! computes the block's pre-filter values ([`Kernel::keys`]) and only the rows not above the
//! limit take the exact key. The choice depends on the data only and both select the same
//! neighbours.
//!
//! **A self-join** (the queries are the index's own rows, from row 0 on) of an index whose
//! queries touch most rows computes each pair once: see [`self_join`].
//!
//! **Memory** stays bounded for any size: the CSC copy of the index (8 bytes per non-zero,
//! 64-bit column offsets), per-row aggregates and the rank order (52 bytes per index row), and
//! per worker thread 12 bytes and a bit per index row (accumulator, count, touched bit) plus a
//! flag per column. Queries are answered a batch at a time and only k results per query are
//! kept; no query × index matrix is ever formed except by [`PreparedIndex::distances`], whose
//! caller chooses the batch. A self-join adds the selections of the rows not yet answered
//! (k pairs each, the answer's size) and per worker 8 bytes per index row and per column.
//!
//! **Determinism.** Each query is computed by one thread, in a fixed order of operations, and
//! written to its own slot: results are bit-identical for any number of threads. (A
//! self-join's selections take offers from several threads, but a selection keeps the k
//! smallest of a total order and every pair's key depends on the pair alone.)

use crate::backend::{
    check_domain, check_k, check_matrix_size, check_queries, Backend, Neighbors, PreparedIndex,
};
use crate::kernel::{
    with_kernel, IndexStats, IndexView, Kernel, QueryView, RowAgg, REFINE_RELATIVE,
};
use crate::topk::TopK;
use crate::union::magnitude_order;
use crate::{CsrMatrix, DistanceError, Metric};
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

mod self_join;

/// Queries a worker claims at a time.
const QUERY_CHUNK: usize = 16;

/// Index rows whose keys a dense scan computes at a time (on the stack).
const EXPAND_BLOCK: usize = 256;

/// The CPU backend (rayon's current thread pool).
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuBackend;

impl Backend for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn prepare<'a>(
        &self,
        index: &'a CsrMatrix,
        metric: Metric,
    ) -> Result<Box<dyn PreparedIndex + 'a>, DistanceError> {
        check_domain(index, 0..index.n_rows(), metric)?;
        if index.n_rows() > u32::MAX as usize {
            return Err(DistanceError::InvalidCsr(format!(
                "{} index rows exceed 2^32 - 1",
                index.n_rows()
            )));
        }
        let metric = match metric {
            Metric::Minkowski(p) => Metric::minkowski(p)?,
            m => m,
        };
        Ok(with_kernel!(metric, k => Prepared::boxed(index, metric, k)))
    }
}

/// Refuses values of `rows` of `m` outside the metric's domain (negative values for
/// Hellinger, Jensen–Shannon and KL divergence, where square roots and logarithms of them are
/// undefined).
struct Csc {
    col_offsets: Vec<u64>,
    entries: Vec<(u32, f32)>,
}

impl Csc {
    fn transpose(m: &CsrMatrix) -> Csc {
        let mut col_offsets = vec![0u64; m.n_cols() + 1];
        for &c in m.indices() {
            col_offsets[c as usize + 1] += 1;
        }
        for j in 0..m.n_cols() {
            col_offsets[j + 1] += col_offsets[j];
        }
        let mut entries = vec![(0u32, 0f32); m.indices().len()];
        let mut next: Vec<u64> = col_offsets[..m.n_cols()].to_vec();
        for r in 0..m.n_rows() {
            let row = m.row(r);
            for (&c, &v) in row.indices.iter().zip(row.values) {
                let slot = &mut next[c as usize];
                entries[*slot as usize] = (r as u32, v);
                *slot += 1;
            }
        }
        Csc {
            col_offsets,
            entries,
        }
    }

    #[inline]
    fn col(&self, j: u32) -> &[(u32, f32)] {
        let (a, b) = (
            self.col_offsets[j as usize] as usize,
            self.col_offsets[j as usize + 1] as usize,
        );
        &self.entries[a..b]
    }

    /// Hints the CPU to fetch the start of column `j` (the next column a query will read): the
    /// inverted index is far larger than the caches and each column starts at a random place.
    #[inline]
    fn prefetch(&self, j: u32) {
        self.prefetch_at(self.col_offsets[j as usize]);
    }

    /// Hints the CPU to fetch the entries from position `start` on.
    #[inline]
    fn prefetch_at(&self, start: u64) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: prefetching is a hint and never faults, whatever the address.
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let p = self.entries.as_ptr().wrapping_add(start as usize) as *const i8;
            _mm_prefetch(p, _MM_HINT_T0);
            _mm_prefetch(p.wrapping_add(64), _MM_HINT_T0);
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = start;
    }
}

/// An index prepared for kernel `K`.
struct Prepared<'a, K: Kernel> {
    metric: Metric,
    kernel: K,
    csr: &'a CsrMatrix,
    csc: Csc,
    aggs: Vec<RowAgg>,
    /// The aggregates' `a` and `b` columns ([`IndexView::agg_a`]).
    agg_a: Vec<f64>,
    agg_b: Vec<f64>,
    stats: IndexStats,
    by_magnitude: Vec<u32>,
    /// Rows by [`Kernel::untouched_rank`] (ties by index), then the rows whose rank is NaN.
    by_rank: Vec<u32>,
    /// How many rows at the start of `by_rank` have a defined (non-NaN) rank.
    defined: usize,
    /// Whether queries touch most index rows on average (the self-join's condition).
    pairs_dense: bool,
    /// The self-join in progress ([`self_join`]).
    self_join: Mutex<Option<self_join::SelfJoin>>,
}

/// Per-worker buffers.
struct Scratch {
    acc: Vec<f64>,
    count: Vec<u32>,
    /// Sparse mode: which index rows the query's columns touched, a bit per row (set without
    /// a branch, read in row order).
    touched: Vec<u64>,
    marker: Vec<bool>,
    order: Vec<u32>,
    topk: TopK,
    /// Self-join only: per column, where this worker's last query started reading it.
    cursor: Vec<u64>,
    /// Self-join only: this worker's copy of the rows' limits, and how many queries ago it
    /// was renewed.
    snapshot: Vec<f64>,
    snapshot_age: usize,
}

/// Where a query's keys go.
trait Sink {
    /// Every index row's key is wanted (else only those that can enter a top-k).
    const ALL_ROWS: bool;
    fn threshold(&self) -> f64;
    fn offer(&mut self, key: f64, r: u32);
}

impl Sink for TopK {
    const ALL_ROWS: bool = false;
    #[inline]
    fn threshold(&self) -> f64 {
        TopK::threshold(self)
    }
    #[inline]
    fn offer(&mut self, key: f64, r: u32) {
        TopK::offer(self, key, r)
    }
}

/// Every key, as a distance, into one output row.
struct DenseRow<'o, 'k, K: Kernel> {
    out: &'o mut [f32],
    kernel: &'k K,
}

impl<K: Kernel> Sink for DenseRow<'_, '_, K> {
    const ALL_ROWS: bool = true;
    #[inline]
    fn threshold(&self) -> f64 {
        f64::INFINITY
    }
    #[inline]
    fn offer(&mut self, key: f64, r: u32) {
        self.out[r as usize] = self.kernel.distance(key) as f32;
    }
}

impl<'a, K: Kernel + 'a> Prepared<'a, K> {
    fn boxed(csr: &'a CsrMatrix, metric: Metric, kernel: K) -> Box<dyn PreparedIndex + 'a> {
        Box::new(Self::new(csr, metric, kernel))
    }

    fn new(csr: &'a CsrMatrix, metric: Metric, kernel: K) -> Self {
        let n = csr.n_cols();
        let aggs: Vec<RowAgg> = {
            use rayon::prelude::*;
            (0..csr.n_rows())
                .into_par_iter()
                .map(|r| kernel.aggregate(csr.row(r), n))
                .collect()
        };
        let mut by_magnitude = Vec::new();
        if K::NEEDS_QUERY_ORDER {
            by_magnitude.reserve(csr.indices().len());
            let mut order = Vec::new();
            for r in 0..csr.n_rows() {
                magnitude_order(csr.row(r).values, &mut order);
                by_magnitude.extend_from_slice(&order);
            }
        }
        let stats = IndexStats::of(&kernel, &aggs);
        let ranks: Vec<f64> = aggs.iter().map(|a| kernel.untouched_rank(a)).collect();
        let mut by_rank: Vec<u32> = (0..csr.n_rows() as u32)
            .filter(|&r| !ranks[r as usize].is_nan())
            .collect();
        by_rank.sort_by(|&a, &b| {
            ranks[a as usize]
                .total_cmp(&ranks[b as usize])
                .then(a.cmp(&b))
        });
        let defined = by_rank.len();
        by_rank.extend((0..csr.n_rows() as u32).filter(|&r| ranks[r as usize].is_nan()));
        let csc = Csc::transpose(csr);
        Prepared {
            metric,
            kernel,
            csr,
            pairs_dense: Self::pairs_dense(&csc.col_offsets, csr.n_rows()),
            self_join: Mutex::new(None),
            csc,
            agg_a: aggs.iter().map(|a| a.a).collect(),
            agg_b: aggs.iter().map(|a| a.b).collect(),
            aggs,
            stats,
            by_magnitude,
            by_rank,
            defined,
        }
    }

    fn scratch(&self, k: usize) -> Scratch {
        Scratch {
            acc: vec![0.0; self.csr.n_rows()],
            count: if K::NEEDS_COUNT {
                vec![0; self.csr.n_rows()]
            } else {
                Vec::new()
            },
            marker: if K::NEEDS_QUERY_ORDER {
                vec![false; self.csr.n_cols()]
            } else {
                Vec::new()
            },
            order: Vec::new(),
            touched: vec![0; self.csr.n_rows().div_ceil(64)],
            topk: TopK::new(k),
            cursor: Vec::new(),
            snapshot: Vec::new(),
            snapshot_age: 0,
        }
    }

    fn view(&self) -> IndexView<'_> {
        IndexView {
            csr: self.csr,
            aggs: &self.aggs,
            agg_a: &self.agg_a,
            agg_b: &self.agg_b,
            stats: &self.stats,
            by_magnitude: &self.by_magnitude,
        }
    }

    /// Offers the index rows `rows` from their accumulators and counts, a block at a time:
    /// the block's pre-filter values first ([`Kernel::keys`], a loop without branches that the
    /// compiler vectorizes for the kernels that override it), one vectorized test whether any
    /// is not above the limit, and `offer` for those few. With `zero`, the block's
    /// accumulators and counts are reset for the next query. Returns the final limit.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn offer_block<S: Sink>(
        &self,
        rows: Range<usize>,
        skip: Option<usize>,
        q: &QueryView,
        ix: &IndexView,
        acc: &mut [f64],
        count: &mut [u32],
        zero: bool,
        sink: &mut S,
        mut limit: f64,
        offer: &impl Fn(usize, f64, u32, &mut S, &mut f64) -> bool,
    ) -> f64 {
        let mut keys = [0f64; EXPAND_BLOCK];
        let mut base = rows.start;
        while base < rows.end {
            let end = (base + EXPAND_BLOCK).min(rows.end);
            let keys = &mut keys[..end - base];
            let counts = block_counts::<K>(count, base..end);
            self.kernel.keys(&acc[base..end], counts, q, ix, base, keys);
            if any_not_above(keys, |_| limit) {
                for (i, &key) in keys.iter().enumerate() {
                    // Exactly "not key > limit", as in `offer`: a NaN key goes on, and so does
                    // every key when the limit is NaN (a zero-mean query against a constant
                    // index row makes Correlation's error slack 0 · ∞).
                    if key.partial_cmp(&limit) != Some(std::cmp::Ordering::Greater) {
                        let r = base + i;
                        if skip != Some(r) {
                            let c = if K::NEEDS_COUNT { count[r] } else { 0 };
                            offer(r, acc[r], c, sink, &mut limit);
                        }
                    }
                }
            }
            if zero {
                acc[base..end].fill(0.0);
                if K::NEEDS_COUNT {
                    count[base..end].fill(0);
                }
            }
            base = end;
        }
        limit
    }

    /// One query against every index row: the intersection pass, then the expansion scan.
    fn scan<S: Sink>(
        &self,
        queries: &CsrMatrix,
        qi: usize,
        skip: Option<usize>,
        s: &mut Scratch,
        sink: &mut S,
    ) {
        let k = &self.kernel;
        let row = queries.row(qi);
        if K::NEEDS_QUERY_ORDER {
            magnitude_order(row.values, &mut s.order);
            for &c in row.indices {
                s.marker[c as usize] = true;
            }
        }
        let q = QueryView {
            row,
            agg: k.aggregate(row, self.csr.n_cols()),
            marker: &s.marker,
            by_magnitude: &s.order,
        };
        let ix = self.view();
        // Sparse mode (top-k only): track the touched rows, expand only those, and visit the
        // untouched ones in rank order. Worth it when the query touches few rows; when its
        // columns hold as many entries as the index has rows (common words), a sequential scan
        // of every row is cheaper than tracking. The choice depends on the data alone, and
        // both modes select the same neighbours.
        let work: u64 = row
            .indices
            .iter()
            .map(|&j| self.csc.col_offsets[j as usize + 1] - self.csc.col_offsets[j as usize])
            .sum();
        let sparse = !S::ALL_ROWS && work < self.csr.n_rows() as u64 / 2;
        // Pass 1: ⊗ over the intersection, ⊕-folded per index row. (The buffers are borrowed
        // as slices first so that their lengths stay in registers: a store through a `Vec`'s
        // buffer could otherwise alias the `Vec` itself, for all the compiler knows.)
        {
            let acc: &mut [f64] = &mut s.acc;
            let count: &mut [u32] = &mut s.count;
            let touched: &mut [u64] = &mut s.touched;
            for (p, (&j, &a)) in row.indices.iter().zip(row.values).enumerate() {
                if let Some(&next) = row.indices.get(p + 2) {
                    self.csc.prefetch(next);
                }
                for &(r, b) in self.csc.col(j) {
                    if sparse {
                        touched[r as usize >> 6] |= 1 << (r & 63);
                    }
                    fold(k, a, b, &q, &ix, r as usize, acc, count);
                }
            }
        }
        // Pass 2: the element-wise expansion. A row whose key exceeds the threshold by more
        // than any pair's error bound is skipped on the key alone; only the few others get
        // their own bound (and, rarely, the exact union form).
        let slack = k.max_error(&q, &ix);
        let offer = |r: usize, a: f64, c: u32, sink: &mut S, limit: &mut f64| -> bool {
            offer_pair(k, &q, &ix, r, a, c, slack, sink, limit)
        };
        let mut limit = sink.threshold() + slack;
        // Offers row r from its accumulator and count, resetting both for the next query. The
        // common case stays in the caller's loop: a row whose key exceeds the limit (almost all
        // of them) costs its expansion and one compare; the others take the full `offer`, which
        // recomputes the key and its bound (Chebyshev repeats its walks for those few rows), so
        // the result is the same. (As a closure call per row this was 40% of a 20 Newsgroups
        // run; inline, 20–30% less in all.)
        macro_rules! take_and_offer {
            ($r:expr) => {{
                let r: usize = $r;
                let a = std::mem::take(&mut s.acc[r]);
                let c = if K::NEEDS_COUNT {
                    std::mem::take(&mut s.count[r])
                } else {
                    0
                };
                // Exactly "not key > limit", as in `offer`: a NaN key goes on, and so does every
                // key when the limit is NaN (a zero-mean query against a constant index row makes
                // Correlation's error slack 0 · ∞).
                let key = k.finish(a, c, &q, &ix, r).0;
                if skip != Some(r) && key.partial_cmp(&limit) != Some(std::cmp::Ordering::Greater) {
                    offer(r, a, c, sink, &mut limit);
                }
            }};
        }
        if !sparse {
            let (acc, count) = (&mut s.acc[..], &mut s.count[..]);
            self.offer_block(
                0..acc.len(),
                skip,
                &q,
                &ix,
                acc,
                count,
                true,
                sink,
                limit,
                &offer,
            );
        } else {
            // The rows the query touched, in row order (so the accumulators and aggregates are
            // read as streams), then the others in rank order until one cannot enter (their
            // keys only grow along the order).
            for w in 0..s.touched.len() {
                let mut bits = s.touched[w];
                while bits != 0 {
                    take_and_offer!(w * 64 + bits.trailing_zeros() as usize);
                    bits &= bits - 1;
                }
            }
            let touched = &s.touched;
            let mut walk = |r: u32| -> bool {
                let r = r as usize;
                touched[r >> 6] & (1 << (r & 63)) != 0
                    || skip == Some(r)
                    || offer(r, 0.0, 0, sink, &mut limit)
            };
            if k.untouched_descending(&q) {
                for &r in self.by_rank[..self.defined].iter().rev() {
                    if !walk(r) {
                        break;
                    }
                }
                for &r in &self.by_rank[self.defined..] {
                    walk(r);
                }
            } else {
                for &r in &self.by_rank {
                    if !walk(r) {
                        break;
                    }
                }
            }
            s.touched.fill(0);
        }
        if K::NEEDS_QUERY_ORDER {
            for &c in row.indices {
                s.marker[c as usize] = false;
            }
        }
    }
}

impl<'a, K: Kernel + 'a> Prepared<'a, K> {
    /// The batch `rows` one query at a time ([`Prepared::scan`]).
    fn knn_ordinary(
        &self,
        queries: &CsrMatrix,
        rows: Range<usize>,
        k: usize,
        exclude_self: bool,
    ) -> Neighbors {
        let start = rows.start;
        let chunks = parallel_chunks(
            rows.len(),
            || self.scratch(k),
            |s, range| {
                let mut idx = Vec::with_capacity(range.len() * k);
                let mut dist = Vec::with_capacity(range.len() * k);
                for i in range {
                    let qi = start + i;
                    let mut top = std::mem::replace(&mut s.topk, TopK::new(0));
                    self.scan(queries, qi, exclude_self.then_some(qi), s, &mut top);
                    for (key, r) in top.drain_sorted() {
                        idx.push(r);
                        dist.push(self.kernel.distance(key) as f32);
                    }
                    s.topk = top;
                }
                (idx, dist)
            },
        );
        let mut out = Neighbors {
            k,
            indices: Vec::with_capacity(rows.len() * k),
            distances: Vec::with_capacity(rows.len() * k),
        };
        for (i, d) in chunks {
            out.indices.extend(i);
            out.distances.extend(d);
        }
        out
    }
}

/// Folds ⊗ of query value `a` and index value `b` into index row `r`'s accumulator (by the
/// kernel's monoid) and count: the one update of every intersection pass.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn fold<K: Kernel>(
    k: &K,
    a: f32,
    b: f32,
    q: &QueryView,
    ix: &IndexView,
    r: usize,
    acc: &mut [f64],
    count: &mut [u32],
) {
    if K::NEEDS_ACC {
        let p = k.product(a, b, q, ix, r);
        let acc = &mut acc[r];
        *acc = if K::MAX_MONOID { acc.max(p) } else { *acc + p };
    }
    if K::NEEDS_COUNT {
        count[r] += 1;
    }
}

/// The counts of index rows `rows` for [`Kernel::keys`]: empty unless the kernel uses them.
#[inline]
fn block_counts<K: Kernel>(count: &[u32], rows: Range<usize>) -> &[u32] {
    if K::NEEDS_COUNT {
        &count[rows]
    } else {
        &[]
    }
}

/// Whether any key of a block is not above its limit (`limit(t)` for key t): exactly "not
/// key > limit", as in `offer_pair`, so NaN keys and NaN limits count. Branch-free, so the
/// compiler vectorizes it; almost every block of a dense scan has none.
#[inline]
#[allow(clippy::neg_cmp_op_on_partial_ord)] // the NaN cases are the point, and this form vectorizes
fn any_not_above(keys: &[f64], limit: impl Fn(usize) -> f64) -> bool {
    let mut n = 0usize;
    for (t, &key) in keys.iter().enumerate() {
        n += usize::from(!(key > limit(t)));
    }
    n > 0
}

/// Offers index row `r` to query `q`'s selection from their accumulator `a` and count `c`,
/// unless its key exceeds `limit` (then returns false); keeps `limit` at the selection's
/// threshold plus `slack` ([`Kernel::max_error`]). One call computes the key and its bound:
/// the compiler sinks the bound's arithmetic past the test for the small kernels, and
/// Chebyshev's walks are not repeated.
#[allow(clippy::too_many_arguments)]
#[inline]
fn offer_pair<K: Kernel, S: Sink>(
    k: &K,
    q: &QueryView,
    ix: &IndexView,
    r: usize,
    a: f64,
    c: u32,
    slack: f64,
    sink: &mut S,
    limit: &mut f64,
) -> bool {
    let (key, err) = k.finish(a, c, q, ix, r);
    if key > *limit {
        return false;
    }
    // Written so that a NaN key (SciPy's 0/0 cases) is offered: it sorts last.
    if key.is_nan() || key - err <= sink.threshold() {
        let key = if err > REFINE_RELATIVE * key.abs() {
            k.exact(q, ix, r)
        } else {
            key
        };
        sink.offer(key, r as u32);
        *limit = sink.threshold() + slack;
    }
    true
}

/// Runs `work(scratch, chunk_start, chunk_len, out)` over `n` items in chunks of
/// [`QUERY_CHUNK`], one scratch per worker thread, and returns every chunk's output in order.
fn parallel_chunks<T: Send>(
    n: usize,
    make_scratch: impl Fn() -> Scratch + Sync,
    work: impl Fn(&mut Scratch, Range<usize>) -> T + Sync,
) -> Vec<T> {
    let n_chunks = n.div_ceil(QUERY_CHUNK);
    let workers = rayon::current_num_threads().min(n_chunks).max(1);
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<(usize, T)>> = Mutex::new(Vec::with_capacity(n_chunks));
    rayon::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|_| {
                let mut scratch = make_scratch();
                let mut mine = Vec::new();
                loop {
                    let c = next.fetch_add(1, Ordering::Relaxed);
                    if c >= n_chunks {
                        break;
                    }
                    let range = c * QUERY_CHUNK..((c + 1) * QUERY_CHUNK).min(n);
                    mine.push((c, work(&mut scratch, range)));
                }
                done.lock().unwrap().extend(mine);
            });
        }
    });
    let mut done = done.into_inner().unwrap();
    done.sort_unstable_by_key(|p| p.0);
    done.into_iter().map(|p| p.1).collect()
}

impl<'a, K: Kernel + 'a> PreparedIndex for Prepared<'a, K> {
    fn metric(&self) -> Metric {
        self.metric
    }

    fn n_rows(&self) -> usize {
        self.csr.n_rows()
    }

    fn knn(
        &self,
        queries: &CsrMatrix,
        rows: Range<usize>,
        k: usize,
        exclude_self: bool,
    ) -> Result<Neighbors, DistanceError> {
        check_queries(queries, &rows, self.csr.n_cols(), self.metric)?;
        check_k(k, self.csr.n_rows(), exclude_self)?;
        Ok(match self.knn_self_join(queries, &rows, k, exclude_self) {
            Some(nn) => nn,
            None => self.knn_ordinary(queries, rows, k, exclude_self),
        })
    }

    fn distances(
        &self,
        queries: &CsrMatrix,
        rows: Range<usize>,
    ) -> Result<Vec<f32>, DistanceError> {
        check_queries(queries, &rows, self.csr.n_cols(), self.metric)?;
        let n = self.csr.n_rows();
        let cells = check_matrix_size(rows.len(), n)?;
        let start = rows.start;
        let chunks = parallel_chunks(
            rows.len(),
            || self.scratch(0),
            |s, range| {
                let mut out = vec![0f32; range.len() * n];
                for (i, qi) in range.map(|i| start + i).enumerate() {
                    let mut sink = DenseRow {
                        out: &mut out[i * n..(i + 1) * n],
                        kernel: &self.kernel,
                    };
                    self.scan(queries, qi, None, s, &mut sink);
                }
                out
            },
        );
        let mut out = Vec::with_capacity(cells);
        for c in chunks {
            out.extend(c);
        }
        Ok(out)
    }
}
