//! The CUDA device: [`CudaEngine`], a run held on one GPU, behind [`crate::Engine`].

use super::engine::{self, Engine as Kernels, EngineConfig, Start, StartTopics};
use super::plan::{self, Mode, Plan, PlanInput};
use super::word_topics::{self, WordTopicFormat, WordTopicLayout};
use super::Cuda;
use crate::counts::WordTopics;
use crate::device::Device;
use crate::engine::{Engine, EngineSetup};
use crate::layout::PartitionShape;
use crate::memory::{MemoryEstimate, RunShape};
use crate::sampler::Sampler;
use crate::transport::Transport;
use crate::TrainError;
use std::ops::Range;
use topos_cuda::device::{self, DeviceInfo};
use topos_cuda::tuning::Tuning;
use topos_cuda::GpuError;

fn to_train(e: GpuError) -> TrainError {
    TrainError::Device(e.to_string())
}

impl Device for Cuda {
    fn name(&self) -> &'static str {
        "cuda"
    }
    fn summary(&self) -> &'static str {
        "one NVIDIA GPU (cuda:N picks one; cuda:all every GPU of this machine, NCCL between them); the driver, NVRTC and NCCL are loaded at run time"
    }
    fn usable(&self) -> Result<(), String> {
        match device::device_count() {
            Err(e) => Err(e.to_string()),
            Ok(0) => Err(GpuError::NoDevice.to_string()),
            Ok(_) if !device::nvrtc_present() => Err(GpuError::NoNvrtc.to_string()),
            Ok(_) => Ok(()),
        }
    }
    fn present(&self) -> bool {
        device::driver_present()
    }
    fn runs(&self, sampler: &dyn Sampler) -> bool {
        sampler.gpu().is_some()
    }
    fn settings_refusal(
        &self,
        sampler: &dyn Sampler,
        settings: &crate::sampler::SamplerSettings,
    ) -> Option<String> {
        super::settings_refusal(sampler, settings)
    }
    fn prepare(&self, ordinal: Option<usize>) {
        if device::driver_present() {
            device::prewarm(ordinal);
        }
    }
    fn release_prepared(&self) {
        device::abandon_prewarm();
    }
    fn joins_workers(&self) -> bool {
        true
    }
    fn count(&self) -> Result<usize, String> {
        device::device_count().map_err(|e| e.to_string())
    }
    fn open(
        &self,
        ordinal: Option<usize>,
        setup: EngineSetup,
    ) -> Result<Box<dyn Engine>, TrainError> {
        if let Some(crate::sampler::GpuImplementation::Engine(open)) = setup.sampler.gpu() {
            return open(ordinal, setup);
        }
        Ok(Box::new(
            CudaEngine::open(ordinal, setup).map_err(to_train)?,
        ))
    }
    fn host_memory(&self, shape: &RunShape, _sampler: &dyn Sampler) -> MemoryEstimate {
        // Streaming is decided when the device's memory is known; estimate the resident case
        // (the run prints the plan, and a streamed plan adds its page-locked chunks).
        super::host_memory(shape, false, false)
    }
}

