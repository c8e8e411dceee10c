"""Top-down BFS expansion on the GPU (``kernels/bfs.cu``)."""

from __future__ import annotations

import cupy

from gpipe.kernels import cuda

_SOURCE = "bfs.cu"
_ENTRY_POINTS = ("bfs_expand_edges",)


def bfs_expand(indptr, indices, offset, frontier, dist, parent, level, remote):
    """Expand the BFS frontier by one level, in place; see ARCHITECTURE.md, "Kernel contract".

    Parameters
    ----------
    indptr : cupy.ndarray of int64, shape (n_local + 1,)
        CSR row pointers of this owner's vertices.
    indices : cupy.ndarray of int32 or int64
        Global target id of each edge.
    offset : int
        Global id of local vertex 0.
    frontier : cupy.ndarray of int64
        Distinct local ids at distance ``level``.
    dist : cupy.ndarray of int32, shape (n_local,)
        BFS levels, -1 = unvisited; claimed targets get ``level + 1``.
    parent : cupy.ndarray of int64, shape (n_local,)
        Global parent ids, -1 = none; claimed targets get ``offset + u``.
    level : int
        Distance of the frontier.
    remote : bool
        Whether to list the edges whose targets lie outside this owner.

    Returns
    -------
    next_frontier, remote_targets, remote_parents : cupy.ndarray of int64
        Local ids claimed by this call (each once, in no particular order); and, when ``remote``,
        one ``(v, offset + u)`` pair per edge to a target outside
        ``[offset, offset + n_local)`` (raw, not deduplicated), else two empty arrays.

    Notes
    -----
    Edge-parallel, load-balanced by prefix sum + binary search (``kernels/bfs.cu``). Work is
    O(E log k) for E frontier edges and k frontier vertices. The call reads the two queue
    lengths back to the host once; with ``remote`` it also reads E first, to size the remote
    lists.
    """
    k = int(frontier.size)
    n_local = int(dist.size)
    if k == 0:
        return cuda.empty(), cuda.empty(), cuda.empty()
    frontier = cupy.ascontiguousarray(frontier)
    edge_end = cuda.edge_end(indptr, frontier)
    if remote:
        n_edges = int(edge_end[-1])  # one sync: the remote lists are sized by the edge count
        if n_edges == 0:
            return cuda.empty(), cuda.empty(), cuda.empty()
        remote_targets = cupy.empty(n_edges, dtype=cupy.int64)
        remote_parents = cupy.empty(n_edges, dtype=cupy.int64)
    else:
        n_edges = int(indices.size)  # an upper bound, for the grid only; the kernel reads E
        remote_targets = remote_parents = cuda.empty()
    next_frontier = cupy.empty(min(n_edges, n_local), dtype=cupy.int64)
    counters = cupy.zeros(2, dtype=cupy.uint64)
    cuda.function(_SOURCE, _ENTRY_POINTS, "bfs_expand_edges", indices)(
        cuda.grid(n_edges),
        (cuda.BLOCK,),
        (
            indptr, indices, cupy.int64(offset), cupy.int64(n_local), frontier, edge_end,
            cupy.int64(k), cupy.int32(level), dist, parent, next_frontier,
            remote_targets, remote_parents, counters, cupy.int32(bool(remote)),
        ),
    )
    n_next, n_remote = (int(c) for c in counters.get())
    return next_frontier[:n_next], remote_targets[:n_remote], remote_parents[:n_remote]


