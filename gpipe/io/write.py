"""Writing results to Parquet so that readers see either the old output or the new one, whole.

A Dask write produces one file per partition, over time; a reader (or a scheduled job that
crashed half-way) could otherwise see some new files beside old ones. :func:`write_parquet`
writes into a hidden sibling directory and renames it into place only once every partition
is written. A rename within one directory is atomic on POSIX filesystems, so the target path
always names a complete dataset.

Hidden siblings
---------------
While a write to ``NAME`` runs, it keeps beside it:

- ``.NAME.tmp-<machine>-<pid>-<token>``: the new output, being written;
- ``.NAME.old-<machine>-<pid>-<token>``: during an overwrite, the previous output, set aside
  whole by one rename until the new one is renamed into place;
- ``.NAME.del-<machine>-<pid>-<token>``: the previous output, being deleted after that.

``<pid>`` is the writing process and ``<machine>`` a digest of its host name, boot and PID
namespace, the scope in which a pid names one process. A writer that is killed (SIGKILL, a
lost node) leaves them behind. The next write to ``NAME`` removes those that are *stale*:
written on this machine by a process that is no longer running, or, wherever they come from,
unchanged for ``gpipe.output.stale-after`` (Dask config, default 7 days): the processes of
other hosts cannot be asked, and a pid reused after a crash would otherwise keep its files
forever. The siblings of a write in progress, here or on another host sharing the
filesystem, are left alone: concurrent writers to one path do not disturb each other.

What a reader of ``NAME`` sees
------------------------------
Each lookup of ``NAME`` finds a complete output, the previous one or the new one, except:

- During an overwrite, between its two renames (set the old output aside, rename the new one
  into place), ``NAME`` does not exist for an instant. POSIX has no atomic exchange of two
  directories. If the writer dies right there, ``NAME`` stays missing and ``.NAME.old-*``
  holds the previous output, whole. The next :func:`write_parquet` to ``NAME``, or
  :func:`gpipe.read_edges` of it, renames it back (:func:`restore_interrupted`): at once when
  its writer ran on this machine and is gone, else once it was set aside a minute ago.
- A reader that lists the files of ``NAME`` and opens them one by one while an overwrite
  completes may open files of both outputs, or miss one: files are opened by name.
"""

from __future__ import annotations

import functools
import glob
import hashlib
import logging
import os
import re
import shutil
import socket
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from gpipe.engine.interrupts import deferred_interrupt, phase
from gpipe.errors import GpipeError, InputError

__all__ = ["to_parquet", "write_parquet", "check_writable", "refuse_over_edges", "restore_interrupted",
           "summarize", "outputs_written", "forget_outputs_written", "OutputExists", "WriteFailed"]

log = logging.getLogger("gpipe.output")

STALE_AFTER_KEY = "gpipe.output.stale-after"  # Dask config: a sibling unchanged this long is stale
DEFAULT_STALE_AFTER = "7 days"
RESTORE_AFTER_S = 60  # a writer holds a set-aside output only for the instant between two renames


