//! The sparse collapsed Gibbs sampler: the reference every other sampler is checked against.
//!
//! Each token is resampled from the exact collapsed conditional (Griffiths & Steyvers 2004),
//! with every count excluding the token itself (the ¬ superscript):
//!
//! ```text
//! p(k) ∝ (A¬_dk + α)(B¬_vk + β) / (n¬_k + Vβ)
//!      = (A¬_dk + α)·s_k·B¬_vk  +  β·A¬_dk·s_k  +  α·β·s_k,        s_k = 1/(n¬_k + Vβ)
//!        └ q: word non-zeros ┘    └ r: doc ┘      └ smoothing ┘
//! ```
//!
//! This is the bucket decomposition of SparseLDA (Yao, Mimno & McCallum 2009, §3), the one Mallet
//! samples with, visited **in document order** within a partition: the current document's row A_d
//! is a dense K-vector in L1, and with it the coefficients c_k = (A_dk + α)·s_k, so the q bucket,
//! which carries most of the mass, costs one multiply-add per non-zero of the *word's* row. On
//! 20 Newsgroups at K = 100 a token's word row has about 12 non-zeros (token-weighted, after 50
//! iterations) and its document row about 38: visiting by word (PDOW, SaberLDA §3.1.4, with
//! CuLDA_CGS §6.1's p₁ over the document's non-zeros) paid for the larger one. The r bucket is a
//! running sum kept exact per document and walked (over A_d's non-zeros) only when drawn; the
//! smoothing bucket is a blocked running sum ([`BlockedSums`]: O(1) per update, drawn rarely).
//! Only two topics' terms change per token (the old and the new one), so every update is O(1);
//! the token's own count is left out of the word's row inside the q pass, which also finds the
//! old topic there ([`row_prefix`]).
//!
//! Word rows are partition-local copies of the iteration's counts B (with room for every topic
//! the partition's tokens could add), updated token by token: within a partition the sampler is
//! exact, as before. They are read at random, one row per token, and prefetched a few tokens
//! ahead (the words of the coming tokens are known). A document's tokens are consecutive in the
//! corpus, so its random numbers (one Philox block per token, keyed by the token's position as
//! before) are computed together before it is sampled, four blocks per AVX2 instruction.
//!
//! Measured on 20 Newsgroups, one thread (BENCHMARKS.md, 2026-11-22): 1.75× the tokens/s of the
//! word-order sampler over the first 30 iterations and 1.9× after 100 at K = 100 (1.4× and 1.7×
//! at K = 1,000), with the same held-out likelihood per iteration within the spread of seeds.
//!
//! **Parallelism (AD-LDA, Newman et al. 2009).** Documents are cut into a fixed number of
//! partitions; each runs the exact sampler above against the word-topic counts of the start of
//! the iteration plus its own changes, and the counts are merged (rebuilt from all assignments)
//! at the end of every iteration. The partition count is a function of the corpus (or
//! `--partitions`), never of the thread count, so the result is the same for any number of threads.

use crate::counts::WordTopics;
use crate::layout::{prefetch, Partition};
use topos_sampling::{BlockedSums, CounterRng, Philox4x32, Stream};

/// Updatable sparse word-topic rows of one partition, indexed by global word id: the iteration's
/// counts B plus the partition's changes. Row `v` has room for min(K, nnz(B_v) + the partition's
/// tokens of `v`) entries, since each of those tokens can add at most one topic to it.
///
/// Rows are padded to a multiple of four entries with the topic K, whose coefficient is zero
/// (see [`Scratch::coef`]): the q pass then runs in whole AVX2 steps with no scalar tail, whose
/// variable length cost a mispredicted branch per token, and padding can never match a topic.
/// A row's start and length sit side by side (`meta[v]`) so that finding a row is one cache line.
struct WordRows {
    /// (start, len) of every row; words absent from the partition have an empty row.
    meta: Vec<[u32; 2]>,
    topic: Vec<u16>,
    count: Vec<u32>,
    /// The padding topic, K.
    pad: u16,
}

