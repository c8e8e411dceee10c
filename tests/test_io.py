"""gpipe.read_edges on files that are not what they claim to be, the columns it keeps, and
every Parquet layout that Dask, pandas, pyarrow and Spark write.

The bad files run on the CPU backend only: the GPU reader shares the checks of the file
footers (tests/test_api.py runs the good files through both). The layouts run on both
backends (the ``gpu`` one marked, skipped without a GPU).
"""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import gpipe
from gpipe.io import read as io


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


# ---------------------------------------------------------------------------------------------
# Layouts: every one read by both backends into the same edges.

LAYOUT_EDGES = pd.DataFrame({
    "src": np.arange(120, dtype=np.int64) % 23 * 1000,
    "dst": np.arange(120, dtype=np.int64) * 7 % 23 * 1000,
    "weight": np.arange(120, dtype=np.float64) / 4,
})


def _dask_directory(path, **to_parquet):
    import dask.dataframe as dd

    frame = LAYOUT_EDGES.rename_axis(to_parquet.pop("index_name", None))
    dd.from_pandas(frame, npartitions=4, sort=False).to_parquet(path, **to_parquet)


def _spark_directory(path, hive=False):
    """part-NNNNN-<uuid>-c000.snappy.parquet files, no pandas metadata, Spark's own key-value
    metadata, a _SUCCESS marker, _common_metadata, hidden checksum files and a _temporary/
    folder of an unfinished attempt (which readers skip); ``hive``: in ``part=K`` folders."""
    path.mkdir()
    spark = {"org.apache.spark.sql.parquet.row.metadata": '{"type":"struct","fields":[]}'}
    table = None
    for i, lo in enumerate(range(0, len(LAYOUT_EDGES), 40)):
        part = LAYOUT_EDGES.iloc[lo:lo + 40]
        table = pa.Table.from_pandas(part, preserve_index=False).replace_schema_metadata(spark)
        folder = path / f"part={i}" if hive else path
        folder.mkdir(exist_ok=True)
        name = f"part-{i:05d}-0f3c2a9e-5b7d-4c1e-9a2b-1d2e3f4a5b6c.c000.snappy.parquet"
        pq.write_table(table, folder / name, compression="snappy")
        (folder / f".{name}.crc").write_bytes(b"crc")
    (path / "_SUCCESS").write_bytes(b"")
    pq.write_metadata(table.schema, path / "_common_metadata")
    (path / "_temporary" / "0").mkdir(parents=True)
    pq.write_table(table, path / "_temporary" / "0" / "part-00000-unfinished.snappy.parquet")


def _arrow_table(**columns):
    return pa.Table.from_pandas(LAYOUT_EDGES.assign(**columns), preserve_index=False)


LAYOUTS = {
    "dask-index-kept": lambda p: _dask_directory(p),  # pandas metadata names __null_dask_index__
    "dask-named-index": lambda p: _dask_directory(p, index_name="edge"),
    "dask-no-index": lambda p: _dask_directory(p, write_index=False),
    "dask-metadata-file": lambda p: _dask_directory(p, write_metadata_file=True),
    "pandas-range-index": lambda p: LAYOUT_EDGES.to_parquet(p),  # the index in metadata only
    "pandas-index-column": lambda p: LAYOUT_EDGES.set_index(LAYOUT_EDGES.index * 3).to_parquet(p, index=True),
    "pyarrow-no-pandas-metadata": lambda p: pq.write_table(_arrow_table().replace_schema_metadata(None), p),
    "spark": _spark_directory,
    "spark-hive-partitions": lambda p: _spark_directory(p, hive=True),
    "row-groups": lambda p: pq.write_table(_arrow_table(), p, row_group_size=16),
    "dictionary-column": lambda p: pq.write_table(
        _arrow_table().set_column(1, "dst", pa.array(LAYOUT_EDGES["dst"]).dictionary_encode()), p),
    "int32-ids": lambda p: LAYOUT_EDGES.astype({"src": "int32", "dst": "int32"}).to_parquet(p, index=False),
}


def backend_params():
    return [pytest.param("cpu", id="cpu"), pytest.param("gpu", id="gpu", marks=pytest.mark.gpu)]


