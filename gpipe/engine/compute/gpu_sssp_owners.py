"""SSSP over several owners on the GPU: one owner's relaxations, merge, splits and outbox
(``kernels/sssp_owners.cu``), driven from the host once per round.

The contract is that of :mod:`gpipe.engine.compute.cpu_sssp_owners`, whose Numba functions are the
line-by-line twins of these kernels (see its docstring for the technique); everything works in
place on a :class:`gpipe.engine.compute.owner_state.SsspOwnerState` of CuPy arrays. The host reads
the counters once per round (one synchronization) and after each split of the mid pile; no
call sorts, deduplicates or compacts with CuPy's generic routines.
"""

from __future__ import annotations

import functools

import cupy
import numpy as np

from gpipe.engine.compute import cuda, gpu_arrays
from gpipe.engine.compute.owner_state import (FAR, FAR_MIN, INF_BITS, MID, MID_MIN, NEAR, RELAXED, SENT_MIN,
                                              Counts, SsspOwnerState, counts_from)

_SOURCE = "sssp_owners.cu"
# First exchange window: the near-far band of the one-owner kernel (gpu_sssp._DELTA_EDGES).
# A repeated relaxation costs a GPU next to nothing next to a message (~1.1-1.5 ms between
# two workers), so these kernels count no repeats and the window only grows.
WINDOW_EDGES = 96


@functools.lru_cache(maxsize=None)
def _untyped_index():
    """A zero-length int32 array: picks the ``<int>`` instantiation of the kernels that do not
    read ``indices`` (every kernel of the file is a template, as cuda.function expects)."""
    return cupy.empty(0, dtype=cupy.int32)


def _kernel(name, indices=None, weights=None):
    """``name`` for these indices (and, for a kernel that reads weights, their width)."""
    if weights is not None:
        return cuda.weighted_function(_SOURCE, name, indices, weights)
    return cuda.function(_SOURCE, name, _untyped_index() if indices is None else indices)


def _host_counts(state: SsspOwnerState) -> np.ndarray:
    """``state.counters`` on the host (one synchronization), as int64 and float64 views."""
    host = state.counters.get()
    return host.view(np.int64), host.view(np.float64)


def sssp_owner_relax(indptr, indices, weights, state: SsspOwnerState, threshold, max_rounds):
    """See :func:`gpipe.engine.compute.cpu_sssp_owners.sssp_owner_relax` (the twin of this host loop,
    ``_local_phase``)."""
    counters = state.counters
    counts, values = _host_counts(state)
    n_local = state.n_local
    edges_grid = cuda.grid(int(indices.size))
    rounds = 0
    while True:
        while counts[NEAR] > 0 and (max_rounds < 0 or rounds < max_rounds):
            k = int(counts[NEAR])
            frontier = state.near[state.near_fill][:k]
            state.near_fill = 1 - state.near_fill
            state.fill_round += 1
            _kernel("sssp_owner_frontier")(
                cuda.grid(k), (cuda.BLOCK,),
                (indptr, frontier, cupy.int64(k), state.dist, state.snapshot, state.edge_end,
                 counters),
            )
            edge_end = gpu_arrays.cumsum_in_place(gpu_arrays.copy(state.edge_end[:k]))
            lowered = 2 * state.calls + 1
            state.calls += 1
            _kernel("sssp_owner_relax_edges", indices, weights)(
                edges_grid, (cuda.BLOCK,),
                (indptr, indices, weights, cupy.int64(state.offset), cupy.int64(n_local),
                 cupy.int64(state.chunk), cupy.int64(state.n_owners), frontier, state.snapshot,
                 edge_end, cupy.int64(k), state.dist, state.stamp, cupy.int32(lowered),
                 state.sent_best, state.queued, state.outbox, state.outbox_start, counters,
                 cupy.float64(state.bound)),
            )
            _kernel("sssp_owner_settle_edges", indices, weights)(
                edges_grid, (cuda.BLOCK,),
                (indptr, indices, weights, cupy.int64(state.offset), cupy.int64(n_local), frontier,
                 state.snapshot, edge_end, cupy.int64(k), state.dist, state.parent, state.stamp,
                 cupy.int32(lowered), cupy.float64(state.local_threshold), cupy.float64(threshold),
                 cupy.int32(state.fill_round), state.near_mark, state.mid_mark, state.far_mark,
                 state.near[state.near_fill], state.mid[state.mid_fill],
                 cupy.int32(MID + state.mid_fill), state.far[state.far_fill],
                 cupy.int32(FAR + state.far_fill), state.sent_best, state.send_parent,
                 state.queued, counters),
            )
            rounds += 1
            counts, values = _host_counts(state)
        if max_rounds >= 0 and rounds >= max_rounds:
            break
        low = float(values[MID_MIN])
        if not low < threshold:
            break  # nothing live below T on the mid pile: the window is done here
        raised = min(float(threshold), max(low + state.local_delta, float(np.nextafter(low, np.inf))))
        fresh = 1 - state.mid_fill
        counters[MID + fresh] = 0
        counters[MID_MIN] = INF_BITS
        _split(state, state.mid[state.mid_fill], MID + state.mid_fill, state.mid_mark,
               state.local_threshold, raised, threshold, state.mid[fresh], MID + fresh,
               state.far[state.far_fill], FAR + state.far_fill)
        state.mid_fill = fresh
        state.local_threshold = raised
        counts, values = _host_counts(state)
    return rounds


