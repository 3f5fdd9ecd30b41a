//! Corpora for Topos: documents as rows of word ids over a vocabulary, and how to make them.
//!
//! The training and evaluation code sees a corpus only through [`Docs`] (a CSR view: document
//! offsets into one token array) and [`Vocabulary`], usually via a [`Corpus`]: memory-mapped from
//! a `.tcorp` file ([`Corpus::open`]) or built in memory ([`Corpus::from_parts`]).
//!
//! [`prepare`] turns raw input into a `.tcorp` file in two streaming passes:
//! [`readers`] (lines, a directory of `.txt` files, JSONL, UCI bag of words, LDA-C) →
//! [`tokenize`] (Unicode words or white-space-separated tokens, lower-case, [`stopwords`] of a
//! [`language`], minimum length, numbers, stemming) →
//! [`prune`] (document-frequency bounds, vocabulary cap, frequency-ordered ids) →
//! [`split`] (deterministic held-out documents) → [`file`].

pub mod docs;
pub mod encoding;
pub mod error;
pub mod file;
pub mod language;
pub mod prepare;
pub mod prune;
pub mod readers;
pub mod segment;
pub mod split;
pub mod stopwords;
pub mod tokenize;
pub mod vocab;

pub use docs::{Docs, OwnedDocs};
pub use encoding::Encoding;
pub use error::CorpusError;
pub use file::{Corpus, CorpusWriter};
pub use language::Language;
pub use prepare::{prepare, Pass, PrepareOptions, PrepareProgress, PrepareReport};
pub use prune::PruneOptions;
pub use readers::InputFormat;
pub use tokenize::{Segmenter, Tokenizer, TokenizerOptions, TokenizerSpec};
pub use vocab::Vocabulary;
