"""gpipe.engine.computed: a Dask DataFrame over frames this process holds already (no client)."""

import dask
import dask.dataframe as dd
import pandas as pd
import pytest

from gpipe.engine.computed import computed_frame


@pytest.fixture
def parts():
    return [pd.DataFrame({"vertex": [1, 2, 3], "distance": pd.array([0, 1, None], dtype="Int64")}),
            pd.DataFrame({"vertex": [7, 8], "distance": pd.array([None, 2], dtype="Int64")})]


def test_partitions_are_the_frames_in_order(parts):
    frame = computed_frame(parts, parts[0].iloc[:0])
    assert isinstance(frame, dd.DataFrame)
    assert frame.npartitions == 2 and not frame.known_divisions
    assert {k: str(v) for k, v in frame.dtypes.items()} == {"vertex": "int64", "distance": "Int64"}
    pd.testing.assert_frame_equal(frame.compute(), pd.concat(parts))
    pd.testing.assert_frame_equal(frame.partitions[1].compute(), parts[1])
    assert len(frame.partitions[1]) == 2
    assert frame["vertex"].sum().compute() == 21
    assert frame.map_partitions(len).compute().tolist() == [3, 2]


def test_len_is_known_without_running_anything(parts):
    frame = computed_frame(parts, parts[0].iloc[:0])
    graphs = []

    def get(dsk, keys, **kwargs):  # a scheduler that notes the tasks it is asked to run
        graphs.append([str(key) for key in dict(dsk.__dask_graph__())])
        return dask.get(dsk, keys, **kwargs)

    with dask.config.set(scheduler=get):
        assert len(frame) == 5  # the collection knows it
        assert graphs == []
        assert frame.shape[0].compute() == 5  # Dask's planner knows it too
    assert len(graphs) == 1 and graphs[0]
    assert not any("computed-" in key for keys in graphs for key in keys)  # no partition task


def test_worker_frame_len_asks_no_scheduler(dask_client2):
    from gpipe.engine.computed import worker_frame

    frames = [pd.DataFrame({"vertex": range(k)}) for k in (3, 0, 4)]
    futures = dask_client2.scatter(frames)
    frame = worker_frame(futures, frames[0].iloc[:0], [3, 0, 4])
    with dask.config.set(scheduler=lambda *a, **k: pytest.fail("len() ran a computation")):
        assert len(frame) == 7
    with dask_client2.as_current():
        pd.testing.assert_frame_equal(frame.compute(), pd.concat(frames))
        assert len(frame[frame["vertex"] > 0]) == 5


def test_each_collection_has_its_own_name(parts):
    """Dask takes two collections of one name for the same data: frames of one shape and
    dtypes but other values must not share a name."""
    a = computed_frame(parts, parts[0].iloc[:0])
    b = computed_frame([p.assign(vertex=0) for p in parts], parts[0].iloc[:0])
    assert a._name != b._name
    assert dd.concat([a, b])["vertex"].compute().tolist() == [1, 2, 3, 7, 8, 0, 0, 0, 0, 0]


def test_a_client_started_later_computes_it(parts):
    """The expression is sent to a scheduler as Dask's own FromMap of the same name, which
    needs no gpipe to unpickle, holding the frames themselves."""
    import pickle

    from dask.dataframe.dask_expr.io.io import FromMap
    from distributed import Client, LocalCluster

    frame = computed_frame(parts, parts[0].iloc[:0])
    for expr in (frame.expr, frame.partitions[1].optimize().expr):  # the latter filtered
        sent = pickle.loads(pickle.dumps(expr))
        assert type(sent) is FromMap and sent._name == expr._name
        assert sent.npartitions == expr.npartitions
    with LocalCluster(n_workers=1, processes=False, dashboard_address=None) as cluster, Client(cluster):
        pd.testing.assert_frame_equal(frame.compute(), pd.concat(parts))
        pd.testing.assert_frame_equal(frame.partitions[1].compute(), parts[1])
        assert frame[frame["vertex"] > 2]["vertex"].sum().compute() == 18
