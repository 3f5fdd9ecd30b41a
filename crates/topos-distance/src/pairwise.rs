//! The full distance matrix between two sets of rows, for inputs small enough to hold it.

use crate::backend::Backend;
use crate::cpu::CpuBackend;
use crate::{CsrMatrix, DistanceError, Metric};

/// A dense, row-major matrix of distances: `get(i, j)` = d(a_i, b_j).
#[derive(Clone, Debug, PartialEq)]
pub struct DistanceMatrix {
    pub rows: usize,
    pub cols: usize,
    pub data: Vec<f32>,
}

impl DistanceMatrix {
    /// d(a_i, b_j).
    #[inline]
    pub fn get(&self, i: usize, j: usize) -> f32 {
        self.data[i * self.cols + j]
    }

    /// Row i: the distances from a_i to every row of b.
    pub fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.cols..(i + 1) * self.cols]
    }
}

/// d(a_i, b_j) for every row i of `a` and j of `b`, on the CPU. Materializes
/// `a.n_rows() × b.n_rows()` values: for large inputs use [`crate::knn()`].
pub fn pairwise_distances(
    a: &CsrMatrix,
    b: &CsrMatrix,
    metric: Metric,
) -> Result<DistanceMatrix, DistanceError> {
    pairwise_distances_with(&CpuBackend, a, b, metric)
}

/// [`pairwise_distances`] on any backend.
pub fn pairwise_distances_with(
    backend: &dyn Backend,
    a: &CsrMatrix,
    b: &CsrMatrix,
    metric: Metric,
) -> Result<DistanceMatrix, DistanceError> {
    let prepared = backend.prepare(b, metric)?;
    let data = prepared.distances(a, 0..a.n_rows())?;
    Ok(DistanceMatrix {
        rows: a.n_rows(),
        cols: b.n_rows(),
        data,
    })
}
