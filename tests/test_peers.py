"""Owner-to-owner messages: the mailbox's waiting rules; owner tasks on the 2-worker cluster
that fail, stall, cannot deliver, or run two traversals at once on one-thread workers; owners
sharing one process (a threaded cluster); BFS over two and three owners in every direction rule
(gpipe.bfs-direction), with the per-level statistics; three owners checked against SciPy
(test_api's SSSP cases, negative cycles); and the per-step reports of SSSP's owners."""

import threading
import time

import dask
import pytest

import gpipe
import reference
from conftest import Engine
from gpipe.engine import execution, traverse
from gpipe.engine.owners import bfs as owners_bfs
from gpipe.engine.owners import messages, peers
from test_api import SSSP_CASES, run_sssp, sssp_case


def test_take_returns_payloads_in_sender_order_once_all_are_in():
    box = peers.Mailbox()
    box.put("k", 3, 2, "from two")
    later = threading.Timer(0.05, box.put, args=("k", 3, 0, "from zero"))
    later.start()
    assert box.take("k", 3, [0, 2], timeout=5) == ["from zero", "from two"]
    later.join()


def test_take_keeps_tags_and_traversals_apart():
    box = peers.Mailbox()
    box.put("k", 1, 0, "level one")
    box.put("other", 0, 0, "another traversal")
    box.put("k", 0, 0, "level zero")
    assert box.take("k", 0, [0], timeout=1) == ["level zero"]
    assert box.take("k", 1, [0], timeout=1) == ["level one"]


def test_take_names_the_silent_owner_when_it_times_out():
    box = peers.Mailbox()
    box.put("k", 0, 1, "here")
    with pytest.raises(TimeoutError, match=r"owner\(s\) \[2\]"):
        box.take("k", 0, [1, 2], timeout=0.05)


def test_an_abort_wakes_a_waiting_owner():
    box = peers.Mailbox()
    threading.Timer(0.05, box.put, args=("k", peers.ABORT, 1, None)).start()
    start = time.monotonic()
    with pytest.raises(peers.PeerAborted, match="owner 1"):
        box.take("k", 0, [1], timeout=30)
    assert time.monotonic() - start < 10


def test_boxes_keep_the_owners_of_one_process_apart():
    """Workers of a threaded cluster share the mailbox: one owner finishing must not drop
    what has come, or is still to come, for another."""
    box = peers.Mailbox()
    box.put(("k", 0), 5, 1, "for owner 0")
    box.put(("k", 1), 5, 0, "for owner 1")
    assert box.take(("k", 0), 5, [1], timeout=1) == ["for owner 0"]
    box.close(("k", 0))
    box.put(("k", 1), 6, 0, "later, for owner 1")
    assert box.take(("k", 1), 5, [0], timeout=1) == ["for owner 1"]
    assert box.take(("k", 1), 6, [0], timeout=1) == ["later, for owner 1"]


def test_messages_to_a_closed_box_are_dropped():
    box = peers.Mailbox()
    box.put("k", 0, 1, "read")
    box.close("k")
    box.put("k", 1, 1, "late")
    box.put("k", peers.ABORT, 1, None)
    box.raise_if_aborted("k")  # the abort is dropped too
    for tag in (0, 1):  # what came before the close, and after it
        with pytest.raises(TimeoutError):
            box.take("k", tag, [1], timeout=0.01)


# --- owner tasks on the 2-worker LocalCluster ---------------------------------------------


def _two_exchanges(channel, fail_on, stall_s):
    """Each owner stalls ``stall_s[owner]`` seconds, exchanges its number with every peer,
    and then, unless it is owner ``fail_on`` (which raises), exchanges again."""
    time.sleep(stall_s[channel.owner])
    first = channel.exchange(0, [channel.owner] * len(channel.addresses))
    if channel.owner == fail_on:
        raise ArithmeticError(f"owner {channel.owner} fails on purpose")
    return first + channel.exchange(1, [10 * channel.owner] * len(channel.addresses))


@pytest.fixture
def cluster(dask_client2):
    """The 2-worker cluster, graphs split over both workers (gpipe.partitions = 2)."""
    with dask_client2.as_current(), dask.config.set({"gpipe.partitions": 2}):
        yield execution.current(dask_client2)


def test_each_owner_holds_its_own_copy_of_renumbered_ids(cluster, dask_client2):
    """Each owner maps parents back to input ids: its copy of them stays on its worker, under
    a key of its own, so that no query fetches them from a peer that is already traversing."""
    edges = reference.random_edges(300, 900, seed=5, ids="sparse")
    graph = gpipe.Graph.from_edges(Engine("pandas").frame(edges, 2), directed=False)
    copies = graph.engine.built.owner_ids
    held = dask_client2.who_has(copies)
    assert [held[c.key] for c in copies] == [(w,) for w in graph.engine.executor.workers]
    source = reference.pick_sources(edges, 1, seed=5)
    out = graph.bfs(source).compute()
    reference.assert_distances(out, reference.expected_bfs(edges, source, directed=False))


