"""Tests of gpipe.engine.compute.cpu against scipy.sparse.csgraph, on random graphs and one written out by hand.

The step kernels (bfs_expand, sssp_relax) are turned into whole traversals by a small driver
below that plays the part of gpipe/engine/traverse.py: one owner with remote=False, or several owners
with remote=True whose remote lists are routed and pruned here, level by level.
"""

import numpy as np
import pytest
from scipy.sparse import csgraph

import kernel_graphs
from gpipe.engine.compute import cpu, cpu_delta, cpu_sssp_owners, owner_state
from kernel_graphs import (INDEX_DTYPES, OWNER_WIDTHS, Owner, assert_tree, assert_unique,
                           check_owner_far_pile, check_owner_merge,
                           check_owner_pruning, claim_bfs_targets, csr_rows, drive_owner_sssp,
                           driver_start, owned_by, random_edges, scipy_bfs_dist, scipy_graph,
                           scipy_sssp_dist, settle_sssp_candidates, split)


# ---------------------------------------------------------------------------------------------
# Test-local driver: level-synchronous rounds over the step kernels
# ---------------------------------------------------------------------------------------------


def remote_lists(steps, remote, count):
    """The remote lists of every owner's step (results 1 .. count of each), concatenated;
    empty where the steps had no remote owners (``remote`` False)."""
    lists = [np.concatenate([s[c] for s in steps]) for c in range(1, count + 1)]
    if not remote:
        assert lists[0].size == 0
    return lists


def drive_bfs(owners, sources):
    """BFS over owners with bfs_expand; remote candidates claimed by their owner, first one wins."""
    remote = len(owners) > 1
    dist, parent, frontier = driver_start(np, owners, sources, -1, np.int32)
    level = 0
    while any(f.size for f in frontier):
        steps = [cpu.bfs_expand(o.indptr, o.indices, o.offset, f, d, p, level, remote)
                 for o, f, d, p in zip(owners, frontier, dist, parent)]
        targets, parents = remote_lists(steps, remote, 2)
        for q, o in enumerate(owners):
            fresh = claim_bfs_targets(dist[q], parent[q], o, targets, parents, level)
            frontier[q] = np.concatenate([steps[q][0], fresh])
            assert_unique(frontier[q])
        level += 1
    return np.concatenate(dist), np.concatenate(parent)


def drive_sssp(owners, sources, max_rounds):
    """Frontier Bellman-Ford over owners with sssp_relax; remote candidates pruned to the lightest per target."""
    remote = len(owners) > 1
    dist, parent, frontier = driver_start(np, owners, sources, np.inf, np.float64)
    rounds = 0
    while any(f.size for f in frontier):
        rounds += 1
        assert rounds <= max_rounds, "no convergence: negative cycle or a kernel bug"
        steps = [cpu.sssp_relax(o.indptr, o.indices, o.weights, o.offset, f, d[f].copy(), d, p, remote)
                 for o, f, d, p in zip(owners, frontier, dist, parent)]
        targets, cands, parents = remote_lists(steps, remote, 3)
        for q, o in enumerate(owners):
            better = settle_sssp_candidates(dist[q], parent[q], o, targets, cands, parents)
            assert_unique(steps[q][0])
            frontier[q] = np.union1d(steps[q][0], better).astype(np.int64)
    return np.concatenate(dist), np.concatenate(parent)


# ---------------------------------------------------------------------------------------------
# A graph small enough to answer by hand
# ---------------------------------------------------------------------------------------------
#
#   0 --4--> 1 --1--> 3 --1--> 0      vertex 4 has no edges
#   0 --1--> 2 --2--> 1
#            2 --5--> 3
#   and a heavier copy 0 --9--> 2

TINY_SRC = np.array([0, 0, 0, 1, 2, 2, 3])
TINY_DST = np.array([1, 2, 2, 3, 1, 3, 0])
TINY_W = np.array([4.0, 1.0, 9.0, 1.0, 2.0, 5.0, 1.0])


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_tiny_graph_by_hand(index_dtype):
    indptr, indices, weights = csr_rows(TINY_SRC, TINY_DST, TINY_W, 0, 5, index_dtype)
    sources = np.array([0])

    dist, parent = cpu.bfs(indptr, indices, sources, -1)
    np.testing.assert_array_equal(dist, [0, 1, 1, 2, -1])
    np.testing.assert_array_equal(parent, [-1, 0, 0, 1, -1])  # 1 is scanned before 2
    assert dist.dtype == np.int32 and parent.dtype == np.int64

    dist, parent = cpu.dijkstra(indptr, indices, weights, sources)
    np.testing.assert_array_equal(dist, [0.0, 3.0, 1.0, 4.0, np.inf])
    np.testing.assert_array_equal(parent, [-1, 2, 0, 1, -1])

    owner = split(TINY_SRC, TINY_DST, TINY_W, 5, 1, index_dtype)
    dist, parent = drive_sssp(owner, sources, max_rounds=6)
    np.testing.assert_array_equal(dist, [0.0, 3.0, 1.0, 4.0, np.inf])
    np.testing.assert_array_equal(parent, [-1, 2, 0, 1, -1])

    # Owners {0, 1, 2} and {3, 4}: from 0 the first step claims 1 and 2 and sends nothing away.
    first, second = split(TINY_SRC, TINY_DST, TINY_W, 5, 2, index_dtype)
    d, p = np.array([0, -1, -1], dtype=np.int32), np.full(3, -1, dtype=np.int64)
    nxt, targets, parents = cpu.bfs_expand(first.indptr, first.indices, 0, np.array([0]), d, p, 0, True)
    np.testing.assert_array_equal(nxt, [1, 2])
    assert targets.size == 0 and parents.size == 0
    # The next step, from 1 and 2, sends 1->3 and 2->3 to the second owner, raw.
    nxt, targets, parents = cpu.bfs_expand(first.indptr, first.indices, 0, nxt, d, p, 1, True)
    assert nxt.size == 0
    np.testing.assert_array_equal(targets, [3, 3])
    np.testing.assert_array_equal(parents, [1, 2])
    # The second owner's vertex 3 (local 0) relaxes 3->0 at distance 4: a remote candidate of 5.
    d2, p2 = np.array([4.0, np.inf]), np.full(2, -1, dtype=np.int64)
    improved, targets, cands, parents = cpu.sssp_relax(
        second.indptr, second.indices, second.weights, 3, np.array([0]), np.array([4.0]), d2, p2, True)
    assert improved.size == 0
    np.testing.assert_array_equal(targets, [0])
    np.testing.assert_array_equal(cands, [5.0])
    np.testing.assert_array_equal(parents, [3])


