"""The job report (gpipe/io/report.py): ``OUT/_gpipe.json`` written inside the output's atomic
rename by ``gpipe bfs|sssp`` and ``gpipe run``; what it holds, that Parquet readers still read
``OUT`` as the result alone, and that a job that fails or is killed leaves neither."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import dask.dataframe as dd
import pandas as pd
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
import yaml

from gpipe.io import report as job
from gpipe.tools.cli import main
from reference import random_edges

ROOT = Path(__file__).resolve().parents[1]
PHASES = ["read", "build", "traverse", "summary", "write"]


@pytest.fixture(scope="module")
def edges(tmp_path_factory):
    frame = random_edges(60, 200, seed=5, weights="positive", components=2)
    folder = tmp_path_factory.mktemp("report") / "edges"
    folder.mkdir()
    frame.to_parquet(folder / "part.0.parquet", index=False)
    return frame, folder


def a_source(frame):
    return int(frame["src"].iloc[0])


def test_the_report_says_what_the_job_did(edges, tmp_path):
    frame, folder = edges
    out = tmp_path / "out"
    argv = ["-q", "sssp", str(folder), "--source", str(a_source(frame)), "--out", str(out)]
    assert main(argv) == 0
    report = job.read_report(out)
    result = pd.read_parquet(out)
    import gpipe

    assert report["format"] == job.FORMAT and report["gpipe"] == gpipe.__version__
    assert list(report["phases"]) == PHASES and all(s >= 0 for s in report["phases"].values())
    assert report["rows"] == len(result) and report["reached"] == int(result["distance"].notna().sum())
    assert report["max_distance"] == pytest.approx(result["distance"].max())
    data = sorted(out.glob("*.parquet"))
    assert report["files"] == len(data) and report["bytes"] == sum(f.stat().st_size for f in data)
    assert (report["owners"], report["transport"], report["workers"], report["backend"]) == (1, "none", 0, "cpu")
    assert report["input_workers"] == 0  # no cluster
    assert report["config"]["algorithm"] == "sssp" and report["config"]["source"] == [str(a_source(frame))]
    assert report["source"] == a_source(frame)  # as the traversal took it
    assert report["config"]["output"]["path"] == str(out)
    assert {"hostname", "platform", "python", "cpu_count"} <= set(report["machine"])
    assert {"dask", "pandas", "pyarrow", "numpy"} <= set(report["versions"])
    assert report["started_at"] <= report["finished_at"]
    assert any(a.endswith("gpipe") or a.endswith("pytest") or "py" in a for a in report["command"][:1])


def test_readers_see_the_result_alone(edges, tmp_path):
    frame, folder = edges
    out = tmp_path / "out"
    assert main(["-q", "bfs", str(folder), "--source", str(a_source(frame)), "--out", str(out)]) == 0
    assert (out / job.REPORT_NAME).is_file()
    alone = tmp_path / "alone"
    alone.mkdir()
    for part in out.glob("*.parquet"):
        (alone / part.name).write_bytes(part.read_bytes())

    def rows(table):
        return table.sort_values("vertex").reset_index(drop=True)

    want = rows(pd.read_parquet(alone))
    assert list(want.columns) == ["vertex", "distance", "parent"] and len(want) > 0
    pd.testing.assert_frame_equal(rows(pd.read_parquet(out)), want)
    pd.testing.assert_frame_equal(rows(dd.read_parquet(out).compute()), want)
    pd.testing.assert_frame_equal(rows(pq.read_table(out).to_pandas()), want)
    pd.testing.assert_frame_equal(rows(ds.dataset(out, format="parquet").to_table().to_pandas()), want)


def test_a_run_on_a_cluster_reports_its_owners_and_transport(edges, tmp_path):
    frame, folder = edges
    config = {"algorithm": "bfs", "directed": False, "source": a_source(frame), "partitions": 2,
              "cluster": {"kind": "local-cpu", "n_workers": 2, "threads_per_worker": 1,
                          "dashboard_address": None},
              "edges": {"path": str(folder), "backend": "cpu"},
              "output": {"path": str(tmp_path / "out")}}
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(config))
    assert main(["-q", "run", str(tmp_path / "job.yaml")]) == 0
    report = job.read_report(tmp_path / "out")
    assert (report["owners"], report["transport"], report["workers"]) == (2, "dask", 2)
    assert report["input_workers"] == 1  # one file, one partition
    assert list(report["phases"]) == ["connect"] + PHASES
    assert report["rows"] == len(pd.read_parquet(tmp_path / "out"))


@pytest.mark.parametrize("read_on, readers", [("owner", 1), ("all", 2)])
def test_a_run_on_a_cluster_reports_the_workers_that_read_its_edges(tmp_path, read_on, readers):
    frame = random_edges(60, 200, seed=6)
    (tmp_path / "edges").mkdir()
    for i in range(2):
        frame.iloc[i::2].to_parquet(tmp_path / "edges" / f"part.{i}.parquet", index=False)
    config = {"algorithm": "bfs", "directed": False, "source": a_source(frame),
              "cluster": {"kind": "local-cpu", "n_workers": 2, "threads_per_worker": 1,
                          "dashboard_address": None, "dask": {"gpipe": {"read-on": read_on}}},
              "edges": {"path": str(tmp_path / "edges"), "backend": "cpu"},
              "output": {"path": str(tmp_path / "out")}}
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(config))
    assert main(["-q", "run", str(tmp_path / "job.yaml")]) == 0
    report = job.read_report(tmp_path / "out")
    assert (report["owners"], report["workers"], report["input_workers"]) == (1, 2, readers)


def test_a_report_that_fails_leaves_no_output(edges, tmp_path, monkeypatch, capsys):
    from gpipe import pipeline

    frame, folder = edges

    def broken(folder, report):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pipeline, "write_report", broken)
    out = tmp_path / "results" / "out"
    out.parent.mkdir()
    assert main(["-q", "bfs", str(folder), "--source", str(a_source(frame)), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if line.strip()] == [
        f"gpipe: WriteFailed: cannot write {out}: No space left on device; nothing was written there "
        "(free space where it goes, or choose another output)"], err
    assert not out.exists() and not list(out.parent.iterdir())  # nor its temporary folder


def test_a_failed_traversal_leaves_neither_output_nor_report(tmp_path):
    negative = pd.DataFrame({"src": [0, 1, 2], "dst": [1, 2, 0], "weight": [1.0, -3.0, 1.0]})
    negative.to_parquet(tmp_path / "edges.parquet", index=False)
    out = tmp_path / "results" / "out"
    out.parent.mkdir()
    assert main(["-q", "sssp", str(tmp_path / "edges.parquet"), "--source", "0", "--out", str(out)]) == 1
    assert not out.exists() and not list(out.parent.iterdir())


def test_a_job_killed_while_writing_leaves_neither_and_the_next_run_writes_both(edges, tmp_path):
    """SIGKILL after the partitions and the report are in the temporary folder, just before the
    rename: no output and no report at OUT; the next run clears the dead run's folder."""
    frame, folder = edges
    out = tmp_path / "results" / "out"
    out.parent.mkdir()
    argv = [sys.executable, "-m", "gpipe", "bfs", str(folder), "--source", str(a_source(frame)),
            "--out", str(out)]
    env = dict(os.environ, GPIPE_PHASES="write",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    reached = threading.Event()

    def read_stderr():
        for line in proc.stderr:
            if line.strip() == "gpipe: phase write":
                reached.set()

    threading.Thread(target=read_stderr, daemon=True).start()
    try:
        assert reached.wait(120)
        staged = [p for p in out.parent.iterdir() if p.name.startswith(".out.tmp-")]
        assert len(staged) == 1 and (staged[0] / job.REPORT_NAME).is_file()  # both were written
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert not out.exists()
    assert main(["-q", "bfs", str(folder), "--source", str(a_source(frame)), "--out", str(out)]) == 0
    assert job.read_report(out)["rows"] == len(pd.read_parquet(out))
    assert [p.name for p in out.parent.iterdir()] == ["out"]


def test_write_report_is_whole_or_absent(tmp_path):
    path = job.write_report(tmp_path, {"format": job.FORMAT, "n": 3})
    assert path == tmp_path / job.REPORT_NAME
    assert json.loads(path.read_text()) == {"format": job.FORMAT, "n": 3}
    assert [p.name for p in tmp_path.iterdir()] == [job.REPORT_NAME]
    with pytest.raises(FileNotFoundError):
        job.read_report(tmp_path / "elsewhere")


def job_file(tmp_path, name, folder, source, cluster, **changes):
    config = {"algorithm": "bfs", "source": source, "cluster": cluster,
              "edges": {"path": str(folder), "backend": "cpu"},
              "output": {"path": str(tmp_path / f"out-{name}")}}
    config.update(changes)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


CLUSTER = {"kind": "local-cpu", "n_workers": 2, "threads_per_worker": 1, "dashboard_address": None}


def test_several_jobs_share_one_cluster(edges, tmp_path, capsys):
    frame, folder = edges
    files = [job_file(tmp_path, "a", folder, a_source(frame), CLUSTER),
             job_file(tmp_path, "b", folder, a_source(frame), CLUSTER, algorithm="sssp",
                      directed=False)]
    assert main(["run", *map(str, files)]) == 0  # logs at INFO to stderr
    err = capsys.readouterr().err
    assert err.count("connected to") == 1 and "job 2 of 2" in err
    for name in ("a", "b"):
        report = job.read_report(tmp_path / f"out-{name}")
        assert "connect" not in report["phases"] and report["workers"] == 2
    assert job.read_report(tmp_path / "out-b")["config"]["algorithm"] == "sssp"


def test_jobs_naming_different_clusters_fail_before_any_work(edges, tmp_path, capsys):
    frame, folder = edges
    other = dict(CLUSTER, n_workers=1)
    files = [job_file(tmp_path, "a", folder, a_source(frame), CLUSTER),
             job_file(tmp_path, "b", folder, a_source(frame), other)]
    assert main(["-q", "run", *map(str, files)]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("gpipe: error: the jobs of one run must name the same cluster")
    assert not (tmp_path / "out-a").exists() and not (tmp_path / "out-b").exists()


def test_a_failing_job_ends_the_run_and_names_its_file(edges, tmp_path, capsys):
    frame, folder = edges
    files = [job_file(tmp_path, "a", folder, a_source(frame), None),
             job_file(tmp_path, "b", folder, 10**9, None),
             job_file(tmp_path, "c", folder, a_source(frame), None)]
    assert main(["-q", "run", *map(str, files)]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"gpipe: error: {files[1]}: ")
    assert (tmp_path / "out-a").is_dir() and not (tmp_path / "out-c").exists()
