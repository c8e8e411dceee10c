"""An owner's traversal over its transport (:func:`gpipe.engine.owners.connect.open_transport`),
to its result frame (:func:`gpipe.engine.result.owner_frame`), timed: how every owner's loop
(:mod:`gpipe.engine.owners.bfs`, :mod:`gpipe.engine.owners.sssp`) ends."""

from __future__ import annotations

import functools
import time

from gpipe.engine import backend as backends
from gpipe.engine.owners import parent_ids
from gpipe.engine.owners.connect import open_transport
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
