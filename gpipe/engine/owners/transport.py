"""What an owner of a multi-owner traversal needs from the wire between owners.

The BFS and SSSP loops (:mod:`gpipe.engine.owners.bfs`, :mod:`gpipe.engine.owners.sssp`) talk to their peers
only through a :class:`Transport`, in *steps*: every owner calls the same method with the same
tag at the same point of its loop. Two implementations sit side by side:

- :class:`gpipe.engine.owners.dask_comms.DaskTransport`: one message per peer and step over Dask's
  worker-to-worker comms (:mod:`gpipe.engine.owners.peers`). CPU owners, GPU owners that share a
  device, and GPU owners where Dask config ``gpipe.transport`` is ``dask``.
- :class:`gpipe.engine.owners.nccl.NcclTransport`: NCCL collectives and grouped send/recv on the
  owners' own stream, over a communicator made when the graph was built
  (:mod:`gpipe.engine.owners.nccl`). GPU owners, one per device (the default, ``auto``).

:func:`gpipe.engine.owners.connect.open_transport` picks one for a traversal.

Counts travel as one float64 vector per owner (integers below 2**53 are exact): every owner
gets every owner's vector, in owner order, and reduces them the same way, so all owners take
the same decisions. Payloads travel as *buckets*: per peer, None or a tuple of arrays of the
owner's array module whose dtypes every owner knows from the step (see
:mod:`gpipe.engine.owners.messages`).
"""

from __future__ import annotations

import abc

import numpy as np


class TransportLost(Exception):
    """An owner's transport is gone (its NCCL communicator was aborted after a failure): the
    driver makes a new one and runs the traversal again."""


class Transport(abc.ABC):
    """One owner's end of the wire between the owners of one traversal.

    Attributes: ``owner`` (this owner's index), ``n_owners``, ``key`` (the traversal's name,
    for progress events and messages), ``peers`` (the other owners' indices, ascending).
    """

    owner: int
    n_owners: int
    key: str

    @property
    def peers(self) -> list:
        return [q for q in range(self.n_owners) if q != self.owner]

    @abc.abstractmethod
    def exchange(self, tag, counts, buckets: list, dtypes: tuple) -> tuple:
        """Send every peer ``q`` its ``buckets[q]`` (None, or a tuple of arrays of ``dtypes``,
        all of one length) along with this owner's ``counts``.

        Returns ``(counts, received)``: a host float64 array ``[n_owners, len(counts)]`` of
        every owner's counts in owner order (this owner's row included), and per owner what it
        sent here (None for this owner and for empty buckets), tuples of arrays of ``dtypes``.
        The arrays sent may be reused by the caller once this returns.
        """

    @abc.abstractmethod
    def allgather(self, tag, counts, piece, out) -> np.ndarray:
        """Every owner's ``piece`` (arrays of one dtype, at most ``out.size // n_owners`` long)
        written into ``out`` at ``q * (out.size // n_owners)`` for owner ``q``, and every
        owner's ``counts`` as in :meth:`exchange`. ``out`` is an array of the owner's array
        module; the rest of each owner's slot is zeroed."""

    def exchange_counters(self, tag, counters, lengths_at: int, buckets_for, dtypes) -> tuple:
        """:meth:`exchange` of counts that are still on the device: every owner's ``counters``
        (an int64 array of the owner's array module, as its kernels left it), and per peer a
        bucket made from this owner's counters once they are read.

        ``buckets_for(row)`` makes the buckets (as :meth:`exchange` takes them) from ``row``,
        this owner's counters on the host; ``row[lengths_at + q]`` must be the length of
        owner ``q``'s bucket. Returns ``(rows, received)``: every owner's counters, a host int64
        array ``[n_owners, counters.size]`` in owner order, and what each peer sent here.
        The step reads counts from the device once: here, this owner's counters, then the
        exchange; over NCCL (which overrides this), only the gathered counters.
        """
        row = np.asarray(self.read(counters), dtype=np.int64)
        matrix, received = self.exchange(tag, row.astype(np.float64), buckets_for(row), dtypes)
        return matrix.astype(np.int64), received

    # --- fixed-size steps (gpipe.engine.owners.bfs_levels): no length is learned before them ---

    def gather_slices(self, tag, piece, out) -> None:
        """Every owner's ``piece`` (``out.size // n_owners`` words on every owner) written into
        ``out`` at ``q * (out.size // n_owners)`` for owner ``q``. Where the transport queues
        its steps on the owner's stream (NCCL, which overrides this), returns once queued: what
        the owner queues after it reads ``out`` complete. Here: :meth:`allgather` with no
        counts to speak of."""
        self.allgather(tag, np.zeros(1), piece, out)

    @abc.abstractmethod
    def swap_slices(self, tag, send, recv) -> None:
        """Fixed-size all-to-all: slot ``q`` of ``send`` (``send.size // n_owners`` words) to
        owner ``q``, and what owner ``q`` sent here into slot ``q`` of ``recv`` (this owner's
        slot of ``recv`` is left as it is). Queued like :meth:`gather_slices`; ``send`` may be
        overwritten by work queued after it."""

    def gather_counters(self, tag, counters) -> np.ndarray:
        """Every owner's ``counters`` (an int64 array of the owner's array module, the same
        length on every owner, read once the work queued before has run), as a host int64
        array ``[n_owners, counters.size]`` in owner order: the one host read of a step. Here:
        this owner's read, then :meth:`exchange` of it with no buckets (NCCL overrides this)."""
        row = np.asarray(self.read(counters), dtype=np.int64)
        matrix, _ = self.exchange(tag, row.astype(np.float64), [None] * self.n_owners, ())
        return matrix.astype(np.int64)

    def marker(self):
        """A timestamp of the owner's stream at this point of its queued work, or None where
        the transport does not time the device."""
        return None

    def elapsed(self, start, end) -> float:
        """Seconds between two :meth:`marker` timestamps, once the work between them has run."""
        return 0.0

    @abc.abstractmethod
    def read(self, array) -> np.ndarray:
        """A host copy of ``array`` (an array of the owner's array module), once the kernels
        that write it have run."""

    def payload(self, arrays: tuple) -> tuple:
        """``arrays`` (views of buffers the caller reuses at its next step) made fit to be a
        bucket: the same arrays where the transport sends them before :meth:`exchange`
        returns, copies where the send may still be under way."""
        return arrays


def stack_counts(rows) -> np.ndarray:
    """Owners' count vectors (owner order) as one host float64 array ``[n_owners, k]``."""
    return np.vstack([np.asarray(r, dtype=np.float64) for r in rows])
