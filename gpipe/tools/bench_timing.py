"""``gpipe bench``: the timed calls. The traversal where the partition lives (one owner) or the
driver up to the owners' frames (several), the public call (``.compute()``, ``len()``),
``Graph.path``, and the memory of ``parents=False``. What runs on a worker is module-level,
so that Dask can ship it.
"""

from __future__ import annotations

import dataclasses
import statistics
import time

import numpy as np

from gpipe.engine import backend as backends
from gpipe.engine import traverse
from gpipe.engine.result import BFS, SSSP
from gpipe.tools import bench_checks, bench_memory, verify


# Dask's client sends to the scheduler at most once per 10 ms (its BatchedSend): a query made
# within that window after the previous one's messages waits for it. Queries on a cluster are
# timed this long after the previous one ended, as queries typed or scheduled one at a time
# are; the JSON also has them back to back.
CLIENT_BATCH_S = 0.015


def lap(t0):
    return time.perf_counter() - t0


def time_one_owner(part, kind, chosen, repeat, negative_weights, keep_first, scipy_csr=None):
    """Time and validate a traversal from each of ``chosen`` (global ids) on a one-owner graph;
    with ``scipy_csr``, also time SciPy on it right after each source (``scipy_times``)."""
    xp = part.xp

    def traversal(source):
        if kind == BFS:
            return traverse.bfs_arrays(part, [source])
        return traverse.sssp_arrays(part, [source], negative_weights)

    t0 = time.perf_counter()
    dist, parent = traversal(int(chosen[0]))
    bench_memory.sync(part.backend)
    result = {"warmup_s": time.perf_counter() - t0, "sources": [], "first_dist": None}
    for i, source in enumerate(chosen):
        source = int(source)
        times = []
        dist = parent = None  # the previous arrays are not live while the next run is measured
        mark = bench_memory.pool_mark(part.backend)
        for _ in range(repeat):
            dist = parent = None
            t0 = time.perf_counter()
            dist, parent = traversal(source)
            bench_memory.sync(part.backend)
            times.append(time.perf_counter() - t0)
        peak = bench_memory.pool_peak(part.backend, mark)
        stats = verify.check_traversal_arrays(xp, part.indptr, part.indices, part.weights if kind == SSSP else None,
                                              dist, parent, [source])
        if i == 0 and keep_first:
            result["first_dist"] = backends.get(part.backend).to_host(dist)
        result["sources"].append(source_row(source, times, stats, peak, int(dist.nbytes + parent.nbytes)))
        if scipy_csr is not None:
            result.setdefault("scipy_times", []).append(bench_checks.time_scipy_source(scipy_csr, kind, source))
    return result


def source_row(source, times, stats, peak, array_bytes):
    seconds = statistics.median(times)
    return {
        "global": int(source),
        "times_s": times,
        "time_s": seconds,
        "reached": stats["reached"],
        "reached_edges": stats["reached_edges"],
        "max_distance": stats["max_distance"],
        "gteps": stats["reached_edges"] / 2 / seconds / 1e9,
        "traversal_device_bytes": peak,
        "result_array_bytes": array_bytes,
    }


def traverse_frames(graph, kind, global_sources):
    """What ``graph.bfs``/``graph.sssp`` runs, up to the per-owner result partitions, waited for."""
    return graph.engine.traverse(kind, global_sources).frames


def time_public(graph, kind, input_ids, repeat, finish=None, pause=False) -> list:
    """Per source, the median seconds of the public call: ``graph.bfs(s).compute()`` (``sssp``),
    or ``finish(graph.bfs(s))`` (``len``: on a cluster, what a query costs without bringing
    its rows to this process). With ``pause``, each query starts :data:`CLIENT_BATCH_S` after
    the previous one ended (not timed), as a query a user types does; without, back to back."""
    query = graph.bfs if kind == BFS else graph.sssp
    finish = finish or (lambda frame: frame.compute())
    finish(query(input_id(input_ids[0])))  # warm-up: the first query keeps each owner's result rows
    medians = []
    for source in input_ids:
        times = []
        for _ in range(repeat):
            if pause:
                time.sleep(CLIENT_BATCH_S)
            t0 = time.perf_counter()
            finish(query(input_id(source)))
            times.append(time.perf_counter() - t0)
        medians.append(statistics.median(times))
    return medians


def time_paths(graph, kind, input_ids, repeat, len_median_ms) -> dict:
    """Per source, the median seconds of ``graph.path(s, t)`` to a random vertex ``t`` that
    ``s`` reaches (searched as ``kind``: ``unweighted`` for BFS), and the path's hops; with
    the median over sources next to ``len()``'s of the same sources (``ratio`` = path / len)."""
    rng = np.random.default_rng(len(input_ids))
    query = graph.bfs if kind == BFS else graph.sssp
    unweighted = kind == BFS
    pairs, medians, hops = [], [], []
    for source in input_ids:
        source = input_id(source)
        found = query(source, parents=False)
        reached = found[found["distance"] > 0]["vertex"].compute()  # null distances compare False
        reached = (reached.to_pandas() if hasattr(reached, "to_pandas") else reached).to_numpy()
        target = input_id(reached[rng.integers(reached.size)])
        graph.path(source, target, unweighted=unweighted)  # untimed: the same work warmed
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            path = graph.path(source, target, unweighted=unweighted)
            times.append(time.perf_counter() - t0)
        pairs.append([source, target])
        hops.append(len(path) - 1)
        medians.append(statistics.median(times))
    median_ms = statistics.median(medians) * 1e3
    return {"pairs": pairs, "hops": hops, "times_s": medians, "median_ms": median_ms,
            "len_median_ms": len_median_ms, "ratio": median_ms / len_median_ms}


def parents_memory(part, kind, source, negative_weights) -> dict:
    """One traversal from ``source`` with parents and one without, on the owner: per run the
    pool's high-water (GPU, None on CPU) and the result arrays' bytes."""
    out = {}
    for label, parents in (("parents", True), ("no_parents", False)):
        mark = bench_memory.pool_mark(part.backend)
        if kind == BFS:
            dist, parent = traverse.bfs_arrays(part, [source], parents=parents)
        else:
            dist, parent = traverse.sssp_arrays(part, [source], negative_weights, parents=parents)
        bench_memory.sync(part.backend)
        out[label] = {"peak_device_bytes": bench_memory.pool_peak(part.backend, mark),
                      "array_bytes": int(dist.nbytes + (parent.nbytes if parent is not None else 0))}
        dist = parent = None
    return out


def owner_steps(graph, kind, global_sources):
    """Per owner, what one more (untimed) traversal did step by step: its
    :class:`gpipe.engine.owners.messages.OwnerSteps` as a dict, with ``steps`` (exchanges) and the
    seconds summed (``kernel_s``, ``wait_s``; step by step in ``kernel_s_steps``,
    ``wait_s_steps``, and ``device_s`` where the transport timed the device)."""
    return [dict(dataclasses.asdict(s), steps=sum(s.messages), kernel_s=sum(s.kernel_s),
                 wait_s=sum(s.wait_s), kernel_s_steps=s.kernel_s, wait_s_steps=s.wait_s)
            for s in graph.engine.traverse(kind, global_sources, steps=True).steps]


def frame_handles(graph, kind, input_id):
    """The public query's work, through the same driver: source lookup, traversal, wait."""
    return traverse_frames(graph, kind, graph.engine.global_ids(input_id))


def input_id(value):
    """One input id as a plain Python int or str (what a user passes as a source)."""
    return value if isinstance(value, str) else int(value)
