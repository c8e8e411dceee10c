"""Traversal kernels for the CPU, compiled with Numba; twins of the CUDA kernels in kernels/*.cu.

The names, signatures and promises are the "Kernel contract" of ARCHITECTURE.md; gpipe/engine/compute/gpu.py
keeps the same ones, so the driver (gpipe/engine/traverse.py) never asks which module it holds.

What each kernel computes
    bfs_expand  One top-down BFS step [1, 2] on one owner's CSR. Every frontier vertex (all at
                distance `level`) scans its out-edges; an unvisited owned target is claimed
                (dist = level + 1, parent = the scanning vertex) and appended to the next
                frontier; a target owned elsewhere is reported, raw, for the driver to route.
    sssp_relax  One round of frontier-based Bellman-Ford [3, 4]: the vertices whose distance
                dropped in the previous round relax their out-edges, each from the distance it
                had when the round began (`frontier_dist`). The vertices whose distance drops
                now are the next round's frontier. Works with negative weights; the driver
                bounds the number of rounds to detect a negative cycle. A candidate above
                `bound` (max_distance) is dropped: the search never goes beyond the cutoff.
    bfs         A whole one-owner BFS, one compiled step per level, direction-optimizing [2]
                when given the in-edges (for an undirected graph, the CSR itself): top-down steps over a queue
                while the frontier has few edges, bottom-up steps over a frontier bitmap (every
                unvisited vertex looks for a parent among its in-neighbours, stopping at the
                first) while it has many; GAPBS's switch rule (alpha = 15, beta = 18). Without
                the in-edges, top-down only. Steps with many edges run in parallel.
    delta_stepping  Delta-stepping [4] for non-negative weights: vertices wait in buckets of
                width delta by tentative distance; the lowest bucket is relaxed until it stays
                empty. The SSSP of one owner, in gpipe/engine/compute/cpu_delta.py (the one kernel
                here with atomics, gpipe/engine/compute/atomics.py). dijkstra is its slow,
                obviously-correct twin.
    sssp_owner_relax, sssp_owner_merge, sssp_owner_advance, sssp_owner_pack, sssp_owner_counts
                One owner's share of an SSSP over several owners (gpipe/engine/traverse.py): local
                phases below the exchange window with remote candidates pruned against the
                least distance ever sent for them, the merge of what arrives, the far pile, the
                outbox. Non-negative weights: serial delta-stepping over a ring of buckets
                (gpipe/engine/compute/cpu_sssp_ring.py); negative weights: the Numba twin of
                kernels/sssp_owners.cu (gpipe/engine/compute/cpu_sssp_owners.py), one round per step.
    dijkstra    Dijkstra's algorithm [5] with a binary heap and lazy deletion [6]: instead of
                decrease-key, a vertex is pushed again on each strict improvement, and a popped
                entry whose key is above the vertex's current distance is stale and skipped.
    bfs_batch, bfs_batch_parents, sssp_batch
                Per-source traversals of a batch of sources in one call (bit-parallel MS-BFS;
                one Dijkstra or Bellman-Ford per source, several at once), in
                gpipe/engine/compute/cpu_batch.py; the contract is in gpipe/engine/compute/__init__.py.
    bfs_owner_* The level steps of a BFS over several owners (top-down with each remote
                target sent once, the claim of what peers sent, bottom-up over the frontier
                bitmap of all owners), in gpipe/engine/compute/cpu_bfs_owners.py.

Parallel BFS steps
    - Bottom-up BFS: each thread owns whole 64-vertex words of the bitmaps, and writes only
      its own vertices' dist, parent and bits. Race-free by construction, no atomics.
    - Top-down BFS: a vertex is claimed by compare-and-swap of its dist (gpipe/engine/compute/
      atomics.py); the one winner writes its parent and its bit of the next frontier.

Invariants of the arrays
    - Local ids are 0..n_local-1, global ids offset + local. `indptr` is int64[n_local + 1];
      `indices` hold global target ids, int32 or int64; `parent` holds global ids, -1 = none.
    - BFS: `dist` is int32, -1 = unvisited. Writing dist is the claim: a vertex is appended to
      a frontier only by the edge that finds it unvisited, so it appears there once.
    - SSSP: `dist` is float64, +inf = unreached, and only ever decreases. A vertex is appended
      to `improved` at its first strict decrease in a call, marked in a per-call flag array, so
      it appears there once. `parent` is written at every strict decrease, from the same edge
      that wrote dist, so when the call returns parent[v] names an edge u->v with
      frontier_dist[u] + w == dist[v] exactly, and a parent never changes without an
      improvement (which keeps the parent graph acyclic when no negative cycle exists).
    - Relaxing from the snapshot `frontier_dist`, never from `dist[u]`, makes the result of a
      round independent of the order the frontier is scanned in, which is what lets the GPU
      twin, scanning in parallel, return the same distances.
    - Outputs are sized by the frontier's total out-degree, the most one step can write, then
      sliced to what was written.

References
    [1] E. F. Moore, "The shortest path through a maze", Proc. Int. Symp. Theory of Switching, 1959.
    [2] S. Beamer, K. Asanovic, D. Patterson, "Direction-Optimizing Breadth-First Search", SC 2012.
    [3] R. Bellman, "On a routing problem", Quarterly of Applied Mathematics 16, 1958.
    [4] U. Meyer, P. Sanders, "Delta-stepping: a parallelizable shortest path algorithm",
        J. Algorithms 49, 2003 (the level-synchronous rounds are its Delta = infinity case).
        GAPBS (sbeamer/gapbs, src/bfs.cc, src/sssp.cc) for the parameters and step structure.
    [5] E. W. Dijkstra, "A note on two problems in connexion with graphs", Numer. Math. 1, 1959.
    [6] M. Chen, R. A. Chowdhury, V. Ramachandran, D. L. Roche, L. Tong, "Priority Queues and
        Dijkstra's Algorithm", UTCS TR-07-54, 2007.
"""

