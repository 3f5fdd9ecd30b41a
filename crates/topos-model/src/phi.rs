//! The topic-word distributions φ as one dense matrix: B̂ of SaberLDA Eq. (2),
//!
//! ```text
//! φ_kv = B̂_vk = (B_vk + β) / (n_k + Vβ),   n_k = Σ_v B_vk,
//! ```
//!
//! stored word-major (`phi[v * K + k]`) like B, so everything a token of word v needs — its K
//! probabilities, and their sum Σ_k φ_kv for the smoothing branch of the sparse decomposition — is
//! one contiguous row. Evaluation and inference hold φ fixed and read it for every token, so it is
//! computed once, in `f32` (half the memory of `f64`; the samplers and the GPU work in `f32` too).
//! The per-word sums are kept in `f64` because they are added to small sparse sums.

use crate::mem::{available_memory, check_budget};
use crate::{ModelError, TopicModel};
use rayon::prelude::*;

/// Dense φ (V × K, word-major) with the per-word sums Σ_k φ_kv; or the rows of some words only
/// ([`Phi::builder_for_words`]: what held-out evaluation during training reads, so its memory
/// is K × the words it meets, not V × K).
#[derive(Clone, Debug, PartialEq)]
pub struct Phi {
    num_words: usize,
    num_topics: usize,
    /// Dense rows (word-major, K each); empty when `sparse` holds the rows.
    probs: Vec<f32>,
    word_mass: Vec<f64>,
    /// For φ of some words only: the row of each word, or [`NO_ROW`].
    index: Option<Vec<u32>>,
    /// Above [`DENSE_MAX_CELLS`] cells: φ kept as the counts it is made of.
    sparse: Option<SparsePhi>,
}

/// Largest V × K for which φ is a dense matrix (1 GiB of `f32`); above, φ is kept sparse
/// ([`SparsePhi`]), in `topos eval` and in a run's held-out evaluation alike, so both report the
/// same value. At K = 32,768 over 100K words the dense matrix would be 13 GiB.
pub const DENSE_MAX_CELLS: u64 = 1 << 28;

/// The normalizers s_k = 1 / (n_k + Vβ) of Eq. (2) (SaberLDA), in `f64`: every computation of φ
/// or of a likelihood from counts (host or device) takes them from here, so their values agree
/// bit for bit.
pub fn normalizers(topic_totals: &[u64], num_words: usize, beta: f64) -> Vec<f64> {
    let v_beta = num_words as f64 * beta;
    topic_totals
        .iter()
        .map(|&n| 1.0 / (n as f64 + v_beta))
        .collect()
}

/// Whether φ over `num_words` × `num_topics` is kept dense.
pub fn dense_phi(num_words: usize, num_topics: usize) -> bool {
    (num_words as u64).saturating_mul(num_topics as u64) <= DENSE_MAX_CELLS
}

/// φ as the word-topic counts it is made of: φ_kw = (B_wk + β)·s_k with s_k = 1/(n_k + Vβ),
/// each stored word's non-zero counts in increasing topic order. The fold-in draws from it with
/// SparseLDA's three buckets (Yao et al. 2009, §3) instead of a dense row and its tree:
/// (A_dk + α)(B_wk + β)s_k = (A_dk + α)B_wk s_k [the word's non-zeros] + βA_dk s_k [the
/// document's non-zeros] + αβ s_k [one tree over K shared by every word].
#[derive(Clone, Debug, PartialEq)]
pub struct SparsePhi {
    pub beta: f64,
    /// s_k = 1 / (n_k + Vβ).
    pub inv: Vec<f64>,
    /// Row r is `offsets[r]..offsets[r + 1]` of `topics` / `counts`.
    pub offsets: Vec<u64>,
    pub topics: Vec<u16>,
    pub counts: Vec<u32>,
}

impl SparsePhi {
    /// The non-zero (topic, count) pairs of stored row `r`.
    #[inline]
    pub fn row(&self, r: usize) -> (&[u16], &[u32]) {
        let (a, b) = (self.offsets[r] as usize, self.offsets[r + 1] as usize);
        (&self.topics[a..b], &self.counts[a..b])
    }
}

