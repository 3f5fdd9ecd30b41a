//! Learned priors (`topos train --optimize-priors N`): an asymmetric document prior α and a
//! symmetric word prior β, re-estimated from the current assignments every N iterations.
//!
//! Wallach, Mimno & McCallum (2009, "Rethinking LDA: why priors matter") found that an
//! asymmetric α over topics with a symmetric β over words fits text markedly better than the
//! symmetric priors used by default, which is why Mallet optimizes them (its
//! `--optimize-interval`, whose update differs in detail: see below). The update is Minka's fixed point for the Dirichlet–multinomial
//! (Pólya) likelihood (T. Minka, "Estimating a Dirichlet distribution", 2000/2012, Eq. 55),
//! with the per-topic histograms of Wallach's thesis (2008, §2.3) that Mallet uses, so one
//! fixed-point step costs the number of distinct (topic, count) pairs, not the number of
//! documents:
//!
//! ```text
//! α_k ← (α_k Σ_d [ψ(A_dk + α_k) − ψ(α_k)] + (a − 1)) / Σ_d [ψ(n_d + α₀) − ψ(α₀)]    α₀ = Σ_k α_k
//! β   ← β Σ_k Σ_w [ψ(B_wk + β) − ψ(β)] / (V Σ_k [ψ(n_k + Vβ) − ψ(Vβ)])
//! ```
//!
//! The `a − 1` term is a Gamma(a = 1.001) hyperprior on each α_k (the shape Mallet's
//! `learnParameters` uses): maximizing the fixed point's lower bound plus (a − 1) ln α_k adds it
//! to the numerator, and it keeps a topic that no document uses at a small positive α_k instead
//! of zero (a Dirichlet parameter must be positive). Mallet's update differs in detail (it adds
//! the shape itself, 1.001, and subtracts a rate term from the denominator); this is the MAP
//! step for the Gamma(1.001) prior with no rate. Both updates iterate to
//! convergence (relative change below 10⁻⁹, at most [`MAX_STEPS`] steps) given the counts, which
//! is what "optimize the hyperparameters given z" of the papers means; Mallet takes one step per
//! call instead.
//!
//! Everything is a function of the assignments and counts: histograms are integer counts merged
//! in a fixed order, and every floating-point sum runs in (topic, count) order, so the learned
//! priors are the same bits for any number of threads or processes (ARCHITECTURE.md,
//! Principles).

use crate::counts::WordTopics;
use crate::transport::Transport;
use crate::TrainError;
use rayon::prelude::*;
use topos_corpus::Docs;
use topos_model::{Alpha, Hyperparameters};

/// When priors are re-estimated: after iteration `burn_in` and every `every` iterations from
/// then on (iterations that are multiples of `every`, above `burn_in`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PriorSchedule {
    /// Iterations between updates (≥ 1).
    pub every: u32,
    /// Iterations before the first update, while the topics form (Mallet's `--optimize-burn-in`,
    /// 200 there; 50 here, since Topos's runs are often 100–200 iterations).
    pub burn_in: u32,
}

/// The default burn-in of [`PriorSchedule`].
pub const DEFAULT_BURN_IN: u32 = 50;

impl PriorSchedule {
    /// Whether the priors are re-estimated after iteration `it` (1-based).
    pub fn due(&self, it: u32) -> bool {
        self.every > 0 && it > self.burn_in && it.is_multiple_of(self.every)
    }
}

/// The first iteration after which `schedule` re-estimates the priors (1-based; the first
/// multiple of `every` above `burn_in`), in `u64` so that no schedule overflows.
pub fn first_update(schedule: PriorSchedule) -> u64 {
    let every = u64::from(schedule.every.max(1));
    (u64::from(schedule.burn_in) / every + 1) * every
}

/// Shape of the Gamma hyperprior on each α_k (Mallet's 1.001): see the module documentation.
const ALPHA_SHAPE: f64 = 1.001;
/// Fixed-point steps per update at most; each step is cheap (one pass over the histograms).
pub const MAX_STEPS: usize = 200;
/// Relative change of every parameter below which the fixed point has converged.
const TOLERANCE: f64 = 1e-9;

