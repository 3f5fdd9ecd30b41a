//! Gibbs fold-in: the topic mixture θ_d of a document the model was not trained on, with the
//! topics φ held fixed (Griffiths & Steyvers 2004; the "estimated θ" step of Wallach et al. 2009,
//! "Evaluation methods for topic models", §4). Used on the observed half of held-out documents
//! ([`crate::heldout`]) and on whole unseen documents ([`mod@crate::infer`]).
//!
//! With φ fixed and θ_d integrated out, the collapsed conditional of one token of word w is
//!
//! ```text
//! p(z = k | z_¬i) ∝ (A_dk^¬i + α) φ_kw,
//! ```
//!
//! SaberLDA Eq. (1) with B̂ = φ. It is split as in SaberLDA §2.3 / Alg. 2 into
//!
//! * the **sparse document branch** p₁(k) ∝ A_dk φ_kw over the document's non-zero topics, mass
//!   S = Σ_{k: A_dk>0} A_dk φ_kw, sampled by a linear search in a prefix-sum array: O(K_d);
//! * the **dense smoothing branch** p₂(k) ∝ φ_kw, mass Q_w = α Σ_k φ_kw, which depends on the word
//!   only: a W-ary sampling tree over φ_·w (SaberLDA §3.2.4, [`WaryTree`]), O(log₃₂ K) per draw.
//!
//! One uniform u picks the branch (u·(S + Q_w) < S) and, inside the sparse branch, the topic.
//! Unlike ESCA training, the document counts change after every token (a true collapsed Gibbs
//! sweep), which mixes faster; it stays cheap because a document is small.
//!
//! The trees are built lazily, the first time a word's smoothing branch is drawn, and shared by all
//! threads ([`OnceLock`]): only words that occur (and hit that branch) cost memory, about 4.1·K
//! bytes each — at most about as much as φ itself.
//!
//! **Chain.** Sweep 0 assigns the tokens in order, each conditioned on those before it (the
//! sequential initialisation of Mallet's inferencer: better than uniform topics when K is large).
//! Sweeps 1..=`sweeps` resample every token; after `burn_in` sweeps, the counts A_d of every sweep
//! are averaged, giving θ̄_dk = (Ā_dk + α) / (n_d + Kα).
//!
//! **Determinism.** Token i of a document draws from
//! `CounterRng::new(seed, Stream::Infer, sweep, first_token + i)`, where `first_token` is the
//! token's global index in the corpus; a document is processed by one thread from a fully reset
//! scratch state. The result is therefore the same bits for any number of threads.

use crate::likelihood::check_topics;
use crate::{Hyperparameters, ModelError, Phi};
use serde::Serialize;
use std::sync::OnceLock;
use topos_sampling::discrete::search_prefix_f64;
use topos_sampling::{CounterRng, Philox4x32, Stream, WaryTree};

/// How long to run the fold-in chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct FoldInOptions {
    /// Gibbs sweeps after the initial assignment. Default 50: with φ fixed the chain only has to
    /// settle one document's topics, which takes a few sweeps; Mallet's inferencer and Wallach et
    /// al. use tens to a hundred.
    pub sweeps: u32,
    /// Sweeps discarded before averaging. Default 10, leaving 40 samples to average.
    pub burn_in: u32,
    /// Seed of the counter-based generator ([`Stream::Infer`]).
    pub seed: u64,
}

impl Default for FoldInOptions {
    fn default() -> Self {
        Self {
            sweeps: 50,
            burn_in: 10,
            seed: 1,
        }
    }
}

impl FoldInOptions {
    /// Refuses a chain that would average no sample.
    pub fn validate(&self) -> Result<(), ModelError> {
        if self.sweeps == 0 || self.burn_in >= self.sweeps {
            return Err(ModelError::Options(format!(
                "fold-in needs more sweeps than burn-in sweeps (got {} sweeps, {} burn-in)",
                self.sweeps, self.burn_in
            )));
        }
        Ok(())
    }
}

/// The averaged topic counts of one folded-in document: θ̄_dk = (Ā_dk + α) / (n_d + Kα), with Ā
/// non-zero only at `topics`.
#[derive(Clone, Debug, PartialEq)]
pub struct FoldedDoc {
    /// Tokens folded in, n_d.
    pub num_tokens: u64,
    /// Topics with a positive average count, increasing.
    pub topics: Vec<u16>,
    /// Ā_dk beside `topics`; they sum to n_d.
    pub mean_counts: Vec<f64>,
}

