"""Delta-stepping SSSP for the CPU (Numba): the one-owner SSSP of ``gpipe.engine.compute.cpu``.

Meyer and Sanders' delta-stepping [1] in the layout of GAPBS's ``sssp.cc`` [2]: vertices wait
in buckets of width delta by tentative distance, and the lowest non-empty bucket is relaxed
until it stays empty. All threads relax the current bucket together, taking its vertices in
chunks from a shared counter (hubs do not stall one thread while the others idle), and
append every vertex they improve to buckets of their own, so a bucket is filled without
contention and read back without copying.

Memory layout
    - A bucket is a linked list of fixed-size chunks of vertex ids, one list per (thread,
      bucket slot); the slots form a ring of ``n_slots`` (every pending distance lies within
      the largest weight of the current bucket). Chunks come from one pool: a thread takes
      RESERVE of them at a time with an atomic add and keeps its own free list, to which it
      also returns the chunks it has relaxed. When the pool runs out, the thread stops at a
      vertex boundary, the pool is grown between parallel regions, and the phase resumes.
    - A vertex is appended to a bucket at every strict improvement and never removed: an
      entry is stale when the vertex has been relaxed at its current distance since
      (``relaxed[v] == dist[v]``) and is skipped, so each vertex is relaxed once per distance
      it holds when its bucket comes up, not once per entry.
    - ``dist[v]`` and ``parent[v]`` change together under a per-vertex spin lock (a byte, taken
      by compare-and-swap) and only on strict improvement, so parents always name an edge
      that gave the distance and never form a cycle. Reading ``dist[v]`` without the lock to
      filter candidates is a benign race: a stale value is only larger.

References
    [1] U. Meyer, P. Sanders, "Delta-stepping: a parallelizable shortest path algorithm",
        J. Algorithms 49, 2003.
    [2] S. Beamer, K. Asanovic, D. Patterson, "The GAP Benchmark Suite", arXiv:1508.03619
        (sbeamer/gapbs, src/sssp.cc: thread-local bins, bin fusion).
"""

import numba
import numpy as np
from numba import types

from gpipe.engine.compute import atomics
from gpipe.engine.compute.cpu_jit import (BOOLS, FLOAT64, FLOAT64S, INT64, INT64S, INT64S_2D, UINT8S,
                                          each_index_and_weight, kernel)

_kernel = numba.njit(cache=True, nogil=True)
_inline = numba.njit(cache=True, nogil=True, inline="always")
_parallel = numba.njit(cache=True, nogil=True, parallel=True)

# Bucket width DELTA_SCALE * max weight / average degree (see default_delta), and at most
# MAX_SLOTS buckets in the ring.
DELTA_SCALE = 0.25
MAX_SLOTS = 1 << 14
# Vertex ids per chunk, and chunks a thread takes from the pool at a time.
CHUNK = 128
RESERVE = 64
# A thread goes on relaxing its own new entries of the current bucket, without waiting for
# the next phase, while they are fewer than this (GAPBS's bin fusion).
FUSION = 1000
# Buckets of fewer vertices are relaxed by one thread: a parallel region costs microseconds
# on an idle machine but up to a scheduler time slice when the cores are oversubscribed.
PARALLEL_VERTICES = 1024

# The pool and the bucket lists travel between the driver, _grow and _work as one tuple,
# `chunks`; the per-vertex functions take its arrays one by one, because a tuple unpacked
# there costs an atomic reference-count update per array per call (a third of the time).
#   pool[c, :fill[c]]  vertex ids of chunk c;  next_chunk[c]  the next chunk in its list
#   head/tail/count[t, slot]  thread t's list for a bucket slot (-1 = empty), entries in it
#   free_head/free_count[t]  thread t's free chunks;  top[0]  first pool chunk never handed out
#   retry[t]  the chunk thread t was relaxing when it stopped (-1: none)
#   stop_at[t]  where thread t's failed pool reservation began (-1: it did not stop)


@_inline
def _take_chunks(t, need, top, stop_at, next_chunk, free_head, free_count):
    """Make sure thread t has `need` free chunks; False (and stop_at[t] set) if the pool is out."""
    if free_count[t] >= need:
        return True
    k = max(need - free_count[t], RESERVE)
    first = atomics.fetch_add(top, 0, k)
    if first + k > next_chunk.shape[0]:
        stop_at[t] = first
        return False
    for c in range(first, first + k):
        next_chunk[c] = free_head[t]
        free_head[t] = c
    free_count[t] += k
    return True


