"""The CPU's local phase of a multi-owner SSSP with non-negative weights: serial delta-stepping
over a ring of buckets.

What it computes
    The same as ``sssp_owner_relax`` / ``sssp_owner_merge`` / ``sssp_owner_advance`` of
    :mod:`gpipe.engine.compute.cpu_sssp_owners` (the twin of the CUDA kernels) for non-negative
    weights: every local vertex below the exchange window's end T relaxed at its final
    distance given what has arrived, remote candidates pruned against ``sent_best`` and
    queued once per exchange, vertices at T or beyond left on the far pile. Pack, counters and
    the far pile are shared with the twin.

Why another local phase on the CPU
    The twin walks local buckets near-far style: every time its near queue runs dry it scans
    the whole mid pile for the next bucket, and it relaxes each round from a snapshot. On a GPU
    a pass over the pile is cheap and a round is what costs; one CPU thread pays for every
    scanned entry instead (kron18, two owners: 2-4x the edges of one relaxation per vertex,
    and the scans on top). Here one thread runs Meyer and Sanders' delta-stepping [1] the
    serial way, as GAPBS's ``sssp.cc`` [2] runs it per thread: a ring of buckets of width
    ``state.local_delta`` holding vertex ids appended at every improvement (lazy deletion: an
    entry whose vertex was relaxed at its current distance since, ``relaxed[v] == dist[v]``,
    is skipped), the lowest bucket emptied in place, with the entries its relaxations add to
    it (bin fusion), then the next. A vertex is relaxed about once per distance it holds when
    its bucket comes up, and parents are written with the distance (one thread: they agree).

Memory layout (:class:`Ring`, on ``state.ring``)
    ``vertex``/``next`` entry pool (a singly linked list per bucket slot; freed entries go on a
    free list); ``head``/``tail``/``count`` per slot; ``cursor`` int64[4] = the absolute bucket
    being emptied, the free list's head and length, the pool's first never-used entry;
    ``relaxed`` float64[n_local], NaN = never relaxed. The slots cover the window: a window of
    width W needs W / local_delta + 3 of them (at most MAX_SLOTS; a larger ratio widens the
    local buckets). Buckets sharing a slot would only be relaxed out of order, never wrongly:
    relaxations are label-correcting, and the phase ends when the ring is empty.
    ``counters[NEAR]`` counts the ring's entries, live and stale.

References
    [1] U. Meyer, P. Sanders, "Delta-stepping: a parallelizable shortest path algorithm",
        J. Algorithms 49, 2003.
    [2] S. Beamer, K. Asanovic, D. Patterson, "The GAP Benchmark Suite", arXiv:1508.03619
        (sbeamer/gapbs, src/sssp.cc).
"""

import math
from dataclasses import dataclass

import numba
import numpy as np

from gpipe.engine.compute import cpu_sssp_owners as twin
from gpipe.engine.compute.owner_state import (FAR, FAR_MIN, INF_BITS, NEAR, RELAXED, REPEATED, SENT,
                                              SENT_MIN, SsspOwnerState)

from gpipe.engine.compute.cpu_jit import (FLOAT64, FLOAT64S, INT32S, INT64, INT64S, UINT8S,
                                          each_index_and_weight, kernel, plain)

_inline = numba.njit(cache=True, nogil=True, inline="always")

MAX_SLOTS = 1 << 12
MAX_BUCKET = float(1 << 62)  # bucket numbers are clamped here (distances beyond 2**62 widths)
CUR, FREE_HEAD, FREE_COUNT, TOP = 0, 1, 2, 3  # the slots of Ring.cursor


@dataclass
class Ring:
    """One owner's bucket ring (see the module docstring)."""

    delta: float
    vertex: np.ndarray
    next: np.ndarray
    head: np.ndarray
    tail: np.ndarray
    count: np.ndarray
    cursor: np.ndarray
    relaxed: np.ndarray


# ---------------------------------------------------------------------------------------------
# Compiled pieces
# ---------------------------------------------------------------------------------------------


@_inline
def _bucket(d, delta):
    b = d / delta
    if b > MAX_BUCKET:
        b = MAX_BUCKET
    return np.int64(b)


