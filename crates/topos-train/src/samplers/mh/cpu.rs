//! mhLDA's Metropolis–Hastings sweep on the CPU (thesis Eq. 2.1–2.2), in WarpLDA's two phases
//! (Chen et al. 2016, §4: a word phase and a document phase, each reading only the row in cache,
//! with the counts refreshed between them), O(1) per proposal.
//!
//! An iteration starts from the assignments z⁰ and their counts A⁰ (document-topic), B⁰
//! (word-topic) and n⁰ (topic totals), frozen as every sampler here reads them. Each partition
//! (whole documents) then runs three passes over its tokens; `M` is `--mh-steps`:
//!
//! 0. **document order**: every token draws its `M` document proposals (below) from z⁰ of its own
//!    document, whose tokens are contiguous and in cache;
//! 1. **word phase**, word by word (PDOW, the word's row B⁰_w· dense in cache): every token runs
//!    its `M` document proposals against p¹, giving z¹, and draws its `M` word proposals from its
//!    word's alias table (in cache);
//! 2. **document phase**, document by document (the document's row A¹_d· of z¹ dense in cache,
//!    refreshed from z¹ between the phases): every token runs its `M` word proposals against
//!    p², giving z², the next iteration's assignments.
//!
//! The targets are the collapsed Gibbs conditional of the token (the ¬ marks its own assignment
//! removed, as the GPU's cgs reads the counts) against the counts frozen for the phase:
//!
//! ```text
//! p¹(k) ∝ (A⁰¬_dk + α_k)(B⁰¬_wk + β)/(n⁰¬_k + Vβ)     ¬ at the token's z⁰ topic c
//! p²(k) ∝ (A¹¬_dk + α_k)(B⁰¬_wk + β)/(n⁰¬_k + Vβ)     ¬ at c for B⁰, n⁰, at its z¹ topic for A¹
//! ```
//!
//! p² is p¹ with the document's counts refreshed after the word phase: the document's row is the
//! only one a partition can refresh alone (its documents are whole; the word rows are summed over
//! partitions and processes once per iteration), and it is the row the document phase reads.
//!
//! Proposals (Eq. 2.1), each an O(1) mixture of "the topic of a count" and "the prior":
//!
//! ```text
//! q_d(k) ∝ A⁰¬_dk + α_k   with probability (n_d − 1)/(n_d − 1 + Σα) the z⁰ topic of a uniformly
//!                         random *other* token of the document (WarpLDA's draw, with the token
//!                         itself left out so that the proposal is A¬ and not A), else a draw
//!                         from α (uniform if symmetric, else an alias table over α)
//! q_w(k) ∝ B⁰_wk + β      with probability n_w/(n_w + Kβ) a draw from the word's alias table
//!                         over its non-zero B⁰_wk (Walker/Vose, built once per iteration), else
//!                         a uniform topic
//! ```
//!
//! A proposal k from state s is accepted with min(1, p(k) q(s) / (p(s) q(k))) (Eq. 2.2). The
//! proposal's factor cancels against the target's, so each rate is a ratio of per-topic factors
//! read from the phase's row in cache:
//!
//! ```text
//! word phase, document proposal:  f(k)/f(s),  f(k) = (B⁰¬_wk + β)/(n⁰¬_k + Vβ)
//! document phase, word proposal:  h(k)/h(s),  h(k) = (A¹¬_dk + α_k)/(n⁰¬_k + Vβ) · (B⁰¬_wk + β)/(B⁰_wk + β)
//! ```
//!
//! f is Eq. (2.2)'s r^doc = (B_wk + β)/(B_ws + β) · (n_s + Vβ)/(n_k + Vβ) on the counts with the
//! token removed, exactly: the document proposal draws from A¬ itself, so no A_dk is ever read.
//! h is Eq. (2.2)'s r^word = (A_dk + α_k)/(A_ds + α_s) · (n_s + Vβ)/(n_k + Vβ) on the counts with
//! the token removed, where the last factor (1 unless k = c) accounts for the word proposal
//! drawing from B⁰ with the token's own count in it: the word phase, where the row is in cache,
//! stores B⁰_wc beside the token for the document phase. Each step leaves its phase's target
//! invariant (`tests/samplers.rs` checks both phases: start from p, one phase, compare with p),
//! so each phase is a Metropolis–Hastings chain on the token's exact conditional for the phase's
//! counts; with finitely many steps the draw is approximate (hence "approximate" in `topos
//! algos`). mhLDA's shortcut (§2.2.3) holds by construction: a proposal of the current topic
//! changes nothing (the steps are branch-free: it is "accepted" without effect).
//!
//! Per token and step: one random number for its document proposal (pass 0), two in the word
//! phase (the acceptance, the word proposal) and one in the document phase, and dense reads of
//! the row in cache. What a token carries from one pass to the next (its z⁰ and z¹ topics,
//! B⁰_wc, its `M` proposals) is one record of `4 + M` 16-bit words in the partition's scratch, in
//! corpus order: the passes in document order read it sequentially, the word phase (which visits
//! the tokens out of corpus order) touches nothing else of the token, and prefetches it.
//!
//! Random numbers: a counter-based generator, SplitMix64's output function of a counter (Steele
//! et al. 2014), keyed like [`CounterRng`]: the key of (seed, iteration, pass) comes from one
//! Philox block of the training stream, and the n-th number of a token is
//! mix(key + (token · 256 + n) · γ) for its global index. So every token reads only frozen counts
//! and numbers keyed by its global index, iteration, pass and step, and the model is the same
//! for any number of threads and partitions.
//!
//! [`CounterRng`]: topos_sampling::CounterRng

