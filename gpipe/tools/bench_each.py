"""``gpipe bench --each N``: time the per-source queries (``Graph.bfs_each`` / ``sssp_each``).

What is timed (``time.perf_counter`` here, in the client's process):

* **Total**: ``graph.bfs_each(sources[, targets=...]).compute()`` (or ``sssp_each``) for ``N``
  random sources (distinct vertices with an edge), from the call to the computed frame: the
  batches' traversals, their rows, and Dask bringing the rows here; the median of ``REPEAT``
  runs after a first one (compilation, memory touched for the first time), which is reported
  apart (``first_s``). **Per source** is total / N.
* **SciPy** (CPU, ``--compare-scipy``): ``scipy.sparse.csgraph.shortest_path(csr,
  unweighted=True, indices=sources)`` (BFS; ``method="D"`` for SSSP) on the same graph's CSR,
  and the ratio SciPy / gpipe. The first source's row is compared with gpipe's distances.
* **Streamed** (``--each-parquet``): ``bfs_each(sources, depth_limit=2).to_parquet(dir)``;
  rows per second and the peak memory while it ran: the growth of CuPy's memory pool on GPU
  (as in gpipe/tools/bench.py), the growth of the resident set on CPU (sampled every 10 ms; on a
  cluster, of every worker, summed).
* **Replicas** (``--workers K`` with K >= 2): the total with the graph copied to every worker
  that has room against the same graph built with ``replicas=1``, the throughput ratio, and
  whether the two frames are identical; and, from Dask's task stream, on how many workers the
  batches ran and the span of their computing (first start to last end), each way: the
  batches' part of the call, without the rows' gathering into one frame.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import tempfile
import threading
import time

import numpy as np

from gpipe import generators
from gpipe.engine import backend as backends
from gpipe.engine.batches import NAMES
from gpipe.graph import Graph
from gpipe.tools import bench_clusters, bench_memory

REPEAT = 3  # timed runs of each query after a first one (compilation, first-touch memory); median
RSS_SAMPLE_S = 0.01
# CPU, kron20, 64 sources of bfs_each: at least this many times faster than SciPy (issue 16).
SCIPY_RATIO_TARGET = 100.0
# bfs_each over every replica against one, by replica count: issue 16 (2), issue 22 (4).
REPLICA_RATIO_TARGETS = {2: 1.4, 4: 3.0}
BATCH_NAMES = tuple(NAMES.values())  # the batch tasks' names, as the dashboard shows them


def run(*, scale, each, targets=0, algo="bfs", backend="auto", workers=0, seed=0,
        compare_scipy=False, parquet=False, tmpdir=None) -> dict:
    """Build a Kronecker graph of ``2**scale`` vertex ids and time ``each`` sources' queries.

    Parameters
    ----------
    scale : int
        Graph500 Kronecker graph (undirected; weights 1..255 for SSSP).
    each : int
        Sources per query.
    targets : int
        With M > 0, a distance table to M random vertices instead of every reached vertex.
    algo : {"bfs", "sssp", "both"}
    backend : {"auto", "cpu", "gpu"}
    workers : int
        0: no Dask client. K >= 1: a local cluster of K workers; with K >= 2 also the replicas
        comparison.
    compare_scipy : bool
        CPU: time SciPy's ``shortest_path`` on the same sources.
    parquet : bool
        Also time ``bfs_each(depth_limit=2).to_parquet``.

    Returns
    -------
    dict
        ``graph``, ``rows`` (one per timed query) and the settings.
    """
    backend_name = backends.resolve(backend)
    # dask-cuda cannot put two workers on one GPU: with one visible, plain workers share it.
    shared_gpu = backend_name == backends.GPU and workers >= 2 and bench_clusters.visible_gpus() == 1
    algos = ["bfs", "sssp"] if algo == "both" else [algo]
    weighted = "sssp" in algos
    report = {"scale": scale, "each": each, "targets": targets, "backend": backend_name,
              "workers": workers, "shared_gpu": shared_gpu, "rows": []}
    with bench_clusters.cluster(backend_name, workers, shared_gpu) as client:
        xp = "cupy" if backend_name == backends.GPU else "numpy"
        edges = generators.kronecker_edges(scale, seed=seed, weights=weighted, xp=xp)
        started = time.perf_counter()
        graph = Graph.from_edges(edges, directed=False, weight="weight" if weighted else None)
        report["build_s"] = time.perf_counter() - started
        report["graph"] = repr(graph)
        report["replicas"] = graph.replicas
        rng = np.random.default_rng(seed + 1)
        vertices = _vertices(edges)
        sources = rng.choice(vertices, size=min(each, len(vertices)), replace=False)
        chosen_targets = rng.choice(vertices, size=targets, replace=True) if targets else None
        csr = _host_csr(graph) if compare_scipy and backend_name == backends.CPU else None
        for kind in algos:
            report["rows"].append(_time_query(graph, kind, sources, chosen_targets, csr))
        if parquet:
            report["rows"].append(_time_parquet(graph, sources, client, tmpdir))
        if client is not None and workers >= 2:
            single = Graph.from_edges(edges, directed=False, weight="weight" if weighted else None,
                                      replicas=1)
            for kind in algos:
                report["rows"].append(_compare_replicas(graph, single, kind, sources, chosen_targets))
    return report


def _vertices(edges) -> np.ndarray:
    """The distinct vertices with an edge, on the host (input ids: kept as they are)."""
    src = edges["src"]
    values = src.to_numpy() if hasattr(src, "to_numpy") else src.values
    if hasattr(values, "get"):
        values = values.get()
    return np.unique(np.asarray(values))


def _query(graph, kind, sources, targets):
    if kind == "bfs":
        return graph.bfs_each(sources, targets=targets)
    return graph.sssp_each(sources, targets=targets)


def _time_query(graph, kind, sources, targets, csr, repeat=REPEAT) -> dict:
    warm_started = time.perf_counter()
    _query(graph, kind, sources, targets).compute()
    warm = time.perf_counter() - warm_started
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        frame = _query(graph, kind, sources, targets).compute()
        times.append(time.perf_counter() - started)
    total = statistics.median(times)
    row = {"query": f"{kind}_each", "sources": len(sources), "rows": len(frame), "total_s": total,
           "times_s": times, "first_s": warm, "per_source_ms": 1e3 * total / len(sources)}
    if csr is not None:
        row.update(_scipy(csr, kind, sources, frame, total, targets is None))
    return row


def _scipy(csr, kind, sources, frame, total, whole) -> dict:
    from scipy.sparse.csgraph import shortest_path

    started = time.perf_counter()
    if kind == "bfs":
        table = shortest_path(csr, unweighted=True, indices=sources)
    else:
        table = shortest_path(csr, method="D", indices=sources)
    seconds = time.perf_counter() - started
    agrees = None
    if whole:
        first = frame[frame["source"] == sources[0]]
        got = np.full(table.shape[1], np.inf)
        got[_to_host(first["vertex"])] = _to_host(first["distance"]).astype(np.float64)
        agrees = bool(np.array_equal(got, table[0]))
    return {"scipy_s": seconds, "scipy_ratio": seconds / total, "scipy_agrees": agrees}


def _to_host(series) -> np.ndarray:
    values = series.to_numpy() if not hasattr(series, "to_cupy") else series.to_cupy().get()
    return np.asarray(values)


def _time_parquet(graph, sources, client, tmpdir) -> dict:
    """``bfs_each(depth_limit=2).to_parquet``: rows per second and peak memory."""
    import dask.dataframe as dd

    with tempfile.TemporaryDirectory(dir=tmpdir) as directory:
        path = os.path.join(directory, "each")
        mark = bench_memory.pool_mark_all(graph.backend, client)
        with _rss_peak(client) as peak:
            started = time.perf_counter()
            graph.bfs_each(sources, depth_limit=2).to_parquet(path)
            seconds = time.perf_counter() - started
        rows = len(dd.read_parquet(path))
        device_peak = bench_memory.pool_peak_all(graph, mark)
    return {"query": "bfs_each depth_limit=2 to_parquet", "sources": len(sources), "rows": rows,
            "total_s": seconds, "rows_per_s": rows / seconds, "per_source_ms": 1e3 * seconds / len(sources),
            "peak_bytes": device_peak if device_peak is not None else peak["bytes"],
            "peak_kind": "device (CuPy pool)" if device_peak is not None else "host RSS growth"}


@contextlib.contextmanager
def _rss_peak(client):
    """The growth of the resident set over the block: this process's, or every worker's summed."""
    if client is not None:
        client.run(_start_rss_sampler)
        found = {"bytes": 0}
        try:
            yield found
        finally:
            found["bytes"] = int(sum(client.run(_stop_rss_sampler).values()))
        return
    _start_rss_sampler()
    found = {"bytes": 0}
    try:
        yield found
    finally:
        found["bytes"] = _stop_rss_sampler()


_SAMPLER = {}


def _start_rss_sampler():
    import psutil

    process = psutil.Process()
    state = {"base": process.memory_info().rss, "peak": 0, "stop": threading.Event()}

    def sample():
        while not state["stop"].is_set():
            state["peak"] = max(state["peak"], process.memory_info().rss)
            state["stop"].wait(RSS_SAMPLE_S)

    state["thread"] = threading.Thread(target=sample, daemon=True)
    state["thread"].start()
    _SAMPLER["state"] = state


def _stop_rss_sampler() -> int:
    state = _SAMPLER.pop("state")
    state["stop"].set()
    state["thread"].join()
    return max(0, state["peak"] - state["base"])


def _compare_replicas(graph, single, kind, sources, targets) -> dict:
    """The same query on the graph with every replica and with one: totals, ratio, equality."""
    from dask.utils import key_split
    from distributed import get_task_stream

    times, frames, ran_on = {"replicas": [], "one": []}, {}, {"replicas": set(), "one": set()}
    batch_spans = {"replicas": [], "one": []}
    client = graph.engine.executor.client
    for name, g in (("replicas", graph), ("one", single)):
        _query(g, kind, sources, targets).compute()  # every worker compiles or loads its kernels
    for _ in range(REPEAT):  # alternately, so that a busy spell of the machine hits both
        for name, g in (("replicas", graph), ("one", single)):
            with get_task_stream(client) as stream:
                started = time.perf_counter()
                frames[name] = _query(g, kind, sources, targets).compute()
                times[name].append(time.perf_counter() - started)
            batches = [t for t in stream.data if key_split(t["key"]) in BATCH_NAMES]
            ran_on[name] |= {t["worker"] for t in batches}
            batch_spans[name].append(_compute_span(batches))
    times = {name: statistics.median(values) for name, values in times.items()}
    spans = {name: statistics.median(values) for name, values in batch_spans.items()}
    identical = frames["replicas"].reset_index(drop=True).equals(frames["one"].reset_index(drop=True))
    # Dask's work stealing may copy a small graph to an idle worker: then "one" is not one.
    return {"query": f"{kind}_each replicas={graph.replicas} vs 1", "sources": len(sources),
            "rows": len(frames["replicas"]), "total_s": times["replicas"], "one_replica_s": times["one"],
            "per_source_ms": 1e3 * times["replicas"] / len(sources), "replicas": graph.replicas,
            "replica_ratio": times["one"] / times["replicas"], "identical": identical,
            "batch_workers": {name: len(workers) for name, workers in ran_on.items()},
            "batch_span_s": spans}


def _compute_span(tasks) -> float:
    """Seconds from the first of ``tasks`` (task stream records) starting to compute to the
    last one ending: the batches' share of a call, without its making and its gathering."""
    spans = [s for t in tasks for s in t["startstops"] if s["action"] == "compute"]
    return max(s["stop"] for s in spans) - min(s["start"] for s in spans) if spans else 0.0


