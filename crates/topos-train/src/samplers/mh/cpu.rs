//! mhLDA's Metropolis–Hastings sweep on the CPU (thesis Eq. 2.1–2.2), O(1) per proposal.
//!
//! Target: the collapsed conditional of the token against the previous iteration's counts with
//! its own assignment c removed (the ¬ of collapsed Gibbs, as the GPU's cgs reads them):
//!
//! ```text
//! p(k) ∝ (A¬_dk + α_k)(B¬_wk + β) / (n¬_k + Vβ),   X¬_k = X_k − [k = c]
//! ```
//!
//! Proposals (Eq. 2.1), from the counts as they are (own assignment included), each drawn in O(1)
//! as a mixture of "the topic of a count" and "the prior", after LightLDA and WarpLDA:
//!
//! ```text
//! q_w(k) ∝ B_wk + β      word proposal: with probability n_w/(n_w + Kβ) a draw from the word's
//!                        alias table over its non-zero B_wk (Walker/Vose, built once per
//!                        iteration), else a uniform topic
//! q_d(k) ∝ A_dk + α_k    document proposal: with probability n_d/(n_d + Σα) the topic (frozen,
//!                        at the start of the iteration) of a uniformly random token of the
//!                        document, else a draw from α (uniform if symmetric, else an alias table
//!                        over α built once per iteration)
//! ```
//!
//! A proposal k from state s is accepted with min(1, p(k) q(s) / (p(s) q(k))). The proposal's own
//! factor cancels against the target's except at c, so the rates are ratios of per-topic factors:
//!
//! ```text
//! word proposal:      h(k)/h(s),   h(k) = (A¬_dk + α_k) / (n¬_k + Vβ) · (B¬_wk + β)/(B_wk + β)
//! document proposal:  g(k)/g(s),   g(k) = (B¬_wk + β) / (n¬_k + Vβ) · (A¬_dk + α_k)/(A_dk + α_k)
//! ```
//!
//! where the last factor of each is 1 unless k = c. Where neither k nor s is c these are Eq. (2.2)
//! exactly: r^word = (A_dk + α_k)/(A_ds + α_s) · (n_s + Vβ)/(n_k + Vβ) and r^doc =
//! (B_wk + β)/(B_ws + β) · (n_s + Vβ)/(n_k + Vβ) (with α_k for α, an asymmetric prior); at c the
//! removed count enters the target and not the proposal, which the extra factor accounts for.
//! Each step leaves p invariant (`tests/samplers.rs` checks it: start from p, one sweep, compare
//! with p), so the chain of a token targets its exact conditional; with finitely many steps per
//! iteration the draw is approximate (hence "approximate" in `topos algos`). mhLDA's shortcut
//! (§2.2.3) holds by construction: a proposal of the current topic is accepted at no cost (no
//! lookup, no random number), and a token whose proposals all equal its topic costs two draws.
//!
//! Per token and proposal pair: two O(1) draws, dense lookups of the current word's row (filled
//! once per word: tokens are visited word by word, PDOW), and at most two lookups of A_dk in the
//! document's sparse row (a binary search in a row of at most min(K, L_d) entries, only when a
//! proposal differs from the state; the document proposal itself needs none). The document's
//! frozen topics are the partition's slice of the assignments copied at the start of the sweep.
//!
//! Every token reads only frozen counts and its own counter-based random numbers keyed by its
//! global index, so the model is the same for any number of threads and partitions.

use crate::counts::WordTopics;
use crate::layout::Partition;
use crate::sampler::{CpuSampler, PartitionSweep, SweepInput};
use topos_corpus::Docs;
use topos_model::DocTopics;
use topos_sampling::{AliasTable, CounterRng, Philox4x32, Stream};

/// Which acceptance rates the sweep uses: the exact ones, or (tests only) a wrong control.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rates {
    /// The rates above.
    Exact,
    /// Control for the stationarity test: Eq. (2.2) as printed, for the target with the token's
    /// own assignment kept in the counts (WarpLDA's simplification). Its chain targets another
    /// distribution, which the test must detect.
    OwnAssignmentKept,
}