# ---------------------------------------------------------------------------------------------
# Random graphs against scipy
# ---------------------------------------------------------------------------------------------

def random_graph(seed, n, index_dtype, **shape):
    """``random_edges(seed, n=n, **shape)`` as ``((src, dst, w), SciPy matrix, one-owner CSR
    rows (indptr, indices, weights))``."""
    src, dst, w = random_edges(seed, n=n, **shape)
    return (src, dst, w), scipy_graph(src, dst, w, n), csr_rows(src, dst, w, 0, n, index_dtype)


CASES = [(seed, directed, index_dtype)
         for seed, directed in [(1, True), (2, False)]
         for index_dtype in INDEX_DTYPES]


@pytest.mark.parametrize("seed,directed,index_dtype", CASES)
def test_bfs_matches_scipy(seed, directed, index_dtype):
    n = 300
    (src, dst, w), graph, (indptr, indices, _) = random_graph(seed, n, index_dtype, directed=directed)
    unit = np.ones_like(w)
    for sources in (np.array([7]), np.array([3, 150, 3, 299])):
        expected = scipy_bfs_dist(graph, sources)
        dist, parent = cpu.bfs(indptr, indices, sources, -1)
        np.testing.assert_array_equal(dist, expected)
        assert_tree(src, dst, unit, dist, parent, sources, dist >= 0)
        for parts in (1, 2, 3):
            owners = split(src, dst, w, n, parts, index_dtype)
            dist_p, parent_p = drive_bfs(owners, sources)
            np.testing.assert_array_equal(dist_p, expected)
            assert_tree(src, dst, unit, dist_p, parent_p, sources, dist_p >= 0)
            if parts == 1:
                np.testing.assert_array_equal(parent_p, parent)  # bfs is bfs_expand, level by level


def test_bfs_reaches_what_breadth_first_order_reaches():
    n = 300
    (src, dst, w), graph, (indptr, indices, _) = random_graph(5, n, np.int32, m=400)
    order, _ = csgraph.breadth_first_order(graph, 11, directed=True)
    dist, _ = cpu.bfs(indptr, indices, np.array([11]), -1)
    np.testing.assert_array_equal(np.flatnonzero(dist >= 0), np.sort(order))
    assert (np.diff(dist[order]) >= 0).all()  # scipy's order visits level by level too


@pytest.mark.parametrize("depth_limit", [0, 1, 2, 3])
def test_bfs_depth_limit(depth_limit):
    n = 300
    (src, dst, w), graph, (indptr, indices, _) = random_graph(3, n, np.int64, m=500)
    sources = np.array([0, 42])
    full = scipy_bfs_dist(graph, sources)
    expected = np.where(full <= depth_limit, full, -1)
    dist, parent = cpu.bfs(indptr, indices, sources, depth_limit)
    np.testing.assert_array_equal(dist, expected)
    assert_tree(src, dst, np.ones_like(w), dist, parent, sources, dist >= 0)


@pytest.mark.parametrize("seed,directed,index_dtype", CASES)
def test_sssp_matches_scipy(seed, directed, index_dtype):
    n = 300
    (src, dst, w), graph, (indptr, indices, weights) = random_graph(seed, n, index_dtype, directed=directed)
    for sources in (np.array([7]), np.array([3, 150, 3, 299])):
        expected = scipy_sssp_dist(graph, sources)
        dist, parent = cpu.dijkstra(indptr, indices, weights, sources)
        np.testing.assert_allclose(dist, expected)
        assert_tree(src, dst, w, dist, parent, sources, np.isfinite(dist))
        for parts in (1, 2, 3):
            owners = split(src, dst, w, n, parts, index_dtype)
            dist_p, parent_p = drive_sssp(owners, sources, max_rounds=n)
            np.testing.assert_allclose(dist_p, expected)
            assert_tree(src, dst, w, dist_p, parent_p, sources, np.isfinite(dist_p))


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_sssp_relax_negative_weights_match_bellman_ford(index_dtype):
    kernel_graphs.check_driven_sssp_negative(drive_sssp, split, index_dtype)