def _host_csr(graph):
    """The one-owner graph's CSR as a SciPy matrix on the host (weights, or ones)."""
    import scipy.sparse as sp

    indptr, indices, weights = graph.engine.on_owners(_csr_arrays)[0]
    n = len(indptr) - 1
    data = weights if weights is not None else np.ones(len(indices), dtype=np.float32)
    return sp.csr_matrix((data, indices, indptr), shape=(n, n))


def _csr_arrays(part):
    be = backends.get(part.backend)
    weights = None if part.weights is None else be.to_host(part.weights)
    return be.to_host(part.indptr), be.to_host(part.indices), weights


def format_table(report) -> str:
    """The report as a text table, with the issue's targets where they apply."""
    lines = [f"gpipe bench --each {report['each']}: kron{report['scale']} {report['graph']}, "
             f"{report['backend']}, workers={report['workers']}, replicas={report['replicas']}, "
             f"build {report['build_s']:.2f} s"]
    for row in report["rows"]:
        text = (f"  {row['query']:<40} sources={row['sources']:<6} rows={row['rows']:<11,} "
                f"total={row['total_s']:.3f} s  per source={row['per_source_ms']:.2f} ms")
        if "scipy_s" in row:
            target = ""
            if row["query"] == "bfs_each" and report["backend"] == "cpu":
                met = "met" if row["scipy_ratio"] >= SCIPY_RATIO_TARGET else "MISSED"
                target = f" (target >= {SCIPY_RATIO_TARGET:g}x: {met})"
            text += (f"\n    SciPy shortest_path {row['scipy_s']:.2f} s: gpipe {row['scipy_ratio']:.1f}x "
                     f"faster{target}; first source agrees: {row['scipy_agrees']}")
        if "rows_per_s" in row:
            text += (f"\n    {row['rows_per_s']:,.0f} rows/s, peak {row['peak_bytes'] / 2**20:,.0f} MiB "
                     f"({row['peak_kind']})")
        if "replica_ratio" in row:
            target = REPLICA_RATIO_TARGETS.get(row.get("replicas"))
            met = "" if target is None else (
                f" (target >= {target:g}x: "
                f"{'met' if row['replica_ratio'] >= target and row['identical'] else 'MISSED'})")
            ran = row.get("batch_workers", {})
            text += (f"\n    one replica {row['one_replica_s']:.3f} s: throughput x{row['replica_ratio']:.2f} "
                     f"with replicas{met}; identical: {row['identical']}; batches ran on "
                     f"{ran.get('replicas', '?')} / {ran.get('one', '?')} workers")
            span = row.get("batch_span_s")
            if span and span["replicas"] > 0:
                text += (f"\n    the batches alone (first start to last end): {span['replicas']:.3f} s / "
                         f"{span['one']:.3f} s: x{span['one'] / span['replicas']:.2f}")
        lines.append(text)
    return "\n".join(lines)


def main(args) -> int:
    """``gpipe bench --each N``: run, print the table, write the JSON report if asked."""
    import json

    if args.scale is None:
        from gpipe.errors import InputError

        raise InputError("gpipe bench --each needs --scale (a generated Kronecker graph)")
    if args.json:
        from gpipe.io.write import check_writable

        check_writable(args.json)  # before any work, as gpipe bench does
    report = run(scale=args.scale, each=args.each, targets=args.targets or 0, algo=args.algo,
                 backend=args.backend, workers=args.workers, seed=args.seed,
                 compare_scipy=args.compare_scipy, parquet=args.each_parquet, tmpdir=args.tmpdir)
    print(format_table(report), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1, default=str)
    return 0
