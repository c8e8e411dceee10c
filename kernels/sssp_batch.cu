// sssp_batch.cu -- shortest paths from k sources at once: near-far over (source, vertex) pairs.
//
// What it computes
//   For sources s_0 .. s_{k-1} of a one-owner CSR (offset 0) and weights w >= 0 (not NaN),
//   writing (i, v) for the entry of source i and vertex v (at (v << shift) + i while the kernels
//   run, at i * n + v in the result): dist(i, v) = length of a shortest path from s_i to v
//   (+inf unreached, or farther than max_distance), stamp(i, v) = the pass that last lowered
//   it (0 for sources), and parent(i, v) = some u with an edge u -> v of weight w,
//   dist(i, u) + w == dist(i, v) exactly and stamp(i, u) < stamp(i, v) (-1 for sources and
//   unreached vertices): recorded by
//   the relaxation, checked by sssp_batch_check, and repaired where a race spoiled it by
//   sssp_batch_repair_pull (symmetric graphs: v's own row holds the twins of its in-edges) or
//   sssp_batch_repair_push (any graph: the out-edges of every vertex, for the rows of sources
//   with a failure). gpipe/engine/compute/gpu_batch.py (sssp_batch) drives the passes from the host;
//   tests/test_batch_gpu.py checks every row against scipy.sparse.csgraph.dijkstra and
//   validates every parent.
//
// Technique
//   Near-far (A. Davidson, S. Baxter, M. Garland, J. Owens, "Work-Efficient Parallel GPU
//   Methods for Single-Source Shortest Paths", IPDPS 2014), the single-source kernel of
//   sssp_nearfar.cu generalized to k traversals resident at once: the queue holds PAIRS
//   p = (v << shift) + i (vertex v, source column i < k <= 1 << shift), and one launch relaxes
//   the out-edges of every queued pair, whatever its source. This is near-far on the disjoint
//   union of k copies of the graph, so its correctness is the single-source kernel's; all
//   sources share one
//   threshold T, which lets a batch of sources fill the GPU from the first pass (a single
//   source starts with one vertex) and pays the passes' fixed costs once for all k.
//   Each RELAX pass (sssp_batch_prepare, then sssp_batch_relax): prepare records, per queue
//   slot, the snapshot dist[p], the source column i, the CSR row end and the out-degree; the
//   launcher scans the degrees (cupy.cumsum, CUB); relax gives one thread to each edge of the
//   pass, finds its slot by binary search (prefix sum + binary search, as bfs.cu, staged in
//   shared memory per block's chunk of edges: batch.cuh), skips the
//   slot when dist[p] fell below its snapshot (the pair is queued again and relaxes from the
//   lower value), and lowers dist(i, v) with the native 64-bit atomicMin on the IEEE bits
//   (for non-negative doubles the bit order is the numeric order). A lowered pair goes to the
//   next near queue when below T, else to the far pile; per-pair marks keep each queue free
//   of repeats (near_mark[p] = r: queued for pass r + 1; far_mark[p] = epoch: on the pile).
//   When the near queue is empty, a SPLIT pass (sssp_batch_split) raises T to
//   max(T, min far) + delta and moves the far pairs with T_old <= dist < T (or dist <= the far
//   minimum, so that progress survives rounding) to the near queue; below T_old they were
//   settled since (dropped), the rest stay. The host reads three counters per pass (near
//   appends, far appends, far minimum): one 24-byte read, tens of microseconds, against
//   milliseconds of relaxation per pass for a batch.
//   Layout: vertex-major. The k sources' entries of one vertex are adjacent (512 bytes of
//   distances for 64 sources), so the relaxations of one pass that reach a popular vertex
//   from several sources share cache lines, and the batch's working set behaves more like one
//   source's (a source-major table would spread them over k regions of 8 * n bytes, each
//   relaxation a cache miss of its own). sssp_batch_transpose writes the (k, n) result once.
//   Parents: as in sssp_nearfar.cu, the lowering that set a pair's final value read its
//   source's final value in an earlier pass, so a tight edge whose source has a smaller stamp
//   always exists, and stamps strictly decrease along parents (no cycle, even through
//   zero-weight cycles). The relaxation stores parent and parent_edge on each lowering (two
//   plain stores, possibly interleaved with another thread's); the check keeps a parent whose
//   edge is in u's row, targets v, is tight and stamp-ordered, and lists the rest.
//   max_distance: a candidate above it is dropped, so farther pairs stay unreached and the
//   traversal ends once nothing nearer is left. The same with negative weights (Dijkstra's
//   cutoff: the search never extends a path beyond it, so a reached pair's parent is
//   reached, as in the CPU kernels); a negative cycle is found only where this bounded
//   search reaches it.
//   Shared edge scans (the *_shared kernels, sssp_batch(shared_scans=True)): the near queue
//   holds vertices, each with a 64-bit mask of the sources whose pair is queued, so one read of
//   a vertex's row relaxes it for all of them (MS-BFS's shared scans, for weights); the far
//   pile, marks of pairs, stamps and parents are the same. Which variant is faster depends on
//   how much the sources' frontiers overlap; gpipe.tools.gpu_batch_check times both.
//   Negative weights (negative != 0): frontier Bellman-Ford passes (the launcher sets
//   delta = inf, so every lowered pair is near), the minimum by a compare-and-swap loop on
//   doubles (atomics.cuh), and no skipping of stale slots: pass r has then found every path
//   of at most r edges, so a pair lowered in pass n lies on a negative cycle's reach.
//
// Array invariants (n vertices, nnz edges, k sources, stride = 1 << shift >= k, P = n * stride
// pairs; pair ids are long long; columns i >= k are never touched but stay +inf / 0 / -1)
//   indptr      int64[n + 1]; out-edges of u are indices/weights[indptr[u] : indptr[u + 1]].
//   indices     Index[nnz] in [0, n); weights Weight[nnz] (double or float), >= 0, not NaN;
//               a float weight is widened to double before it is added.
//   dist        float64[P]: +inf, 0 at each (i, s_i) on entry; only lowered.
//               (The result: float64[k * n] distances and int64[k * n] parents, source-major.)
//   stamp       int32[P] zero on entry; near_mark, far_mark int32[P] -1 on entry.
//   queue, next, far, far_next  int64[P] pairs (each queue holds a pair at most once).
//   snap        float64[q], base int64[q] (the source column i), row_end int64[q],
//               degree int64[q]: per slot of the
//               current queue; edge_end int64[q] the inclusive scan of degree.
//   parent      int64[P] -1 on entry; parent_edge int64[P] (read only where parent >= 0).
//   counters    uint64[3] = {near appends, far appends, far minimum bits}, {0, 0, +inf bits}
//               on entry to each pass.
//
// Written for NVRTC (cupy.RawModule, -std=c++17): no standard headers; frontier.cuh holds the
// warp-aggregated append and the frontier search shared with the other traversal kernels,
// batch.cuh the staged slot search, atomics.cuh the compare-and-swap minimum on doubles.

