//! The raw CSR directory format shared by the benchmark examples and bench/knn_peers.py:
//! `meta.json` ({"rows", "cols", "nnz"}), `offsets.u64`, `indices.u32`, `values.f32`, all
//! little-endian, readable by `numpy.fromfile`.

#![allow(dead_code)]

use std::path::Path;
use topos_distance::CsrMatrix;

pub fn write_raw(m: &CsrMatrix, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let meta = format!(
        "{{\"rows\": {}, \"cols\": {}, \"nnz\": {}}}\n",
        m.n_rows(),
        m.n_cols(),
        m.nnz()
    );
    std::fs::write(dir.join("meta.json"), meta)?;
    write_le(&dir.join("offsets.u64"), m.offsets(), u64::to_le_bytes)?;
    write_le(&dir.join("indices.u32"), m.indices(), u32::to_le_bytes)?;
    write_le(&dir.join("values.f32"), m.values(), f32::to_le_bytes)
}

pub fn read_raw(dir: &Path) -> Result<CsrMatrix, Box<dyn std::error::Error>> {
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("meta.json"))?)?;
    let cols = meta["cols"].as_u64().ok_or("meta.json: cols")? as usize;
    let offsets = read_le(&dir.join("offsets.u64"), u64::from_le_bytes)?;
    let indices = read_le(&dir.join("indices.u32"), u32::from_le_bytes)?;
    let values = read_le(&dir.join("values.f32"), f32::from_le_bytes)?;
    Ok(CsrMatrix::new(cols, offsets, indices, values)?)
}

/// The first `n` rows of `m` (the benchmarks' queries).
pub fn first_rows(m: &CsrMatrix, n: usize) -> Result<CsrMatrix, Box<dyn std::error::Error>> {
    let end = m.offsets()[n] as usize;
    Ok(CsrMatrix::new(
        m.n_cols(),
        m.offsets()[..=n].to_vec(),
        m.indices()[..end].to_vec(),
        m.values()[..end].to_vec(),
    )?)
}

/// The metrics named on a command line (`all`: the 15, Minkowski with p = 3).
pub fn metrics(
    names: &[String],
) -> Result<Vec<topos_distance::Metric>, Box<dyn std::error::Error>> {
    let mut out = Vec::new();
    for name in names {
        if name == "all" {
            out.extend(topos_distance::Metric::all(3.0));
        } else {
            out.push(name.parse()?);
        }
    }
    Ok(out)
}

/// Writes `xs` as little-endian words of `N` bytes.
fn write_le<T: Copy, const N: usize>(
    path: &Path,
    xs: &[T],
    to_le: fn(T) -> [u8; N],
) -> std::io::Result<()> {
    let bytes: Vec<u8> = xs.iter().flat_map(|&x| to_le(x)).collect();
    std::fs::write(path, bytes)
}

/// Reads a file of little-endian words of `N` bytes (a trailing partial word is ignored).
fn read_le<T, const N: usize>(path: &Path, from_le: fn([u8; N]) -> T) -> std::io::Result<Vec<T>> {
    Ok(std::fs::read(path)?
        .chunks_exact(N)
        .map(|c| from_le(c.try_into().unwrap()))
        .collect())
}
