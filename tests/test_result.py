"""gpipe.engine.result: an owner's traversal arrays turned into its rows of the result.

Hand-made partitions and arrays, answers written out: which rows there are (present vertices
only), their input ids (kept or renumbered, any integer dtype, an offset for later owners),
nulls from the kernels' sentinels (-1 hops or parent, +inf distance), the dtypes that the
result's meta promises, and the rows kept on the partition between queries. Every case runs on
pandas and (marked ``gpu``) on cuDF.
"""

import numpy as np
import pandas as pd
import pytest

from gpipe.engine import result
from gpipe.engine.partition import Partition

BACKENDS = [pytest.param("cpu", id="cpu"), pytest.param("gpu", id="gpu", marks=pytest.mark.gpu)]
NA = None  # a null, in the lists below


def xp_of(backend):
    if backend == "gpu":
        import cupy

        return cupy
    return np


def partition(backend, offset, n_local, present=None, n=None):
    xp = xp_of(backend)
    present = None if present is None else xp.asarray(present, dtype=bool)
    return Partition(backend, 0, offset, n_local, n if n is not None else offset + n_local,
                     None, None, None, present)


def owner_frame(backend, part, ids, dist, parent, kind, vertex_dtype=np.dtype("int64")):
    """owner_frame on the backend's arrays; the computed frame as it is, and as plain lists."""
    xp = xp_of(backend)
    ids = None if ids is None else xp.asarray(np.asarray(ids, dtype=vertex_dtype))
    dist = xp.asarray(np.asarray(dist, dtype=np.int32 if kind == result.BFS else np.float64))
    frame = result.owner_frame(part, ids, dist, xp.asarray(np.asarray(parent, dtype=np.int64)), kind,
                               vertex_dtype)
    return frame, as_lists(frame)


def as_lists(frame):
    """Each column as a list, None for a null (pandas <NA> or NaN, cuDF null)."""
    if not isinstance(frame, pd.DataFrame):
        frame = frame.to_pandas(nullable=True)
    return {name: [None if pd.isna(v) else v for v in frame[name].tolist()] for name in frame.columns}


def dtypes(frame):
    return {name: str(dtype) for name, dtype in frame.dtypes.items()}


def convention(backend, vertex_dtype="int64"):
    """The dtypes of gpipe's one convention (README, "The result"), written out: distance
    float64 for both kinds; parent the vertex dtype with nulls (pandas: its Arrow twin)."""
    parent = vertex_dtype if backend == "gpu" else f"{vertex_dtype}[pyarrow]"
    return {"vertex": vertex_dtype, "distance": "float64", "parent": parent}


def assert_nulls_not_nan(backend, frame):
    """cuDF: unreached distances are nulls, not NaN (a NaN would be no null: Parquet and
    ``isna`` would see it otherwise than pandas' NaN)."""
    if backend == "gpu":
        assert frame["distance"].null_count == as_lists(frame)["distance"].count(None) > 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_rows_of_the_present_vertices_keep_their_ids(backend):
    # Owner of global ids 10..15; 11 and 14 never occur in the edge list.
    part = partition(backend, 10, 6, present=[1, 0, 1, 1, 0, 1], n=16)
    frame, got = owner_frame(backend, part, None, dist=[0, -1, 1, -1, 5, 2],
                             parent=[-1, -1, 10, -1, 7, 12], kind=result.BFS)
    assert got == {"vertex": [10, 12, 13, 15], "distance": [0, 1, NA, 2], "parent": [NA, 10, NA, 12]}
    assert dtypes(frame) == dtypes(result.meta(backend, result.BFS, np.dtype("int64"))) == convention(backend)
    assert_nulls_not_nan(backend, frame)


