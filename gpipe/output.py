"""Writing results to Parquet so that readers see either the old output or the new one, whole.

A Dask write produces one file per partition, over time; a reader (or a scheduled job that
crashed half-way) could otherwise see some new files beside old ones. :func:`write_parquet`
writes into a hidden sibling directory and renames it into place only once every partition
is written. A rename within one directory is atomic on POSIX filesystems, so the target path
always names a complete dataset.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

from gpipe.errors import InputError

__all__ = ["write_parquet", "summarize"]


def write_parquet(frame, path, *, overwrite=False):
    """Write a Dask DataFrame to a Parquet directory at `path`, all at once or not at all.

    The partitions are written to a temporary directory beside the target, named
    ``.<name>.tmp-<uuid>``, which is renamed to `path` when the last partition is written.
    With `overwrite`, an existing `path` is first renamed aside (``.<name>.old-<uuid>``),
    then the new output takes its place and the old one is deleted.

    Parameters
    ----------
    frame : dask.dataframe.DataFrame
        The data to write, with pandas or cuDF partitions (for example the result of
        :func:`gpipe.bfs`). It is computed here, on the active Dask client if there is one.
    path : str or os.PathLike
        The output directory, on a local or shared POSIX filesystem that the client and every
        worker see at the same path. Its parent directory is created if missing.
    overwrite : bool, optional (default=False)
        Replace an existing file or directory at `path`. Without it, an existing `path` is an
        error and nothing is computed.

    Returns
    -------
    pathlib.Path
        The absolute path of the written directory, which holds one ``part.<i>.parquet``
        file per partition. The frame's index is not written.

    Raises
    ------
    gpipe.InputError
        If `path` exists and `overwrite` is False, or `path` is a URL (``s3://...``): object
        stores have no atomic rename.
    Exception
        Whatever computing or writing `frame` raises. The temporary directory is removed first,
        and an existing output at `path` is left as it was.

    Examples
    --------
    >>> import dask.dataframe as dd, pandas as pd, tempfile, os
    >>> frame = dd.from_pandas(pd.DataFrame({"vertex": [0, 1], "distance": [0, 1]}), npartitions=1)
    >>> out = write_parquet(frame, os.path.join(tempfile.mkdtemp(), "bfs"))
    >>> sorted(p.name for p in out.iterdir())
    ['part.0.parquet']

    Notes
    -----
    The guarantee is the rename's: atomic when the temporary and final directories are on one
    POSIX filesystem, which they are, being siblings. During an overwrite there is a short
    moment between the two renames when `path` does not exist; readers never see a mix.
    If the process is killed mid-write, a ``.<name>.tmp-*`` directory may stay behind; it is
    never read as output and can be deleted.
    """
    text = os.fspath(path)
    if "://" in text:
        raise InputError(
            f"cannot write {text!r} atomically: URLs (object stores) are not supported; "
            "give a local or shared filesystem path"
        )
    target = Path(text).absolute()
    if os.path.lexists(target) and not overwrite:
        raise InputError(f"output {str(target)!r} already exists; pass overwrite=True to replace it")
    target.parent.mkdir(parents=True, exist_ok=True)

    token = uuid.uuid4().hex
    staging = target.with_name(f".{target.name}.tmp-{token}")
    try:
        frame.to_parquet(staging, write_index=False)
        _move_into_place(staging, target, overwrite, token)
    except BaseException:
        _remove(staging)
        raise
    return target


def _move_into_place(staging: Path, target: Path, overwrite: bool, token: str) -> None:
    """Rename `staging` to `target`; an existing `target` is set aside first and deleted after."""
    if not os.path.lexists(target):
        os.replace(staging, target)
        return
    if not overwrite:  # appeared while we were writing
        raise InputError(f"output {str(target)!r} already exists; pass overwrite=True to replace it")
    old = target.with_name(f".{target.name}.old-{token}")
    os.replace(target, old)
    try:
        os.replace(staging, target)
    except BaseException:
        os.replace(old, target)
        raise
    _remove(old)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        path.unlink()


def summarize(result):
    """Count the vertices and reached vertices of a traversal result, and its largest distance.

    Parameters
    ----------
    result : dask.dataframe.DataFrame
        A frame of ``vertex``, ``distance``, ``parent`` as :func:`gpipe.bfs` and
        :func:`gpipe.sssp` return (pandas or cuDF partitions). Computed here: persist it first
        if it will also be written.

    Returns
    -------
    dict
        ``vertices``: rows (the vertices that occur in an edge); ``reached``: rows with a
        distance; ``max_distance``: the largest distance, an int for BFS hops and a float for
        SSSP, or None when nothing was reached.

    Examples
    --------
    >>> import dask.dataframe as dd, pandas as pd
    >>> frame = pd.DataFrame({"vertex": [0, 1, 2], "distance": pd.array([0, 1, None], dtype="Int64"),
    ...                       "parent": pd.array([None, 0, None], dtype="Int64")})
    >>> summarize(dd.from_pandas(frame, npartitions=1))
    {'vertices': 3, 'reached': 2, 'max_distance': 1}
    """
    import dask

    distance = result["distance"]
    vertices, reached, largest = dask.compute(result.shape[0], distance.count(), distance.max())
    if reached == 0:
        largest = None
    elif distance.dtype.kind in "iu":
        largest = int(largest)
    else:
        largest = float(largest)
    return {"vertices": int(vertices), "reached": int(reached), "max_distance": largest}
