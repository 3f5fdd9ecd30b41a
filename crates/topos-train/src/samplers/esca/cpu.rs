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
//!
//! **Without the token's own assignment** (`fcgs`, [`OwnAssignment::Removed`]). Eq. (1) reads
//! counts that still hold the token's current topic k₀, so k₀ gets the weight
//! e(k₀) = (A_dk₀ + α)(B_vk₀ + β)/(n_k₀ + Vβ), where the collapsed Gibbs conditional (Griffiths &
//! Steyvers 2004, Eq. 5, with the previous iteration's counts for the other tokens) gives it
//!
//! ```text
//! t(k₀) = (A_dk₀ − 1 + α)(B_vk₀ − 1 + β)/(n_k₀ − 1 + Vβ)
//! ```
//!
//! and every other topic keeps e(k) = t(k). Since A−1 < A and (B−1+β)/(n−1+Vβ) ≤ (B+β)/(n+Vβ)
//! whenever B + β ≤ n + Vβ (always: B ≤ n), t(k₀) ≤ e(k₀): ESCA's distribution is a proposal that
//! covers the target, and rejection sampling corrects it exactly. Draw k from e (the unchanged
//! ESCA draw above); k ≠ k₀ is accepted; k = k₀ is accepted with probability t(k₀)/e(k₀);
//! otherwise draw again. The accepted topic has probability ∝ e(k)·min(1, t(k)/e(k)) = t(k). The
//! expected number of draws is Σe/Σt, about 1 unless k₀ holds nearly all of e and little of t
//! (a lone token of a rare word in a short document); after [`MAX_PROPOSALS`] draws the target is
//! drawn directly in O(K), so the draw is exact whatever the counts. The ratio needs A_dk₀ and
//! B_vk₀ only when the proposal lands on k₀, and the random numbers come from the token's own
//! counter-based stream, so the result is as independent of threads and partitions as ESCA's.

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
    /// (n_k + Vβ)/(n_k − 1 + Vβ): the topic-total factor of fcgs's acceptance (empty for ESCA,
    /// which never reads it).
    own_total_factor: Vec<f64>,
}

impl<'a> Frozen<'a> {
    /// α_k, in `f64`.
    fn alpha_of(&self, k: usize) -> f64 {
        match &self.alpha_weights {
            None => self.alpha as f64,
            Some(w) => w[k] as f64,
        }
    }

