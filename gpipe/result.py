"""One owner's traversal state turned into rows of ``vertex``, ``distance``, ``parent``."""

from __future__ import annotations

import numpy as np

from gpipe import backend as backends
from gpipe.validate import numpy_dtype

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
    array_dtype = numpy_dtype(vertex_dtype)
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
    frame = be.result_frame(
        vertex.astype(array_dtype, copy=False),
        dist.astype(DISTANCE_DTYPE[kind], copy=False),
        reached,
        parent.astype(array_dtype, copy=False),
        has_parent,
    )
    return _with_id_dtype(frame, vertex_dtype)


def _with_id_dtype(frame, vertex_dtype):
    """Give ``vertex`` and ``parent`` the input's extension dtype (``Int64``...), if it had one."""
    if isinstance(vertex_dtype, np.dtype):
        return frame
    return frame.astype({"vertex": vertex_dtype, "parent": vertex_dtype})


def meta(backend_name: str, kind: str, vertex_dtype):
    """The empty frame that tells Dask the result's columns and dtypes."""
    empty = backends.get(backend_name).empty_result(numpy_dtype(vertex_dtype), DISTANCE_DTYPE[kind])
    return _with_id_dtype(empty, vertex_dtype)
