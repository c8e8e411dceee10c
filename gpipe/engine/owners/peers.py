"""Owner-to-owner messages for traversals that run as one long call per owner.

A traversal over P owners runs as P calls started together, each on its owner's worker: direct
requests (:mod:`gpipe.engine.direct`) or, with those off, pinned tasks.
Between levels every owner sends every other owner one message over Dask's worker-to-worker
comms (the path Dask's P2P shuffle takes): the candidates pruned for that owner and its own
count of active vertices. The receiving worker's comm handler files the message in that
process's :data:`MAILBOX`, in the box of the receiving owner (workers of a threaded cluster
share one process, and so one mailbox); the owner's task waits until the level's messages are all in. The
scheduler and the client see none of it: a level costs a local expansion and one message
round, not a scheduler round trip. Sending does not wait for the peers' replies: the worker's
event loop delivers while the owner goes on to wait for its own messages, and a failed delivery
is raised there.

Owner tasks secede from their worker's thread pool while they run (direct requests run on
threads of their own). They wait on each other, and the worker must stay free to start the
owners of other traversals: two traversals at once on one-thread workers would otherwise each
hold a worker that the other one waits for.

A failing owner tells the others (:meth:`Channel.abort`); they stop without a result and the
failing task's error is the one the caller sees. While an owner waits, it asks the scheduler
every :data:`WATCH_S` seconds whether its peers' workers are still in the cluster; a peer whose
worker has left ends the wait with :class:`PeerLost` within seconds. An owner that hears nothing
for ``gpipe.peer-timeout`` (Dask config, default 15 minutes) from peers that are still there
gives up with ``TimeoutError``: the last guard against a peer alive but silent.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict

from distributed import WorkerPlugin, get_worker, rejoin, secede
from distributed.protocol import to_serialize
from distributed.utils import thread_state

HANDLER = "gpipe_peer_message"
ABORT = "abort"
TIMEOUT_KEY = "gpipe.peer-timeout"
DEFAULT_TIMEOUT = "15 minutes"
ABORT_WAIT_S = 10  # how long a failing owner waits for its abort messages to be filed
DEVICE_SCHEMES = ("ucx", "ucxx")  # transports that move device arrays without the host
CLOSED_KEPT = 4096  # boxes of finished traversals remembered, so that late messages to them are dropped
WATCH_S = 1.0  # how often a waiting owner asks the scheduler whether its peers' workers remain


class PeerAborted(Exception):
    """Another owner of the traversal failed; this owner stops without a result."""


class PeerLost(Exception):
    """The worker of another owner left the cluster while this owner waited for it."""


class Mailbox:
    """Messages that arrived for the owners in this process, by box, tag and sender.

    A box is one owner of one traversal: ``(traversal key, owner)``.
    """

    def __init__(self):
        self._arrived = {}  # (box, tag, sender) -> payload
        self._failed = {}  # box -> the owner that aborted
        self._closed = OrderedDict()
        self._changed = threading.Condition()

    def put(self, box, tag, sender, payload) -> None:
        with self._changed:
            if box in self._closed:
                return
            if tag == ABORT:
                self._failed.setdefault(box, sender)
            else:
                self._arrived[box, tag, sender] = payload
            self._changed.notify_all()

    def wake(self) -> None:
        """Have every waiting :meth:`take` look again (and call its ``check``)."""
        with self._changed:
            self._changed.notify_all()

    def take(self, box, tag, senders, timeout: float, check=None) -> list:
        """The payloads of ``tag`` in ``box`` from each of ``senders``, in that order, once all
        are in.

        Raises :class:`PeerAborted` if an abort reached ``box`` first, ``TimeoutError`` if
        ``timeout`` seconds pass without all of them, and whatever ``check()`` raises: it is
        called before each look.
        """
        wanted = [(box, tag, s) for s in senders]
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                if check is not None:
                    check()
                if box in self._failed:
                    raise PeerAborted(f"owner {self._failed[box]} of the traversal failed")
                missing = [w[2] for w in wanted if w not in self._arrived]
                if not missing:
                    return [self._arrived.pop(w) for w in wanted]
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(
                        f"no {tag!r} message from owner(s) {missing} in {timeout:g} s; "
                        f"raise Dask config {TIMEOUT_KEY!r} if levels take that long"
                    )
                self._changed.wait(min(left, WATCH_S) if check is not None else left)

    def raise_if_aborted(self, box) -> None:
        """Raise :class:`PeerAborted` if an abort has reached ``box``."""
        with self._changed:
            if box in self._failed:
                raise PeerAborted(f"owner {self._failed[box]} of the traversal failed")

    def close(self, box) -> None:
        """Forget ``box``: drop what is left in it and every message that comes later."""
        with self._changed:
            for k in [k for k in self._arrived if k[0] == box]:
                del self._arrived[k]
            self._failed.pop(box, None)
            self._closed[box] = None
            while len(self._closed) > CLOSED_KEPT:
                self._closed.popitem(last=False)


MAILBOX = Mailbox()


def _receive(key, receiver, tag, sender, payload):
    """The worker's comm handler for :data:`HANDLER` (runs on the worker's event loop)."""
    MAILBOX.put((key, receiver), tag, sender, payload)
    return "OK"


class PeerMessages(WorkerPlugin):
    """Installs :data:`HANDLER` on every worker of the cluster, present and future."""

    name = "gpipe-peer-messages"
    idempotent = True  # registering again (another client of the cluster) changes nothing

    def setup(self, worker):
        worker.handlers[HANDLER] = _receive


class Channel:
    """One owner's end of a traversal's messages: made by the client, used in the owner's task.

    ``addresses[q]`` is the worker of owner ``q``. Tags name a round of messages (a level, a
    check); each owner sends at most one message per tag to each other owner.
    ``device_messages`` says whether the workers talk over a transport that moves device arrays
    without staging them on the host (UCX); over TCP a GPU owner's messages are better staged
    by the owner itself, in one copy per message.
    """

    def __init__(self, key: str, owner: int, addresses: list, timeout: float):
        self.key = key
        self.owner = owner
        self.addresses = list(addresses)
        self.timeout = timeout
        self.device_messages = all(a.split("://", 1)[0] in DEVICE_SCHEMES for a in self.addresses)
        self._sending = []  # deliveries under way (concurrent.futures.Future)
        self._roll_call = None  # the scheduler's answer on which peers' workers remain, under way
        self._roll_call_at = None  # when the last question was asked (the first wait starts it)

    @property
    def box(self) -> tuple:
        """This owner's box in its process's :data:`MAILBOX`."""
        return (self.key, self.owner)

    @property
    def peers(self) -> list:
        return [q for q in range(len(self.addresses)) if q != self.owner]

    def exchange(self, tag, payloads: list) -> list:
        """Send each other owner ``q`` its ``payloads[q]``; what each sent to us, in owner order."""
        self.send(tag, {q: payloads[q] for q in self.peers})
        return self.receive(tag, self.peers)

    def send(self, tag, payloads: dict) -> None:
        """Start delivering ``payloads[q]`` to each owner ``q`` named in ``payloads``; return.

        The worker's event loop delivers while this owner goes on; a failed delivery is raised
        by the next :meth:`send`, by a :meth:`receive` waiting meanwhile, or by :meth:`flush`.
        """
        self._raise_failed_delivery()
        worker = get_worker()

        async def deliver():
            await asyncio.gather(*(
                getattr(worker.rpc(self.addresses[q]), HANDLER)(
                    key=self.key, receiver=q, tag=tag, sender=self.owner,
                    payload=to_serialize(payload))
                for q, payload in payloads.items()
            ))

        delivery = asyncio.run_coroutine_threadsafe(deliver(), worker.loop.asyncio_loop)
        delivery.add_done_callback(lambda _: MAILBOX.wake())
        self._sending.append(delivery)

    def receive(self, tag, senders: list) -> list:
        """The payloads of ``tag`` from ``senders``, in that order, waiting for them.

        Raises :class:`PeerLost` when a peer's worker leaves the cluster meanwhile.
        """
        def check():
            self._raise_failed_delivery()
            self._raise_lost_peer()

        return MAILBOX.take(self.box, tag, senders, self.timeout, check=check)

    def check(self) -> None:
        """Raise :class:`PeerAborted` if a peer failed, :class:`PeerLost` if a peer's worker
        has left (asking the scheduler at most every :data:`WATCH_S` seconds), or the error of
        a failed delivery. For owners whose steps travel another way (NCCL), between steps."""
        MAILBOX.raise_if_aborted(self.box)
        self._raise_failed_delivery()
        self._raise_lost_peer()

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every delivery started has been filed; raise the first that failed."""
        for delivery in self._sending:
            delivery.result(timeout=self.timeout if timeout is None else timeout)
        self._sending.clear()

    def _raise_lost_peer(self) -> None:
        """Raise PeerLost if the scheduler's last answer lacks a peer's worker; ask again every
        :data:`WATCH_S` seconds (the question travels on the worker's event loop, not here)."""
        call = self._roll_call
        if call is not None and call.done():
            self._roll_call = None
            present = call.result() if call.exception() is None else None
            if present is not None:
                gone = [q for q in self.peers if self.addresses[q] not in present]
                if gone:
                    q = gone[0]
                    raise PeerLost(f"owner {q}'s worker {self.addresses[q]} left the cluster "
                                   "during the traversal")
        now = time.monotonic()
        if self._roll_call_at is None:
            self._roll_call_at = now
        elif self._roll_call is None and now - self._roll_call_at >= WATCH_S:
            self._roll_call_at = now
            worker = get_worker()
            addresses = [self.addresses[q] for q in self.peers]
            self._roll_call = asyncio.run_coroutine_threadsafe(
                worker.scheduler.ncores(workers=addresses), worker.loop.asyncio_loop)
            self._roll_call.add_done_callback(lambda _: MAILBOX.wake())

    def _raise_failed_delivery(self) -> None:
        running = []
        for delivery in self._sending:
            if not delivery.done():
                running.append(delivery)
            elif delivery.exception() is not None:
                raise delivery.exception()
        self._sending = running

    def abort(self) -> None:
        """Tell every other owner that this one failed (best effort: it is failing already)."""
        try:
            self._sending.clear()
            self.send(ABORT, {q: None for q in self.peers})
            self.flush(timeout=ABORT_WAIT_S)
        except Exception:
            pass

    def close(self) -> None:
        MAILBOX.close(self.box)


def run_owner(fn, channel: Channel, *args):
    """``fn(channel, *args)`` as one owner's long task: seceded (when it runs as a Dask task,
    not as a direct request of :mod:`gpipe.engine.direct`), and aborting its peers on error.

    Returns None when a peer failed: that peer's task carries the error.
    """
    in_task = getattr(thread_state, "key", None) is not None
    if in_task:
        secede()
    try:
        result = fn(channel, *args)
        channel.flush()
        return result
    except PeerAborted:
        return None
    except BaseException:
        channel.abort()
        raise
    finally:
        channel.close()
        if in_task:
            rejoin()
