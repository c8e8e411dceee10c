"""``gpipe demo``: the whole path on a synthetic graph, from edge generation to Parquet results.

Generates a Graph500 Kronecker graph with weights, writes it as Parquet, starts a local Dask
cluster (CUDA when a GPU and the cuda13 extra are present), runs BFS and SSSP from the
highest-degree vertex, writes both results atomically and prints a summary with the time of
each step and the dashboard link. Importing this module starts nothing.
"""

from __future__ import annotations

import math
import os
import sys
import time
from pathlib import Path

import numpy as np

__all__ = ["run_demo"]


def run_demo(scale=16, out="out/demo", *, cpu=False, edge_factor=16, seed=0, n_workers=None, file=None,
             keep_open=False):
    """Run the demo and return its summary.

    Parameters
    ----------
    scale : int, optional (default=16)
        Kronecker scale: ``2**scale`` vertex ids, ``edge_factor * 2**scale`` edges.
    out : str or os.PathLike, optional (default="out/demo")
        Folder for ``edges/``, ``bfs/`` and ``sssp/`` (Parquet directories, replaced if present).
    cpu : bool, optional (default=False)
        Use a CPU cluster and pandas partitions even where a GPU is available.
    edge_factor, seed : int, optional
        Passed to :func:`gpipe.generators.kronecker_edges`.
    n_workers : int, optional
        Workers of the local cluster; default one per GPU or per CPU core.
    file : file-like, optional
        Where the summary is printed; default ``sys.stdout``.
    keep_open : bool, optional (default=False)
        After the summary, keep the cluster (and its dashboard) up until Enter is pressed.

    Returns
    -------
    dict
        ``scale``, ``edges``, ``vertices`` (ids that occur in an edge), ``source``,
        ``cluster`` (``"cpu"`` or ``"cuda"``), ``workers``, ``directed`` (False: traversed
        as undirected, as the summary says on each traversal's line), ``dashboard`` (link or ""),
        ``seconds`` (per step), ``paths`` (``edges``, ``bfs``, ``sssp``), and for ``bfs`` and
        ``sssp`` a dict of ``reached`` and ``max_distance``.

    Notes
    -----
    The graph is traversed as undirected, as in Graph500. Starts worker processes: call it
    from a ``if __name__ == "__main__":`` block (``gpipe demo`` does).
    """
    import dask.dataframe as dd
    from distributed import wait

    import gpipe
    from gpipe.cluster import disconnect, local_cluster_kind, silenced_logging, start_local_cluster
    from gpipe.engine.interrupts import phase
    from gpipe.generators import kronecker_edges
    from gpipe.io.write import check_writable, summarize, write_parquet

    file = sys.stdout if file is None else file
    out = Path(out)
    paths = {name: out / name for name in ("edges", "bfs", "sssp")}
    for path in paths.values():
        check_writable(path)  # before the work
    seconds = {}
    clock = _Clock(seconds)

    with clock("generate"):
        edges = kronecker_edges(scale, edge_factor, seed=seed, weights=True)
        source, degree = demo_hub(edges)
    with clock("write edges"):
        # Before the cluster starts: the frame is in this process, the threaded scheduler writes it.
        parts = max(1, min(os.cpu_count() or 1, math.ceil(len(edges) / 65536)))
        write_parquet(dd.from_pandas(edges, npartitions=parts), paths["edges"], overwrite=True)

    kind = local_cluster_kind("cpu" if cpu else "auto")
    with clock("start cluster"):
        cluster, client = start_local_cluster(kind, n_workers=n_workers)
    try:
        workers = len(client.nthreads())
        dashboard = client.dashboard_link or ""
        traversals = f", gpipe traversals {gpipe.dashboard_link(client)}" if dashboard else ""
        print(f"gpipe demo: {kind} cluster of {workers} workers, dashboard "
              f"{dashboard or 'off (the dashboard needs bokeh)'}{traversals}", file=file, flush=True)
        phase("read")
        with clock("read + build"):
            frame = gpipe.read_edges(paths["edges"], weight="weight", backend="gpu" if kind == "cuda" else "cpu")
            graph = gpipe.Graph.from_edges(frame, directed=False, weight="weight")
        results = {}
        for name, traverse in (("bfs", graph.bfs), ("sssp", graph.sssp)):
            phase("traverse")
            with clock(name):
                result = traverse(source).persist()
                wait(result)
            with clock(f"write {name}"):
                write_parquet(result, paths[name], overwrite=True)
            results[name] = summarize(result)
            del result
        vertices = results["bfs"]["vertices"]
        summary = {
            "scale": scale,
            "edges": len(edges),
            "vertices": vertices,
            "source": source,
            "cluster": kind,
            "workers": workers,
            "directed": False,
            "dashboard": dashboard,
            "seconds": seconds,
            "paths": {name: str(path.absolute()) for name, path in paths.items()},
            **results,
        }
        _print_summary(summary, degree, edge_factor, file)
        if keep_open:
            print(f"The cluster stays up for its dashboard ({dashboard or 'off'}); press Enter to close it.",
                  file=file, flush=True)
            input()
    finally:
        interrupted = isinstance(sys.exc_info()[1], KeyboardInterrupt)  # Ctrl-C
        with silenced_logging(interrupted):
            disconnect(client, quietly=interrupted)  # a Ctrl-C meanwhile waits for the workers
    return summary


def demo_hub(edges):
    """The vertex with the most edges (self-loops not counted) and its degree."""
    src = edges["src"].to_numpy()
    dst = edges["dst"].to_numpy()
    keep = src != dst
    degree = np.bincount(np.concatenate([src[keep], dst[keep]]))
    hub = int(np.argmax(degree))
    return hub, int(degree[hub])


def _print_summary(summary, degree, edge_factor, file):
    def say(text=""):
        print(text, file=file)

    say(f"gpipe demo: Kronecker graph, scale {summary['scale']}, edge factor {edge_factor}, weights 1..255")
    say(f"  vertices   {summary['vertices']:,} with edges (of {2 ** summary['scale']:,} ids)")
    say(f"  edges      {summary['edges']:,} (traversed as undirected)")
    say(f"  source     {summary['source']} (highest degree: {degree:,})")
    say(f"  cluster    {summary['cluster']}, {summary['workers']} workers")
    say(f"  dashboard  {summary['dashboard'] or 'off (the dashboard needs bokeh)'}")
    for name in ("bfs", "sssp"):
        result = summary[name]
        say(
            f"  {name:<10} reached {result['reached']:,} vertices (undirected), "
            f"max distance {_number(result['max_distance'])} -> {summary['paths'][name]}"
        )
    say("  step            seconds")
    for step, seconds in summary["seconds"].items():
        say(f"    {step:<14}{seconds:8.2f}")
    say(f"  edges      {summary['paths']['edges']}")


def _number(value):
    return "-" if value is None else f"{value:g}"


class _Clock:
    """``with clock("step"):`` records the step's wall time in the shared dict."""

    def __init__(self, seconds):
        self.seconds = seconds

    def __call__(self, step):
        self.step = step
        return self

    def __enter__(self):
        self.start = time.perf_counter()

    def __exit__(self, *exc):
        self.seconds[self.step] = time.perf_counter() - self.start
