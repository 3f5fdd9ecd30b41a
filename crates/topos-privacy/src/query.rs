//! Private count queries over a corpus: how many documents contain a word, and a histogram of
//! document lengths (`topos privacy query`).
//!
//! Neighbouring corpora differ by one document added or removed (all documents: training and
//! held-out). Then:
//!
//! * a document count has sensitivity 1 (the COUNT example of Definition 3.3.1);
//! * a histogram over disjoint bins changes in exactly one bin, by 1: each bin is a count over a
//!   disjoint part of the corpus, so noising every bin at ε_h costs ε_h in all (parallel
//!   composition, Theorem 4) — equivalently, the whole histogram has L1 sensitivity 1.
//!
//! The sub-queries of one call run on the same documents, so their losses add up (Theorem 3):
//! the call's ε is split between them by the optimal allocation (§3.3.2; with equal
//! sensitivities, equal shares) and charged to the ledger once, as one entry. The vocabulary
//! and the lengths of the bins are treated as public (they are what the analyst asks about).
//! Noisy counts are discrete Laplace ([`DiscreteLaplace`]): integers, unbiased, and possibly
//! negative; they are reported as drawn.

use crate::allocate::Problem;
use crate::{Composition, DiscreteLaplace, Epsilon, NoiseSource, PrivacyError, Sensitivity};
use serde::Serialize;
use topos_corpus::{Docs, Vocabulary};

/// One sub-query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CountQuery {
    /// Documents containing `word` (id `id`).
    DocsWithWord { word: String, id: u32 },
    /// Documents by length in tokens, bins `[edges[i], edges[i+1])` and `[last, ∞)`.
    LengthHistogram { edges: Vec<u64> },
}

impl CountQuery {
    /// `--count-docs-with WORD`: the word as the corpus spells it (lower-cased).
    pub fn docs_with(word: &str, vocab: &Vocabulary) -> Result<Self, PrivacyError> {
        let lower = word.to_lowercase();
        let id = vocab
            .id(word)
            .or_else(|| vocab.id(&lower))
            .ok_or_else(|| {
                PrivacyError::BadQuery(format!(
                    "{word:?} is not in the corpus vocabulary (words are lower-cased, and stemmed if the corpus was prepared with --stem)"
                ))
            })?;
        Ok(CountQuery::DocsWithWord {
            word: vocab.word(id).to_string(),
            id,
        })
    }

    /// `--histogram doc-length:E0,E1,...` (strictly increasing edges).
    pub fn histogram(spec: &str) -> Result<Self, PrivacyError> {
        let bad = |why: String| {
            PrivacyError::BadQuery(format!(
                "histogram {spec:?}: {why} (write e.g. doc-length:0,50,200)"
            ))
        };
        let (field, edges) = spec
            .split_once(':')
            .ok_or_else(|| bad("missing ':'".into()))?;
        if field.trim() != "doc-length" {
            return Err(bad(format!(
                "unknown field {field:?}; the one supported is doc-length"
            )));
        }
        let edges: Vec<u64> = edges
            .split(',')
            .map(|e| e.trim().parse::<u64>())
            .collect::<Result<_, _>>()
            .map_err(|_| bad("edges must be non-negative integers".into()))?;
        if edges.is_empty() || edges.windows(2).any(|w| w[0] >= w[1]) {
            return Err(bad("edges must be strictly increasing".into()));
        }
        Ok(CountQuery::LengthHistogram { edges })
    }

