//! The PDOW layout: partition by document, order by word (SaberLDA §3.1.4).
//!
//! Documents are cut into contiguous partitions balanced by token count; inside a partition the
//! tokens are visited word after word, so the word's row of the word-topic counts (and the
//! structures built from it) is loaded once and stays in cache for all its tokens, while the
//! document rows are read in a scattered but sparse way. The assignments `z` themselves stay in
//! document order (the corpus order), which is what checkpoints store and what makes the state
//! independent of the layout: a token's PDOW entry points back to its position there.

use topos_corpus::Docs;

/// A hint to bring `slice[i]` into the cache; never faults (an address past the end is ignored).
#[inline(always)]
pub(crate) fn prefetch<T>(slice: &[T], i: usize) {
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

/// One partition: a contiguous range of documents and its tokens grouped by word.
#[derive(Clone, Debug)]
pub struct Partition {
    /// First document (global index) and one past the last.
    pub docs: std::ops::Range<usize>,
    /// Global index of the partition's first token (tokens of the partition are contiguous in the
    /// corpus order).
    pub token_start: u64,
    /// Number of tokens.
    pub num_tokens: usize,
    /// Global index of the partition's first token in the whole corpus: what the samplers'
    /// random numbers are keyed by (`token_start` counts from the first token of the documents
    /// this process holds, which is a share of the corpus in a multi-process run).
    pub first_key: u64,
    /// Distinct words of the partition, ascending.
    pub words: Vec<u32>,
    /// Tokens of `words[i]` are entries `word_starts[i]..word_starts[i+1]` of the arrays below.
    pub word_starts: Vec<u32>,
    /// Per token (PDOW order): position relative to `token_start` in corpus order.
    pub token_src: Vec<u32>,
    /// Per token (PDOW order): document relative to `docs.start`.
    pub token_doc: Vec<u32>,
}

impl Partition {
    /// Range of PDOW entries for the `i`-th distinct word.
    #[inline]
    pub fn word_range(&self, i: usize) -> std::ops::Range<usize> {
        self.word_starts[i] as usize..self.word_starts[i + 1] as usize
    }
}

/// All partitions of a corpus.
#[derive(Clone, Debug)]
pub struct Layout {
    pub partitions: Vec<Partition>,
}

/// Largest number of tokens one partition may hold (PDOW entries use 32-bit positions).
pub const MAX_PARTITION_TOKENS: u64 = u32::MAX as u64;

impl Layout {
    /// Cuts `docs` into `num_partitions` contiguous ranges of about equal token count (more if a
    /// partition would exceed [`MAX_PARTITION_TOKENS`]) and sorts each partition's tokens by word.
    /// Partitions are built in parallel (each sort is parallel inside too), each with its own
    /// sorting scratch: at most 8 bytes a token beside the layout while it is built.
    pub fn build(docs: Docs<'_>, num_partitions: usize) -> Self {
        Self::build_ranges(docs, partition_ranges(docs, num_partitions), 0)
    }

    /// The partitions of the given document ranges (contiguous, covering `docs`), whose first
    /// token is token `first_key` of the whole corpus: one process's share of a multi-process
    /// run ([`crate::shard`]), keyed as the same partitions of a single process.
    pub fn build_ranges(
        docs: Docs<'_>,
        ranges: Vec<std::ops::Range<usize>>,
        first_key: u64,
    ) -> Self {
        use rayon::prelude::*;
        let partitions = ranges
            .into_par_iter()
            .map(|r| {
                let mut p = build_partition(docs, r);
                p.first_key = first_key + p.token_start;
                p
            })
            .collect();
        Self { partitions }
    }

    /// Number of tokens in all partitions.
    pub fn num_tokens(&self) -> u64 {
        self.partitions.iter().map(|p| p.num_tokens as u64).sum()
    }
}

/// The document ranges of [`Layout::build`]: `num_partitions` (more if a partition would
/// exceed [`MAX_PARTITION_TOKENS`], fewer if there are fewer documents) balanced by tokens.
pub fn partition_ranges(docs: Docs<'_>, num_partitions: usize) -> Vec<std::ops::Range<usize>> {
    let total = docs.num_tokens();
    let wanted = num_partitions
        .max(1)
        .max(total.div_ceil(MAX_PARTITION_TOKENS) as usize)
        .min(docs.len().max(1));
    balanced_ranges(docs, wanted)
}

/// Contiguous document ranges whose token counts are as even as the document boundaries allow.
pub fn balanced_ranges(docs: Docs<'_>, parts: usize) -> Vec<std::ops::Range<usize>> {
    let n = docs.len();
    let total = docs.num_tokens();
    let mut out = Vec::with_capacity(parts);
    let mut start = 0usize;
    for p in 1..=parts {
        let end = if p == parts {
            n
        } else {
            // First document boundary at or after the p-th share of tokens.
            let target = total * p as u64 / parts as u64;
            let offsets = docs.offsets();
            let idx = offsets.partition_point(|&o| o < target);
            idx.clamp(start, n)
        };
        out.push(start..end);
        start = end;
    }
    out.retain(|r| !r.is_empty());
    if out.is_empty() {
        out.push(0..n);
    }
    out
}

/// One partition of [`Layout::build`]: its shape, then every PDOW entry in one piece.
fn build_partition(docs: Docs<'_>, range: std::ops::Range<usize>) -> Partition {
    let shape = PartitionShape::new(docs, range);
    let mut token_src = vec![0u32; shape.num_tokens];
    let mut token_doc = vec![0u32; shape.num_tokens];
    shape
        .filler(docs)
        .fill(0..shape.words.len(), &mut token_src, &mut token_doc);
    let PartitionShape {
        docs,
        token_start,
        num_tokens,
        words,
        word_starts,
    } = shape;
    Partition {
        docs,
        token_start,
        num_tokens,
        first_key: token_start,
        words,
        word_starts,
        token_src,
        token_doc,
    }
}

/// How many times each word id below `bound` occurs in `tokens` (parallel over chunks; every
/// id must be below `bound`).
pub fn word_counts(tokens: &[u32], bound: usize) -> Vec<u64> {
    use rayon::prelude::*;
    tokens
        .par_chunks(1 << 20)
        .fold(
            || vec![0u64; bound],
            |mut c, chunk| {
                for &w in chunk {
                    c[w as usize] += 1;
                }
                c
            },
        )
        .reduce(
            || vec![0u64; bound],
            |mut a, b| {
                a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                a
            },
        )
}

/// A partition without its per-token arrays: what a device-resident run keeps on the host (the
/// word index is O(V)) while the PDOW arrays are sorted on the device, or built on the host a
/// piece at a time ([`PartitionShape::filler`]), instead of holding 8 bytes a token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionShape {
    pub docs: std::ops::Range<usize>,
    pub token_start: u64,
    pub num_tokens: usize,
    /// Distinct words, ascending.
    pub words: Vec<u32>,
    /// Tokens of `words[i]` are PDOW entries `word_starts[i]..word_starts[i+1]`.
    pub word_starts: Vec<u32>,
}