/// The index entry of a word whose row a partial φ does not hold.
const NO_ROW: u32 = u32::MAX;

/// Builds φ for a chosen set of words from the sparse rows of the word-topic counts, fed in any
/// order and pieces ([`PhiBuilder::push_row`]); rows never pushed are all-zero counts. Each
/// value is computed as [`Phi::from_model`] computes it, so the rows are bit for bit those of
/// the whole φ.
pub struct PhiBuilder {
    phi: Phi,
    beta: f64,
    inv: Vec<f64>,
    /// The rows pushed so far, by stored row (a sparse φ assembles them in row order at the
    /// end).
    pending: Vec<Option<(Vec<u16>, Vec<u32>)>>,
}

impl PhiBuilder {
    /// Sets the counts of word `v` (non-zero (topic, count) pairs; ignored when `v` is not one
    /// of the builder's words).
    pub fn push_row(&mut self, v: u32, topics: &[u16], counts: &[u32]) {
        let k = self.phi.num_topics;
        let Some(index) = &self.phi.index else {
            return;
        };
        let r = index.get(v as usize).copied().unwrap_or(NO_ROW);
        if r == NO_ROW {
            return;
        }
        self.pending[r as usize] = Some((topics.to_vec(), counts.to_vec()));
        if self.phi.sparse.is_some() {
            return;
        }
        let row = &mut self.phi.probs[r as usize * k..(r as usize + 1) * k];
        for (&t, &c) in topics.iter().zip(counts) {
            let t = usize::from(t);
            row[t] = ((f64::from(c) + self.beta) * self.inv[t]) as f32;
        }
    }

    /// The finished φ, kept sparse whatever its size (tests of the sparse fold-in on small
    /// models).
    #[doc(hidden)]
    pub fn finish_sparse_for_tests(mut self) -> Phi {
        if self.phi.sparse.is_none() {
            self.phi.probs = Vec::new();
            self.phi.sparse = Some(SparsePhi {
                beta: self.beta,
                inv: self.inv.clone(),
                offsets: Vec::new(),
                topics: Vec::new(),
                counts: Vec::new(),
            });
        }
        self.finish()
    }

    /// The finished φ.
    pub fn finish(mut self) -> Phi {
        if let Some(sp) = self.phi.sparse.as_mut() {
            let smoothing: f64 = self.beta * self.inv.iter().sum::<f64>();
            sp.offsets.push(0);
            for (r, row) in self.pending.iter().enumerate() {
                let mut mass = smoothing;
                if let Some((t, c)) = row {
                    sp.topics.extend_from_slice(t);
                    sp.counts.extend_from_slice(c);
                    mass += t
                        .iter()
                        .zip(c)
                        .map(|(&t, &c)| f64::from(c) * self.inv[usize::from(t)])
                        .sum::<f64>();
                }
                sp.offsets.push(sp.topics.len() as u64);
                self.phi.word_mass[r] = mass;
            }
            return self.phi;
        }
        let k = self.phi.num_topics;
        for (mass, row) in self
            .phi
            .word_mass
            .iter_mut()
            .zip(self.phi.probs.chunks_exact(k))
        {
            *mass = row.iter().map(|&p| f64::from(p)).sum();
        }
        self.phi
    }
}

const MEMORY_HINT: &str =
    "the dense topic-word matrix is V × K × 4 bytes: prune the vocabulary, use fewer topics, or use a machine with more memory";

impl Phi {
    /// Bytes a dense φ over `num_words` × `num_topics` needs (4 per cell plus 8 per word), or
    /// `None` if that overflows.
    pub fn bytes_needed(num_words: usize, num_topics: usize) -> Option<u64> {
        (num_words as u64)
            .checked_mul(num_topics as u64)?
            .checked_mul(4)?
            .checked_add((num_words as u64).checked_mul(8)?)
    }

    /// φ of `model`, refused when it needs more memory than the system reports available.
    pub fn from_model(model: &TopicModel) -> Result<Phi, ModelError> {
        Self::from_model_within(model, available_memory())
    }

