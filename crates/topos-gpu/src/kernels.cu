// Topos GPU kernels, compiled at run time by NVRTC (see engine.rs).
//
// Layout of one chunk (a contiguous range of documents, SaberLDA §3.1.4 PDOW):
//   token_doc[e], token_src[e]  per PDOW entry e: document (chunk-local) and position in the
//                               chunk's corpus-order token range
//   items[i] = (word, start, len, 0)  a word's tokens are entries start..start+len; frequent words
//                               are split over several items (ezLDA §1.5.1), largest items first
//   doc_off[d]                  chunk-local token offset of document d (corpus order)
//   z[t]                        topic of token t, corpus order (chunk-local)
//   row_topic/row_count[t]      sparse doc-topic row of document d at doc_off[d]..doc_off[d]+nnz[d]
//                               (a row never has more non-zeros than its document has tokens)
// Model: B[v*K + k] dense word-topic counts (frozen during a sweep), Bn the next iteration's
// counts (atomics), n[k] topic totals, inv_norm[k] = 1 / (n_k + V*beta).

typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned long long u64;

#define FULL 0xffffffffu
// Warps of a sampling block, set at compile time by the engine: 8 while the tree is small
// enough for 8 blocks per multiprocessor, 32 when it is large (K in the thousands), so that the
// one block a multiprocessor's shared memory holds still has warps enough to hide latency.
#ifndef WARPS_PER_BLOCK
#define WARPS_PER_BLOCK 8
#endif

// ---------------------------------------------------------------------------------------------
// Philox4x32-10, the same function as topos-sampling/src/rng.rs: counter = (index lo, index hi,
// iteration, stream << 24 | block), key = seed. Same seed, same numbers on CPU and GPU.
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

// CounterRng::next_f32: 24 bits of a word.
__device__ __forceinline__ float unit_f32(u32 x) { return (float)(x >> 8) * (1.0f / 16777216.0f); }

#define STREAM_TRAIN 2u

__device__ __forceinline__ u32 lane_id() { return threadIdx.x & 31; }

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL, v, o);
    return v;
}

__device__ __forceinline__ float warp_inclusive_scan(float v) {
    u32 lane = lane_id();
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        float t = __shfl_up_sync(FULL, v, o);
        if (lane >= (u32)o) v += t;
    }
    return v;
}

// ---------------------------------------------------------------------------------------------
// M-step helpers.

// n[k] = sum_v B[v*K + k]. Grid: x over topics (256 per block), y over word slices.
extern "C" __global__ void column_sums(const u32* __restrict__ B, u32 V, u32 K, u32 words_per_slice,
                                       u64* __restrict__ n) {
    u32 k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= K) return;
    u32 v0 = blockIdx.y * words_per_slice;
    u32 v1 = min(V, v0 + words_per_slice);
    u64 s = 0;
    for (u32 v = v0; v < v1; v++) s += B[(u64)v * K + k];
    if (s) atomicAdd(&n[k], s);
}

// inv_norm[k] = 1 / (n_k + V*beta), in double then rounded, as on the CPU.
extern "C" __global__ void normalizers(const u64* __restrict__ n, u32 K, double v_beta,
                                       float* __restrict__ inv_norm) {
    u32 k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < K) inv_norm[k] = (float)(1.0 / ((double)n[k] + v_beta));
}

// Initial word-topic counts from the assignments: one block per item.
extern "C" __global__ void count_words(const uint4* __restrict__ items, const u32* __restrict__ token_src,
                                       const u16* __restrict__ z, u32 K, u32* __restrict__ B) {
    uint4 it = items[blockIdx.x];
    u64 row = (u64)it.x * K;
    for (u32 e = it.y + threadIdx.x; e < it.y + it.z; e += blockDim.x)
        atomicAdd(&B[row + z[token_src[e]]], 1u);
}

