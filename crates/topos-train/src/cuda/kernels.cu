// Topos GPU kernels, compiled at run time by NVRTC (see engine.rs).
//
// Layout of one chunk (a contiguous range of documents, SaberLDA §3.1.4 PDOW):
//   token_doc[e], token_src[e]  per PDOW entry e: document (chunk-local) and position in the
//                               chunk's corpus-order token range
//   items[i] = (word, start, len, 0)  a word's tokens are entries start..start+len; frequent words
//                               are split over several items (ezLDA §1.5.1), largest items first
//   doc_off[d]                  chunk-local token offset of document d (corpus order)
//   z[t]                        topic of token t, corpus order (chunk-local)
//   rows[t]                     sparse doc-topic row of document d at doc_off[d]..doc_off[d]+nnz[d]
//                               (a row never has more non-zeros than its document has tokens), one
//                               RowEntry per non-zero: topic and count in one word (below)
// Model: B word-topic counts (frozen during a sweep), Bn the next iteration's counts (atomics;
// null when the engine keeps one copy and recounts B after the sweep, plan.rs CountCopies),
// n[k] topic totals, inv_norm[k] = 1 / (n_k + V*beta). Word v's row is cells
// word_off[v] .. word_off[v] + word_slots[v] of B: dense (word_slots[v] == K, cell k is topic k's
// count) or hashed (ezLDA §1.4.2, see word_topics.rs: a power of two below K of open-addressing
// slots, (topic + 1) << 16 | count, 0 empty). Dense rows come first.

typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned long long u64;

#define FULL 0xffffffffu
#define NO_TOPIC_TOP 0xffffffffu

// A doc-topic row entry: topic and count packed in one word, so an entry is one load (ezLDA's
// pair storage, thesis §1.3.3). 32 bits (topic << 16 | count) when every document has fewer than
// 65,536 tokens, which the engine checks (WIDE_ROWS = 0); else 64 bits (topic << 32 | count).
// Rows are the sampler's largest memory traffic at large K (profiled: DRAM reads of about 690 B a
// token at K = 10,000 with separate u16 topic and u32 count arrays).
#ifndef WIDE_ROWS
#define WIDE_ROWS 0
#endif
#if WIDE_ROWS
typedef unsigned long long RowEntry;
#define ROW_SHIFT 32
#define ROW_MASK 0xffffffffull
#else
typedef unsigned int RowEntry;
#define ROW_SHIFT 16
#define ROW_MASK 0xffffu
#endif
__device__ __forceinline__ u32 entry_topic(RowEntry e) { return (u32)(e >> ROW_SHIFT); }
__device__ __forceinline__ u32 entry_count(RowEntry e) { return (u32)(e & ROW_MASK); }

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

// The warp's inclusive prefix sums of v (float weights or u32 counts).
template <typename T>
__device__ __forceinline__ T warp_inclusive_scan(T v) {
    u32 lane = lane_id();
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        T t = __shfl_up_sync(FULL, v, o);
        if (lane >= (u32)o) v += t;
    }
    return v;
}

// ---------------------------------------------------------------------------------------------
// Word-topic rows (dense or hashed).

__device__ __forceinline__ u32 word_hash(u32 k, u32 slots) {
    return (k * 0x9E3779B1u) >> (32 - (31 - __clz(slots)));
}

// Adds `tokens` tokens of topic k to word row (off, slots). A hashed row has room for every
// topic its word can have (slots >= 2 x its tokens), so the probe ends.
__device__ __forceinline__ void word_add_n(u32* __restrict__ B, u64 off, u32 slots, u32 K, u32 k, u32 tokens) {
    if (slots >= K) { atomicAdd(&B[off + k], tokens); return; }
    u32 key = (k + 1) << 16, mask = slots - 1;
    for (u32 h = word_hash(k, slots);; h = (h + 1) & mask) {
        u32 cur = atomicCAS(&B[off + h], 0u, key | tokens);
        if (cur == 0u) return;
        if ((cur & 0xffff0000u) == key) { atomicAdd(&B[off + h], tokens); return; }
    }
}

__device__ __forceinline__ void word_add(u32* __restrict__ B, u64 off, u32 slots, u32 K, u32 k) {
    word_add_n(B, off, slots, K, k, 1u);
}

// Topic k's count in word row (off, slots) (read-only: the sweep's B does not change).
__device__ __forceinline__ u32 word_count(const u32* __restrict__ B, u64 off, u32 slots, u32 K, u32 k) {
    if (slots >= K) return B[off + k];
    u32 key = (k + 1) << 16, mask = slots - 1;
    for (u32 h = word_hash(k, slots), probes = 0; probes < slots; h = (h + 1) & mask, probes++) {
        u32 cur = B[off + h];
        if (cur == 0u) return 0u;
        if ((cur & 0xffff0000u) == key) return cur & 0xffffu;
    }
    return 0u;
}

// ---------------------------------------------------------------------------------------------
// M-step helpers.

// n[k] += the counts of the hashed rows (cells [0, count) of the hashed part of B).
extern "C" __global__ void hashed_column_sums(const u32* __restrict__ cells, u64 count,
                                              u64* __restrict__ n) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < count; i += (u64)gridDim.x * blockDim.x) {
        u32 c = cells[i];
        if (c) atomicAdd(&n[(c >> 16) - 1], (u64)(c & 0xffffu));
    }
}

// n[k] += the tokens of z[0, tokens) assigned topic k: the column sums of the counts those tokens
// added to B' (each token adds one to its word's row, in its new topic), without reading B'.
// With `shared` (K u32 of dynamic shared memory fit), each block counts in shared memory first.
extern "C" __global__ void topic_histogram(const u16* __restrict__ z, u64 tokens, u32 K, u32 shared,
                                           u64* __restrict__ n) {
    extern __shared__ u32 histogram_smem[];
    if (shared) {
        for (u32 k = threadIdx.x; k < K; k += blockDim.x) histogram_smem[k] = 0u;
        __syncthreads();
    }
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < tokens; i += (u64)gridDim.x * blockDim.x) {
        u32 k = z[i];
        if (shared) atomicAdd(&histogram_smem[k], 1u);
        else atomicAdd(&n[k], 1ull);
    }
    if (shared) {
        __syncthreads();
        for (u32 k = threadIdx.x; k < K; k += blockDim.x)
            if (histogram_smem[k]) atomicAdd(&n[k], (u64)histogram_smem[k]);
    }
}

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

// ---------------------------------------------------------------------------------------------
// The sparse exchange between GPUs (several GPUs, NCCL): each GPU's non-zero cells of its dense
// counts as entries (cell << 24 | count), gathered by every GPU and added to its own. Integer
// sums: the result is the all-reduce's, whatever order the entries are appended in.

// The sparse exchange's entries (Engine::sparse_exchange): every non-zero cell of B[0, cells)
// as one 4-byte entry, offset within its tile << COUNT_BITS | count, tile by tile. A tile is
// the COMPACT_PER_THREAD · blockDim.x = 2,048 cells a block reads at once (blockDim.x = 256;
// offsets need 11 bits); each tile with non-zeros gets a header (the index of its first entry,
// the tile's number), so an entry needs no cell number of its own: 4 bytes a non-zero where
// cell << 24 | count took 8, which halves what NCCL gathers. Layout of `out` (u32):
// [2, 2 + 2·tiles) the headers in the order the tiles claimed their places, then from
// 2 + 2·tiles the entries (at most `capacity`). out[0], out[1] (the entry and header counts)
// are written by the host from status. status[0] counts headers << 40 | entries, from one
// atomic a tile, so the headers' first entries increase with their places; status[1] becomes 1
// if a count needs more than COUNT_BITS bits (the caller then goes dense). One atomic a tile:
// one atomic per warp of 32 cells on one counter cost 12 ms an iteration at K = 10,000
// (measured on H200s: as much as NCCL's dense all-reduce it was to replace).
#define COMPACT_PER_THREAD 8
#define COMPACT_OFFSET_BITS 11
#define COMPACT_COUNT_BITS 21
extern "C" __global__ void compact_counts(const u32* __restrict__ B, u64 cells, u32* __restrict__ out,
                                          u64 tiles, u64 capacity, unsigned long long* __restrict__ status) {
    __shared__ u32 warp_total[32];
    __shared__ unsigned long long tile_claim;
    const u32 warps = blockDim.x >> 5, warp = threadIdx.x >> 5, lane = lane_id();
    const u64 tile = (u64)blockDim.x * COMPACT_PER_THREAD;
    u32* headers = out + 2;
    u32* entries = out + 2 + 2 * tiles;
    for (u64 base = blockIdx.x * tile; base < cells; base += (u64)gridDim.x * tile) {
        u32 c[COMPACT_PER_THREAD];
        u32 mine = 0;
#pragma unroll
        for (int r = 0; r < COMPACT_PER_THREAD; r++) {
            u64 i = base + (u64)r * blockDim.x + threadIdx.x;
            c[r] = i < cells ? B[i] : 0u;
            mine += c[r] != 0u;
        }
        // Inclusive scan of `mine` over the warp, then over the warps' totals.
        u32 inc = warp_inclusive_scan(mine);
        if (lane == 31) warp_total[warp] = inc;
        __syncthreads();
        if (warp == 0) {
            u32 t = lane < warps ? warp_total[lane] : 0u;
            u32 ti = warp_inclusive_scan(t);
            if (lane < warps) warp_total[lane] = ti - t;  // exclusive prefix of the warps
            if (lane == warps - 1 && ti) {
                unsigned long long claim = atomicAdd(&status[0], (1ull << 40) | (unsigned long long)ti);
                tile_claim = claim;
                u64 h = claim >> 40, first = claim & ((1ull << 40) - 1);
                if (first < capacity) {
                    headers[2 * h] = (u32)first;
                    headers[2 * h + 1] = (u32)(base / tile);
                }
            }
        }
        __syncthreads();
        u32 before = warp_total[warp] + inc - mine;
        if (mine) {
            u64 j = (tile_claim & ((1ull << 40) - 1)) + before;
#pragma unroll
            for (int r = 0; r < COMPACT_PER_THREAD; r++) {
                if (c[r]) {
                    if (c[r] >> COMPACT_COUNT_BITS) status[1] = 1ull;
                    u32 offset = (u32)r * blockDim.x + threadIdx.x;
                    if (j < capacity) entries[j] = (offset << COMPACT_COUNT_BITS) | c[r];
                    j++;
                }
            }
        }
        __syncthreads();  // warp_total and tile_claim are the next tile's
    }
}

// B[cell] += count for every entry of the other GPUs: `all` holds every GPU's compact_counts
// output, `stride` u32 apart, each with `tiles` header places (rank `skip`'s own entries are
// already in B). A warp a header: its tile's entries run to the next header's first entry (or
// the GPU's entry count for the last).
extern "C" __global__ void add_entries(u32* __restrict__ B, const u32* __restrict__ all, u32 workers,
                                       u64 stride, u64 tiles, u32 skip) {
    const u32 lane = lane_id();
    const u64 warps = (u64)gridDim.x * (blockDim.x >> 5);
    const u64 tile = 1ull << COMPACT_OFFSET_BITS;  // compact_counts's blockDim.x · COMPACT_PER_THREAD
    for (u64 j = blockIdx.x * (u64)(blockDim.x >> 5) + (threadIdx.x >> 5); j < (u64)workers * tiles; j += warps) {
        u32 g = (u32)(j / tiles);
        u64 h = j - (u64)g * tiles;
        if (g == skip) continue;
        const u32* seg = all + (u64)g * stride;
        u32 len = seg[0], heads = seg[1];
        if (h >= heads) continue;
        u32 first = seg[2 + 2 * h], end = h + 1 < heads ? seg[2 + 2 * (h + 1)] : len;
        u64 base = (u64)seg[3 + 2 * h] * tile;
        const u32* entries = seg + 2 + 2 * tiles;
        for (u32 e = first + lane; e < end; e += 32) {
            u32 v = entries[e];
            atomicAdd(&B[base + (v >> COMPACT_COUNT_BITS)], v & ((1u << COMPACT_COUNT_BITS) - 1u));
        }
    }
}

// inv_norm[k] = 1 / (n_k + V*beta), in double then rounded, as on the CPU.
extern "C" __global__ void normalizers(const u64* __restrict__ n, u32 K, double v_beta,
                                       float* __restrict__ inv_norm) {
    u32 k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < K) inv_norm[k] = (float)(1.0 / ((double)n[k] + v_beta));
}

// Initial word-topic counts from the assignments: one block per item.
extern "C" __global__ void count_words(const uint4* __restrict__ items, const u32* __restrict__ token_src,
                                       const u16* __restrict__ z, const u64* __restrict__ word_off,
                                       const u32* __restrict__ word_slots, u32 K, u32* __restrict__ B) {
    uint4 it = items[blockIdx.x];
    u64 off = word_off[it.x];
    u32 slots = word_slots[it.x];
    for (u32 e = it.y + threadIdx.x; e < it.y + it.z; e += blockDim.x)
        word_add(B, off, slots, K, z[token_src[e]]);
}

// ---------------------------------------------------------------------------------------------
// ezlda's three-branch sampling (thesis §1.3.2-1.3.3): what the rebuild and the sampler read.

// Offers topic k of weight p to a top-two list (b1, k1) >= (b2, k2); ties go to the lower topic,
// so the result does not depend on the order of the offers.
__device__ __forceinline__ void top2_offer(float& b1, u32& k1, float& b2, u32& k2, float p, u32 k) {
    if (p > b1 || (p == b1 && k < k1)) {
        b2 = b1; k2 = k1; b1 = p; k1 = k;
    } else if (p > b2 || (p == b2 && k < k2)) {
        b2 = p; k2 = k;
    }
}

