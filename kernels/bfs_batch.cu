// bfs_batch.cu -- breadth-first search from up to 64 sources at once, one bit per source.
//
// What it computes
//   For k <= 64 sources s_0 .. s_{k-1} of a one-owner CSR (offset 0): dist[i * n + v] = hops
//   from s_i to v (int32, -1 unreached or beyond the depth limit), written once per entry by
//   bfs_batch_dist after the level loop; and, on request, parent[i * n + v] = some u with an
//   edge u -> v and dist[i, u] == dist[i, v] - 1 (-1 for sources and unreached), by
//   bfs_batch_parents_pull (in-edges: the CSR itself when symmetric, else an in-CSR) or
//   bfs_batch_parents_push (out-edges, any graph). gpipe/engine/compute/gpu_batch.py (bfs_batch,
//   bfs_batch_parents) drives them; tests/test_batch_gpu.py checks every source's row against
//   scipy.sparse.csgraph and validates every parent.
//
// Technique: bit-parallel multi-source BFS
//   MS-BFS (M. Then et al., "The More the Merrier: Efficient Multi-Source Graph Traversal",
//   VLDB 2015) on the GPU as in iBFS (H. Liu, H. H. Huang, Y. Hu, "iBFS: Concurrent
//   Breadth-First Search on GPUs", SIGMOD 2016): each vertex holds three 64-bit words, bit i
//   for source i: seen (reached), front (reached at the current level), next (reached at the
//   next level). One scan of an edge u -> v moves every source's frontier at once:
//   next[v] |= front[u] & ~seen[v].
//   Direction-optimizing (S. Beamer, K. Asanovic, D. Patterson, SC 2012), decided on the host
//   from the counters of the previous level (one 32-byte read per level, ~8 levels on kron22):
//     top-down  (bfs_batch_top_down): edge-parallel over the out-edges of the vertices whose
//               front word is non-zero (a queue built by bfs_batch_settle), load-balanced by
//               prefix sum + binary search as bfs.cu, the search staged in shared memory per
//               chunk of edges (batch.cuh); atomicOr of the useful bits into next[v],
//               skipped when next[v] already holds them (bits only ever get added).
//     bottom-up (bfs_batch_bottom_up): every vertex still missing some live source's bit
//               (want = ~seen[v] & live, live = the sources whose frontier is not empty) ORs the
//               front words of its in-neighbours and stops as soon as every wanted bit is
//               found; one writer per vertex, no atomics. A lane scans the first kSeqScan
//               in-neighbours alone; longer rows still unresolved are scanned by the whole warp,
//               32 at a time (the pattern of frontier.cuh's bottom_up_parent). The live mask
//               keeps a source that is finished (or isolated) from forcing full row scans.
//   bfs_batch_settle closes a level: new = next & ~seen; seen |= new; front = new; next = 0;
//   it queues the vertices with new != 0 (warp-aggregated appends) with their out-degrees and
//   sums the level's counters (block-reduced, one atomic per warp at the end).
//
//   Distances without a store per (source, vertex) per level: level bit-planes. The level
//   at which bit i of v was set is kept bit-sliced: plane p holds, for each vertex, the bits of
//   the sources whose distance to v has bit p set (settle ORs `new` into plane p for every bit
//   p of the level). After the loop, bfs_batch_dist writes dist[i * n + v] for every i from
//   seen[v] and v's planes: one thread per vertex, rows i in turn, so each warp store covers
//   32 consecutive vertices of one row (coalesced). The (k, n) table is written exactly once;
//   for kron22 and 64 sources that is 1.07 GB, the largest cost of a batch.
//
//   Width 64 (one word per vertex per set), not 128 or 256: the front words are gathered at
//   random by every edge scan, and at 64 bits kron22's front array is 34 MB, inside the H100's
//   50 MB L2; two words per vertex would double the gathered bytes and spill L2 while saving
//   only the index reads (4 bytes of 12 per edge). The dist write (k * n * 4 bytes) grows with
//   the number of sources whatever the width, so wider batches save little of it.
//
// Array invariants (n vertices, nnz = indptr[n] edges, k <= 64 sources)
//   indptr       int64[n + 1] non-decreasing; out-edges of u are indices[indptr[u]:indptr[u + 1]].
//   indices      Index[nnz] targets in [0, n).
//   in_indptr, in_indices  the in-edges in the same form (== indptr, indices when symmetric).
//   seen, front, next  uint64[n]; zero on entry; bit i is source i.
//   planes       uint64[n_planes * n]; plane p at planes + p * n; zero on entry;
//                n_planes > bit length of every level settled (the launcher grows it).
//   queue        Index[n], degree int64[n]: vertices with new != 0 at the last settle, and
//                their out-degrees (count in counters[0]).
//   edge_end     int64[count]: inclusive scan of degree[:count] (the launcher's cupy.cumsum).
//   counters     uint64[4], zero before each settle: [0] queued vertices (n_f), [1] their
//                out-degree sum (m_f), [2] in-degree sum of the vertices still missing a live
//                bit (m_u), [3] OR of the new words (the next level's live mask).
//   dist         int32[k * n]; parent int64[k * n]; rows are sources.
//
// Written for NVRTC (cupy.RawModule, -std=c++17): no standard headers; frontier.cuh (and
// warp.cuh) hold the warp append and the frontier search shared with the other kernels.

