//! Text → tokens. The same tokenizer runs in both passes of [`crate::prepare`], so it must be a
//! pure function of the text and the options.
//!
//! Per word found by Unicode word segmentation (UAX #29, see [`crate::segment`]):
//! 1. the typographic apostrophe `’` becomes `'`, soft hyphens (U+00AD, invisible, from
//!    hyphenation) are removed, and the word is lower-cased (option);
//! 2. a possessive `'s` is stripped (`Obama's` → `obama`), so possessives count as the word;
//! 3. words without a letter are dropped as numbers (`2024`, `3.14`, `1,000`; `covid19` stays);
//! 4. stop words are dropped (checked before stemming, on the lower-cased word);
//! 5. words shorter than `min_len` characters (not bytes) are dropped;
//! 6. the word is stemmed with the Snowball English stemmer (option).

use crate::stopwords::StopWords;
use crate::CorpusError;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// How text is cut into tokens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenizerOptions {
    /// Lower-case every token (default true): topics should not split on sentence-initial
    /// capitals.
    pub lowercase: bool,
    /// Drop the built-in English stop words ([`crate::stopwords::ENGLISH`]; default true).
    pub english_stopwords: bool,
    /// Also drop the words of this file (one per line, `#` comments).
    pub stopword_file: Option<PathBuf>,
    /// Minimum token length in characters (default 3, as MALLET's default token pattern): after
    /// stop-word removal, one- and two-letter tokens are mostly initials, units and markup debris
    /// that fill topics with noise.
    pub min_len: usize,
    /// Snowball (Porter 2) English stemming (default false): it merges `model`/`models`/`modeling`
    /// but makes topic words harder to read, and LDA copes with inflections by itself.
    pub stem: bool,
    /// Drop tokens without any letter (default true): numbers rarely describe a topic, and
    /// numerals make the vocabulary explode.
    pub drop_numbers: bool,
}

impl Default for TokenizerOptions {
    fn default() -> Self {
        Self {
            lowercase: true,
            english_stopwords: true,
            stopword_file: None,
            min_len: 3,
            stem: false,
            drop_numbers: true,
        }
    }
}

impl TokenizerOptions {
    /// The stop words these options ask for.
    pub fn stop_words(&self) -> Result<StopWords, CorpusError> {
        let mut s = if self.english_stopwords {
            StopWords::english()
        } else {
            StopWords::new()
        };
        if let Some(p) = &self.stopword_file {
            s.add_file(p, self.lowercase)?;
        }
        Ok(s)
    }
}

/// The version of the tokenizing rules in this file (the six steps above). A corpus records it
/// with its [`TokenizerSpec`]; a change to the rules that turns some text into other tokens
/// must raise it, so that text is never matched against a vocabulary made by other rules.
pub const TOKENIZER_VERSION: u32 = 1;

/// Everything that decides which token a text becomes, as a corpus records it (and, through
/// the training run, a model should): self-contained, so the extra stop words are the words
/// themselves, not the path of their file. `infer` and `similar --text` rebuild the tokenizer
/// from it ([`Tokenizer::from_spec`]) to cut new text exactly as `prepare` cut the corpus.
/// Stored as JSON ([`TokenizerSpec::encode`], [`TokenizerSpec::decode`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenizerSpec {
    /// [`TOKENIZER_VERSION`] of the build that prepared the corpus.
    pub version: u32,
    /// Tokens were lower-cased.
    pub lowercase: bool,
    /// The built-in English stop words were dropped.
    pub english_stopwords: bool,
    /// Further stop words that were dropped (from `--stopwords FILE`), sorted.
    #[serde(default)]
    pub extra_stopwords: Vec<String>,
    /// Tokens shorter than this many characters were dropped.
    pub min_len: usize,
    /// Snowball English stemming was applied.
    pub stem: bool,
    /// Tokens without a letter were dropped.
    pub drop_numbers: bool,
    /// The input was a bag of words (UCI, LDA-C): the vocabulary was given, not tokenized, so
    /// new text is matched to it as written (segmented and, if `lowercase`, lower-cased; no
    /// length, number or stemming rule), which keeps every vocabulary word reachable.
    #[serde(default)]
    pub words_given: bool,
}

