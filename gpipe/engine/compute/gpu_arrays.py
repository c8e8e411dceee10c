"""The CuPy calls of the build and one-owner query path, as kernels gpipe ships compiled.

CuPy generates and compiles (NVRTC, about 0.1 s each, seconds for a boolean reduction) a
kernel for each elementwise operation, index expression and reduction it meets first; on a
fresh machine a first build and query paid ~14 s for them (issue 14). Each function here does
what the CuPy call named in its docstring does, on 1-D C-contiguous arrays, with the kernels
of ``kernels/util.cu`` (loaded from the shipped binaries by :mod:`gpipe.engine.compute.cuda`), so it
compiles nothing: same values, same dtype, and for an empty input no launch at all. Inputs
outside what the kernels serve (a non-contiguous array, a float conversion) go to the CuPy
call itself, which is correct and merely compiles. The CPU twins (plain NumPy) are in
:mod:`gpipe.engine.compute.cpu_arrays`; shared code reaches either through ``backend.kernels``.

What stays precompiled in CuPy and is used as it is: ``cupy.empty``, ``cupy.zeros``
(memset), copies of contiguous arrays (memcpy), CUB's scan called in place
(:func:`cumsum_in_place`: ``cupy.cumsum`` itself first copies its input with a generated
kernel) and ``min``/``max``/``sum`` of contiguous arrays (CUB), ``cupy.sort`` (Thrust/CUB).
"""

from __future__ import annotations

import numpy as np

import cupy

from gpipe.engine.compute import cuda
from gpipe.engine.compute.cuda_sources import INTEGER_TYPES, WIDTH_TYPES

_SOURCE = "util.cu"
TILE = cuda.BLOCK * 8  # kTile in util.cu: items per nonzero_* block (of cuda.BLOCK threads, kBlock there)
_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}  # the view of each width
_INT64 = np.dtype(np.int64)
_ZERO_TEST_TYPES = {np.dtype(np.bool_): "unsigned char", np.dtype(np.int32): "int",
                    _INT64: "long long", np.dtype(np.float64): "double"}
_NEGATIVE, _NON_NEGATIVE, _FINITE, _ZERO = range(4)  # kNegative ... in util.cu


def _kernel(name: str, *types: str):
    return cuda.typed_function(_SOURCE, name, ", ".join(types))


def _launch(kernel, n: int, args) -> None:
    kernel(cuda.grid(n), (cuda.BLOCK,), args)


def _servable(*arrays) -> bool:
    """True when every array is 1-D and C-contiguous (what the kernels read and write)."""
    return all(a.ndim == 1 and a.flags.c_contiguous for a in arrays)


def _bits(array):
    """``array`` viewed as the unsigned integers of its width, and their C++ type."""
    width = array.dtype.itemsize
    return array.view(_UNSIGNED[width]), WIDTH_TYPES[width]


def _bit_pattern(value, dtype):
    """``value`` as ``dtype`` (NumPy's conversion, as CuPy's), its bits as an unsigned scalar."""
    return np.array(value, dtype=dtype).view(_UNSIGNED[dtype.itemsize])[()]


def _index(index):
    """``index`` as an int32 or int64 contiguous array, and its C++ type."""
    if index.dtype not in cuda.INDEX_TYPES:
        index = astype(index, np.int64)
    return cupy.ascontiguousarray(index), cuda.INDEX_TYPES[index.dtype]


def full(n: int, value, dtype) -> cupy.ndarray:
    """``cupy.full(n, value, dtype=dtype)``: ``n`` copies of ``value`` converted to ``dtype``
    (as NumPy converts it: ``inf`` for float64, ``-1`` for any signed integer)."""
    dtype = np.dtype(dtype)
    out = cupy.empty(n, dtype=dtype)
    if n:
        bits, ctype = _bits(out)
        _launch(_kernel("fill", ctype), n, (bits, np.int64(n), _bit_pattern(value, dtype)))
    return out


