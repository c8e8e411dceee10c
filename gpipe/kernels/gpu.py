"""GPU traversal kernels: the CUDA C++ in ``kernels/*.cu``, compiled by CuPy and launched here.

Same names, signatures and semantics as :mod:`gpipe.kernels.cpu` (see "Kernel contract" in
ARCHITECTURE.md), on CuPy arrays of the current device:

- :func:`bfs_expand` -- one level of top-down BFS (``kernels/bfs.cu``);
- :func:`sssp_relax` -- one round of Bellman-Ford relaxation (``kernels/sssp.cu``).

There is no ``dijkstra`` here: it is a CPU-only kernel.

The ``.cu`` files are real CUDA sources, found by :func:`source_dir`, compiled once per device
by NVRTC through :class:`cupy.RawModule` with ``-std=c++17``, and instantiated for both index
types of ``indices`` (``int`` and ``long long``) through ``name_expressions``. Only GPU code
paths (``gpipe.backend``) import this module, so CuPy is imported at the top.
"""

from __future__ import annotations

import functools
from pathlib import Path

import cupy

import gpipe

__all__ = ["bfs_expand", "sssp_relax", "source_dir"]

_COMPILE_OPTIONS = ("-std=c++17",)
_BLOCK = 256  # threads per block; a multiple of 32 (the kernels' warp-wide ballots need it)
_BLOCKS_PER_SM = 16  # grid-stride cap: a few waves of resident blocks, then each thread loops

# C++ index type of each dtype `indices` may have (ARCHITECTURE.md: int32, int64 if n >= 2**31).
_INDEX_TYPES = {cupy.dtype(cupy.int32): "int", cupy.dtype(cupy.int64): "long long"}

# kernel source -> its templated entry points (each instantiated for every index type).
_KERNELS = {
    "bfs.cu": ("bfs_expand_edges",),
    "sssp.cu": ("sssp_relax_edges", "sssp_settle_parents"),
}


def source_dir() -> Path:
    """The folder that holds the CUDA sources ``bfs.cu`` and ``sssp.cu``.

    Returns
    -------
    pathlib.Path
        ``<package>/_cuda`` in an installed wheel (the build force-includes ``kernels`` there),
        else ``<repo root>/kernels`` in a source checkout or an editable install.

    Raises
    ------
    FileNotFoundError
        Neither folder holds the sources: the installation is incomplete.
    """
    package = Path(gpipe.__file__).resolve().parent
    candidates = (package / "_cuda", package.parent / "kernels")
    for folder in candidates:
        if all((folder / name).is_file() for name in _KERNELS):
            return folder
    raise FileNotFoundError(
        "gpipe's CUDA sources (" + ", ".join(_KERNELS) + ") are in none of: "
        + ", ".join(str(c) for c in candidates)
        + "; reinstall gpipe, or run from a source checkout"
    )


@functools.lru_cache(maxsize=None)
def _module(source: str, device_id: int) -> cupy.RawModule:
    # device_id is only the cache key: a module is compiled and loaded for the current device.
    del device_id
    names = [f"{kernel}<{ctype}>" for kernel in _KERNELS[source] for ctype in _INDEX_TYPES.values()]
    code = (source_dir() / source).read_text()
    module = cupy.RawModule(code=code, options=_COMPILE_OPTIONS, name_expressions=names)
    module.compile()
    return module


def _kernel(source: str, name: str, indices: cupy.ndarray):
    device_id = cupy.cuda.runtime.getDevice()
    return _module(source, device_id).get_function(f"{name}<{_INDEX_TYPES[indices.dtype]}>")


@functools.lru_cache(maxsize=None)
def _max_blocks(device_id: int) -> int:
    return _BLOCKS_PER_SM * cupy.cuda.Device(device_id).attributes["MultiProcessorCount"]


def _grid(n_edges_bound: int) -> tuple[int]:
    blocks = -(-n_edges_bound // _BLOCK)
    return (max(1, min(blocks, _max_blocks(cupy.cuda.runtime.getDevice()))),)


def _edge_end(indptr: cupy.ndarray, frontier: cupy.ndarray) -> cupy.ndarray:
    """Inclusive prefix sum of the frontier's out-degrees (int64[k])."""
    return cupy.cumsum(indptr[frontier + 1] - indptr[frontier])


def _empty(dtype=cupy.int64) -> cupy.ndarray:
    return cupy.empty(0, dtype=dtype)


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
        return _empty(), _empty(), _empty()
    frontier = cupy.ascontiguousarray(frontier)
    edge_end = _edge_end(indptr, frontier)
    if remote:
        n_edges = int(edge_end[-1])  # one sync: the remote lists are sized by the edge count
        if n_edges == 0:
            return _empty(), _empty(), _empty()
        remote_targets = cupy.empty(n_edges, dtype=cupy.int64)
        remote_parents = cupy.empty(n_edges, dtype=cupy.int64)
    else:
        n_edges = int(indices.size)  # an upper bound, for the grid only; the kernel reads E
        remote_targets = remote_parents = _empty()
    next_frontier = cupy.empty(min(n_edges, n_local), dtype=cupy.int64)
    counters = cupy.zeros(2, dtype=cupy.uint64)
    _kernel("bfs.cu", "bfs_expand_edges", indices)(
        _grid(n_edges),
        (_BLOCK,),
        (
            indptr, indices, cupy.int64(offset), cupy.int64(n_local), frontier, edge_end,
            cupy.int64(k), cupy.int32(level), dist, parent, next_frontier,
            remote_targets, remote_parents, counters, cupy.int32(bool(remote)),
        ),
    )
    n_next, n_remote = (int(c) for c in counters.get())
    return next_frontier[:n_next], remote_targets[:n_remote], remote_parents[:n_remote]


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
    empty = (_empty(), _empty(), _empty(cupy.float64), _empty())
    if k == 0:
        return empty
    frontier = cupy.ascontiguousarray(frontier)
    frontier_dist = cupy.ascontiguousarray(frontier_dist)
    edge_end = _edge_end(indptr, frontier)
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
    grid = _grid(n_edges)
    edges = (
        indptr, indices, weights, cupy.int64(offset), cupy.int64(n_local), frontier,
        frontier_dist, edge_end, cupy.int64(k), dist, flags,
    )
    _kernel("sssp.cu", "sssp_relax_edges", indices)(
        grid, (_BLOCK,),
        edges + (remote_targets, remote_dists, remote_parents, counters, cupy.int32(bool(remote))),
    )
    _kernel("sssp.cu", "sssp_settle_parents", indices)(
        grid, (_BLOCK,), edges + (parent, improved, counters),
    )
    n_improved, n_remote = (int(c) for c in counters.get())
    return (
        improved[:n_improved],
        remote_targets[:n_remote],
        remote_dists[:n_remote],
        remote_parents[:n_remote],
    )
