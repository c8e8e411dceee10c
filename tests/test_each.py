"""Per-source queries (``Graph.bfs_each``, ``Graph.sssp_each``, ``gpipe.bfs_each``) against SciPy.

Every case checks the distances from each source against ``scipy.sparse.csgraph`` run from that
source, and every parent against the graph (an edge ``parent -> vertex`` whose weight closes the
distance from the row's source). Paths: ``engine`` (no client; the 2-worker cluster with graphs
forced over two owners, the multi-owner path; cuDF on a GPU), and the one-owner cluster tests
below (replicas, a worker killed during a batch). The batch kernels themselves are tested in
tests/test_kernels_cpu.py (and GPU twins at the end of this file).
"""

from __future__ import annotations

import os

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from scipy.sparse import csgraph

import gpipe
import gpipe.engine.compute.cpu
import kernel_graphs
import reference
from gpipe.errors import InputError, NegativeCycleError


# ---------------------------------------------------------------------------------------------
# References
# ---------------------------------------------------------------------------------------------


def expected_rows(edges, sources, *, directed, weight=None, depth_limit=None, max_distance=None):
    """Long-form rows (source, vertex, distance) from SciPy, one traversal per source."""
    ids, matrix = reference.to_csr(edges, directed=directed, weight=weight)
    index = np.searchsorted(ids, np.asarray(sources))
    if weight is None:
        table = csgraph.shortest_path(matrix, directed=True, unweighted=True, indices=index)
    else:
        method = "D" if (matrix.data >= 0).all() else "BF"
        table = csgraph.shortest_path(matrix, method=method, directed=True, indices=index)
    table = np.atleast_2d(table)
    limit = depth_limit if depth_limit is not None else max_distance
    if limit is not None:
        table = np.where(table > limit, np.inf, table)
    rows, cols = np.nonzero(np.isfinite(table))
    return pd.DataFrame({"source": np.asarray(sources)[rows], "vertex": ids[cols],
                         "distance": table[rows, cols]})


def assert_rows(got, expected, *, exact=True):
    """``got`` (computed, pandas) has exactly the expected (source, vertex, distance) rows, sources
    in the order given and each source's vertices ascending."""
    got = got.reset_index(drop=True)
    order = {s: i for i, s in enumerate(pd.unique(expected["source"]))}
    expected = expected.sort_values(["source", "vertex"], key=lambda c: c.map(order) if c.name == "source"
                                    else c, kind="stable").reset_index(drop=True)
    assert len(got) == len(expected), f"{len(got)} rows, expected {len(expected)}"
    assert got["source"].tolist() == expected["source"].tolist()
    assert got["vertex"].tolist() == expected["vertex"].tolist()
    distance = got["distance"].to_numpy(dtype=np.float64)
    if exact:
        np.testing.assert_array_equal(distance, expected["distance"].to_numpy())
    else:
        np.testing.assert_allclose(distance, expected["distance"].to_numpy(), rtol=1e-9, atol=1e-9)


def assert_parents(got, edges, *, directed, weight=None):
    """Every parent of a row is an edge ``parent -> vertex`` with distance(source, parent) +
    weight == distance(source, vertex); sources (distance 0 and no parent) are the only roots."""
    pairs = edges[["src", "dst"]].copy()
    pairs["w"] = 1.0 if weight is None else edges[weight].astype(np.float64)
    pairs = pairs[pairs["src"] != pairs["dst"]]
    if not directed:
        pairs = pd.concat([pairs, pairs.rename(columns={"src": "dst", "dst": "src"})])
    lightest = pairs.groupby(["src", "dst"], as_index=False)["w"].min()
    has_parent = got[got["parent"].notna()]
    assert (got.loc[got["parent"].isna(), "vertex"] == got.loc[got["parent"].isna(), "source"]).all(), \
        "a reached vertex other than the source has no parent"
    joined = has_parent.merge(lightest, left_on=["parent", "vertex"], right_on=["src", "dst"], how="left")
    assert joined["w"].notna().all(), "a parent without an edge parent -> vertex"
    dist = got[["source", "vertex", "distance"]].rename(columns={"vertex": "parent", "distance": "pd"})
    joined = joined.merge(dist, on=["source", "parent"], how="left")
    assert joined["pd"].notna().all(), "a parent the source does not reach"
    np.testing.assert_allclose(joined["pd"].to_numpy(dtype=np.float64) + joined["w"].to_numpy(),
                               joined["distance"].to_numpy(dtype=np.float64), rtol=1e-9, atol=1e-9)