/// Rows are processed four entries at a time.
const STEP: usize = 4;

impl WordRows {
    fn build(p: &Partition, b: &WordTopics) -> Self {
        let k = b.num_topics as usize;
        let mut meta = vec![[0u32; 2]; b.num_words()];
        let mut cap = 0usize;
        for (wi, &w) in p.words.iter().enumerate() {
            let (wt, _) = b.row(w);
            meta[w as usize] = [cap as u32, wt.len() as u32];
            cap += (wt.len() + p.word_range(wi).len())
                .min(k)
                .next_multiple_of(STEP);
        }
        assert!(
            cap <= u32::MAX as usize,
            "partition word rows exceed 2^32 entries"
        );
        let pad = u16::try_from(k).expect("K ≤ 65,535");
        let mut topic = vec![pad; cap];
        let mut count = vec![0u32; cap];
        for &w in &p.words {
            let (wt, wc) = b.row(w);
            let s = meta[w as usize][0] as usize;
            topic[s..s + wt.len()].copy_from_slice(wt);
            count[s..s + wt.len()].copy_from_slice(wc);
        }
        Self {
            meta,
            topic,
            count,
            pad,
        }
    }

    /// Row `v` with its padding (a multiple of [`STEP`] entries).
    #[inline]
    fn padded_row(&self, v: usize) -> (&[u16], &[u32]) {
        let [s, n] = self.meta[v];
        let (s, e) = (s as usize, s as usize + (n as usize).next_multiple_of(STEP));
        (&self.topic[s..e], &self.count[s..e])
    }

    /// Asks the cache for row `v`'s entries (its `meta` should already be cached).
    #[inline]
    fn prefetch(&self, v: usize) {
        let s = self.meta[v][0] as usize;
        prefetch(&self.topic, s);
        prefetch(&self.count, s);
    }

    /// The count of the `i`-th entry of row `v`; it may be left at zero for a moment (a zero
    /// count adds nothing to q) until [`WordRows::remove_if_empty`].
    #[inline]
    fn count_at(&mut self, v: usize, i: usize) -> &mut u32 {
        &mut self.count[self.meta[v][0] as usize + i]
    }

    /// Adds one to topic `k` of row `v`, appending it if absent.
    #[inline]
    fn increment(&mut self, v: usize, k: u16) {
        let [s, n] = self.meta[v];
        let (s, n) = (s as usize, n as usize);
        if let Some(i) = find_topic(&self.topic[s..s + n], k) {
            self.count[s + i] += 1;
        } else {
            self.topic[s + n] = k;
            self.count[s + n] = 1;
            self.meta[v][1] += 1;
        }
    }

    /// Drops the `i`-th entry of row `v` if its count is zero: the last entry takes its place
    /// and the last slot becomes padding.
    #[inline]
    fn remove_if_empty(&mut self, v: usize, i: usize) {
        let [s, n] = self.meta[v];
        let (i, last) = (s as usize + i, (s + n - 1) as usize);
        if self.count[i] == 0 {
            self.topic[i] = self.topic[last];
            self.count[i] = self.count[last];
            self.topic[last] = self.pad;
            self.count[last] = 0;
            self.meta[v][1] -= 1;
        }
    }
}

/// Position of topic `k` in a sparse row. SSE2 (part of the x86_64 baseline) compares eight
/// topics per instruction; rows are short but searched on every token, so this matters.
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

/// How many tokens ahead the sweep asks for word rows (the row's `meta` twice as far ahead).
const PREFETCH_AHEAD: usize = 4;

/// Reusable per-partition buffers, about K long each.
pub struct Scratch {
    /// The current document's row A_d, dense (zero outside the document).
    doc_count: Vec<u32>,
    /// Non-zero topics of the current document, and each topic's position in that list.
    doc_nonzeros: Vec<u16>,
    doc_pos: Vec<u32>,
    /// c_k = (A_dk + α)·s_k for the current document: q's coefficients (SparseLDA's cache),
    /// K + 1 long: `coef[K]` stays 0, the coefficient of word rows' padding.
    coef: Vec<f64>,
    /// q's running sums for the current token.
    terms: Vec<f64>,
    /// The current document's uniforms.
    uniforms: Vec<f64>,
}

