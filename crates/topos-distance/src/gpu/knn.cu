// Sparse k-nearest neighbours and distance rows on the GPU (issue 5; Nolet et al., "GPU Semiring
// Primitives for Sparse Neighborhood Methods"). Compiled by NVRTC per run with:
//   METRIC   the metric's number (see `metric_id` in distance.rs)
//   TILE     index rows per tile (<= 32,768: rows inside a tile are 15-bit; bit 15 flags a row's
//            largest-magnitude entry, for Chebyshev)
//   WARPS    warps per block (one work item — a query and a range of tiles — per warp)
//   KSLOTS   top-k list entries per lane (k <= 32 * KSLOTS)
//   DENSE    1: write every distance (pairwise rows) instead of selecting the k nearest
//   MINK_P   Minkowski's p
//
// Work split. The paper's kernel (§3.3) keeps the query row in shared memory and streams every
// non-zero of the index past it: n_queries × nnz(index) lookups. This kernel turns it around
// the way the CPU engine does (cpu.rs): the index is stored as compressed columns per tile of
// TILE rows, and a warp walks only the index entries in its query's columns — the intersection
// pairs, Σ_j nnz_q(j)·nnz_index(j) products, 500× fewer than the lookups on a 0.2%-dense
// NYTimes-sized matrix. The query's ⊗ products are folded into a dense accumulator in shared
// memory with one slot per row of the tile (the paper's dense-in-shared-memory choice, applied
// to the accumulator), then the element-wise expansion (§2.2) runs over the tile's rows and
// feeds a top-k list held in registers across the warp. Load balance (§3.3.2): the warp takes
// 32 query columns at a time and spreads the concatenation of their segments over its lanes
// (a warp scan of the segment lengths, then a binary search per lane), so a common column of
// thousands of entries and many rare ones keep every lane busy alike; and a query with many
// non-zeros is cut into several work items over disjoint tile ranges (the paper's split of
// high-degree rows, here across warps), merged on the host (`plan_items`, `extend_lists`, `finish_lists`).
//
// Same numbers as the CPU. Each accumulator slot receives its products in increasing column
// order — lanes that hit the same row in one step are grouped with __match_any_sync and the
// lowest lane adds the group's products in lane (= column) order — so every sum is the CPU's,
// bit for bit, in the same f64 arithmetic; the expansions, error bounds and union-form
// refinements below are kernel.rs / expanded.rs / aggregate.rs / union.rs line for line, and
// the order of the top-k list is the CPU's total order (key, then index).

typedef unsigned int u32;
typedef unsigned long long u64;
typedef unsigned short u16;

#define FULL 0xffffffffu
// NVRTC has no <math.h>.
#define NAN __longlong_as_double(0x7ff8000000000000ll)
#define INFINITY __longlong_as_double(0x7ff0000000000000ll)

// Row aggregates, laid out as `GpuAgg` in distance.rs.
struct Agg {
  double a, b, c;
  u32 nnz;
  u32 pad;
};

#define M_CORRELATION 0
#define M_COSINE 1
#define M_DICE 2
#define M_DOT 3
#define M_EUCLIDEAN 4
#define M_CANBERRA 5
#define M_CHEBYSHEV 6
#define M_HAMMING 7
#define M_HELLINGER 8
#define M_JACCARD 9
#define M_JS 10
#define M_KL 11
#define M_MANHATTAN 12
#define M_MINKOWSKI 13
#define M_RUSSELL_RAO 14

constexpr bool NEEDS_ACC = !(METRIC == M_DICE || METRIC == M_JACCARD || METRIC == M_RUSSELL_RAO);
constexpr bool NEEDS_COUNT = METRIC == M_DICE || METRIC == M_JACCARD || METRIC == M_RUSSELL_RAO ||
                             METRIC == M_CANBERRA || METRIC == M_HAMMING || METRIC == M_KL ||
                             METRIC == M_CHEBYSHEV;
