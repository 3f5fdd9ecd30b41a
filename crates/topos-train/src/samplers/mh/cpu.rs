//! mhLDA's Metropolis–Hastings sweep on the CPU (thesis Eq. 2.1–2.2).
//!
//! Target: the collapsed conditional of the token against the previous iteration's counts with
//! its own assignment c removed (the ¬ of collapsed Gibbs, as the GPU's cgs reads them):
//!
//! ```text
//! p(k) ∝ (A¬_dk + α_k)(B¬_wk + β) / (n¬_k + Vβ),   X¬_k = X_k − [k = c]
//! ```
//!
//! Proposals (Eq. 2.1), from the counts as they are (cheap to draw: a mixture of "the topic of a
//! count" and "the prior"):
//!
//! ```text
//! q_w(k) ∝ B_wk + β      (word proposal)        q_d(k) ∝ A_dk + α_k   (document proposal)
//! ```
//!
//! A proposal k from state s is accepted with min(1, p(k) q(s) / (p(s) q(k))). Where neither k
//! nor s is c this is Eq. (2.2) exactly: the word proposal's rate is
//! (A_dk + α_k)/(A_ds + α_s) · (n_s + Vβ)/(n_k + Vβ), the document proposal's
//! (B_wk + β)/(B_ws + β) · (n_s + Vβ)/(n_k + Vβ) (with α_k for α, an asymmetric prior); at c the
//! removed count enters the target and not the proposal, which the general ratio accounts for.
//! Each step leaves p invariant, so the chain of a token targets its exact conditional; with
//! finitely many steps per iteration the draw is approximate (hence "approximate" in
//! `topos algos`), and mhLDA's shortcut holds by construction: a proposal of the current topic is
//! accepted with rate 1 and changes nothing.
//!
//! Every token reads only frozen counts and its own counter-based random numbers keyed by its
//! global index, so the model is the same for any number of threads and partitions.

use crate::counts::WordTopics;
use crate::layout::Partition;
use crate::sampler::{CpuSampler, PartitionSweep, SweepInput};
use topos_model::DocTopics;
use topos_sampling::{CounterRng, Philox4x32, Stream};

/// What every partition's sweep reads this iteration.
struct Frozen<'a> {
    doc_topics: &'a DocTopics,
    /// Prefix sums of each document row's counts, aligned with `doc_topics.counts`.
    doc_prefix: Vec<u32>,
    word_topics: &'a WordTopics,
    /// 1 / (n_k + Vβ) and its value with one token fewer, 1 / (n_k − 1 + Vβ).
    inv: Vec<f64>,
    inv_less: Vec<f64>,
    alpha: &'a [f64],
    /// Prefix sums of α (the prior part of the document proposal), and Σα.
    alpha_prefix: Vec<f64>,
    alpha_sum: f64,
    symmetric_alpha: bool,
    beta: f64,
    seed: u64,
    iteration: u32,
}

/// The CPU implementation for the registry.
pub struct MhCpu;

impl CpuSampler for MhCpu {
    fn needs_doc_topics(&self) -> bool {
        true
    }
    fn prepare<'a>(&self, input: SweepInput<'a>) -> Box<dyn PartitionSweep + 'a> {
        use rayon::prelude::*;
        let a = input
            .doc_topics
            .expect("MH reads the document-topic counts it asked for");
        let b = input.word_topics;
        let v_beta = b.num_words() as f64 * input.beta;
        let inv = b
            .totals
            .iter()
            .map(|&n| 1.0 / (n as f64 + v_beta))
            .collect();
        let inv_less = b
            .totals
            .iter()
            .map(|&n| 1.0 / ((n as f64 - 1.0).max(0.0) + v_beta))
            .collect();
        let mut doc_prefix = vec![0u32; a.counts.len()];
        let docs = a.offsets.len().saturating_sub(1);
        // Rows are disjoint slices: fill them in parallel by chunks of documents.
        let bounds: Vec<usize> = (0..=docs).step_by(4096).chain([docs]).collect();
        let mut rest: &mut [u32] = &mut doc_prefix;
        let mut pieces = Vec::new();
        for w in bounds.windows(2) {
            let (lo, hi) = (a.offsets[w[0]] as usize, a.offsets[w[1]] as usize);
            let (head, tail) = std::mem::take(&mut rest).split_at_mut(hi - lo);
            pieces.push((w[0]..w[1], head));
            rest = tail;
        }
        pieces.into_par_iter().for_each(|(range, out)| {
            let base = a.offsets[range.start] as usize;
            for d in range {
                let (s, e) = (a.offsets[d] as usize, a.offsets[d + 1] as usize);
                let mut acc = 0u32;
                for i in s..e {
                    acc += a.counts[i];
                    out[i - base] = acc;
                }
            }
        });
        let alpha = input.alpha.values();
        let mut acc = 0.0;
        let alpha_prefix = alpha
            .iter()
            .map(|&x| {
                acc += x;
                acc
            })
            .collect();
        Box::new(MhSweep {
            frozen: Frozen {
                doc_topics: a,
                doc_prefix,
                word_topics: b,
                inv,
                inv_less,
                alpha,
                alpha_prefix,
                alpha_sum: input.alpha.sum(),
                symmetric_alpha: input.alpha.symmetric_value().is_some(),
                beta: input.beta,
                seed: input.seed,
                iteration: input.iteration,
            },
        })
    }
}

