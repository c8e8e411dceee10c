"""First queries answered by SciPy while Numba compiles (gpipe/engine/compute/cpu_scipy.py, issue 23 item 7).

The SciPy answers against the Numba kernels and plain references on small random graphs:
equal distances and valid trees (parents as global ids, -1 and +inf where unreached), with
``depth_limit``, ``max_distance``, several sources, ``parents=False``, negative weights and a
negative cycle (gpipe.NegativeCycleError); then through ``Graph.bfs``/``Graph.sssp`` with the
SciPy path forced, and in a fresh process with an empty Numba cache, whose first queries must
compile nothing on the calling thread.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import gpipe
import kernel_graphs as kg
import reference
from gpipe.engine import traverse
from gpipe.engine.compute import cpu, cpu_scipy

ROOT = Path(__file__).resolve().parents[1]
N = 300


def graph(seed, index_dtype, directed=True, dag=False):
    src, dst, w = kg.random_edges(seed, n=N, directed=directed, dag=dag, integer=True)
    if dag:  # integer weights, a third of them negative: sums stay exact
        w = np.where(w < 0, -np.ceil(-w / 4), w)
    indptr, indices, weights = kg.csr_rows(src, dst, w, 0, N, index_dtype)
    return (src, dst, w), (indptr, indices, weights)


def some_sources(seed, k):
    return np.random.default_rng(seed).choice(N, k, replace=False).astype(np.int64)


# --- the SciPy answers against the Numba kernels -----------------------------------------------


@pytest.mark.parametrize("index_dtype", kg.INDEX_DTYPES)
@pytest.mark.parametrize("directed", [True, False])
@pytest.mark.parametrize("k", [1, 4])
@pytest.mark.parametrize("depth_limit", [-1, 0, 2])
def test_bfs_matches_the_numba_kernel(index_dtype, directed, k, depth_limit):
    (src, dst, w), (indptr, indices, _) = graph(k + 7 * (depth_limit + 1), index_dtype, directed)
    sources = some_sources(k, k)
    dist, parent = cpu_scipy.bfs(indptr, indices, sources, depth_limit)
    expected, _ = cpu.bfs(indptr, indices, sources, depth_limit, symmetric=not directed)
    assert dist.dtype == np.int32 and parent.dtype == np.int64
    np.testing.assert_array_equal(dist, expected)
    reached = dist >= 0
    kg.assert_tree(src, dst, np.ones_like(w), dist.astype(np.float64), parent, sources, reached)
    again, none = cpu_scipy.bfs(indptr, indices, sources, depth_limit, parents=False)
    assert none is None
    np.testing.assert_array_equal(again, expected)


@pytest.mark.parametrize("index_dtype", kg.INDEX_DTYPES)
@pytest.mark.parametrize("directed", [True, False])
@pytest.mark.parametrize("k", [1, 4])
@pytest.mark.parametrize("max_distance", [None, 0.0, 15.0])
def test_sssp_matches_delta_stepping(index_dtype, directed, k, max_distance):
    (src, dst, w), (indptr, indices, weights) = graph(11 + k, index_dtype, directed)
    sources = some_sources(k, k)
    dist, parent = cpu_scipy.sssp(indptr, indices, weights, sources, max_distance=max_distance)
    expected, _ = cpu.delta_stepping(indptr, indices, weights, sources, max_distance=max_distance)
    assert dist.dtype == np.float64 and parent.dtype == np.int64
    np.testing.assert_array_equal(dist, expected)
    kg.assert_tree(src, dst, w, dist, parent, sources, np.isfinite(dist))
    if max_distance is not None:
        assert dist[np.isfinite(dist)].max() <= max_distance
    again, none = cpu_scipy.sssp(indptr, indices, weights, sources, max_distance=max_distance,
                                 parents=False)
    assert none is None
    np.testing.assert_array_equal(again, expected)


@pytest.mark.parametrize("index_dtype", kg.INDEX_DTYPES)
@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("max_distance", [None, 4.0])
def test_negative_weights_match_bellman_ford(index_dtype, k, max_distance):
    (src, dst, w), (indptr, indices, weights) = graph(5, index_dtype, dag=True)
    assert (w < 0).any()
    sources = some_sources(3 + k, k)
    bound = np.inf if max_distance is None else max_distance
    dist, parent = cpu_scipy.sssp(indptr, indices, weights, sources, negative_weights=True,
                                  max_distance=max_distance)
    expected = kg.bounded_bellman_ford(src, dst, w, N, sources, bound)
    np.testing.assert_array_equal(dist, expected)
    kg.assert_tree(src, dst, w, dist, parent, sources, np.isfinite(dist))
    numba_dist, _ = traverse.bellman_ford(_partition(indptr, indices, weights), cpu,
                                           sources, True, bound)
    np.testing.assert_array_equal(dist, numba_dist)
    again, none = cpu_scipy.sssp(indptr, indices, weights, sources, negative_weights=True,
                                 max_distance=max_distance, parents=False)
    assert none is None
    np.testing.assert_array_equal(again, expected)


def test_a_short_path_that_climbs_above_the_cutoff_is_not_taken():
    # 0 -> 1 (2), 1 -> 3 (-1): with max_distance 1, 1 is beyond it and 3 is not reached through it.
    src, dst, w = np.array([0, 1]), np.array([1, 3]), np.array([2.0, -1.0])
    indptr, indices, weights = kg.csr_rows(src, dst, w, 0, 4, np.int64)
    dist, parent = cpu_scipy.sssp(indptr, indices, weights, np.array([0]), negative_weights=True,
                                  max_distance=1.0)
    np.testing.assert_array_equal(dist, [0.0, np.inf, np.inf, np.inf])
    np.testing.assert_array_equal(parent, [-1, -1, -1, -1])


def test_a_reachable_negative_cycle_raises_gpipes_error():
    # 0 -> 1 -> 2 -> 1 with 1 -> 2 -> 1 of weight -1; 3 -> 4 reaches no cycle.
    src, dst, w = np.array([0, 1, 2, 3]), np.array([1, 2, 1, 4]), np.array([1.0, -3.0, 2.0, 1.0])
    indptr, indices, weights = kg.csr_rows(src, dst, w, 0, 5, np.int32)
    with pytest.raises(gpipe.NegativeCycleError, match="negative-weight cycle"):
        cpu_scipy.sssp(indptr, indices, weights, np.array([0]), negative_weights=True)
    with pytest.raises(gpipe.NegativeCycleError):
        cpu_scipy.sssp(indptr, indices, weights, np.array([3, 0]), negative_weights=True)
    dist, parent = cpu_scipy.sssp(indptr, indices, weights, np.array([3]), negative_weights=True)
    np.testing.assert_array_equal(dist, [np.inf, np.inf, np.inf, 0.0, 1.0])
    np.testing.assert_array_equal(parent, [-1, -1, -1, -1, 3])
    # The cycle lies beyond a cutoff of 0.5 (0 -> 1 costs 1): the bounded search never reaches it.
    dist, _ = cpu_scipy.sssp(indptr, indices, weights, np.array([0]), negative_weights=True,
                             max_distance=0.5)
    np.testing.assert_array_equal(dist, [0.0, np.inf, np.inf, np.inf, np.inf])


def test_an_undirected_negative_edge_is_a_negative_cycle():
    src, dst, w = np.array([0, 1, 1, 2]), np.array([1, 0, 2, 1]), np.array([2.0, 2.0, -1.0, -1.0])
    indptr, indices, weights = kg.csr_rows(src, dst, w, 0, 3, np.int64)
    with pytest.raises(gpipe.NegativeCycleError):
        cpu_scipy.sssp(indptr, indices, weights, np.array([0]), negative_weights=True)


def test_no_vertex_no_source_and_isolated_sources():
    indptr, indices = np.zeros(4, dtype=np.int64), np.zeros(0, dtype=np.int32)
    dist, parent = cpu_scipy.bfs(indptr, indices, np.array([2, 0]))
    np.testing.assert_array_equal(dist, [0, -1, 0])
    np.testing.assert_array_equal(parent, [-1, -1, -1])
    dist, parent = cpu_scipy.sssp(indptr, indices, np.zeros(0), np.array([1]))
    np.testing.assert_array_equal(dist, [np.inf, 0.0, np.inf])
    dist, parent = cpu_scipy.sssp(indptr, indices, np.zeros(0), np.array([1]), negative_weights=True)
    np.testing.assert_array_equal(dist, [np.inf, 0.0, np.inf])


def _partition(indptr, indices, weights):
    from gpipe.engine.partition import Partition

    n = indptr.shape[0] - 1
    return Partition("cpu", 0, 0, n, n, indptr, indices, weights, None)


# --- which path answers --------------------------------------------------------------------------


def test_ready_kernels_keep_the_numba_path(monkeypatch):
    monkeypatch.delenv(cpu_scipy.ENVIRONMENT, raising=False)
    monkeypatch.setattr(cpu_scipy, "ready", lambda dispatcher, signature: True)
    assert not cpu_scipy.answers("bfs", np.int32)
    monkeypatch.setattr(cpu_scipy, "ready", lambda dispatcher, signature: False)
    queued = []
    monkeypatch.setattr(cpu_scipy.COMPILER, "submit", queued.extend)
    assert cpu_scipy.answers("sssp", np.int64)
    assert [d.py_func.__name__ for d, _ in queued] == [
        name for _, names in cpu_scipy.QUERY_KERNELS["sssp"] for name in names]
    assert queued[0][1][1] == cpu_scipy_index_type(np.int64)
    assert not cpu_scipy.answers("bfs", np.int32, cpu_scipy.MAX_EDGES + 1)  # SciPy: too slow
    monkeypatch.setenv(cpu_scipy.ENVIRONMENT, "numba")
    assert not cpu_scipy.answers("bfs", np.int32)


def cpu_scipy_index_type(dtype):
    from gpipe.engine.compute import cpu_jit

    return cpu_jit.INT64S if np.dtype(dtype) == np.int64 else cpu_jit.INT32S


def test_each_kind_names_declared_kernels():
    from gpipe.engine.compute import cpu_jit

    declared = {id(d): signatures for d, signatures in cpu_jit.ENTRY_POINTS}
    for kind in cpu_scipy.QUERY_KERNELS:
        for dtype in (np.int32, np.int64):
            needed = cpu_scipy.kernel_signatures(kind, np.dtype(dtype))
            assert needed, kind
            for dispatcher, signature in needed:
                assert signature in declared[id(dispatcher)]
                if len(declared[id(dispatcher)]) > 1:  # one per index dtype
                    assert signature[1] == cpu_scipy_index_type(dtype)


@pytest.fixture
def scipy_answers(monkeypatch):
    """Every one-owner CPU query answered by SciPy (as in a fresh environment), nothing compiled
    in the background; yields the list of the kinds answered."""
    answered = []
    monkeypatch.delenv(cpu_scipy.ENVIRONMENT, raising=False)
    monkeypatch.setattr(cpu_scipy, "ready", lambda dispatcher, signature: False)
    monkeypatch.setattr(cpu_scipy.COMPILER, "submit", lambda pairs: None)
    real = cpu_scipy.answers
    monkeypatch.setattr(cpu_scipy, "answers",
                        lambda kind, *args: real(kind, *args) and (answered.append(kind) or True))
    return answered


def _tree_rule(rows, edges, *, weight=None, directed):
    """Every reached non-source vertex's parent is reached and closes its distance along an edge."""
    rows = rows.set_index("vertex")
    weights = {}
    w = edges[weight] if weight else pd.Series(1.0, index=edges.index)
    for u, v, x in zip(edges["src"], edges["dst"], w):
        weights.setdefault((u, v), set()).add(float(x))
        if not directed:
            weights.setdefault((v, u), set()).add(float(x))
    for v, row in rows[rows["parent"].notna()].iterrows():
        p = int(row["parent"])
        assert pd.notna(rows.loc[p, "distance"]), f"parent {p} of {v} is unreached"
        assert any(float(rows.loc[p, "distance"]) + x == float(row["distance"])
                   for x in weights.get((p, v), ())), f"no edge {p} -> {v} closes the distance"
    assert rows.loc[rows["distance"].isna(), "parent"].isna().all()


