"""Tests of gpipe.engine.compute.gpu (kernels/bfs.cu, kernels/sssp.cu) against scipy.sparse.csgraph.

Every step of every traversal is also checked edge by edge against a plain NumPy reading of the
kernel contract (ARCHITECTURE.md): which targets a BFS step claims, the exact minimum a
relaxation leaves, which vertices count as improved, which parents are allowed, and the raw
remote lists. The step kernels are turned into whole traversals by a small test-local driver
that plays the part of gpipe/engine/traverse.py: one owner with remote=False, or several owners with
remote=True whose remote lists are routed and pruned here, level by level.

The cases follow tests/test_kernels_cpu.py (random graphs with repeated pairs and zero weights,
multi-source, both index dtypes, a negative-weight DAG, split owners) and add the shapes that
stress a GPU kernel: a hub adjacent to every vertex, and frontiers of more edges than one grid
holds threads (the grid-stride loop, many warps appending at once).

Skipped where CuPy or a CUDA device is missing.
"""

import functools

import numpy as np
import pytest

from conftest import cupy_or_skip

cupy = cupy_or_skip()

pytest.importorskip("scipy.sparse")  # kernel_graphs needs SciPy
pytest.importorskip("scipy.sparse.csgraph")

import gpipe  # noqa: E402
import kernel_graphs  # noqa: E402
from gpipe.engine.compute import gpu  # noqa: E402
from kernel_graphs import (INDEX_DTYPES, OWNER_WIDTHS, assert_build_csr_rows, assert_owner_pieces,  # noqa: E402
                           assert_tree, assert_unique, build_csr_cases,
                           check_owner_far_pile, in_pieces, check_owner_merge, check_owner_pruning,
                           claim_bfs_targets, csr_rows, drive_owner_sssp, driver_start, host_rows,
                           numpy_rows, owned_by, scipy_bfs_dist, scipy_graph, scipy_sssp_dist,
                           settle_sssp_candidates)

pytestmark = pytest.mark.gpu


# ---------------------------------------------------------------------------------------------
# Graphs (host arrays; owners keep a device copy)
# ---------------------------------------------------------------------------------------------

# Integer-valued weights unless integer=False: every path sum is exact, so distances compare exactly.
random_edges = functools.partial(kernel_graphs.random_edges, integer=True)


def hub_edges(seed, n, m):
    """Vertex 0 adjacent to every other vertex (both ways), plus m random directed edges."""
    rng = np.random.default_rng(seed)
    others = np.arange(1, n, dtype=np.int64)
    src = np.concatenate([np.zeros(n - 1, dtype=np.int64), others, rng.integers(1, n, m)])
    dst = np.concatenate([others, np.zeros(n - 1, dtype=np.int64), rng.integers(1, n, m)])
    w = rng.integers(0, 50, src.size).astype(np.float64)
    keep = src != dst
    return src[keep], dst[keep], w[keep]


class Owner:
    """One partition: rows offset..offset+n_local-1, on the host (for checks) and on the device."""

    def __init__(self, src, dst, w, lo, hi, index_dtype):
        self.offset, self.n_local = lo, hi - lo
        self.indptr_h, self.indices_h, self.weights_h = csr_rows(src, dst, w, lo, hi, index_dtype)
        self.indptr = cupy.asarray(self.indptr_h)
        self.indices = cupy.asarray(self.indices_h)
        self.weights = cupy.asarray(self.weights_h)

    def frontier_edges(self, frontier):
        """(frontier slot, CSR position) of every out-edge of the frontier, in CSR order."""
        start, end = self.indptr_h[frontier], self.indptr_h[frontier + 1]
        degree = end - start
        slot = np.repeat(np.arange(frontier.size), degree)
        first_edge = np.repeat(start - (np.cumsum(degree) - degree), degree)
        return slot, first_edge + np.arange(degree.sum())


split = functools.partial(kernel_graphs.split, owner=Owner)


# ---------------------------------------------------------------------------------------------
# One step, checked edge by edge against the contract (plain NumPy)
# ---------------------------------------------------------------------------------------------


def assert_same_rows(got, want):
    """The same multiset of rows (columns given as arrays), in any order."""
    assert all(g.size == want[0].size for g in got), "remote list of the wrong length"
    g_order, w_order = np.lexsort(got[::-1]), np.lexsort(want[::-1])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g[g_order], w[w_order])


def checked_bfs_step(owner, frontier, dist, parent, level, remote):
    """gpu.bfs_expand on device arrays, compared with what the contract allows; returns host results."""
    f = frontier.get()
    dist0, parent0 = dist.get(), parent.get()
    nxt, targets, parents = gpu.bfs_expand(owner.indptr, owner.indices, owner.offset, frontier,
                                           dist, parent, level, remote)
    dist1, parent1 = dist.get(), parent.get()
    nxt, targets, parents = nxt.get(), targets.get(), parents.get()

    slot, edge = owner.frontier_edges(f)
    target = owner.indices_h[edge].astype(np.int64)
    source = owner.offset + f[slot]
    local = owned_by(owner, target)
    lt, lu = target[local] - owner.offset, source[local]
    fresh = np.unique(lt[dist0[lt] == -1])

    assert_unique(nxt)
    np.testing.assert_array_equal(np.sort(nxt), fresh)
    want = dist0.copy()
    want[fresh] = level + 1
    np.testing.assert_array_equal(dist1, want)
    kept = np.ones(owner.n_local, dtype=bool)
    kept[fresh] = False
    np.testing.assert_array_equal(parent1[kept], parent0[kept])
    explained = np.zeros(owner.n_local, dtype=bool)
    explained[lt[parent1[lt] == lu]] = True
    assert explained[fresh].all(), "a claimed vertex's parent is not a frontier edge to it"

    assert targets.dtype == np.int64 and parents.dtype == np.int64
    if remote:
        assert_same_rows([targets, parents], [target[~local], source[~local]])
    else:
        assert targets.size == 0 and parents.size == 0
    return nxt, targets, parents


def checked_sssp_step(owner, frontier, dist, parent, remote):
    """gpu.sssp_relax on device arrays, compared with what the contract allows; returns host results."""
    frontier_dist = dist[frontier]  # the round's snapshot
    f, fd = frontier.get(), frontier_dist.get()
    dist0, parent0 = dist.get(), parent.get()
    improved, targets, cands, parents = gpu.sssp_relax(
        owner.indptr, owner.indices, owner.weights, owner.offset, frontier, frontier_dist,
        dist, parent, remote)
    dist1, parent1 = dist.get(), parent.get()
    improved, targets, cands, parents = improved.get(), targets.get(), cands.get(), parents.get()

    slot, edge = owner.frontier_edges(f)
    target = owner.indices_h[edge].astype(np.int64)
    cand = fd[slot] + owner.weights_h[edge]
    source = owner.offset + f[slot]
    local = owned_by(owner, target)
    lt, lc, lu = target[local] - owner.offset, cand[local], source[local]

    want = dist0.copy()
    np.minimum.at(want, lt, lc)
    np.testing.assert_array_equal(dist1, want)  # the exact minimum, duplicates included
    lowered = np.flatnonzero(dist1 < dist0)
    assert_unique(improved)
    np.testing.assert_array_equal(np.sort(improved), lowered)
    kept = np.ones(owner.n_local, dtype=bool)
    kept[lowered] = False
    np.testing.assert_array_equal(parent1[kept], parent0[kept])  # parents move only on improvement
    explained = np.zeros(owner.n_local, dtype=bool)
    explained[lt[(parent1[lt] == lu) & (lc == dist1[lt])]] = True
    assert explained[lowered].all(), "an improved vertex's parent edge does not give its distance"

    assert targets.dtype == np.int64 and parents.dtype == np.int64 and cands.dtype == np.float64
    if remote:
        assert_same_rows([targets, cands, parents], [target[~local], cand[~local], source[~local]])
    else:
        assert targets.size == 0 and cands.size == 0 and parents.size == 0
    return improved, targets, cands, parents


# ---------------------------------------------------------------------------------------------
# Test-local driver: level-synchronous rounds over the step kernels
# ---------------------------------------------------------------------------------------------


def on_host(merge, dist, parent, q, *args):
    """``merge(host dist, host parent, *args)`` (kernel_graphs) on owner ``q``'s device arrays,
    written back to the device; what it returns."""
    d, p = dist[q].get(), parent[q].get()
    done = merge(d, p, *args)
    dist[q], parent[q] = cupy.asarray(d), cupy.asarray(p)
    return done


def drive_bfs(owners, sources):
    """BFS over owners; remote candidates claimed by their owner, first one wins. Host results."""
    remote = len(owners) > 1
    dist, parent, frontier = driver_start(cupy, owners, sources, -1, cupy.int32)
    level = 0
    while any(f.size for f in frontier):
        steps = [checked_bfs_step(o, cupy.asarray(f), d, p, level, remote)
                 for o, f, d, p in zip(owners, frontier, dist, parent)]
        targets = np.concatenate([s[1] for s in steps])
        parents = np.concatenate([s[2] for s in steps])
        for q, o in enumerate(owners):
            fresh = on_host(claim_bfs_targets, dist, parent, q, o, targets, parents, level)
            frontier[q] = np.concatenate([steps[q][0], fresh])
            assert_unique(frontier[q])
        level += 1
    return np.concatenate([d.get() for d in dist]), np.concatenate([p.get() for p in parent])


