"""The level steps of a BFS over several owners, on the CPU (Numba): twins of kernels/bfs_owners.cu.

The owner loop in gpipe/engine/owners/bfs.py (``bfs_owner_arrays``) calls them once per level;
their names, signatures and promises are part of the "Kernel contract" of ARCHITECTURE.md, and
gpipe/engine/compute/gpu_bfs_owners.py keeps the same ones.

What each step computes
    bfs_owner_top_down  One top-down level [1, 2] of one owner, with nothing to sort afterwards.
                An owned target that is unvisited is claimed in place (dist = level + 1, parent
                = the scanning vertex) and appended to next_frontier. A target owned elsewhere
                is sent at most ONCE per traversal by this owner: its bit in the per-traversal
                `sent` bitmap (global ids) is tested and set, and only the edge that set it
                appends (target, parent) to the queue of the target's owner. This is correct
                because a vertex sent at level L is claimed by its owner at level L + 1 at the
                latest, so a later send of it could never lower its distance. It also bounds
                queue q's length by owner q's vertex count, so the queues are allocated once
                per traversal.
    bfs_owner_claim  Takes in the (target, parent) candidates that peers sent: an unvisited
                target is claimed (dist = level + 1, that parent) and appended to
                next_frontier. Duplicates from several senders are resolved by the claim itself,
                the first one wins: no sort, no unique.
    bfs_owner_bottom_up  One bottom-up level [2] of one owner of an undirected graph (its rows
                are the in-edges of its vertices): every unvisited owned vertex scans its
                neighbours until one is in the frontier bitmap of ALL owners (global ids, put
                together from the owners' slices), and takes it as parent. No remote candidates.
    frontier_to_bitmap, bitmap_to_frontier  An owner's frontier as local ids <-> its slice of
                the global frontier bitmap (at a change of direction).

Counters
    `counters` is int64[4 + n_owners]: [FRONTIER], [FRONTIER_EDGES] the length and out-degree
    sum of the frontier a top-down level expanded; [NEXT] the length of next_frontier,
    [NEXT_EDGES] the out-degree sum of the vertices in it; [QUEUES + q] the length of owner
    q's queue (this owner's own entry stays 0). The frontier of a top-down level is what the
    previous level's steps appended: bfs_owner_top_down takes its length from [NEXT] and its
    out-degree sum from [NEXT_EDGES], moves them to [FRONTIER] and [FRONTIER_EDGES] and zeroes
    the rest; bfs_owner_bottom_up zeroes them all; bfs_owner_claim and bitmap_to_frontier add
    to [NEXT]. So the host need not read anything between the claims of a level and the
    expansion of the next (the GPU twin reads the length on the device): the owner loop reads
    the counters once per top-down level, after the step.

Invariants of the arrays
    - Local ids 0..n_local-1, global ids offset + local. Owners' offsets are multiples of
      `chunk`, itself a multiple of 64 (gpipe.engine.partition.Layout), so owner q holds global ids
      q * chunk .. q * chunk + size(q) - 1 and its slice of a bitmap over global ids is whole
      words.
    - dist int32[n_local], -1 = unvisited; writing dist is the claim, so a vertex enters
      next_frontier once. parent int64[n_local], global ids, -1 = none.
    - frontier, next_frontier int64[n_local]: every vertex is claimed once per traversal, so
      n_local slots always suffice (appends start at counters[NEXT]). The owner loop swaps the
      two buffers from level to level.
    - queue_targets, queue_parents: int[n] of the index dtype, global ids; owner q's queue is
      [q * chunk, q * chunk + size(q)) (the sent bitmap keeps it within that).
    - Bitmaps are int64 words (BITMAP_BITS = 64): bit v & 63 of word v >> 6. `sent` and `front`
      cover the n global ids; `next_front` covers this owner's n_local ids.

These kernels run one thread each (an owner's worker of a CPU cluster runs Numba on one
thread), but bfs_owner_bottom_up, race-free by construction, runs its words in parallel when
Numba has threads. tests/kernel_graphs.py holds their slow twin, a plain NumPy reading of the
contract, and tests/test_kernels_cpu.py checks the steps against it, edge by edge.

References
    [1] E. F. Moore, "The shortest path through a maze", Proc. Int. Symp. Theory of Switching, 1959.
    [2] S. Beamer, K. Asanovic, D. Patterson, "Direction-Optimizing Breadth-First Search", SC 2012.
    [3] A. Buluc, K. Madduri, "Parallel Breadth-First Search on Distributed Memory Systems",
        SC 2011 (1-D partitioned BFS: each owner expands its own vertices and sends each
        remote target to its owner).
"""