struct MhSweep<'a> {
    frozen: Frozen<'a>,
}

impl PartitionSweep for MhSweep<'_> {
    fn sweep(&self, p: &Partition, z: &mut [u16]) {
        sweep_partition(p, z, &self.frozen);
    }
}

/// Index of the first prefix sum above `x` (an entry of a row drawn ∝ its counts).
#[inline]
fn pick<T: PartialOrd + Copy>(prefix: &[T], x: T) -> usize {
    prefix.partition_point(|&c| c <= x).min(prefix.len() - 1)
}

fn sweep_partition(p: &Partition, z: &mut [u16], f: &Frozen<'_>) {
    let k_topics = f.inv.len();
    let gen = Philox4x32::new(f.seed);
    let beta = f.beta;
    // The current word's counts (dense, reset after each word) and their prefix sums.
    let mut word_count = vec![0u32; k_topics];
    let mut word_prefix: Vec<u64> = Vec::new();
    for (wi, &w) in p.words.iter().enumerate() {
        let (wt, wc) = f.word_topics.row(w);
        word_prefix.clear();
        let mut acc = 0u64;
        for (&t, &c) in wt.iter().zip(wc) {
            word_count[usize::from(t)] = c;
            acc += u64::from(c);
            word_prefix.push(acc);
        }
        let n_w = acc as f64;
        let word_prior_mass = k_topics as f64 * beta;
        for e in p.word_range(wi) {
            let src = p.token_src[e] as usize;
            let d = p.docs.start + p.token_doc[e] as usize;
            let (dt, dc) = f.doc_topics.row(d);
            let (ds, de) = (
                f.doc_topics.offsets[d] as usize,
                f.doc_topics.offsets[d + 1] as usize,
            );
            let dprefix = &f.doc_prefix[ds..de];
            let n_d = dprefix.last().copied().unwrap_or(0) as f64;
            let c = usize::from(z[src]);
            let doc_count = |k: usize| -> f64 {
                dt.binary_search(&(k as u16))
                    .map_or(0.0, |i| f64::from(dc[i]))
            };
            // The target p(k) given A_dk = `a`, with the token's own assignment c removed.
            let target = |k: usize, a: f64| -> f64 {
                let own = f64::from(u8::from(k == c));
                let inv = if k == c { f.inv_less[k] } else { f.inv[k] };
                (a - own + f.alpha[k]) * (f64::from(word_count[k]) - own + beta) * inv
            };
            let q_word = |k: usize| f64::from(word_count[k]) + beta;
            let mut rng = CounterRng::from_generator(
                gen,
                Stream::Train,
                f.iteration,
                p.first_key + src as u64,
            );
            // The chain's state s with its A_ds and p(s): one lookup per proposal at most.
            let mut s = c;
            let mut a_s = doc_count(s);
            let mut p_s = target(s, a_s);
            for _ in 0..super::MH_STEPS {
                // Word proposal (Eq. 2.1, first line): a count of the word's row, or the prior.
                let x = rng.next_f64() * (n_w + word_prior_mass);
                let k = if x < n_w {
                    usize::from(wt[pick(&word_prefix, x as u64)])
                } else {
                    rng.below(k_topics as u32) as usize
                };
                if k != s {
                    let a_k = doc_count(k);
                    let p_k = target(k, a_k);
                    let rate = p_k * q_word(s) / (p_s * q_word(k));
                    // One 32-bit word per acceptance test: the rate needs no more resolution.
                    if f64::from(rng.next_f32()) < rate {
                        (s, a_s, p_s) = (k, a_k, p_k);
                    }
                }
                // Document proposal (Eq. 2.1, second line): a count of the document's row, or α.
                let x = rng.next_f64() * (n_d + f.alpha_sum);
                let (k, a_k) = if x < n_d {
                    let i = pick(dprefix, x as u32);
                    (usize::from(dt[i]), f64::from(dc[i]))
                } else {
                    let k = if f.symmetric_alpha {
                        rng.below(k_topics as u32) as usize
                    } else {
                        pick(&f.alpha_prefix, (x - n_d).min(f.alpha_sum))
                    };
                    (k, doc_count(k))
                };
                if k != s {
                    let p_k = target(k, a_k);
                    let rate = p_k * (a_s + f.alpha[s]) / (p_s * (a_k + f.alpha[k]));
                    if f64::from(rng.next_f32()) < rate {
                        (s, a_s, p_s) = (k, a_k, p_k);
                    }
                }
            }
            z[src] = s as u16;
        }
        for &t in wt {
            word_count[usize::from(t)] = 0;
        }
    }
}