/// The fold-in sampler for one φ.
pub struct FoldIn<'a> {
    phi: &'a Phi,
    alpha: crate::Alpha,
    /// Σ_k α_k φ_kw by word: the smoothing branch's weight.
    prior: crate::phi::PriorMass<'a>,
    opts: FoldInOptions,
    key: Philox4x32,
    /// Lazily built sampling trees of the smoothing branch, one per word (dense φ).
    trees: Vec<OnceLock<WaryTree>>,
    /// Sparse φ: one tree over s_k = 1/(n_k + Vβ), the smoothing bucket of every word.
    inv_tree: Option<WaryTree>,
    /// Sparse φ: prefix sums of each stored word's fixed bucket α·B_wk·s_k, built as words are
    /// met.
    word_prefix: Vec<OnceLock<Vec<f64>>>,
    /// Sparse φ: αβ Σ_k s_k.
    smoothing_mass: f64,
}

const NONE: u32 = u32::MAX;

/// Per-thread working memory, reused across documents (left fully reset after each).
pub struct Scratch {
    /// A_dk of the current document.
    counts: Vec<u32>,
    /// Position of topic k in `nonzero`, or [`NONE`].
    slot: Vec<u32>,
    /// Topics with A_dk > 0.
    nonzero: Vec<u16>,
    /// Prefix sums of the sparse branch.
    cumulative: Vec<f64>,

    /// Current assignment of each token.
    z: Vec<u16>,
    /// Σ over averaged sweeps of A_dk.
    sum: Vec<u64>,
    /// Topics with a positive `sum`.
    touched: Vec<u16>,
}

impl Scratch {
    fn new(k: usize) -> Self {
        Self {
            counts: vec![0; k],
            slot: vec![NONE; k],
            nonzero: Vec::new(),
            cumulative: Vec::new(),
            z: Vec::new(),
            sum: vec![0; k],
            touched: Vec::new(),
        }
    }

    #[inline]
    fn add(&mut self, k: u16) {
        let t = usize::from(k);
        if self.counts[t] == 0 {
            self.slot[t] = self.nonzero.len() as u32;
            self.nonzero.push(k);
        }
        self.counts[t] += 1;
    }

    #[inline]
    fn remove(&mut self, k: u16) {
        let t = usize::from(k);
        self.counts[t] -= 1;
        if self.counts[t] == 0 {
            let i = self.slot[t] as usize;
            self.slot[t] = NONE;
            let last = self.nonzero.pop().expect("a counted topic is listed");
            if last != k {
                self.nonzero[i] = last;
                self.slot[usize::from(last)] = i as u32;
            }
        }
    }
}

impl<'a> FoldIn<'a> {
    /// A sampler over `phi` with the document prior α of `hyper`.
    pub fn new(
        phi: &'a Phi,
        hyper: &Hyperparameters,
        opts: FoldInOptions,
    ) -> Result<Self, ModelError> {
        check_topics(phi, hyper)?;
        opts.validate()?;
        Ok(Self {
            phi,
            alpha: hyper.alpha.clone(),
            prior: phi.prior_mass(&hyper.alpha),
            opts,
            key: Philox4x32::new(opts.seed),
            trees: if phi.sparse().is_some() {
                Vec::new()
            } else {
                (0..phi.num_words()).map(|_| OnceLock::new()).collect()
            },
            word_prefix: phi.sparse().map_or_else(Vec::new, |sp| {
                (0..sp.offsets.len().saturating_sub(1))
                    .map(|_| OnceLock::new())
                    .collect()
            }),
            // A symmetric α factors out of the smoothing bucket (a tree over s_k); an
            // asymmetric one weighs each topic's share (a tree over α_k s_k).
            inv_tree: phi.sparse().map(|sp| match hyper.alpha.symmetric_value() {
                Some(_) => {
                    WaryTree::from_weights(&sp.inv.iter().map(|&x| x as f32).collect::<Vec<_>>())
                }
                None => WaryTree::from_weights(
                    &sp.inv
                        .iter()
                        .zip(hyper.alpha.values())
                        .map(|(&x, &a)| (a * x) as f32)
                        .collect::<Vec<_>>(),
                ),
            }),
            smoothing_mass: phi
                .sparse()
                .map_or(0.0, |sp| match hyper.alpha.symmetric_value() {
                    Some(a) => a * sp.beta * sp.inv.iter().sum::<f64>(),
                    None => {
                        sp.beta
                            * sp.inv
                                .iter()
                                .zip(hyper.alpha.values())
                                .map(|(&x, &a)| a * x)
                                .sum::<f64>()
                    }
                }),
        })
    }

