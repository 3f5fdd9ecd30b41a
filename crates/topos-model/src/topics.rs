//! What each topic is about: its most probable words and its size, as plain serializable structs
//! (`topos topics model.tmod --top 15` prints them as a table or as JSON).
//!
//! Top words are ranked by their count B_vk in the topic, ties broken by the smaller word id, so the
//! ranking is exact integer arithmetic and identical on every machine. Ranking by count is ranking
//! by φ_kv = (B_vk + β)/(n_k + Vβ) (SaberLDA Eq. 2), which is increasing in B_vk for a fixed topic;
//! the probability is reported beside the count.

use crate::{Hyperparameters, Provenance, TopicModel};
use rayon::prelude::*;
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// One of a topic's top words.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TopWord {
    /// Word id in the model's vocabulary.
    pub id: u32,
    pub word: String,
    /// B_vk: training tokens of this word assigned to the topic.
    pub count: u32,
    /// φ_kv = (B_vk + β) / (n_k + Vβ).
    pub probability: f64,
}

/// A topic: its size and its top words.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TopicSummary {
    pub topic: u32,
    /// n_k: training tokens assigned to the topic.
    pub tokens: u64,
    /// n_k / Σ_k n_k: the share of all training tokens (0 for an empty model).
    pub share: f64,
    /// Most probable words first.
    pub top_words: Vec<TopWord>,
}

/// Everything `topos topics` shows about a model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TopicsReport {
    pub hyperparameters: Hyperparameters,
    pub provenance: Provenance,
    pub num_words: usize,
    /// The differential-privacy guarantee of a privately trained model (`null` otherwise).
    pub privacy: Option<topos_privacy::Guarantee>,
    pub topics: Vec<TopicSummary>,
}

/// Words per parallel task when ranking; fixed so work splits the same way on every machine
/// (the result does not depend on it: top-N under a total order is unique).
const RANK_CHUNK_WORDS: usize = 1024;

/// Keeps the `n` best (count, id) pairs: higher count first, then smaller id. The heap's top is
/// the worst kept pair.
#[derive(Clone, Debug)]
struct TopN {
    n: usize,
    heap: BinaryHeap<Reverse<(u32, Reverse<u32>)>>,
}

impl TopN {
    fn new(n: usize) -> Self {
        Self {
            n,
            heap: BinaryHeap::with_capacity(n + 1),
        }
    }

    #[inline]
    fn offer(&mut self, count: u32, id: u32) {
        let item = Reverse((count, Reverse(id)));
        if self.heap.len() < self.n {
            self.heap.push(item);
        } else if self.heap.peek().is_some_and(|worst| item < *worst) {
            self.heap.pop();
            self.heap.push(item);
        }
    }

    fn merge(mut self, other: TopN) -> TopN {
        for Reverse((c, Reverse(id))) in other.heap {
            self.offer(c, id);
        }
        self
    }
}

/// For every topic, the ids and counts of its `n` top words (fewer only when V < n), best
/// first. Words with a zero count fill a list only after all words with a positive count, in id
/// order. One pass over B, parallel over blocks of words.
pub fn top_word_ids(model: &TopicModel, n: usize) -> Vec<Vec<(u32, u32)>> {
    let k = model.num_topics();
    let n = n.min(model.num_words());
    if n == 0 {
        return vec![Vec::new(); k];
    }
    let heaps = model
        .word_topic
        .par_chunks(RANK_CHUNK_WORDS * k)
        .enumerate()
        .fold(
            || vec![TopN::new(n); k],
            |mut heaps, (chunk, rows)| {
                let first = chunk * RANK_CHUNK_WORDS;
                for (i, row) in rows.chunks_exact(k).enumerate() {
                    for (heap, &c) in heaps.iter_mut().zip(row) {
                        if c > 0 {
                            heap.offer(c, (first + i) as u32);
                        }
                    }
                }
                heaps
            },
        )
        .reduce(
            || vec![TopN::new(n); k],
            |a, b| a.into_iter().zip(b).map(|(x, y)| x.merge(y)).collect(),
        );
    heaps
        .into_iter()
        .enumerate()
        .map(|(topic, heap)| {
            let mut list: Vec<(u32, u32)> = heap
                .heap
                .into_iter()
                .map(|Reverse((c, Reverse(id)))| (id, c))
                .collect();
            // Fewer than n words with a positive count: all of them are listed, so any word with a
            // zero count is new.
            let mut v = 0u32;
            while list.len() < n {
                if model.word_row(v)[topic] == 0 {
                    list.push((v, 0));
                }
                v += 1;
            }
            list.sort_unstable_by_key(|&(id, c)| (Reverse(c), id));
            list
        })
        .collect()
}

