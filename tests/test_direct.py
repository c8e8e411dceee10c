"""gpipe.engine.direct: one-owner queries sent straight to the owner's worker."""

import gc
import time

import dask
import dask.dataframe as dd
import pandas as pd
import pytest

import gpipe
import reference
from gpipe.engine import execution


@pytest.fixture
def one_owner(dask_client2):
    edges = reference.random_edges(n=400, m=1600, seed=81, weights="positive", ids="sparse")
    with dask_client2.as_current():
        graph = gpipe.Graph.from_edges(dd.from_pandas(edges, npartitions=2), directed=False,
                                       weight="weight", partitions=1)
        assert graph.num_partitions == 1
        yield graph, edges, dask_client2


def submitted_names(monkeypatch):
    """The names of the functions gpipe submits as tasks from now on (a list that grows)."""
    names = []
    real = execution.OnCluster.submit

    def spy(self, fn, *args, **kwargs):
        names.append(getattr(fn, "__name__", fn))
        return real(self, fn, *args, **kwargs)

    monkeypatch.setattr(execution.OnCluster, "submit", spy)
    return names


def test_a_one_owner_query_runs_no_task_and_matches_scipy(one_owner, monkeypatch):
    graph, edges, client = one_owner
    source = reference.pick_sources(edges, 1, seed=81)[0]
    submitted = submitted_names(monkeypatch)
    before = set(client.run_on_scheduler(_held_results))
    bfs, sssp = graph.bfs(source), graph.sssp(source)
    assert submitted == []
    reference.assert_distances(bfs.compute(), reference.expected_bfs(edges, [source], directed=False))
    reference.assert_distances(sssp.compute(), reference.expected_sssp(edges, [source], directed=False),
                               exact=False)
    assert len(bfs) == graph.num_vertices
    # the frame is Dask data like a task's: other tasks take it, and it goes when dropped
    assert int(bfs.map_partitions(len).compute().sum()) == graph.num_vertices
    ours = set(client.run_on_scheduler(_held_results)) - before
    assert len(ours) == 2  # the BFS frame and the SSSP frame
    del bfs, sssp
    gc.collect()
    deadline = time.monotonic() + 10
    while ours & set(client.run_on_scheduler(_held_results)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not ours & set(client.run_on_scheduler(_held_results))


def _held_results(dask_scheduler):
    return sorted(str(k) for k in dask_scheduler.tasks if str(k).startswith(("gpipe-bfs", "gpipe-sssp")))


def test_direct_queries_can_be_turned_off(one_owner, monkeypatch):
    graph, edges, _ = one_owner
    source = reference.pick_sources(edges, 1, seed=82)[0]
    submitted = submitted_names(monkeypatch)
    with dask.config.set({"gpipe.direct-queries": False}):
        frame = graph.bfs(source).compute()
    assert submitted == ["_bfs_one_owner"]
    reference.assert_distances(frame, reference.expected_bfs(edges, [source], directed=False))


def test_a_missing_source_is_an_input_error(one_owner):
    graph, _, _ = one_owner
    with pytest.raises(gpipe.InputError, match="source vertex 123456789 is not in the graph"):
        graph.bfs(123456789)


def _first_row(frame):
    return int(frame["a"].iloc[0])


def test_an_argument_held_elsewhere_falls_back_on_a_task(dask_client2, monkeypatch):
    workers = sorted(dask_client2.scheduler_info()["workers"])
    executor = execution.OnCluster(dask_client2, workers)
    submitted = submitted_names(monkeypatch)
    with dask_client2.as_current():
        elsewhere = dask_client2.scatter(pd.DataFrame({"a": [7]}), workers=[workers[1]])
        assert dask_client2.gather(executor.query(_first_row, elsewhere, owner=0)) == 7
        assert submitted == ["_first_row"]
        here = dask_client2.scatter(pd.DataFrame({"a": [8]}), workers=[workers[0]])
        assert dask_client2.gather(executor.query(_first_row, here, owner=0)) == 8
        assert submitted == ["_first_row"]  # held by the owner: no task this time
