//! What the intertopic map and the bars show, computed as LDAvis (Sievert & Shirley 2014,
//! "LDAvis: A method for visualizing and interpreting topics") and pyLDAvis's `prepare` compute
//! it, so that [`Vis::ldavis_json`] is the LDAvis data format and a viewer of that format shows
//! the same picture:
//!
//! * topic frequency f_k = Σ_d n_d θ_dk (from the training documents' counts when given, else the
//!   topic's token count n_k), proportion f_k / Σ f; topics are numbered by decreasing proportion;
//! * term frequency t_w = Σ_k φ_kw f_k and term proportion p_w = t_w / Σ t (pyLDAvis recomputes
//!   it this way rather than counting tokens, for the bars' widths to agree);
//! * relevance r(w, k | λ) = λ log φ_kw + (1 − λ) log(φ_kw / p_w), the top R words of each topic
//!   for every λ of the grid 0, step, …, 1;
//! * saliency(w) = p_w Σ_k P(k | w) log(P(k | w) / P(k)), P(k | w) = φ_kw / Σ_j φ_jw, which
//!   chooses the R words shown when no topic is selected;
//! * the map: Jensen–Shannon divergence between topics and classical MDS ([`crate::mds`]).
//!
//! φ_kw = (B_wk + β) / (n_k + Vβ) is computed in f64 from the model's counts. A word with no count
//! in topic k shares the topic's background probability β / (n_k + Vβ), so the relevance ranking
//! needs only the words of each topic plus the R rarest and R first other words (those that win
//! the ties of the background): the candidates are cut to the words that fewer than R others beat
//! on both log φ and lift, which are exactly the words that can reach a top R for some λ.

use crate::mds::{js_matrix, pcoa, SparseTopic};
use rayon::prelude::*;
use serde::Serialize;
use std::collections::BinaryHeap;
use topos_model::{DocTopics, TopicModel};

/// Options of [`Vis::prepare`].
#[derive(Clone, Copy, Debug)]
pub struct VisOptions {
    /// Words per bar chart (LDAvis's R, default 30).
    pub terms: usize,
    /// Step of the λ grid (default 0.01).
    pub lambda_step: f64,
}

impl Default for VisOptions {
    fn default() -> Self {
        Self {
            terms: 30,
            lambda_step: 0.01,
        }
    }
}

/// One candidate word of a topic's bar chart.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TermScore {
    pub word: u32,
    /// log φ_kw.
    pub logprob: f64,
    /// log(φ_kw / p_w).
    pub loglift: f64,
    /// Estimated tokens of the word in the topic: φ_kw f_k.
    pub freq: f64,
}

/// Everything the map and the bars need, topics in their original numbering unless said.
#[derive(Clone, Debug)]
pub struct Vis {
    pub num_topics: usize,
    pub terms: usize,
    pub lambda_step: f64,
    /// Topic ids by decreasing proportion (the map's numbering 1, 2, … follows it).
    pub order: Vec<usize>,
    /// f_k.
    pub topic_freq: Vec<f64>,
    /// f_k / Σ f.
    pub proportion: Vec<f64>,
    /// The map: one point per topic.
    pub coords: Vec<[f64; 2]>,
    /// t_w for every word.
    pub term_frequency: Vec<f64>,
    /// The R most salient words, most salient first.
    pub salient: Vec<u32>,
    /// Per topic: every word in the top R for some λ of the grid, in order of first appearance
    /// (λ = 0 first), as pyLDAvis lists them.
    pub relevant: Vec<Vec<TermScore>>,
}

/// The document prior α_k of every topic (a symmetric prior repeats one value): what every θ
/// here is smoothed with. The one place that reads the model's α, so a model whose α is learned
/// per topic needs only this function to change.
pub fn alphas(model: &TopicModel) -> Vec<f64> {
    model.hyper.alpha.values().to_vec()
}

/// f_k = Σ_d n_d θ_dk with θ_dk = (A_dk + α_k) / (n_d + Σα), from the training documents' counts.
pub fn topic_frequencies(doc_topics: &DocTopics, alpha: &[f64]) -> Vec<f64> {
    let k = doc_topics.num_topics as usize;
    assert_eq!(alpha.len(), k);
    let alpha_sum: f64 = alpha.iter().sum();
    let mut f = vec![0.0; k];
    for d in 0..doc_topics.len() {
        let n = doc_topics.row_total(d) as f64;
        let norm = n / (n + alpha_sum);
        let (topics, counts) = doc_topics.row(d);
        // The α share of every topic, then the counts.
        for (x, a) in f.iter_mut().zip(alpha) {
            *x += a * norm;
        }
        for (&t, &c) in topics.iter().zip(counts) {
            f[t as usize] += c as f64 * norm;
        }
    }
    f
}

