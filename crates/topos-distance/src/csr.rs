//! Compressed sparse rows: the one input format of every distance.
//!
//! Row `i` holds the columns `indices[offsets[i]..offsets[i + 1]]`, strictly increasing, with
//! `values` beside them. Offsets are 64-bit so a matrix may hold more than 2³¹ (or 2³²)
//! non-zeros; column indices are 32-bit (vocabularies and feature spaces stay far below 2³²).
//!
//! Invariants are checked once, at construction: sorted unique columns (the union merge of
//! [`crate::union`] and the intersection counts of the aggregate metrics rely on them), finite
//! values (NaN would poison every distance of its row silently), and **no stored zeros**: the
//! set metrics (Dice, Jaccard, Hamming, Russell–Rao, Canberra) count non-zeros, so an explicit
//! zero would change their value. [`CsrMatrix::from_triplets`] and [`CsrMatrix::from_dense`]
//! drop zeros; [`CsrMatrix::new`] refuses them.

use crate::kernel::{sum_abs, sum_sq};
use crate::DistanceError;
use std::ops::Range;

/// A sparse matrix of `f32` values in CSR form with 64-bit offsets.
#[derive(Clone, Debug, PartialEq)]
pub struct CsrMatrix {
    n_cols: usize,
    offsets: Vec<u64>,
    indices: Vec<u32>,
    values: Vec<f32>,
}

/// One row: its non-zero columns (increasing) and their values.
#[derive(Clone, Copy, Debug)]
pub struct Row<'a> {
    pub indices: &'a [u32],
    pub values: &'a [f32],
}

impl Row<'static> {
    /// A row without non-zeros.
    pub const EMPTY: Row<'static> = Row {
        indices: &[],
        values: &[],
    };
}

impl Row<'_> {
    /// Number of stored non-zeros.
    #[inline]
    pub fn nnz(&self) -> usize {
        self.indices.len()
    }
}

impl CsrMatrix {
    /// A matrix from its raw parts, validated (see the module documentation).
    pub fn new(
        n_cols: usize,
        offsets: Vec<u64>,
        indices: Vec<u32>,
        values: Vec<f32>,
    ) -> Result<Self, DistanceError> {
        let bad = |why: String| Err(DistanceError::InvalidCsr(why));
        if offsets.first() != Some(&0) {
            return bad("offsets must start with 0".into());
        }
        if indices.len() != values.len() {
            return bad(format!(
                "{} column indices but {} values",
                indices.len(),
                values.len()
            ));
        }
        if *offsets.last().unwrap() != indices.len() as u64 {
            return bad(format!(
                "the last offset is {} but there are {} non-zeros",
                offsets.last().unwrap(),
                indices.len()
            ));
        }
        if n_cols > u32::MAX as usize + 1 {
            return bad(format!("{n_cols} columns exceed 2^32"));
        }
        for (row, w) in offsets.windows(2).enumerate() {
            if w[1] < w[0] {
                return bad(format!("offsets decrease at row {row}"));
            }
            let (a, b) = (w[0] as usize, w[1] as usize);
            let cols = &indices[a..b];
            for (j, &c) in cols.iter().enumerate() {
                if c as usize >= n_cols {
                    return bad(format!(
                        "row {row}: column {c} is out of range (the matrix has {n_cols} columns)"
                    ));
                }
                if j > 0 && cols[j - 1] >= c {
                    return bad(format!(
                        "row {row}: column indices must strictly increase ({} then {c})",
                        cols[j - 1]
                    ));
                }
                let v = values[a + j];
                if !v.is_finite() {
                    return Err(DistanceError::NonFinite {
                        row,
                        col: c,
                        value: v,
                    });
                }
                if v == 0.0 {
                    return bad(format!(
                        "row {row}, column {c}: stored zero (drop zeros, e.g. with from_triplets)"
                    ));
                }
            }
        }
        Ok(Self {
            n_cols,
            offsets,
            indices,
            values,
        })
    }

