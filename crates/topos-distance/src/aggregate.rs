//! Non-annihilating products computed as one intersection pass plus per-row aggregates.
//!
//! The union of non-zero columns is x \ y, x ∩ y and y \ x (paper Eq. 3). For a sum over the
//! union, Σ_{x\y} f(a, 0) = Σ_x f(a, 0) − Σ_{x∩y} f(a, 0): a per-row aggregate minus a term the
//! intersection pass can add. So every summing NAMM distance needs only the intersection — the
//! same work as a dot product — e.g. L1 = ‖x‖₁ + ‖y‖₁ − Σ∩(|a| + |b| − |a − b|).
//!
//! Exactness: where f(a, 0) is a constant (Canberra: |a|/|a| = 1; Hamming: 1) the
//! x-only part is an integer count, nx − c, and the identity is exact. Where f(a, 0) is a real
//! (Manhattan |a|, Minkowski |a|ᵖ, Jensen–Shannon p·ln 2) the subtraction cancels for
//! near-duplicate rows; those kernels report an error bound and the engine falls back to the
//! union form ([`crate::union`]) when it matters (see [`crate::kernel`]). KL divergence's x-only
//! part is +∞ whenever it is non-empty, so it too needs only the count.

use crate::csr::Row;
use crate::kernel::{gamma, sum, sum_a_max_error, sum_abs, IndexView, Kernel, QueryView, RowAgg};
use crate::union::union_fold;
use std::f64::consts::LN_2;

/// The key a(x) + a(y) − acc of the sum-splitting kernels (Manhattan, Minkowski: aggregate
/// a = Σ f(|x|, 0)), and its error bound `factor`·γ·(a(x) + a(y)).
#[inline]
fn aggregates_minus(factor: f64, acc: f64, q: &QueryView, ix: &IndexView, r: usize) -> (f64, f64) {
    let ra = &ix.aggs[r];
    let s = q.agg.a + ra.a;
    ((s - acc).max(0.0), factor * gamma(q.agg.nnz + ra.nnz) * s)
}

/// Aggregate a = 1/Σx of the kernels that normalise rows to distributions (Jensen–Shannon,
/// KL); +∞ for a row that sums to 0, whose distances are all NaN.
#[inline]
fn inverse_sum_agg(row: Row) -> RowAgg {
    RowAgg::with_a(row, 1.0 / sum(row))
}

/// Either row sums to 0 and cannot be normalised (the distance is NaN).
#[inline]
fn unnormalisable(x: &RowAgg, y: &RowAgg) -> bool {
    x.a.is_infinite() || y.a.is_infinite()
}

/// [`Kernel::untouched_rank`] of the normalising kernels: their empty-intersection key is a
/// constant (ln 2 or +∞); NaN for a row that sums to 0.
#[inline]
fn inverse_sum_rank(agg: &RowAgg) -> f64 {
    if agg.a.is_infinite() {
        f64::NAN
    } else {
        0.0
    }
}

/// Σ|xᵢ − yᵢ|; key = ‖x‖₁ + ‖y‖₁ − Σ∩(|a| + |b| − |a − b|) (aggregate a = ‖x‖₁).
pub struct Manhattan;

impl Kernel for Manhattan {
    // ⊗ is symmetric in (a, b) bit for bit.
    const SYMMETRIC: bool = true;
    fn aggregate(&self, row: Row, _n: usize) -> RowAgg {
        RowAgg::with_a(row, sum_abs(row))
    }
    #[inline]
    fn product(&self, a: f32, b: f32, _q: &QueryView, _ix: &IndexView, _r: usize) -> f64 {
        let (a, b) = (f64::from(a), f64::from(b));
        a.abs() + b.abs() - (a - b).abs()
    }
    #[inline]
    fn finish(&self, acc: f64, _c: u32, q: &QueryView, ix: &IndexView, r: usize) -> (f64, f64) {
        aggregates_minus(2.0, acc, q, ix, r)
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
        union_fold(q.row, ix.csr.row(r), |a, b| s += (a - b).abs());
        s
    }
}

