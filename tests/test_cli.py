"""The ``gpipe`` command: bfs, sssp, run and demo, called in-process through ``main([...])``.

bfs and sssp run without a Dask cluster here (no ``--cluster``: in-process); their answers are
compared with SciPy (tests/reference.py) and their trees checked by gpipe.tools.verify. One test
runs ``python -m gpipe run`` in a subprocess on a one-worker cluster, the way a scheduler
would, and the demo test starts a small local cluster.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import yaml

import gpipe
from gpipe.tools.cli import main
from gpipe.tools.verify import check_bfs_tree, check_sssp_tree
from reference import expected_bfs, expected_sssp, random_edges, result_distances

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    """A small weighted graph with sparse ids and two components, as a two-file Parquet folder."""
    edges = random_edges(40, 110, seed=11, weights="positive", ids="sparse", components=2, self_loops=2)
    folder = tmp_path_factory.mktemp("graph") / "edges"
    folder.mkdir()
    half = len(edges) // 2
    edges.iloc[:half].to_parquet(folder / "part.0.parquet", index=False)
    edges.iloc[half:].to_parquet(folder / "part.1.parquet", index=False)
    return edges, folder


def sources_of(edges, count):
    return [int(v) for v in edges["src"].drop_duplicates().iloc[:count]]


def assert_distances(out, expected):
    result = pd.read_parquet(out)
    assert list(result.columns) == ["vertex", "distance", "parent"]
    got = result_distances(result)
    pd.testing.assert_series_equal(got, expected.sort_index(), check_exact=False, rtol=1e-12)
    return result


@pytest.mark.parametrize("directed", [True, False])
def test_bfs_matches_scipy(graph, tmp_path, directed):
    edges, folder = graph
    source = sources_of(edges, 1)[0]
    out = tmp_path / "bfs"
    argv = ["bfs", str(folder), "--source", str(source), "--out", str(out)]
    assert main(argv + ([] if directed else ["--undirected"])) == 0
    result = assert_distances(out, expected_bfs(edges, [source], directed=directed))
    assert result["distance"].dtype == np.float64
    check_bfs_tree(edges, result, [source], directed=directed)


@pytest.mark.parametrize("directed", [True, False])
def test_the_summary_says_directed_or_undirected(graph, tmp_path, capsys, directed):
    edges, folder = graph
    argv = ["bfs", str(folder), "--source", str(sources_of(edges, 1)[0]), "--out", str(tmp_path / "bfs")]
    assert main(argv + ([] if directed else ["--undirected"])) == 0
    summary = [line for line in capsys.readouterr().err.splitlines() if "vertices reached" in line]
    assert len(summary) == 1
    assert ("undirected" in summary[0]) is not directed and "directed" in summary[0]


@pytest.mark.parametrize("algorithm", ["bfs", "sssp"])
def test_written_schema_follows_the_dtype_convention(graph, tmp_path, algorithm):
    """The Parquet files hold the README's convention: ``vertex`` and ``parent`` in the ids'
    type, ``distance`` double for BFS and SSSP alike, and the unreached as nulls (not NaN) in
    both columns, which is what a cuDF writer gives too."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    edges, folder = graph
    source = sources_of(edges, 1)[0]
    out = tmp_path / algorithm
    assert main(["-q", algorithm, str(folder), "--source", str(source), "--out", str(out)]) == 0
    table = pq.read_table(out)
    id_type = pq.read_schema(folder / "part.0.parquet").field("src").type
    assert table.schema.field("vertex").type == id_type
    assert table.schema.field("distance").type == pa.float64()
    assert table.schema.field("parent").type == id_type
    expected = (expected_bfs if algorithm == "bfs" else expected_sssp)(edges, [source], directed=True)
    assert len(expected) == len(table)
    unreached = int(expected.isna().sum())
    assert unreached > 0  # two components: something is unreached
    assert table.column("distance").null_count == unreached
    assert pc.sum(pc.is_nan(table.column("distance"))).as_py() in (0, None)
    assert table.column("parent").null_count == unreached + 1  # and the source


def test_bfs_several_sources_and_depth_limit(graph, tmp_path):
    edges, folder = graph
    sources = sources_of(edges, 3)
    out = tmp_path / "bfs"
    argv = ["-q", "bfs", str(folder), "--out", str(out), "--undirected", "--depth-limit", "1"]
    for source in sources:
        argv += ["--source", str(source)]
    assert main(argv) == 0
    expected = expected_bfs(edges, sources, directed=False, depth_limit=1)
    result = assert_distances(out, expected)
    check_bfs_tree(edges, result, sources, directed=False, depth_limit=1)


@pytest.mark.parametrize("where", ["before", "after"])
def test_quiet_before_or_after_the_command(graph, tmp_path, capsys, where):
    edges, folder = graph
    argv = ["bfs", str(folder), "--source", str(sources_of(edges, 1)[0]), "--out", str(tmp_path / "bfs")]
    assert main(["-q"] + argv if where == "before" else argv + ["-q"]) == 0
    assert "gpipe.pipeline" not in capsys.readouterr().err
    assert main(argv + ["--overwrite"]) == 0  # and without it, the step timings are back
    assert "gpipe.pipeline" in capsys.readouterr().err


