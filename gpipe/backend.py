"""The one place that chooses between CPU (NumPy, pandas, Numba) and GPU (CuPy, cuDF, CUDA).

Every other module asks for a :class:`Backend` by name or by frame and uses its ``xp`` (array
module), ``frames`` (frame library) and ``kernels`` (traversal kernels); none of them branches
on the array type itself.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from types import ModuleType

import numpy as np
import pandas as pd

CPU = "cpu"
GPU = "gpu"


@dataclass(frozen=True)
class Backend:
    """Array module, frame library and kernels of one device kind."""

    name: str
    xp: ModuleType
    frames: ModuleType
    kernel_module: str

    @property
    def kernels(self) -> ModuleType:
        return importlib.import_module(self.kernel_module)

    def column(self, frame, name):
        """The column ``name`` of ``frame`` as an array of ``xp``, without a host copy on GPU."""
        series = frame[name]
        if self.name == GPU:
            return series.values
        return series.to_numpy(dtype=getattr(series.dtype, "numpy_dtype", None))

    def argsort_stable(self, array):
        """Indices that sort ``array``, equal keys kept in their input order."""
        if self.name == GPU:
            return self.xp.argsort(array)  # CuPy sorts with a stable radix sort
        return np.argsort(array, kind="stable")

    def to_host(self, array) -> np.ndarray:
        return array.get() if self.name == GPU else np.asarray(array)

    def host_copy(self, array) -> np.ndarray:
        """A NumPy copy of ``array`` that shares no memory with it (what a message may carry
        while ``array`` is reused)."""
        return array.get() if self.name == GPU else np.array(array, copy=True)

    def result_frame(self, vertex, distance, distance_valid, parent, parent_valid):
        """A frame of ``vertex``, ``distance`` and ``parent`` with nulls where ``*_valid`` is False.

        ``distance`` keeps its dtype (integer hops or float64); ``parent`` takes ``vertex``'s dtype.
        In pandas, integer columns with nulls use the nullable extension dtypes (``Int64``...),
        float columns use NaN.
        """
        parent = parent.astype(vertex.dtype, copy=False)
        if self.name == GPU:
            frame = self.frames.DataFrame({"vertex": vertex, "distance": distance, "parent": parent})
            frame["distance"] = frame["distance"].where(self.frames.Series(distance_valid), None)
            frame["parent"] = frame["parent"].where(self.frames.Series(parent_valid), None)
            return frame
        return pd.DataFrame(
            {
                "vertex": vertex,
                "distance": _nullable(distance, distance_valid),
                "parent": _nullable(parent, parent_valid),
            }
        )

    def empty_result(self, vertex_dtype, distance_dtype):
        """The zero-row frame with the dtypes :meth:`result_frame` produces (Dask's ``meta``)."""
        vertex = np.empty(0, dtype=vertex_dtype)
        distance = np.empty(0, dtype=distance_dtype)
        valid = np.empty(0, dtype=bool)
        frame = CPU_BACKEND.result_frame(vertex, distance, valid, vertex, valid)
        if self.name == GPU:
            return self.frames.DataFrame(
                {
                    "vertex": self.frames.Series(vertex),
                    "distance": self.frames.Series(distance),
                    "parent": self.frames.Series(vertex),
                }
            )
        return frame


def _nullable(values: np.ndarray, valid: np.ndarray):
    if values.dtype.kind == "f":
        return np.where(valid, values, np.nan)
    return pd.arrays.IntegerArray(values, ~valid)


CPU_BACKEND = Backend(CPU, np, pd, "gpipe.kernels.cpu")


@functools.lru_cache(maxsize=None)
def gpu_backend() -> Backend:
    import cudf
    import cupy

    return Backend(GPU, cupy, cudf, "gpipe.kernels.gpu")


def get(name: str) -> Backend:
    """The backend called ``name`` (``"cpu"`` or ``"gpu"``)."""
    return gpu_backend() if name == GPU else CPU_BACKEND


def name_of_frame(frame) -> str:
    """``"gpu"`` for a cuDF frame or series (or a Dask collection of them), else ``"cpu"``."""
    meta = getattr(frame, "_meta", frame)
    return GPU if type(meta).__module__.split(".")[0] in ("cudf", "dask_cudf") else CPU


def gpu_available() -> bool:
    """True when cuDF and CuPy import and CuPy sees at least one CUDA device."""
    try:
        import cudf  # noqa: F401
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def resolve(name: str) -> str:
    """Turn ``"auto"`` into ``"gpu"`` or ``"cpu"``; check an explicit choice."""
    from gpipe.errors import InputError

    if name == "auto":
        return GPU if gpu_available() else CPU
    if name not in (CPU, GPU):
        raise InputError(f"backend must be 'auto', 'cpu' or 'gpu', not {name!r}")
    if name == GPU and not gpu_available():
        raise InputError("backend 'gpu' needs cuDF, CuPy and a CUDA device; none is available here")
    return name