def to_parquet(frame, path, *, overwrite=False):
    """Write a result to a Parquet directory as the command line does: all at once or not at
    all, and never over the edges it was computed from. Exported as ``gpipe.to_parquet``.

    Dask's own ``frame.to_parquet(path)`` writes the partitions straight into ``path`` one
    file at a time: it replaces the ``part.*.parquet`` files there (or, with ``append=True``,
    adds to them), so a reader or a crash meets a mix of old and new files, and a path that
    holds the edges is overwritten by result rows (the next read fails or reads results as
    edges). This function is :func:`write_parquet` (a hidden sibling directory renamed into
    place when complete) after :func:`refuse_over_edges` for every edge path the frame was
    computed from (:func:`gpipe.io.origin.input_paths`: a frame of :func:`gpipe.read_edges`, any
    result of a graph built from one, frames derived from them, and Dask Parquet reads).

    Parameters
    ----------
    frame : dask.dataframe.DataFrame, or a pandas or cuDF DataFrame
        The data to write (one partition for an in-memory frame); computed here, on the
        active Dask client if there is one.
    path : str or os.PathLike
        The output directory (see :func:`write_parquet`).
    overwrite : bool, optional (default=False)
        Replace an existing output at `path`. An edges path is refused either way.

    Returns
    -------
    pathlib.Path
        The absolute path written.

    Raises
    ------
    gpipe.InputError
        Before anything is computed: `path` is, contains or lies inside an edges path of
        `frame` (naming both); `path` exists and not `overwrite`; `path` cannot be written or
        is a URL.

    Examples
    --------
    >>> import os, tempfile, pandas as pd, gpipe
    >>> folder = tempfile.mkdtemp()
    >>> os.mkdir(os.path.join(folder, "edges"))
    >>> pd.DataFrame({"src": [0, 1], "dst": [1, 2]}).to_parquet(os.path.join(folder, "edges", "0.parquet"))
    >>> edges = gpipe.read_edges(os.path.join(folder, "edges"), backend="cpu")
    >>> gpipe.to_parquet(gpipe.bfs(edges, 0), os.path.join(folder, "bfs")).name
    'bfs'
    >>> gpipe.to_parquet(gpipe.bfs(edges, 0), os.path.join(folder, "edges"), overwrite=True)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    gpipe.errors.InputError: output '...' is the edges path '...'; write the result elsewhere
    """
    from gpipe.io import origin

    if not hasattr(frame, "expr") and not hasattr(frame, "dask"):  # pandas or cuDF, in memory
        import dask.dataframe as dd

        frame = dd.from_pandas(frame, npartitions=1, sort=False)
    for edges in origin.input_paths(frame):
        refuse_over_edges(path, edges)
    return write_parquet(frame, path, overwrite=overwrite)


def refuse_over_edges(output, edges) -> None:
    """InputError naming both paths if `output` is `edges`, contains them or lies inside them.

    Writing there would replace the input, or put the result among the edges that the next
    read takes. Paths are compared with symbolic links and ``..`` resolved; a glob is compared
    by the files it matches. URLs are not compared.

    Examples
    --------
    >>> refuse_over_edges("/data/edges/out", "/data/edges")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    gpipe.errors.InputError: output '/data/edges/out' lies inside the edges path '/data/edges'; ...
    """
    output, edges = os.fspath(output), os.fspath(edges)
    if "://" in output or "://" in edges:
        return
    target = os.path.realpath(output)
    inputs = sorted(glob.glob(edges)) if glob.has_magic(edges) else [edges]
    for path in map(os.path.realpath, inputs):
        if target == path:
            relation = "is"
        elif _inside(path, target):
            relation = "contains"
        elif _inside(target, path):
            relation = "lies inside"
        else:
            continue
        raise InputError(
            f"output {_shown(output, target)} {relation} the edges path {_shown(edges, path)}; "
            "write the result elsewhere"
        )


def _inside(path, folder) -> bool:
    return os.path.commonpath([path, folder]) == folder and path != folder


def _shown(given, resolved) -> str:
    """`given` quoted, followed by where it resolves to if that reads differently."""
    return repr(given) if os.path.abspath(given) == resolved else f"{given!r} (= {resolved!r})"


class WriteFailed(GpipeError):
    """Writing an output failed for a reason of its filesystem (full, read-only, gone); nothing
    was put in place. The message names the output and the system's reason."""

    def __init__(self, path, error: OSError):
        super().__init__(f"cannot write {path}: {error.strerror or error}; nothing was written there "
                         "(free space where it goes, or choose another output)")
        self.path = path


class OutputExists(InputError):
    """The output path exists and no overwrite was asked for; ``path`` names it.

    ``how`` says how the caller asks for an overwrite: ``pass overwrite=True`` in Python, a
    flag on a command line (:func:`gpipe.pipeline.run` names its own).
    """

    def __init__(self, path, how="pass overwrite=True"):
        super().__init__(f"output {str(path)!r} already exists; {how} to replace it")
        self.path = path