/// Rank of `a` before `b`: larger score first, then smaller word id (pandas' `nlargest` keeps the
/// first of equal values).
fn better(a: (f64, u32), b: (f64, u32)) -> bool {
    a.0 > b.0 || (a.0 == b.0 && a.1 < b.1)
}

impl Vis {
    /// Prepares the picture of `model`. `topic_freq` is f_k ([`topic_frequencies`], or the topic
    /// totals n_k when the training documents' counts are not at hand).
    pub fn prepare(model: &TopicModel, topic_freq: Vec<f64>, opts: VisOptions) -> Vis {
        let k = model.num_topics();
        let v = model.num_words();
        assert_eq!(topic_freq.len(), k);
        let beta = model.hyper.beta;
        let inv: Vec<f64> = model
            .topic_totals
            .iter()
            .map(|&n| 1.0 / (n as f64 + v as f64 * beta))
            .collect();
        let phi = |w: usize, t: usize| (model.word_topic[w * k + t] as f64 + beta) * inv[t];
        let total_f: f64 = topic_freq.iter().sum();
        let proportion: Vec<f64> = topic_freq
            .iter()
            .map(|f| if total_f > 0.0 { f / total_f } else { 0.0 })
            .collect();
        let mut order: Vec<usize> = (0..k).collect();
        order.sort_by(|&a, &b| proportion[b].total_cmp(&proportion[a]).then(a.cmp(&b)));

        // Term frequencies and saliency, by word.
        let per_word: Vec<(f64, f64)> = (0..v)
            .into_par_iter()
            .map(|w| {
                let mut tf = 0.0;
                let mut col = 0.0;
                for (t, &f) in topic_freq.iter().enumerate() {
                    let p = phi(w, t);
                    tf += p * f;
                    col += p;
                }
                let mut distinct = 0.0;
                for (t, &prop) in proportion.iter().enumerate() {
                    let given = phi(w, t) / col;
                    if given > 0.0 && prop > 0.0 {
                        distinct += given * (given / prop).ln();
                    }
                }
                (tf, distinct)
            })
            .collect();
        let term_frequency: Vec<f64> = per_word.iter().map(|x| x.0).collect();
        let tf_sum: f64 = term_frequency.iter().sum();
        let term_proportion: Vec<f64> = term_frequency.iter().map(|t| t / tf_sum).collect();
        let r = opts.terms.min(v);
        let mut salient: Vec<u32> = (0..v as u32).collect();
        let saliency: Vec<f64> = per_word
            .iter()
            .zip(&term_proportion)
            .map(|(x, p)| p * x.1)
            .collect();
        salient.sort_by(|&a, &b| {
            saliency[b as usize]
                .total_cmp(&saliency[a as usize])
                .then(a.cmp(&b))
        });
        salient.truncate(r);

        // Supports of the topics (words with a count), for the candidates and the divergences.
        let mut support: Vec<Vec<u32>> = vec![Vec::new(); k];
        for w in 0..v {
            for (t, &c) in model.word_row(w as u32).iter().enumerate() {
                if c > 0 {
                    support[t].push(w as u32);
                }
            }
        }
        let mut rarest: Vec<u32> = (0..v as u32).collect();
        rarest.sort_by(|&a, &b| {
            term_proportion[a as usize]
                .total_cmp(&term_proportion[b as usize])
                .then(a.cmp(&b))
        });
        let lambdas: Vec<f64> = {
            let n = ((1.0 + opts.lambda_step) / opts.lambda_step).ceil() as usize;
            (0..n).map(|i| i as f64 * opts.lambda_step).collect()
        };
        let relevant: Vec<Vec<TermScore>> = (0..k)
            .into_par_iter()
            .map(|t| {
                let score = |w: u32| {
                    let p = phi(w as usize, t);
                    (p.ln(), (p / term_proportion[w as usize]).ln())
                };
                // The pool: the topic's words, and the first R words without a count in it by
                // rarity and by id (the background words that can win a top R).
                let in_support = |w: u32| support[t].binary_search(&w).is_ok();
                let mut pool: Vec<u32> = support[t].clone();
                pool.extend(rarest.iter().copied().filter(|&w| !in_support(w)).take(r));
                pool.extend((0..v as u32).filter(|&w| !in_support(w)).take(r));
                pool.sort_unstable();
                pool.dedup();
                let mut scored: Vec<(u32, f64, f64)> = pool
                    .into_iter()
                    .map(|w| {
                        let (x, y) = score(w);
                        (w, x, y)
                    })
                    .collect();
                // The skyline of depth R: a word that R others beat strictly on both log φ and
                // lift is below them at every λ, whatever the ids. Words of equal log φ (the
                // background ones) are judged against the words of larger log φ only.
                scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                let mut heap: BinaryHeap<std::cmp::Reverse<OrdF64>> = BinaryHeap::new();
                let mut candidates = Vec::new();
                let mut start = 0;
                while start < scored.len() {
                    let mut end = start;
                    while end < scored.len() && scored[end].1 == scored[start].1 {
                        end += 1;
                    }
                    for &(w, x, y) in &scored[start..end] {
                        let beaten = heap.len() >= r && heap.peek().is_some_and(|m| m.0 .0 > y);
                        if !beaten {
                            candidates.push((w, x, y));
                        }
                    }
                    for &(_, _, y) in &scored[start..end] {
                        heap.push(std::cmp::Reverse(OrdF64(y)));
                        if heap.len() > r {
                            heap.pop();
                        }
                    }
                    start = end;
                }
                let mut seen: Vec<u32> = Vec::new();
                let mut out = Vec::new();
                for &lambda in &lambdas {
                    let mut ranked: Vec<(f64, u32, f64, f64)> = candidates
                        .iter()
                        .map(|&(w, x, y)| (lambda * x + (1.0 - lambda) * y, w, x, y))
                        .collect();
                    ranked.sort_by(|a, b| {
                        if better((a.0, a.1), (b.0, b.1)) {
                            std::cmp::Ordering::Less
                        } else {
                            std::cmp::Ordering::Greater
                        }
                    });
                    for &(_, w, x, y) in ranked.iter().take(r) {
                        if !seen.contains(&w) {
                            seen.push(w);
                            out.push(TermScore {
                                word: w,
                                logprob: x,
                                loglift: y,
                                freq: phi(w as usize, t) * topic_freq[t],
                            });
                        }
                    }
                }
                out
            })
            .collect();

        let sparse: Vec<SparseTopic> = (0..k)
            .map(|t| SparseTopic {
                support: support[t]
                    .iter()
                    .map(|&w| (w, phi(w as usize, t)))
                    .collect(),
                background: beta * inv[t],
            })
            .collect();
        let coords = if k > 0 {
            // The map is drawn in the order of the topics by proportion, as pyLDAvis does.
            let ordered: Vec<SparseTopic> = order.iter().map(|&t| sparse[t].clone()).collect();
            let d = js_matrix(&ordered, v);
            let c = pcoa(&d, k);
            let mut coords = vec![[0.0; 2]; k];
            for (i, &t) in order.iter().enumerate() {
                coords[t] = c[i];
            }
            coords
        } else {
            Vec::new()
        };
        Vis {
            num_topics: k,
            terms: r,
            lambda_step: opts.lambda_step,
            order,
            topic_freq,
            proportion,
            coords,
            term_frequency,
            salient,
            relevant,
        }
    }

