//! ESCA, the sparsity-aware E-step of SaberLDA (Chen et al., SaberLDA §2.2–2.4, Alg. 1 and 2;
//! ESCA itself is Zaheer et al. 2016).
//!
//! Every token draws its topic from the counts of the previous iteration, Eq. (1):
//!
//! ```text
//! p(k) ∝ (A_dk + α) · B̂_vk,   B̂_vk = (B_vk + β) / (n_k + Vβ)          (Eq. 2)
//! ```
//!
//! split as in Alg. 2 into the sparse document branch p₁(k) ∝ A_dk·B̂_vk (only the non-zeros of
//! the document's row, O(K_d)) and the dense word branch p₂(k) ∝ α·B̂_vk. Because all counts are
//! frozen during the sweep, every token is independent: the result depends only on the previous
//! counts and the token's own counter-based random numbers, never on the order or the thread that
//! samples it, so the model is bit-identical for any number of threads.
//!
//! **The dense branch.** SaberLDA builds one W-ary tree over all K entries of B̂_v per word. Kept
//! for every word that is V·K floats (4 GB at V = 100K, K = 10K); rebuilt per word per partition it
//! costs O(K) per word. We split p₂ exactly into two parts instead:
//!
//! ```text
//! α·B̂_vk = α·B_vk/(n_k + Vβ)  +  α·β/(n_k + Vβ)
//!          └ word part: only the non-zeros of B_v ┘   └ smoothing part: same for every word ┘
//! ```
//!
//! The word part gets a 32-ary tree (§3.2.4) over the non-zeros of B_v, built per word in
//! O(nnz(B_v)); the smoothing part one 32-ary tree over K shared by all words, built once per
//! iteration. Memory is O(non-zeros), sampling stays O(K_d + log₃₂ K) per token, and the draw
//! follows Eq. (1) exactly.

use crate::counts::WordTopics;
use crate::layout::Partition;
use topos_model::DocTopics;
use topos_sampling::{discrete::search_prefix_f32, CounterRng, Philox4x32, Stream, WaryTree};

/// Per-iteration values derived from the previous counts (M-step, Alg. 1 line 11).
pub struct Frozen<'a> {
    pub doc_topics: &'a DocTopics,
    pub word_topics: &'a WordTopics,
    /// 1 / (n_k + Vβ).
    pub inv_norm: Vec<f32>,
    /// 32-ary tree over w_k β / (n_k + Vβ).
    pub smoothing: WaryTree,
    /// α_k = `alpha` · w_k: a symmetric α is the factor with weights 1 (the arithmetic ESCA
    /// always had), an asymmetric one (`--optimize-priors`) the weights with factor 1.
    pub alpha: f32,
    /// w_k, when α is asymmetric.
    pub alpha_weights: Option<Vec<f32>>,
    pub beta: f32,
}

impl<'a> Frozen<'a> {
    /// Derives the normalizers and the smoothing tree from the counts.
    pub fn new(
        doc_topics: &'a DocTopics,
        word_topics: &'a WordTopics,
        alpha: &topos_model::Alpha,
        beta: f64,
    ) -> Self {
        let inv_norm: Vec<f32> =
            topos_model::phi::normalizers(&word_topics.totals, word_topics.num_words(), beta)
                .into_iter()
                .map(|x| x as f32)
                .collect();
        let beta32 = beta as f32;
        let (factor, alpha_weights) = match alpha.symmetric_value() {
            Some(a) => (a as f32, None),
            None => (
                1.0,
                Some(alpha.values().iter().map(|&a| a as f32).collect::<Vec<_>>()),
            ),
        };
        let smoothing = match &alpha_weights {
            None => {
                WaryTree::from_weights(&inv_norm.iter().map(|&x| x * beta32).collect::<Vec<_>>())
            }
            Some(w) => WaryTree::from_weights(
                &inv_norm
                    .iter()
                    .zip(w)
                    .map(|(&x, &a)| a * (x * beta32))
                    .collect::<Vec<_>>(),
            ),
        };
        Self {
            doc_topics,
            word_topics,
            inv_norm,
            smoothing,
            alpha: factor,
            alpha_weights,
            beta: beta32,
        }
    }
}

/// Reusable per-thread buffers.
pub struct Scratch {
    /// B̂_vk for the current word; equals β/(n_k+Vβ) outside the word's non-zeros.
    bhat: Vec<f32>,
    word_tree: WaryTree,
    word_weights: Vec<f32>,
    cumulative: Vec<f32>,
}