@_inline
def _append(v, bucket, vertex, next_, head, tail, count, cursor, counts):
    """Add v to `bucket`'s slot (an entry must be free or never used)."""
    if cursor[FREE_COUNT] > 0:
        e = cursor[FREE_HEAD]
        cursor[FREE_HEAD] = next_[e]
        cursor[FREE_COUNT] -= 1
    else:
        e = cursor[TOP]
        cursor[TOP] += 1
    vertex[e] = v
    next_[e] = -1
    s = bucket % head.shape[0]
    if tail[s] < 0:
        head[s] = e
    else:
        next_[tail[s]] = e
    tail[s] = e
    count[s] += 1
    counts[NEAR] += 1


@_inline
def _list(v, d, threshold, delta, vertex, next_, head, tail, count, cursor, far_mark, far_out,
          far_slot, counts, values):
    """Queue v, just improved to d: in the ring below T (never below the bucket being emptied),
    else on the far pile once, folding d into its minimum."""
    if d < threshold:
        _append(v, max(_bucket(d, delta), cursor[CUR]), vertex, next_, head, tail, count, cursor,
                counts)
    else:
        twin.onto_pile(v, d, FAR_MIN, far_mark, far_out, far_slot, counts, values)


@kernel(*each_index_and_weight(lambda indices, weights: (
    INT64S, indices, weights, INT64, INT64, INT64, FLOAT64, FLOAT64, FLOAT64S, INT64S, FLOAT64S,
    INT64S, INT64S, INT64S, INT64S, INT64S, INT64S, UINT8S, INT64S, INT64, FLOAT64S, INT64S, INT32S,
    INT64S, INT64S, INT64S, FLOAT64S, FLOAT64)))
def _phase(indptr, indices, weights, offset, n_local, chunk, threshold, delta, dist, parent,
           relaxed, vertex, next_, head, tail, count, cursor, far_mark, far_out, far_slot,
           sent_best, send_parent, queued, outbox, outbox_start, counts, values, bound):
    """Empty the ring bucket by bucket. Returns (done, buckets emptied); done is False when the
    pool might not hold the next vertex's improvements (grow it and call again)."""
    n_slots = head.shape[0]
    capacity = vertex.shape[0]
    buckets = 0
    while counts[NEAR] > 0:
        b = cursor[CUR]
        while count[b % n_slots] == 0:
            b += 1
        cursor[CUR] = b
        s = b % n_slots
        buckets += 1
        while head[s] >= 0:
            e = head[s]
            v = vertex[e]
            du = dist[v]
            lo = indptr[v]
            hi = indptr[v + 1]
            if relaxed[v] == du:
                hi = lo  # stale: relaxed at this distance already
            elif cursor[FREE_COUNT] + capacity - cursor[TOP] < hi - lo:
                return False, buckets
            head[s] = next_[e]
            if head[s] < 0:
                tail[s] = -1
            count[s] -= 1
            counts[NEAR] -= 1
            next_[e] = cursor[FREE_HEAD]
            cursor[FREE_HEAD] = e
            cursor[FREE_COUNT] += 1
            if hi == lo:
                continue
            counts[RELAXED] += 1
            if relaxed[v] == relaxed[v]:  # not NaN: relaxed before, at a higher distance
                counts[REPEATED] += 1
            relaxed[v] = du
            for j in range(lo, hi):
                x = np.int64(indices[j])
                cand = du + weights[j]
                if cand > bound:
                    continue  # beyond the cutoff (max_distance): dropped
                local = x - offset
                if local >= 0 and local < n_local:
                    if cand < dist[local]:
                        dist[local] = cand
                        parent[local] = offset + v
                        _list(local, cand, threshold, delta, vertex, next_, head, tail, count,
                              cursor, far_mark, far_out, far_slot, counts, values)
                else:
                    r = x if local < 0 else x - n_local
                    if cand < sent_best[r]:
                        sent_best[r] = cand
                        send_parent[r] = offset + v
                        if cand < values[SENT_MIN]:
                            values[SENT_MIN] = cand
                        if queued[r] == 0:
                            queued[r] = 1
                            q = x // chunk
                            outbox[outbox_start[q] + counts[SENT + q]] = x
                            counts[SENT + q] += 1
    return True, buckets