import numba
import numpy as np

from gpipe.engine.compute.cpu_jit import BOOL, INT32S, INT64, INT64S, each_index, kernel, plain

PAIRS_MAX_FRONTIER = 2**62  # the longest frontier whose level bfs_levels sends as pairs: any
BITMAP_BITS = 64
BITMAP_DTYPE = np.int64

FRONTIER = 0  # counters[FRONTIER]: length of the frontier a top-down level expanded
FRONTIER_EDGES = 1  # its out-degree sum
NEXT = 2  # counters[NEXT]: length of next_frontier
NEXT_EDGES = 3  # counters[NEXT_EDGES]: out-degree sum of next_frontier
QUEUES = 4  # counters[QUEUES + q]: length of owner q's queue


# ---------------------------------------------------------------------------------------------
# Compiled steps
# ---------------------------------------------------------------------------------------------


@kernel(*each_index(lambda indices: (INT64S, indices, INT64, INT64S, INT32S, INT64S, INT64, INT64,
                                      INT64S, INT64S, indices, indices, INT64S)))
def _top_down_step(indptr, indices, offset, frontier, dist, parent, level, chunk, sent,
                   next_frontier, queue_targets, queue_parents, counters):
    """Expand `frontier`: claim owned targets, queue each remote target the first time only."""
    n_local = dist.shape[0]
    n_next = counters[NEXT]
    next_edges = counters[NEXT_EDGES]
    for i in range(frontier.shape[0]):
        u = frontier[i]
        u_global = offset + u
        for e in range(indptr[u], indptr[u + 1]):
            target = np.int64(indices[e])
            v = target - offset
            if 0 <= v < n_local:
                if dist[v] == -1:
                    dist[v] = level + 1
                    parent[v] = u_global
                    next_frontier[n_next] = v
                    n_next += 1
                    next_edges += indptr[v + 1] - indptr[v]
            else:
                word = target >> 6
                bit = np.int64(1) << (target & 63)
                if (sent[word] & bit) == 0:  # test and set: only the first edge to it sends
                    sent[word] |= bit
                    q = target // chunk
                    at = q * chunk + counters[QUEUES + q]
                    queue_targets[at] = target
                    queue_parents[at] = u_global
                    counters[QUEUES + q] += 1
    counters[NEXT] = n_next
    counters[NEXT_EDGES] = next_edges


@kernel(*each_index(lambda ids: (INT64S, INT64, ids, ids, INT32S, INT64S, INT64, INT64S, INT64S)))
def _claim(indptr, offset, targets, parents, dist, parent, level, next_frontier, counters):
    """Claim the unvisited ones among `targets` (global ids of this owner); the first wins."""
    n_next = counters[NEXT]
    next_edges = counters[NEXT_EDGES]
    for i in range(targets.shape[0]):
        v = np.int64(targets[i]) - offset
        if dist[v] == -1:
            dist[v] = level + 1
            parent[v] = parents[i]
            next_frontier[n_next] = v
            n_next += 1
            next_edges += indptr[v + 1] - indptr[v]
    counters[NEXT] = n_next
    counters[NEXT_EDGES] = next_edges


@kernel(*each_index(lambda indices: (INT64S, indices, INT32S, INT64S, INT64, INT64S, INT64S)),
        parallel=True)
