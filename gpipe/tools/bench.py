"""``gpipe bench``: time BFS and SSSP on a generated or given graph, and validate every result.

What is timed (all clocks are ``time.perf_counter`` in the process that runs the work):

* **Build**: ``Graph.from_edges`` (undirected, as Graph500 counts) from an edge frame that is
  already in memory (persisted), with the peak device memory of the build.
* **Per source, graph built**: one traversal with distances and parents from one source.
  With one owner (no Dask client, or one worker) the timed call is
  :func:`gpipe.engine.traverse.bfs_arrays` (direction-optimizing, since the graph is undirected) /
  :func:`~gpipe.engine.traverse.sssp_arrays` on the partition,
  run where the partition lives, followed by a device synchronization on GPU; a first
  traversal (compilation, caches) is timed apart as the warm-up. With several owners the
  timed call is the driver behind ``graph.bfs(...)``/``graph.sssp(...)`` up to the point where
  every owner's result partition exists (``executor.wait``; an owner's task ends when its
  frame is final on the device), not ``.compute()``.
* **Public call**, per source: ``graph.bfs(s).compute()`` / ``graph.sssp(s).compute()`` from
  the input id, what a user waits for (source lookup, traversal, result frame, Dask; the
  traversal's tasks end with a device synchronization on GPU); the median of ``repeat`` runs
  after one warm-up query. Also ``len(graph.bfs(s))``, the query without moving its rows. On a
  cluster each query starts ``bench_timing.CLIENT_BATCH_S`` after the last (Dask's client batches its
  messages to the scheduler 10 ms apart), and ``len()`` is also timed back to back.
* **Ids** (``ids``): a generated graph's ids are ``dense`` (``0..n-1``, kept as they are),
  ``sparse`` (``id * bench_graphs.SPARSE_STRIDE + bench_graphs.SPARSE_BASE``: renumbered through the sorted distinct ids)
  or ``string`` (each id's decimal text: renumbered the same way, with string lookups), so the
  cost of renumbering, and of strings, is reported beside the same graph's integer ids. The ids
  are changed before the build's clock starts.
* **End to end** (``end_to_end=True``): the edges are written to Parquet first (not timed),
  then ``read_edges`` + persist, build, traverse and ``.compute()`` of the result frame are
  timed as phases of one run; the first run in the process is "cold", the second "warm".

Figures: the median over sources of the per-source time (itself the median of ``repeat``
runs); **GTEPS** per source = (stored directed edges whose source vertex was reached) / 2 /
time, which for an undirected graph stored in both directions is Graph500's count of
traversed undirected edges (duplicates kept, self-loops dropped); the table shows the
harmonic mean over sources, as Graph500 does.

**Peak device memory** (GPU) is an approximation read from CuPy's default memory pool: the
pool's cached blocks are freed before the measured step (``free_all_blocks``), and after it
``total_bytes()`` minus the bytes that were live before is the step's high-water mark (the
pool keeps every block it has allocated until freed, so its size only grows; block rounding
and fragmentation can make it a little larger than the true peak, and memory taken outside
the pool, such as cuDF's through RMM, is not seen). A traversal's figure adds the graph's
own CSR bytes to it. On CPU the figure is the CSR's bytes plus the result arrays' bytes.

**Each owner's build peak** is sampled on its worker (:mod:`gpipe.tools.bench_memory`: device
memory on GPU, the resident set on CPU) above the memory in use when the build began, and
printed beside the sizing's estimate; on a cluster also phase by phase
(:mod:`gpipe.tools.bench_phases`: the highest sample while the split, the cuts, the buckets
received and the CSR build ran there).

Validation: every traversal's arrays are checked where they live by
:func:`gpipe.tools.verify.check_traversal_arrays` (vectorized, chunked over the edges, no host copy
of the graph); with several owners each owner checks its own rows against the computed
result. Where the graph has at most ``bench_checks.SCIPY_CHECK_MAX_VERTICES`` vertices, the first source's
distances are also compared with SciPy's (on the CPU, from a host copy of the CSR).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import operator
import os
import statistics
import sys
import tempfile
import time
import uuid

import numpy as np

from gpipe import generators
from gpipe.engine import backend as backends
from gpipe.engine import execution
from gpipe.errors import InputError
from gpipe.graph import Graph
from gpipe.io import read
from gpipe.tools import (bench_checks, bench_clusters, bench_graphs, bench_memory, bench_phases, bench_report,
                         bench_timing)
from gpipe.tools.bench_report import TARGETS, format_table  # noqa: F401 (the bench's own API)
from gpipe.engine.result import BFS, SSSP

__all__ = ["run", "main", "format_table", "TARGETS"]

log = logging.getLogger("gpipe.tools.bench")


def _kernels_only(function):
    """``function`` run with ``GPIPE_FIRST_QUERIES=numba`` (unless set otherwise), restored after:
    a benchmark times gpipe's kernels, never SciPy's stand-ins for them while they compile
    (gpipe/engine/compute/cpu_scipy.py); a cold cache's compiling is the warm-up's, as before, and
    workers started meanwhile inherit the setting."""

    @functools.wraps(function)
    def on_kernels(*args, **kwargs):
        before = os.environ.get("GPIPE_FIRST_QUERIES")
        os.environ.setdefault("GPIPE_FIRST_QUERIES", "numba")
        try:
            return function(*args, **kwargs)
        finally:
            if before is None:
                os.environ.pop("GPIPE_FIRST_QUERIES", None)

    return on_kernels


@_kernels_only
def run(*, scale=None, grid=None, edges=None, src="src", dst="dst", weight=None, weights=False,
        weight_dtype=None, ids="dense", seed=0, algo="bfs", sources=4, repeat=1, backend="auto", workers=0, partitions=None,
        shared_gpu=False, protocol="auto", compare_scipy=False, end_to_end=False, build_repeat=1,
        scipy_check=True, tmpdir=None, command=None, paths=False) -> dict:
    """Build one graph, time BFS and/or SSSP from several sources, validate, and report.

    Parameters
    ----------
    scale : int, optional
        Graph500 Kronecker graph of ``2**scale`` vertex ids and ``16 * 2**scale`` edges
        (A=0.57, B=0.19, C=0.19), from :func:`gpipe.generators.kronecker_edges`.
    grid : int, optional
        3-D grid of ``grid**3`` vertices (degree 6), :func:`gpipe.generators.grid_edges`; the
        first source is its centre.
    edges : str, optional
        Parquet edge list (file, directory or glob), read with :func:`gpipe.read_edges`.
        Exactly one of `scale`, `grid` and `edges` is given.
    src, dst, weight : str
        Columns of `edges` (`weight` may be None).
    weights : bool
        Add integer weights 1..255 (generated graphs always get them when SSSP runs; for
        `edges` without a `weight` column they are drawn per partition).
    weight_dtype : {None, "auto", "float32", "float64"}
        The width the graph stores its weights in (``Graph.from_edges(weight_dtype=...)``).
    ids : {"dense", "sparse", "string"}
        A generated graph's vertex ids: as generated (``0..n-1``), spread out (sparse int64,
        renumbered by the build), or as strings (each id's decimal text). Parquet edges keep
        their own.
    seed : int
        Seed of the generator and of the choice of sources.
    algo : {"bfs", "sssp", "both"}
    sources : int
        Number of sources, drawn at random among the non-isolated vertices (grid: the centre,
        then random ones). Each is traversed on its own.
    repeat : int
        Timed runs per source; its time is their median.
    backend : {"auto", "cpu", "gpu"}
        GPU generates, stores and traverses the graph on the device (CuPy/cuDF).
    workers : int
        0: no Dask client, everything in this process. K > 0: a local cluster of K workers
        (:func:`gpipe.cluster.start_local_cluster`, CUDA workers on GPU), closed at the end.
    partitions : int, optional
        Owners of the graph (``Graph.from_edges(partitions=...)``); None: gpipe's own choice,
        the fewest workers whose memory holds the graph.
    shared_gpu : bool
        With `workers` on GPU: plain Dask worker processes that all use GPU 0 instead of
        dask-cuda's one worker per GPU, so that several owners can be timed on one GPU (always
        so on a machine with one GPU).
    protocol : {"auto", "tcp", "ucx"}
        Transport between GPU workers (:func:`gpipe.cluster.cuda_protocol`: ``auto`` is UCX
        where distributed-ucxx is installed, as on a cluster that gpipe starts, but TCP for
        workers sharing one GPU); CPU workers use TCP. ``main`` also takes ``both``: the whole
        run once over each.
    compare_scipy : bool
        Also time ``scipy.sparse.csgraph.breadth_first_order`` / ``dijkstra`` (with
        predecessors) from the same sources on a host copy of the same CSR. Without workers
        SciPy runs right after each source's own runs (paired); with workers, after all.
    end_to_end : bool
        Write the edges to Parquet (not timed), then time read + persist, build, traverse
        and ``.compute()``, twice (cold, then warm), per algorithm, from the first source.
    build_repeat : int
        Builds of the graph from the persisted edge frame, each timed (the last is kept).
    scipy_check : bool
        Compare the first source's distances with SciPy's where the graph has at most
        ``2**22`` vertices.
    tmpdir : str, optional
        Where the end-to-end Parquet files go (default: the system's temporary directory).
    paths : bool
        Per algorithm, also time ``Graph.path(s, t)`` from each source to a random vertex it
        reaches (drawn from an untimed traversal), next to ``len(graph.bfs(s))`` (``sssp``) of
        the same sources (``result["path"]``); and on a one-owner graph the traversal's
        memory with parents and without (``result["parents_memory"]``: CuPy pool high-water
        on the GPU, result arrays' bytes on both).
    command : str, optional
        The command line to record (default: the ``gpipe bench`` command with these options).

    Returns
    -------
    dict
        ``machine``, ``command``, ``options``, ``graph`` (name, vertices, directed edges,
        bytes), ``build`` (times and memory), ``results`` (per algorithm: warm-up, every
        per-source time, reached edges, GTEPS, memory, the median, SciPy's times and ratio)
        and, when asked, ``end_to_end``. Every traversal has been validated when it returns.

    Raises
    ------
    InputError
        Bad options (no graph or several, an unknown algorithm, SSSP without weights, ...).
    AssertionError
        A traversal's result failed validation (the message names the vertex).

    Examples
    --------
    >>> report = run(scale=8, algo="both", sources=2)  # doctest: +SKIP
    >>> sorted(report["results"][0])[:3]  # doctest: +SKIP
    ['algo', 'backend', 'gteps']
    """
    if sum(x is not None for x in (scale, grid, edges)) != 1:
        raise InputError("give exactly one graph: --scale S, --grid SIDE or --edges PATH")
    if ids not in bench_graphs.ID_KINDS:
        raise InputError(f"ids must be one of {', '.join(bench_graphs.ID_KINDS)}, not {ids!r}")
    if edges is not None and ids != "dense":
        raise InputError("--ids is for generated graphs (--scale, --grid): Parquet edges keep their own ids")
    algos = {"bfs": [BFS], "sssp": [SSSP], "both": [BFS, SSSP]}.get(algo)
    if algos is None:
        raise InputError(f"algo must be 'bfs', 'sssp' or 'both', not {algo!r}")
    if sources < 1 or repeat < 1 or build_repeat < 1 or workers < 0:
        raise InputError("--sources, --repeat and --build-repeat must be at least 1, --workers at least 0")
    if partitions is not None and not 1 <= partitions <= max(workers, 1):
        raise InputError(f"--partitions must be between 1 and --workers ({workers}), not {partitions}")
    backend_name = backends.resolve(backend)
    if protocol == "ucx" and (backend_name != backends.GPU or not workers):
        raise InputError("--protocol ucx is for GPU workers: give --backend gpu and --workers K")
    if backend_name == backends.GPU and workers:
        from gpipe.cluster import cuda_protocol

        # dask-cuda names its workers by device, so it cannot put two on one GPU: plain workers.
        shared_gpu = shared_gpu or bench_clusters.visible_gpus() == 1
        # Workers sharing one GPU: "auto" is TCP, measured faster there for BFS's small messages
        # and grid SSSP (BENCHMARKS.md), where UCX's CUDA IPC between two processes on one
        # device also logs mapping errors; UCX is for one worker per GPU.
        protocol = "tcp" if shared_gpu and protocol == "auto" else cuda_protocol(protocol)
    elif protocol not in ("auto", "tcp"):
        raise InputError(f"--protocol must be 'auto', 'tcp' or 'ucx', not {protocol!r}")
    else:
        protocol = "tcp"
    weighted = SSSP in algos or weights or (edges is not None and weight is not None)
    spec = _GraphSpec(scale, grid, edges, src, dst, weight if edges is not None else "weight", weighted, seed,
                      ids, weight_dtype)
    if edges is not None and SSSP in algos and weight is None and not weights:
        raise InputError("sssp needs weights: name the column with --weight, or add random ones with --weights")
    options = dict(scale=scale, grid=grid, edges=edges, src=src, dst=dst, weight=weight, weights=weights,
                   weight_dtype=weight_dtype, ids=ids, seed=seed, algo=algo, sources=sources, repeat=repeat, backend=backend_name,
                   workers=workers, partitions=partitions, shared_gpu=shared_gpu, protocol=protocol,
                   compare_scipy=compare_scipy, end_to_end=end_to_end,
                   build_repeat=build_repeat, scipy_check=scipy_check, paths=paths)
    report = {
        "machine": bench_report.machine(backend_name),
        "command": command if command is not None else bench_report.command_line(options),
        "argv": sys.argv,
        "options": options,
    }
    with bench_clusters.cluster(backend_name, workers, shared_gpu, protocol) as client:
        _Bench(spec, algos, backend_name, client, sources, repeat, seed, compare_scipy, end_to_end,
               build_repeat, scipy_check, tmpdir, report).run()
    report["machine"]["load_average_at_end"] = bench_report.load_average()
    return report


def main(args) -> int:
    """The ``gpipe bench`` command: run the benchmark with the parsed `args`, print the table.

    Writes the full report as JSON to ``args.json`` when given. Returns the exit status (0).
    """
    from gpipe.io.write import check_writable

    if args.json:
        check_writable(args.json)  # before the run, not after it
    protocols = ["tcp", "ucx"] if args.protocol == "both" else [args.protocol]
    reports = []
    for protocol in protocols:
        report = run(
            scale=args.scale, grid=args.grid, edges=args.edges, src=args.src, dst=args.dst,
            weight=args.weight, weights=args.weights, weight_dtype=args.weight_dtype, ids=args.ids, seed=args.seed, algo=args.algo,
            sources=args.sources, repeat=args.repeat, backend=args.backend, workers=args.workers,
            partitions=args.partitions, shared_gpu=args.shared_gpu, protocol=protocol,
            compare_scipy=args.compare_scipy, end_to_end=args.end_to_end,
            build_repeat=args.build_repeat, scipy_check=not args.no_scipy_check, tmpdir=args.tmpdir,
            paths=args.paths,
        )
        reports.append(report)
        print(bench_report.format_table(report), flush=True)
    if len(reports) > 1:
        print("\n" + bench_report.format_protocols(reports))
    if args.json:
        directory = os.path.dirname(os.path.abspath(args.json))
        os.makedirs(directory, exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(reports[0] if len(reports) == 1 else reports, f, indent=1)
    return 0


# ---------------------------------------------------------------------------------------------
# The run, step by step.


class _GraphSpec:
    """Which graph: a generated Kronecker or grid graph, or a Parquet edge list."""

    def __init__(self, scale, grid, path, src, dst, weight, weighted, seed, ids="dense", weight_dtype=None):
        self.scale, self.grid, self.path, self.ids = scale, grid, path, ids
        self.src, self.dst, self.weighted, self.seed, self.weight_dtype = src, dst, weighted, seed, weight_dtype
        self.weight = (weight or "weight") if weighted else None  # the column the graph is built with
        self.input_weight = weight  # the column as read (None: draw weights when weighted)
        if scale is not None:
            self.name = f"kron{scale}"
        elif grid is not None:
            self.name = f"grid{grid}"
        else:
            self.name = os.path.basename(os.path.normpath(path))
        if ids != "dense":
            self.name += f"-{ids}-ids"

    @property
    def first_source(self):
        """The input id every run starts from, if the graph has one (the grid's centre)."""
        if self.grid is None:
            return None
        centre = generators.grid_centre(self.grid)
        ids = {"dense": centre, "sparse": centre * bench_graphs.SPARSE_STRIDE + bench_graphs.SPARSE_BASE, "string": str(centre)}
        return ids[self.ids]


class _Bench:
    def __init__(self, spec, algos, backend_name, client, n_sources, repeat, seed, compare_scipy,
                 end_to_end, build_repeat, scipy_check, tmpdir, report):
        self.spec, self.algos, self.backend, self.client = spec, algos, backend_name, client
        self.n_sources, self.repeat, self.seed = n_sources, repeat, seed
        self.compare_scipy, self.end_to_end, self.build_repeat = compare_scipy, end_to_end, build_repeat
        self.scipy_check, self.tmpdir, self.report = scipy_check, tmpdir, report

    def run(self):
        report, spec = self.report, self.spec
        if self.backend == backends.GPU and self.client is None:
            bench_memory.use_pool()
        log.info("bench: generating/reading %s on %s", spec.name, self.backend)
        t0 = time.perf_counter()
        edges = self._edge_frame()
        rows = len(edges)
        input_bytes = rows * sum(_itemsize(t) for t in edges.dtypes)
        report["graph"] = {"name": spec.name, "input_edges": rows, "input_bytes": input_bytes,
                           "weighted": spec.weighted, "generate_s": time.perf_counter() - t0,
                           "generated_shares": getattr(self, "generated_shares", None),
                           "file_bytes": _file_bytes(spec.path) if spec.path is not None else None}

        e2e_frames = []
        if self.end_to_end:
            report["end_to_end"], e2e_frames = self._end_to_end(edges)

        builds = []
        graph = None
        for i in range(self.build_repeat):
            graph = None
            bench_memory.free_pools(self.backend, self.client)
            mark = bench_memory.pool_mark_all(self.backend, self.client)
            sampled = bench_memory.Peaks(self.client, _memory_kind(self.backend))
            with _task_stream(self.client) as stream:
                t0 = time.perf_counter()
                graph = Graph.from_edges(edges, directed=False, src=spec.src, dst=spec.dst, weight=spec.weight,
                                         partitions=self.report["options"]["partitions"], weight_dtype=spec.weight_dtype)
                _sync_all(graph)
                seconds = time.perf_counter() - t0
            peak = bench_memory.pool_peak_all(graph, mark)
            owners = None if self.client is None else graph.engine.executor.workers[:graph.num_partitions]
            owner_peaks = _owner_peaks(sampled.stop(), owners)
            phases = None
            if stream is not None:
                phases = bench_phases.owner_phase_peaks(sampled.timelines, stream.data, owners)
            builds.append({"time_s": seconds, "peak_device_bytes": peak,
                           "owner_peaks_sampled": owner_peaks, "owner_phase_peaks": phases,
                           "memory_kind": _memory_kind(self.backend),
                           "first_in_process": i == 0 and not self.end_to_end})
            log.info("bench: build %d: %.3f s", i + 1, seconds)
        del edges
        bench_memory.free_pools(self.backend, self.client)

        info = _graph_info(graph)
        report["graph"].update(vertices=info["n"], present_vertices=graph.num_vertices,
                               directed_edges=info["directed_edges"], graph_bytes=info["bytes"],
                               owners=graph.num_partitions, weight_dtype=graph.weight_dtype,
                               transport=graph.transport if graph.num_partitions > 1 else None)
        peak = builds[-1]["peak_device_bytes"]
        report["build"] = {
            "runs": builds,
            "time_s": builds[-1]["time_s"],
            "peak_device_bytes": peak,
            "owner_peaks_sampled": builds[-1]["owner_peaks_sampled"],
            "owner_phase_peaks": builds[-1]["owner_phase_peaks"],
            "memory_kind": builds[-1]["memory_kind"],
            "owner_estimate_bytes": graph.engine.built.owner_build_estimate,
            # The input each worker held before the build (persisted), in neither the sampled
            # peaks (growth from the start) nor the sizing's estimate (input_resident).
            "owner_input_bytes": input_bytes // graph.num_partitions,
            "input_bytes": input_bytes,
            "peak_over_input": peak / input_bytes if peak is not None else None,
            "memory_note": "CuPy pool high-water of the build (see gpipe.tools.bench)" if peak is not None else None,
        }

        chosen = _pick_sources(graph, self.n_sources, self.seed, spec.first_source)
        input_ids = bench_checks.input_ids(graph, chosen)
        host_csr = None
        if self.compare_scipy or (self.scipy_check and info["n"] <= bench_checks.SCIPY_CHECK_MAX_VERTICES):
            host_csr = bench_checks.host_csr(graph)
        report["results"] = []
        for kind in self.algos:
            log.info("bench: %s from %d source(s)", kind, len(chosen))
            if graph.num_partitions == 1:
                # In this process SciPy runs right after each source's own runs, so that a
                # machine whose speed drifts during the bench slows both sides alike.
                scipy_csr = host_csr if self.compare_scipy and self.client is None else None
                result = self._one_owner(graph, kind, chosen, host_csr is not None, scipy_csr)
            else:
                result = self._owners(graph, kind, chosen, host_csr is not None)
            first_dist = result.pop("first_dist")
            for row, input_id in zip(result["sources"], input_ids):
                row["source"] = bench_timing.input_id(input_id)
                row["source_global"] = int(row.pop("global"))
            bench_report.summarize(result, info["bytes"])
            on_cluster = self.client is not None
            public = bench_timing.time_public(graph, kind, input_ids, self.repeat, pause=on_cluster)
            lengths = bench_timing.time_public(graph, kind, input_ids, self.repeat, len, pause=on_cluster)
            for row, seconds, len_seconds in zip(result["sources"], public, lengths):
                row["public_s"] = seconds
                row["public_len_s"] = len_seconds
            result["public_median_ms"] = statistics.median(public) * 1e3
            result["public_len_median_ms"] = statistics.median(lengths) * 1e3
            if on_cluster:
                packed = bench_timing.time_public(graph, kind, input_ids, self.repeat, len)
                for row, seconds in zip(result["sources"], packed):
                    row["public_len_back_to_back_s"] = seconds
                result["public_len_back_to_back_median_ms"] = statistics.median(packed) * 1e3
            result.update(algo=kind, backend=self.backend, workers=self.report["options"]["workers"],
                          owners=graph.num_partitions, validated=True)
            if (host_csr is not None and self.scipy_check and info["n"] <= bench_checks.SCIPY_CHECK_MAX_VERTICES
                    and not graph.engine.built.negative_weights):
                bench_checks.check_with_scipy(host_csr, kind, int(chosen[0]), first_dist)
                result["scipy_checked"] = True
            if self.report["options"].get("paths"):
                result["path"] = bench_timing.time_paths(graph, kind, input_ids, self.repeat, result["public_len_median_ms"])
                if graph.num_partitions == 1:
                    result["parents_memory"] = graph.engine.on_owners(  # the one owner's
                        bench_timing.parents_memory, kind, int(chosen[0]), graph.engine.built.negative_weights)[0]
            if self.compare_scipy:
                result["scipy"] = bench_checks.time_scipy(host_csr, kind, chosen, result.pop("scipy_times", None))
                result["scipy"]["ratio"] = result["scipy"]["median_s"] / result["median_s"]
                result["scipy"]["public_ratio"] = result["scipy"]["median_s"] * 1e3 / result["public_median_ms"]
            report["results"].append(result)

        for kind, frame in e2e_frames:  # the end-to-end results, checked against this graph
            bench_checks.check_frame(graph, kind, frame, graph.engine.global_ids([self.report["end_to_end"]["source"]]))
        if e2e_frames:
            report["end_to_end"]["validated"] = True

    # --- the graph's edges ---------------------------------------------------------------

    def _edge_frame(self):
        """The edge list as a Dask DataFrame whose partitions are in memory (persisted)."""
        import dask
        import dask.dataframe as dd

        spec, gpu = self.spec, self.backend == backends.GPU
        if spec.path is not None:
            import gpipe

            frame = gpipe.read_edges(spec.path, src=spec.src, dst=spec.dst, weight=spec.input_weight,
                                     backend=self.backend)
            if spec.input_weight is None:  # read_edges would keep a column named "weight"
                frame = frame[[spec.src, spec.dst]]
            if spec.weighted and spec.input_weight is None:
                meta = frame._meta.assign(weight=np.empty(0, dtype=np.float64))
                frame = frame.map_partitions(bench_graphs.add_weights, spec.seed, meta=meta)
            return execution.current(self.client).persist(frame)
        xp = "cupy" if gpu else "numpy"
        args = ("kron" if spec.scale is not None else "grid", spec.scale if spec.scale is not None else spec.grid,
                spec.weighted, spec.seed, xp)
        lean = spec.scale is not None and spec.scale >= bench_graphs.LEAN_SCALE
        meta = bench_graphs.with_ids(bench_graphs.empty_edges(self.backend, spec.weighted, "int32" if lean else "int64"), spec.ids)
        n_parts = -(-bench_graphs.generated_rows(*args[:2]) // bench_graphs.PART_ROWS)
        shares = self.report["options"]["partitions"] or 1
        if self.client is not None and args[0] == "kron" and shares > 1:
            return self._generated_on_every_owner(args, shares, meta)
        if self.client is not None:  # generated on a worker: the edges never pass through here
            whole = dask.delayed(bench_graphs.generate_parts, pure=False)(*args)
            parts = [dask.delayed(bench_graphs.with_ids)(dask.delayed(operator.getitem)(whole, i), spec.ids)
                     for i in range(n_parts)]
            return execution.current(self.client).persist(
                dd.from_delayed(parts, meta=meta, verify_meta=False))
        frames = [bench_graphs.with_ids(f, spec.ids) for f in bench_graphs.generate_parts(*args)]
        # Named delayeds: Dask does not hash the (large) frames to name them.
        parts = [dask.delayed(f, name=f"gpipe-bench-edges-{uuid.uuid4().hex}") for f in frames]
        return dd.from_delayed(parts, meta=frames[0].iloc[:0], verify_meta=False)

    def _generated_on_every_owner(self, args, shares, meta):
        """A Kronecker graph generated in ``shares`` shares, each on a worker of its own
        (:func:`gpipe.generators.kronecker_share`: the same scale, distribution and seed, not
        the single-stream edge list), so that no worker ever holds the whole edge list; held
        where they were made, in frames of at most bench_graphs.PART_ROWS rows."""
        import dask.dataframe as dd

        workers = sorted(self.client.scheduler_info(n_workers=-1)["workers"])
        _, scale, weighted, seed, xp = args
        futures = []
        for share in range(shares):
            where = [workers[share % len(workers)]]
            parts = self.client.submit(bench_graphs.generate_share_parts, scale, share, shares, weighted, seed, xp,
                                       workers=where, pure=False)
            for i in range(bench_graphs.share_part_count(scale, shares)):
                part = self.client.submit(operator.getitem, parts, i, workers=where)
                futures.append(self.client.submit(bench_graphs.with_ids, part, self.spec.ids, workers=where))
        self.generated_shares = shares
        return dd.from_delayed(futures, meta=meta, verify_meta=False)

    # --- traversals from every source ---------------------------------------------------------

    def _one_owner(self, graph, kind, chosen, keep_first, scipy_csr=None):
        engine = graph.engine  # one owner: on_owners runs on it alone
        return engine.on_owners(bench_timing.time_one_owner, kind, chosen, self.repeat,
                                engine.built.negative_weights, keep_first, scipy_csr)[0]

    def _owners(self, graph, kind, chosen, keep_first):
        warm = time.perf_counter()
        bench_timing.traverse_frames(graph, kind, chosen[:1])
        result = {"warmup_s": time.perf_counter() - warm, "sources": [], "first_dist": None}
        for i, source in enumerate(chosen):
            times, peaks = [], []
            for _ in range(self.repeat):
                frames = None
                mark = bench_memory.pool_mark_all(self.backend, self.client)
                t0 = time.perf_counter()
                frames = bench_timing.traverse_frames(graph, kind, chosen[i:i + 1])
                times.append(time.perf_counter() - t0)
                peaks.append(bench_memory.pool_peak_all(graph, mark))
            frame = graph.engine.result_frame(frames, kind).compute()
            stats, dist = bench_checks.check_frame(graph, kind, frame, chosen[i:i + 1])
            if i == 0 and keep_first:
                result["first_dist"] = dist
            row = bench_timing.source_row(source, times, stats, peaks[-1], None)
            row["owners"] = bench_timing.owner_steps(graph, kind, chosen[i:i + 1])
            result["sources"].append(row)
        return result

    # --- end to end -------------------------------------------------------------------------

    def _end_to_end(self, edges):
        """Parquet -> read + persist -> build -> traverse -> result frame, cold then warm."""
        import gpipe

        spec = self.spec
        out = {"runs": {}, "source": None}
        frames = []
        with tempfile.TemporaryDirectory(prefix="gpipe-bench-", dir=self.tmpdir) as directory:
            path = os.path.join(directory, "edges")
            t0 = time.perf_counter()
            edges.to_parquet(path, write_index=False)
            out["write_parquet_s"] = time.perf_counter() - t0
            for kind in self.algos:
                weight = spec.weight if kind == SSSP else None
                for label in ("cold", "warm"):
                    phases = {}
                    t0 = time.perf_counter()
                    frame = gpipe.read_edges(path, src=spec.src, dst=spec.dst, weight=weight, backend=self.backend)
                    if weight is None:  # read_edges would keep a column named "weight"
                        frame = frame[[spec.src, spec.dst]]
                    frame = execution.current(self.client).persist(frame)
                    bench_memory.sync(self.backend)
                    phases["read_persist_s"] = bench_timing.lap(t0)
                    t0 = time.perf_counter()
                    graph = Graph.from_edges(frame, directed=False, src=spec.src, dst=spec.dst, weight=weight,
                                             partitions=self.report["options"]["partitions"], weight_dtype=spec.weight_dtype)
                    _sync_all(graph)
                    phases["build_s"] = bench_timing.lap(t0)
                    if out["source"] is None:  # not timed: the first source of the main run
                        first = _pick_sources(graph, 1, self.seed, spec.first_source)
                        out["source"] = bench_timing.input_id(bench_checks.input_ids(graph, first)[0])
                    t0 = time.perf_counter()
                    handles = bench_timing.frame_handles(graph, kind, out["source"])
                    phases["traverse_s"] = bench_timing.lap(t0)
                    t0 = time.perf_counter()
                    result = graph.engine.result_frame(handles, kind).compute()
                    phases["result_s"] = bench_timing.lap(t0)
                    phases["total_s"] = sum(phases.values())
                    phases["result_rows"] = len(result)
                    out["runs"].setdefault(kind, {})[label] = phases
                    log.info("bench: end to end %s %s: %.3f s", kind, label, phases["total_s"])
                    if label == "warm":
                        frames.append((kind, bench_checks.to_pandas(result)))
                    del result, handles, graph, frame
                    bench_memory.free_pools(self.backend, self.client)
        return out, frames


def _file_bytes(path) -> int | None:
    """Bytes of the Parquet files that ``read_edges(path)`` reads; None where this process
    cannot see them (a URL, a path that only the workers see)."""
    try:
        return sum(os.path.getsize(file) for file in read.local_files(path))
    except (InputError, OSError):
        return None


def _itemsize(dtype):
    try:
        return np.dtype(dtype).itemsize
    except TypeError:  # an extension dtype (nullable, Arrow): its values' width
        return np.dtype(getattr(dtype, "numpy_dtype", "int64")).itemsize


# ---------------------------------------------------------------------------------------------
# Work on an owner's worker (or in this process): module-level so that Dask can ship it.


def _part_info(part):
    arrays = (part.indptr, part.indices, part.weights, part.present)
    return {"n_local": part.n_local, "n": part.n, "directed_edges": part.n_edges,
            "bytes": int(sum(a.nbytes for a in arrays if a is not None))}


def _nonisolated_count(part):
    return int((part.indptr[1:] > part.indptr[:-1]).sum())


def _nonisolated_at(part, ranks):
    """Global ids of the non-isolated vertices of rank ``ranks`` among this owner's."""
    xp = part.xp
    ids = xp.flatnonzero(part.indptr[1:] > part.indptr[:-1])[xp.asarray(ranks)] + part.offset
    return backends.get(part.backend).to_host(ids).astype(np.int64)


def _memory_kind(backend_name) -> str:
    """What the build's sampled peaks measure: ``"device"`` memory on GPU, ``"host"`` on CPU."""
    return "device" if backend_name == backends.GPU else "host"


def _task_stream(client):
    """Dask's task stream of the block on a cluster (its ``data``: the tasks that ran), else a
    context that gives None."""
    if client is None:
        return contextlib.nullcontext()
    from distributed import get_task_stream

    return get_task_stream(client)


def _owner_peaks(peaks: dict, owners: list | None) -> list:
    """The sampled build peaks (:mod:`gpipe.tools.bench_memory`) of the owners' workers, in
    owner order (``owners`` None: this process's, the one owner without a cluster)."""
    if owners is None:
        return [peaks[None]]
    return [peaks.get(address) for address in owners]


def _sync_all(graph):
    """Wait for every owner's device (no-op on CPU): after a build. A traversal needs none: its
    tasks end when their result frames are final on the device (``result.owner_frame``)."""
    if graph.backend != backends.GPU:
        return
    ex = graph.engine.executor
    ex.gather([ex.submit(bench_memory.sync, graph.backend, owner=p) for p in range(graph.num_partitions)])


def _graph_info(graph):
    infos = graph.engine.on_owners(_part_info)
    return {"n": infos[0]["n"], "directed_edges": sum(i["directed_edges"] for i in infos),
            "bytes": sum(i["bytes"] for i in infos), "per_owner": infos}


def _pick_sources(graph, count, seed, first_input_id=None) -> np.ndarray:
    """Global ids of ``count`` random non-isolated vertices (seeded); ``first_input_id`` first."""
    engine = graph.engine
    ex, parts = engine.executor, engine.built.parts
    counts = engine.on_owners(_nonisolated_count)
    total = sum(counts)
    if total == 0:
        raise InputError("the graph has no edges besides self-loops: no source to start from")
    # One draw at a time, repeats redrawn: the first k sources are the same whatever the count.
    rng = np.random.default_rng(seed)
    ranks = []
    while len(ranks) < min(count, total):
        rank = int(rng.integers(total))
        if rank not in ranks:
            ranks.append(rank)
    ranks = np.array(ranks, dtype=np.int64)
    bounds = np.cumsum([0] + counts)
    owners = np.searchsorted(bounds, ranks, side="right") - 1
    chosen = np.empty(len(ranks), dtype=np.int64)
    for p in np.unique(owners).tolist():
        at = owners == p
        chosen[at] = ex.gather([ex.submit(_nonisolated_at, parts[p], ranks[at] - bounds[p], owner=p)])[0]
    if first_input_id is not None:
        first = engine.global_ids([first_input_id])[0]
        chosen = np.concatenate([[first], chosen[chosen != first]])[:count]
    return chosen
