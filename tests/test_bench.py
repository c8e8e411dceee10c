"""`gpipe bench` and the array-level validator it relies on (CPU, small graphs).

The validator tests plant faults in correct traversals and require the check to fail, naming
the vertex: a benchmark whose validation cannot fail would prove nothing.
"""

from __future__ import annotations

import json
import logging
import re

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import gpipe
from gpipe import generators
from gpipe.engine import traverse
from gpipe.tools import bench, bench_checks, bench_graphs, bench_report, cli
from gpipe.tools.verify import check_no_parent_cycle, check_traversal_arrays

REPORT_KEYS = {"machine", "command", "options", "graph", "build", "results"}
RESULT_KEYS = {"algo", "backend", "workers", "owners", "warmup_s", "sources", "median_s", "median_ms",
               "gteps_hmean", "gteps_median", "peak_memory_bytes", "validated", "public_median_ms"}
SOURCE_KEYS = {"source", "source_global", "times_s", "time_s", "reached", "reached_edges", "max_distance", "gteps",
               "public_s"}


@pytest.fixture
def restore_logging():
    """The CLI adds a handler on the current stderr (capsys's here, closed after the test)."""
    logger = logging.getLogger("gpipe")
    handlers, level = list(logger.handlers), logger.level
    yield
    logger.handlers[:] = handlers
    logger.setLevel(level)


@pytest.fixture(scope="module")
def kron_part():
    """A one-owner undirected weighted Kronecker graph (scale 8) and its Partition."""
    edges = generators.kronecker_edges(8, weights=True, seed=3)
    frame = dd.from_delayed([dask.delayed(edges, name="test-bench-kron8")], meta=edges.iloc[:0])
    graph = gpipe.Graph.from_edges(frame, directed=False, weight="weight")
    part = graph.engine.built.parts[0]
    source = int(np.argmax(np.diff(part.indptr)))  # the highest-degree vertex: a big component
    return part, source


def _check(part, dist, parent, source, weighted):
    return check_traversal_arrays(np, part.indptr, part.indices, part.weights if weighted else None,
                                  dist, parent, [source])


# --- the command ---------------------------------------------------------------------------------


def test_bench_command_writes_report(tmp_path, capsys, restore_logging):
    path = tmp_path / "report.json"
    status = cli.main(["-q", "bench", "--scale", "8", "--algo", "both", "--sources", "3",
                       "--compare-scipy", "--json", str(path)])
    assert status == 0
    report = json.loads(path.read_text())
    assert REPORT_KEYS <= set(report)
    assert {"hostname", "cpu_count", "gpu", "date"} <= set(report["machine"])
    assert report["command"].startswith("gpipe bench --scale 8")
    assert report["graph"]["name"] == "kron8"
    assert report["graph"]["vertices"] <= 256 and report["graph"]["directed_edges"] > 0
    assert [r["algo"] for r in report["results"]] == ["bfs", "sssp"]
    for result in report["results"]:
        assert RESULT_KEYS <= set(result)
        assert result["validated"] and result["scipy_checked"]
        assert len(result["sources"]) == 3
        for row in result["sources"]:
            assert SOURCE_KEYS <= set(row)
            assert row["reached_edges"] > 0 and row["gteps"] > 0
        assert result["scipy"]["ratio"] > 0 and len(result["scipy"]["times_s"]) == 3
        assert result["scipy"]["public_ratio"] > 0
        assert result["scipy"]["paired"] and "scipy_times" not in result  # no client: per source
    # the same sources for both algorithms, and the table names the graph
    assert [s["source"] for s in report["results"][0]["sources"]] == [
        s["source"] for s in report["results"][1]["sources"]]
    out = capsys.readouterr().out
    assert "kron8" in out and "median ms" in out and "public ms" in out and "GTEPS" in out


