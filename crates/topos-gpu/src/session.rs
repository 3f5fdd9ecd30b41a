//! A training run on a GPU behind the same [`Session`] trait as the CPU trainer.
//!
//! The host keeps a CPU [`Trainer`] over the same corpus, options and initial assignments (so
//! the start is the CPU's, token for token): it provides the PDOW layout the device chunks are
//! cut from, and everything that reads the state (log-likelihood, the model file, checkpoints,
//! doc-topics) runs there after the assignments are copied back. The device holds the
//! assignments between reads; reading costs one copy back and a recount on the CPU.

use crate::chunks::longest_document;
use crate::device::{self, DeviceInfo};
use crate::engine::{self, Engine, EngineConfig, Start};
use crate::error::GpuError;
use crate::plan::{self, Plan, PlanInput};
use crate::word_topics::{self, WordTopicFormat, WordTopicLayout};
use std::time::Instant;
use topos_corpus::{Docs, Vocabulary};
use topos_model::{DocTopics, TopicModel};
use topos_train::{Checkpoint, IterationStats, Session, TrainError, TrainOptions, Trainer};

/// Default tokens per resident partition: at small K, partitions whose doc-topic rows stay near
/// L2 pay off (measured on the H100, NYTimes-shaped corpus: 7 partitions 1,986M tokens/s at
/// K = 1,024 against 1,766M for one); at large K every partition rebuilds every word's K-leaf
/// tree, so one partition wins (1,135M against 907M at K = 10,000).
pub fn default_partition_tokens(topics: u32) -> u64 {
    if topics <= 2048 {
        16_000_000
    } else {
        u64::from(u32::MAX)
    }
}

/// How to run on the GPU.
#[derive(Clone, Copy, Debug, Default)]
pub struct GpuOptions {
    /// Device ordinal (`None`: the first).
    pub ordinal: Option<usize>,
    /// Device memory the run may use (`None`: what is free).
    pub memory_budget: Option<u64>,
    /// Tokens per resident partition (`None`: [`default_partition_tokens`]).
    pub partition_tokens: Option<u64>,
    /// Stream the corpus even if it fits (tests and benchmarks of the streaming path).
    pub force_streaming: bool,
    /// The word-topic format (`None`: the planner's choice, or `TOPOS_GPU_WORD_TOPICS=dense|hybrid`
    /// for benchmarks).
    pub word_topics: Option<WordTopicFormat>,
    /// 64-bit doc-topic row entries even when every document is shorter than 65,536 tokens (tests
    /// of the wide path).
    pub force_wide_rows: bool,
}

/// A run on one GPU.
pub struct GpuSession<'a> {
    host: Trainer<'a>,
    engine: Engine,
    info: DeviceInfo,
    plan: Plan,
    iteration: u32,
    /// Whether the host's assignments are the device's.
    synced: bool,
}

fn to_train(e: GpuError) -> TrainError {
    TrainError::Device(e.to_string())
}

