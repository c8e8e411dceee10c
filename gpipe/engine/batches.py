"""The batches of a per-source query (``Graph.bfs_each``, ``Graph.sssp_each``): what each batch
task runs where the graph lives, and the rows it returns.

:mod:`gpipe.each` makes the query's lazy frame (its sources checked, one task per batch); each
task here traverses from every source of its batch in one kernel call on a one-owner graph's
partition (:func:`one_owner_batch`, gpipe/engine/compute/__init__.py has the kernels'
contract), or from one source after another through the multi-owner traversal
(:class:`MultiOwnerBatch`), and returns the batch's rows in long form: ``source, vertex,
distance[, parent]`` (:func:`meta` gives their columns and dtypes).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from gpipe.engine import backend as backends
from gpipe.engine import sources as source_ids
from gpipe.engine.result import BFS, SSSP, numpy_dtype
from gpipe.errors import NegativeCycleError, on_undirected, plain

NAMES = {BFS: "gpipe-bfs-each", SSSP: "gpipe-sssp-each"}
DISTANCE = backends.DISTANCE_DTYPE  # float64 for both kinds, as gpipe.bfs and gpipe.sssp


@dataclass(frozen=True)
class Query:
    """What every batch of one per-source query shares (small: it travels with each task)."""

    kind: str
    backend: str
    vertex_dtype: object
    limit: object  # BFS: depth limit (-1 none); SSSP: max distance (None: none)
    parents: bool
    negative_weights: bool
    targets: object  # global ids of the targets (int64, -1 absent), or None
    target_column: object  # the targets as given, a Series of the vertex dtype, or None
    undirected: bool = False  # named in a NegativeCycleError: its negative edges are the cycles


def meta(query: Query):
    """The zero-row frame of a query's result: its columns and dtypes."""
    be = backends.get(query.backend)
    vertex_dtype = query.vertex_dtype
    ids = _empty_ids(vertex_dtype)
    columns = {"source": ids, "vertex": ids.copy(), "distance": pd.Series(np.empty(0, dtype=DISTANCE))}
    if query.parents:
        # cuDF holds nulls in the plain dtype: its meta's parent is the vertex dtype itself
        columns["parent"] = ids.copy() if be.name == backends.GPU else _nullable_ids(ids.copy(), vertex_dtype)
    empty = pd.DataFrame(columns)
    if be.name == backends.GPU:
        return be.frames.from_pandas(empty)
    return empty


def _empty_ids(vertex_dtype) -> pd.Series:
    if backends.is_string_dtype(vertex_dtype):
        return pd.Series([], dtype=vertex_dtype)
    return pd.Series(np.empty(0, dtype=vertex_dtype) if isinstance(vertex_dtype, np.dtype) else [],
                     dtype=vertex_dtype)


def _nullable_ids(series, vertex_dtype):
    """The parent column's pandas dtype (:func:`gpipe.engine.backend.parent_dtype`): NumPy integers'
    Arrow twins (``int64[pyarrow]``...), strings and extension dtypes as they are."""
    return series.astype(backends.parent_dtype(vertex_dtype))


def _nullable(be, values, missing):
    """Integer ids ``values`` with nulls where ``missing``: pandas' Arrow array of their dtype,
    or cuDF nulls."""
    if be.name == backends.GPU:
        series = be.frames.Series(values)
        return series.mask(be.frames.Series(missing)) if missing is not None else series
    return backends.nullable_ids(values, missing)


def _distance(be, distance, missing):
    """A batch's distances (int32 hops or float64) as the result's float64 column: NaN where
    ``missing`` in pandas, null in cuDF (whose cast, libcudf's, is compiled and keeps nulls)."""
    if be.name == backends.GPU:
        series = be.frames.Series(distance)
        if missing is not None:
            series = series.mask(be.frames.Series(missing))
        return series.astype(DISTANCE)
    distance = distance.astype(DISTANCE, copy=False)  # the batch's rows: the table's is a copy already
    if missing is not None:
        distance[missing] = np.nan
    return distance


# ---------------------------------------------------------------------------------------------
# One batch, where the partition is
# ---------------------------------------------------------------------------------------------


