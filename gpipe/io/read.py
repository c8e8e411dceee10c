"""Reading edge lists from Parquet into Dask DataFrames (cuDF partitions on GPU).

Local files are checked at the door: the footer of every file is read (not its data), so a
CSV, a truncated file or a missing column is an :class:`gpipe.InputError` naming the file
before any work starts. Errors that only show in the data pages surface when a partition is
read, as an InputError naming the file too.

A missing path that an overwrite by :func:`gpipe.io.write.write_parquet` left set aside when its
writer was killed is put back first (:func:`gpipe.io.write.restore_interrupted`).
"""

from __future__ import annotations

import errno
import glob
import os
from contextlib import contextmanager

from gpipe.engine import backend as backends
from gpipe.errors import InputError
from gpipe.io import footers as footer_sizes
from gpipe.io import origin as origins
from gpipe.io import validate
from gpipe.io.write import restore_interrupted

WEIGHT = "weight"  # the weight column read_edges keeps when it is asked for none in particular
BLOCK_BYTES = 256 * 2**20  # CPU: a file larger than this (uncompressed) is read as several partitions
# GPU: likewise, in larger blocks (cuDF reads a few GiB at device speed), so that a file larger
# than one owner's share of the graph is spread over several owners' workers.
GPU_BLOCK_BYTES = 2 * 2**30


def read_edges(path, *, src="src", dst="dst", weight=None, backend="auto", weight_dtype=None):
    """Read a Parquet edge list: a file, a directory of files, or a glob.

    Parameters
    ----------
    path : str or os.PathLike
        Parquet file, directory (its ``*.parquet`` files, recursively, but none under a name
        that starts with ``_`` or ``.``: Spark's ``_temporary/``, checksums) or glob pattern,
        local or any fsspec URL. Files written by Dask, pandas, pyarrow or Spark, with or
        without index columns and pandas metadata: index columns are not read, and
        dictionary-encoded columns are read as their values.
    src, dst : str
        Columns of vertex ids: integers, or strings in both.
    weight : str or None
        Column of edge weights to read as well. None (default): a column named ``weight`` is
        kept when the files have one, so ``gpipe.sssp(gpipe.read_edges(path), s)`` works.
    backend : {"auto", "cpu", "gpu"}
        ``"gpu"`` reads into cuDF partitions (needs cuDF and a GPU), ``"cpu"`` into pandas,
        ``"auto"`` picks the GPU when one is usable.
    weight_dtype : {None, "auto", "float32", "float64"}
        The width a graph built from this frame stores its weights in (kept with the frame,
        as the column names are; :meth:`gpipe.Graph.from_edges` explains the choice). The
        column is read as the files hold it.

    Returns
    -------
    dask.dataframe.DataFrame
        Lazily read, with only the named columns (and ``weight`` if found). The frame
        remembers ``path`` and its column names (:mod:`gpipe.io.origin`): the calls given it
        (:func:`gpipe.bfs`, :func:`gpipe.sssp`, :meth:`gpipe.Graph.from_edges`, ...) take their
        ``src``, ``dst``, ``weight`` and ``weight_dtype`` from here unless given them, and
        :func:`gpipe.to_parquet` refuses to write its results over ``path``. Local files are
        read one partition per file, by pyarrow on CPU (files larger than 256 MiB
        uncompressed: one partition per 256 MiB of row groups) and by ``cudf.read_parquet``
        on GPU (straight into device memory; files larger than 2 GiB uncompressed: one
        partition per 2 GiB of row groups); selecting columns of the frame reads only those.
        URLs go through ``dask.dataframe.read_parquet``.

    Raises
    ------
    InputError
        ``weight_dtype`` is none of the above; no file matches ``path``; a local file is not Parquet, is truncated or cannot be read
        (the message names it); a named column is not in the files. Later, when the frame is
        computed, a local file whose data cannot be decoded (the message names it).

    Examples
    --------
    >>> import pandas as pd, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "edges.parquet")
    >>> pd.DataFrame({"src": [0, 1], "dst": [1, 2], "weight": [0.5, 2.0]}).to_parquet(path)
    >>> list(read_edges(path, backend="cpu").columns)
    ['src', 'dst', 'weight']
    """
    weight_dtype = validate.weight_dtype(weight_dtype)
    backend = backends.resolve(backend)
    path = os.fspath(path)
    sizes = None
    if "://" in path:
        frame = _read_url(path, src, dst, weight, backend)
    else:
        files = local_files(path)
        footers = {file: _footer(file) for file in files}
        columns = _edge_columns(path, footers, src, dst, weight)
        if backend == backends.GPU:
            frame = _read_files_into_cudf(footers, columns)
        else:
            frame = _read_files_into_pandas(footers, columns)
        sizes = footer_sizes.survey(footers, src, dst)
    read_weight = list(frame.columns)[2] if len(frame.columns) > 2 else None
    return origins.record(frame, origins.Origin(paths=(path,), src=src, dst=dst, weight=read_weight,
                                                edges=True, footers=sizes, weight_dtype=weight_dtype))


