"""``gpipe bench``: the report: targets, per-algorithm summaries, the machine, and the table."""

from __future__ import annotations

import datetime
import os
import platform
import shlex
import socket
import statistics
import subprocess

import numpy as np

from gpipe.engine import backend as backends


# The targets the benchmark is used to check: (graph, algorithm, backend) -> (figure, bound).
# "median_ms" must be at most the bound, "scipy_ratio" at least.
TARGETS = {
    ("kron25", "bfs", "gpu"): ("median_ms", 10.0),
    ("kron27", "bfs", "gpu"): ("median_ms", 50.0),
    ("grid215", "bfs", "gpu"): ("median_ms", 10.0),
    ("kron22", "sssp", "gpu"): ("median_ms", 20.0),
    ("kron25", "sssp", "gpu"): ("median_ms", 150.0),
    ("kron20", "bfs", "cpu"): ("scipy_ratio", 7.0),
    ("kron20", "sssp", "cpu"): ("scipy_ratio", 3.0),
}


# End to end, warm, total seconds; and the build alone: seconds and peak / input bytes.
E2E_TARGETS = {("kron24", "gpu"): 1.0}


BUILD_TARGETS = {("kron23", "gpu"): (0.4, 2.5)}


def summarize(result, graph_bytes):
    rows = result["sources"]
    result["median_s"] = statistics.median(r["time_s"] for r in rows)
    result["median_ms"] = result["median_s"] * 1e3
    rates = [r["gteps"] for r in rows]
    result["gteps_hmean"] = statistics.harmonic_mean(rates) if all(rates) else 0.0
    result["gteps_median"] = statistics.median(rates)
    device = [r["traversal_device_bytes"] for r in rows]
    if all(d is not None for d in device):
        result["peak_memory_bytes"] = graph_bytes + max(device)
        result["memory_note"] = "graph CSR bytes + CuPy pool high-water of the traversal"
    else:
        arrays = [r["result_array_bytes"] for r in rows if r["result_array_bytes"] is not None]
        result["peak_memory_bytes"] = graph_bytes + max(arrays) if arrays else None
        result["memory_note"] = "graph CSR bytes + result arrays (host)" if arrays else None


def machine(backend_name) -> dict:
    import dask

    machine = {
        "hostname": socket.gethostname(),
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "dask": dask.__version__,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "gpu": None,
        "git_commit": git_commit(),
        "load_average_at_start": load_average(),
    }
    if backend_name == backends.GPU:
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        name = props["name"]
        machine["gpu"] = name.decode() if isinstance(name, bytes) else name
        machine["gpu_count"] = cupy.cuda.runtime.getDeviceCount()
        machine["cupy"] = cupy.__version__
    return machine


