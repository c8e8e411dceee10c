"""Device smoke check and timing of the batch kernels (issue 16) on a Kronecker graph.

    python -m gpipe.tools.gpu_batch_check                     # kron22, 1,024 BFS / 64 SSSP sources
    python -m gpipe.tools.gpu_batch_check --scale 16 --sources 128 --sssp-sources 64
    python -m gpipe.tools.gpu_batch_check --delta-factors 0.25,0.5,2,4   # SSSP delta sweep
    python -m gpipe.tools.gpu_batch_check --sort-queue --shared-scans    # SSSP variants

Builds a Graph500 Kronecker graph on the GPU (undirected, or ``--directed`` with its in-edges),
then for random sources that have edges:

* checks ``--check`` rows of :func:`~gpipe.engine.compute.gpu_batch.bfs_batch` and
  :func:`~gpipe.engine.compute.gpu_batch.sssp_batch` against the single-source kernels
  (:func:`gpipe.engine.compute.gpu.bfs`, :func:`gpipe.engine.compute.gpu.sssp`; integer weights, so the
  sums are exact), and the parents of those rows (sampled vertices: the parent is a neighbour
  one hop or one weight nearer);
* times (CUDA events, after one warm-up batch) ``bfs_batch`` over all ``--sources`` in batches
  of :data:`BFS_BATCH_WIDTH`, ``bfs_batch_parents`` of one batch, ``sssp_batch`` of
  ``--sssp-sources`` sources, and the single-source kernels on the checked sources, and
  prints milliseconds per source and the memory pool's peak.

Exit status 1 when a check fails. Diagnostics only; ``gpipe bench`` owns recorded numbers.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import cupy

from gpipe import generators
from gpipe.engine.compute import gpu
from gpipe.engine.compute.gpu_csr import build_csr


def _elapsed_ms(run):
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    out = run()
    stop.record()
    stop.synchronize()
    return cupy.cuda.get_elapsed_time(start, stop), out


def _graph(scale, directed, seed):
    edges = generators.kronecker_edges(scale, weights=True, xp="cupy", frame=False, seed=seed)
    n = 1 << scale
    src, dst, w = edges["src"], edges["dst"], edges["weight"]
    indptr, indices, weights = build_csr(src, dst, w, n, "int32", symmetric=not directed, skip_loops=True)
    extra = {}
    if directed:
        in_indptr, in_indices, _ = build_csr(dst, src, w, n, "int32", skip_loops=True)
        extra = {"in_indptr": in_indptr, "in_indices": in_indices}
    return n, indptr, indices, weights, extra


def _parents_ok(indptr_h, indices_h, weights_h, dist_row, parent_row, source, rng, weighted):
    """Sampled vertices of one row: the parent is an in-neighbour one step nearer (undirected or
    out-edge check: u -> v is in u's row)."""
    reached = np.flatnonzero(np.isfinite(dist_row) & (dist_row >= 0))
    if parent_row[source] != -1:
        return False
    sample = rng.choice(reached, min(2000, reached.size), replace=False)
    for v in sample:
        if v == source:
            continue
        u = int(parent_row[v])
        if u < 0:
            return False
        row = slice(indptr_h[u], indptr_h[u + 1])
        hits = np.flatnonzero(indices_h[row] == v)
        if hits.size == 0:
            return False
        step = weights_h[row][hits] if weighted else np.ones(hits.size)
        if not (dist_row[u] + step == dist_row[v]).any():
            return False
    return True


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpipe.tools.gpu_batch_check",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=int, default=22)
    parser.add_argument("--sources", type=int, default=1024, help="BFS sources (default 1024)")
    parser.add_argument("--sssp-sources", type=int, default=64)
    parser.add_argument("--check", type=int, default=4, help="rows checked against single-source")
    parser.add_argument("--directed", action="store_true")
    parser.add_argument("--delta-factors", default="",
                        help="also time sssp_batch with these multiples of the default delta, "
                             "e.g. 0.25,0.5,2,4")
    parser.add_argument("--sort-queue", action="store_true",
                        help="also time sssp_batch with each relax pass's queue sorted")
    parser.add_argument("--shared-scans", action="store_true",
                        help="also time sssp_batch with (source, vertex) pair queues, against the "
                             "default shared edge scans (vertex queues)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    symmetric = not args.directed

    started = time.perf_counter()
    n, indptr, indices, weights, extra = _graph(args.scale, args.directed, args.seed)
    indptr_h, indices_h, weights_h = indptr.get(), indices.get(), weights.get()
    print(f"kron{args.scale} {'directed' if args.directed else 'undirected'}: n = {n:,}, "
          f"nnz = {indices.size:,} (built in {time.perf_counter() - started:.1f} s)")
    rng = np.random.default_rng(args.seed)
    with_edges = np.flatnonzero(np.diff(indptr_h) > 0)
    count = max(args.sources, args.sssp_sources)
    sources = rng.choice(with_edges, min(count, with_edges.size), replace=False).astype(np.int64)
    sources_d = cupy.asarray(sources)
    failures = []

    # ---- BFS: warm-up batch (loads the kernels), then every batch timed
    width = gpu.BFS_BATCH_WIDTH
    gpu.bfs_batch(indptr, indices, sources_d[:width], symmetric=symmetric, **extra)
    bfs_sources = sources_d[:args.sources]
    total = 0.0
    for lo in range(0, bfs_sources.size, width):
        ms, batch = _elapsed_ms(lambda: gpu.bfs_batch(indptr, indices, bfs_sources[lo:lo + width],
                                                      symmetric=symmetric, **extra))
        total += ms
        del batch
    print(f"bfs_batch: {bfs_sources.size} sources in {total:.1f} ms = "
          f"{total / bfs_sources.size:.4f} ms per source (batches of {width})")
    first = bfs_sources[:width]
    ms, dist = _elapsed_ms(lambda: gpu.bfs_batch(indptr, indices, first, symmetric=symmetric, **extra))
    pms, parent = _elapsed_ms(lambda table=dist: gpu.bfs_batch_parents(
        indptr, indices, table, first, symmetric=symmetric, **extra))
    print(f"bfs_batch one batch of {first.size}: {ms:.2f} ms; bfs_batch_parents: {pms:.2f} ms")
    dist_h, parent_h = dist.get(), parent.get()
    if symmetric or extra:  # bottom-up steps possible: time each direction rule on this batch
        for name, switches in (("heuristic", {}), ("top-down only", {"alpha": 0.0}),
                               ("bottom-up from level 0", {"alpha": np.inf, "beta": np.inf,
                                                           "gamma": np.inf})):
            trace = []
            dms, other = _elapsed_ms(lambda: gpu.bfs_batch(indptr, indices, first, symmetric=symmetric,
                                                           trace=trace, **switches, **extra))
            same = np.array_equal(other.get(), dist_h)
            del other
            steps = " ".join(f"{'BU' if t[1] else 'TD'}({t[2]:,}v,{t[3]:,}e)" for t in trace)
            print(f"  {name}: {dms:.2f} ms, same: {same}; levels: {steps}")
            if not same:
                failures.append(f"bfs_batch {name} differs from the default")
    single = 0.0
    for i in range(min(args.check, first.size)):
        sms, (one, _) = _elapsed_ms(lambda: gpu.bfs(indptr, indices, first[i:i + 1], symmetric=symmetric))
        single += sms
        if not np.array_equal(one.get(), dist_h[i]):
            failures.append(f"bfs_batch row {i} (source {sources[i]}) differs from gpu.bfs")
        if not _parents_ok(indptr_h, indices_h, weights_h, dist_h[i], parent_h[i], sources[i], rng,
                           False):
            failures.append(f"bfs_batch_parents row {i} (source {sources[i]}) has a bad parent")
    if args.check:
        print(f"gpu.bfs single source: {single / min(args.check, first.size):.3f} ms per source")
    del dist, parent

    # ---- SSSP
    sssp_sources = sources_d[:args.sssp_sources]
    gpu.sssp_batch(indptr, indices, weights, sssp_sources[:2], symmetric=symmetric)  # loads
    stats = {}
    ms, (sdist, sparent) = _elapsed_ms(lambda: gpu.sssp_batch(indptr, indices, weights, sssp_sources,
                                                              symmetric=symmetric, stats=stats))
    print(f"sssp_batch: {sssp_sources.size} sources in {ms:.1f} ms = "
          f"{ms / sssp_sources.size:.3f} ms per source; {stats}")
    sdist_h, sparent_h = sdist.get(), sparent.get()
    del sdist, sparent
    variants = (("sorted queues of pairs", {"sort_queue": True, "shared_scans": False}, args.sort_queue),
                ("(source, vertex) pairs", {"shared_scans": False}, args.shared_scans))
    for name, option, wanted in variants:
        if not wanted:
            continue
        stats = {}
        ms, out = _elapsed_ms(lambda: gpu.sssp_batch(indptr, indices, weights, sssp_sources,
                                                     symmetric=symmetric, stats=stats, **option))
        same = np.array_equal(out[0].get(), sdist_h)
        del out
        print(f"  {name}: {ms:.1f} ms = {ms / sssp_sources.size:.3f} ms per source; {stats}; "
              f"same distances: {same}")
        if not same:
            failures.append(f"sssp_batch with {name} differs")
    if args.delta_factors:
        from gpipe.engine.compute.gpu_sssp import default_delta

        base = default_delta(indptr, weights)
        for factor in (float(f) for f in args.delta_factors.split(",")):
            stats = {}
            ms, out = _elapsed_ms(lambda: gpu.sssp_batch(indptr, indices, weights, sssp_sources,
                                                         symmetric=symmetric, delta=base * factor,
                                                         stats=stats))
            same = np.array_equal(out[0].get(), sdist_h)
            del out
            print(f"  delta = {factor:g} x default ({base * factor:.3g}): {ms:.1f} ms = "
                  f"{ms / sssp_sources.size:.3f} ms per source; {stats}; same distances: {same}")
            if not same:
                failures.append(f"sssp_batch with delta {base * factor} differs")
    single = 0.0
    for i in range(min(args.check, sssp_sources.size)):
        sms, (one, _) = _elapsed_ms(lambda: gpu.sssp(indptr, indices, weights, sssp_sources[i:i + 1],
                                                     symmetric=symmetric))
        single += sms
        if not np.array_equal(one.get(), sdist_h[i]):
            failures.append(f"sssp_batch row {i} (source {sources[i]}) differs from gpu.sssp")
        if not _parents_ok(indptr_h, indices_h, weights_h, sdist_h[i], sparent_h[i], sources[i], rng,
                           True):
            failures.append(f"sssp_batch row {i} (source {sources[i]}) has a bad parent")
    if args.check:
        print(f"gpu.sssp single source: {single / min(args.check, sssp_sources.size):.3f} ms per source")
    pool = cupy.get_default_memory_pool()
    print(f"memory pool: {pool.total_bytes() / 2**30:.2f} GiB held (peak of the run)")
    for failure in failures:
        print("FAILED:", failure)
    print("ok" if not failures else f"{len(failures)} check(s) failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
