"""Batch kernels for the CPU (Numba): one traversal per source of a batch, in one call.

The contract (names, shapes, promises) is in gpipe/engine/compute/__init__.py; gpipe/engine/compute/gpu.py
keeps the same names. Re-exported from gpipe/engine/compute/cpu.py.

What each kernel computes
    bfs_batch   Bit-parallel multi-source BFS (MS-BFS [1]): up to 64 BFS at once. Every vertex
                holds three int64 bit sets over the batch's sources: ``seen`` (sources that
                reached it), ``frontier`` (sources that reached it at this level) and ``next``.
                One scan of an edge u -> v serves every source at once: next[v] |= frontier[u].
                A level then turns ``next & ~seen`` into the new frontier and writes one
                distance per new bit. Direction-optimizing [2]: top-down (push, an atomic OR
                per edge into next[v]) while the frontier's out-edges are few, bottom-up (pull:
                every vertex not yet seen by all sources ORs its in-neighbours' frontier sets,
                stopping once every missing source is found; race-free, each thread writes
                only its own vertices) while they are many (GAPBS's alpha).
    bfs_batch_parents
                Parents from the distance table (symmetric CSR: each vertex pulls from its own
                row until every source has one): for each edge u -> v and each source i with
                dist[i, u] + 1 == dist[i, v], u is a parent of v for i. One scan of the edges
                for all k sources, the table transposed to vertex-major so each edge compares
                two contiguous rows. Threads split the edges by source vertex u and may write
                the same parent[v, i] with different valid u: any one of them is a right answer
                (an aligned 8-byte store is atomic).
    sssp_batch  Non-negative weights: the one-owner delta-stepping (gpipe/engine/compute/cpu_delta.py)
                once per source, every thread on each. Measured on kron20 with 2 threads, that
                beat one serial Dijkstra per thread with several sources resident at once
                (a binary heap with lazy deletion grows to the edges, and SciPy's Fibonacci
                heap was faster than it). ``max_distance`` stops each traversal at the
                first bucket beyond it.
                ``negative_weights``: frontier Bellman-Ford per source [3] (a queue of the
                vertices improved in the previous round), the sources spread over the threads
                (numba prange); more than n - 1 rounds means a negative cycle is reachable
                from that source. ``max_distance`` drops every candidate above it (Dijkstra's
                cutoff: the search never extends a path beyond it, so a kept vertex's parent
                is kept); a negative cycle only this bounded search reaches is raised.

Invariants of the arrays
    - Bit i of a vertex's set stands for sources[i]; the batch is at most 64 wide (one int64
      word; BFS_BATCH_WIDTH). ``full`` has the low k bits set.
    - BFS: ``dist`` int32[k, n], -1 = unreached; a vertex's distance for source i is written
      once, at the level bit i first enters its ``seen`` set.
    - SSSP: ``dist`` float64[k, n], +inf = unreached; ``parent`` int64[k, n], -1 = none;
      parent changes only on strict improvement, from the edge that gave the distance.

References
    [1] M. Then, M. Kaufmann, F. Chirigati, T.-A. Hoang-Vu, K. Pham, A. Kemper, T. Neumann,
        H. T. Vo, "The More the Merrier: Efficient Multi-Source Graph Traversal", VLDB 2015.
    [2] S. Beamer, K. Asanovic, D. Patterson, "Direction-Optimizing Breadth-First Search", SC 2012.
    [3] R. Bellman, "On a routing problem", Quarterly of Applied Mathematics 16, 1958.
"""

import numba
import numpy as np

from gpipe.engine.compute import atomics
from gpipe.engine.compute.cpu_delta import delta_stepping
from gpipe.engine.compute.cpu_jit import BOOL, FLOAT64, INT64, INT64S, each_index, each_index_and_weight, kernel
from gpipe.engine.compute.directions import ALPHA
from gpipe.errors import NegativeCycleError
from numba import types

BFS_BATCH_WIDTH = 64  # bits of one int64 word per vertex
SSSP_BATCH_WIDTH = 32  # sources per sssp_batch call from the driver: k*n*16 bytes resident

INT32S_2D = types.int32[:, ::1]
INT64S_2D = types.int64[:, ::1]
FLOAT64S_2D = types.float64[:, ::1]

_kernel = numba.njit(cache=True, nogil=True)
_inline = numba.njit(cache=True, nogil=True, inline="always")

