"""One owner's share of a BFS of an undirected graph over several owners, in fixed-size levels.

Every exchange of a level has a size known before the level runs, so the host queues a whole
level (kernels and collectives) without learning any length first, and the level's only host
read is one small block of counters, every owner's, gathered at its end:

1. the level's frontier is every owner's slice of a bitmap over the global ids, gathered
   straight into ``front`` (``Transport.gather_slices``); ``visited`` takes it in (the OR of
   every level's frontier, global ids);
2. top-down (a small frontier): each owner marks, in a bitmap over the global ids, the targets
   of its frontier's out-edges that are not yet visited (``bfs_owner_mark``, no claim), and the
   owners swap the marks of each other's ranges (``Transport.swap_slices``: a fixed-size
   all-to-all). While the frontier's out-edges are few (their pairs take fewer bytes than the
   two bitmaps, ``Thresholds.send_pairs``, and no owner's frontier is longer than the kernels'
   ``PAIRS_MAX_FRONTIER``), a top-down level sends them instead, steps 1-3 in one: every owner
   writes its frontier's out-edges as (target, parent) pairs into a slot at least as long as
   the largest owner's out-degree sum, known from the last counters
   (``bfs_owner_pairs``), the slots are gathered, and each owner claims its targets with the
   pair's parent (``bfs_owner_claim_pairs``), scanning no row: on a power-law graph the
   first levels' targets are the hubs' neighbours, whose rows are the longest;
3. each owner claims its unvisited vertices (top-down: the marked ones; bottom-up: all of
   them), each taking its first neighbour in ``front`` as parent (``bfs_owner_resolve``): the
   graph is undirected, so a marked vertex always has one, and the top-down half sends no
   parents;
4. every owner's counters (vertices claimed, their out-degree sum) are gathered and read
   (``Transport.gather_counters``): all owners sum the same numbers, so they take the same
   direction (GAPBS's rule, :class:`gpipe.engine.owners.bfs.Thresholds`, on exact counts) and
   stop at the same level.

Over NCCL steps 1-3 are queued on the owner's stream and step 4 is one all-gather and one read
of a pinned buffer. The bitmaps cost ``n / 8`` bytes per owner and level (gathered) and as much
again top-down (swapped), whatever the frontier holds: the price of a level that the host need
not size. The pairs cost 2 ids per slot and owner. Directed graphs keep the queue-based loop
of :mod:`gpipe.engine.owners.bfs` (their rows are not their vertices' in-edges, so a mark could
not find its parent), and so do CPU owners by default, where that loop measured faster
(``Thresholds.fixed_levels``).

References: A. Buluc, K. Madduri, "Parallel Breadth-First Search on Distributed Memory Systems",
SC 2011 (1-D partitioned BFS with bitmap frontiers); S. Beamer, K. Asanovic, D. Patterson,
"Direction-Optimizing Breadth-First Search", SC 2012.
"""

from __future__ import annotations

import contextlib
import threading
import time
import weakref

import numpy as np

from gpipe.engine import backend as backends
from gpipe.engine.owners import messages
from gpipe.engine.partition import Layout, Partition

TOP_DOWN = "top-down"
BOTTOM_UP = "bottom-up"
EDGES = 4  # counters[EDGES]: the owner's out-edge count, gathered with the first counters


