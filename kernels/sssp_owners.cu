// sssp_owners.cu -- one owner's share of an SSSP over several owners: relaxation rounds that
// prune remote candidates as they find them, the merge of arriving candidates, the splits of
// the mid and far piles, and the outbox.
//
// What it computes
//   gpipe/engine/compute/gpu_sssp_owners.py launches these kernels for gpipe/engine/traverse.py's
//   _sssp_owner: delta-stepping across owners (non-negative weights) or Bellman-Ford (any
//   weights), exchanging candidates worker to worker once per step. All arrays live for the
//   whole traversal (gpipe/engine/compute/owner_state.py documents each one); no kernel allocates,
//   sorts or deduplicates, and the host reads `counters` once per round.
//     sssp_owner_frontier      per frontier slot: the snapshot distance and the degree (the
//                              host scans the degrees); empties the near queue about to fill.
//     sssp_owner_relax_edges   pass 1 of a round: every minimum. A local target's distance by
//                              atomic min (stamped "lowered"); a remote target's candidate only
//                              if it beats sent_best[v], the least distance this owner has ever
//                              queued for v (the owner of v holds that or less already, so
//                              nothing else can improve v, whatever the weights' signs); the
//                              thread whose min lowered sent_best queues v once (queued 0 -> 1).
//     sssp_owner_settle_edges  pass 2, after every min is final: parent[v] (and send_parent)
//                              from an edge whose candidate equals the final value exactly;
//                              the first such edge of a lowered v (stamp lowered -> listed)
//                              queues it near (d < t), on the mid pile (d < T) or on the far
//                              pile, each queue without repeats.
//     sssp_owner_merge_lower / sssp_owner_merge_settle   the same two passes over arriving
//                              (target, distance, parent) triples.
//     sssp_owner_split         empties a pile into the queues by the thresholds, dropping the
//                              entries whose distance fell below the threshold that put them
//                              there (relaxed from the near queue since).
//     sssp_owner_pack          one peer's outbox segment as (target, sent_best, send_parent);
//                              dequeued.
//   gpipe/engine/compute/cpu_sssp_owners.py is the line-by-line Numba twin (each of its functions
//   names the kernel it mirrors); tests/test_kernels_cpu.py checks the twin and
//   tests/test_kernels_gpu.py these kernels, step by step and as whole traversals, against
//   scipy.sparse.csgraph.
//
// Technique
//   - Two passes per round as in sssp.cu (the min is a compare-and-swap loop on the 64-bit
//     pattern, compared as doubles, so negative distances work): writing the parent in the
//     pass that lowers would race with a later, lower CAS.
//   - Stamps instead of flags: call c stamps 2c + 1 ("lowered") and 2c + 2 ("listed"), so no
//     flag array is cleared between calls; near_mark holds the round whose queue has the
//     vertex, so a queue filled by a round and then by a merge has no repeats either.
//   - Near-far (Davidson, Baxter, Garland, Owens, IPDPS 2014) with two thresholds: the shared
//     exchange window T and the local bucket t <= T (the host raises t and splits the mid
//     pile when the near queue is empty). The minima of what goes onto each pile, and of what
//     is queued for peers, are folded per warp (one atomic per warp) and read by the host.
//   - Load balance and queues as in sssp.cu and bfs.cu (frontier.cuh): one thread per
//     frontier edge found by binary search in the scanned degrees; warp-aggregated appends.
//     Every loop trip count is uniform across a warp, for the ballots.
//
// Array invariants (n_local local vertices; k frontier slots; Index is int or long long)
//   indptr int64[n_local + 1]; indices Index[nnz] global target ids; weights Weight[nnz]
//   (double or float; a float weight is widened to double before it is added).
//   frontier int64[k] distinct local ids; snapshot float64[k]; edge_end int64[k] inclusive
//   prefix sum of the frontier's degrees.
//   dist float64[n_local] (+inf unreached, only lowered); parent int64[n_local] global ids.
//   stamp int32, near_mark int32, mid_mark uint8, far_mark uint8 [n_local].
//   near_out, mid_out, far_out int64[n_local]: the queues being filled; their lengths live in
//   counters[kNear], counters[mid_slot], counters[far_slot].
//   sent_best float64, send_parent int64, queued int32 [n - n_local], by remote index
//   r = v (v < offset) or v - n_local; outbox int64[n - n_local], owner q's segment at
//   outbox_start[q], its length in counters[kSent + q].
//   counters uint64[kSent + n_owners] (layout: gpipe/engine/compute/owner_state.py); the *_MIN slots
//   hold float64 bit patterns, +inf when empty.
//
// Written for NVRTC (cupy.RawModule, -std=c++17): no standard headers; atomics.cuh holds the
// double-precision atomic min (shared with sssp.cu), frontier.cuh and warp.cuh the edge search,
// queue append and warp reductions. Every kernel is a template on Index so that
// gpipe/engine/compute/cuda.py instantiates the file as it does the others; those that read
// weights on Weight too (gpipe/engine/compute/cuda_sources.py lists both widths).

