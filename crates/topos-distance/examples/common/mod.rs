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
    let bytes = |v: &[u8]| v.to_vec();
    std::fs::write(
        dir.join("offsets.u64"),
        bytes(
            &m.offsets()
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect::<Vec<u8>>(),
        ),
    )?;
    std::fs::write(
        dir.join("indices.u32"),
        m.indices()
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect::<Vec<u8>>(),
    )?;
    std::fs::write(
        dir.join("values.f32"),
        m.values()
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect::<Vec<u8>>(),
    )?;
    Ok(())
}

pub fn read_raw(dir: &Path) -> Result<CsrMatrix, Box<dyn std::error::Error>> {
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("meta.json"))?)?;
    let cols = meta["cols"].as_u64().ok_or("meta.json: cols")? as usize;
    let offsets: Vec<u64> = std::fs::read(dir.join("offsets.u64"))?
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let indices: Vec<u32> = std::fs::read(dir.join("indices.u32"))?
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let values: Vec<f32> = std::fs::read(dir.join("values.f32"))?
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    Ok(CsrMatrix::new(cols, offsets, indices, values)?)
}
