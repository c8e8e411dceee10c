"""SSSP on the GPU: Bellman-Ford relaxation rounds (``kernels/sssp.cu``), the step of the
multi-owner and negative-weight paths, and a whole one-owner near-far SSSP for non-negative
weights in one cooperative kernel (``kernels/sssp_nearfar.cu``)."""

from __future__ import annotations

import functools

import cupy

from gpipe.engine.compute import cuda, gpu_arrays

_SOURCE = "sssp.cu"


def sssp_relax(indptr, indices, weights, offset, frontier, frontier_dist, dist, parent, remote,
               bound=float("inf")):
    """Relax every out-edge of the frontier once, in place; see ARCHITECTURE.md, "Kernel contract".

    Parameters
    ----------
    indptr : cupy.ndarray of int64, shape (n_local + 1,)
        CSR row pointers of this owner's vertices.
    indices : cupy.ndarray of int32 or int64
        Global target id of each edge.
    weights : cupy.ndarray of float64 or float32
        Weight of each edge (a float32 weight is added to a float64 distance in float64).
    offset : int
        Global id of local vertex 0.
    frontier : cupy.ndarray of int64
        Distinct local ids to relax from.
    frontier_dist : cupy.ndarray of float64
        Distance of each frontier vertex at the start of the round (the snapshot relaxed from).
    dist : cupy.ndarray of float64, shape (n_local,)
        Tentative distances, +inf = unreached; only ever lowered.
    parent : cupy.ndarray of int64, shape (n_local,), or None
        Global parent ids, -1 = none; changed only where ``dist`` strictly decreased. None
        or empty: no parent is written.
    remote : bool
        Whether to list the candidates for targets outside this owner.
    bound : float
        The cutoff (``max_distance``; +inf: none): a candidate above it is dropped, local or
        remote (Dijkstra's cutoff, so a kept vertex's parent is kept with negative weights too).

    Returns
    -------
    improved, remote_targets, remote_dists, remote_parents : cupy.ndarray
        Local ids (int64, unique, no particular order) whose distance strictly decreased; and,
        when ``remote``, one ``(v, cand, offset + u)`` triple per edge to a target outside
        ``[offset, offset + n_local)`` whose ``cand`` is not above ``bound`` (int64, float64,
        int64; raw), else empty arrays.

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
    edge_end = gpu_arrays.edge_end(indptr, frontier)
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
    cuda.weighted_function(_SOURCE, "sssp_relax_edges", indices, weights)(
        grid, (cuda.BLOCK,),
        edges + (remote_targets, remote_dists, remote_parents, counters, cupy.int32(bool(remote)),
                 cupy.float64(bound)),
    )
    cuda.weighted_function(_SOURCE, "sssp_settle_parents", indices, weights)(
        grid, (cuda.BLOCK,), edges + (_or_null(parent), improved, counters),
    )
    n_improved, n_remote = (int(c) for c in counters.get())
    return (
        improved[:n_improved],
        remote_targets[:n_remote],
        remote_dists[:n_remote],
        remote_parents[:n_remote],
    )


# --- whole single-owner SSSP: near-far in one cooperative kernel (kernels/sssp_nearfar.cu) ----

_NEAR_FAR_SOURCE = "sssp_nearfar.cu"
_BLOCKS_PER_SM = (4, 2, 1)  # cooperative grid: resident blocks per SM to try, most first
# Read the per-pass slot arrays through L1 after each grid barrier (see the .cu)? Measured equal
# within noise on the H100 (kron22 21.9 vs 22.1 ms, kron25 160 vs 164 ms), so the L2-only
# loads, which rely on nothing about L1 invalidation at a fence, are the default.
_L1_CACHED = False
# Default delta = mean weight * _DELTA_EDGES / mean out-degree. Davidson et al. use a warp (32).
# Measured on the H100, 2026-11-22, kron22 / kron25 as gpipe bench builds them (duplicates
# kept), median ms of 8 sources, this kernel: 64 -> 16.9 / 130.3, 80 -> 15.5 / 124.7,
# 96 -> 15.9 / 121.1 (again 15.8 / 122.9), 112 -> 15.3 / 120.1, 128 -> 15.0 / 122.5; from 96 on
# the differences are within the run-to-run spread (an earlier round: 32 -> 21.9 / 156.0).
_DELTA_EDGES = 96
_REPAIR_BLOCKS = 1024  # grid of the symmetric parent repair (edge-parallel over the listed rows)
# Record parents during the relaxation (False: every parent comes from the repair pass).
# Part of this module's contract: :func:`sssp` reads it at each call, so tests set it to False
# to check the repair pass alone (row scan when symmetric, all-edges pass otherwise).
RECORD_PARENTS = True


def _or_null(array):
    """``array``, or a null pointer (8 bytes by value) for None or an empty array: the kernels
    then write no parents."""
    return cupy.uint64(0) if array is None or array.size == 0 else array


def sssp(indptr, indices, weights, sources, *, delta=None, symmetric=False, target=-1,
         max_distance=None, parents=True, stats=None):
    """Shortest-path distances and a shortest-path tree from ``sources``, non-negative weights.

    Parameters
    ----------
    indptr : cupy.ndarray of int64, shape (n + 1,)
        CSR row pointers of the whole graph (one owner, ``offset`` 0).
    indices : cupy.ndarray of int32 or int64, shape (nnz,)
        Target id of each edge, in ``[0, n)``. Repeated pairs are allowed (the lightest counts).
    weights : cupy.ndarray of float64 or float32, shape (nnz,)
        Edge weights; must be non-negative and not NaN (zeros are allowed). Distances are
        float64 either way: each float32 weight is widened before it is added. Not checked here:
        :mod:`gpipe.io.validate` and the caller's ``negative_weights`` flag guard this.
    sources : cupy.ndarray or sequence of int
        Source ids in ``[0, n)``; repeats are ignored. Distances are to the nearest source.
    delta : float, optional
        Width of the near band (the step of the threshold). Default: mean weight times 96
        over mean out-degree (from a sample of at most 65,536 edges), three times the
        warp-width heuristic of Davidson et al. (faster on Graph500 graphs); ``inf`` gives frontier
        Bellman-Ford passes (fewest passes, most re-relaxations: best on low-diameter graphs),
        a tiny value gives Dijkstra-like passes (large-diameter graphs want a smaller value).
    symmetric : bool, default False
        The CSR holds every edge in both directions with equal weights (an undirected graph,
        ``Partition.symmetric``). Only changes how the few parents that the check after the
        traversal rejects are repaired: by scanning the vertex's own row (its in-edges' twins)
        instead of one pass over all ``nnz`` edges. Wrong answers follow from ``True`` on a
        directed graph; ``False`` is always correct.
    target : int, default -1
        Stop once this vertex's distance is final: when a pass leaves the near queue empty
        and the target lies below the threshold. Its distance and parent chain are then exact;
        other vertices may be unreached or above their distance. -1: settle everything.
    max_distance : float or None
        Vertices farther are left unreached (+inf, parent -1): candidates above it are
        dropped, so the passes end where the distances pass it.
    parents : bool, default True
        False: no parent, parent-edge or pass-stamp array is allocated (20 bytes per vertex
        less) and the parent check is not run; ``parent`` is None.
    stats : dict, optional
        Receives the traversal's counters (``passes``, ``relax_passes``, ``splits``,
        ``edges_relaxed``); one synchronization.

    Returns
    -------
    dist : cupy.ndarray of float64, shape (n,)
        Shortest-path lengths; ``+inf`` where unreached, ``0`` at sources.
    parent : cupy.ndarray of int64, shape (n,), or None
        For each reached non-source ``v``, a vertex ``u`` with an edge ``u -> v`` of weight
        ``w`` such that ``dist[u] + w == dist[v]`` exactly; following parents always ends at a
        source (no cycles, zero-weight cycles included). ``-1`` at sources and unreached.
        None when ``parents`` is False.

    Examples
    --------
    >>> import cupy
    >>> indptr = cupy.array([0, 2, 3, 3], dtype=cupy.int64)         # doctest: +SKIP
    >>> indices = cupy.array([1, 2, 2], dtype=cupy.int32)           # doctest: +SKIP
    >>> weights = cupy.array([1.0, 5.0, 1.0])                       # doctest: +SKIP
    >>> dist, parent = sssp(indptr, indices, weights, [0])          # doctest: +SKIP
    >>> dist.tolist(), parent.tolist()                              # doctest: +SKIP
    ([0.0, 1.0, 2.0], [-1, 0, 1])

    Notes
    -----
    Near-far SSSP (Davidson, Baxter, Garland, Owens, IPDPS 2014), the GPU form of
    delta-stepping, in one cooperative kernel whose passes are separated by grid barriers:
    no host synchronization during the traversal. Each pass relaxes the near queue's edges
    (prefix sum + binary search load balance, 64-bit ``atomicMin`` on the distance bits);
    when the near queue empties, the threshold rises by ``delta`` and the far pile is split.
    Parents are recorded by the lowering that set each distance and re-checked per vertex at
    the end (the edge is tight and its source's pass stamp is smaller, which keeps the tree
    acyclic, zero-weight cycles included; see ``kernels/sssp_nearfar.cu``). The few that lost
    a race between two lowerings of one pass are repaired from the vertex's own row when
    ``symmetric``, else by one edge-parallel pass over all ``nnz`` edges (skipped on the
    device when none failed).
    Work is ``O(nnz * r + n)`` for ``r`` relaxations per edge (about 2 to 3 on Graph500
    graphs with the default ``delta``); device memory is about ``76 * n`` bytes besides the
    graph (int32 ids). If no cooperative grid fits (not seen on Hopper), rounds of :func:`sssp_relax`
    driven from the host give the same result.

    References
    ----------
    .. [1] A. Davidson, S. Baxter, M. Garland, J. D. Owens, "Work-Efficient Parallel GPU
       Methods for Single-Source Shortest Paths", IPDPS 2014.
    .. [2] U. Meyer, P. Sanders, "Delta-stepping: a parallelizable shortest path algorithm",
       Journal of Algorithms 49(1), 2003.
    """
    dist, parent, counts = sssp_with_stats(indptr, indices, weights, sources, delta=delta,
                                           symmetric=symmetric, target=target,
                                           max_distance=max_distance, parents=parents)
    if stats is not None:
        host = counts.get()
        stats.update(passes=int(host[0]), relax_passes=int(host[1]), splits=int(host[2]),
                     edges_relaxed=int(host[3]))
    return dist, parent


def sssp_with_stats(indptr, indices, weights, sources, *, delta=None, symmetric=False, target=-1,
                    max_distance=None, parents=True):
    """:func:`sssp`, plus the traversal's counters (a device int64[7] array).

    The counters are: passes, relax passes, splits (threshold raises), edges relaxed, near
    queue appends, far pile appends, parents repaired after the check. Reading them costs one
    synchronization.
    """
    n = int(indptr.size) - 1
    index_dtype = indices.dtype
    # No CuPy elementwise kernel or reduction here: each would compile at its first use
    # (gpu_arrays' kernels ship compiled).
    sources = gpu_arrays.unique(cupy.asarray(sources, dtype=cupy.int64))
    k = int(sources.size)
    dist = gpu_arrays.full(n, cupy.inf, cupy.float64)
    gpu_arrays.scatter(dist, sources, 0.0)
    limit = float("inf") if max_distance is None else float(max_distance)
    if delta is None:
        delta = default_delta(indptr, weights)
    if parents:
        parent = gpu_arrays.full(n, -1, cupy.int64)
        stamp = cupy.zeros(n, dtype=cupy.int32)
        parent_edge = cupy.empty(n, dtype=cupy.int64)  # read only where parent >= 0
    else:
        parent = stamp = parent_edge = None
    marks = gpu_arrays.full(2 * n, -1, cupy.int32)
    queues = cupy.empty(4 * n, dtype=index_dtype)
    gpu_arrays.astype(sources, index_dtype, out=queues[:k])
    per_slot = cupy.empty(3 * n, dtype=cupy.int64)  # snapshot (as float64), row end, edge end
    ring = cupy.array([0, 0, 0x7FF0000000000000] * 3, dtype=cupy.uint64)
    barrier = cupy.zeros(2, dtype=cupy.uint32)
    stats = cupy.zeros(7, dtype=cupy.int64)
    near_far = cuda.weighted_function(_NEAR_FAR_SOURCE, "sssp_near_far", indices, weights)
    # The RawKernel's own call fixes enable_cooperative_groups at module creation; its
    # cupy.cuda.function.Function (``.kernel``) takes it per launch.
    near_far = getattr(near_far, "kernel", near_far)
    error = None
    for blocks in _cooperative_grids(near_far):
        block_sum = cupy.empty(2 * blocks, dtype=cupy.int64)  # block sums, first slots
        args = (
            indptr, indices, weights, cupy.int64(n), cupy.float64(delta), cupy.int64(k),
            dist, _or_null(stamp), marks[:n], marks[n:], queues[:n], queues[n:2 * n],
            queues[2 * n:3 * n], queues[3 * n:], per_slot[:n].view(cupy.float64),
            per_slot[n:2 * n], per_slot[2 * n:], block_sum[:blocks], block_sum[blocks:],
            _or_null(parent), _or_null(parent_edge), ring, barrier, stats,
            cupy.int32(_L1_CACHED), cupy.int32(RECORD_PARENTS), cupy.int64(target),
            cupy.float64(limit),
        )
        try:
            near_far((blocks,), (cuda.BLOCK,), args, enable_cooperative_groups=True)
            error = None
            break
        except cupy.cuda.driver.CUDADriverError as exc:  # grid too large to be resident
            error = exc
    if error is not None:  # not even one block per SM can be resident: rounds from the host
        dist, parent = _frontier_rounds(indptr, indices, weights, sources, dist, parent, limit)
        return dist, parent, stats
    if n > 0 and parents:
        # Re-check the recorded parents; list the failures (in the now free first queue).
        repair, repairs = queues[:n], stats[6:7].view(cupy.uint64)
        kernel = functools.partial(cuda.function, _NEAR_FAR_SOURCE)
        weighted = functools.partial(cuda.weighted_function, _NEAR_FAR_SOURCE)
        weighted("sssp_check_parents", indices, weights)(
            cuda.grid(n), (cuda.BLOCK,),
            (indptr, indices, weights, cupy.int64(n), dist, stamp, parent_edge, parent, repair, repairs),
        )
        if symmetric:  # the listed vertices' own rows, edge-parallel (per_slot is free now)
            repair_end = per_slot[:n]
            kernel("sssp_repair_scan", indices)((1,), (cuda.BLOCK,), (indptr, repair, repairs, repair_end))
            weighted("sssp_repair_rows", indices, weights)(
                (_REPAIR_BLOCKS,), (cuda.BLOCK,),
                (indptr, indices, weights, dist, stamp, parent, repair, repairs, repair_end),
            )
        else:
            weighted("sssp_settle_tree", indices, weights)(
                cuda.grid(int(indices.size)), (cuda.BLOCK,),
                (indptr, indices, weights, cupy.int64(n), dist, stamp, parent, repairs),
            )
    return dist, parent, stats


def _frontier_rounds(indptr, indices, weights, sources, dist, parent, bound=float("inf")):
    """Frontier Bellman-Ford rounds of :func:`sssp_relax` (when no cooperative launch fits),
    candidates above ``bound`` (max_distance) dropped; ``parent`` may be None (none written)."""
    frontier = sources
    while frontier.size:
        frontier, _, _, _ = sssp_relax(indptr, indices, weights, 0, frontier,
                                       gpu_arrays.take(dist, frontier), dist, parent, False, bound)
    return dist, parent


def default_delta(indptr, weights) -> float:
    """The default near band: mean weight * _DELTA_EDGES / mean out-degree (sampled; one sync).

    The sample, every ``nnz // 65536``-th weight, is gathered into a contiguous array and
    summed, so that the sum is CUB's (shipped compiled in CuPy; the mean of a strided view
    would compile a reduction kernel at its first use)."""
    n, nnz = int(indptr.size) - 1, int(weights.size)
    if nnz == 0 or n == 0:
        return 1.0
    positions = gpu_arrays.arange(0, nnz, max(1, nnz // 65536))
    mean_weight = float(gpu_arrays.take(weights, positions).sum()) / positions.size
    if not mean_weight > 0.0:
        return float("inf")  # all (sampled) weights zero: plain frontier passes
    return mean_weight * _DELTA_EDGES / max(1.0, nnz / n)


def _cooperative_grids(kernel):
    """Grid sizes to try for a cooperative launch of ``kernel``, largest resident one first."""
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    try:
        per_sm = cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(kernel.ptr, cuda.BLOCK, 0)
        candidates = [min(per_sm, _BLOCKS_PER_SM[0])] if per_sm >= 1 else []
    except Exception:  # occupancy API missing in this CuPy build: try the fixed ladder
        candidates = []
    candidates += [c for c in _BLOCKS_PER_SM if not candidates or c < candidates[0]]
    return [c * sms for c in candidates]
