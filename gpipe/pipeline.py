"""A traversal job from a configuration: read Parquet edges, BFS or SSSP, write the result atomically.

What ``gpipe run CONFIG`` and ``gpipe bfs|sssp`` do, and what the ready job
``pipelines/traverse_parquet.py`` (cron, Airflow, a batch scheduler) runs::

    from gpipe import pipeline

    pipeline.configure_logging()
    summary = pipeline.run(pipeline.load_config("conf/pipelines/bfs.yaml"))

Steps, each timed and logged: connect to the cluster the configuration names, read the
edges (:func:`gpipe.read_edges`), build the graph (:meth:`gpipe.Graph.from_edges`), traverse
(``bfs`` or ``sssp``), count what was reached, write the result with
:func:`gpipe.io.write.write_parquet` (readers of the output path see the previous result or the
new one, never a mix) and, inside the same rename, the job report ``OUT/_gpipe.json``
(:mod:`gpipe.io.report`: phases, rows, bytes, owners, transport, machine, versions, command).

Exit status of :func:`run_file`: 0 on success; 2 with a one-line message on stderr when the
configuration or the data is unusable (:class:`gpipe.InputError`); 1 with a one-line message for
other gpipe errors (a negative cycle) and for memory running out, here or on a worker
(:func:`gpipe.errors.out_of_memory`). Anything else is a bug and prints its traceback.

The configuration file (see ``conf/pipelines/bfs.yaml``); every relative path in it (edges,
output, cluster file) is taken from the folder of the file itself, so the job runs the same
from any working directory::

    algorithm: bfs             # bfs | sssp
    cluster: ../cluster/local-cpu.yaml   # a cluster file, an inline mapping,
                               # or null: no cluster, run in this process
    edges:
      path: ../data/edges      # Parquet file, directory or glob
      src: src
      dst: dst
      weight: null             # sssp: the weight column (default "weight")
      weight_dtype: auto       # auto | float32 | float64: the width the weights are stored in
      backend: auto            # auto | cpu | gpu
    directed: true
    partitions: null           # workers that own the graph; null: as few as hold it
    source: 0                  # one vertex id, or a list (one traversal from all of them)
    depth_limit: null          # bfs only
    max_distance: null         # sssp only: vertices farther are unreached
    parents: true              # false: distances only, no parent column
    output:
      path: ../out/bfs         # Parquet directory
      overwrite: false
"""


from __future__ import annotations

import errno
import logging
import os
import sys
import time
from collections.abc import Mapping
from contextlib import contextmanager
from pathlib import Path

from gpipe.cluster import connect, disconnect, silenced_logging
from gpipe.engine import execution
from gpipe.engine.interrupts import phase
from gpipe.errors import InputError, report_or_raise
from gpipe.engine.backend import name_of_frame as edges_backend
from gpipe.graph import Graph
from gpipe.io import validate
from gpipe.io.read import read_edges
from gpipe.io.report import job_report, write_report
from gpipe.partitioning import sizing
from gpipe.watch import dashboard, progress
from gpipe.io.write import (OutputExists, WriteFailed, check_writable, refuse_over_edges, restore_interrupted,
                            summarize, write_parquet)

__all__ = ["ALGORITHMS", "coerce_source", "configure_logging", "load_config", "run", "run_file",
           "run_files", "validate_config"]

log = logging.getLogger("gpipe.pipeline")

ALGORITHMS = ("bfs", "sssp")
_TOP_KEYS = {"algorithm", "cluster", "edges", "directed", "partitions", "source", "depth_limit",
             "max_distance", "parents", "output"}
_EDGE_KEYS = {"path", "src", "dst", "weight", "weight_dtype", "backend"}
_OUTPUT_KEYS = {"path", "overwrite"}


def load_config(path):
    """Read a pipeline configuration file and return it as a dict.

    Relative paths in it (``edges.path``, ``output.path`` and a ``cluster`` file name) are
    made absolute here, taken from the configuration file's folder, so the job runs the same
    from any working directory. URLs and absolute paths are left as they are.

    Raises
    ------
    gpipe.InputError
        If the file is missing, is not valid YAML, or does not hold a mapping.
    """
    import yaml

    path = Path(path)
    try:
        text = path.read_text()
    except OSError as error:
        raise InputError(f"cannot read pipeline configuration {str(path)!r}: {error.strerror}") from None
    try:
        config = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise InputError(f"pipeline configuration {str(path)!r} is not valid YAML: "
                         f"{_yaml_problem(error)}") from None
    if not isinstance(config, Mapping):
        raise InputError(f"pipeline configuration {str(path)!r} must be a YAML mapping")
    config = dict(config)
    folder = path.absolute().parent
    if "cluster" in config:
        config["cluster"] = _beside(folder, config["cluster"])
    for name in ("edges", "output"):
        section = config.get(name)
        if isinstance(section, Mapping) and "path" in section:
            config[name] = {**section, "path": _beside(folder, section["path"])}
    return config


