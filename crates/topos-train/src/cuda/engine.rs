//! The GPU sampler: kernels compiled by NVRTC for the device at hand, the model and the corpus
//! chunks in device memory, and one iteration = rebuild the doc-topic rows and sample every chunk,
//! then rebuild the word-topic counts (SaberLDA Alg. 1 on the GPU).
//!
//! Every token's draw reads only the previous iteration's counts and its own Philox numbers, and
//! every count is an integer sum, so the result does not depend on how the corpus is chunked, on
//! the streams, or on the order in which blocks run: a streamed run produces the same assignments
//! as a resident one (tested on the device).

use super::chunks::{self, Item};
use super::plan::{self, Mode, Plan};
use super::word_topics::WordTopicLayout;
use crate::counts::WordTopics;
use crate::layout::PartitionShape;
use rayon::prelude::*;
use std::ops::Range;
use std::sync::Arc;
use topos_corpus::Docs;
use topos_cuda::cudarc::driver::{
    sys::CUevent_flags::CU_EVENT_DEFAULT, sys::CUfunction_attribute_enum as FnAttr, CudaContext,
    CudaEvent, CudaFunction, CudaSlice, CudaStream, DevicePtr, LaunchConfig, PushKernelArg,
};
use topos_cuda::lanes::Lanes;
use topos_cuda::pinned::HostBuffer;
use topos_cuda::tuning::Tuning;
use topos_cuda::{Check, GpuError};

const SOURCE: &str = include_str!("kernels.cu");
const BLOCK: u32 = 256;

/// The sampler's settings.
#[derive(Clone, Copy, Debug)]
pub struct EngineConfig {
    /// The sampler's kernel (`samplers/NAME/gpu.rs`): collapsed Gibbs against stale counts
    /// (the token's own assignment removed) or ESCA.
    pub exclude_own_assignment: bool,
    /// ezlda's three-branch sampling on top of the exact draw (`GpuKernelSpec::three_branch`).
    pub three_branch: bool,
    /// mh's Metropolis-Hastings kernel (`GpuKernelSpec::metropolis_hastings`) with this many
    /// proposal pairs per token (`--mh-steps`); `None` for the other samplers.
    pub mh_steps: Option<u32>,
    pub topics: u32,
    pub words: u32,
    pub alpha: f64,
    pub beta: f64,
    pub seed: u64,
    /// 64-bit doc-topic row entries ([`wide_rows`] of the longest document, or forced by tests).
    pub wide_rows: bool,
    /// Global index of this engine's first token: what the random numbers are keyed by (0, but
    /// for one process's share of a multi-process run, `crate::shard`).
    pub key_base: u64,
}

struct Kernels {
    column_sums: CudaFunction,
    topic_histogram: CudaFunction,
    hashed_column_sums: CudaFunction,
    normalizers: CudaFunction,
    count_words: CudaFunction,
    rebuild: CudaFunction,
    sample: CudaFunction,
    init: CudaFunction,
    word_mass: CudaFunction,
    loglik: CudaFunction,
    radix_count: CudaFunction,
    radix_scan_tiles: CudaFunction,
    radix_scan_totals: CudaFunction,
    radix_scatter: CudaFunction,
    docs_of_positions: CudaFunction,
    heldout_phi_rows: CudaFunction,
    heldout_foldin: CudaFunction,
    heldout_word_prefix: CudaFunction,
    heldout_foldin_sparse: CudaFunction,
    word_top2: CudaFunction,
    word_of_positions: CudaFunction,
    compact_counts: CudaFunction,
    add_entries: CudaFunction,
}

/// A chunk's arrays on the device (also a streaming slot, sized for the largest chunk).
struct DeviceChunk {
    token_doc: CudaSlice<u32>,
    token_src: CudaSlice<u32>,
    items: CudaSlice<u32>,
    doc_off: CudaSlice<u32>,
    z: CudaSlice<u16>,
    /// ezlda: each token's word (corpus order), built from the work items once for a resident
    /// chunk (3.8 ms an iteration on 100M tokens when rebuilt every sweep, measured on an H200)
    /// and after each copy into a streaming slot; one element for the other samplers.
    word_of: CudaSlice<u32>,
    word_of_ready: bool,
}

/// A chunk's arrays in host memory (streamed runs): page-locked, or pageable where page-locking
/// was refused ([`HostBuffer`]).
struct HostChunk {
    token_doc: HostBuffer<u32>,
    token_src: HostBuffer<u32>,
    items: HostBuffer<u32>,
    doc_off: HostBuffer<u32>,
    z: HostBuffer<u16>,
}

/// Doc-topic rows of the chunk being sampled: one entry per non-zero, topic and count packed in
/// one or two words (`RowEntry` in the kernels; `wide_rows`).
struct Rows {
    entries: CudaSlice<u32>,
    nnz: CudaSlice<u32>,
    /// ezlda: each token's C1/C2 pair, as wide as a row entry (one element for the other
    /// samplers).
    pairs: CudaSlice<u32>,
}

pub use super::plan::wide_rows;

/// Sizes of one chunk.
#[derive(Clone, Copy, Debug)]
struct ChunkMeta {
    token_start: u64,
    tokens: usize,
    docs: usize,
    items: usize,
}

enum Storage {
    Resident {
        chunks: Vec<DeviceChunk>,
        rows: Rows,
    },
    Streamed {
        host: Vec<HostChunk>,
        slots: Box<[(DeviceChunk, Rows); 2]>,
    },
}

impl EngineConfig {
    /// The sampler's entry point in kernels.cu: `sample_body<EXCLUDE, THREE>`'s three, or mh's
    /// `sample_mh`.
    pub fn sample_entry(&self) -> &'static str {
        match (
            self.mh_steps.is_some(),
            self.exclude_own_assignment,
            self.three_branch,
        ) {
            (true, _, _) => "sample_mh",
            (false, true, true) => "sample_ezlda",
            (false, true, false) => "sample_fcgs",
            (false, false, _) => "sample_esca",
        }
    }
}

/// The GPU side of a training run.
pub struct Engine {
    ctx: Arc<CudaContext>,
    /// Main stream (model updates) and the two chunk streams.
    main: Arc<CudaStream>,
    lanes: Lanes,
    /// The stream of NCCL's collectives and the exchange's own kernels, at the device's highest
    /// priority: while a sweep runs in slices, a slice's exchange gets its blocks as the later
    /// slices' sampling blocks retire, instead of after all of them.
    exchange: Arc<CudaStream>,
    kernels: Kernels,
    cfg: EngineConfig,
    /// Word-topic counts (dense or hybrid rows, see `word_topics`) and where each word's row is.
    b: CudaSlice<u32>,
    /// The next iteration's counts, accumulated by the sweep; one unused cell when the plan
    /// keeps one copy (`one_copy`).
    bn: CudaSlice<u32>,
    /// [`plan::CountCopies::One`]: the sweep writes no counts and the commit recounts B from
    /// the new assignments ([`Engine::recount`]).
    one_copy: bool,
    word_off: CudaSlice<u64>,
    word_slots: CudaSlice<u32>,
    dense_rows: u32,
    hashed_cells: u64,
    n: CudaSlice<u64>,
    /// The topic totals of B′, counted from the sweep's new assignments (a histogram of z, not
    /// a read of B′): the commit's n without the column sums' pass over B′.
    n_next: CudaSlice<u64>,
    next_totals: NextTotals,
    /// Whether this engine exchanges its counts with others (then `n_next` counts only its
    /// share until the exchange sums it).
    grouped: bool,
    inv_norm: CudaSlice<f32>,
    scratch: CudaSlice<u32>,
    scratch_warps: u32,
    meta: Vec<ChunkMeta>,
    storage: Storage,
    smem_bytes: u32,
    sample_threads: u32,
    multiprocessors: u32,
    /// The word-topic row index on the host, for reading rows back.
    host_word_off: Vec<u64>,
    host_word_slots: Vec<u32>,
    /// 1 / (n_k + Vβ) in double, per word Σ_k φ_kw, and the log-likelihood accumulator.
    inv_f64: CudaSlice<f64>,
    mass: CudaSlice<f64>,
    acc: CudaSlice<u64>,
    /// ezlda: each word's K1/K2 pair (one element for the other samplers), and the iteration's
    /// tokens that skipped their row and their final draw.
    top2: CudaSlice<u32>,
    top3: CudaSlice<f32>,
    skip_stats: CudaSlice<u64>,
    /// mh's test hook ([`Engine::mh_sweep_from`]): each token's chain start, and the control
    /// rates; `None` and false in runs.
    mh_starts: Option<CudaSlice<u16>>,
    mh_own_kept: bool,
    /// The sparse exchange's buffers, made at the first exchange over NCCL that has room for
    /// them (`None` until then, or for good when there is no room).
    sparse: Option<SparseExchange>,
    /// The sweep cut at words into slices whose counts are exchanged while later slices sample
    /// (several GPUs over NCCL, a resident corpus; decided at the first such exchange, see
    /// [`Engine::slice_the_sweep`]).
    slicing: Slicing,
    /// The last sweep's events when it ran in slices, for the exchange that follows it.
    sliced_sweep: Option<SlicedSweep>,
    /// Set by an exchange that, while the counts travel, cleared the next sweep's B′ (the B
    /// the sweep just read) and rebuilt its document rows on a chunk stream (see
    /// [`Engine::prepare_next_sweep`]): the event the next sweep waits for instead of doing
    /// both itself.
    prepared: Option<CudaEvent>,
    /// Seconds of each step of [`Engine::new`].
    open_seconds: Vec<(&'static str, f64)>,
    /// Host memory the word-topic rows are copied back into ([`Engine::download_rows`]), kept
    /// between pieces so that writing a model does not fault in fresh pages for every piece
    /// (page-locked where granted, so the copies also run at DMA speed).
    row_staging: Option<HostBuffer<u32>>,
}

/// What `n_next` holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NextTotals {
    /// Nothing usable: the commit sums B′'s columns.
    Stale,
    /// The totals of this engine's sweep.
    Local,
    /// The totals of every engine's sweep, summed by the exchange.
    Summed,
}

/// What the sparse exchange between GPUs needs on each GPU: this GPU's non-zero cells as entries
/// (cell << 24 | count), every GPU's entries gathered, and the compaction's two counters.
struct SparseExchange {
    /// Entries per GPU that fit: an exchange whose largest GPU has more goes dense.
    capacity: u64,
    /// This GPU's entries in `compact_counts`'s layout: the two counts, 2·`tiles` header
    /// words, `capacity` entries.
    own: CudaSlice<u32>,
    /// Every GPU's `own` up to the largest GPU's last entry, in rank order.
    all: CudaSlice<u32>,
    status: CudaSlice<u64>,
    /// The largest GPU's entry count, summed over the GPUs by a max.
    largest: CudaSlice<u64>,
    /// Exchanges left to go dense without compacting, after one whose largest GPU had too many
    /// entries (the same on every GPU: it follows from the max they share), a number for each
    /// slice of the sweep.
    dense_for: Vec<u32>,
}

/// A sweep's work items grouped by slices of the vocabulary, so that a slice's new counts are
/// final when its items are sampled and can travel while the next slices sample (the overlap of
/// communication with computation in CuLDA_CGS §6.2 and ezLDA's multi-GPU pipeline, here over
/// word ranges of one sweep). Every GPU cuts at the same words, chosen from their summed token
/// counts, so that their collectives cover the same cells in the same order.
struct Slices {
    /// First word of each slice, then V.
    words: Vec<u32>,
    /// First work item of each slice in the regrouped item list, then the number of items.
    items: Vec<u32>,
}

/// Whether the sweep runs in slices, decided by every GPU together at the first exchange over
/// NCCL.
enum Slicing {
    Undecided,
    Whole,
    Sliced(Slices),
}

/// What a sweep in slices leaves for its exchange.
struct SlicedSweep {
    /// Recorded on the main stream after each slice's sampling.
    slices: Vec<CudaEvent>,
    /// After the whole sweep (the topic histogram included), with timing: the exchange's time
    /// not hidden behind the sweep is measured from it.
    end: CudaEvent,
}

/// Slices a sweep is cut into when [`SLICED_FROM_GPUS`] or more GPUs exchange over NCCL
/// (`TOPOS_EXCHANGE_SLICES` overrides it; 1 runs the sweep whole and then the exchange).
const EXCHANGE_SLICES: u32 = 4;

/// The fewest GPUs at which the sweep runs in slices by default. Measured (BENCHMARKS, "The
/// exchange beside the sweep"): on two H200s the slices hid 70-80% of the exchange but the loop
/// moved -0.5 to +0.8%, because the exchange's kernels share the sweep's SMs and bandwidth; on
/// four, where each GPU's share of the sweep is smaller against the same V·K exchange, they took
/// 1.0-3.0% off the loop in every pair.
const SLICED_FROM_GPUS: usize = 4;

/// Blocks a multiprocessor for the exchange's grid-stride kernels.
const EXCHANGE_BLOCKS_PER_SM: u64 = 8;

/// Word buckets of the token histogram the GPUs sum to agree on the slices' first words.
const SLICE_BUCKETS: u32 = 4096;

/// Cells a tile of `compact_counts` (its blocks of [`BLOCK`] threads, 8 cells a thread): an
/// entry's offset in its tile has kernels.cu's `COMPACT_OFFSET_BITS` (11) bits.
const COMPACT_TILE: u64 = BLOCK as u64 * 8;
const _: () = assert!(COMPACT_TILE == 1 << 11);

/// Exchanges that go dense without trying after one whose non-zeros did not fit: counts change
/// slowly between iterations, and the compaction reads all of the counts.
const DENSE_AFTER_MISS: u32 = 2;

/// Floats of the sampling tree for K leaves (the same arithmetic as `tree_layout` in the kernel).
pub fn tree_floats(k: u32) -> u32 {
    let pad = |x: u32| x.div_ceil(32) * 32;
    let (mut total, mut size, mut level) = (0, pad(k), 0);
    loop {
        total += size;
        if size <= 32 || level == 3 {
            return total;
        }
        size = pad(size.div_ceil(32));
        level += 1;
    }
}

/// Threads of a sampling block for a tree of `smem_bytes`: 256 while 4 such blocks fit in a
/// multiprocessor's shared memory (`per_sm` bytes), 512 while 2 fit, else 1,024, so that the
/// blocks shared memory allows still hold about 32 warps per multiprocessor (see
/// `WARPS_PER_BLOCK` in the kernels, and `sampler_shape`).
pub fn sample_block_threads(smem_bytes: u32, per_sm: u32) -> u32 {
    let blocks = u64::from(per_sm) / u64::from(smem_bytes.max(1));
    match blocks {
        4.. => 256,
        2..=3 => 512,
        _ => 1024,
    }
}

/// The sampler's compile-time shape (see [`sampler_shape`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SamplerShape {
    /// Document-row entries held in registers per lane (`ROW_REGS`): rows of up to 32 × this
    /// many non-zeros are drawn from registers.
    pub row_regs: u32,
    /// Resident blocks per multiprocessor it is compiled for (`MIN_BLOCKS`, which bounds its
    /// registers).
    pub min_blocks: u32,
    /// Rows of at most half the registers' entries loaded and drawn at half width
    /// (`ROW_SPLIT`).
    pub split_rows: bool,
    /// A middle width between half and all of the registers (`ROW_MID`; 0: none): rows that
    /// outgrow half the registers by a little are drawn at this many slots, not all of them.
    pub mid_regs: u32,
    /// The next document's row fetched while the current one's tokens draw (`ROW_PREFETCH`).
    pub prefetch_rows: bool,
    /// Groups of 32 tree leaves whose word-topic loads each warp keeps in flight at once
    /// (`LEAF_BATCH`).
    pub leaf_batch: u32,
}

