//! The CUDA engine of sparse k-nearest neighbours (issue 5): `topos_distance`'s [`Backend`] on one
//! GPU, for all 15 metrics.
//!
//! `prepare` uploads the index once — its rows (for the union form and Chebyshev's walks), the
//! kernel's row aggregates computed by the CPU code (`topos_distance::row_aggregate`), and the
//! index cut into tiles of [`tile_rows`] rows, each stored by columns (an inverted index per
//! tile, rows as 15-bit offsets) — and each `knn` call uploads one batch of queries and runs one
//! launch of `knn_tiles` (`knn.cu`): one warp per work item (a query and a range of tiles; long
//! queries are cut into several, [`plan_items`]), an f64 accumulator per tile row in
//! shared memory, the expansion and a top-k list in registers. See `knn.cu` for the work split
//! and why it walks the intersection instead of the paper's query-row lookups (§3.3).
//!
//! The sums are the CPU engine's, in the same order and arithmetic, so the neighbours are the
//! CPU's (a GPU test checks every metric against it); only the logarithms and powers of
//! Jensen–Shannon, KL and Minkowski (p ∉ {1, 2}) may differ in the last bit (CUDA's libm).

use crate::{
    check_domain, check_k, check_matrix_size, check_queries, key_distance, row_aggregate,
    topk::from_ordered, union::magnitude_order, Backend, CsrMatrix, DistanceError, Metric,
    Neighbors, PreparedIndex, RowAgg,
};
use rayon::prelude::*;
use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};
use topos_cuda::cudarc;
use topos_cuda::cudarc::driver::{
    sys::CUfunction_attribute_enum as FnAttr, CudaContext, CudaFunction, CudaSlice, CudaStream,
    DeviceRepr, LaunchConfig, PushKernelArg,
};
use topos_cuda::{device, Check, GpuError};

const SOURCE: &str = include_str!("knn.cu");

/// The most neighbours per query the GPU keeps (its top-k list lives in registers: k/32
/// entries per lane).
pub const MAX_K: usize = 256;

/// Rows per tile: the accumulator of one warp is `TILE` f64 slots (plus `TILE` counts) in shared
/// memory. 1,024 keeps two blocks of eight warps per multiprocessor on an H100; env
/// `TOPOS_KNN_TILE` overrides it (a power of two, 256 to 8,192) for tuning.
pub fn tile_rows() -> u32 {
    topos_cuda::tuning::Tuning::get().knn_tile.unwrap_or(1024)
}

/// Warps (queries) per block; env `TOPOS_KNN_WARPS` overrides it (1 to 16).
pub fn block_warps() -> u32 {
    topos_cuda::tuning::Tuning::get().knn_warps.unwrap_or(8)
}

/// Bytes of shared memory one block needs for `metric`: per warp `tile` accumulator slots and
/// 32 staging slots (f64), `tile` counts (u32) when the metric counts the intersection, and for
/// Chebyshev `tile` + 32 masks of the query's largest columns.
pub fn shared_bytes(tile: u32, warps: u32, metric: Metric) -> u32 {
    warps * (tile + 32) * 8
        + if counts(metric) { warps * tile * 4 } else { 0 }
        + if metric == Metric::Chebyshev {
            warps * (tile + 32) * 4
        } else {
            0
        }
}

/// The metric's number in `knn.cu`.
fn metric_id(m: Metric) -> u32 {
    match m {
        Metric::Correlation => 0,
        Metric::Cosine => 1,
        Metric::Dice => 2,
        Metric::DotProduct => 3,
        Metric::Euclidean => 4,
        Metric::Canberra => 5,
        Metric::Chebyshev => 6,
        Metric::Hamming => 7,
        Metric::Hellinger => 8,
        Metric::Jaccard => 9,
        Metric::JensenShannon => 10,
        Metric::KlDivergence => 11,
        Metric::Manhattan => 12,
        Metric::Minkowski(_) => 13,
        Metric::RussellRao => 14,
    }
}

/// Whether `knn.cu` counts the intersection for `m` (`NEEDS_COUNT` there).
fn counts(m: Metric) -> bool {
    matches!(
        m,
        Metric::Dice
            | Metric::Jaccard
            | Metric::RussellRao
            | Metric::Canberra
            | Metric::Hamming
            | Metric::KlDivergence
            | Metric::Chebyshev
    )
}

/// [`RowAgg`] as `struct Agg` in `knn.cu`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct GpuAgg {
    a: f64,
    b: f64,
    c: f64,
    nnz: u32,
    pad: u32,
}

// SAFETY: plain old data with the C layout `knn.cu` reads.
unsafe impl DeviceRepr for GpuAgg {}

impl From<RowAgg> for GpuAgg {
    fn from(r: RowAgg) -> Self {
        GpuAgg {
            a: r.a,
            b: r.b,
            c: r.c,
            nnz: r.nnz,
            pad: 0,
        }
    }
}

fn device_err(e: GpuError) -> DistanceError {
    DistanceError::Device(e.to_string())
}

/// Bit of a tile entry's row offset that marks its row's largest-magnitude entry.
pub const FLAG_LARGEST: u16 = 1 << 15;

/// The index cut into tiles of `tile` rows, each stored by columns: per tile, `n_cols + 1`
/// column offsets relative to the tile's first entry, and its entries' rows (offsets inside the
/// tile) and values, by column and then by row.
#[derive(Debug, PartialEq)]
pub struct Tiles {
    pub tile: u32,
    pub colptr: Vec<u32>,
    pub base: Vec<u64>,
    pub rows: Vec<u16>,
    pub vals: Vec<f32>,
}

