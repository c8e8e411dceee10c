"""What every traversal does at its end, one owner or several: check for
negative cycles (parent cycles, negative self-loops), report the end to whoever watches."""

from __future__ import annotations

import numpy as np

from gpipe.engine import backend as backends
from gpipe.engine import sources as source_ids
from gpipe.engine.result import BFS
from gpipe.errors import NegativeCycleError

FIRST_CYCLE_CHECK = 16


def cycle_check_due(round_no: int) -> bool:
    """Whether Bellman-Ford round ``round_no`` looks for a parent cycle (powers of two from
    :data:`FIRST_CYCLE_CHECK`)."""
    return round_no >= FIRST_CYCLE_CHECK and round_no & (round_no - 1) == 0


def raise_if_negative_loop_reached(part, ids, dist) -> None:
    """Raise NegativeCycleError, naming the vertex by its input id, if ``dist`` reaches one of
    ``part``'s vertices with a negative self-loop: going round the loop shortens every path
    through it without end. The CSR holds no self-loops, so relaxation never sees these."""
    loops = part.negative_loops
    if loops is None or loops.size == 0:
        return
    reached = loops[part.xp.isfinite(dist[loops])]
    if reached.size == 0:
        return
    vertex = part.offset + reached[0].item()
    if ids is not None:
        vertex = source_ids.input_id(part.backend, ids, vertex)
    raise NegativeCycleError(
        f"a negative-weight cycle is reachable from the source: the self-loop on vertex {vertex}")


def report_end(reporter, kind, backend_name, dist, steps=None) -> None:
    """``reporter.done`` for an owner whose distances are ``dist``, if anyone looks: a BFS's
    deepest level reached (the largest distance here, None when this owner reached nothing),
    an SSSP's ``steps``; and the vertices reached: a reduction or two over ``dist``."""
    if not reporter.enabled:
        return
    arrays = backends.get(backend_name).kernels  # none compiled at first use on GPU; max is CUB's
    if kind == BFS:
        reached = arrays.count_nonzero(arrays.non_negative(dist))
        level = int(dist.max()) if reached else None
    else:
        level, reached = steps, arrays.count_nonzero(arrays.isfinite(dist))
    reporter.done(level, reached)


def has_parent_cycle(backend_name, *parents) -> bool:
    """True if following parent pointers (global ids, -1 at roots) ever loops.

    Pointer jumping: after ``ceil(log2 n) + 1`` squarings every vertex of a forest points at
    its root, so a vertex that still points at a non-root lies on or below a cycle.
    """
    xp = backends.get(backend_name).xp
    parent = xp.concatenate(parents) if len(parents) > 1 else parents[0]
    n = int(parent.size)
    if n == 0:
        return False
    node = xp.where(parent >= 0, parent, xp.arange(n, dtype=parent.dtype))
    for _ in range(max(1, int(np.ceil(np.log2(n)))) + 1):
        node = node[node]
    return bool((parent[node] >= 0).any())