import numba
import numpy as np

from gpipe.engine.compute import atomics
from gpipe.engine.compute.directions import ALPHA, BETA
from gpipe.engine.compute.cpu_jit import (BOOL, BOOLS, FLOAT64, FLOAT64S, INT32S, INT64, INT64S, each_index,
                                          each_index_and_weight, kernel)
from gpipe.engine.compute.cpu_csr import build_csr, build_csr_pieces  # noqa: F401 (the contract)
from gpipe.engine.compute.cpu_arrays import (arange, astype, copy, count_nonzero, cumsum_in_place,  # noqa: F401 (the contract: array operations)
                                             flatnonzero, full, isfinite, logical_not, negative,
                                             non_negative, packbits_little, scatter, take, unique)
from gpipe.engine.compute.cpu_bfs_owners import (BITMAP_BITS, BITMAP_DTYPE, FRONTIER, FRONTIER_EDGES, NEXT,  # noqa: F401 (the contract: BFS over several owners)
                                                 NEXT_EDGES, PAIRS_MAX_FRONTIER, QUEUES, bfs_owner_bottom_up,
                                                 bfs_owner_claim,
                                                 bfs_owner_claim_pairs, bfs_owner_level_begin, bfs_owner_mark,
                                                 bfs_owner_pairs, bfs_owner_resolve,
                                                 bfs_owner_top_down,
                                                 bitmap_to_frontier, frontier_to_bitmap)
from gpipe.engine.compute.cpu_bfs_owners import bitmap_to_ids, ids_to_bitmap
from gpipe.engine.compute.cpu_batch import (BFS_BATCH_WIDTH, SSSP_BATCH_WIDTH, bfs_batch, bfs_batch_parents,  # noqa: F401 (the contract: per-source batches)
                                            sssp_batch)
