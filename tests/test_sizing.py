"""How many owners a graph gets (gpipe/partitioning/sizing.py): the fewest workers whose memory holds it,
a forced count, and the refusal, before building, of a graph too large for its owners."""

from dataclasses import replace

import dask
import dask.dataframe as dd
import pytest

import gpipe
import reference
from gpipe.partitioning import sizing
from gpipe.partitioning.sizing import GraphSize, WorkerMemory

GIB = 2**30


def workers(*free_gib):
    return [WorkerMemory(f"tcp://w{i}", int(f * GIB), "device") for i, f in enumerate(free_gib)]


def addresses(chosen):
    return [w.address for w in chosen]


def test_a_graph_that_fits_one_worker_gets_the_one_with_most_memory():
    size = GraphSize(rows=10**6, n=10**5, directed=False, weighted=True)
    assert addresses(sizing.choose_owners(size, workers(8, 16, 16), None)) == ["tcp://w1"]


def test_a_graph_too_large_for_one_worker_is_split_over_the_fewest_that_hold_it():
    size = GraphSize(rows=2 * 10**9, n=2**27, directed=True, weighted=False)
    one = size.owner_bytes(1)
    two = size.owner_bytes(2)
    assert two < one
    free = (two / sizing.DEFAULT_FRACTION * 1.01) / GIB  # room for half, not for the whole
    chosen = sizing.choose_owners(size, workers(free, free, free, free), None)
    assert addresses(chosen) == ["tcp://w0", "tcp://w1"]


def test_a_forced_count_is_kept_even_when_one_worker_would_do():
    size = GraphSize(rows=1000, n=100, directed=True, weighted=False)
    assert len(sizing.choose_owners(size, workers(4, 4, 4), 3)) == 3


def test_more_partitions_than_workers_is_an_input_error():
    size = GraphSize(rows=1000, n=100, directed=True, weighted=False)
    with pytest.raises(gpipe.InputError, match="partitions=3 needs 3 Dask workers; the cluster has 2"):
        sizing.choose_owners(size, workers(4, 4), 3)


def test_a_graph_larger_than_all_workers_names_what_it_needs_and_what_they_have():
    size = GraphSize(rows=4 * 10**9, n=2**28, directed=False, weighted=True)
    with pytest.raises(gpipe.GraphTooLarge) as error:
        sizing.choose_owners(size, workers(1, 1), None)
    message = str(error.value)
    assert "GiB on each of 2 owner(s)" in message and "1.00 GiB, 1.00 GiB" in message
    assert isinstance(error.value, gpipe.InputError)


@pytest.mark.parametrize("bad", [0, -1, 1.5, "two", True])
def test_partitions_must_be_a_positive_integer(bad):
    with pytest.raises(gpipe.InputError, match="partitions must be a positive integer"):
        sizing.requested_partitions(bad)


def test_partitions_come_from_dask_config_when_not_given():
    assert sizing.requested_partitions(None) is None
    with dask.config.set({sizing.PARTITIONS_KEY: 3}):
        assert sizing.requested_partitions(None) == 3
        assert sizing.requested_partitions(2) == 2
    with dask.config.set({sizing.PARTITIONS_KEY: "auto"}):
        assert sizing.requested_partitions(None) is None


def test_without_a_client_a_graph_has_one_partition_and_cannot_be_forced_to_more():
    edges = reference.random_edges(n=50, m=200, seed=1)
    frame = dd.from_pandas(edges, npartitions=2)
    assert gpipe.Graph.from_edges(frame).num_partitions == 1
    with pytest.raises(gpipe.InputError, match="needs a Dask client with 2 workers"):
        gpipe.Graph.from_edges(frame, partitions=2)


def test_on_a_two_worker_cluster_a_small_graph_is_built_on_one_worker(dask_client2):
    edges = reference.random_edges(n=300, m=1200, seed=2, weights="positive")
    source = int(edges["src"].iloc[0])
    with dask_client2.as_current():
        frame = dd.from_pandas(edges, npartitions=3)
        graph = gpipe.Graph.from_edges(frame, directed=False, weight="weight")
        assert graph.num_partitions == 1
        reference.assert_distances(graph.bfs(source).compute(),
                                   reference.expected_bfs(edges, [source], directed=False))
        forced = gpipe.Graph.from_edges(frame, directed=False, weight="weight", partitions=2)
        assert forced.num_partitions == 2
        reference.assert_distances(forced.sssp(source).compute(),
                                   reference.expected_sssp(edges, [source], directed=False),
                                   exact=False)


