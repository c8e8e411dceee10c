"""Graph.path and Graph.paths, bfs/sssp with parents=False, sssp with max_distance: against SciPy.

Every API test runs on the three execution paths of conftest.py's ``engine``: no client (one
owner: the kernels stop at the target), a 2-worker CPU cluster with the graph forced onto both
workers (the multi-owner path: a full traversal, parents gathered on the client) and the GPU.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.sparse import csgraph

import gpipe
from reference import random_edges, to_csr


def edge_weights(edges, *, directed, weight=None):
    """``{(u, v): lightest weight}`` over input ids, as gpipe sees the graph (both ways when
    undirected; explicit zero weights kept)."""
    ids, matrix = to_csr(edges, directed=directed, weight=weight)
    coo = matrix.tocoo()
    return {(_plain(ids[u]), _plain(ids[v])): w for u, v, w in zip(coo.row, coo.col, coo.data)}


def scipy_distances(edges, source, *, directed, weight=None):
    """``(ids, distances from source, predecessors)`` by SciPy (hops when ``weight`` is None)."""
    ids, matrix = to_csr(edges, directed=directed, weight=weight)
    index = int(np.searchsorted(ids, source))
    dist, pred = csgraph.dijkstra(matrix, directed=True, indices=index, unweighted=weight is None,
                                  return_predecessors=True)
    return ids, dist, pred


def assert_shortest_path(path, edges, source, target, *, directed, weight=None):
    """``path`` runs source -> target over existing edges and is as short as SciPy's."""
    ids, dist, _ = scipy_distances(edges, source, directed=directed, weight=weight)
    lookup = edge_weights(edges, directed=directed, weight=weight)
    assert path[0] == source and path[-1] == target
    steps = list(zip(path[:-1], path[1:]))
    assert all(step in lookup for step in steps), f"a step of {path} is not an edge"
    expected = dist[int(np.searchsorted(ids, target))]
    if weight is None:
        assert len(path) - 1 == expected
    else:
        assert math.isclose(sum(lookup[s] for s in steps), expected, rel_tol=1e-12, abs_tol=1e-12)


def reachable_targets(edges, source, *, directed, weight=None, count=3, seed=0):
    ids, dist, _ = scipy_distances(edges, source, directed=directed, weight=weight)
    reached = ids[np.isfinite(dist) & (dist > 0)]
    rng = np.random.default_rng(seed)
    return [_plain(v) for v in rng.choice(reached, size=min(count, reached.size), replace=False)]


def _plain(value):
    """A NumPy scalar as the Python int or str gpipe returns."""
    return value.item() if hasattr(value, "item") else value


def unreached_target(edges, source, *, directed):
    ids, dist, _ = scipy_distances(edges, source, directed=directed)
    return _plain(ids[np.isinf(dist)][0])


@pytest.fixture(scope="module")
def two_components():
    """Weighted random edges in two components (so some targets are unreachable)."""
    return random_edges(60, 220, seed=5, weights="positive", ids="shuffled", components=2)


@pytest.mark.parametrize("directed", [True, False], ids=["directed", "undirected"])
@pytest.mark.parametrize("weighted", [True, False], ids=["weighted", "hops"])
def test_path_is_a_shortest_path(engine, two_components, directed, weighted):
    edges = two_components
    weight = "weight" if weighted else None
    g = gpipe.Graph.from_edges(engine.frame(edges), directed=directed, weight=weight)
    source = int(edges["src"].iloc[0])
    for target in reachable_targets(edges, source, directed=directed, weight=weight):
        path = g.path(source, target)
        assert_shortest_path(path, edges, source, target, directed=directed, weight=weight)
    assert g.path(source, source) == [source]


def test_unweighted_path_on_a_weighted_graph_counts_hops(engine, two_components):
    edges = two_components
    g = gpipe.Graph.from_edges(engine.frame(edges), weight="weight")
    source = int(edges["src"].iloc[1])
    for target in reachable_targets(edges, source, directed=True, seed=1):
        path = g.path(source, target, unweighted=True)
        assert_shortest_path(path, edges, source, target, directed=True)


@pytest.mark.parametrize("weighted", [True, False], ids=["weighted", "hops"])
def test_unreachable_target_raises_no_path(engine, two_components, weighted):
    edges = two_components
    g = gpipe.Graph.from_edges(engine.frame(edges), weight="weight" if weighted else None)
    source = int(edges["src"].iloc[0])
    target = unreached_target(edges, source, directed=True)
    with pytest.raises(gpipe.NoPath, match=f"source {source}.*target {target}"):
        g.path(source, target)
    assert len(g.paths(source, [target]).compute()) == 0


def test_unknown_source_or_target_is_an_input_error(engine, two_components):
    edges = two_components
    g = gpipe.Graph.from_edges(engine.frame(edges))
    source, absent = int(edges["src"].iloc[0]), 10**9
    with pytest.raises(gpipe.InputError, match=f"target vertex {absent}"):
        g.path(source, absent)
    with pytest.raises(gpipe.InputError, match=f"source vertex {absent}"):
        g.path(absent, source)
    with pytest.raises(gpipe.InputError, match="target 'x' is a string"):
        g.paths(source, [source, "x"])
    with pytest.raises(gpipe.InputError, match="one source"):
        g.path([source, source], source)


