// Mean-for-Mode estimation on the GPU (Tristan, Tassarotti & Steele, ICML 2015), compiled at run
// time by NVRTC (samplers/mfm/gpu.rs). Its state is not the assignments, so it does not share the
// word-major PDOW layout of kernels.cu: like the paper's Algorithm 1 ("for each document, we
// launch a separate thread that samples topics for every word in that document"), documents are
// taken whole, here by one warp each, a lane per token (the tokens of a document are independent
// given the frozen counts, Fig. 2).
//
// Layout (resident; a streamed run holds one chunk's tokens and rows at a time):
//   words[t]                 word of token t, corpus order (4 B a token: the only per-token array)
//   doc_off[d]               first token of document d (D + 1 entries)
//   row_off[d], row_len[d]   document d's row: entries row_off[d] .. row_off[d] + row_len[d] of
//                            rows, topic << 16 | register, topics increasing; room for
//                            min(len_d, K) entries, so never more than a token's 4 B
//   B[v * K + k]             word v's register of topic k (the last iteration's), REG_T wide
//   Bn[v * K + k]            the sweep's exact new counts (u32, atomics), zero between iterations
//   totals[k]                n_k, the sum of the words' estimates (integers: exact, order-free)
//   levels[x]                the count register x stands for (approximate widths)
//
// Every number a draw or a rounding uses is keyed as on the CPU (topos-sampling's CounterRng:
// Philox4x32-10 on (index, iteration, stream)), and every sum that decides a draw is taken in an
// order fixed by the data, so the model depends on the seed only: not on the grid, the number of
// warps or the order blocks run in.

typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;
typedef unsigned long long u64;

#define FULL 0xffffffffu
#define STREAM_INIT 1u
#define STREAM_TRAIN 2u
#define STREAM_COUNTERS 6u
// Counter keys of documents' cells are set apart from words' by this bit (cpu.rs DOC_CELL).
#define DOC_CELL (1ull << 63)

// Register width: 1 byte for the approximate widths (approx4 keeps its 16 levels in a byte too),
// 4 for exact counts. APPROX: whether registers index `levels`.
#ifndef REG_BYTES
#define REG_BYTES 4
#endif
#if REG_BYTES == 1
typedef u8 REG_T;
#else
typedef u32 REG_T;
#endif
#ifndef APPROX
#define APPROX 0
#endif
// Distinct topics of a document ranked in shared memory (its new row written in topic order
// without a K-long scan); a document with more scans its K-entry histogram.
#ifndef TOUCHED_CAP
#define TOUCHED_CAP 512
#endif
#define WARPS 8

__device__ __forceinline__ uint4 philox(uint4 c, u32 k0, u32 k1) {
#pragma unroll
    for (int r = 0; r < 10; r++) {
        if (r > 0) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }
        u32 hi0 = __umulhi(0xD2511F53u, c.x), lo0 = 0xD2511F53u * c.x;
        u32 hi1 = __umulhi(0xCD9E8D57u, c.z), lo1 = 0xCD9E8D57u * c.z;
        c = make_uint4(hi1 ^ c.y ^ k0, lo1, hi0 ^ c.w ^ k1, lo0);
    }
    return c;
}

// CounterRng::new(seed, stream, iteration, index).next_f64(): 27 + 26 bits of the first block.
__device__ __forceinline__ double unit_f64(u64 index, u32 iteration, u32 stream, u32 seed_lo, u32 seed_hi) {
    uint4 b = philox(make_uint4((u32)index, (u32)(index >> 32), iteration, stream << 24), seed_lo, seed_hi);
    u64 hi = (u64)(b.x >> 5), lo = (u64)(b.y >> 6);
    return (double)((hi << 26) | lo) * (1.0 / 9007199254740992.0);
}

