//! The semiring of one metric, split the way the CPU engine runs it (paper §2.2, §3.4):
//!
//! 1. [`Kernel::aggregate`]: per-row aggregates (norms, sums, non-zero counts), once per row;
//! 2. [`Kernel::product`] folded by the monoid (`+`, or `max` when [`Kernel::MAX_MONOID`]) over
//!    the **intersection** of non-zero columns of a query row and an index row, plus the size of
//!    the intersection when [`Kernel::NEEDS_COUNT`];
//! 3. [`Kernel::finish`]: the element-wise expansion that turns the accumulator and both rows'
//!    aggregates into a *key* (a monotone image of the distance: d² for Euclidean, −x·y for the
//!    dot product...), with a bound on its rounding error;
//! 4. [`Kernel::exact`]: the same key by the non-annihilating monoid over the **union** of non-zero
//!    columns ([`crate::union`]), the paper's two-pass form, used where step 3 cancels.
//!
//! ## Where cancellation limits precision
//!
//! Everything is accumulated in `f64` from `f32` inputs (products of two `f32` are exact in
//! `f64`). Expansions that subtract — ‖x‖² + ‖y‖² − 2x·y, ‖x‖₁ + ‖y‖₁ − Σ∩(|a|+|b|−|a−b|),
//! 2 ln 2 − Σ∩(...) for Jensen–Shannon, 1 − cos — lose relative precision when the distance is
//! small against the norms (near-duplicate rows), and the square roots of Euclidean, Hellinger and
//! Jensen–Shannon amplify it (an absolute error ε in d² is √ε in d). Each such kernel returns a
//! rigorous-in-spirit bound, err ≤ (nx + ny + 4)·2⁻⁵²·(sum of the magnitudes subtracted), from
//! the standard error bound of recursive summation; whenever err > [`REFINE_RELATIVE`]·|key| the
//! engine recomputes that pair exactly by the union form, which only adds non-negative terms. So
//! every key is right to ~10⁻⁹ relative (much better than the `f32` output), identical rows get
//! exactly 0, and the refinement costs O(nx + ny) for the rare near-duplicates only.
//!
//! Cancellation that is inherent in the definition (KL divergence's signed terms, Correlation's
//! x·y − n·x̄·ȳ for rows whose mean dominates) is not removable by any summation order; those are
//! as precise as SciPy's own formula (absolute error ~10⁻¹⁶ of the terms' magnitude).
//! The counting metrics (Dice, Jaccard, Hamming, Russell–Rao, and Canberra's x-only/y-only
//! terms, which are exactly 1 each) are exact integer arithmetic.

use crate::csr::{CsrMatrix, Row};

/// Refine a pair by the union form when the expansion's error bound exceeds this fraction of
/// the key.
pub const REFINE_RELATIVE: f64 = 1e-9;

/// Per-row aggregates; the meaning of `a`, `b`, `c` is the kernel's.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RowAgg {
    /// Stored non-zeros of the row.
    pub nnz: u32,
    pub a: f64,
    pub b: f64,
    pub c: f64,
}

impl RowAgg {
    /// Only the non-zero count of `row` (the counting kernels).
    #[inline]
    pub(crate) fn nnz_only(row: Row) -> RowAgg {
        RowAgg::with_a(row, 0.0)
    }

    /// The non-zero count of `row` and the one aggregate `a` (`b`, `c` unused).
    #[inline]
    pub(crate) fn with_a(row: Row, a: f64) -> RowAgg {
        RowAgg {
            nnz: row.nnz() as u32,
            a,
            ..RowAgg::default()
        }
    }
}

/// The query row with everything the kernels may read about it.
pub struct QueryView<'a> {
    pub row: Row<'a>,
    pub agg: RowAgg,
    /// Chebyshev only: `marker[col]` is true for the query's non-zero columns.
    pub marker: &'a [bool],
    /// Chebyshev only: positions of the query's non-zeros by decreasing magnitude.
    pub by_magnitude: &'a [u32],
}

