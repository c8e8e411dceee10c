"""Surviving the cluster: a worker killed between build and query or in the middle of a
traversal, and a restarted client, each end in a correct answer or a gpipe error within
seconds, never a hang. Each test has its own 2-worker LocalCluster (nannies restart killed
workers, as in production)."""

import os
import signal
import threading
import time

import dask
import dask.dataframe as dd
import pandas as pd
import pytest

import gpipe
from gpipe.engine import execution
import reference

pytestmark = pytest.mark.timeout(180)
DEADLINE_S = 30  # the longest a fault may take to end in an answer or an error


@pytest.fixture
def client():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                      env={"NUMBA_NUM_THREADS": "1"}) as cluster, \
            Client(cluster, set_as_default=False) as client, client.as_current():
        client.wait_for_workers(2)
        yield client


def kill_worker(client, address):
    pid = client.run(os.getpid, workers=[address])[address]
    os.kill(pid, signal.SIGKILL)


def path_edges(n):
    return pd.DataFrame({"src": range(n - 1), "dst": range(1, n)})


def test_a_worker_killed_between_build_and_query(client):
    edges = reference.random_edges(n=300, m=1200, seed=21, weights="positive")
    source = int(edges["src"].iloc[0])
    graph = gpipe.Graph.from_edges(dd.from_pandas(edges, npartitions=3), directed=False,
                                   weight="weight", partitions=2)
    kill_worker(client, graph.engine.executor.workers[1])
    start = time.monotonic()
    out = graph.sssp(source).compute()
    assert time.monotonic() - start < DEADLINE_S
    reference.assert_distances(out, reference.expected_sssp(edges, [source], directed=False), exact=False)


def test_a_one_owner_graph_whose_worker_is_killed_is_rebuilt(client):
    edges = reference.random_edges(n=300, m=1200, seed=22)
    source = int(edges["src"].iloc[0])
    graph = gpipe.Graph.from_edges(dd.from_pandas(edges, npartitions=3), directed=True)
    assert graph.num_partitions == 1
    kill_worker(client, graph.engine.executor.workers[0])
    start = time.monotonic()
    out = graph.bfs(source).compute()
    assert time.monotonic() - start < DEADLINE_S
    reference.assert_distances(out, reference.expected_bfs(edges, [source], directed=True))


def _slow_query(part, seconds):
    time.sleep(seconds)
    return pd.DataFrame({"vertex": [0]})


def test_an_owner_killed_during_a_direct_query_is_a_lost_graph(client):
    """A one-owner query goes straight to the owner's worker (gpipe/engine/direct.py): its worker
    killed while it runs ends the request in GraphLost within seconds (which a query answers
    by rebuilding), not in a bare connection error or a hang."""
    import threading

    edges = reference.random_edges(n=300, m=1200, seed=23)
    graph = gpipe.Graph.from_edges(dd.from_pandas(edges, npartitions=2), directed=True)
    assert graph.num_partitions == 1
    executor = graph.engine.executor
    threading.Timer(1.0, kill_worker, (client, executor.workers[0])).start()
    start = time.monotonic()
    with pytest.raises(gpipe.GraphLost, match="left the cluster"):
        executor.query(_slow_query, graph.engine.built.parts[0], 30, owner=0)
    assert time.monotonic() - start < DEADLINE_S


def _sleep(seconds):
    time.sleep(seconds)


def test_a_task_pinned_to_a_worker_that_dies_ends_in_graph_lost(client):
    """The build splits each input partition on the worker that holds it, pinned there (never
    moved with its data): that worker killed, the build ends in GraphLost, not a hang."""
    from gpipe.engine.execution import OnCluster

    workers = sorted(client.scheduler_info()["workers"])
    executor = OnCluster(client, workers[:1])
    pinned = executor.submit(_sleep, 30, at=workers[1])
    threading.Timer(1.0, kill_worker, (client, workers[1])).start()
    start = time.monotonic()
    with pytest.raises(gpipe.GraphLost, match="which held part of the input left the cluster "
                                              r"\(its connection to the scheduler closed: the process was killed"):
        executor.wait([pinned])
    assert time.monotonic() - start < DEADLINE_S