def load_average():
    """The 1-, 5- and 15-minute load averages: other work on the machine skews the figures."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def command_line(options) -> str:
    """The ``gpipe bench`` command that runs with ``options`` (defaults left out)."""
    flags = {"scale": "--scale", "grid": "--grid", "edges": "--edges", "src": "--src", "dst": "--dst",
             "weight": "--weight", "ids": "--ids", "seed": "--seed", "algo": "--algo", "sources": "--sources",
             "repeat": "--repeat", "backend": "--backend", "workers": "--workers",
             "partitions": "--partitions", "protocol": "--protocol", "build_repeat": "--build-repeat"}
    defaults = {"src": "src", "dst": "dst", "weight": None, "ids": "dense", "seed": 0, "repeat": 1, "workers": 0,
                "protocol": "auto", "build_repeat": 1}
    words = ["gpipe", "bench"]
    for key, flag in flags.items():
        value = options[key]
        if key == "protocol" and not options["workers"]:
            continue  # no workers, no transport
        if value is not None and defaults.get(key, object()) != value:
            words += [flag, str(value)]
    switches = {"weights": "--weights", "shared_gpu": "--shared-gpu", "compare_scipy": "--compare-scipy",
                "end_to_end": "--end-to-end", "paths": "--paths"}
    words += [flag for key, flag in switches.items() if options[key]]
    if not options["scipy_check"]:
        words.append("--no-scipy-check")
    return " ".join(shlex.quote(w) for w in words)


def git_commit():
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        head = subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=5).stdout.strip()
        changes = subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
                                 capture_output=True, text=True, timeout=5).stdout.strip()
        return (head + ("-dirty" if changes else "")) or None
    except (OSError, subprocess.SubprocessError):
        return None


def target(report, result):
    """``(text, met)`` for the target of this row, or ``("", None)`` when it has none."""
    key = (report["graph"]["name"], result["algo"], result["backend"])
    if key not in TARGETS:
        return "", None
    figure, bound = TARGETS[key]
    if figure == "median_ms":
        return f"<= {bound:g} ms", result["median_ms"] <= bound
    ratio = result.get("scipy", {}).get("ratio")
    return f">= {bound:g}x scipy", (ratio >= bound if ratio is not None else None)


def human_bytes(value):
    if value is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.2f} {unit}"
        value /= 1024


def format_table(report) -> str:
    """The report as a plain-text table: one row per algorithm, then build and end-to-end lines."""
    g = report["graph"]
    header = ["graph", "vertices", "directed edges", "algo", "backend", "workers", "owners", "median ms",
              "public ms", "len() ms", "GTEPS", "peak memory", "scipy ms", "ratio", "target", "met?"]
    rows = []
    for r in report["results"]:
        scipy_result = r.get("scipy")
        text, met = target(report, r)
        rows.append([
            g["name"] + (" (float32 weights)" if g.get("weight_dtype") == "float32" else ""),
            f"{g['vertices']:,}", f"{g['directed_edges']:,}", r["algo"], r["backend"],
            str(r["workers"]),
            " ".join(str(x) for x in (r.get("owners", "-"), g.get("transport")) if x is not None),
            f"{r['median_ms']:.2f}",
            f"{r['public_median_ms']:.2f}" if "public_median_ms" in r else "-",
            f"{r['public_len_median_ms']:.2f}" if "public_len_median_ms" in r else "-",
            f"{r['gteps_hmean']:.4g}", human_bytes(r["peak_memory_bytes"]),
            f"{scipy_result['median_s'] * 1e3:.2f}" if scipy_result else "-",
            f"{scipy_result['ratio']:.2f}x" if scipy_result else "-",
            text or "-", {True: "yes", False: "NO", None: "-"}[met],
        ])
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in rows]

    b = report["build"]
    build = (f"build ({'first in process' if b['runs'][-1]['first_in_process'] else 'warm'}): "
             f"{b['time_s']:.3f} s, input {human_bytes(b['input_bytes'])}")
    if g.get("generate_s") is not None:
        made = "read and persisted" if report["options"].get("edges") else "generated"
        build += f" ({made} in {g['generate_s']:.2f} s before the build"
        if g.get("file_bytes"):
            build += (f", {human_bytes(g['file_bytes'])} of files at "
                      f"{g['file_bytes'] / 1e9 / max(g['generate_s'], 1e-9):.2f} GB/s")
        build += ")"
    if b["peak_device_bytes"] is not None:
        build += f", peak device {human_bytes(b['peak_device_bytes'])} ({b['peak_over_input']:.2f}x input)"
    kind = b.get("memory_kind", "device")
    if b.get("owner_peaks_sampled") and any(p is not None for p in b["owner_peaks_sampled"]):
        build += (f"; per owner, sampled {kind} peak "
                  + " / ".join(human_bytes(p) if p is not None else "-" for p in b["owner_peaks_sampled"])
                  + f" above the {human_bytes(b['owner_input_bytes'])} of input each held"
                  + f", against the sizing's {human_bytes(b['owner_estimate_bytes'])}")
        if kind == "host":
            build += " (resident-set growth: a first build in a process also compiles the kernels)"
    key = (g["name"], report["options"]["backend"])
    if key in BUILD_TARGETS:
        seconds, ratio = BUILD_TARGETS[key]
        met = b["time_s"] <= seconds and (b["peak_over_input"] or np.inf) <= ratio
        build += f"; target <= {seconds:g} s and <= {ratio:g}x input: {'yes' if met else 'NO'}"
    lines += ["", build]
    if b.get("owner_phase_peaks"):
        lines.append(f"build by phase, sampled {kind} peak while each ran: " + "; ".join(
            f"owner {p}: " + (", ".join(f"{phase} {human_bytes(bytes_)}" for phase, bytes_ in peaks.items())
                              if peaks else "-")
            for p, peaks in enumerate(b["owner_phase_peaks"])))
    for r in report["results"]:
        lines.append(f"{r['algo']}: warm-up {r['warmup_s'] * 1e3:.1f} ms; per source ms: "
                     + ", ".join(f"{s['time_s'] * 1e3:.2f}" for s in r["sources"]))
        if "path" in r:
            p = r["path"]
            lines.append(f"{r['algo']}: path(s, t) median {p['median_ms']:.2f} ms over {len(p['pairs'])} "
                         f"pair(s) (hops {p['hops']}), len() {p['len_median_ms']:.2f} ms: "
                         f"ratio {p['ratio']:.2f} (target <= 1)")
        if "parents_memory" in r:
            m = r["parents_memory"]
            lines.append(f"{r['algo']}: memory with parents: peak {human_bytes(m['parents']['peak_device_bytes'])}, "
                         f"arrays {human_bytes(m['parents']['array_bytes'])}; parents=False: peak "
                         f"{human_bytes(m['no_parents']['peak_device_bytes'])}, arrays "
                         f"{human_bytes(m['no_parents']['array_bytes'])}")
        if "public_len_back_to_back_median_ms" in r:
            lines.append(f"{r['algo']}: len() back to back (each query within Dask's client batching "
                         f"window of the last): {r['public_len_back_to_back_median_ms']:.2f} ms")
        owners = owner_summary(r["sources"])
        if owners:
            lines.append(f"{r['algo']} owners per source (an extra untimed run; per owner a/b): {owners}")
    if "end_to_end" in report:
        e2e = report["end_to_end"]
        for kind, runs in e2e["runs"].items():
            for label, p in runs.items():
                line = (f"end to end {kind} {label}: read+persist {p['read_persist_s']:.3f} s, build "
                        f"{p['build_s']:.3f} s, traverse {p['traverse_s']:.3f} s, result {p['result_s']:.3f} s, "
                        f"total {p['total_s']:.3f} s")
                bound = E2E_TARGETS.get(key)
                if label == "warm" and bound is not None:
                    line += f"; target <= {bound:g} s: {'yes' if p['total_s'] <= bound else 'NO'}"
                lines.append(line)
    m = report["machine"]
    load = m.get("load_average_at_end")
    options = report.get("options", {})
    lines.append(f"machine: {m['hostname']}, {m['cpu_count']} CPUs, GPU {m['gpu'] or 'none'}, {m['date']}"
                 + (f", load average {load[0]:.2f} at the end" if load else "")
                 + (f"; workers over {options['protocol']}" if options.get("workers") else ""))
    return "\n".join(lines)


def format_protocols(reports) -> str:
    """One line per algorithm setting the runs' medians side by side, one run per transport."""
    lines = []
    for results in zip(*(r["results"] for r in reports)):
        lines.append(f"{results[0]['algo']} by transport: " + ", ".join(
            f"{r['options']['protocol']} {x['median_ms']:.2f} ms (len() "
            f"{x.get('public_len_median_ms', float('nan')):.2f} ms)"
            for r, x in zip(reports, results)))
    return "\n".join(lines)


