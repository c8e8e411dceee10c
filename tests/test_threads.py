"""gpipe.engine.threads: the CPU kernels' threads in a task on a worker of a local CPU cluster."""

import os

import numba
import pytest

from gpipe.engine import tasks
from gpipe.engine.threads import SHARE_ENV, kernel_threads


def threads_in_task(whole_pool):
    with kernel_threads(whole_pool):
        return numba.get_num_threads()


def test_without_a_share_numba_keeps_its_setting(monkeypatch):
    monkeypatch.delenv(SHARE_ENV, raising=False)
    before = numba.get_num_threads()
    assert threads_in_task(False) == threads_in_task(True) == before


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs a Numba pool of 2 threads")
def test_a_task_takes_its_share_and_a_lone_traversal_the_pool(monkeypatch):
    monkeypatch.setenv(SHARE_ENV, "1")
    before = numba.get_num_threads()
    assert threads_in_task(False) == 1
    assert threads_in_task(True) == numba.config.NUMBA_NUM_THREADS
    assert numba.get_num_threads() == before  # given back after the block


def _numba_threads():
    return numba.get_num_threads()


def _bfs_one_owner():  # named as the one-owner traversal task, which runs alone on its host
    return numba.get_num_threads()


def test_run_task_gives_one_owner_traversals_the_pool(monkeypatch):
    monkeypatch.setenv(SHARE_ENV, "1")
    assert tasks.run_task(_numba_threads) == 1
    assert tasks.run_task(_bfs_one_owner) == numba.config.NUMBA_NUM_THREADS


def _share():
    return os.environ.get(SHARE_ENV)


def _pool():
    return numba.config.NUMBA_NUM_THREADS


def test_gpipes_local_cpu_cluster_tells_workers_their_share():
    from gpipe.cluster import start_local_cluster

    cluster, client = start_local_cluster("cpu", n_workers=2, dashboard=False)
    with cluster, client:
        shares = client.run(_share)
        pools = client.run(_pool)
    assert set(shares.values()) == {"1"}
    assert set(pools.values()) == {os.cpu_count()}
