"""The owners' transport over Dask's worker-to-worker comms (:mod:`gpipe.engine.owners.peers`).

Each step is one message per peer holding this owner's counts and that peer's bucket; the
worker's event loop delivers it while the owner goes on to wait for its own. Device arrays
travel as device arrays where the workers talk UCX (``Channel.device_messages``), else the
owner stages each on the host in one copy (Dask's serialization of a device array costs more
per message than that copy).
"""

from __future__ import annotations

import functools

import numpy as np

from gpipe.engine import backend as backends
from gpipe.engine.owners.transport import Transport, stack_counts


class DaskTransport(Transport):
    """:class:`~gpipe.engine.owners.transport.Transport` over a :class:`gpipe.engine.owners.peers.Channel`
    (or anything with its ``owner``, ``exchange``, ``peers``: the tests' in-process one).

    ``n_owners`` is the channel's; ``backend_name`` decides how payloads are copied.
    """

    def __init__(self, channel, n_owners: int, backend_name: str):
        self.channel = channel
        self.owner = channel.owner
        self.n_owners = n_owners
        self.key = getattr(channel, "key", "in-process")
        be = backends.get(backend_name)
        device = bool(getattr(channel, "device_messages", False)) and be.name == backends.GPU
        self._copy = functools.partial(be.message_copy, device=device)
        self._xp = be.xp
        self._to_host = be.to_host

    def read(self, array):
        return self._to_host(array)

    def payload(self, arrays: tuple) -> tuple:
        return tuple(self._copy(a) for a in arrays)

    def exchange(self, tag, counts, buckets, dtypes):
        counts = np.asarray(counts, dtype=np.float64)
        received = self.channel.exchange(tag, [(counts, b) for b in buckets])
        rows = [c for c, _ in received]
        rows.insert(self.owner, counts)
        payloads = [b for _, b in received]
        payloads.insert(self.owner, None)
        return stack_counts(rows), payloads

    def allgather(self, tag, counts, piece, out):
        counts = np.asarray(counts, dtype=np.float64)
        received = self.channel.exchange(tag, [(counts, self._copy(piece))] * self.n_owners)
        rows = [c for c, _ in received]
        rows.insert(self.owner, counts)
        pieces = [p for _, p in received]
        pieces.insert(self.owner, piece)
        slot = out.size // self.n_owners
        for q, words in enumerate(pieces):
            out[q * slot:q * slot + words.size] = self._xp.asarray(words)
            out[q * slot + words.size:(q + 1) * slot] = 0
        return stack_counts(rows)

    def swap_slices(self, tag, send, recv):
        slot = send.size // self.n_owners
        buckets = [None if q == self.owner else self.payload((send[q * slot:(q + 1) * slot],))
                   for q in range(self.n_owners)]
        _, received = self.exchange(tag, np.zeros(1), buckets, (send.dtype,))
        for q, got in enumerate(received):
            if got is not None:
                recv[q * slot:(q + 1) * slot] = self._xp.asarray(got[0])
