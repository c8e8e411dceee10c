"""CSR construction on the GPU from an edge list already on the device (``kernels/csr.cu``)."""

from __future__ import annotations

import cupy

from gpipe.engine.compute import cuda, gpu_arrays

_SOURCE = "csr.cu"
_ID_DTYPES = (cupy.dtype(cupy.int32), cupy.dtype(cupy.int64))


def build_csr(src_local, dst, weights, n_local, index_dtype, *, symmetric=False, skip_loops=False):
    """Compressed sparse rows of an edge list, by degree count, scan and atomic scatter.

    Parameters
    ----------
    src_local : cupy.ndarray of int32 or int64, shape (m,)
        Row of each edge, in ``[0, n_local)`` (a local id: global id minus the owner's offset).
    dst : cupy.ndarray of int32 or int64, shape (m,)
        Target of each edge (global id), stored as given in ``indices``.
    weights : cupy.ndarray of float64 or float32, shape (m,), or None
        Weight of each edge, or None for an unweighted graph. float32 weights are stored as
        float32 (the graph's width); any other dtype as float64.
    n_local : int
        Number of rows.
    index_dtype : dtype-like
        ``int32`` or ``int64``: the dtype of the returned ``indices`` (ARCHITECTURE.md: int32
        while ``n < 2**31``). Targets are not range-checked against it.
    symmetric : bool, default False
        Store every edge in both directions, ``src -> dst`` and ``dst -> src`` (an undirected
        graph given once per edge), without building the doubled edge list. Only for a
        one-owner layout (offset 0): every ``dst`` must then lie in ``[0, n_local)`` too.
    skip_loops : bool, default False
        Leave out edges with ``src_local == dst`` (meaningful when the offset is 0).

    Returns
    -------
    indptr : cupy.ndarray of int64, shape (n_local + 1,)
        ``indptr[0] == 0``; the edges of row ``u`` are ``indices[indptr[u]:indptr[u + 1]]``.
    indices : cupy.ndarray of ``index_dtype``, shape (nnz,)
        Targets, grouped by row. **Within a row the order is unspecified** (atomic cursors;
        it may change from run to run): compare rows as multisets.
    weights : cupy.ndarray of float32 or float64, shape (nnz,), or None
        Parallel to ``indices``, of the input weights' width; None when ``weights`` is None.

    Examples
    --------
    >>> import cupy
    >>> src = cupy.array([0, 0, 2], dtype=cupy.int64)                       # doctest: +SKIP
    >>> dst = cupy.array([1, 2, 1], dtype=cupy.int64)                       # doctest: +SKIP
    >>> indptr, indices, _ = build_csr(src, dst, None, 3, "int32")          # doctest: +SKIP
    >>> indptr.tolist(), sorted(indices[0:2].tolist()), indices[2:].tolist()  # doctest: +SKIP
    ([0, 2, 2, 3], [1, 2], [1])
    >>> indptr, indices, _ = build_csr(src, dst, None, 3, "int32", symmetric=True)  # doctest: +SKIP
    >>> indptr.tolist()                                                     # doctest: +SKIP
    [0, 2, 4, 6]

    Notes
    -----
    Three passes (``kernels/csr.cu``): an ``atomicAdd`` degree histogram, an exclusive scan
    (CUB's, in place, of ``[0, degrees...]``), and a scatter in which each edge takes the next free slot of its row
    with ``atomicAdd`` on a cursor and writes its target and weight there. Time is
    ``O(m + n_local)``, with no sort. Device memory besides the input is the output
    (``nnz * (itemsize + 8)`` bytes) plus two int64 arrays of ``n_local``; the call reads
    ``nnz`` back to the host once to size the output.

    References
    ----------
    .. [1] S. Beamer, K. Asanovic, D. Patterson, "The GAP Benchmark Suite",
       arXiv:1508.03619, 2015 (``src/builder.h``: count degrees, prefix sum, fetch-and-add
       scatter).
    """
    return build_csr_pieces([(src_local, dst, weights)], n_local, index_dtype,
                            symmetric=symmetric, skip_loops=skip_loops)


