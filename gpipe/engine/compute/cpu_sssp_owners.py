"""SSSP over several owners on the CPU (Numba): one owner's relaxations, merge, splits and
outbox; the line-by-line twin of ``kernels/sssp_owners.cu`` (gpipe/engine/compute/gpu_sssp_owners.py).

What it computes
    One owner's share of a delta-stepping [1] (non-negative weights) or Bellman-Ford [2]
    (any weights) SSSP whose vertices are split among owners that exchange candidate
    distances (gpipe/engine/owners/sssp.py, ``sssp_owner_arrays``). Everything works in place on a
    :class:`gpipe.engine.compute.owner_state.SsspOwnerState`, whose docstring lists the arrays and
    the two thresholds: the exchange window T, shared by all owners, and the local bucket t.

    sssp_owner_relax   The local phase: relaxation rounds from the near queue until it is
                       empty, then the next local bucket from the mid pile, until nothing is
                       left below T (or after ``max_rounds`` rounds: Bellman-Ford's one).
                       A lowered local target goes near, mid or far by its new distance; a
                       remote target's candidate is kept only if it beats ``sent_best`` (the
                       least distance ever queued for it) and then queued once in its
                       owner's outbox segment. A candidate above the state's ``bound``
                       (max_distance) is dropped, local or remote: Dijkstra's cutoff, so a
                       kept vertex's parent is kept, whatever the weights' signs.
    sssp_owner_pack    The outbox, one ``(targets, dists, parents)`` per owner; clears it.
    sssp_owner_merge   Lowers ``dist`` by arriving candidates; the improved go near, mid or far.
    sssp_owner_advance Raises T: the far pile's entries below the new T move to the mid pile.
    sssp_owner_counts  The counters, on the host.

Technique (the same in both twins)
    - Fused pruning. No sort or unique per round: the remote candidates are reduced to one per
      target by an atomic minimum on ``sent_best`` (a compare-and-swap loop on the double in
      CUDA; a plain comparison here, where one thread runs an owner), and the thread whose
      minimum lowered it queues the target if it is not queued yet (``queued`` 0 -> 1). The
      pruning is exact: the owner of v already holds a distance no larger than anything sent
      for v, so a candidate not below ``sent_best[v]`` cannot improve v.
    - Two passes per round, as ``kernels/sssp.cu``: pass 1 takes every minimum; pass 2, once
      they are final (a kernel boundary), writes ``parent[v]`` (and ``send_parent``) from an
      edge whose candidate equals the final value exactly, and the first edge to move
      ``stamp[v]`` from "lowered" to "listed" queues v: so (distance, parent) always agree,
      and a vertex is queued once per call. Parents change only on strict improvement.
    - Queues without repeats by marks (``near_mark`` holds the round of the queue, so it needs
      no clearing; ``mid_mark``/``far_mark`` are cleared by the split that empties the pile);
      stamps ``2c + 1`` / ``2c + 2`` for call ``c``: no per-call flag array is allocated.
    - Two bucket widths. Messages cost far more than relaxations, so the exchange window is
      wide; relaxing a wide window round by round would relax most vertices several times
      (each round relaxes from the snapshot), so inside it the owner walks narrow local
      buckets, near-far style [3]: the near queue below t, the mid pile up to T, split again
      when the near queue runs dry. A split drops the entries whose distance fell below the
      threshold that put them on the pile (they were relaxed from the near queue since).
    The CPU runs each owner on one thread: the "atomics" are plain read-compare-writes, the
    warp-aggregated queue appends plain appends, the edge-parallel passes loops over the
    frontier's rows in order. Each function below names the CUDA kernel it mirrors.

References
    [1] U. Meyer, P. Sanders, "Delta-stepping: a parallelizable shortest path algorithm",
        J. Algorithms 49, 2003.
    [2] R. Bellman, "On a routing problem", Quarterly of Applied Mathematics 16, 1958.
    [3] A. Davidson, S. Baxter, M. Garland, J. D. Owens, "Work-Efficient Parallel GPU Methods
        for Single-Source Shortest Paths", IPDPS 2014.
"""

import numba
import numpy as np

from gpipe.engine.compute.cpu_delta import delta_for
from gpipe.engine.compute.owner_state import (FAR, FAR_MIN, INF_BITS, MID, MID_MIN, NEAR, RELAXED, SENT,
                                              SENT_MIN, Counts, SsspOwnerState, counts_from)

