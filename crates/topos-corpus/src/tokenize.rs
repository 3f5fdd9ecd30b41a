//! Text → tokens. The same tokenizer runs in both passes of [`crate::prepare`], so it must be a
//! pure function of the text and the options.
//!
//! Per word found by Unicode word segmentation (UAX #29, see [`crate::segment`]):
//! 1. the typographic apostrophe `’` becomes `'`, soft hyphens (U+00AD, invisible, from
//!    hyphenation) are removed, the word is put in Unicode normalization form C (NFC: `café`
//!    typed as `e` + U+0301 and as `é` is one word), and lower-cased (option; with Turkish
//!    rules for Turkish: `I` → `ı`, `İ` → `i`);
//! 2. a possessive `'s` is stripped (`Obama's` → `obama`), so possessives count as the word;
//! 3. words without a letter are dropped as numbers (`2024`, `3.14`, `1,000`; `covid19` stays);
//! 4. stop words are dropped (checked before stemming, on the lower-cased word, also when the
//!    tokens keep their case);
//! 5. words shorter than `min_len` characters (not bytes) are dropped;
//! 6. the word is stemmed with the Snowball stemmer of the language (option).
//!
//! With [`Segmenter::Whitespace`] (`--tokenizer whitespace`, for pre-tokenized text such as
//! segmented Chinese) the words are the runs of text between Unicode white space, and with
//! [`Segmenter::Jieba`] (the `jieba` feature) jieba-rs's Chinese words within those runs; both
//! keep words as written: step 1 only normalizes (NFC) and lower-cases (option), step 2 is
//! skipped, steps 3–6 apply as above.
//!
//! Corpora record the version of these rules ([`TOKENIZER_VERSION`]); a corpus of an older
//! version is followed by its own rules (no NFC, no Turkish casing, stop words matched as the
//! tokens are cased), so new text meets its vocabulary as `prepare` made it.
//!
//! The stop words (step 4) and the stemmer (step 6) are those of the [`Language`] (default
//! English).

use crate::language::Language;
use crate::stopwords::StopWords;
use crate::CorpusError;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// How text is cut into words, before the rules of [`Tokenizer`] apply.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Segmenter {
    /// Unicode words (UAX #29, [`crate::segment`]): right for text written with spaces between
    /// words; text without spaces (Chinese, Japanese, Thai) falls apart into characters.
    #[default]
    Words,
    /// Runs of text between Unicode white space, as written: for pre-tokenized input (one
    /// segmenter's output, e.g. jieba's for Chinese, with spaces between words).
    Whitespace,
    /// Chinese word segmentation by jieba-rs (its default dictionary and HMM for unknown words),
    /// words kept as written; only in builds with the `jieba` feature.
    Jieba,
}

impl Segmenter {
    /// Every segmenter; the first is the default.
    pub const ALL: [Segmenter; 3] = [Segmenter::Words, Segmenter::Whitespace, Segmenter::Jieba];

    /// Whether this build can segment with it (`jieba` needs the `jieba` feature).
    pub fn available(self) -> Result<(), String> {
        if self == Segmenter::Jieba && !cfg!(feature = "jieba") {
            return Err("the jieba tokenizer is not in this build: rebuild with `--features jieba` (cargo build --release -p topos-cli --features jieba), or segment the text beforehand and give --tokenizer whitespace".into());
        }
        Ok(())
    }

    /// Whether words are kept as written (lower-casing aside): not [`Segmenter::Words`].
    fn as_written(self) -> bool {
        self != Segmenter::Words
    }

    /// The minimum token length `prepare` uses with this segmenter unless told otherwise: 3
    /// for Unicode words (see [`TokenizerOptions::min_len`]), 1 for white-space tokens (the
    /// input's words as given), 2 for jieba (its one-character words are mostly function
    /// words). The CLI's and the Python package's default, kept here so they cannot drift.
    pub fn default_min_len(self) -> usize {
        match self {
            Segmenter::Words => 3,
            Segmenter::Whitespace => 1,
            Segmenter::Jieba => 2,
        }
    }

    /// The name used by `--tokenizer` and recorded in a corpus.
    pub fn name(self) -> &'static str {
        match self {
            Segmenter::Words => "words",
            Segmenter::Whitespace => "whitespace",
            Segmenter::Jieba => "jieba",
        }
    }
}

impl std::fmt::Display for Segmenter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Segmenter {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_lowercase().as_str() {
            "words" | "unicode" | "default" => Ok(Segmenter::Words),
            "whitespace" | "white-space" | "pretokenized" | "pre-tokenized" => {
                Ok(Segmenter::Whitespace)
            }
            "jieba" => Ok(Segmenter::Jieba),
            _ => Err(format!(
                "unknown tokenizer {s:?}; use words (Unicode word segmentation, the default), whitespace (pre-tokenized text, split at white space only) or jieba (Chinese word segmentation, in builds with the jieba feature)"
            )),
        }
    }
}

