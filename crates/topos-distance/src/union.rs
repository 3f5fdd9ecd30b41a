//! The non-annihilating multiplicative monoid (NAMM) over the union of non-zero columns
//! (paper §2.2 Eq. 3, §3.3.1, Appendix A.1).
//!
//! For a product with f(a, 0) ≠ 0 (|a − 0| = |a| for Manhattan) the intersection is not enough:
//! every column non-zero in either row contributes. The paper's GPU kernel covers the union in
//! two passes — x's non-zeros with lookups into y (the intersection and x \ y), then y's non-zeros
//! skipping those found in x (y \ x). On the CPU, with both rows' columns sorted (a CSR
//! invariant), one merge visits exactly the same three parts in a single sweep; [`union_fold`]
//! is that merge. It is the exact form every cancelling expansion falls back to, and the
//! Chebyshev kernel below, whose max monoid has no inverse, runs over the union itself.

use crate::csr::Row;
use crate::kernel::{IndexView, Kernel, QueryView, RowAgg};

/// Calls `f(a, b)` for every column non-zero in `x` or `y`, in increasing column order, with 0
/// standing for the missing side (the NAMM's identity: f is never annihilated by a zero).
/// Returns the number of columns in the union.
#[inline]
pub fn union_fold(x: Row, y: Row, mut f: impl FnMut(f64, f64)) -> usize {
    let (xi, xv, yi, yv) = (x.indices, x.values, y.indices, y.values);
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < xi.len() && j < yi.len() {
        n += 1;
        match xi[i].cmp(&yi[j]) {
            std::cmp::Ordering::Less => {
                f(f64::from(xv[i]), 0.0);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                f(0.0, f64::from(yv[j]));
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                f(f64::from(xv[i]), f64::from(yv[j]));
                i += 1;
                j += 1;
            }
        }
    }
    for &v in &xv[i..] {
        f(f64::from(v), 0.0);
    }
    for &v in &yv[j..] {
        f(0.0, f64::from(v));
    }
    n + (xi.len() - i) + (yi.len() - j)
}

/// |x ∩ y|, the columns non-zero in both rows, counted over the union (the counting kernels'
/// exact form).
#[inline]
pub(crate) fn intersection_count(x: Row, y: Row) -> u32 {
    let mut c = 0u32;
    union_fold(x, y, |a, b| c += u32::from(a != 0.0 && b != 0.0));
    c
}

/// Positions of a row's values by decreasing magnitude (ties: by position, so deterministic).
pub fn magnitude_order(values: &[f32], out: &mut Vec<u32>) {
    out.clear();
    out.extend(0..values.len() as u32);
    out.sort_by(|&p, &q| {
        values[q as usize]
            .abs()
            .total_cmp(&values[p as usize].abs())
            .then(p.cmp(&q))
    });
}

/// Chebyshev, maxᵢ |xᵢ − yᵢ|: the max monoid over the union.
///
/// The union splits into three parts (Eq. 3) and the max over each is found without walking
/// the union pair by pair: the intersection's max is the engine's accumulator; x \ y's max is
/// the first of x's columns, in decreasing magnitude, that y lacks (binary search in y's sorted
/// columns); y \ x's likewise with x's columns marked in a dense flag array. A walk stops as soon
/// as the magnitudes fall below the max found so far, so a pair costs O(1) probes unless the rows
/// overlap heavily; rows that do not intersect at all need only the two rows' largest
/// magnitudes (aggregate `a`). Max has no rounding: the result is exact.
pub struct Chebyshev;

impl Kernel for Chebyshev {
    const MAX_MONOID: bool = true;
    const NEEDS_COUNT: bool = true;
    const NEEDS_QUERY_ORDER: bool = true;

    fn aggregate(&self, row: Row, _n_cols: usize) -> RowAgg {
        RowAgg::with_a(
            row,
            row.values
                .iter()
                .fold(0.0f64, |m, &v| m.max(f64::from(v).abs())),
        )
    }

    #[inline]
    fn product(&self, a: f32, b: f32, _q: &QueryView, _ix: &IndexView, _r: usize) -> f64 {
        (f64::from(a) - f64::from(b)).abs()
    }

    #[inline]
    fn finish(&self, acc: f64, count: u32, q: &QueryView, ix: &IndexView, r: usize) -> (f64, f64) {
        let ra = &ix.aggs[r];
        if count == 0 {
            return (q.agg.a.max(ra.a), 0.0);
        }
        let mut m = acc;
        if count < q.agg.nnz {
            let y = ix.csr.row(r);
            for &p in q.by_magnitude {
                let a = f64::from(q.row.values[p as usize]).abs();
                if a <= m {
                    break;
                }
                if y.indices.binary_search(&q.row.indices[p as usize]).is_err() {
                    m = a;
                    break;
                }
            }
        }
        if count < ra.nnz {
            let start = ix.csr.offsets()[r] as usize;
            let y = ix.csr.row(r);
            for &p in &ix.by_magnitude[start..start + y.nnz()] {
                let b = f64::from(y.values[p as usize]).abs();
                if b <= m {
                    break;
                }
                if !q.marker[y.indices[p as usize] as usize] {
                    m = b;
                    break;
                }
            }
        }
        (m, 0.0)
    }

    fn untouched_rank(&self, agg: &RowAgg) -> f64 {
        // Key max(max|x|, max|y|).
        agg.a
    }
    fn exact(&self, q: &QueryView, ix: &IndexView, r: usize) -> f64 {
        let mut m = 0.0f64;
        union_fold(q.row, ix.csr.row(r), |a, b| m = m.max((a - b).abs()));
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CsrMatrix;

    #[test]
    fn union_visits_every_column_once_in_order() {
        let m = CsrMatrix::from_dense(
            &[vec![1.0, 0.0, 2.0, 0.0, 5.0], vec![0.0, 3.0, 4.0, 0.0, 0.0]],
            5,
        )
        .unwrap();
        let mut seen = Vec::new();
        let n = union_fold(m.row(0), m.row(1), |a, b| seen.push((a, b)));
        assert_eq!(n, 4);
        assert_eq!(seen, vec![(1.0, 0.0), (0.0, 3.0), (2.0, 4.0), (5.0, 0.0)]);
        // Manhattan by the NAMM (Appendix A.1): |1| + |3| + |2−4| + |5| = 11.
        let mut l1 = 0.0;
        union_fold(m.row(0), m.row(1), |a, b| l1 += (a - b).abs());
        assert_eq!(l1, 11.0);
    }

    #[test]
    fn magnitude_order_is_decreasing_and_stable() {
        let mut out = Vec::new();
        magnitude_order(&[1.0, -3.0, 2.0, 3.0], &mut out);
        assert_eq!(out, vec![1, 3, 2, 0]);
    }
}