from gpipe.engine.compute.cpu_jit import (FLOAT64, FLOAT64S, INT32S, INT64, INT64S, INT64S_2D, UINT8S,
                                          each_index_and_weight, kernel, plain)

_kernel = numba.njit(cache=True, nogil=True)
_inline = numba.njit(cache=True, nogil=True, inline="always")

# First exchange window: WINDOW_EDGES * mean weight / mean degree (the GPU's near-far band,
# kernels/sssp_nearfar.cu, uses 96). On a CPU a message between two worker processes costs
# about as much as 2,000 vertex relaxations, and wide windows make owners relax vertices
# again when better distances arrive (two owners of kron18, measured 2026-11-23: windows of
# 8/16/32/96 x gave 34/24/18/12 steps and 1.2-1.5/1.4-2.0/1.5-1.9/1.8-3.0 x the relaxations
# of one owner; a 40^3 grid, 64/30/22/12 steps at 1.0-1.1 x). Start at 32 and let the
# repeated relaxations steer it (gpipe/engine/traverse.py).
WINDOW_EDGES = 32


# ---------------------------------------------------------------------------------------------
# Device-function twins
# ---------------------------------------------------------------------------------------------


@_inline
def _lower(values, index, value):
    """atomic_min_double: values[index] = min(values[index], value); whether it went down."""
    if value < values[index]:
        values[index] = value
        return True
    return False


@_inline
def onto_pile(v, d, min_slot, mark, out, slot, counts, values):
    """Fold d into values[min_slot], a pile's minimum, and put v on the pile (out, its length
    in counts[slot]) unless mark[v] says it is there already."""
    if d < values[min_slot]:
        values[min_slot] = d
    if mark[v] == 0:
        mark[v] = 1
        out[counts[slot]] = v
        counts[slot] += 1


@_inline
def _list_improved(v, d, local_threshold, threshold, fill_round, near_mark, mid_mark, far_mark,
                   near_out, mid_out, mid_slot, far_out, far_slot, counts, values):
    """list_improved: queue local vertex v, just improved to (or found at) distance d: near
    (d < t, once per queue), else on the mid pile (d < T) or the far pile (once while on it),
    folding d into that pile's minimum."""
    if d < local_threshold:
        if near_mark[v] != fill_round:
            near_mark[v] = fill_round
            near_out[counts[NEAR]] = v
            counts[NEAR] += 1
    elif d < threshold:
        onto_pile(v, d, MID_MIN, mid_mark, mid_out, mid_slot, counts, values)
    else:
        onto_pile(v, d, FAR_MIN, far_mark, far_out, far_slot, counts, values)


# ---------------------------------------------------------------------------------------------
# Kernel twins
# ---------------------------------------------------------------------------------------------


@_kernel
def _frontier(indptr, frontier, k, dist, snapshot, edge_end, counts):
    """sssp_owner_frontier (+ the scan): each slot's distance now, and the prefix sum of degrees;
    the near queue about to be filled emptied, the round's vertices counted."""
    counts[NEAR] = 0
    counts[RELAXED] += k
    total = 0
    for i in range(k):
        u = frontier[i]
        snapshot[i] = dist[u]
        total += indptr[u + 1] - indptr[u]
        edge_end[i] = total


@_kernel
def _relax_edges(indptr, indices, weights, offset, n_local, chunk, frontier, snapshot, k, dist,
                 stamp, lowered, sent_best, queued, outbox, outbox_start, counts, values, bound):
    """sssp_owner_relax_edges (pass 1): every minimum of the round; remote targets queued once;
    candidates above `bound` (the cutoff) dropped."""
    for i in range(k):
        u = frontier[i]
        for j in range(indptr[u], indptr[u + 1]):
            v = np.int64(indices[j])
            cand = snapshot[i] + weights[j]
            if cand > bound:
                continue  # beyond the cutoff: never held, never sent
            local = v - offset
            if local >= 0 and local < n_local:
                if _lower(dist, local, cand):
                    stamp[local] = lowered
            else:
                r = v if local < 0 else v - n_local
                if _lower(sent_best, r, cand):
                    if cand < values[SENT_MIN]:
                        values[SENT_MIN] = cand
                    if queued[r] == 0:
                        queued[r] = 1
                        q = v // chunk
                        outbox[outbox_start[q] + counts[SENT + q]] = v
                        counts[SENT + q] += 1