impl Tiles {
    /// Builds the tiles of `m` (in parallel over tiles). With `largest` (each row's positions
    /// by decreasing magnitude, Chebyshev), the entry that is its row's largest gets bit 15 of
    /// its row offset set (`FLAG_LARGEST`).
    pub fn build(m: &CsrMatrix, tile: u32, largest: Option<&[u32]>) -> Tiles {
        assert!(
            tile <= 1 << 15,
            "tile rows are 15-bit (bit 15 flags the largest entry)"
        );
        let n_cols = m.n_cols();
        let n_tiles = m.n_rows().div_ceil(tile as usize);
        let parts: Vec<(Vec<u32>, Vec<u16>, Vec<f32>)> = (0..n_tiles)
            .into_par_iter()
            .map(|t| {
                let r0 = t * tile as usize;
                let r1 = (r0 + tile as usize).min(m.n_rows());
                let mut ptr = vec![0u32; n_cols + 1];
                for r in r0..r1 {
                    for &c in m.row(r).indices {
                        ptr[c as usize + 1] += 1;
                    }
                }
                for c in 0..n_cols {
                    ptr[c + 1] += ptr[c];
                }
                let nnz = ptr[n_cols] as usize;
                let mut next = ptr[..n_cols].to_vec();
                let (mut rows, mut vals) = (vec![0u16; nnz], vec![0f32; nnz]);
                for r in r0..r1 {
                    let row = m.row(r);
                    let first = m.offsets()[r] as usize;
                    let top = largest.and_then(|o| o.get(first)).map(|&p| p as usize);
                    for (i, (&c, &v)) in row.indices.iter().zip(row.values).enumerate() {
                        let slot = &mut next[c as usize];
                        let flag = if top == Some(i) { FLAG_LARGEST } else { 0 };
                        rows[*slot as usize] = (r - r0) as u16 | flag;
                        vals[*slot as usize] = v;
                        *slot += 1;
                    }
                }
                (ptr, rows, vals)
            })
            .collect();
        let mut out = Tiles {
            tile,
            colptr: Vec::with_capacity(n_tiles * (n_cols + 1)),
            base: Vec::with_capacity(n_tiles),
            rows: Vec::with_capacity(m.indices().len()),
            vals: Vec::with_capacity(m.indices().len()),
        };
        for (ptr, rows, vals) in parts {
            out.base.push(out.rows.len() as u64);
            out.colptr.extend(ptr);
            out.rows.extend(rows);
            out.vals.extend(vals);
        }
        out
    }

    /// Device bytes of `n_rows × n_cols` with `nnz` non-zeros in tiles of `tile` rows.
    pub fn bytes(n_rows: usize, n_cols: usize, nnz: u64, tile: u32) -> u64 {
        let n_tiles = n_rows.div_ceil(tile as usize) as u64;
        n_tiles * (n_cols as u64 + 1) * 4 + n_tiles * 8 + nnz * 6
    }
}

/// One launch's work items: (query, first tile, end tile), largest first.
///
/// A query's work is its intersection pairs (the index entries in its columns, `work[q]`) plus
/// one expansion per index row. Items are cut so that none costs more than the batch's total
/// over `4 × slots` (`slots`: the warps the device holds at once), splitting a query's tiles
/// evenly — the paper's split of high-degree rows across blocks (§3.3.2), here across warps —
/// and run largest first, so the longest items start first and the batch ends evenly.
pub fn plan_items(work: &[u64], n_index: usize, n_tiles: u32, slots: u64) -> Vec<(u32, u32, u32)> {
    let cost = |w: u64| w + n_index as u64;
    let total: u64 = work.iter().map(|&w| cost(w)).sum();
    let cap = (total / (4 * slots.max(1))).max(1);
    let mut items: Vec<(u64, u32, u32, u32)> = Vec::with_capacity(work.len());
    for (q, &w) in work.iter().enumerate() {
        let c = cost(w);
        let parts = c.div_ceil(cap).clamp(1, u64::from(n_tiles.max(1))) as u32;
        for p in 0..parts {
            let (b, e) = (
                (u64::from(n_tiles) * u64::from(p) / u64::from(parts)) as u32,
                (u64::from(n_tiles) * u64::from(p + 1) / u64::from(parts)) as u32,
            );
            items.push((c / u64::from(parts), q as u32, b, e));
        }
    }
    items.sort_by_key(|&(c, q, b, _)| (std::cmp::Reverse(c), q, b));
    items.into_iter().map(|(_, q, b, e)| (q, b, e)).collect()
}

/// Positions of each row's values by decreasing magnitude, row after row (Chebyshev's walks).
fn magnitude_orders(m: &CsrMatrix, rows: Range<usize>) -> Vec<u32> {
    let per_row: Vec<Vec<u32>> = rows
        .into_par_iter()
        .map(|r| {
            let mut o = Vec::new();
            magnitude_order(m.row(r).values, &mut o);
            o
        })
        .collect();
    per_row.concat()
}

/// Compiled `knn_tiles` by (metric number, Minkowski p's bits, top-k slots, dense output).
type KernelCache = Arc<Mutex<HashMap<(u32, u64, u32, bool), CudaFunction>>>;

/// One GPU as a distance backend.
#[derive(Clone)]
pub struct CudaBackend {
    ctx: Arc<CudaContext>,
    info: device::DeviceInfo,
    /// Device memory the index may take (`None`: what is free); an index larger than this is
    /// streamed through the GPU in row chunks.
    budget: Option<u64>,
    kernels: KernelCache,
}

