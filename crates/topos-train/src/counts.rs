//! The M-step: count matrices rebuilt from the assignments (SaberLDA Alg. 1 lines 9–11).
//!
//! Both matrices are rebuilt from scratch once per iteration with integer counting, so they are an
//! exact function of the assignments whatever the number of threads. The word-topic counts B are
//! kept sparse (one sorted row of non-zeros per word): memory is O(non-zeros), not O(V·K), which
//! is what lets K reach 65,535 on a laptop. Document-topic counts A are sparse rows as in
//! SaberLDA §3.3 ("shuffle and segmented count": the tokens of a document are contiguous in the
//! corpus order in which `z` is stored, so the shuffle is free on the CPU).

use crate::layout::{prefetch, Layout};
use rayon::prelude::*;
use topos_corpus::Docs;
use topos_model::DocTopics;

/// Sparse word-topic counts B with their column sums n_k.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WordTopics {
    pub num_topics: u32,
    /// Row `v` is `offsets[v]..offsets[v+1]` of `topics` / `counts`, topics ascending.
    pub offsets: Vec<u64>,
    pub topics: Vec<u16>,
    pub counts: Vec<u32>,
    /// n_k = Σ_v B_vk.
    pub totals: Vec<u64>,
}

impl WordTopics {
    /// No rows yet, of `num_topics` topics, totals empty (what an engine's
    /// [`crate::Engine::word_topics`] appends rows to).
    pub fn clear_rows(&mut self, num_topics: u32) {
        self.num_topics = num_topics;
        self.offsets.clear();
        self.topics.clear();
        self.counts.clear();
        self.totals.clear();
        self.offsets.push(0);
    }

    /// Appends rows `0..rows` (after [`WordTopics::clear_rows`]), in parallel and in place:
    /// `nonzeros(i)` counts row i's pairs, then `fill(i, topics, counts)` writes exactly that
    /// many, topics ascending. Rows are named by index so that a caller needs no list of them:
    /// a GPU engine decodes its copied-back counts this way when a model is written (V rows of
    /// up to K cells), with no allocation a row.
    pub fn push_rows_in_parallel(
        &mut self,
        rows: usize,
        nonzeros: impl Fn(usize) -> usize + Sync,
        fill: impl Fn(usize, &mut [u16], &mut [u32]) + Sync,
    ) {
        let nnz: Vec<usize> = (0..rows).into_par_iter().map(&nonzeros).collect();
        let first = self.topics.len();
        for &m in &nnz {
            let last = *self
                .offsets
                .last()
                .expect("clear_rows starts the offsets at 0");
            self.offsets.push(last + m as u64);
        }
        let total = *self.offsets.last().expect("pushed above") as usize;
        self.topics.resize(total, 0);
        self.counts.resize(total, 0);
        let mut parts = Vec::with_capacity(nnz.len());
        let (mut topics, mut counts) = (&mut self.topics[first..], &mut self.counts[first..]);
        for &m in &nnz {
            let (t, t_rest) = std::mem::take(&mut topics).split_at_mut(m);
            let (c, c_rest) = std::mem::take(&mut counts).split_at_mut(m);
            parts.push((t, c));
            (topics, counts) = (t_rest, c_rest);
        }
        parts
            .into_par_iter()
            .enumerate()
            .for_each(|(i, (t, c))| fill(i, t, c));
    }

    /// Number of words.
    pub fn num_words(&self) -> usize {
        self.offsets.len() - 1
    }

    /// 1 / (n_k + Vβ) per topic (`topos_model::phi::normalizers` of these counts).
    pub fn normalizers(&self, beta: f64) -> Vec<f64> {
        topos_model::phi::normalizers(&self.totals, self.num_words(), beta)
    }

    /// 1 / (n_k − 1 + Vβ) per topic: the normalizer with one token of topic k removed (a
    /// token's own assignment, for the samplers that draw without it), n_k − 1 floored at 0.
    pub fn normalizers_without_one(&self, beta: f64) -> Vec<f64> {
        let v_beta = self.num_words() as f64 * beta;
        self.totals
            .iter()
            .map(|&n| 1.0 / ((n as f64 - 1.0).max(0.0) + v_beta))
            .collect()
    }

