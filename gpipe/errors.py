"""Exceptions raised by gpipe, and how a command line reports errors in one line."""

from __future__ import annotations

import errno
import re


class GpipeError(Exception):
    """Base class of every error gpipe raises on purpose."""


class InputError(GpipeError, ValueError):
    """The edges, a column, a source or an option is not usable; the message names which."""


class NegativeCycleError(GpipeError):
    """A cycle of negative total weight is reachable from a source, so shortest paths are undefined."""


def on_undirected(error: NegativeCycleError) -> NegativeCycleError:
    """`error`, raised by a traversal of an undirected graph, with the reason such a graph has one.

    Every edge of an undirected graph goes both ways, so one of negative weight is a negative
    cycle by itself, whatever the other weights.
    """
    return NegativeCycleError(
        f"{error}; the graph is undirected, so each edge of negative weight u-v is itself a "
        "negative cycle (u->v->u): give every edge a weight >= 0, or traverse the graph as directed")


class NoPath(GpipeError):
    """No path leads from the source to the target (``Graph.path``); the message names both.

    Like NetworkX's ``NetworkXNoPath``. The graph and the query are fine, so it is not an
    :class:`InputError`.
    """


class GraphTooLarge(InputError):
    """The graph cannot fit the memory of the workers that would own it; raised before building.

    The message names the bytes each owner would need and the bytes the workers have.
    """


class GraphLost(GpipeError):
    """Partitions of a graph were lost with their worker and cannot be rebuilt from its input.

    The message names the partition and the worker; build the graph again from its edges.
    """


class ClientClosed(GraphLost):
    """The Dask client a graph was built on is closed, and its partitions with it.

    Build the graph again with :meth:`gpipe.Graph.from_edges` under the client active now.
    """


class OutOfMemory(MemoryError, GpipeError):
    """A worker ran out of memory (host or device) building or traversing a graph.

    The message names the worker or partition and, where known, the sizes involved.
    """


def plain(value):
    """`value` as a message shows it: a NumPy scalar as the Python value it holds.

    >>> import numpy as np
    >>> f"vertex {plain(np.int64(1))!r}", f"vertex {plain('a')!r}"
    ('vertex 1', "vertex 'a'")
    """
    item = getattr(value, "item", None)
    return item() if item is not None and getattr(value, "shape", None) == () else value


# How LLVM, the CUDA driver and runtime, RMM and the C library say it when no exception type does.
_OUT_OF_MEMORY = re.compile(r"out[ _]of[ _]memory|bad_alloc|cannot allocate memory", re.IGNORECASE)


def command_report(error: BaseException) -> tuple[int, str] | None:
    """How a command reports `error`: its exit status and one line for stderr, or None for a bug.

    ``(2, "gpipe: error: ...")`` for an :class:`InputError`, ``(1, ...)`` for another
    :class:`GpipeError` and for memory running out (:func:`out_of_memory`),
    ``(130, "gpipe: interrupted")`` for ``KeyboardInterrupt`` (SIGINT, Ctrl-C: 128 + 2, as
    shells report a command that SIGINT ended). Anything else is None: the caller lets it
    through, with its traceback.
    """
    if isinstance(error, KeyboardInterrupt):
        return 130, "gpipe: interrupted"
    if isinstance(error, InputError):
        return 2, f"gpipe: error: {error}"
    if isinstance(error, GpipeError):
        return 1, f"gpipe: {type(error).__name__}: {error}"
    memory = out_of_memory(error)
    if memory is not None:
        return 1, f"gpipe: out of memory: {memory}"
    return None


def report_or_raise(error: BaseException) -> int:
    """Print `error` as :func:`command_report`'s one line on stderr and return its exit status;
    raise it again (with its traceback) when it is a bug."""
    report = command_report(error)
    if report is None:
        raise error
    status, line = report
    say(line)
    return status


def say(line: str) -> None:
    """Write ``line`` to stderr and flush it, where stderr can still take it: a pipe whose
    reader is gone (``gpipe ... 2>&1 | tee log`` after Ctrl-C ended ``tee``) drops the line
    rather than turn the command's exit status into a ``BrokenPipeError``."""
    import sys

    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError):  # a closed pipe or stream: nobody is left to read the line
        pass