/// (Σ|xᵢ − yᵢ|ᵖ)^(1/p) for 1 ≤ p < ∞, with the absolute value (RAFT's kernel drops it, which is
/// wrong for odd p); key = Σ|x|ᵖ + Σ|y|ᵖ − Σ∩(|a|ᵖ + |b|ᵖ − |a − b|ᵖ) (aggregate a = Σ|x|ᵖ).
pub struct Minkowski {
    pub p: f64,
}

impl Minkowski {
    #[inline]
    fn pow(&self, x: f64) -> f64 {
        if self.p == 2.0 {
            x * x
        } else if self.p == 1.0 {
            x
        } else {
            x.powf(self.p)
        }
    }
}

impl Kernel for Minkowski {
    // ⊗ is symmetric in (a, b) bit for bit.
    const SYMMETRIC: bool = true;
    fn aggregate(&self, row: Row, _n: usize) -> RowAgg {
        RowAgg::with_a(
            row,
            row.values
                .iter()
                .map(|&v| self.pow(f64::from(v).abs()))
                .sum(),
        )
    }
    #[inline]
    fn product(&self, a: f32, b: f32, _q: &QueryView, _ix: &IndexView, _r: usize) -> f64 {
        let (a, b) = (f64::from(a), f64::from(b));
        self.pow(a.abs()) + self.pow(b.abs()) - self.pow((a - b).abs())
    }
    #[inline]
    fn finish(&self, acc: f64, _c: u32, q: &QueryView, ix: &IndexView, r: usize) -> (f64, f64) {
        aggregates_minus(4.0, acc, q, ix, r)
    }
    fn bound_terms(&self, agg: &RowAgg) -> [f64; 2] {
        [agg.a, 0.0]
    }
    #[inline]
    fn max_error(&self, q: &QueryView, ix: &IndexView) -> f64 {
        sum_a_max_error(4.0, q, ix)
    }
    fn untouched_rank(&self, agg: &RowAgg) -> f64 {
        agg.a
    }
    fn exact(&self, q: &QueryView, ix: &IndexView, r: usize) -> f64 {
        let mut s = 0.0;
        union_fold(q.row, ix.csr.row(r), |a, b| s += self.pow((a - b).abs()));
        s
    }
    #[inline]
    fn distance(&self, key: f64) -> f64 {
        if self.p == 1.0 {
            key
        } else if self.p == 2.0 {
            key.sqrt()
        } else {
            key.powf(1.0 / self.p)
        }
    }
}

/// Σ|xᵢ − yᵢ|/(|xᵢ| + |yᵢ|) with 0/0 = 0 (SciPy): every x-only or y-only column adds exactly 1,
/// so key = (nx − c) + (ny − c) + Σ∩ |a − b|/(|a| + |b|), exact.
pub struct Canberra;

impl Kernel for Canberra {
    // ⊗ is symmetric in (a, b) bit for bit.
    const SYMMETRIC: bool = true;
    const NEEDS_COUNT: bool = true;
    fn aggregate(&self, row: Row, _n: usize) -> RowAgg {
        RowAgg::nnz_only(row)
    }
    #[inline]
    fn product(&self, a: f32, b: f32, _q: &QueryView, _ix: &IndexView, _r: usize) -> f64 {
        let (a, b) = (f64::from(a), f64::from(b));
        (a - b).abs() / (a.abs() + b.abs())
    }
    #[inline]
    fn finish(&self, acc: f64, c: u32, q: &QueryView, ix: &IndexView, r: usize) -> (f64, f64) {
        let only = f64::from(q.agg.nnz - c) + f64::from(ix.aggs[r].nnz - c);
        (only + acc, 0.0)
    }
    fn untouched_rank(&self, agg: &RowAgg) -> f64 {
        f64::from(agg.nnz)
    }
    fn exact(&self, q: &QueryView, ix: &IndexView, r: usize) -> f64 {
        let mut s = 0.0;
        union_fold(q.row, ix.csr.row(r), |a, b| {
            s += (a - b).abs() / (a.abs() + b.abs())
        });
        s
    }
}