from gpipe.engine.compute.cpu_delta import default_delta, delta_stepping  # noqa: F401
from gpipe.engine.compute.cpu_sssp_owners import sssp_owner_counts, sssp_owner_pack, sssp_owners_delta  # noqa: F401
from gpipe.engine.compute.cpu_sssp_ring import sssp_owner_advance, sssp_owner_merge, sssp_owner_relax  # noqa: F401

_kernel = numba.njit(cache=True, nogil=True)

# Direction-optimizing BFS (its switch thresholds, GAPBS's [2]: gpipe.engine.compute.directions):
# the smallest top-down step worth a parallel region (below it, one thread finishes before the
# others would have started).
SERIAL_EDGES = 1 << 14
# Chunks per thread of a parallel top-down step (edge-balanced; a few per thread absorb hubs).
CHUNKS_PER_THREAD = 4


# ---------------------------------------------------------------------------------------------
# Compiled steps
# ---------------------------------------------------------------------------------------------


@kernel((INT64S, INT64S))
def _frontier_degree(indptr, frontier):
    """Total out-degree of the frontier: the most edges one step over it can report."""
    total = 0
    for i in range(frontier.shape[0]):
        u = frontier[i]
        total += indptr[u + 1] - indptr[u]
    return total


@kernel(*each_index(lambda indices: (INT64S, indices, INT64, INT64S, INT32S, INT64S, INT64, BOOL,
                                      INT64S, INT64S, INT64S)))
def _top_down_step(indptr, indices, offset, frontier, dist, parent, level, remote,
                   next_frontier, remote_targets, remote_parents):
    """Expand `frontier` one BFS level; return how many ids went to next_frontier and to the remote lists."""
    n_local = dist.shape[0]
    keep_parents = parent.shape[0] > 0  # an empty parent array: distances only
    n_next = 0
    n_remote = 0
    for i in range(frontier.shape[0]):
        u = frontier[i]
        u_global = offset + u
        for e in range(indptr[u], indptr[u + 1]):
            target = np.int64(indices[e])
            v = target - offset
            if 0 <= v < n_local:
                if dist[v] == -1:
                    dist[v] = level + 1
                    if keep_parents:
                        parent[v] = u_global
                    next_frontier[n_next] = v
                    n_next += 1
            elif remote:
                remote_targets[n_remote] = target
                remote_parents[n_remote] = u_global
                n_remote += 1
    return n_next, n_remote


@kernel(*each_index_and_weight(lambda indices, weights: (
    INT64S, indices, weights, INT64, INT64S, FLOAT64S, FLOAT64S, INT64S, BOOL, FLOAT64, BOOLS, INT64S,
    INT64S, FLOAT64S, INT64S)))
def _relax_step(indptr, indices, weights, offset, frontier, frontier_dist, dist, parent, remote,
                bound, is_improved, improved, remote_targets, remote_dists, remote_parents):
    """Relax the frontier's out-edges once, dropping candidates above ``bound``; return how
    many ids went to improved and to the remote lists."""
    n_local = dist.shape[0]
    keep_parents = parent.shape[0] > 0  # an empty parent array: distances only
    n_improved = 0
    n_remote = 0
    for i in range(frontier.shape[0]):
        u = frontier[i]
        u_global = offset + u
        du = frontier_dist[i]
        for e in range(indptr[u], indptr[u + 1]):
            target = np.int64(indices[e])
            cand = du + weights[e]
            if cand > bound:
                continue  # beyond the cutoff: never accepted, so every kept parent is kept too
            v = target - offset
            if 0 <= v < n_local:
                if cand < dist[v]:
                    dist[v] = cand
                    if keep_parents:
                        parent[v] = u_global
                    if not is_improved[v]:
                        is_improved[v] = True
                        improved[n_improved] = v
                        n_improved += 1
            elif remote:
                remote_targets[n_remote] = target
                remote_dists[n_remote] = cand
                remote_parents[n_remote] = u_global
                n_remote += 1
    return n_improved, n_remote


# ---------------------------------------------------------------------------------------------
# Direction-optimizing BFS [2]: top-down steps over a queue, bottom-up steps over a bitmap
# ---------------------------------------------------------------------------------------------