impl Scratch {
    pub fn new(k: usize) -> Self {
        Self {
            doc_count: vec![0; k],
            doc_nonzeros: Vec::with_capacity(k),
            doc_pos: vec![0; k],
            coef: vec![0.0; k + 1],
            terms: vec![0.0; k.next_multiple_of(STEP)],
            uniforms: Vec::new(),
        }
    }
}

/// Hyperparameters and the global counts at the start of the iteration.
pub struct Shared<'a> {
    pub word_topics: &'a WordTopics,
    pub doc_starts: &'a [u64],
    /// Word of every token of the corpus, in corpus order.
    pub tokens: &'a [u32],
    /// α_k by topic (all equal unless learned: the arithmetic is the same either way).
    pub alpha: &'a [f64],
    pub beta: f64,
}

/// One exact Gibbs sweep over partition `p` in document order, updating `z_part` in place.
pub fn sweep_partition(
    p: &Partition,
    z_part: &mut [u16],
    shared: &Shared<'_>,
    scratch: &mut Scratch,
    seed: u64,
    iteration: u32,
) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 was detected.
        unsafe { sweep_avx2(p, z_part, shared, scratch, seed, iteration) };
        return;
    }
    sweep::<false>(p, z_part, shared, scratch, seed, iteration);
}

/// [`sweep`] compiled for AVX2 as a whole, so that the q pass and the draw ([`row_prefix_avx2`],
/// [`pick_prefix_avx2`]) are inlined into the token loop: called across the feature boundary
/// they cost two calls per token, around which every live floating-point value was spilled (the
/// System V ABI saves no vector registers).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sweep_avx2(
    p: &Partition,
    z_part: &mut [u16],
    shared: &Shared<'_>,
    scratch: &mut Scratch,
    seed: u64,
    iteration: u32,
) {
    sweep::<true>(p, z_part, shared, scratch, seed, iteration);
}

