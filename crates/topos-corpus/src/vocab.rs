//! The vocabulary: word id ↔ word. Ids are ordered by descending corpus frequency when a corpus is
//! prepared, so id 0 is the most frequent word.

use std::collections::HashMap;

/// Words indexed by id, with a reverse index.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Vocabulary {
    words: Vec<String>,
    index: HashMap<String, u32>,
}

impl Vocabulary {
    /// A vocabulary over `words` (id = position). Duplicate words keep their first id.
    pub fn new(words: Vec<String>) -> Self {
        let mut index = HashMap::with_capacity(words.len());
        for (i, w) in words.iter().enumerate() {
            index.entry(w.clone()).or_insert(i as u32);
        }
        Self { words, index }
    }

    /// Number of words.
    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// Whether there are no words.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// The word with id `id`.
    pub fn word(&self, id: u32) -> &str {
        &self.words[id as usize]
    }

    /// The id of `word`, if known.
    pub fn id(&self, word: &str) -> Option<u32> {
        self.index.get(word).copied()
    }

    /// The first id whose word already appeared under a smaller id (a valid vocabulary has none).
    pub fn first_duplicate(&self) -> Option<u32> {
        if self.index.len() == self.words.len() {
            return None;
        }
        (0..self.words.len() as u32).find(|&i| self.index[&self.words[i as usize]] != i)
    }

    /// All words in id order.
    pub fn words(&self) -> &[String] {
        &self.words
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_duplicates() {
        let v = Vocabulary::new(vec!["a".into(), "b".into(), "c".into()]);
        assert_eq!(
            (v.id("b"), v.word(2), v.first_duplicate()),
            (Some(1), "c", None)
        );
        let d = Vocabulary::new(vec!["a".into(), "b".into(), "a".into()]);
        assert_eq!((d.id("a"), d.first_duplicate()), (Some(0), Some(2)));
    }
}