impl PartitionShape {
    /// The words of documents `range` of `docs` and where each word's tokens go (a parallel
    /// histogram of the partition's tokens).
    pub fn new(docs: Docs<'_>, range: std::ops::Range<usize>) -> Self {
        use rayon::prelude::*;
        let token_start = docs.doc_start(range.start);
        let token_end = docs.doc_start(range.end);
        let local = &docs.tokens()[token_start as usize..token_end as usize];
        // The partition's own largest word (not the corpus's: a scan of every token per
        // partition cost 30 s on a 745M-token corpus cut into 47 partitions).
        let bound = local.par_iter().max().map_or(0, |&w| w as usize + 1);
        let count = word_counts(local, bound);
        let mut words = Vec::new();
        let mut word_starts = vec![0u32];
        let mut acc = 0u32;
        for (w, &c) in count.iter().enumerate() {
            if c > 0 {
                words.push(w as u32);
                // A partition holds at most MAX_PARTITION_TOKENS tokens.
                acc += c as u32;
                word_starts.push(acc);
            }
        }
        Self {
            docs: range,
            token_start,
            num_tokens: local.len(),
            words,
            word_starts,
        }
    }

    /// PDOW entries of the `i`-th distinct word.
    #[inline]
    pub fn word_range(&self, i: usize) -> std::ops::Range<usize> {
        self.word_starts[i] as usize..self.word_starts[i + 1] as usize
    }

