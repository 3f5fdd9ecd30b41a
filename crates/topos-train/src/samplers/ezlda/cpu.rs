//! ezLDA's three-branch sampling on the CPU (thesis §1.3, Eq. 1.6–1.10), drawing exactly from
//! fcgs's target.
//!
//! **The target.** Every token of word v in document d (length L_d), whose current topic is c,
//! draws from the collapsed Gibbs conditional with its own assignment removed and every other
//! count frozen as the previous iteration left it (Griffiths & Steyvers 2004; `fcgs`'s target):
//!
//! ```text
//! p(k) ∝ (b′_k + α_k) · a′_k,   b′_k = A_dk − [k = c],   a′_k = (B_vk − [k = c] + β)/(n_k − [k = c] + Vβ)
//! ```
//!
//! With the token's own count kept, a_k = (B_vk + β)/(n_k + Vβ) (ESCA's Eq. 2, the thesis's Ŵ[v]).
//! a′_k = a_k for k ≠ c, and a′_c ≤ a_c (B ≤ n, derivation in `esca/cpu.rs`): so a′_k ≤ a_k for
//! every k.
//!
//! **Three branches** (Eq. 1.6). Per word and iteration, from the frozen counts: K₁, K₂, … the
//! topics of the largest a_k, and a₁ ≥ a₂ ≥ a₃ ≥ … their values (over all K topics: a topic the
//! word never had still has a_k = β/(n_k + Vβ)). Per token:
//!
//! ```text
//! M  = a′_{K₁} · (b′_{K₁} + α_{K₁})      the max-topic branch: exactly K₁'s whole weight  (Eq. 1.8)
//! S′ = Σ_{k≠K₁} a′_k b′_k                the document branch without K₁: O(K_d) to build
//! Q′ = Σ_{k≠K₁} α_k a′_k                 the prior branch without K₁: O(1) from per-word sums
//! ```
//!
//! and M + S′ + Q′ = Σ_k p(k): the three branches partition the target, nothing is dropped.
//!
//! **The bound** (Eq. 1.9–1.10, made valid with the own assignment removed). For k ∉ {K₁, …, K_g},
//! a′_k ≤ a_k ≤ a_{g+1}, and Σ_k b′_k = L_d − 1, so
//!
//! ```text
//! S′ ≤ S_est = Σ_{2≤i≤g} a_i · b′_{K_i} + a_{g+1} · (L_d − 1 − Σ_{1≤i≤g} b′_{K_i})
//! ```
//!
//! which needs A_d at K₁…K_g (the thesis's C₁/C₂ pair for g = 2), L_d and c, not the document's
//! row. (a_{g+1} = 0 when K ≤ g.) S_est is widened by a relative 10⁻⁹ so that rounding never
//! makes the computed S′ exceed it; the widening only makes the first test below a little more
//! conservative.
//!
//! **The draw.** One u ~ U[0, 1) from the token's counter-based stream
//! (`CounterRng::first_f64(seed, Stream::Train, iteration, token index)`):
//!
//! 1. if u·(M + S_est + Q′) < M: topic K₁, and neither S′ nor the final sampling is needed
//!    ("skipped S′ construction");
//! 2. else build S′ exactly; if u·(M + S′ + Q′) < M: topic K₁ ("skipped final sampling", which
//!    counts the tokens of step 1 too);
//! 3. else x = u·(M + S′ + Q′) − M falls in S′ (a search of the document row without K₁) or in Q′
//!    (the smoothing part Σ α_k β/(n_k + Vβ) over every topic, the word part Σ α_k B_vk/(n_k + Vβ)
//!    over the word's row, both without K₁ and c, and c's own term α_c a′_c, drawn from prefix
//!    sums with the excluded entries skipped).
//!
//! Since S′ ≤ S_est, M + S′ + Q′ ≤ M + S_est + Q′, so u·(M + S_est + Q′) < M implies
//! u·(M + S′ + Q′) < M (floating-point addition and multiplication are monotone, and the widening
//! keeps the computed S′ ≤ S_est): step 1 only ever takes a decision step 2 would take with the
//! same u. The result is the inversion of the exact target at u, token by token, whether step 1
//! is on or off ([`EzldaCpu::skip`]; the tests compare both draws, seed by seed): the draw is
//! exact, not an approximation that improves as tokens converge.
//!
//! **What it is not** (thesis §1.3.4). No token is left unsampled because its topic did not
//! change for a while ("naive dropping", which the thesis shows drifts from the right answer):
//! every token draws a fresh u every iteration, and a token of K₁ leaves K₁ with exactly the
//! probability 1 − M/(M + S′ + Q′). The skip saves work, never a draw.
//!
//! Every token reads only frozen counts and its own random number, so the model is the same for
//! any number of threads and partitions. The skip counts are integers summed with atomics.

