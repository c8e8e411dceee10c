// bfs_owners.cu -- the level steps of a breadth-first search whose vertices are split among
// several owners (1-D partitioning), with nothing to sort or deduplicate between levels.
//
// What it computes (one owner; local ids 0..n_local-1 are global ids offset..offset+n_local-1)
//   bfs_owner_top_down<Index>   expands the frontier (local vertices at distance `level`) by one
//       level. For every edge u->v with u in the frontier:
//         * v owned here and unvisited: v is claimed exactly once, dist = level + 1,
//           parent = offset + u, and v - offset is appended to next_frontier;
//         * v owned by owner q = v / chunk elsewhere: v is sent at most ONCE PER TRAVERSAL by
//           this owner. Its bit in `sent` (a bitmap over global ids, kept for the whole
//           traversal) is tested and set with atomicOr; only the thread that set it appends
//           (v, offset + u) to owner q's queue. Correct because a vertex sent at level L is
//           claimed by its owner at level L + 1 at the latest: a later send could not lower
//           its distance. So queue q never holds more than owner q's vertex count, and the
//           queues are allocated once per traversal, not sized per level.
//   bfs_owner_claim<Index>      takes in the (target, parent) candidates one peer sent: an
//       unvisited target is claimed by atomicCAS on dist (-1 -> level + 1); the winner writes
//       the parent and appends the local id to next_frontier. Duplicates from several senders
//       need no sort: the claim resolves them.
//   bfs_owner_bottom_up<Index>  one bottom-up level of an undirected graph (the owner's rows are
//       also the in-edges of its vertices): every unvisited owned vertex scans its neighbours
//       until one is in `front`, the frontier bitmap of ALL owners over global ids (put
//       together from the owners' slices), and takes it as parent; next_front gets its bit.
//   bfs_owner_edge_end<Index>   the start of a top-down level in ONE launch of one block. The
//       frontier is what the previous level's steps appended: its length is counters[kNext],
//       read here on the device, so the host need not read it between the claims of one level
//       and the expansion of the next. It records the frontier (counters[kFrontier] = its
//       length, counters[kFrontierEdges] = its out-degree sum, read back with the step's
//       counters), zeroes the other counters, and writes edge_end, the inclusive prefix sum of
//       the frontier's out-degrees that the step's load balance needs (for frontiers the host
//       knows to be at most a few ten thousand vertices; beyond, the launcher reads the length
//       and uses CuPy's scan). On a grid a level is a few hundred vertices: what costs is the
//       number of launches and of host waits, the more so when owners share a GPU (each wait
//       may wait for the other process's context too).
//   frontier_to_bitmap<Index>, bitmap_to_frontier<Index>   an owner's frontier as local ids <->
//       its bitmap slice (at a change of direction). Index is unused: it only names the
//       instantiation, like the other entry points'.
//   gpipe/engine/compute/gpu_bfs_owners.py launches them; gpipe/engine/compute/cpu_bfs_owners.py holds the
//   Numba twins (same names without the template, same counters, same results up to which
//   parent wins a race); tests/test_kernels_gpu.py runs the CPU tests' cases on both.
//
// Technique
//   Top-down: edge-parallel, load-balanced by prefix sum + binary search, as in bfs.cu (one
//   thread per frontier edge, frontier_slot() finds its vertex). Appends are warp-aggregated.
//   Lanes of one warp may append to different queues (the local frontier or any owner's), so
//   lanes are grouped by destination with __match_any_sync and each group reserves its slots
//   with one atomicAdd (the aggregated atomics with a key of NVIDIA's "Using CUDA Warp-Level
//   Primitives", 2018); frontier.cuh's warp_append_slot is the one-queue case, used by the claim.
//   Out-degree sums of the claimed vertices (the direction heuristic's m_f) are summed per warp
//   by shuffles and added with one atomic per warp.
//   Bottom-up: one warp per 32-vertex word of next_front, a lane per vertex; a lane scans the
//   first kSeqScan = 16 neighbours alone and longer rows still unresolved are scanned by the whole
//   warp, 32 neighbours at a time, the lowest hit winning, so the parent is the first frontier
//   neighbour in row order either way (frontier.cuh's bottom_up_parent, shared with
//   bfs_persistent.cu). A ballot makes the word.
//   References: S. Beamer, K. Asanovic, D. Patterson, "Direction-Optimizing Breadth-First
//   Search", SC 2012; A. Buluc, K. Madduri, "Parallel Breadth-First Search on Distributed
//   Memory Systems", SC 2011 (1-D partitioning); D. Merrill, M. Garland, A. Grimshaw,
//   "Scalable GPU Graph Traversal", PPoPP 2012 (prefix-sum load balance).
//
// Counters (uint64[4 + n_owners]; the launcher passes an int64 CuPy array, same bits)
//   [kFrontier], [kFrontierEdges] length and out-degree sum of the frontier a top-down level
//   expanded; [kNext] length of next_frontier, [kNextEdges] out-degree sum of the vertices in
//   it; [kQueues + q] length of owner q's queue (this owner's own entry stays 0). A top-down
//   or bottom-up level begins by zeroing them (top-down: all but the frontier's two, which it
//   sets); claims add to them.
//
// Array invariants (n = global vertex count; chunk = ids per owner, a multiple of 64)
//   indptr         int64[n_local + 1]; out-edges of local u are indices[indptr[u] : indptr[u + 1]].
//   indices        Index[nnz]: GLOBAL target ids.
//   frontier       int64[>= k]: its first k = counters[kFrontier] entries are distinct local
//                  ids, each with dist == level (the buffer the previous level appended to).
//   edge_end       int64[>= k]: inclusive prefix sum of the frontier's out-degrees.
//   dist           int32[n_local]: -1 = unvisited; only -1 -> level + 1 changes (the claim).
//   parent         int64[n_local]: global ids, -1 = none; written once, by the claiming thread.
//   sent           uint32[ceil(n / 32)]: bits only ever set, for the whole traversal.
//   next_frontier  int64[n_local]: appends at counters[kNext]; a vertex is claimed once per
//                  traversal, so n_local slots always suffice.
//   queue_targets, queue_parents  Index[n]: owner q's queue is [q * chunk, q * chunk + size(q)).
//   front          uint32[ceil(n / 32)]: bit v & 31 of word v >> 5 for global v. Owner offsets
//                  are multiples of 64, so an owner's slice is whole words.
//   next_front     uint32[ceil(n_local / 32)], written whole by bfs_owner_bottom_up.
//
// Every kernel is a grid-stride loop whose trip count is uniform across each warp (blockDim is
// a multiple of 32), so the warp-wide ballots, shuffles and matches see all 32 lanes.
// Written for NVRTC (cupy.RawModule, -std=c++17): no standard headers; frontier.cuh (and the
// warp.cuh it includes) holds the helpers shared with the other traversal kernels.