// CounterRng::new(seed, Init, 0, index).below(K): the uniform start, as every engine draws it.
__device__ __forceinline__ u32 initial_topic(u64 index, u32 K, u32 seed_lo, u32 seed_hi) {
    u32 threshold = (0u - K) % K;
    for (u32 block = 0;; block++) {
        uint4 b = philox(make_uint4((u32)index, (u32)(index >> 32), 0u, (STREAM_INIT << 24) | block), seed_lo, seed_hi);
        u32 w[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
        for (int j = 0; j < 4; j++) {
            u64 m = (u64)w[j] * (u64)K;
            if ((u32)m >= threshold) return (u32)(m >> 32);
        }
    }
}

// The count a register stands for.
__device__ __forceinline__ u64 estimate(u32 reg, const u64* __restrict__ levels) {
#if APPROX
    return levels[reg];
#else
    return reg;
#endif
}

// CounterWidth::round: the register keeping count n, one of the two levels around it, up with
// probability (n - L(x)) / (L(x + 1) - L(x)) for the uniform number keyed by (iteration, cell).
__device__ u32 round_count(u64 n, u64 cell, u32 iteration, const u64* __restrict__ levels, u32 top,
                           u32 seed_lo, u32 seed_hi) {
#if APPROX
    if (n >= levels[top]) return top;
    u32 lo = 0, hi = top;  // levels[lo] <= n < levels[hi]
    while (hi - lo > 1) {
        u32 mid = (lo + hi) >> 1;
        if (levels[mid] <= n) lo = mid; else hi = mid;
    }
    u64 a = levels[lo], b = levels[lo + 1];
    double up = (double)(n - a) / (double)(b - a);
    double u = unit_f64(cell, iteration, STREAM_COUNTERS, seed_lo, seed_hi);
    return u < up ? lo + 1 : lo;
#else
    return n > 0xffffffffull ? 0xffffffffu : (u32)n;
#endif
}

// inv[k] = 1 / (n_k + V beta) and the inclusive prefix sums of alpha beta inv[k] (the bucket S is
// the last), in topic order by one thread: K additions, the same bits every time.
extern "C" __global__ void mfm_normalizers(const u64* __restrict__ totals, u32 K, double v_beta, double alpha,
                                           double beta, double* __restrict__ inv, double* __restrict__ s_cum) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    double s = 0.0;
    for (u32 k = 0; k < K; k++) {
        double i = 1.0 / ((double)totals[k] + v_beta);
        inv[k] = i;
        s += alpha * beta * i;
        s_cum[k] = s;
    }
}

// P_v = alpha sum_k B_vk inv[k], the word's share of the smoothing, one block per word in a fixed
// tree order.
#define PRIOR_THREADS 256
extern "C" __global__ void __launch_bounds__(PRIOR_THREADS) mfm_word_prior(
    const REG_T* __restrict__ B, const u64* __restrict__ levels, const double* __restrict__ inv, u32 V, u32 K,
    double alpha, double* __restrict__ prior) {
    __shared__ double part[PRIOR_THREADS];
    for (u32 v = blockIdx.x; v < V; v += gridDim.x) {
        const REG_T* row = B + (u64)v * K;
        double s = 0.0;
        for (u32 k = threadIdx.x; k < K; k += PRIOR_THREADS) {
            u32 r = row[k];
            if (r) s += (double)estimate(r, levels) * inv[k];
        }
        part[threadIdx.x] = s;
        __syncthreads();
        for (u32 o = PRIOR_THREADS / 2; o > 0; o >>= 1) {
            if (threadIdx.x < o) part[threadIdx.x] += part[threadIdx.x + o];
            __syncthreads();
        }
        if (threadIdx.x == 0) prior[v] = alpha * part[0];
        __syncthreads();
    }
}

// Entry i of a document row: its topic k, its register and the factor tpd[m][k] inv[k], from the
// stage or from the row itself (the same product either way).
#ifndef STAGE
#define STAGE 256
#endif
#define LEVELS_MAX 256
__device__ __forceinline__ void row_factor(bool staged, const u16* stage_t, const u16* stage_r, const double* stage_a,
                                           const u32* __restrict__ rows, u64 roff, u32 i,
                                           const double* __restrict__ inv, const u64* lv, u32& k, u32& reg,
                                           double& a) {
    if (staged) {
        k = stage_t[i];
        reg = stage_r[i];
        a = stage_a[i];
    } else {
        u32 e = rows[roff + i];
        k = e >> 16;
        reg = e & 0xffffu;
        a = (double)estimate(reg, lv) * inv[k];
    }
}

