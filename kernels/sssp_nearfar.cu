// sssp_nearfar.cu -- whole single-owner SSSP (non-negative weights) in one persistent kernel.
//
// What it computes
//   sssp_near_far: dist[v] = length of a shortest path from the nearest source to v (+inf when
//   unreached), for weights w >= 0 (zeros allowed, duplicates allowed: the minimum keeps the
//   lightest), plus stamp[v] = the pass in which dist[v] was last lowered (0 for sources).
//   sssp_settle_tree: afterwards, parent[v] = some u with an edge u->v such that
//   dist[u] + w == dist[v] exactly and stamp[u] < stamp[v] (-1 for sources and unreached).
//   gpipe/kernels/gpu_sssp.py (sssp) launches both; tests/test_kernels_gpu.py checks them
//   against scipy.sparse.csgraph.dijkstra and validates the tree. The slow, obviously right
//   twin is the frontier Bellman-Ford of sssp.cu driven round by round (gpipe/traverse.py).
//
// Technique: near-far work-efficient SSSP (A. Davidson, S. Baxter, M. Garland, J. Owens,
// "Work-Efficient Parallel GPU Methods for Single-Source Shortest Paths", IPDPS 2014), a GPU
// form of delta-stepping (U. Meyer, P. Sanders, "Delta-stepping: a parallelizable shortest
// path algorithm", J. Algorithms 2003).
//   A threshold T splits tentative distances into "near" (< T) and "far" (>= T). Each RELAX
//   pass relaxes every out-edge of the near queue; a lowered target goes to the next near
//   queue when its new distance is < T, else onto the far pile. When a pass leaves the near
//   queue empty, a SPLIT pass raises T to max(T, min far) + delta and moves the far vertices
//   with T_old <= dist < T (or dist <= min far, so that a delta lost to rounding still makes
//   progress) to the near queue; those with dist < T_old were already settled (dropped), the
//   rest stay far. It ends when both are empty.
//   Relaxation is edge-parallel, load-balanced by prefix sum + binary search: the near queue's
//   degrees are scanned into edge_end; each block takes chunks of 4 * blockDim consecutive
//   edges, finds the chunk's first and last queue slot once, and each thread searches only
//   between those (a few steps when degrees are large), for its 4 edges in lockstep so that
//   4 independent loads are in flight; then the 4 edges' gathers, then their atomics. An edge
//   whose source was lowered during the pass is skipped (the source is queued again and will
//   relax it from the lower value). dist is lowered with the native 64-bit atomicMin on the
//   IEEE bit pattern: for non-negative doubles (and +inf) the unsigned bit order is the
//   numeric order, so no compare-and-swap loop is needed.
//   Every pass relaxes from a SNAPSHOT of its queue's distances taken at the start of the
//   pass, and every lowering stamps the pass number. That is what makes the parents simple:
//   the edge u->v that gave v its final distance in pass r read dist[u] already final, so
//   stamp[u] < r = stamp[v]. Any tight edge with a smaller stamp at the source is therefore a
//   valid parent, and stamps strictly decrease along parent pointers: no cycle even among
//   zero-weight edges. One edge-parallel pass at the end (sssp_settle_tree) picks them.
//   Host syncs: none inside the traversal. The kernel is launched cooperatively (all blocks
//   resident) and passes are separated by a grid barrier (one atomic counter and a generation
//   word). Control state (T, queue lengths, which buffer is current) lives in each block's
//   shared memory and is updated identically by every block from per-pass counters kept in a
//   ring of three slots: pass r appends through slot r % 3 and clears slot (r + 1) % 3, which
//   nobody reads or writes until pass r + 1.
//   Queues are deduplicated with per-vertex marks: near_mark[v] = r when v entered the queue
//   of pass r + 1; far_mark[v] = epoch (the pass of the last split) when v is on the far
//   pile; so a queue never holds a vertex twice and n slots always suffice.
//   dist, the far pile and the counters, which other blocks change during a phase, are read
//   with __ldcg (L2, not the non-coherent L1). The per-slot arrays (snap, row_end, edge_end)
//   and the current queue are read-only during the relax phase: with l1_cached != 0 it reads
//   them with plain, L1-cached loads (valid as after cooperative_groups' grid sync, whose
//   fence this barrier copies); with 0, with __ldcg too (the default: same speed measured).
//   Nothing written in the kernel is read through const __restrict__ (the read-only path).
//
// Array invariants (n vertices, nnz edges; Index is int or long long)
//   indptr     int64[n + 1] non-decreasing; out-edges of u are
//              indices/weights[indptr[u] : indptr[u + 1]].
//   indices    Index[nnz] target ids in [0, n); weights float64[nnz], >= 0, not NaN.
//   dist       float64[n]: 0 at sources, +inf elsewhere on entry; only lowered.
//   stamp      int32[n]: 0 on entry; pass of the last lowering.
//   near_mark, far_mark  int32[n]: -1 on entry.
//   queue0     Index[n]: the distinct sources in [0, n_sources); queue1, far0, far1 Index[n].
//   snap       float64[n], row_end int64[n], edge_end int64[n]: per slot of the current queue.
//   block_sum  int64[gridDim.x].
//   ring       uint64[9] = 3 x {near appends, far appends, far min bits}: {0, 0, +inf bits}.
//   barrier    uint32[2] zero.
//   stats      int64[6] zero: passes, relax passes, splits, edges relaxed, near appends,
//              far appends.
//
// Written for NVRTC (cupy.RawModule, -std=c++17): no standard headers.

