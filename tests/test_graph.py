"""gpipe.Graph's own surface beyond the traversals (tests/test_api.py runs those)."""

from __future__ import annotations

import pandas as pd
import pytest

import gpipe


def test_repr_of_renumbered_ids_counts_vertices():
    """A negative id makes the build renumber the ids, and count them."""
    edges = pd.DataFrame({"src": [-10, 20], "dst": [20, 30], "w": [0.5, 2.0]})
    graph = gpipe.Graph.from_edges(edges, weight="w")
    assert repr(graph) == "Graph(vertices=3, edges=2, partitions=1, backend='cpu', weighted=True, directed=True)"


def test_repr_of_ids_kept_as_they_are_gives_their_range():
    """Ids 1..3 are kept as they are: id 0 never occurs, so the range is not the vertex count."""
    edges = pd.DataFrame({"src": [1, 2, 2], "dst": [2, 3, 2]})
    graph = gpipe.Graph.from_edges(edges, directed=False)
    assert repr(graph) == "Graph(vertex_ids=4, edges=3, partitions=1, backend='cpu', weighted=False, directed=False)"
    assert graph.num_vertices == 3


# ---------------------------------------------------------------------------------------------
# A change of Dask client.


def _local_client():
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None)
    return cluster, Client(cluster)


def test_a_graph_built_without_a_client_keeps_answering_under_one(tmp_path):
    """Its partitions live in this process, so its queries keep running here; its results,
    made before or after the client started, are computed by the client's workers."""
    import dask.dataframe as dd

    edges = pd.DataFrame({"src": [0, 1, 2, 3, 7], "dst": [1, 2, 3, 0, 8], "w": [1.0, 2.0, 3.0, 4.0, 1.0]})
    graph = gpipe.Graph.from_edges(edges, weight="w")
    before = graph.sssp(0)
    expected = before.compute().sort_values("vertex").reset_index(drop=True)
    cluster, client = _local_client()
    with cluster, client:
        assert len(before) == 6
        pd.testing.assert_frame_equal(before.compute().sort_values("vertex").reset_index(drop=True), expected)
        after = graph.sssp(0)
        pd.testing.assert_frame_equal(after.compute().sort_values("vertex").reset_index(drop=True), expected)
        names = dd.from_pandas(pd.DataFrame({"vertex": [0, 3, 8], "name": ["a", "d", "i"]}), npartitions=2)
        joined = before.merge(names, on="vertex").compute().sort_values("vertex")
        assert joined["name"].tolist() == ["a", "d", "i"] and joined["distance"].tolist()[:2] == [0.0, 6.0]
        after[after["distance"] > 1].to_parquet(str(tmp_path / "out"))
        assert sorted(pd.read_parquet(tmp_path / "out")["vertex"].tolist()) == [2, 3]
        assert graph.num_partitions == 1


def test_a_graph_whose_client_was_closed_says_to_build_it_again():
    edges = pd.DataFrame({"src": [0, 1, 2], "dst": [1, 2, 0]})
    cluster, client = _local_client()
    with cluster, client:
        graph = gpipe.Graph.from_edges(edges)
        assert len(graph.bfs(0).compute()) == 3
    with pytest.raises(gpipe.ClientClosed, match="closed; build it again with gpipe.Graph.from_edges"):
        graph.bfs(0)
    cluster, client = _local_client()  # another client, active now, changes nothing for it
    with cluster, client, pytest.raises(gpipe.GraphLost, match="client that is closed"):
        graph.bfs(0)


def test_no_path_is_a_gpipe_error_but_not_an_input_error():
    import gpipe

    g = gpipe.Graph.from_edges(pd.DataFrame({"src": [1, 3], "dst": [2, 4]}))
    with pytest.raises(gpipe.NoPath) as raised:
        g.path(1, 4)
    assert isinstance(raised.value, gpipe.GpipeError)
    assert not isinstance(raised.value, gpipe.InputError)
    assert g.path(1, 2) == [1, 2]
    assert list(g.bfs(1, parents=False)._meta.columns) == ["vertex", "distance"]
