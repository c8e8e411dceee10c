"""BFS on the GPU: one top-down level (``kernels/bfs.cu``) and a whole one-owner search
(``kernels/bfs_persistent.cu``)."""

from __future__ import annotations

import functools

import cupy

from gpipe.engine.compute import cuda, gpu_arrays
from gpipe.engine.compute.directions import ALPHA, BETA, GAMMA

_SOURCE = "bfs.cu"


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
    parent : cupy.ndarray of int64, shape (n_local,), or None
        Global parent ids, -1 = none; claimed targets get ``offset + u``. None or empty: no
        parent is written.
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
    edge_end = gpu_arrays.edge_end(indptr, frontier)
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
    cuda.function(_SOURCE, "bfs_expand_edges", indices)(
        cuda.grid(n_edges),
        (cuda.BLOCK,),
        (
            indptr, indices, cupy.int64(offset), cupy.int64(n_local), frontier, edge_end,
            cupy.int64(k), cupy.int32(level), dist, _or_null(parent), next_frontier,
            remote_targets, remote_parents, counters, cupy.int32(bool(remote)),
        ),
    )
    n_next, n_remote = (int(c) for c in counters.get())
    return next_frontier[:n_next], remote_targets[:n_remote], remote_parents[:n_remote]


def _or_null(array):
    """``array``, or a null pointer (8 bytes by value) for None or an empty array."""
    return cupy.uint64(0) if array is None or array.size == 0 else array


# ---------------------------------------------------------------------------------------------
# Whole BFS of a one-owner graph: one cooperative kernel (kernels/bfs_persistent.cu)
# ---------------------------------------------------------------------------------------------

_PERSISTENT_SOURCE = "bfs_persistent.cu"
_PERSISTENT_KERNEL = "bfs_persistent"
_PERSISTENT_BLOCK = 512  # kBlock in bfs_persistent.cu
_TRACE_COLUMNS = 5


@functools.lru_cache(maxsize=None)
def _persistent_launch(dtype, device_id: int):
    # device_id is also the cache key: the kernel is loaded for the current device
    kernel = cuda.function(_PERSISTENT_SOURCE, _PERSISTENT_KERNEL, cupy.empty(0, dtype=dtype))
    sms = cupy.cuda.Device(device_id).attributes["MultiProcessorCount"]
    try:
        per_sm = cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(
            kernel.ptr, _PERSISTENT_BLOCK, 0)
    except Exception:  # no occupancy API in this CuPy: the launch bounds promise two per SM
        per_sm = 2
    return kernel, max(1, int(per_sm)) * sms


