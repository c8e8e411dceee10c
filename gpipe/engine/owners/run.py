"""Starting a traversal over several owners from the client, and what comes back.

Every owner runs its loop (:func:`gpipe.engine.owners.bfs.bfs_owner`,
:func:`gpipe.engine.owners.sssp.sssp_owner`) as one long call on its worker, all started together
(``Executor.run_together``); the loops talk over the graph's transport (``Built.nccl_group``:
an NCCL communicator's key, or None for Dask's comms). Traversals over one NCCL communicator take
turns (on this client); a communicator that an earlier failure aborted is made again here,
once, and the traversal rerun.
"""

from __future__ import annotations

from gpipe.engine.owners import nccl
from gpipe.engine.owners.bfs import bfs_owner
from gpipe.engine.owners.sssp import sssp_owner
from gpipe.engine.owners.transport import TransportLost


def start_bfs(executor, built, sources, depth_limit, thresholds, with_stats: bool, parents: bool) -> list:
    """One handle per owner to its BFS result frame (``(frame, stats)`` with ``with_stats``)."""
    return _run(executor, built, sources, bfs_owner, depth_limit, thresholds, with_stats, parents)


def start_sssp(executor, built, sources, with_stats: bool, parents: bool, max_distance) -> list:
    """One handle per owner to its SSSP result frame (``(frame, OwnerSteps)`` with
    ``with_stats``)."""
    return _run(executor, built, sources, sssp_owner, built.negative_weights, with_stats, parents,
                max_distance)


def _run(executor, built, sources, owner_loop, *options) -> list:
    try:
        return _start(executor, built, sources, owner_loop, *options)
    except TransportLost:
        built.nccl_group = nccl.make_group(executor, built.layout, built.backend, fresh=True)
        return _start(executor, built, sources, owner_loop, *options)


def _start(executor, built, sources, owner_loop, *options) -> list:
    """Start ``owner_loop(channel, part, ids, layout, local_sources, group, *options,
    vertex_dtype)`` on every owner with its own sources; the caller waits for them."""
    layout = built.layout
    owners = layout.owner_of(sources)
    ids = built.owner_ids or [built.ids] * layout.n_owners
    calls = [(built.parts[p], ids[p], layout, sources[owners == p] - layout.offset(p),
              built.nccl_group, *options, built.vertex_dtype) for p in range(layout.n_owners)]
    if built.nccl_group is None:
        return executor.run_together(owner_loop, calls)
    with nccl.turn():
        handles = executor.run_together(owner_loop, calls)
        executor.wait(handles)  # as tasks (direct queries off) they are still running
        return handles