impl QueryView<'static> {
    /// A query known by its aggregates alone (no row, no order): enough for `finish` of a
    /// [symmetric](Kernel::SYMMETRIC) kernel, and cheaper to make than a row's full view in a
    /// loop over every row.
    #[inline]
    pub fn of_aggregates(agg: RowAgg) -> QueryView<'static> {
        QueryView {
            row: Row::EMPTY,
            agg,
            marker: &[],
            by_magnitude: &[],
        }
    }
}

impl<'a> QueryView<'a> {
    /// Index row `r` as a query (a self-join), for kernels that do not read the query's
    /// column order.
    #[inline]
    pub fn of_index_row(ix: &IndexView<'a>, r: usize) -> QueryView<'a> {
        QueryView {
            row: ix.csr.row(r),
            agg: ix.aggs[r],
            marker: &[],
            by_magnitude: &[],
        }
    }
}

/// The index matrix with its aggregates.
pub struct IndexView<'a> {
    pub csr: &'a CsrMatrix,
    pub aggs: &'a [RowAgg],
    /// `aggs[r].a` and `aggs[r].b` as arrays of their own, for loops the compiler vectorizes
    /// ([`Kernel::keys`]).
    pub agg_a: &'a [f64],
    pub agg_b: &'a [f64],
    /// Maxima over the index rows, for [`Kernel::max_error`].
    pub stats: &'a IndexStats,
    /// Chebyshev only: per row, positions of its non-zeros by decreasing magnitude (aligned
    /// with the CSR arrays).
    pub by_magnitude: &'a [u32],
}

impl IndexView<'_> {
    /// Number of columns, n.
    #[inline]
    pub fn n_cols(&self) -> usize {
        self.csr.n_cols()
    }
}

/// Maxima over all index rows of what the error bounds depend on: the number of non-zeros and
/// the kernel's [`Kernel::bound_terms`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct IndexStats {
    pub max_nnz: u32,
    pub max_terms: [f64; 2],
}

impl IndexStats {
    /// The maxima over `aggs` for kernel `k`.
    pub fn of<K: Kernel>(k: &K, aggs: &[RowAgg]) -> IndexStats {
        let mut s = IndexStats::default();
        for a in aggs {
            s.max_nnz = s.max_nnz.max(a.nnz);
            let t = k.bound_terms(a);
            for (m, v) in s.max_terms.iter_mut().zip(t) {
                // NaN terms (undefined rows) never produce refinements; skip them.
                if v > *m {
                    *m = v;
                }
            }
        }
        s
    }
}

/// The standard bound factor of summing `n` terms in f64, with slack for a few extra roundings.
#[inline]
pub fn gamma(n: u32) -> f64 {
    (f64::from(n) + 4.0) * f64::EPSILON
}

/// [`Kernel::max_error`] of the kernels whose bound is `factor`·γ·(a(x) + a(y)), with `a` a
/// non-negative row sum and `bound_terms` = `[a, 0]` (Hellinger, Manhattan, Minkowski).
#[inline]
pub(crate) fn sum_a_max_error(factor: f64, q: &QueryView, ix: &IndexView) -> f64 {
    factor * gamma(q.agg.nnz + ix.stats.max_nnz) * (q.agg.a + ix.stats.max_terms[0])
}

/// One metric as a semiring plus expansion (see the module documentation).
pub trait Kernel: Send + Sync {
    /// The monoid is `max` (Chebyshev) instead of `+`.
    const MAX_MONOID: bool = false;
    /// The intersection accumulator is used (false for pure counting metrics).
    const NEEDS_ACC: bool = true;
    /// The size of the intersection is used.
    const NEEDS_COUNT: bool = false;
    /// The query's column marker and magnitude order are used (Chebyshev).
    const NEEDS_QUERY_ORDER: bool = false;
    /// `product(a, b, ..)` equals `product(b, a, ..)` bit for bit for the pair seen from
    /// either side, so in a self-join the accumulator (and count) of rows (i, r) is that of
    /// (r, i), summed in the same column order: the CPU engine computes each pair once
    /// (`cpu::self_join`). A symmetric kernel's `finish` must read only the query's
    /// aggregates (the self-join's other direction hands it [`QueryView::of_aggregates`]).
    /// Every kernel but KL divergence (not symmetric) and Chebyshev (its ⊗ and `finish` read
    /// the query's own order) says so.
    const SYMMETRIC: bool = false;