def test_bench_grid_starts_at_centre():
    report = bench.run(grid=6, algo="bfs", sources=2)
    first = report["results"][0]["sources"][0]
    assert first["source"] == generators.grid_centre(6)
    assert first["reached"] == 6**3
    assert first["max_distance"] == 9  # centre (3, 3, 3) to corner (0, 0, 0)
    assert first["reached_edges"] == 2 * 3 * 6**2 * 5  # every edge, both directions


def test_bench_end_to_end():
    report = bench.run(scale=8, algo="bfs", sources=1, end_to_end=True, build_repeat=2)
    runs = report["end_to_end"]["runs"]["bfs"]
    for label in ("cold", "warm"):
        phases = runs[label]
        assert {"read_persist_s", "build_s", "traverse_s", "result_s", "total_s"} <= set(phases)
        assert phases["result_rows"] == report["graph"]["present_vertices"]
    assert report["end_to_end"]["validated"]
    assert report["end_to_end"]["source"] == report["results"][0]["sources"][0]["source"]
    assert len(report["build"]["runs"]) == 2


def test_bench_on_two_workers_times_scipy_after_all_sources():
    report = bench.run(scale=7, algo="bfs", sources=2, workers=2, partitions=2, compare_scipy=True)
    result = report["results"][0]
    assert result["owners"] == 2 and result["validated"]
    assert report["graph"]["generated_shares"] == 2  # each owner's worker drew its own share
    assert not result["scipy"]["paired"] and len(result["scipy"]["times_s"]) == 2
    assert result["scipy"]["ratio"] > 0
    owners = result["sources"][0]["owners"]
    for owner in owners:  # the untimed run's steps, its frame, and the owner's whole time
        assert owner["total_s"] >= owner["kernel_s"] + owner["wait_s"] + owner["frame_s"] + owner["setup_s"] > 0
        assert owner["frame_s"] > 0 and owner["setup_s"] > 0
    spread = max(o["started_at"] for o in owners) - min(o["started_at"] for o in owners)
    assert 0 <= spread < 60
    summary = bench_report.owner_summary(result["sources"])
    assert "owner ms (start to frame)" in summary and "setup ms" in summary and "frame ms" in summary
    assert re.search(r"owners started within [\d.]+ ms", summary)


def test_bench_parquet_edges_with_sparse_ids(tmp_path):
    edges = generators.kronecker_edges(7, seed=1)
    edges = edges.assign(src=edges.src * 1000 - 5, dst=edges.dst * 1000 - 5)  # renumbered ids
    edges.to_parquet(tmp_path / "edges.parquet")
    report = bench.run(edges=str(tmp_path / "edges.parquet"), algo="both", weights=True, sources=2)
    for result in report["results"]:
        assert result["validated"]
        assert all(row["source"] % 1000 == 995 for row in result["sources"])  # input ids reported
    assert report["graph"]["file_bytes"] == (tmp_path / "edges.parquet").stat().st_size
    assert re.search(r"read and persisted in [\d.]+ s before the build, [\d.]+ KiB of files at [\d.]+ GB/s",
                     bench_report.format_table(report))


@pytest.mark.parametrize("ids", ["sparse", "string"])
def test_bench_generated_ids_sparse_or_strings(ids):
    report = bench.run(grid=5, algo="both", sources=2, ids=ids, end_to_end=True)
    assert report["graph"]["name"] == f"grid5-{ids}-ids"
    centre = generators.grid_centre(5)
    for result in report["results"]:
        assert result["validated"]
        first = result["sources"][0]
        sparse = centre * bench_graphs.SPARSE_STRIDE + bench_graphs.SPARSE_BASE
        assert first["source"] == (str(centre) if ids == "string" else sparse)
        assert first["reached"] == 5**3
        if result["algo"] == "bfs":
            assert first["max_distance"] == 6  # centre (2, 2, 2) to a corner
    assert report["end_to_end"]["validated"]


@pytest.mark.parametrize("backend", [pytest.param("cpu", id="cpu"),
                                     pytest.param("gpu", id="gpu", marks=pytest.mark.gpu)])