#include "atomics.cuh"
#include "frontier.cuh"

namespace {

// Slots of `counters` (gpipe/engine/compute/owner_state.py: NEAR, MID_MIN, FAR_MIN, SENT_MIN,
// RELAXED, SENT).
constexpr int kNear = 0;
constexpr int kMidMin = 5;
constexpr int kFarMin = 6;
constexpr int kSentMin = 7;
constexpr int kRelaxed = 8;
constexpr int kSent = 10;

__device__ __forceinline__ double positive_infinity() {
    return __longlong_as_double(0x7ff0000000000000LL);
}

// Fold every lane's `value` (+inf: nothing) into the double in counters[slot], one atomic per
// warp (no shuffles when no lane has a value). All 32 lanes must call.
__device__ __forceinline__ void warp_fold_min(unsigned long long* counters, int slot, double value) {
    if (!__any_sync(kFullWarp, value < positive_infinity())) {
        return;
    }
    const double least = warp_min(value);
    if ((threadIdx.x & 31) == 0 && least < positive_infinity()) {
        atomic_min_double(reinterpret_cast<double*>(&counters[slot]), least);
    }
}

// Where list_improved put a vertex: at most one queue, and the values to fold into the piles'
// minima (+inf: none).
struct Listing {
    bool to_near;
    bool to_mid;
    bool to_far;
    double mid_value;
    double far_value;
};

__device__ __forceinline__ Listing no_listing() {
    return Listing{false, false, false, positive_infinity(), positive_infinity()};
}

// The queue of local vertex v at distance d: near below the local threshold t (once per
// queue), else the mid pile below the window's end T or the far pile (once while on it); d is
// folded into that pile's minimum either way. One thread per v per call gets here (the stamp
// or the pile's uniqueness decides which), so the marks are plain stores.
__device__ __forceinline__ Listing list_improved(long long v, double d, double local_threshold,
                                                 double threshold, int fill_round,
                                                 int* near_mark, unsigned char* mid_mark,
                                                 unsigned char* far_mark) {
    Listing listing = no_listing();
    if (d < local_threshold) {
        if (near_mark[v] != fill_round) {
            near_mark[v] = fill_round;
            listing.to_near = true;
        }
    } else if (d < threshold) {
        listing.mid_value = d;
        if (mid_mark[v] == 0) {
            mid_mark[v] = 1;
            listing.to_mid = true;
        }
    } else {
        listing.far_value = d;
        if (far_mark[v] == 0) {
            far_mark[v] = 1;
            listing.to_far = true;
        }
    }
    return listing;
}

// Pass 2 at local vertex `local` for a candidate `cand` from global vertex from(): if this call
// lowered the vertex (stamp `lowered`, or `lowered + 1` once listed) and cand equals its final
// distance, the parent is set (any such candidate may win), and the first to move the stamp to
// `lowered + 1` sets *listing (list_improved). `from` is called only where the parent is written.
template <typename From>
__device__ __forceinline__ void settle_local(long long local, double cand, From from,
                                             const double* dist, long long* parent, int* stamp,
                                             int lowered, double local_threshold, double threshold,
                                             int fill_round, int* near_mark,
                                             unsigned char* mid_mark, unsigned char* far_mark,
                                             Listing* listing) {
    const int s = stamp[local];
    if ((s == lowered || s == lowered + 1) && cand == dist[local]) {
        parent[local] = from();
        if (atomicCAS(&stamp[local], lowered, lowered + 1) == lowered) {
            *listing = list_improved(local, dist[local], local_threshold, threshold, fill_round,
                                     near_mark, mid_mark, far_mark);
        }
    }
}

// Append each lane's listed vertex v to its queue and fold the piles' minima. All 32 lanes
// must call.
__device__ __forceinline__ void append_listed(const Listing& listing, long long v,
                                              long long* near_out, long long* mid_out,
                                              int mid_slot, long long* far_out, int far_slot,
                                              unsigned long long* counters) {
    const unsigned long long near_at = warp_append_slot(&counters[kNear], listing.to_near);
    if (listing.to_near) {
        near_out[near_at] = v;
    }
    const unsigned long long mid_at = warp_append_slot(&counters[mid_slot], listing.to_mid);
    if (listing.to_mid) {
        mid_out[mid_at] = v;
    }
    const unsigned long long far_at = warp_append_slot(&counters[far_slot], listing.to_far);
    if (listing.to_far) {
        far_out[far_at] = v;
    }
    warp_fold_min(counters, kMidMin, listing.mid_value);
    warp_fold_min(counters, kFarMin, listing.far_value);
}

}  // namespace

