"""The fixed-size BFS levels of gpipe.engine.owners.bfs_levels over NCCL without Dask (BENCHMARKS.md,
issue 32): one process per GPU, a kron graph split as Layout does, per-level host and device
times. Run on the GPU machine from the repository root.
Usage: python probe_levels.py NGPUS SCALE [noise]   (noise: a Python thread that competes
for the GIL the way a worker's event loop may)"""
import json
import multiprocessing as mp
import sys
import threading
import time


class Channel:
    def __init__(self, owner):
        self.owner, self.key, self.timeout = owner, "probe", 600.0

    def check(self):
        pass


class Quiet:
    def start(self, *a):
        pass

    def level(self, *a):
        pass


def worker(rank, n, scale, noise, q, out):
    import cupy as cp
    import numpy as np
    from cupy.cuda import nccl

    cp.cuda.Device(rank).use()
    from gpipe.engine.owners.bfs import Thresholds
    from gpipe.engine.owners.bfs_levels import bfs_levels_arrays
    from gpipe.engine.owners.nccl import NcclTransport
    from gpipe.engine.partition import Layout, build_partition
    from gpipe.generators import kronecker_edges

    cols = kronecker_edges(scale, xp=cp, frame=False, id_dtype="int32", shuffle=False, seed=1)
    src, dst = cols["src"], cols["dst"]
    keep = src != dst
    src, dst = src[keep], dst[keep]
    src, dst = cp.concatenate([src, dst]), cp.concatenate([dst, src])
    degree = cp.bincount(src, minlength=2 ** scale)
    candidates = cp.flatnonzero(degree > 0).get()
    sources = np.random.default_rng(3).choice(candidates, 5, replace=False)
    layout = Layout(n=2 ** scale, n_owners=n)
    lo, size = layout.offset(rank), layout.size(rank)
    mine = (src >= lo) & (src < lo + size)
    part = build_partition("gpu", layout, rank, False, False, None,
                           [(src[mine], dst[mine], None, None, False, None)])
    del src, dst, mine, cols
    cp.get_default_memory_pool().free_all_blocks()
    from gpipe.engine.compute import gpu as gpu_kernels
    spent = {}

    def timed(owner, name):
        fn = getattr(owner, name)

        def wrapper(*a, **k):
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                spent[name] = spent.get(name, 0.0) + time.perf_counter() - t
        setattr(owner, name, wrapper)

    for name in ("bfs_owner_mark", "bfs_owner_resolve", "bfs_owner_level_begin"):
        timed(gpu_kernels, name)
    uid = q.get()
    comm = nccl.NcclCommunicator(n, uid, rank)
    transport = NcclTransport(comm, "probe", Channel(rank), n)
    for name in ("gather_slices", "swap_slices", "gather_counters", "marker"):
        timed(transport, name)
    stop = threading.Event()
    if noise:
        def busy():
            while not stop.is_set():
                sum(range(2000))
                time.sleep(0.0005)
        threading.Thread(target=busy, daemon=True).start()
    runs = []
    with transport.running():
        for i, s in enumerate([sources[0]] + list(sources)):
            local = np.array([s - lo]) if lo <= s < lo + size else np.empty(0, np.int64)
            transport._wait()
            spent.clear()
            t0 = time.perf_counter()
            dist, parent, stats = bfs_levels_arrays(transport, part, layout, local, None,
                                                    Thresholds(), Quiet(), device_times=True)
            transport._wait()
            t1 = time.perf_counter()
            if i:
                runs.append({"ms": (t1 - t0) * 1e3, "labels": stats.labels,
                             "frontier": stats.frontier,
                             "spent_us": {k: round(v * 1e6) for k, v in spent.items()},
                             "host_us": [round(x * 1e6, 1) for x in stats.kernel_s],
                             "wait_us": [round(x * 1e6, 1) for x in stats.wait_s],
                             "device_us": [round(x * 1e6, 1) for x in stats.device_s]})
    stop.set()
    out.put((rank, runs))


if __name__ == "__main__":
    n, scale = int(sys.argv[1]), int(sys.argv[2])
    noise = len(sys.argv) > 3
    ctx = mp.get_context("spawn")
    q, out = ctx.Queue(), ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, n, scale, noise, q, out)) for r in range(n)]
    for p in procs:
        p.start()
    from cupy.cuda import nccl
    uid = nccl.get_unique_id()
    for _ in range(n):
        q.put(uid)
    results = dict(out.get() for _ in range(n))
    for p in procs:
        p.join()
    print(json.dumps({"n": n, "scale": scale, "noise": noise,
                      "ms": [[round(r["ms"], 3) for r in results[k]] for k in sorted(results)],
                      "rank0": results[0]}, indent=None))