def run_checked(engine, result, id_dtype):
    """Compute ``result``; check gpipe's one dtype convention (README, "The result") on the
    partitions as they are and in the meta: ids in the input's dtype, ``distance`` float64 for
    BFS and SSSP, ``parent`` the id dtype with nulls (pandas: its Arrow twin); the result as pandas."""
    computed = engine.compute(result)
    id_dtype = np.dtype(id_dtype)
    want = {"source": id_dtype, "vertex": id_dtype, "distance": np.dtype("float64"),
            "parent": id_dtype if engine.gpu else pd.ArrowDtype(pa.from_numpy_dtype(id_dtype))}
    for column in computed.columns:
        assert computed.dtypes[column] == want[column], (column, computed.dtypes[column], want[column])
        assert str(result._meta.dtypes[column]) == str(computed.dtypes[column]), column
    return engine.pandas(computed)


def sources_of(edges, count, seed):
    return np.array(reference.pick_sources(edges, count, seed=seed))


# ---------------------------------------------------------------------------------------------
# Distances and parents, every path
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("directed", [True, False], ids=["directed", "undirected"])
@pytest.mark.parametrize("count", [5, 150], ids=["one-batch", "three-batches"])
def test_bfs_each_matches_scipy_per_source_with_valid_parents(engine, directed, count):
    edges = reference.random_edges(n=400, m=1400, seed=count, ids="sparse")
    sources = sources_of(edges, count if engine.name != "cluster" else min(count, 20), seed=1)
    graph = gpipe.Graph.from_edges(engine.frame(edges), directed=directed)
    result = graph.bfs_each(sources, parents=True)
    got = run_checked(engine, result, edges["src"].dtype)
    assert_rows(got, expected_rows(edges, sources, directed=directed))
    assert_parents(got, edges, directed=directed)
    assert list(got.columns) == ["source", "vertex", "distance", "parent"]


@pytest.mark.parametrize("directed", [True, False], ids=["directed", "undirected"])
def test_sssp_each_matches_scipy_per_source_with_valid_parents(engine, directed):
    edges = reference.random_edges(n=300, m=1200, seed=4, weights="positive", ids="negative")
    sources = sources_of(edges, 12, seed=2)
    graph = gpipe.Graph.from_edges(engine.frame(edges), directed=directed, weight="weight")
    got = run_checked(engine, graph.sssp_each(sources, parents=True), edges["src"].dtype)
    assert_rows(got, expected_rows(edges, sources, directed=directed, weight="weight"), exact=False)
    assert_parents(got, edges, directed=directed, weight="weight")


def test_sssp_each_with_negative_weights_is_bellman_ford_per_source(engine):
    edges = reference.random_edges(n=200, m=800, seed=6, weights="dag_negative")
    sources = sources_of(edges, 10, seed=3)
    graph = gpipe.Graph.from_edges(engine.frame(edges), directed=True, weight="weight")
    got = engine.run(graph.sssp_each(sources, parents=True))
    assert_rows(got, expected_rows(edges, sources, directed=True, weight="weight"), exact=False)
    assert_parents(got, edges, directed=True, weight="weight")


def test_a_negative_cycle_reachable_from_one_source_of_a_batch_names_it(engine):
    # 10 -> 11 -> 12 -> 10 weighs -1 around and only 13 leads into it.
    edges = pd.DataFrame({"src": [10, 11, 12, 13, 20, 21], "dst": [11, 12, 10, 10, 21, 22],
                          "weight": [1.0, 1.0, -3.0, 1.0, 2.0, 2.0]})
    graph = gpipe.Graph.from_edges(engine.frame(edges, npartitions=1), weight="weight")
    result = graph.sssp_each([20, 21, 13, 22])
    with pytest.raises(NegativeCycleError, match="13"):
        engine.compute(result)
    engine.run(graph.sssp_each([20, 21, 22]))  # the others alone are fine