// ---------------------------------------------------------------------------------------------
// Doc-topic rows rebuilt from the assignments (SaberLDA §3.3): one warp per document, a dense
// per-warp histogram in global scratch (only the entries the document touches are cleared, so
// the cost is O(document length), not O(K)), then compaction in order of first occurrence
// (ballot + match_any: deterministic, whatever the scheduling).
extern "C" __global__ void rebuild_doc_topics(const u16* __restrict__ z, const u32* __restrict__ doc_off,
                                              u32 num_docs, u32 K, u32* __restrict__ scratch,
                                              u16* __restrict__ row_topic, u32* __restrict__ row_count,
                                              u32* __restrict__ row_nnz) {
    u32 lane = lane_id();
    u32 warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    u32 num_warps = (gridDim.x * blockDim.x) >> 5;
    u32* h = scratch + (u64)warp * K;
    u32 lt = (1u << lane) - 1;
    for (u32 d = warp; d < num_docs; d += num_warps) {
        u32 a = doc_off[d], b = doc_off[d + 1];
        for (u32 i = a + lane; i < b; i += 32) h[z[i]] = 0;
        __syncwarp();
        for (u32 i = a + lane; i < b; i += 32) atomicAdd(&h[z[i]], 1u);
        __syncwarp();
        u32 nnz = 0;
        for (u32 base = a; base < b; base += 32) {
            u32 i = base + lane;
            bool valid = i < b;
            u32 k = valid ? z[i] : 0xffffffffu;
            u32 same = __match_any_sync(FULL, k);
            bool leader = valid && (__ffs(same) - 1) == (int)lane;
            u32 c = 0;
            if (leader) c = atomicExch(&h[k], 0u);
            bool claim = c > 0;
            u32 mask = __ballot_sync(FULL, claim);
            if (claim) {
                u32 pos = a + nnz + __popc(mask & lt);
                row_topic[pos] = (u16)k;
                row_count[pos] = c;
            }
            nnz += __popc(mask);
            __syncwarp();
        }
        if (lane == 0) row_nnz[d] = nnz;
    }
}

// ---------------------------------------------------------------------------------------------
// The 32-ary sampling tree (SaberLDA §3.2.4) over p*(k) = (B_vk + beta) * inv_norm[k] in shared
// memory: level 0 holds the K leaves (padded to a multiple of 32 with zeros), each level above
// holds the sums of 32 entries of the level below, up to a single root. Built once per block (the
// block's tokens all belong to one word), reused by every warp (p*(k) reuse, CuLDA §6.1.3).

struct Tree {
    float* level[4];  // level[0] = leaves
    u32 size[4];
    int top;          // index of the root level (size 1)
};

__device__ __forceinline__ u32 pad32(u32 x) { return (x + 31) & ~31u; }

// Sizes of the levels for K leaves; returns the total floats needed.
__device__ __forceinline__ u32 tree_layout(Tree& t, float* smem, u32 K) {
    u32 off = 0, sz = pad32(K);
    int l = 0;
    for (;;) {
        t.level[l] = smem + off;
        t.size[l] = sz;
        off += sz;
        if (sz <= 32 || l == 3) break;
        sz = pad32((sz + 31) / 32);
        l++;
    }
    t.top = l;
    return off;
}

// Descends from the root: y in [0, total). Every level is a warp-wide scan of 32 entries and a
// ballot for the first non-zero entry whose prefix passes y. Only non-zero entries may be chosen:
// the scan adds in a tree order, so a zero entry's prefix can round above its left neighbour's.
// Rounding can leave y at or past the last prefix: then the last non-zero entry is taken.
__device__ __forceinline__ u32 tree_sample(const Tree& t, float y) {
    u32 lane = lane_id();
    u32 node = 0;
    for (int l = t.top; l >= 0; l--) {
        float v = t.level[l][node * 32 + lane];
        float p = warp_inclusive_scan(v);
        u32 above = __ballot_sync(FULL, p > y && v > 0.0f);
        u32 nz = __ballot_sync(FULL, v > 0.0f);
        u32 f = above ? (__ffs(above) - 1) : (nz ? 31 - __clz(nz) : 0);
        float before = __shfl_sync(FULL, p - v, f);
        y = fmaxf(y - before, 0.0f);
        node = node * 32 + f;
    }
    return node;
}

#define NO_TOPIC 0xffffffffu

