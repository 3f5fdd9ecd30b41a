//! Training log-likelihood per token from point estimates of θ and φ: how well the model explains
//! the documents it was trained on,
//!
//! ```text
//! L = (1/N) Σ_d Σ_{w ∈ d} log Σ_k θ_dk φ_kw,    θ_dk = (A_dk + α) / (n_d + Kα),
//! ```
//!
//! with A the document-topic counts and φ = B̂ (SaberLDA Eq. 2). Σ_k θ_dk φ_kw is computed with
//! the same sparse decomposition as the sampler (SaberLDA §2.3):
//!
//! ```text
//! Σ_k θ_dk φ_kw = ( Σ_{k: A_dk > 0} A_dk φ_kw  +  α Σ_k φ_kw ) / (n_d + Kα),
//! ```
//!
//! where Σ_k φ_kw is precomputed per word ([`Phi::word_mass`]), so a token costs O(K_d) (the
//! document's non-zero topics), not O(K).
//!
//! Determinism: each document is summed in `f64` in token order, documents are grouped in chunks
//! of a fixed size (256) summed in order, and chunk sums are added in chunk order —
//! so the result is the same bits for any number of threads.

use crate::{DocTopics, Hyperparameters, ModelError, Phi};
use rayon::prelude::*;
use topos_corpus::Docs;

/// Documents per parallel task. Fixed, so floating-point sums are grouped the same way whatever
/// the number of threads.
pub(crate) const DOC_CHUNK: usize = 256;

/// Refuses a document with a word id outside φ's vocabulary.
pub(crate) fn check_words(words: &[u32], d: usize, phi: &Phi) -> Result<(), ModelError> {
    match words.iter().find(|&&w| w as usize >= phi.num_words()) {
        Some(w) => Err(ModelError::Mismatch(format!(
            "document {d} has word id {w} but the model has {} words",
            phi.num_words()
        ))),
        None => Ok(()),
    }
}

/// Refuses hyperparameters whose K differs from φ's.
pub(crate) fn check_topics(phi: &Phi, hyper: &Hyperparameters) -> Result<(), ModelError> {
    if phi.num_topics() != hyper.k() {
        return Err(ModelError::Mismatch(format!(
            "phi has {} topics but the hyperparameters say K = {}",
            phi.num_topics(),
            hyper.k()
        )));
    }
    Ok(())
}