def test_bench_string_ids_on_two_workers(backend):
    """Several owners: the frame check maps the result's strings back to global ids."""
    report = bench.run(scale=7, algo="both", sources=2, ids="string", workers=2, partitions=2,
                       backend=backend)
    assert all(r["validated"] and r["owners"] == 2 for r in report["results"])
    assert all(isinstance(row["source"], str) for row in report["results"][0]["sources"])


@pytest.mark.gpu
def test_sampled_peak_sees_what_any_allocator_takes():
    import cupy

    from gpipe.tools import bench_memory

    peaks = bench_memory.Peaks(None)
    block = cupy.cuda.runtime.malloc(256 * 2**20)  # past CuPy's pool, as RMM would
    try:
        (peak,) = peaks.stop().values()
    finally:
        cupy.cuda.runtime.free(block)
    assert 256 * 2**20 <= peak < 512 * 2**20


@pytest.mark.gpu
def test_bench_reports_each_owners_sampled_build_peak():
    report = bench.run(scale=8, algo="bfs", sources=1, workers=2, partitions=2, backend="gpu")
    peaks = report["build"]["owner_peaks_sampled"]
    assert len(peaks) == 2 and all(p is not None and p >= 0 for p in peaks)
    assert report["build"]["owner_estimate_bytes"] > 0


def test_bench_rejects_bad_options():
    with pytest.raises(gpipe.InputError):
        bench.run(scale=6, grid=4)
    with pytest.raises(gpipe.InputError):
        bench.run(scale=6, algo="dfs")
    with pytest.raises(gpipe.InputError, match="--ids"):
        bench.run(edges="edges.parquet", ids="string")


def test_bench_fails_on_a_wrong_traversal(monkeypatch):
    real = traverse.bfs_arrays

    def off_by_one(part, sources, depth_limit=None):
        dist, parent = real(part, sources, depth_limit)
        dist = dist.copy()
        dist[dist > 1] += 1
        return dist, parent

    monkeypatch.setattr(traverse, "bfs_arrays", off_by_one)
    with pytest.raises(AssertionError, match="vertex"):
        bench.run(scale=8, algo="bfs", sources=1)


# --- the validator ---------------------------------------------------------------------------------


def traversed(part, source, kind):
    """``(dist, parent)`` of a BFS (``kind`` "bfs") or an SSSP ("sssp") of ``part`` from ``source``."""
    if kind == "bfs":
        return traverse.bfs_arrays(part, [source])
    return traverse.sssp_arrays(part, [source], False)


@pytest.mark.parametrize("kind", ["bfs", "sssp"])
def test_validator_accepts_correct_results(kron_part, kind):
    part, source = kron_part
    dist, parent = traversed(part, source, kind)
    stats = _check(part, dist, parent, source, kind == "sssp")
    assert stats["reached"] > 1
    degree = np.diff(part.indptr)
    reached = dist >= 0 if kind == "bfs" else np.isfinite(dist)
    assert stats["reached_edges"] == degree[reached].sum()


@pytest.mark.parametrize("kind", ["bfs", "sssp"])
def test_validator_fails_on_planted_bad_parent(kron_part, kind):
    part, source = kron_part
    dist, parent = traversed(part, source, kind)
    reached = np.flatnonzero((dist > 0) & np.isfinite(dist))
    v = int(reached[-1])
    neighbours = set(part.indices[part.indptr[v]:part.indptr[v + 1]].tolist())
    # a reached vertex that is not adjacent to v: the edge parent -> v does not exist
    stranger = next(int(u) for u in reached if int(u) not in neighbours and int(u) != v)
    parent = parent.copy()
    parent[v] = stranger
    with pytest.raises(AssertionError, match=f"vertex {v}:"):
        _check(part, dist, parent, source, kind == "sssp")