/// The sampler's compile-time shape for K topics in blocks of `sample_threads`.
///
/// Measured on an H100 (NYTimes-shaped corpus, tokens/s of iterations 21-40, `bash bench/gpu.sh
/// tune`), session 13: document rows average about 100 non-zeros at K = 1,000 and at
/// K = 10,000 alike.
/// - K ≤ 2,048: 4 row registers, one width, no fetching ahead, 40 warps per multiprocessor
///   (48 registers a thread): esca 3,265M, cgs 2,472M. With 48 warps (40 registers, spilling)
///   3,245M and 2,456M; fetching ahead needs registers this shape has not got (3,028M).
/// - Above: 8 row registers with rows of up to 128 non-zeros at 4, fetching ahead, 32 warps
///   (64 registers): esca 2,761M at K = 10,000, against 2,560M without fetching ahead and
///   2,244M for the earlier kernel (8 registers always, no fetching ahead).
///
/// Session 14, 100 iterations (tokens/s of iterations 1-100 / 51-100): esca's rows grow as it
/// runs at K = 10,000 (it keeps every token's own count, so a topic a document holds once
/// stays; its late iterations ran 10% slower than iterations 26-50), past the 128 non-zeros of
/// the narrow width. A middle width of 5 registers (rows of up to 160) and leaf loads 8 groups
/// deep took esca from 2,517M / 2,609M to 2,650M / 2,786M there; cgs 2,076M / 2,303M to
/// 2,124M / 2,315M; K = 32,768 esca 2,111M / 2,262M to 2,144M / 2,279M. At K = 1,000 the deeper
/// leaf loads cost 1% (esca 3,350M to 3,306M over iterations 21-40), so they stay at 4 there.
///
/// `TOPOS_GPU_ROW_REGS` and `TOPOS_GPU_MIN_BLOCKS` override the first two for tuning, and
/// `TOPOS_GPU_DEFINES` any of the kernels' compile-time switches (bench/gpu.sh tune).
pub fn sampler_shape(topics: u32, sample_threads: u32) -> SamplerShape {
    let small = topics <= 2048;
    let (regs, warps) = if small { (4, 40) } else { (8, 32) };
    let blocks = (warps * 32 / sample_threads).max(1);
    let tuning = Tuning::get();
    SamplerShape {
        row_regs: tuning.row_regs.unwrap_or(regs),
        min_blocks: tuning.min_blocks.unwrap_or(blocks),
        split_rows: !small,
        mid_regs: if small { 0 } else { 5 },
        prefetch_rows: !small,
        leaf_batch: if small { 4 } else { 8 },
    }
}

/// Compiles `kernels.cu` with NVRTC for compute capability `major.minor` (or takes it from the
/// PTX cache, `topos_cuda::compile`).
fn compile_ptx(
    shape: SamplerShape,
    sample_threads: u32,
    wide_rows: bool,
    major: i32,
    minor: i32,
) -> Result<topos_cuda::cudarc::nvrtc::Ptx, GpuError> {
    let arch: &'static str = Box::leak(format!("compute_{major}{minor}").into_boxed_str());
    let defines = [
        ("WARPS_PER_BLOCK", sample_threads / 32),
        ("ROW_REGS", shape.row_regs),
        ("MIN_BLOCKS", shape.min_blocks),
        ("ROW_SPLIT", u32::from(shape.split_rows)),
        ("ROW_MID", shape.mid_regs),
        ("ROW_PREFETCH", u32::from(shape.prefetch_rows)),
        ("LEAF_BATCH", shape.leaf_batch),
        ("WIDE_ROWS", u32::from(wide_rows)),
    ];
    // A tuning definition replaces the engine's own of the same name.
    let options = Tuning::get().nvrtc_options(&defines, &[]);
    Ok(topos_cuda::compile::compile_cached(SOURCE, options, arch)?.0)
}

fn compile(
    ctx: &Arc<CudaContext>,
    topics: u32,
    sample_threads: u32,
    wide_rows: bool,
    sample_entry: &str,
) -> Result<Kernels, GpuError> {
    let shape = sampler_shape(topics, sample_threads);
    let (major, minor) = ctx
        .compute_capability()
        .check(|| "reading the compute capability".into())?;
    if major < 7 {
        return Err(GpuError::Unsupported(format!(
            "the GPU engine needs compute capability 7.0 or newer (warp match instructions); this device has {major}.{minor}; train with --device cpu"
        )));
    }
    let ptx = compile_ptx(shape, sample_threads, wide_rows, major, minor)?;
    let module = ctx
        .load_module(ptx)
        .check(|| "loading the compiled kernels".into())?;
    let f = |name: &str| {
        module
            .load_function(name)
            .check(|| format!("finding kernel {name}"))
    };
    Ok(Kernels {
        column_sums: f("column_sums")?,
        topic_histogram: f("topic_histogram")?,
        hashed_column_sums: f("hashed_column_sums")?,
        normalizers: f("normalizers")?,
        count_words: f("count_words")?,
        rebuild: f("rebuild_doc_topics")?,
        // Each sampler's own entry point ([`EngineConfig::sample_entry`]).
        sample: f(sample_entry)?,
        init: f("init_assignments")?,
        word_mass: f("word_mass")?,
        loglik: f("loglik")?,
        radix_count: f("radix_count")?,
        radix_scan_tiles: f("radix_scan_tiles")?,
        radix_scan_totals: f("radix_scan_totals")?,
        radix_scatter: f("radix_scatter")?,
        docs_of_positions: f("docs_of_positions")?,
        heldout_phi_rows: f("heldout_phi_rows")?,
        heldout_foldin: f("heldout_foldin")?,
        heldout_word_prefix: f("heldout_word_prefix")?,
        heldout_foldin_sparse: f("heldout_foldin_sparse")?,
        word_top2: f("word_top2")?,
        word_of_positions: f("word_of_positions")?,
        compact_counts: f("compact_counts")?,
        add_entries: f("add_entries")?,
    })
}

/// `v`, or one default element when empty (a device allocation needs at least one).
fn pad<T: Clone + Default>(v: &[T]) -> Vec<T> {
    if v.is_empty() {
        vec![T::default()]
    } else {
        v.to_vec()
    }
}

fn flatten(items: &[Item]) -> Vec<u32> {
    items.iter().flat_map(|i| i.iter().copied()).collect()
}

/// A partition's PDOW arrays read back: positions and documents.
pub type PdowArrays = (Vec<u32>, Vec<u32>);

/// Tokens per tile and digit bits of the device PDOW sort (`SORT_TILE`, `RADIX_BITS` in
/// kernels.cu).
const SORT_TILE: u32 = 4096;
const RADIX_BITS: u32 = 9;

/// Word ids copied to the device per staging buffer when the device sorts (64 MiB).
const DEVICE_SORT_PIECE: usize = 1 << 24;

/// The device's temporaries for sorting a partition of up to `capacity` tokens.
struct DeviceSort {
    keys: CudaSlice<u32>,
    vals: CudaSlice<u32>,
    hist: CudaSlice<u32>,
    totals: CudaSlice<u32>,
    base: CudaSlice<u32>,
}

impl DeviceSort {
    /// Largest partition the kernels' 32-bit indices sort without wrapping (a tile's end and a
    /// grid-stride step stay below 2³²).
    const MAX_TOKENS: usize = (u32::MAX - (1 << 25)) as usize;

    /// Device bytes of [`DeviceSort::new`] for `capacity` tokens.
    fn bytes(capacity: usize) -> usize {
        8 * capacity + 4 * (capacity.div_ceil(SORT_TILE as usize) + 2) * (1 << RADIX_BITS)
    }

    /// `None` when the device has no room for them (the host then sorts).
    fn new(main: &Arc<CudaStream>, capacity: usize) -> Option<Self> {
        let tiles = capacity.div_ceil(SORT_TILE as usize).max(1);
        let bins = 1usize << RADIX_BITS;
        // SAFETY: every temporary is written by a kernel before it is read.
        unsafe {
            Some(Self {
                keys: main.alloc::<u32>(capacity.max(1)).ok()?,
                vals: main.alloc::<u32>(capacity.max(1)).ok()?,
                hist: main.alloc::<u32>(tiles * bins).ok()?,
                totals: main.alloc::<u32>(bins).ok()?,
                base: main.alloc::<u32>(bins).ok()?,
            })
        }
    }

    /// Sorts a partition on the device: `token_doc` holds its `n` word ids in corpus order (the
    /// largest `max_word`) and receives each entry's document, `token_src` receives each entry's
    /// position. The host's [`crate::layout::PdowFiller`] gives the same arrays.
    #[allow(clippy::too_many_arguments)]
    fn sort(
        &mut self,
        main: &Arc<CudaStream>,
        kernels: &Kernels,
        token_doc: &mut CudaSlice<u32>,
        token_src: &mut CudaSlice<u32>,
        n: u32,
        max_word: u32,
        doc_off: &CudaSlice<u32>,
        num_docs: u32,
    ) -> Result<(), GpuError> {
        if n == 0 {
            return Ok(());
        }
        let bits = (32 - max_word.leading_zeros()).max(1);
        let passes = bits.div_ceil(RADIX_BITS);
        let tiles = n.div_ceil(SORT_TILE);
        let bins = 1u32 << RADIX_BITS;
        // Raw pointers: the buffers a pass reads and writes change from pass to pass.
        let ptr = |s: &CudaSlice<u32>| s.device_ptr(main).0;
        let (doc_p, src_p, keys_p, vals_p) = (
            ptr(token_doc),
            ptr(token_src),
            ptr(&self.keys),
            ptr(&self.vals),
        );
        let launch = |what: &str, r: Result<(), _>| r.check(|| format!("launching {what}"));
        for pass in 0..passes {
            let shift = pass * RADIX_BITS;
            let keys_in = if pass % 2 == 0 { doc_p } else { keys_p };
            let keys_out = if pass % 2 == 0 { keys_p } else { doc_p };
            // The last pass writes the positions into token_src.
            let vals_out = if (passes - 1 - pass).is_multiple_of(2) {
                src_p
            } else {
                vals_p
            };
            let vals_in = if (passes - 1 - pass).is_multiple_of(2) {
                vals_p
            } else {
                src_p
            };
            let (iota, write_keys) = (i32::from(pass == 0), i32::from(pass + 1 < passes));
            // SAFETY: argument types match the kernels of kernels.cu; every index stays below
            // n, tiles and the bins.
            unsafe {
                launch(
                    "radix_count",
                    main.launch_builder(&kernels.radix_count)
                        .arg(&keys_in)
                        .arg(&n)
                        .arg(&shift)
                        .arg(&mut self.hist)
                        .arg(&tiles)
                        .launch(grid(tiles, 256))
                        .map(|_| ()),
                )?;
                launch(
                    "radix_scan_tiles",
                    main.launch_builder(&kernels.radix_scan_tiles)
                        .arg(&mut self.hist)
                        .arg(&tiles)
                        .arg(&mut self.totals)
                        .launch(grid(bins, 1024))
                        .map(|_| ()),
                )?;
                launch(
                    "radix_scan_totals",
                    main.launch_builder(&kernels.radix_scan_totals)
                        .arg(&self.totals)
                        .arg(&mut self.base)
                        .launch(grid(1, bins))
                        .map(|_| ()),
                )?;
                launch(
                    "radix_scatter",
                    main.launch_builder(&kernels.radix_scatter)
                        .arg(&keys_in)
                        .arg(&vals_in)
                        .arg(&keys_out)
                        .arg(&vals_out)
                        .arg(&n)
                        .arg(&shift)
                        .arg(&self.hist)
                        .arg(&tiles)
                        .arg(&self.base)
                        .arg(&iota)
                        .arg(&write_keys)
                        .launch(grid(tiles, 256))
                        .map(|_| ()),
                )?;
            }
        }
        let blocks = n.div_ceil(256).min(1 << 16);
        // SAFETY: argument types match `docs_of_positions`; doc_off has num_docs + 1 entries.
        unsafe {
            launch(
                "docs_of_positions",
                main.launch_builder(&kernels.docs_of_positions)
                    .arg(&src_p)
                    .arg(&doc_p)
                    .arg(&n)
                    .arg(doc_off)
                    .arg(&num_docs)
                    .launch(grid(blocks, 256))
                    .map(|_| ()),
            )
        }
    }
}

/// A one-dimensional launch of `blocks` blocks of `threads` threads, no dynamic shared memory.
/// Where a sweep's slices start: word 0, then the first word after each bucket edge at which
/// the tokens counted so far (`token_hist`, tokens a bucket of equal word ranges) reach the next
/// of `wanted` equal shares, then `words`. Fewer slices where shares fall in one bucket.
fn slice_cuts(token_hist: &[u64], words: u32, wanted: u32) -> Vec<u32> {
    let buckets = token_hist.len().max(1) as u64;
    let tokens: u64 = token_hist.iter().sum();
    let mut cuts = vec![0u32];
    let (mut seen, mut next) = (0u64, 1u64);
    for (b, &t) in token_hist.iter().enumerate() {
        seen += t;
        while next < u64::from(wanted) && seen * u64::from(wanted) >= tokens * next {
            // The bucket's end: the first word of bucket b + 1.
            let edge = ((b as u64 + 1) * u64::from(words)).div_ceil(buckets) as u32;
            if edge > *cuts.last().expect("starts with 0") && edge < words {
                cuts.push(edge);
            }
            next += 1;
        }
    }
    cuts.push(words);
    cuts
}

/// Work items (4 words each, the word first and its tokens third) grouped by the slice of their
/// word (`cuts` from [`slice_cuts`]), largest first within a slice (ties by word and first
/// entry, as [`chunks::items`] orders them), and the first item of each slice, then the number
/// of items.
fn group_items_by_slice(items: &[u32], cuts: &[u32]) -> (Vec<u32>, Vec<u32>) {
    let slice_of = |w: u32| cuts.partition_point(|&c| c <= w) - 1;
    let mut list: Vec<[u32; 4]> = items
        .chunks_exact(4)
        .map(|c| [c[0], c[1], c[2], c[3]])
        .collect();
    list.sort_by(|a, b| {
        slice_of(a[0])
            .cmp(&slice_of(b[0]))
            .then(b[2].cmp(&a[2]))
            .then(a[0].cmp(&b[0]))
            .then(a[1].cmp(&b[1]))
    });
    let mut item_cuts = vec![0u32; cuts.len()];
    for (i, it) in list.iter().enumerate() {
        item_cuts[slice_of(it[0]) + 1] = i as u32 + 1;
    }
    // A slice with no items here starts and ends where the one before ended.
    for j in 1..item_cuts.len() {
        item_cuts[j] = item_cuts[j].max(item_cuts[j - 1]);
    }
    (list.into_iter().flatten().collect(), item_cuts)
}

