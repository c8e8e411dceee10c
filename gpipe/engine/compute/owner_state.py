"""One owner's working arrays for an SSSP over several owners, shared by the CPU and GPU kernels.

A multi-owner SSSP (``gpipe.engine.owners.sssp.sssp_owner_arrays``) keeps, per owner and per traversal, the
arrays below; the kernels of :mod:`gpipe.engine.compute.cpu_sssp_owners` (Numba) and
:mod:`gpipe.engine.compute.gpu_sssp_owners` (``kernels/sssp_owners.cu``) read and write them in place.
Allocated once per traversal with the backend's array module, so that no round allocates,
sorts or deduplicates.

Thresholds (distances)
    ``threshold`` (T), the end of the current exchange window, is the same on every owner;
    ``local_threshold`` (t <= T, host field) ends the current local bucket. Both only grow.
    An improved vertex at distance d goes near (d < t), on the mid pile (t <= d < T) or on
    the far pile (d >= T). Everything below t has been relaxed at its current distance once
    the near queue is empty; everything below T once the mid pile is empty too.

Local vertices (ids ``0..n_local-1``; global ``offset + local``)
    ``dist`` float64, +inf = unreached; ``parent`` int64 global ids, -1 = none.
    ``stamp`` int32: ``2c + 1`` when call ``c`` (a relaxation round or a merge) lowered the
    vertex, ``2c + 2`` once that call listed it; so no flag array is ever cleared.
    ``near_mark`` int32: the round whose queue holds the vertex (-1: none yet), which keeps a
    near queue free of repeats across the calls that fill it (a round, a split, a merge).
    ``mid_mark``, ``far_mark`` uint8: 1 while the vertex is on that pile.
    ``near`` int64[2, n_local]: ``near[near_fill][:counters[NEAR]]`` is the queue being
    filled, the next round's frontier.
    ``mid``, ``far`` int64[2, n_local]: ``mid[mid_fill][:counters[MID + mid_fill]]``, and the
    same for far, are the current piles. An entry whose distance has dropped below the
    threshold that put it there was relaxed from the near queue since: a split drops it.
    ``snapshot`` float64 and ``edge_end`` int64 [n_local]: per slot of a round's frontier, its
    distance at the start of the round and (GPU) the inclusive prefix sum of the degrees.

Vertices of other owners (remote index ``r = v`` for ``v < offset``, ``v - n_local`` above)
    ``sent_best`` float64: the least distance this owner has queued for ``v`` in this
    traversal, +inf = none. A candidate not below it cannot improve ``v``: its owner already
    holds that distance or less (weights of any sign).
    ``send_parent`` int64: the global id of the vertex whose candidate equals ``sent_best``.
    ``queued`` int32: 1 while ``v`` waits in the outbox for the next exchange.
    ``outbox`` int64: global ids waiting to be sent, in one segment per owner: owner ``q``'s
    queue is ``outbox[outbox_start[q]:][:counters[SENT + q]]`` (``outbox_start[q]`` is the
    remote index of ``q``'s first vertex, so a segment can hold all of ``q``'s vertices).

``counters`` uint64[SENT + n_owners], read by the host once per round:
    ``NEAR`` length of the near queue being filled; ``MID + b``, ``FAR + b`` lengths of the
    piles; ``MID_MIN``, ``FAR_MIN`` (float64 bits) lower bounds of the distances of the live
    entries of the current piles (every value a pile took since its last split, and what the
    split kept); ``SENT_MIN`` (float64 bits) the least candidate queued for a peer since the
    last send; ``RELAXED`` the vertices relaxed since then, ``REPEATED`` those of them relaxed
    before in this traversal (the GPU kernels and their twin count none); ``SENT + q`` the
    length of owner ``q``'s outbox segment.

Host-side fields (plain ints and floats): ``near_fill``, ``mid_fill``, ``far_fill`` (which
buffer is current), ``fill_round`` (the ``near_mark`` of the queue being filled), ``calls``
(calls so far; call ``c`` stamps ``2c + 1`` and ``2c + 2``), ``local_threshold`` (t),
``local_delta`` and ``window`` (the widths of a local bucket and of the exchange window, set
by the driver once the first message has brought every owner's weight statistics; +inf
before); ``bound``, the cutoff (``max_distance``, +inf: none): every relaxation drops a
candidate above it, local or remote, so no distance above it is ever held or sent (Dijkstra's
cutoff, with negative weights too: a reached vertex's parent is reached); and
``ring``, the CPU's own local buckets for non-negative weights (gpipe/engine/compute/cpu_sssp_ring.py),
which then stand in for the near queue and the mid pile (``counters[NEAR]`` counts its entries).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NEAR = 0
MID = 1  # MID + b: mid pile b (b = 0, 1)
FAR = 3  # FAR + b: far pile b
MID_MIN = 5
FAR_MIN = 6
SENT_MIN = 7
RELAXED = 8  # vertices relaxed since the last pack
REPEATED = 9  # of those, relaxed before in this traversal (at a higher distance)
SENT = 10  # SENT + q: owner q's outbox segment (the last slots: a pack clears RELAXED onwards)
INF_BITS = int(np.array(np.inf).view(np.uint64))


@dataclass
class Counts:
    """The counters of one owner, read to the host."""

    near: int  # near queue being filled
    mid: int  # current mid pile (stale entries included)
    far: int  # current far pile (stale entries included)
    mid_min: float  # lower bound of the mid pile's live distances (+inf: none)
    far_min: float  # lower bound of the far pile's live distances (+inf: none)
    sent_min: float  # least candidate queued since the last send (+inf: none)
    relaxed: int  # vertices relaxed since the last send
    repeated: int  # of those, relaxed before in this traversal
    sent: list  # per owner: outbox segment length (0 for this owner)

    @property
    def pending(self) -> int:
        """Vertices this owner still has to relax or to send (the far pile's stale ones included)."""
        return self.near + self.mid + self.far + sum(self.sent)


@dataclass
class SsspOwnerState:
    """One owner's arrays for a multi-owner SSSP; see the module docstring."""

    offset: int
    n_local: int
    chunk: int
    n_owners: int
    dist: object
    parent: object
    stamp: object
    near_mark: object
    mid_mark: object
    far_mark: object
    near: object
    mid: object
    far: object
    snapshot: object
    edge_end: object
    sent_best: object
    send_parent: object
    queued: object
    outbox: object
    outbox_start: object
    outbox_start_host: tuple
    counters: object
    near_fill: int = 0
    mid_fill: int = 0
    far_fill: int = 0
    fill_round: int = 0
    calls: int = 0
    local_threshold: float = 0.0
    local_delta: float = float("inf")
    window: float = float("inf")
    bound: float = float("inf")  # the cutoff (max_distance): candidates above it are dropped
    ring: object = None  # the CPU's bucket ring (gpipe/engine/compute/cpu_sssp_ring.py), made on first use


def new_state(xp, n: int, offset: int, n_local: int, chunk: int, n_owners: int,
              local_sources, local_threshold: float, bound: float = float("inf")) -> SsspOwnerState:
    """Fresh arrays for one traversal, with ``local_sources`` (unique local ids) at distance 0 in
    the first near queue and the first local threshold (> 0). ``xp`` is the backend's array
    module. ``bound``: the cutoff (``max_distance``, >= 0; +inf: none), which the relaxations
    read: a candidate above it, local or remote, is dropped."""
    n_remote = n - n_local
    starts = [min(n, q * chunk) for q in range(n_owners)]
    outbox_start = [s if s < offset else s - n_local for s in starts]
    counters = np.zeros(SENT + n_owners, dtype=np.uint64)
    counters[MID_MIN] = counters[FAR_MIN] = counters[SENT_MIN] = INF_BITS
    counters[NEAR] = len(local_sources)
    state = SsspOwnerState(
        offset=offset, n_local=n_local, chunk=chunk, n_owners=n_owners,
        dist=xp.full(n_local, np.inf, dtype=np.float64),
        parent=xp.full(n_local, -1, dtype=np.int64),
        stamp=xp.zeros(n_local, dtype=np.int32),
        near_mark=xp.full(n_local, -1, dtype=np.int32),
        mid_mark=xp.zeros(n_local, dtype=np.uint8),
        far_mark=xp.zeros(n_local, dtype=np.uint8),
        near=xp.empty((2, n_local), dtype=np.int64),
        mid=xp.empty((2, n_local), dtype=np.int64),
        far=xp.empty((2, n_local), dtype=np.int64),
        snapshot=xp.empty(n_local, dtype=np.float64),
        edge_end=xp.empty(n_local, dtype=np.int64),
        sent_best=xp.full(n_remote, np.inf, dtype=np.float64),
        send_parent=xp.full(n_remote, -1, dtype=np.int64),
        queued=xp.zeros(n_remote, dtype=np.int32),
        outbox=xp.empty(n_remote, dtype=np.int64),
        outbox_start=xp.asarray(np.array(outbox_start, dtype=np.int64)),
        outbox_start_host=tuple(outbox_start),
        counters=xp.asarray(counters),
        local_threshold=float(local_threshold),
        bound=float(bound),
    )
    sources = xp.asarray(local_sources, dtype=np.int64)
    state.dist[sources] = 0.0
    state.near[0, :sources.size] = sources
    state.near_mark[sources] = 0
    return state


def counts_from(host_counters: np.ndarray, state: SsspOwnerState) -> Counts:
    """:class:`Counts` from a host copy of ``state.counters`` (uint64)."""
    values = host_counters.view(np.float64)
    counts = host_counters.view(np.int64)
    return Counts(
        near=int(counts[NEAR]),
        mid=int(counts[MID + state.mid_fill]),
        far=int(counts[FAR + state.far_fill]),
        mid_min=float(values[MID_MIN]),
        far_min=float(values[FAR_MIN]),
        sent_min=float(values[SENT_MIN]),
        relaxed=int(counts[RELAXED]),
        repeated=int(counts[REPEATED]),
        sent=[int(c) for c in counts[SENT:SENT + state.n_owners]],
    )
