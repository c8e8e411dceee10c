"""The ``gpipe`` command (also ``python -m gpipe``).

::

    gpipe bfs EDGES --source S [--source S2 ...] --out DIR [--depth-limit K] [--undirected]
              [--src COL] [--dst COL] [--backend auto|cpu|gpu] [--overwrite] [--cluster FILE]
              [--no-parents]
    gpipe sssp EDGES --source S --out DIR [--weight COL] [--weight-dtype auto|float32|float64] [--max-distance D]
               [...same options but --depth-limit]
    gpipe demo [--scale 16] [--out DIR] [--cpu] [--workers N] [--no-wait]
    gpipe run CONFIG [CONFIG ...]
    gpipe warmup
    gpipe bench (--scale S | --grid SIDE | --edges PATH) [--algo bfs|sssp|both] [--sources N]
                [--ids dense|sparse|string]
                [--backend auto|cpu|gpu] [--workers K] [--compare-scipy] [--end-to-end] [--json PATH] ...
    gpipe bench --scale S --each N [--targets M] [--each-parquet] [--algo ...] [--workers K] [--compare-scipy]

``warmup`` compiles every kernel into Numba's on-disk cache (and warms the GPU kernels where a
GPU is usable), so that the first query of a later process compiles nothing; see
:mod:`gpipe.tools.warmup`.

``bfs`` and ``sssp`` run the job of :mod:`gpipe.pipeline` (as ``gpipe run`` does) with its settings
taken from the options: read the edges, traverse, write the result atomically. Without
``--cluster`` they run in this process (no Dask cluster); with it, on the cluster that the
file describes (``conf/cluster/*.yaml``). Step timings are logged to stderr; ``-q``
(``--quiet``), before or after the command, logs warnings only.

Exit status: 0 on success, 2 for unusable input or options (one line on stderr), 1 for other
gpipe errors such as a negative cycle, and for memory running out anywhere in the run, on this
machine or on a worker (one line naming memory, no traceback; :func:`gpipe.errors.out_of_memory`),
130 for SIGINT (Ctrl-C, at any moment from the imports to the exit: the one line ``gpipe:
interrupted``; a local cluster's workers never see SIGINT and are closed with it, or killed
while it starts, and the output's temporary directory is removed: :mod:`gpipe.engine.interrupts`). Outputs
(``--out``, ``bench --json``) are checked for writability before any work, and options
checkable without the data (depth limit, partitions) before the edges are read.
"""

from __future__ import annotations

import argparse
import logging
import sys

from gpipe import __version__
from gpipe.engine.interrupts import phase
from gpipe.errors import report_or_raise, say

__all__ = ["main", "command"]


def main(argv=None):
    """Run the ``gpipe`` command line with `argv` (default ``sys.argv[1:]``); return the exit status.

    Ctrl-C (``KeyboardInterrupt``) at any moment of it, the imports included, returns 130
    after the one line ``gpipe: interrupted`` on stderr; where outputs were already put in
    place whole, the line names them (``gpipe: interrupted; written whole before it: OUT``).

    Examples
    --------
    >>> main(["bfs", "edges.parquet", "--source", "0", "--out", "out/bfs"])  # doctest: +SKIP
    0
    """
    try:
        args = make_parser().parse_args(argv)
        phase("imports")
        from gpipe import pipeline  # NumPy, pandas, Dask, gpipe: the first second of a command
        from gpipe.io.write import forget_outputs_written

        forget_outputs_written()
        pipeline.configure_logging(logging.WARNING if args.quiet else logging.INFO)
        status = args.command(args, pipeline)
        if status == 0:
            phase("done")
        return status
    except KeyboardInterrupt:
        say(_interrupted_line())
        return 130
    except Exception as error:  # noqa: BLE001 (a bug is raised again, with its traceback)
        return report_or_raise(error)


def _interrupted_line() -> str:
    """``gpipe: interrupted``, and the outputs that were already put in place whole, if any
    (a rerun would find them there), so the user knows what the interrupt did not undo."""
    write = sys.modules.get("gpipe.io.write")
    done = write.outputs_written() if write is not None else []
    if not done:
        return "gpipe: interrupted"
    return f"gpipe: interrupted; written whole before it: {', '.join(map(str, done))}"