    /// Derives the normalizers and the smoothing tree from the counts (and for
    /// [`OwnAssignment::Removed`] the acceptance's topic-total factors).
    pub fn new(
        doc_topics: &'a DocTopics,
        word_topics: &'a WordTopics,
        alpha: &topos_model::Alpha,
        beta: f64,
        own: OwnAssignment,
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
        let v_beta = word_topics.num_words() as f64 * beta;
        let own_total_factor = match own {
            OwnAssignment::Kept => Vec::new(),
            OwnAssignment::Removed => word_topics
                .totals
                .iter()
                .map(|&n| (n as f64 + v_beta) / (n as f64 - 1.0 + v_beta))
                .collect(),
        };
        Self {
            own_total_factor,
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

/// Whether a token's own assignment stays in the counts it is drawn from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OwnAssignment {
    /// SaberLDA's ESCA, Eq. (1): every count as the previous iteration left it.
    Kept,
    /// The collapsed Gibbs conditional given the other tokens' previous assignments: ESCA's
    /// draw as the proposal, corrected by rejection (module documentation).
    Removed,
}

/// Proposals from ESCA's distribution before the target is drawn directly.
pub const MAX_PROPOSALS: u32 = 16;

/// Reusable per-thread buffers.
pub struct Scratch {
    /// B̂_vk for the current word; equals β/(n_k+Vβ) outside the word's non-zeros.
    bhat: Vec<f32>,
    /// B_vk for the current word, 0 outside its non-zeros (fcgs's acceptance reads it).
    word_counts: Vec<u32>,
    word_tree: WaryTree,
    word_weights: Vec<f32>,
    cumulative: Vec<f32>,
}

impl Scratch {
    pub fn new(frozen: &Frozen<'_>) -> Self {
        Self {
            bhat: frozen.inv_norm.iter().map(|&x| x * frozen.beta).collect(),
            word_counts: vec![0; frozen.inv_norm.len()],
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
    own: OwnAssignment,
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
            if own == OwnAssignment::Removed {
                scratch.word_counts[k as usize] = c;
            }
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
        let word_counts = &scratch.word_counts[..];
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
            let cumulative = &scratch.cumulative[..dt.len()];
            // Alg. 2 line 8: choose the branch, then draw within it.
            let propose = |rng: &mut CounterRng| {
                let x = rng.next_f32() * (s + q);
                if x < s {
                    dt[search_prefix_f32(cumulative, x)]
                } else if x - s < word_total && !wt.is_empty() {
                    wt[scratch.word_tree.sample(rng.next_f32())]
                } else {
                    frozen.smoothing.sample(rng.next_f32()) as u16
                }
            };
            let k = match own {
                OwnAssignment::Kept => propose(&mut rng),
                OwnAssignment::Removed => {
                    let own_topic = z_part[src];
                    let mut k = propose(&mut rng);
                    let mut proposals = 1;
                    let mut acceptance = None;
                    while k == own_topic {
                        let doc = frozen.doc_topics.row(d);
                        let accept = *acceptance.get_or_insert_with(|| {
                            own_acceptance(frozen, count_in(doc, k), word_counts[k as usize], k)
                        });
                        if rng.next_f64() < accept {
                            break;
                        }
                        if proposals == MAX_PROPOSALS {
                            k = draw_target(frozen, doc, (wt, wc), own_topic, &mut rng);
                            break;
                        }
                        k = propose(&mut rng);
                        proposals += 1;
                    }
                    k
                }
            };
            z_part[src] = k;
        }
        // Restore the smoothing values.
        for &k in wt {
            scratch.bhat[k as usize] = frozen.inv_norm[k as usize] * frozen.beta;
            if own == OwnAssignment::Removed {
                scratch.word_counts[k as usize] = 0;
            }
        }
    }
}

/// The count of topic `k` in a sparse row (0 when absent).
fn count_in(row: (&[u16], &[u32]), k: u16) -> u32 {
    row.0.iter().position(|&t| t == k).map_or(0, |i| row.1[i])
}

/// t(k₀)/e(k₀) of the module documentation, from the exact counts (in `f64`): the probability of
/// keeping a proposal of the token's own topic `k0`, whose document count is `a` and word count
/// `b`:
///
/// ```text
/// t/e = (a − 1 + α)/(a + α) · (b − 1 + β)/(b + β) · (n + Vβ)/(n − 1 + Vβ)
/// ```
fn own_acceptance(frozen: &Frozen<'_>, a: u32, b: u32, k0: u16) -> f64 {
    let alpha = frozen.alpha_of(k0 as usize);
    let beta = frozen.beta as f64;
    let (a, b) = (a as f64, b as f64);
    let ratio = (a - 1.0 + alpha).max(0.0) / (a + alpha)
        * ((b - 1.0 + beta).max(0.0) / (b + beta))
        * frozen.own_total_factor[k0 as usize];
    ratio.min(1.0)
}

/// The target itself, in O(K): t(k) over every topic with the token's own assignment `k0`
/// removed, drawn by a linear search (the fallback after [`MAX_PROPOSALS`] rejections).
fn draw_target(
    frozen: &Frozen<'_>,
    doc: (&[u16], &[u32]),
    word: (&[u16], &[u32]),
    k0: u16,
    rng: &mut CounterRng,
) -> u16 {
    let topics = frozen.inv_norm.len();
    let beta = frozen.beta as f64;
    let v_beta = frozen.word_topics.num_words() as f64 * beta;
    let mut a = vec![0.0f64; topics];
    for (&k, &c) in doc.0.iter().zip(doc.1) {
        a[k as usize] = c as f64;
    }
    let mut b = vec![0.0f64; topics];
    for (&k, &c) in word.0.iter().zip(word.1) {
        b[k as usize] = c as f64;
    }
    let weight = |k: usize| {
        let own = if k == k0 as usize { 1.0 } else { 0.0 };
        let n = frozen.word_topics.totals[k] as f64 - own;
        (a[k] - own + frozen.alpha_of(k)).max(0.0) * (b[k] - own + beta).max(0.0) / (n + v_beta)
    };
    let total: f64 = (0..topics).map(weight).sum();
    let mut x = rng.next_f64() * total;
    for k in 0..topics {
        x -= weight(k);
        if x < 0.0 {
            return k as u16;
        }
    }
    k0
}

/// ESCA's CPU implementation for the registry.
pub struct EscaCpu {
    pub own: OwnAssignment,
}

struct EscaSweep<'a> {
    frozen: Frozen<'a>,
    seed: u64,
    iteration: u32,
    own: OwnAssignment,
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
            frozen: Frozen::new(a, input.word_topics, input.alpha, input.beta, self.own),
            seed: input.seed,
            iteration: input.iteration,
            own: self.own,
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
            self.own,
        );
    }
}
