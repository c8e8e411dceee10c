"""Traversal drivers: BFS and SSSP over the partitions of a built graph.

One owner: the whole traversal runs inside a single task on its worker (no scheduler round
trip per level), in one kernel call where the backend has a whole-traversal kernel
(direction-optimizing BFS; delta-stepping or near-far SSSP), else as a loop over the per-level
kernels.

Several owners: one long task per owner, all started together (``Executor.run_together``),
exchanging messages worker to worker (:mod:`gpipe.peers`); neither the client nor the scheduler
takes part between the start and the result frames. Every step each owner sends every peer
one message: its candidates for that peer and its own counts. Every owner sums the same counts,
so all take the same decisions and stop at the same step.

- BFS is level-synchronous: each level every owner merges the candidates sent to it, expands
  its frontier locally and prunes the remote candidates to one per target (sort/unique,
  :mod:`gpipe.exchange`).
- SSSP with non-negative weights is delta-stepping across owners: each owner relaxes its own
  vertices below the current threshold until none is left locally (local rounds, no
  messages), collecting remote candidates, pruned as they are found against the least
  distance ever sent for each target (``sent_best``); then one exchange. Owners repeat at the
  same threshold while anyone sent a candidate below it, then all raise it together to the
  least pending distance plus delta (the one-owner kernels' width, from weight statistics
  summed in the first message).
- SSSP with negative weights is frontier Bellman-Ford: one local round per exchange, with the
  same pruning and merging kernels. A negative cycle reachable from a source is detected by a
  cycle in the parent graph (parents change only on strict improvement, so without a
  negative cycle the parent graph stays a forest), checked at power-of-two steps, and by a
  step bound that no negative-cycle-free graph reaches.

The SSSP kernels keep every working array allocated once per traversal
(:mod:`gpipe.kernels.owner_state`) and read their counters once per round: no sort, unique or
compaction per round. Each owner can report what it did per step (:class:`OwnerStats`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from gpipe import backend as backends
from gpipe import exchange
from gpipe.errors import NegativeCycleError
from gpipe.kernels import owner_state
from gpipe.partition import Layout, Partition
from gpipe.result import BFS, SSSP, owner_frame

FIRST_CYCLE_CHECK = 16
# The first SSSP bucket across owners holds distance 0 only (the smallest positive double is
# its threshold): the bucket width is known once the first message has brought every owner's
# weight statistics.
FIRST_THRESHOLD = float(np.nextafter(0.0, 1.0))
WEIGHT_SAMPLE = 65536  # weights per owner sampled for the mean and the largest weight
# The exchange window of SSSP across owners follows the relaxations repeated in it: at each
# raise it doubles when fewer than WINDOW_GROW of the window's relaxations were repeats
# (distances arriving late cost little: fewer messages are worth more), halves when more than
# WINDOW_SHRINK were (never below the local bucket), and stays within WINDOW_RANGE times its
# first width either way.
WINDOW_GROW = 0.1
WINDOW_SHRINK = 0.3
WINDOW_RANGE = 64.0
# Repeats come from distances that arrive late over edges between owners, so the first window
# is the backend's width when CROSSING_SHARE of the edges cross owners (two owners of a graph
# whose ids say nothing about its structure), and wider in proportion as fewer do (a grid cut
# into slabs: under 1 %), within 1/4 to WINDOW_RANGE times it.
CROSSING_SHARE = 0.5


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


def sssp(executor, built, sources: np.ndarray, stats: list | None = None) -> list:
    """Handles to the per-owner result frames of an SSSP from global ids ``sources``.

    With several owners and a ``stats`` list, one handle per owner to its :class:`OwnerStats`
    is appended to it (for benchmarks; each costs a small task on the owner's worker). One
    owner appends nothing.
    """
    if built.layout.n_owners == 1:
        return [executor.submit(_sssp_one_owner, built.parts[0], built.ids, sources,
                                built.negative_weights, built.vertex_dtype, owner=0)]
    return _run_owners(executor, built, sources, _sssp_owner, built.negative_weights, stats)


@dataclass
class OwnerStats:
    """What one owner of a multi-owner traversal did, step by step.

    A *step* is one message round: the owner sends every peer one message and waits for one
    from each. The lists hold one entry per step, in order.

    Attributes
    ----------
    owner : int
        The owner's index.
    steps : int
        Message rounds (exchanges) of the traversal.
    rounds : list of int
        Kernel rounds this owner ran before each step (SSSP: relaxation rounds of the local
        phase, or on the CPU with non-negative weights the local buckets it emptied; 0 when
        it had nothing below the window's end. BFS: levels expanded).
    bytes_sent : list of int
        Bytes of candidate arrays this owner sent to all its peers in each step (counts and
        other scalars left out).
    labels : list of str
        What each step was, free-form (SSSP: ``"bucket k"`` for the k-th threshold of
        delta-stepping, so the number of buckets is the number of distinct labels;
        ``"bellman-ford"`` with negative weights).
    kernel_s : float
        Seconds in the owner's own work: kernels, merging what arrived, packing what leaves
        (on a GPU up to the read of each round's counters, which waits for the device).
    wait_s : float
        Seconds in the exchanges: starting the sends, then waiting until every peer's message
        is in (the peers' work shows up here).
    """

    owner: int
    steps: int = 0
    rounds: list = field(default_factory=list)
    bytes_sent: list = field(default_factory=list)
    labels: list = field(default_factory=list)
    kernel_s: float = 0.0
    wait_s: float = 0.0

    def record(self, rounds: int, bytes_sent: int, label: str) -> None:
        self.steps += 1
        self.rounds.append(int(rounds))
        self.bytes_sent.append(int(bytes_sent))
        self.labels.append(label)


def _run_owners(executor, built, sources, owner_loop, option, stats=None) -> list:
    """Start ``owner_loop`` on every owner with its own sources; wait for all of them.

    With a ``stats`` list, the owners return ``(frame, OwnerStats)``; the frame handles are
    returned and the stats handles appended to ``stats``.
    """
    layout = built.layout
    owners = layout.owner_of(sources)
    extra = () if stats is None else (True,)
    results = executor.run_together(owner_loop, [
        (built.parts[p], built.ids, layout, sources[owners == p] - layout.offset(p), option,
         built.vertex_dtype, *extra)
        for p in range(layout.n_owners)
    ])
    if stats is None:
        executor.wait(results)
        return results
    frames = [executor.submit(_item_or_none, r, 0, owner=p) for p, r in enumerate(results)]
    stats.extend(executor.submit(_item_or_none, r, 1, owner=p) for p, r in enumerate(results))
    executor.wait(frames)
    return frames


def _item_or_none(result, index):
    """``result[index]``; None for an owner that stopped because a peer failed (no result)."""
    return None if result is None else result[index]


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
                vertex_dtype, want_stats=False):
    """This owner's result frame of an SSSP, relaxed in step with its peers (and its
    :class:`OwnerStats` when ``want_stats``).

    Non-negative weights: delta-stepping; each step runs the local rounds below the threshold,
    then exchanges. Negative weights: Bellman-Ford, one round per step. Raises
    NegativeCycleError (on every owner at the same step) when the parent graph gets a cycle,
    or when the steps outrun any negative-cycle-free graph.
    """
    kernels = backends.get(part.backend).kernels
    stats = OwnerStats(channel.owner)
    clock = time.perf_counter()
    threshold = np.inf if negative_weights else FIRST_THRESHOLD
    state = owner_state.new_state(part.xp, layout.n, part.offset, part.n_local, layout.chunk,
                                  layout.n_owners, np.unique(local_sources).astype(np.int64),
                                  threshold)
    max_rounds = 1 if negative_weights else -1
    weights = None if negative_weights else _weight_sample(part)
    bucket, step, first_window, relaxed, repeated = 0, 0, None, 0, 0
    while True:
        rounds = kernels.sssp_owner_relax(part.indptr, part.indices, part.weights, state,
                                          threshold, max_rounds)
        counts = kernels.sssp_owner_counts(state)
        outgoing = kernels.sssp_owner_pack(state, counts.sent)
        mine = (counts.pending, counts.sent_min, counts.far_min, counts.relaxed, counts.repeated,
                weights if step == 0 else None)
        stats.record(rounds, sum(a.nbytes for b in outgoing if b is not None for a in b),
                     "bellman-ford" if negative_weights else f"bucket {bucket}")
        stats.kernel_s += time.perf_counter() - clock
        clock = time.perf_counter()
        received = channel.exchange(step, [(mine, b) for b in outgoing])
        stats.wait_s += time.perf_counter() - clock
        clock = time.perf_counter()
        kernels.sssp_owner_merge(state, [b for _, b in received if b is not None], threshold)
        summaries = [summary for summary, _ in received]
        summaries.insert(channel.owner, mine)  # owner order: every owner sums the same way
        if sum(s[0] for s in summaries) == 0:
            break
        step += 1
        if negative_weights:
            stats.kernel_s += time.perf_counter() - clock
            if step > 2 * layout.n + 2 or (
                _cycle_check_due(step) and _parent_cycle_anywhere(channel, part, state, step)
            ):
                raise NegativeCycleError("a negative-weight cycle is reachable from the source")
            clock = time.perf_counter()
            continue
        if step == 1:
            state.local_delta, state.window = _shared_delta(kernels, [s[5] for s in summaries],
                                                            layout.n)
            first_window = state.window
        relaxed += sum(s[3] for s in summaries)
        repeated += sum(s[4] for s in summaries)
        sent_min = min(s[1] for s in summaries)
        if sent_min < threshold:
            continue  # candidates below the threshold arrived somewhere: the window goes on
        if bucket > 0:
            state.window = _next_window(state.window, first_window, state.local_delta, relaxed,
                                        repeated)
        relaxed = repeated = 0
        low = min(sent_min, min(s[2] for s in summaries))
        raised = max(low + state.window, float(np.nextafter(low, np.inf)))
        kernels.sssp_owner_advance(state, threshold, raised)
        threshold, bucket = raised, bucket + 1
    stats.kernel_s += time.perf_counter() - clock
    frame = owner_frame(part, ids, state.dist, state.parent, SSSP, vertex_dtype)
    return (frame, stats) if want_stats else frame


def _weight_sample(part: Partition) -> tuple:
    """``(edges, sum, size, max, crossing)`` of a strided sample of this owner's edges: the sum
    and the largest of their weights, and how many lead to another owner's vertex."""
    step = max(1, part.n_edges // WEIGHT_SAMPLE)
    weights, targets = part.weights[::step], part.indices[::step]
    if weights.size == 0:
        return (0, 0.0, 0, 0.0, 0)
    crossing = int(((targets < part.offset) | (targets >= part.offset + part.n_local)).sum())
    return (part.n_edges, float(weights.sum()), int(weights.size), float(weights.max()), crossing)


def _next_window(window: float, first: float, local_delta: float, relaxed: int, repeated: int) -> float:
    """The exchange window after one whose owners relaxed ``relaxed`` vertices, ``repeated`` of
    them again (the same numbers on every owner, so the same answer)."""
    if repeated < WINDOW_GROW * relaxed:
        return min(2.0 * window, WINDOW_RANGE * first)
    if repeated > WINDOW_SHRINK * relaxed:
        return max(window / 2.0, first / WINDOW_RANGE, local_delta)
    return window


def _shared_delta(kernels, samples: list, n: int) -> tuple:
    """``(local bucket width, first window width)`` from every owner's edge sample, in owner
    order (so the same on all owners)."""
    edges = sum(s[0] for s in samples)
    if edges == 0 or n == 0:
        return 1.0, 1.0
    mean = sum(s[0] * s[1] / s[2] for s in samples if s[2]) / edges
    crossing = sum(s[0] * s[4] / s[2] for s in samples if s[2]) / edges
    top = max(s[3] for s in samples)
    local, window = kernels.sssp_owners_delta(mean, top, edges / n)
    wider = min(WINDOW_RANGE, max(0.25, CROSSING_SHARE / max(crossing, CROSSING_SHARE / WINDOW_RANGE)))
    return float(local), max(float(local), float(window) * wider)


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
