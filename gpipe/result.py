"""One owner's traversal state turned into rows of ``vertex``, ``distance``, ``parent``."""

from __future__ import annotations

import numpy as np

from gpipe import backend as backends

BFS = "bfs"
SSSP = "sssp"
DISTANCE_DTYPE = {BFS: np.dtype("int64"), SSSP: np.dtype("float64")}


def owner_frame(part, ids, dist, parent, kind: str, vertex_dtype):
    """Rows for the present vertices of ``part``, with input ids and nulls for the unreached.

    ``dist`` is int32 hops (-1 unreached) for BFS and float64 (+inf unreached) for SSSP;
    ``parent`` holds global ids (-1 none). ``ids`` maps global ids back to input ids, or is
    None when the input ids are the global ids.
    """
    be = backends.get(part.backend)
    xp = be.xp
    local = xp.arange(part.n_local, dtype="int64")
    if part.present is not None:
        local = local[part.present]
    dist, parent = dist[local], parent[local]
    if kind == BFS:
        reached = dist >= 0
    else:
        reached = xp.isfinite(dist)
    has_parent = parent >= 0
    vertex = local + part.offset
    if ids is not None:
        vertex = ids[vertex]
        parent = ids[xp.where(has_parent, parent, 0)]
    return be.result_frame(
        vertex.astype(vertex_dtype, copy=False),
        dist.astype(DISTANCE_DTYPE[kind], copy=False),
        reached,
        parent.astype(vertex_dtype, copy=False),
        has_parent,
    )


def meta(backend_name: str, kind: str, vertex_dtype):
    """The empty frame that tells Dask the result's columns and dtypes."""
    return backends.get(backend_name).empty_result(vertex_dtype, DISTANCE_DTYPE[kind])
