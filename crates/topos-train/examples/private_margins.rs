//! How much of the unigram model a private run's clipped contributions keep, before any noise
//! (issue 25; BENCHMARKS.md, "Private training, issue 25: where ε = 10 loses on 20 Newsgroups").
//!
//! A document's contribution is bounded in L2 norm, so long and bursty documents count for less
//! than their tokens; the word distribution the releases estimate is then not the corpus's. This
//! scores that distribution (no noise) on the held-out tokens for several weightings (each
//! distinct word held n times weighs n^p) and clipping norms C, beside the unigram model of the
//! raw counts, and says how the held-out tokens fall into bands of their word's √-weighted,
//! clipped count (the word's signal against the noise of a release).
//!
//! `cargo run --release -p topos-train --example private_margins -- corpus.tcorp`

use std::collections::HashMap;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: private_margins CORPUS.tcorp")?;
    let corpus = topos_corpus::Corpus::open(std::path::Path::new(&path))?;
    let v = corpus.vocab().len();
    let (held, scored) =
        topos_train::private::scored_word_counts(corpus.heldout(), corpus.train(), v);
    if scored == topos_train::private::ScoredTokens::Training {
        // As `privacy plan` does: no held-out part, so the training tokens are scored.
        println!("no held-out documents: scoring the training tokens");
    }
    let beta = 0.01;
    let weighted = |p: f64, clip: f64| -> Vec<f64> {
        let mut mass = vec![0f64; v];
        let mut counts = HashMap::new();
        for d in corpus.train().iter() {
            counts.clear();
            for &w in d {
                *counts.entry(w).or_insert(0u32) += 1;
            }
            let norm = counts
                .values()
                .map(|&n| f64::from(n).powf(2.0 * p))
                .sum::<f64>()
                .sqrt();
            let f = (clip / norm.max(1e-12)).min(1.0);
            for (&w, &n) in &counts {
                mass[w as usize] += f * f64::from(n).powf(p);
            }
        }
        mass
    };
    let score = |mass: &[f64]| topos_train::private::unigram_ll(&held, mass, beta);
    println!("held-out log-likelihood per token of the word distribution, no noise:");
    println!(
        "  raw counts (the unigram model): {:.4}",
        score(&weighted(1.0, f64::INFINITY))
    );
    for (p, clip) in [
        (0.5, f64::INFINITY),
        (0.5, 12.0),
        (0.5, 24.0),
        (0.5, 50.0),
        (1.0, 12.0),
        (1.0, 50.0),
        (1.0, 100.0),
    ] {
        println!(
            "  weight n^{p}, C = {clip}: {:.4}",
            score(&weighted(p, clip))
        );
    }
    // The bands from the counts the mechanism itself releases (`l2_contribution`, in units).
    let units = f64::from(topos_train::private::CONTRIBUTION_UNITS);
    let u: Vec<f64> = topos_train::private::clipped_word_units(
        corpus.train(),
        v,
        topos_train::private::DEFAULT_L2_CLIP,
    )
    .iter()
    .map(|&c| f64::from(c) / units)
    .collect();
    let total: u64 = held.iter().sum();
    println!("held-out tokens by their word's √-weighted count at the default C:");
    let edges = [0.0, 2.0, 5.0, 11.5, 23.0, 46.0, 92.0, 184.0, f64::INFINITY];
    for e in edges.windows(2) {
        let (mut words, mut tokens) = (0usize, 0u64);
        for (&m, &h) in u.iter().zip(&held) {
            if m >= e[0] && m < e[1] {
                words += 1;
                tokens += h;
            }
        }
        println!(
            "  [{}, {}): {words} words, {:.3} of the held-out tokens",
            e[0],
            e[1],
            tokens as f64 / total.max(1) as f64
        );
    }
    Ok(())
}
