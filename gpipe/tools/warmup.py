"""``gpipe warmup``: compile every kernel ahead of time, so that no query of a later process does.

The CPU kernels are Numba functions compiled on first call and cached on disk
(:mod:`gpipe.engine.compute.cpu_jit`); :func:`warmup` compiles every signature gpipe calls them with
into that cache, so that a container image can bake the cache in::

    RUN pip install gpipe && gpipe warmup

Where CuPy sees a GPU, the CUDA kernels are loaded from the shipped binaries (compiling only
for a GPU no binary serves), and CuPy compiles into its cache (``CUPY_CACHE_DIR``) the one
kernel of its own that Dask hits when a cuDF frame is handed to ``dd.from_pandas`` (a
boolean ``any()``, seconds of NVRTC on a fresh machine) and the array operations of
per-source queries (``bfs_each``/``sssp_each``); without a GPU that part is skipped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class Warmed:
    """What :func:`warmup` did: each CPU signature compiled (or found in the cache) with its
    seconds, where Numba's cache lies, and what happened on the GPU."""

    cpu: list = field(default_factory=list)  # (qualified name, signature, seconds)
    cache_dir: str | None = None
    processes: int = 1  # that compiled the CPU kernels together
    gpu: str = "skipped: no usable GPU"
    seconds: float = 0.0


def warmup(report=None, processes=None) -> Warmed:
    """Compile every CPU kernel signature into Numba's cache; warm the GPU kernels where a GPU is usable.

    Parameters
    ----------
    report : callable, optional
        ``report(name, signature, seconds)`` after each CPU signature, for progress output.
        With several processes it is called once they are done, each signature then loaded
        from the cache (its seconds are the load's).
    processes : int, optional
        Processes that compile the CPU kernels together (default: one per CPU core; Numba
        compiles one kernel at a time per process).

    Returns
    -------
    Warmed

    Notes
    -----
    A signature already in the cache is loaded, not compiled again, so a second warmup takes
    about a second. The cache is ``NUMBA_CACHE_DIR`` when set, else ``__pycache__`` beside the
    kernel modules (or Numba's user-wide cache where that folder is read-only); run warmup with
    the same setting, and as the same user, as the queries that should find it.
    """
    import os

    from gpipe.engine.compute import cpu, cpu_cache, cpu_jit  # noqa: F401 (cpu: declares every CPU kernel)

    started = time.perf_counter()
    processes = (os.cpu_count() or 1) if processes is None else max(1, int(processes))
    if processes > 1:
        cpu_cache.compile_in_parallel(processes)
    warmed = Warmed(cpu=cpu_jit.compile_all(report), cache_dir=_cache_dir(cpu_jit),
                    processes=processes)
    warmed.gpu = _warm_gpu()
    warmed.seconds = time.perf_counter() - started
    return warmed


def _cache_dir(cpu_jit) -> str | None:
    """The folder Numba keeps the kernels' cache in (its own choice; see the Notes of warmup)."""
    cache = getattr(cpu_jit.ENTRY_POINTS[0][0], "_cache", None)
    return getattr(cache, "cache_path", None)


def _warm_gpu() -> str:
    from gpipe.engine import backend

    if not backend.gpu_available():
        return "skipped: no usable GPU"
    from gpipe.engine.compute import gpu

    gpu_warmup = getattr(gpu, "warmup", None)
    if gpu_warmup is None:
        return "skipped: gpipe.engine.compute.gpu has no warmup()"
    started = time.perf_counter()
    gpu_warmup()
    _warm_cupy_for_dask()
    try:
        _warm_cupy_for_each()
    except Exception as error:  # an extra: the kernels themselves are warm already
        return (f"done in {time.perf_counter() - started:.1f} s, but not for per-source queries "
                f"({type(error).__name__}: {error})")
    return f"done in {time.perf_counter() - started:.1f} s"


def _warm_cupy_for_each() -> None:
    """Compile into CuPy's cache the array operations that per-source queries
    (:mod:`gpipe.each`) still do with CuPy's generated kernels, by running a tiny one of each
    kind; skipped where cuDF is not installed."""
    try:
        import cudf
    except ImportError:
        return
    import gpipe

    edges = cudf.DataFrame({"src": [0, 1, 2, 0], "dst": [1, 2, 3, 3], "w": [1.0, 2.0, 1.0, 5.0]})
    for directed in (True, False):
        graph = gpipe.Graph.from_edges(edges, directed=directed, weight="w")
        for targets in (None, [3, 7]):
            for parents in (False, True):
                len(graph.bfs_each([0, 1], targets=targets, parents=parents))
                len(graph.sssp_each([0, 1], targets=targets, parents=parents))


def _warm_cupy_for_dask() -> None:
    """Compile into CuPy's cache the reduction ``dd.from_pandas(cudf_frame)`` makes CuPy
    generate (Dask checks ``frame.index.isna().any()``)."""
    import cupy

    bool(cupy.zeros(2, dtype=bool).any())
