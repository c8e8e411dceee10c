"""Checks at the door: every input is validated here, so the rest of gpipe can trust it.

Each failure raises :class:`gpipe.InputError` with a message that names the column, value or
vertex at fault. Checks that need the data (NaN weights, empty lists) run per partition in
:mod:`gpipe.partitioning.build`, through :func:`check_partition`.
"""

from __future__ import annotations

import numbers

import numpy as np

from gpipe.engine import in_memory
from gpipe.engine.backend import is_string_dtype
from gpipe.errors import InputError, plain


def edge_frame(edges, src: str, dst: str, weight: str | None):
    """Return ``edges`` as a Dask DataFrame of the needed columns, or raise InputError.

    A pandas or cuDF DataFrame is accepted too and wrapped in a one-partition Dask DataFrame.
    Ids must be integer columns, or string columns (both the one or both the other); the
    weight, if named, a numeric (non-boolean) column.
    """
    import dask.dataframe as dd

    if not isinstance(edges, dd.DataFrame):
        if hasattr(edges, "columns") and hasattr(edges, "dtypes"):
            edges = in_memory.collection(edges)
        else:
            raise InputError(f"edges must be a Dask DataFrame, not {type(edges).__name__}")
    columns = [src, dst] + ([weight] if weight is not None else [])
    for role, name in zip(("src", "dst", "weight"), columns):
        if name not in edges.columns:
            message = f"edge column {name!r} ({role}) not found; the edges have columns {list(edges.columns)}"
            if role == "weight":  # read_edges reads only the columns it is given (and 'weight')
                message += f"; to read it from Parquet, pass gpipe.read_edges(..., weight={name!r})"
            raise InputError(message)
    if len(set(columns)) != len(columns):
        raise InputError(f"src, dst and weight must be different columns, got {columns}")
    for name in (src, dst):
        dtype = edges.dtypes[name]
        if not (_is_integer(dtype) or is_string_dtype(dtype)):
            raise InputError(f"vertex ids must be integers or strings, but column {name!r} has dtype {dtype}")
    if is_string_dtype(edges.dtypes[src]) != is_string_dtype(edges.dtypes[dst]):
        raise InputError(
            f"vertex id columns {src!r} ({edges.dtypes[src]}) and {dst!r} ({edges.dtypes[dst]}) must "
            "both hold strings or both integers")
    if weight is not None:
        dtype = edges.dtypes[weight]
        if not _is_numeric(dtype):
            raise InputError(f"weights must be numbers, but column {weight!r} has dtype {dtype}")
    return edges[columns]


def numpy_dtype(dtype) -> np.dtype:
    """The NumPy dtype behind a NumPy, pandas extension (``Int64``) or Arrow dtype."""
    return np.dtype(getattr(dtype, "numpy_dtype", dtype))


def _is_integer(dtype) -> bool:
    try:
        return np.dtype(dtype).kind in "iu"
    except TypeError:  # pandas extension dtypes (Int64, ...) and cuDF's own
        return getattr(dtype, "kind", "") in "iu" and not _is_bool(dtype)


def _is_numeric(dtype) -> bool:
    try:
        return np.dtype(dtype).kind in "iuf"
    except TypeError:
        return getattr(dtype, "kind", "") in "iuf"


def _is_bool(dtype) -> bool:
    return str(dtype).lower() in ("bool", "boolean")


def sources(source, strings: bool = False, what: str = "source") -> np.ndarray:
    """One vertex id or a list of them, as a non-empty object array of Python ints, or of
    Python strings when the graph's ids are ``strings``. ``what`` names them in errors
    (``"source"``, ``"target"``)."""
    if isinstance(source, (str, bytes)) or np.ndim(source) == 0:
        values = [source]
    elif isinstance(source, (list, tuple)):
        values = list(source)  # as given: NumPy would make [1, "a"] two strings
    else:
        values = list(np.asarray(source).ravel())
    if not values:
        raise InputError(f"{what} is empty: give at least one vertex id")
    for value in values:
        if strings and not isinstance(value, str):
            raise InputError(f"{what} {plain(value)!r} is not a string, but the graph's vertex ids are strings")
        if not strings and isinstance(value, str):
            raise InputError(f"{what} {plain(value)!r} is a string, but the graph's vertex ids are integers")
        if not strings and (isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral)):
            raise InputError(f"{what} {plain(value)!r} is not an integer vertex id")
    return np.array([str(v) if strings else int(v) for v in values], dtype=object)


