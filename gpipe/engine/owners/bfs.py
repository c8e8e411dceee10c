"""One owner's share of a BFS over several owners, level by level in step with its peers.

Undirected graphs on GPUs run the fixed-size levels of :mod:`gpipe.engine.owners.bfs_levels`
(bitmaps only, one host read per level; :meth:`Thresholds.fixed_levels`). Directed graphs, and
undirected ones on CPUs, run the queue-based loop below, which sorts nothing between levels: a top-down step sends
each remote vertex at most once per traversal (a per-traversal bitmap of sent ids), into
queues allocated once, and the receiver claims what arrives with the same claim as its own
edges, so duplicates from several senders resolve themselves. Undirected graphs go bottom-up
when the frontier is large (the owners all-gather their slices of the frontier bitmap instead
of exchanging candidates). The direction rule is GAPBS's (:class:`Thresholds`), applied by
every owner to the same summed counts.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

import dask
import numpy as np

from gpipe.engine import backend as backends
from gpipe.engine.compute.directions import ALPHA, BETA, GAMMA
from gpipe.engine.outcome import report_end
from gpipe.engine.owners import messages
from gpipe.engine.owners.bfs_levels import BOTTOM_UP, TOP_DOWN, bfs_levels_arrays
from gpipe.engine.owners.owner_result import owner_result
from gpipe.engine.partition import Layout, Partition
from gpipe.engine.result import BFS
from gpipe.errors import InputError
from gpipe.watch import progress

DIRECTION_KEY = "gpipe.bfs-direction"
LEVELS_KEY = "gpipe.bfs-levels"  # "auto" (fixed-size levels on GPU, queued on CPU), "fixed", "queued"
LEVELS = ("auto", "fixed", "queued")


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
    gamma = inf`` makes every level after the first bottom-up. ``pairs``: a fixed-size
    top-down level sends its frontier's out-edges as (target, parent) pairs while they take at
    most ``pairs`` times the bytes of its two bitmaps (:meth:`send_pairs`; 0: never, inf:
    always). ``levels`` travels with them: which of the two level loops an undirected graph
    runs (:meth:`fixed_levels`).
    """

    alpha: float = ALPHA
    beta: float = BETA
    gamma: float = GAMMA
    pairs: float = 1.0
    levels: str = "auto"  # Dask config gpipe.bfs-levels: which loop an undirected graph runs

    def fixed_levels(self, backend_name: str) -> bool:
        """Whether an undirected graph's levels run fixed-size (:mod:`gpipe.engine.owners.bfs_levels`)
        rather than queued: ``levels`` ``"fixed"`` or ``"queued"``, or with ``"auto"`` fixed on the
        GPU, where they measured as fast or faster (BENCHMARKS.md, "Issue 32, first session"),
        queued on the CPU, where they measured faster (kron18 on 2 owners: 36-40 ms against
        50-56)."""
        if self.levels == "auto":
            return backend_name == backends.GPU
        return self.levels == "fixed"

    def send_pairs(self, pair_bytes, bitmap_bytes) -> bool:
        """Whether a top-down level of :mod:`gpipe.engine.owners.bfs_levels` sends pairs (what
        every owner's pairs take, gathered) rather than bitmaps (what every owner's slots of
        the frontier and the marks take)."""
        return pair_bytes <= self.pairs * bitmap_bytes

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

    Dask config ``gpipe.bfs-levels`` (``"auto"``, ``"fixed"``, ``"queued"``), read with it, sets
    ``Thresholds.levels``: which level loop an undirected graph's owners run
    (:meth:`Thresholds.fixed_levels`).
    """
    levels = dask.config.get(LEVELS_KEY, "auto")
    if levels not in LEVELS:
        raise InputError(f"{LEVELS_KEY} must be one of {', '.join(LEVELS)}, not {levels!r}")
    return replace(_direction(setting), levels=levels)


def _direction(setting) -> Thresholds:
    if setting is None:
        setting = dask.config.get(DIRECTION_KEY, "auto")
    if isinstance(setting, str) and setting in DIRECTIONS:
        return DIRECTIONS[setting]
    if isinstance(setting, Mapping):
        names = {f.name for f in fields(Thresholds)} - {"levels"}
        unknown = sorted(set(setting) - names)
        if unknown:
            raise InputError(f"{DIRECTION_KEY}: unknown threshold {unknown[0]!r}; "
                             "known: alpha, beta, gamma, pairs")
        return Thresholds(**{name: float(value) for name, value in setting.items()})
    raise InputError(f"{DIRECTION_KEY} must be 'auto', 'top-down', 'bottom-up' or a mapping of "
                     f"alpha/beta/gamma, not {setting!r}")


def bfs_owner(channel, part: Partition, ids, layout: Layout, local_sources, group,
              depth_limit, thresholds, with_stats, parents, vertex_dtype):
    """This owner's result frame of a BFS, expanded level by level in step with its peers over
    the transport of ``group`` (:func:`gpipe.engine.owners.connect.open_transport`); ``(frame, stats)``
    when ``with_stats`` (the stats of :func:`bfs_owner_arrays`). The parents are always kept
    while the levels run (the claims carry them); ``parents=False`` leaves them out of the
    frame."""
    return owner_result(channel, group, part, layout,
                        lambda transport: bfs_owner_arrays(transport, part, layout, local_sources,
                                                           depth_limit, thresholds,
                                                           device_times=with_stats),
                        BFS, ids, parents, vertex_dtype, with_stats)


def bfs_owner_arrays(transport, part: Partition, layout: Layout, local_sources, depth_limit=None,
                     thresholds: Thresholds = Thresholds(), device_times: bool = False):
    """One owner's share of a BFS over several owners, level by level in step with its peers.

    Parameters
    ----------
    transport : gpipe.engine.owners.transport.Transport
        This owner's end of the wire (NCCL or Dask's comms).
    part : Partition
        This owner's CSR; ``part.undirected`` allows bottom-up levels, and with
        ``thresholds.fixed_levels(part.backend)`` picks the fixed-size levels of
        :func:`gpipe.engine.owners.bfs_levels.bfs_levels_arrays`.
    layout : Layout
    local_sources : array of int
        This owner's sources, local ids (repeats allowed; may be empty).
    depth_limit : int or None
    thresholds : Thresholds
        The direction rule; every owner must get the same.
    device_times : bool
        Time each level on the device where the transport can (the stats' ``device_s``;
        undirected graphs' levels only).

    Returns
    -------
    dist : int32[n_local]
        Hops from the nearest source, -1 unreached.
    parent : int64[n_local]
        Global id of a BFS-tree parent, -1 for sources and unreached vertices.
    stats : gpipe.engine.owners.messages.OwnerSteps
        One step a level (the last may have found the frontier empty everywhere), labelled with
        its direction; a top-down level's expansion, queued just before its step, ends inside
        the step (``wait_s``).

    Notes
    -----
    What follows is the queue-based loop; the fixed-size one is described in
    :mod:`gpipe.engine.owners.bfs_levels`. Each level is one step of the transport. Top-down: an exchange of every owner's counters
    as the expansion kernel left them on the device (read once, by the step:
    :meth:`~gpipe.engine.owners.transport.Transport.exchange_counters`; each owner makes every owner's
    :class:`~gpipe.engine.owners.messages.TopDownCounts` from them) and, per peer, the candidates for
    it (each remote vertex once per traversal: the kernels' ``sent`` bitmap), which the peer
    claims.
    Bottom-up: an all-gather of every owner's slice of the frontier bitmap (straight into the
    global bitmap) with its exact :class:`~gpipe.engine.owners.messages.BottomUpCounts`; each owner
    claims its unvisited vertices that have a neighbour in the frontier.

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
    reporter = progress.Reporter(transport.key, "bfs", part.owner, transport.n_owners)
    if part.undirected and thresholds.fixed_levels(part.backend):
        dist, parent, steps = bfs_levels_arrays(transport, part, layout, local_sources,
                                                depth_limit, thresholds, reporter, device_times)
    else:
        dist, parent, steps = _queued_levels(transport, part, layout, local_sources, depth_limit,
                                             thresholds, reporter)
    report_end(reporter, BFS, part.backend, dist)
    return dist, parent, steps


def _queued_levels(transport, part: Partition, layout: Layout, local_sources, depth_limit,
                   thresholds: Thresholds, reporter):
    """The level loop of :func:`bfs_owner_arrays` over candidate queues (directed graphs, and
    undirected ones where :meth:`Thresholds.fixed_levels` says no)."""
    run = _OwnerBfs(part, layout, transport)
    stats = _LevelStats(transport, reporter, part.owner)
    stats.progress.start(len(local_sources))
    n = layout.n
    candidates = messages.bfs_bucket(part.indices.dtype)
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
            counts = messages.BottomUpCounts(run.size, run.edges, part.n_edges)
            everyone = messages.total(messages.BottomUpCounts, stats.allgather(
                tag, messages.vector(counts), mine, run.front,
                mine.nbytes * (layout.n_owners - 1)))
            size, edges, total_edges = everyone
            if size == 0:  # the last bottom-up level claimed nothing anywhere
                stats.end(BOTTOM_UP, size)
                break
            if after_bottom_up:
                bottom_up = thresholds.stay_bottom_up(size, previous_size, n)
            else:
                bottom_up = thresholds.go_bottom_up(edges, total_edges - checked_edges, n)
            if bottom_up:
                run.bottom_up(level)
                previous_size = size
                proposed, after_bottom_up = False, True
                stats.end(BOTTOM_UP, size)
                level += 1
                continue
            tag += 1  # top-down after all: a second message round at this level
        run.top_down(level)
        rows, received = stats.exchange_counters(tag, run.message, run.kernels.QUEUES,
                                                 run.outgoing, candidates)
        counters = rows[transport.owner]
        run.expanded(counters)
        everyone = messages.total(messages.TopDownCounts, [run.counts(row) for row in rows])
        run.claim([bucket for bucket in received if bucket is not None], level, counters)
        checked_edges += everyone.frontier_edges
        previous_size = everyone.frontier
        total_edges = everyone.edges
        after_bottom_up = False
        stats.end(TOP_DOWN, everyone.frontier)
        if everyone.active == 0:
            break
        if part.undirected:
            claimed, claimed_edges = everyone.claimed, everyone.claimed_edges
            mean_degree = claimed_edges / claimed if claimed else total_edges / max(n, 1)
            next_edges = claimed_edges + everyone.sent * mean_degree
            proposed = thresholds.go_bottom_up(next_edges, total_edges - checked_edges, n)
        level += 1
    return run.dist, run.parent, stats.data


class _OwnerBfs:
    """One owner's arrays for a BFS over several owners, allocated once per traversal.

    The frontier is queued (local ids, the first ``counters[NEXT]`` entries of
    ``frontiers[current]``: what the last steps appended), in ``slice`` (this owner's words of
    the frontier bitmap), or both. Its exact length and out-degree sum are on the device in
    ``counters[NEXT]``/``[NEXT_EDGES]``; the host reads them only when it needs them (``size``
    and ``edges`` are None until then), and otherwise carries ``bound``, an upper bound of the
    length, so that the claims of one level and the expansion of the next need no host read in
    between. See gpipe/engine/compute/cpu_bfs_owners.py for the kernels and their arrays.
    """

    def __init__(self, part: Partition, layout: Layout, transport):
        be = backends.get(part.backend)
        xp = be.xp
        self.part, self.layout, self.xp = part, layout, xp
        self.to_host = be.to_host
        self.transport = transport
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
        # What a top-down step sends its peers: the kernels' counters, then this owner's
        # out-edge count (for the graph's total), so that the counts leave the device as one.
        self.message = xp.zeros(kernels.QUEUES + layout.n_owners + 1, dtype="int64")
        self.message[-1] = part.n_edges
        self.counters = self.message[:-1]
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
        """Expand the frontier (queued on the device; :meth:`expanded` takes the counters it
        leaves, once the step has read them)."""
        part = self.part
        self.queue()
        self.kernels.bfs_owner_top_down(
            part.indptr, part.indices, part.offset, self.frontiers[self.current], self.dist,
            self.parent, level, self.layout.chunk, self.sent, self.frontiers[1 - self.current],
            self.queue_targets, self.queue_parents, self.counters, frontier_bound=self.bound)

    def expanded(self, counters):
        """The top-down step's counters as read (host int64), which give the exact length and
        out-degree sum of the frontier it expanded (``FRONTIER``, ``FRONTIER_EDGES``)."""
        self.size = int(counters[self.kernels.FRONTIER])
        self.edges = int(counters[self.kernels.FRONTIER_EDGES])

    def counts(self, message) -> messages.TopDownCounts:
        """An owner's :class:`~gpipe.engine.owners.messages.TopDownCounts` from its :attr:`message`
        as read (host int64)."""
        kernels = self.kernels
        claimed, claimed_edges = int(message[kernels.NEXT]), int(message[kernels.NEXT_EDGES])
        sent = int(message[kernels.QUEUES:kernels.QUEUES + self.layout.n_owners].sum())
        return messages.TopDownCounts(claimed + sent, int(message[kernels.FRONTIER]),
                                      int(message[kernels.FRONTIER_EDGES]), claimed, claimed_edges,
                                      sent, int(message[-1]))

    def outgoing(self, counters) -> list:
        """Per owner, its queue as a bucket ``(targets, parents)`` (None if empty or this
        owner), views of the queues that the transport sends or copies
        (:meth:`~gpipe.engine.owners.transport.Transport.payload`: the queues are reused next level)."""
        buckets = []
        for q in range(self.layout.n_owners):
            count = int(counters[self.kernels.QUEUES + q])
            start = self.layout.offset(q)
            buckets.append(None if count == 0 or q == self.part.owner else self.transport.payload((
                self.queue_targets[start:start + count], self.queue_parents[start:start + count])))
        return buckets

    def claim(self, buckets, level: int, counters):
        """Claim what peers sent after the top-down step at ``level`` (whose host ``counters``
        are given): the next frontier is ready, its length known on the device only."""
        part, xp = self.part, self.xp
        for targets, parents in buckets:
            self.kernels.bfs_owner_claim(part.indptr, part.offset, xp.asarray(targets),
                                         xp.asarray(parents), self.dist, self.parent, level,
                                         self.frontiers[1 - self.current], self.counters)
        claimed = int(counters[self.kernels.NEXT])
        self._next_level(claimed + sum(int(targets.size) for targets, _ in buckets))
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
            # Every owner's slot is a whole chunk of words (Layout: chunks are multiples of 64),
            # so the transport gathers the slices straight into the global bitmap.
            layout = self.layout
            self.front = xp.zeros(layout.n_owners * (layout.chunk // kernels.BITMAP_BITS),
                                  dtype=kernels.BITMAP_DTYPE)
            self.slice = xp.zeros(self._words(self.part.n_local), dtype=kernels.BITMAP_DTYPE)
            self.next_slice = xp.zeros_like(self.slice)
        if not self.in_bitmap:
            self.kernels.frontier_to_bitmap(self.frontiers[self.current][:size], self.slice)
            self.in_bitmap = True
        return self.slice

    def bottom_up(self, level: int):
        """A bottom-up level over the frontier in ``front`` (every owner's slice, gathered)."""
        part = self.part
        self.kernels.bfs_owner_bottom_up(part.indptr, part.indices, self.dist, self.parent, level,
                                         self.front, self.next_slice, self.counters)
        self.slice, self.next_slice = self.next_slice, self.slice
        self.size = self.edges = None
        self.queued, self.in_bitmap = False, True
        self.known()


class _LevelStats:
    """Per-level statistics of one owner's BFS, and its exchanges (timed)."""

    def __init__(self, transport, reporter, owner: int):
        self.transport = transport
        self.progress = reporter
        self.data = messages.OwnerSteps(owner)
        self._start = self._wait = 0.0
        self._messages = self._bytes = 0

    def begin(self):
        self.data.begin_steps()
        self._start = time.perf_counter()
        self._wait = 0.0
        self._messages = self._bytes = 0

    def exchange_counters(self, tag, counters, lengths_at, buckets_for, dtypes):
        """``transport.exchange_counters``, timed and counted (the bytes of the buckets made)."""
        made = []

        def buckets(row):
            made.append(buckets_for(row))
            return made[-1]

        answer = self._timed(0, self.transport.exchange_counters, tag, counters, lengths_at,
                             buckets, dtypes)
        self._bytes += sum(a.nbytes for b in made[-1] if b is not None for a in b) if made else 0
        return answer

    def allgather(self, tag, counts, piece, out, nbytes):
        """``transport.allgather``, timed and counted."""
        return self._timed(nbytes, self.transport.allgather, tag, counts, piece, out)

    def _timed(self, nbytes, step, *args):
        t0 = time.perf_counter()
        answer = step(*args)
        self._wait += time.perf_counter() - t0
        self._messages += 1
        self._bytes += int(nbytes)
        return answer

    def end(self, direction, frontier):
        kernel_s = time.perf_counter() - self._start - self._wait
        self.data.add(direction, frontier, 1, self._messages, self._bytes, kernel_s, self._wait)
        self.progress.level(self.data.steps - 1, frontier)  # the level expanded: its frontier's distance
