//! The in-memory topic model: word-topic counts plus what is needed to interpret them.

use topos_corpus::Vocabulary;

/// Largest number of topics: topic ids are stored in 16 bits (CuLDA_CGS §6.1.3).
pub const MAX_TOPICS: u32 = 65_535;

/// The document-topic prior α: one value per topic. Symmetric (every α_k equal, the default
/// 50/K of Griffiths & Steyvers 2004) or asymmetric, as `topos train --optimize-priors` learns it
/// (Wallach, Mimno & McCallum 2009, "Rethinking LDA: why priors matter": an asymmetric α over
/// topics, a symmetric β over words).
///
/// A symmetric prior is kept as the single value it is, so that every computation that factors
/// α out of a sum (the samplers' smoothing buckets, α·Σ_k φ_kw) keeps its exact arithmetic; the
/// asymmetric form is only taken when the values differ.
#[derive(Clone, Debug, PartialEq)]
pub struct Alpha {
    /// α_k for every topic; all equal exactly when `symmetric`.
    values: std::sync::Arc<[f64]>,
    symmetric: bool,
    sum: f64,
}

impl Alpha {
    /// α_k = `value` for each of `num_topics` topics (not validated: see [`Hyperparameters::new`]).
    pub fn symmetric(num_topics: u32, value: f64) -> Self {
        Self {
            values: vec![value; num_topics as usize].into(),
            symmetric: true,
            sum: f64::from(num_topics) * value,
        }
    }

    /// α from one value per topic; symmetric when they are all equal. Refused unless every value
    /// is positive and finite.
    pub fn from_values(values: Vec<f64>) -> Result<Self, HyperparameterError> {
        if let Some(&bad) = values.iter().find(|a| !(a.is_finite() && **a > 0.0)) {
            return Err(HyperparameterError::Alpha(bad));
        }
        let Some(&first) = values.first() else {
            return Err(HyperparameterError::NumTopics(0));
        };
        if values.iter().all(|&a| a == first) {
            return Ok(Self::symmetric(values.len() as u32, first));
        }
        // Summed in topic order: the one grouping every reader of the model uses.
        let sum = values.iter().sum();
        Ok(Self {
            values: values.into(),
            symmetric: false,
            sum,
        })
    }

    /// α_k.
    #[inline]
    pub fn get(&self, k: usize) -> f64 {
        self.values[k]
    }

    /// Every α_k, in topic order.
    #[inline]
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// Σ_k α_k (K·α when symmetric, computed as that product).
    #[inline]
    pub fn sum(&self) -> f64 {
        self.sum
    }

    /// The common value of a symmetric prior; `None` when the values differ.
    #[inline]
    pub fn symmetric_value(&self) -> Option<f64> {
        self.symmetric.then(|| self.values[0])
    }

    /// The number of topics.
    #[inline]
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Never true for a validated prior (K ≥ 2); here for the `len` convention.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The mean α_k, the one number to show for an asymmetric prior.
    pub fn mean(&self) -> f64 {
        self.sum / self.values.len() as f64
    }
}

impl std::fmt::Display for Alpha {
    /// `0.5` for a symmetric prior; `asymmetric (sum 12.3, from 0.01 to 2.4)` otherwise.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.symmetric_value() {
            Some(a) => write!(f, "{a}"),
            None => {
                let (lo, hi) = self
                    .values
                    .iter()
                    .fold((f64::INFINITY, 0.0f64), |(lo, hi), &a| {
                        (lo.min(a), hi.max(a))
                    });
                write!(
                    f,
                    "asymmetric (sum {:.4}, from {lo:.4} to {hi:.4})",
                    self.sum
                )
            }
        }
    }
}

/// A symmetric prior serializes as its number, an asymmetric one as the list of α_k.
impl serde::Serialize for Alpha {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.symmetric_value() {
            Some(a) => s.serialize_f64(a),
            None => self.values.serialize(s),
        }
    }
}

/// Dirichlet priors and the number of topics.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Hyperparameters {
    /// K, from 2 to [`MAX_TOPICS`].
    pub num_topics: u32,
    /// Document-topic prior α, > 0 for every topic. Default 50/K (Griffiths & Steyvers 2004),
    /// symmetric; asymmetric when learned ([`Alpha`]).
    pub alpha: Alpha,
    /// Topic-word prior β (symmetric), > 0. Default 0.01.
    pub beta: f64,
}