#include "atomics.cuh"
#include "frontier.cuh"
#include "batch.cuh"

namespace {

constexpr int kItems = 4;  // edges per thread per chunk of a relax pass

__device__ __forceinline__ unsigned long long double_bits(double x) {
    return static_cast<unsigned long long>(__double_as_longlong(x));
}

// Queue slot t's CSR row (vertex u): its end in row_end[t], its out-degree in degree[t].
__device__ __forceinline__ void record_row(const long long* __restrict__ indptr, long long u,
                                           long long t, long long* __restrict__ row_end,
                                           long long* __restrict__ degree) {
    const long long end = indptr[u + 1];
    row_end[t] = end;
    degree[t] = end - indptr[u];
}

// dist[p] = min(dist[p], cand); true when this call lowered it. Negative weights: the
// compare-and-swap loop on doubles (atomics.cuh); else the native 64-bit atomicMin on the IEEE
// bits (for non-negative doubles the bit order is the numeric order).
__device__ __forceinline__ bool lower(double* dist, long long p, double cand, int negative) {
    if (negative != 0) {
        return atomic_min_double(dist + p, cand);
    }
    const unsigned long long old =
        atomicMin(reinterpret_cast<unsigned long long*>(dist + p), double_bits(cand));
    return double_bits(cand) < old;
}

// Append pair p to the next near queue or the far pile (never both), warp-aggregated; all lanes
// of the warp call it together.
__device__ __forceinline__ void route(bool lowered, long long p, double value, double threshold,
                                     int pass, int epoch, int* near_mark, int* far_mark,
                                     long long* next, long long* far, long long far_len,
                                     unsigned long long* counters) {
    bool to_near = false, to_far = false;
    if (lowered) {
        if (value < threshold) {
            to_near = atomicExch(near_mark + p, pass) != pass;
        } else {
            atomicMin(counters + 2, double_bits(value));
            to_far = atomicExch(far_mark + p, epoch) != epoch;
        }
    }
    const unsigned long long at_near = warp_append_slot(counters + 0, to_near);
    if (to_near) next[at_near] = p;
    const unsigned long long at_far = warp_append_slot(counters + 1, to_far);
    if (to_far) far[far_len + static_cast<long long>(at_far)] = p;
}

}  // namespace

