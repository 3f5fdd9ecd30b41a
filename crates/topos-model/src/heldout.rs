//! Held-out log-likelihood per token and perplexity by **document completion** (Wallach, Murray,
//! Salakhutdinov & Mimno 2009, "Evaluation methods for topic models", §4: the "estimated θ"
//! method; the protocol of Rosen-Zvi et al. and of Mallet's document-completion evaluator).
//!
//! Each held-out document of n ≥ 2 tokens is split **by position**: its first ⌊n/2⌋ tokens are
//! observed, the remaining ⌈n/2⌉ are scored. Splitting by order (not every other token) keeps the
//! scored half unseen in the sense that matters for text — later text predicted from earlier
//! text — and is the common choice. θ_d is estimated from the observed half by Gibbs fold-in with
//! φ fixed ([`crate::foldin`]), averaging θ over the post-burn-in sweeps, and each scored token w
//! contributes
//!
//! ```text
//! log Σ_k θ̄_dk φ_kw = log( Σ_{k: Ā_dk>0} Ā_dk φ_kw + Σ_k α_k φ_kw ) − log(n_obs + Σ_k α_k)
//! ```
//!
//! (the sparse form of [`crate::likelihood`]; Σ_k α_k = Kα and Σ_k α_k φ_kw = α Σ_k φ_kw for a
//! symmetric prior). The reported figure is the mean over scored tokens,
//! and perplexity = exp(−mean). Documents with fewer than 2 tokens have nothing to condition on
//! or nothing to score; they are skipped and counted.
//!
//! Documents are processed in parallel (rayon); each yields its own `f64` sum, and the sums are
//! added in document order, so with the counter-based generator of the fold-in the result is the
//! same bits for any number of threads.

use crate::foldin::{FoldIn, FoldInOptions};
use crate::likelihood::check_words;
use crate::{Hyperparameters, ModelError, Phi};
use rayon::prelude::*;
use serde::Serialize;
use topos_corpus::Docs;

/// Result of a document-completion evaluation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HeldOut {
    /// Mean log-likelihood per scored token (natural log).
    pub ll_per_token: f64,
    /// exp(−`ll_per_token`).
    pub perplexity: f64,
    /// Documents scored.
    pub docs_scored: u64,
    /// Documents skipped for having fewer than 2 tokens.
    pub docs_skipped: u64,
    /// Tokens folded in (first halves).
    pub tokens_observed: u64,
    /// Tokens scored (second halves).
    pub tokens_scored: u64,
}

/// Per-document outcome: (log-likelihood of the scored half, observed tokens, scored tokens), or
/// `None` for a skipped document.
type DocScore = Option<(f64, u64, u64)>;

/// Document completion on `docs` (see the module documentation). Fails on a word id outside φ's
/// vocabulary, on invalid options, and when no document has 2 tokens.
pub fn heldout_log_likelihood(
    phi: &Phi,
    hyper: &Hyperparameters,
    docs: Docs,
    opts: &FoldInOptions,
) -> Result<HeldOut, ModelError> {
    let sampler = FoldIn::new(phi, hyper, *opts)?;
    let prior = phi.prior_mass(&hyper.alpha);
    let scores: Vec<DocScore> = (0..docs.len())
        .into_par_iter()
        .map_init(
            || sampler.scratch(),
            |scratch, d| {
                let words = docs.doc(d);
                check_words(words, d, phi)?;
                if words.len() < 2 {
                    return Ok(None);
                }
                let (observed, scored) = words.split_at(words.len() / 2);
                let folded = sampler.fold_in(observed, docs.doc_start(d), scratch);
                let arguments = scored.iter().map(|&w| {
                    let pairs = folded
                        .topics
                        .iter()
                        .copied()
                        .zip(folded.mean_counts.iter().copied());
                    phi.weighted_sum(w, pairs) + prior.get(w)
                });
                Ok(Some(doc_score(hyper, observed.len(), arguments)))
            },
        )
        .collect::<Result<_, ModelError>>()?;
    combine(scores, docs.len())
}