def test_owners_exchange_with_every_peer(cluster):
    handles = cluster.run_together(_two_exchanges, [(None, (0, 0))] * 2)
    assert cluster.gather(handles) == [[1, 10], [0, 0]]


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "tasks"])
def test_a_failing_owner_raises_its_own_error_and_stops_the_others(cluster, direct):
    with dask.config.set({"gpipe.direct-queries": direct}):
        with pytest.raises(ArithmeticError, match="owner 1 fails on purpose"):
            handles = cluster.run_together(_two_exchanges, [(1, (0, 0))] * 2)
            cluster.wait(handles)
        if not direct:  # aborted in its second exchange, or cancelled by the wait if still running
            assert handles[0].cancelled() or handles[0].result() is None


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "tasks"])
def test_a_stalled_owner_times_out_its_peers(cluster, direct):
    with dask.config.set({peers.TIMEOUT_KEY: "200ms", "gpipe.direct-queries": direct}):
        start = time.monotonic()
        with pytest.raises(TimeoutError, match=r"owner\(s\) \[1\]"):
            handles = cluster.run_together(_two_exchanges, [(None, (0, 1.0))] * 2)
            cluster.wait(handles)
        assert time.monotonic() - start < 5


def _send_to_nowhere(channel):
    """Exchange with peers at an address where nobody listens (the abort then goes to the
    real peers)."""
    peers_at = channel.addresses
    channel.addresses = ["tcp://127.0.0.1:9"] * len(peers_at)  # the discard port
    try:
        with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
            channel.exchange(0, [None] * len(peers_at))
    finally:
        channel.addresses = peers_at


def test_a_failed_delivery_is_raised_not_waited_out(cluster):
    start = time.monotonic()
    # The delivery fails (OSError), or the watch finds no worker at that address first.
    with pytest.raises((OSError, gpipe.GraphLost)):
        cluster.wait(cluster.run_together(_send_to_nowhere, [()] * 2))
    assert time.monotonic() - start < 10


