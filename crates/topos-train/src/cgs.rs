//! The sparse collapsed Gibbs sampler: the reference every other sampler is checked against.
//!
//! Each token is resampled from the exact collapsed conditional (Griffiths & Steyvers 2004),
//! with every count excluding the token itself (the ¬ superscript):
//!
//! ```text
//! p(k) ∝ (A¬_dk + α)(B¬_vk + β) / (n¬_k + Vβ)
//!      = A¬_dk·(B¬_vk + β)·s_k  +  α·B¬_vk·s_k  +  α·β·s_k,        s_k = 1/(n¬_k + Vβ)
//!        └ p₁: doc non-zeros ┘    └ word part ┘    └ smoothing ┘
//! ```
//!
//! This is the bucket decomposition of SparseLDA (Yao et al. 2009) in the form of CuLDA_CGS §6.1
//! (Eq. 6–8: p₁ over the non-zeros of the document row, p₂ = α·p*(k) from a tree for the word).
//! Unlike ESCA, the counts change after every token, so the K-sized branches are *updatable*:
//! after a token moves from topic k_old to k_new only the weights at those two topics change.
//! They are kept as blocked running sums ([`BlockedSums`]: O(1) per update, O(K/32 + 32) per
//! draw) rather than F+ trees (O(log K) per update), because most tokens are drawn from p₁ and the
//! updates, not the draws, dominate.
//!
//! Tokens are visited in PDOW order (by word within a partition): all changes while a word is being
//! processed are to that word's row, so one dense scratch row for B_v, one structure for its word
//! part and one for the smoothing part (over all K) are enough, and exact. Words with few tokens in
//! the partition skip the O(K) dense branch and scan the row's non-zeros instead.
//!
//! **Parallelism (AD-LDA, Newman et al. 2009).** Documents are cut into a fixed number of
//! partitions; each runs the exact sampler above against the word-topic counts of the start of
//! the iteration plus its own changes, and the counts are merged (rebuilt from all assignments)
//! at the end of every iteration. The partition count is a function of the corpus (or
//! `--partitions`), never of the thread count, so the result is the same for any number of threads.

use crate::counts::WordTopics;
use crate::layout::Partition;
use topos_sampling::{BlockedSums, CounterRng, Philox4x32, Stream};

/// Sparse, updatable document-topic rows of one partition: row `d` has capacity min(|d|, K).
///
/// A row's start and length sit side by side (`meta[d]`) so that finding a row is one cache
/// line; in word order the rows are visited in scattered order and their first touch is the
/// sampler's largest single cost, which [`DocRows::prefetch`] hides.
struct DocRows {
    /// (start, len) of every row.
    meta: Vec<[u32; 2]>,
    topic: Vec<u16>,
    count: Vec<u32>,
}

impl DocRows {
    fn build(p: &Partition, doc_starts: &[u64], z_part: &[u16], k: usize) -> Self {
        let n = p.docs.len();
        let mut meta = Vec::with_capacity(n);
        let mut acc = 0u32;
        for d in 0..n {
            let dl = (doc_starts[p.docs.start + d + 1] - doc_starts[p.docs.start + d]) as usize;
            meta.push([acc, 0]);
            acc += dl.min(k) as u32;
        }
        let mut rows = Self {
            meta,
            topic: vec![0; acc as usize],
            count: vec![0; acc as usize],
        };
        // Counted through a dense row and a touched list: O(|d| + non-zeros) per document.
        let mut dense = vec![0u32; k];
        for d in 0..n {
            let a = (doc_starts[p.docs.start + d] - p.token_start) as usize;
            let b = (doc_starts[p.docs.start + d + 1] - p.token_start) as usize;
            let s = rows.meta[d][0] as usize;
            let mut n_nz = 0usize;
            for &kk in &z_part[a..b] {
                if dense[kk as usize] == 0 {
                    rows.topic[s + n_nz] = kk;
                    n_nz += 1;
                }
                dense[kk as usize] += 1;
            }
            for i in s..s + n_nz {
                let t = rows.topic[i] as usize;
                rows.count[i] = dense[t];
                dense[t] = 0;
            }
            rows.meta[d][1] = n_nz as u32;
        }
        rows
    }

