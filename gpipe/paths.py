"""Shortest paths from one source as rows: ``target``, ``step``, ``vertex`` (what ``Graph.path``
and ``Graph.paths`` return).

One owner: the traversal and the walk run in one task where the graph is. With one target the
kernels stop as soon as it is settled (BFS after the level that reaches it; delta-stepping and
near-far once the threshold passes its distance). The walk then follows the parent array where
it lies (host or device), for all targets at once: the root is made to point at itself, and each
step gathers ``parent[current]`` for every target (one gather of as many ids as targets), so the
steps are the longest path's hops, never the vertices or the edges. A BFS knows that number
beforehand (the targets' largest distance, one read), so its gathers run without a host read
in between and their results come back at the end; an SSSP's hop count is not known, so each
step's ids come back (a few bytes, one device round trip per hop) and the walk ends when every
target's chain has met the source. The alternatives cost more on a GPU: copying the parent
array to the host moves 8 bytes per vertex (134 MB at 2^24 vertices, milliseconds) to use a
handful; pointer jumping over the whole array makes log2(n) passes over n entries.

Several owners: the traversal runs through the multi-owner path to the end (no early stop),
its result frames (with parents as input ids) are gathered on the client and the chains are
followed there, vectorized the same way over positions in the gathered frame.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gpipe.engine import backend as backends
from gpipe.io.validate import numpy_dtype


def chains(steps: list, source) -> tuple:
    """Rows of the paths in ``steps``: ``(column, step, vertex)`` host arrays, ordered by
    column (target), then step.

    ``steps[k][i]`` is the vertex k hops up the parent chain of target i (``steps[0]`` the
    targets), each chain ending at ``source`` and staying there (the root points at itself).
    Target i's path has ``L_i + 1`` vertices, L_i the first k with ``steps[k][i] == source``;
    its row at step s (0 = the source) holds ``steps[L_i - s][i]``.
    """
    matrix = np.stack([np.asarray(s) for s in steps])
    hops = (matrix == source).argmax(axis=0)
    column = np.repeat(np.arange(matrix.shape[1]), hops + 1)
    starts = np.concatenate(([0], np.cumsum(hops + 1)[:-1]))
    step = np.arange(column.size) - np.repeat(starts, hops + 1)
    return column, step, matrix[hops[column] - step, column]


def owner_paths(part, kind, source, targets, negative_weights, vertex_dtype):
    """The paths frame of a one-owner graph, traversed and walked in this task.

    ``source`` and ``targets``: global ids, or :class:`gpipe.engine.sources.InputIds` (looked up here;
    InputError naming a source or target not in the graph). Targets not reached have no rows.
    """
    be = backends.get(part.backend)
    targets, column, step, vertex = _owner_rows(part, kind, source, targets, negative_weights)
    return _frame(be, part.ids, targets[column], step, vertex, vertex_dtype)


def owner_path(part, kind, source, target, negative_weights, vertex_dtype) -> list:
    """The one path of :func:`owner_paths` as a list of input ids (Python ints or strings),
    empty when the target is not reached: no frame is built for it."""
    be = backends.get(part.backend)
    _, _, _, vertex = _owner_rows(part, kind, source, target, negative_weights)
    ids = part.ids
    if ids is not None and be.strings.holds(ids):
        return be.strings.to_host(be.strings.take(ids, be.xp.asarray(vertex))).tolist()
    if ids is not None:
        vertex = be.to_host(be.kernels.take(ids, be.xp.asarray(vertex)))
    return vertex.astype(numpy_dtype(vertex_dtype)).tolist()


def _owner_rows(part, kind, source, targets, negative_weights) -> tuple:
    """``(targets, column, step, vertex)``: the targets' global ids (host) and the rows of
    :func:`chains` for the reached ones, ``column`` indexing ``targets``."""
    from gpipe.engine import outcome, traverse
    from gpipe.engine import sources as source_ids
    from gpipe.engine.result import BFS

    be = backends.get(part.backend)
    source = source_ids.global_ids(part.backend, part.ids, source)
    targets = np.asarray(source_ids.global_ids(part.backend, part.ids, targets, "target"), dtype=np.int64)
    root = int(source[0])
    target = int(targets[0]) if np.unique(targets).size == 1 else -1  # one target: stop there
    if kind == BFS:
        dist, parent = traverse.bfs_arrays(part, source, None, target=target)
        reached = be.to_host(be.kernels.take(dist, be.xp.asarray(targets))) >= 0
    else:
        dist, parent = traverse.sssp_arrays(part, source, negative_weights, target=target)
        outcome.raise_if_negative_loop_reached(part, part.ids, dist)
        reached = np.isfinite(be.to_host(be.kernels.take(dist, be.xp.asarray(targets))))
    column, step, vertex = walk(be, kind, dist, parent, root, targets[reached])
    return targets, np.flatnonzero(reached)[column], step, vertex


def walk(be, kind, dist, parent, root: int, targets: np.ndarray) -> tuple:
    """:func:`chains` of the reached ``targets`` (host global ids) up ``parent`` (on the
    backend's device; its root entry is overwritten)."""
    if targets.size == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64)
    xp, arrays = be.xp, be.kernels
    arrays.scatter(parent, xp.asarray(np.array([root], dtype=np.int64)), root)
    current = xp.asarray(targets)
    if kind == "bfs":  # hop counts are the distances: no read until the end
        hops = int(be.to_host(arrays.take(dist, current)).max())
        steps = [current]
        for _ in range(hops):
            steps.append(arrays.take(parent, steps[-1]))
        return chains([be.to_host(s) for s in steps], root)
    steps = [targets]
    while not (steps[-1] == root).all():
        if len(steps) > dist.size:
            raise AssertionError("a parent chain does not reach the source")
        current = arrays.take(parent, current)
        steps.append(be.to_host(current))
    return chains(steps, root)