def test_string_ids(engine):
    numbers = random_edges(40, 120, seed=8)
    edges = pd.DataFrame({"src": "v" + numbers["src"].astype(str),
                          "dst": "v" + numbers["dst"].astype(str)})
    g = gpipe.Graph.from_edges(engine.frame(edges), directed=False)
    source = edges["src"].iloc[0]
    for target in reachable_targets(edges, source, directed=False):
        path = g.path(source, target)
        assert all(isinstance(v, str) for v in path)
        assert_shortest_path(path, edges, source, target, directed=False)


@pytest.mark.parametrize("directed", [True, False], ids=["directed", "undirected"])
def test_paths_frame_matches_scipy_predecessors(engine, two_components, directed):
    """Random real weights: shortest paths are unique, so SciPy's predecessor chains are the
    only right answer, row for row."""
    edges = two_components
    g = gpipe.Graph.from_edges(engine.frame(edges), directed=directed, weight="weight")
    source = int(edges["src"].iloc[2])
    ids, dist, pred = scipy_distances(edges, source, directed=directed, weight="weight")
    targets = [v.item() for v in ids[::3]]
    rows = engine.run(g.paths(source, targets))
    assert list(rows.columns) == ["target", "step", "vertex"]
    expected = []
    for target in targets:
        at = int(np.searchsorted(ids, target))
        if not np.isfinite(dist[at]):
            continue
        chain = [at]
        while chain[-1] != int(np.searchsorted(ids, source)):
            chain.append(int(pred[chain[-1]]))
        expected += [(target, step, ids[v].item()) for step, v in enumerate(reversed(chain))]
    got = [(int(t), int(s), int(v)) for t, s, v in rows.itertuples(index=False)]
    assert got == expected


def test_paths_of_a_bfs_step_along_edges(engine, two_components):
    edges = two_components
    g = gpipe.Graph.from_edges(engine.frame(edges), directed=False)
    source = int(edges["src"].iloc[0])
    targets = reachable_targets(edges, source, directed=False, count=6, seed=3)
    rows = engine.run(g.paths(source, targets))
    for target, path in rows.groupby("target", sort=False):
        assert path["step"].tolist() == list(range(len(path)))
        assert_shortest_path([int(v) for v in path["vertex"]], edges, source, int(target),
                             directed=False)
    assert set(int(t) for t in rows["target"]) == set(targets)


@pytest.mark.parametrize("kind", ["bfs", "sssp"])
def test_parents_false_gives_the_same_distances_without_a_parent_column(engine, two_components, kind):
    edges = two_components
    g = gpipe.Graph.from_edges(engine.frame(edges), weight="weight")
    source = int(edges["src"].iloc[0])
    query = g.bfs if kind == "bfs" else g.sssp
    without = query(source, parents=False)
    assert list(without.columns) == ["vertex", "distance"]
    full = engine.run(query(source)).sort_values("vertex").reset_index(drop=True)
    short = engine.run(without).sort_values("vertex").reset_index(drop=True)
    assert list(short.columns) == ["vertex", "distance"]
    pd.testing.assert_frame_equal(short, full[["vertex", "distance"]])


@pytest.mark.parametrize("limit", [0.0, 3.0, 7.0, math.inf])
def test_max_distance_matches_scipy_limit(engine, limit):
    edges = random_edges(50, 200, seed=9, weights="integer")  # ties at the limit
    g = gpipe.Graph.from_edges(engine.frame(edges), weight="weight")
    source = int(edges["src"].iloc[0])
    ids, matrix = to_csr(edges, directed=True, weight="weight")
    expected = csgraph.dijkstra(matrix, indices=int(np.searchsorted(ids, source)), limit=limit)
    result = engine.run(g.sssp(source, max_distance=limit)).sort_values("vertex")
    got = result["distance"].to_numpy(dtype=np.float64, na_value=np.nan)
    np.testing.assert_array_equal(result["vertex"].to_numpy(dtype=np.int64), ids)
    np.testing.assert_array_equal(np.nan_to_num(got, nan=np.inf), expected)
    reached = result["parent"].notna().to_numpy()
    assert (np.isfinite(got) | ~reached).all(), "an unreached vertex kept a parent"


@pytest.mark.parametrize("bad", [-1.0, float("nan"), "3", True])
def test_bad_max_distance_or_parents_is_an_input_error(bad):
    edges = random_edges(10, 20, seed=1, weights="positive")
    g = gpipe.Graph.from_edges(edges, weight="weight")
    with pytest.raises(gpipe.InputError, match="max_distance"):
        g.sssp(int(edges["src"].iloc[0]), max_distance=bad)
    with pytest.raises(gpipe.InputError, match="parents"):
        g.bfs(int(edges["src"].iloc[0]), parents="no")


@pytest.mark.multigpu
def test_path_over_two_gpus(multigpu_engine, two_components):
    edges = two_components
    g = gpipe.Graph.from_edges(multigpu_engine.frame(edges), weight="weight")
    assert g.num_partitions == 2
    source = int(edges["src"].iloc[0])
    for target in reachable_targets(edges, source, directed=True, weight="weight"):
        assert_shortest_path(g.path(source, target), edges, source, target, directed=True,
                             weight="weight")
    assert list(g.sssp(source, parents=False, max_distance=5.0).columns) == ["vertex", "distance"]
