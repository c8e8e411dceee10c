"""Numbering, shuffling and per-owner CSR building."""

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from gpipe.engine import execution
from gpipe.engine.partition import Layout
from gpipe.errors import InputError
from gpipe.partitioning import build


def _edges(src, dst, npartitions=2, **extra):
    return dd.from_pandas(pd.DataFrame({"src": src, "dst": dst, **extra}), npartitions=npartitions)


def test_layout_covers_every_id_once():
    layout = Layout(n=300, n_owners=3)  # ceil(300 / 3) = 100, rounded up to 128
    sizes = [layout.size(p) for p in range(3)]
    assert sizes == [128, 128, 44]
    assert [layout.offset(p) for p in range(3)] == [0, 128, 256]
    assert layout.owner_of(np.arange(300)).tolist() == [0] * 128 + [1] * 128 + [2] * 44


def test_layout_offsets_are_word_aligned_and_late_owners_may_be_empty():
    for n, n_owners in [(10, 3), (64, 2), (65, 2), (1000, 7), (5, 1)]:
        layout = Layout(n=n, n_owners=n_owners)
        sizes = [layout.size(p) for p in range(n_owners)]
        assert sum(sizes) == n and min(sizes) >= 0
        if n_owners > 1:
            assert layout.chunk % 64 == 0
        owners = layout.owner_of(np.arange(n))
        for p in range(n_owners):
            assert (owners == p).sum() == sizes[p]
            if sizes[p]:
                assert layout.offset(p) == p * layout.chunk
    assert [Layout(n=10, n_owners=3).size(p) for p in range(3)] == [10, 0, 0]
    assert Layout(n=5, n_owners=1).chunk == 5  # one owner: no rounding


def test_small_non_negative_ids_are_kept_as_they_are():
    built = build.build(execution.InProcess(), _edges([0, 1, 5], [1, 2, 0]), directed=True,
                        src="src", dst="dst", weight=None)
    assert built.ids is None
    assert built.layout.n == 6
    (part,) = built.parts
    assert part.present.tolist() == [True, True, True, False, False, True]


def test_sparse_or_negative_ids_are_renumbered_in_sorted_order():
    src = np.array([10**15, -7, 3], dtype=np.int64)
    dst = np.array([-7, 3, 10**15], dtype=np.int64)
    built = build.build(execution.InProcess(), _edges(src, dst), directed=True, src="src", dst="dst", weight=None)
    assert built.ids.tolist() == [-7, 3, 10**15]
    (part,) = built.parts
    assert part.present is None
    assert part.indptr.tolist() == [0, 1, 2, 3]
    assert part.indices.tolist() == [1, 2, 0]


def test_undirected_stores_both_directions_and_drops_self_loops():
    built = build.build(execution.InProcess(), _edges([0, 1, 2], [1, 1, 0], weight=[1.0, 2.0, 3.0]),
                        directed=False, src="src", dst="dst", weight="weight")
    (part,) = built.parts
    neighbours = {u: sorted(part.indices[part.indptr[u]:part.indptr[u + 1]].tolist()) for u in range(3)}
    assert neighbours == {0: [1, 2], 1: [0], 2: [0]}
    assert part.present.tolist() == [True, True, True]
    assert part.weights.dtype == np.float64


def test_vertex_only_in_a_self_loop_is_present():
    built = build.build(execution.InProcess(), _edges([0, 3], [1, 3]), directed=True, src="src", dst="dst", weight=None)
    (part,) = built.parts
    assert part.present.tolist() == [True, True, False, True]
    assert part.n_edges == 1


def test_negative_weights_are_noted():
    built = build.build(execution.InProcess(), _edges([0, 1], [1, 2], w=[1.0, -1.0]), directed=True,
                        src="src", dst="dst", weight="w")
    assert built.negative_weights


@pytest.mark.parametrize("n_owners", [2, 3])
def test_shuffle_sends_each_edge_to_the_owner_of_its_source(n_owners):
    executor = execution.InProcess()
    executor.n_owners = n_owners  # the multi-owner path, run in this process
    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, 50, 300), rng.integers(0, 50, 300)
    built = build.build(executor, _edges(src, dst, npartitions=3), directed=True, src="src", dst="dst", weight=None)
    got = set()
    for part in built.parts:
        owned = np.repeat(np.arange(part.n_local) + part.offset, np.diff(part.indptr))
        got |= set(zip(owned.tolist(), part.indices.tolist()))
    assert got == {(s, d) for s, d in zip(src.tolist(), dst.tolist()) if s != d}


