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
//! Unlike ESCA, the counts change after every token, so the trees are *updatable* sum trees
//! (F+ trees, Yu et al. 2015): after a token moves from topic k_old to k_new only the weights at
//! those two topics change, each an O(log K) update.
//!
//! Tokens are visited in PDOW order (by word within a partition): all changes while a word is being
//! processed are to that word's row, so one dense scratch row for B_v, one tree for its word part
//! and one tree for the smoothing part (over all K) are enough, and exact. Words with few tokens in
//! the partition skip the O(K) word tree and scan the row's non-zeros instead.
//!
//! **Parallelism (AD-LDA, Newman et al. 2009).** Documents are cut into a fixed number of
//! partitions; each runs the exact sampler above against the word-topic counts of the start of
//! the iteration plus its own changes, and the counts are merged (rebuilt from all assignments)
//! at the end of every iteration. The partition count is a function of the corpus (or
//! `--partitions`), never of the thread count, so the result is the same for any number of threads.

use crate::counts::WordTopics;
use crate::layout::Partition;
use topos_sampling::{discrete::search_prefix_f64, CounterRng, Philox4x32, Stream, SumTree};

/// Sparse, updatable document-topic rows of one partition: row `d` has capacity min(|d|, K).
struct DocRows {
    start: Vec<u32>,
    len: Vec<u32>,
    topic: Vec<u16>,
    count: Vec<u32>,
}

impl DocRows {
    fn build(p: &Partition, doc_starts: &[u64], z_part: &[u16], k: usize) -> Self {
        let n = p.docs.len();
        let mut start = Vec::with_capacity(n + 1);
        let mut len = vec![0u32; n];
        let mut acc = 0u32;
        for d in 0..n {
            start.push(acc);
            let dl = (doc_starts[p.docs.start + d + 1] - doc_starts[p.docs.start + d]) as usize;
            acc += dl.min(k) as u32;
        }
        start.push(acc);
        let mut rows = Self {
            start,
            len: Vec::new(),
            topic: vec![0; acc as usize],
            count: vec![0; acc as usize],
        };
        for (d, l) in len.iter_mut().enumerate() {
            let a = (doc_starts[p.docs.start + d] - p.token_start) as usize;
            let b = (doc_starts[p.docs.start + d + 1] - p.token_start) as usize;
            let s = rows.start[d] as usize;
            let mut n_nz = 0usize;
            for &kk in &z_part[a..b] {
                let row = &mut rows.topic[s..s + n_nz];
                if let Some(i) = row.iter().position(|&t| t == kk) {
                    rows.count[s + i] += 1;
                } else {
                    rows.topic[s + n_nz] = kk;
                    rows.count[s + n_nz] = 1;
                    n_nz += 1;
                }
            }
            *l = n_nz as u32;
        }
        rows.len = len;
        rows
    }

    #[inline]
    fn row(&self, d: usize) -> (&[u16], &[u32]) {
        let s = self.start[d] as usize;
        let e = s + self.len[d] as usize;
        (&self.topic[s..e], &self.count[s..e])
    }

    #[inline]
    fn decrement(&mut self, d: usize, k: u16) {
        let s = self.start[d] as usize;
        let n = self.len[d] as usize;
        let i = s + self.topic[s..s + n]
            .iter()
            .position(|&t| t == k)
            .expect("token's topic missing from its document row");
        self.count[i] -= 1;
        if self.count[i] == 0 {
            let last = s + n - 1;
            self.topic[i] = self.topic[last];
            self.count[i] = self.count[last];
            self.len[d] -= 1;
        }
    }

    #[inline]
    fn increment(&mut self, d: usize, k: u16) {
        let s = self.start[d] as usize;
        let n = self.len[d] as usize;
        if let Some(i) = self.topic[s..s + n].iter().position(|&t| t == k) {
            self.count[s + i] += 1;
        } else {
            debug_assert!(s + n < self.start[d + 1] as usize);
            self.topic[s + n] = k;
            self.count[s + n] = 1;
            self.len[d] += 1;
        }
    }
}

/// Reusable per-partition buffers.
pub struct Scratch {
    word_row: Vec<u32>,
    in_nonzeros: Vec<bool>,
    nonzeros: Vec<u16>,
    word_tree: SumTree,
    weights: Vec<f64>,
    cumulative: Vec<f64>,
}

