//! Synthetic corpora drawn from the LDA generative model (Blei et al. 2003), where the true topics
//! are known: the test that a sampler learns something, and benchmark corpora at the scale of
//! NYTimes or PubMed when the real ones are not at hand.
//!
//! Topics must be *distinct*: topics that all centre on one Zipf profile carry almost no signal,
//! and a sampler that learns nothing looks fine on them. [`TopicShape::PermutedZipf`] gives each
//! topic a Dirichlet draw around its own random permutation of a Zipf profile, so corpus word
//! frequencies are Zipfian while topics differ.

use topos_corpus::OwnedDocs;
use topos_sampling::{CounterRng, Stream};

/// How the true topic-word distributions are drawn.
#[derive(Clone, Copy, Debug)]
pub enum TopicShape {
    /// φ_k ~ Dirichlet(β, …, β).
    Dirichlet { beta: f64 },
    /// φ_k ~ Dirichlet(c · zipf(π_k)) with zipf(r) ∝ 1/(r+1)^s and π_k a random permutation per
    /// topic (mixing a shared component keeps frequent words frequent overall).
    PermutedZipf { exponent: f64, concentration: f64 },
}

/// What to generate.
#[derive(Clone, Debug)]
pub struct SyntheticSpec {
    pub num_docs: usize,
    pub num_words: usize,
    pub num_topics: usize,
    /// Mean document length (lengths are Poisson-like: uniform in [mean/2, 3·mean/2]).
    pub mean_doc_len: usize,
    /// Document-topic prior (one α_k per topic: an asymmetric one makes some topics common and
    /// others rare, what `--optimize-priors` should find).
    pub alpha: topos_model::Alpha,
    pub shape: TopicShape,
    pub seed: u64,
}

/// A generated corpus with its ground truth.
pub struct SyntheticCorpus {
    pub docs: OwnedDocs,
    /// True φ, K × V row-major (each row sums to 1).
    pub topics: Vec<f64>,
    /// True θ, D × K row-major.
    pub mixtures: Vec<f64>,
}

fn dirichlet(rng: &mut CounterRng, params: &[f64]) -> Vec<f64> {
    let mut g: Vec<f64> = params
        .iter()
        .map(|&a| rng.next_gamma(a).max(1e-300))
        .collect();
    let s: f64 = g.iter().sum();
    g.iter_mut().for_each(|x| *x /= s);
    g
}

fn cumulative(p: &[f64]) -> Vec<f64> {
    let mut acc = 0.0;
    p.iter()
        .map(|&x| {
            acc += x;
            acc
        })
        .collect()
}

fn draw(cum: &[f64], u: f64) -> usize {
    let x = u * cum[cum.len() - 1];
    cum.partition_point(|&c| c <= x).min(cum.len() - 1)
}

/// The true topics φ (K × V row-major) of `spec`.
fn draw_topics(spec: &SyntheticSpec) -> Vec<f64> {
    let (k, v) = (spec.num_topics, spec.num_words);
    let mut topics = Vec::with_capacity(k * v);
    for t in 0..k {
        let mut rng = CounterRng::new(spec.seed, Stream::Synthetic, 1, t as u64);
        let params: Vec<f64> = match spec.shape {
            TopicShape::Dirichlet { beta } => vec![beta; v],
            TopicShape::PermutedZipf {
                exponent,
                concentration,
            } => {
                let mut perm: Vec<usize> = (0..v).collect();
                for i in (1..v).rev() {
                    perm.swap(i, rng.below(i as u32 + 1) as usize);
                }
                let norm: f64 = (0..v).map(|r| 1.0 / ((r + 1) as f64).powf(exponent)).sum();
                let mut p = vec![0.0; v];
                for (r, &w) in perm.iter().enumerate() {
                    p[w] = concentration / ((r + 1) as f64).powf(exponent) / norm;
                }
                p
            }
        };
        topics.extend(dirichlet(&mut rng, &params));
    }
    topics
}