// What the draw does with the token's own earlier draw (mod.rs OwnDraw codes).
#define OWN_KEPT 0u
#define OWN_DOCUMENT 1u
#define OWN_REMOVED 2u
#define OWN_BALANCED 3u
// OWN_BALANCED: row scalings of the Sinkhorn balancing (cpu.rs BALANCE_ROUNDS), its stopping
// change, and the documents it balances (cpu.rs balances: at most BALANCE_MAX_TOKENS tokens,
// so their rows are staged, and a mean count below BALANCE_MEAN_COUNT).
#ifndef BALANCE_ROUNDS
#define BALANCE_ROUNDS 8
#endif
#ifndef BALANCE_SETTLED
#define BALANCE_SETTLED 0.01
#endif
#ifndef BALANCE_MEAN_COUNT
#define BALANCE_MEAN_COUNT 2.5
#endif
#ifndef BALANCE_MAX_TOKENS
#define BALANCE_MAX_TOKENS 128
#endif
#define BALANCE_SLOTS ((BALANCE_MAX_TOKENS + 31) / 32)
#if BALANCE_MAX_TOKENS > STAGE
#error "a balanced document's row must fit the stage"
#endif

// OWN_REMOVED: Delta_k = w_k(with) - w_k(without) for a topic the document holds A times and the
// word b times (both >= 1), inv = 1 / (n_k + V beta), 1 / (n_k - 1 + V beta) = inv / (1 - inv).
__device__ __forceinline__ double own_delta(double A, double b, double inv, double alpha, double beta) {
    const double inv1 = inv / (1.0 - inv);
    return (A + alpha) * (b + beta) * inv - (A - 1.0 + alpha) * (b - 1.0 + beta) * inv1;
}

#define MODE_START 0u
#define MODE_DRAW 1u
#define MODE_LOGLIK 2u
// Log-likelihood terms are rounded to 2^-24 and summed as integers: order-free.
#define LL_SCALE 16777216.0

