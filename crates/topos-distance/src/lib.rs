//! Sparse pairwise distances and brute-force k-nearest neighbours over CSR matrices, for all 15
//! distances of *GPU Semiring Primitives for Sparse Neighborhood Methods* (Nolet et al.), on a
//! multithreaded CPU engine behind a [`Backend`] seam that the GPU engine (`gpu`, with the `cuda` feature) also implements.
//!
//! ```
//! use topos_distance::{knn, pairwise_distances, CsrMatrix, Metric};
//! let docs = CsrMatrix::from_dense(&[vec![1.0, 0.0, 2.0], vec![0.0, 1.0, 2.0], vec![1.0, 0.0, 2.5]], 3)?;
//! let d = pairwise_distances(&docs, &docs, Metric::Manhattan)?;
//! assert_eq!(d.get(0, 1), 2.0);
//! let nn = knn(&docs, &docs, 2, "cosine".parse()?)?;
//! assert_eq!(nn.row(0).0, &[0, 2]);
//! # Ok::<(), topos_distance::DistanceError>(())
//! ```
//!
//! * [`metric`]: the 15 metrics, their formulas (SciPy's definitions and edge cases) and names.
//! * [`csr`]: the CSR matrix (64-bit offsets, validated once).
//! * [`kernel`]: a metric as semiring + expansion, and where cancellation limits precision.
//! * [`expanded`]: dot-product distances (paper §2.2, §3.4); [`aggregate`]: non-annihilating
//!   sums by one intersection pass plus row aggregates; [`union`]: the NAMM over the union of
//!   non-zero columns (§2.2 Eq. 3, §3.3.1) and Chebyshev.
//! * [`cpu`]: the engine (inverted index, per-query accumulator, expansion scan, rayon);
//!   [`topk`]: top-k selection; [`mod@knn`]: batched k-NN; [`pairwise`]: full matrices;
//!   [`mod@backend`]: the device seam (the CUDA engine is [`gpu`], with the `cuda` feature) and the checks
//!   every backend shares.

pub mod aggregate;
pub mod backend;
pub mod cpu;
pub mod csr;
pub mod error;
pub mod expanded;
#[cfg(feature = "cuda")]
pub mod gpu;
pub mod kernel;
pub mod knn;
pub mod metric;
pub mod pairwise;
pub mod topk;
pub mod union;

pub use backend::{
    check_domain, check_k, check_matrix_size, check_queries, Backend, Neighbors, PreparedIndex,
};
pub use cpu::CpuBackend;
pub use csr::{CsrMatrix, Row, RowNorm};
pub use error::DistanceError;
pub use kernel::{key_distance, row_aggregate, RowAgg};
pub use knn::{knn, knn_with, KnnOptions};
pub use metric::{Metric, Strategy};
pub use pairwise::{pairwise_distances, pairwise_distances_with, DistanceMatrix};
