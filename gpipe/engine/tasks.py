"""One unit of gpipe's work, however it is sent: its name, and its running out of memory.

Both ways of running work on a worker (a Dask task, :mod:`gpipe.engine.execution`, and a direct
request, :mod:`gpipe.engine.direct`) run it through :func:`run_task`, and name it with
:func:`task_name`, so that the dashboard shows gpipe's steps and a worker out of memory says
which partition it was working on. This module imports neither of them.
"""

from __future__ import annotations

import sys

# The names that tasks show in the dashboard: gpipe-<step>-<owner>-<unique>.
TASK_NAMES = {
    "_survey": "survey", "_unique_ids": "ids", "_merge_unique": "ids", "_split": "shuffle",
    "build_partition": "build", "_packed_presence": "build-presence", "getitem": "shuffle-part",
    "global_ids": "sources", "_bfs_one_owner": "bfs", "_sssp_one_owner": "sssp",
    "bfs_owner": "bfs", "sssp_owner": "sssp", "join": "nccl-join", "device_identity": "nccl-device",
    "unique_id": "nccl-id", "owner_paths": "paths", "owner_path": "path",
    "_release_cached": "build-release", "_pieces": "ids", "merge_distinct": "ids",
    "_owner_ids": "ids", "numbers": "ids", "_relabel": "ids",
}


# Tasks that run alone on their host while they run: the traversal of a one-owner graph (and
# the bench's timing of it, and a path query's). Their CPU kernels take every core (gpipe.engine.threads).
ALONE_ON_HOST = {"_bfs_one_owner", "_sssp_one_owner", "_time_one_owner", "owner_paths", "owner_path",
                 "_parents_memory"}


# The build's steps, whose running out of memory means the sizing let through a graph the
# workers could not hold; and what a user can do about it, there and elsewhere.
BUILD_STEPS = {"_survey", "_unique_ids", "_merge_unique", "_split", "getitem", "build_partition",
               "_pieces", "merge_distinct", "_owner_ids", "numbers", "_relabel"}
BUILD_HINT = ("build it over more workers with partitions=, or lower Dask config "
              "gpipe.memory-fraction so that the sizing leaves more room")
QUERY_HINT = "free memory on the worker, or build the graph over more workers with partitions="


def task_name(fn, args=()) -> str:
    """``gpipe-<step>`` for ``fn`` (a long owner task is named for the traversal it runs)."""
    from gpipe.engine.owners import peers

    if fn is peers.run_owner and args:
        fn = args[0]
    name = getattr(fn, "__name__", type(fn).__name__)
    return "gpipe-" + TASK_NAMES.get(name, name.strip("_").replace("_", "-"))


def run_task(fn, *args):
    """``fn(*args)``, with running out of memory (host, CuPy or RMM) raised as OutOfMemory that
    names the partition it was working on; a traversal that raises reports its failed end
    (:func:`gpipe.progress.ending_on_error`)."""
    from gpipe.engine.threads import kernel_threads
    from gpipe.errors import OutOfMemory
    from gpipe.watch.progress import ending_on_error

    try:
        with ending_on_error(), kernel_threads(whole_pool=getattr(fn, "__name__", None) in ALONE_ON_HOST):
            return fn(*args)
    except OutOfMemory:
        raise
    except MemoryError as error:
        raise OutOfMemory(_out_of_memory_line(fn, args, error)) from error


def _out_of_memory_line(fn, args, error) -> str:
    """What ran out of memory, said where: the step (task name), the partition it worked on,
    the worker, device or host memory, and the bytes asked for where the message says so."""
    from gpipe.engine.partition import Partition
    from gpipe.errors import bytes_asked, memory_kind

    part = next((a for a in args if isinstance(a, Partition)), None)
    where = ""
    if part is not None:
        where = (f" on partition {part.owner} ({part.n_local:,} vertices, {part.n_edges:,} "
                 f"stored edges, {part.nbytes / 2**30:.2f} GiB)")
    worker = _worker_address()
    if worker:
        where += f" on worker {worker}"
    on_gpu = (part is not None and part.backend == "gpu") or "gpu" in [a for a in args if isinstance(a, str)]
    asked = bytes_asked(error)
    size = f" asking for {asked:,} bytes ({asked / 2**30:.2f} GiB)" if asked else ""
    name = getattr(fn, "__name__", "")
    hint = BUILD_HINT if name in BUILD_STEPS else QUERY_HINT
    return (f"{task_name(fn, args)}{where} ran out of {memory_kind(error, on_gpu)} memory{size}: "
            f"{error} ({hint})")


def _worker_address() -> str | None:
    """This process's Dask worker's address, if this runs on one."""
    if "distributed" not in sys.modules:
        return None
    try:
        from distributed import get_worker

        return get_worker().address
    except ValueError:  # not on a worker
        return None


def run_query_task(query, fn, *args):
    """:func:`run_task` as a Dask task of a query: its traversal's progress events carry
    ``query`` (:func:`gpipe.progress.query`), as a direct query's do."""
    from gpipe.watch import progress

    with progress.query(query):
        return run_task(fn, *args)
