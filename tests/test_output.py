"""gpipe.io.write.write_parquet: all-or-nothing Parquet writes; gpipe.io.write.summarize."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import dask
import dask.dataframe as dd
import pandas as pd
import pytest

import gpipe
import gpipe.io.origin
from gpipe.io import write as output
from gpipe.io.write import summarize, write_parquet


def frame(values, npartitions=2):
    return dd.from_pandas(pd.DataFrame({"vertex": values, "distance": values}), npartitions=npartitions)


def failing_frame():
    """A frame whose second partition raises when computed, after the first may be written."""

    def explode(part, partition_info=None):
        if partition_info and partition_info["number"] == 1:
            raise RuntimeError("boom: worker lost mid-write")
        return part

    return frame(list(range(10)), npartitions=3).map_partitions(explode, meta={"vertex": "int64", "distance": "int64"})


def read(path):
    return pd.read_parquet(path).sort_values("vertex").reset_index(drop=True)


def leftovers(folder):
    """Hidden temporary or set-aside directories that write_parquet must not leave behind."""
    return sorted(name for name in os.listdir(folder) if name.startswith("."))


def test_writes_every_partition_without_index(tmp_path):
    out = write_parquet(frame(list(range(10)), npartitions=3), tmp_path / "result")
    assert out == (tmp_path / "result").absolute()
    assert sorted(p.name for p in out.iterdir()) == ["part.0.parquet", "part.1.parquet", "part.2.parquet"]
    written = read(out)
    assert list(written.columns) == ["vertex", "distance"]
    assert written["vertex"].tolist() == list(range(10))
    assert leftovers(tmp_path) == []


def test_creates_missing_parent_folders(tmp_path):
    out = write_parquet(frame([1, 2]), tmp_path / "a" / "b" / "result")
    assert read(out)["vertex"].tolist() == [1, 2]


def test_existing_target_without_overwrite_raises_and_keeps_old(tmp_path):
    target = tmp_path / "result"
    write_parquet(frame([1, 2, 3]), target)
    with pytest.raises(gpipe.InputError, match="already exists; pass overwrite=True to replace it") as info:
        write_parquet(frame([7, 8]), target)
    assert str(target) in str(info.value)
    assert read(target)["vertex"].tolist() == [1, 2, 3]
    assert leftovers(tmp_path) == []


def test_existing_file_target_counts_as_existing(tmp_path):
    target = tmp_path / "result"
    target.write_text("not parquet")
    with pytest.raises(gpipe.InputError):
        write_parquet(frame([1]), target)
    assert target.read_text() == "not parquet"


def test_overwrite_replaces_old_output_whole(tmp_path):
    target = tmp_path / "result"
    write_parquet(frame(list(range(20)), npartitions=4), target)
    write_parquet(frame([5, 6], npartitions=1), target, overwrite=True)
    # No part file of the old four-partition output survives beside the new one.
    assert sorted(p.name for p in target.iterdir()) == ["part.0.parquet"]
    assert read(target)["vertex"].tolist() == [5, 6]
    assert leftovers(tmp_path) == []


def test_overwrite_replaces_a_file(tmp_path):
    target = tmp_path / "result"
    target.write_text("old")
    write_parquet(frame([1]), target, overwrite=True)
    assert target.is_dir() and read(target)["vertex"].tolist() == [1]


def test_failure_mid_write_keeps_old_output_and_removes_temporary(tmp_path):
    target = tmp_path / "result"
    write_parquet(frame([1, 2, 3]), target)
    with pytest.raises(RuntimeError, match="boom"):
        write_parquet(failing_frame(), target, overwrite=True)
    assert read(target)["vertex"].tolist() == [1, 2, 3]
    assert leftovers(tmp_path) == []


def test_failure_without_previous_output_leaves_nothing(tmp_path):
    with pytest.raises(RuntimeError, match="boom"):
        write_parquet(failing_frame(), tmp_path / "result")
    assert os.listdir(tmp_path) == []


def test_urls_are_rejected(tmp_path):
    with pytest.raises(gpipe.InputError, match="s3://bucket/out"):
        write_parquet(frame([1]), "s3://bucket/out")


def test_summarize_bfs_and_sssp_shaped_results():
    bfs = pd.DataFrame(
        {
            "vertex": [0, 1, 2, 3],
            "distance": [0.0, 1.0, 2.0, float("nan")],  # gpipe's convention: float64 hops too
            "parent": pd.array([None, 0, 1, None], dtype="int64[pyarrow]"),
        }
    )
    assert summarize(dd.from_pandas(bfs, npartitions=2)) == {"vertices": 4, "reached": 3, "max_distance": 2.0}
    hops = bfs.assign(distance=pd.array([0, 1, 2, None], dtype="Int64"))  # a user's integer column
    summary = summarize(dd.from_pandas(hops, npartitions=2))
    assert summary == {"vertices": 4, "reached": 3, "max_distance": 2} and isinstance(summary["max_distance"], int)
    sssp = bfs.assign(distance=[0.0, 1.5, float("nan"), 4.0])
    summary = summarize(dd.from_pandas(sssp, npartitions=2))
    assert summary == {"vertices": 4, "reached": 3, "max_distance": 4.0}
    assert isinstance(summary["max_distance"], float)
    nothing = sssp.assign(distance=float("nan"))
    assert summarize(dd.from_pandas(nothing, npartitions=1))["max_distance"] is None


# ---------------------------------------------------------------------------------------------
# Writers that die: what they leave, and what the next write (or read) makes of it.

WRITER = """
import os, signal, sys, time
import dask.dataframe as dd, pandas as pd
from gpipe.io import write as output