    /// φ of `model`, refused when it needs more than `max_bytes` (no limit with `None`).
    pub fn from_model_within(
        model: &TopicModel,
        max_bytes: Option<u64>,
    ) -> Result<Phi, ModelError> {
        model
            .validate()
            .map_err(|why| ModelError::Inconsistent { what: "model", why })?;
        let (v, k) = (model.num_words(), model.num_topics());
        if !dense_phi(v, k) {
            let words: Vec<u32> = (0..v as u32).collect();
            let mut b = Self::builder_for_words(
                v,
                model.hyper.beta,
                &model.topic_totals,
                &words,
                max_bytes,
            )?;
            for (w, row) in model.word_topic.chunks_exact(k).enumerate() {
                let topics: Vec<u16> = (0..k).filter(|&t| row[t] > 0).map(|t| t as u16).collect();
                let counts: Vec<u32> = row.iter().copied().filter(|&c| c > 0).collect();
                b.push_row(w as u32, &topics, &counts);
            }
            return Ok(b.finish());
        }
        let needed = Self::bytes_needed(v, k).unwrap_or(u64::MAX);
        check_budget("the topic-word matrix φ", needed, max_bytes, MEMORY_HINT)?;
        let beta = model.hyper.beta;
        // Eq. (2): one reciprocal per topic, then one multiply per cell.
        let inv = normalizers(&model.topic_totals, v, beta);
        let mut probs = vec![0f32; v * k];
        let mut word_mass = vec![0f64; v];
        probs
            .par_chunks_mut(k)
            .zip(model.word_topic.par_chunks(k))
            .zip(word_mass.par_iter_mut())
            .for_each(|((out, counts), mass)| {
                let mut sum = 0.0f64;
                for ((p, &c), &i) in out.iter_mut().zip(counts).zip(&inv) {
                    *p = ((f64::from(c) + beta) * i) as f32;
                    sum += f64::from(*p);
                }
                *mass = sum;
            });
        Ok(Phi {
            num_words: v,
            num_topics: k,
            probs,
            word_mass,
            index: None,
            sparse: None,
        })
    }

    /// A builder of φ for `words` only (ids below `num_words`; repeats ignored), from topic
    /// totals n_k and then the words' sparse rows: what held-out evaluation during a run reads.
    /// Refused when it needs more than `max_bytes`.
    pub fn builder_for_words(
        num_words: usize,
        beta: f64,
        topic_totals: &[u64],
        words: &[u32],
        max_bytes: Option<u64>,
    ) -> Result<PhiBuilder, ModelError> {
        let k = topic_totals.len();
        let mut index = vec![NO_ROW; num_words];
        let mut rows = 0u32;
        for &w in words {
            let slot = index.get_mut(w as usize).ok_or_else(|| {
                ModelError::Mismatch(format!("word id {w} is not below V = {num_words}"))
            })?;
            if *slot == NO_ROW {
                *slot = rows;
                rows += 1;
            }
        }
        let inv = normalizers(topic_totals, num_words, beta);
        if !dense_phi(num_words, k) {
            return Ok(PhiBuilder {
                phi: Phi {
                    num_words,
                    num_topics: k,
                    probs: Vec::new(),
                    word_mass: vec![0.0; rows as usize],
                    index: Some(index),
                    sparse: Some(SparsePhi {
                        beta,
                        inv: inv.clone(),
                        offsets: Vec::new(),
                        topics: Vec::new(),
                        counts: Vec::new(),
                    }),
                },
                beta,
                inv,
                pending: vec![None; rows as usize],
            });
        }
        let needed = Self::bytes_needed(rows as usize, k)
            .unwrap_or(u64::MAX)
            .saturating_add(4 * num_words as u64);
        check_budget("φ of the held-out words", needed, max_bytes, MEMORY_HINT)?;
        let smoothing: Vec<f32> = inv.iter().map(|&i| (beta * i) as f32).collect();
        let mut probs = Vec::with_capacity(rows as usize * k);
        for _ in 0..rows {
            probs.extend_from_slice(&smoothing);
        }
        Ok(PhiBuilder {
            phi: Phi {
                num_words,
                num_topics: k,
                probs,
                word_mass: vec![0.0; rows as usize],
                index: Some(index),
                sparse: None,
            },
            beta,
            inv,
            pending: vec![None; rows as usize],
        })
    }

