"""The README's tree rule, over every combination of options (issue 23, item 1).

Every result's parents form a tree: each parent edge exists, the parent is reached, and
``distance[parent] + weight == distance[vertex]`` (BFS: ``+ 1``). Distances are checked against
references not written for gpipe: SciPy's ``dijkstra(limit=...)`` and ``shortest_path`` where
the weights are non-negative, and, with negative weights, the plain Bellman-Ford below with
the cutoff written as Dijkstra's (``max_distance`` drops every candidate above it, so a
vertex whose short paths climb above the cutoff on the way is unreached, and a negative
cycle counts only where that bounded search reaches it).

Paths: the ``engine`` fixture (no client: one owner; the 2-worker cluster with
``gpipe.partitions = 2``: two owners; cuDF on a GPU, marked ``gpu``), and on each
``Graph.bfs``/``Graph.sssp`` (one source) and ``bfs_each``/``sssp_each`` with and without targets.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.sparse import csgraph

import gpipe
import reference
from gpipe.errors import NegativeCycleError

INF = math.inf


# ---------------------------------------------------------------------------------------------
# References
# ---------------------------------------------------------------------------------------------


def arcs(edges, directed):
    """``(u, v, w)`` for every edge, both ways when undirected (a self-loop once)."""
    out = list(zip(edges["src"].tolist(), edges["dst"].tolist(), edges["w"].tolist()))
    if not directed:
        out += [(v, u, w) for u, v, w in out if u != v]
    return out


def bounded_bellman_ford(edges, source, *, directed, bound):
    """Distances from ``source`` (a dict, reached vertices only) by plain Bellman-Ford in which
    a candidate above ``bound`` is never accepted; None when a negative cycle is reached (the
    distances still fall after as many full passes as there are vertices)."""
    vertices = set(edges["src"].tolist()) | set(edges["dst"].tolist())
    every = arcs(edges, directed)
    dist = {source: 0.0}
    for _ in range(len(vertices) + 1):
        changed = False
        for u, v, w in every:
            if u in dist:
                cand = dist[u] + w
                if cand <= bound and cand < dist.get(v, INF):
                    dist[v] = cand
                    changed = True
        if not changed:
            return dist
    return None


def scipy_distances(edges, source, *, directed, bound, weighted=True):
    """SciPy's distances from ``source`` within ``bound`` (a dict, reached vertices only)."""
    ids, matrix = reference.to_csr(edges, directed=directed, weight="w" if weighted else None)
    index = int(np.searchsorted(ids, source))
    limit = np.inf if bound is None else bound
    if weighted:
        row = csgraph.dijkstra(matrix, directed=True, indices=index, limit=limit)
    else:
        row = csgraph.shortest_path(matrix, directed=True, unweighted=True, indices=index)
        row = np.where(row > limit, np.inf, row)
    return {int(ids[i]): float(row[i]) for i in np.flatnonzero(np.isfinite(row))}


# ---------------------------------------------------------------------------------------------
# The tree rule
# ---------------------------------------------------------------------------------------------


def assert_tree(rows, source, expected, edges, *, directed, unit=False):
    """``rows`` (vertex, distance, parent; pandas, nulls where unreached) of one source hold
    exactly the ``expected`` distances, and every reached vertex but the source has a parent
    that is reached, along an existing edge whose weight (1 for BFS) closes the distance."""
    weights = {}
    for u, v, w in arcs(edges, directed):
        weights.setdefault((u, v), set()).add(1.0 if unit else w)
    reached = rows[rows["distance"].notna()]
    got = {int(v): float(d) for v, d in zip(reached["vertex"], reached["distance"])}
    assert got == expected, f"source {source}: distances differ"
    for v, p in zip(reached["vertex"], reached["parent"]):
        v = int(v)
        if v == source:
            assert pd.isna(p), f"source {source} has parent {p}"
            continue
        assert not pd.isna(p), f"source {source}: reached vertex {v} has no parent"
        p = int(p)
        assert p in got, f"source {source}: parent {p} of {v} is not reached"
        assert any(got[p] + w == got[v] for w in weights.get((p, v), ())), (
            f"source {source}: no edge {p} -> {v} closes {got[p]} to {got[v]}")
    unreached = rows[rows["distance"].isna()]
    assert unreached["parent"].isna().all(), f"source {source}: an unreached vertex has a parent"