def _frame(be, ids, targets, step, vertex, vertex_dtype):
    """The rows as a frame of the backend's kind, ids given back as input ids."""
    frame = {"target": _input_ids(be, ids, targets, vertex_dtype),
             "step": np.asarray(step, dtype=np.int64),
             "vertex": _input_ids(be, ids, vertex, vertex_dtype)}
    if be.name == backends.GPU:
        import cudf

        return cudf.DataFrame({name: (cudf.Series(col) if isinstance(col, np.ndarray) else col)
                               for name, col in frame.items()})
    return pd.DataFrame(frame)


def _input_ids(be, ids, global_ids, vertex_dtype):
    """Input ids of host ``global_ids``: a column of ``vertex_dtype``."""
    positions = be.xp.asarray(np.asarray(global_ids, dtype=np.int64))
    if ids is not None and be.strings.holds(ids):
        taken = be.strings.take(ids, positions)
        column = be.strings.to_column(taken, vertex_dtype)
        return column.reset_index(drop=True) if hasattr(column, "reset_index") else column
    values = positions if ids is None else be.kernels.take(ids, positions)
    values = be.kernels.astype(values, numpy_dtype(vertex_dtype))
    if be.name == backends.GPU:
        import cudf

        return cudf.Series(values)
    return pd.Series(values, dtype=vertex_dtype)


def empty(backend_name, vertex_dtype):
    """The zero-row paths frame (a Dask ``meta``)."""
    be = backends.get(backend_name)
    if backends.is_string_dtype(vertex_dtype):
        ids = be.strings.empty(vertex_dtype)
        columns = {"target": ids, "step": np.empty(0, dtype=np.int64), "vertex": ids.copy()}
        if be.name == backends.GPU:
            import cudf

            return cudf.DataFrame(columns)
        return pd.DataFrame(columns)
    none = np.empty(0, dtype=np.int64)
    return _frame(be, None, none, none, none, vertex_dtype)


def from_result(result, source, targets, frame_type) -> object:
    """The paths frame from a whole traversal's result (``vertex``, ``distance``, ``parent``
    in input ids; pandas or cuDF, gathered on the client), for graphs over several owners.

    Positions in the result stand for vertices: ``parent`` becomes the position of the parent
    (the source points at itself), and the chains are followed for all targets at once.
    """
    if not isinstance(result, pd.DataFrame):
        result = result.to_pandas()
    vertex = pd.Index(result["vertex"])
    parent_pos = vertex.get_indexer(pd.Index(result["parent"]))
    root = int(vertex.get_indexer([source])[0])
    parent_pos[root] = root
    target_pos = vertex.get_indexer(pd.Index(list(targets), dtype=vertex.dtype))
    reached = result["distance"].notna().to_numpy()[target_pos]
    current = target_pos[reached]
    steps = [current]
    while current.size and not (current == root).all():
        if len(steps) > len(result):
            raise AssertionError("a parent chain does not reach the source")
        current = parent_pos[current]
        steps.append(current)
    if current.size:
        column, step, at = chains(steps, root)
    else:
        column = step = at = np.empty(0, dtype=np.int64)
    ids = result["vertex"].reset_index(drop=True)
    rows = pd.DataFrame({
        "target": ids.iloc[target_pos[np.flatnonzero(reached)[column]]].reset_index(drop=True),
        "step": step.astype(np.int64),
        "vertex": ids.iloc[at].reset_index(drop=True),
    })
    if frame_type is not pd.DataFrame:
        import cudf

        return cudf.from_pandas(rows)
    return rows