    #[inline]
    fn row(&self, d: usize) -> (&[u16], &[u32]) {
        let [s, n] = self.meta[d];
        let (s, e) = (s as usize, (s + n) as usize);
        (&self.topic[s..e], &self.count[s..e])
    }

    /// Asks the cache for row `d`'s entries (its `meta` should already be cached).
    #[inline]
    fn prefetch(&self, d: usize) {
        let s = self.meta[d][0] as usize;
        prefetch(&self.topic, s);
        prefetch(&self.count, s);
    }

    #[inline]
    fn decrement(&mut self, d: usize, k: u16) {
        let [s, n] = self.meta[d];
        let (s, n) = (s as usize, n as usize);
        let i = s + find_topic(&self.topic[s..s + n], k)
            .expect("token's topic missing from its document row");
        self.count[i] -= 1;
        if self.count[i] == 0 {
            let last = s + n - 1;
            self.topic[i] = self.topic[last];
            self.count[i] = self.count[last];
            self.meta[d][1] -= 1;
        }
    }

    /// Adds one to the `i`-th entry of row `d` (a topic drawn from the row itself).
    #[inline]
    fn increment_at(&mut self, d: usize, i: usize) {
        self.count[self.meta[d][0] as usize + i] += 1;
    }

    #[inline]
    fn increment(&mut self, d: usize, k: u16) {
        let [s, n] = self.meta[d];
        let (s, n) = (s as usize, n as usize);
        if let Some(i) = find_topic(&self.topic[s..s + n], k) {
            self.count[s + i] += 1;
        } else {
            self.topic[s + n] = k;
            self.count[s + n] = 1;
            self.meta[d][1] += 1;
        }
    }
}

/// Position of topic `k` in a document row. SSE2 (part of the x86_64 baseline) compares eight
/// topics per instruction; rows are short but scanned twice per token, so this matters.
#[inline(always)]
fn find_topic(row: &[u16], k: u16) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        let mut chunks = row.chunks_exact(8);
        // SAFETY: SSE2 is always present on x86_64; loads are unaligned loads of 8 u16 that lie
        // inside `chunk`.
        unsafe {
            let needle = _mm_set1_epi16(k as i16);
            for (c, chunk) in (&mut chunks).enumerate() {
                let v = _mm_loadu_si128(chunk.as_ptr() as *const __m128i);
                let mask = _mm_movemask_epi8(_mm_cmpeq_epi16(v, needle)) as u32;
                if mask != 0 {
                    return Some(c * 8 + (mask.trailing_zeros() / 2) as usize);
                }
            }
        }
        let base = row.len() - chunks.remainder().len();
        chunks
            .remainder()
            .iter()
            .position(|&t| t == k)
            .map(|i| base + i)
    }
    #[cfg(not(target_arch = "x86_64"))]
    row.iter().position(|&t| t == k)
}

/// A hint to bring `slice[i]` into the cache; never faults (an address past the end is ignored).
#[inline(always)]
fn prefetch<T>(slice: &[T], i: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        let ptr = slice.as_ptr().wrapping_add(i) as *const i8;
        // SAFETY: prefetching is a hint; it does not dereference the pointer, and SSE is part of
        // the x86_64 baseline.
        unsafe { std::arch::x86_64::_mm_prefetch(ptr, std::arch::x86_64::_MM_HINT_T0) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (slice, i);
}

/// How many tokens ahead the sweep asks for document rows (the row's `meta` twice as far ahead).
const PREFETCH_AHEAD: usize = 4;

/// Reusable per-partition buffers.
pub struct Scratch {
    word_row: Vec<u32>,
    in_nonzeros: Vec<bool>,
    nonzeros: Vec<u16>,
    /// For a word with a dense branch: `q[k] = (B_vk + β)·s_k`, the p*(k) of CuLDA_CGS §6.1.3 that
    /// every token of the word multiplies by A_dk.
    q: Vec<f64>,
    word_part: BlockedSums,
    weights: Vec<f64>,
    /// p₁'s terms for the current token.
    terms: Vec<f64>,
}

impl Scratch {
    pub fn new(k: usize) -> Self {
        Self {
            word_row: vec![0; k],
            in_nonzeros: vec![false; k],
            nonzeros: Vec::new(),
            q: vec![0.0; k],
            word_part: BlockedSums::default(),
            weights: vec![0.0; k],
            terms: vec![0.0; k],
        }
    }
}

/// Hyperparameters and the global counts at the start of the iteration.
pub struct Shared<'a> {
    pub word_topics: &'a WordTopics,
    pub doc_starts: &'a [u64],
    pub alpha: f64,
    pub beta: f64,
}