# The deepest level a depth limit can name: distances are int32 on every backend (the GPU
# kernels take the limit as an int32 too), so no BFS goes deeper; a limit at or beyond a graph's
# deepest level changes nothing, whatever its size below this.
MAX_DEPTH_LIMIT = 2**31 - 1


def depth_limit(limit) -> int | None:
    """``limit`` as an int, or None for no limit; InputError for anything else.

    The one check of a BFS depth limit, made at every door (:meth:`gpipe.Graph.bfs`,
    :func:`gpipe.bfs`, the command line and pipelines before they read anything) so that a
    limit means the same, and fails the same, with one owner or several.

    Parameters
    ----------
    limit : int or None
        An integer (Python or NumPy, not a bool) from 0 to :data:`MAX_DEPTH_LIMIT`.

    Raises
    ------
    InputError
        For a negative or larger integer, a bool, a float or anything else; the message is
        the same for every caller.

    Examples
    --------
    >>> depth_limit(3)
    3
    >>> depth_limit(2**63)
    Traceback (most recent call last):
        ...
    gpipe.errors.InputError: depth_limit must be None or an integer from 0 to 2147483647, not 9223372036854775808
    """
    if limit is None:
        return None
    if (isinstance(limit, (bool, np.bool_)) or not isinstance(limit, numbers.Integral)
            or not 0 <= limit <= MAX_DEPTH_LIMIT):
        raise InputError(f"depth_limit must be None or an integer from 0 to {MAX_DEPTH_LIMIT}, "
                         f"not {limit!r}")
    return int(limit)


def max_distance(limit) -> float | None:
    """``None`` or a non-negative, non-NaN float (``inf`` allowed: no limit)."""
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, numbers.Real) or not float(limit) >= 0.0:
        raise InputError(f"max_distance must be None or a non-negative number, not {limit!r}")
    return float(limit)


WEIGHT_WIDTHS = ("float32", "float64")  # what a graph may store its weights in


def weight_dtype(value) -> str | None:
    """``value`` as ``"float32"`` or ``"float64"``, or None for the automatic choice
    (:mod:`gpipe.partitioning.weights`); InputError for anything else.

    Takes None or ``"auto"``, and ``"float32"``/``"float64"`` or the NumPy dtypes of those names.

    >>> weight_dtype("auto") is None, weight_dtype("float32")
    (True, 'float32')
    """
    if value is None or (isinstance(value, str) and value == "auto"):
        return None
    try:
        name = None if isinstance(value, (bool, np.bool_)) else np.dtype(value).name
    except TypeError:
        name = None
    if name not in WEIGHT_WIDTHS:
        raise InputError(f"weight_dtype must be None, 'auto', 'float32' or 'float64', not {value!r}")
    return name


def flag(value, name: str) -> bool:
    """``value`` if it is a bool; InputError naming the option otherwise."""
    if not isinstance(value, (bool, np.bool_)):
        raise InputError(f"{name} must be True or False, not {value!r}")
    return bool(value)


def check_partition(xp, src, dst, weights, src_name, dst_name, weight_name):
    """Data checks on one partition's arrays: finite weights. Returns the weights' range
    ``(lowest, highest)`` as floats, or None without weights or rows.

    The range comes from a min and a max (reductions CuPy ships compiled, so a first check on
    a fresh GPU compiles nothing); both propagate NaN, -inf shows in the min and +inf in the
    max, so the weights are finite exactly when both ends are. Only a failing check looks for
    the first bad value, to name it.
    """
    if weights is None or not weights.size:
        return None
    low, high = float(weights.min()), float(weights.max())
    if not (np.isfinite(low) and np.isfinite(high)):
        bad = weights[~xp.isfinite(weights)][:1]
        raise InputError(f"weight column {weight_name!r} holds a non-finite value ({float(bad[0])})")
    return low, high
