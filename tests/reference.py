"""Test helpers: seeded random edge lists and the expected answers from SciPy and NetworkX.

Nothing here imports gpipe. The expected distances come from ``scipy.sparse.csgraph`` on a
CSR matrix built the way the contract defines the graph: self-loops dropped unless negative (a
negative self-loop is a negative cycle), parallel edges collapsed to the lightest, and an
undirected graph symmetrized with the minimum of both directions. A couple of cases cross-check with NetworkX.

Distances are returned as a float64 ``pandas.Series`` indexed by vertex id, NaN = unreached.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.sparse import csgraph

# ---------------------------------------------------------------------------------------------
# Generators.

ID_STYLES = ("dense", "shuffled", "sparse", "negative")


def vertex_ids(count, style, *, seed=0, dtype="int64"):
    """``count`` distinct vertex ids of the given style, as an array of ``dtype``.

    dense: 0..count-1 (gpipe may keep them as they are); shuffled: a permutation of those;
    sparse: ``10**15 + k * 7919`` permuted (int64 only); negative: values spread around 0.
    """
    rng = np.random.default_rng(seed)
    k = np.arange(count, dtype=np.int64)
    if style == "dense":
        ids = k
    elif style == "shuffled":
        ids = rng.permutation(k)
    elif style == "sparse":
        ids = 10**15 + rng.permutation(k) * 7919
    elif style == "negative":
        ids = rng.permutation(k) * 3 - (3 * count) // 2
    else:
        raise ValueError(f"unknown id style {style!r}")
    out = ids.astype(dtype)
    assert np.array_equal(out.astype(np.int64), ids), f"ids do not fit {dtype}"
    return out


def random_edges(n, m, *, seed, weights=None, ids="dense", dtype="int64", components=1,
                 duplicates=0, self_loops=0, loop_only_vertex=False,
                 src="src", dst="dst", weight="weight"):
    """A seeded random edge list as a pandas DataFrame.

    Parameters
    ----------
    n, m : int
        Vertices to draw endpoints from, and the number of random edges.
    weights : None, "positive", "nonnegative", "integer" or "dag_negative"
        None: no weight column. positive: uniform in [0.5, 10). nonnegative: integers 0..4
        as floats (many zeros: zero-weight cycles). integer: int64 weights 1..9.
        dag_negative: every edge goes up a random topological order, weights integers in
        [-5, 10] as floats (negative edges, no negative cycle: self-loops get non-negative
        weights).
    ids : one of ID_STYLES
    components : int
        Split the vertices into this many blocks; an edge never joins two blocks.
    duplicates : int
        Copies of random edges appended, each with a fresh weight.
    self_loops : int
        Self-loops appended on random vertices.
    loop_only_vertex : bool
        Add one extra vertex (id index n) that appears only in a self-loop.
    """
    rng = np.random.default_rng(seed)
    block = max(n // components, 1)
    comp = rng.integers(0, components, size=m)
    lo = comp * block
    hi = np.where(comp == components - 1, n, lo + block)
    a = lo + (rng.random(m) * (hi - lo)).astype(np.int64)
    b = lo + (rng.random(m) * (hi - lo)).astype(np.int64)
    if weights == "dag_negative":
        rank = rng.permutation(n)
        a, b = a[a != b], b[a != b]
        swap = rank[a] > rank[b]
        a, b = np.where(swap, b, a), np.where(swap, a, b)
    if duplicates:
        pick = rng.integers(0, len(a), size=duplicates)
        a, b = np.concatenate([a, a[pick]]), np.concatenate([b, b[pick]])
    if self_loops:
        loop = rng.integers(0, n, size=self_loops)
        a, b = np.concatenate([a, loop]), np.concatenate([b, loop])
    if loop_only_vertex:
        a, b = np.append(a, n), np.append(b, n)
    order = rng.permutation(len(a))
    a, b = a[order], b[order]

    id_of = vertex_ids(n + 1, ids, seed=seed + 1, dtype=dtype)
    frame = pd.DataFrame({src: id_of[a], dst: id_of[b]})
    if weights is not None:
        values = random_weights(len(a), weights, rng)
        if weights == "dag_negative":
            values[a == b] = np.abs(values[a == b])  # a negative self-loop is a negative cycle
        frame[weight] = values
    return frame


def random_weights(count, kind, rng):
    if kind == "positive":
        return rng.uniform(0.5, 10.0, size=count)
    if kind == "nonnegative":
        return rng.integers(0, 5, size=count).astype(np.float64)
    if kind == "integer":
        return rng.integers(1, 10, size=count).astype(np.int64)
    if kind == "dag_negative":
        return rng.integers(-5, 11, size=count).astype(np.float64)
    raise ValueError(f"unknown weight kind {kind!r}")


def pick_sources(edges, count, *, seed, src="src"):
    """``count`` distinct vertex ids taken from the src column (so each has an out-edge)."""
    rng = np.random.default_rng(seed)
    candidates = np.unique(edges[src].to_numpy())
    return [v.item() for v in rng.choice(candidates, size=count, replace=False)]


def widest_source(edges, *, directed, src="src", dst="dst"):
    """The vertex id that reaches the most vertices (ties: the smallest id).

    Random DAGs reach little from a random vertex; tests of negative weights start here.
    """
    ids, matrix = to_csr(edges, directed=directed, src=src, dst=dst)
    reach = np.isfinite(csgraph.shortest_path(matrix, directed=True, unweighted=True)).sum(1)
    return ids[int(np.argmax(reach))].item()


# ---------------------------------------------------------------------------------------------
# The graph as SciPy sees it.


def to_csr(edges, *, directed, src="src", dst="dst", weight=None):
    """``(ids, matrix)``: sorted vertex ids and the n x n CSR matrix of lightest edges.

    Self-loops dropped unless negative (SciPy sees those as the negative cycles they are);
    parallel edges reduced to the lightest; undirected graphs get ``A[i, j] = A[j, i] = min``
    over both directions. Zero weights stay explicit entries,
    which csgraph treats as edges of length 0.
    """
    s = edges[src].to_numpy()
    d = edges[dst].to_numpy()
    ids = np.unique(np.concatenate([s, d]))
    n = len(ids)
    u = np.searchsorted(ids, s).astype(np.int64)
    v = np.searchsorted(ids, d).astype(np.int64)
    w = np.ones(len(u)) if weight is None else edges[weight].to_numpy(dtype=np.float64)
    keep = (u != v) | (w < 0)
    u, v, w = u[keep], v[keep], w[keep]
    if not directed:
        u, v, w = np.concatenate([u, v]), np.concatenate([v, u]), np.concatenate([w, w])
    lightest = (pd.DataFrame({"u": u, "v": v, "w": w})
                .groupby(["u", "v"], sort=True, as_index=False)["w"].min())
    matrix = sp.csr_matrix(
        (lightest["w"].to_numpy(), (lightest["u"].to_numpy(), lightest["v"].to_numpy())),
        shape=(n, n))
    assert matrix.nnz == len(lightest), "CSR conversion lost an explicit zero"
    return ids, matrix


def _source_index(ids, sources):
    sources = np.atleast_1d(np.asarray(sources))
    index = np.searchsorted(ids, sources)
    assert (index < len(ids)).all() and (ids[np.minimum(index, len(ids) - 1)] == sources).all()
    return index


def _nearest(ids, table):
    dist = np.min(np.atleast_2d(table), axis=0)
    dist[np.isinf(dist)] = np.nan
    return pd.Series(dist, index=pd.Index(ids, name="vertex"), name="distance")


def expected_bfs(edges, sources, *, directed, depth_limit=None, src="src", dst="dst"):
    """Hop distance from the nearest source (NaN if unreached or beyond ``depth_limit``)."""
    ids, matrix = to_csr(edges, directed=directed, src=src, dst=dst)
    index = _source_index(ids, sources)
    table = csgraph.shortest_path(matrix, directed=True, unweighted=True, indices=index)
    dist = _nearest(ids, table)
    # Cross-check the reachable set with breadth_first_order.
    reachable = np.zeros(len(ids), dtype=bool)
    for i in index:
        reachable[csgraph.breadth_first_order(matrix, i, directed=True,
                                              return_predecessors=False)] = True
    assert np.array_equal(reachable, dist.notna().to_numpy())
    if depth_limit is not None:
        dist[dist > depth_limit] = np.nan
    return dist


def expected_sssp(edges, sources, *, directed, src="src", dst="dst", weight="weight"):
    """Weighted distance from the nearest source (NaN if unreached).

    Dijkstra when every weight is non-negative, Bellman-Ford otherwise; raises
    ``scipy.sparse.csgraph.NegativeCycleError`` for a negative cycle reachable from a source.
    """
    ids, matrix = to_csr(edges, directed=directed, src=src, dst=dst, weight=weight)
    index = _source_index(ids, sources)
    method = "D" if (matrix.data >= 0).all() else "BF"
    table = csgraph.shortest_path(matrix, method=method, directed=True, indices=index)
    return _nearest(ids, table)


def expected_networkx(edges, sources, *, directed, src="src", dst="dst", weight=None):
    """The same distances from NetworkX (BFS hops when ``weight`` is None)."""
    import networkx as nx

    graph = nx.DiGraph() if directed else nx.Graph()
    ids = np.unique(np.concatenate([edges[src].to_numpy(), edges[dst].to_numpy()]))
    graph.add_nodes_from(v.item() for v in ids)
    frame = edges[[src, dst]].copy()
    frame["w"] = 1.0 if weight is None else edges[weight].astype(np.float64)
    frame = frame[(frame[src] != frame[dst]) | (frame["w"] < 0)]  # negative loops: unbounded
    if not directed:
        a, b = frame[src].to_numpy(), frame[dst].to_numpy()
        frame[src], frame[dst] = np.minimum(a, b), np.maximum(a, b)
    frame = frame.groupby([src, dst], as_index=False)["w"].min()
    graph.add_weighted_edges_from(
        (int(a), int(b), float(w)) for a, b, w in frame.itertuples(index=False))
    sources = [int(s) for s in np.atleast_1d(sources)]
    if weight is not None and (frame["w"] < 0).any():
        assert len(sources) == 1
        lengths = nx.single_source_bellman_ford_path_length(graph, sources[0])
    else:
        lengths = nx.multi_source_dijkstra_path_length(graph, set(sources))
    dist = pd.Series(np.nan, index=pd.Index(ids, name="vertex"), name="distance")
    dist.loc[list(lengths)] = list(lengths.values())
    return dist


# ---------------------------------------------------------------------------------------------
# Comparing a result with an expectation.


def result_distances(result):
    """The distance column of a computed pandas result as a float Series indexed by vertex."""
    dist = result["distance"].to_numpy(dtype=np.float64, na_value=np.nan)
    return pd.Series(dist, index=pd.Index(result["vertex"].to_numpy(), name="vertex"),
                     name="distance").sort_index()


def assert_distances(result, expected, *, exact=True):
    """Assert the result has exactly the expected vertices and distances (NaN = unreached)."""
    got = result_distances(result)
    assert got.index.is_unique, "result has repeated vertices"
    missing = expected.index.difference(got.index)
    extra = got.index.difference(expected.index)
    assert len(missing) == 0, f"vertices missing from the result: {list(missing[:5])}"
    assert len(extra) == 0, f"vertices not in the edge list: {list(extra[:5])}"
    got = got.reindex(expected.index)
    g, e = got.to_numpy(), expected.to_numpy()
    same_null = np.isnan(g) == np.isnan(e)
    if exact:
        close = same_null & ((g == e) | np.isnan(e))
    else:
        close = same_null & (np.isclose(g, e, rtol=1e-9, atol=1e-9) | np.isnan(e))
    if not close.all():
        i = int(np.argmin(close))
        raise AssertionError(
            f"vertex {expected.index[i]}: distance {g[i]}, expected {e[i]} "
            f"({int((~close).sum())} vertices differ)")
