"""``gpipe bench``: the graphs it times, generated on the device that runs them.

Kronecker (Graph500) and 3-D grid edge lists from :mod:`gpipe.generators`, cut into frames
that cuDF can hold, with their ids made dense, sparse or strings, and integer weights where
SSSP needs them. Module-level, so that Dask can ship these to the workers.
"""

from __future__ import annotations

import numpy as np

from gpipe import generators
from gpipe.engine import backend as backends


# From this scale on, Kronecker graphs are generated with int32 ids and without the edge
# shuffle: the shuffle's sort needs several times the edge list, which kron27 cannot spare
# on an 80 GB GPU. Ids stay randomly relabelled, so traversals see the same graph.
LEAN_SCALE = 26


# cuDF columns hold fewer than 2**31 rows: larger edge lists become several partitions.
PART_ROWS = 2**30


ID_KINDS = ("dense", "sparse", "string")


# Sparse ids: far apart and far from 0, so that the build renumbers them (build.IDENTITY_SLACK).
SPARSE_STRIDE = 1_000_003


SPARSE_BASE = 10**12


def with_ids(frame, ids):
    """The generated ``frame`` with its ids as ``ids`` says (:data:`ID_KINDS`); the same graph."""
    if ids == "dense":
        return frame
    columns = {}
    for name in ("src", "dst"):
        values = frame[name].astype("int64")
        columns[name] = values * SPARSE_STRIDE + SPARSE_BASE if ids == "sparse" else values.astype(str)
    return frame.assign(**columns)


def generated_rows(kind, size) -> int:
    return 16 * 2**size if kind == "kron" else 3 * size**2 * (size - 1)


def generate_parts(kind, size, weighted, seed, xp):
    """The generated edges as frames of at most PART_ROWS rows each."""
    columns = generate(kind, size, weighted, seed, xp, frame=False)
    return frames(columns, xp, -(-max(len(columns["src"]), 1) // PART_ROWS))


def share_part_count(scale, shares) -> int:
    """Frames of at most PART_ROWS rows that the largest share of a Kronecker graph fills."""
    return max(1, -(-(generated_rows("kron", scale) // shares + 1) // PART_ROWS))


def generate_share_parts(scale, share, shares, weighted, seed, xp):
    """Share ``share`` of a generated Kronecker graph as :func:`share_part_count` frames of at
    most PART_ROWS rows (the last ones possibly empty)."""
    lean = scale >= LEAN_SCALE
    columns = generators.kronecker_share(scale, share, shares, seed=seed, weights=weighted, xp=xp,
                                         frame=False, id_dtype="int32" if lean else "int64")
    return frames(columns, xp, share_part_count(scale, shares))


def frames(columns, xp, count) -> list:
    """``count`` frames of the backend of ``xp``, of PART_ROWS consecutive rows of ``columns`` each."""
    frames = backends.get(backends.GPU if xp == "cupy" else backends.CPU).frames
    return [frames.DataFrame({k: v[i * PART_ROWS:(i + 1) * PART_ROWS] for k, v in columns.items()})
            for i in range(count)]


def generate(kind, size, weighted, seed, xp, frame=True):
    if kind == "kron":
        lean = size >= LEAN_SCALE
        return generators.kronecker_edges(size, seed=seed, weights=weighted, xp=xp, frame=frame,
                                          id_dtype="int32" if lean else "int64", shuffle=not lean)
    return generators.grid_edges(size, seed=seed, weights=weighted, xp=xp, frame=frame)


def add_weights(frame, seed, partition_info=None):
    """``frame`` with a ``weight`` column of integers 1..255 (float64), drawn on its device."""
    number = partition_info["number"] if partition_info else 0
    be = backends.get(backends.name_of_frame(frame))
    return frame.assign(weight=generators.integer_weights(len(frame), seed + 1 + number, be.xp))


def empty_edges(backend_name, weighted, id_dtype="int64"):
    """The zero-row edge frame with the generators' columns and dtypes (Dask's ``meta``)."""
    columns = {"src": np.empty(0, id_dtype), "dst": np.empty(0, id_dtype)}
    if weighted:
        columns["weight"] = np.empty(0, np.float64)
    return backends.get(backend_name).frames.DataFrame(columns)