/// The sweep; `AVX2` is true only when called from [`sweep_avx2`], i.e. when the CPU has AVX2.
#[inline(always)]
fn sweep<const AVX2: bool>(
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
    debug_assert_eq!(alpha.len(), k_topics);
    let v_beta = b.num_words() as f64 * beta;
    let mut words = WordRows::build(p, b);
    let tokens = &shared.tokens[p.token_start as usize..p.token_start as usize + p.num_tokens];
    // Partition-local n_k: the global totals plus this partition's changes so far.
    let mut nk: Vec<i64> = b.totals.iter().map(|&n| n as i64).collect();
    let mut s: Vec<f64> = nk.iter().map(|&n| 1.0 / (n as f64 + v_beta)).collect();
    let mut smoothing = BlockedSums::from_weights(
        &s.iter()
            .zip(alpha)
            .map(|(&x, &a)| a * beta * x)
            .collect::<Vec<_>>(),
    );
    let Scratch {
        doc_count,
        doc_nonzeros,
        doc_pos,
        coef,
        terms,
        uniforms,
    } = scratch;
    let doc_count = &mut doc_count[..k_topics];
    let coef = &mut coef[..k_topics + 1];
    for ((c, &sk), &a) in coef.iter_mut().zip(&s).zip(alpha) {
        *c = a * sk;
    }
    coef[k_topics] = 0.0;
    let gen = Philox4x32::new(seed);
    #[cfg(target_arch = "x86_64")]
    let avx2 = AVX2;
    let n_tokens = tokens.len();
    for &v in tokens.iter().take(2 * PREFETCH_AHEAD) {
        prefetch(&words.meta, v as usize);
    }

    for d in p.docs.clone() {
        let a = (shared.doc_starts[d] - p.token_start) as usize;
        let e = (shared.doc_starts[d + 1] - p.token_start) as usize;
        // The document's row, its coefficients and its r bucket r = β·Σ A_dk·s_k.
        doc_nonzeros.clear();
        for &k in &z_part[a..e] {
            let k = k as usize;
            if doc_count[k] == 0 {
                doc_pos[k] = doc_nonzeros.len() as u32;
                doc_nonzeros.push(k as u16);
            }
            doc_count[k] += 1;
        }
        let mut r = 0.0;
        for &k in doc_nonzeros.iter() {
            let (k, c) = (k as usize, doc_count[k as usize] as f64);
            coef[k] = (c + alpha[k]) * s[k];
            r += c * s[k];
        }
        r *= beta;
        // The document's random numbers, one per token keyed by its corpus position.
        uniforms.resize(e - a, 0.0);
        CounterRng::fill_first_f64(
            &gen,
            Stream::Train,
            iteration,
            p.first_key + a as u64,
            uniforms,
        );

        for i in a..e {
            // Rows two and one prefetch distances ahead: their meta, then their entries.
            if i + 2 * PREFETCH_AHEAD < n_tokens {
                prefetch(&words.meta, tokens[i + 2 * PREFETCH_AHEAD] as usize);
            }
            if i + PREFETCH_AHEAD < n_tokens {
                words.prefetch(tokens[i + PREFETCH_AHEAD] as usize);
            }
            let v = tokens[i] as usize;
            // Remove the token from every count (the ¬ in the conditional).
            let old = z_part[i];
            let o = old as usize;
            let c_old = doc_count[o];
            r -= beta * c_old as f64 * s[o];
            doc_count[o] = c_old - 1;
            if c_old == 1 {
                let at = doc_pos[o] as usize;
                let last = doc_nonzeros
                    .pop()
                    .expect("token's topic in its document row");
                if at < doc_nonzeros.len() {
                    doc_nonzeros[at] = last;
                    doc_pos[last as usize] = at as u32;
                }
            }
            nk[o] -= 1;
            s[o] = 1.0 / (nk[o] as f64 + v_beta);
            smoothing.set(o, alpha[o] * beta * s[o]);
            r += beta * (c_old - 1) as f64 * s[o];
            coef[o] = ((c_old - 1) as f64 + alpha[o]) * s[o];

            // q over the word's non-zeros with the token's own count left out at o, as running
            // sums in a preallocated buffer; the same pass finds o in the row.
            let (wt, wc) = words.padded_row(v);
            let prefix = &mut terms[..wt.len()];
            #[cfg(target_arch = "x86_64")]
            let (q, j_o) = if avx2 {
                // SAFETY: AVX2 was detected (see `AVX2`); every topic in the row is at most
                // K < coef.len(), and the row's length is a multiple of four.
                unsafe { row_prefix_avx2(prefix, wt, wc, coef, old) }
            } else {
                row_prefix(prefix, wt, wc, |k| coef[k], old)
            };
            #[cfg(not(target_arch = "x86_64"))]
            let (q, j_o) = row_prefix(prefix, wt, wc, |k| coef[k], old);
            // Rounding in the running sum may leave a tiny r for an emptied row.
            let r_total = if doc_nonzeros.is_empty() {
                0.0
            } else {
                r.max(0.0)
            };
            let smooth_total = smoothing.total();
            let u = uniforms[i - a];
            let x = u * (q + r_total + smooth_total);
            let mut word_index = None;
            let new = if x < q {
                #[cfg(target_arch = "x86_64")]
                let j = if avx2 {
                    // SAFETY: AVX2 was detected (see `AVX2`).
                    unsafe { pick_prefix_avx2(prefix, x) }
                } else {
                    pick_prefix(prefix, x)
                };
                #[cfg(not(target_arch = "x86_64"))]
                let j = pick_prefix(prefix, x);
                word_index = Some(j);
                wt[j]
            } else if x - q < r_total {
                let mut y = (x - q) / beta;
                let mut pick = doc_nonzeros[doc_nonzeros.len() - 1];
                for &k in doc_nonzeros.iter() {
                    let t = doc_count[k as usize] as f64 * s[k as usize];
                    if y < t {
                        pick = k;
                        break;
                    }
                    y -= t;
                }
                pick
            } else {
                smoothing.sample((x - q - r_total).min(smooth_total)) as u16
            };

            // Move the token from o to its new topic (the word row still counts it at o: the q
            // pass only left it out).
            let n = new as usize;
            *words.count_at(v, j_o) -= 1;
            match word_index {
                Some(j) => *words.count_at(v, j) += 1,
                None => words.increment(v, new),
            }
            // After the increment, which may append: o's entry moves only if it emptied.
            words.remove_if_empty(v, j_o);
            let c_new = doc_count[n];
            if c_new == 0 {
                doc_pos[n] = doc_nonzeros.len() as u32;
                doc_nonzeros.push(new);
            }
            r -= beta * c_new as f64 * s[n];
            doc_count[n] = c_new + 1;
            nk[n] += 1;
            s[n] = 1.0 / (nk[n] as f64 + v_beta);
            smoothing.set(n, alpha[n] * beta * s[n]);
            r += beta * (c_new + 1) as f64 * s[n];
            coef[n] = ((c_new + 1) as f64 + alpha[n]) * s[n];
            z_part[i] = new;
        }
        // Leave the scratch row empty and the coefficients at α·s_k for the next document.
        for &k in doc_nonzeros.iter() {
            let k = k as usize;
            doc_count[k] = 0;
            coef[k] = alpha[k] * s[k];
        }
    }
}

