"""First queries on the CPU: SciPy answers while Numba compiles gpipe's kernels in the background.

In a fresh environment (an empty Numba cache: a new virtual environment, a container without
``gpipe warmup``) the first one-owner BFS and SSSP of a process would wait for Numba to compile
their kernels: seconds on a small machine (the ``parallel=True`` BFS steps and delta-stepping's
driver; issue 23 measured 6.4-6.9 s for kron16 on 2 cores). Instead, when a one-owner CPU
query finds a kernel it needs neither compiled in this process nor in Numba's cache, it is
answered here with ``scipy.sparse.csgraph`` on the partition's CSR, and one background thread
compiles that query's kernels into the cache; the queries after it use them once they are
ready (nothing waits for them). A warm cache, or ``gpipe warmup``, makes every query take the
Numba kernels from the start.

The answers keep the contract of :func:`gpipe.engine.traverse.bfs_arrays` and
:func:`gpipe.engine.traverse.sssp_arrays`: BFS ``dist`` int32 (-1 unreached), SSSP ``dist`` float64
(+inf unreached), ``parent`` int64 global ids (-1 for sources and unreached; one owner: global
= local ids), a tree (``dist[parent] + 1`` or ``+ w == dist``), the distance to the nearest of
several sources, ``depth_limit`` and ``max_distance`` (Dijkstra's cutoff: a candidate above it
is never accepted) applied, ``parents=False`` giving None. BFS is SciPy's
``breadth_first_order`` (from a super-source for several sources), SSSP SciPy's ``dijkstra``
(``min_only``, ``limit``); negative weights take :func:`bellman_ford`, frontier rounds in NumPy
that keep the kernels' bounded search and their :class:`gpipe.errors.NegativeCycleError`
(SciPy's ``bellman_ford`` relaxes every edge n times and knows no cutoff). Queries that ask
for kernel statistics, and graphs of more than ``MAX_EDGES`` edges (where SciPy, one thread,
would take longer than compiling), take the Numba kernels.

``GPIPE_FIRST_QUERIES=numba`` in the environment turns this off (every query waits for its
kernels, as before issue 23).

Threads: the background thread only compiles (``Dispatcher.compile``; Numba serializes
compilations under its global compiler lock, and a kernel compiled there is usable by any
thread once its overload is added), it never runs a kernel. It is a daemon; at interpreter
exit it is told to stop and the compilation in flight (at most one kernel) is waited for, so
that LLVM is not torn down under it. The kernels still queued then are handed to a detached
process that compiles them into the cache and outlives this one
(:mod:`gpipe.engine.compute.cpu_cache`): the cache fills once, whatever the first process's
length.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections import deque

import numpy as np

from gpipe.errors import NegativeCycleError

ENVIRONMENT = "GPIPE_FIRST_QUERIES"
# Above this many stored edges a first query waits for the kernels: SciPy's one thread would
# take about as long as compiling (kron16, 2 Mi edges: BFS 0.1 s, Dijkstra 0.1 s in SciPy on
# the 2-core vm, against 2.5 s and 4 s of compiling).
MAX_EDGES = 1 << 24
NEGATIVE_CYCLE = "a negative-weight cycle is reachable from the source"

# The entry points (gpipe.engine.compute.cpu_jit.kernel) each kind of one-owner query calls, by module
# and name; of each, the signature for the partition's index dtype (and weight dtype, for those
# that read weights).
QUERY_KERNELS = {
    "bfs": (("gpipe.engine.compute.cpu", ("_claim_sources", "_frontier_degree", "_top_down_serial",
                                   "top_down_parallel", "_bottom_up_step", "_bitmap_to_queue")),
            ("gpipe.engine.compute.cpu_bfs_owners", ("ids_to_bitmap", "bitmap_to_ids"))),
    "sssp": (("gpipe.engine.compute.cpu_delta", ("_delta_stepping",)),),
    "sssp-negative": (("gpipe.engine.compute.cpu", ("_frontier_degree", "_relax_step")),),
}


def enabled() -> bool:
    """Whether first queries may be answered by SciPy (``GPIPE_FIRST_QUERIES`` is not ``numba``)."""
    return os.environ.get(ENVIRONMENT, "scipy").strip().lower() != "numba"


ANSWERED = {"bfs": 0, "sssp": 0}  # queries answered here, for benchmarks and tests


def answers(kind: str, index_dtype, n_edges: int = 0, weight_dtype=np.float64) -> bool:
    """True when a one-owner CPU query of ``kind`` (a key of QUERY_KERNELS) should be answered
    by SciPy now: some kernel it needs, for these index and weight dtypes, is neither loaded in
    this process nor in Numba's cache.
    Then the kernels are queued for the background compiler (once). False when they are ready
    (the Numba path loads what is cached), when this is turned off, or without SciPy."""
    if not enabled() or n_edges > MAX_EDGES:
        return False
    needed = kernel_signatures(kind, np.dtype(index_dtype), np.dtype(weight_dtype))
    if needed is None:
        return False
    if all(ready(dispatcher, signature) for dispatcher, signature in needed):
        return False
    try:
        import scipy.sparse.csgraph  # noqa: F401
    except ImportError:  # not installed: wait for Numba as before
        return False
    COMPILER.submit(needed)
    return True


def compiling() -> bool:
    """Whether the background compiler has work queued or in flight (for tests and benchmarks)."""
    return COMPILER.busy()


def wait_compiled(timeout: float | None = None) -> bool:
    """Wait until the background compiler is idle; True if it is (for tests and benchmarks)."""
    return COMPILER.wait_idle(timeout)


# --- which kernels are ready ------------------------------------------------------------------

_READY = set()  # (id(dispatcher), signature) known loaded or cached: never asked again
_SIGNATURES = {}  # (kind, dtype) -> [(dispatcher, signature)]


def kernel_signatures(kind, index_dtype, weight_dtype=np.dtype(np.float64)):
    """``[(dispatcher, signature)]`` of ``kind``'s kernels for indices of ``index_dtype`` (and,
    for those that read weights, weights of ``weight_dtype``); None where a kernel is not found
    (the Numba path then decides, as before)."""
    key = (kind, index_dtype.str, weight_dtype.str)
    if key in _SIGNATURES:
        return _SIGNATURES[key]
    import importlib

    from gpipe.engine.compute import cpu_jit

    index_type = {np.dtype(np.int32).str: cpu_jit.INT32S, np.dtype(np.int64).str: cpu_jit.INT64S}
    weight_type = {np.dtype(np.float64).str: cpu_jit.FLOAT64S, np.dtype(np.float32).str: cpu_jit.FLOAT32S}
    if index_dtype.str not in index_type or weight_dtype.str not in weight_type:
        return None
    wanted, weights = index_type[index_dtype.str], weight_type[weight_dtype.str]
    declared = {id(dispatcher): signatures for dispatcher, signatures in cpu_jit.ENTRY_POINTS}
    needed = []
    for module_name, names in QUERY_KERNELS[kind]:
        module = importlib.import_module(module_name)
        for name in names:
            dispatcher = getattr(module, name, None)
            signatures = declared.get(id(dispatcher))
            if not signatures:
                return None
            if len(signatures) > 1:  # one per index dtype (cpu_jit.each_index): the indices are 2nd
                signatures = [s for s in signatures if s[1] == wanted]
            if len(signatures) > 1:  # and per weight dtype (each_index_and_weight): weights 3rd
                signatures = [s for s in signatures if s[2] == weights]
            if len(signatures) != 1:
                return None
            needed.append((dispatcher, signatures[0]))
    _SIGNATURES[key] = needed
    return needed


def ready(dispatcher, signature) -> bool:
    """Whether calling ``dispatcher`` with ``signature`` compiles nothing: it is loaded in this
    process, or its entry is in Numba's cache index (read, not loaded: a few small files).
    Where Numba's cache cannot be read as expected, True (the Numba path, as before).

    Part of this module's contract: :func:`answers` looks it up here at each call, so tests
    replace it to make kernels ready or not, whatever Numba's cache holds."""
    key = (id(dispatcher), signature)
    if key in _READY:
        return True
    if tuple(signature) in dispatcher.overloads:
        _READY.add(key)
        return True
    try:
        cache = dispatcher._cache
        index_key = cache._index_key(signature, dispatcher.targetctx.codegen())
        cached = index_key in cache._cache_file._load_index()
    except Exception:  # another Numba's internals, a NullCache (caching off): as before
        return True
    if cached:
        _READY.add(key)
    return cached


