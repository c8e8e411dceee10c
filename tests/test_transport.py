"""The owners' transport interface (gpipe/engine/owners/transport.py): the Dask-comms implementation
over an in-process channel, how a graph chooses its transport, and a lost NCCL communicator
made again. The NCCL implementation itself runs in tests/test_nccl.py (several GPUs)."""

import threading

import dask
import numpy as np
import pandas as pd
import pytest

import gpipe
from gpipe.engine.owners import messages, nccl, peers
from gpipe.engine.owners.run import start_bfs
from gpipe.engine.owners.connect import open_transport
from gpipe.engine.owners.dask_comms import DaskTransport
from gpipe.engine.owners.transport import TransportLost
from gpipe.engine.partition import Layout
from test_traverse import ThreadChannel


def run_owners(n_owners, step):
    """``step(transport)`` on ``n_owners`` DaskTransports over one in-process mailbox, each in
    a thread; their answers in owner order."""
    mailbox, answers, errors = peers.Mailbox(), [None] * n_owners, []

    def run(p):
        try:
            answers[p] = step(DaskTransport(ThreadChannel(mailbox, p, n_owners), n_owners, "cpu"))
        except BaseException as error:  # noqa: BLE001 (re-raised below)
            errors.append(error)

    threads = [threading.Thread(target=run, args=(p,)) for p in range(n_owners)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    if errors:
        raise errors[0]
    return answers


def test_exchange_gives_every_owner_all_counts_and_its_buckets():
    dtypes = messages.bfs_bucket("int32")

    def step(t):
        buckets = [None if q == t.owner or (q + t.owner) % 2 else
                   t.payload((np.full(q + 1, 10 * t.owner + q, dtype=np.int32),
                              np.full(q + 1, t.owner, dtype=np.int32)))
                   for q in range(t.n_owners)]
        return t.exchange(0, [t.owner, 2.5 * t.owner], buckets, dtypes)

    answers = run_owners(3, step)
    for p, (counts, received) in enumerate(answers):
        np.testing.assert_array_equal(counts, [[0, 0], [1, 2.5], [2, 5]])
        assert counts.dtype == np.float64
        for q, bucket in enumerate(received):
            if q == p or (q + p) % 2:
                assert bucket is None
                continue
            targets, parents = bucket
            np.testing.assert_array_equal(targets, np.full(p + 1, 10 * q + p))
            np.testing.assert_array_equal(parents, np.full(p + 1, q))


def test_exchange_counters_reads_the_counters_and_makes_buckets_from_them():
    """Counters as the kernels leave them (length of owner q's bucket at ``2 + q``): every
    owner gets every owner's, and the buckets made from its own row."""
    dtypes = messages.bfs_bucket("int64")
    seen = {}

    def step(t):
        counters = np.array([t.owner, 7] + [0 if q == t.owner else q + 1 for q in range(t.n_owners)])

        def buckets_for(row):
            seen[t.owner] = row.tolist()
            return [None if q == t.owner else (np.full(int(row[2 + q]), t.owner), np.arange(row[2 + q]))
                    for q in range(t.n_owners)]

        return t.exchange_counters("level", counters, 2, buckets_for, dtypes)

    answers = run_owners(3, step)
    for p, (rows, received) in enumerate(answers):
        assert rows.dtype == np.int64
        assert rows.tolist() == [[q, 7] + [0 if r == q else r + 1 for r in range(3)] for q in range(3)]
        assert seen[p] == rows[p].tolist()
        for q, bucket in enumerate(received):
            if q == p:
                assert bucket is None
                continue
            assert bucket[0].tolist() == [q] * (p + 1) and bucket[1].tolist() == list(range(p + 1))


def test_allgather_fills_each_owners_slot_and_zeroes_the_rest():
    slot = 4

    def step(t):
        out = np.full(t.n_owners * slot, -1, dtype=np.int64)
        piece = np.arange(t.owner + 1, dtype=np.int64) + 100 * t.owner  # shorter than the slot
        counts = t.allgather("bits", [t.owner], piece, out)
        return counts, out

    for counts, out in run_owners(3, step):
        np.testing.assert_array_equal(counts, [[0], [1], [2]])
        np.testing.assert_array_equal(out, [0, 0, 0, 0, 100, 101, 0, 0, 200, 201, 202, 0])


def test_payload_is_a_copy_that_later_writes_do_not_reach():
    mailbox = peers.Mailbox()
    transport = DaskTransport(ThreadChannel(mailbox, 0, 2), 2, "cpu")
    queue = np.arange(5)
    (sent,) = transport.payload((queue[:3],))
    queue[:] = -1
    np.testing.assert_array_equal(sent, [0, 1, 2])


def test_counts_records_reduce_the_same_way_on_every_owner():
    rows = np.vstack([messages.vector(messages.TopDownCounts(3, 1, 4, 1, 5, 9, 2)),
                      messages.vector(messages.TopDownCounts(6, 5, 3, 5, 8, 9, 7))])
    total = messages.total(messages.TopDownCounts, rows)
    assert total == (9, 6, 7, 6, 13, 18, 9) and all(isinstance(x, int) for x in total)
    summaries = messages.rows(messages.SsspSummary, np.vstack([
        messages.vector(messages.SsspSummary(1, 0.5, np.inf, 2, 0)),
        messages.vector(messages.SsspSummary(0, np.inf, 3.0, 1, 1, 10, 5.0, 4, 2.0, 1))]))
    assert summaries[0].far_min == np.inf and summaries[1].sample_edges == 10


def test_a_cpu_graph_keeps_dask_comms(dask_client2):
    edges = pd.DataFrame({"src": range(0, 199), "dst": range(1, 200)})
    import dask.dataframe as dd

    with dask_client2.as_current():
        graph = gpipe.Graph.from_edges(dd.from_pandas(edges, npartitions=2), directed=True,
                                       partitions=2)
        assert graph.num_partitions == 2 and graph.transport == "dask"
        with dask.config.set({nccl.CONFIG_KEY: "auto"}):
            graph = gpipe.Graph.from_edges(dd.from_pandas(edges, npartitions=2), directed=True,
                                           partitions=2)
            assert graph.transport == "dask"  # pandas partitions: NCCL cannot serve
        with dask.config.set({nccl.CONFIG_KEY: "nccl"}), pytest.raises(gpipe.InputError,
                                                                      match="nccl needs GPU"):
            gpipe.Graph.from_edges(dd.from_pandas(edges, npartitions=2), directed=True,
                                   partitions=2)
        with dask.config.set({nccl.CONFIG_KEY: "carrier pigeon"}), pytest.raises(
                gpipe.InputError, match="gpipe.transport must be"):
            gpipe.Graph.from_edges(dd.from_pandas(edges, npartitions=2), directed=True,
                                   partitions=2)


def test_an_owner_without_its_communicator_says_transport_lost():
    with pytest.raises(TransportLost, match="gpipe-nccl-gone"):
        with open_transport(ThreadChannel(peers.Mailbox(), 0, 2), "gpipe-nccl-gone", 2, "gpu"):
            pass


def test_a_lost_communicator_is_made_again_and_the_traversal_rerun(monkeypatch):
    class Built:
        layout = Layout(n=128, n_owners=2)
        parts, ids, vertex_dtype, backend, nccl_group = ["p0", "p1"], None, np.int64, "gpu", "old"
        owner_ids = None

    class Executor:
        started = []

        def run_together(self, fn, per_owner_args):
            self.started.append(per_owner_args[0][4])  # the group each owner was given
            if len(self.started) == 1:
                raise TransportLost("this worker holds no NCCL communicator old")
            return ["frame-0", "frame-1"]

        def wait(self, handles):
            pass

    made = []
    monkeypatch.setattr(nccl, "make_group", lambda executor, layout, backend, fresh: made.append(fresh) or "new")
    built, executor = Built(), Executor()
    handles = start_bfs(executor, built, np.array([0, 70]), None, None, False, True)
    assert handles == ["frame-0", "frame-1"]
    assert executor.started == ["old", "new"] and built.nccl_group == "new" and made == [True]