def write_parquet(frame, path, *, overwrite=False, beside=None):
    """Write a Dask DataFrame to a Parquet directory at `path`, all at once or not at all.

    The partitions are written to a temporary directory beside the target, named
    ``.<name>.tmp-<machine>-<pid>-<token>``, which is renamed to `path` when the last
    partition is written. With `overwrite`, an existing `path` is first renamed aside
    (``.<name>.old-...``), then the new output takes its place and the old one is deleted.
    Before writing, an output that an interrupted overwrite left set aside is put back
    (:func:`restore_interrupted`) and stale temporaries of dead writes are removed (the module
    docstring gives the rule).

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
    beside : callable, optional
        ``beside(folder)`` is called once every partition is written into the temporary
        folder, before it is renamed into place, to write files that arrive with the data (the
        job report, :mod:`gpipe.io.report`). Name them with a leading ``_`` or ``.``, which
        Parquet readers skip. If it raises, nothing is renamed into place.

    Returns
    -------
    pathlib.Path
        The absolute path of the written directory, which holds one ``part.<i>.parquet``
        file per partition. The frame's index is not written.

    Raises
    ------
    gpipe.InputError
        If `path` exists and `overwrite` is False (:class:`OutputExists`), or `path` is a URL (``s3://...``): object
        stores have no atomic rename; or, before anything is computed, `path` cannot be
        written (:func:`check_writable`).
    Exception
        Whatever computing or writing `frame` raises, ``KeyboardInterrupt`` included. The
        temporary directory is removed first, and an existing output at `path` is left as it
        was (a Ctrl-C during the final renames lets them finish: the new output is then whole).

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
    POSIX filesystem, which they are, being siblings. The module docstring says what a reader
    may see during an overwrite, and after a writer was killed.
    """
    target = check_writable(path)
    restore_interrupted(target)
    _remove_stale(target)
    if os.path.lexists(target) and not overwrite:
        raise OutputExists(target)
    target.parent.mkdir(parents=True, exist_ok=True)

    staging = sibling_path(target, "tmp")
    try:
        frame.to_parquet(staging, write_index=False)
        if beside is not None:
            beside(staging)
        phase("write")
        with deferred_interrupt():  # Ctrl-C: the renames and the old output's removal run whole
            _move_into_place(staging, target, overwrite)
            _PUT_IN_PLACE.append(target)
    except BaseException:
        with deferred_interrupt():
            _remove(staging)
        raise
    return target


_PUT_IN_PLACE: list = []  # outputs this process's writes put in place, in order


def outputs_written() -> list:
    """The outputs (absolute paths) that :func:`write_parquet` has put in place, whole, in
    this process since :func:`forget_outputs_written`: what a command interrupted after them
    says is complete."""
    return list(_PUT_IN_PLACE)


def forget_outputs_written() -> None:
    """Start :func:`outputs_written` afresh (a command's start)."""
    _PUT_IN_PLACE.clear()


def check_writable(path) -> Path:
    """Check, by trying, that :func:`write_parquet` can write `path`; return it absolute.

    Programs call it before any work whose result would go there (the command line does,
    before reading the edges). The check is real: in the deepest folder of `path` that exists,
    it creates the hidden directory that a write would create first (``.NAME.tmp-...``, see the
    module docstring; or the first missing folder's, named alike), and removes it at once. So
    a read-only filesystem, permissions (other than root's, who may write anyway) and a full
    directory table all fail here, as they would fail the write.

    Parameters
    ----------
    path : str or os.PathLike
        An output directory, existing or not; missing parent folders are allowed (the write
        creates them).

    Returns
    -------
    pathlib.Path
        The absolute path.

    Raises
    ------
    gpipe.InputError
        ``cannot write to PATH: REASON``, one line: a parent is a file or a broken symbolic
        link, the folder refuses new entries (the system's reason), or `path` is a URL.

    Examples
    --------
    >>> import tempfile, os
    >>> folder = tempfile.mkdtemp()
    >>> open(os.path.join(folder, "a-file"), "w").close()
    >>> check_writable(os.path.join(folder, "a-file", "bfs"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    gpipe.errors.InputError: cannot write to .../a-file/bfs: .../a-file is a file, not a directory
    """
    text = os.fspath(path)
    if "://" in text:
        raise InputError(
            f"cannot write {text!r} atomically: URLs (object stores) are not supported; "
            "give a local or shared filesystem path"
        )
    target = Path(text).absolute()
    reason = _why_unwritable(target)
    if reason is not None:
        raise InputError(f"cannot write to {target}: {reason}")
    return target