@pytest.mark.parametrize("directed", [True, False])
def test_sssp_matches_scipy_with_renamed_columns(graph, tmp_path, directed):
    edges, _ = graph
    renamed = edges.rename(columns={"src": "a", "dst": "b", "weight": "cost"})
    path = tmp_path / "renamed.parquet"
    renamed.to_parquet(path, index=False)
    source = sources_of(edges, 1)[0]
    out = tmp_path / "sssp"
    argv = ["sssp", str(path), "--source", str(source), "--out", str(out)]
    argv += ["--src", "a", "--dst", "b", "--weight", "cost"] + ([] if directed else ["--undirected"])
    assert main(argv) == 0
    result = assert_distances(out, expected_sssp(edges, [source], directed=directed))
    assert result["distance"].dtype == np.float64
    check_sssp_tree(edges, result, [source], directed=directed)


def test_existing_output_needs_overwrite(graph, tmp_path, capsys):
    edges, folder = graph
    first, second = sources_of(edges, 2)
    out = tmp_path / "bfs"
    assert main(["bfs", str(folder), "--source", str(first), "--out", str(out)]) == 0
    before = pd.read_parquet(out)
    capsys.readouterr()

    assert main(["bfs", str(folder), "--source", str(second), "--out", str(out)]) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error == f"gpipe: error: output {str(out)!r} already exists; pass --overwrite to replace it"
    pd.testing.assert_frame_equal(pd.read_parquet(out), before)

    assert main(["bfs", str(folder), "--source", str(second), "--out", str(out), "--overwrite"]) == 0
    assert_distances(out, expected_bfs(edges, [second], directed=True))
    assert [name for name in os.listdir(tmp_path) if name.startswith(".")] == []


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--source", "999999999"], ["999999999"]),  # not a vertex of the graph
        (["--source", "seven"], ["seven"]),  # not an integer id
        (["--source", "0", "--src", "from"], ["from"]),  # no such column
    ],
)
def test_input_errors_are_one_line_and_exit_2(graph, tmp_path, capsys, argv, words):
    _, folder = graph
    out = tmp_path / "bfs"
    assert main(["bfs", str(folder), "--out", str(out)] + argv) == 2
    err = capsys.readouterr().err
    line = [text for text in err.splitlines() if text.startswith("gpipe: error:")]
    assert len(line) == 1 and all(word in line[0] for word in words)
    assert "Traceback" not in err
    assert not out.exists()


@pytest.fixture
def own_edges(graph, tmp_path):
    """A copy of the graph's edge folder, at tmp_path/data/edges, that a test may lose."""
    edges, folder = graph
    copy = tmp_path / "data" / "edges"
    shutil.copytree(folder, copy)
    return edges, copy


def folder_files(folder):
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("overwrite", [False, True])
@pytest.mark.parametrize("where", ["same", "relative", "symlink", "parent", "inside"])
def test_output_over_the_edges_is_refused(own_edges, tmp_path, capsys, monkeypatch, where, overwrite):
    edges, folder = own_edges
    before = folder_files(folder)
    monkeypatch.chdir(tmp_path)
    if where == "symlink":
        (tmp_path / "link").symlink_to(folder)
    out = {"same": str(folder), "relative": "data/./edges", "symlink": "link",
           "parent": str(folder.parent), "inside": str(folder / "result")}[where]
    argv = ["bfs", str(folder), "--source", str(sources_of(edges, 1)[0]), "--out", out]
    assert main(argv + (["--overwrite"] if overwrite else [])) == 2
    err = capsys.readouterr().err
    line = [text for text in err.splitlines() if text.startswith("gpipe: error:")]
    assert len(line) == 1 and repr(out) in line[0] and repr(str(folder)) in line[0], err
    assert "edges path" in line[0]
    assert folder_files(folder) == before


def test_run_refuses_an_output_inside_the_edges(own_edges, tmp_path, capsys):
    edges, folder = own_edges
    config = pipeline_config(tmp_path, "data/edges/*.parquet", sources_of(edges, 1)[0],
                             output={"path": "data/edges", "overwrite": True})
    before = folder_files(folder)
    assert main(["run", str(config)]) == 2
    assert "data/edges" in capsys.readouterr().err
    assert folder_files(folder) == before


def test_missing_edges_path_is_an_input_error(tmp_path, capsys):
    assert main(["sssp", str(tmp_path / "nothing"), "--source", "0", "--out", str(tmp_path / "o")]) == 2
    assert str(tmp_path / "nothing") in capsys.readouterr().err


