// Warp-wide primitives shared by the kernels: the full-warp mask, an inclusive scan and two
// reductions over the 32 lanes, by register shuffles; the warp-uniform grid-stride loop; the
// scan of one lane's row by the whole warp.
//
// Written for NVRTC (cupy.RawModule, -std=c++17): no standard headers. gpipe/engine/compute/cuda.py
// inlines it once per translation unit; everything lives in an anonymous namespace. Every
// function here must be reached by all 32 lanes of the warp together.
#pragma once

namespace {

constexpr unsigned kFullWarp = 0xffffffffu;

// Inclusive prefix sum of `x` over the lanes of the warp: lane l gets the sum of lanes 0..l.
__device__ __forceinline__ long long warp_inclusive_sum(long long x) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const long long y = __shfl_up_sync(kFullWarp, x, d);
        if (lane >= d) x += y;
    }
    return x;
}

// The sum of `x` over the warp, in every lane.
__device__ __forceinline__ long long warp_sum(long long x) {
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) {
        x += __shfl_xor_sync(kFullWarp, x, d);
    }
    return x;
}

// The least `value` over the warp, in every lane.
__device__ __forceinline__ double warp_min(double value) {
    for (int step = 16; step > 0; step >>= 1) {
        const double other = __shfl_xor_sync(kFullWarp, value, step);
        value = other < value ? other : value;
    }
    return value;
}

// A grid-stride loop over i < n whose trip count is the same in every lane of a warp (blockDim
// is a multiple of 32): item(i) for each of this thread's i, and on the last trip for the lanes
// past the end too (i >= n, idle lanes), so that item may make warp-wide calls.
template <typename Item>
__device__ __forceinline__ void warp_uniform_loop(long long n, Item item) {
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long first = static_cast<long long>(blockIdx.x) * blockDim.x; first < n;
         first += stride) {
        item(first + threadIdx.x);
    }
}

// The rows [begin, end) of the lanes with `help` set, each scanned by the whole warp in turn
// (lowest lane first): row(owner, from, to) with the owner lane's begin and end, in every lane.
template <typename Row>
__device__ __forceinline__ void warp_each_row(bool help, long long begin, long long end, Row row) {
    unsigned pending = __ballot_sync(kFullWarp, help);
    while (pending != 0u) {
        const int owner = __ffs(pending) - 1;
        pending &= pending - 1u;
        const long long from = __shfl_sync(kFullWarp, begin, owner);
        const long long to = __shfl_sync(kFullWarp, end, owner);
        row(owner, from, to);
    }
}

}  // namespace
