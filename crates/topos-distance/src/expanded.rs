//! Expanded forms (paper §2.1–2.2, §3.4, Table 1 "Expansion"): one sparse dot product over the
//! intersection of non-zero columns (the ordinary ×/+ semiring, whose product is annihilated by
//! zeros) plus per-row norms, combined element-wise. Dice, Jaccard and Russell–Rao are the same
//! with the rows read as 0/1 indicator vectors: their "dot product" is the intersection count c
//! and their "norms" the non-zero counts, so they are exact integer arithmetic.

use crate::csr::Row;
use crate::kernel::{gamma, sum, sum_a_max_error, sum_sq, IndexView, Kernel, QueryView, RowAgg};
use crate::union::{intersection_count, union_fold};

#[inline]
fn prod(a: f32, b: f32) -> f64 {
    f64::from(a) * f64::from(b)
}

/// x·y, a similarity: key = −x·y so that the nearest (largest) sorts first.
pub struct DotProduct;

impl Kernel for DotProduct {
    // ⊗ is symmetric in (a, b) bit for bit.
    const SYMMETRIC: bool = true;
    fn aggregate(&self, row: Row, _n: usize) -> RowAgg {
        RowAgg::nnz_only(row)
    }
    #[inline]
    fn product(&self, a: f32, b: f32, _q: &QueryView, _ix: &IndexView, _r: usize) -> f64 {
        prod(a, b)
    }
    #[inline]
    fn finish(&self, acc: f64, _c: u32, _q: &QueryView, _ix: &IndexView, _r: usize) -> (f64, f64) {
        (-acc, 0.0)
    }
    #[inline]
    fn keys(
        &self,
        acc: &[f64],
        _c: &[u32],
        _q: &QueryView,
        _ix: &IndexView,
        _first: usize,
        out: &mut [f64],
    ) {
        for (o, &a) in out.iter_mut().zip(acc) {
            *o = -a;
        }
    }
    #[inline]
    fn keys_transposed(
        &self,
        acc: &[f64],
        _c: &[u32],
        _ix: &IndexView,
        _first: usize,
        _row: usize,
        out: &mut [f64],
    ) {
        for (o, &a) in out.iter_mut().zip(acc) {
            *o = -a;
        }
    }
    fn untouched_rank(&self, _agg: &RowAgg) -> f64 {
        0.0
    }
    fn exact(&self, q: &QueryView, ix: &IndexView, r: usize) -> f64 {
        let mut s = 0.0;
        union_fold(q.row, ix.csr.row(r), |a, b| s += a * b);
        -s
    }
    #[inline]
    fn distance(&self, key: f64) -> f64 {
        -key
    }
}

/// [`Cosine`]'s pre-filter value ([`Kernel::keys`]) from the scaled dot product `t` =
/// x·y/‖x‖/‖y‖ as `finish` rounds it: 1 − t capped at 2, without the clamp at 0 (a value below
/// the key is allowed, and limits are never below 0) and without the zero-row test: a zero
/// row's values are all ±0, so its accumulator is +0 and its inverse norm +∞ (a non-zero `f32`
/// squared is a normal `f64`, so only a zero norm has an infinite inverse), and 0 · ∞ is NaN
/// already. Fewer operations than the key, in the loop that runs for every pair.
#[inline]
fn cosine_prefilter(t: f64) -> f64 {
    let v = 1.0 - t;
    if v > 2.0 {
        2.0
    } else {
        v
    }
}

/// 1 − x·y/(‖x‖‖y‖), clamped to [0, 2] like SciPy; NaN against a zero row (SciPy: 0/0).
/// Aggregates: a = ‖x‖, b = 1/‖x‖. Exact form: ½‖x/‖x‖ − y/‖y‖‖², which equals 1 − cos without
/// the cancellation of 1 − cos for near-parallel rows.
pub struct Cosine;

