"""Renumbering across the owners (gpipe/partitioning/numbering.py, issue 33).

Sparse int64 ids and string ids of a graph split over two owners, each owner numbering the ids
of its hash buckets: the results are the dense-id graph's once the ids are mapped, checked
against SciPy (and NetworkX once), with every parent edge checked against the edge list; no
owner or bucket holds every distinct id. Runs on the 2-worker LocalCluster (pandas) and, marked
``multigpu``, on the 2-GPU cluster (cuDF).
"""

from __future__ import annotations

import functools

import dask
import numpy as np
import pandas as pd
import pytest

import gpipe
import reference
from conftest import Engine, engine_params
from gpipe.engine import execution
from gpipe.engine.sources import OwnerIds
from gpipe.partitioning import build, numbering

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(params=engine_params("cluster", "multigpu"))
def spread_engine(request):
    """Graphs split over two owners: pandas on the CPU cluster, cuDF on the 2-GPU one."""
    if request.param == "cluster":
        client = request.getfixturevalue("dask_client2")
        with client.as_current(), dask.config.set({"gpipe.partitions": 2}):
            yield Engine("cluster", client)
    else:
        yield request.getfixturevalue("multigpu_engine")


def with_ids(edges, kind):
    """``edges`` (dense ids 0..n-1) with ids of ``kind`` (``sparse``: far apart int64,
    ``string``: text), and the map from those ids back to the dense ones."""
    ids = np.unique(np.concatenate([edges["src"].to_numpy(), edges["dst"].to_numpy()]))
    if kind == "sparse":
        new = 10**15 + ids * 7919 - 3 * 10**14 * (ids % 2)  # spread out, not sorted as the dense
    else:
        new = np.char.add(np.char.add("id-", (ids * 7919 % 1009).astype(str)), ids.astype(str)).astype(object)
    table = pd.Series(new, index=ids)
    twin = edges.assign(src=table.loc[edges["src"]].to_numpy(), dst=table.loc[edges["dst"]].to_numpy())
    return twin, pd.Series(ids, index=pd.Index(new))


def back_to_dense(result, back):
    """A computed result (pandas) with ``vertex`` and ``parent`` as the dense ids."""
    vertex = back.loc[result["vertex"].astype(object).to_numpy()].to_numpy()
    has_parent = result["parent"].notna().to_numpy()
    parent = np.full(len(result), -1, dtype=np.int64)
    parent[has_parent] = back.loc[result["parent"][has_parent].astype(object).to_numpy()].to_numpy()
    return pd.DataFrame({"vertex": vertex, "distance": result["distance"].to_numpy(dtype=float, na_value=np.nan),
                         "parent": parent})


def assert_tree(dense, edges, directed, sources, weight=None):
    """Every reached vertex but a source has a parent; the parent edge exists and lies on a
    shortest path (``dist[v] == dist[parent] + w`` for the edge's lightest weight)."""
    d = dense.set_index("vertex")["distance"]
    tree = dense[dense["parent"] >= 0]
    reached = dense[dense["distance"].notna()]
    assert set(reached["vertex"]) - set(tree["vertex"]) <= set(sources)
    assert (dense.loc[dense["distance"].isna(), "parent"] == -1).all()
    frame = edges.assign(w=1.0 if weight is None else edges[weight].astype(float))
    if not directed:
        frame = pd.concat([frame, frame.rename(columns={"src": "dst", "dst": "src"})])
    lightest = frame.groupby(["src", "dst"])["w"].min()
    pairs = pd.MultiIndex.from_arrays([tree["parent"].to_numpy(), tree["vertex"].to_numpy()])
    assert pairs.isin(lightest.index).all(), "a parent edge is not in the edge list"
    through_parent = d.loc[tree["parent"]].to_numpy() + lightest.loc[pairs].to_numpy()
    assert np.allclose(through_parent, tree["distance"].to_numpy())


