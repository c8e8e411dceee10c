"""Per-source traversals of a batch of sources on the GPU (issue 16): ``kernels/bfs_batch.cu``
(bit-parallel multi-source BFS) and ``kernels/sssp_batch.cu`` (near-far over source-vertex
pairs), with the batch-kernel contract of :mod:`gpipe.engine.compute` (see its docstring).

Results are ``(k, n)`` tables, row ``i`` for ``sources[i]``, C order. Nothing here compiles at
first use: the kernels ship compiled (:mod:`gpipe.engine.compute.cuda`), the array work is
``cupy.empty``/``zeros`` (memset), host-to-device copies, CUB's scan in place (``gpu_arrays.cumsum_in_place``) and the
kernels of :mod:`gpipe.engine.compute.gpu_arrays`.
"""

from __future__ import annotations

import numpy as np

import cupy

from gpipe.engine.compute import cuda, gpu_arrays
from gpipe.engine.compute.directions import ALPHA, BETA, GAMMA
from gpipe.errors import NegativeCycleError

_BFS = "bfs_batch.cu"
_SSSP = "sssp_batch.cu"

# 64 sources a call: one uint64 word per vertex per bit set. Why not 128 or 256: see the header
# of kernels/bfs_batch.cu (the front words, gathered at random by every edge scan, stay inside
# the H100's L2 for kron22 at 64 bits; the k * n dist table costs the same whatever the width).
BFS_BATCH_WIDTH = 64
# Sources one sssp_batch traversal holds at once (more are run in turns of this many; fewer
# where device memory is short, see _SSSP_BYTES_PER_PAIR).
SSSP_BATCH_WIDTH = 64


_INF_BITS = 0x7FF0000000000000
# Device bytes per (source, vertex) pair of an sssp_batch traversal: dist, parent, parent edge
# (8 each), stamp and two marks (4 each), four pair queues (32), per queue slot at most
# snapshot, source column, row end, degree and edge end (40); and the result (16).
_SSSP_BYTES_PER_PAIR = 8 * 3 + 4 * 3 + 32 + 40 + 16
# Multiple of gpu_sssp.default_delta that sssp_batch uses by default (tune with
# ``python -m gpipe.tools.gpu_batch_check --delta-factors ...``).
SSSP_DELTA_FACTOR = 1.0


def _kernel(source, name, indices, weights=None):
    """``name`` of ``source`` for these indices (and, for a kernel that reads weights, their width)."""
    if weights is None:
        return cuda.function(source, name, indices)
    return cuda.weighted_function(source, name, indices, weights)


def _sources(sources) -> cupy.ndarray:
    return cupy.ascontiguousarray(cupy.asarray(sources, dtype=cupy.int64).ravel())


