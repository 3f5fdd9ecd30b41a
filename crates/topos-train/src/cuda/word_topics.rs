//! How the word-topic counts B are stored on the device: dense (V × K cells) or hybrid, ezLDA's
//! format (thesis §1.4.2): a word cannot have more non-zero topics than it has tokens, so a word
//! with fewer tokens than about K/2 gets a small hashed row, the others a dense row of K counts.
//!
//! At K = 32,768 and PubMed's 141K words the dense counts are 2 × 18.5 GB (B and B′); hybrid,
//! they shrink to the dense rows of the few thousand frequent words plus at most 16 bytes per
//! token of the rest. Sampling does not change: the kernel scatters a hashed row into the word's
//! leaves of p*(k) in shared memory, so both formats give the same draws bit for bit (a GPU test
//! checks it).
//!
//! A hashed row of a word with n tokens has `(2n).next_power_of_two()` slots (load factor at most
//! ½, the same as the doc-topic rebuild's tables): open addressing with linear probing, a slot is
//! `(topic + 1) << 16 | count` and 0 is empty. Counts fit 16 bits because such a word has fewer
//! than K / 2 < 32,768 tokens, and topic + 1 does because K ≤ 65,535.

use std::fmt;

/// The storage of B.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WordTopicFormat {
    /// A row of K counts per word.
    Dense,
    /// Dense rows for words with about K/2 tokens or more, hashed rows for the rest.
    Hybrid,
}

impl fmt::Display for WordTopicFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WordTopicFormat::Dense => "dense",
            WordTopicFormat::Hybrid => "hybrid",
        })
    }
}

impl std::str::FromStr for WordTopicFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "dense" => Ok(WordTopicFormat::Dense),
            "hybrid" => Ok(WordTopicFormat::Hybrid),
            other => Err(format!(
                "unknown word-topic format {other:?}: use dense or hybrid"
            )),
        }
    }
}

/// Slots of a hashed row for a word of `tokens` tokens (0 for a word with none: nothing reads or
/// writes its row).
pub fn hashed_slots(tokens: u64) -> u64 {
    if tokens == 0 {
        0
    } else {
        (2 * tokens).next_power_of_two()
    }
}

/// Whether a word of `tokens` tokens gets a dense row in the hybrid format: when its hashed row
/// would be no smaller than K counts.
pub fn dense_in_hybrid(tokens: u64, topics: u32) -> bool {
    hashed_slots(tokens) >= u64::from(topics)
}

/// Device cells (u32) of B in each format, for the planner.
pub fn cells(word_tokens: &[u64], topics: u32, format: WordTopicFormat) -> u64 {
    let k = u64::from(topics);
    match format {
        WordTopicFormat::Dense => word_tokens.len() as u64 * k,
        WordTopicFormat::Hybrid => word_tokens
            .iter()
            .map(|&n| {
                if dense_in_hybrid(n, topics) {
                    k
                } else {
                    hashed_slots(n)
                }
            })
            .sum(),
    }
}

/// Where each word's row lives in the device array. Dense rows come first, in word order, so that
/// the topic totals are the column sums of a `dense_rows × K` matrix plus the hashed entries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WordTopicLayout {
    pub format: WordTopicFormat,
    pub topics: u32,
    /// Number of dense rows (cells `0 .. dense_rows × K`).
    pub dense_rows: u32,
    /// Per word: the first cell of its row.
    pub offsets: Vec<u64>,
    /// Per word: the cells of its row; K for a dense row, a power of two below K for a hashed one.
    pub slots: Vec<u32>,
    /// Cells in all.
    pub cells: u64,
}

impl WordTopicLayout {
    /// The layout for words with `word_tokens[w]` training tokens each.
    pub fn new(word_tokens: &[u64], topics: u32, format: WordTopicFormat) -> Self {
        let k = u64::from(topics);
        let dense: Vec<bool> = word_tokens
            .iter()
            .map(|&n| format == WordTopicFormat::Dense || dense_in_hybrid(n, topics))
            .collect();
        let dense_rows = dense.iter().filter(|&&d| d).count() as u64;
        let mut offsets = Vec::with_capacity(word_tokens.len());
        let mut slots = Vec::with_capacity(word_tokens.len());
        let (mut next_dense, mut next_hashed) = (0u64, dense_rows * k);
        for (&n, &d) in word_tokens.iter().zip(&dense) {
            if d {
                offsets.push(next_dense);
                slots.push(topics);
                next_dense += k;
            } else {
                let s = hashed_slots(n);
                offsets.push(next_hashed);
                slots.push(s as u32);
                next_hashed += s;
            }
        }
        Self {
            format,
            topics,
            dense_rows: dense_rows as u32,
            offsets,
            slots,
            cells: next_hashed,
        }
    }