/// Why hyperparameters were refused.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum HyperparameterError {
    #[error("number of topics must be between 2 and {MAX_TOPICS}, got {0}")]
    NumTopics(u32),
    #[error("alpha must be a positive finite number, got {0}")]
    Alpha(f64),
    #[error("beta must be a positive finite number, got {0}")]
    Beta(f64),
    #[error("{got} values of alpha for {num_topics} topics")]
    AlphaLength { got: usize, num_topics: u32 },
    #[error("{name} must be between {} and {} (priors beyond them overflow or vanish in the sampler's arithmetic), got {value}", PRIOR_RANGE.0, PRIOR_RANGE.1)]
    OutOfRange { name: &'static str, value: f64 },
}

/// The range [`Hyperparameters::new`] takes a prior from (α or β a user gives): far wider than
/// any model uses, narrow enough that K·α, V·β and the counts plus a prior stay normal numbers
/// (β = 10⁻³²⁰, a subnormal, gave an infinite held-out likelihood; α = 10³⁰⁸ an overflow).
pub const PRIOR_RANGE: (f64, f64) = (1e-10, 1e6);

impl Hyperparameters {
    /// K topics with the given symmetric priors; `None` picks the defaults α = 50/K, β = 0.01.
    pub fn new(
        num_topics: u32,
        alpha: Option<f64>,
        beta: Option<f64>,
    ) -> Result<Self, HyperparameterError> {
        if !(2..=MAX_TOPICS).contains(&num_topics) {
            return Err(HyperparameterError::NumTopics(num_topics));
        }
        let alpha = alpha.unwrap_or(50.0 / f64::from(num_topics));
        if !(alpha.is_finite() && alpha > 0.0) {
            return Err(HyperparameterError::Alpha(alpha));
        }
        for (name, value) in [("alpha", Some(alpha)), ("beta", beta)] {
            match value {
                Some(v)
                    if v.is_finite()
                        && v > 0.0
                        && !(PRIOR_RANGE.0..=PRIOR_RANGE.1).contains(&v) =>
                {
                    return Err(HyperparameterError::OutOfRange { name, value: v });
                }
                _ => {}
            }
        }
        Self::with_alpha(Alpha::symmetric(num_topics, alpha), beta)
    }

    /// K = `alpha.len()` topics with the document prior `alpha` (validated) and β (default 0.01).
    pub fn with_alpha(alpha: Alpha, beta: Option<f64>) -> Result<Self, HyperparameterError> {
        let num_topics = alpha.len() as u32;
        if !(2..=MAX_TOPICS).contains(&num_topics) {
            return Err(HyperparameterError::NumTopics(num_topics));
        }
        if let Some(&bad) = alpha
            .values()
            .iter()
            .find(|a| !(a.is_finite() && **a > 0.0))
        {
            return Err(HyperparameterError::Alpha(bad));
        }
        let beta = beta.unwrap_or(0.01);
        if !(beta.is_finite() && beta > 0.0) {
            return Err(HyperparameterError::Beta(beta));
        }
        Ok(Self {
            num_topics,
            alpha,
            beta,
        })
    }

    /// K as a `usize`.
    #[inline]
    pub fn k(&self) -> usize {
        self.num_topics as usize
    }
}

/// How a model was trained: recorded in the model file so a result can be reproduced. Run
/// metadata that varies between identical runs (wall time, thread count) is deliberately absent,
/// so the same seed gives a byte-identical file.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Provenance {
    /// Sampler name (`esca`, `cgs`, ...).
    pub algorithm: String,
    /// Completed iterations.
    pub iterations: u32,
    /// Seed of the counter-based generator.
    pub seed: u64,
    /// Checksum of the corpus file the model was trained on (0 if unknown).
    pub corpus_checksum: u64,
    /// Training documents and tokens.
    pub num_docs: u64,
    pub num_tokens: u64,
    /// The sampler's settings that change its model, where they differ from their defaults, by
    /// name (`mh_steps`: `topos train --mh-steps`): empty for a run at the defaults and in files
    /// before version 5 (whose samplers had no settings).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub sampler_settings: std::collections::BTreeMap<String, u32>,
}

