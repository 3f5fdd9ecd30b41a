//! Training log-likelihood per token from point estimates of θ and φ:
//!
//! ```text
//! LL = (1/N) Σ_d Σ_{w ∈ d} log Σ_k θ_dk φ_kw,   θ_dk = (A_dk + α)/(n_d + Kα),  φ_kw = (B_wk + β)/(n_k + Vβ)
//! ```
//!
//! computed sparsely as `(Σ_{k: A_dk>0} A_dk φ_kw + α Σ_k φ_kw) / (n_d + Kα)` (with an asymmetric
//! α: `Σ_k α_k φ_kw` and `Σ_k α_k`), in PDOW order so the
//! word's φ row is scattered once per word, and summed with [`FixedSum`] so the value is the same
//! for any number of threads.

use crate::counts::WordTopics;
use crate::fixed_sum::FixedSum;
use crate::layout::Layout;
use rayon::prelude::*;
use topos_corpus::Docs;
use topos_model::{Alpha, DocTopics};

/// Mean log-likelihood per token of the training documents under the current counts.
pub fn log_likelihood_per_token(
    docs: Docs<'_>,
    layout: &Layout,
    doc_topics: &DocTopics,
    word_topics: &WordTopics,
    alpha: &Alpha,
    beta: f64,
) -> f64 {
    let total = log_likelihood_sum(docs, layout, doc_topics, word_topics, alpha, beta);
    let n = docs.num_tokens();
    if n == 0 {
        0.0
    } else {
        total.value() / n as f64
    }
}

/// The sum behind [`log_likelihood_per_token`], exact and order-free, so that the sums of the
/// shares of a multi-process run add up to one process's bits.
pub fn log_likelihood_sum(
    docs: Docs<'_>,
    layout: &Layout,
    doc_topics: &DocTopics,
    word_topics: &WordTopics,
    alpha: &Alpha,
    beta: f64,
) -> FixedSum {
    let inv = topos_model::phi::normalizers(&word_topics.totals, word_topics.num_words(), beta);
    // Σ_k α_k φ_kw = factor · (smoothing + Σ_{k ∈ row w} weight_k B_wk s_k): a symmetric α
    // factors out (weights 1, the arithmetic it always had), an asymmetric one weighs each term.
    let (factor, weights): (f64, Vec<f64>) = match alpha.symmetric_value() {
        Some(a) => (a, vec![1.0; inv.len()]),
        None => (1.0, alpha.values().to_vec()),
    };
    let smooth_sum: f64 = match alpha.symmetric_value() {
        Some(_) => inv.iter().map(|&x| beta * x).sum(),
        None => inv.iter().zip(&weights).map(|(&x, &a)| a * beta * x).sum(),
    };
    let k_alpha = alpha.sum();
    // Tasks of a partition's consecutive words with about an equal share of its tokens, so that a
    // layout of one partition (the GPU engine's at large K) still uses every thread.
    let target = (docs.num_tokens() as usize / (rayon::current_num_threads() * 8)).max(1 << 16);
    let tasks: Vec<(usize, std::ops::Range<usize>)> = layout
        .partitions
        .iter()
        .enumerate()
        .flat_map(|(pi, p)| {
            let mut out = Vec::new();
            let mut start = 0;
            for wi in 0..p.words.len() {
                if (p.word_starts[wi + 1] - p.word_starts[start]) as usize >= target {
                    out.push((pi, start..wi + 1));
                    start = wi + 1;
                }
            }
            if start < p.words.len() {
                out.push((pi, start..p.words.len()));
            }
            out
        })
        .collect();
    tasks
        .par_iter()
        .map_init(
            || inv.iter().map(|&x| beta * x).collect::<Vec<f64>>(),
            |phi, (pi, words)| {
                let p = &layout.partitions[*pi];
                let mut acc = FixedSum::default();
                for wi in words.clone() {
                    let w = p.words[wi];
                    let (wt, wc) = word_topics.row(w);
                    let mut phi_sum = smooth_sum;
                    for (&t, &c) in wt.iter().zip(wc) {
                        phi[t as usize] = (c as f64 + beta) * inv[t as usize];
                        phi_sum += weights[t as usize] * c as f64 * inv[t as usize];
                    }
                    for e in p.word_range(wi) {
                        let d = p.docs.start + p.token_doc[e] as usize;
                        let (dt, dc) = doc_topics.row(d);
                        let mut num = factor * phi_sum;
                        for (&t, &c) in dt.iter().zip(dc) {
                            num += c as f64 * phi[t as usize];
                        }
                        let n_d = docs.doc(d).len() as f64;
                        acc.add((num / (n_d + k_alpha)).ln());
                    }
                    // Back to the smoothing-only row for the next word.
                    for &t in wt {
                        phi[t as usize] = beta * inv[t as usize];
                    }
                }
                acc
            },
        )
        .sum()
}