constexpr bool MAX_MONOID = METRIC == M_CHEBYSHEV;
constexpr bool SCALED = METRIC == M_JS || METRIC == M_KL;

#define LN_2 0.693147180559945309417232121458176568
#define REFINE_RELATIVE 1e-9

__device__ __forceinline__ double gamma_n(u32 n) { return ((double)n + 4.0) * 2.220446049250313e-16; }

// Rust's f64::clamp: NaN stays NaN.
__device__ __forceinline__ double clamp02(double x) { return x < 0.0 ? 0.0 : (x > 2.0 ? 2.0 : x); }
// Rust's f64::max(x, 0.0): NaN becomes 0.
__device__ __forceinline__ double max0(double x) { return fmax(x, 0.0); }

__device__ __forceinline__ double mpow(double x) {
  if (MINK_P == 2.0) return x * x;
  if (MINK_P == 1.0) return x;
  return pow(x, MINK_P);
}

// ⊗ at a column where both rows are non-zero (Kernel::product).
__device__ __forceinline__ double product(float af, float bf, double qs, double rs) {
  double a = (double)af, b = (double)bf;
  switch (METRIC) {
    case M_HELLINGER: return sqrt(a * b);
    case M_MANHATTAN: return fabs(a) + fabs(b) - fabs(a - b);
    case M_MINKOWSKI: return mpow(fabs(a)) + mpow(fabs(b)) - mpow(fabs(a - b));
    case M_CANBERRA: return fabs(a - b) / (fabs(a) + fabs(b));
    case M_HAMMING: return a == b ? 1.0 : 0.0;
    case M_CHEBYSHEV: return fabs(a - b);
    case M_JS: {
      double p = a * qs, q = b * rs;
      return p * log1p(q / p) + q * log1p(p / q);
    }
    case M_KL: {
      double p = a * qs, q = b * rs;
      return p * log(p / q);
    }
    default: return a * b;
  }
}

struct Query {
  const u32* cols;
  const float* vals;
  u32 nnz;
  Agg agg;
  const u32* by_mag;  // Chebyshev: positions by decreasing magnitude
};

struct IndexRows {
  const u64* ptr;
  const u32* cols;
  const float* vals;
  const Agg* aggs;
  const u32* by_mag;
  u32 n_cols;
};

__device__ bool contains(const u32* cols, u32 n, u32 c) {
  u32 lo = 0, hi = n;
  while (lo < hi) {
    u32 mid = (lo + hi) >> 1;
    u32 v = cols[mid];
    if (v == c) return true;
    if (v < c) lo = mid + 1; else hi = mid;
  }
  return false;
}

__device__ __forceinline__ bool unnormalisable(const Agg& x, const Agg& y) {
  return isinf(x.a) || isinf(y.a);
}

