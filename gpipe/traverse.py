"""Traversal drivers: BFS and SSSP over the partitions of a built graph.

One owner: the whole traversal runs inside a single task on its worker (no scheduler round
trip per level). The CPU kernels do it in one call (queue BFS, heap Dijkstra); otherwise a
level loop over the per-level kernels runs there.

Several owners: level-synchronous rounds. In each round every owner merges the candidates
sent to it, expands its frontier locally (claiming or relaxing its own vertices in place) and
prunes the remote candidates to one per target before they leave. States stay on their
owners; candidate buckets move worker to worker; the client only reads one count per owner
per round to know when to stop.

SSSP relaxes with frontier-based Bellman-Ford, so negative weights work. A negative cycle
reachable from a source is detected by a cycle in the parent graph (parents change only on
strict improvement, so without a negative cycle the parent graph stays a forest), checked at
power-of-two rounds, and by a round bound that no negative-cycle-free graph reaches.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpipe import backend as backends
from gpipe import exchange
from gpipe.errors import NegativeCycleError
from gpipe.partition import Layout, Partition
from gpipe.result import BFS, SSSP, owner_frame

FIRST_CYCLE_CHECK = 16


@dataclass
class State:
    """One owner's traversal: distances, parents (global ids), the frontier (local ids)."""

    dist: object
    parent: object
    frontier: object


def bfs(executor, built, sources: np.ndarray, depth_limit: int | None) -> list:
    """Handles to the per-owner result frames of a BFS from global ids ``sources``."""
    if built.layout.n_owners == 1:
        return [executor.submit(_bfs_one_owner, built.parts[0], built.ids, sources, depth_limit,
                                built.vertex_dtype, owner=0)]
    states = _initial_states(executor, built, sources, BFS)
    incoming = [[] for _ in states]
    level = 0
    while True:
        expand = depth_limit is None or level < depth_limit
        rounds = [
            executor.submit(_bfs_round, built.parts[p], states[p], built.layout, level, expand,
                            *incoming[p], owner=p)
            for p in range(len(states))
        ]
        if not expand or not _exchange(executor, rounds, incoming):
            break
        level += 1
    return _finish(executor, built, states, rounds, BFS)


def sssp(executor, built, sources: np.ndarray) -> list:
    """Handles to the per-owner result frames of an SSSP from global ids ``sources``."""
    if built.layout.n_owners == 1:
        return [executor.submit(_sssp_one_owner, built.parts[0], built.ids, sources,
                                built.negative_weights, built.vertex_dtype, owner=0)]
    states = _initial_states(executor, built, sources, SSSP)
    incoming = [[] for _ in states]
    round_no = 0
    while True:
        rounds = [
            executor.submit(_sssp_round, built.parts[p], states[p], built.layout, *incoming[p], owner=p)
            for p in range(len(states))
        ]
        if not _exchange(executor, rounds, incoming):
            break
        round_no += 1
        if built.negative_weights and _cycle_check_due(round_no):
            parents = [executor.submit(_parent_of, states[p], rounds[p], owner=p) for p in range(len(states))]
            found = executor.gather([executor.submit(_has_parent_cycle, built.backend, *parents, owner=0)])[0]
            if found or round_no > 2 * built.layout.n + 2:
                raise NegativeCycleError("a negative-weight cycle is reachable from the source")
    return _finish(executor, built, states, rounds, SSSP)


def _initial_states(executor, built, sources, kind):
    layout = built.layout
    owners = layout.owner_of(sources)
    return [
        executor.submit(_initial_state, built.parts[p], sources[owners == p] - layout.offset(p), kind, owner=p)
        for p in range(layout.n_owners)
    ]


def _exchange(executor, rounds, incoming) -> bool:
    """Route each round's outgoing buckets to their owners; False once nothing moved anywhere."""
    n_owners = len(rounds)
    active = sum(executor.gather([executor.item(r, 0, owner=p) for p, r in enumerate(rounds)]))
    for q in range(n_owners):
        incoming[q] = [executor.item(rounds[p], 1 + q, owner=p) for p in range(n_owners) if p != q]
    return active > 0


def _finish(executor, built, states, rounds, kind):
    frames = [
        executor.submit(_owner_result, built.parts[p], built.ids, states[p], rounds[p], kind,
                        built.vertex_dtype, owner=p)
        for p in range(len(states))
    ]
    executor.wait(frames)
    return frames


def _cycle_check_due(round_no: int) -> bool:
    return round_no >= FIRST_CYCLE_CHECK and round_no & (round_no - 1) == 0


# --- tasks that run on an owner's worker -------------------------------------------------


def _initial_state(part: Partition, local_sources, kind):
    xp = part.xp
    local_sources = xp.asarray(np.unique(local_sources).astype(np.int64))
    if kind == BFS:
        dist = xp.full(part.n_local, -1, dtype="int32")
        dist[local_sources] = 0
    else:
        dist = xp.full(part.n_local, np.inf, dtype="float64")
        dist[local_sources] = 0.0
    parent = xp.full(part.n_local, -1, dtype="int64")
    return State(dist, parent, local_sources)


