"""Reading edge lists from Parquet into Dask DataFrames (cuDF partitions on GPU)."""

from __future__ import annotations

import glob
import os

from gpipe import backend as backends
from gpipe.errors import InputError


def read_edges(path, *, src="src", dst="dst", weight=None, backend="auto"):
    """Read a Parquet edge list: a file, a directory of files, or a glob.

    Parameters
    ----------
    path : str or os.PathLike
        Parquet file, directory or glob pattern (local or any fsspec URL).
    src, dst : str
        Columns of integer vertex ids.
    weight : str or None
        Column of edge weights to read as well.
    backend : {"auto", "cpu", "gpu"}
        ``"gpu"`` reads into cuDF partitions (needs cuDF and a GPU), ``"cpu"`` into pandas,
        ``"auto"`` picks the GPU when one is usable.

    Returns
    -------
    dask.dataframe.DataFrame
        Lazily read, with only the named columns. On GPU, local files are read one partition
        per file by ``cudf.read_parquet`` (cuDF's reader, straight into device memory); URLs
        go through ``dask.dataframe.read_parquet``.

    Raises
    ------
    InputError
        No file matches ``path``, or a named column is not in the files.
    """
    import dask
    import dask.dataframe as dd

    backend = backends.resolve(backend)
    path = os.fspath(path)
    if "://" not in path and not glob.glob(path):
        raise InputError(f"no Parquet files at {path!r}")
    columns = [src, dst] + ([weight] if weight is not None else [])
    available = _schema_names(path)
    for name in columns:
        if available is not None and name not in available:
            raise InputError(f"edge column {name!r} not found in {path!r}; it has columns {available}")
    files = _local_files(path)
    if backend == backends.GPU and files:
        return _read_files_into_cudf(files, columns)
    with dask.config.set({"dataframe.backend": "cudf" if backend == backends.GPU else "pandas"}):
        return dd.read_parquet(path, columns=columns)


def _local_files(path) -> list:
    """The Parquet files of a local file, directory or glob, sorted; [] for a URL."""
    if "://" in path:
        return []
    if os.path.isdir(path):
        return sorted(glob.glob(os.path.join(glob.escape(path), "**", "*.parquet"), recursive=True))
    return sorted(p for p in glob.glob(path) if os.path.isfile(p))


def _read_files_into_cudf(files, columns):
    """One cuDF partition per file, each read by cuDF's own reader straight into device memory."""
    import cudf
    import dask.dataframe as dd
    import pyarrow.parquet as pq

    schema = pq.read_schema(files[0])
    meta = cudf.DataFrame.from_arrow(schema.empty_table().select(columns))
    return dd.from_map(_read_cudf, files, columns=columns, meta=meta, enforce_metadata=False)


def _read_cudf(file, columns):
    import cudf

    return cudf.read_parquet(file, columns=columns)


def _schema_names(path) -> list | None:
    """Column names of the Parquet data at ``path``, or None if they cannot be read cheaply."""
    try:
        import pyarrow.dataset as ds

        files = sorted(glob.glob(path)) if glob.has_magic(path) else path
        return list(ds.dataset(files, format="parquet").schema.names)
    except Exception:
        return None