impl Kernel for Cosine {
    // ⊗ is symmetric in (a, b) bit for bit.
    const SYMMETRIC: bool = true;
    fn aggregate(&self, row: Row, _n: usize) -> RowAgg {
        let norm = sum_sq(row).sqrt();
        RowAgg {
            nnz: row.nnz() as u32,
            a: norm,
            b: 1.0 / norm,
            c: 0.0,
        }
    }
    #[inline]
    fn product(&self, a: f32, b: f32, _q: &QueryView, _ix: &IndexView, _r: usize) -> f64 {
        prod(a, b)
    }
    #[inline]
    fn finish(&self, acc: f64, _c: u32, q: &QueryView, ix: &IndexView, r: usize) -> (f64, f64) {
        let ra = &ix.aggs[r];
        if q.agg.a == 0.0 || ra.a == 0.0 {
            return (f64::NAN, 0.0);
        }
        let key = (1.0 - acc * q.agg.b * ra.b).clamp(0.0, 2.0);
        (key, 2.0 * gamma(q.agg.nnz + ra.nnz))
    }
    #[inline]
    fn keys(
        &self,
        acc: &[f64],
        _c: &[u32],
        q: &QueryView,
        ix: &IndexView,
        first: usize,
        out: &mut [f64],
    ) {
        let inv = &ix.agg_b[first..first + out.len()];
        let acc = &acc[..out.len()];
        if q.agg.a == 0.0 {
            out.fill(f64::NAN);
            return;
        }
        for i in 0..out.len() {
            out[i] = cosine_prefilter(acc[i] * q.agg.b * inv[i]);
        }
    }
    #[inline]
    fn keys_transposed(
        &self,
        acc: &[f64],
        _c: &[u32],
        ix: &IndexView,
        first: usize,
        row: usize,
        out: &mut [f64],
    ) {
        let inv = &ix.agg_b[first..first + out.len()];
        let acc = &acc[..out.len()];
        if ix.agg_a[row] == 0.0 {
            out.fill(f64::NAN);
            return;
        }
        let inv_row = ix.agg_b[row];
        for i in 0..out.len() {
            // `finish` with the roles swapped: (acc · 1/‖query‖) · 1/‖row‖.
            out[i] = cosine_prefilter(acc[i] * inv[i] * inv_row);
        }
    }
    #[inline]
    fn max_error(&self, q: &QueryView, ix: &IndexView) -> f64 {
        2.0 * gamma(q.agg.nnz + ix.stats.max_nnz)
    }
    fn untouched_rank(&self, agg: &RowAgg) -> f64 {
        // Key 1 against any non-zero query; NaN (every query) for a zero row.
        if agg.a == 0.0 {
            f64::NAN
        } else {
            0.0
        }
    }
    fn exact(&self, q: &QueryView, ix: &IndexView, r: usize) -> f64 {
        let (sx, sy) = (q.agg.b, ix.aggs[r].b);
        let mut s = 0.0;
        union_fold(q.row, ix.csr.row(r), |a, b| {
            let t = a * sx - b * sy;
            s += t * t;
        });
        (0.5 * s).clamp(0.0, 2.0)
    }
}

/// 1 − (x−x̄)·(y−ȳ)/(‖x−x̄‖‖y−ȳ‖) with x̄ the mean over all n columns, clamped to [0, 2]; NaN if
/// either row is constant (SciPy: 0/0). Expansion: (x−x̄)·(y−ȳ) = x·y − n·x̄·ȳ. Aggregates:
/// a = x̄, b = ‖x−x̄‖ computed without cancellation as (Σ_nz (xᵢ−x̄)² + (n−nnz)·x̄²)^½ (so a
/// constant row gets exactly 0), c = ‖x‖ (for the error bound). Exact form: ½‖x̂ − ŷ‖² over
/// the centred, normalised rows, which are dense: the union's columns plus (n − |union|)
/// columns where both are −mean/norm.
pub struct Correlation;

