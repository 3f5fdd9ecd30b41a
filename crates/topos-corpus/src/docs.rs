//! Documents as compressed sparse rows: `tokens[offsets[d]..offsets[d + 1]]` are the word ids of
//! document `d`, in the order they occur. Offsets are 64-bit so corpora beyond 2³² tokens work.

/// A borrowed CSR view of documents (from a memory-mapped corpus file or from [`OwnedDocs`]).
#[derive(Clone, Copy, Debug)]
pub struct Docs<'a> {
    offsets: &'a [u64],
    tokens: &'a [u32],
}

impl<'a> Docs<'a> {
    /// A view over `offsets` (length = documents + 1, starting at 0, non-decreasing, ending at
    /// `tokens.len()`) and `tokens`.
    ///
    /// # Panics
    /// If the offsets do not describe `tokens` (callers that read untrusted files validate first).
    pub fn new(offsets: &'a [u64], tokens: &'a [u32]) -> Self {
        assert!(!offsets.is_empty(), "offsets need a leading 0");
        assert_eq!(offsets[0], 0);
        assert_eq!(*offsets.last().unwrap(), tokens.len() as u64);
        debug_assert!(offsets.windows(2).all(|w| w[0] <= w[1]));
        Self { offsets, tokens }
    }

    /// Number of documents.
    #[inline]
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Whether there are no documents.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Total number of tokens.
    #[inline]
    pub fn num_tokens(&self) -> u64 {
        self.tokens.len() as u64
    }

    /// Word ids of document `d`.
    #[inline]
    pub fn doc(&self, d: usize) -> &'a [u32] {
        &self.tokens[self.offsets[d] as usize..self.offsets[d + 1] as usize]
    }

    /// Index of the first token of document `d` in [`Docs::tokens`].
    #[inline]
    pub fn doc_start(&self, d: usize) -> u64 {
        self.offsets[d]
    }

    /// The offsets array.
    #[inline]
    pub fn offsets(&self) -> &'a [u64] {
        self.offsets
    }

    /// All tokens, document after document.
    #[inline]
    pub fn tokens(&self) -> &'a [u32] {
        self.tokens
    }

    /// Iterates over documents.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &'a [u32]> + 'a {
        let this = *self;
        (0..this.len()).map(move |d| this.doc(d))
    }

    /// Largest word id plus one (0 for an empty corpus).
    pub fn max_word_id_bound(&self) -> u32 {
        self.tokens.iter().max().map_or(0, |&w| w + 1)
    }
}

/// Documents owned in memory, built one document at a time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedDocs {
    offsets: Vec<u64>,
    tokens: Vec<u32>,
}

impl Default for OwnedDocs {
    fn default() -> Self {
        Self::new()
    }
}

impl OwnedDocs {
    /// No documents.
    pub fn new() -> Self {
        Self {
            offsets: vec![0],
            tokens: Vec::new(),
        }
    }

    /// From raw parts (same invariants as [`Docs::new`]).
    pub fn from_parts(offsets: Vec<u64>, tokens: Vec<u32>) -> Self {
        let _ = Docs::new(&offsets, &tokens);
        Self { offsets, tokens }
    }

    /// Appends a document.
    pub fn push(&mut self, words: &[u32]) {
        self.tokens.extend_from_slice(words);
        self.offsets.push(self.tokens.len() as u64);
    }

    /// Appends a document given as runs (word, count): each word repeated count times, with no
    /// intermediate copy of the document.
    pub fn push_runs(&mut self, runs: impl IntoIterator<Item = (u32, u32)>) {
        for (w, c) in runs {
            self.tokens.extend(std::iter::repeat_n(w, c as usize));
        }
        self.offsets.push(self.tokens.len() as u64);
    }

    /// A borrowed view.
    pub fn view(&self) -> Docs<'_> {
        Docs {
            offsets: &self.offsets,
            tokens: &self.tokens,
        }
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Whether there are no documents.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The raw parts.
    pub fn into_parts(self) -> (Vec<u64>, Vec<u32>) {
        (self.offsets, self.tokens)
    }
}

impl<'a> FromIterator<&'a [u32]> for OwnedDocs {
    fn from_iter<I: IntoIterator<Item = &'a [u32]>>(iter: I) -> Self {
        let mut d = OwnedDocs::new();
        for doc in iter {
            d.push(doc);
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csr_roundtrip() {
        let mut o = OwnedDocs::new();
        o.push(&[1, 2, 3]);
        o.push(&[]);
        o.push(&[7]);
        let v = o.view();
        assert_eq!(v.len(), 3);
        assert_eq!(v.num_tokens(), 4);
        assert_eq!(v.doc(0), &[1, 2, 3]);
        assert!(v.doc(1).is_empty());
        assert_eq!(v.doc(2), &[7]);
        assert_eq!(v.doc_start(2), 3);
        assert_eq!(v.max_word_id_bound(), 8);
        assert_eq!(v.iter().count(), 3);
    }
}
