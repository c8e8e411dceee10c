"""Bad input raises gpipe.InputError (a ValueError) whose message names the culprit.

Runs on the no-client and 2-worker paths (``cpu_engine``). Each check accepts the error at
the call or when the result is computed: the contract is that the query fails with
InputError, not at which line. Column names are unusual on purpose, so that finding one in
the message means the message names it.
"""

from __future__ import annotations

import re

import numpy as np
import dask.dataframe as dd
import pandas as pd
import pytest

import gpipe
from gpipe.io import validate

pytestmark = pytest.mark.timeout(120)


def edges_frame(**extra):
    """A small valid edge list with ids in head_id -> tail_id and weights in cost."""
    frame = pd.DataFrame({
        "head_id": np.array([0, 1, 2, 3, 1], dtype=np.int64),
        "tail_id": np.array([1, 2, 3, 4, 4], dtype=np.int64),
        "cost": [1.0, 2.0, 0.5, 1.0, 4.0],
    })
    for name, values in extra.items():
        frame[name] = values
    return frame


COLS = dict(src="head_id", dst="tail_id")


def input_error(fn, *needles):
    """Run ``fn`` (and compute what it returns); assert InputError naming every needle."""
    with pytest.raises(gpipe.InputError) as info:
        result = fn()
        if hasattr(result, "compute"):
            result.compute()
    err = info.value
    assert isinstance(err, ValueError)
    assert isinstance(err, gpipe.GpipeError)
    message = str(err)
    for needle in needles:
        if isinstance(needle, re.Pattern):
            assert needle.search(message), f"{needle.pattern!r} not in message {message!r}"
        else:
            assert str(needle) in message, f"{needle!r} not in message {message!r}"
    return message


# ---------------------------------------------------------------------------------------------
# Columns.


@pytest.mark.parametrize("missing", ["src", "dst"])
def test_missing_id_column(cpu_engine, missing):
    frame = cpu_engine.frame(edges_frame())
    names = dict(COLS)
    names[missing] = "no_such_column"
    input_error(lambda: gpipe.bfs(frame, 0, **names), "no_such_column")
    input_error(lambda: gpipe.sssp(frame, 0, weight="cost", **names), "no_such_column")
    input_error(lambda: gpipe.Graph.from_edges(frame, **names).bfs(0), "no_such_column")


def test_default_column_names_missing(cpu_engine):
    frame = cpu_engine.frame(edges_frame())
    input_error(lambda: gpipe.bfs(frame, 0), "src")


def test_missing_weight_column(cpu_engine):
    frame = cpu_engine.frame(edges_frame())
    input_error(lambda: gpipe.sssp(frame, 0, weight="price", **COLS), "price")
    input_error(lambda: gpipe.Graph.from_edges(frame, weight="price", **COLS).sssp(0), "price")


def test_sssp_without_weight_column(cpu_engine):
    frame = cpu_engine.frame(edges_frame().drop(columns="cost"))
    input_error(lambda: gpipe.sssp(frame, 0, **COLS), "weight")
    input_error(lambda: gpipe.Graph.from_edges(frame, **COLS).sssp(0), "weight")


def test_graph_built_without_weight_cannot_sssp(cpu_engine):
    frame = cpu_engine.frame(edges_frame(weight=1.0))  # a weight column exists but was not named
    graph = gpipe.Graph.from_edges(frame, **COLS)
    input_error(lambda: graph.sssp(0), "weight")
    graph.bfs(0).compute()  # the graph itself is fine