use crate::counts::WordTopics;
use crate::layout::{prefetch, Partition};
use crate::sampler::{CpuSampler, PartitionSweep, SweepInput};
use topos_corpus::Docs;
use topos_sampling::{AliasTable, Philox4x32, Stream};

/// Which acceptance rates the sweep uses: the exact ones, or (tests only) a wrong control.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rates {
    /// The rates above.
    Exact,
    /// Control for the stationarity test: Eq. (2.2) as printed, for the target with the token's
    /// own assignment kept in the counts (WarpLDA's simplification), and document proposals that
    /// may pick the token itself. Its chain targets another distribution, which the test must
    /// detect.
    OwnAssignmentKept,
}

/// What every partition's sweep reads this iteration.
struct Frozen<'a> {
    docs: Docs<'a>,
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
    /// The keys of the three passes of this iteration.
    keys: [u64; 3],
    /// Proposals per token and phase (`--mh-steps`).
    steps: usize,
    rates: Rates,
}

/// The CPU implementation for the registry.
pub struct MhCpu;

impl CpuSampler for MhCpu {
    fn needs_doc_topics(&self) -> bool {
        // The document proposal draws from A¬ by picking a token, and the document phase counts
        // its rows itself: no pass over the corpus for A.
        false
    }
    fn prepare<'a>(&self, input: SweepInput<'a>) -> Box<dyn PartitionSweep + 'a> {
        Box::new(MhSweep {
            frozen: frozen(input, Rates::Exact),
        })
    }
}