    /// Non-zero (topic, count) pairs of word `v`.
    #[inline]
    pub fn row(&self, v: u32) -> (&[u16], &[u32]) {
        let (a, b) = (
            self.offsets[v as usize] as usize,
            self.offsets[v as usize + 1] as usize,
        );
        (&self.topics[a..b], &self.counts[a..b])
    }

    /// The sparse form of a dense V × K matrix (row-major by word), the inverse of
    /// [`WordTopics::to_dense`].
    pub fn from_dense(dense: &[u32], num_topics: u32) -> Self {
        let k = num_topics as usize;
        let mut offsets = Vec::with_capacity(dense.len() / k.max(1) + 1);
        offsets.push(0u64);
        let nnz = dense.iter().filter(|&&c| c > 0).count();
        let mut topics = Vec::with_capacity(nnz);
        let mut counts = Vec::with_capacity(nnz);
        let mut totals = vec![0u64; k];
        for row in dense.chunks_exact(k.max(1)) {
            for (t, &c) in row.iter().enumerate().filter(|(_, &c)| c > 0) {
                topics.push(t as u16);
                counts.push(c);
                totals[t] += u64::from(c);
            }
            offsets.push(topics.len() as u64);
        }
        WordTopics {
            num_topics,
            offsets,
            topics,
            counts,
            totals,
        }
    }

    /// `self + other`, cell by cell (same V and K): the sampled counts of a run plus its fixed
    /// counts ([`crate::engine::EngineSetup::fixed_counts`]). Rows merge in topic order, chunks
    /// of words in parallel, so the result is the same for any number of threads.
    ///
    /// # Panics
    /// If the shapes differ, or a cell overflows 32 bits.
    pub fn plus(&self, other: &WordTopics) -> WordTopics {
        assert_eq!(self.num_topics, other.num_topics, "the same K");
        assert_eq!(self.num_words(), other.num_words(), "the same V");
        const CHUNK: usize = 4096;
        let v = self.num_words();
        let chunks: Vec<(Vec<u64>, Vec<u16>, Vec<u32>)> = (0..v.div_ceil(CHUNK))
            .into_par_iter()
            .map(|c| {
                let mut offsets = vec![0u64];
                let (mut topics, mut counts) = (Vec::new(), Vec::new());
                for w in c * CHUNK..((c + 1) * CHUNK).min(v) {
                    let (at, ac) = self.row(w as u32);
                    let (bt, bc) = other.row(w as u32);
                    let (mut i, mut j) = (0, 0);
                    while i < at.len() || j < bt.len() {
                        let take_a = j == bt.len() || (i < at.len() && at[i] < bt[j]);
                        let take_b = i == at.len() || (j < bt.len() && bt[j] < at[i]);
                        if take_a {
                            topics.push(at[i]);
                            counts.push(ac[i]);
                            i += 1;
                        } else if take_b {
                            topics.push(bt[j]);
                            counts.push(bc[j]);
                            j += 1;
                        } else {
                            topics.push(at[i]);
                            counts
                                .push(ac[i].checked_add(bc[j]).expect("a count overflows 32 bits"));
                            i += 1;
                            j += 1;
                        }
                    }
                    offsets.push(topics.len() as u64);
                }
                (offsets, topics, counts)
            })
            .collect();
        let (offsets, topics, counts) = concat(chunks);
        WordTopics {
            num_topics: self.num_topics,
            offsets,
            topics,
            counts,
            totals: self
                .totals
                .iter()
                .zip(&other.totals)
                .map(|(a, b)| a + b)
                .collect(),
        }
    }

    /// Dense V × K matrix (row-major by word), for the model file.
    pub fn to_dense(&self) -> Vec<u32> {
        let k = self.num_topics as usize;
        let mut dense = vec![0u32; self.num_words() * k];
        dense
            .par_chunks_mut(k.max(1))
            .enumerate()
            .for_each(|(v, row)| {
                let (t, c) = self.row(v as u32);
                for (&t, &c) in t.iter().zip(c) {
                    row[t as usize] = c;
                }
            });
        dense
    }
}

