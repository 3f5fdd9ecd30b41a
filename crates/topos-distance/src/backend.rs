//! The seam between what is computed and where: a [`Backend`] prepares an index matrix once for
//! one metric ([`PreparedIndex`]) and then answers batches of queries. Two implement it: the
//! CPU engine ([`crate::cpu`]) and the CUDA engine (`gpu`, with the `cuda` feature), which
//! uploads the index in `prepare` and runs one kernel launch per batch; callers do not change.
//! The checks every backend makes the same way live here.

use crate::{CsrMatrix, DistanceError, Metric};
use std::ops::Range;

/// The k nearest index rows of each query of a batch, best first.
#[derive(Clone, Debug, PartialEq)]
pub struct Neighbors {
    /// Neighbours per query.
    pub k: usize,
    /// Index rows, `k` per query, query after query.
    pub indices: Vec<u32>,
    /// Their distances (for the dot product: the dot products), beside `indices`.
    pub distances: Vec<f32>,
}

impl Neighbors {
    /// Number of queries.
    pub fn len(&self) -> usize {
        self.indices.len().checked_div(self.k).unwrap_or(0)
    }

    /// Whether there are no queries.
    pub fn is_empty(&self) -> bool {
        self.indices.is_empty()
    }

    /// The neighbours of query `i` of the batch: (index rows, distances).
    pub fn row(&self, i: usize) -> (&[u32], &[f32]) {
        let r = i * self.k..(i + 1) * self.k;
        (&self.indices[r.clone()], &self.distances[r])
    }

    /// Appends another batch's neighbours (same k).
    pub fn extend(&mut self, other: Neighbors) {
        assert_eq!(self.k, other.k, "batches with different k");
        self.indices.extend(other.indices);
        self.distances.extend(other.distances);
    }
}

/// An index matrix prepared for one metric on one backend.
pub trait PreparedIndex: Send + Sync {
    /// The metric it was prepared for.
    fn metric(&self) -> Metric;

    /// Rows of the index.
    fn n_rows(&self) -> usize;

    /// The `k` nearest index rows of each query row in `rows` (ties by smaller index). With
    /// `exclude_self`, index row i is skipped for query row i (use it when the queries are the
    /// index itself).
    fn knn(
        &self,
        queries: &CsrMatrix,
        rows: Range<usize>,
        k: usize,
        exclude_self: bool,
    ) -> Result<Neighbors, DistanceError>;

    /// Distances from each query row in `rows` to every index row, row-major
    /// (`rows.len() × n_rows` values).
    fn distances(&self, queries: &CsrMatrix, rows: Range<usize>)
        -> Result<Vec<f32>, DistanceError>;
}

/// A place distances can be computed.
pub trait Backend: Send + Sync {
    /// Short name, e.g. `cpu`.
    fn name(&self) -> &'static str;

    /// Prepares `index` for queries with `metric` (checks its values against the metric's
    /// domain and builds whatever the backend searches with).
    fn prepare<'a>(
        &self,
        index: &'a CsrMatrix,
        metric: Metric,
    ) -> Result<Box<dyn PreparedIndex + 'a>, DistanceError>;
}

/// Refuses values outside `metric`'s domain among `rows` of `m` (negative values for Hellinger,
/// Jensen–Shannon and KL divergence). Every backend checks the index and each query batch.
pub fn check_domain(
    m: &CsrMatrix,
    rows: Range<usize>,
    metric: Metric,
) -> Result<(), DistanceError> {
    if metric.requires_non_negative() {
        if let Some((row, col, value)) = m.first_negative_in(rows) {
            return Err(DistanceError::NegativeValue {
                metric: metric.name(),
                row,
                col,
                value,
            });
        }
    }
    Ok(())
}

/// Checks a query batch against an index of `n_cols` columns: the same number of columns,
/// rows in range, values in the metric's domain.
pub fn check_queries(
    queries: &CsrMatrix,
    rows: &Range<usize>,
    n_cols: usize,
    metric: Metric,
) -> Result<(), DistanceError> {
    if queries.n_cols() != n_cols {
        return Err(DistanceError::DimensionMismatch {
            left: queries.n_cols(),
            right: n_cols,
        });
    }
    if rows.end > queries.n_rows() || rows.start > rows.end {
        return Err(DistanceError::InvalidCsr(format!(
            "query rows {}..{} out of range (the matrix has {} rows)",
            rows.start,
            rows.end,
            queries.n_rows()
        )));
    }
    check_domain(queries, rows.clone(), metric)
}

/// Checks k against the candidate rows: between 1 and the index's rows (less one when a
/// query is not its own neighbour).
pub fn check_k(k: usize, index_rows: usize, exclude_self: bool) -> Result<(), DistanceError> {
    let max = index_rows.saturating_sub(usize::from(exclude_self));
    if k == 0 || k > max {
        return Err(DistanceError::InvalidK { k, max });
    }
    Ok(())
}

/// The number of cells of a `rows × cols` matrix of `f32` distances, or the error that says it
/// cannot be materialized (k-NN never needs one).
pub fn check_matrix_size(rows: usize, cols: usize) -> Result<usize, DistanceError> {
    rows.checked_mul(cols)
        .filter(|&c| c <= isize::MAX as usize / 4)
        .ok_or(DistanceError::TooLarge { rows, cols })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_say_what_is_wrong() {
        let m = CsrMatrix::from_dense(&[vec![1.0, -2.0], vec![0.0, 1.0]], 2).unwrap();
        assert!(check_domain(&m, 0..2, Metric::Manhattan).is_ok());
        assert!(check_domain(&m, 1..2, Metric::Hellinger).is_ok());
        let e = check_domain(&m, 0..2, Metric::Hellinger)
            .unwrap_err()
            .to_string();
        assert!(e.contains("hellinger") && e.contains("non-negative"), "{e}");
        assert!(matches!(
            check_queries(&m, &(0..2), 3, Metric::Cosine),
            Err(DistanceError::DimensionMismatch { left: 2, right: 3 })
        ));
        assert!(check_queries(&m, &(1..3), 2, Metric::Cosine).is_err());
        assert_eq!(
            check_k(0, 5, false),
            Err(DistanceError::InvalidK { k: 0, max: 5 })
        );
        assert_eq!(
            check_k(5, 5, true),
            Err(DistanceError::InvalidK { k: 5, max: 4 })
        );
        assert!(check_k(5, 5, false).is_ok());
        assert_eq!(check_matrix_size(3, 4), Ok(12));
        assert!(check_matrix_size(usize::MAX / 2, 3).is_err());
    }
}