def _why_unwritable(target: Path) -> str | None:
    """Why nothing can be created where `target` would go, or None: tried for real."""
    child = target  # the entry a write creates in `folder` (or its hidden sibling)
    folder = target.parent
    while not os.path.isdir(folder):
        if os.path.lexists(folder):
            kind = "a broken symbolic link" if os.path.islink(folder) and not os.path.exists(folder) \
                else "a file, not a directory"
            return f"{folder} is {kind}"
        child, folder = folder, folder.parent
    probe = sibling_path(child, "tmp")
    try:
        os.mkdir(probe)
    except OSError as error:
        return f"cannot create entries in {folder} ({error.strerror or error})"
    try:
        os.rmdir(probe)
    except OSError as error:
        return f"cannot remove entries from {folder} ({error.strerror or error})"
    return None


def restore_interrupted(path) -> bool:
    """Put back the output that an overwrite of `path` set aside and never replaced.

    When `path` is missing and a ``.<name>.old-*`` sibling holds the previous output (whole: it
    was set aside by one rename), and no running write can still own it (its writer ran on
    this machine and is gone, or it was set aside over a minute ago), rename it back to `path`.

    Parameters
    ----------
    path : str or os.PathLike
        An output path of :func:`write_parquet`. URLs are left alone.

    Returns
    -------
    bool
        True if an output was put back. False when there was nothing to do, or the filesystem
        refused (a read-only folder, another process that restored or wrote `path` first).
    """
    text = os.fspath(path)
    if "://" in text:
        return False
    target = Path(text).absolute()
    if os.path.lexists(target):
        return False
    set_aside = [s for s in _siblings(target) if s.kind == "old" and s.abandoned(RESTORE_AFTER_S)]
    for sibling in sorted(set_aside, key=lambda s: s.last_change(), reverse=True):
        try:
            os.rename(sibling.path, target)
        except OSError:
            continue
        log.warning("restored %s from %s, set aside by an overwrite that did not finish", target, sibling.path.name)
        return True
    return False


def _move_into_place(staging: Path, target: Path, overwrite: bool) -> None:
    """Rename `staging` to `target`; an existing `target` is set aside first and deleted after."""
    if not os.path.lexists(target):
        os.replace(staging, target)
        return
    if not overwrite:  # appeared while we were writing
        raise OutputExists(target)
    old = sibling_path(target, "old")
    os.replace(target, old)
    try:
        os.replace(staging, target)
    except BaseException:
        os.replace(old, target)
        raise
    _discard(old, target)


def _discard(old: Path, target: Path) -> None:
    """Delete a set-aside output, renamed ``.del-*`` first so that every ``.old-*`` stays whole."""
    doomed = sibling_path(target, "del")
    try:
        os.rename(old, doomed)
    except OSError:
        doomed = old
    _remove(doomed)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        path.unlink()


# ---------------------------------------------------------------------------------------------
# The hidden siblings of an output and whether a running write still owns them.