def test_targets_give_a_distance_table_with_nulls_for_unreached_and_absent(engine):
    edges = reference.random_edges(n=300, m=600, seed=8, components=3)
    sources = sources_of(edges, 7, seed=4)
    absent = int(edges[["src", "dst"]].max().max()) + 1000
    targets = [*sources_of(edges, 5, seed=9).tolist(), absent, int(sources[0])]
    graph = gpipe.Graph.from_edges(engine.frame(edges), directed=True)
    got = run_checked(engine, graph.bfs_each(sources, targets=targets, parents=True), edges["src"].dtype)
    assert len(got) == len(sources) * len(targets)
    assert got["source"].tolist() == np.repeat(sources, len(targets)).tolist()
    assert got["vertex"].tolist() == targets * len(sources)
    full = expected_rows(edges, sources, directed=True).set_index(["source", "vertex"])["distance"]
    expected = [full.get((s, t), np.nan) for s, t in zip(got["source"], got["vertex"])]
    np.testing.assert_array_equal(got["distance"].to_numpy(dtype=np.float64, na_value=np.nan), expected)
    assert got.loc[got["vertex"] == absent, "distance"].isna().all()
    assert got.loc[got["vertex"] == absent, "parent"].isna().all()
    weighted = gpipe.Graph.from_edges(engine.frame(edges.assign(weight=1.0)), directed=True, weight="weight")
    table = run_checked(engine, weighted.sssp_each(sources, targets=targets, parents=True), edges["src"].dtype)
    np.testing.assert_array_equal(table["distance"].to_numpy(dtype=np.float64, na_value=np.nan), expected)


def test_depth_limit_and_max_distance_cut_each_traversal(engine):
    edges = reference.random_edges(n=300, m=1000, seed=10, weights="positive")
    sources = sources_of(edges, 9, seed=5)
    graph = gpipe.Graph.from_edges(engine.frame(edges), directed=False, weight="weight")
    got = engine.run(graph.bfs_each(sources, depth_limit=2))
    assert_rows(got, expected_rows(edges, sources, directed=False, depth_limit=2))
    got = engine.run(graph.sssp_each(sources, max_distance=6.0, parents=True))
    assert_rows(got, expected_rows(edges, sources, directed=False, weight="weight", max_distance=6.0),
                exact=False)
    assert_parents(got, edges, directed=False, weight="weight")


# ---------------------------------------------------------------------------------------------
# Sources: kinds, checks, order
# ---------------------------------------------------------------------------------------------


def test_duplicate_and_unknown_sources_are_named(engine):
    edges = reference.random_edges(n=100, m=300, seed=11)
    graph = gpipe.Graph.from_edges(engine.frame(edges), weight=None)
    known = sources_of(edges, 3, seed=1).tolist()
    with pytest.raises(InputError, match=f"{known[1]}.*more than once"):
        graph.bfs_each([known[0], known[1], known[2], known[1]])
    missing = int(edges[["src", "dst"]].max().max()) + 77
    with pytest.raises(InputError, match=f"{missing}"):
        graph.bfs_each([known[0], missing])
    with pytest.raises(InputError, match="string"):
        graph.bfs_each(["a"])


def test_empty_sources_give_an_empty_frame_of_the_right_columns(engine):
    edges = reference.random_edges(n=50, m=100, seed=12, weights="positive", dtype="int32")
    graph = gpipe.Graph.from_edges(engine.frame(edges), weight="weight")
    got = run_checked(engine, graph.bfs_each([], parents=True), "int32")
    assert len(got) == 0 and list(got.columns) == ["source", "vertex", "distance", "parent"]
    got = run_checked(engine, graph.sssp_each(np.array([], dtype=np.int64)), "int32")
    assert list(got.columns) == ["source", "vertex", "distance"]


@pytest.mark.parametrize("kind", ["pandas", "dask", "numpy", "frame"])
def test_sources_as_a_column_of_another_frame(engine, kind):
    edges = reference.random_edges(n=200, m=700, seed=13)
    sources = sources_of(edges, 8, seed=6)
    flagged = pd.DataFrame({"account": sources, "score": np.arange(8)})
    given = {"pandas": flagged["account"],
             "dask": dd.from_pandas(flagged, npartitions=3)["account"],
             "numpy": flagged["account"].to_numpy().astype(np.uint32),
             "frame": dd.from_pandas(flagged[["account"]], npartitions=2)}[kind]
    graph = gpipe.Graph.from_edges(engine.frame(edges), directed=True)
    got = engine.run(graph.bfs_each(given))
    assert_rows(got, expected_rows(edges, sources, directed=True))


