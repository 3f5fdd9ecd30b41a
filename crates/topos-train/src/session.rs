//! One trait over the places a model can be trained: the CPU [`Trainer`] and the GPU engine of
//! `topos-gpu` (like candle's CPU and CUDA devices behind one interface). The binary drives a
//! `dyn Session` and does not care which one it has.
//!
//! Reading the state (`log_likelihood`, `model`, `checkpoint`, `doc_topics`) takes `&mut self`
//! because a GPU session keeps the assignments on the device and copies them back only when they
//! are read.

use crate::{Checkpoint, IterationStats, TrainError, Trainer};
use topos_corpus::Vocabulary;
use topos_model::{DocTopics, TopicModel};

/// A training run on some device.
pub trait Session {
    /// Where the run executes, for people ("cpu (16 threads)", "cuda:0 (NVIDIA H100 80GB HBM3)").
    fn device(&self) -> String;
    /// Completed iterations.
    fn iteration(&self) -> u32;
    /// Runs one iteration (E-step and M-step).
    fn step(&mut self) -> Result<IterationStats, TrainError>;
    /// Training log-likelihood per token of the current state.
    fn log_likelihood(&mut self) -> Result<f64, TrainError>;
    /// The model as it stands.
    fn model(&mut self, vocab: Vocabulary) -> Result<TopicModel, TrainError>;
    /// The state for `--resume`.
    fn checkpoint(&mut self) -> Result<Checkpoint, TrainError>;
    /// Document-topic counts of the training documents.
    fn doc_topics(&mut self) -> Result<&DocTopics, TrainError>;
    /// Worker threads on the host.
    fn threads(&self) -> usize;
    /// Document partitions (CPU) or chunks (GPU).
    fn partitions(&self) -> usize;
}

impl Session for Trainer<'_> {
    fn device(&self) -> String {
        format!("cpu ({} threads)", self.threads())
    }
    fn iteration(&self) -> u32 {
        Trainer::iteration(self)
    }
    fn step(&mut self) -> Result<IterationStats, TrainError> {
        Ok(Trainer::step(self))
    }
    fn log_likelihood(&mut self) -> Result<f64, TrainError> {
        Ok(Trainer::log_likelihood(self))
    }
    fn model(&mut self, vocab: Vocabulary) -> Result<TopicModel, TrainError> {
        Ok(Trainer::model(self, vocab))
    }
    fn checkpoint(&mut self) -> Result<Checkpoint, TrainError> {
        Ok(Trainer::checkpoint(self))
    }
    fn doc_topics(&mut self) -> Result<&DocTopics, TrainError> {
        Ok(Trainer::doc_topics(self))
    }
    fn threads(&self) -> usize {
        Trainer::threads(self)
    }
    fn partitions(&self) -> usize {
        Trainer::partitions(self)
    }
}
