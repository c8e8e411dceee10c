"""The width an owner stores its edge weights in: float32 or float64.

A weighted graph's CSR holds one weight per stored edge, 8 bytes as float64 and 4 as float32,
so the width decides a third of a weighted CSR's bytes (int32 ids: 4 + 8 against 4 + 4) and
what the sizing counts (:mod:`gpipe.partitioning.sizing`). ``weight_dtype`` chooses it:

- ``"float64"``: every weight as float64 (what gpipe stored before the choice existed).
- ``"float32"``: every weight as float32, rounded to the nearest float32 where it has more
  digits (the caller asked for it); a weight beyond float32's range (about 3.4e38), which
  would become infinite, raises :class:`gpipe.InputError` naming the column and the value.
- ``None`` or ``"auto"``: float32 where it holds every weight exactly: a float32 (or narrower
  float) column, or an integer column whose weights all lie strictly between -2**24 and 2**24;
  else float64.

Distances are float64 whatever the width: every kernel widens a float32 weight to float64
before adding it, so a float32 graph's distances are those of its weights as float64 values,
summed in float64 (exactly a float64 graph's where the weights are exact in float32).
"""

from __future__ import annotations

import numpy as np

from gpipe.errors import InputError
from gpipe.io import validate

# Integers of magnitude below this are exact in float32 (24 bits of significand).
EXACT_INTEGERS = 2**24


def narrowest(asked: str | None, column_dtype) -> np.dtype:
    """The narrowest width :func:`choose` can give a weight column of ``column_dtype`` before
    its values are seen (what the Parquet footers' early sizing counts: it refuses only what
    no choice would fit). ``asked``: :func:`gpipe.io.validate.weight_dtype`'s answer."""
    if asked is not None:
        return np.dtype(asked)
    kind = validate.numpy_dtype(column_dtype)
    return np.dtype(np.float64) if kind.kind == "f" and kind.itemsize > 4 else np.dtype(np.float32)


def choose(asked: str | None, column_dtype, low: float, high: float, column: str) -> np.dtype:
    """The width a graph stores its weights in (float32 or float64).

    Parameters
    ----------
    asked : str or None
        :func:`gpipe.io.validate.weight_dtype`'s answer: ``"float32"``, ``"float64"``, or None
        for the automatic choice.
    column_dtype
        The weight column's dtype (NumPy, pandas extension or Arrow).
    low, high : float
        The least and the largest weight of the whole edge list (the survey's).
    column : str
        The weight column's name, for the error.

    Raises
    ------
    InputError
        ``asked`` is ``"float32"`` and ``low`` or ``high`` lies beyond float32's range.
    """
    if asked == "float64":
        return np.dtype(np.float64)
    if asked == "float32":
        for value in (low, high):
            with np.errstate(over="ignore"):
                overflows = np.isinf(np.float32(value))
            if overflows:
                raise InputError(
                    f"weight column {column!r} holds {value!r}, beyond float32's range "
                    f"(largest {float(np.finfo(np.float32).max):.7g}): weight_dtype='float32' "
                    "cannot store it; use 'float64' or 'auto'")
        return np.dtype(np.float32)
    kind = validate.numpy_dtype(column_dtype)
    if kind.kind == "f":
        return np.dtype(np.float32) if kind.itemsize <= 4 else np.dtype(np.float64)
    if kind.kind in "iu" and max(abs(low), abs(high)) < EXACT_INTEGERS:
        return np.dtype(np.float32)
    return np.dtype(np.float64)