def _yaml_problem(error) -> str:
    """``line 2, column 4: expected ',' or ']', but got ':'``: a YAML error in one line."""
    mark, problem = getattr(error, "problem_mark", None), getattr(error, "problem", None)
    if mark is None or not problem:
        return " ".join(str(error).split())
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}"


def _beside(folder, value):
    """A relative path `value` taken from `folder`, resolved (``conf/pipelines/../../out`` is
    printed as the folder it names); anything else (URL, absolute, not a path) as is."""
    if not isinstance(value, (str, os.PathLike)) or not os.fspath(value):
        return value
    text = os.fspath(value)
    if "://" in text or os.path.isabs(text):
        return value
    return os.path.realpath(folder / text)


def run(config, *, how_to_overwrite="set output.overwrite to true", client=None):
    """Run one traversal as `config` describes and write its result; return a summary.

    Parameters
    ----------
    config : mapping
        A pipeline configuration (the module docstring lists the keys). Relative paths are
        taken from the working directory here; :func:`load_config` takes them from the
        configuration file's folder.
    how_to_overwrite : str, optional
        How the caller asks to replace an existing output, as the error says it
        (``output 'out' already exists; set output.overwrite to true to replace it``); the
        command line names its ``--overwrite``.
    client : distributed.Client, optional
        A client already connected to the cluster that ``config["cluster"]`` names (see
        :func:`run_files`): used as it is, and left open. Without it, a configured cluster is
        connected to (or started) here and closed at the end.

    Returns
    -------
    dict
        ``algorithm``, ``source`` (as passed to the traversal), ``output`` (the absolute path
        written), ``vertices`` (rows of the result: the vertices that occur in an edge),
        ``reached`` (rows with a distance), ``max_distance``, ``directed`` (whether edges were
        followed ``src -> dst`` only; logged with the summary) and ``seconds`` (per step:
        ``connect`` (with a cluster), ``read``, ``build``, ``traverse``, ``summary``,
        ``write``). The output folder also holds the job report, ``_gpipe.json``
        (:func:`gpipe.io.report.job_report`), which Parquet readers skip.

    Raises
    ------
    gpipe.InputError
        If a key is missing, unknown or of the wrong type (the message names it), or the
        edges, a column or a source are unusable, or the output exists without ``overwrite``,
        or cannot be written (:func:`gpipe.io.write.check_writable`, checked before the read),
        or the output path is the edges path, contains it or lies inside it (after resolving
        symbolic links; ``overwrite`` or not).
    gpipe.NegativeCycleError
        If SSSP meets a negative cycle.
    """
    settings = validate_config(config)
    output = settings["output"]
    refuse_over_edges(output["path"], settings["edges"]["path"])
    check_writable(output["path"])  # before the work: a folder it cannot write fails it now
    restore_interrupted(output["path"])  # a previous run killed mid-overwrite: its output is back
    if os.path.lexists(output["path"]) and not output["overwrite"]:  # fail before the work
        raise OutputExists(output["path"], how_to_overwrite)
    timings = {}
    started = time.time()
    given, stop_following = client, None
    try:
        if settings["cluster"] is None:
            log.info("no cluster configured: using the active Dask client if any, else this process")
        else:
            if given is None:
                with _step("connect", timings):
                    client = _connect(settings["cluster"])
            log.info("Dask dashboard: %s", getattr(client, "dashboard_link", None))
            if getattr(client, "dashboard_link", None):
                dashboard.install(client)
                log.info("gpipe traversals: %s", dashboard.dashboard_link(client))
            stop_following = progress.follow(client, _log_progress)
        requested = sizing.requested_partitions(settings["partitions"])
        if requested is not None:  # before the read: are there workers enough?
            executor = execution.current(client)
            sizing.check_workers_for(requested, len(getattr(executor, "workers", [None])),
                                     in_process=not hasattr(executor, "workers"))
        edges_cfg = settings["edges"]
        phase("read")
        with _step("read", timings):
            edges = read_edges(
                edges_cfg["path"],
                src=edges_cfg["src"],
                dst=edges_cfg["dst"],
                weight=edges_cfg["weight"],
                backend=edges_cfg["backend"],
                weight_dtype=edges_cfg["weight_dtype"],
            )
        source = coerce_source(settings["source"], edges[edges_cfg["src"]].dtype)
        with _step("build", timings):
            graph = Graph.from_edges(
                edges,
                directed=settings["directed"],
                src=edges_cfg["src"],
                dst=edges_cfg["dst"],
                weight=edges_cfg["weight"],
                partitions=settings["partitions"],
                weight_dtype=edges_cfg["weight_dtype"],
            )
        input_workers = graph.engine.built.input_workers
        log.info("graph on %d partition(s)%s%s", graph.num_partitions,
                 f", weights as {graph.weight_dtype}" if graph.weight_dtype else "",
                 f", its edges read on {input_workers} worker(s)" if input_workers else "")
        phase("traverse")
        with _step("traverse", timings):
            if settings["algorithm"] == "bfs":
                result = graph.bfs(source, depth_limit=settings["depth_limit"],
                                   parents=settings["parents"])
            else:
                result = graph.sssp(source, max_distance=settings["max_distance"],
                                    parents=settings["parents"])
            result = _materialize(result, client)
        with _step("summary", timings):
            summary = summarize(result)  # before the write: the report inside it says it
        with _step("write", timings):
            write_began = time.perf_counter()

            def report_beside(folder):
                phases = dict(timings, write=time.perf_counter() - write_began)
                write_report(folder, job_report(
                    settings=settings, source=source, summary=summary, phases=phases, started=started,
                    output=folder, owners=graph.num_partitions, transport=graph.transport,
                    weight_dtype=graph.weight_dtype, input_workers=input_workers,
                    workers=len(getattr(execution.current(client), "workers", [])),
                    backend=edges_backend(edges)))

            try:
                written = write_parquet(result, output["path"], overwrite=output["overwrite"],
                                        beside=report_beside)
            except OutputExists as error:  # written by someone else meanwhile
                raise OutputExists(error.path, how_to_overwrite) from None
            except OSError as error:  # the result is in memory: this is the output's filesystem
                if error.errno == errno.ENOMEM:
                    raise
                raise WriteFailed(output["path"], error) from error
    finally:
        interrupted = isinstance(sys.exc_info()[1], KeyboardInterrupt)  # Ctrl-C: close quietly
        with silenced_logging(interrupted):
            if stop_following is not None:
                stop_following()
            if client is not None and given is None:
                disconnect(client, quietly=interrupted)
    summary.update(algorithm=settings["algorithm"], source=source, output=str(written), seconds=timings,
                   directed=settings["directed"])
    log.info(
        "%s from %s, %s: %d of %d vertices reached, max distance %s -> %s",
        settings["algorithm"],
        source,
        "directed (src -> dst)" if settings["directed"] else "undirected (edges both ways)",
        summary["reached"],
        summary["vertices"],
        summary["max_distance"],
        written,
    )
    return summary