// Per frontier slot: its distance now (the round's snapshot) and its degree, which the host
// scans into edge_end. Thread 0 empties the near queue that pass 2 will fill and counts the
// round's vertices.
template <typename Index>
__global__ void sssp_owner_frontier(const long long* __restrict__ indptr,
                                    const long long* __restrict__ frontier,
                                    long long k,
                                    const double* __restrict__ dist,
                                    double* __restrict__ snapshot,
                                    long long* __restrict__ degree,
                                    unsigned long long* __restrict__ counters) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        counters[kNear] = 0;
        counters[kRelaxed] += static_cast<unsigned long long>(k);
    }
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < k;
         i += stride) {
        const long long u = frontier[i];
        snapshot[i] = dist[u];
        degree[i] = indptr[u + 1] - indptr[u];
    }
}

// Pass 1: relax every frontier edge from the snapshot. A candidate above `bound` (the cutoff,
// max_distance; +inf: none) is dropped, local or remote: Dijkstra's cutoff, so no distance
// above it is held or sent and a kept vertex's parent is kept (pass 2 never matches a dropped
// candidate: dist and sent_best are <= bound or +inf). Local targets: atomic min, stamped
// `lowered` by the thread that lowered them. Remote targets: atomic min on sent_best; the
// thread that lowered it folds the candidate into counters[kSentMin] and, if the target was
// not queued yet, appends it to its owner's outbox segment.
template <typename Index, typename Weight>
__global__ void sssp_owner_relax_edges(const long long* __restrict__ indptr,
                                       const Index* __restrict__ indices,
                                       const Weight* __restrict__ weights,
                                       long long offset,
                                       long long n_local,
                                       long long chunk,
                                       long long n_owners,
                                       const long long* __restrict__ frontier,
                                       const double* __restrict__ snapshot,
                                       const long long* __restrict__ edge_end,
                                       long long k,
                                       double* dist,
                                       int* stamp,
                                       int lowered,
                                       double* sent_best,
                                       int* queued,
                                       long long* outbox,
                                       const long long* __restrict__ outbox_start,
                                       unsigned long long* counters,
                                       double bound) {
    const long long n_edges = edge_end[k - 1];
    warp_uniform_loop(n_edges, [&](long long e) {
        bool to_send = false;
        long long v = 0;
        long long owner = -1;
        double sent = positive_infinity();
        if (e < n_edges) {
            const long long i = frontier_slot(edge_end, k, e);
            const long long j = indptr[frontier[i] + 1] - (edge_end[i] - e);
            v = static_cast<long long>(indices[j]);
            const double cand = snapshot[i] + weights[j];
            const long long local = v - offset;
            if (!(cand <= bound)) {
                // beyond the cutoff: dropped
            } else if (local >= 0 && local < n_local) {
                if (atomic_min_double(&dist[local], cand)) {
                    stamp[local] = lowered;  // every writer writes the same value
                }
            } else {
                const long long r = local < 0 ? v : v - n_local;
                if (atomic_min_double(&sent_best[r], cand)) {
                    sent = cand;
                    if (atomicCAS(&queued[r], 0, 1) == 0) {
                        to_send = true;
                        owner = v / chunk;
                    }
                }
            }
        }
        if (__any_sync(kFullWarp, to_send)) {  // uniform across the warp
            for (long long q = 0; q < n_owners; ++q) {
                const bool mine = to_send && owner == q;
                const unsigned long long at = warp_append_slot(&counters[kSent + q], mine);
                if (mine) {
                    outbox[outbox_start[q] + static_cast<long long>(at)] = v;
                }
            }
        }
        warp_fold_min(counters, kSentMin, sent);
    });
}

