"""gpipe.bfs, gpipe.sssp, gpipe.Graph and gpipe.read_edges against SciPy, on every path.

Each test takes the ``engine`` fixture (tests/conftest.py), so it runs with no Dask client,
on a 2-worker LocalCluster, and (marked ``gpu``) on cuDF partitions. Every result is checked
four ways: the frame's columns, dtypes and partition type; the distances against
``scipy.sparse.csgraph`` (tests/reference.py); the parent tree with ``gpipe.tools.verify``; and the
row set (one row per vertex of the edge list).
"""

from __future__ import annotations

import os
import shutil

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import gpipe
import reference
from gpipe.io import validate
from gpipe.tools.verify import check_bfs_tree, check_sssp_tree

pytestmark = pytest.mark.timeout(180)


# ---------------------------------------------------------------------------------------------
# Running one query and checking everything about its result.


def check_frame(engine, result, *, id_dtype, kind):
    """Compute ``result``; check columns, partition type and dtypes; return it as pandas."""
    computed = engine.compute(result)
    assert list(computed.columns) == ["vertex", "distance", "parent"]
    assert list(result.columns) == ["vertex", "distance", "parent"]
    dtypes = computed.dtypes
    assert dtypes["vertex"] == np.dtype(id_dtype), (
        f"vertex dtype {dtypes['vertex']}, input ids are {id_dtype}")
    # gpipe's one dtype convention (README, "The result"): float64 distances for BFS and SSSP;
    # parents in the vertex dtype with nulls (pandas: its Arrow twin, which Dask's describe
    # and quantile take; cuDF: the plain dtype, with nulls).
    assert dtypes["distance"] == np.dtype("float64"), (
        f"{kind.upper()} distance dtype {dtypes['distance']}, expected float64")
    want_parent = np.dtype(id_dtype) if engine.gpu else pd.ArrowDtype(pa.from_numpy_dtype(np.dtype(id_dtype)))
    assert dtypes["parent"] == want_parent, f"parent dtype {dtypes['parent']}, expected {want_parent}"
    meta = result._meta.dtypes
    for column in computed.columns:
        assert str(meta[column]) == str(dtypes[column]), (
            f"column {column}: meta says {meta[column]}, partitions hold {dtypes[column]}")
    return engine.pandas(computed)


def run_bfs(engine, edges, sources, *, directed, depth_limit=None, npartitions=3,
            src="src", dst="dst"):
    """gpipe.bfs on ``edges`` (pandas, turned into the engine's frame); all checks; the result."""
    frame = engine.frame(edges, npartitions)
    result = gpipe.bfs(frame, sources, directed=directed, depth_limit=depth_limit,
                       src=src, dst=dst)
    out = check_frame(engine, result, id_dtype=edges[src].dtype, kind="bfs")
    expected = reference.expected_bfs(edges, sources, directed=directed,
                                      depth_limit=depth_limit, src=src, dst=dst)
    reference.assert_distances(out, expected)
    check_bfs_tree(edges, out, sources, directed=directed, depth_limit=depth_limit,
                   src=src, dst=dst)
    return out


def run_sssp(engine, edges, sources, *, directed, npartitions=3, src="src", dst="dst",
             weight="weight"):
    frame = engine.frame(edges, npartitions)
    result = gpipe.sssp(frame, sources, directed=directed, src=src, dst=dst, weight=weight)
    out = check_frame(engine, result, id_dtype=edges[src].dtype, kind="sssp")
    expected = reference.expected_sssp(edges, sources, directed=directed, src=src, dst=dst,
                                       weight=weight)
    reference.assert_distances(out, expected, exact=False)
    check_sssp_tree(edges, out, sources, directed=directed, src=src, dst=dst, weight=weight)
    return out


