//! Evaluation and inference on corpora drawn from the LDA generative model, where the true topics
//! and mixtures are known ("Quality is measured, not assumed", ARCHITECTURE.md, Principles).

use topos_corpus::OwnedDocs;
use topos_model::{
    heldout_log_likelihood, infer, FoldInOptions, Hyperparameters, InferOptions, Phi,
};
use topos_sampling::{CounterRng, Stream};

const V: usize = 60;
const K: usize = 6;
const ALPHA: f64 = 0.3;
const BETA: f64 = 0.05;

/// A draw from a symmetric Dirichlet of dimension `n` (normalized Gamma variates).
fn dirichlet(rng: &mut CounterRng, n: usize, concentration: f64) -> Vec<f64> {
    let g: Vec<f64> = (0..n).map(|_| rng.next_gamma(concentration)).collect();
    let s: f64 = g.iter().sum();
    g.iter().map(|x| x / s).collect()
}

/// An index drawn with probabilities `p`.
fn categorical(rng: &mut CounterRng, p: &[f64]) -> usize {
    let mut u = rng.next_f64();
    for (i, &x) in p.iter().enumerate() {
        if u < x {
            return i;
        }
        u -= x;
    }
    p.len() - 1
}

/// K topics over V words from Dir(concentration), word-major for [`Phi`]. A 10⁻⁶ floor keeps
/// every word possible (the draw itself can underflow to 0 in `f32`).
fn topics(seed: u64, concentration: f64) -> Vec<f32> {
    let mut probs = vec![0f32; V * K];
    for k in 0..K {
        let mut rng = CounterRng::new(seed, Stream::Synthetic, 0, k as u64);
        let topic = dirichlet(&mut rng, V, concentration);
        let norm = 1.0 + V as f64 * 1e-6;
        for (v, p) in topic.iter().enumerate() {
            probs[v * K + k] = ((p + 1e-6) / norm) as f32;
        }
    }
    probs
}

/// A document of `len` tokens with mixture `theta` over the word-major topics `phi`.
fn document(seed: u64, d: u64, theta: &[f64], phi: &[f32], len: usize) -> Vec<u32> {
    let mut rng = CounterRng::new(seed, Stream::Synthetic, 2, d);
    let columns: Vec<Vec<f64>> = (0..K)
        .map(|k| (0..V).map(|v| f64::from(phi[v * K + k])).collect())
        .collect();
    (0..len)
        .map(|_| {
            let z = categorical(&mut rng, theta);
            categorical(&mut rng, &columns[z]) as u32
        })
        .collect()
}

/// `docs` documents of `len` tokens, θ_d ~ Dir(α), plus their mixtures.
fn corpus(seed: u64, phi: &[f32], docs: usize, len: usize) -> (OwnedDocs, Vec<Vec<f64>>) {
    let mut out = OwnedDocs::new();
    let mut thetas = Vec::new();
    for d in 0..docs as u64 {
        let mut rng = CounterRng::new(seed, Stream::Synthetic, 1, d);
        let theta = dirichlet(&mut rng, K, ALPHA);
        out.push(&document(seed, d, &theta, phi, len));
        thetas.push(theta);
    }
    (out, thetas)
}

fn hyper() -> Hyperparameters {
    Hyperparameters::new(K as u32, Some(ALPHA), Some(BETA)).unwrap()
}

fn on_threads<T: Send>(n: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build()
        .unwrap()
        .install(f)
}

#[test]
fn true_topics_score_clearly_better_than_wrong_ones() {
    let truth = topics(11, BETA);
    let (docs, _) = corpus(12, &truth, 300, 60);
    let opts = FoldInOptions::default();
    let score = |probs: Vec<f32>| {
        let phi = Phi::from_probabilities(V, K, probs).unwrap();
        heldout_log_likelihood(&phi, &hyper(), docs.view(), &opts).unwrap()
    };
    let good = score(truth.clone());
    let uniform = score(vec![1.0 / V as f32; V * K]);
    let random = score(topics(99, BETA));
    assert_eq!(good.docs_scored, 300);
    assert_eq!(good.tokens_scored, 300 * 30);
    // Uniform φ predicts every word with probability exactly 1/V, whatever θ.
    assert!((uniform.ll_per_token - (1.0 / V as f64).ln()).abs() < 1e-6);
    assert!(
        good.ll_per_token > uniform.ll_per_token + 0.5,
        "true {} vs uniform {}",
        good.ll_per_token,
        uniform.ll_per_token
    );
    assert!(
        good.ll_per_token > random.ll_per_token + 0.5,
        "true {} vs random {}",
        good.ll_per_token,
        random.ll_per_token
    );
    assert!(good.perplexity < uniform.perplexity && good.perplexity < random.perplexity);
}

