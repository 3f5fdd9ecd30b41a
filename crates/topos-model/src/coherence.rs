//! UMass topic coherence (Mimno, Wallach, Talley, Leenders & McCallum 2011, "Optimizing semantic
//! coherence in topic models", Eq. 1): for a topic's top words v₁ … v_M, most probable first,
//!
//! ```text
//! C = Σ_{m=2..M} Σ_{l=1..m−1} log( (D(v_m, v_l) + 1) / D(v_l) ),
//! ```
//!
//! where D(v) counts the reference documents containing v and D(v, v') those containing both.
//! The conditioning word in the denominator is the **higher-ranked** one, v_l with l < m, as in the
//! paper and in gensim's `u_mass`. Scores are ≤ log 2 per pair and usually negative; closer to
//! zero is more coherent. A pair whose conditioning word occurs in no reference document (only
//! possible when the reference documents are not the training documents) contributes 0 instead of
//! +∞. A topic with fewer than 2 top words scores 0.
//!
//! Co-document frequencies are computed only for the words that are needed: one pass over the
//! documents builds, for the union of all topics' top words, the sorted list of documents each
//! occurs in; D(v, v') is the size of the intersection of two lists (a merge, or a galloping
//! search when one list is much shorter). Topics are scored in parallel; integer counts make the
//! result independent of the number of threads.

use crate::topics::top_word_ids;
use crate::{ModelError, TopicModel};
use rayon::prelude::*;
use serde::Serialize;
use topos_corpus::Docs;

/// Default number of top words per topic (Mimno et al. use 5 to 20; 10 is the usual choice).
pub const DEFAULT_TOP_WORDS: usize = 10;

/// Coherence of every topic.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Coherence {
    /// M, top words per topic.
    pub top_words: usize,
    /// Mean over topics.
    pub mean: f64,
    /// One score per topic.
    pub per_topic: Vec<f64>,
}

/// UMass coherence of each topic of `model` over its `top_words` most frequent words, with
/// document frequencies counted in `docs` (normally the training documents). Words with a zero
/// count in a topic are not among its top words.
pub fn umass_coherence(
    model: &TopicModel,
    docs: Docs,
    top_words: usize,
) -> Result<Coherence, ModelError> {
    if top_words < 2 {
        return Err(ModelError::Options(format!(
            "coherence needs at least 2 top words per topic, got {top_words}"
        )));
    }
    let lists: Vec<Vec<u32>> = top_word_ids(model, top_words)
        .into_iter()
        .map(|l| {
            l.into_iter()
                .filter(|&(_, count)| count > 0)
                .map(|(id, _)| id)
                .collect()
        })
        .collect();
    let per_topic = umass_coherence_of(&lists, docs);
    let mean = per_topic.iter().sum::<f64>() / per_topic.len().max(1) as f64;
    Ok(Coherence {
        top_words,
        mean,
        per_topic,
    })
}

const NONE: u32 = u32::MAX;

/// UMass coherence of explicit word lists (best first), document frequencies from `docs`.
pub fn umass_coherence_of(topics: &[Vec<u32>], docs: Docs) -> Vec<f64> {
    // Dense index word id → slot over the union of the lists.
    let bound = topics.iter().flatten().max().map_or(0, |&w| w as usize + 1);
    let mut slot = vec![NONE; bound];
    let mut slots = 0u32;
    for &w in topics.iter().flatten() {
        if slot[w as usize] == NONE {
            slot[w as usize] = slots;
            slots += 1;
        }
    }
    // Inverted index: documents (increasing) containing each needed word.
    let mut postings: Vec<Vec<u32>> = vec![Vec::new(); slots as usize];
    for (d, words) in docs.iter().enumerate() {
        for &w in words {
            if let Some(&s) = slot.get(w as usize) {
                if s != NONE {
                    let list = &mut postings[s as usize];
                    if list.last() != Some(&(d as u32)) {
                        list.push(d as u32);
                    }
                }
            }
        }
    }
    topics
        .par_iter()
        .map(|words| {
            let lists: Vec<&[u32]> = words
                .iter()
                .map(|&w| postings[slot[w as usize] as usize].as_slice())
                .collect();
            let mut c = 0.0f64;
            for m in 1..lists.len() {
                for l in 0..m {
                    let d_l = lists[l].len();
                    if d_l == 0 {
                        continue;
                    }
                    let joint = intersection_size(lists[m], lists[l]);
                    c += ((joint as f64 + 1.0) / d_l as f64).ln();
                }
            }
            c
        })
        .collect()
}

