// bfs_persistent.cu -- a whole breadth-first search over a one-owner CSR in ONE cooperative kernel.
//
// What it computes
//   bfs_persistent<Index> fills dist (int32: hops from the nearest source, -1 = unreached) and
//   parent (int64: the vertex a BFS tree edge comes from, -1 for sources and unreached vertices)
//   for every vertex of a CSR with offset 0, from all `sources` at once, stopping after
//   `depth_limit` levels when depth_limit >= 0, and after the level that reaches `target` when
//   target >= 0 (checked once per level, at its start, by reading dist[target] after the grid
//   sync: only a distance <= the level counts, so a claim made during the level, which other
//   threads may or may not see yet, never splits the grid's decision). Every parent edge u->v
//   exists and dist[u] + 1 == dist[v]. With parent_lo and parent null no parent is written
//   (distances only; the launcher then passes a queue of its own).
//   gpipe/engine/compute/gpu_bfs.py (bfs) launches it; the slow, obviously-correct
//   twin is the host level loop over bfs_expand (bfs.cu) in gpipe/engine/traverse.py, and
//   tests/test_kernels_gpu.py checks both against scipy.sparse.csgraph.
//
// Technique
//   1. One persistent cooperative grid runs every level; levels are separated by
//      cooperative_groups::this_grid().sync() (about 4 us on an H100) instead of a kernel launch
//      and a host read of the frontier size (about 30 us). A 322-level grid BFS is therefore one
//      launch. All direction decisions are made on the device, by every thread identically, from
//      counters that the previous level left behind.
//   2. Direction-optimizing BFS (S. Beamer, K. Asanovic, D. Patterson, "Direction-Optimizing
//      Breadth-First Search", SC 2012; the heuristic of GAPBS src/bfs.cc). Only when the graph is
//      symmetric (CSR == CSC), since a bottom-up step needs in-edges:
//        top-down -> bottom-up when m_f > m_u / alpha  (m_f: out-edges of the frontier,
//                                                        m_u: out-edges of unvisited vertices)
//                              and m_f > n / gamma    (ours: a bottom-up step reads all n
//                                                        vertices, so small frontiers stay
//                                                        top-down, e.g. a grid's 300 levels);
//        bottom-up -> top-down when the frontier shrinks and n_f <= n / beta.
//      Top-down: every frontier edge u->v claims an unvisited v with atomicCAS on dist.
//      Bottom-up: every unvisited v scans its neighbours until it meets one in the frontier
//      bitmap (kept in bits: 4 MB at 2^25 vertices, so it lives in L2) and stops at the first;
//      that neighbour is its parent. A lane scans the first kSeqScan = 16 neighbours alone; longer
//      lists left unresolved are then scanned by the whole warp, 32 at a time (ballot for the
//      first hit), so one high-degree vertex does not hold its warp for thousands of loads.
//      A bottom-up step writes no queue: the next frontier is the bitmap next_front, its size
//      and out-degree sum are summed per lane and added once per block. Switching back to
//      top-down appends the bitmap's vertices to the queue first (one extra grid sync).
//   3. Exact load balance in top-down steps without a prefix-sum pass or any buffer
//      proportional to edges: every append to the next frontier goes through ONE 64-bit
//      atomicAdd per block on a packed counter (count << e_bits) + (out-degree sum). Because the
//      count and the edge sum move together, the slot a warp receives comes with the exact
//      exclusive prefix of out-degrees up to that slot. The lane that writes slot t * kTile
//      records that prefix in tile_offsets[t]; so the next level knows, per tile of kTile
//      frontier vertices, where its edges start. The expansion then splits the level's
//      "work items" (one per frontier vertex plus one per frontier edge, W = n_f + m_f) evenly over
//      the blocks, a merge-path split (D. Merrill, M. Garland, A. Grimshaw, "Scalable GPU Graph
//      Traversal", PPoPP 2012; O. Green et al., "GPU Merge Path", ICS 2012): a block finds its
//      first tile by a 32-ary warp search over tile_offsets, scans the tile's degrees in shared
//      memory, and gives each thread one work item (binary search in shared memory). A hub of a
//      million edges is spread over the whole grid; a tile of degree-1 vertices costs one round.
//   4. Hierarchical queues (L. Luo, M. Wong, W. Hwu, "An Effective GPU Implementation of
//      Breadth-First Search", DAC 2010): block-level aggregation (a shared-memory scan of the
//      block's appends, one atomic per block, each thread writes at its rank) into one global
//      queue. Per-warp atomics on the one counter serialized at L2 (thousands per level).
//
// The one non-obvious trick: the queue lives inside the parent array
//   For Index = int (n < 2^31) parents fit in 32 bits, so during the search parent[v] is used as
//   two int32 words: the low word of parent[v] holds v's parent, and the HIGH word of parent[i]
//   holds queue slot i (parent_stride = queue_stride = 2). Every vertex enters the queue at most
//   once (all levels append to one queue), so n slots suffice. After the last level one pass
//   writes parent[v] = dist[v] < 0 ? -1 : low word, which also wipes the queue. Working memory
//   beyond the CSR and the outputs is then two frontier bitmaps (n/4 bytes) and the tile
//   offsets (n/32 bytes): dist + parent + these = 12.3 bytes per vertex. For Index = long long
//   the launcher passes a separate int64 queue (parent_stride = queue_stride = 1).
//
// Array invariants (n vertices, nnz = indptr[n] edges, n_tiles = ceil(n / kTile))
//   indptr         int64[n + 1], non-decreasing, indptr[0] = 0; out-edges of u are
//                  indices[indptr[u] : indptr[u + 1]]. Symmetric graphs store both directions.
//   indices        Index[nnz], targets in [0, n). Read-only here.
//   sources        int64[n_sources], in [0, n); repeats are harmless (claimed once).
//   dist           int32[n], written whole by the kernel (no initialisation needed).
//   parent         int64[n], written whole by the kernel's last pass.
//   parent_lo      Index*, parent of v at parent_lo[v * parent_stride] while the search runs.
//   queue          Index*, slot i at queue[i * queue_stride]; a queued level holds
//                  [q_front, q_front + n_f); levels are appended one after the other and a
//                  vertex is queued at most once (bottom-up levels are queued only when a
//                  top-down step follows), so n slots suffice.
//   bitmaps        uint32[2 * n_words], n_words = ceil(n / 32): frontier bitmap of level L is
//                  bitmaps + (L & 1) * n_words. Only touched when symmetric.
//   tile_offsets   int64[2 * (n_tiles + 1)]: for level L at + (L & 1) * (n_tiles + 1), entry t =
//                  out-degree sum of the level's slots before t * kTile.
//   counters       uint64[4], zero on entry: counters[(L + 1) % 3] collects level L + 1 while
//                  level L runs; counters[(L + 2) % 3] is cleared during level L; counters[3]
//                  serves the bitmap -> queue pass and is cleared after it; at the end it
//                  holds the number of levels expanded.
//   e_bits         count bits above e_bits, edge sum below: needs nnz < 2^e_bits and
//                  n < 2^(64 - e_bits); block_append also needs nnz < 2^40 (both checked by
//                  the launcher).
//   trace          int64[trace_rows * 5] or null: per level (level, bottom_up, n_f, m_f,
//                  %globaltimer ns at the level's start); the row after the last level is
//                  (levels, -1, 0, 0, end time).
//
// Launch: cooperatively (cudaLaunchCooperativeKernel), kBlock threads per block, no more blocks
// than fit on the device at once (the occupancy API). Written for NVRTC (cupy.RawModule with
// enable_cooperative_groups, -std=c++17); frontier.cuh (with warp.cuh) holds the bottom-up
// parent search, the bitmap test and the warp scan shared with the other traversal kernels.

