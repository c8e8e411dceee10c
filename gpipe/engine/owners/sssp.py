"""One owner's share of an SSSP over several owners, in step with its peers.

Non-negative weights: delta-stepping across owners. All owners share a window end T; a step is
one *local phase* (the owner relaxes its own vertices below T until none is left, no
messages), then one exchange of every owner's :class:`~gpipe.engine.owners.messages.SsspSummary` and
the candidates for each peer, pruned as they are found against the least distance ever sent
for each target (``sent_best``). While anyone sent a candidate below T the owners run another
step at the same T; otherwise all raise it together. Negative weights: frontier Bellman-Ford,
one local round per step, with the same pruning and merging kernels. The kernels keep every
working array allocated once per traversal (:mod:`gpipe.engine.compute.owner_state`).

A negative cycle reachable from a source shows as a cycle in the parent graph (parents change
only on strict improvement), looked for at power-of-two steps over the parents all-gathered
from every owner, and as a step bound that no negative-cycle-free graph reaches. A negative
self-loop, which the CSR does not hold, is a cycle when the traversal reaches its vertex: each
owner checks its own once the steps are over.
"""

from __future__ import annotations

import time

import numpy as np

from gpipe.engine import backend as backends
from gpipe.engine.compute import owner_state
from gpipe.engine.outcome import cycle_check_due, has_parent_cycle, raise_if_negative_loop_reached, report_end
from gpipe.engine.owners import messages
from gpipe.engine.owners.owner_result import owner_result
from gpipe.engine.partition import Layout, Partition
from gpipe.engine.result import SSSP
from gpipe.errors import NegativeCycleError
from gpipe.watch import progress

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


def sssp_owner(channel, part: Partition, ids, layout: Layout, local_sources, group,
               negative_weights, want_stats, parents, max_distance, vertex_dtype):
    """This owner's result frame of an SSSP, relaxed in step with its peers over the
    transport of ``group`` (and its :class:`~gpipe.engine.owners.messages.OwnerSteps` when
    ``want_stats``).

    Raises NegativeCycleError (on every owner at the same step) when the parent graph gets a
    cycle, or when the steps outrun any negative-cycle-free graph; and, after the last step,
    on an owner that reached one of its negative self-loops (its peers, done by then, return
    their frames; the caller sees this owner's error).
    """
    return owner_result(channel, group, part, layout,
                        lambda transport: sssp_owner_arrays(transport, part, layout, local_sources,
                                                            negative_weights, ids, max_distance),
                        SSSP, ids, parents, vertex_dtype, want_stats)