def test_the_size_guard_raises_before_anything_is_built(dask_client2, monkeypatch):
    """A tiny memory budget: the build must stop at the guard, with no partition task run."""
    edges = reference.random_edges(n=300, m=1200, seed=3)
    built = []
    monkeypatch.setattr("gpipe.partitioning.build.build_partition", lambda *a: built.append(a))
    with dask_client2.as_current(), dask.config.set({sizing.FRACTION_KEY: 1e-9}):
        with pytest.raises(gpipe.GraphTooLarge, match="the graph needs about"):
            gpipe.Graph.from_edges(dd.from_pandas(edges, npartitions=2))
    assert built == []


def test_the_cli_refuses_partitions_without_a_cluster(tmp_path):
    from gpipe.tools.cli import main

    edges = reference.random_edges(n=30, m=60, seed=4)
    edges.to_parquet(tmp_path / "edges.parquet")
    status = main(["-q", "bfs", str(tmp_path / "edges.parquet"), "--source", str(int(edges["src"].iloc[0])),
                   "--out", str(tmp_path / "out"), "--partitions", "2", "--backend", "cpu"])
    assert status == 2
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("ids", ["dense", "sparse", "string"])
def test_read_edges_frames_are_refused_before_a_row_is_read(tmp_path, monkeypatch, ids):
    """Parquet footers give the rows and the id range (gpipe/io/footers.py): a graph too large is
    refused before any partition is read; one that fits is sized the same way as after its
    survey."""
    from gpipe.io import footers, read as io
    from gpipe.partitioning import build

    edges = reference.random_edges(n=300, m=1200, seed=5, ids=ids if ids != "string" else "dense")
    if ids == "string":
        edges = edges.assign(src=edges["src"].map("v{}".format), dst=edges["dst"].map("v{}".format))
    edges.to_parquet(tmp_path / "edges.parquet", row_group_size=400)
    read = []
    real = io.read_pandas_piece
    monkeypatch.setattr(io, "read_pandas_piece", lambda *a, **k: read.append(a) or real(*a, **k))
    frame = gpipe.read_edges(str(tmp_path / "edges.parquet"))
    early = build.footer_size(footers.of(frame), directed=False, weighted=False)
    ids_seen = edges[["src", "dst"]].stack()
    if ids == "string":
        assert early.n == 2 * len(edges)
    else:
        low, high = int(ids_seen.min()), int(ids_seen.max())
        assert early.n == (high + 1 if ids == "dense" else min(2 * len(edges), high - low + 1))
    assert early.rows == len(edges)
    with dask.config.set({sizing.FRACTION_KEY: 1e-9}):
        with pytest.raises(gpipe.GraphTooLarge, match="the graph needs about"):
            gpipe.Graph.from_edges(frame, directed=False)
    assert read == []
    graph = gpipe.Graph.from_edges(frame, directed=False)
    assert read and graph.num_vertices == len(ids_seen.unique())


def test_a_frame_derived_from_read_edges_is_sized_after_its_survey(tmp_path):
    from gpipe.io import footers

    edges = reference.random_edges(n=50, m=100, seed=6)
    edges.to_parquet(tmp_path / "edges.parquet")
    frame = gpipe.read_edges(str(tmp_path / "edges.parquet"))
    assert footers.of(frame) is not None
    assert footers.of(frame[frame["src"] > 3]) is None


def test_a_one_owner_graph_of_parquet_is_read_on_its_owner(dask_client2, tmp_path):
    """The footers choose the owner before reading; an input this small (and CPU workers on
    one host, which share its cores) is read on the owner's worker alone, so no edge crosses
    the network (issue 22); the answer is the same."""
    from distributed import get_task_stream

    from gpipe.io.read import READ_LABEL

    edges = reference.random_edges(n=400, m=1600, seed=7, ids="sparse")
    for i in range(4):
        edges.iloc[i::4].to_parquet(tmp_path / f"part.{i}.parquet")
    with dask_client2.as_current():
        frame = gpipe.read_edges(str(tmp_path))
        with get_task_stream(dask_client2) as stream:
            graph = gpipe.Graph.from_edges(frame, directed=False)
        assert graph.num_partitions == 1
        owner = graph.engine.executor.workers[0]
        reads = [t["worker"] for t in stream.data if t["key"][0].startswith(READ_LABEL)]
        assert len(reads) == 4 and set(reads) == {owner}
        source = int(edges["src"].iloc[0])
        reference.assert_distances(graph.bfs(source).compute(),
                                   reference.expected_bfs(edges, [source], directed=False))