def out_of_memory(error: BaseException) -> str | None:
    """One line saying how memory ran out, if `error` or an exception it came from says so; else None.

    Recognized: ``MemoryError`` and its subclasses (NumPy, Numba's allocator, pyarrow's
    ``ArrowMemoryError``, cuDF/RMM, CuPy's ``OutOfMemoryError``), an ``OSError`` with
    ``ENOMEM``, a message saying "out of memory" or "bad_alloc" (LLVM, CUDA errors), and Dask's
    ``KilledWorker``: every worker that ran a task died, which is what the nanny does to a worker
    that exceeds its memory limit. The exception chain (``raise ... from``) is followed.

    Examples
    --------
    >>> out_of_memory(RuntimeError("step failed"))
    >>> try:
    ...     try:
    ...         raise MemoryError("Unable to allocate 8.00 GiB")
    ...     except MemoryError as cause:
    ...         raise RuntimeError("build failed") from cause
    ... except RuntimeError as error:
    ...     out_of_memory(error)
    'MemoryError: Unable to allocate 8.00 GiB'
    """
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        text = " ".join(str(error).split())
        if type(error).__name__ == "KilledWorker":
            return _killed_workers(error)
        if (isinstance(error, MemoryError) or getattr(error, "errno", None) == errno.ENOMEM
                or _OUT_OF_MEMORY.search(text)):
            return f"{type(error).__name__}: {text}" if text else type(error).__name__
        error = error.__cause__ if error.__suppress_context__ else error.__context__
    return None


_DEVICE_MODULES = ("cupy", "rmm", "cudf", "pylibcudf", "numba.cuda", "cuda")
_DEVICE_TEXT = re.compile(r"\bcuda|cudaMalloc|device memory|\brmm\b|out_of_memory", re.IGNORECASE)
_BYTES = re.compile(r"allocat\w*\s+([\d,]+)\s*bytes", re.IGNORECASE)
_SIZED = re.compile(r"allocate\s+([\d.]+)\s*(B|KiB|MiB|GiB|TiB)\b", re.IGNORECASE)
_UNITS = {"b": 1, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def memory_kind(error: BaseException, on_gpu: bool = False) -> str:
    """``"device"`` or ``"host"``: which memory an out-of-memory error ran out of.

    Device where the error, or one it came from, is CuPy's, RMM's or cuDF's and names CUDA or
    RMM (RMM's ``out_of_memory`` says "CUDA error ... failed to allocate"), or where the task
    worked on the GPU (``on_gpu``) and the library said only ``bad_alloc`` (cuDF turns RMM's
    failures into a ``MemoryError`` of that text); host otherwise (NumPy, Arrow, Numba).

    >>> memory_kind(MemoryError("Unable to allocate 8.00 GiB for an array"))
    'host'
    >>> memory_kind(MemoryError("std::bad_alloc: out_of_memory: CUDA error: failed to allocate 34359685776 bytes"))
    'device'
    """
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        text = str(error)
        module = type(error).__module__ or ""
        if module.startswith(_DEVICE_MODULES) or _DEVICE_TEXT.search(text):
            return "device"
        if on_gpu and "bad_alloc" in text:
            return "device"
        error = error.__cause__ if error.__suppress_context__ else error.__context__
    return "host"


def bytes_asked(error: BaseException) -> int | None:
    """The size of the allocation that failed, where the message says it (CuPy's "allocating
    N bytes", RMM's "failed to allocate N bytes", NumPy's "Unable to allocate 8.00 GiB").

    >>> bytes_asked(MemoryError("Unable to allocate 1.50 GiB for an array"))
    1610612736
    """
    text = str(error)
    found = _BYTES.search(text)
    if found:
        return int(found.group(1).replace(",", ""))
    found = _SIZED.search(text)
    if found:
        return int(float(found.group(1)) * _UNITS[found.group(2).lower()])
    return None


def _killed_workers(error) -> str:
    task = getattr(error, "task", None)
    return (
        f"the Dask workers that ran task {task!r} all died (KilledWorker), most often because the "
        "nanny stopped them above their memory limit; give the workers more memory, or add workers"
    )