fn frozen<'a>(input: SweepInput<'a>, rates: Rates) -> Frozen<'a> {
    let b = input.word_topics;
    let inv = b.normalizers(input.beta);
    let inv_less = b.normalizers_without_one(input.beta);
    let (word_prob, word_alias) = word_alias_tables(b);
    let alpha = input.alpha.values();
    let alpha_alias = input.alpha.symmetric_value().is_none().then(|| {
        let w: Vec<f32> = alpha.iter().map(|&x| x as f32).collect();
        AliasTable::from_weights(&w)
    });
    let gen = Philox4x32::new(input.seed);
    let keys = [0u32, 1, 2].map(|pass| {
        // The training stream's block counter 0xFF_FFFF under the index u64::MAX − pass: no
        // CounterRng of a token reaches it (2²⁴ blocks of a 2⁶⁴-token corpus).
        let b = gen.block([
            !pass,
            u32::MAX,
            input.iteration,
            ((Stream::Train as u32) << 24) | 0xFF_FFFF,
        ]);
        (u64::from(b[0]) << 32) | u64::from(b[1])
    });
    Frozen {
        docs: input.docs,
        word_topics: b,
        word_prob,
        word_alias,
        inv,
        inv_less,
        alpha,
        alpha_alias,
        alpha_sum: input.alpha.sum(),
        beta: input.beta,
        keys,
        steps: super::MhSteps::of(input.settings, crate::sampler::SettingDefaults::Cpu).get()
            as usize,
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

/// SplitMix64's golden-ratio increment γ.
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// The `n`-th 64-bit random number of the token with global index `token` under a pass's `key`:
/// SplitMix64's output function (Stafford's Mix13) at counter `key + (token · 256 + n) · γ`,
/// i.e. the (token · 256 + n)-th output of SplitMix64 seeded with `key`.
#[inline(always)]
fn draw(key: u64, token: u64, n: u64) -> u64 {
    let mut x = key.wrapping_add(((token << 8) | n).wrapping_mul(GAMMA));
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// How a 64-bit random number x is used for a mixture draw: its high 32 bits choose the part
/// (`high(x) < threshold(a, b)` with probability a/(a + b), up to 2⁻³² rounding), its low 32
/// bits the draw within the part (`scale`, `scale_with_fraction`, `low_f64`), in integers: no
/// float-to-integer conversion in the hot loops.
#[inline(always)]
fn high(x: u64) -> u64 {
    x >> 32
}

/// ⌊a/(a + b) · 2³²⌋: the probability of the first part of a mixture, for [`high`].
fn threshold(a: f64, b: f64) -> u64 {
    ((a / (a + b)) * 4_294_967_296.0) as u64
}

/// A uniform integer below `n` from the low 32 bits (Lemire's multiply-shift; 0 if n = 0).
#[inline(always)]
fn scale(x: u64, n: usize) -> usize {
    (((x & 0xFFFF_FFFF) * n as u64) >> 32) as usize
}

/// [`scale`] and the fraction it drops, as a uniform in [0, 1) of 24 bits (for an alias table's
/// column and its coin).
#[inline(always)]
fn scale_with_fraction(x: u64, n: usize) -> (usize, f32) {
    let y = (x & 0xFFFF_FFFF) * n as u64;
    (
        (y >> 32) as usize,
        ((y as u32) >> 8) as f32 * (1.0 / 16_777_216.0),
    )
}

/// A uniform in [0, 1) from the low 32 bits.
#[inline(always)]
fn low_f64(x: u64) -> f64 {
    (x & 0xFFFF_FFFF) as f64 * (1.0 / 4_294_967_296.0)
}

/// `a` if `pick`, else `b`, without a branch.
#[inline(always)]
fn select(pick: bool, a: u16, b: u16) -> u16 {
    let mask = 0u16.wrapping_sub(u16::from(pick));
    b ^ ((a ^ b) & mask)
}

/// A uniform in [0, 1) from the top 24 bits: one acceptance test needs no more resolution.
#[inline(always)]
fn unit_f32(x: u64) -> f32 {
    (x >> 40) as f32 * (1.0 / 16_777_216.0)
}

/// Random number `n` of a token (its step, or 64 + its step for its second draw of a step).
const SECOND: u64 = 64;

/// Offsets of a token's record in the partition's scratch (16-bit words; `4 + M` a token): its
/// z⁰ and z¹ topics, B⁰_wc (two halves), its proposals.
const Z0: usize = 0;
const Z1: usize = 1;
const BWC: usize = 2;
const PROPOSALS: usize = 4;

/// Tokens ahead of the word phase's current one whose records are prefetched.
const PREFETCH_AHEAD: usize = 8;

struct MhSweep<'a> {
    frozen: Frozen<'a>,
}

impl PartitionSweep for MhSweep<'_> {
    fn sweep(&self, p: &Partition, z: &mut [u16]) {
        let f = &self.frozen;
        let mut scratch = vec![0u16; z.len() * (PROPOSALS + f.steps)];
        document_proposals(p, z, &mut scratch, f);
        word_phase(p, None, &mut scratch, f, true);
        document_phase(p, z, None, &scratch, f);
    }
}