# De Bruijn sequence for the index of a word's lowest set bit (Leiserson, Prokop, Randall 1998).
_DEBRUIJN = np.int64(0x03F79D71B4CB0A89)
_DEBRUIJN_INDEX = np.array([
    0, 1, 48, 2, 57, 49, 28, 3, 61, 58, 50, 42, 38, 29, 17, 4, 62, 55, 59, 36, 53, 51, 43, 22,
    45, 39, 33, 30, 24, 18, 12, 5, 63, 47, 56, 27, 60, 41, 37, 16, 54, 35, 52, 21, 44, 32, 23,
    11, 46, 26, 40, 15, 34, 20, 31, 10, 25, 14, 19, 9, 13, 8, 7, 6], dtype=np.int64)


@_inline
def _lowest_bit_index(bit, table):
    """Index of the single set bit of ``bit`` (a power of two, possibly the sign bit)."""
    return table[((bit * _DEBRUIJN) >> 58) & 63]


@_inline
def _write_level(dist, new, v, level, table):
    """``dist[i, v] = level`` for each source bit i set in ``new``."""
    while new != 0:
        bit = new & -new
        dist[_lowest_bit_index(bit, table), v] = level
        new ^= bit


@_inline
def _reach(indptr, seen, dist, new, v, level, table):
    """The sources whose bits are set in ``new`` reach v at ``level``: they join ``seen[v]`` and
    their distances are written. Returns v's out-degree (its share of the next frontier's edges)."""
    seen[v] |= new
    _write_level(dist, new, v, level, table)
    return indptr[v + 1] - indptr[v]


@kernel(*each_index(lambda indices: (INT64S, indices, INT64S, INT64, BOOL, INT64S, indices,
                                      INT32S_2D, FLOAT64)), parallel=True)
def _ms_bfs(indptr, indices, sources, depth_limit, bottom_up, in_indptr, in_indices, dist, alpha):
    """Fill ``dist`` (k x n, any values on entry) with the hops from each of ``sources``."""
    n = indptr.shape[0] - 1
    k = sources.shape[0]
    for i in numba.prange(k):  # rows in parallel: faster than NumPy's one-thread fill
        dist[i, :] = -1
    m = indices.shape[0]
    full = np.int64(-1) if k == 64 else (np.int64(1) << k) - 1
    table = _DEBRUIJN_INDEX
    seen = np.zeros(n, dtype=np.int64)
    frontier = np.zeros(n, dtype=np.int64)
    nxt = np.zeros(n, dtype=np.int64)
    frontier_edges = 0
    for i in range(k):
        s = sources[i]
        bit = np.int64(1) << i
        seen[s] |= bit
        frontier[s] |= bit
        dist[i, s] = 0
    for i in range(k):
        s = sources[i]
        frontier_edges += indptr[s + 1] - indptr[s]
    level = 0
    active = k
    next_is_clear = True  # nxt holds no bits (a top-down step ORs into it)
    while active > 0 and (depth_limit < 0 or level < depth_limit):
        level += 1
        active = 0
        frontier_edges_next = 0
        if bottom_up and frontier_edges * alpha > m:
            # Pull: each thread writes only its own vertices (nxt, seen, dist), so the new
            # frontier is final here, with no second pass; nxt becomes the frontier.
            for v in numba.prange(n):
                missing = full & ~seen[v]
                new = np.int64(0)
                if missing != 0:
                    found = np.int64(0)
                    for e in range(in_indptr[v], in_indptr[v + 1]):
                        found |= frontier[in_indices[e]]
                        if (found & missing) == missing:
                            break
                    new = found & missing
                nxt[v] = new
                if new != 0:
                    active += 1
                    frontier_edges_next += _reach(indptr, seen, dist, new, v, level, table)
            frontier, nxt = nxt, frontier
            next_is_clear = False
        else:
            if not next_is_clear:
                for v in numba.prange(n):
                    nxt[v] = 0
            # Push: an atomic OR per edge into the target's next set, then one pass that
            # keeps the bits not seen before.
            for u in numba.prange(n):
                bits = frontier[u]
                if bits != 0:
                    for e in range(indptr[u], indptr[u + 1]):
                        v = indices[e]
                        new = bits & ~seen[v]
                        if new != 0 and (nxt[v] & new) != new:
                            atomics.fetch_or(nxt, v, new)
            for v in numba.prange(n):
                new = nxt[v] & ~seen[v]
                nxt[v] = 0
                frontier[v] = new
                if new != 0:
                    active += 1
                    frontier_edges_next += _reach(indptr, seen, dist, new, v, level, table)
            next_is_clear = True
        frontier_edges = frontier_edges_next


