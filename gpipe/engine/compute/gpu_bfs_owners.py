"""The level steps of a BFS over several owners, on the GPU (``kernels/bfs_owners.cu``).

Same names, signatures and promises as :mod:`gpipe.engine.compute.cpu_bfs_owners` (its docstring
describes the steps, the counters and the arrays); the arrays are CuPy arrays of the current
device. Bitmaps are ``uint32`` words here (``BITMAP_BITS = 32``), ``int64`` on the CPU. No
function here reads anything back to the host (but a top-down step over a frontier that may
exceed ``SCAN_ITEMS`` vertices reads its length): the owner loop reads the counters once per
top-down level, after the step. A grid's level (a few hundred vertices) costs a handful of
launches and host waits, which is what counts, the more so when owners share a GPU: the
compiled functions are cached per device; the claims of one level and the expansion of the
next are enqueued without a host wait between them, since the expansion reads the frontier's
length from the counters on the device; and a top-down level starts with one kernel that
records the frontier, zeroes the counters and scans the frontier's degrees.
"""

from __future__ import annotations

import functools

import cupy
import numpy

from gpipe.engine.compute import cuda, gpu_arrays

_SOURCE = "bfs_owners.cu"
SCAN_BLOCK = 1024  # kScanBlock in bfs_owners.cu
SCAN_PER_THREAD = 8  # kScanPerThread
SCAN_ITEMS = 8 * SCAN_BLOCK * SCAN_PER_THREAD  # up to 8 tiles in bfs_owner_edge_end; beyond, CuPy's scan

# The longest frontier (any owner's) whose level bfs_levels sends as pairs: one block scans its
# degrees; CuPy's multi-pass scan, which serves longer ones, measured 3-5 ms a level from a Dask
# worker, where the bitmaps' warp-per-vertex mark needs no scan.
PAIRS_MAX_FRONTIER = SCAN_ITEMS
BITMAP_BITS = 32
BITMAP_DTYPE = cupy.uint32
_LONG = numpy.empty(0, dtype=numpy.int64)  # names the instantiation of kernels whose Index is unused

FRONTIER = 0  # counters[FRONTIER]: length of the frontier a top-down level expanded (kFrontier)
FRONTIER_EDGES = 1  # its out-degree sum (kFrontierEdges)
NEXT = 2  # counters[NEXT]: length of next_frontier (kNext in bfs_owners.cu)
NEXT_EDGES = 3  # counters[NEXT_EDGES]: out-degree sum of next_frontier (kNextEdges)
QUEUES = 4  # counters[QUEUES + q]: length of owner q's queue (kQueues)


def owners_kernel(name: str, typed):
    """Entry point ``name`` instantiated for the dtype of ``typed`` (int32 or int64)."""
    return _function(name, typed.dtype, cupy.cuda.runtime.getDevice())


@functools.lru_cache(maxsize=None)
def _function(name, dtype, device_id):
    del device_id  # the cache key (cuda.function compiles for the current device)
    return cuda.function(_SOURCE, name, cupy.empty(0, dtype=dtype))


def _edge_end_buffer(k: int, scratch=None):
    """A buffer for the prefix sum of ``k`` frontier degrees: ``scratch`` where it is long
    enough, else one at least 1,024 long and rounded up to a power of two (a level's frontier
    length changes from level to level, and a pool reuses blocks of the sizes it has seen)."""
    if scratch is not None and scratch.size >= max(k, 1):
        return scratch
    return cupy.empty(max(1024, 1 << max(0, k - 1).bit_length()), dtype=cupy.int64)


def bfs_owner_top_down(indptr, indices, offset, frontier, dist, parent, level, chunk, sent,
                       next_frontier, queue_targets, queue_parents, counters, frontier_bound=None):
    """Expand one owner's frontier one level, top-down; claim owned targets, queue remote ones once.

    See :func:`gpipe.engine.compute.cpu_bfs_owners.bfs_owner_top_down` for the parameters; here
    ``sent`` is ``uint32[ceil(n / 32)]``, ``counters`` int64 (added to as uint64), and
    ``queue_targets``/``queue_parents`` must have the dtype of ``indices``. ``frontier`` is
    a contiguous int64 buffer whose first ``counters[NEXT]`` entries are the frontier.

    ``frontier_bound`` (at most the frontier's length, which the owner loop knows without a
    host read) picks the path: up to ``SCAN_ITEMS``, two launches and no host read
    (``bfs_owner_edge_end`` reads the length on the device, records it, zeroes the counters
    and scans the degrees; the step's grid is the grid-stride cap); beyond, or when None, one
    read of the length, CuPy's scan, and a grid sized by the frontier's edges. Edge-parallel,
    load-balanced by prefix sum + binary search as :func:`gpipe.engine.compute.gpu_bfs.bfs_expand`.
    """
    frontier = cupy.ascontiguousarray(frontier)
    bound = int(frontier.size) if frontier_bound is None else min(int(frontier_bound), int(frontier.size))
    if bound <= SCAN_ITEMS:
        edge_end = _edge_end_buffer(bound)
        owners_kernel("bfs_owner_edge_end", indices)(
            (1,), (SCAN_BLOCK,), (indptr, frontier, edge_end, counters, cupy.int32(counters.size)))
        if bound == 0:
            return
        grid = cuda.grid(max(int(indices.size), 1))
    else:
        k, edges = (int(c) for c in counters[NEXT:NEXT_EDGES + 1].get())
        start = numpy.zeros(counters.size, dtype=numpy.int64)
        start[FRONTIER], start[FRONTIER_EDGES] = k, edges
        counters.set(start)
        if k == 0:
            return
        edge_end = gpu_arrays.edge_end(indptr, frontier[:k])
        grid = cuda.grid(max(edges, 1))
    owners_kernel("bfs_owner_top_down", indices)(
        grid,
        (cuda.BLOCK,),
        (
            indptr, indices, cupy.int64(offset), cupy.int64(dist.size), cupy.int64(chunk),
            frontier, edge_end, cupy.int32(level), dist, parent, sent,
            next_frontier, queue_targets, queue_parents, counters,
        ),
    )