impl Scratch {
    pub fn new(k: usize) -> Self {
        Self {
            word_row: vec![0; k],
            in_nonzeros: vec![false; k],
            nonzeros: Vec::new(),
            word_tree: SumTree::default(),
            weights: vec![0.0; k],
            cumulative: vec![0.0; k],
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
        SumTree::from_weights(&s.iter().map(|&x| alpha * beta * x).collect::<Vec<_>>());
    let gen = Philox4x32::new(seed);

    for (wi, &w) in p.words.iter().enumerate() {
        let range = p.word_range(wi);
        let (wt, wc) = b.row(w);
        scratch.nonzeros.clear();
        for (&k, &c) in wt.iter().zip(wc) {
            scratch.word_row[k as usize] = c;
            scratch.in_nonzeros[k as usize] = true;
            scratch.nonzeros.push(k);
        }
        // Tree for the word part when its O(K) build pays for itself over the word's tokens.
        let use_tree = (range.len() as f64) * (wt.len() as f64) > 2.0 * k_topics as f64;
        if use_tree {
            for ((wgt, &c), &sk) in scratch.weights.iter_mut().zip(&scratch.word_row).zip(&s) {
                *wgt = alpha * c as f64 * sk;
            }
            scratch.word_tree.rebuild(&scratch.weights[..k_topics]);
        }

        for e in range {
            let src = p.token_src[e] as usize;
            let d = p.token_doc[e] as usize;
            let old = z_part[src];
            let o = old as usize;
            // Remove the token from every count (the ¬ in the conditional).
            docs.decrement(d, old);
            scratch.word_row[o] -= 1;
            nk[o] -= 1;
            s[o] = 1.0 / (nk[o] as f64 + v_beta);
            smoothing.set(o, alpha * beta * s[o]);
            if use_tree {
                scratch
                    .word_tree
                    .set(o, alpha * scratch.word_row[o] as f64 * s[o]);
            }

            // p₁ over the document's non-zeros, into a preallocated prefix-sum buffer.
            let (dt, dc) = docs.row(d);
            let word_row = &scratch.word_row[..];
            let cumulative = &mut scratch.cumulative[..dt.len()];
            let mut p1 = 0.0f64;
            for ((slot, &k), &c) in cumulative.iter_mut().zip(dt).zip(dc) {
                let k = k as usize;
                p1 += c as f64 * (word_row[k] as f64 + beta) * s[k];
                *slot = p1;
            }
            let word_total = if use_tree {
                scratch.word_tree.total()
            } else {
                scratch
                    .nonzeros
                    .iter()
                    .map(|&k| alpha * scratch.word_row[k as usize] as f64 * s[k as usize])
                    .sum()
            };
            let smooth_total = smoothing.total();
            let mut rng = CounterRng::from_generator(
                gen,
                Stream::Train,
                iteration,
                p.token_start + src as u64,
            );
            let x = rng.next_f64() * (p1 + word_total + smooth_total);
            let new = if x < p1 {
                dt[search_prefix_f64(&scratch.cumulative[..dt.len()], x)]
            } else if x - p1 < word_total {
                let y = x - p1;
                if use_tree {
                    scratch.word_tree.sample((y / word_total).min(1.0 - 1e-16)) as u16
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
                smoothing.sample(((x - p1 - word_total) / smooth_total).min(1.0 - 1e-16)) as u16
            };

            // Add the token back under its new topic.
            let n = new as usize;
            docs.increment(d, new);
            if scratch.word_row[n] == 0 && !scratch.in_nonzeros[n] {
                scratch.in_nonzeros[n] = true;
                scratch.nonzeros.push(new);
            }
            scratch.word_row[n] += 1;
            nk[n] += 1;
            s[n] = 1.0 / (nk[n] as f64 + v_beta);
            smoothing.set(n, alpha * beta * s[n]);
            if use_tree {
                scratch
                    .word_tree
                    .set(n, alpha * scratch.word_row[n] as f64 * s[n]);
            }
            z_part[src] = new;
        }
        for &k in &scratch.nonzeros {
            scratch.word_row[k as usize] = 0;
            scratch.in_nonzeros[k as usize] = false;
        }
    }
}