@_inline
def _append(t, slot, v, pool, fill, next_chunk, head, tail, count, free_head, free_count):
    """Add vertex v to thread t's bucket `slot` (a free chunk must be at hand)."""
    c = tail[t, slot]
    if c < 0 or fill[c] == pool.shape[1]:
        d = free_head[t]
        free_head[t] = next_chunk[d]
        free_count[t] -= 1
        next_chunk[d] = -1
        fill[d] = 0
        if c < 0:
            head[t, slot] = d
        else:
            next_chunk[c] = d
        tail[t, slot] = d
        c = d
    pool[c, fill[c]] = v
    fill[c] += 1
    count[t, slot] += 1


@_kernel
def _relax_chunk(t, c, indptr, indices, weights, delta, limit, dist, parent, relaxed, locks, pool,
                 fill, next_chunk, head, tail, count, free_head, free_count, top, stop_at):
    """Relax the vertices of chunk c that were not relaxed at their current distance, then
    free c; False if thread t could not get the chunks their improvements may need. Candidates
    above `limit` are dropped (their vertices stay unreached unless a shorter path comes)."""
    n_slots = head.shape[1]
    keep_parents = parent.shape[0] > 0  # an empty parent array: distances only
    width = pool.shape[1]
    for k in range(fill[c]):
        u = pool[c, k]
        du = dist[u]
        if relaxed[u] == du:
            continue
        lo = indptr[u]
        hi = indptr[u + 1]
        # Each improvement may open a chunk: at most one per slot touched plus one per CHUNK.
        if not _take_chunks(t, min(hi - lo, n_slots) + (hi - lo) // width + 1, top, stop_at,
                            next_chunk, free_head, free_count):
            return False
        relaxed[u] = du
        for e in range(lo, hi):
            v = indices[e]
            cand = du + weights[e]
            if cand < dist[v] and cand <= limit:
                while not atomics.try_lock(locks, v):
                    pass
                improved = cand < dist[v]
                if improved:
                    dist[v] = cand
                    if keep_parents:
                        parent[v] = u
                atomics.unlock(locks, v)
                if improved:
                    _append(t, np.int64(cand / delta) % n_slots, v, pool, fill, next_chunk, head,
                            tail, count, free_head, free_count)
    next_chunk[c] = free_head[t]
    free_head[t] = c
    free_count[t] += 1
    return True


@_kernel
def _work(t, bucket, frontier, n_frontier, claim, indptr, indices, weights, delta, limit, dist,
          parent, relaxed, locks, chunks):
    """Thread t's share of one phase; False if it stopped because the pool ran out.

    It relaxes the chunks of `frontier[:n_frontier]` it claims from the shared counter
    `claim[0]`, then its own new entries of `bucket` while they are fewer than FUSION. A chunk
    it stops in is kept in retry[t] and relaxed again from its start when the phase resumes
    (the vertices done already are skipped as relaxed).
    """
    pool, fill, next_chunk, head, tail, count, free_head, free_count, top, retry, stop_at = chunks
    slot = bucket % head.shape[1]
    while True:
        c = retry[t]
        if c < 0:
            i = atomics.fetch_add(claim, 0, 1)
            if i >= n_frontier:
                break
            c = frontier[i]
            retry[t] = c
        if not _relax_chunk(t, c, indptr, indices, weights, delta, limit, dist, parent, relaxed, locks,
                            pool, fill, next_chunk, head, tail, count, free_head, free_count, top,
                            stop_at):
            return False
        retry[t] = -1
    while 0 < count[t, slot] < FUSION:
        c = head[t, slot]
        last = tail[t, slot]
        head[t, slot] = -1
        tail[t, slot] = -1
        count[t, slot] = 0
        while c >= 0:
            after = next_chunk[c]
            if not _relax_chunk(t, c, indptr, indices, weights, delta, limit, dist, parent,
                                relaxed, locks, pool, fill, next_chunk, head, tail, count,
                                free_head, free_count, top, stop_at):
                # Put c and the chunks after it back in front of the bucket.
                rest = 0
                d = c
                while True:
                    rest += fill[d]
                    if d == last:
                        break
                    d = next_chunk[d]
                next_chunk[last] = head[t, slot]
                if tail[t, slot] < 0:
                    tail[t, slot] = last
                head[t, slot] = c
                count[t, slot] += rest
                return False
            c = after
    return True