@pytest.mark.parametrize("directed", [True, False], ids=["directed", "undirected"])
@pytest.mark.parametrize("n_owners", [1, 2])
def test_negative_self_loops_are_listed_by_owner(directed, n_owners):
    executor = execution.InProcess()
    executor.n_owners = n_owners
    edges = _edges([0, 1, 1, 5, 5, 6], [1, 1, 2, 5, 5, 6], w=[1.0, -1.0, 2.0, -2.0, -3.0, 4.0])
    built = build.build(executor, edges, directed=directed, src="src", dst="dst", weight="w")
    loops = [part.offset + part.negative_loops for part in built.parts]
    assert [p.negative_loops.dtype for p in built.parts] == [np.int64] * n_owners
    assert np.concatenate(loops).tolist() == [1, 5]  # 6's loop is positive; 5's listed once
    for part in built.parts:  # and the CSR still holds no self-loop
        owned = np.repeat(np.arange(part.n_local) + part.offset, np.diff(part.indptr))
        assert not (owned == part.indices).any()


def test_negative_self_loops_are_not_looked_for_without_negative_weights():
    built = build.build(execution.InProcess(), _edges([0, 1], [1, 1], w=[1.0, 2.0]), directed=True,
                        src="src", dst="dst", weight="w")
    assert built.parts[0].negative_loops is None


U64_TOP = 2**64 - 1


@pytest.mark.parametrize("src_dtype, dst_dtype, low, high, expected", [
    ("int32", "int32", -5, 5, "int32"),
    ("Int64", "Int64", -5, 5, "Int64"),  # one dtype: the input's own, extension included
    ("uint8", "int16", 0, 200, "int16"),
    ("uint32", "int64", -5, 2**32 - 1, "int64"),
    ("uint64", "int64", -5, 2**63 - 1, "int64"),
    ("int8", "uint64", 0, 2**63, "uint64"),
    ("UInt64", "Int64", -5, 5, "int64"),
    ("Int64", "uint64", 0, U64_TOP, "uint64"),
])
def test_vertex_dtype_holds_both_columns(src_dtype, dst_dtype, low, high, expected):
    dtypes = [pd.api.types.pandas_dtype(d) for d in (src_dtype, dst_dtype, expected)]
    got = build.result_id_dtype(build.Columns("s", "d", None), dtypes[0], dtypes[1], low, high)
    assert got == dtypes[2] and type(got) is type(dtypes[2])


def test_vertex_dtype_that_no_integer_dtype_holds_is_an_input_error():
    with pytest.raises(InputError, match=r"'s' \(uint64\) and 'd' \(Int64\)"):
        build.result_id_dtype(build.Columns("s", "d", None), np.dtype("uint64"), pd.Int64Dtype(),
                            -1, 2**63)


def _stored(built):
    """The (row, target, weight) triples the owners' CSRs hold, in global ids."""
    got = []
    for part in built.parts:
        owned = np.repeat(np.arange(part.n_local) + part.offset, np.diff(part.indptr))
        weights = part.weights if part.weights is not None else np.zeros(len(part.indices))
        got += zip(owned.tolist(), part.indices.tolist(), weights.tolist())
    return sorted(got)


@pytest.mark.parametrize("directed", [True, False], ids=["directed", "undirected"])
@pytest.mark.parametrize("ids", ["dense", "sparse"])
def test_a_split_in_chunks_builds_the_graph_of_an_unsplit_one(monkeypatch, directed, ids):
    rng = np.random.default_rng(1)
    src, dst = rng.integers(0, 40, 500), rng.integers(0, 40, 500)
    if ids == "sparse":
        src, dst = src * 1_000_003 - 7, dst * 1_000_003 - 7
    weights = rng.integers(-3, 9, 500).astype(float)

    def built_with(split_rows):
        monkeypatch.setattr(build.sizing, "SPLIT_ROWS", split_rows)
        executor = execution.InProcess()
        executor.n_owners = 3
        return build.build(executor, _edges(src, dst, npartitions=3, w=weights), directed=directed,
                           src="src", dst="dst", weight="w")

    whole, chunked = built_with(2**26), built_with(7)  # 7 rows: 24 chunks of each partition
    assert _stored(chunked) == _stored(whole)
    assert len(_stored(whole)) == (1 if directed else 2) * int((src != dst).sum())
    for a, b in zip(whole.parts, chunked.parts):
        assert np.array_equal(a.present, b.present)
        assert np.array_equal(a.negative_loops if a.negative_loops is not None else [],
                              b.negative_loops if b.negative_loops is not None else [])
    assert chunked.rows == whole.rows