    /// Consecutive ranges of distinct-word indices whose tokens are at most `max_tokens` each
    /// (a single word may exceed it).
    pub fn pieces(&self, max_tokens: usize) -> Vec<std::ops::Range<usize>> {
        let mut out = Vec::new();
        let mut start = 0;
        for i in 0..self.words.len() {
            let tokens = (self.word_starts[i + 1] - self.word_starts[start]) as usize;
            if tokens > max_tokens && i > start {
                out.push(start..i);
                start = i;
            }
        }
        if start < self.words.len() {
            out.push(start..self.words.len());
        }
        out
    }

    /// A filler of this partition's PDOW arrays, a piece of words at a time (see
    /// [`PdowFiller::fill`]); it counts every chunk's words once, with the partition's tokens
    /// cut into one chunk per thread (at least 2²⁰ tokens each).
    pub fn filler<'a>(&'a self, docs: Docs<'a>) -> PdowFiller<'a> {
        let chunk = self
            .num_tokens
            .div_ceil(rayon::current_num_threads())
            .max(1 << 20);
        PdowFiller::new(self, docs, chunk)
    }

    /// [`PartitionShape::filler`] reusing the sorting scratch of an earlier filler
    /// ([`PdowFiller::into_scratch`]): its pages are already faulted in.
    pub fn filler_reusing<'a>(&'a self, docs: Docs<'a>, scratch: Vec<u64>) -> PdowFiller<'a> {
        let mut f = self.filler(docs);
        f.scratch = scratch;
        f
    }
}

/// The PDOW arrays of one partition, built a piece of words at a time by a stable sort (within a
/// word, tokens in corpus order), parallel over chunks of the partition's tokens.
///
/// A plain counting sort scatters every token to one of up to V places, two scattered 4-byte
/// writes a token that each miss the cache (38 ns a token a core, measured; 3 s of a 745M-token
/// corpus's start on 16 cores). Here the scatter is split in two stable passes over few places,
/// as a most-significant-digit radix sort on the word's index within the partition
/// ([`BUCKET_BITS`] low bits, the rest high):
///
/// 1. every chunk (in parallel) writes its tokens of the piece to their **bucket** (a run of
///    2^[`BUCKET_BITS`] consecutive words), in corpus order, with the word's low bits: a few
///    hundred sequential write streams per thread;
/// 2. every bucket (in parallel) moves its tokens to their word's place, in the order pass 1 left
///    them (corpus order): 2^[`BUCKET_BITS`] streams.
///
/// Memory: a count per (chunk, word), and per piece its arrays plus 8 bytes a token of scratch.
pub struct PdowFiller<'a> {
    shape: &'a PartitionShape,
    docs: Docs<'a>,
    chunks: Vec<std::ops::Range<usize>>,
    /// `counts[c][i]`: chunk c's tokens of the partition's `i`-th word.
    counts: Vec<Vec<u32>>,
    /// The index in `shape.words` of each word id (`u32::MAX`: not in the partition).
    word_index: Vec<u32>,
    /// Pass 1's output: every token of the piece as its position (high bits) and its word's
    /// low bits.
    scratch: Vec<u64>,
}