def _split(state, pile, pile_slot, pile_mark, drop_below, local_threshold, threshold, mid_out,
           mid_slot, far_out, far_slot):
    """One launch of sssp_owner_split (the pile's length is read on the device)."""
    _kernel("sssp_owner_split")(
        cuda.grid(state.n_local), (cuda.BLOCK,),
        (pile, cupy.int32(pile_slot), pile_mark, cupy.float64(drop_below),
         cupy.float64(local_threshold), cupy.float64(threshold), cupy.int32(state.fill_round),
         state.dist, state.near_mark, state.mid_mark, state.far_mark, state.near[state.near_fill],
         mid_out, cupy.int32(mid_slot), far_out, cupy.int32(far_slot), state.counters),
    )


def sssp_owner_counts(state: SsspOwnerState) -> Counts:
    """The counters, read to the host (one synchronization)."""
    return counts_from(state.counters.get(), state)


def sssp_owner_pack(state: SsspOwnerState, sent: list) -> list:
    """See :func:`gpipe.engine.compute.cpu_sssp_owners.sssp_owner_pack`: fresh device arrays per peer."""
    buckets = []
    for q, count in enumerate(sent):
        if count == 0:
            buckets.append(None)
            continue
        targets = cupy.empty(count, dtype=cupy.int64)
        dists = cupy.empty(count, dtype=cupy.float64)
        parents = cupy.empty(count, dtype=cupy.int64)
        _kernel("sssp_owner_pack")(
            cuda.grid(count), (cuda.BLOCK,),
            (cupy.int64(state.offset), cupy.int64(state.n_local), state.outbox,
             cupy.int64(state.outbox_start_host[q]), cupy.int64(count), state.sent_best,
             state.send_parent, state.queued, targets, dists, parents),
        )
        buckets.append((targets, dists, parents))
    state.counters[RELAXED:] = 0  # RELAXED, REPEATED and every SENT + q
    state.counters[SENT_MIN] = INF_BITS
    return buckets


def sssp_owner_merge(state: SsspOwnerState, buckets: list, threshold) -> None:
    """See :func:`gpipe.engine.compute.cpu_sssp_owners.sssp_owner_merge`."""
    if not buckets:
        return
    targets, dists, parents = (
        cupy.concatenate(c) if len(buckets) > 1 else cupy.ascontiguousarray(c[0]) for c in zip(*buckets)
    )
    m = int(targets.size)
    lowered = 2 * state.calls + 1
    state.calls += 1
    grid = cuda.grid(m)
    _kernel("sssp_owner_merge_lower")(
        grid, (cuda.BLOCK,),
        (cupy.int64(state.offset), targets, dists, cupy.int64(m), state.dist, state.stamp,
         cupy.int32(lowered)),
    )
    _kernel("sssp_owner_merge_settle")(
        grid, (cuda.BLOCK,),
        (cupy.int64(state.offset), targets, dists, parents, cupy.int64(m), state.dist,
         state.parent, state.stamp, cupy.int32(lowered), cupy.float64(state.local_threshold),
         cupy.float64(threshold), cupy.int32(state.fill_round), state.near_mark, state.mid_mark,
         state.far_mark, state.near[state.near_fill], state.mid[state.mid_fill],
         cupy.int32(MID + state.mid_fill), state.far[state.far_fill],
         cupy.int32(FAR + state.far_fill), state.counters),
    )


def sssp_owner_advance(state: SsspOwnerState, old_threshold, new_threshold) -> None:
    """See :func:`gpipe.engine.compute.cpu_sssp_owners.sssp_owner_advance`."""
    fresh = 1 - state.far_fill
    state.counters[FAR + fresh] = 0
    state.counters[FAR_MIN] = INF_BITS
    _split(state, state.far[state.far_fill], FAR + state.far_fill, state.far_mark, old_threshold,
           state.local_threshold, new_threshold, state.mid[state.mid_fill], MID + state.mid_fill,
           state.far[fresh], FAR + fresh)
    state.far_fill = fresh


def sssp_owners_delta(mean_weight, max_weight, mean_degree):
    """``(local bucket width, first exchange window)``: both the near-far band of the one-owner
    kernel, WINDOW_EDGES * mean weight / mean degree (+inf when every weight is 0)."""
    del max_weight
    if not mean_weight > 0.0:
        return float("inf"), float("inf")
    width = WINDOW_EDGES * mean_weight / max(1.0, mean_degree)
    return width, width
