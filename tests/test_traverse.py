"""Driver-level behaviour: the parent-cycle check behind NegativeCycleError; the level loop of
a BFS over several owners (its owners run as threads here), against SciPy."""

import numpy as np

from gpipe.engine.outcome import cycle_check_due as _cycle_check_due, has_parent_cycle as _has_parent_cycle


def test_forest_has_no_parent_cycle():
    parent = np.array([-1, 0, 1, 1, -1, 4])
    assert not _has_parent_cycle("cpu", parent)


def test_a_loop_anywhere_is_found_also_across_owners():
    parent = np.array([-1, 0, 3, 4, 2, 2])  # 2 -> 3 -> 4 -> 2
    assert _has_parent_cycle("cpu", parent)
    assert _has_parent_cycle("cpu", parent[:3], parent[3:])


def test_cycle_checks_run_at_powers_of_two():
    assert [r for r in range(1, 200) if _cycle_check_due(r)] == [16, 32, 64, 128]


# ---------------------------------------------------------------------------------------------
# BFS over several owners: the real owner loop (gpipe.engine.owners.bfs.bfs_owner_arrays), its owners
# run in threads of this process that pass their messages through a peers.Mailbox (the
# DaskTransport over an in-process channel), against SciPy.
# ---------------------------------------------------------------------------------------------

import math  # noqa: E402
import threading  # noqa: E402
from dataclasses import replace  # noqa: E402

import pytest  # noqa: E402

import kernel_graphs  # noqa: E402
from gpipe import InputError  # noqa: E402
from gpipe.engine.owners import bfs as owners_bfs  # noqa: E402
from gpipe.engine.owners import peers  # noqa: E402
from gpipe.engine.owners.dask_comms import DaskTransport  # noqa: E402
from gpipe.engine.partition import Layout, build_partition  # noqa: E402

MIXED = {"alpha": 1e9, "beta": 1e-9, "gamma": 1e9}  # change direction at every chance


class ThreadChannel:
    """What DaskTransport needs of a gpipe.engine.owners.peers.Channel, for owners that are threads."""

    def __init__(self, mailbox, owner, n_owners):
        self.mailbox, self.owner = mailbox, owner
        self.peers = [q for q in range(n_owners) if q != owner]

    def exchange(self, tag, payloads):
        for q in self.peers:
            self.mailbox.put(q, tag, self.owner, payloads[q])
        return self.mailbox.take(self.owner, tag, self.peers, timeout=60)


def owner_parts(src, dst, n, n_owners, directed, backend="cpu"):
    """Every owner's Partition of the graph, as the build makes them."""
    layout = Layout(n=n, n_owners=n_owners)
    xp = gpipe_backend(backend).xp
    parts = []
    for p in range(n_owners):
        lo, size = layout.offset(p), layout.size(p)
        mine = (src >= lo) & (src < lo + size)
        parts.append(build_partition(backend, layout, p, directed, False, None,
                                     [(xp.asarray(src[mine]), xp.asarray(dst[mine]), None, None, False, None)]))
    return parts


