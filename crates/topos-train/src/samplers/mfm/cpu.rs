//! Mean-for-Mode estimation on the CPU (Tristan et al., Fig. 2, Alg. 1 and 3): an engine of its
//! own, because its state is not the assignments.
//!
//! **State between iterations:** each document's non-zero topic counts (tpd) and each word's
//! (wpt), as counters of the run's width ([`CounterWidth`]), and the topic totals n_k. No
//! token's topic is kept: that is the 2 bytes a token the other samplers' state costs.
//!
//! **An iteration** (Fig. 2): every token draws z from the point estimates of the last
//! iteration's counts, θ_m = E[θ_m | z] ∝ tpd[m] + α and φ_k = E[φ_k | z] = (wpt[k] + β) /
//! (wt[k] + Vβ), so
//!
//! ```text
//! p(z = k) ∝ (tpd[m][k] + α_k) · (wpt[k][v] + β) / (wt[k] + Vβ)
//! ```
//!
//! (the token's own earlier draw is part of the counts: there is no assignment to remove; by
//! default the draw is collapsed Gibbs's conditional in expectation over where that earlier draw
//! was, its posterior balanced over the document's tokens, [`super::OwnDraw`]). New
//! counts start from zero and are only incremented (§4.1): the document's row in a per-thread
//! scratch, the word's in one dense array of atomic 32-bit counts, whose sums do not depend on
//! the order of the increments. The commit rounds them to counters ([`CounterWidth::round`],
//! keyed by seed, iteration and cell), so the same seed gives the same model for any number of
//! threads and partitions.
//!
//! **The draw** is §5's, with two forms of one distribution: while the counts are dense, the
//! O(K) sum of Alg. 1; once they are sparse, the three buckets
//!
//! ```text
//! S = Σ_k α_k β / (wt[k] + Vβ)       R_m = Σ_k tpd[m][k] β / (wt[k] + Vβ)
//! Q_mv = Σ_k (tpd[m][k] + α_k) · wpt[k][v] / (wt[k] + Vβ)
//! ```
//!
//! (S for every token, R_m over the document's non-zeros, Q_mv over the word's). Alg. 3 switches
//! after a fixed D iterations; here the commit measures the mean work a token would do in the
//! buckets (its word's non-zeros, and its share of its document's) and switches when that falls
//! below K / [`SPARSE_WORK_FACTOR`] (on 20 Newsgroups at K = 100, from the first iteration on).
//! In the sparse form each token takes §5's split or the document-side one
//! ([`Frozen::draw_doc_side`]), whichever visits fewer entries. Every form draws from the same
//! distribution, and each choice depends on the counts only, so the model stays a function of
//! the seed.

use super::counters::{CounterScale, CounterWidth, Registers};
use super::OwnDraw;
use crate::counts::WordTopics;
use crate::engine::{Engine, EngineSetup, TrainDocs};
use crate::fixed_sum::FixedSum;
use crate::transport::Transport;
use crate::TrainError;
use rayon::prelude::*;
use std::ops::Range;
use std::sync::atomic::{AtomicU32, Ordering};
use topos_model::{DocTopics, Hyperparameters};
use topos_sampling::{CounterRng, Stream};

/// A bucket entry costs about this many dense terms (an indirect load of the document's count
/// against a multiply-add in a contiguous loop): the buckets are used once the mean number of
/// entries a token visits is below K / this. Measured on 20 Newsgroups, one thread, in the
/// first two iterations (the densest counts): dense 8.0M tokens/s against 6.6M for the buckets
/// at K = 20, a tie at K = 100; after 20 iterations the buckets win at K = 100 (5.6M against
/// 5.1M, two threads) and at K = 1,000 (2.8M against 1.1M). Commands: BENCHMARKS.md,
/// "Mean-for-Mode (`mfm`) on the CPU" (`TOPOS_MFM_DRAW=dense|buckets` forces a form).
pub const SPARSE_WORK_FACTOR: f64 = 1.25;

/// Counter keys of documents' cells are set apart from words' by this bit.
const DOC_CELL: u64 = 1 << 63;

/// Rows of counters: row `i` is `offsets[i]..offsets[i + 1]` of `topics` and `registers`,
/// topics ascending.
#[derive(Clone, Debug)]
struct CounterRows {
    offsets: Vec<u64>,
    topics: Vec<u16>,
    registers: Registers,
}

impl CounterRows {
    fn new(scale: &CounterScale) -> Self {
        CounterRows {
            offsets: vec![0],
            topics: Vec::new(),
            registers: Registers::new(scale.clone()),
        }
    }
    fn row(&self, i: usize) -> Range<usize> {
        self.offsets[i] as usize..self.offsets[i + 1] as usize
    }
    fn nonzeros(&self) -> usize {
        self.topics.len()
    }
    /// Topic `t`'s entry in the entries `row` (a row, or part of one): its place within `row`
    /// and its estimated count, if the row holds it.
    #[inline]
    fn find(&self, row: Range<usize>, t: u16) -> Option<(usize, f64)> {
        self.topics[row.clone()]
            .binary_search(&t)
            .ok()
            .map(|j| (j, self.registers.estimate(row.start + j) as f64))
    }
    /// Appends `other`'s rows.
    fn append(&mut self, other: &CounterRows) {
        let base = *self.offsets.last().expect("offsets start at 0");
        self.offsets
            .extend(other.offsets[1..].iter().map(|o| o + base));
        self.topics.extend_from_slice(&other.topics);
        self.registers.extend(&other.registers);
    }
    /// Closes the row being pushed.
    fn end_row(&mut self) {
        self.offsets.push(self.topics.len() as u64);
    }
}

/// The documents' rows, in the pieces the sweep's document ranges wrote (no copy into one).
struct DocRows {
    parts: Vec<CounterRows>,
    /// The first document of each piece.
    starts: Vec<usize>,
}

impl DocRows {
    /// The piece holding document `d`, and `d`'s row in it.
    fn locate(&self, d: usize) -> (&CounterRows, usize) {
        let p = self.starts.partition_point(|&s| s <= d) - 1;
        (&self.parts[p], d - self.starts[p])
    }
    fn nonzeros(&self) -> usize {
        self.parts.iter().map(CounterRows::nonzeros).sum()
    }
}

/// The counts of one committed iteration.
struct Counts {
    docs: DocRows,
    words: CounterRows,
    /// n_k: the sum of the words' estimates, exact (levels are integers).
    totals: Vec<u64>,
    /// Whether the next sweep draws from the buckets (else the dense sum).
    sparse: bool,
}

/// The CPU engine of `mfm`.
pub struct MfmEngine {
    docs: TrainDocs,
    num_words: usize,
    hyper: Hyperparameters,
    seed: u64,
    /// The counters' width and levels.
    scale: CounterScale,
    /// What the draw does with the token's own earlier draw.
    own: OwnDraw,
    pool: rayon::ThreadPool,
    /// Document ranges sampled in parallel (the model does not depend on them).
    ranges: Vec<Range<usize>>,
    /// Tokens of each word in the corpus (what the choice of draw weighs words' rows by).
    word_tokens: Vec<u64>,
    iteration: u32,
    counts: Counts,
    /// The words' new counts while a sweep runs, V × K, zero between iterations.
    word_scratch: Vec<AtomicU32>,
    /// The documents' new rows of a sweep not yet committed.
    sampled: Option<DocRows>,
    /// The run's workers: with several, this engine holds a contiguous share of the documents
    /// ([`crate::shard::Shard`]), keys its tokens and cells by their global indices, and sums
    /// the words' exact new counts with the others before rounding them, so every worker rounds
    /// the same sums to the same registers: the model of one worker, for any number.
    transport: std::sync::Arc<dyn Transport>,
    /// The first global token and document of this worker's share.
    token_base: u64,
    doc_base: u64,
    /// Training tokens of the whole run.
    global_tokens: u64,
}

/// Opens the engine for a run ([`crate::sampler::CpuImplementation::Engine`]).
pub fn open(setup: EngineSetup) -> Result<Box<dyn Engine>, TrainError> {
    Ok(Box::new(MfmEngine::open(setup)?))
}