@_kernel
def _settle_edges(indptr, indices, weights, offset, n_local, frontier, snapshot, k, dist, parent,
                  stamp, lowered, local_threshold, threshold, fill_round, near_mark, mid_mark,
                  far_mark, near_out, mid_out, mid_slot, far_out, far_slot, sent_best, send_parent,
                  queued, counts, values):
    """sssp_owner_settle_edges (pass 2): parents from edges whose candidate is the final minimum;
    each lowered local vertex listed once."""
    for i in range(k):
        u = frontier[i]
        for j in range(indptr[u], indptr[u + 1]):
            v = np.int64(indices[j])
            cand = snapshot[i] + weights[j]
            local = v - offset
            if local >= 0 and local < n_local:
                s = stamp[local]
                if (s == lowered or s == lowered + 1) and cand == dist[local]:
                    parent[local] = offset + u
                    if stamp[local] == lowered:
                        stamp[local] = lowered + 1
                        _list_improved(local, dist[local], local_threshold, threshold, fill_round,
                                       near_mark, mid_mark, far_mark, near_out, mid_out, mid_slot,
                                       far_out, far_slot, counts, values)
            else:
                r = v if local < 0 else v - n_local
                if queued[r] != 0 and cand == sent_best[r]:
                    send_parent[r] = offset + u


@kernel((INT64S, INT64, UINT8S, FLOAT64, FLOAT64, FLOAT64, INT64, FLOAT64S, INT32S, UINT8S, UINT8S,
         INT64S, INT64S, INT64, INT64S, INT64, INT64S, FLOAT64S))
def _split(pile, pile_slot, pile_mark, drop_below, local_threshold, threshold, fill_round, dist,
           near_mark, mid_mark, far_mark, near_out, mid_out, mid_slot, far_out, far_slot, counts,
           values):
    """sssp_owner_split: empty a pile into the queues by the thresholds, dropping the entries
    below `drop_below` (relaxed since they were put there)."""
    for i in range(counts[pile_slot]):
        v = pile[i]
        pile_mark[v] = 0
        d = dist[v]
        if d >= drop_below:
            _list_improved(v, d, local_threshold, threshold, fill_round, near_mark, mid_mark,
                           far_mark, near_out, mid_out, mid_slot, far_out, far_slot, counts, values)


@kernel(*each_index_and_weight(lambda indices, weights: (
    INT64S, indices, weights, INT64, INT64, INT64, FLOAT64, FLOAT64, INT64, FLOAT64S, INT64S, INT32S,
    INT32S, UINT8S, UINT8S, INT64S_2D, INT64S_2D, INT64S_2D, FLOAT64S, INT64S, FLOAT64S, INT64S, INT32S,
    INT64S, INT64S, INT64S, FLOAT64S, INT64, INT64, INT64, INT64, INT64, FLOAT64, FLOAT64)))
def _local_phase(indptr, indices, weights, offset, n_local, chunk, threshold, local_delta,
                 max_rounds, dist, parent, stamp, near_mark, mid_mark, far_mark, near, mid, far,
                 snapshot, edge_end, sent_best, send_parent, queued, outbox, outbox_start, counts,
                 values, near_fill, mid_fill, far_fill, fill_round, calls, local_threshold, bound):
    """The host loop of gpu_sssp_owners.sssp_owner_relax, compiled. Returns the rounds run and
    the new near_fill, mid_fill, fill_round, calls and local threshold."""
    rounds = 0
    far_slot = FAR + far_fill
    while True:
        while counts[NEAR] > 0 and (max_rounds < 0 or rounds < max_rounds):
            k = counts[NEAR]
            frontier = near[near_fill]
            near_fill = 1 - near_fill
            fill_round += 1
            _frontier(indptr, frontier, k, dist, snapshot, edge_end, counts)
            lowered = 2 * calls + 1
            calls += 1
            _relax_edges(indptr, indices, weights, offset, n_local, chunk, frontier, snapshot, k,
                         dist, stamp, lowered, sent_best, queued, outbox, outbox_start, counts,
                         values, bound)
            _settle_edges(indptr, indices, weights, offset, n_local, frontier, snapshot, k, dist,
                          parent, stamp, lowered, local_threshold, threshold, fill_round, near_mark,
                          mid_mark, far_mark, near[near_fill], mid[mid_fill], MID + mid_fill,
                          far[far_fill], far_slot, sent_best, send_parent, queued, counts, values)
            rounds += 1
        if max_rounds >= 0 and rounds >= max_rounds:
            break
        low = values[MID_MIN]
        if not low < threshold:
            break  # nothing live below T on the mid pile: the window is done here
        raised = min(threshold, max(low + local_delta, np.nextafter(low, np.inf)))
        fresh = 1 - mid_fill
        counts[MID + fresh] = 0
        values[MID_MIN] = np.inf
        _split(mid[mid_fill], MID + mid_fill, mid_mark, local_threshold, raised, threshold,
               fill_round, dist, near_mark, mid_mark, far_mark, near[near_fill], mid[fresh],
               MID + fresh, far[far_fill], far_slot, counts, values)
        mid_fill = fresh
        local_threshold = raised
    return rounds, near_fill, mid_fill, fill_round, calls, local_threshold


