//! Topic mixtures θ of unseen documents: Gibbs fold-in with φ fixed ([`crate::foldin`]) over whole
//! documents, θ averaged over the post-burn-in sweeps. Token i of document d draws its random
//! numbers by its global index `docs.doc_start(d) + i`, so results are the same bits for any
//! number of threads, and a document's θ depends only on its position in `docs`, the seed and
//! the options.
//!
//! Words unknown to the model must be dropped before inference (there is no φ for them):
//! [`doc_to_ids`] does that for a tokenized document.

use crate::foldin::{FoldIn, FoldInOptions, FoldedDoc};
use crate::likelihood::check_words;
use crate::{Hyperparameters, ModelError, Phi};
use rayon::prelude::*;
use serde::Serialize;
use topos_corpus::{Docs, Vocabulary};

/// Options of inference: the fold-in chain (default 50 sweeps, 10 burn-in, seed 1).
pub type InferOptions = FoldInOptions;

/// The inferred mixture of one document, sparse: θ_dk = (Ā_dk + α_k) / (n_d + Σ_k α_k), where
/// Ā_dk is the average count of topic k over the post-burn-in sweeps (non-zero only at `topics`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DocTheta {
    pub num_topics: u32,
    /// The model's document prior (one value per topic; not repeated in every document's JSON).
    #[serde(skip)]
    pub alpha: crate::Alpha,
    /// Tokens of the document, n_d.
    pub num_tokens: u64,
    /// Topics that received tokens, increasing.
    pub topics: Vec<u16>,
    /// Ā_dk beside `topics`.
    pub mean_counts: Vec<f64>,
}

/// A topic and its probability in a document.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TopicWeight {
    pub topic: u32,
    pub probability: f64,
}

impl DocTheta {
    fn new(folded: FoldedDoc, hyper: &Hyperparameters) -> Self {
        Self {
            num_topics: hyper.num_topics,
            alpha: hyper.alpha.clone(),
            num_tokens: folded.num_tokens,
            topics: folded.topics,
            mean_counts: folded.mean_counts,
        }
    }

    fn denominator(&self) -> f64 {
        self.num_tokens as f64 + self.alpha.sum()
    }

    /// θ_dk of a topic not in `topics`: α_k / (n_d + Σ_k α_k).
    pub fn floor(&self, k: usize) -> f64 {
        self.alpha.get(k) / self.denominator()
    }

    /// θ_dk.
    pub fn probability(&self, k: usize) -> f64 {
        let mean = self
            .topics
            .binary_search(&(k as u16))
            .map_or(0.0, |i| self.mean_counts[i]);
        (mean + self.alpha.get(k)) / self.denominator()
    }

    /// θ_d as a dense row of K probabilities.
    pub fn dense(&self) -> Vec<f32> {
        let denominator = self.denominator();
        let mut row: Vec<f32> = match self.alpha.symmetric_value() {
            Some(a) => vec![(a / denominator) as f32; self.num_topics as usize],
            None => self
                .alpha
                .values()
                .iter()
                .map(|&a| (a / denominator) as f32)
                .collect(),
        };
        for (&k, &m) in self.topics.iter().zip(&self.mean_counts) {
            row[usize::from(k)] = ((m + self.alpha.get(usize::from(k))) / denominator) as f32;
        }
        row
    }

    /// The `n` most probable topics (at most K), most probable first (ties: smaller topic id).
    /// With a symmetric α the topics that received tokens come first (every other topic has the
    /// same, smallest, probability α / (n_d + Kα)), and the others fill the list in topic order
    /// when `n` asks for more, so that `n` = K lists every topic as the dense row does; with an
    /// asymmetric α a topic without tokens may outrank one with tokens, so every topic is a
    /// candidate.
    pub fn top_topics(&self, n: usize) -> Vec<TopicWeight> {
        if self.num_tokens == 0 {
            // No known word: no topic mixture to rank (the prior alone says nothing of it).
            return Vec::new();
        }
        let denominator = self.denominator();
        let mut all: Vec<TopicWeight> = match self.alpha.symmetric_value() {
            Some(a) => self
                .topics
                .iter()
                .zip(&self.mean_counts)
                .map(|(&k, &m)| TopicWeight {
                    topic: u32::from(k),
                    probability: (m + a) / denominator,
                })
                .collect(),
            None => (0..self.num_topics as usize)
                .map(|k| TopicWeight {
                    topic: k as u32,
                    probability: self.probability(k),
                })
                .collect(),
        };
        all.sort_by(|a, b| {
            b.probability
                .total_cmp(&a.probability)
                .then(a.topic.cmp(&b.topic))
        });
        if let Some(a) = self.alpha.symmetric_value() {
            let without_tokens = (0..self.num_topics as u16)
                .filter(|k| self.topics.binary_search(k).is_err())
                .map(|k| TopicWeight {
                    topic: u32::from(k),
                    probability: a / denominator,
                });
            let wanted = n.saturating_sub(all.len());
            all.extend(without_tokens.take(wanted));
        }
        all.truncate(n);
        all
    }
}