/// One exact Gibbs sweep over partition `p` in PDOW order, updating `z_part` in place.
pub fn sweep_partition(
    p: &Partition,
    z_part: &mut [u16],
    shared: &Shared<'_>,
    scratch: &mut Scratch,
    seed: u64,
    iteration: u32,
) {
    let b = shared.word_topics;
    let k_topics = b.num_topics as usize;
    let (alpha, beta) = (shared.alpha, shared.beta);
    let v_beta = b.num_words() as f64 * beta;
    let mut docs = DocRows::build(p, shared.doc_starts, z_part, k_topics);
    // Partition-local n_k: the global totals plus this partition's changes so far.
    let mut nk: Vec<i64> = b.totals.iter().map(|&n| n as i64).collect();
    let mut s: Vec<f64> = nk.iter().map(|&n| 1.0 / (n as f64 + v_beta)).collect();
    let mut smoothing =
        BlockedSums::from_weights(&s.iter().map(|&x| alpha * beta * x).collect::<Vec<_>>());
    let gen = Philox4x32::new(seed);
    #[cfg(target_arch = "x86_64")]
    let avx2 = std::is_x86_feature_detected!("avx2");
    let n_entries = p.token_doc.len();
    for e in 0..(2 * PREFETCH_AHEAD).min(n_entries) {
        prefetch(&docs.meta, p.token_doc[e] as usize);
    }

    for (wi, &w) in p.words.iter().enumerate() {
        let range = p.word_range(wi);
        let (wt, wc) = b.row(w);
        scratch.nonzeros.clear();
        for (&k, &c) in wt.iter().zip(wc) {
            scratch.word_row[k as usize] = c;
            scratch.in_nonzeros[k as usize] = true;
            scratch.nonzeros.push(k);
        }
        // Dense branch (p*(k) cache and O(1)-update word part) when its O(K) build pays for
        // itself over the word's tokens; otherwise both are computed from the row's non-zeros.
        let dense = (range.len() as f64) * (wt.len() as f64) > 2.0 * k_topics as f64;
        if dense {
            for (((q, wgt), &c), &sk) in scratch
                .q
                .iter_mut()
                .zip(scratch.weights.iter_mut())
                .zip(&scratch.word_row)
                .zip(&s)
            {
                *q = (c as f64 + beta) * sk;
                *wgt = alpha * c as f64 * sk;
            }
            scratch.word_part.rebuild(&scratch.weights[..k_topics]);
        }

        for e in range {
            // Rows two and one prefetch distances ahead: their meta, then their entries.
            if e + 2 * PREFETCH_AHEAD < n_entries {
                prefetch(&docs.meta, p.token_doc[e + 2 * PREFETCH_AHEAD] as usize);
                prefetch(z_part, p.token_src[e + 2 * PREFETCH_AHEAD] as usize);
            }
            if e + PREFETCH_AHEAD < n_entries {
                docs.prefetch(p.token_doc[e + PREFETCH_AHEAD] as usize);
            }
            let src = p.token_src[e] as usize;
            let d = p.token_doc[e] as usize;
            // Remove the token from every count (the ¬ in the conditional).
            let old = z_part[src];
            let o = old as usize;
            docs.decrement(d, old);
            scratch.word_row[o] -= 1;
            nk[o] -= 1;
            s[o] = 1.0 / (nk[o] as f64 + v_beta);
            smoothing.set(o, alpha * beta * s[o]);
            if dense {
                let c = scratch.word_row[o] as f64;
                scratch.q[o] = (c + beta) * s[o];
                scratch.word_part.set(o, alpha * c * s[o]);
            }

            // p₁ over the document's non-zeros, into a preallocated buffer.
            let (dt, dc) = docs.row(d);
            let terms = &mut scratch.terms[..dt.len()];
            let p1 = if dense {
                let q = &scratch.q[..k_topics];
                #[cfg(target_arch = "x86_64")]
                if avx2 {
                    // SAFETY: AVX2 was detected; every topic in the row is below K = q.len().
                    unsafe { p1_terms_avx2(terms, dt, dc, q) }
                } else {
                    p1_terms(terms, dt, dc, |k| q[k])
                }
                #[cfg(not(target_arch = "x86_64"))]
                p1_terms(terms, dt, dc, |k| q[k])
            } else {
                let word_row = &scratch.word_row[..];
                p1_terms(terms, dt, dc, |k| (word_row[k] as f64 + beta) * s[k])
            };
            let word_total = if dense {
                scratch.word_part.total()
            } else {
                scratch
                    .nonzeros
                    .iter()
                    .map(|&k| alpha * scratch.word_row[k as usize] as f64 * s[k as usize])
                    .sum()
            };
            let smooth_total = smoothing.total();
            let u =
                CounterRng::first_f64(&gen, Stream::Train, iteration, p.token_start + src as u64);
            let x = u * (p1 + word_total + smooth_total);
            let mut row_index = None;
            let new = if x < p1 {
                let i = pick_term(&scratch.terms[..dt.len()], x);
                row_index = Some(i);
                dt[i]
            } else if x - p1 < word_total {
                let y = x - p1;
                if dense {
                    scratch.word_part.sample(y) as u16
                } else {
                    let mut acc = 0.0;
                    let mut pick = None;
                    for &k in &scratch.nonzeros {
                        let wgt = alpha * scratch.word_row[k as usize] as f64 * s[k as usize];
                        if wgt > 0.0 {
                            acc += wgt;
                            pick = Some(k);
                            if acc > y {
                                break;
                            }
                        }
                    }
                    pick.expect("word part has positive mass")
                }
            } else {
                smoothing.sample((x - p1 - word_total).min(smooth_total)) as u16
            };

            // Add the token back under its new topic.
            let n = new as usize;
            match row_index {
                Some(i) => docs.increment_at(d, i),
                None => docs.increment(d, new),
            }
            if scratch.word_row[n] == 0 && !scratch.in_nonzeros[n] {
                scratch.in_nonzeros[n] = true;
                scratch.nonzeros.push(new);
            }
            scratch.word_row[n] += 1;
            nk[n] += 1;
            s[n] = 1.0 / (nk[n] as f64 + v_beta);
            smoothing.set(n, alpha * beta * s[n]);
            if dense {
                let c = scratch.word_row[n] as f64;
                scratch.q[n] = (c + beta) * s[n];
                scratch.word_part.set(n, alpha * c * s[n]);
            }
            z_part[src] = new;
        }
        for &k in &scratch.nonzeros {
            scratch.word_row[k as usize] = 0;
            scratch.in_nonzeros[k as usize] = false;
        }
    }
}