impl Scratch {
    pub fn new(frozen: &Frozen<'_>) -> Self {
        Self {
            bhat: frozen.inv_norm.iter().map(|&x| x * frozen.beta).collect(),
            word_tree: WaryTree::new(),
            word_weights: Vec::new(),
            cumulative: vec![0.0; frozen.inv_norm.len()],
        }
    }
}

/// Samples new topics for every token of partition `p` (E-step, Alg. 1 lines 5–7), writing them to
/// `z_part` (the partition's slice of the assignments in corpus order).
pub fn sweep_partition(
    p: &Partition,
    z_part: &mut [u16],
    frozen: &Frozen<'_>,
    scratch: &mut Scratch,
    seed: u64,
    iteration: u32,
) {
    let gen = Philox4x32::new(seed);
    let alpha = frozen.alpha;
    let smoothing_total = frozen.smoothing.total();
    for (wi, &w) in p.words.iter().enumerate() {
        let (wt, wc) = frozen.word_topics.row(w);
        // Load B̂_v into the dense scratch row and build the word part's tree.
        scratch.word_weights.clear();
        for (&k, &c) in wt.iter().zip(wc) {
            let inv = frozen.inv_norm[k as usize];
            scratch.bhat[k as usize] = (c as f32 + frozen.beta) * inv;
            scratch.word_weights.push(match &frozen.alpha_weights {
                None => c as f32 * inv,
                Some(a) => a[k as usize] * (c as f32 * inv),
            });
        }
        scratch
            .word_tree
            .rebuild(scratch.word_weights.iter().copied());
        let word_total = alpha * scratch.word_tree.total();
        let q = word_total + alpha * smoothing_total;

        let bhat = &scratch.bhat[..];
        // Repeated occurrences of the word in one document are adjacent in PDOW order and see
        // the same frozen p₁, so its prefix sum is computed once per (document, word) pair.
        let mut cached_doc = usize::MAX;
        let mut s = 0.0f32;
        let mut dt: &[u16] = &[];
        for e in p.word_range(wi) {
            let src = p.token_src[e] as usize;
            let d = p.docs.start + p.token_doc[e] as usize;
            if d != cached_doc {
                cached_doc = d;
                let (topics, counts) = frozen.doc_topics.row(d);
                dt = topics;
                // Element-wise product over the document's non-zeros (Alg. 2 lines 4–7), into a
                // preallocated prefix-sum buffer (a row never has more than K non-zeros).
                s = 0.0;
                for ((slot, &k), &c) in scratch.cumulative.iter_mut().zip(topics).zip(counts) {
                    s += c as f32 * bhat[k as usize];
                    *slot = s;
                }
            }
            let mut rng =
                CounterRng::from_generator(gen, Stream::Train, iteration, p.first_key + src as u64);
            let x = rng.next_f32() * (s + q);
            // Alg. 2 line 8: choose the branch.
            let k = if x < s {
                dt[search_prefix_f32(&scratch.cumulative[..dt.len()], x)]
            } else if x - s < word_total && !wt.is_empty() {
                wt[scratch.word_tree.sample(rng.next_f32())]
            } else {
                frozen.smoothing.sample(rng.next_f32()) as u16
            };
            z_part[src] = k;
        }
        // Restore the smoothing values.
        for &k in wt {
            scratch.bhat[k as usize] = frozen.inv_norm[k as usize] * frozen.beta;
        }
    }
}

/// ESCA's CPU implementation for the registry.
pub struct EscaCpu;

struct EscaSweep<'a> {
    frozen: Frozen<'a>,
    seed: u64,
    iteration: u32,
}

impl crate::sampler::CpuSampler for EscaCpu {
    fn needs_doc_topics(&self) -> bool {
        true
    }
    fn prepare<'a>(
        &self,
        input: crate::sampler::SweepInput<'a>,
    ) -> Box<dyn crate::sampler::PartitionSweep + 'a> {
        let a = input
            .doc_topics
            .expect("ESCA reads the document-topic counts it asked for");
        Box::new(EscaSweep {
            frozen: Frozen::new(a, input.word_topics, input.alpha, input.beta),
            seed: input.seed,
            iteration: input.iteration,
        })
    }
}

impl crate::sampler::PartitionSweep for EscaSweep<'_> {
    fn sweep(&self, partition: &Partition, z: &mut [u16]) {
        let mut scratch = Scratch::new(&self.frozen);
        sweep_partition(
            partition,
            z,
            &self.frozen,
            &mut scratch,
            self.seed,
            self.iteration,
        );
    }
}
