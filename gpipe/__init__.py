"""gpipe: BFS and SSSP over Parquet edge lists, as Dask DataFrames, on CPU and GPU.

>>> import gpipe
>>> edges = gpipe.read_edges("edges/*.parquet")      # doctest: +SKIP
>>> gpipe.to_parquet(gpipe.bfs(edges, 42), "out/")   # doctest: +SKIP
"""

from gpipe.api import bfs, bfs_each, sssp, sssp_each
from gpipe.errors import (ClientClosed, GpipeError, GraphLost, GraphTooLarge, InputError, NegativeCycleError,
                          NoPath, OutOfMemory)
from gpipe.graph import Graph
from gpipe.io import read_edges
from gpipe.output import to_parquet

__all__ = ["ClientClosed", "Graph", "GpipeError", "GraphLost", "GraphTooLarge", "InputError", "NegativeCycleError",
           "NoPath", "OutOfMemory", "bfs", "bfs_each", "dashboard_link", "read_edges", "sssp",
           "sssp_each", "to_parquet"]
__version__ = "0.1.0"


def __getattr__(name):
    if name == "dashboard_link":  # imported when asked for: it imports distributed
        from gpipe.dashboard import dashboard_link

        return dashboard_link
    raise AttributeError(f"module 'gpipe' has no attribute {name!r}")
