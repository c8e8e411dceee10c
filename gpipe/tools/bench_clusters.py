"""``gpipe bench``: the local Dask cluster a bench runs on, and the GPUs it can see."""

from __future__ import annotations

import contextlib

from gpipe.engine import backend as backends


@contextlib.contextmanager
def cluster(backend_name, workers, shared_gpu=False, protocol="tcp"):
    """A local cluster of ``workers`` workers, current while the bench runs; None for 0.
    ``protocol``, resolved already, is "tcp" or "ucx"."""
    if not workers:
        yield None
        return
    from distributed import Client, LocalCluster

    from gpipe.cluster import start_local_cluster

    if backend_name == backends.GPU and shared_gpu:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               dashboard_address=None, protocol=protocol,
                               env={"CUDA_VISIBLE_DEVICES": "0"})
        client = Client(cluster, set_as_default=False)
    else:
        cluster, client = start_local_cluster("cuda" if backend_name == backends.GPU else "cpu",
                                              n_workers=workers, dashboard=False, protocol=protocol)
    try:
        client.wait_for_workers(workers)
        with client.as_current():
            yield client
    finally:
        close_quietly(client, cluster)


def close_quietly(client, cluster) -> None:
    """Close the client and the cluster. A worker that will not stop in time is logged, not
    raised: raised in a ``finally``, it would stand in for the error that ended the bench."""
    import logging

    try:
        client.close()
        cluster.close()
    except (TimeoutError, OSError) as error:
        logging.getLogger(__name__).warning("the bench's local cluster did not close cleanly: %r", error)


def visible_gpus() -> int:
    import cupy

    return int(cupy.cuda.runtime.getDeviceCount())