/// Draws document `d` (its own random stream, so documents can be drawn in any order): appends
/// its words to `words` and returns θ_d.
fn draw_doc(
    spec: &SyntheticSpec,
    topic_cum: &[Vec<f64>],
    d: usize,
    words: &mut Vec<u32>,
) -> Vec<f64> {
    let mut rng = CounterRng::new(spec.seed, Stream::Synthetic, 2, d as u64);
    let theta = dirichlet(&mut rng, spec.alpha.values());
    let theta_cum = cumulative(&theta);
    let lo = (spec.mean_doc_len / 2).max(1);
    let len = lo + rng.below(spec.mean_doc_len as u32 + 1) as usize;
    for _ in 0..len {
        let t = draw(&theta_cum, rng.next_f64());
        words.push(draw(&topic_cum[t], rng.next_f64()) as u32);
    }
    theta
}

/// Generates a corpus with its ground truth. Deterministic in `spec.seed`.
pub fn generate(spec: &SyntheticSpec) -> SyntheticCorpus {
    let topics = draw_topics(spec);
    let topic_cum: Vec<Vec<f64>> = topics.chunks(spec.num_words).map(cumulative).collect();
    let mut docs = OwnedDocs::new();
    let mut mixtures = Vec::with_capacity(spec.num_docs * spec.num_topics);
    let mut words = Vec::new();
    for d in 0..spec.num_docs {
        words.clear();
        mixtures.extend(draw_doc(spec, &topic_cum, d, &mut words));
        docs.push(&words);
    }
    SyntheticCorpus {
        docs,
        topics,
        mixtures,
    }
}

/// The documents of [`generate`] (same seed, same documents), drawn on all threads and without
/// keeping θ: for benchmark corpora of hundreds of millions of tokens.
pub fn generate_parallel(spec: &SyntheticSpec) -> OwnedDocs {
    use rayon::prelude::*;
    let topics = draw_topics(spec);
    let topic_cum: Vec<Vec<f64>> = topics.chunks(spec.num_words).map(cumulative).collect();
    drop(topics);
    const CHUNK: usize = 4096;
    let chunks: Vec<Vec<Vec<u32>>> = (0..spec.num_docs.div_ceil(CHUNK))
        .into_par_iter()
        .map(|c| {
            let mut words = Vec::new();
            (c * CHUNK..((c + 1) * CHUNK).min(spec.num_docs))
                .map(|d| {
                    words.clear();
                    draw_doc(spec, &topic_cum, d, &mut words);
                    words.clone()
                })
                .collect()
        })
        .collect();
    let mut docs = OwnedDocs::new();
    for chunk in chunks {
        for w in chunk {
            docs.push(&w);
        }
    }
    docs
}

/// Jensen–Shannon divergence (natural log, in [0, ln 2]) of two distributions.
pub fn jensen_shannon(p: &[f64], q: &[f64]) -> f64 {
    let mut js = 0.0;
    for (&a, &b) in p.iter().zip(q) {
        let m = 0.5 * (a + b);
        if a > 0.0 {
            js += 0.5 * a * (a / m).ln();
        }
        if b > 0.0 {
            js += 0.5 * b * (b / m).ln();
        }
    }
    js.max(0.0)
}

/// Learned topics φ from word-topic counts (K × V row-major, smoothed by β), the form
/// [`match_topics`] compares with the truth.
pub fn learned_topics(b: &crate::counts::WordTopics, beta: f64) -> Vec<f64> {
    let (k, v) = (b.num_topics as usize, b.num_words());
    let mut out = vec![0.0; k * v];
    for t in 0..k {
        let norm = b.totals[t] as f64 + v as f64 * beta;
        for w in 0..v {
            out[t * v + w] = beta / norm;
        }
    }
    for w in 0..v {
        let (ts, cs) = b.row(w as u32);
        for (&t, &c) in ts.iter().zip(cs) {
            let norm = b.totals[t as usize] as f64 + v as f64 * beta;
            out[t as usize * v + w] = (c as f64 + beta) / norm;
        }
    }
    out
}

