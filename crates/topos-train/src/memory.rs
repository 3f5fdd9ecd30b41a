//! Memory accounting: every large array a CPU run allocates, estimated before training so a run
//! that would not fit is refused with the numbers instead of thrashing (DESIGN.md, "Memory is the
//! budget").

use crate::Algorithm;
use std::fmt;

/// Estimated peak memory of a training run, by array.
#[derive(Clone, Debug, Default)]
pub struct MemoryEstimate {
    /// (what, bytes), largest items first.
    pub items: Vec<(&'static str, u64)>,
}

impl MemoryEstimate {
    /// Total bytes.
    pub fn total(&self) -> u64 {
        self.items.iter().map(|i| i.1).sum()
    }

    /// One line per item, for printing.
    pub fn describe(&self) -> String {
        self.items
            .iter()
            .map(|(what, b)| format!("{what}: {}", Bytes(*b)))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Estimates the memory of training `tokens` tokens in `docs` documents over `words` words with
/// `k` topics on `threads` threads with `algorithm` (the corpus itself is memory-mapped and
/// counted by the page cache, not here).
pub fn estimate(
    algorithm: Algorithm,
    tokens: u64,
    docs: u64,
    words: u64,
    k: u64,
    threads: u64,
) -> MemoryEstimate {
    let nnz_doc = tokens; // at most one non-zero per token
    let nnz_word = tokens.min(words * k);
    let mut items = vec![
        ("assignments (2 B/token)", 2 * tokens),
        (
            "PDOW layout (8 B/token)",
            8 * tokens + 8 * words.min(tokens) * 2,
        ),
        (
            "doc-topic rows (6 B/non-zero)",
            6 * nnz_doc + 8 * (docs + 1),
        ),
        (
            "word-topic rows (6 B/non-zero)",
            6 * nnz_word + 8 * (words + 1),
        ),
        ("per-thread scratch", threads.max(1) * k * 40),
        (
            "dense word-topic matrix for the model file (4 B × V × K)",
            4 * words * k,
        ),
    ];
    items.push(("φ for held-out evaluation (4 B × V × K)", 4 * words * k));
    if algorithm == Algorithm::Cgs {
        // Every partition being sampled holds updatable copies of its words' rows, with room
        // for one new topic per token (a bound: 6 B per non-zero and per token, 8 B per word).
        items.push((
            "CGS partition word rows",
            6 * tokens + threads.max(1) * (6 * nnz_word + 8 * words),
        ));
    }
    items.sort_by_key(|i| std::cmp::Reverse(i.1));
    MemoryEstimate { items }
}

/// A byte count formatted as B / KiB / MiB / GiB.
pub struct Bytes(pub u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"];
        let mut x = self.0 as f64;
        let mut u = 0;
        while x >= 1024.0 && u < units.len() - 1 {
            x /= 1024.0;
            u += 1;
        }
        if u == 0 {
            write!(f, "{} B", self.0)
        } else {
            write!(f, "{x:.1} {}", units[u])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_grows_with_k_and_formats() {
        let small = estimate(Algorithm::Esca, 1_000_000, 1000, 10_000, 100, 2);
        let large = estimate(Algorithm::Esca, 1_000_000, 1000, 10_000, 10_000, 2);
        let cgs = estimate(Algorithm::Cgs, 1_000_000, 1000, 10_000, 100, 2);
        assert!(cgs.total() > small.total());
        assert!(large.total() > small.total());
        assert!(large.total() >= 4 * 10_000 * 10_000);
        assert_eq!(Bytes(1536).to_string(), "1.5 KiB");
        assert_eq!(Bytes(10).to_string(), "10 B");
        assert!(small.describe().contains("assignments"));
    }
}
