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


def in_pieces(build_csr_pieces, cuts=(0, 7, 7, 2100)):
    """A ``build_csr``-like call (for :func:`assert_build_csr_rows`) that hands the edges to
    ``build_csr_pieces`` in pieces cut at ``cuts`` (an empty piece among them): the same rows
    must come out as from the whole edge list."""
    def build(src, dst, w, n, index_dtype, symmetric, skip_loops):
        bounds = [*cuts, len(src)]
        pieces = [(src[a:b], dst[a:b], None if w is None else w[a:b])
                  for a, b in zip(bounds[:-1], bounds[1:])]
        return build_csr_pieces(pieces, n, index_dtype, symmetric=symmetric, skip_loops=skip_loops)
    return build


def assert_owner_pieces(build_csr_pieces, asarray, to_host):
    """An owner's pieces of global ids (``offset`` subtracted by the build), in int32 and int64
    pieces mixed: local rows, global targets, the rows a sort gives."""
    rng = np.random.default_rng(4)
    offset, n, m = 1000, 300, 3000
    src = rng.integers(offset, offset + n, m)
    dst = rng.integers(0, 5000, m)
    w = rng.random(m)
    pieces = [(asarray(src[:1000].astype(np.int32)), asarray(dst[:1000].astype(np.int32)), asarray(w[:1000])),
              (asarray(src[1000:1000]), asarray(dst[1000:1000]), asarray(w[1000:1000])),
              (asarray(src[1000:]), asarray(dst[1000:]), asarray(w[1000:]))]
    indptr, indices, weights = (to_host(a) for a in build_csr_pieces(pieces, n, np.int32, offset=offset))
    assert host_rows(indptr, indices, weights) == numpy_rows(src - offset, dst, w, n)


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


