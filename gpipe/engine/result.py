"""One owner's traversal state turned into rows of ``vertex``, ``distance``, ``parent``.

String ids come back as strings: ``vertex`` and ``parent`` are gathered from the graph's sorted
ids by the backend's ``strings`` (Arrow's ``take`` with the missing parents as null indices, or
cuDF's), in the input's string dtype.

The road from a kernel's arrays to the result frame is on every query's clock, so it makes no
pass it can avoid. What does not change between queries, the local ids that get a row and
their ``vertex`` column, is worked out at the first query and kept on the partition
(:class:`Rows`). Nulls come straight from the kernels' sentinels (-1 hops or parent, +inf
distance) in the one pass that builds each column's null mask.

Dtypes (gpipe's one convention for ``gpipe.bfs``, ``gpipe.sssp`` and the ``_each`` queries,
README "The result"): ``distance`` float64 (NaN in pandas, null in cuDF, where unreached);
``parent`` the vertex dtype with nulls, as :func:`gpipe.engine.backend.parent_dtype` gives it in
pandas (``int64[pyarrow]`` for int64 ids: Dask's ``describe`` and ``quantile`` do not take
pandas' ``Int64``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from gpipe.engine import backend as backends
from gpipe.engine.sources import OwnerIds
from gpipe.io.validate import numpy_dtype

BFS = "bfs"
SSSP = "sssp"
DISTANCE_DTYPE = backends.DISTANCE_DTYPE  # float64 for both kinds


@dataclass(frozen=True)
class Rows:
    """What every result frame of one owner shares: which local ids get a row, and their ids.

    ``local``: int64 local ids of the present vertices, or None when every local id is present
    (then the arrays indexed by local id are the rows as they are). ``vertex``: the input id of
    each row, as :meth:`gpipe.engine.backend.Backend.shared_column` keeps it.
    """

    local: object
    vertex: object


def shared_rows(part, ids, vertex_dtype) -> Rows:
    """The :class:`Rows` of ``part``, computed at the first call and then kept on the partition.

    ``ids`` and ``vertex_dtype`` belong to the graph that ``part`` belongs to, so they are the
    same at every call.
    """
    if part.rows is None:
        be = backends.get(part.backend)
        arrays = be.kernels  # the array operations, none compiled at first use on GPU
        start, stop = part.offset, part.offset + part.n_local
        if isinstance(ids, OwnerIds):  # this owner's own ids: its rows are their first len(ids)
            local = None if part.present is None else arrays.arange(0, len(ids), dtype="int64")
            if be.strings.holds(ids.values):
                part.rows = Rows(local, be.strings.to_column(ids.values, vertex_dtype))
            else:
                part.rows = Rows(local, be.shared_column(arrays.astype(ids.values, numpy_dtype(vertex_dtype))))
            return part.rows
        if ids is not None and be.strings.holds(ids):  # renumbered: every id is present
            vertex = be.strings.take(ids, arrays.arange(start, stop, dtype="int64"))
            part.rows = Rows(None, be.strings.to_column(vertex, vertex_dtype))
            return part.rows
        if part.present is None:
            local = None
            vertex = arrays.arange(start, stop, dtype="int64") if ids is None else ids[start:stop]
        else:
            local = arrays.astype(arrays.flatnonzero(part.present), "int64")
            vertex = (arrays.astype(local, "int64", offset=start) if ids is None
                      else arrays.take(ids, arrays.astype(local, "int64", offset=start)))
        part.rows = Rows(local, be.shared_column(arrays.astype(vertex, numpy_dtype(vertex_dtype))))
    return part.rows


def owner_frame(part, ids, dist, parent, kind: str, vertex_dtype, input_parents=None):
    """Rows for the present vertices of ``part``, with input ids and nulls for the unreached.

    ``dist`` is int32 hops (-1 unreached) for BFS and float64 (+inf unreached) for SSSP;
    ``parent`` holds global ids (-1 none), or is None for a frame without the ``parent``
    column (``parents=False``). ``ids`` maps global ids back to input ids, or is
    None when the input ids are the global ids; an :class:`~gpipe.engine.sources.OwnerIds`
    holds this owner's own ids only, and then ``input_parents(parent)`` names the parents of
    the rows (:func:`gpipe.engine.owners.parent_ids.input_parents`, which asks their owners).
    The frame takes ``dist`` and ``parent`` over:
    it may hold their memory or overwrite them, so the caller must not use them afterwards.
    Returns once the device has finished the frame.
    """
    be = backends.get(part.backend)
    arrays = be.kernels  # the array operations, none compiled at first use on GPU
    shared = shared_rows(part, ids, vertex_dtype)
    strings = ids is not None and be.strings.holds(ids.values if isinstance(ids, OwnerIds) else ids)
    if shared.local is not None:
        dist = arrays.take(dist, shared.local)
        parent = None if parent is None else arrays.take(parent, shared.local)
    distance = dist  # result_frame makes float64 of it (BFS hops: -1 becomes NaN or null)
    if parent is None:
        frame = be.result_frame(shared.vertex, distance, None, None)
        if not strings:
            frame = _with_id_dtype(frame, vertex_dtype)
        be.synchronize()
        return frame
    if isinstance(ids, OwnerIds):
        parent, parent_missing = input_parents(parent)
        if strings:
            frame = be.result_frame(shared.vertex, distance, be.strings.to_column(parent, vertex_dtype), None)
        else:
            frame = _with_id_dtype(be.result_frame(shared.vertex, distance,
                                                   arrays.astype(parent, numpy_dtype(vertex_dtype)),
                                                   parent_missing), vertex_dtype)
        be.synchronize()
        return frame
    parent_missing = arrays.negative(parent)
    if strings:
        parent = be.strings.to_column(be.strings.take(ids, parent, parent_missing), vertex_dtype)
        frame = be.result_frame(shared.vertex, distance, parent, None)
    else:
        if ids is not None:
            parent = arrays.take(ids, parent)  # a missing parent (-1) picks the last id; the mask hides it
        parent = arrays.astype(parent, numpy_dtype(vertex_dtype))
        frame = _with_id_dtype(be.result_frame(shared.vertex, distance, parent, parent_missing),
                               vertex_dtype)
    # A traversal's task ends when its result is final on the device, so that the task's end
    # (what a query waits for, and what the dashboard shows) is the end of its work.
    be.synchronize()
    return frame


def _with_id_dtype(frame, vertex_dtype):
    """Give ``vertex`` and ``parent`` the input's extension dtype (``Int64``...), if it had one."""
    if isinstance(vertex_dtype, np.dtype):
        return frame
    return frame.astype({name: vertex_dtype for name in ("vertex", "parent") if name in frame.columns})


@functools.lru_cache(maxsize=None)
def meta(backend_name: str, kind: str, vertex_dtype, parents: bool = True):
    """The empty frame that tells Dask the result's columns and dtypes (no ``parent`` column
    when not ``parents``).

    Made once per backend, kind, dtype and column set (a cuDF one costs device calls), and
    shared by every result: Dask never writes to a meta.
    """
    be = backends.get(backend_name)
    if backends.is_string_dtype(vertex_dtype):
        return be.empty_result(vertex_dtype, parents)
    empty = be.empty_result(numpy_dtype(vertex_dtype), parents)
    return _with_id_dtype(empty, vertex_dtype)