    /// Cells of the hashed rows.
    pub fn hashed_cells(&self) -> u64 {
        self.cells - u64::from(self.dense_rows) * u64::from(self.topics)
    }
}

/// Training tokens of every word. (Not the corpus file's `word_frequencies`: those include the
/// held-out documents, and a GPU session sees only the training documents.)
pub fn word_tokens(docs: topos_corpus::Docs<'_>, num_words: usize) -> Vec<u64> {
    crate::layout::word_counts(docs.tokens(), num_words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashed_rows_hold_every_topic_a_word_can_have() {
        assert_eq!(hashed_slots(0), 0);
        assert_eq!(hashed_slots(1), 2);
        assert_eq!(hashed_slots(3), 8);
        assert_eq!(hashed_slots(4), 8);
        // A word of n tokens has at most n distinct topics: load factor at most 1/2.
        for n in 1..5000u64 {
            assert!(hashed_slots(n) >= 2 * n && hashed_slots(n) < 4 * n);
        }
    }

    #[test]
    fn a_row_is_dense_when_hashing_saves_nothing() {
        // K = 1,000: 250 tokens hash into 512 slots, 300 would need 1,024 ≥ K.
        assert!(!dense_in_hybrid(250, 1000));
        assert!(dense_in_hybrid(300, 1000));
        // Counts of hashed rows fit 16 bits at the largest K.
        let most = (1..40_000u64)
            .filter(|&n| !dense_in_hybrid(n, 65_535))
            .max()
            .unwrap();
        assert!(most < 1 << 16);
    }

    #[test]
    fn layout_puts_dense_rows_first_in_word_order() {
        let tokens = [5000, 3, 0, 700, 1];
        let l = WordTopicLayout::new(&tokens, 1024, WordTopicFormat::Hybrid);
        assert_eq!(l.dense_rows, 2);
        assert_eq!(l.slots, vec![1024, 8, 0, 1024, 2]);
        assert_eq!(l.offsets, vec![0, 2048, 2056, 1024, 2056]);
        assert_eq!(l.cells, 2048 + 8 + 2);
        assert_eq!(l.hashed_cells(), 10);
        assert_eq!(l.cells, cells(&tokens, 1024, WordTopicFormat::Hybrid));

        let d = WordTopicLayout::new(&tokens, 1024, WordTopicFormat::Dense);
        assert_eq!(d.dense_rows, 5);
        assert_eq!(d.offsets, vec![0, 1024, 2048, 3072, 4096]);
        assert_eq!(d.cells, 5 * 1024);
        assert_eq!(d.cells, cells(&tokens, 1024, WordTopicFormat::Dense));
    }

    #[test]
    fn hybrid_shrinks_a_zipfian_vocabulary_at_large_k() {
        // 100K words, Zipf(1) over 100M tokens, K = 32,768.
        let h: f64 = (1..=100_000).map(|r| 1.0 / r as f64).sum();
        let tokens: Vec<u64> = (1..=100_000u64)
            .map(|r| (1e8 / (h * r as f64)) as u64)
            .collect();
        let dense = cells(&tokens, 32_768, WordTopicFormat::Dense);
        let hybrid = cells(&tokens, 32_768, WordTopicFormat::Hybrid);
        assert!(hybrid * 10 < dense, "{hybrid} vs {dense}");
    }

    #[test]
    fn formats_parse_and_print() {
        for f in [WordTopicFormat::Dense, WordTopicFormat::Hybrid] {
            assert_eq!(f.to_string().parse::<WordTopicFormat>().unwrap(), f);
        }
        assert!("sparse".parse::<WordTopicFormat>().is_err());
    }
}