#include <cooperative_groups.h>

#include "frontier.cuh"

namespace cg = cooperative_groups;

namespace {

constexpr int kBlock = 512;             // threads per block
constexpr int kTile = kBlock;           // frontier vertices per tile: one per thread
constexpr int kWarps = kBlock / 32;
constexpr int kTraceColumns = 5;
constexpr int kBlockCountShift = 40;    // block_append packs (count << 40) + degree sum
constexpr unsigned long long kBlockEdgeMask = (1ull << kBlockCountShift) - 1ull;

__device__ __forceinline__ int lane_id() { return threadIdx.x & 31; }

__device__ __forceinline__ long long global_timer() {
    long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// Exclusive prefix sum over the block; *total gets the block's sum. All threads must call it.
// `warp_sums` is kWarps shared words; the caller syncs before the next call reuses them.
__device__ __forceinline__ long long block_exclusive_sum(long long x, long long* warp_sums,
                                                         long long* total) {
    const int lane = lane_id();
    const int warp = threadIdx.x >> 5;
    const long long inclusive = warp_inclusive_sum(x);
    if (lane == 31) warp_sums[warp] = inclusive;
    __syncthreads();
    if (warp == 0) {
        long long s = lane < kWarps ? warp_sums[lane] : 0;
        s = warp_inclusive_sum(s);
        if (lane < kWarps) warp_sums[lane] = s;
    }
    __syncthreads();
    *total = warp_sums[kWarps - 1];
    return (warp > 0 ? warp_sums[warp - 1] : 0) + inclusive - x;
}

// Where a level's queue is being built: its slots start at q_end.
template <typename Index>
struct QueueEnd {
    unsigned long long* counter;  // packed (count << e_bits) + out-degree sum
    Index* queue;
    long long queue_stride;
    long long q_end;
    long long* tile_offsets;
    int e_bits;
};

// Reserve `count` queue slots and `degrees` edges for this thread; all threads of the block
// must call it together. The block's requests are packed as (count << kBlockCountShift) +
// degrees and scanned in shared memory; ONE packed atomicAdd per block then reserves the slots
// and the edge range at once, so the thread that fills slot t * kTile knows the exact edge
// offset of tile t. (A per-warp atomic on the one counter was the bottleneck: thousands of
// warps per level on one address.) Sets *slot and *offset (level-relative) and returns true
// when the block reserved anything.
template <typename Index>
__device__ __forceinline__ bool block_reserve(const QueueEnd<Index>& next, long long count,
                                              long long degrees, long long* warp_sums,
                                              unsigned long long* s_base, long long* slot,
                                              long long* offset) {
    long long total;
    const long long before =
        block_exclusive_sum((count << kBlockCountShift) + degrees, warp_sums, &total);
    if (total != 0) {  // block-uniform
        if (threadIdx.x == 0) {
            const unsigned long long n_slots = static_cast<unsigned long long>(total) >> kBlockCountShift;
            const unsigned long long edges = static_cast<unsigned long long>(total) & kBlockEdgeMask;
            *s_base = atomicAdd(next.counter, (n_slots << next.e_bits) + edges);
        }
        __syncthreads();
        const unsigned long long base = *s_base;
        *slot = static_cast<long long>(base >> next.e_bits) + (before >> kBlockCountShift);
        *offset = static_cast<long long>(base & ((1ull << next.e_bits) - 1ull)) +
                  (before & static_cast<long long>(kBlockEdgeMask));
    }
    __syncthreads();  // warp_sums and *s_base are reused by the next call
    return total != 0;
}

// Write v into a reserved slot; the first slot of each tile records the tile's edge offset.
template <typename Index>
__device__ __forceinline__ void queue_put(const QueueEnd<Index>& next, long long slot,
                                          long long offset, long long v) {
    next.queue[(next.q_end + slot) * next.queue_stride] = static_cast<Index>(v);
    if (slot % kTile == 0) next.tile_offsets[slot / kTile] = offset;
}

// Append v (with its out-degree) when `append`; all threads of the block call it together.
template <typename Index>
__device__ __forceinline__ void block_append(const QueueEnd<Index>& next, bool append,
                                             long long v, long long degree, long long* warp_sums,
                                             unsigned long long* s_base) {
    long long slot = 0, offset = 0;
    if (block_reserve(next, append ? 1 : 0, append ? degree : 0, warp_sums, s_base, &slot,
                      &offset) && append) {
        queue_put(next, slot, offset, v);
    }
}

}  // namespace

template <typename Index>
__global__ void __launch_bounds__(kBlock, 2)
bfs_persistent(const long long* __restrict__ indptr,
               const Index* __restrict__ indices,
               long long n,
               const long long* __restrict__ sources,
               long long n_sources,
               int depth_limit,
               int symmetric,
               double alpha,
               double beta,
               double gamma,
               int* dist,
               long long* parent,
               Index* parent_lo,
               long long parent_stride,
               Index* queue,
               long long queue_stride,
               unsigned* bitmaps,
               long long* tile_offsets,
               unsigned long long* counters,
               int e_bits,
               long long* trace,
               int trace_rows,
               long long target) {
    cg::grid_group grid = cg::this_grid();
    __shared__ long long s_start[kTile];  // tile-relative first work item of each vertex
    __shared__ long long s_begin[kTile];  // CSR position of each vertex's first edge
    __shared__ Index s_vertex[kTile];
    __shared__ long long s_warp_sums[kWarps];
    __shared__ unsigned long long s_base;
    __shared__ long long s_tile;

    const int lane = lane_id();
    const int warp = threadIdx.x >> 5;
    const long long tid = static_cast<long long>(blockIdx.x) * kBlock + threadIdx.x;
    const long long n_threads = static_cast<long long>(gridDim.x) * kBlock;
    const long long warp_id = tid >> 5;
    const long long n_warps_total = n_threads >> 5;
    const long long n_words = (n + 31) >> 5;
    const long long n_tiles = (n + kTile - 1) / kTile;
    const long long nnz = indptr[n];
    const unsigned long long edge_mask = (1ull << e_bits) - 1ull;
    const bool tracing = trace != nullptr && blockIdx.x == 0 && threadIdx.x == 0;

    // ---- Level 0: every vertex unvisited, then the sources claimed (queued as level 0). ----
    for (long long v = tid; v < n; v += n_threads) dist[v] = -1;
    grid.sync();
    {
        QueueEnd<Index> level0{&counters[0], queue, queue_stride, 0, tile_offsets, e_bits};
        for (long long first = static_cast<long long>(blockIdx.x) * kBlock; first < n_sources;
             first += n_threads) {  // block-uniform trip count (block_append needs the block)
            const long long i = first + threadIdx.x;
            bool claimed = false;
            long long v = 0, degree = 0;
            if (i < n_sources) {
                v = sources[i];
                if (atomicCAS(&dist[v], -1, 0) == -1) {
                    if (parent_lo != nullptr) parent_lo[v * parent_stride] = static_cast<Index>(-1);
                    degree = indptr[v + 1] - indptr[v];
                    claimed = true;
                }
            }
            block_append(level0, claimed, v, degree, s_warp_sums, &s_base);
        }
    }
    grid.sync();

    // ---- Level loop: every thread takes the same decisions from the same counters. ----
    // The current frontier is either queued (slots [q_front, q_front + size), tile offsets at
    // parity level & 1) or, after a bottom-up step, only in the bitmap of parity level & 1.
    long long q_front = 0;       // first queue slot of the current frontier, when queued
    long long q_free = 0;        // first unused queue slot
    bool queued = true;
    long long unexplored = nnz;  // m_u: out-edges of the vertices not yet visited
    long long previous_size = 0;
    bool bottom_up = false;
    int level = 0;
    for (;; ++level) {
        const unsigned long long packed = __ldcg(&counters[level % 3]);
        const long long size = static_cast<long long>(packed >> e_bits);  // n_f
        const long long edges = static_cast<long long>(packed & edge_mask);  // m_f
        unexplored -= edges;
        if (queued) q_free = q_front + size;
        if (size == 0 || (depth_limit >= 0 && level >= depth_limit)) break;
        if (target >= 0) {  // reached at an earlier level: every thread reads the same value
            const int reached_at = __ldcg(&dist[target]);
            if (reached_at >= 0 && reached_at <= level) break;
        }

        // Beamer's rule, plus: a bottom-up step visits all n vertices, so it must also beat a
        // top-down step over m_f edges (m_f * gamma > n).
        bool go_bottom_up = false;
        if (symmetric) {
            go_bottom_up = bottom_up
                ? !(size < previous_size && static_cast<double>(size) * beta <= static_cast<double>(n))
                : static_cast<double>(edges) * alpha > static_cast<double>(unexplored) &&
                      static_cast<double>(edges) * gamma > static_cast<double>(n);
        }
        if (tracing && level < trace_rows - 1) {
            long long* row = trace + static_cast<long long>(level) * kTraceColumns;
            row[0] = level;
            row[1] = go_bottom_up;
            row[2] = size;
            row[3] = edges;
            row[4] = global_timer();
        }
        if (tid == 0) counters[(level + 2) % 3] = 0;  // collects level + 2, during level + 1

        unsigned* front = bitmaps + (level & 1) * n_words;
        unsigned* next_front = bitmaps + ((level + 1) & 1) * n_words;
        long long* tiles = tile_offsets + (level & 1) * (n_tiles + 1);

        if (go_bottom_up && !bottom_up) {
            // Queue -> bitmap: the frontier is exactly the vertices at distance `level`.
            for (long long word = warp_id; word < n_words; word += n_warps_total) {
                const long long v = word * 32 + lane;
                const unsigned bits = __ballot_sync(kFullWarp, v < n && dist[v] == level);
                if (lane == 0) front[word] = bits;
            }
            grid.sync();
        }
        if (!go_bottom_up && !queued) {
            // Bitmap -> queue (after bottom-up steps): append the frontier's vertices, with
            // their degrees, so that the top-down step gets its tile offsets. counters[3] is
            // this pass's own counter, cleared after the sync below.
            QueueEnd<Index> here{&counters[3], queue, queue_stride, q_free, tiles, e_bits};
            for (long long first = static_cast<long long>(blockIdx.x) * kBlock; first < n_words;
                 first += n_threads) {  // block-uniform; one bitmap word (32 vertices) a thread
                const long long word = first + threadIdx.x;
                const unsigned bits = word < n_words ? front[word] : 0u;
                if (!__syncthreads_or(bits != 0)) continue;
                long long degrees = 0;
                for (unsigned rest = bits; rest != 0; rest &= rest - 1) {
                    const long long v = word * 32 + __ffs(rest) - 1;
                    degrees += indptr[v + 1] - indptr[v];
                }
                long long slot = 0, offset = 0;
                block_reserve(here, __popc(bits), degrees, s_warp_sums, &s_base, &slot, &offset);
                for (unsigned rest = bits; rest != 0; rest &= rest - 1) {
                    const long long v = word * 32 + __ffs(rest) - 1;
                    queue_put(here, slot++, offset, v);
                    offset += indptr[v + 1] - indptr[v];
                }
            }
            grid.sync();
            if (tid == 0) counters[3] = 0;
            q_front = q_free;
            q_free = q_front + size;
            queued = true;
        }
        bottom_up = go_bottom_up;

        if (bottom_up) {
            // ---- Bottom-up step: each unvisited vertex looks for a parent in `front`. ----
            // Nothing is queued: the next frontier is the bitmap next_front; its size and
            // out-degree sum are summed per lane and added once per block.
            long long found_count = 0, found_edges = 0;
            for (long long word = warp_id; word < n_words; word += n_warps_total) {
                const long long v = word * 32 + lane;
                long long found_parent = 0, begin = 0, end = 0;
                const bool found = bottom_up_parent(indptr, indices, front, v,
                                                    v < n && dist[v] == -1, &found_parent,
                                                    &begin, &end);
                if (found) {
                    dist[v] = level + 1;
                    if (parent_lo != nullptr) parent_lo[v * parent_stride] = static_cast<Index>(found_parent);
                    found_count += 1;
                    found_edges += end - begin;
                }
                const unsigned bits = __ballot_sync(kFullWarp, found);
                if (lane == 0) next_front[word] = bits;
            }
            const long long mine =
                static_cast<long long>((static_cast<unsigned long long>(found_count) << e_bits) +
                                       static_cast<unsigned long long>(found_edges));
            long long block_total;
            block_exclusive_sum(mine, s_warp_sums, &block_total);
            if (threadIdx.x == 0 && block_total != 0) {
                atomicAdd(&counters[(level + 1) % 3], static_cast<unsigned long long>(block_total));
            }
            queued = false;
        } else {
            // ---- Top-down step: W = n_f + m_f work items split evenly over the blocks. ----
            QueueEnd<Index> next{&counters[(level + 1) % 3], queue, queue_stride, q_free,
                                 tile_offsets + ((level + 1) & 1) * (n_tiles + 1), e_bits};
            const long long work = size + edges;
            const long long per_block = (work + gridDim.x - 1) / gridDim.x;
            const long long w0 = static_cast<long long>(blockIdx.x) * per_block;
            const long long w1 = min(work, w0 + per_block);
            const long long level_tiles = (size + kTile - 1) / kTile;
            if (w0 < w1) {  // block-uniform
                if (warp == 0) {
                    // Last tile t with t * kTile + tiles[t] <= w0: a 32-ary search by one warp.
                    long long lo = 0, hi = level_tiles;
                    while (hi - lo > 1) {
                        const long long step = (hi - lo + 31) / 32;
                        const long long t = lo + lane * step;
                        const bool before = t < hi && t * kTile + __ldcg(&tiles[t]) <= w0;
                        const unsigned ballot = __ballot_sync(kFullWarp, before);
                        // ballot has bit 0 (t = lo satisfies it): the guard is for safety only
                        lo += static_cast<long long>(ballot ? 31 - __clz(ballot) : 0) * step;
                        hi = min(hi, lo + step);
                    }
                    if (lane == 0) s_tile = lo;
                }
                __syncthreads();
                for (long long t = s_tile;; ++t) {
                    const long long t_begin = t * kTile + __ldcg(&tiles[t]);
                    const long long t_end =
                        t + 1 < level_tiles ? (t + 1) * kTile + __ldcg(&tiles[t + 1]) : work;
                    const long long i = t * kTile + threadIdx.x;
                    long long items = 0, begin = 0;
                    Index u = 0;
                    if (i < size) {
                        u = __ldcg(&queue[(q_front + i) * queue_stride]);
                        begin = indptr[u];
                        items = 1 + indptr[u + 1] - begin;
                    }
                    long long tile_items;
                    s_start[threadIdx.x] = block_exclusive_sum(items, s_warp_sums, &tile_items);
                    s_begin[threadIdx.x] = begin;
                    s_vertex[threadIdx.x] = u;
                    __syncthreads();
                    const long long lo = max(w0, t_begin) - t_begin;
                    const long long hi = min(w1, t_end) - t_begin;
                    for (long long first = lo; first < hi; first += kBlock) {  // block-uniform
                        const long long w = first + threadIdx.x;
                        bool claimed = false;
                        long long v = 0, degree = 0;
                        if (w < hi) {
                            int j = 0;  // last j with s_start[j] <= w
#pragma unroll
                            for (int step = kTile / 2; step > 0; step >>= 1) {
                                if (s_start[j + step] <= w) j += step;
                            }
                            const long long e = w - s_start[j] - 1;  // -1: the vertex's own item
                            if (e >= 0) {
                                v = indices[s_begin[j] + e];
                                if (dist[v] == -1 && atomicCAS(&dist[v], -1, level + 1) == -1) {
                                    if (parent_lo != nullptr) parent_lo[v * parent_stride] = s_vertex[j];
                                    degree = indptr[v + 1] - indptr[v];
                                    claimed = true;
                                }
                            }
                        }
                        block_append(next, claimed, v, degree, s_warp_sums, &s_base);
                    }
                    if (t_end >= w1) break;  // block_append ended with a barrier: smem is free
                }
            }
            q_front = q_free;
            queued = true;
        }
        grid.sync();
        previous_size = size;
    }

    if (tracing && level < trace_rows) {
        long long* row = trace + static_cast<long long>(level) * kTraceColumns;
        row[0] = level;
        row[1] = -1;
        row[2] = 0;
        row[3] = 0;
        row[4] = global_timer();
    }
    if (tid == 0) counters[3] = level;  // the levels expanded, for the launcher's stats
    if (parent == nullptr) return;
    // ---- Parents to int64; -1 where unreached (this also overwrites the queue words). ----
    for (long long v = tid; v < n; v += n_threads) {
        const long long p = static_cast<long long>(parent_lo[v * parent_stride]);
        parent[v] = dist[v] < 0 ? -1 : p;
    }
}
