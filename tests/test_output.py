"""gpipe.output.write_parquet: all-or-nothing Parquet writes; gpipe.output.summarize."""

from __future__ import annotations

import os

import dask.dataframe as dd
import pandas as pd
import pytest

import gpipe
from gpipe.output import summarize, write_parquet


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
    with pytest.raises(gpipe.InputError, match="already exists") as info:
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
            "distance": pd.array([0, 1, 2, None], dtype="Int64"),
            "parent": pd.array([None, 0, 1, None], dtype="Int64"),
        }
    )
    assert summarize(dd.from_pandas(bfs, npartitions=2)) == {"vertices": 4, "reached": 3, "max_distance": 2}
    sssp = bfs.assign(distance=[0.0, 1.5, float("nan"), 4.0])
    summary = summarize(dd.from_pandas(sssp, npartitions=2))
    assert summary == {"vertices": 4, "reached": 3, "max_distance": 4.0}
    assert isinstance(summary["max_distance"], float)
    nothing = sssp.assign(distance=float("nan"))
    assert summarize(dd.from_pandas(nothing, npartitions=1))["max_distance"] is None