@pytest.mark.parametrize("directed", [True, False])
def test_graph_queries_answered_by_scipy(scipy_answers, directed):
    edges = reference.random_edges(120, 400, seed=4, weights="nonnegative", ids="sparse")
    weight = "weight"
    g = gpipe.Graph.from_edges(edges, directed=directed, weight=weight)
    sources = reference.pick_sources(edges, 3, seed=1)
    for depth_limit in (None, 2):
        result = g.bfs(sources, depth_limit=depth_limit).compute()
        expected = reference.expected_bfs(edges, sources, directed=directed, depth_limit=depth_limit)
        reference.assert_distances(result, expected)
        _tree_rule(result, edges, directed=directed)
    result = g.sssp(sources[:1]).compute()
    reference.assert_distances(result, reference.expected_networkx(edges, sources[:1], directed=directed,
                                                                   weight=weight))
    _tree_rule(result, edges, weight=weight, directed=directed)
    cut = g.sssp(sources, max_distance=20.0).compute()
    full = reference.expected_sssp(edges, sources, directed=directed)
    reference.assert_distances(cut, full.where(full <= 20.0))
    _tree_rule(cut, edges, weight=weight, directed=directed)
    bare = g.bfs(sources, parents=False).compute()
    assert "parent" not in bare.columns
    assert scipy_answers == ["bfs", "bfs", "sssp", "sssp", "bfs"]
    assert cpu_scipy.ANSWERED["bfs"] >= 3 and cpu_scipy.ANSWERED["sssp"] >= 2


