"""A graph as the engine holds it: the declared interface of gpipe's tools and tests.

:attr:`gpipe.Graph.engine` hands out an :class:`EngineView`: what the graph was built into,
the executor that runs its work on the owners, and the few things that ``gpipe bench``,
``gpipe.tools.verify`` and the tests do below the public queries: a traversal up to the
owners' result frames (and, on request, each owner's statistics of it), those frames as the
Dask DataFrame a query returns, input ids as global ids, and a function run on every owner.
Users query through :class:`gpipe.Graph`; this is the engine's side of it, which may change
with the engine.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpipe.engine import result, traverse
from gpipe.engine.sources import global_ids_of


@dataclass(frozen=True)
class Traversal:
    """What :meth:`EngineView.traverse` ran: ``frames``, handles to the owners' result frames
    (one per owner, done), and ``steps``, when asked for, each owner's statistics of the
    traversal (:class:`gpipe.engine.owners.messages.OwnerSteps`, gathered; an empty list for a
    graph of one owner, whose traversal keeps none), else None."""

    frames: list
    steps: list | None = None


@dataclass(frozen=True)
class EngineView:
    """A graph's build and executor, as its queries use them (made anew by each
    :attr:`gpipe.Graph.engine`, so after a rebuild it shows the new build).

    Attributes
    ----------
    built : gpipe.partitioning.build.Built
        What the graph was built into: ``parts`` (handles to each owner's
        :class:`gpipe.engine.partition.Partition`), ``layout``, the input ids, ``nccl_group``,
        ``owner_build_estimate`` and the rest.
    executor : gpipe.engine.execution.Executor
        Runs work on the owners' workers (``submit``, ``query``, ``gather``, ``wait``,
        ``workers``), or in this process without a client.
    """

    built: object
    executor: object

    def global_ids(self, input_ids) -> np.ndarray:
        """The global ids of ``input_ids`` (one input id or a list of them, of the graph's
        kind: integers or strings) as an int64 array; InputError naming the first one that
        is not in the graph."""
        self.executor.check_open()
        values = [input_ids] if np.ndim(input_ids) == 0 else input_ids
        return global_ids_of(self.built, self.executor, values)

    def traverse(self, kind: str, sources, *, depth_limit: int | None = None,
                 steps: bool = False) -> Traversal:
        """What :meth:`gpipe.Graph.bfs` (``kind`` ``"bfs"``) or :meth:`gpipe.Graph.sssp`
        (``"sssp"``) runs from the global ids ``sources``, up to the owners' result frames,
        waited for; with ``steps``, each owner's statistics of it too."""
        handles = [] if steps else None
        sources = np.asarray(sources, dtype=np.int64)
        if kind == result.BFS:
            frames = traverse.bfs_frames(self.executor, self.built, sources, depth_limit, handles)
        else:
            frames = traverse.sssp_frames(self.executor, self.built, sources, handles)
        self.executor.wait(frames)
        return Traversal(frames, None if handles is None else self.executor.gather(handles))

    def result_frame(self, frames: list, kind: str, parents: bool = True):
        """The Dask DataFrame of the owners' result ``frames`` of a ``kind`` traversal, as the
        graph's queries return it (its rows known without a task)."""
        built = self.built
        meta = result.meta(built.backend, kind, built.vertex_dtype, parents)
        return self.executor.to_frame(frames, meta, built.rows)

    def on_owners(self, function, *args) -> list:
        """``function(partition, *args)`` run on every owner, where its partition lives; the
        values in owner order."""
        ex = self.executor
        return ex.gather([ex.submit(function, part, *args, owner=p) for p, part in enumerate(self.built.parts)])