def bfs_owner_claim(indptr, offset, targets, parents, dist, parent, level, next_frontier, counters):
    """Claim the candidates ``(targets, parents)`` a peer sent, at distance ``level + 1``.

    See :func:`gpipe.engine.compute.cpu_bfs_owners.bfs_owner_claim`. ``targets`` and ``parents`` share
    one dtype (int32 or int64). One thread per candidate, claimed by atomicCAS on ``dist``.
    """
    count = int(targets.size)
    if count == 0:
        return
    targets = cupy.ascontiguousarray(targets)
    parents = cupy.ascontiguousarray(parents, dtype=targets.dtype)
    owners_kernel("bfs_owner_claim", targets)(
        cuda.grid(count),
        (cuda.BLOCK,),
        (
            indptr, cupy.int64(offset), targets, parents, cupy.int64(count), cupy.int32(level),
            dist, parent, next_frontier, counters,
        ),
    )


def bfs_owner_bottom_up(indptr, indices, dist, parent, level, front, next_front, counters):
    """One bottom-up level of one owner of an undirected graph.

    See :func:`gpipe.engine.compute.cpu_bfs_owners.bfs_owner_bottom_up`; here ``front`` is
    ``uint32[ceil(n / 32)]`` and ``next_front`` ``uint32[ceil(n_local / 32)]``. One warp per
    32 owned vertices; long rows scanned by the whole warp.
    """
    counters.fill(0)
    n_local = int(dist.size)
    if n_local == 0:
        return
    owners_kernel("bfs_owner_bottom_up", indices)(
        cuda.grid(-(-n_local // 32) * 32),
        (cuda.BLOCK,),
        (indptr, indices, cupy.int64(n_local), cupy.int32(level), dist, parent, front, next_front,
         counters),
    )


def frontier_to_bitmap(frontier, bitmap):
    """Clear ``bitmap`` (uint32 words) and set the bits of the local ids in ``frontier``."""
    bitmap.fill(0)
    k = int(frontier.size)
    if k == 0:
        return
    frontier = cupy.ascontiguousarray(frontier)
    owners_kernel("frontier_to_bitmap", frontier)(
        cuda.grid(k), (cuda.BLOCK,), (frontier, cupy.int64(k), bitmap))


def bitmap_to_frontier(bitmap, out, counters):
    """Write the local ids whose bits are set in ``bitmap`` into ``out`` (int64, contiguous), in
    no particular order, and their number into ``counters[NEXT]`` (the rest untouched)."""
    counters[NEXT:NEXT + 1].fill(0)
    n_words = int(bitmap.size)
    if n_words == 0:
        return
    owners_kernel("bitmap_to_frontier", out)(
        cuda.grid(n_words), (cuda.BLOCK,), (bitmap, cupy.int64(n_words), out, counters[NEXT:]))


def bfs_owner_level_begin(front, visited, marks, counters):
    """The start of a fixed-size level: ``visited |= front``, ``marks`` cleared (None: left
    alone, a bottom-up level), ``counters[:4]`` zeroed (None: left alone); one launch. See
    :func:`gpipe.engine.compute.cpu_bfs_owners.bfs_owner_level_begin`."""
    n_words = int(visited.size)
    owners_kernel("bfs_owner_level_begin", _LONG)(
        cuda.grid(max(n_words, 4)), (cuda.BLOCK,),
        (front, visited, marks if marks is not None else 0, cupy.int64(n_words),
         counters if counters is not None else 0))


def bfs_owner_mark(indptr, indices, frontier, k, edges, visited, marks, counters, scratch=None):
    """Top-down half of a fixed-size level: set in ``marks`` the bit of every target of the
    first ``k`` local ids of ``frontier`` (out-degree sum ``edges``) that ``visited`` lacks, and
    zero ``counters[:4]`` for the resolve. See :func:`gpipe.engine.compute.cpu_bfs_owners.bfs_owner_mark`;
    bitmaps are uint32 words here.

    ``k`` and ``edges`` are known on the host (the level's gathered counters), so nothing is
    read back. Up to ``SCAN_ITEMS`` vertices, edge-parallel (``bfs_owner_edge_end`` scans the
    degrees in one block, taking the length from ``counters[NEXT]`` on the device, and zeroes
    the counters): a hub's row is spread over the grid. Longer frontiers, which come once the
    hubs are visited, go one warp per vertex, with no scan. ``scratch``: an int64 buffer the
    scan may use if it is long enough (else one is allocated).
    """
    if k <= SCAN_ITEMS:
        edge_end = _edge_end_buffer(k, scratch)
        owners_kernel("bfs_owner_edge_end", indices)(
            (1,), (SCAN_BLOCK,), (indptr, frontier, edge_end, counters, cupy.int32(4)))
        if k and edges:
            owners_kernel("bfs_owner_mark", indices)(
                cuda.grid(edges), (cuda.BLOCK,),
                (indptr, indices, frontier, edge_end, visited, marks, counters))
        return
    counters[:4].fill(0)
    owners_kernel("bfs_owner_mark_rows", indices)(
        cuda.grid(32 * k), (cuda.BLOCK,), (indptr, indices, frontier, cupy.int64(k), visited, marks))


def bfs_owner_resolve(indptr, indices, level, front, own_marks, received, owner, dist, parent,
                      next_front, frontier, counters):
    """The claim of a fixed-size level: see :func:`gpipe.engine.compute.cpu_bfs_owners.bfs_owner_resolve`
    (``own_marks`` None for a bottom-up level). One warp per 32 owned vertices, as
    :func:`bfs_owner_bottom_up`; adds to ``counters`` (zeroed by the caller)."""
    n_local = int(dist.size)
    if n_local == 0:
        return
    masked = own_marks is not None
    words = int(own_marks.size) if masked else 0  # an owner's segment of `received`
    n_owners = int(received.size) // words if masked else 1
    owners_kernel("bfs_owner_resolve", indices)(
        cuda.grid(-(-n_local // 32) * 32),
        (cuda.BLOCK,),
        (indptr, indices, cupy.int64(n_local), cupy.int32(level), front, cupy.int32(masked),
         own_marks if masked else front, received if masked else front, cupy.int32(n_owners),
         cupy.int32(owner), cupy.int64(words), dist, parent, next_front, frontier, counters),
    )


def bfs_owner_pairs(indptr, indices, offset, frontier, k, edges, visited, pairs, next_front,
                    counters, scratch=None):
    """Top-down from a small frontier: its out-edges as (target, parent) pairs in ``pairs``
    (``indices``' dtype, ``2 * slots`` long, ``slots >= edges``); see
    :func:`gpipe.engine.compute.cpu_bfs_owners.bfs_owner_pairs`. Edge-parallel as
    :func:`bfs_owner_mark`, its prefix sum by ``bfs_owner_edge_end`` up to ``SCAN_ITEMS``
    vertices, by CuPy's scan beyond; ``scratch`` as :func:`bfs_owner_mark` takes it."""
    if k <= SCAN_ITEMS:
        edge_end = _edge_end_buffer(k, scratch)
        owners_kernel("bfs_owner_edge_end", indices)(
            (1,), (SCAN_BLOCK,), (indptr, frontier, edge_end, counters, cupy.int32(4)))
    else:
        queued = frontier[:k]
        edge_end = cupy.cumsum(indptr[queued + 1] - indptr[queued])
    slots, words = int(pairs.size) // 2, int(next_front.size)
    owners_kernel("bfs_owner_pairs", indices)(
        cuda.grid(max(slots, words, 4)), (cuda.BLOCK,),
        (indptr, indices, cupy.int64(offset), frontier, edge_end, cupy.int64(k), visited, pairs,
         cupy.int64(slots), next_front, cupy.int64(words), counters))


def bfs_owner_claim_pairs(indptr, pairs, offset, level, visited, dist, parent, next_front,
                          frontier, counters):
    """Claim this owner's targets of every owner's gathered ``pairs``; see
    :func:`gpipe.engine.compute.cpu_bfs_owners.bfs_owner_claim_pairs`. One thread per pair,
    appends aggregated per warp."""
    n_pairs = int(pairs.size) // 2
    if n_pairs == 0:
        return
    owners_kernel("bfs_owner_claim_pairs", pairs)(
        cuda.grid(n_pairs), (cuda.BLOCK,),
        (indptr, pairs, cupy.int64(n_pairs), cupy.int64(offset), cupy.int64(dist.size),
         cupy.int32(level), visited, dist, parent, next_front, frontier, counters))