    /// A matrix from `(row, column, value)` triplets in any order: duplicates are summed, zeros
    /// (including duplicates that sum to zero) are dropped.
    pub fn from_triplets(
        n_rows: usize,
        n_cols: usize,
        mut triplets: Vec<(usize, u32, f32)>,
    ) -> Result<Self, DistanceError> {
        triplets.sort_unstable_by_key(|t| (t.0, t.1));
        let mut offsets = vec![0u64; n_rows + 1];
        let mut indices = Vec::with_capacity(triplets.len());
        let mut values: Vec<f32> = Vec::with_capacity(triplets.len());
        let mut rows = Vec::with_capacity(triplets.len());
        for (r, c, v) in triplets {
            if r >= n_rows {
                return Err(DistanceError::InvalidCsr(format!(
                    "triplet row {r} is out of range (the matrix has {n_rows} rows)"
                )));
            }
            if rows.last() == Some(&r) && indices.last() == Some(&c) {
                *values.last_mut().unwrap() += v;
            } else {
                rows.push(r);
                indices.push(c);
                values.push(v);
            }
        }
        let mut keep_idx = Vec::with_capacity(indices.len());
        let mut keep_val = Vec::with_capacity(values.len());
        for ((r, c), v) in rows.into_iter().zip(indices).zip(values) {
            if v != 0.0 {
                offsets[r + 1] += 1;
                keep_idx.push(c);
                keep_val.push(v);
            }
        }
        for i in 0..n_rows {
            offsets[i + 1] += offsets[i];
        }
        Self::new(n_cols, offsets, keep_idx, keep_val)
    }

    /// A matrix from dense rows of equal length (zeros dropped); for tests and small inputs.
    pub fn from_dense(rows: &[Vec<f32>], n_cols: usize) -> Result<Self, DistanceError> {
        let mut offsets = Vec::with_capacity(rows.len() + 1);
        offsets.push(0u64);
        let (mut indices, mut values) = (Vec::new(), Vec::new());
        for (i, row) in rows.iter().enumerate() {
            if row.len() != n_cols {
                return Err(DistanceError::InvalidCsr(format!(
                    "dense row {i} has {} values, expected {n_cols}",
                    row.len()
                )));
            }
            for (c, &v) in row.iter().enumerate() {
                if v != 0.0 {
                    indices.push(c as u32);
                    values.push(v);
                }
            }
            offsets.push(indices.len() as u64);
        }
        Self::new(n_cols, offsets, indices, values)
    }

    /// Number of rows.
    #[inline]
    pub fn n_rows(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Number of columns (the dimension of every row vector).
    #[inline]
    pub fn n_cols(&self) -> usize {
        self.n_cols
    }

    /// Number of stored non-zeros.
    #[inline]
    pub fn nnz(&self) -> u64 {
        self.indices.len() as u64
    }

    /// Row `i`.
    #[inline]
    pub fn row(&self, i: usize) -> Row<'_> {
        let (a, b) = (self.offsets[i] as usize, self.offsets[i + 1] as usize);
        Row {
            indices: &self.indices[a..b],
            values: &self.values[a..b],
        }
    }

    /// The offsets array (`n_rows + 1` entries).
    pub fn offsets(&self) -> &[u64] {
        &self.offsets
    }

    /// All column indices, row after row.
    pub fn indices(&self) -> &[u32] {
        &self.indices
    }

    /// All values, row after row.
    pub fn values(&self) -> &[f32] {
        &self.values
    }

    /// The raw parts `(n_cols, offsets, indices, values)`.
    pub fn into_parts(self) -> (usize, Vec<u64>, Vec<u32>, Vec<f32>) {
        (self.n_cols, self.offsets, self.indices, self.values)
    }

    /// The first negative value as `(row, column, value)`, if any.
    pub fn first_negative(&self) -> Option<(usize, u32, f32)> {
        self.first_negative_in(0..self.n_rows())
    }

    /// [`CsrMatrix::first_negative`] among the rows `rows` only.
    pub fn first_negative_in(&self, rows: Range<usize>) -> Option<(usize, u32, f32)> {
        let (a, b) = (
            self.offsets[rows.start] as usize,
            self.offsets[rows.end] as usize,
        );
        let pos = a + self.values[a..b].iter().position(|&v| v < 0.0)?;
        let row = self.offsets.partition_point(|&o| o <= pos as u64) - 1;
        Some((row, self.indices[pos], self.values[pos]))
    }