// One sweep of Fig. 2 over documents doc_begin .. doc_end (a chunk: the model does not depend on
// the chunks), a warp per document (grid-stride), a lane per token. token_base and doc_base: the
// first global token and document of this worker's share (several GPUs), for the keys.
// buf_token0, buf_row0: the first token and row entry the buffers `words` and `rows` hold (a
// streamed run uploads a chunk's tokens and rows before its launch; resident: 0 and 0).
//   MODE_START: each token's topic uniform (the start, iteration 0's keys), counted;
//   MODE_DRAW: each token drawn from p(z = k) ∝ (tpd[m][k] + alpha)(wpt[k][v] + beta)/(wt[k] + V beta)
//     with the last iteration's counts (the document's row as it was when the warp began it), and
//     counted: Bn by atomics (exact), the document's new row in the warp's K-entry histogram,
//     rounded to registers and written over the old row once every token of it is drawn;
//   MODE_LOGLIK: nothing drawn or written: each token's log of that mass over n_d + K alpha,
//     the training log-likelihood of the current counts (the CPU engine's formula).
// own (--own-draw, mod.rs OwnDraw):
//   OWN_DOCUMENT: the token's own earlier draw comes out of the document's counts in expectation,
//     tpd[m][k] -> tpd[m][k] - pi_k with pi_k = tpd[m][k] phi_kv / D_mv, so D_mv's terms c_k =
//     tpd[m][k] phi_kv become c_k (1 - phi_kv / D_mv): the first pass sums c_k and c_k phi_kv, the
//     walk corrects each term (the other buckets do not change);
//   OWN_REMOVED: the collapsed conditional's expectation over the earlier draw, w_k = (1 - pi_k)
//     w_k(with) + pi_k w_k(without), pi_k = A b inv / D'_mv over the topics both rows hold. P_v is
//     summed once a sweep, so those topics take their whole weight but S_k into the document's
//     bucket, D''_k = c_k + alpha b inv - pi_k Delta_k (cpu.rs draw_doc_side_removed), and the
//     word's bucket is walked without them: the first pass sums D'_mv, pi's numerators times
//     Delta_k and their alpha b inv.
// The draw splits the mass as SaberLDA splits ESCA's (cpu.rs draw_doc_side):
//   D_mv = sum over the document's non-zeros of tpd[m][k] (wpt[k][v] + beta) inv[k]
//   P_v  = alpha sum_k wpt[k][v] inv[k]   (mfm_word_prior)        S = alpha beta sum_k inv[k]
extern "C" __global__ void __launch_bounds__(WARPS * 32) mfm_sweep(
    u32 mode, const u32* __restrict__ words, const u64* __restrict__ doc_off, u64 doc_begin, u64 doc_end,
    u64 token_base, u64 doc_base, u64 buf_token0, u64 buf_row0,
    const u64* __restrict__ row_off, u32* __restrict__ row_len, u32* __restrict__ rows,
    const REG_T* __restrict__ B, u32* __restrict__ Bn, const u64* __restrict__ levels, u32 top,
    const double* __restrict__ inv, const double* __restrict__ s_cum, const double* __restrict__ prior,
    u32* __restrict__ hist, u32 K, double alpha, double beta, u32 seed_lo, u32 seed_hi, u32 iteration,
    u32 own_mode, unsigned long long* __restrict__ ll_sum) {
    __shared__ u16 touched_all[WARPS][TOUCHED_CAP];
    __shared__ u32 touched_n_all[WARPS];
    // A document row of at most STAGE entries is staged once, as each entry's topic and its
    // word-independent factor tpd[m][k] inv[k], for every token of the document to read.
    __shared__ u16 stage_t_all[WARPS][STAGE];
    __shared__ u16 stage_r_all[WARPS][STAGE];
    __shared__ double stage_a_all[WARPS][STAGE];
    // OWN_BALANCED: the staged row's balanced scalings c_i (cpu.rs Frozen::balance).
    __shared__ float stage_c_all[WARPS][BALANCE_MAX_TOKENS];
    // OWN_BALANCED: 1 / z_j of a tile of the document's tokens.
    __shared__ double bal_rz_all[WARPS][32];
    __shared__ u64 lv[LEVELS_MAX];
    for (u32 i = threadIdx.x; i <= top && i < LEVELS_MAX; i += blockDim.x) lv[i] = levels[i];
    __syncthreads();
    const u32 lane = threadIdx.x & 31, wib = threadIdx.x >> 5;
    u16* touched = touched_all[wib];
    u16* stage_t = stage_t_all[wib];
    u16* stage_r = stage_r_all[wib];
    double* stage_a = stage_a_all[wib];
    float* stage_c = stage_c_all[wib];
    u32* h = hist + (u64)(blockIdx.x * WARPS + wib) * K;
    const u64 warps = (u64)gridDim.x * WARPS;
    const double s_total = s_cum[K - 1];
    long long ll_acc = 0;
    for (u64 d = doc_begin + (u64)blockIdx.x * WARPS + wib; d < doc_end; d += warps) {
        const u64 first = doc_off[d], len = doc_off[d + 1] - first;
        // The document's tokens and row in the buffers, which hold the corpus from token
        // buf_token0 and row entry buf_row0 on (0 and 0 when it is resident).
        const u32* dwords = words + (first - buf_token0);
        const u64 roff = row_off[d] - buf_row0;
        const u32 r = mode == MODE_START ? 0u : row_len[d];
        if (lane == 0) touched_n_all[wib] = 0;
        const bool staged = r <= STAGE;
        if (staged) {
            for (u32 i = lane; i < r; i += 32) {
                u32 e = rows[roff + i], k = e >> 16;
                stage_t[i] = (u16)k;
                stage_r[i] = (u16)(e & 0xffffu);
                stage_a[i] = (double)estimate(e & 0xffffu, lv) * inv[k];
            }
        }
        // n_d, for the log-likelihood.
        double n_d = 0.0;
        if (mode == MODE_LOGLIK) {
            for (u32 i = lane; i < r; i += 32) n_d += (double)estimate(rows[roff + i] & 0xffffu, lv);
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) n_d += __shfl_xor_sync(FULL, n_d, o);
        }
        __syncwarp();
        // OWN_BALANCED (cpu.rs Frozen::balance): the document's factor c_i of the posterior over
        // its tokens' earlier draws, scaled until its matrix r_j c_i w_ji (w_ji = wpt[k_i][v_j]
        // inv[k_i]) has row sums 1 and column sums tpd[m][k_i]. Documents of at most
        // BALANCE_MAX_TOKENS tokens (so at most as many topics, staged) whose mean count is below
        // BALANCE_MEAN_COUNT (cpu.rs balances; the others keep c = tpd, OWN_REMOVED's pi). A
        // round takes the tokens 32 at a time: a lane per token finds its row sum z_j = sum_i c_i
        // w_ji and leaves 1 / z_j in shared memory; then a lane per entry i adds w_ji / z_j over
        // the tile's tokens in order, so every sum is taken in an order fixed by the document.
        const bool balanced = mode == MODE_DRAW && own_mode == OWN_BALANCED && staged &&
                              len <= BALANCE_MAX_TOKENS && (double)len < BALANCE_MEAN_COUNT * (double)r;
        if (balanced) {
            double* rz = bal_rz_all[wib];
            for (u32 i = lane; i < r; i += 32) stage_c[i] = (float)estimate(stage_r[i], lv);
            __syncwarp();
            for (u32 round = 1; round < BALANCE_ROUNDS; round++) {
                double col[BALANCE_SLOTS];
#pragma unroll
                for (u32 g = 0; g < BALANCE_SLOTS; g++) col[g] = 0.0;
                for (u64 j0 = 0; j0 < len; j0 += 32) {
                    const u64 j = j0 + lane;
                    double z = 0.0;
                    if (j < len) {
                        const REG_T* wr = B + (u64)dwords[j] * K;
                        for (u32 i = 0; i < r; i++) {
                            const u32 k = stage_t[i], wreg = wr[k];
                            if (wreg) z += (double)stage_c[i] * (double)estimate(wreg, lv) * inv[k];
                        }
                    }
                    rz[lane] = z > 0.0 ? 1.0 / z : 0.0;
                    __syncwarp();
                    const u32 tile = (u32)min((u64)32, len - j0);
#pragma unroll
                    for (u32 g = 0; g < BALANCE_SLOTS; g++) {
                        const u32 i = g * 32 + lane;
                        if (i < r) {
                            const u32 k = stage_t[i];
                            const double ik = inv[k];
                            double x = 0.0;
                            for (u32 t = 0; t < tile; t++) {
                                const u32 wreg = B[(u64)dwords[j0 + t] * K + k];
                                if (wreg) x += (double)estimate(wreg, lv) * ik * rz[t];
                            }
                            col[g] += x;
                        }
                    }
                    // Every lane is done with this tile's 1 / z and this round's c.
                    __syncwarp();
                }
                bool moved = false;
#pragma unroll
                for (u32 g = 0; g < BALANCE_SLOTS; g++) {
                    const u32 i = g * 32 + lane;
                    if (i < r && col[g] > 0.0) {
                        const float c = (float)((double)estimate(stage_r[i], lv) / col[g]);
                        moved |= fabs((double)c / (double)stage_c[i] - 1.0) >= BALANCE_SETTLED;
                        stage_c[i] = c;
                    }
                }
                __syncwarp();
                if (!__any_sync(FULL, moved)) break;
            }
        }
        for (u64 j = lane; j < len; j += 32) {
            // The token's place in this worker's arrays, and its global index (its keys).
            const u64 g = token_base + first + j;
            const u32 v = dwords[j];
            const REG_T* wrow = B + (u64)v * K;
            u32 t;
            if (mode == MODE_START) {
                t = initial_topic(g, K, seed_lo, seed_hi);
            } else {
                // own_sq: sum c_k phi_kv (OWN_DOCUMENT); dp: D'_mv, corr: sum A b inv Delta_k and
                // excl: sum alpha b inv over the topics both rows hold (OWN_REMOVED).
                double dm = 0.0, own_sq = 0.0, dp = 0.0, corr = 0.0, excl = 0.0;
                const u32 own = mode == MODE_DRAW ? (own_mode == OWN_BALANCED ? OWN_REMOVED : own_mode) : OWN_KEPT;
                for (u32 i = 0; i < r; i++) {
                    u32 k, reg;
                    double a;
                    row_factor(staged, stage_t, stage_r, stage_a, rows, roff, i, inv, lv, k, reg, a);
                    const u32 wreg = wrow[k];
                    const double b = (double)estimate(wreg, lv), f = b + beta;
                    dm += a * f;
                    if (own == OWN_DOCUMENT) {
                        own_sq += a * f * (f * inv[k]);
                    } else if (own == OWN_REMOVED && wreg) {
                        // pi's document factor: tpd[m][k] inv[k], or c_i inv[k] balanced.
                        const double pa = balanced ? (double)stage_c[i] * inv[k] : a;
                        dp += pa * b;
                        corr += pa * b * own_delta((double)estimate(reg, lv), b, inv[k], alpha, beta);
                        excl += alpha * b * inv[k];
                    }
                }
                const double p = prior[v];
                if (mode == MODE_LOGLIK) {
                    double x = (dm + p + s_total) / (n_d + (double)K * alpha);
                    ll_acc += __double2ll_rn(log(x) * LL_SCALE);
                    continue;
                }
                // The buckets: D_mv and P_v; D_mv - sum c_k phi_kv / D_mv (OWN_DOCUMENT); sum D''_k and
                // P_v without the document's topics (OWN_REMOVED).
                double own_scale = 0.0, dm_draw = dm, p_draw = p;
                if (own == OWN_DOCUMENT) {
                    own_scale = dm > 0.0 ? 1.0 / dm : 0.0;
                    dm_draw = fmax(dm - own_sq * own_scale, 0.0);
                } else if (own == OWN_REMOVED) {
                    own_scale = dp > 0.0 ? 1.0 / dp : 0.0;
                    dm_draw = fmax(dm + excl - corr * own_scale, 0.0);
                    p_draw = fmax(p - excl, 0.0);
                }
                double x = unit_f64(g, iteration, STREAM_TRAIN, seed_lo, seed_hi) * (dm_draw + p_draw + s_total);
                if (x < dm_draw) {
                    // The document's bucket, walked again in the same order.
                    double acc = 0.0;
                    t = r > 0 ? (rows[roff + r - 1] >> 16) : 0u;
                    for (u32 i = 0; i < r; i++) {
                        u32 k, reg;
                        double a;
                        row_factor(staged, stage_t, stage_r, stage_a, rows, roff, i, inv, lv, k, reg, a);
                        const u32 wreg = wrow[k];
                        const double b = (double)estimate(wreg, lv), f = b + beta;
                        const double c = a * f;
                        if (own == OWN_DOCUMENT) {
                            acc += fmax(c * (1.0 - f * inv[k] * own_scale), 0.0);
                        } else if (own == OWN_REMOVED && wreg) {
                            const double pa = balanced ? (double)stage_c[i] * inv[k] : a;
                            const double d2 = c + alpha * b * inv[k] -
                                pa * b * own_scale * own_delta((double)estimate(reg, lv), b, inv[k], alpha, beta);
                            acc += fmax(d2, 0.0);
                        } else {
                            acc += c;
                        }
                        if (acc > x) { t = k; break; }
                    }
                } else if (x < dm_draw + p_draw) {
                    // The word's share of the smoothing: its non-zero topics in order (OWN_REMOVED:
                    // those its document does not hold, found by walking the document's row, which
                    // is in topic order, alongside). P_v was summed in another order; a draw past
                    // this sum takes the last topic it could.
                    x -= dm_draw;
                    double acc = 0.0;
                    t = K;
                    u32 last = 0, at = 0;
                    for (u32 k = 0; k < K; k++) {
                        u32 reg = wrow[k];
                        if (!reg) continue;
                        if (own == OWN_REMOVED) {
                            u32 dk = K;
                            while (at < r) {
                                dk = staged ? (u32)stage_t[at] : (rows[roff + at] >> 16);
                                if (dk >= k) break;
                                at++;
                            }
                            if (at < r && dk == k) continue;
                        }
                        last = k;
                        acc += alpha * (double)estimate(reg, lv) * inv[k];
                        if (acc > x) { t = k; break; }
                    }
                    if (t == K) t = last;
                } else {
                    // S: the first k whose prefix sum passes x.
                    x -= dm_draw + p_draw;
                    u32 lo = 0, hi = K - 1;
                    while (lo < hi) {
                        u32 mid = (lo + hi) >> 1;
                        if (s_cum[mid] > x) hi = mid; else lo = mid + 1;
                    }
                    t = lo;
                }
            }
            atomicAdd(&Bn[(u64)v * K + t], 1u);
            if (atomicAdd(&h[t], 1u) == 0u) {
                u32 at = atomicAdd(&touched_n_all[wib], 1u);
                if (at < TOUCHED_CAP) touched[at] = (u16)t;
            }
        }
        // Every lane is done with this document (its stage may be refilled, its row written).
        __syncwarp();
        if (mode == MODE_LOGLIK) continue;
        // Every lane is done reading the old row and counting: write the new one over it.
        const u32 distinct = touched_n_all[wib];
        if (distinct <= TOUCHED_CAP) {
            // Each distinct topic's place is the number of smaller ones.
            for (u32 i = lane; i < distinct; i += 32) {
                u32 k = touched[i], rank = 0;
                for (u32 q = 0; q < distinct; q++) rank += touched[q] < k;
                u32 n = h[k];
                h[k] = 0;
                u32 reg = round_count(n, DOC_CELL | ((doc_base + d) * (u64)K + k), iteration, lv, top, seed_lo, seed_hi);
                rows[roff + rank] = (k << 16) | reg;
            }
        } else {
            u32 base = 0;
            for (u32 k0 = 0; k0 < K; k0 += 32) {
                u32 k = k0 + lane;
                u32 n = k < K ? h[k] : 0u;
                u32 mask = __ballot_sync(FULL, n != 0u);
                if (n) {
                    h[k] = 0;
                    u32 at = base + __popc(mask & ((1u << lane) - 1u));
                    u32 reg = round_count(n, DOC_CELL | ((doc_base + d) * (u64)K + k), iteration, lv, top, seed_lo, seed_hi);
                    rows[roff + at] = (k << 16) | reg;
                }
                base += __popc(mask);
            }
        }
        if (lane == 0) row_len[d] = distinct;
        __syncwarp();
    }
    if (mode == MODE_LOGLIK) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) ll_acc += __shfl_xor_sync(FULL, ll_acc, o);
        if (lane == 0) atomicAdd(ll_sum, (unsigned long long)ll_acc);
    }
}