def test_a_lost_graph_says_why_the_scheduler_removed_the_worker(client):
    """The scheduler's own record says why a worker went (its "remove-worker" event): a retired
    worker is named as retired, not as killed."""
    from gpipe.engine.execution import OnCluster

    workers = sorted(client.scheduler_info()["workers"])
    executor = OnCluster(client, workers)
    running = executor.submit(_sleep, 30, owner=1)
    threading.Timer(1.0, client.retire_workers, ([workers[1]],), {"close_workers": True}).start()
    with pytest.raises(gpipe.GraphLost, match=r"partition 1's worker .* left the cluster \(it was retired\)"):
        executor.wait([running])


def test_a_worker_killed_mid_traversal(client):
    """A path of many levels keeps both owners busy for seconds; one of them is killed in the
    middle. The survivor notices within seconds, and the query runs again on a rebuilt graph."""
    edges = path_edges(2500)
    graph = gpipe.Graph.from_edges(dd.from_pandas(edges, npartitions=2), directed=True, partitions=2)
    victim = graph.engine.executor.workers[1]
    killer = threading.Timer(1.5, kill_worker, args=(client, victim))
    start = time.monotonic()
    killer.start()
    try:
        out = graph.bfs(0).compute()
    finally:
        killer.join()
    assert time.monotonic() - start < 2 * DEADLINE_S  # two traversals of seconds each, and a rebuild
    reference.assert_distances(out, reference.expected_bfs(edges, [0], directed=True))


def test_a_restarted_client_rebuilds_from_lazy_input(client):
    edges = reference.random_edges(n=200, m=800, seed=23)
    source = int(edges["src"].iloc[0])
    graph = gpipe.Graph.from_edges(dd.from_pandas(edges, npartitions=2), directed=False)
    client.restart()
    start = time.monotonic()
    out = graph.bfs(source).compute()
    assert time.monotonic() - start < DEADLINE_S
    reference.assert_distances(out, reference.expected_bfs(edges, [source], directed=False))


def test_a_restarted_client_with_persisted_input_raises_graph_lost(client):
    edges = reference.random_edges(n=200, m=800, seed=24)
    frame = client.persist(dd.from_pandas(edges, npartitions=2))
    graph = gpipe.Graph.from_edges(frame, directed=False)
    client.restart()
    start = time.monotonic()
    with pytest.raises(gpipe.GraphLost, match="cannot be read again"):
        graph.bfs(int(edges["src"].iloc[0]))
    assert time.monotonic() - start < DEADLINE_S


def test_tasks_are_named_for_their_step_and_grouped_in_a_span(client):
    """Queries are tasks when direct queries are off (gpipe/engine/direct.py)."""
    import dask

    edges = reference.random_edges(n=100, m=300, seed=25)
    graph = gpipe.Graph.from_edges(dd.from_pandas(edges, npartitions=2), directed=False, partitions=2)
    with dask.config.set({"gpipe.direct-queries": False}):
        graph.bfs(int(edges["src"].iloc[0])).compute()
    prefixes = client.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.task_prefixes))
    assert {"gpipe-build", "gpipe-bfs", "gpipe-survey", "gpipe-shuffle"} <= set(prefixes)
    spans = client.run_on_scheduler(
        lambda dask_scheduler: sorted({s.name[-1] for s in dask_scheduler.extensions["spans"].spans.values()}))
    assert {"gpipe-build", "gpipe-bfs"} <= set(spans)


def test_running_out_of_memory_in_a_task_names_the_partition(client):
    from gpipe.engine import tasks

    edges = reference.random_edges(n=100, m=300, seed=26)
    graph = gpipe.Graph.from_edges(dd.from_pandas(edges, npartitions=2), directed=False)

    def _bfs_one_owner(part, *args):
        raise MemoryError("Out of memory allocating 1,000,000,000 bytes")

    ex, part = graph.engine.executor, graph.engine.built.parts[0]
    with pytest.raises(gpipe.OutOfMemory, match=r"gpipe-bfs on partition 0 \(\d+ vertices, \d+ stored edges.* on worker tcp://.* ran out of host memory asking for 1,000,000,000 bytes"):
        ex.gather([ex.submit(_bfs_one_owner, part, owner=0)])
    assert tasks.task_name(_bfs_one_owner) == "gpipe-bfs"