@kernel(*each_index(lambda indices: (INT64S, indices, INT32S_2D, INT64S_2D)), parallel=True)
def _parents_from_dist(indptr, indices, dist_by_vertex, parent_by_vertex):
    """parent_by_vertex[v, i] = some u with u -> v and dist[u, i] + 1 == dist[v, i] (vertex-major)."""
    n = indptr.shape[0] - 1
    k = dist_by_vertex.shape[1]
    for u in numba.prange(n):
        for e in range(indptr[u], indptr[u + 1]):
            v = indices[e]
            for i in range(k):
                du = dist_by_vertex[u, i]
                if du >= 0 and dist_by_vertex[v, i] == du + 1:
                    parent_by_vertex[v, i] = u


@kernel(*each_index(lambda indices: (INT64S, indices, INT32S_2D, INT64S_2D)), parallel=True)
def _parents_pulled(indptr, indices, dist_by_vertex, parent_by_vertex):
    """As :func:`_parents_from_dist` where each row holds the vertex's in-edges (a symmetric
    CSR): each vertex scans its own row and stops once every source that reached it has a
    parent, so a hub is done after a few neighbours instead of all of them."""
    n = indptr.shape[0] - 1
    k = dist_by_vertex.shape[1]
    for v in numba.prange(n):
        missing = 0
        for i in range(k):
            if dist_by_vertex[v, i] > 0:
                missing += 1
        e = indptr[v]
        while missing > 0 and e < indptr[v + 1]:
            u = indices[e]
            for i in range(k):
                dv = dist_by_vertex[v, i]
                if dv > 0 and parent_by_vertex[v, i] < 0 and dist_by_vertex[u, i] == dv - 1:
                    parent_by_vertex[v, i] = u
                    missing -= 1
            e += 1


@_kernel
def _bellman_ford_one(indptr, indices, weights, source, max_distance, dist, parent):
    """Frontier Bellman-Ford from ``source``, candidates above ``max_distance`` dropped (the
    search never goes beyond the cutoff); False when a negative cycle is reachable by it."""
    n = dist.shape[0]
    queued = np.zeros(n, dtype=np.bool_)
    frontier = np.empty(n, dtype=np.int64)
    following = np.empty(n, dtype=np.int64)
    dist[source] = 0.0
    frontier[0] = source
    size = 1
    rounds = 0
    while size > 0:
        rounds += 1
        if rounds > n:
            return False
        n_next = 0
        for j in range(size):
            queued[frontier[j]] = False
        for j in range(size):
            u = frontier[j]
            du = dist[u]
            for e in range(indptr[u], indptr[u + 1]):
                v = np.int64(indices[e])
                cand = du + weights[e]
                if cand <= max_distance and cand < dist[v]:
                    dist[v] = cand
                    parent[v] = u
                    if not queued[v]:
                        queued[v] = True
                        following[n_next] = v
                        n_next += 1
        frontier, following = following, frontier
        size = n_next
    return True


@kernel(*each_index_and_weight(lambda indices, weights: (INT64S, indices, weights, INT64S, FLOAT64,
                                                         FLOAT64S_2D, INT64S_2D, types.boolean[::1])),
        parallel=True)
def _bellman_ford_sources(indptr, indices, weights, sources, max_distance, dist, parent, ok):
    """One Bellman-Ford per source, the sources spread over the threads; ok[i] False: a
    negative cycle is reachable from sources[i]."""
    for i in numba.prange(sources.shape[0]):
        ok[i] = _bellman_ford_one(indptr, indices, weights, sources[i], max_distance, dist[i], parent[i])


@kernel((INT32S_2D, INT64S, INT64S_2D, types.int32), (FLOAT64S_2D, INT64S, INT64S_2D, FLOAT64),
        parallel=True)