/// How many documents hold topic k exactly n times, for n ≥ 1 (sparse), and how many documents
/// have n tokens: the sufficient statistics of α's update.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DocHistograms {
    /// (topic, count, documents), sorted by topic then count; counts ≥ 1.
    pub topic_counts: Vec<(u16, u32, u64)>,
    /// (length, documents), sorted by length; lengths ≥ 1.
    pub lengths: Vec<(u32, u64)>,
}

impl DocHistograms {
    /// The histograms of `docs` whose tokens `first..` have the topics `z` (corpus order).
    pub fn of(docs: Docs<'_>, z: &[u16], num_topics: usize) -> Self {
        const CHUNK: usize = 4096;
        let chunks: Vec<(Vec<u64>, Vec<u32>)> = (0..docs.len().div_ceil(CHUNK))
            .into_par_iter()
            .map(|c| {
                let mut counts = vec![0u32; num_topics];
                let mut keys = Vec::new();
                let mut lengths = Vec::new();
                let base = docs.doc_start(0);
                for d in c * CHUNK..((c + 1) * CHUNK).min(docs.len()) {
                    let start = (docs.doc_start(d) - base) as usize;
                    let n = docs.doc(d).len();
                    if n == 0 {
                        continue;
                    }
                    lengths.push(n as u32);
                    let topics = &z[start..start + n];
                    for &k in topics {
                        counts[usize::from(k)] += 1;
                    }
                    for &k in topics {
                        let c = &mut counts[usize::from(k)];
                        if *c > 0 {
                            keys.push((u64::from(k) << 32) | u64::from(*c));
                            *c = 0;
                        }
                    }
                }
                (keys, lengths)
            })
            .collect();
        let mut keys: Vec<u64> = chunks.iter().flat_map(|c| c.0.iter().copied()).collect();
        let mut lengths: Vec<u32> = chunks.iter().flat_map(|c| c.1.iter().copied()).collect();
        keys.par_sort_unstable();
        lengths.par_sort_unstable();
        Self {
            topic_counts: run_lengths(&keys)
                .map(|(key, n)| ((key >> 32) as u16, key as u32, n))
                .collect(),
            lengths: run_lengths(&lengths).collect(),
        }
    }

    /// The sum of several workers' histograms (the same whatever the order they come in).
    pub fn merge(parts: impl IntoIterator<Item = DocHistograms>) -> Self {
        let mut pairs = Vec::new();
        let mut lengths = Vec::new();
        for p in parts {
            pairs.extend(p.topic_counts);
            lengths.extend(p.lengths);
        }
        pairs.sort_unstable();
        lengths.sort_unstable();
        let mut out = Self::default();
        for (k, c, n) in pairs {
            match out.topic_counts.last_mut() {
                Some(last) if (last.0, last.1) == (k, c) => last.2 += n,
                _ => out.topic_counts.push((k, c, n)),
            }
        }
        for (len, n) in lengths {
            match out.lengths.last_mut() {
                Some(last) if last.0 == len => last.1 += n,
                _ => out.lengths.push((len, n)),
            }
        }
        out
    }