def test_string_ids(engine):
    edges = reference.random_edges(n=200, m=600, seed=14)
    names = {v: f"acct-{v:05d}" for v in np.unique(edges[["src", "dst"]].to_numpy())}
    twin = pd.DataFrame({"src": edges["src"].map(names), "dst": edges["dst"].map(names)})
    sources = sources_of(edges, 8, seed=7)
    graph = gpipe.Graph.from_edges(engine.frame(twin), directed=False)
    got = engine.run(graph.bfs_each([names[s] for s in sources], parents=True,
                                    targets=[names[sources[0]], "nobody"]))
    assert got["vertex"].tolist() == [names[sources[0]], "nobody"] * len(sources)
    back = {v: k for k, v in names.items()}
    got = engine.run(graph.bfs_each([names[s] for s in sources], parents=True))
    ints = got.assign(source=got["source"].map(back), vertex=got["vertex"].map(back),
                      parent=got["parent"].map(back))
    assert_rows(ints, expected_rows(edges, sources, directed=False))
    assert_parents(ints, edges, directed=False)


def test_gpipe_each_on_an_edge_frame(engine):
    edges = reference.random_edges(n=150, m=500, seed=15, weights="positive")
    sources = sources_of(edges, 6, seed=8)
    got = engine.run(gpipe.bfs_each(engine.frame(edges), sources, directed=False, depth_limit=3))
    assert_rows(got, expected_rows(edges, sources, directed=False, depth_limit=3))
    got = engine.run(gpipe.sssp_each(engine.frame(edges), sources, weight="weight"))
    assert_rows(got, expected_rows(edges, sources, directed=True, weight="weight"), exact=False)


def test_sssp_each_needs_weights_and_a_sane_max_distance():
    edges = reference.random_edges(n=50, m=100, seed=16)
    graph = gpipe.Graph.from_edges(edges)
    with pytest.raises(InputError, match="weight"):
        graph.sssp_each([int(edges["src"].iloc[0])])
    weighted = gpipe.Graph.from_edges(edges.assign(w=1.0), weight="w")
    with pytest.raises(InputError, match="max_distance"):
        weighted.sssp_each([int(edges["src"].iloc[0])], max_distance=-1)


@pytest.mark.parametrize("bad", ["5", True, float("nan")])
def test_sssp_each_checks_max_distance_and_parents_as_sssp_does(bad):
    edges = reference.random_edges(n=50, m=100, seed=16).assign(w=1.0)
    graph = gpipe.Graph.from_edges(edges, weight="w")
    source = int(edges["src"].iloc[0])
    with pytest.raises(InputError, match="max_distance"):
        graph.sssp_each([source], max_distance=bad)
    with pytest.raises(InputError, match="parents"):
        graph.sssp_each([source], parents="no")


def test_ids_no_integer_dtype_holds_are_input_errors_naming_them():
    edges = pd.DataFrame({"src": np.array([0, 1, 2], dtype=np.int32), "dst": np.array([1, 2, 3], dtype=np.int32)})
    graph = gpipe.Graph.from_edges(edges)
    with pytest.raises(InputError, match=str(2**70)):
        graph.bfs_each([2**70])
    with pytest.raises(InputError, match=str(2**32 + 1)):
        graph.bfs_each([0], targets=[2**32 + 1])  # would wrap to vertex 1 in int32


@pytest.mark.parametrize("max_distance", [None, 6.0])
def test_a_negative_self_loop_the_bounded_search_reaches_is_a_negative_cycle(max_distance):
    """The loop's vertex 2 is at 6.0: within max_distance (or without one) the search reaches
    it, and the loop is a negative cycle (one source and per source alike)."""
    edges = pd.DataFrame({"src": [0, 1, 2, 2, 3], "dst": [1, 2, 2, 3, 0],
                          "w": [1.0, 5.0, -1.0, 1.0, -0.5]})
    graph = gpipe.Graph.from_edges(edges, weight="w")
    with pytest.raises(NegativeCycleError):
        graph.sssp(0, max_distance=max_distance).compute()
    with pytest.raises(NegativeCycleError):
        graph.sssp_each([0], max_distance=max_distance).compute()


