"""String vertex ids on the CPU: Arrow arrays, hashed by ``pyarrow.compute``.

The same functions, with the same promises, are in :mod:`gpipe.engine.strings_gpu` (cuDF); a backend's
``strings`` is one of the two (:mod:`gpipe.engine.backend`). A graph's *ids* are its sorted distinct
strings; an id's global vertex id is its position there. Ids are ``large_string`` arrays
(pandas' own Arrow strings are, so a ``str``/``string[pyarrow]`` column passes without a copy).
Mapping strings to positions is a hash lookup (``index_in``), not a binary search: a string
comparison costs more than a hash probe, and the lookup runs once per edge end.
"""

from __future__ import annotations

import bisect

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from gpipe.errors import InputError

STRING = pa.large_string()


def holds(ids) -> bool:
    """Whether ``ids`` are string ids made here (not an integer array)."""
    return isinstance(ids, (pa.Array, pa.ChunkedArray))


def column(frame, name):
    """The strings of column ``name`` of a pandas ``frame`` (object, ``string``, ``str`` or
    Arrow strings); InputError naming the column and a value when one is not a string."""
    series = frame[name]
    try:
        values = pa.array(series, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        values = None
    if values is None or not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)
                              or pa.types.is_string_view(values.type)):
        bad = next((v for v in series if not isinstance(v, str)), None)  # the error's path only
        raise InputError(f"vertex id column {name!r} holds a value that is not a string ({bad!r}); "
                         "ids are strings in both columns or integers in both")
    return values if values.type == STRING else values.cast(STRING)


def concat(parts):
    """One string array of ``parts`` end to end."""
    chunks = [c for part in parts for c in (part.chunks if isinstance(part, pa.ChunkedArray) else [part])]
    return pa.concat_arrays(chunks) if chunks else pa.array([], type=STRING)


def bucket(strings, n_buckets: int) -> np.ndarray:
    """The bucket (int64, ``0 .. n_buckets - 1``) of each of ``strings``, from a hash of its
    text (pandas' SipHash): the same string gets the same bucket in every partition."""
    hashes = pd.util.hash_array(strings.to_numpy(zero_copy_only=False), categorize=False)
    return (hashes % np.uint64(n_buckets)).astype(np.int64)


def distinct(strings):
    """The sorted distinct ``strings``: a graph's ids."""
    unique = pc.unique(strings)
    return unique.take(pc.array_sort_indices(unique))


def rank(ids, strings) -> np.ndarray:
    """Position of each of ``strings`` in ``ids`` (int32), -1 where absent."""
    return _positions(pc.index_in(strings, value_set=ids))


def find(ids, values) -> np.ndarray:
    """Position of each Python string of ``values`` (a query's few sources) in ``ids`` (host
    int64), -1 where absent: a binary search each, since hashing every id would cost a query
    more than its traversal. Arrow sorts strings by their UTF-8 bytes, which is the order of
    Python's ``<`` on code points."""
    positions = [bisect.bisect_left(ids, value, key=pa.StringScalar.as_py) for value in values]
    return np.array([p if p < len(ids) and ids[p].as_py() == value else -1
                     for p, value in zip(positions, values)], dtype=np.int64)


def _positions(found) -> np.ndarray:
    return found.fill_null(-1).to_numpy()


def take(ids, positions, missing=None):
    """The ids at ``positions`` (int array); null where ``missing`` (bool array) is True."""
    if missing is not None:
        positions = pa.array(positions, mask=missing)
    return ids.take(positions)


def to_column(strings, dtype):
    """``strings`` as a pandas Series of ``dtype`` (object: Python strings and None)."""
    if dtype == np.dtype(object):
        return pd.Series(strings.to_numpy(zero_copy_only=False), dtype=object, copy=False)
    if isinstance(dtype, pd.ArrowDtype):
        strings = strings.cast(dtype.pyarrow_dtype)
    return pd.Series(dtype.__from_arrow__(strings), copy=False)


def empty(dtype):
    """The zero-row Series of ``dtype``."""
    return pd.Series([], dtype=dtype)


def at(ids, position) -> str:
    return ids[int(position)].as_py()


def to_host(ids) -> np.ndarray:
    """``ids`` as a NumPy array of Python strings."""
    return ids.to_numpy(zero_copy_only=False)