@pytest.mark.parametrize("backend", backend_params())
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_every_layout_reads_the_same_edges(tmp_path, layout, backend, monkeypatch):
    if layout == "row-groups":
        monkeypatch.setattr(io, "BLOCK_BYTES", 600)  # several partitions of row groups
        monkeypatch.setattr(io, "GPU_BLOCK_BYTES", 600)
    path = tmp_path / ("edges" if layout.startswith(("dask", "spark")) else "edges.parquet")
    LAYOUTS[layout](path)
    frame = gpipe.read_edges(path, backend=backend)
    assert list(frame.columns) == ["src", "dst", "weight"]
    if layout == "row-groups":
        assert frame.npartitions > 1
    computed = frame.compute()
    got = computed if isinstance(computed, pd.DataFrame) else computed.to_pandas()
    assert list(got.columns) == ["src", "dst", "weight"]  # no index column came along
    for column in got.columns:
        assert str(frame.dtypes[column]) == str(computed.dtypes[column]), column
    key = ["src", "dst", "weight"]
    pd.testing.assert_frame_equal(
        got[key].sort_values(key).reset_index(drop=True),
        LAYOUT_EDGES[key].sort_values(key).reset_index(drop=True), check_dtype=False)
    result = gpipe.sssp(frame, 0).compute()
    assert len(result) == 23


@pytest.mark.parametrize("backend", backend_params())
def test_a_dictionary_encoded_string_column_reads_as_strings(tmp_path, backend):
    path = tmp_path / "edges.parquet"
    ids = pa.array([f"v{i}" for i in LAYOUT_EDGES["src"]]).dictionary_encode()
    pq.write_table(pa.table({"src": ids, "dst": ids.dictionary_decode()}), path)
    frame = gpipe.read_edges(path, backend=backend)
    assert pd.api.types.is_string_dtype(frame.dtypes["src"]), frame.dtypes["src"]
    assert str(frame.dtypes["src"]) == str(frame.compute().dtypes["src"])


def test_files_under_underscore_or_dot_names_are_not_edges(tmp_path):
    _spark_directory(tmp_path / "edges")
    files = io.local_files(str(tmp_path / "edges"))
    assert len(files) == 3 and all("_temporary" not in f for f in files)


@pytest.mark.parametrize("backend", backend_params())
@pytest.mark.parametrize("ids", ["integers", "strings"])
@pytest.mark.parametrize("convert_string", [True, False])
def test_the_read_keeps_its_name_in_dasks_task_names(tmp_path, ids, convert_string, backend):
    """Dask names a task by ``key_split`` of its key; a read fused with Dask's string
    conversion was named ``gpipe``. The read's keys, as the build computes them, and the
    frame's dtypes either way (on the CPU, Dask's own; cuDF's on the GPU)."""
    import dask
    from dask.utils import key_split

    from gpipe.io import validate

    frame = edges(weight=[1.0, 2.0, 3.0])
    if ids == "strings":
        frame = frame.assign(src=frame["src"].map("v{}".format), dst=frame["dst"].map("v{}".format))
    frame.to_parquet(tmp_path / "edges.parquet", index=False)
    with dask.config.set({"dataframe.convert-string": convert_string}):
        read = gpipe.read_edges(tmp_path / "edges.parquet", backend=backend)
        built_from = validate.edge_frame(read, "src", "dst", "weight")
        parts = built_from.to_delayed(optimize_graph=True)  # as Executor.partitions computes them
        names = {key_split(key) for part in parts for key in dict(part.__dask_graph__())}
        computed = read.compute()
        dask_conversion = dd.from_pandas(frame, npartitions=1)  # Dask's own string dtypes
        if backend == "gpu":
            dask_conversion = dask_conversion.to_backend("cudf")
    assert names == {"gpipe-read-edges"}
    assert {k: str(v) for k, v in computed.dtypes.items()} == {k: str(v) for k, v in read.dtypes.items()}
    if backend == "cpu":
        assert computed.dtypes.to_dict() == dask_conversion.dtypes.to_dict()
        pd.testing.assert_frame_equal(computed.reset_index(drop=True), dask_conversion.compute())
    else:
        pd.testing.assert_frame_equal(computed.to_pandas().reset_index(drop=True), frame, check_dtype=False)


def test_the_read_is_named_on_the_scheduler(tmp_path, dask_client2):
    """On a cluster, the scheduler's task prefixes (what the dashboard's Progress shows) name it."""
    edges().to_parquet(tmp_path / "edges.parquet", index=False)
    with dask_client2.as_current():
        gpipe.Graph.from_edges(gpipe.read_edges(tmp_path / "edges.parquet", backend="cpu"))
        prefixes = dask_client2.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.task_prefixes))
    assert "gpipe-read-edges" in prefixes