// p1's draw, the second pass over a document's row (Alg. 2): the first non-zero entry
// count·p*(topic) whose running sum passes x, leaving out topic `skip` (NO_TOPIC: none). Only
// non-zero entries may be chosen (see tree_sample); if rounding leaves x past the end, the last
// non-zero entry is taken, or `fallback` when there is none.
__device__ __forceinline__ u32 sample_row(const u16* __restrict__ topic, const u32* __restrict__ count,
                                          u32 nnz, const float* pstar, float x, u32 skip, u32 fallback) {
    u32 lane = lane_id();
    float carry = 0.0f;
    u32 last = fallback;
    for (u32 i0 = 0; i0 < nnz; i0 += 32) {
        u32 i = i0 + lane;
        u32 t = i < nnz ? (u32)topic[i] : skip;
        float w = (i < nnz && t != skip) ? (float)count[i] * pstar[t] : 0.0f;
        float p = warp_inclusive_scan(w) + carry;
        u32 above = __ballot_sync(FULL, p > x && w > 0.0f);
        if (above) return __shfl_sync(FULL, t, __ffs(above) - 1);
        u32 nz = __ballot_sync(FULL, w > 0.0f);
        if (nz) last = __shfl_sync(FULL, t, 31 - __clz(nz));
        carry = __shfl_sync(FULL, p, 31);
    }
    return last;
}