def _read_url(path, src, dst, weight, backend):
    """Edges at a URL, through Dask's own reader; its metadata names the columns."""
    import dask
    import dask.dataframe as dd
    import pyarrow as pa

    with dask.config.set({"dataframe.backend": "cudf" if backend == backends.GPU else "pandas"}):
        try:
            frame = dd.read_parquet(path)
        except pa.ArrowInvalid as error:
            raise InputError(f"cannot read Parquet edges at {path!r}: {_one_line(error)}") from None
    available = list(frame.columns)
    columns = [src, dst] + _weight_columns(weight, [available], src, dst)
    for name in columns:
        if name not in available:
            raise InputError(f"edge column {name!r} not found in {path!r}; it has columns {available}")
    return frame[columns]


def local_files(path) -> list:
    """The files of a local Parquet file, directory (``*.parquet``, recursively) or glob, sorted.

    Raises InputError when there are none.
    """
    if os.path.isdir(path):
        found = glob.glob(os.path.join(glob.escape(path), "**", "*.parquet"), recursive=True)
        files = sorted(file for file in found if not _set_aside(path, file))
        if not files:
            raise InputError(f"no Parquet files (*.parquet) in directory {path!r}")
        return files
    if not glob.has_magic(path) and not os.path.lexists(path) and restore_interrupted(path):
        return local_files(path)  # an overwrite killed half-way had set it aside
    files = sorted(p for p in glob.glob(path) if os.path.isfile(p))
    if not files:
        raise InputError(f"no Parquet files at {path!r}")
    return files


def _set_aside(folder, file) -> bool:
    """Whether ``file`` lies under a name that Hadoop, Spark and Dask keep out of a dataset:
    one starting with ``_`` or ``.`` (``_temporary/`` of an unfinished job, ``_metadata``,
    checksums), below ``folder``."""
    return any(part[:1] in ("_", ".") for part in os.path.relpath(file, folder).split(os.sep))


def _footer(file):
    """The Parquet footer (schema, row groups) of a local file; InputError naming it if unreadable."""
    import pyarrow.parquet as pq

    with _naming_errors(file):
        return pq.read_metadata(file)


@contextmanager
def _naming_errors(file):
    """Turn pyarrow's errors about an unreadable or malformed file into InputError naming it.

    Running out of memory (an ``OSError`` with ``ENOMEM``, ``pyarrow.ArrowMemoryError``) is
    not the file's fault: it passes through unchanged.
    """
    import pyarrow as pa

    try:
        yield
    except (pa.ArrowInvalid, OSError) as error:
        if getattr(error, "errno", None) == errno.ENOMEM:
            raise
        raise InputError(f"cannot read edge file {file!r} as Parquet: {_one_line(error)}") from None


def _one_line(error) -> str:
    return " ".join(str(error).split())


def _edge_columns(path, footers, src, dst, weight) -> list:
    """The columns to read: ``src``, ``dst`` and the weight; InputError naming a file that lacks one."""
    names = {file: footer.schema.to_arrow_schema().names for file, footer in footers.items()}
    columns = [src, dst] + _weight_columns(weight, list(names.values()), src, dst)
    for file, available in names.items():
        for name in columns:
            if name not in available:
                where = repr(path) if file == path else f"{file!r} (of {path!r})"
                raise InputError(f"edge column {name!r} not found in {where}; it has columns {available}")
    return columns


def _weight_columns(weight, names_per_file, src, dst) -> list:
    """``[weight]``; for None, ``["weight"]`` when every file has that column and it is no id column."""
    if weight is not None:
        return [weight]
    found = all(WEIGHT in names for names in names_per_file) and WEIGHT not in (src, dst)
    return [WEIGHT] if found else []


# The read's task name. Dask shows a task by ``dask.utils.key_split`` of its key, and a read
# that Dask fuses with the steps after it is named by the first word (up to a "-") of each:
# so the read must be the only step of its tasks (Dask's own string conversion, which would
# follow it, is done inside the read instead: :func:`_from_map`).
READ_LABEL = "gpipe-read-edges"


def _from_map(read, items, **options):
    """``dd.from_map(read, items, label=READ_LABEL, **options)`` without Dask's conversion of
    string columns as a step of its own: ``read`` is passed ``strings``, whether to do it."""
    import dask
    import dask.dataframe as dd
    from dask.dataframe.utils import pyarrow_strings_enabled

    strings = pyarrow_strings_enabled()
    with dask.config.set({"dataframe.convert-string": False}):
        return dd.from_map(read, items, label=READ_LABEL, enforce_metadata=False,
                           strings=strings, **options)