// Per slot of the queue: the snapshot, the source column i, the CSR row end and the out-degree.
template <typename Index>
__global__ void sssp_batch_prepare(const long long* __restrict__ indptr, int shift,
                                   const long long* __restrict__ queue, long long q,
                                   const double* __restrict__ dist, double* __restrict__ snap,
                                   long long* __restrict__ base, long long* __restrict__ row_end,
                                   long long* __restrict__ degree) {
    for (long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; t < q;
         t += static_cast<long long>(gridDim.x) * blockDim.x) {
        const long long p = queue[t];
        snap[t] = dist[p];
        base[t] = p & ((1ll << shift) - 1);
        record_row(indptr, p >> shift, t, row_end, degree);
    }
}

// One RELAX pass over every out-edge of the q queued pairs (edge_end[q - 1] edges).
template <typename Index, typename Weight>
__global__ void sssp_batch_relax(const Index* __restrict__ indices,
                                 const Weight* __restrict__ weights,
                                 const long long* __restrict__ queue, long long q,
                                 const double* __restrict__ snap, const long long* __restrict__ base,
                                 const long long* __restrict__ row_end,
                                 const long long* __restrict__ edge_end, int shift, double threshold,
                                 double max_distance, int pass, int epoch, int negative,
                                 double* dist, int* stamp,
                                 int* near_mark, int* far_mark, long long* next, long long* far,
                                 long long far_len, long long* parent, long long* parent_edge,
                                 unsigned long long* counters) {
    __shared__ long long s_end[kStageSlots];
    __shared__ long long s_meta[2];
    // Every lane runs every item (route needs all 32 lanes).
    for_each_staged_edge<kItems>(edge_end, q, s_end, s_meta,
                                 [&](long long e, long long e1, const StagedChunk& staged) {
        bool lowered = false;
        long long target = 0;
        double cand = 0.0;
        if (e < e1) {
            const long long t = chunk_slot(edge_end, staged, s_end, e);
            const long long p = queue[t];
            const double from = snap[t];
            // Lowered since the snapshot: queued again, it relaxes from the lower value. (Not
            // with negative weights: there every pass relaxes its whole snapshot, so that pass
            // r has found every path of r edges and the pass bound detects negative cycles.)
            if (negative != 0 || __ldcg(dist + p) == from) {
                const long long j = row_end[t] - (edge_end[t] - e);
                cand = from + weights[j];
                target = (static_cast<long long>(indices[j]) << shift) + base[t];
                if (cand <= max_distance && cand < __ldcg(dist + target)) {
                    lowered = lower(dist, target, cand, negative);
                    if (lowered) {
                        stamp[target] = pass;
                        parent[target] = p >> shift;
                        parent_edge[target] = j;
                    }
                }
            }
        }
        route(lowered, target, cand, threshold, pass, epoch, near_mark, far_mark, next, far,
              far_len, counters);
    });
}

// One SPLIT pass over the far pile: see the header.
template <typename Index>
__global__ void sssp_batch_split(const long long* __restrict__ far, long long far_len,
                                 const double* __restrict__ dist, double threshold_old,
                                 double threshold, double split_floor, int pass, int* far_mark,
                                 long long* next, long long* far_next,
                                 unsigned long long* counters) {
    warp_uniform_loop(far_len, [&](long long i) {
        bool move = false, keep = false;
        long long p = 0;
        if (i < far_len) {
            p = far[i];
            const double d = dist[p];
            move = d >= threshold_old && (d < threshold || d <= split_floor);
            keep = d >= threshold_old && !move;
            if (keep) {
                far_mark[p] = pass;
                atomicMin(counters + 2, double_bits(d));
            }
        }
        const unsigned long long at_near = warp_append_slot(counters + 0, move);
        if (move) next[at_near] = p;
        const unsigned long long at_far = warp_append_slot(counters + 1, keep);
        if (keep) far_next[at_far] = p;
    });
}