    /// The row of word `v` in `probs`.
    #[inline]
    fn slot(&self, v: u32) -> usize {
        match &self.index {
            None => v as usize,
            Some(index) => {
                let r = index[v as usize];
                assert!(r != NO_ROW, "φ holds no row for word {v}");
                r as usize
            }
        }
    }

    /// φ given directly (word-major, `probs[v * K + k]`), e.g. the true topics of a synthetic
    /// corpus. Entries must be finite and non-negative, every topic must sum to 1 (within 10⁻³) and
    /// every word must have a positive probability under some topic.
    pub fn from_probabilities(
        num_words: usize,
        num_topics: usize,
        probs: Vec<f32>,
    ) -> Result<Phi, ModelError> {
        let bad = |why: String| ModelError::Inconsistent {
            what: "topic-word probabilities",
            why,
        };
        if num_words == 0 || num_topics == 0 {
            return Err(bad("no words or no topics".into()));
        }
        if Some(probs.len()) != num_words.checked_mul(num_topics) {
            return Err(bad(format!(
                "{} entries, expected {num_words} × {num_topics}",
                probs.len()
            )));
        }
        if let Some(i) = probs.iter().position(|p| !(p.is_finite() && *p >= 0.0)) {
            return Err(bad(format!("entry {i} is {}", probs[i])));
        }
        let mut column = vec![0f64; num_topics];
        for row in probs.chunks_exact(num_topics) {
            for (s, &p) in column.iter_mut().zip(row) {
                *s += f64::from(p);
            }
        }
        if let Some(k) = column.iter().position(|s| (s - 1.0).abs() > 1e-3) {
            return Err(bad(format!("topic {k} sums to {}", column[k])));
        }
        let word_mass: Vec<f64> = probs
            .chunks_exact(num_topics)
            .map(|row| row.iter().map(|&p| f64::from(p)).sum())
            .collect();
        // A word no topic can produce has likelihood 0 and no topic posterior.
        if let Some(v) = word_mass.iter().position(|&m| m <= 0.0) {
            return Err(bad(format!("word {v} has probability 0 under every topic")));
        }
        Ok(Phi {
            num_words,
            num_topics,
            probs,
            word_mass,
            index: None,
            sparse: None,
        })
    }

    /// Vocabulary size V.
    #[inline]
    pub fn num_words(&self) -> usize {
        self.num_words
    }

    /// Number of topics K.
    #[inline]
    pub fn num_topics(&self) -> usize {
        self.num_topics
    }

    /// φ_·v: the probabilities of word `v` under every topic.
    #[inline]
    ///
    /// # Panics
    /// For a sparse φ ([`Phi::sparse`]): use [`Phi::get`].
    pub fn row(&self, v: u32) -> &[f32] {
        assert!(self.sparse.is_none(), "a sparse φ has no dense rows");
        let k = self.num_topics;
        let r = self.slot(v);
        &self.probs[r * k..(r + 1) * k]
    }

    /// φ_kv (for a sparse φ, computed from its counts in `f64` and rounded).
    #[inline]
    pub fn get(&self, v: u32, k: usize) -> f32 {
        match &self.sparse {
            None => self.probs[self.slot(v) * self.num_topics + k],
            Some(sp) => {
                let (t, c) = sp.row(self.slot(v));
                let count = t
                    .binary_search(&(k as u16))
                    .map_or(0.0, |i| f64::from(c[i]));
                ((count + sp.beta) * sp.inv[k]) as f32
            }
        }
    }

