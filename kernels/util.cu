// util.cu -- the small array operations of the build and one-owner query path, shipped
// compiled, so that a first build and query on a fresh machine compile nothing.
//
// What it computes
//   CuPy generates a kernel for every elementwise operation, reduction and index expression
//   and compiles it with NVRTC at its first use (about 0.1 s each, 2 to 3 s for a CUB
//   reduction of a boolean): `cupy.full`, `a.take(i)`, `a[i] = v`, `a.astype(t)`, `a < 0`,
//   `cupy.flatnonzero`, `cupy.packbits`, `cupy.unique`. These are their twins, each one
//   CuPy's semantics exactly (gpipe/engine/compute/gpu_arrays.py wraps them and states the
//   promise; tests/test_kernels_gpu.py checks each against the CuPy call it replaces).
//
//   fill<T>            out[i] = value
//   iota<T>            out[i] = start + i * step                        (cupy.arange)
//   take<T, I>         out[i] = values[index[i] mod size]    (a.take(index): CuPy wraps)
//   scatter_value<T, I> array[index[i] mod size] = value                  (a[index] = v)
//   convert<From, To>  out[i] = To(From(in[i] + offset))  C++ conversion = NumPy's astype
//                      for integers (two's complement, wrap-around)
//   zero_test<T>       out[i] = x[i] < 0, >= 0, finite, or == 0 (op: kNegative ...);
//                      `== 0` of a bool array is logical_not
//   pack_bits_little<T> out[j] bit b = (flags[8j + b] != 0)   (packbits, bitorder="little")
//   nonzero_count<T>, nonzero_write<T>  flatnonzero, a stream compaction in two passes
//                      (the first alone, summed, is count_nonzero):
//                      each block counts the nonzeros of its tile of kTile items (a block
//                      vote per row of the tile); an inclusive scan of [0, counts...]
//                      (cupy.cumsum: CUB, shipped compiled in CuPy) gives each tile its first
//                      output slot; the second pass writes each nonzero's index at that slot
//                      plus its rank within the tile (warp ballots, then the warps' totals).
//                      Output is in increasing index order, like NumPy's.
//   run_starts<T>      out[i] = i == 0 || sorted[i] != sorted[i - 1]  (cupy.unique's mask)
//
// Types: the copies (fill, take, scatter_value, run_starts) are instantiated per element
// width, unsigned char .. unsigned long long; the wrappers view any dtype of that width
// as it, so one instantiation serves int64, uint64 and float64 alike (run_starts compares
// bits: integers only). Counts and indices are long long; index arrays int or long long.
//
// Array invariants: every array is C-contiguous; `n` is its element count; launches are
// grid-stride except nonzero_*, which take exactly one block of kBlock threads per tile.
//
// Written for NVRTC (-std=c++17): no standard headers.