// Offers topic k of weight p to a top-three list (b1 >= b2 >= b3), as top2_offer.
__device__ __forceinline__ void top3_offer(float (&b)[3], u32 (&t)[3], float p, u32 k) {
    if (p > b[0] || (p == b[0] && k < t[0])) {
        b[2] = b[1]; t[2] = t[1]; b[1] = b[0]; t[1] = t[0]; b[0] = p; t[0] = k;
    } else if (p > b[1] || (p == b[1] && k < t[1])) {
        b[2] = b[1]; t[2] = t[1]; b[1] = p; t[1] = k;
    } else if (p > b[2] || (p == b[2] && k < t[2])) {
        b[2] = p; t[2] = k;
    }
}

// top2[v] = K1 | K2 << 16: the two topics of word v's largest p*(k) = (B_vk + β)/(n_k + Vβ) among
// its counted topics (K2 = K1 when the row counts one topic), ezLDA's K1/K2 pair (§1.3.3), and
// top3[v] >= p*(k) for every other topic k (a3 of Eq. 1.10): the third largest of a dense row;
// for a hashed row the larger of its third counted topic and β·max_k 1/(n_k + Vβ), which bounds
// the topics it does not count. The same float expression as the sampler's tree leaves, so the
// bound holds for them exactly. The sampler's draw is exact for any two topics (it singles K1
// out); the largest skip the most tokens. One warp per word.
extern "C" __global__ void word_top2(const u32* __restrict__ B, const u64* __restrict__ word_off,
                                     const u32* __restrict__ word_slots, const float* __restrict__ inv_norm,
                                     u32 V, u32 K, float beta, u32* __restrict__ top2, float* __restrict__ top3) {
    __shared__ float block_inv[32];
    u32 lane = lane_id();
    // max_k 1/(n_k + Vβ), per block.
    float mi = 0.0f;
    for (u32 k = threadIdx.x; k < K; k += blockDim.x) mi = fmaxf(mi, inv_norm[k]);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) mi = fmaxf(mi, __shfl_xor_sync(FULL, mi, o));
    if (lane == 0) block_inv[threadIdx.x >> 5] = mi;
    __syncthreads();
    float max_inv = 0.0f;
    for (u32 w = 0; w < (blockDim.x >> 5); w++) max_inv = fmaxf(max_inv, block_inv[w]);
    u32 warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    u32 num_warps = (gridDim.x * blockDim.x) >> 5;
    for (u32 v = warp; v < V; v += num_warps) {
        u64 off = word_off[v];
        u32 slots = word_slots[v];
        float b[3] = {-1.0f, -1.0f, -1.0f};
        u32 t[3] = {NO_TOPIC_TOP, NO_TOPIC_TOP, NO_TOPIC_TOP};
        bool dense = slots >= K;
        if (dense) {
            for (u32 k = lane; k < K; k += 32) top3_offer(b, t, ((float)B[off + k] + beta) * inv_norm[k], k);
        } else {
            for (u32 i = lane; i < slots; i += 32) {
                u32 c = B[off + i];
                if (c) {
                    u32 k = (c >> 16) - 1;
                    top3_offer(b, t, ((float)(c & 0xffffu) + beta) * inv_norm[k], k);
                }
            }
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            float ob[3];
            u32 ot[3];
#pragma unroll
            for (int i = 0; i < 3; i++) {
                ob[i] = __shfl_xor_sync(FULL, b[i], o);
                ot[i] = __shfl_xor_sync(FULL, t[i], o);
            }
#pragma unroll
            for (int i = 0; i < 3; i++)
                if (ot[i] != NO_TOPIC_TOP) top3_offer(b, t, ob[i], ot[i]);
        }
        if (lane == 0) {
            u32 k1 = t[0] == NO_TOPIC_TOP ? 0 : t[0];
            u32 k2 = t[1] == NO_TOPIC_TOP ? k1 : t[1];
            float a3 = t[2] == NO_TOPIC_TOP ? 0.0f : b[2];
            if (!dense) a3 = fmaxf(a3, beta * max_inv);
            top2[v] = k1 | (k2 << 16);
            top3[v] = a3;
        }
    }
}

// word_of[t] = the word of the chunk's token t (corpus order), from the work items: what the
// rebuild needs to look up each token's K1/K2 pair in its document's counts. One block per item.
extern "C" __global__ void word_of_positions(const uint4* __restrict__ items, const u32* __restrict__ token_src,
                                             u32* __restrict__ word_of) {
    uint4 it = items[blockIdx.x];
    for (u32 e = it.y + threadIdx.x; e < it.y + it.z; e += blockDim.x) word_of[token_src[e]] = it.x;
}

// ---------------------------------------------------------------------------------------------
// Doc-topic rows rebuilt from the assignments (SaberLDA §3.3): one warp per document, compacted in
// order of first occurrence (ballot + match_any: deterministic, whatever the scheduling).
//
// The counting: a document of up to HASH_SLOTS/2 tokens is counted in an open-addressing hash
// table of the warp's own in shared memory (slot = topic << 16 | count, linear probing, sized to
// twice the document), so the cost is O(document length) in shared memory whatever K is. Longer
// documents use a dense K-entry histogram of the warp's in global scratch (only the entries the
// document touches are cleared). The global histogram alone cost 15.9 ms per iteration at
// K = 10,000 on 100M tokens (its 40 KB per warp miss L2), against 4.2 ms at K = 1,024.
#define REBUILD_WARPS 8
#define HASH_SLOTS 1024
#define HASH_EMPTY 0xffffffffu

// Claims topic k's count in the table (first occurrence in document order wins): the slot's
// count is taken and zeroed. Every read is atomic: other lanes update other slots meanwhile.
__device__ __forceinline__ u32 hash_claim(u32* table, u32 k, u32 bits, u32 mask) {
    u32 h = (k * 0x9E3779B1u) >> (32 - bits);
    for (;;) {
        u32 cur = atomicOr(&table[h], 0u);
        if (cur == HASH_EMPTY) return 0;  // not present (cannot happen: every topic was inserted)
        if ((cur >> 16) == k) return atomicAnd(&table[h], 0xffff0000u) & 0xffffu;
        h = (h + 1) & mask;
    }
}

// Topic k's count in a document's table (read only, after the counting).
__device__ __forceinline__ u32 hash_count(const u32* table, u32 k, u32 bits, u32 mask) {
    for (u32 h = (k * 0x9E3779B1u) >> (32 - bits);; h = (h + 1) & mask) {
        u32 cur = table[h];
        if (cur == HASH_EMPTY) return 0;
        if ((cur >> 16) == k) return cur & 0xffffu;
    }
}