namespace {

constexpr unsigned kFullWarp = 0xffffffffu;
constexpr unsigned long long kInfBits = 0x7ff0000000000000ull;
constexpr int kItems = 4;  // edges per thread per chunk in the relax phase
constexpr int kRelax = 1, kSplit = 2, kDone = 0;

// Slot of this lane in a queue whose length is *counter, when `append` is true (else unused).
// Must be reached by all 32 lanes of the warp together.
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

// First i in [lo, hi] with ends[i] > e (ends non-decreasing, ends[hi] > e). Plain loads: the
// searched arrays are read-only for the whole phase that searches them (written before a grid
// barrier, whose fence makes them visible), so the top of the search tree stays in L1.
template <typename T>
__device__ __forceinline__ T load(const T* p, bool cached) {
    return cached ? *p : __ldcg(p);
}

__device__ __forceinline__ long long first_above(const long long* ends, long long lo, long long hi,
                                                 long long e, bool cached = true) {
    while (lo < hi) {
        const long long mid = lo + ((hi - lo) >> 1);
        if (load(ends + mid, cached) > e) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    return lo;
}

// first_above for kItems keys at once, in lockstep, so that kItems independent loads are in
// flight per step instead of one (the search is latency-bound). Invalid keys (valid[k] false)
// finish at lo.
__device__ __forceinline__ void first_above_n(const long long* ends, long long lo, long long hi,
                                              const long long* keys, const bool* valid,
                                              long long* found, bool cached = true) {
    long long low[kItems], high[kItems];
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
        low[k] = lo;
        high[k] = valid[k] ? hi : lo;
    }
    bool open = true;
    while (open) {
        open = false;
#pragma unroll
        for (int k = 0; k < kItems; ++k) {
            if (low[k] < high[k]) {
                const long long mid = low[k] + ((high[k] - low[k]) >> 1);
                if (load(ends + mid, cached) > keys[k]) {
                    high[k] = mid;
                } else {
                    low[k] = mid + 1;
                }
                open = open || low[k] < high[k];
            }
        }
    }
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
        found[k] = low[k];
    }
}

// All blocks of a cooperative launch wait here; writes before it are visible after it.
__device__ __forceinline__ void grid_barrier(unsigned int* barrier) {
    __syncthreads();
    if (threadIdx.x == 0) {
        volatile unsigned int* generation = barrier + 1;
        const unsigned int seen = *generation;
        __threadfence();
        if (atomicAdd(barrier, 1u) == gridDim.x - 1) {
            atomicExch(barrier, 0u);
            __threadfence();
            atomicAdd(barrier + 1, 1u);
        } else {
            while (*generation == seen) {
            }
        }
        __threadfence();
    }
    __syncthreads();
}

// Sum of `value` over the block (blockDim.x a multiple of 32, at most 1024); every thread gets it.
__device__ __forceinline__ long long block_sum_all(long long value, long long* scratch) {
    for (int d = 16; d > 0; d >>= 1) {
        value += __shfl_down_sync(kFullWarp, value, d);
    }
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    __syncthreads();
    if (lane == 0) {
        scratch[warp] = value;
    }
    __syncthreads();
    long long total = 0;
    const int warps = blockDim.x >> 5;
    for (int i = 0; i < warps; ++i) {
        total += scratch[i];
    }
    __syncthreads();
    return total;
}