def test_lightest_duplicate_wins():
    # 0->1 three times (5, 2, 7) and 0->2 (4), 2->1 (0): 1 is at 2 through the middle copy.
    src, dst, w = np.array([0, 0, 0, 0, 2]), np.array([1, 1, 1, 2, 1]), np.array([5.0, 2.0, 7.0, 4.0, 0.0])
    indptr, indices, weights = csr_rows(src, dst, w, 0, 3, np.int32)
    dist, parent = cpu.dijkstra(indptr, indices, weights, np.array([0]))
    np.testing.assert_array_equal(dist, [0.0, 2.0, 4.0])
    np.testing.assert_array_equal(parent, [-1, 0, 0])
    d, p = np.array([0.0, np.inf, np.inf]), np.full(3, -1, dtype=np.int64)
    improved, *_ = cpu.sssp_relax(indptr, indices, weights, 0, np.array([0]), np.array([0.0]), d, p, False)
    np.testing.assert_array_equal(improved, [1, 2])
    np.testing.assert_array_equal(d, [0.0, 2.0, 4.0])
    np.testing.assert_array_equal(p, [-1, 0, 0])


def test_zero_weight_ties_keep_the_first_parent():
    # 0->1 (1), 0->2 (1), 2->1 (0): 1 is at 1 both ways; the later, equal path must not move its parent.
    src, dst, w = np.array([0, 0, 2]), np.array([1, 2, 1]), np.array([1.0, 1.0, 0.0])
    indptr, indices, weights = csr_rows(src, dst, w, 0, 3, np.int64)
    dist, parent = cpu.dijkstra(indptr, indices, weights, np.array([0]))
    np.testing.assert_array_equal(dist, [0.0, 1.0, 1.0])
    np.testing.assert_array_equal(parent, [-1, 0, 0])


# ---------------------------------------------------------------------------------------------
# One step on the second of two owners: the remote lists, edge by edge
# ---------------------------------------------------------------------------------------------


def frontier_edges(owner, frontier):
    """(u, edge index) for every out-edge of the frontier, in the plain slow way."""
    pairs = [(i, e) for i, u in enumerate(frontier) for e in range(owner.indptr[u], owner.indptr[u + 1])]
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)


def second_owner(seed, index_dtype, n=300):
    """The second of two owners of a random undirected graph of ``n`` vertices."""
    src, dst, w = random_edges(seed, n=n, directed=False)
    return split(src, dst, w, n, 2, index_dtype)[1]


def frontier_targets(owner, frontier):
    """``(i, e, target, local)`` of every out-edge of the frontier (frontier slot, edge index,
    global target, whether this owner holds it); the frontier has local and remote targets."""
    i, e = frontier_edges(owner, frontier).T
    target = owner.indices[e].astype(np.int64)
    local = owned_by(owner, target)
    assert local.any() and (~local).any()
    return i, e, target, local


def sorted_rows(*columns):
    order = np.lexsort(columns[::-1])
    return [np.asarray(c)[order] for c in columns]


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_bfs_expand_step_on_second_owner(index_dtype):
    owner = second_owner(6, index_dtype)
    rng = np.random.default_rng(0)
    frontier = rng.choice(owner.n_local, 20, replace=False).astype(np.int64)
    dist = np.where(rng.random(owner.n_local) < 0.3, 1, -1).astype(np.int32)
    dist[frontier] = 2
    before = dist.copy()
    parent = np.full(owner.n_local, -1, dtype=np.int64)

    nxt, targets, parents = cpu.bfs_expand(owner.indptr, owner.indices, owner.offset, frontier,
                                           dist, parent, 2, True)

    i, e, target, local = frontier_targets(owner, frontier)
    got = sorted_rows(targets, parents)
    want = sorted_rows(target[~local], owner.offset + frontier[i[~local]])
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])

    assert_unique(nxt)
    fresh = target[local] - owner.offset
    np.testing.assert_array_equal(np.sort(nxt), np.unique(fresh[before[fresh] == -1]))
    assert (dist[nxt] == 3).all()
    np.testing.assert_array_equal(np.flatnonzero(dist != before), np.sort(nxt))
    claimed_by = set(zip((target[local] - owner.offset).tolist(), (owner.offset + frontier[i[local]]).tolist()))
    assert all((v, parent[v]) in claimed_by for v in nxt.tolist())

    nothing = cpu.bfs_expand(owner.indptr, owner.indices, owner.offset, frontier, dist, parent, 2, False)
    assert [a.size for a in nothing] == [0, 0, 0]
    assert all(a.dtype == np.int64 for a in nothing)


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_sssp_relax_step_on_second_owner(index_dtype):
    owner = second_owner(7, index_dtype)
    rng = np.random.default_rng(1)
    frontier = rng.choice(owner.n_local, 25, replace=False).astype(np.int64)
    dist = np.where(rng.random(owner.n_local) < 0.5, rng.uniform(0, 12, owner.n_local), np.inf)
    frontier_dist = rng.uniform(0, 3, frontier.size)
    dist[frontier] = frontier_dist + rng.uniform(0, 1, frontier.size)  # dist[u] must not be used
    before = dist.copy()
    parent = np.full(owner.n_local, -1, dtype=np.int64)

    improved, targets, cands, parents = cpu.sssp_relax(
        owner.indptr, owner.indices, owner.weights, owner.offset, frontier, frontier_dist.copy(),
        dist, parent, True)

    i, e, target, local = frontier_targets(owner, frontier)
    cand = frontier_dist[i] + owner.weights[e]
    got = sorted_rows(targets, cands, parents)
    want = sorted_rows(target[~local], cand[~local], owner.offset + frontier[i[~local]])
    for g, x in zip(got, want):
        np.testing.assert_array_equal(g, x)

    v = target[local] - owner.offset
    best = before.copy()
    np.minimum.at(best, v, cand[local])
    np.testing.assert_array_equal(dist, best)
    assert_unique(improved)
    np.testing.assert_array_equal(np.sort(improved), np.flatnonzero(best < before))
    unchanged = np.ones(owner.n_local, dtype=bool)
    unchanged[improved] = False
    assert (parent[unchanged] == -1).all()
    exact = set(zip(v[cand[local] == dist[v]].tolist(), (owner.offset + frontier[i[local]])[cand[local] == dist[v]].tolist()))
    assert all((x, parent[x]) in exact for x in improved.tolist())

    nothing = cpu.sssp_relax(owner.indptr, owner.indices, owner.weights, owner.offset, frontier,
                             frontier_dist, dist, parent, False)
    assert nothing[0].size == 0  # nothing improves twice from the same snapshot
    assert [a.size for a in nothing[1:]] == [0, 0, 0]


