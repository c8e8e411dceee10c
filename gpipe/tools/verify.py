"""Slow, obviously-correct checkers for BFS and SSSP results.

The fast kernels in :mod:`gpipe.engine.traverse` prove nothing about themselves; these functions
check a computed result against the edge list it came from, the plain way, so that tests
and the benchmark can trust (or refute) it. They do not recompute distances with a second
algorithm. Instead they check the certificate a shortest-path tree carries with it:

1. the result has exactly one row per vertex of the edge list (either end, self-loops included);
2. every source has distance 0 and a null parent;
3. every other reached vertex ``v`` has a parent ``p`` such that the edge ``p -> v`` exists
   (in the symmetrized edge list when undirected, self-loops ignored), ``p`` is reached, and
   ``dist[p] + w == dist[v]`` where ``w`` is the lightest parallel ``p -> v`` edge (BFS: 1);
4. following parent pointers from any reached vertex ends at a source (no parent cycle);
   checked by pointer jumping, ``O(n log n)`` and vectorized;
5. no edge can improve the answer: for every edge ``u -> v`` with ``u`` reached, ``v`` is
   reached and ``dist[v] <= dist[u] + w``. For BFS with a ``depth_limit``, an edge leaving a
   vertex at the limit may lead to an unreached vertex.

Conditions 3 and 5 together make ``dist`` the exact shortest distance from the nearest source:
3 says each reached distance is the length of a real path from a source, 5 says no path is
shorter (a standard argument: induct along a shortest path). The checks are vectorized NumPy
and pandas; nothing loops over edges or vertices in Python.

A violation raises :class:`AssertionError` whose message names the first bad vertex (smallest
id) and what is wrong with it. Frames may be pandas, cuDF (converted with ``.to_pandas()``) or
Dask (computed first).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["check_bfs_tree", "check_sssp_tree"]

# Relative tolerance of the float comparisons in SSSP. The kernels compute dist[p] + w exactly
# as the checker does, so equality is normally exact; the slack only absorbs summation order.
_RTOL = 1e-9


def check_bfs_tree(edges_frame, result_frame, sources, *, directed, depth_limit=None,
                   src="src", dst="dst"):
    """Check a BFS result against its edge list; raise AssertionError on the first fault.

    Parameters
    ----------
    edges_frame : pandas, cuDF or Dask DataFrame
        The edge list the result was computed from, with columns ``src`` and ``dst``.
    result_frame : pandas, cuDF or Dask DataFrame
        Columns ``vertex``, ``distance`` (integer hops, null when unreached) and ``parent``.
    sources : int or sequence of int
        The BFS source vertex ids.
    directed : bool
        Whether edges are followed only ``src -> dst``.
    depth_limit : int, optional
        Vertices farther than this must be unreached; edges leaving a vertex at this depth
        are exempt from the "no reached in-neighbour" rule.
    src, dst : str
        Names of the id columns of ``edges_frame``.

    Raises
    ------
    AssertionError
        Naming the first vertex whose row breaks a condition listed in the module docstring.
    """
    tree = _Tree.read(edges_frame, result_frame, sources, src=src, dst=dst, weight=None, directed=directed)
    graph, dist, reached = tree.graph, tree.dist, tree.reached

    hops = np.where(reached, dist, 0.0)
    _fail_where(graph, (hops != np.floor(hops)) | (hops < 0),
                "vertex {v}: BFS distance {d} is not a non-negative integer", d=dist)
    if depth_limit is not None:
        _fail_where(graph, reached & (dist > depth_limit),
                    "vertex {v}: distance {d} exceeds depth_limit " + str(depth_limit), d=dist)

    tree.check_parents(exact=True)
    tree.check_acyclic()
    open_edge = reached[graph.u]
    if depth_limit is not None:  # an edge leaving the last level may lead to an unreached vertex
        open_edge &= dist[graph.u] < depth_limit
    tree.check_edges(open_edge, exact=True)


def check_sssp_tree(edges_frame, result_frame, sources, *, directed, src="src", dst="dst",
                    weight="weight"):
    """Check an SSSP result against its weighted edge list; raise AssertionError on a fault.

    Parameters
    ----------
    edges_frame : pandas, cuDF or Dask DataFrame
        The edge list, with columns ``src``, ``dst`` and ``weight``.
    result_frame : pandas, cuDF or Dask DataFrame
        Columns ``vertex``, ``distance`` (float, null when unreached) and ``parent``.
    sources : int or sequence of int
        The SSSP source vertex ids.
    directed : bool
        Whether edges are followed only ``src -> dst``.
    src, dst, weight : str
        Column names of ``edges_frame``.

    Raises
    ------
    AssertionError
        Naming the first vertex whose row breaks a condition listed in the module docstring.
    """
    tree = _Tree.read(edges_frame, result_frame, sources, src=src, dst=dst, weight=weight, directed=directed)
    tree.check_parents(exact=False)
    tree.check_acyclic()
    tree.check_edges(tree.reached[tree.graph.u], exact=False)


# ---------------------------------------------------------------------------------------------
# The edge list, renumbered to 0..n-1 over the sorted unique ids.


class _Edges:
    """The checked graph: sorted vertex ids and the traversable edges as dense indices.

    ``u``, ``v``, ``w``: every traversable edge (self-loops dropped, both directions when
    undirected, duplicates kept), ``w`` float64 (ones for BFS). ``key``/``key_w``: the same
    edges with duplicates collapsed to the lightest, sorted by ``key = u * n + v``.
    """

    def __init__(self, frame, *, src, dst, weight, directed):
        frame = _to_pandas(frame)
        for column in (src, dst) + ((weight,) if weight is not None else ()):
            assert column in frame.columns, f"edges have no column {column!r}"
        s = frame[src].to_numpy()
        d = frame[dst].to_numpy()
        self.ids = np.unique(np.concatenate([s, d]))
        self.n = len(self.ids)
        u = np.searchsorted(self.ids, s).astype(np.int64)
        v = np.searchsorted(self.ids, d).astype(np.int64)
        if weight is None:
            w = np.ones(len(u), dtype=np.float64)
        else:
            w = frame[weight].to_numpy(dtype=np.float64)
        keep = u != v
        u, v, w = u[keep], v[keep], w[keep]
        if not directed:
            u, v, w = np.concatenate([u, v]), np.concatenate([v, u]), np.concatenate([w, w])
        self.u, self.v, self.w = u, v, w
        key = u * self.n + v
        order = np.lexsort((w, key))
        key, w = key[order], w[order]
        first = np.ones(len(key), dtype=bool)
        first[1:] = key[1:] != key[:-1]
        self.key, self.key_w = key[first], w[first]

    def lightest(self, u, v):
        """Lightest weight of edges u -> v (dense indices), NaN where there is none."""
        key = u * self.n + v
        pos = np.searchsorted(self.key, key)
        pos_ok = np.minimum(pos, max(len(self.key) - 1, 0))
        found = (pos < len(self.key)) & (self.key[pos_ok] == key) if len(self.key) else (
            np.zeros(len(key), dtype=bool))
        out = np.full(len(key), np.nan)
        out[found] = self.key_w[pos_ok[found]]
        return out


# ---------------------------------------------------------------------------------------------
# The result, aligned to the graph's dense numbering.


class _Tree:
    """A result frame checked for shape and aligned to ``graph``: ``dist`` (NaN = unreached),
    ``parent`` (dense index, -1 = none), ``reached`` and ``is_source``, all of length n."""

    @classmethod
    def read(cls, edges_frame, result_frame, sources, *, src, dst, weight, directed):
        """The result frame checked for shape against the edge list it came from (``weight``
        None: every edge weighs 1)."""
        return cls(_Edges(edges_frame, src=src, dst=dst, weight=weight, directed=directed),
                   result_frame, sources)

    def __init__(self, graph, frame, sources):
        self.graph = graph
        frame = _to_pandas(frame)
        for column in ("vertex", "distance", "parent"):
            assert column in frame.columns, f"result has no column {column!r}"
        n, ids = graph.n, graph.ids

        vertex_na = frame["vertex"].isna().to_numpy()
        assert not vertex_na.any(), "result has a null vertex id"
        vertex = frame["vertex"].to_numpy()
        index = _locate(ids, vertex)
        unknown = index < 0
        if unknown.any():
            raise AssertionError(
                f"vertex {vertex[unknown][0]}: in the result but not in the edge list")
        counts = np.bincount(index, minlength=n)
        if (counts > 1).any():
            raise AssertionError(f"vertex {ids[np.argmax(counts > 1)]}: "
                                 f"{counts.max()} rows in the result, expected one")
        if (counts == 0).any():
            raise AssertionError(f"vertex {ids[np.argmax(counts == 0)]}: "
                                 "in the edge list but has no row in the result")

        dist = np.empty(n, dtype=np.float64)
        dist[index] = frame["distance"].to_numpy(dtype=np.float64, na_value=np.nan)
        parent_column = frame["parent"]
        parent_na = parent_column.isna().to_numpy()
        parent_ids = parent_column.fillna(ids[0]).to_numpy()
        parent_index = _locate(ids, parent_ids)
        parent_index[parent_na] = -1
        bad_parent = ~parent_na & (parent_index < 0)
        if bad_parent.any():
            raise AssertionError(f"vertex {vertex[bad_parent][0]}: parent "
                                 f"{parent_ids[bad_parent][0]} is not a vertex of the edge list")
        parent = np.empty(n, dtype=np.int64)
        parent[index] = parent_index

        source_ids = np.atleast_1d(np.asarray(sources))
        source_index = _locate(ids, source_ids)
        if (source_index < 0).any():
            raise AssertionError(
                f"source {source_ids[source_index < 0][0]} is not a vertex of the edge list")
        is_source = np.zeros(n, dtype=bool)
        is_source[source_index] = True

        self.dist, self.parent, self.is_source = dist, parent, is_source
        self.reached = ~np.isnan(dist)

        _fail_where(graph, np.isinf(dist),
                    "vertex {v}: distance {d} (unreached must be null, not infinite)", d=dist)
        _fail_where(graph, is_source & (dist != 0),
                    "vertex {v}: a source, but its distance is {d}, not 0", d=dist)
        _fail_where(graph, is_source & (parent >= 0),
                    "vertex {v}: a source, but its parent is {p}, not null", p=self._pid())
        _fail_where(graph, ~self.reached & (parent >= 0),
                    "vertex {v}: unreached (null distance) but has parent {p}", p=self._pid())
        _fail_where(graph, self.reached & ~is_source & (parent < 0),
                    "vertex {v}: reached at distance {d} but has no parent and is not a source",
                    d=dist)

    def _pid(self):
        """Parent ids for messages (the vertex's own id where there is none)."""
        return self.graph.ids[np.where(self.parent >= 0, self.parent, np.arange(self.graph.n))]

    def check_parents(self, *, exact):
        """Each non-source reached v: edge parent -> v exists, parent reached, distances add up."""
        graph, dist, parent = self.graph, self.dist, self.parent
        child = np.flatnonzero(self.reached & ~self.is_source)
        par = parent[child]
        w = graph.lightest(par, child)
        no_edge = np.isnan(w)
        _fail_at(graph, child[no_edge],
                 "vertex {v}: parent {p} but there is no edge {p} -> {v}",
                 p=graph.ids[par[no_edge]])
        unreached_parent = np.isnan(dist[par])
        _fail_at(graph, child[unreached_parent],
                 "vertex {v}: reached, but its parent {p} is unreached",
                 p=graph.ids[par[unreached_parent]])
        expected = dist[par] + w
        if exact:
            wrong = expected != dist[child]
        else:
            wrong = np.abs(expected - dist[child]) > _slack(expected)
        _fail_at(graph, child[wrong],
                 "vertex {v}: distance {d} but parent {p} has distance {dp} "
                 "and the lightest edge {p} -> {v} weighs {w}",
                 d=dist[child][wrong], p=graph.ids[par[wrong]], dp=dist[par][wrong], w=w[wrong])

    def check_edges(self, open_edge, *, exact):
        """No edge u -> v where ``open_edge`` holds (a mask over the graph's edges) leaves v
        unreached, and no edge between reached vertices offers v a shorter distance than its
        own, ``dist[u] + w`` (``exact``: to the last bit, as for BFS; else beyond the float
        slack)."""
        graph, dist, reached = self.graph, self.dist, self.reached
        u, v = graph.u, graph.v
        _fail_edges(graph, open_edge & ~reached[v], v, u,
                    "vertex {v}: unreached, but its in-neighbour {u} is reached at distance {du}",
                    du=dist[u])
        both = reached[u] & reached[v]
        through_u = dist[u] + graph.w
        if exact:
            _fail_edges(graph, both & (dist[v] > through_u), v, u,
                        "vertex {v}: distance {dv} but its in-neighbour {u} has distance {du}",
                        dv=dist[v], du=dist[u])
        else:
            _fail_edges(graph, both & (dist[v] > through_u + _slack(through_u)), v, u,
                        "vertex {v}: distance {dv} but the path through {u} costs {alt}",
                        dv=dist[v], alt=through_u)

    def check_acyclic(self):
        """Following parent pointers from any reached vertex ends at a source.

        Pointer jumping: ``root = root[root]`` doubles the distance followed each round, so
        ``ceil(log2(n)) + 1`` rounds reach the end of any chain; a vertex whose pointer then
        does not rest on a source lies on, or leads into, a cycle.
        """
        graph = self.graph
        n = graph.n
        root = np.where(self.parent >= 0, self.parent, np.arange(n))
        for _ in range(int(np.ceil(np.log2(max(n, 2)))) + 1):
            root = root[root]
        cyclic = self.reached & ~self.is_source[root]
        _fail_where(graph, cyclic,
                    "vertex {v}: following its parents never reaches a source (parent cycle)")


# ---------------------------------------------------------------------------------------------
# Helpers.


def _to_pandas(frame):
    """A pandas DataFrame from a pandas, cuDF or Dask (of either) frame."""
    if hasattr(frame, "__dask_graph__"):
        frame = frame.compute()
    if not isinstance(frame, pd.DataFrame):
        try:  # cuDF: nullable pandas dtypes keep integer ids exact (no float64 detour)
            frame = frame.to_pandas(nullable=True)
        except TypeError:
            frame = frame.to_pandas()
    return frame


def _locate(ids, values):
    """Index of each value in the sorted ``ids``; -1 where absent."""
    values = np.asarray(values)
    if len(ids) == 0:
        return np.full(len(values), -1, dtype=np.int64)
    pos = np.searchsorted(ids, values).astype(np.int64)
    pos_ok = np.minimum(pos, len(ids) - 1)
    found = (pos < len(ids)) & (ids[pos_ok] == values)
    return np.where(found, pos_ok, -1)


def _slack(value):
    return _RTOL * np.maximum(np.abs(value), 1.0)


def _fail_where(graph, bad, message, **fields):
    """Raise naming the first vertex (dense index) where the length-n mask ``bad`` holds."""
    if bad.any():
        i = int(np.argmax(bad))
        raise AssertionError(_format(message, graph.ids[i], i, fields))


def _fail_at(graph, where, message, **fields):
    """Raise naming ``where[0]``; ``fields`` are arrays aligned with ``where``."""
    if len(where):
        first = int(np.argmin(where))
        raise AssertionError(_format(message, graph.ids[where[first]], first, fields))


def _fail_edges(graph, bad, v, u, message, **fields):
    """Raise for the bad edge whose head ``v`` has the smallest id."""
    if bad.any():
        candidates = np.flatnonzero(bad)
        e = candidates[np.argmin(v[candidates])]
        fields = {key: value[e] for key, value in fields.items()}
        raise AssertionError(message.format(v=graph.ids[v[e]], u=graph.ids[u[e]], **fields))


def _format(message, vertex_id, i, fields):
    return message.format(v=vertex_id, **{key: value[i] for key, value in fields.items()})


# ---------------------------------------------------------------------------------------------
# Array-level check of one traversal against a CSR partition (the benchmark's validator).

__all__ += ["check_traversal_arrays", "check_no_parent_cycle"]

# Edges scanned per vectorized pass: bounds the checker's extra memory (a few int64 arrays of
# this length) however large the graph, so it also fits beside a kron27 CSR on one GPU.
_EDGE_CHUNK = 1 << 25


def check_traversal_arrays(xp, indptr, indices, weights, dist, parent, sources, *, offset=0,
                           symmetric=False, parent_rows=False, chunk=_EDGE_CHUNK):
    """Check one traversal's distances and parents against a CSR; raise AssertionError on a fault.

    The array twin of :func:`check_bfs_tree` / :func:`check_sssp_tree`, for the arrays that
    :func:`gpipe.engine.traverse.bfs_arrays` and :func:`gpipe.engine.traverse.sssp_arrays` return. It runs
    where the arrays live (NumPy or CuPy, whichever ``xp`` is), never copies the graph to the
    host and never loops over vertices or edges in Python: the edges are scanned in
    vectorized chunks of ``chunk`` edges, the row of each edge found by ``searchsorted`` on
    ``indptr``. It checks conditions 2, 3 and 5 of the module docstring:

    - every source has distance 0 and parent -1; an unreached vertex has parent -1;
    - every reached non-source vertex ``v`` is *justified*: some edge ``parent[v] -> v`` of
      weight ``w`` has ``dist[parent[v]] + w == dist[v]`` (so ``parent[v]`` is reached).
      Checking "some parallel edge" is the same as checking the lightest one, given the next
      condition;
    - every edge ``u -> v`` with ``u`` reached has ``v`` reached and ``dist[v] <= dist[u] + w``.

    With only positive weights (always for BFS) the parent pointers strictly decrease the
    distance, so they cannot form a cycle; with a weight ``<= 0`` the parents are also
    checked for cycles by pointer jumping.

    Parameters
    ----------
    xp : module
        ``numpy`` or ``cupy``: the array module of every array argument (the partition's ``xp``).
    indptr : int64[n_local + 1]
        CSR row pointers of the rows ``offset .. offset + n_local - 1``.
    indices : int32 or int64[nnz]
        Global target ids.
    weights : float64[nnz] or None
        Edge weights; None means every edge weighs 1 (BFS).
    dist : int32[n] or float64[n]
        Distances of all ``n`` global vertices: integer hops with -1 for unreached (BFS), or
        float with +inf for unreached (SSSP).
    parent : int64[n], or int64[n_local] with ``parent_rows``
        Global parent ids, -1 for sources and unreached vertices.
    sources : sequence of int
        Global ids of the sources.
    offset : int, optional (default=0)
        Global id of the CSR's first row; 0 with ``n_local == n`` for a one-owner graph.
    symmetric : bool, optional (default=False)
        The CSR holds both directions of every edge with equal weights (an undirected
        graph). Then the parent edge ``p -> v`` is found as its twin ``v -> p`` in ``v``'s own
        row, so each owner of a partitioned graph checks its own vertices. Otherwise the
        partition must hold every row (``offset == 0``, ``n_local == n``).
    parent_rows : bool, optional (default=False)
        ``parent`` holds the parents of the CSR's rows only (needs ``symmetric``), so that an
        owner of a partitioned graph is sent its own rows' parents, not all ``n``. Sources
        outside the rows are then checked for their distance only (their own owner checks
        their parent), and parent cycles are not looked for: where a weight is ``<= 0`` the
        result says ``cycles_unchecked`` and the caller, who holds every parent, runs
        :func:`check_no_parent_cycle`.
    chunk : int, optional
        Edges per vectorized pass.

    Returns
    -------
    dict
        ``reached`` (reached vertices among the CSR's rows), ``reached_edges`` (stored
        directed edges whose source is reached: Graph500's traversed edges, times two for an
        undirected graph), ``max_distance`` (over the CSR's rows, 0 if none is reached) and
        ``cycles_unchecked`` (True only with ``parent_rows`` and a weight ``<= 0``).

    Raises
    ------
    AssertionError
        Naming the first vertex found that breaks a condition, and what is wrong with it.

    Examples
    --------
    The path 0 - 1 - 2 stored both ways, BFS from 0, then a planted wrong distance:

    >>> indptr = np.array([0, 1, 3, 4]); indices = np.array([1, 0, 2, 1], dtype=np.int32)
    >>> dist = np.array([0, 1, 2], dtype=np.int32); parent = np.array([-1, 0, 1])
    >>> check_traversal_arrays(np, indptr, indices, None, dist, parent, [0])["reached_edges"]
    4
    >>> dist[2] = 3
    >>> check_traversal_arrays(np, indptr, indices, None, dist, parent, [0])
    Traceback (most recent call last):
    ...
    AssertionError: vertex 2: distance 3 but its in-neighbour 1 has distance 1 and the edge weighs 1
    """
    n_local = int(indptr.shape[0]) - 1
    n = int(dist.shape[0])
    if not symmetric and (offset != 0 or n_local != n or parent_rows):
        raise ValueError("a partial CSR (offset > 0, fewer rows than vertices, or parent_rows) "
                         "needs symmetric=True")
    own = parent if parent_rows else parent[offset:offset + n_local]  # the rows' parents
    hops = dist.dtype.kind in "iu"
    reached = dist >= 0 if hops else xp.isfinite(dist)
    # Unreached distances replaced by 0 so that arithmetic below never meets inf or -1.
    d = xp.where(reached, dist, 0).astype("int64" if hops else "float64")
    rows = slice(offset, offset + n_local)

    sources = xp.asarray(np.unique(np.asarray(sources, dtype=np.int64)))
    if parent_rows:  # the other sources' parents are their own owners' to check
        checked = sources[(sources >= offset) & (sources < offset + n_local)]
        checked_parent = own[checked - offset]
    else:
        checked, checked_parent = sources, parent[sources]
    wrong = dist[sources] != 0
    if bool(wrong.any()):
        s = int(sources[xp.argmax(wrong)])
        raise AssertionError(f"vertex {s}: a source, but its distance is {dist[s]}, not 0")
    wrong = checked_parent != -1
    if bool(wrong.any()):
        i = int(xp.argmax(wrong))
        raise AssertionError(f"vertex {int(checked[i])}: a source, but its parent is {int(checked_parent[i])}, not -1")
    stray = ~reached[rows] & (own != -1)
    stray |= (own < -1) | (own >= n)
    if bool(stray.any()):
        i = int(xp.argmax(stray))
        raise AssertionError(f"vertex {offset + i}: parent {int(own[i])} is not -1 or a vertex id "
                             f"(distance {dist[offset + i]}, unreached counts as no parent)")

    justified = xp.zeros(n_local if symmetric else n, dtype=bool)
    nnz = int(indices.shape[0])
    for start in range(0, nnz, chunk):
        stop = min(nnz, start + chunk)
        u_row = xp.searchsorted(indptr, xp.arange(start, stop, dtype=indptr.dtype), side="right") - 1
        u = u_row + offset
        v = indices[start:stop].astype("int64")
        w = 1 if weights is None else weights[start:stop]
        reached_u, reached_v = reached[u], reached[v]
        du, dv = d[u], d[v]
        missed = reached_u & ~reached_v
        if bool(missed.any()):
            e = int(xp.argmax(missed))
            raise AssertionError(f"vertex {int(v[e])}: unreached, but its in-neighbour {int(u[e])} "
                                 f"is reached at distance {du[e]}")
        longer = reached_u & (dv > du + w + _slack_xp(xp, du + w, hops))
        if bool(longer.any()):
            e = int(xp.argmax(longer))
            raise AssertionError(f"vertex {int(v[e])}: distance {dv[e]} but its in-neighbour {int(u[e])} "
                                 f"has distance {du[e]} and the edge weighs {_at(w, e)}")
        if symmetric:  # u -> v is the twin of v -> u: it justifies u when v is u's parent
            hit = reached_u & (own[u_row] == v) & _equal(xp, dv + w, du, hops)
            justified[u_row[hit]] = True
        else:
            hit = reached_v & (parent[v] == u) & _equal(xp, du + w, dv, hops)
            justified[v[hit]] = True

    is_source = xp.zeros(n, dtype=bool)
    is_source[sources] = True
    unjustified = reached[rows] & ~is_source[rows] & ~justified[rows if not symmetric else slice(None)]
    if bool(unjustified.any()):
        i = int(xp.argmax(unjustified))
        v, p = offset + i, int(own[i])
        raise AssertionError(f"vertex {v}: distance {dist[v]}, but no edge from its parent {p} "
                             f"(distance {dist[p] if 0 <= p < n else 'none'}) leads to it with "
                             f"dist[parent] + weight == dist[vertex]")
    cycles_unchecked = False
    if weights is not None and nnz and float(weights.min()) <= 0:
        if parent_rows:
            cycles_unchecked = True
        else:
            check_no_parent_cycle(xp, parent, reached)

    reached_rows = reached[rows]
    degree = indptr[1:] - indptr[:-1]
    return {
        "reached": int(reached_rows.sum()),
        "reached_edges": int(degree[reached_rows].sum()),
        "max_distance": (int if hops else float)(d[rows].max()) if n_local else 0,
        "cycles_unchecked": cycles_unchecked,
    }


def _slack_xp(xp, value, hops):
    """Float slack of a comparison with ``value`` (0 for integer hops); see ``_RTOL``."""
    return 0 if hops else _RTOL * xp.abs(value)


def _equal(xp, a, b, hops):
    return a == b if hops else xp.abs(a - b) <= _RTOL * xp.maximum(xp.abs(a), xp.abs(b))


def _at(w, e):
    return w if isinstance(w, int) else float(w[e])


def check_no_parent_cycle(xp, parent, reached):
    """Raise AssertionError if following parents from a reached vertex never reaches a root
    (pointer jumping over the whole ``parent`` array, int64[n]; ``reached`` bool[n])."""
    n = int(parent.shape[0])
    node = xp.where(parent >= 0, parent, xp.arange(n, dtype=parent.dtype))
    for _ in range(max(1, int(np.ceil(np.log2(max(n, 2))))) + 1):
        node = node[node]
    cyclic = reached & (parent[node] >= 0)
    if bool(cyclic.any()):
        raise AssertionError(f"vertex {int(xp.argmax(cyclic))}: its parent pointers run into a cycle")