# --- the background compiler -----------------------------------------------------------------


class _Compiler:
    """One daemon thread compiling queued ``(dispatcher, signature)`` pairs, each once."""

    def __init__(self):
        self._lock = threading.Condition()
        self._queue = deque()
        self._seen = set()
        self._thread = None
        self._running = False
        self._stopping = False
        self.errors = []  # (name, signature, exception) of compilations that failed

    def submit(self, pairs) -> None:
        with self._lock:
            if self._stopping:
                return
            for dispatcher, signature in pairs:
                key = (id(dispatcher), signature)
                if key not in self._seen:
                    self._seen.add(key)
                    self._queue.append((dispatcher, signature))
            if self._queue and (self._thread is None or not self._thread.is_alive()):
                self._thread = threading.Thread(target=self._work, name="gpipe-numba-compile",
                                                daemon=True)
                self._thread.start()

    def busy(self) -> bool:
        with self._lock:
            return bool(self._queue) or self._running

    def wait_idle(self, timeout=None) -> bool:
        with self._lock:
            return self._lock.wait_for(lambda: not self._queue and not self._running, timeout)

    def stop(self, timeout=60.0, hand_over=None) -> None:
        """Compile nothing more; wait for the compilation in flight (at exit). What is still
        queued goes to ``hand_over(pairs)`` when given (:func:`_finish_elsewhere`)."""
        with self._lock:
            self._stopping = True
            left = list(self._queue)
            self._queue.clear()
            thread = self._thread
        if left and hand_over is not None:
            hand_over(left)
        if thread is not None and thread.is_alive() and thread is not threading.current_thread():
            thread.join(timeout)

    def _work(self) -> None:
        while True:
            with self._lock:
                if not self._queue or self._stopping:
                    self._running = False
                    self._lock.notify_all()
                    return
                dispatcher, signature = self._queue.popleft()
                self._running = True
            try:
                dispatcher.compile(signature)  # under Numba's global compiler lock
            except Exception as error:  # the query that needs it compiles (and raises) itself
                self.errors.append((dispatcher.py_func.__qualname__, signature, error))
            with self._lock:
                self._running = False
                self._lock.notify_all()