#include "frontier.cuh"
#include "batch.cuh"

namespace {

constexpr long long kSeqScan = 16;  // neighbours a lane scans alone before its warp helps
constexpr int kItems = 4;           // edges per thread per chunk of a top-down step

__device__ __forceinline__ unsigned long long warp_or(unsigned long long x) {
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) x |= __shfl_xor_sync(kFullWarp, x, d);
    return x;
}

__device__ __forceinline__ unsigned long long warp_sum_u(unsigned long long x) {
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) x += __shfl_xor_sync(kFullWarp, x, d);
    return x;
}

}  // namespace

// next[sources[i]] |= 1 << i: level 0 enters as a "next" level, which settle(level 0) closes.
template <typename Index>
__global__ void bfs_batch_seed(const long long* __restrict__ sources, long long k,
                               unsigned long long* next) {
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < k;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        atomicOr(next + sources[i], 1ull << i);
    }
}

// Close level `level`: see the header. `live` is the current level's live mask (all bits at
// level 0); m_u counts vertices missing one of its bits (a superset of the next mask: a
// heuristic only).
template <typename Index>
__global__ void bfs_batch_settle(const long long* __restrict__ indptr,
                                 const long long* __restrict__ in_indptr, long long n, int level,
                                 unsigned long long live, unsigned long long* seen,
                                 unsigned long long* front, unsigned long long* next,
                                 unsigned long long* planes, int n_planes, Index* queue,
                                 long long* degree, unsigned long long* counters) {
    unsigned long long m_f = 0, m_u = 0, any = 0;
    warp_uniform_loop(n, [&](long long v) {  // warp_append_slot needs all lanes
        unsigned long long fresh = 0;
        long long out_degree = 0;
        if (v < n) {
            const unsigned long long s = seen[v];
            fresh = next[v] & ~s;
            const unsigned long long now = s | fresh;
            if (fresh != 0) {
                seen[v] = now;
                for (int p = 0; p < n_planes; ++p) {
                    if ((level >> p) & 1) planes[static_cast<long long>(p) * n + v] |= fresh;
                }
            }
            front[v] = fresh;
            next[v] = 0;
            out_degree = indptr[v + 1] - indptr[v];
            if (fresh != 0) {
                m_f += static_cast<unsigned long long>(out_degree);
                any |= fresh;
            }
            if ((~now & live) != 0) {
                m_u += static_cast<unsigned long long>(in_indptr[v + 1] - in_indptr[v]);
            }
        }
        const unsigned long long slot = warp_append_slot(&counters[0], fresh != 0);
        if (fresh != 0) {
            queue[slot] = static_cast<Index>(v);
            degree[slot] = out_degree;
        }
    });
    // counters[0] was advanced by the appends; the sums go in once per warp.
    m_f = warp_sum_u(m_f);
    m_u = warp_sum_u(m_u);
    any = warp_or(any);
    if ((threadIdx.x & 31) == 0) {
        if (m_f) atomicAdd(&counters[1], m_f);
        if (m_u) atomicAdd(&counters[2], m_u);
        if (any) atomicOr(&counters[3], any);
    }
}