/// The arguments [`heldout_from_arguments`] reads, for documents `range` of `docs`, computed on
/// the host by [`heldout_log_likelihood`]'s own fold-in: indexed from `docs.doc_start(range.start)`,
/// one per token, 0 where a token is not scored. A multi-process run computes each process's
/// share of the held-out documents this way and concatenates them, for the single process's
/// bits.
pub fn heldout_arguments(
    phi: &Phi,
    hyper: &Hyperparameters,
    docs: Docs,
    opts: &FoldInOptions,
    range: std::ops::Range<usize>,
) -> Result<Vec<f64>, ModelError> {
    let sampler = FoldIn::new(phi, hyper, *opts)?;
    let prior = phi.prior_mass(&hyper.alpha);
    let per_doc: Vec<Vec<f64>> = range
        .into_par_iter()
        .map_init(
            || sampler.scratch(),
            |scratch, d| {
                let words = docs.doc(d);
                check_words(words, d, phi)?;
                let mut out = vec![0.0; words.len()];
                if words.len() < 2 {
                    return Ok(out);
                }
                let (observed, scored) = words.split_at(words.len() / 2);
                let folded = sampler.fold_in(observed, docs.doc_start(d), scratch);
                for (slot, &w) in out[observed.len()..].iter_mut().zip(scored) {
                    let pairs = folded
                        .topics
                        .iter()
                        .copied()
                        .zip(folded.mean_counts.iter().copied());
                    *slot = phi.weighted_sum(w, pairs) + prior.get(w);
                }
                Ok(out)
            },
        )
        .collect::<Result<_, ModelError>>()?;
    Ok(per_doc.concat())
}

/// Document completion's result from the argument of every scored token's logarithm,
/// `Σ_k Ā_dk φ_kw + Σ_k α_k φ_kw` in the notation above, computed elsewhere (on a GPU, by the same
/// fold-in): `arguments` is indexed like `docs.tokens()` and read at the second halves of the
/// documents with at least 2 tokens. The logarithms and sums are [`heldout_log_likelihood`]'s
/// (the same [`doc_score`] and [`combine`]), so equal arguments give the same bits.
pub fn heldout_from_arguments(
    hyper: &Hyperparameters,
    docs: Docs,
    arguments: &[f64],
) -> Result<HeldOut, ModelError> {
    assert_eq!(arguments.len() as u64, docs.num_tokens());
    let scores = (0..docs.len()).map(|d| {
        let n = docs.doc(d).len();
        let start = docs.doc_start(d) as usize;
        (n >= 2).then(|| {
            let args = &arguments[start + n / 2..start + n];
            doc_score(hyper, n / 2, args.iter().copied())
        })
    });
    combine(scores, docs.len())
}

/// One document's score: Σ over its scored tokens of log(argument) − log(n_obs + Σ_k α_k).
fn doc_score(
    hyper: &Hyperparameters,
    observed: usize,
    arguments: impl ExactSizeIterator<Item = f64>,
) -> (f64, u64, u64) {
    let log_norm = (observed as f64 + hyper.alpha.sum()).ln();
    let scored = arguments.len() as u64;
    let ll = arguments.fold(0.0f64, |ll, x| ll + (x.ln() - log_norm));
    (ll, observed as u64, scored)
}