@pytest.mark.parametrize("column", ["head_id", "tail_id"])
@pytest.mark.parametrize("kind", ["float", "float-with-nan", "string"])
def test_non_integer_ids(cpu_engine, column, kind):
    pdf = edges_frame()
    if kind == "float":
        pdf[column] = pdf[column].astype(np.float64)
    elif kind == "float-with-nan":
        pdf[column] = pdf[column].astype(np.float64)
        pdf.loc[2, column] = np.nan
    else:
        pdf[column] = pdf[column].astype(str)
    frame = cpu_engine.frame(pdf)
    input_error(lambda: gpipe.bfs(frame, 0, **COLS), column)
    input_error(lambda: gpipe.sssp(frame, 0, weight="cost", **COLS), column)
    input_error(lambda: gpipe.Graph.from_edges(frame, **COLS).bfs(0), column)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf], ids=["nan", "inf", "-inf"])
def test_non_finite_weights(cpu_engine, bad):
    pdf = edges_frame()
    pdf.loc[3, "cost"] = bad
    frame = cpu_engine.frame(pdf, npartitions=2)
    input_error(lambda: gpipe.sssp(frame, 0, weight="cost", **COLS), "cost")
    input_error(lambda: gpipe.Graph.from_edges(frame, weight="cost", **COLS).sssp(0), "cost")


def test_non_finite_weight_in_unreachable_part(cpu_engine):
    """The weight is checked as input, not only where the traversal happens to look."""
    pdf = edges_frame()
    pdf.loc[len(pdf)] = [50, 51, np.nan]
    frame = cpu_engine.frame(pdf, npartitions=2)
    input_error(lambda: gpipe.sssp(frame, 0, weight="cost", **COLS), "cost")


def test_string_weights(cpu_engine):
    frame = cpu_engine.frame(edges_frame(label=["a", "b", "c", "d", "e"]))
    input_error(lambda: gpipe.sssp(frame, 0, weight="label", **COLS), "label")


# ---------------------------------------------------------------------------------------------
# Sources.


@pytest.mark.parametrize("source", [12345, -1, 5, 10**15], ids=str)
def test_source_not_in_graph(cpu_engine, source):
    """-1 and 5 are the traps of the dense-id path (ids 0..4 used as they are)."""
    frame = cpu_engine.frame(edges_frame())
    input_error(lambda: gpipe.bfs(frame, source, **COLS), str(source))
    input_error(lambda: gpipe.sssp(frame, source, weight="cost", **COLS), str(source))


def test_source_in_a_hole_of_dense_ids(cpu_engine):
    pdf = pd.DataFrame({"src": [0, 1, 3, 4], "dst": [1, 3, 4, 6]})  # 2 and 5 never occur
    frame = cpu_engine.frame(pdf, npartitions=2)
    input_error(lambda: gpipe.bfs(frame, 2), "2")
    input_error(lambda: gpipe.bfs(frame, [0, 5]), "5")


def test_one_of_several_sources_not_in_graph(cpu_engine):
    frame = cpu_engine.frame(edges_frame())
    input_error(lambda: gpipe.bfs(frame, [0, 3, 777777], **COLS), "777777")
    graph = gpipe.Graph.from_edges(frame, weight="cost", **COLS)
    input_error(lambda: graph.bfs([1, 888888]), "888888")
    input_error(lambda: graph.sssp(999999), "999999")


def test_source_outside_the_id_dtype(cpu_engine):
    pdf = edges_frame().astype({"head_id": "int32", "tail_id": "int32"})
    frame = cpu_engine.frame(pdf)
    input_error(lambda: gpipe.bfs(frame, 2**40, **COLS), str(2**40))


def test_source_in_sparse_id_graph(cpu_engine):
    base = 10**15
    pdf = pd.DataFrame({"src": [base, base + 7], "dst": [base + 7, base + 9]})
    frame = cpu_engine.frame(pdf, npartitions=1)
    input_error(lambda: gpipe.bfs(frame, base + 8), str(base + 8))
    input_error(lambda: gpipe.bfs(frame, 0), re.compile(r"(?<!\d)0(?!\d)"))