impl MfmEngine {
    /// A fresh run: every token's topic uniform at random, keyed by (seed, token) as on every
    /// device, counted and forgotten.
    pub fn open(setup: EngineSetup) -> Result<Self, TrainError> {
        let share = super::WorkerShare::open(&setup, true)?;
        let transport = setup.transport.clone();
        let (token_base, doc_base, global_tokens) =
            (share.token_base, share.doc_base, share.global_tokens);
        let docs = share.docs;
        let view = docs.view();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(setup.threads)
            .build()
            .map_err(|e| TrainError::ThreadPool(setup.threads, e.to_string()))?;
        let threads = pool.current_num_threads();
        let parts = setup
            .partitions
            .unwrap_or_else(|| setup.sampler.default_partitions(view.num_tokens(), threads));
        let ranges = crate::layout::balanced_ranges(view, parts.clamp(1, view.len().max(1)));
        let k = setup.hyper.num_topics as usize;
        let cells = setup.num_words.checked_mul(k).ok_or_else(|| {
            TrainError::Unsupported("V × K does not fit this machine's addresses".into())
        })?;
        let word_scratch: Vec<AtomicU32> = pool.install(|| {
            (0..cells)
                .into_par_iter()
                .map(|_| AtomicU32::new(0))
                .collect()
        });
        let mut engine = MfmEngine {
            scale: share.scale.clone(),
            own: super::own_draw(&setup.settings),
            docs,
            num_words: setup.num_words,
            hyper: setup.hyper,
            seed: setup.seed,
            pool,
            ranges,
            // Every worker weighs the draw's forms by the whole corpus's tokens of each word.
            word_tokens: share.word_tokens,
            iteration: 0,
            counts: Counts {
                docs: DocRows {
                    parts: Vec::new(),
                    starts: Vec::new(),
                },
                words: CounterRows::new(&CounterScale::new(CounterWidth::Exact, 0)),
                totals: Vec::new(),
                sparse: false,
            },
            word_scratch,
            sampled: None,
            transport,
            token_base,
            doc_base,
            global_tokens,
        };
        // The start's counters are rounded with iteration 0's keys, each sweep's with its own.
        let docs = engine.pool.install(|| engine.sweep(Draw::Initial, 0));
        engine.sum_word_counts()?;
        engine.counts = engine.commit_counts(docs, 0)?;
        Ok(engine)
    }

    /// Draws every token (the first iteration's uniform start, or the sweep of Fig. 2) in
    /// parallel over the document ranges; returns the documents' new rows, rounded, and leaves
    /// the words' new counts in the scratch.
    fn sweep(&self, draw: Draw, iteration: u32) -> DocRows {
        let k = self.hyper.num_topics as usize;
        let frozen = match draw {
            Draw::Initial => None,
            Draw::FromCounts => Some(Frozen::of(self, self.counts.sparse)),
        };
        let parts: Vec<CounterRows> = self
            .ranges
            .par_iter()
            .map(|r| {
                let mut scratch = Scratch::new(k);
                let mut out = CounterRows::new(&self.scale);
                for d in r.clone() {
                    self.sweep_doc(d, frozen.as_ref(), iteration, &mut scratch, &mut out);
                }
                out
            })
            .collect();
        DocRows {
            parts,
            starts: self.ranges.iter().map(|r| r.start).collect(),
        }
    }

    /// Draws the tokens of document `d` and pushes its new row to `out`.
    fn sweep_doc(
        &self,
        d: usize,
        frozen: Option<&Frozen>,
        iteration: u32,
        s: &mut Scratch,
        out: &mut CounterRows,
    ) {
        let view = self.docs.view();
        let k = self.hyper.num_topics as usize;
        let first = self.token_base + view.offsets()[d];
        let words = view.doc(d);
        match frozen {
            None => {
                for (j, &v) in words.iter().enumerate() {
                    let t = CounterRng::new(self.seed, Stream::Init, 0, first + j as u64)
                        .below(k as u32) as usize;
                    self.count(v, t, s);
                }
            }
            Some(f) => {
                // The document's estimates, and its bucket R_m.
                let (rows, local) = self.counts.docs.locate(d);
                s.doc_topics.clear();
                s.r_cum.clear();
                let mut r = 0.0;
                s.r2 = 0.0;
                for i in rows.row(local) {
                    let t = rows.topics[i] as usize;
                    let a = rows.registers.estimate(i) as f64;
                    s.doc[t] = a;
                    s.doc_topics.push(t as u16);
                    r += a * self.hyper.beta * f.inv[t];
                    s.r_cum.push(r);
                    if f.own == OwnDraw::Document {
                        s.r2 += a * f.inv[t] * f.inv[t];
                    }
                    if f.own.out_of_word() {
                        s.pull[t] = a;
                    }
                }
                if f.own == OwnDraw::Balanced {
                    f.balance(self, words, s);
                }
                for (j, &v) in words.iter().enumerate() {
                    let u = CounterRng::new(self.seed, Stream::Train, iteration, first + j as u64)
                        .next_f64();
                    let t = if self.counts.sparse {
                        f.draw_sparse(self, v, u, r, s)
                    } else {
                        f.draw_dense(self, v, u, s)
                    };
                    self.count(v, t, s);
                }
                for &t in &s.doc_topics {
                    s.doc[t as usize] = 0.0;
                }
                if f.own.out_of_word() {
                    for &t in &s.doc_topics {
                        s.pull[t as usize] = 0.0;
                    }
                }
            }
        }
        // The new row, rounded to counters keyed by (document, topic).
        s.touched.sort_unstable();
        for &t in &s.touched {
            let n = std::mem::take(&mut s.new_doc[t as usize]);
            let cell = DOC_CELL | ((self.doc_base + d as u64) * k as u64 + u64::from(t));
            out.topics.push(t);
            out.registers.push(
                self.scale
                    .round(u64::from(n), self.rounding(iteration, cell)),
            );
        }
        s.touched.clear();
        out.end_row();
    }

    /// Counts a token of word `v` drawn to topic `t` (its document's row is the scratch's).
    #[inline]
    fn count(&self, v: u32, t: usize, s: &mut Scratch) {
        let k = self.hyper.num_topics as usize;
        if s.new_doc[t] == 0 {
            s.touched.push(t as u16);
        }
        s.new_doc[t] += 1;
        self.word_scratch[v as usize * k + t].fetch_add(1, Ordering::Relaxed);
    }

    /// The uniform number that rounds counter `cell` at `iteration` (none needed when exact).
    #[inline]
    fn rounding(&self, iteration: u32, cell: u64) -> f64 {
        match self.scale.width() {
            CounterWidth::Exact => 0.0,
            _ => CounterRng::new(self.seed, Stream::Counters, iteration, cell).next_f64(),
        }
    }

    /// Sums the words' exact new counts of every worker (nothing to do with one).
    fn sum_word_counts(&mut self) -> Result<(), TrainError> {
        if self.transport.workers() == 1 {
            return Ok(());
        }
        // SAFETY: AtomicU32 has the size and alignment of u32, and `&mut self` excludes every
        // other access to the scratch while it is summed.
        let plain: &mut [u32] = unsafe {
            std::slice::from_raw_parts_mut(
                self.word_scratch.as_mut_ptr().cast::<u32>(),
                self.word_scratch.len(),
            )
        };
        self.transport.sum_u32(plain)?;
        Ok(())
    }

    /// The M-step: the words' new counts (clearing the scratch) and the documents' rows become
    /// the counts, with their totals and the choice of the next draw.
    fn commit_counts(&self, docs: DocRows, iteration: u32) -> Result<Counts, TrainError> {
        let k = self.hyper.num_topics as usize;
        let v = self.num_words;
        let chunk = 1024usize;
        let pieces: Vec<(CounterRows, Vec<u64>)> = self.pool.install(|| {
            (0..v.div_ceil(chunk))
                .into_par_iter()
                .map(|c| {
                    let mut rows = CounterRows::new(&self.scale);
                    let mut totals = vec![0u64; k];
                    for w in c * chunk..((c + 1) * chunk).min(v) {
                        // A word's new counts sum to its tokens: stop once they are all found.
                        let mut left = self.word_tokens[w];
                        let cells = &self.word_scratch[w * k..(w + 1) * k];
                        for (t, cell) in cells.iter().enumerate() {
                            if left == 0 {
                                break;
                            }
                            // A plain load (no locked swap): the sweep is over.
                            let n = cell.load(Ordering::Relaxed);
                            if n > 0 {
                                cell.store(0, Ordering::Relaxed);
                                left -= u64::from(n);
                                let key = w as u64 * k as u64 + t as u64;
                                let reg = self
                                    .scale
                                    .round(u64::from(n), self.rounding(iteration, key));
                                rows.topics.push(t as u16);
                                rows.registers.push(reg);
                                totals[t] += self.scale.estimate(reg);
                            }
                        }
                        rows.end_row();
                    }
                    (rows, totals)
                })
                .collect()
        });
        let mut words = CounterRows::new(&self.scale);
        let mut totals = vec![0u64; k];
        for (rows, t) in &pieces {
            words.append(rows);
            for (a, b) in totals.iter_mut().zip(t) {
                *a += b;
            }
        }
        // The work a token does in the buckets: its word's non-zeros (Q_mv), and its share of
        // its document's (R_m, summed once a document).
        let word_work: u64 = (0..v)
            .map(|w| self.word_tokens[w] * (words.offsets[w + 1] - words.offsets[w]))
            .sum();
        // The same choice on every worker: the whole corpus's documents' non-zeros.
        let mut doc_work = [docs.nonzeros() as u64];
        self.transport.sum_u64(&mut doc_work)?;
        let mean = (word_work + doc_work[0]) as f64 / self.global_tokens.max(1) as f64;
        let sparse = match std::env::var("TOPOS_MFM_DRAW").as_deref() {
            // For benchmarks of the rule.
            Ok("dense") => false,
            Ok("buckets") => true,
            _ => mean * SPARSE_WORK_FACTOR < k as f64,
        };
        Ok(Counts {
            docs,
            words,
            totals,
            sparse,
        })
    }
}

