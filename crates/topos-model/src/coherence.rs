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

/// A coherence measure over sliding windows (Röder, Both & Hinneburg 2015, "Exploring the space of
/// topic coherence measures", the measures of their Palmetto tool).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowMeasure {
    /// C_NPMI: the mean NPMI of every pair of top words (Bouma 2009; Aletras & Stevenson 2013).
    Npmi,
    /// C_UCI: the mean PMI of every pair of top words (Newman et al. 2010).
    Uci,
    /// C_V: for each top word, the cosine between its NPMI context vector over the topic's words and
    /// that of the whole set of top words, averaged (Röder et al. 2015, Table 2).
    CV,
}

impl WindowMeasure {
    /// The name used on the command line and in JSON (`npmi`, `uci`, `c_v`).
    pub fn name(self) -> &'static str {
        match self {
            WindowMeasure::Npmi => "npmi",
            WindowMeasure::Uci => "uci",
            WindowMeasure::CV => "c_v",
        }
    }

    /// The default window of each measure, as in Palmetto and gensim: 110 tokens for C_V, 10 for
    /// NPMI and UCI.
    pub fn default_window(self) -> usize {
        match self {
            WindowMeasure::CV => 110,
            WindowMeasure::Npmi | WindowMeasure::Uci => 10,
        }
    }

    /// Parses `npmi`, `c_npmi`, `uci`, `c_uci`, `pmi`, `c_v` or `cv`.
    pub fn parse(name: &str) -> Option<WindowMeasure> {
        match name.to_ascii_lowercase().as_str() {
            "npmi" | "c_npmi" => Some(WindowMeasure::Npmi),
            "uci" | "c_uci" | "pmi" => Some(WindowMeasure::Uci),
            "c_v" | "cv" => Some(WindowMeasure::CV),
            _ => None,
        }
    }
}

/// How a sliding window's words are counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowCounting {
    /// As gensim's `CoherenceModel` counts (`WordOccurrenceAccumulator`, the default): the first
    /// window of a document holds the words in it; each later window forgets the word that just
    /// left it, even when another occurrence of that word is still inside, and holds the word that
    /// entered. Where no word repeats within `window` tokens this is [`WindowCounting::Exact`].
    #[default]
    Gensim,
    /// A window holds a word when any occurrence of the word is inside it, as Röder et al. (2015)
    /// and their Palmetto define the boolean sliding window.
    Exact,
}

impl WindowCounting {
    /// `gensim` or `exact`, as on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            WindowCounting::Gensim => "gensim",
            WindowCounting::Exact => "exact",
        }
    }

    /// Parses `gensim` or `exact`.
    pub fn parse(name: &str) -> Option<WindowCounting> {
        match name.to_ascii_lowercase().as_str() {
            "gensim" => Some(WindowCounting::Gensim),
            "exact" => Some(WindowCounting::Exact),
            _ => None,
        }
    }
}

/// Coherence of every topic by one sliding-window measure.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WindowCoherence {
    pub measure: WindowMeasure,
    /// Tokens per sliding window.
    pub window: usize,
    /// How a window's words were counted.
    pub counting: WindowCounting,
    /// Top words per topic.
    pub top_words: usize,
    /// Windows counted (the probability space).
    pub windows: u64,
    /// Mean over topics.
    pub mean: f64,
    pub per_topic: Vec<f64>,
}

/// The ε that keeps the logarithms of NPMI and PMI finite for pairs that never co-occur; gensim's
/// `direct_confirmation_measure.EPSILON`, so that the numbers agree with it.
pub const EPSILON: f64 = 1e-12;

/// `measure` of each topic of `model` over its `top_words` most frequent words (words with a zero
/// count left out, as for UMass), with probabilities counted over sliding windows of `window`
/// tokens of `docs` (normally the training documents, in their stored token order), the windows'
/// words counted as `counting` says.
pub fn window_coherence(
    model: &TopicModel,
    docs: Docs,
    measure: WindowMeasure,
    top_words: usize,
    window: usize,
    counting: WindowCounting,
) -> Result<WindowCoherence, ModelError> {
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
    let (windows, per_topic) = window_coherence_of(&lists, docs, measure, window, counting)?;
    let mean = per_topic.iter().sum::<f64>() / per_topic.len().max(1) as f64;
    Ok(WindowCoherence {
        measure,
        window,
        counting,
        top_words,
        windows,
        mean,
        per_topic,
    })
}