// ---------------------------------------------------------------------------------------------
// The sampler: one block per item (the tokens of one word, or a slice of a frequent word's), one
// warp per token (SaberLDA Alg. 2 / CuLDA §6.1).
//
//   p(k) ∝ (A_dk + α) p*(k)  =  A_dk p*(k)          [p1: sparse, the document's non-zeros]
//                             + α p*(k)            [p2: dense, the word's tree]
//
// esca (exclude == 0): every count is the previous iteration's (SaberLDA's ESCA).
// cgs  (exclude == 1): the collapsed Gibbs conditional with the token's own assignment removed
// from A, B and n (the −dn counts of Eq. 1), the other tokens' counts from the previous
// iteration (CuLDA_CGS's sampler reads stale counts without removing the token: its conditional is
// biased towards the token's old topic). Drawn exactly: the old topic k₀ gets weight
// p'(k₀) = (A−1+α)(B−1+β)/(n−1+Vβ) and the other topics keep theirs; x < p'(k₀) picks k₀, else
// the rest is drawn from p with k₀'s entries left out (p1 skips it in the scan; p2 redraws from
// the tree while it lands on k₀, with fresh Philox blocks).
extern "C" __global__ void __launch_bounds__(WARPS_PER_BLOCK * 32) sample(
    const uint4* __restrict__ items, u32 num_items,
    const u32* __restrict__ token_doc, const u32* __restrict__ token_src,
    const u32* __restrict__ doc_off, const u16* __restrict__ row_topic,
    const u32* __restrict__ row_count, const u32* __restrict__ row_nnz,
    const u32* __restrict__ B, const u64* __restrict__ n, const float* __restrict__ inv_norm,
    u32 K, float alpha, float beta, double v_beta,
    u16* __restrict__ z, u32* __restrict__ Bn,
    u64 token_base, u32 seed_lo, u32 seed_hi, u32 iteration, int exclude) {
    extern __shared__ float smem[];
    Tree tree;
    tree_layout(tree, smem, K);
    u32 lane = lane_id();
    u32 warp = threadIdx.x >> 5;

    for (u32 item = blockIdx.x; item < num_items; item += gridDim.x) {
        uint4 it = items[item];
        u32 v = it.x;
        const u32* Brow = B + (u64)v * K;
        // Leaves: p*(k); zero padding.
        for (u32 k = threadIdx.x; k < tree.size[0]; k += blockDim.x)
            tree.level[0][k] = k < K ? ((float)Brow[k] + beta) * inv_norm[k] : 0.0f;
        __syncthreads();
        for (int l = 1; l <= tree.top; l++) {
            u32 groups = tree.size[l];
            for (u32 g = warp; g < groups; g += WARPS_PER_BLOCK) {
                u32 src = g * 32 + lane;
                float x = src < tree.size[l - 1] ? tree.level[l - 1][src] : 0.0f;
                x = warp_sum(x);
                if (lane == 0) tree.level[l][g] = x;
            }
            __syncthreads();
        }
        const float* pstar = tree.level[0];
        // The root level holds up to 32 entries: their sum is the total.
        float total = warp_sum(lane < tree.size[tree.top] ? tree.level[tree.top][lane] : 0.0f);
        float q = alpha * total;

        // This warp's contiguous share of the item's tokens (adjacent tokens of one document
        // share p1, so contiguity lets the warp reuse it).
        u32 per = (it.z + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK;
        u32 e0 = it.y + min(it.z, warp * per);
        u32 e1 = it.y + min(it.z, (warp + 1) * per);
        u32 cached_doc = 0xffffffffu;
        u32 ra = 0, rnnz = 0;
        float s = 0.0f;
        for (u32 base = e0; base < e1; base += 32) {
            // Lane j prepares token base+j: its document, position and random numbers.
            u32 my_e = base + lane;
            u32 my_doc = 0, my_src = 0;
            uint4 r = make_uint4(0, 0, 0, 0);
            if (my_e < e1) {
                my_doc = token_doc[my_e];
                my_src = token_src[my_e];
                u64 g = token_base + my_src;
                r = philox(make_uint4((u32)g, (u32)(g >> 32), iteration, STREAM_TRAIN << 24), seed_lo, seed_hi);
            }
            u32 count = min(32u, e1 - base);
            for (u32 j = 0; j < count; j++) {
                u32 d = __shfl_sync(FULL, my_doc, j);
                u32 src = __shfl_sync(FULL, my_src, j);
                u32 r0 = __shfl_sync(FULL, r.x, j);
                u32 r1 = __shfl_sync(FULL, r.y, j);
                if (d != cached_doc) {
                    cached_doc = d;
                    ra = doc_off[d];
                    rnnz = row_nnz[d];
                    float acc = 0.0f;
                    for (u32 i = lane; i < rnnz; i += 32)
                        acc += (float)row_count[ra + i] * pstar[row_topic[ra + i]];
                    s = warp_sum(acc);
                }
                u32 k;
                if (!exclude) {
                    float x = unit_f32(r0) * (s + q);
                    if (x < s) {
                        k = sample_row(row_topic + ra, row_count + ra, rnnz, pstar, x, NO_TOPIC, 0);
                    } else {
                        k = tree_sample(tree, unit_f32(r1) * total);
                    }
                } else {
                    // The token's own assignment and its counts.
                    u32 k0 = z[src];
                    u32 a0 = 0;
                    for (u32 i0 = 0; i0 < rnnz; i0 += 32) {
                        u32 i = i0 + lane;
                        u32 hit = __ballot_sync(FULL, i < rnnz && row_topic[ra + i] == k0);
                        if (hit) {
                            a0 = __shfl_sync(FULL, i < rnnz ? row_count[ra + i] : 0u, __ffs(hit) - 1);
                            break;
                        }
                    }
                    float p0 = pstar[k0];
                    float b0 = (float)Brow[k0];
                    float pstar_ex = (b0 - 1.0f + beta) * (float)(1.0 / ((double)n[k0] - 1.0 + v_beta));
                    float w_old = ((float)a0 - 1.0f + alpha) * fmaxf(pstar_ex, 0.0f);
                    float s_ex = fmaxf(s - (float)a0 * p0, 0.0f);
                    float q_ex = fmaxf(q - alpha * p0, 0.0f);
                    float x = unit_f32(r0) * (w_old + s_ex + q_ex);
                    if (x < w_old) {
                        k = k0;
                    } else if ((x -= w_old) < s_ex) {
                        k = sample_row(row_topic + ra, row_count + ra, rnnz, pstar, x, k0, k0);
                    } else {
                        // p2 without k0: redraw while the tree lands on k0 (fresh blocks of the
                        // token's stream; bounded, then k0's nearest alternative is kept).
                        u64 g = token_base + src;
                        k = tree_sample(tree, unit_f32(r1) * total);
                        for (u32 attempt = 1; k == k0 && attempt < 64; attempt++) {
                            uint4 rr = philox(make_uint4((u32)g, (u32)(g >> 32), iteration, (STREAM_TRAIN << 24) | attempt), seed_lo, seed_hi);
                            k = tree_sample(tree, unit_f32(rr.x) * total);
                        }
                    }
                }
                if (lane == 0) {
                    z[src] = (u16)k;
                    atomicAdd(&Bn[(u64)v * K + k], 1u);
                }
            }
        }
        __syncthreads();
    }
}