impl Kernel for Correlation {
    // ⊗ is symmetric in (a, b) bit for bit.
    const SYMMETRIC: bool = true;
    fn aggregate(&self, row: Row, n: usize) -> RowAgg {
        let n = n as f64;
        let mean = if n > 0.0 { sum(row) / n } else { 0.0 };
        let centred: f64 = row
            .values
            .iter()
            .map(|&v| (f64::from(v) - mean).powi(2))
            .sum::<f64>()
            + (n - row.nnz() as f64) * mean * mean;
        RowAgg {
            nnz: row.nnz() as u32,
            a: mean,
            b: centred.sqrt(),
            c: sum_sq(row).sqrt(),
        }
    }
    #[inline]
    fn product(&self, a: f32, b: f32, _q: &QueryView, _ix: &IndexView, _r: usize) -> f64 {
        prod(a, b)
    }
    #[inline]
    fn finish(&self, acc: f64, _c: u32, q: &QueryView, ix: &IndexView, r: usize) -> (f64, f64) {
        let (qa, ra) = (&q.agg, &ix.aggs[r]);
        if qa.b == 0.0 || ra.b == 0.0 {
            return (f64::NAN, 0.0);
        }
        let n = ix.n_cols() as f64;
        let centre = n * qa.a * ra.a;
        let denom = qa.b * ra.b;
        let key = (1.0 - (acc - centre) / denom).clamp(0.0, 2.0);
        let err = 2.0 * gamma(qa.nnz + ra.nnz) * (qa.c * ra.c + centre.abs()) / denom;
        (key, err)
    }
    fn bound_terms(&self, agg: &RowAgg) -> [f64; 2] {
        [agg.c / agg.b, agg.a.abs() / agg.b]
    }
    #[inline]
    fn max_error(&self, q: &QueryView, ix: &IndexView) -> f64 {
        let n = ix.n_cols() as f64;
        let [c_over_b, mean_over_b] = ix.stats.max_terms;
        2.0 * gamma(q.agg.nnz + ix.stats.max_nnz)
            * (q.agg.c / q.agg.b * c_over_b + n * q.agg.a.abs() / q.agg.b * mean_over_b)
    }
    fn untouched_rank(&self, agg: &RowAgg) -> f64 {
        // Key 1 + n·x̄·(ȳ/‖y−ȳ‖)/‖x−x̄‖: monotone in ȳ/‖y−ȳ‖, with the sign of x̄.
        if agg.b == 0.0 {
            f64::NAN
        } else {
            agg.a / agg.b
        }
    }
    #[inline]
    fn untouched_descending(&self, q: &QueryView) -> bool {
        q.agg.a < 0.0
    }
    fn exact(&self, q: &QueryView, ix: &IndexView, r: usize) -> f64 {
        let (qa, ra) = (&q.agg, &ix.aggs[r]);
        let (mx, sx, my, sy) = (qa.a, 1.0 / qa.b, ra.a, 1.0 / ra.b);
        let mut s = 0.0;
        let union = union_fold(q.row, ix.csr.row(r), |a, b| {
            let t = (a - mx) * sx - (b - my) * sy;
            s += t * t;
        });
        let rest = (ix.n_cols() - union) as f64;
        let t = -mx * sx + my * sy;
        s += rest * t * t;
        (0.5 * s).clamp(0.0, 2.0)
    }
}

/// (Σ(xᵢ−yᵢ)²)^½; key d² = ‖x‖² + ‖y‖² − 2x·y (aggregate a = ‖x‖²), exact form Σ∪(a−b)².
/// Identical rows give exactly 0 (their norm and dot product add the same terms in the same
/// order, and the refinement confirms it).
pub struct Euclidean;

