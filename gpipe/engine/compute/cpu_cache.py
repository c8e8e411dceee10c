"""Numba's on-disk cache, filled once: compilations that outlive the process that started them.

A process's first CPU queries are answered by SciPy while their kernels compile on a background
thread (:mod:`gpipe.engine.compute.cpu_scipy`). A process shorter than those compilations would
leave the cache part-filled, and every later process would compile the rest again. At its exit
the kernels still queued go to :func:`finish_detached`: a detached process, which outlives it,
compiles them into the cache (:func:`compile_named`), one such process at a time per cache
folder.
"""

from __future__ import annotations

from gpipe.engine.compute import cpu  # noqa: F401 (declares every CPU kernel, in order)
from gpipe.engine.compute.cpu_jit import ENTRY_POINTS

FINISH_LOCK = ".gpipe-finish.lock"  # in Numba's cache folder: one finisher compiles at a time


def finish_detached(pairs) -> None:
    """Start a detached process (its own session, no terminal, output discarded) that compiles
    ``pairs`` (``(dispatcher, signature)`` of :data:`ENTRY_POINTS`) into Numba's on-disk cache,
    and return at once. The process names them by their place in :data:`ENTRY_POINTS`, which
    the same installed modules declare in the same order, and inherits this environment
    (``NUMBA_CACHE_DIR``, ``NUMBA_CPU_NAME``), so it writes the cache this process reads."""
    import subprocess

    places = {id(dispatcher): i for i, (dispatcher, _) in enumerate(ENTRY_POINTS)}
    named = []
    for dispatcher, signature in pairs:
        i = places.get(id(dispatcher))
        if i is not None and signature in ENTRY_POINTS[i][1]:
            named.append(f"{i}:{ENTRY_POINTS[i][1].index(signature)}")
    if named:
        _compiler_process(named, one_at_a_time=True, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)


def _compiler_process(named, one_at_a_time: bool, **popen):
    """A process of this Python running :func:`compile_named` over ``named``."""
    import subprocess
    import sys

    code = ("import sys; from gpipe.engine.compute.cpu_cache import compile_named; "
            f"compile_named(sys.argv[1:], one_at_a_time={one_at_a_time})")
    return subprocess.Popen([sys.executable, "-c", code, *named], stdin=subprocess.DEVNULL, **popen)


def compile_named(named, one_at_a_time: bool = True) -> None:
    """Compile the signatures named ``"i:j"`` (signature ``j`` of entry point ``i`` of
    :data:`ENTRY_POINTS`) into Numba's cache; a signature cached already is loaded instead.
    ``one_at_a_time``: the detached finisher's way, one such process at a time per cache folder
    (a later one then finds most of them cached); :func:`compile_in_parallel`'s processes
    share the work instead."""
    import fcntl
    import os

    cache_path = getattr(getattr(ENTRY_POINTS[0][0], "_cache", None), "cache_path", None)
    lock = None
    if cache_path and one_at_a_time:
        os.makedirs(cache_path, exist_ok=True)
        lock = open(os.path.join(cache_path, FINISH_LOCK), "w")
        fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        for place in named:
            i, j = (int(part) for part in place.split(":"))
            dispatcher, signatures = ENTRY_POINTS[i]
            dispatcher.compile(signatures[j])
    finally:
        if lock is not None:
            lock.close()


def compile_in_parallel(processes: int) -> None:
    """Compile every declared signature into Numba's cache with ``processes`` processes: this
    one and ``processes - 1`` others, each a share (Numba compiles under a global lock, so
    threads would not help; processes writing one cache folder do not collide, each entry
    being written whole under its own name). Raises RuntimeError naming a helper process that
    failed."""
    import subprocess

    places = [f"{i}:{j}" for i, (_, signatures) in enumerate(ENTRY_POINTS) for j in range(len(signatures))]
    shares = [places[k::processes] for k in range(max(1, processes))]
    helpers = [_compiler_process(share, one_at_a_time=False, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)
               for share in shares[1:] if share]
    try:
        compile_named(shares[0], one_at_a_time=False)
    finally:
        for helper in helpers:
            _, err = helper.communicate()
            if helper.returncode != 0:
                last = (err.strip().splitlines() or ["no message"])[-1]
                raise RuntimeError(f"a warmup process compiling kernels failed ({helper.returncode}): {last}")
