"""Edge frames that this process holds already, taken as they are, without Dask's per-row work.

A pandas or cuDF DataFrame handed to gpipe, or a Dask DataFrame made from one with
``dd.from_pandas``, is in memory: no task is needed for its rows to exist. Dask would still
cost seconds to hand them over. ``dd.from_pandas`` works out partition bounds that never split
an index value, by listing the whole index in Python, whenever it sorts (the default) or the
index is sorted already, as a RangeIndex is: 2.7 s of a 3.2 s build of kron20's 16 M rows,
and more for cuDF, whose index goes to the host for it. Naming a plain frame hashes every row
(cuDF: on the host). So:

* :func:`collection` wraps a plain frame as a Dask DataFrame of one partition named by a
  random token (:func:`gpipe.engine.computed.computed_frame`): nothing is sorted or hashed, and its
  length is known.
* :func:`held_frames` recognizes such a collection, or a ``dd.from_pandas`` one, with or
  without a selection of columns, and hands back its frames in row order, computing nothing.
  A graph depends on the order of its edges (a CSR row keeps it, and a traversal's parents
  follow it), not on where partitions start, so a ``dd.from_pandas`` frame comes back whole,
  sorted by its index where Dask would sort it.
* :func:`row_slices` cuts frames into about equal runs of rows, to spread over workers.

Every other Dask DataFrame (a Parquet read, a persisted or delayed frame) is none of these:
its partitions are computed as Dask's.
"""

from __future__ import annotations


def collection(frame):
    """``frame``, a pandas or cuDF DataFrame, as a one-partition Dask DataFrame of known length.

    pandas object columns of strings become pyarrow strings where Dask's config says so, as
    ``dd.from_pandas`` would make them (cuDF's strings are Arrow's already).
    """
    from dask.dataframe.utils import pyarrow_strings_enabled

    from gpipe.engine import backend
    from gpipe.engine.computed import computed_frame

    if backend.name_of_frame(frame) == backend.CPU and pyarrow_strings_enabled():
        from dask.dataframe._pyarrow import to_pyarrow_string

        frame = to_pyarrow_string(frame)
    return computed_frame([frame], frame.iloc[:0], [len(frame)])


def held_frames(frame) -> list | None:
    """The frames behind the Dask DataFrame ``frame``, in row order, when this process holds
    them (see the module's docstring); None when its partitions must be computed."""
    try:
        from dask.dataframe.dask_expr._expr import Projection
        from dask.dataframe.dask_expr.io.io import FromPandas

        from gpipe.engine.computed import frames_of
    except ImportError:  # a Dask without these expression classes
        return None
    expr = getattr(frame, "expr", None)
    columns = None
    while isinstance(expr, Projection):
        if columns is None:
            columns = expr.operand("columns")
            if not isinstance(columns, list):  # a Series
                return None
        expr = expr.frame
    if type(expr) is FromPandas:  # not a subclass: FromPandasDivisions may leave rows out
        frames = _from_pandas_frames(expr)
    else:
        frames = frames_of(expr)
    if frames is None or columns is None:
        return frames
    return [f if list(f.columns) == columns else f[columns] for f in frames]


def _from_pandas_frames(expr) -> list | None:
    """The frame of a ``dd.from_pandas`` expression as its partitions would hand it over:
    sorted by its index where Dask sorts it, its columns selected, strings converted."""
    if expr._filtered or expr._series:
        return None
    frame = expr.frame._data  # Dask's own sort_index, where it sorts
    if expr.operand("columns") is not None:
        frame = frame[expr.columns]
    if expr.pyarrow_strings_enabled:
        from dask.dataframe._pyarrow import to_pyarrow_string

        frame = to_pyarrow_string(frame)
    return [frame]


def row_slices(frames: list, count: int) -> list:
    """``frames`` cut into ``count`` runs of about equal rows (fewer when there are fewer
    rows), in order; each a slice of one frame, without a copy where the frame library can."""
    rows = sum(len(f) for f in frames)
    count = max(1, min(count, rows))
    bounds = [rows * i // count for i in range(count + 1)]
    slices, start = [], 0
    for f in frames:
        stop = start + len(f)
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            lo, hi = max(lo, start), min(hi, stop)
            if lo < hi:
                slices.append(f.iloc[lo - start:hi - start])
        start = stop
    return slices or frames[:1]
