"""The one place that chooses between CPU (NumPy, pandas, Numba) and GPU (CuPy, cuDF, CUDA).

Every other module asks for a :class:`Backend` by name or by frame and uses its ``xp`` (array
module), ``frames`` (frame library), ``kernels`` (traversal kernels) and ``strings`` (string
vertex ids: :mod:`gpipe.engine.strings_cpu` on Arrow arrays, :mod:`gpipe.engine.strings_gpu` on cuDF
columns); none of them branches on the array type itself.
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
    """Array module, frame library, kernels and string ids of one device kind."""

    name: str
    xp: ModuleType
    frames: ModuleType
    kernel_module: str
    strings_module: str

    @property
    def kernels(self) -> ModuleType:
        return importlib.import_module(self.kernel_module)

    @property
    def strings(self) -> ModuleType:
        """String vertex ids: the same functions on both backends (:mod:`gpipe.engine.strings_cpu`)."""
        return importlib.import_module(self.strings_module)

    def column(self, frame, name, dtype=None):
        """The column ``name`` of ``frame`` as an array of ``xp``, without a host copy on GPU;
        of ``dtype`` when it is given (no copy where the column has it already).

        On GPU a conversion is cuDF's (libcudf ships it compiled; CuPy's ``astype`` would
        compile a kernel at its first use)."""
        series = frame[name]
        if self.name == GPU:
            if dtype is not None and series.dtype != np.dtype(dtype):
                series = series.astype(dtype)
            return series.values
        array = series.to_numpy(dtype=getattr(series.dtype, "numpy_dtype", None))
        return array if dtype is None else array.astype(dtype, copy=False)

    def synchronize(self) -> None:
        """Wait until the device has run the work queued so far (CPU: returns at once)."""
        if self.name == GPU:
            self.xp.cuda.get_current_stream().synchronize()

    def release_cached(self) -> None:
        """Give the device the blocks CuPy's pool keeps for reuse (CPU: nothing): memory that
        allocations outside the pool (cuDF's, and Dask's transfers, through RMM) could not
        use otherwise."""
        if self.name == GPU:
            self.xp.get_default_memory_pool().free_all_blocks()

    def to_host(self, array) -> np.ndarray:
        return array.get() if self.name == GPU else np.asarray(array)

    def host_copy(self, array) -> np.ndarray:
        """A NumPy copy of ``array`` that shares no memory with it (what a message may carry
        while ``array`` is reused)."""
        return array.get() if self.name == GPU else np.array(array, copy=True)

    def message_copy(self, array, device: bool):
        """A copy of ``array`` that shares no memory with it, for a message: on the device when
        ``device`` (the transport moves device arrays itself), else on the host."""
        return array.copy() if device else self.host_copy(array)

    def shared_column(self, values):
        """``values`` kept to become the ``vertex`` column of many result frames.

        pandas: a Series that every frame takes without a copy; copy-on-write gives each frame
        its own copy the moment someone edits it in place. cuDF columns are not copy-on-write,
        so on GPU the array stays as it is and :meth:`result_frame` copies it into each frame.
        """
        if self.name == GPU:
            return values
        return pd.Series(values, copy=False)

    def result_frame(self, vertex, distance, parent, parent_missing):
        """A frame of ``vertex``, ``distance`` and ``parent``, with nulls for what is missing.

        ``vertex`` comes from :meth:`shared_column`. ``distance`` is integer hops, negative
        where unreached, or float64, +inf where unreached; ``parent`` holds vertex ids, missing
        where ``parent_missing``. The frame takes ``distance``, ``parent`` and
        ``parent_missing`` over (it may keep or overwrite them). The dtypes are gpipe's one
        convention (README, "The result"): ``distance`` is float64 for every query, NaN where
        unreached in pandas, null in cuDF; ``parent`` is the vertex dtype with nulls, in pandas
        its Arrow twin (:func:`parent_dtype`: ``int64[pyarrow]``...), in cuDF the plain dtype.
        String ids: ``vertex`` and ``parent`` are columns of ``strings.to_column``, ``parent``
        with its nulls already, and ``parent_missing`` is None. ``parent`` None: a frame of
        ``vertex`` and ``distance`` only (a query with ``parents=False``).
        """
        if self.name == GPU:
            return _cudf_result(self.xp, vertex, distance, parent, parent_missing)
        distance = float_distance(distance)
        if parent is None:
            return pd.DataFrame({"vertex": vertex, "distance": distance}, copy=False)
        if parent_missing is not None:
            parent = nullable_ids(parent, parent_missing)
        return pd.DataFrame({"vertex": vertex, "distance": distance, "parent": parent}, copy=False)

    def empty_result(self, vertex_dtype, parents: bool = True):
        """The zero-row frame with the dtypes :meth:`result_frame` produces (Dask's ``meta``);
        without its ``parent`` column when not ``parents``."""
        if not parents:
            return self.empty_result(vertex_dtype)[["vertex", "distance"]]
        if is_string_dtype(vertex_dtype):
            empty = self.strings.empty(vertex_dtype)
            if self.name == GPU:
                return self.frames.DataFrame({"vertex": empty, "distance": self.frames.Series(
                    np.empty(0, dtype=DISTANCE_DTYPE)), "parent": empty.copy()})
            return CPU_BACKEND.result_frame(empty, np.empty(0, dtype=DISTANCE_DTYPE), empty.copy(), None)
        vertex = np.empty(0, dtype=vertex_dtype)
        distance = np.empty(0, dtype=DISTANCE_DTYPE)
        if self.name == GPU:
            return self.frames.DataFrame(
                {
                    "vertex": self.frames.Series(vertex),
                    "distance": self.frames.Series(distance),
                    "parent": self.frames.Series(vertex),
                }
            )
        return CPU_BACKEND.result_frame(pd.Series(vertex), distance, vertex, np.empty(0, dtype=bool))


DISTANCE_DTYPE = np.dtype("float64")  # every query's distance: hops are exact in float64


def float_distance(distance) -> np.ndarray:
    """A NumPy ``distance`` as the result's float64, NaN where unreached: integer hops
    (negative where unreached) in a new array, float64 (+inf where unreached) in place."""
    if distance.dtype.kind == "f":
        distance[distance == np.inf] = np.nan  # in place: the unreached become NaN
        return distance
    return np.where(distance < 0, np.nan, distance)


def parent_dtype(vertex_dtype):
    """The pandas dtype of ``parent`` (and of ``vertex`` columns with nulls) for ``vertex_dtype``:
    a NumPy integer's Arrow twin (``int64`` -> ``int64[pyarrow]``), which holds nulls and which
    Dask's ``describe`` and ``quantile`` take (pandas' ``Int64`` they do not); any other dtype
    (strings, a pandas extension dtype) as it is."""
    if isinstance(vertex_dtype, np.dtype) and vertex_dtype.kind in "iu":
        import pyarrow as pa

        return pd.ArrowDtype(pa.from_numpy_dtype(vertex_dtype))
    return vertex_dtype


def nullable_ids(values, missing):
    """NumPy integer ``values`` with nulls where ``missing``, as pandas' Arrow array of their
    dtype (:func:`parent_dtype`); the values' buffer is kept, not copied."""
    import pyarrow as pa

    return pd.arrays.ArrowExtensionArray(pa.array(values, mask=np.asarray(missing, dtype=bool)))


