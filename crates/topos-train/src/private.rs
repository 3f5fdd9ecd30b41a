//! Differentially private training (`topos train --private`, issue 3 part 4).
//!
//! # What is released, and what is protected
//!
//! Neighbouring corpora differ by **one training document added or removed**. The released
//! object is the model file: a word-topic count matrix and its guarantee. Noising only the final
//! counts of a Gibbs sampler would not be private — every assignment of every iteration depends
//! on every document through the counts — so the guarantee here covers the **whole run**:
//!
//! 1. **Cap.** Every training document is cut to its first `L` tokens ([`cap_documents`], in
//!    memory; the corpus file is untouched). One document then holds at most `L` tokens, and
//!    since each token adds 1 to exactly one cell of the word-topic counts B, adding or removing
//!    a document changes B by at most `L` in L1 norm, *whatever its assignments*.
//! 2. **Sampler.** Only ESCA is allowed: within an iteration every token of document d is drawn
//!    from (its own document-topic row A_d, the word-topic counts read by the iteration, its own
//!    random numbers). The true B is never read by the sampler: before every iteration B of the
//!    current assignments (the random start included, since it depends on which words the
//!    documents hold) is **released** as B̃ = max(0, B + Z), Z i.i.d. discrete Laplace of scale
//!    L/ε_r ([`topos_privacy::DiscreteLaplace`], exact sampler, ChaCha20 keyed from the OS), and
//!    the iteration samples from B̃ with topic totals n_k = Σ_v B̃_vk derived from B̃ (never the
//!    true totals). CGS is refused: its counts change token by token inside a partition, so one
//!    document's assignments feed into the others' within an iteration without any release.
//! 3. **Output.** After the last iteration, B of the final assignments is released once more;
//!    that release is the model. So a run of T iterations makes T + 1 releases, each at
//!    ε_r = ε / (T + 1).
//!
//! # Proof sketch
//!
//! Fix the sampler's random numbers of every token of every document other than the added or
//! removed one, d*, to be the same in both worlds (a measure-preserving coupling: they are
//! i.i.d. uniform, see the caveat below). Induct over releases: if the releases B̃_1..B̃_{t−1}
//! are equal in both worlds, then every other document's assignments are equal too, because a
//! document's state z_d (hence A_d) is a function of its own tokens, its own random numbers and
//! the releases only. So the true B before release t differs only by d*'s tokens: L1 distance
//! ≤ L. Release t is then the discrete Laplace mechanism at scale L/ε_r on a query of L1
//! sensitivity L given the previous releases, which is ε_r-DP (Theorem 1, discrete form);
//! clamping at 0 and deriving n_k are post-processing. Adaptive sequential composition
//! (Theorem 3) over the T + 1 releases gives ε = (T + 1)·ε_r; averaging over the coupled
//! randomness keeps the bound. Everything else in the model file is either a public parameter
//! (K, α, β, T, L, the vocabulary — treated as public, as everywhere in `topos-privacy`) or
//! withheld: the provenance of a private model records seed, corpus checksum and the document
//! and token counts as 0, because each of them is an exact function of the data.
//!
//! # Caveats, stated in the docs and in `--help`
//!
//! * **The sampling seed is secret.** The coupling above needs each document's random numbers to
//!   be independent of where the document sits in the corpus. The counter-based generator is
//!   keyed by the global token index, so with a *known* seed an adversary who knows every other
//!   document could recompute every other assignment in both worlds (indices shift by d*'s
//!   length) and tell them apart. Private runs therefore key the Philox training stream with 64
//!   bits from the operating system, never recorded; `--seed` is ignored. The guarantee then
//!   holds treating Philox4x32-10 under a secret key as a random function, a computational
//!   assumption (its key is 64 bits). Keying the sampler with ChaCha20 instead would remove the
//!   assumption (a change in `esca.rs`/`topos-sampling`).
//! * Private runs are **not reproducible**: both the noise and the sampling key come from the OS.
//! * Only the model file is the release. What `train` prints (document and token counts, the
//!   held-out log-likelihood, which also reads the held-out documents) is for the data holder;
//!   the training log-likelihood (a function of the true assignments) is not computed at all.
//!   The `.doctopics` side file and checkpoints hold true per-document state and are never
//!   written for a private run.
//! * Noise is dense: every one of the V × K cells gets noise each release (O(V·K) time and
//!   memory per iteration, not O(non-zeros)), and at small ε the clamped noise dominates the
//!   counts (mean of max(0, Z) ≈ b/2 per cell at scale b = L·(T+1)/ε).

