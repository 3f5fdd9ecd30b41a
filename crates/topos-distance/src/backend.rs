//! The seam between what is computed and where: a [`Backend`] prepares an index matrix once for
//! one metric ([`PreparedIndex`]) and then answers batches of queries. The CPU backend
//! ([`crate::cpu`]) is the only one today; a CUDA backend (the paper's load-balanced CSR+COO
//! kernel, §3.3) would implement the same two traits — upload the index in `prepare`, run one
//! kernel launch per batch in `knn`/`distances` — and callers would not change.

use crate::{CsrMatrix, DistanceError, Metric};
use std::fmt;
use std::ops::Range;
use std::str::FromStr;

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

/// A device name as given on a command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Device {
    Cpu,
    Cuda,
}

impl FromStr for Device {
    type Err = DistanceError;
    fn from_str(s: &str) -> Result<Device, DistanceError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "cpu" => Ok(Device::Cpu),
            "cuda" | "gpu" => Ok(Device::Cuda),
            _ => Err(DistanceError::UnknownDevice(s.to_string())),
        }
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Device::Cpu => "cpu",
            Device::Cuda => "cuda",
        })
    }
}

/// The backend for `device`: the CPU one, or an error for a device this build has no engine
/// for (there is no GPU engine yet).
pub fn backend(device: Device) -> Result<Box<dyn Backend>, DistanceError> {
    match device {
        Device::Cpu => Ok(Box::new(crate::cpu::CpuBackend)),
        Device::Cuda => Err(DistanceError::NoGpuEngine(device.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_is_refused_with_one_clear_line() {
        let dev: Device = "cuda".parse().unwrap();
        let msg = backend(dev).err().unwrap().to_string();
        assert!(msg.contains("no GPU engine yet"), "{msg}");
        assert!(!msg.contains('\n'));
        assert!("tpu".parse::<Device>().is_err());
        assert_eq!(backend(Device::Cpu).unwrap().name(), "cpu");
    }
}
