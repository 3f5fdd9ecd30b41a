//! `topos._topos`: the compiled half of the Python package (the pure-Python `topos` package
//! wraps it; see docs/python.md). A thin layer: every operation is a call into the library
//! crates, the same calls `topos-cli` makes, with arguments checked, the GIL released around the
//! work, and errors raised as Python exceptions with the CLI's messages (`errors.rs`).

use pyo3::prelude::*;

mod corpus;
mod csr;
mod errors;
mod knn;
mod model;
mod train;

#[pymodule]
fn _topos(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("GPU_SUPPORT", cfg!(feature = "cuda"))?;
    m.add(
        "SAMPLERS",
        topos_train::sampler::sampler_names()
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>(),
    )?;
    m.add("METRICS", topos_distance::Metric::NAMES.to_vec())?;
    m.add_class::<corpus::PyCorpus>()?;
    m.add_class::<model::PyModel>()?;
    m.add_function(wrap_pyfunction!(train::train, m)?)?;
    m.add_function(wrap_pyfunction!(knn::knn, m)?)?;
    m.add_function(wrap_pyfunction!(model::_heldout_topic_word, m)?)?;
    Ok(())
}