impl Kernel for Euclidean {
    // ⊗ is symmetric in (a, b) bit for bit.
    const SYMMETRIC: bool = true;
    fn aggregate(&self, row: Row, _n: usize) -> RowAgg {
        RowAgg::with_a(row, sum_sq(row))
    }
    #[inline]
    fn product(&self, a: f32, b: f32, _q: &QueryView, _ix: &IndexView, _r: usize) -> f64 {
        prod(a, b)
    }
    #[inline]
    fn finish(&self, acc: f64, _c: u32, q: &QueryView, ix: &IndexView, r: usize) -> (f64, f64) {
        let ra = &ix.aggs[r];
        let key = (q.agg.a + ra.a - 2.0 * acc).max(0.0);
        let err = gamma(q.agg.nnz + ra.nnz) * (q.agg.a + ra.a + 2.0 * acc.abs());
        (key, err)
    }
    #[inline]
    fn keys(
        &self,
        acc: &[f64],
        _c: &[u32],
        q: &QueryView,
        ix: &IndexView,
        first: usize,
        out: &mut [f64],
    ) {
        let sq = &ix.agg_a[first..first + out.len()];
        let acc = &acc[..out.len()];
        for i in 0..out.len() {
            // The key without its clamp at 0: at most the key (see `Kernel::keys`).
            out[i] = q.agg.a + sq[i] - 2.0 * acc[i];
        }
    }
    #[inline]
    fn keys_transposed(
        &self,
        acc: &[f64],
        _c: &[u32],
        ix: &IndexView,
        first: usize,
        row: usize,
        out: &mut [f64],
    ) {
        let sq = &ix.agg_a[first..first + out.len()];
        let acc = &acc[..out.len()];
        let sq_row = ix.agg_a[row];
        for i in 0..out.len() {
            out[i] = sq[i] + sq_row - 2.0 * acc[i];
        }
    }
    fn bound_terms(&self, agg: &RowAgg) -> [f64; 2] {
        [agg.a, 0.0]
    }
    #[inline]
    fn max_error(&self, q: &QueryView, ix: &IndexView) -> f64 {
        let m = ix.stats.max_terms[0];
        // |x·y| ≤ ‖x‖‖y‖ (Cauchy–Schwarz).
        gamma(q.agg.nnz + ix.stats.max_nnz) * (q.agg.a + m + 2.0 * (q.agg.a * m).sqrt())
    }
    fn untouched_rank(&self, agg: &RowAgg) -> f64 {
        agg.a
    }
    fn exact(&self, q: &QueryView, ix: &IndexView, r: usize) -> f64 {
        let mut s = 0.0;
        union_fold(q.row, ix.csr.row(r), |a, b| s += (a - b) * (a - b));
        s
    }
    #[inline]
    fn distance(&self, key: f64) -> f64 {
        key.sqrt()
    }
}

/// (½Σ(√xᵢ−√yᵢ)²)^½ for non-negative rows; key = (Σx + Σy)/2 − Σ∩√(xy) (aggregate a = Σx),
/// which for probability vectors is RAFT's 1 − Σ√(xy) and stays a distance for rows that do not
/// sum to 1. Exact form ½Σ∪(√a−√b)².
pub struct Hellinger;

impl Kernel for Hellinger {
    // ⊗ is symmetric in (a, b) bit for bit.
    const SYMMETRIC: bool = true;
    fn aggregate(&self, row: Row, _n: usize) -> RowAgg {
        RowAgg::with_a(row, sum(row))
    }
    #[inline]
    fn product(&self, a: f32, b: f32, _q: &QueryView, _ix: &IndexView, _r: usize) -> f64 {
        prod(a, b).sqrt()
    }
    #[inline]
    fn finish(&self, acc: f64, _c: u32, q: &QueryView, ix: &IndexView, r: usize) -> (f64, f64) {
        let ra = &ix.aggs[r];
        let key = (0.5 * (q.agg.a + ra.a) - acc).max(0.0);
        (key, 2.0 * gamma(q.agg.nnz + ra.nnz) * (q.agg.a + ra.a))
    }
    fn bound_terms(&self, agg: &RowAgg) -> [f64; 2] {
        [agg.a, 0.0]
    }
    #[inline]
    fn max_error(&self, q: &QueryView, ix: &IndexView) -> f64 {
        sum_a_max_error(2.0, q, ix)
    }
    fn untouched_rank(&self, agg: &RowAgg) -> f64 {
        agg.a
    }
    fn exact(&self, q: &QueryView, ix: &IndexView, r: usize) -> f64 {
        let mut s = 0.0;
        union_fold(q.row, ix.csr.row(r), |a, b| {
            let t = a.sqrt() - b.sqrt();
            s += t * t;
        });
        0.5 * s
    }
    #[inline]
    fn distance(&self, key: f64) -> f64 {
        key.sqrt()
    }
}

/// Dice–Sørensen on non-zero patterns, (nx + ny − 2c)/(nx + ny) (SciPy's boolean `dice`, as
/// `cdist` computes it): the dot product of indicator vectors is the intersection count c.
pub struct Dice;