def bfs_levels_arrays(transport, part: Partition, layout: Layout, local_sources, depth_limit,
                      thresholds, progress, device_times=False):
    """One owner's ``(dist int32[n_local], parent int64[n_local], OwnerSteps)`` of a BFS of an
    undirected graph, level by level in step with its peers (module docstring).

    ``dist`` is -1 where unreached; ``parent`` holds global ids, -1 for sources and unreached
    vertices. ``local_sources``: this owner's sources, local ids (repeats allowed, may be empty).
    ``thresholds``: the direction rule, the same on every owner. ``progress``: the owner's
    :class:`gpipe.watch.progress.Reporter`, told of each level. Each level is one step of the
    stats, labelled with its direction; its ``frontier`` is the frontier it expanded (all
    owners), ``kernel_s`` the host's time queuing it, ``wait_s`` the wait for its counters, and
    ``device_s`` (with ``device_times``) the time the owner's stream spent on its queued work
    (the gather of its frontier to its claims), where the transport can time it (NCCL). The
    first level is top-down.
    """
    with _workspace(part, layout) as run:
        run.begin(transport)
        return _levels(run, local_sources, depth_limit, thresholds, progress, device_times)


def _levels(run, local_sources, depth_limit, thresholds, progress, device_times):
    """:func:`bfs_levels_arrays`' loop over the arrays of ``run`` (a :class:`_Levels` begun)."""
    transport, part, layout = run.transport, run.part, run.layout
    stats = messages.OwnerSteps(part.owner)
    progress.start(len(local_sources))
    next_at = slice(run.kernels.NEXT, run.kernels.NEXT_EDGES + 1)
    rows = transport.gather_counters(0, run.start(local_sources))
    total_edges = int(rows[:, EDGES].sum())
    frontier, edges = (int(x) for x in rows[:, next_at].sum(0))
    mine = rows[transport.owner]
    checked_edges = 0  # out-edges of the frontiers expanded top-down so far (every owner's)
    previous, bottom_up = 0, False
    marks = []  # the transport's device timestamps around each level's queued work
    level = 0
    while frontier > 0 and (depth_limit is None or level < depth_limit):
        stats.begin_steps()
        began = time.perf_counter()
        if level == 0:
            bottom_up = False
        elif bottom_up:
            bottom_up = thresholds.stay_bottom_up(frontier, previous, layout.n)
        else:
            bottom_up = thresholds.go_bottom_up(edges, total_edges - checked_edges, layout.n)
        tag = 3 * level
        slots = _pair_slots(int(rows[:, run.kernels.NEXT_EDGES].max()))
        pairs = (not bottom_up and rows[:, run.kernels.NEXT].max() <= run.kernels.PAIRS_MAX_FRONTIER
                 and thresholds.send_pairs(run.pair_bytes(slots), run.bitmap_bytes))
        before = transport.marker() if device_times else None
        k, mine_edges = int(mine[run.kernels.NEXT]), int(mine[run.kernels.NEXT_EDGES])
        if pairs:
            sent = run.pairs_level(tag, level, k, mine_edges, slots)
        else:
            sent = run.level(tag, level, bottom_up, k, mine_edges)
        if device_times:
            marks.append((before, transport.marker()))
        queued = time.perf_counter()
        rows = transport.gather_counters(tag + 3, run.counters)
        ended = time.perf_counter()
        if not bottom_up:
            checked_edges += edges
        mine = rows[transport.owner]
        previous = frontier
        frontier, edges = (int(x) for x in rows[:, next_at].sum(0))
        stats.add(BOTTOM_UP if bottom_up else TOP_DOWN, previous, 1,
                  2 if bottom_up or pairs else 3, sent, queued - began, ended - queued)
        progress.level(level, previous)
        level += 1
    if marks and marks[0][0] is not None:
        stats.device_s = [transport.elapsed(a, b) for a, b in marks]  # the work has run by now
    return run.dist, run.parent, stats


def _pair_slots(edges: int) -> int:
    """Slots per owner for a level of pairs whose owners' largest out-degree sum is ``edges``: a
    power of two (at least 256), so that the pairs' buffers come in few sizes."""
    return max(256, 1 << max(0, edges - 1).bit_length())


