"""Queries sent straight to the owners' workers, not through the scheduler.

A Dask task costs a round trip through the scheduler: the client submits it, the scheduler
hands it to the worker, the worker reports its end to the scheduler, which tells the client
(7.5 ms on our H100 machine for a task that does nothing). A query of a graph that fits one
worker is one traversal of a few milliseconds, so that round trip was most of it. Here the
client asks each owner's worker directly, over a comm handler that :class:`DirectQueries`
installs (the way Dask's P2P shuffle and direct scatter talk to workers): a one-owner
traversal, or one owner's share of a multi-owner one (:func:`gpipe.engine.owners.peers.run_owner`, all
started at once). The worker runs it on a thread of its own, keeps the result frame as
ordinary Dask data and tells the scheduler that it holds it for this client (as a scatter from
a task does); the client then holds a :class:`distributed.Future` of it, which Dask treats
like any task's result.

A call falls back on an ordinary task when one of its arguments is not in the owner's memory
(the worker answers :data:`MISSING`). An error raised by the traversal comes back as the
answer (under :data:`FAILED`), so that the caller raises it as it is; an ``OSError`` from the
request itself is then always the connection's. Traversals run this way do not appear in the
dashboard's task stream (their progress events do); Dask config ``gpipe.direct-queries:
false`` sends them as tasks again.
"""

from __future__ import annotations

import asyncio
import contextvars
from dataclasses import dataclass

from distributed import Future, WorkerPlugin
from distributed.protocol import to_serialize
from distributed.sizeof import sizeof

from gpipe.engine.tasks import run_task

HANDLER = "gpipe_direct_query"
CONFIG_KEY = "gpipe.direct-queries"
MISSING = "missing"
FAILED = "failed"  # the answer's key for the error that the call raised


@dataclass(frozen=True)
class Held:
    """An argument that the owner's worker holds: the key of a future's data."""

    key: str


async def _serve(worker, fn, args, key, client, query=None):
    """The worker's comm handler for :data:`HANDLER`: ``fn(*args)`` kept under ``key`` for
    ``client``; :data:`MISSING` when an argument is not in this worker's memory. ``query`` is
    what the client's :func:`gpipe.progress.query` said, for the traversal's progress events."""
    try:
        values = [worker.data[a.key] if isinstance(a, Held) else a for a in args]
    except KeyError:
        return MISSING
    context = contextvars.copy_context()
    try:
        frame = await asyncio.get_running_loop().run_in_executor(
            None, context.run, _run_on_worker, worker, fn, values, query)
    except Exception as error:  # the traversal's own: answered, so that the caller can tell
        return {FAILED: to_serialize(error)}  # it from a connection that broke (both OSErrors)
    worker.update_data({key: frame}, stimulus_id=f"gpipe-direct-{key}")
    try:
        await worker.scheduler.update_data(who_has={key: [worker.address]}, nbytes={key: sizeof(frame)},
                                           client=client)
    except (OSError, RuntimeError):
        if worker.status.name == "running":
            raise
        return MISSING  # the worker is closing (its cluster stops): no one waits for the frame
    return "OK"


def _run_on_worker(worker, fn, values, query=None):
    """``fn(*values)`` as gpipe runs a task (:func:`gpipe.engine.tasks.run_task`), with
    ``distributed.get_worker()`` finding this worker, as it would in a task (progress events),
    and :func:`gpipe.progress.current_query` the client's ``query``."""
    from distributed.worker import _worker_cvar

    from gpipe.watch import progress

    _worker_cvar.set(worker)  # this thread's own copy of the context
    progress.set_query(query)
    return run_task(fn, *values)


class DirectQueries(WorkerPlugin):
    """Installs :data:`HANDLER` on every worker of the cluster, present and future."""

    name = "gpipe-direct-queries"
    idempotent = True

    def setup(self, worker):
        async def handler(fn, args, key, client, query=None):
            return await _serve(worker, fn, args, key, client, query)

        worker.handlers[HANDLER] = handler


def request(client, address, fn, args, key):
    """The coroutine that asks the worker at ``address`` for ``fn(*args)`` under ``key``
    (futures among ``args`` go as :class:`Held`); it returns ``"OK"``, :data:`MISSING` or
    ``{FAILED: error}``. The query's :func:`gpipe.progress.current_query` goes along."""
    from gpipe.watch import progress

    held = [Held(a.key) if isinstance(a, Future) else a for a in args]
    return getattr(client.rpc(address), HANDLER)(fn=to_serialize(fn), args=to_serialize(held),
                                                 key=key, client=client.id,
                                                 query=progress.current_query())