def _read_files_into_pandas(footers, columns):
    """One pandas partition per file (per 256 MiB of row groups), read by pyarrow."""
    from dask.dataframe.utils import pyarrow_strings_enabled

    pieces = [piece for file, footer in footers.items()
              for piece in _pieces(file, footer, BLOCK_BYTES)]
    first = next(iter(footers.values()))
    meta = _to_pandas(first.schema.to_arrow_schema().empty_table().select(columns),
                      pyarrow_strings_enabled())
    return _from_map(read_pandas_piece, pieces, columns=columns, meta=meta)


def _pieces(file, footer, block: int) -> list:
    """``(file, row_groups)`` pieces of at most ``block`` bytes (uncompressed) each, or one row
    group where a group alone is larger; ``row_groups`` None is the whole file."""
    sizes = [footer.row_group(i).total_byte_size for i in range(footer.num_row_groups)]
    if sum(sizes) <= block:
        return [(file, None)]
    pieces, group, size = [], [], 0
    for i, bytes_ in enumerate(sizes):
        if group and size + bytes_ > block:
            pieces.append((file, group))
            group, size = [], 0
        group.append(i)
        size += bytes_
    pieces.append((file, group))
    return pieces


def read_pandas_piece(piece, columns=None, strings=False):
    import pyarrow.parquet as pq

    file, row_groups = piece
    with _naming_errors(file):
        parquet = pq.ParquetFile(file)
        table = parquet.read(columns) if row_groups is None else parquet.read_row_groups(row_groups, columns)
    return _to_pandas(table, strings)


def _to_pandas(table, strings=False):
    """pandas from an Arrow table of edge columns, dictionary-encoded columns as their values
    (a categorical id column would be no id column; cuDF reads them as their values too);
    with ``strings``, string columns as ``string[pyarrow]``, as Dask's own conversion makes
    them (Dask config ``dataframe.convert-string``)."""
    import pandas as pd
    import pyarrow as pa

    def string_dtype(arrow_type):
        if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
            return pd.StringDtype("pyarrow")
        return None

    return _without_dictionaries(table).to_pandas(types_mapper=string_dtype if strings else None)


def _without_dictionaries(table):
    import pyarrow as pa

    for i, field in enumerate(table.schema):
        if pa.types.is_dictionary(field.type):
            table = table.set_column(i, field.with_type(field.type.value_type),
                                     table.column(i).cast(field.type.value_type))
    return table


def _read_files_into_cudf(footers, columns):
    """One cuDF partition per file (per 2 GiB of row groups), each read by cuDF's own reader
    straight into device memory."""
    import cudf

    pieces = [piece for file, footer in footers.items()
              for piece in _pieces(file, footer, GPU_BLOCK_BYTES)]
    first = next(iter(footers.values()))
    meta = cudf.DataFrame.from_arrow(_plain_columns(first, columns).empty_table())
    return _from_map(read_cudf_piece, pieces, columns=columns, meta=meta)


def _plain_columns(footer, columns):
    """The Arrow schema of ``columns`` as cuDF reads them: those fields alone, dictionary
    fields as their values, and no pandas metadata (which may name index columns, such as
    Dask's ``__null_dask_index__``, that were not selected)."""
    import pyarrow as pa

    schema = footer.schema.to_arrow_schema()
    fields = [schema.field(name) for name in columns]
    return pa.schema([f.with_type(f.type.value_type) if pa.types.is_dictionary(f.type) else f
                      for f in fields])


def read_cudf_piece(piece, columns, strings=False):
    """One piece ``(file, row_groups)`` of a file as a cuDF frame (``strings`` is moot: cuDF
    strings are Arrow strings): what each partition of a GPU :func:`read_edges` runs.

    Part of this module's contract: :func:`read_edges` looks it up here when it makes the
    frame, so tests replace it on the workers to count the pieces read."""
    import cudf

    file, row_groups = piece
    with _naming_errors(file):
        # Index columns named by pandas metadata are not read: partitions get a RangeIndex.
        frame = cudf.read_parquet(file, columns=columns, use_pandas_metadata=False,
                                  row_groups=row_groups)
    if list(frame.columns) != list(columns):  # cuDF adds hive partition keys (``part=1/``) of the path
        frame = frame[list(columns)]
    for name in columns:  # a column stored as an Arrow dictionary, should cuDF keep it one
        dtype = frame[name].dtype
        if isinstance(dtype, cudf.CategoricalDtype):
            frame[name] = frame[name].astype(dtype.categories.dtype)
    return frame
