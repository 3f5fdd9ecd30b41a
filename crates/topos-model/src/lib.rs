//! Trained LDA models: what training produces and every later command reads.

pub mod model;

pub use model::{DocTopics, HyperparameterError, Hyperparameters, Provenance, TopicModel};