impl TokenizerSpec {
    /// The spec as stored in a file: compact JSON.
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a tokenizer spec serializes")
    }

    /// Reads [`TokenizerSpec::encode`]'s bytes. A spec of a newer tokenizer version is refused
    /// (its rules are not known to this build).
    pub fn decode(bytes: &[u8]) -> Result<Self, String> {
        let spec: TokenizerSpec = serde_json::from_slice(bytes)
            .map_err(|e| format!("the tokenizer options do not parse ({e})"))?;
        spec.check()?;
        Ok(spec)
    }

    /// Refuses a spec whose rules this build does not know (a newer [`TOKENIZER_VERSION`]):
    /// tokenizing by other rules would silently drop words.
    pub fn check(&self) -> Result<(), String> {
        if self.version == 0 || self.version > TOKENIZER_VERSION {
            return Err(format!(
                "the tokenizer options are of version {}, but this build knows versions 1 to {TOKENIZER_VERSION}; upgrade topos",
                self.version
            ));
        }
        Ok(())
    }

    /// The defaults of `topos prepare` (what `infer` assumes for a corpus that records nothing).
    pub fn defaults() -> Self {
        TokenizerOptions::default()
            .spec()
            .expect("default options read no file")
    }

    /// The options in words, for messages: e.g. "lower-case, English stop words, min length 3,
    /// numbers dropped, stemmed".
    pub fn describe(&self) -> String {
        if self.words_given {
            return format!(
                "words matched to the given vocabulary as written{}",
                if self.lowercase { ", lower-cased" } else { "" }
            );
        }
        let mut parts = vec![if self.lowercase {
            "lower-cased".to_string()
        } else {
            "case kept".to_string()
        }];
        parts.push(match (self.english_stopwords, self.extra_stopwords.len()) {
            (true, 0) => "English stop words dropped".into(),
            (true, n) => format!("English and {n} more stop words dropped"),
            (false, 0) => "stop words kept".into(),
            (false, n) => format!("{n} stop words dropped"),
        });
        parts.push(format!("min length {}", self.min_len));
        parts.push(
            if self.drop_numbers {
                "numbers dropped"
            } else {
                "numbers kept"
            }
            .into(),
        );
        parts.push(if self.stem { "stemmed" } else { "not stemmed" }.into());
        parts.join(", ")
    }
}

impl TokenizerOptions {
    /// What these options record in a corpus (reads the stop-word file, if any).
    pub fn spec(&self) -> Result<TokenizerSpec, CorpusError> {
        let mut extra = match &self.stopword_file {
            Some(p) => StopWords::file_words(p, self.lowercase)?,
            None => Vec::new(),
        };
        extra.sort();
        extra.dedup();
        Ok(TokenizerSpec {
            version: TOKENIZER_VERSION,
            lowercase: self.lowercase,
            english_stopwords: self.english_stopwords,
            extra_stopwords: extra,
            min_len: self.min_len,
            stem: self.stem,
            drop_numbers: self.drop_numbers,
            words_given: false,
        })
    }
}

/// What the tokenizer dropped, and why (summed over documents).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TokenStats {
    /// Words found by segmentation.
    pub words: u64,
    /// Tokens emitted.
    pub kept: u64,
    /// Dropped: no letter.
    pub numbers: u64,
    /// Dropped: stop word.
    pub stopwords: u64,
    /// Dropped: shorter than `min_len`.
    pub short: u64,
}

impl TokenStats {
    /// Adds another tally.
    pub fn add(&mut self, o: &TokenStats) {
        self.words += o.words;
        self.kept += o.kept;
        self.numbers += o.numbers;
        self.stopwords += o.stopwords;
        self.short += o.short;
    }
}

