//! Updating a model with new documents (`topos update MODEL NEW.tcorp`): training continues on
//! the new documents with the model's word-topic counts held fixed beside theirs.
//!
//! The model's counts B_old are the sufficient statistics of its training documents' assignments:
//! the collapsed conditional of a new token given every old token's topic is the usual one with
//! B_old added to the new documents' counts (Griffiths & Steyvers 2004, Eq. 5). Keeping the old
//! assignments fixed while the new documents are sampled is the incremental Gibbs sampler of
//! streaming LDA (Yao, Mimno & McCallum 2009, "Efficient methods for topic model inference on
//! streaming document collections", §2), which is what makes an update cost the new documents'
//! tokens, not the union's. The old counts enter every sampler as fixed counts
//! ([`crate::engine::EngineSetup::fixed_counts`]), so no sampler changes, and the model written
//! holds both: B_old + B_new over the union vocabulary.
//!
//! New words are appended to the model's vocabulary in the order the new corpus lists them; the
//! old words keep their ids, so the new model's rows for them extend the old rows.

use crate::counts::WordTopics;
use topos_corpus::{Corpus, OwnedDocs, Vocabulary};
use topos_model::TopicModel;

/// What a model and a new corpus give an update run.
pub struct UpdateInput {
    /// The new documents over the union vocabulary (the model's words, then the new ones).
    pub corpus: Corpus,
    /// The model's counts over the union vocabulary (new words: empty rows).
    pub fixed_counts: WordTopics,
    /// Words of the new corpus the model did not know.
    pub new_words: usize,
}

/// Why an update was refused.
#[derive(Debug, thiserror::Error)]
pub enum UpdateError {
    #[error("the model is private (its counts are a noisy release): an update would mix its noise with new data without a guarantee; train a new model instead")]
    Private,
    #[error("the new corpus was prepared with other tokenizer options than the model's (new corpus: {new}; model: {model}): prepare it with the same options so the same words get the same ids")]
    Tokenizer { new: String, model: String },
}

/// The union vocabulary, the new documents over it and the model's counts over it.
pub fn prepare(model: &TopicModel, corpus: &Corpus) -> Result<UpdateInput, UpdateError> {
    if model.privacy.is_some() {
        return Err(UpdateError::Private);
    }
    if let (Some(m), Some(c)) = (&model.tokenizer, corpus.tokenizer()) {
        // The same options by other versions of the rules (a model of an older build's corpus,
        // new documents prepared by this one) are accepted: text both cut alike differs only
        // where NFC or Turkish casing changes it, or, with --keep-case, in capitalized stop
        // words (`TokenizerSpec::same_options`).
        if !m.same_options(c) {
            return Err(UpdateError::Tokenizer {
                new: c.describe(),
                model: m.describe(),
            });
        }
    }
    let mut words: Vec<String> = model.vocab.words().to_vec();
    let map: Vec<u32> = corpus
        .vocab()
        .words()
        .iter()
        .map(|w| match model.vocab.id(w) {
            Some(id) => id,
            None => {
                words.push(w.clone());
                (words.len() - 1) as u32
            }
        })
        .collect();
    let new_words = words.len() - model.vocab.len();
    let remap = |docs: topos_corpus::Docs<'_>| -> OwnedDocs {
        let mut out = OwnedDocs::new();
        let mut buf = Vec::new();
        for doc in docs.iter() {
            buf.clear();
            buf.extend(doc.iter().map(|&w| map[w as usize]));
            out.push(&buf);
        }
        out
    };
    let union = Vocabulary::new(words);
    let v = union.len();
    let mut remapped = Corpus::from_parts(union, remap(corpus.train()), remap(corpus.heldout()));
    if let Some(t) = corpus.tokenizer().or(model.tokenizer.as_ref()) {
        remapped = remapped.with_tokenizer(t.clone());
    }
    let mut fixed = WordTopics::from_dense(&model.word_topic, model.hyper.num_topics);
    let nnz = fixed.topics.len() as u64;
    fixed.offsets.resize(v + 1, nnz);
    Ok(UpdateInput {
        corpus: remapped,
        fixed_counts: fixed,
        new_words,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use topos_model::{Hyperparameters, Provenance};

    #[test]
    fn new_words_are_appended_and_old_counts_kept() {
        let vocab = Vocabulary::new(["a", "b", "c"].map(String::from).into());
        let hyper = Hyperparameters::new(2, Some(0.1), Some(0.01)).unwrap();
        let model =
            TopicModel::from_counts(vocab, hyper, vec![3, 0, 0, 2, 1, 1], Provenance::default());
        let new_vocab = Vocabulary::new(["d", "b", "e", "a"].map(String::from).into());
        let train: OwnedDocs = [&[0u32, 1, 2][..], &[3, 3]].into_iter().collect();
        let heldout: OwnedDocs = [&[2u32, 0][..]].into_iter().collect();
        let corpus = Corpus::from_parts(new_vocab, train, heldout);
        let u = prepare(&model, &corpus).unwrap();
        assert_eq!(u.new_words, 2);
        assert_eq!(u.corpus.vocab().words(), &["a", "b", "c", "d", "e"]);
        let docs: Vec<Vec<u32>> = u.corpus.train().iter().map(<[u32]>::to_vec).collect();
        assert_eq!(docs, vec![vec![3, 1, 4], vec![0, 0]]);
        let held: Vec<Vec<u32>> = u.corpus.heldout().iter().map(<[u32]>::to_vec).collect();
        assert_eq!(held, vec![vec![4, 3]]);
        assert_eq!(u.fixed_counts.num_words(), 5);
        assert_eq!(
            u.fixed_counts.to_dense(),
            vec![3, 0, 0, 2, 1, 1, 0, 0, 0, 0]
        );
        assert_eq!(u.fixed_counts.totals, vec![4, 3]);
    }
}