def owner_summary(rows) -> str:
    """One line per source of the owners' steps: exchanges, buckets, rounds, bytes, seconds."""
    parts = []
    for r in rows:
        owners = r.get("owners")
        if not owners:
            continue
        steps = owners[0]["steps"]
        buckets = len(set(owners[0]["labels"]))
        rounds = "/".join(str(sum(o["rounds"])) for o in owners)
        sent = sum(sum(o["bytes_sent"]) for o in owners)
        work = "/".join(f"{o['kernel_s'] * 1e3:.1f}" for o in owners)
        wait = "/".join(f"{o['wait_s'] * 1e3:.1f}" for o in owners)
        whole = "/".join(f"{o.get('total_s', 0.0) * 1e3:.1f}" for o in owners)
        setup = "/".join(f"{o.get('setup_s', 0.0) * 1e3:.1f}" for o in owners)
        frame = "/".join(f"{o.get('frame_s', 0.0) * 1e3:.1f}" for o in owners)
        starts = [o.get("started_at", 0.0) for o in owners]
        parts.append(f"{steps} steps, {buckets} buckets, local rounds {rounds}, sent {human_bytes(sent)}, "
                     f"kernel ms {work}, wait ms {wait}, owner ms (start to frame) {whole}, of which "
                     f"setup ms {setup} and frame ms {frame}; owners started within {(max(starts) - min(starts)) * 1e3:.1f} ms")
    return "; ".join(parts)