/// What every partition's sweep reads this iteration.
struct Frozen<'a> {
    docs: Docs<'a>,
    doc_topics: &'a DocTopics,
    word_topics: &'a WordTopics,
    /// Per-word alias tables over each row's non-zero counts, aligned with
    /// `word_topics.topics`: the probability of keeping the column's own topic, and the topic of
    /// its alias.
    word_prob: Vec<f32>,
    word_alias: Vec<u16>,
    /// 1 / (n_k + Vβ) and its value with one token fewer, 1 / (n_k − 1 + Vβ).
    inv: Vec<f64>,
    inv_less: Vec<f64>,
    alpha: &'a [f64],
    /// The prior part of the document proposal when α is asymmetric.
    alpha_alias: Option<AliasTable>,
    alpha_sum: f64,
    beta: f64,
    seed: u64,
    iteration: u32,
    /// Proposal pairs per token (`--mh-steps`).
    steps: u32,
    rates: Rates,
}

/// The CPU implementation for the registry.
pub struct MhCpu;

impl CpuSampler for MhCpu {
    fn needs_doc_topics(&self) -> bool {
        true
    }
    fn prepare<'a>(&self, input: SweepInput<'a>) -> Box<dyn PartitionSweep + 'a> {
        Box::new(MhSweep {
            frozen: frozen(input, Rates::Exact),
        })
    }
}

fn frozen<'a>(input: SweepInput<'a>, rates: Rates) -> Frozen<'a> {
    let a = input
        .doc_topics
        .expect("MH reads the document-topic counts it asked for");
    let b = input.word_topics;
    let inv = b.normalizers(input.beta);
    let inv_less = b.normalizers_without_one(input.beta);
    let (word_prob, word_alias) = word_alias_tables(b);
    let alpha = input.alpha.values();
    let alpha_alias = input.alpha.symmetric_value().is_none().then(|| {
        let w: Vec<f32> = alpha.iter().map(|&x| x as f32).collect();
        AliasTable::from_weights(&w)
    });
    Frozen {
        docs: input.docs,
        doc_topics: a,
        word_topics: b,
        word_prob,
        word_alias,
        inv,
        inv_less,
        alpha,
        alpha_alias,
        alpha_sum: input.alpha.sum(),
        beta: input.beta,
        seed: input.seed,
        iteration: input.iteration,
        steps: input.settings.mh_steps().get(),
        rates,
    }
}

/// Vose's alias construction for every row of B at once (rows in parallel by chunks of words),
/// O(non-zeros): flat arrays aligned with the rows rather than one [`AliasTable`] per word (V
/// allocations and a pointer per word).
fn word_alias_tables(b: &WordTopics) -> (Vec<f32>, Vec<u16>) {
    use rayon::prelude::*;
    let nnz = b.topics.len();
    let mut prob = vec![1.0f32; nnz];
    let mut alias = b.topics.clone();
    let words = b.num_words();
    let bounds: Vec<usize> = (0..=words).step_by(1024).chain([words]).collect();
    let mut rest_p: &mut [f32] = &mut prob;
    let mut rest_a: &mut [u16] = &mut alias;
    let mut pieces = Vec::new();
    for w in bounds.windows(2) {
        let (lo, hi) = (b.offsets[w[0]] as usize, b.offsets[w[1]] as usize);
        let (hp, tp) = std::mem::take(&mut rest_p).split_at_mut(hi - lo);
        let (ha, ta) = std::mem::take(&mut rest_a).split_at_mut(hi - lo);
        pieces.push((w[0]..w[1], hp, ha));
        rest_p = tp;
        rest_a = ta;
    }
    pieces.into_par_iter().for_each(|(range, out_p, out_a)| {
        let base = b.offsets[range.start] as usize;
        let (mut scaled, mut small, mut large) = (Vec::new(), Vec::new(), Vec::new());
        for v in range {
            let (lo, hi) = (b.offsets[v] as usize, b.offsets[v + 1] as usize);
            let counts = &b.counts[lo..hi];
            let total: f64 = counts.iter().map(|&c| f64::from(c)).sum();
            if counts.len() < 2 || total <= 0.0 {
                continue;
            }
            let scale = counts.len() as f64 / total;
            scaled.clear();
            scaled.extend(counts.iter().map(|&c| f64::from(c) * scale));
            small.clear();
            large.clear();
            for (i, &s) in scaled.iter().enumerate() {
                if s < 1.0 {
                    small.push(i);
                } else {
                    large.push(i);
                }
            }
            let (p, a) = (
                &mut out_p[lo - base..hi - base],
                &mut out_a[lo - base..hi - base],
            );
            while let (Some(&s), Some(&l)) = (small.last(), large.last()) {
                small.pop();
                p[s] = scaled[s] as f32;
                a[s] = b.topics[lo + l];
                scaled[l] -= 1.0 - scaled[s];
                if scaled[l] < 1.0 {
                    large.pop();
                    small.push(l);
                }
            }
            // Leftovers keep probability 1 (up to rounding they are full columns).
        }
    });
    (prob, alias)
}

