"""gpipe.engine.in_memory: edge frames this process holds go into the build as they are.

A plain pandas (cuDF) frame, ``dd.from_pandas`` of one (either ``sort=``) and a Parquet file
of the same rows must build the same graph: the frames handed to the build are the rows Dask
would compute, in the same order (a graph follows the order of its edges), and the results
have the same distances and valid trees (the parallel kernels may pick other parents among
equals). The in-process build must not hash the frame's rows. Each test runs on pandas and,
marked ``gpu``, on cuDF.
"""

from __future__ import annotations

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import gpipe
import reference
from gpipe.engine import in_memory


@pytest.fixture(params=[pytest.param("cpu", id="pandas"), pytest.param("gpu", id="cudf", marks=pytest.mark.gpu)])
def backend(request):
    return request.param


def as_backend(pdf, backend):
    if backend == "gpu":
        import cudf

        return cudf.from_pandas(pdf)
    return pdf


def as_pandas(frame):
    if not isinstance(frame, pd.DataFrame):
        frame = frame.to_pandas(nullable=True)
    return frame.sort_values("vertex").reset_index(drop=True)


def edges(index=None):
    """Many equal-length paths, so that a BFS's parents depend on the order of the edges."""
    pdf = reference.random_edges(200, 1500, seed=7, weights="positive", ids="sparse")
    if index is not None:
        pdf.index = index(len(pdf))
    return pdf


def results(frame):
    """The BFS and SSSP results of the graph built from ``frame``, as sorted pandas frames."""
    graph = gpipe.Graph.from_edges(frame, directed=False, weight="weight")
    source = int(reference.widest_source(edges(), directed=False))
    return as_pandas(graph.bfs(source).compute()), as_pandas(graph.sssp(source).compute())


def parquet(pdf, backend, tmp_path):
    path = tmp_path / "edges.parquet"
    pq.write_table(pa.Table.from_pandas(pdf, preserve_index=False), path)
    return gpipe.read_edges(str(path), backend=backend)


def assert_same(got, expected):
    """Same vertices and distances, and parents that form a valid BFS / SSSP tree."""
    from gpipe.tools.verify import check_bfs_tree, check_sssp_tree

    pdf = edges()
    source = int(reference.widest_source(pdf, directed=False))
    for a, b in zip(got, expected):
        pd.testing.assert_frame_equal(a[["vertex", "distance"]], b[["vertex", "distance"]])
    check_bfs_tree(pdf, got[0], [source], directed=False)
    check_sssp_tree(pdf, got[1], [source], directed=False)


def test_every_in_memory_form_builds_what_parquet_builds(backend, tmp_path):
    pdf = edges()
    frame = as_backend(pdf, backend)
    expected = results(parquet(pdf, backend, tmp_path))
    assert_same(results(frame), expected)
    for npartitions in (1, 3):
        for sort in (False, True):
            assert_same(results(dd.from_pandas(frame, npartitions=npartitions, sort=sort)), expected)


def test_an_unsorted_index_gives_the_same_results(backend, tmp_path):
    """With an unsorted index, ``sort=True`` orders the rows by it, as Dask does; ``sort=False``
    keeps them as they are; a plain frame is taken as it is."""
    pdf = edges(index=lambda n: np.random.default_rng(3).permutation(n))
    frame = as_backend(pdf, backend)
    unsorted, by_index = results(parquet(pdf, backend, tmp_path)), results(parquet(pdf.sort_index(), backend, tmp_path))
    assert_same(results(dd.from_pandas(frame, npartitions=3, sort=False)), unsorted)
    assert_same(results(dd.from_pandas(frame, npartitions=3, sort=True)), by_index)
    assert_same(results(frame), unsorted)