@_parallel
def _phase_parallel(bucket, frontier, n_frontier, claim, indptr, indices, weights, delta, limit,
                    dist, parent, relaxed, locks, chunks, done):
    for t in numba.prange(done.shape[0]):
        done[t] = _work(np.int64(t), bucket, frontier, n_frontier, claim, indptr, indices, weights,
                        delta, limit, dist, parent, relaxed, locks, chunks)


@_kernel
def _all(flags):
    """``flags.all()``, without compiling NumPy's reduction for one use."""
    for i in range(flags.shape[0]):
        if not flags[i]:
            return False
    return True


@_kernel
def _grow(chunks, capacity):
    """`chunks` with a pool of `capacity` chunks (contents kept), reservations that failed undone."""
    pool, fill, next_chunk, head, tail, count, free_head, free_count, top, retry, stop_at = chunks
    # Element loops, not slice assignments: Numba takes seconds to compile those.
    bigger = np.empty((capacity, pool.shape[1]), dtype=pool.dtype)
    bigger_fill = np.zeros(capacity, dtype=np.int64)
    bigger_next = np.full(capacity, -1, dtype=np.int64)
    for c in range(pool.shape[0]):
        for k in range(fill[c]):
            bigger[c, k] = pool[c, k]
        bigger_fill[c] = fill[c]
        bigger_next[c] = next_chunk[c]
    # Reservations that failed began at or after every one that succeeded.
    first_failed = top[0]
    for t in range(stop_at.shape[0]):
        if stop_at[t] >= 0:
            first_failed = min(first_failed, stop_at[t])
            stop_at[t] = -1
    top[0] = min(first_failed, pool.shape[0])
    return (bigger, bigger_fill, bigger_next, head, tail, count, free_head, free_count, top, retry,
            stop_at)


@kernel(*each_index_and_weight(lambda indices, weights: (
    INT64S, indices, weights, INT64S, FLOAT64,
    types.Tuple((indices.copy(ndim=2), INT64S, INT64S, INT64S_2D, INT64S_2D, INT64S_2D, INT64S, INT64S,
                 INT64S, INT64S, INT64S)),
    FLOAT64S, UINT8S, INT64S, BOOLS, INT64, FLOAT64S, INT64S, INT64, FLOAT64)))