/// The runs of `text` between Unicode white space (a byte-order mark, U+FEFF, not white space,
/// separates too: it is never part of a word).
#[inline]
fn for_each_piece<'a>(text: &'a str, f: impl FnMut(&'a str)) {
    text.split(|c: char| c.is_whitespace() || c == '\u{feff}')
        .filter(|w| !w.is_empty())
        .for_each(f)
}

/// How text is cut into tokens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenizerOptions {
    /// How text is cut into words (default: Unicode words).
    pub segmenter: Segmenter,
    /// The language of the stop words and the stemmer (default English).
    pub language: Language,
    /// Lower-case every token (default true): topics should not split on sentence-initial
    /// capitals.
    pub lowercase: bool,
    /// Drop the built-in stop words of `language` ([`Language::stop_words`]; default true). The
    /// name is from when English was the only language.
    pub english_stopwords: bool,
    /// Also drop the words of this file (one per line, `#` comments).
    pub stopword_file: Option<PathBuf>,
    /// Minimum token length in characters (default 3, as MALLET's default token pattern): after
    /// stop-word removal, one- and two-letter tokens are mostly initials, units and markup debris
    /// that fill topics with noise.
    pub min_len: usize,
    /// Snowball stemming in `language` (Porter 2 for English; default false): it merges
    /// `model`/`models`/`modeling` but makes topic words harder to read, and LDA copes with
    /// inflections by itself.
    pub stem: bool,
    /// Drop tokens without any letter (default true): numbers rarely describe a topic, and
    /// numerals make the vocabulary explode.
    pub drop_numbers: bool,
}

impl Default for TokenizerOptions {
    fn default() -> Self {
        Self {
            segmenter: Segmenter::Words,
            language: Language::English,
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
            StopWords::of(self.language)
        } else {
            StopWords::new()
        };
        if let Some(p) = &self.stopword_file {
            s.extend(self.file_stop_words(p)?);
        }
        Ok(s)
    }

    /// The words of a stop-word file as the current rules match them: NFC, lower-cased with
    /// the language's casing (whatever `lowercase` says: stop words are matched on the
    /// lower-cased word).
    fn file_stop_words(&self, path: &std::path::Path) -> Result<Vec<String>, CorpusError> {
        let turkic = self.language.turkic_casing();
        let mut scratch = String::new();
        Ok(StopWords::file_words(path, false)?
            .into_iter()
            .map(|w| {
                scratch.clear();
                push_lowercase(&nfc(&w), turkic, &mut scratch);
                scratch.clone()
            })
            .collect())
    }
}

/// The newest version of the tokenizing rules this build knows (the six steps above), which
/// every corpus it prepares records with its [`TokenizerSpec`]; a change to the rules that turns
/// some text into other tokens must raise it, so that text is never matched against a vocabulary
/// made by other rules. Version 2 added the `tokenizer` and `language` options (a corpus with the
/// defaults recorded 1 until version 3). Version 3: NFC, Turkish casing for Turkish, and stop
/// words matched on the lower-cased word when tokens keep their case. A corpus of version 1 or
/// 2 is tokenized by its own rules ([`Tokenizer::from_spec`]).
pub const TOKENIZER_VERSION: u32 = 3;

/// `word` in Unicode normalization form C (borrowed when it already is, as nearly all text is).
fn nfc(word: &str) -> std::borrow::Cow<'_, str> {
    use unicode_normalization::{is_nfc_quick, IsNormalized, UnicodeNormalization};
    match is_nfc_quick(word.chars()) {
        IsNormalized::Yes => std::borrow::Cow::Borrowed(word),
        _ => std::borrow::Cow::Owned(word.nfc().collect()),
    }
}

/// Appends `word` lower-cased to `out`; with `turkic`, Turkish and Azerbaijani casing first
/// (`I` → `ı`, `İ` → `i`, where Unicode's default casing gives `i` and `i` + U+0307).
fn push_lowercase(word: &str, turkic: bool, out: &mut String) {
    if !turkic {
        out.push_str(&word.to_lowercase());
        return;
    }
    for c in word.chars() {
        match c {
            'I' => out.push('ı'),
            'İ' => out.push('i'),
            c => out.extend(c.to_lowercase()),
        }
    }
}