def test_held_frames_are_what_dask_would_compute(backend):
    pdf = edges(index=lambda n: np.random.default_rng(3).permutation(n)).assign(label="x")
    frame = as_backend(pdf, backend)
    for sort in (False, True):
        ddf = dd.from_pandas(frame, npartitions=3, sort=sort)
        for selected in (ddf, ddf[["dst", "src"]]):
            held = in_memory.held_frames(selected)
            assert len(held) == 1
            expected = selected.compute()
            assert list(held[0].columns) == list(expected.columns)
            assert held[0].dtypes.to_dict() == expected.dtypes.to_dict()
            pd.testing.assert_frame_equal(as_pandas_rows(held[0]), as_pandas_rows(expected))
    assert in_memory.held_frames(ddf["src"]) is None  # a Series
    assert in_memory.held_frames(ddf.partitions[1]) is None  # some rows only
    assert in_memory.held_frames(ddf.map_partitions(lambda f: f)) is None


def as_pandas_rows(frame):
    return frame if isinstance(frame, pd.DataFrame) else frame.to_pandas()


def test_a_plain_frame_is_one_partition_of_known_length(backend):
    frame = as_backend(edges(), backend)
    wrapped = in_memory.collection(frame)
    assert wrapped.npartitions == 1 and len(wrapped) == len(frame)
    assert in_memory.held_frames(wrapped)[0] is frame
    assert in_memory.held_frames(wrapped[["src", "dst"]])[0].columns.tolist() == ["src", "dst"]


def test_the_in_process_build_hashes_no_rows(backend, monkeypatch):
    pdf = edges()
    frame = as_backend(pdf, backend)
    from_pandas = dd.from_pandas(frame, npartitions=3, sort=False)  # Dask hashes it here, to name it
    hashed = []
    frame_type = type(frame)
    normalize = dask.base.normalize_token.dispatch(frame_type)

    def counting(df):
        if len(df):  # empty meta frames are hashed too, and cost nothing
            hashed.append(len(df))
        return normalize(df)

    monkeypatch.setitem(dask.base.normalize_token._lookup, frame_type, counting)
    for form in (frame, from_pandas):
        graph = gpipe.Graph.from_edges(form, directed=False, weight="weight")
        graph.sssp(int(pdf["src"].iloc[0])).compute()
    assert hashed == []


def test_row_slices_cover_every_row_in_order():
    frames = [pd.DataFrame({"a": range(5)}), pd.DataFrame({"a": range(5, 12)})]
    for count in (1, 2, 3, 5, 40):
        slices = in_memory.row_slices(frames, count)
        assert len(slices) >= min(count, 12) and all(len(s) for s in slices)
        assert pd.concat(slices)["a"].tolist() == list(range(12))
    assert len(in_memory.row_slices([pd.DataFrame({"a": []})], 4)) == 1


def test_on_a_cluster_the_frame_is_scattered_in_runs_of_rows(dask_client2, tmp_path):
    """With a client, an in-memory frame reaches the workers as one run of rows each (no task
    graph holds it) and builds the graph Parquet builds, over two owners."""
    pdf = edges()
    scattered = []
    scatter = dask_client2.scatter

    def counting(data, **kwargs):
        scattered.append([len(part) for part in data])
        return scatter(data, **kwargs)

    with dask_client2.as_current(), dask.config.set({"gpipe.partitions": 2}):
        expected = results(parquet(pdf, "cpu", tmp_path))
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(dask_client2, "scatter", counting)
            for form in (pdf, dd.from_pandas(pdf, npartitions=3, sort=True)):
                assert_same(results(form), expected)
    assert scattered == [[750, 750], [750, 750]]


@pytest.mark.multigpu
def test_on_a_cuda_cluster_a_cudf_frame_is_scattered(multigpu, tmp_path):
    import cudf

    pdf = edges()
    frame = cudf.from_pandas(pdf)
    with dask.config.set({"gpipe.partitions": 2}):
        expected = results(parquet(pdf, "gpu", tmp_path))
        assert_same(results(frame), expected)
        assert_same(results(dd.from_pandas(frame, npartitions=3)), expected)
