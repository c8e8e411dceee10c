"""``gpipe bench``: every result validated (trees against the graph, distances against SciPy)
and the SciPy reference times."""

from __future__ import annotations

import statistics
import time

import numpy as np

from gpipe.engine import backend as backends
from gpipe.engine.result import BFS, SSSP
from gpipe.engine.sources import OwnerIds
from gpipe.tools import verify


SCIPY_CHECK_MAX_VERTICES = 2**22


def check_owner(part, kind, dist, parent, global_sources):
    """Validate one owner's rows, given every distance and its own rows' parents (host arrays)."""
    xp = part.xp
    return verify.check_traversal_arrays(
        xp, part.indptr, part.indices, part.weights if kind == SSSP else None,
        xp.asarray(dist), xp.asarray(parent), global_sources, offset=part.offset, symmetric=True,
        parent_rows=True)


def check_frame(graph, kind, frame, global_sources):
    """Validate a computed result frame: to dense global arrays, then each owner checks its rows.

    Returns the summed statistics and the distances (host, dense, global ids).
    """
    frame = to_pandas(frame)
    engine = graph.engine
    built = engine.built
    n = built.layout.n
    parent_ids = frame["parent"]
    has_parent = parent_ids.notna().to_numpy()
    if built.renumbered:
        import pandas as pd

        ids, numbers = id_table(graph)
        ids = pd.Index(ids)
        position = numbers[ids.get_indexer(frame["vertex"].astype(object))]
        parent_global = numbers[ids.get_indexer(parent_ids.astype(object).where(has_parent, ids[0]))]
    else:
        vertex = frame["vertex"].to_numpy(dtype=np.int64)
        parent_input = parent_ids.to_numpy(dtype=np.int64, na_value=-1)
        position, parent_global = vertex, parent_input
    distance = frame["distance"]
    if kind == BFS:
        dist = np.full(n, -1, dtype=np.int32)
        dist[position] = distance.to_numpy(dtype=np.int64, na_value=-1)
    else:
        dist = np.full(n, np.inf)
        dist[position] = distance.to_numpy(dtype=np.float64, na_value=np.inf)
    parent = np.full(n, -1, dtype=np.int64)
    parent[position] = np.where(has_parent, parent_global, -1)
    # Each owner is sent the distances once and its own rows' parents, straight from here. As
    # task arguments they went through the scheduler, 12 bytes a vertex for every owner (3 GiB
    # each for kron28), and over UCX a worker left the cluster while they did (BENCHMARKS.md).
    ex, layout = engine.executor, built.layout
    checks = ex.gather([
        ex.submit(check_owner, part, kind, ex.put(dist, p),
                  ex.put(parent[layout.offset(p):layout.offset(p) + layout.size(p)], p),
                  np.asarray(global_sources), owner=p)
        for p, part in enumerate(built.parts)
    ])
    if any(c["cycles_unchecked"] for c in checks):
        verify.check_no_parent_cycle(np, parent, dist >= 0 if kind == BFS else np.isfinite(dist))
    stats = {"reached": sum(c["reached"] for c in checks),
             "reached_edges": sum(c["reached_edges"] for c in checks),
             "max_distance": max(c["max_distance"] for c in checks)}
    return stats, dist


def to_pandas(frame):
    """pandas from pandas or cuDF (nullable dtypes, so integer ids with nulls stay exact)."""
    return frame.to_pandas(nullable=True) if hasattr(frame, "to_pandas") else frame


def host_csr(graph):
    """The whole graph as one SciPy CSR matrix on the host (int32 indices where they fit)."""
    import scipy.sparse as sp

    pieces = graph.engine.on_owners(host_part)
    pieces.sort(key=lambda piece: piece[0])
    n = graph.engine.built.layout.n
    nnz = sum(len(piece[2]) for piece in pieces)
    index = np.int32 if max(n, nnz) < 2**31 else np.int64
    starts = np.cumsum([0] + [len(piece[2]) for piece in pieces])
    indptr = np.concatenate([piece[1][:-1] + start for piece, start in zip(pieces, starts)] + [[nnz]]).astype(index)
    indices = np.concatenate([piece[2] for piece in pieces]).astype(index, copy=False)
    if all(piece[3] is not None for piece in pieces):
        data = np.concatenate([piece[3] for piece in pieces])
    else:
        data = np.ones(nnz)
    return sp.csr_matrix((data, indices, indptr), shape=(n, n))


