"""The records the owners of a traversal exchange at each step, by name.

Counts travel as float64 vectors (:class:`~gpipe.engine.owners.transport.Transport`); these named
tuples say what each entry is, and how every owner reduces the owners' vectors (the same way
on all of them, so all take the same decisions). Buckets are tuples of arrays whose dtypes
both ends know from the step.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
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


@dataclass
class OwnerSteps:
    """What one owner of a multi-owner traversal did, step by step: one record for BFS and
    SSSP. A step is a BFS level or an SSSP exchange; each list holds one entry per step, in
    order, and every owner's lists have the same length.

    Attributes
    ----------
    owner : int
    labels : list of str
        BFS: the level's direction (``"top-down"``, ``"bottom-up"``). SSSP: ``"bucket k"``
        for the k-th threshold of delta-stepping (so the number of buckets is the number of
        distinct labels), ``"bellman-ford"`` with negative weights.
    frontier : list of int
        Vertices the step worked on, all owners together: BFS, the frontier it expanded; SSSP,
        the vertices still pending after it.
    rounds : list of int
        Kernel rounds this owner ran in the step: BFS 1; SSSP the relaxation rounds of its local
        phase (on the CPU with non-negative weights, the local buckets it emptied; 0 when it had
        nothing below the window's end).
    messages : list of int
        Exchanges of the transport in the step (BFS: 2 at a level whose bottom-up message
        turned it top-down).
    bytes_sent : list of int
        Bytes of candidate arrays (or bitmap slices) this owner sent to all its peers.
    kernel_s, wait_s : list of float
        Seconds of this owner's own work (kernels, host reads, merging what arrived, packing
        what leaves) and seconds in the transport's steps (reading the step's counts, sending,
        and waiting for the peers, whose work shows up here).
    total_s : float
        Seconds from this owner's start to its finished result frame: opening the transport,
        its arrays, every step, and the frame.
    setup_s : float
        Seconds from this owner's start to its first step's: the transport and the traversal's
        arrays (SSSP's state is made in its first step). What the steps, the frame and the setup
        leave out of ``total_s`` is the loop's own bookkeeping and its end (the progress report,
        the transport's closing, the last kernels).
    frame_s : float
        Seconds of the result frame, from the last step's end (kernels finished) to the frame's.
    started_at : float
        This owner's start, as ``time.time()``: the owners of one host compare their starts.
    device_s : list of float
        Seconds the owner's stream spent on each step's queued work, from its first kernel or
        collective to its last (CUDA events); empty where the transport does not time the
        device (Dask's comms) or the loop does not record it.
    """

    owner: int
    labels: list = field(default_factory=list)
    frontier: list = field(default_factory=list)
    rounds: list = field(default_factory=list)
    messages: list = field(default_factory=list)
    bytes_sent: list = field(default_factory=list)
    kernel_s: list = field(default_factory=list)
    wait_s: list = field(default_factory=list)
    total_s: float = 0.0
    setup_s: float = 0.0
    frame_s: float = 0.0
    started_at: float = 0.0
    device_s: list = field(default_factory=list)
    steps_began: float = 0.0  # time.perf_counter() at the first step's start (begin_steps)

    @property
    def steps(self) -> int:
        return len(self.labels)

    def begin_steps(self) -> None:
        """Mark the first step's start (later calls change nothing)."""
        if not self.steps_began:
            self.steps_began = time.perf_counter()

    def close(self, started: float, started_at: float, steps_ended: float) -> None:
        """Record the owner's whole time (from ``started``, a ``time.perf_counter()``), its
        start (``time.time()``), its setup (to :meth:`begin_steps`) and its frame's time (from
        ``steps_ended``), as of now."""
        now = time.perf_counter()
        self.total_s, self.frame_s, self.started_at = now - started, now - steps_ended, started_at
        self.setup_s = max(0.0, self.steps_began - started) if self.steps_began else 0.0

    def add(self, label: str, frontier, rounds, messages, bytes_sent, kernel_s, wait_s) -> None:
        """One more step."""
        self.labels.append(label)
        self.frontier.append(int(frontier))
        self.rounds.append(int(rounds))
        self.messages.append(int(messages))
        self.bytes_sent.append(int(bytes_sent))
        self.kernel_s.append(float(kernel_s))
        self.wait_s.append(float(wait_s))

