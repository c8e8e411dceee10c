"""gpipe.Graph's own surface beyond the traversals (tests/test_api.py runs those)."""

from __future__ import annotations

import pandas as pd

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