@kernel((INT64, INT64S, FLOAT64S, INT64S, FLOAT64, FLOAT64, FLOAT64S, INT64S, INT64S, INT64S, INT64S,
         INT64S, INT64S, INT64S, UINT8S, INT64S, INT64, INT64S, FLOAT64S))
def _merge(offset, targets, dists, parents, threshold, delta, dist, parent, vertex, next_, head,
           tail, count, cursor, far_mark, far_out, far_slot, counts, values):
    """Lower dist by arriving candidates (one thread: the parent goes with the distance)."""
    for i in range(targets.shape[0]):
        local = targets[i] - offset
        d = dists[i]
        if d < dist[local]:
            dist[local] = d
            parent[local] = parents[i]
            _list(local, d, threshold, delta, vertex, next_, head, tail, count, cursor, far_mark,
                  far_out, far_slot, counts, values)


@kernel((FLOAT64, FLOAT64, FLOAT64, FLOAT64S, UINT8S, INT64S, INT64, INT64S, INT64S, INT64S, INT64S,
         INT64S, INT64S, INT64S, INT64, INT64S, FLOAT64S))
def _advance(old_threshold, new_threshold, delta, dist, far_mark, far_in, far_in_slot, vertex, next_,
             head, tail, count, cursor, far_out, far_slot, counts, values):
    """Split the far pile: below old (relaxed since) dropped, below new into the ring, the rest
    onto the new pile. The ring is empty before; its cursor moves to the least bucket filled."""
    least = np.inf
    cursor[CUR] = 0
    for i in range(counts[far_in_slot]):
        v = far_in[i]
        far_mark[v] = 0
        d = dist[v]
        if d >= old_threshold:
            if d < new_threshold and d < least:
                least = d
            _list(v, d, new_threshold, delta, vertex, next_, head, tail, count, cursor, far_mark,
                  far_out, far_slot, counts, values)
    if least < np.inf:
        cursor[CUR] = _bucket(least, delta)


@kernel((INT64S, INT64S, INT64S, FLOAT64S, FLOAT64, INT64S, INT64S, INT64S, INT64S, INT64S, INT64S,
         INT64S))
def _refill(old_vertex, old_next, old_head, dist, delta, vertex, next_, head, tail, count, cursor,
            counts):
    """Move every entry of an old ring (other widths or slots) into a new one, each to the
    bucket of its vertex's distance; the cursor goes to the least of them."""
    least = np.inf
    for s in range(old_head.shape[0]):
        e = old_head[s]
        while e >= 0:
            v = old_vertex[e]
            least = min(least, dist[v])
            counts[NEAR] -= 1  # moved, not added
            _append(v, _bucket(dist[v], delta), vertex, next_, head, tail, count, cursor, counts)
            e = old_next[e]
    cursor[CUR] = _bucket(least, delta) if least < np.inf else 0


# ---------------------------------------------------------------------------------------------
# The contract functions for non-negative weights (negative weights go to the twin)
# ---------------------------------------------------------------------------------------------


def _slots(state: SsspOwnerState) -> tuple:
    """``(local width, slots)`` for the state's widths: W / local + 3 slots, at most MAX_SLOTS."""
    delta, window = state.local_delta, state.window
    if not math.isfinite(delta) or not math.isfinite(window):
        return delta, 1
    delta = max(delta, window / (MAX_SLOTS - 3))
    return delta, int(math.ceil(window / delta)) + 3


def _new_ring(state: SsspOwnerState, delta: float, n_slots: int, capacity: int, relaxed=None) -> Ring:
    return Ring(
        delta=delta,
        vertex=np.empty(capacity, dtype=np.int64),
        next=np.empty(capacity, dtype=np.int64),
        head=np.full(n_slots, -1, dtype=np.int64),
        tail=np.full(n_slots, -1, dtype=np.int64),
        count=np.zeros(n_slots, dtype=np.int64),
        cursor=np.array([0, -1, 0, 0], dtype=np.int64),
        relaxed=np.full(state.n_local, np.nan) if relaxed is None else relaxed,
    )


