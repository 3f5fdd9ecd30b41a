//! Memory accounting: every large array a CPU run allocates, estimated before training so a run
//! that would not fit is refused with the numbers instead of thrashing (DESIGN.md, "Memory is the
//! budget").

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
/// `k` topics on `threads` threads and `partitions` partitions (the corpus itself is memory-mapped
/// and counted by the page cache, not here).
pub fn estimate(
    tokens: u64,
    docs: u64,
    words: u64,
    k: u64,
    threads: u64,
    partitions: u64,
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
            "per-partition CGS doc rows",
            6 * tokens.min(partitions * tokens),
        ),
        (
            "dense word-topic matrix for the model file (4 B × V × K)",
            4 * words * k,
        ),
    ];
    items.sort_by_key(|i| std::cmp::Reverse(i.1));
    MemoryEstimate { items }
}

/// Memory available to a new allocation on this machine (Linux `MemAvailable`), if known.
pub fn available_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    info.lines()
        .find(|l| l.starts_with("MemAvailable:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<u64>().ok())
        .map(|kb| kb * 1024)
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
        let small = estimate(1_000_000, 1000, 10_000, 100, 2, 4);
        let large = estimate(1_000_000, 1000, 10_000, 10_000, 2, 4);
        assert!(large.total() > small.total());
        assert!(large.total() >= 4 * 10_000 * 10_000);
        assert_eq!(Bytes(1536).to_string(), "1.5 KiB");
        assert_eq!(Bytes(10).to_string(), "10 B");
        assert!(small.describe().contains("assignments"));
    }
}