// Kernel::finish: the key from the intersection's accumulator and count, and its error bound.
__device__ void finish(double acc, u32 c, const Query& q, const IndexRows& ix, u32 r,
                       const Agg& ra, double& key, double& err, u32 top_mask = 0) {
  const Agg& qa = q.agg;
  err = 0.0;
  switch (METRIC) {
    case M_DOT: key = -acc; return;
    case M_COSINE:
      if (qa.a == 0.0 || ra.a == 0.0) { key = NAN; return; }
      key = clamp02(1.0 - acc * qa.b * ra.b);
      err = 2.0 * gamma_n(qa.nnz + ra.nnz);
      return;
    case M_CORRELATION: {
      if (qa.b == 0.0 || ra.b == 0.0) { key = NAN; return; }
      double n = (double)ix.n_cols;
      double centre = n * qa.a * ra.a;
      double denom = qa.b * ra.b;
      key = clamp02(1.0 - (acc - centre) / denom);
      err = 2.0 * gamma_n(qa.nnz + ra.nnz) * (qa.c * ra.c + fabs(centre)) / denom;
      return;
    }
    case M_EUCLIDEAN:
      key = max0(qa.a + ra.a - 2.0 * acc);
      err = gamma_n(qa.nnz + ra.nnz) * (qa.a + ra.a + 2.0 * fabs(acc));
      return;
    case M_HELLINGER:
      key = max0(0.5 * (qa.a + ra.a) - acc);
      err = 2.0 * gamma_n(qa.nnz + ra.nnz) * (qa.a + ra.a);
      return;
    case M_DICE: {
      double total = (double)qa.nnz + (double)ra.nnz;
      key = (total - 2.0 * (double)c) / total;
      return;
    }
    case M_RUSSELL_RAO: {
      double n = (double)ix.n_cols;
      key = (n - (double)c) / n;
      return;
    }
    case M_JACCARD: {
      double nx = qa.nnz, ny = ra.nnz, cc = c;
      double uni = nx + ny - cc;
      key = uni == 0.0 ? 0.0 : (uni - cc) / uni;
      return;
    }
    case M_MANHATTAN:
    case M_MINKOWSKI: {
      double s = qa.a + ra.a;
      key = max0(s - acc);
      err = (METRIC == M_MANHATTAN ? 2.0 : 4.0) * gamma_n(qa.nnz + ra.nnz) * s;
      return;
    }
    case M_CANBERRA:
      key = (double)(qa.nnz - c) + (double)(ra.nnz - c) + acc;
      return;
    case M_HAMMING:
      key = ((double)qa.nnz + (double)ra.nnz - (double)c - acc) / (double)ix.n_cols;
      return;
    case M_JS:
      if (unnormalisable(qa, ra)) { key = NAN; return; }
      key = max0(0.5 * (2.0 * LN_2 - acc));
      err = 4.0 * gamma_n(qa.nnz + ra.nnz);
      return;
    case M_KL:
      if (unnormalisable(qa, ra)) { key = NAN; return; }
      if (qa.nnz > c) { key = INFINITY; return; }
      key = max0(acc);
      return;
    case M_CHEBYSHEV: {
      if (c == 0) { key = fmax(qa.a, ra.a); return; }
      double m = acc;
      u64 rb = ix.ptr[r];
      u32 rn = ra.nnz;
      if (c < qa.nnz) {
        for (u32 i = 0; i < qa.nnz; i++) {
          u32 p = q.by_mag[i];
          double a = fabs((double)q.vals[p]);
          if (a <= m) break;
          // Whether y has the query's i-th largest column: marked during the intersection
          // pass for the 32 largest, a binary search in y beyond.
          const bool in_y = i < 31 ? (top_mask >> i) & 1 : contains(ix.cols + rb, rn, q.cols[p]);
          if (!in_y) { m = a; break; }
        }
      }
      if (c < rn) {
        // The row's largest is its aggregate, and whether the query has its column was marked
        // during the intersection pass: the first step needs no loads.
        if (ra.a > m) {
          if (!(top_mask >> 31)) {
            m = ra.a;
          } else {
            for (u32 i = 1; i < rn; i++) {
              u32 p = ix.by_mag[rb + i];
              double b = fabs((double)ix.vals[rb + p]);
              if (b <= m) break;
              if (!contains(q.cols, q.nnz, ix.cols[rb + p])) { m = b; break; }
            }
          }
        }
      }
      key = m;
      return;
    }
  }
}

