// sssp_nearfar.cu -- whole single-owner SSSP (non-negative weights) in one persistent kernel.
//
// What it computes
//   sssp_near_far: dist[v] = length of a shortest path from the nearest source to v (+inf when
//   unreached), for weights w >= 0 (zeros allowed, duplicates allowed: the minimum keeps the
//   lightest), plus stamp[v] = the pass in which dist[v] was last lowered (0 for sources), and
//   parent[v] = some u with an edge u->v such that dist[u] + w == dist[v] exactly and
//   stamp[u] < stamp[v] (-1 for sources and unreached): recorded by the relaxation, checked
//   by sssp_check_parents, repaired where a race spoiled it by sssp_repair_scan +
//   sssp_repair_rows (symmetric graphs) or sssp_settle_tree (any graph).
//   With target >= 0 the traversal ends once the target is settled: when a pass leaves the near
//   queue empty, every distance below the threshold is final, so a target below it ends it
//   (read after the barrier, when no pass is lowering distances: every block decides alike).
//   Candidates above max_distance are dropped, so farther vertices stay +inf and the far pile
//   runs dry where the distances pass it. With stamp, parent and parent_edge null no parent
//   is recorded (distances only) and the check and repair kernels are not launched.
//   gpipe/engine/compute/gpu_sssp.py (sssp) launches them; tests/test_kernels_gpu.py checks them
//   against scipy.sparse.csgraph.dijkstra and validates the tree. The slow, obviously right
//   twin is the frontier Bellman-Ford of sssp.cu driven round by round (gpipe/engine/traverse.py).
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
//   Relaxation is edge-parallel, load-balanced by prefix sum + search: the near queue's
//   degrees are scanned into edge_end, and block b takes the b-th equal, contiguous share of
//   the pass's edges (its first queue slot is written by the scan, start_slot[b]). It walks
//   its share in chunks of 4 * blockDim edges: the ends of the next kStage queue slots go to
//   shared memory (coalesced), then the row offset, snapshot and id of the slots the chunk
//   uses; each thread finds the slots of its 4 edges by a branch-free search in shared
//   memory, in lockstep, then gathers the 4 edges, then does their atomics. A source lowered
//   since the snapshot (dist[u] != snap, checked once per slot per chunk) is skipped: it is
//   queued again and will relax its edges from the lower value. dist is lowered with the native 64-bit atomicMin on the
//   IEEE bit pattern: for non-negative doubles (and +inf) the unsigned bit order is the
//   numeric order, so no compare-and-swap loop is needed.
//   Every pass relaxes from a SNAPSHOT of its queue's distances taken at the start of the
//   pass, and every lowering stamps the pass number. That is what makes the parents simple:
//   the edge u->v that gave v its final distance in pass r read dist[u] already final (if
//   dist[u] had dropped below the snapshot, v would end lower still), so stamp[u] < r =
//   stamp[v]. Any tight edge with a smaller stamp at the source is therefore a valid parent,
//   and stamps strictly decrease along parent pointers: no cycle even among zero-weight edges.
//   Parents are recorded as the relaxation goes: a thread whose atomicMin lowers v stores
//   parent[v] = u and parent_edge[v] = j (the CSR position of u->v), two plain stores. When
//   several threads lower v in one pass their stores may land out of order (or mixed), so
//   sssp_check_parents re-checks each vertex afterwards (j lies in u's row, targets v,
//   dist[u] + w[j] == dist[v], stamp[u] < stamp[v]) and lists the few that fail; those are
//   repaired by sssp_repair_rows (symmetric graphs: v's own row holds the twins of its
//   in-edges; the listed rows are checked edge-parallel) or, for directed
//   graphs, by the edge-parallel sssp_settle_tree over all edges, which returns at once when
//   the list is empty. The final winner's edge always passes the check, so a repair always
//   finds a parent.
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
//   fence this barrier copies); with 0, with __ldcg too (the default).
//   Nothing written in the kernel is read through const __restrict__ (the read-only path).
//
// Array invariants (n vertices, nnz edges; Index is int or long long)
//   indptr     int64[n + 1] non-decreasing; out-edges of u are
//              indices/weights[indptr[u] : indptr[u + 1]].
//   indices    Index[nnz] target ids in [0, n); weights Weight[nnz] (double or float), >= 0,
//              not NaN; a float weight is widened to double before it is added.
//   dist       float64[n]: 0 at sources, +inf elsewhere on entry; only lowered.
//   stamp      int32[n]: 0 on entry; pass of the last lowering.
//   near_mark, far_mark  int32[n]: -1 on entry.
//   queue0     Index[n]: the distinct sources in [0, n_sources); queue1, far0, far1 Index[n].
//   snap       float64[n], row_end int64[n], edge_end int64[n]: per slot of the current queue
//              (after the scan row_end[i] holds row end - edge_end[i], so edge e of the pass
//              is CSR position e + row_end[slot]).
//   block_sum, start_slot  int64[gridDim.x].
//   parent     int64[n] -1 on entry; parent_edge int64[n] (anything on entry): see above;
//              record_parents == 0 records none (tests: every parent then comes from a repair).
//   ring       uint64[9] = 3 x {near appends, far appends, far min bits}: {0, 0, +inf bits}.
//   barrier    uint32[2] zero.
//   stats      int64[6] zero: passes, relax passes, splits, edges relaxed, near appends,
//              far appends.
//
// Written for NVRTC (cupy.RawModule, -std=c++17): no standard headers; frontier.cuh holds the
// warp-aggregated queue append shared with the other traversal kernels.

