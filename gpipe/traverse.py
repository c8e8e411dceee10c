"""Traversal drivers: BFS and SSSP over the partitions of a built graph.

One owner: the whole traversal runs inside a single task on its worker (no scheduler round
trip per level), in one kernel call where the backend has a whole-traversal kernel
(direction-optimizing BFS; delta-stepping or near-far SSSP), else as a loop over the per-level
kernels.

Several owners: one long task per owner, all started together (``Executor.run_together``),
level-synchronous. Each level every owner expands its frontier locally (claiming or relaxing its
own vertices in place) and sends each peer one message, worker to worker (:mod:`gpipe.peers`),
with the candidates for that peer and a few counts of its own. Every owner sums the same
counts, so all stop at the same level (and a BFS takes the same direction). Neither the client
nor the scheduler takes part between the start and the result frames.

BFS over several owners (:func:`bfs_owner_arrays`) sorts nothing between levels: a top-down
step sends each remote vertex at most once per traversal (a per-traversal bitmap of sent ids),
into queues allocated once, and the receiver claims what arrives with the same claim as its
own edges, so duplicates from several senders resolve themselves. Undirected graphs go
bottom-up when the frontier is large (the owners exchange their slices of the frontier bitmap
instead of candidates).

SSSP over several owners with non-negative weights is delta-stepping across owners: each owner
relaxes its own vertices below the current threshold until none is left locally (local rounds,
no messages), collecting remote candidates, pruned as they are found against the least distance
ever sent for each target (``sent_best``); then one exchange. Owners repeat at the same
threshold while anyone sent a candidate below it, then all raise it together. With negative
weights it is frontier Bellman-Ford, one local round per exchange, with the same pruning and
merging kernels. The SSSP kernels keep every working array allocated once per traversal
(:mod:`gpipe.kernels.owner_state`) and read their counters once per round.

A negative cycle reachable from a source is detected by a cycle in the parent graph (parents
change only on strict improvement, so without a negative cycle the parent graph stays a forest),
checked at power-of-two steps, and by a step bound that no negative-cycle-free graph reaches. A
negative self-loop, which the CSR does not hold, is a negative cycle when the traversal reaches
its vertex: each owner checks its own (``Partition.negative_loops``) once the steps are over.

``max_distance`` is Dijkstra's cutoff on every path, whatever the weights: the relaxations drop
a candidate distance above it (one owner: the ``bound`` of ``sssp_relax`` and the batch kernels;
several: the bound of the owner state), so the search never extends a path beyond the cutoff,
every reached vertex's parent is reached, and only a negative cycle (or negative self-loop) that
this bounded search reaches is raised.
"""

from __future__ import annotations

import functools
import math
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, fields

import dask
import numpy as np

from gpipe import backend as backends
from gpipe import progress, validate
from gpipe import sources as source_ids
from gpipe.errors import InputError, NegativeCycleError
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


def bfs(executor, built, sources: np.ndarray, depth_limit: int | None,
        stats: list | None = None, *, parents: bool = True) -> list:
    """Handles to the per-owner result frames of a BFS from global ids ``sources`` (not waited
    for, unless ``stats`` is given); without their ``parent`` column when not ``parents`` (one
    owner: no parent array is made; several: each owner leaves the column out of its frame).

    With several owners the level loop takes its direction thresholds from the Dask config
    ``gpipe.bfs-direction`` (:func:`bfs_thresholds`), read here on the client. When ``stats``
    is a list, it receives one handle per owner to that owner's level statistics (the dict
    described in :func:`bfs_owner_arrays`); with one owner it is left empty. Asking for them
    costs one small task per owner (the owner task returns ``(frame, stats)``, split where it
    ran).
    """
    depth_limit = validate.depth_limit(depth_limit)  # callers past Graph.bfs (bench) too
    if built.layout.n_owners == 1:  # the partition keeps the ids it needs (Partition.ids)
        return [executor.query(_bfs_one_owner, built.parts[0], sources, depth_limit,
                               built.vertex_dtype, parents, owner=0)]
    with_stats = stats is not None
    handles = _run_owners(executor, built, sources, _bfs_owner, depth_limit, bfs_thresholds(),
                          with_stats, parents)
    return handles if not with_stats else _split_stats(executor, handles, stats)