/// `measure` of explicit word lists (best first) over sliding windows of `docs`: returns the number
/// of windows and one score per list.
///
/// The probabilities are those of Röder et al.'s boolean sliding window: a document of L tokens
/// gives L − w + 1 windows of w consecutive tokens (one window, the whole document, when L < w,
/// also when it is empty); p(x) is the share of windows holding x and p(x, y) the share holding
/// both, where what a window holds is counted as `counting` says ([`WindowCounting`]). NPMI(x, y) = log((p(x, y) + ε) / (p(x) p(y))) / −log(p(x, y) + ε) and
/// PMI(x, y) = log((p(x, y) + ε) / (p(x) p(y))) with ε = [`EPSILON`], as gensim computes them. A list
/// with a word that occurs in no window scores NaN for PMI and NPMI (its probability is 0).
pub fn window_coherence_of(
    topics: &[Vec<u32>],
    docs: Docs,
    measure: WindowMeasure,
    window: usize,
    counting: WindowCounting,
) -> Result<(u64, Vec<f64>), ModelError> {
    if window == 0 {
        return Err(ModelError::Options(
            "the coherence window must be at least 1 token".into(),
        ));
    }
    let bound = topics.iter().flatten().max().map_or(0, |&w| w as usize + 1);
    let mut slot = vec![NONE; bound];
    let mut slots = 0u32;
    for &w in topics.iter().flatten() {
        if slot[w as usize] == NONE {
            slot[w as usize] = slots;
            slots += 1;
        }
    }
    let counts = match counting {
        WindowCounting::Exact => WindowCounts::count(docs, &slot, slots as usize, window),
        WindowCounting::Gensim => {
            WindowCounts::count_as_gensim(docs, &slot, slots as usize, window)
        }
    };
    let n = counts.windows as f64;
    let p = |a: u32| counts.occurrences(slot[a as usize]) as f64 / n;
    let joint =
        |a: u32, b: u32| counts.co_occurrences(slot[a as usize], slot[b as usize]) as f64 / n;
    let pmi = |a: u32, b: u32| ((joint(a, b) + EPSILON) / (p(a) * p(b))).ln();
    let npmi = |a: u32, b: u32| pmi(a, b) / -(joint(a, b) + EPSILON).ln();
    let per_topic = topics
        .par_iter()
        .map(|words| {
            let m = words.len();
            match measure {
                WindowMeasure::Npmi | WindowMeasure::Uci => {
                    if m < 2 {
                        return 0.0;
                    }
                    let mut sum = 0.0;
                    for i in 0..m {
                        for j in i + 1..m {
                            sum += if measure == WindowMeasure::Npmi {
                                npmi(words[i], words[j])
                            } else {
                                pmi(words[i], words[j])
                            };
                        }
                    }
                    sum / (m * (m - 1) / 2) as f64
                }
                WindowMeasure::CV => {
                    if m == 0 {
                        return 0.0;
                    }
                    // Context vectors over the topic's words: v(x)_j = NPMI(x, w_j), and the set's
                    // vector is the sum of its words' vectors (γ = 1).
                    let vectors: Vec<Vec<f64>> = words
                        .iter()
                        .map(|&x| words.iter().map(|&y| npmi(x, y)).collect())
                        .collect();
                    let set: Vec<f64> =
                        (0..m).map(|j| vectors.iter().map(|v| v[j]).sum()).collect();
                    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
                    let set_norm = norm(&set);
                    let mut sum = 0.0;
                    for v in &vectors {
                        let dot: f64 = v.iter().zip(&set).map(|(a, b)| a * b).sum();
                        sum += dot / (norm(v) * set_norm);
                    }
                    sum / m as f64
                }
            }
        })
        .collect();
    Ok((counts.windows, per_topic))
}