target, mode, go = sys.argv[1:4]
frame = dd.from_pandas(pd.DataFrame({"vertex": [7, 8], "distance": [7, 8]}), npartitions=2)


def die_on_second(part, partition_info=None):
    if partition_info and partition_info["number"] == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    return part


def wait_for_go(part):
    deadline = time.time() + 60
    while not os.path.exists(go) and time.time() < deadline:
        time.sleep(0.05)
    return part


def die_before_second_rename(src, dst, replace=os.replace):
    if os.fspath(dst) == target and ".tmp-" in os.fspath(src):
        os.kill(os.getpid(), signal.SIGKILL)
    return replace(src, dst)


if mode == "kill-mid-write":
    frame = frame.map_partitions(die_on_second, meta=frame._meta)
elif mode == "kill-between-renames":
    os.replace = die_before_second_rename
elif mode == "wait":
    frame = frame.map_partitions(wait_for_go, meta=frame._meta)
output.write_parquet(frame, target, overwrite=True)
"""


def start_writer(target, mode, go=None):
    """A separate process writing vertices 7 and 8 to `target` with overwrite, in `mode`."""
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    return subprocess.Popen([sys.executable, "-c", WRITER, str(target), mode, str(go)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def killed_writer(target, mode):
    writer = start_writer(target, mode)
    out, _ = writer.communicate(timeout=120)
    assert writer.returncode == -signal.SIGKILL, out


def test_next_write_removes_what_a_killed_writer_left(tmp_path):
    target = tmp_path / "result"
    write_parquet(frame([1, 2, 3]), target)
    killed_writer(target, "kill-mid-write")
    assert [name.split("-")[0] for name in leftovers(tmp_path)] == [".result.tmp"]
    assert read(target)["vertex"].tolist() == [1, 2, 3]
    write_parquet(frame([4]), target, overwrite=True)
    assert read(target)["vertex"].tolist() == [4]
    assert leftovers(tmp_path) == []


def test_a_write_in_progress_keeps_its_temporary(tmp_path):
    """Two writers of one path: the second must not take the first one's files as stale."""
    target, go = tmp_path / "result", tmp_path / "go"
    writer = start_writer(target, "wait", go)
    try:
        deadline = time.time() + 60
        while not any(".tmp-" in name for name in leftovers(tmp_path)) and time.time() < deadline:
            time.sleep(0.05)
        write_parquet(frame([1, 2]), target, overwrite=True)
        assert any(".tmp-" in name for name in leftovers(tmp_path))
    finally:
        go.touch()
        out, _ = writer.communicate(timeout=120)
    assert writer.returncode == 0, out
    assert read(target)["vertex"].tolist() == [7, 8]
    assert leftovers(tmp_path) == []


def test_temporaries_of_other_hosts_wait_for_their_age(tmp_path):
    """Names without this machine's digest (another host, or an older gpipe): by age only."""
    target = tmp_path / "result"
    foreign = tmp_path / ".result.tmp-0123456789ab-1-feedbeef0000"
    legacy = tmp_path / f".result.tmp-{'ab' * 16}"
    for folder in (foreign, legacy):
        folder.mkdir()
        (folder / "part.0.parquet").write_bytes(b"partial")
    write_parquet(frame([1]), target)
    assert leftovers(tmp_path) == sorted([foreign.name, legacy.name])
    time.sleep(0.3)
    with dask.config.set({output.STALE_AFTER_KEY: "200ms"}):
        write_parquet(frame([2]), target, overwrite=True)
    assert leftovers(tmp_path) == []


def test_output_set_aside_by_a_killed_overwrite_is_put_back(tmp_path):
    target = tmp_path / "result"
    write_parquet(frame([1, 2, 3]), target)
    killed_writer(target, "kill-between-renames")
    assert not target.exists()
    assert sorted(name.split("-")[0] for name in leftovers(tmp_path)) == [".result.old", ".result.tmp"]
    with pytest.raises(gpipe.InputError, match="already exists"):  # the next write finds it back
        write_parquet(frame([4]), target)
    assert read(target)["vertex"].tolist() == [1, 2, 3]
    assert leftovers(tmp_path) == []


def test_reading_edges_puts_back_an_output_set_aside(tmp_path):
    target = tmp_path / "edges"
    edges = pd.DataFrame({"src": [0, 1], "dst": [1, 2]})
    write_parquet(dd.from_pandas(edges, npartitions=1), target)
    killed_writer(target, "kill-between-renames")
    assert not target.exists()
    assert gpipe.read_edges(target, backend="cpu").compute()["dst"].tolist() == [1, 2]