def one_owner_batch(part, sources, query: Query):
    """The rows of one batch of sources (global ids) of a one-owner graph, traversed here."""
    be = backends.get(part.backend)
    xp = part.xp
    kernels = be.kernels
    batch = xp.asarray(np.asarray(sources, dtype=np.int64))
    mask = query.targets is None and be.name != backends.CPU  # only the GPU's nonzero needs it
    if query.kind == BFS:
        dist = kernels.bfs_batch(part.indptr, part.indices, batch, query.limit, symmetric=part.symmetric)
        parent = (kernels.bfs_batch_parents(part.indptr, part.indices, dist, batch, symmetric=part.symmetric)
                  if query.parents else None)
        reached = dist >= 0 if mask else None
    else:
        # max_distance is Dijkstra's cutoff with negative weights too (the kernels drop every
        # candidate above it): a negative self-loop counts only where the bounded search
        # reaches its vertex.
        try:
            dist, parent = kernels.sssp_batch(part.indptr, part.indices, part.weights, batch,
                                              symmetric=part.symmetric,
                                              negative_weights=query.negative_weights,
                                              max_distance=query.limit)
        except NegativeCycleError as error:
            index = getattr(error, "source_index", 0)
            raise _negative_cycle(
                "a negative-weight cycle is reachable from source "
                f"{_input_id(part, int(sources[index]))!r}", query) from None
        _raise_if_negative_loop_reached(part, sources, dist, query)
        reached = xp.isfinite(dist) if mask else None
    return batch_rows(part, part.ids, np.asarray(sources, dtype=np.int64), dist,
                      parent if query.parents else None, reached, query)


def _input_id(part, global_id):
    return global_id if part.ids is None else source_ids.input_id(part.backend, part.ids, global_id)


def _negative_cycle(message, query: Query) -> NegativeCycleError:
    error = NegativeCycleError(message)
    return on_undirected(error) if query.undirected else error


def _raise_if_negative_loop_reached(part, sources, dist, query: Query) -> None:
    """NegativeCycleError naming the first source whose traversal reaches a negative self-loop
    (the CSR keeps no self-loops, so the kernels never see them)."""
    loops = part.negative_loops
    if loops is None or loops.size == 0:
        return
    hit = part.xp.isfinite(dist[:, loops]).any(axis=1)
    rows = np.flatnonzero(backends.get(part.backend).to_host(hit))
    if rows.size:
        raise _negative_cycle(
            "a negative-weight cycle is reachable from source "
            f"{_input_id(part, int(sources[rows[0]]))!r}: the self-loop on vertex "
            f"{_input_id(part, int(backends.get(part.backend).to_host(loops[0])))!r}", query)


def batch_rows(part, ids, sources, dist, parent, reached, query: Query):
    """Long-form rows of one batch from its ``k x n`` tables (global ids; ``ids`` maps them to
    input ids, None where they are the input ids)."""
    be = backends.get(part.backend)
    xp = part.xp
    k = sources.shape[0]
    sources_dev = xp.asarray(sources)
    parents = None
    if query.targets is None and be.name == backends.CPU:
        from gpipe.engine.compute.cpu_batch import reached_rows

        source, vertex, distance, parents = reached_rows(dist, sources, parent if query.parents else None)
        missing = None
        vertex_column = _ids_column(be, ids, vertex, None, query.vertex_dtype)
    elif query.targets is None:
        rows, vertex = xp.nonzero(reached)
        source = sources_dev[rows]
        distance = dist[rows, vertex]
        missing = None
        vertex_column = _ids_column(be, ids, vertex, None, query.vertex_dtype)
    else:
        targets = xp.asarray(query.targets)
        present = targets >= 0
        column = xp.maximum(targets, 0)
        t = targets.shape[0]
        rows = xp.repeat(xp.arange(k), t)
        vertex = xp.tile(column, k)
        source = sources_dev[rows]
        distance = dist[rows, vertex]
        unreached = distance < 0 if query.kind == BFS else ~xp.isfinite(distance)
        missing = unreached | ~xp.tile(present, k)
        positions = np.tile(np.arange(t), k)
        vertex_column = query.target_column.take(be.xp.asarray(positions) if be.name == backends.GPU
                                                 else positions).reset_index(drop=True)
    columns = {"source": _ids_column(be, ids, source, None, query.vertex_dtype),
               "vertex": vertex_column}
    columns["distance"] = _distance(be, distance, missing)
    if query.parents:
        if parents is None:
            parents = parent[rows, vertex]
        parent_missing = parents < 0
        if missing is not None:
            parent_missing |= missing
        columns["parent"] = _ids_column(be, ids, xp.maximum(parents, 0), parent_missing,
                                        query.vertex_dtype)
    if be.name == backends.GPU:
        frame = be.frames.DataFrame(columns)
    else:  # the frame takes the columns over (pandas would otherwise copy every one)
        frame = pd.DataFrame(columns, copy=False)
    be.synchronize()
    return frame


