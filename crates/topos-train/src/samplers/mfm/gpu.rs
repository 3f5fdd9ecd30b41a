//! Mean-for-Mode estimation on the GPU: an engine of its own (its state is not the assignments,
//! so it shares neither the PDOW layout nor the sampling tree of `cuda/`), kernels in `gpu.cu`.
//!
//! What the device holds: each token's word (4 B: the only per-token array, where the other GPU
//! samplers keep 14 B: document, position, topic and a row entry), each document's row of
//! non-zero counts (at most min(len, K) entries of 4 B, and its offsets), the words' registers B
//! (V × K at the counters' width: 1 byte for approx8 and approx4, 4 exact), the sweep's exact new
//! counts Bn (V × K × 4 B, atomics, rounded by the commit as on the CPU) and one K-entry histogram
//! per resident warp. The tokens' words and the documents' rows are the part that grows with the
//! corpus (at most 8 B a token): where they do not fit beside the rest (or `force_streaming`),
//! the run is **streamed**: they stay on the host, in page-locked memory a chunk of documents at a
//! time, and each chunk is uploaded before its launch and its new rows read back after it, on two
//! streams with a device slot each, so that one chunk's copies overlap the other's sweep (as the
//! other GPU samplers stream). The kernel reads the same numbers either way, so a streamed run
//! writes the resident run's model (tested).
//!
//! The start and every rounding use the CPU engine's keys, so a fresh GPU engine holds exactly
//! the CPU's counts (tested); the draws then split the same distribution another way (document
//! side, word prior, smoothing; the CPU's dense sum or §5 buckets), so later models are the same
//! in distribution, not in bits. Same seed, same model on any GPU: every draw reads a sum taken in
//! an order the data fixes, and every count is an integer sum.

use crate::engine::{Engine, EngineSetup};
use crate::TrainError;

/// Opens `mfm` on GPU `ordinal` ([`crate::sampler::GpuImplementation::Engine`]).
pub fn open(ordinal: Option<usize>, setup: EngineSetup) -> Result<Box<dyn Engine>, TrainError> {
    #[cfg(feature = "cuda")]
    {
        Ok(Box::new(enabled::MfmGpuEngine::open(ordinal, setup)?))
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = (ordinal, setup);
        Err(TrainError::Unsupported(
            "this build of topos has no GPU support (built without the `cuda` feature); use --device cpu".into(),
        ))
    }
}

/// Device bytes of a resident `mfm` run, by item (what [`open`] checks against free memory).
pub fn device_bytes(
    tokens: u64,
    docs: u64,
    row_entries: u64,
    words: u64,
    topics: u64,
    register_bytes: u64,
    warps: u64,
) -> Vec<(&'static str, u64)> {
    vec![
        ("each token's word (4 B/token)", 4 * tokens),
        (
            "documents' rows (4 B an entry, at most min(len, K) a document)",
            4 * row_entries,
        ),
        (
            "documents' offsets and row lengths (20 B/document)",
            20 * (docs + 1),
        ),
        ("words' registers (V × K)", register_bytes * words * topics),
        ("words' new counts (4 B × V × K)", 4 * words * topics),
        ("words' prior mass (8 B/word)", 8 * words),
        (
            "per-warp histograms of new document counts",
            4 * warps * topics,
        ),
        ("topic totals and normalizers", 24 * topics),
    ]
}

#[cfg(feature = "cuda")]
mod enabled {
    use super::super::counters::CounterWidth;
    use crate::counts::WordTopics;
    use crate::engine::{Engine, EngineSetup};
    use crate::transport::Transport;
    use crate::TrainError;
    use std::ops::Range;
    use std::sync::Arc;
    use topos_cuda::cudarc::driver::{
        CudaContext, CudaFunction, CudaSlice, CudaStream, CudaViewMut, LaunchConfig, PushKernelArg,
    };
    use topos_cuda::device::{self, DeviceInfo};
    use topos_cuda::lanes::Lanes;
    use topos_cuda::pinned::HostBuffer;
    use topos_cuda::{Check, GpuError};
    use topos_model::{DocTopics, Hyperparameters};

    const SOURCE: &str = include_str!("gpu.cu");
    /// Warps of a sweep block (`WARPS` in gpu.cu).
    const WARPS: u32 = 8;
    const COMMIT_THREADS: u32 = 256;
    const PRIOR_THREADS: u32 = 256;
    const MODE_START: u32 = 0;
    const MODE_DRAW: u32 = 1;
    const MODE_LOGLIK: u32 = 2;
    const LL_SCALE: f64 = 16_777_216.0;
    /// Bytes kept free for the context, the module and the allocator.
    const RESERVE_BYTES: u64 = 512 << 20;

    fn dev(e: GpuError) -> TrainError {
        TrainError::Device(e.to_string())
    }

    struct Kernels {
        normalizers: CudaFunction,
        word_prior: CudaFunction,
        sweep: CudaFunction,
        commit_words: CudaFunction,
    }

    /// What a streamed run keeps on the host, in page-locked memory so that its copies run
    /// while the device sweeps (pageable where page-locking is refused: [`HostBuffer`]): each
    /// chunk's tokens' words and its documents' rows (the rows are the run's state between
    /// iterations). Chunk i is copied and swept on lane i % 2, in slot
    /// i % 2: the engine's `words` and `rows` buffers, or `words2` and `rows2`; the sweeps run
    /// in order (they share the warps' histograms), the copies beside them.
    struct Streamed {
        chunks: Vec<HostChunk>,
        lanes: Lanes,
        words2: CudaSlice<u32>,
        rows2: CudaSlice<u32>,
    }

