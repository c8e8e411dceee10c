"""NCCL between GPU owners (gpipe/engine/owners/nccl.py) on the multi-GPU cluster of tests/conftest.py.

With ``gpipe.transport: auto`` (the default, set again here) and distinct devices
(``GPIPE_TEST_CUDA_DEVICES=0,1`` or ``0,1,2,3``) every multi-owner graph gets a communicator and
the traversals of tests/test_multigpu.py run over it; these tests check that it does, that its answers match Dask's comms and the references, and that a communicator
aborted on one worker is made again. With one device named twice the owners keep Dask's comms.
Run the module again with ``NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1`` to go over sockets.
"""

from __future__ import annotations

import dask
import numpy as np
import pytest

import gpipe
import reference
from conftest import multigpu_devices
from gpipe.engine.owners import nccl

pytestmark = [pytest.mark.multigpu, pytest.mark.timeout(300)]


@pytest.fixture(autouse=True)
def nccl_where_it_serves():
    with dask.config.set({nccl.CONFIG_KEY: "auto"}):
        yield


def distinct_gpus() -> bool:
    devices = multigpu_devices()
    return len(set(devices)) == len(devices)


def owners(multigpu) -> int:
    return len(multigpu.scheduler_info(n_workers=-1)["workers"])


def cudf_frame(edges, npartitions=4):
    import dask.dataframe as dd

    return dd.from_pandas(edges, npartitions=npartitions, sort=False).to_backend("cudf")


@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
def test_every_owner_talks_nccl_and_answers_as_the_references(multigpu, directed):
    edges = reference.random_edges(4000, 16000, seed=61, weights="positive", ids="sparse")
    sources = reference.pick_sources(edges, 3, seed=61)
    graph = gpipe.Graph.from_edges(cudf_frame(edges), directed=directed, weight="weight",
                                   partitions=owners(multigpu))
    assert (graph.transport == "nccl") == distinct_gpus()
    bfs = graph.bfs(sources).compute().to_pandas()
    reference.assert_distances(bfs, reference.expected_bfs(edges, sources, directed=directed))
    for depth_limit in (1, 3):
        near = graph.bfs(sources[:1], depth_limit=depth_limit).compute().to_pandas()
        reference.assert_distances(near, reference.expected_bfs(
            edges, sources[:1], directed=directed, depth_limit=depth_limit))
    sssp = graph.sssp(sources).compute().to_pandas()
    reference.assert_distances(sssp, reference.expected_sssp(edges, sources, directed=directed),
                               exact=False)


def test_nccl_and_dask_comms_agree(multigpu):
    edges = reference.random_edges(3000, 15000, seed=62, weights="positive")
    source = reference.pick_sources(edges, 1, seed=62)
    answers = []
    for setting in ("auto", "dask"):
        with dask.config.set({nccl.CONFIG_KEY: setting}):
            graph = gpipe.Graph.from_edges(cudf_frame(edges), directed=False, weight="weight",
                                           partitions=owners(multigpu))
            assert (graph.transport != "nccl") == (setting == "dask" or not distinct_gpus())
            answers.append([graph.bfs(source).compute().to_pandas(),
                            graph.sssp(source).compute().to_pandas()])
    for nccl_frame, dask_frame in zip(*answers):
        got, want = (f.set_index("vertex").sort_index()["distance"] for f in (nccl_frame, dask_frame))
        np.testing.assert_allclose(got.astype(float).to_numpy(), want.astype(float).to_numpy())