/// Writes the running sums of `count'_i · coef(topic_i)` over a padded word row into `prefix`
/// and returns the total and the position of topic `o`, where count' is the count less one at
/// `o` (the token being resampled: the ¬ of the conditional). The total is the q bucket of
/// SparseLDA (Yao et al. 2009, §3), Σ_k B¬_vk·(A¬_dk + α)·s_k over the word's row. Leaving the
/// token out here, in the pass that reads the row anyway, replaces a separate search for `o`.
///
/// Running sums, not terms, so that the draw ([`pick_prefix`]) is a count of the sums at or
/// below the uniform, with no data-dependent branch (the scan that stopped at the drawn term
/// mispredicted its exit on nearly every token: 12% of the sweep in `perf`). The sums are formed
/// four at a time in the order of [`row_prefix_avx2`]'s in-register scan (a, a+b, (b+c)+a,
/// (c+d)+(a+b), each plus the sum before the four), so both give the same bits and the model does
/// not depend on the CPU. The row's length must be a multiple of four, and `o` in it once.
#[inline(always)]
fn row_prefix(
    prefix: &mut [f64],
    topics: &[u16],
    counts: &[u32],
    coef: impl Fn(usize) -> f64,
    o: u16,
) -> (f64, usize) {
    debug_assert!(topics.len().is_multiple_of(STEP));
    let mut j_o = 0;
    let mut carry = 0.0;
    for (i, p) in prefix.chunks_exact_mut(STEP).enumerate() {
        let term = |j: usize| {
            let (t, c) = (topics[4 * i + j], counts[4 * i + j]);
            (c as i32 - i32::from(t == o)) as f64 * coef(t as usize)
        };
        for j in 0..STEP {
            if topics[4 * i + j] == o {
                j_o = 4 * i + j;
            }
        }
        let (a, b, c, d) = (term(0), term(1), term(2), term(3));
        let ab = a + b;
        for (p, x) in p.iter_mut().zip([a, ab, (b + c) + a, (c + d) + ab]) {
            *p = x + carry;
        }
        carry = p[3];
    }
    (carry, j_o)
}