def drive_sssp(owners, sources, max_rounds):
    """Frontier Bellman-Ford over owners; remote candidates pruned to the lightest per target."""
    remote = len(owners) > 1
    dist, parent, frontier = driver_start(cupy, owners, sources, cupy.inf, cupy.float64)
    rounds = 0
    while any(f.size for f in frontier):
        rounds += 1
        assert rounds <= max_rounds, "no convergence: negative cycle or a kernel bug"
        steps = [checked_sssp_step(o, cupy.asarray(f), d, p, remote)
                 for o, f, d, p in zip(owners, frontier, dist, parent)]
        targets = np.concatenate([s[1] for s in steps])
        cands = np.concatenate([s[2] for s in steps])
        parents = np.concatenate([s[3] for s in steps])
        for q, o in enumerate(owners):
            better = on_host(settle_sssp_candidates, dist, parent, q, o, targets, cands, parents)
            frontier[q] = np.union1d(steps[q][0], better).astype(np.int64)
    return np.concatenate([d.get() for d in dist]), np.concatenate([p.get() for p in parent])


# ---------------------------------------------------------------------------------------------
# Random graphs against scipy: one owner (remote=False) and two or three (remote=True, offset > 0)
# ---------------------------------------------------------------------------------------------

CASES = [(seed, directed, index_dtype, parts)
         for seed, directed in [(1, True), (2, False)]
         for index_dtype in INDEX_DTYPES
         for parts in (1, 2, 3)]
SOURCES = [np.array([7]), np.array([3, 150, 3, 299])]  # multi-source, with a repeated source


@pytest.mark.parametrize("seed,directed,index_dtype,parts", CASES)
def test_bfs_matches_scipy(seed, directed, index_dtype, parts):
    n = 300
    src, dst, w = random_edges(seed, n=n, directed=directed)
    graph = scipy_graph(src, dst, w, n)
    owners = split(src, dst, w, n, parts, index_dtype)
    for sources in SOURCES:
        dist, parent = drive_bfs(owners, sources)
        np.testing.assert_array_equal(dist, scipy_bfs_dist(graph, sources))
        assert_tree(src, dst, np.ones_like(w), dist, parent, sources, dist >= 0)


@pytest.mark.parametrize("seed,directed,index_dtype,parts", CASES)
def test_sssp_matches_scipy(seed, directed, index_dtype, parts):
    n = 300
    src, dst, w = random_edges(seed, n=n, directed=directed)
    assert (w == 0).any()
    graph = scipy_graph(src, dst, w, n)
    owners = split(src, dst, w, n, parts, index_dtype)
    for sources in SOURCES:
        dist, parent = drive_sssp(owners, sources, max_rounds=n)
        np.testing.assert_array_equal(dist, scipy_sssp_dist(graph, sources))
        assert_tree(src, dst, w, dist, parent, sources, np.isfinite(dist))


@pytest.mark.parametrize("parts", [1, 2])
def test_sssp_real_weights_match_scipy(parts):
    n = 400
    src, dst, w = random_edges(9, n=n, m=2000, directed=False, integer=False)
    graph = scipy_graph(src, dst, w, n)
    sources = np.array([0, 333])
    dist, parent = drive_sssp(split(src, dst, w, n, parts, np.int32), sources, max_rounds=n)
    np.testing.assert_allclose(dist, scipy_sssp_dist(graph, sources))
    assert_tree(src, dst, w, dist, parent, sources, np.isfinite(dist), exact=False)


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_sssp_negative_weights_match_bellman_ford(index_dtype):
    kernel_graphs.check_driven_sssp_negative(drive_sssp, split, index_dtype, integer=True)


# ---------------------------------------------------------------------------------------------
# Skewed degrees and frontiers larger than one grid
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("n,m", [(2000, 6000), (300_000, 1_200_000)], ids=["small", "grid-stride"])
def test_hub_adjacent_to_everything(index_dtype, n, m):
    # From the hub, level 1 is one vertex of n - 1 edges (every thread searches the same slot);
    # in the large case the next levels hold more frontier edges than the grid has threads.
    src, dst, w = hub_edges(11, n, m)
    graph = scipy_graph(src, dst, w, n)
    for sources in (np.array([0]), np.array([n - 1])):
        for parts in (1, 2):
            owners = split(src, dst, w, n, parts, index_dtype)
            dist, parent = drive_bfs(owners, sources)
            np.testing.assert_array_equal(dist, scipy_bfs_dist(graph, sources))
            assert_tree(src, dst, np.ones_like(w), dist, parent, sources, dist >= 0)
            dist, parent = drive_sssp(owners, sources, max_rounds=n)
            np.testing.assert_array_equal(dist, scipy_sssp_dist(graph, sources))
            assert_tree(src, dst, w, dist, parent, sources, np.isfinite(dist))


# ---------------------------------------------------------------------------------------------
# Single steps written out by hand
# ---------------------------------------------------------------------------------------------


def test_lightest_duplicate_wins():
    # 0->1 three times (5, 2, 7) and 0->2 (4), 2->1 (0): one relaxation from 0 leaves 1 at 2.
    src, dst, w = np.array([0, 0, 0, 0, 2]), np.array([1, 1, 1, 2, 1]), np.array([5.0, 2.0, 7.0, 4.0, 0.0])
    (owner,) = split(src, dst, w, 3, 1, np.int32)
    d, p = cupy.array([0.0, np.inf, np.inf]), cupy.full(3, -1, dtype=cupy.int64)
    improved, *_ = checked_sssp_step(owner, cupy.array([0], dtype=cupy.int64), d, p, False)
    np.testing.assert_array_equal(np.sort(improved), [1, 2])
    np.testing.assert_array_equal(d.get(), [0.0, 2.0, 4.0])
    np.testing.assert_array_equal(p.get(), [-1, 0, 0])


def test_equal_candidate_does_not_move_parent():
    # 1 is already at 1 with parent 0; relaxing 2->1 (weight 0) from 2 at 1 ties: no improvement.
    src, dst, w = np.array([0, 0, 2]), np.array([1, 2, 1]), np.array([1.0, 1.0, 0.0])
    (owner,) = split(src, dst, w, 3, 1, np.int64)
    d, p = cupy.array([0.0, 1.0, 1.0]), cupy.array([-1, 0, 0], dtype=cupy.int64)
    improved, *_ = checked_sssp_step(owner, cupy.array([2], dtype=cupy.int64), d, p, False)
    assert improved.size == 0
    np.testing.assert_array_equal(p.get(), [-1, 0, 0])


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("remote", [True, False])
def test_steps_on_second_owner(index_dtype, remote):
    # offset != 0; some targets already visited or already closer; remote=False lists nothing.
    n = 300
    src, dst, w = random_edges(6, n=n, directed=False)
    _, owner = split(src, dst, w, n, 2, index_dtype)
    rng = np.random.default_rng(0)
    frontier = rng.choice(owner.n_local, 40, replace=False).astype(np.int64)

    dist = np.where(rng.random(owner.n_local) < 0.3, 1, -1).astype(np.int32)
    dist[frontier] = 2
    nxt, targets, _ = checked_bfs_step(owner, cupy.asarray(frontier), cupy.asarray(dist),
                                       cupy.full(owner.n_local, -1, dtype=cupy.int64), 2, remote)
    assert nxt.size > 0 and (targets.size > 0) == remote

    dist = np.where(rng.random(owner.n_local) < 0.3, rng.integers(0, 30, owner.n_local), np.inf)
    dist[frontier] = rng.integers(0, 10, frontier.size)
    parent = np.where(np.isfinite(dist), 0, -1).astype(np.int64)
    improved, targets, *_ = checked_sssp_step(owner, cupy.asarray(frontier), cupy.asarray(dist),
                                              cupy.asarray(parent), remote)
    assert improved.size > 0 and (targets.size > 0) == remote


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_empty_frontier_and_no_edges(index_dtype):
    src, dst, w = np.array([0]), np.array([1]), np.array([1.0])
    (owner,) = split(src, dst, w, 4, 1, index_dtype)  # vertices 2 and 3 have no out-edges
    for frontier in (cupy.empty(0, dtype=cupy.int64), cupy.array([2, 3], dtype=cupy.int64)):
        for remote in (True, False):
            d, p = cupy.full(4, -1, dtype=cupy.int32), cupy.full(4, -1, dtype=cupy.int64)
            out = gpu.bfs_expand(owner.indptr, owner.indices, 0, frontier, d, p, 0, remote)
            assert [a.size for a in out] == [0, 0, 0] and all(a.dtype == cupy.int64 for a in out)
            d = cupy.full(4, cupy.inf)
            out = gpu.sssp_relax(owner.indptr, owner.indices, owner.weights, 0, frontier,
                                 cupy.zeros(frontier.size), d, p, remote)
            assert [a.size for a in out] == [0, 0, 0, 0]
            assert [a.dtype for a in out] == [cupy.int64, cupy.int64, cupy.float64, cupy.int64]
            assert (p == -1).all()


# ---------------------------------------------------------------------------------------------
# Finding and compiling the sources
# ---------------------------------------------------------------------------------------------


def test_source_dir_prefers_packaged_sources_then_checkout(tmp_path, monkeypatch):
    from gpipe.engine.compute import cuda_sources

    checkout = gpu.source_dir()
    assert (checkout / "bfs.cu").is_file() and (checkout / "sssp.cu").is_file()

    package = tmp_path / "gpipe"
    package.mkdir()
    monkeypatch.setattr(cuda_sources, "PACKAGE", package)
    with pytest.raises(FileNotFoundError, match="CUDA source"):
        gpu.source_dir()
    (tmp_path / "kernels").mkdir()
    for name in ("bfs.cu", "sssp.cu"):
        (tmp_path / "kernels" / name).write_text("")
    assert gpu.source_dir() == tmp_path / "kernels"
    (package / "_cuda").mkdir()
    for name in ("bfs.cu", "sssp.cu"):
        (package / "_cuda" / name).write_text("")
    assert gpu.source_dir() == package / "_cuda"


