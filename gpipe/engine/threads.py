"""How many threads the CPU kernels of a task on a worker take.

A local CPU cluster that gpipe starts (:func:`gpipe.cluster.start_local_cluster`) gives each
worker process Numba's whole pool (``NUMBA_NUM_THREADS`` = the machine's cores) and tells it its
share of the cores in :data:`SHARE_ENV` (its Dask threads). A task then runs its kernels on
that share, so that workers side by side do not oversubscribe the cores; but a traversal that
runs alone on its host (a graph with one owner) takes the whole pool, as it would with no
cluster: gpipe puts a graph on one worker exactly when one worker holds it, and a cluster must
not make that traversal slower than the same call without one.

Workers started otherwise (no :data:`SHARE_ENV`) keep Numba's own setting.
"""

from __future__ import annotations

import contextlib
import os

SHARE_ENV = "GPIPE_TASK_THREADS"


@contextlib.contextmanager
def kernel_threads(whole_pool: bool = False):
    """Within the block, this thread's Numba kernels take this worker's share of the cores, or
    its whole pool when ``whole_pool``; nothing changes where :data:`SHARE_ENV` is not set."""
    share = os.environ.get(SHARE_ENV)
    if not share:
        yield
        return
    import numba

    pool = numba.config.NUMBA_NUM_THREADS
    before = numba.get_num_threads()
    numba.set_num_threads(pool if whole_pool else max(1, min(pool, int(share))))
    try:
        yield
    finally:
        numba.set_num_threads(before)