def _log_progress(event):
    """A progress event from the workers, logged here as the in-process traversals log theirs."""
    progress.log.info("%s", progress.describe(event), extra={"gpipe_progress": event})


def coerce_source(source, dtype):
    """Turn source ids read as text (command line) into the vertex column's integer type.

    A list of one id becomes that id. Non-text ids and text ids of a non-integer column
    are returned unchanged.

    Raises
    ------
    gpipe.InputError
        If a text id does not parse as an integer for an integer vertex column.
    """
    many = isinstance(source, (list, tuple))
    ids = list(source) if many else [source]
    if getattr(dtype, "kind", None) in "iu":
        for i, value in enumerate(ids):
            if isinstance(value, str):
                try:
                    ids[i] = int(value)
                except ValueError:
                    raise InputError(f"source {value!r} is not an integer, but the vertex ids are {dtype}") from None
    if not many or len(ids) == 1:
        return ids[0]
    return ids


def run_file(path):
    """Load `path` and :func:`run` it; report gpipe errors and running out of memory as one line.

    Returns the exit status: 0, 2 for unusable input, 1 for other gpipe errors and memory,
    130 for SIGINT (Ctrl-C).
    """
    start = time.perf_counter()
    try:
        summary = run(load_config(path))
    except (Exception, KeyboardInterrupt) as error:
        return report_or_raise(error)
    steps = ", ".join(f"{name} {seconds:.2f}s" for name, seconds in summary["seconds"].items())
    log.info("done in %.2fs (%s)", time.perf_counter() - start, steps)
    return 0


