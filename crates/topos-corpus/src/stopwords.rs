//! Stop words: function words that occur everywhere and so carry no topic. Left in, they become the
//! top words of every topic.
//!
//! The built-in English list is the Glasgow Information Retrieval Group list as shipped by
//! scikit-learn (`ENGLISH_STOP_WORDS`), with two changes:
//! * four content words of that list are removed (`bill`, `fire`, `interest`, `system`): they name
//!   topics in news and science corpora ("interest rates", "immune system");
//! * contractions and the missing forms of *be/do/have* are added, because the tokenizer keeps
//!   apostrophes inside words (`don't` is one token).
//!
//! Words of the list shorter than the minimum token length are dropped by that rule anyway; they
//! are kept so that the list stays correct with `min_len = 1`.

use crate::CorpusError;
use rustc_hash::FxHashSet;
use std::io::BufRead;
use std::path::Path;

/// The built-in English stop-word list, lower-case, sorted.
pub const ENGLISH: &[&str] = &[
    "a",
    "about",
    "above",
    "across",
    "after",
    "afterwards",
    "again",
    "against",
    "ain't",
    "all",
    "almost",
    "alone",
    "along",
    "already",
    "also",
    "although",
    "always",
    "am",
    "among",
    "amongst",
    "amoungst",
    "amount",
    "an",
    "and",
    "another",
    "any",
    "anyhow",
    "anyone",
    "anything",
    "anyway",
    "anywhere",
    "are",
    "aren't",
    "around",
    "as",
    "at",
    "back",
    "be",
    "became",
    "because",
    "become",
    "becomes",
    "becoming",
    "been",
    "before",
    "beforehand",
    "behind",
    "being",
    "below",
    "beside",
    "besides",
    "between",
    "beyond",
    "both",
    "bottom",
    "but",
    "by",
    "call",
    "can",
    "can't",
    "cannot",
    "cant",
    "co",
    "con",
    "could",
    "couldn't",
    "couldnt",
    "cry",
    "de",
    "describe",
    "detail",
    "did",
    "didn't",
    "do",
    "does",
    "doesn't",
    "doing",
    "don't",
    "done",
    "down",
    "due",
    "during",
    "each",
    "eg",
    "eight",
    "either",
    "eleven",
    "else",
    "elsewhere",
    "empty",
    "enough",
    "etc",
    "even",
    "ever",
    "every",
    "everyone",
    "everything",
    "everywhere",
    "except",
    "few",
    "fifteen",
    "fifty",
    "fill",
    "find",
    "first",
    "five",
    "for",
    "former",
    "formerly",
    "forty",
    "found",
    "four",
    "from",
    "front",
    "full",
    "further",
    "get",
    "give",
    "go",
    "had",
    "hadn't",
    "has",
    "hasn't",
    "hasnt",
    "have",
    "haven't",
    "having",
    "he",
    "he'd",
    "he'll",
    "hence",
    "her",
    "here",
    "hereafter",
    "hereby",
    "herein",
    "hereupon",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "however",
    "hundred",
    "i",
    "i'd",
    "i'll",
    "i'm",
    "i've",
    "ie",
    "if",
    "in",
    "inc",
    "indeed",
    "into",
    "is",
    "isn't",
    "it",
    "it'll",
    "its",
    "itself",
    "keep",
    "last",
    "latter",
    "latterly",
    "least",
    "less",
    "let",
    "ltd",
    "made",
    "many",
    "may",
    "me",
    "meanwhile",
    "might",
    "mill",
    "mine",
    "more",
    "moreover",
    "most",
    "mostly",
    "move",
    "much",
    "must",
    "mustn't",
    "my",
    "myself",
    "name",
    "namely",
    "neither",
    "never",
    "nevertheless",
    "next",
    "nine",
    "no",
    "nobody",
    "none",
    "noone",
    "nor",
    "not",
    "nothing",
    "now",
    "nowhere",
    "of",
    "off",
    "often",
    "on",
    "once",
    "one",
    "only",
    "onto",
    "or",
    "other",
    "others",
    "otherwise",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "part",
    "per",
    "perhaps",
    "please",
    "put",
    "rather",
    "re",
    "same",
    "see",
    "seem",
    "seemed",
    "seeming",
    "seems",
    "serious",
    "several",
    "shan't",
    "she",
    "she'd",
    "she'll",
    "should",
    "shouldn't",
    "show",
    "side",
    "since",
    "sincere",
    "six",
    "sixty",
    "so",
    "some",
    "somehow",
    "someone",
    "something",
    "sometime",
    "sometimes",
    "somewhere",
    "still",
    "such",
    "take",
    "ten",
    "than",
    "that",
    "the",
    "their",
    "them",
    "themselves",
    "then",
    "thence",
    "there",
    "thereafter",
    "thereby",
    "therefore",
    "therein",
    "thereupon",
    "these",
    "they",
    "they'd",
    "they'll",
    "they're",
    "they've",
    "thick",
    "thin",
    "third",
    "this",
    "those",
    "though",
    "three",
    "through",
    "throughout",
    "thru",
    "thus",
    "to",
    "together",
    "too",
    "top",
    "toward",
    "towards",
    "twelve",
    "twenty",
    "two",
    "un",
    "under",
    "until",
    "up",
    "upon",
    "us",
    "very",
    "via",
    "was",
    "wasn't",
    "we",
    "we'd",
    "we'll",
    "we're",
    "we've",
    "well",
    "were",
    "weren't",
    "what",
    "whatever",
    "when",
    "whence",
    "whenever",
    "where",
    "whereafter",
    "whereas",
    "whereby",
    "wherein",
    "whereupon",
    "wherever",
    "whether",
    "which",
    "while",
    "whither",
    "who",
    "whoever",
    "whole",
    "whom",
    "whose",
    "why",
    "will",
    "with",
    "within",
    "without",
    "won't",
    "would",
    "wouldn't",
    "yet",
    "you",
    "you'd",
    "you'll",
    "you're",
    "you've",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// A set of stop words.
#[derive(Clone, Debug, Default)]
pub struct StopWords {
    words: FxHashSet<String>,
    /// Bytes of the longest word: longer tokens skip the lookup (most content words).
    max_len: usize,
}

impl StopWords {
    /// No stop words.
    pub fn new() -> Self {
        Self::default()
    }

    /// The built-in English list.
    pub fn english() -> Self {
        let mut s = Self::new();
        s.extend(ENGLISH.iter().map(|w| w.to_string()));
        s
    }

    /// The built-in list of `language` ([`Language::stop_words`]).
    pub fn of(language: crate::Language) -> Self {
        let mut s = Self::new();
        s.extend(language.stop_words().iter().map(|w| w.to_string()));
        s
    }

    /// Adds words.
    pub fn extend(&mut self, words: impl IntoIterator<Item = String>) {
        for w in words {
            self.insert(w);
        }
    }

    fn insert(&mut self, w: String) {
        self.max_len = self.max_len.max(w.len());
        self.words.insert(w);
    }

    /// Adds the words of a user file: one word per line (or several separated by white space);
    /// blank lines and lines starting with `#` are ignored. With `lowercase`, words are
    /// lower-cased so that they match lower-cased tokens.
    pub fn add_file(&mut self, path: &Path, lowercase: bool) -> Result<(), CorpusError> {
        for w in Self::file_words(path, lowercase)? {
            self.insert(w);
        }
        Ok(())
    }

    /// The words [`StopWords::add_file`] adds, in file order (one or more per line, `#`
    /// comments, the typographic apostrophe normalised, lower-cased if asked): what a corpus
    /// records so that its tokenizer can be rebuilt without the file. A byte-order mark starting
    /// the file is dropped (kept, it would be glued to the first word, which then never
    /// matches); a UTF-16 file is refused with the command that converts it.
    pub fn file_words(path: &Path, lowercase: bool) -> Result<Vec<String>, CorpusError> {
        let f = std::fs::File::open(path)
            .map_err(|e| CorpusError::io(path, "open the stop-word file", e))?;
        let mut reader = std::io::BufReader::new(f);
        let head = reader
            .fill_buf()
            .map_err(|e| CorpusError::io(path, "read the stop-word file", e))?;
        if let Some(u) = crate::encoding::utf16_at_start(head) {
            return Err(CorpusError::input(
                path,
                u.advice(&path.display().to_string()),
            ));
        }
        let mut words = Vec::new();
        for (i, line) in reader.lines().enumerate() {
            let line = line.map_err(|e| CorpusError::io(path, "read the stop-word file", e))?;
            let line = if i == 0 {
                line.strip_prefix('\u{feff}').unwrap_or(&line)
            } else {
                &line
            };
            let line = line.trim();
            if line.starts_with('#') {
                continue;
            }
            for w in line.split_whitespace() {
                let w = w.replace('\u{2019}', "'");
                words.push(if lowercase { w.to_lowercase() } else { w });
            }
        }
        Ok(words)
    }

    /// Whether `word` is a stop word.
    #[inline]
    pub fn contains(&self, word: &str) -> bool {
        word.len() <= self.max_len && self.words.contains(word)
    }

    /// Number of words.
    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_list_is_sorted_unique_lowercase() {
        assert!(
            ENGLISH.windows(2).all(|w| w[0] < w[1]),
            "sorted, no duplicates"
        );
        assert!(ENGLISH.iter().all(|w| *w == w.to_lowercase()));
        assert!((330..360).contains(&ENGLISH.len()), "{}", ENGLISH.len());
        let s = StopWords::english();
        assert!(s.contains("the") && s.contains("don't") && s.contains("themselves"));
        for content in ["system", "interest", "fire", "bill", "computer"] {
            assert!(!s.contains(content), "{content}");
        }
    }

    #[test]
    fn user_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("stop.txt");
        std::fs::write(&p, "# comment\nFoo bar\n\n  Baz’s \n").unwrap();
        let mut s = StopWords::new();
        s.add_file(&p, true).unwrap();
        assert_eq!(s.len(), 3);
        assert!(s.contains("foo") && s.contains("bar") && s.contains("baz's"));
        let err = s
            .add_file(&dir.path().join("missing.txt"), true)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("missing.txt") && err.contains("stop-word"),
            "{err}"
        );
    }

    #[test]
    fn a_byte_order_mark_is_not_part_of_the_first_stop_word() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("stop.txt");
        std::fs::write(&p, "\u{feff}alpha\nbeta\n").unwrap();
        assert_eq!(StopWords::file_words(&p, true).unwrap(), ["alpha", "beta"]);
        std::fs::write(&p, "\u{feff}# comment\nalpha\n").unwrap();
        assert_eq!(StopWords::file_words(&p, true).unwrap(), ["alpha"]);
        let mut s = StopWords::new();
        std::fs::write(&p, "\u{feff}alpha\n").unwrap();
        s.add_file(&p, true).unwrap();
        assert!(s.contains("alpha"));
        // UTF-16 is named, with the command that converts it.
        let mut utf16 = vec![0xff, 0xfe];
        utf16.extend("alpha\n".encode_utf16().flat_map(u16::to_le_bytes));
        std::fs::write(&p, utf16).unwrap();
        let e = StopWords::file_words(&p, true).unwrap_err().to_string();
        assert!(e.contains("UTF-16") && e.contains("iconv"), "{e}");
    }
}