/// For each needed word, the windows containing it, as merged half-open intervals of global window
/// indices in increasing order: a token at position p of a document with W windows of w tokens lies
/// in its windows max(0, p − w + 1) ..= min(p, W − 1). Occurrence and co-occurrence counts are then
/// interval lengths and intersections, so no window is materialized.
struct WindowCounts {
    windows: u64,
    intervals: Vec<Vec<(u64, u64)>>,
}

impl WindowCounts {
    fn count(docs: Docs, slot: &[u32], slots: usize, window: usize) -> WindowCounts {
        let mut intervals: Vec<Vec<(u64, u64)>> = vec![Vec::new(); slots];
        let mut base = 0u64;
        for words in docs.iter() {
            let len = words.len();
            let doc_windows = if len < window { 1 } else { len - window + 1 };
            for (p, &w) in words.iter().enumerate() {
                let Some(&s) = slot.get(w as usize) else {
                    continue;
                };
                if s == NONE {
                    continue;
                }
                let lo = base + (p + 1).saturating_sub(window) as u64;
                let hi = base + p.min(doc_windows - 1) as u64 + 1;
                let list = &mut intervals[s as usize];
                match list.last_mut() {
                    Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
                    _ => list.push((lo, hi)),
                }
            }
            base += doc_windows as u64;
        }
        WindowCounts {
            windows: base,
            intervals,
        }
    }

    /// The windows each word is held in as gensim's `WordOccurrenceAccumulator._slide_window`
    /// tracks them: the first window of a document holds the words in it, and window j > 0 holds
    /// those of window j − 1, less the token at position j − 1 (the one that left, even if it
    /// occurs again inside), plus the token at position j + w − 1 (the one that entered). Each
    /// word's windows are still disjoint increasing intervals (touching ones kept apart).
    fn count_as_gensim(docs: Docs, slot: &[u32], slots: usize, window: usize) -> WindowCounts {
        const UNHELD: u64 = u64::MAX;
        let mut intervals: Vec<Vec<(u64, u64)>> = vec![Vec::new(); slots];
        // The first window of the interval a word is held in now, or UNHELD.
        let mut since = vec![UNHELD; slots];
        let needed = |w: u32| match slot.get(w as usize) {
            Some(&s) if s != NONE => Some(s as usize),
            _ => None,
        };
        let mut base = 0u64;
        for words in docs.iter() {
            let len = words.len();
            let doc_windows = if len < window { 1 } else { len - window + 1 };
            for &w in &words[..len.min(window)] {
                if let Some(s) = needed(w) {
                    if since[s] == UNHELD {
                        since[s] = base;
                    }
                }
            }
            for j in 1..doc_windows {
                let at = base + j as u64;
                if let Some(s) = needed(words[j - 1]) {
                    if since[s] != UNHELD {
                        intervals[s].push((since[s], at));
                        since[s] = UNHELD;
                    }
                }
                if let Some(s) = needed(words[j + window - 1]) {
                    if since[s] == UNHELD {
                        since[s] = at;
                    }
                }
            }
            let end = base + doc_windows as u64;
            for &w in words {
                if let Some(s) = needed(w) {
                    if since[s] != UNHELD {
                        intervals[s].push((since[s], end));
                        since[s] = UNHELD;
                    }
                }
            }
            base = end;
        }
        WindowCounts {
            windows: base,
            intervals,
        }
    }

    fn occurrences(&self, s: u32) -> u64 {
        self.intervals[s as usize].iter().map(|(a, b)| b - a).sum()
    }

    fn co_occurrences(&self, a: u32, b: u32) -> u64 {
        let (x, y) = (&self.intervals[a as usize], &self.intervals[b as usize]);
        let (mut i, mut j, mut n) = (0, 0, 0);
        while i < x.len() && j < y.len() {
            let lo = x[i].0.max(y[j].0);
            let hi = x[i].1.min(y[j].1);
            if lo < hi {
                n += hi - lo;
            }
            if x[i].1 < y[j].1 {
                i += 1;
            } else {
                j += 1;
            }
        }
        n
    }
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

