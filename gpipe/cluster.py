"""Starting or joining the Dask cluster that gpipe's traversals run on.

gpipe itself never starts a cluster: :func:`gpipe.bfs` and friends use whatever Dask client
is active, and run in-process when there is none. This module is the convenience for
programs (the CLI, the demo, the pipelines) that need to make one:

* :func:`start_local_cluster` starts a cluster on this machine, one worker per GPU with
  dask-cuda's ``LocalCUDACluster``, or worker processes of one thread each with Dask's
  ``LocalCluster``.
* :func:`connect` does the same from a configuration mapping (``conf/cluster/*.yaml``), or
  connects to a running scheduler; :func:`disconnect` undoes it.

The configuration keys are Dask's and dask-cuda's own keyword names, so their documentation
applies unchanged. Worker processes are spawned, so a script that calls these functions must
do so under ``if __name__ == "__main__":``.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import threading
import time
from collections.abc import Mapping

from gpipe.engine.interrupts import deferred_interrupt, phase
from gpipe.errors import InputError

__all__ = ["start_local_cluster", "local_cluster_kind", "cuda_protocol", "connect", "disconnect",
           "start_apart_from_sigint", "silenced_logging", "ucx_available", "cuda_cluster_available",
           "CLUSTER_KINDS"]

PROTOCOLS = ("auto", "tcp", "ucx")

# Keys of a cluster configuration, per kind, besides "kind" and "dask". Each is passed unchanged
# to the constructor named in the comment.
_LOCAL_KEYS = {"n_workers", "threads_per_worker", "memory_limit", "dashboard_address", "local_directory"}
CLUSTER_KINDS = {
    "local-cpu": _LOCAL_KEYS | {"processes"},  # distributed.LocalCluster
    "local-cuda": _LOCAL_KEYS  # dask_cuda.LocalCUDACluster
    | {"CUDA_VISIBLE_DEVICES", "device_memory_limit", "rmm_pool_size", "rmm_async", "enable_cudf_spill",
       "protocol"},
    "remote": {"scheduler_address", "timeout"},  # distributed.Client
}


def start_local_cluster(kind="auto", n_workers=None, dashboard=True, protocol="auto"):
    """Start a Dask cluster on this machine and a client connected to it.

    Parameters
    ----------
    kind : {"auto", "cuda", "cpu"}, optional (default="auto")
        ``"cuda"``: a ``dask_cuda.LocalCUDACluster``, one worker per visible GPU.
        ``"cpu"``: a ``distributed.LocalCluster`` of worker processes with one thread each
        (gpipe's kernels are Numba-compiled and release no work to extra threads).
        ``"auto"``: ``"cuda"`` when dask-cuda, cuDF and CuPy import and a GPU is visible,
        else ``"cpu"``.
    n_workers : int, optional
        Number of workers. Default: one per visible GPU (cuda) or per CPU core (cpu).
    dashboard : bool, optional (default=True)
        Serve the Dask dashboard (on port 8787, or a free port if that one is taken; it
        needs bokeh). The link is ``client.dashboard_link``.
    protocol : {"auto", "tcp", "ucx"}, optional (default="auto")
        Transport between the CUDA workers (:func:`cuda_protocol`): ``"auto"`` is UCX where
        distributed-ucxx is installed (the ``cuda13`` extra brings it), else TCP. CPU
        clusters always use TCP.

    Returns
    -------
    (cluster, client)
        The cluster and a ``distributed.Client`` connected to it, which is also made the
        default client so gpipe's calls use it. Close both when done: ``client.close()``
        then ``cluster.close()`` (or use both as context managers); those left open are
        closed in that order when the interpreter exits. The worker processes never see
        SIGINT (:func:`start_apart_from_sigint`): Ctrl-C interrupts this process alone, at
        once also while the cluster starts, and a gpipe call raises ``KeyboardInterrupt`` and
        stops its traversal's owners.

    Raises
    ------
    gpipe.InputError
        If `kind` is not one of the above, or is ``"cuda"`` where dask-cuda or a GPU is missing;
        if `protocol` is unknown, or ``"ucx"`` where distributed-ucxx is missing.

    Examples
    --------
    >>> if __name__ == "__main__":  # doctest: +SKIP
    ...     cluster, client = start_local_cluster("cpu", n_workers=2)
    ...     result = gpipe.bfs(gpipe.read_edges("edges.parquet"), 0).compute()
    ...     client.close(); cluster.close()
    """
    kind = local_cluster_kind(kind)
    options = {"n_workers": n_workers, "dashboard_address": ":8787" if dashboard else None}
    if kind == "cuda":
        cluster = _local_cuda_cluster({**options, "protocol": protocol})
    else:
        cluster = _local_cpu_cluster(options)
    return cluster, _client_of(cluster)


def local_cluster_kind(kind="auto"):
    """Return the kind, ``"cuda"`` or ``"cpu"``, that :func:`start_local_cluster` starts for `kind`.

    ``"auto"`` resolves to ``"cuda"`` when dask-cuda, cuDF and CuPy import and CuPy sees a GPU.

    Raises
    ------
    gpipe.InputError
        If `kind` is not ``"auto"``, ``"cuda"`` or ``"cpu"``.
    """
    if kind not in ("auto", "cuda", "cpu"):
        raise InputError(f"cluster kind must be 'auto', 'cuda' or 'cpu', not {kind!r}")
    if kind == "auto":
        return "cuda" if cuda_cluster_available() else "cpu"
    return kind


def cuda_protocol(protocol="auto") -> str:
    """The transport, ``"tcp"`` or ``"ucx"``, that CUDA workers use for ``protocol``.

    ``"auto"`` is ``"ucx"`` when distributed-ucxx imports, else ``"tcp"``. UCX moves device
    arrays worker to worker without staging them on the host (CUDA IPC on one machine,
    NVLink or InfiniBand between GPUs): a 256 MiB CuPy array between two workers of one H100
    took 14.5 ms against 409 ms over TCP (``shared/ANCHORS.md``), and a traversal over several
    GPUs sends its large frontiers and SSSP candidates as device arrays. ``gpipe bench
    --protocol both`` times a traversal over each.

    Raises
    ------
    gpipe.InputError
        If `protocol` is not ``"auto"``, ``"tcp"`` or ``"ucx"``, or is ``"ucx"`` without
        distributed-ucxx.
    """
    if protocol not in PROTOCOLS:
        raise InputError(f"protocol must be one of {', '.join(PROTOCOLS)}, not {protocol!r}")
    if protocol == "tcp":
        return protocol
    available = ucx_available()
    if protocol == "ucx" and not available:
        raise InputError("protocol 'ucx' needs distributed-ucxx (pip install distributed-ucxx-cu13, "
                         "part of gpipe's cuda13 extra)")
    return "ucx" if available else "tcp"


def connect(config):
    """Return a Dask client for the cluster that `config` describes, starting it if local.

    Parameters
    ----------
    config : mapping
        A cluster configuration, as loaded from ``conf/cluster/*.yaml``:

        ``kind`` (default ``"local-cpu"``)
            ``"local-cpu"``: start a ``distributed.LocalCluster`` (worker processes, one
            thread each unless ``threads_per_worker`` says otherwise).
            ``"local-cuda"``: start a ``dask_cuda.LocalCUDACluster`` (one worker per GPU).
            ``"remote"``: connect to the running scheduler at ``scheduler_address``.
        ``dask`` (optional)
            A nested mapping of Dask configuration, applied with ``dask.config.set`` before
            anything starts (so spawned local workers inherit it); for example
            ``{"distributed": {"comm": {"timeouts": {"connect": "60s"}}}}``.
        any other key
            Passed unchanged to the constructor, under the same name: for ``local-cpu``
            ``n_workers``, ``threads_per_worker``, ``processes``, ``memory_limit``,
            ``dashboard_address`` (null: no dashboard), ``local_directory``; for
            ``local-cuda`` those but ``processes``, and ``CUDA_VISIBLE_DEVICES``,
            ``device_memory_limit``, ``rmm_pool_size``, ``rmm_async``, ``enable_cudf_spill``,
            ``protocol``
            (``auto``, the default, ``tcp`` or ``ucx``: :func:`cuda_protocol`);
            for ``remote`` ``scheduler_address`` (required) and ``timeout``. Null values are
            passed as None, which is each constructor's default unless noted.

    Returns
    -------
    distributed.Client
        Connected, and the default client. For a local kind, ``client.cluster`` is the cluster
        started here; :func:`disconnect` closes both.

    Raises
    ------
    gpipe.InputError
        If `kind` or a key is unknown (the message names it), ``scheduler_address`` is
        missing for ``remote``, or ``local-cuda`` is asked for without dask-cuda or a GPU.
    OSError
        If a remote scheduler cannot be reached within ``timeout`` (a TLS handshake that fails
        is one such error).
    gpipe.InputError
        For a ``tls://`` scheduler address without ``distributed.comm.tls.ca-file`` and
        ``distributed.comm.tls.client.cert`` in Dask config (the cluster file's ``dask:``
        section sets them, with ``distributed.comm.tls.client.key``).

    Examples
    --------
    >>> import yaml
    >>> with open("conf/cluster/local-cpu.yaml") as f:  # doctest: +SKIP
    ...     client = connect(yaml.safe_load(f))
    """
    if not isinstance(config, Mapping):
        raise InputError(f"a cluster configuration must be a mapping, not {type(config).__name__}")
    options = dict(config)
    kind = options.pop("kind", "local-cpu")
    if kind not in CLUSTER_KINDS:
        raise InputError(f"cluster kind must be one of {sorted(CLUSTER_KINDS)}, not {kind!r}")
    settings = options.pop("dask", None) or {}
    if not isinstance(settings, Mapping):
        raise InputError(f"cluster key 'dask' must be a mapping of Dask settings, not {settings!r}")
    unknown = sorted(set(options) - CLUSTER_KINDS[kind])
    if unknown:
        raise InputError(
            f"unknown key {unknown[0]!r} in a {kind} cluster configuration; "
            f"known: {', '.join(sorted(CLUSTER_KINDS[kind]))}, dask"
        )

    import dask
    from distributed import Client

    if settings:
        dask.config.set(_dotted(settings))  # set, not merged under the top key: flatten first

    if kind == "remote":
        address = options.pop("scheduler_address", None)
        if not address:
            raise InputError("a remote cluster configuration needs 'scheduler_address'")
        _check_tls(str(address))
        return Client(address, **options)
    if kind == "local-cuda":
        return _client_of(_local_cuda_cluster(options))
    return _client_of(_local_cpu_cluster(options))


TLS_NEEDED = ("distributed.comm.tls.ca-file", "distributed.comm.tls.client.cert")


def _check_tls(address: str) -> None:
    """Refuse, in one line, a ``tls://`` scheduler address without the certificates a client
    needs (Dask would fail with a TypeError deep in its comms): the CA file and the client's
    certificate, from Dask config (a cluster file's ``dask:`` section sets them)."""
    if not address.startswith("tls://"):
        return
    import dask

    missing = [name for name in TLS_NEEDED if not dask.config.get(name, None)]
    if missing:
        raise InputError(
            f"cannot connect to the Dask scheduler {address!r}: it takes TLS, and "
            f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not set; give the CA "
            "file and this client's certificate and key (distributed.comm.tls.client.key) under "
            "the cluster file's dask: section, as conf/cluster/remote.yaml shows")


def _client_of(cluster):
    """A client of the local `cluster`, made the default; the cluster is closed if that fails.

    Both are closed at exit, the client first, if the program leaves them open: Dask's own exit
    handlers close the cluster before the client, and workers removed while the client still
    holds results (the partitions of a graph or a result, data that no task can make again)
    make the scheduler log an ERROR that the cluster lost scattered data.
    """
    from distributed import Client

    try:
        client = Client(cluster)
    except BaseException:
        with deferred_interrupt():
            cluster.close()
        raise
    atexit.register(disconnect, client)  # runs before Dask's, which were registered first
    return client


def _local_cpu_cluster(options):
    """A LocalCluster of single-threaded worker processes (unless ``options`` say otherwise).

    Each worker gets Numba's pool of all the machine's cores, and its kernels take as many
    threads as the worker has Dask threads (:mod:`gpipe.engine.threads`), so that workers side by side
    do not oversubscribe the cores; a traversal alone on the machine (a graph with one owner)
    takes every core, as it would without a cluster.
    """
    import os

    from distributed import LocalCluster

    from gpipe.engine.threads import SHARE_ENV

    options = dict(options)
    options.setdefault("processes", True)
    options.setdefault("threads_per_worker", 1)
    env = dict(options.pop("env", None) or {})
    env.setdefault("NUMBA_NUM_THREADS", str(os.cpu_count() or 1))
    env.setdefault(SHARE_ENV, str(options["threads_per_worker"]))
    return start_apart_from_sigint(lambda: LocalCluster(env=env, **options))


def start_apart_from_sigint(start):
    """Return ``start()``, run so that the threads and processes it starts never see SIGINT.

    Ctrl-C at a terminal sends SIGINT to every process of its process group, the worker
    processes of a local cluster included: each would print its own ``KeyboardInterrupt``
    traceback and die, and its nanny start another. So `start` (a cluster's constructor) runs
    in a thread that blocks SIGINT: the threads it starts (the cluster's event loop, where the
    nannies live) inherit the block, and so do the processes they start, across their exec (and
    Python leaves it so); a worker that a nanny restarts later too. This thread waits meanwhile,
    and a Ctrl-C raises ``KeyboardInterrupt`` here at once: the processes started so far are
    then killed (the cluster is not up yet to close them). Outside the main thread, where
    Python handles no signal, `start` just runs.
    """
    if threading.current_thread() is not threading.main_thread():
        return start()
    import os

    import psutil  # a dependency of distributed

    phase("cluster")
    if os.name == "posix":
        # Started here, not by the cluster's first worker: starting it unblocks SIGINT in the
        # thread that does (Python's bpo-33613), and every worker after that one would get it.
        from multiprocessing import resource_tracker

        _start_quiet_resource_tracker(resource_tracker)
    before = {child.pid for child in psutil.Process().children(recursive=True)}
    outcome = {}

    def run():
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            outcome["value"] = start()
        except BaseException as error:  # handed to the waiting thread
            outcome["error"] = error

    starter = threading.Thread(target=run, name="gpipe-cluster-start", daemon=True)
    starter.start()
    try:
        while starter.is_alive():
            starter.join(0.05)
    except KeyboardInterrupt:
        # The nannies (this process's) restart each worker killed here, and would say so.
        with silenced_logging():
            _kill_new_children(psutil, before)
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _start_quiet_resource_tracker(resource_tracker) -> None:
    """Start multiprocessing's resource tracker, with its warning about leaked semaphores
    turned off: a worker killed while it starts (Ctrl-C) leaves some, which the tracker frees
    at exit, and its warning would follow the command's last line (``gpipe: interrupted``)."""
    import os

    before = os.environ.get("PYTHONWARNINGS")
    quiet = "ignore::UserWarning:multiprocessing.resource_tracker"
    os.environ["PYTHONWARNINGS"] = f"{before},{quiet}" if before else quiet
    try:
        resource_tracker.ensure_running()  # the tracker reads PYTHONWARNINGS as it starts
    finally:
        if before is None:
            del os.environ["PYTHONWARNINGS"]
        else:
            os.environ["PYTHONWARNINGS"] = before


def _kill_new_children(psutil, before: set, settle_s: float = 0.1, limit_s: float = 1.0) -> None:
    """Kill this process's children not in ``before`` until none has appeared for
    ``settle_s`` (at most ``limit_s``): the cluster's starter thread may still be spawning a
    worker, which would otherwise outlive us, or print a traceback when our end of its
    start-up pipe closes half-written."""
    deadline = time.monotonic() + limit_s
    quiet_since = time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - quiet_since < settle_s:
        found = [c for c in psutil.Process().children(recursive=True) if c.pid not in before]
        for child in found:
            with contextlib.suppress(psutil.Error):
                child.kill()
        if found:
            quiet_since = time.monotonic()
        time.sleep(0.02)


def disconnect(client, quietly: bool = False):
    """Close `client` and, if it was started on a local cluster, that cluster.

    A remote scheduler and its workers keep running. Safe to call on a closed client. A
    Ctrl-C meanwhile takes effect once both are closed (:func:`gpipe.engine.interrupts.deferred_interrupt`).
    ``quietly`` (after a Ctrl-C): a local cluster's worker processes are first asked to log
    nothing more, since they write to the same terminal and would complain of the tasks their
    closing cancels; the caller silences this process, where the nannies run
    (:func:`silenced_logging`).
    """
    cluster = getattr(client, "cluster", None)
    with deferred_interrupt():
        if quietly and cluster is not None:
            _log_nothing_on(client)
        client.close()
        if cluster is not None:
            cluster.close()


def _log_nothing_on(client) -> None:
    """Ask every worker process of ``client``'s local cluster to log nothing more, without
    waiting for the answers (the message goes ahead of the closing that follows it). Its
    nannies live in this process, which :func:`silenced_logging` silences for the close."""
    with contextlib.suppress(Exception):  # a cluster half gone: it is being closed anyway
        client.run(_log_nothing, wait=False)


async def _log_nothing() -> None:
    """A coroutine, as ``Client.run(wait=False)`` requires: it runs on the worker's event loop."""
    import logging

    logging.disable(logging.CRITICAL)


@contextlib.contextmanager
def silenced_logging(silence=True):
    """No log records at all within the block, if ``silence``.

    Interrupted (Ctrl-C), a cluster closes with its traversal still running; Dask's complaints
    about that (tasks cancelled, a worker killed) say nothing to the user, who asked for it.
    """
    if not silence:
        yield
        return
    import logging

    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        yield
    finally:
        logging.disable(previous)


def _local_cuda_cluster(options):
    if not cuda_cluster_available():
        raise InputError(
            "a CUDA cluster needs dask-cuda, cuDF, CuPy and a visible GPU; "
            "install gpipe's cuda13 extra on a GPU machine, or use a CPU cluster"
        )
    from dask_cuda import LocalCUDACluster

    options = dict(options)
    options["protocol"] = cuda_protocol(options.get("protocol") or "auto")
    # distributed-ucxx sets UCX_MEMTYPE_CACHE, which the UCX it ships no longer reads, and UCX
    # then warns in every process of a healthy cluster. The workers inherit this environment.
    os.environ.setdefault("UCX_WARN_UNUSED_ENV_VARS", "n")
    return start_apart_from_sigint(lambda: LocalCUDACluster(**options))


def ucx_available() -> bool:
    """Whether distributed-ucxx imports: UCX is a transport CUDA workers can use.

    Part of this module's contract: :func:`cuda_protocol` asks it at each call, so tests
    replace it to choose a transport as if distributed-ucxx were installed or not."""
    try:
        import distributed_ucxx  # noqa: F401
    except ImportError:
        return False
    return True


def cuda_cluster_available() -> bool:
    """Whether a local CUDA cluster can start here: dask-cuda imports and CuPy sees a GPU.

    Part of this module's contract: :func:`local_cluster_kind` and the start of a CUDA cluster
    ask it at each call, so tests replace it to start one (with a stand-in dask-cuda) where
    there is no GPU."""
    from gpipe.engine.backend import gpu_available

    try:
        import dask_cuda  # noqa: F401
    except ImportError:
        return False
    return gpu_available()


def _dotted(settings, prefix=""):
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}``: ``dask.config.set`` replaces a nested value whole."""
    flat = {}
    for key, value in settings.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(_dotted(value, name + "."))
        else:
            flat[name] = value
    return flat