def test_graph_negative_weights_answered_by_scipy(scipy_answers):
    edges = reference.random_edges(60, 200, seed=2, weights="dag_negative")
    g = gpipe.Graph.from_edges(edges, directed=True, weight="weight")
    source = reference.widest_source(edges, directed=True)
    result = g.sssp(source).compute()
    reference.assert_distances(result, reference.expected_networkx(edges, [source], directed=True,
                                                                   weight="weight"))
    _tree_rule(result, edges, weight="weight", directed=True)
    bounded = g.sssp(source, max_distance=3.0).compute()
    _tree_rule(bounded, edges, weight="weight", directed=True)
    full = reference.expected_networkx(edges, [source], directed=True, weight="weight")
    got = reference.result_distances(bounded)
    assert (got.dropna() <= 3.0).all() and (got.dropna() >= full[got.dropna().index]).all()
    assert scipy_answers == ["sssp-negative", "sssp-negative"]
    far = int(result.loc[result["parent"].notna(), "vertex"].iloc[0])  # reached from source
    cycle = pd.concat([edges, pd.DataFrame({"src": [far], "dst": [source], "weight": [-1000.0]})])
    with pytest.raises(gpipe.NegativeCycleError):
        gpipe.Graph.from_edges(cycle, directed=True, weight="weight").sssp(source).compute()
    assert scipy_answers == ["sssp-negative"] * 3