@kernel((INT64S, INT64S, INT32S))
def _claim_sources(indptr, sources, dist):
    """Put the unvisited sources at distance 0; return them (unique) and their total out-degree."""
    frontier = np.empty(sources.shape[0], dtype=np.int64)
    k = 0
    scout = 0
    for i in range(sources.shape[0]):
        s = sources[i]
        if dist[s] == -1:
            dist[s] = 0
            frontier[k] = s
            k += 1
            scout += indptr[s + 1] - indptr[s]
    return frontier[:k], scout


@kernel(*each_index(lambda indices: (INT64S, indices, INT64S, INT64, INT32S, INT64S, INT64)),
        parallel=True)
def top_down_parallel(indptr, indices, frontier, level, dist, parent, n_chunks):
    """One top-down step split over `n_chunks` edge-balanced slices of the frontier.

    Returns the next frontier (unique, sorted) and its total out-degree (the "scout count"
    [2]). A vertex is claimed by a compare-and-swap of its distance from -1 to level + 1, so
    exactly one thread wins it; the winner writes its parent and sets its bit in the next
    frontier's bitmap, from which the frontier is read off. No memory proportional to the
    edges scanned.
    """
    k = frontier.shape[0]
    edge_start = np.empty(k + 1, dtype=np.int64)  # prefix sum of the frontier's out-degrees
    edge_start[0] = 0
    for i in range(k):
        u = frontier[i]
        edge_start[i + 1] = edge_start[i] + indptr[u + 1] - indptr[u]
    total = edge_start[k]
    first = np.empty(n_chunks + 1, dtype=np.int64)  # chunk c scans frontier[first[c]:first[c + 1]]
    i = 0
    for c in range(n_chunks):
        goal = total * c // n_chunks
        while i < k and edge_start[i] < goal:
            i += 1
        first[c] = i
    first[n_chunks] = k
    bits = np.zeros((dist.shape[0] + 63) // 64, dtype=np.int64)
    keep_parents = parent.shape[0] > 0  # an empty parent array: distances only
    claimed = np.int64(0)
    for c in numba.prange(n_chunks):
        for i in range(first[c], first[c + 1]):
            u = frontier[i]
            for e in range(indptr[u], indptr[u + 1]):
                v = indices[e]
                if dist[v] == -1 and atomics.compare_and_swap(dist, v, -1, level + 1):
                    if keep_parents:
                        parent[v] = u
                    atomics.fetch_or(bits, v >> 6, np.int64(1) << (v & 63))
                    claimed += 1
    next_frontier = _bitmap_to_queue(bits, claimed)
    scout = 0
    for j in numba.prange(next_frontier.shape[0]):
        v = next_frontier[j]
        scout += indptr[v + 1] - indptr[v]
    return next_frontier, scout


@kernel(*each_index(lambda indices: (INT64S, indices, INT64S, INT64, INT32S, INT64S, INT64)))
def _top_down_serial(indptr, indices, frontier, level, dist, parent, total):
    """One top-down step in one thread (`total`: the frontier's out-degree); as top_down_parallel."""
    next_frontier = np.empty(min(total, dist.shape[0]), dtype=np.int64)
    no_remote = np.empty(0, dtype=np.int64)
    n_next, _ = _top_down_step(indptr, indices, np.int64(0), frontier, dist, parent, level, False,
                               next_frontier, no_remote, no_remote)
    next_frontier = next_frontier[:n_next]
    return next_frontier, _frontier_degree(indptr, next_frontier)


@kernel(*each_index(lambda indices: (INT64S, indices, INT64, INT32S, INT64S, INT64S, INT64S)),
        parallel=True)
def _bottom_up_step(in_indptr, in_indices, level, dist, parent, front, next_front):
    """One bottom-up step: every unvisited vertex looks for an in-neighbour in `front`.

    `front`/`next_front` are bitmaps, 64 vertices per int64 word. Each thread owns whole words
    (vertices 64 w .. 64 w + 63), so it alone writes their dist, parent and next_front bits.
    Returns how many vertices woke up (the next frontier's size).
    """
    n = dist.shape[0]
    keep_parents = parent.shape[0] > 0  # an empty parent array: distances only
    awake = np.int64(0)
    for w in numba.prange(front.shape[0]):
        word = np.int64(0)
        lo = w * 64
        for v in range(lo, min(lo + 64, n)):
            if dist[v] == -1:
                for e in range(in_indptr[v], in_indptr[v + 1]):
                    u = in_indices[e]
                    if (front[u >> 6] >> (u & 63)) & 1:
                        dist[v] = level + 1
                        if keep_parents:
                            parent[v] = u
                        word |= np.int64(1) << (v - lo)
                        awake += 1
                        break
        next_front[w] = word
    return awake


@kernel((INT64S, INT64))
def _bitmap_to_queue(bitmap, size):
    frontier = np.empty(size, dtype=np.int64)
    bitmap_to_ids(bitmap, frontier)
    return frontier


def _bfs_direction_optimizing(indptr, indices, in_indptr, in_indices, sources, depth_limit,
                              bottom_up, alpha, beta, n_chunks, dist, parent, target=-1):
    """Run BFS from `sources`, filling dist/parent; stop after depth_limit levels if >= 0, and
    after the level that reaches `target` if >= 0. Returns the levels expanded.

    The heuristic of [2] as GAPBS implements it: go bottom-up when the frontier's out-edges
    (`scout`) exceed 1/alpha of the edges not yet checked; come back top-down once the frontier
    shrinks and holds fewer than n/beta vertices.

    The level loop runs here, each step one compiled call: a few microseconds per level, and
    a first query compiles only the steps it takes (the parallel top-down step, the costliest
    to compile, only for a frontier of SERIAL_EDGES edges or more). The target is checked once
    per level, by reading its distance.
    """
    n = dist.shape[0]
    frontier, scout = _claim_sources(indptr, sources, dist)
    edges_to_check = in_indices.shape[0]
    front = np.zeros((n + 63) // 64, dtype=np.int64)
    next_front = np.zeros((n + 63) // 64, dtype=np.int64)
    level = 0
    while (frontier.shape[0] > 0 and (depth_limit < 0 or level < depth_limit)
           and (target < 0 or dist[target] < 0)):
        if bottom_up and scout * alpha > edges_to_check:
            ids_to_bitmap(frontier, front)
            awake = frontier.shape[0]
            while True:
                previous = awake
                awake = _bottom_up_step(in_indptr, in_indices, level, dist, parent, front, next_front)
                front, next_front = next_front, front
                level += 1
                if awake == 0 or (depth_limit >= 0 and level >= depth_limit):
                    break
                if target >= 0 and dist[target] >= 0:
                    break
                if awake < previous and awake * beta <= n:
                    break
            frontier = _bitmap_to_queue(front, awake)
            scout = 1
        else:
            edges_to_check -= scout
            total = _frontier_degree(indptr, frontier)
            if n_chunks > 1 and total >= SERIAL_EDGES:
                frontier, scout = top_down_parallel(indptr, indices, frontier, level, dist, parent,
                                                     n_chunks)
            else:
                frontier, scout = _top_down_serial(indptr, indices, frontier, level, dist, parent, total)
            level += 1
    return level


# ---------------------------------------------------------------------------------------------
# Dijkstra (the obviously-correct twin of delta-stepping)
# ---------------------------------------------------------------------------------------------


@_kernel
def _heap_push(keys, ids, size, key, vertex):
    """Push (key, vertex) onto the binary min-heap in keys/ids[:size]; return the new size.

    The caller guarantees capacity (keys.shape[0] > size).
    """
    child = size
    while child > 0:
        up = (child - 1) // 2
        if keys[up] <= key:
            break
        keys[child] = keys[up]
        ids[child] = ids[up]
        child = up
    keys[child] = key
    ids[child] = vertex
    return size + 1


@_kernel
def _heap_pop(keys, ids, size):
    """Remove the minimum of the heap in keys/ids[:size]; return (key, vertex, new size)."""
    top_key = keys[0]
    top_id = ids[0]
    size -= 1
    last_key = keys[size]
    last_id = ids[size]
    hole = 0
    while True:
        child = 2 * hole + 1
        if child >= size:
            break
        if child + 1 < size and keys[child + 1] < keys[child]:
            child += 1
        if last_key <= keys[child]:
            break
        keys[hole] = keys[child]
        ids[hole] = ids[child]
        hole = child
    keys[hole] = last_key
    ids[hole] = last_id
    return top_key, top_id, size


@_kernel  # the slow twin of delta_stepping, for tests: no query calls it, warmup skips it
def _dijkstra_heap(indptr, indices, weights, sources, dist, parent):
    """Settle every vertex reachable from `sources` in order of distance, filling dist/parent."""
    # Each strict improvement pushes once, so len(sources) + nnz bounds the heap; start at
    # len(sources) + n and double when full rather than reserving a slot per edge up front.
    capacity = sources.shape[0] + dist.shape[0] + 1
    keys = np.empty(capacity, dtype=np.float64)
    ids = np.empty(capacity, dtype=np.int64)
    size = 0
    for i in range(sources.shape[0]):
        s = sources[i]
        if dist[s] != 0.0:
            dist[s] = 0.0
            size = _heap_push(keys, ids, size, 0.0, s)
    while size > 0:
        du, u, size = _heap_pop(keys, ids, size)
        if du > dist[u]:
            continue
        for e in range(indptr[u], indptr[u + 1]):
            v = np.int64(indices[e])
            cand = du + weights[e]
            if cand < dist[v]:
                dist[v] = cand
                parent[v] = u
                if size == keys.shape[0]:
                    keys = np.concatenate((keys, np.empty_like(keys)))
                    ids = np.concatenate((ids, np.empty_like(ids)))
                size = _heap_push(keys, ids, size, cand, v)


# ---------------------------------------------------------------------------------------------
# Contract: the functions the driver calls
# ---------------------------------------------------------------------------------------------


def bfs_expand(indptr, indices, offset, frontier, dist, parent, level, remote):
    """Expand one BFS level of one owner; mutate `dist` and `parent` in place.

    Parameters
    ----------
    indptr : int64[n_local + 1]
        CSR row pointers of the owner's vertices.
    indices : int32 or int64[nnz]
        Global target ids of the out-edges.
    offset : int
        Global id of the owner's local vertex 0.
    frontier : int64[k]
        Unique local ids, all at distance `level`.
    dist : int32[n_local]
        BFS distances, -1 = unvisited.
    parent : int64[n_local]
        Global parent ids, -1 = none.
    level : int
        Distance of the frontier.
    remote : bool
        Whether to report edges whose target is owned elsewhere.

    Returns
    -------
    next_frontier : int64[k']
        Local ids claimed in this call, each once; they now have dist = level + 1 and parent =
        the global id of the frontier vertex that claimed them.
    remote_targets, remote_parents : int64[r]
        One row per edge u->v with v outside offset..offset+n_local-1: v and offset + u, raw
        (not deduplicated). Empty when `remote` is False.
    """
    total = _frontier_degree(indptr, frontier)
    n_remote_max = total if remote else 0
    next_frontier = np.empty(min(total, dist.shape[0]), dtype=np.int64)
    remote_targets = np.empty(n_remote_max, dtype=np.int64)
    remote_parents = np.empty(n_remote_max, dtype=np.int64)
    if total == 0:
        return next_frontier, remote_targets, remote_parents
    n_next, n_remote = _top_down_step(indptr, indices, int(offset), frontier, dist, parent,
                                      int(level), bool(remote),
                                      next_frontier, remote_targets, remote_parents)
    return next_frontier[:n_next], remote_targets[:n_remote], remote_parents[:n_remote]


def sssp_relax(indptr, indices, weights, offset, frontier, frontier_dist, dist, parent, remote,
               bound=np.inf):
    """Relax the out-edges of one owner's frontier once; mutate `dist` and `parent` in place.

    Parameters
    ----------
    indptr, indices, offset, frontier, remote
        As in `bfs_expand`.
    weights : float64[nnz] or float32[nnz]
        Edge weights, aligned with `indices`; may be negative or zero. Sums are float64: a
        float32 weight is widened before it is added.
    frontier_dist : float64[k]
        Distance of each frontier vertex when the round began; edges relax from these values.
    dist : float64[n_local]
        Distances, +inf = unreached.
    parent : int64[n_local]
        Global parent ids, -1 = none.
    bound : float
        The cutoff (``max_distance``; +inf: none). A candidate above it is dropped, local or
        remote, as Dijkstra's cutoff drops it: the search never extends a path beyond the
        cutoff, so with negative weights too a kept vertex's parent is kept.

    Returns
    -------
    improved : int64[k']
        Local ids whose distance strictly decreased in this call, each once. For each,
        parent = offset + u for a frontier edge u->v with frontier_dist + w == dist[v] exactly;
        no other parent changes.
    remote_targets, remote_dists, remote_parents : int64[r], float64[r], int64[r]
        One row per edge u->v with v owned elsewhere and a candidate not above `bound`:
        v, frontier_dist + w, offset + u; raw. Empty when `remote` is False.
    """
    total = _frontier_degree(indptr, frontier)
    n_remote_max = total if remote else 0
    improved = np.empty(min(total, dist.shape[0]), dtype=np.int64)
    remote_targets = np.empty(n_remote_max, dtype=np.int64)
    remote_dists = np.empty(n_remote_max, dtype=np.float64)
    remote_parents = np.empty(n_remote_max, dtype=np.int64)
    if total == 0:
        return improved, remote_targets, remote_dists, remote_parents
    # np.zeros is calloc: pages a round never touches cost nothing, so a fresh flag array per
    # call is cheap even when the frontier is small.
    is_improved = np.zeros(dist.shape[0], dtype=np.bool_)
    n_improved, n_remote = _relax_step(indptr, indices, weights, int(offset), frontier,
                                       frontier_dist, dist, parent, bool(remote), float(bound),
                                       is_improved,
                                       improved, remote_targets, remote_dists, remote_parents)
    return (improved[:n_improved], remote_targets[:n_remote], remote_dists[:n_remote],
            remote_parents[:n_remote])


def bfs(indptr, indices, sources, depth_limit, in_indptr=None, in_indices=None, alpha=ALPHA,
        beta=BETA, *, symmetric=False, target=-1, parents=True, stats=None):
    """Breadth-first search over a one-owner CSR (offset 0), one compiled call per level.

    Top-down steps expand a queue, in parallel once the frontier has many edges. Given the
    in-edges (`in_indptr`, `in_indices`), the search is direction-optimizing [2]: when the
    frontier's out-edges exceed 1/alpha of the edges not yet checked, it switches to bottom-up
    steps, in which every unvisited vertex looks for a parent among its in-neighbours (and stops
    at the first), and back once the frontier holds fewer than n/beta vertices.

    Parameters
    ----------
    indptr : int64[n + 1]
    indices : int32 or int64[nnz]
    sources : int64[s]
        Start vertices, all at distance 0 with parent -1; repeats are harmless.
    depth_limit : int
        Reach only vertices at most this many edges from a source; -1 means no limit.
    in_indptr, in_indices : optional
        CSR of the in-edges (the transpose), of the same dtypes as `indptr`/`indices`. For an
        undirected graph, whose CSR is symmetric, pass `indptr` and `indices` themselves.
        Without them the search is top-down only.
    alpha, beta : float, optional (defaults 15 and 18, as in GAPBS)
        The direction switch thresholds above.
    symmetric : bool, optional
        The graph is undirected and stored both ways (CSR == CSC): the same as passing
        `indptr` and `indices` as the in-edges.
    target : int, optional
        Stop after the level that reaches this vertex (-1, the default: search everything).
        Its distance and its path of parents are then final; vertices farther than it may be
        left unreached, and vertices at its distance may or may not be reached.
    parents : bool, optional
        False: no parent array is allocated or written; the second result is None.
    stats : dict, optional
        When given, ``stats["levels"]`` receives the number of levels expanded.

    Returns
    -------
    dist : int32[n]
        Edges on a shortest path from the nearest source, -1 = not reached.
    parent : int64[n] or None
        A BFS tree: for each reached non-source v, some u with an edge u->v and dist[u] + 1 ==
        dist[v]; -1 for sources and unreached vertices. Which u is not fixed: parallel steps
        may pick a different one from run to run. None when `parents` is False.

    Examples
    --------
    The path 0 -> 1 -> 2 -> 3, searched from 0 to depth 2:

    >>> indptr = np.array([0, 1, 2, 3, 3])
    >>> indices = np.array([1, 2, 3], dtype=np.int32)
    >>> bfs(indptr, indices, np.array([0]), 2)
    (array([ 0,  1,  2, -1], dtype=int32), array([-1,  0,  1, -1]))

    Stopping at vertex 1, without parents:

    >>> stats = {}
    >>> bfs(indptr, indices, np.array([0]), -1, target=1, parents=False, stats=stats), stats
    ((array([ 0,  1, -1, -1], dtype=int32), None), {'levels': 1})

    Notes
    -----
    Time O(n + m) top-down; bottom-up steps usually check a small fraction of the edges on
    low-diameter graphs. Extra memory: two bitmaps of n bits and the frontiers.
    """
    n = indptr.shape[0] - 1
    dist = np.full(n, -1, dtype=np.int32)
    parent = np.full(n if parents else 0, -1, dtype=np.int64)  # empty: the steps write none
    if symmetric and in_indptr is None:
        in_indptr, in_indices = indptr, indices
    bottom_up = in_indptr is not None and in_indices is not None
    if not bottom_up:
        in_indptr, in_indices = indptr, indices
    n_chunks = CHUNKS_PER_THREAD * numba.get_num_threads()
    levels = _bfs_direction_optimizing(indptr, indices, in_indptr, in_indices,
                                       np.ascontiguousarray(sources, dtype=np.int64), int(depth_limit),
                                       bottom_up, float(alpha), float(beta), n_chunks, dist, parent,
                                       int(target))
    if stats is not None:
        stats["levels"] = int(levels)
    return dist, (parent if parents else None)


def dijkstra(indptr, indices, weights, sources):
    """Single- or multi-source shortest paths over a one-owner CSR with non-negative weights.

    Parameters
    ----------
    indptr : int64[n + 1]
    indices : int32 or int64[nnz]
    weights : float64[nnz] or float32[nnz]
        Non-negative; of parallel edges the lightest wins (sums in float64).
    sources : int64[s]
        Start vertices, all at distance 0 with parent -1.

    Returns
    -------
    dist : float64[n]
        Shortest distance from the nearest source, +inf = not reached.
    parent : int64[n]
        Predecessor on a shortest path, -1 for sources and unreached vertices. It changes only
        on strict improvement, so among equally short paths the first one found is kept.

    Examples
    --------
    0 -> 1 costs 5 directly and 3 through 2:

    >>> indptr = np.array([0, 2, 2, 3])
    >>> indices = np.array([1, 2, 1], dtype=np.int32)
    >>> dijkstra(indptr, indices, np.array([5.0, 1.0, 2.0]), np.array([0]))
    (array([0., 3., 1.]), array([-1,  2,  0]))
    """
    n = indptr.shape[0] - 1
    dist = np.full(n, np.inf, dtype=np.float64)
    parent = np.full(n, -1, dtype=np.int64)
    _dijkstra_heap(indptr, indices, weights, np.ascontiguousarray(sources, dtype=np.int64), dist, parent)
    return dist, parent