/// Everything that decides which token a text becomes, as a corpus records it (and, through
/// the training run, a model should): self-contained, so the extra stop words are the words
/// themselves, not the path of their file. `infer` and `similar --text` rebuild the tokenizer
/// from it ([`Tokenizer::from_spec`]) to cut new text exactly as `prepare` cut the corpus.
/// Stored as JSON ([`TokenizerSpec::encode`], [`TokenizerSpec::decode`]).
///
/// The fields added after version 1 (`tokenizer`, `language`) are left out of the JSON at their
/// defaults, so a spec of version 1 (a corpus prepared with the defaults before version 3)
/// reads back as it was written, and a spec without them reads as the defaults.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenizerSpec {
    /// [`TOKENIZER_VERSION`] of the build that prepared the corpus.
    pub version: u32,
    /// The [`Segmenter`] by name (`words` or `whitespace`). A string, not the enum, so that a
    /// corpus of a newer build with a segmenter this one does not know still opens (for
    /// training); [`TokenizerSpec::check`] refuses it where text would be tokenized.
    #[serde(
        default = "default_segmenter",
        skip_serializing_if = "is_default_segmenter"
    )]
    pub tokenizer: String,
    /// The [`Language`] of the stop words and the stemmer, by name (a string for the same reason).
    #[serde(
        default = "default_language",
        skip_serializing_if = "is_default_language"
    )]
    pub language: String,
    /// Tokens were lower-cased.
    pub lowercase: bool,
    /// The built-in stop words of `language` were dropped (the name is from when English was
    /// the only language).
    pub english_stopwords: bool,
    /// Further stop words that were dropped (from `--stopwords FILE`), sorted.
    #[serde(default)]
    pub extra_stopwords: Vec<String>,
    /// Tokens shorter than this many characters were dropped.
    pub min_len: usize,
    /// Snowball stemming in `language` was applied.
    pub stem: bool,
    /// Tokens without a letter were dropped.
    pub drop_numbers: bool,
    /// The input was a bag of words (UCI, LDA-C): the vocabulary was given, not tokenized, so
    /// new text is matched to it as written (segmented and, if `lowercase`, lower-cased; no
    /// length, number or stemming rule), which keeps every vocabulary word reachable. `prepare`
    /// records `lowercase` false for a given vocabulary with capitals (lower-cased text would
    /// never meet them).
    #[serde(default)]
    pub words_given: bool,
}

fn default_segmenter() -> String {
    Segmenter::Words.name().into()
}

fn is_default_segmenter(s: &str) -> bool {
    s == Segmenter::Words.name()
}

fn default_language() -> String {
    Language::English.name().into()
}