def test_modules_load_once_per_device():
    from gpipe.engine.compute import cuda

    device = cupy.cuda.runtime.getDevice()
    first = cuda.loaded_module("bfs.cu", device)
    assert cuda.loaded_module("bfs.cu", device) is first


def test_shipped_binaries_serve_this_device_and_match_the_jit(monkeypatch):
    """This device loads a shipped binary of every source, and a kernel loaded from it gives
    what the same source compiled at first use gives."""
    from gpipe.engine.compute import cuda, cuda_sources

    major, minor = cuda.device_capability(cupy.cuda.runtime.getDevice())
    for source in cuda_sources.MODULES:
        assert cuda_sources.shipped_binary(source, major, minor, cuda.binary_manifest()) is not None, source

    src, dst, w = random_edges(4, n=500, m=3000, directed=True)
    indptr, indices, weights = device_csr(src, dst, w, 500, np.int32)
    shipped = gpu.bfs(indptr, indices, cupy.asarray([0]))
    cuda.loaded_module.cache_clear()
    monkeypatch.setattr(cuda_sources, "shipped_binary", lambda *args: None)
    try:
        jit = gpu.bfs(indptr, indices, cupy.asarray([0]))
    finally:
        cuda.loaded_module.cache_clear()
    np.testing.assert_array_equal(shipped[0].get(), jit[0].get())


# ---------------------------------------------------------------------------------------------
# gpu.sssp: the whole one-owner near-far SSSP (kernels/sssp_nearfar.cu)
# ---------------------------------------------------------------------------------------------


def two_components_edges(seed):
    """Two random graphs on ids 0..199 and 250..449 (no edge between them), 200..249 isolated."""
    src, dst, w = random_edges(seed, n=200, m=800, directed=False)
    return (np.concatenate([src, src + 250]), np.concatenate([dst, dst + 250]),
            np.concatenate([w, w[::-1]]))


def device_csr(src, dst, w, n, index_dtype):
    indptr, indices, weights = csr_rows(src, dst, w, 0, n, index_dtype)
    return cupy.asarray(indptr), cupy.asarray(indices), cupy.asarray(weights)


def check_sssp(src, dst, w, n, sources, index_dtype, delta=None, exact=True, symmetric=False):
    dist, parent = gpu.sssp(*device_csr(src, dst, w, n, index_dtype), cupy.asarray(sources), delta=delta,
                            symmetric=symmetric)
    assert dist.dtype == cupy.float64 and parent.dtype == cupy.int64
    dist, parent = dist.get(), parent.get()
    want = scipy_sssp_dist(scipy_graph(src, dst, w, n), np.unique(sources))
    if exact:
        np.testing.assert_array_equal(dist, want)
    else:
        np.testing.assert_allclose(dist, want)
    assert_tree(src, dst, w, dist, parent, sources, np.isfinite(dist))  # exact dist[u] + w == dist[v]
    return dist, parent


@pytest.fixture(params=[True, False], ids=["recorded", "repaired"])
def record_parents(request, monkeypatch):
    """Parents recorded during the relaxation (then checked), or none recorded, so that every
    parent comes from the repair pass (row scan when symmetric, all-edges pass otherwise)."""
    from gpipe.engine.compute import gpu_sssp

    monkeypatch.setattr(gpu_sssp, "RECORD_PARENTS", request.param)
    return request.param


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("seed,directed", [(1, True), (2, False), (3, True)])
@pytest.mark.parametrize("delta", [None, 0.5, 7.0, np.inf])
def test_near_far_sssp_matches_scipy(seed, directed, index_dtype, delta, record_parents):
    # Zero weights (10%), repeated pairs with other weights, multi-source with a repeat.
    n = 300
    src, dst, w = random_edges(seed, n=n, directed=directed)
    assert (w == 0).any()
    for sources in SOURCES:
        check_sssp(src, dst, w, n, sources, index_dtype, delta, symmetric=not directed)
    if not directed:  # the all-edges repair is right on symmetric graphs too
        check_sssp(src, dst, w, n, SOURCES[1], index_dtype, delta, symmetric=False)


def test_near_far_sssp_repairs_are_counted(record_parents):
    from gpipe.engine.compute import gpu_sssp

    n = 300
    src, dst, w = random_edges(2, n=n, directed=False)
    dist, parent, stats = gpu_sssp.sssp_with_stats(*device_csr(src, dst, w, n, np.int32), cupy.array([7]),
                                                   symmetric=True)
    repaired = int(stats[6])
    lowered = int(cupy.isfinite(dist).sum()) - 1
    assert stats.size == 7 and lowered > 100
    if record_parents:
        assert 0 <= repaired <= lowered
    else:
        assert repaired == lowered


@pytest.mark.parametrize("delta", [None, 1.0, np.inf])
def test_near_far_sssp_disconnected_and_isolated(delta):
    src, dst, w = two_components_edges(5)
    n = 460  # 450..459 never occur
    dist, parent = check_sssp(src, dst, w, n, np.array([3]), np.int32, delta)
    assert np.isinf(dist[250:]).all() and (parent[250:] == -1).all()
    dist, _ = check_sssp(src, dst, w, n, np.array([3, 300]), np.int64, delta)
    assert np.isfinite(dist[300]) and np.isinf(dist[200:250]).all()


def test_near_far_sssp_zero_weight_cycles_keep_a_tree(record_parents):
    # A zero-weight clique reached through one edge: every member ties with every other.
    k = 40
    a, b = np.meshgrid(np.arange(1, k + 1), np.arange(1, k + 1))
    keep = a != b
    src = np.concatenate([[0], a[keep].ravel()])
    dst = np.concatenate([[1], b[keep].ravel()])
    w = np.concatenate([[3.0], np.zeros(keep.sum())])
    for delta in (None, 1.0, np.inf):
        dist, _ = check_sssp(src, dst, w, k + 1, np.array([0]), np.int32, delta)
        assert (dist[1:] == 3.0).all()
    # The same undirected (the entry edge both ways), parents repaired from each vertex's row;
    # plus a zero-weight ring hanging off the clique.
    ring = np.arange(k + 1, 2 * k + 1)
    src = np.concatenate([src, [1], ring, [ring[-1]]])
    dst = np.concatenate([dst, [0], np.roll(ring, -1), [5]])
    w = np.concatenate([w, [3.0], np.zeros(ring.size), [0.0]])
    src, dst, w = np.concatenate([src, dst]), np.concatenate([dst, src]), np.concatenate([w, w])
    for delta in (None, 1.0, np.inf):
        for sources in (np.array([0]), np.array([7, ring[3]])):
            dist, _ = check_sssp(src, dst, w, 2 * k + 1, sources, np.int32, delta, symmetric=True)
            assert (dist[1:] == (3.0 if sources[0] == 0 else 0.0)).all()


def test_near_far_sssp_real_weights():
    n = 400
    src, dst, w = random_edges(9, n=n, m=2000, directed=False, integer=False)
    for delta in (None, 0.25, np.inf):
        check_sssp(src, dst, w, n, np.array([0, 333]), np.int32, delta, exact=False)


@pytest.mark.parametrize("n,m", [(2000, 6000), (300_000, 1_200_000)], ids=["small", "grid-stride"])
def test_near_far_sssp_hub(n, m, record_parents):
    # One queue entry of n - 1 edges (the hub), then queues larger than the grid and than the
    # slots one chunk stages; undirected too (row-scan repairs through the hub's long row).
    src, dst, w = hub_edges(11, n, m)
    for sources in (np.array([0]), np.array([n - 1, 5])):
        check_sssp(src, dst, w, n, sources, np.int32)
    src, dst, w = np.concatenate([src, dst]), np.concatenate([dst, src]), np.concatenate([w, w])
    check_sssp(src, dst, w, n, np.array([n - 1]), np.int32, symmetric=True)


def test_near_far_sssp_edge_cases():
    # No edges at all; a source without out-edges; all-zero weights (default delta -> inf).
    indptr = cupy.zeros(5, dtype=cupy.int64)
    empty_i, empty_w = cupy.empty(0, dtype=cupy.int32), cupy.empty(0, dtype=cupy.float64)
    dist, parent = gpu.sssp(indptr, empty_i, empty_w, cupy.array([2]))
    assert dist.get().tolist() == [np.inf, np.inf, 0.0, np.inf] and (parent == -1).all()
    src, dst = np.array([0, 1, 2]), np.array([1, 2, 0])
    check_sssp(src, dst, np.zeros(3), 3, np.array([1]), np.int32)


def gpu_backend_without_cudf(monkeypatch):
    """The GPU backend with CuPy and the GPU kernels only (these tests need no cuDF frames)."""
    from gpipe.engine import backend as backends

    monkeypatch.setattr(backends, "gpu_backend",
                        lambda: backends.Backend(backends.GPU, cupy, None, "gpipe.engine.compute.gpu", "gpipe.engine.strings_gpu"))


def test_sssp_arrays_uses_near_far(monkeypatch):
    from gpipe.engine import traverse
    from gpipe.engine.partition import Partition

    gpu_backend_without_cudf(monkeypatch)
    n = 300
    src, dst, w = random_edges(2, n=n, directed=False)
    indptr, indices, weights = device_csr(src, dst, w, n, np.int32)
    part = Partition("gpu", 0, 0, n, n, indptr, indices, weights, None)
    called = []
    real = gpu.sssp
    monkeypatch.setattr(gpu, "sssp", lambda *a, **k: called.append(1) or real(*a, **k))
    dist, parent = traverse.sssp_arrays(part, np.array([7]), negative_weights=False)
    assert called
    np.testing.assert_array_equal(dist.get(), scipy_sssp_dist(scipy_graph(src, dst, w, n), [7]))