    /// How the query is written on the command line (and in the ledger).
    pub fn describe(&self) -> String {
        match self {
            CountQuery::DocsWithWord { word, .. } => format!("count-docs-with {word}"),
            CountQuery::LengthHistogram { edges } => format!(
                "histogram doc-length:{}",
                edges
                    .iter()
                    .map(|e| e.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        }
    }

    /// L1 sensitivity under adding or removing one document: 1 for both kinds.
    pub fn sensitivity(&self) -> u64 {
        1
    }

    /// Bin labels (one, "count", for a document count).
    pub fn labels(&self) -> Vec<String> {
        match self {
            CountQuery::DocsWithWord { .. } => vec!["count".into()],
            CountQuery::LengthHistogram { edges } => {
                let mut v: Vec<String> = edges
                    .windows(2)
                    .map(|w| format!("{}-{}", w[0], w[1] - 1))
                    .collect();
                v.push(format!("{}+", edges[edges.len() - 1]));
                v
            }
        }
    }

    /// The exact answer over `parts` (e.g. training and held-out documents). Never released.
    pub fn exact(&self, parts: &[Docs<'_>]) -> Vec<u64> {
        match self {
            CountQuery::DocsWithWord { id, .. } => {
                let n = parts
                    .iter()
                    .flat_map(|p| p.iter())
                    .filter(|doc| doc.contains(id))
                    .count();
                vec![n as u64]
            }
            CountQuery::LengthHistogram { edges } => {
                let mut bins = vec![0u64; edges.len()];
                for doc in parts.iter().flat_map(|p| p.iter()) {
                    let len = doc.len() as u64;
                    // Bin i holds [edges[i], edges[i+1]); shorter than edges[0]: no bin.
                    let i = edges.partition_point(|&e| e <= len);
                    if i > 0 {
                        bins[i - 1] += 1;
                    }
                }
                bins
            }
        }
    }
}

/// The split of a call's ε over its sub-queries (sequential composition; the optimal split of
/// §3.3.2, which for equal sensitivities is equal shares). The shares sum to at most `total`.
pub fn split(total: Epsilon, queries: &[CountQuery]) -> Result<Vec<Epsilon>, PrivacyError> {
    if queries.is_empty() {
        return Err(PrivacyError::BadQuery(
            "no query: give --count-docs-with WORD and/or --histogram doc-length:EDGES".into(),
        ));
    }
    let sens = queries
        .iter()
        .map(|q| Sensitivity::new(q.sensitivity() as f64))
        .collect::<Result<Vec<_>, _>>()?;
    let problem = Problem::new(total, Composition::Sequential, sens);
    problem
        .optimal_closed_form()
        .into_iter()
        .map(Epsilon::new)
        .collect()
}

/// One noisy value.
#[derive(Clone, Debug, Serialize)]
pub struct NoisyValue {
    /// "count" or the bin.
    pub label: String,
    /// The noisy count.
    pub value: i64,
}

/// The released answer to one sub-query.
#[derive(Clone, Debug, Serialize)]
pub struct Answer {
    /// The query.
    pub query: String,
    /// Its share of the call's ε.
    pub epsilon: f64,
    /// Its L1 sensitivity.
    pub sensitivity: u64,
    /// The discrete Laplace scale b = sensitivity/ε.
    pub noise_scale: f64,
    /// 95% of noisy values are within this of the true count.
    pub ci95_half_width: u64,
    /// The values.
    pub values: Vec<NoisyValue>,
}

/// The mechanism of each sub-query at its share of ε, calibrated without drawing anything: an
/// ε the exact sampler cannot represent, or noise too large for 64-bit counts, is refused here,
/// before anything is charged.
pub fn calibrate(
    queries: &[CountQuery],
    epsilons: &[Epsilon],
) -> Result<Vec<DiscreteLaplace>, PrivacyError> {
    if queries.len() != epsilons.len() {
        return Err(PrivacyError::BadQuery(format!(
            "{} sub-queries but {} shares of ε",
            queries.len(),
            epsilons.len()
        )));
    }
    queries
        .iter()
        .zip(epsilons)
        .map(|(q, &eps)| DiscreteLaplace::calibrated(q.sensitivity(), eps))
        .collect()
}

/// Adds noise to the exact answers with mechanisms from [`calibrate`]; cannot fail, so it can
/// run inside [`crate::Ledger::charge_with`], which charges exactly when it releases.
pub fn release_calibrated(
    queries: &[CountQuery],
    epsilons: &[Epsilon],
    mechanisms: &[DiscreteLaplace],
    exact: &[Vec<u64>],
    src: &mut NoiseSource,
) -> Vec<Answer> {
    queries
        .iter()
        .zip(epsilons)
        .zip(mechanisms)
        .zip(exact)
        .map(|(((q, &eps), noise), values)| {
            let noisy = values.iter().map(|&v| {
                i64::try_from(v)
                    .unwrap_or(i64::MAX)
                    .saturating_add(noise.sample(src))
            });
            Answer {
                query: q.describe(),
                epsilon: eps.get(),
                sensitivity: q.sensitivity(),
                noise_scale: noise.scale(),
                ci95_half_width: noise.half_width(0.05),
                values: q
                    .labels()
                    .into_iter()
                    .zip(noisy)
                    .map(|(label, value)| NoisyValue { label, value })
                    .collect(),
            }
        })
        .collect()
}

/// Adds noise to the exact answers ([`calibrate`] then [`release_calibrated`]). Call only after
/// the ledger has accepted the charge, or better, inside [`crate::Ledger::charge_with`] with the
/// mechanisms calibrated before it.
pub fn release(
    queries: &[CountQuery],
    epsilons: &[Epsilon],
    exact: &[Vec<u64>],
    src: &mut NoiseSource,
) -> Result<Vec<Answer>, PrivacyError> {
    let mechanisms = calibrate(queries, epsilons)?;
    Ok(release_calibrated(
        queries,
        epsilons,
        &mechanisms,
        exact,
        src,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use topos_corpus::OwnedDocs;

    fn docs(lengths: &[usize]) -> OwnedDocs {
        let mut d = OwnedDocs::new();
        for (i, &l) in lengths.iter().enumerate() {
            let words: Vec<u32> = (0..l as u32).map(|t| (t + i as u32) % 3).collect();
            d.push(&words);
        }
        d
    }

    #[test]
    fn exact_answers() {
        let d = docs(&[0, 1, 5, 49, 50, 51, 199, 200, 1000]);
        let h = CountQuery::histogram("doc-length:0,50,200").unwrap();
        assert_eq!(h.exact(&[d.view()]), vec![4, 3, 2]);
        assert_eq!(h.labels(), vec!["0-49", "50-199", "200+"]);
        let h = CountQuery::histogram("doc-length: 2, 60").unwrap();
        assert_eq!(h.exact(&[d.view()]), vec![4, 3]);
        // Word 2 appears in documents with at least 3 tokens, or 2 tokens starting at 1.
        let q = CountQuery::DocsWithWord {
            word: "w".into(),
            id: 2,
        };
        let held = docs(&[2]);
        assert_eq!(q.exact(&[d.view()]), vec![7]);
        assert_eq!(q.exact(&[d.view(), held.view()]), vec![7]);
        for bad in [
            "doc-length",
            "words:1,2",
            "doc-length:5,5",
            "doc-length:a",
            "doc-length:",
        ] {
            assert!(CountQuery::histogram(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn split_is_even_and_within_budget() {
        let qs = vec![
            CountQuery::histogram("doc-length:0,10").unwrap(),
            CountQuery::DocsWithWord {
                word: "a".into(),
                id: 0,
            },
            CountQuery::DocsWithWord {
                word: "b".into(),
                id: 1,
            },
        ];
        let e = split(Epsilon::new(0.5).unwrap(), &qs).unwrap();
        let sum: f64 = e.iter().map(|e| e.get()).sum();
        assert!(sum <= 0.5 && sum > 0.5 * (1.0 - 1e-12));
        assert!((e[0].get() - 0.5 / 3.0).abs() < 1e-15);
        assert!(split(Epsilon::new(0.5).unwrap(), &[]).is_err());
    }

    #[test]
    fn calibration_refuses_what_release_could_not_draw() {
        let q = vec![CountQuery::histogram("doc-length:0,10").unwrap()];
        // ε below the exact sampler's range, and noise too large for 64-bit counts.
        for eps in [1e-40, 1e-17] {
            let e = calibrate(&q, &[Epsilon::new(eps).unwrap()]).unwrap_err();
            assert!(!e.to_string().contains('\n'), "{e}");
        }
        let ok = [Epsilon::new(1.0).unwrap()];
        let m = calibrate(&q, &ok).unwrap();
        let a = release_calibrated(
            &q,
            &ok,
            &m,
            &[vec![3, 4]],
            &mut NoiseSource::insecure_seeded(1),
        );
        assert_eq!(a[0].values.len(), 2);
        assert!(calibrate(&q, &[]).is_err());
    }
}