// Re-check every lowered pair's recorded parent (see the header); list failures in `repair`
// (count in counters[0]) and flag their source rows in row_failed[i].
template <typename Index, typename Weight>
__global__ void sssp_batch_check(const long long* __restrict__ indptr,
                                 const Index* __restrict__ indices,
                                 const Weight* __restrict__ weights, long long n, int shift,
                                 long long pairs, const double* __restrict__ dist,
                                 const int* __restrict__ stamp,
                                 const long long* __restrict__ parent_edge,
                                 const long long* __restrict__ parent, long long* repair,
                                 int* row_failed, unsigned long long* counters) {
    for (long long p = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; p < pairs;
         p += static_cast<long long>(gridDim.x) * blockDim.x) {
        const int sp = stamp[p];
        if (sp == 0) continue;  // unreached or a source
        const long long v = p >> shift;
        const long long i = p & ((1ll << shift) - 1);
        const long long u = parent[p];
        bool ok = false;
        if (u >= 0 && u < n) {
            const long long j = parent_edge[p];
            const long long pu = (u << shift) + i;
            ok = j >= indptr[u] && j < indptr[u + 1] && static_cast<long long>(indices[j]) == v &&
                 dist[pu] + weights[j] == dist[p] && stamp[pu] < sp;
        }
        if (!ok) {
            repair[atomicAdd(counters, 1ull)] = p;
            row_failed[i] = 1;
        }
    }
}

// Repair, symmetric graphs: for each listed pair (i, v), a neighbour x of v (row order) with
// dist[i, x] + w == dist[i, v] and stamp[i, x] < stamp[i, v]; one exists (see the header).
template <typename Index, typename Weight>
__global__ void sssp_batch_repair_pull(const long long* __restrict__ indptr,
                                      const Index* __restrict__ indices,
                                      const Weight* __restrict__ weights, int shift,
                                      const double* __restrict__ dist, const int* __restrict__ stamp,
                                      const long long* __restrict__ repair,
                                      const unsigned long long* __restrict__ counters,
                                      long long* parent) {
    const long long count = static_cast<long long>(counters[0]);
    for (long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; t < count;
         t += static_cast<long long>(gridDim.x) * blockDim.x) {
        const long long p = repair[t];
        const long long v = p >> shift;
        const long long i = p & ((1ll << shift) - 1);
        const double dv = dist[p];
        const int sv = stamp[p];
        for (long long j = indptr[v]; j < indptr[v + 1]; ++j) {
            const long long px = (static_cast<long long>(indices[j]) << shift) + i;
            if (dist[px] + weights[j] == dv && stamp[px] < sv) {
                parent[p] = static_cast<long long>(indices[j]);
                break;
            }
        }
    }
}