def test_a_set_aside_output_of_a_running_writer_is_left_alone(tmp_path):
    """This process's own pid: a writer between its two renames, for all the next one knows."""
    target = tmp_path / "result"
    write_parquet(frame([1]), target)
    aside = output.sibling_path(target, "old")
    os.rename(target, aside)
    assert output.restore_interrupted(target) is False
    assert not target.exists() and aside.exists()


def test_check_writable_tries_for_real_and_leaves_nothing(tmp_path):
    target = tmp_path / "missing" / "deeper" / "bfs"
    assert output.check_writable(target) == target
    assert os.listdir(tmp_path) == []  # the probe is gone, and no missing folder was created
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(gpipe.InputError) as raised:
        output.check_writable(tmp_path / "a-file" / "deeper" / "bfs")
    assert str(raised.value) == (f"cannot write to {tmp_path / 'a-file' / 'deeper' / 'bfs'}: "
                                 f"{tmp_path / 'a-file'} is a file, not a directory")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(gpipe.InputError, match="is a broken symbolic link"):
        output.check_writable(tmp_path / "dangling" / "bfs")


def test_write_parquet_under_a_file_fails_before_computing(tmp_path):
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(gpipe.InputError, match="is a file, not a directory"):
        write_parquet(failing_frame(), tmp_path / "a-file" / "bfs")  # a RuntimeError if computed
    assert sorted(os.listdir(tmp_path)) == ["a-file"]


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
def test_check_writable_names_the_systems_reason(tmp_path):
    with pytest.raises(gpipe.InputError) as raised:
        output.check_writable("/proc/gpipe-out")
    assert str(raised.value).startswith("cannot write to /proc/gpipe-out: cannot create entries in /proc (")


# ---------------------------------------------------------------------------------------------
# gpipe.to_parquet: the command line's protection for writes from the Python API


@pytest.fixture
def edges_folder(tmp_path):
    folder = tmp_path / "edges"
    folder.mkdir()
    pd.DataFrame({"src": [0, 1, 2], "dst": [1, 2, 3], "weight": [1.0, 2.0, 0.5]}).to_parquet(
        folder / "part.0.parquet", index=False)
    return folder


@pytest.mark.parametrize("make", [
    lambda edges: gpipe.bfs(edges, 0),
    lambda edges: gpipe.sssp(edges, 0).persist(),
    lambda edges: gpipe.Graph.from_edges(edges).bfs_each([0, 1]),
    lambda edges: gpipe.bfs(edges, 0).query("distance > 0")[["vertex"]],
    lambda edges: edges,
    lambda edges: gpipe.bfs(dd.read_parquet(gpipe.io.origin.input_paths(edges)[0]), 0),
], ids=["bfs", "sssp-persisted", "bfs_each", "derived", "the-edges", "dd.read_parquet"])
@pytest.mark.parametrize("where", ["is", "inside", "contains"])
def test_to_parquet_refuses_the_edges_path(edges_folder, make, where):
    edges = gpipe.read_edges(edges_folder, backend="cpu")
    result = make(edges)
    target = {"is": edges_folder, "inside": edges_folder / "bfs", "contains": edges_folder.parent}[where]
    before = sorted(p.name for p in edges_folder.iterdir())
    with pytest.raises(gpipe.InputError, match=rf"{where if where != 'inside' else 'lies inside'} "
                                               r"the edges path .*write the result elsewhere"):
        gpipe.to_parquet(result, target, overwrite=True)
    assert sorted(p.name for p in edges_folder.iterdir()) == before
    assert len(gpipe.read_edges(edges_folder, backend="cpu").compute()) == 3  # still the edges


def test_to_parquet_writes_atomically_elsewhere(edges_folder, tmp_path):
    result = gpipe.bfs(gpipe.read_edges(edges_folder, backend="cpu"), 0)
    out = gpipe.to_parquet(result, tmp_path / "out" / "bfs")
    assert out == (tmp_path / "out" / "bfs").absolute()
    assert sorted(pd.read_parquet(out)["distance"].tolist()) == [0, 1, 2, 3]
    with pytest.raises(gpipe.InputError, match="already exists"):
        gpipe.to_parquet(result, out)
    gpipe.to_parquet(result, out, overwrite=True)
    assert [p.name for p in out.parent.iterdir()] == ["bfs"]  # no hidden sibling left


def test_to_parquet_of_a_frame_in_memory(tmp_path):
    out = gpipe.to_parquet(pd.DataFrame({"vertex": [1, 2]}), tmp_path / "x")
    assert pd.read_parquet(out)["vertex"].tolist() == [1, 2]


def test_dask_to_parquet_is_what_to_parquet_protects_from(edges_folder):
    """What the README says of Dask's own to_parquet: it writes into the edges' folder."""
    edges = gpipe.read_edges(edges_folder, backend="cpu")
    gpipe.bfs(edges, 0).to_parquet(edges_folder)  # Dask's: no refusal
    with pytest.raises(gpipe.InputError):
        gpipe.read_edges(edges_folder, backend="cpu")  # result rows have replaced the edges
