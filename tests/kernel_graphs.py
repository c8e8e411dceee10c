"""Small random graphs as CSR rows, and SciPy's answers, for the kernel tests of both backends.

Shared by tests/test_kernels_cpu.py and tests/test_kernels_gpu.py: edge lists, an owner's CSR
rows, the split of a graph into owners, the graph as scipy sees it, scipy's BFS and SSSP
distances, and the plain check of a parent tree. NumPy and SciPy only (no CuPy), so that the
CPU tests run where there is no GPU.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse import csgraph

INDEX_DTYPES = [np.int32, np.int64]


# ---------------------------------------------------------------------------------------------
# Graphs
# ---------------------------------------------------------------------------------------------


def random_edges(seed, n=300, m=1200, directed=True, dag=False, integer=False):
    """Edge arrays (src, dst, w): repeated pairs with other weights, 10% zero weights, no self-loops.

    Weights are uniform in [0, 10), or with integer=True integer-valued (1..20), which keeps every
    path sum exact, so that distances compare exactly. Undirected graphs are stored both ways, as
    partitions store them. With dag=True every edge goes from a lower to a higher id and a third
    of the weights are negative.
    """
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, m)
    dst = rng.integers(0, n, m)
    again = rng.integers(0, m, m // 5)
    src = np.concatenate([src, src[again]])
    dst = np.concatenate([dst, dst[again]])
    w = rng.integers(1, 21, src.size).astype(np.float64) if integer else rng.uniform(0.0, 10.0, src.size)
    w[rng.random(src.size) < 0.1] = 0.0
    if dag:
        src, dst = np.minimum(src, dst), np.maximum(src, dst)
        w[rng.random(src.size) < 0.33] *= -1.0
    keep = src != dst
    src, dst, w = src[keep], dst[keep], w[keep]
    if not directed:
        src, dst, w = np.concatenate([src, dst]), np.concatenate([dst, src]), np.concatenate([w, w])
    return src.astype(np.int64), dst.astype(np.int64), w


def csr_rows(src, dst, w, lo, hi, index_dtype):
    """CSR of the rows lo..hi-1 (an owner's vertices): indptr int64, global target ids, weights."""
    mine = (src >= lo) & (src < hi)
    rows, cols, wts = src[mine] - lo, dst[mine], w[mine]
    order = np.argsort(rows, kind="stable")
    indptr = np.zeros(hi - lo + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=hi - lo), out=indptr[1:])
    return indptr, cols[order].astype(index_dtype), wts[order].astype(np.float64)


def scipy_graph(src, dst, w, n):
    """The graph as scipy sees it: one entry per (src, dst), the lightest weight, zeros kept as edges."""
    order = np.lexsort((w, dst, src))
    src, dst, w = src[order], dst[order], w[order]
    first = np.ones(src.size, dtype=bool)
    first[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])
    src, dst, w = src[first], dst[first], w[first]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    return sp.csr_matrix((w, dst, indptr), shape=(n, n))


# ---------------------------------------------------------------------------------------------
# Owners: consecutive rows of the graph
# ---------------------------------------------------------------------------------------------


class Owner:
    """One partition: the rows offset..offset+n_local-1 of the graph, as host CSR arrays."""

    def __init__(self, src, dst, w, lo, hi, index_dtype):
        self.offset, self.n_local = lo, hi - lo
        self.indptr, self.indices, self.weights = csr_rows(src, dst, w, lo, hi, index_dtype)