/// Writes `A_dk · q(k)` for every non-zero of a document row into `terms` and returns their sum:
/// the p₁ branch of CuLDA_CGS Eq. 7. The products are independent, so four partial sums keep the
/// additions from forming one long dependency chain; the rarer search walks the terms only as far
/// as the draw needs ([`pick_term`]).
#[inline(always)]
fn p1_terms(terms: &mut [f64], topics: &[u16], counts: &[u32], q: impl Fn(usize) -> f64) -> f64 {
    for ((t, &k), &c) in terms.iter_mut().zip(topics).zip(counts) {
        *t = c as f64 * q(k as usize);
    }
    let mut acc = [0.0f64; 4];
    let mut chunks = terms.chunks_exact(4);
    for c in &mut chunks {
        for (a, &t) in acc.iter_mut().zip(c) {
            *a += t;
        }
    }
    let tail: f64 = chunks.remainder().iter().sum();
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

/// [`p1_terms`] for the dense branch with AVX2: four `q[k]` gathered per instruction. The caller
/// checks that the CPU has AVX2; every topic must be below `q.len()` (the gather is unchecked),
/// which holds because assignments are validated against K when they are made or loaded.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn p1_terms_avx2(terms: &mut [f64], topics: &[u16], counts: &[u32], q: &[f64]) -> f64 {
    use std::arch::x86_64::*;
    let n = topics.len();
    debug_assert!(counts.len() == n && terms.len() == n);
    debug_assert!(topics.iter().all(|&k| (k as usize) < q.len()));
    let mut acc = _mm256_setzero_pd();
    let mut i = 0;
    while i + 4 <= n {
        let t = _mm_loadl_epi64(topics.as_ptr().add(i) as *const __m128i);
        let idx = _mm_cvtepu16_epi32(t);
        let qv = _mm256_i32gather_pd::<8>(q.as_ptr(), idx);
        let c = _mm_loadu_si128(counts.as_ptr().add(i) as *const __m128i);
        let prod = _mm256_mul_pd(_mm256_cvtepi32_pd(c), qv);
        _mm256_storeu_pd(terms.as_mut_ptr().add(i), prod);
        acc = _mm256_add_pd(acc, prod);
        i += 4;
    }
    let mut lanes = [0.0f64; 4];
    _mm256_storeu_pd(lanes.as_mut_ptr(), acc);
    let mut tail = 0.0;
    while i < n {
        let t = counts[i] as f64 * q[topics[i] as usize];
        terms[i] = t;
        tail += t;
        i += 1;
    }
    (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]) + tail
}

