//! Quick throughput probe on a synthetic corpus (not a benchmark of record; those run through the
//! `topos` binary, see BENCHMARKS.md).
//!
//! cargo run --release -p topos-train --example throughput -- <algo> <K> <threads> <docs> <iters>

use topos_model::Hyperparameters;
use topos_train::synthetic::{generate, SyntheticSpec, TopicShape};
use topos_train::{sampler_named, TrainDocs, TrainOptions, Trainer};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let algo = sampler_named(args.get(1).map_or("cgs", |s| s)).expect("algo");
    let k: u32 = args.get(2).map_or(100, |s| s.parse().unwrap());
    let threads: usize = args.get(3).map_or(1, |s| s.parse().unwrap());
    let docs: usize = args.get(4).map_or(20_000, |s| s.parse().unwrap());
    let iters: u32 = args.get(5).map_or(20, |s| s.parse().unwrap());
    let spec = SyntheticSpec {
        num_docs: docs,
        num_words: 20_000,
        num_topics: 100,
        mean_doc_len: 100,
        alpha: topos_model::Alpha::symmetric(100, 0.1),
        shape: TopicShape::PermutedZipf {
            exponent: 1.07,
            concentration: 2000.0,
        },
        seed: 1,
    };
    let t0 = std::time::Instant::now();
    let corpus = generate(&spec);
    eprintln!(
        "generated {} tokens in {:.1}s",
        corpus.docs.view().num_tokens(),
        t0.elapsed().as_secs_f64()
    );
    let opts = TrainOptions {
        sampler: algo,
        hyper: Hyperparameters::new(k, None, None).unwrap(),
        seed: 1,
        threads,
        partitions: None,
        settings: Default::default(),
    };
    let mut t = Trainer::new(TrainDocs::from(corpus.docs), spec.num_words, opts).unwrap();
    for i in 0..iters {
        let s = t.step();
        if i % 5 == 4 || i + 1 == iters {
            println!(
                "{:?} K={k} iter {:3}: {:6.2} Mtok/s, LL {:.4}",
                algo,
                s.iteration,
                s.tokens_per_second / 1e6,
                t.log_likelihood()
            );
        }
    }
}