impl<'a> GpuSession<'a> {
    /// Opens the device, plans memory and uploads the corpus; starts from the CPU's initial
    /// assignments, or from `resume`.
    pub fn new(
        docs: Docs<'a>,
        num_words: usize,
        mut opts: TrainOptions,
        gpu: GpuOptions,
        resume: Option<Checkpoint>,
    ) -> Result<Self, GpuError> {
        let ctx = device::open(gpu.ordinal)?;
        let info = device::info(&ctx)?;
        let budget = gpu
            .memory_budget
            .map_or(info.free_bytes, |b| b.min(info.free_bytes));
        let topics = opts.hyper.num_topics;
        let longest = longest_document(docs);
        let word_tokens = word_topics::word_tokens(docs, num_words);
        let format = match gpu.word_topics {
            Some(f) => Some(f),
            None => match std::env::var("TOPOS_GPU_WORD_TOPICS") {
                Ok(v) => Some(v.parse().map_err(|e: String| {
                    GpuError::Unsupported(format!("TOPOS_GPU_WORD_TOPICS: {e}"))
                })?),
                Err(_) => None,
            },
        };
        let plan = plan::plan(&PlanInput {
            tokens: docs.num_tokens(),
            docs: docs.len() as u64,
            words: num_words as u64,
            topics: opts.hyper.num_topics,
            longest_doc: longest,
            budget,
            multiprocessors: info.multiprocessors,
            partition_tokens: gpu
                .partition_tokens
                .unwrap_or_else(|| default_partition_tokens(opts.hyper.num_topics)),
            force_streaming: gpu.force_streaming,
            hybrid_cells: word_topics::cells(&word_tokens, topics, WordTopicFormat::Hybrid),
            format,
        })?;
        let word_layout = WordTopicLayout::new(&word_tokens, topics, plan.format);
        opts.partitions = Some(plan.chunks);
        let host = match resume {
            None => Trainer::new(docs, num_words, opts.clone()),
            Some(ckpt) => {
                // The checkpoint's partition count belongs to the CPU's AD-LDA; on the GPU the
                // state is the assignments alone.
                let mut ckpt = ckpt;
                ckpt.partitions = plan.chunks as u32;
                Trainer::resume(docs, num_words, opts.clone(), ckpt)
            }
        }
        .map_err(|e| GpuError::Unsupported(e.to_string()))?;
        let cfg = EngineConfig {
            algorithm: opts.algorithm,
            topics: opts.hyper.num_topics,
            words: num_words as u32,
            alpha: opts.hyper.alpha,
            beta: opts.hyper.beta,
            seed: opts.seed,
            wide_rows: gpu.force_wide_rows || engine::wide_rows(longest),
        };
        let engine = Engine::new(
            ctx,
            cfg,
            &plan,
            Start {
                docs,
                layout: host.layout(),
                z: host.assignments(),
                words: &word_layout,
            },
            &info,
        )?;
        let iteration = host.iteration();
        Ok(Self {
            host,
            engine,
            info,
            plan,
            iteration,
            synced: true,
        })
    }

    /// The memory plan in use.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The device.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// Brings the host's assignments and counts up to the device's.
    fn sync(&mut self) -> Result<(), TrainError> {
        if !self.synced {
            let engine = &mut self.engine;
            let k = self.host.options().hyper.num_topics;
            self.host
                .load_assignments(self.iteration, |z| {
                    engine.download(z)?;
                    // A topic out of range would be a kernel bug: refuse it rather than count it.
                    use rayon::prelude::*;
                    match z.par_iter().position_any(|&t| u32::from(t) >= k) {
                        Some(i) => Err(GpuError::Unsupported(format!(
                            "internal error: the GPU assigned topic {} (K = {k}) to token {i}; please report it and train with --device cpu",
                            z[i]
                        ))),
                        None => Ok(()),
                    }
                })
                .map_err(to_train)?;
            self.synced = true;
        }
        Ok(())
    }
}

impl Session for GpuSession<'_> {
    fn device(&self) -> String {
        format!("cuda:{} ({})", self.info.ordinal, self.info.name)
    }
    fn iteration(&self) -> u32 {
        self.iteration
    }
    fn step(&mut self) -> Result<IterationStats, TrainError> {
        let start = Instant::now();
        let next = self.iteration + 1;
        self.engine.step(next).map_err(to_train)?;
        self.iteration = next;
        self.synced = false;
        let seconds = start.elapsed().as_secs_f64();
        Ok(IterationStats {
            iteration: next,
            seconds,
            tokens_per_second: self.host.docs().num_tokens() as f64 / seconds.max(1e-9),
        })
    }
    fn log_likelihood(&mut self) -> Result<f64, TrainError> {
        self.sync()?;
        Ok(self.host.log_likelihood())
    }
    fn model(&mut self, vocab: Vocabulary) -> Result<TopicModel, TrainError> {
        self.sync()?;
        Ok(self.host.model(vocab))
    }
    fn checkpoint(&mut self) -> Result<Checkpoint, TrainError> {
        self.sync()?;
        Ok(self.host.checkpoint())
    }
    fn doc_topics(&mut self) -> Result<&DocTopics, TrainError> {
        self.sync()?;
        Ok(self.host.doc_topics())
    }
    fn threads(&self) -> usize {
        self.host.threads()
    }
    fn partitions(&self) -> usize {
        self.engine.chunks()
    }
}