/// The tokens of the partition's documents, one range (relative to the partition) a document.
fn doc_ranges<'b>(
    p: &'b Partition,
    f: &'b Frozen<'_>,
) -> impl Iterator<Item = std::ops::Range<usize>> + 'b {
    p.docs.clone().map(move |d| {
        let lo = (f.docs.doc_start(d) - p.token_start) as usize;
        let hi = (f.docs.doc_start(d + 1) - p.token_start) as usize;
        lo..hi
    })
}

/// Pass 0, document by document: every token's z⁰ topic and its `M` document proposals, drawn
/// from q_d ∝ A⁰¬_dk + α_k (the topic of a random other token of the document, or the prior).
fn document_proposals(p: &Partition, z: &[u16], scratch: &mut [u16], f: &Frozen<'_>) {
    let stride = PROPOSALS + f.steps;
    let k_topics = f.inv.len();
    let key = f.keys[0];
    // The control's proposal may pick the token itself (q ∝ A, own assignment kept).
    let others = usize::from(f.rates == Rates::Exact);
    for range in doc_ranges(p, f) {
        let doc = &z[range.clone()];
        let n_other = doc.len() - others;
        let from_doc = threshold(n_other as f64, f.alpha_sum);
        for (j, i) in range.clone().enumerate() {
            let rec = &mut scratch[i * stride..(i + 1) * stride];
            rec[Z0] = z[i];
            let token = p.first_key + i as u64;
            for (step, out) in rec[PROPOSALS..].iter_mut().enumerate() {
                let x = draw(key, token, step as u64);
                // Both candidates, then a select: which part x falls in is a coin flip the
                // branch predictor cannot learn (Σα is comparable to n_d).
                let r = scale(x, n_other);
                let doc_topic = doc[(r + usize::from(others == 1 && r >= j)).min(doc.len() - 1)];
                let prior_topic = match &f.alpha_alias {
                    None => scale(x, k_topics) as u16,
                    Some(t) => t.sample(low_f64(x)) as u16,
                };
                *out = select(high(x) < from_doc, doc_topic, prior_topic);
            }
        }
    }
}

