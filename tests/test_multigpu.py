"""The multi-owner path on a 2-worker LocalCUDACluster: cuDF partitions in and out.

Skipped unless two CUDA devices, cuDF, dask_cudf and dask_cuda are there (tests/conftest.py).
The cases are those of tests/test_api.py, run through the ``multigpu_engine`` fixture, which
turns inputs into cuDF-backed Dask DataFrames and checks that every result is too.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import gpipe
import reference
from conftest import multigpu_devices
from gpipe.engine.owners import bfs as owners_bfs
from test_api import BFS_CASES, check_frame, run_bfs, run_sssp, sorted_frame, sssp_case
from test_peers import MIXED, check_directions, check_tree

pytestmark = [pytest.mark.multigpu, pytest.mark.timeout(300)]


def test_workers_have_one_gpu_each(multigpu):
    workers = multigpu.scheduler_info(n_workers=-1)["workers"]
    assert len(workers) == len(multigpu_devices())


@pytest.mark.parametrize("name", ["directed", "sparse-int64-ids", "int32-ids",
                                  "duplicates-and-self-loops", "components"])
def test_bfs(multigpu_engine, name):
    case = BFS_CASES[name]
    edges = reference.random_edges(seed=len(name), **case["graph"])
    source = reference.pick_sources(edges, case.get("sources", 1), seed=7)
    run_bfs(multigpu_engine, edges, source, directed=case["directed"], npartitions=4)


@pytest.mark.parametrize("depth_limit", [0, 2])
def test_bfs_depth_limit(multigpu_engine, depth_limit):
    edges = reference.random_edges(300, 500, seed=3, ids="negative")
    sources = reference.pick_sources(edges, 2, seed=3)
    run_bfs(multigpu_engine, edges, sources, directed=False, depth_limit=depth_limit)


@pytest.mark.parametrize("name", ["directed-positive-sparse-ids", "undirected-negative-ids",
                                  "zero-weights-duplicates-self-loops", "multi-source",
                                  "negative-weights-dag"])
def test_sssp(multigpu_engine, name):
    case, edges, sources = sssp_case(name)
    run_sssp(multigpu_engine, edges, sources, directed=case["directed"], npartitions=4)


def test_negative_cycle_raises(multigpu_engine):
    edges = pd.DataFrame({"src": [0, 1, 2, 3], "dst": [1, 2, 3, 1],
                          "weight": [1.0, -2.0, 4.0, -3.0]})
    frame = multigpu_engine.frame(edges, npartitions=2)
    with pytest.raises(gpipe.NegativeCycleError):
        gpipe.sssp(frame, 0).compute()


def test_graph_reuse_has_cudf_partitions(multigpu_engine):
    import cudf

    edges = reference.random_edges(500, 2000, seed=41, weights="positive", ids="sparse")
    s1, s2 = reference.pick_sources(edges, 2, seed=41)
    frame = multigpu_engine.frame(edges, npartitions=4)
    graph = gpipe.Graph.from_edges(frame, directed=False, weight="weight")
    for query, one_shot, kind in [
        (graph.bfs(s1), gpipe.bfs(frame, s1, directed=False), "bfs"),
        (graph.sssp(s2), gpipe.sssp(frame, s2, directed=False), "sssp"),
        (graph.bfs([s1, s2], depth_limit=1),
         gpipe.bfs(frame, [s1, s2], directed=False, depth_limit=1), "bfs"),
    ]:
        assert isinstance(query._meta, cudf.DataFrame)
        parts = query.to_delayed()
        assert all(isinstance(p.compute(), cudf.DataFrame) for p in parts)
        got = check_frame(multigpu_engine, query, id_dtype=np.int64, kind=kind)
        want = check_frame(multigpu_engine, one_shot, id_dtype=np.int64, kind=kind)
        pd.testing.assert_frame_equal(
            reference.result_distances(got).to_frame(),
            reference.result_distances(want).to_frame())
    out = sorted_frame(check_frame(multigpu_engine, graph.sssp(s1), id_dtype=np.int64,
                                   kind="sssp"))
    reference.assert_distances(out, reference.expected_sssp(edges, s1, directed=False),
                               exact=False)


@pytest.mark.parametrize("direction", ["auto", "top-down", "bottom-up", MIXED],
                         ids=["auto", "top-down", "bottom-up", "mixed"])
@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
def test_bfs_in_every_direction_with_stats(multigpu_engine, directed, direction):
    """The owners' BFS steps on the GPUs (kernels/bfs_owners.cu) in every direction rule,
    top-down and bottom-up levels mixed in one traversal, and the level statistics."""
    import dask

    edges = reference.random_edges(3000, 12000, seed=31, ids="shuffled")
    sources = reference.pick_sources(edges, 3, seed=31)
    graph = gpipe.Graph.from_edges(multigpu_engine.frame(edges, npartitions=4), directed=directed)
    with dask.config.set({owners_bfs.DIRECTION_KEY: direction}):
        for query, depth_limit in ((sources[:1], None), (sources, None), (sources, 3)):
            engine = graph.engine
            run = engine.traverse("bfs", engine.global_ids(query), depth_limit=depth_limit, steps=True)
            got = multigpu_engine.pandas(engine.result_frame(run.frames, "bfs").compute())
            reference.assert_distances(got, reference.expected_bfs(edges, query, directed=directed,
                                                                   depth_limit=depth_limit))
            check_tree(got, edges, directed)
            if depth_limit is None:
                check_directions(run.steps, direction, directed)


def test_sssp_owners_report_their_steps(multigpu_engine):
    """The grid and negative-weight checks of tests/test_peers.py on the CUDA kernels of
    kernels/sssp_owners.cu, with their per-step reports."""
    from test_peers import check_sssp_owner_steps

    check_sssp_owner_steps(multigpu_engine)


def test_sssp_grid_across_owners(multigpu_engine):
    # Long distances: many windows, local rounds and splits of the mid and far piles on the GPU.
    from gpipe.generators import grid_edges

    edges = grid_edges(20, weights=True, seed=5)
    for source in (0, 4210):
        run_sssp(multigpu_engine, edges, source, directed=False, npartitions=4)


@pytest.mark.parametrize("name", ["sparse-int64-ids", "directed"])
def test_one_owner_queries_go_straight_to_the_worker(multigpu, monkeypatch, name):
    """A graph that fits one GPU worker: its queries are direct requests (gpipe/engine/direct.py),
    cuDF frames kept on that worker, as right as the multi-owner path's."""
    import dask

    from conftest import Engine
    from test_direct import submitted_names

    submitted = submitted_names(monkeypatch)
    case = BFS_CASES[name]
    edges = reference.random_edges(seed=len(name), **case["graph"])
    source = reference.pick_sources(edges, 1, seed=11)
    with dask.config.set({"gpipe.partitions": 1}):
        run_bfs(Engine("multigpu", multigpu), edges, source, directed=case["directed"])
    assert not {"_bfs_one_owner", "_sssp_one_owner"} & set(submitted)