/// Reusable per-thread state of tokenizing: a buffer for normalised words and a cache of stems
/// (Snowball stemming allocates, and costs as much as all the rest of tokenizing).
#[derive(Debug, Default)]
pub struct Scratch {
    buf: String,
    stems: FxHashMap<Box<str>, Box<str>>,
}

/// Stems cached per [`Scratch`] before the cache is cleared (bounds its memory).
const STEM_CACHE_MAX: usize = 1 << 20;

/// A configured tokenizer; cheap to share between threads (`Sync`).
pub struct Tokenizer {
    lowercase: bool,
    min_len: usize,
    drop_numbers: bool,
    stop: StopWords,
    stemmer: Option<rust_stemmers::Stemmer>,
}

impl Tokenizer {
    /// Builds the tokenizer (reads the stop-word file, if any).
    pub fn new(opts: &TokenizerOptions) -> Result<Self, CorpusError> {
        Ok(Self {
            lowercase: opts.lowercase,
            min_len: opts.min_len,
            drop_numbers: opts.drop_numbers,
            stop: opts.stop_words()?,
            stemmer: opts
                .stem
                .then(|| rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English)),
        })
    }

    /// The tokenizer a corpus's [`TokenizerSpec`] describes: the same tokens for the same text
    /// as the `prepare` that recorded it.
    pub fn from_spec(spec: &TokenizerSpec) -> Self {
        let mut stop = if spec.english_stopwords {
            StopWords::english()
        } else {
            StopWords::new()
        };
        stop.extend(spec.extra_stopwords.iter().cloned());
        let given = spec.words_given;
        Self {
            lowercase: spec.lowercase,
            min_len: if given { 0 } else { spec.min_len },
            drop_numbers: !given && spec.drop_numbers,
            stop,
            stemmer: (spec.stem && !given)
                .then(|| rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English)),
        }
    }

    /// The stop words in use.
    pub fn stop_words(&self) -> &StopWords {
        &self.stop
    }

    /// Steps 1–2: the normalised form of `word` (borrowed from `word` when nothing changes, as
    /// for most ASCII words, else built in `scratch`).
    #[inline]
    fn normalize<'a>(&self, word: &'a str, scratch: &'a mut String) -> &'a str {
        let tok: &'a str = if word.is_ascii() {
            if self.lowercase && word.bytes().any(|b| b.is_ascii_uppercase()) {
                scratch.clear();
                scratch.push_str(word);
                scratch.make_ascii_lowercase();
                scratch
            } else {
                word
            }
        } else {
            scratch.clear();
            let w: String = word
                .chars()
                .filter(|&c| c != '\u{ad}')
                .map(|c| if c == '\u{2019}' { '\'' } else { c })
                .collect();
            if self.lowercase {
                scratch.push_str(&w.to_lowercase());
            } else {
                scratch.push_str(&w);
            }
            scratch
        };
        match tok.len() > 2 && (tok.ends_with("'s") || tok.ends_with("'S")) {
            true => &tok[..tok.len() - 2],
            false => tok,
        }
    }

    /// Calls `emit` with each token of `text`, in order, and tallies what was dropped. `scratch`
    /// is reusable state (one per thread) that saves allocations.
    pub fn tokenize_with(
        &self,
        text: &str,
        scratch: &mut Scratch,
        stats: &mut TokenStats,
        mut emit: impl FnMut(&str),
    ) {
        crate::segment::for_each_word(text, |word| {
            stats.words += 1;
            let tok = self.normalize(word, &mut scratch.buf);
            let ascii = tok.is_ascii();
            let has_letter = if ascii {
                tok.bytes().any(|b| b.is_ascii_alphabetic())
            } else {
                tok.chars().any(char::is_alphabetic)
            };
            if self.drop_numbers && !has_letter {
                stats.numbers += 1;
                return;
            }
            if self.stop.contains(tok) {
                stats.stopwords += 1;
                return;
            }
            let short = if ascii {
                tok.len() < self.min_len
            } else {
                tok.chars().take(self.min_len).count() < self.min_len
            };
            if short {
                stats.short += 1;
                return;
            }
            stats.kept += 1;
            let Some(stemmer) = &self.stemmer else {
                return emit(tok);
            };
            if let Some(stem) = scratch.stems.get(tok) {
                return emit(stem);
            }
            let stem: Box<str> = stemmer.stem(tok).into();
            emit(&stem);
            if scratch.stems.len() >= STEM_CACHE_MAX {
                scratch.stems.clear();
            }
            scratch.stems.insert(tok.into(), stem);
        });
    }

    /// Calls `emit` with every token [`Tokenizer::tokenize_with`] would emit, in order, and —
    /// without stemming — also with the words it would drop. For callers that look the tokens
    /// up in a vocabulary made of `tokenize_with`'s output (pass 2 of `prepare`): a dropped word
    /// is never such a token (without stemming, a token is its normalised word, and a dropped
    /// word was dropped everywhere), so skipping the filters changes nothing but the time.
    pub fn lookup_tokens_with(
        &self,
        text: &str,
        scratch: &mut Scratch,
        mut emit: impl FnMut(&str),
    ) {
        if self.stemmer.is_some() {
            return self.tokenize_with(text, scratch, &mut TokenStats::default(), emit);
        }
        crate::segment::for_each_word(text, |word| emit(self.normalize(word, &mut scratch.buf)));
    }

    /// The tokens of `text` (convenient, allocates per token).
    pub fn tokens(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut scratch = Scratch::default();
        self.tokenize_with(text, &mut scratch, &mut TokenStats::default(), |t| {
            out.push(t.to_string())
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tok(opts: TokenizerOptions, text: &str) -> Vec<String> {
        Tokenizer::new(&opts).unwrap().tokens(text)
    }

    fn plain() -> TokenizerOptions {
        TokenizerOptions {
            english_stopwords: false,
            min_len: 1,
            ..Default::default()
        }
    }

    #[test]
    fn defaults_drop_stopwords_short_and_numbers() {
        let t = Tokenizer::new(&TokenizerOptions::default()).unwrap();
        let mut stats = TokenStats::default();
        let mut out = vec![];
        t.tokenize_with(
            "The 3 cats sat on a mat in 2024, at 3.14 o'clock; Topic models!",
            &mut Scratch::default(),
            &mut stats,
            |w| out.push(w.to_string()),
        );
        assert_eq!(out, ["cats", "sat", "mat", "o'clock", "topic", "models"]);
        assert_eq!(
            stats,
            TokenStats {
                words: 14,
                kept: 6,
                numbers: 3,
                stopwords: 5,
                short: 0,
            }
        );
        // "a" and "on" are stop words; a two-letter non-stop word is short.
        let mut stats = TokenStats::default();
        t.tokenize_with("ox ai", &mut Scratch::default(), &mut stats, |_| {});
        assert_eq!(stats.short, 2);
    }

    #[test]
    fn unicode_words_and_case() {
        assert_eq!(
            tok(plain(), "Grüße aus KÖLN — naïve café Ωμέγα 東京"),
            ["grüße", "aus", "köln", "naïve", "café", "ωμέγα", "東", "京"]
        );
        let keep_case = TokenizerOptions {
            lowercase: false,
            ..plain()
        };
        assert_eq!(tok(keep_case, "Hello WORLD"), ["Hello", "WORLD"]);
        // Length counts characters, not bytes: "été" is 3 characters (5 bytes).
        let three = TokenizerOptions {
            min_len: 3,
            ..plain()
        };
        assert_eq!(tok(three.clone(), "été où un"), ["été"]);
        assert_eq!(tok(three, "日本"), Vec::<String>::new());
    }

    #[test]
    fn apostrophes() {
        assert_eq!(
            tok(
                plain(),
                "Don't stop: Obama's plan, the students' books, rock ’n’ roll, O’Neil"
            ),
            [
                "don't", "stop", "obama", "plan", "the", "students", "books", "rock", "n", "roll",
                "o'neil"
            ]
        );
        // Contractions are stop words by default; the typographic apostrophe is normalised first.
        assert_eq!(
            tok(TokenizerOptions::default(), "don’t can't it's Obama’s"),
            ["obama"]
        );
    }

    #[test]
    fn byte_order_mark_and_soft_hyphen() {
        assert_eq!(
            tok(plain(), "\u{feff}Hello wor\u{ad}ld"),
            ["hello", "world"]
        );
    }

    #[test]
    fn numbers() {
        assert_eq!(
            tok(plain(), "1999 3.14 1,000 42nd covid19 x86 ½ ٣"),
            ["42nd", "covid19", "x86"]
        );
        let keep = TokenizerOptions {
            drop_numbers: false,
            ..plain()
        };
        assert_eq!(tok(keep, "in 1999"), ["in", "1999"]);
    }

    #[test]
    fn stemming() {
        let stem = TokenizerOptions {
            stem: true,
            ..TokenizerOptions::default()
        };
        assert_eq!(
            tok(stem, "Running runners modeled models modeling generously"),
            ["run", "runner", "model", "model", "model", "generous"]
        );
    }

    #[test]
    fn lookup_tokens_cover_the_tokens() {
        let text = "The Cats' 12 o’clock naps, the cat's toys: AI ai Über";
        for stem in [false, true] {
            let t = Tokenizer::new(&TokenizerOptions {
                stem,
                ..Default::default()
            })
            .unwrap();
            let tokens = t.tokens(text);
            let mut all = vec![];
            t.lookup_tokens_with(text, &mut Scratch::default(), |w| all.push(w.to_string()));
            // The tokens, in order, are a subsequence of the lookup tokens.
            let mut it = all.iter();
            assert!(
                tokens.iter().all(|tok| it.any(|a| a == tok)),
                "{tokens:?} {all:?}"
            );
            if stem {
                assert_eq!(all, tokens);
            } else {
                assert_eq!(all.len(), 11);
            }
        }
    }

    #[test]
    fn spec_rebuilds_the_same_tokenizer() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("stop.txt");
        std::fs::write(&p, "# news\nReuters Said\nsaid\n").unwrap();
        let opts = TokenizerOptions {
            stopword_file: Some(p),
            stem: true,
            min_len: 4,
            drop_numbers: false,
            ..TokenizerOptions::default()
        };
        let spec = opts.spec().unwrap();
        assert_eq!(spec.extra_stopwords, ["reuters", "said"]);
        let back = TokenizerSpec::decode(&spec.encode()).unwrap();
        assert_eq!(back, spec);
        let text = "Reuters said the Runners' 2024 models were modeling rivers in 1999";
        assert_eq!(
            Tokenizer::from_spec(&back).tokens(text),
            Tokenizer::new(&opts).unwrap().tokens(text)
        );
        assert!(spec.describe().contains("stemmed"), "{}", spec.describe());
        assert_eq!(
            TokenizerSpec::defaults(),
            TokenizerOptions::default().spec().unwrap()
        );
        // A bag-of-words corpus: words are matched as written (lower-cased).
        let given = TokenizerSpec {
            words_given: true,
            ..spec
        };
        assert_eq!(
            Tokenizer::from_spec(&given).tokens("Reuters ox 42 running"),
            ["ox", "42", "running"]
        );
        for bad in [&b"{}"[..], b"not json", b"{\"version\": 99}"] {
            let e = TokenizerSpec::decode(bad).unwrap_err();
            assert!(!e.contains('\n'), "{e}");
        }
        let newer = String::from_utf8(back.encode())
            .unwrap()
            .replace("\"version\":1", "\"version\":2");
        assert!(TokenizerSpec::decode(newer.as_bytes())
            .unwrap_err()
            .contains("upgrade"));
    }

    #[test]
    fn user_stop_words() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("stop.txt");
        std::fs::write(&p, "Reuters\nsaid\n").unwrap();
        let opts = TokenizerOptions {
            stopword_file: Some(p),
            ..TokenizerOptions::default()
        };
        assert_eq!(tok(opts, "Reuters said the bank lends"), ["bank", "lends"]);
    }
}