// Top-down step: every out-edge u -> v of the queued vertices, one thread per edge; each block
// takes chunks of kItems * blockDim consecutive edges, their slots staged (batch.cuh).
template <typename Index>
__global__ void bfs_batch_top_down(const long long* __restrict__ indptr,
                                   const Index* __restrict__ indices,
                                   const Index* __restrict__ queue,
                                   const long long* __restrict__ edge_end, long long count,
                                   const unsigned long long* __restrict__ seen,
                                   const unsigned long long* __restrict__ front,
                                   unsigned long long* next) {
    __shared__ long long s_end[kStageSlots];
    __shared__ long long s_meta[2];
    for_each_staged_edge<kItems>(edge_end, count, s_end, s_meta,
                                 [&](long long e, long long e1, const StagedChunk& staged) {
        if (e < e1) {
            const long long i = chunk_slot(edge_end, staged, s_end, e);
            const long long u = static_cast<long long>(queue[i]);
            const long long v = static_cast<long long>(indices[indptr[u + 1] - (edge_end[i] - e)]);
            const unsigned long long bits = front[u] & ~seen[v];
            // next only gains bits during the step: a value read here that holds them all is
            // final.
            if (bits != 0 && (bits & ~__ldcg(next + v)) != 0) atomicOr(next + v, bits);
        }
    });
}

// Bottom-up step: each vertex missing a live bit ORs its in-neighbours' front words.
template <typename Index>
__global__ void bfs_batch_bottom_up(const long long* __restrict__ in_indptr,
                                    const Index* __restrict__ in_indices, long long n,
                                    unsigned long long live,
                                    const unsigned long long* __restrict__ seen,
                                    const unsigned long long* __restrict__ front,
                                    unsigned long long* next) {
    const int lane = threadIdx.x & 31;
    const long long n_warps = (static_cast<long long>(gridDim.x) * blockDim.x) >> 5;
    for (long long warp = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
         warp * 32 < n; warp += n_warps) {
        const long long v = warp * 32 + lane;
        unsigned long long want = 0, got = 0;
        long long begin = 0, end = 0;
        if (v < n) {
            want = ~seen[v] & live;
            if (want != 0) {
                begin = in_indptr[v];
                end = in_indptr[v + 1];
                const long long stop = end < begin + kSeqScan ? end : begin + kSeqScan;
                for (long long j = begin; j < stop && (got & want) != want; ++j) {
                    got |= front[static_cast<long long>(in_indices[j])];
                }
            }
        }
        // Long rows still missing bits: the whole warp, 32 in-neighbours at a time.
        warp_each_row((got & want) != want && end - begin > kSeqScan, begin, end,
                      [&](int owner, long long from, long long to) {
            const unsigned long long owner_want = __shfl_sync(kFullWarp, want, owner);
            unsigned long long owner_got = __shfl_sync(kFullWarp, got, owner);
            for (long long first = from + kSeqScan; first < to && (owner_got & owner_want) != owner_want;
                 first += 32) {
                const long long j = first + lane;
                const unsigned long long mine =
                    j < to ? front[static_cast<long long>(in_indices[j])] : 0ull;
                owner_got |= warp_or(mine);
            }
            if (lane == owner) got = owner_got;
        });
        if (v < n && want != 0) next[v] = got & want;
    }
}

// dist[i * n + v] for every source i < k and vertex v, from seen[v] and the level planes.
template <typename Index>
__global__ void bfs_batch_dist(long long n, int k, const unsigned long long* __restrict__ seen,
                               const unsigned long long* __restrict__ planes, int n_planes,
                               int* __restrict__ dist) {
    constexpr int kHeld = 8;  // planes kept in registers; more (levels >= 256) are re-read
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long v = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; v < n;
         v += stride) {
        const unsigned long long s = seen[v];
        unsigned long long held[kHeld];
#pragma unroll
        for (int p = 0; p < kHeld; ++p) {
            held[p] = p < n_planes ? planes[static_cast<long long>(p) * n + v] : 0ull;
        }
        for (int i = 0; i < k; ++i) {
            int d = -1;
            if ((s >> i) & 1ull) {
                d = 0;
#pragma unroll
                for (int p = 0; p < kHeld; ++p) d |= static_cast<int>((held[p] >> i) & 1ull) << p;
                for (int p = kHeld; p < n_planes; ++p) {
                    d |= static_cast<int>((planes[static_cast<long long>(p) * n + v] >> i) & 1ull) << p;
                }
            }
            dist[static_cast<long long>(i) * n + v] = d;
        }
    }
}