def test_validator_fails_on_parent_along_a_longer_edge(kron_part):
    part, source = kron_part
    dist, parent = traverse.sssp_arrays(part, [source], False)
    # v's parent replaced by a real neighbour through which v is strictly farther
    for v in np.argsort(-dist[np.isfinite(dist)]).tolist():
        nbrs = part.indices[part.indptr[v]:part.indptr[v + 1]]
        w = part.weights[part.indptr[v]:part.indptr[v + 1]]
        worse = nbrs[(dist[nbrs] + w > dist[v]) & np.isfinite(dist[nbrs])]
        if v != source and len(worse):
            break
    parent = parent.copy()
    parent[v] = int(worse[0])
    with pytest.raises(AssertionError, match=f"vertex {v}:"):
        _check(part, dist, parent, source, True)


@pytest.mark.parametrize("kind", ["bfs", "sssp"])
def test_validator_fails_on_planted_wrong_distance(kron_part, kind):
    part, source = kron_part
    dist, parent = traversed(part, source, kind)
    v = int(np.flatnonzero((dist > 0) & np.isfinite(dist))[0])
    dist = dist.copy()
    dist[v] += 1  # one too far: its parent no longer accounts for it, its neighbours undercut it
    with pytest.raises(AssertionError, match="vertex"):
        _check(part, dist, parent, source, kind == "sssp")


def test_validator_fails_on_unreached_neighbour_and_bad_source(kron_part):
    part, source = kron_part
    dist, parent = traverse.bfs_arrays(part, [source])
    leaves = np.flatnonzero(dist == dist.max())
    cut = dist.copy(), parent.copy()
    cut[0][leaves[0]] = -1
    cut[1][leaves[0]] = -1
    with pytest.raises(AssertionError, match="unreached, but its in-neighbour"):
        _check(part, *cut, source, False)
    bad = dist.copy()
    bad[source] = 1
    with pytest.raises(AssertionError, match=f"vertex {source}: a source"):
        _check(part, bad, parent, source, False)


def test_validator_per_owner_rows(kron_part):
    """symmetric=True checks a slice of rows (one owner's) against the global arrays."""
    part, source = kron_part
    dist, parent = traverse.sssp_arrays(part, [source], False)
    n = part.n_local
    half = n // 2
    lo = (part.indptr[:half + 1], slice(0, part.indptr[half]), 0)
    hi = (part.indptr[half:] - part.indptr[half], slice(part.indptr[half], None), half)
    total = 0
    for indptr, edges, offset in (lo, hi):
        stats = check_traversal_arrays(np, indptr, part.indices[edges], part.weights[edges], dist, parent,
                                       [source], offset=offset, symmetric=True)
        total += stats["reached_edges"]
    assert total == np.diff(part.indptr)[np.isfinite(dist)].sum()
    v = int(np.flatnonzero(np.isfinite(dist) & (parent >= 0))[-1])
    assert v >= half
    parent = parent.copy()
    parent[v] = source if v not in part.indices[part.indptr[source]:part.indptr[source + 1]] else -1
    indptr, edges, offset = hi
    with pytest.raises(AssertionError, match=f"vertex {v}:"):
        check_traversal_arrays(np, indptr, part.indices[edges], part.weights[edges], dist, parent, [source],
                               offset=offset, symmetric=True)