/// What a sweep draws from.
#[derive(Clone, Copy)]
enum Draw {
    /// The uniform start.
    Initial,
    /// The last iteration's counts.
    FromCounts,
}

/// What every token of a sweep reads, derived from the committed counts.
struct Frozen {
    /// 1 / (wt[k] + Vβ).
    inv: Vec<f64>,
    /// α_k.
    alpha: Vec<f64>,
    /// Prefix sums of α_k β / (wt[k] + Vβ): the bucket S is the last.
    s_cum: Vec<f64>,
    /// Prefix sums, within each word's row, of α_k wpt[k][v] / (wt[k] + Vβ): the bucket P_v of
    /// the document-side split is the last of the row's.
    word_prior_cum: Vec<f64>,
    /// 1 / (wt[k] − 1 + Vβ), the normalizer without the token ([`OwnDraw::out_of_word`] only;
    /// zero for an empty topic, which no token's earlier draw can be in).
    inv_less: Vec<f64>,
    /// What the draw does with the token's own earlier draw.
    own: OwnDraw,
}

impl Frozen {
    /// What a sweep reads; `buckets`: it draws from the sparse forms (else the dense sum).
    fn of(e: &MfmEngine, buckets: bool) -> Frozen {
        let beta = e.hyper.beta;
        let vb = e.num_words as f64 * beta;
        let inv: Vec<f64> = e
            .counts
            .totals
            .iter()
            .map(|&n| 1.0 / (n as f64 + vb))
            .collect();
        let alpha = e.hyper.alpha.values().to_vec();
        let mut s = 0.0;
        let s_cum = inv
            .iter()
            .zip(&alpha)
            .map(|(&i, &a)| {
                s += a * beta * i;
                s
            })
            .collect();
        let w = &e.counts.words;
        // α_k wpt[k][v] / (wt[k] + Vβ) of non-zero i, computed where it is summed (no array
        // of it: 8 bytes a non-zero of the words' rows is what this sweep adds).
        let prior = |i: usize| {
            let t = w.topics[i] as usize;
            alpha[t] * (w.registers.estimate(i) as f64 * inv[t])
        };
        // Only the document-side split reads them, and only the buckets take it.
        let word_prior_cum = if buckets {
            row_prefix_sums(&w.offsets, w.nonzeros(), prior, 1 << 16)
        } else {
            Vec::new()
        };
        let inv_less = if e.own.out_of_word() {
            e.counts
                .totals
                .iter()
                .map(|&n| {
                    if n > 0 {
                        1.0 / (n as f64 - 1.0 + vb)
                    } else {
                        0.0
                    }
                })
                .collect()
        } else {
            Vec::new()
        };
        Frozen {
            inv,
            alpha,
            s_cum,
            word_prior_cum,
            inv_less,
            own: e.own,
        }
    }

    /// The weight [`OwnDraw::Removed`] gives topic `t` of a document count `a` and a word count
    /// `b`, π its posterior share of the earlier draw: (1 − π) w(with) + π w(without).
    #[inline]
    fn removed_weight(&self, t: usize, a: f64, b: f64, pi: f64, beta: f64) -> f64 {
        let with = (a + self.alpha[t]) * (b + beta) * self.inv[t];
        if pi > 0.0 {
            let without = (a - 1.0 + self.alpha[t]) * (b - 1.0 + beta) * self.inv_less[t];
            ((1.0 - pi) * with + pi * without).max(0.0)
        } else {
            with
        }
    }

    /// Alg. 1: the O(K) sum over every topic.
    fn draw_dense(&self, e: &MfmEngine, v: u32, u: f64, s: &mut Scratch) -> usize {
        let w = &e.counts.words;
        let beta = e.hyper.beta;
        let row = w.row(v as usize);
        for i in row.clone() {
            s.word[w.topics[i] as usize] = w.registers.estimate(i) as f64;
        }
        let mut total = 0.0;
        if self.own.out_of_word() {
            // The expectation over the earlier draw ([`OwnDraw`]): D'_mv first, over the
            // document's non-zeros (π's document factor is the count, or its balanced scaling).
            let dp: f64 = s
                .doc_topics
                .iter()
                .map(|&t| {
                    let t = t as usize;
                    s.pull[t] * s.word[t] * self.inv[t]
                })
                .sum();
            let own = if dp > 0.0 { 1.0 / dp } else { 0.0 };
            for (t, c) in s.cum.iter_mut().enumerate() {
                let (a, b) = (s.doc[t], s.word[t]);
                let pi = s.pull[t] * b * self.inv[t] * own;
                total += self.removed_weight(t, a, b, pi, beta);
                *c = total;
            }
        } else if self.own == OwnDraw::Document {
            // (A_dk − π_k + α_k) φ_kv with π_k = A_dk φ_kv / D_mv ([`OwnDraw`]): D_mv first, over
            // the document's non-zeros.
            let dm: f64 = s
                .doc_topics
                .iter()
                .map(|&t| {
                    let t = t as usize;
                    s.doc[t] * ((s.word[t] + beta) * self.inv[t])
                })
                .sum();
            let own = if dm > 0.0 { 1.0 / dm } else { 0.0 };
            for (t, c) in s.cum.iter_mut().enumerate() {
                let phi = (s.word[t] + beta) * self.inv[t];
                let a = (s.doc[t] * (1.0 - phi * own)).max(0.0);
                total += (a + self.alpha[t]) * phi;
                *c = total;
            }
        } else {
            for (t, c) in s.cum.iter_mut().enumerate() {
                total += (s.doc[t] + self.alpha[t]) * (s.word[t] + beta) * self.inv[t];
                *c = total;
            }
        }
        for i in row {
            s.word[w.topics[i] as usize] = 0.0;
        }
        let x = u * total;
        s.cum.partition_point(|&c| c <= x).min(s.cum.len() - 1)
    }

    /// The cheaper of the two sparse splits for this token: §5's, whose work is the word's
    /// non-zeros, or the document-side split, whose work is the document's non-zeros times a
    /// binary search in the word's row (short documents at large K).
    fn draw_sparse(&self, e: &MfmEngine, v: u32, u: f64, r: f64, s: &mut Scratch) -> usize {
        let nnz_v = e.counts.words.row(v as usize).len();
        let lookups = s.doc_topics.len() * (usize::BITS - nnz_v.leading_zeros()) as usize;
        if lookups + s.doc_topics.len() < nnz_v {
            self.draw_doc_side(e, v, u, s)
        } else {
            self.draw_word_side(e, v, u, r, s)
        }
    }

    /// The document-side split of the same mass (as SaberLDA splits ESCA's, §2.3):
    ///
    /// ```text
    /// (tpd[m][k] + α_k)(wpt[k][v] + β)/(wt[k] + Vβ)
    ///   = tpd[m][k] (wpt[k][v] + β)/(wt[k] + Vβ)    D_mv, over the document's non-zeros
    ///   + α_k wpt[k][v]/(wt[k] + Vβ)                 P_v, over the word's, summed once a sweep
    ///   + α_k β/(wt[k] + Vβ)                         S
    /// ```
    ///
    /// With the own draw out of the document's count ([`OwnDraw::Document`]), D_mv's terms
    /// A_dk φ_kv become A_dk φ_kv (1 − φ_kv / D_mv): the terms first, then their corrected prefix
    /// sums. With it removed ([`OwnDraw::Removed`]), [`Frozen::draw_doc_side_removed`].
    fn draw_doc_side(&self, e: &MfmEngine, v: u32, u: f64, s: &mut Scratch) -> usize {
        if self.own.out_of_word() {
            return self.draw_doc_side_removed(e, v, u, s);
        }
        let w = &e.counts.words;
        let row = w.row(v as usize);
        let topics = &w.topics[row.clone()];
        let beta = e.hyper.beta;
        s.q_cum.clear();
        let mut d = 0.0;
        if self.own == OwnDraw::Document {
            s.own_terms.clear();
            for &t in &s.doc_topics {
                let b = w.find(row.clone(), t).map_or(0.0, |(_, b)| b);
                let k = t as usize;
                let phi = (b + beta) * self.inv[k];
                let c = s.doc[k] * phi;
                d += c;
                s.q_cum.push(c);
                s.own_terms.push(phi);
            }
            let own = if d > 0.0 { 1.0 / d } else { 0.0 };
            d = 0.0;
            for (c, &phi) in s.q_cum.iter_mut().zip(&s.own_terms) {
                d += (*c * (1.0 - phi * own)).max(0.0);
                *c = d;
            }
        } else {
            for &t in &s.doc_topics {
                let b = w.find(row.clone(), t).map_or(0.0, |(_, b)| b);
                let k = t as usize;
                d += s.doc[k] * (b + beta) * self.inv[k];
                s.q_cum.push(d);
            }
        }
        let prior = if row.is_empty() {
            0.0
        } else {
            self.word_prior_cum[row.end - 1]
        };
        let sum_s = *self.s_cum.last().expect("K ≥ 1");
        let x = u * (d + prior + sum_s);
        if x < d {
            let j = s.q_cum.partition_point(|&c| c <= x).min(s.q_cum.len() - 1);
            return s.doc_topics[j] as usize;
        }
        let x = x - d;
        if x < prior {
            let cum = &self.word_prior_cum[row.clone()];
            let j = cum.partition_point(|&c| c <= x).min(cum.len() - 1);
            return topics[j] as usize;
        }
        let x = (x - prior).max(0.0);
        self.draw_smoothing(x)
    }