def arange(start: int, stop: int, step: int = 1, dtype=np.int64) -> cupy.ndarray:
    """``cupy.arange(start, stop, step, dtype=dtype)`` for int32 or int64 ``dtype``."""
    dtype = np.dtype(dtype)
    if dtype not in cuda.INDEX_TYPES:
        return cupy.arange(start, stop, step, dtype=dtype)
    n = max(0, -(-(stop - start) // step))
    out = cupy.empty(n, dtype=dtype)
    if n:
        scalar = dtype.type
        _launch(_kernel("iota", cuda.INDEX_TYPES[dtype]), n, (out, np.int64(n), scalar(start), scalar(step)))
    return out


def take(values, index) -> cupy.ndarray:
    """``values.take(index)`` of a 1-D ``values``: ``values[index[i]]``, of ``values``' dtype
    and ``index``'s length. As in CuPy, an index out of range wraps around (mod
    ``values.size``): -1 picks the last value.

    Raises IndexError for a non-empty ``index`` into an empty ``values``.
    """
    if not _servable(values, index):
        return values.take(index)
    out = cupy.empty(index.size, dtype=values.dtype)
    if index.size == 0:
        return out
    if values.size == 0:
        raise IndexError("cannot take from an empty array")
    index, itype = _index(index)
    bits, ctype = _bits(values)
    _launch(_kernel("take", ctype, itype), index.size,
            (bits, np.int64(values.size), index, np.int64(index.size), _bits(out)[0]))
    return out


def scatter(array, index, value) -> None:
    """``array[index] = value`` for a 1-D ``array`` and an integer ``index`` (negative indices
    count from the end, as in NumPy); ``value`` is one scalar, converted to ``array``'s dtype."""
    if not _servable(array, index) or index.dtype.kind not in "iu":
        array[index] = value
        return
    if index.size == 0:
        return
    index, itype = _index(index)
    bits, ctype = _bits(array)
    _launch(_kernel("scatter_value", ctype, itype), index.size,
            (bits, np.int64(array.size), index, np.int64(index.size), _bit_pattern(value, array.dtype)))


def astype(array, dtype, offset: int | None = None, out=None) -> cupy.ndarray:
    """``array.astype(dtype, copy=False)`` for integer dtypes: ``array`` itself when it has
    ``dtype`` already, else a new array. With an ``offset`` (an int64 ``array`` only, added in
    int64): ``(array + offset).astype(dtype, copy=False)``, always a new array. With ``out``
    (1-D, contiguous, of ``dtype`` and ``array``'s length): the values written there, and
    ``out`` returned. Conversions wrap around as NumPy's and CuPy's do (int64 -1 becomes
    2**64 - 1 in uint64, 2**32 + 5 becomes 5 in int32).

    A float or bool conversion is CuPy's own ``astype`` (compiled at its first use).
    """
    dtype = np.dtype(dtype)
    if offset is not None and array.dtype != _INT64:
        raise ValueError(f"astype adds an offset to int64 arrays only, not {array.dtype}")
    if array.dtype == dtype and offset is None and out is None:
        return array
    if (array.dtype.kind not in "iu" or dtype.kind not in "iu" or not _servable(array)
            or (out is not None and not _servable(out))):
        converted = (array if offset is None else array + offset).astype(dtype, copy=False)
        if out is None:
            return converted
        out[...] = converted
        return out
    if out is None:
        out = cupy.empty(array.size, dtype=dtype)
    if array.size == 0:
        return out
    if _INT64 not in (array.dtype, dtype):  # two steps, through int64: the same bits
        return astype(astype(array, _INT64), dtype, out=out)
    source, target = INTEGER_TYPES[array.dtype.name], INTEGER_TYPES[dtype.name]
    _launch(_kernel("convert", source, target), array.size,
            (array, np.int64(array.size), array.dtype.type(offset or 0), out))
    return out


def _zero_test(array, op: int, fallback, out=None):
    ctype = _ZERO_TEST_TYPES.get(array.dtype)
    if ctype is None or not _servable(array) or (out is not None and not _servable(out)):
        return fallback(array, out=out)
    out = cupy.empty(array.size, dtype=np.bool_) if out is None else out
    if array.size:
        _launch(_kernel("zero_test", ctype), array.size, (array, np.int64(array.size), np.int32(op), out))
    return out


def negative(array) -> cupy.ndarray:
    """``array < 0`` (bool) of an int32, int64 or float64 array."""
    return _zero_test(array, _NEGATIVE, lambda a, out: cupy.less(a, 0, out=out))


def non_negative(array) -> cupy.ndarray:
    """``array >= 0`` (bool) of an int32, int64 or float64 array (NaN: False, as in NumPy)."""
    return _zero_test(array, _NON_NEGATIVE, lambda a, out: cupy.greater_equal(a, 0, out=out))


def isfinite(array) -> cupy.ndarray:
    """``cupy.isfinite(array)`` (bool): False at NaN and +-inf; True everywhere for integers."""
    return _zero_test(array, _FINITE, lambda a, out: cupy.isfinite(a, out=out))


def logical_not(bools, out=None) -> cupy.ndarray:
    """``cupy.logical_not(bools, out=out)`` of a bool array (``out`` may be ``bools``)."""
    if bools.dtype != np.bool_:
        return cupy.logical_not(bools, out=out)
    return _zero_test(bools, _ZERO, lambda a, out: cupy.logical_not(a, out=out), out=out)


def packbits_little(bools) -> cupy.ndarray:
    """``cupy.packbits(bools, bitorder="little")`` of a 1-D bool array: uint8[ceil(n / 8)],
    bit ``b`` of byte ``j`` set where ``bools[8 * j + b]``."""
    if bools.dtype != np.bool_ or not _servable(bools):
        return cupy.packbits(bools, bitorder="little")
    n = bools.size
    out = cupy.empty(-(-n // 8), dtype=np.uint8)
    if n:
        _launch(_kernel("pack_bits_little", "unsigned char"), out.size, (bools, np.int64(n), out))
    return out


def copy(array) -> cupy.ndarray:
    """``array.copy()``: a new C-contiguous array of the same values, by one device memcpy where
    ``array`` is C-contiguous (CuPy's ``copy`` launches a generated elementwise kernel)."""
    if not array.flags.c_contiguous:
        return array.copy()
    out = cupy.empty(array.shape, dtype=array.dtype)
    if array.nbytes:
        out.data.copy_from_device_async(array.data, array.nbytes)
    return out


def cumsum_in_place(values) -> cupy.ndarray:
    """``values`` replaced by its inclusive prefix sum in its own dtype (``cupy.cumsum(values,
    dtype=values.dtype)``), returned: CUB's device scan,
    shipped compiled in CuPy, on a 1-D C-contiguous integer array; CuPy's own call elsewhere."""
    if values.ndim == 1 and values.flags.c_contiguous and 0 < values.size < 2**31:  # CUB counts in int
        from cupy.cuda import cub

        scanned = cub.cub_scan(values, cub.CUPY_CUB_CUMSUM)
        if scanned is not None:
            return scanned
    values[...] = cupy.cumsum(values)
    return values


def _tile_counts(bools, n: int):
    """``[0, nonzeros of tile 0, nonzeros of tile 1, ...]`` (int64) of a bool array of ``n > 0``."""
    tiles = -(-n // TILE)
    counts = cupy.zeros(tiles + 1, dtype=np.int64)
    _kernel("nonzero_count", "unsigned char")((tiles,), (cuda.BLOCK,), (bools, np.int64(n), counts[1:]))
    return counts


def count_nonzero(bools) -> int:
    """``int(cupy.count_nonzero(bools))`` of a 1-D bool array (one read from the device)."""
    if bools.dtype != np.bool_ or not _servable(bools):
        return int(cupy.count_nonzero(bools))
    return int(_tile_counts(bools, bools.size).sum()) if bools.size else 0


def flatnonzero(bools) -> cupy.ndarray:
    """``cupy.flatnonzero(bools)`` of a 1-D bool array: the int64 indices of its True items, in
    increasing order. Reads the count back to the host once (so does CuPy's)."""
    if bools.dtype != np.bool_ or not _servable(bools):
        return cupy.flatnonzero(bools)
    n = bools.size
    if n == 0:
        return cupy.empty(0, dtype=np.int64)
    starts = cumsum_in_place(_tile_counts(bools, n))  # starts[t]: tile t's first output slot; [-1]: total
    out = cupy.empty(int(starts[-1]), dtype=np.int64)
    if out.size:
        tiles = starts.size - 1
        _kernel("nonzero_write", "unsigned char")((tiles,), (cuda.BLOCK,), (bools, np.int64(n), starts, out))
    return out


def unique(values) -> cupy.ndarray:
    """``cupy.unique(values)`` of a 1-D integer array: its distinct values, sorted."""
    if values.dtype.kind not in "iu" or values.ndim != 1:
        return cupy.unique(values)
    if values.size <= 1:
        return copy(values)
    ordered = copy(values)
    ordered.sort()  # in place: cupy.sort copies its input with a generated kernel first
    starts = cupy.empty(ordered.size, dtype=np.bool_)
    bits, ctype = _bits(ordered)
    _launch(_kernel("run_starts", ctype), ordered.size, (bits, np.int64(ordered.size), starts))
    return take(ordered, flatnonzero(starts))


def edge_end(indptr: cupy.ndarray, frontier: cupy.ndarray) -> cupy.ndarray:
    """Inclusive prefix sum of the frontier's out-degrees (int64[k])."""
    return cumsum_in_place(indptr[frontier + 1] - indptr[frontier])