#[test]
fn fold_in_recovers_known_mixtures() {
    let truth = topics(21, BETA);
    let phi = Phi::from_probabilities(V, K, truth.clone()).unwrap();
    let mixtures = [
        vec![0.7, 0.3, 0.0, 0.0, 0.0, 0.0],
        vec![0.0, 0.0, 1.0, 0.0, 0.0, 0.0],
        vec![0.2, 0.2, 0.2, 0.2, 0.1, 0.1],
        vec![0.0, 0.5, 0.0, 0.0, 0.0, 0.5],
    ];
    let mut docs = OwnedDocs::new();
    for (d, theta) in mixtures.iter().enumerate() {
        docs.push(&document(22, d as u64, theta, &truth, 1000));
    }
    let opts = InferOptions {
        sweeps: 100,
        burn_in: 20,
        seed: 5,
    };
    let inferred = infer(&phi, &hyper(), docs.view(), &opts).unwrap();
    let mut total = 0.0;
    for (theta, got) in mixtures.iter().zip(&inferred) {
        let dense = got.dense();
        let l1: f64 = theta
            .iter()
            .zip(&dense)
            .map(|(t, &g)| (t - f64::from(g)).abs())
            .sum();
        assert!(l1 < 0.15, "true {theta:?}, inferred {dense:?}, L1 {l1}");
        total += l1;
    }
    let mean = total / mixtures.len() as f64;
    assert!(mean <= 0.08, "mean L1 {mean}");
}

#[test]
fn held_out_and_inference_are_bit_identical_across_thread_counts() {
    let truth = topics(31, BETA);
    let phi = Phi::from_probabilities(V, K, truth.clone()).unwrap();
    // Uneven lengths, including documents that are skipped.
    let mut docs = OwnedDocs::new();
    for d in 0..120u64 {
        let mut rng = CounterRng::new(32, Stream::Synthetic, 1, d);
        let theta = dirichlet(&mut rng, K, ALPHA);
        docs.push(&document(32, d, &theta, &truth, (d as usize * 7) % 45));
    }
    let opts = FoldInOptions {
        sweeps: 20,
        burn_in: 5,
        seed: 77,
    };
    let held = |n| {
        on_threads(n, || {
            heldout_log_likelihood(&phi, &hyper(), docs.view(), &opts)
        })
    };
    let (one, two, three) = (held(1).unwrap(), held(2).unwrap(), held(3).unwrap());
    assert_eq!(one.ll_per_token.to_bits(), two.ll_per_token.to_bits());
    assert_eq!(one.ll_per_token.to_bits(), three.ll_per_token.to_bits());
    assert_eq!(one, two);
    assert!(one.docs_skipped > 0);

    let inferred = |n| on_threads(n, || infer(&phi, &hyper(), docs.view(), &opts).unwrap());
    let (a, b) = (inferred(1), inferred(2));
    assert_eq!(a, b);
    for (x, y) in a.iter().zip(&b) {
        let bits = |t: &topos_model::DocTheta| -> Vec<u64> {
            t.mean_counts.iter().map(|m| m.to_bits()).collect()
        };
        assert_eq!(bits(x), bits(y));
    }
    // Another seed gives another chain.
    let other = FoldInOptions { seed: 78, ..opts };
    let moved = heldout_log_likelihood(&phi, &hyper(), docs.view(), &other).unwrap();
    assert_ne!(moved.ll_per_token.to_bits(), one.ll_per_token.to_bits());
}