#include "frontier.cuh"

namespace {

constexpr unsigned long long kInfBits = 0x7ff0000000000000ull;
constexpr int kItems = 4;     // edges per thread per chunk in the relax phase
constexpr int kStage = 1024;  // queue slots staged in shared memory per chunk (a power of 2)
constexpr int kIntMax = 0x7fffffff;

// Number of t in [0, kStage - 1) with ends[t] <= x: for non-decreasing ends, the first t with
// ends[t] > x whenever that t is below kStage - 1 (callers fix up the last slot). Branch-free.
__device__ __forceinline__ int shared_rank(const int* ends, int x) {
    int pos = 0;
#pragma unroll
    for (int step = kStage >> 1; step > 0; step >>= 1) {
        pos += ends[pos + step - 1] <= x ? step : 0;
    }
    return pos;
}
constexpr int kRelax = 1, kSplit = 2, kDone = 0;

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

template <typename Index, typename Weight>
__global__ void __launch_bounds__(256, 4)
sssp_near_far(const long long* __restrict__ indptr, const Index* __restrict__ indices,
              const Weight* __restrict__ weights, long long n, double delta, long long n_sources,
              double* dist, int* stamp, int* near_mark, int* far_mark, Index* queue0,
              Index* queue1, Index* far0, Index* far1, double* snap, long long* row_end,
              long long* edge_end, long long* block_sum, long long* start_slot,
              long long* parent, long long* parent_edge, unsigned long long* ring,
              unsigned int* barrier, long long* stats, int l1_cached, int record_parents,
              long long target, double max_distance) {
    const bool cached = l1_cached != 0;
    const bool record = record_parents != 0 && parent != nullptr;
    const bool stamping = stamp != nullptr;
    __shared__ Control ctl;
    __shared__ long long scratch[32];
    __shared__ int sh_end[kStage];           // slot ends relative to the chunk start (clamped)
    __shared__ long long sh_delta[kStage];   // CSR position - pass edge index, per slot
    __shared__ double sh_from[kStage];       // snapshot, or -1 when the source is stale
    __shared__ Index sh_u[kStage];           // the slot's vertex
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
            const long long per_block = (n_edges + blocks - 1) / blocks;
            for (long long base = lo; base < hi; base += blockDim.x) {
                const long long i = base + tid;
                const long long degree = i < hi ? __ldcg(edge_end + i) : 0;
                long long tile_total = 0;
                const long long end = block_scan(degree, scratch, &tile_total);
                if (i < hi) {
                    const long long incl = carry + end;
                    edge_end[i] = incl;
                    row_end[i] = __ldcg(row_end + i) - incl;
                    // Blocks whose share starts inside this slot's edges [incl - degree, incl).
                    for (long long c = (incl - degree + per_block - 1) / (per_block > 0 ? per_block : 1);
                         degree > 0 && c * per_block < incl; ++c) {
                        start_slot[c] = i;
                    }
                }
                carry += tile_total;
            }
            grid_barrier(barrier);

            // Phase C: relax every out-edge of the queue from the snapshot; block b takes the
            // edges [b * per_block, (b + 1) * per_block) of the pass, chunk by chunk.
            const int chunk = static_cast<int>(blockDim.x) * kItems;
            long long e = b * per_block;
            const long long e_hi = e + per_block < n_edges ? e + per_block : n_edges;
            long long cur = e < e_hi ? __ldcg(start_slot + b) : 0;  // first slot with end > e
            while (e < e_hi) {
                for (int t = tid; t < kStage; t += blockDim.x) {
                    const long long i = cur + t;
                    int rel = kIntMax;
                    if (i < near_len) {
                        const long long d = load(edge_end + i, cached) - e;
                        rel = d < kIntMax ? static_cast<int>(d) : kIntMax;
                    }
                    sh_end[t] = rel;
                }
                __syncthreads();
                // This chunk: at most `chunk` edges, within the share and the staged slots.
                int span = e_hi - e < chunk ? static_cast<int>(e_hi - e) : chunk;
                span = sh_end[kStage - 1] < span ? sh_end[kStage - 1] : span;
                const int used = span > 0 ? shared_rank(sh_end, span - 1) + 1 : 0;
                for (int t = tid; t < used; t += blockDim.x) {
                    const long long i = cur + t;
                    const Index u = load(queue + i, cached);
                    const double from = load(snap + i, cached);
                    sh_delta[t] = load(row_end + i, cached);
                    sh_u[t] = u;
                    sh_from[t] = __ldcg(dist + static_cast<long long>(u)) == from ? from : -1.0;
                }
                __syncthreads();
                // Gather the kItems edges of this thread first (independent loads in flight
                // together), then the atomics, then the appends.
                int local[kItems], at[kItems];
                long long v[kItems];
                bool live[kItems];
                double cand[kItems];
#pragma unroll
                for (int k = 0; k < kItems; ++k) {
                    local[k] = k * static_cast<int>(blockDim.x) + tid;
                    at[k] = 0;
                }
#pragma unroll
                for (int step = kStage >> 1; step > 0; step >>= 1) {
#pragma unroll
                    for (int k = 0; k < kItems; ++k) {
                        at[k] += sh_end[at[k] + step - 1] <= local[k] ? step : 0;
                    }
                }
#pragma unroll
                for (int k = 0; k < kItems; ++k) {
                    live[k] = false;
                    v[k] = 0;
                    cand[k] = 0.0;
                    if (local[k] < span) {
                        const double from = sh_from[at[k]];
                        if (from >= 0.0) {
                            const long long j = e + local[k] + sh_delta[at[k]];
                            v[k] = static_cast<long long>(indices[j]);
                            cand[k] = from + weights[j];
                            live[k] = true;
                        }
                    }
                }
#pragma unroll
                for (int k = 0; k < kItems; ++k) {
                    live[k] = live[k] && cand[k] < __ldcg(dist + v[k]) && cand[k] <= max_distance;
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
                        if (stamping) stamp[v[k]] = r;
                        if (record) {  // the edge, re-read from shared memory (fewer registers)
                            parent[v[k]] = static_cast<long long>(sh_u[at[k]]);
                            parent_edge[v[k]] = e + local[k] + sh_delta[at[k]];
                        }
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
                // Next chunk: the first slot whose end lies beyond e + span.
                int advance = shared_rank(sh_end, span);
                if (advance == kStage - 1 && sh_end[kStage - 1] <= span) {
                    advance = kStage;
                }
                __syncthreads();
                cur += advance;
                e += span;
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
            } else if (target >= 0 && __ldcg(dist + target) < ctl.threshold) {
                ctl.action = kDone;  // the near queue is empty: every distance below T is final
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

// The parents recorded during the relaxation, re-checked for every lowered vertex (stamp > 0:
// reached, not a source): v keeps parent[v] = u when edge j = parent_edge[v] lies in u's row,
// points at v, is tight (dist[u] + w[j] == dist[v]) and stamp[u] < stamp[v]; otherwise (or
// when nothing was recorded, parent[v] < 0) v is listed in repair (count in *repairs).
template <typename Index, typename Weight>
__global__ void __launch_bounds__(256)
sssp_check_parents(const long long* __restrict__ indptr, const Index* __restrict__ indices,
                   const Weight* __restrict__ weights, long long n, const double* __restrict__ dist,
                   const int* __restrict__ stamp, const long long* __restrict__ parent_edge,
                   const long long* __restrict__ parent, Index* repair,
                   unsigned long long* repairs) {
    for (long long v = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; v < n;
         v += static_cast<long long>(gridDim.x) * blockDim.x) {
        const int sv = stamp[v];
        if (sv == 0) {
            continue;
        }
        const long long u = parent[v];
        bool ok = false;
        if (u >= 0) {
            const long long j = parent_edge[v];
            ok = j >= indptr[u] && j < indptr[u + 1] && static_cast<long long>(indices[j]) == v &&
                 dist[u] + weights[j] == dist[v] && stamp[u] < sv;
        }
        if (!ok) {
            repair[atomicAdd(repairs, 1ull)] = static_cast<Index>(v);
        }
    }
}

// Repair for symmetric graphs (every edge u->v of weight w has a twin v->u of weight w): the
// rows of the listed vertices, edge-parallel. sssp_repair_scan (one block) scans their
// degrees into repair_end; sssp_repair_rows then checks every edge v->x of those rows and
// sets parent[v] = x where dist[x] + w == dist[v] and stamp[x] < stamp[v] (any may win).
// The listed vertices are few but often hubs (many lowerings in one pass), whose long rows
// hold one or two valid parents: hence all edges in parallel rather than a scan per vertex.
// (One block scans the list: sized for the few hundred failures seen, not for n.)
template <typename Index>
__global__ void __launch_bounds__(256)
sssp_repair_scan(const long long* __restrict__ indptr, const Index* __restrict__ repair,
                 const unsigned long long* __restrict__ repairs, long long* __restrict__ repair_end) {
    __shared__ long long scratch[32];
    const long long count = static_cast<long long>(*repairs);
    long long carry = 0;
    for (long long base = 0; base < count; base += blockDim.x) {
        const long long i = base + threadIdx.x;
        long long degree = 0;
        if (i < count) {
            const long long v = static_cast<long long>(repair[i]);
            degree = indptr[v + 1] - indptr[v];
        }
        long long tile_total = 0;
        const long long end = block_scan(degree, scratch, &tile_total);
        if (i < count) {
            repair_end[i] = carry + end;
        }
        carry += tile_total;
    }
}

template <typename Index, typename Weight>
__global__ void __launch_bounds__(256)
sssp_repair_rows(const long long* __restrict__ indptr, const Index* __restrict__ indices,
                 const Weight* __restrict__ weights, const double* __restrict__ dist,
                 const int* __restrict__ stamp, long long* parent, const Index* __restrict__ repair,
                 const unsigned long long* __restrict__ repairs,
                 const long long* __restrict__ repair_end) {
    const long long count = static_cast<long long>(*repairs);
    if (count == 0) {
        return;
    }
    const long long total = repair_end[count - 1];
    for (long long e = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
         e += static_cast<long long>(gridDim.x) * blockDim.x) {
        const long long i = first_above(repair_end, 0, count - 1, e);
        const long long v = static_cast<long long>(repair[i]);
        const long long j = indptr[v + 1] - (repair_end[i] - e);
        const long long x = static_cast<long long>(indices[j]);
        if (dist[x] + weights[j] == dist[v] && stamp[x] < stamp[v]) {
            parent[v] = x;
        }
    }
}

// Parents from final distances and stamps, for directed graphs when sssp_check_parents listed
// any vertex (*gate != 0; returns at once otherwise): for each edge u->v, if dist[u] + w == dist[v] and
// stamp[u] < stamp[v], parent[v] = u (any such edge may win; all are valid). Edge-parallel over
// all nnz edges, rows found by binary search in indptr, narrowed per chunk as above.
template <typename Index, typename Weight>
__global__ void __launch_bounds__(256)
sssp_settle_tree(const long long* __restrict__ indptr, const Index* __restrict__ indices,
                 const Weight* __restrict__ weights, long long n, const double* __restrict__ dist,
                 const int* __restrict__ stamp, long long* __restrict__ parent,
                 const unsigned long long* __restrict__ gate) {
    __shared__ long long chunk_rows[2];
    if (*gate == 0) {
        return;
    }
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