def _reached_rows(dist, sources, parent, unreached):
    """The long-form rows of a ``k x n`` table: (source, vertex, distance[, parent]) for every
    entry other than ``unreached``, by source then vertex; ``parent`` (k x n) may be 0 x 0."""
    k, n = dist.shape
    counts = np.zeros(k + 1, dtype=np.int64)
    for i in numba.prange(k):
        c = 0
        for v in range(n):
            if dist[i, v] != unreached:
                c += 1
        counts[i + 1] = c
    for i in range(k):
        counts[i + 1] += counts[i]
    total = counts[k]
    source = np.empty(total, dtype=np.int64)
    vertex = np.empty(total, dtype=np.int64)
    distance = np.empty(total, dtype=dist.dtype)
    with_parent = parent.shape[0] == k and k > 0
    parents = np.empty(total if with_parent else 0, dtype=np.int64)
    for i in numba.prange(k):
        at = counts[i]
        s = sources[i]
        for v in range(n):
            d = dist[i, v]
            if d != unreached:
                source[at] = s
                vertex[at] = v
                distance[at] = d
                if with_parent:
                    parents[at] = parent[i, v]
                at += 1
    return source, vertex, distance, parents


def reached_rows(dist, sources, parent=None):
    """Long-form rows of a batch's ``k x n`` table (host arrays): ``(source, vertex, distance,
    parent)`` for every reached entry (BFS: dist >= 0, int32; SSSP: finite, float64), by source
    then vertex; ``parent`` is empty when not given. Not part of the contract: the CPU's fast
    road to a batch's rows (the GPU's is CuPy's ``nonzero``)."""
    unreached = np.int32(-1) if dist.dtype == np.int32 else np.float64(np.inf)
    table = parent if parent is not None else np.empty((0, 0), dtype=np.int64)
    return _reached_rows(dist, np.ascontiguousarray(sources, dtype=np.int64), table, unreached)


# ---------------------------------------------------------------------------------------------
# Contract
# ---------------------------------------------------------------------------------------------


def bfs_batch(indptr, indices, sources, depth_limit, *, symmetric, in_indptr=None, in_indices=None,
              alpha=ALPHA):
    """Hop distances from each of up to 64 sources, by bit-parallel multi-source BFS [1].

    Parameters
    ----------
    indptr : int64[n + 1]
    indices : int32 or int64[nnz]
    sources : int64[k]
        Distinct vertex ids, k <= BFS_BATCH_WIDTH.
    depth_limit : int
        Reach only vertices at most this many edges away; -1 means no limit.
    symmetric : bool
        The CSR is also the CSR of the in-edges (undirected, one owner): bottom-up steps read it.
    in_indptr, in_indices : optional
        The in-edges of a directed graph, for bottom-up steps; without them (and not
        symmetric) the search is top-down only.

    Returns
    -------
    dist : int32[k, n]
        ``dist[i, v]``: edges on a shortest path from ``sources[i]`` to ``v``; -1 = not reached.

    Raises
    ------
    ValueError
        More than BFS_BATCH_WIDTH sources.

    Examples
    --------
    The path 0 -> 1 -> 2, from 0 and from 1:

    >>> bfs_batch(np.array([0, 1, 2, 2]), np.array([1, 2], dtype=np.int32), np.array([0, 1]), -1,
    ...           symmetric=False)
    array([[ 0,  1,  2],
           [-1,  0,  1]], dtype=int32)
    """
    sources = np.ascontiguousarray(sources, dtype=np.int64)
    k = sources.shape[0]
    if k > BFS_BATCH_WIDTH:
        raise ValueError(f"bfs_batch serves at most {BFS_BATCH_WIDTH} sources, not {k}")
    n = indptr.shape[0] - 1
    if k == 0:
        return np.full((k, n), -1, dtype=np.int32)
    dist = np.empty((k, n), dtype=np.int32)  # _ms_bfs fills it
    if symmetric and in_indptr is None:
        in_indptr, in_indices = indptr, indices
    bottom_up = in_indptr is not None and in_indices is not None
    if not bottom_up:
        in_indptr, in_indices = indptr, indices
    _ms_bfs(indptr, indices, sources, np.int64(depth_limit), bottom_up, in_indptr, in_indices, dist,
            float(alpha))
    return dist


