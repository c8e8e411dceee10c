"""Tests of the GPU batch kernels of issue 16 (gpipe.engine.compute.gpu_batch: kernels/bfs_batch.cu,
kernels/sssp_batch.cu) against scipy.sparse.csgraph, one source at a time.

Every row of every distance table is compared with SciPy's answer for that source alone, and
every parent of every row is validated (an existing edge, on a shortest path, no cycle).
Cases: random graphs with repeated pairs and zero weights (kernel_graphs), directed and
undirected, both index dtypes, batches of 1, 63, 64 and more than one word of sources,
isolated sources and sources without out-edges, depth limits, every direction of the BFS,
long rows and hubs (the warp-cooperative scans), many levels (the level bit-planes past the
eight held in registers), real graphs of /work/shared/data, SSSP with integer and real weights,
cutoffs, negative weights and a negative cycle reachable from one source of a batch; and a
first call that compiles nothing.

Skipped where CuPy or a CUDA device is missing.
"""

import functools
import os
from pathlib import Path

import numpy as np
import pytest

from conftest import cupy_or_skip

cupy = cupy_or_skip()

pytest.importorskip("scipy.sparse")
from scipy.sparse import csgraph  # noqa: E402

import kernel_graphs  # noqa: E402
from gpipe.errors import NegativeCycleError  # noqa: E402
from gpipe.engine.compute import gpu  # noqa: E402
from kernel_graphs import INDEX_DTYPES, assert_tree, csr_rows, scipy_graph  # noqa: E402

pytestmark = pytest.mark.gpu

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
if not DATA.is_dir():
    DATA = Path("/work/shared/data")

random_edges = functools.partial(kernel_graphs.random_edges, integer=True)

DIRECTIONS = {
    "heuristic": {},
    "top-down": {"alpha": 0.0},
    "bottom-up": {"alpha": np.inf, "beta": np.inf, "gamma": np.inf},
}


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------


class Graph:
    """A test graph: host edges, its device CSR (and in-CSR), and SciPy's view of it."""

    def __init__(self, src, dst, w, n, index_dtype=np.int32):
        self.src, self.dst, self.w, self.n = src, dst, w, n
        indptr, indices, weights = csr_rows(src, dst, w, 0, n, index_dtype)
        self.indptr, self.indices = cupy.asarray(indptr), cupy.asarray(indices)
        self.weights = cupy.asarray(weights)
        in_indptr, in_indices, _ = csr_rows(dst, src, w, 0, n, index_dtype)
        self.in_indptr, self.in_indices = cupy.asarray(in_indptr), cupy.asarray(in_indices)
        self.scipy = scipy_graph(src, dst, w, n)
        self.scipy_hops = scipy_graph(src, dst, np.ones(src.size), n)


def scipy_hops(graph, sources):
    """(k, n) hops by SciPy, one source per row; -1 unreached."""
    d = csgraph.shortest_path(graph.scipy_hops, directed=True, unweighted=True, indices=sources)
    d = np.atleast_2d(d)
    return np.where(np.isinf(d), -1, d).astype(np.int32)


def scipy_lengths(graph, sources, negative=False):
    if negative:
        d = csgraph.bellman_ford(graph.scipy, directed=True, indices=sources)
    else:
        d = csgraph.dijkstra(graph.scipy, directed=True, indices=sources)
    return np.atleast_2d(d)


def pick_sources(graph, k, seed, extra=()):
    """k distinct sources: `extra` first, then random others."""
    rng = np.random.default_rng(seed)
    extra = list(extra)
    rest = np.setdiff1d(np.arange(graph.n), extra)
    return np.concatenate([np.array(extra, dtype=np.int64),
                           rng.choice(rest, k - len(extra), replace=False)]).astype(np.int64)