/// #{i : xᵢ ≠ yᵢ}/n (SciPy `hamming` on the values): x-only and y-only columns always differ, so
/// key = (nx + ny − c − #∩{a = b})/n, exact.
pub struct Hamming;

impl Kernel for Hamming {
    // ⊗ is symmetric in (a, b) bit for bit.
    const SYMMETRIC: bool = true;
    const NEEDS_COUNT: bool = true;
    fn aggregate(&self, row: Row, _n: usize) -> RowAgg {
        RowAgg::nnz_only(row)
    }
    #[inline]
    fn product(&self, a: f32, b: f32, _q: &QueryView, _ix: &IndexView, _r: usize) -> f64 {
        f64::from(u8::from(a == b))
    }
    #[inline]
    fn finish(&self, acc: f64, c: u32, q: &QueryView, ix: &IndexView, r: usize) -> (f64, f64) {
        let differ = f64::from(q.agg.nnz) + f64::from(ix.aggs[r].nnz) - f64::from(c) - acc;
        (differ / ix.n_cols() as f64, 0.0)
    }
    fn untouched_rank(&self, agg: &RowAgg) -> f64 {
        f64::from(agg.nnz)
    }
    fn exact(&self, q: &QueryView, ix: &IndexView, r: usize) -> f64 {
        let mut d = 0.0;
        union_fold(q.row, ix.csr.row(r), |a, b| {
            d += f64::from(u8::from(a != b))
        });
        d / ix.n_cols() as f64
    }
}

/// Jensen–Shannon distance as SciPy's `jensenshannon` (natural log): rows are normalised to
/// p = x/Σx, q = y/Σy, and d = (½Σ p ln(p/m) + q ln(q/m))^½ with m = (p + q)/2; NaN if a row sums
/// to 0. An x-only column adds p·ln 2, so with Σp = Σq = 1 the key (d²) is
/// ½(2 ln 2 − Σ∩[p ln(1 + q/p) + q ln(1 + p/q)]). Aggregate a = 1/Σx.
pub struct JensenShannon;

impl JensenShannon {
    /// p ln(2p/(p+q)) + q ln(2q/(p+q)) for one column of the union (0·ln 0 = 0).
    #[inline]
    fn union_term(p: f64, q: f64) -> f64 {
        if p == 0.0 {
            q * LN_2
        } else if q == 0.0 {
            p * LN_2
        } else {
            let s = p + q;
            p * ((p - q) / s).ln_1p() + q * ((q - p) / s).ln_1p()
        }
    }
}

impl Kernel for JensenShannon {
    // ⊗ is symmetric in (a, b) bit for bit.
    const SYMMETRIC: bool = true;
    fn aggregate(&self, row: Row, _n: usize) -> RowAgg {
        inverse_sum_agg(row)
    }
    #[inline]
    fn product(&self, a: f32, b: f32, q: &QueryView, ix: &IndexView, r: usize) -> f64 {
        let p = f64::from(a) * q.agg.a;
        let qq = f64::from(b) * ix.aggs[r].a;
        p * (qq / p).ln_1p() + qq * (p / qq).ln_1p()
    }
    #[inline]
    fn finish(&self, acc: f64, _c: u32, q: &QueryView, ix: &IndexView, r: usize) -> (f64, f64) {
        let ra = &ix.aggs[r];
        if unnormalisable(&q.agg, ra) {
            return (f64::NAN, 0.0);
        }
        let key = (0.5 * (2.0 * LN_2 - acc)).max(0.0);
        (key, 4.0 * gamma(q.agg.nnz + ra.nnz))
    }
    #[inline]
    fn max_error(&self, q: &QueryView, ix: &IndexView) -> f64 {
        4.0 * gamma(q.agg.nnz + ix.stats.max_nnz)
    }
    fn untouched_rank(&self, agg: &RowAgg) -> f64 {
        inverse_sum_rank(agg)
    }
    fn exact(&self, q: &QueryView, ix: &IndexView, r: usize) -> f64 {
        if unnormalisable(&q.agg, &ix.aggs[r]) {
            return f64::NAN;
        }
        let (sx, sy) = (q.agg.a, ix.aggs[r].a);
        let mut s = 0.0;
        union_fold(q.row, ix.csr.row(r), |a, b| {
            s += Self::union_term(a * sx, b * sy)
        });
        (0.5 * s).max(0.0)
    }
    #[inline]
    fn distance(&self, key: f64) -> f64 {
        key.sqrt()
    }
}