def command():
    """The ``gpipe`` program: :func:`main`, then exit with its status at once.

    Python's own exit (its threads, exit handlers, modules torn down) takes a while after the
    work, and a Ctrl-C in it would end the process without a word. Instead this one flushes
    the output, runs the exit handlers (a cluster left open is closed) for at most
    :data:`EXIT_HANDLERS_S`, killing the child processes still there after that, and leaves: a Ctrl-C
    meanwhile still ends in ``gpipe: interrupted`` and status 130. Interrupted, it leaves at
    once after that line.
    """
    import atexit
    import os
    import signal

    interrupted_in_callback = _catch_unraisable_interrupts()
    signal.signal(signal.SIGINT, _interrupt_quietly)
    status = main()
    if status == 0 and interrupted_in_callback:  # a Ctrl-C that Python could only "ignore"
        say(_interrupted_line())
        status = 130
    if status == 130:  # interrupted: what the command started is closed (or killed, starting)
        _flush()
        os.dup2(os.open(os.devnull, os.O_WRONLY), 2)  # its line is the last: threads still
        os._exit(status)                              # winding down say nothing more
    signal.signal(signal.SIGINT, _interrupted_at_exit)
    try:
        _run_exit_handlers(atexit._run_exitfuncs, EXIT_HANDLERS_S)
    finally:
        _flush()
        os._exit(status)


def _interrupt_quietly(signum, frame):
    """Ctrl-C: ``KeyboardInterrupt`` as Python raises it, with this process's logging turned
    off first. What it stops then says nothing the user needs, and said it before the one line:
    Dask's comms left open by the unwinding complain as they are collected ("Closing dangling
    stream"), on a busy machine even before the line is printed."""
    import logging

    logging.disable(logging.CRITICAL)
    raise KeyboardInterrupt


# How long the exit handlers may take. A cluster left open is closed in them, in seconds; one
# whose worker processes are stuck (GPU processes cut off in a collective, killed and still
# tearing down) kept Python's own handlers waiting for minutes.
EXIT_HANDLERS_S = 30.0


def _run_exit_handlers(handlers, limit_s: float) -> None:
    """Run ``handlers`` (Python's exit handlers) for at most ``limit_s`` seconds; past that,
    kill this process's child processes, say so in one log line, and return."""
    import threading
    import time

    runner = threading.Thread(target=handlers, name="gpipe-exit", daemon=True)
    runner.start()
    deadline = time.monotonic() + limit_s
    while runner.is_alive() and time.monotonic() < deadline:
        runner.join(0.05)  # short waits: a Ctrl-C meanwhile is handled at once
    if runner.is_alive():
        import psutil

        children = psutil.Process().children(recursive=True)
        for child in children:
            try:
                child.kill()
            except psutil.Error:
                pass
        logging.getLogger(__name__).warning(
            "exit: the exit handlers (closing a local cluster) did not end within %g s; "
            "killed this process's %d remaining child process(es)", limit_s, len(children))


def _catch_unraisable_interrupts() -> list:
    """Make a Ctrl-C that lands in a callback Python cannot raise from (a garbage collector's
    callback, a finalizer) silent, and note it in the list returned, instead of the traceback
    that Python prints as "Exception ignored in ..." while the command goes on; other
    unraisable errors are reported as before."""
    noted = []
    default = sys.unraisablehook

    def hook(unraisable):
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            noted.append(True)
            return
        default(unraisable)

    sys.unraisablehook = hook
    return noted


def _interrupted_at_exit(signum, frame):
    import os

    say(_interrupted_line())
    _flush()
    os._exit(130)


def _flush():
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # closed, or a closed pipe: nothing more can be said
            pass


# The command line's options that the pipeline's checks name by their configuration key.
_OPTION_OF_KEY = {"depth_limit": "--depth-limit", "max_distance": "--max-distance",
                  "partitions": "--partitions"}


def _check_options_as_typed(args):
    """The pipeline's own checks of the numeric options, before anything is read, but their
    errors naming the option as typed (``--depth-limit must be an integer from 0 to ...``), not
    its configuration key and Python spelling (``depth_limit must be None or ...``)."""
    from gpipe.errors import InputError
    from gpipe.io import validate
    from gpipe.partitioning import sizing

    checks = {"depth_limit": validate.depth_limit, "max_distance": validate.max_distance,
              "partitions": sizing.requested_partitions}
    for key, check in checks.items():
        value = getattr(args, key, None)
        if value is None:
            continue
        try:
            check(value)
        except InputError as error:
            text = str(error).replace(f"{key} must be None or ", f"{key} must be ", 1)
            text = text.replace(" or None,", ",", 1)
            raise InputError(text.replace(key, _OPTION_OF_KEY[key], 1)) from None