    // Produced by gensim 4.4.0's CoherenceModel with `python3 crates/topos-model/tests/fixtures/coherence_gensim.py` (its header says how).
    const TEXTS: [&[u32]; 40] = [
        &[17, 21, 19, 0, 22, 4, 3, 12, 7, 8, 24],
        &[1, 10, 15, 24, 23, 9, 17],
        &[15, 6, 17, 2, 9],
        &[11, 8, 2],
        &[13, 20, 4, 23, 3, 18, 6, 21, 24, 11, 5, 9, 14, 2, 17],
        &[9, 0, 1, 6],
        &[13, 0, 14, 12, 3, 8, 10, 23, 20],
        &[],
        &[
            15, 5, 2, 24, 8, 20, 18, 9, 17, 4, 7, 11, 23, 12, 0, 1, 22, 21, 19,
        ],
        &[21, 9, 17],
        &[4, 19, 5, 10, 6, 20, 11, 17, 14, 21, 12, 13, 1],
        &[6, 19, 12, 2, 21, 11, 24, 14, 10, 3, 9, 18, 16, 7],
        &[
            15, 23, 9, 5, 2, 18, 17, 11, 4, 10, 3, 14, 8, 24, 12, 1, 21, 7,
        ],
        &[23, 0, 14, 15, 13, 24, 20, 12, 10, 6, 7],
        &[14, 19, 1, 21, 9, 10, 24, 16, 20, 2, 11],
        &[
            17, 2, 1, 22, 3, 14, 15, 0, 21, 7, 6, 18, 9, 19, 8, 5, 12, 16,
        ],
        &[22, 23, 8, 5, 9, 21, 7],
        &[4],
        &[14, 13, 20, 4, 21],
        &[
            19, 6, 5, 21, 22, 11, 13, 7, 20, 10, 3, 18, 24, 14, 9, 12, 0, 4, 1,
        ],
        &[4, 13, 10, 7, 5],
        &[
            6, 13, 2, 17, 23, 20, 22, 21, 0, 16, 5, 14, 18, 8, 9, 3, 19, 15,
        ],
        &[12, 1, 9, 22, 15, 6, 21, 11, 16, 14, 7, 8, 2, 10],
        &[6, 20, 0, 11, 2, 10, 5, 22, 4, 7, 16, 23, 12, 24, 18, 14, 19],
        &[6, 15, 18, 1, 5, 24, 16, 21, 12, 20, 4, 19, 14],
        &[1, 18, 9, 21, 6, 4, 19, 0],
        &[9, 16, 12, 11, 2, 8, 18, 10, 23, 13],
        &[7, 8, 6, 4, 18, 15, 22, 5, 3, 2, 11, 23],
        &[19, 12, 4, 18, 10, 24, 21, 23, 3, 14],
        &[17, 8, 5, 10, 22, 20],
        &[
            4, 1, 16, 0, 10, 15, 24, 13, 14, 19, 20, 9, 23, 3, 5, 6, 21, 12, 17,
        ],
        &[4, 10, 17, 6, 8, 0, 21, 24, 1, 3, 14, 20, 22, 15, 2, 13, 7],
        &[
            2, 21, 6, 17, 5, 19, 14, 4, 15, 3, 22, 18, 12, 10, 16, 11, 1, 24, 0, 20,
        ],
        &[
            24, 19, 21, 13, 17, 16, 22, 12, 1, 5, 7, 9, 3, 20, 2, 8, 23, 4,
        ],
        &[4, 10, 1, 21, 20, 23, 3, 11, 24, 15, 9, 7, 13, 16, 14, 5, 18],
        &[21, 7, 1, 18, 5, 10, 16, 23],
        &[21, 3, 16, 2, 13, 17, 5, 10],
        &[11, 3, 18],
        &[3, 6, 15, 8, 7, 4, 2, 5, 21, 17, 16, 22, 14, 10],
        &[1, 8, 13, 20],
    ];
    const TOPICS: [[u32; 6]; 4] = [
        [3, 7, 11, 0, 19, 2],
        [5, 6, 14, 22, 1, 9],
        [12, 13, 8, 24, 17, 4],
        [10, 15, 16, 18, 20, 21],
    ];
    const GENSIM: [(&str, usize, [f64; 4]); 5] = [
        (
            "c_npmi",
            10,
            [
                -0.06890016224010119,
                -0.04807726929553725,
                -0.04448436146978897,
                -0.046421357959817736,
            ],
        ),
        (
            "c_uci",
            10,
            [
                -0.21043403680214035,
                -0.12158428881679707,
                -0.2014097638626805,
                -0.09168126173942241,
            ],
        ),
        (
            "c_v",
            110,
            [
                0.6711219042965365,
                0.6764659048985279,
                0.5934154992754042,
                0.6539368575970373,
            ],
        ),
        (
            "c_v",
            5,
            [
                0.1857486040342569,
                0.2733753820527813,
                0.21403679345758453,
                0.20592784424540042,
            ],
        ),
        (
            "c_npmi",
            3,
            [
                -0.24591132767922602,
                -0.14627631483575387,
                -0.17792495215697293,
                -0.1745233491319155,
            ],
        ),
    ];