def bfs_batch_parents(indptr, indices, dist, sources, *, symmetric=False):
    """A BFS parent of every reached vertex, for each source, from the distance table.

    Parameters
    ----------
    indptr, indices
        The CSR ``dist`` was computed on.
    dist : int32[k, n]
        As returned by :func:`bfs_batch` for ``sources``.
    sources : int64[k]
    symmetric : bool
        Each row also holds the vertex's in-edges (an undirected graph): each vertex then scans
        its own row, stopping once every source has a parent for it, instead of one scan of
        every edge for every source.

    Returns
    -------
    parent : int64[k, n]
        For each source i and reached non-source v, some u with an edge u -> v and
        ``dist[i, u] + 1 == dist[i, v]``; -1 for sources and unreached vertices.

    Examples
    --------
    >>> indptr, indices = np.array([0, 1, 2, 2]), np.array([1, 2], dtype=np.int32)
    >>> dist = bfs_batch(indptr, indices, np.array([0]), -1, symmetric=False)
    >>> bfs_batch_parents(indptr, indices, dist, np.array([0]))
    array([[-1,  0,  1]])
    """
    k, n = dist.shape
    by_vertex = np.ascontiguousarray(dist.T)
    parent_by_vertex = np.full((n, k), -1, dtype=np.int64)
    if k and n:
        if symmetric:
            _parents_pulled(indptr, indices, by_vertex, parent_by_vertex)
        else:
            _parents_from_dist(indptr, indices, by_vertex, parent_by_vertex)
    return np.ascontiguousarray(parent_by_vertex.T)


def sssp_batch(indptr, indices, weights, sources, *, symmetric, negative_weights=False,
               max_distance=None):
    """Shortest paths by weight from each of ``sources``, several traversals at once.

    Parameters
    ----------
    indptr, indices
        One owner's CSR.
    weights : float64[nnz] or float32[nnz] (sums in float64)
        Finite; non-negative unless ``negative_weights``.
    sources : int64[k]
        Distinct vertex ids.
    symmetric : bool
        Unused on the CPU (part of the contract).
    negative_weights : bool
        Some weight is negative: Bellman-Ford per source instead of Dijkstra.
    max_distance : float or None
        Dijkstra's cutoff: a candidate distance above it is never accepted, so farther
        vertices are unreached (with negative weights also those whose short paths climb
        above it on the way) and every reached vertex's parent is reached. With negative
        weights only a negative cycle this bounded search reaches is raised.

    Returns
    -------
    dist : float64[k, n]
        +inf = not reached.
    parent : int64[k, n]
        ``dist[i, parent] + w(parent -> v) == dist[i, v]`` along an existing edge; -1 for sources
        and unreached vertices.

    Raises
    ------
    NegativeCycleError
        With ``negative_weights``: a negative cycle is reachable from ``sources[i]``; the
        error's ``source_index`` is i.

    Examples
    --------
    >>> indptr, indices = np.array([0, 2, 2, 3]), np.array([1, 2, 1], dtype=np.int32)
    >>> dist, parent = sssp_batch(indptr, indices, np.array([5.0, 1.0, 2.0]), np.array([0, 2]),
    ...                           symmetric=False)
    >>> dist
    array([[ 0.,  3.,  1.],
           [inf,  2.,  0.]])
    """
    sources = np.ascontiguousarray(sources, dtype=np.int64)
    k = sources.shape[0]
    n = indptr.shape[0] - 1
    dist = np.full((k, n), np.inf, dtype=np.float64)
    parent = np.full((k, n), -1, dtype=np.int64)
    if k == 0:
        return dist, parent
    limit = np.inf if max_distance is None else float(max_distance)
    weights = np.ascontiguousarray(weights, dtype=np.float32 if weights.dtype == np.float32 else np.float64)
    if not negative_weights:
        # Delta-stepping per source, all threads on each (measured on kron20 with 2 threads:
        # faster than one serial Dijkstra per thread, several sources at once).
        for i in range(k):
            dist[i], parent[i] = delta_stepping(indptr, indices, weights, sources[i:i + 1],
                                                max_distance=max_distance)
        return dist, parent
    ok = np.ones(k, dtype=np.bool_)
    _bellman_ford_sources(indptr, indices, weights, sources, limit, dist, parent, ok)
    if not ok.all():
        index = int(np.flatnonzero(~ok)[0])
        error = NegativeCycleError(
            f"a negative-weight cycle is reachable from source {int(sources[index])}")
        error.source_index = index
        raise error
    return dist, parent