// Pass 2: every minimum is final. A local target stamped in this call takes its parent from
// any edge whose candidate equals dist exactly; the first such edge to move the stamp from
// `lowered` to `lowered + 1` lists it. A queued remote target takes send_parent from any edge
// whose candidate equals sent_best (so the triple sent is consistent).
template <typename Index, typename Weight>
__global__ void sssp_owner_settle_edges(const long long* __restrict__ indptr,
                                        const Index* __restrict__ indices,
                                        const Weight* __restrict__ weights,
                                        long long offset,
                                        long long n_local,
                                        const long long* __restrict__ frontier,
                                        const double* __restrict__ snapshot,
                                        const long long* __restrict__ edge_end,
                                        long long k,
                                        const double* dist,
                                        long long* parent,
                                        int* stamp,
                                        int lowered,
                                        double local_threshold,
                                        double threshold,
                                        int fill_round,
                                        int* near_mark,
                                        unsigned char* mid_mark,
                                        unsigned char* far_mark,
                                        long long* near_out,
                                        long long* mid_out,
                                        int mid_slot,
                                        long long* far_out,
                                        int far_slot,
                                        const double* sent_best,
                                        long long* send_parent,
                                        const int* queued,
                                        unsigned long long* counters) {
    const long long n_edges = edge_end[k - 1];
    warp_uniform_loop(n_edges, [&](long long e) {
        Listing listing = no_listing();
        long long local = 0;
        if (e < n_edges) {
            const long long i = frontier_slot(edge_end, k, e);
            const long long j = indptr[frontier[i] + 1] - (edge_end[i] - e);
            const long long v = static_cast<long long>(indices[j]);
            const double cand = snapshot[i] + weights[j];
            local = v - offset;
            if (local >= 0 && local < n_local) {
                settle_local(local, cand, [&] { return offset + frontier[i]; }, dist, parent,
                             stamp, lowered, local_threshold, threshold, fill_round, near_mark,
                             mid_mark, far_mark, &listing);
            } else {
                const long long r = local < 0 ? v : v - n_local;
                if (queued[r] != 0 && cand == sent_best[r]) {
                    send_parent[r] = offset + frontier[i];
                }
            }
        }
        append_listed(listing, local, near_out, mid_out, mid_slot, far_out, far_slot, counters);
    });
}