def run_files(paths) -> int:
    """Run the jobs of several configuration files one after another, on one cluster.

    Every file is loaded and checked first (:func:`load_config` and the keys :func:`run`
    checks before any work), so a bad file fails the run before any job starts. The cluster
    that the files name (each names the same one, or none) is connected to, or started, once,
    and every job runs on it; it is closed after the last. The jobs run in the order given,
    and the first that fails ends the run: its one line names its file.

    Returns the exit status of :func:`run_file`'s kind: 0 when every job succeeded, else the
    failing job's (2 for unusable input, 1 for other gpipe errors and memory, 130 for SIGINT).
    """
    start = time.perf_counter()
    client = current = None
    try:
        configs = [load_config(path) for path in paths]
        clusters = [validate_config(config)["cluster"] for config in configs]
        named = [c for c in clusters if c is not None]
        if any(c != named[0] for c in named):
            raise InputError("the jobs of one run must name the same cluster (or none): "
                             + ", ".join(f"{path} names {c!r}" for path, c in zip(paths, clusters)))
        if named:
            client = _connect(named[0])
        for number, (path, config) in enumerate(zip(paths, configs), 1):
            current = path
            if len(configs) > 1:
                log.info("job %d of %d: %s", number, len(configs), path)
            run(config, client=client)
        current = None
    except (Exception, KeyboardInterrupt) as error:
        if current is not None and len(paths) > 1 and isinstance(error, InputError):
            error = InputError(f"{current}: {error}")
        if isinstance(error, KeyboardInterrupt) and client is not None:
            with silenced_logging():  # before the line, which is the last
                disconnect(client, quietly=True)
            client = None
        return report_or_raise(error)
    finally:
        if client is not None:
            disconnect(client)
    log.info("%d job(s) done in %.2fs", len(configs), time.perf_counter() - start)
    return 0


def configure_logging(level=logging.INFO):
    """Log gpipe's messages (not Dask's) to stderr with timestamps, once per process.

    Traversal progress (the ``gpipe.progress`` logger) is one line rewritten in place when
    stderr is a terminal, and plain log lines otherwise.
    """
    logger = logging.getLogger("gpipe")
    if not logger.handlers:
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(level)
    progress_log = logging.getLogger(progress.log.name)
    if sys.stderr.isatty() and not progress_log.handlers:
        progress_log.addHandler(_ProgressLine())
        progress_log.propagate = False


class _ProgressLine(logging.Handler):
    """Progress on one terminal line: each record overwrites the last; a finished traversal
    ends the line."""

    def emit(self, record):
        event = getattr(record, "gpipe_progress", None)
        done = event is None or event.get("done")
        sys.stderr.write("\r\033[K" + record.getMessage() + ("\n" if done else ""))
        sys.stderr.flush()


class _StderrHandler(logging.StreamHandler):
    """A stream handler that writes to ``sys.stderr`` as it is when a message is logged.

    A plain ``StreamHandler()`` keeps the stream it was made with; when that was a replacement
    (a test's captured stderr, since closed), every later message is lost.
    """

    def __init__(self):
        super().__init__(sys.stderr)

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):
        pass