def sssp_owner_arrays(transport, part: Partition, layout: Layout, local_sources,
                      negative_weights: bool, ids=None, max_distance=None):
    """One owner's share of an SSSP over several owners: ``(dist float64[n_local], parent
    int64[n_local] global ids, OwnerSteps)``, +inf and -1 where unreached.

    Non-negative weights: delta-stepping; each step runs the local rounds below the threshold,
    then exchanges. Negative weights: Bellman-Ford, one round per step. ``max_distance`` is
    Dijkstra's cutoff (the owner state's bound: candidates above it are dropped). Raises
    NegativeCycleError where this owner reached one of its negative self-loops (named by its
    input id through ``ids``, the graph's sorted ids if renumbered), before its end is
    reported, so that whoever watches sees it fail.
    """
    kernels = backends.get(part.backend).kernels
    stats = messages.OwnerSteps(transport.owner)
    reporter = progress.Reporter(transport.key, "sssp", transport.owner, transport.n_owners)
    reporter.start(len(local_sources))
    stats.begin_steps()
    clock = time.perf_counter()
    threshold = np.inf if negative_weights else FIRST_THRESHOLD
    state = owner_state.new_state(part.xp, layout.n, part.offset, part.n_local, layout.chunk,
                                  layout.n_owners, np.unique(local_sources).astype(np.int64),
                                  threshold, bound=np.inf if max_distance is None else max_distance)
    max_rounds = 1 if negative_weights else -1
    sample = (0.0,) * 5 if negative_weights else _weight_sample(part)
    bucket, step, first_window, relaxed, repeated = 0, 0, None, 0, 0
    while True:
        rounds = kernels.sssp_owner_relax(part.indptr, part.indices, part.weights, state,
                                          threshold, max_rounds)
        counts = kernels.sssp_owner_counts(state)
        outgoing = kernels.sssp_owner_pack(state, counts.sent)
        mine = messages.SsspSummary(counts.pending, counts.sent_min, counts.far_min,
                                    counts.relaxed, counts.repeated, *sample)
        reporter.level(step, counts.pending)
        kernel_s = time.perf_counter() - clock
        clock = time.perf_counter()
        matrix, received = transport.exchange(step, messages.vector(mine), outgoing,
                                              messages.SSSP_BUCKET)
        wait_s = time.perf_counter() - clock
        clock = time.perf_counter()
        kernels.sssp_owner_merge(state, [b for b in received if b is not None], threshold)
        summaries = messages.rows(messages.SsspSummary, matrix)  # owner order on every owner
        pending = sum(s.pending for s in summaries)
        stats.add("bellman-ford" if negative_weights else f"bucket {bucket}", pending, rounds, 1,
                  sum(a.nbytes for b in outgoing if b is not None for a in b), kernel_s, wait_s)
        if pending == 0:
            break
        step += 1
        if negative_weights:  # the check's time counts as the next step's own work
            if step > 2 * layout.n + 2 or (
                cycle_check_due(step) and _parent_cycle_anywhere(transport, part, layout, state, step)
            ):
                raise NegativeCycleError("a negative-weight cycle is reachable from the source")
            continue
        if step == 1:
            state.local_delta, state.window = _shared_delta(kernels, summaries, layout.n)
            first_window = state.window
        relaxed += sum(int(s.relaxed) for s in summaries)
        repeated += sum(int(s.repeated) for s in summaries)
        sent_min = min(s.sent_min for s in summaries)
        if sent_min < threshold:
            continue  # candidates below the threshold arrived somewhere: the window goes on
        if bucket > 0:
            state.window = _next_window(state.window, first_window, state.local_delta, relaxed,
                                        repeated)
        relaxed = repeated = 0
        low = min(sent_min, min(s.far_min for s in summaries))
        raised = max(low + state.window, float(np.nextafter(low, np.inf)))
        kernels.sssp_owner_advance(state, threshold, raised)
        threshold, bucket = raised, bucket + 1
    stats.kernel_s[-1] += time.perf_counter() - clock  # merging the last step's arrivals
    raise_if_negative_loop_reached(part, ids, state.dist)
    report_end(reporter, SSSP, part.backend, state.dist, steps=step + 1)
    return state.dist, state.parent, stats


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


def _shared_delta(kernels, summaries: list, n: int) -> tuple:
    """``(local bucket width, first window width)`` from every owner's edge sample
    (:class:`~gpipe.engine.owners.messages.SsspSummary`, owner order: the same on all owners)."""
    samples = [(s.sample_edges, s.sample_sum, s.sample_size, s.sample_max, s.sample_crossing)
               for s in summaries]
    edges = sum(s[0] for s in samples)
    if edges == 0 or n == 0:
        return 1.0, 1.0
    mean = sum(s[0] * s[1] / s[2] for s in samples if s[2]) / edges
    crossing = sum(s[0] * s[4] / s[2] for s in samples if s[2]) / edges
    top = max(s[3] for s in samples)
    local, window = kernels.sssp_owners_delta(mean, top, edges / n)
    wider = min(WINDOW_RANGE, max(0.25, CROSSING_SHARE / max(crossing, CROSSING_SHARE / WINDOW_RANGE)))
    return float(local), max(float(local), float(window) * wider)


def _parent_cycle_anywhere(transport, part: Partition, layout: Layout, state, round_no: int) -> bool:
    """Whether the parents of all owners together hold a cycle; the same answer on every
    owner, each of which gathers every owner's parents and looks."""
    everyone = part.xp.full(layout.n_owners * layout.chunk, -1, dtype=np.int64)
    transport.allgather(f"parents-{round_no}", np.zeros(1), state.parent, everyone)
    return has_parent_cycle(part.backend, everyone[:layout.n])
