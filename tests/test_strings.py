"""String vertex ids (gpipe/engine/strings_cpu.py, gpipe/engine/strings_gpu.py) through the whole API.

A graph with string ids is the integer graph of tests/reference.py with each id turned into a
string; its answers are the integer twin's from SciPy once the result's strings are mapped
back, and its parent tree is checked by gpipe.tools.verify on the integer twin. Every test runs on
each path of the ``engine`` fixture (no client, a 2-worker LocalCluster with the graph split
over both, and cuDF partitions, marked ``gpu``).
"""

from __future__ import annotations

import dask
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import gpipe
import reference
from gpipe.engine import backend as backends
from gpipe.tools.verify import check_bfs_tree, check_sssp_tree

pytestmark = pytest.mark.timeout(180)


# ---------------------------------------------------------------------------------------------
# The string twin of an integer graph.


def names(ids, style):
    """A distinct string for each integer id: ``v<id>``, or uuid-like hex words."""
    ids = np.asarray(ids, dtype=np.int64)
    if style == "v":
        return np.char.add("v", ids.astype(str)).astype(object)
    mixed = (ids.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(16)
    hexes = np.char.mod("%012x", mixed)
    return np.char.add(np.char.add(hexes, "-id-"), ids.astype(str)).astype(object)


def string_twin(edges, style="v", dtype=object, columns=("src", "dst")):
    """``edges`` with each id column's integers turned into strings of ``dtype``; the map back."""
    twin = edges.copy()
    for column in columns:
        twin[column] = pd.Series(names(edges[column], style), index=edges.index).astype(dtype)
    ids = np.unique(np.concatenate([edges[c].to_numpy() for c in columns]))
    back = pd.Series(ids, index=names(ids, style))
    return twin, back


def to_integers(result, back):
    """A computed result (pandas) with string ``vertex``/``parent`` mapped to the integer ids."""
    vertex = result["vertex"].astype(object).map(back)
    assert vertex.notna().all(), "a result vertex is no id of the graph"
    parent = result["parent"].astype(object).map(back)
    assert (parent.isna() == result["parent"].isna()).all(), "a parent is no id of the graph"
    return pd.DataFrame({"vertex": vertex.astype("int64"), "distance": result["distance"],
                         "parent": parent.astype("Int64")})


def run(engine, query, twin, back, npartitions=3, convert_string=True, **kwargs):
    """``query(frame, ...)`` on the engine's frame of ``twin``, checked for string columns of the
    input's dtype; the result as pandas with integer ids."""
    with dask.config.set({"dataframe.convert-string": convert_string}):
        frame = engine.frame(twin, npartitions)
        result = query(frame, **kwargs)
    computed = engine.compute(result)
    for column in ("vertex", "parent"):
        assert backends.is_string_dtype(computed.dtypes[column]), computed.dtypes[column]
        assert str(result._meta.dtypes[column]) == str(computed.dtypes[column]), column
    if not engine.gpu:
        assert computed.dtypes["vertex"] == frame.dtypes["src"]
    return to_integers(engine.pandas(computed), back)


# ---------------------------------------------------------------------------------------------
# Against SciPy on the integer twin.

CASES = {
    "directed": dict(graph=dict(n=400, m=1400), directed=True, sources=1),
    "undirected": dict(graph=dict(n=400, m=600), directed=False, sources=1),
    "several-sources": dict(graph=dict(n=500, m=900, components=3), directed=True, sources=4),
    "self-loops-and-duplicates": dict(
        graph=dict(n=300, m=700, duplicates=200, self_loops=30, loop_only_vertex=True),
        directed=False, sources=2),
}


@pytest.mark.parametrize("style", ["v", "hex"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_bfs_with_string_ids_matches_scipy(engine, name, style):
    case = CASES[name]
    edges = reference.random_edges(seed=len(name), ids="sparse", **case["graph"])
    sources = reference.pick_sources(edges, case["sources"], seed=5)
    twin, back = string_twin(edges, style)
    source_names = names(sources, style).tolist()
    out = run(engine, gpipe.bfs, twin, back, source=source_names, directed=case["directed"])
    reference.assert_distances(out, reference.expected_bfs(edges, sources, directed=case["directed"]))
    check_bfs_tree(edges, out, sources, directed=case["directed"])
    assert out["distance"].notna().sum() > 1, "degenerate case: nothing reached"


@pytest.mark.parametrize("directed", [True, False], ids=["directed", "undirected"])
def test_sssp_with_string_ids_matches_scipy(engine, directed):
    edges = reference.random_edges(400, 1200, seed=17, weights="positive", ids="negative")
    sources = reference.pick_sources(edges, 2, seed=17)
    twin, back = string_twin(edges, "hex")
    out = run(engine, gpipe.sssp, twin, back, source=names(sources, "hex").tolist(), directed=directed)
    reference.assert_distances(out, reference.expected_sssp(edges, sources, directed=directed), exact=False)
    check_sssp_tree(edges, out, sources, directed=directed)


@pytest.mark.parametrize("dtype", [object, "string[python]", "string[pyarrow]", "str",
                                   pd.ArrowDtype(pa.string())],
                         ids=["object", "string-python", "string-pyarrow", "str", "arrow-string"])
def test_pandas_string_dtypes_come_back_as_they_went_in(cpu_engine, dtype):
    edges = reference.random_edges(200, 500, seed=23)
    source = reference.pick_sources(edges, 1, seed=23)[0]
    twin, back = string_twin(edges, "v", dtype=dtype)
    # Dask would turn object columns into Arrow strings; the test keeps each dtype as it is.
    out = run(cpu_engine, gpipe.bfs, twin, back, convert_string=False, source=f"v{source}",
              directed=False)
    reference.assert_distances(out, reference.expected_bfs(edges, [source], directed=False))


def test_graph_reuse_and_its_sources(engine):
    edges = reference.random_edges(300, 900, seed=29, weights="positive")
    twin, back = string_twin(edges, "v")
    graph = gpipe.Graph.from_edges(engine.frame(twin), weight="weight")
    assert graph.num_vertices == len(back)
    for sources in (reference.pick_sources(edges, 1, seed=1), reference.pick_sources(edges, 3, seed=2)):
        source_names = names(sources, "v").tolist()
        out = to_integers(engine.run(graph.bfs(source_names if len(sources) > 1 else source_names[0])), back)
        reference.assert_distances(out, reference.expected_bfs(edges, sources, directed=True))
        out = to_integers(engine.run(graph.sssp(source_names)), back)
        reference.assert_distances(out, reference.expected_sssp(edges, sources, directed=True), exact=False)
        assert len(graph.bfs(source_names)) == len(back)


# ---------------------------------------------------------------------------------------------
# Bad input.


@pytest.fixture
def string_graph(engine):
    edges = pd.DataFrame({"src": ["a", "b", "c"], "dst": ["b", "c", "d"], "weight": [1.0, 2.0, 3.0]})
    return gpipe.Graph.from_edges(engine.frame(edges, 2), weight="weight")


def test_a_string_source_not_in_the_graph_is_named(string_graph):
    with pytest.raises(gpipe.InputError, match="source vertex 'zebra' is not in the graph"):
        string_graph.bfs(["a", "zebra"])
    with pytest.raises(gpipe.InputError, match="'zebra'"):
        string_graph.sssp("zebra")


@pytest.mark.parametrize("source", [1, ["a", 2], np.int64(3)])
def test_an_integer_source_on_a_string_graph_is_an_input_error(string_graph, source):
    with pytest.raises(gpipe.InputError, match="is not a string"):
        string_graph.bfs(source)


def test_a_string_source_on_an_integer_graph_is_an_input_error(engine):
    graph = gpipe.Graph.from_edges(engine.frame(pd.DataFrame({"src": [1, 2], "dst": [2, 3]}), 1))
    with pytest.raises(gpipe.InputError, match="'2' is a string"):
        graph.bfs("2")


def test_string_and_integer_columns_together_are_an_input_error_naming_both(engine):
    edges = pd.DataFrame({"from": ["a", "b"], "to": [1, 2]})
    with pytest.raises(gpipe.InputError, match=r"'from' \(.*\) and 'to' \(int64\) must both hold strings"):
        gpipe.bfs(engine.frame(edges, 1), "a", src="from", dst="to")


def test_an_object_column_of_numbers_is_an_input_error_naming_it(cpu_engine):
    edges = pd.DataFrame({"src": pd.Series(["a", 7], dtype=object),
                          "dst": pd.Series(["b", "c"], dtype=object)})
    with dask.config.set({"dataframe.convert-string": False}):
        frame = cpu_engine.frame(edges, 1)
    with pytest.raises(gpipe.InputError, match=r"'src' holds a value that is not a string \(7\)"):
        gpipe.bfs(frame, "a")


def test_null_string_ids_are_an_input_error(engine):
    edges = pd.DataFrame({"src": pd.Series(["a", None], dtype="string"), "dst": ["b", "c"]})
    edges["dst"] = edges["dst"].astype("string")
    with pytest.raises(gpipe.InputError, match="'src' holds null values"):
        gpipe.bfs(engine.frame(edges, 1), "a")


# ---------------------------------------------------------------------------------------------
# The strings modules' promises, on both backends.


@pytest.mark.parametrize("backend", [pytest.param("cpu", id="cpu"),
                                     pytest.param("gpu", id="gpu", marks=pytest.mark.gpu)])
def test_strings_contract(backend):
    be = backends.get(backend)
    frame = be.frames.DataFrame({"a": ["pear", "fig", "apple", "fig"],
                                 "b": ["kiwi", "apple", "pear", "date"]})
    strings = be.strings
    ids = strings.distinct(strings.concat([strings.column(frame, "a"), strings.column(frame, "b")]))
    assert strings.holds(ids) and not strings.holds(be.xp.arange(3))
    assert strings.to_host(ids).tolist() == ["apple", "date", "fig", "kiwi", "pear"]
    assert be.to_host(strings.rank(ids, strings.column(frame, "a"))).tolist() == [4, 2, 0, 2]
    assert strings.find(ids, ["kiwi", "plum"]).tolist() == [3, -1]
    assert strings.at(ids, 1) == "date"
    positions = be.xp.asarray(np.array([4, -1, 0]))
    taken = strings.take(ids, positions, be.xp.asarray(np.array([False, True, False])))
    column = strings.to_column(taken, pd.Series(["x"]).dtype)
    host = column if isinstance(column, pd.Series) else column.to_pandas()
    assert host.isna().tolist() == [False, True, False]
    assert host.iloc[[0, 2]].tolist() == ["pear", "apple"]