/// Training log-likelihood per token (see the module documentation). `doc_topics` must hold the
/// counts A of exactly `docs` (same documents, Σ_k A_dk = n_d): anything else is a
/// [`ModelError::Mismatch`], as is a corpus without tokens.
pub fn log_likelihood_per_token(
    phi: &Phi,
    hyper: &Hyperparameters,
    docs: Docs,
    doc_topics: &DocTopics,
) -> Result<f64, ModelError> {
    check_topics(phi, hyper)?;
    if doc_topics.num_topics as usize != phi.num_topics() {
        return Err(ModelError::Mismatch(format!(
            "document-topic counts have K = {} but the model has K = {}",
            doc_topics.num_topics,
            phi.num_topics()
        )));
    }
    if doc_topics.len() != docs.len() {
        return Err(ModelError::Mismatch(format!(
            "{} documents but document-topic counts for {}",
            docs.len(),
            doc_topics.len()
        )));
    }
    if docs.num_tokens() == 0 {
        return Err(ModelError::Mismatch("the documents have no tokens".into()));
    }
    let k_alpha = hyper.alpha.sum();
    let prior = phi.prior_mass(&hyper.alpha);
    let chunks = docs.len().div_ceil(DOC_CHUNK);
    let sums = (0..chunks)
        .into_par_iter()
        .map(|c| {
            let mut chunk_sum = 0.0f64;
            for d in c * DOC_CHUNK..((c + 1) * DOC_CHUNK).min(docs.len()) {
                let words = docs.doc(d);
                check_words(words, d, phi)?;
                let (topics, counts) = doc_topics.row(d);
                let n_d: u64 = counts.iter().map(|&c| u64::from(c)).sum();
                if n_d != words.len() as u64 {
                    return Err(ModelError::Mismatch(format!(
                        "document {d} has {} tokens but its topic counts sum to {n_d}",
                        words.len()
                    )));
                }
                let mut doc_sum = 0.0f64;
                for &w in words {
                    let sparse = phi.weighted_sum(
                        w,
                        topics
                            .iter()
                            .copied()
                            .zip(counts.iter().map(|&a| f64::from(a))),
                    );
                    doc_sum += (sparse + prior.get(w)).ln();
                }
                chunk_sum += doc_sum - n_d as f64 * (n_d as f64 + k_alpha).ln();
            }
            Ok(chunk_sum)
        })
        .collect::<Result<Vec<f64>, ModelError>>()?;
    Ok(sums.iter().sum::<f64>() / docs.num_tokens() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Provenance, TopicModel};
    use topos_corpus::{OwnedDocs, Vocabulary};

    /// A 4-word, 3-topic model and three documents with topic counts consistent with them.
    fn fixture() -> (TopicModel, OwnedDocs, DocTopics) {
        let vocab = Vocabulary::new(["a", "b", "c", "d"].map(String::from).into());
        let hyper = Hyperparameters::new(3, Some(0.3), Some(0.05)).unwrap();
        let b = vec![4, 0, 1, 0, 3, 0, 2, 0, 5, 0, 1, 1];
        let model = TopicModel::from_counts(vocab, hyper, b, Provenance::default());
        let docs: OwnedDocs = [&[0u32, 0, 1, 2][..], &[3, 2], &[1, 1, 1, 0, 2]]
            .into_iter()
            .collect();
        let mut a = DocTopics::new(3);
        a.push_dense(&[3, 1, 0]);
        a.push_dense(&[0, 0, 2]);
        a.push_dense(&[1, 3, 1]);
        (model, docs, a)
    }

    /// Σ_d Σ_w log Σ_k θ_dk φ_kw over all K, in f64 straight from the counts.
    fn brute_force(model: &TopicModel, docs: &OwnedDocs, a: &DocTopics) -> f64 {
        let (v, k) = (model.num_words(), model.num_topics());
        let h = &model.hyper;
        let mut total = 0.0;
        let mut n = 0;
        for (d, words) in docs.view().iter().enumerate() {
            let mut dense = vec![0.0f64; k];
            let (ts, cs) = a.row(d);
            for (&t, &c) in ts.iter().zip(cs) {
                dense[usize::from(t)] = f64::from(c);
            }
            for &w in words {
                let p: f64 = (0..k)
                    .map(|t| {
                        let theta =
                            (dense[t] + h.alpha.get(t)) / (words.len() as f64 + h.alpha.sum());
                        let phi = (f64::from(model.word_row(w)[t]) + h.beta)
                            / (model.topic_totals[t] as f64 + v as f64 * h.beta);
                        theta * phi
                    })
                    .sum();
                total += p.ln();
                n += 1;
            }
        }
        total / f64::from(n)
    }

    #[test]
    fn matches_dense_brute_force() {
        let (mut model, docs, a) = fixture();
        for alpha in [None, Some(vec![0.05, 0.6, 0.25])] {
            if let Some(values) = alpha {
                model.hyper.alpha = crate::Alpha::from_values(values).unwrap();
            }
            let phi = Phi::from_model(&model).unwrap();
            let sparse = log_likelihood_per_token(&phi, &model.hyper, docs.view(), &a).unwrap();
            let dense = brute_force(&model, &docs, &a);
            assert!((sparse - dense).abs() < 1e-6, "{sparse} vs {dense}");
            assert!(sparse < 0.0);
        }
    }

    #[test]
    fn deterministic_across_thread_counts() {
        // Enough documents for several chunks.
        let (model, _, _) = fixture();
        let phi = Phi::from_model(&model).unwrap();
        let mut docs = OwnedDocs::new();
        let mut a = DocTopics::new(3);
        for d in 0..(3 * DOC_CHUNK + 5) as u32 {
            let words: Vec<u32> = (0..(d % 7 + 1)).map(|i| (d * 3 + i) % 4).collect();
            let mut row = [0u32; 3];
            for i in 0..words.len() {
                row[(d as usize + i * i) % 3] += 1;
            }
            docs.push(&words);
            a.push_dense(&row);
        }
        let run = |threads| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| log_likelihood_per_token(&phi, &model.hyper, docs.view(), &a))
                .unwrap()
        };
        assert_eq!(run(1).to_bits(), run(2).to_bits());
        assert!((run(1) - brute_force(&model, &docs, &a)).abs() < 1e-6);
    }

    #[test]
    fn refuses_counts_of_other_documents() {
        let (model, docs, mut a) = fixture();
        let phi = Phi::from_model(&model).unwrap();
        let h = &model.hyper;
        let mut wrong = a.clone();
        wrong.counts[0] = 2;
        let e = log_likelihood_per_token(&phi, h, docs.view(), &wrong).unwrap_err();
        assert!(e.to_string().contains("document 0 has 4 tokens"), "{e}");
        a.push_dense(&[1, 0, 0]);
        let e = log_likelihood_per_token(&phi, h, docs.view(), &a).unwrap_err();
        assert!(e.to_string().contains("3 documents"), "{e}");
        let bad_docs: OwnedDocs = [&[0u32, 9][..]].into_iter().collect();
        let mut one = DocTopics::new(3);
        one.push_dense(&[2, 0, 0]);
        let e = log_likelihood_per_token(&phi, h, bad_docs.view(), &one).unwrap_err();
        assert!(e.to_string().contains("word id 9"), "{e}");
    }
}
