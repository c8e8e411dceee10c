"""Dask DataFrames over result partitions that exist already, with their lengths known.

When ``Graph.bfs`` returns, the traversal has run and every result partition exists: in this
process without a client, on the owners' workers with one. Only the Dask DataFrame around
them is lazy. Two things would make it cost more than it holds:

* ``dd.from_delayed`` over in-memory frames would make every ``.compute()`` optimize a second,
  delayed graph inside the first, and Dask names in-memory frames by hashing their rows.
* ``len()`` would run a reduction over the partitions, through the scheduler on a cluster
  (tens of milliseconds there, more than a whole BFS of a mid-sized graph on one GPU), to
  count rows whose number the graph knows: one row per vertex of the edge list.

So the collections made here answer ``len()`` from the lengths they were given, asking no
scheduler, for as long as they are the collection as made (a column assigned in place keeps
the length but not the expression: then Dask counts). In-process partitions are also a Dask
expression of their own, :class:`Computed`: named by a random token, one task each that hands
its frame over, and lengths that Dask's planner uses wherever it needs ``Len``. Partitions on
the workers are Dask's own ``from_delayed`` expression, because a cluster's scheduler
unpickles expressions and must not need gpipe for it. Every other operation is plain Dask.

Dask's expression classes are not public API; where they are missing, the functions fall back
on a plain ``dd.from_delayed`` collection, whose ``len()`` computes.
"""

from __future__ import annotations

import functools
import uuid


def computed_frame(frames: list, meta, lengths: list | None = None):
    """A Dask DataFrame with ``frames`` (in this process) as its partitions, in order."""
    if lengths is None:
        lengths = [len(f) for f in frames]
    try:
        expr = _computed_class()(list(frames), meta, uuid.uuid4().hex, list(lengths))
    except ImportError:  # a Dask without (these) expression classes
        import dask

        return _from_delayed([dask.delayed(f) for f in frames], meta, lengths)
    return _with_lengths(expr, lengths)


def frames_of(expr) -> list | None:
    """The in-memory frames that ``expr``, an expression of :func:`computed_frame`'s, hands
    over, in order; None for any other expression."""
    try:
        computed = _computed_class()
    except ImportError:
        return None
    if not isinstance(expr, computed):
        return None
    return [expr.frames[i] for i in expr._partitions]


def worker_frame(futures: list, meta, lengths: list):
    """A Dask DataFrame whose partitions are the frames behind ``futures`` (on the workers), in
    order; ``lengths[i]``, the rows of partition ``i``, is trusted as given.

    The expression is ``dd.from_delayed``'s, given a random token: the futures' keys are
    unique to this query already, and Dask would otherwise tokenize the meta frame to name it
    (about 2 ms of a query on the H100 machine's client for a cuDF meta).
    """
    try:
        from dask.dataframe.dask_expr._expr import DelayedsExpr
        from dask.dataframe.dask_expr.io._delayed import FromDelayed
    except ImportError:
        return _from_delayed(futures, meta, lengths)
    expr = FromDelayed(DelayedsExpr(*futures), meta, None, False, None, None,
                       _determ_token=uuid.uuid4().hex)
    return _with_lengths(expr, lengths)


def _from_delayed(parts, meta, lengths):
    import dask.dataframe as dd

    frame = dd.from_delayed(parts, meta=meta, verify_meta=False)
    try:
        return _with_lengths(frame.expr, lengths)
    except ImportError:
        return frame


def _with_lengths(expr, lengths):
    """``expr``'s usual Dask collection, answering ``len()`` from ``lengths``."""
    from dask.dataframe.dask_expr._collection import new_collection

    return _known_length_type(type(new_collection(expr)))(expr, lengths)


@functools.cache
def _known_length_type(base):
    """A subclass of the collection type ``base`` (pandas' or cuDF's DataFrame) whose ``len()``
    is the sum of the lengths it was made with, while its expression is the one it was made with.

    It lives on this client only: Dask pickles a collection as its expression.
    """

    class KnownLength(base):
        def __init__(self, expr, lengths):
            super().__init__(expr)
            object.__setattr__(self, "_gpipe_lengths", (expr, sum(lengths)))

        def __len__(self):
            made_of, length = object.__getattribute__(self, "_gpipe_lengths")
            if self.expr is made_of:
                return length
            return super().__len__()

    KnownLength.__name__ = base.__name__
    KnownLength.__qualname__ = base.__qualname__
    return KnownLength


@functools.cache
def _computed_class():
    """``Computed``, defined at first use: importing Dask's DataFrame takes a second."""
    from dask._task_spec import DataNode
    from dask.dataframe.dask_expr._expr import Lengths, Literal, PartitionsFiltered
    from dask.dataframe.dask_expr._reductions import Len
    from dask._expr import Expr
    from dask.dataframe.dask_expr.io import BlockwiseIO
    from dask.dataframe.dask_expr.io.io import FromMap
    from dask.tokenize import _tokenize_deterministic
    from toolz import identity

    class Computed(PartitionsFiltered, BlockwiseIO):
        """Partitions that are frames in this process's memory, with their lengths known."""

        _parameters = ["frames", "meta", "token", "lengths", "_partitions"]
        _defaults = {"_partitions": None}

        def __dask_tokenize__(self):
            # The token stands for the frames: tokenizing them would hash every row.
            return _tokenize_deterministic(type(self).__name__, self.token, self.operand("_partitions"))

        @property
        def _meta(self):
            return self.operand("meta")

        def _divisions(self):
            return (None,) * (len(self.frames) + 1)

        def _filtered_task(self, name, index):
            return DataNode(name, self.frames[index])

        def _simplify_up(self, parent, dependents):
            if isinstance(parent, Len):
                return Literal(sum(self.lengths[i] for i in self._partitions))
            if isinstance(parent, Lengths):
                return Literal(tuple(self.lengths[i] for i in self._partitions))
            return super()._simplify_up(parent, dependents)

        def __reduce__(self):
            # A client started after the frames were made sends this expression to its
            # scheduler, which must not need gpipe to unpickle it: there it is Dask's own
            # FromMap of the same name (its keys are the ones this client asks for), handing
            # each frame over as it is.
            token = self.deterministic_token
            label = self._name[:-len(token) - 1]
            return Expr._reconstruct, (FromMap, identity, [list(self.frames)], (), {}, self._meta,
                                       False, None, label, self.operand("_partitions"), token, {})

    return Computed