/// Kullback–Leibler divergence KL(p ‖ q) as `scipy.stats.entropy(p, q)` (natural log): rows are
/// normalised to p = x/Σx (the query) and q = y/Σy (the index row); Σ p ln(p/q) is +∞ if some
/// column has p > 0 and q = 0 (an x-only column: nx > c), NaN if a row sums to 0. Not
/// symmetric. Aggregate a = 1/Σx. Rounding can make a near-zero sum of signed terms slightly
/// negative; it is clamped to 0.
pub struct KlDivergence;

impl Kernel for KlDivergence {
    const NEEDS_COUNT: bool = true;
    fn aggregate(&self, row: Row, _n: usize) -> RowAgg {
        inverse_sum_agg(row)
    }
    #[inline]
    fn product(&self, a: f32, b: f32, q: &QueryView, ix: &IndexView, r: usize) -> f64 {
        let p = f64::from(a) * q.agg.a;
        let qq = f64::from(b) * ix.aggs[r].a;
        p * (p / qq).ln()
    }
    #[inline]
    fn finish(&self, acc: f64, c: u32, q: &QueryView, ix: &IndexView, r: usize) -> (f64, f64) {
        let ra = &ix.aggs[r];
        if unnormalisable(&q.agg, ra) {
            return (f64::NAN, 0.0);
        }
        if q.agg.nnz > c {
            return (f64::INFINITY, 0.0);
        }
        (acc.max(0.0), 0.0)
    }
    fn untouched_rank(&self, agg: &RowAgg) -> f64 {
        inverse_sum_rank(agg)
    }
    fn exact(&self, q: &QueryView, ix: &IndexView, r: usize) -> f64 {
        if unnormalisable(&q.agg, &ix.aggs[r]) {
            return f64::NAN;
        }
        let (sx, sy) = (q.agg.a, ix.aggs[r].a);
        let mut s = 0.0;
        union_fold(q.row, ix.csr.row(r), |a, b| {
            if a > 0.0 {
                s += if b > 0.0 {
                    a * sx * ((a * sx) / (b * sy)).ln()
                } else {
                    f64::INFINITY
                };
            }
        });
        s.max(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn js_union_term_is_zero_for_equal_and_ln2_for_disjoint() {
        assert_eq!(JensenShannon::union_term(0.3, 0.3), 0.0);
        assert!((JensenShannon::union_term(0.5, 0.0) - 0.5 * LN_2).abs() < 1e-16);
        assert!((JensenShannon::union_term(0.0, 0.25) - 0.25 * LN_2).abs() < 1e-16);
    }

    #[test]
    fn minkowski_pow_keeps_the_absolute_value_for_odd_p() {
        let m = Minkowski { p: 3.0 };
        // |1 − 3|³ = 8, not (1 − 3)³ = −8.
        let (a, b) = (1.0f64, 3.0f64);
        assert_eq!(m.pow((a - b).abs()), 8.0);
    }
}
