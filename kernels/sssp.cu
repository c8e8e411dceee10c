// sssp.cu -- one round of edge-parallel Bellman-Ford relaxation over one owner's CSR.
//
// What it computes
//   One call of sssp_relax (gpipe/engine/compute/gpu_sssp.py) relaxes every out-edge of the frontier once,
//   from the snapshot frontier_dist (never from dist[u], which may drop during the round):
//     cand = frontier_dist[i] + w(u->v); a cand above `bound` (the cutoff, max_distance; +inf:
//     none) is dropped, local or remote, as Dijkstra's cutoff drops it (so a kept vertex's
//     parent is kept, whatever the weights' signs). Otherwise:
//     * v local: dist[v] = min(dist[v], cand); v is IMPROVED if its distance strictly decreased
//       in this call. Each improved v then gets parent[v] = offset + u for some frontier edge
//       whose cand equals the final dist[v] exactly (any tie winner), and is listed once in
//       `improved`. Parents change only on strict improvement, which keeps the parent graph
//       acyclic when no negative cycle exists.
//     * v remote and `remote` != 0: (v, cand, offset + u) is appended to the remote lists, raw.
//   gpipe/engine/compute/cpu.py holds its Numba twin; tests/test_kernels_gpu.py checks whole
//   traversals built from it against scipy.sparse.csgraph and validates the parent tree.
//
// Technique: two edge-parallel passes over the same frontier edges
//   Pass 1 (sssp_relax_edges): edge-parallel Bellman-Ford relaxation, the GPU SSSP seed
//   (Bellman-Ford on a GTX Titan, edge-parallel relaxation). CUDA has no atomicMin on doubles,
//   so the minimum is a compare-and-swap loop on the 64-bit pattern that compares the values as
//   doubles (negative distances included); the thread whose CAS lowers the value raises
//   flags[v] = 1.
//   Pass 2 (sssp_settle_parents): once all relaxations are in (kernel boundary), each edge whose
//   cand equals dist[v] for a flagged v writes parent[v] = offset + u. Doing this after the
//   minimum is final is what makes the parent consistent with dist: a one-pass "write the parent
//   when you lower dist" races with a later, lower CAS from another thread. The first of those
//   threads to move flags[v] from 1 to 2 appends v to `improved`, so the list is unique.
//   Load balance: as in bfs.cu, one thread per frontier edge, the slot found by binary search in
//   the inclusive prefix sum of the frontier's degrees (the distributed multi-GPU BFS seed).
//   Queues: one atomic counter each, aggregated per warp (a ballot, one atomicAdd per warp, a
//   rank per lane), after the global frontier queue of Luo, Wong and Hwu, DAC 2010.
//
// Array invariants (n_local = dist's length; k = frontier's length)
//   indptr         int64[n_local + 1], non-decreasing; out-edges of local u are
//                  indices[indptr[u] : indptr[u + 1]] with weights[indptr[u] : indptr[u + 1]].
//   indices        Index[nnz] (int32 or int64): GLOBAL target ids. Duplicates allowed: the
//                  minimum keeps the lightest.
//   weights        Weight[nnz] (double or float: the graph's weight width). A float weight
//                  is widened to double before it is added: every sum is a double's.
//   frontier       int64[k]: distinct local ids; frontier_dist float64[k] their distances at the
//                  start of the round.
//   edge_end       int64[k]: inclusive prefix sum of the frontier's degrees; edge_end[k-1] = E.
//   dist           float64[n_local]: +inf = unreached; only ever lowered.
//   flags          int32[n_local], zero on entry to pass 1: 1 = improved in this call,
//                  2 = improved and already listed (pass 2).
//   parent         int64[n_local]: global ids, -1 = none; written only for improved vertices.
//                  Null: distances only (pass 2 then only lists the improved vertices).
//   improved       int64[capacity >= min(E, n_local)].
//   remote_targets int64, remote_dists float64, remote_parents int64: capacity >= E, touched
//                  only when remote != 0.
//   counters       uint64[2], zero on entry: [0] = improved length, [1] = remote length.
//
// Written for NVRTC (cupy.RawModule, -std=c++17): no standard headers; frontier.cuh holds the
// queue append and edge search shared with the other traversal kernels, atomics.cuh the
// double-precision atomic min.