    /// Per-row aggregates of `row` in a space of `n_cols` columns.
    fn aggregate(&self, row: Row, n_cols: usize) -> RowAgg;

    /// ⊗ of a query value `a` and an index value `b` at a column where both are non-zero;
    /// `r` is the index row (for kernels that scale by its aggregates).
    fn product(&self, a: f32, b: f32, q: &QueryView, ix: &IndexView, r: usize) -> f64;

    /// The key of (query, index row `r`) from the intersection's accumulator and count, and a
    /// bound on the key's rounding error (0 where there is no cancellation).
    fn finish(&self, acc: f64, count: u32, q: &QueryView, ix: &IndexView, r: usize) -> (f64, f64);

    /// Pre-filter values of [`Kernel::finish`]'s keys of index rows `first..first + out.len()`
    /// from their accumulators and counts (`count` is empty unless [`Kernel::NEEDS_COUNT`]):
    /// each value is NaN where the key is NaN, and otherwise NaN or at most the key, so a row
    /// whose value is above a limit has its key above it too. The engine offers only the rows
    /// whose value is not above the limit, and `offer` then works from the exact key. The
    /// dense scan's inner loop: kernels whose key is a few arithmetic operations override it
    /// with a loop over [`IndexView::agg_a`]/[`IndexView::agg_b`] that the compiler vectorizes
    /// (the default is the key itself).
    #[inline]
    fn keys(
        &self,
        acc: &[f64],
        count: &[u32],
        q: &QueryView,
        ix: &IndexView,
        first: usize,
        out: &mut [f64],
    ) {
        for (i, o) in out.iter_mut().enumerate() {
            let c = count.get(i).copied().unwrap_or(0);
            *o = self.finish(acc[i], c, q, ix, first + i).0;
        }
    }

    /// The other direction of a self-join: pre-filter values, as [`Kernel::keys`] gives, of
    /// the keys of index rows `first..first + out.len()` taken as queries against index row
    /// `row`, i.e. of `finish(acc[i], count[i], view of row first + i, ix, row).0` (only used
    /// when [`Kernel::SYMMETRIC`]).
    #[inline]
    fn keys_transposed(
        &self,
        acc: &[f64],
        count: &[u32],
        ix: &IndexView,
        first: usize,
        row: usize,
        out: &mut [f64],
    ) {
        for (i, o) in out.iter_mut().enumerate() {
            let c = count.get(i).copied().unwrap_or(0);
            let q = QueryView::of_aggregates(ix.aggs[first + i]);
            *o = self.finish(acc[i], c, &q, ix, row).0;
        }
    }

    /// The key by the union of non-zero columns. Called only where [`Kernel::finish`]'s error
    /// bound is too large, so never for kernels whose bound is always 0.
    fn exact(&self, q: &QueryView, ix: &IndexView, r: usize) -> f64;

    /// The per-row quantities whose maxima over the index bound the error of any pair (see
    /// [`Kernel::max_error`]); none by default.
    #[inline]
    fn bound_terms(&self, _agg: &RowAgg) -> [f64; 2] {
        [0.0; 2]
    }

    /// An upper bound of [`Kernel::finish`]'s error bound over every index row for query `q`,
    /// from the index's maxima. The engine skips a row whose key exceeds the selection
    /// threshold by more than this without computing its own bound: the cheap path for almost
    /// every row.
    #[inline]
    fn max_error(&self, _q: &QueryView, _ix: &IndexView) -> f64 {
        0.0
    }

