"""How gpipe's CPU kernels are compiled: lazily, for declared signatures, into Numba's disk cache.

Every compiled function that Python code calls (an *entry point*) is made with :func:`kernel`,
which names the argument types gpipe calls it with. Nothing is compiled at import (that would
cost every ``import gpipe`` seconds, or the loading of every cached kernel). A query compiles,
or loads from the cache, only the entry points it calls, for the types it calls them with; and
:func:`compile_all` (``gpipe warmup``) compiles every declared signature ahead of time, so that
a later process finds each of them in the cache. Compiled functions called only from other
compiled functions (``numba.njit`` in the kernel modules) are compiled into their callers and
need no signature of their own.

A signature holds only when the callers pass exactly those types: an ``int64`` scalar, not a
Python ``int`` literal inside compiled code (Numba would compile a copy for ``Literal[int](0)``),
C-contiguous writable arrays (a read-only or strided array is another type, so another
compilation). tests/test_warmup.py checks that a query after ``gpipe warmup`` compiles nothing.

Numba's cache (``cache=True``) lives in ``__pycache__`` beside the kernel modules, or under
``NUMBA_CACHE_DIR`` when set (also where the package directory is read-only); an entry is
used while its module's file keeps the path, size and modification time it was compiled from.
"""

from __future__ import annotations

import time

import numba
import numpy
from numba import types

# Argument types. Arrays are one-dimensional, C-contiguous and writable unless named otherwise.
INT64 = types.int64
FLOAT64 = types.float64
BOOL = types.boolean
INT32S = types.int32[::1]
INT64S = types.int64[::1]
FLOAT64S = types.float64[::1]
FLOAT32S = types.float32[::1]
# Read-only twins: the columns of an input frame (Arrow-backed pandas) reach build_csr as they are.
INT32S_RO = types.Array(types.int32, 1, "C", readonly=True)
INT64S_RO = types.Array(types.int64, 1, "C", readonly=True)
FLOAT64S_RO = types.Array(types.float64, 1, "C", readonly=True)
FLOAT32S_RO = types.Array(types.float32, 1, "C", readonly=True)
UINT8S = types.uint8[::1]
BOOLS = types.boolean[::1]
INT64S_2D = types.int64[:, ::1]
INDEX_ARRAYS = (INT32S, INT64S)  # what CSR indices and edge endpoints hold (Layout.index_dtype)
# What a graph's weights hold (gpipe.partitioning.weights): float64, or float32 where that is
# exact or asked for. A kernel adds a float32 weight to a float64 distance in float64.
WEIGHT_ARRAYS = (FLOAT64S, FLOAT32S)

ENTRY_POINTS = []  # every dispatcher made by kernel(), with its signatures: (dispatcher, tuple)


def kernel(*signatures, parallel=False):
    """``numba.njit(cache=True, nogil=True)`` for a function called from Python with one of
    `signatures` (tuples of argument types); compiled on first call, or by :func:`compile_all`."""

    def make(function):
        dispatcher = numba.njit(cache=True, nogil=True, parallel=parallel)(function)
        ENTRY_POINTS.append((dispatcher, signatures))
        return dispatcher

    return make


def each_index(make) -> tuple:
    """``make(indices type)``'s signature for each index dtype (int32 and int64)."""
    return tuple(make(index) for index in INDEX_ARRAYS)


def each_index_and_weight(make) -> tuple:
    """``make(indices type, weights type)``'s signature for each index dtype and each weight
    dtype (the kernels that read weights)."""
    return tuple(make(index, weights) for index in INDEX_ARRAYS for weights in WEIGHT_ARRAYS)


def plain(array):
    """`array` as the kernels' signatures take arrays: C-contiguous and writable (a copy only
    where it is not, e.g. an array Dask deserialized from an immutable message)."""
    return numpy.require(array, requirements=("C", "W"))


def compile_all(report=None) -> list:
    """Compile (or load from the cache) every declared signature of every entry point declared
    so far: import :mod:`gpipe.engine.compute.cpu` first (it imports every CPU kernel module).

    ``report(name, signature, seconds)``, when given, is called after each. Returns
    ``[(qualified name, signature, seconds)]``.
    """
    done = []
    for dispatcher, signatures in ENTRY_POINTS:
        name = f"{dispatcher.py_func.__module__}.{dispatcher.py_func.__qualname__}"
        for signature in signatures:
            started = time.perf_counter()
            dispatcher.compile(signature)
            done.append((name, signature, time.perf_counter() - started))
            if report is not None:
                report(*done[-1])
    return done