/// [`row_prefix`] with AVX2: four coefficients gathered per instruction and scanned in two
/// shift-and-add steps, so the only serial chain is one add per four terms. The caller checks
/// that the CPU has AVX2; every topic must be below `coef.len()` (the gather is unchecked),
/// which holds because assignments are validated against K when they are made or loaded and
/// padding is K, and the row's length must be a multiple of four.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn row_prefix_avx2(
    prefix: &mut [f64],
    topics: &[u16],
    counts: &[u32],
    coef: &[f64],
    o: u16,
) -> (f64, usize) {
    use std::arch::x86_64::*;
    let n = topics.len();
    debug_assert!(counts.len() == n && prefix.len() == n && n.is_multiple_of(STEP));
    debug_assert!(topics.iter().all(|&k| (k as usize) < coef.len()));
    let zero = _mm256_setzero_pd();
    let ov = _mm_set1_epi32(i32::from(o));
    let mut carry = zero;
    let mut j_o = 0usize;
    let mut i = 0;
    while i < n {
        let t = _mm_loadl_epi64(topics.as_ptr().add(i) as *const __m128i);
        let idx = _mm_cvtepu16_epi32(t);
        let cv = _mm256_i32gather_pd::<8>(coef.as_ptr(), idx);
        // All ones (−1) where the topic is o: the count less one there.
        let is_o = _mm_cmpeq_epi32(idx, ov);
        let c = _mm_add_epi32(
            _mm_loadu_si128(counts.as_ptr().add(i) as *const __m128i),
            is_o,
        );
        let m = _mm_movemask_ps(_mm_castsi128_ps(is_o)) as u32;
        j_o = if m != 0 {
            i + m.trailing_zeros() as usize
        } else {
            j_o
        };
        let x = _mm256_mul_pd(_mm256_cvtepi32_pd(c), cv); // [a, b, c, d]
                                                          // [0, a, b, c], then [a, a+b, b+c, c+d]
        let x1 = _mm256_blend_pd::<0b0001>(_mm256_permute4x64_pd::<0b10_01_00_00>(x), zero);
        let y = _mm256_add_pd(x, x1);
        // [0, 0, a, a+b], then [a, a+b, (b+c)+a, (c+d)+(a+b)]
        let y2 = _mm256_permute2f128_pd::<0x08>(y, y);
        let scan = _mm256_add_pd(y, y2);
        let sums = _mm256_add_pd(scan, carry);
        _mm256_storeu_pd(prefix.as_mut_ptr().add(i), sums);
        carry = _mm256_permute4x64_pd::<0b11_11_11_11>(sums);
        i += STEP;
    }
    (_mm256_cvtsd_f64(carry), j_o)
}

/// The index drawn by `x` in [0, total) from running sums: the number of sums at or below `x`
/// (the last index if rounding leaves `x` at or beyond the total). Counting, rather than
/// searching, gives the same answer even where rounding makes two neighbouring sums step down
/// by an ulp, and has no branch that depends on the draw. Padding repeats the total, so for
/// `x` below the total it is never drawn.
#[inline(always)]
fn pick_prefix(prefix: &[f64], x: f64) -> usize {
    let below = prefix.iter().filter(|&&p| p <= x).count();
    below.min(prefix.len() - 1)
}

/// [`pick_prefix`] four sums per comparison, for a length that is a multiple of four. The caller
/// checks that the CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn pick_prefix_avx2(prefix: &[f64], x: f64) -> usize {
    use std::arch::x86_64::*;
    let n = prefix.len();
    debug_assert!(n.is_multiple_of(STEP));
    let xv = _mm256_set1_pd(x);
    let mut below = 0u32;
    let mut i = 0;
    while i < n {
        let p = _mm256_loadu_pd(prefix.as_ptr().add(i));
        below += (_mm256_movemask_pd(_mm256_cmp_pd::<_CMP_LE_OQ>(p, xv)) as u32).count_ones();
        i += STEP;
    }
    (below as usize).min(n - 1)
}

/// CGS's CPU implementation for the registry.
pub struct CgsCpu;

struct CgsSweep<'a> {
    shared: Shared<'a>,
    topics: usize,
    seed: u64,
    iteration: u32,
}