def _traverse(args, pipeline):
    _check_options_as_typed(args)
    config = {
        "algorithm": args.algorithm,
        "cluster": args.cluster,
        "edges": {
            "path": args.edges,
            "src": args.src,
            "dst": args.dst,
            "weight": getattr(args, "weight", None),
            "weight_dtype": getattr(args, "weight_dtype", "auto"),
            "backend": args.backend,
        },
        "directed": not args.undirected,
        "partitions": args.partitions,
        "source": args.source,
        "depth_limit": getattr(args, "depth_limit", None),
        "max_distance": getattr(args, "max_distance", None),
        "parents": not args.no_parents,
        "output": {"path": args.out, "overwrite": args.overwrite},
    }
    pipeline.run(config, how_to_overwrite="pass --overwrite")
    return 0


def _run(args, pipeline):
    if len(args.config) == 1:
        return pipeline.run_file(args.config[0])
    return pipeline.run_files(args.config)


def _demo(args, pipeline):
    from gpipe.tools.demo import run_demo

    keep_open = not args.no_wait and sys.stdin.isatty() and sys.stdout.isatty()
    run_demo(args.scale, args.out, cpu=args.cpu, n_workers=args.workers, keep_open=keep_open)
    return 0


def _warmup(args, pipeline):
    from gpipe.tools.warmup import warmup

    def report(name, signature, seconds):
        if not args.quiet:
            print(f"{seconds:6.2f} s  {name}{_argument_types(signature)}", flush=True)

    warmed = warmup(report, processes=args.processes)
    print(f"gpipe warmup: {len(warmed.cpu)} CPU kernel signatures compiled or loaded in "
          f"{warmed.seconds:.1f} s by {warmed.processes} process(es), cached in "
          f"{warmed.cache_dir}; GPU: {warmed.gpu}")
    return 0


def _argument_types(signature) -> str:
    """``(int64[::1], int32[::1], int64)``: Numba's types, arrays written as in a signature."""
    names = []
    for t in signature:
        if hasattr(t, "ndim"):
            names.append(f"{t.dtype}[{', '.join([':'] * (t.ndim - 1) + ['::1'])}]")
        else:
            names.append(str(t))
    return f"({', '.join(names)})"


def _bench(args, pipeline):
    if args.tmpdir is not None:
        args.tmpdir = str(scratch_folder(args.tmpdir, "--tmpdir"))
    if args.each:
        from gpipe.tools import bench_each

        return bench_each.main(args)
    from gpipe.tools import bench  # imports nothing of the GPU's until a GPU run asks for it

    return bench.main(args)



