"""Slow, obviously-correct checkers for BFS and SSSP results.

The fast kernels in :mod:`gpipe.traverse` prove nothing about themselves; these functions
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
    graph = _Edges(edges_frame, src=src, dst=dst, weight=None, directed=directed)
    tree = _Tree(graph, result_frame, sources)
    dist = tree.dist
    reached = tree.reached

    hops = np.where(reached, dist, 0.0)
    _fail_where(graph, (hops != np.floor(hops)) | (hops < 0),
                "vertex {v}: BFS distance {d} is not a non-negative integer", d=dist)
    if depth_limit is not None:
        _fail_where(graph, reached & (dist > depth_limit),
                    "vertex {v}: distance {d} exceeds depth_limit " + str(depth_limit), d=dist)

    tree.check_parents(exact=True)
    tree.check_acyclic()

    # No edge u -> v with u reached may leave v unreached (unless u is at the depth limit)
    # or farther than dist[u] + 1.
    u, v = graph.u, graph.v
    from_reached = reached[u]
    open_edge = from_reached
    if depth_limit is not None:
        open_edge = from_reached & (dist[u] < depth_limit)
    missed = open_edge & ~reached[v]
    _fail_edges(graph, missed, v, u,
                "vertex {v}: unreached, but its in-neighbour {u} is reached at distance {du}",
                du=dist[u])
    both = from_reached & reached[v]
    too_far = both & (dist[v] > dist[u] + 1)
    _fail_edges(graph, too_far, v, u,
                "vertex {v}: distance {dv} but its in-neighbour {u} has distance {du}",
                dv=dist[v], du=dist[u])


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
    graph = _Edges(edges_frame, src=src, dst=dst, weight=weight, directed=directed)
    tree = _Tree(graph, result_frame, sources)
    dist = tree.dist
    reached = tree.reached

    tree.check_parents(exact=False)
    tree.check_acyclic()

    u, v, w = graph.u, graph.v, graph.w
    from_reached = reached[u]
    missed = from_reached & ~reached[v]
    _fail_edges(graph, missed, v, u,
                "vertex {v}: unreached, but its in-neighbour {u} is reached at distance {du}",
                du=dist[u])
    both = from_reached & reached[v]
    through_u = dist[u] + w
    shorter = both & (dist[v] > through_u + _slack(through_u))
    _fail_edges(graph, shorter, v, u,
                "vertex {v}: distance {dv} but the path through {u} costs {alt}",
                dv=dist[v], alt=through_u)


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