namespace {

constexpr int kBlock = 256;            // threads of a nonzero_* block (gpu_arrays.BLOCK)
constexpr int kRows = 8;               // rows of kBlock items in a nonzero_* tile
constexpr long long kTile = static_cast<long long>(kBlock) * kRows;  // gpu_arrays.TILE

constexpr int kNegative = 0;           // zero_test ops (gpu_arrays._OPS)
constexpr int kNonNegative = 1;
constexpr int kFinite = 2;
constexpr int kZero = 3;

__device__ __forceinline__ long long first_item() {
    return static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ long long grid_stride() {
    return static_cast<long long>(gridDim.x) * blockDim.x;
}

// CuPy's take and NumPy's negative indices: i mod size, in [0, size).
template <typename I>
__device__ __forceinline__ long long wrapped(I index, long long size) {
    long long i = static_cast<long long>(index) % size;
    return i < 0 ? i + size : i;
}

template <typename T>
__device__ __forceinline__ bool finite(T) { return true; }

__device__ __forceinline__ bool finite(double x) {
    const long long exponent = 0x7FF0000000000000LL;
    return (__double_as_longlong(x) & exponent) != exponent;
}

}  // namespace

template <typename T>
__global__ void fill(T* __restrict__ out, long long n, T value) {
    for (long long i = first_item(); i < n; i += grid_stride()) out[i] = value;
}

template <typename T>
__global__ void iota(T* __restrict__ out, long long n, T start, T step) {
    for (long long i = first_item(); i < n; i += grid_stride())
        out[i] = static_cast<T>(start + static_cast<T>(i) * step);
}

template <typename T, typename I>
__global__ void take(const T* __restrict__ values, long long size, const I* __restrict__ index,
                     long long n, T* __restrict__ out) {
    for (long long i = first_item(); i < n; i += grid_stride())
        out[i] = values[wrapped(index[i], size)];
}

template <typename T, typename I>
__global__ void scatter_value(T* __restrict__ array, long long size, const I* __restrict__ index,
                              long long n, T value) {
    for (long long i = first_item(); i < n; i += grid_stride())
        array[wrapped(index[i], size)] = value;
}

template <typename From, typename To>
__global__ void convert(const From* __restrict__ in, long long n, From offset, To* __restrict__ out) {
    for (long long i = first_item(); i < n; i += grid_stride())
        out[i] = static_cast<To>(static_cast<From>(in[i] + offset));
}

template <typename T>
__global__ void zero_test(const T* x, long long n, int op, bool* out) {  // out may be x (logical_not in place)
    for (long long i = first_item(); i < n; i += grid_stride()) {
        const T v = x[i];
        out[i] = op == kNegative      ? v < T(0)
                 : op == kNonNegative ? v >= T(0)
                 : op == kFinite      ? finite(v)
                                      : v == T(0);
    }
}

template <typename T>
__global__ void pack_bits_little(const T* __restrict__ flags, long long n,
                                 unsigned char* __restrict__ out) {
    const long long n_bytes = (n + 7) / 8;
    for (long long j = first_item(); j < n_bytes; j += grid_stride()) {
        unsigned int byte = 0;
        for (int b = 0; b < 8 && 8 * j + b < n; ++b)
            byte |= static_cast<unsigned int>(flags[8 * j + b] != T(0)) << b;
        out[j] = static_cast<unsigned char>(byte);
    }
}

// Pass 1 of flatnonzero: the nonzeros of tile blockIdx.x into counts[blockIdx.x].
template <typename T>
__global__ void __launch_bounds__(kBlock) nonzero_count(const T* __restrict__ flags, long long n,
                                                        long long* __restrict__ counts) {
    const long long tile_start = static_cast<long long>(blockIdx.x) * kTile;
    int count = 0;
    for (int row = 0; row < kRows; ++row) {
        const long long i = tile_start + static_cast<long long>(row) * kBlock + threadIdx.x;
        count += __syncthreads_count(i < n && flags[i] != T(0));
    }
    if (threadIdx.x == 0) counts[blockIdx.x] = count;
}

// Pass 2: each nonzero's index at its tile's first slot (starts[blockIdx.x]) plus its rank.
template <typename T>
__global__ void __launch_bounds__(kBlock) nonzero_write(const T* __restrict__ flags, long long n,
                                                        const long long* __restrict__ starts,
                                                        long long* __restrict__ out) {
    __shared__ int warp_counts[kBlock / 32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const long long tile_start = static_cast<long long>(blockIdx.x) * kTile;
    long long slot = starts[blockIdx.x];
    for (int row = 0; row < kRows; ++row) {
        const long long i = tile_start + static_cast<long long>(row) * kBlock + threadIdx.x;
        const bool nonzero = i < n && flags[i] != T(0);
        const unsigned int ballot = __ballot_sync(0xFFFFFFFFu, nonzero);
        if (lane == 0) warp_counts[warp] = __popc(ballot);
        __syncthreads();
        int before = __popc(ballot & ((1u << lane) - 1u)), row_total = 0;
        for (int w = 0; w < kBlock / 32; ++w) {
            before += w < warp ? warp_counts[w] : 0;
            row_total += warp_counts[w];
        }
        if (nonzero) out[slot + before] = i;
        slot += row_total;
        __syncthreads();  // warp_counts is rewritten by the next row
    }
}

template <typename T>
__global__ void run_starts(const T* __restrict__ sorted, long long n, bool* __restrict__ out) {
    for (long long i = first_item(); i < n; i += grid_stride())
        out[i] = i == 0 || sorted[i] != sorted[i - 1];
}
