//! Times k-NN of the first QUERIES rows of a raw CSR matrix (topos-distance's `examples/common`
//! format) against all of its rows on a GPU (or `--cpu`), one JSON line per metric: seconds to
//! prepare the index (upload, tiles, aggregates) and to answer the queries, and a checksum of the
//! neighbour indices (equal on both engines).
//!
//! `knn_gpu DIR K QUERIES METRIC... [--cpu]` (METRIC `all` runs the 15, Minkowski with p = 3).
//! Env `KNN_GPU_MEMORY=BYTES` limits the device memory of the index (streamed in row chunks).

#[path = "common/mod.rs"]
mod common;

use std::path::PathBuf;
use std::time::Instant;
use topos_distance::gpu::CudaBackend;
use topos_distance::{Backend, CpuBackend};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let cpu = args.iter().any(|a| a == "--cpu");
    args.retain(|a| a != "--cpu");
    if args.len() < 4 {
        return Err("usage: knn_gpu DIR K QUERIES METRIC... [--cpu]".into());
    }
    let m = common::read_raw(&PathBuf::from(&args[0]))?;
    let k: usize = args[1].parse()?;
    let nq: usize = args[2].parse::<usize>()?.min(m.n_rows());
    let metrics = common::metrics(&args[3..])?;
    let queries = common::first_rows(&m, nq)?;
    let backend: Box<dyn Backend> = if cpu {
        Box::new(CpuBackend)
    } else {
        let budget = std::env::var("KNN_GPU_MEMORY")
            .ok()
            .map(|v| v.parse())
            .transpose()?;
        Box::new(CudaBackend::open(None)?.with_memory_budget(budget))
    };
    let batch = if cpu { 4096 } else { 65_536 };
    for metric in metrics {
        let t = Instant::now();
        let prepared = backend.prepare(&m, metric)?;
        let prep = t.elapsed().as_secs_f64();
        // One untimed warm-up launch compiles the kernel (NVRTC, ~0.2 s).
        let _ = prepared.knn(&queries, 0..1, k, false)?;
        let t = Instant::now();
        let mut checksum = 0u64;
        let mut start = 0;
        while start < nq {
            let stop = (start + batch).min(nq);
            let nn = prepared.knn(&queries, start..stop, k, false)?;
            checksum += nn.indices.iter().map(|&i| u64::from(i)).sum::<u64>();
            start = stop;
        }
        let secs = t.elapsed().as_secs_f64();
        println!(
            "{{\"engine\": \"{}\", \"metric\": \"{metric}\", \"rows\": {}, \"cols\": {}, \"nnz\": {}, \"queries\": {nq}, \"k\": {k}, \"prepare_s\": {prep:.4}, \"seconds\": {secs:.4}, \"queries_per_s\": {:.0}, \"index_checksum\": {checksum}}}",
            backend.name(),
            m.n_rows(),
            m.n_cols(),
            m.nnz(),
            nq as f64 / secs
        );
    }
    Ok(())
}