@dataclass
class _Sibling:
    path: Path
    kind: str  # "tmp", "old" or "del"
    machine: str | None  # None: named by an older gpipe, without machine and pid
    pid: int | None

    def abandoned(self, quiet_s: float) -> bool:
        """No running write owns it: its writer, on this machine, is gone, or it sat unchanged `quiet_s` seconds.

        A pid reused by another process after a crash reads as running: the sibling then waits
        for the age rule, it is never taken from a live writer.
        """
        if self.machine == _machine() and self.pid is not None and not _running(self.pid):
            return True
        return time.time() - self.last_change() > quiet_s

    def last_change(self) -> float:
        """The latest mtime or ctime of the sibling and its entries (a rename sets the ctime)."""
        try:
            stats = [os.lstat(self.path)]
            if self.path.is_dir() and not self.path.is_symlink():
                stats += [entry.stat(follow_symlinks=False) for entry in os.scandir(self.path)]
        except OSError:  # removed or renamed meanwhile (someone is at work on it), or not ours to read
            return time.time()
        return max(max(st.st_mtime, st.st_ctime) for st in stats)


_SIBLING_SUFFIX = re.compile(r"(tmp|old|del)-(?:([0-9a-f]{12})-(\d+)-)?[0-9a-f]+")


def sibling_path(target: Path, kind: str) -> Path:
    """A fresh name for a hidden sibling of `target`, owned by this process."""
    token = uuid.uuid4().hex[:12]
    return target.with_name(f".{target.name}.{kind}-{_machine()}-{os.getpid()}-{token}")


def _siblings(target: Path) -> list:
    """The hidden siblings of `target` that exist now, by their names."""
    prefix = f".{target.name}."
    try:
        names = [entry.name for entry in os.scandir(target.parent) if entry.name.startswith(prefix)]
    except OSError:  # no parent folder yet, or one we may not list
        return []
    found = []
    for name in names:
        match = _SIBLING_SUFFIX.fullmatch(name[len(prefix):])
        if match:
            kind, machine, pid = match.groups()
            found.append(_Sibling(target.parent / name, kind, machine, int(pid) if pid else None))
    return found


def _remove_stale(target: Path) -> None:
    """Remove the hidden siblings of `target` that no running write owns (module docstring)."""
    import dask
    from dask.utils import parse_timedelta

    stale_after = parse_timedelta(dask.config.get(STALE_AFTER_KEY, DEFAULT_STALE_AFTER))
    for sibling in _siblings(target):
        if sibling.abandoned(stale_after):
            log.info("removing %s, left by a write that did not finish", sibling.path)
            try:
                _remove(sibling.path)
            except OSError as error:  # another user's, say: it is not in the way of this write
                log.warning("cannot remove %s: %s", sibling.path, error)


@functools.cache
def _machine() -> str:
    """12 hex digits naming this host, its boot and this PID namespace: where a pid means one process."""
    parts = [socket.gethostname()]
    try:
        parts.append(Path("/proc/sys/kernel/random/boot_id").read_text().strip())
        parts.append(str(os.stat("/proc/self/ns/pid").st_ino))
    except OSError:  # not Linux: the host name alone
        pass
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]


def _running(pid: int) -> bool:
    """Whether a process `pid` exists on this machine (in this PID namespace)."""
    if os.name != "posix" or pid <= 0:
        return True  # cannot tell: assume it runs
    try:
        os.kill(pid, 0)  # signal 0: only checks that the process exists
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists, owned by another user
        return True
    return True


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
        distance; ``max_distance``: the largest distance, a float (gpipe's distances are
        float64, BFS hops too; an int for a frame whose ``distance`` has an integer dtype),
        or None when nothing was reached.

    Examples
    --------
    >>> import dask.dataframe as dd, pandas as pd
    >>> frame = pd.DataFrame({"vertex": [0, 1, 2], "distance": [0.0, 1.0, float("nan")],
    ...                       "parent": pd.array([None, 0, None], dtype="int64[pyarrow]")})
    >>> summarize(dd.from_pandas(frame, npartitions=1))
    {'vertices': 3, 'reached': 2, 'max_distance': 1.0}
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