def build_csr_pieces(pieces, n_local, index_dtype, *, offset=0, symmetric=False, skip_loops=False):
    """:func:`build_csr` of the edge list that ``pieces`` make together, without joining them.

    ``pieces`` is a list of ``(src, dst, weights)``, each as :func:`build_csr` takes them
    (weights all None, or none None where a piece has edges), except that sources are
    *global* ids: ``offset`` is subtracted from them here, one piece at a time. Device memory
    besides the pieces is the output, two int64 arrays of ``n_local``, and one piece's local
    sources while it is counted or scattered (none when ``offset`` is 0 and the ids are int32
    or int64): no copy of the whole edge list is made, so an owner builds its CSR in about the
    memory of its edges plus the CSR.
    """
    index_dtype = cupy.dtype(index_dtype)
    weighted = any(w is not None for _, _, w in pieces)
    degrees = cupy.zeros(n_local + 1, dtype=cupy.int64)  # [0, degree of row 0, ...]
    indices_kind = cupy.empty(0, dtype=index_dtype)  # selects the Index instantiation
    flags = (cupy.int32(bool(symmetric)), cupy.int32(bool(skip_loops)))
    count = cuda.function(_SOURCE, "csr_count", indices_kind)
    for src, dst, _ in pieces:
        src, dst = _local(src, offset), _ids(dst)
        if src.size:
            count(cuda.grid(int(src.size)), (cuda.BLOCK,),
                  _endpoints(src, dst) + (cupy.int64(src.size),) + flags + (degrees[1:],))
    indptr = gpu_arrays.cumsum_in_place(degrees)  # [0, d0, d0 + d1, ...]
    nnz = int(indptr[-1])
    indices = cupy.empty(nnz, dtype=index_dtype)
    weight_dtype = _weight_dtype(pieces)
    w_out = cupy.empty(nnz, dtype=weight_dtype) if weighted else None
    if nnz:
        cursor = gpu_arrays.copy(indptr[:-1])
        no_weights = cupy.empty(0, weight_dtype)
        scatter = cuda.weighted_function(_SOURCE, "csr_scatter", indices_kind, no_weights)
        for src, dst, weights in pieces:
            src, dst = _local(src, offset), _ids(dst)
            if not src.size:
                continue
            if weighted and weights is None:
                raise ValueError("a piece of a weighted edge list has no weights")
            w_in = cupy.ascontiguousarray(weights, dtype=weight_dtype) if weighted else no_weights
            scatter(cuda.grid(int(src.size)), (cuda.BLOCK,),
                    _endpoints(src, dst) + (w_in, cupy.int32(weighted), cupy.int64(src.size)) + flags
                    + (cursor, indices, w_out if weighted else no_weights))
        del cursor
    return indptr, indices, w_out


def _weight_dtype(pieces):
    """The CSR's weight dtype: float32 when every piece's weights are float32 (the graph's
    width, :mod:`gpipe.partitioning.weights`), else float64."""
    dtypes = {w.dtype for _, _, w in pieces if w is not None}
    return cupy.dtype(cupy.float32) if dtypes == {cupy.dtype(cupy.float32)} else cupy.dtype(cupy.float64)


def _endpoints(src, dst) -> tuple:
    """The kernels' first arguments: both id arrays and whether each is int64."""
    return (src, cupy.int32(src.dtype.itemsize == 8), dst, cupy.int32(dst.dtype.itemsize == 8))


def _local(src, offset: int):
    """Sources as local ids (``src - offset``) in a dtype the kernels take."""
    src = _ids(src)
    return src - src.dtype.type(offset) if offset else src


def _ids(array):
    """``array`` as a contiguous int32 or int64 CuPy array (other integer dtypes are cast)."""
    array = cupy.ascontiguousarray(array)
    if array.dtype not in _ID_DTYPES:
        array = gpu_arrays.astype(array, cupy.int64)
    return array