impl crate::sampler::CpuSampler for CgsCpu {
    fn needs_doc_topics(&self) -> bool {
        false
    }
    fn prepare<'a>(
        &self,
        input: crate::sampler::SweepInput<'a>,
    ) -> Box<dyn crate::sampler::PartitionSweep + 'a> {
        Box::new(CgsSweep {
            shared: Shared {
                word_topics: input.word_topics,
                doc_starts: input.docs.offsets(),
                tokens: input.docs.tokens(),
                alpha: input.alpha.values(),
                beta: input.beta,
            },
            topics: input.word_topics.num_topics as usize,
            seed: input.seed,
            iteration: input.iteration,
        })
    }
}

impl crate::sampler::PartitionSweep for CgsSweep<'_> {
    fn sweep(&self, partition: &Partition, z: &mut [u16]) {
        let mut scratch = Scratch::new(self.topics);
        sweep_partition(
            partition,
            z,
            &self.shared,
            &mut scratch,
            self.seed,
            self.iteration,
        );
    }
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
    fn row_prefix_leaves_out_one_count_and_picks() {
        let q = [0.5, 2.0, 1.0, 4.0, 0.25, 0.0];
        // Five entries and three of padding (topic K = 5); the token's topic is 1.
        let topics = [4u16, 0, 3, 1, 2, 5, 5, 5];
        let counts = [4u32, 2, 1, 2, 3, 0, 0, 0];
        let mut prefix = [0.0; 8];
        let (total, j_o) = row_prefix(&mut prefix, &topics, &counts, |k| q[k], 1);
        // Terms 1, 1, 4, 2 (one count of topic 1 left out), 3, then padding.
        assert_eq!(prefix, [1.0, 2.0, 6.0, 8.0, 11.0, 11.0, 11.0, 11.0]);
        assert_eq!((total, j_o), (11.0, 3));
        assert_eq!(pick_prefix(&prefix, 0.0), 0);
        assert_eq!(pick_prefix(&prefix, 1.0), 1);
        assert_eq!(pick_prefix(&prefix, 1.5), 1);
        assert_eq!(pick_prefix(&prefix, 5.99), 2);
        assert_eq!(pick_prefix(&prefix, 10.99), 4);
        assert_eq!(pick_prefix(&prefix, 11.5), 7);
    }

    /// The AVX2 paths add and count exactly as the portable ones, so models do not depend on the
    /// CPU's features.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_prefix_and_pick_are_bit_identical_to_the_portable_ones() {
        if !std::is_x86_feature_detected!("avx2") {
            return;
        }
        let mut rng = topos_sampling::CounterRng::new(3, Stream::Synthetic, 0, 0);
        let mut q: Vec<f64> = (0..1000).map(|_| rng.next_f64() * 1e-3).collect();
        q.push(0.0);
        for n in (4..44).step_by(4) {
            // Distinct topics, as in a row; K = 1000 is padding.
            let start = rng.below(1001) as usize;
            let topics: Vec<u16> = (0..n).map(|i| ((start + 37 * i) % 1001) as u16).collect();
            let counts: Vec<u32> = (0..n).map(|_| 1 + rng.below(500)).collect();
            let o = topics[rng.below(n as u32) as usize];
            let (mut a, mut b) = (vec![0.0; n], vec![0.0; n]);
            let sa = row_prefix(&mut a, &topics, &counts, |k| q[k], o);
            // SAFETY: AVX2 detected above; topics are below q.len().
            let sb = unsafe { row_prefix_avx2(&mut b, &topics, &counts, &q, o) };
            assert_eq!((sa.0.to_bits(), sa.1), (sb.0.to_bits(), sb.1));
            assert_eq!(topics[sa.1], o);
            assert_eq!(a, b);
            for _ in 0..50 {
                let x = rng.next_f64() * sa.0 * 1.01;
                // SAFETY: AVX2 detected above.
                assert_eq!(pick_prefix(&a, x), unsafe { pick_prefix_avx2(&a, x) });
            }
        }
    }
}
