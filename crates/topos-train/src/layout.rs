//! The PDOW layout: partition by document, order by word (SaberLDA §3.1.4).
//!
//! Documents are cut into contiguous partitions balanced by token count; inside a partition the
//! tokens are visited word after word, so the word's row of the word-topic counts (and the
//! structures built from it) is loaded once and stays in cache for all its tokens, while the
//! document rows are read in a scattered but sparse way. The assignments `z` themselves stay in
//! document order (the corpus order), which is what checkpoints store and what makes the state
//! independent of the layout: a token's PDOW entry points back to its position there.

use topos_corpus::Docs;

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
    pub fn build(docs: Docs<'_>, num_partitions: usize) -> Self {
        use rayon::prelude::*;
        let total = docs.num_tokens();
        let wanted = num_partitions
            .max(1)
            .max(total.div_ceil(MAX_PARTITION_TOKENS) as usize)
            .min(docs.len().max(1));
        let ranges = balanced_ranges(docs, wanted);
        let partitions = ranges
            .into_par_iter()
            .map(|r| build_partition(docs, r))
            .collect();
        Self { partitions }
    }

    /// Number of tokens in all partitions.
    pub fn num_tokens(&self) -> u64 {
        self.partitions.iter().map(|p| p.num_tokens as u64).sum()
    }
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

fn build_partition(docs: Docs<'_>, range: std::ops::Range<usize>) -> Partition {
    let token_start = docs.doc_start(range.start);
    let token_end = docs.doc_start(range.end);
    let num_tokens = (token_end - token_start) as usize;
    // Counting sort by word: stable, so within a word tokens stay in corpus order.
    let mut words: Vec<u32> = Vec::new();
    let local = &docs.tokens()[token_start as usize..token_end as usize];
    let max_word = local.iter().copied().max().map_or(0, |w| w as usize + 1);
    let mut count = vec![0u32; max_word + 1];
    for &w in local {
        count[w as usize] += 1;
    }
    let mut word_starts = vec![0u32];
    let mut slot = vec![u32::MAX; max_word];
    let mut acc = 0u32;
    for (w, &c) in count.iter().enumerate().take(max_word) {
        if c > 0 {
            slot[w] = acc;
            words.push(w as u32);
            acc += c;
            word_starts.push(acc);
        }
    }
    let mut token_src = vec![0u32; num_tokens];
    let mut token_doc = vec![0u32; num_tokens];
    for d in range.clone() {
        let doc_local = (d - range.start) as u32;
        let base = docs.doc_start(d) - token_start;
        for (i, &w) in docs.doc(d).iter().enumerate() {
            let s = &mut slot[w as usize];
            token_src[*s as usize] = (base + i as u64) as u32;
            token_doc[*s as usize] = doc_local;
            *s += 1;
        }
    }
    Partition {
        docs: range,
        token_start,
        num_tokens,
        words,
        word_starts,
        token_src,
        token_doc,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use topos_corpus::OwnedDocs;

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