#include "frontier.cuh"

namespace {

constexpr int kFrontier = 0;
constexpr int kFrontierEdges = 1;
constexpr int kNext = 2;
constexpr int kNextEdges = 3;
constexpr int kQueues = 4;
constexpr int kScanBlock = 1024;     // bfs_owner_edge_end: threads of its one block
constexpr int kScanPerThread = 8;    // consecutive frontier slots per thread and tile
constexpr int kScanWarps = kScanBlock / 32;
static_assert(kScanWarps == 32, "bfs_owner_edge_end scans the warps' sums with one warp");

// Add the warp's sum of `x` to *counter with one atomic. All 32 lanes must call it together.
__device__ __forceinline__ void warp_add(unsigned long long* counter, long long x) {
    const long long total = warp_sum(x);
    if ((threadIdx.x & 31) == 0 && total != 0) {
        atomicAdd(counter, static_cast<unsigned long long>(total));
    }
}

// Slot of this lane in the queue whose length is counters[key], when `append` (else 0, unused).
// Lanes with the same key share one atomicAdd. All 32 lanes must call it together.
__device__ __forceinline__ unsigned long long warp_append_slot_keyed(unsigned long long* counters,
                                                                     int key, bool append) {
    const unsigned appending = __ballot_sync(kFullWarp, append);
    unsigned long long slot = 0;
    if (append) {
        const int lane = threadIdx.x & 31;
        const unsigned group = __match_any_sync(appending, key);
        const int leader = __ffs(group) - 1;
        unsigned long long base = 0;
        if (lane == leader) {
            base = atomicAdd(&counters[key], static_cast<unsigned long long>(__popc(group)));
        }
        base = __shfl_sync(group, base, leader);
        slot = base + static_cast<unsigned long long>(__popc(group & ((1u << lane) - 1u)));
    }
    return slot;
}

// The end of a claim, all 32 lanes together: a claimed vertex (local id `v`) is appended to
// `frontier` at counters[kNext], and `degree` (its out-degree, 0 if not claimed) is added to
// counters[kNextEdges].
__device__ __forceinline__ void append_claimed(unsigned long long* counters, long long* frontier,
                                               bool claimed, long long v, long long degree) {
    warp_add(&counters[kNextEdges], degree);
    const unsigned long long slot = warp_append_slot(&counters[kNext], claimed);
    if (claimed) {
        frontier[slot] = v;
    }
}

}  // namespace

