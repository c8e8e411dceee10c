"""``gpipe bench``: the memory a step peaks at, per worker: sampled whatever allocates it, and
CuPy's memory pool (the bench's only GPU-specific code beside its kernels' calls).

CuPy's pool shows only what CuPy allocates; on a dask-cuda worker cuDF allocates through RMM
and the pool may be RMM's too. So each worker (or this process, without a cluster) samples the
memory in use on a thread of its own every :data:`SAMPLE_S` seconds while the step runs: the
device's (``cudaMemGetInfo``: total less free) on GPU, the process's resident set on CPU. A
step's peak is the highest sample less the memory in use when sampling began; the samples
themselves, with their times, say when (:mod:`gpipe.tools.bench_phases`). A spike shorter than
the sampling period can be missed.
"""

from __future__ import annotations

import threading
import time

from gpipe.engine import backend as backends

SAMPLE_S = 0.005

_SAMPLER = None  # this process's running sampler


class _Sampler(threading.Thread):
    def __init__(self, kind):
        super().__init__(name="gpipe-bench-memory", daemon=True)
        self.kind = kind
        self.start_bytes = self.peak_bytes = _used_bytes(kind)
        self.samples = [(time.time(), self.start_bytes)]
        self.stopped = threading.Event()

    def run(self):
        while not self.stopped.wait(SAMPLE_S):
            self.sample()

    def sample(self):
        used = _used_bytes(self.kind)
        self.samples.append((time.time(), used))
        self.peak_bytes = max(self.peak_bytes, used)


def _used_bytes(kind="device") -> int:
    if kind == "host":
        import psutil  # a dependency of distributed

        return int(psutil.Process().memory_info().rss)
    import cupy

    free, total = cupy.cuda.runtime.memGetInfo()
    return int(total - free)


def start(kind="device") -> bool:
    """Start sampling this process's device (``kind="host"``: its resident set), restarting a
    sampler left running."""
    global _SAMPLER
    stop()
    _SAMPLER = _Sampler(kind)
    _SAMPLER.start()
    return True


def stop() -> int | None:
    """Stop sampling; the peak bytes above the memory in use at :func:`start` (None if none ran)."""
    timeline = stop_timeline()
    return None if timeline is None else timeline["peak"]


def stop_timeline() -> dict | None:
    """Stop sampling; ``{"peak": bytes above the start, "start": bytes in use at the start,
    "samples": [(time.time(), bytes in use), ...]}`` (None if none ran)."""
    global _SAMPLER
    sampler, _SAMPLER = _SAMPLER, None
    if sampler is None:
        return None
    sampler.stopped.set()
    sampler.join()
    sampler.sample()
    return {"peak": sampler.peak_bytes - sampler.start_bytes, "start": sampler.start_bytes,
            "samples": sampler.samples}


class Peaks:
    """Sampling on every worker of ``client`` (or in this process when it is None), from
    construction to :meth:`stop`: device memory, or each process's resident set with
    ``kind="host"``."""

    def __init__(self, client, kind="device"):
        self.client, self.kind = client, kind
        self.timelines = {}
        if client is None:
            start(kind)
        else:
            client.run(start, kind)

    def stop(self) -> dict:
        """``{worker address (None without a cluster): peak bytes}``; each worker's samples are
        left in ``timelines`` (:func:`stop_timeline`)."""
        if self.client is None:
            self.timelines = {None: stop_timeline()}
        else:
            self.timelines = self.client.run(stop_timeline)
        return {address: None if t is None else t["peak"] for address, t in self.timelines.items()}


def sync(backend_name):
    """Wait for the device's queued work: kernels run asynchronously to the clock."""
    if backend_name == backends.GPU:
        import cupy

        cupy.cuda.get_current_stream().synchronize()


def use_pool():
    """Allocate CuPy arrays from CuPy's default pool in this process, so its high-water marks
    are the peak memory figures (cuDF's own allocations go through RMM and are not counted)."""
    import cupy

    cupy.cuda.set_allocator(cupy.get_default_memory_pool().malloc)


def cupy_pool():
    """CuPy's default memory pool, or None when CuPy allocates through something else (RMM)."""
    import cupy

    default = cupy.get_default_memory_pool()
    return default if getattr(cupy.cuda.get_allocator(), "__self__", None) is default else None


def pool_mark(backend_name):
    """Free the pool's cached blocks; return the bytes still live (None on CPU)."""
    if backend_name != backends.GPU or cupy_pool() is None:
        return None
    sync(backend_name)
    default = cupy_pool()
    default.free_all_blocks()
    return default.used_bytes()


def pool_peak(backend_name, mark):
    """Pool bytes allocated since :func:`pool_mark`: the step's high-water mark, approximately."""
    if mark is None:
        return None
    return int(cupy_pool().total_bytes() - mark)


def free_pools(backend_name, client):
    if backend_name == backends.GPU:
        pool_mark(backend_name)
        if client is not None:
            client.run(pool_mark, backend_name)


def pool_mark_all(backend_name, client):
    """Per worker (or for this process): the bytes live after freeing the cached blocks."""
    if backend_name != backends.GPU:
        return None
    if client is None:
        return {None: pool_mark(backend_name)}
    return client.run(pool_mark, backend_name)


def pool_peak_all(graph, mark):
    """Sum over devices of the pool's growth since ``mark`` (None on CPU or without CuPy's pool)."""
    if mark is None:
        return None
    backend_name = graph.backend
    if list(mark) == [None]:
        return pool_peak(backend_name, mark[None])
    client = graph.engine.executor.client
    peaks = client.run(pool_total)
    if any(m is None for m in mark.values()):
        return None
    return int(sum(peaks[w] - mark[w] for w in mark))


def pool_total():
    default = cupy_pool()
    return default.total_bytes() if default is not None else 0
