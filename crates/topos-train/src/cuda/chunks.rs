//! Host-side arrays of one chunk, from its PDOW shape (SaberLDA §3.1.4): the list of work items
//! (one thread block each), ordered by token count so that the largest start first and the tail
//! of small words fills in behind them (CuLDA_CGS §6.1.2), with very frequent words split across
//! blocks (ezLDA §1.5.1), and the documents' token offsets.

use super::plan::ITEM_MAX_TOKENS;
use crate::layout::PartitionShape;
use topos_corpus::Docs;

/// A work item: the word, the first PDOW entry, the number of entries, padding (a `uint4` on the
/// device).
pub type Item = [u32; 4];

/// Work items of a partition, largest first (ties by word, so the order is a function of the
/// partition alone).
pub fn items(p: &PartitionShape, max_tokens: u32) -> Vec<Item> {
    let max_tokens = max_tokens.max(1);
    let mut out = Vec::with_capacity(p.words.len());
    for (i, &w) in p.words.iter().enumerate() {
        let r = p.word_range(i);
        let (mut start, end) = (r.start as u32, r.end as u32);
        // Split into near-equal pieces of at most max_tokens.
        let len = end - start;
        let pieces = len.div_ceil(max_tokens).max(1);
        for j in 0..pieces {
            let next =
                r.start as u32 + ((u64::from(len) * u64::from(j + 1)) / u64::from(pieces)) as u32;
            out.push([w, start, next - start, 0]);
            start = next;
        }
    }
    out.sort_by(|a, b| b[2].cmp(&a[2]).then(a[0].cmp(&b[0])).then(a[1].cmp(&b[1])));
    out
}

/// Default largest item.
pub fn default_items(p: &PartitionShape) -> Vec<Item> {
    items(p, ITEM_MAX_TOKENS as u32)
}

/// Token offsets of the partition's documents relative to its first token, one more than
/// documents.
pub fn doc_offsets(docs: Docs<'_>, p: &PartitionShape) -> Vec<u32> {
    let offsets = docs.offsets();
    offsets[p.docs.start..=p.docs.end]
        .iter()
        .map(|&o| (o - p.token_start) as u32)
        .collect()
}

/// Tokens of the longest document.
pub fn longest_document(docs: Docs<'_>) -> u64 {
    docs.offsets()
        .windows(2)
        .map(|w| w[1] - w[0])
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::{Layout, PartitionShape};
    use topos_corpus::OwnedDocs;

    fn corpus() -> OwnedDocs {
        let mut docs: Vec<Vec<u32>> = Vec::new();
        for d in 0..50u32 {
            let mut doc = vec![0u32; 40]; // word 0 is very frequent
            doc.extend((0..(d % 7)).map(|i| 1 + (d + i) % 13));
            docs.push(doc);
        }
        docs.iter().map(|d| d.as_slice()).collect()
    }

    #[test]
    fn items_cover_every_token_once_largest_first() {
        let docs = corpus();
        let layout = Layout::build(docs.view(), 3);
        for p in &layout.partitions {
            let its = items(&PartitionShape::new(docs.view(), p.docs.clone()), 64);
            let mut seen = vec![false; p.num_tokens];
            for it in &its {
                assert!(it[2] > 0 && it[2] <= 64, "{it:?}");
                let wi = p.words.binary_search(&it[0]).unwrap();
                let r = p.word_range(wi);
                assert!(r.start as u32 <= it[1] && it[1] + it[2] <= r.end as u32);
                for e in it[1]..it[1] + it[2] {
                    assert!(!seen[e as usize]);
                    seen[e as usize] = true;
                }
            }
            assert!(seen.iter().all(|&s| s));
            assert!(its.windows(2).all(|w| w[0][2] >= w[1][2]));
            // Word 0 has hundreds of tokens per partition: split into near-equal pieces.
            let zero: Vec<u32> = its.iter().filter(|i| i[0] == 0).map(|i| i[2]).collect();
            assert!(zero.len() > 1);
            assert!(zero.iter().max().unwrap() - zero.iter().min().unwrap() <= 1);
        }
    }

    #[test]
    fn offsets_are_local_and_end_at_the_partition_size() {
        let docs = corpus();
        let layout = Layout::build(docs.view(), 4);
        for p in &layout.partitions {
            let off = doc_offsets(
                docs.view(),
                &PartitionShape::new(docs.view(), p.docs.clone()),
            );
            assert_eq!(off.len(), p.docs.len() + 1);
            assert_eq!(off[0], 0);
            assert_eq!(*off.last().unwrap() as usize, p.num_tokens);
        }
        assert_eq!(longest_document(docs.view()), 46);
    }
}