def test_a_negative_self_loop_beyond_max_distance_is_not_reached():
    """max_distance is Dijkstra's cutoff: the search never extends a path beyond it, so the
    loop's vertex (at 6.0) is unreached at max_distance 2.0 and its loop no negative cycle."""
    edges = pd.DataFrame({"src": [0, 1, 2, 2, 3], "dst": [1, 2, 2, 3, 0],
                          "w": [1.0, 5.0, -1.0, 1.0, -0.5]})
    graph = gpipe.Graph.from_edges(edges, weight="w")
    got = graph.sssp(0, max_distance=2.0).compute().set_index("vertex")["distance"]
    assert got.loc[0] == 0.0 and got.loc[1] == 1.0
    assert got.loc[[2, 3]].isna().all()
    each = graph.sssp_each([0], max_distance=2.0).compute()
    assert sorted(each["vertex"].tolist()) == [0, 1]


# ---------------------------------------------------------------------------------------------
# Laziness and task names
# ---------------------------------------------------------------------------------------------


def test_each_batch_is_one_lazy_partition_named_for_gpipe():
    from dask.utils import key_split

    edges = reference.random_edges(n=300, m=900, seed=17)
    sources = sources_of(edges, 150, seed=9)
    graph = gpipe.Graph.from_edges(edges)
    result = graph.bfs_each(sources)
    width = gpipe.engine.compute.cpu.BFS_BATCH_WIDTH
    assert result.npartitions == -(-len(sources) // width)
    names = {key_split(k) for k in dict(result.__dask_graph__())}
    assert "gpipe-bfs-each" in names
    first = result.get_partition(0).compute()
    assert pd.unique(first["source"]).tolist() == sources[:width].tolist()


# ---------------------------------------------------------------------------------------------
# One-owner graphs on the 2-worker cluster: replicas, a worker killed during a batch
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def cluster_client(dask_client2):
    with dask_client2.as_current(), dask.config.set({"gpipe.partitions": 1}):
        yield dask_client2


def test_the_owner_keeps_the_original_once_the_copies_are_made(cluster_client):
    """Once the copies are made, the original's key stays on the owner alone, past a round of
    the scheduler's memory manager (every 2 s), which would otherwise drop one of its two
    replicas, maybe the owner's."""
    import time

    import distributed

    from gpipe.partitioning import build

    edges = reference.random_edges(n=500, m=2000, seed=19)
    graph = gpipe.Graph.from_edges(dd.from_pandas(edges, npartitions=2), directed=False)
    built, executor = graph.engine.built, graph.engine.executor
    original, copy = build.copies(built)
    assert build.copies(built) == [original, copy]  # made once
    distributed.wait([copy])
    time.sleep(2.5)
    held = cluster_client.who_has([original, copy])
    assert held[original.key] == (executor.workers[0],)
    assert len(held[copy.key]) == 1 and held[copy.key] != held[original.key]


def test_batches_run_on_every_replica_and_answer_as_one_replica(cluster_client):
    from distributed import get_task_stream

    edges = reference.random_edges(n=500, m=2000, seed=18)
    sources = sources_of(edges, 320, seed=10)
    graph = gpipe.Graph.from_edges(dd.from_pandas(edges, npartitions=2), directed=False)
    assert graph.num_partitions == 1 and graph.replicas == 2
    built = graph.engine.built
    assert built.replicas is None, "the build made the copies: the first batch call should"
    with get_task_stream(cluster_client) as stream:
        got = graph.bfs_each(sources).compute()
    workers = {t["worker"] for t in stream.data if "gpipe-bfs-each" in str(t["key"])}
    assert len(workers) == 2, f"batches ran on {workers}"
    original, copy = built.replicas
    assert str(copy.key).startswith("gpipe-replica-") and cluster_client.who_has([copy])[copy.key]
    single = gpipe.Graph.from_edges(dd.from_pandas(edges, npartitions=2), directed=False, replicas=1)
    assert single.replicas == 1
    pd.testing.assert_frame_equal(got.reset_index(drop=True),
                                  single.bfs_each(sources).compute().reset_index(drop=True))
    assert_rows(got, expected_rows(edges, sources, directed=False))


def test_a_worker_without_room_when_the_copies_are_made_gets_none(cluster_client):
    """The workers chosen at the build are asked again when the first batch call makes the
    copies: one that has no room by then gets no copy. (Where the batches then run is Dask's
    choice: it may move some, and the partition with them, to an idle worker.)"""
    from gpipe.partitioning import sizing

    edges = reference.random_edges(n=500, m=2000, seed=17)
    sources = sources_of(edges, 200, seed=9)
    graph = gpipe.Graph.from_edges(dd.from_pandas(edges, npartitions=2), directed=False)
    assert graph.replicas == 2
    with dask.config.set({sizing.FRACTION_KEY: 1e-12}):
        got = graph.bfs_each(sources).compute()
    built = graph.engine.built
    assert graph.replicas == 1 and built.replicas == built.parts  # no copy was made
    assert_rows(got, expected_rows(edges, sources, directed=False))


def test_replicas_must_be_a_positive_integer():
    edges = reference.random_edges(n=50, m=100, seed=19)
    with pytest.raises(InputError, match="replicas"):
        gpipe.Graph.from_edges(edges, replicas=0)


def _dying_batch(marker):
    """Wrap gpipe.engine.batches.one_owner_batch on this worker so that its first batch kills
    the worker's process (once: the marker file is created once, across processes)."""
    from gpipe.engine import batches

    original = batches.one_owner_batch

    def batch(*args):
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return original(*args)
        os._exit(1)

    batches.one_owner_batch = batch


@pytest.mark.timeout(120)
def test_a_worker_killed_during_a_batch_is_recomputed_from_lineage(tmp_path):
    """The worker of the partition's copy dies in its first batch: Dask makes the copy again
    from the owner's partition and runs the batch once more; the answer is whole and right."""
    from distributed import Client, LocalCluster

    edges = reference.random_edges(n=400, m=1600, seed=20, weights="positive")
    sources = sources_of(edges, 200, seed=11)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                      env={"NUMBA_NUM_THREADS": "1"}) as cluster, \
            Client(cluster, set_as_default=False) as client, client.as_current():
        client.wait_for_workers(2)
        graph = gpipe.Graph.from_edges(dd.from_pandas(edges, npartitions=2), weight="weight")
        assert graph.replicas == 2
        result = graph.sssp_each(sources, parents=True)
        copy = graph.engine.built.replicas[1]  # the owner keeps the original, whose loss loses the graph
        (copy_worker,) = client.who_has([copy])[copy.key]
        client.run(_dying_batch, str(tmp_path / "killed"), workers=[copy_worker])
        got = result.compute()
    assert (tmp_path / "killed").exists(), "no batch started on a wrapped worker"
    assert_rows(got, expected_rows(edges, sources, directed=True, weight="weight"), exact=False)
    assert_parents(got, edges, directed=True, weight="weight")