def test_a_split_in_chunks_on_a_two_worker_cluster_matches_scipy(dask_client2):
    import scipy.sparse as sp
    from scipy.sparse import csgraph

    import gpipe

    def split_rows(rows):
        build.sizing.SPLIT_ROWS = rows

    rng = np.random.default_rng(2)
    src, dst = rng.integers(0, 300, 2000), rng.integers(0, 300, 2000)
    edges = _edges(src, dst, npartitions=4)
    dask_client2.run(split_rows, 13)
    try:
        with dask_client2.as_current():
            graph = gpipe.Graph.from_edges(edges, directed=False, partitions=2)
            assert graph.num_partitions == 2
            got = graph.bfs(int(src[0])).compute().set_index("vertex")["distance"]
    finally:
        dask_client2.run(split_rows, 2**26)
    matrix = sp.coo_matrix((np.ones(len(src)), (src, dst)), shape=(300, 300)).tocsr()
    expected = csgraph.shortest_path(matrix, directed=False, unweighted=True, indices=int(src[0]))
    reached = np.flatnonzero(np.isfinite(expected))
    assert got.loc[reached].sort_index().to_numpy().tolist() == expected[reached].tolist()


@pytest.mark.parametrize("family", ["dask", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_dask_moves_a_partition_as_its_arrays(family):
    from distributed.protocol import deserialize, serialize

    import gpipe

    frame = pd.DataFrame({"src": [0, 1, 2, 2], "dst": [1, 2, 0, 3], "w": [1.0, 2.0, 3.0, 4.0]})
    if family == "cuda":
        import cudf

        frame = cudf.from_pandas(frame)
    graph = gpipe.Graph.from_edges(frame, directed=True, weight="w")
    part = graph.engine.built.parts[0]
    from dask.sizeof import sizeof

    from gpipe.engine.partition import register_with_dask

    register_with_dask()  # what a client's executor does first (a graph built without one moves nowhere)

    assert sizeof(part) >= part.nbytes  # what the scheduler weighs before moving a task to it
    header, frames = serialize(part, serializers=(family,))  # no pickle to fall back on
    assert header["serializer"] == family
    assert sum(memoryview(f).nbytes if family == "dask" else f.nbytes for f in frames) >= part.nbytes
    if family == "cuda":  # the frames are the device arrays themselves
        assert all(hasattr(f, "__cuda_array_interface__") for f in frames)
    copy = deserialize(header, frames)
    assert type(copy) is type(part) and (copy.offset, copy.n_local, copy.n) == (part.offset, part.n_local, part.n)
    for name in ("indptr", "indices", "weights"):
        assert getattr(copy, name).tolist() == getattr(part, name).tolist()


def test_every_worker_of_a_multi_owner_build_frees_the_pools_cache_once_its_buckets_are_gone(dask_client2):
    from distributed import get_task_stream

    import gpipe

    rng = np.random.default_rng(3)
    src, dst = rng.integers(0, 500, 4000), rng.integers(0, 500, 4000)
    with dask_client2.as_current(), get_task_stream(dask_client2) as stream:
        graph = gpipe.Graph.from_edges(_edges(src, dst, npartitions=4), directed=False, partitions=2)
    assert graph.num_partitions == 2
    tasks = [(t["key"], t["worker"], t["startstops"]) for t in stream.data]

    def ran(prefix):
        return [(worker, spans) for key, worker, spans in tasks if key.startswith(prefix)]

    releases = ran("gpipe-build-release-")
    builders = {worker for worker, _ in ran("gpipe-shuffle-") + ran("gpipe-build-0-") + ran("gpipe-build-1-")}
    assert sorted(worker for worker, _ in releases) == sorted(builders) == sorted(dask_client2.scheduler_info()["workers"])
    last_build_end = max(s["stop"] for prefix in ("gpipe-shuffle-", "gpipe-build-0-", "gpipe-build-1-")
                         for _, spans in ran(prefix) for s in spans if s["action"] == "compute")
    assert all(s["start"] >= last_build_end for _, spans in releases for s in spans if s["action"] == "compute")
    held = dask_client2.run(lambda dask_worker: [str(k) for k in dask_worker.data if str(k).startswith("gpipe-shuffle")])
    assert held == {worker: [] for worker in held}