def _finish_elsewhere(pairs) -> None:
    """Compile ``pairs`` (``(dispatcher, signature)``) into Numba's cache in a detached process
    (:func:`gpipe.engine.compute.cpu_cache.finish_detached`), which outlives this one: a process
    shorter than its first queries' compilations leaves the cache whole all the same, so that
    every process after it answers with warm kernels. Never raises (it runs at exit)."""
    try:
        from gpipe.engine.compute import cpu_cache

        cpu_cache.finish_detached(pairs)
    except Exception:  # noqa: BLE001 (at exit: the next process compiles what is missing)
        pass


def _stop_at_exit() -> None:
    COMPILER.stop(hand_over=_finish_elsewhere)


# The background compiler (one per process). Part of this module's contract: its
# ``submit(pairs)`` is what :func:`answers` queues ``(dispatcher, signature)`` pairs with, so
# tests replace it to see what a query queued, or to compile nothing in the background.
COMPILER = _Compiler()
atexit.register(_stop_at_exit)


# --- SciPy's answers ---------------------------------------------------------------------------


def _graph(indptr, indices, weights, n, extra_sources=None):
    """The CSR as a SciPy matrix (explicit zeros are edges to csgraph); with ``extra_sources``, a
    super-source ``n`` with a 0-weight edge to each of them appended."""
    from scipy.sparse import csr_matrix

    indptr = np.asarray(indptr)
    indices = np.asarray(indices)
    if extra_sources is not None:
        k = extra_sources.shape[0]
        indptr = np.concatenate((indptr, [indptr[-1] + k]))
        indices = np.concatenate((indices, extra_sources.astype(indices.dtype)))
        weights = np.concatenate((weights, np.zeros(k)))
        n += 1
    return csr_matrix((weights, indices, indptr), shape=(n, n), copy=False)


def _parents(predecessors, n, super_source=None):
    """SciPy's predecessors (-9999: none) as gpipe's int64 parents (-1: none), the super-source
    cut off."""
    parent = np.asarray(predecessors[:n], dtype=np.int64)
    parent[parent < 0] = -1
    if super_source is not None:
        parent[parent == super_source] = -1
    return parent


def _depths(parent, reached):
    """BFS depths from a BFS tree: pointer jumping (log2 of the depth rounds of NumPy)."""
    n = parent.shape[0]
    depth = (parent >= 0).astype(np.int64)
    up = parent.copy()
    while True:
        climbing = np.flatnonzero(up >= 0)
        if climbing.size == 0:
            break
        above = up[climbing]
        depth[climbing] += depth[above]
        up[climbing] = up[above]
    dist = np.full(n, -1, dtype=np.int32)
    dist[reached] = depth[reached]
    return dist


