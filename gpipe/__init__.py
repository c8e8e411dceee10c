"""gpipe: BFS and SSSP over Parquet edge lists, as Dask DataFrames, on CPU and GPU."""

from gpipe.errors import GpipeError, InputError, NegativeCycleError

__all__ = ["GpipeError", "InputError", "NegativeCycleError"]
__version__ = "0.1.0"