def _delta_stepping(indptr, indices, weights, sources, delta, chunks, relaxed, locks, claim, done,
                    parallel_vertices, dist, parent, target, limit):
    """Settle every vertex reachable from `sources`, bucket by bucket, filling dist/parent;
    return the number of buckets relaxed.

    Stops early once `target` (>= 0) is settled: every bucket below the next one to relax is
    empty, and the target's distance lies below it. Candidates above `limit` are dropped, so
    the buckets end where the distances pass it. An empty `parent` records no parents.

    `done.shape[0]` workers share each phase (any count is correct; one per thread is fast).
    The pool `chunks` (made by _new_chunks, with `relaxed`, `locks`, `claim` and `done`:
    allocated by the caller, so that none of NumPy's allocators is compiled in here) doubles
    whenever a phase runs out. A bucket of fewer than `parallel_vertices` vertices is relaxed
    without starting a parallel region.
    """
    n_threads = done.shape[0]
    n_slots = chunks[3].shape[1]
    for i in range(sources.shape[0]):
        s = sources[i]
        if dist[s] != 0.0:
            dist[s] = 0.0
            if parent.shape[0] > 0:
                parent[s] = -1
            while not _take_chunks(0, 1, chunks[8], chunks[10], chunks[2], chunks[6], chunks[7]):
                chunks = _grow(chunks, 2 * chunks[0].shape[0])
            _append(0, 0, s, chunks[0], chunks[1], chunks[2], chunks[3], chunks[4], chunks[5],
                    chunks[6], chunks[7])
    frontier = np.empty(chunks[0].shape[0], dtype=np.int64)
    bucket = 0
    relaxed_buckets = 0
    while True:
        head, count = chunks[3], chunks[5]
        nearest = -1
        for t in range(n_threads):
            for k in range(n_slots):
                if count[t, (bucket + k) % n_slots] > 0:
                    if nearest < 0 or bucket + k < nearest:
                        nearest = bucket + k
                    break
        if nearest < 0:
            break
        # Every vertex below bucket `nearest` is settled; the same division as the appends.
        if target >= 0 and dist[target] < np.inf and np.int64(dist[target] / delta) < nearest:
            break
        bucket = nearest
        relaxed_buckets += 1
        slot = bucket % n_slots
        # The bucket's chunks, from every thread, become this phase's frontier.
        if frontier.shape[0] < chunks[0].shape[0]:
            frontier = np.empty(chunks[0].shape[0], dtype=np.int64)
        n_frontier = 0
        waiting = 0
        for t in range(n_threads):
            c = head[t, slot]
            while c >= 0:
                frontier[n_frontier] = c
                n_frontier += 1
                c = chunks[2][c]
            waiting += count[t, slot]
            head[t, slot] = -1
            chunks[4][t, slot] = -1
            count[t, slot] = 0
        claim[0] = 0
        parallel = n_threads > 1 and waiting >= parallel_vertices
        while True:
            if parallel:
                # Plain int64 arguments: literal or unsigned ones would each compile another
                # copy of the phase (Numba specializes on them; 27 s instead of a few).
                _phase_parallel(np.int64(bucket), frontier, np.int64(n_frontier), claim, indptr,
                                indices, weights, delta, limit, dist, parent, relaxed, locks, chunks,
                                done)
            else:
                done[:] = True
                done[0] = _work(np.int64(0), np.int64(bucket), frontier, np.int64(n_frontier),
                                claim, indptr, indices, weights, delta, limit, dist, parent, relaxed,
                                locks, chunks)
            if _all(done):
                break
            chunks = _grow(chunks, 2 * chunks[0].shape[0])
            head, count = chunks[3], chunks[5]
    return relaxed_buckets


def _new_chunks(capacity, n_threads, n_slots, index_dtype) -> tuple:
    """A pool of `capacity` chunks and empty bucket lists (the layout above `_take_chunks`)."""
    capacity = max(capacity, 1)
    return (np.empty((capacity, CHUNK), dtype=index_dtype),
            np.zeros(capacity, dtype=np.int64), np.full(capacity, -1, dtype=np.int64),
            np.full((n_threads, n_slots), -1, dtype=np.int64),
            np.full((n_threads, n_slots), -1, dtype=np.int64),
            np.zeros((n_threads, n_slots), dtype=np.int64),
            np.full(n_threads, -1, dtype=np.int64), np.zeros(n_threads, dtype=np.int64),
            np.zeros(1, dtype=np.int64), np.full(n_threads, -1, dtype=np.int64),
            np.full(n_threads, -1, dtype=np.int64))


def run_buckets(indptr, indices, weights, sources, delta, n_slots, n_threads, capacity, parallel_vertices,
         dist, parent, target=-1, limit=np.inf):
    """_delta_stepping with `n_threads` workers, a ring of `n_slots` buckets and a pool of
    `capacity` chunks to start with, its working arrays allocated here; the buckets relaxed."""
    chunks = _new_chunks(capacity, n_threads, n_slots, indices.dtype)
    relaxed = np.full(dist.shape[0], -1.0)  # distances are >= 0: no vertex counts as relaxed yet
    return _delta_stepping(indptr, indices, weights, np.ascontiguousarray(sources, dtype=np.int64),
                           float(delta), chunks, relaxed, np.zeros(dist.shape[0], dtype=np.uint8),
                           np.zeros(1, dtype=np.int64), np.zeros(n_threads, dtype=np.bool_),
                           int(parallel_vertices), dist, parent, int(target), float(limit))


def default_delta(indptr, weights):
    """Bucket width for `delta_stepping`: about one light edge per vertex per bucket.

    Meyer and Sanders [1] take delta = Theta(1/d) for weights in [0, 1] and degree d; here
    delta = DELTA_SCALE * max(weights) / average degree, and at least max(weights) / MAX_SLOTS
    so the bucket ring stays small. 1 when all weights are 0 (any positive width works then).
    """
    n = indptr.shape[0] - 1
    if weights.shape[0] == 0 or n == 0:
        return 1.0
    return delta_for(float(weights.max()), weights.shape[0] / n)


