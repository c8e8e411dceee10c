"""Where a Dask DataFrame's rows came from: the edges that :func:`gpipe.read_edges` read.

:func:`gpipe.read_edges` records, for the frame it returns, its path and the column names it
was given (``src``, ``dst``, and the weight column it read, if any); a :class:`gpipe.Graph`
built from a frame keeps the input paths found in it, and every result of the graph records
them in turn. Two things follow:

- the calls that take an edge frame (:func:`gpipe.bfs`, :func:`gpipe.sssp`,
  :meth:`gpipe.Graph.from_edges`, ...) default to the columns that ``read_edges`` was given,
  so they need not be repeated (:func:`columns`);
- :func:`gpipe.to_parquet` refuses to write a result over the edges it was computed from
  (:func:`input_paths`).

A frame is known by its Dask expression's name, and through every expression it is made of:
a frame derived from a recorded one (a column selected, a filter, a merge, ``persist()``)
still names the recorded one inside, so its input paths are found; only the frame as
``read_edges`` returned it (or ``persist()`` of it) gives its column names, since an
operation may have renamed them. Frames gpipe did not make, such as ``dd.read_parquet(path)``,
count by the ``path`` of their Parquet reads. Records are kept for the last
:data:`REMEMBERED` frames.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from dataclasses import dataclass

REMEMBERED = 4096  # frames whose origin is kept (a record is a few short strings)


@dataclass(frozen=True)
class Origin:
    """What gpipe knows of a frame: ``paths``, the edges it came from (as given, local paths
    or URLs), and, for a frame of :func:`gpipe.read_edges`, its column names (``weight``:
    the weight column it read, None when it read none) and what its Parquet footers say of
    its size (``footers``: a :class:`gpipe.io.footers.FooterSurvey`, None for a URL), and the
    ``weight_dtype`` it was given (None: the automatic choice)."""

    paths: tuple = ()
    src: str | None = None
    dst: str | None = None
    weight: str | None = None
    edges: bool = False  # read_edges' own frame: its column names apply
    footers: object = None
    weight_dtype: str | None = None


_records: "OrderedDict[str, Origin]" = OrderedDict()


def record(frame, origin: Origin):
    """Remember ``origin`` for ``frame`` (a Dask DataFrame) and return the frame."""
    name = _name(frame)
    if name is not None:
        _records[name] = origin
        _records.move_to_end(name)
        while len(_records) > REMEMBERED:
            _records.popitem(last=False)
    return frame


def edges_origin(frame) -> Origin | None:
    """The :class:`Origin` of a frame as :func:`gpipe.read_edges` returned it (or persisted),
    else None."""
    for name in _own_names(frame):
        found = _records.get(name)
        if found is not None and found.edges:
            return found
    return None


def columns(frame, src, dst, weight=None, *, default_weight=None):
    """``(src, dst, weight)``: the arguments as given, each None replaced by the column that
    :func:`gpipe.read_edges` was given (or read) for ``frame``, else by ``"src"``, ``"dst"``
    and ``default_weight``. A recorded name that is no longer a column of ``frame`` is not
    used."""
    found = edges_origin(frame)
    have = set(getattr(frame, "columns", ()))

    def pick(given, recorded, default):
        if given is not None:
            return given
        if recorded is not None and recorded in have:
            return recorded
        return default

    if found is None:
        return (src or "src", dst or "dst", weight if weight is not None else default_weight)
    return (pick(src, found.src, "src"), pick(dst, found.dst, "dst"),
            pick(weight, found.weight, default_weight))


def weight_dtype(frame, given=None):
    """``given`` when it is not None, else the ``weight_dtype`` that :func:`gpipe.read_edges`
    was given for ``frame`` (None: the automatic choice, also for frames it did not return)."""
    if given is not None:
        return given
    found = edges_origin(frame)
    return None if found is None else found.weight_dtype


def input_paths(frame) -> tuple:
    """The edge paths that ``frame``'s rows were computed from, as far as gpipe can tell: those
    recorded for it or for any frame it is made of, and the paths of Dask Parquet reads in it.
    Empty when none is known (a frame made in memory)."""
    expr = getattr(frame, "expr", None)
    if expr is None:
        return ()
    found = []
    try:
        parts = list(expr.walk())
    except Exception:  # an expression Dask cannot walk: what is recorded for the frame itself
        parts = [expr]
    for part in parts:
        for name in _names_of(part):
            origin = _records.get(name)
            if origin is not None:
                found.extend(origin.paths)
        if "path" in getattr(part, "_parameters", ()) and "parquet" in type(part).__name__.lower():
            path = part.operand("path")
            found.extend([path] if isinstance(path, (str, os.PathLike)) else list(path or ()))
    return tuple(dict.fromkeys(os.fspath(p) for p in found))


def _name(frame) -> str | None:
    expr = getattr(frame, "expr", None)
    return getattr(expr, "_name", None)


def _own_names(frame) -> list:
    expr = getattr(frame, "expr", None)
    return [] if expr is None else _names_of(expr)


def _names_of(expr) -> list:
    """The expression's name, and for a persisted frame (Dask's ``FromGraph``) the name of the
    frame it was persisted from (its keys are that frame's)."""
    names = [getattr(expr, "_name", None)]
    if "keys" in getattr(expr, "_parameters", ()):
        try:
            keys = expr.operand("keys")
            names.extend({key[0] if isinstance(key, tuple) else key for key in keys})
        except Exception:
            pass
    return [name for name in names if isinstance(name, str)]
