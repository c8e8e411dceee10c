"""The array operations that shared code asks ``backend.kernels`` for: plain NumPy here.

Twins of :mod:`gpipe.engine.compute.gpu_arrays`, which does each on the GPU with kernels shipped
compiled (CuPy would compile its own at their first use). Each is the NumPy call its docstring
names, nothing more, so the CPU path costs what it cost before they existed.
"""

from __future__ import annotations

import numpy as np


def copy(array) -> np.ndarray:
    return array.copy()


def cumsum_in_place(values) -> np.ndarray:
    return np.cumsum(values, out=values)


def full(n: int, value, dtype) -> np.ndarray:
    """``np.full(n, value, dtype=dtype)``."""
    return np.full(n, value, dtype=dtype)


def arange(start: int, stop: int, step: int = 1, dtype=np.int64) -> np.ndarray:
    """``np.arange(start, stop, step, dtype=dtype)``."""
    return np.arange(start, stop, step, dtype=dtype)


def take(values, index) -> np.ndarray:
    """``values.take(index)``."""
    return values.take(index)


def scatter(array, index, value) -> None:
    """``array[index] = value``."""
    array[index] = value


def astype(array, dtype, offset: int | None = None, out=None) -> np.ndarray:
    """``array.astype(dtype, copy=False)``, or ``(array + offset).astype(dtype, copy=False)``
    (a new array) when an ``offset`` is given; written into ``out`` when given."""
    converted = (array if offset is None else array + offset).astype(dtype, copy=False)
    if out is None:
        return converted
    out[...] = converted
    return out


def negative(array) -> np.ndarray:
    """``array < 0``."""
    return array < 0


def non_negative(array) -> np.ndarray:
    """``array >= 0``."""
    return array >= 0


def isfinite(array) -> np.ndarray:
    """``np.isfinite(array)``."""
    return np.isfinite(array)


def logical_not(bools, out=None) -> np.ndarray:
    """``np.logical_not(bools, out=out)``."""
    return np.logical_not(bools, out=out)


def packbits_little(bools) -> np.ndarray:
    """``np.packbits(bools, bitorder="little")``."""
    return np.packbits(bools, bitorder="little")


def count_nonzero(bools) -> int:
    """``int(np.count_nonzero(bools))``."""
    return int(np.count_nonzero(bools))


def flatnonzero(bools) -> np.ndarray:
    """``np.flatnonzero(bools)`` (int64 indices; NumPy's intp is int64 on every platform
    gpipe supports)."""
    return np.flatnonzero(bools)


def unique(values) -> np.ndarray:
    """``np.unique(values)``."""
    return np.unique(values)