def test_source_not_in_a_one_owner_graph_on_a_cluster(dask_client2):
    """One owner with renumbered ids looks its sources up in the traversal's own task; a
    missing one still fails the query, naming it, and the graph answers the next query."""
    pdf = pd.DataFrame({"src": [10**12, 10**12 + 7, 3], "dst": [10**12 + 7, 3, 10**12 + 9]})
    with dask_client2.as_current():
        graph = gpipe.Graph.from_edges(dd.from_pandas(pdf, npartitions=2), partitions=1)
        assert graph.num_partitions == 1
        input_error(lambda: graph.bfs(10**12 + 8), str(10**12 + 8))
        input_error(lambda: graph.bfs([3, -5]), "-5")
        result = graph.bfs(10**12).compute().set_index("vertex")["distance"]
        assert result.to_dict() == {10**12: 0, 10**12 + 7: 1, 3: 2, 10**12 + 9: 3}


# ---------------------------------------------------------------------------------------------
# Empty edge lists and options.


def test_empty_edge_list(cpu_engine):
    pdf = pd.DataFrame({"src": np.array([], dtype=np.int64), "dst": np.array([], dtype=np.int64),
                        "weight": np.array([], dtype=np.float64)})
    frame = cpu_engine.frame(pdf, npartitions=1)
    empty = re.compile(r"(?i)empty|no edges|zero edges|0 edges")
    input_error(lambda: gpipe.bfs(frame, 0), empty)
    input_error(lambda: gpipe.sssp(frame, 0), empty)
    input_error(lambda: gpipe.Graph.from_edges(frame).bfs(0), empty)


def test_empty_after_filtering(cpu_engine):
    frame = cpu_engine.frame(edges_frame(), npartitions=2)
    frame = frame[frame["head_id"] > 100]
    input_error(lambda: gpipe.bfs(frame, 0, **COLS), re.compile(r"(?i)empty|no edges|0 edges"))


@pytest.mark.parametrize("limit", [-1, -5])
def test_negative_depth_limit(cpu_engine, limit):
    frame = cpu_engine.frame(edges_frame())
    input_error(lambda: gpipe.bfs(frame, 0, depth_limit=limit, **COLS), "depth_limit")
    graph = gpipe.Graph.from_edges(frame, **COLS)
    input_error(lambda: graph.bfs(0, depth_limit=limit), "depth_limit")


def test_read_edges_missing_column(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "edges.parquet"
    pq.write_table(pa.Table.from_pandas(edges_frame(), preserve_index=False), path)
    input_error(lambda: gpipe.read_edges(path, src="nope_src", dst="tail_id"), "nope_src")
    input_error(lambda: gpipe.read_edges(path, src="head_id", dst="tail_id", weight="nope_w"),
                "nope_w")


def test_negative_cycle_error_is_not_an_input_error(cpu_engine):
    pdf = pd.DataFrame({"src": [0, 1, 2], "dst": [1, 2, 1], "weight": [1.0, -2.0, 1.0]})
    frame = cpu_engine.frame(pdf, npartitions=1)
    with pytest.raises(gpipe.NegativeCycleError) as info:
        gpipe.sssp(frame, 0).compute()
    assert not isinstance(info.value, gpipe.InputError)


@pytest.mark.parametrize("source, strings, expected", [
    ("a", True, ["a"]),
    (["a", "b"], True, ["a", "b"]),
    (np.array(["a", "b"]), True, ["a", "b"]),
    (7, False, [7]),
    ([np.int64(7), 8], False, [7, 8]),
])
def test_sources_of_either_kind(source, strings, expected):
    values = validate.sources(source, strings=strings)
    assert values.tolist() == expected and all(type(v) is type(expected[0]) for v in values)


@pytest.mark.parametrize("source, strings, words", [
    (["a", 1], True, "1 is not a string"),
    ([1, "a"], False, "'a' is a string"),  # kept apart: NumPy would make both strings
    ("7", False, "'7' is a string"),
    ([], True, "empty"),
])
def test_sources_of_the_wrong_kind(source, strings, words):
    with pytest.raises(gpipe.InputError, match=words):
        validate.sources(source, strings=strings)