def check_bfs(graph, sources, depth_limit=-1, symmetric=False, in_edges=False, parents=True,
              **direction):
    """bfs_batch (and bfs_batch_parents) against SciPy per source; returns (dist, trace)."""
    trace = []
    extra = {"in_indptr": graph.in_indptr, "in_indices": graph.in_indices} if in_edges else {}
    dist = gpu.bfs_batch(graph.indptr, graph.indices, cupy.asarray(sources), depth_limit,
                         symmetric=symmetric, trace=trace, **extra, **direction)
    assert dist.dtype == cupy.int32 and dist.shape == (sources.size, graph.n)
    got = dist.get()
    want = scipy_hops(graph, sources)
    if depth_limit >= 0:
        want[want > depth_limit] = -1
    for i, s in enumerate(sources):
        np.testing.assert_array_equal(got[i], want[i], err_msg=f"row {i} (source {s})")
    if parents:
        for kwargs in ({"symmetric": symmetric, **extra}, {}):  # pull where it can, and push
            parent = gpu.bfs_batch_parents(graph.indptr, graph.indices, dist, cupy.asarray(sources),
                                           **kwargs)
            assert parent.dtype == cupy.int64 and parent.shape == dist.shape
            check_bfs_parents(graph, sources, got, parent.get())
    return got, trace


def check_bfs_parents(graph, sources, dist, parent):
    ones = np.ones(graph.src.size)
    for i, s in enumerate(sources):
        reached = dist[i] >= 0
        assert parent[i, s] == -1
        assert_tree(graph.src, graph.dst, ones, dist[i].astype(np.float64), parent[i], np.array([s]),
                    reached)


def check_sssp(graph, sources, symmetric=False, negative=False, exact=True, max_distance=None,
               **options):
    stats = {}
    dist, parent = gpu.sssp_batch(graph.indptr, graph.indices, graph.weights, cupy.asarray(sources),
                                  symmetric=symmetric, negative_weights=negative,
                                  max_distance=max_distance, stats=stats, **options)
    assert dist.dtype == cupy.float64 and parent.dtype == cupy.int64
    assert dist.shape == parent.shape == (sources.size, graph.n)
    dist, parent = dist.get(), parent.get()
    want = scipy_lengths(graph, sources, negative)
    if max_distance is not None:
        want[want > max_distance] = np.inf
    for i, s in enumerate(sources):
        if exact:
            np.testing.assert_array_equal(dist[i], want[i], err_msg=f"row {i} (source {s})")
        else:
            np.testing.assert_allclose(dist[i], want[i], rtol=1e-9, err_msg=f"row {i} (source {s})")
        assert parent[i, s] == -1
        assert_tree(graph.src, graph.dst, graph.w, dist[i], parent[i], np.array([s]),
                    np.isfinite(dist[i]), exact=exact)
    return dist, parent, stats


def random_graph(seed, directed, index_dtype=np.int32, n=300, m=1200, isolated=5, integer=True):
    """kernel_graphs.random_edges plus `isolated` vertices without edges (ids n .. n+isolated-1)."""
    src, dst, w = kernel_graphs.random_edges(seed, n=n, m=m, directed=directed, integer=integer)
    return Graph(src, dst, w, n + isolated, index_dtype)


def sinks(graph):
    """Vertices with in-edges but no out-edges."""
    out = np.bincount(graph.src, minlength=graph.n)
    into = np.bincount(graph.dst, minlength=graph.n)
    return np.flatnonzero((out == 0) & (into > 0))


def read_real(name, directed):
    pd = pytest.importorskip("pandas")
    path = DATA / f"{name}.parquet"
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    frame = pd.read_parquet(path)
    ids, inverse = np.unique(np.concatenate([frame.src.to_numpy(), frame.dst.to_numpy()]),
                             return_inverse=True)
    src, dst = inverse[:len(frame)].astype(np.int64), inverse[len(frame):].astype(np.int64)
    w = frame["weight"].to_numpy(np.float64) if "weight" in frame else np.ones(len(frame))
    keep = src != dst
    src, dst, w = src[keep], dst[keep], w[keep]
    if not directed:
        src, dst, w = np.concatenate([src, dst]), np.concatenate([dst, src]), np.concatenate([w, w])
    return Graph(src, dst, w, ids.size)


# ---------------------------------------------------------------------------------------------
# bfs_batch, bfs_batch_parents
# ---------------------------------------------------------------------------------------------


