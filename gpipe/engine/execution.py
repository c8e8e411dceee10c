"""Where tasks run: on the workers of the active Dask client, or in this process without one.

Graph building and traversal are written once against :class:`Executor`. Work on an owner's
partition is pinned to that owner's worker; arguments that are futures travel worker to
worker, never through the client. Without a client the same calls run in-process and
handles are plain values.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import operator
import sys
import time
import uuid
import warnings

import dask
from dask.utils import parse_timedelta

from gpipe.engine import in_memory
from gpipe.engine.tasks import run_task, task_name

WORKER_WAIT_S = 30  # how long a client without workers is given to get one
WATCH_S = 1.0  # while waiting, how often the owners' workers are looked for in the cluster
ABORT_S = 2.0  # how long an interrupted client waits for the owners to get its abort
# After a direct query's connection broke: how long the scheduler is given to see its worker
# gone (a killed process is noticed within a second), and how often it is asked.
GONE_S = 5.0
GONE_POLL_S = 0.1
# Why the scheduler removed a worker, by the stimulus id of its "remove-worker" event
# (distributed.scheduler): a lost graph's message says which.
REMOVAL_CAUSES = (
    ("handle-worker-cleanup", "its connection to the scheduler closed: the process was killed or "
                              "crashed (its nanny's log says), or the connection failed"),
    ("check-worker-ttl", "it sent the scheduler no heartbeat for longer than Dask config "
                         "distributed.scheduler.worker-ttl"),
    ("retire-workers", "it was retired"),
    ("restart", "it was restarted"),
    ("worker-close", "it closed itself (its log says why)"),
)


class Executor:
    """Runs functions next to their data and hands back handles to the results."""

    n_owners: int = 1

    def submit(self, fn, *args, owner: int | None = None, at: str | None = None):
        """Run ``fn(*args)`` on the worker of ``owner``, or on the worker at address ``at``
        (anywhere if both are None); return a handle."""
        raise NotImplementedError

    def holders(self, handles: list) -> list:
        """Per handle, the address of a worker that holds its data (None in this process)."""
        return [None] * len(handles)

    def put(self, value, owner: int):
        """A handle to ``value``, sent from this process to the worker of ``owner`` straight,
        not inside a task (a large argument would go through the scheduler)."""
        return value

    def unpin(self) -> None:
        """Forget the workers that tasks were pinned to with ``at=``: what ran there is done and
        no longer needed, so their leaving no longer ends a wait in GraphLost."""

    def gather(self, handles: list) -> list:
        """The values behind ``handles``, brought to the caller (keep them small)."""
        raise NotImplementedError

    def wait(self, handles: list) -> None:
        """Block until ``handles`` are done; re-raise the first task error, moving no data."""
        raise NotImplementedError

    def partitions(self, frame, readers: list | None = None) -> list:
        """Handles to the partitions of the Dask DataFrame ``frame``, computed where Dask puts
        them, or by ``readers`` (worker addresses, :func:`gpipe.partitioning.sizing.readers`):
        one reads them all (pinned: the owner of a graph it holds alone); several take them
        round-robin, partition ``i`` on ``readers[i % k]`` (loosely: one that leaves has its
        share read by another).

        Frames that this process holds (:mod:`gpipe.engine.in_memory`: a plain frame, ``dd.from_pandas``)
        are taken as they are, in row order, not as Dask's partitions: in-process as one frame,
        on a cluster scattered once, a run of rows per worker.
        """
        raise NotImplementedError

    def persist(self, frame):
        """``frame`` with every partition computed once and held where it was computed, as
        Dask partitions it.

        In-process this is not ``frame.persist()``: without a client, Dask names persisted
        partitions by hashing every row (for cuDF, after copying the hashes to the host),
        about 1 s per 268 M edges.
        """
        return self.to_frame(list(dask.compute(*frame.to_delayed())), frame._meta)

    def to_frame(self, handles: list, meta, lengths: list | None = None):
        """A Dask DataFrame whose partitions are the frames behind ``handles``.

        ``lengths``, the rows of each frame where the caller knows them, let ``len()`` of the
        result (and Dask's plans that need it) run no task.
        """
        raise NotImplementedError

    def memory(self, backend_name) -> list:
        """:class:`gpipe.partitioning.sizing.WorkerMemory` of each worker that could own a partition."""
        raise NotImplementedError

    def memory_of(self, backend_name, addresses: list) -> list:
        """:class:`gpipe.partitioning.sizing.WorkerMemory` now of the workers at ``addresses``
        that are still in the cluster (owners or not)."""
        return [m for m in self.memory(backend_name) if m.address in addresses]

    def for_owners(self, workers: list):
        """An executor whose owner ``p`` runs on ``workers[p]`` (from :meth:`memory`)."""
        raise NotImplementedError

    def held_shares(self, handles) -> dict:
        """``{worker address: the fraction of the bytes behind handles that it holds}``; empty
        when one process holds them all (no client)."""
        return {}

    def holds(self, frame) -> bool:
        """Whether the workers hold ``frame``'s data already (persisted, and computed by now),
        so that their free memory counts it; False without a client."""
        return False

    def span(self, name: str):
        """A context whose tasks the Dask dashboard groups under ``name`` (its span view)."""
        return contextlib.nullcontext()

    def wait_for_workers(self, count: int) -> None:
        """Give the cluster up to WORKER_WAIT_S seconds to have ``count`` workers (no error)."""

    def check_open(self) -> None:
        """Raise ClientClosed when the Dask client this executor runs on has been closed."""

    def run_together(self, fn, per_owner_args: list) -> list:
        """Start ``fn(channel, *args)`` on every owner at once; one handle per owner.

        ``per_owner_args[p]`` are owner ``p``'s arguments and ``channel`` its
        :class:`gpipe.engine.owners.peers.Channel`, through which the owners reach each other directly.
        On a cluster the owners run as direct requests (:mod:`gpipe.engine.direct`): this returns once
        they all have, or raises the first owner's error. As tasks (``gpipe.direct-queries:
        false``) it returns at once, and :meth:`wait` raises.
        """
        raise NotImplementedError

    def query(self, fn, *args, owner: int = 0):
        """Like :meth:`submit` pinned to ``owner``, for a whole query's work (a one-owner
        traversal): on a cluster it goes straight to the owner's worker (:mod:`gpipe.engine.direct`)
        and has run when this returns, unless the worker lacked an argument (then a task runs
        it, which the caller waits for as for :meth:`submit`)."""
        return self.submit(fn, *args, owner=owner)

    def item(self, handle, index, owner: int | None = None, at: str | None = None):
        """A handle to ``handle[index]``, taken where ``handle`` lives (``at`` its worker's
        address, where known: the scheduler may otherwise run it elsewhere)."""
        return self.submit(operator.getitem, handle, index, owner=owner, at=at)


class InProcess(Executor):
    """No Dask client: one owner, everything runs here, handles are the values themselves."""

    def submit(self, fn, *args, owner=None, at=None):
        return run_task(fn, *args)

    def gather(self, handles):
        return list(handles)

    def wait(self, handles):
        return None

    def partitions(self, frame, readers=None):
        held = in_memory.held_frames(frame)
        if held is not None:
            return held
        return list(dask.compute(*frame.to_delayed()))

    def memory(self, backend_name):
        from gpipe.partitioning import sizing

        return [sizing.in_process_memory(backend_name)]

    def for_owners(self, workers):
        return self


    def to_frame(self, handles, meta, lengths=None):
        from gpipe.engine.computed import computed_frame

        return computed_frame(handles, meta, lengths)


class OnCluster(Executor):
    """The active ``distributed.Client``: owner ``p`` runs on ``workers[p]``, by default every
    worker in sorted address order."""

    def __init__(self, client, workers=None):
        from gpipe.engine.partition import register_with_dask
        from gpipe.watch import dashboard

        register_with_dask()  # this process may move partitions from now on
        self.client = client
        self.pinned = set()  # workers that tasks were pinned to with ``at=`` (besides the owners')
        dashboard.install(client)  # once per client: the scheduler's gpipe page
        if workers is not None:
            self.workers = list(workers)
            self.n_owners = len(self.workers)
            return
        self.workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
        if not self.workers:  # starting up, or reconnecting after a missed heartbeat
            try:
                client.wait_for_workers(1, timeout=WORKER_WAIT_S)
            except TimeoutError:
                pass
            self.workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
        if not self.workers:
            from gpipe.errors import InputError

            raise InputError("the active Dask client has no workers")
        self.n_owners = len(self.workers)

    def submit(self, fn, *args, owner=None, at=None):
        from gpipe.engine.tasks import run_query_task
        from gpipe.watch import progress

        key = f"{task_name(fn, args)}-{'' if owner is None else f'{owner}-'}{uuid.uuid4().hex}"
        query = progress.current_query()  # within a query: its progress events say which
        run = (run_task,) if query is None else (run_query_task, query)
        if owner is None and at is None:
            return self.client.submit(*run, fn, *args, key=key)
        if owner is None:
            self.pinned.add(at)
        return self.client.submit(
            *run, fn, *args, key=key, workers=[self.workers[owner] if owner is not None else at],
            allow_other_workers=False,
        )

    def unpin(self):
        self.pinned.clear()

    def put(self, value, owner):
        return self.client.scatter(value, workers=[self.workers[owner]], hash=False)

    def holders(self, handles):
        where = self.client.who_has([h for h in handles if hasattr(h, "key")])
        return [min(where.get(h.key, ()) or [None], key=str) if hasattr(h, "key") else None
                for h in handles]

    def query(self, fn, *args, owner=0):
        return self._direct([(fn, args, owner)])[0]

    def _direct(self, calls: list) -> list:
        """Handles to ``fn(*args)`` on the worker of ``owner``, for each ``(fn, args, owner)``
        of ``calls``, all started at once (:mod:`gpipe.engine.direct`): finished futures, or a task's
        where the worker lacked an argument. Raises the first error of a call, GraphLost where
        an owner's worker left or its connection broke as it did."""
        from gpipe.engine import direct

        if not dask.config.get(direct.CONFIG_KEY, True):
            return [self.submit(fn, *args, owner=owner) for fn, args, owner in calls]
        self._install_handlers()
        keys = [f"{task_name(fn, args)}-{owner}-{uuid.uuid4().hex}" for fn, args, owner in calls]
        loop = self.client.loop.asyncio_loop
        asked, handles, first_error = [], [None] * len(calls), None
        pending = set(range(len(calls)))
        try:  # from the first request on: an interrupt among them leaves nothing held
            for (fn, args, owner), key in zip(calls, keys):
                asked.append(asyncio.run_coroutine_threadsafe(
                    direct.request(self.client, self.workers[owner], fn, args, key), loop))
            while pending:
                done, _ = concurrent.futures.wait([asked[i] for i in pending], timeout=WATCH_S,
                                                  return_when=concurrent.futures.FIRST_COMPLETED)
                if not done:
                    self._raise_if_owner_left([], *asked)
                for i in [i for i in pending if asked[i].done()]:
                    pending.discard(i)
                    try:
                        handles[i] = self._answered(asked[i], keys[i], *calls[i])
                    except Exception as error:  # the others end soon (a failing owner aborts them)
                        first_error = first_error or error
        except KeyboardInterrupt:  # no one will hold what the calls not yet answered keep
            for i in range(len(asked)):
                if handles[i] is None:
                    asked[i].add_done_callback(functools.partial(self._release_answer, keys[i]))
            raise
        if first_error is not None:
            raise first_error
        return handles

    def _release_answer(self, key, asked) -> None:
        """Have the cluster forget what a direct call left under ``key`` for this client."""
        from distributed import Future

        if not asked.cancelled() and asked.exception() is None and asked.result() == "OK":
            Future(key, self.client).release()

    def _answered(self, asked, key, fn, args, owner):
        """The handle of one finished direct call (a task started for it if it was missing)."""
        from distributed import Future

        from gpipe.engine import direct

        try:
            answer = asked.result()
        except OSError:  # the connection broke: the owner's worker may be on its way out
            self._raise_if_owner_leaves()
            raise
        if isinstance(answer, dict):  # the call raised this
            if _broken_connection(answer[direct.FAILED]):  # a peer's connection broke, as above
                self._raise_if_owner_leaves()
            _raise_error(answer[direct.FAILED])
        if answer == direct.MISSING:  # its peers, if any, are waiting for it: start it now
            return self.submit(fn, *args, owner=owner)
        future = Future(key, self.client)
        self.client.futures[key].finish()
        return future

    def _raise_if_owner_leaves(self) -> None:
        """GraphLost if an owner's worker leaves the cluster within GONE_S (a broken connection
        is often the first sign of a dead worker, before the scheduler removes it)."""
        deadline = time.monotonic() + GONE_S
        while time.monotonic() < deadline:
            self._raise_if_owner_left([])
            time.sleep(GONE_POLL_S)

    def gather(self, handles):
        self.wait(handles)  # a task pinned to a worker that died would keep a plain gather waiting
        return self.client.gather(list(handles))

    def wait(self, handles):
        """Block until ``handles`` are done; raise the first task error as soon as it comes.

        Raises GraphLost when an owner's worker, or a worker that a task was pinned to with
        ``at=``, leaves the cluster meanwhile (a task pinned to it could never run), and
        OutOfMemory for Dask's KilledWorker.
        """
        from distributed import wait
        from distributed.client import FIRST_COMPLETED, FuturesCancelledError

        pending = [f for f in handles if f.status != "finished"]  # done already: no round trip
        while pending:
            try:
                wait(pending, timeout=WATCH_S, return_when=FIRST_COMPLETED)
            except TimeoutError:
                self._raise_if_owner_left(handles)
            except FuturesCancelledError as error:
                # Data that no task can make again (an input scattered to a worker) is lost
                # with its worker: the scheduler cancels what needed it.
                self._raise_if_owner_left(handles)
                raise _lost(f"a task of the graph was cancelled ({error}), usually because a worker "
                            "holding its input left the cluster (killed, crashed, or stopped by its "
                            "nanny over its memory limit)") from error
            for future in pending:
                if future.status == "error":
                    self.client.cancel([f for f in handles if f.status == "pending"])
                    if isinstance(future.exception(), OSError):  # a comm to a peer broke: gone?
                        self._raise_if_owner_left(handles)
                    _raise_task_error(future)
            pending = [f for f in pending if f.status == "pending"]

    def _raise_if_owner_left(self, handles, *requests) -> None:
        present = self.client.scheduler_info(n_workers=-1)["workers"]
        gone = [(f"partition {owner}'s worker {address}", address) for owner, address in enumerate(self.workers)]
        gone += [(f"worker {address}, which held part of the input", address) for address in sorted(self.pinned)]
        for what, address in gone:
            if address not in present:
                self.client.cancel(list(handles))
                for request in requests:
                    request.cancel()
                cause = self._removal_cause(address) or (
                    "killed, crashed, stopped by its nanny over its memory limit, or cut off from "
                    "the scheduler; its log says which")
                raise _lost(f"{what} left the cluster ({cause})")

    def _removal_cause(self, address) -> str | None:
        """Why the scheduler removed the worker at ``address``, from the scheduler's events: its
        nanny's restart over the memory limit, else the stimulus of its removal
        (:data:`REMOVAL_CAUSES`); None when they do not say."""
        try:
            restarts = self.client.get_events("worker-restart-memory")
            events = self.client.get_events(address)
        except Exception:  # noqa: BLE001 - the scheduler out of reach: the message says less
            return None
        for _, msg in reversed(restarts):
            if isinstance(msg, dict) and msg.get("worker") == address:
                return (f"its nanny restarted it over its memory limit, at {msg.get('rss', 0) / 2**30:.2f} GiB "
                        "of host memory; give the workers more memory, or the graph more workers")
        removals = [msg for _, msg in events if isinstance(msg, dict) and msg.get("action") == "remove-worker"]
        if not removals:
            return None
        stimulus = str(removals[-1].get("stimulus_id") or "")
        for prefix, cause in REMOVAL_CAUSES:
            if stimulus.startswith(prefix):
                return cause
        return f"the scheduler removed it: {stimulus}" if stimulus else None

    def partitions(self, frame, readers=None):
        held = in_memory.held_frames(frame)
        if held is not None:  # sent to the workers once, a run of rows each, under random keys
            return self.client.scatter(in_memory.row_slices(held, len(self.workers)), hash=False)
        pieces = frame.to_delayed(optimize_graph=True)
        if not readers:
            return self.client.compute(pieces)
        if len(readers) == 1:  # read where the graph will be built: no edge crosses the network
            return self.client.compute(pieces, workers=list(readers), allow_other_workers=False)
        handles = [None] * len(pieces)
        for j, address in enumerate(readers):  # one graph per reader: Dask restricts a graph's tasks as one
            mine = range(j, len(pieces), len(readers))
            computed = self.client.compute([pieces[i] for i in mine], workers=[address], allow_other_workers=True)
            for i, handle in zip(mine, computed):
                handles[i] = handle
        return handles

    def to_frame(self, handles, meta, lengths=None):
        if lengths is None:
            import dask.dataframe as dd

            return dd.from_delayed(handles, meta=meta, verify_meta=False)
        from gpipe.engine.computed import worker_frame

        return worker_frame(handles, meta, lengths)

    def memory(self, backend_name):
        return self.memory_of(backend_name, self.workers)

    def memory_of(self, backend_name, addresses):
        from gpipe.partitioning import sizing

        return [m for m in sizing.cluster_memory(self.client, backend_name) if m.address in addresses]

    def holds(self, frame):
        from distributed import futures_of

        futures = futures_of(frame)
        return bool(futures) and all(f.status == "finished" for f in futures)

    def held_shares(self, handles):
        handles = [h for h in handles if hasattr(h, "key")]
        if not handles:
            return {}
        keys = [h.key for h in handles]
        sizes, where = self.client.nbytes(keys, summary=False), self.client.who_has(handles)
        total = sum(sizes.get(k, 0) for k in keys) or 1
        shares = {}
        for key in keys:
            for address in where.get(key, ()):
                shares[address] = shares.get(address, 0.0) + sizes.get(key, 0) / total
        return shares

    def replicate(self, handle, addresses: list) -> list:
        """Handles to copies of the data behind ``handle`` (on ``addresses[0]``), one on each
        other worker of ``addresses``, each under a key of its own; ``handle`` first.

        Copies, not Dask replicas of one key: the scheduler's active memory manager drops the
        extra replicas of a key that no task waits for, and a copy lost with its worker is made
        again from ``handle`` (its lineage) wherever Dask runs it then.
        """
        copies = [handle]
        for j, address in enumerate(addresses[1:], start=1):
            copies.append(self.client.submit(_replica, handle, key=f"gpipe-replica-{j}-{uuid.uuid4().hex}",
                                             workers=[address], allow_other_workers=True))
        self.wait(copies)
        # Making a copy moved the original to the copy's worker too, and the memory manager
        # would drop one of its two replicas, maybe the owner's: drop the others now.
        self.client.run_on_scheduler(_keep_only_on, handle.key, addresses[0])
        return copies

    def for_owners(self, workers):
        owners = OnCluster(self.client, [w.address for w in workers])
        owners._install_handlers()
        return owners

    def _install_handlers(self) -> None:
        """Install gpipe's comm handlers (the owners' messages, direct queries) on every worker,
        once per client: the scheduler installs them on workers that join (or restart) later.
        A worker that died moments ago may still be listed and refuse them; asked again once
        the scheduler has let it go."""
        from gpipe.engine import direct
        from gpipe.engine.owners import peers

        if getattr(self.client, "_gpipe_handlers", False):
            return
        for plugin in (peers.PeerMessages(), direct.DirectQueries()):
            for attempt in range(3):
                try:
                    self.client.register_plugin(plugin)
                    break
                except OSError:
                    if attempt == 2:
                        raise
                    time.sleep(WATCH_S)
        self.client._gpipe_handlers = True

    @contextlib.contextmanager
    def span(self, name):
        from distributed import span

        # A span annotates the tasks gpipe submits; Dask's DataFrame, made inside one (the
        # build reads its input frame), warns that it ignores annotations, which is no news
        # to the user.
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Dask annotations", category=UserWarning)
            with span(name):
                yield

    def check_open(self):
        if self.client.status in ("closing", "closed"):
            from gpipe.errors import ClientClosed

            raise ClientClosed("this graph was built on a Dask client that is closed; build it again "
                               "with gpipe.Graph.from_edges under the active client")

    def wait_for_workers(self, count):
        try:
            self.client.wait_for_workers(count, timeout=WORKER_WAIT_S)
        except TimeoutError:
            pass

    def run_together(self, fn, per_owner_args):
        from gpipe.engine.owners import peers

        self._install_handlers()
        key = f"gpipe-traversal-{uuid.uuid4().hex}"
        timeout = parse_timedelta(dask.config.get(peers.TIMEOUT_KEY, peers.DEFAULT_TIMEOUT))
        addresses = self.workers[:len(per_owner_args)]
        channels = [peers.Channel(key, p, addresses, timeout) for p in range(len(per_owner_args))]
        try:
            return self._direct([(peers.run_owner, (fn, channel, *args), channel.owner)
                                 for channel, args in zip(channels, per_owner_args)])
        except KeyboardInterrupt:  # stop the owners too: they would run on, holding their workers
            self._abort_owners(key, addresses)
            raise

    def _abort_owners(self, key, addresses) -> None:
        """Tell every owner of traversal ``key`` to stop, as a failing peer would (best effort,
        within :data:`ABORT_S`): each stops at its next exchange, without a result."""
        from gpipe.engine.owners import peers

        async def abort():
            await asyncio.gather(*(
                getattr(self.client.rpc(address), peers.HANDLER)(
                    key=key, receiver=owner, tag=peers.ABORT, sender="the client", payload=None)
                for owner, address in enumerate(addresses)), return_exceptions=True)

        sent = asyncio.run_coroutine_threadsafe(abort(), self.client.loop.asyncio_loop)
        try:
            sent.result(timeout=ABORT_S)
        except Exception:  # noqa: BLE001 (closing anyway: a worker that missed it is closed)
            sent.cancel()

    def persist(self, frame):
        from distributed import wait

        frame = self.client.persist(frame)
        wait(frame)
        return frame