def test_empty_frontier():
    indptr, indices, weights = csr_rows(TINY_SRC, TINY_DST, TINY_W, 0, 5, np.int32)
    empty = np.empty(0, dtype=np.int64)
    dist, parent = np.full(5, -1, dtype=np.int32), np.full(5, -1, dtype=np.int64)
    out = cpu.bfs_expand(indptr, indices, 0, empty, dist, parent, 0, True)
    assert [(a.size, a.dtype) for a in out] == [(0, np.int64)] * 3
    out = cpu.sssp_relax(indptr, indices, weights, 0, empty, np.empty(0), np.full(5, np.inf), parent, True)
    assert [a.size for a in out] == [0, 0, 0, 0]
    assert [a.dtype for a in out] == [np.int64, np.int64, np.float64, np.int64]


# ---------------------------------------------------------------------------------------------
# Direction-optimizing BFS and delta-stepping (the fast one-owner kernels) against scipy
# ---------------------------------------------------------------------------------------------


def transpose(indptr, indices, n):
    """CSR of the in-edges: row v lists the sources u of the edges u->v."""
    src = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    return csr_rows(indices.astype(np.int64), src, np.zeros(src.size), 0, n, indices.dtype)[:2]


# (alpha, beta): GAPBS's; switch at every chance, both ways; bottom-up throughout; top-down throughout.
SWITCHES = [(15, 18), (1e9, 1e-9), (1e9, 1e9), (1e-9, 18)]


@pytest.mark.parametrize("alpha,beta", SWITCHES)
@pytest.mark.parametrize("seed,directed,index_dtype", CASES)
def test_direction_optimizing_bfs_matches_scipy(seed, directed, index_dtype, alpha, beta):
    n = 300
    (src, dst, w), graph, (indptr, indices, _) = random_graph(seed, n, index_dtype, m=900, directed=directed)
    in_indptr, in_indices = (indptr, indices) if not directed else transpose(indptr, indices, n)
    unit = np.ones_like(w)
    for sources in (np.array([7]), np.array([3, 150, 3, 299])):
        expected = scipy_bfs_dist(graph, sources)
        for depth_limit in (-1, 0, 1, 2, 3):
            dist, parent = cpu.bfs(indptr, indices, sources, depth_limit, in_indptr=in_indptr,
                                   in_indices=in_indices, alpha=alpha, beta=beta)
            want = expected if depth_limit < 0 else np.where(expected <= depth_limit, expected, -1)
            np.testing.assert_array_equal(dist, want)
            assert dist.dtype == np.int32 and parent.dtype == np.int64
            assert_tree(src, dst, unit, dist, parent, sources, dist >= 0)


def test_bottom_up_takes_the_first_in_neighbour_on_the_frontier():
    # 0->1 and 3->1, sources 0 and 3. Top-down, 0 is scanned first and claims 1; bottom-up,
    # 1 reads its in-edges in the order given (3 first) and takes 3.
    indptr = np.array([0, 1, 1, 1, 2])
    indices = np.array([1, 1], dtype=np.int32)
    in_indptr = np.array([0, 0, 2, 2, 2])
    in_indices = np.array([3, 0], dtype=np.int32)
    sources = np.array([0, 3])
    top_down = cpu.bfs(indptr, indices, sources, -1, in_indptr=in_indptr, in_indices=in_indices,
                       alpha=1e-9)
    bottom_up = cpu.bfs(indptr, indices, sources, -1, in_indptr=in_indptr, in_indices=in_indices,
                        alpha=1e9)
    np.testing.assert_array_equal(top_down[0], [0, 1, -1, 0])
    np.testing.assert_array_equal(bottom_up[0], [0, 1, -1, 0])
    assert top_down[1][1] == 0 and bottom_up[1][1] == 3