# ---------------------------------------------------------------------------------------------
# gpu.build_csr: degree count + atomic scatter (kernels/csr.cu), rows compared as multisets
# ---------------------------------------------------------------------------------------------


def device_rows(indptr, indices, weights):
    return host_rows(indptr.get(), indices.get(), weights.get() if weights is not None else None)


@build_csr_cases
def test_build_csr_rows_match_numpy(index_dtype, input_dtype, weighted, symmetric):
    def build(src, dst, w, n, index_dtype, symmetric, skip_loops):
        indptr, indices, weights = gpu.build_csr(
            cupy.asarray(src), cupy.asarray(dst), cupy.asarray(w) if w is not None else None, n,
            index_dtype, symmetric=symmetric, skip_loops=skip_loops)
        return indptr.get(), indices.get(), weights.get() if weights is not None else None

    assert_build_csr_rows(build, index_dtype, input_dtype, weighted, symmetric)


@build_csr_cases
def test_build_csr_pieces_rows_match_numpy(index_dtype, input_dtype, weighted, symmetric):
    def pieces(parts, n, index_dtype, **options):
        parts = [(cupy.asarray(s), cupy.asarray(d), None if w is None else cupy.asarray(w))
                 for s, d, w in parts]
        return tuple(None if a is None else a.get()
                     for a in gpu.build_csr_pieces(parts, n, index_dtype, **options))

    assert_build_csr_rows(in_pieces(pieces), index_dtype, input_dtype, weighted, symmetric)


def test_build_csr_pieces_of_an_owner_have_global_sources():
    assert_owner_pieces(gpu.build_csr_pieces, cupy.asarray, cupy.asnumpy)


def test_build_csr_owner_rows_and_empty_input():
    # A second owner's piece: local rows, global targets beyond n_local.
    src_local = cupy.array([2, 0, 2, 1], dtype=cupy.int64)
    dst = cupy.array([900, 5, 7, 900], dtype=cupy.int64)
    indptr, indices, weights = gpu.build_csr(src_local, dst, cupy.array([1.0, 2.0, 3.0, 4.0]), 4, np.int32)
    assert indptr.get().tolist() == [0, 1, 2, 4, 4]
    assert device_rows(indptr, indices, weights) == [[(5, 2.0)], [(900, 4.0)], [(7, 3.0), (900, 1.0)], []]
    indptr, indices, weights = gpu.build_csr(cupy.empty(0, cupy.int64), cupy.empty(0, cupy.int64), None, 3,
                                             np.int64, symmetric=True)
    assert indptr.get().tolist() == [0, 0, 0, 0] and indices.size == 0 and weights is None


def test_build_partition_uses_build_csr(monkeypatch):
    from gpipe.engine.partition import Layout, build_partition

    gpu_backend_without_cudf(monkeypatch)
    rng = np.random.default_rng(8)
    n, m = 300, 2000
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    keep = src != dst
    src, dst, w = src[keep], dst[keep], rng.random(keep.sum())
    layout = Layout(n=n, n_owners=2)
    lo = layout.offset(1)
    mine = src >= lo
    part = build_partition("gpu", layout, 1, True, False, None,
                           [(cupy.asarray(src[mine]), cupy.asarray(dst[mine]), cupy.asarray(w[mine]),
                             None, False, None)])
    assert part.indices.dtype == cupy.int32 and part.offset == lo
    assert device_rows(part.indptr, part.indices, part.weights) == numpy_rows(
        src[mine] - lo, dst[mine], w[mine], layout.size(1))


# ---------------------------------------------------------------------------------------------
# gpu.bfs: the whole one-owner BFS in one cooperative kernel (kernels/bfs_persistent.cu)
# ---------------------------------------------------------------------------------------------

BFS_DIRECTIONS = {  # keyword arguments of gpu.bfs that pick the steps' direction
    "heuristic": {},
    "top-down": {"alpha": 0.0},
    "bottom-up": {"alpha": np.inf, "beta": np.inf, "gamma": np.inf},  # every step
}


def bfs_device_csr(src, dst, n, index_dtype):
    indptr, indices, _ = csr_rows(src, dst, np.ones(src.size), 0, n, index_dtype)
    return cupy.asarray(indptr), cupy.asarray(indices)


def check_whole_bfs(src, dst, n, sources, index_dtype, symmetric, depth_limit=-1, **direction):
    """gpu.bfs against scipy (distances, cut at depth_limit) and the tree check; host results."""
    indptr, indices = bfs_device_csr(src, dst, n, index_dtype)
    trace = cupy.full((4 * n + 8, 5), -7, dtype=cupy.int64)
    dist, parent = gpu.bfs(indptr, indices, cupy.asarray(sources), depth_limit, symmetric=symmetric,
                           trace=trace, **direction)
    assert dist.dtype == cupy.int32 and parent.dtype == cupy.int64
    assert dist.shape == (n,) and parent.shape == (n,)
    dist, parent, trace = dist.get(), parent.get(), trace.get()
    want = scipy_bfs_dist(scipy_graph(src, dst, np.ones(src.size), n), np.unique(sources))
    if depth_limit >= 0:
        want[want > depth_limit] = -1
    np.testing.assert_array_equal(dist, want)
    assert_tree(src, dst, np.ones(src.size), dist, parent, sources, dist >= 0)
    assert ((parent == -1) | (dist > 0)).all()
    levels = int(np.flatnonzero(trace[:, 1] == -1)[0])  # the closing row
    np.testing.assert_array_equal(trace[:levels, 0], np.arange(levels))
    return dist, parent, trace[:levels]


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("direction", list(BFS_DIRECTIONS))
@pytest.mark.parametrize("seed,directed", [(1, True), (2, False), (5, False)])
def test_whole_bfs_matches_scipy(seed, directed, direction, index_dtype):
    n = 300
    src, dst, _ = random_edges(seed, n=n, directed=directed)
    for sources in SOURCES:
        _, _, trace = check_whole_bfs(src, dst, n, sources, index_dtype, not directed,
                                      **BFS_DIRECTIONS[direction])
        bottom_up = trace[:, 1].astype(bool)
        if directed or direction == "top-down":
            assert not bottom_up.any(), "a bottom-up step without in-edges"
        elif direction == "bottom-up":
            assert bottom_up.all()


@pytest.mark.parametrize("direction", list(BFS_DIRECTIONS))
@pytest.mark.parametrize("depth_limit", [0, 1, 2, 4])
def test_whole_bfs_depth_limit(depth_limit, direction):
    n = 400
    src, dst, _ = random_edges(3, n=n, m=900, directed=False)
    for sources in SOURCES:
        dist, _, trace = check_whole_bfs(src, dst, n, sources, np.int32, True, depth_limit,
                                         **BFS_DIRECTIONS[direction])
        assert dist.max() <= depth_limit and len(trace) <= depth_limit


@pytest.mark.parametrize("direction", list(BFS_DIRECTIONS))
def test_whole_bfs_grid(direction):
    # The grid of the hierarchical-queue paper: uniform degree, 3 * (side - 1) levels from a corner.
    from gpipe.generators import grid_centre, grid_edges

    side = 11
    edges = grid_edges(side)
    src, dst = edges.src.to_numpy(), edges.dst.to_numpy()
    src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    for sources in (np.array([grid_centre(side)]), np.array([0]), np.array([0, side**3 - 1])):
        dist, _, trace = check_whole_bfs(src, dst, side**3, sources, np.int32, True,
                                         **BFS_DIRECTIONS[direction])
        if sources[0] == 0 and sources.size == 1:
            assert dist.max() == 3 * (side - 1) and len(trace) == 3 * (side - 1) + 1


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("symmetric", [True, False])
def test_whole_bfs_hub_spread_over_blocks(symmetric, index_dtype):
    # A hub of n - 1 edges: its one tile is split across all blocks (the merge-path split);
    # the next level has n - 1 vertices, hundreds of tiles, more work items than the grid.
    n = 300_000
    src, dst, _ = hub_edges(11, n, 1_200_000)
    if symmetric:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    for sources in (np.array([0]), np.array([n - 1]), np.array([5, 77, 5])):
        check_whole_bfs(src, dst, n, sources, index_dtype, symmetric)


def test_whole_bfs_switches_both_ways():
    # Sparse random symmetric graph with isolated vertices, so that the heuristic goes
    # top-down -> bottom-up -> top-down on its own; compared with scipy throughout.
    n = 200_000
    rng = np.random.default_rng(8)
    m = 700_000
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    keep = (src != dst) & (src % 7 != 0) & (dst % 7 != 0)  # every 7th vertex isolated
    src, dst = src[keep], dst[keep]
    src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    _, _, trace = check_whole_bfs(src, dst, n, np.array([1]), np.int32, True)
    bottom_up = trace[:, 1].astype(int)
    assert not bottom_up[0] and (np.diff(bottom_up) == 1).any() and (np.diff(bottom_up) == -1).any()


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_whole_bfs_no_edges_and_isolated_sources(index_dtype):
    n = 5
    src, dst = np.array([1, 2], dtype=np.int64), np.array([2, 1], dtype=np.int64)
    for symmetric in (True, False):
        for sources in (np.array([0]), np.array([4, 4]), np.array([1])):
            check_whole_bfs(src, dst, n, sources, index_dtype, symmetric)
    indptr, indices = cupy.zeros(n + 1, dtype=cupy.int64), cupy.empty(0, dtype=index_dtype)
    dist, parent = gpu.bfs(indptr, indices, cupy.array([3]), -1, symmetric=True)
    assert dist.tolist() == [-1, -1, -1, 0, -1] and parent.tolist() == [-1] * n