def _bfs_round(part: Partition, state: State, layout: Layout, level, expand, *incoming):
    """Take in level-``level`` candidates, then expand the level-``level`` frontier.

    Returns ``[active, bucket_0, ..., bucket_{P-1}]``: the number of vertices claimed or
    sent, and the pruned ``(targets, parents)`` for each owner. Mutates ``state``.
    """
    xp = part.xp
    if incoming:
        targets, parents = exchange.merge(part.backend, incoming)
        local = targets - part.offset
        new = state.dist[local] < 0
        local = local[new]
        state.dist[local] = level
        state.parent[local] = parents[new]
        state.frontier = xp.concatenate([state.frontier, local])
    if not expand:
        return [0] + [None] * layout.n_owners
    kernels = backends.get(part.backend).kernels
    state.frontier, targets, parents = kernels.bfs_expand(
        part.indptr, part.indices, part.offset, state.frontier, state.dist, state.parent, level, True
    )
    buckets = exchange.prune(part.backend, layout, targets, parents)
    return [int(state.frontier.size) + int(targets.size)] + buckets


def _sssp_round(part: Partition, state: State, layout: Layout, *incoming):
    """Take in candidate distances, then relax the out-edges of the frontier.

    Returns ``[active, bucket_0, ..., bucket_{P-1}]`` with pruned ``(targets, dists, parents)``.
    """
    xp = part.xp
    if incoming:
        targets, dists, parents = exchange.merge(part.backend, incoming, key_column=1)
        local = targets - part.offset
        better = dists < state.dist[local]
        local = local[better]
        state.dist[local] = dists[better]
        state.parent[local] = parents[better]
        state.frontier = xp.unique(xp.concatenate([state.frontier, local]))
    kernels = backends.get(part.backend).kernels
    frontier = state.frontier
    state.frontier, targets, dists, parents = kernels.sssp_relax(
        part.indptr, part.indices, part.weights, part.offset, frontier, state.dist[frontier],
        state.dist, state.parent, True,
    )
    buckets = exchange.prune(part.backend, layout, targets, dists, parents, key=dists)
    return [int(state.frontier.size) + int(targets.size)] + buckets


def _parent_of(state: State, _round):
    return state.parent


def _owner_result(part, ids, state: State, _round, kind, vertex_dtype):
    return owner_frame(part, ids, state.dist, state.parent, kind, vertex_dtype)


def _bfs_one_owner(part: Partition, ids, sources, depth_limit, vertex_dtype):
    """The whole BFS of a one-owner graph, in this task."""
    dist, parent = bfs_arrays(part, sources, depth_limit)
    return owner_frame(part, ids, dist, parent, BFS, vertex_dtype)


def _sssp_one_owner(part: Partition, ids, sources, negative_weights, vertex_dtype):
    """The whole SSSP of a one-owner graph, in this task."""
    dist, parent = sssp_arrays(part, sources, negative_weights)
    return owner_frame(part, ids, dist, parent, SSSP, vertex_dtype)


def bfs_arrays(part: Partition, sources, depth_limit=None):
    """BFS over a one-owner partition from global ids ``sources``: ``(dist int32, parent int64)``.

    ``dist`` is -1 and ``parent`` -1 where unreached. The arrays stay on the partition's device.
    On a symmetric (undirected, one-owner) partition the kernels may go direction-optimizing.
    """
    kernels = backends.get(part.backend).kernels
    xp = part.xp
    sources = xp.asarray(np.unique(sources).astype(np.int64))
    if hasattr(kernels, "bfs"):
        return kernels.bfs(part.indptr, part.indices, sources, -1 if depth_limit is None else depth_limit,
                           symmetric=part.symmetric)
    state = _initial_state(part, sources, BFS)
    level = 0
    while state.frontier.size and (depth_limit is None or level < depth_limit):
        state.frontier, _, _ = kernels.bfs_expand(
            part.indptr, part.indices, 0, state.frontier, state.dist, state.parent, level, False
        )
        level += 1
    return state.dist, state.parent


def sssp_arrays(part: Partition, sources, negative_weights: bool):
    """SSSP over a one-owner partition from global ids ``sources``: ``(dist float64, parent int64)``.

    ``dist`` is +inf and ``parent`` -1 where unreached. Raises NegativeCycleError.
    """
    kernels = backends.get(part.backend).kernels
    xp = part.xp
    sources = xp.asarray(np.unique(sources).astype(np.int64))
    if not negative_weights and hasattr(kernels, "sssp"):
        return kernels.sssp(part.indptr, part.indices, part.weights, sources, symmetric=part.symmetric)
    if not negative_weights and hasattr(kernels, "delta_stepping"):
        return kernels.delta_stepping(part.indptr, part.indices, part.weights, sources)
    state = _initial_state(part, sources, SSSP)
    round_no = 0
    while state.frontier.size:
        frontier = state.frontier
        state.frontier, _, _, _ = kernels.sssp_relax(
            part.indptr, part.indices, part.weights, 0, frontier, state.dist[frontier],
            state.dist, state.parent, False,
        )
        round_no += 1
        if negative_weights and state.frontier.size and (
            round_no > part.n or (_cycle_check_due(round_no) and _has_parent_cycle(part.backend, state.parent))
        ):
            raise NegativeCycleError("a negative-weight cycle is reachable from the source")
    return state.dist, state.parent


def _has_parent_cycle(backend_name, *parents) -> bool:
    """True if following parent pointers (global ids, -1 at roots) ever loops.

    Pointer jumping: after ``ceil(log2 n) + 1`` squarings every vertex of a forest points at
    its root, so a vertex that still points at a non-root lies on or below a cycle.
    """
    xp = backends.get(backend_name).xp
    parent = xp.concatenate(parents) if len(parents) > 1 else parents[0]
    n = int(parent.size)
    if n == 0:
        return False
    node = xp.where(parent >= 0, parent, xp.arange(n, dtype=parent.dtype))
    for _ in range(max(1, int(np.ceil(np.log2(n)))) + 1):
        node = node[node]
    return bool((parent[node] >= 0).any())