// Inclusive scan of `value` over the block; *tile_total gets the block's sum.
__device__ __forceinline__ long long block_scan(long long value, long long* scratch,
                                                long long* tile_total) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    for (int d = 1; d < 32; d <<= 1) {
        const long long up = __shfl_up_sync(kFullWarp, value, d);
        if (lane >= d) {
            value += up;
        }
    }
    __syncthreads();
    if (lane == 31) {
        scratch[warp] = value;
    }
    __syncthreads();
    long long before = 0, total = 0;
    const int warps = blockDim.x >> 5;
    for (int i = 0; i < warps; ++i) {
        const long long s = scratch[i];
        before += i < warp ? s : 0;
        total += s;
    }
    __syncthreads();
    *tile_total = total;
    return value + before;
}

struct Control {
    double threshold, threshold_old, split_floor;
    long long near_len, far_len;
    unsigned long long far_min;
    int current, far_current, pass, epoch, action;
};

}  // namespace

template <typename Index>
__global__ void __launch_bounds__(256, 4)
sssp_near_far(const long long* __restrict__ indptr, const Index* __restrict__ indices,
              const double* __restrict__ weights, long long n, double delta, long long n_sources,
              double* dist, int* stamp, int* near_mark, int* far_mark, Index* queue0,
              Index* queue1, Index* far0, Index* far1, double* snap, long long* row_end,
              long long* edge_end, long long* block_sum, unsigned long long* ring,
              unsigned int* barrier, long long* stats, int l1_cached) {
    const bool cached = l1_cached != 0;
    __shared__ Control ctl;
    __shared__ long long scratch[32];
    __shared__ long long chunk_slots[2];
    const int tid = threadIdx.x;
    const long long blocks = gridDim.x;
    const long long b = blockIdx.x;
    long long total_passes = 0, relax_passes = 0, splits = 0, edges_relaxed = 0, near_adds = 0,
              far_adds = 0;

    if (tid == 0) {
        ctl.threshold = delta;
        ctl.threshold_old = 0.0;
        ctl.split_floor = 0.0;
        ctl.near_len = n_sources;
        ctl.far_len = 0;
        ctl.far_min = kInfBits;
        ctl.current = 0;
        ctl.far_current = 0;
        ctl.pass = 0;
        ctl.epoch = 0;
        ctl.action = n_sources > 0 ? kRelax : kDone;
    }
    __syncthreads();

    while (true) {
        const int action = ctl.action;
        if (action == kDone) {
            break;
        }
        const int r = ctl.pass + 1;
        const double threshold = ctl.threshold;
        const long long near_len = ctl.near_len;
        const long long far_len = ctl.far_len;
        const int epoch = ctl.epoch;
        Index* queue = ctl.current ? queue1 : queue0;
        Index* next = ctl.current ? queue0 : queue1;
        Index* far = ctl.far_current ? far1 : far0;
        unsigned long long* slot = ring + 3 * (r % 3);
        __syncthreads();  // everyone has read ctl before thread 0 may rewrite it below
        if (b == 0 && tid == 0) {
            unsigned long long* clear = ring + 3 * ((r + 1) % 3);
            clear[0] = 0;
            clear[1] = 0;
            clear[2] = kInfBits;
        }

        if (action == kRelax) {
            // Phase A: snapshot, row ends and degrees of this block's slice of the queue.
            const long long slice = (near_len + blocks - 1) / blocks;
            const long long lo = b * slice < near_len ? b * slice : near_len;
            const long long hi = lo + slice < near_len ? lo + slice : near_len;
            long long degrees = 0;
            for (long long i = lo + tid; i < hi; i += blockDim.x) {
                const long long u = static_cast<long long>(__ldcg(queue + i));
                const long long end = indptr[u + 1];
                snap[i] = __ldcg(dist + u);
                row_end[i] = end;
                edge_end[i] = end - indptr[u];
                degrees += end - indptr[u];
            }
            degrees = block_sum_all(degrees, scratch);
            if (tid == 0) {
                block_sum[b] = degrees;
            }
            grid_barrier(barrier);

            // Phase B: this block's offset and the total, then an inclusive scan of its slice.
            long long before = 0, all = 0;
            for (long long j = tid; j < blocks; j += blockDim.x) {
                const long long s = __ldcg(block_sum + j);
                before += j < b ? s : 0;
                all += s;
            }
            before = block_sum_all(before, scratch);
            const long long n_edges = block_sum_all(all, scratch);
            long long carry = before;
            for (long long base = lo; base < hi; base += blockDim.x) {
                const long long i = base + tid;
                const long long degree = i < hi ? __ldcg(edge_end + i) : 0;
                long long tile_total = 0;
                const long long end = block_scan(degree, scratch, &tile_total);
                if (i < hi) {
                    edge_end[i] = carry + end;
                }
                carry += tile_total;
            }
            grid_barrier(barrier);

            // Phase C: relax every out-edge of the queue from the snapshot.
            const long long chunk = static_cast<long long>(blockDim.x) * kItems;
            for (long long e0 = b * chunk; e0 < n_edges; e0 += blocks * chunk) {
                const long long e1 = e0 + chunk < n_edges ? e0 + chunk : n_edges;
                if (tid == 0) {
                    chunk_slots[0] = first_above(edge_end, 0, near_len - 1, e0, cached);
                } else if (tid == 32) {
                    chunk_slots[1] = first_above(edge_end, 0, near_len - 1, e1 - 1, cached);
                }
                __syncthreads();
                const long long slot_lo = chunk_slots[0], slot_hi = chunk_slots[1];
                __syncthreads();
                // Gather the kItems edges of this thread first (independent loads in flight
                // together), then the atomics, then the appends.
                long long key[kItems], slot_of[kItems], v[kItems];
                bool valid[kItems], live[kItems];
                double cand[kItems];
#pragma unroll
                for (int k = 0; k < kItems; ++k) {
                    key[k] = e0 + k * blockDim.x + tid;
                    valid[k] = key[k] < e1;
                }
                first_above_n(edge_end, slot_lo, slot_hi, key, valid, slot_of, cached);
#pragma unroll
                for (int k = 0; k < kItems; ++k) {
                    live[k] = false;
                    v[k] = 0;
                    cand[k] = 0.0;
                    if (valid[k]) {
                        const long long i = slot_of[k];
                        const long long j =
                            load(row_end + i, cached) - (load(edge_end + i, cached) - key[k]);
                        const double from = load(snap + i, cached);
                        v[k] = static_cast<long long>(indices[j]);
                        cand[k] = from + weights[j];
                        // Stale source: u was lowered during this pass, so it is queued again
                        // and will relax these edges from the lower value; skip them now.
                        const long long u = static_cast<long long>(load(queue + i, cached));
                        live[k] = __ldcg(dist + u) == from;
                    }
                }
#pragma unroll
                for (int k = 0; k < kItems; ++k) {
                    live[k] = live[k] && cand[k] < __ldcg(dist + v[k]);
                }
                unsigned long long old[kItems];
#pragma unroll
                for (int k = 0; k < kItems; ++k) {
                    old[k] = 0;
                    if (live[k]) {
                        old[k] = atomicMin(reinterpret_cast<unsigned long long*>(dist + v[k]),
                                           static_cast<unsigned long long>(__double_as_longlong(cand[k])));
                    }
                }
#pragma unroll
                for (int k = 0; k < kItems; ++k) {
                    bool to_near = false, to_far = false;
                    const unsigned long long bits =
                        static_cast<unsigned long long>(__double_as_longlong(cand[k]));
                    if (live[k] && bits < old[k]) {
                        stamp[v[k]] = r;
                        if (cand[k] < threshold) {
                            to_near = atomicExch(near_mark + v[k], r) != r;
                        } else {
                            atomicMin(slot + 2, bits);
                            to_far = atomicExch(far_mark + v[k], epoch) != epoch;
                        }
                    }
                    const unsigned long long at_near = warp_append_slot(slot + 0, to_near);
                    if (to_near) {
                        next[at_near] = static_cast<Index>(v[k]);
                    }
                    const unsigned long long at_far = warp_append_slot(slot + 1, to_far);
                    if (to_far) {
                        far[far_len + static_cast<long long>(at_far)] = static_cast<Index>(v[k]);
                    }
                }
            }
            ++relax_passes;
            edges_relaxed += n_edges;
        } else {
            // SPLIT: far vertices in [T_old, T) join the near queue, those >= T stay far.
            const double threshold_old = ctl.threshold_old;
            const double split_floor = ctl.split_floor;
            Index* far_next = ctl.far_current ? far0 : far1;
            for (long long base = b * blockDim.x; base < far_len; base += blocks * blockDim.x) {
                const long long i = base + tid;
                bool move = false, keep = false;
                long long v = 0;
                if (i < far_len) {
                    v = static_cast<long long>(__ldcg(far + i));
                    const double d = __ldcg(dist + v);
                    // d <= split_floor (the far minimum) moves too: progress even when
                    // threshold + delta rounds back to threshold.
                    move = d >= threshold_old && (d < threshold || d <= split_floor);
                    keep = d >= threshold_old && !move;
                    if (keep) {
                        far_mark[v] = r;
                        atomicMin(slot + 2, static_cast<unsigned long long>(__double_as_longlong(d)));
                    }
                }
                const unsigned long long at_near = warp_append_slot(slot + 0, move);
                if (move) {
                    next[at_near] = static_cast<Index>(v);
                }
                const unsigned long long at_far = warp_append_slot(slot + 1, keep);
                if (keep) {
                    far_next[at_far] = static_cast<Index>(v);
                }
            }
            ++splits;
        }
        ++total_passes;
        grid_barrier(barrier);

        // Decide the next pass; every block computes the same from slot r % 3.
        if (tid == 0) {
            const unsigned long long near_out = __ldcg(slot + 0);
            const unsigned long long far_out = __ldcg(slot + 1);
            const unsigned long long min_out = __ldcg(slot + 2);
            near_adds += static_cast<long long>(near_out);
            ctl.current ^= 1;
            ctl.near_len = static_cast<long long>(near_out);
            if (action == kRelax) {
                far_adds += static_cast<long long>(far_out);
                ctl.far_len += static_cast<long long>(far_out);
                ctl.far_min = min_out < ctl.far_min ? min_out : ctl.far_min;
            } else {
                ctl.far_len = static_cast<long long>(far_out);
                ctl.far_min = min_out;
                ctl.far_current ^= 1;
                ctl.epoch = r;
            }
            if (ctl.near_len > 0) {
                ctl.action = kRelax;
            } else if (ctl.far_len > 0) {
                const double far_min = __longlong_as_double(static_cast<long long>(ctl.far_min));
                ctl.threshold_old = ctl.threshold;
                ctl.threshold = (far_min > ctl.threshold ? far_min : ctl.threshold) + delta;
                ctl.split_floor = far_min;
                ctl.action = kSplit;
            } else {
                ctl.action = kDone;
            }
            ctl.pass = r;
        }
        __syncthreads();
    }

    if (b == 0 && tid == 0) {
        stats[0] = total_passes;
        stats[1] = relax_passes;
        stats[2] = splits;
        stats[3] = edges_relaxed;
        stats[4] = near_adds;
        stats[5] = far_adds;
    }
}