/// Pass 1, the word phase, word by word with B⁰_w· dense: every token's chain, started from
/// `starts` (z⁰ when `None`, in a run), runs its document proposals against p¹ (when `accept`;
/// the stationarity test of the document phase skips it, z¹ = z⁰) and records z¹; then the
/// token draws its `M` word proposals from q_w ∝ B⁰_wk + β and records B⁰_wc beside them. Only
/// the token's record is touched (one cache line, prefetched): the word phase visits the
/// partition's tokens out of corpus order.
fn word_phase(
    p: &Partition,
    starts: Option<&[u16]>,
    scratch: &mut [u16],
    f: &Frozen<'_>,
    accept: bool,
) {
    let stride = PROPOSALS + f.steps;
    let k_topics = f.inv.len();
    let beta = f.beta;
    let key = f.keys[1];
    let own = if f.rates == Rates::Exact { 1.0 } else { 0.0 };
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
        let from_counts = threshold(n_w as f64, word_prior_mass);
        for e in p.word_range(wi) {
            if let Some(&ahead) = p.token_src.get(e + PREFETCH_AHEAD) {
                prefetch(scratch, ahead as usize * stride);
            }
            let src = p.token_src[e] as usize;
            let token = p.first_key + src as u64;
            let rec = &mut scratch[src * stride..(src + 1) * stride];
            let c = usize::from(rec[Z0]);
            let b_c = word_count[c];
            if accept {
                // f(k) = (B⁰¬_wk + β)/(n⁰¬_k + Vβ); the ¬ only changes it at c.
                let f_c = if f.rates == Rates::Exact {
                    (f64::from(b_c) - own + beta) * f.inv_less[c]
                } else {
                    (f64::from(b_c) + beta) * f.inv[c]
                };
                let f_of = |k: usize| -> f64 {
                    if k == c {
                        f_c
                    } else {
                        (f64::from(word_count[k]) + beta) * f.inv[k]
                    }
                };
                let start = starts.map_or(c, |st| usize::from(st[src]));
                let proposals = &rec[PROPOSALS..PROPOSALS + f.steps];
                rec[Z1] = run_chain(start, proposals, f_of, key, token) as u16;
            } else {
                rec[Z1] = rec[Z0];
            }
            rec[BWC] = b_c as u16;
            rec[BWC + 1] = (b_c >> 16) as u16;
            for step in 0..f.steps {
                // Word proposal (Eq. 2.1, first line).
                let x = draw(key, token, SECOND + step as u64);
                // The row is never empty: it counts the partition's own tokens of the word.
                let (col, fraction) = scale_with_fraction(x, wt.len());
                let count_topic = select(fraction < w_prob[col], wt[col], w_alias[col]);
                let prior_topic = scale(x, k_topics) as u16;
                let k = select(high(x) < from_counts, count_topic, prior_topic);
                rec[PROPOSALS + step] = k;
            }
        }
        for &t in wt {
            word_count[usize::from(t)] = 0;
        }
    }
}

/// One token's Metropolis-Hastings chain from `start` through its stored `proposals`, each
/// accepted with probability min(1, target(k)/target(s)) (Eq. 2.2 with the proposal's own ratio
/// already folded into `target` by the caller), step j drawing the token's j-th number of `key`.
/// Branch-free: a proposal of the current topic is "accepted" without effect.
#[inline(always)]
fn run_chain(
    start: usize,
    proposals: &[u16],
    target: impl Fn(usize) -> f64,
    key: u64,
    token: u64,
) -> usize {
    let mut s = start;
    let mut t_s = target(s);
    for (step, &k) in proposals.iter().enumerate() {
        let k = usize::from(k);
        let t_k = target(k);
        let accept = f64::from(unit_f32(draw(key, token, step as u64))) * t_s < t_k;
        s = if accept { k } else { s };
        t_s = if accept { t_k } else { t_s };
    }
    s
}

/// Pass 2, the document phase, document by document with A¹_d· (the counts of z¹, from the
/// records) dense: every token's chain, started from `starts` (z¹ when `None`, in a
/// run), runs its word proposals against p² and writes z² into `z`.
fn document_phase(
    p: &Partition,
    z: &mut [u16],
    starts: Option<&[u16]>,
    scratch: &[u16],
    f: &Frozen<'_>,
) {
    let stride = PROPOSALS + f.steps;
    let k_topics = f.inv.len();
    let beta = f.beta;
    let key = f.keys[2];
    let exact = f.rates == Rates::Exact;
    let own = if exact { 1.0 } else { 0.0 };
    let mut doc_count = vec![0u32; k_topics];
    for range in doc_ranges(p, f) {
        let records = &scratch[range.start * stride..range.end * stride];
        for rec in records.chunks_exact(stride) {
            doc_count[usize::from(rec[Z1])] += 1;
        }
        for (rec, i) in records.chunks_exact(stride).zip(range) {
            let token = p.first_key + i as u64;
            let c = usize::from(rec[Z0]);
            let c1 = usize::from(rec[Z1]);
            let b_c = f64::from(u32::from(rec[BWC]) | (u32::from(rec[BWC + 1]) << 16));
            // h(k) = (A¹¬_dk + α_k)/(n⁰¬_k + Vβ) · (B⁰¬_wk + β)/(B⁰_wk + β).
            let (inv_c, word_c) = if exact {
                (f.inv_less[c], (b_c - own + beta) / (b_c + beta))
            } else {
                (f.inv[c], 1.0)
            };
            let c_factor = inv_c * word_c;
            let h = |k: usize| -> f64 {
                let a = f64::from(doc_count[k]) - f64::from(u8::from(k == c1)) * own + f.alpha[k];
                a * if k == c { c_factor } else { f.inv[k] }
            };
            let start = starts.map_or(c1, |st| usize::from(st[i]));
            z[i] = run_chain(start, &rec[PROPOSALS..PROPOSALS + f.steps], h, key, token) as u16;
        }
        for rec in records.chunks_exact(stride) {
            doc_count[usize::from(rec[Z1])] = 0;
        }
    }
}

