// bfs.cu -- one level of top-down breadth-first search over one owner's CSR.
//
// What it computes
//   bfs_expand_edges<Index> expands the frontier (local vertices at distance `level`) by one level.
//   For every edge u->v with u in the frontier:
//     * v local (offset <= v < offset + n_local) and unvisited: v is claimed exactly once,
//       dist[v] = level + 1, parent[v] = offset + u, and v - offset is appended to next_frontier;
//     * v remote and `remote` != 0: (v, offset + u) is appended to the remote lists, raw
//       (one entry per edge, not deduplicated: the driver prunes before the exchange).
//   gpipe/engine/compute/gpu_bfs.py (bfs_expand) launches it; gpipe/engine/compute/cpu.py holds
//   its Numba twin;
//   tests/test_kernels_gpu.py checks whole traversals built from it against scipy.sparse.csgraph.
//
// Technique: edge-parallel expansion, load-balanced by prefix sum + binary search
//   A vertex-parallel expansion (one thread per frontier vertex) stalls a whole warp on one
//   high-degree vertex. Instead the launcher computes `edge_end`, the inclusive prefix sum of the
//   frontier's degrees (cupy.cumsum), and launches one thread per frontier EDGE (grid-stride).
//   Thread e finds its frontier slot i by binary search: the first i with edge_end[i] > e; its CSR
//   position is then indptr[u + 1] - (edge_end[i] - e). Every thread does the same O(log k) work
//   plus one edge, whatever the degree skew. (Load balance by prefix sum + binary search, as in
//   the distributed multi-GPU BFS of the seed papers.)
//   A target is claimed with atomicCAS on dist (-1 -> level + 1): exactly one thread wins, so the
//   next frontier holds each vertex once and the parent is the winner's u.
//   Appends go through one atomic counter per queue, aggregated per warp: a ballot counts the
//   lanes that append, one lane reserves that many slots, and each lane takes its rank in the
//   ballot. This is the global-queue half of the frontier queues of Luo, Wong and Hwu,
//   "An effective GPU implementation of breadth-first search", DAC 2010, with the warp in the
//   role of their warp-level queue.
//
// Array invariants (n_local = dist's length; k = frontier's length)
//   indptr         int64[n_local + 1], non-decreasing; the out-edges of local u are
//                  indices[indptr[u] : indptr[u + 1]].
//   indices        Index[nnz] (int32 or int64): GLOBAL target ids.
//   frontier       int64[k]: distinct local ids, each with dist == level.
//   edge_end       int64[k]: inclusive prefix sum of the frontier's degrees; edge_end[k-1] = E,
//                  the number of frontier edges (read here, so the launcher need not sync for it).
//   dist           int32[n_local]: -1 = unvisited, else the BFS level. Only -1 -> level + 1 changes.
//   parent         int64[n_local]: global id of the BFS parent, -1 = none; written once, by the
//                  thread that claimed the vertex. Null: distances only, no parent written.
//   next_frontier  int64[capacity >= min(E, n_local)]: receives the claimed local ids.
//   remote_targets, remote_parents  int64[capacity >= E], touched only when remote != 0.
//   counters       uint64[2], zero on entry: [0] = next_frontier length, [1] = remote length.
//
// Written for NVRTC (cupy.RawModule, -std=c++17): no standard headers; frontier.cuh holds the
// queue append and the edge search shared with the other traversal kernels.

#include "frontier.cuh"

template <typename Index>
__global__ void bfs_expand_edges(const long long* __restrict__ indptr,
                                 const Index* __restrict__ indices,
                                 long long offset,
                                 long long n_local,
                                 const long long* __restrict__ frontier,
                                 const long long* __restrict__ edge_end,
                                 long long k,
                                 int level,
                                 int* __restrict__ dist,
                                 long long* __restrict__ parent,
                                 long long* __restrict__ next_frontier,
                                 long long* __restrict__ remote_targets,
                                 long long* __restrict__ remote_parents,
                                 unsigned long long* __restrict__ counters,
                                 int remote) {
    const long long n_edges = edge_end[k - 1];
    warp_uniform_loop(n_edges, [&](long long e) {
        bool claimed = false;
        bool to_remote = false;
        long long v = 0, u = 0;
        if (e < n_edges) {
            v = frontier_target(indptr, indices, frontier, edge_end, k, e, &u);
            const long long local = v - offset;
            if (local >= 0 && local < n_local) {
                // Plain read first: most visited targets are rejected without an atomic.
                if (dist[local] == -1 && atomicCAS(&dist[local], -1, level + 1) == -1) {
                    if (parent != nullptr) parent[local] = offset + u;
                    claimed = true;
                }
            } else {
                to_remote = remote != 0;
            }
        }
        const unsigned long long slot = warp_append_slot(&counters[0], claimed);
        if (claimed) {
            next_frontier[slot] = v - offset;
        }
        if (remote != 0) {  // uniform across the grid
            const unsigned long long rslot = warp_append_slot(&counters[1], to_remote);
            if (to_remote) {
                remote_targets[rslot] = v;
                remote_parents[rslot] = offset + u;
            }
        }
    });
}