    /// Σ_i weight_i · φ_{topic_i, v} over `(topic, weight)` pairs: the sparse part of a
    /// document's likelihood of word `v` (both representations, each in its own arithmetic).
    #[inline]
    pub fn weighted_sum(&self, v: u32, pairs: impl Iterator<Item = (u16, f64)>) -> f64 {
        match &self.sparse {
            None => {
                let row = self.row(v);
                pairs.map(|(k, a)| a * f64::from(row[usize::from(k)])).sum()
            }
            Some(sp) => {
                let (t, c) = sp.row(self.slot(v));
                pairs
                    .map(|(k, a)| {
                        let count = t.binary_search(&k).map_or(0.0, |i| f64::from(c[i]));
                        a * (count + sp.beta) * sp.inv[usize::from(k)]
                    })
                    .sum()
            }
        }
    }

    /// The counts φ is made of, when it is kept sparse (above [`DENSE_MAX_CELLS`] cells).
    pub fn sparse(&self) -> Option<&SparsePhi> {
        self.sparse.as_ref()
    }

    /// The stored row of word `v` (its index in [`SparsePhi::row`]).
    #[inline]
    pub fn stored_row(&self, v: u32) -> usize {
        self.slot(v)
    }

    /// Σ_k φ_kv (the Q_v / α of SaberLDA §2.3), summed in `f64` from the stored `f32` values.
    #[inline]
    pub fn word_mass(&self, v: u32) -> f64 {
        self.word_mass[self.slot(v)]
    }

    /// Σ_k α_k φ_kv for every word φ holds: the weight of the prior's share of a token's
    /// conditional (the smoothing branch of SaberLDA Alg. 2, α·Q_v in §2.3). Computed once per
    /// evaluation; a symmetric α keeps the product α·Σ_k φ_kv ([`Phi::word_mass`]), so its
    /// arithmetic is what it was before priors could be learned.
    pub fn prior_mass(&self, alpha: &crate::Alpha) -> PriorMass<'_> {
        if let Some(a) = alpha.symmetric_value() {
            return PriorMass {
                phi: self,
                symmetric: Some(a),
                masses: Vec::new(),
            };
        }
        assert_eq!(alpha.len(), self.num_topics, "α has one value per topic");
        let a = alpha.values();
        let masses = match &self.sparse {
            None => self
                .probs
                .par_chunks(self.num_topics.max(1))
                .map(|row| row.iter().zip(a).map(|(&p, &a)| a * f64::from(p)).sum())
                .collect(),
            Some(sp) => {
                // (B_vk + β)·s_k split as in the sparse buckets: β·Σ_k α_k s_k for every word,
                // plus Σ over the word's non-zeros of α_k B_vk s_k.
                let smoothing: f64 =
                    sp.beta * a.iter().zip(&sp.inv).map(|(a, s)| a * s).sum::<f64>();
                (0..sp.offsets.len().saturating_sub(1))
                    .into_par_iter()
                    .map(|r| {
                        let (t, c) = sp.row(r);
                        smoothing
                            + t.iter()
                                .zip(c)
                                .map(|(&t, &c)| {
                                    let t = usize::from(t);
                                    a[t] * f64::from(c) * sp.inv[t]
                                })
                                .sum::<f64>()
                    })
                    .collect()
            }
        };
        PriorMass {
            phi: self,
            symmetric: None,
            masses,
        }
    }

    /// Whether φ holds the row of word `v` (always, unless built for some words only).
    pub fn has_row(&self, v: u32) -> bool {
        (v as usize) < self.num_words
            && self
                .index
                .as_ref()
                .is_none_or(|index| index[v as usize] != NO_ROW)
    }

    /// The whole matrix, word-major (for φ of some words only: their rows, in the order the
    /// words were first given).
    pub fn as_slice(&self) -> &[f32] {
        assert!(self.sparse.is_none(), "a sparse φ has no dense matrix");
        &self.probs
    }
}

/// Σ_k α_k φ_kv by word ([`Phi::prior_mass`]).
pub struct PriorMass<'a> {
    phi: &'a Phi,
    symmetric: Option<f64>,
    /// By stored row, for an asymmetric α.
    masses: Vec<f64>,
}

