//! One evaluation report (`topos eval`): held-out log-likelihood and perplexity by document
//! completion ([`crate::heldout`]), training log-likelihood when the training document-topic
//! counts are at hand ([`crate::likelihood`]), and UMass coherence ([`crate::coherence`]).

use crate::coherence::{umass_coherence, DEFAULT_TOP_WORDS};
use crate::foldin::FoldInOptions;
use crate::heldout::heldout_log_likelihood;
use crate::likelihood::log_likelihood_per_token;
use crate::{DocTopics, ModelError, Phi, TopicModel};
use serde::Serialize;
use topos_corpus::Docs;

/// What to compute.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct EvalOptions {
    /// Fold-in chain of the held-out documents.
    pub foldin: FoldInOptions,
    /// Top words per topic for coherence (default 10).
    pub coherence_top_words: usize,
}

impl Default for EvalOptions {
    fn default() -> Self {
        Self {
            foldin: FoldInOptions::default(),
            coherence_top_words: DEFAULT_TOP_WORDS,
        }
    }
}

/// The evaluation report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Evaluation {
    /// Mean log-likelihood per scored held-out token (natural log; higher is better); `None`
    /// when the corpus holds no documents out (the rest of the evaluation needs none).
    pub heldout_ll_per_token: Option<f64>,
    /// exp(−`heldout_ll_per_token`) (lower is better).
    pub perplexity: Option<f64>,
    /// Held-out documents scored.
    pub heldout_docs: u64,
    /// Held-out documents skipped for having fewer than 2 tokens.
    pub heldout_docs_skipped: u64,
    /// Tokens folded in (first halves) and scored (second halves).
    pub heldout_tokens_observed: u64,
    pub heldout_tokens_scored: u64,
    /// Training log-likelihood per token from point estimates, when the training document-topic
    /// counts were given.
    pub train_ll_per_token: Option<f64>,
    /// UMass coherence over the top `coherence_top_words` words, counted in the training documents.
    pub coherence_top_words: usize,
    pub coherence_mean: f64,
    pub coherence_per_topic: Vec<f64>,
    /// The fold-in chain used.
    pub foldin: FoldInOptions,
    /// The differential-privacy guarantee of the model evaluated (`null` for an ordinary model).
    pub privacy: Option<topos_privacy::Guarantee>,
}

/// Evaluates `model` (with its `phi`) on `heldout` documents (none: no held-out score);
/// coherence is counted in the `train` documents and, given their counts `train_doc_topics`, the
/// training log-likelihood is reported.
pub fn evaluate(
    model: &TopicModel,
    phi: &Phi,
    heldout: Docs,
    train: Docs,
    train_doc_topics: Option<&DocTopics>,
    opts: &EvalOptions,
) -> Result<Evaluation, ModelError> {
    let held = match heldout.is_empty() {
        true => None,
        false => Some(heldout_log_likelihood(
            phi,
            &model.hyper,
            heldout,
            &opts.foldin,
        )?),
    };
    let train_ll = train_doc_topics
        .map(|a| log_likelihood_per_token(phi, &model.hyper, train, a))
        .transpose()?;
    let coherence = umass_coherence(model, train, opts.coherence_top_words)?;
    Ok(Evaluation {
        heldout_ll_per_token: held.as_ref().map(|h| h.ll_per_token),
        perplexity: held.as_ref().map(|h| h.perplexity),
        heldout_docs: held.as_ref().map_or(0, |h| h.docs_scored),
        heldout_docs_skipped: held.as_ref().map_or(0, |h| h.docs_skipped),
        heldout_tokens_observed: held.as_ref().map_or(0, |h| h.tokens_observed),
        heldout_tokens_scored: held.as_ref().map_or(0, |h| h.tokens_scored),
        train_ll_per_token: train_ll,
        coherence_top_words: coherence.top_words,
        coherence_mean: coherence.mean,
        coherence_per_topic: coherence.per_topic,
        foldin: opts.foldin,
        privacy: model.privacy.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Hyperparameters, Provenance};
    use topos_corpus::{OwnedDocs, Vocabulary};

    #[test]
    fn combines_the_parts() {
        let vocab = Vocabulary::new(["a", "b", "c", "d"].map(String::from).into());
        let hyper = Hyperparameters::new(2, Some(0.1), Some(0.01)).unwrap();
        let model = TopicModel::from_counts(
            vocab,
            hyper,
            vec![3, 0, 2, 0, 0, 4, 0, 1],
            Provenance::default(),
        );
        let phi = Phi::from_model(&model).unwrap();
        let train: OwnedDocs = [&[0u32, 1, 0][..], &[2, 2, 3, 1], &[0, 2, 2]]
            .into_iter()
            .collect();
        let mut a = DocTopics::new(2);
        a.push_dense(&[3, 0]);
        a.push_dense(&[1, 3]);
        a.push_dense(&[1, 2]);
        let heldout: OwnedDocs = [&[0u32, 1, 1, 0][..], &[3]].into_iter().collect();
        let opts = EvalOptions::default();
        let e = evaluate(&model, &phi, heldout.view(), train.view(), Some(&a), &opts).unwrap();
        let held =
            heldout_log_likelihood(&phi, &model.hyper, heldout.view(), &opts.foldin).unwrap();
        assert_eq!(e.heldout_ll_per_token, Some(held.ll_per_token));
        assert_eq!((e.heldout_docs, e.heldout_docs_skipped), (1, 1));
        assert_eq!(e.heldout_tokens_scored, 2);
        let train_ll = log_likelihood_per_token(&phi, &model.hyper, train.view(), &a).unwrap();
        assert_eq!(e.train_ll_per_token, Some(train_ll));
        assert_eq!(e.coherence_per_topic.len(), 2);
        let json = serde_json::to_value(&e).unwrap();
        assert_eq!(json["foldin"]["sweeps"], 50);
        assert!(json["perplexity"].as_f64().unwrap() > 1.0);
        let without = evaluate(&model, &phi, heldout.view(), train.view(), None, &opts).unwrap();
        assert_eq!(without.train_ll_per_token, None);
        // Nothing held out: no held-out score, the rest as before.
        let none = OwnedDocs::new();
        let e = evaluate(&model, &phi, none.view(), train.view(), Some(&a), &opts).unwrap();
        assert_eq!((e.heldout_ll_per_token, e.perplexity), (None, None));
        assert_eq!(e.heldout_docs, 0);
        assert_eq!(e.train_ll_per_token, Some(train_ll));
        assert_eq!(e.coherence_per_topic.len(), 2);
    }
}
