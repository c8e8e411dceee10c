"""gpipe.cluster: the transport CUDA workers use, and what the owners' messages carry over it."""

import os
from pathlib import Path

import pytest

import gpipe
from gpipe import cluster
from gpipe.engine.owners import peers
from gpipe.tools import bench


@pytest.mark.parametrize("installed, asked, chosen", [
    (True, "auto", "ucx"), (False, "auto", "tcp"), (True, "tcp", "tcp"), (False, "tcp", "tcp"),
    (True, "ucx", "ucx"),
])
def test_cuda_protocol(monkeypatch, installed, asked, chosen):
    monkeypatch.setattr(cluster, "ucx_available", lambda: installed)
    assert cluster.cuda_protocol(asked) == chosen


def test_cuda_protocol_refuses_what_cannot_run(monkeypatch):
    monkeypatch.setattr(cluster, "ucx_available", lambda: False)
    with pytest.raises(gpipe.InputError, match="distributed-ucxx"):
        cluster.cuda_protocol("ucx")
    with pytest.raises(gpipe.InputError, match="'udp'"):
        cluster.cuda_protocol("udp")


def test_the_shipped_cuda_configuration_lets_gpipe_choose():
    import yaml

    with open(Path(__file__).resolve().parents[1] / "conf" / "cluster" / "local-cuda.yaml") as f:
        assert yaml.safe_load(f)["protocol"] == "auto"


def test_ucx_does_not_warn_of_what_distributed_ucxx_sets(monkeypatch):
    # distributed-ucxx sets UCX_MEMTYPE_CACHE, which its UCX no longer reads: a local CUDA
    # cluster's processes (which inherit this environment) do not warn of it on every start.
    import sys
    import types

    import distributed

    made = {}

    def local_cuda_cluster(**options):
        made.update(options)
        return "the cluster"

    monkeypatch.delenv("UCX_WARN_UNUSED_ENV_VARS", raising=False)
    monkeypatch.setattr(cluster, "cuda_cluster_available", lambda: True)
    monkeypatch.setattr(cluster, "start_apart_from_sigint", lambda start: start())
    monkeypatch.setitem(sys.modules, "dask_cuda", types.SimpleNamespace(LocalCUDACluster=local_cuda_cluster))
    # A client of the stand-in cluster that closes nothing (connect closes it at exit).
    monkeypatch.setattr(distributed, "Client", lambda of: types.SimpleNamespace(of=of, close=lambda: None))
    client = cluster.connect({"kind": "local-cuda", "protocol": "tcp", "rmm_async": True})
    assert client.of == "the cluster"
    assert made == {"protocol": "tcp", "rmm_async": True}  # the options as given
    assert os.environ["UCX_WARN_UNUSED_ENV_VARS"] == "n"


@pytest.mark.parametrize("addresses, device", [
    (["ucx://10.0.0.1:1234", "ucx://10.0.0.2:1234"], True),
    (["ucxx://10.0.0.1:1234", "ucxx://10.0.0.2:1234"], True),
    (["tcp://10.0.0.1:1234", "tcp://10.0.0.2:1234"], False),
    (["inproc://10.0.0.1/1/1", "inproc://10.0.0.1/1/2"], False),
])
def test_messages_stay_on_the_device_only_over_ucx(addresses, device):
    assert peers.Channel("key", 0, addresses, 1.0).device_messages is device


def test_bench_protocol_is_for_gpu_workers():
    with pytest.raises(gpipe.InputError, match="GPU workers"):
        bench.run(scale=6, protocol="ucx")
    with pytest.raises(gpipe.InputError, match="protocol"):
        bench.run(scale=6, protocol="carrier-pigeon")


def test_processes_started_for_workers_never_see_sigint_and_this_one_does():
    """Ctrl-C goes to the whole process group: local workers leave it to the client's process,
    which still handles it while they start. A worker started after a process of the cluster
    (Python's resource tracker unblocks SIGINT in the thread that starts it) blocks it too."""
    import multiprocessing
    import signal
    import subprocess
    import sys

    from gpipe.cluster import start_apart_from_sigint

    probe = [sys.executable, "-c", "import signal; print(signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, []))"]

    def two_probes():
        first = subprocess.run(probe, capture_output=True, text=True, check=True).stdout
        multiprocessing.get_context("spawn").Queue()  # may start the resource tracker
        return first + subprocess.run(probe, capture_output=True, text=True, check=True).stdout

    started_within = start_apart_from_sigint(two_probes)
    started_after = subprocess.run(probe, capture_output=True, text=True, check=True).stdout
    assert started_within.split() == ["True", "True"] and started_after.strip() == "False"
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def _owners_running():
    """How many threads of this worker are inside a multi-owner SSSP's owner loop."""
    import sys

    from gpipe.engine.owners.sssp import sssp_owner

    return sum(any(f.f_code is sssp_owner.__code__ for f in _stack(frame))
               for frame in sys._current_frames().values())


def _stack(frame):
    while frame is not None:
        yield frame
        frame = frame.f_back