@kernel((INT64, INT64S, FLOAT64S, INT64, FLOAT64S, INT32S, INT64))
def _merge_lower(offset, targets, dists, m, dist, stamp, lowered):
    """sssp_owner_merge_lower (pass 1): every arriving candidate's minimum."""
    for i in range(m):
        local = targets[i] - offset
        if _lower(dist, local, dists[i]):
            stamp[local] = lowered


@kernel((INT64, INT64S, FLOAT64S, INT64S, INT64, FLOAT64S, INT64S, INT32S, INT64, FLOAT64, FLOAT64,
         INT64, INT32S, UINT8S, UINT8S, INT64S, INT64S, INT64, INT64S, INT64, INT64S, FLOAT64S))
def _merge_settle(offset, targets, dists, parents, m, dist, parent, stamp, lowered, local_threshold,
                  threshold, fill_round, near_mark, mid_mark, far_mark, near_out, mid_out, mid_slot,
                  far_out, far_slot, counts, values):
    """sssp_owner_merge_settle (pass 2): the parent of a candidate that is the final minimum;
    each lowered vertex listed once."""
    for i in range(m):
        local = targets[i] - offset
        s = stamp[local]
        if (s == lowered or s == lowered + 1) and dists[i] == dist[local]:
            parent[local] = parents[i]
            if stamp[local] == lowered:
                stamp[local] = lowered + 1
                _list_improved(local, dist[local], local_threshold, threshold, fill_round, near_mark,
                               mid_mark, far_mark, near_out, mid_out, mid_slot, far_out, far_slot,
                               counts, values)


@kernel((INT64, INT64, INT64S, INT64, INT64, FLOAT64S, INT64S, INT32S, INT64S, FLOAT64S, INT64S))
def _pack(offset, n_local, outbox, start, count, sent_best, send_parent, queued, targets, dists,
          parents):
    """sssp_owner_pack: one owner's outbox segment as (target, distance, parent); dequeued."""
    for i in range(count):
        v = outbox[start + i]
        r = v if v < offset else v - n_local
        targets[i] = v
        dists[i] = sent_best[r]
        parents[i] = send_parent[r]
        queued[r] = 0


# ---------------------------------------------------------------------------------------------
# Contract: the functions the driver calls (the same in gpipe/engine/compute/gpu_sssp_owners.py)
# ---------------------------------------------------------------------------------------------


def _views(state):
    return state.counters.view(np.int64), state.counters.view(np.float64)


def sssp_owner_relax(indptr, indices, weights, state: SsspOwnerState, threshold, max_rounds):
    """The local phase: relax until nothing is left below ``threshold`` (T), or ``max_rounds``
    (< 0: no limit) rounds have run. Returns the number of rounds.

    A round takes the near queue being filled as its frontier and the distances it holds now
    as the snapshot, relaxes every out-edge of the frontier once from the snapshot, and fills
    the other near queue. Lowered local vertices get a parent whose candidate equals their
    distance exactly and are listed near (below the local threshold t), on the mid pile
    (below T) or on the far pile. Remote candidates below ``sent_best`` lower it and queue their
    target (once), with ``send_parent`` consistent with it. When the near queue is empty and
    the mid pile holds something below T, t rises to the pile's least distance plus
    ``state.local_delta`` (at most T) and the pile is split. A candidate above ``state.bound``
    (the cutoff) is dropped, local or remote, so what arrives at a merge is within it too.
    """
    counts, values = _views(state)
    (rounds, state.near_fill, state.mid_fill, state.fill_round, state.calls,
     state.local_threshold) = _local_phase(
        indptr, indices, weights, np.int64(state.offset), np.int64(state.n_local),
        np.int64(state.chunk), float(threshold), float(state.local_delta), np.int64(max_rounds),
        state.dist, state.parent, state.stamp, state.near_mark, state.mid_mark, state.far_mark,
        state.near, state.mid, state.far, state.snapshot, state.edge_end, state.sent_best,
        state.send_parent, state.queued, state.outbox, state.outbox_start, counts, values,
        np.int64(state.near_fill), np.int64(state.mid_fill), np.int64(state.far_fill),
        np.int64(state.fill_round), np.int64(state.calls), float(state.local_threshold),
        float(state.bound))
    return int(rounds)