def _bottom_up_step(indptr, indices, dist, parent, level, front, next_front):
    """Every unvisited owned vertex looks for a neighbour in `front` (global bitmap).

    Each thread owns whole 64-vertex words of `next_front` (local bitmap), so it alone writes
    their dist, parent and bits. Returns the number of vertices claimed and their out-degree sum.
    """
    n_local = dist.shape[0]
    awake = 0
    awake_edges = 0
    for w in numba.prange(next_front.shape[0]):
        word = np.int64(0)
        lo = w * 64
        for v in range(lo, min(lo + 64, n_local)):
            if dist[v] == -1:
                u = _frontier_neighbour(indptr, indices, front, v)
                if u >= 0:
                    dist[v] = level + 1
                    parent[v] = u
                    word |= np.int64(1) << (v - lo)
                    awake += 1
                    awake_edges += indptr[v + 1] - indptr[v]
        next_front[w] = word
    return awake, awake_edges


@numba.njit(cache=True, nogil=True)
def _frontier_neighbour(indptr, indices, front, v):
    """The first neighbour of `v` in row order that `front` (global bitmap) holds, or -1."""
    for e in range(indptr[v], indptr[v + 1]):
        u = np.int64(indices[e])
        if (front[u >> 6] >> (u & 63)) & 1:
            return u
    return np.int64(-1)


@kernel((INT64S, INT64S))
def ids_to_bitmap(frontier, bitmap):
    """Clear `bitmap` (int64 words) and set the bits of the ids in `frontier`."""
    bitmap[:] = 0
    for i in range(frontier.shape[0]):
        v = frontier[i]
        bitmap[v >> 6] |= np.int64(1) << (v & 63)


@kernel((INT64S, INT64S))
def bitmap_to_ids(bitmap, out):
    """Write the ids of the set bits into `out`, ascending; return how many."""
    k = 0
    for w in range(bitmap.shape[0]):
        word = bitmap[w]
        if word != 0:
            for b in range(64):
                if (word >> b) & 1:
                    out[k] = w * 64 + b
                    k += 1
    return k


@kernel(*each_index(lambda indices: (INT64S, indices, INT64S, INT64, INT64S, INT64S)))
def _mark_step(indptr, indices, frontier, k, visited, marks):
    """Set in `marks` the bit of every target of the first `k` frontier vertices not in `visited`."""
    for i in range(k):
        u = frontier[i]
        for e in range(indptr[u], indptr[u + 1]):
            v = np.int64(indices[e])
            bit = np.int64(1) << (v & 63)
            if (visited[v >> 6] & bit) == 0:
                marks[v >> 6] |= bit


@kernel(*each_index(lambda indices: (INT64S, indices, INT64, INT64S, BOOL, INT64S, INT64S, INT64,
                                      INT64, INT32S, INT64S, INT64S, INT64S, INT64S)))
def _resolve_step(indptr, indices, level, front, masked, own_marks, received, n_owners, owner,
                  dist, parent, next_front, frontier, counters):
    """Every unvisited owned vertex (with `masked`, the marked ones only) takes its first
    neighbour in `front` as parent; the claimed go to `next_front` (written whole) and are
    appended to `frontier` at counters[NEXT]."""
    n_local = dist.shape[0]
    words = own_marks.shape[0]
    n_next = counters[NEXT]
    next_edges = counters[NEXT_EDGES]
    for w in range(next_front.shape[0]):
        wanted = np.int64(-1)
        if masked:
            wanted = own_marks[w]
            for q in range(n_owners):
                if q != owner:
                    wanted |= received[q * words + w]
        word = np.int64(0)
        lo = w * 64
        for v in range(lo, min(lo + 64, n_local)):
            if dist[v] == -1 and (wanted >> (v - lo)) & 1:
                u = _frontier_neighbour(indptr, indices, front, v)
                if u >= 0:
                    dist[v] = level + 1
                    parent[v] = u
                    word |= np.int64(1) << (v - lo)
                    frontier[n_next] = v
                    n_next += 1
                    next_edges += indptr[v + 1] - indptr[v]
        next_front[w] = word
    counters[NEXT] = n_next
    counters[NEXT_EDGES] = next_edges