/// Counts one sparse row from a stream of topics using a dense scratch row and a touched list;
/// appends it to `topics`/`counts` in ascending topic order and leaves the scratch zeroed.
#[inline]
pub(crate) fn count_row(
    stream: impl Iterator<Item = u16>,
    scratch: &mut [u32],
    touched: &mut Vec<u16>,
    topics: &mut Vec<u16>,
    counts: &mut Vec<u32>,
) {
    touched.clear();
    for k in stream {
        let c = &mut scratch[k as usize];
        if *c == 0 {
            touched.push(k);
        }
        *c += 1;
    }
    touched.sort_unstable();
    for &k in touched.iter() {
        topics.push(k);
        counts.push(scratch[k as usize]);
        scratch[k as usize] = 0;
    }
}

#[cfg(test)]
mod plus_tests {
    use super::*;

    #[test]
    fn plus_adds_cell_by_cell() {
        let a = WordTopics::from_dense(&[1, 0, 2, 0, 0, 0, 5, 5, 0], 3);
        let b = WordTopics::from_dense(&[0, 3, 1, 0, 0, 7, 0, 0, 0], 3);
        let sum = a.plus(&b);
        assert_eq!(sum.to_dense(), vec![1, 3, 3, 0, 0, 7, 5, 5, 0]);
        assert_eq!(sum.totals, vec![6, 8, 10]);
        assert_eq!(sum, WordTopics::from_dense(&sum.to_dense(), 3));
    }
}

/// Concatenates per-chunk sparse rows (each with chunk-local offsets starting at 0) into one CSR.
fn concat(chunks: Vec<(Vec<u64>, Vec<u16>, Vec<u32>)>) -> (Vec<u64>, Vec<u16>, Vec<u32>) {
    let nnz: usize = chunks.iter().map(|c| c.1.len()).sum();
    let rows: usize = chunks.iter().map(|c| c.0.len() - 1).sum();
    let mut offsets = Vec::with_capacity(rows + 1);
    offsets.push(0u64);
    let mut topics = Vec::with_capacity(nnz);
    let mut counts = Vec::with_capacity(nnz);
    for (o, t, c) in chunks {
        let base = topics.len() as u64;
        offsets.extend(o[1..].iter().map(|x| x + base));
        topics.extend_from_slice(&t);
        counts.extend_from_slice(&c);
    }
    (offsets, topics, counts)
}

/// Document-topic counts A of `docs` under assignments `z` (corpus order).
pub fn count_doc_topics(docs: Docs<'_>, z: &[u16], num_topics: u32) -> DocTopics {
    let n = docs.len();
    let chunk = n.div_ceil(rayon::current_num_threads() * 8).max(256);
    let starts: Vec<usize> = (0..n).step_by(chunk).collect();
    let chunks = starts
        .into_par_iter()
        .map(|s| {
            let e = (s + chunk).min(n);
            let mut scratch = vec![0u32; num_topics as usize];
            let mut touched = Vec::new();
            let mut offsets = vec![0u64];
            let mut topics = Vec::new();
            let mut counts = Vec::new();
            for d in s..e {
                let (a, b) = (docs.doc_start(d) as usize, docs.doc_start(d + 1) as usize);
                count_row(
                    z[a..b].iter().copied(),
                    &mut scratch,
                    &mut touched,
                    &mut topics,
                    &mut counts,
                );
                offsets.push(topics.len() as u64);
            }
            (offsets, topics, counts)
        })
        .collect();
    let (offsets, topics, counts) = concat(chunks);
    DocTopics {
        num_topics,
        offsets,
        topics,
        counts,
    }
}

/// PDOW entries ahead of the current one whose topics [`count_word_topics`] prefetches.
const PREFETCH_AHEAD: usize = 16;

