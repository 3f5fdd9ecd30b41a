//! Vocabulary pruning and ordering: from the term counts of pass 1 to the final word ids.
//!
//! Rare words cannot shape a topic (a word seen in two documents gives the sampler nothing to
//! generalise from) and are mostly typos and debris, yet each costs a row of counts per topic in
//! the model. Very common words are corpus-specific stop words ("said" in news) that would top
//! every topic. Ids are assigned by descending corpus frequency, ties broken by the word, so the
//! same input always gives the same ids and id 0 is the most frequent word (dense, cache-friendly
//! rows for the frequent words during training).

use serde::Serialize;

/// Which words to keep.
#[derive(Clone, Debug, PartialEq)]
pub struct PruneOptions {
    /// Keep only words that occur in at least this many documents (default 5; 0 and 1 keep all).
    pub min_df: u64,
    /// Drop words that occur in more than this fraction of the (non-empty) documents
    /// (default 0.5; 1.0 keeps all).
    pub max_df: f64,
    /// Keep at most this many words, the most frequent ones (default: no limit).
    pub max_vocab: Option<usize>,
}

impl Default for PruneOptions {
    fn default() -> Self {
        Self {
            min_df: 5,
            max_df: 0.5,
            max_vocab: None,
        }
    }
}

impl PruneOptions {
    /// Checks the ranges.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.max_df > 0.0 && self.max_df <= 1.0) {
            return Err(format!(
                "max_df must be a fraction of documents in (0, 1], got {}",
                self.max_df
            ));
        }
        if self.max_vocab == Some(0) {
            return Err("max_vocab must be at least 1".into());
        }
        Ok(())
    }
}

/// Counts of one candidate word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TermCount {
    pub word: String,
    /// Occurrences in the corpus.
    pub cf: u64,
    /// Documents it occurs in.
    pub df: u64,
}

/// The kept vocabulary, in id order, and what pruning removed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Pruned {
    #[serde(skip)]
    pub words: Vec<String>,
    #[serde(skip)]
    pub cf: Vec<u64>,
    #[serde(skip)]
    pub df: Vec<u64>,
    /// Words dropped for occurring in fewer than `min_df` documents.
    pub dropped_min_df: u64,
    /// Words dropped for occurring in more than `max_df` of the documents.
    pub dropped_max_df: u64,
    /// Words dropped by the `max_vocab` cap.
    pub dropped_max_vocab: u64,
    /// Tokens of dropped words.
    pub tokens_dropped: u64,
}

/// Keeps the words `opts` allows among `terms` (from `num_docs` documents) and orders them by
/// descending corpus frequency, then by word.
pub fn prune(terms: Vec<TermCount>, num_docs: u64, opts: &PruneOptions) -> Pruned {
    let max_docs = opts.max_df * num_docs as f64;
    let mut out = Pruned::default();
    let mut kept: Vec<TermCount> = Vec::with_capacity(terms.len());
    for t in terms {
        if t.df < opts.min_df {
            out.dropped_min_df += 1;
            out.tokens_dropped += t.cf;
        } else if t.df as f64 > max_docs {
            out.dropped_max_df += 1;
            out.tokens_dropped += t.cf;
        } else {
            kept.push(t);
        }
    }
    kept.sort_unstable_by(|a, b| b.cf.cmp(&a.cf).then_with(|| a.word.cmp(&b.word)));
    if let Some(cap) = opts.max_vocab {
        if kept.len() > cap {
            for t in kept.drain(cap..) {
                out.dropped_max_vocab += 1;
                out.tokens_dropped += t.cf;
            }
        }
    }
    out.words.reserve_exact(kept.len());
    out.cf.reserve_exact(kept.len());
    out.df.reserve_exact(kept.len());
    for t in kept {
        out.words.push(t.word);
        out.cf.push(t.cf);
        out.df.push(t.df);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(word: &str, cf: u64, df: u64) -> TermCount {
        TermCount {
            word: word.into(),
            cf,
            df,
        }
    }

    #[test]
    fn thresholds_and_order() {
        let terms = vec![
            t("rare", 9, 1),
            t("the", 100, 10),
            t("beta", 20, 3),
            t("alpha", 20, 4),
            t("gamma", 30, 2),
            t("half", 7, 5),
        ];
        let opts = PruneOptions {
            min_df: 2,
            max_df: 0.5,
            max_vocab: None,
        };
        let p = prune(terms.clone(), 10, &opts);
        // Descending frequency; alpha and beta tie at 20 and are ordered by word.
        assert_eq!(p.words, ["gamma", "alpha", "beta", "half"]);
        assert_eq!(p.cf, [30, 20, 20, 7]);
        assert_eq!(p.df, [2, 4, 3, 5]);
        assert_eq!((p.dropped_min_df, p.dropped_max_df), (1, 1));
        assert_eq!(p.tokens_dropped, 109);

        let capped = prune(
            terms,
            10,
            &PruneOptions {
                max_vocab: Some(2),
                ..opts
            },
        );
        assert_eq!(capped.words, ["gamma", "alpha"]);
        assert_eq!(capped.dropped_max_vocab, 2);
        assert_eq!(capped.tokens_dropped, 109 + 27);
    }

    #[test]
    fn input_order_does_not_matter() {
        let a = vec![t("x", 5, 5), t("y", 5, 5), t("z", 6, 5)];
        let mut b = a.clone();
        b.reverse();
        let opts = PruneOptions {
            min_df: 1,
            max_df: 1.0,
            max_vocab: None,
        };
        assert_eq!(prune(a, 5, &opts), prune(b, 5, &opts));
    }

    #[test]
    fn validate() {
        assert!(PruneOptions::default().validate().is_ok());
        for bad in [0.0, -0.1, 1.5, f64::NAN] {
            let o = PruneOptions {
                max_df: bad,
                ..Default::default()
            };
            assert!(o.validate().unwrap_err().contains("max_df"));
        }
    }
}
