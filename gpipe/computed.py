"""A Dask DataFrame over frames that this process has computed already (no Dask client).

Without a client, ``Graph.bfs`` runs the traversal in-process and the result partitions exist
before the call returns; only the Dask DataFrame around them is lazy. ``dd.from_delayed``
would make every ``.compute()`` optimize a second, delayed graph inside the first, and every
``len()`` run tasks to count rows that are already counted. ``Computed`` is the expression
for what these partitions are: frames in memory, named by a random token (Dask never hashes
their rows to name them), one task each that hands its frame over, and known lengths, so that
``len()`` is a number and not a computation.

Dask's expression classes are not public API; where they are missing, :func:`computed_frame`
falls back on ``dd.from_delayed``.
"""

from __future__ import annotations

import functools
import uuid


def computed_frame(frames: list, meta):
    """A Dask DataFrame with ``frames`` as its partitions, in order, and ``meta`` as its meta."""
    try:
        expr = _computed_class()
        from dask.dataframe.dask_expr._collection import new_collection
    except ImportError:  # a Dask without (these) expression classes
        import dask
        import dask.dataframe as dd

        return dd.from_delayed([dask.delayed(f) for f in frames], meta=meta, verify_meta=False)
    return new_collection(expr(list(frames), meta, uuid.uuid4().hex))


@functools.cache
def _computed_class():
    """``Computed``, defined at first use: importing Dask's DataFrame takes a second."""
    from dask._task_spec import DataNode
    from dask.dataframe.dask_expr._expr import Lengths, Literal, PartitionsFiltered
    from dask.dataframe.dask_expr._reductions import Len
    from dask.dataframe.dask_expr.io import BlockwiseIO
    from dask.tokenize import _tokenize_deterministic

    class Computed(PartitionsFiltered, BlockwiseIO):
        """Partitions that are frames in this process's memory, with their lengths known."""

        _parameters = ["frames", "meta", "token", "_partitions"]
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
                return Literal(sum(len(self.frames[i]) for i in self._partitions))
            if isinstance(parent, Lengths):
                return Literal(tuple(len(self.frames[i]) for i in self._partitions))
            return super()._simplify_up(parent, dependents)

    return Computed
