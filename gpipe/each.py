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
This module is the query's API side (sources, targets, the lazy frame); what a batch task runs
and the rows it makes are the engine's (:mod:`gpipe.engine.batches`).
"""

from __future__ import annotations

import uuid
from dataclasses import replace

import numpy as np
import pandas as pd

from gpipe.engine import backend as backends
from gpipe.engine import sources as source_ids
from gpipe.engine.batches import NAMES, MultiOwnerBatch, Query, ended, meta, one_owner_batch
from gpipe.engine.result import BFS
from gpipe.engine.tasks import run_task
from gpipe.errors import InputError, plain
from gpipe.io import validate
from gpipe.partitioning import build

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
                after = dask.delayed(ended, pure=False)(tasks[-1], dask_key_name=f"{name}-ended-{i}")
    return dd.from_delayed(tasks, meta=empty, verify_meta=False)