// Repair, any graph: for source row i = blockIdx.y with row_failed[i], every edge u -> v with
// dist[i, u] + w == dist[i, v] and stamp[i, u] < stamp[i, v] sets parent[i, v] = u (plain
// stores; every writer is valid). One thread per vertex u; rows longer than 32 go to the warp.
template <typename Index, typename Weight>
__global__ void sssp_batch_repair_push(const long long* __restrict__ indptr,
                                      const Index* __restrict__ indices,
                                      const Weight* __restrict__ weights, long long n, int shift,
                                      const double* __restrict__ dist, const int* __restrict__ stamp,
                                      const int* __restrict__ row_failed, long long* parent) {
    if (row_failed[blockIdx.y] == 0) return;
    // Source i's entries: vertex x at (x << shift) + i.
    const double* d_row = dist + blockIdx.y;
    const int* s_row = stamp + blockIdx.y;
    long long* p_row = parent + blockIdx.y;
    const int lane = threadIdx.x & 31;
    warp_uniform_loop(n, [&](long long u) {
        double du = __longlong_as_double(0x7ff0000000000000ll);
        long long begin = 0, end = 0;
        int su = 0;
        if (u < n) {
            du = d_row[u << shift];
            su = s_row[u << shift];
            begin = indptr[u];
            end = indptr[u + 1];
        }
        const bool reached = du < __longlong_as_double(0x7ff0000000000000ll);
        const bool alone = reached && end - begin <= 32;
        if (alone) {
            for (long long j = begin; j < end; ++j) {
                const long long v = static_cast<long long>(indices[j]);
                if (du + weights[j] == d_row[v << shift] && su < s_row[v << shift]) p_row[v << shift] = u;
            }
        }
        warp_each_row(reached && !alone, begin, end, [&](int owner, long long from, long long to) {
            const double owner_d = __shfl_sync(kFullWarp, du, owner);
            const int owner_s = __shfl_sync(kFullWarp, su, owner);
            const long long owner_u = __shfl_sync(kFullWarp, u, owner);
            for (long long j = from + lane; j < to; j += 32) {
                const long long v = static_cast<long long>(indices[j]);
                if (owner_d + weights[j] == d_row[v << shift] && owner_s < s_row[v << shift]) {
                    p_row[v << shift] = owner_u;
                }
            }
        });
    });
}

// The working layout (vertex-major, `stride` = 1 << shift entries per vertex) to the result's
// (source-major): out[i * n + v] = work[(v << shift) + i] for i < k, through 32 x 32 tiles in
// shared memory so that both the reads (32 sources of one vertex) and the writes (32 vertices
// of one source) are coalesced. blockDim (32, 8); grid (ceil(n / 32), ceil(k / 32)). Moves
// 64-bit words: float64 distances and int64 parents alike.
template <typename Index>
__global__ void sssp_batch_transpose(long long n, int k, int shift,
                                     const unsigned long long* __restrict__ work,
                                     unsigned long long* __restrict__ out) {
    __shared__ unsigned long long tile[32][33];
    const long long v0 = static_cast<long long>(blockIdx.x) * 32;
    const int i0 = blockIdx.y * 32;
    for (int r = threadIdx.y; r < 32; r += blockDim.y) {
        const long long v = v0 + r;
        const int i = i0 + threadIdx.x;
        if (v < n && i < k) tile[r][threadIdx.x] = work[(v << shift) + i];
    }
    __syncthreads();
    for (int r = threadIdx.y; r < 32; r += blockDim.y) {
        const int i = i0 + r;
        const long long v = v0 + threadIdx.x;
        if (v < n && i < k) out[static_cast<long long>(i) * n + v] = tile[threadIdx.x][r];
    }
}

// ---- Shared edge scans (sssp_batch(shared_scans=True)): the near queue holds VERTICES, each
// with a mask of the sources (bit i = column i, shift <= 6) whose pair is queued; one scan of a
// queued vertex's row relaxes the edge for every source of its mask. The far pile, the marks of
// pairs, dist, stamps and parents are those above; only the near queue changes:
//   vqueue/vnext  int64[n] vertices, each at most once per queue (near_vmark[v] = r: queued for
//                 pass r + 1); mask uint64[n]: bits of the next queue, read and cleared by
//                 sssp_batch_prepare_shared; snap float64[q << shift]: slot t's snapshot of
//                 column i at (t << shift) + i.

// Append pair (v, i) to the next near queue: its bit into mask[v], v into vnext once a pass.
__device__ __forceinline__ void queue_pair_shared(long long v, int i, int pass,
                                                  unsigned long long* mask, int* near_vmark,
                                                  long long* vnext, unsigned long long* counters) {
    atomicOr(mask + v, 1ull << i);
    if (atomicExch(near_vmark + v, pass) != pass) {
        vnext[atomicAdd(counters + 0, 1ull)] = v;
    }
}