def bfs(indptr, indices, sources, depth_limit=-1, *, symmetric=False, alpha=ALPHA, beta=BETA,
        gamma=GAMMA, trace=None, target=-1, parents=True, stats=None):
    """Breadth-first search of a one-owner CSR graph on the GPU, in one kernel launch.

    Distances and a BFS tree from all ``sources`` at once. The whole search runs inside one
    persistent cooperative kernel (``kernels/bfs_persistent.cu``): levels are separated by grid
    syncs, not by kernel launches and host reads. Top-down steps are exactly load-balanced
    over frontier edges (hubs are spread over the whole GPU). On symmetric graphs the search is
    direction-optimizing [1]_: it switches to bottom-up steps when the frontier's edges exceed
    ``1/alpha`` of the unexplored edges (and ``n/gamma``), and back once the frontier shrinks
    below ``n/beta`` vertices.

    Parameters
    ----------
    indptr : cupy.ndarray of int64, shape (n + 1,)
        CSR row pointers (offset 0: vertex ids are ``0 .. n-1``); out-edges of ``u`` are
        ``indices[indptr[u]:indptr[u + 1]]``.
    indices : cupy.ndarray of int32 or int64, shape (nnz,)
        Target of each edge, in ``0 .. n-1``. Duplicate edges are harmless.
    sources : array_like of int
        Start vertices (any order, repeats allowed), in ``0 .. n-1``; all get distance 0.
    depth_limit : int or None, optional (default=-1)
        Reach only vertices at most this many edges from a source; -1 or None: no limit.
    symmetric : bool, optional (default=False)
        True if the graph is undirected, stored in both directions (CSR == CSC): this allows
        bottom-up steps. With False every step is top-down (a directed graph's bottom-up step
        would need its in-edges).
    alpha, beta, gamma : float, optional (defaults 15, 18 and 8; alpha and beta are GAPBS's)
        Direction switches: top-down -> bottom-up when ``m_f * alpha > m_u`` and
        ``m_f * gamma > n`` (``m_f``: out-edges of the frontier, ``m_u``: out-edges of unvisited
        vertices; the second rule, ours, keeps small frontiers top-down, since a bottom-up step
        reads all ``n`` vertices); bottom-up -> top-down when the frontier shrank and
        ``n_f * beta <= n``. ``alpha=0`` keeps every step top-down; ``alpha=beta=gamma=inf``
        makes every step bottom-up (tests use both).
    trace : cupy.ndarray of int64, shape (rows, 5), optional
        Diagnostics: when given, row ``L`` receives ``(L, bottom_up, n_f, m_f, t_ns)`` for each
        level ``L`` (``t_ns``: the GPU's global timer at the level's start) and the row after the
        last level ``(levels, -1, 0, 0, t_ns)`` at the end of the search. Rows past the levels
        are left untouched.
    target : int, default -1
        Stop after the level that reaches this vertex (checked on the device at the start of
        each level: no host read). Its distance and parent chain are then final; farther
        vertices may be unreached. -1: search everything.
    parents : bool, default True
        False: distances only; no parent array (with int32 ``indices`` a 4-byte-per-vertex
        queue of its own instead of the 8-byte parent array that holds it otherwise).
    stats : dict, optional
        Receives ``levels``, the levels expanded (one synchronization).

    Returns
    -------
    dist : cupy.ndarray of int32, shape (n,)
        Hops from the nearest source; -1 where unreached.
    parent : cupy.ndarray of int64, shape (n,), or None
        The BFS tree: ``parent[v]`` is a vertex ``u`` with an edge ``u -> v`` and
        ``dist[u] + 1 == dist[v]``; -1 for the sources and unreached vertices. None when
        ``parents`` is False.

    Raises
    ------
    ValueError
        If ``indptr`` or ``indices`` have the wrong dtype.

    Examples
    --------
    >>> import cupy
    >>> indptr = cupy.array([0, 1, 3, 4], dtype=cupy.int64)     # path 0 - 1 - 2, both ways
    >>> indices = cupy.array([1, 0, 2, 1], dtype=cupy.int32)
    >>> dist, parent = bfs(indptr, indices, cupy.array([0]), symmetric=True)
    >>> dist.tolist(), parent.tolist()
    ([0, 1, 2], [-1, 0, 1])

    Notes
    -----
    Work is O(n + m_visited) for top-down steps and, for bottom-up steps, O(n) plus the
    neighbours scanned until each vertex's first frontier neighbour. Working memory beyond the
    CSR and the two outputs is about n/4 + n/32 bytes (two frontier bitmaps and tile offsets):
    with int32 ``indices`` the frontier queue is kept inside ``parent`` (see the kernel's
    header); with int64 ``indices`` it takes another 8 bytes per vertex. No buffer grows with
    the edges of a level. The call does not synchronize with the host.

    The slow, obviously-correct twin is the level loop over :func:`bfs_expand` in
    ``gpipe.engine.traverse.bfs_arrays``; ``tests/test_kernels_gpu.py`` checks both against SciPy.

    References
    ----------
    .. [1] S. Beamer, K. Asanovic, D. Patterson, "Direction-Optimizing Breadth-First Search",
       SC 2012 (the GAPBS heuristic and its alpha, beta).
    .. [2] D. Merrill, M. Garland, A. Grimshaw, "Scalable GPU Graph Traversal", PPoPP 2012.
    .. [3] L. Luo, M. Wong, W. Hwu, "An Effective GPU Implementation of Breadth-First Search",
       DAC 2010.
    """
    if indptr.dtype != cupy.int64 or indices.dtype not in cuda.INDEX_TYPES:
        raise ValueError(f"bfs needs int64 indptr and int32/int64 indices, got {indptr.dtype} "
                         f"and {indices.dtype}")
    n = int(indptr.size) - 1
    nnz = int(indices.size)
    sources = cupy.ascontiguousarray(cupy.asarray(sources, dtype=cupy.int64).ravel())
    depth_limit = -1 if depth_limit is None else int(depth_limit)
    dist = cupy.empty(max(n, 0), dtype=cupy.int32)
    parent = cupy.empty(max(n, 0), dtype=cupy.int64) if parents else None
    if n <= 0:
        return dist, parent
    e_bits = 64 - n.bit_length()
    if nnz.bit_length() > min(e_bits, 40):  # the packed frontier counters cannot hold the sums
        return bfs_level_loop(indptr, indices, sources, depth_limit, target, parents, stats)

    if not parents:  # no parent words to borrow: a queue of the index type
        parent_lo, queue, stride = cupy.uint64(0), cupy.empty(n, dtype=indices.dtype), 1
    elif indices.dtype == cupy.int32:  # parents fit in the low words: the queue in the high words
        words = parent.view(cupy.int32)
        parent_lo, queue, stride = words, words[1:], 2
    else:
        parent_lo, queue, stride = parent, cupy.empty(n, dtype=cupy.int64), 1
    n_words = -(-n // 32)
    n_tiles = -(-n // _PERSISTENT_BLOCK)
    bitmaps = cupy.empty(2 * n_words if symmetric else 1, dtype=cupy.uint32)
    tile_offsets = cupy.empty(2 * (n_tiles + 1), dtype=cupy.int64)
    counters = cupy.zeros(4, dtype=cupy.uint64)
    if trace is not None:
        if (trace.dtype != cupy.int64 or trace.ndim != 2 or trace.shape[1] != _TRACE_COLUMNS
                or not trace.flags.c_contiguous):
            raise ValueError(f"trace must be a C-contiguous int64 array of shape (rows, {_TRACE_COLUMNS})")
        trace_arg, trace_rows = trace, int(trace.shape[0])
    else:
        trace_arg, trace_rows = cupy.uint64(0), 0  # a null pointer (8 bytes, by value)

    device_id = cupy.cuda.runtime.getDevice()
    kernel, blocks = _persistent_launch(indices.dtype, device_id)
    kernel(
        (blocks,), (_PERSISTENT_BLOCK,),
        (
            indptr, indices, cupy.int64(n), sources, cupy.int64(sources.size),
            cupy.int32(depth_limit), cupy.int32(bool(symmetric)), cupy.float64(alpha),
            cupy.float64(beta), cupy.float64(gamma), dist, _or_null(parent), parent_lo,
            cupy.int64(stride), queue, cupy.int64(stride), bitmaps, tile_offsets, counters,
            cupy.int32(e_bits), trace_arg, cupy.int32(trace_rows), cupy.int64(target),
        ),
        enable_cooperative_groups=True,
    )
    if stats is not None:
        stats["levels"] = int(counters[3].get())
    return dist, parent


def bfs_level_loop(indptr, indices, sources, depth_limit, target=-1, parents=True, stats=None):
    """BFS by a host loop over :func:`bfs_expand` (one launch and one host read per level)."""
    n = int(indptr.size) - 1
    dist = gpu_arrays.full(n, -1, cupy.int32)
    parent = gpu_arrays.full(n, -1, cupy.int64) if parents else None
    frontier = gpu_arrays.unique(sources)
    gpu_arrays.scatter(dist, frontier, 0)
    level = 0
    while frontier.size and (depth_limit < 0 or level < depth_limit):
        if target >= 0 and int(dist[target].get()) >= 0:
            break
        frontier, _, _ = bfs_expand(indptr, indices, 0, frontier, dist, parent, level, False)
        level += 1
    if stats is not None:
        stats["levels"] = level
    return dist, parent
