"""Per-source queries (``Graph.bfs_each``, ``Graph.sssp_each``): one traversal per source, in batches.

The sources are cut into batches of the kernels' width (``BFS_BATCH_WIDTH``; SSSP:
``SSSP_BATCH_WIDTH`` where the backend has one). Each batch is one Dask task, named
``gpipe-bfs-each`` or ``gpipe-sssp-each`` (:func:`dask.utils.key_split`), that traverses from
every source of the batch in one kernel call (gpipe/engine/compute/__init__.py has the contract) and
returns the batch's rows in long form: ``source, vertex, distance[, parent]``. The result is a
Dask DataFrame with one partition per batch, built lazily: nothing is traversed until a
partition is computed, so ``to_parquet`` of many sources holds one batch per worker thread at a
time (``k x n`` distances, and parents when asked for, plus the batch's rows).

A batch task depends on the graph's partition (its future on a cluster), so Dask runs it on a
worker that holds the partition: any copy of a one-owner graph's partition (:mod:`gpipe.graph`,
``replicas``; the first batch call makes the copies and waits for them), and it recomputes a
batch from lineage when its worker dies while a copy is left. A graph of several owners runs each batch through the multi-owner traversal, one source
after another, from a task that asks the cluster for them (``worker_client``).

Sources are checked on the client when the query is made: duplicates and ids not in the graph
raise InputError naming the id. Targets may be absent from the graph (their rows are null).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from gpipe.engine import backend as backends
from gpipe.engine import sources as source_ids
from gpipe.engine.result import BFS, SSSP
from gpipe.engine.tasks import run_task
from gpipe.errors import InputError, NegativeCycleError, on_undirected, plain
from gpipe.io import validate
from gpipe.partitioning import build

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


# ---------------------------------------------------------------------------------------------
# Sources and targets on the client
# ---------------------------------------------------------------------------------------------


def source_values(sources, *, strings: bool, what: str = "source") -> np.ndarray:
    """The ids of ``sources`` (a list, an array, a pandas/cuDF Series, a Dask Series or a
    one-column frame; a Dask collection is computed once) as a host array, in order.

    Integer ids come back as an int64/uint64 array, string ids as an object array of str.
    Raises InputError for ids of the wrong kind, nulls, or (for ``what="source"``) a repeat.
    """
    values = _host_values(sources)
    if values.dtype.kind in "iu" and not strings:
        checked = values
    elif values.size == 0:
        checked = np.empty(0, dtype=object if strings else np.int64)
    else:
        checked = validate.sources(list(values), strings=strings)
        if not strings:
            checked = _integer_array(checked)
    if what == "source" and checked.size:
        _raise_on_repeat(checked)
    return checked


def _host_values(sources) -> np.ndarray:
    if hasattr(sources, "dask") or hasattr(sources, "__dask_graph__"):
        sources = sources.compute()
    if hasattr(sources, "columns"):  # a one-column frame
        if len(sources.columns) != 1:
            raise InputError(f"sources as a frame must have one column, not {list(sources.columns)}")
        sources = sources[sources.columns[0]]
    if hasattr(sources, "to_pandas"):  # cuDF
        sources = sources.to_pandas()
    if isinstance(sources, pd.Series):
        if sources.isna().any():
            raise InputError("sources hold a null id")
        dtype = getattr(sources.dtype, "numpy_dtype", None)
        return sources.to_numpy(dtype=dtype if dtype is not None and dtype.kind in "iu" else None)
    if hasattr(sources, "get") and hasattr(sources, "__cuda_array_interface__"):  # CuPy
        return sources.get().ravel()
    if isinstance(sources, (str, bytes)) or np.ndim(sources) == 0:
        return np.array([sources], dtype=object)
    if isinstance(sources, (list, tuple)):
        array = np.array(sources, dtype=object)
        if array.size and all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
                              for v in sources):
            return _integer_array(array)
        return array.ravel()
    return np.asarray(sources).ravel()


def _integer_array(values) -> np.ndarray:
    try:
        return np.asarray(values, dtype=np.int64)
    except OverflowError:
        pass
    try:
        return np.asarray(values, dtype=np.uint64)
    except OverflowError:
        wide = next(int(v) for v in values if not -2**63 <= int(v) < 2**64)
        raise InputError(f"vertex {wide} is no integer id of int64 or uint64: it is in no graph") from None


def _raise_on_repeat(values) -> None:
    _, first, counts = np.unique(values, return_index=True, return_counts=True)
    repeated = np.flatnonzero(counts > 1)
    if repeated.size:
        value = values[np.sort(first[repeated])[0]]
        raise InputError(f"source vertex {plain(value)!r} is given more than once")


def target_column(backend_name, values, vertex_dtype):
    """The targets as given, a Series of the graph's vertex dtype (the ``vertex`` column of
    every batch with targets)."""
    if backends.is_string_dtype(vertex_dtype):
        series = pd.Series(list(values), dtype=vertex_dtype)
    else:
        given = np.asarray(values)
        cast = given.astype(validate.numpy_dtype(vertex_dtype))
        changed = np.flatnonzero(cast.astype(given.dtype) != given) if given.size else []
        if len(changed):  # it would name another vertex: a wrapped integer
            raise InputError(f"target vertex {plain(given[changed[0]])!r} does not fit the graph's "
                             f"id dtype {vertex_dtype}")
        series = pd.Series(cast)
        if not isinstance(vertex_dtype, np.dtype):
            series = series.astype(vertex_dtype)
    if backend_name == backends.GPU:
        return backends.get(backend_name).frames.Series(series)
    return series


# ---------------------------------------------------------------------------------------------
# The frame
# ---------------------------------------------------------------------------------------------


def frame(built, executor, kind: str, sources, *, directed: bool, limit, targets, parents: bool):
    """The lazy Dask DataFrame of a per-source query of the graph ``built`` (run by
    ``executor``; see :meth:`gpipe.Graph.bfs_each`)."""
    import dask
    import dask.dataframe as dd

    values = source_values(sources, strings=built.string_ids)
    target_values = None
    if targets is not None:
        target_values = source_values(targets, strings=built.string_ids, what="target")
    query = Query(kind, built.backend, built.vertex_dtype, limit, parents, built.negative_weights,
                  None, None, undirected=not directed)
    if target_values is not None:
        query = replace(query, targets=source_ids.global_ids_of(built, executor, target_values, None),
                        target_column=target_column(built.backend, target_values, built.vertex_dtype))
    empty = meta(query)
    if values.size == 0:
        return dd.from_pandas(empty, npartitions=1) if built.backend == backends.CPU else \
            dd.from_pandas(empty.to_pandas(), npartitions=1).to_backend("cudf")
    found = source_ids.global_ids_of(built, executor, values)
    kernels = backends.get(built.backend).kernels
    width = kernels.BFS_BATCH_WIDTH if kind == BFS else getattr(kernels, "SSSP_BATCH_WIDTH",
                                                                 kernels.BFS_BATCH_WIDTH)
    batches = [found[i:i + width] for i in range(0, found.size, width)]
    token = uuid.uuid4().hex
    name = f"{NAMES[kind]}-{token}"
    # One key group per batch ((name-i, 0)): the scheduler then places each batch next to
    # its partition, as it does tasks with dependencies, rather than as "root-ish" tasks of
    # one large group, which it hands to any free worker with no regard for where their data
    # is (copying the graph there). key_split of every batch is still NAMES[kind].
    keys = [(f"{name}-{i}", 0) for i in range(len(batches))]
    # One task of the query, shared by every batch, so a distance table's targets are sent once.
    query = dask.delayed(query, name=f"gpipe-each-query-{token}", traverse=False)
    if built.layout.n_owners == 1:
        copies = build.copies(built)
        if not hasattr(copies[0], "key"):  # in this process: the Partition itself, kept out of Dask's hashing
            copies = [dask.delayed(copies[0], name=f"gpipe-graph-{token}", traverse=False)]
        tasks = [dask.delayed(run_task, pure=False)(one_owner_batch, copies[i % len(copies)], batch,
                                                    query, dask_key_name=key)
                 for i, (batch, key) in enumerate(zip(batches, keys))]
    else:
        stub = replace(built, ids=None, executor=None, present_bits=None, parts=None, replicas=None,
                       owner_ids=None)
        batch_fn = MultiOwnerBatch(stub, built.parts, built.ids, list(executor.workers),
                                   owner_ids=built.owner_ids)
        tasks, after = [], None
        for i, (batch, key) in enumerate(zip(batches, keys)):
            tasks.append(dask.delayed(batch_fn, pure=False)(batch, values[i * width:(i + 1) * width],
                                                            query, after, dask_key_name=key))
            if built.nccl_group is not None:
                # Over NCCL the batches take turns: two traversals at once over one communicator
                # would interleave their collectives (a batch's own lock is its worker's only).
                after = dask.delayed(_ended, pure=False)(tasks[-1], dask_key_name=f"{name}-ended-{i}")
    return dd.from_delayed(tasks, meta=empty, verify_meta=False)


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
    values = values.astype(validate.numpy_dtype(vertex_dtype), copy=False)
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


def _ended(_rows) -> None:
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