// Parents from final distances and stamps: for each edge u->v, if dist[u] + w == dist[v] and
// stamp[u] < stamp[v], parent[v] = u (any such edge may win; all are valid). Edge-parallel over
// all nnz edges, rows found by binary search in indptr, narrowed per chunk as above.
template <typename Index>
__global__ void __launch_bounds__(256)
sssp_settle_tree(const long long* __restrict__ indptr, const Index* __restrict__ indices,
                 const double* __restrict__ weights, long long n, const double* __restrict__ dist,
                 const int* __restrict__ stamp, long long* __restrict__ parent) {
    __shared__ long long chunk_rows[2];
    const long long n_edges = indptr[n];
    const long long* ends = indptr + 1;  // ends[u] = indptr[u + 1]
    const long long chunk = static_cast<long long>(blockDim.x) * kItems;
    for (long long e0 = static_cast<long long>(blockIdx.x) * chunk; e0 < n_edges;
         e0 += static_cast<long long>(gridDim.x) * chunk) {
        const long long e1 = e0 + chunk < n_edges ? e0 + chunk : n_edges;
        if (threadIdx.x == 0) {
            chunk_rows[0] = first_above(ends, 0, n - 1, e0);
        } else if (threadIdx.x == 32) {
            chunk_rows[1] = first_above(ends, 0, n - 1, e1 - 1);
        }
        __syncthreads();
        const long long row_lo = chunk_rows[0], row_hi = chunk_rows[1];
        __syncthreads();
        long long key[kItems], row[kItems];
        bool valid[kItems];
#pragma unroll
        for (int k = 0; k < kItems; ++k) {
            key[k] = e0 + k * blockDim.x + threadIdx.x;
            valid[k] = key[k] < e1;
        }
        first_above_n(ends, row_lo, row_hi, key, valid, row);
#pragma unroll
        for (int k = 0; k < kItems; ++k) {
            if (valid[k]) {
                const long long u = row[k];
                const long long v = static_cast<long long>(indices[key[k]]);
                if (dist[u] + weights[key[k]] == dist[v] && stamp[u] < stamp[v]) {
                    parent[v] = u;
                }
            }
        }
    }
}