@kernel(*each_index(lambda indices: (INT64S, indices, INT64, INT64S, INT64, INT64S, indices)))
def _pairs_step(indptr, indices, offset, frontier, k, visited, pairs):
    """The first `k` frontier vertices' out-edges as (target, parent) pairs, target -1 where
    `visited` has it; the slots after them (-1, -1)."""
    e = 0
    for i in range(k):
        u = frontier[i]
        for j in range(indptr[u], indptr[u + 1]):
            v = np.int64(indices[j])
            pairs[2 * e] = -1 if (visited[v >> 6] >> (v & 63)) & 1 else v
            pairs[2 * e + 1] = offset + u
            e += 1
    pairs[2 * e:] = -1


@kernel(*each_index(lambda ids: (INT64S, ids, INT64, INT64, INT64S, INT32S, INT64S, INT64S,
                                  INT64S, INT64S)))
def _claim_pairs_step(indptr, pairs, offset, level, visited, dist, parent, next_front, frontier,
                      counters):
    """Claim this owner's unvisited targets of `pairs`, each taking its pair's parent; every
    pair's target and parent go into `visited`."""
    n_local = dist.shape[0]
    n_next = counters[NEXT]
    next_edges = counters[NEXT_EDGES]
    for i in range(pairs.shape[0] // 2):
        v = np.int64(pairs[2 * i])
        u = np.int64(pairs[2 * i + 1])
        if u >= 0:
            visited[u >> 6] |= np.int64(1) << (u & 63)
        if v < 0:
            continue
        visited[v >> 6] |= np.int64(1) << (v & 63)
        local = v - offset
        if 0 <= local < n_local and dist[local] == -1:
            dist[local] = level + 1
            parent[local] = u
            next_front[local >> 6] |= np.int64(1) << (local & 63)
            frontier[n_next] = local
            n_next += 1
            next_edges += indptr[local + 1] - indptr[local]
    counters[NEXT] = n_next
    counters[NEXT_EDGES] = next_edges


# ---------------------------------------------------------------------------------------------
# Contract: the functions the owner loop calls
# ---------------------------------------------------------------------------------------------


def bfs_owner_top_down(indptr, indices, offset, frontier, dist, parent, level, chunk, sent,
                       next_frontier, queue_targets, queue_parents, counters, frontier_bound=None):
    """Expand one owner's frontier one level, top-down; claim owned targets, queue remote ones once.

    Parameters
    ----------
    indptr : int64[n_local + 1]
    indices : int32 or int64[nnz]
        Global target ids of the owner's out-edges.
    offset : int
        Global id of local vertex 0 (a multiple of `chunk`).
    frontier : int64[>= k]
        Its first ``k = counters[NEXT]`` entries (what the previous level appended) are
        distinct local ids at distance `level`.
    dist : int32[n_local]
        -1 = unvisited; claimed targets get ``level + 1``.
    parent : int64[n_local]
        Global ids; claimed targets get ``offset + u``.
    level : int
    chunk : int
        Ids per owner (``Layout.chunk``): owner of ``v`` is ``v // chunk``.
    sent : int64[ceil(n / 64)]
        Bitmap of the global ids this owner has sent in this traversal; bits are set here.
    next_frontier : int64[n_local]
        Claimed local ids are appended at ``counters[NEXT]``.
    queue_targets, queue_parents : int[n], the dtype of `indices`
        Owner q's queue starts at ``q * chunk``; remote ``(v, offset + u)`` are appended at
        ``q * chunk + counters[QUEUES + q]``.
    counters : int64[4 + n_owners]
        In: ``[NEXT]``, ``[NEXT_EDGES]`` describe `frontier`. Out: those two moved to
        ``[FRONTIER]``, ``[FRONTIER_EDGES]``, the rest counted anew (the module's "Counters").
    frontier_bound : int, optional
        An upper bound of the frontier's length that the caller knows without reading the
        counters (the GPU twin picks its path by it; unused here).

    Notes
    -----
    A remote target whose bit in `sent` is already set is not queued again: it was sent at an
    earlier level (or earlier in this one), and its owner claims it at the following level at
    the latest. Work O(frontier edges); nothing is allocated.
    """
    del frontier_bound
    k, edges = counters[NEXT], counters[NEXT_EDGES]
    counters[:] = 0
    counters[FRONTIER], counters[FRONTIER_EDGES] = k, edges
    if k:
        _top_down_step(indptr, indices, np.int64(offset), frontier[:k], dist, parent,
                       np.int64(level), np.int64(chunk), sent, next_frontier, queue_targets,
                       queue_parents, counters)


def bfs_owner_claim(indptr, offset, targets, parents, dist, parent, level, next_frontier, counters):
    """Claim the candidates ``(targets, parents)`` a peer sent, at distance ``level + 1``.

    Parameters
    ----------
    indptr : int64[n_local + 1]
        For the out-degrees added to ``counters[NEXT_EDGES]``.
    offset : int
    targets, parents : int32 or int64[r]
        Global ids; every target is owned here. Repeats (within one call or across calls) are
        harmless: only the first claim of a vertex counts.
    dist, parent : as in `bfs_owner_top_down`
    level : int
        The level of the senders' frontier; claimed vertices get ``level + 1`` (``-1`` claims
        sources at 0).
    next_frontier, counters : as in `bfs_owner_top_down`
    """
    if targets.shape[0]:
        _claim(indptr, np.int64(offset), plain(targets), plain(parents), dist, parent, np.int64(level),
               next_frontier, counters)


def bfs_owner_bottom_up(indptr, indices, dist, parent, level, front, next_front, counters):
    """One bottom-up level of one owner of an undirected graph.

    Parameters
    ----------
    indptr, indices : the owner's CSR; on an undirected graph also its in-edges.
    dist, parent : as in `bfs_owner_top_down`
    level : int
        Distance of the frontier in `front`.
    front : int64[ceil(n / 64)]
        The frontier of all owners, a bitmap over global ids.
    next_front : int64[ceil(n_local / 64)]
        Written whole: bit v set for each local v claimed here.
    counters : int64[4 + n_owners]
        Zeroed; then ``counters[NEXT]`` and ``counters[NEXT_EDGES]`` get the number claimed
        and their out-degree sum.

    Notes
    -----
    Each unvisited vertex stops at its first neighbour (in row order) in the frontier, which
    becomes its parent. Work O(n_local) plus the neighbours read.
    """
    awake, awake_edges = _bottom_up_step(indptr, indices, dist, parent, np.int64(level), front,
                                         next_front)
    counters[:] = 0
    counters[NEXT] = awake
    counters[NEXT_EDGES] = awake_edges


def frontier_to_bitmap(frontier, bitmap):
    """Clear `bitmap` (int64 words) and set the bits of the local ids in `frontier`."""
    ids_to_bitmap(frontier, bitmap)


def bitmap_to_frontier(bitmap, out, counters):
    """Write the local ids set in `bitmap` into `out`, ascending, and their number into
    ``counters[NEXT]`` (the other counters untouched)."""
    counters[NEXT] = bitmap_to_ids(bitmap, out)


def bfs_owner_level_begin(front, visited, marks, counters):
    """The start of a fixed-size level (gpipe/engine/owners/bfs_levels.py): `visited` (the OR of
    every level's gathered frontier) takes in `front`; `marks` is cleared and ``counters[:4]``
    zeroed, each unless None (a bottom-up level leaves the marks; a top-down level's mark
    zeroes the counters)."""
    np.bitwise_or(visited, front, out=visited)
    if marks is not None:
        marks[:] = 0
    if counters is not None:
        counters[:4] = 0


def bfs_owner_mark(indptr, indices, frontier, k, edges, visited, marks, counters, scratch=None):
    """Top-down half of a fixed-size level: set in `marks` the bit of every target v (global
    id) of the first `k` local ids of `frontier` (out-degree sum `edges`) whose bit `visited`
    lacks, and zero ``counters[:4]`` for the resolve. Owned and remote targets alike; nothing is
    claimed (the parents are found by `bfs_owner_resolve` once the owners have swapped their
    marks). `marks` and `visited` are int64[n_owners * words] bitmaps over global ids (each
    owner's slot is `words` whole words); `marks` is only ever or-ed into.
    """
    del edges, scratch  # the GPU twin sizes its grid by the one and scans into the other
    counters[:4] = 0
    _mark_step(indptr, indices, frontier, np.int64(k), visited, marks)


def bfs_owner_resolve(indptr, indices, level, front, own_marks, received, owner, dist, parent,
                      next_front, frontier, counters):
    """The claim of a fixed-size level of an undirected graph, top-down or bottom-up.

    Parameters
    ----------
    indptr, indices : the owner's CSR, also its in-edges (undirected graph).
    level : int
        Distance of the frontier in `front`.
    front : int64[n_owners * words]
        The level's frontier, every owner's slice gathered (global ids).
    own_marks : int64[words] or None
        Top-down: this owner's own marks of its vertices (its slot of the marks bitmap);
        None for a bottom-up level, where every unvisited vertex searches.
    received : int64[n_owners * words]
        Top-down: at slot q, the marks owner q made of this owner's vertices (this owner's
        slot is not read). Ignored (any array) when `own_marks` is None.
    owner : int
    dist, parent : int32[n_local], int64[n_local]; -1 unvisited / none (parents global ids).
    next_front : int64[>= ceil(n_local / 64)]
        The claimed vertices' bits, its first ceil(n_local / 64) words written whole.
    frontier : int64[n_local]
        The claimed local ids are appended at ``counters[NEXT]`` (the next level's queue).
    counters : int64[>= 4]
        ``[NEXT]`` and ``[NEXT_EDGES]`` are added to: the vertices claimed and their
        out-degree sum.

    Notes
    -----
    A vertex claimed here takes its first neighbour in row order that is in `front`, as
    `bfs_owner_bottom_up`; a marked vertex always has one (its mark came from an edge of
    the frontier, and the graph is undirected), so the top-down half needs no parents.
    """
    masked = own_marks is not None
    if not masked:
        own_marks = received = front[:1]
    n_owners = received.shape[0] // own_marks.shape[0] if masked else 1
    _resolve_step(indptr, indices, np.int64(level), front, masked, own_marks, received,
                  np.int64(n_owners), np.int64(owner), dist, parent, next_front, frontier, counters)


def bfs_owner_pairs(indptr, indices, offset, frontier, k, edges, visited, pairs, next_front,
                    counters, scratch=None):
    """Top-down from a small frontier, sending edges rather than bitmaps (a fixed-size level of
    gpipe/engine/owners/bfs_levels.py whose slot size the host knows from the last counters).

    Writes the out-edges of the first `k` local ids of `frontier` (`edges` of them, in row
    order, frontier vertex by frontier vertex) into `pairs` (the dtype of `indices`, interleaved
    ``target, parent``, ``pairs.size // 2 >= edges`` slots): ``(v, offset + u)`` for an edge
    u -> v, with v = -1 where `visited` has v's bit; the slots after them get ``(-1, -1)``. Also
    clears `next_front` and zeroes ``counters[:4]`` for `bfs_owner_claim_pairs`.
    """
    del edges, scratch  # the GPU twin sizes its scan by the one and scans into the other
    next_front[:] = 0
    counters[:4] = 0
    _pairs_step(indptr, indices, np.int64(offset), frontier, np.int64(k), visited, pairs)


def bfs_owner_claim_pairs(indptr, pairs, offset, level, visited, dist, parent, next_front,
                          frontier, counters):
    """Claim, from every owner's gathered `pairs` (as `bfs_owner_pairs` writes them), the
    unvisited targets this owner holds (global ids ``offset .. offset + n_local - 1``): dist =
    level + 1, parent = the pair's parent (a global id; the first pair wins), the bit set in
    `next_front`, the local id appended to `frontier` at ``counters[NEXT]``, its out-degree
    added to ``counters[NEXT_EDGES]``. `visited` (int64 words over the global ids) takes in
    every pair's target and parent, so that it still holds every vertex known to be reached."""
    _claim_pairs_step(indptr, pairs, np.int64(offset), np.int64(level), visited, dist, parent,
                      next_front, frontier, counters)
