//! The check of frozen-count samplers' draws shared by `tests/samplers.rs` (CPU, many seeds)
//! and `tests/gpu.rs` (GPU, one chain): given the state a sweep starts from, each token's new
//! topic is an independent draw, and for fcgs it follows the collapsed Gibbs conditional
//! p(k) ∝ (A⁻_dk + α_k)(B⁻_vk + β)/(n⁻_k + Vβ), the token's own assignment removed (⁻).
// Each test file compiles this module on its own.
#![allow(dead_code)]

/// One chain start per token, drawn from its row of `p` (the conditional's probabilities over
/// the topics) with the synthetic stream of `seed`: the stationarity tests start each token's
/// Metropolis-Hastings chain at a draw from its target, so that a correct sampler leaves the
/// draws distributed as `p`.
pub fn chain_starts(p: &[Vec<f64>], seed: u64) -> Vec<u16> {
    use topos_sampling::{CounterRng, Stream};
    p.iter()
        .enumerate()
        .map(|(i, row)| {
            let mut u = CounterRng::new(seed, Stream::Synthetic, 7, i as u64).next_f64();
            let mut t = 0;
            while t + 1 < row.len() && u >= row[t] {
                u -= row[t];
                t += 1;
            }
            t as u16
        })
        .collect()
}

/// Observed draws against the conditional's probabilities, per (token, topic) cell and for the
/// draws that keep the token's old topic (where ESCA's bias shows).
pub struct Tally {
    words: Vec<u32>,
    doc_of: Vec<usize>,
    docs: usize,
    vocab: usize,
    topics: usize,
    observed: Vec<f64>,
    mean: Vec<f64>,
    var: Vec<f64>,
    kept: (f64, f64, f64),
}

impl Tally {
    /// For the corpus `docs` (word ids) of `vocab` words, over `topics` topics.
    pub fn new(docs: &[&[u32]], vocab: usize, topics: usize) -> Self {
        let words: Vec<u32> = docs.iter().flat_map(|d| d.iter().copied()).collect();
        let doc_of = docs
            .iter()
            .enumerate()
            .flat_map(|(d, doc)| std::iter::repeat_n(d, doc.len()))
            .collect();
        let cells = words.len() * topics;
        Self {
            words,
            doc_of,
            docs: docs.len(),
            vocab,
            topics,
            observed: vec![0.0; cells],
            mean: vec![0.0; cells],
            var: vec![0.0; cells],
            kept: (0.0, 0.0, 0.0),
        }
    }

    /// Adds one sweep from assignments `z0` to `z1` under priors `alpha` (one per topic), `beta`.
    pub fn add(&mut self, z0: &[u16], z1: &[u16], alpha: &[f64], beta: f64) {
        self.add_refreshed(z0, z0, z1, alpha, beta);
    }

    /// [`Tally::add`] for a conditional whose document counts are those of `za` (mh's document
    /// phase: the documents' counts refreshed after its word phase), with the token's own `za`
    /// topic removed from them, and whose word and topic counts are those of `z0`, with its own
    /// `z0` topic removed.
    pub fn add_refreshed(&mut self, z0: &[u16], za: &[u16], z1: &[u16], alpha: &[f64], beta: f64) {
        let k = self.topics;
        let (mut a, mut b, mut nk) = (
            vec![vec![0.0f64; k]; self.docs],
            vec![vec![0.0f64; k]; self.vocab],
            vec![0.0f64; k],
        );
        for (i, &z) in z0.iter().enumerate() {
            a[self.doc_of[i]][za[i] as usize] += 1.0;
            b[self.words[i] as usize][z as usize] += 1.0;
            nk[z as usize] += 1.0;
        }
        let v_beta = self.vocab as f64 * beta;
        for i in 0..z0.len() {
            let own = z0[i] as usize;
            let w: Vec<f64> = (0..k)
                .map(|t| {
                    let o = if t == own { 1.0 } else { 0.0 };
                    let oa = if t == za[i] as usize { 1.0 } else { 0.0 };
                    (a[self.doc_of[i]][t] - oa + alpha[t])
                        * (b[self.words[i] as usize][t] - o + beta)
                        / (nk[t] - o + v_beta)
                })
                .collect();
            let total: f64 = w.iter().sum();
            let p_keep = w[own] / total;
            self.kept.1 += p_keep;
            self.kept.2 += p_keep * (1.0 - p_keep);
            if z1[i] as usize == own {
                self.kept.0 += 1.0;
            }
            for (t, wt) in w.iter().enumerate() {
                let p = wt / total;
                self.mean[i * k + t] += p;
                self.var[i * k + t] += p * (1.0 - p);
                if z1[i] as usize == t {
                    self.observed[i * k + t] += 1.0;
                }
            }
        }
    }

    /// The largest |z| over the cells and the keep count: observed minus expected over the
    /// standard deviation of a sum of independent Bernoulli trials, with one more unit of
    /// variance so that cells of tiny expectation (a handful of rare draws) do not divide by
    /// almost nothing (it costs the large cells no power).
    pub fn largest_z(&self) -> f64 {
        let (kept, mean, var) = self.kept;
        (0..self.observed.len())
            .map(|c| (self.observed[c] - self.mean[c]).abs() / (self.var[c] + 1.0).sqrt())
            .fold((kept - mean).abs() / (var + 1.0).sqrt(), f64::max)
    }
}
