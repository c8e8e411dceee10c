"""gpipe.tools.verify: accepts correct trees, rejects planted errors and names the bad vertex.

The hand-made graph (directed unless a test says otherwise)::

    0 -> 1 (1)    0 -> 2 (4)    0 -> 2 (2, the lighter duplicate)
    1 -> 3 (2)    2 -> 3 (1)    3 -> 4 (3)    5 -> 6 (1)    7 -> 7 (1, self-loop only)

BFS from 0: 0:0, 1:1, 2:1, 3:2, 4:3; 5, 6, 7 unreached.
SSSP from 0: 0:0, 1:1, 2:2, 3:3, 4:6; 5, 6, 7 unreached.

Every test runs under three id relabellings (identity, sparse int64, negative), so the
verifier's renumbering is exercised and messages name the relabelled id.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from scipy.sparse import csgraph

import reference
from gpipe.tools.verify import check_bfs_tree, check_sssp_tree

pytestmark = pytest.mark.timeout(60)

NA = None

EDGES = pd.DataFrame({
    "src":    [0, 0, 0, 1, 2, 3, 5, 7],
    "dst":    [1, 2, 2, 3, 3, 4, 6, 7],
    "weight": [1., 4., 2., 2., 1., 3., 1., 1.],
})

BFS = {0: (0, NA), 1: (1, 0), 2: (1, 0), 3: (2, 1), 4: (3, 3), 5: (NA, NA), 6: (NA, NA),
       7: (NA, NA)}
SSSP = {0: (0, NA), 1: (1, 0), 2: (2, 0), 3: (3, 2), 4: (6, 3), 5: (NA, NA), 6: (NA, NA),
        7: (NA, NA)}

RELABEL = {
    "identity": lambda v: v,
    "sparse": lambda v: 10**15 + 7919 * v,
    "negative": lambda v: 5 - 3 * v,
}


@pytest.fixture(params=sorted(RELABEL))
def relabel(request):
    return RELABEL[request.param]


def edges_of(frame, relabel):
    out = frame.copy()
    out["src"] = np.array([relabel(int(v)) for v in frame["src"]], dtype=np.int64)
    out["dst"] = np.array([relabel(int(v)) for v in frame["dst"]], dtype=np.int64)
    return out


def result_of(rows, relabel, *, bfs):
    """A result frame from {vertex: (distance, parent)} with pandas nullable columns."""
    vertex = [relabel(v) for v in rows]
    distance = [d for d, _ in rows.values()]
    parent = [NA if p is NA else relabel(p) for _, p in rows.values()]
    return pd.DataFrame({
        "vertex": np.array(vertex, dtype=np.int64),
        "distance": pd.array(distance, dtype="Int64" if bfs else "Float64"),
        "parent": pd.array(parent, dtype="Int64"),
    })


def check_bfs(rows, relabel, sources=(0,), edges=EDGES, directed=True, **kw):
    check_bfs_tree(edges_of(edges, relabel), result_of(rows, relabel, bfs=True),
                   [relabel(s) for s in sources], directed=directed, **kw)


def check_sssp(rows, relabel, sources=(0,), edges=EDGES, directed=True):
    check_sssp_tree(edges_of(edges, relabel), result_of(rows, relabel, bfs=False),
                    [relabel(s) for s in sources], directed=directed,
                    src="src", dst="dst", weight="weight")


def fails_at(vertex_id, *words):
    """pytest.raises for an AssertionError naming ``vertex_id`` (as a whole number)."""
    pattern = rf"(?<![\d]){re.escape(str(vertex_id))}(?![\d])"
    if words:
        pattern = rf"(?s)(?=.*{pattern})" + "".join(rf"(?=.*{re.escape(w)})" for w in words)
    return pytest.raises(AssertionError, match=pattern)


def changed(rows, **updates):
    out = dict(rows)
    for key, value in updates.items():
        out[int(key.lstrip("v"))] = value
    return out


# ---------------------------------------------------------------------------------------------
# Correct trees pass.


def test_correct_bfs_passes(relabel):
    check_bfs(BFS, relabel)
    check_bfs(changed(BFS, v3=(2, 2)), relabel)  # the other shortest parent is fine too


def test_correct_sssp_passes(relabel):
    check_sssp(SSSP, relabel)
    check_sssp(changed(SSSP, v3=(3, 1)), relabel)  # 1 + 2 == 2 + 1


def test_multi_source_passes(relabel):
    rows = changed(BFS, v5=(0, NA), v6=(1, 5))
    check_bfs(rows, relabel, sources=(0, 5))
    check_sssp(changed(SSSP, v5=(0, NA), v6=(1, 5)), relabel, sources=(0, 5))


def test_depth_limit_passes(relabel):
    check_bfs(changed(BFS, v4=(NA, NA)), relabel, depth_limit=2)
    check_bfs(changed(BFS, v1=(NA, NA), v2=(NA, NA), v3=(NA, NA), v4=(NA, NA)), relabel,
              depth_limit=0)
    check_bfs(BFS, relabel, depth_limit=3)


def test_undirected_uses_reverse_edges(relabel):
    edges = pd.DataFrame({"src": [0, 2], "dst": [1, 1], "weight": [1.0, 1.0]})
    rows = {0: (0, NA), 1: (1, 0), 2: (2, 1)}
    check_bfs(rows, relabel, edges=edges, directed=False)
    check_sssp(rows, relabel, edges=edges, directed=False)
    with fails_at(relabel(2), "no edge"):
        check_bfs(rows, relabel, edges=edges, directed=True)
    with fails_at(relabel(2), "no edge"):
        check_sssp(rows, relabel, edges=edges, directed=True)


def test_source_only_in_self_loop_passes(relabel):
    check_bfs(changed(BFS, v7=(0, NA)), relabel, sources=(0, 7))


def test_plain_numpy_dtypes_and_dask_frames_pass():
    result = pd.DataFrame({"vertex": np.arange(8),
                           "distance": [0.0, 1, 2, 3, 6, np.nan, np.nan, np.nan],
                           "parent": [np.nan, 0, 0, 2, 3, np.nan, np.nan, np.nan]})
    check_sssp_tree(EDGES, result, 0, directed=True, src="src", dst="dst", weight="weight")
    import dask.dataframe as dd

    check_sssp_tree(dd.from_pandas(EDGES, npartitions=2), dd.from_pandas(result, npartitions=3),
                    [0], directed=True, src="src", dst="dst", weight="weight")


def test_custom_column_names():
    edges = EDGES.rename(columns={"src": "a", "dst": "b", "weight": "cost"})
    result = result_of(SSSP, RELABEL["identity"], bfs=False)
    check_sssp_tree(edges, result, [0], directed=True, src="a", dst="b", weight="cost")
    check_bfs_tree(edges, result_of(BFS, RELABEL["identity"], bfs=True), [0], directed=True,
                   src="a", dst="b")


def test_int32_ids_pass():
    edges = EDGES.astype({"src": "int32", "dst": "int32"})
    result = result_of(BFS, RELABEL["identity"], bfs=True).astype(
        {"vertex": "int32", "parent": "Int32"})
    check_bfs_tree(edges, result, [0], directed=True)


# ---------------------------------------------------------------------------------------------
# Planted errors fail and name the vertex.


def test_wrong_parent_no_edge(relabel):
    with fails_at(relabel(4), "no edge"):
        check_bfs(changed(BFS, v4=(3, 1)), relabel)  # 1 -> 4 does not exist
    with fails_at(relabel(4), "no edge"):
        check_sssp(changed(SSSP, v4=(6, 2)), relabel)


def test_wrong_parent_distances_do_not_add_up(relabel):
    with fails_at(relabel(3)):
        check_bfs(changed(BFS, v3=(2, 4)), relabel)  # 4 -> 3 is no edge either
    rows = changed(BFS, v1=(1, 0))
    with fails_at(relabel(1)):
        # undirected: 3 - 1 is an edge, but 2 + 1 != 1
        check_bfs(changed(rows, v1=(1, 3)), relabel, directed=False)


def test_parent_reversed_edge_in_directed_graph(relabel):
    # 3's parent 4: only 3 -> 4 exists.
    rows = changed(SSSP, v3=(9, 4))
    with fails_at(relabel(3), "no edge"):
        check_sssp(rows, relabel)


def test_wrong_distance(relabel):
    with fails_at(relabel(4)):
        check_bfs(changed(BFS, v4=(4, 3)), relabel)
    with fails_at(relabel(4)):
        check_sssp(changed(SSSP, v4=(7, 3)), relabel)
    with fails_at(relabel(2)):
        check_bfs(changed(BFS, v2=(2, 0)), relabel)


def test_heavier_duplicate_is_not_the_edge_weight(relabel):
    # 0 -> 2 weighs 2 (lightest of 4 and 2): a tree claiming 4 is inconsistent.
    rows = changed(SSSP, v2=(4, 0), v3=(3, 1))
    with fails_at(relabel(2), "lightest"):
        check_sssp(rows, relabel)


def test_not_shortest_but_consistent(relabel):
    edges = pd.DataFrame({"src": [0, 1, 0], "dst": [1, 2, 2], "weight": [1.0, 1.0, 5.0]})
    with fails_at(relabel(2)):
        check_sssp({0: (0, NA), 1: (1, 0), 2: (5, 0)}, relabel, edges=edges)
    with fails_at(relabel(2)):
        check_bfs({0: (0, NA), 1: (1, 0), 2: (2, 1)}, relabel, edges=edges)
    check_bfs({0: (0, NA), 1: (1, 0), 2: (1, 0)}, relabel, edges=edges)
    check_sssp({0: (0, NA), 1: (1, 0), 2: (2, 1)}, relabel, edges=edges)


def test_parent_cycle(relabel):
    # Zero-weight cycle 1 <-> 2: a tree pointing 1 -> 2 -> 1 satisfies every local check.
    edges = pd.DataFrame({"src": [0, 1, 2, 2], "dst": [1, 2, 1, 3],
                          "weight": [1.0, 0.0, 0.0, 1.0]})
    good = {0: (0, NA), 1: (1, 0), 2: (1, 1), 3: (2, 2)}
    check_sssp(good, relabel, edges=edges)
    bad = changed(good, v1=(1, 2))
    with pytest.raises(AssertionError, match="cycle"):
        check_sssp(bad, relabel, edges=edges)


def test_long_parent_cycle_is_found():
    # A 300-vertex zero-weight ring hanging off the source; the pointers close the ring.
    n = 300
    ring = np.arange(1, n + 1)
    edges = pd.DataFrame({"src": np.concatenate([[0], ring]),
                          "dst": np.concatenate([[1], np.roll(ring, -1)]),
                          "weight": np.concatenate([[1.0], np.zeros(n)])})
    parent = pd.array([None] + list(np.roll(ring, 1)), dtype="Int64")
    result = pd.DataFrame({"vertex": np.arange(n + 1), "distance": [0.0] + [1.0] * n,
                           "parent": parent})
    with pytest.raises(AssertionError, match="cycle"):
        check_sssp_tree(edges, result, [0], directed=True, src="src", dst="dst",
                        weight="weight")
    result["parent"] = pd.array([None, 0] + list(ring[:-1]), dtype="Int64")
    check_sssp_tree(edges, result, [0], directed=True, src="src", dst="dst", weight="weight")


def test_missing_row(relabel):
    rows = dict(BFS)
    del rows[7]
    with fails_at(relabel(7), "no row"):
        check_bfs(rows, relabel)


def test_extra_row(relabel):
    rows = changed(BFS, v99=(NA, NA))
    with fails_at(relabel(99), "not in the edge list"):
        check_bfs(rows, relabel)


def test_duplicate_row(relabel):
    edges = edges_of(EDGES, relabel)
    result = result_of(BFS, relabel, bfs=True)
    result = pd.concat([result, result.iloc[[4]]], ignore_index=True)
    with fails_at(relabel(4), "rows"):
        check_bfs_tree(edges, result, [relabel(0)], directed=True)


def test_source_must_be_zero_with_null_parent(relabel):
    with fails_at(relabel(0), "source"):
        check_bfs(changed(BFS, v0=(1, NA)), relabel)
    with fails_at(relabel(0), "source"):
        check_sssp(changed(SSSP, v0=(0, 1)), relabel)
    with fails_at(relabel(5), "source"):
        check_bfs(BFS, relabel, sources=(0, 5))  # 5 is a source but left unreached


def test_reached_vertex_needs_a_parent(relabel):
    with fails_at(relabel(2), "no parent"):
        check_bfs(changed(BFS, v2=(1, NA)), relabel)


def test_unreached_vertex_has_no_parent(relabel):
    with fails_at(relabel(6), "unreached"):
        check_bfs(changed(BFS, v6=(NA, 5)), relabel)


def test_reached_vertex_with_unreached_parent(relabel):
    with fails_at(relabel(6), "unreached"):
        check_sssp(changed(SSSP, v6=(1, 5)), relabel)


def test_unreached_but_has_reached_in_neighbour(relabel):
    with fails_at(relabel(4), "unreached"):
        check_bfs(changed(BFS, v4=(NA, NA)), relabel)
    with fails_at(relabel(4), "unreached"):
        check_sssp(changed(SSSP, v4=(NA, NA)), relabel)


def test_depth_limit_exceeded(relabel):
    with fails_at(relabel(4), "depth_limit"):
        check_bfs(BFS, relabel, depth_limit=2)
    with fails_at(relabel(3), "unreached"):  # stopped one level early
        check_bfs(changed(BFS, v3=(NA, NA), v4=(NA, NA)), relabel, depth_limit=2)


def test_infinite_distance_is_not_null(relabel):
    edges = edges_of(EDGES, relabel)
    result = result_of(SSSP, relabel, bfs=False)
    result["distance"] = result["distance"].astype("float64").fillna(np.inf)
    with fails_at(min(relabel(v) for v in (5, 6, 7)), "infinite"):
        check_sssp_tree(edges, result, [relabel(0)], directed=True, src="src", dst="dst",
                        weight="weight")


def test_bfs_distance_must_be_whole(relabel):
    edges = edges_of(EDGES, relabel)
    result = result_of(BFS, relabel, bfs=True)
    result["distance"] = result["distance"].astype("Float64")
    result.loc[1, "distance"] = 0.5
    with fails_at(relabel(1)):
        check_bfs_tree(edges, result, [relabel(0)], directed=True)


def test_parent_not_a_vertex(relabel):
    with fails_at(relabel(4)):
        check_bfs(changed(BFS, v4=(3, 42)), relabel)


# ---------------------------------------------------------------------------------------------
# Random graphs: SciPy's own trees pass, perturbed ones fail.


def scipy_tree(edges, sources, *, directed, weight):
    """A correct result frame built from SciPy's predecessors (multi-source Dijkstra, or
    Bellman-Ford for one source with negative weights)."""
    ids, matrix = reference.to_csr(edges, directed=directed, weight=weight)
    index = np.searchsorted(ids, np.atleast_1d(sources))
    if weight is None or (matrix.data >= 0).all():
        dist, pred, _ = csgraph.dijkstra(matrix, directed=True, indices=index, min_only=True,
                                         return_predecessors=True, unweighted=weight is None)
    else:
        (dist,), (pred,) = csgraph.bellman_ford(matrix, directed=True, indices=index,
                                                return_predecessors=True)
    reached = np.isfinite(dist)
    parent = pd.array(np.where(pred >= 0, ids[np.maximum(pred, 0)], 0), dtype="Int64")
    parent[pred < 0] = pd.NA
    distance = np.where(reached, dist, np.nan)
    return pd.DataFrame({
        "vertex": ids,
        "distance": pd.array(distance, dtype="Int64") if weight is None else distance,
        "parent": parent,
    })


CASES = [
    dict(n=300, m=900, directed=True, weights="positive", ids="sparse"),
    dict(n=300, m=600, directed=False, weights="nonnegative", ids="negative"),
    dict(n=300, m=900, directed=True, weights="dag_negative", ids="shuffled"),
    dict(n=400, m=500, directed=True, weights=None, ids="dense", components=3),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['weights']}-{c['ids']}")
@pytest.mark.parametrize("seed", [1, 2])
def test_scipy_trees_pass_and_perturbations_fail(case, seed):
    case = dict(case)
    directed = case.pop("directed")
    edges = reference.random_edges(seed=seed, duplicates=30, self_loops=5,
                                   loop_only_vertex=True, **case)
    weight = None if case["weights"] is None else "weight"
    if case["weights"] == "dag_negative":
        sources = [reference.widest_source(edges, directed=directed)]
    else:
        sources = reference.pick_sources(edges, 3, seed=seed)
    result = scipy_tree(edges, sources, directed=directed, weight=weight)

    def check(frame):
        if weight is None:
            check_bfs_tree(edges, frame, sources, directed=directed)
        else:
            check_sssp_tree(edges, frame, sources, directed=directed, src="src", dst="dst",
                            weight="weight")

    check(result)
    rng = np.random.default_rng(seed)
    movable = np.flatnonzero(result["parent"].notna().to_numpy())
    assert len(movable) > 10
    for row in rng.choice(movable, size=5, replace=False):
        bumped = result.copy()
        bumped.loc[row, "distance"] = bumped.loc[row, "distance"] + 1
        with pytest.raises(AssertionError):
            check(bumped)
        dropped = result.copy()
        dropped.loc[row, ["distance", "parent"]] = [pd.NA if weight is None else np.nan,
                                                    pd.NA]
        with pytest.raises(AssertionError):
            check(dropped)
        orphan = result.copy()
        orphan.loc[row, "parent"] = pd.NA
        with pytest.raises(AssertionError, match=str(result.loc[row, "vertex"])):
            check(orphan)


@pytest.mark.gpu
def test_cudf_frames_are_accepted():
    import cudf

    result = result_of(SSSP, RELABEL["identity"], bfs=False)
    check_sssp_tree(cudf.from_pandas(EDGES), cudf.from_pandas(result), [0], directed=True,
                    src="src", dst="dst", weight="weight")
    with pytest.raises(AssertionError):
        check_sssp_tree(cudf.from_pandas(EDGES),
                        cudf.from_pandas(result_of(changed(SSSP, v4=(7, 3)),
                                                   RELABEL["identity"], bfs=False)),
                        [0], directed=True, src="src", dst="dst", weight="weight")
