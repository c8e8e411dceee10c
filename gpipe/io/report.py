"""The job report a traversal job writes beside its result: ``OUT/_gpipe.json``.

Like Spark's ``_SUCCESS``, the report lies inside the output directory and arrives with it:
:func:`gpipe.io.write.write_parquet` writes it into the hidden temporary directory after the
last partition, and the one rename that puts the result in place puts the report there too. So
a scheduler's sensor that waits for ``OUT/_gpipe.json`` sees a complete result, and a job that
fails or is killed at any phase leaves neither. Readers of Parquet datasets (Dask, pandas,
pyarrow, Spark) skip names that start with ``_`` or ``.``: ``OUT`` still reads as the result
alone.

What it holds (:func:`job_report`): the command line, the configuration as the job ran it (PEM
text given inline, a TLS key say, replaced by a note),
each phase's seconds, the rows and bytes written, the owners and the transport between them,
the width the weights were stored in,
the machine, the versions of gpipe and the libraries it ran on, and when it started and ended.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import sys
import time
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

__all__ = ["REPORT_NAME", "job_report", "read_report", "write_report"]

REPORT_NAME = "_gpipe.json"
FORMAT = 1  # raised when a key changes meaning or goes away
LIBRARIES = ("dask", "distributed", "numpy", "pandas", "pyarrow", "numba", "scipy", "cupy-cuda13x",
             "cudf-cu13", "dask-cuda", "nvidia-nccl-cu13")


def job_report(*, settings: dict, source, summary: dict, phases: dict, started: float,
               output: Path, owners: int, transport: str, workers: int, backend: str,
               weight_dtype: str | None = None, input_workers: int = 0) -> dict:
    """The report of one traversal job, as a JSON-ready dict.

    Parameters
    ----------
    settings : dict
        The job's configuration as it ran (:func:`gpipe.pipeline.run` normalizes it).
    source
        The source id(s) as the traversal took them (a command line's text made an integer
        where the ids are integers).
    summary : dict
        :func:`gpipe.io.write.summarize` of the result: ``vertices``, ``reached``,
        ``max_distance``.
    phases : dict
        Seconds per phase, in the order they ran (``connect``, ``read``, ``build``,
        ``traverse``, ``summary``, ``write``). ``write`` is the partitions' write, up to the
        report itself.
    started : float
        ``time.time()`` at the job's start.
    output : pathlib.Path
        The folder the partitions were written to; its ``*.parquet`` files are counted.
    owners, transport, workers, backend
        Owners of the graph, what carried their traffic (``"nccl"``, ``"dask"`` or ``"none"``
        for one owner), Dask workers of the cluster (0: in this process), ``"cpu"`` or ``"gpu"``.
    weight_dtype : str or None
        The width the graph stored its weights in (:attr:`gpipe.Graph.weight_dtype`:
        ``"float32"``, ``"float64"``; None without weights).
    input_workers : int
        The workers that read the edges (or held them) for the build, 0 in this process: for
        a one-owner graph, 1 where its owner read them all (ARCHITECTURE.md, "Where a
        one-owner graph is read").
    """
    files = sorted(Path(output).glob("*.parquet"))
    return {
        "format": FORMAT,
        "gpipe": _version("gpipe") or "unknown (not installed: run from a checkout)",
        "command": list(sys.argv),
        "config": _without_secrets(settings),
        "source": source,
        "started_at": _iso(started),
        "finished_at": _iso(time.time()),
        "phases": {name: round(float(seconds), 6) for name, seconds in phases.items()},
        "rows": int(summary["vertices"]),
        "reached": int(summary["reached"]),
        "max_distance": summary["max_distance"],
        "files": len(files),
        "bytes": sum(f.stat().st_size for f in files),
        "owners": int(owners),
        "transport": transport,
        "weight_dtype": weight_dtype,
        "workers": int(workers),
        "input_workers": int(input_workers),
        "backend": backend,
        "machine": {"hostname": socket.gethostname(), "platform": platform.platform(),
                    "python": platform.python_version(), "cpu_count": os.cpu_count()},
        "versions": _versions(),
    }


def write_report(folder, report: dict) -> Path:
    """Write ``report`` as ``folder/_gpipe.json`` (whole or not at all: a temporary name, then
    a rename); return its path."""
    path = Path(folder) / REPORT_NAME
    partial = path.with_name(f".{REPORT_NAME}.partial")
    partial.write_text(json.dumps(report, indent=1, default=_plain) + "\n")
    partial.replace(path)
    return path


def read_report(output) -> dict:
    """The job report of the output folder ``output`` (``OUT/_gpipe.json``).

    Raises FileNotFoundError where the output has none (written by ``gpipe.to_parquet``, or by
    an older gpipe).
    """
    return json.loads((Path(output) / REPORT_NAME).read_text())


def _without_secrets(value):
    """``value`` (a configuration) with any PEM text (a TLS key or certificate given inline
    rather than as a file's path) replaced by a note: no report holds a key's contents."""
    if isinstance(value, dict):
        return {k: _without_secrets(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_without_secrets(v) for v in value]
    if isinstance(value, str) and "-----BEGIN" in value:
        return "(PEM text, not shown)"
    return value


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=timezone.utc).isoformat(timespec="milliseconds")


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def _versions() -> dict:
    found = {name: _version(name) for name in LIBRARIES}
    return {name: version for name, version in found.items() if version is not None}


def _plain(value):
    """JSON for what a configuration may hold besides JSON's own types (NumPy scalars, paths)."""
    if hasattr(value, "item"):
        return value.item()
    return str(value)
