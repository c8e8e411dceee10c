// csr.cu -- build one owner's CSR from an edge list already on the GPU, without sorting.
//
// What it computes
//   From m edges (src[e], dst[e], w[e]) with src in [0, n_local): indptr (int64[n_local + 1])
//   and, row by row, the targets `indices` (Index = int32 or int64) and `weights` (Weight =
//   float64 or float32, the width the graph stores its weights in: copied, never converted).
//   With `symmetric`, each input edge is stored in both directions (src -> dst and
//   dst -> src; then dst must lie in [0, n_local) too), so the doubled edge list is never
//   built. With `skip_loops`, edges with src == dst are left out (counted nowhere).
//   Within a row the order is NOT sorted and not deterministic (atomic cursors): rows are
//   multisets. gpipe/engine/compute/gpu_csr.py (build_csr) launches the passes;
//   tests/test_kernels_gpu.py compares the rows, as multisets, with a NumPy argsort CSR.
//
// Technique: counting sort by source without the sort, in three passes
//   1. csr_count: degree histogram, one atomicAdd per stored edge on counts[row]
//      (counts = degrees + 1 of a zeroed degrees = int64[n_local + 1]).
//   2. indptr = an inclusive scan of degrees, [0, d0, d1, ...] (cupy.cumsum: CUB, shipped
//      compiled in CuPy, launched from the host side);
//      the cursors start as a copy of indptr[:-1].
//   3. csr_scatter: pos = atomicAdd(&cursor[row], 1); indices[pos] = target;
//      weights[pos] = w. Every slot of a row is claimed exactly once, so the output is
//      written once, with no key/value sort and no doubled or permuted copy of the input:
//      peak memory is the input plus the output plus two int64[n_local] arrays.
//   The same pattern as the CSR construction of GAPBS (src/builder.h: CountDegrees,
//   PrefixSum, then a fetch-and-add per edge into the row's next free slot).
//
// Array invariants (m input edges, nnz stored edges)
//   src, dst     int32 or int64[m] (the *_wide flag says which), passed as raw pointers:
//                src in [0, n_local); with symmetric, dst in [0, n_local) too.
//   w_in         Weight[m], read only when weighted != 0.
//   counts       uint64[n_local] (degrees + 1), zero on entry to csr_count.
//   cursor       uint64[n_local] = indptr[:-1] on entry to csr_scatter; indptr[1:] on exit.
//   indices      Index[nnz], w_out Weight[nnz] (touched only when weighted != 0).
//
// Written for NVRTC (cupy.RawModule, -std=c++17): no standard headers.

namespace {

__device__ __forceinline__ long long load_id(const void* ids, int wide, long long e) {
    return wide ? static_cast<const long long*>(ids)[e]
                : static_cast<long long>(static_cast<const int*>(ids)[e]);
}

// Edge e's endpoints in *s and *d; true unless skip_loops leaves it out (a loop, s == d).
__device__ __forceinline__ bool stored_edge(const void* src, int src_wide, const void* dst,
                                            int dst_wide, int skip_loops, long long e, long long* s,
                                            long long* d) {
    *s = load_id(src, src_wide, e);
    *d = load_id(dst, dst_wide, e);
    return !(skip_loops && *s == *d);
}

// edge(e, s, d) for every input edge e < m that is stored (stored_edge), a grid-stride loop.
template <typename Edge>
__device__ __forceinline__ void for_each_stored_edge(const void* src, int src_wide, const void* dst,
                                                     int dst_wide, long long m, int skip_loops,
                                                     Edge edge) {
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long e = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; e < m;
         e += stride) {
        long long s, d;
        if (stored_edge(src, src_wide, dst, dst_wide, skip_loops, e, &s, &d)) {
            edge(e, s, d);
        }
    }
}

}  // namespace

// Pass 1: out-degree histogram (both endpoints when symmetric).
template <typename Index>
__global__ void csr_count(const void* __restrict__ src, int src_wide, const void* __restrict__ dst,
                          int dst_wide, long long m, int symmetric, int skip_loops,
                          unsigned long long* __restrict__ counts) {
    for_each_stored_edge(src, src_wide, dst, dst_wide, m, skip_loops,
                         [&](long long e, long long s, long long d) {
        atomicAdd(counts + s, 1ull);
        if (symmetric) {
            atomicAdd(counts + d, 1ull);
        }
    });
}

// Pass 3: each edge claims the next free slot of its row (and of the reverse row).
template <typename Index, typename Weight>
__global__ void csr_scatter(const void* __restrict__ src, int src_wide, const void* __restrict__ dst,
                            int dst_wide, const Weight* __restrict__ w_in, int weighted,
                            long long m, int symmetric, int skip_loops,
                            unsigned long long* __restrict__ cursor, Index* __restrict__ indices,
                            Weight* __restrict__ w_out) {
    for_each_stored_edge(src, src_wide, dst, dst_wide, m, skip_loops,
                         [&](long long e, long long s, long long d) {
        const Weight w = weighted ? w_in[e] : Weight(0);
        const unsigned long long pos = atomicAdd(cursor + s, 1ull);
        indices[pos] = static_cast<Index>(d);
        if (weighted) {
            w_out[pos] = w;
        }
        if (symmetric) {
            const unsigned long long back = atomicAdd(cursor + d, 1ull);
            indices[back] = static_cast<Index>(s);
            if (weighted) {
                w_out[back] = w;
            }
        }
    });
}
