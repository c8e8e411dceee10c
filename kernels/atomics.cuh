// Atomics CUDA lacks, built from the ones it has.
//
// Written for NVRTC (cupy.RawModule, -std=c++17): no standard headers. gpipe/engine/compute/cuda.py
// inlines it once per translation unit; everything lives in an anonymous namespace.
#pragma once

namespace {

// *address = min(*address, value), compared as doubles (negative values and infinities
// included; `value` not NaN); true when this call lowered it. A compare-and-swap loop on the
// 64-bit pattern: CUDA has no atomicMin on doubles, and the native 64-bit atomicMin orders the
// patterns of non-negative doubles only (sssp_nearfar.cu uses it there).
__device__ __forceinline__ bool atomic_min_double(double* address, double value) {
    unsigned long long* bits = reinterpret_cast<unsigned long long*>(address);
    unsigned long long seen = static_cast<unsigned long long>(__double_as_longlong(*address));
    while (value < __longlong_as_double(static_cast<long long>(seen))) {
        const unsigned long long expected = seen;
        seen = atomicCAS(bits, expected,
                         static_cast<unsigned long long>(__double_as_longlong(value)));
        if (seen == expected) {
            return true;
        }
    }
    return false;
}

}  // namespace