def time_scipy(csr, kind, chosen, times=None) -> dict:
    """SciPy's times from each of ``chosen`` (taken now unless ``times`` were taken already)."""
    paired = times is not None
    if not paired:
        times = [time_scipy_source(csr, kind, source) for source in chosen]
    function = "breadth_first_order" if kind == BFS else "dijkstra"
    return {"function": f"scipy.sparse.csgraph.{function}", "times_s": times,
            "median_s": statistics.median(times), "paired": paired}


def time_scipy_source(csr, kind, source) -> float:
    """Seconds of SciPy's BFS or Dijkstra, with predecessors, from ``source`` (a global id)."""
    from scipy.sparse.csgraph import breadth_first_order, dijkstra

    t0 = time.perf_counter()
    if kind == BFS:
        breadth_first_order(csr, int(source), directed=True, return_predecessors=True)
    else:
        dijkstra(csr, directed=True, indices=int(source), return_predecessors=True)
    return time.perf_counter() - t0


def check_with_scipy(csr, kind, source, dist):
    """The first source's distances must equal SciPy's (BFS: hop counts; unreached: inf)."""
    from scipy.sparse.csgraph import dijkstra

    expected = dijkstra(csr, directed=True, indices=source, unweighted=kind == BFS)
    ours = dist.astype(np.float64)
    if kind == BFS:
        ours[dist < 0] = np.inf
    same = np.isclose(ours, expected, rtol=1e-9, atol=0)
    if not same.all():
        v = int(np.argmin(same))
        raise AssertionError(f"vertex {v}: distance {ours[v]} from {source}, SciPy says {expected[v]}")


def input_ids(graph, global_ids) -> np.ndarray:
    """The input ids of ``global_ids`` (vertices of ``graph``)."""
    built = graph.engine.built
    if not built.renumbered:
        return np.asarray(global_ids, dtype=np.int64)
    ids, numbers = id_table(graph)
    every = np.empty(built.layout.n, dtype=ids.dtype)  # the unused ids of owners' ranges: never asked
    every[numbers] = ids
    return every[np.asarray(global_ids)]


def id_table(graph) -> tuple:
    """``(ids, numbers)`` on the host: every input id of a renumbered ``graph`` and its global
    id, gathered from the owners that hold them (a check's cost, not a query's)."""
    built, ex = graph.engine.built, graph.engine.executor
    if built.owner_ids is None:
        ids = ex.gather([ex.submit(host_ids, built.backend, built.ids)])[0]
        return ids, np.arange(len(ids))
    owned = ex.gather([ex.submit(host_ids, built.backend, handle, owner=q)
                       for q, handle in enumerate(built.owner_ids)])
    offsets = [built.layout.offset(q) for q in range(len(owned))]
    return (np.concatenate(owned),
            np.concatenate([offset + np.arange(len(ids)) for offset, ids in zip(offsets, owned)]))


def host_ids(backend_name, ids):
    """The sorted ids (or an owner's, :class:`~gpipe.engine.sources.OwnerIds`) on the host:
    integers, or Python strings in an object array."""
    if isinstance(ids, OwnerIds):
        ids = ids.values
    be = backends.get(backend_name)
    return be.strings.to_host(ids) if be.strings.holds(ids) else be.to_host(ids)


def host_part(part):
    be = backends.get(part.backend)
    weights = be.to_host(part.weights) if part.weights is not None else None
    return part.offset, be.to_host(part.indptr), be.to_host(part.indices), weights
