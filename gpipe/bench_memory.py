"""``gpipe bench``: the device memory a step peaks at, per worker, whatever allocates it.

CuPy's pool shows only what CuPy allocates; on a dask-cuda worker cuDF allocates through RMM
and the pool may be RMM's too. So each worker (or this process, without a cluster) samples the
device's used memory (``cudaMemGetInfo``: total less free) on a thread of its own every
:data:`SAMPLE_S` seconds while the step runs; a step's peak is the highest sample less the
memory in use when sampling began. A spike shorter than the sampling period can be missed.
"""

from __future__ import annotations

import threading

SAMPLE_S = 0.005

_SAMPLER = None  # this process's running sampler


class _Sampler(threading.Thread):
    def __init__(self):
        super().__init__(name="gpipe-bench-memory", daemon=True)
        self.start_bytes = self.peak_bytes = _used_bytes()
        self.stopped = threading.Event()

    def run(self):
        while not self.stopped.wait(SAMPLE_S):
            self.peak_bytes = max(self.peak_bytes, _used_bytes())


def _used_bytes() -> int:
    import cupy

    free, total = cupy.cuda.runtime.memGetInfo()
    return int(total - free)


def start() -> bool:
    """Start sampling this process's device (restarting a sampler left running)."""
    global _SAMPLER
    stop()
    _SAMPLER = _Sampler()
    _SAMPLER.start()
    return True


def stop() -> int | None:
    """Stop sampling; the peak bytes above the memory in use at :func:`start` (None if none ran)."""
    global _SAMPLER
    sampler, _SAMPLER = _SAMPLER, None
    if sampler is None:
        return None
    sampler.stopped.set()
    sampler.join()
    sampler.peak_bytes = max(sampler.peak_bytes, _used_bytes())
    return sampler.peak_bytes - sampler.start_bytes


class Peaks:
    """Sampling on every worker of ``client`` (or in this process when it is None), from
    construction to :meth:`stop`."""

    def __init__(self, client):
        self.client = client
        if client is None:
            start()
        else:
            client.run(start)

    def stop(self) -> dict:
        """``{worker address (None without a cluster): peak bytes}``."""
        if self.client is None:
            return {None: stop()}
        return self.client.run(stop)