/// The documents' scores (`None`: skipped), added in document order.
fn combine(
    scores: impl IntoIterator<Item = DocScore>,
    num_docs: usize,
) -> Result<HeldOut, ModelError> {
    let mut total = 0.0f64;
    let mut result = HeldOut {
        ll_per_token: 0.0,
        perplexity: 0.0,
        docs_scored: 0,
        docs_skipped: 0,
        tokens_observed: 0,
        tokens_scored: 0,
    };
    for score in scores {
        match score {
            Some((ll, observed, scored)) => {
                total += ll;
                result.docs_scored += 1;
                result.tokens_observed += observed;
                result.tokens_scored += scored;
            }
            None => result.docs_skipped += 1,
        }
    }
    if result.tokens_scored == 0 {
        return Err(ModelError::Mismatch(format!(
            "none of the {num_docs} held-out documents has the 2 tokens document completion needs"
        )));
    }
    result.ll_per_token = total / result.tokens_scored as f64;
    result.perplexity = (-result.ll_per_token).exp();
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use topos_corpus::OwnedDocs;

    #[test]
    fn splits_skips_and_counts() {
        // Two topics on disjoint words; uniform φ would give log(1/4) per token.
        #[rustfmt::skip]
        let phi = Phi::from_probabilities(4, 2, vec![
            0.5, 0.0,
            0.5, 0.0,
            0.0, 0.5,
            0.0, 0.5,
        ]).unwrap();
        let hyper = Hyperparameters::new(2, Some(0.01), None).unwrap();
        let docs: OwnedDocs = [&[0u32, 1, 0, 1, 0][..], &[3], &[], &[2, 3, 3]]
            .into_iter()
            .collect();
        let r =
            heldout_log_likelihood(&phi, &hyper, docs.view(), &FoldInOptions::default()).unwrap();
        assert_eq!((r.docs_scored, r.docs_skipped), (2, 2));
        assert_eq!((r.tokens_observed, r.tokens_scored), (2 + 1, 3 + 2));
        // A document that is pure topic 0 predicts its words with probability close to 1/2.
        assert!(r.ll_per_token < (0.5f64).ln() && r.ll_per_token > (0.45f64).ln());
        assert!((r.perplexity - (-r.ll_per_token).exp()).abs() < 1e-12);

        // Arguments computed in shares and concatenated give the same bits.
        let opts = FoldInOptions::default();
        let mut args = heldout_arguments(&phi, &hyper, docs.view(), &opts, 0..1).unwrap();
        args.extend(heldout_arguments(&phi, &hyper, docs.view(), &opts, 1..4).unwrap());
        assert_eq!(
            heldout_from_arguments(&hyper, docs.view(), &args).unwrap(),
            r
        );

        let short: OwnedDocs = [&[1u32][..]].into_iter().collect();
        let e = heldout_log_likelihood(&phi, &hyper, short.view(), &FoldInOptions::default());
        assert!(e.unwrap_err().to_string().contains("2 tokens"));
        let unknown: OwnedDocs = [&[1u32, 4][..]].into_iter().collect();
        let e = heldout_log_likelihood(&phi, &hyper, unknown.view(), &FoldInOptions::default());
        assert!(e.unwrap_err().to_string().contains("word id 4"));
    }

    /// The arguments of the logarithms, computed as the fold-in does, give the same bits.
    #[test]
    fn arguments_reproduce_the_evaluation() {
        #[rustfmt::skip]
        let phi = Phi::from_probabilities(4, 2, vec![
            0.4, 0.1,
            0.3, 0.2,
            0.2, 0.3,
            0.1, 0.4,
        ]).unwrap();
        let hyper = Hyperparameters::new(2, Some(0.3), None).unwrap();
        let docs: OwnedDocs = [&[0u32, 1, 0, 3, 2][..], &[3], &[2, 3, 3, 1]]
            .into_iter()
            .collect();
        let opts = FoldInOptions::default();
        let want = heldout_log_likelihood(&phi, &hyper, docs.view(), &opts).unwrap();
        let v = docs.view();
        let sampler = FoldIn::new(&phi, &hyper, opts).unwrap();
        let mut args = vec![0.0; v.num_tokens() as usize];
        for d in 0..v.len() {
            let words = v.doc(d);
            if words.len() < 2 {
                continue;
            }
            let (observed, scored) = words.split_at(words.len() / 2);
            let f = sampler.fold_in(observed, v.doc_start(d), &mut sampler.scratch());
            let start = v.doc_start(d) as usize + observed.len();
            for (i, &w) in scored.iter().enumerate() {
                let pairs = f.topics.iter().copied().zip(f.mean_counts.iter().copied());
                args[start + i] = phi.weighted_sum(w, pairs) + phi.prior_mass(&hyper.alpha).get(w);
            }
        }
        assert_eq!(heldout_from_arguments(&hyper, v, &args).unwrap(), want);
    }

    /// The score of one document equals a dense brute-force evaluation of
    /// Σ_{w ∈ second half} log Σ_k θ̄_k φ_kw with θ̄ from folding in the first half.
    #[test]
    fn scores_the_second_half_with_the_folded_in_theta() {
        #[rustfmt::skip]
        let phi = Phi::from_probabilities(3, 3, vec![
            0.6, 0.1, 0.3,
            0.3, 0.2, 0.3,
            0.1, 0.7, 0.4,
        ]).unwrap();
        let hyper = Hyperparameters::new(3, Some(0.2), None).unwrap();
        let words = [0u32, 2, 2, 1, 0, 2, 1];
        let docs: OwnedDocs = [&words[..]].into_iter().collect();
        let opts = FoldInOptions {
            sweeps: 30,
            burn_in: 5,
            seed: 3,
        };
        let got = heldout_log_likelihood(&phi, &hyper, docs.view(), &opts).unwrap();
        assert_eq!((got.tokens_observed, got.tokens_scored), (3, 4));

        let sampler = FoldIn::new(&phi, &hyper, opts).unwrap();
        let folded = sampler.fold_in(&words[..3], 0, &mut sampler.scratch());
        let mut theta = [0.0f64; 3];
        for (&k, &m) in folded.topics.iter().zip(&folded.mean_counts) {
            theta[usize::from(k)] = m;
        }
        let theta = theta.map(|m| (m + 0.2) / (3.0 + 3.0 * 0.2));
        let brute: f64 = words[3..]
            .iter()
            .map(|&w| {
                (0..3)
                    .map(|k| theta[k] * f64::from(phi.get(w, k)))
                    .sum::<f64>()
                    .ln()
            })
            .sum::<f64>()
            / 4.0;
        assert!(
            (got.ll_per_token - brute).abs() < 1e-12,
            "{} vs {brute}",
            got.ll_per_token
        );
    }
}