// Merge, pass 1: every arriving candidate's minimum (targets are this owner's global ids).
template <typename Index>
__global__ void sssp_owner_merge_lower(long long offset,
                                       const long long* __restrict__ targets,
                                       const double* __restrict__ dists,
                                       long long m,
                                       double* dist,
                                       int* stamp,
                                       int lowered) {
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < m;
         i += stride) {
        const long long local = targets[i] - offset;
        if (atomic_min_double(&dist[local], dists[i])) {
            stamp[local] = lowered;
        }
    }
}

// Merge, pass 2: a lowered target takes the parent of a candidate equal to its final
// distance; the first to move its stamp lists it.
template <typename Index>
__global__ void sssp_owner_merge_settle(long long offset,
                                        const long long* __restrict__ targets,
                                        const double* __restrict__ dists,
                                        const long long* __restrict__ parents,
                                        long long m,
                                        const double* dist,
                                        long long* parent,
                                        int* stamp,
                                        int lowered,
                                        double local_threshold,
                                        double threshold,
                                        int fill_round,
                                        int* near_mark,
                                        unsigned char* mid_mark,
                                        unsigned char* far_mark,
                                        long long* near_out,
                                        long long* mid_out,
                                        int mid_slot,
                                        long long* far_out,
                                        int far_slot,
                                        unsigned long long* counters) {
    warp_uniform_loop(m, [&](long long i) {
        Listing listing = no_listing();
        long long local = 0;
        if (i < m) {
            local = targets[i] - offset;
            settle_local(local, dists[i], [&] { return parents[i]; }, dist, parent, stamp,
                         lowered, local_threshold, threshold, fill_round, near_mark, mid_mark,
                         far_mark, &listing);
        }
        append_listed(listing, local, near_out, mid_out, mid_slot, far_out, far_slot, counters);
    });
}

// Empty the pile pile[:counters[pile_slot]] into the queues by the thresholds: its mark
// cleared, entries below drop_below dropped (relaxed since they were put there), the others
// listed again. Appends go to other slots than pile_slot (the host resets the new pile's).
template <typename Index>
__global__ void sssp_owner_split(const long long* __restrict__ pile,
                                 int pile_slot,
                                 unsigned char* pile_mark,
                                 double drop_below,
                                 double local_threshold,
                                 double threshold,
                                 int fill_round,
                                 const double* dist,
                                 int* near_mark,
                                 unsigned char* mid_mark,
                                 unsigned char* far_mark,
                                 long long* near_out,
                                 long long* mid_out,
                                 int mid_slot,
                                 long long* far_out,
                                 int far_slot,
                                 unsigned long long* counters) {
    const long long count = static_cast<long long>(counters[pile_slot]);
    warp_uniform_loop(count, [&](long long i) {
        Listing listing = no_listing();
        long long v = 0;
        if (i < count) {
            v = pile[i];
            pile_mark[v] = 0;
            const double d = dist[v];
            if (d >= drop_below) {
                listing = list_improved(v, d, local_threshold, threshold, fill_round, near_mark,
                                        mid_mark, far_mark);
            }
        }
        append_listed(listing, v, near_out, mid_out, mid_slot, far_out, far_slot, counters);
    });
}

// One peer's outbox segment outbox[start:start + count] as (target, distance, parent), and
// its targets dequeued.
template <typename Index>
__global__ void sssp_owner_pack(long long offset,
                                long long n_local,
                                const long long* __restrict__ outbox,
                                long long start,
                                long long count,
                                const double* __restrict__ sent_best,
                                const long long* __restrict__ send_parent,
                                int* __restrict__ queued,
                                long long* __restrict__ targets,
                                double* __restrict__ dists,
                                long long* __restrict__ parents) {
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += stride) {
        const long long v = outbox[start + i];
        const long long r = v < offset ? v : v - n_local;
        targets[i] = v;
        dists[i] = sent_best[r];
        parents[i] = send_parent[r];
        queued[r] = 0;
    }
}