use crate::counts::WordTopics;
use topos_corpus::{Docs, OwnedDocs};
use topos_privacy::{Composition, DiscreteLaplace, Epsilon, Guarantee, NoiseSource, PrivacyError};

/// What a private run promises and how long it is.
#[derive(Clone, Copy, Debug)]
pub struct PrivateOptions {
    /// The total ε of the run (every release together).
    pub epsilon: Epsilon,
    /// Per-document token cap L (the L1 sensitivity of the word-topic counts).
    pub max_doc_tokens: u32,
    /// Planned iterations T: T + 1 releases.
    pub iterations: u32,
}

impl PrivateOptions {
    /// Number of noisy releases: one before every iteration and the final model.
    pub fn releases(&self) -> u64 {
        u64::from(self.iterations) + 1
    }

    /// ε of one release, ε / (T + 1) (before the sampler rounds it down to 33 bits).
    pub fn epsilon_per_release(&self) -> f64 {
        self.epsilon.get() / self.releases() as f64
    }
}

/// Every document cut to its first `max_tokens` tokens (deterministic: no data-dependent choice).
pub fn cap_documents(docs: Docs<'_>, max_tokens: u32) -> OwnedDocs {
    let mut out = OwnedDocs::new();
    for d in docs.iter() {
        out.push(&d[..d.len().min(max_tokens as usize)]);
    }
    out
}

/// The number of tokens of the longest document.
pub fn longest_document(docs: Docs<'_>) -> usize {
    docs.iter().map(<[u32]>::len).max().unwrap_or(0)
}

/// The state of the releases of one private run: the mechanism, the noise source, the latest
/// release and the ε each release spent.
pub struct Releases {
    options: PrivateOptions,
    mechanism: DiscreteLaplace,
    source: NoiseSource,
    spent: Vec<f64>,
    latest: Option<WordTopics>,
}

impl std::fmt::Debug for Releases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Releases")
            .field("options", &self.options)
            .field("scale", &self.mechanism.scale())
            .field("releases", &self.spent.len())
            .finish()
    }
}

impl Releases {
    /// Calibrates the mechanism: scale L / ε_r.
    pub fn new(options: PrivateOptions, source: NoiseSource) -> Result<Self, PrivacyError> {
        if options.max_doc_tokens == 0 {
            return Err(PrivacyError::NotPositive {
                what: "the document token cap (--max-doc-tokens)",
                value: 0.0,
            });
        }
        let eps_r = Epsilon::new(options.epsilon_per_release())?;
        let mechanism = DiscreteLaplace::calibrated(u64::from(options.max_doc_tokens), eps_r)?;
        Ok(Self {
            options,
            mechanism,
            source,
            spent: Vec::new(),
            latest: None,
        })
    }

    /// The run's settings.
    pub fn options(&self) -> &PrivateOptions {
        &self.options
    }

    /// The noise scale b = L / ε_r of every release.
    pub fn scale(&self) -> f64 {
        self.mechanism.scale()
    }

    /// The ε each release made so far actually spent (ε_r rounded down by the sampler's
    /// calibration, so never more than ε_r).
    pub fn spent(&self) -> &[f64] {
        &self.spent
    }

    /// The latest release, which the last iteration read or (after the last iteration) the model.
    pub fn latest(&self) -> Option<&WordTopics> {
        self.latest.as_ref()
    }