impl CudaBackend {
    /// Opens CUDA device `ordinal` (`None`: the first); a machine without a GPU gets a one-line
    /// error.
    pub fn open(ordinal: Option<usize>) -> Result<CudaBackend, GpuError> {
        let ctx = device::open(ordinal)?;
        let info = device::info(&ctx)?;
        if info.compute_capability.0 < 7 {
            return Err(GpuError::Unsupported(format!(
                "GPU k-NN needs compute capability 7.0 or newer (warp match instructions); {} has {}.{}; use --device cpu",
                info.name, info.compute_capability.0, info.compute_capability.1
            )));
        }
        Ok(CudaBackend {
            ctx,
            info,
            budget: None,
            kernels: KernelCache::default(),
        })
    }

    /// Limits the device memory the index may take to `bytes` (`--gpu-memory`): a larger index
    /// is cut into row chunks that are uploaded in turn for each batch of queries, and each
    /// query's neighbours are merged over the chunks.
    pub fn with_memory_budget(mut self, bytes: Option<u64>) -> CudaBackend {
        self.budget = bytes;
        self
    }

    /// The device.
    pub fn info(&self) -> &device::DeviceInfo {
        &self.info
    }
}

impl Backend for CudaBackend {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn prepare<'a>(
        &self,
        index: &'a CsrMatrix,
        metric: Metric,
    ) -> Result<Box<dyn PreparedIndex + 'a>, DistanceError> {
        let metric = match metric {
            Metric::Minkowski(p) => Metric::minkowski(p)?,
            m => m,
        };
        check_domain(index, 0..index.n_rows(), metric)?;
        if index.n_rows() >= u32::MAX as usize || index.n_cols() >= u32::MAX as usize {
            return Err(DistanceError::InvalidCsr(format!(
                "{} x {} exceeds the GPU engine's 32-bit row and column numbers",
                index.n_rows(),
                index.n_cols()
            )));
        }
        let (free, _) = self
            .ctx
            .mem_get_info()
            .map_err(|e| DistanceError::Device(format!("reading free GPU memory: {e}")))?;
        // Room for the index: the budget (or what is free), less a fifth for query batches and
        // results.
        let room = self.budget.unwrap_or(u64::MAX).min(free as u64) / 5 * 4;
        let chunks = index_chunks(index, room, tile_rows()).map_err(device_err)?;
        let engine = if chunks.len() == 1 {
            Engine::Resident(Box::new(
                GpuIndex::new(self, index, metric).map_err(device_err)?,
            ))
        } else {
            Engine::Streamed(
                chunks
                    .into_iter()
                    .map(|r| {
                        let start = r.start;
                        (
                            start,
                            HostIndex::build(Cow::Owned(row_slice(index, r)), metric, tile_rows()),
                        )
                    })
                    .collect(),
            )
        };
        Ok(Box::new(GpuPrepared {
            backend: self.clone(),
            metric,
            n_rows: index.n_rows(),
            n_cols: index.n_cols(),
            engine,
        }))
    }
}

/// Device bytes of the index `m` for the engine: tiles, rows, aggregates, magnitude orders.
fn index_bytes(m: &CsrMatrix, tile: u32) -> u64 {
    Tiles::bytes(m.n_rows(), m.n_cols(), m.nnz(), tile)
        + m.nnz() * 12
        + (m.n_rows() as u64 + 1) * 8
        + m.n_rows() as u64 * 32
}

/// Row ranges of `m` whose device bytes each fit `room`: one range when the whole index fits,
/// otherwise ranges of about equal non-zeros. A single row that does not fit is an error.
pub fn index_chunks(m: &CsrMatrix, room: u64, tile: u32) -> Result<Vec<Range<usize>>, GpuError> {
    let need = index_bytes(m, tile);
    let n = m.n_rows();
    if need <= room || n == 0 {
        return Ok(std::iter::once(0..n).collect());
    }
    let parts = need.div_ceil(room.max(1)) + 1;
    let per = m.nnz().div_ceil(parts).max(1);
    let mut out = Vec::new();
    let mut start = 0;
    while start < n {
        let base = m.offsets()[start];
        // Rows while the chunk's non-zeros stay within `per` (at least one row).
        let mut end = start + 1;
        while end < n && m.offsets()[end + 1] - base <= per {
            end += 1;
        }
        let chunk_bytes = index_bytes(&row_slice(m, start..end), tile);
        if chunk_bytes > room {
            return Err(GpuError::Unsupported(format!(
                "index rows {start}..{end} need {:.2} GiB of GPU memory, more than the {:.2} GiB available to the index; raise --gpu-memory or use --device cpu",
                chunk_bytes as f64 / f64::from(1u32 << 30),
                room as f64 / f64::from(1u32 << 30)
            )));
        }
        out.push(start..end);
        start = end;
    }
    Ok(out)
}

/// Rows `r` of `m` as a matrix of their own.
fn row_slice(m: &CsrMatrix, r: Range<usize>) -> CsrMatrix {
    let (a, b) = (m.offsets()[r.start] as usize, m.offsets()[r.end] as usize);
    CsrMatrix::new(
        m.n_cols(),
        m.offsets()[r.start..=r.end]
            .iter()
            .map(|&o| o - a as u64)
            .collect(),
        m.indices()[a..b].to_vec(),
        m.values()[a..b].to_vec(),
    )
    .expect("a row range of a valid matrix is valid")
}

/// An index (or a row chunk of one) prepared on the host for one metric: its rows, the kernel's
/// row aggregates, Chebyshev's magnitude orders, the tiles and the column counts — everything
/// the device needs, built once and uploaded as often as a streamed search needs it.
struct HostIndex<'a> {
    metric: Metric,
    /// Borrowed for a resident index (uploaded once), owned for a streamed chunk.
    csr: Cow<'a, CsrMatrix>,
    aggs: Vec<GpuAgg>,
    by_mag: Vec<u32>,
    tiles: Tiles,
    df: Vec<u32>,
}