def test_whole_bfs_poisoned_outputs_are_overwritten():
    # The kernel writes every element of dist and parent (no initialisation on the host): run it
    # on memory the pool hands back dirty, twice.
    n = 3000
    src, dst, _ = random_edges(4, n=n, m=4000, directed=False)
    indptr, indices = bfs_device_csr(src, dst, n, np.int32)
    junk = cupy.full(4 * n, 123456789, dtype=cupy.int64)
    del junk
    first = [a.get() for a in gpu.bfs(indptr, indices, cupy.array([9]), symmetric=True)]
    again = [a.get() for a in gpu.bfs(indptr, indices, cupy.array([9]), symmetric=True)]
    np.testing.assert_array_equal(first[0], again[0])
    assert_tree(src, dst, np.ones(src.size), again[0], again[1], np.array([9]), again[0] >= 0)


# ---------------------------------------------------------------------------------------------
# The level steps of a BFS over several owners (kernels/bfs_owners.cu): the CPU tests' cases
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("check", kernel_graphs.OWNER_LEVEL_CHECKS, ids=lambda check: check.__name__)
def test_owner_level_step(check, index_dtype):
    check(gpu, cupy.asarray, cupy.asnumpy, index_dtype)


def test_owner_frontier_bitmap_round_trip():
    kernel_graphs.check_frontier_bitmap_round_trip(gpu, cupy.asarray, cupy.asnumpy)