    /// §5: the buckets Q_mv (the word's non-zeros), R_m (the document's, `r` its mass) and S.
    fn draw_word_side(&self, e: &MfmEngine, v: u32, u: f64, r: f64, s: &mut Scratch) -> usize {
        match self.own {
            OwnDraw::Kept => {}
            OwnDraw::Document => return self.draw_word_side_document(e, v, u, r, s),
            OwnDraw::Removed | OwnDraw::Balanced => {
                return self.draw_word_side_removed(e, v, u, r, s)
            }
        }
        let w = &e.counts.words;
        let row = w.row(v as usize);
        s.q_cum.clear();
        let mut q = 0.0;
        for i in row.clone() {
            let t = w.topics[i] as usize;
            q += (s.doc[t] + self.alpha[t]) * (w.registers.estimate(i) as f64 * self.inv[t]);
            s.q_cum.push(q);
        }
        let sum_s = *self.s_cum.last().expect("K ≥ 1");
        let x = u * (q + r + sum_s);
        if x < q {
            let j = s.q_cum.partition_point(|&c| c <= x).min(s.q_cum.len() - 1);
            return w.topics[row.start + j] as usize;
        }
        let x = x - q;
        if x < r && !s.r_cum.is_empty() {
            let j = s.r_cum.partition_point(|&c| c <= x).min(s.r_cum.len() - 1);
            return s.doc_topics[j] as usize;
        }
        let x = (x - r).max(0.0);
        self.draw_smoothing(x)
    }
}

impl Frozen {
    /// §5's buckets with the own draw out of the document's count ([`OwnDraw::Document`]): with
    /// A'_dk = A_dk − π_k,
    ///
    /// ```text
    /// (A'_dk + α_k)(b_k + β) inv_k = (A'_dk + α_k) b_k inv_k    Q'_mv, over the word's non-zeros
    ///                              + A'_dk β inv_k              R'_m, over the document's
    ///                              + α_k β inv_k                S
    /// ```
    ///
    /// (b_k = wpt[k][v], inv_k = 1/(wt[k] + Vβ)). One pass over the word's row gives every mass
    /// without visiting the document's: D_mv = Σ_word A_dk b_k inv_k + R_m; Q'_k = Q_k − e_k/D_mv
    /// with e_k = A_dk (b_k + β) b_k inv_k²; and R'_m = R_m − (β/D_mv)(Σ_word A_dk b_k inv_k² +
    /// β Σ_doc A_dk inv_k²), the last sum once a document ([`Scratch::r2`]). Only a draw that
    /// lands in R'_m (rare: β is small) walks the document's row, looking up b_k.
    fn draw_word_side_document(
        &self,
        e: &MfmEngine,
        v: u32,
        u: f64,
        r: f64,
        s: &mut Scratch,
    ) -> usize {
        let w = &e.counts.words;
        let row = w.row(v as usize);
        let beta = e.hyper.beta;
        s.q_cum.clear();
        s.own_terms.clear();
        // Prefix sums of Q_k and of e_k: Q'_mv's prefix sums are their difference over D_mv, so
        // its draw is a binary search like Q_mv's.
        let (mut q, mut qa, mut corr, mut f) = (0.0, 0.0, 0.0, 0.0);
        for i in row.clone() {
            let t = w.topics[i] as usize;
            let (a, b, inv) = (s.doc[t], w.registers.estimate(i) as f64, self.inv[t]);
            let bi = b * inv;
            let ai = a * bi;
            q += (a + self.alpha[t]) * bi;
            qa += ai;
            corr += ai * (b + beta) * inv;
            f += ai * inv;
            s.q_cum.push(q);
            s.own_terms.push(corr);
        }
        let dm = qa + r;
        let own = if dm > 0.0 { 1.0 / dm } else { 0.0 };
        let q = (q - corr * own).max(0.0);
        let r_own = (r - beta * own * (f + beta * s.r2)).max(0.0);
        let sum_s = *self.s_cum.last().expect("K ≥ 1");
        let x = u * (q + r_own + sum_s);
        if x < q {
            return w.topics[row.start + first_past_corrected(&s.q_cum, &s.own_terms, own, x)]
                as usize;
        }
        let x = x - q;
        if x < r_own && !s.doc_topics.is_empty() {
            return walk_document_row(e, v, s, x, |k, a, b| {
                let pi = a * (b + beta) * self.inv[k] * own;
                (a - pi) * beta * self.inv[k]
            });
        }
        let x = (x - r_own).max(0.0);
        self.draw_smoothing(x)
    }
}

impl Frozen {
    /// §5's buckets for [`OwnDraw::Removed`] (the pieces Q'_k, R'_k, S_k derived there). Only the
    /// topics both rows hold change, and there, with π_k = A b inv / D'_mv,
    ///
    /// ```text
    /// Q'_k = Q_k − π_k G_k,   G_k = (A + α_k) b inv − (A − 1 + α_k)(b − 1) inv⁻
    /// R'_k = R_k − π_k H_k,   H_k = A β inv − (A − 1) β inv⁻ − α_k β (inv⁻ − inv)
    /// ```
    ///
    /// so one pass over the word's row gives D'_mv = Σ A b inv, the prefix sums of Q_k and of
    /// E_k = A b inv G_k (Q'_mv's prefix sums are their difference over D'_mv: a binary search,
    /// as with [`OwnDraw::Document`]) and R'_m = R_m − Σ A b inv H_k / D'_mv. A draw that lands in
    /// R'_m (rare: β is small) walks the document's row, looking up b.
    fn draw_word_side_removed(
        &self,
        e: &MfmEngine,
        v: u32,
        u: f64,
        r: f64,
        s: &mut Scratch,
    ) -> usize {
        let w = &e.counts.words;
        let row = w.row(v as usize);
        let beta = e.hyper.beta;
        s.q_cum.clear();
        s.own_terms.clear();
        let (mut q, mut e_sum, mut dp, mut h) = (0.0, 0.0, 0.0, 0.0);
        for i in row.clone() {
            let t = w.topics[i] as usize;
            let (a, b, inv) = (s.doc[t], w.registers.estimate(i) as f64, self.inv[t]);
            let alpha = self.alpha[t];
            q += (a + alpha) * b * inv;
            if a > 0.0 {
                let (wt, inv1) = (s.pull[t] * b * inv, self.inv_less[t]);
                dp += wt;
                e_sum += wt * ((a + alpha) * b * inv - (a - 1.0 + alpha) * (b - 1.0) * inv1);
                h += wt * (a * beta * inv - (a - 1.0) * beta * inv1 - alpha * beta * (inv1 - inv));
            }
            s.q_cum.push(q);
            s.own_terms.push(e_sum);
        }
        let own = if dp > 0.0 { 1.0 / dp } else { 0.0 };
        let q = (q - e_sum * own).max(0.0);
        let r_own = (r - h * own).max(0.0);
        let sum_s = *self.s_cum.last().expect("K ≥ 1");
        let x = u * (q + r_own + sum_s);
        if x < q {
            return w.topics[row.start + first_past_corrected(&s.q_cum, &s.own_terms, own, x)]
                as usize;
        }
        let x = x - q;
        if x < r_own && !s.doc_topics.is_empty() {
            let pull = &s.pull;
            return walk_document_row(e, v, s, x, |k, a, b| {
                let (inv, pi) = (self.inv[k], pull[k] * b * self.inv[k] * own);
                if pi > 0.0 {
                    let inv1 = self.inv_less[k];
                    (1.0 - pi) * a * beta * inv
                        + pi * ((a - 1.0) * beta * inv1 + self.alpha[k] * beta * (inv1 - inv))
                } else {
                    a * beta * inv
                }
            });
        }
        let x = (x - r_own).max(0.0);
        self.draw_smoothing(x)
    }