// Per slot: the mask (mask[u] then cleared), each masked column's snapshot, row end, degree.
template <typename Index>
__global__ void sssp_batch_prepare_shared(const long long* __restrict__ indptr, int shift,
                                          const long long* __restrict__ vqueue, long long q,
                                          const double* __restrict__ dist,
                                          unsigned long long* mask,
                                          unsigned long long* __restrict__ slot_mask,
                                          double* __restrict__ snap,
                                          long long* __restrict__ row_end,
                                          long long* __restrict__ degree) {
    for (long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; t < q;
         t += static_cast<long long>(gridDim.x) * blockDim.x) {
        const long long u = vqueue[t];
        const unsigned long long m = mask[u];
        mask[u] = 0;
        slot_mask[t] = m;
        for (unsigned long long rest = m; rest != 0; rest &= rest - 1) {
            const int i = __ffsll(static_cast<long long>(rest)) - 1;
            snap[(t << shift) + i] = dist[(u << shift) + i];
        }
        record_row(indptr, u, t, row_end, degree);
    }
}

// One RELAX pass: every out-edge of the q queued vertices, for every source of their masks.
template <typename Index, typename Weight>
__global__ void sssp_batch_relax_shared(const Index* __restrict__ indices,
                                        const Weight* __restrict__ weights,
                                        const long long* __restrict__ vqueue, long long q,
                                        const unsigned long long* __restrict__ slot_mask,
                                        const double* __restrict__ snap,
                                        const long long* __restrict__ row_end,
                                        const long long* __restrict__ edge_end, int shift,
                                        double threshold, double max_distance, int pass, int epoch,
                                        int negative, double* dist, int* stamp,
                                        unsigned long long* mask, int* near_vmark, int* far_mark,
                                        long long* vnext, long long* far, long long far_len,
                                        long long* parent, long long* parent_edge,
                                        unsigned long long* counters) {
    __shared__ long long s_end[kStageSlots];
    __shared__ long long s_meta[2];
    for_each_staged_edge<kItems>(edge_end, q, s_end, s_meta,
                                 [&](long long e, long long e1, const StagedChunk& staged) {
        if (e >= e1) return;
        const long long t = chunk_slot(edge_end, staged, s_end, e);
        const long long u = vqueue[t];
        const long long j = row_end[t] - (edge_end[t] - e);
        const long long v = static_cast<long long>(indices[j]);
        const double w = weights[j];
        for (unsigned long long rest = slot_mask[t]; rest != 0; rest &= rest - 1) {
            const int i = __ffsll(static_cast<long long>(rest)) - 1;
            const double from = snap[(t << shift) + i];
            // Stale (lowered since the snapshot): queued again; not with negative weights.
            if (negative == 0 && __ldcg(dist + (u << shift) + i) != from) continue;
            const double cand = from + w;
            const long long target = (v << shift) + i;
            if (!(cand <= max_distance && cand < __ldcg(dist + target))) continue;
            if (!lower(dist, target, cand, negative)) continue;
            stamp[target] = pass;
            parent[target] = u;
            parent_edge[target] = j;
            if (cand < threshold) {
                queue_pair_shared(v, i, pass, mask, near_vmark, vnext, counters);
            } else {
                atomicMin(counters + 2, double_bits(cand));
                if (atomicExch(far_mark + target, epoch) != epoch) {
                    far[far_len + static_cast<long long>(atomicAdd(counters + 1, 1ull))] = target;
                }
            }
        }
    });
}

// One SPLIT pass over the far pile of pairs: moved pairs join the vertex queue with their bit.
template <typename Index>
__global__ void sssp_batch_split_shared(const long long* __restrict__ far, long long far_len,
                                        const double* __restrict__ dist, int shift,
                                        double threshold_old, double threshold, double split_floor,
                                        int pass, int* far_mark, unsigned long long* mask,
                                        int* near_vmark, long long* vnext, long long* far_next,
                                        unsigned long long* counters) {
    warp_uniform_loop(far_len, [&](long long f) {
        bool keep = false;
        long long p = 0;
        if (f < far_len) {
            p = far[f];
            const double d = dist[p];
            const bool move = d >= threshold_old && (d < threshold || d <= split_floor);
            keep = d >= threshold_old && !move;
            if (move) {
                queue_pair_shared(p >> shift, static_cast<int>(p & ((1ll << shift) - 1)), pass,
                                  mask, near_vmark, vnext, counters);
            }
            if (keep) {
                far_mark[p] = pass;
                atomicMin(counters + 2, double_bits(d));
            }
        }
        const unsigned long long at_far = warp_append_slot(counters + 1, keep);
        if (keep) far_next[at_far] = p;
    });
}