    const TEXTS_REPEATED: [&[u32]; 60] = [
        &[
            4, 10, 7, 4, 7, 3, 3, 11, 1, 0, 3, 9, 10, 4, 11, 7, 10, 0, 1, 8,
        ],
        &[8, 7, 6, 1, 0, 6, 3, 5, 8, 2, 4, 0, 11, 3, 0],
        &[10, 4, 1],
        &[
            4, 2, 0, 5, 7, 9, 5, 10, 1, 8, 4, 7, 3, 9, 4, 6, 5, 6, 2, 4, 10, 8, 10,
        ],
        &[8, 6, 8, 4, 5],
        &[],
        &[7, 10, 9, 1, 4, 3, 6, 6, 7, 11, 10, 0, 4, 9],
        &[
            2, 10, 6, 10, 5, 10, 6, 5, 5, 4, 5, 4, 9, 8, 10, 11, 3, 9, 2, 6, 9,
        ],
        &[
            5, 5, 4, 1, 7, 7, 7, 4, 11, 9, 7, 0, 11, 3, 0, 2, 5, 8, 2, 2, 9, 5, 9, 4, 1, 10, 0,
        ],
        &[7, 3, 8, 4],
        &[8, 9, 3, 3, 8],
        &[4, 2, 4, 5, 6, 3, 0, 4],
        &[7],
        &[0, 8, 6, 2, 4, 0, 7, 5, 9, 1, 7, 0, 0, 0, 6, 10],
        &[
            1, 8, 5, 10, 3, 8, 3, 6, 4, 11, 4, 11, 6, 1, 10, 9, 2, 2, 7, 0, 3, 5, 8, 11, 3, 4, 5,
        ],
        &[
            0, 8, 5, 4, 7, 0, 10, 9, 11, 11, 10, 8, 2, 0, 5, 3, 10, 0, 1, 10, 0, 2,
        ],
        &[
            3, 3, 4, 11, 4, 9, 4, 6, 10, 8, 11, 8, 5, 9, 9, 6, 1, 7, 5, 4, 5,
        ],
        &[
            4, 10, 6, 10, 10, 0, 8, 10, 3, 5, 6, 11, 6, 10, 2, 10, 4, 7, 6, 0, 9, 7, 10, 10, 1,
        ],
        &[
            0, 3, 11, 7, 6, 5, 4, 3, 5, 6, 0, 7, 1, 3, 11, 10, 10, 3, 9, 1, 3, 4, 1, 11, 5, 11, 0,
            2,
        ],
        &[8, 5, 0, 7, 3, 2, 10, 0, 11],
        &[4, 5, 9, 3],
        &[
            11, 1, 11, 7, 5, 3, 7, 4, 8, 2, 1, 4, 0, 7, 2, 5, 1, 6, 2, 1, 7, 11, 0, 1, 9, 1, 9, 1,
            4, 9,
        ],
        &[
            8, 0, 3, 4, 11, 8, 3, 1, 2, 6, 4, 5, 5, 8, 7, 4, 8, 11, 4, 10, 2, 6, 11, 10, 4, 6, 7,
            10, 10, 7,
        ],
        &[
            4, 11, 5, 1, 8, 8, 8, 3, 0, 5, 3, 6, 2, 10, 3, 11, 7, 11, 8, 6, 2, 3, 2, 7, 1, 3,
        ],
        &[1, 6, 7, 7, 5, 10, 10],
        &[11, 5, 9, 7],
        &[
            10, 0, 8, 0, 2, 7, 7, 7, 5, 1, 9, 0, 11, 8, 5, 10, 11, 2, 5, 3, 6, 7, 6, 1, 0, 5, 8, 5,
            9, 2,
        ],
        &[
            2, 0, 7, 2, 6, 3, 4, 6, 11, 11, 0, 7, 6, 11, 1, 8, 2, 2, 1, 11, 9, 11, 0, 10, 1, 3,
        ],
        &[
            5, 11, 5, 11, 6, 10, 11, 2, 11, 4, 3, 9, 5, 7, 2, 3, 4, 4, 8, 5, 4, 10, 0, 3, 0, 7, 3,
        ],
        &[9, 5],
        &[
            11, 11, 9, 6, 4, 1, 2, 1, 1, 5, 9, 3, 6, 5, 7, 4, 2, 1, 1, 0, 6, 7, 2, 2,
        ],
        &[
            9, 8, 11, 6, 0, 9, 7, 6, 8, 2, 6, 1, 1, 2, 8, 0, 2, 3, 4, 6, 4,
        ],
        &[3, 9, 7, 7, 0, 7, 6, 6, 5, 1, 11, 2, 0],
        &[8, 4, 2, 8, 6, 8, 10, 6, 0, 10, 6, 7],
        &[1, 4],
        &[
            3, 2, 9, 4, 4, 1, 5, 4, 10, 2, 3, 4, 0, 4, 4, 4, 7, 4, 4, 3, 11, 10,
        ],
        &[6, 11, 10, 4, 9, 5, 7, 4, 8, 11],
        &[
            11, 3, 10, 11, 1, 5, 1, 6, 9, 11, 1, 6, 5, 9, 10, 8, 11, 2, 4, 4, 11,
        ],
        &[7, 2, 7, 4, 2, 5, 1, 1, 6, 10, 6, 2, 3, 5, 5, 2, 1, 2],
        &[10, 7, 8, 5, 6, 2, 8, 9, 1, 6, 6, 4, 4, 6, 2, 1, 3, 3, 11],
        &[
            10, 6, 6, 4, 4, 0, 11, 2, 7, 0, 9, 2, 9, 8, 6, 9, 2, 9, 0, 7, 8, 7, 4, 0, 5, 2, 5, 7,
            10, 5,
        ],
        &[2, 11, 1, 6, 2, 3, 10, 5, 2, 0, 7, 9, 9, 4],
        &[8, 2, 3, 5, 4, 2, 7, 4, 2],
        &[10, 5, 5, 6, 1],
        &[
            11, 10, 4, 0, 10, 9, 2, 3, 11, 3, 0, 7, 5, 3, 2, 11, 10, 6, 8,
        ],
        &[0, 0, 10],
        &[4, 1, 11, 4, 1, 8, 0],
        &[0, 6, 5],
        &[
            10, 11, 9, 4, 4, 3, 5, 6, 9, 9, 9, 0, 3, 2, 5, 3, 0, 10, 9, 3, 5, 9, 8, 0, 9, 7, 11,
        ],
        &[
            10, 7, 1, 7, 5, 10, 8, 2, 6, 3, 6, 9, 5, 4, 4, 6, 9, 3, 10, 7, 11, 5, 11, 1, 11, 9, 1,
            7,
        ],
        &[5, 6],
        &[
            4, 7, 10, 6, 9, 4, 3, 3, 0, 0, 11, 5, 9, 10, 3, 11, 7, 11, 7, 2, 7, 7, 10, 10, 1, 2, 9,
        ],
        &[1],
        &[8, 0, 10, 11, 3, 6, 1, 10, 6, 9],
        &[
            4, 0, 0, 1, 4, 10, 8, 9, 0, 0, 1, 3, 6, 9, 3, 3, 6, 10, 2, 1, 10, 11, 1, 8, 4, 4, 9,
        ],
        &[
            9, 1, 10, 4, 8, 5, 4, 9, 7, 5, 2, 7, 8, 9, 1, 7, 4, 8, 9, 9, 3, 3, 9, 1, 0, 6, 10, 10,
        ],
        &[1, 5, 9, 3, 7, 7, 2, 5, 6],
        &[
            8, 1, 8, 11, 1, 4, 1, 8, 3, 10, 7, 6, 7, 3, 4, 1, 8, 10, 5, 8, 0, 1, 2, 8, 1, 5, 6, 5,
        ],
        &[
            9, 3, 2, 0, 4, 3, 1, 7, 1, 10, 0, 7, 1, 2, 3, 1, 3, 1, 4, 4, 5, 8, 5, 6, 1,
        ],
        &[
            7, 9, 0, 9, 10, 2, 6, 7, 2, 0, 2, 1, 6, 5, 5, 3, 11, 7, 3, 1, 9, 11, 0, 2,
        ],
    ];
    const TOPICS_REPEATED: [[u32; 5]; 3] = [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [10, 11, 0, 5, 2]];
    const GENSIM_REPEATED: [(&str, usize, [f64; 3]); 9] = [
        (
            "c_npmi",
            10,
            [
                -0.013206497396043898,
                -0.020755187882229718,
                -0.04011351305158251,
            ],
        ),
        (
            "c_uci",
            10,
            [
                -0.021804323932412113,
                -0.04255108673313991,
                -0.06770510127674294,
            ],
        ),
        (
            "c_v",
            110,
            [0.8168032254359208, 0.7207723270838928, 0.7946550204820736],
        ),
        (
            "c_npmi",
            3,
            [
                -0.0959916034490073,
                -0.09497662295769335,
                -0.1071886183202102,
            ],
        ),
        (
            "c_uci",
            3,
            [
                -0.3219969746460721,
                -0.3390117888701366,
                -0.3919651316140039,
            ],
        ),
        (
            "c_v",
            5,
            [0.3102783694927914, 0.3129421128459009, 0.32593581126815047],
        ),
        (
            "c_npmi",
            5,
            [
                -0.07469566110748009,
                -0.0736179083868089,
                -0.06640468400425902,
            ],
        ),
        (
            "c_uci",
            20,
            [
                0.045031764214311314,
                -0.007255282422937992,
                0.032073149395740484,
            ],
        ),
        (
            "c_v",
            10,
            [
                0.42235974245828223,
                0.41020464612398655,
                0.37295685009876467,
            ],
        ),
    ];