def test_edges_that_are_not_parquet_are_one_line_and_exit_2(graph, tmp_path, capsys):
    edges, _ = graph
    path = tmp_path / "edges.csv"
    edges.to_csv(path, index=False)
    assert main(["bfs", str(path), "--source", "0", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    line = [text for text in err.splitlines() if text.startswith("gpipe: error:")]
    assert len(line) == 1 and str(path) in line[0] and "Traceback" not in err, err


def cupy_out_of_memory():
    """An exception shaped like cupy.cuda.memory.OutOfMemoryError (CuPy is not installed here)."""
    kind = type("OutOfMemoryError", (MemoryError,), {"__module__": "cupy.cuda.memory"})
    return kind("Out of memory allocating 8,589,934,592 bytes (allocated so far: 0 bytes).")


def numba_wrapped():
    """An error raised while handling a MemoryError, as Numba's dispatcher does."""
    try:
        raise MemoryError("Allocation failed (probably too large).")
    except MemoryError:
        try:
            raise RuntimeError("Failed in nopython mode pipeline (step: native lowering)")
        except RuntimeError as error:
            return error


def killed_worker():
    from distributed.scheduler import KilledWorker

    class Worker:
        address = "tcp://127.0.0.1:40000"

    return KilledWorker("('traverse-3f2a', 0)", Worker(), 3)


@pytest.mark.parametrize(
    "make_error",
    [
        lambda: MemoryError("Unable to allocate 8.00 GiB for an array with shape (1073741824,)"),
        cupy_out_of_memory,
        numba_wrapped,
        lambda: RuntimeError("LLVM ERROR: out of memory"),
        lambda: OSError(errno.ENOMEM, "Cannot allocate memory"),
        killed_worker,
    ],
    ids=["MemoryError", "cupy", "numba", "llvm", "ENOMEM", "KilledWorker"],
)
@pytest.mark.parametrize("command", ["bfs", "run"])
def test_out_of_memory_is_one_line_and_exit_1(graph, tmp_path, capsys, monkeypatch, make_error, command):
    edges, folder = graph
    source = sources_of(edges, 1)[0]

    def traverse(self, *args, **kwargs):
        raise make_error()

    monkeypatch.setattr(gpipe.Graph, "bfs", traverse)
    monkeypatch.setattr(gpipe.Graph, "sssp", traverse)
    if command == "bfs":
        argv = ["bfs", str(folder), "--source", str(source), "--out", str(tmp_path / "out")]
    else:
        argv = ["run", str(pipeline_config(tmp_path, folder, source))]
    assert main(argv) == 1
    err = capsys.readouterr().err
    line = [text for text in err.splitlines() if text.startswith("gpipe: out of memory:")]
    assert len(line) == 1 and "memory" in line[0].split(":", 2)[2].lower(), err
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_other_errors_keep_their_traceback(graph, tmp_path, monkeypatch):
    edges, folder = graph

    def traverse(self, *args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(gpipe.Graph, "bfs", traverse)
    with pytest.raises(RuntimeError, match="a bug"):
        main(["bfs", str(folder), "--source", str(sources_of(edges, 1)[0]), "--out", str(tmp_path / "out")])


def stop_if_running(proc):
    """SIGKILL to the process group of ``proc`` (started with ``start_new_session``) if it runs."""
    import signal

    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)


def interrupted_stderr(status, reader, err, written=()):
    """The stderr of a command that SIGINT stopped, once ``reader`` (the thread appending its
    lines to ``err``) is done: asserted to be exit status 130 and the one last line
    ``gpipe: interrupted`` (naming the outputs ``written`` whole before it, if any), with no
    traceback."""
    reader.join(10)
    stderr = "".join(err)
    assert status == 130, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    last = "gpipe: interrupted"
    if written:
        last += f"; written whole before it: {', '.join(map(str, written))}"
    assert lines[-1] == last and stderr.count("gpipe: interrupted") == 1, stderr
    assert "Traceback" not in stderr and "Error" not in stderr, stderr
    return stderr


def pipeline_config(tmp_path, folder, source, **changes):
    config = {
        "algorithm": "sssp",
        "cluster": None,
        "edges": {"path": str(folder), "src": "src", "dst": "dst", "weight": "weight", "backend": "cpu"},
        "directed": True,
        "source": source,
        "output": {"path": str(tmp_path / "out"), "overwrite": False},
    }
    config.update(changes)
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_run_pipeline_config_in_process(graph, tmp_path, capsys):
    edges, folder = graph
    source = sources_of(edges, 1)[0]
    config = pipeline_config(tmp_path, folder, source)
    assert main(["run", str(config)]) == 0
    assert main(["run", str(config)]) == 2  # the key to set, as the configuration names it
    assert capsys.readouterr().err.strip().endswith("already exists; set output.overwrite to true to replace it")
    result = assert_distances(tmp_path / "out", expected_sssp(edges, [source], directed=True))
    check_sssp_tree(edges, result, [source], directed=True)


def test_run_takes_relative_paths_from_the_config_folder(graph, tmp_path, monkeypatch):
    edges, folder = graph
    source = sources_of(edges, 1)[0]
    (tmp_path / "data").symlink_to(folder)
    (tmp_path / "conf").mkdir()
    config = pipeline_config(tmp_path / "conf", "../data", source, output={"path": "../results/sssp"})
    elsewhere = tmp_path / "a" / "b"  # where "../data" and "../results" are not
    elsewhere.mkdir(parents=True)
    monkeypatch.chdir(elsewhere)
    assert main(["run", str(config)]) == 0
    assert_distances(tmp_path / "results" / "sssp", expected_sssp(edges, [source], directed=True))
    assert os.listdir(elsewhere) == []
    from gpipe.pipeline import load_config

    loaded = load_config(config)  # printed as the folders they name: no "../"
    assert loaded["output"]["path"] == str((tmp_path / "results" / "sssp").resolve())
    assert loaded["edges"]["path"] == str(folder.resolve())


@pytest.mark.parametrize(
    "changes, words",
    [
        ({"algorithm": "dfs"}, ["algorithm", "dfs"]),
        ({"sources": [1]}, ["sources"]),  # misspelt key
        ({"directed": "yes"}, ["directed"]),
        ({"depth_limit": 2}, ["depth_limit"]),  # sssp has none
        ({"cluster": {"kind": "local-cpu", "workers": 2}}, ["workers"]),  # not a Dask key
        ({"cluster": "no-such-cluster.yaml"}, ["no-such-cluster.yaml"]),
    ],
)
def test_run_rejects_bad_configs_naming_the_key(graph, tmp_path, capsys, changes, words):
    edges, folder = graph
    config = pipeline_config(tmp_path, folder, sources_of(edges, 1)[0], **changes)
    assert main(["run", str(config)]) == 2
    err = capsys.readouterr().err
    assert all(word in err for word in words), err
    assert not (tmp_path / "out").exists()


def test_shipped_pipeline_configs_are_valid_and_follow_the_demo():
    from gpipe.tools.demo import demo_hub
    from gpipe.generators import kronecker_edges
    from gpipe.pipeline import load_config, validate_config

    demo_source, _ = demo_hub(kronecker_edges(16, weights=True))
    for name in ("bfs", "sssp"):
        config = load_config(ROOT / "conf" / "pipelines" / f"{name}.yaml")
        settings = validate_config(config)
        assert settings["algorithm"] == name
        assert settings["source"] == demo_source
        assert Path(settings["edges"]["path"]).resolve() == ROOT / "out" / "demo" / "edges"
        assert Path(settings["output"]["path"]).resolve() == ROOT / "out" / "pipelines" / name
        cluster = yaml.safe_load(Path(config["cluster"]).read_text())
        assert cluster["kind"] == "local-cpu"


@pytest.fixture(scope="module")
def string_graph(graph, tmp_path_factory):
    """The same graph with every id written as the string ``v<id>``."""
    edges, _ = graph
    folder = tmp_path_factory.mktemp("strings") / "edges"
    folder.mkdir()
    named = edges.assign(src="v" + edges["src"].astype(str), dst="v" + edges["dst"].astype(str))
    named.to_parquet(folder / "part.0.parquet", index=False)
    return edges, folder


def integer_result(out):
    """A written result of ``v<id>`` strings, with its ids as integers again."""
    result = pd.read_parquet(out)
    assert pd.api.types.is_string_dtype(result["vertex"]) and pd.api.types.is_string_dtype(result["parent"])
    return result.assign(vertex=result["vertex"].str[1:].astype("int64"),
                         parent=result["parent"].str[1:].astype("Int64"))


@pytest.mark.parametrize("algorithm", ["bfs", "sssp"])
def test_string_ids_and_sources_from_the_command_line(string_graph, tmp_path, algorithm):
    edges, folder = string_graph
    sources = sources_of(edges, 2)
    out = tmp_path / algorithm
    argv = [algorithm, str(folder), "--out", str(out), "--undirected"]
    for source in sources:
        argv += ["--source", f"v{source}"]
    assert main(argv) == 0
    result = integer_result(out)
    expected = (expected_bfs if algorithm == "bfs" else expected_sssp)(edges, sources, directed=False)
    pd.testing.assert_series_equal(result_distances(result), expected.sort_index(), check_exact=False, rtol=1e-12)
    check = check_bfs_tree if algorithm == "bfs" else check_sssp_tree
    check(edges, result, sources, directed=False)


def test_a_string_source_not_in_the_graph_is_one_line_and_exit_2(string_graph, tmp_path, capsys):
    _, folder = string_graph
    assert main(["bfs", str(folder), "--source", "nowhere", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "'nowhere' is not in the graph" in err and "Traceback" not in err


def test_run_pipeline_with_string_sources(string_graph, tmp_path):
    edges, folder = string_graph
    sources = sources_of(edges, 2)
    config = pipeline_config(tmp_path, folder, [f"v{s}" for s in sources])
    assert main(["run", str(config)]) == 0
    result = integer_result(tmp_path / "out")
    pd.testing.assert_series_equal(result_distances(result),
                                   expected_sssp(edges, sources, directed=True).sort_index(),
                                   check_exact=False, rtol=1e-12)
    check_sssp_tree(edges, result, sources, directed=True)


def test_run_as_a_job_on_a_local_cluster(graph, tmp_path):
    """``python -m gpipe run`` in a fresh process, with a one-worker cluster from the config."""
    edges, folder = graph
    source = sources_of(edges, 1)[0]
    cluster = {"kind": "local-cpu", "n_workers": 1, "dashboard_address": None, "dask": {"distributed": {"comm": {"timeouts": {"connect": "60s"}}}}}
    config = pipeline_config(tmp_path, folder, source, algorithm="bfs", cluster=cluster)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run(
        [sys.executable, "-m", "gpipe", "run", str(config)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr
    assert "connected to" in done.stderr and "write" in done.stderr
    assert_distances(tmp_path / "out", expected_bfs(edges, [source], directed=True))


def test_demo_runs_on_a_cpu_cluster(tmp_path, capsys):
    assert main(["demo", "--scale", "8", "--cpu", "--workers", "2", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    for word in ("Kronecker", "reached", "max distance", "dashboard", "seconds"):
        assert word in printed
    for name in ("bfs", "sssp"):  # each traversal's line says how the edges were followed
        assert any(line.split()[:1] == [name] and "(undirected)" in line for line in printed.splitlines())
    edges = pd.read_parquet(tmp_path / "edges")
    assert len(edges) == 16 * 2**8
    bfs = pd.read_parquet(tmp_path / "bfs")
    sssp = pd.read_parquet(tmp_path / "sssp")
    source = int(bfs.loc[bfs["distance"] == 0, "vertex"].iloc[0])
    pd.testing.assert_series_equal(
        result_distances(bfs), expected_bfs(edges, [source], directed=False), check_exact=False
    )
    pd.testing.assert_series_equal(
        result_distances(sssp), expected_sssp(edges, [source], directed=False), check_exact=False
    )
    # A second run replaces its own outputs.
    assert main(["demo", "--scale", "8", "--cpu", "--workers", "1", "--out", str(tmp_path)]) == 0


def test_demo_prints_the_dashboard_first_and_can_wait_for_enter(tmp_path, monkeypatch):
    import io

    from gpipe.tools.demo import run_demo

    out = io.StringIO()
    pressed = []
    monkeypatch.setattr("builtins.input", lambda *a: pressed.append(out.getvalue()))
    run_demo(7, tmp_path, cpu=True, n_workers=1, file=out, keep_open=True)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("gpipe demo: cpu cluster of 1 workers, dashboard")
    assert len(pressed) == 1 and "reached" in pressed[0]  # waited after the summary
    assert lines[-1].startswith("The cluster stays up") and "press Enter" in lines[-1]


# ---------------------------------------------------------------------------------------------
# Every failure a user can cause: exit status and one line on stderr, before any work where
# the failure needs no data.


def one_line(err):
    """The only non-empty line of stderr (asserting there is one, and no traceback)."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


NOWHERE = "/nonexistent-gpipe-edges"  # an input that is never read when the check comes first


@pytest.fixture
def a_file(tmp_path):
    path = tmp_path / "a-file"
    path.write_text("not a folder")
    return path


@pytest.mark.parametrize("below", ["out", "deeper/out"])
def test_an_output_under_a_file_fails_before_reading(a_file, capsys, below):
    out = a_file / below
    assert main(["bfs", NOWHERE, "--source", "0", "--out", str(out)]) == 2
    line = one_line(capsys.readouterr().err)
    assert line == f"gpipe: error: cannot write to {out}: {a_file} is a file, not a directory"


def test_an_output_in_a_read_only_folder_fails_before_reading(tmp_path, capsys):
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only folders; the /proc case below covers root")
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        assert main(["sssp", NOWHERE, "--source", "0", "--out", str(folder / "out")]) == 2
    finally:
        folder.chmod(0o755)
    line = one_line(capsys.readouterr().err)
    assert f"cannot write to {folder / 'out'}: cannot create entries in {folder}" in line
    assert "Permission denied" in line


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
def test_an_output_where_not_even_root_may_create_fails_before_reading(capsys):
    assert main(["bfs", NOWHERE, "--source", "0", "--out", "/proc/gpipe-out"]) == 2
    assert one_line(capsys.readouterr().err).startswith(
        "gpipe: error: cannot write to /proc/gpipe-out: cannot create entries in /proc (")


@pytest.mark.parametrize("argv", [["bench", "--scale", "30", "--json"], ["demo", "--scale", "30", "--out"]],
                         ids=["bench-json", "demo-out"])
def test_other_commands_check_their_outputs_before_working(a_file, capsys, argv):
    """A scale-30 graph would take hours: the check comes first."""
    assert main(["-q"] + argv + [str(a_file / "result")]) == 2
    assert "is a file, not a directory" in one_line(capsys.readouterr().err)


def test_run_checks_its_output_before_reading(a_file, tmp_path, capsys):
    config = pipeline_config(tmp_path, NOWHERE, 0, output={"path": str(a_file / "out")})
    assert main(["run", str(config)]) == 2
    assert "is a file, not a directory" in one_line(capsys.readouterr().err)


@pytest.mark.parametrize("argv, line", [
    (["--depth-limit", "99999999999999999999999"],
     "--depth-limit must be an integer from 0 to 2147483647, not 99999999999999999999999"),
    (["--depth-limit", "-1"], "--depth-limit must be an integer from 0 to 2147483647, not -1"),
    (["--depth-limit", str(2**31)], f"--depth-limit must be an integer from 0 to 2147483647, not {2**31}"),
    (["--partitions", "0"], "--partitions must be a positive integer, not 0"),
    (["--partitions", "-3"], "--partitions must be a positive integer, not -3"),
], ids=["huge", "negative", "int32+1", "zero-partitions", "negative-partitions"])
def test_options_out_of_range_fail_before_reading_naming_the_option(tmp_path, capsys, argv, line):
    """The edges path does not exist: the option's error comes first, so nothing was read; it
    names the option as typed, not the configuration key."""
    assert main(["bfs", NOWHERE, "--source", "0", "--out", str(tmp_path / "out")] + argv) == 2
    assert one_line(capsys.readouterr().err) == f"gpipe: error: {line}"


def test_a_negative_max_distance_names_the_option(tmp_path, capsys):
    assert main(["sssp", NOWHERE, "--source", "0", "--out", str(tmp_path / "out"),
                 "--max-distance", "-2"]) == 2
    assert one_line(capsys.readouterr().err) == (
        "gpipe: error: --max-distance must be a non-negative number, not -2.0")


def every_option():
    """(command, option strings, help) of every optional argument of every command."""
    from gpipe.tools.cli import make_parser

    parser = make_parser()
    commands = next(a for a in parser._actions if a.choices and "bfs" in a.choices).choices
    for name, sub in [("gpipe", parser), *commands.items()]:
        for action in sub._actions:
            if action.option_strings and action.help not in (None, "==SUPPRESS=="):
                yield name, action.option_strings, action.help


def test_every_option_says_its_default_and_every_command_what_it_does():
    from gpipe.tools.cli import make_parser

    lacking = [(name, options) for name, options, text in every_option()
               if "default" not in text and "required" not in text
               and options[0] not in ("-h", "--version")]
    assert lacking == []
    parser = make_parser()
    commands = next(a for a in parser._actions if a.choices and "bfs" in a.choices).choices
    assert all(sub.description for sub in commands.values()), [n for n, s in commands.items() if not s.description]


def test_run_takes_partitions_auto(graph, tmp_path):
    edges, folder = graph
    config = pipeline_config(tmp_path, folder, sources_of(edges, 1)[0], partitions="auto")
    assert main(["-q", "run", str(config)]) == 0


def test_more_partitions_than_workers_fail_before_reading(tmp_path, capsys):
    assert main(["-q", "bfs", NOWHERE, "--source", "0", "--out", str(tmp_path / "out"),
                 "--partitions", "3"]) == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith("gpipe: error: partitions=3 needs a Dask client with 3 workers")


def test_a_depth_limit_beyond_the_graph_is_no_limit(graph, tmp_path):
    edges, folder = graph
    source = sources_of(edges, 1)[0]
    out = tmp_path / "bfs"
    assert main(["-q", "bfs", str(folder), "--source", str(source), "--out", str(out),
                 "--depth-limit", str(2**31 - 1)]) == 0
    assert_distances(out, expected_bfs(edges, [source], directed=True))


@pytest.mark.parametrize("argv", [
    ["bfs", NOWHERE, "--source", "0", "--out", "o", "--depth-limit", "two"],
    ["bfs", NOWHERE, "--source", "0", "--out", "o", "--depth-limit", "1.5"],
    ["bfs", NOWHERE, "--out", "o"],  # no source
    ["sssp", NOWHERE, "--source", "0", "--out", "o", "--depth-limit", "2"],  # bfs only
    ["traverse"],  # no such command
], ids=["word", "float", "no-source", "sssp-depth", "command"])
def test_usage_errors_are_one_line_naming_the_help(argv, capsys):
    with pytest.raises(SystemExit) as exit:
        main(argv)
    assert exit.value.code == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith("gpipe") and ": error: " in line and "--help)" in line


def test_a_missing_edges_path_is_one_line(tmp_path, capsys):
    argv = ["-q", "bfs", str(tmp_path / "nothing"), "--source", "0", "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    assert str(tmp_path / "nothing") in one_line(capsys.readouterr().err)


@pytest.mark.parametrize("where", ["pipeline", "cluster"])
def test_bad_yaml_is_one_line_naming_the_file_and_line(graph, tmp_path, capsys, where):
    edges, folder = graph
    bad = tmp_path / "bad.yaml"
    bad.write_text("algorithm: [bfs\n  source: :\n")
    if where == "pipeline":
        argv = ["run", str(bad)]
    else:
        argv = ["bfs", str(folder), "--source", "0", "--out", str(tmp_path / "o"), "--cluster", str(bad)]
    assert main(argv) == 2
    line = one_line(capsys.readouterr().err)
    assert f"{str(bad)!r} is not valid YAML: line 2, column" in line


def test_a_negative_cycle_is_one_line_and_exit_1(tmp_path, capsys):
    edges = pd.DataFrame({"src": [0, 1, 2, 2], "dst": [1, 2, 0, 3], "weight": [1.0, -3.0, 1.0, 1.0]})
    edges.to_parquet(tmp_path / "edges.parquet", index=False)
    assert main(["-q", "sssp", str(tmp_path / "edges.parquet"), "--source", "0",
                 "--out", str(tmp_path / "o")]) == 1
    assert one_line(capsys.readouterr().err).startswith("gpipe: NegativeCycleError: a negative-weight cycle")
    assert not (tmp_path / "o").exists()


def test_a_graph_too_large_is_one_line_saying_what_to_do(graph, tmp_path, capsys):
    import dask

    edges, folder = graph
    with dask.config.set({"gpipe.memory-fraction": 1e-12}):
        assert main(["-q", "bfs", str(folder), "--source", str(sources_of(edges, 1)[0]),
                     "--out", str(tmp_path / "o")]) == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith("gpipe: error: the graph needs about") and "Add workers or memory" in line


def test_an_unreachable_scheduler_is_one_line(tmp_path, capsys):
    import socket

    with socket.socket() as free:  # a port that nothing listens on
        free.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{free.getsockname()[1]}"
    cluster = tmp_path / "remote.yaml"
    cluster.write_text(yaml.safe_dump({"kind": "remote", "scheduler_address": address, "timeout": "1s"}))
    assert main(["bfs", NOWHERE, "--source", "0", "--out", str(tmp_path / "o"),
                 "--cluster", str(cluster)]) == 2
    line = one_line(capsys.readouterr().err)
    assert f"cannot connect to the Dask scheduler {address!r}" in line


def test_sigint_during_a_cluster_query_is_one_line_and_exit_130(tmp_path):
    """Ctrl-C at a terminal: SIGINT to the whole process group (the command and its local
    cluster's workers) while a two-owner SSSP runs. One line, exit 130, no traceback from the
    client or the workers, no process left, no temporary directory beside the output.

    The graph is a directed path of negative weights: Bellman-Ford across two owners takes one
    message round per vertex, so the query runs for seconds after its first progress line."""
    import signal
    import threading

    import psutil

    n = 5000
    ids = np.arange(n - 1)
    pd.DataFrame({"src": ids, "dst": ids + 1, "weight": -1.0}).to_parquet(tmp_path / "path.parquet", index=False)
    cluster = tmp_path / "cluster.yaml"
    scratch = tmp_path / "scratch"  # the workers' local directories
    cluster.write_text(yaml.safe_dump({"kind": "local-cpu", "n_workers": 2, "threads_per_worker": 1,
                                       "dashboard_address": ":0", "local_directory": str(scratch)}))
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    command = [sys.executable, "-m", "gpipe", "sssp", str(tmp_path / "path.parquet"), "--source", "0",
               "--out", str(out), "--cluster", str(cluster), "--partitions", "2"]
    proc = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    started = threading.Event()
    err = []

    def read_stderr():
        for line in proc.stderr:
            err.append(line)
            if "sssp: at step" in line:  # the query runs: its owners' first progress event
                started.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        assert started.wait(120), "".join(err)
        children = psutil.Process(proc.pid).children(recursive=True)
        assert len(children) >= 2  # the workers, at least
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C at the terminal does
        status = proc.wait(60)
    finally:
        stop_if_running(proc)
    stderr = interrupted_stderr(status, reader, err)
    assert "gpipe.pipeline traverse" not in stderr  # it was interrupted during the query
    gone, alive = psutil.wait_procs(children, timeout=10)
    assert alive == [], alive
    assert not out.exists()
    assert [name for name in os.listdir(tmp_path) if name.startswith(".")] == []
    left = [p.name for p in scratch.rglob("*") if p.is_dir() and p.name.startswith(("worker-", "scheduler-"))]
    assert left == []
# Ctrl-C at each phase of a command (gpipe/engine/interrupts.py: GPIPE_PHASES marks the phases on
# stderr and pauses at the one it names). Where the phase lasts long enough by itself (the
# imports, a local cluster's start), the signal is sent as the phase begins, with no pause.
INTERRUPTS = [
    ("bfs", "imports", False), ("bfs", "read", True), ("bfs", "traverse", True), ("bfs", "write", True),
    ("bfs", "done", True), ("bfs-cluster", "cluster", False), ("run", "cluster", False),
    ("run", "write", True), ("demo", "cluster", False), ("demo", "traverse", True),
]


@pytest.mark.parametrize("command, phase, pause", INTERRUPTS, ids=[f"{c}-{p}" for c, p, _ in INTERRUPTS])
def test_ctrl_c_at_any_phase_is_one_line_exit_130_and_leaves_nothing(graph, tmp_path, command, phase, pause):
    """SIGINT to the command's process group, as Ctrl-C at a terminal sends it: within 2 s, the
    one line ``gpipe: interrupted`` and status 130; no traceback, no output or temporary
    directory, no process of the command left."""
    import signal
    import threading
    import time

    import psutil

    edges, folder = graph
    cluster = {"kind": "local-cpu", "n_workers": 2, "threads_per_worker": 1, "dashboard_address": None}
    out = tmp_path / "results" / "out"
    out.parent.mkdir()
    argv = {
        "bfs": ["bfs", str(folder), "--source", str(sources_of(edges, 1)[0]), "--out", str(out)],
        "bfs-cluster": ["bfs", str(folder), "--source", str(sources_of(edges, 1)[0]), "--out", str(out),
                        "--cluster", str(tmp_path / "cluster.yaml")],
        "run": ["run", str(tmp_path / "job.yaml")],
        "demo": ["demo", "--scale", "7", "--cpu", "--workers", "2", "--no-wait", "--out", str(out)],
    }[command]
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump(cluster))
    pipeline_config(tmp_path, folder, sources_of(edges, 1)[0], algorithm="bfs",
                    cluster=cluster if phase == "cluster" else None,
                    output={"path": str(out), "overwrite": False})
    env = dict(os.environ, GPIPE_PHASES=phase if pause else "1",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, "-m", "gpipe", *argv], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    reached, err = threading.Event(), []

    def read_stderr():
        for line in proc.stderr:
            err.append(line)
            if line.strip() == f"gpipe: phase {phase}":
                reached.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        assert reached.wait(120), "".join(err)
        if phase == "cluster":  # its start is under way: the workers are being spawned
            deadline = time.monotonic() + 30
            while not psutil.Process(proc.pid).children() and time.monotonic() < deadline:
                time.sleep(0.01)
        children = psutil.Process(proc.pid).children(recursive=True)
        sent = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        status = proc.wait(60)
        took = time.monotonic() - sent
    finally:
        stop_if_running(proc)
    # What was put in place whole before the interrupt, the line names: the output after the
    # summary, the demo's generated edges (written before its cluster starts).
    written = [out] if phase == "done" else [out / "edges"] if command == "demo" else []
    stderr = interrupted_stderr(status, reader, err, written)
    assert took <= 2.0, f"exited {took:.1f} s after SIGINT"
    gone, alive = psutil.wait_procs(children, timeout=2)
    assert alive == [], alive
    if phase == "done":  # after the summary: the output was whole before the interrupt
        assert_distances(out, expected_bfs(edges, sources_of(edges, 1), directed=True))
    else:
        assert not out.exists() or command == "demo"
    if command == "demo":  # the edges may be written (before the cluster), not the results
        assert not (out / "bfs").exists() and not (out / "sssp").exists()
    for folder_left in (out.parent, out if out.exists() else out.parent):
        assert [name for name in os.listdir(folder_left) if name.startswith(".")] == []


def test_no_parents_and_max_distance(graph, tmp_path):
    edges, folder = graph
    source = sources_of(edges, 1)[0]
    out = tmp_path / "sssp"
    argv = ["sssp", str(folder), "--source", str(source), "--out", str(out), "--no-parents",
            "--max-distance", "12.5"]
    assert main(argv) == 0
    result = pd.read_parquet(out)
    assert list(result.columns) == ["vertex", "distance"]
    expected = expected_sssp(edges, [source], directed=True)
    pd.testing.assert_series_equal(result_distances(result), expected.where(expected <= 12.5).sort_index(),
                                   check_exact=False, rtol=1e-12)
    out = tmp_path / "bfs"
    assert main(["bfs", str(folder), "--source", str(source), "--out", str(out), "--no-parents"]) == 0
    assert list(pd.read_parquet(out).columns) == ["vertex", "distance"]


def test_exit_handlers_that_never_end_are_cut_short_and_the_processes_left_are_killed():
    """A local cluster whose workers will not stop kept Python's exit handlers, and the
    ``gpipe`` process, waiting for minutes after its error line (4 × H100, BENCHMARKS.md)."""
    import psutil

    code = textwrap.dedent("""
        import atexit, subprocess, sys, time
        from gpipe.tools import cli
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        print(child.pid, flush=True)
        atexit.register(time.sleep, 600)  # an exit handler that never ends
        cli.EXIT_HANDLERS_S = 1.0
        cli.main = lambda: 3
        cli.command()
    """)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert time.monotonic() - started < 60
    assert done.returncode == 3
    assert "did not end within 1 s; killed this process's 1 remaining child process(es)" in done.stderr
    pid = int(done.stdout.split()[0])
    try:
        assert psutil.Process(pid).status() == psutil.STATUS_ZOMBIE  # killed, not yet reaped
    except psutil.NoSuchProcess:
        pass


def test_a_bench_tmpdir_under_a_file_is_one_line(a_file, capsys):
    assert main(["bench", "--scale", "4", "--tmpdir", str(a_file / "scratch")]) == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith(f"gpipe: error: --tmpdir {a_file / 'scratch'}: cannot create it")


def test_a_bench_tmpdir_that_is_a_file_is_one_line(a_file, capsys):
    assert main(["bench", "--scale", "4", "--tmpdir", str(a_file)]) == 2
    assert one_line(capsys.readouterr().err) == f"gpipe: error: --tmpdir {a_file}: exists and is not a directory"


def closed_pipe():
    """The write end of a pipe whose reader is gone (``| tee log`` after Ctrl-C ended tee)."""
    read, write = os.pipe()
    os.close(read)
    return write


def test_an_error_into_a_closed_pipe_keeps_its_exit_status(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    stderr = closed_pipe()
    try:
        done = subprocess.run([sys.executable, "-m", "gpipe", "bfs", NOWHERE, "--source", "0",
                               "--out", str(tmp_path / "out")], stdout=subprocess.DEVNULL,
                              stderr=stderr, env=env, timeout=120)
    finally:
        os.close(stderr)
    assert done.returncode == 2


def test_ctrl_c_into_a_closed_pipe_keeps_exit_130(graph, tmp_path):
    import signal

    edges, folder = graph
    env = dict(os.environ, GPIPE_PHASES="traverse",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    marker = tmp_path / "phases"
    argv = [sys.executable, "-c",
            "import sys, runpy; sys.argv = ['gpipe'] + sys.argv[1:]; "
            f"open({str(marker)!r}, 'w').close(); runpy.run_module('gpipe', run_name='__main__')",
            "bfs", str(folder), "--source", str(sources_of(edges, 1)[0]), "--out", str(tmp_path / "out")]
    stderr = closed_pipe()
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=stderr, env=env,
                                start_new_session=True)
    finally:
        os.close(stderr)
    try:
        # Its stderr cannot be read: wait until the traversal's pause has surely begun.
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(8)
        os.killpg(proc.pid, signal.SIGINT)
        status = proc.wait(60)
    finally:
        stop_if_running(proc)
    assert status == 130
    assert not (tmp_path / "out").exists()


def test_a_ctrl_c_python_can_only_ignore_is_noted_without_a_traceback(tmp_path):
    """A SIGINT that lands in a garbage collector's callback or a finalizer cannot be raised
    there: Python prints "Exception ignored in ..." with a traceback and goes on. The command
    notes it silently and ends as interrupted; other errors Python ignores are reported as
    before."""
    code = textwrap.dedent("""
        from gpipe.tools import cli

        class Finalized:
            def __init__(self, error):
                self.error = error

            def __del__(self):  # what it raises, Python can only report ("Exception ignored in")
                raise self.error

        def main():  # the command's work, a Ctrl-C landing in a finalizer of it
            Finalized(KeyboardInterrupt())
            Finalized(ValueError("kept"))
            return 0

        cli.main = main
        cli.command()
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 130, done.stderr
    assert "KeyboardInterrupt" not in done.stderr, done.stderr
    assert done.stderr.count("Exception ignored in") == 1 and "ValueError: kept" in done.stderr
    assert done.stderr.splitlines()[-1] == "gpipe: interrupted"


@pytest.mark.parametrize("after_s", [1.5, 2.5, 3.5])
def test_ctrl_c_on_a_busy_machine_is_one_line(graph, tmp_path, after_s):
    """Both cores busy with other processes, SIGINT to the command's process group at a few
    moments of a cluster run (starting, reading, traversing, writing): only the one line, and
    130, or the run was over already; nothing of Dask's shutdown reaches the terminal."""
    import signal

    edges, folder = graph
    # A free port: with null the scheduler's HTTP server still takes 8787 on localhost, and
    # warns (four lines) where another test's cluster holds it.
    cluster = {"kind": "local-cpu", "n_workers": 2, "threads_per_worker": 1,
               "dashboard_address": "127.0.0.1:0"}
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump(cluster))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 2)]
    try:
        proc = subprocess.Popen([sys.executable, "-m", "gpipe", "sssp", str(folder), "--source",
                                 str(sources_of(edges, 1)[0]), "--out", str(tmp_path / "out"),
                                 "--cluster", str(tmp_path / "cluster.yaml")],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        time.sleep(after_s)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        for process in busy:
            process.kill()
    lines = [line for line in err.splitlines() if line.strip() and " gpipe." not in line]
    if proc.returncode == 0:  # it had finished: its own log lines only
        assert lines == [], err
    else:
        assert proc.returncode == 130 and len(lines) == 1, err
        assert lines[0].startswith("gpipe: interrupted"), err
