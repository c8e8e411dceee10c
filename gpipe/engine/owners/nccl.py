"""The owners' transport over NCCL: one communicator per multi-owner GPU graph.

A graph built on several GPU workers, one per device, gets an NCCL communicator across its
owners (:func:`make_group`): owner 0's worker draws NCCL's unique id, the client hands it to
every owner, and the owners join together (``ncclCommInitRank``, one rank per owner, on the
device of its worker). Each owner's worker keeps its end in :data:`GROUPS` under the group's
key, which the graph keeps (``Built.nccl_group``) and every query passes to its owners. Graphs
of one client on the same owners share one communicator, and its traversals take turns.

A traversal's kernels and its steps (:class:`NcclTransport`) run on one non-blocking stream of
the worker's (:func:`owner_stream`), so nothing waits between a kernel and the send of what it
queued, and nothing else on the device waits behind a collective:

- counts: an all-gather of every owner's float64 vector, to which the transport appends the
  length of each bucket it sends; one host read of the gathered matrix (pinned memory, the
  only host read of the step), which also tells each owner what it will receive. A BFS
  top-down level gathers the kernels' int64 counters straight off the device instead
  (:meth:`NcclTransport.exchange_counters`), so its counts are read once, all owners' at once;
- buckets: grouped ``ncclSend``/``ncclRecv`` of every array, received into fresh arrays;
- bitmap slices (bottom-up BFS levels): an all-gather straight into the global bitmap.

Waits poll a CUDA event rather than block on the stream: between polls the owner checks its
Dask channel (:mod:`gpipe.engine.owners.peers`) for an abort from a failing peer and for peers whose
worker left, and NCCL for an asynchronous error. Then it aborts its communicator
(``ncclCommAbort``, which returns where a blocked one would hang) and drops it, and the next
query makes a new one (:class:`~gpipe.engine.owners.transport.TransportLost`). The Dask channel
carries nothing else while the traversal runs.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import OrderedDict

import numpy as np

from gpipe.engine.owners.transport import Transport, TransportLost

log = logging.getLogger("gpipe.nccl")

CONFIG_KEY = "gpipe.transport"  # "auto" (the default: NCCL where it can serve), "nccl", "dask"
DEFAULT = "auto"
GROUPS_KEPT = 8  # communicators a worker keeps; the oldest is aborted to make room
POLL_CHECK_S = 0.001  # how often a waiting owner looks at its channel and at NCCL's errors
SLOW_STEP_S = 10.0  # a step that takes longer is logged once (a hang shows in the worker's log)

GROUPS: OrderedDict = OrderedDict()  # group key -> NCCL communicator, in this worker process
_STREAMS = {}  # CUDA device id -> the stream this process's NCCL traversals run on
# group key -> the buffers its traversals' steps reuse, by (kind, length, dtype): pinned host
# buffers the counts are read into and device buffers they are gathered into, kept from query to
# query (pinning costs more than a small level, and a device allocation outside a pool frees with
# a device-wide synchronization); a group's traversals take turns
_BUFFERS = {}
_CLIENT_GROUPS = {}  # (id of a client, its owners' addresses) -> group key, on the client
# A client's NCCL traversals run one at a time, over one communicator or several: two at once
# would interleave their collectives, and communicators that share a device deadlock when their
# kernels are queued in different orders on different devices.
_TURN = threading.Lock()
_GROUPS_LOCK = threading.Lock()


def loads() -> bool:
    """Whether NCCL can be used in this process (CuPy with its NCCL binding, a GPU)."""
    try:
        from cupy.cuda import nccl

        return bool(nccl.available)
    except Exception:  # noqa: BLE001 (no CuPy, no libnccl, no driver: no NCCL)
        return False


def device_identity() -> tuple | None:
    """``(host, PCI bus id)`` of this worker's GPU where NCCL loads here, else None: the
    client compares them, since NCCL takes one rank per device."""
    if not loads():
        return None
    import socket

    import cupy

    return (socket.gethostname(), cupy.cuda.Device().pci_bus_id)


def unique_id() -> tuple:
    """A fresh NCCL unique id (drawn on the worker of owner 0)."""
    from cupy.cuda import nccl

    return nccl.get_unique_id()


def join(channel, group: str, uid, n_owners: int) -> bool:
    """Make this owner's end of communicator ``group`` (collective: every owner at once)."""
    from cupy.cuda import nccl

    comm = nccl.NcclCommunicator(n_owners, uid, channel.owner)
    _warm(comm, n_owners, channel.owner)
    with _GROUPS_LOCK:
        GROUPS[group] = comm
        while len(GROUPS) > GROUPS_KEPT:
            key, oldest = GROUPS.popitem(last=False)
            _BUFFERS.pop(key, None)
            _abort(oldest)
    return True


