"""Traversal drivers: BFS and SSSP over the partitions of a built graph.

One owner: the whole traversal runs inside a single call on its worker (no scheduler round
trip per level), in one kernel call where the backend has a whole-traversal kernel
(direction-optimizing BFS; delta-stepping or near-far SSSP), else as a loop over the per-level
kernels.

Several owners: one long call per owner, all started together, level-synchronous, talking
over NCCL (GPU owners, one per device) or Dask's comms: the engine in :mod:`gpipe.engine.owners`.

``max_distance`` is Dijkstra's cutoff on every path, whatever the weights: the relaxations drop
a candidate distance above it (one owner: the ``bound`` of ``sssp_relax`` and the batch kernels;
several: the bound of the owner state), so the search never extends a path beyond the cutoff,
every reached vertex's parent is reached, and only a negative cycle (or negative self-loop) that
this bounded search reaches is raised.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import numpy as np

from gpipe.engine import backend as backends
from gpipe.engine import sources as source_ids
from gpipe.engine.compute import cpu_scipy
from gpipe.engine.outcome import cycle_check_due, has_parent_cycle, raise_if_negative_loop_reached, report_end
from gpipe.engine.owners.bfs import bfs_thresholds
from gpipe.engine.owners.run import start_bfs, start_sssp
from gpipe.engine.partition import Partition
from gpipe.engine.result import BFS, SSSP, owner_frame
from gpipe.errors import NegativeCycleError
from gpipe.watch import progress

@dataclass
class State:
    """One owner's traversal: distances, parents (global ids), the frontier (local ids)."""

    dist: object
    parent: object
    frontier: object


def bfs_frames(executor, built, sources: np.ndarray, depth_limit: int | None,
        stats: list | None = None, *, parents: bool = True) -> list:
    """Handles to the per-owner result frames of a BFS from global ids ``sources`` (not waited
    for, unless ``stats`` is given); without their ``parent`` column when not ``parents`` (one
    owner: no parent array is made; several: each owner leaves the column out of its frame).

    With several owners the level loop takes its direction thresholds from the Dask config
    ``gpipe.bfs-direction`` (:func:`bfs_thresholds`), read here on the client. When ``stats``
    is a list, it receives one handle per owner to that owner's level statistics
    (:class:`gpipe.engine.owners.messages.OwnerSteps`); with one owner it is left empty. Asking for them
    costs one small task per owner (the owner task returns ``(frame, stats)``, split where it
    ran). ``depth_limit`` is None or what :func:`gpipe.io.validate.depth_limit` returned: the
    doors (:meth:`gpipe.Graph.bfs`, :func:`gpipe.bfs`) check it, the engine does not.
    """
    if built.layout.n_owners == 1:  # the partition keeps the ids it needs (Partition.ids)
        return [executor.query(_bfs_one_owner, built.parts[0], sources, depth_limit,
                               built.vertex_dtype, parents, owner=0)]
    with_stats = stats is not None
    handles = start_bfs(executor, built, sources, depth_limit, bfs_thresholds(), with_stats,
                         parents)
    return handles if not with_stats else _split_stats(executor, handles, stats)


def sssp_frames(executor, built, sources: np.ndarray, stats: list | None = None, *,
         parents: bool = True, max_distance: float | None = None) -> list:
    """Handles to the per-owner result frames of an SSSP from global ids ``sources`` (not waited
    for, unless ``stats`` is given).

    ``parents=False`` leaves the ``parent`` column out (one owner, non-negative weights: no
    parent array is made). ``max_distance``: Dijkstra's cutoff on every path: a candidate
    distance above it is never accepted (so farther vertices are unreached, every reached
    vertex's parent is reached, and the search stops early); with negative weights a negative
    cycle is raised only when this bounded search reaches it.

    With several owners and a ``stats`` list, one handle per owner to its
    :class:`gpipe.engine.owners.messages.OwnerSteps` is appended to it (for benchmarks; each
    costs a small task on the owner's worker). One owner appends nothing.
    """
    if built.layout.n_owners == 1:
        return [executor.query(_sssp_one_owner, built.parts[0], sources, built.negative_weights,
                               built.vertex_dtype, parents, max_distance, owner=0)]
    with_stats = stats is not None
    handles = start_sssp(executor, built, sources, with_stats, parents, max_distance)
    return handles if not with_stats else _split_stats(executor, handles, stats)


