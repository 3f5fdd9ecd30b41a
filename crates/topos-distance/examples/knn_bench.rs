//! Times k-NN of the first QUERIES rows of a raw CSR matrix (see `examples/common`) against all
//! of its rows, for each metric, and prints one JSON line per metric: seconds (preparation of
//! the index included), queries per second, and a checksum of the neighbour indices.
//!
//! `cargo run --release -p topos-distance --example knn_bench -- DIR K QUERIES METRIC...`
//! (METRIC `all` runs the 15, Minkowski with p = 3).

mod common;

use std::path::PathBuf;
use std::time::Instant;
use topos_distance::{knn_with, CpuBackend, KnnOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 4 {
        return Err("usage: knn_bench DIR K QUERIES METRIC...".into());
    }
    let m = common::read_raw(&PathBuf::from(&args[0]))?;
    let k: usize = args[1].parse()?;
    let nq: usize = args[2].parse::<usize>()?.min(m.n_rows());
    let metrics = common::metrics(&args[3..])?;
    let queries = common::first_rows(&m, nq)?;
    for metric in metrics {
        let t = Instant::now();
        let nn = knn_with(&CpuBackend, &m, &queries, k, metric, &KnnOptions::default())?;
        let secs = t.elapsed().as_secs_f64();
        let checksum: u64 = nn.indices.iter().map(|&i| u64::from(i)).sum();
        println!(
            "{{\"metric\": \"{metric}\", \"queries\": {nq}, \"index_rows\": {}, \"k\": {k}, \"threads\": {}, \"seconds\": {secs:.4}, \"queries_per_s\": {:.0}, \"index_checksum\": {checksum}}}",
            m.n_rows(),
            rayon::current_num_threads(),
            nq as f64 / secs
        );
    }
    Ok(())
}
