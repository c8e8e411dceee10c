"""``gpipe warmup`` (gpipe/tools/warmup.py): after it, a new process's queries compile nothing.

One test, in subprocesses with their own empty ``NUMBA_CACHE_DIR``: ``gpipe warmup`` fills
the cache, then a fresh process builds small graphs and runs the queries a user runs (BFS
and SSSP, directed and undirected, int32 and int64 ids, a depth limit, several sources,
negative weights, weights stored as float32; one owner and, on a cluster of threads, two), listening to Numba's
``numba:compile`` events, which fire only for a real compilation (a function found in the
cache fires none). Any compilation fails the test with the function's name and argument
types: a caller that passes another type than the declared signatures
(gpipe/engine/compute/cpu_jit.py) shows here. The process also counts the cache hits of gpipe's
kernels, so that a query that never reached Numba could not pass for a warm one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

QUERIES = r"""
import json
import dask.dataframe as dd
import numpy as np
import pandas as pd
from numba.core import event

compiled = []

class Compiles(event.Listener):
    def on_start(self, ev):
        compiled.append(f"{ev.data['dispatcher'].py_func.__qualname__}{ev.data['args']}")

    def on_end(self, ev):
        pass

event.register("numba:compile", Compiles())

import gpipe
from gpipe.engine.compute import cpu_jit
from gpipe.generators import kronecker_edges

edges = kronecker_edges(8, weights=True, seed=3)
source = int(edges["src"].iloc[0])
for ids in ("int64", "int32"):
    frame = dd.from_pandas(edges.astype({"src": ids, "dst": ids}), npartitions=2)
    for directed in (False, True):
        graph = gpipe.Graph.from_edges(frame, directed=directed, weight="weight")
        assert len(graph.bfs(source)) == len(graph.sssp(source)) > 0
        graph.bfs([source, int(edges["dst"].iloc[0])], depth_limit=2).compute()
        graph.sssp(source).compute()

rng = np.random.default_rng(0)
src = rng.integers(0, 200, 1000)
dst = rng.integers(0, 200, 1000)
keep = src < dst  # a DAG: negative weights without a negative cycle
negative = pd.DataFrame({"src": src[keep], "dst": dst[keep], "weight": rng.uniform(-5, 10, keep.sum())})
graph = gpipe.Graph.from_edges(dd.from_pandas(negative, npartitions=1), directed=True, weight="weight")
graph.sssp(int(negative["src"].min())).compute()

# Weights stored as float32 (integers below 2**24: the automatic choice), one owner.
small = edges.astype({"weight": "int64"})
negative32 = negative.assign(weight=negative["weight"].round().astype("int64"))
for frame, start in ((small, source), (negative32, int(negative["src"].min()))):
    graph = gpipe.Graph.from_edges(dd.from_pandas(frame, npartitions=1), directed=True, weight="weight")
    assert graph.weight_dtype == "float32"
    graph.sssp(start).compute()

# Several owners: a cluster of threads, so that its kernels run (and would compile) here.
from distributed import Client, LocalCluster

with LocalCluster(n_workers=2, processes=False, threads_per_worker=1, dashboard_address=None) as cluster, \
        Client(cluster):
    frame = dd.from_pandas(edges, npartitions=2)
    graph = gpipe.Graph.from_edges(frame, directed=False, weight="weight", partitions=2)
    assert graph.num_partitions == 2
    assert len(graph.bfs(source)) == len(graph.sssp(source)) > 0
    frame = dd.from_pandas(negative, npartitions=2)
    graph = gpipe.Graph.from_edges(frame, directed=True, weight="weight", partitions=2)
    graph.sssp(int(negative["src"].min())).compute()
    for frame, start in ((small, source), (negative32, int(negative["src"].min()))):
        graph = gpipe.Graph.from_edges(dd.from_pandas(frame, npartitions=2), directed=True, weight="weight",
                                       partitions=2)
        assert graph.weight_dtype == "float32"
        graph.sssp(start).compute()

hits = sum(sum(d.stats.cache_hits.values()) for d, _ in cpu_jit.ENTRY_POINTS)
print(json.dumps({"compiled": compiled, "cache_hits": hits}))
"""


def _run(args, cache_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, *args], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=280)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_after_warmup_a_new_process_compiles_nothing(tmp_path):
    cache = tmp_path / "numba"
    printed = _run(["-m", "gpipe", "warmup"], cache)
    assert "_delta_stepping" in printed and "top_down_parallel" in printed
    assert "GPU: skipped" in printed or "GPU: done" in printed
    assert any(cache.rglob("*.nbi")), "warmup wrote no Numba cache index"

    after = json.loads(_run(["-c", QUERIES], cache).strip().splitlines()[-1])
    assert after["compiled"] == [], "compiled after gpipe warmup:\n" + "\n".join(after["compiled"])
    assert after["cache_hits"] > 0