fn grid(blocks: u32, threads: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Wall time of consecutive steps.
pub(crate) struct Clock {
    last: std::time::Instant,
    pub laps: Vec<(&'static str, f64)>,
}

impl Clock {
    pub fn new() -> Self {
        Self {
            last: std::time::Instant::now(),
            laps: Vec::new(),
        }
    }
    pub fn lap(&mut self, what: &'static str) {
        let now = std::time::Instant::now();
        self.laps.push((what, (now - self.last).as_secs_f64()));
        self.last = now;
    }
}

/// Where the assignments start.
#[derive(Clone, Copy)]
pub enum StartTopics<'a> {
    /// Drawn on the device (or, for a streamed corpus, on the host into its page-locked
    /// chunks) with the CPU's numbers: `CounterRng(seed, Init, 0, token).below(K)`.
    Fresh,
    /// Given in corpus order (a checkpoint's).
    Given(&'a [u16]),
}

/// What a run starts from: the corpus, the shapes of its PDOW partitions (the device chunks,
/// whose per-token arrays are built a piece at a time and copied straight to where they live),
/// the initial assignments and where each word's word-topic row goes.
pub struct Start<'a> {
    pub docs: Docs<'a>,
    pub shapes: &'a [PartitionShape],
    pub topics: StartTopics<'a>,
    pub words: &'a WordTopicLayout,
    /// Most PDOW entries built on the host at once, where the host sorts ([`super::PIECE_TOKENS`]).
    pub piece_tokens: usize,
}

/// The topics of tokens `first..first + z.len()` as [`StartTopics::Fresh`] draws them.
fn initial_topics(z: &mut [u16], first: u64, topics: u32, seed: u64) {
    use topos_sampling::{CounterRng, Stream};
    z.par_iter_mut().enumerate().for_each(|(i, t)| {
        *t = CounterRng::new(seed, Stream::Init, 0, first + i as u64).below(topics) as u16;
    });
}

impl Engine {
    /// Uploads the corpus as `plan` says with the initial assignments, and builds the first
    /// counts on the device.
    pub fn new(
        ctx: Arc<CudaContext>,
        cfg: EngineConfig,
        plan: &Plan,
        start: Start<'_>,
        device: &topos_cuda::DeviceInfo,
    ) -> Result<Self, GpuError> {
        let Start {
            docs,
            shapes,
            topics: start_topics,
            words,
            piece_tokens,
        } = start;
        let (multiprocessors, max_shared_per_block) =
            (device.multiprocessors, device.max_shared_per_block);
        let mut clock = Clock::new();
        let smem_bytes = tree_floats(cfg.topics) * 4;
        let sample_threads = sample_block_threads(smem_bytes, device.shared_per_multiprocessor);
        let wide = cfg.wide_rows;
        let kernels = compile(&ctx, cfg.topics, sample_threads, wide, cfg.sample_entry())?;
        clock.lap("kernels");
        // Streams are synchronized explicitly with events below (two chunk streams share the
        // model: B is read-only during a sweep, B' only receives commutative atomics).
        // SAFETY: every buffer is freed only after the context synchronizes (Drop), and no buffer
        // is written by two streams except through atomics.
        unsafe { ctx.disable_event_tracking() };
        let main = ctx.new_stream().check(|| "creating a CUDA stream".into())?;
        let lanes = Lanes::new(&ctx)?;
        // Numerically smallest is highest; (0, 0) where the device has no priorities.
        let (_, highest) = topos_cuda::cudarc::driver::result::stream::get_priority_range()
            .check(|| "reading the stream priorities".into())?;
        let exchange = ctx
            .new_stream_with_priority(highest)
            .check(|| "creating a CUDA stream".into())?;
        let k = cfg.topics as usize;
        let cells = words.cells as usize;
        if smem_bytes > max_shared_per_block {
            return Err(GpuError::Unsupported(format!(
                "K = {} needs {} KiB of shared memory per block for the sampling tree, the device allows {} KiB; use fewer topics",
                cfg.topics,
                smem_bytes / 1024,
                max_shared_per_block / 1024
            )));
        }
        kernels
            .sample
            .set_attribute(
                FnAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                smem_bytes as i32,
            )
            .check(|| "raising the sampler's shared-memory limit".into())?;
        let alloc = |what: &str, bytes: usize| format!("allocating {what} ({bytes} bytes)");
        let b = main
            .alloc_zeros::<u32>(cells.max(1))
            .check(|| alloc("the word-topic counts", cells * 4))?;
        let one_copy = plan.copies == plan::CountCopies::One;
        let next_cells = if one_copy { 1 } else { cells.max(1) };
        let bn = main
            .alloc_zeros::<u32>(next_cells)
            .check(|| alloc("the next word-topic counts", next_cells * 4))?;
        let word_off = main
            .clone_htod(&words.offsets)
            .check(|| alloc("the word-topic row index", words.offsets.len() * 8))?;
        let word_slots = main
            .clone_htod(&words.slots)
            .check(|| alloc("the word-topic row index", words.slots.len() * 4))?;
        let n = main
            .alloc_zeros::<u64>(k)
            .check(|| alloc("the topic totals", k * 8))?;
        let n_next = main
            .alloc_zeros::<u64>(k)
            .check(|| alloc("the next topic totals", k * 8))?;
        let inv_norm = main
            .alloc_zeros::<f32>(k)
            .check(|| alloc("the normalizers", k * 4))?;
        let longest = plan.longest_doc;
        let scratch_warps = plan::rebuild_warps(cfg.topics, multiprocessors, longest) as u32;
        let scratch_cells = plan::rebuild_scratch_cells(cfg.topics, multiprocessors, longest);
        // SAFETY: the histograms are written before they are read (the kernel clears the entries
        // each document touches); with no document longer than REBUILD_HASHED_TOKENS the one
        // cell is never touched.
        let scratch = unsafe { main.alloc::<u32>(scratch_cells as usize) }
            .check(|| alloc("the rebuild histograms", scratch_cells as usize * 4))?;

        let items: Vec<Vec<Item>> = shapes.iter().map(chunks::default_items).collect();
        let meta: Vec<ChunkMeta> = shapes
            .iter()
            .zip(&items)
            .map(|(p, it)| ChunkMeta {
                token_start: p.token_start,
                tokens: p.num_tokens,
                docs: p.docs.len(),
                items: it.len(),
            })
            .collect();
        let max_tokens = meta.iter().map(|m| m.tokens).max().unwrap_or(0).max(1);
        let max_docs = meta.iter().map(|m| m.docs).max().unwrap_or(0).max(1);
        let max_items = meta.iter().map(|m| m.items).max().unwrap_or(0).max(1);
        let new_rows = |s: &Arc<CudaStream>| -> Result<Rows, GpuError> {
            // SAFETY: rows are written by the rebuild before the sampler reads them.
            unsafe {
                let words = max_tokens * if wide { 2 } else { 1 };
                let pairs = if cfg.three_branch { words } else { 1 };
                Ok(Rows {
                    entries: s
                        .alloc::<u32>(words)
                        .check(|| alloc("doc-topic rows", words * 4))?,
                    nnz: s
                        .alloc::<u32>(max_docs)
                        .check(|| alloc("doc-topic rows", max_docs * 4))?,
                    pairs: s
                        .alloc::<u32>(pairs)
                        .check(|| alloc("the tokens' top-topic counts", pairs * 4))?,
                })
            }
        };
        let seed = cfg.seed;
        // Where the upload's time goes (reported with the open laps).
        let mut upload_laps: Vec<(&'static str, f64)> = Vec::new();
        let storage = match plan.mode {
            Mode::Resident => {
                // The device sorts each partition from its word ids (4 bytes a token copied, not
                // 8, and no host sort) where it has room for the sort's temporaries; otherwise
                // the PDOW arrays are built on the host a piece of words at a time.
                let largest = shapes.iter().map(|p| p.num_tokens).max().unwrap_or(0);
                // Room: the sort's temporaries beside what the upload allocates after them (10
                // bytes a token, the work items, offsets and rows), with 1 GiB to spare.
                let total: usize = shapes.iter().map(|p| p.num_tokens).sum();
                let after = 10 * total + 16 * (max_items + max_docs) + 8 * max_tokens;
                let room = ctx.mem_get_info().map_or(0, |(free, _)| free);
                let mut device_sort = if Tuning::get().host_pdow
                    || largest > DeviceSort::MAX_TOKENS
                    || room < DeviceSort::bytes(largest) + after + (1 << 30)
                {
                    None
                } else {
                    DeviceSort::new(&main, largest)
                };
                // Page-locked staging (cached, not write-combined: the host sort scatters its
                // writes), so the copies run at DMA speed (pageable copies are staged by the
                // driver at a fraction of it: 5.6 s for a 745M-token corpus). Two buffers taken
                // in turn, one filled while the other's copy runs, where pieces are small: word
                // ids in pieces of 2^24, or host-sorted pieces up to DOUBLE_STAGING_MAX_TOKENS
                // (page-locking costs about 0.4 s a GiB, more than the copy it would hide).
                let staging_started = std::time::Instant::now();
                let (cap, num_pairs, with_docs) = if device_sort.is_some() {
                    (largest.clamp(1, DEVICE_SORT_PIECE), 2, false)
                } else {
                    // The largest piece: at most piece_tokens, unless one word has more.
                    let cap = shapes
                        .iter()
                        .flat_map(|p| {
                            p.pieces(piece_tokens.max(1))
                                .into_iter()
                                .map(|r| (p.word_starts[r.end] - p.word_starts[r.start]) as usize)
                        })
                        .max()
                        .unwrap_or(0)
                        .max(1);
                    (
                        cap,
                        if cap <= super::DOUBLE_STAGING_MAX_TOKENS {
                            2
                        } else {
                            1
                        },
                        true,
                    )
                };
                let mut pairs = Vec::with_capacity(num_pairs);
                for _ in 0..num_pairs {
                    pairs.push((
                        HostBuffer::<u32>::zeroed(&ctx, cap, false)?,
                        HostBuffer::<u32>::zeroed(&ctx, if with_docs { cap } else { 1 }, false)?,
                    ));
                }
                let staging = "filling host memory for the upload";
                let mut bufs = Vec::with_capacity(2);
                for (s, d) in pairs.iter_mut() {
                    bufs.push((
                        s.as_mut_slice().check(|| staging.into())?,
                        d.as_mut_slice().check(|| staging.into())?,
                    ));
                }
                // The copy last issued from each pair.
                let mut copied: [Option<CudaEvent>; 2] = [None, None];
                let mut turn = 0usize;
                let mut sort_scratch = Vec::new();
                let mut chunks = Vec::with_capacity(shapes.len());
                upload_laps.push(("upload: staging", staging_started.elapsed().as_secs_f64()));
                let (mut sorting, mut waiting) = (0.0f64, 0.0f64);
                for (p, it) in shapes.iter().zip(&items) {
                    let what = |x: &str| format!("uploading the corpus ({x})");
                    let n = p.num_tokens.max(1);
                    // SAFETY: filled by the copies and the kernel below before any read.
                    let (mut token_doc, mut token_src, mut z) = unsafe {
                        (
                            main.alloc::<u32>(n).check(|| alloc("a partition", n * 4))?,
                            main.alloc::<u32>(n).check(|| alloc("a partition", n * 4))?,
                            main.alloc::<u16>(n).check(|| alloc("a partition", n * 2))?,
                        )
                    };
                    let doc_off = main
                        .clone_htod(&chunks::doc_offsets(docs, p))
                        .check(|| what("document offsets"))?;
                    if let Some(sorter) = device_sort.as_mut() {
                        // The word ids, through the staging buffers, into token_doc.
                        let local = &docs.tokens()[p.token_start as usize..][..p.num_tokens];
                        for first in (0..p.num_tokens).step_by(cap) {
                            let len = cap.min(p.num_tokens - first);
                            let b = turn % num_pairs;
                            turn += 1;
                            let t = std::time::Instant::now();
                            if let Some(e) = copied[b].take() {
                                e.synchronize().check(|| what("a piece"))?;
                            }
                            waiting += t.elapsed().as_secs_f64();
                            let buf = &mut bufs[b].0[..len];
                            buf.par_chunks_mut(1 << 20)
                                .zip(local[first..first + len].par_chunks(1 << 20))
                                .for_each(|(d, s)| d.copy_from_slice(s));
                            main.memcpy_htod(&*buf, &mut token_doc.slice_mut(first..first + len))
                                .check(|| what("word ids"))?;
                            copied[b] = Some(main.record_event(None).check(|| what("a piece"))?);
                        }
                        let t = std::time::Instant::now();
                        sorter.sort(
                            &main,
                            &kernels,
                            &mut token_doc,
                            &mut token_src,
                            p.num_tokens as u32,
                            p.words.last().copied().unwrap_or(0),
                            &doc_off,
                            p.docs.len() as u32,
                        )?;
                        sorting += t.elapsed().as_secs_f64();
                    }
                    // Otherwise the host sorts, a piece of words at a time.
                    let t = std::time::Instant::now();
                    let mut filler = match device_sort {
                        Some(_) => None,
                        None => Some(p.filler_reusing(docs, std::mem::take(&mut sort_scratch))),
                    };
                    sorting += t.elapsed().as_secs_f64();
                    let host_pieces = match filler {
                        Some(_) => p.pieces(piece_tokens.max(1)),
                        None => Vec::new(),
                    };
                    for piece in host_pieces {
                        let first = p.word_starts[piece.start] as usize;
                        let len = p.word_starts[piece.end] as usize - first;
                        let b = turn % num_pairs;
                        turn += 1;
                        // The pair's previous copy must be done before it is refilled.
                        let t = std::time::Instant::now();
                        if let Some(e) = copied[b].take() {
                            e.synchronize().check(|| what("a piece"))?;
                        }
                        waiting += t.elapsed().as_secs_f64();
                        let (src_buf, doc_buf) = &mut bufs[b];
                        let (src, doc) = (&mut src_buf[..len], &mut doc_buf[..len]);
                        let t = std::time::Instant::now();
                        if let Some(f) = filler.as_mut() {
                            f.fill(piece, src, doc);
                        }
                        sorting += t.elapsed().as_secs_f64();
                        let r = first..first + len;
                        main.memcpy_htod(&*src, &mut token_src.slice_mut(r.clone()))
                            .check(|| what("positions"))?;
                        main.memcpy_htod(&*doc, &mut token_doc.slice_mut(r))
                            .check(|| what("documents"))?;
                        copied[b] = Some(main.record_event(None).check(|| what("a piece"))?);
                    }
                    if let Some(f) = filler {
                        sort_scratch = f.into_scratch();
                    }
                    match start_topics {
                        StartTopics::Given(all) => {
                            let zs = &all[p.token_start as usize..][..p.num_tokens];
                            main.memcpy_htod(zs, &mut z.slice_mut(0..p.num_tokens))
                                .check(|| what("assignments"))?;
                        }
                        StartTopics::Fresh if p.num_tokens > 0 => {
                            let n = p.num_tokens as u64;
                            let blocks = n.div_ceil(u64::from(BLOCK)).min(1 << 16) as u32;
                            let (lo, hi) = (seed as u32, (seed >> 32) as u32);
                            // SAFETY: argument types match `init_assignments`; it writes z[0..n).
                            unsafe {
                                main.launch_builder(&kernels.init)
                                    .arg(&mut z)
                                    .arg(&n)
                                    .arg(&(p.token_start + cfg.key_base))
                                    .arg(&lo)
                                    .arg(&hi)
                                    .arg(&cfg.topics)
                                    .launch(grid(blocks, BLOCK))
                            }
                            .check(|| "launching init_assignments".into())?;
                        }
                        StartTopics::Fresh => {}
                    }
                    let of = if cfg.three_branch {
                        p.num_tokens.max(1)
                    } else {
                        1
                    };
                    chunks.push(DeviceChunk {
                        token_doc,
                        token_src,
                        items: main.clone_htod(&flatten(it)).check(|| what("work items"))?,
                        doc_off,
                        z,
                        // SAFETY: written by word_of_positions before the rebuild reads it.
                        word_of: unsafe { main.alloc::<u32>(of) }
                            .check(|| alloc("the tokens' words", of * 4))?,
                        word_of_ready: false,
                    });
                }
                // The staging pairs are freed here: their last copies must be done.
                let t = std::time::Instant::now();
                for e in copied.iter().flatten() {
                    e.synchronize()
                        .check(|| "uploading the corpus (a piece)".into())?;
                }
                waiting += t.elapsed().as_secs_f64();
                // The sort's temporaries are freed here: its kernels must be done.
                let t = std::time::Instant::now();
                main.synchronize()
                    .check(|| "sorting the corpus on the device".into())?;
                sorting += t.elapsed().as_secs_f64();
                drop(device_sort);
                upload_laps.push(("upload: sort", sorting));
                upload_laps.push(("upload: copy wait", waiting));
                Storage::Resident {
                    chunks,
                    rows: new_rows(&main)?,
                }
            }
            Mode::Streamed => {
                let mut sort_scratch = Vec::new();
                let mut host = Vec::with_capacity(shapes.len());
                for (p, it) in shapes.iter().zip(&items) {
                    let n = p.num_tokens;
                    // Cached (not write-combined): the counting sort scatters its writes.
                    let mut token_src = HostBuffer::<u32>::zeroed(&ctx, n, false)?;
                    let mut token_doc = HostBuffer::<u32>::zeroed(&ctx, n, false)?;
                    {
                        let fill = "filling host memory for streaming";
                        let src_all = token_src.as_mut_slice().check(|| fill.into())?;
                        let doc_all = token_doc.as_mut_slice().check(|| fill.into())?;
                        // The whole chunk is in its host buffer already: pieces go straight there.
                        let mut filler = p.filler_reusing(docs, std::mem::take(&mut sort_scratch));
                        for piece in p.pieces(piece_tokens.max(1)) {
                            let first = p.word_starts[piece.start] as usize;
                            let end = p.word_starts[piece.end] as usize;
                            filler.fill(piece, &mut src_all[first..end], &mut doc_all[first..end]);
                        }
                        sort_scratch = filler.into_scratch();
                    }
                    // Read back every iteration: not write-combined.
                    let mut z = HostBuffer::<u16>::zeroed(&ctx, n, false)?;
                    {
                        let zs = &mut z
                            .as_mut_slice()
                            .check(|| "filling host memory for streaming".into())?[..n];
                        match start_topics {
                            StartTopics::Given(all) => {
                                zs.copy_from_slice(&all[p.token_start as usize..][..n])
                            }
                            StartTopics::Fresh => {
                                initial_topics(zs, p.token_start + cfg.key_base, cfg.topics, seed)
                            }
                        }
                    }
                    host.push(HostChunk {
                        token_doc,
                        token_src,
                        items: HostBuffer::copy_of(&ctx, &flatten(it), true)?,
                        doc_off: HostBuffer::copy_of(&ctx, &chunks::doc_offsets(docs, p), true)?,
                        z,
                    });
                }
                let slot = |s: &Arc<CudaStream>| -> Result<(DeviceChunk, Rows), GpuError> {
                    // SAFETY: every slot array is filled by a copy before a kernel reads it.
                    let d = unsafe {
                        DeviceChunk {
                            token_doc: s
                                .alloc::<u32>(max_tokens)
                                .check(|| alloc("a chunk slot", max_tokens * 4))?,
                            token_src: s
                                .alloc::<u32>(max_tokens)
                                .check(|| alloc("a chunk slot", max_tokens * 4))?,
                            items: s
                                .alloc::<u32>(max_items * 4)
                                .check(|| alloc("a chunk slot", max_items * 16))?,
                            doc_off: s
                                .alloc::<u32>(max_docs + 1)
                                .check(|| alloc("a chunk slot", max_docs * 4))?,
                            z: s.alloc::<u16>(max_tokens)
                                .check(|| alloc("a chunk slot", max_tokens * 2))?,
                            word_of: s
                                .alloc::<u32>(if cfg.three_branch { max_tokens } else { 1 })
                                .check(|| alloc("a chunk slot", max_tokens * 4))?,
                            word_of_ready: false,
                        }
                    };
                    Ok((d, new_rows(s)?))
                };
                Storage::Streamed {
                    host,
                    slots: Box::new([slot(lanes.of(0))?, slot(lanes.of(1))?]),
                }
            }
        };
        main.synchronize().check(|| "uploading the corpus".into())?;
        lanes.synchronize(|| "allocating chunk slots".into())?;
        clock.lap("upload");
        clock.laps.extend(upload_laps);
        let inv_f64 = main
            .alloc_zeros::<f64>(k)
            .check(|| alloc("the normalizers", k * 8))?;
        let v = (cfg.words as usize).max(1);
        let mass = main
            .alloc_zeros::<f64>(v)
            .check(|| alloc("the word masses", v * 8))?;
        let acc = main
            .alloc_zeros::<u64>(1)
            .check(|| alloc("an accumulator", 8))?;
        let top2_len = if cfg.three_branch { v.max(1) } else { 1 };
        let top2 = main
            .alloc_zeros::<u32>(top2_len)
            .check(|| alloc("the words' top topics", top2_len * 4))?;
        let top3 = main
            .alloc_zeros::<f32>(top2_len)
            .check(|| alloc("the words' top topics", top2_len * 4))?;
        let skip_stats = main
            .alloc_zeros::<u64>(2)
            .check(|| alloc("an accumulator", 16))?;
        let mut engine = Self {
            ctx,
            main,
            lanes,
            exchange,
            kernels,
            cfg,
            b,
            bn,
            one_copy,
            word_off,
            word_slots,
            dense_rows: words.dense_rows,
            hashed_cells: words.hashed_cells(),
            n,
            n_next,
            next_totals: NextTotals::Stale,
            grouped: false,
            inv_norm,
            scratch,
            scratch_warps,
            meta,
            storage,
            smem_bytes,
            sample_threads,
            multiprocessors,
            host_word_off: words.offsets.clone(),
            host_word_slots: words.slots.clone(),
            inv_f64,
            mass,
            acc,
            top2,
            top3,
            skip_stats,
            mh_starts: None,
            mh_own_kept: false,
            sparse: None,
            slicing: Slicing::Undecided,
            sliced_sweep: None,
            prepared: None,
            open_seconds: Vec::new(),
            row_staging: None,
        };
        engine.initial_counts()?;
        clock.lap("counts");
        engine.open_seconds = clock.laps;
        Ok(engine)
    }

    /// Whether a streamed corpus lives in pageable host memory because page-locking was refused
    /// (its copies then do not overlap the sweeps; see [`HostBuffer`]).
    pub fn host_memory_pageable(&self) -> bool {
        match &self.storage {
            Storage::Streamed { host, .. } => host.iter().any(|h| {
                !(h.token_doc.is_pinned()
                    && h.token_src.is_pinned()
                    && h.items.is_pinned()
                    && h.doc_off.is_pinned()
                    && h.z.is_pinned())
            }),
            Storage::Resident { .. } => false,
        }
    }

    /// Seconds of each step of opening.
    pub fn open_seconds(&self) -> &[(&'static str, f64)] {
        &self.open_seconds
    }

    /// K.
    pub fn topics(&self) -> u32 {
        self.cfg.topics
    }

    /// Number of chunks.
    pub fn chunks(&self) -> usize {
        self.meta.len()
    }

    /// B from the initial assignments, then n and the normalizers.
    fn initial_counts(&mut self) -> Result<(), GpuError> {
        let k = self.cfg.topics;
        match &mut self.storage {
            Storage::Resident { chunks, .. } => {
                for (c, m) in chunks.iter().zip(&self.meta) {
                    let rows = (&self.word_off, &self.word_slots);
                    launch_count(&self.main, &self.kernels, c, m, k, rows, &mut self.b)?;
                }
            }
            Storage::Streamed { host, slots } => {
                // One chunk at a time on the main stream: this runs once.
                let (d, _) = &mut slots[0];
                for (h, m) in host.iter().zip(&self.meta) {
                    copy_in(&self.main, h, d, m)?;
                    let rows = (&self.word_off, &self.word_slots);
                    launch_count(&self.main, &self.kernels, d, m, k, rows, &mut self.b)?;
                }
            }
        }
        self.totals()?;
        self.main
            .synchronize()
            .check(|| "building the initial counts".into())
    }

    /// n = column sums of B (of its dense rows, plus the counts of its hashed rows); normalizers
    /// from n.
    fn totals(&mut self) -> Result<(), GpuError> {
        let k = self.cfg.topics;
        self.main
            .memset_zeros(&mut self.n)
            .check(|| "clearing the topic totals".into())?;
        if self.dense_rows > 0 {
            self.dense_column_sums()?;
        }
        if self.hashed_cells > 0 {
            let hashed = self.hashed_cells;
            let dense_cells = u64::from(self.dense_rows) * u64::from(k);
            let view = self.b.slice(dense_cells as usize..);
            let blocks = hashed
                .div_ceil(u64::from(BLOCK))
                .min(u64::from(self.multiprocessors.max(1)) * 8);
            let cfg = grid(blocks as u32, BLOCK);
            // SAFETY: argument types match the kernel's signature; the hashed cells follow the
            // dense rows in `b`.
            unsafe {
                self.main
                    .launch_builder(&self.kernels.hashed_column_sums)
                    .arg(&view)
                    .arg(&hashed)
                    .arg(&mut self.n)
                    .launch(cfg)
            }
            .check(|| "launching hashed_column_sums".into())?;
        }
        self.normalizers()
    }

    /// The normalizers 1 / (n_k + Vβ) from n.
    fn normalizers(&mut self) -> Result<(), GpuError> {
        let k = self.cfg.topics;
        let v_beta = f64::from(self.cfg.words) * self.cfg.beta;
        // SAFETY: argument types match the kernel's signature.
        unsafe {
            self.main
                .launch_builder(&self.kernels.normalizers)
                .arg(&self.n)
                .arg(&k)
                .arg(&v_beta)
                .arg(&mut self.inv_norm)
                .launch(LaunchConfig::for_num_elems(k))
        }
        .check(|| "launching normalizers".into())?;
        Ok(())
    }

    /// n += the column sums of the dense rows (a `dense_rows × K` matrix at the start of B).
    fn dense_column_sums(&mut self) -> Result<(), GpuError> {
        let (k, v) = (self.cfg.topics, self.dense_rows);
        let col_blocks = k.div_ceil(BLOCK);
        let target_blocks = self.multiprocessors.max(1) * 16;
        let slices = (target_blocks / col_blocks).clamp(1, v.max(1));
        let per_slice = v.div_ceil(slices).max(1);
        let cfg = LaunchConfig {
            grid_dim: (col_blocks, v.div_ceil(per_slice).max(1), 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: argument types match the kernel's signature.
        unsafe {
            self.main
                .launch_builder(&self.kernels.column_sums)
                .arg(&self.b)
                .arg(&v)
                .arg(&k)
                .arg(&per_slice)
                .arg(&mut self.n)
                .launch(cfg)
        }
        .check(|| "launching column_sums".into())?;
        Ok(())
    }

    /// The E-step of iteration `iteration` (1 for the first; it keys the random numbers): every
    /// chunk sampled into the next counts B′. Queued, not waited for: [`Engine::commit`] waits.
    pub fn sweep(&mut self, iteration: u32) -> Result<(), GpuError> {
        // B′ cleared and the first chunk's rows rebuilt during the last exchange, or now.
        let prepared = self.prepared.take();
        match &prepared {
            Some(done) => self.main.wait(done).check(|| "ordering streams".into())?,
            None if self.one_copy => {}
            None => self
                .main
                .memset_zeros(&mut self.bn)
                .check(|| "clearing the next word-topic counts".into())?,
        }
        self.main
            .memset_zeros(&mut self.n_next)
            .check(|| "clearing the next topic totals".into())?;
        self.next_totals = NextTotals::Local;
        if self.cfg.three_branch {
            self.top_topics()?;
        }
        let Self {
            main,
            lanes,
            kernels,
            cfg,
            b,
            bn,
            word_off,
            word_slots,
            n,
            n_next,
            inv_norm,
            scratch,
            scratch_warps,
            meta,
            storage,
            smem_bytes,
            sample_threads,
            top2,
            top3,
            skip_stats,
            mh_starts,
            mh_own_kept,
            one_copy,
            slicing,
            sliced_sweep,
            ..
        } = self;
        let model = Model {
            write_next: !*one_copy,
            b,
            word_off,
            word_slots,
            n,
            n_next,
            inv_norm,
            top2,
            top3,
            skip_stats,
            mh_starts: mh_starts.as_ref(),
            mh_own_kept: *mh_own_kept,
            cfg: *cfg,
            iteration,
            smem_bytes: *smem_bytes,
            sample_threads: *sample_threads,
            scratch_warps: *scratch_warps,
        };
        match storage {
            Storage::Resident { chunks, rows } => {
                let last = chunks.len().saturating_sub(1);
                for (i, (c, m)) in chunks.iter_mut().zip(meta.iter()).enumerate() {
                    let rows_ready = i == 0 && prepared.is_some();
                    match &*slicing {
                        // In slices (several GPUs): the last chunk's, whose ends are the events
                        // each slice's exchange waits for (`Engine::exchange_on_gpus`); a slice
                        // of words is final once the last chunk has sampled it.
                        Slicing::Sliced(slices) if i == last => {
                            let mut view = scratch.slice_mut(..);
                            let ends = sweep_view(
                                main,
                                kernels,
                                &model,
                                c,
                                rows,
                                &mut view,
                                bn,
                                m,
                                rows_ready,
                                Some(&slices.items),
                            )?;
                            let end = main
                                .record_event(Some(CU_EVENT_DEFAULT))
                                .check(|| "recording a CUDA event".into())?;
                            *sliced_sweep = Some(SlicedSweep { slices: ends, end });
                        }
                        _ => sweep(main, kernels, &model, c, rows, scratch, bn, m, rows_ready)?,
                    }
                }
            }
            Storage::Streamed { host, slots } => {
                lanes.follow(main)?;
                // The two slots share one histogram scratch: give each its half.
                for (i, (h, m)) in host.iter_mut().zip(meta.iter()).enumerate() {
                    let s = lanes.of(i);
                    let (d, rows) = &mut slots[i % 2];
                    copy_in(s, h, d, m)?;
                    let half = (*scratch_warps / 2).max(1);
                    let cells = half as usize * cfg.topics as usize;
                    let mut part = if scratch.len() >= 2 * cells {
                        scratch.slice_mut((i % 2) * cells..(i % 2 + 1) * cells)
                    } else {
                        // No histograms (no document needs one): the unused cell for both.
                        scratch.slice_mut(..)
                    };
                    let model_half = Model {
                        scratch_warps: half,
                        ..model
                    };
                    sweep_view(
                        s,
                        kernels,
                        &model_half,
                        d,
                        rows,
                        &mut part,
                        bn,
                        m,
                        false,
                        None,
                    )?;
                    s.memcpy_dtoh(&d.z.slice(0..m.tokens), &mut h.z)
                        .check(|| "copying a chunk's assignments back".into())?;
                }
                lanes.join(main)?;
            }
        }
        Ok(())
    }

    /// The start's counts (built from this engine's share of the assignments) summed over every
    /// worker, as [`Engine::exchange_counts`] sums an iteration's, with the totals that follow.
    pub fn exchange_start_counts(
        &mut self,
        transport: &dyn crate::transport::Transport,
        comm: Option<&mut topos_cuda::nccl::DeviceComm>,
    ) -> Result<(), GpuError> {
        std::mem::swap(&mut self.b, &mut self.bn);
        let summed = self.exchange_counts(transport, comm);
        std::mem::swap(&mut self.b, &mut self.bn);
        summed?;
        self.totals()?;
        self.main
            .synchronize()
            .check(|| "summing the start's counts".into())
    }

    /// The ordinal of the engine's GPU.
    pub fn ordinal(&self) -> usize {
        self.ctx.ordinal()
    }

    /// The stream NCCL's collectives are enqueued on (a communicator joins it).
    pub fn exchange_stream(&self) -> Arc<CudaStream> {
        self.exchange.clone()
    }

    /// ezlda: each word's two topics of largest p*(k) from the frozen counts (`word_top2`), what
    /// the rebuild's pairs and the sampler's third branch read this iteration; clears the
    /// iteration's tallies.
    fn top_topics(&mut self) -> Result<(), GpuError> {
        let words = self.cfg.words;
        let blocks = (words.div_ceil(BLOCK / 32)).clamp(1, self.multiprocessors.max(1) * 16);
        let beta = self.cfg.beta as f32;
        self.main
            .memset_zeros(&mut self.skip_stats)
            .check(|| "clearing the skip tallies".into())?;
        // SAFETY: argument types match `word_top2`; one warp per word, grid-stride.
        unsafe {
            self.main
                .launch_builder(&self.kernels.word_top2)
                .arg(&self.b)
                .arg(&self.word_off)
                .arg(&self.word_slots)
                .arg(&self.inv_norm)
                .arg(&words)
                .arg(&self.cfg.topics)
                .arg(&beta)
                .arg(&mut self.top2)
                .arg(&mut self.top3)
                .launch(grid(blocks, BLOCK))
        }
        .check(|| "launching word_top2".into())?;
        Ok(())
    }

    /// Tokens this engine samples (its share of the corpus).
    pub fn tokens(&self) -> u64 {
        self.meta.iter().map(|m| m.tokens as u64).sum()
    }

    /// ezlda: of the last sweep's tokens, how many took the third branch before their row was
    /// read (skipped the S′ construction) and how many in all (skipped the final draw, the first
    /// included). `None` for the other samplers. Call after [`Engine::commit`].
    pub fn skip_tallies(&self) -> Result<Option<[u64; 2]>, GpuError> {
        if !self.cfg.three_branch {
            return Ok(None);
        }
        let mut out = [0u64; 2];
        self.main
            .memcpy_dtoh(&self.skip_stats, &mut out)
            .check(|| "reading the skip tallies".into())?;
        self.main
            .synchronize()
            .check(|| "reading the skip tallies".into())?;
        Ok(Some(out))
    }

    /// mh's stationarity test (tests/gpu.rs): one sweep of iteration `iteration`'s random numbers
    /// against the current counts, each token's chain started from `starts` (corpus order)
    /// instead of its own assignment (`own_kept`: with the control rates of kernels.cu), and
    /// the topics it ends on. The state is left as it was (the assignments are restored and the
    /// sweep's next counts are never committed), so it can be called again. A resident corpus
    /// only.
    #[doc(hidden)]
    pub fn mh_sweep_from(
        &mut self,
        starts: &[u16],
        iteration: u32,
        own_kept: bool,
    ) -> Result<Vec<u16>, GpuError> {
        let tokens = self.tokens() as usize;
        if self.cfg.mh_steps.is_none()
            || starts.len() != tokens
            || !matches!(self.storage, Storage::Resident { .. })
        {
            return Err(GpuError::Unsupported(
                "mh_sweep_from: an mh engine with a resident corpus and one start per token".into(),
            ));
        }
        let mut before = vec![0u16; tokens];
        self.download_topics(0, &mut before)?;
        let upload = self
            .main
            .clone_htod(starts)
            .check(|| "copying the chains' starts".into())?;
        self.mh_starts = Some(upload);
        self.mh_own_kept = own_kept;
        let swept = self.sweep(iteration);
        self.mh_own_kept = false;
        swept?;
        self.main
            .synchronize()
            .check(|| "running the test sweep".into())?;
        self.mh_starts = None;
        let mut after = vec![0u16; tokens];
        self.download_topics(0, &mut after)?;
        if let Storage::Resident { chunks, .. } = &mut self.storage {
            for (c, m) in chunks.iter_mut().zip(&self.meta) {
                let range = m.token_start as usize..m.token_start as usize + m.tokens;
                self.main
                    .memcpy_htod(&before[range], &mut c.z.slice_mut(0..m.tokens))
                    .check(|| "restoring the assignments".into())?;
            }
        }
        self.main
            .synchronize()
            .check(|| "restoring the assignments".into())?;
        Ok(after)
    }

    /// The M-step with one copy of the counts: B, which the sweep only read, cleared and
    /// recounted from the new assignments by `count_words` (the integer sums the sweep would
    /// have made in B′, so the same B bit for bit). A streamed corpus makes a second trip
    /// through the slots, copying in only what the count reads (items, positions, topics).
    fn recount(&mut self) -> Result<(), GpuError> {
        let Self {
            main,
            lanes,
            kernels,
            cfg,
            b,
            word_off,
            word_slots,
            meta,
            storage,
            ..
        } = self;
        let (k, rows) = (cfg.topics, (&*word_off, &*word_slots));
        main.memset_zeros(b)
            .check(|| "clearing the word-topic counts".into())?;
        match storage {
            Storage::Resident { chunks, .. } => {
                for (c, m) in chunks.iter().zip(meta.iter()) {
                    launch_count(main, kernels, c, m, k, rows, b)?;
                }
            }
            Storage::Streamed { host, slots } => {
                lanes.follow(main)?;
                for (i, (h, m)) in host.iter().zip(meta.iter()).enumerate() {
                    let s = lanes.of(i);
                    let (d, _) = &mut slots[i % 2];
                    copy_in_for_count(s, h, d)?;
                    launch_count(s, kernels, d, m, k, rows, b)?;
                }
                lanes.join(main)?;
            }
        }
        Ok(())
    }

    /// The M-step: B′ becomes B (or B is recounted, with one copy), its column sums n and the
    /// normalizers follow; waits for the iteration to finish.
    pub fn commit(&mut self, iteration: u32) -> Result<(), GpuError> {
        if self.one_copy {
            self.recount()?;
        } else {
            std::mem::swap(&mut self.b, &mut self.bn);
        }
        // B′'s column sums are the histogram of the new assignments: counted during the sweep,
        // and summed over the engines by the exchange when there are several.
        match (self.next_totals, self.grouped) {
            (NextTotals::Summed, _) | (NextTotals::Local, false) => {
                std::mem::swap(&mut self.n, &mut self.n_next);
                self.normalizers()?;
            }
            _ => self.totals()?,
        }
        self.next_totals = NextTotals::Stale;
        self.main
            .synchronize()
            .check(|| format!("running iteration {iteration}"))?;
        // What the last exchange prepared is done before anything else (a log-likelihood's
        // rebuild shares its scratch) runs.
        if self.prepared.is_some() || matches!(self.storage, Storage::Streamed { .. }) {
            self.lanes
                .synchronize(|| format!("running iteration {iteration}"))?;
        }
        Ok(())
    }

    /// Held-out document completion of `docs` on the device (topos-model's `heldout.rs`, a dense
    /// φ only): the argument of every scored token's logarithm, indexed like `docs.tokens()`,
    /// which [`topos_model::heldout_from_arguments`] turns into the host's numbers bit for bit.
    /// `None` where φ would be sparse (the host's fold-in then runs: its buckets are another
    /// algorithm) or the device has no room.
    pub fn heldout_arguments(
        &mut self,
        docs: Docs<'_>,
        opts: &topos_model::FoldInOptions,
    ) -> Result<Option<Vec<f64>>, GpuError> {
        let (k, v) = (self.cfg.topics as usize, self.cfg.words as usize);
        if docs.is_empty() || !topos_model::phi::dense_phi(v, k) || opts.validate().is_err() {
            return Ok(None);
        }
        // The held-out words (ascending) and each token's row among them.
        let mut row_of = vec![u32::MAX; v];
        let mut words = Vec::new();
        for &w in docs.tokens() {
            if row_of[w as usize] == u32::MAX {
                row_of[w as usize] = 0;
            }
        }
        for (w, r) in row_of.iter_mut().enumerate() {
            if *r == 0 {
                *r = words.len() as u32;
                words.push(w as u32);
            }
        }
        let token_row: Vec<u32> = docs.tokens().iter().map(|&w| row_of[w as usize]).collect();
        drop(row_of);
        let rows = words.len();
        let tokens = docs.num_tokens() as usize;
        // Documents per launch: the per-document scratch (26 bytes a topic) within 1 GiB.
        let per_doc = 26 * k;
        let batch = ((1usize << 30) / per_doc).clamp(1, docs.len());
        let needed = 8 * rows * k + 8 * rows + 14 * tokens + batch * per_doc + (64 << 20);
        let room = self.ctx.mem_get_info().map_or(0, |(free, _)| free);
        if room < needed {
            return Ok(None);
        }
        let inv = topos_model::phi::normalizers(&self.topic_totals()?, v, self.cfg.beta);
        let main = self.main.clone();
        let what = |x: &str| format!("evaluating the held-out documents ({x})");
        let upload = |x: &str| what(x);
        main.memcpy_htod(&inv, &mut self.inv_f64)
            .check(|| upload("normalizers"))?;
        let d_words = main.clone_htod(&words).check(|| upload("words"))?;
        let d_rows = main.clone_htod(&token_row).check(|| upload("tokens"))?;
        let d_off = main
            .clone_htod(docs.offsets())
            .check(|| upload("documents"))?;
        // SAFETY: every array below is written by a kernel (or cleared) before it is read.
        let (mut phi, mut bottom, mut smooth, mut z, mut out) = unsafe {
            (
                main.alloc::<f32>(rows * k).check(|| what("φ"))?,
                main.alloc::<f32>(rows * k)
                    .check(|| what("sampling trees"))?,
                main.alloc::<f64>(rows.max(1))
                    .check(|| what("word masses"))?,
                main.alloc::<u16>(tokens.max(1))
                    .check(|| what("assignments"))?,
                main.alloc_zeros::<f64>(tokens.max(1))
                    .check(|| what("results"))?,
            )
        };
        let mut scratch = FoldInScratch::new(&main, batch * k)?;
        let (kk, beta, alpha) = (k as u32, self.cfg.beta, self.cfg.alpha);
        if rows > 0 {
            // SAFETY: argument types match `heldout_phi_rows`; one block per held-out word.
            unsafe {
                main.launch_builder(&self.kernels.heldout_phi_rows)
                    .arg(&d_words)
                    .arg(&self.b)
                    .arg(&self.word_off)
                    .arg(&self.word_slots)
                    .arg(&kk)
                    .arg(&self.inv_f64)
                    .arg(&beta)
                    .arg(&alpha)
                    .arg(&mut phi)
                    .arg(&mut bottom)
                    .arg(&mut smooth)
                    .launch(grid(rows as u32, 256))
            }
            .check(|| "launching heldout_phi_rows".into())?;
        }
        let (seed_lo, seed_hi) = (opts.seed as u32, (opts.seed >> 32) as u32);
        let base = 0u64;
        for first in (0..docs.len()).step_by(batch) {
            let count = batch.min(docs.len() - first) as u32;
            let first = first as u32;
            scratch.reset(&main)?;
            // SAFETY: argument types match `heldout_foldin`; one thread per document.
            unsafe {
                main.launch_builder(&self.kernels.heldout_foldin)
                    .arg(&d_off)
                    .arg(&base)
                    .arg(&d_rows)
                    .arg(&first)
                    .arg(&count)
                    .arg(&phi)
                    .arg(&bottom)
                    .arg(&smooth)
                    .arg(&kk)
                    .arg(&seed_lo)
                    .arg(&seed_hi)
                    .arg(&opts.sweeps)
                    .arg(&opts.burn_in)
                    .arg(&mut scratch.counts)
                    .arg(&mut scratch.slot)
                    .arg(&mut scratch.nonzero)
                    .arg(&mut scratch.cum)
                    .arg(&mut scratch.sum)
                    .arg(&mut z)
                    .arg(&mut out)
                    // One warp a document, four to a block.
                    .launch(grid(count.div_ceil(4), 128))
            }
            .check(|| "launching heldout_foldin".into())?;
        }
        let mut args = main.clone_dtoh(&out).check(|| what("results"))?;
        main.synchronize().check(|| what("results"))?;
        args.truncate(tokens);
        Ok(Some(args))
    }

    /// [`Engine::heldout_arguments`] with a sparse φ the host built (`phi`, of the held-out
    /// words at least): the host's `FoldIn::draw_sparse` (SparseLDA's buckets) on the device, one
    /// warp per document. `None` when `phi` is dense or the device has no room.
    pub fn heldout_arguments_sparse(
        &mut self,
        docs: Docs<'_>,
        phi: &topos_model::Phi,
        opts: &topos_model::FoldInOptions,
    ) -> Result<Option<Vec<f64>>, GpuError> {
        let Some(sp) = phi.sparse() else {
            return Ok(None);
        };
        let k = self.cfg.topics as usize;
        if docs.is_empty() || opts.validate().is_err() || sp.inv.len() != k {
            return Ok(None);
        }
        let alpha = self.cfg.alpha;
        let rows = sp.offsets.len().saturating_sub(1);
        let nnz = sp.topics.len();
        let tokens = docs.num_tokens() as usize;
        let per_doc = 26 * k;
        let batch = ((1usize << 30) / per_doc).clamp(1, docs.len());
        let needed = 14 * nnz + 8 * rows + 14 * tokens + 12 * k + batch * per_doc + (64 << 20);
        let room = self.ctx.mem_get_info().map_or(0, |(free, _)| free);
        if room < needed {
            return Ok(None);
        }
        // What the host's sampler derives from φ, computed here as it does.
        let token_row: Vec<u32> = docs
            .tokens()
            .iter()
            .map(|&w| phi.stored_row(w) as u32)
            .collect();
        let mut smooth = vec![0.0f64; rows.max(1)];
        for &w in docs.tokens() {
            smooth[phi.stored_row(w)] = alpha * phi.word_mass(w);
        }
        let mut acc = 0.0f32;
        let inv_bottom: Vec<f32> = sp
            .inv
            .iter()
            .map(|&x| {
                acc += x as f32;
                acc
            })
            .collect();
        let smoothing_mass = alpha * sp.beta * sp.inv.iter().sum::<f64>();
        let main = self.main.clone();
        let what = |x: &str| format!("evaluating the held-out documents ({x})");
        let d_off = main
            .clone_htod(docs.offsets())
            .check(|| what("documents"))?;
        let d_rows = main.clone_htod(&token_row).check(|| what("tokens"))?;
        let row_off = main.clone_htod(&sp.offsets).check(|| what("φ"))?;
        let row_topics = main.clone_htod(&pad(&sp.topics)).check(|| what("φ"))?;
        let row_counts = main.clone_htod(&pad(&sp.counts)).check(|| what("φ"))?;
        let inv = main.clone_htod(&sp.inv).check(|| what("φ"))?;
        let d_bottom = main.clone_htod(&inv_bottom).check(|| what("φ"))?;
        let d_smooth = main.clone_htod(&smooth).check(|| what("φ"))?;
        // SAFETY: written by heldout_word_prefix before it is read.
        let mut prefix = unsafe { main.alloc::<f64>(nnz.max(1)) }.check(|| what("φ"))?;
        let mut z = main
            .alloc_zeros::<u16>(tokens.max(1))
            .check(|| what("assignments"))?;
        let mut out = main
            .alloc_zeros::<f64>(tokens.max(1))
            .check(|| what("results"))?;
        let mut scratch = FoldInScratch::new(&main, batch * k)?;
        let (rows32, kk, beta) = (rows as u32, k as u32, sp.beta);
        if rows > 0 {
            // SAFETY: argument types match `heldout_word_prefix`; one thread per row.
            unsafe {
                main.launch_builder(&self.kernels.heldout_word_prefix)
                    .arg(&row_off)
                    .arg(&rows32)
                    .arg(&row_topics)
                    .arg(&row_counts)
                    .arg(&inv)
                    .arg(&alpha)
                    .arg(&mut prefix)
                    .launch(LaunchConfig {
                        grid_dim: (rows32.div_ceil(128), 1, 1),
                        block_dim: (128, 1, 1),
                        shared_mem_bytes: 0,
                    })
            }
            .check(|| "launching heldout_word_prefix".into())?;
        }
        let (seed_lo, seed_hi) = (opts.seed as u32, (opts.seed >> 32) as u32);
        let base = 0u64;
        for first in (0..docs.len()).step_by(batch) {
            let count = batch.min(docs.len() - first) as u32;
            let first = first as u32;
            scratch.reset(&main)?;
            // SAFETY: argument types match `heldout_foldin_sparse`; one warp per document.
            unsafe {
                main.launch_builder(&self.kernels.heldout_foldin_sparse)
                    .arg(&d_off)
                    .arg(&base)
                    .arg(&d_rows)
                    .arg(&first)
                    .arg(&count)
                    .arg(&row_off)
                    .arg(&row_topics)
                    .arg(&row_counts)
                    .arg(&prefix)
                    .arg(&inv)
                    .arg(&d_bottom)
                    .arg(&d_smooth)
                    .arg(&beta)
                    .arg(&smoothing_mass)
                    .arg(&kk)
                    .arg(&seed_lo)
                    .arg(&seed_hi)
                    .arg(&opts.sweeps)
                    .arg(&opts.burn_in)
                    .arg(&mut scratch.counts)
                    .arg(&mut scratch.slot)
                    .arg(&mut scratch.nonzero)
                    .arg(&mut scratch.cum)
                    .arg(&mut scratch.sum)
                    .arg(&mut z)
                    .arg(&mut out)
                    .launch(LaunchConfig {
                        grid_dim: (count.div_ceil(4), 1, 1),
                        block_dim: (128, 1, 1),
                        shared_mem_bytes: 0,
                    })
            }
            .check(|| "launching heldout_foldin_sparse".into())?;
        }
        let mut args = main.clone_dtoh(&out).check(|| what("results"))?;
        main.synchronize().check(|| what("results"))?;
        args.truncate(tokens);
        Ok(Some(args))
    }

    /// Each resident partition's PDOW arrays (positions, documents), read back: for tests that
    /// compare the device's sort with the host's. `None` for a streamed corpus.
    #[doc(hidden)]
    pub fn pdow_arrays(&mut self) -> Result<Option<Vec<PdowArrays>>, GpuError> {
        let Storage::Resident { chunks, .. } = &self.storage else {
            return Ok(None);
        };
        let mut out = Vec::with_capacity(chunks.len());
        for (c, m) in chunks.iter().zip(&self.meta) {
            let mut src = self
                .main
                .clone_dtoh(&c.token_src)
                .check(|| "reading back the PDOW arrays".into())?;
            let mut doc = self
                .main
                .clone_dtoh(&c.token_doc)
                .check(|| "reading back the PDOW arrays".into())?;
            src.truncate(m.tokens);
            doc.truncate(m.tokens);
            out.push((src, doc));
        }
        self.main
            .synchronize()
            .check(|| "reading back the PDOW arrays".into())?;
        Ok(Some(out))
    }

    /// The topic totals n_k of the current counts.
    pub fn topic_totals(&mut self) -> Result<Vec<u64>, GpuError> {
        let n = self
            .main
            .clone_dtoh(&self.n)
            .check(|| "copying the topic totals back".into())?;
        self.main
            .synchronize()
            .check(|| "copying the topic totals back".into())?;
        Ok(n)
    }

    /// The current topics of tokens `start..start + out.len()` (corpus order).
    pub fn download_topics(&mut self, start: u64, out: &mut [u16]) -> Result<(), GpuError> {
        self.lanes
            .synchronize(|| "finishing the last chunks".into())?;
        let end = start + out.len() as u64;
        for (i, m) in self.meta.iter().enumerate() {
            let (c0, c1) = (m.token_start, m.token_start + m.tokens as u64);
            let (a, b) = (start.max(c0), end.min(c1));
            if a >= b {
                continue;
            }
            let local = (a - c0) as usize..(b - c0) as usize;
            let dst = &mut out[(a - start) as usize..(b - start) as usize];
            match &self.storage {
                Storage::Resident { chunks, .. } => {
                    self.main
                        .memcpy_dtoh(&chunks[i].z.slice(local), dst)
                        .check(|| "copying the assignments back".into())?;
                }
                Storage::Streamed { host, .. } => {
                    let src = host[i]
                        .z
                        .as_slice()
                        .check(|| "reading a chunk's assignments".into())?;
                    dst.copy_from_slice(&src[local]);
                }
            }
        }
        self.main
            .synchronize()
            .check(|| "copying the assignments back".into())
    }

    /// The current word-topic counts of `words` as sparse rows, into `out` (cleared first;
    /// totals left empty): each format's rows of the range are one contiguous span of B (dense
    /// rows in word order, then hashed rows in word order), copied back into the engine's
    /// staging buffer and decoded in parallel ([`WordTopics::push_rows_in_parallel`]).
    pub fn download_rows(
        &mut self,
        words: Range<u32>,
        out: &mut WordTopics,
    ) -> Result<(), GpuError> {
        let k = self.cfg.topics;
        out.clear_rows(k);
        let range = words.start as usize..words.end as usize;
        let (offs, slots) = (
            &self.host_word_off[range.clone()],
            &self.host_word_slots[range],
        );
        let span = |dense: bool| {
            let mut lo = u64::MAX;
            let mut hi = 0u64;
            for (&o, &s) in offs.iter().zip(slots) {
                if s > 0 && (s >= k) == dense {
                    lo = lo.min(o);
                    hi = hi.max(o + u64::from(s));
                }
            }
            (lo < hi).then_some(lo as usize..hi as usize)
        };
        let (dense_span, hashed_span) = (span(true), span(false));
        let len = |r: &Option<Range<usize>>| r.as_ref().map_or(0, |r| r.len());
        let (dense_len, hashed_len) = (len(&dense_span), len(&hashed_span));
        let what = || "copying word-topic rows back".to_string();
        let staging =
            HostBuffer::at_least(&mut self.row_staging, &self.ctx, dense_len + hashed_len)?
                .as_mut_slice()
                .check(what)?;
        let (dense, rest) = staging.split_at_mut(dense_len);
        let hashed = &mut rest[..hashed_len];
        for (r, dst) in [(&dense_span, &mut *dense), (&hashed_span, &mut *hashed)] {
            if let Some(r) = r {
                self.main
                    .memcpy_dtoh(&self.b.slice(r.clone()), dst)
                    .check(what)?;
            }
        }
        self.main.synchronize().check(what)?;
        let (dense, hashed) = (&*dense, &*hashed);
        let dense_base = dense_span.map_or(0, |r| r.start);
        let hashed_base = hashed_span.map_or(0, |r| r.start);
        // A word's cells: its dense row, or its hashed slots (topic + 1 in the high half).
        let cells = |o: u64, s: u32| -> (&[u32], bool) {
            if s >= k {
                (&dense[o as usize - dense_base..][..k as usize], true)
            } else if s > 0 {
                (&hashed[o as usize - hashed_base..][..s as usize], false)
            } else {
                (&[], true)
            }
        };
        out.push_rows_in_parallel(
            offs.len(),
            |i| {
                cells(offs[i], slots[i])
                    .0
                    .iter()
                    .filter(|&&c| c != 0)
                    .count()
            },
            |i, topics, counts| {
                let (cells, dense) = cells(offs[i], slots[i]);
                let nonzero = cells.iter().enumerate().filter(|&(_, &c)| c != 0);
                if dense {
                    for ((t, n), (topic, &c)) in
                        topics.iter_mut().zip(counts.iter_mut()).zip(nonzero)
                    {
                        (*t, *n) = (topic as u16, c);
                    }
                } else {
                    let mut pairs: Vec<(u16, u32)> = nonzero
                        .map(|(_, &c)| (((c >> 16) - 1) as u16, c & 0xffff))
                        .collect();
                    pairs.sort_unstable();
                    for ((t, n), (topic, c)) in topics.iter_mut().zip(counts.iter_mut()).zip(pairs)
                    {
                        (*t, *n) = (topic, c);
                    }
                }
            },
        );
        Ok(())
    }

    /// Training log-likelihood per token of the current state, computed on the device: the
    /// normalizers in double from n, each word's Σ_k φ_kw (`word_mass`), then per chunk its
    /// doc-topic rows rebuilt from the assignments and every token's term (`loglik`), summed in
    /// fixed point.
    pub fn log_likelihood(&mut self) -> Result<f64, GpuError> {
        let (sum, tokens) = self.log_likelihood_sum()?;
        Ok(sum as f64 / 16_777_216.0 / tokens.max(1) as f64)
    }

    /// The fixed-point sum behind [`Engine::log_likelihood`] (units of 2⁻²⁴, order-free) and the
    /// tokens it covers, so that the shares of a multi-process run add up to one device's bits.
    pub fn log_likelihood_sum(&mut self) -> Result<(i64, u64), GpuError> {
        let (k, v) = (self.cfg.topics, self.cfg.words);
        let inv = topos_model::phi::normalizers(&self.topic_totals()?, v as usize, self.cfg.beta);
        let beta_inv_sum: f64 = self.cfg.beta * inv.iter().sum::<f64>();
        let main = self.main.clone();
        main.memcpy_htod(&inv, &mut self.inv_f64)
            .check(|| "copying the normalizers".into())?;
        main.memset_zeros(&mut self.acc)
            .check(|| "clearing an accumulator".into())?;
        if v > 0 {
            // SAFETY: argument types match `word_mass`; one block per word.
            unsafe {
                main.launch_builder(&self.kernels.word_mass)
                    .arg(&self.b)
                    .arg(&self.word_off)
                    .arg(&self.word_slots)
                    .arg(&k)
                    .arg(&self.inv_f64)
                    .arg(&beta_inv_sum)
                    .arg(&mut self.mass)
                    .launch(grid(v, 256))
            }
            .check(|| "launching word_mass".into())?;
        }
        let Self {
            kernels,
            cfg,
            b,
            word_off,
            word_slots,
            inv_f64,
            mass,
            acc,
            scratch,
            scratch_warps,
            meta,
            storage,
            ..
        } = self;
        let (alpha, beta) = (cfg.alpha, cfg.beta);
        let mut chunk_ll =
            |c: &mut DeviceChunk, rows: &mut Rows, m: &ChunkMeta| -> Result<(), GpuError> {
                if m.tokens == 0 {
                    return Ok(());
                }
                let mut view = scratch.slice_mut(..);
                launch_rebuild(
                    &main,
                    kernels,
                    *scratch_warps,
                    k,
                    c,
                    rows,
                    &mut view,
                    m,
                    None,
                )?;
                // SAFETY: argument types match `loglik`; one block per work item.
                unsafe {
                    main.launch_builder(&kernels.loglik)
                        .arg(&c.items)
                        .arg(&c.token_doc)
                        .arg(&c.doc_off)
                        .arg(&rows.entries)
                        .arg(&rows.nnz)
                        .arg(&*b)
                        .arg(&*word_off)
                        .arg(&*word_slots)
                        .arg(&k)
                        .arg(&*inv_f64)
                        .arg(&*mass)
                        .arg(&alpha)
                        .arg(&beta)
                        .arg(&mut *acc)
                        .launch(grid(m.items as u32, 256))
                }
                .check(|| "launching loglik".into())?;
                Ok(())
            };
        match storage {
            Storage::Resident { chunks, rows } => {
                for (c, m) in chunks.iter_mut().zip(meta.iter()) {
                    chunk_ll(c, rows, m)?;
                }
            }
            Storage::Streamed { host, slots } => {
                let (d, rows) = &mut slots[0];
                for (h, m) in host.iter().zip(meta.iter()) {
                    copy_in(&main, h, d, m)?;
                    chunk_ll(d, rows, m)?;
                    // The slot is reused by the next chunk.
                    main.synchronize()
                        .check(|| "computing the log-likelihood".into())?;
                }
            }
        }
        let total = main
            .clone_dtoh(&*acc)
            .check(|| "copying the log-likelihood back".into())?;
        main.synchronize()
            .check(|| "computing the log-likelihood".into())?;
        let tokens: u64 = meta.iter().map(|m| m.tokens as u64).sum();
        Ok((total[0] as i64, tokens))
    }

    /// Work of the next sweep that does not depend on the summed counts, enqueued on a chunk
    /// stream so that it runs while they travel (the exchange leaves the GPU idle while NCCL
    /// moves bytes and the host agrees on the way): clearing B′ (the B the sweep just read,
    /// which the commit makes the next B′) and rebuilding the document rows from the new
    /// assignments. Only with one resident chunk (the rows are the chunk's own until the next
    /// sweep; several chunks share them) and not for ezlda (its rows carry each token's place
    /// among its word's top topics, which follow the summed counts). The model is unchanged:
    /// the same kernels on the same data, in another order than the summed counts' work.
    /// Called with the sweep finished.
    fn prepare_next_sweep(&mut self) -> Result<(), GpuError> {
        if self.cfg.three_branch || self.prepared.is_some() {
            return Ok(());
        }
        let Self {
            lanes,
            kernels,
            cfg,
            b,
            scratch,
            scratch_warps,
            meta,
            storage,
            prepared,
            ..
        } = self;
        let Storage::Resident { chunks, rows } = storage else {
            return Ok(());
        };
        let ([chunk], [m]) = (chunks.as_mut_slice(), meta.as_slice()) else {
            return Ok(());
        };
        let side = lanes.of(0);
        side.memset_zeros(b)
            .check(|| "clearing the next word-topic counts".into())?;
        if m.tokens > 0 {
            let mut view = scratch.slice_mut(..);
            launch_rebuild(
                side,
                kernels,
                *scratch_warps,
                cfg.topics,
                chunk,
                rows,
                &mut view,
                m,
                None,
            )?;
        }
        *prepared = Some(record(side)?);
        Ok(())
    }

    /// The exchange of a multi-process run, staged through the host: the new word-topic counts
    /// this device built from its share (dense rows, V × K) are summed with every other
    /// process's block by block (4·V·K bytes each way over PCIe and through the transport), so
    /// that the commit's B is the whole corpus's, exactly.
    ///
    /// Between GPUs with NCCL, the non-zero cells alone travel when they are few enough (see
    /// [`Engine::sparse_exchange`]), else NCCL's all-reduce of the dense counts.
    ///
    /// Returns the seconds the sum took once this device's sweep had finished, and the way.
    pub fn exchange_counts(
        &mut self,
        transport: &dyn crate::transport::Transport,
        comm: Option<&mut topos_cuda::nccl::DeviceComm>,
    ) -> Result<(f64, crate::exchange::Way), GpuError> {
        // Every row dense, in word order (offset w·K): the only layout whose cells add up.
        if self.host_word_slots.iter().any(|&s| s != self.cfg.topics) {
            return Err(GpuError::Unsupported(
                "several processes need the dense word-topic format on the GPU".into(),
            ));
        }
        self.grouped = true;
        if let Some(comm) = comm {
            return self.exchange_on_gpus(comm);
        }
        self.finish_sweep()?;
        self.prepare_next_sweep()?;
        let started = std::time::Instant::now();
        // The sweep's topic totals travel with the counts (K numbers), so that the commit need
        // not sum B′'s columns.
        let with_totals = self.next_totals == NextTotals::Local;
        let cells = self.bn.len();
        let block = (1usize << 22).min(cells.max(1));
        let mut host = vec![0u32; block];
        let main = self.main.clone();
        let mut a = 0usize;
        while a < cells {
            let b = (a + block).min(cells);
            let buf = &mut host[..b - a];
            main.memcpy_dtoh(&self.bn.slice(a..b), buf)
                .check(|| "copying the counts for the exchange".into())?;
            main.synchronize()
                .check(|| "copying the counts for the exchange".into())?;
            transport
                .sum_u32(buf)
                .map_err(|e| GpuError::Unsupported(e.to_string()))?;
            main.memcpy_htod(&*buf, &mut self.bn.slice_mut(a..b))
                .check(|| "copying the summed counts back".into())?;
            main.synchronize()
                .check(|| "copying the summed counts back".into())?;
            a = b;
        }
        if with_totals {
            let mut totals = main
                .clone_dtoh(&self.n_next)
                .check(|| "copying the topic totals for the exchange".into())?;
            main.synchronize()
                .check(|| "copying the topic totals for the exchange".into())?;
            transport
                .sum_u64(&mut totals)
                .map_err(|e| GpuError::Unsupported(e.to_string()))?;
            main.memcpy_htod(&totals, &mut self.n_next)
                .check(|| "copying the summed topic totals back".into())?;
            self.next_totals = NextTotals::Summed;
        }
        Ok((started.elapsed().as_secs_f64(), crate::exchange::Way::Dense))
    }

    /// Slices of the vocabulary the sweep runs in (1: whole; see [`Engine::slice_the_sweep`]).
    pub fn exchange_slices(&self) -> u32 {
        match &self.slicing {
            Slicing::Sliced(slices) => slices.words.len() as u32 - 1,
            _ => 1,
        }
    }

    /// Waits for the sweep's streams.
    fn finish_sweep(&mut self) -> Result<(), GpuError> {
        self.main
            .synchronize()
            .check(|| "finishing the sweep".into())?;
        self.lanes.synchronize(|| "finishing the sweep".into())
    }

    /// [`Engine::exchange_counts`] over NCCL, on the exchange stream: slice by slice as each
    /// slice of the sweep ends, while the next slices sample (when the sweep ran in slices),
    /// else after the whole sweep. Each slice's cells go sparse (the non-zero cells gathered,
    /// [`Engine::sparse_exchange`]) or dense (NCCL's all-reduce); then the topic totals. The
    /// seconds returned are those the exchange took once this device's sweep had ended (the
    /// part not hidden behind it, timed by events when it ran in slices).
    fn exchange_on_gpus(
        &mut self,
        comm: &mut topos_cuda::nccl::DeviceComm,
    ) -> Result<(f64, crate::exchange::Way), GpuError> {
        let with_totals = self.next_totals == NextTotals::Local;
        let topics = u64::from(self.cfg.topics);
        let x = self.exchange.clone();
        let sliced = self.sliced_sweep.take();
        let ranges: Vec<Range<u64>> = match (&sliced, &self.slicing) {
            (Some(_), Slicing::Sliced(slices)) => slices
                .words
                .windows(2)
                .map(|w| u64::from(w[0]) * topics..u64::from(w[1]) * topics)
                .collect(),
            _ => {
                self.finish_sweep()?;
                std::iter::once(0..self.bn.len() as u64).collect()
            }
        };
        // The next sweep's clearing and rows, once the whole sweep has read B and the rows.
        if let Some(sweep) = &sliced {
            self.lanes
                .of(0)
                .wait(&sweep.end)
                .check(|| "ordering streams".into())?;
        }
        self.prepare_next_sweep()?;
        let started = std::time::Instant::now();
        let mut dense = false;
        for (i, cells) in ranges.iter().enumerate() {
            if let Some(sweep) = &sliced {
                x.wait(&sweep.slices[i])
                    .check(|| "ordering streams".into())?;
            }
            if !self.sparse_exchange(comm, cells.clone(), i)? {
                comm.sum_u32(&mut self.bn.slice_mut(cells.start as usize..cells.end as usize))?;
                dense = true;
            }
        }
        // The sweep's topic totals travel with the counts (K numbers), so that the commit need
        // not sum B′'s columns.
        if let Some(sweep) = &sliced {
            x.wait(&sweep.end).check(|| "ordering streams".into())?;
        }
        if with_totals {
            comm.sum_u64(&mut self.n_next)?;
            self.next_totals = NextTotals::Summed;
        }
        let what = || "summing the counts over the GPUs".to_string();
        let seconds = match &sliced {
            Some(sweep) => {
                let done = x.record_event(Some(CU_EVENT_DEFAULT)).check(what)?;
                x.synchronize().check(what)?;
                f64::from(sweep.end.elapsed_ms(&done).check(what)?.max(0.0)) / 1e3
            }
            None => {
                x.synchronize().check(what)?;
                started.elapsed().as_secs_f64()
            }
        };
        if matches!(self.slicing, Slicing::Undecided) {
            self.slice_the_sweep(comm)?;
        }
        let way = if dense {
            crate::exchange::Way::Nccl
        } else {
            crate::exchange::Way::NcclSparse
        };
        Ok((seconds, way))
    }

    /// Decides, with every other GPU, whether the sweep runs in slices, and where they are
    /// cut: a collective (each GPU calls it at its first exchange over NCCL). Each GPU adds its
    /// last chunk's tokens to a histogram of [`SLICE_BUCKETS`] equal word ranges, with whether
    /// it can slice (a resident corpus, two copies of the counts) and the slices it wants
    /// (`TOPOS_EXCHANGE_SLICES`); the sums decide for all: no slices if one cannot or they
    /// want different numbers, else cuts at the bucket edges nearest equal shares of the
    /// tokens (a slice's sampling time and its non-zero cells both follow its tokens). The
    /// work items are then regrouped by slice, largest first within each (their order does
    /// not change the model: each token's draw is keyed by its index, and B′ only receives
    /// atomic additions). Only the last chunk runs in slices: the chunks before it are sampled
    /// whole first (they share one set of document rows), and a word's counts are final once
    /// the last chunk has sampled it.
    fn slice_the_sweep(&mut self, comm: &mut topos_cuda::nccl::DeviceComm) -> Result<(), GpuError> {
        let wanted = std::env::var("TOPOS_EXCHANGE_SLICES")
            .ok()
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(if comm.workers() >= SLICED_FROM_GPUS {
                EXCHANGE_SLICES
            } else {
                1
            })
            .clamp(1, 64);
        let words = self.cfg.words.max(1);
        let buckets = SLICE_BUCKETS.min(words) as usize;
        let what = || "agreeing on the sweep's slices".to_string();
        // The last chunk's items: the others are sampled whole before it.
        let items: Option<Vec<u32>> = match (&self.storage, self.meta.last()) {
            (Storage::Resident { chunks, .. }, Some(m)) if !self.one_copy => {
                let last = chunks.last().expect("a chunk for each meta");
                let v = self
                    .main
                    .clone_dtoh(&last.items.slice(0..4 * m.items))
                    .check(what)?;
                self.main.synchronize().check(what)?;
                Some(v)
            }
            _ => None,
        };
        let able = wanted > 1 && items.is_some();
        let bucket_of = |w: u32| (u64::from(w) * buckets as u64 / u64::from(words)) as usize;
        let mut sums = vec![0u64; buckets + 3];
        for it in items.iter().flat_map(|v| v.chunks_exact(4)) {
            sums[bucket_of(it[0])] += u64::from(it[2]);
        }
        sums[buckets] = u64::from(!able);
        sums[buckets + 1] = u64::from(wanted);
        sums[buckets + 2] = u64::from(wanted) * u64::from(wanted);
        let mut device = self.exchange.clone_htod(&sums).check(what)?;
        comm.sum_u64(&mut device)?;
        let sums = self.exchange.clone_dtoh(&device).check(what)?;
        self.exchange.synchronize().check(what)?;
        let workers = comm.workers() as u64;
        let (unable, total_wanted, squares) = (sums[buckets], sums[buckets + 1], sums[buckets + 2]);
        // Equal wants iff Σs² · G = (Σs)² (Cauchy–Schwarz), the same test on every GPU.
        let agreed = squares * workers == total_wanted * total_wanted;
        let (Some(mut items), true, true) = (items, unable == 0, agreed) else {
            self.slicing = Slicing::Whole;
            return Ok(());
        };
        let cuts = slice_cuts(&sums[..buckets], words, wanted);
        let (grouped, item_cuts) = group_items_by_slice(&items, &cuts);
        items = grouped;
        let Some(last) = (match &mut self.storage {
            Storage::Resident { chunks, .. } => chunks.last_mut(),
            Storage::Streamed { .. } => None,
        }) else {
            unreachable!("checked above")
        };
        self.main
            .memcpy_htod(&items, &mut last.items.slice_mut(0..items.len()))
            .check(what)?;
        self.main.synchronize().check(what)?;
        self.slicing = Slicing::Sliced(Slices {
            words: cuts,
            items: item_cuts,
        });
        Ok(())
    }

    /// The sum over the GPUs of `bn` (dense, V × K), sparse: each GPU lists its non-zero cells
    /// tile by tile (2,048 cells a tile: a header a tile with non-zeros, then 4 bytes a
    /// non-zero, its offset in the tile and its count; `compact_counts` in kernels.cu), NCCL
    /// gathers every GPU's list on each (up to the largest GPU's length), and each adds the
    /// others' to its own cells. Integer sums, so `bn` ends exactly as the all-reduce leaves it,
    /// whatever order the entries were listed in.
    ///
    /// Taken when the largest GPU's entries, m, are at most half the all-reduce's break-even:
    /// G·m·4 bytes gathered against a ring all-reduce's 2·(G−1)/G·4·V·K through each GPU gives
    /// m ≤ V·K·(G−1)/G² (`TOPOS_EXCHANGE=sparse`: whenever they fit in V·K entries; `dense`:
    /// never). Every GPU learns m by one max over the GPUs and decides the same way; a GPU with
    /// a count of 2²¹ or more in a cell, or no room for the buffers (about one more dense copy
    /// of the counts, allocated at the first exchange), makes every GPU go dense, and the next
    /// [`DENSE_AFTER_MISS`] exchanges go dense without compacting.
    ///
    /// `range` is the cells to sum (a slice of the sweep's words, or all of them), `slot` its
    /// place among the slices (each keeps its own count of exchanges to go dense). Everything
    /// runs on the exchange stream.
    ///
    /// Returns whether the counts were summed (`false`: nothing was changed, go dense).
    fn sparse_exchange(
        &mut self,
        comm: &mut topos_cuda::nccl::DeviceComm,
        range: Range<u64>,
        slot: usize,
    ) -> Result<bool, GpuError> {
        use crate::exchange::Way;
        let forced = crate::exchange::forced_way();
        if matches!(forced, Some(Way::Dense) | Some(Way::Nccl)) {
            return Ok(false);
        }
        let (rank, workers) = (comm.rank() as u64, comm.workers() as u64);
        let cells = self.bn.len() as u64;
        let what = |x: &str| format!("exchanging the counts sparse ({x})");
        if self.sparse.is_none() {
            let tiles = cells.div_ceil(COMPACT_TILE);
            // Entry places are 32-bit numbers, header places 24-bit (the kernel's one counter
            // holds both).
            let wanted = if tiles >= 1 << 24 {
                0
            } else if forced == Some(Way::Sparse) {
                cells
            } else {
                cells * (workers - 1) / (workers * workers)
            }
            .min(u64::from(u32::MAX).saturating_sub(2 + 2 * tiles));
            let per_gpu = 2 + 2 * tiles + wanted;
            let need = (workers + 1) * per_gpu * 4;
            let room = self.ctx.mem_get_info().map_or(0, |(free, _)| free as u64);
            // Room for the buffers and a GiB besides (held-out evaluation, the driver).
            let capacity =
                if wanted > 0 && 2 * tiles < u64::from(u32::MAX) && room >= need + (1 << 30) {
                    wanted
                } else {
                    0
                };
            let len = |n: u64| (n as usize).max(1);
            let per_gpu = if capacity > 0 { per_gpu } else { 1 };
            let s = &self.exchange;
            self.sparse = Some(SparseExchange {
                capacity,
                own: s
                    .alloc_zeros::<u32>(len(per_gpu))
                    .check(|| what("entries"))?,
                all: s
                    .alloc_zeros::<u32>(len(workers * per_gpu))
                    .check(|| what("gathered entries"))?,
                status: s.alloc_zeros::<u64>(2).check(|| what("counters"))?,
                largest: s.alloc_zeros::<u64>(1).check(|| what("counters"))?,
                dense_for: Vec::new(),
            });
        }
        let Self {
            exchange: main,
            kernels,
            bn,
            sparse,
            multiprocessors,
            ..
        } = self;
        let x = sparse.as_mut().expect("made above");
        if x.capacity == 0 {
            return Ok(false);
        }
        if x.dense_for.len() <= slot {
            x.dense_for.resize(slot + 1, 0);
        }
        if x.dense_for[slot] > 0 {
            x.dense_for[slot] -= 1;
            return Ok(false);
        }
        // This range's share of the break-even (all of the buffer when forced sparse).
        let cells = range.end - range.start;
        let tiles = cells.div_ceil(COMPACT_TILE);
        let limit = if forced == Some(Way::Sparse) {
            x.capacity
        } else {
            x.capacity.min(cells * (workers - 1) / (workers * workers))
        };
        let (lo, hi) = (range.start as usize, range.end as usize);
        main.memset_zeros(&mut x.status)
            .check(|| what("counters"))?;
        // Grid-stride kernels: 8 blocks a multiprocessor, fewer for little work.
        let stride_grid = |work: u64| {
            let blocks = (u64::from(*multiprocessors).max(1) * EXCHANGE_BLOCKS_PER_SM)
                .min(work.div_ceil(u64::from(BLOCK)).max(1));
            grid(blocks as u32, BLOCK)
        };
        let cfg = stride_grid(cells);
        let counts = bn.slice(lo..hi);
        // SAFETY: argument types match the kernel's signature; `own` has room for the counts,
        // `tiles` headers and `capacity` entries (made for all the cells, this range has at
        // most as many tiles); its blocks are BLOCK threads (the tile size).
        unsafe {
            main.launch_builder(&kernels.compact_counts)
                .arg(&counts)
                .arg(&cells)
                .arg(&mut x.own)
                .arg(&tiles)
                .arg(&x.capacity)
                .arg(&mut x.status)
                .launch(cfg)
        }
        .check(|| what("compacting"))?;
        let status = main.clone_dtoh(&x.status).check(|| what("counters"))?;
        main.synchronize().check(|| what("compacting"))?;
        let (len, headers, too_large) =
            (status[0] & ((1 << 40) - 1), status[0] >> 40, status[1] != 0);
        let want = if too_large || len > limit {
            u64::MAX
        } else {
            len
        };
        main.memcpy_htod(&[want], &mut x.largest)
            .check(|| what("counters"))?;
        comm.max_u64(&mut x.largest)?;
        let largest = main.clone_dtoh(&x.largest).check(|| what("counters"))?;
        main.synchronize().check(|| what("agreeing on the way"))?;
        let m = largest[0];
        if m == u64::MAX {
            if forced != Some(Way::Sparse) {
                x.dense_for[slot] = DENSE_AFTER_MISS;
            }
            return Ok(false);
        }
        if m == 0 {
            return Ok(true);
        }
        // The counts at the head of this GPU's list (both fit 32 bits: len ≤ capacity).
        main.memcpy_htod(&[len as u32, headers as u32], &mut x.own.slice_mut(0..2))
            .check(|| what("counters"))?;
        let stride = 2 + 2 * tiles + m;
        comm.gather_u32(
            &x.own.slice(0..stride as usize),
            &mut x.all.slice_mut(0..(workers * stride) as usize),
        )?;
        let headers_all = workers * tiles;
        let cfg = grid(
            (u64::from(*multiprocessors).max(1) * EXCHANGE_BLOCKS_PER_SM)
                .min(headers_all.div_ceil(u64::from(BLOCK / 32)).max(1)) as u32,
            BLOCK,
        );
        let (workers32, skip) = (workers as u32, rank as u32);
        let mut counts = bn.slice_mut(lo..hi);
        // SAFETY: argument types match the kernel's signature; `all` holds `workers` lists of
        // `stride` words, each with `tiles` header places, every cell of an entry inside the
        // range.
        unsafe {
            main.launch_builder(&kernels.add_entries)
                .arg(&mut counts)
                .arg(&x.all)
                .arg(&workers32)
                .arg(&stride)
                .arg(&tiles)
                .arg(&skip)
                .launch(cfg)
        }
        .check(|| what("adding"))?;
        Ok(true)
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        let _ = self.ctx.synchronize();
    }
}

/// The held-out fold-in's per-document scratch (K entries of each array per document of a
/// batch), shared by the dense and the sparse fold-in kernels.
struct FoldInScratch {
    counts: CudaSlice<u32>,
    slot: CudaSlice<u32>,
    nonzero: CudaSlice<u16>,
    cum: CudaSlice<f64>,
    sum: CudaSlice<u64>,
}

impl FoldInScratch {
    fn new(main: &Arc<CudaStream>, len: usize) -> Result<Self, GpuError> {
        let what = || "evaluating the held-out documents (scratch)".to_string();
        Ok(Self {
            counts: main.alloc_zeros::<u32>(len).check(what)?,
            slot: main.alloc_zeros::<u32>(len).check(what)?,
            nonzero: main.alloc_zeros::<u16>(len).check(what)?,
            cum: main.alloc_zeros::<f64>(len).check(what)?,
            sum: main.alloc_zeros::<u64>(len).check(what)?,
        })
    }

    /// Before each batch: counts and sums cleared, every slot empty (all ones).
    fn reset(&mut self, main: &Arc<CudaStream>) -> Result<(), GpuError> {
        let what = || "evaluating the held-out documents (scratch)".to_string();
        main.memset_zeros(&mut self.counts).check(what)?;
        main.memset_zeros(&mut self.sum).check(what)?;
        let bytes = self.slot.len() * 4;
        // SAFETY: plain bytes.
        unsafe {
            let (p, _g) = self.slot.device_ptr(main);
            topos_cuda::cudarc::driver::result::memset_d8_async(p, 0xff, bytes, main.cu_stream())
        }
        .check(what)
    }
}

/// What every chunk's sweep reads.
#[derive(Clone, Copy)]
struct Model<'a> {
    b: &'a CudaSlice<u32>,
    word_off: &'a CudaSlice<u64>,
    word_slots: &'a CudaSlice<u32>,
    n: &'a CudaSlice<u64>,
    /// The sweep's topic totals (written by atomics from every stream).
    n_next: &'a CudaSlice<u64>,
    inv_norm: &'a CudaSlice<f32>,
    /// ezlda's per-word K1/K2 and its tallies (written by atomics from every stream).
    top2: &'a CudaSlice<u32>,
    top3: &'a CudaSlice<f32>,
    skip_stats: &'a CudaSlice<u64>,
    /// mh's test hook: chain starts and control rates ([`Engine::mh_sweep_from`]).
    mh_starts: Option<&'a CudaSlice<u16>>,
    mh_own_kept: bool,
    cfg: EngineConfig,
    iteration: u32,
    smem_bytes: u32,
    sample_threads: u32,
    scratch_warps: u32,
    /// Whether the sampler adds each new assignment to B′ (false with one copy of the counts).
    write_next: bool,
}

fn record(s: &Arc<CudaStream>) -> Result<CudaEvent, GpuError> {
    s.record_event(None)
        .check(|| "recording a CUDA event".into())
}

fn copy_in(
    s: &Arc<CudaStream>,
    h: &HostChunk,
    d: &mut DeviceChunk,
    m: &ChunkMeta,
) -> Result<(), GpuError> {
    let what = || "copying a chunk to the device".to_string();
    s.memcpy_htod(
        &h.token_doc,
        &mut d.token_doc.slice_mut(0..h.token_doc.len()),
    )
    .check(what)?;
    s.memcpy_htod(&h.doc_off, &mut d.doc_off.slice_mut(0..h.doc_off.len()))
        .check(what)?;
    copy_in_for_count(s, h, d)?;
    debug_assert!(h.z.len() >= m.tokens);
    Ok(())
}

/// What `count_words` reads of a chunk (its items, positions and topics), into a slot: the
/// recount's second trip with one copy of the counts, and part of [`copy_in`].
fn copy_in_for_count(
    s: &Arc<CudaStream>,
    h: &HostChunk,
    d: &mut DeviceChunk,
) -> Result<(), GpuError> {
    let what = || "copying a chunk to the device".to_string();
    s.memcpy_htod(
        &h.token_src,
        &mut d.token_src.slice_mut(0..h.token_src.len()),
    )
    .check(what)?;
    s.memcpy_htod(&h.items, &mut d.items.slice_mut(0..h.items.len()))
        .check(what)?;
    s.memcpy_htod(&h.z, &mut d.z.slice_mut(0..h.z.len()))
        .check(what)?;
    // The slot's derived arrays (each token's word) belong to the chunk it held before.
    d.word_of_ready = false;
    Ok(())
}

fn launch_count(
    s: &Arc<CudaStream>,
    k: &Kernels,
    c: &DeviceChunk,
    m: &ChunkMeta,
    topics: u32,
    (word_off, word_slots): (&CudaSlice<u64>, &CudaSlice<u32>),
    b: &mut CudaSlice<u32>,
) -> Result<(), GpuError> {
    if m.items == 0 {
        return Ok(());
    }
    let cfg = grid(m.items as u32, BLOCK);
    // SAFETY: argument types match the kernel's signature; items index only this chunk's arrays.
    unsafe {
        s.launch_builder(&k.count_words)
            .arg(&c.items)
            .arg(&c.token_src)
            .arg(&c.z)
            .arg(word_off)
            .arg(word_slots)
            .arg(&topics)
            .arg(b)
            .launch(cfg)
    }
    .check(|| "launching count_words".into())?;
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn sweep(
    s: &Arc<CudaStream>,
    k: &Kernels,
    model: &Model<'_>,
    c: &mut DeviceChunk,
    rows: &mut Rows,
    scratch: &mut CudaSlice<u32>,
    bn: &mut CudaSlice<u32>,
    m: &ChunkMeta,
    rows_ready: bool,
) -> Result<(), GpuError> {
    let mut view = scratch.slice_mut(..);
    sweep_view(s, k, model, c, rows, &mut view, bn, m, rows_ready, None).map(drop)
}

/// Rebuilds the chunk's doc-topic rows from its assignments (SaberLDA §3.3).
#[allow(clippy::too_many_arguments)]
fn launch_rebuild(
    s: &Arc<CudaStream>,
    k: &Kernels,
    scratch_warps: u32,
    topics: u32,
    c: &mut DeviceChunk,
    rows: &mut Rows,
    scratch: &mut topos_cuda::cudarc::driver::CudaViewMut<'_, u32>,
    m: &ChunkMeta,
    top2: Option<&CudaSlice<u32>>,
) -> Result<(), GpuError> {
    let docs = m.docs as u32;
    if top2.is_some() && !c.word_of_ready && m.items > 0 {
        // SAFETY: one block per work item; every entry's position is below the chunk's tokens.
        unsafe {
            s.launch_builder(&k.word_of_positions)
                .arg(&c.items)
                .arg(&c.token_src)
                .arg(&mut c.word_of)
                .launch(grid(m.items as u32, BLOCK))
        }
        .check(|| "launching word_of_positions".into())?;
        c.word_of_ready = true;
    }
    let null = 0u64;
    let rebuild_cfg = grid((scratch_warps * 32).div_ceil(BLOCK).max(1), BLOCK);
    // SAFETY: argument types match the kernel's signature; the grid has at most scratch_warps
    // warps, each with its own K-entry histogram inside `scratch`.
    unsafe {
        let mut b = s.launch_builder(&k.rebuild);
        b.arg(&c.z)
            .arg(&c.doc_off)
            .arg(&docs)
            .arg(&topics)
            .arg(scratch)
            .arg(&mut rows.entries)
            .arg(&mut rows.nnz);
        // The pairs (ezlda), or null pointers.
        match top2 {
            Some(top2) => b.arg(&c.word_of).arg(top2).arg(&mut rows.pairs),
            None => b.arg(&null).arg(&null).arg(&null),
        };
        b.launch(rebuild_cfg)
    }
    .check(|| "launching rebuild_doc_topics".into())?;
    Ok(())
}

/// Rebuilds the chunk's doc-topic rows from its assignments (unless `rows_ready`: the last
/// exchange did), then samples all its tokens: in one launch, or (`cuts`, the first item of
/// each slice and then the number of items) in a launch a slice, with an event recorded after
/// each, which it returns.
#[allow(clippy::too_many_arguments)]
fn sweep_view(
    s: &Arc<CudaStream>,
    k: &Kernels,
    model: &Model<'_>,
    c: &mut DeviceChunk,
    rows: &mut Rows,
    scratch: &mut topos_cuda::cudarc::driver::CudaViewMut<'_, u32>,
    bn: &mut CudaSlice<u32>,
    m: &ChunkMeta,
    rows_ready: bool,
    cuts: Option<&[u32]>,
) -> Result<Vec<CudaEvent>, GpuError> {
    let whole = [0, m.items as u32];
    let (cuts, events) = match cuts {
        Some(cuts) => (cuts, true),
        None => (&whole[..], false),
    };
    let mut ends = Vec::new();
    if m.tokens == 0 {
        if events {
            for _ in cuts.windows(2) {
                ends.push(record(s)?);
            }
        }
        return Ok(ends);
    }
    let topics = model.cfg.topics;
    let three = model.cfg.three_branch.then_some(model.top2);
    if !rows_ready {
        launch_rebuild(
            s,
            k,
            model.scratch_warps,
            topics,
            c,
            rows,
            scratch,
            m,
            three,
        )?;
    }
    let cfg = model.cfg;
    let (alpha, beta) = (cfg.alpha as f32, cfg.beta as f32);
    let v_beta = f64::from(cfg.words) * cfg.beta;
    let (seed_lo, seed_hi) = (cfg.seed as u32, (cfg.seed >> 32) as u32);
    let token_base = m.token_start + model.cfg.key_base;
    let null = 0u64;
    let mh_steps = cfg.mh_steps.unwrap_or(0);
    let own_kept = u32::from(model.mh_own_kept);
    let mh_starts = model
        .mh_starts
        .map(|s| s.slice(m.token_start as usize..m.token_start as usize + m.tokens));
    for cut in cuts.windows(2) {
        let num_items = cut[1] - cut[0];
        if num_items == 0 {
            if events {
                ends.push(record(s)?);
            }
            continue;
        }
        let items = c.items.slice(4 * cut[0] as usize..4 * cut[1] as usize);
        let sample_cfg = LaunchConfig {
            grid_dim: (num_items, 1, 1),
            block_dim: (model.sample_threads, 1, 1),
            shared_mem_bytes: model.smem_bytes,
        };
        // SAFETY: argument types and order match `sample` in kernels.cu (sample_ezlda: four more,
        // sample_mh: three more); `items` holds `num_items` work items.
        unsafe {
            let mut b = s.launch_builder(&k.sample);
            b.arg(&items)
                .arg(&num_items)
                .arg(&c.token_doc)
                .arg(&c.token_src)
                .arg(&c.doc_off)
                .arg(&rows.entries)
                .arg(&rows.nnz)
                .arg(model.b)
                .arg(model.word_off)
                .arg(model.word_slots)
                .arg(model.n)
                .arg(model.inv_norm)
                .arg(&topics)
                .arg(&alpha)
                .arg(&beta)
                .arg(&v_beta)
                .arg(&mut c.z);
            // B′, or a null pointer with one copy (the kernel then adds nothing).
            if model.write_next {
                b.arg(&mut *bn);
            } else {
                b.arg(&null);
            }
            b.arg(&token_base)
                .arg(&seed_lo)
                .arg(&seed_hi)
                .arg(&model.iteration);
            if three.is_some() {
                b.arg(model.top2)
                    .arg(model.top3)
                    .arg(&rows.pairs)
                    .arg(model.skip_stats);
            }
            // mh: its steps, and its test hook's chain starts (this chunk's; a null pointer in
            // runs) and control.
            if cfg.mh_steps.is_some() {
                b.arg(&mh_steps);
                match &mh_starts {
                    Some(starts) => b.arg(starts),
                    None => b.arg(&null),
                };
                b.arg(&own_kept);
            }
            b.launch(sample_cfg)
        }
        .check(|| "launching sample".into())?;
        if events {
            ends.push(record(s)?);
        }
    }
    launch_histogram(s, k, model, &c.z, m.tokens as u64)?;
    Ok(ends)
}

/// n_next += the topics of a chunk's new assignments (see `topic_histogram`).
fn launch_histogram(
    s: &Arc<CudaStream>,
    k: &Kernels,
    model: &Model<'_>,
    z: &CudaSlice<u16>,
    tokens: u64,
) -> Result<(), GpuError> {
    let topics = model.cfg.topics;
    // Shared-memory counts up to 12,288 topics (48 KiB, the default limit per block).
    let shared = u32::from(topics <= 12_288);
    let blocks = tokens.div_ceil(u64::from(BLOCK) * 16).clamp(1, 1024) as u32;
    let cfg = LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: if shared == 1 { topics * 4 } else { 0 },
    };
    // SAFETY: argument types match the kernel's signature; z holds `tokens` assignments; the
    // totals are written only by atomics (from both chunk streams when streaming).
    unsafe {
        s.launch_builder(&k.topic_histogram)
            .arg(z)
            .arg(&tokens)
            .arg(&topics)
            .arg(&shared)
            .arg(model.n_next)
            .launch(cfg)
    }
    .check(|| "launching topic_histogram".into())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_cut_at_equal_shares_of_the_tokens() {
        // Even tokens: equal word ranges.
        assert_eq!(slice_cuts(&[10; 8], 800, 4), vec![0, 200, 400, 600, 800]);
        // One slice wanted, or no tokens at all: the whole vocabulary.
        assert_eq!(slice_cuts(&[10; 8], 800, 1), vec![0, 800]);
        // Most tokens in the first bucket: the two shares it holds give one cut after it, the
        // third share ends in the second bucket, and the empty tail joins the last slice.
        assert_eq!(
            slice_cuts(&[70, 10, 10, 10, 0, 0, 0, 0], 800, 4),
            vec![0, 100, 200, 800]
        );
        assert_eq!(
            slice_cuts(&[5, 5, 5, 5, 5, 5, 5, 5], 10, 4),
            vec![0, 3, 5, 8, 10]
        );
        // Uneven bucket edges (V not a multiple of the buckets): cuts strictly increase below V.
        for words in [7u32, 9, 13, 4097] {
            let hist = vec![3u64; 8.min(words as usize)];
            let cuts = slice_cuts(&hist, words, 5);
            assert_eq!((cuts[0], *cuts.last().unwrap()), (0, words));
            assert!(cuts.windows(2).all(|w| w[0] < w[1]), "{cuts:?}");
        }
    }

    #[test]
    fn items_regroup_by_slice_largest_first() {
        let mut state = 12345u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as u32
        };
        let mut items = Vec::new();
        for i in 0..500u32 {
            items.extend([next() % 1000, i * 10, 1 + next() % 300, 0]);
        }
        // The words' slices, one of a single word (likely with no item).
        let cuts = vec![0, 250, 251, 600, 1000];
        let (grouped, item_cuts) = group_items_by_slice(&items, &cuts);
        let mut a: Vec<_> = items.chunks(4).map(|c| c.to_vec()).collect();
        let mut b: Vec<_> = grouped.chunks(4).map(|c| c.to_vec()).collect();
        let by_slice: Vec<Vec<Vec<u32>>> = (0..cuts.len() - 1)
            .map(|j| b[item_cuts[j] as usize..item_cuts[j + 1] as usize].to_vec())
            .collect();
        a.sort();
        b.sort();
        assert_eq!(a, b, "a permutation of the items");
        assert_eq!(item_cuts[0], 0);
        assert_eq!(*item_cuts.last().unwrap() as usize, items.len() / 4);
        for (j, slice) in by_slice.iter().enumerate() {
            assert!(slice
                .iter()
                .all(|it| cuts[j] <= it[0] && it[0] < cuts[j + 1]));
            assert!(
                slice.windows(2).all(|w| w[0][2] >= w[1][2]),
                "largest first"
            );
        }
    }

    #[test]
    fn tree_sizes_match_the_kernel_layout() {
        assert_eq!(tree_floats(20), 32);
        assert_eq!(tree_floats(32), 32);
        assert_eq!(tree_floats(100), 128 + 32);
        assert_eq!(tree_floats(1024), 1024 + 32);
        assert_eq!(tree_floats(1025), 1056 + 64 + 32);
        assert_eq!(tree_floats(32_768), 32_768 + 1024 + 32);
        // 128 KiB of leaves at K = 32,768: within Hopper's 227 KiB per block.
        assert!(tree_floats(32_768) * 4 < 227 * 1024);
        // Hopper: 228 KiB per multiprocessor. K = 1,024 (4.1 KiB) and 10,000 (41 KiB, 5 fit):
        // blocks of 256 threads; K = 16,384 (66 KiB, 3 fit): 512; K = 32,768 (132 KiB): 1,024.
        let sm = 228 * 1024;
        assert_eq!(sample_block_threads(tree_floats(1024) * 4, sm), 256);
        assert_eq!(sample_block_threads(tree_floats(10_000) * 4, sm), 256);
        assert_eq!(sample_block_threads(tree_floats(16_384) * 4, sm), 512);
        assert_eq!(sample_block_threads(tree_floats(32_768) * 4, sm), 1024);
        // 40 warps of 48 registers at K = 1,024; 32 warps of 64 above K = 2,048, rows at three
        // widths (4, 5 and 8 slots) and fetched ahead, leaf loads 8 groups deep.
        let shape = |k, threads| {
            let s = sampler_shape(k, threads);
            let widths = (s.split_rows, s.mid_regs);
            (
                s.row_regs,
                s.min_blocks,
                widths,
                s.prefetch_rows,
                s.leaf_batch,
            )
        };
        assert_eq!(shape(1024, 256), (4, 5, (false, 0), false, 4));
        assert_eq!(shape(10_000, 256), (8, 4, (true, 5), true, 8));
        assert_eq!(shape(32_768, 1024), (8, 1, (true, 5), true, 8));
    }

    #[test]
    fn the_kernels_compile_for_every_row_shape() {
        // Needs NVRTC only (no GPU); skipped where it is not installed, as in CI.
        if !topos_cuda::device::nvrtc_present() {
            return;
        }
        for row_regs in [1, 2, 3, 4, 5, 8, 16] {
            for (split_rows, prefetch_rows) in [(false, false), (true, false), (true, true)] {
                for wide_rows in [false, true] {
                    let shape = SamplerShape {
                        row_regs,
                        min_blocks: 1,
                        split_rows,
                        mid_regs: if split_rows { row_regs * 3 / 4 } else { 0 },
                        prefetch_rows,
                        // Both leaf depths the engine uses, one per entry width.
                        leaf_batch: 4 + 4 * u32::from(wide_rows),
                    };
                    if let Err(e) = compile_ptx(shape, 256, wide_rows, 9, 0) {
                        panic!("{shape:?} wide {wide_rows}: {e}");
                    }
                }
            }
        }
    }
}
