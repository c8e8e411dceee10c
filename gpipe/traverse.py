"""Traversal drivers: BFS and SSSP over the partitions of a built graph.

One owner: the whole traversal runs inside a single task on its worker (no scheduler round
trip per level), in one kernel call where the backend has a whole-traversal kernel
(direction-optimizing BFS; delta-stepping or near-far SSSP), else as a loop over the per-level
kernels.

Several owners: one long task per owner, all started together (``Executor.run_together``),
level-synchronous. Each level every owner merges the candidates sent to it, expands its frontier
locally (claiming or relaxing its own vertices in place), prunes the remote candidates to one per
target and sends each peer its bucket with its own active count, worker to worker
(:mod:`gpipe.peers`). Every owner sums the same counts, so all stop at the same level. Neither
the client nor the scheduler takes part between the start and the result frames.

SSSP relaxes with frontier-based Bellman-Ford, so negative weights work. A negative cycle
reachable from a source is detected by a cycle in the parent graph (parents change only on
strict improvement, so without a negative cycle the parent graph stays a forest), checked at
power-of-two rounds, and by a round bound that no negative-cycle-free graph reaches. A negative
self-loop, which the CSR does not hold, is a negative cycle when the traversal reaches its
vertex: each owner checks its own (``Partition.negative_loops``) once the rounds are over.
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
    return _run_owners(executor, built, sources, _bfs_owner, depth_limit)


def sssp(executor, built, sources: np.ndarray) -> list:
    """Handles to the per-owner result frames of an SSSP from global ids ``sources``."""
    if built.layout.n_owners == 1:
        return [executor.submit(_sssp_one_owner, built.parts[0], built.ids, sources,
                                built.negative_weights, built.vertex_dtype, owner=0)]
    return _run_owners(executor, built, sources, _sssp_owner, built.negative_weights)


def _run_owners(executor, built, sources, owner_loop, option) -> list:
    """Start ``owner_loop`` on every owner with its own sources; wait for all of them."""
    layout = built.layout
    owners = layout.owner_of(sources)
    frames = executor.run_together(owner_loop, [
        (built.parts[p], built.ids, layout, sources[owners == p] - layout.offset(p), option,
         built.vertex_dtype)
        for p in range(layout.n_owners)
    ])
    executor.wait(frames)
    return frames


def _cycle_check_due(round_no: int) -> bool:
    return round_no >= FIRST_CYCLE_CHECK and round_no & (round_no - 1) == 0


# --- one owner's share of a traversal over several owners, run in step with the others ------


def _bfs_owner(channel, part: Partition, ids, layout: Layout, local_sources, depth_limit,
               vertex_dtype):
    """This owner's result frame of a BFS, expanded level by level in step with its peers."""
    state = _initial_state(part, local_sources, BFS)
    incoming, level = [], 0
    while True:
        expand = depth_limit is None or level < depth_limit
        active, *buckets = _bfs_round(part, state, layout, level, expand, *incoming)
        if not expand:
            break
        incoming, total = _swap(channel, level, active, buckets)
        if total == 0:
            break
        level += 1
    return owner_frame(part, ids, state.dist, state.parent, BFS, vertex_dtype)


def _sssp_owner(channel, part: Partition, ids, layout: Layout, local_sources, negative_weights,
                vertex_dtype):
    """This owner's result frame of an SSSP, relaxed round by round in step with its peers.

    Raises NegativeCycleError (on every owner at the same round) when the parent graph gets a
    cycle, or when the rounds outrun any negative-cycle-free graph; and, after the last round,
    on an owner that reached one of its negative self-loops (its peers, done by then, return
    their frames; the caller sees this owner's error).
    """
    state = _initial_state(part, local_sources, SSSP)
    incoming, round_no = [], 0
    while True:
        active, *buckets = _sssp_round(part, state, layout, *incoming)
        incoming, total = _swap(channel, round_no, active, buckets)
        if total == 0:
            break
        round_no += 1
        if negative_weights and (
            round_no > 2 * layout.n + 2
            or _cycle_check_due(round_no) and _parent_cycle_anywhere(channel, part, state, round_no)
        ):
            raise NegativeCycleError("a negative-weight cycle is reachable from the source")
    _raise_if_negative_loop_reached(part, ids, state.dist)
    return owner_frame(part, ids, state.dist, state.parent, SSSP, vertex_dtype)


def _swap(channel, tag, active: int, buckets: list):
    """Send each peer its bucket and this owner's count; the non-empty buckets that came in,
    and the count summed over all owners (the same on every owner, so all stop together)."""
    sent = [(active, bucket if bucket[0].size else None) for bucket in buckets]
    received = channel.exchange(tag, sent)
    incoming = [bucket for _, bucket in received if bucket is not None]
    return incoming, active + sum(count for count, _ in received)


def _parent_cycle_anywhere(channel, part: Partition, state, round_no: int) -> bool:
    """Whether the parents of all owners together hold a cycle; the same answer on every owner.

    The parent arrays go to owner 0, which checks them and tells the others.
    """
    parents, verdict = f"parents-{round_no}", f"verdict-{round_no}"
    if channel.owner != 0:
        channel.send(parents, {0: state.parent})
        return channel.receive(verdict, [0])[0]
    found = _has_parent_cycle(part.backend, state.parent, *channel.receive(parents, channel.peers))
    channel.send(verdict, {q: found for q in channel.peers})
    return found


# --- the steps of a round, and whole one-owner traversals, on an owner's worker ------------


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


def _bfs_one_owner(part: Partition, ids, sources, depth_limit, vertex_dtype):
    """The whole BFS of a one-owner graph, in this task."""
    dist, parent = bfs_arrays(part, sources, depth_limit)
    return owner_frame(part, ids, dist, parent, BFS, vertex_dtype)


def _sssp_one_owner(part: Partition, ids, sources, negative_weights, vertex_dtype):
    """The whole SSSP of a one-owner graph, in this task. Raises NegativeCycleError."""
    dist, parent = sssp_arrays(part, sources, negative_weights)
    _raise_if_negative_loop_reached(part, ids, dist)
    return owner_frame(part, ids, dist, parent, SSSP, vertex_dtype)


def _raise_if_negative_loop_reached(part: Partition, ids, dist) -> None:
    """Raise NegativeCycleError, naming the vertex by its input id, if ``dist`` reaches one of
    ``part``'s vertices with a negative self-loop: going round the loop shortens every path
    through it without end. The CSR holds no self-loops, so relaxation never sees these."""
    loops = part.negative_loops
    if loops is None or loops.size == 0:
        return
    reached = loops[part.xp.isfinite(dist[loops])]
    if reached.size == 0:
        return
    vertex = part.offset + reached[0].item()
    if ids is not None:
        vertex = ids[vertex].item()
    raise NegativeCycleError(
        f"a negative-weight cycle is reachable from the source: the self-loop on vertex {vertex}")


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

    ``dist`` is +inf and ``parent`` -1 where unreached. Raises NegativeCycleError for a
    reachable negative cycle of the CSR; negative self-loops (``part.negative_loops``, not in
    the CSR) are the caller's to check.
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