    #[test]
    fn matches_gensim_where_words_repeat() {
        // Gensim's counting gives gensim's numbers; the exact count differs on these documents,
        // so the fixture does tell the two apart.
        let docs: OwnedDocs = TEXTS_REPEATED.into_iter().collect();
        let topics: Vec<Vec<u32>> = TOPICS_REPEATED.iter().map(|t| t.to_vec()).collect();
        let mut largest_exact_gap = 0.0f64;
        for (name, window, expected) in GENSIM_REPEATED {
            let measure = WindowMeasure::parse(name).unwrap();
            let (_, got) = window_coherence_of(
                &topics,
                docs.view(),
                measure,
                window,
                WindowCounting::Gensim,
            )
            .unwrap();
            for (g, e) in got.iter().zip(expected) {
                assert!(
                    (g - e).abs() < 1e-9,
                    "{name} window {window}: {got:?} vs gensim {expected:?}"
                );
            }
            let (_, exact) =
                window_coherence_of(&topics, docs.view(), measure, window, WindowCounting::Exact)
                    .unwrap();
            for (x, e) in exact.iter().zip(expected) {
                largest_exact_gap = largest_exact_gap.max((x - e).abs());
            }
        }
        assert!(largest_exact_gap > 1e-3, "{largest_exact_gap}");
    }