// Parents by pull: for source i = blockIdx.y and each vertex v, the first in-neighbour u (row
// order) with dist[i, u] == dist[i, v] - 1; -1 for sources and unreached vertices. Rows longer
// than kSeqScan that are still unresolved are scanned by the whole warp, lowest hit winning.
template <typename Index>
__global__ void bfs_batch_parents_pull(const long long* __restrict__ in_indptr,
                                       const Index* __restrict__ in_indices, long long n,
                                       const int* __restrict__ dist, long long* __restrict__ parent) {
    const int lane = threadIdx.x & 31;
    const long long row = static_cast<long long>(blockIdx.y) * n;
    const int* d_row = dist + row;
    const long long n_warps = (static_cast<long long>(gridDim.x) * blockDim.x) >> 5;
    for (long long warp = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
         warp * 32 < n; warp += n_warps) {
        const long long v = warp * 32 + lane;
        int want = -2;  // the distance a parent has; -2: none wanted
        long long begin = 0, end = 0, found = -1;
        if (v < n) {
            const int dv = d_row[v];
            if (dv > 0) {
                want = dv - 1;
                begin = in_indptr[v];
                end = in_indptr[v + 1];
                const long long stop = end < begin + kSeqScan ? end : begin + kSeqScan;
                for (long long j = begin; j < stop; ++j) {
                    const long long u = static_cast<long long>(in_indices[j]);
                    if (d_row[u] == want) {
                        found = u;
                        break;
                    }
                }
            }
        }
        warp_each_row(found < 0 && want >= 0 && end - begin > kSeqScan, begin, end,
                      [&](int owner, long long from, long long to) {
            const int owner_want = __shfl_sync(kFullWarp, want, owner);
            long long winner = 0;
            if (warp_first_neighbour(in_indices, from + kSeqScan, to,
                                     [&](long long u) { return d_row[u] == owner_want; },
                                     &winner) &&
                lane == owner) {
                found = winner;
            }
        });
        if (v < n) parent[row + v] = found;
    }
}

// Parents by push, for graphs without in-edges: parent must hold -1 everywhere on entry; for
// source i = blockIdx.y and every edge u -> v with dist[i, u] >= 0 and dist[i, v] ==
// dist[i, u] + 1, parent[i, v] = u (plain stores: every writer is a valid parent).
template <typename Index>
__global__ void bfs_batch_parents_push(const long long* __restrict__ indptr,
                                       const Index* __restrict__ indices, long long n,
                                       const int* __restrict__ dist, long long* __restrict__ parent) {
    const long long row = static_cast<long long>(blockIdx.y) * n;
    const int* d_row = dist + row;
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    // One thread per vertex u; rows longer than 32 go to the whole warp.
    const int lane = threadIdx.x & 31;
    for (long long first = static_cast<long long>(blockIdx.x) * blockDim.x; first < n;
         first += stride) {
        const long long u = first + threadIdx.x;
        int du = -1;
        long long begin = 0, end = 0;
        if (u < n) {
            du = d_row[u];
            if (du >= 0) {
                begin = indptr[u];
                end = indptr[u + 1];
            }
        }
        const bool alone = du >= 0 && end - begin <= 32;
        if (alone) {
            for (long long j = begin; j < end; ++j) {
                const long long v = static_cast<long long>(indices[j]);
                if (d_row[v] == du + 1) parent[row + v] = u;
            }
        }
        warp_each_row(du >= 0 && !alone, begin, end, [&](int owner, long long from, long long to) {
            const int owner_d = __shfl_sync(kFullWarp, du, owner);
            const long long owner_u = __shfl_sync(kFullWarp, u, owner);
            for (long long j = from + lane; j < to; j += 32) {
                const long long v = static_cast<long long>(indices[j]);
                if (d_row[v] == owner_d + 1) parent[row + v] = owner_u;
            }
        });
    }
}
