//! Writes the training documents of a `.tcorp` corpus as a bag-of-words count matrix in the raw
//! CSR format of `examples/common` (rows = documents, columns = word ids), so the k-NN benchmark
//! and scikit-learn read the very same matrix.
//!
//! `cargo run --release -p topos-distance --example corpus_csr -- CORPUS.tcorp DIR`

mod common;

use std::path::PathBuf;
use topos_corpus::Corpus;
use topos_distance::CsrMatrix;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() != 2 {
        return Err("usage: corpus_csr CORPUS.tcorp DIR".into());
    }
    let corpus = Corpus::open(&PathBuf::from(&args[0]))?;
    let docs = corpus.train();
    let mut offsets = vec![0u64];
    let (mut indices, mut values) = (Vec::new(), Vec::new());
    let mut ids: Vec<u32> = Vec::new();
    for doc in docs.iter() {
        ids.clear();
        ids.extend_from_slice(doc);
        ids.sort_unstable();
        for run in ids.chunk_by(|a, b| a == b) {
            indices.push(run[0]);
            values.push(run.len() as f32);
        }
        offsets.push(indices.len() as u64);
    }
    let m = CsrMatrix::new(corpus.vocab().len(), offsets, indices, values)?;
    common::write_raw(&m, &PathBuf::from(&args[1]))?;
    println!(
        "{} documents x {} words, {} non-zeros -> {}",
        m.n_rows(),
        m.n_cols(),
        m.nnz(),
        args[1]
    );
    Ok(())
}