// Kernel::exact: the key by the union of non-zero columns (the NAMM, paper Eq. 3), for the
// rare pairs whose expansion cancels (near-duplicate rows).
__device__ double exact(const Query& q, const IndexRows& ix, u32 r) {
  const Agg& qa = q.agg;
  const Agg& ra = ix.aggs[r];
  u64 rb = ix.ptr[r];
  const u32* yc = ix.cols + rb;
  const float* yv = ix.vals + rb;
  u32 nx = q.nnz, ny = ra.nnz;
  if ((METRIC == M_JS || METRIC == M_KL) && unnormalisable(qa, ra)) return NAN;
  double s = 0.0;
  u32 i = 0, j = 0, uni = 0;
  // Per-metric constants.
  double sx = 0, sy = 0, mx = 0, my = 0;
  if (METRIC == M_COSINE) { sx = qa.b; sy = ra.b; }
  if (METRIC == M_CORRELATION) { mx = qa.a; sx = 1.0 / qa.b; my = ra.a; sy = 1.0 / ra.b; }
  if (METRIC == M_JS || METRIC == M_KL) { sx = qa.a; sy = ra.a; }
  while (i < nx || j < ny) {
    double a = 0.0, b = 0.0;
    if (j >= ny || (i < nx && q.cols[i] < yc[j])) { a = q.vals[i]; i++; }
    else if (i >= nx || yc[j] < q.cols[i]) { b = yv[j]; j++; }
    else { a = q.vals[i]; b = yv[j]; i++; j++; }
    uni++;
    switch (METRIC) {
      case M_DOT: s += a * b; break;
      case M_COSINE: { double t = a * sx - b * sy; s += t * t; break; }
      case M_CORRELATION: { double t = (a - mx) * sx - (b - my) * sy; s += t * t; break; }
      case M_EUCLIDEAN: s += (a - b) * (a - b); break;
      case M_HELLINGER: { double t = sqrt(a) - sqrt(b); s += t * t; break; }
      case M_MANHATTAN: s += fabs(a - b); break;
      case M_MINKOWSKI: s += mpow(fabs(a - b)); break;
      case M_CANBERRA: s += fabs(a - b) / (fabs(a) + fabs(b)); break;
      case M_HAMMING: s += a != b ? 1.0 : 0.0; break;
      case M_CHEBYSHEV: s = fmax(s, fabs(a - b)); break;
      case M_JS: {
        double p = a * sx, qq = b * sy;
        if (p == 0.0) s += qq * LN_2;
        else if (qq == 0.0) s += p * LN_2;
        else { double t = p + qq; s += p * log1p((p - qq) / t) + qq * log1p((qq - p) / t); }
        break;
      }
      case M_KL:
        if (a > 0.0) s += b > 0.0 ? a * sx * log((a * sx) / (b * sy)) : INFINITY;
        break;
      default: if (a != 0.0 && b != 0.0) s += 1.0; break;  // counting kernels: |x ∩ y|
    }
  }
  switch (METRIC) {
    case M_DOT: return -s;
    case M_COSINE: return clamp02(0.5 * s);
    case M_CORRELATION: {
      double rest = (double)(ix.n_cols - uni);
      double t = -mx * sx + my * sy;
      s += rest * t * t;
      return clamp02(0.5 * s);
    }
    case M_HELLINGER: return 0.5 * s;
    case M_HAMMING: return s / (double)ix.n_cols;
    case M_JS: return max0(0.5 * s);
    case M_KL: return max0(s);
    case M_DICE: case M_JACCARD: case M_RUSSELL_RAO: {
      double key, err;
      finish(0.0, (u32)s, q, ix, r, ra, key, err);
      return key;
    }
    default: return s;
  }
}

// Kernel::distance (dense rows only: k-NN returns keys, converted on the host).
__device__ __forceinline__ float distance(double key) {
  switch (METRIC) {
    case M_DOT: return (float)(-key);
    case M_EUCLIDEAN: case M_HELLINGER: case M_JS: return (float)sqrt(key);
    case M_MINKOWSKI:
      if (MINK_P == 1.0) return (float)key;
      if (MINK_P == 2.0) return (float)sqrt(key);
      return (float)pow(key, 1.0 / MINK_P);
    default: return (float)key;
  }
}

// topk.rs `ordered`: f64 → u64 with the same order; -0 = +0; every NaN one value after +inf.
__device__ __forceinline__ u64 ordered(double x) {
  if (isnan(x)) x = __longlong_as_double(0x7ff8000000000000ull);
  x = x + 0.0;
  u64 bits = (u64)__double_as_longlong(x);
  return (bits >> 63) ? ~bits : (bits | (1ull << 63));
}