/// A trained LDA model: word-topic counts B (V × K, row-major by word) and their column sums.
#[derive(Clone, Debug, PartialEq)]
pub struct TopicModel {
    pub vocab: Vocabulary,
    pub hyper: Hyperparameters,
    /// `word_topic[v * K + k]` = number of training tokens of word v assigned to topic k.
    pub word_topic: Vec<u32>,
    /// `topic_totals[k]` = Σ_v word_topic[v, k].
    pub topic_totals: Vec<u64>,
    pub provenance: Provenance,
    /// The differential-privacy guarantee of a model trained with `topos train --private`
    /// (its counts are then a noisy release, not the training counts); `None` for an ordinary
    /// model, which carries no privacy guarantee at all.
    pub privacy: Option<topos_privacy::Guarantee>,
    /// How the corpus's text was cut into tokens (from the corpus, by the training run), so
    /// `infer` and `similar --text` cut new text the same way with the model file alone; `None`
    /// for models of corpora that did not record it and for model files before version 3.
    pub tokenizer: Option<topos_corpus::TokenizerSpec>,
}

impl TopicModel {
    /// Builds a model from word-topic counts, computing the topic totals.
    ///
    /// # Panics
    /// If `word_topic.len() != vocab.len() * K`.
    pub fn from_counts(
        vocab: Vocabulary,
        hyper: Hyperparameters,
        word_topic: Vec<u32>,
        provenance: Provenance,
    ) -> Self {
        let k = hyper.k();
        assert_eq!(
            word_topic.len(),
            vocab.len() * k,
            "word-topic matrix is not V x K"
        );
        let mut topic_totals = vec![0u64; k];
        for row in word_topic.chunks_exact(k) {
            for (t, &c) in topic_totals.iter_mut().zip(row) {
                *t += u64::from(c);
            }
        }
        Self {
            vocab,
            hyper,
            word_topic,
            topic_totals,
            provenance,
            privacy: None,
            tokenizer: None,
        }
    }

    /// The same model, recording how its corpus's text was tokenized.
    pub fn with_tokenizer(mut self, tokenizer: Option<topos_corpus::TokenizerSpec>) -> Self {
        self.tokenizer = tokenizer;
        self
    }

    /// The same model, recording the privacy guarantee its counts were released under.
    pub fn with_privacy(mut self, guarantee: topos_privacy::Guarantee) -> Self {
        self.privacy = Some(guarantee);
        self
    }

    /// Number of topics K.
    #[inline]
    pub fn num_topics(&self) -> usize {
        self.hyper.k()
    }

    /// Vocabulary size V.
    #[inline]
    pub fn num_words(&self) -> usize {
        self.vocab.len()
    }

    /// Counts of word `v` over topics.
    #[inline]
    pub fn word_row(&self, v: u32) -> &[u32] {
        let k = self.num_topics();
        &self.word_topic[v as usize * k..(v as usize + 1) * k]
    }
}

/// Document-topic counts A of a set of documents, as sparse rows (CSR): topics of document `d`
/// are `topics[offsets[d]..offsets[d+1]]` in increasing order, with positive `counts` beside them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DocTopics {
    pub num_topics: u32,
    pub offsets: Vec<u64>,
    pub topics: Vec<u16>,
    pub counts: Vec<u32>,
}

impl DocTopics {
    /// Number of documents.
    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// Whether there are no documents.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The non-zero (topic, count) pairs of document `d`.
    pub fn row(&self, d: usize) -> (&[u16], &[u32]) {
        let (a, b) = (self.offsets[d] as usize, self.offsets[d + 1] as usize);
        (&self.topics[a..b], &self.counts[a..b])
    }

    /// No documents yet over `num_topics` topics; add rows with [`DocTopics::push_row`] or
    /// [`DocTopics::push_dense`].
    pub fn new(num_topics: u32) -> Self {
        Self {
            num_topics,
            offsets: vec![0],
            topics: Vec::new(),
            counts: Vec::new(),
        }
    }

    /// Appends a document from its non-zero `(topic, count)` pairs (increasing topics, positive
    /// counts: checked by [`DocTopics::validate`], not here, to keep the trainer's hot path lean).
    pub fn push_row(&mut self, topics: &[u16], counts: &[u32]) {
        assert_eq!(
            topics.len(),
            counts.len(),
            "topics and counts differ in length"
        );
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        self.topics.extend_from_slice(topics);
        self.counts.extend_from_slice(counts);
        self.offsets.push(self.topics.len() as u64);
    }

    /// Appends a document from a dense row of K counts, keeping the non-zero ones.
    pub fn push_dense(&mut self, row: &[u32]) {
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        for (k, &c) in row.iter().enumerate() {
            if c > 0 {
                self.topics.push(k as u16);
                self.counts.push(c);
            }
        }
        self.offsets.push(self.topics.len() as u64);
    }

    /// Tokens of document `d` (Σ_k A_dk).
    pub fn row_total(&self, d: usize) -> u64 {
        self.row(d).1.iter().map(|&c| u64::from(c)).sum()
    }