    /// Working memory for one thread.
    pub fn scratch(&self) -> Scratch {
        Scratch::new(self.phi.num_topics())
    }

    /// The options in use.
    pub fn options(&self) -> FoldInOptions {
        self.opts
    }

    /// Draws a topic for a token of word `w` given the document counts in `s` (the token itself
    /// already removed): SaberLDA Alg. 2.
    #[inline]
    fn draw(&self, w: u32, s: &mut Scratch, rng: &mut CounterRng) -> u16 {
        if let Some(sp) = self.phi.sparse() {
            return self.draw_sparse(sp, w, s, rng);
        }
        let row = self.phi.row(w);
        s.cumulative.clear();
        let mut sparse = 0.0f64;
        for &k in &s.nonzero {
            sparse += f64::from(s.counts[usize::from(k)]) * f64::from(row[usize::from(k)]);
            s.cumulative.push(sparse);
        }
        let smoothing = self.prior.get(w);
        let u = rng.next_f64() * (sparse + smoothing);
        if u < sparse {
            s.nonzero[search_prefix_f64(&s.cumulative, u)]
        } else {
            let tree = self.trees[w as usize].get_or_init(|| match self.alpha.symmetric_value() {
                Some(_) => WaryTree::from_weights(row),
                None => WaryTree::from_weights(
                    &row.iter()
                        .zip(self.alpha.values())
                        .map(|(&p, &a)| (a * f64::from(p)) as f32)
                        .collect::<Vec<_>>(),
                ),
            });
            tree.sample(rng.next_f32()) as u16
        }
    }

    /// [`FoldIn::draw`] for a sparse φ, with SparseLDA's buckets (Yao et al. 2009, §3; the
    /// collapsed conditional is unchanged, only split differently):
    ///
    /// ```text
    /// (A_k + α)(B_wk + β)s_k = A_k·(B_wk + β)·s_k   document bucket: the document's non-zeros,
    ///                                               B_wk found by binary search in the word's row
    ///                        + α_k·B_wk·s_k         word bucket: the word's non-zeros, fixed
    ///                                               while φ is (prefix sums built once a word)
    ///                        + α_kβ·s_k             smoothing bucket: one tree for all words
    /// ```
    ///
    /// O(K_d · log nnz(B_w) + log nnz(B_w) + log₃₂ K) per token and no V × K array: a word's row
    /// at K = 32,768 has thousands of non-zeros, a held-out document's first half a few dozen.
    #[inline]
    fn draw_sparse(
        &self,
        sp: &crate::phi::SparsePhi,
        w: u32,
        s: &mut Scratch,
        rng: &mut CounterRng,
    ) -> u16 {
        let row = self.phi.stored_row(w);
        let (wt, wc) = sp.row(row);
        let word = self.word_prefix[row].get_or_init(|| {
            let mut acc = 0.0f64;
            wt.iter()
                .zip(wc)
                .map(|(&k, &c)| {
                    acc += self.alpha.get(usize::from(k)) * f64::from(c) * sp.inv[usize::from(k)];
                    acc
                })
                .collect()
        });
        let w_mass = word.last().copied().unwrap_or(0.0);
        s.cumulative.clear();
        let mut d = 0.0f64;
        for &k in &s.nonzero {
            let t = usize::from(k);
            let b = wt.binary_search(&k).map_or(0.0, |i| f64::from(wc[i]));
            d += f64::from(s.counts[t]) * (b + sp.beta) * sp.inv[t];
            s.cumulative.push(d);
        }
        let u = rng.next_f64() * (d + w_mass + self.smoothing_mass);
        if u < d && !s.nonzero.is_empty() {
            s.nonzero[search_prefix_f64(&s.cumulative, u)]
        } else if u - d < w_mass && !wt.is_empty() {
            wt[search_prefix_f64(word, u - d)]
        } else {
            let tree = self.inv_tree.as_ref().expect("a sparse φ has its tree");
            tree.sample(rng.next_f32()) as u16
        }
    }