/// Words per bucket of [`PdowFiller`]'s first pass: 2⁹ = 512 keeps both passes' write streams
/// (a few hundred buckets of a 141K-word partition; 512 words of a bucket) within the L2 cache.
pub const BUCKET_BITS: u32 = 9;

/// Host bytes a token of the piece being sorted needs beside its PDOW arrays ([`PdowFiller`]).
pub const SORT_SCRATCH_BYTES: u64 = 8;

impl<'a> PdowFiller<'a> {
    fn new(shape: &'a PartitionShape, docs: Docs<'a>, chunk: usize) -> Self {
        use rayon::prelude::*;
        let bound = shape.words.last().map_or(0, |&w| w as usize + 1);
        let mut word_index = vec![u32::MAX; bound];
        for (i, &w) in shape.words.iter().enumerate() {
            word_index[w as usize] = i as u32;
        }
        let local = Self::local(shape, docs);
        let chunk = chunk.max(1);
        let chunks: Vec<std::ops::Range<usize>> = (0..local.len())
            .step_by(chunk)
            .map(|s| s..(s + chunk).min(local.len()))
            .collect();
        let n_words = shape.words.len();
        let counts: Vec<Vec<u32>> = chunks
            .par_iter()
            .map(|r| {
                let mut c = vec![0u32; n_words];
                for &w in &local[r.clone()] {
                    c[word_index[w as usize] as usize] += 1;
                }
                c
            })
            .collect();
        Self {
            shape,
            docs,
            chunks,
            counts,
            word_index,
            scratch: Vec::new(),
        }
    }

    /// The sorting scratch, for the next partition's filler.
    pub fn into_scratch(self) -> Vec<u64> {
        self.scratch
    }