@pytest.mark.parametrize("backend", BACKENDS)
def test_renumbered_ids_come_back_and_a_missing_parent_stays_null(backend):
    ids = [-50, -7, 3, 10**12]  # global id g is the input id ids[g]; no present mask then
    part = partition(backend, 0, 4)
    frame, got = owner_frame(backend, part, ids, dist=[0.0, 2.5, np.inf, 4.0], parent=[-1, 0, -1, 1],
                             kind=result.SSSP)
    # parent -1 must not come back as ids[-1]
    assert got == {"vertex": [-50, -7, 3, 10**12], "distance": [0.0, 2.5, NA, 4.0], "parent": [NA, -50, NA, -7]}
    assert dtypes(frame) == dtypes(result.meta(backend, result.SSSP, np.dtype("int64"))) == convention(backend)
    assert_nulls_not_nan(backend, frame)


@pytest.mark.parametrize("backend", BACKENDS)
def test_renumbered_ids_of_a_later_owner(backend):
    ids = [-9, -8, -5, 0, 7, 100]
    part = partition(backend, 3, 3, n=6)  # global ids 3..5
    _, got = owner_frame(backend, part, ids, dist=[2, -1, 0], parent=[1, -1, -1], kind=result.BFS)
    assert got == {"vertex": [0, 7, 100], "distance": [2, NA, 0], "parent": [-8, NA, NA]}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", [result.BFS, result.SSSP])
@pytest.mark.parametrize("dtype", ["int8", "int32", "uint16", "uint64"])
def test_id_dtype_is_kept(backend, kind, dtype):
    dtype = np.dtype(dtype)
    top = int(np.iinfo(dtype).max)
    ids = [0, 5, top - 1, top]
    part = partition(backend, 0, 4)
    frame, got = owner_frame(backend, part, ids, dist=[1, 0, -1, 2] if kind == result.BFS else [1.0, 0.0, np.inf, 2.0],
                             parent=[1, -1, -1, 0], kind=kind, vertex_dtype=dtype)
    assert got["vertex"] == ids
    assert got["parent"] == [5, NA, NA, 0]
    assert frame["vertex"].dtype == dtype
    assert dtypes(frame) == dtypes(result.meta(backend, kind, dtype)) == convention(backend, dtype.name)


def test_pandas_extension_id_dtype_is_kept():
    part = partition("cpu", 0, 3, present=[1, 1, 1])
    frame, got = owner_frame("cpu", part, None, dist=[0, 1, -1], parent=[-1, 0, -1], kind=result.BFS,
                             vertex_dtype=pd.Int64Dtype())
    assert got == {"vertex": [0, 1, 2], "distance": [0, 1, NA], "parent": [NA, 0, NA]}
    assert dtypes(frame) == {"vertex": "Int64", "distance": "float64", "parent": "Int64"}
    assert dtypes(frame) == dtypes(result.meta("cpu", result.BFS, pd.Int64Dtype()))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", [result.BFS, result.SSSP])
def test_an_owner_without_present_vertices_gives_no_rows(backend, kind):
    part = partition(backend, 4, 3, present=[0, 0, 0], n=8)
    frame, got = owner_frame(backend, part, None, dist=[-1, -1, -1] if kind == result.BFS else [np.inf] * 3,
                             parent=[-1, -1, -1], kind=kind)
    assert got == {"vertex": [], "distance": [], "parent": []}
    assert dtypes(frame) == dtypes(result.meta(backend, kind, np.dtype("int64"))) == convention(backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("present", [None, [1, 0, 1, 1]], ids=["all-present", "holes"])
def test_rows_are_kept_between_queries_and_each_frame_is_its_own(backend, present):
    part = partition(backend, 0, 4, present=present)
    first, _ = owner_frame(backend, part, None, dist=[0, 1, 1, -1], parent=[-1, 0, 0, -1], kind=result.BFS)
    kept = part.rows
    assert kept is not None
    first.loc[0, "vertex"] = 99  # an edit of one result in place ...
    second, got = owner_frame(backend, part, None, dist=[-1, 0, -1, 1], parent=[-1, -1, -1, 1],
                              kind=result.BFS)
    assert part.rows is kept
    assert as_lists(first)["vertex"][0] == 99
    assert got["vertex"] == ([0, 1, 2, 3] if present is None else [0, 2, 3])  # ... stays in that result