    /// The LDAvis data format, as pyLDAvis's `PreparedData.to_json` writes it (topics numbered
    /// from 1 by decreasing proportion; `topic.order` gives their ids in the model, from 1).
    pub fn ldavis_json(&self, model: &TopicModel) -> serde_json::Value {
        use serde_json::json;
        let k = self.num_topics;
        let r = self.terms;
        let vocab = &model.vocab;
        let round4 = |x: f64| (x * 1e4).round_ties_even() / 1e4;
        let (mut term, mut freq, mut total, mut category, mut logprob, mut loglift) =
            (vec![], vec![], vec![], vec![], vec![], vec![]);
        for (i, &w) in self.salient.iter().enumerate() {
            term.push(vocab.word(w).to_string());
            let f = self.term_frequency[w as usize].floor();
            freq.push(f);
            total.push(f);
            category.push("Default".to_string());
            logprob.push((r - i) as f64);
            loglift.push((r - i) as f64);
        }
        let mut words: Vec<u32> = self.salient.clone();
        for (rank, &t) in self.order.iter().enumerate() {
            for s in &self.relevant[t] {
                term.push(vocab.word(s.word).to_string());
                freq.push(s.freq);
                total.push(self.term_frequency[s.word as usize]);
                category.push(format!("Topic{}", rank + 1));
                logprob.push(round4(s.logprob));
                loglift.push(round4(s.loglift));
                words.push(s.word);
            }
        }
        words.sort_unstable();
        words.dedup();
        // The token table: for every word listed, its estimated tokens by topic (≥ 0.5, rounded)
        // over its term frequency; sorted by word, then topic.
        let mut rows: Vec<(&str, usize, f64)> = Vec::new();
        for &w in &words {
            for (rank, &t) in self.order.iter().enumerate() {
                let beta = model.hyper.beta;
                let phi = (model.word_row(w)[t] as f64 + beta)
                    / (model.topic_totals[t] as f64 + model.num_words() as f64 * beta);
                let ttf = phi * self.topic_freq[t];
                if ttf >= 0.5 {
                    rows.push((
                        vocab.word(w),
                        rank + 1,
                        ttf.round_ties_even() / self.term_frequency[w as usize],
                    ));
                }
            }
        }
        rows.sort_by(|a, b| a.0.cmp(b.0).then(a.1.cmp(&b.1)));
        json!({
            "mdsDat": {
                "x": self.order.iter().map(|&t| self.coords[t][0]).collect::<Vec<_>>(),
                "y": self.order.iter().map(|&t| self.coords[t][1]).collect::<Vec<_>>(),
                "topics": (1..=k).collect::<Vec<_>>(),
                "cluster": vec![1; k],
                "Freq": self.order.iter().map(|&t| self.proportion[t] * 100.0).collect::<Vec<_>>(),
            },
            "tinfo": {
                "Term": term, "Freq": freq, "Total": total, "Category": category,
                "logprob": logprob, "loglift": loglift,
            },
            "token.table": {
                "Topic": rows.iter().map(|r| r.1).collect::<Vec<_>>(),
                "Freq": rows.iter().map(|r| r.2).collect::<Vec<_>>(),
                "Term": rows.iter().map(|r| r.0).collect::<Vec<_>>(),
            },
            "R": r,
            "lambda.step": self.lambda_step,
            "plot.opts": {"xlab": "PC1", "ylab": "PC2"},
            "topic.order": self.order.iter().map(|&t| t + 1).collect::<Vec<_>>(),
        })
    }
}