/// θ of every document of `docs` (see the module documentation).
pub fn infer(
    phi: &Phi,
    hyper: &Hyperparameters,
    docs: Docs,
    opts: &InferOptions,
) -> Result<Vec<DocTheta>, ModelError> {
    let sampler = FoldIn::new(phi, hyper, *opts)?;
    (0..docs.len())
        .into_par_iter()
        .map_init(
            || sampler.scratch(),
            |scratch, d| {
                let words = docs.doc(d);
                check_words(words, d, phi)?;
                let folded = sampler.fold_in(words, docs.doc_start(d), scratch);
                Ok(DocTheta::new(folded, hyper))
            },
        )
        .collect()
}

/// θ of every document as dense rows of K probabilities.
pub fn infer_dense(
    phi: &Phi,
    hyper: &Hyperparameters,
    docs: Docs,
    opts: &InferOptions,
) -> Result<Vec<Vec<f32>>, ModelError> {
    Ok(infer(phi, hyper, docs, opts)?
        .iter()
        .map(DocTheta::dense)
        .collect())
}

/// The ids of `tokens` in `vocab`, in order, dropping words the vocabulary does not know.
pub fn doc_to_ids(vocab: &Vocabulary, tokens: &[&str]) -> Vec<u32> {
    tokens.iter().filter_map(|t| vocab.id(t)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use topos_corpus::OwnedDocs;

    #[test]
    fn theta_views_agree() {
        let t = DocTheta {
            num_topics: 4,
            alpha: crate::Alpha::symmetric(4, 0.5),
            num_tokens: 6,
            topics: vec![1, 3],
            mean_counts: vec![2.0, 4.0],
        };
        // n + Kα = 8
        assert_eq!(t.floor(0), 0.5 / 8.0);
        assert_eq!(t.probability(3), 4.5 / 8.0);
        assert_eq!(t.probability(0), 0.5 / 8.0);
        assert_eq!(t.dense(), vec![0.0625, 0.3125, 0.0625, 0.5625]);
        let s: f32 = t.dense().iter().sum();
        assert!((s - 1.0).abs() < 1e-6);
        // Every topic when asked for K or more (the dense row's values, ranked), the topics
        // without tokens after those with, in topic order.
        let top = t.top_topics(5);
        let ranked: Vec<(u32, f32)> = top
            .iter()
            .map(|w| (w.topic, w.probability as f32))
            .collect();
        assert_eq!(
            ranked,
            vec![(3, 0.5625), (1, 0.3125), (0, 0.0625), (2, 0.0625)]
        );
        assert_eq!(t.top_topics(3).len(), 3);
        assert_eq!(t.top_topics(1).len(), 1);

        // An asymmetric prior with the same sum: a topic without tokens (0, α = 1.5) outranks
        // one with tokens (1: 2 + 0.1).
        let a = DocTheta {
            alpha: crate::Alpha::from_values(vec![1.5, 0.1, 0.2, 0.2]).unwrap(),
            ..t
        };
        assert_eq!(a.probability(0), 1.5 / 8.0);
        assert_eq!(a.probability(1), 2.1 / 8.0);
        let s: f32 = a.dense().iter().sum();
        assert!((s - 1.0).abs() < 1e-6);
        let top: Vec<u32> = a.top_topics(4).iter().map(|t| t.topic).collect();
        assert_eq!(top, vec![3, 1, 0, 2]);
        // A document without a known word ranks nothing, whatever the prior.
        let empty = DocTheta {
            num_tokens: 0,
            topics: vec![],
            mean_counts: vec![],
            ..a
        };
        assert!(empty.top_topics(4).is_empty());
    }

    #[test]
    fn infers_the_obvious_topic_and_drops_unknown_words() {
        #[rustfmt::skip]
        let phi = Phi::from_probabilities(4, 2, vec![
            0.5, 0.0,
            0.5, 0.0,
            0.0, 0.5,
            0.0, 0.5,
        ]).unwrap();
        let hyper = Hyperparameters::new(2, Some(0.1), None).unwrap();
        let vocab = Vocabulary::new(["w", "x", "y", "z"].map(String::from).into());
        let ids = doc_to_ids(&vocab, &["y", "unknown", "z", "z", "y"]);
        assert_eq!(ids, vec![2, 3, 3, 2]);
        let docs: OwnedDocs = [&ids[..], &[0, 1]].into_iter().collect();
        let theta = infer(&phi, &hyper, docs.view(), &InferOptions::default()).unwrap();
        assert_eq!(theta[0].topics, vec![1]);
        assert_eq!(theta[0].mean_counts, vec![4.0]);
        assert_eq!(theta[1].top_topics(1)[0].topic, 0);
        let dense = infer_dense(&phi, &hyper, docs.view(), &InferOptions::default()).unwrap();
        assert_eq!(dense[0], theta[0].dense());
        let bad: OwnedDocs = [&[5u32][..]].into_iter().collect();
        assert!(infer(&phi, &hyper, bad.view(), &InferOptions::default()).is_err());
    }
}