def owner_bfs(src, dst, n, n_owners, directed, sources, depth_limit=None, direction="auto",
              backend="cpu", levels="fixed", pairs=None, parts=None):
    """Global (dist, parent) on the host and every owner's stats, from owners run as threads
    (``pairs``: ``Thresholds.pairs`` where not None; ``parts``: the owners' partitions, made
    here when None)."""
    layout = Layout(n=n, n_owners=n_owners)
    parts = parts or owner_parts(src, dst, n, n_owners, directed, backend)
    thresholds = replace(owners_bfs.bfs_thresholds(direction), levels=levels)
    if pairs is not None:
        thresholds = replace(thresholds, pairs=pairs)
    mailbox, results, errors = peers.Mailbox(), [None] * n_owners, []
    owners = layout.owner_of(np.asarray(sources))

    def run(p):
        try:
            transport = DaskTransport(ThreadChannel(mailbox, p, n_owners), n_owners, backend)
            results[p] = owners_bfs.bfs_owner_arrays(
                transport, parts[p], layout,
                np.asarray(sources)[owners == p] - layout.offset(p), depth_limit, thresholds)
        except BaseException as error:  # noqa: BLE001 (re-raised below)
            errors.append(error)
            for q in range(n_owners):
                mailbox.put(q, peers.ABORT, p, None)

    threads = [threading.Thread(target=run, args=(p,)) for p in range(n_owners)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    real = [e for e in errors if not isinstance(e, peers.PeerAborted)]
    if real:
        raise real[0]
    to_host = gpipe_backend(backend).to_host
    dist = np.concatenate([to_host(r[0]) for r in results])
    parent = np.concatenate([to_host(r[1]) for r in results])
    return dist, parent, [r[2] for r in results]


def gpipe_backend(name):
    from gpipe.engine import backend as backends

    return backends.get(name)


def check_owner_bfs(src, dst, n, n_owners, directed, sources, depth_limit=None, direction="auto",
                    backend="cpu", levels="fixed", pairs=None, parts=None):
    """owner_bfs against SciPy (distances, cut at depth_limit) and the tree check; the stats."""
    dist, parent, stats = owner_bfs(src, dst, n, n_owners, directed, sources, depth_limit,
                                    direction, backend, levels, pairs, parts)
    unit = np.ones(src.size)
    want = kernel_graphs.scipy_bfs_dist(kernel_graphs.scipy_graph(src, dst, unit, n), np.unique(sources))
    if depth_limit is not None:
        want[want > depth_limit] = -1
    np.testing.assert_array_equal(dist, want)
    kernel_graphs.assert_tree(src, dst, unit, dist, parent, sources, dist >= 0)
    for s in stats:  # every owner took the same directions and saw the same frontiers
        assert s.labels == stats[0].labels and s.frontier == stats[0].frontier
        assert s.steps == len(s.labels) == len(s.bytes_sent) == len(s.wait_s)
    levels = [d for d, f in zip(stats[0].labels, stats[0].frontier) if f > 0]
    return stats[0], levels


DIRECTION_CASES = ["auto", "top-down", "bottom-up", "mixed"]


def owner_bfs_cases(backend):
    """Random graphs, directed and undirected, two and three owners, every direction rule."""
    marks = [pytest.mark.gpu] if backend == "gpu" else []
    return [pytest.param(seed, directed, n_owners, direction, marks=marks,
                         id=f"{backend}-{'directed' if directed else 'undirected'}-{n_owners}-{direction}")
            for seed, directed in [(1, True), (2, False)] for n_owners in (2, 3)
            for direction in DIRECTION_CASES]


def check_owner_bfs_case(seed, directed, n_owners, direction, backend, monkeypatch=None):
    n = 300
    src, dst, _ = kernel_graphs.random_edges(seed, n=n, m=900, directed=directed)
    rule = MIXED if direction == "mixed" else direction
    # Directed graphs have only the queued loop; the fixed-size levels' top-down levels send
    # bitmaps (pairs=0), pairs (inf) or, by default, whichever takes fewer bytes.
    loops = [("queued", None)] if directed else [("fixed", 0.0), ("fixed", None), ("fixed", math.inf),
                                                 ("queued", None)]
    for (loop, pairs), sources in [(loop, s) for loop in loops
                                   for s in (np.array([7]), np.array([3, 150, 3, 299]))]:
        stats, levels = check_owner_bfs(src, dst, n, n_owners, directed, sources, direction=rule,
                                        backend=backend, levels=loop, pairs=pairs)
        assert levels[0] == owners_bfs.TOP_DOWN
        if directed or direction == "top-down":
            assert set(levels) == {owners_bfs.TOP_DOWN}
        elif direction == "bottom-up":
            assert set(levels[1:]) == {owners_bfs.BOTTOM_UP}
        elif direction == "mixed":
            # Both ways, and back: every bottom-up phase that ends goes top-down again.
            changes = [(a, b) for a, b in zip(levels, levels[1:]) if a != b]
            assert (owners_bfs.TOP_DOWN, owners_bfs.BOTTOM_UP) in changes
            assert (owners_bfs.BOTTOM_UP, owners_bfs.TOP_DOWN) in changes
        if loop == "queued":  # one step, two where a bottom-up message turned back
            assert all(m in (1, 2) for m in stats.messages)
        else:  # fixed-size levels: gather, swap (top-down bitmaps only), counters
            top_down = {0.0: [3], None: [2, 3], math.inf: [2]}[pairs]
            assert all(m in (top_down if d == owners_bfs.TOP_DOWN else [2])
                       for d, m in zip(stats.labels, stats.messages))


@pytest.mark.parametrize("seed,directed,n_owners,direction", owner_bfs_cases("cpu"))
def test_owner_bfs_matches_scipy(seed, directed, n_owners, direction):
    check_owner_bfs_case(seed, directed, n_owners, direction, "cpu")


@pytest.mark.parametrize("direction", DIRECTION_CASES)
@pytest.mark.parametrize("depth_limit", [0, 1, 2, 4])
def test_owner_bfs_depth_limit(depth_limit, direction):
    n = 400
    src, dst, _ = kernel_graphs.random_edges(3, n=n, m=900, directed=False)
    rule = MIXED if direction == "mixed" else direction
    for sources in (np.array([0]), np.array([0, 42, 399])):
        stats, _ = check_owner_bfs(src, dst, n, 3, False, sources, depth_limit, rule)
        assert stats.steps <= depth_limit


@pytest.mark.parametrize("direction", DIRECTION_CASES)
def test_owner_bfs_grid_and_empty_owners(direction):
    # A grid's many levels cross the owners' boundaries; with 5 owners of 64-id chunks on 216
    # vertices, owner 4 holds none and still takes part in every exchange.
    from gpipe.generators import grid_edges

    rule = MIXED if direction == "mixed" else direction
    side = 6
    edges = grid_edges(side)
    src, dst = edges.src.to_numpy(), edges.dst.to_numpy()
    src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    assert Layout(n=side**3, n_owners=5).size(4) == 0
    stats, _ = check_owner_bfs(src, dst, side**3, 5, False, np.array([0]), direction=rule)
    assert stats.steps >= 3 * (side - 1)


def test_owner_bfs_sources_without_edges_and_a_lone_vertex():
    n = 200
    src, dst = np.array([1, 2, 150, 2]), np.array([2, 150, 199, 1])  # 0 and most ids have no edge
    for directed in (True, False):
        s, d = (src, dst) if directed else (np.concatenate([src, dst]), np.concatenate([dst, src]))
        for sources in (np.array([0]), np.array([0, 1]), np.array([199, 199])):
            check_owner_bfs(s, d, n, 2, directed, sources)


@pytest.mark.parametrize("backend", ["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def test_owner_bfs_workspace_is_kept_and_not_shared(backend, request):
    # The fixed-size levels keep each partition's arrays from one traversal to the next (a
    # query allocates only its results), and two traversals of the same partitions at once
    # each get arrays of their own: every result still matches SciPy.
    from gpipe.engine.owners import bfs_levels

    if backend == "gpu":
        request.getfixturevalue("gpu_arrays")
    n = 400
    src, dst, _ = kernel_graphs.random_edges(5, n=n, m=1200, directed=False)
    parts = owner_parts(src, dst, n, 3, False, backend)
    check_owner_bfs(src, dst, n, 3, False, np.array([0]), backend=backend, parts=parts)
    kept = [bfs_levels.WORKSPACES[id(p)] for p in parts]
    for sources in (np.array([399]), np.array([7, 200])):
        check_owner_bfs(src, dst, n, 3, False, sources, backend=backend, parts=parts,
                        direction=MIXED)
        assert [bfs_levels.WORKSPACES[id(p)] for p in parts] == kept
        assert not any(w.busy or w.dist is not None for w in kept)  # results handed over
    errors = []

    def traverse(sources):
        try:
            check_owner_bfs(src, dst, n, 3, False, sources, backend=backend, parts=parts)
        except BaseException as error:  # noqa: BLE001 (raised below)
            errors.append(error)

    threads = [threading.Thread(target=traverse, args=(np.array([s]),)) for s in (1, 150, 333)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors[0]
    del parts, kept
    import gc

    gc.collect()
    assert not bfs_levels.WORKSPACES  # gone with their partitions


def test_owner_bfs_stats_count_the_bytes_sent():
    n = 300
    src, dst, _ = kernel_graphs.random_edges(2, n=n, m=900, directed=False)
    _, _, stats = owner_bfs(src, dst, n, 2, False, np.array([7]), direction="bottom-up", pairs=0.0)
    layout = Layout(n=n, n_owners=2)  # chunks of 192 ids: bitmap slots of 3 int64 words
    slot_bytes = 8 * (layout.chunk // 64)
    for s in stats:
        levels = list(zip(s.labels, s.bytes_sent, s.messages))
        # Top-down: the frontier's slot gathered and the marks' slot swapped; bottom-up: gathered.
        assert levels[0] == (owners_bfs.TOP_DOWN, 2 * slot_bytes, 3)
        assert levels[1:] and all(level == (owners_bfs.BOTTOM_UP, slot_bytes, 2) for level in levels[1:])
        assert all(t >= 0 for t in s.kernel_s + s.wait_s)
        assert s.device_s == []  # Dask's comms do not time the device


def test_owner_bfs_directed_stats_count_the_candidates_sent():
    n = 300
    src, dst, _ = kernel_graphs.random_edges(2, n=n, m=900, directed=True)
    _, _, stats = owner_bfs(src, dst, n, 2, True, np.array([7]))
    for s in stats:
        assert set(s.labels) == {owners_bfs.TOP_DOWN}
        assert all(b % 8 == 0 for b in s.bytes_sent)  # int32 (target, parent) pairs
        assert sum(s.bytes_sent) > 0


def test_the_level_loop_from_dask_config():
    import dask

    assert owners_bfs.bfs_thresholds().levels == "auto"
    auto = owners_bfs.Thresholds()
    assert auto.fixed_levels("gpu") and not auto.fixed_levels("cpu")
    for setting, cpu, gpu in (("fixed", True, True), ("queued", False, False)):
        with dask.config.set({owners_bfs.LEVELS_KEY: setting}):
            chosen = owners_bfs.bfs_thresholds()
            assert (chosen.fixed_levels("cpu"), chosen.fixed_levels("gpu")) == (cpu, gpu)
    with dask.config.set({owners_bfs.LEVELS_KEY: "sideways"}):
        with pytest.raises(InputError, match="bfs-levels"):
            owners_bfs.bfs_thresholds()


def test_bfs_thresholds_from_dask_config():
    import dask

    assert owners_bfs.bfs_thresholds() == owners_bfs.Thresholds()
    with dask.config.set({owners_bfs.DIRECTION_KEY: "top-down"}):
        assert owners_bfs.bfs_thresholds().alpha == 0
    with dask.config.set({owners_bfs.DIRECTION_KEY: {"beta": 2}}):
        assert owners_bfs.bfs_thresholds() == owners_bfs.Thresholds(beta=2.0)
    for wrong in ("sideways", {"delta": 1}, 3):
        with pytest.raises(InputError, match="bfs-direction"):
            owners_bfs.bfs_thresholds(wrong)
    top_down, bottom_up = owners_bfs.DIRECTIONS["top-down"], owners_bfs.DIRECTIONS["bottom-up"]
    assert not top_down.go_bottom_up(10**9, 0, 10)
    assert bottom_up.go_bottom_up(1, 10**9, 10) and not bottom_up.go_bottom_up(0, 10**9, 10)
    assert bottom_up.stay_bottom_up(1, 10**9, 10)


@pytest.fixture
def gpu_arrays(monkeypatch):
    """The GPU backend with CuPy and the GPU kernels only (no cuDF frames are needed here)."""
    cupy = pytest.importorskip("cupy")
    from gpipe.engine import backend as backends

    monkeypatch.setattr(backends, "gpu_backend",
                        lambda: backends.Backend(backends.GPU, cupy, None, "gpipe.engine.compute.gpu", "gpipe.engine.strings_gpu"))


@pytest.mark.parametrize("seed,directed,n_owners,direction", owner_bfs_cases("gpu"))
def test_owner_bfs_matches_scipy_on_gpu(seed, directed, n_owners, direction, gpu_arrays):
    check_owner_bfs_case(seed, directed, n_owners, direction, "gpu")


@pytest.mark.parametrize("backend", [pytest.param("cpu"), pytest.param("gpu", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("direction", DIRECTION_CASES)
def test_owner_bfs_larger_graph(backend, direction, request):
    # Frontiers of many thousand vertices (the GPU's grid-stride loops), isolated vertices, and
    # with the heuristic a switch to bottom-up and back on its own.
    if backend == "gpu":
        request.getfixturevalue("gpu_arrays")
    n = 100_000
    rng = np.random.default_rng(8)
    src, dst = rng.integers(0, n, 350_000), rng.integers(0, n, 350_000)
    keep = (src != dst) & (src % 7 != 0) & (dst % 7 != 0)  # every 7th vertex isolated
    src, dst = np.concatenate([src[keep], dst[keep]]), np.concatenate([dst[keep], src[keep]])
    rule = MIXED if direction == "mixed" else direction
    stats, levels = check_owner_bfs(src, dst, n, 3, False, np.array([1, 5000]), direction=rule,
                                    backend=backend)
    if direction == "auto":
        # GAPBS's shape, top-down, bottom-up, top-down, decided on every level's exact counts.
        shape = "".join(d[0] for d in levels)
        assert shape.strip("t") and set(shape.strip("t")) == {"b"} and shape[0] == shape[-1] == "t"
        # The first levels' few out-edges go as pairs (gather, counters), a larger top-down
        # frontier's as bitmaps (gather, swap, counters).
        assert stats.messages[0] == 2 and 3 in stats.messages
        assert all(m in ((2, 3) if d == owners_bfs.TOP_DOWN else (2,))
                   for d, m in zip(stats.labels, stats.messages))