    /// The document-side split for [`OwnDraw::Removed`]. P_v's entries, α_k b inv, are summed
    /// once a sweep, so the topics both rows hold take their whole weight but S_k into the
    /// document's bucket,
    ///
    /// ```text
    /// D''_k = w_k − α_k β inv     (≥ 0: both terms of w_k are at least S_k; A β inv where b = 0)
    /// ```
    ///
    /// and the word's bucket draws from P_v without them: its prefix sums with those entries'
    /// masses stepped over (their places in the word's row are found by the lookups D'' makes).
    fn draw_doc_side_removed(&self, e: &MfmEngine, v: u32, u: f64, s: &mut Scratch) -> usize {
        let w = &e.counts.words;
        let row = w.row(v as usize);
        let topics = &w.topics[row.clone()];
        let beta = e.hyper.beta;
        s.q_cum.clear();
        s.own_terms.clear();
        s.skipped.clear();
        let mut dp = 0.0;
        for &t in &s.doc_topics {
            let b = match w.find(row.clone(), t) {
                Some((j, b)) => {
                    s.skipped.push(j);
                    b
                }
                None => 0.0,
            };
            let k = t as usize;
            dp += s.pull[k] * b * self.inv[k];
            s.own_terms.push(b);
        }
        let own = if dp > 0.0 { 1.0 / dp } else { 0.0 };
        let mut d = 0.0;
        for (&t, &b) in s.doc_topics.iter().zip(&s.own_terms) {
            let k = t as usize;
            let a = s.doc[k];
            let weight = self.removed_weight(k, a, b, s.pull[k] * b * self.inv[k] * own, beta);
            d += (weight - self.alpha[k] * beta * self.inv[k]).max(0.0);
            s.q_cum.push(d);
        }
        // P_v without the document's topics: the masses of the skipped entries, from the same
        // prefix sums the walk below reads.
        let cum = &self.word_prior_cum[row.clone()];
        let mass = |j: usize| cum[j] - if j == 0 { 0.0 } else { cum[j - 1] };
        let skipped: f64 = s.skipped.iter().map(|&j| mass(j)).sum();
        let prior = cum.last().map_or(0.0, |&p| (p - skipped).max(0.0));
        let sum_s = *self.s_cum.last().expect("K ≥ 1");
        let x = u * (d + prior + sum_s);
        if x < d {
            let j = s.q_cum.partition_point(|&c| c <= x).min(s.q_cum.len() - 1);
            return s.doc_topics[j] as usize;
        }
        let x = x - d;
        if x < prior {
            // x within P_v without the skipped entries, as a point of P_v: past each skipped
            // entry it reaches, by that entry's mass (the entries are in row order).
            let mut y = x;
            for &j in &s.skipped {
                if y >= cum[j] - mass(j) {
                    y += mass(j);
                } else {
                    break;
                }
            }
            let mut j = cum.partition_point(|&c| c <= y).min(cum.len() - 1);
            // Only rounding can end on a skipped entry: take the kept one before it.
            while j > 0 && s.skipped.contains(&j) {
                j -= 1;
            }
            return topics[j] as usize;
        }
        let x = (x - prior).max(0.0);
        self.draw_smoothing(x)
    }
}

impl Frozen {
    /// [`OwnDraw::Balanced`]: the document's factor c_t of the posterior over its tokens'
    /// earlier draws, left in [`Scratch::pull`].
    ///
    /// The earlier draws of document m's tokens put A_t of them in each topic t, so the matrix
    /// π_jt (token j's earlier draw in t) has row sums 1 and column sums A_t. [`OwnDraw::Removed`]
    /// weighs each token alone, π_jt ∝ A_t w_jt with w_jt = wpt[t][v_j] / (wt[t] + Vβ), which
    /// meets the rows but not the columns: in a document of 8 tokens, two tokens of words that
    /// both favour a topic the document holds once are each given most of that one count. The
    /// maximum-entropy matrix of the form r_j c_t w_jt with both margins is found by Sinkhorn's
    /// alternating scalings (Sinkhorn & Knopp 1967): rows, r_j = 1 / Σ_t c_t w_jt; then columns,
    /// c_t = A_t / Σ_j r_j w_jt. Starting from c = A, one row scaling is `Removed`'s π bit for
    /// bit; at most [`BALANCE_ROUNDS`] row scalings are taken, fewer once a column update moves
    /// no c_t by [`BALANCE_SETTLED`] or more. A draw then reads π_jt = c_t w_jt / Σ_s c_s w_js,
    /// the form every bucket of [`OwnDraw::Removed`] already takes (c in place of A). Only
    /// documents whose counts are small are balanced ([`balances`]); the others keep c = A.
    ///
    /// Tokens of one word share a row of the matrix, so each distinct word is one row weighed
    /// by its tokens. A token whose word shares no topic with the document (possible only with
    /// approximate counters) has an empty row and constrains nothing; a column no token reaches
    /// keeps c_t = A_t (no draw reads it). Every sum runs in an order fixed by the document and
    /// the counts, so the model stays a function of the seed.
    fn balance(&self, e: &MfmEngine, words: &[u32], s: &mut Scratch) {
        let w = &e.counts.words;
        let b = &mut s.balance;
        let n = s.doc_topics.len();
        if !balances(words.len(), n) {
            return;
        }
        b.words.clear();
        b.words.extend_from_slice(words);
        b.words.sort_unstable();
        b.offsets.clear();
        b.offsets.push(0);
        b.slot.clear();
        b.weight.clear();
        b.tokens.clear();
        let mut g = 0;
        while g < b.words.len() {
            let v = b.words[g];
            let run = b.words[g..].partition_point(|&x| x == v);
            g += run;
            let row = w.row(v as usize);
            for (i, &t) in s.doc_topics.iter().enumerate() {
                if let Some((_, count)) = w.find(row.clone(), t) {
                    b.slot.push(i as u32);
                    b.weight.push(count * self.inv[t as usize]);
                }
            }
            if b.slot.len() > *b.offsets.last().expect("starts at 0") {
                b.offsets.push(b.slot.len());
                b.tokens.push(run as f64);
            }
        }
        b.scaling.clear();
        b.scaling
            .extend(s.doc_topics.iter().map(|&t| s.doc[t as usize]));
        for _ in 1..BALANCE_ROUNDS {
            b.column.clear();
            b.column.resize(n, 0.0);
            for (row, &tokens) in b.offsets.windows(2).zip(&b.tokens) {
                let entries = row[0]..row[1];
                let z: f64 = entries
                    .clone()
                    .map(|x| b.weight[x] * b.scaling[b.slot[x] as usize])
                    .sum();
                // z > 0: every entry's weight and scaling is.
                let r = tokens / z;
                for x in entries {
                    b.column[b.slot[x] as usize] += b.weight[x] * r;
                }
            }
            let mut moved = false;
            for (i, &t) in s.doc_topics.iter().enumerate() {
                if b.column[i] > 0.0 {
                    let c = s.doc[t as usize] / b.column[i];
                    moved |= (c / b.scaling[i] - 1.0).abs() >= BALANCE_SETTLED;
                    b.scaling[i] = c;
                }
            }
            if !moved {
                break;
            }
        }
        for (&t, &c) in s.doc_topics.iter().zip(&b.scaling) {
            s.pull[t as usize] = c;
        }
    }
}

impl Frozen {
    /// The smoothing bucket S: the first topic whose prefix sum of α_k β inv_k passes `x`.
    #[inline]
    fn draw_smoothing(&self, x: f64) -> usize {
        self.s_cum
            .partition_point(|&c| c <= x)
            .min(self.s_cum.len() - 1)
    }
}