def test_widths():
    assert gpu.BFS_BATCH_WIDTH == 64 and gpu.SSSP_BATCH_WIDTH >= 1


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("k", [1, 63, 64, 65, 130])
@pytest.mark.parametrize("seed,directed", [(1, True), (2, False)])
def test_bfs_batch_matches_scipy(seed, directed, k, index_dtype):
    graph = random_graph(seed, directed, index_dtype)
    extra = [graph.n - 1]  # isolated
    if directed and sinks(graph).size:
        extra.append(int(sinks(graph)[0]))  # no out-edges
    sources = pick_sources(graph, k, seed, extra[:k])
    check_bfs(graph, sources, symmetric=not directed)


@pytest.mark.parametrize("direction", list(DIRECTIONS))
@pytest.mark.parametrize("seed,directed", [(3, True), (4, False)])
def test_bfs_batch_every_direction(seed, directed, direction):
    graph = random_graph(seed, directed, n=500, m=3000)
    sources = pick_sources(graph, 64, seed, [graph.n - 2])
    # Directed graphs run bottom-up only with their in-edges.
    _, trace = check_bfs(graph, sources, symmetric=not directed, in_edges=directed,
                         **DIRECTIONS[direction])
    bottom_up = np.array([t[1] for t in trace], dtype=bool)
    if direction == "top-down":
        assert not bottom_up.any()
    elif direction == "bottom-up":
        assert bottom_up.all()
    _, trace = check_bfs(graph, sources, symmetric=False, parents=False, **DIRECTIONS[direction])
    assert not any(t[1] for t in trace), "a bottom-up step without in-edges"