def test_an_owners_build_holds_its_cut_buckets_its_peers_buckets_and_its_csr():
    """kron26 on 2 owners, int32 ids: per owner 2**30 stored edges of 8-byte pairs cut (its own
    bucket stays), half as many received, a 4-byte-per-edge CSR, the split's arrays of
    SPLIT_ROWS rows; the input only when the build reads it."""
    rows, n = 2**30, 2**26
    resident = GraphSize(rows=rows, n=n, directed=False, weighted=False, input_row_bytes=8)
    edges, vertices = 2**30, 2**25
    csr = 8 * (vertices + 1) + 4 * edges
    split = sizing.SPLIT_ROWS * sizing.SPLIT_BYTES_PER_ROW
    assert resident.owner_build_bytes(2) == csr + 16 * vertices + 8 * edges + 4 * edges + split
    read = GraphSize(rows=rows, n=n, directed=False, weighted=False, input_row_bytes=8,
                     input_resident=False)
    assert read.owner_build_bytes(2) - resident.owner_build_bytes(2) == 8 * rows // 2
    assert read.owner_build_bytes(1) - resident.owner_build_bytes(1) == 8 * rows


@pytest.fixture
def sizes_seen(monkeypatch) -> list:
    """The GraphSize of every choice of owners the builds make, in order."""
    sizes = []
    real = sizing.choose_owners

    def spy(size, memory, requested):
        sizes.append(size)
        return real(size, memory, requested)

    monkeypatch.setattr(sizing, "choose_owners", spy)
    return sizes


def test_a_read_edges_frame_is_sized_with_the_input_it_reads(tmp_path, sizes_seen):
    import pandas as pd

    import gpipe
    from gpipe.engine.execution import InProcess
    from gpipe.partitioning import build

    path = tmp_path / "edges.parquet"
    pd.DataFrame({"src": [0, 1, 2], "dst": [1, 2, 0]}).astype("int32").to_parquet(path)
    frame = gpipe.read_edges(path)
    build.build(InProcess(), frame, directed=True, src="src", dst="dst", weight=None)
    assert sizes_seen and not sizes_seen[-1].input_resident and sizes_seen[-1].input_row_bytes == 8


def test_one_owner_counts_the_resident_input_that_other_workers_hold():
    size = GraphSize(rows=10**8, n=10**6, directed=False, weighted=False, input_row_bytes=8)
    here = sizing.WorkerMemory("tcp://w0", 0, "device", input_share=1.0)
    quarter = sizing.WorkerMemory("tcp://w1", 0, "device", input_share=0.25)
    arriving = (sizing.owner_need(size, 1, quarter, build_only=True)
                - sizing.owner_need(size, 1, here, build_only=True))
    assert arriving == int(0.75 * size.input_bytes)
    # several owners build from the input where it is: nothing arrives but the buckets
    assert sizing.owner_need(size, 2, quarter) == sizing.owner_need(size, 2, here)


def test_one_owner_goes_where_most_of_the_input_already_is():
    size = GraphSize(rows=10**8, n=10**6, directed=False, weighted=False, input_row_bytes=8)
    free = 16 * GIB
    spread = [sizing.WorkerMemory(f"tcp://w{i}", free, "device", input_share=share)
              for i, share in enumerate([0.1, 0.6, 0.3])]
    assert addresses(sizing.choose_owners(size, spread, None)) == ["tcp://w1"]


