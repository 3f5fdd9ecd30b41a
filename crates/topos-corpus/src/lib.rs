//! Corpora for Topos: documents as rows of word ids over a vocabulary.
//!
//! The training and evaluation code sees a corpus only through [`Docs`] (a CSR view: document
//! offsets into one token array) and [`Vocabulary`].

pub mod docs;
pub mod vocab;

pub use docs::{Docs, OwnedDocs};
pub use vocab::Vocabulary;