def delta_for(max_weight, mean_degree):
    """`default_delta` from the statistics alone: the largest weight and the mean out-degree."""
    if not max_weight > 0.0:
        return 1.0
    return max(DELTA_SCALE * max_weight / max(mean_degree, 1.0), max_weight / MAX_SLOTS)


def initial_chunks(n_vertices, n_threads, n_slots):
    """Pool size to start with: room for two entries per vertex, and a reserve per thread."""
    return 2 * n_vertices // CHUNK + n_threads * (n_slots + 2 * RESERVE)


def delta_stepping(indptr, indices, weights, sources, delta=None, *, target=-1,
                   max_distance=None, parents=True, stats=None):
    """Single- or multi-source shortest paths with non-negative weights, by delta-stepping [1].

    Vertices wait in buckets of width `delta` by tentative distance; the lowest non-empty
    bucket is relaxed repeatedly until it stays empty, then the next one. All threads relax a
    bucket together (see the module docstring for how they share it).

    Parameters
    ----------
    indptr : int64[n + 1]
    indices : int32 or int64[nnz]
    weights : float64[nnz] or float32[nnz]
        Non-negative and finite; of parallel edges the lightest wins. A float32 weight is
        added to a float64 distance in float64.
    sources : int64[s]
        Start vertices, all at distance 0 with parent -1.
    delta : float, optional
        Bucket width, > 0. Default: `default_delta` (about DELTA_SCALE * max weight / average
        degree). Any width gives the same distances; it trades rounds for repeated relaxations.
    target : int, optional
        Stop once this vertex's distance is final (every bucket below the next one to relax is
        empty and its distance lies below that bucket); -1, the default: settle everything.
        Its distance and parent chain are then exact; other vertices may be left unreached or
        above their distance.
    max_distance : float, optional
        Vertices farther than this stay unreached (+inf, parent -1): candidates above it are
        dropped, so the buckets stop where the distances pass it. None: no limit.
    parents : bool, optional
        False: no parent array is allocated or written; the second result is None.
    stats : dict, optional
        When given, ``stats["buckets"]`` receives the number of buckets relaxed.

    Returns
    -------
    dist : float64[n]
        Shortest distance from the nearest source, +inf = not reached.
    parent : int64[n] or None
        Predecessor on a shortest path (dist[parent] + w == dist[v] exactly), -1 for sources
        and unreached vertices. It changes only on strict improvement, so the parents form a
        forest; among equally short paths, which one is kept may vary between runs. None when
        `parents` is False.

    Examples
    --------
    0 -> 1 costs 5 directly and 3 through 2:

    >>> indptr = np.array([0, 2, 2, 3])
    >>> indices = np.array([1, 2, 1], dtype=np.int32)
    >>> delta_stepping(indptr, indices, np.array([5.0, 1.0, 2.0]), np.array([0]))
    (array([0., 3., 1.]), array([-1,  2,  0]))
    >>> delta_stepping(indptr, indices, np.array([5.0, 1.0, 2.0]), np.array([0]), max_distance=2.0,
    ...                parents=False)
    (array([ 0., inf,  1.]), None)
    """
    n = indptr.shape[0] - 1
    dist = np.full(n, np.inf, dtype=np.float64)
    parent = np.full(n if parents else 0, -1, dtype=np.int64)  # empty: no parent is written
    if delta is None:
        delta = default_delta(indptr, weights)
    delta = float(delta)
    if not delta > 0.0:
        raise ValueError(f"delta must be positive, got {delta}")
    top = float(weights.max()) if weights.shape[0] else 0.0
    delta = max(delta, top / MAX_SLOTS)
    n_slots = int(top / delta) + 2
    n_threads = numba.get_num_threads()
    limit = np.inf if max_distance is None else float(max_distance)
    buckets = run_buckets(indptr, indices, weights, sources, delta, n_slots, n_threads,
                   initial_chunks(n, n_threads, n_slots), PARALLEL_VERTICES, dist, parent,
                   target, limit)
    if stats is not None:
        stats["buckets"] = int(buckets)
    return dist, (parent if parents else None)