#include "atomics.cuh"
#include "frontier.cuh"

// Pass 1: relax every frontier edge; flag the local targets whose distance this call lowered;
// append remote candidates.
template <typename Index, typename Weight>
__global__ void sssp_relax_edges(const long long* __restrict__ indptr,
                                 const Index* __restrict__ indices,
                                 const Weight* __restrict__ weights,
                                 long long offset,
                                 long long n_local,
                                 const long long* __restrict__ frontier,
                                 const double* __restrict__ frontier_dist,
                                 const long long* __restrict__ edge_end,
                                 long long k,
                                 double* __restrict__ dist,
                                 int* __restrict__ flags,
                                 long long* __restrict__ remote_targets,
                                 double* __restrict__ remote_dists,
                                 long long* __restrict__ remote_parents,
                                 unsigned long long* __restrict__ counters,
                                 int remote,
                                 double bound) {
    const long long n_edges = edge_end[k - 1];
    warp_uniform_loop(n_edges, [&](long long e) {
        bool to_remote = false;
        long long v = 0, u = 0;
        double cand = 0.0;
        if (e < n_edges) {
            const long long i = frontier_slot(edge_end, k, e);
            const long long j = indptr[frontier[i] + 1] - (edge_end[i] - e);
            u = frontier[i];
            v = static_cast<long long>(indices[j]);
            cand = frontier_dist[i] + weights[j];
            const long long local = v - offset;
            if (!(cand <= bound)) {
                // beyond the cutoff: dropped (pass 2 never matches it: dist <= bound or +inf)
            } else if (local >= 0 && local < n_local) {
                if (atomic_min_double(&dist[local], cand)) {
                    flags[local] = 1;  // every writer writes 1: a benign race
                }
            } else {
                to_remote = remote != 0;
            }
        }
        if (remote != 0) {  // uniform across the grid
            const unsigned long long slot = warp_append_slot(&counters[1], to_remote);
            if (to_remote) {
                remote_targets[slot] = v;
                remote_dists[slot] = cand;
                remote_parents[slot] = offset + u;
            }
        }
    });
}

// Pass 2: dist is final for this call. For each flagged target, the edges whose cand equals
// dist[v] write the parent (any of them may win); the first to move the flag 1 -> 2 lists v.
template <typename Index, typename Weight>
__global__ void sssp_settle_parents(const long long* __restrict__ indptr,
                                    const Index* __restrict__ indices,
                                    const Weight* __restrict__ weights,
                                    long long offset,
                                    long long n_local,
                                    const long long* __restrict__ frontier,
                                    const double* __restrict__ frontier_dist,
                                    const long long* __restrict__ edge_end,
                                    long long k,
                                    const double* __restrict__ dist,
                                    int* __restrict__ flags,
                                    long long* __restrict__ parent,
                                    long long* __restrict__ improved,
                                    unsigned long long* __restrict__ counters) {
    const long long n_edges = edge_end[k - 1];
    warp_uniform_loop(n_edges, [&](long long e) {
        bool listed = false;
        long long local = 0;
        if (e < n_edges) {
            const long long i = frontier_slot(edge_end, k, e);
            const long long j = indptr[frontier[i] + 1] - (edge_end[i] - e);
            local = static_cast<long long>(indices[j]) - offset;
            if (local >= 0 && local < n_local && flags[local] != 0 &&
                frontier_dist[i] + weights[j] == dist[local]) {
                if (parent != nullptr) parent[local] = offset + frontier[i];
                listed = atomicCAS(&flags[local], 1, 2) == 1;
            }
        }
        const unsigned long long slot = warp_append_slot(&counters[0], listed);
        if (listed) {
            improved[slot] = local;
        }
    });
}