def test_a_persisted_read_edges_frame_is_sized_as_held_not_read(dask_client2, tmp_path, sizes_seen):
    """The workers' free memory counts a persisted frame already: its footers still size it
    before the build, but without adding the input a second time."""
    import distributed

    import gpipe

    edges = reference.random_edges(n=400, m=1600, seed=8)
    for i in range(2):
        edges.iloc[i::2].to_parquet(tmp_path / f"part.{i}.parquet")
    sizes = sizes_seen
    with dask_client2.as_current():
        read = gpipe.Graph.from_edges(gpipe.read_edges(str(tmp_path)), directed=False, partitions=2)
        read_sizes, sizes[:] = list(sizes), []
        persisted = gpipe.read_edges(str(tmp_path)).persist()
        distributed.wait(persisted)  # still being read, it would count as read by the build
        held = gpipe.Graph.from_edges(persisted, directed=False, partitions=2)
        source = int(edges["src"].iloc[0])
        reference.assert_distances(held.bfs(source).compute(),
                                   reference.expected_bfs(edges, [source], directed=False))
    assert [s.input_resident for s in read_sizes] == [False, False]  # the footers', the survey's
    assert [s.input_resident for s in sizes] == [True, True]
    estimates = [g.engine.built.owner_build_estimate for g in (read, held)]
    assert estimates[0] - estimates[1] == -(-read_sizes[-1].input_bytes // 2)


def test_an_owner_is_sized_by_its_build_or_its_traversal_whichever_holds_more():
    """kron28 on 4 owners (Graph500: 16 edges per vertex) peaks in its build: a budget that
    holds the build but not the build and a traversal together takes it. A road network
    (about 2.4 stored edges per vertex) peaks in a traversal, whose per-vertex arrays outweigh
    the build's buckets."""
    kron28 = GraphSize(rows=2**32, n=2**28, directed=False, weighted=False)
    build = kron28.owner_build_bytes(4)
    traversal = 2**26 * sizing.TRAVERSAL_BYTES_PER_VERTEX + 2**28 * sizing.EXCHANGE_BYTES_PER_VERTEX
    assert kron28.owner_bytes(4) == build
    budget = (build + traversal // 2) / sizing.DEFAULT_FRACTION / GIB
    assert len(sizing.choose_owners(kron28, workers(budget, budget, budget, budget), 4)) == 4
    road = GraphSize(rows=29 * 10**6, n=24 * 10**6, directed=False, weighted=True)
    assert road.owner_bytes(1) > road.owner_build_bytes(1)
    assert road.owner_bytes(1) == road.csr_bytes(1) + 24 * 10**6 * sizing.TRAVERSAL_BYTES_PER_VERTEX


def _sparse_edges(rows, vertices, seed):
    """``rows`` edges among ``vertices`` ids spread over 2**40: far more id range than ids."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    names = rng.choice(2**40, size=vertices, replace=False)
    return pd.DataFrame({"src": names[rng.integers(0, vertices, rows)],
                         "dst": names[rng.integers(0, vertices, rows)]})


@pytest.mark.parametrize("source", ["frame", "parquet"])
def test_renumbered_ids_are_sized_by_their_count_not_their_bound(tmp_path, monkeypatch, sizes_seen, source):
    """Ids to renumber bound the vertex count by twice the edges until they are counted; the
    build counts them before it chooses the owners, so a graph whose bound would not fit but
    whose ids do is built, not refused (from Parquet too: the footers refuse only what the
    fewest vertices would not fit)."""
    edges = _sparse_edges(rows=20_000, vertices=500, seed=11)
    bound = GraphSize(rows=len(edges), n=2 * len(edges), directed=False, weighted=False, renumbered=True)
    exact = GraphSize(rows=len(edges), n=500, directed=False, weighted=False, renumbered=True)
    room = (exact.owner_bytes(1) + bound.owner_bytes(1)) // 2  # holds the ids counted, not the bound
    assert exact.owner_bytes(1) < room < bound.owner_bytes(1)
    monkeypatch.setattr(sizing, "free_bytes_here", lambda backend_name: int(room / sizing.DEFAULT_FRACTION))
    if source == "parquet":
        edges.to_parquet(tmp_path / "edges.parquet")
        frame = gpipe.read_edges(str(tmp_path / "edges.parquet"))
    else:
        frame = dd.from_pandas(edges, npartitions=2)
    graph = gpipe.Graph.from_edges(frame, directed=False)
    assert graph.num_vertices == 500
    assert sizes_seen[-1].n == 500 and sizes_seen[-1].renumbered
    # With room for the edges of no vertex count, the footers still refuse before reading.
    if source == "parquet":
        fewest = bound.with_fewest_vertices()
        monkeypatch.setattr(sizing, "free_bytes_here", lambda backend_name: fewest.owner_bytes(1) // 2)
        from gpipe.io import read as io

        read = []
        real = io.read_pandas_piece
        monkeypatch.setattr(io, "read_pandas_piece", lambda *a, **k: read.append(a) or real(*a, **k))
        with pytest.raises(gpipe.GraphTooLarge):
            gpipe.Graph.from_edges(gpipe.read_edges(str(tmp_path / "edges.parquet")), directed=False)
        assert read == []


def test_renumbered_ids_count_in_an_owners_bytes():
    """One owner keeps every id; several keep their own share, and a split's worker the
    lookup of its input partition's distinct ids, never the whole id map (issue 33)."""
    kept = GraphSize(rows=10**8, n=10**7, directed=False, weighted=False)
    renumbered = replace(kept, renumbered=True, partition_rows=10**6)
    assert renumbered.owner_build_bytes(1) - kept.owner_build_bytes(1) == 8 * 10**7
    lookup = 2 * 10**6 * sizing.RELABEL_BYTES_PER_ID
    assert renumbered.owner_build_bytes(2) - kept.owner_build_bytes(2) == 4 * 10**7 + lookup
    assert renumbered.owner_build_bytes(4) - kept.owner_build_bytes(4) == 2 * 10**7 + lookup
    assert renumbered.owner_bytes(2) - kept.owner_bytes(2) == 4 * 10**7 + lookup
    assert renumbered.with_fewest_vertices().n == 10**4


def _read_on(mode):
    return dask.config.set({sizing.READ_ON_KEY: mode})


def _spread(*reads_on, free_gib=16):
    return [WorkerMemory(f"tcp://w{i}", int(free_gib * GIB), "device", reads_on=where)
            for i, where in enumerate(reads_on)]


def test_a_one_owner_graph_is_read_by_one_worker_per_gpu_or_host():
    """Issue 33: reading on every GPU, then sending the edges to the owner, beats reading on
    the owner alone (kron28 on 4 H200s: 4.4 s against 25.9 s); workers that share a GPU, or
    CPU workers that share a host's cores, read no faster together than one of them."""
    big = GraphSize(rows=10**8, n=10**6, directed=False, weighted=False, input_row_bytes=16,
                    input_resident=False)
    gpus = _spread("h0/00:01", "h0/00:02", "h1/00:01", "h1/00:02")
    assert sizing.readers(big, gpus, gpus[2], 16) == ["tcp://w2", "tcp://w0", "tcp://w1", "tcp://w3"]
    shared = _spread("h0/00:01", "h0/00:01", "h0/00:02")
    assert sizing.readers(big, shared, shared[0], 16) == ["tcp://w0", "tcp://w2"]
    cpus = _spread("h0", "h0", "h1", "h1")
    assert sizing.readers(big, cpus, cpus[1], 16) == ["tcp://w1", "tcp://w2"]
    assert sizing.readers(big, cpus, cpus[1], 1) == ["tcp://w1"]  # one partition: its owner reads it
    assert sizing.readers(big, gpus[:1], gpus[0], 16) == ["tcp://w0"]  # one worker
    small = replace(big, rows=sizing.SPREAD_READ_BYTES // 16 - 1)
    assert sizing.readers(small, gpus, gpus[0], 16) == ["tcp://w0"]
    with _read_on("owner"):
        assert sizing.readers(big, gpus, gpus[0], 16) == ["tcp://w0"]
    with _read_on("all"):  # shared resources and small inputs too
        assert sizing.readers(small, cpus, cpus[0], 16) == ["tcp://w0", "tcp://w1", "tcp://w2", "tcp://w3"]
    with _read_on("everywhere"), pytest.raises(gpipe.InputError, match="gpipe.read-on"):
        sizing.readers(big, gpus, gpus[0], 16)


def test_a_reader_needs_room_for_its_share_of_the_input():
    """16 partitions of 100 MB: 400 MB on each of 4 readers, 600 MB on 3, 800 MB on 2."""
    size = GraphSize(rows=10**8, n=10**6, directed=False, weighted=False, input_row_bytes=16,
                     input_resident=False)
    budget = 600 * 10**6 / sizing.DEFAULT_FRACTION / GIB
    gpus = _spread("a", "b", "c", "d", free_gib=budget)
    assert len(sizing.readers(size, gpus, gpus[0], 16)) == 4
    tight = [gpus[0], replace(gpus[1], free_bytes=10**6), *gpus[2:]]
    assert sizing.readers(size, tight, tight[0], 16) == ["tcp://w0", "tcp://w2", "tcp://w3"]
    tighter = [*tight[:2], replace(gpus[2], free_bytes=10**6), gpus[3]]
    assert sizing.readers(size, tighter, tighter[0], 16) == ["tcp://w0"]


def _parquet_files(tmp_path, edges, files):
    for i in range(files):
        edges.iloc[i::files].to_parquet(tmp_path / f"part.{i}.parquet")
    return str(tmp_path)


def _read_workers(stream) -> list:
    from gpipe.io.read import READ_LABEL

    return [t["worker"] for t in stream.data if t["key"][0].startswith(READ_LABEL)]


def test_a_one_owner_graph_is_read_by_several_workers_and_built_on_its_owner(dask_client2, tmp_path):
    """Every worker reads its share of the files (round-robin) and the owner builds from what
    they send: the answer is SciPy's, the owner's estimate the same as when it reads them all,
    and no input partition outlives the build."""
    from distributed import get_task_stream

    edges = reference.random_edges(n=400, m=1600, seed=12, ids="sparse")
    # Files of their own: the scheduler keeps a graph's released read tasks, and their
    # worker restrictions, while the graph is built from them.
    for folder in ("alone", "spread", "weighted"):
        (tmp_path / folder).mkdir()
    path = _parquet_files(tmp_path / "spread", edges, 4)
    with dask_client2.as_current():
        with _read_on("owner"):
            alone = gpipe.Graph.from_edges(gpipe.read_edges(_parquet_files(tmp_path / "alone", edges, 4)),
                                           directed=False)
        with _read_on("all"), get_task_stream(dask_client2) as stream:
            graph = gpipe.Graph.from_edges(gpipe.read_edges(path), directed=False)
        assert graph.num_partitions == 1
        reads = _read_workers(stream)
        assert len(reads) == 4 and set(reads) == set(dask_client2.scheduler_info()["workers"])
        assert graph.engine.built.owner_build_estimate == alone.engine.built.owner_build_estimate
        held = dask_client2.run(lambda dask_worker: [str(k) for k in dask_worker.data if "read-edges" in str(k)])
        assert held == {address: [] for address in held}
        for source in reference.pick_sources(edges, 2, seed=1):
            reference.assert_distances(graph.bfs(source).compute(),
                                       reference.expected_bfs(edges, [source], directed=False))
        weighted = reference.random_edges(n=400, m=1600, seed=13, weights="positive")
        path = _parquet_files(tmp_path / "weighted", weighted, 3)
        source = int(weighted["src"].iloc[0])
        with _read_on("all"):
            sssp = gpipe.sssp(gpipe.read_edges(path, weight="weight"), source, directed=True)
        reference.assert_distances(sssp.compute(), reference.expected_sssp(weighted, [source], directed=True),
                                   exact=False)


def test_a_one_worker_cluster_reads_on_its_worker(tmp_path):
    from distributed import Client, LocalCluster, get_task_stream

    edges = reference.random_edges(n=300, m=1200, seed=14)
    path = _parquet_files(tmp_path, edges, 3)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as client, _read_on("all"):
        with get_task_stream(client) as stream:
            graph = gpipe.Graph.from_edges(gpipe.read_edges(path), directed=False)
        assert graph.num_partitions == 1
        assert set(_read_workers(stream)) == set(client.scheduler_info()["workers"])
        source = int(edges["src"].iloc[0])
        reference.assert_distances(graph.bfs(source).compute(),
                                   reference.expected_bfs(edges, [source], directed=False))


def test_spreading_the_read_still_refuses_what_does_not_fit(dask_client2, tmp_path):
    """The footers refuse before a file is read, wherever it would have been read."""
    from distributed import get_task_stream

    edges = reference.random_edges(n=300, m=1200, seed=15)
    path = _parquet_files(tmp_path, edges, 4)
    with dask_client2.as_current(), _read_on("all"), get_task_stream(dask_client2) as stream:
        with dask.config.set({sizing.FRACTION_KEY: 1e-9}), pytest.raises(gpipe.GraphTooLarge):
            gpipe.Graph.from_edges(gpipe.read_edges(path), directed=False)
    assert _read_workers(stream) == []


def test_a_persisted_frame_of_one_owner_is_built_from_where_it_is(dask_client2, tmp_path):
    """Its partitions are not read again, nor copied to the owner before the sizing: each
    stays on its one worker (so the estimate counts what must come to the owner), and the
    owner builds from the splits that those workers send."""
    import distributed

    edges = reference.random_edges(n=400, m=1600, seed=16)
    path = _parquet_files(tmp_path, edges, 4)
    with dask_client2.as_current():
        persisted = gpipe.read_edges(path).persist()
        distributed.wait(persisted)
        before = {key: set(where) for key, where in dask_client2.who_has(persisted).items()}
        assert len(set().union(*before.values())) == 2  # on both workers
        graph = gpipe.Graph.from_edges(persisted, directed=False)
        assert graph.num_partitions == 1
        after = {key: set(where) for key, where in dask_client2.who_has(persisted).items()}
        assert after == before
        source = int(edges["src"].iloc[0])
        reference.assert_distances(graph.bfs(source).compute(),
                                   reference.expected_bfs(edges, [source], directed=False))
