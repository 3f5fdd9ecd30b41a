//! Host memory accounting: every large array a run allocates on the host, estimated before
//! training so a run that would not fit is refused with the numbers instead of thrashing
//! (ARCHITECTURE.md, Principles: "Memory is the budget"). Each device gives its own formula
//! ([`crate::device::Device::host_memory`]); the parts every run shares are here.
//!
//! Nothing in a run's host memory grows with V × K: the model is written from sparse rows
//! ([`topos_model::ModelWriter`]) and held-out evaluation reads φ only for the words of the
//! held-out documents ([`topos_model::Phi::builder_for_words`]), sparse above 2²⁸ cells.

use std::fmt;

/// The sizes a memory estimate depends on.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunShape {
    /// Training tokens and documents.
    pub tokens: u64,
    pub docs: u64,
    /// Vocabulary size V.
    pub words: u64,
    /// K.
    pub topics: u64,
    /// Host worker threads.
    pub threads: u64,
    /// Held-out tokens evaluated (0: no held-out evaluation).
    pub heldout_tokens: u64,
    /// Distinct words of the held-out documents (at most V).
    pub heldout_words: u64,
    /// Whether the run writes the training documents' topic counts.
    pub doc_topics: bool,
    /// Whether the run is private (noisy releases of V × K counts).
    pub private: bool,
    /// Processes of the run: with several, `tokens` and `docs` are one process's share, while
    /// the word-topic counts are the whole corpus's.
    pub workers: u64,
}

impl RunShape {
    /// Non-zeros of the word-topic counts: at most one per token, at most V × K.
    pub fn word_topic_nonzeros(&self) -> u64 {
        self.tokens
            .saturating_mul(self.workers.max(1))
            .min(self.words.saturating_mul(self.topics))
    }
}

/// Estimated peak memory of a run, by array.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct MemoryEstimate {
    /// (what, bytes), largest items first.
    pub items: Vec<(&'static str, u64)>,
}

impl MemoryEstimate {
    /// An estimate of `items`, sorted largest first.
    pub fn new(mut items: Vec<(&'static str, u64)>) -> Self {
        items.retain(|i| i.1 > 0);
        items.sort_by_key(|i| std::cmp::Reverse(i.1));
        Self { items }
    }

    /// Total bytes.
    pub fn total(&self) -> u64 {
        self.items.iter().map(|i| i.1).sum()
    }

    /// One line, for printing.
    pub fn describe(&self) -> String {
        self.items
            .iter()
            .map(|(what, b)| format!("{what}: {}", Bytes(*b)))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// What every run holds on the host whatever its device: the program itself (64 MiB), the corpus
/// file's pages (memory-mapped:
/// 4 B a token and 8 B a document are read, and counted in the process's resident memory), the
/// word-topic rows read back for the model file and held-out evaluation (a piece of 1,024 words
/// at a time, 6 B a non-zero), φ of the held-out words (4 B × K each and a sampling tree of about as much, built as
/// words are met; sparse above 2²⁸ cells), a private run's releases (a dense V × K copy to add noise to, 4 B a cell, and
/// the noisy rows, 6 B a cell: noise fills most cells) and the document-topic side file's
/// offsets (8 B a document).
pub fn shared_items(shape: &RunShape) -> Vec<(&'static str, u64)> {
    let s = shape;
    let mut items = vec![
        ("program, libraries, thread stacks", 64 << 20),
        (
            "corpus (memory-mapped, 4 B/token)",
            4 * (s.tokens + s.heldout_tokens) + 8 * s.docs,
        ),
        (
            "word-topic rows read back, 1,024 words at a time (6 B/non-zero)",
            6 * s.word_topic_nonzeros().min(1024 * s.topics) + 8 * 1025,
        ),
    ];
    if s.heldout_tokens > 0 {
        let words = s.heldout_words.min(s.words);
        if topos_model::phi::dense_phi(s.words as usize, s.topics as usize) {
            // 4 B a topic for φ and about 4.2 B for a word's 32-ary tree (levels of K, K/32, …).
            items.push((
                "φ and sampling trees of the held-out words (8.5 B × K each)",
                words * s.topics * 17 / 2,
            ));
        } else {
            items.push((
                "sparse φ of the held-out words (6 B/non-zero)",
                6 * s.word_topic_nonzeros().min(words * s.topics) + 16 * words + 16 * s.topics,
            ));
        }
    }
    if s.private {
        items.push((
            "capped training documents (4 B/token)",
            4 * s.tokens + 8 * s.docs,
        ));
    }
    if s.private {
        items.push(("noisy releases (10 B × V × K)", 10 * s.words * s.topics));
    }
    if s.doc_topics {
        items.push(("document-topic offsets (8 B/document)", 8 * s.docs));
    }
    items
}

/// Parses a byte size (`--gpu-memory`): a number with an optional unit B, K/KB/KiB, M/MB/MiB,
/// G/GB/GiB or T/TB/TiB (all binary multiples).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a size; write e.g. 20GiB, 512MiB or 1073741824"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        other => {
            return Err(format!(
                "unknown size unit {other:?} in {s:?}; use B, KiB, MiB, GiB or TiB"
            ))
        }
    };
    let bytes = value * (1u64 << shift) as f64;
    if !(1.0..1.8e19).contains(&bytes) {
        return Err(format!("{s:?} is not a usable size"));
    }
    Ok(bytes as u64)
}

/// A byte count formatted as B / KiB / MiB / GiB.
#[derive(Clone, Copy, Debug)]
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
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_bytes("20GiB"), Ok(20 << 30));
        assert_eq!(parse_bytes("20G"), Ok(20 << 30));
        assert_eq!(parse_bytes("512 MiB"), Ok(512 << 20));
        assert_eq!(parse_bytes("1.5gb"), Ok(3 << 29));
        assert_eq!(parse_bytes("4096"), Ok(4096));
        for bad in ["", "GiB", "0", "-3G", "2 parsecs", "1e400"] {
            assert!(parse_bytes(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn bytes_format() {
        assert_eq!(Bytes(1536).to_string(), "1.5 KiB");
        assert_eq!(Bytes(10).to_string(), "10 B");
        let e = MemoryEstimate::new(vec![("a", 1), ("b", 3), ("c", 0)]);
        assert_eq!(e.total(), 4);
        assert_eq!(e.describe(), "b: 3 B, a: 1 B");
    }
}