    #[test]
    fn matches_gensim_coherence_model() {
        let docs: OwnedDocs = TEXTS.into_iter().collect();
        let topics: Vec<Vec<u32>> = TOPICS.iter().map(|t| t.to_vec()).collect();
        // No word repeats within a document, so both ways of counting agree with gensim.
        for counting in [WindowCounting::Gensim, WindowCounting::Exact] {
            for (name, window, expected) in GENSIM {
                let measure = WindowMeasure::parse(name).unwrap();
                let (windows, got) =
                    window_coherence_of(&topics, docs.view(), measure, window, counting).unwrap();
                assert!(windows > 0);
                for (g, e) in got.iter().zip(expected) {
                    assert!(
                        (g - e).abs() < 1e-9,
                        "{name} window {window} {counting:?}: {got:?} vs gensim {expected:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn windows_count_a_word_while_any_occurrence_is_inside() {
        // One document a b a c with windows of 2 tokens: [a b] [b a] [a c]; a is in all three,
        // b in two, c in one; a and b share two windows, a and c one, b and c none.
        let docs: OwnedDocs = [&[0u32, 1, 0, 2][..], &[], &[1]].into_iter().collect();
        let mut slot = vec![NONE; 3];
        for (i, s) in slot.iter_mut().enumerate() {
            *s = i as u32;
        }
        let c = WindowCounts::count(docs.view(), &slot, 3, 2);
        // The empty document and the short one are a window each.
        assert_eq!(c.windows, 5);
        assert_eq!(
            (c.occurrences(0), c.occurrences(1), c.occurrences(2)),
            (3, 3, 1)
        );
        assert_eq!(c.co_occurrences(0, 1), 2);
        assert_eq!(c.co_occurrences(0, 2), 1);
        assert_eq!(c.co_occurrences(1, 2), 0);
        assert_eq!(c.co_occurrences(1, 1), 3);
        // NPMI of a and b from those counts.
        let (w, npmi) = window_coherence_of(
            &[vec![0, 1]],
            docs.view(),
            WindowMeasure::Npmi,
            2,
            WindowCounting::Exact,
        )
        .unwrap();
        let (pa, pb, pab) = (3.0 / 5.0, 3.0 / 5.0, 2.0 / 5.0);
        let expected = ((pab + EPSILON) / (pa * pb)).ln() / -(pab + EPSILON).ln();
        assert_eq!(w, 5);
        assert!((npmi[0] - expected).abs() < 1e-12);
        for counting in [WindowCounting::Gensim, WindowCounting::Exact] {
            assert!(window_coherence_of(
                &[vec![0, 1]],
                docs.view(),
                WindowMeasure::CV,
                0,
                counting
            )
            .is_err());
        }
        for name in ["npmi", "c_npmi", "uci", "c_v", "CV"] {
            assert!(WindowMeasure::parse(name).is_some(), "{name}");
        }
        assert!(WindowMeasure::parse("umass").is_none());
        assert_eq!(
            WindowCounting::parse("Gensim"),
            Some(WindowCounting::Gensim)
        );
        assert_eq!(WindowCounting::parse("exact"), Some(WindowCounting::Exact));
        assert_eq!(WindowCounting::parse("palmetto"), None);
    }

    #[test]
    fn gensim_windows_forget_a_word_when_one_occurrence_leaves() {
        // a a b c with windows of 2: gensim holds {a}, then {a} less a (the a at position 0
        // left, though the one at 1 is inside) plus b: {b}, then {b, c}. So a is held in 1 window
        // (2 by the exact count), b in 2 (and the last document's), c in 1; a and b share none
        // (1 by the exact count).
        let docs: OwnedDocs = [&[0u32, 0, 1, 2][..], &[], &[1]].into_iter().collect();
        let slot: Vec<u32> = (0..3).collect();
        let c = WindowCounts::count_as_gensim(docs.view(), &slot, 3, 2);
        assert_eq!(c.windows, 5);
        assert_eq!(
            (c.occurrences(0), c.occurrences(1), c.occurrences(2)),
            (1, 3, 1)
        );
        assert_eq!(c.co_occurrences(0, 1), 0);
        assert_eq!(c.co_occurrences(1, 2), 1);
        assert_eq!(c.co_occurrences(0, 0), 1);
        let exact = WindowCounts::count(docs.view(), &slot, 3, 2);
        assert_eq!((exact.occurrences(0), exact.co_occurrences(0, 1)), (2, 1));
        // A word leaving and entering the same window stays held: a a a with windows of 2.
        let docs: OwnedDocs = [&[0u32, 0, 0][..]].into_iter().collect();
        let c = WindowCounts::count_as_gensim(docs.view(), &slot[..1], 1, 2);
        assert_eq!((c.windows, c.occurrences(0)), (2, 2));
    }
}