/// |a ∩ b| for increasing lists.
fn intersection_size(a: &[u32], b: &[u32]) -> usize {
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if small.is_empty() {
        return 0;
    }
    if large.len() / small.len() >= 16 {
        // Galloping: each element of the short list is searched in what is left of the long one.
        let mut rest = large;
        let mut n = 0;
        for &x in small {
            match rest.binary_search(&x) {
                Ok(i) => {
                    n += 1;
                    rest = &rest[i + 1..];
                }
                Err(i) => rest = &rest[i..],
            }
        }
        return n;
    }
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < small.len() && j < large.len() {
        match small[i].cmp(&large[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                n += 1;
                i += 1;
                j += 1;
            }
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Hyperparameters, Provenance};
    use topos_corpus::{OwnedDocs, Vocabulary};

    fn corpus() -> OwnedDocs {
        [
            &[0u32, 1, 1][..],
            &[0, 2],
            &[1, 2, 0],
            &[3],
            &[0, 3, 3],
            &[2],
        ]
        .into_iter()
        .collect()
    }

    #[test]
    fn hand_computed() {
        // D(0) = 4, D(1) = 2, D(2) = 3, D(3) = 2; D(0,1) = 2, D(0,2) = 2, D(1,2) = 1, D(0,3) = 1.
        let docs = corpus();
        let c = umass_coherence_of(
            &[vec![0, 1, 2], vec![2, 3], vec![3, 0], vec![1]],
            docs.view(),
        );
        // Topic 0: log((D(1,0)+1)/D(0)) + log((D(2,0)+1)/D(0)) + log((D(2,1)+1)/D(1))
        let t0 = (3.0f64 / 4.0).ln() + (3.0f64 / 4.0).ln() + (2.0f64 / 2.0).ln();
        // Topic 1: log((D(3,2)+1)/D(2)) with D(2,3) = 0.
        let t1 = (1.0f64 / 3.0).ln();
        // Topic 2: log((D(0,3)+1)/D(3)).
        let t2 = (2.0f64 / 2.0).ln();
        assert!((c[0] - t0).abs() < 1e-12, "{} vs {t0}", c[0]);
        assert!((c[1] - t1).abs() < 1e-12);
        assert!((c[2] - t2).abs() < 1e-12);
        assert_eq!(c[3], 0.0);
        // A word absent from the reference documents contributes nothing as a condition.
        let absent = umass_coherence_of(&[vec![7, 0]], docs.view());
        assert_eq!(absent, vec![0.0]);
    }

    #[test]
    fn from_a_model_uses_top_words_by_count() {
        let vocab = Vocabulary::new(["a", "b", "c", "d"].map(String::from).into());
        let hyper = Hyperparameters::new(2, None, None).unwrap();
        // Topic 0 ranks 0, 1, 2; topic 1 has only words 2 and 3 with counts (3 first).
        let b = vec![9, 0, 5, 0, 1, 2, 0, 4];
        let m = TopicModel::from_counts(vocab, hyper, b, Provenance::default());
        let c = umass_coherence(&m, corpus().view(), 3).unwrap();
        let expected = umass_coherence_of(&[vec![0, 1, 2], vec![3, 2]], corpus().view());
        assert_eq!(c.per_topic, expected);
        assert_eq!(c.mean, (expected[0] + expected[1]) / 2.0);
        assert!(umass_coherence(&m, corpus().view(), 1).is_err());
    }

    #[test]
    fn intersections() {
        let long: Vec<u32> = (0..1000).map(|i| i * 3).collect();
        assert_eq!(intersection_size(&[3, 4, 2997, 3000], &long), 2);
        assert_eq!(intersection_size(&long, &[0]), 1);
        assert_eq!(intersection_size(&[1, 2, 5], &[2, 3, 5, 8]), 2);
        assert_eq!(intersection_size(&[], &[1]), 0);
    }
}
