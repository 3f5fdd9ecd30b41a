//! Brute-force k-nearest neighbours in batches (the item 3): the index is prepared once,
//! queries are answered `batch_rows` at a time, and only k neighbours per query are kept, so
//! memory is O(nnz + threads·n_index + batch·k) whatever the sizes — never n_queries × n_index.

use crate::backend::{Backend, Neighbors};
use crate::cpu::CpuBackend;
use crate::{CsrMatrix, DistanceError, Metric};

/// Options of [`knn_with`].
#[derive(Clone, Copy, Debug)]
pub struct KnnOptions {
    /// Queries per batch (default 4096).
    pub batch_rows: usize,
    /// Skip index row i for query row i: use it when the queries are the index itself and a
    /// row should not be its own neighbour.
    pub exclude_self: bool,
}

impl Default for KnnOptions {
    fn default() -> Self {
        Self {
            batch_rows: 4096,
            exclude_self: false,
        }
    }
}

/// The `k` nearest rows of `index` to each row of `queries` under `metric`, on the CPU, best
/// first (smallest distance; largest dot product), ties broken by the smaller index row.
pub fn knn(
    index: &CsrMatrix,
    queries: &CsrMatrix,
    k: usize,
    metric: Metric,
) -> Result<Neighbors, DistanceError> {
    knn_with(
        &CpuBackend,
        index,
        queries,
        k,
        metric,
        &KnnOptions::default(),
    )
}

/// [`knn`] on any backend with options.
pub fn knn_with(
    backend: &dyn Backend,
    index: &CsrMatrix,
    queries: &CsrMatrix,
    k: usize,
    metric: Metric,
    opts: &KnnOptions,
) -> Result<Neighbors, DistanceError> {
    if opts.batch_rows == 0 {
        return Err(DistanceError::ZeroBatch);
    }
    let prepared = backend.prepare(index, metric)?;
    let n = queries.n_rows();
    // Validate k and dimensions even when there are no queries.
    let mut out = prepared.knn(queries, 0..n.min(opts.batch_rows), k, opts.exclude_self)?;
    let mut start = opts.batch_rows;
    while start < n {
        let end = (start + opts.batch_rows).min(n);
        out.extend(prepared.knn(queries, start..end, k, opts.exclude_self)?);
        start = end;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(rows: &[Vec<f32>]) -> CsrMatrix {
        CsrMatrix::from_dense(rows, rows[0].len()).unwrap()
    }

    #[test]
    fn nearest_rows_with_ties_by_index_and_batches_agree() {
        let index = m(&[
            vec![1.0, 0.0, 0.0],
            vec![0.0, 1.0, 0.0],
            vec![1.0, 0.0, 0.0],
            vec![0.0, 0.0, 5.0],
        ]);
        let queries = m(&[vec![1.0, 0.0, 0.0], vec![0.0, 0.0, 1.0]]);
        let got = knn(&index, &queries, 2, Metric::Euclidean).unwrap();
        assert_eq!(got.row(0).0, &[0, 2]);
        assert_eq!(got.row(0).1, &[0.0, 0.0]);
        assert_eq!(got.row(1).0, &[0, 1]);
        let one = KnnOptions {
            batch_rows: 1,
            ..KnnOptions::default()
        };
        let batched = knn_with(&CpuBackend, &index, &queries, 2, Metric::Euclidean, &one).unwrap();
        assert_eq!(batched, got);
    }

    #[test]
    fn exclude_self_and_bad_k() {
        let index = m(&[vec![1.0, 0.0], vec![1.0, 0.0], vec![0.0, 1.0]]);
        let opts = KnnOptions {
            exclude_self: true,
            ..KnnOptions::default()
        };
        let got = knn_with(&CpuBackend, &index, &index, 1, Metric::Cosine, &opts).unwrap();
        assert_eq!(got.indices, vec![1, 0, 0]);
        let e = knn_with(&CpuBackend, &index, &index, 3, Metric::Cosine, &opts).unwrap_err();
        assert_eq!(e, DistanceError::InvalidK { k: 3, max: 2 });
        assert!(matches!(
            knn(&index, &index, 0, Metric::Cosine),
            Err(DistanceError::InvalidK { .. })
        ));
        let zero = KnnOptions {
            batch_rows: 0,
            ..KnnOptions::default()
        };
        assert!(knn_with(&CpuBackend, &index, &index, 1, Metric::Cosine, &zero).is_err());
    }

    #[test]
    fn dot_product_neighbours_are_the_largest() {
        let index = m(&[vec![1.0, 0.0], vec![3.0, 0.0], vec![2.0, 0.0]]);
        let q = m(&[vec![1.0, 1.0]]);
        let got = knn(&index, &q, 3, Metric::DotProduct).unwrap();
        assert_eq!(got.indices, vec![1, 2, 0]);
        assert_eq!(got.distances, vec![3.0, 2.0, 1.0]);
    }

    #[test]
    fn refuses_mismatched_dimensions_and_negative_values() {
        let a = m(&[vec![1.0, 0.0]]);
        let b = m(&[vec![1.0, 0.0, 1.0]]);
        assert!(matches!(
            knn(&a, &b, 1, Metric::Cosine),
            Err(DistanceError::DimensionMismatch { left: 3, right: 2 })
        ));
        let neg = m(&[vec![1.0, -2.0]]);
        let e = knn(&a, &neg, 1, Metric::Hellinger).unwrap_err().to_string();
        assert!(e.contains("hellinger") && e.contains("non-negative"), "{e}");
        assert!(knn(&neg, &a, 1, Metric::JensenShannon).is_err());
        assert!(knn(&neg, &a, 1, Metric::Manhattan).is_ok());
    }
}