def _ring(state: SsspOwnerState, need: int = 0) -> Ring:
    """The state's ring for its current widths, with room for ``need`` more entries: made on
    first use (from the sources in the twin's first near queue), rebuilt when the widths change,
    its pool grown (entry numbers kept) when short."""
    delta, n_slots = _slots(state)
    counts = state.counters.view(np.int64)
    ring = state.ring
    if ring is None:
        # The sources wait in the twin's first near queue (counted in NEAR): moved as if each
        # were a slot of an old ring.
        ring = state.ring = _new_ring(state, delta, n_slots, 2 * state.n_local + 1024)
        sources = state.near[state.near_fill][:int(counts[NEAR])].copy()
        _refill(sources, np.full(sources.size, -1, dtype=np.int64),
                np.arange(sources.size, dtype=np.int64), state.dist, float(delta), ring.vertex,
                ring.next, ring.head, ring.tail, ring.count, ring.cursor, counts)
    elif ring.delta != delta or ring.head.size != n_slots:
        bigger = _new_ring(state, delta, n_slots, ring.vertex.size, ring.relaxed)
        _refill(ring.vertex, ring.next, ring.head, state.dist, float(delta), bigger.vertex,
                bigger.next, bigger.head, bigger.tail, bigger.count, bigger.cursor, counts)
        ring = state.ring = bigger
    free = int(ring.cursor[FREE_COUNT]) + ring.vertex.size - int(ring.cursor[TOP])
    if free < need:
        capacity = max(2 * ring.vertex.size, ring.vertex.size + need - free)
        ring.vertex = np.concatenate([ring.vertex, np.empty(capacity - ring.vertex.size, np.int64)])
        ring.next = np.concatenate([ring.next, np.empty(capacity - ring.next.size, np.int64)])
    return ring


def sssp_owner_relax(indptr, indices, weights, state: SsspOwnerState, threshold, max_rounds):
    """The twin's ``sssp_owner_relax`` for non-negative weights (``max_rounds < 0``), by
    serial delta-stepping; returns the local buckets emptied (its "rounds"). With
    ``max_rounds >= 0`` (Bellman-Ford's rounds), the twin's."""
    if max_rounds >= 0:
        return twin.sssp_owner_relax(indptr, indices, weights, state, threshold, max_rounds)
    buckets = 0
    ring = _ring(state)
    while True:
        done, count = _phase(
            indptr, indices, weights, np.int64(state.offset), np.int64(state.n_local),
            np.int64(state.chunk), float(threshold), float(ring.delta), state.dist, state.parent,
            ring.relaxed, ring.vertex, ring.next, ring.head, ring.tail, ring.count, ring.cursor,
            state.far_mark, state.far[state.far_fill], np.int64(FAR + state.far_fill),
            state.sent_best, state.send_parent, state.queued, state.outbox, state.outbox_start,
            state.counters.view(np.int64), state.counters.view(np.float64), float(state.bound))
        buckets += int(count)
        if done:
            return buckets
        ring = _ring(state, need=ring.vertex.size)


def sssp_owner_merge(state: SsspOwnerState, buckets: list, threshold) -> None:
    """The twin's ``sssp_owner_merge``; into the ring once it exists (non-negative weights)."""
    if state.ring is None:
        twin.sssp_owner_merge(state, buckets, threshold)
        return
    for targets, dists, parents in buckets:
        ring = _ring(state, need=targets.size)
        _merge(np.int64(state.offset), plain(targets), plain(dists), plain(parents), float(threshold),
               float(ring.delta), state.dist, state.parent, ring.vertex, ring.next, ring.head,
               ring.tail, ring.count, ring.cursor, state.far_mark, state.far[state.far_fill],
               np.int64(FAR + state.far_fill), state.counters.view(np.int64),
               state.counters.view(np.float64))


def sssp_owner_advance(state: SsspOwnerState, old_threshold, new_threshold) -> None:
    """The twin's ``sssp_owner_advance``, into the ring."""
    counts = state.counters.view(np.int64)
    ring = _ring(state, need=int(counts[FAR + state.far_fill]))
    fresh = 1 - state.far_fill
    state.counters[FAR + fresh] = 0
    state.counters[FAR_MIN] = INF_BITS
    _advance(float(old_threshold), float(new_threshold), float(ring.delta), state.dist,
             state.far_mark, state.far[state.far_fill], np.int64(FAR + state.far_fill), ring.vertex,
             ring.next, ring.head, ring.tail, ring.count, ring.cursor, state.far[fresh],
             np.int64(FAR + fresh), counts, state.counters.view(np.float64))
    state.far_fill = fresh

