"""String vertex ids on the GPU: cuDF string columns (the promises of :mod:`gpipe.engine.strings_cpu`).

Ids are a cuDF string Series with a RangeIndex, sorted and distinct. Strings are mapped to
their positions by ``cudf.Index.get_indexer``, a hash join of the strings against the ids
(libcudf's ``inner_join``) whose matches are scattered into an array of -1s: one hash probe per
string, where ``searchsorted`` would compare about log2(n) strings byte by byte.
"""

from __future__ import annotations

import numpy as np


def holds(ids) -> bool:
    import cudf

    return isinstance(ids, cudf.Series)


def column(frame, name):
    """The strings of the cuDF string column ``name`` (cuDF keeps nothing else in one)."""
    return frame[name]


def concat(parts):
    import cudf

    return cudf.concat(list(parts), ignore_index=True)


def bucket(strings, n_buckets: int):
    """The bucket (CuPy int64, ``0 .. n_buckets - 1``) of each of ``strings``, from libcudf's
    MurmurHash3 of its text."""
    import cupy

    hashes = cupy.asarray(strings.hash_values().values).astype(cupy.uint64)
    return (hashes % cupy.uint64(n_buckets)).astype(cupy.int64)


def distinct(strings):
    return strings.drop_duplicates(ignore_index=True).sort_values(ignore_index=True)


def rank(ids, strings):
    """Position of each of ``strings`` in ``ids`` (a CuPy int array), -1 where absent."""
    import cudf

    return cudf.Index(ids).get_indexer(strings)


def find(ids, values) -> np.ndarray:
    """Position of each Python string of ``values`` (a query's few sources) in ``ids`` (host
    int64), -1 where absent: a binary search each (libcudf's lower_bound, in the order that
    sorted the ids), since a hash join would hash every id at every query."""
    import cudf
    import cupy

    values = list(values)
    positions = cupy.asarray(ids.searchsorted(cudf.Series(values, dtype="str"))).astype(np.int64)
    positions = cupy.minimum(positions, len(ids) - 1)
    found = ids.take(positions).to_arrow().to_pylist()
    host = positions.get()
    return np.array([p if f == v else -1 for p, f, v in zip(host.tolist(), found, values)], dtype=np.int64)


def take(ids, positions, missing=None):
    """The ids at ``positions`` (CuPy ints) with a RangeIndex; null where ``missing``."""
    import cupy

    if missing is not None:
        positions = cupy.where(missing, 0, positions)  # any valid row: the mask hides it
    taken = ids.take(positions).reset_index(drop=True)
    return taken if missing is None else taken.where(cupy.logical_not(missing))


def to_column(strings, dtype):
    """``strings`` in the result's string ``dtype``; cuDF holds every string dtype alike, but
    reports the one a column was made with (``str``, ``string``...), and a result must report
    what its meta says."""
    return strings if strings.dtype == dtype else strings.astype(dtype)


def empty(dtype):
    """No strings, in ``dtype`` where cuDF takes it (else its default string dtype)."""
    import cudf

    try:
        return cudf.Series([], dtype=dtype)
    except (TypeError, ValueError, NotImplementedError):
        return cudf.Series([], dtype="str")


def at(ids, position) -> str:
    return ids.iloc[int(position)]


def to_host(ids) -> np.ndarray:
    return ids.to_arrow().to_numpy(zero_copy_only=False)