/// The first entry whose corrected prefix sum `q_cum[i] − corr[i]·own` passes `x` (the bucket
/// Q'_mv of a removal whose correction is linear in `own` = 1 / D).
fn first_past_corrected(q_cum: &[f64], corr: &[f64], own: f64, x: f64) -> usize {
    let (mut lo, mut hi) = (0usize, q_cum.len() - 1);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if q_cum[mid] - corr[mid] * own > x {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// A draw that landed in a corrected R'_m: the document's row walked in order, each topic's
/// term `term(k, A_dk, b_k)` (b_k looked up in word `v`'s row, 0 where absent) summed until it
/// passes `x`.
fn walk_document_row(
    e: &MfmEngine,
    v: u32,
    s: &Scratch,
    x: f64,
    term: impl Fn(usize, f64, f64) -> f64,
) -> usize {
    let w = &e.counts.words;
    let row = w.row(v as usize);
    let mut acc = 0.0;
    for &t in &s.doc_topics {
        let k = t as usize;
        let b = w.find(row.clone(), t).map_or(0.0, |(_, b)| b);
        acc += term(k, s.doc[k], b).max(0.0);
        if acc > x {
            return k;
        }
    }
    *s.doc_topics.last().expect("not empty") as usize
}

/// Prefix sums of the `len` values `value(i)` restarting at every row of `offsets` (CSR), in
/// parallel over chunks of `chunk` entries; a row that starts before a chunk carries its sum into
/// it, so the result is the sequential one bit for bit.
fn row_prefix_sums(
    offsets: &[u64],
    len: usize,
    value: impl Fn(usize) -> f64 + Sync,
    chunk: usize,
) -> Vec<f64> {
    let mut out = vec![0.0; len];
    out.par_chunks_mut(chunk).enumerate().for_each(|(c, out)| {
        let first = c * chunk;
        let mut row = offsets.partition_point(|&o| o as usize <= first) - 1;
        let mut acc = 0.0;
        for i in offsets[row] as usize..first {
            acc += value(i);
        }
        for (j, y) in out.iter_mut().enumerate() {
            let i = first + j;
            while offsets[row + 1] as usize <= i {
                row += 1;
                acc = 0.0;
            }
            acc += value(i);
            *y = acc;
        }
    });
    out
}

/// Row scalings of [`OwnDraw::Balanced`]'s Sinkhorn balancing ([`Frozen::balance`]): one
/// is [`OwnDraw::Removed`]'s posterior; measured on reuters-short at K = 300 (BENCHMARKS.md),
/// 3 close a third of its gap to `cgs`, 5 nearly all of it.
pub const BALANCE_ROUNDS: usize = 8;

/// [`Frozen::balance`] stops once a column update changes no scaling by this share or more.
pub const BALANCE_SETTLED: f64 = 0.01;

/// The longest document [`Frozen::balance`] balances, in tokens. A round costs the document's
/// tokens times its topics on either device (on the GPU, the warp's row is staged in shared
/// memory, gpu.cu STAGE ≥ this); long documents are where it buys least. Measured on one H100
/// (BENCHMARKS.md, "mfm's own draw balanced over the document") before this cap: the
/// NYTimes-shaped corpus (332 tokens a document) at K = 1,000 ran at 0.51 of `removed`'s speed
/// for the same held-out value (+0.001), Gutenberg (382) at K = 1,000 at 0.66 (−0.002) and at
/// K = 10,000 at 0.81 (+0.006), where both are within 0.011 of `cgs`.
pub const BALANCE_MAX_TOKENS: usize = 128;

/// [`Frozen::balance`] balances a document whose row holds its topics with a mean count below
/// this many tokens. Where each topic of the document is held by one or two of its tokens, one
/// token's earlier draw is most of a count, and weighing each token alone errs most; with larger
/// counts the independent posterior meets the columns nearly and balancing costs time for
/// nothing. Measured on the CPU (BENCHMARKS.md, "mfm's own draw balanced over the document"):
/// balancing every document against only these gives the same held-out values within 0.01
/// (reuters-short, 8 tokens a document; arXiv at K = 1,000, mean counts about 1.7) and leaves
/// 20 Newsgroups and arXiv at K = 100 (mean counts 4–5) to [`OwnDraw::Removed`]'s cost.
pub const BALANCE_MEAN_COUNT: f64 = 2.5;

/// Whether [`Frozen::balance`] balances a document of `tokens` tokens whose row holds `topics`
/// topics (the GPU kernel takes the same rule): short documents whose counts are small.
pub fn balances(tokens: usize, topics: usize) -> bool {
    tokens <= BALANCE_MAX_TOKENS && (tokens as f64) < BALANCE_MEAN_COUNT * topics as f64
}

/// [`Frozen::balance`]'s working rows: the document's distinct words, each a row of entries
/// (the document topic's place in its row, and the weight wpt[t][v] / (wt[t] + Vβ)).
#[derive(Default)]
struct BalanceScratch {
    /// The document's words, sorted.
    words: Vec<u32>,
    /// Row g is entries `offsets[g]..offsets[g + 1]`; `tokens[g]`: its word's tokens.
    offsets: Vec<usize>,
    tokens: Vec<f64>,
    slot: Vec<u32>,
    weight: Vec<f64>,
    /// c, by the document topic's place, and the column sums of a round.
    scaling: Vec<f64>,
    column: Vec<f64>,
}

/// One thread's working rows.
struct Scratch {
    /// The document's estimated counts by topic (zero outside its row).
    doc: Vec<f64>,
    /// The document's factor of the posterior π over the token's earlier draw, by topic (zero
    /// outside its row): its count ([`OwnDraw::Removed`]) or its balanced scaling c_t
    /// ([`OwnDraw::Balanced`], [`Frozen::balance`]).
    pull: Vec<f64>,
    /// [`Frozen::balance`]'s working rows.
    balance: BalanceScratch,
    /// Its topics, in row order, and the prefix sums of its bucket R_m.
    doc_topics: Vec<u16>,
    r_cum: Vec<f64>,
    /// Σ over the document's non-zeros of tpd[m][k] / (wt[k] + Vβ)², for R'_m
    /// ([`Frozen::draw_word_side_own_removed`]).
    r2: f64,
    /// Per-entry terms of a draw with the own draw removed (φ_kv or b_k, or the prefix sums of
    /// e_k or E_k).
    own_terms: Vec<f64>,
    /// Places in the word's row of the document's topics ([`Frozen::draw_doc_side_removed`]).
    skipped: Vec<usize>,
    /// The word's estimated counts by topic during a dense draw (zero otherwise).
    word: Vec<f64>,
    /// Prefix sums of a dense draw and of a bucket Q_mv.
    cum: Vec<f64>,
    q_cum: Vec<f64>,
    /// The document's new counts by topic, and the topics it touched.
    new_doc: Vec<u32>,
    touched: Vec<u16>,
}

impl Scratch {
    fn new(k: usize) -> Self {
        Scratch {
            doc: vec![0.0; k],
            pull: vec![0.0; k],
            balance: BalanceScratch::default(),
            doc_topics: Vec::new(),
            r_cum: Vec::new(),
            r2: 0.0,
            own_terms: Vec::new(),
            skipped: Vec::new(),
            word: vec![0.0; k],
            cum: vec![0.0; k],
            q_cum: Vec::new(),
            new_doc: vec![0; k],
            touched: Vec::new(),
        }
    }
}

impl Engine for MfmEngine {
    fn describe(&self) -> String {
        let n = self.pool.current_num_threads();
        format!(
            "cpu ({n} thread{}), {} counters",
            if n == 1 { "" } else { "s" },
            self.scale.width().name()
        )
    }
    fn threads(&self) -> usize {
        self.pool.current_num_threads()
    }
    fn partitions(&self) -> usize {
        self.ranges.len()
    }
    fn iteration(&self) -> u32 {
        self.iteration
    }
    fn sample(&mut self) -> Result<(), TrainError> {
        if self.sampled.is_some() {
            return Err(TrainError::Unsupported(
                "a sample without a commit after the last one".into(),
            ));
        }
        let next = self.iteration + 1;
        let rows = self.pool.install(|| self.sweep(Draw::FromCounts, next));
        self.sampled = Some(rows);
        Ok(())
    }
    /// The words' exact new counts summed over the workers (through the engine's own
    /// transport, which is the run's).
    fn exchange(&mut self, _transport: &dyn Transport) -> Result<(), TrainError> {
        crate::engine::check_sampled(self.sampled.is_some())?;
        self.sum_word_counts()
    }
    fn commit(&mut self) -> Result<(), TrainError> {
        let Some(docs) = self.sampled.take() else {
            return crate::engine::check_sampled(false);
        };
        self.counts = self.commit_counts(docs, self.iteration + 1)?;
        self.iteration += 1;
        Ok(())
    }
    /// (1/N) Σ_d Σ_{w ∈ d} log Σ_k θ_dk φ_kw with θ_d ∝ tpd[d] + α and φ_k = (wpt[k] + β) /
    /// (wt[k] + Vβ), the estimates the sweep draws from, summed exactly in any order.
    fn log_likelihood(&mut self) -> Result<f64, TrainError> {
        let view = self.docs.view();
        let beta = self.hyper.beta;
        let c = &self.counts;
        let vb = self.num_words as f64 * beta;
        let inv: Vec<f64> = c.totals.iter().map(|&n| 1.0 / (n as f64 + vb)).collect();
        let alpha = self.hyper.alpha.values();
        let smooth: f64 = inv.iter().zip(alpha).map(|(&i, &a)| a * beta * i).sum();
        let w = &c.words;
        // Σ_k α_k φ_kw for every word.
        let alpha_phi: Vec<f64> = self.pool.install(|| {
            (0..self.num_words)
                .into_par_iter()
                .map(|v| {
                    smooth
                        + w.row(v)
                            .map(|i| {
                                let t = w.topics[i] as usize;
                                alpha[t] * w.registers.estimate(i) as f64 * inv[t]
                            })
                            .sum::<f64>()
                })
                .collect()
        });
        let alpha_sum = self.hyper.alpha.sum();
        let total: FixedSum = self.pool.install(|| {
            self.ranges
                .par_iter()
                .map(|r| {
                    let mut acc = FixedSum::default();
                    for d in r.clone() {
                        let (rows, local) = c.docs.locate(d);
                        let row = rows.row(local);
                        let n_d: u64 = row.clone().map(|i| rows.registers.estimate(i)).sum();
                        for &v in view.doc(d) {
                            let wrow = w.row(v as usize);
                            let mut num = alpha_phi[v as usize];
                            for i in row.clone() {
                                let t = rows.topics[i];
                                let b = w.find(wrow.clone(), t).map_or(0.0, |(_, b)| b);
                                num += rows.registers.estimate(i) as f64
                                    * (b + beta)
                                    * inv[t as usize];
                            }
                            acc.add((num / (n_d as f64 + alpha_sum)).ln());
                        }
                    }
                    acc
                })
                .sum()
        });
        let total = crate::fixed_sum::FixedSum::from_le_bytes(
            crate::shard::sum_fixed(
                self.transport.as_ref(),
                i128::from_le_bytes(total.to_le_bytes()),
            )?
            .to_le_bytes(),
        );
        Ok(total.value() / self.global_tokens.max(1) as f64)
    }
    fn topic_totals(&mut self) -> Result<Vec<u64>, TrainError> {
        Ok(self.counts.totals.clone())
    }
    /// The counters' estimates, as counts (exact counters: the counts).
    fn word_topics(&mut self, words: Range<u32>, out: &mut WordTopics) -> Result<(), TrainError> {
        let w = &self.counts.words;
        out.clear_rows(self.hyper.num_topics);
        for v in words {
            for i in w.row(v as usize) {
                out.topics.push(w.topics[i]);
                out.counts
                    .push(w.registers.estimate(i).min(u64::from(u32::MAX)) as u32);
            }
            out.offsets.push(out.topics.len() as u64);
        }
        Ok(())
    }
    fn assignments(&mut self, _start: u64, _out: &mut [u16]) -> Result<(), TrainError> {
        Err(TrainError::Unsupported(
            "--algo mfm keeps no assignments (that is its memory saving)".into(),
        ))
    }
    fn doc_topic_rows(
        &mut self,
        docs: Range<usize>,
        out: &mut DocTopics,
    ) -> Result<bool, TrainError> {
        out.num_topics = self.hyper.num_topics;
        out.offsets.clear();
        out.topics.clear();
        out.counts.clear();
        out.offsets.push(0);
        // This worker's documents of `docs` (global indices), gathered with the others' in
        // rank order (their shares are contiguous and in order).
        for d in super::local_docs(docs, self.doc_base, self.docs.view().len()) {
            let (c, local) = self.counts.docs.locate(d);
            for i in c.row(local) {
                out.topics.push(c.topics[i]);
                out.counts
                    .push(c.registers.estimate(i).min(u64::from(u32::MAX)) as u32);
            }
            out.offsets.push(out.topics.len() as u64);
        }
        crate::shard::gather_doc_rows(self.transport.as_ref(), out)?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampler::SamplerSettings;
    use crate::synthetic::{generate, SyntheticSpec, TopicShape};

    fn engine(width: CounterWidth, threads: usize, iterations: u32) -> MfmEngine {
        engine_of_docs(width, threads, iterations, 30)
    }

    /// [`engine`] on documents of `mean_doc_len` tokens.
    fn engine_of_docs(
        width: CounterWidth,
        threads: usize,
        iterations: u32,
        mean_doc_len: usize,
    ) -> MfmEngine {
        let spec = SyntheticSpec {
            num_docs: 60,
            num_words: 40,
            num_topics: 5,
            mean_doc_len,
            alpha: topos_model::Alpha::symmetric(5, 0.2),
            shape: TopicShape::Dirichlet { beta: 0.1 },
            seed: 4,
        };
        let corpus = generate(&spec);
        let hyper = Hyperparameters::new(5, Some(0.3), Some(0.05)).unwrap();
        let docs = TrainDocs::from(corpus.docs);
        let mut e = MfmEngine::open(EngineSetup {
            settings: SamplerSettings::default()
                .with(&super::super::COUNTERS, width.bits())
                .unwrap(),
            ..EngineSetup::fresh(docs, 40, &super::super::Mfm, hyper, 11, threads)
        })
        .unwrap();
        for _ in 0..iterations {
            e.iterate(&crate::transport::Local).unwrap();
        }
        e
    }

    /// Several workers (one process's group over in-process transports, as `--device cuda:all`
    /// groups GPU engines; MPI processes sum through the same calls) each take a share of the
    /// documents and sum the words' exact counts before rounding: the one-worker model, counts,
    /// document rows and likelihood, for every width and any number of workers.
    #[test]
    fn several_workers_train_the_one_workers_model() {
        use crate::engine_group::EngineGroup;
        use crate::transport::{InProcess, Transport};
        use std::sync::Arc;
        let spec = SyntheticSpec {
            num_docs: 90,
            num_words: 50,
            num_topics: 5,
            mean_doc_len: 30,
            alpha: topos_model::Alpha::symmetric(5, 0.2),
            shape: TopicShape::Dirichlet { beta: 0.1 },
            seed: 8,
        };
        let docs = TrainDocs::from(generate(&spec).docs);
        let hyper = Hyperparameters::new(5, Some(0.3), Some(0.05)).unwrap();
        let setup = |width: CounterWidth, transport: Arc<dyn Transport>| EngineSetup {
            settings: SamplerSettings::default()
                .with(&super::super::COUNTERS, width.bits())
                .unwrap(),
            transport,
            ..EngineSetup::fresh(docs.clone(), 50, &super::super::Mfm, hyper.clone(), 3, 2)
        };
        let state = |e: &mut dyn Engine| {
            let mut d = DocTopics {
                num_topics: 0,
                offsets: Vec::new(),
                topics: Vec::new(),
                counts: Vec::new(),
            };
            assert!(e.doc_topic_rows(0..spec.num_docs, &mut d).unwrap());
            let w = crate::engine::read_all_rows(e, 50).unwrap();
            (
                w.offsets,
                w.topics,
                w.counts,
                w.totals,
                d.offsets,
                d.topics,
                d.counts,
                e.log_likelihood().unwrap(),
            )
        };
        for width in CounterWidth::ALL {
            let mut one = MfmEngine::open(setup(width, Arc::new(crate::transport::Local))).unwrap();
            for _ in 0..5 {
                one.iterate(&crate::transport::Local).unwrap();
            }
            let want = state(&mut one);
            for n in [2usize, 3] {
                let transports: Vec<Arc<InProcess>> =
                    InProcess::group(n).into_iter().map(Arc::new).collect();
                let members: Vec<Box<dyn Engine>> = std::thread::scope(|s| {
                    let handles: Vec<_> = transports
                        .iter()
                        .map(|t| {
                            let st = setup(width, t.clone());
                            s.spawn(move || {
                                Box::new(MfmEngine::open(st).unwrap()) as Box<dyn Engine>
                            })
                        })
                        .collect();
                    handles.into_iter().map(|h| h.join().unwrap()).collect()
                });
                let mut group = EngineGroup::new(members, transports);
                for _ in 0..5 {
                    group.iterate(&crate::transport::Local).unwrap();
                }
                assert_eq!(state(&mut group), want, "{width:?}, {n} workers");
            }
        }
    }

    /// All three forms of the draw are inverse-CDF draws of the conditional of each
    /// [`OwnDraw`]: p(z = k) ∝ (tpd + α)(wpt + β) / (wt + Vβ) (kept); (tpd − π + α)(wpt + β) /
    /// (wt + Vβ), π_k = tpd_k φ_kv / Σ_j tpd_j φ_jv (document); (1 − π'_k) w_k(with) + π'_k
    /// w_k(without), π'_k ∝ tpd_k wpt_kv / (wt_k + Vβ) (removed), or ∝ c_k wpt_kv / (wt_k + Vβ)
    /// with the document's balanced scalings c (balanced; here a c far from tpd, so that a form
    /// reading the count in its place fails). Over a fine grid of uniform numbers each topic's
    /// share must be p_k (computed here from the formula) within the grid's resolution, for
    /// every word of a document. The four conditionals differ from each other by more than that
    /// (checked), so a form that ignored the setting, or took one for another, would fail.
    #[test]
    fn dense_and_both_bucket_draws_follow_the_mean_for_mode_conditional() {
        const OWN: [OwnDraw; 4] = [
            OwnDraw::Kept,
            OwnDraw::Document,
            OwnDraw::Removed,
            OwnDraw::Balanced,
        ];
        for (width, own) in CounterWidth::ALL
            .into_iter()
            .flat_map(|w| OWN.map(|o| (w, o)))
        {
            let mut e = engine(width, 1, 3);
            e.own = own;
            let f = e.pool.install(|| Frozen::of(&e, true));
            // The largest change of a topic's share against each other conditional.
            let mut largest_change = [0.0f64; 4];
            let k = 5usize;
            let (beta, vb) = (0.05, 40.0 * 0.05);
            let d = 7;
            let mut s = Scratch::new(k);
            let mut r = 0.0;
            let (rows, local) = e.counts.docs.locate(d);
            for i in rows.row(local) {
                let t = rows.topics[i] as usize;
                s.doc[t] = rows.registers.estimate(i) as f64;
                s.doc_topics.push(t as u16);
                r += s.doc[t] * beta * f.inv[t];
                s.r_cum.push(r);
                s.r2 += s.doc[t] * f.inv[t] * f.inv[t];
                // π's document factor: the count, or (balanced) any other positive scaling of
                // the topics the document holds, here one far from the count.
                s.pull[t] = match own {
                    OwnDraw::Balanced => s.doc[t] * (0.4 + 0.5 * t as f64),
                    _ => s.doc[t],
                };
            }
            let pull: Vec<f64> = (0..k).map(|t| s.doc[t] * (0.4 + 0.5 * t as f64)).collect();
            for v in 0..40u32 {
                let mut b = vec![0.0; k];
                for i in e.counts.words.row(v as usize) {
                    b[e.counts.words.topics[i] as usize] =
                        e.counts.words.registers.estimate(i) as f64;
                }
                let phi: Vec<f64> = (0..k)
                    .map(|t| (b[t] + beta) / (e.counts.totals[t] as f64 + vb))
                    .collect();
                let dm: f64 = (0..k).map(|t| s.doc[t] * phi[t]).sum();
                let n = |t: usize| e.counts.totals[t] as f64 + vb;
                let dp =
                    |c: &dyn Fn(usize) -> f64| -> f64 { (0..k).map(|t| c(t) * b[t] / n(t)).sum() };
                let p_of = |own: OwnDraw| -> Vec<f64> {
                    let p: Vec<f64> = (0..k)
                        .map(|t| match own {
                            OwnDraw::Kept => (s.doc[t] + 0.3) * phi[t],
                            OwnDraw::Document => (s.doc[t] - s.doc[t] * phi[t] / dm + 0.3) * phi[t],
                            OwnDraw::Removed | OwnDraw::Balanced => {
                                let c = |t: usize| match own {
                                    OwnDraw::Balanced => pull[t],
                                    _ => s.doc[t],
                                };
                                let dp = dp(&c);
                                // No topic both rows hold (possible with approximate
                                // counters): nothing to take out.
                                let pi = if dp > 0.0 {
                                    c(t) * b[t] / n(t) / dp
                                } else {
                                    0.0
                                };
                                let without = if pi > 0.0 {
                                    (s.doc[t] - 1.0 + 0.3) * (b[t] - 1.0 + beta) / (n(t) - 1.0)
                                } else {
                                    0.0
                                };
                                (1.0 - pi) * (s.doc[t] + 0.3) * phi[t] + pi * without
                            }
                        })
                        .collect();
                    let z: f64 = p.iter().sum();
                    p.iter().map(|x| x / z).collect()
                };
                let p = p_of(own);
                for (o, other) in OWN.iter().enumerate() {
                    let q = p_of(*other);
                    for t in 0..k {
                        largest_change[o] = largest_change[o].max((p[t] - q[t]).abs());
                    }
                }
                let grid = 20_000;
                let mut dense = vec![0usize; k];
                let mut word_side = vec![0usize; k];
                let mut doc_side = vec![0usize; k];
                for g in 0..grid {
                    let u = (g as f64 + 0.5) / grid as f64;
                    dense[f.draw_dense(&e, v, u, &mut s)] += 1;
                    word_side[f.draw_word_side(&e, v, u, r, &mut s)] += 1;
                    doc_side[f.draw_doc_side(&e, v, u, &mut s)] += 1;
                }
                for t in 0..k {
                    let want = p[t];
                    for (form, got) in [
                        ("dense", dense[t]),
                        ("word-side buckets", word_side[t]),
                        ("document-side buckets", doc_side[t]),
                    ] {
                        let share = got as f64 / grid as f64;
                        assert!(
                            // Each of the (at most three) pieces a topic owns is off by
                            // at most one grid point.
                            (share - want).abs() <= 3.0 / grid as f64 + 1e-9,
                            "{width:?} {own:?} {form}: word {v} topic {t}: {share} against {want}"
                        );
                    }
                }
            }
            for (o, other) in OWN.iter().enumerate().filter(|&(_, &o)| o != own) {
                assert!(
                    largest_change[o] > 20.0 * 3.0 / 20_000.0,
                    "{width:?}: {own:?} and {other:?} differ by {} only",
                    largest_change[o]
                );
            }
        }
    }

    /// [`Frozen::balance`] on every document of a trained engine of short documents, for two
    /// widths: on a document [`balances`] admits, the matrix π_jt ∝ c_t w_jt it leaves has row
    /// sums 1 (by construction) and column sums that are the document's counts much more nearly
    /// than [`OwnDraw::Removed`]'s π_jt ∝ A_t w_jt (whose rows are the same): over those
    /// documents the largest relative column error falls at least fivefold and is under 15%
    /// (measured: 0.81 to 0.09 with exact counters; the rounds stop at 8 or once no scaling moves
    /// by 1%, and the slowest documents converge slowly). Every other document keeps c = A.
    #[test]
    fn balancing_fills_each_topic_of_the_document_with_its_count() {
        for width in [CounterWidth::Exact, CounterWidth::Approx8] {
            let mut e = engine_of_docs(width, 1, 3, 6);
            let (mut admitted, mut kept) = (0, 0);
            e.own = OwnDraw::Balanced;
            let f = e.pool.install(|| Frozen::of(&e, true));
            let k = e.hyper.num_topics as usize;
            let mut s = Scratch::new(k);
            let view = e.docs.view();
            let (mut worst_removed, mut worst_balanced) = (0.0f64, 0.0f64);
            for d in 0..view.len() {
                let (rows, local) = e.counts.docs.locate(d);
                s.doc_topics.clear();
                for i in rows.row(local) {
                    let t = rows.topics[i] as usize;
                    s.doc[t] = rows.registers.estimate(i) as f64;
                    s.pull[t] = s.doc[t];
                    s.doc_topics.push(t as u16);
                }
                let words = view.doc(d);
                // Column sums of π ∝ c w over the document's tokens.
                let columns = |c: &[f64]| -> Vec<f64> {
                    let mut col = vec![0.0; k];
                    for &v in words {
                        let wv: Vec<f64> = (0..k)
                            .map(|t| {
                                let row = e.counts.words.row(v as usize);
                                e.counts.words.find(row, t as u16).map_or(0.0, |(_, b)| b)
                                    * f.inv[t]
                                    * c[t]
                            })
                            .collect();
                        let z: f64 = wv.iter().sum();
                        if z > 0.0 {
                            for t in 0..k {
                                col[t] += wv[t] / z;
                            }
                        }
                    }
                    col
                };
                let error = |col: &[f64], s: &Scratch| -> f64 {
                    s.doc_topics
                        .iter()
                        .map(|&t| (col[t as usize] / s.doc[t as usize] - 1.0).abs())
                        .fold(0.0, f64::max)
                };
                let removed = error(&columns(&s.doc), &s);
                f.balance(&e, words, &mut s);
                if balances(words.len(), s.doc_topics.len()) {
                    admitted += 1;
                    worst_removed = worst_removed.max(removed);
                    worst_balanced = worst_balanced.max(error(&columns(&s.pull), &s));
                } else {
                    kept += 1;
                    assert_eq!(s.pull, s.doc, "{width:?}: document {d}");
                }
                for t in 0..k {
                    s.doc[t] = 0.0;
                    s.pull[t] = 0.0;
                }
            }
            eprintln!(
                "{width:?}: {admitted} documents balanced, {kept} kept; column error \
                 {worst_balanced} balanced, {worst_removed} removed"
            );
            assert!(
                admitted >= 10 && kept >= 1,
                "{admitted} balanced, {kept} kept"
            );
            assert!(
                worst_balanced < 0.15 && worst_balanced * 5.0 < worst_removed,
                "{width:?}: column error {worst_balanced} balanced, {worst_removed} removed"
            );
        }
    }

    #[test]
    fn row_prefix_sums_match_the_sequential_sums_for_any_chunk() {
        let offsets = [0u64, 3, 3, 4, 9, 10];
        let values: Vec<f64> = (0..10).map(|i| 0.1 * (i * i) as f64 + 1.0).collect();
        let mut want = Vec::new();
        for r in offsets.windows(2) {
            let mut acc = 0.0;
            for &x in &values[r[0] as usize..r[1] as usize] {
                acc += x;
                want.push(acc);
            }
        }
        for chunk in 1..12 {
            assert_eq!(
                row_prefix_sums(&offsets, values.len(), |i| values[i], chunk),
                want,
                "chunk {chunk}"
            );
        }
    }

    /// The counts are what the model says: every document's row sums (exact counters) to its
    /// length, the words' rows to the totals, and the totals to the tokens.
    #[test]
    fn exact_counts_add_up() {
        let mut e = engine(CounterWidth::Exact, 2, 4);
        let docs = e.docs.clone();
        let view = docs.view();
        for d in 0..view.len() {
            let (rows, local) = e.counts.docs.locate(d);
            let n: u64 = rows.row(local).map(|i| rows.registers.estimate(i)).sum();
            assert_eq!(n, view.doc(d).len() as u64);
        }
        let totals = e.topic_totals().unwrap();
        assert_eq!(totals.iter().sum::<u64>(), view.num_tokens());
        let mut rows = WordTopics::default();
        e.word_topics(0..40, &mut rows).unwrap();
        let mut by_topic = vec![0u64; 5];
        for (&t, &c) in rows.topics.iter().zip(&rows.counts) {
            by_topic[t as usize] += u64::from(c);
        }
        assert_eq!(by_topic, totals);
        assert!(e.assignments(0, &mut [0u16; 4]).is_err());
    }
}