def _ids_column(be, ids, positions, missing, vertex_dtype):
    """Input ids of global ids ``positions`` as a Series of the vertex dtype (nullable where
    ``missing`` is given: null where it is True)."""
    if ids is not None and be.strings.holds(ids):
        return be.strings.to_column(be.strings.take(ids, positions, missing), vertex_dtype)
    values = positions if ids is None else be.kernels.take(ids, positions)
    values = values.astype(numpy_dtype(vertex_dtype), copy=False)
    if missing is not None:
        column = _nullable(be, values, missing)
        if be.name == backends.GPU:
            return column
        return pd.Series(column, copy=False).astype(vertex_dtype if not isinstance(vertex_dtype, np.dtype)
                                                    else column.dtype)
    if be.name == backends.GPU:
        return be.frames.Series(values)
    series = pd.Series(values, copy=False)
    return series if isinstance(vertex_dtype, np.dtype) else series.astype(vertex_dtype)


# ---------------------------------------------------------------------------------------------
# Several owners: each source through the multi-owner traversal
# ---------------------------------------------------------------------------------------------


class MultiOwnerBatch:
    """The task of one batch of a multi-owner graph: one multi-owner traversal per source,
    asked of the cluster from the task (the owners hold the partitions; this worker gathers
    the per-source frames and keeps the reached rows).

    It holds the graph's partition futures while the frame that calls it lives, so that the
    partitions outlive a graph object dropped before the frame is computed; what is sent to
    the scheduler holds their keys only (:meth:`__reduce__`), so no partition moves to the
    batch's worker.
    """

    def __init__(self, stub, parts, ids, workers, keys=None, owner_ids=None):
        self.stub = stub
        self.parts = parts  # the futures (None once unpickled on a worker)
        self.part_keys = keys[0] if keys else [p.key for p in parts]
        self.ids_key = keys[1] if keys else (None if ids is None else ids.key)
        self.owner_ids_keys = keys[2] if keys else (None if owner_ids is None else [c.key for c in owner_ids])
        self.ids = ids
        self.owner_ids = owner_ids
        self.workers = workers
        self.__name__ = "multi_owner_batch"

    def __reduce__(self):
        return MultiOwnerBatch, (self.stub, None, None, self.workers,
                                 (self.part_keys, self.ids_key, self.owner_ids_keys))

    def __call__(self, sources, values, query: Query, after=None):
        """The batch's rows; ``after``, the end of the batch before it where batches take
        turns, only orders them."""
        from distributed import Future, worker_client

        from gpipe.engine import traverse
        from gpipe.engine.execution import OnCluster

        stub = self.stub
        pieces = []
        with worker_client() as client:
            executor = OnCluster(client, self.workers)
            parts = [Future(key, client) for key in self.part_keys]
            ids = None if self.ids_key is None else Future(self.ids_key, client)
            owner_ids = (None if self.owner_ids_keys is None
                         else [Future(key, client) for key in self.owner_ids_keys])
            built = replace(stub, parts=parts, ids=ids, executor=executor, owner_ids=owner_ids)
            for s, value in zip(np.asarray(sources, dtype=np.int64), values):
                one = np.array([s], dtype=np.int64)
                try:
                    if query.kind == BFS:
                        handles = traverse.bfs_frames(executor, built, one, None if query.limit < 0 else query.limit)
                    else:
                        handles = traverse.sssp_frames(executor, built, one, max_distance=query.limit)
                    frames = executor.gather(handles)
                except NegativeCycleError as error:
                    raise _negative_cycle(f"{error} (source {plain(value)!r})", query) from None
                pieces.append(_long_rows(frames, plain(value), query, stub,
                                         by_vertex=self.owner_ids_keys is not None))
        be = backends.get(stub.backend)
        return be.frames.concat(pieces, ignore_index=True) if pieces else meta(query)


def ended(_rows) -> None:
    """Nothing: a task that ends when a batch does, so that the next batch can wait for it
    without its rows coming along."""
    return None


def _long_rows(frames, source_value, query: Query, stub, by_vertex: bool = False):
    """One source's per-owner result frames (vertex, distance, parent) as long-form rows;
    ``source_value``: the source's input id. The owners' rows follow their global ids, which
    are the input ids' order unless each owner numbered its own (``by_vertex``: then they are
    sorted by vertex here)."""
    be = backends.get(stub.backend)
    whole = be.frames.concat(frames, ignore_index=True)
    reached = whole[whole["distance"].notna()]
    if query.kind == SSSP and query.limit is not None:
        reached = reached[reached["distance"] <= query.limit]
    if query.targets is None:
        result = (reached.sort_values("vertex") if by_vertex else reached).reset_index(drop=True)
    else:
        table = query.target_column.to_frame("vertex")
        table["_order"] = be.frames.Series(np.arange(len(table)))
        result = table.merge(reached, on="vertex", how="left").sort_values("_order")
        result = result.drop(columns="_order").reset_index(drop=True)
    id_dtype = result["vertex"].dtype
    result.insert(0, "source", be.frames.Series([source_value] * len(result), dtype=id_dtype))
    if not query.parents:
        result = result.drop(columns="parent")
    return result.astype(meta(query).dtypes.to_dict())
