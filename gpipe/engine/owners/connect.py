"""Which transport an owner opens for a traversal (:mod:`gpipe.engine.owners.transport`): NCCL where
the graph has a communicator, Dask's comms otherwise. Above both implementations, so that the
interface imports neither. And an owner's traversal over it, to its result frame, timed."""

from __future__ import annotations

import contextlib
import functools
import time

from gpipe.engine import backend as backends
from gpipe.engine.owners import nccl
from gpipe.engine.owners import parent_ids
from gpipe.engine.owners.dask_comms import DaskTransport
from gpipe.engine.result import owner_frame
from gpipe.engine.sources import OwnerIds


def owner_result(channel, group, part, layout, arrays, kind, ids, parents, vertex_dtype, with_stats):
    """This owner's result frame of a traversal of ``kind``: ``arrays(transport)`` gives its
    ``(dist, parent, OwnerSteps)`` over the transport of ``group``, and the frame is made from
    them (without ``parent`` when not ``parents``); ``(frame, stats)`` when ``with_stats``, the
    stats closed with the owner's whole, setup and frame times (the device synchronized at each
    end, so that the times are the work's)."""
    started, started_at = time.perf_counter(), time.time()
    with open_transport(channel, group, layout.n_owners, part.backend) as transport:
        dist, parent, stats = arrays(transport)
    backend = backends.get(part.backend)
    if with_stats:
        backend.synchronize()
    steps_ended = time.perf_counter()
    input_parents = None
    if isinstance(ids, OwnerIds):  # the parents' input ids are their owners': asked of them
        input_parents = functools.partial(parent_ids.input_parents, channel, layout, ids, part.backend)
    frame = owner_frame(part, ids, dist, parent if parents else None, kind, vertex_dtype, input_parents)
    if not with_stats:
        return frame
    backend.synchronize()
    stats.close(started, started_at, steps_ended)
    return frame, stats


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