# ---------------------------------------------------------------------------------------------
# GPU batch kernels (the CPU twins are in tests/test_kernels_cpu.py)
# ---------------------------------------------------------------------------------------------


def _gpu_kernels():
    import cupy

    from gpipe.engine.compute import gpu

    if not hasattr(gpu, "bfs_batch"):
        pytest.skip("gpipe.engine.compute.gpu has no batch kernels yet")
    return gpu, cupy.asarray, cupy.asnumpy


@pytest.mark.gpu
@pytest.mark.parametrize("index_dtype", kernel_graphs.INDEX_DTYPES)
@pytest.mark.parametrize("directed", [True, False], ids=["directed", "undirected"])
@pytest.mark.parametrize("k, depth_limit", [(1, -1), (64, -1), (150, -1), (40, 2)])
def test_gpu_bfs_batch_matches_scipy_per_source(index_dtype, directed, k, depth_limit):
    kernel_graphs.check_bfs_batch(*_gpu_kernels(), index_dtype, directed, k, depth_limit)


@pytest.mark.gpu
@pytest.mark.parametrize("index_dtype", kernel_graphs.INDEX_DTYPES)
@pytest.mark.parametrize("directed", [True, False], ids=["directed", "undirected"])
@pytest.mark.parametrize("max_distance", [None, 12.0])
def test_gpu_sssp_batch_matches_scipy_per_source(index_dtype, directed, max_distance):
    kernel_graphs.check_sssp_batch(*_gpu_kernels(), index_dtype, directed, 37, max_distance)