def check_single(graph, engine, kind, source, limit, expected, edges, directed):
    """``Graph.sssp``/``Graph.bfs`` from ``source``: the tree rule, or the negative cycle."""
    if kind == "bfs":
        run = lambda: graph.bfs(source, depth_limit=limit)  # noqa: E731
    else:
        run = lambda: graph.sssp(source, max_distance=limit)  # noqa: E731
    if expected is None:
        with pytest.raises(NegativeCycleError):
            engine.run(run())
        return
    rows = engine.run(run())
    assert_tree(rows, source, expected, edges, directed=directed, unit=kind == "bfs")


def check_each(graph, engine, kind, sources, limit, expected, edges, directed):
    """``bfs_each``/``sssp_each`` of ``sources``, without targets and with every vertex (and one
    absent id) as a target: each source's rows follow the tree rule."""
    each = graph.bfs_each if kind == "bfs" else graph.sssp_each
    option = {"depth_limit": limit} if kind == "bfs" else {"max_distance": limit}
    vertices = sorted(set(edges["src"].tolist()) | set(edges["dst"].tolist()))
    absent = max(vertices) + 1000
    for targets in (None, vertices + [absent]):
        rows = engine.run(each(sources, targets=targets, parents=True, **option))
        for s in sources:
            mine = rows[rows["source"] == s]
            if targets is not None:
                assert mine["vertex"].tolist() == targets
                assert mine.loc[mine["vertex"] == absent, "distance"].isna().all()
            assert_tree(mine, s, expected[s], edges, directed=directed, unit=kind == "bfs")


def run_case(engine, edges, *, directed, kind, limits, sources, negative):
    graph = gpipe.Graph.from_edges(engine.frame(edges, npartitions=2), directed=directed,
                                   weight=None if kind == "bfs" else "w")
    for limit in limits:
        if kind == "bfs":
            expected = {s: scipy_distances(edges, s, directed=directed, bound=limit, weighted=False)
                        for s in sources}
        elif negative:
            expected = {s: bounded_bellman_ford(edges, s, directed=directed,
                                                bound=INF if limit is None else limit)
                        for s in sources}
        else:
            expected = {s: scipy_distances(edges, s, directed=directed, bound=limit)
                        for s in sources}
        for s in sources[:2]:
            check_single(graph, engine, kind, s, limit, expected[s], edges, directed)
        fine = [s for s in sources if expected[s] is not None]
        if fine:
            check_each(graph, engine, kind, fine, limit, expected, edges, directed)
        cycle = [s for s in sources if expected[s] is None]
        if cycle:
            each = graph.bfs_each if kind == "bfs" else graph.sssp_each
            with pytest.raises(NegativeCycleError):
                engine.run(each(cycle[:1], max_distance=limit))


# ---------------------------------------------------------------------------------------------
# Graphs
# ---------------------------------------------------------------------------------------------


def edge_frame(src, dst, w):
    return pd.DataFrame({"src": np.asarray(src, dtype=np.int64), "dst": np.asarray(dst, dtype=np.int64),
                         "w": np.asarray(w, dtype=np.float64)})


def random_graph(n, m, seed, low, high, *, self_loops=()):
    """Integer weights in [low, high] as floats (sums exact), plus ``(vertex, weight)`` loops."""
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    keep = src != dst
    src, dst = list(src[keep]), list(dst[keep])
    w = list(rng.integers(low, high + 1, len(src)).astype(float))
    for v, loop in self_loops:
        src.append(v)
        dst.append(v)
        w.append(loop)
    return edge_frame(src, dst, w)


def test_the_issue_example_leaves_both_vertices_unreached(engine):
    """0 -> 1 (2.0), 1 -> 3 (-1.0), max_distance 1.0: 3 is not reached through the
    unreached 1 (it used to get distance 1.0 with parent 1)."""
    edges = edge_frame([0, 1], [1, 3], [2.0, -1.0])
    graph = gpipe.Graph.from_edges(engine.frame(edges, npartitions=2), weight="w")
    rows = engine.run(graph.sssp(0, max_distance=1.0)).set_index("vertex")
    assert rows.loc[0, "distance"] == 0.0
    assert rows.loc[[1, 3], "distance"].isna().all()
    assert rows["parent"].isna().all()
    each = engine.run(graph.sssp_each([0], max_distance=1.0, parents=True))
    assert each["vertex"].tolist() == [0]
    each = engine.run(graph.sssp_each([0], max_distance=1.0, targets=[1, 3], parents=True))
    assert each["distance"].isna().all() and each["parent"].isna().all()
    # Within a cutoff of 2.0 both are reached, 3 through 1.
    rows = engine.run(graph.sssp(0, max_distance=2.0)).set_index("vertex")
    assert rows.loc[3, "distance"] == 1.0 and rows.loc[3, "parent"] == 1
    run_case(engine, edges, directed=True, kind="sssp", limits=[None, 0.0, 1.0, 2.0],
             sources=[0, 1], negative=True)