def sssp_owner_counts(state: SsspOwnerState) -> Counts:
    """The counters, read to the host (a copy)."""
    return counts_from(state.counters.copy(), state)


def sssp_owner_pack(state: SsspOwnerState, sent: list) -> list:
    """One ``(targets int64, dists float64, parents int64)`` per owner from the outbox, whose
    segment lengths ``sent`` were read with :func:`sssp_owner_counts` (None for an empty one and
    for this owner). Fresh arrays, safe to send while the owner goes on. Ends the step: the
    outbox emptied (``queued`` cleared for the packed ids), the segment lengths, ``SENT_MIN``,
    ``RELAXED`` and ``REPEATED`` reset."""
    buckets = []
    for q, count in enumerate(sent):
        if count == 0:
            buckets.append(None)
            continue
        targets = np.empty(count, dtype=np.int64)
        dists = np.empty(count, dtype=np.float64)
        parents = np.empty(count, dtype=np.int64)
        _pack(np.int64(state.offset), np.int64(state.n_local), state.outbox,
              np.int64(state.outbox_start_host[q]), np.int64(count), state.sent_best, state.send_parent,
              state.queued, targets, dists, parents)
        buckets.append((targets, dists, parents))
    state.counters[RELAXED:] = 0  # RELAXED, REPEATED and every SENT + q
    state.counters[SENT_MIN] = INF_BITS
    return buckets


def sssp_owner_merge(state: SsspOwnerState, buckets: list, threshold) -> None:
    """Lower ``dist`` by arriving ``(targets, dists, parents)`` buckets (global targets of this
    owner; repeats across buckets allowed). A lowered vertex gets the parent of a candidate
    equal to its final distance and is listed, once, near (below the local threshold), mid
    (below ``threshold``) or far."""
    if not buckets:
        return
    targets, dists, parents = (plain(np.concatenate(c) if len(buckets) > 1 else c[0])
                               for c in zip(*buckets))
    counts, values = _views(state)
    lowered = np.int64(2 * state.calls + 1)
    state.calls += 1
    m = np.int64(targets.shape[0])
    _merge_lower(np.int64(state.offset), targets, dists, m, state.dist, state.stamp, lowered)
    _merge_settle(np.int64(state.offset), targets, dists, parents, m, state.dist, state.parent,
                  state.stamp, lowered, float(state.local_threshold), float(threshold),
                  np.int64(state.fill_round), state.near_mark, state.mid_mark, state.far_mark,
                  state.near[state.near_fill], state.mid[state.mid_fill],
                  np.int64(MID + state.mid_fill), state.far[state.far_fill],
                  np.int64(FAR + state.far_fill), counts, values)


def sssp_owner_advance(state: SsspOwnerState, old_threshold, new_threshold) -> None:
    """Raise the window from ``old_threshold`` to ``new_threshold``: the far pile is split into
    the mid pile (``old <= dist < new``) and a new far pile, whose minimum is recomputed; its
    entries below ``old`` (relaxed already) are dropped."""
    counts, values = _views(state)
    fresh = 1 - state.far_fill
    state.counters[FAR + fresh] = 0
    state.counters[FAR_MIN] = INF_BITS
    _split(state.far[state.far_fill], np.int64(FAR + state.far_fill), state.far_mark,
           float(old_threshold), float(state.local_threshold), float(new_threshold),
           np.int64(state.fill_round), state.dist, state.near_mark, state.mid_mark, state.far_mark,
           state.near[state.near_fill], state.mid[state.mid_fill], np.int64(MID + state.mid_fill),
           state.far[fresh], np.int64(FAR + fresh), counts, values)
    state.far_fill = fresh


def sssp_owners_delta(mean_weight, max_weight, mean_degree):
    """``(local bucket width, first exchange window)`` of a multi-owner delta-stepping, from
    statistics every owner shares (gpipe/engine/traverse.py).

    The local width is the one-owner kernel's (``cpu_delta.delta_for``); the window starts at
    WINDOW_EDGES * mean weight / mean degree and then follows the repeated relaxations.
    """
    local = delta_for(max_weight, mean_degree)
    return local, max(local, WINDOW_EDGES * mean_weight / max(1.0, mean_degree))