/// Each topic's share of the training tokens, n_k / Σ n (all 0 for a model without tokens).
pub fn topic_sizes(model: &TopicModel) -> Vec<f64> {
    let total: u64 = model.topic_totals.iter().sum();
    model
        .topic_totals
        .iter()
        .map(|&n| {
            if total == 0 {
                0.0
            } else {
                n as f64 / total as f64
            }
        })
        .collect()
}

/// Every topic with its size and its `top` words.
pub fn summarize(model: &TopicModel, top: usize) -> TopicsReport {
    let v_beta = model.num_words() as f64 * model.hyper.beta;
    let shares = topic_sizes(model);
    let topics = top_word_ids(model, top)
        .into_iter()
        .enumerate()
        .map(|(k, ids)| {
            let denominator = model.topic_totals[k] as f64 + v_beta;
            TopicSummary {
                topic: k as u32,
                tokens: model.topic_totals[k],
                share: shares[k],
                top_words: ids
                    .into_iter()
                    .map(|(id, count)| TopWord {
                        id,
                        word: model.vocab.word(id).to_owned(),
                        count,
                        probability: (f64::from(count) + model.hyper.beta) / denominator,
                    })
                    .collect(),
            }
        })
        .collect();
    TopicsReport {
        hyperparameters: model.hyper.clone(),
        provenance: model.provenance.clone(),
        num_words: model.num_words(),
        privacy: model.privacy.clone(),
        topics,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use topos_corpus::Vocabulary;

    fn model(v: usize, k: usize, counts: Vec<u32>) -> TopicModel {
        let words = (0..v).map(|i| format!("w{i}")).collect();
        let hyper = Hyperparameters::new(k as u32, Some(0.1), Some(0.5)).unwrap();
        TopicModel::from_counts(Vocabulary::new(words), hyper, counts, Provenance::default())
    }

    #[test]
    fn ranks_by_count_then_id_and_fills_with_zero_count_words() {
        // 5 words × 2 topics; topic 1 has only two words with counts.
        let m = model(5, 2, vec![3, 0, 7, 2, 3, 0, 1, 0, 7, 0]);
        let top = top_word_ids(&m, 3);
        assert_eq!(top[0], vec![(1, 7), (4, 7), (0, 3)]);
        assert_eq!(top[1], vec![(1, 2), (0, 0), (2, 0)]);
        assert_eq!(top_word_ids(&m, 9)[0].len(), 5);
        assert!(top_word_ids(&m, 0)[0].is_empty());

        let report = summarize(&m, 2);
        let t0 = &report.topics[0];
        assert_eq!((t0.tokens, t0.top_words[0].word.as_str()), (21, "w1"));
        // (7 + 0.5) / (21 + 5 × 0.5)
        assert!((t0.top_words[0].probability - 7.5 / 23.5).abs() < 1e-12);
        assert!((t0.share - 21.0 / 23.0).abs() < 1e-12);
        let json = serde_json::to_string(&report).unwrap();
        assert!(json.contains("\"word\":\"w1\""), "{json}");
    }

    #[test]
    fn ranking_is_the_same_across_chunks_and_threads() {
        // More words than one chunk, with many ties, so chunk merging decides the result.
        let (v, k) = (3 * RANK_CHUNK_WORDS + 17, 3);
        let counts = (0..v * k).map(|i| ((i * 7919) % 11) as u32).collect();
        let m = model(v, k, counts);
        let expected: Vec<Vec<(u32, u32)>> = (0..k)
            .map(|t| {
                let mut all: Vec<(u32, u32)> =
                    (0..v as u32).map(|w| (w, m.word_row(w)[t])).collect();
                all.sort_by_key(|&(id, c)| (Reverse(c), id));
                all.truncate(15);
                all
            })
            .collect();
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            assert_eq!(pool.install(|| top_word_ids(&m, 15)), expected);
        }
    }

    #[test]
    fn sizes_are_shares() {
        let m = model(2, 2, vec![1, 0, 2, 1]);
        assert_eq!(topic_sizes(&m), vec![0.75, 0.25]);
        let empty = model(2, 2, vec![0; 4]);
        assert_eq!(topic_sizes(&empty), vec![0.0, 0.0]);
    }
}
