//! Errors of the distance library: every one names what was wrong and where, in one line.

use thiserror::Error;

/// What can go wrong when building matrices or computing distances.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum DistanceError {
    /// The CSR arrays do not describe a matrix (offsets, column indices or lengths).
    #[error("invalid CSR matrix: {0}")]
    InvalidCsr(String),
    /// A stored value is NaN or infinite.
    #[error("row {row}, column {col}: value {value} is not finite")]
    NonFinite { row: usize, col: u32, value: f32 },
    /// The two matrices have different numbers of columns.
    #[error("dimension mismatch: {left} columns against {right} columns")]
    DimensionMismatch { left: usize, right: usize },
    /// `k` is 0 or larger than the number of candidate rows.
    #[error(
        "k = {k} is out of range: it must be between 1 and {max} (the number of candidate rows)"
    )]
    InvalidK { k: usize, max: usize },
    /// The metric is defined only for non-negative values and the input has a negative one.
    #[error(
        "{metric} is defined only for non-negative values, but row {row}, column {col} is {value}"
    )]
    NegativeValue {
        metric: &'static str,
        row: usize,
        col: u32,
        value: f32,
    },
    /// A metric name that is not one of the 15.
    #[error("unknown metric {0:?}; known: {known}", known = crate::Metric::NAMES.join(", "))]
    UnknownMetric(String),
    /// `minkowski` without its exponent.
    #[error("minkowski needs its exponent p >= 1 (with topos: --metric minkowski --p 3; as one spec: minkowski:3)")]
    MinkowskiNeedsP,
    /// Minkowski's p outside [1, ∞).
    #[error("minkowski needs a finite p >= 1 (p = infinity is chebyshev), got {0}")]
    InvalidMinkowskiP(f64),
    /// A device engine (the CUDA backend, `gpu`) failed; the message says what it was
    /// doing and what to do.
    #[error("{0}")]
    Device(String),
    /// A batch size of zero.
    #[error("batch size must be at least 1")]
    ZeroBatch,
    /// The output matrix would not fit in memory addresses.
    #[error("a {rows} x {cols} distance matrix is too large to materialize; use k-nearest neighbours instead")]
    TooLarge { rows: usize, cols: usize },
}
