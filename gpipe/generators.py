"""Synthetic edge lists for tests, demos and benchmarks.

Two families, both standard in the BFS/SSSP literature:

* :func:`kronecker_edges`: the Graph500 R-MAT/Kronecker generator; skewed degrees, small
  diameter, many isolated vertices. The workload of the Graph500 BFS and SSSP kernels.
* :func:`grid_edges`: a 3-D grid where every interior vertex has degree 6; uniform degrees
  and a large diameter (``3 * (side - 1)``), the opposite stress to Kronecker graphs.

Both are vectorized: the work is a few whole-array operations, never a Python loop over
edges. Both take ``xp``, the array module to generate with: NumPy (the default) returns a
pandas DataFrame, CuPy generates on the GPU and returns a cuDF DataFrame.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["kronecker_edges", "kronecker_share", "grid_edges", "grid_centre"]

WEIGHT_LOW = 1
WEIGHT_HIGH = 255


def kronecker_edges(scale, edge_factor=16, *, a=0.57, b=0.19, c=0.19, seed=0, weights=False, xp=None,
                    frame=True, id_dtype="int64", shuffle=True):
    """Generate a Graph500 Kronecker (R-MAT) edge list with ``2**scale`` vertex ids.

    Each edge picks its endpoints one bit at a time: at every bit level the adjacency matrix
    is split into four quadrants chosen with probabilities `a`, `b`, `c` and
    ``d = 1 - a - b - c``. The vertex ids are then relabelled by a random permutation (so
    high-degree vertices are not clustered at small ids) and the edges are shuffled.

    Parameters
    ----------
    scale : int
        Base-2 logarithm of the number of vertex ids, ``n = 2**scale``; 0 <= scale <= 62.
    edge_factor : int, optional (default=16)
        Edges per vertex id: the list has ``edge_factor * 2**scale`` rows.
    a, b, c : float, optional (defaults 0.57, 0.19, 0.19, the Graph500 values)
        Quadrant probabilities (top-left, top-right, bottom-left); ``a + b + c < 1``.
    seed : int, optional (default=0)
        Seed of the random generator. The same seed, arguments and array module give the
        same edge list; NumPy and CuPy give different ones.
    weights : bool, optional (default=False)
        Add a ``weight`` column of integer values drawn uniformly from 1..255, stored as
        float64 (the dtype gpipe's SSSP computes in, so nothing is converted later).
    xp : module or str, optional
        Array module to generate with: ``numpy`` (default, returns pandas) or ``cupy``
        (generates on the GPU, returns cuDF). The strings ``"numpy"``/``"cupy"`` also work.
    frame : bool, default True
        False returns the columns as a dict of ``xp`` arrays instead of a frame (no cuDF needed).
    id_dtype : {"int64", "int32"}, default "int64"
        dtype of ``src`` and ``dst``; int32 (for ``scale <= 31``) halves the memory of large graphs.
    shuffle : bool, default True
        Randomly permute the edge order, as Graph500 does. Sorting a permutation of ``m`` keys
        needs several times the edge list's memory: large GPU graphs may skip it (the
        vertex relabelling is random either way).

    Returns
    -------
    pandas.DataFrame or cudf.DataFrame
        Columns ``src`` and ``dst`` (int64, in ``0 .. 2**scale - 1``) and, with `weights`,
        ``weight`` (float64). Self-loops and duplicate edges occur, as in Graph500; vertices
        with no edge at all are common (over a quarter of the ids at scale 16).

    Raises
    ------
    ValueError
        If `scale`, `edge_factor` or the probabilities are out of range.

    Examples
    --------
    >>> edges = kronecker_edges(4, edge_factor=2, weights=True)
    >>> len(edges), list(edges.columns)
    (32, ['src', 'dst', 'weight'])
    >>> int(edges[["src", "dst"]].to_numpy().max()) < 2**4
    True

    Notes
    -----
    Time and memory are ``O(scale * m)`` and ``O(m)`` for ``m = edge_factor * 2**scale`` edges:
    one pass over all edges per bit level, each a few vectorized operations.

    References
    ----------
    .. [1] Graph500 benchmark specification, section "Kernel 0: graph generation".
       https://graph500.org/
    .. [2] D. Chakrabarti, Y. Zhan, C. Faloutsos, "R-MAT: A Recursive Model for Graph
       Mining", SIAM International Conference on Data Mining, 2004.
    """
    xp = _array_module(xp)
    if not 0 <= scale <= 62:
        raise ValueError(f"scale must be between 0 and 62, got {scale}")
    if edge_factor < 1:
        raise ValueError(f"edge_factor must be at least 1, got {edge_factor}")
    if min(a, b, c) < 0 or a + b + c >= 1:
        raise ValueError(f"need a, b, c >= 0 and a + b + c < 1, got a={a}, b={b}, c={c}")

    rng = _Random(xp, seed)
    n = 1 << scale
    m = edge_factor * n
    columns = _rmat_columns(xp, rng, scale, m, a, b, c)
    src, dst = columns["src"], columns["dst"]

    if np.dtype(id_dtype) == np.int32 and scale > 31:
        raise ValueError(f"id_dtype int32 holds scale <= 31 ids, not scale {scale}")
    relabel = rng.permutation(n).astype(id_dtype)
    src, dst = relabel[src], relabel[dst]
    if shuffle:
        order = rng.permutation(m)
        src, dst = src[order], dst[order]
    columns = {"src": src, "dst": dst}
    if weights:
        columns["weight"] = rng.integers(WEIGHT_LOW, WEIGHT_HIGH + 1, m).astype(xp.float64)
    return _frame(xp, columns) if frame else columns


def kronecker_share(scale, share, shares, edge_factor=16, *, a=0.57, b=0.19, c=0.19, seed=0,
                    weights=False, xp=None, frame=True, id_dtype="int64"):
    """Share ``share`` of ``shares`` of a Graph500 Kronecker edge list, generated on its own.

    Every R-MAT edge is drawn independently of the others, so each of ``shares`` workers can
    draw its own ``edge_factor * 2**scale / shares`` edges (the first ``m % shares`` shares one
    more) with a random stream of its own, seeded by ``(seed, share)``, and relabel them with
    the same random permutation of the ids, drawn from ``seed`` on every share. The union of
    the shares is a Kronecker graph of the same scale, distribution and seed, but not the
    edge list :func:`kronecker_edges` gives for that seed (its one stream runs over all
    edges), except with ``shares=1``, which returns exactly that (edges shuffled, as
    Graph500 does; shares of several are not: their edges are independent draws already).

    Parameters are those of :func:`kronecker_edges`, plus ``share`` (``0 <= share < shares``)
    and ``shares``. Memory: the share's edges and the ``2**scale`` permutation.

    >>> parts = [kronecker_share(4, k, 3, edge_factor=2) for k in range(3)]
    >>> [len(p) for p in parts]
    [11, 11, 10]
    >>> kronecker_share(4, 0, 1, edge_factor=2).equals(kronecker_edges(4, edge_factor=2))
    True
    """
    if not 0 <= share < shares:
        raise ValueError(f"need 0 <= share < shares, got share={share}, shares={shares}")
    if shares == 1:
        return kronecker_edges(scale, edge_factor, a=a, b=b, c=c, seed=seed, weights=weights, xp=xp,
                               frame=frame, id_dtype=id_dtype)
    xp = _array_module(xp)
    if not 0 <= scale <= 62:
        raise ValueError(f"scale must be between 0 and 62, got {scale}")
    if np.dtype(id_dtype) == np.int32 and scale > 31:
        raise ValueError(f"id_dtype int32 holds scale <= 31 ids, not scale {scale}")
    n = 1 << scale
    m = edge_factor * n
    rows = m // shares + (1 if share < m % shares else 0)
    own = int(np.random.SeedSequence([seed, share]).generate_state(1, np.uint64)[0] >> 1)
    if min(a, b, c) < 0 or a + b + c >= 1:
        raise ValueError(f"need a, b, c >= 0 and a + b + c < 1, got a={a}, b={b}, c={c}")
    columns = _rmat_columns(xp, _Random(xp, own), scale, rows, a, b, c)
    relabel = _Random(xp, seed).permutation(n).astype(id_dtype)
    columns = {"src": relabel[columns["src"]], "dst": relabel[columns["dst"]]}
    if weights:
        columns["weight"] = integer_weights(rows, own + 1, xp)
    return _frame(xp, columns) if frame else columns


def _rmat_columns(xp, rng, scale, m, a, b, c):
    """``m`` R-MAT edges of ``2**scale`` ids drawn from ``rng``, before any relabelling."""
    # Ids are built bit by bit in the narrowest integer type that holds them (less memory
    # traffic per pass); the relabelling gather returns the ids' dtype.
    bits_dtype = xp.int32 if scale <= 31 else xp.int64
    # Per level: the source bit is 1 (bottom half) with probability c + d = 1 - (a + b);
    # given it, the target bit is 1 with probability d / (c + d) (bottom) or b / (a + b) (top).
    src = xp.zeros(m, dtype=bits_dtype)
    dst = xp.zeros(m, dtype=bits_dtype)
    ab = a + b
    c_norm = c / (1.0 - ab)
    a_norm = a / ab
    for level in range(scale):
        src_bit = rng.random(m) > ab
        draw = rng.random(m)
        dst_bit = xp.where(src_bit, draw > c_norm, draw > a_norm)
        bit = bits_dtype(1 << level)
        src += src_bit * bit
        dst += dst_bit * bit
    return {"src": src, "dst": dst}


def integer_weights(count, seed, xp):
    """``count`` weights drawn uniformly from the integers WEIGHT_LOW..WEIGHT_HIGH, as float64,
    from ``seed``, on the array module ``xp`` (the generators' own draw)."""
    return _Random(xp, seed).integers(WEIGHT_LOW, WEIGHT_HIGH + 1, count).astype(xp.float64)


def grid_edges(side, *, weights=False, seed=0, xp=None, frame=True):
    """Generate the 3-D grid graph of ``side**3`` vertices, each undirected edge once.

    Vertex ``(x, y, z)`` with ``0 <= x, y, z < side`` has id ``x + side * (y + side * z)``
    and is joined to its neighbours at distance one along each axis, so interior vertices have
    degree 6. Each undirected edge appears once, from the smaller id to the larger one: pass
    ``directed=False`` when traversing.

    Parameters
    ----------
    side : int
        Vertices per axis, at least 1.
    weights : bool, optional (default=False)
        Add a ``weight`` column of integers drawn uniformly from 1..255, as float64.
    seed : int, optional (default=0)
        Seed of the weights' random generator (the grid itself is not random).
    xp : module or str, optional
        ``numpy`` (default, returns pandas) or ``cupy`` (returns cuDF).
    frame : bool, default True
        False returns the columns as a dict of ``xp`` arrays instead of a frame.

    Returns
    -------
    pandas.DataFrame or cudf.DataFrame
        Columns ``src`` < ``dst`` (int64) and, with `weights`, ``weight`` (float64);
        ``3 * side**2 * (side - 1)`` rows, x-edges first, then y-edges, then z-edges.

    Raises
    ------
    ValueError
        If `side` is less than 1.

    Examples
    --------
    >>> edges = grid_edges(3)
    >>> len(edges) == 3 * 3**2 * (3 - 1)
    True
    >>> int(((edges.src == grid_centre(3)) | (edges.dst == grid_centre(3))).sum())
    6

    Notes
    -----
    The grid is a classic hard case for level-synchronous BFS: ``3 * (side - 1)`` levels
    from a corner, each frontier small compared with the graph.

    References
    ----------
    .. [1] L. Luo, M. Wong, W. Hwu, "An Effective GPU Implementation of Breadth-First
       Search", Design Automation Conference (DAC), 2010.
    """
    xp = _array_module(xp)
    if side < 1:
        raise ValueError(f"side must be at least 1, got {side}")
    ids = xp.arange(side**3, dtype=xp.int64).reshape(side, side, side)  # ids[z, y, x]
    src = xp.concatenate([ids[:, :, :-1].ravel(), ids[:, :-1, :].ravel(), ids[:-1, :, :].ravel()])
    dst = xp.concatenate([ids[:, :, 1:].ravel(), ids[:, 1:, :].ravel(), ids[1:, :, :].ravel()])
    columns = {"src": src, "dst": dst}
    if weights:
        rng = _Random(xp, seed)
        columns["weight"] = rng.integers(WEIGHT_LOW, WEIGHT_HIGH + 1, len(src)).astype(xp.float64)
    return _frame(xp, columns) if frame else columns


def grid_centre(side):
    """Return the id of the centre vertex of :func:`grid_edges` ``(side)``.

    The centre is ``(side // 2, side // 2, side // 2)``; for even `side` it is the one of the
    middle vertices with the larger coordinates.

    Examples
    --------
    >>> grid_centre(3)
    13
    """
    if side < 1:
        raise ValueError(f"side must be at least 1, got {side}")
    middle = side // 2
    return middle + side * (middle + side * middle)


class _Random:
    """The few random draws the generators need, for NumPy's and CuPy's random APIs alike.

    NumPy uses its recommended ``Generator`` (PCG64); CuPy uses ``RandomState``, whose
    ``random_sample``/``randint``/``permutation`` are the draws its GPU generator provides.
    """

    def __init__(self, xp, seed):
        self._numpy = xp is np
        self._rng = np.random.default_rng(seed) if self._numpy else xp.random.RandomState(seed)

    def random(self, size):
        """Uniform floats in [0, 1), float32: 24 bits are plenty to compare with a probability."""
        if self._numpy:
            return self._rng.random(size, dtype=np.float32)
        return self._rng.random_sample(size, dtype=np.float32)

    def integers(self, low, high, size):
        """Integers in ``low .. high - 1``."""
        if self._numpy:
            return self._rng.integers(low, high, size)
        return self._rng.randint(low, high, size)

    def permutation(self, n):
        return self._rng.permutation(n)


def _array_module(xp):
    if xp is None or xp == "numpy" or xp is np:
        return np
    if isinstance(xp, str):
        if xp != "cupy":
            raise ValueError(f"xp must be numpy or cupy, got {xp!r}")
        import cupy

        return cupy
    if getattr(xp, "__name__", None) != "cupy":
        raise ValueError(f"xp must be numpy or cupy, got {xp!r}")
    return xp


def _frame(xp, columns):
    if xp is np:
        return pd.DataFrame(columns, copy=False)
    import cudf

    return cudf.DataFrame(columns)
