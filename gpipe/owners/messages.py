"""The records the owners of a traversal exchange at each step, by name.

Counts travel as float64 vectors (:class:`~gpipe.owners.transport.Transport`); these named
tuples say what each entry is, and how every owner reduces the owners' vectors (the same way
on all of them, so all take the same decisions). Buckets are tuples of arrays whose dtypes
both ends know from the step.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


def vector(record) -> np.ndarray:
    """A count record as the float64 vector that travels."""
    return np.asarray(record, dtype=np.float64)


def rows(kind, matrix) -> list:
    """Every owner's record of ``kind``, in owner order, from the gathered ``[n_owners, k]``
    matrix."""
    return [kind._make(row.tolist()) for row in np.asarray(matrix)]


def total(kind, matrix):
    """The owners' records of ``kind`` (integer fields) summed, as integers."""
    return kind._make(int(x) for x in np.asarray(matrix).sum(axis=0))


class TopDownCounts(NamedTuple):
    """One owner after a top-down BFS level (every field an integer)."""

    active: float  # vertices claimed here plus vertices sent to peers
    frontier: float  # the frontier expanded (exact)
    frontier_edges: float  # its out-degree sum
    claimed: float  # owned vertices claimed by this owner's own edges
    claimed_edges: float  # their out-degree sum
    sent: float  # remote vertices queued for peers
    edges: float  # the owner's out-edges (for the graph's total)


class BottomUpCounts(NamedTuple):
    """One owner's frontier before a bottom-up BFS level."""

    frontier: float
    frontier_edges: float
    edges: float


class SsspSummary(NamedTuple):
    """One owner after an SSSP step: its pending work, the least distances it holds or sent,
    its relaxations, and a strided sample of its edges' weights (read at the first step)."""

    pending: float  # vertices still to relax or send (stale pile entries included)
    sent_min: float  # least candidate sent in this step (+inf: none)
    far_min: float  # least distance on the far pile (+inf: none)
    relaxed: float  # vertices relaxed since the last step
    repeated: float  # of those, relaxed before in this traversal
    sample_edges: float = 0.0  # the owner's out-edges
    sample_sum: float = 0.0  # sum of the sampled weights
    sample_size: float = 0.0  # weights sampled
    sample_max: float = 0.0  # the largest sampled weight
    sample_crossing: float = 0.0  # sampled edges that lead to another owner's vertex


def bfs_bucket(index_dtype) -> tuple:
    """Dtypes of a BFS candidate bucket: targets (global ids), then their parents."""
    return (np.dtype(index_dtype), np.dtype(index_dtype))


SSSP_BUCKET = (np.dtype(np.int64), np.dtype(np.float64), np.dtype(np.int64))  # targets, distances, parents