use crate::counts::WordTopics;
use crate::layout::Partition;
use crate::sampler::{CpuSampler, PartitionSweep, SweepCounters, SweepInput};
use std::sync::atomic::{AtomicU64, Ordering};
use topos_corpus::Docs;
use topos_model::DocTopics;
use topos_sampling::{CounterRng, Philox4x32, Stream};

/// Relative widening of S_est against rounding (module documentation).
const BOUND_SLACK: f64 = 1e-9;

/// The CPU implementation for the registry. The bound's depth g is the run's
/// ([`crate::sampler::SamplerSettings::ezlda_g`], `--ezlda-g`, default 2): it changes which
/// tokens skip building S′, never the topic drawn, so the model is the same for every g.
pub struct EzldaCpu {
    /// Take step 1's decision from the bound (`true`, ezLDA), or always build S′ (`false`: the
    /// skip-free three-branch draw, the same topic for the same random number; for tests).
    pub skip: bool,
}

/// What every partition's sweep reads this iteration.
struct Frozen<'a> {
    docs: Docs<'a>,
    doc_topics: &'a DocTopics,
    word_topics: &'a WordTopics,
    /// 1/(n_k + Vβ) and 1/(n_k − 1 + Vβ).
    inv: Vec<f64>,
    inv_less: Vec<f64>,
    /// β/(n_k + Vβ): a_k of a topic outside the word's row.
    smooth_a: Vec<f64>,
    alpha: Vec<f64>,
    beta: f64,
    /// Inclusive prefix sums of α_k β/(n_k + Vβ) over all topics.
    smooth_prefix: Vec<f64>,
    /// Topics by `smooth_a` descending (ties: the lower topic first).
    by_smooth: Vec<u16>,
    gen: Philox4x32,
    iteration: u32,
    g: usize,
    skip: bool,
    tokens: AtomicU64,
    skipped_construction: AtomicU64,
    skipped_final: AtomicU64,
}

impl CpuSampler for EzldaCpu {
    fn needs_doc_topics(&self) -> bool {
        true
    }
    fn prepare<'a>(&self, input: SweepInput<'a>) -> Box<dyn PartitionSweep + 'a> {
        let doc_topics = input
            .doc_topics
            .expect("ezlda reads the document-topic counts it asked for");
        let b = input.word_topics;
        let beta = input.beta;
        let inv = b.normalizers(beta);
        let inv_less = b.normalizers_without_one(beta);
        let smooth_a: Vec<f64> = inv.iter().map(|&x| beta * x).collect();
        let alpha = input.alpha.values().to_vec();
        let mut acc = 0.0;
        let smooth_prefix = smooth_a
            .iter()
            .zip(&alpha)
            .map(|(&s, &a)| {
                acc += a * s;
                acc
            })
            .collect();
        let mut by_smooth: Vec<u16> = (0..inv.len() as u32).map(|k| k as u16).collect();
        by_smooth.sort_by(|&x, &y| {
            smooth_a[y as usize]
                .total_cmp(&smooth_a[x as usize])
                .then(x.cmp(&y))
        });
        Box::new(Frozen {
            docs: input.docs,
            doc_topics,
            word_topics: b,
            inv,
            inv_less,
            smooth_a,
            alpha,
            beta,
            smooth_prefix,
            by_smooth,
            gen: Philox4x32::new(input.seed),
            iteration: input.iteration,
            g: super::EzldaDepth::of(input.settings).get(),
            skip: self.skip,
            tokens: AtomicU64::new(0),
            skipped_construction: AtomicU64::new(0),
            skipped_final: AtomicU64::new(0),
        })
    }
}