def chunks(frame, count):
    bounds = np.linspace(0, len(frame), count + 1).astype(int)
    return [frame.iloc[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def sorted_frame(frame):
    return frame.sort_values("vertex").reset_index(drop=True)


# ---------------------------------------------------------------------------------------------
# BFS.

BFS_CASES = {
    "directed": dict(graph=dict(n=400, m=1600), directed=True),
    "undirected": dict(graph=dict(n=400, m=600), directed=False),
    "dense-ids-with-holes": dict(graph=dict(n=1500, m=700), directed=False),
    "sparse-int64-ids": dict(graph=dict(n=600, m=2000, ids="sparse"), directed=True),
    "negative-ids": dict(graph=dict(n=400, m=700, ids="negative"), directed=False),
    "int32-ids": dict(graph=dict(n=400, m=1200, ids="shuffled", dtype="int32"), directed=True),
    "multi-source": dict(graph=dict(n=500, m=900, ids="sparse"), directed=True, sources=4),
    "duplicates-and-self-loops": dict(
        graph=dict(n=300, m=700, duplicates=300, self_loops=40, loop_only_vertex=True,
                   ids="negative"),
        directed=True),
    "components": dict(graph=dict(n=600, m=900, components=3, ids="sparse"), directed=False,
                       sources=2),
    "one-partition": dict(graph=dict(n=200, m=600), directed=True, npartitions=1),
    "many-partitions": dict(graph=dict(n=300, m=900, ids="shuffled"), directed=False,
                            npartitions=8),
}


@pytest.mark.parametrize("name", sorted(BFS_CASES))
def test_bfs_matches_scipy(engine, name):
    case = BFS_CASES[name]
    edges = reference.random_edges(seed=len(name), **case["graph"])
    sources = reference.pick_sources(edges, case.get("sources", 1), seed=7)
    if len(sources) == 1 and name != "multi-source":
        sources = sources[0]
    out = run_bfs(engine, edges, sources, directed=case["directed"],
                  npartitions=case.get("npartitions", 3))
    assert out["distance"].notna().sum() > 1, "degenerate case: nothing reached"


@pytest.mark.parametrize("depth_limit", [0, 1, 2])
@pytest.mark.parametrize("directed", [True, False], ids=["directed", "undirected"])
def test_bfs_depth_limit(engine, depth_limit, directed):
    edges = reference.random_edges(300, 500, seed=3, ids="sparse")
    sources = reference.pick_sources(edges, 2, seed=3)
    out = run_bfs(engine, edges, sources, directed=directed, depth_limit=depth_limit)
    reached = out.loc[out["distance"].notna(), "distance"]
    assert reached.max() == depth_limit
    if depth_limit == 0:
        assert sorted(out.loc[out["distance"].notna(), "vertex"]) == sorted(sources)


def test_bfs_depth_limit_beyond_eccentricity_changes_nothing(engine):
    edges = reference.random_edges(200, 400, seed=5)
    source = reference.pick_sources(edges, 1, seed=5)[0]
    full = run_bfs(engine, edges, source, directed=True)
    limited = run_bfs(engine, edges, source, directed=True, depth_limit=10_000)
    # Parents may differ between runs (any valid BFS parent); both trees are checked by run_bfs.
    columns = ["vertex", "distance"]
    pd.testing.assert_frame_equal(sorted_frame(full)[columns], sorted_frame(limited)[columns])


@pytest.mark.parametrize("limit", [2**63, 2**31, -1, True, 2.0, np.int64(-2), np.uint64(2**63), "3"],
                         ids=["2**63", "2**31", "negative", "bool", "float", "np.int64", "np.uint64", "str"])
def test_bfs_depth_limits_out_of_range_fail_alike_with_any_owners(cpu_engine, limit):
    """The one check of gpipe.io.validate.depth_limit, with one owner (local) and two (cluster):
    the same InputError and message, from Graph.bfs and, before its build, from gpipe.bfs."""
    edges = reference.random_edges(60, 120, seed=8)
    source = int(edges["src"].iloc[0])
    frame = cpu_engine.frame(edges)
    graph = gpipe.Graph.from_edges(frame)
    message = f"depth_limit must be None or an integer from 0 to 2147483647, not {limit!r}"
    with pytest.raises(gpipe.InputError) as raised:
        graph.bfs(source, depth_limit=limit)
    assert str(raised.value) == message
    built = []
    real = gpipe.Graph.from_edges.__func__

    def from_edges(cls, *args, **kwargs):
        built.append(True)
        return real(cls, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(gpipe.Graph, "from_edges", classmethod(from_edges))
        with pytest.raises(gpipe.InputError, match="depth_limit must be") as raised:
            gpipe.bfs(frame, source, depth_limit=limit)
    assert str(raised.value) == message and built == []


def test_bfs_the_largest_depth_limit_is_no_limit(engine):
    """2**31 - 1 reaches the kernels as it is (an int32 on the GPU) and limits nothing."""
    edges = reference.random_edges(100, 200, seed=9)
    source = reference.pick_sources(edges, 1, seed=9)[0]
    out = run_bfs(engine, edges, source, directed=True, depth_limit=2**31 - 1)
    expected = reference.expected_bfs(edges, [source], directed=True)
    pd.testing.assert_series_equal(reference.result_distances(out), expected.sort_index(),
                                   check_exact=False)


def test_bfs_hand_made(engine):
    """A path, a branch, an unreachable pair and a vertex seen only in a self-loop."""
    edges = pd.DataFrame({"src": [10, 20, 20, 30, 50, 70], "dst": [20, 30, 40, 40, 60, 70]})
    out = sorted_frame(run_bfs(engine, edges, 10, directed=True))
    assert out["vertex"].tolist() == [10, 20, 30, 40, 50, 60, 70]
    assert out["distance"].iloc[:4].tolist() == [0, 1, 2, 2]
    assert out["distance"].iloc[4:].isna().all()
    assert out["parent"].iloc[0:1].isna().all() and out["parent"].iloc[4:].isna().all()
    assert out["parent"].iloc[1:4].tolist() == [10, 20, 20]
    # Undirected from 40: 20 and 30 at 1, 10 at 2.
    out = sorted_frame(run_bfs(engine, edges, 40, directed=False))
    assert out["distance"].iloc[:4].tolist() == [2, 1, 1, 0]


def test_self_loop_only_vertex(engine):
    edges = pd.DataFrame({"src": [1, 2, 9], "dst": [2, 3, 9]})
    out = sorted_frame(run_bfs(engine, edges, 1, directed=True))
    assert out["vertex"].tolist() == [1, 2, 3, 9]
    assert out["distance"].isna().tolist() == [False, False, False, True]
    out = sorted_frame(run_bfs(engine, edges, [1, 9], directed=True))
    row = out[out["vertex"] == 9]
    assert row["distance"].tolist() == [0] and row["parent"].isna().all()
    out = sorted_frame(run_sssp(engine, edges.assign(weight=[1.0, 2.0, 5.0]), 9,
                                directed=True))
    assert out["distance"].isna().tolist() == [True, True, True, False]


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "uint16", "uint32", "uint64"])
def test_id_dtype_is_kept(engine, dtype):
    edges = reference.random_edges(100, 300, seed=11, ids="shuffled", dtype=dtype)
    source = reference.pick_sources(edges, 1, seed=11)[0]
    run_bfs(engine, edges, source, directed=False)
    run_sssp(engine, edges.assign(weight=np.linspace(1, 2, len(edges))), source, directed=True)


def test_extreme_int64_ids(engine):
    ids = np.array([np.iinfo(np.int64).min, -1, 0, 1, 2**40, np.iinfo(np.int64).max])
    edges = pd.DataFrame({"src": ids[[0, 1, 2, 3, 4]], "dst": ids[[1, 2, 3, 4, 5]]})
    out = sorted_frame(run_bfs(engine, edges, int(ids[0]), directed=True))
    assert out["distance"].tolist() == [0, 1, 2, 3, 4, 5]
    assert out["parent"].iloc[1:].tolist() == ids[:-1].tolist()


def test_huge_uint64_ids(engine):
    top = np.iinfo(np.uint64).max
    ids = np.array([0, 5, 2**63, top - 1, top], dtype=np.uint64)
    edges = pd.DataFrame({"src": ids[[0, 1, 2, 3]], "dst": ids[[1, 2, 3, 4]],
                          "weight": [1.0, 2.0, 3.0, 4.0]})
    out = sorted_frame(run_sssp(engine, edges, int(ids[1]), directed=True))
    assert out["distance"].isna().tolist() == [True, False, False, False, False]
    assert out["distance"].iloc[1:].tolist() == [0.0, 2.0, 5.0, 9.0]


def mixed_id_edges(src_dtype, dst_dtype, ids, seed):
    """A random weighted edge list whose id columns have different dtypes. Negative ids of
    the ``ids="negative"`` style are kept out of an unsigned column: such an edge is turned
    round, or dropped when both its ends are negative."""
    edges = reference.random_edges(120, 400, seed=seed, weights="positive", ids=ids)
    unsigned = [c for c, d in (("src", src_dtype), ("dst", dst_dtype))
                if validate.numpy_dtype(pd.api.types.pandas_dtype(d)).kind == "u"]
    for column in unsigned:
        other = "dst" if column == "src" else "src"
        turn = edges[column] < 0
        edges.loc[turn, [column, other]] = edges.loc[turn, [other, column]].to_numpy()
        edges = edges[edges[column] >= 0]
    return edges.astype({"src": src_dtype, "dst": dst_dtype}).reset_index(drop=True)


def run_mixed_ids(engine, edges, id_dtype, *, directed, seed):
    """BFS and SSSP on ``edges``, whose result ids must come back as ``id_dtype``; compared
    with SciPy on the edge list with both id columns mapped to ``id_dtype``."""
    mapped = edges.astype({"src": id_dtype, "dst": id_dtype})
    source = reference.pick_sources(mapped, 1, seed=seed)[0]
    frame = engine.frame(edges)
    out = check_frame(engine, gpipe.bfs(frame, source, directed=directed), id_dtype=id_dtype,
                      kind="bfs")
    reference.assert_distances(out, reference.expected_bfs(mapped, source, directed=directed))
    check_bfs_tree(mapped, out, source, directed=directed)
    out = check_frame(engine, gpipe.sssp(frame, source, directed=directed), id_dtype=id_dtype,
                      kind="sssp")
    reference.assert_distances(out, reference.expected_sssp(mapped, source, directed=directed),
                               exact=False)
    check_sssp_tree(mapped, out, source, directed=directed)
    assert out["distance"].notna().sum() > 5, "degenerate case: nothing reached"
    return out


MIXED_ID_CASES = {  # src dtype, dst dtype, id style, the dtype that holds both
    "uint64-int64": ("uint64", "int64", "sparse", "int64"),
    "uint64-int64-negative": ("uint64", "int64", "negative", "int64"),
    "int64-uint64-negative": ("int64", "uint64", "negative", "int64"),
    "uint32-int64": ("uint32", "int64", "shuffled", "int64"),
    "uint8-int16": ("uint8", "int16", "shuffled", "int16"),
    "int16-uint16-negative": ("int16", "uint16", "negative", "int32"),
}


@pytest.mark.parametrize("name", sorted(MIXED_ID_CASES))
@pytest.mark.parametrize("directed", [True, False], ids=["directed", "undirected"])
def test_mixed_signed_and_unsigned_ids(engine, name, directed):
    src_dtype, dst_dtype, ids, common = MIXED_ID_CASES[name]
    edges = mixed_id_edges(src_dtype, dst_dtype, ids, seed=len(name))
    out = run_mixed_ids(engine, edges, common, directed=directed, seed=len(name))
    if ids == "negative":  # negative ids were reached, and came back exact (SciPy agreed)
        assert (out.loc[out["distance"].notna(), "vertex"] < 0).any()


@pytest.mark.parametrize("src_dtype, dst_dtype, common", [
    ("UInt64", "Int64", "int64"), ("Int64", "uint64", "int64"), ("uint8", "Int16", "int16"),
    ("UInt32", "int64", "int64"),
])
def test_mixed_pandas_extension_id_dtypes(cpu_engine, src_dtype, dst_dtype, common):
    """Extension dtypes mixed with each other or with NumPy ones: the NumPy dtype that holds
    both, ids exact."""
    edges = mixed_id_edges(src_dtype, dst_dtype, "negative", seed=5)
    run_mixed_ids(cpu_engine, edges, common, directed=True, seed=5)


def test_huge_uint64_ids_with_int64_ids(engine):
    """uint64 ids above int64's range and non-negative int64 ids share uint64, exactly."""
    top = np.iinfo(np.uint64).max
    edges = pd.DataFrame({"src": np.array([2**63 + 5, top, 3, 2**63 + 5], dtype=np.uint64),
                          "dst": np.array([3, 2**62, 7, 7], dtype=np.int64),
                          "weight": [1.0, 2.0, 4.0, 6.0]})
    out = sorted_frame(check_frame(engine, gpipe.sssp(engine.frame(edges, 2), 2**63 + 5),
                                   id_dtype="uint64", kind="sssp"))
    assert out["vertex"].tolist() == [3, 7, 2**62, 2**63 + 5, top]
    assert out["distance"].fillna(-1.0).tolist() == [1.0, 5.0, -1.0, 0.0, -1.0]
    assert out["parent"].tolist()[:2] == [2**63 + 5, 3] and out["parent"].iloc[2:].isna().all()
    mapped = edges.astype({"dst": "uint64"})
    reference.assert_distances(out, reference.expected_sssp(mapped, 2**63 + 5, directed=True))


def test_ids_no_integer_dtype_holds_raise(engine):
    """uint64 ids above 2**63 - 1 with negative int64 ids: neither int64 nor uint64 holds all."""
    edges = pd.DataFrame({"a": np.array([2**63, 1], dtype=np.uint64),
                          "b": np.array([-1, 2], dtype=np.int64)})
    frame = engine.frame(edges, 1)
    with pytest.raises(gpipe.InputError, match=r"'a' \(uint64\).*'b' \(int64\)"):
        gpipe.bfs(frame, 1, src="a", dst="b")


@pytest.mark.parametrize("form", ["int", "numpy-scalar", "list-of-one", "list"])
def test_source_forms(engine, form):
    edges = reference.random_edges(200, 500, seed=13, ids="negative", dtype="int32")
    a, b = reference.pick_sources(edges, 2, seed=13)
    source = {"int": a, "numpy-scalar": np.int32(a), "list-of-one": [a], "list": [a, b]}[form]
    sources = [a, b] if form == "list" else a
    out = run_bfs(engine, edges, source, directed=True)
    if form != "list":
        reference.assert_distances(
            out, reference.expected_bfs(edges, sources, directed=True))


def test_networkx_agrees(engine):
    edges = reference.random_edges(150, 400, seed=17, ids="negative", weights="positive",
                                   duplicates=50, self_loops=5)
    sources = reference.pick_sources(edges, 2, seed=17)
    for directed in (True, False):
        out = run_bfs(engine, edges, sources, directed=directed)
        reference.assert_distances(
            out, reference.expected_networkx(edges, sources, directed=directed))
        out = run_sssp(engine, edges, sources, directed=directed)
        reference.assert_distances(
            out, reference.expected_networkx(edges, sources, directed=directed,
                                             weight="weight"), exact=False)


# ---------------------------------------------------------------------------------------------
# SSSP.

SSSP_CASES = {
    "directed-positive-sparse-ids": dict(
        graph=dict(n=500, m=2000, weights="positive", ids="sparse"), directed=True),
    "undirected-negative-ids": dict(
        graph=dict(n=400, m=800, weights="positive", ids="negative"), directed=False),
    "zero-weights-duplicates-self-loops": dict(
        graph=dict(n=300, m=900, weights="nonnegative", duplicates=300, self_loops=30,
                   loop_only_vertex=True), directed=True),
    "zero-weights-undirected": dict(
        graph=dict(n=300, m=600, weights="nonnegative", ids="shuffled"), directed=False),
    "int32-ids": dict(
        graph=dict(n=300, m=900, weights="positive", ids="shuffled", dtype="int32"),
        directed=False),
    "multi-source": dict(
        graph=dict(n=500, m=1000, weights="positive", ids="sparse"), directed=True, sources=3),
    "components": dict(
        graph=dict(n=600, m=1000, weights="positive", components=3), directed=False,
        sources=2),
    "negative-weights-dag": dict(
        graph=dict(n=400, m=1600, weights="dag_negative", ids="sparse"), directed=True,
        widest=True),
    "negative-weights-duplicates": dict(
        graph=dict(n=300, m=1000, weights="dag_negative", duplicates=300, self_loops=20,
                   ids="negative"), directed=True, widest=True),
    "dense-ids-many-partitions": dict(
        graph=dict(n=400, m=1500, weights="positive"), directed=True, npartitions=7),
}


def sssp_case(name):
    """``(case, edges, sources)`` of ``SSSP_CASES[name]``: its graph and its sources, the widest
    one (an id) where the case says ``widest``, else a list of ``case["sources"]`` (default 1)."""
    case = SSSP_CASES[name]
    edges = reference.random_edges(seed=len(name), **case["graph"])
    if case.get("widest"):
        return case, edges, reference.widest_source(edges, directed=case["directed"])
    return case, edges, reference.pick_sources(edges, case.get("sources", 1), seed=9)


@pytest.mark.parametrize("name", sorted(SSSP_CASES))
def test_sssp_matches_scipy(engine, name):
    case, edges, sources = sssp_case(name)
    if not case.get("widest") and len(sources) == 1:
        sources = sources[0]
    out = run_sssp(engine, edges, sources, directed=case["directed"],
                   npartitions=case.get("npartitions", 3))
    assert out["distance"].notna().sum() > 5, "degenerate case: nothing reached"
    if case["graph"]["weights"] == "dag_negative":
        assert (out["distance"] < 0).any(), "degenerate case: no negative distance"


def test_sssp_hand_made(engine):
    edges = pd.DataFrame({"src": [0, 0, 0, 1, 2, 3, 5], "dst": [1, 2, 2, 3, 3, 4, 6],
                          "weight": [1.0, 4.0, 2.0, 2.0, 1.0, 3.0, 1.0]})
    out = sorted_frame(run_sssp(engine, edges, 0, directed=True))
    assert out["distance"].iloc[:5].tolist() == [0.0, 1.0, 2.0, 3.0, 6.0]
    assert out["distance"].iloc[5:].isna().all() and out["parent"].iloc[5:].isna().all()
    assert out["parent"].iloc[[1, 2, 4]].tolist() == [0, 0, 3]
    assert out["parent"].iloc[3] in (1, 2)


def test_sssp_integer_weight_column(engine):
    edges = reference.random_edges(300, 900, seed=19, weights="integer", ids="sparse")
    assert edges["weight"].dtype == np.int64
    source = reference.pick_sources(edges, 1, seed=19)[0]
    run_sssp(engine, edges, source, directed=True)


def test_custom_column_names(engine):
    edges = reference.random_edges(300, 900, seed=23, weights="positive", ids="negative",
                                   src="a", dst="b", weight="cost")
    edges["unrelated"] = 1.5
    source = reference.pick_sources(edges, 1, seed=23, src="a")[0]
    run_bfs(engine, edges, source, directed=True, src="a", dst="b")
    run_sssp(engine, edges, source, directed=False, src="a", dst="b", weight="cost")


def negative_cycle_graph():
    """A DAG of negative and positive weights, plus a back edge 3 -> 1 closing a cycle of
    weight -1; vertex 0 reaches it, vertex 10 (in its own component) does not."""
    return pd.DataFrame({
        "src": [0, 1, 2, 3, 3, 10, 11],
        "dst": [1, 2, 3, 4, 1, 11, 12],
        "weight": [1.0, -2.0, 4.0, 1.0, -3.0, 1.0, -1.0],
    })


def with_edge(edges, src, dst, weight):
    """``edges`` plus one row, keeping every column's dtype (row enlargement may upcast)."""
    row = pd.DataFrame({"src": [src], "dst": [dst], "weight": [weight]}).astype(edges.dtypes.to_dict())
    return pd.concat([edges, row], ignore_index=True)


def raises_in_call_or_compute(error, fn, match=None):
    with pytest.raises(error, match=match):
        result = fn()
        result.compute()


def test_reachable_negative_cycle_raises(engine):
    frame = engine.frame(negative_cycle_graph(), npartitions=2)
    raises_in_call_or_compute(gpipe.NegativeCycleError, lambda: gpipe.sssp(frame, 0))
    raises_in_call_or_compute(gpipe.NegativeCycleError, lambda: gpipe.sssp(frame, [10, 2]))


def test_messages_name_plain_ids_and_why_an_undirected_graph_has_a_negative_cycle(engine):
    """NumPy ids read as the user wrote them (``1``, not ``np.int64(1)``), and a negative
    cycle of an undirected graph says that its negative edge is one (u->v->u)."""
    edges = pd.DataFrame({"src": [10, 11, 12], "dst": [11, 12, 13], "weight": [1.0, -1.0, 2.0]})
    frame = engine.frame(edges, npartitions=1)
    for call in (lambda: gpipe.sssp_each(frame, [1, 2, 3]), lambda: gpipe.bfs_each(frame, np.array([10, 1])),
                 lambda: gpipe.bfs(frame, np.int64(1)), lambda: gpipe.sssp(frame, [np.int64(10), np.int64(1)])):
        raises_in_call_or_compute(gpipe.InputError, call, match=r"^source vertex 1 is not in the graph$")
    hint = r"the graph is undirected, so each edge of negative weight u-v is itself a negative cycle \(u->v->u\)"
    for call in (lambda: gpipe.sssp(frame, 10, directed=False), lambda: gpipe.sssp_each(frame, [10], directed=False)):
        raises_in_call_or_compute(gpipe.NegativeCycleError, call, match=hint)
    with pytest.raises(gpipe.NegativeCycleError) as directed:
        gpipe.sssp(engine.frame(negative_cycle_graph(), npartitions=2), 0).compute()
    assert "undirected" not in str(directed.value)


def test_unreachable_negative_cycle_does_not_raise(engine):
    edges = negative_cycle_graph()
    out = sorted_frame(run_sssp(engine, edges, 10, directed=True))
    assert out.set_index("vertex")["distance"].dropna().to_dict() == {
        10: 0.0, 11: 1.0, 12: 0.0}
    # 4 is reached only through the cycle... from 4 nothing is reachable but itself.
    run_sssp(engine, edges, 4, directed=True)


def self_loop_graph():
    """Two components. 0 -> 1 -> 2 with a self-loop of weight -1 on 1 (a negative cycle);
    5 -> 6 -> 7 with self-loops of weight 3 on 6 and 0 on 7 (ignored). The ids are dense,
    so on two owners 0..3 and 4..7 fall to different owners."""
    return pd.DataFrame({
        "src": [0, 1, 1, 5, 6, 6, 7],
        "dst": [1, 1, 2, 6, 6, 7, 7],
        "weight": [1.0, -1.0, 2.0, 1.0, 3.0, 0.5, 0.0],
    })


def assert_scipy_finds_a_negative_cycle(edges, sources, *, directed):
    from scipy.sparse import csgraph

    with pytest.raises(csgraph.NegativeCycleError):
        reference.expected_sssp(edges, sources, directed=directed)


@pytest.mark.parametrize("directed", [True, False], ids=["directed", "undirected"])
@pytest.mark.parametrize("sources", [0, 2, [5, 1]], ids=["before", "after", "multi"])
def test_reachable_negative_self_loop_raises(engine, directed, sources):
    edges = self_loop_graph()
    if directed and sources == 2:
        sources = 1  # 2 has no out-edge; start on the looped vertex itself
    assert_scipy_finds_a_negative_cycle(edges, sources, directed=directed)
    frame = engine.frame(edges, npartitions=2)
    raises_in_call_or_compute(gpipe.NegativeCycleError,
                              lambda: gpipe.sssp(frame, sources, directed=directed))
    graph = gpipe.Graph.from_edges(frame, directed=directed, weight="weight")
    raises_in_call_or_compute(gpipe.NegativeCycleError, lambda: graph.sssp(sources))


@pytest.mark.parametrize("directed", [True, False], ids=["directed", "undirected"])
def test_unreachable_negative_self_loop_does_not_raise(engine, directed):
    edges = self_loop_graph()
    out = sorted_frame(run_sssp(engine, edges, 5, directed=directed))
    assert out.set_index("vertex")["distance"].dropna().to_dict() == {5: 0.0, 6: 1.0, 7: 1.5}
    if directed:  # 2 lies beyond the loop: from it, the loop is out of reach
        out = sorted_frame(run_sssp(engine, edges, 2, directed=True))
        assert out.set_index("vertex")["distance"].dropna().to_dict() == {2: 0.0}


def test_non_negative_self_loops_are_ignored(engine):
    edges = self_loop_graph()
    edges.loc[edges["src"] == 1, "weight"] = [4.0, 2.0]  # the negative loop made positive
    for directed in (True, False):
        out = sorted_frame(run_sssp(engine, edges, 0, directed=directed))
        assert out["distance"].iloc[:3].tolist() == [0.0, 1.0, 3.0]


@pytest.mark.parametrize("edges", [
    pd.DataFrame({"src": [0], "dst": [0], "weight": [-1.0]}),
    pd.DataFrame({"src": [3, 4, 9], "dst": [4, 5, 9], "weight": [1.0, -2.0, -0.5]}),
], ids=["lone-loop", "loop-only-vertex"])
@pytest.mark.parametrize("directed", [True, False], ids=["directed", "undirected"])
def test_negative_self_loop_on_a_source_raises(engine, edges, directed):
    """The looped vertex is a source; a lone vertex is one owner even on the cluster, whose
    lazy result then raises at compute."""
    source = int(edges["src"].iloc[-1])
    assert_scipy_finds_a_negative_cycle(edges, source, directed=directed)
    frame = engine.frame(edges, npartitions=1)
    raises_in_call_or_compute(gpipe.NegativeCycleError,
                              lambda: gpipe.sssp(frame, source, directed=directed))


def test_negative_self_loop_on_any_owner_raises(engine):
    """A loop on the smallest id (the first owner) or the largest (the last owner) of a path
    whose consecutive vertices lie on different owners; from beyond the loop, no error."""
    edges, order = shuffled_path(40, seed=73)
    edges["weight"] = edges["weight"].abs()  # no negative edge but the loop
    for looped in (order.min(), order.max()):
        at = int(np.flatnonzero(order == looped)[0])
        with_loop = with_edge(edges, looped, looped, -0.25)
        assert_scipy_finds_a_negative_cycle(with_loop, int(order[0]), directed=True)
        frame = engine.frame(with_loop)
        raises_in_call_or_compute(gpipe.NegativeCycleError,
                                  lambda: gpipe.sssp(frame, int(order[0])),
                                  match=f"self-loop on vertex {looped}$")
        if at + 1 < len(order):
            run_sssp(engine, with_loop, int(order[at + 1]), directed=True)


def test_undirected_negative_edge_is_a_negative_cycle(engine):
    edges = reference.random_edges(200, 500, seed=29, weights="positive")
    edges = with_edge(edges, edges["src"].iloc[0], edges["dst"].iloc[1], -0.5)
    source = edges["src"].iloc[0].item()
    frame = engine.frame(edges)
    raises_in_call_or_compute(gpipe.NegativeCycleError,
                              lambda: gpipe.sssp(frame, source, directed=False))


def test_undirected_negative_edge_unreachable_does_not_raise(engine):
    edges = pd.DataFrame({"src": [0, 1, 5], "dst": [1, 2, 6], "weight": [1.0, 2.0, -1.0]})
    out = sorted_frame(run_sssp(engine, edges, 0, directed=False))
    assert out["distance"].iloc[:3].tolist() == [0.0, 1.0, 3.0]
    assert out["distance"].iloc[3:].isna().all()


def shuffled_path(length, seed):
    """A directed path through ``length`` shuffled ids (so consecutive vertices land on
    different owners), weights in [-1, 2]; returns (edges, ids in path order)."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(length) * 5 - length
    edges = pd.DataFrame({"src": order[:-1], "dst": order[1:],
                          "weight": rng.integers(-1, 3, size=length - 1).astype(float)})
    return edges, order


def test_long_path_crosses_owners(engine):
    edges, order = shuffled_path(40, seed=67)
    source = int(order[0])
    out = run_bfs(engine, edges, source, directed=True)
    assert out["distance"].max() == len(order) - 1
    run_sssp(engine, edges, source, directed=True)
    run_bfs(engine, edges, int(order[len(order) // 2]), directed=False, depth_limit=7)


def test_negative_cycle_spanning_owners_raises(engine):
    edges, order = shuffled_path(40, seed=71)
    edges = with_edge(edges, order[30], order[3], -100.0)  # closes 3..30 with a negative sum
    frame = engine.frame(edges)
    raises_in_call_or_compute(gpipe.NegativeCycleError,
                              lambda: gpipe.sssp(frame, int(order[0])))
    # From beyond the cycle it is unreachable: no error, and the right answer.
    run_sssp(engine, edges, int(order[31]), directed=True)


# ---------------------------------------------------------------------------------------------
# Partitions of the input.


def _rows_from(part, cut):
    return part[part.index >= cut]


def test_input_with_an_empty_partition(engine):
    edges = reference.random_edges(300, 1000, seed=31, weights="positive", ids="sparse")
    frame = engine.frame(edges, npartitions=5)
    cut = len(edges) // 4
    frame = frame.map_partitions(_rows_from, cut)  # the first partition is now empty
    assert len(frame.partitions[0]) == 0
    kept = edges.iloc[cut:]
    source = reference.pick_sources(kept, 1, seed=31)[0]
    out = check_frame(engine, gpipe.bfs(frame, source), id_dtype=np.int64, kind="bfs")
    reference.assert_distances(out, reference.expected_bfs(kept, source, directed=True))
    check_bfs_tree(kept, out, source, directed=True)
    out = check_frame(engine, gpipe.sssp(frame, source), id_dtype=np.int64, kind="sssp")
    reference.assert_distances(out, reference.expected_sssp(kept, source, directed=True),
                               exact=False)


def test_partition_count_does_not_change_the_answer(engine):
    edges = reference.random_edges(300, 900, seed=37, weights="positive", ids="negative")
    source = reference.pick_sources(edges, 1, seed=37)[0]
    answers = [run_sssp(engine, edges, source, directed=True, npartitions=k)
               for k in (1, 4)]
    pd.testing.assert_series_equal(reference.result_distances(answers[0]),
                                   reference.result_distances(answers[1]))


# ---------------------------------------------------------------------------------------------
# Graph: built once, queried many times.


def test_graph_reuse_matches_one_shot(engine):
    edges = reference.random_edges(400, 1200, seed=41, weights="positive", ids="sparse",
                                   duplicates=50, self_loops=10)
    s1, s2 = reference.pick_sources(edges, 2, seed=41)
    frame = engine.frame(edges)
    for directed in (True, False):
        graph = gpipe.Graph.from_edges(frame, directed=directed, weight="weight")
        queries = [
            (lambda: graph.bfs(s1), lambda: gpipe.bfs(frame, s1, directed=directed), "bfs"),
            (lambda: graph.sssp(s2), lambda: gpipe.sssp(frame, s2, directed=directed),
             "sssp"),
            (lambda: graph.bfs([s1, s2], depth_limit=2),
             lambda: gpipe.bfs(frame, [s1, s2], directed=directed, depth_limit=2), "bfs"),
            (lambda: graph.sssp([s1, s2]),
             lambda: gpipe.sssp(frame, [s1, s2], directed=directed), "sssp"),
            (lambda: graph.bfs(s1), lambda: gpipe.bfs(frame, s1, directed=directed), "bfs"),
        ]
        for from_graph, one_shot, kind in queries:
            got = check_frame(engine, from_graph(), id_dtype=np.int64, kind=kind)
            want = check_frame(engine, one_shot(), id_dtype=np.int64, kind=kind)
            pd.testing.assert_series_equal(reference.result_distances(got),
                                           reference.result_distances(want))
        last = check_frame(engine, graph.sssp(s1), id_dtype=np.int64, kind="sssp")
        check_sssp_tree(edges, last, s1, directed=directed, src="src", dst="dst",
                        weight="weight")
        reference.assert_distances(
            last, reference.expected_sssp(edges, s1, directed=directed), exact=False)


def test_graph_keeps_its_partitions(engine, tmp_path):
    """After the first query the graph no longer needs the input files."""
    edges = reference.random_edges(300, 900, seed=43, weights="positive", ids="negative")
    folder = tmp_path / "edges"
    folder.mkdir()
    for i, part in enumerate(chunks(edges, 3)):
        pq.write_table(pa.Table.from_pandas(part, preserve_index=False),
                       folder / f"part-{i}.parquet")
    frame = read(engine, folder, weight="weight")
    graph = gpipe.Graph.from_edges(frame, weight="weight")
    source = reference.pick_sources(edges, 1, seed=43)[0]
    first = check_frame(engine, graph.bfs(source), id_dtype=np.int64, kind="bfs")
    shutil.rmtree(folder)
    again = check_frame(engine, graph.bfs(source), id_dtype=np.int64, kind="bfs")
    columns = ["vertex", "distance"]  # parents may differ between runs on the GPU
    pd.testing.assert_frame_equal(sorted_frame(first)[columns], sorted_frame(again)[columns])
    check_bfs_tree(edges, again, [source], directed=True)
    out = check_frame(engine, graph.sssp(source), id_dtype=np.int64, kind="sssp")
    reference.assert_distances(out, reference.expected_sssp(edges, source, directed=True),
                               exact=False)


def test_result_can_be_computed_twice(engine):
    edges = reference.random_edges(200, 600, seed=47, weights="positive")
    source = reference.pick_sources(edges, 1, seed=47)[0]
    result = gpipe.sssp(engine.frame(edges), source)
    a = check_frame(engine, result, id_dtype=np.int64, kind="sssp")
    b = check_frame(engine, result, id_dtype=np.int64, kind="sssp")
    pd.testing.assert_frame_equal(sorted_frame(a), sorted_frame(b))


@pytest.mark.parametrize("ids", ["dense", "sparse"])
def test_len_is_one_row_per_vertex(engine, ids):
    """``len()`` of a result (known without computing it where no client runs) agrees with
    its computed rows, for kept ids with holes and for renumbered ids."""
    edges = reference.random_edges(1500, 700, seed=67, weights="positive", ids=ids)
    graph = gpipe.Graph.from_edges(engine.frame(edges), weight="weight")
    source = reference.pick_sources(edges, 1, seed=67)[0]
    vertices = len(np.union1d(edges["src"], edges["dst"]))
    assert graph.num_vertices == vertices
    for result in (graph.bfs(source), graph.sssp(source)):
        assert len(result) == vertices
        assert result.npartitions == graph.num_partitions
        assert len(engine.compute(result)) == vertices


def test_len_runs_no_computation(engine, monkeypatch):
    """The result's ``len()`` is the graph's row count, not a reduction through a scheduler
    (tens of milliseconds on a cluster); once the collection changes, Dask counts as usual."""
    import dask.base

    edges = reference.random_edges(800, 2400, seed=71, weights="positive", ids="sparse")
    graph = gpipe.Graph.from_edges(engine.frame(edges), weight="weight")
    source = reference.pick_sources(edges, 1, seed=71)[0]
    vertices = len(np.union1d(edges["src"], edges["dst"]))
    results = [graph.bfs(source), graph.sssp(source)]

    def refuse(*args, **kwargs):
        raise AssertionError("len() of a gpipe result computed something")

    with monkeypatch.context() as patch:
        patch.setattr(dask.base, "compute", refuse)
        assert [len(r) for r in results] == [vertices, vertices]
    result = results[0]
    result["one"] = 1  # in place: a new expression, whose length Dask works out
    assert len(result) == vertices
    assert len(result[result["distance"] <= 1]) == int((engine.compute(results[0])["distance"] <= 1).sum())


# ---------------------------------------------------------------------------------------------
# read_edges.


def read(engine, path, **kwargs):
    """gpipe.read_edges with the default backend ("auto"), as the engine's frame type."""
    frame = gpipe.read_edges(path, **kwargs)
    if engine.gpu:
        assert type(frame._meta).__module__.startswith("cudf"), (
            "read_edges(backend='auto') did not pick cuDF on a GPU machine")
    elif not isinstance(frame._meta, pd.DataFrame):
        frame = frame.to_backend("pandas")  # "auto" picked the GPU; this test is the CPU path
    return frame


@pytest.fixture
def parquet_edges(tmp_path):
    edges = reference.random_edges(300, 1000, seed=53, weights="positive", ids="sparse",
                                   src="from", dst="to", weight="w")
    single = tmp_path / "single.parquet"
    pq.write_table(pa.Table.from_pandas(edges, preserve_index=False), single)
    folder = tmp_path / "folder"
    folder.mkdir()
    for i, part in enumerate(chunks(edges, 4)):
        pq.write_table(pa.Table.from_pandas(part, preserve_index=False),
                       folder / f"part-{i:02d}.parquet")
    return edges, {"file": str(single), "directory": str(folder),
                   "glob": os.path.join(str(folder), "part-*.parquet")}


@pytest.mark.parametrize("where", ["file", "directory", "glob"])
def test_read_edges(engine, parquet_edges, where):
    edges, paths = parquet_edges
    frame = read(engine, paths[where], src="from", dst="to", weight="w")
    got = engine.pandas(frame.compute())
    assert {"from", "to", "w"} <= set(got.columns)
    key = ["from", "to", "w"]
    for column in key:
        assert str(frame.dtypes[column]) == str(edges.dtypes[column]), column
    pd.testing.assert_frame_equal(
        got[key].sort_values(key).reset_index(drop=True),
        edges[key].sort_values(key).reset_index(drop=True), check_dtype=False)
    source = reference.pick_sources(edges, 1, seed=53, src="from")[0]
    out = check_frame(engine, gpipe.sssp(frame, source, src="from", dst="to", weight="w"),
                      id_dtype=np.int64, kind="sssp")
    reference.assert_distances(
        out, reference.expected_sssp(edges, source, directed=True, src="from", dst="to",
                                     weight="w"), exact=False)
    check_sssp_tree(edges, out, source, directed=True, src="from", dst="to", weight="w")


def test_read_edges_without_weight(engine, parquet_edges):
    edges, paths = parquet_edges
    frame = read(engine, paths["glob"], src="from", dst="to")
    assert {"from", "to"} <= set(frame.columns)
    source = reference.pick_sources(edges, 1, seed=59, src="from")[0]
    out = check_frame(engine, gpipe.bfs(frame, source, directed=False, src="from", dst="to"),
                      id_dtype=np.int64, kind="bfs")
    reference.assert_distances(
        out, reference.expected_bfs(edges, source, directed=False, src="from", dst="to"))


# ---------------------------------------------------------------------------------------------
# A real default client (the engine's ``cluster`` path uses ``Client.as_current``).


def test_with_a_default_client(dask_client2):
    from distributed import Client

    edges = reference.random_edges(300, 900, seed=61, weights="positive", ids="sparse")
    source = reference.pick_sources(edges, 1, seed=61)[0]
    import dask.dataframe as dd

    with Client(dask_client2.scheduler.address) as client:
        assert client is not None
        frame = dd.from_pandas(edges, npartitions=3)
        out = gpipe.sssp(frame, source).compute()
    reference.assert_distances(out, reference.expected_sssp(edges, source, directed=True),
                               exact=False)
    check_sssp_tree(edges, out, source, directed=True, src="src", dst="dst", weight="weight")


@pytest.mark.parametrize("dtype", ["Int64", "int32[pyarrow]"])
def test_pandas_extension_id_dtypes_are_kept(cpu_engine, dtype):
    edges = pd.DataFrame({"src": pd.array([5, 6, 7], dtype=dtype), "dst": pd.array([6, 7, 8], dtype=dtype)})
    result = gpipe.bfs(cpu_engine.frame(edges, 1), 5)
    out = sorted_frame(result.compute())
    assert out["vertex"].dtype == edges["src"].dtype and out["parent"].dtype == edges["src"].dtype
    assert out["vertex"].tolist() == [5, 6, 7, 8]
    assert out["distance"].tolist() == [0, 1, 2, 3]


# ---------------------------------------------------------------------------------------------
# parents=False and max_distance through the one-call entry points
# ---------------------------------------------------------------------------------------------


def test_bfs_and_sssp_without_parents_and_with_max_distance(engine):
    edges = reference.random_edges(40, 150, seed=21, weights="integer")
    frame = engine.frame(edges)
    source = int(edges["src"].iloc[0])
    bfs = gpipe.bfs(frame, source, parents=False)
    assert list(bfs.columns) == ["vertex", "distance"]
    reference.assert_distances(engine.run(bfs), reference.expected_bfs(edges, [source], directed=True))
    sssp = gpipe.sssp(frame, source, max_distance=8, parents=False)
    assert list(sssp.columns) == ["vertex", "distance"]
    expected = reference.expected_sssp(edges, [source], directed=True)
    reference.assert_distances(engine.run(sssp), expected.where(expected <= 8))


def test_sssp_checks_max_distance_before_building():
    edges = reference.random_edges(10, 20, seed=1, weights="positive")
    with pytest.raises(gpipe.InputError, match="max_distance"):
        gpipe.sssp(edges, 0, max_distance=-0.5)


# ---------------------------------------------------------------------------------------------
# Defaults that follow the data: read_edges' column names carry to the calls given its frame


@pytest.fixture
def renamed_edges(tmp_path):
    """Edges ``a -> b`` with weights in ``cost``, read by read_edges(src="a", dst="b", weight="cost")."""
    path = tmp_path / "edges.parquet"
    pd.DataFrame({"a": [0, 1, 0], "b": [1, 2, 2], "cost": [1.0, 1.0, 5.0]}).to_parquet(path, index=False)
    return gpipe.read_edges(path, src="a", dst="b", weight="cost", backend="cpu"), path


def test_read_edges_columns_carry_to_every_call(renamed_edges):
    edges, _ = renamed_edges
    by_vertex = lambda frame: frame.compute().set_index("vertex")["distance"].sort_index().tolist()  # noqa: E731
    assert by_vertex(gpipe.bfs(edges, 0)) == [0, 1, 1]
    assert by_vertex(gpipe.sssp(edges, 0)) == [0.0, 1.0, 2.0]  # weight "cost", not repeated
    assert gpipe.bfs_each(edges, [0], targets=[2]).compute()["distance"].tolist() == [1]
    assert gpipe.sssp_each(edges, [0], targets=[2]).compute()["distance"].tolist() == [2.0]
    graph = gpipe.Graph.from_edges(edges)
    assert graph.weight == "cost"
    assert by_vertex(graph.sssp(0)) == [0.0, 1.0, 2.0]
    assert graph.path(0, 2) == [0, 1, 2]


def test_graph_from_edges_takes_the_weight_that_read_edges_kept(tmp_path):
    path = tmp_path / "edges.parquet"
    pd.DataFrame({"src": [0, 1, 0], "dst": [1, 2, 2], "weight": [1.0, 1.0, 5.0]}).to_parquet(path, index=False)
    edges = gpipe.read_edges(path, backend="cpu")  # keeps "weight" without being asked
    graph = gpipe.Graph.from_edges(edges)
    assert graph.weight == "weight"
    assert graph.sssp(0).compute().set_index("vertex")["distance"].sort_index().tolist() == [0.0, 1.0, 2.0]
    assert gpipe.Graph.from_edges(edges, weight=False).weight is None  # opting out
    unweighted = tmp_path / "unweighted.parquet"
    pd.DataFrame({"src": [0], "dst": [1]}).to_parquet(unweighted, index=False)
    assert gpipe.Graph.from_edges(gpipe.read_edges(unweighted, backend="cpu")).weight is None


def test_explicit_columns_win_over_read_edges(renamed_edges, tmp_path):
    edges, _ = renamed_edges
    with pytest.raises(gpipe.InputError, match="'weight'"):
        gpipe.sssp(edges, 0, weight="weight")  # asked for by name: not "cost"
    with pytest.raises(gpipe.InputError, match="'src'"):
        gpipe.bfs(edges, 0, src="src")
    with pytest.raises(gpipe.InputError, match="needs a weight column"):
        gpipe.sssp(edges, 0, weight=False)
    # a frame renamed after the read: its own columns, not the recorded ones
    renamed = edges.rename(columns={"a": "src", "b": "dst"})
    assert gpipe.bfs(renamed, 0).compute()["distance"].notna().sum() == 3


def test_plain_frames_keep_the_plain_defaults():
    import dask.dataframe as dd

    edges = dd.from_pandas(pd.DataFrame({"src": [0, 1], "dst": [1, 2], "weight": [1.0, 2.0]}), npartitions=1)
    assert gpipe.Graph.from_edges(edges).weight is None  # only read_edges' frames choose a weight
    assert gpipe.sssp(edges, 0).compute()["distance"].max() == 3.0  # "weight", as before