    /// Rows that share no non-zero column with the query have a key that depends only on the
    /// aggregates: `finish(0, 0, ..)`. This ranks rows so that, for any query, that key is a
    /// non-decreasing function of the rank (non-increasing when
    /// [`Kernel::untouched_descending`]); NaN for rows whose key is NaN for every query. The
    /// engine visits such rows in rank order and stops at the first that cannot enter the
    /// top k, instead of scanning every index row.
    fn untouched_rank(&self, agg: &RowAgg) -> f64;

    /// Whether the empty-intersection key decreases with [`Kernel::untouched_rank`] for `q`.
    #[inline]
    fn untouched_descending(&self, _q: &QueryView) -> bool {
        false
    }

    /// The distance from a key (identity, √, ^(1/p), or −key for the dot product).
    #[inline]
    fn distance(&self, key: f64) -> f64 {
        key
    }
}

/// Σx² over a row.
#[inline]
pub(crate) fn sum_sq(row: Row) -> f64 {
    row.values
        .iter()
        .map(|&v| f64::from(v) * f64::from(v))
        .sum()
}

/// Σx over a row.
#[inline]
pub(crate) fn sum(row: Row) -> f64 {
    row.values.iter().map(|&v| f64::from(v)).sum()
}

/// Σ|x| over a row.
#[inline]
pub(crate) fn sum_abs(row: Row) -> f64 {
    row.values.iter().map(|&v| f64::from(v).abs()).sum()
}

/// Evaluates `$body` with `$k` bound to `metric`'s kernel: the one place that maps a [`crate::Metric`]
/// to its kernel type (the CPU engine's `prepare`, [`row_aggregate`], [`key_distance`]).
macro_rules! with_kernel {
    ($metric:expr, $k:ident => $body:expr) => {{
        use crate::aggregate::{
            Canberra, Hamming, JensenShannon, KlDivergence, Manhattan, Minkowski,
        };
        use crate::expanded::{
            Correlation, Cosine, Dice, DotProduct, Euclidean, Hellinger, Jaccard, RussellRao,
        };
        use crate::union::Chebyshev;
        use crate::Metric as M;
        match $metric {
            M::Correlation => {
                let $k = Correlation;
                $body
            }
            M::Cosine => {
                let $k = Cosine;
                $body
            }
            M::Dice => {
                let $k = Dice;
                $body
            }
            M::DotProduct => {
                let $k = DotProduct;
                $body
            }
            M::Euclidean => {
                let $k = Euclidean;
                $body
            }
            M::Canberra => {
                let $k = Canberra;
                $body
            }
            M::Chebyshev => {
                let $k = Chebyshev;
                $body
            }
            M::Hamming => {
                let $k = Hamming;
                $body
            }
            M::Hellinger => {
                let $k = Hellinger;
                $body
            }
            M::Jaccard => {
                let $k = Jaccard;
                $body
            }
            M::JensenShannon => {
                let $k = JensenShannon;
                $body
            }
            M::KlDivergence => {
                let $k = KlDivergence;
                $body
            }
            M::Manhattan => {
                let $k = Manhattan;
                $body
            }
            M::Minkowski(p) => {
                let $k = Minkowski { p };
                $body
            }
            M::RussellRao => {
                let $k = RussellRao;
                $body
            }
        }
    }};
}
pub(crate) use with_kernel;

/// The aggregates `metric`'s kernel computes for `row` in a space of `n_cols` columns — what a
/// device backend uploads beside the rows, so that its expansions read the very numbers the
/// CPU's do.
pub fn row_aggregate(metric: crate::Metric, row: Row, n_cols: usize) -> RowAgg {
    with_kernel!(metric, k => k.aggregate(row, n_cols))
}

/// `metric`'s distance from a key ([`Kernel::distance`]: identity, √, ^(1/p), or −key for the dot
/// product), for a device backend that selects by keys and converts on the host.
pub fn key_distance(metric: crate::Metric, key: f64) -> f64 {
    with_kernel!(metric, k => k.distance(key))
}