/// Word-topic counts B of the corpus laid out in `layout` under assignments `z` (corpus order).
/// Parallel over ranges of word ids; each range walks every partition's word-sorted tokens with a
/// cursor, so the work is O(tokens + non-zeros + partitions · chunks).
///
/// The topics are read out of corpus order, so the walk prefetches them ahead along the
/// partition's whole word-sorted list (past the word's own run: the partition's next words come
/// right after it), and notes a topic's first sighting without a branch (whether a topic is new
/// is a coin flip for rare words). Both took the count from 11-17 ms to 7-12 ms an iteration on
/// 20 Newsgroups (one thread, K = 100 and 1,000), about a tenth of a sampler's iteration there.
pub fn count_word_topics(
    layout: &Layout,
    z: &[u16],
    num_words: usize,
    num_topics: u32,
) -> WordTopics {
    let k = num_topics as usize;
    let chunk = num_words
        .div_ceil(rayon::current_num_threads() * 16)
        .max(64);
    let starts: Vec<usize> = (0..num_words).step_by(chunk).collect();
    let chunks = starts
        .into_par_iter()
        .map(|s| {
            let e = (s + chunk).min(num_words);
            let mut cursors: Vec<usize> = layout
                .partitions
                .iter()
                .map(|p| p.words.partition_point(|&w| (w as usize) < s))
                .collect();
            let mut scratch = vec![0u32; k];
            let mut touched: Vec<u16> = vec![0; k + 1];
            let mut offsets = vec![0u64];
            let mut topics = Vec::new();
            let mut counts = Vec::new();
            for w in s..e {
                let mut seen = 0usize;
                for (p, cur) in layout.partitions.iter().zip(cursors.iter_mut()) {
                    if *cur >= p.words.len() || p.words[*cur] as usize != w {
                        continue;
                    }
                    let range = p.word_range(*cur);
                    *cur += 1;
                    let base = p.token_start as usize;
                    let zp = &z[base..base + p.num_tokens];
                    // The partition's later words follow this one's tokens: prefetching past the
                    // word's own run covers the next words' first topics too.
                    let all = &p.token_src[..];
                    for i in range {
                        if let Some(&ahead) = all.get(i + PREFETCH_AHEAD) {
                            prefetch(zp, ahead as usize);
                        }
                        let topic = zp[all[i] as usize];
                        let c = &mut scratch[topic as usize];
                        touched[seen] = topic;
                        seen += usize::from(*c == 0);
                        *c += 1;
                    }
                }
                let touched = &mut touched[..seen];
                touched.sort_unstable();
                for &t in touched.iter() {
                    topics.push(t);
                    counts.push(scratch[t as usize]);
                    scratch[t as usize] = 0;
                }
                offsets.push(topics.len() as u64);
            }
            (offsets, topics, counts)
        })
        .collect();
    let (offsets, topics, counts) = concat(chunks);
    let mut totals = vec![0u64; k];
    for (&t, &c) in topics.iter().zip(&counts) {
        totals[t as usize] += u64::from(c);
    }
    WordTopics {
        num_topics,
        offsets,
        topics,
        counts,
        totals,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use topos_corpus::OwnedDocs;

    #[test]
    fn rows_pushed_in_parallel_equal_rows_pushed_one_by_one() {
        // Dense rows of K cells with zeros (a GPU's copied-back counts), appended in pieces.
        let k = 37usize;
        let cells: Vec<Vec<u32>> = (0..500u32)
            .map(|w| {
                (0..k as u32)
                    .map(|t| {
                        if (w * 31 + t * 17) % 5 < 2 {
                            w + t + 1
                        } else {
                            0
                        }
                    })
                    .collect()
            })
            .collect();
        let mut expected = WordTopics::default();
        expected.clear_rows(k as u32);
        let mut got = WordTopics::default();
        got.clear_rows(k as u32);
        for piece in cells.chunks(123) {
            for row in piece {
                for (t, &c) in row.iter().enumerate() {
                    if c > 0 {
                        expected.topics.push(t as u16);
                        expected.counts.push(c);
                    }
                }
                expected.offsets.push(expected.topics.len() as u64);
            }
            got.push_rows_in_parallel(
                piece.len(),
                |i| piece[i].iter().filter(|&&c| c > 0).count(),
                |i, topics, counts| {
                    let nonzero = piece[i].iter().enumerate().filter(|&(_, &c)| c > 0);
                    for ((t, n), (topic, &c)) in topics.iter_mut().zip(counts).zip(nonzero) {
                        (*t, *n) = (topic as u16, c);
                    }
                },
            );
        }
        assert_eq!(got, expected);
        assert!(got.num_words() == 500 && !got.topics.is_empty());
    }

    /// Many words, rare and frequent, over several partitions and topic counts: the counts equal a
    /// dense brute-force count cell by cell, rows ascending with no zeros.
    #[test]
    fn counts_match_brute_force_on_a_random_corpus() {
        use topos_sampling::{CounterRng, Stream};
        let num_words = 300usize;
        let mut docs = Vec::new();
        let mut t = 0u64;
        for d in 0..120u64 {
            let len = CounterRng::new(5, Stream::Init, 1, d).below(60) as usize;
            let doc: Vec<u32> = (0..len)
                .map(|i| {
                    let x = CounterRng::new(5, Stream::Init, 2, t + i as u64).below(1 << 16);
                    // Zipf-like: small ids are frequent.
                    ((u64::from(x) * u64::from(x)) >> 32) as u32 % num_words as u32
                })
                .collect();
            t += len as u64;
            docs.push(doc);
        }
        let owned: OwnedDocs = docs.iter().map(|d| &d[..]).collect();
        let view = owned.view();
        for k in [3u32, 50, 700] {
            let z: Vec<u16> = (0..view.num_tokens())
                .map(|i| CounterRng::new(9, Stream::Init, k, i).below(k) as u16)
                .collect();
            let mut dense = vec![0u32; num_words * k as usize];
            for (&w, &topic) in view.tokens().iter().zip(&z) {
                dense[w as usize * k as usize + topic as usize] += 1;
            }
            for parts in [1, 3, 8] {
                let layout = Layout::build(view, parts);
                let b = count_word_topics(&layout, &z, num_words, k);
                assert_eq!(
                    b,
                    WordTopics::from_dense(&dense, k),
                    "K = {k}, {parts} partitions"
                );
            }
        }
    }

    #[test]
    fn counts_match_brute_force_for_any_layout() {
        let docs: OwnedDocs = [&[3u32, 1, 3][..], &[0, 1], &[], &[2, 2, 2, 0], &[1]]
            .into_iter()
            .collect();
        let z: Vec<u16> = vec![1, 0, 1, 2, 2, 0, 0, 1, 2, 0];
        let k = 3;
        let mut dense_b = vec![0u32; 4 * k];
        let mut dense_a = vec![0u32; 5 * k];
        for d in 0..5 {
            let s = docs.view().doc_start(d) as usize;
            for (i, &w) in docs.view().doc(d).iter().enumerate() {
                dense_b[w as usize * k + z[s + i] as usize] += 1;
                dense_a[d * k + z[s + i] as usize] += 1;
            }
        }
        for parts in 1..4 {
            let layout = Layout::build(docs.view(), parts);
            let b = count_word_topics(&layout, &z, 4, k as u32);
            assert_eq!(b.to_dense(), dense_b);
            assert_eq!(WordTopics::from_dense(&dense_b, k as u32), b);
            assert_eq!(b.totals, vec![4, 3, 3]);
            for v in 0..4 {
                let (t, c) = b.row(v);
                assert!(t.windows(2).all(|w| w[0] < w[1]), "row {v} not ascending");
                assert!(c.iter().all(|&c| c > 0), "row {v} stores a zero");
            }
        }
        let a = count_doc_topics(docs.view(), &z, k as u32);
        for d in 0..5 {
            let (t, c) = a.row(d);
            let mut row = vec![0u32; k];
            for (&t, &c) in t.iter().zip(c) {
                row[t as usize] = c;
            }
            assert_eq!(row, dense_a[d * k..(d + 1) * k]);
            assert!(t.windows(2).all(|w| w[0] < w[1]));
        }
    }
}