// With `pairs` (ezlda), also each token's C1/C2 pair (thesis §1.3.3, "processing by document"):
// pairs[t] = A_d[K1] << ROW_SHIFT | A_d[K2] for the K1/K2 of token t's word (top2, word_of),
// counted with the token itself, read from the document's table while it is whole.
extern "C" __global__ void __launch_bounds__(REBUILD_WARPS * 32) rebuild_doc_topics(
    const u16* __restrict__ z, const u32* __restrict__ doc_off, u32 num_docs, u32 K,
    u32* __restrict__ scratch, RowEntry* __restrict__ rows, u32* __restrict__ row_nnz,
    const u32* __restrict__ word_of, const u32* __restrict__ top2, RowEntry* __restrict__ pairs) {
    __shared__ u32 tables[REBUILD_WARPS * HASH_SLOTS];
    u32 lane = lane_id();
    u32 warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    u32 num_warps = (gridDim.x * blockDim.x) >> 5;
    u32* table = tables + (threadIdx.x >> 5) * HASH_SLOTS;
    u32* h = scratch + (u64)warp * K;
    u32 lt = (1u << lane) - 1;
    for (u32 i = lane; i < HASH_SLOTS; i += 32) table[i] = HASH_EMPTY;
    __syncwarp();
    for (u32 d = warp; d < num_docs; d += num_warps) {
        u32 a = doc_off[d], b = doc_off[d + 1];
        u32 len = b - a;
        bool hashed = 2 * len <= HASH_SLOTS;
        // Table of 2^bits slots, at least twice the document (load factor <= 1/2).
        u32 bits = 5;
        while ((1u << bits) < 2 * len) bits++;
        u32 mask = (1u << bits) - 1;
        if (hashed) {
            for (u32 i = a + lane; i < b; i += 32) {
                u32 k = z[i];
                u32 slot = (k * 0x9E3779B1u) >> (32 - bits);
                for (;;) {
                    u32 cur = atomicCAS(&table[slot], HASH_EMPTY, (k << 16) | 1u);
                    if (cur == HASH_EMPTY) break;
                    if ((cur >> 16) == k) { atomicAdd(&table[slot], 1u); break; }
                    slot = (slot + 1) & mask;
                }
            }
        } else {
            for (u32 i = a + lane; i < b; i += 32) {
                h[z[i]] = 0;
                // The pairs read K1's and K2's entries whether or not the document holds them.
                if (pairs) {
                    u32 t2 = top2[word_of[i]];
                    h[t2 & 0xffffu] = 0;
                    h[t2 >> 16] = 0;
                }
            }
            __syncwarp();
            for (u32 i = a + lane; i < b; i += 32) atomicAdd(&h[z[i]], 1u);
        }
        __syncwarp();
        if (pairs) {
            for (u32 i = a + lane; i < b; i += 32) {
                u32 t2 = top2[word_of[i]];
                u32 k1 = t2 & 0xffffu, k2 = t2 >> 16;
                u32 c1 = hashed ? hash_count(table, k1, bits, mask) : h[k1];
                u32 c2 = k2 == k1 ? 0u : hashed ? hash_count(table, k2, bits, mask) : h[k2];
                pairs[i] = ((RowEntry)c1 << ROW_SHIFT) | (RowEntry)c2;
            }
            __syncwarp();
        }
        u32 nnz = 0;
        for (u32 base = a; base < b; base += 32) {
            u32 i = base + lane;
            bool valid = i < b;
            u32 k = valid ? z[i] : 0xffffffffu;
            u32 same = __match_any_sync(FULL, k);
            bool leader = valid && (__ffs(same) - 1) == (int)lane;
            u32 c = 0;
            if (leader) c = hashed ? hash_claim(table, k, bits, mask) : atomicExch(&h[k], 0u);
            bool claim = c > 0;
            u32 ballot = __ballot_sync(FULL, claim);
            if (claim) {
                u32 pos = a + nnz + __popc(ballot & lt);
                rows[pos] = ((RowEntry)k << ROW_SHIFT) | (RowEntry)c;
            }
            nnz += __popc(ballot);
            __syncwarp();
        }
        if (lane == 0) row_nnz[d] = nnz;
        if (hashed) {
            for (u32 i = lane; i <= mask; i += 32) table[i] = HASH_EMPTY;
            __syncwarp();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The 32-ary sampling tree (SaberLDA §3.2.4) over p*(k) = (B_vk + beta) * inv_norm[k] in shared
// memory: level 0 holds the K leaves (padded to a multiple of 32 with zeros), each level above
// holds the sums of 32 entries of the level below, up to a single root. Built once per block (the
// block's tokens all belong to one word), reused by every warp (p*(k) reuse, CuLDA §6.1.3).
//
// Level l has pad32(ceil(K / 32^l)) entries, the levels stored one after another from the leaves.
// The offsets live in scalars (not an array indexed at run time, which the compiler puts in local
// memory).
struct Tree {
    float* base;
    u32 off1, off2, off3;  // offsets of levels 1..3 (level 0 at 0)
    u32 K;
    int top;               // index of the root level
};

__device__ __forceinline__ u32 pad32(u32 x) { return (x + 31) & ~31u; }

__device__ __forceinline__ u32 level_size(u32 K, int l) {
    u32 shift = 5 * (u32)l;
    return pad32((K + (1u << shift) - 1) >> shift);
}

__device__ __forceinline__ u32 level_off(const Tree& t, int l) {
    return l == 0 ? 0 : l == 1 ? t.off1 : l == 2 ? t.off2 : t.off3;
}

// Same arithmetic as `tree_floats` in engine.rs: at most 4 levels.
__device__ __forceinline__ void tree_layout(Tree& t, float* smem, u32 K) {
    u32 s0 = level_size(K, 0), s1 = level_size(K, 1), s2 = level_size(K, 2);
    t.base = smem;
    t.K = K;
    t.off1 = s0;
    t.off2 = s0 + s1;
    t.off3 = s0 + s1 + s2;
    t.top = s0 <= 32 ? 0 : s1 <= 32 ? 1 : s2 <= 32 ? 2 : 3;
}

// Descends from the root: y in [0, total). Every level is a warp-wide scan of 32 entries and a
// ballot for the first non-zero entry whose prefix passes y. Only non-zero entries may be chosen:
// the scan adds in a tree order, so a zero entry's prefix can round above its left neighbour's.
// Rounding can leave y at or past the last prefix: then the last non-zero entry is taken.
__device__ __forceinline__ u32 tree_sample(const Tree& t, float y) {
    u32 lane = lane_id();
    u32 node = 0;
    for (int l = t.top; l >= 0; l--) {
        float v = t.base[level_off(t, l) + node * 32 + lane];
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

// p1's draw over a row in global memory, for rows longer than the registers hold (see RowRegs):
// the first non-zero entry count·p*(topic) whose running sum passes x, leaving out topic `skip`
// (NO_TOPIC: none). Only non-zero entries may be chosen (see tree_sample); if rounding leaves x
// past the end, the last non-zero entry is taken, or `fallback` when there is none.
__device__ __forceinline__ u32 sample_row(const RowEntry* __restrict__ row, u32 nnz,
                                          const float* pstar, float x, u32 skip, u32 fallback) {
    u32 lane = lane_id();
    float carry = 0.0f;
    u32 last = fallback;
    for (u32 i0 = 0; i0 < nnz; i0 += 32) {
        u32 i = i0 + lane;
        RowEntry e = i < nnz ? row[i] : 0;
        u32 t = i < nnz ? entry_topic(e) : skip;
        float w = (i < nnz && t != skip) ? (float)entry_count(e) * pstar[t] : 0.0f;
        float p = warp_inclusive_scan(w) + carry;
        u32 above = __ballot_sync(FULL, p > x && w > 0.0f);
        if (above) return __shfl_sync(FULL, t, __ffs(above) - 1);
        u32 nz = __ballot_sync(FULL, w > 0.0f);
        if (nz) last = __shfl_sync(FULL, t, 31 - __clz(nz));
        carry = __shfl_sync(FULL, p, 31);
    }
    return last;
}

// A document row of up to 32·ROW_REGS non-zeros held in registers, entry r·32 + lane in lane
// `lane`'s slot r: the lane's running sum of weights count·p*(topic) up to and including slot r,
// and the slot's topic (two 16-bit topics per word). Loaded once per (document, work item) with
// all loads in flight at once, then every token of the document in the item draws from
// registers: the sampler's cost per token was the latency of dependent loads and the
// instructions of a warp scan per 32 entries per pass (profiled on an H100: 66% of issue slots
// used at K = 1,024, 20 cycles of memory wait per instruction at K = 10,000). The draw visits the
// entries lane by lane (lane 0's slots, then lane 1's, ...): a fixed order of the row, so the
// draw is still exact and deterministic.
//
// Two widths: a row of at most 32·ROW_HALF non-zeros is loaded and drawn with ROW_HALF slots,
// a longer one with ROW_REGS (one uniform branch per row; each width a fully unrolled loop, so a
// row's loads and shared-memory reads stay in flight together). Nsight Compute's source view of
// the sampler at K = 10,000 (H100, iteration 30) showed why: rows average about 100 non-zeros at
// K = 1,000 and at K = 10,000 alike (the loads of slots 4-7 of the 8 were predicated off in
// nearly every lane), yet the register row took 40% of the sampler's instructions at 8 slots
// against 26% at 4, and the owner lane's walk over its slots 20% (one lane active).
//
// A third, middle width (ROW_MID) for rows just past the narrow one: esca keeps each token's own
// count in its document's row, so a topic a document holds once stays, and its rows grow as it
// runs (at K = 10,000 its iterations 76-100 ran 10% slower than 26-50, on an H100). Drawing
// rows of 129-160 non-zeros at 5 slots instead of 8 took esca's iterations 51-100 from 2,637M
// to 2,786M tokens/s there; 6 slots did the same. cgs, whose rows do not grow, stays within 1%
// either way (2,336M against 2,315M with 5 slots).
#ifndef ROW_REGS
#define ROW_REGS 4
#endif
#ifndef ROW_SPLIT
#define ROW_SPLIT 1
#endif
// The narrow width: half of ROW_REGS unless ROW_NARROW (1..ROW_REGS) names it.
#ifdef ROW_NARROW
#define ROW_HALF (ROW_SPLIT ? ROW_NARROW : ROW_REGS)
#else
#define ROW_HALF (ROW_SPLIT && ROW_REGS >= 2 ? ROW_REGS / 2 : ROW_REGS)
#endif
// Whether the sampler fetches the next document's row ahead (see the sampler; the engine sets
// it and ROW_SPLIT by K, engine.rs `sampler_shape`).
#ifndef ROW_PREFETCH
#define ROW_PREFETCH 1
#endif
// An optional middle width between ROW_HALF and ROW_REGS (0: none): rows of up to 32·ROW_MID
// non-zeros are loaded and drawn with ROW_MID slots.
#ifndef ROW_MID
#define ROW_MID 0
#endif
#define ROW_MIDW (ROW_MID > ROW_HALF && ROW_MID < ROW_REGS ? ROW_MID : ROW_HALF)
// Slots of the row fetched ahead: rows of up to 32·ROW_PRE non-zeros.
#define ROW_PRE ROW_MIDW

struct RowRegs {
    float cum[ROW_REGS];
    u32 tp[(ROW_REGS + 1) / 2];
    u32 nnz;
};

// The width a row of nnz non-zeros is held at (the same in every lane of the warp):
// 0 ROW_HALF slots, 1 ROW_MIDW, 2 ROW_REGS.
__device__ __forceinline__ int row_class(u32 nnz) {
    return nnz <= 32u * ROW_HALF ? 0 : (ROW_MIDW > ROW_HALF && nnz <= 32u * ROW_MIDW) ? 1 : 2;
}

// F<width>(args) at the width of a row of nnz non-zeros.
#define ROW_AT_WIDTH(nnz, F, ...)                                  \
    (row_class(nnz) == 0   ? F<ROW_HALF>(__VA_ARGS__)              \
     : row_class(nnz) == 1 ? F<ROW_MIDW>(__VA_ARGS__)              \
                           : F<ROW_REGS>(__VA_ARGS__))

// This lane's slots that hold an entry: r·32 + lane < nnz.
__device__ __forceinline__ u32 row_mine(const RowRegs& row) {
    u32 lane = lane_id();
    return row.nnz > lane ? (row.nnz - lane + 31) >> 5 : 0u;
}

// Topic of slot r (r < R), r known only at run time: a tree of selects on the bits of r / 2 over
// the words (a compare per word is recognized as indexing and puts the whole row in local
// memory).
template <int R>
__device__ __forceinline__ u32 row_topic_of(const RowRegs& row, u32 r) {
    constexpr int W = (R + 1) / 2;
    u32 sel[W];
#pragma unroll
    for (int q = 0; q < W; q++) sel[q] = row.tp[q];
    u32 h = r >> 1;
#pragma unroll
    for (int b = 0; (1 << b) < W; b++) {
        bool hi = (h >> b) & 1u;
        int n = (W + (1 << b) - 1) >> b;  // entries left at this level
#pragma unroll
        for (int q = 0; q < (n + 1) / 2; q++) {
            u32 lo_v = sel[2 * q];
            u32 hi_v = 2 * q + 1 < n ? sel[2 * q + 1] : lo_v;
            sel[q] = hi ? hi_v : lo_v;
        }
    }
    return (sel[0] >> ((r & 1) * 16)) & 0xffffu;
}

// Issues the loads of the row's first R slots (entries past nnz are 0).
template <int R>
__device__ __forceinline__ void row_fetch_n(RowEntry (&e)[R], const RowEntry* __restrict__ entries, u32 nnz) {
    u32 lane = lane_id();
#pragma unroll
    for (int r = 0; r < R; r++) {
        u32 i = r * 32 + lane;
        e[r] = i < nnz ? entries[i] : 0;
    }
}

// Topic `skip`'s entry in this lane's slots, found while the row is filled: its count (0 when
// this lane does not hold it), the lane's running sum before it and its span (the same floats
// row_find_n reads back from the sums afterwards).
struct RowHit {
    u32 count;
    float before;
    float span;
};

// Fills the register row from its fetched entries (nnz <= 32·R) and returns this lane's sum of
// weights, taken in slot order. Every one of the R slots is computed, empty or not (a uniform
// branch per slot serialized the slots' shared-memory loads: 8% slower at K = 1,000 and 10,000
// on an H100). With `skip` a topic (fcgs: the token's old topic), `hit` gets its entry on the way
// (NO_TOPIC matches nothing, and esca's kernel passes it as a constant, so the compare folds).
template <int R, int N>
__device__ __forceinline__ float row_fill_n(RowRegs& row, const RowEntry (&e)[N], const float* pstar,
                                            u32 skip, RowHit& hit) {
    static_assert(R <= N, "a fill reads at most the fetched slots");
    u32 t[R], c[R];
#pragma unroll
    for (int r = 0; r < R; r++) {
        t[r] = entry_topic(e[r]);
        c[r] = entry_count(e[r]);
    }
    float acc = 0.0f;
#pragma unroll
    for (int r = 0; r < R; r++) {
        float before = acc;
        acc += c[r] ? (float)c[r] * pstar[t[r]] : 0.0f;
        row.cum[r] = acc;
        if ((r & 1) == 0) row.tp[r >> 1] = t[r];
        else row.tp[r >> 1] |= t[r] << 16;
        if (c[r] && t[r] == skip) {
            hit.count = c[r];
            hit.before = before;
            hit.span = acc - before;
        }
    }
    return acc;
}

template <int R>
__device__ __forceinline__ float row_load_n(RowRegs& row, const RowEntry* __restrict__ entries, u32 nnz,
                                            const float* pstar, u32 skip, RowHit& hit) {
    RowEntry e[R];
    row_fetch_n<R>(e, entries, nnz);
    return row_fill_n<R, R>(row, e, pstar, skip, hit);
}

// Loads the row of row.nnz entries (at most 32·ROW_REGS) at the width it needs.
__device__ __forceinline__ float row_load(RowRegs& row, const RowEntry* __restrict__ entries, const float* pstar,
                                          u32 skip, RowHit& hit) {
    return ROW_AT_WIDTH(row.nnz, row_load_n, row, entries, row.nnz, pstar, skip, hit);
}

// Topic `skip` in this lane's slots: its count (0 when this lane does not hold it), its weight
// (the very product row_load added) and its slot (ROW_REGS when absent). The count is read back
// from the running sums: the slot's weight count·p*(skip) over p*(skip), rounded. Also where its
// span lies in the lane's running sums: `before` (the sum before its slot) and `span` (its width
// as the sums hold it).
template <int R>
__device__ __forceinline__ u32 row_find_n(const RowRegs& row, u32 skip, const float* pstar, float& weight,
                                          u32& slot, float& before, float& span) {
    u32 mine = row_mine(row);
    float w = 0.0f, b = 0.0f;
    slot = ROW_REGS;
#pragma unroll
    for (int r = 0; r < R; r++) {
        u32 t = (row.tp[r >> 1] >> ((r & 1) * 16)) & 0xffffu;
        if ((u32)r < mine && t == skip) {
            b = r == 0 ? 0.0f : row.cum[r - 1];
            w = r == 0 ? row.cum[0] : row.cum[r] - row.cum[r - 1];
            slot = r;
        }
    }
    before = b;
    span = w;
    if (slot == ROW_REGS) {
        weight = 0.0f;
        return 0;
    }
    float p = pstar[skip];
    u32 count = max(1u, (u32)rintf(w / p));
    weight = (float)count * p;
    return count;
}

__device__ __forceinline__ u32 row_find(const RowRegs& row, u32 skip, const float* pstar, float& weight,
                                        u32& slot, float& before, float& span) {
    return ROW_AT_WIDTH(row.nnz, row_find_n, row, skip, pstar, weight, slot, before, span);
}

// The owner lane's pick among its R slots: the first slot (topic `skip`'s slot `skip_slot` left
// out, its weight `skip_w` taken off the running sums after it) whose running sum passes y. The
// running sums only grow, so that slot's index is the number of slots whose sums do not pass y:
// a count, with no loop-carried branch. If rounding leaves y past every slot, the last one.
template <int R>
__device__ __forceinline__ u32 row_pick_n(const RowRegs& row, float y, u32 skip_slot, float skip_w) {
    u32 mine = min((u32)R, row_mine(row));
    u32 passed = 0;
#pragma unroll
    for (int r = 0; r < R; r++) {
        float c = (u32)r > skip_slot ? row.cum[r] - skip_w : row.cum[r];
        passed += ((u32)r < mine && (u32)r != skip_slot && c <= y) ? 1u : 0u;
    }
    // The passed-th slot other than skip_slot, at most the last such slot.
    u32 r = passed + (passed >= skip_slot ? 1u : 0u);
    u32 last = mine - 1 - (skip_slot == mine - 1 ? 1u : 0u);
    return row_topic_of<R>(row, min(r, last));
}

// The draw from a register row: x in [0, s) where `scan` is the warp's inclusive scan of the lanes'
// sums `lane_sum` (leaving out topic `skip`, which this lane holds in slot `skip_slot` with weight
// `skip_w`, or not at all: skip_slot == ROW_REGS, skip_w == 0). The lane whose prefix passes x
// (if rounding leaves x past them all, the last lane with weight) picks among its slots.
__device__ __forceinline__ u32 row_draw(const RowRegs& row, float scan, float lane_sum, float x,
                                        u32 skip_slot, float skip_w, u32 fallback) {
    u32 lane = lane_id();
    u32 above = __ballot_sync(FULL, scan > x && lane_sum > 0.0f);
    u32 nz = __ballot_sync(FULL, lane_sum > 0.0f);
    if (!nz) return fallback;
    u32 owner = above ? (__ffs(above) - 1) : (31 - __clz(nz));
    float before = __shfl_sync(FULL, scan - lane_sum, owner);
    u32 pick = 0;
    if (lane == owner) {
        float y = x - before;
        pick = ROW_AT_WIDTH(row.nnz, row_pick_n, row, y, skip_slot, skip_w);
    }
    return __shfl_sync(FULL, pick, owner);
}

// ---------------------------------------------------------------------------------------------
// The sampler: one block per item (the tokens of one word, or a slice of a frequent word's), one
// warp per token (SaberLDA Alg. 2 / CuLDA §6.1).
//
//   p(k) ∝ (A_dk + α) p*(k)  =  A_dk p*(k)          [p1: sparse, the document's non-zeros]
//                             + α p*(k)            [p2: dense, the word's tree]
//
// esca (EXCLUDE == 0): every count is the previous iteration's (SaberLDA's ESCA).
// fcgs (EXCLUDE == 1; cgs on the GPU too): the collapsed Gibbs conditional with the token's own
// assignment removed from A, B and n (the −dn counts of Eq. 1), the other tokens' counts from the previous
// iteration (CuLDA_CGS's sampler reads stale counts without removing the token: its conditional is
// biased towards the token's old topic). Drawn exactly: the old topic k₀ gets weight
// p'(k₀) = (A−1+α)(B−1+β)/(n−1+Vβ) and the other topics keep theirs; x < p'(k₀) picks k₀, else
// the rest is drawn from p with k₀'s entries left out: p1 skips k₀'s span in the document row's
// running sums (a draw past its start moves up by its width, so the row needs no second scan;
// CGS_GAP), p2 redraws from the tree while it lands on k₀, with fresh Philox blocks. (The CPU's
// fcgs corrects ESCA's draw by rejection instead; on the GPU that form was slower, at α = 50/K a
// topic a document holds once is rejected nearly every time: BENCHMARKS.md, "fcgs".)
//
// A warp prepares 32 tokens at once, one per lane (document, row offset and length, Philox
// numbers, and for cgs the old topic and its counts), so those loads overlap; then it samples
// them one after another.
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
// fcgs's draw from p1 without k₀: skip k₀'s span in the row's running sums (1), or scan the
// row again without it (0, the earlier form; an A/B switch through TOPOS_GPU_DEFINES).
#ifndef CGS_GAP
#define CGS_GAP 1
#endif
// fcgs's p*(k₀) without the token from the tree's leaf (1) or from the counts (0); see below.
#ifndef CGS_PEX_LEAF
#define CGS_PEX_LEAF 1
#endif
// fcgs's old topic found in its document's row while the row is filled (1), or by a search of
// the filled row (0); rows reused by a later token of the same document are searched either way.
#ifndef FCGS_FILL_FIND
#define FCGS_FILL_FIND 1
#endif
// Tests only: every document row of esca's, fcgs's and ezlda's sampler (sample_body; not mh's)
// read from memory, as rows too long for registers are, so that the conditional tests' short
// documents cover that path too (bench/gpu.sh check).
#ifndef ROWS_IN_MEMORY
#define ROWS_IN_MEMORY 0
#endif
// Groups of 32 leaves whose loads a warp keeps in flight when it fills the tree (the engine
// sets 8 above K = 2,048: +1% at K = 10,000; 4 below, where 8 cost 1%).
#ifndef LEAF_BATCH
#define LEAF_BATCH 4
#endif
// EXCLUDE: 0 for esca, 1 for fcgs and cgs (a template argument: each sampler's kernel carries
// only its own path, measured on an H100 in BENCHMARKS.md, "fcgs on the GPU").
//
// THREE (ezlda, with EXCLUDE): ezLDA's three-branch sampling (thesis §1.3.2, Eq. 1.6-1.10) on
// fcgs's exact target. Per word, K1 (top2, the largest p*) is singled out: its leaf is set to 0
// before the tree's levels are summed, so the tree and the rows' running sums hold the other
// topics only (Ŵ'[v] of Eq. 1.6), and K1's whole weight without the token,
//
//   M = p*'(K1) · (A'_dK1 + α)        (primes: the token's own assignment removed),
//
// is a third branch: x = u·(M + S' + Q') < M picks K1, where S' and Q' are fcgs's row and tree
// masses without K1. Before the row is read, S' is bounded (Eq. 1.9-1.10, g = 2) by
//
//   S_est = a2 · A'_dK2 + a3 · (L_d − 1 − A'_dK1 − A'_dK2)   >=   S' = Σ_{k≠K1} p*'(k) A'_dk,
//
// with a2 = p*(K2) and a3 >= every leaf outside K1 and K2 (word_top2; p*' <= p*: esca/cpu.rs), A_dK1
// and A_dK2 from the rebuild's pairs, L_d the document's length. Q' is exact without the row:
// α·(tree total) corrected for the token's own topic. If u·(M + S_est + Q') < M, then also
// u·(M + S' + Q') < M with the same u: the token takes K1 without its row being read or its
// final draw made ("skipped construction"); a token drawn in full that lands in M is a "skipped
// final draw". Either way the draw is the exact one: nothing is dropped on a token's history,
// the naive scheme §1.3.4 shows to fail. Skipped tokens are written by their own lanes at once,
// and the warp's serial loop visits only the others.
// The sampler's parameters, shared by its body and its entry points (the engine passes them in
// this order, `sweep_view` in engine.rs; sample_ezlda adds three).
#define SAMPLE_PARAMS \
    const uint4* __restrict__ items, u32 num_items, \
    const u32* __restrict__ token_doc, const u32* __restrict__ token_src, \
    const u32* __restrict__ doc_off, const RowEntry* __restrict__ rows, const u32* __restrict__ row_nnz, \
    const u32* __restrict__ B, const u64* __restrict__ word_off, const u32* __restrict__ word_slots, \
    const u64* __restrict__ n, const float* __restrict__ inv_norm, \
    u32 K, float alpha, float beta, double v_beta, \
    u16* __restrict__ z, u32* __restrict__ Bn, \
    u64 token_base, u32 seed_lo, u32 seed_hi, u32 iteration
#define SAMPLE_ARGS \
    items, num_items, token_doc, token_src, doc_off, rows, row_nnz, B, word_off, word_slots, n, \
    inv_norm, K, alpha, beta, v_beta, z, Bn, token_base, seed_lo, seed_hi, iteration
// ezlda's bound is raised by 1e-4 over the float rounding of the exact path's sums.
// EZLDA_BOUND_HALVED = 1 halves S_est, which is then no bound: the control run of the
// conditional test (BENCHMARKS.md, "ezlda on the GPU"), which must fail.
#ifndef EZLDA_BOUND_HALVED
#define EZLDA_BOUND_HALVED 0
#endif
// Fills the block's tree with word v's leaves p*(k) = (B_vk + beta) * inv_norm[k] from its row
// (Brow, wslots: dense or hashed), topic `left_out`'s leaf set to 0 (ezlda's K1; NO_TOPIC: none),
// sums its levels and returns the total (every warp gets it). Ends with the block synchronized.
__device__ __forceinline__ float build_word_tree(const Tree& tree, const u32* __restrict__ Brow, u32 wslots,
                                                 const float* __restrict__ inv_norm, u32 K, float beta,
                                                 u32 left_out, u32 warp, u32 lane) {
    // Leaves: p*(k); zero padding. A hashed row: beta * inv_norm[k] everywhere, then its
    // non-zero counts scattered over them (the same float arithmetic as a dense row's).
    // Each warp fills groups of 32 leaves, LEAF_BATCH groups' loads in flight at once (the
    // leaves are O(K) per item: at K = 10,000 forty rounds of dependent loads per thread).
    u32 groups = level_size(K, 0) / 32;
    bool dense = wslots >= K;
    for (u32 g0 = warp; g0 < groups; g0 += WARPS_PER_BLOCK * LEAF_BATCH) {
        u32 b[LEAF_BATCH];
        float inv[LEAF_BATCH];
#pragma unroll
        for (int j = 0; j < LEAF_BATCH; j++) {
            u32 k = (g0 + j * WARPS_PER_BLOCK) * 32 + lane;
            b[j] = dense && k < K ? Brow[k] : 0u;
            inv[j] = k < K ? inv_norm[k] : 0.0f;
        }
#pragma unroll
        for (int j = 0; j < LEAF_BATCH; j++) {
            u32 g = g0 + j * WARPS_PER_BLOCK, k = g * 32 + lane;
            if (g < groups) tree.base[k] = k < K && k != left_out ? ((float)b[j] + beta) * inv[j] : 0.0f;
        }
    }
    if (!dense) {
        __syncthreads();
        for (u32 i = threadIdx.x; i < wslots; i += blockDim.x) {
            u32 c = Brow[i];
            if (c) {
                u32 k = (c >> 16) - 1;
                if (k != left_out) tree.base[k] = ((float)(c & 0xffffu) + beta) * inv_norm[k];
            }
        }
    }
    __syncthreads();
    for (int l = 1; l <= tree.top; l++) {
        u32 groups = level_size(K, l), below_size = level_size(K, l - 1);
        const float* below = tree.base + level_off(tree, l - 1);
        float* here = tree.base + level_off(tree, l);
        for (u32 g = warp; g < groups; g += WARPS_PER_BLOCK) {
            u32 src = g * 32 + lane;
            float x = src < below_size ? below[src] : 0.0f;
            x = warp_sum(x);
            if (lane == 0) here[g] = x;
        }
        __syncthreads();
    }
    // The root level holds up to 32 entries: their sum is the total.
    u32 root_size = level_size(K, tree.top);
    return warp_sum(lane < root_size ? tree.base[level_off(tree, tree.top) + lane] : 0.0f);
}

template <int EXCLUDE, int THREE>
__device__ __forceinline__ void sample_body(
    SAMPLE_PARAMS,
    const u32* __restrict__ top2, const float* __restrict__ top3, const RowEntry* __restrict__ pairs,
    u64* __restrict__ skip_stats) {
    static_assert(!THREE || EXCLUDE, "three-branch sampling is built on the exact (fcgs) draw");
    extern __shared__ float smem[];
    Tree tree;
    tree_layout(tree, smem, K);
    u32 lane = lane_id();
    u32 warp = threadIdx.x >> 5;
    // ezlda's tallies, per block in shared memory (registers are what the sampler lacks): tokens
    // that skipped their row (the S' construction) and tokens that took the third branch.
    __shared__ u32 skipped[2];
    if (THREE && threadIdx.x < 2) skipped[threadIdx.x] = 0;

    for (u32 item = blockIdx.x; item < num_items; item += gridDim.x) {
        uint4 it = items[item];
        u32 v = it.x;
        u64 woff = word_off[v];
        u32 wslots = word_slots[v];
        const u32* Brow = B + woff;
        // ezlda: K1 leaves the tree (Ŵ'[v], Eq. 1.6): its leaf stays 0, its mass is the third
        // branch. (NO_TOPIC for the other samplers: nothing is left out.)
        u32 K1 = THREE ? (top2[v] & 0xffffu) : NO_TOPIC;
        float total = build_word_tree(tree, Brow, wslots, inv_norm, K, beta, K1, warp, lane);
        const float* pstar = tree.base;
        float q = alpha * total;

        // This warp's contiguous share of the item's tokens (adjacent tokens of one document
        // share p1, so contiguity lets the warp reuse it).
        u32 per = (it.z + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK;
        u32 e0 = it.y + min(it.z, warp * per);
        u32 e1 = it.y + min(it.z, (warp + 1) * per);
        u32 cached_doc = 0xffffffffu;
        u32 ra = 0;
        bool in_regs = false;
        RowRegs row;
        RowEntry pre[ROW_PRE];  // the next document's row, fetched ahead
        float s = 0.0f, lane_sum = 0.0f, scan = 0.0f;
        for (u32 base = e0; base < e1; base += 32) {
            // Lane j prepares token base+j.
            u32 my_e = base + lane;
            u32 my_doc = 0xffffffffu, my_src = 0, my_ra = 0, my_nnz = 0, my_k0 = 0;
            float my_pex = 0.0f;
            // ezlda: the third branch's mass M, and whether the token skips its row.
            float my_m = 0.0f;
            bool my_skip = false;
            uint4 r = make_uint4(0, 0, 0, 0);
            if (my_e < e1) {
                my_doc = token_doc[my_e];
                my_src = token_src[my_e];
                my_ra = doc_off[my_doc];
                my_nnz = row_nnz[my_doc];
                u64 g = token_base + my_src;
                r = philox(make_uint4((u32)g, (u32)(g >> 32), iteration, STREAM_TRAIN << 24), seed_lo, seed_hi);
                if (EXCLUDE) {
                    my_k0 = z[my_src];
                    // p*(k₀) without this token: (B−1+β)/(n−1+Vβ). With CGS_PEX_LEAF, from the
                    // tree's leaf p*(k₀) = (B+β)·x, x = 1/(n+Vβ): since n−1+Vβ = (1−x)/x, it is
                    // (p*(k₀) − x)/(1 − x), with no lookup in the word's row and no load of n
                    // (its cancellation costs about 1e-7/β of relative precision; where x is near
                    // 1, a corpus of almost no tokens, the counts are read).
                    // (ezlda: K1's leaf is 0 in the tree; its p* is a1, the same float as the
                    // leaf would hold.)
                    bool own1 = THREE && my_k0 == K1;
                    float a1 = THREE ? ((float)word_count(B, woff, wslots, K, K1) + beta) * inv_norm[K1] : 0.0f;
                    float x0 = inv_norm[my_k0];
                    float leaf0 = own1 ? a1 : tree.base[my_k0];
                    if (CGS_PEX_LEAF && x0 < 0.999f) {
                        my_pex = (leaf0 - x0) / (1.0f - x0);
                    } else {
                        my_pex = ((float)word_count(B, woff, wslots, K, my_k0) - 1.0f + beta) *
                                 (float)(1.0 / ((double)n[my_k0] - 1.0 + v_beta));
                    }
                    if (THREE) {
                        // M and the bound of the comment above sample_body; the token's own
                        // topic is K1's (own1: all of k₀'s weight is M, none is left to fcgs's
                        // own-topic branch) or K2's or another's.
                        RowEntry pair = pairs[my_src];
                        float len = (float)(doc_off[my_doc + 1] - my_ra);
                        u32 K2 = top2[v] >> 16;
                        bool two = K2 != K1;
                        float a2 = two ? tree.base[K2] : 0.0f, a3 = top3[v];
                        float b1 = (float)entry_topic(pair) - (own1 ? 1.0f : 0.0f);
                        float b2 = two ? (float)entry_count(pair) - (my_k0 == K2 ? 1.0f : 0.0f) : 0.0f;
                        float p1 = own1 ? fmaxf(my_pex, 0.0f) : a1;
                        my_m = p1 * (b1 + alpha);
                        float s_est = a2 * b2 + a3 * fmaxf(len - 1.0f - b1 - b2, 0.0f);
                        float q_rest = own1 ? q : alpha * (total - leaf0 + fmaxf(my_pex, 0.0f));
                        if (EZLDA_BOUND_HALVED) s_est *= 0.5f;
                        my_skip = unit_f32(r.x) * (my_m + (s_est + q_rest) * 1.0001f) < my_m;
                        if (own1) my_pex = 0.0f;
                    }
                }
            }
            // ezlda: the tokens that skip take K1 at once, each in its own lane (one count for
            // them all in the word's next row); the serial loop below visits the rest (`todo`).
            u32 skips = THREE ? __ballot_sync(FULL, my_skip) : 0u;
            if (THREE && skips) {
                if (my_skip) z[my_src] = (u16)K1;
                if (lane == 0) {
                    if (Bn) word_add_n(Bn, woff, wslots, K, K1, __popc(skips));
                    atomicAdd(&skipped[0], __popc(skips));
                }
            }
            u32 todo = __ballot_sync(FULL, my_e < e1 && !my_skip);
            // With ROW_PREFETCH, the tokens to visit that start a document (a row to load):
            // lane j's document differs from that of the previous lane to visit (the first:
            // from the row in registers).
            u32 starts = 0;
            if (ROW_PREFETCH) {
                u32 below = todo & ((1u << lane) - 1u);
                u32 prev_doc = __shfl_sync(FULL, my_doc, below ? 31 - __clz(below) : 0);
                starts = __ballot_sync(FULL, ((todo >> lane) & 1u) && my_doc != (below ? prev_doc : cached_doc));
            }
            u32 pre_j = 32;  // the start whose row `pre` holds (32: none)
            for (u32 rest = todo; rest; rest &= rest - 1u) {
                u32 j = __ffs(rest) - 1;
                u32 d = __shfl_sync(FULL, my_doc, j);
                u32 src = __shfl_sync(FULL, my_src, j);
                u32 r0 = __shfl_sync(FULL, r.x, j);
                u32 r1 = __shfl_sync(FULL, r.y, j);
                // fcgs: the token's old topic, looked up in its document's row while the row is
                // filled (FCGS_FILL_FIND), else searched for afterwards.
                u32 k0_tok = EXCLUDE ? __shfl_sync(FULL, my_k0, j) : NO_TOPIC;
                u32 skip_fill = (EXCLUDE && FCGS_FILL_FIND) ? k0_tok : NO_TOPIC;
                RowHit hit = {0u, 0.0f, 0.0f};
                bool fresh = false;
                if (d != cached_doc) {
                    cached_doc = d;
                    ra = __shfl_sync(FULL, my_ra, j);
                    row.nnz = __shfl_sync(FULL, my_nnz, j);
                    u32 rnnz = row.nnz;
                    in_regs = !ROWS_IN_MEMORY && rnnz <= 32 * ROW_REGS;
                    if (in_regs) {
                        if (pre_j == j) {
                            lane_sum = row_class(rnnz) == 0 ? row_fill_n<ROW_HALF>(row, pre, pstar, skip_fill, hit)
                                                            : row_fill_n<ROW_PRE>(row, pre, pstar, skip_fill, hit);
                        } else {
                            lane_sum = row_load(row, rows + ra, pstar, skip_fill, hit);
                        }
                        fresh = true;
                        scan = warp_inclusive_scan(lane_sum);
                        s = __shfl_sync(FULL, scan, 31);
                    } else {
                        float acc = 0.0f;
                        for (u32 i = lane; i < rnnz; i += 32) {
                            RowEntry e = rows[ra + i];
                            acc += (float)entry_count(e) * pstar[entry_topic(e)];
                        }
                        s = warp_sum(acc);
                    }
                    // Issue the loads of the batch's next document's row now, so that they are
                    // in flight while this document's tokens draw (software pipelining: the
                    // first use of a row's entries had 37% of the sampler's stall samples at
                    // K = 10,000, waiting on DRAM; fetching ahead took esca from 2,560M to
                    // 2,761M tokens/s there). Rows of up to 32·ROW_HALF entries. Off at small K
                    // (ROW_PREFETCH = 0), where rows mostly sit in L2 and the registers are
                    // short: 7% slower at K = 1,000.
                    u32 later = starts & ~((2u << j) - 1u);
                    pre_j = 32;
                    if (later) {
                        u32 j2 = __ffs(later) - 1;
                        u32 n2 = __shfl_sync(FULL, my_nnz, j2);
                        u32 a2 = __shfl_sync(FULL, my_ra, j2);
                        if (n2 <= 32u * ROW_PRE) {
                            row_fetch_n<ROW_PRE>(pre, rows + a2, n2);
                            pre_j = j2;
                        }
                    }
                }
                u32 k;
                if (!EXCLUDE) {
                    float x = unit_f32(r0) * (s + q);
                    if (x >= s) {
                        k = tree_sample(tree, unit_f32(r1) * total);
                    } else if (in_regs) {
                        k = row_draw(row, scan, lane_sum, x, ROW_REGS, 0.0f, 0);
                    } else {
                        k = sample_row(rows + ra, row.nnz, pstar, x, NO_TOPIC, 0);
                    }
                } else {
                    // The token's own assignment and its counts.
                    u32 k0 = k0_tok;
                    float pstar_ex = __shfl_sync(FULL, my_pex, j);
                    float p0 = pstar[k0];
                    float a0 = 0.0f, s_ex, sum_ex = 0.0f, scan_ex = 0.0f;
                    float w0 = 0.0f;
                    u32 slot0 = ROW_REGS;
                    // k₀'s span in the row's running sums, [gap_lo, gap_lo + gap_w): with
                    // CGS_GAP a draw from p1 without k₀ skips over it (x past gap_lo moves up by
                    // gap_w), so the row's sums need no second scan.
                    float gap_lo = 0.0f, gap_w = 0.0f;
                    if (in_regs) {
                        float before, span;
                        u32 c0;
                        if (CGS_GAP && FCGS_FILL_FIND && fresh) {
                            c0 = hit.count;
                            before = hit.before;
                            span = hit.span;
                        } else {
                            c0 = row_find(row, k0, pstar, w0, slot0, before, span);
                        }
                        u32 holder = __ballot_sync(FULL, c0 != 0);
                        if (CGS_GAP) {
                            if (holder) {
                                u32 h = __ffs(holder) - 1;
                                a0 = (float)__shfl_sync(FULL, c0, h);
                                gap_lo = __shfl_sync(FULL, scan - lane_sum + before, h);
                                gap_w = __shfl_sync(FULL, span, h);
                            }
                            s_ex = fmaxf(s - gap_w, 0.0f);
                        } else {
                            // k₀'s weight is the very product row_load added: the lane's sum
                            // without it is 0 when it was the lane's only entry.
                            sum_ex = lane_sum - w0;
                            scan_ex = warp_inclusive_scan(sum_ex);
                            s_ex = __shfl_sync(FULL, scan_ex, 31);
                            if (holder) a0 = (float)__shfl_sync(FULL, c0, __ffs(holder) - 1);
                        }
                    } else {
                        for (u32 i0 = 0; i0 < row.nnz; i0 += 32) {
                            u32 i = i0 + lane;
                            RowEntry e = i < row.nnz ? rows[ra + i] : 0;
                            u32 hit = __ballot_sync(FULL, i < row.nnz && entry_topic(e) == k0);
                            if (hit) {
                                a0 = (float)__shfl_sync(FULL, entry_count(e), __ffs(hit) - 1);
                                break;
                            }
                        }
                        s_ex = fmaxf(s - a0 * p0, 0.0f);
                    }
                    float w_old = (a0 - 1.0f + alpha) * fmaxf(pstar_ex, 0.0f);
                    float q_ex = fmaxf(q - alpha * p0, 0.0f);
                    float m = THREE ? __shfl_sync(FULL, my_m, j) : 0.0f;
                    float x = unit_f32(r0) * (m + w_old + s_ex + q_ex);
                    if (THREE && x < m) {
                        k = K1;
                        if (lane == 0) atomicAdd(&skipped[1], 1u);
                    } else if ((x -= m) < w_old) {
                        k = k0;
                    } else if ((x -= w_old) < s_ex) {
                        if (!in_regs) {
                            k = sample_row(rows + ra, row.nnz, pstar, x, k0, k0);
                        } else if (CGS_GAP) {
                            k = row_draw(row, scan, lane_sum, x < gap_lo ? x : x + gap_w, ROW_REGS, 0.0f, 0);
                            // Rounding at the gap's upper edge can land on k₀ itself (an event of
                            // float-rounding probability): the next topic of the row is taken.
                            if (k == k0) k = row_draw(row, scan, lane_sum, nextafterf(gap_lo + gap_w, __int_as_float(0x7f800000)), ROW_REGS, 0.0f, 0);
                        } else {
                            k = row_draw(row, scan_ex, sum_ex, x, slot0, w0, k0);
                        }
                    } else {
                        // p2 without k0: redraw while the tree lands on k0 (fresh blocks of the
                        // token's stream; bounded, then k0 is kept).
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
                    if (Bn) word_add(Bn, woff, wslots, K, k);
                }
            }
        }
        __syncthreads();
    }
    if (THREE && threadIdx.x == 0) {
        atomicAdd(&skip_stats[0], (u64)skipped[0]);
        atomicAdd(&skip_stats[1], (u64)skipped[0] + (u64)skipped[1]);
    }
}

// The kernels' entry points (samplers/esca/gpu.rs; samplers/fcgs/gpu.rs, which cgs shares;
// samplers/ezlda/gpu.rs; mh's `sample_mh` is below).
extern "C" __global__ void __launch_bounds__(WARPS_PER_BLOCK * 32, MIN_BLOCKS) sample_esca(
    SAMPLE_PARAMS) {
    sample_body<0, 0>(SAMPLE_ARGS, nullptr, nullptr, nullptr, nullptr);
}
extern "C" __global__ void __launch_bounds__(WARPS_PER_BLOCK * 32, MIN_BLOCKS) sample_fcgs(
    SAMPLE_PARAMS) {
    sample_body<1, 0>(SAMPLE_ARGS, nullptr, nullptr, nullptr, nullptr);
}
extern "C" __global__ void __launch_bounds__(WARPS_PER_BLOCK * 32, MIN_BLOCKS) sample_ezlda(
    SAMPLE_PARAMS,
    const u32* __restrict__ top2, const float* __restrict__ top3, const RowEntry* __restrict__ pairs,
    u64* __restrict__ skip_stats) {
    sample_body<1, 1>(SAMPLE_ARGS, top2, top3, pairs, skip_stats);
}

// ---------------------------------------------------------------------------------------------
// mh (samplers/mh/gpu.rs): mhLDA's Metropolis-Hastings sampler (thesis ch. 2, §2.2.2-2.2.3,
// Eq. 2.1-2.2, after LightLDA and WarpLDA), the GPU twin of samplers/mh/cpu.rs. The target of a
// token of word w in document d with old topic c is fcgs's conditional (the token's own assignment
// removed, every other count the previous iteration's):
//
//   p(k) ∝ (A'_dk + α) p*'(k),   p*'(k) = (B'_wk + β)/(n'_k + Vβ),   X'_k = X_k − [k = c].
//
// Each token runs a chain from c (mhLDA: the previous iteration's topic), `steps` pairs of an
// independence proposal each (Eq. 2.1), drawn from the frozen counts (own assignment included):
//
//   word proposal  q_w(k) ∝ p*(k) = (B_wk + β)/(n_k + Vβ)   (LightLDA's word proposal: a draw
//                  from the word's 32-ary tree, the same leaves as fcgs's p2, built once per
//                  work item in shared memory; no alias table is built)
//   doc proposal   q_d(k) ∝ A_dk + α: with probability L_d/(L_d + Kα) the topic of a uniformly
//                  random token of the document (WarpLDA), else a uniform topic (α is symmetric
//                  on the GPU).
//
// A proposal k from the state s is accepted with min(1, p(k) q(s) / (p(s) q(k))) (an independence
// sampler: q does not depend on s), i.e. with min(1, f(k)/f(s)) for f = p/q:
//
//   word:  h(k) = p(k)/q_w(k) = (A'_dk + α) · p*'(k)/p*(k)
//   doc:   g(k) = p(k)/q_d(k) = p*'(k) · (A'_dk + α)/(A_dk + α)
//
// Away from c the primes vanish: h(k) = A_dk + α and g(k) = p*(k), so
//
//   r^word = (A_dk + α)/(A_ds + α)                          (Eq. 2.2's r^word with its
//                                                            (n_s + Vβ)/(n_k + Vβ) cancelled by
//                                                            the proposal's own 1/(n_k + Vβ))
//   r^doc  = (B_wk + β)/(B_ws + β) · (n_s + Vβ)/(n_k + Vβ)  (Eq. 2.2's r^doc as printed),
//
// and at c, h(c) = (A_dc − 1 + α) p*'(c)/p*(c) and g(c) = p*'(c) (A_dc − 1 + α)/(A_dc + α): the
// removed count enters the target and not the proposal. Each step leaves p invariant (tests/gpu.rs
// checks it as tests/samplers.rs does the CPU's: chains started from exact draws of p end on p),
// so the chain targets the exact conditional; with finitely many steps the draw is approximate.
// mhLDA's shortcut (§2.2.3) holds by construction: a proposal of the current topic is accepted
// with no lookup and no acceptance test. MH_OWN_KEPT (the `own_kept` argument, tests only) is
// the control: Eq. (2.2) for the counts with the token's own assignment kept (WarpLDA's
// simplification), h(c) = A_dc + α and g(c) = p*(c), whose chain targets another distribution.
//
// A_dk, which r^word (and g at c) needs: from the document's row that the rebuild left in the
// chunk's `rows` (sparse, at most min(K, L_d) entries, frozen for the sweep), not from a dense
// per-document table nor from a count over the document's tokens. The thesis handles short and
// long documents apart (short: count over the document's tokens; long: a table); here a row of
// at most 32·ROW_REGS non-zeros ("short": every row at K <= 32·ROW_REGS) is loaded into the
// warp's registers once per run of the document's tokens, and then a lookup of A_dk is ROW_REGS
// compares a lane and one ballot, and the document proposal one ballot and a walk of one lane's
// slots; a longer row ("long") is read from global memory 32 entries a load at each use (rows
// of the engine are what every GPU sampler already rebuilds; a dense K-entry table per long
// document would cost K words a document, and a count over the tokens L_d loads a lookup).
// The "random token of the document" is drawn from the row as well: the assignments of the
// chunk are overwritten as the sweep goes (z holds old and new topics at once), while the row
// is frozen; a position u uniform in [0, L_d) taken through the row's running counts is a topic
// of probability A_dk/L_d, the same law as the frozen topic of token u (not the same map of
// positions to topics, so the GPU's chain is not the CPU's token for token).
//
// Layout and determinism as the other samplers: one block per work item (the word's tree shared
// by its warps), each warp a contiguous share of the item's tokens, prepared 32 at a time (one
// per lane) and then run one after another by the whole warp (the tree draw and the row's
// lookups are warp-wide). Step t of token g uses Philox block (g, iteration, STREAM_TRAIN << 24
// | t): x word proposal, y its acceptance, z document proposal, w its acceptance. Every value a
// token reads is frozen or its own, in integer counts or the same float expressions whatever the
// chunking, so a streamed run is a resident one's assignment for assignment.

// Integer inclusive scan over the warp.
// A document row held by the warp: entry r·32 + lane in lane `lane`'s slot r (0 past nnz), and
// where this lane's counts start in the row's running count (lanes in order, each lane's slots
// in order). Rows longer than 32·ROW_REGS are not loaded (`in_regs` false).
struct MhRow {
    RowEntry e[ROW_REGS];
    u32 start, end;  // this lane's slots hold positions [start, end) of [0, L_d)
    const RowEntry* global;
    u32 nnz;
    bool in_regs;
};

__device__ __forceinline__ void mh_row_load(MhRow& row, const RowEntry* __restrict__ entries, u32 nnz) {
    u32 lane = lane_id();
    row.global = entries;
    row.nnz = nnz;
    row.in_regs = nnz <= 32u * ROW_REGS;
    u32 sum = 0;
    if (row.in_regs) {
#pragma unroll
        for (int r = 0; r < ROW_REGS; r++) {
            u32 i = (u32)r * 32 + lane;
            row.e[r] = i < nnz ? entries[i] : (RowEntry)0;
        }
#pragma unroll
        for (int r = 0; r < ROW_REGS; r++) sum += entry_count(row.e[r]);
    }
    u32 scan = warp_inclusive_scan(sum);
    row.start = scan - sum;
    row.end = scan;
}

// A_dk: topic k's count in the row (0 when absent). A topic has one entry at most; padding slots
// (topic 0, count 0) add nothing.
__device__ __forceinline__ u32 mh_row_count(const MhRow& row, u32 k) {
    u32 lane = lane_id();
    if (row.in_regs) {
        u32 c = 0;
#pragma unroll
        for (int r = 0; r < ROW_REGS; r++) {
            c += entry_topic(row.e[r]) == k ? entry_count(row.e[r]) : 0u;
        }
        u32 holder = __ballot_sync(FULL, c != 0);
        return holder ? __shfl_sync(FULL, c, __ffs(holder) - 1) : 0u;
    }
    for (u32 i0 = 0; i0 < row.nnz; i0 += 32) {
        u32 i = i0 + lane;
        RowEntry e = i < row.nnz ? row.global[i] : (RowEntry)0;
        u32 hit = __ballot_sync(FULL, i < row.nnz && entry_topic(e) == k);
        if (hit) return __shfl_sync(FULL, entry_count(e), __ffs(hit) - 1);
    }
    return 0u;
}

// The topic at position u (< L_d, the sum of the row's counts) of the row's running count: a
// topic of probability A_dk/L_d for u uniform.
__device__ __forceinline__ u32 mh_row_topic_at(const MhRow& row, u32 u) {
    u32 lane = lane_id();
    if (row.in_regs) {
        u32 t = 0;
        bool mine = u >= row.start && u < row.end;
        if (mine) {
            u32 acc = row.start;
            bool found = false;
#pragma unroll
            for (int r = 0; r < ROW_REGS; r++) {
                u32 c = entry_count(row.e[r]);
                if (!found && u < acc + c) {
                    t = entry_topic(row.e[r]);
                    found = true;
                }
                acc += c;
            }
        }
        u32 owner = __ballot_sync(FULL, mine);
        return __shfl_sync(FULL, t, owner ? __ffs(owner) - 1 : 0);
    }
    u32 carry = 0, last = 0;
    for (u32 i0 = 0; i0 < row.nnz; i0 += 32) {
        u32 i = i0 + lane;
        RowEntry e = i < row.nnz ? row.global[i] : (RowEntry)0;
        u32 c = entry_count(e);
        u32 p = warp_inclusive_scan(c) + carry;
        u32 above = __ballot_sync(FULL, c != 0 && p > u);
        if (above) return __shfl_sync(FULL, entry_topic(e), __ffs(above) - 1);
        u32 nz = __ballot_sync(FULL, c != 0);
        if (nz) last = __shfl_sync(FULL, entry_topic(e), 31 - __clz(nz));
        carry = __shfl_sync(FULL, p, 31);
    }
    return last;
}

// `steps`: proposal pairs per token (--mh-steps). `starts` (tests only; null in runs): each
// token's chain starts there instead of at its old topic, which the counts still hold.
// `own_kept` (tests only; 0 in runs): the control rates described above.
extern "C" __global__ void __launch_bounds__(WARPS_PER_BLOCK * 32, MIN_BLOCKS) sample_mh(
    SAMPLE_PARAMS, u32 steps, const u16* __restrict__ starts, u32 own_kept) {
    extern __shared__ float smem[];
    Tree tree;
    tree_layout(tree, smem, K);
    u32 lane = lane_id();
    u32 warp = threadIdx.x >> 5;
    float k_alpha = (float)K * alpha;
    for (u32 item = blockIdx.x; item < num_items; item += gridDim.x) {
        uint4 it = items[item];
        u32 v = it.x;
        u64 woff = word_off[v];
        u32 wslots = word_slots[v];
        float total = build_word_tree(tree, B + woff, wslots, inv_norm, K, beta, NO_TOPIC, warp, lane);
        const float* pstar = tree.base;

        u32 per = (it.z + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK;
        u32 e0 = it.y + min(it.z, warp * per);
        u32 e1 = it.y + min(it.z, (warp + 1) * per);
        u32 cached_doc = 0xffffffffu;
        MhRow row;
        row.in_regs = false;
        row.nnz = 0;
        row.global = rows;
        row.start = row.end = 0;
        for (u32 base = e0; base < e1; base += 32) {
            // Lane j prepares token base+j: its document, old topic, chain start and p*'(c).
            u32 my_e = base + lane;
            u32 my_doc = 0xffffffffu, my_src = 0, my_c = 0, my_s = 0;
            float my_pex = 0.0f;
            if (my_e < e1) {
                my_doc = token_doc[my_e];
                my_src = token_src[my_e];
                my_c = z[my_src];
                my_s = starts ? (u32)starts[my_src] : my_c;
                // p*'(c) = (B−1+β)/(n−1+Vβ) from the leaf p*(c) = (B+β)x, x = 1/(n+Vβ), as fcgs
                // does (see sample_body); from the counts where x is near 1.
                float x0 = inv_norm[my_c];
                if (x0 < 0.999f) {
                    my_pex = (pstar[my_c] - x0) / (1.0f - x0);
                } else {
                    my_pex = ((float)word_count(B, woff, wslots, K, my_c) - 1.0f + beta) *
                             (float)(1.0 / ((double)n[my_c] - 1.0 + v_beta));
                }
                my_pex = fmaxf(my_pex, 0.0f);
            }
            u32 todo = __ballot_sync(FULL, my_e < e1);
            for (u32 rest = todo; rest; rest &= rest - 1u) {
                u32 j = __ffs(rest) - 1;
                u32 d = __shfl_sync(FULL, my_doc, j);
                u32 src = __shfl_sync(FULL, my_src, j);
                u32 c = __shfl_sync(FULL, my_c, j);
                u32 s = __shfl_sync(FULL, my_s, j);
                float pex = __shfl_sync(FULL, my_pex, j);
                if (d != cached_doc) {
                    cached_doc = d;
                    mh_row_load(row, rows + doc_off[d], row_nnz[d]);
                }
                u32 len = doc_off[d + 1] - doc_off[d];
                float a_c = (float)mh_row_count(row, c);
                float leaf_c = pstar[c];
                // f at c (own_kept: the control's): h(c) and g(c) of the derivation above.
                float h_own = own_kept ? a_c + alpha : (a_c - 1.0f + alpha) * (pex / leaf_c);
                float g_own = own_kept ? leaf_c : pex * (a_c - 1.0f + alpha) / (a_c + alpha);
                // h(s), g(s) of the state, when known.
                float h_s = 0.0f, g_s = 0.0f;
                bool h_known = false, g_known = false;
                u64 g = token_base + src;
                for (u32 t = 0; t < steps; t++) {
                    uint4 r = philox(make_uint4((u32)g, (u32)(g >> 32), iteration, (STREAM_TRAIN << 24) | t), seed_lo, seed_hi);
                    // Word proposal (Eq. 2.1, first line, LightLDA's form): the word's tree.
                    u32 k = tree_sample(tree, unit_f32(r.x) * total);
                    if (k != s) {
                        if (!h_known) {
                            h_s = s == c ? h_own : (float)mh_row_count(row, s) + alpha;
                            h_known = true;
                        }
                        float h_k = k == c ? h_own : (float)mh_row_count(row, k) + alpha;
                        if (unit_f32(r.y) * h_s < h_k) {
                            s = k;
                            h_s = h_k;
                            g_known = false;
                        }
                    }
                    // Document proposal (Eq. 2.1, second line): a random token's topic or α's.
                    float x = unit_f32(r.z) * ((float)len + k_alpha);
                    if (x < (float)len) {
                        k = mh_row_topic_at(row, min((u32)x, len - 1));
                    } else {
                        k = min((u32)((x - (float)len) / alpha), K - 1);
                    }
                    if (k != s) {
                        if (!g_known) {
                            g_s = s == c ? g_own : pstar[s];
                            g_known = true;
                        }
                        float g_k = k == c ? g_own : pstar[k];
                        if (unit_f32(r.w) * g_s < g_k) {
                            s = k;
                            g_s = g_k;
                            h_known = false;
                        }
                    }
                }
                if (lane == 0) {
                    z[src] = (u16)s;
                    if (Bn) word_add(Bn, woff, wslots, K, s);
                }
            }
        }
        __syncthreads();
    }
}

// ---------------------------------------------------------------------------------------------
// A device-resident run (issue 16): the start and the training log-likelihood on the device.

#define STREAM_INIT 1u

// Initial assignments, the CPU's numbers: z[i] is CounterRng(seed, Init, 0, token_start + i)
// .below(K), Lemire's multiply-and-reject over the stream's successive words (block b of the
// stream is counter (t lo, t hi, 0, Init << 24 | b)), as topos-sampling's rng.rs.
extern "C" __global__ void init_assignments(u16* __restrict__ z, u64 n, u64 token_start,
                                            u32 seed_lo, u32 seed_hi, u32 K) {
    u32 threshold = (0u - K) % K;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        u64 t = token_start + i;
        u32 topic = 0;
        for (u32 block = 0;; block++) {
            uint4 b = philox(make_uint4((u32)t, (u32)(t >> 32), 0u, (STREAM_INIT << 24) | block),
                             seed_lo, seed_hi);
            u32 w[4] = {b.x, b.y, b.z, b.w};
            bool found = false;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                u64 m = (u64)w[j] * (u64)K;
                if (!found && (u32)m >= threshold) { topic = (u32)(m >> 32); found = true; }
            }
            if (found) break;
        }
        z[i] = (u16)topic;
    }
}

// mass[v] = sum_k (B_vk + beta) inv[k] = sum_{k: B_vk > 0} B_vk inv[k] + beta_inv_sum, one block
// per word (a fixed reduction order: the same bits every time).
#define MASS_THREADS 256
extern "C" __global__ void __launch_bounds__(MASS_THREADS) word_mass(
    const u32* __restrict__ B, const u64* __restrict__ word_off, const u32* __restrict__ word_slots,
    u32 K, const double* __restrict__ inv, double beta_inv_sum, double* __restrict__ mass) {
    __shared__ double part[MASS_THREADS];
    u32 v = blockIdx.x;
    u64 off = word_off[v];
    u32 slots = word_slots[v];
    double s = 0.0;
    if (slots >= K) {
        for (u32 k = threadIdx.x; k < K; k += MASS_THREADS) s += (double)B[off + k] * inv[k];
    } else {
        for (u32 h = threadIdx.x; h < slots; h += MASS_THREADS) {
            u32 c = B[off + h];
            if (c) s += (double)(c & 0xffffu) * inv[(c >> 16) - 1];
        }
    }
    part[threadIdx.x] = s;
    __syncthreads();
    for (u32 o = MASS_THREADS / 2; o > 0; o >>= 1) {
        if (threadIdx.x < o) part[threadIdx.x] += part[threadIdx.x + o];
        __syncthreads();
    }
    if (threadIdx.x == 0) mass[v] = part[0] + beta_inv_sum;
}

// Training log-likelihood of the chunk's tokens under the current counts (point estimates of θ
// and φ, as topos-train's loglik.rs on the CPU):
//   log( (sum_{k in row d} A_dk (B_wk + beta) inv[k] + alpha mass[w]) / (n_d + K alpha) )
// in double, one block per work item. A warp takes a contiguous share of the item's tokens; its
// lanes load 32 tokens' documents at once, then read each token's document row together (32
// entries a load, coalesced) and add their terms in a fixed butterfly order. Adjacent tokens of
// one document (the PDOW order keeps them together) reuse the value. Each token's value is
// rounded to 2^-24 and summed as an integer, so the total does not depend on the order the
// blocks run in.
#define LL_THREADS 256
#define LL_SCALE 16777216.0
__device__ __forceinline__ double warp_sum_f64(double v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL, v, o);
    return v;
}
extern "C" __global__ void __launch_bounds__(LL_THREADS) loglik(
    const uint4* __restrict__ items, const u32* __restrict__ token_doc, const u32* __restrict__ doc_off,
    const RowEntry* __restrict__ rows, const u32* __restrict__ row_nnz, const u32* __restrict__ B,
    const u64* __restrict__ word_off, const u32* __restrict__ word_slots, u32 K,
    const double* __restrict__ inv, const double* __restrict__ mass, double alpha, double beta,
    unsigned long long* __restrict__ acc) {
    __shared__ unsigned long long block_sum;
    if (threadIdx.x == 0) block_sum = 0ull;
    __syncthreads();
    uint4 it = items[blockIdx.x];
    u64 off = word_off[it.x];
    u32 slots = word_slots[it.x];
    double smooth = alpha * mass[it.x];
    double k_alpha = (double)K * alpha;
    u32 lane = lane_id(), warp = threadIdx.x >> 5;
    const u32 warps = LL_THREADS / 32;
    u32 per = (it.z + warps - 1) / warps;
    u32 e0 = it.y + min(it.z, warp * per);
    u32 e1 = it.y + min(it.z, (warp + 1) * per);
    long long local = 0, value = 0;
    u32 cached = 0xffffffffu;
    for (u32 base = e0; base < e1; base += 32) {
        u32 my_e = base + lane, my_doc = 0xffffffffu, my_a = 0, my_len = 0, my_nnz = 0;
        if (my_e < e1) {
            my_doc = token_doc[my_e];
            my_a = doc_off[my_doc];
            my_len = doc_off[my_doc + 1] - my_a;
            my_nnz = row_nnz[my_doc];
        }
        u32 count = min(32u, e1 - base);
        for (u32 j = 0; j < count; j++) {
            u32 d = __shfl_sync(FULL, my_doc, j);
            u32 a = __shfl_sync(FULL, my_a, j);
            u32 len = __shfl_sync(FULL, my_len, j);
            u32 nnz = __shfl_sync(FULL, my_nnz, j);
            if (d != cached) {
                double s = 0.0;
                for (u32 i = lane; i < nnz; i += 32) {
                    RowEntry r = rows[a + i];
                    u32 k = entry_topic(r);
                    s += (double)entry_count(r) * (((double)word_count(B, off, slots, K, k) + beta) * inv[k]);
                }
                s = warp_sum_f64(s);
                value = llrint(log((s + smooth) / ((double)len + k_alpha)) * LL_SCALE);
                cached = d;
            }
            local += value;
        }
    }
    if (lane == 0) atomicAdd(&block_sum, (unsigned long long)local);
    __syncthreads();
    if (threadIdx.x == 0) atomicAdd(acc, block_sum);
}

// ---------------------------------------------------------------------------------------------
// The PDOW arrays of a resident partition, built on the device: a stable least-significant-digit
// radix sort of the partition's tokens by word id (RADIX_BITS a pass), the values their positions,
// then each position's document by binary search in the document offsets. Stable at every pass,
// so the result is the host's counting sort's (topos-train's layout.rs), entry for entry: within
// a word, tokens in corpus order.
//
// A pass: `radix_count` counts each tile's digits; `radix_scan_tiles` (one block a digit) turns
// them into the tile's first position among the digit's entries and the digit's total;
// `radix_scan_totals` gives each digit's first position; `radix_scatter` writes every tile's
// entries there, in order: each warp takes a contiguous share of its tile, its own offsets from
// the counts of the warps before it, and 32 entries at a time ranked among lanes of the same digit
// (__match_any_sync).
#define RADIX_BITS 9
#define RADIX_BINS (1u << RADIX_BITS)
#define SORT_TILE 4096u
#define SORT_THREADS 256
#define SORT_WARPS (SORT_THREADS / 32)

extern "C" __global__ void __launch_bounds__(SORT_THREADS) radix_count(
    const u32* __restrict__ keys, u32 n, u32 shift, u32* __restrict__ hist, u32 tiles) {
    __shared__ u32 c[RADIX_BINS];
    for (u32 i = threadIdx.x; i < RADIX_BINS; i += SORT_THREADS) c[i] = 0;
    __syncthreads();
    u32 t = blockIdx.x;
    u32 start = t * SORT_TILE, end = min(n, start + SORT_TILE);
    for (u32 i = start + threadIdx.x; i < end; i += SORT_THREADS)
        atomicAdd(&c[(keys[i] >> shift) & (RADIX_BINS - 1)], 1u);
    __syncthreads();
    for (u32 d = threadIdx.x; d < RADIX_BINS; d += SORT_THREADS) hist[(u64)d * tiles + t] = c[d];
}

#define SCAN_THREADS 1024
extern "C" __global__ void __launch_bounds__(SCAN_THREADS) radix_scan_tiles(
    u32* __restrict__ hist, u32 tiles, u32* __restrict__ totals) {
    __shared__ u32 warp_sums[SCAN_THREADS / 32];
    __shared__ u32 carry;
    u32* row = hist + (u64)blockIdx.x * tiles;
    u32 lane = lane_id(), w = threadIdx.x >> 5;
    if (threadIdx.x == 0) carry = 0;
    __syncthreads();
    for (u32 base = 0; base < tiles; base += SCAN_THREADS) {
        u32 i = base + threadIdx.x;
        u32 v = i < tiles ? row[i] : 0u;
        u32 x = warp_inclusive_scan(v);
        if (lane == 31) warp_sums[w] = x;
        __syncthreads();
        if (w == 0) warp_sums[lane] = warp_inclusive_scan(warp_sums[lane]);
        __syncthreads();
        u32 incl = x + (w > 0 ? warp_sums[w - 1] : 0u);
        u32 c = carry;
        if (i < tiles) row[i] = c + incl - v;
        __syncthreads();
        if (threadIdx.x == SCAN_THREADS - 1) carry = c + incl;
        __syncthreads();
    }
    if (threadIdx.x == 0) totals[blockIdx.x] = carry;
}

// Exclusive scan of the RADIX_BINS digit totals, one block of RADIX_BINS threads.
extern "C" __global__ void __launch_bounds__(RADIX_BINS) radix_scan_totals(
    const u32* __restrict__ totals, u32* __restrict__ base) {
    __shared__ u32 warp_sums[RADIX_BINS / 32];
    u32 lane = lane_id(), w = threadIdx.x >> 5;
    u32 v = totals[threadIdx.x], x = warp_inclusive_scan(v);
    if (lane == 31) warp_sums[w] = x;
    __syncthreads();
    u32 before = 0;
    for (u32 j = 0; j < w; j++) before += warp_sums[j];
    base[threadIdx.x] = before + x - v;
}

// One pass's scatter. `vals_in` is ignored when `iota` (the first pass: the value is the position);
// keys are written only when `write_keys` (not after the last pass).
extern "C" __global__ void __launch_bounds__(SORT_THREADS) radix_scatter(
    const u32* __restrict__ keys_in, const u32* __restrict__ vals_in, u32* __restrict__ keys_out,
    u32* __restrict__ vals_out, u32 n, u32 shift, const u32* __restrict__ hist, u32 tiles,
    const u32* __restrict__ base, int iota, int write_keys) {
    __shared__ u32 at[SORT_WARPS][RADIX_BINS];
    u32 t = blockIdx.x, lane = lane_id(), w = threadIdx.x >> 5;
    for (u32 i = threadIdx.x; i < SORT_WARPS * RADIX_BINS; i += SORT_THREADS) (&at[0][0])[i] = 0;
    __syncthreads();
    const u32 per = SORT_TILE / SORT_WARPS;
    u32 start = t * SORT_TILE, end = min(n, start + SORT_TILE);
    u32 ws = min(end, start + w * per), we = min(end, start + (w + 1) * per);
    for (u32 i = ws + lane; i < we; i += 32) atomicAdd(&at[w][(keys_in[i] >> shift) & (RADIX_BINS - 1)], 1u);
    __syncthreads();
    for (u32 d = threadIdx.x; d < RADIX_BINS; d += SORT_THREADS) {
        u32 acc = base[d] + hist[(u64)d * tiles + t];
        for (u32 j = 0; j < SORT_WARPS; j++) {
            u32 c = at[j][d];
            at[j][d] = acc;
            acc += c;
        }
    }
    __syncthreads();
    for (u32 b = ws; b < we; b += 32) {
        u32 i = b + lane;
        bool active = i < we;
        u32 mask = __ballot_sync(FULL, active);
        if (active) {
            u32 k = keys_in[i];
            u32 d = (k >> shift) & (RADIX_BINS - 1);
            u32 peers = __match_any_sync(mask, d);
            u32 rank = __popc(peers & ((1u << lane) - 1u));
            u32 pos = at[w][d] + rank;
            if (write_keys) keys_out[pos] = k;
            vals_out[pos] = iota ? i : vals_in[i];
            __syncwarp(mask);
            if (rank == 0) at[w][d] += __popc(peers);
        }
        __syncwarp();
    }
}

// doc[i] = the document (relative to the partition) holding position src[i]: the largest d with
// doc_off[d] <= src[i] (doc_off has num_docs + 1 entries, the last one past every position).
extern "C" __global__ void docs_of_positions(const u32* __restrict__ src, u32* __restrict__ doc,
                                             u32 n, const u32* __restrict__ doc_off, u32 num_docs) {
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        u32 p = src[i], lo = 0, hi = num_docs;
        while (hi - lo > 1) {
            u32 mid = (lo + hi) >> 1;
            if (doc_off[mid] <= p) lo = mid; else hi = mid;
        }
        doc[i] = lo;
    }
}

// ---------------------------------------------------------------------------------------------
// Held-out document completion on the device (topos-model's heldout.rs and foldin.rs, for a dense
// φ), bit for bit: the same φ values, the same Philox numbers, the same operations in the same
// order (the __d*_rn intrinsics keep NVRTC from fusing a multiply and an add, which the host never
// does). What the host still does: the logarithms (CUDA's log and the host's may differ in the
// last bit) and the sum over documents.

#define STREAM_INFER 3u
#define NO_SLOT 0xffffffffu

// Row r of φ for held-out word words[r]: phi = f32((B_wk + beta) inv[k]); bottom = its running f32
// sum (WaryTree's bottom level); mass[r] = alpha * sum_k f64(phi) (the smoothing weight).
extern "C" __global__ void __launch_bounds__(256) heldout_phi_rows(
    const u32* __restrict__ words, const u32* __restrict__ B, const u64* __restrict__ word_off,
    const u32* __restrict__ word_slots, u32 K, const double* __restrict__ inv, double beta,
    double alpha, float* __restrict__ phi, float* __restrict__ bottom, double* __restrict__ smooth) {
    u32 r = blockIdx.x, w = words[r];
    u64 off = word_off[w];
    u32 slots = word_slots[w];
    float* row = phi + (u64)r * K;
    for (u32 k = threadIdx.x; k < K; k += blockDim.x)
        row[k] = __double2float_rn(__dmul_rn(__dadd_rn((double)word_count(B, off, slots, K, k), beta), inv[k]));
    __syncthreads();
    if (threadIdx.x == 0) {
        float acc = 0.0f;
        double mass = 0.0;
        float* b = bottom + (u64)r * K;
        for (u32 k = 0; k < K; k++) {
            acc = __fadd_rn(acc, row[k]);
            b[k] = acc;
            mass = __dadd_rn(mass, (double)row[k]);
        }
        smooth[r] = __dmul_rn(alpha, mass);
    }
}

struct InferRng {
    uint4 buf;
    u32 used;
};

__device__ __forceinline__ u32 infer_next(InferRng& g, u32 seed_lo, u32 seed_hi, uint4& ctr) {
    if (g.used == 4) {
        g.buf = philox(ctr, seed_lo, seed_hi);
        ctr.w += 1;
        g.used = 0;
    }
    u32 x = g.used == 0 ? g.buf.x : g.used == 1 ? g.buf.y : g.used == 2 ? g.buf.z : g.buf.w;
    g.used++;
    return x;
}

// One warp per held-out document (documents first_doc.., `count` of them; scratch row j of every
// per-document array belongs to document first_doc + j). Folds in the first half (Gibbs fold-in
// with φ fixed: sweep 0 assigns in order, sweeps 1..=sweeps resample, counts averaged after
// burn_in), then writes, for every token of the second half, the argument of its logarithm: the
// sum over the averaged topics (ascending) of mean_k phi_kw, plus alpha mass_w. The lanes load a
// draw's 32 terms at once; lane 0 adds them in the host's order (shuffled to it one at a time),
// and keeps the document's counts.
__device__ __forceinline__ double ordered_prefix(double prod, u32 cnt, double& total) {
    // The running sums of `prod` over lanes 0..cnt, in lane order: lane l gets the sum through l.
    u32 lane = lane_id();
    double mine = 0.0;
    for (u32 l = 0; l < cnt; l++) {
        double v = __shfl_sync(FULL, prod, l);
        total = __dadd_rn(total, v);
        if (lane == l) mine = total;
    }
    return mine;
}

extern "C" __global__ void __launch_bounds__(128) heldout_foldin(
    const u64* __restrict__ doc_off, u64 base, const u32* __restrict__ token_row, u32 first_doc, u32 count,
    const float* __restrict__ phi, const float* __restrict__ bottom, const double* __restrict__ smooth,
    u32 K, u32 seed_lo, u32 seed_hi, u32 sweeps, u32 burn_in,
    u32* __restrict__ counts, u32* __restrict__ slot, u16* __restrict__ nonzero,
    double* __restrict__ cum, unsigned long long* __restrict__ sum, u16* __restrict__ z,
    double* __restrict__ out) {
    u32 j = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    u32 lane = lane_id();
    if (j >= count) return;
    u32 d = first_doc + j;
    // doc_off: the documents' first tokens as the host's fold-in numbers them (its random
    // streams); the arrays start at `base`.
    u64 first = doc_off[d], a = first - base;
    u32 n = (u32)(doc_off[d + 1] - first);
    if (n < 2) return;
    u32 nobs = n / 2;
    u32* C = counts + (u64)j * K;
    u32* S = slot + (u64)j * K;
    u16* NZ = nonzero + (u64)j * K;
    double* CU = cum + (u64)j * K;
    unsigned long long* SUM = sum + (u64)j * K;
    u32 nnz = 0;
    for (u32 sweep = 0; sweep <= sweeps; sweep++) {
        for (u32 i = 0; i < nobs; i++) {
            if (sweep > 0) {
                if (lane == 0) {
                    // remove(z[i])
                    u32 t = z[a + i];
                    C[t] -= 1;
                    if (C[t] == 0) {
                        u32 p = S[t];
                        S[t] = NO_SLOT;
                        nnz -= 1;
                        u16 last = NZ[nnz];
                        if (last != t) {
                            NZ[p] = last;
                            S[last] = p;
                        }
                    }
                }
                nnz = __shfl_sync(FULL, nnz, 0);
                __syncwarp();
            }
            u32 r = token_row[a + i];
            const float* row = phi + (u64)r * K;
            double sparse = 0.0;
            for (u32 q0 = 0; q0 < nnz; q0 += 32) {
                u32 q = q0 + lane;
                double prod = 0.0;
                if (q < nnz) {
                    u32 k = NZ[q];
                    prod = __dmul_rn((double)C[k], (double)row[k]);
                }
                double c = ordered_prefix(prod, min(32u, nnz - q0), sparse);
                if (q < nnz) CU[q] = c;
            }
            __syncwarp();
            u64 tok = first + i;
            uint4 ctr = make_uint4((u32)tok, (u32)(tok >> 32), sweep, STREAM_INFER << 24);
            InferRng g;
            g.used = 4;
            u32 hi = infer_next(g, seed_lo, seed_hi, ctr) >> 5;
            u32 lo = infer_next(g, seed_lo, seed_hi, ctr) >> 6;
            double unit = (double)(((u64)hi << 26) | (u64)lo) * (1.0 / 9007199254740992.0);
            double u = __dmul_rn(unit, __dadd_rn(sparse, smooth[r]));
            u32 k;
            if (u < sparse) {
                // The first running sum above u (the last if rounding left none).
                u32 found = nnz - 1;
                for (u32 q0 = 0; q0 < nnz; q0 += 32) {
                    u32 q = q0 + lane;
                    u32 hit = __ballot_sync(FULL, q < nnz && CU[q] > u);
                    if (hit) {
                        found = q0 + __ffs(hit) - 1;
                        break;
                    }
                }
                k = NZ[found];
            } else {
                const float* b = bottom + (u64)r * K;
                float uf = (float)(infer_next(g, seed_lo, seed_hi, ctr) >> 8) * (1.0f / 16777216.0f);
                float x = __fmul_rn(uf, b[K - 1]);
                u32 found = K - 1;
                for (u32 q0 = 0; q0 < K; q0 += 32) {
                    u32 q = q0 + lane;
                    u32 hit = __ballot_sync(FULL, q < K && b[q] > x);
                    if (hit) {
                        found = q0 + __ffs(hit) - 1;
                        break;
                    }
                }
                while (found > 0 && b[found] == b[found - 1]) found--;
                k = found;
            }
            if (lane == 0) {
                // add(k)
                if (C[k] == 0) {
                    S[k] = nnz;
                    NZ[nnz] = (u16)k;
                    nnz += 1;
                }
                C[k] += 1;
                z[a + i] = (u16)k;
            }
            nnz = __shfl_sync(FULL, nnz, 0);
            __syncwarp();
        }
        if (sweep > burn_in) {
            for (u32 q = lane; q < nnz; q += 32) SUM[NZ[q]] += C[NZ[q]];
            __syncwarp();
        }
    }
    // The averaged topics, ascending, with their means (NZ and CU reused).
    double samples = (double)(sweeps - burn_in);
    u32 m = 0;
    for (u32 k0 = 0; k0 < K; k0 += 32) {
        u32 k = k0 + lane;
        bool on = k < K && SUM[k] > 0;
        u32 hits = __ballot_sync(FULL, on);
        if (on) {
            u32 at = m + __popc(hits & ((1u << lane) - 1u));
            NZ[at] = (u16)k;
            CU[at] = __ddiv_rn((double)SUM[k], samples);
        }
        m += __popc(hits);
    }
    __syncwarp();
    for (u32 i = nobs; i < n; i++) {
        u32 r = token_row[a + i];
        const float* row = phi + (u64)r * K;
        double s = 0.0;
        for (u32 q0 = 0; q0 < m; q0 += 32) {
            u32 q = q0 + lane;
            double prod = q < m ? __dmul_rn(CU[q], (double)row[NZ[q]]) : 0.0;
            ordered_prefix(prod, min(32u, m - q0), s);
        }
        if (lane == 0) out[a + i] = __dadd_rn(s, smooth[r]);
    }
}

// ---------------------------------------------------------------------------------------------
// Held-out document completion with a sparse φ (K x V above 2^28 cells), the host's
// `FoldIn::draw_sparse` bit for bit (SparseLDA's buckets, Yao et al. 2009 §3):
//   (A_k + α)(B_wk + β)s_k = A_k (B_wk + β) s_k   document bucket (B_wk by binary search)
//                          + α B_wk s_k           word bucket (prefix sums over the word's row)
//                          + α β s_k              smoothing bucket (one tree over s for all words)
// φ arrives from the host as its sparse rows (topics ascending) with s = inv, the smoothing tree's
// bottom level and each row's α·mass.

// prefix[i] over row r: running sum of (alpha * c) * inv[t], the host's order.
extern "C" __global__ void heldout_word_prefix(const u64* __restrict__ row_off, u32 rows,
                                               const u16* __restrict__ topics, const u32* __restrict__ counts,
                                               const double* __restrict__ inv, double alpha,
                                               double* __restrict__ prefix) {
    u32 r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    double acc = 0.0;
    for (u64 i = row_off[r]; i < row_off[r + 1]; i++) {
        acc = __dadd_rn(acc, __dmul_rn(__dmul_rn(alpha, (double)counts[i]), inv[topics[i]]));
        prefix[i] = acc;
    }
}

// B_wk of row [a, b) (topics ascending), 0 when absent: the host's binary search.
__device__ __forceinline__ double row_count(const u16* __restrict__ topics, const u32* __restrict__ counts,
                                            u64 a, u64 b, u32 k) {
    u64 lo = a, hi = b;
    while (lo < hi) {
        u64 mid = lo + ((hi - lo) >> 1);
        u32 t = topics[mid];
        if (t == k) return (double)counts[mid];
        if (t < k) lo = mid + 1; else hi = mid;
    }
    return 0.0;
}

extern "C" __global__ void __launch_bounds__(128) heldout_foldin_sparse(
    const u64* __restrict__ doc_off, u64 base, const u32* __restrict__ token_row, u32 first_doc, u32 count,
    const u64* __restrict__ row_off, const u16* __restrict__ row_topics, const u32* __restrict__ row_counts,
    const double* __restrict__ word_prefix, const double* __restrict__ inv, const float* __restrict__ inv_bottom,
    const double* __restrict__ smooth, double beta, double smoothing_mass,
    u32 K, u32 seed_lo, u32 seed_hi, u32 sweeps, u32 burn_in,
    u32* __restrict__ counts, u32* __restrict__ slot, u16* __restrict__ nonzero,
    double* __restrict__ cum, unsigned long long* __restrict__ sum, u16* __restrict__ z,
    double* __restrict__ out) {
    u32 j = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    u32 lane = lane_id();
    if (j >= count) return;
    u32 d = first_doc + j;
    u64 first = doc_off[d], a = first - base;
    u32 n = (u32)(doc_off[d + 1] - first);
    if (n < 2) return;
    u32 nobs = n / 2;
    u32* C = counts + (u64)j * K;
    u32* S = slot + (u64)j * K;
    u16* NZ = nonzero + (u64)j * K;
    double* CU = cum + (u64)j * K;
    unsigned long long* SUM = sum + (u64)j * K;
    u32 nnz = 0;
    for (u32 sweep = 0; sweep <= sweeps; sweep++) {
        for (u32 i = 0; i < nobs; i++) {
            if (sweep > 0) {
                if (lane == 0) {
                    u32 t = z[a + i];
                    C[t] -= 1;
                    if (C[t] == 0) {
                        u32 p = S[t];
                        S[t] = NO_SLOT;
                        nnz -= 1;
                        u16 last = NZ[nnz];
                        if (last != t) {
                            NZ[p] = last;
                            S[last] = p;
                        }
                    }
                }
                nnz = __shfl_sync(FULL, nnz, 0);
                __syncwarp();
            }
            u32 r = token_row[a + i];
            u64 ra = row_off[r], rb = row_off[r + 1];
            double w_mass = rb > ra ? word_prefix[rb - 1] : 0.0;
            double dsum = 0.0;
            for (u32 q0 = 0; q0 < nnz; q0 += 32) {
                u32 q = q0 + lane;
                double prod = 0.0;
                if (q < nnz) {
                    u32 k = NZ[q];
                    double b = row_count(row_topics, row_counts, ra, rb, k);
                    prod = __dmul_rn(__dmul_rn((double)C[k], __dadd_rn(b, beta)), inv[k]);
                }
                double c = ordered_prefix(prod, min(32u, nnz - q0), dsum);
                if (q < nnz) CU[q] = c;
            }
            __syncwarp();
            u64 tok = first + i;
            uint4 ctr = make_uint4((u32)tok, (u32)(tok >> 32), sweep, STREAM_INFER << 24);
            InferRng g;
            g.used = 4;
            u32 hi = infer_next(g, seed_lo, seed_hi, ctr) >> 5;
            u32 lo = infer_next(g, seed_lo, seed_hi, ctr) >> 6;
            double unit = (double)(((u64)hi << 26) | (u64)lo) * (1.0 / 9007199254740992.0);
            double u = __dmul_rn(unit, __dadd_rn(__dadd_rn(dsum, w_mass), smoothing_mass));
            u32 k;
            if (u < dsum && nnz > 0) {
                u32 found = nnz - 1;
                for (u32 q0 = 0; q0 < nnz; q0 += 32) {
                    u32 q = q0 + lane;
                    u32 hit = __ballot_sync(FULL, q < nnz && CU[q] > u);
                    if (hit) {
                        found = q0 + __ffs(hit) - 1;
                        break;
                    }
                }
                k = NZ[found];
            } else if (__dadd_rn(u, -dsum) < w_mass && rb > ra) {
                // The word bucket: the first prefix above u - d (the last if rounding left none).
                double x = __dadd_rn(u, -dsum);
                u64 len = rb - ra, found = len - 1;
                for (u64 q0 = 0; q0 < len; q0 += 32) {
                    u64 q = q0 + lane;
                    u32 hit = __ballot_sync(FULL, q < len && word_prefix[ra + q] > x);
                    if (hit) {
                        found = q0 + __ffs(hit) - 1;
                        break;
                    }
                }
                k = row_topics[ra + found];
            } else {
                float uf = (float)(infer_next(g, seed_lo, seed_hi, ctr) >> 8) * (1.0f / 16777216.0f);
                float x = __fmul_rn(uf, inv_bottom[K - 1]);
                u32 found = K - 1;
                for (u32 q0 = 0; q0 < K; q0 += 32) {
                    u32 q = q0 + lane;
                    u32 hit = __ballot_sync(FULL, q < K && inv_bottom[q] > x);
                    if (hit) {
                        found = q0 + __ffs(hit) - 1;
                        break;
                    }
                }
                while (found > 0 && inv_bottom[found] == inv_bottom[found - 1]) found--;
                k = found;
            }
            if (lane == 0) {
                if (C[k] == 0) {
                    S[k] = nnz;
                    NZ[nnz] = (u16)k;
                    nnz += 1;
                }
                C[k] += 1;
                z[a + i] = (u16)k;
            }
            nnz = __shfl_sync(FULL, nnz, 0);
            __syncwarp();
        }
        if (sweep > burn_in) {
            for (u32 q = lane; q < nnz; q += 32) SUM[NZ[q]] += C[NZ[q]];
            __syncwarp();
        }
    }
    double samples = (double)(sweeps - burn_in);
    u32 m = 0;
    for (u32 k0 = 0; k0 < K; k0 += 32) {
        u32 k = k0 + lane;
        bool on = k < K && SUM[k] > 0;
        u32 hits = __ballot_sync(FULL, on);
        if (on) {
            u32 at = m + __popc(hits & ((1u << lane) - 1u));
            NZ[at] = (u16)k;
            CU[at] = __ddiv_rn((double)SUM[k], samples);
        }
        m += __popc(hits);
    }
    __syncwarp();
    for (u32 i = nobs; i < n; i++) {
        u32 r = token_row[a + i];
        u64 ra = row_off[r], rb = row_off[r + 1];
        double s = 0.0;
        for (u32 q0 = 0; q0 < m; q0 += 32) {
            u32 q = q0 + lane;
            double prod = 0.0;
            if (q < m) {
                u32 k = NZ[q];
                double b = row_count(row_topics, row_counts, ra, rb, k);
                prod = __dmul_rn(__dmul_rn(CU[q], __dadd_rn(b, beta)), inv[k]);
            }
            ordered_prefix(prod, min(32u, m - q0), s);
        }
        if (lane == 0) out[a + i] = __dadd_rn(s, smooth[r]);
    }
}