# --- a fresh process, an empty Numba cache ---------------------------------------------------------

FRESH = textwrap.dedent(r"""
    import json, threading, time
    from numba.core import event

    on_caller = []

    class Compiles(event.Listener):
        def on_start(self, ev):
            if threading.current_thread() is threading.main_thread():
                on_caller.append(ev.data["dispatcher"].py_func.__qualname__)

        def on_end(self, ev):
            pass

    event.register("numba:compile", Compiles())
    import numpy as np
    import pandas as pd
    import gpipe
    from gpipe.engine.compute import cpu_scipy

    edges = pd.DataFrame({"src": [0, 1, 2, 0], "dst": [1, 2, 3, 3], "weight": [1.0, 2.0, 1.0, 5.0]})
    graph = gpipe.Graph.from_edges(edges, directed=True, weight="weight")
    built = len(on_caller)
    t0 = time.perf_counter()
    bfs = graph.bfs(0).compute().sort_values("vertex")
    sssp = graph.sssp(0).compute().sort_values("vertex")
    print(json.dumps({"compiled_by_queries": on_caller[built:], "seconds": time.perf_counter() - t0,
                      "bfs": bfs["distance"].tolist(), "sssp": sssp["distance"].tolist(),
                      "compiling": cpu_scipy.compiling()}))
""")


def test_a_fresh_process_answers_its_first_queries_without_compiling(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    env.pop(cpu_scipy.ENVIRONMENT, None)
    done = subprocess.run([sys.executable, "-c", FRESH], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr  # exits cleanly with the compiler thread running
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["compiled_by_queries"] == []
    assert got["bfs"] == [0, 1, 2, 1] and got["sssp"] == [0.0, 1.0, 3.0, 4.0]
    assert got["compiling"]


READY = textwrap.dedent("""
    import json
    import numpy as np
    from gpipe.engine.compute import cpu, cpu_scipy
    print(json.dumps({kind: all(cpu_scipy.ready(d, s)
                                for d, s in cpu_scipy.kernel_signatures(kind, np.dtype(np.int32)))
                      for kind in ("bfs", "sssp")}))
""")


def test_a_process_shorter_than_its_compilations_leaves_the_cache_whole(tmp_path):
    """The first process exits while its first queries' kernels still compile; a detached
    process finishes them into the cache, so a later process finds every one of them there
    (issue 34: processes of ~3 s used to leave 6-9 of 39 cache files, and every later process
    compiled the rest again)."""
    import time

    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    env.pop(cpu_scipy.ENVIRONMENT, None)
    done = subprocess.run([sys.executable, "-c", FRESH], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1])["compiling"]  # it left work behind
    deadline = time.monotonic() + 240
    while True:
        check = subprocess.run([sys.executable, "-c", READY], env=env, cwd=ROOT, capture_output=True,
                               text=True, timeout=120)
        assert check.returncode == 0, check.stderr
        ready = json.loads(check.stdout.strip().splitlines()[-1])
        if all(ready.values()) or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert ready == {"bfs": True, "sssp": True}