def split(src, dst, w, n, parts, index_dtype, owner=Owner, chunk=None):
    """`parts` owners of `chunk` (default ceil(n / parts)) consecutive rows each (the last may
    have fewer; with a larger chunk, fewer owners).

    owner(src, dst, w, lo, hi, index_dtype) makes each one: the host Owner here, or a test file's own.
    """
    chunk = chunk or -(-n // parts)
    return [owner(src, dst, w, lo, min(n, lo + chunk), index_dtype) for lo in range(0, n, chunk)]


def owned_by(owner, targets):
    """Which of the global ids `targets` fall in the owner's rows."""
    return (targets >= owner.offset) & (targets < owner.offset + owner.n_local)


def local_sources(owner, sources):
    """The owner's sources, as sorted unique local ids."""
    mine = np.unique(sources[owned_by(owner, sources)])
    return (mine - owner.offset).astype(np.int64)


def driver_start(xp, owners, sources, unreached, dtype):
    """A test driver's first state, one array per owner: ``(dist, parent, frontier)``, dist of
    ``dtype`` at ``unreached`` but 0 at the owner's sources, parent -1, and the frontier the
    sources (local ids, host arrays); ``xp`` is numpy or cupy, the arrays' module."""
    dist = [xp.full(o.n_local, unreached, dtype=dtype) for o in owners]
    parent = [xp.full(o.n_local, -1, dtype=xp.int64) for o in owners]
    frontier = [local_sources(o, sources) for o in owners]
    for d, f in zip(dist, frontier):
        d[xp.asarray(f)] = 0
    return dist, parent, frontier


def claim_bfs_targets(dist, parent, owner, targets, parents, level):
    """The test drivers' BFS claim on ``owner`` (host arrays ``dist``, ``parent``, written in
    place): of the remote ``targets`` it owns, each unvisited one reaches ``level + 1`` with its
    first candidate's parent. Returns the claimed local ids, sorted."""
    mine = owned_by(owner, targets)
    t, first = np.unique(targets[mine] - owner.offset, return_index=True)
    fresh = dist[t] == -1
    dist[t[fresh]] = level + 1
    parent[t[fresh]] = parents[mine][first][fresh]
    return t[fresh]


def settle_sssp_candidates(dist, parent, owner, targets, cands, parents):
    """The test drivers' SSSP merge on ``owner`` (host arrays ``dist``, ``parent``, written in
    place): the lightest of its remote candidates per target, taken where it improves. Returns
    the improved local ids."""
    mine = owned_by(owner, targets)
    t, c, p = targets[mine] - owner.offset, cands[mine], parents[mine]
    order = np.lexsort((c, t))
    t, c, p = t[order], c[order], p[order]
    t, first = np.unique(t, return_index=True)
    c, p = c[first], p[first]
    better = c < dist[t]
    dist[t[better]] = c[better]
    parent[t[better]] = p[better]
    return t[better]


def check_driven_sssp(drive_sssp, owners_of, src, dst, w, n, sources, expected, exact=True):
    """``drive_sssp(owners, sources, max_rounds)`` over one owner and two (``owners_of(parts)``)
    gives the ``expected`` distances (``exact``, or to rounding) and a shortest-path tree."""
    for parts in (1, 2):
        dist, parent = drive_sssp(owners_of(parts), sources, max_rounds=n)
        if exact:
            np.testing.assert_array_equal(dist, expected)
        else:
            np.testing.assert_allclose(dist, expected)
        assert_tree(src, dst, w, dist, parent, sources, np.isfinite(dist))


def check_driven_sssp_negative(drive_sssp, split, index_dtype, integer=False):
    """A DAG with negative and zero weights (``integer``-valued or not), driven from two sources
    over one owner and two (:func:`check_driven_sssp`): Bellman-Ford's distances and a tree."""
    n = 200
    src, dst, w = random_edges(4, n=n, m=800, dag=True, integer=integer)
    assert (w < 0).any() and (w == 0).any()
    sources = np.array([0, 5])
    expected = scipy_sssp_dist(scipy_graph(src, dst, w, n), sources, negative=True)
    check_driven_sssp(drive_sssp, lambda parts: split(src, dst, w, n, parts, index_dtype),
                      src, dst, w, n, sources, expected, exact=integer)


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


# ---------------------------------------------------------------------------------------------
# The level steps of a BFS over several owners (gpipe/engine/compute/cpu_bfs_owners.py and its CUDA
# twin), checked against a plain NumPy reading of their contract. Each check takes the kernel
# module and two converters, `device` (NumPy -> the backend's arrays) and `host` (back), so
# that tests/test_kernels_cpu.py and tests/test_kernels_gpu.py run the same cases.
# ---------------------------------------------------------------------------------------------

OWNER_CHUNK = 128  # three owners of a 300-vertex graph: 0-127, 128-255, 256-299 (as Layout makes them)


def pack_bits(ids, n_bits, kernels):
    """A bitmap of `n_bits` bits with `ids` set, in the words of `kernels` (BITMAP_BITS, BITMAP_DTYPE)."""
    bits = kernels.BITMAP_BITS
    words = np.zeros(-(-n_bits // bits), dtype=np.uint64)
    ids = np.asarray(ids, dtype=np.int64)
    np.bitwise_or.at(words, ids // bits, np.left_shift(np.uint64(1), (ids % bits).astype(np.uint64)))
    return words.astype(np.uint32) if bits == 32 else words.view(np.int64)


def unpack_bits(words, n_bits):
    """The ids whose bits are set in a bitmap of 32- or 64-bit words (host array)."""
    words = np.asarray(words)
    bits = words.dtype.itemsize * 8
    as_unsigned = words.view(np.uint32 if bits == 32 else np.uint64)
    shifts = np.arange(bits, dtype=as_unsigned.dtype)
    flags = ((as_unsigned[:, None] >> shifts) & as_unsigned.dtype.type(1)).astype(bool).ravel()
    return np.flatnonzero(flags[:n_bits])


def owner_graph(seed, index_dtype, n=300, m=1500):
    """An undirected random graph split into three owners of OWNER_CHUNK ids: (src, dst, owners)."""
    src, dst, w = random_edges(seed, n=n, m=m, directed=False)
    return src, dst, split(src, dst, w, n, 3, index_dtype, chunk=OWNER_CHUNK)


def _edges_of(owner, frontier):
    """(source local id, global target) of every out-edge of the frontier, the plain way."""
    start, end = owner.indptr[frontier], owner.indptr[frontier + 1]
    source = np.repeat(frontier, end - start)
    position = np.concatenate([np.arange(a, b) for a, b in zip(start, end)] or [np.empty(0, np.int64)])
    return source.astype(np.int64), owner.indices[position.astype(np.int64)].astype(np.int64)


def _degree(owner, local):
    return int((owner.indptr[local + 1] - owner.indptr[local]).sum())


def level_counters(kernels, n_owners, frontier_size, frontier_edges, fill=99):
    """Counters as a level finds them: the frontier's length and out-degree sum in NEXT and
    NEXT_EDGES (left there by the previous level's steps), anything elsewhere."""
    counters = np.full(kernels.QUEUES + n_owners, fill, dtype=np.int64)
    counters[kernels.NEXT], counters[kernels.NEXT_EDGES] = frontier_size, frontier_edges
    return counters


def check_owner_top_down(kernels, device, host, index_dtype):
    """Owned targets claimed once; every remote target queued once per traversal, by the owner of
    the target, with a frontier edge as parent; the sent bitmap and the counters."""
    n = 300
    src, dst, owners = owner_graph(4, index_dtype, n=n)
    me, rng = owners[1], np.random.default_rng(3)
    assert me.offset == OWNER_CHUNK
    dist0 = np.where(rng.random(me.n_local) < 0.3, 1, -1).astype(np.int32)
    frontier = rng.choice(np.flatnonzero(dist0 == -1), 15, replace=False).astype(np.int64)
    dist0[frontier] = 2
    already_sent = np.array([5, 6, 270, 299])
    dist, parent = device(dist0.copy()), device(np.full(me.n_local, -1, dtype=np.int64))
    sent = device(pack_bits(already_sent, n, kernels))
    next_frontier = device(np.full(me.n_local, -7, dtype=np.int64))
    queue_targets = device(np.full(n, -7, dtype=index_dtype))
    queue_parents = device(np.full(n, -7, dtype=index_dtype))
    edges = _degree(me, frontier)
    counters = device(level_counters(kernels, 3, frontier.size, edges))  # the rest: zeroed first
    buffer = np.full(me.n_local, -5, dtype=np.int64)  # the frontier: what the last level appended
    buffer[:frontier.size] = frontier

    kernels.bfs_owner_top_down(device(me.indptr), device(me.indices), me.offset, device(buffer), dist,
                               parent, 2, OWNER_CHUNK, sent, next_frontier, queue_targets, queue_parents,
                               counters, frontier_bound=frontier.size)
    got = host(counters)
    assert (got[kernels.FRONTIER], got[kernels.FRONTIER_EDGES]) == (frontier.size, edges)
    u, v = _edges_of(me, frontier)
    local = (v >= me.offset) & (v < me.offset + me.n_local)
    fresh = np.unique(v[local][dist0[v[local] - me.offset] == -1] - me.offset)
    claimed = host(next_frontier)[:got[kernels.NEXT]]
    assert_unique(claimed)
    np.testing.assert_array_equal(np.sort(claimed), fresh)
    assert got[kernels.NEXT_EDGES] == _degree(me, fresh)
    dist1, parent1 = host(dist), host(parent)
    want = dist0.copy()
    want[fresh] = 3
    np.testing.assert_array_equal(dist1, want)
    pairs = set(zip((v[local] - me.offset).tolist(), (me.offset + u[local]).tolist()))
    assert all((x, parent1[x]) in pairs for x in fresh.tolist())
    assert (parent1[np.setdiff1d(np.arange(me.n_local), fresh)] == -1).all()

    remote = np.unique(v[~local])
    queued = np.setdiff1d(remote, already_sent)
    assert queued.size > 5 and np.intersect1d(remote, already_sent).size > 0
    assert got[kernels.QUEUES + 1] == 0
    remote_pairs = set(zip(v[~local].tolist(), (me.offset + u[~local]).tolist()))
    targets, parents = host(queue_targets), host(queue_parents)
    for q in (0, 2):
        start, count = q * OWNER_CHUNK, int(got[kernels.QUEUES + q])
        mine = queued[queued // OWNER_CHUNK == q]
        assert targets.dtype == index_dtype
        np.testing.assert_array_equal(np.sort(targets[start:start + count]), mine)
        assert all(pair in remote_pairs for pair in zip(targets[start:start + count].tolist(),
                                                        parents[start:start + count].tolist()))
    np.testing.assert_array_equal(unpack_bits(host(sent), n), np.union1d(already_sent, queued))

    # Sent once per traversal: a later level (here the whole owner as frontier) queues only
    # the remote targets never sent before.
    everyone = np.flatnonzero(host(dist) >= 0).astype(np.int64)
    counters = device(level_counters(kernels, 3, everyone.size, _degree(me, everyone)))
    kernels.bfs_owner_top_down(device(me.indptr), device(me.indices), me.offset, device(everyone), dist,
                               parent, 3, OWNER_CHUNK, sent, next_frontier, queue_targets, queue_parents,
                               counters)  # no bound: the GPU reads the length on the host
    again = host(counters)
    assert again[kernels.FRONTIER] == everyone.size
    _, v2 = _edges_of(me, everyone)
    later = np.setdiff1d(np.unique(v2[(v2 < me.offset) | (v2 >= me.offset + me.n_local)]),
                         np.union1d(already_sent, queued))
    targets = host(queue_targets)
    assert later.size > 0 and again[kernels.QUEUES + 1] == 0
    for q in (0, 2):
        start, count = q * OWNER_CHUNK, int(again[kernels.QUEUES + q])
        np.testing.assert_array_equal(np.sort(targets[start:start + count]),
                                      later[later // OWNER_CHUNK == q])
    counters = device(level_counters(kernels, 3, 0, 0))
    kernels.bfs_owner_top_down(device(me.indptr), device(me.indices), me.offset, device(buffer), dist,
                               parent, 4, OWNER_CHUNK, sent, next_frontier, queue_targets, queue_parents,
                               counters, frontier_bound=0)
    assert (host(counters) == 0).all()  # an empty frontier still begins a level


def check_owner_claim(kernels, device, host, index_dtype):
    """Candidates from two senders, with repeats inside and across them and some targets already
    visited: each unvisited target is claimed once, with one of its candidates' parents, and
    appended after what next_frontier already held."""
    n = 300
    _, _, owners = owner_graph(5, index_dtype, n=n)
    me, rng = owners[2], np.random.default_rng(4)
    dist0 = np.where(rng.random(me.n_local) < 0.4, 0, -1).astype(np.int32)
    first = rng.integers(0, me.n_local, 30) + me.offset
    second = np.concatenate([first[:10], rng.integers(0, me.n_local, 20) + me.offset])
    buckets = [(first, rng.integers(0, 128, first.size)), (second, rng.integers(128, 256, second.size))]
    dist, parent = device(dist0.copy()), device(np.full(me.n_local, -1, dtype=np.int64))
    next_frontier = device(np.full(me.n_local, -7, dtype=np.int64))
    counters = device(level_counters(kernels, 3, 2, 5, fill=0))  # two entries already there
    for targets, parents in buckets:
        kernels.bfs_owner_claim(device(me.indptr), me.offset, device(targets.astype(index_dtype)),
                                device(parents.astype(index_dtype)), dist, parent, 6, next_frontier,
                                counters)
    got = host(counters)
    targets = np.concatenate([b[0] for b in buckets]) - me.offset
    parents = np.concatenate([b[1] for b in buckets])
    fresh = np.unique(targets[dist0[targets] == -1])
    assert fresh.size > 5 and (dist0[targets] == 0).any()
    claimed = host(next_frontier)[2:got[kernels.NEXT]]
    assert_unique(claimed)
    np.testing.assert_array_equal(np.sort(claimed), fresh)
    assert got[kernels.NEXT_EDGES] == 5 + _degree(me, fresh)
    want = dist0.copy()
    want[fresh] = 7
    np.testing.assert_array_equal(host(dist), want)
    parent1 = host(parent)
    pairs = set(zip(targets.tolist(), parents.tolist()))
    assert all((x, parent1[x]) in pairs for x in fresh.tolist())
    assert (parent1[dist0 == 0] == -1).all()
    kernels.bfs_owner_claim(device(me.indptr), me.offset, device(np.empty(0, dtype=index_dtype)),
                            device(np.empty(0, dtype=index_dtype)), dist, parent, 6, next_frontier, counters)
    np.testing.assert_array_equal(host(counters), got)


def first_frontier_neighbours(owner, in_front, dist0, searching, distance):
    """The plain reading of a bottom-up claim: each vertex in ``searching`` (local ids, a mask)
    with a neighbour in the frontier (``in_front``, global ids) gets ``distance`` and its first
    such neighbour in row order as parent. Returns ``(dist, parent)``; the others keep
    ``dist0`` and parent -1."""
    dist, parent = dist0.copy(), np.full(owner.n_local, -1, dtype=np.int64)
    for v in np.flatnonzero(searching):
        row = owner.indices[owner.indptr[v]:owner.indptr[v + 1]].astype(np.int64)
        hits = row[in_front[row]]
        if hits.size:
            dist[v], parent[v] = distance, hits[0]
    return dist, parent


def check_owner_bottom_up(kernels, device, host, index_dtype):
    """Every unvisited owned vertex with a neighbour in the frontier (of all owners) takes the
    first such neighbour in row order as parent; the next bitmap and the counters."""
    n = 300
    _, _, owners = owner_graph(6, index_dtype, n=n, m=900)
    me, rng = owners[1], np.random.default_rng(5)
    frontier = rng.choice(n, 40, replace=False)
    dist0 = np.where(rng.random(me.n_local) < 0.2, 1, -1).astype(np.int32)
    dist, parent = device(dist0.copy()), device(np.full(me.n_local, -1, dtype=np.int64))
    poisoned = np.full(-(-me.n_local // kernels.BITMAP_BITS), 12345, dtype=kernels.BITMAP_DTYPE)
    next_front = device(poisoned)
    counters = device(np.full(kernels.QUEUES + 3, 99, dtype=np.int64))  # a level zeroes them first
    kernels.bfs_owner_bottom_up(device(me.indptr), device(me.indices), dist, parent, 4,
                                device(pack_bits(frontier, n, kernels)), next_front, counters)
    in_front = np.zeros(n, dtype=bool)
    in_front[frontier] = True
    want_dist, want_parent = first_frontier_neighbours(me, in_front, dist0, dist0 == -1, 5)
    woke = np.flatnonzero(want_dist != dist0)
    assert woke.size > 5
    np.testing.assert_array_equal(host(dist), want_dist)
    np.testing.assert_array_equal(host(parent), want_parent)
    np.testing.assert_array_equal(unpack_bits(host(next_front), me.n_local), woke)
    got = host(counters)
    assert got[kernels.NEXT] == woke.size and got[kernels.NEXT_EDGES] == _degree(me, woke)
    assert (got[kernels.QUEUES:] == 0).all() and got[kernels.FRONTIER] == 0


def _owner_level_start(index_dtype, seed, n=300):
    """A level on the second of three owners of a random ``n``-vertex graph: ``(owners, me, rng,
    frontier, visited_ids, queue)``, the frontier 12 of its vertices (local ids), the visited
    ids the frontier's and 60 random others (global), and the queue the frontier then -5s."""
    _, _, owners = owner_graph(7, index_dtype, n=n, m=900)
    me, rng = owners[1], np.random.default_rng(seed)
    frontier = rng.choice(me.n_local, 12, replace=False).astype(np.int64)
    visited_ids = np.union1d(frontier + me.offset, rng.choice(n, 60, replace=False))
    queue = np.full(me.n_local, -5, dtype=np.int64)
    queue[:frontier.size] = frontier
    return owners, me, rng, frontier, visited_ids, queue


def check_owner_mark_and_resolve(kernels, device, host, index_dtype):
    """A fixed-size level (gpipe/engine/owners/bfs_levels.py), checked the plain way: the mark
    sets the bit of every unvisited target of the frontier (owned or not, each once), and the
    resolve claims exactly the unvisited owned vertices that some owner marked (or, bottom-up,
    every unvisited one with a frontier neighbour), each taking its first frontier neighbour in
    row order as parent, appending them to the queue and adding to the counters."""
    n, n_owners = 300, 3
    owners, me, rng, frontier, visited_ids, queue = _owner_level_start(index_dtype, 11)
    words = OWNER_CHUNK // kernels.BITMAP_BITS
    # The level's start: visited takes in the frontier, the marks are cleared, counters zeroed.
    visited = device(pack_bits(np.setdiff1d(visited_ids, front_ids := frontier + me.offset),
                               n_owners * OWNER_CHUNK, kernels))
    marks = device(pack_bits(rng.choice(n, 50, replace=False), n_owners * OWNER_CHUNK, kernels))
    counters = device(np.full(5, 9, dtype=np.int64))
    kernels.bfs_owner_level_begin(device(pack_bits(front_ids, n_owners * OWNER_CHUNK, kernels)),
                                  visited, marks, counters)
    np.testing.assert_array_equal(unpack_bits(host(visited), n_owners * OWNER_CHUNK), visited_ids)
    assert unpack_bits(host(marks), n_owners * OWNER_CHUNK).size == 0
    assert list(host(counters)) == [0, 0, 0, 0, 9]
    counters = device(level_counters(kernels, 0, frontier.size, _degree(me, frontier))[:4])
    kernels.bfs_owner_level_begin(device(pack_bits([], n_owners * OWNER_CHUNK, kernels)), visited,
                                  None, None)  # a top-down level's: its mark zeroes the counters
    kernels.bfs_owner_mark(device(me.indptr), device(me.indices), device(queue), frontier.size,
                           _degree(me, frontier), visited, marks, counters)
    assert (host(counters)[kernels.NEXT:] == 0).all()
    _, targets = _edges_of(me, frontier)
    want_marks = np.setdiff1d(targets, visited_ids)
    assert want_marks.size > 10 and (want_marks // OWNER_CHUNK != 1).any()  # remote ones too
    np.testing.assert_array_equal(unpack_bits(host(marks), n_owners * OWNER_CHUNK), want_marks)

    # The resolve of this owner: its own marks, a peer's marks of its vertices, its unvisited.
    front = frontier + me.offset
    peer_marked = rng.choice(me.n_local, 30, replace=False) + me.offset
    received = np.zeros(n_owners * OWNER_CHUNK // kernels.BITMAP_BITS, dtype=kernels.BITMAP_DTYPE)
    received[0:words] = pack_bits(peer_marked - me.offset, OWNER_CHUNK, kernels)
    received[words:2 * words] = pack_bits(np.arange(OWNER_CHUNK), OWNER_CHUNK, kernels)  # own slot: unread
    own = host(marks)[words:2 * words]
    in_front = np.zeros(n, dtype=bool)
    in_front[front] = True
    dist0 = np.full(me.n_local, -1, dtype=np.int32)
    dist0[np.isin(np.arange(me.n_local) + me.offset, visited_ids)] = 0
    for masked in (True, False):
        dist, parent = device(dist0.copy()), device(np.full(me.n_local, -1, dtype=np.int64))
        next_front = device(np.full(words, 777, dtype=kernels.BITMAP_DTYPE))
        out_queue = device(np.full(me.n_local, -3, dtype=np.int64))
        counters = device(np.array([5, 6, 0, 0], dtype=np.int64))
        kernels.bfs_owner_resolve(device(me.indptr), device(me.indices), 2,
                                  device(pack_bits(front, n_owners * OWNER_CHUNK, kernels)),
                                  device(own) if masked else None, device(received), 1, dist, parent,
                                  next_front, out_queue, counters)
        wanted = np.zeros(me.n_local, dtype=bool)
        if masked:
            wanted[unpack_bits(own, OWNER_CHUNK)[unpack_bits(own, OWNER_CHUNK) < me.n_local]] = True
            wanted[peer_marked - me.offset] = True
        else:
            wanted[:] = True
        want_dist, want_parent = first_frontier_neighbours(me, in_front, dist0, wanted & (dist0 == -1), 3)
        woke = np.flatnonzero(want_dist != dist0)
        assert woke.size > 3
        np.testing.assert_array_equal(host(dist), want_dist)
        np.testing.assert_array_equal(host(parent), want_parent)
        np.testing.assert_array_equal(unpack_bits(host(next_front), OWNER_CHUNK), woke)
        got = host(counters)
        assert got[kernels.NEXT] == woke.size and got[kernels.NEXT_EDGES] == _degree(me, woke)
        assert list(got[:2]) == [5, 6]  # untouched
        np.testing.assert_array_equal(np.sort(host(out_queue)[:woke.size]), woke)
    # Every vertex the top-down marks reached is claimed: each mark came from a frontier edge.
    mine = want_marks[(want_marks >= me.offset) & (want_marks < me.offset + me.n_local)]
    assert mine.size and not np.isin(mine, front).any()


def check_owner_pairs(kernels, device, host, index_dtype):
    """A top-down level of pairs (gpipe/engine/owners/bfs_levels.py), checked the plain way:
    every out-edge of the frontier in its slot, row by row (target -1 where visited, padding
    (-1, -1)); then the claim of every owner's gathered pairs takes exactly the unvisited
    targets this owner holds, each with the parent of one of its pairs, and `visited` takes in
    every pair's target and parent."""
    n, n_owners = 300, 3
    owners, me, rng, frontier, visited_ids, queue = _owner_level_start(index_dtype, 5)
    words = OWNER_CHUNK // kernels.BITMAP_BITS
    sources, targets = _edges_of(me, frontier)
    slots = targets.size + 5
    pairs = device(np.full(2 * slots, 77, dtype=index_dtype))
    next_front = device(np.full(words, 7, dtype=kernels.BITMAP_DTYPE))
    counters = device(level_counters(kernels, 0, frontier.size, targets.size)[:4])
    visited = device(pack_bits(visited_ids, n_owners * OWNER_CHUNK, kernels))
    kernels.bfs_owner_pairs(device(me.indptr), device(me.indices), me.offset, device(queue),
                            frontier.size, targets.size, visited, pairs, next_front, counters)
    want = np.full((slots, 2), -1, dtype=np.int64)
    want[:targets.size, 0] = np.where(np.isin(targets, visited_ids), -1, targets)
    want[:targets.size, 1] = sources + me.offset
    assert (want[:, 0] >= 0).sum() > 10 and (want[:targets.size, 0] == -1).any()
    np.testing.assert_array_equal(host(pairs).reshape(-1, 2), want)
    assert (host(counters) == 0).all() and unpack_bits(host(next_front), OWNER_CHUNK).size == 0

    # Every owner's slot gathered: a peer's pairs (some into this owner's range, repeated
    # targets), this owner's, and a slot of padding.
    peer = np.full((slots, 2), -1, dtype=np.int64)
    peer[:40, 0] = rng.choice(np.arange(me.offset - 20, me.offset + me.n_local + 20), 40)
    peer[:40, 1] = rng.choice(n, 40)
    peer[40:45] = peer[:5]  # the same pairs again
    gathered = np.concatenate([peer, want, np.full((slots, 2), -1, dtype=np.int64)])
    dist0 = np.where(np.isin(np.arange(me.n_local) + me.offset, visited_ids), 0, -1).astype(np.int32)
    dist, parent = device(dist0.copy()), device(np.full(me.n_local, -1, dtype=np.int64))
    out_queue = device(np.full(me.n_local, -3, dtype=np.int64))
    kernels.bfs_owner_claim_pairs(device(me.indptr), device(gathered.astype(index_dtype).ravel()),
                                  me.offset, 4, visited, dist, parent, next_front, out_queue, counters)
    local = gathered[:, 0] - me.offset
    mine = (gathered[:, 0] >= 0) & (local >= 0) & (local < me.n_local)
    woke = np.unique(local[mine][dist0[local[mine]] == -1])
    assert woke.size > 10
    want_dist = dist0.copy()
    want_dist[woke] = 5
    np.testing.assert_array_equal(host(dist), want_dist)
    got_parent = host(parent)
    offered = {(int(v), int(u)) for v, u in zip(local[mine], gathered[mine, 1])}
    assert all((int(v), int(got_parent[v])) in offered for v in woke)
    assert (np.delete(got_parent, woke) == -1).all()
    np.testing.assert_array_equal(unpack_bits(host(next_front), OWNER_CHUNK), woke)
    got = host(counters)
    assert got[kernels.NEXT] == woke.size and got[kernels.NEXT_EDGES] == _degree(me, woke)
    np.testing.assert_array_equal(np.sort(host(out_queue)[:woke.size]), woke)
    reached = np.concatenate([visited_ids, gathered[gathered[:, 0] >= 0, 0], gathered[gathered[:, 1] >= 0, 1]])
    np.testing.assert_array_equal(unpack_bits(host(visited), n_owners * OWNER_CHUNK), np.unique(reached))


# The level steps of a BFS over several owners, each a check(kernels, device, host, index_dtype):
# tests/test_kernels_cpu.py and tests/test_kernels_gpu.py run every one on their kernels.
OWNER_LEVEL_CHECKS = [check_owner_top_down, check_owner_claim, check_owner_bottom_up,
                      check_owner_mark_and_resolve, check_owner_pairs]


def check_frontier_bitmap_round_trip(kernels, device, host):
    """frontier_to_bitmap clears the words it is given; bitmap_to_frontier reads the ids back."""
    n_local = 200
    ids = np.array([0, 1, 31, 32, 63, 64, 150, 199], dtype=np.int64)
    bitmap = device(pack_bits([5, 77], n_local, kernels))
    kernels.frontier_to_bitmap(device(ids), bitmap)
    np.testing.assert_array_equal(unpack_bits(host(bitmap), n_local), ids)
    out = device(np.full(n_local, -7, dtype=np.int64))
    counters = device(level_counters(kernels, 2, 99, 12, fill=7))
    kernels.bitmap_to_frontier(bitmap, out, counters)
    got = host(counters)
    np.testing.assert_array_equal(np.sort(host(out)[:got[kernels.NEXT]]), ids)
    assert got[kernels.NEXT_EDGES] == 12 and got[kernels.QUEUES] == 7  # the rest untouched
    kernels.frontier_to_bitmap(device(np.empty(0, dtype=np.int64)), bitmap)
    assert unpack_bits(host(bitmap), n_local).size == 0
    kernels.bitmap_to_frontier(bitmap, out, counters)
    assert host(counters)[kernels.NEXT] == 0


# SSSP over several owners with the owner kernels (sssp_owner_*), either backend
# ---------------------------------------------------------------------------------------------

FIRST_THRESHOLD = float(np.nextafter(0.0, 1.0))  # as gpipe.engine.owners.sssp: the first window is distance 0
# (local bucket width, window width): narrow and wide, equal, one that jumps, and Bellman-Ford-like.
OWNER_WIDTHS = [(1.0, 3.0), (0.5, 20.0), (2.0, 1e9), (np.inf, np.inf)]


def drive_owner_sssp(kernels, xp, owners, n, sources, negative, widths=(1.0, 3.0), max_steps=10_000,
                     bound=np.inf):
    """A whole multi-owner SSSP through `kernels`' sssp_owner_* functions, with the loop of
    gpipe.engine.owners.sssp.sssp_owner_arrays (no messages: every bucket handed over in this process)
    and fixed widths. `owners` hold the CSR rows as `xp` arrays; `bound` is the owner states'
    cutoff (max_distance). Returns host (dist, parent, steps).

    Checks on the way what every step promises: what a peer gets has one row per target, only
    its own targets, parents of the sender, and no candidate that is not below what the same
    sender sent before for that target."""
    from gpipe.engine.compute import owner_state

    parts = len(owners)
    chunk = -(-n // parts)
    threshold = np.inf if negative else FIRST_THRESHOLD
    states = [owner_state.new_state(xp, n, o.offset, o.n_local, chunk, parts,
                                    local_sources(o, sources), threshold, bound=bound)
              for o in owners]
    sent_before = np.full((parts, n), np.inf)  # per sender: what it sent for each target
    step = 0
    while True:
        step += 1
        assert step <= max_steps, "no convergence"
        outgoing, summaries = [], []
        for sender, (o, state) in enumerate(zip(owners, states)):
            kernels.sssp_owner_relax(o.indptr, o.indices, o.weights, state, threshold,
                                     1 if negative else -1)
            counts = kernels.sssp_owner_counts(state)
            buckets = kernels.sssp_owner_pack(state, counts.sent)
            assert buckets[sender] is None
            for q, bucket in enumerate(buckets):
                if bucket is None:
                    continue
                t, d, p = (_host(a) for a in bucket)
                assert t.dtype == np.int64 and d.dtype == np.float64 and p.dtype == np.int64
                assert np.unique(t).size == t.size, "a target sent twice in one step"
                assert ((t // chunk) == q).all(), "a target sent to the wrong owner"
                assert (d < sent_before[sender, t]).all(), "a candidate no better than one sent before"
                assert ((p >= o.offset) & (p < o.offset + o.n_local)).all()
                sent_before[sender, t] = d
            outgoing.append(buckets)
            summaries.append(counts)
        for q, state in enumerate(states):
            kernels.sssp_owner_merge(state, [b[q] for b in outgoing if b[q] is not None], threshold)
        if sum(c.pending for c in summaries) == 0:
            break
        if negative:
            continue
        for state in states:
            state.local_delta, state.window = widths
        sent_min = min(c.sent_min for c in summaries)
        if sent_min < threshold:
            continue
        low = min(sent_min, min(c.far_min for c in summaries))
        raised = max(low + widths[1], float(np.nextafter(low, np.inf)))
        for state in states:
            kernels.sssp_owner_advance(state, threshold, raised)
        threshold = raised
    dist = np.concatenate([_host(s.dist) for s in states])
    parent = np.concatenate([_host(s.parent) for s in states])
    return dist, parent, step


def _host(array):
    return array.get() if hasattr(array, "get") else np.asarray(array)


def _owner_state(xp, owner, n, parts, sources, threshold):
    from gpipe.engine.compute import owner_state

    return owner_state.new_state(xp, n, owner.offset, owner.n_local, -(-n // parts), parts,
                                 np.asarray(sources, dtype=np.int64), threshold)


def _bucket(xp, targets, dists, parents):
    return (xp.asarray(np.asarray(targets, dtype=np.int64)), xp.asarray(np.asarray(dists, dtype=np.float64)),
            xp.asarray(np.asarray(parents, dtype=np.int64)))


def _rows(bucket):
    """A packed bucket as {target: (distance, parent)} on the host."""
    t, d, p = (_host(a) for a in bucket)
    return {int(a): (float(b), int(c)) for a, b, c in zip(t, d, p)}


def check_owner_pruning(kernels, xp, owner_class):
    """Remote candidates are pruned against the least distance ever sent for their target
    (`sent_best`): one row per target per step, the lightest, with a parent whose edge gives it;
    then only what beats what was sent goes out again."""
    #   owner 0 holds 0..3, owner 1 holds 4..7
    #   0->4 (5), 0->1 (1), 0->2 (1), 1->4 (3), 1->5 (2), 2->4 (7), 2->5 (2)
    src = np.array([0, 0, 0, 1, 1, 2, 2])
    dst = np.array([4, 1, 2, 4, 5, 4, 5])
    w = np.array([5.0, 1.0, 1.0, 3.0, 2.0, 7.0, 2.0])
    n = 8
    owner, _ = split(src, dst, w, n, 2, np.int32, owner=owner_class)
    state = _owner_state(xp, owner, n, 2, [0], np.inf)
    kernels.sssp_owner_relax(owner.indptr, owner.indices, owner.weights, state, np.inf, -1)
    counts = kernels.sssp_owner_counts(state)
    assert counts.sent == [0, 2] and counts.sent_min == 3.0 and counts.near == 0
    first = kernels.sssp_owner_pack(state, counts.sent)
    assert first[0] is None
    rows = _rows(first[1])
    assert rows[4] == (4.0, 1)  # 0->4 at 5 was beaten by 0->1->4 at 4 in the same call
    assert rows[5][0] == 3.0 and rows[5][1] in (1, 2)  # a tie: either edge gives 3
    after = kernels.sssp_owner_counts(state)
    assert after.sent == [0, 0] and after.sent_min == np.inf and after.relaxed == 0
    assert (_host(state.queued) == 0).all()
    # 2 gets closer (0.5, from a peer): 2->4 at 7.5 cannot beat the 4 sent, 2->5 at 2.5 can.
    kernels.sssp_owner_merge(state, [_bucket(xp, [2], [0.5], [7])], np.inf)
    assert _host(state.dist)[2] == 0.5 and _host(state.parent)[2] == 7
    kernels.sssp_owner_relax(owner.indptr, owner.indices, owner.weights, state, np.inf, -1)
    counts = kernels.sssp_owner_counts(state)
    assert counts.sent == [0, 1] and counts.sent_min == 2.5
    assert _rows(kernels.sssp_owner_pack(state, counts.sent)[1]) == {5: (2.5, 2)}
    np.testing.assert_array_equal(_host(state.dist), [0.0, 1.0, 0.5, np.inf])
    np.testing.assert_array_equal(_host(state.parent), [-1, 0, 7, -1])


def check_owner_merge(kernels, xp, owner_class):
    """Arriving candidates: the least per target wins, with its parent; an equal distance moves
    nothing; each improved vertex is listed once, whatever the repeats across senders."""
    n = 12  # three owners of 4: this is owner 1 (4..7)
    src, dst, w = np.array([4, 5]), np.array([5, 6]), np.array([1.0, 1.0])
    _, owner, _ = split(src, dst, w, n, 3, np.int64, owner=owner_class)
    state = _owner_state(xp, owner, n, 3, [], np.inf)
    kernels.sssp_owner_relax(owner.indptr, owner.indices, owner.weights, state, np.inf, -1)  # nothing yet
    state.dist[1] = 2.0
    state.parent[1] = 0
    from_0 = _bucket(xp, [4, 5, 6], [3.0, 2.0, 9.0], [0, 1, 2])
    from_2 = _bucket(xp, [4, 6, 7, 5], [1.0, 9.0, 5.0, 3.0], [8, 9, 10, 11])
    kernels.sssp_owner_merge(state, [from_0, from_2], np.inf)
    np.testing.assert_array_equal(_host(state.dist), [1.0, 2.0, 9.0, 5.0])
    parent = _host(state.parent)
    assert parent[0] == 8 and parent[1] == 0 and parent[2] in (2, 9) and parent[3] == 10
    counts = kernels.sssp_owner_counts(state)
    assert counts.far == 0 and counts.sent == [0, 0, 0]
    if state.ring is None:  # the near queue: each improved vertex once
        assert counts.near == 3
        assert sorted(_host(state.near[state.near_fill])[:3].tolist()) == [0, 2, 3]
    else:  # the CPU's bucket ring appends at every improvement (4 went 3, then 1)
        assert counts.near == 4 and sorted(set(ring_vertices(state.ring))) == [0, 2, 3]
    kernels.sssp_owner_merge(state, [from_0, from_2], np.inf)  # the same again: nothing moves
    assert kernels.sssp_owner_counts(state).near == counts.near
    np.testing.assert_array_equal(_host(state.parent), parent)


def ring_vertices(ring):
    """The vertex of every entry of a CPU bucket ring (gpipe/engine/compute/cpu_sssp_ring.py)."""
    found = []
    for e in ring.head.tolist():
        while e >= 0:
            found.append(int(ring.vertex[e]))
            e = int(ring.next[e])
    return found


def check_owner_far_pile(kernels, xp, owner_class):
    """Vertices at or beyond the window's end wait on the far pile; raising the window moves
    those below the new end back to work, drops those that came below the old end meanwhile
    (relaxed already), and keeps the rest with their minimum."""
    n = 8
    src, dst, w = np.array([0, 1]), np.array([1, 2]), np.array([1.0, 1.0])
    owner, _ = split(src, dst, w, n, 2, np.int32, owner=owner_class)
    state = _owner_state(xp, owner, n, 2, [], 2.0)  # window [.., 2): everything local is near
    state.local_delta, state.window = 1.0, 4.0
    arriving = _bucket(xp, [0, 1, 2, 3], [1.0, 3.0, 5.0, 9.0], [4, 5, 6, 7])
    kernels.sssp_owner_merge(state, [arriving], 2.0)
    counts = kernels.sssp_owner_counts(state)
    assert counts.near == 1 and counts.far == 3 and counts.far_min == 3.0
    kernels.sssp_owner_relax(owner.indptr, owner.indices, owner.weights, state, 2.0, -1)
    np.testing.assert_array_equal(_host(state.dist), [1.0, 2.0, 5.0, 9.0])  # 0->1 lowered 1 to 2
    assert _host(state.parent)[1] == 0
    counts = kernels.sssp_owner_counts(state)
    assert counts.near == 0 and counts.far == 3 and counts.far_min == 2.0  # 1 waits at 2 now
    state.dist[2] = 1.5  # as if lowered and relaxed in this window: stale on the pile
    kernels.sssp_owner_advance(state, 2.0, 6.0)
    counts = kernels.sssp_owner_counts(state)
    assert counts.far == 1 and counts.far_min == 9.0  # only 3 (at 9) is left
    assert counts.near + counts.mid == 1  # 1 (at 2) is back to work, 2 (at 1.5) dropped
    assert _host(state.far_mark).tolist() == [0, 0, 0, 1]
    state.dist[2] = 5.0
    kernels.sssp_owner_relax(owner.indptr, owner.indices, owner.weights, state, 6.0, -1)
    np.testing.assert_array_equal(_host(state.dist), [1.0, 2.0, 3.0, 9.0])  # 1 relaxed at 2: 2 at 3
    np.testing.assert_array_equal(_host(state.parent), [4, 0, 1, 7])


# ---------------------------------------------------------------------------------------------
# Batch kernels (bfs_batch, bfs_batch_parents, sssp_batch): one check per case, for either
# backend. `kernels` is gpipe.engine.compute.cpu or .gpu; `device(a)` puts a host array where the
# kernels want it and `host(a)` brings a result back.
# ---------------------------------------------------------------------------------------------


def _batch_graph(seed, directed, index_dtype, n=300, m=1200, dag=False, integer=True):
    src, dst, w = random_edges(seed, n=n, m=m, directed=directed, dag=dag, integer=integer)
    indptr, indices, weights = csr_rows(src, dst, w, 0, n, index_dtype)
    return src, dst, w, indptr, indices, weights, scipy_graph(src, dst, w, n)


def _batch_sources(seed, n, k):
    return np.random.default_rng(seed + 7).choice(n, size=k, replace=False).astype(np.int64)


def check_bfs_batch(kernels, device, host, index_dtype, directed, k, depth_limit):
    """bfs_batch's table row i == scipy's BFS from sources[i]; parents valid per source."""
    n = 300
    src, dst, w, indptr, indices, _, graph = _batch_graph(k + 3, directed, index_dtype, n=n)
    sources = _batch_sources(k, n, k)
    width = kernels.BFS_BATCH_WIDTH
    tables = []
    for lo in range(0, k, width):
        batch = sources[lo:lo + width]
        dist = kernels.bfs_batch(device(indptr), device(indices), device(batch), depth_limit,
                                 symmetric=not directed)
        parent = kernels.bfs_batch_parents(device(indptr), device(indices), dist, device(batch),
                                           symmetric=not directed)
        tables.append((batch, host(dist), host(parent)))
    ones = np.ones(src.size)
    for batch, dist, parent in tables:
        assert dist.shape == (batch.size, n) and dist.dtype == np.int32
        assert parent.shape == (batch.size, n) and parent.dtype == np.int64
        for i, s in enumerate(batch):
            expected = scipy_bfs_dist(graph, [s])
            if depth_limit >= 0:
                expected = np.where(expected > depth_limit, -1, expected)
            np.testing.assert_array_equal(dist[i], expected)
            reached = dist[i] >= 0
            assert_tree(src, dst, ones, dist[i].astype(np.float64), parent[i], [s], reached)


def check_sssp_batch(kernels, device, host, index_dtype, directed, k, max_distance=None,
                     weight_dtype=np.float64):
    """sssp_batch row i == scipy's Dijkstra from sources[i] (within max_distance); trees valid.
    ``weight_dtype`` float32: the weights (integers, exact in float32) stored as float32."""
    n = 300
    src, dst, w, indptr, indices, weights, graph = _batch_graph(k + 11, directed, index_dtype, n=n)
    weights = weights.astype(weight_dtype)
    sources = _batch_sources(k, n, k)
    dist, parent = kernels.sssp_batch(device(indptr), device(indices), device(weights), device(sources),
                                      symmetric=not directed, max_distance=max_distance)
    dist, parent = host(dist), host(parent)
    assert dist.shape == (k, n) and parent.shape == (k, n)
    for i, s in enumerate(sources):
        expected = csgraph.dijkstra(graph, directed=True, indices=[s])[0]
        if max_distance is not None:
            expected = np.where(expected > max_distance, np.inf, expected)
        np.testing.assert_array_equal(dist[i], expected)
        assert_tree(src, dst, w, dist[i], parent[i], [s], np.isfinite(dist[i]))


def check_sssp_batch_negative(kernels, device, host, index_dtype, weight_dtype=np.float64):
    """Bellman-Ford per source on a DAG with negative weights: == scipy's Bellman-Ford (weights
    stored as ``weight_dtype``)."""
    n = 300
    src, dst, w, indptr, indices, weights, graph = _batch_graph(5, True, index_dtype, n=n, dag=True)
    weights = weights.astype(weight_dtype)
    sources = _batch_sources(5, n, 40)
    dist, parent = kernels.sssp_batch(device(indptr), device(indices), device(weights), device(sources),
                                      symmetric=False, negative_weights=True)
    dist, parent = host(dist), host(parent)
    for i, s in enumerate(sources):
        expected = csgraph.bellman_ford(graph, directed=True, indices=[s])[0]
        np.testing.assert_array_equal(dist[i], expected)
        assert_tree(src, dst, w, dist[i], parent[i], [s], np.isfinite(dist[i]))


def check_sssp_batch_negative_cycle(kernels, device, index_dtype):
    """A negative cycle reachable from one source of the batch only: NegativeCycleError whose
    source_index names that source."""
    from gpipe.errors import NegativeCycleError

    # 0 -> 1 -> 2 -> 0 costs -1 around; 3 -> 4 -> 5 is apart; the cycle's entry 6 -> 0.
    src = np.array([0, 1, 2, 3, 4, 6], dtype=np.int64)
    dst = np.array([1, 2, 0, 4, 5, 0], dtype=np.int64)
    w = np.array([1.0, 1.0, -3.0, 2.0, 2.0, 1.0])
    indptr, indices, weights = csr_rows(src, dst, w, 0, 7, index_dtype)
    sources = np.array([3, 4, 6, 5], dtype=np.int64)
    with pytest.raises(NegativeCycleError) as raised:
        kernels.sssp_batch(device(indptr), device(indices), device(weights), device(sources),
                           symmetric=False, negative_weights=True)
    assert raised.value.source_index == 2

# max_distance as Dijkstra's cutoff with negative weights (issue 23): every kernel that relaxes
# drops a candidate above it; the reference is a plain Bellman-Ford with the same rule.
# ---------------------------------------------------------------------------------------------

NEGATIVE_BOUNDS = (0.0, 5.0, 15.0, np.inf)


def bounded_bellman_ford(src, dst, w, n, sources, bound):
    """Distances from `sources` (all at 0) by Bellman-Ford passes over every edge in which a
    candidate above `bound` is never accepted; None if they still fall after n + 1 passes (a
    negative cycle that the bounded search reaches)."""
    dist = np.full(n, np.inf)
    dist[np.asarray(sources, dtype=np.int64)] = 0.0
    for _ in range(n + 1):
        cand = dist[src] + w
        ok = np.isfinite(cand) & (cand <= bound)
        new = dist.copy()
        np.minimum.at(new, dst[ok], cand[ok])
        if (new == dist).all():
            return dist
        dist = new
    return None


def _cut_differs(src, dst, w, n, sources, bound, bounded):
    """Whether cutting the unbounded distances at `bound` gives other distances (the case the
    old cut got wrong: a short path that climbs above the cutoff on the way)."""
    full = bounded_bellman_ford(src, dst, w, n, sources, np.inf)
    return not np.array_equal(np.where(full > bound, np.inf, full), bounded)


def check_sssp_relax_bound(kernels, device, host, index_dtype):
    """Frontier Bellman-Ford rounds of sssp_relax with `bound` (as gpipe.engine.traverse.bellman_ford)
    == the bounded reference; the parents form a tree of reached vertices."""
    n = 200
    src, dst, w = random_edges(21, n=n, m=800, dag=True, integer=True)
    indptr, indices, weights = (device(a) for a in csr_rows(src, dst, w, 0, n, index_dtype))
    differs = False
    for sources in (np.array([0]), np.array([3, 40])):
        for bound in NEGATIVE_BOUNDS:
            start = np.full(n, np.inf)
            start[sources] = 0.0
            dist, parent = device(start), device(np.full(n, -1, dtype=np.int64))
            frontier = device(sources.astype(np.int64))
            rounds = 0
            while int(frontier.size):
                rounds += 1
                assert rounds <= n, "no convergence"
                frontier, _, _, _ = kernels.sssp_relax(indptr, indices, weights, 0, frontier,
                                                       dist[frontier], dist, parent, False, bound)
            dist, parent = host(dist), host(parent)
            want = bounded_bellman_ford(src, dst, w, n, sources, bound)
            np.testing.assert_array_equal(dist, want, err_msg=f"bound {bound}")
            assert_tree(src, dst, w, dist, parent, sources, np.isfinite(dist))
            differs |= _cut_differs(src, dst, w, n, sources, bound, want)
    assert differs, "degenerate graph: the cut after the search would have been right"


def check_sssp_relax_bound_remote(kernels, device, host):
    """Local and remote candidates above the bound are dropped."""
    src, dst, w = np.array([0, 0, 0, 0]), np.array([1, 2, 5, 6]), np.array([1.0, 3.0, 2.0, 7.0])
    indptr, indices, weights = (device(a) for a in csr_rows(src, dst, w, 0, 4, np.int64))
    dist = device(np.array([0.0, np.inf, np.inf, np.inf]))
    parent = device(np.full(4, -1, dtype=np.int64))
    out = kernels.sssp_relax(indptr, indices, weights, 0, device(np.array([0], dtype=np.int64)),
                             device(np.array([0.0])), dist, parent, True, 2.0)
    improved, targets, cands, parents = (host(a) for a in out)
    assert improved.tolist() == [1]
    assert targets.tolist() == [5] and cands.tolist() == [2.0] and parents.tolist() == [0]
    np.testing.assert_array_equal(host(dist), [0.0, 1.0, np.inf, np.inf])


def check_sssp_batch_negative_max_distance(kernels, device, host, index_dtype):
    """sssp_batch with negative weights and max_distance == the bounded reference per source;
    trees of reached vertices."""
    n = 300
    src, dst, w, indptr, indices, weights, _ = _batch_graph(13, True, index_dtype, n=n, dag=True)
    sources = _batch_sources(13, n, 24)
    differs = False
    for bound in NEGATIVE_BOUNDS:
        dist, parent = kernels.sssp_batch(device(indptr), device(indices), device(weights),
                                          device(sources), symmetric=False, negative_weights=True,
                                          max_distance=None if bound == np.inf else bound)
        dist, parent = host(dist), host(parent)
        for i, s in enumerate(sources):
            want = bounded_bellman_ford(src, dst, w, n, [s], bound)
            np.testing.assert_array_equal(dist[i], want, err_msg=f"bound {bound}, source {s}")
            assert_tree(src, dst, w, dist[i], parent[i], [s], np.isfinite(dist[i]))
            differs |= _cut_differs(src, dst, w, n, [s], bound, want)
    assert differs, "degenerate graph: the cut after the search would have been right"


def check_sssp_batch_bounded_negative_cycle(kernels, device, host, index_dtype):
    """A negative cycle that the bounded search cannot go round is not reached: no error, the
    vertices beyond the cutoff unreached; with a cutoff that lets it, NegativeCycleError."""
    from gpipe.errors import NegativeCycleError

    # 0 -> 1 (4); 1 -> 2 -> 1 costs -1 around; 0 -> 3 (1).
    src = np.array([0, 1, 2, 0], dtype=np.int64)
    dst = np.array([1, 2, 1, 3], dtype=np.int64)
    w = np.array([4.0, 1.0, -2.0, 1.0])
    indptr, indices, weights = (device(a) for a in csr_rows(src, dst, w, 0, 4, index_dtype))
    sources = device(np.array([0], dtype=np.int64))
    dist, parent = kernels.sssp_batch(indptr, indices, weights, sources, symmetric=False,
                                      negative_weights=True, max_distance=3.0)
    np.testing.assert_array_equal(host(dist)[0], [0.0, np.inf, np.inf, 1.0])
    np.testing.assert_array_equal(host(parent)[0], [-1, -1, -1, 0])
    # At 4.0 vertex 1 is reached but 2 (at 5.0) is not: the cycle cannot be gone round.
    dist, parent = kernels.sssp_batch(indptr, indices, weights, sources, symmetric=False,
                                      negative_weights=True, max_distance=4.0)
    np.testing.assert_array_equal(host(dist)[0], [0.0, 4.0, np.inf, 1.0])
    np.testing.assert_array_equal(host(parent)[0], [-1, 0, -1, 0])
    with pytest.raises(NegativeCycleError):
        kernels.sssp_batch(indptr, indices, weights, sources, symmetric=False,
                           negative_weights=True, max_distance=5.0)


def check_owner_sssp_negative_max_distance(kernels, xp, split_owners, index_dtype):
    """The multi-owner kernels with the owner state's bound (Bellman-Ford, one round per step)
    == the bounded reference over 1, 2 and 3 owners; trees of reached vertices.
    ``split_owners``: :func:`split`, or a test file's with device owners."""
    n = 200
    src, dst, w = random_edges(21, n=n, m=800, dag=True, integer=True)
    sources = np.array([0, 5])
    for parts in (1, 2, 3):
        owners = split_owners(src, dst, w, n, parts, index_dtype)
        for bound in NEGATIVE_BOUNDS:
            dist, parent, _ = drive_owner_sssp(kernels, xp, owners, n, sources, True, bound=bound)
            want = bounded_bellman_ford(src, dst, w, n, sources, bound)
            np.testing.assert_array_equal(dist, want, err_msg=f"{parts} owners, bound {bound}")
            assert_tree(src, dst, w, dist, parent, sources, np.isfinite(dist))


def check_owner_sssp_max_distance(kernels, xp, split_owners, index_dtype, widths):
    """Non-negative weights with the owner state's bound: SciPy's dijkstra(limit=...)."""
    n = 300
    src, dst, w = random_edges(22, n=n, m=1200, integer=True)
    graph = scipy_graph(src, dst, w, n)
    sources = np.array([0, 7])
    for parts in (2, 3):
        owners = split_owners(src, dst, w, n, parts, index_dtype)
        for bound in (0.0, 6.0, 20.0):
            dist, parent, _ = drive_owner_sssp(kernels, xp, owners, n, sources, False, widths,
                                               bound=bound)
            want = csgraph.dijkstra(graph, directed=True, indices=sources, min_only=True, limit=bound)
            np.testing.assert_array_equal(dist, want, err_msg=f"{parts} owners, bound {bound}")
            assert_tree(src, dst, w, dist, parent, sources, np.isfinite(dist))


# Early exit at a target, distances without parents, SSSP cut at max_distance (one owner):
# one check per case, run by the CPU and the GPU kernel tests with their own kernels.
# ---------------------------------------------------------------------------------------------


def chain_edges(n, directed=False):
    """The path 0 - 1 - ... - n-1 (both ways unless directed), weight 1: eccentricity n - 1 from 0."""
    src, dst = np.arange(n - 1, dtype=np.int64), np.arange(1, n, dtype=np.int64)
    if not directed:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    return src, dst, np.ones(src.size)


def assert_chain_to(src, dst, w, dist, parent, source, target):
    """Following parents from target ends at source over edges with dist[u] + w == dist[v]."""
    lightest = {}
    for u, v, wt in zip(src.tolist(), dst.tolist(), w.tolist()):
        lightest[(u, v)] = min(wt, lightest.get((u, v), np.inf))
    v, hops = target, 0
    while v != source:
        u = int(parent[v])
        assert u >= 0, f"vertex {v} on the target's chain has no parent"
        assert (u, v) in lightest and dist[u] + lightest[(u, v)] == dist[v]
        v, hops = u, hops + 1
        assert hops <= dist.size, "the chain loops"


def check_bfs_stops_at_target(bfs, host, device, symmetric):
    """``bfs(indptr, indices, sources, depth_limit, symmetric=, target=, parents=, stats=)``
    stops after the target's level on a chain (levels < eccentricity), and on a random graph
    gives the target's exact distance with a valid chain of parents."""
    n, target = 200, 3
    src, dst, w = chain_edges(n, directed=not symmetric)
    indptr, indices, _ = csr_rows(src, dst, w, 0, n, np.int32)
    stats = {}
    dist, parent = bfs(device(indptr), device(indices), device(np.array([0])), -1,
                       symmetric=symmetric, target=target, stats=stats)
    dist, parent = host(dist), host(parent)
    assert stats["levels"] == target < n - 1
    assert dist[target] == target and (dist[target + 2:] == -1).all()
    assert_chain_to(src, dst, w, dist, parent, 0, target)
    src, dst, w = random_edges(4, n=400, m=900, directed=not symmetric)
    graph = scipy_graph(src, dst, w, 400)
    expected = scipy_bfs_dist(graph, [0])
    indptr, indices, _ = csr_rows(src, dst, w, 0, 400, np.int32)
    for target in np.flatnonzero(expected > 0)[::37].tolist():
        dist, parent = bfs(device(indptr), device(indices), device(np.array([0])), -1,
                           symmetric=symmetric, target=target)
        dist, parent = host(dist), host(parent)
        assert dist[target] == expected[target]
        assert_chain_to(src, dst, np.ones(src.size), dist.astype(np.float64), parent, 0, target)


def check_bfs_without_parents(bfs, host, device, symmetric):
    """``parents=False``: the same distances, parent None."""
    src, dst, w = random_edges(6, n=400, m=1500, directed=not symmetric)
    for index_dtype in INDEX_DTYPES:
        indptr, indices, _ = csr_rows(src, dst, w, 0, 400, index_dtype)
        args = (device(indptr), device(indices), device(np.array([0, 17])), -1)
        full, _ = bfs(*args, symmetric=symmetric)
        dist, parent = bfs(*args, symmetric=symmetric, parents=False)
        assert parent is None
        np.testing.assert_array_equal(host(dist), host(full))


def check_sssp_stops_at_target(sssp, host, device, count, symmetric):
    """``sssp(indptr, indices, weights, sources, symmetric=, target=, stats=)``: on a chain the
    early stop does less work (``stats[count]`` below the full run's); on a random graph the
    target's distance is exact and its chain of parents valid."""
    n, target = 300, 4
    src, dst, w = chain_edges(n, directed=not symmetric)
    indptr, indices, weights = csr_rows(src, dst, w, 0, n, np.int32)
    args = (device(indptr), device(indices), device(weights), device(np.array([0])))
    full, early = {}, {}
    sssp(*args, symmetric=symmetric, stats=full)
    dist, parent = sssp(*args, symmetric=symmetric, target=target, stats=early)
    dist, parent = host(dist), host(parent)
    assert early[count] < full[count], (early, full)
    assert dist[target] == target
    assert_chain_to(src, dst, w, dist, parent, 0, target)
    src, dst, w = random_edges(7, n=400, m=1500, directed=not symmetric, integer=True)
    expected = scipy_sssp_dist(scipy_graph(src, dst, w, 400), [0])
    indptr, indices, weights = csr_rows(src, dst, w, 0, 400, np.int32)
    args = (device(indptr), device(indices), device(weights), device(np.array([0])))
    for target in np.flatnonzero(np.isfinite(expected) & (expected > 0))[::41].tolist():
        dist, parent = sssp(*args, symmetric=symmetric, target=target)
        dist, parent = host(dist), host(parent)
        assert dist[target] == expected[target]
        assert_chain_to(src, dst, w, dist, parent, 0, target)


def check_sssp_max_distance_and_no_parents(sssp, host, device, symmetric):
    """``max_distance`` leaves exactly the vertices beyond it unreached (as SciPy's
    ``limit``), with a valid tree below it; ``parents=False`` gives the same distances."""
    n = 400
    src, dst, w = random_edges(8, n=n, m=1600, directed=not symmetric, integer=True)
    graph = scipy_graph(src, dst, w, n)
    indptr, indices, weights = csr_rows(src, dst, w, 0, n, np.int32)
    sources = np.array([0, 5])
    args = (device(indptr), device(indices), device(weights), device(sources))
    for limit in (0.0, 6.0, 15.0, np.inf):
        expected = csgraph.dijkstra(graph, directed=True, indices=sources, min_only=True, limit=limit)
        dist, parent = sssp(*args, symmetric=symmetric, max_distance=limit)
        dist, parent = host(dist), host(parent)
        np.testing.assert_array_equal(dist, expected)
        assert_tree(src, dst, w, dist, parent, sources, np.isfinite(dist))
        short, none = sssp(*args, symmetric=symmetric, max_distance=limit, parents=False)
        assert none is None
        np.testing.assert_array_equal(host(short), expected)


# ---------------------------------------------------------------------------------------------
# Weights stored as float32 (a graph's weight_dtype="float32"): either backend
# ---------------------------------------------------------------------------------------------


def float32_edges(seed, n=300, m=1200, directed=True, dag=False):
    """:func:`random_edges` with real weights rounded to float32 (and with ``dag``, integers),
    returned as float64 values: what a float32 graph adds, in float64, to its distances (sums of
    them are exact in float64, so distances compare exactly)."""
    src, dst, w = random_edges(seed, n=n, m=m, directed=directed, dag=dag, integer=dag)
    return src, dst, w.astype(np.float32).astype(np.float64)


def check_driven_sssp_float32(drive_sssp, xp, split, index_dtype, n=300):
    """The relaxation rounds over float32 weights (``drive_sssp`` over one owner and two, the
    weights as float32 ``xp`` arrays), against SciPy on the same weights as float64: two graphs
    and a negative-weight DAG. Returns the two graphs' cases ``(src, dst, w, directed, sources,
    expected)`` for the caller's whole-traversal kernels."""
    cases = []
    for directed, dag in ((True, False), (False, False), (True, True)):
        src, dst, w = float32_edges(3, n=n, directed=directed, dag=dag)
        sources = np.array([0, 5]) if dag else np.array([3, 150, 3, 299])
        expected = scipy_sssp_dist(scipy_graph(src, dst, w, n), sources, negative=dag)
        check_driven_sssp(drive_sssp, lambda parts: float32_owners(split(src, dst, w, n, parts, index_dtype), xp),
                          src, dst, w, n, sources, expected)
        if not dag:
            cases.append((src, dst, w, directed, sources, expected))
    return cases


def float32_owners(owners, xp):
    """``owners`` (of :func:`split`) with their weights as float32 ``xp`` arrays."""
    for owner in owners:
        owner.weights = xp.asarray(owner.weights).astype(xp.float32)
    return owners


def check_owner_sssp_float32(kernels, xp, split_owners, index_dtype):
    """The owner kernels (``sssp_owner_*`` of ``kernels``) over float32 weights == SciPy over the
    same weights as float64: delta-stepping windows, and Bellman-Ford with negative weights."""
    n = 300
    for dag, widths in ((False, (1.0, 3.0)), (False, (np.inf, np.inf)), (True, None)):
        src, dst, w = float32_edges(8, n=n, directed=dag, dag=dag)
        graph = scipy_graph(src, dst, w, n)
        sources = np.array([0, 5]) if dag else np.array([3, 150, 3, 299])
        for parts in (1, 2, 3):
            owners = float32_owners(split_owners(src, dst, w, n, parts, index_dtype), xp)
            dist, parent, _ = drive_owner_sssp(kernels, xp, owners, n, sources, dag, widths or (1.0, 3.0))
            np.testing.assert_array_equal(dist, scipy_sssp_dist(graph, sources, negative=dag))
            assert_tree(src, dst, w, dist, parent, sources, np.isfinite(dist))


def check_build_csr_float32(build_csr_pieces, asarray, to_host):
    """Pieces with float32 weights give a CSR of float32 weights, the same rows as a sort."""
    src, dst, w = float32_edges(2, n=300, m=900)
    cuts = (0, 7, 7, 400, src.size)  # an empty piece among them
    pieces = [(asarray(src[a:b]), asarray(dst[a:b]), asarray(w[a:b].astype(np.float32)))
              for a, b in zip(cuts[:-1], cuts[1:])]
    indptr, indices, weights = build_csr_pieces(pieces, 300, np.int32)
    assert weights.dtype == np.float32
    indptr, indices, weights = (to_host(a) for a in (indptr, indices, weights))
    assert host_rows(indptr, indices, weights.astype(np.float64)) == numpy_rows(src, dst, w, 300)