template <typename Index>
__global__ void __launch_bounds__(kScanBlock)
bfs_owner_edge_end(const long long* __restrict__ indptr,
                   const long long* __restrict__ frontier,
                   long long* __restrict__ edge_end,
                   unsigned long long* __restrict__ counters,
                   int n_counters) {
    // One block of kScanBlock threads. Tiles of kScanBlock * kScanPerThread slots: each thread
    // sums its kScanPerThread consecutive degrees, the block scans the threads' sums (warp
    // shuffles, then the warps' totals by warp 0), and `carry` takes the tile's total along.
    __shared__ long long warp_sums[kScanWarps];
    __shared__ long long s_k;
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    if (threadIdx.x == 0) {
        s_k = static_cast<long long>(counters[kNext]);
    }
    __syncthreads();  // every thread has the length before the counters are zeroed
    const long long k = s_k;
    if (threadIdx.x < n_counters && threadIdx.x != kFrontierEdges) {
        counters[threadIdx.x] = threadIdx.x == kFrontier ? static_cast<unsigned long long>(k) : 0ull;
    }
    long long carry = 0;  // sum of the tiles before this one (the same in every thread)
    const long long tile = static_cast<long long>(kScanBlock) * kScanPerThread;
    for (long long first = 0; first < k; first += tile) {  // block-uniform
        const long long begin = first + static_cast<long long>(threadIdx.x) * kScanPerThread;
        long long running[kScanPerThread];
        long long sum = 0;
#pragma unroll
        for (int j = 0; j < kScanPerThread; ++j) {
            const long long i = begin + j;
            if (i < k) {
                const long long u = frontier[i];
                sum += indptr[u + 1] - indptr[u];
            }
            running[j] = sum;  // inclusive, within this thread's slots
        }
        const long long inclusive = warp_inclusive_sum(sum);
        if (lane == 31) {
            warp_sums[warp] = inclusive;
        }
        __syncthreads();
        if (warp == 0) {
            warp_sums[lane] = warp_inclusive_sum(warp_sums[lane]);  // kScanWarps == 32
        }
        __syncthreads();
        const long long before = carry + (warp > 0 ? warp_sums[warp - 1] : 0) + inclusive - sum;
#pragma unroll
        for (int j = 0; j < kScanPerThread; ++j) {
            if (begin + j < k) {
                edge_end[begin + j] = before + running[j];
            }
        }
        carry += warp_sums[kScanWarps - 1];
        __syncthreads();  // warp_sums is rewritten by the next tile
    }
    if (threadIdx.x == 0) {
        counters[kFrontierEdges] = static_cast<unsigned long long>(carry);
    }
}