// The M-step for the words: each new count rounded to a register (keyed by (iteration, cell)),
// the next sweep's B, Bn cleared, and n_k += the estimates (integers, so the atomics' order does
// not matter). A thread per topic of a slice of words: rows are read along K, coalesced.
#define COMMIT_THREADS 256
extern "C" __global__ void __launch_bounds__(COMMIT_THREADS) mfm_commit_words(
    u32* __restrict__ Bn, REG_T* __restrict__ B, u32 V, u32 K, u32 words_per_slice,
    const u64* __restrict__ levels, u32 top, u32 seed_lo, u32 seed_hi, u32 iteration,
    unsigned long long* __restrict__ totals) {
    u32 k = blockIdx.x * COMMIT_THREADS + threadIdx.x;
    if (k >= K) return;
    u32 v0 = blockIdx.y * words_per_slice, v1 = min(V, v0 + words_per_slice);
    u64 sum = 0;
    for (u32 v = v0; v < v1; v++) {
        u64 c = (u64)v * K + k;
        u32 n = Bn[c];
        u32 reg = 0;
        if (n) {
            Bn[c] = 0;
            reg = round_count(n, c, iteration, levels, top, seed_lo, seed_hi);
            sum += estimate(reg, levels);
        }
        B[c] = (REG_T)reg;
    }
    if (sum) atomicAdd(&totals[k], sum);
}
