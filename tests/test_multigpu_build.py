"""Building a graph over two real GPUs from Parquet, as users do (issue 22): files that
outnumber or underflow the owners, a file larger than an owner's share, sparse and string ids
across owners, a split cut in many chunks, and a graph too large refused before any read.

Skipped unless two CUDA devices, cuDF, dask_cudf and dask_cuda are there (tests/conftest.py).
Every result is checked against SciPy (tests/reference.py) and its parent tree validated.
"""

from __future__ import annotations

import dask
import numpy as np
import pandas as pd
import pytest

import gpipe
import reference
from gpipe.io import read as reads
from gpipe.partitioning import build
from gpipe.partitioning import sizing
from test_api import check_bfs_tree

pytestmark = [pytest.mark.multigpu, pytest.mark.timeout(300)]


def _write(edges, folder, files, row_group_size=None):
    folder.mkdir()
    for i, part in enumerate(np.array_split(np.arange(len(edges)), files)):
        edges.iloc[part].to_parquet(folder / f"part-{i}.parquet", index=False, row_group_size=row_group_size)
    return folder


def _bfs_on_two_owners(path, edges, source, *, directed):
    frame = gpipe.read_edges(path)
    graph = gpipe.Graph.from_edges(frame, directed=directed, partitions=2)
    assert graph.num_partitions == 2 and graph.backend == "gpu"
    out = graph.bfs(source).compute().to_pandas()
    reference.assert_distances(out, reference.expected_bfs(edges, [source], directed=directed))
    check_bfs_tree(edges, out, [source], directed=directed)
    return frame


@pytest.mark.parametrize("files", [1, 5], ids=["fewer-files-than-owners", "more-files-than-owners"])
@pytest.mark.parametrize("directed", [True, False], ids=["directed", "undirected"])
def test_parquet_files_build_a_graph_on_two_owners(multigpu, tmp_path, files, directed):
    edges = reference.random_edges(2_000, 9_000, seed=files)
    path = _write(edges, tmp_path / "edges", files)
    _bfs_on_two_owners(path, edges, int(edges["src"].iloc[0]), directed=directed)


def test_a_file_larger_than_an_owners_share_is_read_as_several_partitions(multigpu, tmp_path, monkeypatch):
    edges = reference.random_edges(3_000, 12_000, seed=4)
    path = _write(edges, tmp_path / "edges", 1, row_group_size=1_000)  # 12 row groups
    monkeypatch.setattr(reads, "GPU_BLOCK_BYTES", 16_000)  # ~1,000 rows of two int64 ids
    frame = _bfs_on_two_owners(path, edges, int(edges["src"].iloc[0]), directed=False)
    assert frame.npartitions > 2


@pytest.mark.parametrize("ids", ["sparse", "negative", "strings"])
def test_renumbered_ids_across_two_owners(multigpu, tmp_path, ids):
    edges = reference.random_edges(1_500, 6_000, seed=9, ids="sparse" if ids == "strings" else ids)
    if ids == "strings":
        edges = edges.assign(src=edges["src"].map("v{}".format), dst=edges["dst"].map("v{}".format))
    path = _write(edges, tmp_path / "edges", 3)
    source = edges["src"].iloc[0]
    graph = gpipe.Graph.from_edges(gpipe.read_edges(path), directed=True, partitions=2)
    assert graph.num_partitions == 2
    out = graph.bfs(source).compute().to_pandas()
    if ids == "strings":  # SciPy's reference on the same graph with integer ids
        code = {v: i for i, v in enumerate(pd.unique(pd.concat([edges["src"], edges["dst"]])))}
        as_ints = edges.assign(src=edges["src"].map(code), dst=edges["dst"].map(code))
        expected = reference.expected_bfs(as_ints, [code[source]], directed=True)
        expected.index = pd.Index(list(code), name="vertex")[expected.index.to_numpy()]
        out = out.astype({"vertex": str})
    else:
        expected = reference.expected_bfs(edges, [source], directed=True)
    reference.assert_distances(out, expected)


def test_a_split_in_many_chunks_on_two_gpus(multigpu, tmp_path):
    def split_rows(rows):
        build.sizing.SPLIT_ROWS = rows

    edges = reference.random_edges(2_000, 9_000, seed=12)
    path = _write(edges, tmp_path / "edges", 2)
    multigpu.run(split_rows, 333)
    try:
        _bfs_on_two_owners(path, edges, int(edges["src"].iloc[0]), directed=False)
    finally:
        multigpu.run(split_rows, 2**26)


def test_a_graph_too_large_is_refused_before_its_files_are_read(multigpu, tmp_path):
    def reads_so_far():
        from gpipe.io import read

        return read.read_cudf_piece.reads

    def count_reads(on: bool):
        from gpipe.io import read

        if not on:  # the session's cluster reads as before for the tests after this one
            read.read_cudf_piece = read.read_cudf_piece.original
            return
        original = read.read_cudf_piece

        def counted(*args, **kwargs):
            counted.reads += 1
            return original(*args, **kwargs)

        counted.original, counted.reads = original, 0
        read.read_cudf_piece = counted

    edges = reference.random_edges(2_000, 9_000, seed=13)
    path = _write(edges, tmp_path / "edges", 2)
    multigpu.run(count_reads, True)
    try:
        before = multigpu.run(reads_so_far)
        with dask.config.set({sizing.FRACTION_KEY: 1e-9}):
            with pytest.raises(gpipe.GraphTooLarge, match=r"the graph needs about .* on each of"):
                gpipe.Graph.from_edges(gpipe.read_edges(path), directed=False, partitions=2)
        assert multigpu.run(reads_so_far) == before
        gpipe.Graph.from_edges(gpipe.read_edges(path), directed=False, partitions=2)  # the counter counts
        assert sum(multigpu.run(reads_so_far).values()) > sum(before.values())
    finally:
        multigpu.run(count_reads, False)
