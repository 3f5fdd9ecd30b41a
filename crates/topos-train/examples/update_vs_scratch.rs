//! Updating a model with new documents against training from scratch on the union (issue 24,
//! part 4; the row in BENCHMARKS.md): the training documents of a corpus are cut in two halves
//! A and B (document order), both keeping the corpus's held-out documents, so every model is
//! scored on the same held-out documents with the same vocabulary:
//!
//! 1. `old`: A alone, `old_iters` iterations;
//! 2. `update`: `old` continued on B, `update_iters` iterations (A's counts held fixed: what
//!    `topos update` runs, here without new words since A and B share the vocabulary);
//! 3. `scratch`: A ∪ B from scratch, `old_iters` and then `old_iters + update_iters` iterations.
//!
//! Prints one JSON line per model: held-out log-likelihood per token, training seconds (the
//! sampling loop) and the whole run's seconds.
//!
//! cargo run --release -p topos-train --example update_vs_scratch -- CORPUS.tcorp K OLD_ITERS UPDATE_ITERS [THREADS]

use std::sync::Arc;
use std::time::Instant;
use topos_corpus::{Corpus, OwnedDocs};
use topos_model::{Hyperparameters, TopicModel};
use topos_train::run::{CorpusSource, Silent};
use topos_train::{DeviceChoice, Run, RunConfig};

fn docs_of(corpus: &Corpus, range: std::ops::Range<usize>) -> OwnedDocs {
    let train = corpus.train();
    range.map(|d| train.doc(d)).collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 5 {
        eprintln!("usage: update_vs_scratch CORPUS.tcorp K OLD_ITERS UPDATE_ITERS [THREADS]");
        std::process::exit(2);
    }
    let corpus = Arc::new(Corpus::open(std::path::Path::new(&args[1])).expect("a corpus"));
    let k: u32 = args[2].parse().expect("K");
    let old_iters: u32 = args[3].parse().expect("OLD_ITERS");
    let update_iters: u32 = args[4].parse().expect("UPDATE_ITERS");
    let threads: usize = args.get(5).map_or(0, |t| t.parse().expect("THREADS"));
    let dir = tempfile::tempdir().expect("a temporary directory");
    let n = corpus.train().len();
    let heldout: OwnedDocs = corpus.heldout().iter().collect();
    let half = |r: std::ops::Range<usize>| {
        Arc::new(Corpus::from_parts(
            corpus.vocab().clone(),
            docs_of(&corpus, r),
            heldout.clone(),
        ))
    };
    let (a, b) = (half(0..n / 2), half(n / 2..n));
    let hyper = Hyperparameters::new(k, None, None).expect("K");
    let run = |name: &str,
               c: Arc<Corpus>,
               hyper: Hyperparameters,
               iters: u32,
               fixed: Option<Arc<topos_train::counts::WordTopics>>| {
        let out = dir.path().join(format!("{name}.tmod"));
        let mut config = RunConfig::new(dir.path().join("unused.tcorp"), &out, hyper);
        config.corpus = CorpusSource::Loaded {
            corpus: c.clone(),
            path: None,
        };
        config.iterations = iters;
        config.threads = threads;
        config.device = DeviceChoice::Named {
            device: &topos_train::cpu::Cpu,
            ordinal: None,
        };
        config.fixed_counts = fixed;
        config.eval_every = 0;
        let t = Instant::now();
        let summary = Run::start(config, &mut Silent)
            .and_then(|r| r.run_to_end(&mut Silent))
            .expect("the run");
        println!(
            "{}",
            serde_json::json!({
                "model": name,
                "documents": c.train().len(),
                "tokens": c.train().num_tokens(),
                "iterations": iters,
                "heldout_ll": summary.heldout_ll,
                "train_seconds": summary.seconds,
                "run_seconds": t.elapsed().as_secs_f64(),
            })
        );
        out
    };
    let old_path = run("old", a, hyper.clone(), old_iters, None);
    let old = TopicModel::read(&old_path).expect("the old model");
    let input = topos_train::update::prepare(&old, &b).expect("an update");
    assert_eq!(input.new_words, 0, "A and B share the vocabulary");
    run(
        "update",
        Arc::new(input.corpus),
        old.hyper.clone(),
        update_iters,
        Some(Arc::new(input.fixed_counts)),
    );
    run("scratch", corpus.clone(), hyper.clone(), old_iters, None);
    run("scratch", corpus, hyper, old_iters + update_iters, None);
}
