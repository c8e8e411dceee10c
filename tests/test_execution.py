"""Executors: persisting a frame keeps its rows, partitions and frame type on every path."""

import dask
import numpy as np
import pandas as pd
import pytest

from gpipe.engine import execution


def test_persist_keeps_every_partition(engine):
    pdf = pd.DataFrame({"src": range(10), "dst": range(1, 11)})
    frame = engine.frame(pdf, npartitions=3)
    held = execution.current(engine.client).persist(frame)
    assert held.npartitions == 3
    got = engine.run(held).sort_values("src").reset_index(drop=True)
    pd.testing.assert_frame_equal(got, pdf, check_dtype=False)  # cuDF comes back as Int64


def test_in_process_persist_does_not_hash_the_rows(monkeypatch):
    """Dask names a persisted collection by hashing its data; ours must not (cuDF copies the
    hashes of every row to the host for it)."""
    hashed = []
    normalize = dask.base.normalize_token.dispatch(pd.DataFrame)

    def counting(df):
        if len(df):  # the empty meta frame is hashed too, and costs nothing
            hashed.append(len(df))
        return normalize(df)

    monkeypatch.setitem(dask.base.normalize_token._lookup, pd.DataFrame, counting)
    frame = dask.dataframe.from_pandas(pd.DataFrame({"src": range(1000)}), npartitions=2)
    hashed.clear()
    held = execution.InProcess().persist(frame)
    assert hashed == []
    assert len(held.compute()) == 1000 and len(held) == 1000 and len(held.partitions[1].compute()) == 500
    assert hashed == []  # nor computing it or its length (gpipe.engine.computed)
    frame.persist()  # the check can fail: Dask's own persist does hash the partitions
    assert hashed


def test_held_shares_say_which_worker_holds_how_much_of_the_input(dask_client2):
    from gpipe.engine.execution import InProcess, OnCluster

    workers = sorted(dask_client2.scheduler_info()["workers"])
    small = dask_client2.scatter(np.zeros(1_000), workers=[workers[0]])
    large = dask_client2.scatter(np.zeros(3_000), workers=[workers[1]])
    shares = OnCluster(dask_client2).held_shares([small, large])
    assert shares[workers[0]] == pytest.approx(0.25, abs=0.01)
    assert shares[workers[1]] == pytest.approx(0.75, abs=0.01)
    assert InProcess().held_shares([np.zeros(3)]) == {}


def _address():
    from distributed import get_worker

    return get_worker().address


def test_a_cut_of_a_split_runs_where_the_split_is_held(dask_client2):
    """``holders`` names each handle's worker, and ``item(..., at=)`` takes its part there:
    the whole list never moves to another worker (issue 22: the build's peak)."""
    from gpipe.engine.execution import InProcess, OnCluster

    workers = sorted(dask_client2.scheduler_info()["workers"])
    executor = OnCluster(dask_client2)
    lists = [dask_client2.scatter([[np.zeros(10), np.ones(10)]], workers=[w], hash=False)[0] for w in workers]
    holders = executor.holders(lists)
    assert holders == workers
    for handle, at in zip(lists, holders):
        part = executor.item(handle, 1, at=at)
        np.testing.assert_array_equal(part.result(), np.ones(10))
        assert dask_client2.who_has([part])[part.key] == (at,)
        assert executor.submit(_address, at=at).result() == at
    assert InProcess().holders([np.zeros(3)]) == [None]