    /// Little-endian bytes, for the transport.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(16 + self.topic_counts.len() * 14 + self.lengths.len() * 12);
        b.extend_from_slice(&(self.topic_counts.len() as u64).to_le_bytes());
        for &(k, c, n) in &self.topic_counts {
            b.extend_from_slice(&k.to_le_bytes());
            b.extend_from_slice(&c.to_le_bytes());
            b.extend_from_slice(&n.to_le_bytes());
        }
        b.extend_from_slice(&(self.lengths.len() as u64).to_le_bytes());
        for &(len, n) in &self.lengths {
            b.extend_from_slice(&len.to_le_bytes());
            b.extend_from_slice(&n.to_le_bytes());
        }
        b
    }

    /// Parses [`DocHistograms::to_bytes`].
    pub fn from_bytes(b: &[u8]) -> Option<Self> {
        let mut at = 0usize;
        let mut take = |n: usize| -> Option<&[u8]> {
            let s = b.get(at..at + n)?;
            at += n;
            Some(s)
        };
        let mut out = Self::default();
        let pairs = u64::from_le_bytes(take(8)?.try_into().ok()?);
        for _ in 0..pairs {
            let k = u16::from_le_bytes(take(2)?.try_into().ok()?);
            let c = u32::from_le_bytes(take(4)?.try_into().ok()?);
            let n = u64::from_le_bytes(take(8)?.try_into().ok()?);
            out.topic_counts.push((k, c, n));
        }
        let lengths = u64::from_le_bytes(take(8)?.try_into().ok()?);
        for _ in 0..lengths {
            let len = u32::from_le_bytes(take(4)?.try_into().ok()?);
            let n = u64::from_le_bytes(take(8)?.try_into().ok()?);
            out.lengths.push((len, n));
        }
        Some(out)
    }

    /// The histograms of every worker, summed (a collective with several workers).
    pub fn across_workers(self, transport: &dyn Transport) -> Result<Self, TrainError> {
        if transport.workers() == 1 {
            return Ok(self);
        }
        let all = transport.all_gather_bytes(&self.to_bytes())?;
        let parts = all
            .iter()
            .map(|b| {
                Self::from_bytes(b).ok_or_else(|| {
                    TrainError::Unsupported("a worker sent malformed prior statistics".into())
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self::merge(parts))
    }
}

/// (value, how many times) over a sorted slice.
fn run_lengths<T: Copy + PartialEq>(sorted: &[T]) -> impl Iterator<Item = (T, u64)> + '_ {
    let mut i = 0;
    std::iter::from_fn(move || {
        let v = *sorted.get(i)?;
        let start = i;
        while i < sorted.len() && sorted[i] == v {
            i += 1;
        }
        Some((v, (i - start) as u64))
    })
}

/// The word-topic counts' statistics for β: how many (word, topic) cells hold count n (n ≥ 1),
/// and the topic totals n_k.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WordHistogram {
    /// (count, cells), sorted by count.
    pub cell_counts: Vec<(u32, u64)>,
    pub topic_totals: Vec<u64>,
    pub num_words: usize,
}

impl WordHistogram {
    /// The statistics of the global counts `b` (the same on every worker).
    pub fn of(b: &WordTopics) -> Self {
        let mut counts: Vec<u32> = (0..b.num_words() as u32)
            .into_par_iter()
            .flat_map_iter(|w| b.row(w).1.iter().copied())
            .collect();
        counts.par_sort_unstable();
        Self {
            cell_counts: run_lengths(&counts).collect(),
            topic_totals: b.totals.clone(),
            num_words: b.num_words(),
        }
    }
}

/// ψ(x), the digamma function, for x > 0: the recurrence ψ(x) = ψ(x + 1) − 1/x up to x ≥ 10, then
/// the asymptotic series ln x − 1/(2x) − Σ_{j≤6} B_2j / (2j x^2j) (Abramowitz & Stegun 6.3.18),
/// whose first omitted term at x = 10 is B₁₄/(14·10¹⁴) ≈ 5·10⁻¹⁶ (relative to ψ(10) ≈ 2.25).
pub fn digamma(mut x: f64) -> f64 {
    debug_assert!(x > 0.0);
    let mut shift = 0.0;
    while x < 10.0 {
        shift -= 1.0 / x;
        x += 1.0;
    }
    let f = 1.0 / (x * x);
    let series = f
        * (-1.0 / 12.0
            + f * (1.0 / 120.0
                + f * (-1.0 / 252.0
                    + f * (1.0 / 240.0 + f * (-1.0 / 132.0 + f * (691.0 / 32760.0))))));
    shift + x.ln() - 0.5 / x + series
}

/// One fixed-point update of α (Minka Eq. 55 with the Gamma(1.001) term) iterated to convergence
/// from `alpha`; `None` if no document has a token.
pub fn learn_alpha(alpha: &[f64], h: &DocHistograms) -> Option<Vec<f64>> {
    if h.lengths.is_empty() {
        return None;
    }
    let mut alpha = alpha.to_vec();
    for _ in 0..MAX_STEPS {
        let sum: f64 = alpha.iter().sum();
        let psi_sum = digamma(sum);
        let denominator: f64 = h
            .lengths
            .iter()
            .map(|&(n, docs)| docs as f64 * (digamma(f64::from(n) + sum) - psi_sum))
            .sum();
        let mut numerators = vec![0.0f64; alpha.len()];
        let mut k_prev = usize::MAX;
        let mut psi_a = 0.0;
        for &(k, c, docs) in &h.topic_counts {
            let k = usize::from(k);
            if k != k_prev {
                psi_a = digamma(alpha[k]);
                k_prev = k;
            }
            numerators[k] += docs as f64 * (digamma(f64::from(c) + alpha[k]) - psi_a);
        }
        let mut change = 0.0f64;
        for (a, num) in alpha.iter_mut().zip(numerators) {
            let new = (*a * num + (ALPHA_SHAPE - 1.0)) / denominator;
            change = change.max(((new - *a) / *a).abs());
            *a = new;
        }
        if change < TOLERANCE {
            break;
        }
    }
    Some(alpha)
}