@pytest.mark.parametrize("n_chunks", [1, 3, 8])
def test_parallel_top_down_step_claims_each_vertex_once(n_chunks):
    n = 2000
    src, dst, w = random_edges(8, n=n, m=20000, directed=False)
    indptr, indices, _ = csr_rows(src, dst, w, 0, n, np.int32)
    rng = np.random.default_rng(2)
    frontier = rng.choice(n, 100, replace=False).astype(np.int64)
    dist = np.where(rng.random(n) < 0.3, 1, -1).astype(np.int32)
    dist[frontier] = 2
    before = dist.copy()
    parent = np.full(n, -1, dtype=np.int64)
    nxt, scout = cpu.top_down_parallel(indptr, indices, frontier, 2, dist, parent, n_chunks)
    assert_unique(nxt)
    i, e = frontier_edges(Owner(src, dst, w, 0, n, np.int32), frontier).T
    target = indices[e].astype(np.int64)
    np.testing.assert_array_equal(np.sort(nxt), np.unique(target[before[target] == -1]))
    assert (dist[nxt] == 3).all()
    np.testing.assert_array_equal(np.flatnonzero(dist != before), np.sort(nxt))
    assert scout == (indptr[nxt + 1] - indptr[nxt]).sum()
    claimed_by = set(zip(target.tolist(), frontier[i].tolist()))
    assert all((v, parent[v]) in claimed_by for v in nxt.tolist())


def test_bfs_large_enough_for_parallel_top_down_steps():
    n = 20000
    src, dst, w = random_edges(9, n=n, m=120000, directed=True)
    graph = scipy_graph(src, dst, w, n)
    indptr, indices, _ = csr_rows(src, dst, w, 0, n, np.int32)
    in_indptr, in_indices = transpose(indptr, indices, n)
    assert cpu.SERIAL_EDGES < indices.size // 4
    sources = np.array([5, 17])
    expected = scipy_bfs_dist(graph, sources)
    for kwargs in ({}, {"in_indptr": in_indptr, "in_indices": in_indices}):
        dist, parent = cpu.bfs(indptr, indices, sources, -1, **kwargs)
        np.testing.assert_array_equal(dist, expected)
        assert_tree(src, dst, np.ones_like(w), dist, parent, sources, dist >= 0)


@pytest.mark.parametrize("delta", [None, 0.3, 2.0, 1e9])
@pytest.mark.parametrize("seed,directed,index_dtype", CASES)
def test_delta_stepping_matches_scipy(seed, directed, index_dtype, delta):
    n = 300
    (src, dst, w), graph, (indptr, indices, weights) = random_graph(seed, n, index_dtype, directed=directed)
    for sources in (np.array([7]), np.array([3, 150, 3, 299])):
        expected = scipy_sssp_dist(graph, sources)
        dist, parent = cpu.delta_stepping(indptr, indices, weights, sources, delta)
        np.testing.assert_array_equal(dist, expected)  # the same sums: exact
        assert_tree(src, dst, w, dist, parent, sources, np.isfinite(dist))


@pytest.mark.parametrize("parallel_vertices", [0, 10**9])
@pytest.mark.parametrize("n_threads,capacity", [(1, 1), (2, 1), (3, 2), (5, 40), (2, 1 << 16)])
def test_delta_stepping_threads_and_pool_growth(n_threads, capacity, parallel_vertices):
    # More workers than threads is still correct; a pool of one chunk makes workers stop
    # mid-phase, the pool grow and the phase resume; phases run in parallel regions or on one
    # thread.
    n = 400
    src, dst, w = random_edges(10, n=n, m=3000, directed=False)
    w = np.ceil(w)  # integer weights, many ties and zeros
    graph = scipy_graph(src, dst, w, n)
    indptr, indices, weights = csr_rows(src, dst, w, 0, n, np.int32)
    sources = np.array([0, 399])
    expected = scipy_sssp_dist(graph, sources)
    for delta, n_slots in ((1.0, 12), (3.5, 5)):
        dist = np.full(n, np.inf)
        parent = np.full(n, -1, dtype=np.int64)
        cpu_delta.run_buckets(indptr, indices, weights, sources, delta, n_slots, n_threads, capacity,
                       parallel_vertices, dist, parent)
        np.testing.assert_array_equal(dist, expected)
        assert_tree(src, dst, w, dist, parent, sources, np.isfinite(dist))


def test_delta_stepping_in_parallel_on_a_larger_graph():
    # Enough vertices per bucket for parallel phases, hubs, and bin fusion.
    n = 30000
    src, dst, w = random_edges(11, n=n, m=400000, directed=True)
    w = np.ceil(w * 40)
    graph = scipy_graph(src, dst, w, n)
    indptr, indices, weights = csr_rows(src, dst, w, 0, n, np.int64)
    sources = np.array([1, 2, 3])
    dist, parent = cpu.delta_stepping(indptr, indices, weights, sources)
    np.testing.assert_array_equal(dist, scipy_sssp_dist(graph, sources))
    assert_tree(src, dst, w, dist, parent, sources, np.isfinite(dist))


