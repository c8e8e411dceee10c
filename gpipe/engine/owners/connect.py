"""Which transport an owner opens for a traversal (:mod:`gpipe.engine.owners.transport`): NCCL where
the graph has a communicator, Dask's comms otherwise. Above both implementations, so that the
interface imports neither."""

from __future__ import annotations

import contextlib

from gpipe.engine.owners import nccl
from gpipe.engine.owners.dask_comms import DaskTransport


@contextlib.contextmanager
def open_transport(channel, group: str | None, n_owners: int, backend_name: str):
    """This owner's transport for one traversal: NCCL over ``group`` when the graph has one
    (:mod:`gpipe.engine.owners.nccl`), else Dask's comms over ``channel``. On an error the NCCL
    communicator is aborted and dropped (its peers may be blocked in a collective with this
    owner; they hear of the failure through ``channel``), so the next query makes a new one.

    Raises TransportLost when this worker no longer holds ``group``. The channel's own
    lifecycle (flush, abort, close) is :func:`gpipe.engine.owners.peers.run_owner`'s.
    """
    if group is None:
        yield DaskTransport(channel, n_owners, backend_name)
        return
    transport = nccl.transport_for(channel, group, n_owners)
    try:
        with transport.running():
            yield transport
    except BaseException:
        nccl.drop(group)
        raise