impl Kernel for Dice {
    // ⊗ is symmetric in (a, b) bit for bit.
    const SYMMETRIC: bool = true;
    const NEEDS_ACC: bool = false;
    const NEEDS_COUNT: bool = true;
    fn aggregate(&self, row: Row, _n: usize) -> RowAgg {
        RowAgg::nnz_only(row)
    }
    #[inline]
    fn product(&self, _a: f32, _b: f32, _q: &QueryView, _ix: &IndexView, _r: usize) -> f64 {
        1.0
    }
    #[inline]
    fn finish(&self, _acc: f64, c: u32, q: &QueryView, ix: &IndexView, r: usize) -> (f64, f64) {
        let total = f64::from(q.agg.nnz) + f64::from(ix.aggs[r].nnz);
        ((total - 2.0 * f64::from(c)) / total, 0.0)
    }
    fn untouched_rank(&self, agg: &RowAgg) -> f64 {
        // Key 1, or NaN for an empty row against an empty query: empty rows last.
        f64::from(u8::from(agg.nnz == 0))
    }
    fn exact(&self, q: &QueryView, ix: &IndexView, r: usize) -> f64 {
        let c = intersection_count(q.row, ix.csr.row(r));
        self.finish(0.0, c, q, ix, r).0
    }
}

/// Russell–Rao on non-zero patterns, (n − c)/n (SciPy's boolean `russellrao`): a row against
/// itself gives (n − nnz)/n, not 0 — no diagonal is forced.
pub struct RussellRao;

impl Kernel for RussellRao {
    // ⊗ is symmetric in (a, b) bit for bit.
    const SYMMETRIC: bool = true;
    const NEEDS_ACC: bool = false;
    const NEEDS_COUNT: bool = true;
    fn aggregate(&self, row: Row, _n: usize) -> RowAgg {
        RowAgg::nnz_only(row)
    }
    #[inline]
    fn product(&self, _a: f32, _b: f32, _q: &QueryView, _ix: &IndexView, _r: usize) -> f64 {
        1.0
    }
    #[inline]
    fn finish(&self, _acc: f64, c: u32, _q: &QueryView, ix: &IndexView, _r: usize) -> (f64, f64) {
        let n = ix.n_cols() as f64;
        ((n - f64::from(c)) / n, 0.0)
    }
    fn untouched_rank(&self, _agg: &RowAgg) -> f64 {
        0.0
    }
    fn exact(&self, q: &QueryView, ix: &IndexView, r: usize) -> f64 {
        let c = intersection_count(q.row, ix.csr.row(r));
        self.finish(0.0, c, q, ix, r).0
    }
}

/// Jaccard on non-zero patterns, (nx + ny − 2c)/(nx + ny − c), and 0 when both rows are empty
/// (SciPy's `jaccard`, which reads its inputs as booleans).
pub struct Jaccard;

impl Kernel for Jaccard {
    // ⊗ is symmetric in (a, b) bit for bit.
    const SYMMETRIC: bool = true;
    const NEEDS_ACC: bool = false;
    const NEEDS_COUNT: bool = true;
    fn aggregate(&self, row: Row, _n: usize) -> RowAgg {
        RowAgg::nnz_only(row)
    }
    #[inline]
    fn product(&self, _a: f32, _b: f32, _q: &QueryView, _ix: &IndexView, _r: usize) -> f64 {
        1.0
    }
    #[inline]
    fn finish(&self, _acc: f64, c: u32, q: &QueryView, ix: &IndexView, r: usize) -> (f64, f64) {
        let (nx, ny, c) = (
            f64::from(q.agg.nnz),
            f64::from(ix.aggs[r].nnz),
            f64::from(c),
        );
        let union = nx + ny - c;
        if union == 0.0 {
            return (0.0, 0.0);
        }
        ((union - c) / union, 0.0)
    }
    fn untouched_rank(&self, agg: &RowAgg) -> f64 {
        // Key 1, or 0 for an empty row against an empty query: empty rows first.
        f64::from(u8::from(agg.nnz > 0))
    }
    fn exact(&self, q: &QueryView, ix: &IndexView, r: usize) -> f64 {
        let c = intersection_count(q.row, ix.csr.row(r));
        self.finish(0.0, c, q, ix, r).0
    }
}