def sssp(executor, built, sources: np.ndarray, stats: list | None = None, *,
         parents: bool = True, max_distance: float | None = None) -> list:
    """Handles to the per-owner result frames of an SSSP from global ids ``sources`` (not waited
    for, unless ``stats`` is given).

    ``parents=False`` leaves the ``parent`` column out (one owner, non-negative weights: no
    parent array is made). ``max_distance``: Dijkstra's cutoff on every path: a candidate
    distance above it is never accepted (so farther vertices are unreached, every reached
    vertex's parent is reached, and the search stops early); with negative weights a negative
    cycle is raised only when this bounded search reaches it.

    With several owners and a ``stats`` list, one handle per owner to its :class:`OwnerStats`
    is appended to it (for benchmarks; each costs a small task on the owner's worker). One
    owner appends nothing.
    """
    if built.layout.n_owners == 1:
        return [executor.query(_sssp_one_owner, built.parts[0], sources, built.negative_weights,
                               built.vertex_dtype, parents, max_distance, owner=0)]
    with_stats = stats is not None
    handles = _run_owners(executor, built, sources, _sssp_owner, built.negative_weights,
                          with_stats, parents, max_distance)
    return handles if not with_stats else _split_stats(executor, handles, stats)


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


def _run_owners(executor, built, sources, owner_loop, *options) -> list:
    """Start ``owner_loop(channel, part, ids, layout, local_sources, *options, vertex_dtype)``
    on every owner with its own sources; the caller waits for them."""
    layout = built.layout
    owners = layout.owner_of(sources)
    return executor.run_together(owner_loop, [
        (built.parts[p], built.ids, layout, sources[owners == p] - layout.offset(p), *options,
         built.vertex_dtype)
        for p in range(layout.n_owners)
    ])


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


def _cycle_check_due(round_no: int) -> bool:
    return round_no >= FIRST_CYCLE_CHECK and round_no & (round_no - 1) == 0


# --- one owner's share of a traversal over several owners, run in step with the others ------


def _bfs_owner(channel, part: Partition, ids, layout: Layout, local_sources, depth_limit,
               thresholds, with_stats, parents, vertex_dtype):
    """This owner's result frame of a BFS, expanded level by level in step with its peers;
    ``(frame, stats)`` when ``with_stats`` (the stats of :func:`bfs_owner_arrays`). The
    parents are always kept while the levels run (the claims carry them); ``parents=False``
    leaves them out of the frame."""
    dist, parent, stats = bfs_owner_arrays(channel, part, layout, local_sources, depth_limit,
                                           thresholds)
    frame = owner_frame(part, ids, dist, parent if parents else None, BFS, vertex_dtype)
    return (frame, stats) if with_stats else frame