def test_an_interrupted_query_stops_its_owners(dask_client2, tmp_path):
    """Ctrl-C (KeyboardInterrupt) in the client during a two-owner query: the call raises it,
    and the owners stop at their next exchange instead of running on, holding their workers.
    The query is a Bellman-Ford over a long path (one exchange per vertex: a minute)."""
    import _thread
    import time

    import dask
    import dask.dataframe as dd
    import numpy as np
    import pandas as pd

    from gpipe.watch import progress

    ids = np.arange(40_000)
    edges = pd.DataFrame({"src": ids, "dst": ids + 1, "weight": -1.0})
    started = []

    def interrupt(event):
        if event["algorithm"] == "sssp" and not started:
            started.append(event)
            _thread.interrupt_main()  # what SIGINT does to this process

    held_before = set(_sssp_keys(dask_client2))  # other tests' results, if any are still held
    stop = progress.follow(dask_client2, interrupt)
    try:
        with dask_client2.as_current(), dask.config.set({"gpipe.partitions": 2}):
            graph = gpipe.Graph.from_edges(dd.from_pandas(edges, npartitions=2), weight="weight")
            with pytest.raises(KeyboardInterrupt):
                graph.sssp(0)
                time.sleep(60)  # an interrupt that came after the query still lands in the block
    finally:
        stop()
    assert started
    deadline = time.monotonic() + 20
    while sum(dask_client2.run(_owners_running).values()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert sum(dask_client2.run(_owners_running).values()) == 0
    # And what the stopped owners left on their workers is not kept for this client.
    deadline = time.monotonic() + 20  # their answers come after they stop, on a busy machine late
    while set(_sssp_keys(dask_client2)) - held_before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert set(_sssp_keys(dask_client2)) - held_before == set()


def _sssp_keys(client):
    return client.run_on_scheduler(
        lambda dask_scheduler: [k for k in dask_scheduler.tasks if str(k).startswith("gpipe-sssp")])


def test_a_cluster_left_open_closes_at_exit_without_losing_scattered_data(tmp_path):
    """The README's cluster snippet leaves its client and cluster open: at exit the client is
    closed before the cluster, so no worker is removed under data the client still holds (the
    scheduler would log ``ERROR ... lose scattered data``)."""
    import subprocess
    import sys

    script = tmp_path / "snippet.py"
    script.write_text(
        "from gpipe.cluster import start_local_cluster\n"
        "if __name__ == '__main__':\n"
        "    cluster, client = start_local_cluster('cpu', n_workers=1, dashboard=False)\n"
        "    held = client.scatter([1, 2, 3])  # what no task can make again, held to the end\n"
        "    print(client.gather(held))\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == "[1, 2, 3]", done.stderr
    assert "ERROR" not in done.stderr and "lose scattered" not in done.stderr, done.stderr


@pytest.mark.parametrize("start", ["gpipe", "plain"])
def test_the_resource_tracker_gpipe_starts_does_not_warn_of_semaphores_left_by_killed_workers(start):
    """A worker killed as it starts (Ctrl-C during a cluster's start) leaves semaphores that
    multiprocessing's resource tracker frees at exit; started by gpipe (as a cluster starts,
    :func:`gpipe.cluster.start_apart_from_sigint`) it does so without the warning that would
    follow ``gpipe: interrupted``. The plain tracker shows the warning."""
    import os
    import subprocess
    import sys
    import textwrap

    starting = ("cluster.start_apart_from_sigint(lambda: None)" if start == "gpipe"
                else "resource_tracker.ensure_running()")
    code = textwrap.dedent(f"""
        import multiprocessing, os
        from multiprocessing import resource_tracker
        from gpipe import cluster
        {starting}
        assert "PYTHONWARNINGS" not in os.environ  # put back as it was
        lock = multiprocessing.get_context("spawn").Lock()  # a semaphore the tracker follows
        os._exit(0)  # left behind, as by a process killed
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"})
    assert done.returncode == 0, done.stderr
    # The tracker keeps stderr open until it has written, after its parent: run() waited for it.
    assert ("leaked semaphore" in done.stderr) == (start == "plain"), done.stderr


def test_closing_quietly_first_tells_the_workers_to_log_nothing():
    """After a Ctrl-C a local cluster closes with its tasks cancelled; its worker processes,
    which write to the same terminal, are first told to log nothing more (fire and forget, so
    a busy or half-gone cluster cannot hold the close up). This process, where the nannies
    live, keeps logging as before (the caller silences it for the close only)."""
    import logging
    import time
    import types

    from distributed import Client, LocalCluster

    from gpipe import cluster as clusters

    def disabled():
        return logging.root.manager.disable

    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as local, \
            Client(local) as client:
        assert set(client.run(disabled).values()) == {logging.NOTSET}
        workers = {}

        def close():  # the cluster's close, as disconnect calls it: reads the workers' logging
            deadline = time.monotonic() + 10
            workers.update(client.run(disabled))
            while set(workers.values()) != {logging.CRITICAL} and time.monotonic() < deadline:
                time.sleep(0.05)
                workers.update(client.run(disabled))

        # The client handed to disconnect reaches the real workers but closes nothing; the real
        # client and cluster close at the end of the block.
        quitting = types.SimpleNamespace(run=client.run, close=lambda: None,
                                         cluster=types.SimpleNamespace(close=close))
        clusters.disconnect(quitting, quietly=True)
        assert set(workers.values()) == {logging.CRITICAL} and len(workers) == 2
        assert logging.root.manager.disable == logging.NOTSET
