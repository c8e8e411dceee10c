"""CSR construction on the CPU by degree count and scatter (Numba): no sort of the edges."""

from __future__ import annotations

import numpy as np

from gpipe.engine.compute.cpu_jit import (BOOL, FLOAT32S, FLOAT32S_RO, FLOAT64S, FLOAT64S_RO, INT32S, INT32S_RO,
                                          INT64, INT64S, INT64S_RO, kernel)

# (src, dst) endpoint arrays as the build hands them over: both in the input's id width for a
# graph built both ways at once, else int64 sources and targets in the CSR's index dtype.
# build_csr widens any other pair to int64.
_ENDPOINTS = ((INT32S, INT32S), (INT64S, INT64S), (INT64S, INT32S), (INT32S_RO, INT32S_RO),
              (INT64S_RO, INT64S_RO))
# Per weight width (the graph's, gpipe.partitioning.weights): the output array, and the inputs
# it is copied from (read-only endpoints come with weights of either kind).
_WEIGHTS = ((FLOAT64S, (FLOAT64S, FLOAT64S_RO)), (FLOAT32S, (FLOAT32S, FLOAT32S_RO)))


@kernel(*((src, dst, BOOL, BOOL, INT64S) for src, dst in _ENDPOINTS))
def _count_degrees(src, dst, symmetric, skip_loops, degree):
    """Add each stored edge to ``degree[row + 1]`` (the scan then lands in place)."""
    for i in range(src.shape[0]):
        u = src[i]
        v = dst[i]
        if skip_loops and u == v:
            continue
        degree[u + 1] += 1
        if symmetric:
            degree[v + 1] += 1


@kernel(*((src, dst, weights, BOOL, BOOL, BOOL, INT64S, indices, out)
          for src, dst in _ENDPOINTS for indices in (INT32S, INT64S)
          if indices is dst or dst in (INT64S, INT32S_RO, INT64S_RO)
          for out, inputs in _WEIGHTS
          for weights in (inputs if src in (INT32S_RO, INT64S_RO) else (out,))))
def _scatter(src, dst, weights, weighted, symmetric, skip_loops, cursor, indices, out_weights):
    for i in range(src.shape[0]):
        u = src[i]
        v = dst[i]
        if skip_loops and u == v:
            continue
        slot = cursor[u]
        cursor[u] = slot + 1
        indices[slot] = v
        if weighted:
            out_weights[slot] = weights[i]
        if symmetric:
            slot = cursor[v]
            cursor[v] = slot + 1
            indices[slot] = u
            if weighted:
                out_weights[slot] = weights[i]


def build_csr(src_local, dst, weights, n_local, index_dtype, *, symmetric=False, skip_loops=False):
    """Compressed sparse rows of an edge list: count degrees, scan, scatter; ``O(m + n_local)``.

    The CPU twin of ``gpipe.engine.compute.gpu_csr.build_csr``, with the same parameters and
    results (see there). Within a row, edges keep their input order (``symmetric``: each edge
    ``u - v`` lands in row ``u`` and in row ``v`` at its position in the input), which the GPU
    version does not promise.

    >>> indptr, indices, _ = build_csr(np.array([0, 0, 2]), np.array([1, 2, 1]), None, 3, "int32")
    >>> indptr.tolist(), indices.tolist()
    ([0, 2, 2, 3], [1, 2, 1])
    >>> build_csr(np.array([0, 0, 2]), np.array([1, 2, 1]), None, 3, "int32", symmetric=True)[1].tolist()
    [1, 2, 0, 2, 0, 1]
    """
    return build_csr_pieces([(src_local, dst, weights)], n_local, index_dtype,
                            symmetric=symmetric, skip_loops=skip_loops)


def build_csr_pieces(pieces, n_local, index_dtype, *, offset=0, symmetric=False, skip_loops=False):
    """The CPU twin of ``gpipe.engine.compute.gpu_csr.build_csr_pieces``: the CSR of the edge list
    that ``pieces`` (``(src, dst, weights)``, sources global: ``offset`` is subtracted here)
    make together, in their order, without joining them."""
    weighted = any(w is not None for _, _, w in pieces)
    weight_dtype = _weight_dtype(pieces)
    indptr = np.zeros(int(n_local) + 1, dtype=np.int64)
    for src, dst, _ in pieces:
        src, dst = _endpoints(_local(src, offset), dst)
        _count_degrees(src, dst, bool(symmetric), bool(skip_loops), indptr)
    np.cumsum(indptr, out=indptr)
    nnz = int(indptr[-1])
    indices = np.empty(nnz, dtype=index_dtype)
    out_weights = np.empty(nnz if weighted else 0, dtype=weight_dtype)
    cursor = indptr[:-1].copy()
    no_weights = np.empty(0, weight_dtype)
    for src, dst, weights in pieces:
        src, dst = _endpoints(_local(src, offset), dst)
        if weighted and weights is None and src.size:
            raise ValueError("a piece of a weighted edge list has no weights")
        w_in = np.ascontiguousarray(weights, dtype=weight_dtype) if weighted else no_weights
        if src.flags.writeable and not w_in.flags.writeable:  # no kernel for that mix
            w_in = w_in.copy()
        _scatter(src, dst, w_in, weighted, bool(symmetric), bool(skip_loops), cursor, indices,
                 out_weights)
    return indptr, indices, (out_weights if weighted else None)


def _weight_dtype(pieces):
    """The CSR's weight dtype: float32 when every piece's weights are float32 (the graph's
    width, :mod:`gpipe.partitioning.weights`), else float64."""
    dtypes = {np.asarray(w).dtype for _, _, w in pieces if w is not None}
    return np.dtype(np.float32) if dtypes == {np.dtype(np.float32)} else np.dtype(np.float64)


def _local(src, offset: int):
    """Global sources as local ids (a new array), or ``src`` itself when ``offset`` is 0."""
    src = np.asarray(src)
    return src - src.dtype.type(offset) if offset else src


def _endpoints(src, dst):
    """`src`, `dst` as one of the pairs the kernels are compiled for (_ENDPOINTS), contiguous."""
    src, dst = np.ascontiguousarray(src), np.ascontiguousarray(dst)
    pair = (src.dtype, dst.dtype)
    if pair in ((np.int32, np.int32), (np.int64, np.int64), (np.int64, np.int32)):
        return src, dst
    return src.astype(np.int64), dst.astype(np.int64)
