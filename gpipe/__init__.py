"""gpipe: BFS and SSSP over Parquet edge lists, as Dask DataFrames, on CPU and GPU.

>>> import gpipe
>>> edges = gpipe.read_edges("edges/*.parquet")      # doctest: +SKIP
>>> gpipe.to_parquet(gpipe.bfs(edges, 42), "out/")   # doctest: +SKIP
"""

import sys as _sys

from gpipe.errors import (ClientClosed, GpipeError, GraphLost, GraphTooLarge, InputError, NegativeCycleError,
                          NoPath, OutOfMemory)
from gpipe.watch import progress

# ``gpipe.progress`` (README: ``gpipe.progress.follow``, ``gpipe.progress.bar()``) is the module
# gpipe/watch/progress.py itself under its public name, one module object: the engine reports
# through it from a layer below, so its code lives there. It imports only the standard library.
_sys.modules[__name__ + ".progress"] = progress

__all__ = ["ClientClosed", "Graph", "GpipeError", "GraphLost", "GraphTooLarge", "InputError", "NegativeCycleError",
           "NoPath", "OutOfMemory", "bfs", "bfs_each", "dashboard_link", "read_edges", "sssp",
           "sssp_each", "to_parquet"]
__version__ = "0.1.0"

# Imported at first use, so that ``import gpipe`` (the command line's first step) costs no
# NumPy, pandas or Dask, and a Ctrl-C during those imports finds the command's handling in place.
_LAZY = {"bfs": "gpipe.api", "bfs_each": "gpipe.api", "sssp": "gpipe.api", "sssp_each": "gpipe.api",
         "Graph": "gpipe.graph", "read_edges": "gpipe.io.read", "dashboard_link": "gpipe.watch.dashboard",
         "to_parquet": "gpipe.io.write"}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'gpipe' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
