"""Bellman-Ford relaxation rounds on the GPU (``kernels/sssp.cu``)."""

from __future__ import annotations

import cupy

from gpipe.kernels import cuda

_SOURCE = "sssp.cu"
_ENTRY_POINTS = ("sssp_relax_edges", "sssp_settle_parents")


def sssp_relax(indptr, indices, weights, offset, frontier, frontier_dist, dist, parent, remote):
    """Relax every out-edge of the frontier once, in place; see ARCHITECTURE.md, "Kernel contract".

    Parameters
    ----------
    indptr : cupy.ndarray of int64, shape (n_local + 1,)
        CSR row pointers of this owner's vertices.
    indices : cupy.ndarray of int32 or int64
        Global target id of each edge.
    weights : cupy.ndarray of float64
        Weight of each edge.
    offset : int
        Global id of local vertex 0.
    frontier : cupy.ndarray of int64
        Distinct local ids to relax from.
    frontier_dist : cupy.ndarray of float64
        Distance of each frontier vertex at the start of the round (the snapshot relaxed from).
    dist : cupy.ndarray of float64, shape (n_local,)
        Tentative distances, +inf = unreached; only ever lowered.
    parent : cupy.ndarray of int64, shape (n_local,)
        Global parent ids, -1 = none; changed only where ``dist`` strictly decreased.
    remote : bool
        Whether to list the candidates for targets outside this owner.

    Returns
    -------
    improved, remote_targets, remote_dists, remote_parents : cupy.ndarray
        Local ids (int64, unique, no particular order) whose distance strictly decreased; and,
        when ``remote``, one ``(v, cand, offset + u)`` triple per edge to a target outside
        ``[offset, offset + n_local)`` (int64, float64, int64; raw), else empty arrays.

    Notes
    -----
    Two edge-parallel passes (``kernels/sssp.cu``): an atomic-min relaxation that flags the
    lowered targets, then a parent pass over the same edges that keeps, for each flagged v, an
    edge whose candidate equals the final ``dist[v]`` exactly. Each call allocates an int32 flag
    per local vertex. The call reads the two queue lengths back once; with ``remote`` it also
    reads the frontier's edge count first, to size the remote lists.
    """
    k = int(frontier.size)
    n_local = int(dist.size)
    empty = (cuda.empty(), cuda.empty(), cuda.empty(cupy.float64), cuda.empty())
    if k == 0:
        return empty
    frontier = cupy.ascontiguousarray(frontier)
    frontier_dist = cupy.ascontiguousarray(frontier_dist)
    edge_end = cuda.edge_end(indptr, frontier)
    if remote:
        n_edges = int(edge_end[-1])
        if n_edges == 0:
            return empty
        remote_targets = cupy.empty(n_edges, dtype=cupy.int64)
        remote_dists = cupy.empty(n_edges, dtype=cupy.float64)
        remote_parents = cupy.empty(n_edges, dtype=cupy.int64)
    else:
        n_edges = int(indices.size)
        remote_targets, remote_dists, remote_parents = empty[1:]
    improved = cupy.empty(min(n_edges, n_local), dtype=cupy.int64)
    flags = cupy.zeros(n_local, dtype=cupy.int32)
    counters = cupy.zeros(2, dtype=cupy.uint64)
    grid = cuda.grid(n_edges)
    edges = (
        indptr, indices, weights, cupy.int64(offset), cupy.int64(n_local), frontier,
        frontier_dist, edge_end, cupy.int64(k), dist, flags,
    )
    cuda.function(_SOURCE, _ENTRY_POINTS, "sssp_relax_edges", indices)(
        grid, (cuda.BLOCK,),
        edges + (remote_targets, remote_dists, remote_parents, counters, cupy.int32(bool(remote))),
    )
    cuda.function(_SOURCE, _ENTRY_POINTS, "sssp_settle_parents", indices)(
        grid, (cuda.BLOCK,), edges + (parent, improved, counters),
    )
    n_improved, n_remote = (int(c) for c in counters.get())
    return (
        improved[:n_improved],
        remote_targets[:n_remote],
        remote_dists[:n_remote],
        remote_parents[:n_remote],
    )
