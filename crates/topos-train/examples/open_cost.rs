//! Where the host time of opening a GPU run goes, step by step, on a corpus file (a probe, not
//! a benchmark of record).
//!
//! cargo run --release -p topos-train --example open_cost -- <corpus.tcorp> <partitions>
use std::time::Instant;
use topos_corpus::Corpus;
use topos_train::layout::{partition_ranges, word_counts, PartitionShape};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = std::path::PathBuf::from(&args[1]);
    let parts: usize = args.get(2).map_or(47, |s| s.parse().unwrap());
    let t = Instant::now();
    let corpus = Corpus::open(&path).expect("corpus");
    println!("open {:.3}", t.elapsed().as_secs_f64());
    let docs = corpus.train();
    let t = Instant::now();
    let wt = word_counts(docs.tokens(), corpus.vocab().len());
    println!(
        "word histogram {:.3} ({} words)",
        t.elapsed().as_secs_f64(),
        wt.len()
    );
    let t = Instant::now();
    let shapes: Vec<PartitionShape> = partition_ranges(docs, parts)
        .into_iter()
        .map(|r| PartitionShape::new(docs, r))
        .collect();
    println!("shapes {:.3}", t.elapsed().as_secs_f64());
    let max = shapes.iter().map(|s| s.num_tokens).max().unwrap();
    let mut src = vec![0u32; max];
    let mut doc = vec![0u32; max];
    let (mut tc, mut tf) = (0.0, 0.0);
    for s in &shapes {
        let t = Instant::now();
        let mut f = s.filler(docs);
        tc += t.elapsed().as_secs_f64();
        let t = Instant::now();
        f.fill(
            0..s.words.len(),
            &mut src[..s.num_tokens],
            &mut doc[..s.num_tokens],
        );
        tf += t.elapsed().as_secs_f64();
    }
    println!("filler counts {tc:.3}, scatter {tf:.3}");
}