template <typename Index>
__global__ void bfs_owner_top_down(const long long* __restrict__ indptr,
                                   const Index* __restrict__ indices,
                                   long long offset,
                                   long long n_local,
                                   long long chunk,
                                   const long long* __restrict__ frontier,
                                   const long long* __restrict__ edge_end,
                                   int level,
                                   int* __restrict__ dist,
                                   long long* __restrict__ parent,
                                   unsigned* __restrict__ sent,
                                   long long* __restrict__ next_frontier,
                                   Index* __restrict__ queue_targets,
                                   Index* __restrict__ queue_parents,
                                   unsigned long long* __restrict__ counters) {
    // The frontier's length, recorded by bfs_owner_edge_end (or the launcher) before this launch.
    const long long k = static_cast<long long>(counters[kFrontier]);
    const long long n_edges = k > 0 ? edge_end[k - 1] : 0;
    warp_uniform_loop(n_edges, [&](long long e) {
        bool append = false;
        int key = kNext;
        long long v = 0, u = 0, degree = 0;
        if (e < n_edges) {
            v = frontier_target(indptr, indices, frontier, edge_end, k, e, &u);
            const long long local = v - offset;
            if (local >= 0 && local < n_local) {
                // Plain read first: most visited targets are rejected without an atomic.
                if (dist[local] == -1 && atomicCAS(&dist[local], -1, level + 1) == -1) {
                    parent[local] = offset + u;
                    degree = indptr[local + 1] - indptr[local];
                    append = true;
                }
            } else {
                // Test and set: only the thread that sets the bit sends v.
                const unsigned bit = 1u << (v & 31);
                if ((sent[v >> 5] & bit) == 0u && (atomicOr(&sent[v >> 5], bit) & bit) == 0u) {
                    key = kQueues + static_cast<int>(v / chunk);
                    append = true;
                }
            }
        }
        warp_add(&counters[kNextEdges], degree);
        const unsigned long long slot = warp_append_slot_keyed(counters, key, append);
        if (append) {
            if (key == kNext) {
                next_frontier[slot] = v - offset;
            } else {
                const long long at = static_cast<long long>(key - kQueues) * chunk +
                                     static_cast<long long>(slot);
                queue_targets[at] = static_cast<Index>(v);
                queue_parents[at] = static_cast<Index>(offset + u);
            }
        }
    });
}

template <typename Index>
__global__ void bfs_owner_claim(const long long* __restrict__ indptr,
                                long long offset,
                                const Index* __restrict__ targets,
                                const Index* __restrict__ parents,
                                long long count,
                                int level,
                                int* __restrict__ dist,
                                long long* __restrict__ parent,
                                long long* __restrict__ next_frontier,
                                unsigned long long* __restrict__ counters) {
    warp_uniform_loop(count, [&](long long i) {
        bool claimed = false;
        long long v = 0, degree = 0;
        if (i < count) {
            v = static_cast<long long>(targets[i]) - offset;
            if (dist[v] == -1 && atomicCAS(&dist[v], -1, level + 1) == -1) {
                parent[v] = static_cast<long long>(parents[i]);
                degree = indptr[v + 1] - indptr[v];
                claimed = true;
            }
        }
        append_claimed(counters, next_frontier, claimed, v, degree);
    });
}

template <typename Index>
__global__ void bfs_owner_bottom_up(const long long* __restrict__ indptr,
                                    const Index* __restrict__ indices,
                                    long long n_local,
                                    int level,
                                    int* __restrict__ dist,
                                    long long* __restrict__ parent,
                                    const unsigned* __restrict__ front,
                                    unsigned* __restrict__ next_front,
                                    unsigned long long* __restrict__ counters) {
    const int lane = threadIdx.x & 31;
    const long long warp_id = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
    const long long n_warps = (static_cast<long long>(gridDim.x) * blockDim.x) >> 5;
    const long long n_words = (n_local + 31) >> 5;
    long long found_count = 0, found_edges = 0;
    for (long long word = warp_id; word < n_words; word += n_warps) {  // warp-uniform
        const long long v = word * 32 + lane;
        long long found_parent = 0, begin = 0, end = 0;
        const bool found = bottom_up_parent(indptr, indices, front, v, v < n_local && dist[v] == -1,
                                            &found_parent, &begin, &end);
        if (found) {
            dist[v] = level + 1;
            parent[v] = found_parent;
            found_count += 1;
            found_edges += end - begin;
        }
        const unsigned bits = __ballot_sync(kFullWarp, found);
        if (lane == 0) {
            next_front[word] = bits;
        }
    }
    warp_add(&counters[kNext], found_count);
    warp_add(&counters[kNextEdges], found_edges);
}