def test_two_traversals_at_once_on_one_thread_workers(cluster):
    """Each traversal holds a task on both workers while it runs; without seceding from the
    one-thread pools, two at once could each hold the worker the other waits for."""
    edges = reference.random_edges(n=400, m=1600, seed=5)
    graph = gpipe.Graph.from_edges(dask.dataframe.from_pandas(edges, npartitions=2), directed=False,
                                   partitions=2)
    source = int(edges["src"].iloc[0])
    want = reference.expected_bfs(edges, [source], directed=False)
    results = [None] * 4

    def query(i):
        with cluster.client.as_current():  # a client made current does not follow into threads
            results[i] = graph.bfs(source).compute()

    threads = [threading.Thread(target=query, args=(i,)) for i in range(len(results))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    for got in results:
        reference.assert_distances(got, want)


def _receive_late(channel):
    """Owner 1 sends, then waits before taking its message; owner 0 is done long before."""
    channel.send(0, {q: channel.owner for q in channel.peers})
    if channel.owner == 1:
        time.sleep(0.5)
    return channel.receive(0, channel.peers)


@pytest.fixture(scope="module")
def threaded_cluster():
    """Two workers in this process (``processes=False``): their owners share one mailbox."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as client:
        with client.as_current(), dask.config.set({peers.TIMEOUT_KEY: "20s"}):
            yield execution.current(client)


def test_an_owner_done_first_leaves_the_other_owners_messages(threaded_cluster):
    assert threaded_cluster.gather(threaded_cluster.run_together(_receive_late, [()] * 2)) == [[1], [0]]


def test_a_threaded_cluster_runs_several_owners(threaded_cluster):
    edges = reference.random_edges(n=300, m=1200, seed=8, weights="positive")
    source = int(edges["src"].iloc[0])
    graph = gpipe.Graph.from_edges(dask.dataframe.from_pandas(edges, npartitions=2),
                                   directed=True, weight="weight", partitions=2)
    assert graph.num_partitions == 2
    reference.assert_distances(graph.bfs(source).compute(),
                               reference.expected_bfs(edges, [source], directed=True))
    reference.assert_distances(graph.sssp(source).compute(),
                               reference.expected_sssp(edges, [source], directed=True), exact=False)


# --- BFS over several owners: directions, statistics ---------------------------------------

MIXED = {"alpha": 1e9, "beta": 1e-9, "gamma": 1e9}  # change direction at every chance


def bfs_with_stats(graph, sources, depth_limit=None):
    """``graph.bfs`` computed, and the owners' level statistics (``graph.engine.traverse(steps=True)``)."""
    engine = graph.engine
    run = engine.traverse("bfs", engine.global_ids(sources), depth_limit=depth_limit, steps=True)
    assert len(run.steps) == graph.num_partitions
    return engine.result_frame(run.frames, "bfs").compute(), run.steps


def check_directions(stats, direction, directed):
    """Every owner took the same directions; the forced rules were followed."""
    levels = stats[0].labels
    assert all(s.labels == levels and s.frontier == stats[0].frontier for s in stats)
    assert sorted(s.owner for s in stats) == list(range(len(stats)))
    used = {d for d, f in zip(levels, stats[0].frontier) if f > 0}
    if directed or direction == "top-down":
        assert used == {owners_bfs.TOP_DOWN}
    elif direction == "bottom-up":
        assert levels[0] == owners_bfs.TOP_DOWN and set(levels[1:]) == {owners_bfs.BOTTOM_UP}
    elif direction == MIXED:
        assert used == {owners_bfs.TOP_DOWN, owners_bfs.BOTTOM_UP}
        assert any(m == 2 for m in stats[0].messages)  # a bottom-up level turned top-down


@pytest.mark.parametrize("direction", ["auto", "top-down", "bottom-up", MIXED],
                         ids=["auto", "top-down", "bottom-up", "mixed"])
@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
def test_two_owners_bfs_in_every_direction(cluster, directed, direction):
    edges = reference.random_edges(n=500, m=1500, seed=21, ids="shuffled")
    sources = reference.pick_sources(edges, 3, seed=2)
    graph = gpipe.Graph.from_edges(dask.dataframe.from_pandas(edges, npartitions=2), directed=directed)
    assert graph.num_partitions == 2
    with dask.config.set({owners_bfs.DIRECTION_KEY: direction}):
        for query, depth_limit in ((sources[:1], None), (sources, None), (sources, 2)):
            got, stats = bfs_with_stats(graph, query, depth_limit)
            reference.assert_distances(got, reference.expected_bfs(edges, query, directed=directed,
                                                                   depth_limit=depth_limit))
            check_tree(got, edges, directed)
            if depth_limit is None:
                check_directions(stats, direction, directed)
            else:
                assert stats[0].steps <= depth_limit


def check_tree(result, edges, directed):
    """Every reached non-source's parent is one hop closer along an edge of the input."""
    reached = result[result["parent"].notna()]
    distance = dict(zip(result["vertex"].tolist(), result["distance"].tolist()))
    pairs = set(zip(edges["src"].tolist(), edges["dst"].tolist()))
    if not directed:
        pairs |= {(b, a) for a, b in pairs}
    for v, p in zip(reached["vertex"].tolist(), reached["parent"].tolist()):
        assert (p, v) in pairs and distance[p] + 1 == distance[v]


def test_bfs_stats_are_asked_for_only(cluster):
    """Without a stats list the owner tasks return their frames (no extra task); with one,
    the statistics describe each level."""
    edges = reference.random_edges(n=400, m=1600, seed=5)
    graph = gpipe.Graph.from_edges(dask.dataframe.from_pandas(edges, npartitions=2), directed=False)
    source = int(edges["src"].iloc[0])
    engine = graph.engine
    frames = traverse.bfs_frames(engine.executor, engine.built, engine.global_ids(source), None)
    assert all(f.key.startswith("gpipe-bfs-") for f in frames)
    _, stats = bfs_with_stats(graph, source)
    for s in stats:
        assert isinstance(s, messages.OwnerSteps)
        assert s.steps == len(s.frontier) > 2 and s.frontier[0] == 1
        assert sum(s.bytes_sent) > 0


@pytest.fixture(scope="module")
def three_owners():
    """A 3-worker process cluster: every owner sends to two peers and hears from two."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=3, threads_per_worker=1, processes=True, dashboard_address=":0",
                      env={"NUMBA_NUM_THREADS": "1"}) as cluster, \
            Client(cluster, set_as_default=False) as client:
        yield client


@pytest.fixture
def over_three(three_owners):
    """The 3-worker cluster, current, graphs split over all three workers."""
    with three_owners.as_current(), dask.config.set({"gpipe.partitions": 3}):
        yield three_owners


def test_three_owners_agree_with_scipy(over_three):
    """The all-to-all beyond a pair, including the parent gathering of the negative-cycle check,
    and BFS in the forced directions."""
    from test_api import shuffled_path, with_edge

    positive = reference.random_edges(n=400, m=1600, seed=13, weights="positive", ids="sparse")
    source = int(positive["src"].iloc[0])
    path, order = shuffled_path(60, seed=17)
    cycle = with_edge(path, order[50], order[4], -100.0)
    frame = dask.dataframe.from_pandas(positive, npartitions=3)
    graph = gpipe.Graph.from_edges(frame, directed=False, weight="weight")
    assert graph.num_partitions == 3
    reference.assert_distances(graph.bfs([source]).compute(),
                               reference.expected_bfs(positive, [source], directed=False))
    for direction in ("bottom-up", MIXED):
        with dask.config.set({owners_bfs.DIRECTION_KEY: direction}):
            got, stats = bfs_with_stats(graph, [source])
        reference.assert_distances(got, reference.expected_bfs(positive, [source], directed=False))
        check_tree(got, positive, directed=False)
        check_directions(stats, direction, directed=False)
    reference.assert_distances(graph.sssp(source).compute(),
                               reference.expected_sssp(positive, [source], directed=False),
                               exact=False)
    negative = gpipe.sssp(dask.dataframe.from_pandas(path, npartitions=3), int(order[0]))
    reference.assert_distances(negative.compute(),
                               reference.expected_sssp(path, [int(order[0])], directed=True))
    with pytest.raises(gpipe.NegativeCycleError):
        gpipe.sssp(dask.dataframe.from_pandas(cycle, npartitions=3), int(order[0])).compute()


@pytest.mark.parametrize("name", sorted(SSSP_CASES))
def test_three_owners_sssp_cases(over_three, name):
    """tests/test_api.py's SSSP cases (directed and undirected, integer-valued and real weights,
    zero weights, repeats, several sources, negative weights) over three owners."""
    case, edges, sources = sssp_case(name)
    run_sssp(Engine("cluster", over_three), edges, sources, directed=case["directed"],
             npartitions=case.get("npartitions", 3))


def test_three_owners_negative_cycle_cases(over_three):
    from test_api import negative_cycle_graph

    frame = dask.dataframe.from_pandas(negative_cycle_graph(), npartitions=2)
    for sources in (0, [10, 2]):
        with pytest.raises(gpipe.NegativeCycleError):
            gpipe.sssp(frame, sources).compute()
    out = gpipe.sssp(frame, 10).compute()
    assert out.set_index("vertex")["distance"].dropna().to_dict() == {10: 0.0, 11: 1.0, 12: 0.0}


# --- what the owners of an SSSP report, step by step ----------------------------------------


def _grid(side, seed):
    from gpipe.generators import grid_edges

    return grid_edges(side, weights=True, seed=seed)


def _sssp_with_stats(graph, source):
    engine = graph.engine
    run = engine.traverse("sssp", engine.global_ids(source), steps=True)
    return engine.result_frame(run.frames, "sssp").compute(), run.steps


def check_sssp_owner_steps(engine):
    """Owners agree on the steps they took, each step is labelled with its window, and a grid
    with dozens of hops across two owners takes fewer steps than it has hops (one exchange per
    window, not per relaxation round). Negative weights: Bellman-Ford steps. Also run by
    tests/test_multigpu.py."""
    from test_api import shuffled_path

    side = 12
    edges = _grid(side, seed=3)
    graph = gpipe.Graph.from_edges(engine.frame(edges, 2), directed=False, weight="weight")
    assert graph.num_partitions == 2
    out, owners = _sssp_with_stats(graph, 0)  # a corner: 3 * (side - 1) hops to the far one
    reference.assert_distances(engine.pandas(out), reference.expected_sssp(edges, [0], directed=False),
                               exact=False)
    assert [o.owner for o in owners] == [0, 1]
    steps = owners[0].steps
    assert all(o.steps == steps for o in owners) and 1 < steps < 3 * (side - 1)
    for o in owners:
        assert len(o.rounds) == len(o.bytes_sent) == len(o.labels) == steps
        assert o.labels == owners[0].labels and o.labels[0] == "bucket 0"
        assert all(isinstance(b, int) and b >= 0 for b in o.bytes_sent)
        assert sum(o.kernel_s) > 0 and min(o.wait_s) >= 0
        assert o.total_s >= sum(o.kernel_s) + sum(o.wait_s) + o.frame_s + o.setup_s  # the parts
        assert o.frame_s > 0 and o.setup_s > 0 and o.started_at > 0
    assert 1 < len(set(owners[0].labels)) < steps
    assert sum(sum(o.bytes_sent) for o in owners) > 0  # the owners did exchange candidates

    path, order = shuffled_path(40, seed=67)  # negative weights
    graph = gpipe.Graph.from_edges(engine.frame(path, 2), weight="weight")
    out, owners = _sssp_with_stats(graph, int(order[0]))
    reference.assert_distances(engine.pandas(out), reference.expected_sssp(path, [int(order[0])], directed=True))
    assert set(owners[0].labels) == {"bellman-ford"} and owners[0].steps >= len(order) - 1


def test_sssp_owners_report_their_steps(cluster):
    check_sssp_owner_steps(Engine("cluster", cluster.client))