def test_a_short_path_that_climbs_above_the_cutoff_is_not_taken(engine):
    """0 -> 1 (5), 1 -> 2 (-4), 0 -> 2 (3): with max_distance 3, 2 is at 3 through the direct
    edge (its parent 0), not at 1 through the unreached 1; at 5, at 1 through 1."""
    edges = edge_frame([0, 1, 0, 2], [1, 2, 2, 3], [5.0, -4.0, 3.0, -1.0])
    run_case(engine, edges, directed=True, kind="sssp", limits=[None, 2.0, 3.0, 4.0, 5.0],
             sources=[0, 1, 2], negative=True)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_negative_weights_directed(engine, seed):
    """Random digraphs with weights in [-3, 9], some with negative cycles: a cycle is raised
    exactly when the bounded search reaches it."""
    edges = random_graph(24, 60, seed, -3, 9)
    run_case(engine, edges, directed=True, kind="sssp", limits=[None, 0.0, 4.0, 9.0],
             sources=[0, 5, 11], negative=True)


def test_negative_self_loops_count_where_the_bounded_search_reaches_them(engine):
    """A DAG of negative and positive weights with a negative self-loop (kept outside the CSR)
    on a far vertex: raised only by cutoffs that reach it."""
    edges = random_graph(20, 50, 7, 0, 6)
    edges = edges[edges["src"] < edges["dst"]]  # a DAG: no cycle but the loop
    edges = pd.concat([edges, edge_frame([3, 0, 1], [3, 3, 3], [-1.0, 9.0, 8.0])], ignore_index=True)
    edges.loc[edges.index[:6], "w"] = -2.0
    run_case(engine, edges, directed=True, kind="sssp", limits=[None, 1.0, 7.0, 8.0, 9.0],
             sources=[0, 1, 4], negative=True)


def test_negative_weights_undirected(engine):
    """Undirected, one negative edge (a negative cycle both ways): raised only where the
    bounded search reaches it; the trees hold where it does not."""
    edges = random_graph(20, 40, 4, 1, 6)
    edges = pd.concat([edges, edge_frame([18], [19], [-1.0])], ignore_index=True)
    run_case(engine, edges, directed=False, kind="sssp", limits=[None, 2.0, 6.0],
             sources=[0, 7, 18], negative=True)


@pytest.mark.parametrize("directed", [True, False], ids=["directed", "undirected"])
def test_non_negative_weights(engine, directed):
    """Non-negative weights (zeros included): SciPy's dijkstra with limit=max_distance."""
    edges = random_graph(30, 80, 5, 0, 7)
    run_case(engine, edges, directed=directed, kind="sssp", limits=[None, 0.0, 5.0, 9.0],
             sources=[0, 3, 17], negative=False)


@pytest.mark.parametrize("directed", [True, False], ids=["directed", "undirected"])
def test_bfs(engine, directed):
    """BFS with and without depth_limit: SciPy's unweighted shortest paths."""
    edges = random_graph(30, 60, 6, 1, 1)
    run_case(engine, edges, directed=directed, kind="bfs", limits=[None, 0, 2],
             sources=[0, 3, 17], negative=False)


def test_graph_path_follows_the_tree_with_negative_weights(engine):
    """``Graph.path`` (no cutoff) walks a tree edge by edge from the source to the target."""
    edges = random_graph(24, 60, 8, 0, 9)
    edges = edges[edges["src"] < edges["dst"]].copy()
    edges.loc[edges.index[:10], "w"] = -3.0
    graph = gpipe.Graph.from_edges(engine.frame(edges, npartitions=2), weight="w")
    expected = bounded_bellman_ford(edges, 0, directed=True, bound=INF)
    weights = {}
    for u, v, w in arcs(edges, True):
        weights.setdefault((u, v), set()).add(w)
    for target in sorted(expected):
        path = graph.path(0, target)
        assert path[0] == 0 and path[-1] == target
        total = 0.0
        for u, v in zip(path, path[1:]):
            total += min(weights[(u, v)])
        assert total == expected[target]