template <typename Index>
__global__ void frontier_to_bitmap(const long long* __restrict__ frontier, long long k,
                                   unsigned* __restrict__ bitmap) {
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < k;
         i += stride) {
        const long long v = frontier[i];
        atomicOr(&bitmap[v >> 5], 1u << (v & 31));
    }
}

template <typename Index>
__global__ void bitmap_to_frontier(const unsigned* __restrict__ bitmap, long long n_words,
                                   long long* __restrict__ frontier,
                                   unsigned long long* __restrict__ counter) {
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long w = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; w < n_words;
         w += stride) {
        unsigned bits = bitmap[w];
        if (bits != 0u) {
            unsigned long long slot =
                atomicAdd(counter, static_cast<unsigned long long>(__popc(bits)));
            for (; bits != 0u; bits &= bits - 1u) {
                frontier[slot] = w * 32 + (__ffs(bits) - 1);
                ++slot;
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The fixed-size level (gpipe/engine/owners/bfs_levels.py): every exchange of a level has a size
// known before the level runs (bitmaps of the owners' ranges), so the host queues a level's
// kernels and collectives without learning any length first, and reads one small gathered
// counter block per level. Undirected graphs only (the owner's rows are its vertices' in-edges).
//
//   bfs_owner_level_begin<Index>  the start of a level in one launch: `visited` (the OR of
//       every level's gathered frontier, global ids) takes in the level's `front`, `marks` is
//       cleared (top-down levels; null for bottom-up) and the four counters are zeroed (null:
//       left to bfs_owner_edge_end, which zeroes them as it starts a top-down level).
//   bfs_owner_mark<Index>     top-down, first half: every out-edge u->v of the queued frontier
//       (the first k = counters[kFrontier] entries of `frontier`, local ids; edge_end as
//       bfs_owner_edge_end writes it) whose target is not yet in `visited` sets v's bit in
//       `marks` (global ids). Owned and remote targets alike: the owners swap the marks of each
//       other's ranges (a fixed-size all-to-all), and nothing is claimed here, so the parent is
//       left to the resolve. bfs_owner_mark_rows does the same one warp per vertex, for
//       frontiers longer than the one-block scan takes (k known on the host).
//   bfs_owner_resolve<Index>  the claim of a level, both directions: every unvisited owned
//       vertex v (with `masked`, only those marked by some owner: this owner's own marks OR
//       every peer's segment in `received`) scans its row for a neighbour in `front` (the
//       level's frontier, global ids) and takes the first as parent, as bfs_owner_bottom_up
//       does. A vertex marked top-down always finds one, since the mark came from an edge of
//       the frontier and the graph is undirected. next_front gets the claimed bits (written
//       whole), `frontier` the claimed local ids (appended at counters[kNext]), and
//       counters[kNextEdges] their out-degree sum.
// ---------------------------------------------------------------------------------------------

template <typename Index>
__global__ void bfs_owner_level_begin(const unsigned* __restrict__ front,
                                      unsigned* __restrict__ visited,
                                      unsigned* __restrict__ marks,
                                      long long n_words,
                                      unsigned long long* __restrict__ counters) {
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    const long long first = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (counters != nullptr && first < 4) {
        counters[first] = 0ull;
    }
    for (long long w = first; w < n_words; w += stride) {
        visited[w] |= front[w];
        if (marks != nullptr) {
            marks[w] = 0u;
        }
    }
}

namespace {

// Sets v's bit in `marks` unless `visited` or `marks` has it already (plain reads first: most
// targets of a large frontier are known or marked, and they cost no atomic).
__device__ __forceinline__ void mark_unvisited(const unsigned* __restrict__ visited,
                                               unsigned* __restrict__ marks, long long v) {
    const unsigned bit = 1u << (v & 31);
    if ((visited[v >> 5] & bit) == 0u && (marks[v >> 5] & bit) == 0u) {
        atomicOr(&marks[v >> 5], bit);
    }
}

}  // namespace

template <typename Index>
__global__ void bfs_owner_mark(const long long* __restrict__ indptr,
                               const Index* __restrict__ indices,
                               const long long* __restrict__ frontier,
                               const long long* __restrict__ edge_end,
                               const unsigned* __restrict__ visited,
                               unsigned* __restrict__ marks,
                               const unsigned long long* __restrict__ counters) {
    // Edge-parallel over the frontier's out-edges (prefix sum + binary search, as
    // bfs_owner_top_down): a hub's row is spread over the whole grid.
    const long long k = static_cast<long long>(counters[kFrontier]);
    const long long n_edges = k > 0 ? edge_end[k - 1] : 0;
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long e = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; e < n_edges;
         e += stride) {
        long long u = 0;
        mark_unvisited(visited, marks, frontier_target(indptr, indices, frontier, edge_end, k, e, &u));
    }
}

template <typename Index>
__global__ void bfs_owner_mark_rows(const long long* __restrict__ indptr,
                                    const Index* __restrict__ indices,
                                    const long long* __restrict__ frontier,
                                    long long k,
                                    const unsigned* __restrict__ visited,
                                    unsigned* __restrict__ marks) {
    // One warp per frontier vertex, its lanes striding over the row: no prefix sum. For
    // frontiers too long for bfs_owner_edge_end's one-block scan, which come after the hubs
    // are visited, so their rows are short.
    const int lane = threadIdx.x & 31;
    const long long warp_id = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
    const long long n_warps = (static_cast<long long>(gridDim.x) * blockDim.x) >> 5;
    for (long long i = warp_id; i < k; i += n_warps) {
        const long long u = frontier[i];
        const long long end = indptr[u + 1];
        for (long long e = indptr[u] + lane; e < end; e += 32) {
            mark_unvisited(visited, marks, static_cast<long long>(indices[e]));
        }
    }
}

template <typename Index>
__global__ void bfs_owner_resolve(const long long* __restrict__ indptr,
                                  const Index* __restrict__ indices,
                                  long long n_local,
                                  int level,
                                  const unsigned* __restrict__ front,
                                  int masked,
                                  const unsigned* __restrict__ own_marks,
                                  const unsigned* __restrict__ received,
                                  int n_owners,
                                  int owner,
                                  long long words,
                                  int* __restrict__ dist,
                                  long long* __restrict__ parent,
                                  unsigned* __restrict__ next_front,
                                  long long* __restrict__ frontier,
                                  unsigned long long* __restrict__ counters) {
    const int lane = threadIdx.x & 31;
    const long long warp_id = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
    const long long n_warps = (static_cast<long long>(gridDim.x) * blockDim.x) >> 5;
    const long long n_words = (n_local + 31) >> 5;
    long long found_edges = 0;
    for (long long word = warp_id; word < n_words; word += n_warps) {  // warp-uniform
        unsigned wanted = ~0u;
        if (masked) {
            wanted = own_marks[word];
            for (int q = 0; q < n_owners; ++q) {
                if (q != owner) {
                    wanted |= received[static_cast<long long>(q) * words + word];
                }
            }
        }
        const long long v = word * 32 + lane;
        const bool search = v < n_local && ((wanted >> lane) & 1u) != 0u && dist[v] == -1;
        long long found_parent = 0, begin = 0, end = 0;
        const bool found = bottom_up_parent(indptr, indices, front, v, search, &found_parent,
                                            &begin, &end);
        if (found) {
            dist[v] = level + 1;
            parent[v] = found_parent;
            found_edges += end - begin;
        }
        const unsigned bits = __ballot_sync(kFullWarp, found);
        if (lane == 0) {
            next_front[word] = bits;
        }
        const unsigned long long slot = warp_append_slot(&counters[kNext], found);
        if (found) {
            frontier[slot] = v;
        }
    }
    warp_add(&counters[kNextEdges], found_edges);
}

// ---------------------------------------------------------------------------------------------
// A top-down level from a small frontier sends its edges, not bitmaps: every owner's frontier
// out-edges as (target, parent) pairs in a slot of a size the host knows before the level (the
// largest frontier out-degree sum of any owner, from the last gathered counters), gathered by
// every owner. Fewer bytes than two bitmaps over all n ids while the frontier is small, and the
// claim takes its parent from the pair: no row is scanned (a hub's neighbours have long rows).
//
//   bfs_owner_pairs<Index>  slot e < n_edges of `pairs` (Index[2 * slots], interleaved) gets
//       the level's out-edge number e (as bfs_owner_mark numbers them, edge_end being the
//       inclusive prefix sum of the k frontier vertices' out-degrees): (v, offset + u), or
//       (-1, offset + u) where v is in `visited`; slots [n_edges, slots) get (-1, -1). It
//       also clears next_front (`words` words) and zeroes counters[kFrontier..kNextEdges].
//   bfs_owner_claim_pairs<Index>  every owner's pairs (`n_pairs` of them, gathered): `visited`
//       takes in every pair's target and parent (so it still holds every vertex known to be
//       reached, as the gathered frontiers keep it in the other levels); a target in
//       [offset, offset + n_local) still unvisited is claimed by atomicCAS on dist, takes the
//       pair's parent, its bit set in next_front, its local id appended to `frontier` at
//       counters[kNext], its out-degree added to counters[kNextEdges].
// ---------------------------------------------------------------------------------------------

template <typename Index>
__global__ void bfs_owner_pairs(const long long* __restrict__ indptr,
                                const Index* __restrict__ indices,
                                long long offset,
                                const long long* __restrict__ frontier,
                                const long long* __restrict__ edge_end,
                                long long k,
                                const unsigned* __restrict__ visited,
                                Index* __restrict__ pairs,
                                long long slots,
                                unsigned* __restrict__ next_front,
                                long long words,
                                unsigned long long* __restrict__ counters) {
    const long long n_edges = k > 0 ? edge_end[k - 1] : 0;
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    const long long first = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (first <= kNextEdges) {
        counters[first] = 0ull;
    }
    for (long long w = first; w < words; w += stride) {
        next_front[w] = 0u;
    }
    for (long long e = first; e < slots; e += stride) {
        long long v = -1, u = -1 - offset;
        if (e < n_edges) {
            v = frontier_target(indptr, indices, frontier, edge_end, k, e, &u);
            if (in_bitmap(visited, v)) {
                v = -1;
            }
        }
        pairs[2 * e] = static_cast<Index>(v);
        pairs[2 * e + 1] = static_cast<Index>(offset + u);
    }
}

template <typename Index>
__global__ void bfs_owner_claim_pairs(const long long* __restrict__ indptr,
                                      const Index* __restrict__ pairs,
                                      long long n_pairs,
                                      long long offset,
                                      long long n_local,
                                      int level,
                                      unsigned* __restrict__ visited,
                                      int* __restrict__ dist,
                                      long long* __restrict__ parent,
                                      unsigned* __restrict__ next_front,
                                      long long* __restrict__ frontier,
                                      unsigned long long* __restrict__ counters) {
    warp_uniform_loop(n_pairs, [&](long long i) {
        bool claimed = false;
        long long local = 0, degree = 0;
        if (i < n_pairs) {
            const long long v = static_cast<long long>(pairs[2 * i]);
            const long long u = static_cast<long long>(pairs[2 * i + 1]);
            if (u >= 0 && !in_bitmap(visited, u)) {
                atomicOr(&visited[u >> 5], 1u << (u & 31));
            }
            if (v >= 0) {
                if (!in_bitmap(visited, v)) {
                    atomicOr(&visited[v >> 5], 1u << (v & 31));
                }
                local = v - offset;
                if (local >= 0 && local < n_local && dist[local] == -1 &&
                    atomicCAS(&dist[local], -1, level + 1) == -1) {
                    parent[local] = u;
                    atomicOr(&next_front[local >> 5], 1u << (local & 31));
                    degree = indptr[local + 1] - indptr[local];
                    claimed = true;
                }
            }
        }
        append_claimed(counters, frontier, claimed, local, degree);
    });
}