def scratch_folder(path, option: str):
    """The folder ``path`` (absolute), created with its parents if missing, for an ``option``
    that names where to write scratch files. Raises InputError (one line naming the option and
    the reason) where it is not a folder or cannot be made."""
    from pathlib import Path

    from gpipe.errors import InputError

    folder = Path(path).expanduser().absolute()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise InputError(f"{option} {path}: exists and is not a directory") from None
    except OSError as error:
        raise InputError(f"{option} {path}: cannot create it: {error.strerror or error}") from None
    if not folder.is_dir():
        raise InputError(f"{option} {path}: exists and is not a directory")
    return folder


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line that names the command's ``--help`` (exit 2)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def make_parser():
    parser = _Parser(
        prog="gpipe", description="BFS and SSSP over Parquet edge lists with Dask, on CPU or GPU."
    )
    parser.add_argument("--version", action="version", version=f"gpipe {__version__}")
    _add_global_options(parser, default=False)
    commands = parser.add_subparsers(title="commands", required=True, metavar="COMMAND")

    for algorithm, summary in (
        ("bfs", "breadth-first search: hop counts and a BFS tree"),
        ("sssp", "single-source shortest paths: weighted distances and a shortest-path tree"),
    ):
        sub = commands.add_parser(algorithm, help=summary, description=summary)
        sub.set_defaults(command=_traverse, algorithm=algorithm)
        sub.add_argument("edges", help="Parquet file or directory of edges")
        sub.add_argument(
            "--source",
            action="append",
            required=True,
            metavar="S",
            help="source vertex id; repeat for several sources (one traversal from all); required",
        )
        sub.add_argument("--out", required=True, metavar="DIR",
                         help="output Parquet directory (with its job report, _gpipe.json); required")
        if algorithm == "bfs":
            sub.add_argument("--depth-limit", type=int, metavar="K",
                             help="visit vertices up to K hops away (default: no limit)")
        else:
            sub.add_argument("--weight", default="weight", metavar="COL", help="weight column (default: weight)")
            sub.add_argument("--weight-dtype", default="auto", choices=("auto", "float32", "float64"),
                             help="width the weights are stored in (default: auto, float32 where it "
                                  "is exact: float32 or integer weights below 2**24)")
            sub.add_argument("--max-distance", type=float, metavar="D",
                             help="vertices farther than D are unreached (the search stops there; "
                                  "default: no cutoff)")
        sub.add_argument("--no-parents", action="store_true",
                         help="distances only: no parent column (less memory; default: with parents)")
        sub.add_argument("--undirected", action="store_true",
                         help="each edge goes both ways (default: directed, src -> dst)")
        sub.add_argument("--src", default="src", metavar="COL", help="source-vertex column (default: src)")
        sub.add_argument("--dst", default="dst", metavar="COL", help="target-vertex column (default: dst)")
        sub.add_argument(
            "--backend", default="auto", choices=("auto", "cpu", "gpu"), help="partition type (default: auto)"
        )
        sub.add_argument("--overwrite", action="store_true",
                         help="replace an existing output directory (default: an existing one is an error)")
        sub.add_argument("--partitions", type=int, metavar="P",
                         help="workers that own the graph (with --cluster); default: as few as hold it")
        sub.add_argument(
            "--cluster", metavar="FILE", help="cluster YAML (conf/cluster/*.yaml); default: no cluster, in-process"
        )

    demo_summary = "generate a Kronecker graph, run BFS and SSSP on a local cluster, print a summary"
    demo = commands.add_parser(
        "demo", help=demo_summary,
        description=demo_summary[0].upper() + demo_summary[1:] + " (README: Quick start)."
    )
    demo.set_defaults(command=_demo)
    demo.add_argument("--scale", type=int, default=16, help="2**SCALE vertex ids, 16 edges each (default: 16)")
    demo.add_argument("--out", default="out/demo", metavar="DIR", help="output folder (default: out/demo)")
    demo.add_argument("--cpu", action="store_true",
                      help="use a CPU cluster even where a GPU is available (default: a GPU where usable)")
    demo.add_argument("--no-wait", action="store_true",
                      help="close the cluster after the summary (default: on a terminal, wait for Enter)")
    demo.add_argument("--workers", type=int, metavar="N", help="cluster workers (default: one per GPU or core)")

    run = commands.add_parser("run", help="run pipeline configurations (conf/pipelines/*.yaml)",
                              description="Run the jobs of one or more pipeline files, in order; "
                                          "several files share one cluster, started once.")
    run.set_defaults(command=_run)
    run.add_argument("config", nargs="+", help="pipeline YAML file(s)")

    warm = commands.add_parser(
        "warmup", help="compile every kernel into the on-disk cache (for container images)",
        description="Compile every CPU kernel into Numba's on-disk cache (NUMBA_CACHE_DIR if set) "
                    "and warm the GPU kernels where a GPU is usable, so that no later query compiles.")
    warm.set_defaults(command=_warmup)
    warm.add_argument("--processes", type=int, metavar="N",
                      help="processes that compile the CPU kernels together (default: one per CPU core)")

    _add_bench_parser(commands)
    for sub in commands.choices.values():
        # SUPPRESS: a subcommand that is not given the flag leaves the value set before it.
        _add_global_options(sub, default=argparse.SUPPRESS)
    return parser


def _add_global_options(parser, default):
    """Options that may come before the command or after it (``gpipe -q bfs ...``, ``gpipe bfs ... -q``)."""
    parser.add_argument("-q", "--quiet", action="store_true", default=default,
                        help="log warnings only, not step timings (default: log them)")