def test_negative_weights_and_a_negative_cycle_across_owners(multigpu):
    edges = reference.random_edges(600, 2400, seed=63, weights="dag_negative")
    source = reference.pick_sources(edges, 1, seed=63)
    graph = gpipe.Graph.from_edges(cudf_frame(edges), directed=True, weight="weight",
                                   partitions=owners(multigpu))
    out = graph.sssp(source).compute().to_pandas()
    reference.assert_distances(out, reference.expected_sssp(edges, source, directed=True),
                               exact=False)
    import pandas as pd

    n = 64 * owners(multigpu)  # one vertex of the cycle on each owner's chunk
    ring = [0, n // 2, n - 1]
    cycle = pd.DataFrame({"src": ring + [0], "dst": ring[1:] + [ring[0], 1],
                          "weight": [1.0, -3.0, 1.0, 1.0]})
    graph = gpipe.Graph.from_edges(cudf_frame(cycle, 2), directed=True, weight="weight",
                                   partitions=owners(multigpu))
    with pytest.raises(gpipe.NegativeCycleError):
        graph.sssp(0).compute()


@pytest.mark.skipif(not distinct_gpus(), reason="NCCL needs one device per owner")
def test_a_communicator_aborted_on_one_worker_is_made_again(multigpu):
    edges = reference.random_edges(2000, 8000, seed=64)
    source = reference.pick_sources(edges, 1, seed=64)
    graph = gpipe.Graph.from_edges(cudf_frame(edges), directed=False, partitions=owners(multigpu))
    first = graph.engine.built.nccl_group
    multigpu.run(nccl.drop, first, workers=[graph.engine.executor.workers[-1]])
    out = graph.bfs(source).compute().to_pandas()
    reference.assert_distances(out, reference.expected_bfs(edges, source, directed=False))
    assert graph.engine.built.nccl_group not in (None, first)


def test_many_graphs_and_traversals_over_one_communicator(multigpu):
    """What hung on four H100s when NCCL was the default (BENCHMARKS.md, "NCCL between owners"):
    a long session of builds and queries over one communicator, an aborted one (a negative
    cycle) among them, then BFS and SSSP over a graph built earlier. Each query must end well
    within the test's timeout; a hang fails here with the stacks (pytest-timeout)."""
    import pandas as pd

    p = owners(multigpu)
    edges = reference.random_edges(500, 2000, seed=65, weights="positive", ids="sparse")
    s1, s2 = reference.pick_sources(edges, 2, seed=65)
    cycle = pd.DataFrame({"src": [0, 1, 2, 3], "dst": [1, 2, 3, 1], "weight": [1.0, -2.0, 4.0, -3.0]})
    kept = gpipe.Graph.from_edges(cudf_frame(edges), directed=False, weight="weight", partitions=p)
    for round_no in range(6):
        one_shot = gpipe.bfs(cudf_frame(edges), s1, directed=False, partitions=p).compute()
        reference.assert_distances(one_shot.to_pandas(),
                                   reference.expected_bfs(edges, [s1], directed=False))
        if round_no == 2:
            with pytest.raises(gpipe.NegativeCycleError):
                gpipe.sssp(cudf_frame(cycle, 2), 0, partitions=p).compute()
        for query, want in ((kept.sssp(s2), reference.expected_sssp(edges, [s2], directed=False)),
                            (kept.bfs(s1), reference.expected_bfs(edges, [s1], directed=False))):
            reference.assert_distances(query.compute().to_pandas(), want, exact=False)


def _one_step(channel, group, n_owners, held):
    """One NCCL step of an owner whose argument ``held`` its worker may have fetched first."""
    from gpipe.engine.owners.connect import open_transport

    with open_transport(channel, group, n_owners, "gpu") as transport:
        counts, _ = transport.exchange("check", [float(held.size)], [None] * n_owners, ())
    return counts[:, 0].tolist()


@pytest.mark.skipif(not distinct_gpus(), reason="NCCL needs one device per owner")
def test_an_owner_that_fetches_an_argument_from_a_traversing_peer_does_not_stall_it(multigpu):
    """The cycle behind the hang with NCCL on by default (found by reading the code; the suite
    that hung then passed): owner 1 lacked an argument that owner 0's worker held (the graph's
    ids, after Dask's memory manager dropped a replica), so its query ran as a task that
    fetched it from worker 0, whose owner already waited in a collective for owner 1; the copy
    off worker 0's device queued behind that collective on the default stream."""
    import cupy

    p = owners(multigpu)
    edges = reference.random_edges(300, 900, seed=66)
    graph = gpipe.Graph.from_edges(cudf_frame(edges), directed=False, partitions=p)
    executor, group = graph.engine.executor, graph.engine.built.nccl_group
    held = multigpu.submit(cupy.arange, 1000, workers=[executor.workers[0]], pure=False)
    executor.wait([held])
    handles = executor.run_together(_one_step, [(group, p, held)] * p)
    assert executor.gather(handles) == [[1000.0] * p] * p