def validate_config(config):
    """Return the settings a job runs with: `config` (as :func:`load_config` returns it) checked
    key by key, before anything is read or started, with the defaults filled in.

    Part of this module's contract: :func:`run` and :func:`run_files` check their configurations
    with it, and tools and tests check one with it without running the job.

    Raises
    ------
    gpipe.InputError
        Naming the first key that is unknown, missing or unusable.
    """
    if not isinstance(config, Mapping):
        raise InputError("a pipeline configuration must be a mapping")
    _no_unknown_keys(config, _TOP_KEYS, "")
    algorithm = config.get("algorithm")
    if algorithm not in ALGORITHMS:
        raise InputError(f"'algorithm' must be one of {', '.join(ALGORITHMS)}, not {algorithm!r}")
    edges = _section(config, "edges", _EDGE_KEYS)
    output = _section(config, "output", _OUTPUT_KEYS)
    for section, name, where in ((edges, "path", "edges.path"), (output, "path", "output.path")):
        if not section.get(name):
            raise InputError(f"'{where}' is required")
    if config.get("source") is None or config.get("source") == []:
        raise InputError("'source' is required: a vertex id or a list of them")
    depth_limit = config.get("depth_limit")
    if depth_limit is not None and algorithm != "bfs":
        raise InputError("'depth_limit' applies to bfs only")
    depth_limit = validate.depth_limit(depth_limit)  # the API's own check, before any reading
    if config.get("partitions") is not None:
        sizing.requested_partitions(config["partitions"])
    max_distance = config.get("max_distance")
    if max_distance is not None and algorithm != "sssp":
        raise InputError("'max_distance' applies to sssp only")
    max_distance = validate.max_distance(max_distance)  # before any reading, as depth_limit
    weight = edges.get("weight")
    if algorithm == "sssp" and weight is None:
        weight = "weight"
    cluster = config.get("cluster")
    if cluster is not None and not isinstance(cluster, (str, os.PathLike, Mapping)):
        raise InputError(f"'cluster' must be a file name, a mapping or null, not {cluster!r}")
    return {
        "algorithm": algorithm,
        "cluster": cluster,
        "edges": {
            "path": str(edges["path"]),
            "src": edges.get("src", "src"),
            "dst": edges.get("dst", "dst"),
            "weight": weight,
            "weight_dtype": validate.weight_dtype(edges.get("weight_dtype")) or "auto",
            "backend": edges.get("backend", "auto"),
        },
        "directed": _boolean(config.get("directed", True), "directed"),
        "partitions": config.get("partitions"),
        "source": config["source"],
        "depth_limit": depth_limit,
        "max_distance": max_distance,
        "parents": _boolean(config.get("parents", True), "parents"),
        "output": {
            "path": str(output["path"]),
            "overwrite": _boolean(output.get("overwrite", False), "output.overwrite"),
        },
    }


def _section(config, name, keys):
    section = config.get(name)
    if not isinstance(section, Mapping):
        raise InputError(f"'{name}' must be a mapping with keys {', '.join(sorted(keys))}")
    _no_unknown_keys(section, keys, f"{name}.")
    return section


def _no_unknown_keys(mapping, known, prefix):
    unknown = sorted(set(mapping) - known, key=str)
    if unknown:
        raise InputError(f"unknown key '{prefix}{unknown[0]}'; known: {', '.join(sorted(known))}")


def _boolean(value, name):
    if not isinstance(value, bool):
        raise InputError(f"'{name}' must be true or false, not {value!r}")
    return value


def _connect(cluster):
    if cluster is None:
        return None
    if not isinstance(cluster, Mapping):
        import yaml

        try:
            with open(cluster) as file:
                cluster = yaml.safe_load(file)
        except OSError as error:
            raise InputError(f"cannot read cluster configuration {str(cluster)!r}: {error.strerror}") from None
        except yaml.YAMLError as error:
            raise InputError(f"cluster configuration {str(cluster)!r} is not valid YAML: "
                             f"{_yaml_problem(error)}") from None
    try:
        client = connect(cluster)
    except OSError as error:  # a remote scheduler that does not answer (Dask's TimeoutError is one)
        address = cluster.get("scheduler_address") if isinstance(cluster, Mapping) else None
        if address is None:  # a local cluster that failed to start: not a bad address
            raise
        raise InputError(f"cannot connect to the Dask scheduler {address!r}: "
                         f"{' '.join(str(error).split()) or type(error).__name__}; "
                         f"{_what_to_check(str(address), error)}") from None
    log.info("connected to %s (dashboard: %s)", client.scheduler.address, client.dashboard_link or "off")
    return client


def _what_to_check(address: str, error: OSError) -> str:
    """What a failed connection to ``address`` asks the user to check: over TLS, the
    certificates; a plain connection reset or closed, that the scheduler may take TLS only."""
    if address.startswith("tls://"):
        return ("check distributed.comm.tls.ca-file (the CA that signed the scheduler's "
                "certificate) and distributed.comm.tls.client.cert and .key under the cluster "
                "file's dask: section, and that the scheduler runs")
    text = f"{type(error).__name__} {error}".lower()
    if any(word in text for word in ("reset", "closed", "handshake", "ssl")):
        return ("a scheduler that takes TLS only closes plain connections: give its tls:// "
                "address and the TLS settings (conf/cluster/remote.yaml), or check "
                "scheduler_address and that the scheduler runs")
    return "check the cluster configuration's scheduler_address and that the scheduler runs"


def _materialize(result, client):
    """Compute the traversal once and keep it in (cluster) memory for the write and summary."""
    return execution.current(client).persist(result)


@contextmanager
def _step(name, timings):
    start = time.perf_counter()
    yield
    timings[name] = time.perf_counter() - start
    log.info("%-8s %.2fs", name, timings[name])