def split(src, dst, w, n, parts, index_dtype, owner=Owner):
    """`parts` owners of ceil(n / parts) consecutive rows each (the last may have fewer).

    owner(src, dst, w, lo, hi, index_dtype) makes each one: the host Owner here, or a test file's own.
    """
    chunk = -(-n // parts)
    return [owner(src, dst, w, lo, min(n, lo + chunk), index_dtype) for lo in range(0, n, chunk)]


def owned_by(owner, targets):
    """Which of the global ids `targets` fall in the owner's rows."""
    return (targets >= owner.offset) & (targets < owner.offset + owner.n_local)


def local_sources(owner, sources):
    """The owner's sources, as sorted unique local ids."""
    mine = np.unique(sources[owned_by(owner, sources)])
    return (mine - owner.offset).astype(np.int64)


# ---------------------------------------------------------------------------------------------
# Checks, written the plain way
# ---------------------------------------------------------------------------------------------


def assert_unique(ids):
    assert ids.dtype == np.int64
    assert np.unique(ids).size == ids.size, "a vertex is listed twice"


def assert_tree(src, dst, w, dist, parent, sources, reached, exact=True):
    """Every parent is an edge with dist[parent] + w == dist[v]; parents form a forest rooted at sources.

    With exact=False, dist[parent] + w need only be close to dist[v] (real weights, summed in
    another order).
    """
    n = dist.size
    has_parent = parent >= 0
    assert not (has_parent & ~reached).any(), "an unreached vertex has a parent"
    roots = reached & ~has_parent
    assert np.isin(np.flatnonzero(roots), sources).all(), "a reached non-source has no parent"
    assert (dist[roots] == 0).all()
    through = dist[src] + w
    fits = (parent[dst] == src) & reached[src] & ((through == dist[dst]) if exact
                                                   else np.isclose(through, dist[dst]))
    explained = np.zeros(n, dtype=bool)
    explained[dst[fits]] = True
    assert explained[has_parent].all(), "a parent without an edge u->v of dist[u] + w == dist[v]"
    top = np.where(has_parent, parent, np.arange(n))  # roots point to themselves
    for _ in range(int(np.log2(max(n, 2))) + 2):  # pointer jumping: the 2**k-th ancestor
        top = top[top]
    assert (parent[top] == -1).all(), "the parent graph has a cycle"


def scipy_bfs_dist(graph, sources):
    d = csgraph.dijkstra(graph, directed=True, indices=sources, unweighted=True, min_only=True)
    return np.where(np.isinf(d), -1, d).astype(np.int32)


def scipy_sssp_dist(graph, sources, negative=False):
    if negative:
        return csgraph.bellman_ford(graph, directed=True, indices=sources).min(axis=0)
    return csgraph.dijkstra(graph, directed=True, indices=sources, min_only=True)


def numpy_rows(src, dst, w, n_local):
    """Each row as a sorted list of (target, weight) pairs: the multiset a CSR row must hold."""
    order = np.lexsort((w if w is not None else np.zeros(src.size), dst, src))
    s, d = src[order], dst[order]
    ww = w[order] if w is not None else np.zeros(src.size)
    bounds = np.searchsorted(s, np.arange(n_local + 1))
    return [list(zip(d[a:b].tolist(), ww[a:b].tolist())) for a, b in zip(bounds[:-1], bounds[1:])]


def host_rows(indptr, indices, weights):
    """Each row of a host CSR as a sorted list of (target, weight) pairs (weight 0 if none)."""
    weights = weights if weights is not None else np.zeros(indices.size)
    return [sorted(zip(indices[a:b].astype(np.int64).tolist(), weights[a:b].tolist()))
            for a, b in zip(indptr[:-1], indptr[1:])]


def build_csr_cases(test):
    """Run ``test`` for every index dtype, input id dtype, with and without weights, directed
    and symmetric: the cases of :func:`assert_build_csr_rows`."""
    for name, values in (("symmetric", [False, True]), ("weighted", [True, False]),
                         ("input_dtype", [np.int32, np.int64]), ("index_dtype", INDEX_DTYPES)):
        test = pytest.mark.parametrize(name, values)(test)
    return test


def assert_build_csr_rows(build_csr, index_dtype, input_dtype, weighted, symmetric):
    """`build_csr(src, dst, w, n, index_dtype, symmetric, skip_loops)` -> host (indptr, indices,
    weights) holds, row by row, the multiset of edges a sort gives: self-loops, repeated pairs
    and empty rows included, with and without skip_loops."""
    rng = np.random.default_rng(3)
    n, m = 500, 4000
    src = rng.integers(0, n, m)
    dst = rng.integers(0, n, m)
    src[:50] = dst[:50]  # self-loops
    src[50:100], dst[50:100] = src[100:150], dst[100:150]  # repeated pairs
    src[-1] = n - 1  # the last row is not empty; rows with no edge occur too
    w = rng.integers(0, 9, m).astype(np.float64) if weighted else None
    for skip_loops in (False, True):
        indptr, indices, weights = build_csr(src.astype(input_dtype), dst.astype(input_dtype), w, n,
                                             index_dtype, symmetric, skip_loops)
        assert indptr.dtype == np.int64 and indptr.shape == (n + 1,) and indptr[0] == 0
        assert indices.dtype == index_dtype and (weights is None) == (not weighted)
        keep = (src != dst) if skip_loops else np.ones(m, dtype=bool)
        s, d, ww = src[keep], dst[keep], (w[keep] if weighted else None)
        if symmetric:
            s, d = np.concatenate([s, d]), np.concatenate([d, s])
            ww = np.concatenate([ww, ww]) if weighted else None
        assert host_rows(indptr, indices, weights) == numpy_rows(s, d, ww, n)