/// The index `i` where the running sum of `terms` first exceeds `x` (the last one if rounding
/// leaves `x` beyond the sum).
#[inline(always)]
fn pick_term(terms: &[f64], mut x: f64) -> usize {
    for (i, &t) in terms.iter().enumerate() {
        if x < t {
            return i;
        }
        x -= t;
    }
    terms.len() - 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_topic_agrees_with_a_scan_for_every_length_and_position() {
        for len in 0..40u16 {
            let row: Vec<u16> = (0..len).map(|i| (i * 7 + 3) % 1000).collect();
            for k in 0..1000u16 {
                assert_eq!(find_topic(&row, k), row.iter().position(|&t| t == k));
            }
        }
    }

    #[test]
    fn p1_terms_sum_and_pick() {
        let q = [0.5, 2.0, 1.0, 4.0, 0.25];
        let topics = [4u16, 0, 3, 1, 2];
        let counts = [4u32, 2, 1, 1, 3];
        let mut terms = [0.0; 5];
        let p1 = p1_terms(&mut terms, &topics, &counts, |k| q[k]);
        assert_eq!(terms, [1.0, 1.0, 4.0, 2.0, 3.0]);
        assert_eq!(p1, 11.0);
        assert_eq!(pick_term(&terms, 0.0), 0);
        assert_eq!(pick_term(&terms, 1.5), 1);
        assert_eq!(pick_term(&terms, 5.99), 2);
        assert_eq!(pick_term(&terms, 10.99), 4);
        assert_eq!(pick_term(&terms, 11.5), 4);
    }

    /// The AVX2 path adds in the same order as the portable one, so models do not depend on the
    /// CPU's features.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_terms_are_bit_identical_to_the_portable_ones() {
        if !std::is_x86_feature_detected!("avx2") {
            return;
        }
        let mut rng = topos_sampling::CounterRng::new(3, Stream::Synthetic, 0, 0);
        let q: Vec<f64> = (0..1000).map(|_| rng.next_f64() * 1e-3).collect();
        for n in 0..40 {
            let topics: Vec<u16> = (0..n).map(|_| rng.below(1000) as u16).collect();
            let counts: Vec<u32> = (0..n).map(|_| 1 + rng.below(500)).collect();
            let (mut a, mut b) = (vec![0.0; n], vec![0.0; n]);
            let sa = p1_terms(&mut a, &topics, &counts, |k| q[k]);
            // SAFETY: AVX2 detected above; topics are below q.len().
            let sb = unsafe { p1_terms_avx2(&mut b, &topics, &counts, &q) };
            assert_eq!(sa.to_bits(), sb.to_bits());
            assert_eq!(a, b);
        }
    }
}
