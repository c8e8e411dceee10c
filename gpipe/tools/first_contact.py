"""First contact: what the first build, BFS and SSSP of a process cost, cold and warm.

::

    python -m gpipe.tools.first_contact [--scale 16] [--backend cpu|gpu] [--input FORM] [--json PATH]

Each scenario runs in a fresh Python process (so nothing compiled in this one helps) with
``NUMBA_CACHE_DIR`` pointing at a temporary directory, and, in-process (no Dask client),
imports gpipe, generates the Graph500 Kronecker graph of ``--scale`` (weighted), builds it
undirected, and times ``len(g.bfs(s))`` and ``len(g.sssp(s))`` from the highest-degree vertex:
twice each, the first call and the same call again. ``--input`` picks what the build is
handed: ``from_pandas`` (default), ``dd.from_pandas(frame, npartitions=4)`` made before the
clock starts (its own cost, Dask's, is reported apart as ``wrap``: on a fresh GPU machine
Dask's check of a cuDF frame's index compiles a CuPy reduction); ``frame``, the pandas
(cuDF) frame itself; or ``parquet``, ``gpipe.read_edges`` of 4 files written before the clock
starts (the read is part of the build). Scenarios:

``cold``
    An empty Numba cache: everything a query needs is compiled there and then.
``warm``
    A new process on the cache the cold one left: the kernels are loaded from disk.
``warm, sssp first``
    The same, SSSP before BFS (what the first SSSP of a process costs on its own).
``after warmup``
    An empty cache filled by ``gpipe warmup`` (timed apart), then a new process.

With ``--backend gpu`` the graph is generated on the GPU (a cuDF frame), ``CUPY_CACHE_DIR``
is the scenario's directory too, and the compilations counted are CuPy's NVRTC compiles
(kernels CuPy generates, and ours where no shipped binary serves the device); the scenarios
are ``cold`` and ``warm`` (``gpipe warmup`` is the CPU's).

Per query the report gives the seconds of the first and second call, the Numba compilations
the first one triggered on the calling thread (``numba:compile`` events: gpipe's kernels and
the NumPy functions they use, each compiled or none) and the seconds spent in them (outermost
events only), and who answered each call: ``scipy`` where the kernels were not compiled yet
and :mod:`gpipe.engine.compute.cpu_scipy` answered while a background thread compiled them, else
``kernels``. On the CPU the scenario then waits for that thread and reports when the kernels
were ready (seconds after the first query started), what it compiled, and each query once more
(on the kernels).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ALGORITHMS = ("bfs", "sssp")


INPUTS = ("from_pandas", "frame", "parquet")


def child(scale: int, order: list, backend: str = "cpu", form: str = "from_pandas") -> dict:
    """Run one scenario in this (fresh) process; return its figures."""
    t0 = time.perf_counter()
    import dask.dataframe as dd
    import numpy as np
    from numba.core import event

    import gpipe
    from gpipe.generators import kronecker_edges

    figures = {"import_s": time.perf_counter() - t0}
    if backend == "gpu":
        import cudf  # noqa: F401 (imported before the clock starts, as a GPU user has it)

        compiles = _nvrtc_log()
    else:
        compiles = _compile_log(event)
        event.register("numba:compile", compiles)

    edges = kronecker_edges(scale, weights=True, seed=0, xp="cupy" if backend == "gpu" else "numpy")
    compiles.take()  # what generating the graph compiled is not the build's
    degrees = np.bincount(edges["src"].to_numpy())
    source = int(degrees.argmax())

    t0 = time.perf_counter()
    if form == "from_pandas":
        given = dd.from_pandas(edges, npartitions=4)
    elif form == "parquet":
        given = os.path.join(tempfile.mkdtemp(), "edges")
        dd.from_pandas(edges, npartitions=4, sort=False).to_parquet(given, write_index=False)
    else:
        given = edges
    figures["wrap"] = {"first_s": time.perf_counter() - t0, **compiles.take()}

    def build():
        edge_frame = gpipe.read_edges(given, weight="weight", backend=backend) if form == "parquet" else given
        return gpipe.Graph.from_edges(edge_frame, directed=False, weight="weight")

    t0 = time.perf_counter()
    graph = build()
    first = time.perf_counter() - t0
    done = compiles.take()
    t0 = time.perf_counter()
    build()
    figures["build"] = {"first_s": first, "second_s": time.perf_counter() - t0, **done}
    answered = _scipy_answered(backend)
    started = time.perf_counter()
    for name in order:
        query = getattr(graph, name)
        t0 = time.perf_counter()
        len(query(source))
        first = time.perf_counter() - t0
        done = compiles.take()
        by_first = answered()
        t0 = time.perf_counter()
        len(query(source))
        figures[name] = {"first_s": first, "second_s": time.perf_counter() - t0, **done,
                         "first_by": by_first, "second_by": answered()}
    if backend == "cpu":
        # What the background compiler (gpipe/engine/compute/cpu_scipy.py) left to do, and the
        # queries once it is done: the Numba kernels' own times.
        from gpipe.engine.compute import cpu_scipy

        cpu_scipy.wait_compiled()
        figures["kernels_ready_s"] = time.perf_counter() - started
        figures["background"] = {"compiles": compiles.background, "compile_s": compiles.background_s}
        for name in order:
            t0 = time.perf_counter()
            len(getattr(graph, name)(source))
            figures[name]["ready_s"] = time.perf_counter() - t0
            figures[name]["ready_by"] = answered()
    return figures


def _scipy_answered(backend):
    """A function saying who answered the queries since its last call: "scipy" where
    :mod:`gpipe.engine.compute.cpu_scipy` did, else "kernels"."""
    if backend != "cpu":
        return lambda: "kernels"
    from gpipe.engine.compute import cpu_scipy

    seen = [sum(cpu_scipy.ANSWERED.values())]

    def answered():
        now = sum(cpu_scipy.ANSWERED.values())
        by = "scipy" if now > seen[0] else "kernels"
        seen[0] = now
        return by

    return answered


def _compile_log(event):
    """A numba event listener that keeps the compilations since its last ``take()`` and their time.

    Only the main thread's count: the compilations of gpipe's background compiler (the kernels
    compiled while SciPy answers, gpipe/engine/compute/cpu_scipy.py) add up in ``background`` and
    ``background_s`` instead."""
    import threading

    class CompileLog(event.Listener):
        def __init__(self):
            self.depth = 0
            self.started = 0.0
            self.seconds = 0.0
            self.names = []
            self.background = 0
            self.background_s = 0.0
            self.background_depth = 0
            self.background_started = 0.0

        def on_start(self, ev):
            if threading.current_thread() is not threading.main_thread():
                if self.background_depth == 0:
                    self.background_started = time.perf_counter()
                self.background_depth += 1
                self.background += 1
                return
            if self.depth == 0:
                self.started = time.perf_counter()
            self.depth += 1
            self.names.append(ev.data["dispatcher"].py_func.__qualname__)

        def on_end(self, ev):
            if threading.current_thread() is not threading.main_thread():
                self.background_depth -= 1
                if self.background_depth == 0:
                    self.background_s += time.perf_counter() - self.background_started
                return
            self.depth -= 1
            if self.depth == 0:
                self.seconds += time.perf_counter() - self.started

        def take(self) -> dict:
            taken = {"compiles": len(self.names), "compile_s": self.seconds,
                     "compiled": sorted(set(n for n in self.names if "<locals>" not in n))}
            self.names, self.seconds = [], 0.0
            return taken

    return CompileLog()


def _nvrtc_log():
    """Counts CuPy's NVRTC compiles (and their seconds) since its last ``take()``."""
    from cupy.cuda import compiler

    class NvrtcLog:
        def __init__(self):
            self.seconds, self.names = 0.0, []

        def take(self) -> dict:
            taken = {"compiles": len(self.names), "compile_s": self.seconds, "compiled": sorted(set(self.names))}
            self.seconds, self.names = 0.0, []
            return taken

    log = NvrtcLog()
    compile_program = compiler._NVRTCProgram.compile

    def timed(program, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            return compile_program(program, *args, **kwargs)
        finally:
            log.seconds += time.perf_counter() - t0
            found = re.search(r"__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s*)?(\w+)", program.src)
            log.names.append(found.group(1) if found else "?")

    compiler._NVRTCProgram.compile = timed
    return log


def _run_child(cache_dir: str, scale: int, order: list, backend: str = "cpu", form: str = "from_pandas") -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, CUPY_CACHE_DIR=cache_dir)
    code = (f"import json, gpipe.tools.first_contact as f; "
            f"print(json.dumps(f.child({scale}, {order!r}, {backend!r}, {form!r})))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"the measuring process failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _run_warmup(cache_dir: str):
    """Seconds ``gpipe warmup`` took to fill `cache_dir`; None where this gpipe has no warmup."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "gpipe", "warmup"], env=env, capture_output=True)
    return time.perf_counter() - t0 if done.returncode == 0 else None


def measure(scale: int = 16, backend: str = "cpu", form: str = "from_pandas") -> dict:
    """Run every scenario (see the module docstring) and return ``{scenario: figures}``."""
    report = {}
    if backend == "gpu":
        with tempfile.TemporaryDirectory() as cold_cache:
            report["cold"] = _run_child(cold_cache, scale, list(ALGORITHMS), backend, form)
            report["warm"] = _run_child(cold_cache, scale, list(ALGORITHMS), backend, form)
        return report
    with tempfile.TemporaryDirectory() as cold_cache, tempfile.TemporaryDirectory() as warmed_cache:
        report["cold"] = _run_child(cold_cache, scale, list(ALGORITHMS), backend, form)
        report["warm"] = _run_child(cold_cache, scale, list(ALGORITHMS), backend, form)
        report["warm, sssp first"] = _run_child(cold_cache, scale, list(reversed(ALGORITHMS)), backend, form)
        warmup_s = _run_warmup(warmed_cache)
        if warmup_s is not None:
            report["after warmup"] = _run_child(warmed_cache, scale, list(ALGORITHMS), backend, form)
            report["after warmup"]["warmup_s"] = warmup_s
    return report


def table(report: dict) -> str:
    """The report as text: per scenario and query, first and second call and what compiled."""
    lines = [f"{'scenario':<18} {'query':<6} {'first s':>8} {'again s':>8} {'extra s':>8} "
             f"{'compiles':>8} {'compile s':>9}"]
    for scenario, figures in report.items():
        for name in ("build",) + ALGORITHMS:
            f = figures[name]
            again = f.get("second_s")
            extra = "" if again is None else f"{f['first_s'] - again:8.3f}"
            lines.append(f"{scenario:<18} {name:<6} {f['first_s']:8.3f} "
                         f"{'' if again is None else format(again, '8.3f'):>8} {extra:>8} "
                         f"{f['compiles']:8d} {f['compile_s']:9.2f}")
        extra = sum(figures[a]["first_s"] - figures[a]["second_s"] for a in ALGORITHMS)
        build_extra = figures["build"]["first_s"] - figures["build"]["second_s"]
        lines.append(f"{scenario:<18} first BFS + first SSSP over warm: {extra:.3f} s;"
                     f" with the first build: {extra + build_extra:.3f} s;"
                     f" import gpipe {figures['import_s']:.2f} s"
                     + (f"; input made in {figures['wrap']['first_s']:.2f} s"
                        f" ({figures['wrap']['compiles']} compiles)" if "wrap" in figures else "")
                     + (f"; gpipe warmup {figures['warmup_s']:.1f} s" if "warmup_s" in figures else ""))
        by = [f"{a} {figures[a].get('first_by', '?')}/{figures[a].get('second_by', '?')}"
              for a in ALGORITHMS]
        if "kernels_ready_s" in figures:
            lines.append(f"{scenario:<18} answered by (first/again): {', '.join(by)}; Numba kernels"
                         f" ready {figures['kernels_ready_s']:.1f} s after the first query"
                         f" ({figures['background']['compiles']} compiled in the background,"
                         f" {figures['background']['compile_s']:.1f} s); then "
                         + ", ".join(f"{a} {figures[a]['ready_s']:.3f} s ({figures[a]['ready_by']})"
                                     for a in ALGORITHMS))
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpipe.tools.first_contact", description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=int, default=16, help="Kronecker scale (default: 16)")
    parser.add_argument("--backend", default="cpu", choices=("cpu", "gpu"), help="default: cpu")
    parser.add_argument("--input", default="from_pandas", choices=INPUTS,
                        help="what the build is handed (default: from_pandas)")
    parser.add_argument("--json", metavar="PATH", help="also write the figures here")
    args = parser.parse_args(argv)
    report = measure(args.scale, args.backend, args.input)
    print(table(report))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