def _warm(comm, n_owners: int, owner: int) -> None:
    """Run each kind of step once on the owners' stream, small and large, and load the
    kernels: NCCL connects a communicator's peers at each kind's first use (hundreds of
    milliseconds), which would otherwise land in the graph's first query."""
    import cupy
    from cupy.cuda import nccl

    from gpipe.engine import backend as backends

    backends.get(backends.GPU).kernels.warmup()
    stream = owner_stream()
    with stream:
        for size in (8, 1 << 20):
            piece = cupy.zeros(size, dtype=cupy.uint8)
            gathered = cupy.empty(n_owners * size, dtype=cupy.uint8)
            comm.allGather(piece.data.ptr, gathered.data.ptr, size, nccl.NCCL_UINT8, stream.ptr)
            nccl.groupStart()
            for q in (q for q in range(n_owners) if q != owner):
                comm.send(piece.data.ptr, size, nccl.NCCL_UINT8, q, stream.ptr)
                comm.recv(gathered[q * size:].data.ptr, size, nccl.NCCL_UINT8, q, stream.ptr)
            nccl.groupEnd()
        stream.synchronize()


def drop(group: str) -> None:
    """Abort and forget this worker's end of ``group`` (no-op if it has none)."""
    with _GROUPS_LOCK:
        comm = GROUPS.pop(group, None)
        _BUFFERS.pop(group, None)
    if comm is not None:
        _abort(comm)


def _abort(comm) -> None:
    try:
        comm.abort()
    except Exception:  # noqa: BLE001 (already broken: nothing more to release)
        pass


def make_group(executor, layout, backend_name: str, *, fresh: bool = False) -> str | None:
    """The key of the NCCL communicator across the owners of a multi-owner graph, or None
    where the owners keep Dask's comms: a CPU graph, ``gpipe.transport: dask``, or (with
    ``auto``, the default) NCCL not loading on an owner's worker or two owners on one device.
    With ``gpipe.transport: nccl`` those raise InputError instead.

    One communicator serves every graph of this client whose owners are the same workers in
    the same order: made at the first such build, reused by the next (NCCL's setup costs
    seconds, and communicators made one after another on the same devices have hung each
    other's collectives). ``fresh`` makes a new one, for a communicator that was aborted.
    """
    import dask

    from gpipe.engine import backend as backends
    from gpipe.errors import InputError

    setting = dask.config.get(CONFIG_KEY, DEFAULT)
    if setting not in ("auto", "nccl", "dask"):
        raise InputError(f"{CONFIG_KEY} must be 'auto', 'nccl' or 'dask', not {setting!r}")
    if setting == "dask" or layout.n_owners < 2 or not hasattr(executor, "client"):
        return None
    if backend_name != backends.GPU:
        if setting == "nccl":
            raise InputError(f"{CONFIG_KEY}: nccl needs GPU workers; this graph's partitions are "
                             "pandas (set it to 'auto' or 'dask')")
        return None
    owners = (id(executor.client), tuple(executor.workers[:layout.n_owners]))
    with _GROUPS_LOCK:
        known = _CLIENT_GROUPS.get(owners)
    if known is not None and not fresh:
        return known
    devices = executor.gather([executor.submit(device_identity, owner=p)
                               for p in range(layout.n_owners)])
    why = None
    if any(d is None for d in devices):
        why = "NCCL does not load on every owner's worker (CuPy's cupy.cuda.nccl)"
    elif len(set(devices)) < len(devices):
        why = "two owners share a GPU (NCCL takes one rank per device)"
    if why is not None:
        if setting == "nccl":
            raise InputError(f"{CONFIG_KEY}: nccl cannot serve this graph: {why}; set it to "
                             "'auto' or 'dask'")
        return None
    import uuid

    group = f"gpipe-nccl-{uuid.uuid4().hex}"
    uid = executor.gather([executor.submit(unique_id, owner=0)])[0]
    executor.run_together(join, [(group, uid, layout.n_owners)] * layout.n_owners)
    with _GROUPS_LOCK:
        _CLIENT_GROUPS[owners] = group
    return group


def owner_stream():
    """The stream this process's NCCL traversals run on, kernels and collectives alike.

    Non-blocking: work that another thread of the worker queues on the legacy default stream
    (a comm thread copying data off the device for a peer, say) must not wait behind a
    collective, which itself waits for that peer.
    """
    import cupy

    device = cupy.cuda.Device().id
    with _GROUPS_LOCK:
        stream = _STREAMS.get(device)
        if stream is None:
            stream = _STREAMS[device] = cupy.cuda.Stream(non_blocking=True)
    return stream


def turn() -> threading.Lock:
    """The lock a client's NCCL traversal holds from its start until every owner has ended."""
    return _TURN