/// A run on one GPU.
pub struct CudaEngine {
    kernels: Kernels,
    info: DeviceInfo,
    plan: Plan,
    /// Seconds of each step of opening (context, plan, partitions, compile, upload, counts).
    open_seconds: Vec<(&'static str, f64)>,
    iteration: u32,
    threads: usize,
    /// Set between `sample` and `commit`.
    sampled: bool,
    /// This process's share of a multi-process run (`None`: the whole corpus).
    shard: Option<crate::shard::Shard>,
    transport: std::sync::Arc<dyn Transport>,
    /// Training tokens of the whole run.
    global_tokens: u64,
    /// The GPUs' communicator, when every worker has NCCL (else the exchange goes through the
    /// host and the transport).
    comm: Option<topos_cuda::nccl::DeviceComm>,
    exchanges: crate::exchange::ExchangeReport,
    /// What the last sample's tokens skipped (ezlda).
    counters: Option<crate::sampler::SweepCounters>,
}

impl CudaEngine {
    /// Opens the device, plans its memory, uploads the corpus in pieces and draws (or loads)
    /// the start on the device.
    pub fn open(ordinal: Option<usize>, setup: EngineSetup) -> Result<Self, GpuError> {
        if setup.fixed_counts.is_some() {
            return Err(GpuError::Unsupported(
                "fixed counts (topos update, --seed-words) run on the CPU only for now; use --device cpu".into(),
            ));
        }
        // The kernels take one α for every topic; a learned (asymmetric) one runs on the CPU.
        let Some(alpha) = setup.hyper.alpha.symmetric_value() else {
            return Err(GpuError::Unsupported(
                "an asymmetric alpha (learned by --optimize-priors) runs on the CPU only for now; use --device cpu".into(),
            ));
        };
        let kernel = setup
            .sampler
            .gpu()
            .and_then(|g| g.kernel())
            .ok_or_else(|| {
                GpuError::Unsupported(format!(
                    "the {} sampler has no kernel in the shared GPU engine; use --device cpu",
                    setup.sampler.name()
                ))
            })?;
        let mut clock = engine::Clock::new();
        let workers = setup.transport.workers();
        // Several processes: each takes an equal share of the tokens (the GPU samplers read
        // only frozen counts, so the model does not depend on the split) and, unless told,
        // the GPU of its rank on its machine.
        let shard = if workers > 1 {
            let whole = setup.docs.view();
            Some(
                crate::shard::Shard::of(whole, workers, setup.transport.rank(), workers)
                    .map_err(|e| GpuError::Unsupported(e.to_string()))?,
            )
        } else {
            None
        };
        let ordinal = match (ordinal, &shard) {
            (None, Some(_)) => {
                let count = device::device_count()?;
                crate::transport::local_rank().map(|r| r % count.max(1))
            }
            (o, _) => o,
        };
        let global_tokens = setup.docs.view().num_tokens();
        let docs_owned = match &shard {
            Some(s) => s.docs_of(&setup.docs),
            None => setup.docs.clone(),
        };
        let ctx = device::open(ordinal)?;
        let info = device::info(&ctx)?;
        clock.lap("context");
        let budget = setup
            .device
            .memory_budget
            .map_or(info.free_bytes, |b| b.min(info.free_bytes));
        let docs = docs_owned.view();
        if shard.is_some() {
            // A worker's corpus was opened without reading every token: check its share's.
            let bound = docs.max_word_id_bound();
            if bound as usize > setup.num_words {
                return Err(GpuError::Unsupported(format!(
                    "the corpus uses word id {} but the vocabulary has only {} words; the corpus file is inconsistent",
                    bound - 1,
                    setup.num_words
                )));
            }
        }
        let topics = setup.hyper.num_topics;
        let num_words = setup.num_words;
        let longest = super::chunks::longest_document(docs);
        let word_tokens = word_topics::word_tokens(docs, num_words);
        let asked = setup
            .device
            .word_topics
            .map(str::to_string)
            .or_else(|| Tuning::get().word_topics.clone());
        let mut format = match asked {
            Some(v) => Some(
                v.parse::<WordTopicFormat>()
                    .map_err(|e| GpuError::Unsupported(format!("TOPOS_GPU_WORD_TOPICS: {e}")))?,
            ),
            None => None,
        };
        if shard.is_some() {
            // The exchange adds the processes' cells: only dense rows line up.
            if format == Some(WordTopicFormat::Hybrid) {
                return Err(GpuError::Unsupported(
                    "several GPU processes need the dense word-topic format; unset TOPOS_GPU_WORD_TOPICS=hybrid".into(),
                ));
            }
            format = Some(WordTopicFormat::Dense);
        }
        // Several engines sum B′ between them, so they keep two copies; one engine may keep one
        // (plan.rs, CountCopies).
        let forced = match (setup.device.one_count_copy, Tuning::get().count_copies) {
            (true, _) | (false, Some(1)) => Some(plan::CountCopies::One),
            (false, Some(_)) => Some(plan::CountCopies::Two),
            (false, None) => None,
        };
        let copies = match (&shard, forced) {
            (Some(_), Some(plan::CountCopies::One)) => {
                return Err(GpuError::Unsupported(
                    "several GPUs exchange their next counts, so each keeps two copies; unset TOPOS_GPU_COUNT_COPIES=1".into(),
                ))
            }
            (Some(_), _) => Some(plan::CountCopies::Two),
            (None, f) => f,
        };
        let plan = plan::plan(&PlanInput {
            tokens: docs.num_tokens(),
            docs: docs.len() as u64,
            words: num_words as u64,
            topics,
            longest_doc: longest,
            budget,
            multiprocessors: info.multiprocessors,
            partition_tokens: setup
                .device
                .partition_tokens
                .unwrap_or_else(|| super::default_partition_tokens(topics)),
            force_streaming: setup.device.force_streaming,
            hybrid_cells: word_topics::cells(&word_tokens, topics, WordTopicFormat::Hybrid),
            format,
            three_branch: kernel.three_branch,
            copies,
        })
        .map_err(|e| GpuError::Plan(e.to_string()))?;
        let words = WordTopicLayout::new(&word_tokens, topics, plan.format);
        drop(word_tokens);
        clock.lap("plan");
        let shapes: Vec<PartitionShape> = crate::layout::partition_ranges(docs, plan.chunks)
            .into_iter()
            .map(|r| PartitionShape::new(docs, r))
            .collect();
        clock.lap("partitions");
        let (start_topics, iteration) = match &setup.start {
            crate::engine::Start::Fresh => (StartTopics::Fresh, 0),
            crate::engine::Start::Resume(c) => {
                if c.assignments.len() as u64 != global_tokens {
                    return Err(GpuError::Unsupported(format!(
                        "checkpoint does not match this run: {} tokens in the checkpoint, {} in the corpus",
                        c.assignments.len(),
                        global_tokens
                    )));
                }
                let mine = match &shard {
                    Some(s) => &c.assignments[s.tokens.start as usize..s.tokens.end as usize],
                    None => &c.assignments[..],
                };
                (StartTopics::Given(mine), c.header.iteration)
            }
        };
        let cfg = EngineConfig {
            exclude_own_assignment: kernel.exclude_own_assignment,
            three_branch: kernel.three_branch,
            mh_steps: kernel.metropolis_hastings.then(|| {
                crate::samplers::mh::MhSteps::of(
                    &setup.settings,
                    crate::sampler::SettingDefaults::Gpu,
                )
                .get()
            }),
            topics,
            words: num_words as u32,
            alpha,
            beta: setup.hyper.beta,
            seed: setup.seed,
            wide_rows: setup.device.wide_rows || engine::wide_rows(longest),
            key_base: shard.as_ref().map_or(0, |s| s.tokens.start),
        };
        let kernels = Kernels::new(
            ctx,
            cfg,
            &plan,
            Start {
                docs,
                shapes: &shapes,
                topics: start_topics,
                words: &words,
                piece_tokens: super::PIECE_TOKENS,
            },
            &info,
        )?;
        let joined = std::time::Instant::now();
        let mut kernels = kernels;
        let mut comm = match &shard {
            Some(_) => join_nccl(
                &kernels.exchange_stream(),
                kernels.ordinal(),
                setup.transport.as_ref(),
            )?,
            None => None,
        };
        if shard.is_some() {
            // Every worker starts from the whole corpus's counts, as one device would.
            kernels.exchange_start_counts(setup.transport.as_ref(), comm.as_mut())?;
        }
        let mut open_seconds = clock.laps;
        open_seconds.extend(kernels.open_seconds().iter().cloned());
        if comm.is_some() {
            open_seconds.push(("nccl", joined.elapsed().as_secs_f64()));
        }
        Ok(Self {
            kernels,
            info,
            plan,
            open_seconds,
            iteration,
            threads: setup.threads,
            sampled: false,
            shard,
            transport: setup.transport,
            global_tokens,
            comm,
            exchanges: Default::default(),
            counters: None,
        })
    }