fn is_default_language(s: &str) -> bool {
    s == Language::English.name()
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
        self.segmenter()?;
        self.language()?;
        Ok(())
    }

    /// The recorded [`Segmenter`]; one this build does not know is refused.
    pub fn segmenter(&self) -> Result<Segmenter, String> {
        self.tokenizer.parse().map_err(|_| {
            format!(
                "the text was tokenized by the tokenizer {:?}, which this build does not know; upgrade topos",
                self.tokenizer
            )
        })
    }

    /// The recorded [`Language`]; one this build does not know is refused.
    pub fn language(&self) -> Result<Language, String> {
        self.language.parse().map_err(|_| {
            format!(
                "the text was tokenized with the language {:?}, which this build does not know; upgrade topos",
                self.language
            )
        })
    }

    /// The defaults of `topos prepare` by the rules of version 1: what `infer` assumes for a
    /// corpus that records nothing (prepared before corpora recorded their options, so by those
    /// rules).
    pub fn defaults() -> Self {
        TokenizerSpec {
            version: 1,
            ..TokenizerOptions::default()
                .spec()
                .expect("default options read no file")
        }
    }

    /// Whether `self` and `other` were prepared with the same options, whatever the version of
    /// the rules (a corpus of an older build and one of this build, both prepared alike): the
    /// version, the case in which version 2 kept a stop-word file's words with `--keep-case`,
    /// and, between two given vocabularies, the `lowercase` that `prepare` records from the
    /// vocabulary (capitals or not) are left out of the comparison.
    pub fn same_options(&self, other: &TokenizerSpec) -> bool {
        let both_given = self.words_given && other.words_given;
        let comparable = |s: &TokenizerSpec| {
            let mut extra: Vec<String> =
                s.extra_stopwords.iter().map(|w| w.to_lowercase()).collect();
            extra.sort();
            extra.dedup();
            TokenizerSpec {
                version: 0,
                lowercase: s.lowercase && !both_given,
                extra_stopwords: extra,
                ..s.clone()
            }
        };
        comparable(self) == comparable(other)
    }

    /// The options in words, for messages: e.g. "lower-case, English stop words, min length 3,
    /// numbers dropped, stemmed".
    pub fn describe(&self) -> String {
        if self.words_given {
            return format!(
                "words matched to the given vocabulary as written{}",
                if self.lowercase {
                    ", new text lower-cased"
                } else {
                    ", case kept"
                }
            );
        }
        let mut parts = Vec::new();
        if !is_default_segmenter(&self.tokenizer) {
            parts.push(match self.segmenter() {
                Ok(Segmenter::Whitespace) => "split at white space".to_string(),
                Ok(Segmenter::Jieba) => "Chinese words by jieba".to_string(),
                _ => format!("tokenizer {}", self.tokenizer),
            });
        }
        parts.push(if self.lowercase {
            "lower-cased".to_string()
        } else {
            "case kept".to_string()
        });
        let lang = match self.language() {
            Ok(l) => l.title(),
            Err(_) => self.language.clone(),
        };
        parts.push(match (self.english_stopwords, self.extra_stopwords.len()) {
            (true, 0) => format!("{lang} stop words dropped"),
            (true, n) => format!("{lang} and {n} more stop words dropped"),
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
        parts.push(match (self.stem, is_default_language(&self.language)) {
            (true, true) => "stemmed".into(),
            (true, false) => format!("stemmed ({lang} Snowball)"),
            (false, _) => "not stemmed".into(),
        });
        parts.join(", ")
    }
}

impl TokenizerOptions {
    /// What these options record in a corpus (reads the stop-word file, if any).
    pub fn spec(&self) -> Result<TokenizerSpec, CorpusError> {
        let mut extra = match &self.stopword_file {
            Some(p) => self.file_stop_words(p)?,
            None => Vec::new(),
        };
        extra.sort();
        extra.dedup();
        Ok(TokenizerSpec {
            version: TOKENIZER_VERSION,
            tokenizer: self.segmenter.name().into(),
            language: self.language.name().into(),
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
    /// Of `short`: words of a script written without spaces between words (Chinese, Japanese,
    /// Thai, Lao, Khmer, Myanmar, Tibetan), which Unicode word segmentation cuts into single
    /// characters: a sign the text needs another tokenizer.
    pub short_unspaced: u64,
}

/// Whether `c` belongs to a script written without spaces between words, which Unicode word
/// segmentation (UAX #29, no dictionary) cannot cut into words: Han, Hiragana, Katakana, Thai,
/// Lao, Khmer, Myanmar, Tibetan.
pub fn is_unspaced_script(c: char) -> bool {
    matches!(u32::from(c),
        0x0E00..=0x0EFF        // Thai, Lao
        | 0x0F00..=0x0FFF      // Tibetan
        | 0x1000..=0x109F      // Myanmar
        | 0x1780..=0x17FF      // Khmer
        | 0x3040..=0x30FF      // Hiragana, Katakana
        | 0x31F0..=0x31FF      // Katakana phonetic extensions
        | 0x3400..=0x4DBF      // CJK extension A
        | 0x4E00..=0x9FFF      // CJK unified ideographs
        | 0xF900..=0xFAFF      // CJK compatibility ideographs
        | 0xFF66..=0xFF9F      // half-width Katakana
        | 0x20000..=0x2FA1F) // CJK extensions B and later
}

impl TokenStats {
    /// Adds another tally.
    pub fn add(&mut self, o: &TokenStats) {
        self.words += o.words;
        self.kept += o.kept;
        self.numbers += o.numbers;
        self.stopwords += o.stopwords;
        self.short += o.short;
        self.short_unspaced += o.short_unspaced;
    }
}

/// Reusable per-thread state of tokenizing: a buffer for normalised words and a cache of stems
/// (Snowball stemming allocates, and costs as much as all the rest of tokenizing).
#[derive(Debug, Default)]
pub struct Scratch {
    buf: String,
    /// A capitalized token lower-cased for the stop-word lookup (`--keep-case`).
    lower: String,
    stems: FxHashMap<Box<str>, Box<str>>,
}

/// Stems cached per [`Scratch`] before the cache is cleared (bounds its memory).
const STEM_CACHE_MAX: usize = 1 << 20;

/// A configured tokenizer; cheap to share between threads (`Sync`).
pub struct Tokenizer {
    segmenter: Segmenter,
    /// The jieba segmenter and its dictionary (with [`Segmenter::Jieba`]).
    #[cfg(feature = "jieba")]
    jieba: Option<Box<jieba_rs::Jieba>>,
    lowercase: bool,
    min_len: usize,
    drop_numbers: bool,
    stop: StopWords,
    stemmer: Option<rust_stemmers::Stemmer>,
    /// NFC (rules of version 3 and later; not for a given vocabulary, whose words are matched
    /// as written).
    normalize_nfc: bool,
    /// Turkish casing (rules of version 3 and later, for Turkish; not for a given vocabulary).
    turkic: bool,
    /// Stop words matched on the lower-cased word whatever the case kept (version 3 and later).
    stop_lowercased: bool,
}

impl Tokenizer {
    /// Builds the tokenizer (reads the stop-word file, if any).
    pub fn new(opts: &TokenizerOptions) -> Result<Self, CorpusError> {
        opts.segmenter.available().map_err(CorpusError::Options)?;
        Ok(Self {
            segmenter: opts.segmenter,
            #[cfg(feature = "jieba")]
            jieba: Self::jieba(opts.segmenter),
            lowercase: opts.lowercase,
            min_len: opts.min_len,
            drop_numbers: opts.drop_numbers,
            stop: opts.stop_words()?,
            normalize_nfc: true,
            turkic: opts.language.turkic_casing(),
            stop_lowercased: true,
            stemmer: match opts.stem {
                true => Some(
                    opts.language
                        .stemmer_for_stem()
                        .map_err(CorpusError::Options)?,
                ),
                false => None,
            },
        })
    }

    /// The tokenizer a corpus's [`TokenizerSpec`] describes: the same tokens for the same text
    /// as the `prepare` that recorded it. A segmenter or language this build does not know is
    /// refused (as [`TokenizerSpec::check`] does).
    pub fn from_spec(spec: &TokenizerSpec) -> Result<Self, String> {
        let segmenter = spec.segmenter()?;
        segmenter.available()?;
        let language = spec.language()?;
        let mut stop = if spec.english_stopwords {
            StopWords::of(language)
        } else {
            StopWords::new()
        };
        stop.extend(spec.extra_stopwords.iter().cloned());
        let given = spec.words_given;
        Ok(Self {
            segmenter,
            #[cfg(feature = "jieba")]
            jieba: Self::jieba(segmenter),
            lowercase: spec.lowercase,
            min_len: if given { 0 } else { spec.min_len },
            drop_numbers: !given && spec.drop_numbers,
            stop,
            // A given vocabulary (bag-of-words input) is kept as written and its stop words were
            // matched by Unicode's default lower case (`prepare/bags.rs`): new text meets it
            // without NFC or Turkish casing.
            normalize_nfc: spec.version >= 3 && !given,
            turkic: spec.version >= 3 && !given && language.turkic_casing(),
            stop_lowercased: spec.version >= 3,
            stemmer: match spec.stem && !given {
                true => Some(language.stemmer_for_stem()?),
                false => None,
            },
        })
    }

    #[cfg(feature = "jieba")]
    fn jieba(seg: Segmenter) -> Option<Box<jieba_rs::Jieba>> {
        (seg == Segmenter::Jieba).then(|| Box::new(jieba_rs::Jieba::new()))
    }

    /// Every word of `text`, in order.
    #[inline]
    fn for_each_word<'a>(&self, text: &'a str, f: impl FnMut(&'a str)) {
        match self.segmenter {
            Segmenter::Words => crate::segment::for_each_word(text, f),
            Segmenter::Whitespace => for_each_piece(text, f),
            #[cfg(feature = "jieba")]
            Segmenter::Jieba => {
                let jieba = self.jieba.as_ref().expect("built with the segmenter");
                let mut f = f;
                for_each_piece(text, |piece| {
                    for t in jieba.cut(piece, true) {
                        if !t.word.trim().is_empty() {
                            f(t.word);
                        }
                    }
                })
            }
            #[cfg(not(feature = "jieba"))]
            Segmenter::Jieba => unreachable!("refused when the tokenizer is built"),
        }
    }

    /// The stop words in use.
    pub fn stop_words(&self) -> &StopWords {
        &self.stop
    }

    /// Step 4: whether the normalized `tok` is a stop word. By the rules of version 3 the
    /// lower-cased word is looked up whether or not the tokens keep their case (README: "Stop
    /// words are matched after lower-casing"), so `--keep-case` keeps `The` out as it keeps
    /// `the`.
    #[inline]
    fn is_stop_word(&self, tok: &str, lower: &mut String) -> bool {
        if self.lowercase || !self.stop_lowercased {
            return self.stop.contains(tok);
        }
        let has_upper = match tok.is_ascii() {
            true => tok.bytes().any(|b| b.is_ascii_uppercase()),
            false => tok
                .chars()
                .any(|c| !c.is_lowercase() && c.to_lowercase().next() != Some(c)),
        };
        if !has_upper {
            return self.stop.contains(tok);
        }
        lower.clear();
        push_lowercase(tok, self.turkic, lower);
        self.stop.contains(lower.as_str())
    }

    /// Steps 1–2: the normalised form of `word` (borrowed from `word` when nothing changes, as
    /// for most ASCII words, else built in `scratch`).
    #[inline]
    fn normalize<'a>(&self, word: &'a str, scratch: &'a mut String) -> &'a str {
        let ascii = word.is_ascii();
        // Turkish casing differs from ASCII's for `I` alone.
        let plain_ascii = ascii && !(self.turkic && self.lowercase && word.contains('I'));
        if self.segmenter.as_written() {
            // As written: NFC and lower-casing only.
            let upper =
                self.lowercase && (!plain_ascii || word.bytes().any(|b| b.is_ascii_uppercase()));
            if !upper && (ascii || !self.normalize_nfc) {
                return word;
            }
            let w = match self.normalize_nfc {
                true => nfc(word),
                false => std::borrow::Cow::Borrowed(word),
            };
            scratch.clear();
            match self.lowercase {
                true => push_lowercase(&w, self.turkic, scratch),
                false => scratch.push_str(&w),
            }
            return scratch;
        }
        let tok: &'a str = if plain_ascii {
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
            // Copied only when NFC changes it.
            let w = match self.normalize_nfc {
                true => match nfc(&w) {
                    std::borrow::Cow::Borrowed(_) => w,
                    std::borrow::Cow::Owned(composed) => composed,
                },
                false => w,
            };
            match self.lowercase {
                true => push_lowercase(&w, self.turkic, scratch),
                false => scratch.push_str(&w),
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
        self.for_each_word(text, |word| {
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
            if self.is_stop_word(tok, &mut scratch.lower) {
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
                if !ascii && tok.chars().next().is_some_and(is_unspaced_script) {
                    stats.short_unspaced += 1;
                }
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
        self.for_each_word(text, |word| emit(self.normalize(word, &mut scratch.buf)));
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
    fn every_corpus_records_the_current_rules_so_older_builds_refuse_them() {
        let default = TokenizerOptions::default().spec().unwrap();
        assert_eq!(default.version, TOKENIZER_VERSION);
        let whitespace = TokenizerOptions {
            segmenter: Segmenter::Whitespace,
            ..TokenizerOptions::default()
        }
        .spec()
        .unwrap();
        assert_eq!(whitespace.version, 3);
        assert!(whitespace.check().is_ok());
        let newer = TokenizerSpec {
            version: TOKENIZER_VERSION + 1,
            ..whitespace
        };
        assert!(newer.check().unwrap_err().contains("upgrade topos"));
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
                short_unspaced: 0,
            }
        );
        // "a" and "on" are stop words; a two-letter non-stop word is short.
        let mut stats = TokenStats::default();
        t.tokenize_with("ox ai", &mut Scratch::default(), &mut stats, |_| {});
        assert_eq!(stats.short, 2);
        // Chinese, Japanese and Thai fall apart into short pieces, counted as such.
        let mut stats = TokenStats::default();
        t.tokenize_with(
            "我们喜欢 ひらがな ox",
            &mut Scratch::default(),
            &mut stats,
            |_| {},
        );
        assert_eq!(stats.short, stats.short_unspaced + 1, "{stats:?}");
        assert!(stats.short_unspaced >= 4, "{stats:?}");
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
            Tokenizer::from_spec(&back).unwrap().tokens(text),
            Tokenizer::new(&opts).unwrap().tokens(text)
        );
        assert!(spec.describe().contains("stemmed"), "{}", spec.describe());
        // What a corpus that records nothing was cut by: the defaults, by the rules of version 1.
        assert!(
            TokenizerSpec::defaults().same_options(&TokenizerOptions::default().spec().unwrap())
        );
        assert_eq!(TokenizerSpec::defaults().version, 1);
        // A bag-of-words corpus: words are matched as written (lower-cased).
        let given = TokenizerSpec {
            words_given: true,
            ..spec
        };
        assert_eq!(
            Tokenizer::from_spec(&given)
                .unwrap()
                .tokens("Reuters ox 42 running"),
            ["ox", "42", "running"]
        );
        for bad in [&b"{}"[..], b"not json", b"{\"version\": 99}"] {
            let e = TokenizerSpec::decode(bad).unwrap_err();
            assert!(!e.contains('\n'), "{e}");
        }
        let newer = String::from_utf8(back.encode()).unwrap().replace(
            &format!("\"version\":{TOKENIZER_VERSION}"),
            &format!("\"version\":{}", TOKENIZER_VERSION + 1),
        );
        assert!(TokenizerSpec::decode(newer.as_bytes())
            .unwrap_err()
            .contains("upgrade"));
    }

    #[test]
    fn whitespace_keeps_pre_tokenized_words() {
        let ws = TokenizerOptions {
            segmenter: Segmenter::Whitespace,
            ..plain()
        };
        // Segmented Chinese keeps its words (not characters); ideographic space (U+3000), tabs
        // and a byte-order mark separate; tokens are kept as written apart from lower-casing.
        assert_eq!(
            tok(
                ws.clone(),
                "\u{feff}我们 喜欢\u{3000}自然语言处理\tTopic-Models don’t Obama's e.g. 2024 。"
            ),
            [
                "我们",
                "喜欢",
                "自然语言处理",
                "topic-models",
                "don’t",
                "obama's",
                "e.g."
            ]
        );
        // The default tokenizer cuts the same Chinese into characters.
        assert_eq!(tok(plain(), "我们 喜欢").len(), 4);
        // Length, numbers, case and stop words still apply, as options.
        let rules = TokenizerOptions {
            min_len: 2,
            lowercase: false,
            ..TokenizerOptions {
                segmenter: Segmenter::Whitespace,
                ..TokenizerOptions::default()
            }
        };
        // Stop words are matched on the lower-cased word, case kept or not ("The").
        assert_eq!(tok(rules, "我 爱 北京 The Cat 42 3.14"), ["北京", "Cat"]);
        let lower = TokenizerOptions {
            segmenter: Segmenter::Whitespace,
            ..TokenizerOptions::default()
        };
        assert_eq!(tok(lower, "The Cats ÉTÉ"), ["cats", "été"]);
    }

    #[test]
    fn whitespace_lookup_and_spec() {
        let opts = TokenizerOptions {
            segmenter: Segmenter::Whitespace,
            min_len: 1,
            ..TokenizerOptions::default()
        };
        let t = Tokenizer::new(&opts).unwrap();
        let text = "北京 的 天气 The weather";
        let mut all = vec![];
        t.lookup_tokens_with(text, &mut Scratch::default(), |w| all.push(w.to_string()));
        assert_eq!(all, ["北京", "的", "天气", "the", "weather"]);
        let spec = opts.spec().unwrap();
        assert_eq!(spec.tokenizer, "whitespace");
        let json = String::from_utf8(spec.encode()).unwrap();
        assert!(json.contains("\"tokenizer\":\"whitespace\""), "{json}");
        let back = TokenizerSpec::decode(json.as_bytes()).unwrap();
        assert_eq!(
            Tokenizer::from_spec(&back).unwrap().tokens(text),
            t.tokens(text)
        );
        assert!(back.describe().starts_with("split at white space"));
        // A segmenter this build does not know is refused where text would be cut.
        let unknown = json.replace("whitespace", "mecab");
        let e = TokenizerSpec::decode(unknown.as_bytes()).unwrap_err();
        assert!(e.contains("mecab") && e.contains("upgrade"), "{e}");
        assert!("klingon"
            .parse::<Segmenter>()
            .unwrap_err()
            .contains("whitespace"));
    }

    #[cfg(feature = "jieba")]
    #[test]
    fn jieba_segments_chinese_into_words() {
        let opts = TokenizerOptions {
            segmenter: Segmenter::Jieba,
            min_len: 2,
            ..TokenizerOptions::default()
        };
        let t = Tokenizer::new(&opts).unwrap();
        let text = "我们中出了一个叛徒。Topic models 很有用！";
        let tokens = t.tokens(text);
        assert!(tokens.contains(&"我们".to_string()), "{tokens:?}");
        assert!(tokens.contains(&"叛徒".to_string()), "{tokens:?}");
        assert!(tokens.contains(&"topic".to_string()), "{tokens:?}");
        assert!(tokens.iter().all(|w| w.chars().count() >= 2), "{tokens:?}");
        let spec = TokenizerSpec::decode(&opts.spec().unwrap().encode()).unwrap();
        assert_eq!(spec.tokenizer, "jieba");
        assert_eq!(Tokenizer::from_spec(&spec).unwrap().tokens(text), tokens);
        let mut all = vec![];
        t.lookup_tokens_with(text, &mut Scratch::default(), |w| all.push(w.to_string()));
        let mut it = all.iter();
        assert!(tokens.iter().all(|tok| it.any(|a| a == tok)), "{all:?}");
    }

    #[cfg(not(feature = "jieba"))]
    #[test]
    fn jieba_without_the_feature_is_refused() {
        let opts = TokenizerOptions {
            segmenter: Segmenter::Jieba,
            ..TokenizerOptions::default()
        };
        let e = Tokenizer::new(&opts).err().unwrap().to_string();
        assert!(e.contains("--features jieba") && !e.contains('\n'), "{e}");
        // A corpus that records it still reads; only cutting text is refused.
        let spec = TokenizerSpec::decode(&opts.spec().unwrap().encode()).unwrap();
        assert!(Tokenizer::from_spec(&spec).err().unwrap().contains("jieba"));
    }

    #[test]
    fn defaults_record_what_version_1_recorded() {
        // The fields added for the segmenter and the language are left out at their defaults,
        // so a default corpus records what version 1 recorded but for the version of the rules,
        // and old specs read back.
        let old = r#"{"version":1,"lowercase":true,"english_stopwords":true,"extra_stopwords":[],"min_len":3,"stem":false,"drop_numbers":true,"words_given":false}"#;
        assert_eq!(
            String::from_utf8(TokenizerOptions::default().spec().unwrap().encode()).unwrap(),
            old.replace("\"version\":1", &format!("\"version\":{TOKENIZER_VERSION}"))
        );
        assert_eq!(
            String::from_utf8(TokenizerSpec::defaults().encode()).unwrap(),
            old
        );
        let spec = TokenizerSpec::decode(old.as_bytes()).unwrap();
        assert_eq!(spec, TokenizerSpec::defaults());
        assert_eq!(spec.segmenter(), Ok(Segmenter::Words));
        assert_eq!(spec.language(), Ok(Language::English));
        assert_eq!(
            spec.describe(),
            "lower-cased, English stop words dropped, min length 3, numbers dropped, not stemmed"
        );
    }

    #[test]
    fn languages_choose_stop_words_and_stemmer() {
        let de = TokenizerOptions {
            language: Language::German,
            stem: true,
            ..TokenizerOptions::default()
        };
        let text = "Die Katzen und die Hunde spielten nicht über den Häusern, aber das Haus";
        let tokens = tok(de.clone(), text);
        assert_eq!(tokens, ["katz", "hund", "spielt", "haus", "haus"]);
        // English stop words are not German ones: "die", "und" are kept in English.
        let en = tok(
            TokenizerOptions {
                stem: true,
                ..TokenizerOptions::default()
            },
            text,
        );
        assert!(
            en.contains(&"die".to_string()) && en.contains(&"und".to_string()),
            "{en:?}"
        );
        // Recorded and rebuilt.
        let spec = de.spec().unwrap();
        assert_eq!(spec.language, "german");
        let back = TokenizerSpec::decode(&spec.encode()).unwrap();
        assert_eq!(Tokenizer::from_spec(&back).unwrap().tokens(text), tokens);
        assert_eq!(
            back.describe(),
            "lower-cased, German stop words dropped, min length 3, numbers dropped, stemmed (German Snowball)"
        );
        let unknown = String::from_utf8(spec.encode())
            .unwrap()
            .replace("german", "klingon");
        assert!(TokenizerSpec::decode(unknown.as_bytes())
            .unwrap_err()
            .contains("klingon"));
        // Without stemming, French stop words (NLTK's list) are dropped.
        let fr = TokenizerOptions {
            language: Language::French,
            ..TokenizerOptions::default()
        };
        assert_eq!(
            tok(fr, "Les chats et les chiens sont dans la maison"),
            ["chats", "chiens", "maison"]
        );
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

    #[test]
    fn nfc_turkish_casing_and_stop_words_whatever_the_case() {
        // "café" typed precomposed and with a combining accent is one word; "été" (a French stop
        // word) is dropped in either form; min length counts NFC characters ("ça": 2).
        let fr = TokenizerOptions {
            language: Language::French,
            min_len: 3,
            ..TokenizerOptions::default()
        };
        assert_eq!(
            tok(
                fr.clone(),
                "caf\u{e9} cafe\u{301} e\u{301}te\u{301} c\u{327}a maison"
            ),
            ["caf\u{e9}", "caf\u{e9}", "maison"]
        );
        // Turkish: I → ı and İ → i (not i + U+0307), in words of any script, also in the stop
        // words of a file; "için" is a Turkish stop word in either case.
        let tr = TokenizerOptions {
            language: Language::Turkish,
            ..TokenizerOptions::default()
        };
        assert_eq!(
            tok(tr.clone(), "İstanbul istanbul IŞIK Işık İÇİN için ISTANBUL"),
            ["istanbul", "istanbul", "ışık", "ışık", "ıstanbul"]
        );
        // With --keep-case, stop words still go whatever their case (README: matched after
        // lower-casing), and a stop-word file's words match every casing.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("stop.txt");
        std::fs::write(&file, "Alpha\n").unwrap();
        let kept = TokenizerOptions {
            lowercase: false,
            stopword_file: Some(file),
            ..TokenizerOptions::default()
        };
        assert_eq!(
            tok(kept.clone(), "The cat THE dog the alpha ALPHA Alpha end"),
            ["cat", "dog", "end"]
        );
        assert_eq!(kept.spec().unwrap().extra_stopwords, ["alpha"]);
        // A corpus of version 2 is followed by its own rules: no NFC, case-sensitive stop words.
        let old = TokenizerSpec {
            version: 2,
            ..kept.spec().unwrap()
        };
        assert_eq!(
            Tokenizer::from_spec(&old)
                .unwrap()
                .tokens("The cafe\u{301} alpha ALPHA"),
            ["The", "cafe\u{301}", "ALPHA"]
        );
        // A given vocabulary (bag-of-words) is met as written: no NFC, no Turkish casing, its
        // stop words matched by Unicode's default lower case, as prepare matched them.
        let given = TokenizerSpec {
            words_given: true,
            lowercase: false,
            ..tr.spec().unwrap()
        };
        assert_eq!(
            Tokenizer::from_spec(&given)
                .unwrap()
                .tokens("cafe\u{301} İLE ile"),
            ["cafe\u{301}", "İLE"]
        );
        // The same options whatever the rules' version: a stop-word file's words as version 2
        // kept them with --keep-case, and between two given vocabularies the case recorded from
        // the vocabulary, are not differences; a minimum length is.
        let v2 = TokenizerSpec {
            version: 2,
            extra_stopwords: vec!["Alpha".into()],
            ..kept.spec().unwrap()
        };
        assert!(v2.same_options(&kept.spec().unwrap()));
        let lower = TokenizerSpec {
            lowercase: true,
            ..given.clone()
        };
        assert!(given.same_options(&lower));
        let longer = TokenizerSpec {
            min_len: 4,
            ..given.clone()
        };
        assert!(!given.same_options(&longer));
        // The current rules, rebuilt from the spec, cut as prepare did.
        for opts in [fr, tr, kept] {
            let text = "İÇİN The cafe\u{301} IŞIK alpha ALPHA été";
            assert_eq!(
                Tokenizer::from_spec(&opts.spec().unwrap())
                    .unwrap()
                    .tokens(text),
                Tokenizer::new(&opts).unwrap().tokens(text)
            );
        }
    }
}