impl<'a> HostIndex<'a> {
    fn build(csr: Cow<'a, CsrMatrix>, metric: Metric, tile: u32) -> HostIndex<'a> {
        let m: &CsrMatrix = &csr;
        let n = m.n_cols();
        let aggs: Vec<GpuAgg> = (0..m.n_rows())
            .into_par_iter()
            .map(|r| row_aggregate(metric, m.row(r), n).into())
            .collect();
        let by_mag = if metric == Metric::Chebyshev {
            magnitude_orders(m, 0..m.n_rows())
        } else {
            vec![0]
        };
        let tiles = Tiles::build(
            m,
            tile,
            (metric == Metric::Chebyshev).then_some(&by_mag[..]),
        );
        let mut df = vec![0u32; n];
        for &c in m.indices() {
            df[c as usize] += 1;
        }
        HostIndex {
            metric,
            csr,
            aggs,
            by_mag: if by_mag.is_empty() { vec![0] } else { by_mag },
            tiles,
            df,
        }
    }
}

/// The index on the device for the whole search, or in row chunks uploaded in turn.
enum Engine {
    Resident(Box<GpuIndex>),
    /// (first row, the chunk prepared on the host) per chunk.
    Streamed(Vec<(usize, HostIndex<'static>)>),
}

/// A prepared index on the GPU (see [`CudaBackend::with_memory_budget`] for streaming).
struct GpuPrepared {
    backend: CudaBackend,
    metric: Metric,
    n_rows: usize,
    n_cols: usize,
    engine: Engine,
}

impl GpuPrepared {
    /// Runs `f` on each part of the index with its first row.
    fn each_part(
        &self,
        mut f: impl FnMut(&GpuIndex, usize) -> Result<(), GpuError>,
    ) -> Result<(), GpuError> {
        match &self.engine {
            Engine::Resident(g) => f(g, 0),
            Engine::Streamed(chunks) => {
                for (row0, h) in chunks {
                    let g = GpuIndex::upload(&self.backend, h)?;
                    f(&g, *row0)?;
                }
                Ok(())
            }
        }
    }
}

impl PreparedIndex for GpuPrepared {
    fn metric(&self) -> Metric {
        self.metric
    }

    fn n_rows(&self) -> usize {
        self.n_rows
    }

    fn knn(
        &self,
        queries: &CsrMatrix,
        rows: Range<usize>,
        k: usize,
        exclude_self: bool,
    ) -> Result<Neighbors, DistanceError> {
        check_queries(queries, &rows, self.n_cols, self.metric)?;
        check_k(k, self.n_rows, exclude_self)?;
        if k > MAX_K {
            return Err(DistanceError::Device(format!(
                "the GPU engine keeps at most {MAX_K} neighbours per query, -k {k} asks for more; use --device cpu"
            )));
        }
        let mut lists: Vec<Vec<(u64, u32)>> = vec![Vec::new(); rows.len()];
        self.each_part(|g, row0| {
            // The self row of query i is row start + i of the whole index: relative to this
            // part it may be negative, which wraps past every row of the part.
            let self_first = exclude_self.then(|| (rows.start as u64).wrapping_sub(row0 as u64));
            g.knn_lists(
                queries,
                rows.clone(),
                k,
                self_first,
                row0 as u32,
                &mut lists,
            )
        })
        .map_err(device_err)?;
        let (indices, distances) = finish_lists(lists, k, self.metric);
        Ok(Neighbors {
            k,
            indices,
            distances,
        })
    }

    fn distances(
        &self,
        queries: &CsrMatrix,
        rows: Range<usize>,
    ) -> Result<Vec<f32>, DistanceError> {
        check_queries(queries, &rows, self.n_cols, self.metric)?;
        let cells = check_matrix_size(rows.len(), self.n_rows)?;
        let mut out = vec![0f32; cells];
        self.each_part(|g, row0| {
            let part = g.dense_rows(queries, rows.clone())?;
            for (i, chunk) in part.chunks(g.n_rows.max(1)).enumerate() {
                let at = i * self.n_rows + row0;
                out[at..at + chunk.len()].copy_from_slice(chunk);
            }
            Ok(())
        })
        .map_err(device_err)?;
        Ok(out)
    }
}

/// What one compiled `knn_tiles` is specialized for.
#[derive(Clone, Copy, Debug)]
struct Shape {
    metric: Metric,
    tile: u32,
    warps: u32,
    slots: u32,
    dense: bool,
}

/// Compiles `knn.cu` with NVRTC for compute capability `major.minor`.
fn compile(s: Shape, major: i32, minor: i32) -> Result<cudarc::nvrtc::Ptx, GpuError> {
    let arch: &'static str = Box::leak(format!("compute_{major}{minor}").into_boxed_str());
    let p = match s.metric {
        Metric::Minkowski(p) => p,
        _ => 1.0,
    };
    let options = vec![
        "--std=c++17".into(),
        "-default-device".into(),
        // No fused multiply-adds: the CPU's arithmetic rounds every product (Rust does
        // not contract), and the same sums must give the same bits.
        "--fmad=false".into(),
        format!("-DMETRIC={}", metric_id(s.metric)),
        format!("-DTILE={}", s.tile),
        format!("-DWARPS={}", s.warps),
        format!("-DKSLOTS={}", s.slots),
        format!("-DDENSE={}", u8::from(s.dense)),
        // The f64 exactly (Rust's shortest round-trip decimal).
        format!("-DMINK_P={p:?}"),
    ];
    Ok(topos_cuda::compile::compile_cached(SOURCE, options, arch)?.0)
}

/// The index on the device for one metric.
struct GpuIndex {
    metric: Metric,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    n_rows: usize,
    n_cols: usize,
    tile: u32,
    warps: u32,
    n_tiles: u32,
    ptr: CudaSlice<u64>,
    cols: CudaSlice<u32>,
    vals: CudaSlice<f32>,
    aggs: CudaSlice<GpuAgg>,
    by_mag: CudaSlice<u32>,
    tile_colptr: CudaSlice<u32>,
    tile_base: CudaSlice<u64>,
    tile_rows: CudaSlice<u16>,
    tile_vals: CudaSlice<f32>,
    /// Index rows per column: a query's work is the sum over its columns.
    df: Vec<u32>,
    /// Warps the device holds at once for this kernel (how finely to cut work items).
    slots: u64,
    /// Compiled kernels, shared by every index of the backend.
    kernels: KernelCache,
}

impl GpuIndex {
    /// Prepares `m` on the host and uploads it.
    fn new(backend: &CudaBackend, m: &CsrMatrix, metric: Metric) -> Result<GpuIndex, GpuError> {
        GpuIndex::upload(
            backend,
            &HostIndex::build(Cow::Borrowed(m), metric, tile_rows()),
        )
    }

    /// Uploads an index prepared on the host.
    fn upload(backend: &CudaBackend, h: &HostIndex) -> Result<GpuIndex, GpuError> {
        let (tile, warps, metric) = (h.tiles.tile, block_warps(), h.metric);
        let smem = shared_bytes(tile, warps, metric);
        if smem > backend.info.max_shared_per_block {
            return Err(GpuError::Unsupported(format!(
                "{warps} warps with tiles of {tile} rows need {} KiB of shared memory per block, the device allows {} KiB; lower TOPOS_KNN_TILE or TOPOS_KNN_WARPS",
                smem / 1024,
                backend.info.max_shared_per_block / 1024
            )));
        }
        let need = index_bytes(&h.csr, tile);
        let ctx = backend.ctx.clone();
        let (free, _) = ctx
            .mem_get_info()
            .check(|| "reading free GPU memory".into())?;
        if need > free as u64 {
            return Err(GpuError::Unsupported(format!(
                "the index needs {:.1} GiB of GPU memory and {:.1} GiB are free; use --gpu-memory to stream it in chunks, or --device cpu",
                need as f64 / f64::from(1u32 << 30),
                free as f64 / f64::from(1u32 << 30)
            )));
        }
        let m = &h.csr;
        let stream = ctx.new_stream().check(|| "creating a CUDA stream".into())?;
        let up = |what: &str| format!("uploading the index ({what})");
        let nonempty_u32 = |v: &[u32]| if v.is_empty() { vec![0] } else { v.to_vec() };
        let nonempty_f32 = |v: &[f32]| if v.is_empty() { vec![0.0] } else { v.to_vec() };
        let g = GpuIndex {
            metric,
            n_rows: m.n_rows(),
            n_cols: m.n_cols(),
            tile,
            warps,
            n_tiles: h.tiles.base.len() as u32,
            ptr: stream.clone_htod(m.offsets()).check(|| up("row offsets"))?,
            cols: stream
                .clone_htod(&nonempty_u32(m.indices()))
                .check(|| up("columns"))?,
            vals: stream
                .clone_htod(&nonempty_f32(m.values()))
                .check(|| up("values"))?,
            aggs: stream.clone_htod(&h.aggs).check(|| up("row aggregates"))?,
            by_mag: stream
                .clone_htod(&h.by_mag)
                .check(|| up("magnitude order"))?,
            tile_colptr: stream
                .clone_htod(&h.tiles.colptr)
                .check(|| up("tile columns"))?,
            tile_base: stream
                .clone_htod(&h.tiles.base)
                .check(|| up("tile offsets"))?,
            tile_rows: stream
                .clone_htod(&if h.tiles.rows.is_empty() {
                    vec![0]
                } else {
                    h.tiles.rows.clone()
                })
                .check(|| up("tile rows"))?,
            tile_vals: stream
                .clone_htod(&nonempty_f32(&h.tiles.vals))
                .check(|| up("tile values"))?,
            kernels: backend.kernels.clone(),
            df: h.df.clone(),
            slots: {
                let per_sm =
                    (backend.info.shared_per_multiprocessor / (smem + 1024)).clamp(1, 64 / warps);
                u64::from(backend.info.multiprocessors * per_sm * warps)
            },
            stream,
            ctx,
        };
        g.stream
            .synchronize()
            .check(|| "uploading the index".into())?;
        Ok(g)
    }

    /// The kernel for `slots` top-k slots per lane (or dense rows), compiled on first use.
    fn kernel(&self, slots: u32, dense: bool) -> Result<CudaFunction, GpuError> {
        let p_bits = match self.metric {
            Metric::Minkowski(p) => p.to_bits(),
            _ => 0,
        };
        let key = (metric_id(self.metric), p_bits, slots, dense);
        let mut cache = self.kernels.lock().unwrap();
        if let Some(f) = cache.get(&key) {
            return Ok(f.clone());
        }
        let (major, minor) = self
            .ctx
            .compute_capability()
            .check(|| "reading the compute capability".into())?;
        let shape = Shape {
            metric: self.metric,
            tile: self.tile,
            warps: self.warps,
            slots,
            dense,
        };
        let ptx = compile(shape, major, minor)?;
        let module = self
            .ctx
            .load_module(ptx)
            .check(|| "loading the k-NN kernel".into())?;
        let f = module
            .load_function("knn_tiles")
            .check(|| "finding kernel knn_tiles".into())?;
        f.set_attribute(
            FnAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            self.smem() as i32,
        )
        .check(|| "raising the k-NN kernel's shared-memory limit".into())?;
        cache.insert(key, f.clone());
        Ok(f)
    }

    fn smem(&self) -> u32 {
        shared_bytes(self.tile, self.warps, self.metric)
    }

    /// Adds the k nearest rows of this index (numbered from `row0`) of each query of `rows`
    /// to `lists` (one per query, unsorted). `self_first`: the row of this index that query
    /// `rows.start` must not be matched with (then query i skips `self_first + i`, wrapping).
    fn knn_lists(
        &self,
        queries: &CsrMatrix,
        rows: Range<usize>,
        k: usize,
        self_first: Option<u64>,
        row0: u32,
        lists: &mut [Vec<(u64, u32)>],
    ) -> Result<(), GpuError> {
        if let Launched::Lists {
            item_query,
            keys,
            rows: found,
        } = self.launch(queries, rows, Some(k), self_first.unwrap_or(u64::MAX))?
        {
            extend_lists(&item_query, &keys, &found, k, row0, lists);
        }
        Ok(())
    }

    /// Every distance from each query of `rows` to this index's rows, row-major.
    fn dense_rows(&self, queries: &CsrMatrix, rows: Range<usize>) -> Result<Vec<f32>, GpuError> {
        match self.launch(queries, rows, None, u64::MAX)? {
            Launched::Dense(d) => Ok(d),
            Launched::Lists { .. } => unreachable!("a dense launch returns distances"),
        }
    }

    /// Runs one launch over `rows` of `queries`: each work item's k nearest (ordered keys and
    /// rows), or with `k` `None` every distance (`n_rows` per query).
    fn launch(
        &self,
        queries: &CsrMatrix,
        rows: Range<usize>,
        k: Option<usize>,
        self_first: u64,
    ) -> Result<Launched, GpuError> {
        let nq = rows.len();
        let (dense, k) = match k {
            Some(k) => (false, k),
            None => (true, 1),
        };
        let f = self.kernel(k.div_ceil(32) as u32, dense)?;
        let s = &self.stream;
        let (a, b) = (
            queries.offsets()[rows.start] as usize,
            queries.offsets()[rows.end] as usize,
        );
        let offsets: Vec<u64> = queries.offsets()[rows.start..=rows.end]
            .iter()
            .map(|&o| o - a as u64)
            .collect();
        let nonempty_u32 = |v: &[u32]| if v.is_empty() { vec![0] } else { v.to_vec() };
        let cols = nonempty_u32(&queries.indices()[a..b]);
        let vals: Vec<f32> = if a == b {
            vec![0.0]
        } else {
            queries.values()[a..b].to_vec()
        };
        let aggs: Vec<GpuAgg> = rows
            .clone()
            .into_par_iter()
            .map(|r| row_aggregate(self.metric, queries.row(r), self.n_cols).into())
            .collect();
        let (by_mag, top_bit) = if self.metric == Metric::Chebyshev {
            let order = magnitude_orders(queries, rows.clone());
            // Per entry, 1 << its rank by magnitude within its row for the 31 largest (bit 31
            // of the kernel's row masks says whether the row's own largest is in the query).
            let mut top = vec![0u32; order.len()];
            for o in offsets.windows(2) {
                let (s0, s1) = (o[0] as usize, o[1] as usize);
                for (rank, &p) in order[s0..s1].iter().take(31).enumerate() {
                    top[s0 + p as usize] = 1 << rank;
                }
            }
            (nonempty_u32(&order), nonempty_u32(&top))
        } else {
            (vec![0], vec![0])
        };
        let work: Vec<u64> = rows
            .clone()
            .map(|r| {
                let row = queries.row(r);
                row.indices
                    .iter()
                    .map(|&c| u64::from(self.df[c as usize]))
                    .sum::<u64>()
            })
            .collect();
        let items = plan_items(&work, self.n_rows, self.n_tiles, self.slots);
        let n_items = items.len();
        let item_query: Vec<u32> = items.iter().map(|i| i.0).collect();
        let item_begin: Vec<u32> = items.iter().map(|i| i.1).collect();
        let item_end: Vec<u32> = items.iter().map(|i| i.2).collect();
        let up = |what: &str| format!("uploading the queries ({what})");
        let d_ptr = s.clone_htod(&offsets).check(|| up("row offsets"))?;
        let d_cols = s.clone_htod(&cols).check(|| up("columns"))?;
        let d_vals = s.clone_htod(&vals).check(|| up("values"))?;
        let d_aggs = s.clone_htod(&aggs).check(|| up("aggregates"))?;
        let d_mag = s.clone_htod(&by_mag).check(|| up("magnitude order"))?;
        let d_top = s.clone_htod(&top_bit).check(|| up("largest columns"))?;
        let d_items = [
            s.clone_htod(&nonempty_u32(&item_query))
                .check(|| up("work items"))?,
            s.clone_htod(&nonempty_u32(&item_begin))
                .check(|| up("work items"))?,
            s.clone_htod(&nonempty_u32(&item_end))
                .check(|| up("work items"))?,
        ];
        let (dense_len, list_len) = if dense {
            (nq * self.n_rows, 0)
        } else {
            (0, n_items * k)
        };
        let alloc = |what: &str, n: usize| format!("allocating the results ({n} {what})");
        let mut d_key = s
            .alloc_zeros::<u64>(list_len.max(1))
            .check(|| alloc("keys", list_len))?;
        let mut d_row = s
            .alloc_zeros::<u32>(list_len.max(1))
            .check(|| alloc("neighbours", list_len))?;
        let mut d_dist = s
            .alloc_zeros::<f32>(dense_len.max(1))
            .check(|| alloc("distances", dense_len))?;
        let n_items32 = n_items as u32;
        let (n_index, n_cols, k32) = (self.n_rows as u32, self.n_cols as u32, k as u32);
        let cfg = LaunchConfig {
            grid_dim: (n_items32.div_ceil(self.warps).max(1), 1, 1),
            block_dim: (self.warps * 32, 1, 1),
            shared_mem_bytes: self.smem(),
        };
        if nq > 0 {
            // SAFETY: argument types and order match `knn_tiles` in knn.cu; every buffer is
            // sized as the kernel indexes it (k or n_rows results per query).
            unsafe {
                s.launch_builder(&f)
                    .arg(&d_ptr)
                    .arg(&d_cols)
                    .arg(&d_vals)
                    .arg(&d_aggs)
                    .arg(&d_mag)
                    .arg(&d_top)
                    .arg(&d_items[0])
                    .arg(&d_items[1])
                    .arg(&d_items[2])
                    .arg(&n_items32)
                    .arg(&self_first)
                    .arg(&self.ptr)
                    .arg(&self.cols)
                    .arg(&self.vals)
                    .arg(&self.aggs)
                    .arg(&self.by_mag)
                    .arg(&n_index)
                    .arg(&n_cols)
                    .arg(&self.tile_colptr)
                    .arg(&self.tile_base)
                    .arg(&self.tile_rows)
                    .arg(&self.tile_vals)
                    .arg(&k32)
                    .arg(&mut d_key)
                    .arg(&mut d_row)
                    .arg(&mut d_dist)
                    .launch(cfg)
            }
            .check(|| "launching knn_tiles".into())?;
        }
        if dense {
            let mut dist = vec![0f32; dense_len];
            if dense_len > 0 {
                s.memcpy_dtoh(&d_dist.slice(0..dense_len), &mut dist)
                    .check(|| "downloading the distances".into())?;
            }
            s.synchronize().check(|| "running knn_tiles".into())?;
            return Ok(Launched::Dense(dist));
        }
        let (mut keys, mut found) = (vec![0u64; list_len], vec![0u32; list_len]);
        if list_len > 0 {
            s.memcpy_dtoh(&d_key.slice(0..list_len), &mut keys)
                .check(|| "downloading the neighbours".into())?;
            s.memcpy_dtoh(&d_row.slice(0..list_len), &mut found)
                .check(|| "downloading the neighbours".into())?;
        }
        s.synchronize().check(|| "running knn_tiles".into())?;
        Ok(Launched::Lists {
            item_query,
            keys,
            rows: found,
        })
    }
}

/// What one launch returns.
enum Launched {
    /// Per work item, k (ordered key, row) best first; unfilled entries have row `u32::MAX`.
    Lists {
        item_query: Vec<u32>,
        keys: Vec<u64>,
        rows: Vec<u32>,
    },
    /// Every distance, row-major.
    Dense(Vec<f32>),
}

/// Adds each work item's entries (rows offset by `row0`) to its query's list.
fn extend_lists(
    item_query: &[u32],
    keys: &[u64],
    rows: &[u32],
    k: usize,
    row0: u32,
    lists: &mut [Vec<(u64, u32)>],
) {
    for (i, &q) in item_query.iter().enumerate() {
        let list = &mut lists[q as usize];
        for j in i * k..(i + 1) * k {
            if rows[j] != u32::MAX {
                list.push((keys[j], rows[j] + row0));
            }
        }
    }
}

/// The k best of each query's list by (key, row) — the CPU engine's total order — as rows and
/// distances (keys are `topk::ordered` images, converted by the CPU's `key_distance`).
fn finish_lists(lists: Vec<Vec<(u64, u32)>>, k: usize, metric: Metric) -> (Vec<u32>, Vec<f32>) {
    let (mut idx, mut dist) = (
        Vec::with_capacity(lists.len() * k),
        Vec::with_capacity(lists.len() * k),
    );
    for mut list in lists {
        list.sort_unstable();
        list.truncate(k);
        for (key, row) in list {
            idx.push(row);
            dist.push(key_distance(metric, from_ordered(key)) as f32);
        }
    }
    (idx, dist)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_hold_every_entry_by_column_then_row() {
        let m = CsrMatrix::from_dense(
            &[
                vec![1.0, 0.0, 2.0],
                vec![0.0, 3.0, 4.0],
                vec![5.0, 0.0, 0.0],
                vec![0.0, 0.0, 6.0],
                vec![7.0, 8.0, 0.0],
            ],
            3,
        )
        .unwrap();
        let t = Tiles::build(&m, 2, None);
        assert_eq!(t.base, vec![0, 4, 6]);
        // Tile 0 (rows 0, 1): col 0 {0}, col 1 {1}, col 2 {0, 1}.
        assert_eq!(&t.colptr[0..4], &[0, 1, 2, 4]);
        assert_eq!(&t.rows[0..4], &[0, 1, 0, 1]);
        assert_eq!(&t.vals[0..4], &[1.0, 3.0, 2.0, 4.0]);
        // Tile 1 (rows 2, 3): col 0 {2}, col 2 {3}.
        assert_eq!(&t.colptr[4..8], &[0, 1, 1, 2]);
        assert_eq!(&t.rows[4..6], &[0, 1]);
        assert_eq!(&t.vals[4..6], &[5.0, 6.0]);
        // Tile 2 (row 4): col 0 and col 1.
        assert_eq!(&t.colptr[8..12], &[0, 1, 2, 2]);
        assert_eq!(&t.vals[6..8], &[7.0, 8.0]);
        assert_eq!(t.rows.len() as u64, m.nnz());
        assert_eq!(
            Tiles::bytes(5, 3, m.nnz(), 2),
            3 * 4 * 4 + 3 * 8 + m.nnz() * 6
        );
    }

    #[test]
    fn shared_memory_and_metric_numbers() {
        assert_eq!(shared_bytes(2048, 8, Metric::Cosine), 8 * 2080 * 8);
        assert_eq!(
            shared_bytes(2048, 8, Metric::Jaccard),
            8 * 2080 * 8 + 8 * 2048 * 4
        );
        assert_eq!(
            shared_bytes(2048, 8, Metric::Chebyshev),
            8 * 2080 * 8 + 8 * 2048 * 4 + 8 * 2080 * 4
        );
        // At the defaults, two blocks of 8 warps fit an H100's 228 KiB per multiprocessor for
        // every metric but Chebyshev (one block).
        assert!(2 * shared_bytes(tile_rows(), block_warps(), Metric::KlDivergence) <= 228 * 1024);
        assert!(shared_bytes(tile_rows(), block_warps(), Metric::Chebyshev) <= 227 * 1024);
        let ids: std::collections::BTreeSet<u32> =
            Metric::all(3.0).iter().map(|&m| metric_id(m)).collect();
        assert_eq!(ids.len(), 15);
        assert!(ids.iter().all(|&i| i < 15));
    }

    #[test]
    fn the_kernel_compiles_for_every_metric_and_shape() {
        // Needs NVRTC only (no GPU); skipped where it is not installed, as in CI.
        if !device::nvrtc_present() {
            return;
        }
        for metric in Metric::all(3.0) {
            for (slots, dense) in [(1, false), (8, false), (1, true)] {
                let shape = Shape {
                    metric,
                    tile: 1024,
                    warps: 8,
                    slots,
                    dense,
                };
                if let Err(e) = compile(shape, 9, 0) {
                    panic!("{shape:?}: {e}");
                }
            }
        }
    }

    #[test]
    fn long_queries_are_cut_and_items_run_largest_first() {
        // 1,000 light queries and one whose columns hold 100× the index entries.
        let mut work = vec![1_000u64; 1_000];
        work[500] = 100_000_000;
        let items = plan_items(&work, 10_000, 10, 20);
        // The heavy query comes first, cut into every tile (its cost is far above the cap).
        let heavy: Vec<_> = items.iter().filter(|i| i.0 == 500).collect();
        assert_eq!(heavy.len(), 10);
        assert!(items[..10].iter().all(|i| i.0 == 500));
        // Its tile ranges partition 0..10; every light query is one item over all tiles.
        let mut covered: Vec<u32> = heavy.iter().flat_map(|i| i.1..i.2).collect();
        covered.sort_unstable();
        assert_eq!(covered, (0..10).collect::<Vec<_>>());
        assert_eq!(items.len(), 1_000 + 9);
        assert!(items
            .iter()
            .filter(|i| i.0 != 500)
            .all(|i| (i.1, i.2) == (0, 10)));
        // A lone query on a big device is cut as finely as the tiles allow.
        assert_eq!(plan_items(&[5], 100_000, 98, 2_000).len(), 98);
    }

    #[test]
    fn merged_lists_keep_the_k_best_in_the_cpu_order() {
        use crate::topk::ordered;
        // Query 0 has two items (the second holds the best row), query 1 one; k = 2.
        let key = |d: f64| ordered(d * d);
        let item_query = [0, 1, 0];
        let keys = [key(3.0), key(4.0), key(1.0), key(2.0), key(3.0), u64::MAX];
        let rows = [7, 9, 1, 2, 3, u32::MAX];
        let mut lists = vec![Vec::new(); 2];
        extend_lists(&item_query, &keys, &rows, 2, 0, &mut lists);
        let (idx, dist) = finish_lists(lists.clone(), 2, Metric::Euclidean);
        // Query 0: rows 3 (3.0) and 7 (3.0): a tie, broken by the smaller row.
        assert_eq!(idx, vec![3, 7, 1, 2]);
        assert_eq!(dist, vec![3.0, 3.0, 1.0, 2.0]);
        // A second part of the index (rows from 100) with a better row for query 1.
        extend_lists(&[1], &[key(0.5), key(9.0)], &[4, 5], 2, 100, &mut lists);
        let (idx, _) = finish_lists(lists, 2, Metric::Euclidean);
        assert_eq!(idx, vec![3, 7, 104, 1]);
    }

    #[test]
    fn an_index_too_large_for_the_room_is_cut_into_fitting_row_chunks() {
        let rows: Vec<Vec<f32>> = (0..500)
            .map(|r| (0..40).map(|c| ((r * 7 + c * 3) % 5) as f32).collect())
            .collect();
        let m = CsrMatrix::from_dense(&rows, 40).unwrap();
        let whole = index_bytes(&m, 1024);
        let one = index_chunks(&m, whole, 1024).unwrap();
        assert_eq!((one.len(), one[0].clone()), (1, 0..500));
        let room = whole / 3;
        let chunks = index_chunks(&m, room, 1024).unwrap();
        assert!(chunks.len() >= 3, "{chunks:?}");
        // Contiguous, covering every row, each within the room.
        assert_eq!(chunks.first().unwrap().start, 0);
        assert_eq!(chunks.last().unwrap().end, 500);
        for w in chunks.windows(2) {
            assert_eq!(w[0].end, w[1].start);
        }
        for c in &chunks {
            assert!(index_bytes(&row_slice(&m, c.clone()), 1024) <= room);
        }
        // A row that cannot fit at all is refused in one line.
        let e = index_chunks(&m, 100, 1024).unwrap_err().to_string();
        assert!(e.contains("--gpu-memory") && !e.contains('\n'), "{e}");
    }

    #[test]
    fn no_gpu_is_one_clear_line() {
        if device::driver_present() {
            return;
        }
        let e = CudaBackend::open(None).err().unwrap().to_string();
        assert!(e.contains("driver") && !e.contains('\n'), "{e}");
    }
}