impl PriorMass<'_> {
    /// Σ_k α_k φ_kv.
    #[inline]
    pub fn get(&self, v: u32) -> f64 {
        match self.symmetric {
            Some(a) => a * self.phi.word_mass(v),
            None => self.masses[self.phi.slot(v)],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Hyperparameters, Provenance};
    use topos_corpus::Vocabulary;

    fn model() -> TopicModel {
        let vocab = Vocabulary::new(["a", "b", "c"].map(String::from).into());
        let hyper = Hyperparameters::new(2, Some(0.5), Some(0.1)).unwrap();
        TopicModel::from_counts(vocab, hyper, vec![3, 0, 1, 2, 0, 4], Provenance::default())
    }

    #[test]
    fn matches_equation_2_and_columns_sum_to_one() {
        let m = model();
        let phi = Phi::from_model(&m).unwrap();
        // n = (4, 6), Vβ = 0.3
        assert!((phi.get(0, 0) - 3.1 / 4.3).abs() < 1e-7);
        assert!((phi.get(2, 1) - 4.1 / 6.3).abs() < 1e-7);
        assert!((phi.get(2, 0) - 0.1 / 4.3).abs() < 1e-7);
        for k in 0..2 {
            let s: f64 = (0..3).map(|v| f64::from(phi.get(v, k))).sum();
            assert!((s - 1.0).abs() < 1e-6);
        }
        let mass = f64::from(phi.get(1, 0)) + f64::from(phi.get(1, 1));
        assert_eq!(phi.word_mass(1), mass);
        assert_eq!(phi.row(1), &[phi.get(1, 0), phi.get(1, 1)]);
        let again = Phi::from_probabilities(3, 2, phi.as_slice().to_vec()).unwrap();
        assert_eq!(again, phi);
    }

    #[test]
    fn phi_of_some_words_has_the_rows_of_the_whole_phi() {
        let m = model();
        let whole = Phi::from_model(&m).unwrap();
        let mut b = Phi::builder_for_words(3, 0.1, &m.topic_totals, &[2, 0, 2], None).unwrap();
        b.push_row(1, &[0], &[99]);
        b.push_row(2, &[1], &[4]);
        b.push_row(0, &[0], &[3]);
        let part = b.finish();
        for v in [0, 2] {
            assert!(part.has_row(v));
            assert_eq!(part.row(v), whole.row(v));
            assert_eq!(part.word_mass(v), whole.word_mass(v));
        }
        assert!(!part.has_row(1) && !part.has_row(7));
        assert_eq!(part.as_slice().len(), 2 * 2);
    }

    #[test]
    fn refuses_beyond_the_memory_budget() {
        let m = model();
        let need = Phi::bytes_needed(3, 2).unwrap();
        assert_eq!(need, 3 * 2 * 4 + 3 * 8);
        assert!(Phi::from_model_within(&m, Some(need)).is_ok());
        let e = Phi::from_model_within(&m, Some(need - 1))
            .unwrap_err()
            .to_string();
        assert!(e.contains(&format!("needs {need} bytes")), "{e}");
        assert_eq!(Phi::bytes_needed(usize::MAX, 2), None);
    }

    #[test]
    fn explicit_probabilities_are_checked() {
        assert!(Phi::from_probabilities(2, 2, vec![0.5, 1.0, 0.5, 0.0]).is_ok());
        let e = Phi::from_probabilities(2, 2, vec![0.5, 1.0, 0.6, 0.0]).unwrap_err();
        assert!(e.to_string().contains("topic 0 sums to"), "{e}");
        assert!(Phi::from_probabilities(2, 2, vec![0.5, 1.0, 0.5]).is_err());
        assert!(Phi::from_probabilities(2, 2, vec![0.5, 1.0, f32::NAN, 0.0]).is_err());
        assert!(Phi::from_probabilities(2, 2, vec![1.5, 1.0, -0.5, 0.0]).is_err());
        let e = Phi::from_probabilities(2, 2, vec![1.0, 1.0, 0.0, 0.0]).unwrap_err();
        assert!(e.to_string().contains("word 1 has probability 0"), "{e}");
    }
}
