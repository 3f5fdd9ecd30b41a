//! Trained LDA models: what training produces and every later command reads.
//!
//! * [`model`]: the in-memory model (word-topic counts B, hyperparameters, provenance) and the
//!   document-topic counts A of the training documents.
//! * [`mod@file`]: the `.tmod` model file (version 2 records the differential-privacy
//!   [`Guarantee`] of a privately trained model) and the `.doctopics` side file.
//! * [`phi`]: B̂ = (B + β) / (n_k + Vβ) (SaberLDA Eq. 2) as a dense matrix, the form every
//!   evaluation and inference routine reads.
//! * [`topics`]: what a topic is about: top words and topic sizes.
//! * [`likelihood`]: training log-likelihood per token from point estimates.
//! * [`foldin`]: the Gibbs fold-in sampler with φ fixed, shared by [`heldout`] and [`mod@infer`].
//! * [`heldout`]: held-out log-likelihood and perplexity by document completion.
//! * [`coherence`]: topic coherence: UMass, and NPMI, UCI and C_V over sliding windows.
//! * [`eval`]: all of the above in one serializable report.
//! * [`mod@infer`]: topic mixtures of unseen documents.
//! * [`mem`]: memory accounting for the large dense arrays.
//! * [`writer`]: piecewise writers of the model file and its side file, for runs whose state
//!   lives on a device and streams back a piece at a time.
//!
//! Everything random draws from the counter-based generator of `topos-sampling`
//! (`Stream::Infer`) keyed by global token index, and every parallel sum is grouped independently
//! of the number of threads: results are bit-identical on 1 or N threads.

pub mod coherence;
pub mod error;
pub mod eval;
pub mod file;
pub mod foldin;
pub mod heldout;
pub mod infer;
pub mod likelihood;
pub mod mem;
pub mod model;
pub mod phi;
pub mod topics;
pub mod writer;

pub use coherence::{
    umass_coherence, umass_coherence_of, window_coherence, window_coherence_of, Coherence,
    WindowCoherence, WindowCounting, WindowMeasure,
};
pub use error::ModelError;
pub use eval::{evaluate, EvalOptions, Evaluation};
pub use file::{doc_topics_path, DOC_TOPICS_KIND, MODEL_KIND, MODEL_VERSION};
pub use foldin::{FoldIn, FoldInOptions, FoldedDoc};
pub use heldout::{heldout_arguments, heldout_from_arguments, heldout_log_likelihood, HeldOut};
pub use infer::{doc_to_ids, infer, infer_dense, DocTheta, InferOptions, TopicWeight};
pub use likelihood::log_likelihood_per_token;
pub use model::privacy_line;
pub use model::{Alpha, DocTopics, HyperparameterError, Hyperparameters, Provenance, TopicModel};
pub use phi::Phi;
pub use topics::{summarize, top_word_ids, topic_sizes, TopWord, TopicSummary, TopicsReport};
pub use topos_privacy::Guarantee;
pub use writer::{DocTopicsWriter, ModelWriter};
