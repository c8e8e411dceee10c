// Frontier helpers shared by the traversal kernels (bfs.cu, bfs_owners.cu, bfs_persistent.cu,
// sssp.cu, sssp_owners.cu, sssp_nearfar.cu): the load-balanced edge search of "prefix sum +
// binary search", the warp-aggregated queue append, and the frontier-bitmap test and parent
// search of a bottom-up BFS step.
//
// Written for NVRTC (cupy.RawModule, -std=c++17): no standard headers. gpipe/engine/compute/cuda.py
// inlines it (and warp.cuh, which it includes) once per translation unit; everything lives in
// an anonymous namespace.
#pragma once

#include "warp.cuh"

namespace {

// Slot of this lane in a queue whose length is *counter, when `append` is true (else unused).
// One atomic per warp instead of one per lane. Must be reached by all 32 lanes of the warp
// together: the callers keep every warp's loop trip count uniform for exactly this reason.
__device__ __forceinline__ unsigned long long warp_append_slot(unsigned long long* counter,
                                                               bool append) {
    const unsigned ballot = __ballot_sync(kFullWarp, append);
    const int lane = threadIdx.x & 31;
    const int leader = ballot ? __ffs(ballot) - 1 : 0;
    unsigned long long base = 0;
    if (ballot != 0 && lane == leader) {
        base = atomicAdd(counter, static_cast<unsigned long long>(__popc(ballot)));
    }
    base = __shfl_sync(kFullWarp, base, leader);
    return base + static_cast<unsigned long long>(__popc(ballot & ((1u << lane) - 1u)));
}

// First i in [0, k) with edge_end[i] > e (edge_end is non-decreasing; e < edge_end[k-1]):
// the frontier vertex that owns edge number e of the level.
__device__ __forceinline__ long long frontier_slot(const long long* __restrict__ edge_end,
                                                   long long k, long long e) {
    long long lo = 0, hi = k - 1;
    while (lo < hi) {
        const long long mid = lo + ((hi - lo) >> 1);
        if (edge_end[mid] > e) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    return lo;
}

// The target (a global id) of edge number e of the level, e < edge_end[k - 1]: an out-edge of
// *u = frontier[frontier_slot(edge_end, k, e)], at CSR position indptr[*u + 1] - (edge_end[i] - e).
template <typename Index>
__device__ __forceinline__ long long frontier_target(const long long* __restrict__ indptr,
                                                     const Index* __restrict__ indices,
                                                     const long long* __restrict__ frontier,
                                                     const long long* __restrict__ edge_end,
                                                     long long k, long long e, long long* u) {
    const long long i = frontier_slot(edge_end, k, e);
    *u = frontier[i];
    return static_cast<long long>(indices[indptr[*u + 1] - (edge_end[i] - e)]);
}

// Whether vertex v's bit is set in `bitmap` (bit v & 31 of word v >> 5).
__device__ __forceinline__ bool in_bitmap(const unsigned* bitmap, long long v) {
    return (bitmap[v >> 5] >> (v & 31)) & 1u;
}

// The first u = indices[j], j in [from, to) in order, with hit(u), the whole warp testing 32 at
// a time: true and *winner = u in every lane when there is one. All 32 lanes must call it
// together.
template <typename Index, typename Hit>
__device__ __forceinline__ bool warp_first_neighbour(const Index* __restrict__ indices,
                                                     long long from, long long to, Hit hit,
                                                     long long* winner) {
    const int lane = threadIdx.x & 31;
    for (long long first = from; first < to; first += 32) {
        const long long j = first + lane;
        long long u = 0;
        bool lane_hit = false;
        if (j < to) {
            u = static_cast<long long>(indices[j]);
            lane_hit = hit(u);
        }
        const unsigned hits = __ballot_sync(kFullWarp, lane_hit);
        if (hits != 0u) {
            *winner = __shfl_sync(kFullWarp, u, __ffs(hits) - 1);
            return true;
        }
    }
    return false;
}

// A lane's vertex v in a bottom-up step, when `search`: the first neighbour of v in row order
// (CSR row indices[*begin : *end], *begin = indptr[v], *end = indptr[v + 1]) whose bit is set
// in `front`; true and *parent = that neighbour when there is one. Without `search`, *begin =
// *end = 0 and false. The lane scans the first kSeqScan neighbours alone; longer rows still
// unresolved are then scanned by the whole warp, 32 neighbours at a time, the lowest hit
// winning, so one high-degree vertex does not hold its warp for thousands of loads. All 32
// lanes of the warp must call it together.
template <typename Index>
__device__ __forceinline__ bool bottom_up_parent(const long long* __restrict__ indptr,
                                                 const Index* __restrict__ indices,
                                                 const unsigned* front, long long v, bool search,
                                                 long long* parent, long long* begin,
                                                 long long* end) {
    constexpr long long kSeqScan = 16;  // neighbours a lane scans alone
    const int lane = threadIdx.x & 31;
    bool found = false;
    long long found_parent = 0, row_begin = 0, row_end = 0;
    if (search) {
        row_begin = indptr[v];
        row_end = indptr[v + 1];
        const long long stop = row_end < row_begin + kSeqScan ? row_end : row_begin + kSeqScan;
        for (long long j = row_begin; j < stop; ++j) {
            const long long u = static_cast<long long>(indices[j]);
            if (in_bitmap(front, u)) {
                found = true;
                found_parent = u;
                break;
            }
        }
    }
    // Long rows not yet resolved: the whole warp scans them, one vertex at a time.
    warp_each_row(!found && row_end - row_begin > kSeqScan, row_begin, row_end,
                  [&](int owner, long long from, long long to) {
        long long winner = 0;
        if (warp_first_neighbour(indices, from + kSeqScan, to,
                                 [&](long long u) { return in_bitmap(front, u); }, &winner) &&
            lane == owner) {
            found = true;
            found_parent = winner;
        }
    });
    *parent = found_parent;
    *begin = row_begin;
    *end = row_end;
    return found;
}

}  // namespace