def test_validator_with_each_owners_own_parents(kron_part):
    """parent_rows=True: each owner is given only its rows' parents, and still catches a planted
    wrong parent in them, a source's parent, and (caller's side) a parent cycle."""
    part, source = kron_part
    dist, parent = traverse.sssp_arrays(part, [source], False)
    half = part.n_local // 2
    owners = [(part.indptr[:half + 1], slice(0, part.indptr[half]), 0, half),
              (part.indptr[half:] - part.indptr[half], slice(part.indptr[half], None), half, part.n_local - half)]

    def check(parent, weights=part.weights):
        return [check_traversal_arrays(np, indptr, part.indices[edges], weights[edges], dist,
                                       parent[offset:offset + size], [source], offset=offset,
                                       symmetric=True, parent_rows=True)
                for indptr, edges, offset, size in owners]

    stats = check(parent)
    assert sum(s["reached_edges"] for s in stats) == np.diff(part.indptr)[np.isfinite(dist)].sum()
    assert not any(s["cycles_unchecked"] for s in stats)
    v = int(np.flatnonzero(np.isfinite(dist) & (parent >= 0))[-1])
    wrong = parent.copy()
    wrong[v] = source if v not in part.indices[part.indptr[source]:part.indptr[source + 1]] else -1
    with pytest.raises(AssertionError, match=f"vertex {v}:"):
        check(wrong)
    wrong = parent.copy()
    wrong[source] = v
    with pytest.raises(AssertionError, match=f"vertex {source}: a source, but its parent is {v}"):
        check(wrong)
    zero = part.weights.copy()
    zero[0] = 0.0  # a zero weight: only the caller, who holds every parent, can look for cycles
    assert any(s["cycles_unchecked"] for s in check(parent, zero))
    cycle = parent.copy()
    cycle[int(parent[v])] = v  # v and its parent, each the other's parent
    with pytest.raises(AssertionError, match="cycle"):
        check_no_parent_cycle(np, cycle, np.isfinite(dist))
    check_no_parent_cycle(np, parent, np.isfinite(dist))  # the control: the true tree has none
    with pytest.raises(ValueError, match="needs symmetric=True"):
        check_traversal_arrays(np, part.indptr, part.indices, None, dist, parent, [source], parent_rows=True)


def test_check_frame_on_two_owners_sends_the_arrays_outside_the_tasks(dask_client2, recwarn):
    """The bench's validation of a 2-owner result sends each owner the distances and its rows'
    parents straight, not as task arguments through the scheduler (kron28's 3 GiB per owner
    were), and still finds a planted wrong parent."""
    edges = generators.kronecker_edges(13, seed=5)
    with dask_client2.as_current(), dask.config.set({"distributed.admin.large-graph-warning-threshold": "48kB"}):
        graph = gpipe.Graph.from_edges(dd.from_pandas(edges, npartitions=2), directed=False, partitions=2)
        built = graph.engine.built
        assert built.layout.n_owners == 2 and 12 * built.layout.n > 48 * 1024  # what each task carried
        source = int(edges.src.iloc[0])
        frame = graph.bfs(source).compute()
        stats, dist = bench_checks.check_frame(graph, "bfs", frame, [source])
        assert stats["reached"] == int((dist >= 0).sum()) > 1
        assert not [w for w in recwarn if "Sending large graph" in str(w.message)]
        wrong = frame.reset_index(drop=True)
        row = wrong.index[wrong["distance"] > 1][-1]
        vertex = int(wrong.loc[row, "vertex"])
        wrong.loc[row, "parent"] = vertex  # its own parent: no such edge
        with pytest.raises(AssertionError, match=f"vertex {vertex}:"):
            bench_checks.check_frame(graph, "bfs", wrong, [source])


def test_format_table_marks_targets():
    report = {
        "graph": {"name": "kron20", "vertices": 2**20, "directed_edges": 10},
        "options": {"backend": "cpu"},
        "machine": {"hostname": "h", "cpu_count": 2, "gpu": None, "date": "d"},
        "build": {"runs": [{"first_in_process": True}], "time_s": 1.0, "input_bytes": 8,
                  "peak_device_bytes": None, "peak_over_input": None},
        "results": [{"algo": "bfs", "backend": "cpu", "workers": 0, "median_ms": 10.0, "gteps_hmean": 1.0,
                     "peak_memory_bytes": None, "warmup_s": 0.1, "sources": [{"time_s": 0.01}],
                     "scipy": {"median_s": 0.05, "ratio": 5.0}}],
    }
    table = bench.format_table(report)
    assert ">= 7x scipy" in table and "NO" in table
    report["results"][0]["scipy"]["ratio"] = 8.0
    assert "yes" in bench.format_table(report)