    fn local<'d>(shape: &PartitionShape, docs: Docs<'d>) -> &'d [u32] {
        &docs.tokens()[shape.token_start as usize..shape.token_start as usize + shape.num_tokens]
    }

    /// Writes the PDOW entries of the words `piece` (distinct-word indices) into `token_src` and
    /// `token_doc`, as long as the piece's entries.
    pub fn fill(
        &mut self,
        piece: std::ops::Range<usize>,
        token_src: &mut [u32],
        token_doc: &mut [u32],
    ) {
        use rayon::prelude::*;
        if piece.is_empty() {
            return;
        }
        let shape = self.shape;
        let first = shape.word_starts[piece.start];
        let entries = (shape.word_starts[piece.end] - first) as usize;
        assert!(token_src.len() == entries && token_doc.len() == entries);
        let (lo, hi) = (piece.start, piece.end);
        // Buckets b_lo..=b_hi; the piece's entries of bucket b start at `bucket_start[b - b_lo]`.
        let (b_lo, b_hi) = (lo >> BUCKET_BITS, (hi - 1) >> BUCKET_BITS);
        let words_of = |b: usize| (b << BUCKET_BITS).max(lo)..((b + 1) << BUCKET_BITS).min(hi);
        let bucket_start: Vec<usize> = (b_lo..=b_hi + 1)
            .map(|b| (shape.word_starts[(b << BUCKET_BITS).clamp(lo, hi)] - first) as usize)
            .collect();
        // Where each chunk's first token of each bucket goes: the buckets' starts plus the
        // chunks before it.
        let mut at = bucket_start.clone();
        let cursors: Vec<Vec<usize>> = self
            .counts
            .iter()
            .map(|c| {
                let mine: Vec<usize> = at[..at.len() - 1].to_vec();
                for (b, a) in (b_lo..=b_hi).zip(at.iter_mut()) {
                    *a += words_of(b).map(|i| c[i] as usize).sum::<usize>();
                }
                mine
            })
            .collect();

        // Pass 1: chunk → bucket, in corpus order; each entry the token's position (high 48
        // bits) and its word's low bits.
        if self.scratch.len() < entries {
            // First touch in parallel: the pages are faulted in by every thread, not one.
            self.scratch = Vec::new(); // the old one freed before the new one is taken
            self.scratch.reserve_exact(entries);
            self.scratch
                .par_extend(rayon::iter::repeat_n(0u64, entries));
        }
        let local = Self::local(shape, self.docs);
        let word_index = &self.word_index;
        let scratch = SharedMut64(self.scratch.as_mut_ptr());
        let mask = (1usize << BUCKET_BITS) - 1;
        self.chunks
            .par_iter()
            .zip(cursors)
            .for_each(|(r, mut cur)| {
                for (i, &w) in local[r.clone()].iter().enumerate() {
                    let j = word_index[w as usize] as usize;
                    if j < lo || j >= hi {
                        continue;
                    }
                    let b = (j >> BUCKET_BITS) - b_lo;
                    let pos = cur[b];
                    cur[b] += 1;
                    // SAFETY: positions of distinct (chunk, bucket, occurrence) are distinct and
                    // below `entries` (prefix sums of the counts).
                    unsafe { scratch.write(pos, ((r.start + i) as u64) << 16 | (j & mask) as u64) };
                }
            });

        // Pass 2: bucket → word, keeping pass 1's order (so positions ascend within a bucket
        // and the document is found by walking forward).
        let mut out: Vec<(usize, &mut [u32], &mut [u32])> = Vec::with_capacity(b_hi - b_lo + 1);
        let (mut rest_src, mut rest_doc) = (token_src, token_doc);
        for (n, b) in (b_lo..=b_hi).enumerate() {
            let len = bucket_start[n + 1] - bucket_start[n];
            let (s, s_rest) = std::mem::take(&mut rest_src).split_at_mut(len);
            let (d, d_rest) = std::mem::take(&mut rest_doc).split_at_mut(len);
            (rest_src, rest_doc) = (s_rest, d_rest);
            out.push((b, s, d));
        }
        let scratch = &self.scratch;
        // Document offsets relative to the partition's first token.
        let offsets = &self.docs.offsets()[shape.docs.start..=shape.docs.end];
        let token_start = shape.token_start;
        out.into_par_iter()
            .enumerate()
            .for_each(|(n, (b, out_src, out_doc))| {
                let base = bucket_start[n] + first as usize;
                let mut cur = vec![0usize; 1 << BUCKET_BITS];
                for i in words_of(b) {
                    cur[i & mask] = shape.word_starts[i] as usize - base;
                }
                let entries = &scratch[bucket_start[n]..bucket_start[n + 1]];
                // The document of the bucket's first token (not 0: that walk would cost every
                // document once per bucket).
                let mut d = entries.first().map_or(0, |&e| {
                    offsets.partition_point(|&o| o <= token_start + (e >> 16)) - 1
                });
                for &e in entries {
                    let t = token_start + (e >> 16);
                    while offsets[d + 1] <= t {
                        d += 1;
                    }
                    let p = &mut cur[(e & 0xffff) as usize];
                    out_src[*p] = (e >> 16) as u32;
                    out_doc[*p] = d as u32;
                    *p += 1;
                }
            });
    }
}

/// A raw pointer that threads may write through at disjoint indices.
#[derive(Clone, Copy)]
struct SharedMut64(*mut u64);
// SAFETY: every user writes disjoint indices (a stable sort's positions).
unsafe impl Send for SharedMut64 {}
unsafe impl Sync for SharedMut64 {}