    struct HostChunk {
        words: HostBuffer<u32>,
        rows: HostBuffer<u32>,
        /// The chunk's first token and first row entry (indices of the whole run's), and its
        /// tokens and row entries (the host buffers hold at least one).
        token0: u64,
        row0: u64,
        token_count: usize,
        row_count: usize,
    }

    /// The device buffers and the stream one launch of `mfm_sweep` uses (a slot of a streamed
    /// run, or the resident arrays), with the tokens and rows the buffers start at.
    struct Slot<'a> {
        stream: &'a Arc<CudaStream>,
        words: CudaViewMut<'a, u32>,
        rows: CudaViewMut<'a, u32>,
        hist: CudaViewMut<'a, u32>,
        token0: u64,
        row0: u64,
    }

    /// The `mfm` engine on one GPU.
    pub struct MfmGpuEngine {
        ctx: Arc<CudaContext>,
        stream: Arc<CudaStream>,
        kernels: Kernels,
        info: DeviceInfo,
        hyper: Hyperparameters,
        alpha: f64,
        width: CounterWidth,
        /// What the draw does with the token's own earlier draw.
        own: super::super::OwnDraw,
        seed: u64,
        num_words: u32,
        tokens: u64,
        transport: Arc<dyn Transport>,
        /// The GPUs' NCCL communicator with several workers (`None`: one worker, or the
        /// exchange staged through the host).
        comm: Option<topos_cuda::nccl::DeviceComm>,
        token_base: u64,
        doc_base: u64,
        global_tokens: u64,
        /// Document ranges swept one launch after another (`DeviceOptions::partition_tokens`;
        /// one by default): the model does not depend on them.
        chunks: Vec<Range<usize>>,
        iteration: u32,
        threads: usize,
        sampled: bool,
        blocks: u32,
        /// Dynamic shared memory each sweep block reserves (`TOPOS_GPU_MFM_SMEM`; 0).
        smem_pad: u32,
        /// Each token's word: the whole corpus, or (streamed) the largest chunk's room.
        words: CudaSlice<u32>,
        doc_off: CudaSlice<u64>,
        row_off: CudaSlice<u64>,
        row_off_host: Vec<u64>,
        row_len: CudaSlice<u32>,
        /// The documents' rows: all of them, or (streamed) the largest chunk's room.
        rows: CudaSlice<u32>,
        /// A streamed run's corpus and rows on the host (`None`: resident).
        streamed: Option<Streamed>,
        /// Registers, 1 or 4 bytes each (`u8` slices reinterpreted by the kernels).
        b: CudaSlice<u8>,
        bn: CudaSlice<u32>,
        levels: CudaSlice<u64>,
        levels_host: Vec<u64>,
        /// Host memory the registers are copied back into ([`MfmGpuEngine::word_topics`]),
        /// kept between pieces so that writing a model faults in no fresh pages a piece.
        row_staging: Option<HostBuffer<u8>>,
        top: u32,
        totals: CudaSlice<u64>,
        inv: CudaSlice<f64>,
        s_cum: CudaSlice<f64>,
        prior: CudaSlice<f64>,
        hist: CudaSlice<u32>,
        ll: CudaSlice<u64>,
        device_bytes: u64,
    }

    impl Drop for MfmGpuEngine {
        /// The device's queued work (a streamed chunk's copy back into host memory, say) ends
        /// before the buffers it touches are freed.
        fn drop(&mut self) {
            let _ = self.ctx.synchronize();
        }
    }

    impl MfmGpuEngine {
        pub fn open(ordinal: Option<usize>, setup: EngineSetup) -> Result<Self, TrainError> {
            let Some(alpha) = setup.hyper.alpha.symmetric_value() else {
                return Err(TrainError::Unsupported(
                    "an asymmetric alpha runs on the CPU only for now; use --device cpu".into(),
                ));
            };
            // Several workers (processes under MPI, or the GPUs of `cuda:all`): a contiguous
            // share of the documents each, keyed by global indices; the words' exact new counts
            // are summed (NCCL, or through the host) before every worker rounds them alike, so
            // the model is one GPU's.
            let share = super::super::WorkerShare::open(&setup, false)?;
            let transport = setup.transport.clone();
            let workers = transport.workers();
            let (token_base, doc_base, global_tokens) =
                (share.token_base, share.doc_base, share.global_tokens);
            let ordinal = match ordinal {
                None if workers > 1 => {
                    let count = device::device_count().map_err(dev)?;
                    crate::transport::local_rank().map(|r| r % count.max(1))
                }
                o => o,
            };
            let share_scale = share.scale;
            let docs = share.docs;
            let view = docs.view();
            let k = setup.hyper.num_topics;
            let width = super::super::counter_width(&setup.settings);
            let longest = (0..view.len())
                .map(|d| view.doc(d).len() as u64)
                .max()
                .unwrap_or(0);
            // A row entry keeps its register in 16 bits; exact counts of a longer document
            // would not fit.
            if width == CounterWidth::Exact && longest > u64::from(u16::MAX) {
                return Err(TrainError::Unsupported(format!(
                    "--algo mfm on the GPU keeps exact document counts in 16 bits, and a document has {longest} tokens; use --counters approx8, or --device cpu"
                )));
            }
            let ctx = device::open(ordinal).map_err(dev)?;
            let info = device::info(&ctx).map_err(dev)?;
            let stream = ctx
                .new_stream()
                .check(|| "creating a CUDA stream".into())
                .map_err(dev)?;
            let (major, minor) = ctx
                .compute_capability()
                .check(|| "reading the compute capability".into())
                .map_err(dev)?;
            let reg_bytes: u64 = if width == CounterWidth::Exact { 4 } else { 1 };
            let blocks = info.multiprocessors.max(1) * 8;
            let warps = u64::from(blocks * WARPS);
            // Rows: room for min(len, K) entries a document.
            let mut row_off_host = Vec::with_capacity(view.len() + 1);
            row_off_host.push(0u64);
            for d in 0..view.len() {
                let room = (view.doc(d).len() as u64).min(u64::from(k));
                row_off_host.push(row_off_host[d] + room);
            }
            let row_entries = *row_off_host.last().expect("one offset");
            let (v, kk) = (setup.num_words as u64, u64::from(k));
            let items = super::device_bytes(
                view.num_tokens(),
                view.len() as u64,
                row_entries,
                v,
                kk,
                reg_bytes,
                warps,
            );
            let need: u64 = items.iter().map(|(_, b)| b).sum();
            let budget = setup
                .device
                .memory_budget
                .map_or(info.free_bytes, |b| b.min(info.free_bytes));
            // What grows with the corpus: the tokens' words and the rows' room.
            let corpus_bytes = 4 * view.num_tokens() + 4 * row_entries;
            let fixed = need - corpus_bytes;
            let resident = !setup.device.force_streaming && need + RESERVE_BYTES <= budget;
            // The tokens and row room of each chunk of documents.
            let chunk_room = |c: &Range<usize>| {
                let offsets = view.offsets();
                (
                    offsets[c.end] - offsets[c.start],
                    row_off_host[c.end] - row_off_host[c.start],
                )
            };
            let cut = |tokens_per_chunk: u64| {
                let parts = view
                    .num_tokens()
                    .div_ceil(tokens_per_chunk.max(1))
                    .clamp(1, view.len().max(1) as u64) as usize;
                crate::layout::balanced_ranges(view, parts)
            };
            let chunks = if resident {
                setup
                    .device
                    .partition_tokens
                    .map_or_else(|| crate::layout::balanced_ranges(view, 1), &cut)
            } else {
                // Streamed: chunks whose tokens and rows fit beside the rest (each token brings
                // at most 8 bytes) in each of two slots, at most `partition_tokens` tokens a
                // chunk where that is given (but never less than a document).
                let room_bytes = budget.saturating_sub(fixed + RESERVE_BYTES) / 2;
                let room = room_bytes / 8;
                if room < longest.max(1) {
                    return Err(TrainError::Unsupported(format!(
                        "--algo mfm on the GPU needs {:.2} GB of device memory beside the corpus ({}) and room for two documents of {longest} tokens, {:.2} GB is available; use --device cpu, fewer topics or --counters approx8",
                        fixed as f64 / 1e9,
                        items
                            .iter()
                            .map(|(what, b)| format!("{what}: {:.2} GB", *b as f64 / 1e9))
                            .collect::<Vec<_>>()
                            .join(", "),
                        budget.saturating_sub(RESERVE_BYTES) as f64 / 1e9
                    )));
                }
                let per_chunk = setup
                    .device
                    .partition_tokens
                    .unwrap_or(room)
                    .clamp(longest.max(1), room);
                let even = cut(per_chunk);
                // Whole documents make even chunks uneven; where the largest does not fit,
                // documents are packed in order while they do (one always fits: 8 B a token of
                // the longest is within the room).
                let fits = |c: &Range<usize>| {
                    let (tokens, rows) = chunk_room(c);
                    4 * (tokens + rows) <= room_bytes
                };
                if even.iter().all(fits) {
                    even
                } else {
                    let mut packed = Vec::new();
                    let mut start = 0;
                    for d in 0..view.len() {
                        if !fits(&(start..d + 1)) {
                            packed.push(start..d);
                            start = d;
                        }
                    }
                    packed.push(start..view.len());
                    packed
                }
            };
            let (chunk_tokens, chunk_rows) = if resident {
                (view.num_tokens(), row_entries)
            } else {
                chunks
                    .iter()
                    .map(chunk_room)
                    .fold((0, 0), |a, b| (a.0.max(b.0), a.1.max(b.1)))
            };
            let need = if resident {
                fixed + 4 * chunk_tokens + 4 * chunk_rows
            } else {
                fixed + 2 * (4 * chunk_tokens + 4 * chunk_rows)
            };
            let own = super::super::own_draw(&setup.settings);
            let kernels = compile(&ctx, width, major, minor).map_err(dev)?;
            let smem_pad = topos_cuda::tuning::Tuning::get().mfm_smem_pad.unwrap_or(0);
            if smem_pad > 0 {
                // Past the 48 KB a block gets without asking (the sweep's static arrays use
                // most of them).
                kernels
                    .sweep
                    .set_attribute(
                        topos_cuda::cudarc::driver::sys::CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                        smem_pad as i32,
                    )
                    .check(|| "reserving the sweep's shared memory".into())
                    .map_err(dev)?;
            }
            let alloc = |what: &str| format!("allocating {what}");
            let up = |what: &'static str| move || format!("copying {what} to the device");
            let g = |e: GpuError| dev(e);
            let words = if resident {
                stream
                    .clone_htod(view.tokens())
                    .check(up("the tokens"))
                    .map_err(g)?
            } else {
                stream
                    .alloc_zeros::<u32>(chunk_tokens.max(1) as usize)
                    .check(|| alloc("a chunk's tokens"))
                    .map_err(g)?
            };
            let doc_off = stream
                .clone_htod(view.offsets())
                .check(up("the document offsets"))
                .map_err(g)?;
            let row_off = stream
                .clone_htod(&row_off_host)
                .check(up("the row offsets"))
                .map_err(g)?;
            let row_len = stream
                .alloc_zeros::<u32>(view.len().max(1))
                .check(|| alloc("the row lengths"))
                .map_err(g)?;
            let rows = stream
                .alloc_zeros::<u32>(chunk_rows.max(1) as usize)
                .check(|| alloc("the documents' rows"))
                .map_err(g)?;
            let streamed = if resident {
                None
            } else {
                let mut host = Vec::with_capacity(chunks.len());
                for c in &chunks {
                    let (t0, t1) = (view.offsets()[c.start], view.offsets()[c.end]);
                    let (r0, r1) = (row_off_host[c.start], row_off_host[c.end]);
                    host.push(HostChunk {
                        // Only ever copied to the device: write-combined.
                        words: HostBuffer::copy_of(
                            &ctx,
                            &view.tokens()[t0 as usize..t1 as usize],
                            true,
                        )
                        .map_err(g)?,
                        rows: HostBuffer::<u32>::zeroed(&ctx, (r1 - r0) as usize, false)
                            .map_err(g)?,
                        token0: t0,
                        row0: r0,
                        token_count: (t1 - t0) as usize,
                        row_count: (r1 - r0) as usize,
                    });
                }
                Some(Streamed {
                    chunks: host,
                    lanes: Lanes::new(&ctx).map_err(g)?,
                    words2: stream
                        .alloc_zeros::<u32>(chunk_tokens.max(1) as usize)
                        .check(|| alloc("a chunk's tokens"))
                        .map_err(g)?,
                    rows2: stream
                        .alloc_zeros::<u32>(chunk_rows.max(1) as usize)
                        .check(|| alloc("the documents' rows"))
                        .map_err(g)?,
                })
            };
            let cells = (v * kk).max(1) as usize;
            let b = stream
                .alloc_zeros::<u8>(cells * reg_bytes as usize)
                .check(|| alloc("the words' registers"))
                .map_err(g)?;
            let bn = stream
                .alloc_zeros::<u32>(cells)
                .check(|| alloc("the words' new counts"))
                .map_err(g)?;
            let levels_host: Vec<u64> = share_scale
                .levels()
                .map_or_else(|| vec![0], <[u64]>::to_vec);
            let top = (levels_host.len() - 1) as u32;
            let levels = stream
                .clone_htod(&levels_host)
                .check(up("the counter levels"))
                .map_err(g)?;
            let kz = k as usize;
            let totals = stream
                .alloc_zeros::<u64>(kz)
                .check(|| alloc("the topic totals"))
                .map_err(g)?;
            let inv = stream
                .alloc_zeros::<f64>(kz)
                .check(|| alloc("the normalizers"))
                .map_err(g)?;
            let s_cum = stream
                .alloc_zeros::<f64>(kz)
                .check(|| alloc("the smoothing sums"))
                .map_err(g)?;
            let prior = stream
                .alloc_zeros::<f64>(setup.num_words.max(1))
                .check(|| alloc("the words' prior mass"))
                .map_err(g)?;
            let hist = stream
                .alloc_zeros::<u32>((warps * kk) as usize)
                .check(|| alloc("the warps' histograms"))
                .map_err(g)?;
            let ll = stream
                .alloc_zeros::<u64>(1)
                .check(|| alloc("the log-likelihood sum"))
                .map_err(g)?;
            let mut engine = MfmGpuEngine {
                ctx,
                stream,
                kernels,
                info,
                hyper: setup.hyper,
                alpha,
                width,
                own,
                seed: setup.seed,
                num_words: setup.num_words as u32,
                tokens: view.num_tokens(),
                chunks,
                transport,
                comm: None,
                token_base,
                doc_base,
                global_tokens,
                iteration: 0,
                threads: setup.threads,
                sampled: false,
                blocks,
                smem_pad,
                words,
                doc_off,
                row_off,
                row_off_host,
                row_len,
                rows,
                streamed,
                b,
                bn,
                levels,
                levels_host,
                row_staging: None,
                top,
                totals,
                inv,
                s_cum,
                prior,
                hist,
                ll,
                device_bytes: need,
            };
            if workers > 1 {
                engine.comm = crate::cuda::join_nccl(
                    &engine.stream,
                    engine.info.ordinal,
                    engine.transport.as_ref(),
                )
                .map_err(dev)?;
            }
            // The start: uniform topics, counted and rounded with iteration 0's keys.
            engine.sweep(MODE_START, 0).map_err(dev)?;
            engine.sum_word_counts()?;
            engine.commit_counts(0).map_err(dev)?;
            Ok(engine)
        }

        fn seed_parts(&self) -> (u32, u32) {
            (self.seed as u32, (self.seed >> 32) as u32)
        }

        /// `mfm_sweep` over every document, a launch a chunk. A streamed run uploads each
        /// chunk's tokens and rows before its launch and reads its new rows back after it, chunk
        /// i on lane i % 2 in slot i % 2 (in order within a lane: a slot is refilled only after
        /// its last chunk's rows are read back); both lanes start after the main stream's work
        /// so far, and the main stream's next work waits for both.
        fn sweep(&mut self, mode: u32, iteration: u32) -> Result<(), GpuError> {
            let seed = self.seed_parts();
            let MfmGpuEngine {
                stream,
                kernels,
                hyper,
                alpha,
                own,
                token_base,
                doc_base,
                chunks,
                blocks,
                smem_pad,
                words,
                doc_off,
                row_off,
                row_len,
                rows,
                streamed,
                b,
                bn,
                levels,
                top,
                inv,
                s_cum,
                prior,
                hist,
                ll,
                ..
            } = self;
            let args = SweepArgs {
                mode,
                iteration,
                token_base: *token_base,
                doc_base: *doc_base,
                doc_off,
                row_off,
                b,
                levels,
                top: *top,
                inv,
                s_cum,
                prior,
                topics: hyper.num_topics,
                alpha: *alpha,
                beta: hyper.beta,
                seed,
                own_mode: own.code(),
                blocks: *blocks,
                smem_pad: *smem_pad,
            };
            let Some(host) = streamed else {
                let mut slot = Slot {
                    stream,
                    words: words.slice_mut(..),
                    rows: rows.slice_mut(..),
                    hist: hist.slice_mut(..),
                    token0: 0,
                    row0: 0,
                };
                for c in chunks.iter() {
                    launch_sweep(kernels, &args, c, &mut slot, row_len, bn, ll)?;
                }
                return Ok(());
            };
            let ordering = || "ordering streams".to_string();
            host.lanes.follow(stream)?;
            // The sweeps themselves run one after another (each fills the device): chunk i's
            // launch waits for chunk i − 1's, issued on the other lane, so both share the warps'
            // histograms; only the copies overlap a sweep.
            let mut slots = [
                (host.lanes.of(0), words.slice_mut(..), rows.slice_mut(..)),
                (
                    host.lanes.of(1),
                    host.words2.slice_mut(..),
                    host.rows2.slice_mut(..),
                ),
            ];
            let mut swept: Option<topos_cuda::cudarc::driver::CudaEvent> = None;
            for (i, (c, h)) in chunks.iter().zip(host.chunks.iter_mut()).enumerate() {
                let (lane, slot_words, slot_rows) = &mut slots[i % 2];
                let lane: &Arc<CudaStream> = lane;
                if h.token_count > 0 {
                    lane.memcpy_htod(&h.words, &mut slot_words.slice_mut(0..h.words.len()))
                        .check(|| "copying a chunk's tokens to the device".into())?;
                }
                // The start writes the rows it reads none of.
                if mode != MODE_START && h.row_count > 0 {
                    lane.memcpy_htod(&h.rows, &mut slot_rows.slice_mut(0..h.rows.len()))
                        .check(|| "copying a chunk's rows to the device".into())?;
                }
                if let Some(previous) = &swept {
                    lane.wait(previous).check(ordering)?;
                }
                let mut slot = Slot {
                    stream: lane,
                    words: slot_words.slice_mut(..),
                    rows: slot_rows.slice_mut(..),
                    hist: hist.slice_mut(..),
                    token0: h.token0,
                    row0: h.row0,
                };
                launch_sweep(kernels, &args, c, &mut slot, row_len, bn, ll)?;
                swept = Some(lane.record_event(None).check(ordering)?);
                if mode != MODE_LOGLIK && h.row_count > 0 {
                    lane.memcpy_dtoh(&slot_rows.slice(0..h.rows.len()), &mut h.rows)
                        .check(|| "reading a chunk's rows back".into())?;
                }
            }
            host.lanes.join(stream)?;
            Ok(())
        }

        /// The M-step: the words' new counts rounded into B, the totals, the normalizers and the
        /// words' prior mass the next sweep reads.
        fn commit_counts(&mut self, iteration: u32) -> Result<(), GpuError> {
            let (lo, hi) = self.seed_parts();
            let (v, k) = (self.num_words, self.hyper.num_topics);
            self.stream
                .memset_zeros(&mut self.totals)
                .check(|| "clearing the topic totals".into())?;
            let col_blocks = k.div_ceil(COMMIT_THREADS);
            let slices = (self.info.multiprocessors.max(1) * 16 / col_blocks).clamp(1, v.max(1));
            let per_slice = v.div_ceil(slices).max(1);
            let cfg = LaunchConfig {
                grid_dim: (col_blocks, v.div_ceil(per_slice).max(1), 1),
                block_dim: (COMMIT_THREADS, 1, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: as in `sweep`.
            unsafe {
                self.stream
                    .launch_builder(&self.kernels.commit_words)
                    .arg(&mut self.bn)
                    .arg(&mut self.b)
                    .arg(&v)
                    .arg(&k)
                    .arg(&per_slice)
                    .arg(&self.levels)
                    .arg(&self.top)
                    .arg(&lo)
                    .arg(&hi)
                    .arg(&iteration)
                    .arg(&mut self.totals)
                    .launch(cfg)
            }
            .check(|| "launching mfm_commit_words".into())?;
            let v_beta = f64::from(v) * self.hyper.beta;
            let beta = self.hyper.beta;
            // SAFETY: as in `sweep`.
            unsafe {
                self.stream
                    .launch_builder(&self.kernels.normalizers)
                    .arg(&self.totals)
                    .arg(&k)
                    .arg(&v_beta)
                    .arg(&self.alpha)
                    .arg(&beta)
                    .arg(&mut self.inv)
                    .arg(&mut self.s_cum)
                    .launch(LaunchConfig {
                        grid_dim: (1, 1, 1),
                        block_dim: (1, 1, 1),
                        shared_mem_bytes: 0,
                    })
            }
            .check(|| "launching mfm_normalizers".into())?;
            let blocks = v.clamp(1, self.info.multiprocessors.max(1) * 32);
            // SAFETY: as in `sweep`.
            unsafe {
                self.stream
                    .launch_builder(&self.kernels.word_prior)
                    .arg(&self.b)
                    .arg(&self.levels)
                    .arg(&self.inv)
                    .arg(&v)
                    .arg(&k)
                    .arg(&self.alpha)
                    .arg(&mut self.prior)
                    .launch(LaunchConfig {
                        grid_dim: (blocks, 1, 1),
                        block_dim: (PRIOR_THREADS, 1, 1),
                        shared_mem_bytes: 0,
                    })
            }
            .check(|| "launching mfm_word_prior".into())?;
            self.stream
                .synchronize()
                .check(|| "waiting for the commit".into())
        }

        /// Sums the words' exact new counts of every worker: NCCL's all-reduce, or through the
        /// host and the transport (nothing to do with one worker).
        fn sum_word_counts(&mut self) -> Result<(), TrainError> {
            if self.transport.workers() == 1 {
                return Ok(());
            }
            if let Some(comm) = self.comm.as_mut() {
                comm.sum_u32(&mut self.bn).map_err(dev)?;
                return Ok(());
            }
            let mut host = self
                .stream
                .clone_dtoh(&self.bn)
                .check(|| "reading the new counts".into())
                .map_err(dev)?;
            self.transport.sum_u32(&mut host)?;
            self.stream
                .memcpy_htod(&host, &mut self.bn)
                .check(|| "writing the summed counts".into())
                .map_err(dev)?;
            self.stream
                .synchronize()
                .check(|| "writing the summed counts".into())
                .map_err(dev)
        }

        /// The words' registers of rows `words` (1 or 4 bytes a cell, `reg`), copied into the
        /// engine's staging buffer.
        fn word_registers(&mut self, words: Range<u32>) -> Result<(&[u8], usize), GpuError> {
            let k = u64::from(self.hyper.num_topics);
            let reg = if self.width == CounterWidth::Exact {
                4
            } else {
                1
            };
            let (a, b) = (
                (u64::from(words.start) * k * reg) as usize,
                (u64::from(words.end) * k * reg) as usize,
            );
            let what = || "reading the word-topic counts".to_string();
            let staging = HostBuffer::at_least(&mut self.row_staging, &self.ctx, b - a)?
                .as_mut_slice()
                .check(what)?;
            self.stream
                .memcpy_dtoh(&self.b.slice(a..b), &mut staging[..b - a])
                .check(what)?;
            self.stream.synchronize().check(what)?;
            Ok((&staging[..b - a], reg as usize))
        }
    }

    /// What every launch of an iteration's `mfm_sweep` reads besides its slot.
    struct SweepArgs<'a> {
        mode: u32,
        iteration: u32,
        token_base: u64,
        doc_base: u64,
        doc_off: &'a CudaSlice<u64>,
        row_off: &'a CudaSlice<u64>,
        b: &'a CudaSlice<u8>,
        levels: &'a CudaSlice<u64>,
        top: u32,
        inv: &'a CudaSlice<f64>,
        s_cum: &'a CudaSlice<f64>,
        prior: &'a CudaSlice<f64>,
        topics: u32,
        alpha: f64,
        beta: f64,
        seed: (u32, u32),
        own_mode: u32,
        blocks: u32,
        smem_pad: u32,
    }

    /// One launch of `mfm_sweep` over the documents `docs`, on the slot's stream and buffers.
    fn launch_sweep(
        kernels: &Kernels,
        a: &SweepArgs<'_>,
        docs: &Range<usize>,
        slot: &mut Slot<'_>,
        row_len: &mut CudaSlice<u32>,
        bn: &mut CudaSlice<u32>,
        ll: &mut CudaSlice<u64>,
    ) -> Result<(), GpuError> {
        let (begin, end) = (docs.start as u64, docs.end as u64);
        let cfg = LaunchConfig {
            grid_dim: (a.blocks, 1, 1),
            block_dim: (WARPS * 32, 1, 1),
            shared_mem_bytes: a.smem_pad,
        };
        // SAFETY: argument types and order match mfm_sweep's signature; the registers are
        // REG_BYTES wide as compiled; the slot's buffers hold the documents' tokens and rows
        // from its first token and row on.
        unsafe {
            slot.stream
                .launch_builder(&kernels.sweep)
                .arg(&a.mode)
                .arg(&mut slot.words)
                .arg(a.doc_off)
                .arg(&begin)
                .arg(&end)
                .arg(&a.token_base)
                .arg(&a.doc_base)
                .arg(&slot.token0)
                .arg(&slot.row0)
                .arg(a.row_off)
                .arg(row_len)
                .arg(&mut slot.rows)
                .arg(a.b)
                .arg(bn)
                .arg(a.levels)
                .arg(&a.top)
                .arg(a.inv)
                .arg(a.s_cum)
                .arg(a.prior)
                .arg(&mut slot.hist)
                .arg(&a.topics)
                .arg(&a.alpha)
                .arg(&a.beta)
                .arg(&a.seed.0)
                .arg(&a.seed.1)
                .arg(&a.iteration)
                .arg(&a.own_mode)
                .arg(ll)
                .launch(cfg)
        }
        .check(|| "launching mfm_sweep".into())?;
        Ok(())
    }

    fn compile(
        ctx: &Arc<CudaContext>,
        width: CounterWidth,
        major: i32,
        minor: i32,
    ) -> Result<Kernels, GpuError> {
        let arch: &'static str = Box::leak(format!("compute_{major}{minor}").into_boxed_str());
        // Every definition here is fixed: the registers' width sizes the host's buffers, and
        // the balancing's constants are the CPU engine's.
        let fixed = [
            (
                "REG_BYTES",
                (if width == CounterWidth::Exact { 4 } else { 1 }).to_string(),
            ),
            (
                "APPROX",
                u32::from(width != CounterWidth::Exact).to_string(),
            ),
            // OwnDraw::Balanced as the CPU engine takes it (cpu.rs Frozen::balance).
            (
                "BALANCE_ROUNDS",
                super::super::cpu::BALANCE_ROUNDS.to_string(),
            ),
            (
                "BALANCE_SETTLED",
                format!("{:?}", super::super::cpu::BALANCE_SETTLED),
            ),
            (
                "BALANCE_MAX_TOKENS",
                super::super::cpu::BALANCE_MAX_TOKENS.to_string(),
            ),
            (
                "BALANCE_MEAN_COUNT",
                format!("{:?}", super::super::cpu::BALANCE_MEAN_COUNT),
            ),
        ];
        // Other `TOPOS_GPU_DEFINES` definitions reach the kernels (A/B runs).
        let options = topos_cuda::tuning::Tuning::get().nvrtc_options(&[], &fixed);
        let ptx = topos_cuda::compile::compile_cached(SOURCE, options, arch)?.0;
        let module = ctx
            .load_module(ptx)
            .check(|| "loading the mfm kernels".into())?;
        let f = |name: &str| {
            module
                .load_function(name)
                .check(|| format!("finding kernel {name}"))
        };
        Ok(Kernels {
            normalizers: f("mfm_normalizers")?,
            word_prior: f("mfm_word_prior")?,
            sweep: f("mfm_sweep")?,
            commit_words: f("mfm_commit_words")?,
        })
    }

    impl Engine for MfmGpuEngine {
        fn describe(&self) -> String {
            format!(
                "cuda:{} ({}), {} counters",
                self.info.ordinal,
                self.info.name,
                self.width.name()
            )
        }
        fn threads(&self) -> usize {
            self.threads
        }
        fn partitions(&self) -> usize {
            self.chunks.len()
        }
        fn iteration(&self) -> u32 {
            self.iteration
        }
        fn setting_defaults(&self) -> crate::sampler::SettingDefaults {
            crate::sampler::SettingDefaults::Gpu
        }
        fn plan(&self) -> Option<serde_json::Value> {
            let (mode, summary) = match self.streamed {
                None => (
                    "resident",
                    format!(
                        "mfm resident on the GPU: {:.2} GB ({:.1} B/token; each token keeps only its word)",
                        self.device_bytes as f64 / 1e9,
                        self.device_bytes as f64 / self.tokens.max(1) as f64
                    ),
                ),
                Some(_) => (
                    "streamed",
                    format!(
                        "mfm streamed through the GPU in {} chunks of documents: {:.2} GB on the device (each chunk's words and rows uploaded before its launch and its rows read back, on two streams, one chunk's copies beside the other's sweep)",
                        self.chunks.len(),
                        self.device_bytes as f64 / 1e9
                    ),
                ),
            };
            let pageable = self.streamed.as_ref().is_some_and(|h| {
                h.chunks
                    .iter()
                    .any(|c| !(c.words.is_pinned() && c.rows.is_pinned()))
            });
            let summary = if pageable {
                summary + crate::cuda::PAGEABLE_NOTE
            } else {
                summary
            };
            Some(serde_json::json!({
                "mode": mode,
                "host_memory_pageable": pageable,
                "device_bytes": self.device_bytes,
                "bytes_per_token": self.device_bytes as f64 / self.tokens.max(1) as f64,
                "summary": summary,
            }))
        }
        fn sample(&mut self) -> Result<(), TrainError> {
            if self.sampled {
                return Err(TrainError::Unsupported(
                    "a sample without a commit after the last one".into(),
                ));
            }
            self.sweep(MODE_DRAW, self.iteration + 1).map_err(dev)?;
            self.sampled = true;
            Ok(())
        }
        /// The words' exact new counts summed over the workers (through the engine's own
        /// transport, which is the run's, or NCCL).
        fn exchange(&mut self, _transport: &dyn Transport) -> Result<(), TrainError> {
            crate::engine::check_sampled(self.sampled)?;
            self.sum_word_counts()
        }
        fn commit(&mut self) -> Result<(), TrainError> {
            crate::engine::check_sampled(self.sampled)?;
            self.commit_counts(self.iteration + 1).map_err(dev)?;
            self.iteration += 1;
            self.sampled = false;
            Ok(())
        }
        /// The CPU engine's formula, (1/N) Σ log Σ_k θ_dk φ_kw, each token's term rounded to
        /// 2⁻²⁴ and summed as an integer.
        fn log_likelihood(&mut self) -> Result<f64, TrainError> {
            self.stream
                .memset_zeros(&mut self.ll)
                .check(|| "clearing the log-likelihood".into())
                .map_err(dev)?;
            self.sweep(MODE_LOGLIK, self.iteration).map_err(dev)?;
            let sum = self
                .stream
                .clone_dtoh(&self.ll)
                .check(|| "reading the log-likelihood".into())
                .map_err(dev)?;
            let total =
                crate::shard::sum_fixed(self.transport.as_ref(), i128::from(sum[0] as i64))?;
            Ok(total as f64 / LL_SCALE / self.global_tokens.max(1) as f64)
        }
        fn topic_totals(&mut self) -> Result<Vec<u64>, TrainError> {
            self.stream
                .clone_dtoh(&self.totals)
                .check(|| "reading the topic totals".into())
                .map_err(dev)
        }
        fn word_topics(
            &mut self,
            words: Range<u32>,
            out: &mut WordTopics,
        ) -> Result<(), TrainError> {
            let k = self.hyper.num_topics as usize;
            out.clear_rows(self.hyper.num_topics);
            let levels = std::mem::take(&mut self.levels_host);
            let read = self.word_registers(words);
            let result = read.map(|(registers, reg)| {
                // A cell's count: its 4-byte exact counter, or its 1-byte register's level.
                let count = |cell: &[u8]| -> u64 {
                    if reg == 4 {
                        u64::from(u32::from_le_bytes([cell[0], cell[1], cell[2], cell[3]]))
                    } else {
                        levels[usize::from(cell[0])]
                    }
                };
                let width = (k * reg).max(1);
                let row = |i: usize| &registers[i * width..(i + 1) * width];
                out.push_rows_in_parallel(
                    registers.len() / width,
                    |i| row(i).chunks_exact(reg).filter(|&c| count(c) > 0).count(),
                    |i, topics, counts| {
                        let nonzero = row(i)
                            .chunks_exact(reg)
                            .map(count)
                            .enumerate()
                            .filter(|&(_, n)| n > 0);
                        for ((t, c), (topic, n)) in
                            topics.iter_mut().zip(counts.iter_mut()).zip(nonzero)
                        {
                            (*t, *c) = (topic as u16, n.min(u64::from(u32::MAX)) as u32);
                        }
                    },
                );
            });
            self.levels_host = levels;
            result.map_err(dev)
        }
        fn assignments(&mut self, _start: u64, _out: &mut [u16]) -> Result<(), TrainError> {
            Err(TrainError::Unsupported(
                "--algo mfm keeps no assignments (that is its memory saving)".into(),
            ))
        }
        fn doc_topic_rows(
            &mut self,
            docs: Range<usize>,
            out: &mut DocTopics,
        ) -> Result<bool, TrainError> {
            out.num_topics = self.hyper.num_topics;
            out.offsets.clear();
            out.topics.clear();
            out.counts.clear();
            out.offsets.push(0);
            // This worker's documents of `docs` (global indices), gathered with the others'.
            let docs = super::super::local_docs(docs, self.doc_base, self.row_off_host.len() - 1);
            if docs.is_empty() {
                crate::shard::gather_doc_rows(self.transport.as_ref(), out)?;
                return Ok(true);
            }
            let read = |what: &'static str| move || format!("reading {what}");
            let mut lens = vec![0u32; docs.len()];
            self.stream
                .memcpy_dtoh(&self.row_len.slice(docs.clone()), &mut lens)
                .check(read("the documents' row lengths"))
                .map_err(dev)?;
            let (a, b) = (
                self.row_off_host[docs.start] as usize,
                self.row_off_host[docs.end] as usize,
            );
            let mut entries = vec![0u32; b - a];
            if self.streamed.is_none() && b > a {
                self.stream
                    .memcpy_dtoh(&self.rows.slice(a..b), &mut entries)
                    .check(read("the documents' rows"))
                    .map_err(dev)?;
            }
            // Also after the lanes' last copies back (the main stream waits for them).
            self.stream
                .synchronize()
                .check(read("the documents' rows"))
                .map_err(dev)?;
            if let Some(host) = &self.streamed {
                for h in &host.chunks {
                    let (lo, hi) = (h.row0 as usize, h.row0 as usize + h.row_count);
                    let (from, to) = (a.max(lo), b.min(hi));
                    if from < to {
                        let rows = h
                            .rows
                            .as_slice()
                            .check(read("the documents' rows"))
                            .map_err(dev)?;
                        entries[from - a..to - a].copy_from_slice(&rows[from - lo..to - lo]);
                    }
                }
            }
            for (i, d) in docs.enumerate() {
                let start = self.row_off_host[d] as usize - a;
                for &e in &entries[start..start + lens[i] as usize] {
                    out.topics.push((e >> 16) as u16);
                    let reg = e & 0xffff;
                    let n = if self.width == CounterWidth::Exact {
                        u64::from(reg)
                    } else {
                        self.levels_host[reg as usize]
                    };
                    out.counts.push(n.min(u64::from(u32::MAX)) as u32);
                }
                out.offsets.push(out.topics.len() as u64);
            }
            crate::shard::gather_doc_rows(self.transport.as_ref(), out)?;
            Ok(true)
        }
    }
}