    /// Folds in one document: `words` (ids below V, checked by the caller) whose first token has
    /// global index `first_token`. `scratch` comes from [`FoldIn::scratch`] and is left reset.
    pub fn fold_in(&self, words: &[u32], first_token: u64, s: &mut Scratch) -> FoldedDoc {
        let rng = |sweep: u32, i: usize| {
            CounterRng::from_generator(self.key, Stream::Infer, sweep, first_token + i as u64)
        };
        s.z.clear();
        for (i, &w) in words.iter().enumerate() {
            let k = self.draw(w, s, &mut rng(0, i));
            s.add(k);
            s.z.push(k);
        }
        for sweep in 1..=self.opts.sweeps {
            for (i, &w) in words.iter().enumerate() {
                s.remove(s.z[i]);
                let k = self.draw(w, s, &mut rng(sweep, i));
                s.add(k);
                s.z[i] = k;
            }
            if sweep > self.opts.burn_in {
                for &k in &s.nonzero {
                    let t = usize::from(k);
                    if s.sum[t] == 0 {
                        s.touched.push(k);
                    }
                    s.sum[t] += u64::from(s.counts[t]);
                }
            }
        }
        let samples = f64::from(self.opts.sweeps - self.opts.burn_in);
        s.touched.sort_unstable();
        let mean_counts = s
            .touched
            .iter()
            .map(|&k| s.sum[usize::from(k)] as f64 / samples)
            .collect();
        let topics = std::mem::take(&mut s.touched);
        // Reset for the next document.
        for &k in &topics {
            s.sum[usize::from(k)] = 0;
        }
        for &k in &s.nonzero {
            s.counts[usize::from(k)] = 0;
            s.slot[usize::from(k)] = NONE;
        }
        s.nonzero.clear();
        FoldedDoc {
            num_tokens: words.len() as u64,
            topics,
            mean_counts,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phi() -> Phi {
        // V = 3, K = 3, word-major; each topic (column) sums to 1.
        #[rustfmt::skip]
        let p = vec![
            0.7, 0.1, 0.2,
            0.2, 0.3, 0.1,
            0.1, 0.6, 0.7,
        ];
        Phi::from_probabilities(3, 3, p).unwrap()
    }

    #[test]
    fn options_need_a_sample() {
        assert!(FoldInOptions::default().validate().is_ok());
        let o = FoldInOptions {
            sweeps: 5,
            burn_in: 5,
            seed: 0,
        };
        assert!(o.validate().unwrap_err().to_string().contains("burn-in"));
    }

    /// The sparse φ's buckets sample the same conditional: the two-token chain on a model kept
    /// sparse matches the exact posterior of that model's φ.
    #[test]
    fn sparse_phi_chain_matches_exact_posterior() {
        use crate::{Provenance, TopicModel};
        let vocab = topos_corpus::Vocabulary::new(["a", "b", "c"].map(String::from).into());
        let hyper = Hyperparameters::new(3, Some(0.4), Some(0.05)).unwrap();
        let counts = vec![9, 0, 2, 0, 4, 1, 1, 6, 0];
        let model = TopicModel::from_counts(vocab, hyper.clone(), counts, Provenance::default());
        let mut b = Phi::builder_for_words(3, 0.05, &model.topic_totals, &[0, 1, 2], None).unwrap();
        for w in 0..3u32 {
            let row = model.word_row(w);
            let t: Vec<u16> = (0..3).filter(|&k| row[k] > 0).map(|k| k as u16).collect();
            let c: Vec<u32> = row.iter().copied().filter(|&c| c > 0).collect();
            b.push_row(w, &t, &c);
        }
        let sparse = b.finish_sparse_for_tests();
        assert!(sparse.sparse().is_some());
        let dense = Phi::from_model(&model).unwrap();
        for w in 0..3 {
            for k in 0..3 {
                assert!((sparse.get(w, k) - dense.get(w, k)).abs() < 1e-6);
            }
            assert!((sparse.word_mass(w) - dense.word_mass(w)).abs() < 1e-6);
        }
        let (w1, w2) = (0u32, 2u32);
        let opts = FoldInOptions {
            sweeps: 200_000,
            burn_in: 10,
            seed: 9,
        };
        // The symmetric prior, then an asymmetric one (the learned α of --optimize-priors: a
        // tree over α_k s_k for the smoothing bucket, α_k in the word bucket).
        let asymmetric = crate::Alpha::from_values(vec![0.05, 0.9, 0.3]).unwrap();
        for alpha in [hyper.alpha.clone(), asymmetric] {
            let hyper = Hyperparameters::with_alpha(alpha.clone(), Some(0.05)).unwrap();
            let expected = two_token_posterior(&sparse, &alpha, w1, w2);
            let f = FoldIn::new(&sparse, &hyper, opts).unwrap();
            let d = f.fold_in(&[w1, w2], 0, &mut f.scratch());
            let mut got = [0.0f64; 3];
            for (&k, &m) in d.topics.iter().zip(&d.mean_counts) {
                got[usize::from(k)] = m;
            }
            for k in 0..3 {
                let e = expected[k];
                assert!(
                    (got[k] - e).abs() < 0.01,
                    "{alpha}, topic {k}: {} vs {e}",
                    got[k]
                );
            }
        }
    }

    /// E[A_k] under the exact posterior of two tokens of words `w1`, `w2` over three topics:
    /// p(z₁, z₂) ∝ φ_{z₁w₁} φ_{z₂w₂} · (α_k(α_k+1) if z₁ = z₂ = k else α_{z₁}α_{z₂}).
    fn two_token_posterior(phi: &Phi, alpha: &crate::Alpha, w1: u32, w2: u32) -> [f64; 3] {
        let mut expected = [0.0f64; 3];
        let mut norm = 0.0;
        for z1 in 0..3 {
            for z2 in 0..3 {
                let (a1, a2) = (alpha.get(z1), alpha.get(z2));
                let prior = if z1 == z2 { a1 * (a1 + 1.0) } else { a1 * a2 };
                let p = f64::from(phi.get(w1, z1)) * f64::from(phi.get(w2, z2)) * prior;
                norm += p;
                expected[z1] += p;
                expected[z2] += p;
            }
        }
        expected.map(|e| e / norm)
    }

    /// With two tokens the exact posterior over (z₁, z₂) is known:
    /// p ∝ φ_{z₁w₁} φ_{z₂w₂} · (α(α+1) if z₁ = z₂ else α²). A long chain's average counts must
    /// match its expectation — this checks both branches and the branch choice.
    #[test]
    fn two_token_chain_matches_exact_posterior() {
        for alpha in [
            crate::Alpha::symmetric(3, 0.4),
            crate::Alpha::from_values(vec![0.05, 0.9, 0.3]).unwrap(),
        ] {
            two_token_chain_matches_exact_posterior_with(alpha);
        }
    }

    /// [`two_token_chain_matches_exact_posterior`] for one prior (an asymmetric one checks the
    /// per-word trees over α_k φ_kw and the mass Σ_k α_k φ_kw).
    fn two_token_chain_matches_exact_posterior_with(alpha: crate::Alpha) {
        let phi = phi();
        let hyper = Hyperparameters::with_alpha(alpha.clone(), None).unwrap();
        let (w1, w2) = (0u32, 2u32);
        let expected = two_token_posterior(&phi, &alpha, w1, w2);
        let opts = FoldInOptions {
            sweeps: 200_000,
            burn_in: 10,
            seed: 9,
        };
        let f = FoldIn::new(&phi, &hyper, opts).unwrap();
        let mut s = f.scratch();
        let got = f.fold_in(&[w1, w2], 0, &mut s);
        assert_eq!(got.num_tokens, 2);
        assert!((got.mean_counts.iter().sum::<f64>() - 2.0).abs() < 1e-9);
        for (k, e) in expected.iter().enumerate() {
            let i = got
                .topics
                .iter()
                .position(|&t| usize::from(t) == k)
                .unwrap();
            assert!(
                (got.mean_counts[i] - e).abs() < 0.01,
                "topic {k}: {} vs {e}",
                got.mean_counts[i]
            );
        }
    }

    #[test]
    fn scratch_is_reset_between_documents() {
        let phi = phi();
        let hyper = Hyperparameters::new(3, Some(0.1), None).unwrap();
        let f = FoldIn::new(&phi, &hyper, FoldInOptions::default()).unwrap();
        let doc = [0u32, 1, 2, 2, 0, 1, 1];
        let mut fresh = f.scratch();
        let alone = f.fold_in(&doc, 100, &mut fresh);
        let mut used = f.scratch();
        f.fold_in(&[2, 2, 2, 0], 7, &mut used);
        assert_eq!(f.fold_in(&doc, 100, &mut used), alone);
        assert!(used.counts.iter().all(|&c| c == 0));
        assert!(used.sum.iter().all(|&c| c == 0));
        assert!(used.slot.iter().all(|&c| c == NONE));
        // Another global position draws other numbers.
        assert_ne!(f.fold_in(&doc, 101, &mut used), alone);
        let empty = f.fold_in(&[], 0, &mut used);
        assert_eq!((empty.num_tokens, empty.topics.len()), (0, 0));
    }
}
