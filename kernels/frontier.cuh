// Frontier helpers shared by the level kernels (bfs.cu, sssp.cu): the load-balanced edge
// search of "prefix sum + binary search" and the warp-aggregated queue append.
//
// Written for NVRTC (cupy.RawModule, -std=c++17): no standard headers. Included once per
// translation unit; everything lives in an anonymous namespace.
#pragma once

namespace {

constexpr unsigned kFullWarp = 0xffffffffu;

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

}  // namespace
