"""Where tasks run: on the workers of the active Dask client, or in this process without one.

Graph building and traversal are written once against :class:`Executor`. Work on an owner's
partition is pinned to that owner's worker; arguments that are futures travel worker to
worker, never through the client. Without a client the same calls run in-process and
handles are plain values.
"""

from __future__ import annotations

import operator
import uuid

import dask
from dask.utils import parse_timedelta

WORKER_WAIT_S = 30  # how long a client without workers is given to get one


class Executor:
    """Runs functions next to their data and hands back handles to the results."""

    n_owners: int = 1

    def submit(self, fn, *args, owner: int | None = None):
        """Run ``fn(*args)`` on the worker of ``owner`` (anywhere if None); return a handle."""
        raise NotImplementedError

    def gather(self, handles: list) -> list:
        """The values behind ``handles``, brought to the caller (keep them small)."""
        raise NotImplementedError

    def wait(self, handles: list) -> None:
        """Block until ``handles`` are done; re-raise the first task error, moving no data."""
        raise NotImplementedError

    def partitions(self, frame) -> list:
        """Handles to the partitions of the Dask DataFrame ``frame``, computed where they land."""
        raise NotImplementedError

    def persist(self, frame):
        """``frame`` with every partition computed once and held where it was computed.

        In-process this is not ``frame.persist()``: without a client, Dask names persisted
        partitions by hashing every row (for cuDF, after copying the hashes to the host),
        about 1 s per 268 M edges.
        """
        return self.to_frame(self.partitions(frame), frame._meta)

    def to_frame(self, handles: list, meta):
        """A Dask DataFrame whose partitions are the frames behind ``handles``."""
        import dask.dataframe as dd

        return dd.from_delayed(handles, meta=meta, verify_meta=False)

    def run_together(self, fn, per_owner_args: list) -> list:
        """Start ``fn(channel, *args)`` on every owner at once; one handle per owner.

        ``per_owner_args[p]`` are owner ``p``'s arguments and ``channel`` its
        :class:`gpipe.peers.Channel`, through which the owners message each other directly.
        """
        raise NotImplementedError

    def item(self, handle, index, owner: int | None = None):
        """A handle to ``handle[index]``, taken where ``handle`` lives."""
        return self.submit(operator.getitem, handle, index, owner=owner)


class InProcess(Executor):
    """No Dask client: one owner, everything runs here, handles are the values themselves."""

    def submit(self, fn, *args, owner=None):
        return fn(*args)

    def gather(self, handles):
        return list(handles)

    def wait(self, handles):
        return None

    def partitions(self, frame):
        return list(dask.compute(*frame.to_delayed()))

    def to_frame(self, handles, meta):
        from gpipe.computed import computed_frame

        return computed_frame(handles, meta)


class OnCluster(Executor):
    """The active ``distributed.Client``: one owner per worker, in sorted address order."""

    def __init__(self, client):
        self.client = client
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

    def submit(self, fn, *args, owner=None):
        if owner is None:
            return self.client.submit(fn, *args, pure=False)
        return self.client.submit(
            fn, *args, workers=[self.workers[owner]], allow_other_workers=False, pure=False
        )

    def gather(self, handles):
        return self.client.gather(list(handles))

    def wait(self, handles):
        from distributed import wait

        wait(list(handles))
        for future in handles:
            if future.status == "error":
                future.result()

    def partitions(self, frame):
        return self.client.compute(frame.to_delayed(optimize_graph=True))

    def run_together(self, fn, per_owner_args):
        from gpipe import peers

        self.client.register_plugin(peers.PeerMessages())
        key = f"gpipe-traversal-{uuid.uuid4().hex}"
        timeout = parse_timedelta(dask.config.get(peers.TIMEOUT_KEY, peers.DEFAULT_TIMEOUT))
        addresses = self.workers[:len(per_owner_args)]
        channels = [peers.Channel(key, p, addresses, timeout) for p in range(len(per_owner_args))]
        return [
            self.submit(peers.run_owner, fn, channel, *args, owner=channel.owner)
            for channel, args in zip(channels, per_owner_args)
        ]

    def persist(self, frame):
        from distributed import wait

        frame = self.client.persist(frame)
        wait(frame)
        return frame


def current(client=None) -> Executor:
    """The executor for ``client``, else for the active Dask client, else :class:`InProcess`."""
    if client is not None:
        return OnCluster(client)
    try:
        from distributed import get_client

        client = get_client()
    except (ImportError, ValueError):
        return InProcess()
    return OnCluster(client)