def _keep_only_on(key, address, dask_scheduler=None):
    """Drop the replicas of ``key`` on workers other than ``address``, where it has one there."""
    task = dask_scheduler.tasks.get(key)
    holders = {w.address for w in task.who_has} if task is not None and task.who_has else set()
    if address in holders and len(holders) > 1:
        for other in holders - {address}:
            dask_scheduler.request_remove_replicas(other, [key], stimulus_id=f"gpipe-replicas-{uuid.uuid4().hex}")


def _replica(data):
    """``data`` as this worker received it: a copy of another worker's."""
    return data


def _lost(what: str):
    from gpipe.errors import GraphLost

    return GraphLost(f"{what}; rebuild the graph (gpipe.Graph.from_edges) if it cannot be "
                     "rebuilt from its input")


def _broken_connection(error) -> bool:
    """Whether ``error`` is a connection that broke (not a peer's timeout, also an OSError)."""
    from distributed.comm.core import CommClosedError

    return isinstance(error, (CommClosedError, ConnectionError))


def _raise_task_error(future):
    """Raise the error of a failed task, in gpipe's terms where it is a lost worker."""
    _raise_error(future.exception())
    future.result()


def _raise_error(error):
    """Raise ``error``, a task's or a direct call's, in gpipe's terms where it is a lost worker
    (GraphLost) or Dask's KilledWorker (OutOfMemory)."""
    from distributed import KilledWorker

    from gpipe.engine.owners.peers import PeerLost
    from gpipe.errors import OutOfMemory, out_of_memory

    if isinstance(error, PeerLost):
        raise _lost(str(error)) from error
    if isinstance(error, KilledWorker):
        raise OutOfMemory(out_of_memory(error)) from error
    raise error


def current(client=None) -> Executor:
    """The executor for ``client``, else for the active Dask client, else :class:`InProcess`."""
    if client is not None:
        return OnCluster(client)
    if "distributed" not in sys.modules:
        return InProcess()  # no client without distributed; importing it costs ~0.3 s
    try:
        from distributed import get_client

        client = get_client()
    except (ImportError, ValueError):
        return InProcess()
    return OnCluster(client)