def _sssp_owner(channel, part: Partition, ids, layout: Layout, local_sources, negative_weights,
                want_stats, parents, max_distance, vertex_dtype):
    """This owner's result frame of an SSSP, relaxed in step with its peers (and its
    :class:`OwnerStats` when ``want_stats``).

    Non-negative weights: delta-stepping; each step runs the local rounds below the threshold,
    then exchanges. Negative weights: Bellman-Ford, one round per step. Raises
    NegativeCycleError (on every owner at the same step) when the parent graph gets a cycle,
    or when the steps outrun any negative-cycle-free graph; and, after the last step, on an
    owner that reached one of its negative self-loops (its peers, done by then, return their
    frames; the caller sees this owner's error).
    """
    kernels = backends.get(part.backend).kernels
    stats = OwnerStats(channel.owner)
    reporter = progress.Reporter(channel.key, "sssp", channel.owner, len(channel.addresses))
    reporter.start(len(local_sources))
    clock = time.perf_counter()
    threshold = np.inf if negative_weights else FIRST_THRESHOLD
    state = owner_state.new_state(part.xp, layout.n, part.offset, part.n_local, layout.chunk,
                                  layout.n_owners, np.unique(local_sources).astype(np.int64),
                                  threshold, bound=np.inf if max_distance is None else max_distance)
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
        reporter.level(step, counts.pending)
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
    _raise_if_negative_loop_reached(part, ids, state.dist)  # before the end: a raise reports failed
    _report_end(reporter, SSSP, part.backend, state.dist, steps=step + 1)
    _cut_beyond(state.dist, state.parent, max_distance)
    frame = owner_frame(part, ids, state.dist, state.parent if parents else None, SSSP,
                        vertex_dtype)
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
    :class:`gpipe.sources.InputIds`, looked up in the ids the partition keeps)."""
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
    _raise_if_negative_loop_reached(part, part.ids, dist)  # before the end: a raise reports failed
    _report_one_owner(reporter, part, dist)
    return owner_frame(part, part.ids, dist, parent, SSSP, vertex_dtype)


def _cut_beyond(dist, parent, max_distance) -> None:
    """Make the vertices farther than ``max_distance`` unreached, in place. The relaxations
    drop candidates beyond the cutoff already (the bound of the owner state), so over several
    owners this finds nothing to cut; kept as a safety net (with non-negative weights a cut
    never leaves a kept vertex with a cut parent)."""
    if max_distance is None or dist.size == 0:
        return
    beyond = dist > max_distance
    dist[beyond] = np.inf
    if parent is not None:
        parent[beyond] = -1


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
        vertex = source_ids.input_id(part.backend, ids, vertex)
    raise NegativeCycleError(
        f"a negative-weight cycle is reachable from the source: the self-loop on vertex {vertex}")


def _start_one_owner(kind, sources) -> progress.Reporter:
    """The reporter of a one-owner traversal, its start reported (one event, no device sync)."""
    reporter = progress.Reporter(uuid.uuid4().hex, kind)
    reporter.start(len(sources))
    return reporter


def _report_one_owner(reporter: progress.Reporter, part: Partition, dist) -> None:
    """The end of a one-owner traversal as a progress event, if anyone looks (:func:`_report_end`;
    an SSSP's steps are not counted by its one-kernel search)."""
    _report_end(reporter, reporter.algorithm, part.backend, dist)


def _report_end(reporter, kind, backend_name, dist, steps=None) -> None:
    """``reporter.done`` for an owner whose distances are ``dist``, if anyone looks: a BFS's
    deepest level reached (the largest distance here, None when this owner reached nothing),
    an SSSP's ``steps``; and the vertices reached: a reduction or two over ``dist``."""
    if not reporter.enabled:
        return
    arrays = backends.get(backend_name).kernels  # none compiled at first use on GPU; max is CUB's
    if kind == BFS:
        reached = arrays.count_nonzero(arrays.non_negative(dist))
        level = int(dist.max()) if reached else None
    else:
        level, reached = steps, arrays.count_nonzero(arrays.isfinite(dist))
    reporter.done(level, reached)


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
    if not negative_weights and hasattr(kernels, "sssp"):
        return kernels.sssp(part.indptr, part.indices, part.weights, sources, symmetric=part.symmetric,
                            target=int(target), max_distance=max_distance, parents=parents,
                            stats=stats)
    if not negative_weights and hasattr(kernels, "delta_stepping"):
        return kernels.delta_stepping(part.indptr, part.indices, part.weights, sources,
                                      target=int(target), max_distance=max_distance,
                                      parents=parents, stats=stats)
    bound = np.inf if max_distance is None else float(max_distance)
    dist, parent = _bellman_ford(part, kernels, sources, negative_weights, bound)
    return dist, (parent if parents else None)


def _bellman_ford(part: Partition, kernels, sources, negative_weights: bool, bound=np.inf):
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


# --- BFS over several owners: one owner's level loop ------------------------------------------

DIRECTION_KEY = "gpipe.bfs-direction"


@dataclass(frozen=True)
class Thresholds:
    """When a BFS over several owners changes direction (undirected graphs only).

    Top-down -> bottom-up when ``m_f * alpha > m_u`` and ``m_f * gamma > n``; bottom-up ->
    top-down when the frontier shrank and ``n_f * beta <= n``. ``m_f``: out-edges of the
    frontier; ``m_u``: out-edges that no top-down level has checked yet (GAPBS's
    ``edges_to_check``: bottom-up levels leave it alone, so a search that has just come back
    top-down does not turn bottom-up again at once, which across owners would cost a message
    round per level); ``n_f``: frontier vertices; ``n``: vertices. alpha and beta are GAPBS's
    [Beamer, Asanovic, Patterson, SC 2012]; gamma, as in ``kernels/bfs_persistent.cu``, keeps
    small frontiers top-down, since a bottom-up level reads every unvisited vertex and every
    owner receives the whole frontier bitmap. ``alpha=0`` keeps every level top-down; ``alpha = beta =
    gamma = inf`` makes every level after the first bottom-up.
    """

    alpha: float = 15.0
    beta: float = 18.0
    gamma: float = 8.0

    def go_bottom_up(self, frontier_edges, unexplored_edges, n) -> bool:
        m_f = float(frontier_edges)
        return m_f * self.alpha > unexplored_edges and m_f * self.gamma > n

    def stay_bottom_up(self, frontier_size, previous_size, n) -> bool:
        return not (frontier_size < previous_size and float(frontier_size) * self.beta <= n)


DIRECTIONS = {
    "auto": Thresholds(),
    "top-down": Thresholds(alpha=0.0),
    "bottom-up": Thresholds(alpha=math.inf, beta=math.inf, gamma=math.inf),
}


def bfs_thresholds(setting=None) -> Thresholds:
    """The :class:`Thresholds` that Dask config ``gpipe.bfs-direction`` names (read if ``setting``
    is None).

    The value is ``"auto"`` (the default: GAPBS's heuristic), ``"top-down"``, ``"bottom-up"``, or
    a mapping of any of ``alpha``, ``beta``, ``gamma`` (the others keep their defaults), for
    example ``dask.config.set({"gpipe.bfs-direction": {"alpha": 1e9, "beta": 1e-9}})``. It is
    read on the client when a traversal starts and travels to the owners with their tasks.
    Only traversals over several owners use it. Raises InputError for any other value.
    """
    if setting is None:
        setting = dask.config.get(DIRECTION_KEY, "auto")
    if isinstance(setting, str) and setting in DIRECTIONS:
        return DIRECTIONS[setting]
    if isinstance(setting, Mapping):
        names = {f.name for f in fields(Thresholds)}
        unknown = sorted(set(setting) - names)
        if unknown:
            raise InputError(f"{DIRECTION_KEY}: unknown threshold {unknown[0]!r}; "
                             "known: alpha, beta, gamma")
        return Thresholds(**{name: float(value) for name, value in setting.items()})
    raise InputError(f"{DIRECTION_KEY} must be 'auto', 'top-down', 'bottom-up' or a mapping of "
                     f"alpha/beta/gamma, not {setting!r}")


TOP_DOWN = "top-down"
BOTTOM_UP = "bottom-up"


def bfs_owner_arrays(channel, part: Partition, layout: Layout, local_sources, depth_limit=None,
                     thresholds: Thresholds = Thresholds()):
    """One owner's share of a BFS over several owners, level by level in step with its peers.

    Parameters
    ----------
    channel : gpipe.peers.Channel
        Or anything with ``owner`` and ``exchange(tag, payloads)`` (the tests' in-process one).
    part : Partition
        This owner's CSR; ``part.undirected`` allows bottom-up levels.
    layout : Layout
    local_sources : array of int
        This owner's sources, local ids (repeats allowed; may be empty).
    depth_limit : int or None
    thresholds : Thresholds
        The direction rule; every owner must get the same.

    Returns
    -------
    dist : int32[n_local]
        Hops from the nearest source, -1 unreached.
    parent : int64[n_local]
        Global id of a BFS-tree parent, -1 for sources and unreached vertices.
    stats : dict
        ``owner``; ``levels`` (the number of levels below, the last of which may have found the
        frontier empty everywhere); and one entry per level, in lists:
        ``direction`` (``"top-down"`` or ``"bottom-up"``), ``frontier`` (its vertices, summed
        over all owners), ``messages`` (this owner's message rounds: 1, or 2 at a level whose
        bottom-up message turned it top-down), ``bytes_sent`` (array bytes this owner sent to
        all peers), ``kernel_s`` (seconds of this owner's own work: kernels, host reads,
        copies) and ``wait_s`` (seconds in exchanges: sending, and waiting for the peers).

    Notes
    -----
    Each level every owner sends every peer one message. Top-down: the candidates for that
    peer (each remote vertex once per traversal: the kernels' ``sent`` bitmap) and the counts
    ``(active, n_f, m_f, claimed, claimed_edges, sent, nnz)``; the peer claims them. Bottom-up:
    this owner's slice of the frontier bitmap and its exact ``(n_f, m_f)``; each owner puts the
    slices together and claims its unvisited vertices that have a neighbour in the frontier.

    Every owner sums the same counts and applies ``thresholds`` to the same numbers, so all take
    the same direction and stop at the same level. The next frontier's exact size is only known
    after its claims, so after a top-down level the rule is applied to an estimate: ``n_f ~
    claimed + sent`` (sent is an upper bound of the remote part) and ``m_f ~ claimed_edges * (1 +
    sent / claimed)`` (the vertices sent assumed of the claimed ones' mean degree; the graph's mean
    degree when nothing was claimed locally). When the estimate says bottom-up, the level starts
    with the bottom-up message, whose exact counts decide again: if the exact rule says
    top-down, the level runs top-down after all (a second message round). Likewise a bottom-up
    level after a bottom-up level checks the exact counts for the way back. The first level is
    top-down. Directed graphs stay top-down (no in-edges are stored).
    """
    run = _OwnerBfs(part, layout, getattr(channel, "device_messages", False))
    stats = _LevelStats(channel, part.owner)
    stats.progress.start(len(local_sources))
    n = layout.n
    run.claim_sources(local_sources)
    total_edges = 0  # every owner's out-edges, learned from the first message
    checked_edges = 0  # out-edges of the frontiers expanded top-down so far (every owner's)
    previous_size = 0  # vertices of the previous level's frontier (every owner's)
    proposed = False  # the estimate says this level should go bottom-up
    after_bottom_up = False  # the previous level went bottom-up
    level = 0
    while depth_limit is None or level < depth_limit:
        stats.begin()
        tag = 2 * level
        if part.undirected and (proposed or after_bottom_up):
            # A bottom-up level begins by sharing the frontier: exact counts decide again.
            mine = run.bitmap_slice()
            counts = (run.size, run.edges, part.n_edges)
            received = stats.exchange(tag, [(counts, run.message_copy(mine))] * layout.n_owners,
                                      mine.nbytes * (layout.n_owners - 1))
            size = run.size + sum(c[0] for c, _ in received)
            edges = run.edges + sum(c[1] for c, _ in received)
            total_edges = part.n_edges + sum(c[2] for c, _ in received)
            if size == 0:  # the last bottom-up level claimed nothing anywhere
                stats.end(BOTTOM_UP, size)
                break
            if after_bottom_up:
                bottom_up = thresholds.stay_bottom_up(size, previous_size, n)
            else:
                bottom_up = thresholds.go_bottom_up(edges, total_edges - checked_edges, n)
            if bottom_up:
                slices = [s for _, s in received]
                slices.insert(part.owner, mine)
                run.bottom_up(level, slices)
                previous_size = size
                proposed, after_bottom_up = False, True
                stats.end(BOTTOM_UP, size)
                level += 1
                continue
            tag += 1  # top-down after all: a second message round at this level
        counters = run.top_down(level)
        frontier_size, frontier_edges = run.size, run.edges
        kernels = run.kernels
        claimed, claimed_edges = int(counters[kernels.NEXT]), int(counters[kernels.NEXT_EDGES])
        sent = int(counters[kernels.QUEUES:].sum())
        counts = (claimed + sent, frontier_size, frontier_edges, claimed, claimed_edges, sent,
                  part.n_edges)
        buckets = run.outgoing(counters)
        received = stats.exchange(tag, [(counts, bucket) for bucket in buckets],
                                  sum(b.nbytes for b in buckets if b is not None))
        total = [sum(column) for column in zip(counts, *(c for c, _ in received))]
        active, size, edges, claimed, claimed_edges, sent, total_edges = total
        run.claim([bucket for _, bucket in received if bucket is not None], level, counters)
        checked_edges += edges
        previous_size = size
        after_bottom_up = False
        stats.end(TOP_DOWN, size)
        if active == 0:
            break
        if part.undirected:
            mean_degree = claimed_edges / claimed if claimed else total_edges / max(n, 1)
            next_edges = claimed_edges + sent * mean_degree
            proposed = thresholds.go_bottom_up(next_edges, total_edges - checked_edges, n)
        level += 1
    _report_end(stats.progress, BFS, part.backend, run.dist)
    return run.dist, run.parent, stats.data


class _OwnerBfs:
    """One owner's arrays for a BFS over several owners, allocated once per traversal.

    The frontier is queued (local ids, the first ``counters[NEXT]`` entries of
    ``frontiers[current]``: what the last steps appended), in ``slice`` (this owner's words of
    the frontier bitmap), or both. Its exact length and out-degree sum are on the device in
    ``counters[NEXT]``/``[NEXT_EDGES]``; the host reads them only when it needs them (``size``
    and ``edges`` are None until then), and otherwise carries ``bound``, an upper bound of the
    length, so that the claims of one level and the expansion of the next need no host read in
    between. See gpipe/kernels/cpu_bfs_owners.py for the kernels and their arrays.
    """

    def __init__(self, part: Partition, layout: Layout, device_messages: bool = False):
        be = backends.get(part.backend)
        xp = be.xp
        self.part, self.layout, self.xp = part, layout, xp
        self.to_host = be.to_host
        self.device_messages = device_messages and be.name == backends.GPU
        self.message_copy = functools.partial(be.message_copy, device=self.device_messages)
        self.kernels = kernels = be.kernels
        n_local = part.n_local
        self.dist = xp.full(n_local, -1, dtype="int32")
        self.parent = xp.full(n_local, -1, dtype="int64")
        self.frontiers = [xp.empty(n_local, dtype="int64"), xp.empty(n_local, dtype="int64")]
        self.current = 0
        self.size = self.edges = None
        self.bound = 0
        self.queued, self.in_bitmap = True, False
        self.queue_targets = xp.empty(layout.n, dtype=part.indices.dtype)
        self.queue_parents = xp.empty(layout.n, dtype=part.indices.dtype)
        self.counters = xp.zeros(kernels.QUEUES + layout.n_owners, dtype="int64")
        self.sent = xp.zeros(self._words(layout.n), dtype=kernels.BITMAP_DTYPE)
        self.front = self.slice = self.next_slice = None  # allocated by the first bottom-up level

    def _words(self, n_bits: int) -> int:
        return -(-n_bits // self.kernels.BITMAP_BITS)

    def known(self):
        """The frontier's exact ``(length, out-degree sum)``, read from the device if need be."""
        if self.size is None:
            counters = self.to_host(self.counters)
            self.size = int(counters[self.kernels.NEXT])
            self.edges = int(counters[self.kernels.NEXT_EDGES])
            self.bound = self.size
        return self.size, self.edges

    def _next_level(self, bound):
        """What the steps appended to the other buffer becomes the (queued) frontier."""
        self.current = 1 - self.current
        self.size = self.edges = None
        self.bound = bound
        self.queued, self.in_bitmap = True, False

    def claim_sources(self, local_sources):
        part = self.part
        targets = np.asarray(local_sources, dtype=np.int64) + part.offset
        targets = self.xp.asarray(targets.astype(part.indices.dtype))
        parents = self.xp.full(targets.size, -1, dtype=part.indices.dtype)
        self.counters.fill(0)
        self.kernels.bfs_owner_claim(part.indptr, part.offset, targets, parents, self.dist,
                                     self.parent, -1, self.frontiers[1 - self.current],
                                     self.counters)
        self._next_level(int(targets.size))

    def top_down(self, level: int):
        """Expand the frontier; the counters, read back once (host int64 array), which also give
        the frontier's exact length and out-degree sum (``FRONTIER``, ``FRONTIER_EDGES``)."""
        part = self.part
        self.queue()
        self.kernels.bfs_owner_top_down(
            part.indptr, part.indices, part.offset, self.frontiers[self.current], self.dist,
            self.parent, level, self.layout.chunk, self.sent, self.frontiers[1 - self.current],
            self.queue_targets, self.queue_parents, self.counters, frontier_bound=self.bound)
        counters = self.to_host(self.counters)
        self.size = int(counters[self.kernels.FRONTIER])
        self.edges = int(counters[self.kernels.FRONTIER_EDGES])
        return counters

    def outgoing(self, counters) -> list:
        """Per owner, its queue as one array, the targets then the parents (None if empty or
        this owner). A copy, since the queues are reused while the messages may still be on
        their way. Over TCP it is one host array: the message travels through the host anyway,
        Dask's serialization of device arrays costs more per message than the copy, and the
        receiver then uploads it in one piece (H100, grid 100^3: these were most of an owner's
        own work per level). Over UCX it stays on the device, which the transport moves
        device to device."""
        xp = self.xp if self.device_messages else np
        copy = (lambda a: a) if self.device_messages else self.to_host
        buckets = []
        for q in range(self.layout.n_owners):
            count = int(counters[self.kernels.QUEUES + q])
            start = self.layout.offset(q)
            buckets.append(None if count == 0 or q == self.part.owner else xp.concatenate([
                copy(self.queue_targets[start:start + count]),
                copy(self.queue_parents[start:start + count])]))
        return buckets

    def claim(self, buckets, level: int, counters):
        """Claim what peers sent after the top-down step at ``level`` (whose host ``counters``
        are given): the next frontier is ready, its length known on the device only."""
        part, xp = self.part, self.xp
        for bucket in buckets:
            pairs = xp.asarray(bucket)  # targets, then parents
            count = int(pairs.size) // 2
            self.kernels.bfs_owner_claim(part.indptr, part.offset, pairs[:count], pairs[count:],
                                         self.dist, self.parent, level,
                                         self.frontiers[1 - self.current], self.counters)
        claimed = int(counters[self.kernels.NEXT])
        self._next_level(claimed + sum(int(bucket.size) // 2 for bucket in buckets))
        if not buckets:  # nothing came in: the step's own counts are exact
            self.size, self.edges = claimed, int(counters[self.kernels.NEXT_EDGES])

    def queue(self):
        """Make sure the frontier is queued (after bottom-up levels it is only a bitmap)."""
        if not self.queued:
            self.kernels.bitmap_to_frontier(self.slice, self.frontiers[self.current], self.counters)
            self.queued = True

    def bitmap_slice(self):
        """The frontier as this owner's words of the frontier bitmap over global ids (its exact
        length and out-degree sum are then known on the host too)."""
        size, _ = self.known()
        if self.front is None:
            xp, kernels = self.xp, self.kernels
            self.front = xp.zeros(self._words(self.layout.n), dtype=kernels.BITMAP_DTYPE)
            self.slice = xp.zeros(self._words(self.part.n_local), dtype=kernels.BITMAP_DTYPE)
            self.next_slice = xp.zeros_like(self.slice)
        if not self.in_bitmap:
            self.kernels.frontier_to_bitmap(self.frontiers[self.current][:size], self.slice)
            self.in_bitmap = True
        return self.slice

    def bottom_up(self, level: int, slices):
        """A bottom-up level over the frontier made of ``slices`` (every owner's, in owner order)."""
        part, layout = self.part, self.layout
        for q, words in enumerate(slices):
            start = layout.offset(q) // self.kernels.BITMAP_BITS
            self.front[start:start + words.size] = self.xp.asarray(words)
        self.kernels.bfs_owner_bottom_up(part.indptr, part.indices, self.dist, self.parent, level,
                                         self.front, self.next_slice, self.counters)
        self.slice, self.next_slice = self.next_slice, self.slice
        self.size = self.edges = None
        self.queued, self.in_bitmap = False, True
        self.known()


class _LevelStats:
    """Per-level statistics of one owner's BFS, and its exchanges (timed)."""

    def __init__(self, channel, owner: int):
        self.channel = channel
        self.progress = progress.Reporter(getattr(channel, "key", "in-process"), "bfs", owner,
                                          len(getattr(channel, "addresses", [None])))
        self.data = {"owner": owner, "levels": 0, "direction": [], "frontier": [], "messages": [],
                     "bytes_sent": [], "kernel_s": [], "wait_s": []}
        self._start = self._wait = 0.0
        self._messages = self._bytes = 0

    def begin(self):
        self._start = time.perf_counter()
        self._wait = 0.0
        self._messages = self._bytes = 0

    def exchange(self, tag, payloads, nbytes):
        """``channel.exchange``, timed and counted."""
        t0 = time.perf_counter()
        received = self.channel.exchange(tag, payloads)
        self._wait += time.perf_counter() - t0
        self._messages += 1
        self._bytes += int(nbytes)
        return received

    def end(self, direction, frontier):
        data = self.data
        data["levels"] += 1
        data["direction"].append(direction)
        data["frontier"].append(int(frontier))
        data["messages"].append(self._messages)
        data["bytes_sent"].append(self._bytes)
        data["wait_s"].append(self._wait)
        data["kernel_s"].append(time.perf_counter() - self._start - self._wait)
        self.progress.level(data["levels"] - 1, frontier)  # the level expanded: its frontier's distance
