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
        Lazily read, with only the named columns.

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
    with dask.config.set({"dataframe.backend": "cudf" if backend == backends.GPU else "pandas"}):
        return dd.read_parquet(path, columns=columns)


def _schema_names(path) -> list | None:
    """Column names of the Parquet data at ``path``, or None if they cannot be read cheaply."""
    try:
        import pyarrow.dataset as ds

        files = sorted(glob.glob(path)) if glob.has_magic(path) else path
        return list(ds.dataset(files, format="parquet").schema.names)
    except Exception:
        return None