def _split_stats(executor, handles, stats: list) -> list:
    """The frame handles of owner tasks that returned ``(frame, stats)``; the stats handles go
    to ``stats``. Waits for the frames."""
    frames = [executor.submit(_item_or_none, h, 0, owner=p) for p, h in enumerate(handles)]
    stats.extend(executor.submit(_item_or_none, h, 1, owner=p) for p, h in enumerate(handles))
    executor.wait(frames)
    return frames


def _item_or_none(result, index):
    """``result[index]``; None for an owner that stopped because a peer failed (no result)."""
    return None if result is None else result[index]


# --- the steps of a round, and whole one-owner traversals, on an owner's worker ------------


def _initial_state(part: Partition, local_sources, kind, parents=True):
    xp = part.xp
    arrays = backends.get(part.backend).kernels  # full and scatter: none compiled at first use on GPU
    local_sources = xp.asarray(np.unique(local_sources).astype(np.int64))
    if kind == BFS:
        dist = arrays.full(part.n_local, -1, "int32")
        arrays.scatter(dist, local_sources, 0)
    else:
        dist = arrays.full(part.n_local, np.inf, "float64")
        arrays.scatter(dist, local_sources, 0.0)
    parent = arrays.full(part.n_local if parents else 0, -1, "int64")  # empty: none written
    return State(dist, parent, local_sources)


def _bfs_one_owner(part: Partition, sources, depth_limit, vertex_dtype, parents=True):
    """The whole BFS of a one-owner graph, in this task (``sources``: global ids, or
    :class:`gpipe.engine.sources.InputIds`, looked up in the ids the partition keeps)."""
    sources = source_ids.global_ids(part.backend, part.ids, sources)
    reporter = _start_one_owner(BFS, sources)
    dist, parent = bfs_arrays(part, sources, depth_limit, parents=parents)
    _report_one_owner(reporter, part, dist)
    return owner_frame(part, part.ids, dist, parent, BFS, vertex_dtype)


def _sssp_one_owner(part: Partition, sources, negative_weights, vertex_dtype, parents=True,
                    max_distance=None):
    """The whole SSSP of a one-owner graph, in this task (``sources`` as for
    :func:`_bfs_one_owner`). Raises NegativeCycleError for a negative cycle, a negative
    self-loop included, that the search bounded by ``max_distance`` reaches."""
    sources = source_ids.global_ids(part.backend, part.ids, sources)
    reporter = _start_one_owner(SSSP, sources)
    dist, parent = sssp_arrays(part, sources, negative_weights, max_distance=max_distance,
                               parents=parents)
    raise_if_negative_loop_reached(part, part.ids, dist)  # before the end: a raise reports failed
    _report_one_owner(reporter, part, dist)
    return owner_frame(part, part.ids, dist, parent, SSSP, vertex_dtype)


def _start_one_owner(kind, sources) -> progress.Reporter:
    """The reporter of a one-owner traversal, its start reported (one event, no device sync)."""
    reporter = progress.Reporter(uuid.uuid4().hex, kind)
    reporter.start(len(sources))
    return reporter


def _report_one_owner(reporter: progress.Reporter, part: Partition, dist) -> None:
    """The end of a one-owner traversal as a progress event, if anyone looks (:func:`_report_end`;
    an SSSP's steps are not counted by its one-kernel search)."""
    report_end(reporter, reporter.algorithm, part.backend, dist)


def bfs_arrays(part: Partition, sources, depth_limit=None, *, target=-1, parents=True,
               stats=None):
    """BFS over a one-owner partition from global ids ``sources``: ``(dist int32, parent int64)``.

    ``dist`` is -1 and ``parent`` -1 where unreached. The arrays stay on the partition's device.
    On a symmetric (undirected, one-owner) partition the kernels may go direction-optimizing.
    ``target`` (a global id, -1: none): stop after the level that reaches it. ``parents=False``:
    ``parent`` is None and none is allocated. ``stats`` (a dict) receives ``levels``.
    """
    kernels = backends.get(part.backend).kernels
    xp = part.xp
    sources = xp.asarray(np.unique(sources).astype(np.int64))
    depth = -1 if depth_limit is None else depth_limit
    if _scipy_answers(part, "bfs", stats):  # a fresh Numba cache: not waiting for the kernels
        return cpu_scipy.bfs(part.indptr, part.indices, sources, depth, parents=parents)
    if hasattr(kernels, "bfs"):
        return kernels.bfs(part.indptr, part.indices, sources, depth, symmetric=part.symmetric,
                           target=int(target), parents=parents, stats=stats)
    state = _initial_state(part, sources, BFS, parents)
    level = 0
    while state.frontier.size and (depth_limit is None or level < depth_limit):
        if target >= 0 and int(state.dist[target]) >= 0:
            break
        state.frontier, _, _ = kernels.bfs_expand(
            part.indptr, part.indices, 0, state.frontier, state.dist, state.parent, level, False
        )
        level += 1
    if stats is not None:
        stats["levels"] = level
    return state.dist, (state.parent if parents else None)