    /// Releases `b` with fresh noise and returns the release.
    ///
    /// # Panics
    /// If the run has already made all of its planned releases: more would exceed its ε.
    pub fn release(&mut self, b: &WordTopics) -> &WordTopics {
        assert!(
            (self.spent.len() as u64) < self.options.releases(),
            "a private run of {} iterations makes {} releases; one more would exceed its ε",
            self.options.iterations,
            self.options.releases()
        );
        let released = noisy_word_topics(b, &self.mechanism, &mut self.source);
        self.spent.push(
            self.mechanism
                .epsilon_for(u64::from(self.options.max_doc_tokens)),
        );
        self.latest.insert(released)
    }

    /// The guarantee of the whole run, for the model file: ε over T + 1 releases of sensitivity
    /// L composed sequentially, documents capped at L tokens, add/remove-one-document neighbours.
    pub fn guarantee(&self) -> Guarantee {
        Guarantee::discrete_laplace(
            self.options.epsilon.get(),
            Composition::Sequential,
            self.options.releases(),
            f64::from(self.options.max_doc_tokens),
        )
        .with_max_doc_tokens(self.options.max_doc_tokens)
    }
}

/// B̃ = max(0, B + Z) for every one of the V × K cells (zeros included: which cells are zero is
/// itself data), with topic totals summed from B̃.
pub fn noisy_word_topics(
    b: &WordTopics,
    mechanism: &DiscreteLaplace,
    source: &mut NoiseSource,
) -> WordTopics {
    let mut dense = b.to_dense();
    mechanism.add_to_u32_clamped(&mut dense, source);
    WordTopics::from_dense(&dense, b.num_topics)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eps(x: f64) -> Epsilon {
        Epsilon::new(x).unwrap()
    }

    #[test]
    fn caps_documents_by_keeping_their_first_tokens() {
        let docs: OwnedDocs = [&[1u32, 2, 3, 4][..], &[], &[5, 6]].into_iter().collect();
        let capped = cap_documents(docs.view(), 3);
        let rows: Vec<&[u32]> = capped.view().iter().collect();
        assert_eq!(rows, vec![&[1, 2, 3][..], &[], &[5, 6]]);
        assert_eq!(longest_document(capped.view()), 3);
        assert_eq!(longest_document(docs.view()), 4);
    }

    #[test]
    fn releases_are_noisy_clamped_and_accounted() {
        let opts = PrivateOptions {
            epsilon: eps(1.0),
            max_doc_tokens: 10,
            iterations: 4,
        };
        assert_eq!(opts.releases(), 5);
        let mut r = Releases::new(opts, NoiseSource::insecure_seeded(5)).unwrap();
        assert!((r.scale() - 50.0).abs() < 1e-6, "{}", r.scale());
        let b = WordTopics {
            num_topics: 3,
            offsets: vec![0, 1, 1],
            topics: vec![2],
            counts: vec![1000],
            totals: vec![0, 0, 1000],
        };
        for _ in 0..5 {
            let out = r.release(&b).clone();
            assert_eq!(out.num_words(), 2);
            assert_eq!(
                out.totals.iter().sum::<u64>(),
                out.counts.iter().map(|&c| u64::from(c)).sum::<u64>()
            );
            assert_ne!(out, b);
        }
        let total: f64 = r.spent().iter().sum();
        let g = r.guarantee();
        assert!(
            total <= g.epsilon && total > g.epsilon * (1.0 - 1e-9),
            "{total}"
        );
        assert_eq!(g.accountant.releases, 5);
        assert_eq!((g.sensitivity, g.max_doc_tokens), (Some(10.0), Some(10)));
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            r.release(&b);
        }));
        assert!(caught.is_err(), "a sixth release must be refused");
        let zero = PrivateOptions {
            max_doc_tokens: 0,
            ..opts
        };
        assert!(Releases::new(zero, NoiseSource::insecure_seeded(1)).is_err());
    }

    /// φ (K × V row-major) of word-topic counts.
    fn phi(b: &WordTopics, beta: f64) -> Vec<f64> {
        let (k, v) = (b.num_topics as usize, b.num_words());
        let mut out = vec![0.0; k * v];
        for w in 0..v {
            let (ts, cs) = b.row(w as u32);
            let mut row = vec![0u32; k];
            for (&t, &c) in ts.iter().zip(cs) {
                row[t as usize] = c;
            }
            for t in 0..k {
                let norm = b.totals[t] as f64 + v as f64 * beta;
                out[t * v + w] = (f64::from(row[t]) + beta) / norm;
            }
        }
        out
    }

    #[test]
    fn private_esca_adds_noise_and_recovers_separated_topics_at_large_epsilon() {
        use crate::synthetic::{generate, match_topics, SyntheticSpec, TopicShape};
        use crate::{Algorithm, TrainError, TrainOptions, Trainer};
        use topos_model::Hyperparameters;
        let spec = SyntheticSpec {
            num_docs: 400,
            num_words: 300,
            num_topics: 5,
            mean_doc_len: 60,
            alpha: 0.1,
            shape: TopicShape::Dirichlet { beta: 0.05 },
            seed: 11,
        };
        let corpus = generate(&spec);
        let cap = 60;
        let capped = cap_documents(corpus.docs.view(), cap);
        let docs = capped.view();
        let opts = |algorithm| TrainOptions {
            algorithm,
            hyper: Hyperparameters::new(5, Some(0.1), Some(0.01)).unwrap(),
            seed: 3,
            threads: 2,
            partitions: None,
            corpus_checksum: 9,
        };
        let iterations = 60;
        let private = PrivateOptions {
            epsilon: eps(1000.0),
            max_doc_tokens: cap,
            iterations,
        };
        let source = || NoiseSource::insecure_seeded(21);
        let mut t = Trainer::new_private(
            docs,
            spec.num_words,
            opts(Algorithm::Esca),
            private,
            source(),
        )
        .unwrap();
        let mut plain = Trainer::new(docs, spec.num_words, opts(Algorithm::Esca)).unwrap();
        for _ in 0..iterations {
            t.step();
            plain.step();
        }
        let r = t.privacy().unwrap();
        assert_eq!(r.spent().len(), iterations as usize + 1);
        let g = r.guarantee();
        let total: f64 = r.spent().iter().sum();
        assert!(total <= g.epsilon && total > g.epsilon * (1.0 - 1e-9));
        // The released model is the last release, not the true counts.
        let released = r.latest().unwrap();
        assert_ne!(released, t.word_topics());
        let vocab =
            topos_corpus::Vocabulary::new((0..spec.num_words).map(|i| format!("w{i}")).collect());
        let m = t.model(vocab.clone());
        assert_eq!(m.word_topic, released.to_dense());
        assert_eq!(m.privacy.as_ref(), Some(&g));
        assert_eq!((m.provenance.seed, m.provenance.num_tokens), (0, 0));
        assert_ne!(m.word_topic, plain.model(vocab).word_topic);
        // Strongly separated topics are still recovered at ε = 1000.
        let js = match_topics(&corpus.topics, &phi(released, 0.01), spec.num_words);
        let mean = js.iter().sum::<f64>() / js.len() as f64;
        assert!(
            mean < 0.05,
            "private run did not recover the topics: {js:?}"
        );

        // CGS and uncapped documents are refused.
        let e = Trainer::new_private(
            docs,
            spec.num_words,
            opts(Algorithm::Cgs),
            private,
            source(),
        );
        assert!(matches!(e, Err(TrainError::PrivateNeedsEsca)));
        let e = Trainer::new_private(
            corpus.docs.view(),
            spec.num_words,
            opts(Algorithm::Esca),
            PrivateOptions {
                max_doc_tokens: 10,
                ..private
            },
            source(),
        );
        assert!(matches!(
            e,
            Err(TrainError::DocumentOverCap { cap: 10, .. })
        ));
        // Zero iterations: the one release is the final one.
        let t0 = Trainer::new_private(
            docs,
            spec.num_words,
            opts(Algorithm::Esca),
            PrivateOptions {
                iterations: 0,
                ..private
            },
            source(),
        )
        .unwrap();
        assert_eq!(t0.privacy().unwrap().spent().len(), 1);
    }
}