def bfs(indptr, indices, sources, depth_limit=-1, *, parents=True):
    """A one-owner BFS with ``scipy.sparse.csgraph.breadth_first_order`` (from a super-source
    when there are several sources): ``(dist int32, parent int64 or None)``, as ``cpu.bfs``."""
    from scipy.sparse.csgraph import breadth_first_order

    ANSWERED["bfs"] += 1
    n = indptr.shape[0] - 1
    sources = np.unique(np.asarray(sources, dtype=np.int64))
    if sources.size == 0 or n == 0:
        return np.full(n, -1, dtype=np.int32), (np.full(n, -1, dtype=np.int64) if parents else None)
    several = sources.size > 1
    ones = np.ones(indices.shape[0])
    graph = _graph(indptr, indices, ones, n, sources if several else None)
    start = n if several else int(sources[0])
    order, predecessors = breadth_first_order(graph, start, directed=True, return_predecessors=True)
    parent = _parents(predecessors, n, n if several else None)
    order = order[order < n]
    dist = _depths(parent, order)
    if depth_limit is not None and depth_limit >= 0:
        beyond = dist > depth_limit
        dist[beyond] = -1
        parent[beyond] = -1
    return dist, (parent if parents else None)


def sssp(indptr, indices, weights, sources, negative_weights=False, *, max_distance=None,
         parents=True):
    """A one-owner SSSP without compiled kernels: ``(dist float64, parent int64 or None)``.

    Non-negative weights: SciPy's Dijkstra (``min_only`` over the sources, ``limit`` =
    ``max_distance``). Negative weights: :func:`bellman_ford`, frontier rounds in NumPy (SciPy's
    ``bellman_ford`` relaxes every edge n times: 182 s on the 2-core vm for kron16's 478 K-edge
    DAG, which this searches in 0.14 s; and it knows no cutoff). Raises NegativeCycleError for a negative cycle of the
    CSR that the search (bounded by ``max_distance``) reaches."""
    ANSWERED["sssp"] += 1
    n = indptr.shape[0] - 1
    sources = np.unique(np.asarray(sources, dtype=np.int64))
    weights = np.asarray(weights, dtype=np.float64)
    limit = np.inf if max_distance is None else float(max_distance)
    if negative_weights:
        return bellman_ford(indptr, indices, weights, sources, limit, parents=parents)
    if sources.size == 0 or n == 0 or not limit >= 0:  # as the kernels: every candidate dropped
        dist = np.full(n, np.inf)
        dist[sources] = 0.0
        return dist, (np.full(n, -1, dtype=np.int64) if parents else None)
    from scipy.sparse import csgraph

    graph = _graph(indptr, indices, weights, n)
    dist, predecessors, _ = csgraph.dijkstra(graph, directed=True, indices=sources,
                                             return_predecessors=True, min_only=True, limit=limit)
    return dist, (_parents(predecessors, n) if parents else None)


def bellman_ford(indptr, indices, weights, sources, bound=np.inf, *, parents=True):
    """Frontier Bellman-Ford in NumPy, the twin of :func:`gpipe.engine.traverse.bellman_ford` over
    ``sssp_relax``: each round the vertices improved in the last one relax their out-edges from
    their distance at the round's start, candidates above ``bound`` dropped, each target taking
    its least candidate if it is a strict improvement (with its edge's source as parent). Raises
    NegativeCycleError where improvements go on past n rounds or the parents close a cycle."""
    from gpipe.engine.outcome import cycle_check_due, has_parent_cycle

    n = indptr.shape[0] - 1
    dist = np.full(n, np.inf)
    parent = np.full(n, -1, dtype=np.int64)
    dist[sources] = 0.0
    frontier = sources
    rounds = 0
    while frontier.size:
        starts = indptr[frontier]
        counts = indptr[frontier + 1] - starts
        total = int(counts.sum())
        if total == 0:
            break
        row = np.repeat(np.arange(frontier.size), counts)
        edge = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts) + starts[row]
        u = frontier[row]
        v = indices[edge].astype(np.int64)
        cand = dist[u] + weights[edge]  # the distances at the round's start
        better = (cand <= bound) & (cand < dist[v])
        u, v, cand = u[better], v[better], cand[better]
        order = np.lexsort((cand, v))
        u, v, cand = u[order], v[order], cand[order]
        least = np.ones(v.size, dtype=bool)
        least[1:] = v[1:] != v[:-1]
        frontier = v[least]
        dist[frontier] = cand[least]
        parent[frontier] = u[least]
        rounds += 1
        if frontier.size and (rounds > n or (cycle_check_due(rounds) and has_parent_cycle("cpu", parent))):
            raise NegativeCycleError(NEGATIVE_CYCLE)
    return dist, (parent if parents else None)
