//! Trained LDA models: what training produces and every later command reads.
//!
//! * [`model`]: the in-memory model (word-topic counts B, hyperparameters, provenance) and the
//!   document-topic counts A of the training documents.
//! * [`file`]: the `.tmod` model file and the `.doctopics` side file.
//! * [`phi`]: B̂ = (B + β) / (n_k + Vβ) (SaberLDA Eq. 2) as a dense matrix, the form every
//!   evaluation and inference routine reads.
//! * [`topics`]: what a topic is about: top words and topic sizes.
//! * [`likelihood`]: training log-likelihood per token from point estimates.
//! * [`foldin`]: the Gibbs fold-in sampler with φ fixed, shared by [`heldout`] and [`infer`].
//! * [`heldout`]: held-out log-likelihood and perplexity by document completion.
//! * [`coherence`]: UMass topic coherence.
//! * [`eval`]: all of the above in one serializable report.
//! * [`infer`]: topic mixtures of unseen documents.

pub mod error;
pub mod file;
pub mod mem;
pub mod model;
pub mod phi;
pub mod topics;

pub use error::ModelError;
pub use file::{doc_topics_path, DOC_TOPICS_KIND, MODEL_KIND, MODEL_VERSION};
pub use model::{DocTopics, HyperparameterError, Hyperparameters, Provenance, TopicModel};
pub use phi::Phi;
pub use topics::{summarize, top_word_ids, topic_sizes, TopWord, TopicSummary, TopicsReport};
