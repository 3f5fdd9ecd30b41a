//! `topos._topos.knn`: `topos-distance`'s batched brute-force k-NN on the CPU, over CSR rows,
//! with the GIL released. Neighbours are those of `topos knn --device cpu` (best first, ties by
//! the smaller row); a query row with no stored value gets none (`-1`, distance NaN), as the CLI
//! gives it an empty list.

use crate::csr::{to_distance_matrix, CsrArrays};
use crate::errors::{guard, to_py, value_error};
use crate::model::in_pool;
use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray2, PyReadonlyArray1};
use pyo3::prelude::*;
use topos_distance::{knn_with, CpuBackend, KnnOptions, Metric};

/// The metric named `name` (`minkowski` with its `p`), as `topos knn --metric NAME [--p P]`.
fn metric(name: &str, p: Option<f64>) -> PyResult<Metric> {
    let minkowski = name.trim().eq_ignore_ascii_case("minkowski");
    match p {
        Some(p) if minkowski => Metric::minkowski(p).map_err(to_py),
        Some(_) => Err(value_error(
            "p is Minkowski's exponent: use it with metric=\"minkowski\"",
        )),
        None if minkowski => Err(value_error(
            "metric=\"minkowski\" needs its exponent: add p=P (p >= 1, e.g. p=3)",
        )),
        None => name.parse().map_err(to_py),
    }
}

/// The `k` nearest index rows of every query row: (distances (n, k) float32, indices (n, k)
/// int64). Without queries the index rows are the queries and a row is not its own neighbour
/// unless `include_self`.
#[pyfunction]
#[pyo3(signature = (indptr, indices, values, n_cols, q_indptr=None, q_indices=None, q_values=None,
    *, k=10, metric_name="jensen-shannon", p=None, include_self=false, threads=0, batch=1024))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn knn<'py>(
    py: Python<'py>,
    indptr: PyReadonlyArray1<'py, i64>,
    indices: PyReadonlyArray1<'py, i32>,
    values: PyReadonlyArray1<'py, f32>,
    n_cols: usize,
    q_indptr: Option<PyReadonlyArray1<'py, i64>>,
    q_indices: Option<PyReadonlyArray1<'py, i32>>,
    q_values: Option<PyReadonlyArray1<'py, f32>>,
    k: usize,
    metric_name: &str,
    p: Option<f64>,
    include_self: bool,
    threads: usize,
    batch: usize,
) -> PyResult<(Bound<'py, PyArray2<f32>>, Bound<'py, PyArray2<i64>>)> {
    let metric = metric(metric_name, p)?;
    if k == 0 {
        return Err(value_error("k must be at least 1"));
    }
    if batch == 0 {
        return Err(value_error("batch must be at least 1"));
    }
    let index = CsrArrays {
        indptr,
        indices,
        n_cols,
    };
    let index_s = index.slices()?;
    let values = values
        .as_slice()
        .map_err(|_| value_error("data must be contiguous"))?;
    let queries = match (q_indptr, q_indices, q_values) {
        (Some(a), Some(b), Some(c)) => Some((
            CsrArrays {
                indptr: a,
                indices: b,
                n_cols,
            },
            c,
        )),
        (None, None, None) => None,
        _ => return Err(value_error("queries need indptr, indices and data")),
    };
    let query_s = match &queries {
        Some((m, v)) => Some((
            m.slices()?,
            v.as_slice()
                .map_err(|_| value_error("data must be contiguous"))?,
        )),
        None => None,
    };
    let (dist, idx) = py.detach(|| {
        guard("knn", || {
            in_pool(threads, || {
                let index = to_distance_matrix(index_s, values).map_err(to_py)?;
                let queries_m = match query_s {
                    Some((s, v)) => Some(to_distance_matrix(s, v).map_err(to_py)?),
                    None => None,
                };
                let q = queries_m.as_ref().unwrap_or(&index);
                let opts = KnnOptions {
                    batch_rows: batch,
                    exclude_self: queries_m.is_none() && !include_self,
                };
                let nn = knn_with(&CpuBackend, &index, q, k, metric, &opts).map_err(to_py)?;
                let n = q.n_rows();
                let mut dist = Array2::<f32>::from_elem((n, k), f32::NAN);
                let mut idx = Array2::<i64>::from_elem((n, k), -1);
                for i in 0..n {
                    if q.row(i).indices.is_empty() {
                        continue;
                    }
                    let (r, d) = nn.row(i);
                    for j in 0..r.len().min(k) {
                        idx[(i, j)] = i64::from(r[j]);
                        dist[(i, j)] = d[j];
                    }
                }
                Ok((dist, idx))
            })
        })
    })?;
    Ok((dist.into_pyarray(py), idx.into_pyarray(py)))
}