@pytest.mark.parametrize("kind", ["sparse", "string"])
@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
def test_bfs_equals_the_dense_build_after_mapping_ids(spread_engine, kind, directed):
    edges = reference.random_edges(400, 1500, seed=3, components=2, duplicates=40, self_loops=5,
                                   loop_only_vertex=True)
    twin, back = with_ids(edges, kind)
    sources = reference.pick_sources(edges, 2, seed=3)
    sources_in = back.index[np.searchsorted(back.to_numpy(), sources)].tolist()
    graph = gpipe.Graph.from_edges(spread_engine.frame(twin, 3), directed=directed)
    assert graph.num_partitions == 2 and graph.num_vertices == len(back)
    dense = back_to_dense(spread_engine.run(graph.bfs(sources_in)), back)
    expected = reference.expected_bfs(edges, sources, directed=directed)
    reference.assert_distances(dense, expected)
    assert dense["distance"].isna().any(), "the second component is unreached"
    assert_tree(dense, edges, directed, sources)
    dense_graph = gpipe.Graph.from_edges(spread_engine.frame(edges, 3), directed=directed)
    plain = spread_engine.run(dense_graph.bfs(sources))
    reference.assert_distances(dense, reference.result_distances(plain).rename_axis("vertex"))


@pytest.mark.parametrize("kind", ["sparse", "string"])
def test_sssp_matches_scipy_and_networkx(spread_engine, kind):
    edges = reference.random_edges(300, 1200, seed=8, weights="positive", duplicates=30)
    twin, back = with_ids(edges, kind)
    source = reference.pick_sources(edges, 1, seed=8)[0]
    graph = gpipe.Graph.from_edges(spread_engine.frame(twin, 4), weight="weight", directed=True)
    dense = back_to_dense(spread_engine.run(graph.sssp(back.index[back == source][0])), back)
    reference.assert_distances(dense, reference.expected_sssp(edges, [source], directed=True), exact=False)
    reference.assert_distances(dense, reference.expected_networkx(edges, [source], directed=True,
                                                                  weight="weight"), exact=False)
    assert_tree(dense, edges, True, [source], weight="weight")


@pytest.mark.parametrize("kind", ["sparse", "string"])
def test_an_absent_source_is_named(spread_engine, kind):
    edges = reference.random_edges(100, 300, seed=2)
    twin, _ = with_ids(edges, kind)
    graph = gpipe.Graph.from_edges(spread_engine.frame(twin, 2))
    absent = 12345 if kind == "sparse" else "nowhere"
    with pytest.raises(gpipe.InputError, match=f"source vertex {absent!r} is not in the graph"):
        graph.bfs([twin["src"].iloc[0], absent])


def test_a_negative_self_loop_is_named_by_its_input_id(spread_engine):
    edges = pd.DataFrame({"src": [0, 1, 2, 2], "dst": [1, 2, 3, 2], "weight": [1.0, 1.0, 1.0, -1.0]})
    twin, back = with_ids(edges, "sparse")
    graph = gpipe.Graph.from_edges(spread_engine.frame(twin, 2), weight="weight")
    looped = back.index[back == 2][0]
    with pytest.raises(gpipe.NegativeCycleError, match=f"self-loop on vertex {looped}"):
        spread_engine.run(graph.sssp(back.index[back == 0][0]))


def test_per_source_queries_take_input_ids(spread_engine):
    edges = reference.random_edges(200, 700, seed=4)
    twin, back = with_ids(edges, "string")
    sources = reference.pick_sources(edges, 3, seed=4)
    graph = gpipe.Graph.from_edges(spread_engine.frame(twin, 2), directed=False)
    rows = spread_engine.run(graph.bfs_each([back.index[back == s][0] for s in sources]))
    for s in sources:
        mine = rows[rows["source"] == back.index[back == s][0]]
        dense = pd.DataFrame({"vertex": back.loc[mine["vertex"].astype(object).to_numpy()].to_numpy(),
                              "distance": mine["distance"].to_numpy(dtype=float)})
        expected = reference.expected_bfs(edges, [s], directed=False).dropna()
        reference.assert_distances(dense, expected)