struct MhSweep<'a> {
    frozen: Frozen<'a>,
}

impl PartitionSweep for MhSweep<'_> {
    fn sweep(&self, p: &Partition, z: &mut [u16]) {
        let old = z.to_vec();
        sweep_partition(p, z, &old, &old, &self.frozen);
    }
}

/// Samples the partition's tokens into `z`, each chain starting from `starts` (the frozen
/// assignments `old` in a run; the stationarity test starts them elsewhere).
fn sweep_partition(p: &Partition, z: &mut [u16], old: &[u16], starts: &[u16], f: &Frozen<'_>) {
    let k_topics = f.inv.len();
    let gen = Philox4x32::new(f.seed);
    let beta = f.beta;
    let exact = f.rates == Rates::Exact;
    let word_prior_mass = k_topics as f64 * beta;
    // The current word's counts (dense, reset after each word).
    let mut word_count = vec![0u32; k_topics];
    for (wi, &w) in p.words.iter().enumerate() {
        let (wt, wc) = f.word_topics.row(w);
        let row = f.word_topics.offsets[w as usize] as usize;
        let (w_prob, w_alias) = (
            &f.word_prob[row..row + wt.len()],
            &f.word_alias[row..row + wt.len()],
        );
        let mut n_w = 0u64;
        for (&t, &c) in wt.iter().zip(wc) {
            word_count[usize::from(t)] = c;
            n_w += u64::from(c);
        }
        let n_w = n_w as f64;
        for e in p.word_range(wi) {
            let src = p.token_src[e] as usize;
            let d = p.docs.start + p.token_doc[e] as usize;
            let d_lo = (f.docs.doc_start(d) - p.token_start) as usize;
            let n_d = (f.docs.doc_start(d + 1) - f.docs.doc_start(d)) as f64;
            let (dt, dc) = f.doc_topics.row(d);
            let lookup = |k: usize| -> f64 {
                dt.binary_search(&(k as u16))
                    .map_or(0.0, |i| f64::from(dc[i]))
            };
            let c = usize::from(old[src]);
            // The removal of the token's own assignment, and the factors at c (1 elsewhere).
            let (own, inv_c) = if exact {
                (1.0, f.inv_less[c])
            } else {
                (0.0, f.inv[c])
            };
            let b_c = f64::from(word_count[c]);
            let word_c = (b_c - own + beta) / (b_c + beta);
            // A_dc, looked up when first needed.
            let mut a_c = f64::NAN;
            let a_of = |k: usize, a_c: &mut f64| -> f64 {
                if k == c {
                    if a_c.is_nan() {
                        *a_c = lookup(c);
                    }
                    *a_c
                } else {
                    lookup(k)
                }
            };
            let h = |k: usize, a_k: f64| -> f64 {
                if k == c {
                    (a_k - own + f.alpha[k]) * inv_c * word_c
                } else {
                    (a_k + f.alpha[k]) * f.inv[k]
                }
            };
            let g = |k: usize, a_c: &mut f64| -> f64 {
                let b = f64::from(word_count[k]);
                if k == c {
                    let a = a_of(c, a_c);
                    (b - own + beta) * inv_c * (a - own + f.alpha[c]) / (a + f.alpha[c])
                } else {
                    (b + beta) * f.inv[k]
                }
            };
            let mut rng = CounterRng::from_generator(
                gen,
                Stream::Train,
                f.iteration,
                p.first_key + src as u64,
            );
            // The chain's state s, with h(s) and g(s) when known (NaN: not computed yet).
            let mut s = usize::from(starts[src]);
            let (mut h_s, mut g_s) = (f64::NAN, f64::NAN);
            for _ in 0..f.steps {
                // Word proposal (Eq. 2.1, first line).
                let x = rng.next_f64() * (n_w + word_prior_mass);
                let k = if x < n_w {
                    let y = x / n_w * wt.len() as f64;
                    let col = (y as usize).min(wt.len() - 1);
                    if ((y - col as f64) as f32) < w_prob[col] {
                        usize::from(wt[col])
                    } else {
                        usize::from(w_alias[col])
                    }
                } else {
                    let y = (x - n_w) / word_prior_mass * k_topics as f64;
                    (y as usize).min(k_topics - 1)
                };
                if k != s {
                    if h_s.is_nan() {
                        h_s = h(s, a_of(s, &mut a_c));
                    }
                    let h_k = h(k, a_of(k, &mut a_c));
                    // One 32-bit word per acceptance test: the rate needs no more resolution.
                    if f64::from(rng.next_f32()) * h_s < h_k {
                        (s, h_s, g_s) = (k, h_k, f64::NAN);
                    }
                }
                // Document proposal (Eq. 2.1, second line): no lookup of A to draw it.
                let x = rng.next_f64() * (n_d + f.alpha_sum);
                let k = if x < n_d {
                    usize::from(old[d_lo + (x as usize).min(n_d as usize - 1)])
                } else {
                    let r = (x - n_d) / f.alpha_sum;
                    match &f.alpha_alias {
                        None => ((r * k_topics as f64) as usize).min(k_topics - 1),
                        Some(t) => t.sample(r.min(1.0 - f64::EPSILON)),
                    }
                };
                if k != s {
                    if g_s.is_nan() {
                        g_s = g(s, &mut a_c);
                    }
                    let g_k = g(k, &mut a_c);
                    if f64::from(rng.next_f32()) * g_s < g_k {
                        (s, h_s, g_s) = (k, f64::NAN, g_k);
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

/// Test hook: one sweep of every token's chain (all of one partition) against the counts of
/// `z`, each chain started from `starts` instead of its own assignment, with the given rates.
/// The stationarity test of `tests/samplers.rs` draws `starts` from the exact conditionals.
#[doc(hidden)]
#[allow(clippy::too_many_arguments)]
pub fn sweep_from(
    docs: Docs<'_>,
    num_words: usize,
    z: &[u16],
    starts: &[u16],
    alpha: &topos_model::Alpha,
    beta: f64,
    seed: u64,
    rates: Rates,
) -> Vec<u16> {
    let k = alpha.values().len() as u32;
    let layout = crate::layout::Layout::build(docs, 1);
    let a = crate::counts::count_doc_topics(docs, z, k);
    let b = crate::counts::count_word_topics(&layout, z, num_words, k);
    let f = frozen(
        SweepInput {
            docs,
            doc_topics: Some(&a),
            word_topics: &b,
            alpha,
            beta,
            seed,
            iteration: 1,
            settings: Default::default(),
        },
        rates,
    );
    let mut out = z.to_vec();
    sweep_partition(&layout.partitions[0], &mut out, z, starts, &f);
    out
}