/// For every true topic, the JS divergence to the closest learned topic (K × V row-major both),
/// matched one-to-one greedily from the closest pair. A sampler that learns the topics gets
/// values near 0; one that learns nothing stays near the divergence between unrelated topics.
pub fn match_topics(truth: &[f64], learned: &[f64], v: usize) -> Vec<f64> {
    let kt = truth.len() / v;
    let kl = learned.len() / v;
    let mut pairs = Vec::with_capacity(kt * kl);
    for i in 0..kt {
        for j in 0..kl {
            pairs.push((
                jensen_shannon(&truth[i * v..(i + 1) * v], &learned[j * v..(j + 1) * v]),
                i,
                j,
            ));
        }
    }
    pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut used_t = vec![false; kt];
    let mut used_l = vec![false; kl];
    let mut best = vec![f64::NAN; kt];
    for (js, i, j) in pairs {
        if !used_t[i] && !used_l[j] {
            used_t[i] = true;
            used_l[j] = true;
            best[i] = js;
        }
    }
    best
}

/// How well word-topic counts recover the true topics: [`match_topics`] of the counts' φ
/// ([`learned_topics`]) against the truth, with its mean and worst value (the summary every
/// topic-recovery test asserts on, CPU and GPU alike).
#[derive(Clone, Debug)]
pub struct Recovery {
    /// Per true topic, the Jensen–Shannon divergence to its matched learned topic.
    pub per_topic: Vec<f64>,
    pub mean: f64,
    pub worst: f64,
}

impl Recovery {
    /// Mean JS a sampler that learned the topics stays under (a sampler that learns nothing stays
    /// near the divergence between unrelated topics, about 0.3 on the test corpora).
    pub const MEAN_BOUND: f64 = 0.03;
    /// JS every single true topic stays under (a merged or split topic does not).
    pub const WORST_BOUND: f64 = 0.08;

    /// Panics, naming `what` and every topic's divergence, unless the topics were recovered
    /// within [`Self::MEAN_BOUND`] and [`Self::WORST_BOUND`] (the check of the CPU and GPU
    /// topic-recovery tests).
    pub fn assert_recovered(&self, what: &str) {
        assert!(
            self.mean < Self::MEAN_BOUND,
            "{what} did not recover the topics: {:?}",
            self.per_topic
        );
        assert!(
            self.worst < Self::WORST_BOUND,
            "{what} missed a topic: {:?}",
            self.per_topic
        );
    }
}

/// [`Recovery`] of the true topics `truth` (K × V row-major) by the counts `b` smoothed with `beta`.
pub fn recovery(truth: &[f64], b: &crate::counts::WordTopics, beta: f64) -> Recovery {
    let per_topic = match_topics(truth, &learned_topics(b, beta), b.num_words());
    let mean = per_topic.iter().sum::<f64>() / per_topic.len().max(1) as f64;
    let worst = per_topic.iter().cloned().fold(0.0, f64::max);
    Recovery {
        per_topic,
        mean,
        worst,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_corpus_is_deterministic_and_topics_distinct() {
        let spec = SyntheticSpec {
            num_docs: 50,
            num_words: 200,
            num_topics: 4,
            mean_doc_len: 40,
            alpha: topos_model::Alpha::symmetric(4, 0.2),
            shape: TopicShape::PermutedZipf {
                exponent: 1.0,
                concentration: 50.0,
            },
            seed: 9,
        };
        let a = generate(&spec);
        let b = generate(&spec);
        assert_eq!(a.docs, b.docs);
        assert_eq!(a.topics, b.topics);
        let v = 200;
        // Distinct topics: pairwise JS well above zero.
        for i in 0..4 {
            for j in 0..i {
                assert!(
                    jensen_shannon(&a.topics[i * v..(i + 1) * v], &a.topics[j * v..(j + 1) * v])
                        > 0.1
                );
            }
        }
        assert_eq!(generate_parallel(&spec), a.docs);
        let self_match = match_topics(&a.topics, &a.topics, v);
        assert!(self_match.iter().all(|&x| x < 1e-12));
    }
}