def test_frame_check_matches_array_check(kron_part):
    """The several-owner path validates result frames; a wrong frame must fail too."""
    edges = generators.kronecker_edges(7, seed=2)
    frame = dd.from_pandas(edges, npartitions=2)
    graph = gpipe.Graph.from_edges(frame, directed=False)
    result = graph.bfs(int(edges.src.iloc[0])).compute()
    sources = graph.engine.global_ids(int(edges.src.iloc[0]))
    stats, _ = bench_checks.check_frame(graph, "bfs", result, sources)
    assert stats["reached"] == int(result.distance.notna().sum())
    wrong = result.copy()
    wrong["distance"] = wrong["distance"].where(wrong["distance"] != 2, 3)
    with pytest.raises(AssertionError, match="vertex"):
        bench_checks.check_frame(graph, "bfs", wrong, sources)
    assert isinstance(result, pd.DataFrame)


def test_a_cluster_that_will_not_close_does_not_hide_the_error_that_ended_the_bench(caplog):
    """kron28 SSSP on 4 GPUs: the workers did not stop in time, and the TimeoutError of the
    cluster's close replaced the error the bench had met."""
    from gpipe.tools import bench_clusters

    class Client:
        closed = False

        def close(self):
            self.closed = True

    class Cluster:
        def close(self):
            raise TimeoutError("worker process still alive")

    client = Client()
    with pytest.raises(ValueError, match="the bench's own error"):
        try:
            raise ValueError("the bench's own error")
        finally:
            bench_clusters.close_quietly(client, Cluster())
    assert client.closed and "did not close cleanly" in caplog.text


def test_a_phase_peaks_at_the_highest_sample_taken_while_its_tasks_ran():
    from gpipe.tools import bench_phases

    stream = [
        {"key": "gpipe-shuffle-0123456789abcdef0123456789abcdef", "worker": "w0",
         "startstops": [{"action": "compute", "start": 1.0, "stop": 2.0}]},
        {"key": "gpipe-build-0-0123456789abcdef0123456789abcdef", "worker": "w0",
         "startstops": [{"action": "transfer", "start": 2.0, "stop": 2.5, "source": "w1"},
                        {"action": "compute", "start": 2.5, "stop": 2.502}]},
        {"key": "gpipe-nccl-device-0-0123456789abcdef0123456789abcdef", "worker": "w0",
         "startstops": [{"action": "compute", "start": 3.0, "stop": 3.1}]},
    ]
    timeline = {"start": 100, "samples": [(0.9, 100), (1.5, 160), (1.9, 130), (2.2, 190), (2.4, 170),
                                           (2.45, 175), (3.05, 500)]}
    (peaks,) = bench_phases.owner_phase_peaks({"w0": timeline}, stream, ["w0"])
    # the CSR task, shorter than the sampling period, takes the sample just before its end
    assert peaks == {"split": 60, "receive": 90, "csr": 75}
    assert list(peaks) == ["split", "receive", "csr"]  # build order; the NCCL task is no phase
    assert bench_phases.owner_phase_peaks({}, stream, ["w0"]) == [None]


def test_bench_reports_each_owners_build_by_phase_on_a_cpu_cluster():
    report = bench.run(scale=9, algo="bfs", sources=1, workers=2, partitions=2, backend="cpu")
    build = report["build"]
    assert build["memory_kind"] == "host"
    assert len(build["owner_phase_peaks"]) == 2
    for peaks in build["owner_phase_peaks"]:
        assert {"split", "csr"} <= set(peaks) and all(isinstance(v, int) for v in peaks.values())
    assert "build by phase" in bench.format_table(report)


def test_bench_tmpdir_that_does_not_exist_is_made(tmp_path, restore_logging):
    scratch = tmp_path / "not" / "yet"
    status = cli.main(["-q", "bench", "--scale", "6", "--sources", "1", "--end-to-end",
                       "--backend", "cpu", "--tmpdir", str(scratch)])
    assert status == 0
    assert scratch.is_dir() and not any(scratch.iterdir())  # the run's own folder is gone again