/// Weight of entry `i` of inclusive prefix sums.
#[inline]
fn weight(prefix: &[f64], i: usize) -> f64 {
    prefix[i] - before(prefix, i)
}

/// The prefix sum before entry `i`.
#[inline]
fn before(prefix: &[f64], i: usize) -> f64 {
    if i == 0 {
        0.0
    } else {
        prefix[i - 1]
    }
}

/// The entry of inclusive prefix sums `prefix` that `x` falls in, never one of `forbidden` nor one
/// of weight 0 (rounding at a boundary moves the draw to the nearest allowed entry).
fn pick(prefix: &[f64], x: f64, forbidden: [usize; 2]) -> usize {
    let allowed = |i: usize| !forbidden.contains(&i) && weight(prefix, i) > 0.0;
    let i = prefix.partition_point(|&p| p <= x).min(prefix.len() - 1);
    if allowed(i) {
        return i;
    }
    (i + 1..prefix.len())
        .find(|&j| allowed(j))
        .or_else(|| (0..i).rev().find(|&j| allowed(j)))
        .unwrap_or(i)
}

/// Draws from prefix sums with the entries `excluded` (any order; `usize::MAX` for none) given
/// weight 0: `x` is uniform over the remaining mass.
fn pick_excluding(prefix: &[f64], mut x: f64, excluded: [usize; 2]) -> usize {
    let (lo, hi) = (excluded[0].min(excluded[1]), excluded[0].max(excluded[1]));
    // In increasing order, so that each test compares x in the coordinates of the whole row.
    if lo < prefix.len() && x >= before(prefix, lo) {
        x += weight(prefix, lo);
    }
    if hi != lo && hi < prefix.len() && x >= before(prefix, hi) {
        x += weight(prefix, hi);
    }
    pick(prefix, x, excluded)
}

/// Inclusive prefix sums of a_k·A_dk over the document's row `doc`, K₁'s entry 0, into `out`;
/// returns the total (S′ before the token's own correction). Its own function, so that the
/// running sum stays in a register: this loop is most of the time of a token that builds S′.
#[inline(never)]
fn doc_prefix(out: &mut Vec<f64>, doc: (&[u16], &[u32]), a: &[f64], k1: u16) -> f64 {
    out.resize(doc.0.len(), 0.0);
    let mut acc = 0.0;
    for ((slot, &k), &n) in out.iter_mut().zip(doc.0).zip(doc.1) {
        let w = a[k as usize] * n as f64;
        acc += if k == k1 { 0.0 } else { w };
        *slot = acc;
    }
    acc
}

/// Per-thread buffers, dense over topics and reset after each word.
struct Scratch {
    /// a_k of the current word.
    a: Vec<f64>,
    /// Position of topic k in the word's row, `u32::MAX` outside it.
    pos: Vec<u32>,
    /// Inclusive prefix sums of α_k B_vk/(n_k + Vβ) over the word's row.
    word_prefix: Vec<f64>,
    /// Inclusive prefix sums of a_k A_dk over the current document's row, K₁'s entry 0.
    doc_prefix: Vec<f64>,
    /// The g + 1 largest (a_k, k).
    top: Vec<(f64, u16)>,
}

/// Inserts `(a, k)` into `top` (sorted by a descending, then k ascending), keeping `n` entries.
#[inline]
fn insert_top(top: &mut Vec<(f64, u16)>, n: usize, a: f64, k: u16) {
    let at = top
        .iter()
        .position(|&(b, j)| a > b || (a == b && k < j))
        .unwrap_or(top.len());
    if at < n {
        top.insert(at, (a, k));
        top.truncate(n);
    }
}