/// The symmetric β's fixed point iterated to convergence from `beta`; `None` without counts.
pub fn learn_beta(beta: f64, h: &WordHistogram) -> Option<f64> {
    if h.cell_counts.is_empty() || h.num_words == 0 {
        return None;
    }
    let v = h.num_words as f64;
    let mut beta = beta;
    for _ in 0..MAX_STEPS {
        let psi_b = digamma(beta);
        let numerator: f64 = h
            .cell_counts
            .iter()
            .map(|&(c, cells)| cells as f64 * (digamma(f64::from(c) + beta) - psi_b))
            .sum();
        let psi_vb = digamma(v * beta);
        let denominator: f64 = h
            .topic_totals
            .iter()
            .map(|&n| digamma(n as f64 + v * beta) - psi_vb)
            .sum::<f64>()
            * v;
        let new = beta * numerator / denominator;
        let change = ((new - beta) / beta).abs();
        beta = new;
        if !(beta.is_finite() && beta > 0.0) {
            return None;
        }
        if change < TOLERANCE {
            break;
        }
    }
    Some(beta)
}

/// The priors re-estimated from these statistics, starting from `hyper`'s.
pub fn learn(
    hyper: &Hyperparameters,
    docs: &DocHistograms,
    words: &WordHistogram,
) -> Result<Hyperparameters, TrainError> {
    let alpha = learn_alpha(hyper.alpha.values(), docs)
        .map(Alpha::from_values)
        .transpose()
        .map_err(|e| TrainError::Unsupported(format!("the learned prior is invalid ({e}); train with a larger --optimize-burn-in or without --optimize-priors")))?
        .unwrap_or_else(|| hyper.alpha.clone());
    let beta = learn_beta(hyper.beta, words).unwrap_or(hyper.beta);
    Hyperparameters::with_alpha(alpha, Some(beta)).map_err(|e| {
        TrainError::Unsupported(format!("the learned prior is invalid ({e}); train with a larger --optimize-burn-in or without --optimize-priors"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digamma_matches_known_values() {
        let euler = 0.577_215_664_901_532_9;
        for (x, want) in [
            (1.0, -euler),
            (0.5, -euler - 2.0 * std::f64::consts::LN_2),
            (10.0, 2.251_752_589_066_721),
            (0.01, -100.560_885_457_868_9),
            (1234.5, 7.118_016_231_828),
        ] {
            let got = digamma(x);
            assert!(
                (got - want).abs() < 1e-12 * want.abs().max(1.0),
                "ψ({x}) = {got}, want {want}"
            );
        }
        // ψ(x + 1) − ψ(x) = 1/x.
        for x in [0.003, 0.7, 5.9, 6.0, 42.0] {
            assert!((digamma(x + 1.0) - digamma(x) - 1.0 / x).abs() < 1e-12 / x.min(1.0));
        }
    }

    /// Documents drawn from a Dirichlet–multinomial with a known asymmetric α: the fixed point
    /// recovers it from the histograms of their topic counts (the corpus-level check, through
    /// training, is in `tests/priors.rs`).
    #[test]
    fn recovers_a_known_asymmetric_alpha_from_exact_counts() {
        use topos_sampling::{CounterRng, Stream};
        let truth = [1.2, 0.6, 0.3, 0.1];
        let mut docs = topos_corpus::OwnedDocs::new();
        let mut z = Vec::new();
        for d in 0..4000u64 {
            let mut rng = CounterRng::new(5, Stream::Synthetic, 9, d);
            let g: Vec<f64> = truth.iter().map(|&a| rng.next_gamma(a)).collect();
            let total: f64 = g.iter().sum();
            let len = 20 + (d % 60) as usize;
            docs.push(&vec![0u32; len]);
            for _ in 0..len {
                let mut x = rng.next_f64() * total;
                let mut k = g.len() - 1;
                for (t, &gt) in g.iter().enumerate() {
                    if x < gt {
                        k = t;
                        break;
                    }
                    x -= gt;
                }
                z.push(k as u16);
            }
        }
        let h = DocHistograms::of(docs.view(), &z, 4);
        let learned = learn_alpha(&[0.5; 4], &h).unwrap();
        for (l, t) in learned.iter().zip(truth) {
            assert!(
                (l - t).abs() < 0.08 * t,
                "learned {learned:?}, truth {truth:?}"
            );
        }
        // The same from another start: a fixed point, not an echo of where it began.
        let again = learn_alpha(&[3.0, 0.01, 2.0, 0.2], &h).unwrap();
        for (a, b) in again.iter().zip(&learned) {
            assert!((a - b).abs() < 1e-6 * b, "{again:?} vs {learned:?}");
        }
    }

    /// β from the counts of topics drawn from a known symmetric Dirichlet(β).
    #[test]
    fn recovers_a_known_beta_from_exact_counts() {
        use topos_sampling::{CounterRng, Stream};
        let (v, k, beta) = (500usize, 20usize, 0.05);
        let mut rows = vec![vec![0u32; k]; v];
        #[allow(clippy::needless_range_loop)] // t keys the topic's random stream too
        for t in 0..k {
            let mut rng = CounterRng::new(3, Stream::Synthetic, 1, t as u64);
            let g: Vec<f64> = (0..v).map(|_| rng.next_gamma(beta)).collect();
            let total: f64 = g.iter().sum();
            let cum: Vec<f64> = g
                .iter()
                .scan(0.0, |acc, &x| {
                    *acc += x;
                    Some(*acc)
                })
                .collect();
            for _ in 0..20_000 {
                let x = rng.next_f64() * total;
                let w = cum.partition_point(|&c| c <= x).min(v - 1);
                rows[w][t] += 1;
            }
        }
        let dense: Vec<u32> = rows.concat();
        let b = crate::counts::WordTopics::from_dense(&dense, k as u32);
        let h = WordHistogram::of(&b);
        let learned = learn_beta(0.5, &h).unwrap();
        assert!(
            (learned - beta).abs() < 0.1 * beta,
            "learned β = {learned}, truth {beta}"
        );
    }

    #[test]
    fn histograms_merge_and_round_trip() {
        let mut docs = topos_corpus::OwnedDocs::new();
        docs.push(&[0, 1, 2]);
        docs.push(&[]);
        docs.push(&[3, 3]);
        let z = [1u16, 1, 0, 2, 2];
        let h = DocHistograms::of(docs.view(), &z, 3);
        assert_eq!(h.topic_counts, vec![(0, 1, 1), (1, 2, 1), (2, 2, 1)]);
        assert_eq!(h.lengths, vec![(2, 1), (3, 1)]);
        assert_eq!(DocHistograms::from_bytes(&h.to_bytes()), Some(h.clone()));
        let twice = DocHistograms::merge([h.clone(), h]);
        assert_eq!(twice.topic_counts, vec![(0, 1, 2), (1, 2, 2), (2, 2, 2)]);
        assert_eq!(twice.lengths, vec![(2, 2), (3, 2)]);
        assert_eq!(DocHistograms::from_bytes(&[1, 2, 3]), None);
    }

    #[test]
    fn schedule() {
        let s = PriorSchedule {
            every: 10,
            burn_in: 20,
        };
        let due: Vec<u32> = (1..=60).filter(|&i| s.due(i)).collect();
        assert_eq!(due, vec![30, 40, 50, 60]);
        // The first update is the first iteration `due` says yes to, for every shape.
        for every in 1..=12 {
            for burn_in in 0..=30 {
                let s = PriorSchedule { every, burn_in };
                let first = (1..=100).find(|&i| s.due(i)).map(u64::from);
                assert_eq!(first, Some(first_update(s)), "{s:?}");
            }
        }
        let huge = PriorSchedule {
            every: u32::MAX,
            burn_in: u32::MAX,
        };
        assert_eq!(first_update(huge), 2 * u64::from(u32::MAX));
    }
}