def sssp_arrays(part: Partition, sources, negative_weights: bool, *, target=-1,
                max_distance=None, parents=True, stats=None):
    """SSSP over a one-owner partition from global ids ``sources``: ``(dist float64, parent int64)``.

    ``dist`` is +inf and ``parent`` -1 where unreached. Raises NegativeCycleError for a
    reachable negative cycle of the CSR; negative self-loops (``part.negative_loops``, not in
    the CSR) are the caller's to check.

    ``max_distance`` is Dijkstra's cutoff, whatever the weights' signs: a candidate distance
    above it is never accepted, so the search never extends a path beyond it and farther
    vertices are unreached (with negative weights a vertex whose only short paths climb above
    the cutoff on the way is unreached too; every reached vertex's parent is reached). A
    negative cycle is raised only when this bounded search reaches it. With non-negative
    weights the kernels stop once ``target`` (a global id, -1: none) is settled, and where the
    distances pass ``max_distance``; ``parents=False`` allocates no parent array (``parent``
    is None). With negative weights the Bellman-Ford rounds run until nothing below the cutoff
    improves (a distance is final only then) and keep their parents (they detect negative
    cycles), then drop them when ``parents=False``.
    ``stats`` (a dict) receives the kernel's counts (CPU: ``buckets``; GPU: ``passes``).
    """
    kernels = backends.get(part.backend).kernels
    xp = part.xp
    sources = xp.asarray(np.unique(sources).astype(np.int64))
    kind = "sssp-negative" if negative_weights else "sssp"
    if _scipy_answers(part, kind, stats):  # a fresh Numba cache: not waiting for the kernels
        return cpu_scipy.sssp(part.indptr, part.indices, part.weights, sources, negative_weights,
                              max_distance=max_distance, parents=parents)
    if not negative_weights and hasattr(kernels, "sssp"):
        return kernels.sssp(part.indptr, part.indices, part.weights, sources, symmetric=part.symmetric,
                            target=int(target), max_distance=max_distance, parents=parents,
                            stats=stats)
    if not negative_weights and hasattr(kernels, "delta_stepping"):
        return kernels.delta_stepping(part.indptr, part.indices, part.weights, sources,
                                      target=int(target), max_distance=max_distance,
                                      parents=parents, stats=stats)
    bound = np.inf if max_distance is None else float(max_distance)
    dist, parent = bellman_ford(part, kernels, sources, negative_weights, bound)
    return dist, (parent if parents else None)


def _scipy_answers(part: Partition, kind: str, stats) -> bool:
    """Whether SciPy answers this one-owner CPU query (:mod:`gpipe.engine.compute.cpu_scipy`): its
    Numba kernels are neither loaded nor in Numba's cache (they are then compiled in the
    background), and no kernel statistics are asked for."""
    return (part.backend == "cpu" and stats is None and part.offset == 0 and part.n_local == part.n
            and cpu_scipy.answers(kind, part.indices.dtype, part.n_edges,
                                  np.float64 if part.weights is None else part.weights.dtype))


def bellman_ford(part: Partition, kernels, sources, negative_weights: bool, bound=np.inf):
    """Frontier Bellman-Ford rounds of ``kernels.sssp_relax`` to the end, candidates above
    ``bound`` dropped: ``(dist, parent)``."""
    state = _initial_state(part, sources, SSSP)
    round_no = 0
    while state.frontier.size:
        frontier = state.frontier
        state.frontier, _, _, _ = kernels.sssp_relax(
            part.indptr, part.indices, part.weights, 0, frontier, kernels.take(state.dist, frontier),
            state.dist, state.parent, False, bound,
        )
        round_no += 1
        if negative_weights and state.frontier.size and (
            round_no > part.n or (cycle_check_due(round_no) and has_parent_cycle(part.backend, state.parent))
        ):
            raise NegativeCycleError("a negative-weight cycle is reachable from the source")
    return state.dist, state.parent