class _Levels:
    """One owner's arrays for the fixed-size levels of its partition, made at its first
    traversal and kept for the next ones (:func:`_workspace`), and the steps of a level over
    them: a query allocates nothing but its results, and a level nothing at all (on GPU workers
    whose allocations do not come from a pool, each free synchronizes the device).

    ``front``, ``visited``, ``marks``, ``received``: bitmaps over the global ids, ``words`` words
    per owner's slot (``Layout.chunk`` ids; chunks are multiples of 64, so the slots are whole
    words of either width). ``next_slice``: this owner's slot of the next frontier, the piece it
    contributes to the gather. ``queue``: the next frontier as local ids, its length in
    ``counters[NEXT]`` (what the top-down half expands). ``counters``: the kernels' four, then
    the owner's out-edge count. ``scratch``: room for the prefix sum of a frontier's degrees
    (the GPU steps' ``edge_end``). ``bitmap_bytes``: what a top-down level of bitmaps gathers
    and swaps, one owner's slot each (the bytes the pairs are weighed against). Per traversal
    (:meth:`begin`): ``transport``, and ``dist`` and ``parent``, made afresh since the result
    frame takes them over.
    """

    def __init__(self, part: Partition, layout: Layout):
        be = backends.get(part.backend)
        xp = be.xp
        self._part = weakref.ref(part)  # a strong one would keep the partition alive
        self.layout, self.xp = layout, xp
        self.kernels = kernels = be.kernels
        words = layout.chunk // kernels.BITMAP_BITS
        size = layout.n_owners * words
        self.front = xp.zeros(size, dtype=kernels.BITMAP_DTYPE)
        self.visited = xp.zeros(size, dtype=kernels.BITMAP_DTYPE)
        self.marks = xp.zeros(size, dtype=kernels.BITMAP_DTYPE)
        self.received = xp.zeros(size, dtype=kernels.BITMAP_DTYPE)
        self.next_slice = xp.zeros(words, dtype=kernels.BITMAP_DTYPE)
        mine = slice(part.owner * words, (part.owner + 1) * words)
        self.own_marks = self.marks[mine]
        self.queue = xp.empty(max(part.n_local, 1), dtype="int64")
        self.scratch = xp.empty(max(1, min(part.n_local, kernels.PAIRS_MAX_FRONTIER)), dtype="int64")
        self.counters = xp.zeros(EDGES + 1, dtype="int64")
        self.bitmap_bytes = 2 * int(self.next_slice.nbytes) * layout.n_owners
        self._pairs = None  # (this owner's slot, every owner's), grown to the largest level's
        self.busy = False
        self.transport = self.dist = self.parent = None

    @property
    def part(self) -> Partition:
        return self._part()

    def begin(self, transport):
        """Start a traversal over ``transport``: its results made, the arrays that are not
        written whole before they are read reset."""
        xp, part = self.xp, self.part
        self.transport = transport
        self.dist = xp.full(part.n_local, -1, dtype="int32")
        self.parent = xp.full(part.n_local, -1, dtype="int64")
        self.visited.fill(0)
        self.counters.fill(0)
        self.counters[EDGES] = part.n_edges

    def pair_bytes(self, slots: int) -> int:
        """What a top-down level of pairs gathers: every owner's ``slots`` pairs of ids."""
        return 2 * slots * self.part.indices.itemsize * self.layout.n_owners

    def pairs(self, slots: int) -> tuple:
        """``(mine, gathered)``: this owner's slot of ``2 * slots`` ids and room for every
        owner's, views of buffers that grow (never shrink) to the largest level's."""
        if self._pairs is None or self._pairs[0].size < 2 * slots:
            dtype = self.part.indices.dtype
            self._pairs = (self.xp.empty(2 * slots, dtype=dtype),
                           self.xp.empty(self.layout.n_owners * 2 * slots, dtype=dtype))
        mine, gathered = self._pairs
        return mine[:2 * slots], gathered[:self.layout.n_owners * 2 * slots]

    def start(self, local_sources):
        """Put the sources (local ids) in the first frontier; returns the counters to gather."""
        xp, kernels = self.xp, self.kernels
        sources = np.unique(np.asarray(local_sources, dtype=np.int64))
        k = int(sources.size)
        if k:
            on_device = xp.asarray(sources)
            self.queue[:k] = on_device
            self.dist[on_device] = 0
            indptr = self.part.indptr
            self.counters[kernels.NEXT_EDGES] = (indptr[on_device + 1] - indptr[on_device]).sum()
        kernels.frontier_to_bitmap(self.queue[:k], self.next_slice)
        self.counters[kernels.NEXT] = k
        return self.counters

    def level(self, tag: int, level: int, bottom_up: bool, k: int, edges: int) -> int:
        """Queue one level from the frontier in ``next_slice`` and ``queue`` (``k`` vertices
        here, out-degree sum ``edges``), its steps tagged ``tag + 1`` and ``tag + 2``; returns
        the bytes this owner sends its peers."""
        part, kernels, transport = self.part, self.kernels, self.transport
        transport.gather_slices(tag + 1, self.next_slice, self.front)
        kernels.bfs_owner_level_begin(self.front, self.visited, None if bottom_up else self.marks,
                                      self.counters if bottom_up else None)
        slice_bytes = int(self.next_slice.nbytes) * (self.layout.n_owners - 1)
        if bottom_up:
            kernels.bfs_owner_resolve(part.indptr, part.indices, level, self.front, None,
                                      self.received, part.owner, self.dist, self.parent,
                                      self.next_slice, self.queue, self.counters)
            return slice_bytes
        kernels.bfs_owner_mark(part.indptr, part.indices, self.queue, k, edges, self.visited,
                               self.marks, self.counters, scratch=self.scratch)
        transport.swap_slices(tag + 2, self.marks, self.received)
        kernels.bfs_owner_resolve(part.indptr, part.indices, level, self.front, self.own_marks,
                                  self.received, part.owner, self.dist, self.parent,
                                  self.next_slice, self.queue, self.counters)
        return 2 * slice_bytes

    def pairs_level(self, tag: int, level: int, k: int, edges: int, slots: int) -> int:
        """Queue one top-down level of pairs from the frontier in ``queue`` (``k`` vertices
        here, out-degree sum ``edges``), every owner's slot ``slots`` pairs long (at least
        every owner's out-degree sum), its gather tagged ``tag + 1``; returns the bytes this
        owner sends its peers."""
        part, kernels = self.part, self.kernels
        mine, gathered = self.pairs(slots)
        kernels.bfs_owner_pairs(part.indptr, part.indices, part.offset, self.queue, k, edges,
                                self.visited, mine, self.next_slice, self.counters,
                                scratch=self.scratch)
        self.transport.gather_slices(tag + 1, mine, gathered)
        kernels.bfs_owner_claim_pairs(part.indptr, gathered, part.offset, level, self.visited,
                                      self.dist, self.parent, self.next_slice, self.queue,
                                      self.counters)
        return int(mine.nbytes) * (self.layout.n_owners - 1)


WORKSPACES = {}  # id of a partition -> its kept level arrays (a _Levels), while the partition lives
_WORKSPACES_LOCK = threading.Lock()


@contextlib.contextmanager
def _workspace(part: Partition, layout: Layout):
    """The partition's :class:`_Levels` for one traversal; a traversal of the same partition
    that runs at the same time (a second client) gets arrays of its own. The results are the
    caller's: this keeps no reference to them once the traversal ends."""
    key = id(part)
    with _WORKSPACES_LOCK:
        arrays = WORKSPACES.get(key)
        if arrays is None:
            arrays = WORKSPACES[key] = _Levels(part, layout)
            weakref.finalize(part, WORKSPACES.pop, key, None)
        elif arrays.busy:
            arrays = _Levels(part, layout)
        arrays.busy = True
    try:
        yield arrays
    finally:
        arrays.transport = arrays.dist = arrays.parent = None
        arrays.busy = False