    /// The memory plan in use.
    pub fn memory_plan(&self) -> &Plan {
        &self.plan
    }

    /// mh's stationarity test: one sweep with each token's chain started from `starts`, the
    /// state left as it was ([`engine::Engine::mh_sweep_from`]).
    #[doc(hidden)]
    pub fn mh_sweep_from(
        &mut self,
        starts: &[u16],
        iteration: u32,
        own_kept: bool,
    ) -> Result<Vec<u16>, GpuError> {
        self.kernels.mh_sweep_from(starts, iteration, own_kept)
    }

    /// Each resident partition's PDOW arrays read back (tests; `None` when streamed).
    #[doc(hidden)]
    pub fn pdow_arrays(&mut self) -> Result<Option<Vec<engine::PdowArrays>>, GpuError> {
        self.kernels.pdow_arrays()
    }

    /// The device.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }
}

impl Engine for CudaEngine {
    fn setting_defaults(&self) -> crate::sampler::SettingDefaults {
        crate::sampler::SettingDefaults::Gpu
    }
    fn describe(&self) -> String {
        format!("cuda:{} ({})", self.info.ordinal, self.info.name)
    }
    fn threads(&self) -> usize {
        self.threads
    }
    fn partitions(&self) -> usize {
        self.kernels.chunks()
    }
    fn iteration(&self) -> u32 {
        self.iteration
    }
    fn plan(&self) -> Option<serde_json::Value> {
        let mut v = serde_json::to_value(&self.plan).ok()?;
        if let Some(o) = v.as_object_mut() {
            let pageable = self.kernels.host_memory_pageable();
            let mut summary = self.plan.to_string();
            if pageable {
                summary.push_str(PAGEABLE_NOTE);
            }
            o.insert("summary".into(), summary.into());
            o.insert("streamed".into(), (self.plan.mode == Mode::Streamed).into());
            o.insert("host_memory_pageable".into(), pageable.into());
            let open: serde_json::Map<String, serde_json::Value> = self
                .open_seconds
                .iter()
                .map(|(k, v)| (k.to_string(), (*v).into()))
                .collect();
            o.insert("open_seconds".into(), open.into());
        }
        Some(v)
    }
    fn sample(&mut self) -> Result<(), TrainError> {
        self.kernels.sweep(self.iteration + 1).map_err(to_train)?;
        // ezlda's tallies (waits for the sweep; the commit that follows waits anyway).
        self.counters = self
            .kernels
            .skip_tallies()
            .map_err(to_train)?
            .map(|[construction, fin]| crate::sampler::SweepCounters {
                tokens: self.kernels.tokens(),
                skipped_construction: construction,
                skipped_final: fin,
            });
        self.sampled = true;
        Ok(())
    }
    fn sweep_counters(&self) -> Option<crate::sampler::SweepCounters> {
        self.counters
    }
    fn exchange(&mut self, transport: &dyn Transport) -> Result<(), TrainError> {
        if transport.workers() == 1 {
            return Ok(());
        }
        crate::engine::check_sampled(self.sampled)?;
        let (seconds, way) = self
            .kernels
            .exchange_counts(transport, self.comm.as_mut())
            .map_err(to_train)?;
        self.exchanges.count(way);
        self.exchanges.seconds += seconds;
        self.exchanges.slices = self.kernels.exchange_slices();
        Ok(())
    }
    fn exchange_report(&self) -> Option<crate::exchange::ExchangeReport> {
        self.shard.as_ref().map(|_| self.exchanges.clone())
    }
    fn commit(&mut self) -> Result<(), TrainError> {
        crate::engine::check_sampled(self.sampled)?;
        self.kernels.commit(self.iteration + 1).map_err(to_train)?;
        self.iteration += 1;
        self.sampled = false;
        Ok(())
    }
    fn log_likelihood(&mut self) -> Result<f64, TrainError> {
        if self.shard.is_none() {
            return self.kernels.log_likelihood().map_err(to_train);
        }
        let (sum, _) = self.kernels.log_likelihood_sum().map_err(to_train)?;
        let total = crate::shard::sum_fixed(self.transport.as_ref(), i128::from(sum))?;
        Ok(total as f64 / 16_777_216.0 / self.global_tokens.max(1) as f64)
    }
    fn heldout_arguments(
        &mut self,
        docs: topos_corpus::Docs<'_>,
        opts: &topos_model::FoldInOptions,
    ) -> Result<Option<Vec<f64>>, TrainError> {
        self.kernels.heldout_arguments(docs, opts).map_err(to_train)
    }
    fn heldout_arguments_with_phi(
        &mut self,
        docs: topos_corpus::Docs<'_>,
        phi: &topos_model::Phi,
        opts: &topos_model::FoldInOptions,
    ) -> Result<Option<Vec<f64>>, TrainError> {
        self.kernels
            .heldout_arguments_sparse(docs, phi, opts)
            .map_err(to_train)
    }
    fn topic_totals(&mut self) -> Result<Vec<u64>, TrainError> {
        self.kernels.topic_totals().map_err(to_train)
    }
    fn word_topics(&mut self, words: Range<u32>, out: &mut WordTopics) -> Result<(), TrainError> {
        self.kernels.download_rows(words, out).map_err(to_train)
    }
    fn assignments(&mut self, start: u64, out: &mut [u16]) -> Result<(), TrainError> {
        if let Some(shard) = self.shard.clone() {
            let transport = self.transport.clone();
            return crate::shard::gather_assignments(
                &shard,
                transport.as_ref(),
                start,
                out,
                |local, part| self.checked_topics(local, part),
            );
        }
        self.checked_topics(start, out)
    }
}

/// What a streamed run's plan adds when its host memory could not be page-locked.
pub(crate) const PAGEABLE_NOTE: &str = "; host memory pageable (page-locking was refused, or TOPOS_GPU_PAGEABLE=1): copies do not overlap the sweeps";

/// The GPUs' NCCL communicator for a run of several workers, when every worker has NCCL and
/// `TOPOS_GPU_EXCHANGE` is not `host` (all agree first, through the host transport, so that none
/// waits for a communicator the others will not join); `None`: the exchange is staged through
/// the host.
pub(crate) fn join_nccl(
    stream: &std::sync::Arc<topos_cuda::cudarc::driver::CudaStream>,
    ordinal: usize,
    transport: &dyn Transport,
) -> Result<Option<topos_cuda::nccl::DeviceComm>, GpuError> {
    let to_gpu = |e: crate::transport::TransportError| GpuError::Unsupported(e.to_string());
    let wanted = std::env::var("TOPOS_GPU_EXCHANGE").as_deref() != Ok("host");
    let able = u8::from(wanted && topos_cuda::nccl::present());
    // NCCL takes one worker per GPU: workers sharing one (tests, small machines) stage instead.
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let mut vote = vec![able];
    vote.extend_from_slice(format!("{}:{}", host.trim(), ordinal).as_bytes());
    let votes = transport.all_gather_bytes(&vote).map_err(to_gpu)?;
    let mut gpus: Vec<&[u8]> = votes.iter().map(|v| v.get(1..).unwrap_or(&[])).collect();
    gpus.sort_unstable();
    gpus.dedup();
    if votes.iter().any(|v| v.first() != Some(&1)) || gpus.len() < votes.len() {
        return Ok(None);
    }
    let id = if transport.rank() == 0 {
        topos_cuda::nccl::new_id()?
    } else {
        Vec::new()
    };
    let ids = transport.all_gather_bytes(&id).map_err(to_gpu)?;
    let comm = topos_cuda::nccl::DeviceComm::join(
        stream.clone(),
        transport.rank(),
        transport.workers(),
        &ids[0],
    )?;
    Ok(Some(comm))
}

impl CudaEngine {
    /// The topics of this engine's tokens `start..start + out.len()`, checked.
    fn checked_topics(&mut self, start: u64, out: &mut [u16]) -> Result<(), TrainError> {
        self.kernels.download_topics(start, out).map_err(to_train)?;
        let k = self.kernels.topics();
        // A topic out of range would be a kernel bug: refuse it rather than write it.
        if let Some(i) = out.iter().position(|&t| u32::from(t) >= k) {
            return Err(TrainError::Device(format!(
                "internal error: the GPU assigned topic {} (K = {k}) to token {}; please report it and train with --device cpu",
                out[i],
                start + i as u64
            )));
        }
        Ok(())
    }
}