/// An f64 ordered by `total_cmp`, for the heap of the skyline.
#[derive(Clone, Copy, PartialEq)]
struct OrdF64(f64);
impl Eq for OrdF64 {}
impl PartialOrd for OrdF64 {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for OrdF64 {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// The `per_topic` training documents with the largest share θ_dk = (A_dk + α_k) / (n_d + Σα) of
/// each topic, largest first (ties by document number): `(document, θ_dk)`. Documents of fewer
/// than `min_tokens` tokens are passed over (a one-word document is all one topic and says
/// little about it).
pub fn top_documents(
    doc_topics: &DocTopics,
    alpha: &[f64],
    per_topic: usize,
    min_tokens: u64,
) -> Vec<Vec<(usize, f64)>> {
    let k = doc_topics.num_topics as usize;
    // Per topic, a min-heap of the best so far: (θ, Reverse(doc)) ordered so the worst is on top.
    type Best = BinaryHeap<std::cmp::Reverse<(OrdF64, std::cmp::Reverse<usize>)>>;
    let mut heaps: Vec<Best> = (0..k).map(|_| BinaryHeap::new()).collect();
    if per_topic == 0 {
        return vec![Vec::new(); k];
    }
    for d in 0..doc_topics.len() {
        let n = doc_topics.row_total(d);
        if n < min_tokens.max(1) {
            continue;
        }
        let norm = 1.0 / (n as f64 + alpha.iter().sum::<f64>());
        let (topics, counts) = doc_topics.row(d);
        for (&t, &c) in topics.iter().zip(counts) {
            let theta = (c as f64 + alpha[t as usize]) * norm;
            let heap = &mut heaps[t as usize];
            let entry = std::cmp::Reverse((OrdF64(theta), std::cmp::Reverse(d)));
            if heap.len() < per_topic {
                heap.push(entry);
            } else if heap.peek().is_some_and(|worst| entry < *worst) {
                heap.pop();
                heap.push(entry);
            }
        }
    }
    heaps
        .into_iter()
        .map(|h| {
            let mut v: Vec<(usize, f64)> = h
                .into_iter()
                .map(|std::cmp::Reverse((t, std::cmp::Reverse(d)))| (d, t.0))
                .collect();
            v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            v
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_documents_by_share() {
        let mut a = DocTopics::new(2);
        a.push_dense(&[5, 5]);
        a.push_dense(&[9, 1]);
        a.push_dense(&[1, 0]);
        a.push_dense(&[0, 10]);
        let top = top_documents(&a, &[0.1, 0.1], 2, 2);
        assert_eq!(top[0].iter().map(|x| x.0).collect::<Vec<_>>(), vec![1, 0]);
        assert_eq!(top[1].iter().map(|x| x.0).collect::<Vec<_>>(), vec![3, 0]);
        assert!((top[1][0].1 - 10.1 / 10.2).abs() < 1e-12);
        let f = topic_frequencies(&a, &[0.1, 0.1]);
        let total: f64 = f.iter().sum();
        assert!((total - 31.0).abs() < 1e-9, "{f:?}");
    }
}