@pytest.mark.gpu
@pytest.mark.parametrize("index_dtype", kernel_graphs.INDEX_DTYPES)
def test_gpu_sssp_batch_negative_weights_and_cycle(index_dtype):
    kernels, device, host = _gpu_kernels()
    kernel_graphs.check_sssp_batch_negative(kernels, device, host, index_dtype)
    kernel_graphs.check_sssp_batch_negative_cycle(kernels, device, index_dtype)


# ---------------------------------------------------------------------------------------------
# gpipe bench --each
# ---------------------------------------------------------------------------------------------


def test_bench_each_reports_every_row_and_agrees_with_scipy(tmp_path, capsys):
    import json

    from gpipe.tools import cli

    path = tmp_path / "each.json"
    status = cli.main(["-q", "bench", "--scale", "8", "--each", "70", "--algo", "both",
                       "--compare-scipy", "--each-parquet", "--backend", "cpu", "--json", str(path)])
    assert status == 0
    report = json.loads(path.read_text())
    queries = [row["query"] for row in report["rows"]]
    assert queries == ["bfs_each", "sssp_each", "bfs_each depth_limit=2 to_parquet"]
    for row in report["rows"][:2]:
        assert row["sources"] == 70 and row["rows"] > 70 and row["total_s"] > 0
        assert row["scipy_agrees"] is True and row["scipy_s"] > 0
    streamed = report["rows"][2]
    assert streamed["rows"] > 70 and streamed["rows_per_s"] > 0 and streamed["peak_bytes"] >= 0
    assert "bfs_each" in capsys.readouterr().out


def test_batches_over_an_nccl_communicator_take_turns(dask_client2):
    """Two batches at once over one communicator would interleave their collectives: each
    batch of a graph whose owners talk NCCL waits for the one before it to end (its rows do
    not come along). Over Dask's comms the batches run side by side."""
    edges = reference.random_edges(400, 1600, seed=71)
    sources = reference.pick_sources(edges, 130, seed=71)  # three batches of 64
    with dask_client2.as_current():
        graph = gpipe.Graph.from_edges(dd.from_pandas(edges, npartitions=2), directed=False,
                                       partitions=2)
        built = graph.engine.built

        def waits_on(frame):
            from dask.core import get_dependencies

            tasks = dict(frame.__dask_graph__())
            batches = sorted((k for k in tasks if isinstance(k, tuple) and "gpipe-bfs-each" in k[0]),
                             key=lambda k: int(k[0].rsplit("-", 1)[1]))
            return [any("ended" in str(d) for d in get_dependencies(tasks, b)) for b in batches]

        assert waits_on(graph.bfs_each(sources)) == [False, False, False]
        built.nccl_group = "an NCCL communicator"  # only the graph's plan is read below
        try:
            assert waits_on(graph.bfs_each(sources)) == [False, True, True]
        finally:
            built.nccl_group = None


def test_bench_each_says_on_how_many_workers_the_batches_ran():
    """The replicas row counts the workers that ran batches, for every replica and for one, so
    a one-replica time that Dask's work stealing spread over two workers shows as such."""
    from gpipe.tools import bench_each

    report = bench_each.run(scale=8, each=130, backend="cpu", workers=2)
    (row,) = [r for r in report["rows"] if "replica_ratio" in r]
    assert row["replicas"] == report["replicas"] == 2 and row["identical"]
    assert row["batch_workers"]["replicas"] == 2 and 1 <= row["batch_workers"]["one"] <= 2
    assert "target >= 1.4x" in bench_each.format_table(report)
    assert "batches ran on 2 / " in bench_each.format_table(report)
    spans = row["batch_span_s"]
    assert 0 < spans["replicas"] <= row["total_s"] and 0 < spans["one"] <= row["one_replica_s"]
    assert "the batches alone (first start to last end)" in bench_each.format_table(report)