def test_delta_stepping_zero_weights_and_defaults():
    indptr, indices, weights = csr_rows(TINY_SRC, TINY_DST, np.zeros(TINY_W.size), 0, 5, np.int32)
    dist, parent = cpu.delta_stepping(indptr, indices, weights, np.array([0]))
    np.testing.assert_array_equal(dist, [0.0, 0.0, 0.0, 0.0, np.inf])
    assert parent[0] == -1 and parent[4] == -1 and (parent[1:4] >= 0).all()
    assert cpu.default_delta(indptr, weights) == 1.0
    with pytest.raises(ValueError, match="delta"):
        cpu.delta_stepping(indptr, indices, weights, np.array([0]), 0.0)
    indptr, indices, weights = csr_rows(TINY_SRC, TINY_DST, TINY_W, 0, 5, np.int64)
    dist, parent = cpu.delta_stepping(indptr, indices, weights, np.array([0]))
    np.testing.assert_array_equal(dist, [0.0, 3.0, 1.0, 4.0, np.inf])
    np.testing.assert_array_equal(parent, [-1, 2, 0, 1, -1])


# ---------------------------------------------------------------------------------------------
# The level steps of a BFS over several owners (cases shared with the GPU in kernel_graphs)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("check", kernel_graphs.OWNER_LEVEL_CHECKS, ids=lambda check: check.__name__)
def test_owner_level_step(check, index_dtype):
    check(cpu, np.asarray, np.asarray, index_dtype)


def test_owner_frontier_bitmap_round_trip():
    kernel_graphs.check_frontier_bitmap_round_trip(cpu, np.asarray, np.asarray)


# SSSP over several owners: the owner kernels (sssp_owner_*), whole traversals and single steps
# ---------------------------------------------------------------------------------------------

# "cpu": what the CPU runs (the bucket ring of cpu_sssp_ring for non-negative weights);
# "twin": the Numba twin of kernels/sssp_owners.cu, which tests/test_kernels_gpu.py mirrors.
OWNER_KERNELS = {"cpu": cpu, "twin": cpu_sssp_owners}
OWNER_SOURCES = [np.array([7]), np.array([3, 150, 3, 299])]


@pytest.mark.parametrize("kind", list(OWNER_KERNELS))
@pytest.mark.parametrize("widths", OWNER_WIDTHS, ids=str)
@pytest.mark.parametrize("seed,directed,index_dtype", CASES)
def test_owner_sssp_matches_scipy(seed, directed, index_dtype, widths, kind):
    # Integer weights (exact sums), 10% zeros, repeated pairs; one to three owners.
    n = 300
    src, dst, w = random_edges(seed, n=n, directed=directed, integer=True)
    graph = scipy_graph(src, dst, w, n)
    for parts in (1, 2, 3):
        owners = split(src, dst, w, n, parts, index_dtype)
        for sources in OWNER_SOURCES:
            dist, parent, _ = drive_owner_sssp(OWNER_KERNELS[kind], np, owners, n, sources, False, widths)
            np.testing.assert_array_equal(dist, scipy_sssp_dist(graph, sources))
            assert_tree(src, dst, w, dist, parent, sources, np.isfinite(dist))


@pytest.mark.parametrize("kind", list(OWNER_KERNELS))
def test_owner_sssp_real_weights(kind):
    n = 400
    src, dst, w = random_edges(9, n=n, m=2000, directed=False)
    graph = scipy_graph(src, dst, w, n)
    sources = np.array([0, 333])
    for parts in (2, 3):
        for widths in ((0.25, 2.0), (1.0, 40.0)):
            dist, parent, _ = drive_owner_sssp(OWNER_KERNELS[kind], np, split(src, dst, w, n, parts, np.int32),
                                               n, sources, False, widths)
            np.testing.assert_allclose(dist, scipy_sssp_dist(graph, sources))
            assert_tree(src, dst, w, dist, parent, sources, np.isfinite(dist))


@pytest.mark.parametrize("kind", list(OWNER_KERNELS))
@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_owner_sssp_negative_weights_match_bellman_ford(index_dtype, kind):
    # Bellman-Ford: one round per step (what the CPU runs for negative weights is the twin).
    n = 200
    src, dst, w = random_edges(4, n=n, m=800, dag=True)
    graph = scipy_graph(src, dst, w, n)
    sources = np.array([0, 5])
    for parts in (1, 2, 3):
        dist, parent, steps = drive_owner_sssp(OWNER_KERNELS[kind], np, split(src, dst, w, n, parts, index_dtype),
                                               n, sources, True)
        np.testing.assert_array_equal(dist, scipy_sssp_dist(graph, sources, negative=True))
        assert_tree(src, dst, w, dist, parent, sources, np.isfinite(dist))
        assert steps <= n