@pytest.mark.parametrize("direction", list(DIRECTIONS))
@pytest.mark.parametrize("depth_limit", [0, 1, 2])
@pytest.mark.parametrize("directed", [True, False])
def test_bfs_batch_depth_limit(depth_limit, directed, direction):
    graph = random_graph(5, directed, n=400, m=900)
    sources = pick_sources(graph, 64, 5, [graph.n - 1])
    dist, trace = check_bfs(graph, sources, depth_limit, symmetric=not directed, **DIRECTIONS[direction])
    assert dist.max() <= depth_limit and len(trace) <= depth_limit


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("symmetric", [True, False])
def test_bfs_batch_hubs_and_long_rows(symmetric, index_dtype):
    # Hubs adjacent to a third of the graph (rows far longer than a warp) among sparse edges:
    # the warp-cooperative bottom-up scans and parent searches, and top-down levels of more
    # edges than the grid has threads.
    rng = np.random.default_rng(6)
    n = 30_000
    hubs = np.array([0, 1, 2])
    hub_src = np.repeat(hubs, n // 3)
    hub_dst = rng.integers(0, n, hub_src.size)
    src = np.concatenate([hub_src, rng.integers(0, n, 60_000)])
    dst = np.concatenate([hub_dst, rng.integers(0, n, 60_000)])
    keep = src != dst
    src, dst = src[keep], dst[keep]
    if symmetric:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    graph = Graph(src.astype(np.int64), dst.astype(np.int64), np.ones(src.size), n, index_dtype)
    sources = pick_sources(graph, 64, 6, [0, 1, 2])
    for direction in DIRECTIONS.values():
        check_bfs(graph, sources, symmetric=symmetric, in_edges=not symmetric, **direction)


def test_bfs_batch_many_levels():
    # A path of 700 vertices: 699 levels from one end, so the level bit-planes grow past the
    # eight the distance kernel holds in registers (levels >= 256), and both ends at once.
    n = 700
    src = np.arange(n - 1, dtype=np.int64)
    dst = src + 1
    graph = Graph(np.concatenate([src, dst]), np.concatenate([dst, src]), np.ones(2 * (n - 1)), n)
    sources = np.array([0, n - 1, n // 2, 255, 256, 511, 512], dtype=np.int64)
    for direction in DIRECTIONS.values():
        dist, _ = check_bfs(graph, sources, symmetric=True, **direction)
        assert dist[0, -1] == n - 1


def test_bfs_batch_no_edges_and_empty_batches():
    n = 5
    indptr = cupy.zeros(n + 1, dtype=cupy.int64)
    indices = cupy.empty(0, dtype=cupy.int32)
    dist = gpu.bfs_batch(indptr, indices, cupy.array([3, 0]), -1, symmetric=True)
    assert dist.get().tolist() == [[-1, -1, -1, 0, -1], [0, -1, -1, -1, -1]]
    parent = gpu.bfs_batch_parents(indptr, indices, dist, cupy.array([3, 0]))
    assert (parent.get() == -1).all()
    empty = gpu.bfs_batch(indptr, indices, cupy.empty(0, dtype=cupy.int64), -1, symmetric=False)
    assert empty.shape == (0, n)
    assert gpu.bfs_batch_parents(indptr, indices, empty, cupy.empty(0, dtype=cupy.int64)).shape == (0, n)


def test_bfs_batch_dirty_memory():
    # Every output entry is written (no initialisation relied on): run on memory the pool
    # hands back dirty.
    graph = random_graph(7, False, n=2000, m=6000)
    sources = pick_sources(graph, 64, 7)
    junk = cupy.full(64 * graph.n * 3, 123456789, dtype=cupy.int64)
    del junk
    check_bfs(graph, sources, symmetric=True)
    check_bfs(graph, sources, symmetric=True)


@pytest.mark.parametrize("name,directed", [("roget", True), ("netscience", False),
                                           ("karate", True), ("luxembourg_osm", False)])
def test_bfs_batch_real_graphs(name, directed):
    graph = read_real(name, directed)
    k = 8 if name == "luxembourg_osm" else min(64, graph.n)  # 1,337 levels: a short check
    sources = pick_sources(graph, k, 8)
    check_bfs(graph, sources, symmetric=not directed)
    if directed:
        check_bfs(graph, sources, in_edges=True, parents=False)


# ---------------------------------------------------------------------------------------------
# sssp_batch
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("k", [1, 63, 64, 65])
@pytest.mark.parametrize("seed,directed", [(1, True), (2, False)])
def test_sssp_batch_matches_scipy(seed, directed, k, index_dtype):
    graph = random_graph(seed, directed, index_dtype)
    extra = [graph.n - 1]
    if directed and sinks(graph).size:
        extra.append(int(sinks(graph)[0]))
    sources = pick_sources(graph, k, seed, extra[:k])
    check_sssp(graph, sources, symmetric=not directed)
    if not directed:
        check_sssp(graph, sources, symmetric=False)  # the push repair on a symmetric graph


@pytest.mark.parametrize("delta", [None, np.inf, 0.5, 1e-9])
@pytest.mark.parametrize("directed", [True, False])
def test_sssp_batch_delta(delta, directed):
    # inf: Bellman-Ford passes; 1e-9: Dijkstra-like passes, many splits (zero weights included).
    graph = random_graph(3, directed, n=400, m=2000)
    sources = pick_sources(graph, 64, 3, [graph.n - 1])
    _, _, stats = check_sssp(graph, sources, symmetric=not directed, delta=delta)
    if delta == 1e-9:
        assert stats["splits"] > 0


@pytest.mark.parametrize("directed", [True, False])
def test_sssp_batch_sorted_queues(directed):
    graph = random_graph(15, directed, n=400, m=2500)
    check_sssp(graph, pick_sources(graph, 64, 15), symmetric=not directed, sort_queue=True)


@pytest.mark.parametrize("delta", [None, np.inf, 1e-9])
@pytest.mark.parametrize("k", [1, 5, 64])
@pytest.mark.parametrize("directed", [True, False])
def test_sssp_batch_shared_scans(directed, k, delta):
    # Queues of vertices with masks of sources (one row scan for all of them): same answers.
    graph = random_graph(16, directed, n=400, m=2500)
    sources = pick_sources(graph, k, 16, [graph.n - 1])
    check_sssp(graph, sources, symmetric=not directed, shared_scans=True, delta=delta)
    check_sssp(graph, sources, symmetric=not directed, shared_scans=True, max_distance=15.0)


def test_sssp_batch_shared_scans_negative_weights_and_cycles():
    src, dst, w = kernel_graphs.random_edges(12, n=300, m=1500, dag=True, integer=True)
    graph = Graph(src, dst, w, 300)
    check_sssp(graph, pick_sources(graph, 64, 12), negative=True, shared_scans=True)
    src = np.array([0, 1, 9, 10, 11, 12, 5], dtype=np.int64)
    dst = np.array([1, 2, 10, 11, 12, 10, 6], dtype=np.int64)
    w = np.array([1.0, 1.0, 1.0, 1.0, 1.0, -5.0, 2.0])
    graph = Graph(src, dst, w, 20)
    with pytest.raises(NegativeCycleError) as caught:
        gpu.sssp_batch(graph.indptr, graph.indices, graph.weights, cupy.array([0, 5, 9, 3]),
                       symmetric=False, negative_weights=True, shared_scans=True)
    assert caught.value.source_index == 2


def test_sssp_batch_real_weights():
    graph = random_graph(4, True, n=500, m=4000, integer=False)
    check_sssp(graph, pick_sources(graph, 64, 4), exact=False)


@pytest.mark.parametrize("max_distance", [0.0, 5.0, 25.0])
@pytest.mark.parametrize("directed", [True, False])
def test_sssp_batch_max_distance(max_distance, directed):
    graph = random_graph(5, directed, n=300, m=1500)
    check_sssp(graph, pick_sources(graph, 40, 5), symmetric=not directed, max_distance=max_distance)


def test_sssp_batch_zero_weight_cycles_keep_a_tree():
    # Zero-weight cycles everywhere: a parent must still lead back to the source.
    rng = np.random.default_rng(9)
    n = 2000
    src, dst = rng.integers(0, n, 8000), rng.integers(0, n, 8000)
    keep = src != dst
    src, dst = src[keep].astype(np.int64), dst[keep].astype(np.int64)
    w = np.where(rng.random(src.size) < 0.7, 0.0, 1.0)
    graph = Graph(np.concatenate([src, dst]), np.concatenate([dst, src]), np.concatenate([w, w]), n)
    sources = pick_sources(graph, 64, 9)
    check_sssp(graph, sources, symmetric=True)
    check_sssp(graph, sources, symmetric=False)


@pytest.mark.parametrize("symmetric", [True, False])
def test_sssp_batch_hubs(symmetric):
    rng = np.random.default_rng(10)
    n = 20_000
    src = np.concatenate([np.zeros(n // 2, dtype=np.int64), rng.integers(0, n, 40_000)])
    dst = np.concatenate([rng.integers(0, n, n // 2), rng.integers(0, n, 40_000)])
    keep = src != dst
    src, dst = src[keep], dst[keep]
    w = rng.integers(1, 21, src.size).astype(np.float64)
    if symmetric:
        src, dst, w = np.concatenate([src, dst]), np.concatenate([dst, src]), np.concatenate([w, w])
    graph = Graph(src.astype(np.int64), dst.astype(np.int64), w, n)
    check_sssp(graph, pick_sources(graph, 64, 10, [0]), symmetric=symmetric)


@pytest.mark.parametrize("name,directed", [("rome99", True), ("netscience", False)])
def test_sssp_batch_real_graphs(name, directed):
    graph = read_real(name, directed)
    check_sssp(graph, pick_sources(graph, 64, 11), symmetric=not directed, exact=False)


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_sssp_batch_negative_weights(index_dtype):
    src, dst, w = kernel_graphs.random_edges(12, n=300, m=1500, dag=True, integer=True)
    graph = Graph(src, dst, w, 300, index_dtype)
    check_sssp(graph, pick_sources(graph, 64, 12), negative=True)


def test_sssp_batch_negative_weights_max_distance():
    # max_distance is Dijkstra's cutoff with negative weights too (issue 23): a candidate above
    # it is dropped, so a path that climbs above it and comes back is not taken; the reference
    # is a plain Bellman-Ford with that rule.
    src, dst, w = kernel_graphs.random_edges(13, n=300, m=1500, dag=True, integer=True)
    graph = Graph(src, dst, w, 300)
    sources = pick_sources(graph, 64, 13)
    dist, parent = gpu.sssp_batch(graph.indptr, graph.indices, graph.weights, cupy.asarray(sources),
                                  symmetric=False, negative_weights=True, max_distance=4.0)
    dist, parent = dist.get(), parent.get()
    for i, s in enumerate(sources):
        want = kernel_graphs.bounded_bellman_ford(graph.src, graph.dst, graph.w, graph.n, [s], 4.0)
        np.testing.assert_array_equal(dist[i], want, err_msg=f"row {i} (source {s})")
        assert_tree(graph.src, graph.dst, graph.w, dist[i], parent[i], np.array([s]), np.isfinite(dist[i]))
    assert np.isinf(dist).any() and (dist < 0).any()


def test_sssp_batch_negative_cycle_names_its_source():
    # A negative cycle 10 -> 11 -> 12 -> 10 reachable only from vertex 9; the batch's row of
    # source 9 is named, whichever other sources share the batch.
    src = np.array([0, 1, 9, 10, 11, 12, 5], dtype=np.int64)
    dst = np.array([1, 2, 10, 11, 12, 10, 6], dtype=np.int64)
    w = np.array([1.0, 1.0, 1.0, 1.0, 1.0, -5.0, 2.0])
    graph = Graph(src, dst, w, 20)
    sources = np.array([0, 5, 9, 3], dtype=np.int64)
    with pytest.raises(NegativeCycleError) as caught:
        gpu.sssp_batch(graph.indptr, graph.indices, graph.weights, cupy.asarray(sources),
                       symmetric=False, negative_weights=True)
    assert caught.value.source_index == 2
    # Without source 9 the cycle is out of reach: the same answers as the graph without it.
    sources = np.array([0, 5, 3], dtype=np.int64)
    dist, parent = gpu.sssp_batch(graph.indptr, graph.indices, graph.weights, cupy.asarray(sources),
                                  symmetric=False, negative_weights=True)
    acyclic = Graph(np.append(src[:2], 5), np.append(dst[:2], 6), np.append(w[:2], 2.0), 20)
    np.testing.assert_array_equal(dist.get(), scipy_lengths(acyclic, sources))
    for i, s in enumerate(sources):
        assert_tree(src, dst, w, dist.get()[i], parent.get()[i], np.array([s]),
                    np.isfinite(dist.get()[i]))


def test_sssp_batch_empty_and_no_edges():
    n = 4
    indptr = cupy.zeros(n + 1, dtype=cupy.int64)
    indices = cupy.empty(0, dtype=cupy.int32)
    weights = cupy.empty(0, dtype=cupy.float64)
    dist, parent = gpu.sssp_batch(indptr, indices, weights, cupy.array([2, 0]), symmetric=False)
    assert dist.get().tolist() == [[np.inf, np.inf, 0.0, np.inf], [0.0, np.inf, np.inf, np.inf]]
    assert (parent.get() == -1).all()
    dist, parent = gpu.sssp_batch(indptr, indices, weights, cupy.empty(0, dtype=cupy.int64),
                                  symmetric=True)
    assert dist.shape == parent.shape == (0, n)


# ---------------------------------------------------------------------------------------------
# The checks shared with the CPU kernels' tests (tests/kernel_graphs.py of branch i16-each;
# skipped until that branch is merged)
# ---------------------------------------------------------------------------------------------


def _shared(name):
    check = getattr(kernel_graphs, name, None)
    if check is None:
        pytest.skip(f"kernel_graphs.{name} is not here (it comes with the CPU batch kernels)")
    return check


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("directed", [True, False], ids=["directed", "undirected"])
@pytest.mark.parametrize("k, depth_limit", [(1, -1), (64, -1), (150, -1), (40, 2), (64, 0)])
def test_shared_bfs_batch_checks(index_dtype, directed, k, depth_limit):
    _shared("check_bfs_batch")(gpu, cupy.asarray, cupy.asnumpy, index_dtype, directed, k, depth_limit)


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
@pytest.mark.parametrize("directed", [True, False], ids=["directed", "undirected"])
@pytest.mark.parametrize("max_distance", [None, 12.0])
def test_shared_sssp_batch_checks(index_dtype, directed, max_distance):
    _shared("check_sssp_batch")(gpu, cupy.asarray, cupy.asnumpy, index_dtype, directed, 37, max_distance)


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_shared_sssp_batch_float32_weights_checks(index_dtype):
    """kernels/sssp_batch.cu's <Index, float> instantiations: weights stored as float32."""
    _shared("check_sssp_batch")(gpu, cupy.asarray, cupy.asnumpy, index_dtype, False, 37, None,
                                weight_dtype=np.float32)
    _shared("check_sssp_batch_negative")(gpu, cupy.asarray, cupy.asnumpy, index_dtype, weight_dtype=np.float32)


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_shared_sssp_batch_negative_checks(index_dtype):
    _shared("check_sssp_batch_negative")(gpu, cupy.asarray, cupy.asnumpy, index_dtype)
    _shared("check_sssp_batch_negative_cycle")(gpu, cupy.asarray, index_dtype)


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_shared_sssp_batch_negative_max_distance_checks(index_dtype):
    # issue 23: the cutoff drops candidates in the relaxation (the CPU twin runs the same checks)
    _shared("check_sssp_batch_negative_max_distance")(gpu, cupy.asarray, cupy.asnumpy, index_dtype)
    _shared("check_sssp_batch_bounded_negative_cycle")(gpu, cupy.asarray, cupy.asnumpy, index_dtype)


# ---------------------------------------------------------------------------------------------
# A first call compiles nothing
# ---------------------------------------------------------------------------------------------

_FIRST_BATCH = """
import cupy
from gpipe.engine.compute import gpu
indptr = cupy.array([0, 2, 3, 4, 4], dtype=cupy.int64)
indices = cupy.array([1, 2, 3, 0], dtype=cupy.int32)
weights = cupy.array([1.0, 4.0, 1.0, 1.0])
sources = cupy.array([0, 2], dtype=cupy.int64)
dist = gpu.bfs_batch(indptr, indices, sources, -1, symmetric=False)
parent = gpu.bfs_batch_parents(indptr, indices, dist, sources)
sdist, sparent = gpu.sssp_batch(indptr, indices, weights, sources, symmetric=False)
print([dist.get().tolist(), parent.get().tolist(), sdist.get().tolist(), sparent.get().tolist()])
"""


def test_a_first_batch_call_compiles_nothing(tmp_path):
    """bfs_batch, bfs_batch_parents and sssp_batch with an empty CuPy cache: CuPy saves the
    source of everything it compiles (CUPY_CACHE_SAVE_CUDA_SOURCE), and nothing is saved."""
    import subprocess
    import sys

    cache = tmp_path / "cupy-cache"
    env = {**os.environ, "CUPY_CACHE_DIR": str(cache), "CUPY_CACHE_SAVE_CUDA_SOURCE": "1"}
    done = subprocess.run([sys.executable, "-c", _FIRST_BATCH], env=env, capture_output=True,
                          text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    inf = float("inf")
    # 0 -> 1 (1), 0 -> 2 (4), 1 -> 3 (1), 2 -> 0 (1); sources 0 and 2.
    assert eval(done.stdout.strip(), {"inf": inf}) == [
        [[0, 1, 1, 2], [1, 2, 0, 3]],
        [[-1, 0, 0, 1], [2, 0, -1, 1]],
        [[0.0, 1.0, 4.0, 2.0], [1.0, 2.0, 0.0, 3.0]],
        [[-1, 0, 0, 1], [2, 0, -1, 1]],
    ], done.stdout
    saved = list(cache.rglob("*.cu")) if cache.exists() else []
    heads = "\n\n".join(p.read_text(errors="replace")[:600] for p in saved)
    assert not saved, f"CuPy compiled {len(saved)} kernels at first use:\n{heads}"


def test_compiled_at_first_use_gives_the_shipped_answers(monkeypatch):
    """Where no shipped binary serves the device, the sources compile at first use (CuPy's
    NVRTC) and give the same tables."""
    from gpipe.engine.compute import cuda, cuda_sources

    graph = random_graph(14, False, n=500, m=3000)
    sources = cupy.asarray(pick_sources(graph, 64, 14))

    def run():
        dist = gpu.bfs_batch(graph.indptr, graph.indices, sources, -1, symmetric=True)
        parent = gpu.bfs_batch_parents(graph.indptr, graph.indices, dist, sources, symmetric=True)
        sdist, _ = gpu.sssp_batch(graph.indptr, graph.indices, graph.weights, sources, symmetric=True)
        return dist.get(), parent.get(), sdist.get()

    shipped = run()
    cuda.loaded_module.cache_clear()
    monkeypatch.setattr(cuda_sources, "shipped_binary", lambda *args: None)
    try:
        jit = run()
    finally:
        cuda.loaded_module.cache_clear()
    np.testing.assert_array_equal(shipped[0], jit[0])
    np.testing.assert_array_equal(shipped[2], jit[2])
    check_bfs_parents(graph, sources.get(), jit[0], jit[1])
