//! The M-step's recount of the word-topic counts (`counts::count_word_topics`, every CPU
//! sampler's, after each sweep) on a corpus, along a `cgs` run on one thread: at each iteration
//! asked for, the milliseconds a recount of the assignments takes (best of 10) and the mean number
//! of non-zero topics in a token's word row (what `cgs`'s q pass reads a token). Iteration 0 is
//! the uniform start. BENCHMARKS.md, "The M-step's recount".
//!
//! RAYON_NUM_THREADS=1 cargo run --release -p topos-train --example recount -- \
//!     <corpus.tcorp> <K> <iteration> [<iteration> ...]
use std::sync::Arc;
use std::time::Instant;
use topos_corpus::Corpus;
use topos_model::Hyperparameters;
use topos_train::counts::count_word_topics;
use topos_train::samplers::cgs::Cgs;
use topos_train::{TrainDocs, TrainOptions, Trainer};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let corpus = Corpus::open(std::path::Path::new(&args[1])).expect("corpus");
    let k: u32 = args[2].parse().expect("K");
    let mut at: Vec<u32> = args[3..]
        .iter()
        .map(|s| s.parse().expect("iteration"))
        .collect();
    at.sort_unstable();
    let words = corpus.vocab().len();
    let opts = TrainOptions {
        sampler: &Cgs,
        hyper: Hyperparameters::new(k, None, None).expect("K"),
        seed: 1,
        threads: 1,
        partitions: None,
        settings: Default::default(),
    };
    let mut t = Trainer::new(TrainDocs::Corpus(Arc::new(corpus)), words, opts).expect("run");
    for &it in &at {
        while t.iteration() < it {
            t.step();
        }
        let mut best = f64::INFINITY;
        let mut b = None;
        for _ in 0..10 {
            let start = Instant::now();
            b = Some(count_word_topics(t.layout(), t.assignments(), words, k));
            best = best.min(start.elapsed().as_secs_f64());
        }
        let b = b.expect("ten recounts");
        let tokens = t.docs().tokens();
        let entries: u64 = tokens.iter().map(|&w| b.row(w).0.len() as u64).sum();
        println!(
            "iteration {it}: recount {:.2} ms ({} partitions); a token's word row holds {:.1} topics",
            best * 1e3,
            t.partitions(),
            entries as f64 / tokens.len().max(1) as f64
        );
    }
}