def test_owner_sssp_windows_cut_the_steps():
    # The path 0 -> 1 -> ... -> 59 over two owners (0..29 and 30..59) crosses once. Windows of
    # one distance take a step each; wide ones let each owner walk its half alone.
    n = 60
    src, dst, w = np.arange(n - 1), np.arange(1, n), np.ones(n - 1)
    owners = split(src, dst, w, n, 2, np.int32)
    for kind in OWNER_KERNELS.values():
        steps = {}
        for widths in ((0.5, 0.5), (1.0, 8.0), (np.inf, np.inf)):
            dist, _, steps[widths[1]] = drive_owner_sssp(kind, np, owners, n, np.array([0]), False, widths)
            np.testing.assert_array_equal(dist, np.arange(n, dtype=np.float64))
        assert steps[np.inf] <= 4 < steps[8.0] <= 20 < n <= steps[0.5]


@pytest.mark.parametrize("kind", list(OWNER_KERNELS))
def test_owner_relax_prunes_remote_candidates_against_sent_best(kind):
    check_owner_pruning(OWNER_KERNELS[kind], np, Owner)


@pytest.mark.parametrize("kind", list(OWNER_KERNELS))
def test_owner_merge_lists_each_improved_vertex_once(kind):
    check_owner_merge(OWNER_KERNELS[kind], np, Owner)


@pytest.mark.parametrize("kind", list(OWNER_KERNELS))
def test_owner_far_pile_waits_for_its_window(kind):
    check_owner_far_pile(OWNER_KERNELS[kind], np, Owner)


