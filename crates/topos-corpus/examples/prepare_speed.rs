//! Measures `prepare` throughput (MB of decompressed text per second, both passes included).
//!
//! cargo run --release -p topos-corpus --example prepare_speed [INPUT] [--stem]
//!
//! INPUT defaults to shared/data/gutenberg/chunks1000.txt.gz (12,566 documents, ~70 MB of text).

use std::path::PathBuf;
use topos_corpus::{prepare, Corpus, PrepareOptions};

fn main() {
    let mut args = std::env::args().skip(1);
    let mut input = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/gutenberg/chunks1000.txt.gz");
    let mut opts = PrepareOptions {
        holdout: 0.1,
        ..Default::default()
    };
    for a in args.by_ref() {
        match a.as_str() {
            "--stem" => opts.tokenizer.stem = true,
            _ => input = PathBuf::from(a),
        }
    }
    let dir = tempfile::tempdir().expect("temporary directory");
    let out = dir.path().join("speed.tcorp");
    let report = prepare(&input, &out, &opts, &mut |_| {}).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(1)
    });
    println!("{}", serde_json::to_string_pretty(&report).unwrap());
    let mb = report.text_bytes as f64 / 1e6;
    println!(
        "prepared {mb:.1} MB of text ({:.1} MB on disk) in {:.2} s: {:.1} MB/s of text, {:.2} M input words/s, {} threads",
        report.input_bytes as f64 / 1e6,
        report.seconds,
        mb / report.seconds,
        report.input_words as f64 / 1e6 / report.seconds,
        rayon::current_num_threads()
    );
    let t = std::time::Instant::now();
    let c = Corpus::open(&out).expect("open");
    println!(
        "opened and validated {} tokens in {:.3} s (file {:.1} MB)",
        c.train().num_tokens() + c.heldout().num_tokens(),
        t.elapsed().as_secs_f64(),
        std::fs::metadata(&out).unwrap().len() as f64 / 1e6
    );
}