def _row_grid(n: int) -> int:
    """Blocks along x of a (x, k) launch with one thread per vertex of a row: each row's blocks
    come before the next row's, so one row's distances are what the cache holds at a time."""
    return max(1, min(-(-n // cuda.BLOCK), 2**31 - 1))


# ---------------------------------------------------------------------------------------------
# BFS
# ---------------------------------------------------------------------------------------------


def bfs_batch(indptr, indices, sources, depth_limit=-1, *, symmetric, in_indptr=None,
              in_indices=None, alpha=ALPHA, beta=BETA, gamma=GAMMA, trace=None):
    """Hops from each of ``sources`` to every vertex: a bit-parallel multi-source BFS.

    Parameters
    ----------
    indptr : cupy.ndarray of int64, shape (n + 1,)
        CSR row pointers (one owner, offset 0); out-edges of ``u`` are
        ``indices[indptr[u]:indptr[u + 1]]``.
    indices : cupy.ndarray of int32 or int64, shape (nnz,)
        Edge targets in ``[0, n)``.
    sources : cupy.ndarray or sequence of int
        ``k`` distinct vertex ids in ``[0, n)``. At most :data:`BFS_BATCH_WIDTH` share one
        traversal; more are run in turns of that many.
    depth_limit : int or None, optional (default=-1)
        Reach only vertices at most this many edges away; -1 or None: no limit.
    symmetric : bool
        The CSR holds every edge both ways (undirected): bottom-up steps scan it as in-edges.
    in_indptr, in_indices : cupy.ndarray, optional
        The in-edges of a directed graph (CSC as a CSR of the reverse graph), for bottom-up
        steps. Without them (and not ``symmetric``) every step is top-down.
    alpha, beta, gamma : float, optional
        Direction switches, as :func:`gpipe.engine.compute.gpu.bfs`: top-down -> bottom-up when
        ``m_f * alpha > m_u`` and ``m_f * gamma > n``; back when the frontier shrank and
        ``n_f * beta <= n``. ``alpha=0``: top-down only; all ``inf``: bottom-up from level 1.
    trace : list, optional
        Diagnostics: receives one ``(level, bottom_up, n_f, m_f)`` tuple per expanded level.

    Returns
    -------
    dist : cupy.ndarray of int32, shape (k, n)
        ``dist[i, v]``: hops from ``sources[i]`` to ``v``; -1 where unreached or beyond
        ``depth_limit``.

    Raises
    ------
    ValueError
        If ``indptr`` or ``indices`` have the wrong dtype.

    Examples
    --------
    >>> import cupy
    >>> indptr = cupy.array([0, 1, 3, 4], dtype=cupy.int64)     # doctest: +SKIP
    >>> indices = cupy.array([1, 0, 2, 1], dtype=cupy.int32)    # path 0 - 1 - 2
    >>> bfs_batch(indptr, indices, cupy.array([0, 2]), symmetric=True).tolist()  # doctest: +SKIP
    [[0, 1, 2], [2, 1, 0]]

    Notes
    -----
    MS-BFS (Then et al., VLDB 2015; iBFS, Liu et al., SIGMOD 2016): per vertex, 64-bit words of
    seen / frontier / next bits, one bit per source, so one scan of an edge serves every source;
    direction-optimizing (Beamer et al., SC 2012). One host read of four counters per level.
    Device memory besides the graph and the ``4 * k * n``-byte result: ``40 * n`` bytes
    (three words, the queue and its degrees) plus ``8 * n`` bytes per level bit-plane
    (``ceil(log2(levels + 1))`` of them). See ``kernels/bfs_batch.cu``.
    """
    _check_csr(indptr, indices, "bfs_batch")
    n = int(indptr.size) - 1
    sources = _sources(sources)
    k = int(sources.size)
    depth_limit = -1 if depth_limit is None else int(depth_limit)
    dist = cupy.empty((k, max(n, 0)), dtype=cupy.int32)
    if k == 0 or n <= 0:
        return dist
    if in_indptr is None or in_indices is None:
        if symmetric:
            in_indptr, in_indices = indptr, indices
        else:
            in_indptr, in_indices = indptr, None  # no bottom-up steps
    elif in_indices.dtype != indices.dtype:
        in_indices = gpu_arrays.astype(in_indices, indices.dtype)
    for lo in range(0, k, BFS_BATCH_WIDTH):
        hi = min(k, lo + BFS_BATCH_WIDTH)
        _bfs_word(indptr, indices, in_indptr, in_indices, sources[lo:hi], depth_limit,
                  (alpha, beta, gamma), trace, dist[lo:hi])
    return dist


def _bfs_word(indptr, indices, in_indptr, in_indices, sources, depth_limit, switches, trace, out):
    """One traversal of at most 64 sources into ``out`` (int32, (k, n), C-contiguous)."""
    alpha, beta, gamma = switches
    n, k = int(indptr.size) - 1, int(sources.size)
    kernel = lambda name: _kernel(_BFS, name, indices)  # noqa: E731
    words = cupy.zeros(3 * n, dtype=cupy.uint64)
    seen, front, nxt = words[:n], words[n:2 * n], words[2 * n:]
    n_planes = max(1, depth_limit.bit_length()) if 0 <= depth_limit < 16 else 4
    planes = cupy.zeros(n_planes * n, dtype=cupy.uint64)
    queue = cupy.empty(n, dtype=indices.dtype)
    degree = cupy.empty(n, dtype=cupy.int64)
    grid_n = cuda.grid(n)
    kernel("bfs_batch_seed")(cuda.grid(k), (cuda.BLOCK,), (sources, cupy.int64(k), nxt))
    all_bits = (1 << k) - 1
    live = all_bits
    bottom_up = False
    previous_size = 0
    level = 0
    while True:
        if level.bit_length() > n_planes:  # one more bit of levels: twice the planes
            grown = cupy.zeros(2 * n_planes * n, dtype=cupy.uint64)
            grown.data.copy_from_device_async(planes.data, planes.nbytes)
            planes, n_planes = grown, 2 * n_planes
        counters = cupy.zeros(4, dtype=cupy.uint64)
        kernel("bfs_batch_settle")(
            grid_n, (cuda.BLOCK,),
            (indptr, in_indptr, cupy.int64(n), cupy.int32(level), cupy.uint64(live), seen, front,
             nxt, planes, cupy.int32(n_planes), queue, degree, counters))
        size, edges, unexplored, live = (int(c) for c in counters.get())
        if size == 0 or (depth_limit >= 0 and level >= depth_limit):
            break
        if in_indices is None:
            go_bottom_up = False
        elif bottom_up:
            go_bottom_up = not (size < previous_size and size * beta <= n)
        else:
            go_bottom_up = edges * alpha > unexplored and edges * gamma > n
        bottom_up = go_bottom_up
        if trace is not None:
            trace.append((level, bottom_up, size, edges))
        if bottom_up:
            kernel("bfs_batch_bottom_up")(
                grid_n, (cuda.BLOCK,),
                (in_indptr, in_indices, cupy.int64(n), cupy.uint64(live), seen, front, nxt))
        elif edges > 0:
            edge_end = gpu_arrays.cumsum_in_place(gpu_arrays.copy(degree[:size]))
            kernel("bfs_batch_top_down")(
                cuda.grid(edges), (cuda.BLOCK,),
                (indptr, indices, queue, edge_end, cupy.int64(size), seen, front, nxt))
        previous_size = size
        level += 1
    kernel("bfs_batch_dist")(
        grid_n, (cuda.BLOCK,), (cupy.int64(n), cupy.int32(k), seen, planes, cupy.int32(n_planes), out))


def bfs_batch_parents(indptr, indices, dist, sources, *, symmetric=False, in_indptr=None,
                      in_indices=None):
    """A BFS tree per source from the distance table of :func:`bfs_batch`.

    Parameters
    ----------
    indptr, indices : cupy.ndarray
        The CSR given to :func:`bfs_batch`.
    dist : cupy.ndarray of int32, shape (k, n)
        :func:`bfs_batch`'s result for ``sources``.
    sources : cupy.ndarray or sequence of int
        The ``k`` sources (only their count is used: sources are where ``dist`` is 0).
    symmetric : bool, optional (default=False)
        The CSR holds every edge both ways: each vertex scans its own row for a parent.
    in_indptr, in_indices : cupy.ndarray, optional
        The in-edges of a directed graph, for the same scan. With neither, every vertex pushes
        itself along its out-edges (one pass over all edges per source).

    Returns
    -------
    parent : cupy.ndarray of int64, shape (k, n)
        ``parent[i, v]``: a ``u`` with an edge ``u -> v`` and ``dist[i, u] == dist[i, v] - 1``
        (which one is not fixed); -1 for sources and unreached vertices.

    Raises
    ------
    ValueError
        If the arrays have the wrong dtype or ``dist`` the wrong shape.
    """
    _check_csr(indptr, indices, "bfs_batch_parents")
    n = int(indptr.size) - 1
    k = int(_sources(sources).size)
    if dist.dtype != cupy.int32 or dist.shape != (k, max(n, 0)):
        raise ValueError(f"bfs_batch_parents needs int32 dist of shape ({k}, {n}), got "
                         f"{dist.dtype} {dist.shape}")
    dist = cupy.ascontiguousarray(dist)
    if k == 0 or n <= 0:
        return cupy.empty((k, max(n, 0)), dtype=cupy.int64)
    if in_indptr is None or in_indices is None:
        in_indptr, in_indices = (indptr, indices) if symmetric else (None, None)
    elif in_indices.dtype != indices.dtype:
        in_indices = gpu_arrays.astype(in_indices, indices.dtype)
    grid = (_row_grid(n), k)
    if in_indices is not None:
        parent = cupy.empty((k, n), dtype=cupy.int64)
        _kernel(_BFS, "bfs_batch_parents_pull", in_indices)(
            grid, (cuda.BLOCK,), (in_indptr, in_indices, cupy.int64(n), dist, parent))
    else:
        parent = gpu_arrays.full(k * n, -1, cupy.int64).reshape(k, n)
        _kernel(_BFS, "bfs_batch_parents_push", indices)(
            grid, (cuda.BLOCK,), (indptr, indices, cupy.int64(n), dist, parent))
    return parent


def _check_csr(indptr, indices, name):
    if indptr.dtype != cupy.int64 or indices.dtype not in cuda.INDEX_TYPES:
        raise ValueError(f"{name} needs int64 indptr and int32/int64 indices, got {indptr.dtype} "
                         f"and {indices.dtype}")


# ---------------------------------------------------------------------------------------------
# SSSP
# ---------------------------------------------------------------------------------------------


def sssp_batch(indptr, indices, weights, sources, *, symmetric, negative_weights=False,
               max_distance=None, delta=None, sort_queue=False, shared_scans=True, stats=None):
    """Shortest-path distances and trees from each of ``sources``: near-far over pairs.

    Parameters
    ----------
    indptr, indices : cupy.ndarray
        CSR of the graph (one owner, offset 0; int64 row pointers, int32/int64 targets).
    weights : cupy.ndarray of float64 or float32, shape (nnz,)
        Edge weights, not NaN. Non-negative unless ``negative_weights``. Distances are float64
        either way (each float32 weight widened before it is added).
    sources : cupy.ndarray or sequence of int
        ``k`` distinct vertex ids in ``[0, n)``; run :data:`SSSP_BATCH_WIDTH` at a time (fewer
        where device memory is short).
    symmetric : bool
        The CSR holds every edge both ways with equal weights; only changes how parents that
        lost a race are repaired (from the vertex's own row rather than a pass over all edges).
    negative_weights : bool, optional (default=False)
        Some weights are negative: frontier Bellman-Ford passes (no threshold) with a
        compare-and-swap minimum; a negative cycle reachable from ``sources[i]`` raises
        :class:`gpipe.errors.NegativeCycleError` with ``source_index = i``.
    max_distance : float, optional
        Dijkstra's cutoff, whatever the weights' signs: a candidate above it is dropped, so
        farther vertices stay unreached (``inf``, parent -1), every reached vertex's parent is
        reached, and the traversal stops once nothing nearer is left. With
        ``negative_weights`` only a negative cycle this bounded search reaches is raised (as
        the CPU kernels do).
    delta : float, optional
        Width of the near band (default :func:`gpipe.engine.compute.gpu_sssp.default_delta` times
        :data:`SSSP_DELTA_FACTOR`).
    sort_queue : bool, optional (default=False)
        Sort each relax pass's queue of pairs (``cupy.sort``), so that the pairs of one vertex
        (its sources) are adjacent and read its row back to back. An experiment: whether the
        sort pays for itself is for ``gpipe.tools.gpu_batch_check --sort-queue`` to show.
    shared_scans : bool, optional (default=True)
        Queue vertices, each with a mask of its queued sources, instead of (source, vertex)
        pairs: one scan of a vertex's row relaxes it for all of them (shared edge scans). Same
        answers; on the H100, kron22, 64 sources, 7.1 ms a source against 17.8 ms with pairs
        (``gpipe.tools.gpu_batch_check --shared-scans``, BENCHMARKS.md).
    stats : dict, optional
        Diagnostics: receives ``passes``, ``relax_passes``, ``splits`` and ``repairs``.

    Returns
    -------
    dist : cupy.ndarray of float64, shape (k, n)
        ``dist[i, v]``: shortest-path length from ``sources[i]``; ``inf`` where unreached.
    parent : cupy.ndarray of int64, shape (k, n)
        A shortest-path tree per row: ``parent[i, v] = u`` with an edge ``u -> v`` of weight
        ``w`` and ``dist[i, u] + w == dist[i, v]``, following parents ends at ``sources[i]``
        (zero-weight cycles included); -1 at the source and unreached vertices.

    Raises
    ------
    NegativeCycleError
        ``negative_weights`` and a negative cycle is reachable from a source.
    ValueError
        If the arrays have the wrong dtype.

    Examples
    --------
    >>> import cupy
    >>> indptr = cupy.array([0, 2, 3, 3], dtype=cupy.int64)               # doctest: +SKIP
    >>> indices = cupy.array([1, 2, 2], dtype=cupy.int32)                 # doctest: +SKIP
    >>> weights = cupy.array([1.0, 5.0, 1.0])                             # doctest: +SKIP
    >>> dist, parent = sssp_batch(indptr, indices, weights, [0, 1], symmetric=False)  # doctest: +SKIP
    >>> dist.tolist(), parent.tolist()                                    # doctest: +SKIP
    ([[0.0, 1.0, 2.0], [inf, 0.0, 1.0]], [[-1, 0, 1], [-1, -1, 1]])

    Notes
    -----
    Near-far (Davidson et al., IPDPS 2014) on k copies of the graph at once: the queues hold
    (source, vertex) pairs and one launch relaxes every source's near queue, all sharing one
    threshold; passes are driven from the host (one 24-byte read each). Parents are recorded
    by the relaxation with pass stamps, checked afterwards and the few that lost a race
    repaired (see ``kernels/sssp_batch.cu``). The traversal keeps each vertex's entries of all
    sources side by side (vertex-major), so that the sources' relaxations of one pass share
    cache lines, and writes the (k, n) result at the end. Device memory: about 124 bytes per
    (source, vertex) pair besides the graph, the 16 of the result included (sources counted
    up to the next power of two).
    """
    _check_csr(indptr, indices, "sssp_batch")
    n = int(indptr.size) - 1
    sources = _sources(sources)
    k = int(sources.size)
    dist = cupy.empty((k, max(n, 0)), dtype=cupy.float64)
    parent = cupy.empty((k, max(n, 0)), dtype=cupy.int64)
    if k == 0 or n <= 0:
        return dist, parent
    if delta is None:
        from gpipe.engine.compute.gpu_sssp import default_delta

        delta = np.inf if negative_weights else default_delta(indptr, weights) * SSSP_DELTA_FACTOR
    limit = np.inf if max_distance is None else float(max_distance)
    width = _sssp_width(n, k)
    totals = {"passes": 0, "relax_passes": 0, "splits": 0, "repairs": 0}
    for lo in range(0, k, width):
        hi = min(k, lo + width)
        _sssp_pairs(indptr, indices, weights, sources[lo:hi], lo, bool(symmetric),
                    bool(negative_weights), limit, float(delta),
                    (bool(sort_queue), bool(shared_scans)), dist[lo:hi], parent[lo:hi], totals)
    if stats is not None:
        stats.update(totals)
    return dist, parent


def _sssp_width(n: int, k: int) -> int:
    """Sources one traversal holds: SSSP_BATCH_WIDTH, fewer where free memory is short."""
    free, _ = cupy.cuda.Device().mem_info
    free += cupy.get_default_memory_pool().free_bytes()
    fit = int(0.8 * free) // (_SSSP_BYTES_PER_PAIR * n)
    width = max(1, min(k, SSSP_BATCH_WIDTH, fit))
    if 1 << (width - 1).bit_length() > fit:  # the pairs of a traversal are n * (next power of 2)
        width = 1 << max(0, fit.bit_length() - 1)
    return width


class _Passes:
    """The host side of a near-far traversal: threshold, queue lengths, far pile, pass number."""

    def __init__(self, delta, near_len):
        self.delta, self.threshold, self.threshold_old, self.split_floor = delta, delta, 0.0, 0.0
        self.near_len, self.far_len, self.far_min = near_len, 0, np.inf
        self.epoch, self.r, self.relax = 0, 0, True

    def advance(self, counters, totals) -> bool:
        """Read a pass's counters (one sync); decide the next pass. False: the traversal is over."""
        near_out, far_out, min_out = (int(c) for c in counters.get())
        totals["passes"] += 1
        totals["relax_passes" if self.relax else "splits"] += 1
        min_value = float(np.array(min_out, dtype=np.uint64).view(np.float64))
        self.near_len = near_out
        if self.relax:
            self.far_len += far_out
            self.far_min = min(self.far_min, min_value)
        else:
            self.far_len, self.far_min = far_out, min_value
            self.epoch = self.r
        if self.near_len > 0:
            self.relax = True
        elif self.far_len > 0:
            self.threshold_old = self.threshold
            self.threshold = max(self.far_min, self.threshold) + self.delta
            self.split_floor = self.far_min
            self.relax = False
        else:
            return False
        return True


def _counters():
    return cupy.asarray(np.array([0, 0, _INF_BITS], dtype=np.uint64))


def _negative_cycle(sources, first_row, columns):
    i = int(columns.min())
    error = NegativeCycleError(f"a negative-weight cycle is reachable from source {int(sources[i])} "
                               f"(batch row {first_row + i})")
    error.source_index = first_row + i
    return error


def _sssp_pairs(indptr, indices, weights, sources, first_row, symmetric, negative, limit, delta,
                options, dist_out, parent_out, totals):
    """One near-far traversal of the pairs of ``sources`` into ``dist_out``/``parent_out``
    ((k, n) C-contiguous slices of the result); ``first_row`` names sources in errors.

    The traversal works vertex-major: pair ``(v << shift) + i`` for vertex v and source
    column i, ``1 << shift`` columns per vertex (see ``kernels/sssp_batch.cu``). ``options``:
    ``(sort_queue, shared_scans)``."""
    sort_queue, shared_scans = options
    n, k = int(indptr.size) - 1, int(sources.size)
    shift = (k - 1).bit_length()
    pairs = n << shift
    kernel = lambda name, *weighted: _kernel(_SSSP, name, indices, *weighted)  # noqa: E731
    # The relax kernels drop a candidate above `limit` (Dijkstra's cutoff, with negative
    # weights too): no pair is ever beyond it, so nothing is cut afterwards.
    dist = gpu_arrays.full(pairs, np.inf, cupy.float64)
    start = (cupy.asnumpy(sources) << shift) + np.arange(k, dtype=np.int64)
    start_pairs = cupy.asarray(start)
    gpu_arrays.scatter(dist, start_pairs, 0.0)
    parent = gpu_arrays.full(pairs, -1, cupy.int64)
    stamp = cupy.zeros(pairs, dtype=cupy.int32)
    parent_edge = cupy.empty(pairs, dtype=cupy.int64)
    state = (dist, stamp, parent, parent_edge)
    common = (indptr, indices, weights, sources, first_row, negative, limit, delta, shift, state)
    if shared_scans:
        repair = _vertex_passes(*common, start_pairs, totals)
    else:
        repair = _pair_passes(*common, start, sort_queue, totals)
    _sssp_parents(indptr, indices, weights, n, k, shift, symmetric, dist, stamp, parent,
                  parent_edge, repair, totals)
    del repair, stamp, parent_edge
    tiles = (-(-n // 32), -(-k // 32))
    for work, out in ((dist, dist_out), (parent, parent_out)):
        kernel("sssp_batch_transpose")(
            tiles, (32, 8),
            (cupy.int64(n), cupy.int32(k), cupy.int32(shift), work.view(cupy.uint64),
             out.view(cupy.uint64)))


def _pair_passes(indptr, indices, weights, sources, first_row, negative, limit, delta, shift, state,
                 start, sort_queue, totals):
    """The passes with a queue of pairs; returns a free int64 array of ``pairs`` entries."""
    dist, stamp, parent, parent_edge = state
    n, k = int(indptr.size) - 1, int(sources.size)
    pairs = n << shift
    kernel = lambda name, *weighted: _kernel(_SSSP, name, indices, *weighted)  # noqa: E731
    marks = gpu_arrays.full(2 * pairs, -1, cupy.int32)
    near_mark, far_mark = marks[:pairs], marks[pairs:]
    queues = cupy.empty(4 * pairs, dtype=cupy.int64)
    queue, nxt, far, far_next = (queues[i * pairs:(i + 1) * pairs] for i in range(4))
    queue[:k].set(start)
    grid_max = cuda.grid(max(pairs, int(indices.size)))
    host = _Passes(delta, k)
    while True:
        host.r += 1
        if negative and host.r > n:  # a pair still lowered after n passes: a negative cycle
            raise _negative_cycle(sources, first_row,
                                  cupy.asnumpy(queue[:host.near_len]) & ((1 << shift) - 1))
        counters = _counters()
        if host.relax:
            q = host.near_len
            # Sorted: a vertex's pairs (its sources) adjacent, its row read back to back.
            pass_queue = cupy.sort(queue[:q]) if sort_queue and q > 1 else queue
            per_slot = cupy.empty(4 * q, dtype=cupy.int64)
            snap, column, row_end, degree = (per_slot[i * q:(i + 1) * q] for i in range(4))
            snap = snap.view(cupy.float64)
            kernel("sssp_batch_prepare")(
                cuda.grid(q), (cuda.BLOCK,),
                (indptr, cupy.int32(shift), pass_queue, cupy.int64(q), dist, snap, column, row_end,
                 degree))
            edge_end = gpu_arrays.cumsum_in_place(gpu_arrays.copy(degree))
            kernel("sssp_batch_relax", weights)(
                grid_max, (cuda.BLOCK,),
                (indices, weights, pass_queue, cupy.int64(q), snap, column, row_end, edge_end,
                 cupy.int32(shift), cupy.float64(host.threshold), cupy.float64(limit),
                 cupy.int32(host.r), cupy.int32(host.epoch), cupy.int32(negative), dist, stamp,
                 near_mark, far_mark, nxt, far, cupy.int64(host.far_len), parent, parent_edge,
                 counters))
        else:
            kernel("sssp_batch_split")(
                cuda.grid(host.far_len), (cuda.BLOCK,),
                (far, cupy.int64(host.far_len), dist, cupy.float64(host.threshold_old),
                 cupy.float64(host.threshold), cupy.float64(host.split_floor), cupy.int32(host.r),
                 far_mark, nxt, far_next, counters))
        split = not host.relax
        going = host.advance(counters, totals)
        queue, nxt = nxt, queue
        if split:
            far, far_next = far_next, far
        if not going:
            return queues[:pairs]


def _vertex_passes(indptr, indices, weights, sources, first_row, negative, limit, delta, shift,
                   state, start_pairs, totals):
    """The passes with shared edge scans: a queue of vertices, each with a mask of its queued
    sources (``kernels/sssp_batch.cu``, ``*_shared``); returns a free int64 array of ``pairs``
    entries."""
    dist, stamp, parent, parent_edge = state
    n, k = int(indptr.size) - 1, int(sources.size)
    pairs = n << shift
    kernel = lambda name, *weighted: _kernel(_SSSP, name, indices, *weighted)  # noqa: E731
    far_mark = gpu_arrays.full(pairs, -1, cupy.int32)
    near_vmark = gpu_arrays.full(n, -1, cupy.int32)
    mask = cupy.zeros(n, dtype=cupy.uint64)
    piles = cupy.empty(2 * pairs, dtype=cupy.int64)
    far, far_next = piles[:pairs], piles[pairs:]
    vqueues = cupy.empty(2 * n, dtype=cupy.int64)
    vqueue, vnext = vqueues[:n], vqueues[n:]
    grid_max = cuda.grid(max(pairs, int(indices.size)))
    host = _Passes(delta, 0)
    # The sources enter as a split of a pile of their pairs (all at 0: all move), pass 0.
    counters = _counters()
    kernel("sssp_batch_split_shared")(
        cuda.grid(k), (cuda.BLOCK,),
        (start_pairs, cupy.int64(k), dist, cupy.int32(shift), cupy.float64(0.0),
         cupy.float64(delta), cupy.float64(0.0), cupy.int32(0), far_mark, mask, near_vmark, vqueue,
         far_next, counters))
    host.near_len = int(counters.get()[0])
    while True:
        host.r += 1
        if negative and host.r > n:  # a pair still lowered after n passes: a negative cycle
            masks = cupy.asnumpy(gpu_arrays.take(mask, vqueue[:host.near_len]))
            lowest = [(int(m) & -int(m)).bit_length() - 1 for m in masks if int(m)]
            raise _negative_cycle(sources, first_row, np.array(lowest))
        counters = _counters()
        if host.relax:
            q = host.near_len
            per_slot = cupy.empty(3 * q, dtype=cupy.int64)
            slot_mask, row_end, degree = (per_slot[i * q:(i + 1) * q] for i in range(3))
            snap = cupy.empty(q << shift, dtype=cupy.float64)
            kernel("sssp_batch_prepare_shared")(
                cuda.grid(q), (cuda.BLOCK,),
                (indptr, cupy.int32(shift), vqueue, cupy.int64(q), dist, mask,
                 slot_mask.view(cupy.uint64), snap, row_end, degree))
            edge_end = gpu_arrays.cumsum_in_place(gpu_arrays.copy(degree))
            kernel("sssp_batch_relax_shared", weights)(
                grid_max, (cuda.BLOCK,),
                (indices, weights, vqueue, cupy.int64(q), slot_mask.view(cupy.uint64), snap, row_end,
                 edge_end, cupy.int32(shift), cupy.float64(host.threshold), cupy.float64(limit),
                 cupy.int32(host.r), cupy.int32(host.epoch), cupy.int32(negative), dist, stamp,
                 mask, near_vmark, far_mark, vnext, far, cupy.int64(host.far_len), parent,
                 parent_edge, counters))
        else:
            kernel("sssp_batch_split_shared")(
                cuda.grid(host.far_len), (cuda.BLOCK,),
                (far, cupy.int64(host.far_len), dist, cupy.int32(shift),
                 cupy.float64(host.threshold_old), cupy.float64(host.threshold),
                 cupy.float64(host.split_floor), cupy.int32(host.r), far_mark, mask, near_vmark,
                 vnext, far_next, counters))
        split = not host.relax
        going = host.advance(counters, totals)
        vqueue, vnext = vnext, vqueue
        if split:
            far, far_next = far_next, far
        if not going:
            del far_mark, near_vmark, mask, vqueues
            return piles[:pairs]


def _sssp_parents(indptr, indices, weights, n, k, shift, symmetric, dist, stamp, parent,
                  parent_edge, repair, totals):
    """Check the recorded parents; repair the failures (one host read of their count)."""
    pairs = n << shift
    kernel = lambda name, *weighted: _kernel(_SSSP, name, indices, *weighted)  # noqa: E731
    counters = cupy.zeros(1, dtype=cupy.uint64)
    row_failed = cupy.zeros(k, dtype=cupy.int32)
    kernel("sssp_batch_check", weights)(
        cuda.grid(pairs), (cuda.BLOCK,),
        (indptr, indices, weights, cupy.int64(n), cupy.int32(shift), cupy.int64(pairs), dist,
         stamp, parent_edge, parent, repair, row_failed, counters))
    failures = int(counters.get()[0])
    totals["repairs"] += failures
    if failures == 0:
        return
    if symmetric:
        kernel("sssp_batch_repair_pull", weights)(
            cuda.grid(failures), (cuda.BLOCK,),
            (indptr, indices, weights, cupy.int32(shift), dist, stamp, repair, counters, parent))
    else:
        kernel("sssp_batch_repair_push", weights)(
            (_row_grid(n), k), (cuda.BLOCK,),
            (indptr, indices, weights, cupy.int64(n), cupy.int32(shift), dist, stamp, row_failed,
             parent))
