"""The level steps of a BFS over several owners, on the GPU (``kernels/bfs_owners.cu``).

Same names, signatures and promises as :mod:`gpipe.kernels.cpu_bfs_owners` (its docstring
describes the steps, the counters and the arrays); the arrays are CuPy arrays of the current
device. Bitmaps are ``uint32`` words here (``BITMAP_BITS = 32``), ``int64`` on the CPU. No
function here reads anything back to the host: the owner loop reads the counters itself, once
after the top-down step and once after the claims (or the bottom-up step). A grid's level
(a few hundred vertices) costs a handful of launches, so launches are counted: the compiled
functions are cached per device, and a top-down level starts with one kernel that zeroes the
counters and scans the frontier's degrees.
"""

from __future__ import annotations

import functools

import cupy

from gpipe.kernels import cuda

_SOURCE = "bfs_owners.cu"
_ENTRY_POINTS = ("bfs_owner_edge_end", "bfs_owner_top_down", "bfs_owner_claim",
                 "bfs_owner_bottom_up", "frontier_to_bitmap", "bitmap_to_frontier")
_SCAN_BLOCK = 1024  # kScanBlock in bfs_owners.cu
_SCAN_PER_THREAD = 8  # kScanPerThread
_SCAN_ITEMS = 8 * _SCAN_BLOCK * _SCAN_PER_THREAD  # up to 8 tiles in bfs_owner_edge_end; beyond, CuPy's scan

BITMAP_BITS = 32
BITMAP_DTYPE = cupy.uint32

NEXT = 0  # counters[NEXT]: length of next_frontier (kNext in bfs_owners.cu)
NEXT_EDGES = 1  # counters[NEXT_EDGES]: out-degree sum of next_frontier (kNextEdges)
QUEUES = 2  # counters[QUEUES + q]: length of owner q's queue (kQueues)


def _kernel(name: str, typed):
    """Entry point ``name`` instantiated for the dtype of ``typed`` (int32 or int64)."""
    return _function(name, typed.dtype, cupy.cuda.runtime.getDevice())


@functools.lru_cache(maxsize=None)
def _function(name, dtype, device_id):
    del device_id  # the cache key (cuda.function compiles for the current device)
    return cuda.function(_SOURCE, _ENTRY_POINTS, name, cupy.empty(0, dtype=dtype))


def bfs_owner_top_down(indptr, indices, offset, frontier, dist, parent, level, chunk, sent,
                       next_frontier, queue_targets, queue_parents, counters, frontier_edges=None):
    """Expand one owner's frontier one level, top-down; claim owned targets, queue remote ones once.

    See :func:`gpipe.kernels.cpu_bfs_owners.bfs_owner_top_down` for the parameters; here
    ``sent`` is ``uint32[ceil(n / 32)]``, ``counters`` int64 (zeroed, then added to as uint64),
    and ``queue_targets``/``queue_parents`` must have the dtype of ``indices``.

    ``frontier_edges`` (the frontier's out-degree sum, known to the owner loop) sizes the grid;
    without it the grid is sized by ``indices.size``. Edge-parallel, load-balanced by prefix
    sum + binary search as :func:`gpipe.kernels.gpu_bfs.bfs_expand`; no host read. Two
    launches for a frontier of up to ``_SCAN_ITEMS`` vertices: ``bfs_owner_edge_end`` zeroes
    the counters and computes the prefix sum, then the step.
    """
    k = int(frontier.size)
    if k == 0 or frontier_edges == 0:
        counters.fill(0)
        return
    frontier = cupy.ascontiguousarray(frontier)
    if k <= _SCAN_ITEMS:
        edge_end = cupy.empty(k, dtype=cupy.int64)
        _kernel("bfs_owner_edge_end", indices)(
            (1,), (_SCAN_BLOCK,),
            (indptr, frontier, cupy.int64(k), edge_end, counters, cupy.int32(counters.size)))
    else:
        counters.fill(0)
        edge_end = cuda.edge_end(indptr, frontier)
    bound = int(indices.size) if frontier_edges is None else int(frontier_edges)
    _kernel("bfs_owner_top_down", indices)(
        cuda.grid(max(bound, 1)),
        (cuda.BLOCK,),
        (
            indptr, indices, cupy.int64(offset), cupy.int64(dist.size), cupy.int64(chunk),
            frontier, edge_end, cupy.int64(k), cupy.int32(level), dist, parent, sent,
            next_frontier, queue_targets, queue_parents, counters,
        ),
    )


def bfs_owner_claim(indptr, offset, targets, parents, dist, parent, level, next_frontier, counters):
    """Claim the candidates ``(targets, parents)`` a peer sent, at distance ``level + 1``.

    See :func:`gpipe.kernels.cpu_bfs_owners.bfs_owner_claim`. ``targets`` and ``parents`` share
    one dtype (int32 or int64). One thread per candidate, claimed by atomicCAS on ``dist``.
    """
    count = int(targets.size)
    if count == 0:
        return
    targets = cupy.ascontiguousarray(targets)
    parents = cupy.ascontiguousarray(parents, dtype=targets.dtype)
    _kernel("bfs_owner_claim", targets)(
        cuda.grid(count),
        (cuda.BLOCK,),
        (
            indptr, cupy.int64(offset), targets, parents, cupy.int64(count), cupy.int32(level),
            dist, parent, next_frontier, counters,
        ),
    )


def bfs_owner_bottom_up(indptr, indices, dist, parent, level, front, next_front, counters):
    """One bottom-up level of one owner of an undirected graph.

    See :func:`gpipe.kernels.cpu_bfs_owners.bfs_owner_bottom_up`; here ``front`` is
    ``uint32[ceil(n / 32)]`` and ``next_front`` ``uint32[ceil(n_local / 32)]``. One warp per
    32 owned vertices; long rows scanned by the whole warp.
    """
    counters.fill(0)
    n_local = int(dist.size)
    if n_local == 0:
        return
    _kernel("bfs_owner_bottom_up", indices)(
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
    _kernel("frontier_to_bitmap", frontier)(
        cuda.grid(k), (cuda.BLOCK,), (frontier, cupy.int64(k), bitmap))


def bitmap_to_frontier(bitmap, size, out):
    """The ``size`` local ids whose bits are set in ``bitmap``, in no particular order, written
    into ``out[:size]`` (``out`` int64, contiguous)."""
    n_words = int(bitmap.size)
    if size == 0 or n_words == 0:
        return out[:0]
    counter = cupy.zeros(1, dtype=cupy.int64)
    _kernel("bitmap_to_frontier", out)(
        cuda.grid(n_words), (cuda.BLOCK,), (bitmap, cupy.int64(n_words), out, counter))
    return out[:size]