impl Frozen<'_> {
    /// The count of topic `k` in a sorted sparse row (0 when absent) and its position.
    #[inline]
    fn count_in(row: (&[u16], &[u32]), k: u16) -> (u32, Option<usize>) {
        match row.0.binary_search(&k) {
            Ok(i) => (row.1[i], Some(i)),
            Err(_) => (0, None),
        }
    }

    fn sweep_partition(&self, p: &Partition, z: &mut [u16], s: &mut Scratch) -> SweepCounters {
        let mut counters = SweepCounters::default();
        let beta = self.beta;
        let g = self.g;
        let smooth_total = self.smooth_prefix.last().copied().unwrap_or(0.0);
        for (wi, &w) in p.words.iter().enumerate() {
            let (wt, wc) = self.word_topics.row(w);
            s.word_prefix.clear();
            let mut acc = 0.0;
            for (i, (&k, &c)) in wt.iter().zip(wc).enumerate() {
                let k = k as usize;
                s.a[k] = (c as f64 + beta) * self.inv[k];
                s.pos[k] = i as u32;
                acc += self.alpha[k] * (c as f64 * self.inv[k]);
                s.word_prefix.push(acc);
            }
            let word_total = acc;
            // K₁…K_{g+1} over all topics: the row's largest, and the largest outside it (in the
            // order of β/(n_k + Vβ), skipping the row's topics).
            s.top.clear();
            for &k in wt {
                insert_top(&mut s.top, g + 1, s.a[k as usize], k);
            }
            let mut outside = 0;
            for &k in &self.by_smooth {
                if outside == g + 1 {
                    break;
                }
                if s.pos[k as usize] == u32::MAX {
                    insert_top(&mut s.top, g + 1, s.a[k as usize], k);
                    outside += 1;
                }
            }
            let (a1, k1) = s.top[0];
            let k1u = k1 as usize;
            let a_next = s.top.get(g).map_or(0.0, |t| t.0);
            let k1_word = s.pos[k1u];
            let k1_word_weight = if k1_word == u32::MAX {
                0.0
            } else {
                weight(&s.word_prefix, k1_word as usize)
            };
            // Q without K₁ (its smoothing and word parts), before the token's own correction.
            let smooth_less_k1 = smooth_total - weight(&self.smooth_prefix, k1u);
            let word_less_k1 = word_total - k1_word_weight;

            let mut cached_doc = usize::MAX;
            let mut s_base = 0.0f64;
            for e in p.word_range(wi) {
                let src = p.token_src[e] as usize;
                let d = p.docs.start + p.token_doc[e] as usize;
                let c = z[src];
                let cu = c as usize;
                let doc = self.doc_topics.row(d);
                let len = self.docs.doc_start(d + 1) - self.docs.doc_start(d);
                // a′ of the token's own topic, and b′ at K₁…K_g.
                let b_own = if s.pos[cu] == u32::MAX {
                    0
                } else {
                    wc[s.pos[cu] as usize]
                };
                let a_own = (b_own as f64 - 1.0 + beta).max(0.0) * self.inv_less[cu];
                let mut used = 0u64;
                let mut s_est = 0.0;
                let mut b_k1 = 0.0;
                for (i, &(ai, ki)) in s.top.iter().take(g).enumerate() {
                    let b = u64::from(Self::count_in(doc, ki).0) - u64::from(ki == c);
                    used += b;
                    if i == 0 {
                        b_k1 = b as f64;
                    } else {
                        s_est += ai * b as f64;
                    }
                }
                s_est += a_next * (len - 1 - used) as f64;
                s_est *= 1.0 + BOUND_SLACK;
                let a1_own = if c == k1 { a_own } else { a1 };
                let m = a1_own * (b_k1 + self.alpha[k1u]);
                // Q′ = smoothing part + word part without K₁ and c, and c's own term.
                let (smooth_q, word_q, own_q) = if c == k1 {
                    (smooth_less_k1, word_less_k1, 0.0)
                } else {
                    let own_word = if s.pos[cu] == u32::MAX {
                        0.0
                    } else {
                        weight(&s.word_prefix, s.pos[cu] as usize)
                    };
                    (
                        (smooth_less_k1 - weight(&self.smooth_prefix, cu)).max(0.0),
                        (word_less_k1 - own_word).max(0.0),
                        self.alpha[cu] * a_own,
                    )
                };
                let q = smooth_q + word_q + own_q;
                let u = CounterRng::first_f64(
                    &self.gen,
                    Stream::Train,
                    self.iteration,
                    p.first_key + src as u64,
                );
                counters.tokens += 1;
                if self.skip && u * (m + s_est + q) < m {
                    counters.skipped_construction += 1;
                    counters.skipped_final += 1;
                    z[src] = k1;
                    continue;
                }
                // S′: the document's row weighted by a_k, K₁'s entry 0, built once per
                // (document, word) pair; the token's own topic corrected at the draw.
                if d != cached_doc {
                    cached_doc = d;
                    s_base = doc_prefix(&mut s.doc_prefix, doc, &s.a, k1);
                }
                let own_doc = Self::count_in(doc, c).1;
                let (s_prime, own_old, own_new) = match own_doc {
                    Some(j) if c != k1 => {
                        let old = weight(&s.doc_prefix, j);
                        let new = a_own * (doc.1[j] as f64 - 1.0);
                        ((s_base - old + new).max(0.0), old, new)
                    }
                    _ => (s_base, 0.0, 0.0),
                };
                debug_assert!(s_prime <= s_est, "S' {s_prime} above its bound {s_est}");
                let t = u * (m + s_prime + q);
                if t < m {
                    counters.skipped_final += 1;
                    z[src] = k1;
                    continue;
                }
                let mut x = t - m;
                let k = if x < s_prime {
                    match own_doc {
                        Some(j) if c != k1 => {
                            let at = before(&s.doc_prefix, j);
                            if x < at {
                                doc.0[pick(&s.doc_prefix, x, [usize::MAX; 2])]
                            } else if x - at < own_new {
                                c
                            } else {
                                doc.0[pick(&s.doc_prefix, x + (own_old - own_new), [j, j])]
                            }
                        }
                        _ => doc.0[pick(&s.doc_prefix, x, [usize::MAX; 2])],
                    }
                } else {
                    x -= s_prime;
                    let own = if c == k1 { usize::MAX } else { cu };
                    if x < smooth_q || (word_q <= 0.0 && own_q <= 0.0) {
                        pick_excluding(&self.smooth_prefix, x, [k1u, own]) as u16
                    } else if x - smooth_q < own_q || word_q <= 0.0 {
                        c
                    } else {
                        let y = (x - smooth_q - own_q).min(word_q);
                        let ex = |k: usize| {
                            if k == usize::MAX || s.pos[k] == u32::MAX {
                                usize::MAX
                            } else {
                                s.pos[k] as usize
                            }
                        };
                        wt[pick_excluding(&s.word_prefix, y, [ex(k1u), ex(own)])]
                    }
                };
                z[src] = k;
            }
            for &k in wt {
                s.a[k as usize] = self.smooth_a[k as usize];
                s.pos[k as usize] = u32::MAX;
            }
        }
        counters
    }
}

impl PartitionSweep for Frozen<'_> {
    fn sweep(&self, partition: &Partition, z: &mut [u16]) {
        let topics = self.inv.len();
        let mut scratch = Scratch {
            a: self.smooth_a.clone(),
            pos: vec![u32::MAX; topics],
            word_prefix: Vec::new(),
            doc_prefix: Vec::with_capacity(topics),
            top: Vec::with_capacity(self.g + 2),
        };
        let c = self.sweep_partition(partition, z, &mut scratch);
        self.tokens.fetch_add(c.tokens, Ordering::Relaxed);
        self.skipped_construction
            .fetch_add(c.skipped_construction, Ordering::Relaxed);
        self.skipped_final
            .fetch_add(c.skipped_final, Ordering::Relaxed);
    }
    fn counters(&self) -> Option<SweepCounters> {
        Some(SweepCounters {
            tokens: self.tokens.load(Ordering::Relaxed),
            skipped_construction: self.skipped_construction.load(Ordering::Relaxed),
            skipped_final: self.skipped_final.load(Ordering::Relaxed),
        })
    }
}