def transport_for(channel, group: str, n_owners: int) -> NcclTransport:
    """This owner's end of communicator ``group``. Raises TransportLost when this worker no
    longer holds it (aborted after a failure, or evicted by newer ones)."""
    with _GROUPS_LOCK:
        comm = GROUPS.get(group)
    if comm is None:
        raise TransportLost(f"this worker holds no NCCL communicator {group}")
    return NcclTransport(comm, group, channel, n_owners)


class NcclTransport(Transport):
    """:class:`~gpipe.engine.owners.transport.Transport` over an NCCL communicator, with the owner's
    Dask ``channel`` kept for failures only (aborts, lost peers, the timeout)."""

    def __init__(self, comm, group: str, channel, n_owners: int):
        import cupy
        from cupy.cuda import nccl

        self._cupy, self._nccl = cupy, nccl
        self.comm, self.group, self.channel = comm, group, channel
        self.owner = channel.owner
        self.n_owners = n_owners
        self.key = channel.key
        self.timeout = getattr(channel, "timeout", 900.0)
        self.stream = owner_stream()
        self._buffers = _BUFFERS.setdefault(group, {})
        self._staging = {}  # device buffers for an all-gather's padded piece, by (dtype, length)

    @contextlib.contextmanager
    def running(self):
        """Make :meth:`owner_stream` current for the traversal; on a normal exit, return once
        everything queued on it has run (the caller reads the results on another stream)."""
        with self.stream:
            yield self
            self._wait()

    # --- the steps ---------------------------------------------------------------------------

    def exchange(self, tag, counts, buckets, dtypes):
        k = len(counts)
        lengths = self._lengths(buckets)
        gathered = self._gather_counts(np.concatenate([np.asarray(counts, dtype=np.float64),
                                                       np.asarray(lengths, dtype=np.float64)]))
        incoming = gathered[:, k + self.owner].astype(np.int64)
        received = self._send_receive(buckets, lengths, incoming, dtypes)
        if any(lengths) or incoming.any():
            self._wait()
        return gathered[:, :k], received

    def exchange_counters(self, tag, counters, lengths_at, buckets_for, dtypes):
        """Gathers the counters straight off the device (one host read of every owner's), then
        sends and receives the buckets; returns without waiting for them: what comes next on
        the stream (the kernels that claim them, the next step's gather) runs after them."""
        rows = self._gather_rows(self._cupy.ascontiguousarray(counters, dtype=np.int64))
        buckets = buckets_for(rows[self.owner])
        lengths = self._lengths(buckets)
        expected = [0 if q == self.owner else int(rows[self.owner, lengths_at + q])
                    for q in range(self.n_owners)]
        if lengths != expected:
            raise ValueError(f"owner {self.owner}'s buckets hold {lengths} entries where its "
                             f"counters say {expected}")
        received = self._send_receive(buckets, lengths, rows[:, lengths_at + self.owner], dtypes)
        return rows, received

    def _lengths(self, buckets) -> list:
        return [0 if b is None or q == self.owner else int(b[0].size) for q, b in enumerate(buckets)]

    def _send_receive(self, buckets, lengths, incoming, dtypes) -> list:
        """Grouped send of each non-empty bucket and receive of what each peer sends
        (``incoming[q]`` entries from owner ``q``), queued on the stream; per owner the arrays
        received (None for this owner and empty buckets)."""
        cupy, nccl = self._cupy, self._nccl
        stream = cupy.cuda.get_current_stream().ptr
        received = [None] * self.n_owners
        if not (any(lengths) or np.any(incoming)):
            return received
        nccl.groupStart()
        try:
            for q in self.peers:
                if lengths[q]:
                    for array in buckets[q]:
                        array = cupy.ascontiguousarray(array)
                        self.comm.send(array.data.ptr, array.nbytes, nccl.NCCL_UINT8, q, stream)
                if incoming[q]:
                    received[q] = tuple(cupy.empty(int(incoming[q]), dtype=d) for d in dtypes)
                    for array in received[q]:
                        self.comm.recv(array.data.ptr, array.nbytes, nccl.NCCL_UINT8, q, stream)
        finally:
            nccl.groupEnd()
        return received

    def allgather(self, tag, counts, piece, out):
        cupy, nccl = self._cupy, self._nccl
        slot = out.size // self.n_owners
        staging = self._staging.get((piece.dtype.str, slot))
        if staging is None:
            staging = self._staging[piece.dtype.str, slot] = cupy.zeros(slot, dtype=piece.dtype)
        staging[:piece.size] = piece
        stream = cupy.cuda.get_current_stream().ptr
        nbytes = slot * staging.itemsize
        send = cupy.asarray(np.asarray(counts, dtype=np.float64))
        recv = cupy.empty(self.n_owners * send.size, dtype=np.float64)
        nccl.groupStart()
        try:
            self.comm.allGather(send.data.ptr, recv.data.ptr, send.size, nccl.NCCL_FLOAT64, stream)
            self.comm.allGather(staging.data.ptr, out.data.ptr, nbytes, nccl.NCCL_UINT8, stream)
        finally:
            nccl.groupEnd()
        return self.read(recv).reshape(self.n_owners, -1)

    def gather_slices(self, tag, piece, out):
        """One all-gather straight into ``out``, queued on the owner's stream."""
        cupy, nccl = self._cupy, self._nccl
        self.comm.allGather(piece.data.ptr, out.data.ptr, piece.nbytes, nccl.NCCL_UINT8,
                            cupy.cuda.get_current_stream().ptr)

    def swap_slices(self, tag, send, recv):
        """Grouped send/recv of fixed-size slots, queued on the owner's stream."""
        cupy, nccl = self._cupy, self._nccl
        stream = cupy.cuda.get_current_stream().ptr
        slot = send.size // self.n_owners
        nbytes = slot * send.itemsize
        nccl.groupStart()
        try:
            for q in self.peers:
                self.comm.send(send[q * slot:].data.ptr, nbytes, nccl.NCCL_UINT8, q, stream)
                self.comm.recv(recv[q * slot:].data.ptr, nbytes, nccl.NCCL_UINT8, q, stream)
        finally:
            nccl.groupEnd()

    def gather_counters(self, tag, counters):
        return self._gather_rows(self._cupy.ascontiguousarray(counters, dtype=np.int64))

    def marker(self):
        event = self._cupy.cuda.Event()
        event.record()
        return event

    def elapsed(self, start, end) -> float:
        end.synchronize()
        return self._cupy.cuda.get_elapsed_time(start, end) / 1e3

    def _gather_counts(self, vector) -> np.ndarray:
        return self._gather_rows(self._cupy.asarray(np.asarray(vector, dtype=np.float64)))

    def _gather_rows(self, send) -> np.ndarray:
        """Every owner's ``send`` (a contiguous float64 or int64 device array of the same
        length on every owner), read once: a host array ``[n_owners, send.size]``."""
        cupy, nccl = self._cupy, self._nccl
        kind = {np.dtype(np.float64): nccl.NCCL_FLOAT64, np.dtype(np.int64): nccl.NCCL_INT64}
        recv = self._buffer("device", self.n_owners * send.size, send.dtype)
        self.comm.allGather(send.data.ptr, recv.data.ptr, send.size, kind[send.dtype],
                            cupy.cuda.get_current_stream().ptr)
        return self.read(recv).reshape(self.n_owners, -1)

    def _buffer(self, kind: str, size: int, dtype):
        """A ``"pinned"`` host or ``"device"`` buffer of ``size`` elements of ``dtype``, made at
        its first use by this communicator and reused (a step's buffers are free again once it
        has been read)."""
        key = (kind, size, np.dtype(dtype).str)
        buffer = self._buffers.get(key)
        if buffer is None:
            if kind == "pinned":
                import cupyx

                buffer = cupyx.empty_pinned(size, dtype=dtype)
            else:
                buffer = self._cupy.empty(size, dtype=dtype)
            self._buffers[key] = buffer
        return buffer

    def read(self, array):
        host = self._buffer("pinned", array.size, array.dtype)
        array.get(out=host, blocking=False)
        self._wait()
        return np.array(host)

    def _wait(self) -> None:
        """Until the stream has done everything queued so far: polled, so that a failed or
        lost peer, or an NCCL error, aborts the communicator instead of hanging here."""
        event = self._cupy.cuda.Event(block=False, disable_timing=True)
        event.record()
        started = last = time.monotonic()
        warned = False
        try:
            while not event.done:
                now = time.monotonic()
                if now - last >= POLL_CHECK_S:
                    last = now
                    self.comm.check_async_error()
                    self.check()
                    if not warned and now - started > SLOW_STEP_S:
                        warned = True  # a hang's first trace: which owner, which communicator
                        log.warning("owner %d of traversal %s has waited %.0f s for an NCCL step "
                                    "over %s; its peers are alive", self.owner, self.key,
                                    now - started, self.group)
                    if now - started > self.timeout:
                        raise TimeoutError(f"an NCCL step of owner {self.owner} took over "
                                           f"{self.timeout:g} s; raise Dask config "
                                           "'gpipe.peer-timeout' if levels take that long")
                    # Let the worker's other threads (its event loop) run, once per check: a
                    # release at every poll hands the GIL to whichever thread wants it, and
                    # getting it back can take the interpreter's switch interval (5 ms).
                    time.sleep(0)
        except BaseException:
            drop(self.group)
            raise

    def check(self):
        check = getattr(self.channel, "check", None)
        if check is not None:
            check()