impl SharedMut64 {
    /// # Safety
    /// `pos` is in bounds and no other thread writes it.
    #[inline]
    unsafe fn write(self, pos: usize, value: u64) {
        *self.0.add(pos) = value;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use topos_corpus::OwnedDocs;

    #[test]
    fn shapes_and_pieces_fill_the_same_arrays_as_the_layout() {
        // Word 0 frequent, then a tail over several buckets of the sort; empty documents too.
        let docs: OwnedDocs = (0..300u32)
            .map(|d| {
                (0..(d % 37))
                    .map(|i| {
                        if i % 3 == 0 {
                            0
                        } else {
                            (d * 7 + i * 13) % 1999
                        }
                    })
                    .collect::<Vec<u32>>()
            })
            .collect::<Vec<_>>()
            .iter()
            .map(|d| d.as_slice())
            .collect();
        let v = docs.view();
        for parts in [1, 3] {
            let layout = Layout::build(v, parts);
            for p in &layout.partitions {
                let shape = PartitionShape::new(v, p.docs.clone());
                assert_eq!(shape.words, p.words);
                assert_eq!(shape.word_starts, p.word_starts);
                assert_eq!(
                    (shape.token_start, shape.num_tokens),
                    (p.token_start, p.num_tokens)
                );
                for (max, chunk) in [(1, 7), (50, 1000), (700, 333), (1 << 20, 1 << 16)] {
                    let mut filler = PdowFiller::new(&shape, v, chunk);
                    let mut src = vec![0u32; p.num_tokens];
                    let mut doc = vec![0u32; p.num_tokens];
                    for piece in shape.pieces(max) {
                        let r = shape.word_starts[piece.start] as usize
                            ..shape.word_starts[piece.end] as usize;
                        let (s, d) = (&mut src[r.clone()], &mut doc[r]);
                        filler.fill(piece, s, d);
                    }
                    assert_eq!(src, p.token_src, "{parts} partitions, pieces of {max}");
                    assert_eq!(doc, p.token_doc);
                    // The reference: tokens sorted by word, ties in corpus order.
                    let local = &v.tokens()[p.token_start as usize..][..p.num_tokens];
                    let mut reference: Vec<u32> = (0..p.num_tokens as u32).collect();
                    reference.sort_by_key(|&i| local[i as usize]);
                    assert_eq!(src, reference);
                }
            }
        }
    }

    #[test]
    fn pdow_groups_tokens_by_word_and_points_back() {
        let docs: OwnedDocs = [&[3u32, 1, 3][..], &[0, 1], &[], &[2, 2, 2, 0]]
            .into_iter()
            .collect();
        let v = docs.view();
        for parts in 1..=5 {
            let layout = Layout::build(v, parts);
            assert_eq!(layout.num_tokens(), 9);
            let mut seen = [false; 9];
            for p in &layout.partitions {
                for (i, &w) in p.words.iter().enumerate() {
                    for e in p.word_range(i) {
                        let global = p.token_start as usize + p.token_src[e] as usize;
                        assert_eq!(v.tokens()[global], w);
                        let d = p.docs.start + p.token_doc[e] as usize;
                        assert!(v.doc_start(d) as usize <= global);
                        assert!(global < v.doc_start(d + 1) as usize);
                        seen[global] = true;
                    }
                }
                assert!(p.words.windows(2).all(|w| w[0] < w[1]));
            }
            assert!(seen.iter().all(|&s| s));
        }
    }

    #[test]
    fn ranges_are_balanced_and_cover_everything() {
        let docs: OwnedDocs = (0..100u32)
            .map(|i| vec![0u32; (i % 7 + 1) as usize])
            .collect::<Vec<_>>()
            .iter()
            .map(|d| d.as_slice())
            .collect();
        let r = balanced_ranges(docs.view(), 4);
        assert_eq!(r.len(), 4);
        assert_eq!(r[0].start, 0);
        assert_eq!(r.last().unwrap().end, 100);
        let sizes: Vec<u64> = r
            .iter()
            .map(|r| docs.view().doc_start(r.end) - docs.view().doc_start(r.start))
            .collect();
        let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
        // Each cut lands within one document (≤ 7 tokens) of its target.
        assert!(max - min <= 14, "{sizes:?}");
    }
}