@pytest.fixture
def cuda_client():
    """Two CUDA workers of their own (the devices of GPIPE_TEST_CUDA_DEVICES), to kill one."""
    from dask_cuda import LocalCUDACluster
    from distributed import Client, LocalCluster

    from conftest import multigpu_devices

    devices = multigpu_devices()
    if len(set(devices)) > 1:
        cluster = LocalCUDACluster(n_workers=2, dashboard_address=":0",
                                   CUDA_VISIBLE_DEVICES=",".join(map(str, devices)))
    else:
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                               env={"CUDA_VISIBLE_DEVICES": str(devices[0])})
    with cluster, Client(cluster, set_as_default=False) as client, client.as_current():
        client.wait_for_workers(2)
        yield client


@pytest.mark.multigpu
def test_a_cuda_worker_killed_mid_traversal(cuda_client):
    edges = path_edges(1500)
    frame = dd.from_pandas(edges, npartitions=2).to_backend("cudf")
    graph = gpipe.Graph.from_edges(frame, directed=True, partitions=2)
    killer = threading.Timer(1.0, kill_worker, args=(cuda_client, graph.engine.executor.workers[1]))
    start = time.monotonic()
    killer.start()
    try:
        out = graph.bfs(0).compute().to_pandas()
    finally:
        killer.join()
    assert time.monotonic() - start < 2 * DEADLINE_S
    reference.assert_distances(out, reference.expected_bfs(edges, [0], directed=True))


@pytest.mark.multigpu
def test_a_graph_larger_than_the_gpus_is_refused_before_building(cuda_client):
    from gpipe.partitioning import sizing

    free = cuda_client.run(sizing.free_bytes_here, "gpu")
    assert all(value > 2**30 for value in free.values())  # device memory, not host memory
    edges = reference.random_edges(n=300, m=1200, seed=27)
    # Leave gpipe a trillionth of each GPU: this small graph no longer fits.
    with dask.config.set({sizing.FRACTION_KEY: 1e-12}):
        with pytest.raises(gpipe.GraphTooLarge, match="free device memory"):
            gpipe.Graph.from_edges(dd.from_pandas(edges, npartitions=2).to_backend("cudf"))


def test_workers_with_a_small_memory_limit_end_a_build_in_an_error_not_a_hang():
    """The issue's case: workers with a small memory limit and a graph that needs more. Before,
    the nanny killed the workers and the build waited forever; now the size guard refuses it
    before building or, if a worker dies anyway, the build ends in an error naming memory."""
    from distributed import Client, LocalCluster

    edges = reference.random_edges(n=300_000, m=3_000_000, seed=28, weights="positive")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                      memory_limit="300MiB") as cluster, \
            Client(cluster, set_as_default=False) as client, client.as_current():
        start = time.monotonic()
        with pytest.raises((gpipe.GraphTooLarge, gpipe.OutOfMemory, gpipe.GraphLost),
                           match="memory"):
            gpipe.Graph.from_edges(dd.from_pandas(edges, npartitions=4), directed=False, weight="weight")
        assert time.monotonic() - start < DEADLINE_S


def test_a_worker_that_only_held_input_may_leave_after_the_build(client):
    """The build pins each split to the worker holding its input partition, and a wait ends in
    GraphLost if such a worker leaves meanwhile; once the graph is built it no longer needs
    them: losing one must not fail, nor rebuild, the graph's queries."""
    import distributed

    edges = reference.random_edges(n=300, m=1200, seed=24)
    source = int(edges["src"].iloc[0])
    frame = client.persist(dd.from_pandas(edges, npartitions=4))
    distributed.wait(frame)
    holders = {w for ws in client.who_has(frame).values() for w in ws}
    assert len(holders) == 2  # the input is on both workers
    graph = gpipe.Graph.from_edges(frame, directed=True)
    assert graph.num_partitions == 1
    built = graph.engine.built
    (other,) = holders - set(graph.engine.executor.workers)
    kill_worker(client, other)
    deadline = time.monotonic() + DEADLINE_S
    while other in client.scheduler_info()["workers"] and time.monotonic() < deadline:
        time.sleep(0.1)
    out = graph.bfs(source).compute()
    reference.assert_distances(out, reference.expected_bfs(edges, [source], directed=True))
    executor = graph.engine.executor  # a wait long enough to look at the workers
    executor.wait([executor.submit(_sleep, 2 * execution.WATCH_S, owner=0)])
    assert graph.engine.built is built
