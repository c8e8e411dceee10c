"""Time ``Graph.from_edges`` of one edge list handed over in each form gpipe takes.

``python -m gpipe.tools.bench_inputs --scale 20 [--backend cpu|gpu] [--repeat 5] [--forms ...]``
generates a Graph500 Kronecker graph (``gpipe.generators``, undirected, as ``gpipe bench``
builds it) and times its build from each *form* of input, in turns (one build of each form
per round, so that a machine whose load drifts slows every form alike), then prints the
first, median and fastest of each (Dask keeps what it worked out about a frame while a
collection of it lives, so a ``dd.from_pandas`` frame's first build can cost more than the
next) and checks that every form built the same graph (a BFS from the same source gives the
same distances, and each form's parents form a valid BFS tree of the edges: where a vertex has
several parents one level up, which one a GPU run keeps is whichever claim won):

* ``frame``: the pandas (cuDF) DataFrame itself;
* ``from_pandas``, ``from_pandas_sorted``: ``dd.from_pandas(frame, npartitions=P, sort=False)``
  and ``sort=True``, made before the clock starts (Dask hashes the frame to name it then);
* ``delayed``: a Dask DataFrame of the frame's row slices as named delayed objects, which is
  how ``gpipe bench`` hands over its generated edges (the build computes its partitions);
* ``parquet``: ``gpipe.read_edges`` of P Parquet files written first (the read is timed as
  part of the build).

Without a Dask client the builds run in this process; ``--workers K`` times them on a local
cluster of K workers instead. Kernels are compiled by a small build before any clock starts.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid

FORMS = ("frame", "from_pandas", "from_pandas_sorted", "delayed", "parquet")


def edge_forms(frame, forms, npartitions, tmpdir):
    """``{form: () -> the edges in that form}`` for ``frame``; Parquet files are written now."""
    import dask
    import dask.dataframe as dd

    import gpipe

    bounds = [len(frame) * i // npartitions for i in range(npartitions + 1)]
    makers = {
        "frame": lambda: frame,
        "from_pandas": lambda: dd.from_pandas(frame, npartitions=npartitions, sort=False),
        "from_pandas_sorted": lambda: dd.from_pandas(frame, npartitions=npartitions, sort=True),
        "delayed": lambda: dd.from_delayed(
            [dask.delayed(frame.iloc[lo:hi], name=f"edges-{uuid.uuid4().hex}")
             for lo, hi in zip(bounds[:-1], bounds[1:])],
            meta=frame.iloc[:0], verify_meta=False),
    }
    if "parquet" in forms:
        dd.from_pandas(frame, npartitions=npartitions, sort=False).to_parquet(tmpdir, write_index=False)
        backend = "gpu" if "cudf" in type(frame).__module__ else "cpu"
        makers["parquet"] = lambda: gpipe.read_edges(tmpdir, backend=backend)
    return {form: makers[form] for form in forms}


def time_builds(frame, forms=FORMS, repeat=5, npartitions=4, source=None) -> dict:
    """Per form: the seconds of each of ``repeat`` builds, and the BFS of its last graph from
    ``source`` (pandas, sorted by vertex) to compare the forms with."""
    import gpipe
    from gpipe import generators

    gpipe.Graph.from_edges(generators.kronecker_edges(6, xp=_xp(frame)), directed=False)  # compile
    with tempfile.TemporaryDirectory() as tmpdir:
        makers = edge_forms(frame, forms, npartitions, tmpdir)
        seconds = {form: [] for form in forms}
        graphs = {}
        for _ in range(repeat):
            for form, make in makers.items():
                edges = make()
                start = time.perf_counter()
                graphs[form] = gpipe.Graph.from_edges(edges, directed=False)
                seconds[form].append(time.perf_counter() - start)
                del edges
        source = int(frame["src"].iloc[0]) if source is None else source
        results = {form: _pandas(graph.bfs(source).compute()) for form, graph in graphs.items()}
    return {form: {"seconds": seconds[form], "bfs": results[form], "source": source} for form in forms}


def same_bfs(frame, reference, result, source) -> bool:
    """Whether ``result`` has ``reference``'s distances and a valid BFS tree of ``frame``."""
    from gpipe.tools.verify import check_bfs_tree

    if not result["vertex"].equals(reference["vertex"]) or not result["distance"].equals(reference["distance"]):
        return False
    try:
        check_bfs_tree(frame, result, [source], directed=False)
    except AssertionError:
        return False
    return True


def _xp(frame):
    return "cupy" if "cudf" in type(frame).__module__ else "numpy"


def _pandas(result):
    if hasattr(result, "to_pandas"):
        result = result.to_pandas(nullable=True)
    return result.sort_values("vertex").reset_index(drop=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpipe.tools.bench_inputs", description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=int, default=20, help="Kronecker scale (default: 20)")
    parser.add_argument("--backend", default="cpu", choices=("cpu", "gpu"), help="default: cpu")
    parser.add_argument("--repeat", type=int, default=5, help="builds of each form (default: 5)")
    parser.add_argument("--partitions", type=int, default=4, metavar="P",
                        help="partitions of the Dask forms and Parquet files (default: 4)")
    parser.add_argument("--forms", nargs="+", default=list(FORMS), choices=FORMS)
    parser.add_argument("--workers", type=int, default=0, metavar="K",
                        help="run on a local cluster of K workers (default: in this process)")
    args = parser.parse_args(argv)

    from gpipe import generators

    frame = generators.kronecker_edges(args.scale, xp="cupy" if args.backend == "gpu" else "numpy")
    if args.workers:
        from gpipe.cluster import start_local_cluster

        kind = "cuda" if args.backend == "gpu" else "cpu"
        cluster, client = start_local_cluster(kind, n_workers=args.workers, dashboard=False)
        with cluster, client:
            timed = time_builds(frame, args.forms, args.repeat, args.partitions)
    else:
        timed = time_builds(frame, args.forms, args.repeat, args.partitions)
    print(f"kron{args.scale} ({len(frame):,} edges), {args.backend}, "
          f"{'in-process' if not args.workers else f'{args.workers} workers'}, {args.repeat} builds each")
    print(f"{'form':<20}{'first s':>10}{'median s':>10}{'min s':>10}")
    first = timed[args.forms[0]]["bfs"]
    verdicts = {form: same_bfs(frame, first, row["bfs"], row["source"]) for form, row in timed.items()}
    for form, row in timed.items():
        times = row["seconds"]
        same = "same BFS" if verdicts[form] else "BFS DIFFERS"
        print(f"{form:<20}{times[0]:>10.3f}{statistics.median(times):>10.3f}{min(times):>10.3f}  {same}")
    return 0 if all(verdicts.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