@pytest.mark.parametrize("path", ["device", "host"])
def test_owner_steps_with_many_warps_and_long_rows(path):
    # Frontiers of more edges than one grid holds threads, lanes of a warp appending to
    # different queues at once, a hub whose row the bottom-up warp scans together; checked
    # against the NumPy twin (the CPU kernels) step by step. The top-down step's two paths:
    # the frontier's length read on the device (a bound the host knows), or on the host
    # (no bound, a buffer longer than one block scans: CuPy's scan).
    from gpipe.engine.compute import cpu, gpu_bfs_owners

    n, chunk = 300_000, 100_032  # three owners; chunk a multiple of 64
    src, dst, _ = hub_edges(12, n, 1_500_000)
    src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    me = kernel_graphs.Owner(src, dst, np.ones(src.size), chunk, 2 * chunk, np.int32)
    rng = np.random.default_rng(9)
    frontier = rng.choice(me.n_local, 20_000, replace=False).astype(np.int64)
    edges = int((me.indptr[frontier + 1] - me.indptr[frontier]).sum())
    host_arrays = {"dist": np.full(me.n_local, -1, np.int32), "parent": np.full(me.n_local, -1, np.int64),
                   "sent": np.zeros(-(-n // 64), np.int64), "next": np.zeros(me.n_local, np.int64),
                   "qt": np.zeros(n, np.int32), "qp": np.zeros(n, np.int32),
                   "counters": kernel_graphs.level_counters(cpu, 3, frontier.size, edges)}
    host_arrays["dist"][frontier] = 0
    d_dist, d_parent = cupy.asarray(host_arrays["dist"]), cupy.asarray(host_arrays["parent"])
    d_sent = cupy.zeros(-(-n // 32), dtype=cupy.uint32)
    d_next = cupy.zeros(me.n_local, dtype=cupy.int64)
    d_counters = cupy.asarray(kernel_graphs.level_counters(gpu, 3, frontier.size, edges))
    d_qt, d_qp = cupy.zeros(n, dtype=cupy.int32), cupy.zeros(n, dtype=cupy.int32)
    cpu.bfs_owner_top_down(me.indptr, me.indices, me.offset, frontier, host_arrays["dist"],
                           host_arrays["parent"], 0, chunk, host_arrays["sent"], host_arrays["next"],
                           host_arrays["qt"], host_arrays["qp"], host_arrays["counters"])
    buffer = np.full(me.n_local, -9, dtype=np.int64)
    buffer[:frontier.size] = frontier
    assert (me.n_local > gpu_bfs_owners.SCAN_ITEMS) and frontier.size <= gpu_bfs_owners.SCAN_ITEMS
    gpu.bfs_owner_top_down(cupy.asarray(me.indptr), cupy.asarray(me.indices), me.offset,
                           cupy.asarray(buffer), d_dist, d_parent, 0, chunk, d_sent, d_next, d_qt, d_qp,
                           d_counters, frontier_bound=frontier.size if path == "device" else None)
    got, want = d_counters.get(), host_arrays["counters"]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(d_dist.get(), host_arrays["dist"])
    np.testing.assert_array_equal(kernel_graphs.unpack_bits(d_sent.get(), n),
                                  kernel_graphs.unpack_bits(host_arrays["sent"], n))
    nxt = gpu.NEXT
    np.testing.assert_array_equal(np.sort(d_next.get()[:got[nxt]]), np.sort(host_arrays["next"][:want[nxt]]))
    for q in (0, 2):
        start, count = q * chunk, int(want[gpu.QUEUES + q])
        assert count > 1000
        np.testing.assert_array_equal(np.sort(d_qt.get()[start:start + count]),
                                      np.sort(host_arrays["qt"][start:start + count]))

    # Bottom-up over a sparse frontier (not the hub, which every row meets first): rows of
    # about 22 neighbours, longer than a lane scans alone, so the warp scans resolve many.
    front_ids = np.concatenate([[n - 1], rng.choice(np.arange(1, n), 500, replace=False)])
    dist0 = np.where(rng.random(me.n_local) < 0.5, 1, -1).astype(np.int32)
    h_dist, h_parent = dist0.copy(), np.full(me.n_local, -1, np.int64)
    h_next, h_counters = np.zeros(-(-me.n_local // 64), np.int64), np.zeros(cpu.QUEUES + 3, np.int64)
    cpu.bfs_owner_bottom_up(me.indptr, me.indices, h_dist, h_parent, 1,
                            kernel_graphs.pack_bits(front_ids, n, cpu), h_next, h_counters)
    d_dist, d_parent = cupy.asarray(dist0), cupy.full(me.n_local, -1, dtype=cupy.int64)
    d_next = cupy.zeros(-(-me.n_local // 32), dtype=cupy.uint32)
    d_counters = cupy.zeros(gpu.QUEUES + 3, dtype=cupy.int64)
    gpu.bfs_owner_bottom_up(cupy.asarray(me.indptr), cupy.asarray(me.indices), d_dist, d_parent, 1,
                            cupy.asarray(kernel_graphs.pack_bits(front_ids, n, gpu)), d_next, d_counters)
    np.testing.assert_array_equal(d_dist.get(), h_dist)
    np.testing.assert_array_equal(d_parent.get(), h_parent)  # first frontier neighbour in row order
    np.testing.assert_array_equal(d_counters.get(), h_counters)
    np.testing.assert_array_equal(kernel_graphs.unpack_bits(d_next.get(), me.n_local),
                                  kernel_graphs.unpack_bits(h_next, me.n_local))


@pytest.mark.parametrize("frontier_size", [3, 20_000, 80_000])
def test_owner_pairs_with_many_warps_and_long_rows(frontier_size):
    # A level of pairs against its Numba twin: the hub's row (vertex 0, every vertex's
    # neighbour) with the next two longest, and frontiers scanned in one block or (beyond it)
    # by CuPy; the claim of every owner's pairs (here three slots).
    from gpipe.engine.compute import cpu

    n, chunk = 300_000, 100_032  # three owners; chunk a multiple of 64
    src, dst, _ = hub_edges(12, n, 1_500_000)
    src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    me = kernel_graphs.Owner(src, dst, np.ones(src.size), 0, chunk, np.int32)
    rng = np.random.default_rng(frontier_size)
    degree = np.diff(me.indptr)
    frontier = (np.argsort(degree)[-3:] if frontier_size == 3 else
                rng.choice(me.n_local, frontier_size, replace=False)).astype(np.int64)
    edges = int(degree[frontier].sum())
    visited_ids = np.union1d(frontier + me.offset, rng.choice(n, 50_000, replace=False))
    queue = np.zeros(me.n_local, dtype=np.int64)
    queue[:frontier.size] = frontier
    slots = edges + 3
    h_pairs = np.zeros(2 * slots, dtype=np.int32)
    cpu.bfs_owner_pairs(me.indptr, me.indices, me.offset, queue, frontier.size, edges,
                        kernel_graphs.pack_bits(visited_ids, 3 * chunk, cpu), h_pairs,
                        np.zeros(chunk // 64, np.int64), np.zeros(4, np.int64))
    d_visited = cupy.asarray(kernel_graphs.pack_bits(visited_ids, 3 * chunk, gpu))
    d_pairs = cupy.zeros(2 * slots, dtype=cupy.int32)
    d_counters = cupy.asarray(np.array([9, 9, frontier.size, edges], dtype=np.int64))
    indptr = cupy.asarray(me.indptr)
    gpu.bfs_owner_pairs(indptr, cupy.asarray(me.indices), me.offset, cupy.asarray(queue),
                        frontier.size, edges, d_visited, d_pairs,
                        cupy.ones(chunk // 32, dtype=cupy.uint32), d_counters)
    assert edges > 20_000 and (d_counters.get() == 0).all()
    np.testing.assert_array_equal(d_pairs.get(), h_pairs)

    gathered = np.concatenate([h_pairs, np.roll(h_pairs, 2), np.full(2 * slots, -1, np.int32)])
    dist0 = np.where(np.isin(np.arange(me.n_local) + me.offset, visited_ids), 0, -1).astype(np.int32)
    h = {"dist": dist0.copy(), "parent": np.full(me.n_local, -1, np.int64), "next": np.zeros(chunk // 64, np.int64),
         "queue": np.zeros(me.n_local, np.int64), "counters": np.zeros(4, np.int64)}
    cpu.bfs_owner_claim_pairs(me.indptr, gathered, me.offset, 1,
                              kernel_graphs.pack_bits(visited_ids, 3 * chunk, cpu), h["dist"], h["parent"],
                              h["next"], h["queue"], h["counters"])
    d = {"dist": cupy.asarray(dist0), "parent": cupy.full(me.n_local, -1, dtype=cupy.int64),
         "next": cupy.zeros(chunk // 32, dtype=cupy.uint32), "queue": cupy.zeros(me.n_local, dtype=cupy.int64),
         "counters": cupy.zeros(4, dtype=cupy.int64)}
    gpu.bfs_owner_claim_pairs(indptr, cupy.asarray(gathered), me.offset, 1, d_visited, d["dist"],
                              d["parent"], d["next"], d["queue"], d["counters"])
    np.testing.assert_array_equal(d["dist"].get(), h["dist"])
    np.testing.assert_array_equal(d["counters"].get(), h["counters"])
    woke = np.flatnonzero(h["dist"] == 2)
    assert woke.size > 1_000
    np.testing.assert_array_equal(kernel_graphs.unpack_bits(d["next"].get(), chunk), woke)
    np.testing.assert_array_equal(np.sort(d["queue"].get()[:woke.size]), woke)
    pairs = gathered.reshape(-1, 2).astype(np.int64)
    offered = set(zip((pairs[:, 0] - me.offset).tolist(), pairs[:, 1].tolist()))
    got_parent = d["parent"].get()
    assert all((int(v), int(got_parent[v])) in offered for v in woke)
    reached = np.concatenate([visited_ids, pairs[pairs[:, 0] >= 0, 0], pairs[pairs[:, 1] >= 0, 1]])
    np.testing.assert_array_equal(kernel_graphs.unpack_bits(d_visited.get(), 3 * chunk), np.unique(reached))


@pytest.mark.parametrize("frontier_size", [20_000, 80_000])
def test_owner_mark_and_resolve_with_many_warps_and_long_rows(frontier_size):
    # The fixed-size level against its Numba twin: a frontier marked edge-parallel (scanned in
    # one block) and one marked a warp per vertex (longer than that scan takes), a hub whose
    # row the resolve's warp scans together.
    from gpipe.engine.compute import cpu, gpu_bfs_owners

    n, chunk = 300_000, 100_032  # three owners; chunk a multiple of 64
    src, dst, _ = hub_edges(12, n, 1_500_000)
    src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    me = kernel_graphs.Owner(src, dst, np.ones(src.size), chunk, 2 * chunk, np.int32)
    rng = np.random.default_rng(frontier_size)
    frontier = rng.choice(me.n_local, frontier_size, replace=False).astype(np.int64)
    assert (frontier_size > gpu_bfs_owners.SCAN_ITEMS) == (frontier_size == 80_000)
    edges = int((me.indptr[frontier + 1] - me.indptr[frontier]).sum())
    visited_ids = np.union1d(frontier + me.offset, rng.choice(n, 50_000, replace=False))
    queue = np.zeros(me.n_local, dtype=np.int64)
    queue[:frontier.size] = frontier
    h_marks = np.zeros(3 * chunk // 64, dtype=np.int64)
    cpu.bfs_owner_mark(me.indptr, me.indices, queue, frontier.size, edges,
                       kernel_graphs.pack_bits(visited_ids, 3 * chunk, cpu), h_marks,
                       np.zeros(4, dtype=np.int64))
    d_marks = cupy.zeros(3 * chunk // 32, dtype=cupy.uint32)
    d_counters = cupy.asarray(np.array([9, 9, frontier.size, edges], dtype=np.int64))
    indptr, indices = cupy.asarray(me.indptr), cupy.asarray(me.indices)
    gpu.bfs_owner_mark(indptr, indices, cupy.asarray(queue), frontier.size, edges,
                       cupy.asarray(kernel_graphs.pack_bits(visited_ids, 3 * chunk, gpu)), d_marks,
                       d_counters)
    assert (d_counters.get()[gpu.NEXT:] == 0).all()
    marked = kernel_graphs.unpack_bits(h_marks, 3 * chunk)
    assert marked.size > 10_000 and edges > 100_000
    np.testing.assert_array_equal(kernel_graphs.unpack_bits(d_marks.get(), 3 * chunk), marked)

    # Both resolves, masked by this owner's marks and a peer's, and bottom-up.
    front = kernel_graphs.pack_bits(frontier + me.offset, 3 * chunk, cpu)
    peer = rng.choice(me.n_local, 30_000, replace=False)
    dist0 = np.where(np.isin(np.arange(me.n_local) + me.offset, visited_ids), 0, -1).astype(np.int32)
    h_received = np.zeros(3 * chunk // 64, dtype=np.int64)
    h_received[2 * chunk // 64:] = kernel_graphs.pack_bits(peer, chunk, cpu)
    d_received = cupy.zeros(3 * chunk // 32, dtype=cupy.uint32)
    d_received[2 * chunk // 32:] = cupy.asarray(kernel_graphs.pack_bits(peer, chunk, gpu))
    for masked in (True, False):
        h = {"dist": dist0.copy(), "parent": np.full(me.n_local, -1, np.int64),
             "next": np.zeros(chunk // 64, np.int64), "queue": np.zeros(me.n_local, np.int64),
             "counters": np.zeros(4, np.int64)}
        d = {"dist": cupy.asarray(dist0), "parent": cupy.full(me.n_local, -1, dtype=cupy.int64),
             "next": cupy.zeros(chunk // 32, dtype=cupy.uint32),
             "queue": cupy.zeros(me.n_local, dtype=cupy.int64), "counters": cupy.zeros(4, dtype=cupy.int64)}
        cpu.bfs_owner_resolve(me.indptr, me.indices, 1, front, h_marks[chunk // 64:2 * chunk // 64] if masked else None,
                              h_received, 1, h["dist"], h["parent"], h["next"], h["queue"], h["counters"])
        gpu.bfs_owner_resolve(indptr, indices, 1, cupy.asarray(kernel_graphs.pack_bits(frontier + me.offset, 3 * chunk, gpu)),
                              d_marks[chunk // 32:2 * chunk // 32] if masked else None, d_received, 1,
                              d["dist"], d["parent"], d["next"], d["queue"], d["counters"])
        np.testing.assert_array_equal(d["dist"].get(), h["dist"])
        np.testing.assert_array_equal(d["parent"].get(), h["parent"])  # first frontier neighbour in row order
        np.testing.assert_array_equal(d["counters"].get(), h["counters"])
        claimed = int(h["counters"][gpu.NEXT])
        assert claimed > 1000
        np.testing.assert_array_equal(np.sort(d["queue"].get()[:claimed]), np.sort(h["queue"][:claimed]))
        np.testing.assert_array_equal(kernel_graphs.unpack_bits(d["next"].get(), chunk),
                                      kernel_graphs.unpack_bits(h["next"], chunk))


@pytest.mark.parametrize("k", [1, 31, 1024, 8191, 8192, 8193, 40_000, 65_536])
def test_owner_edge_end_scans_in_one_block(k):
    # bfs_owner_edge_end: the frontier's length read on the device (counters[NEXT]), recorded
    # with its out-degree sum, the other counters zeroed, and the inclusive prefix sum of the
    # degrees, tile by tile in one block (8192 slots a tile): what the top-down step starts from.
    from gpipe.engine.compute import gpu_bfs_owners

    rng = np.random.default_rng(k)
    n_local = 70_000
    degrees = rng.integers(0, 40, n_local)
    degrees[rng.integers(0, n_local, 5)] = 10_000  # a few hubs
    indptr = cupy.asarray(np.concatenate([[0], np.cumsum(degrees)]).astype(np.int64))
    frontier = rng.choice(n_local, k, replace=False).astype(np.int64)
    buffer = np.full(n_local, -3, dtype=np.int64)
    buffer[:k] = frontier
    edge_end = cupy.full(k, -1, dtype=cupy.int64)
    counters = cupy.asarray(kernel_graphs.level_counters(gpu, 3, k, 12345))
    gpu_bfs_owners.owners_kernel("bfs_owner_edge_end", cupy.empty(0, dtype=cupy.int32))(
        (1,), (gpu_bfs_owners.SCAN_BLOCK,),
        (indptr, cupy.asarray(buffer), edge_end, counters, cupy.int32(counters.size)))
    np.testing.assert_array_equal(edge_end.get(), np.cumsum(degrees[frontier]))
    got = counters.get()
    assert got[gpu.FRONTIER] == k and got[gpu.FRONTIER_EDGES] == degrees[frontier].sum()
    assert (got[gpu.NEXT:] == 0).all()
    assert k <= gpu_bfs_owners.SCAN_ITEMS


# SSSP over several owners: kernels/sssp_owners.cu, the cases of tests/test_kernels_cpu.py
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("widths", OWNER_WIDTHS, ids=str)
@pytest.mark.parametrize("seed,directed,index_dtype,parts", CASES)
def test_owner_sssp_matches_scipy(seed, directed, index_dtype, parts, widths):
    n = 300
    src, dst, w = random_edges(seed, n=n, directed=directed)
    graph = scipy_graph(src, dst, w, n)
    owners = split(src, dst, w, n, parts, index_dtype)
    for sources in SOURCES:
        dist, parent, _ = drive_owner_sssp(gpu, cupy, owners, n, sources, False, widths)
        np.testing.assert_array_equal(dist, scipy_sssp_dist(graph, sources))
        assert_tree(src, dst, w, dist, parent, sources, np.isfinite(dist))


def test_owner_sssp_real_weights():
    n = 400
    src, dst, w = random_edges(9, n=n, m=2000, directed=False, integer=False)
    graph = scipy_graph(src, dst, w, n)
    sources = np.array([0, 333])
    for parts in (2, 3):
        for widths in ((0.25, 2.0), (1.0, 40.0)):
            dist, parent, _ = drive_owner_sssp(gpu, cupy, split(src, dst, w, n, parts, np.int32), n,
                                               sources, False, widths)
            np.testing.assert_allclose(dist, scipy_sssp_dist(graph, sources))
            assert_tree(src, dst, w, dist, parent, sources, np.isfinite(dist))


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_owner_sssp_negative_weights_match_bellman_ford(index_dtype):
    n = 200
    src, dst, w = random_edges(4, n=n, m=800, dag=True)
    graph = scipy_graph(src, dst, w, n)
    sources = np.array([0, 5])
    for parts in (1, 2, 3):
        dist, parent, steps = drive_owner_sssp(gpu, cupy, split(src, dst, w, n, parts, index_dtype), n,
                                               sources, True)
        np.testing.assert_array_equal(dist, scipy_sssp_dist(graph, sources, negative=True))
        assert_tree(src, dst, w, dist, parent, sources, np.isfinite(dist))
        assert steps <= n


@pytest.mark.parametrize("widths", [(1.0, 40.0), (np.inf, np.inf)], ids=str)
@pytest.mark.parametrize("n,m", [(2000, 6000), (300_000, 1_200_000)], ids=["small", "grid-stride"])
def test_owner_sssp_hub(n, m, widths):
    # A hub's row of n - 1 edges, half of them remote: one warp's lanes append to both owners'
    # outbox segments at once; then frontiers of more edges than the grid has threads.
    src, dst, w = hub_edges(11, n, m)
    graph = scipy_graph(src, dst, w, n)
    for sources in (np.array([0]), np.array([n - 1, 5])):
        for parts in (2, 3):
            dist, parent, _ = drive_owner_sssp(gpu, cupy, split(src, dst, w, n, parts, np.int32), n,
                                               sources, False, widths)
            np.testing.assert_array_equal(dist, scipy_sssp_dist(graph, sources))
            assert_tree(src, dst, w, dist, parent, sources, np.isfinite(dist))


def test_owner_relax_prunes_remote_candidates_against_sent_best():
    check_owner_pruning(gpu, cupy, Owner)


def test_owner_merge_lists_each_improved_vertex_once():
    check_owner_merge(gpu, cupy, Owner)


def test_owner_far_pile_waits_for_its_window():
    check_owner_far_pile(gpu, cupy, Owner)


def test_every_kernel_loads_for_both_index_types():
    """Every instantiation the table lists loads: both index types, or the module's own
    template arguments (kernels/util.cu)."""
    from gpipe.engine.compute import cuda, cuda_sources

    for source, module in cuda_sources.MODULES.items():
        for name in module.entry_points:
            for arguments in module.arguments(name):
                assert cuda.typed_function(source, name, arguments) is not None
            if name not in dict(module.template_arguments):
                for dtype in cuda.INDEX_TYPES:
                    assert cuda.function(source, name, cupy.empty(0, dtype=dtype)) is not None


_FIRST_CONTACT = """
import logging, sys
import pandas as pd, cudf, gpipe
logging.basicConfig(level=logging.INFO, format="%(name)s %(message)s")
edges = cudf.DataFrame({"src": [0, 1, 2, 3, 0], "dst": [1, 2, 3, 4, 4], "w": [1.0, 2.0, 1.0, 1.0, 9.0]})
graph = gpipe.Graph.from_edges(edges, directed=False, weight="w")
print(len(graph.bfs(0)), len(graph.sssp(0)), sorted(graph.sssp(0)["distance"].compute().to_pandas()))
"""


def test_a_fresh_machine_compiles_none_of_our_kernels(tmp_path):
    """A first build and query with an empty CuPy cache load the shipped binaries: nothing of
    kernels/*.cu reaches NVRTC (CuPy saves the source of everything it compiles, here)."""
    import os
    import subprocess
    import sys

    from gpipe.engine.compute import cuda_sources

    cache = tmp_path / "cupy-cache"
    env = {**os.environ, "CUPY_CACHE_DIR": str(cache), "CUPY_CACHE_SAVE_CUDA_SOURCE": "1"}
    done = subprocess.run([sys.executable, "-c", _FIRST_CONTACT], env=env, capture_output=True,
                          text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[:2] == ["5", "5"]
    assert "at first use" not in done.stderr, done.stderr
    compiled = "".join(p.read_text(errors="replace") for p in cache.rglob("*.cu")) if cache.exists() else ""
    ours = [k for m in cuda_sources.MODULES.values() for k in m.entry_points if k in compiled]
    assert not ours, f"compiled at first use: {ours}"


def test_a_fresh_machine_compiles_nothing_for_a_first_build_bfs_and_sssp(tmp_path):
    """A first build, undirected BFS and SSSP of a small weighted graph, with an empty CuPy
    cache, make CuPy compile nothing at all (issue 14): neither our kernels (shipped compiled)
    nor any kernel CuPy generates (gpipe.engine.compute.gpu_arrays replaces every elementwise kernel,
    index expression and boolean reduction on this path; min/max/sum/cumsum are CUB's and sort
    Thrust's, shipped compiled in CuPy; cuDF compiles nothing for what the path asks of it).
    The script collects its results with ``len`` only.

    Not removed, hence kept off this path: the renumbering of ids that are not small
    non-negative integers (``cupy.unique``/``searchsorted`` in gpipe.partitioning.build and gpipe.engine.sources),
    the progress report of a one-owner traversal while a dashboard listens
    (the end of gpipe.engine.traverse's one-owner traversals), negative weights (self-loop and cycle checks), and the
    multi-owner paths (owner_of, argsort buckets, the level loops' edge_end).
    """
    import os
    import subprocess
    import sys

    cache = tmp_path / "cupy-cache"
    env = {**os.environ, "CUPY_CACHE_DIR": str(cache), "CUPY_CACHE_SAVE_CUDA_SOURCE": "1"}
    done = subprocess.run([sys.executable, "-c", _FIRST_QUERIES], env=env, capture_output=True,
                          text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["5", "5"], done.stdout
    saved = list(cache.rglob("*.cu")) if cache.exists() else []
    heads = "\n\n".join(p.read_text(errors="replace")[:600] for p in saved)
    assert not saved, f"CuPy compiled {len(saved)} kernels at first use:\n{heads}"


_FIRST_QUERIES = """
import cudf, gpipe
edges = cudf.DataFrame({"src": [0, 1, 2, 3, 0], "dst": [1, 2, 3, 4, 4], "w": [1.0, 2.0, 1.0, 1.0, 9.0]})
graph = gpipe.Graph.from_edges(edges, directed=False, weight="w")
print(len(graph.bfs(0)), len(graph.sssp(0)))
"""


# ---------------------------------------------------------------------------------------------
# gpu_arrays: the array operations of the build and query path (kernels/util.cu), each
# against the CuPy call it replaces (values, dtypes, empty inputs)
# ---------------------------------------------------------------------------------------------

ARRAY_DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
                np.uint64, np.float64]
INTEGER_DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]
SIZES = [0, 1, 7, 2048, 2049, 5000]


def _values(dtype, n, seed=0):
    """``n`` values of ``dtype``: negative and extreme ones included, and for float64 every
    seventh one of inf, -inf, NaN, -0.0, 0.0 in turn."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return cupy.asarray(rng.random(n) < 0.5)
    if dtype.kind == "f":
        values = rng.normal(size=n) * 1e3
        specials = np.array([np.inf, -np.inf, np.nan, -0.0, 0.0])
        values[::7] = np.resize(specials, values[::7].size)
        return cupy.asarray(values)
    info = np.iinfo(dtype)
    return cupy.asarray(rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True))


def _assert_same(ours, theirs):
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_array_equal(ours.get(), theirs.get())


@pytest.fixture(scope="module")
def arrays():
    from gpipe.engine.compute import gpu_arrays

    return gpu_arrays


@pytest.mark.parametrize("dtype", ARRAY_DTYPES)
@pytest.mark.parametrize("n", SIZES)
def test_full_matches_cupy(arrays, dtype, n):
    dtype = np.dtype(dtype)
    for value in {"b": [True, False], "i": [-1, 0, 5], "u": [0, 7], "f": [np.inf, -1.5, 0.0]}[dtype.kind]:
        _assert_same(arrays.full(n, value, dtype), cupy.full(n, value, dtype=dtype))


@pytest.mark.parametrize("args", [(0, 10), (5, 5), (7, 3), (3, 100, 7), (-4, 4, 3), (0, 3000)])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_arange_matches_cupy(arrays, args, dtype):
    _assert_same(arrays.arange(*args, dtype=dtype), cupy.arange(*args, dtype=dtype))


@pytest.mark.parametrize("dtype", ARRAY_DTYPES)
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64, np.uint32])
def test_take_matches_cupy_wrapping_too(arrays, dtype, index_dtype):
    values = _values(dtype, 50)
    rng = np.random.default_rng(1)
    for index in (rng.integers(0, 50, 3000), np.array([0, 49, 50, 123]), np.empty(0, np.int64)):
        index = cupy.asarray(index.astype(index_dtype))
        _assert_same(arrays.take(values, index), values.take(index))
    if np.dtype(index_dtype).kind == "i":  # -1 picks the last value (result.owner_frame relies on it)
        index = cupy.asarray(np.array([-1, -50, 5], dtype=index_dtype))
        _assert_same(arrays.take(values, index), values.take(index))


@pytest.mark.parametrize("dtype", ARRAY_DTYPES)
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64, np.uint8])
def test_scatter_matches_cupy(arrays, dtype, index_dtype):
    value = {"b": True, "i": -1, "u": 3, "f": 0.0}[np.dtype(dtype).kind]
    rng = np.random.default_rng(2)
    for index in (rng.integers(0, 100, 40), np.empty(0, np.int64), np.array([99, 0, 0])):
        ours, theirs = _values(dtype, 100), _values(dtype, 100)
        index = cupy.asarray(index.astype(index_dtype))
        arrays.scatter(ours, index, value)
        theirs[index] = value
        _assert_same(ours, theirs)


@pytest.mark.parametrize("source", INTEGER_DTYPES)
@pytest.mark.parametrize("target", INTEGER_DTYPES)
@pytest.mark.parametrize("n", [0, 1, 3000])
def test_astype_matches_cupy_between_integers(arrays, source, target, n):
    array = _values(source, n, seed=3)
    ours = arrays.astype(array, target)
    _assert_same(ours, array.astype(target, copy=False))
    if source == target:
        assert ours is array  # copy=False: no copy
    out = cupy.empty(n, dtype=target)
    assert arrays.astype(array, target, out=out) is out
    _assert_same(out, array.astype(target))


@pytest.mark.parametrize("target", INTEGER_DTYPES)
def test_astype_with_offset_is_the_sum_converted(arrays, target):
    local = cupy.asarray(np.array([0, 3, 5, 2**40], dtype=np.int64))
    for offset in (0, 64, -1):
        ours = arrays.astype(local, target, offset=offset)
        _assert_same(ours, (local + offset).astype(target, copy=False))
        assert ours is not local


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float64, np.int16])
@pytest.mark.parametrize("n", [0, 40])
def test_zero_tests_match_cupy(arrays, dtype, n):
    array = _values(dtype, n, seed=4)
    _assert_same(arrays.negative(array), array < 0)
    _assert_same(arrays.non_negative(array), array >= 0)
    _assert_same(arrays.isfinite(array), cupy.isfinite(array))


@pytest.mark.parametrize("n", [0, 1, 40])
def test_logical_not_matches_cupy_in_place_too(arrays, n):
    bools = _values(np.bool_, n, seed=5)
    expected = cupy.logical_not(bools)
    _assert_same(arrays.logical_not(bools), expected)
    assert arrays.logical_not(bools, out=bools) is bools
    _assert_same(bools, expected)


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 1000, 4097])
def test_packbits_little_matches_cupy(arrays, n):
    bools = _values(np.bool_, n, seed=6)
    _assert_same(arrays.packbits_little(bools), cupy.packbits(bools, bitorder="little"))


@pytest.mark.parametrize("n", [0, 1, 255, 256, 2047, 2048, 2049, 100_003])
@pytest.mark.parametrize("density", [0.0, 0.01, 0.5, 1.0])
def test_flatnonzero_matches_cupy(arrays, n, density):
    bools = cupy.asarray(np.random.default_rng(n).random(n) < density)
    _assert_same(arrays.flatnonzero(bools), cupy.flatnonzero(bools))


@pytest.mark.parametrize("n", [0, 1, 2048, 2049, 100_003])
def test_count_nonzero_matches_cupy(arrays, n):
    bools = cupy.asarray(np.random.default_rng(n).random(n) < 0.3)
    assert arrays.count_nonzero(bools) == int(cupy.count_nonzero(bools))


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint64])
@pytest.mark.parametrize("n", [0, 1, 5, 3000, 100_003])
def test_cumsum_in_place_matches_cupy(arrays, dtype, n):
    values = cupy.asarray(np.random.default_rng(n).integers(0, 50, n).astype(dtype))
    expected = cupy.cumsum(values, dtype=dtype)  # in place: the array's own dtype
    _assert_same(arrays.cumsum_in_place(values), expected)
    _assert_same(values, expected)
    strided = cupy.arange(2 * n, dtype=dtype)[::2]
    _assert_same(arrays.cumsum_in_place(strided), cupy.cumsum(cupy.arange(2 * n, dtype=dtype)[::2], dtype=dtype))


@pytest.mark.parametrize("dtype", ARRAY_DTYPES)
@pytest.mark.parametrize("n", SIZES)
def test_copy_matches_cupy(arrays, dtype, n):
    values = _values(dtype, n)
    copied = arrays.copy(values)
    _assert_same(copied, values.copy())
    if n:
        assert copied.data.ptr != values.data.ptr


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint64, np.int8])
@pytest.mark.parametrize("n", [0, 1, 5, 3000])
def test_unique_matches_cupy(arrays, dtype, n):
    values = cupy.asarray(np.random.default_rng(n).integers(-3, 50, n).astype(dtype))
    _assert_same(arrays.unique(values), cupy.unique(values))


def test_build_csr_indptr_is_the_scan_of_the_degrees():
    """build_csr's indptr comes from cupy.cumsum of [0, degrees] (no slice assignment)."""
    src = cupy.asarray(np.array([2, 0, 2, 2], dtype=np.int64))
    dst = cupy.asarray(np.array([1, 1, 0, 3], dtype=np.int64))
    indptr, indices, _ = gpu.build_csr(src, dst, None, 4, np.int32)
    assert indptr.dtype == cupy.int64 and indptr.get().tolist() == [0, 1, 1, 4, 4]


# ---------------------------------------------------------------------------------------------
# Early exit at a target, distances only, SSSP cut at max_distance (kernel_graphs has the checks)
# ---------------------------------------------------------------------------------------------


def _host(array):
    return array.get()


@pytest.mark.parametrize("symmetric", [False, True])
def test_bfs_stops_after_the_level_of_its_target(symmetric):
    kernel_graphs.check_bfs_stops_at_target(gpu.bfs, _host, cupy.asarray, symmetric)


@pytest.mark.parametrize("symmetric", [False, True])
def test_bfs_without_parents(symmetric):
    kernel_graphs.check_bfs_without_parents(gpu.bfs, _host, cupy.asarray, symmetric)


def test_bfs_level_loop_target_and_no_parents():
    from gpipe.engine.compute.gpu_bfs import bfs_level_loop

    def bfs(indptr, indices, sources, depth_limit, symmetric, target=-1, parents=True, stats=None):
        return bfs_level_loop(indptr, indices, sources, depth_limit, target, parents, stats)

    kernel_graphs.check_bfs_stops_at_target(bfs, _host, cupy.asarray, False)
    kernel_graphs.check_bfs_without_parents(bfs, _host, cupy.asarray, False)


@pytest.mark.parametrize("symmetric", [False, True])
def test_near_far_stops_once_its_target_is_settled(symmetric):
    kernel_graphs.check_sssp_stops_at_target(gpu.sssp, _host, cupy.asarray, "passes", symmetric)


@pytest.mark.parametrize("symmetric", [False, True])
def test_near_far_max_distance_and_no_parents(symmetric):
    kernel_graphs.check_sssp_max_distance_and_no_parents(gpu.sssp, _host, cupy.asarray, symmetric)


# ---------------------------------------------------------------------------------------------
# max_distance as Dijkstra's cutoff with negative weights (issue 23): the relaxations of
# kernels/sssp.cu and kernels/sssp_owners.cu drop every candidate above the bound; the checks
# are the CPU tests' (kernel_graphs)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_sssp_relax_drops_candidates_above_the_bound(index_dtype):
    kernel_graphs.check_sssp_relax_bound(gpu, cupy.asarray, cupy.asnumpy, index_dtype)
    kernel_graphs.check_sssp_relax_bound_remote(gpu, cupy.asarray, cupy.asnumpy)


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_owner_sssp_negative_weights_with_the_state_bound(index_dtype):
    kernel_graphs.check_owner_sssp_negative_max_distance(gpu, cupy, split, index_dtype)


@pytest.mark.parametrize("widths", [(1.0, 3.0), (np.inf, np.inf)], ids=str)
def test_owner_sssp_with_the_state_bound_is_dijkstra_with_limit(widths):
    kernel_graphs.check_owner_sssp_max_distance(gpu, cupy, split, np.int32, widths)



# ---------------------------------------------------------------------------------------------
# Weights stored as float32 (weight_dtype="float32"): the <Index, float> instantiations
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_float32_weights_step_and_whole_sssp_match_scipy(index_dtype, record_parents):
    """kernels/sssp.cu (the relaxation rounds) and kernels/sssp_nearfar.cu (with its parent
    check and repairs) over float32 weights, against SciPy on the same weights as float64."""
    for src, dst, w, directed, sources, expected in kernel_graphs.check_driven_sssp_float32(
            drive_sssp, cupy, split, index_dtype):
        indptr, indices, weights = csr_rows(src, dst, w, 0, 300, index_dtype)
        for delta in (None, 2.0, np.inf):
            dist, parent = gpu.sssp(cupy.asarray(indptr), cupy.asarray(indices),
                                    cupy.asarray(weights.astype(np.float32)), cupy.asarray(sources),
                                    delta=delta, symmetric=not directed)
            dist, parent = dist.get(), parent.get()
            np.testing.assert_array_equal(dist, expected)
            assert_tree(src, dst, w, dist, parent, sources, np.isfinite(dist))


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_owner_sssp_float32_weights_match_scipy(index_dtype):
    """kernels/sssp_owners.cu over float32 weights (the CPU twin's cases)."""
    kernel_graphs.check_owner_sssp_float32(gpu, cupy, split, index_dtype)


def test_build_csr_keeps_float32_weights():
    """kernels/csr.cu's csr_scatter<Index, float>."""
    kernel_graphs.check_build_csr_float32(gpu.build_csr_pieces, cupy.asarray, cupy.asnumpy)
