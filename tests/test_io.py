"""gpipe.read_edges on files that are not what they claim to be, and the columns it keeps.

CPU backend only: the GPU reader shares the checks of the file footers (tests/test_api.py
runs the good files through both).
"""

from __future__ import annotations

import pandas as pd
import pytest

import gpipe


def edges(**columns):
    return pd.DataFrame({"src": [0, 1, 2], "dst": [1, 2, 0], **columns})


def parquet_bytes(tmp_path):
    path = tmp_path / "good.parquet.tmp"
    edges(weight=[1.0, 2.0, 3.0]).to_parquet(path, index=False)
    data = path.read_bytes()
    path.unlink()
    return data


def assert_names_file(info, file):
    message = str(info.value)
    assert str(file) in message and "\n" not in message, message


def test_a_csv_file_is_an_input_error_naming_it(tmp_path):
    path = tmp_path / "edges.csv"
    edges().to_csv(path, index=False)
    with pytest.raises(gpipe.InputError, match="Parquet") as info:
        gpipe.read_edges(path, backend="cpu")
    assert_names_file(info, path)


def test_a_truncated_file_is_an_input_error_naming_it(tmp_path):
    data = parquet_bytes(tmp_path)
    path = tmp_path / "edges.parquet"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(gpipe.InputError) as info:
        gpipe.read_edges(path, backend="cpu")
    assert_names_file(info, path)


def test_the_bad_file_of_a_directory_is_named(tmp_path):
    folder = tmp_path / "edges"
    folder.mkdir()
    edges().to_parquet(folder / "part.0.parquet", index=False)
    (folder / "part.1.parquet").write_text("src,dst\n0,1\n")
    with pytest.raises(gpipe.InputError) as info:
        gpipe.read_edges(folder, backend="cpu")
    assert_names_file(info, folder / "part.1.parquet")


def test_a_directory_without_parquet_files_is_an_input_error(tmp_path):
    (tmp_path / "notes.txt").write_text("no edges here")
    with pytest.raises(gpipe.InputError, match="no Parquet files") as info:
        gpipe.read_edges(tmp_path, backend="cpu")
    assert_names_file(info, tmp_path)


def test_corrupt_data_is_an_input_error_naming_the_file_when_read(tmp_path):
    """The footer is intact, so read_edges accepts the file; reading its pages fails."""
    data = bytearray(parquet_bytes(tmp_path))
    data[8:60] = bytes(b ^ 0xFF for b in data[8:60])  # the first data page, after the magic bytes
    path = tmp_path / "edges.parquet"
    path.write_bytes(bytes(data))
    frame = gpipe.read_edges(path, backend="cpu")
    with pytest.raises(gpipe.InputError) as info:
        frame.compute()
    assert_names_file(info, path)


def test_a_missing_column_names_the_file_that_lacks_it(tmp_path):
    folder = tmp_path / "edges"
    folder.mkdir()
    edges(weight=[1.0, 2.0, 3.0]).to_parquet(folder / "part.0.parquet", index=False)
    edges().to_parquet(folder / "part.1.parquet", index=False)
    with pytest.raises(gpipe.InputError, match="'weight'") as info:
        gpipe.read_edges(folder, weight="weight", backend="cpu")
    assert_names_file(info, folder / "part.1.parquet")


def test_a_weight_column_is_kept_so_sssp_finds_it(tmp_path):
    path = tmp_path / "edges.parquet"
    edges(weight=[1.0, 2.0, 4.0]).to_parquet(path, index=False)
    frame = gpipe.read_edges(path, backend="cpu")
    assert list(frame.columns) == ["src", "dst", "weight"]
    result = gpipe.sssp(frame, 0).compute().sort_values("vertex")
    assert result["distance"].tolist() == [0.0, 1.0, 3.0]


def test_without_a_weight_column_only_the_ids_are_read(tmp_path):
    path = tmp_path / "edges.parquet"
    edges(cost=[1.0, 2.0, 4.0]).to_parquet(path, index=False)
    assert list(gpipe.read_edges(path, backend="cpu").columns) == ["src", "dst"]


def test_sssp_says_how_to_read_a_missing_weight_column(tmp_path):
    path = tmp_path / "edges.parquet"
    edges(cost=[1.0, 2.0, 4.0]).to_parquet(path, index=False)
    with pytest.raises(gpipe.InputError, match=r"read_edges\(\.\.\., weight='cost'\)"):
        gpipe.sssp(gpipe.read_edges(path, backend="cpu"), 0, weight="cost")