    /// Scales every row to unit L1 norm (Σ|x| = 1) or unit L2 norm; empty rows stay empty.
    pub fn normalize_rows(&mut self, norm: RowNorm) {
        for i in 0..self.n_rows() {
            let n = match norm {
                RowNorm::L1 => sum_abs(self.row(i)),
                RowNorm::L2 => sum_sq(self.row(i)).sqrt(),
            };
            let (a, b) = (self.offsets[i] as usize, self.offsets[i + 1] as usize);
            let vals = &mut self.values[a..b];
            if n > 0.0 {
                for v in vals.iter_mut() {
                    // A value can underflow to zero only if it is below 2^-149 times the norm;
                    // keep the invariant (no stored zeros) by flooring at the smallest subnormal.
                    let x = (f64::from(*v) / n) as f32;
                    *v = if x == 0.0 {
                        f32::from_bits(1).copysign(*v)
                    } else {
                        x
                    };
                }
            }
        }
    }
}

/// A row normalization.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowNorm {
    /// Σ|x_i| = 1 (probability vectors for non-negative rows).
    L1,
    /// (Σx_i²)^½ = 1.
    L2,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_and_views_rows() {
        let m = CsrMatrix::from_dense(&[vec![0.0, 1.0, 2.0], vec![0.0; 3], vec![3.0, 0.0, 0.0]], 3)
            .unwrap();
        assert_eq!(m.n_rows(), 3);
        assert_eq!(m.n_cols(), 3);
        assert_eq!(m.nnz(), 3);
        assert_eq!(m.row(0).indices, &[1, 2]);
        assert_eq!(m.row(1).nnz(), 0);
        assert_eq!(m.row(2).values, &[3.0]);
        assert_eq!(m.offsets(), &[0, 2, 2, 3]);
    }

    #[test]
    fn triplets_sum_duplicates_and_drop_zeros() {
        let m = CsrMatrix::from_triplets(
            2,
            4,
            vec![
                (1, 3, 1.0),
                (0, 2, 1.0),
                (0, 2, 2.0),
                (1, 0, 5.0),
                (1, 0, -5.0),
            ],
        )
        .unwrap();
        assert_eq!(m.row(0).indices, &[2]);
        assert_eq!(m.row(0).values, &[3.0]);
        assert_eq!(m.row(1).indices, &[3]);
        assert!(CsrMatrix::from_triplets(1, 4, vec![(1, 0, 1.0)]).is_err());
    }

    #[test]
    fn refuses_malformed_parts() {
        let e = |r: Result<CsrMatrix, DistanceError>| r.unwrap_err().to_string();
        assert!(e(CsrMatrix::new(3, vec![1, 1], vec![0], vec![1.0])).contains("start with 0"));
        assert!(e(CsrMatrix::new(3, vec![0, 2], vec![0], vec![1.0])).contains("last offset"));
        assert!(e(CsrMatrix::new(3, vec![0, 1], vec![3], vec![1.0])).contains("out of range"));
        assert!(e(CsrMatrix::new(3, vec![0, 2], vec![1, 1], vec![1.0, 1.0]))
            .contains("strictly increase"));
        assert!(e(CsrMatrix::new(3, vec![0, 1], vec![1], vec![0.0])).contains("stored zero"));
        assert!(e(CsrMatrix::new(3, vec![0, 1], vec![1], vec![f32::NAN])).contains("not finite"));
        assert!(e(CsrMatrix::new(3, vec![0, 1, 0, 1], vec![1], vec![1.0])).contains("decrease"));
        assert!(e(CsrMatrix::new(3, vec![0, 1], vec![1], vec![])).contains("values"));
    }

    #[test]
    fn normalizes_rows_and_finds_negatives() {
        let mut m =
            CsrMatrix::from_dense(&[vec![1.0, 3.0], vec![0.0, 0.0], vec![3.0, -4.0]], 2).unwrap();
        assert_eq!(m.first_negative(), Some((2, 1, -4.0)));
        let mut l2 = m.clone();
        m.normalize_rows(RowNorm::L1);
        assert_eq!(m.row(0).values, &[0.25, 0.75]);
        assert_eq!(m.row(1).nnz(), 0);
        l2.normalize_rows(RowNorm::L2);
        assert_eq!(l2.row(2).values, &[0.6, -0.8]);
    }
}