    /// Checks the CSR invariants: offsets start at 0, never decrease and end at the number of
    /// entries; within a row topics strictly increase and are below K; counts are positive.
    /// Returns a one-line description of the first violation.
    pub fn validate(&self) -> Result<(), String> {
        if !(2..=MAX_TOPICS).contains(&self.num_topics) {
            return Err(format!(
                "number of topics must be between 2 and {MAX_TOPICS}, got {}",
                self.num_topics
            ));
        }
        if self.topics.len() != self.counts.len() {
            return Err(format!(
                "{} topics but {} counts",
                self.topics.len(),
                self.counts.len()
            ));
        }
        match (self.offsets.first(), self.offsets.last()) {
            (Some(0), Some(&last)) if last == self.topics.len() as u64 => {}
            _ => {
                return Err(format!(
                    "offsets must run from 0 to the {} entries",
                    self.topics.len()
                ))
            }
        }
        if let Some(d) = self.offsets.windows(2).position(|w| w[0] > w[1]) {
            return Err(format!("offsets decrease at document {d}"));
        }
        for d in 0..self.len() {
            let (topics, counts) = self.row(d);
            if let Some(i) = counts.iter().position(|&c| c == 0) {
                return Err(format!(
                    "document {d}: zero count stored for topic {}",
                    topics[i]
                ));
            }
            if let Some(&t) = topics.iter().find(|&&t| u32::from(t) >= self.num_topics) {
                return Err(format!(
                    "document {d}: topic {t} is not below K = {}",
                    self.num_topics
                ));
            }
            if let Some(p) = topics.windows(2).position(|p| p[0] >= p[1]) {
                return Err(format!(
                    "document {d}: topics not strictly increasing ({} then {})",
                    topics[p],
                    topics[p + 1]
                ));
            }
        }
        Ok(())
    }
}

/// The one line every command that reads a model shows about its privacy: the guarantee of a
/// model trained with `topos train --private`, or that there is none.
pub fn privacy_line(guarantee: Option<&topos_privacy::Guarantee>) -> String {
    match guarantee {
        Some(g) => format!("privacy: {g}"),
        None => "privacy: none (trained without --private; the counts are the training data's)"
            .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hyperparameters_validate() {
        let h = Hyperparameters::new(100, None, None).unwrap();
        assert_eq!(h.alpha.symmetric_value(), Some(0.5));
        assert_eq!(h.alpha.sum(), 50.0);
        assert_eq!(h.beta, 0.01);
        assert!(Hyperparameters::new(1, None, None).is_err());
        assert!(Hyperparameters::new(65_536, None, None).is_err());
        assert!(Hyperparameters::new(65_535, None, None).is_ok());
        assert!(Hyperparameters::new(10, Some(-1.0), None).is_err());
        assert!(Hyperparameters::new(10, None, Some(f64::NAN)).is_err());
    }

    #[test]
    fn doc_topics_rows_and_validation() {
        let mut a = DocTopics::new(4);
        a.push_dense(&[0, 2, 0, 1]);
        a.push_row(&[], &[]);
        a.push_row(&[0, 3], &[5, 1]);
        assert_eq!(a.len(), 3);
        assert_eq!(a.row(0), (&[1u16, 3][..], &[2u32, 1][..]));
        assert_eq!(a.row_total(2), 6);
        assert_eq!(a.validate(), Ok(()));

        let mut bad = a.clone();
        bad.topics[0] = 4;
        assert!(bad
            .validate()
            .unwrap_err()
            .contains("topic 4 is not below K"));
        let mut bad = a.clone();
        bad.topics[1] = 1;
        assert!(bad.validate().unwrap_err().contains("strictly increasing"));
        let mut bad = a.clone();
        bad.counts[2] = 0;
        assert!(bad.validate().unwrap_err().contains("zero count"));
        let mut bad = a.clone();
        bad.offsets[1] = 3;
        assert!(bad.validate().unwrap_err().contains("decrease"));
        let mut bad = a;
        bad.num_topics = 1;
        assert!(bad.validate().is_err());
    }

    #[test]
    fn totals_are_column_sums() {
        let vocab = Vocabulary::new(vec!["a".into(), "b".into()]);
        let h = Hyperparameters::new(3, None, None).unwrap();
        let m = TopicModel::from_counts(vocab, h, vec![1, 0, 2, 3, 4, 0], Provenance::default());
        assert_eq!(m.topic_totals, vec![4, 4, 2]);
        assert_eq!(m.word_row(1), &[3, 4, 0]);
    }
}