def _cudf_result(cp, vertex, distance, parent, parent_missing):
    """:meth:`Backend.result_frame` on GPU: each column wraps its CuPy array without a copy
    (pylibcudf), with a null mask made from a boolean array in one pass (``bools_to_mask``).
    The boolean arrays come from kernels shipped compiled (:mod:`gpipe.engine.compute.gpu_arrays`),
    not CuPy's, which compile at their first use. Integer hops become float64 through
    libcudf's cast (compiled, and it keeps the nulls)."""
    import cudf
    import pylibcudf as plc

    from gpipe.engine.compute import gpu_arrays

    if vertex.size == 0:
        return gpu_backend().empty_result(vertex.dtype, parent is not None)
    if distance.dtype.kind == "f":
        reached = gpu_arrays.isfinite(distance)
    else:
        reached = gpu_arrays.non_negative(distance)
    distance = _float_column(plc, _with_nulls(plc, plc.Column.from_array(distance), reached))
    if parent is None:  # distances only
        if isinstance(vertex, cp.ndarray):  # integer ids
            columns = [plc.Column.from_array(gpu_arrays.copy(vertex)), distance]
            return cudf.DataFrame.from_pylibcudf(plc.Table(columns), {"columns": ["vertex", "distance"]})
        distance = cudf.DataFrame.from_pylibcudf(plc.Table([distance]), {"columns": ["distance"]})["distance"]
        return cudf.DataFrame({"vertex": vertex.copy(), "distance": distance})
    if parent_missing is None:  # string ids: vertex and parent are cuDF string columns
        distance = cudf.DataFrame.from_pylibcudf(plc.Table([distance]), {"columns": ["distance"]})["distance"]
        return cudf.DataFrame({"vertex": vertex.copy(), "distance": distance, "parent": parent})
    has_parent = gpu_arrays.logical_not(parent_missing, out=parent_missing)
    columns = [
        plc.Column.from_array(gpu_arrays.copy(vertex)),  # the shared column stays the partition's own
        distance,
        _with_nulls(plc, plc.Column.from_array(parent), has_parent),
    ]
    return cudf.DataFrame.from_pylibcudf(plc.Table(columns), {"columns": ["vertex", "distance", "parent"]})


def _float_column(plc, column):
    """A pylibcudf ``column`` as float64 (libcudf's cast, nulls kept); float64 as it is."""
    if column.type().id() == plc.types.TypeId.FLOAT64:
        return column
    return plc.unary.cast(column, plc.types.DataType(plc.types.TypeId.FLOAT64))


def _with_nulls(plc, column, valid):
    """``column`` with a null wherever the CuPy boolean array ``valid`` is False."""
    mask, null_count = plc.transform.bools_to_mask(plc.Column.from_array(valid))
    return column.with_mask(mask, null_count)


def is_string_dtype(dtype) -> bool:
    """Whether a column of ``dtype`` holds string vertex ids: pandas object, ``string``,
    ``str`` and Arrow strings, cuDF strings."""
    return pd.api.types.is_string_dtype(dtype)


CPU_BACKEND = Backend(CPU, np, pd, "gpipe.engine.compute.cpu", "gpipe.engine.strings_cpu")


@functools.lru_cache(maxsize=None)
def gpu_backend() -> Backend:
    import cudf
    import cupy

    return Backend(GPU, cupy, cudf, "gpipe.engine.compute.gpu", "gpipe.engine.strings_gpu")


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