__device__ __forceinline__ double from_ordered(u64 u) {
  return (u >> 63) ? __longlong_as_double((long long)(u & ~(1ull << 63)))
                   : __longlong_as_double((long long)~u);
}

__device__ __forceinline__ bool less(u64 ka, u32 ra, u64 kb, u32 rb) {
  return ka < kb || (ka == kb && ra < rb);
}

extern "C" __global__ void __launch_bounds__(WARPS * 32) knn_tiles(
    // queries of this batch
    const u64* __restrict__ q_ptr, const u32* __restrict__ q_cols, const float* __restrict__ q_vals,
    const Agg* __restrict__ q_aggs, const u32* __restrict__ q_by_mag,
    const u32* __restrict__ q_top_bit,  // Chebyshev: per query entry, 1 << its magnitude rank (< 32) or 0
    // work items, largest first: a query and a range of tiles (a long query is split into
    // several items over disjoint tile ranges, each with its own top-k list; the host merges)
    const u32* __restrict__ item_query, const u32* __restrict__ item_tile_begin,
    const u32* __restrict__ item_tile_end, u32 n_items,
    u64 self_first,  // index row of query 0 when a query is not its own neighbour, else ~0
    // the index
    const u64* __restrict__ ix_ptr, const u32* __restrict__ ix_cols, const float* __restrict__ ix_vals,
    const Agg* __restrict__ ix_aggs, const u32* __restrict__ ix_by_mag, u32 n_index, u32 n_cols,
    // the index by tiles of TILE rows: per tile, column offsets (relative to the tile's base)
    const u32* __restrict__ tile_colptr, const u64* __restrict__ tile_base,
    const u16* __restrict__ tile_rows, const float* __restrict__ tile_vals,
    // results: k (ordered key, row) per item, best first (DENSE: n_index distances per query)
    u32 k, u64* __restrict__ out_key, u32* __restrict__ out_row, float* __restrict__ out_dist) {
  extern __shared__ double smem[];
  const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const u32 slot = blockIdx.x * WARPS + warp;
  if (slot >= n_items) return;  // whole warps only: no block-wide barrier below
  // Largest items first, and long queries cut into several items, so that a row of 50,000
  // non-zeros next to rows of 50 (the Zipf case, the paper's §3.3.2) does not finish last.
  const u32 qi = item_query[slot];
  const u32 tile_begin = item_tile_begin[slot], tile_end = item_tile_end[slot];
  double* acc = smem + (size_t)warp * (TILE + 32);
  double* stage = acc + TILE;
  u32* cnt = (u32*)(smem + (size_t)WARPS * (TILE + 32)) + (size_t)warp * TILE;
  // Chebyshev: per row, which of the query's 31 largest-magnitude columns it holds (bits 0-30)
  // and whether the query holds the row's own largest (bit 31).
  u32* top = (u32*)(smem + (size_t)WARPS * (TILE + 32)) + (size_t)WARPS * TILE + (size_t)warp * (TILE + 32);
  u32* stage_bits = top + TILE;

  Query q;
  u64 qb = q_ptr[qi];
  q.cols = q_cols + qb;
  q.vals = q_vals + qb;
  q.nnz = (u32)(q_ptr[qi + 1] - qb);
  q.agg = q_aggs[qi];
  q.by_mag = q_by_mag ? q_by_mag + qb : nullptr;
  IndexRows ix{ix_ptr, ix_cols, ix_vals, ix_aggs, ix_by_mag, n_cols};
  const u64 skip = self_first == ~0ull ? ~0ull : self_first + qi;
  const double qs = q.agg.a;

  // The top-k list: entry s*32 + lane in slot s, ascending by (key, row).
  u64 tk[KSLOTS];
  u32 tr[KSLOTS];
#pragma unroll
  for (int s = 0; s < KSLOTS; s++) { tk[s] = ~0ull; tr[s] = ~0u; }
  const u32 kl = (k - 1) & 31, ks = (k - 1) >> 5;
  double threshold = INFINITY;
  u64 kth_k = ~0ull;  // the k-th entry, the same in every lane
  u32 kth_r = ~0u;

  for (u32 i = lane; i < TILE; i += 32) {
    acc[i] = 0.0;
    if (NEEDS_COUNT) cnt[i] = 0;
    if (MAX_MONOID) top[i] = 0;
  }
  __syncwarp();

  for (u32 t = tile_begin; t < tile_end; t++) {
    const u32 row0 = t * TILE;
    const u32 rows = min((u32)TILE, n_index - row0);
    const u32* cp = tile_colptr + (size_t)t * (n_cols + 1);
    const u64 base = tile_base[t];
    // Pass 1: ⊗ over the intersection, folded per row of the tile in column order.
    for (u32 j0 = 0; j0 < q.nnz; j0 += 32) {
      const u32 j = j0 + lane;
      const bool valid = j < q.nnz;
      const u32 col = valid ? q.cols[j] : 0;
      const float a = valid ? q.vals[j] : 0.0f;
      const u32 bit = (MAX_MONOID && valid) ? q_top_bit[qb + j] : 0;
      const u32 s = valid ? cp[col] : 0;
      const u32 len = valid ? cp[col + 1] - s : 0;
      u32 incl = len;
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        u32 v = __shfl_up_sync(FULL, incl, d);
        if (lane >= d) incl += v;
      }
      const u32 excl = incl - len;
      const u32 total = __shfl_sync(FULL, incl, 31);
      for (u32 p0 = 0; p0 < total; p0 += 32) {
        const u32 pos = p0 + lane;
        const bool has = pos < total;
        // The segment holding `pos`: the last lane whose exclusive prefix is <= pos.
        u32 seg = 0;
#pragma unroll
        for (int step = 16; step >= 1; step >>= 1) {
          u32 e = __shfl_sync(FULL, excl, seg + step);
          if (e <= pos) seg += step;
        }
        const u32 s_seg = __shfl_sync(FULL, s, seg);
        const u32 e_seg = __shfl_sync(FULL, excl, seg);
        const float a_seg = __shfl_sync(FULL, a, seg);
        const u32 bit_seg = MAX_MONOID ? __shfl_sync(FULL, bit, seg) : 0;
        u32 row = 0x10000u + lane;  // distinct from every tile row for idle lanes
        u32 largest = 0;
        double v = 0.0;
        if (has) {
          const u64 off = base + s_seg + (pos - e_seg);
          row = tile_rows[off];
          if (MAX_MONOID) {
            largest = row >> 15;
            row &= 0x7fff;
          }
          if (NEEDS_ACC) v = product(a_seg, tile_vals[off], qs, SCALED ? ix_aggs[row0 + row].a : 0.0);
        }
        const u32 group = __match_any_sync(FULL, row);
        if (NEEDS_ACC) stage[lane] = v;
        if (MAX_MONOID) stage_bits[lane] = bit_seg | (largest << 31);
        __syncwarp();
        if (has && lane == (u32)(__ffs(group) - 1)) {
          if (NEEDS_ACC) {
            double x = acc[row];
            u32 m = group;
            u32 bits = 0;
            while (m) {
              const u32 l = __ffs(m) - 1;
              m &= m - 1;
              x = MAX_MONOID ? fmax(x, stage[l]) : x + stage[l];
              if (MAX_MONOID) bits |= stage_bits[l];
            }
            acc[row] = x;
            if (MAX_MONOID) top[row] |= bits;
          }
          if (NEEDS_COUNT) cnt[row] += __popc(group);
        }
        __syncwarp();
      }
    }
    // Pass 2: the expansion for every row of the tile, then the top-k list (or the row out).
    for (u32 r0 = 0; r0 < rows; r0 += 32) {
      const u32 rl = r0 + lane;
      const bool here = rl < rows;
      const u32 r = row0 + rl;
      double key = NAN, err = 0.0;
      bool offer = false;
      if (here) {
        const double x = acc[rl];
        const u32 c = NEEDS_COUNT ? cnt[rl] : 0;
        const u32 mask = MAX_MONOID ? top[rl] : 0;
        acc[rl] = 0.0;
        if (NEEDS_COUNT) cnt[rl] = 0;
        if (MAX_MONOID) top[rl] = 0;
        if ((u64)r != skip) {
          const Agg ra = ix_aggs[r];
          finish(x, c, q, ix, r, ra, key, err, mask);
          // As cpu.rs: a row within its error bound of the threshold is refined by the
          // union form when the bound is too loose, then offered to the list, which keeps it
          // only if it beats the k-th entry (tested here, so rows that cannot enter — KL's
          // infinite keys, say — cost no warp-wide insertion).
          if (isnan(key) || key - err <= threshold) {
            if (err > REFINE_RELATIVE * fabs(key)) key = exact(q, ix, r);
            offer = less(ordered(key), r, kth_k, kth_r);
          }
        }
      }
      if (DENSE) {
        if (here) out_dist[(size_t)qi * n_index + r] = distance(key);
        continue;
      }
      u32 want = __ballot_sync(FULL, offer);
      const u64 mine = ordered(key);
      while (want) {
        const u32 l = __ffs(want) - 1;
        want &= want - 1;
        const u64 ck = __shfl_sync(FULL, mine, l);
        const u32 cr = __shfl_sync(FULL, r, l);
        if (!less(ck, cr, kth_k, kth_r)) continue;  // an earlier insertion raised the bar
        // Position: the first entry greater than the candidate.
        u32 pos = 32u * KSLOTS;
#pragma unroll
        for (int s = KSLOTS - 1; s >= 0; s--) {
          const u32 gt = __ballot_sync(FULL, less(ck, cr, tk[s], tr[s]));
          if (gt) pos = 32u * s + (__ffs(gt) - 1);
        }
        u64 carry_k = 0;
        u32 carry_r = 0;
#pragma unroll
        for (int s = 0; s < KSLOTS; s++) {
          const u64 up_k = __shfl_up_sync(FULL, tk[s], 1);
          const u32 up_r = __shfl_up_sync(FULL, tr[s], 1);
          const u64 last_k = __shfl_sync(FULL, tk[s], 31);
          const u32 last_r = __shfl_sync(FULL, tr[s], 31);
          const u32 idx = 32u * s + lane;
          const u64 prev_k = lane == 0 ? carry_k : up_k;
          const u32 prev_r = lane == 0 ? carry_r : up_r;
          if (idx == pos) { tk[s] = ck; tr[s] = cr; }
          else if (idx > pos) { tk[s] = prev_k; tr[s] = prev_r; }
          carry_k = last_k;
          carry_r = last_r;
        }
        // The new k-th entry; a NaN key (or an unfilled list) admits everything, as topk.rs.
        kth_k = __shfl_sync(FULL, tk[0], kl);
        kth_r = __shfl_sync(FULL, tr[0], kl);
#pragma unroll
        for (int s = 1; s < KSLOTS; s++) {
          const u64 a2 = __shfl_sync(FULL, tk[s], kl);
          const u32 b2 = __shfl_sync(FULL, tr[s], kl);
          if ((u32)s == ks) { kth_k = a2; kth_r = b2; }
        }
        const u64 nk = kth_k;
        const double w = from_ordered(nk);
        threshold = isnan(w) ? INFINITY : w;
      }
    }
    __syncwarp();
  }
  if (!DENSE) {
#pragma unroll
    for (int s = 0; s < KSLOTS; s++) {
      const u32 idx = 32u * s + lane;
      if (idx < k) {
        out_key[(size_t)slot * k + idx] = tk[s];
        out_row[(size_t)slot * k + idx] = tr[s];
      }
    }
  }
}