@pytest.mark.parametrize("kind", ["sparse", "string"])
def test_no_worker_holds_every_distinct_id(dask_client2, kind):
    """Each bucket, merged on its worker, and each owner's ids hold a part of the distinct ids;
    together they hold each one once."""
    edges = reference.random_edges(2000, 6000, seed=6)
    twin, back = with_ids(edges, kind)
    with dask_client2.as_current(), dask.config.set({"gpipe.partitions": 2}):
        frame = Engine("cluster", dask_client2).frame(twin, 4)
        graph = gpipe.Graph.from_edges(frame)
        built = graph.engine.built
        executor = execution.current(dask_client2)
        owned = executor.gather(built.owner_ids)
        inputs = executor.partitions(frame[["src", "dst"]])
        read_ids = functools.partial(build.id_arrays, columns=build.Columns("src", "dst", None, strings=kind == "string"))
        buckets = numbering.spread(executor, "cpu", read_ids, inputs, executor.holders(inputs), kind == "string")
        held = dask_client2.who_has(buckets.merged)
    assert built.ids is None and all(isinstance(ids, OwnerIds) for ids in owned)
    n = len(back)
    for counts in ([len(ids) for ids in owned], buckets.counts):
        assert sum(counts) == n and max(counts) < 0.6 * n, counts
    assert sorted(held[m.key][0] for m in buckets.merged) == sorted(executor.workers)
    every = np.concatenate([np.asarray(ids.values.to_pylist() if kind == "string" else ids.values, dtype=object)
                            for ids in owned])
    assert len(set(every.tolist())) == n and set(every.tolist()) == set(back.index)
    assert [ids.offset for ids in owned] == [0, built.layout.chunk]
    assert built.rows == [len(ids) for ids in owned]


def _ids_of(kind, backend_name, values):
    """Integer ``values`` as ids of ``kind`` on the backend: int64 or text strings."""
    if backend_name == "gpu":
        import cudf
        import cupy

        return cudf.Series(values.astype(str)) if kind == "string" else cupy.asarray(values)
    from gpipe.engine import strings_cpu

    return strings_cpu.column(pd.DataFrame({"v": values.astype(str)}), "v") if kind == "string" else values


@pytest.mark.parametrize("backend_name", [pytest.param("cpu"), pytest.param("gpu", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("kind", ["sparse", "string"])
def test_buckets_spread_strided_ids_evenly_and_the_same_everywhere(backend_name, kind):
    """Each of three buckets gets about a third of ids 1024 apart, and an id's bucket does not
    depend on the array it is seen in."""
    values = 10**12 + np.arange(9_000, dtype=np.int64) * 1024
    bucket = numbering.bucket_of(backend_name, kind == "string", _ids_of(kind, backend_name, values), 3)
    host = np.asarray(bucket.get() if hasattr(bucket, "get") else bucket)
    assert all(2_700 < int((host == b).sum()) < 3_300 for b in range(3))
    part = numbering.bucket_of(backend_name, kind == "string", _ids_of(kind, backend_name, values[::7]), 3)
    assert np.array_equal(np.asarray(part.get() if hasattr(part, "get") else part), host[::7])


@pytest.mark.parametrize("backend_name", [pytest.param("cpu"), pytest.param("gpu", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("kind", ["sparse", "string"])
def test_a_relabel_maps_every_end_to_its_global_id(backend_name, kind):
    values = np.array([70, 10, 50, 30], dtype=np.int64)
    relabel = numbering.Relabel(_ids_of(kind, backend_name, values),
                                _ids_of("sparse", backend_name, np.array([3, 0, 2, 1])).astype("int32"),
                                kind == "string")
    ends = np.array([10, 10, 70, 30, 50, 70], dtype=np.int64)
    for _ in range(2):  # the kept hash table serves the second end too
        got = relabel.apply(backend_name, _ids_of(kind, backend_name, ends))
        assert np.asarray(got.get() if hasattr(got, "get") else got).tolist() == [0, 0, 3, 1, 2, 3]