def test_twin_near_mid_far_by_thresholds():
    # Local threshold 2, window end 5: arriving 0 (at 1) goes near, 2 (at 3) on the mid pile,
    # 3 (at 7) far. The local phase then walks the mid pile in buckets of local_delta = 1 up to
    # the window's end: round 1 relaxes 0 (1 -> 2, onto the mid pile), the pile splits at 3
    # (1 near), round 2 relaxes 1 (2 ties at 3: no change), split at 4 (2 near), round 3
    # relaxes 2 (3 -> 4, mid), split at 5 (3 near), round 4 relaxes 3 (no edges).
    n = 8
    src, dst, w = np.array([0, 1, 2]), np.array([1, 2, 3]), np.array([1.0, 1.0, 1.0])
    owner, _ = split(src, dst, w, n, 2, np.int32)
    state = owner_state.new_state(np, n, 0, 4, 4, 2, np.array([], dtype=np.int64), 2.0)
    state.local_delta, state.window = 1.0, 5.0
    arriving = (np.array([0, 2, 3]), np.array([1.0, 3.0, 7.0]), np.array([4, 5, 6]))
    cpu_sssp_owners.sssp_owner_merge(state, [arriving], 5.0)
    counts = cpu_sssp_owners.sssp_owner_counts(state)
    assert (counts.near, counts.mid, counts.far) == (1, 1, 1)
    assert (counts.mid_min, counts.far_min) == (3.0, 7.0)
    rounds = cpu_sssp_owners.sssp_owner_relax(owner.indptr, owner.indices, owner.weights, state, 5.0, -1)
    assert rounds == 4 and state.local_threshold == 5.0
    np.testing.assert_array_equal(state.dist, [1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(state.parent, [4, 0, 5, 2])  # 2 keeps the parent of its first 3
    counts = cpu_sssp_owners.sssp_owner_counts(state)
    # 3 is still on the far pile (stale now: at 4 < 5, relaxed); its minimum is what it was put at.
    assert (counts.near, counts.mid, counts.far, counts.far_min) == (0, 0, 1, 7.0)
    assert counts.relaxed == 4 and counts.repeated == 0


# ---------------------------------------------------------------------------------------------
# Batch kernels (per-source queries): kernel_graphs.check_* shared with the GPU tests
# ---------------------------------------------------------------------------------------------


def _same(array):
    return array


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("directed", [True, False], ids=["directed", "undirected"])
@pytest.mark.parametrize("k, depth_limit", [(1, -1), (64, -1), (150, -1), (40, 2), (64, 0)])
def test_bfs_batch_matches_scipy_per_source(index_dtype, directed, k, depth_limit):
    kernel_graphs.check_bfs_batch(cpu, _same, _same, index_dtype, directed, k, depth_limit)


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("directed", [True, False], ids=["directed", "undirected"])
@pytest.mark.parametrize("max_distance", [None, 12.0])
def test_sssp_batch_matches_scipy_per_source(index_dtype, directed, max_distance):
    kernel_graphs.check_sssp_batch(cpu, _same, _same, index_dtype, directed, 37, max_distance)


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_sssp_batch_negative_weights_is_bellman_ford_per_source(index_dtype):
    kernel_graphs.check_sssp_batch_negative(cpu, _same, _same, index_dtype)


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_sssp_batch_names_the_source_that_reaches_a_negative_cycle(index_dtype):
    kernel_graphs.check_sssp_batch_negative_cycle(cpu, _same, index_dtype)


def test_bfs_batch_refuses_more_sources_than_its_width():
    indptr, indices = np.zeros(cpu.BFS_BATCH_WIDTH + 2, dtype=np.int64), np.empty(0, dtype=np.int32)
    with pytest.raises(ValueError, match="at most"):
        cpu.bfs_batch(indptr, indices, np.arange(cpu.BFS_BATCH_WIDTH + 1), -1, symmetric=False)


def test_bfs_batch_directed_with_in_edges_goes_bottom_up_and_agrees():
    """A directed graph given its in-edges (the transpose) may go bottom-up: same table."""
    n = 300
    src, dst, w = random_edges(3, n=n, m=4000)
    indptr, indices, _ = csr_rows(src, dst, w, 0, n, np.int32)
    in_indptr, in_indices, _ = csr_rows(dst, src, w, 0, n, np.int32)
    sources = np.arange(0, 128, 2, dtype=np.int64)
    top_down = cpu.bfs_batch(indptr, indices, sources, -1, symmetric=False)
    both = cpu.bfs_batch(indptr, indices, sources, -1, symmetric=False, in_indptr=in_indptr,
                         in_indices=in_indices)
    np.testing.assert_array_equal(top_down, both)
    np.testing.assert_array_equal(top_down, np.vstack([scipy_bfs_dist(scipy_graph(src, dst, w, n), [s])
                                                       for s in sources]))

# Early exit at a target, distances only, SSSP cut at max_distance (kernel_graphs has the checks)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("symmetric", [False, True])
def test_bfs_stops_after_the_level_of_its_target(symmetric):
    kernel_graphs.check_bfs_stops_at_target(cpu.bfs, np.asarray, np.asarray, symmetric)


@pytest.mark.parametrize("symmetric", [False, True])
def test_bfs_without_parents(symmetric):
    kernel_graphs.check_bfs_without_parents(cpu.bfs, np.asarray, np.asarray, symmetric)


@pytest.mark.parametrize("symmetric", [False, True])
def test_delta_stepping_stops_once_its_target_is_settled(symmetric):
    def sssp(indptr, indices, weights, sources, symmetric, **options):
        return cpu.delta_stepping(indptr, indices, weights, sources, **options)

    kernel_graphs.check_sssp_stops_at_target(sssp, np.asarray, np.asarray, "buckets", symmetric)


@pytest.mark.parametrize("symmetric", [False, True])
def test_delta_stepping_max_distance_and_no_parents(symmetric):
    def sssp(indptr, indices, weights, sources, symmetric, **options):
        return cpu.delta_stepping(indptr, indices, weights, sources, **options)

    kernel_graphs.check_sssp_max_distance_and_no_parents(sssp, np.asarray, np.asarray, symmetric)


# ---------------------------------------------------------------------------------------------
# max_distance as Dijkstra's cutoff with negative weights (issue 23): the relaxations drop
# every candidate above it; kernel_graphs.check_* shared with the GPU tests
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_sssp_relax_drops_candidates_above_the_bound(index_dtype):
    kernel_graphs.check_sssp_relax_bound(cpu, _same, _same, index_dtype)
    kernel_graphs.check_sssp_relax_bound_remote(cpu, _same, _same)


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_sssp_batch_negative_weights_max_distance_is_bounded_bellman_ford(index_dtype):
    kernel_graphs.check_sssp_batch_negative_max_distance(cpu, _same, _same, index_dtype)
    kernel_graphs.check_sssp_batch_bounded_negative_cycle(cpu, _same, _same, index_dtype)


@pytest.mark.parametrize("kind", list(OWNER_KERNELS))
@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_owner_sssp_negative_weights_with_the_state_bound(index_dtype, kind):
    kernel_graphs.check_owner_sssp_negative_max_distance(OWNER_KERNELS[kind], np, split, index_dtype)


@pytest.mark.parametrize("kind", list(OWNER_KERNELS))
@pytest.mark.parametrize("widths", [(1.0, 3.0), (np.inf, np.inf)], ids=str)
def test_owner_sssp_with_the_state_bound_is_dijkstra_with_limit(kind, widths):
    kernel_graphs.check_owner_sssp_max_distance(OWNER_KERNELS[kind], np, split, np.int32, widths)


# ---------------------------------------------------------------------------------------------
# Weights stored as float32 (weight_dtype="float32"): every SSSP kernel reads them, sums in float64
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_float32_weights_step_and_whole_sssp_match_scipy(index_dtype):
    for src, dst, w, _, sources, expected in kernel_graphs.check_driven_sssp_float32(drive_sssp, np, split, index_dtype):
        indptr, indices, weights = csr_rows(src, dst, w, 0, 300, index_dtype)
        weights = weights.astype(np.float32)
        for whole in (cpu.delta_stepping, cpu.dijkstra):
            dist, parent = whole(indptr, indices, weights, sources)
            np.testing.assert_array_equal(dist, expected)
            assert_tree(src, dst, w, dist, parent, sources, np.isfinite(dist))


@pytest.mark.parametrize("kind", list(OWNER_KERNELS))
@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_owner_sssp_float32_weights_match_scipy(index_dtype, kind):
    kernel_graphs.check_owner_sssp_float32(OWNER_KERNELS[kind], np, split, index_dtype)


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_sssp_batch_float32_weights_match_scipy(index_dtype):
    kernel_graphs.check_sssp_batch(cpu, _same, _same, index_dtype, False, 37, None, weight_dtype=np.float32)
    kernel_graphs.check_sssp_batch_negative(cpu, _same, _same, index_dtype, weight_dtype=np.float32)


def test_build_csr_keeps_float32_weights():
    kernel_graphs.check_build_csr_float32(cpu.build_csr_pieces, np.asarray, np.asarray)