def _add_bench_parser(commands):
    summary = "time BFS/SSSP on a Kronecker, grid or Parquet graph; validate every result (BENCHMARKS.md)"
    bench = commands.add_parser("bench", help=summary, description=summary)
    bench.set_defaults(command=_bench)
    graph = bench.add_mutually_exclusive_group(required=True)
    graph.add_argument("--scale", type=int, metavar="S", help="Graph500 Kronecker graph, 2**S vertex ids, 16 edges each; one of --scale, --grid, --edges is required")
    graph.add_argument("--grid", type=int, metavar="SIDE", help="3-D grid of SIDE**3 vertices (degree 6); one of --scale, --grid, --edges is required")
    graph.add_argument("--edges", metavar="PATH", help="Parquet edge list (file, directory or glob); one of --scale, --grid, --edges is required")
    bench.add_argument("--src", default="src", metavar="COL", help="--edges source column (default: src)")
    bench.add_argument("--dst", default="dst", metavar="COL", help="--edges target column (default: dst)")
    bench.add_argument("--weight", metavar="COL", help="--edges weight column (default: none)")
    bench.add_argument("--weights", action="store_true",
                       help="add integer weights 1..255 (SSSP adds them anyway; default: unweighted BFS)")
    bench.add_argument("--weight-dtype", default="auto", choices=("auto", "float32", "float64"),
                       help="width the graph stores its weights in (default: auto; generated weights "
                            "are float64 columns, so auto keeps float64: float32 halves their memory)")
    bench.add_argument("--ids", default="dense", choices=("dense", "sparse", "string"),
                       help="generated graphs' ids: as generated (0..n-1), sparse integers or strings, "
                            "the last two renumbered by the build (default: dense)")
    bench.add_argument("--seed", type=int, default=0, help="seed of the graph and of the sources (default: 0)")
    bench.add_argument("--algo", default="bfs", choices=("bfs", "sssp", "both"), help="(default: bfs)")
    bench.add_argument("--sources", type=int, default=8, metavar="N",
                       help="random non-isolated sources, one traversal each (grid: the centre first; default: 8)")
    bench.add_argument("--repeat", type=int, default=1, metavar="R", help="timed runs per source (default: 1)")
    bench.add_argument("--backend", default="auto", choices=("auto", "cpu", "gpu"), help="(default: auto)")
    bench.add_argument("--workers", type=int, default=0, metavar="K",
                       help="0: no Dask cluster, in-process (default); K: a local cluster of K workers")
    bench.add_argument("--partitions", type=int, metavar="P",
                       help="owners of the graph, at most K (default: as few as hold it)")
    bench.add_argument("--shared-gpu", action="store_true",
                       help="GPU: K plain workers all on GPU 0 (times several owners on one GPU; "
                            "the default on a one-GPU machine; elsewhere, one worker per GPU)")
    bench.add_argument("--protocol", default="auto", choices=("auto", "tcp", "ucx", "both"),
                       help="transport between GPU workers (default: auto, ucx where distributed-ucxx "
                            "is installed, else tcp); both: the whole run over each, side by side")
    bench.add_argument("--compare-scipy", action="store_true",
                       help="also time scipy.sparse.csgraph breadth_first_order / dijkstra on the same graph "
                            "(default: not)")
    bench.add_argument("--end-to-end", action="store_true",
                       help="also time Parquet read + persist, build, traverse, result frame (cold and warm; "
                            "default: not)")
    bench.add_argument("--build-repeat", type=int, default=1, metavar="R",
                       help="builds of the graph from the persisted edges, each timed (default: 1)")
    bench.add_argument("--no-scipy-check", action="store_true",
                       help="skip comparing the first source's distances with SciPy (default: compared up to "
                            "2**22 vertices)")
    bench.add_argument("--each", type=int, metavar="N",
                       help="time bfs_each/sssp_each from N random sources instead (gpipe/tools/bench_each.py; "
                            "default: single-source queries)")
    bench.add_argument("--targets", type=int, metavar="M",
                       help="--each: a distance table to M random vertices (default: every vertex)")
    bench.add_argument("--each-parquet", action="store_true",
                       help="--each: also time bfs_each(depth_limit=2).to_parquet (rows/s, peak memory; "
                            "default: not)")
    bench.add_argument("--tmpdir", metavar="DIR",
                       help="where --end-to-end writes its Parquet files, made if missing (default: the "
                            "system's temporary folder)")
    bench.add_argument("--paths", action="store_true",
                       help="also time Graph.path(s, t) to a random reached t against len() of the "
                            "traversal, and the memory of parents=False against parents=True (default: not)")
    bench.add_argument("--json", metavar="PATH", help="write the full report here (default: none)")