/// Which phase the test hook [`sweep_from`] runs.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// The word phase's document proposals against p¹.
    Word,
    /// The document phase's word proposals against p², with z¹ = z⁰ (the counts of `z`; see
    /// [`document_phase_from`] for another z¹).
    Document,
}

/// Test hook: one phase of every token's chain (all of one partition) against the counts of
/// `z` (z⁰, and z¹ = z⁰ for the document phase), each chain started from `starts` instead of
/// its own assignment, with the given rates. The stationarity test of `tests/samplers.rs` draws
/// `starts` from the exact conditionals.
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
    phase: Phase,
) -> Vec<u16> {
    match phase {
        Phase::Word => one_phase(
            docs,
            num_words,
            (z, z),
            starts,
            alpha,
            beta,
            seed,
            rates,
            true,
        ),
        Phase::Document => {
            document_phase_from(docs, num_words, z, z, starts, alpha, beta, seed, rates)
        }
    }
}

/// Test hook: the document phase alone against p² with word and topic counts of `z0` and
/// document counts of `z1` (the state after a word phase), each chain started from `starts`.
#[doc(hidden)]
#[allow(clippy::too_many_arguments)]
pub fn document_phase_from(
    docs: Docs<'_>,
    num_words: usize,
    z0: &[u16],
    z1: &[u16],
    starts: &[u16],
    alpha: &topos_model::Alpha,
    beta: f64,
    seed: u64,
    rates: Rates,
) -> Vec<u16> {
    one_phase(
        docs,
        num_words,
        (z0, z1),
        starts,
        alpha,
        beta,
        seed,
        rates,
        false,
    )
}

#[allow(clippy::too_many_arguments)]
fn one_phase(
    docs: Docs<'_>,
    num_words: usize,
    (z0, z1): (&[u16], &[u16]),
    starts: &[u16],
    alpha: &topos_model::Alpha,
    beta: f64,
    seed: u64,
    rates: Rates,
    word: bool,
) -> Vec<u16> {
    let k = alpha.values().len() as u32;
    let layout = crate::layout::Layout::build(docs, 1);
    let b = crate::counts::count_word_topics(&layout, z0, num_words, k);
    let defaults = crate::sampler::SamplerSettings::default();
    let f = frozen(
        SweepInput {
            docs,
            doc_topics: None,
            word_topics: &b,
            alpha,
            beta,
            seed,
            iteration: 1,
            settings: &defaults,
        },
        rates,
    );
    let p = &layout.partitions[0];
    let stride = PROPOSALS + f.steps;
    let mut out = z0.to_vec();
    let mut scratch = vec![0u16; z0.len() * stride];
    document_proposals(p, z0, &mut scratch, &f);
    if word {
        word_phase(p, Some(starts), &mut scratch, &f, true);
        for (o, rec) in out.iter_mut().zip(scratch.chunks_exact(stride)) {
            *o = rec[Z1];
        }
    } else {
        word_phase(p, None, &mut scratch, &f, false);
        for (rec, &t) in scratch.chunks_exact_mut(stride).zip(z1) {
            rec[Z1] = t;
        }
        document_phase(p, &mut out, Some(starts), &scratch, &f);
    }
    out
}
