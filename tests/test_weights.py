"""32-bit weights (gpipe/partitioning/weights.py): the width a graph stores its weights in.

The automatic choice (float32 where exact), the forced widths, the InputError of a weight that
float32 cannot hold, and SSSP over float32 weights against SciPy on every path (no client, two
owners over Dask, the GPU; two GPUs, marked ``multigpu``): a float32 graph's distances equal
SciPy's on its weights as float64 values (so a graph of integers below 2**24 gives the float64
graph's distances exactly), and its trees are checked edge by edge. Also the sizing (4 bytes
less per stored edge), and where the width is said: ``Graph.weight_dtype``, the job report.
"""

from __future__ import annotations

import dask
import numpy as np
import pandas as pd
import pytest

import gpipe
import reference
from gpipe import InputError
from gpipe.engine import execution
from gpipe.io import validate
from gpipe.partitioning import build
from gpipe.partitioning import weights
from gpipe.partitioning.sizing import GraphSize
from gpipe.tools.verify import check_sssp_tree

pytestmark = pytest.mark.timeout(180)


def weighted_edges(kind, *, n=300, m=1200, seed=3):
    """A random edge list whose ``weight`` column is of ``kind``: ``small-int`` (int64, 0..1000),
    ``large-int`` (int64 around 2**24, one of them 2**24), ``float32`` (uniform in [0.5, 10): sums
    of them are exact in float64), ``float64`` (the same values in float64, and 0.1s, which
    float32 rounds), ``negative-int`` (a DAG's int32 weights from -5 to 10)."""
    if kind == "negative-int":
        edges = reference.random_edges(n, m, seed=seed, weights="dag_negative")
        edges["weight"] = edges["weight"].astype(np.int32)
        return edges
    edges = reference.random_edges(n, m, seed=seed)
    rng = np.random.default_rng(seed)
    if kind == "small-int":
        values = rng.integers(0, 1001, m)
    elif kind == "large-int":
        values = rng.integers(2**24 - 50, 2**24 + 1, m)
        values[0] = 2**24
    elif kind == "float32":
        values = rng.uniform(0.5, 10.0, m).astype(np.float32)
    else:
        values = rng.uniform(0.5, 10.0, m)
        values[::7] = 0.1
    edges["weight"] = values
    return edges


def as_float32(edges):
    """``edges`` with its weights rounded to float32, then widened back: what a float32 graph adds."""
    rounded = edges.copy()
    rounded["weight"] = rounded["weight"].astype(np.float32).astype(np.float64)
    return rounded


# ---------------------------------------------------------------------------------------------
# The choice.


@pytest.mark.parametrize("column,low,high,expected", [
    ("int64", -5, 1000, "float32"),
    ("int32", -(2**24 - 1), 2**24 - 1, "float32"),
    ("int64", 0, 2**24, "float64"),
    ("int64", -(2**24), 3, "float64"),
    ("uint8", 0, 255, "float32"),
    ("float32", 0.1, 3e38, "float32"),
    ("float16", 0.5, 2.0, "float32"),
    ("float64", 1.0, 2.0, "float64"),
    ("Int64", 1, 9, "float32"),
])
def test_auto_takes_float32_where_it_is_exact(column, low, high, expected):
    dtype = pd.Series([], dtype=column).dtype
    assert weights.choose(None, dtype, low, high, "w") == np.dtype(expected)
    assert weights.narrowest(None, dtype).itemsize <= np.dtype(expected).itemsize


def test_a_forced_width_is_taken_and_float32_overflow_names_column_and_value():
    assert weights.choose("float64", np.dtype("int8"), 1, 2, "w") == np.float64
    assert weights.choose("float32", np.dtype("float64"), 0.1, 2**60, "w") == np.float32
    assert weights.choose("float32", np.dtype("float64"), -3.4028235e38, 3.4028235e38, "w") == np.float32
    with pytest.raises(InputError, match=r"weight column 'cost' holds 1e\+39, beyond float32's range"):
        weights.choose("float32", np.dtype("float64"), 1.0, 1e39, "cost")
    with pytest.raises(InputError, match=r"'cost' holds -1e\+39"):
        weights.choose("float32", np.dtype("float64"), -1e39, 1.0, "cost")


@pytest.mark.parametrize("value", ["float16", "int32", "double precision", 4, True, [1]])
def test_weight_dtype_must_be_auto_float32_or_float64(value):
    with pytest.raises(InputError, match="weight_dtype must be None, 'auto', 'float32' or 'float64'"):
        validate.weight_dtype(value)


def test_weight_dtype_spellings():
    assert validate.weight_dtype(None) is None and validate.weight_dtype("auto") is None
    assert validate.weight_dtype(np.float32) == "float32" and validate.weight_dtype("float64") == "float64"


# ---------------------------------------------------------------------------------------------
# Graphs: the width chosen, and SSSP against SciPy on every path.

AUTO_CASES = {"small-int": "float32", "large-int": "float64", "float32": "float32", "float64": "float64"}


def check_sssp(engine, edges, graph, source, *, directed, stored=None):
    """``graph.sssp(source)`` against SciPy on the weights it stores (``stored``: that edge
    list, default ``edges``), exactly; its parent tree against the same."""
    stored = edges if stored is None else stored
    out = engine.run(graph.sssp(source))
    # float64 whatever the weights' width: NaN-holding in pandas, nullable (Float64) once a
    # cuDF result comes to pandas
    assert str(out["distance"].dtype).lower() == "float64"
    expected = reference.expected_sssp(stored, source, directed=directed)
    reference.assert_distances(out, expected, exact=True)
    check_sssp_tree(stored, out, source, directed=directed)
    assert out["distance"].notna().sum() > 50, "degenerate case: little reached"
    return out


@pytest.mark.parametrize("kind", sorted(AUTO_CASES))
def test_auto_width_and_distances_match_scipy(engine, kind):
    edges = weighted_edges(kind)
    graph = gpipe.Graph.from_edges(engine.frame(edges), directed=False, weight="weight")
    assert graph.weight_dtype == AUTO_CASES[kind]
    assert graph.num_partitions == (2 if engine.name == "cluster" else 1)
    source = reference.pick_sources(edges, 1, seed=1)[0]
    out = check_sssp(engine, edges, graph, source, directed=False)
    if kind == "small-int":  # float32 storage gives the float64 graph's distances exactly
        wide = gpipe.Graph.from_edges(engine.frame(edges), directed=False, weight="weight",
                                      weight_dtype="float64")
        assert wide.weight_dtype == "float64"
        pd.testing.assert_series_equal(reference.result_distances(out),
                                       reference.result_distances(engine.run(wide.sssp(source))))


def test_forced_float32_rounds_and_sums_in_float64(engine):
    edges = weighted_edges("float64")
    graph = gpipe.Graph.from_edges(engine.frame(edges), directed=True, weight="weight",
                                   weight_dtype="float32")
    assert graph.weight_dtype == "float32"
    source = reference.pick_sources(edges, 1, seed=2)[0]
    check_sssp(engine, edges, graph, source, directed=True, stored=as_float32(edges))


def test_negative_integer_weights_as_float32(engine):
    """Bellman-Ford (one owner: the relaxation rounds; several: the owner kernels) and the
    batch kernels' Bellman-Ford per source, over float32 weights."""
    edges = weighted_edges("negative-int", n=200, m=700)
    graph = gpipe.Graph.from_edges(engine.frame(edges), directed=True, weight="weight")
    assert graph.weight_dtype == "float32"
    source = reference.widest_source(edges, directed=True)
    check_sssp(engine, edges, graph, source, directed=True)
    table = engine.pandas(graph.sssp_each([source], parents=True).compute())
    expected = reference.expected_sssp(edges, source, directed=True).dropna()
    got = table.set_index("vertex")["distance"].sort_index()
    np.testing.assert_array_equal(got.to_numpy(), expected.to_numpy())


def test_float32_weights_per_source_match_scipy(engine):
    edges = weighted_edges("float32")
    graph = gpipe.Graph.from_edges(engine.frame(edges), directed=False, weight="weight")
    sources = [int(s) for s in reference.pick_sources(edges, 3, seed=4)]
    table = engine.pandas(graph.sssp_each(sources, parents=True).compute())
    for source in sources:
        rows = table[table["source"] == source]
        expected = reference.expected_sssp(edges, source, directed=False).dropna()
        got = rows.set_index("vertex")["distance"].sort_index()
        np.testing.assert_array_equal(got.to_numpy(), expected.to_numpy())
        check_sssp_tree(edges, rows[["vertex", "distance", "parent"]], source, directed=False)


def test_a_weight_beyond_float32_is_an_input_error(engine):
    edges = weighted_edges("float64", n=50, m=100)
    edges.loc[7, "weight"] = 1e39
    with pytest.raises(InputError, match=r"weight column 'weight' holds 1e\+39"):
        gpipe.sssp(engine.frame(edges), int(edges["src"].iloc[0]), weight_dtype="float32")
    auto = gpipe.Graph.from_edges(engine.frame(edges), weight="weight")  # auto: float64 holds it
    assert auto.weight_dtype == "float64"


@pytest.mark.multigpu
def test_two_gpus_float32_weights_match_scipy(multigpu_engine):
    """kernels/sssp_owners.cu (and csr.cu) over float32 weights, two owners on two GPUs."""
    for kind, directed in (("float32", False), ("negative-int", True)):
        edges = weighted_edges(kind, n=300, m=1200)
        graph = gpipe.Graph.from_edges(multigpu_engine.frame(edges), directed=directed, weight="weight")
        assert graph.num_partitions == 2 and graph.weight_dtype == "float32"
        source = reference.widest_source(edges, directed=directed)
        check_sssp(multigpu_engine, edges, graph, source, directed=directed)


# ---------------------------------------------------------------------------------------------
# Where the width is taken from, and said.


def test_read_edges_keeps_the_width_and_an_explicit_one_wins(tmp_path):
    edges = weighted_edges("float64", n=60, m=200)
    edges.to_parquet(tmp_path / "edges.parquet", index=False)
    frame = gpipe.read_edges(tmp_path / "edges.parquet", backend="cpu", weight_dtype="float32")
    assert gpipe.Graph.from_edges(frame).weight_dtype == "float32"
    assert gpipe.Graph.from_edges(frame, weight_dtype="auto").weight_dtype == "float64"
    assert gpipe.Graph.from_edges(frame, weight=False).weight_dtype is None
    with pytest.raises(InputError, match="weight_dtype must be"):
        gpipe.read_edges(tmp_path / "edges.parquet", weight_dtype="half")


def test_the_partition_holds_the_width():
    edges = weighted_edges("small-int", n=60, m=200)
    graph = gpipe.Graph.from_edges(edges, directed=False, weight="weight")
    assert graph.engine.built.parts[0].weights.dtype == np.float32


def test_the_job_report_and_the_cli_say_the_width(tmp_path):
    from gpipe.io import report as job
    from gpipe.tools.cli import main

    edges = weighted_edges("float64", n=60, m=200)
    folder = tmp_path / "edges"
    folder.mkdir()
    edges.to_parquet(folder / "part.0.parquet", index=False)
    source = str(int(edges["src"].iloc[0]))
    for asked, stored in (("auto", "float64"), ("float32", "float32")):
        out = tmp_path / f"out-{asked}"
        assert main(["-q", "sssp", str(folder), "--source", source, "--out", str(out),
                     "--weight-dtype", asked]) == 0
        report = job.read_report(out)
        assert report["weight_dtype"] == stored and report["config"]["edges"]["weight_dtype"] == asked


# ---------------------------------------------------------------------------------------------
# Sizing: 4 bytes less per stored edge's weight.


def test_sizing_counts_four_bytes_per_float32_weight():
    wide = GraphSize(rows=10**6, n=10**5, directed=False, weighted=True)
    narrow = GraphSize(rows=10**6, n=10**5, directed=False, weighted=True, weight_itemsize=4)
    stored = 2 * 10**6
    for owners in (1, 2, 4):
        per_owner = -(-stored // owners)
        assert wide.csr_bytes(owners) - narrow.csr_bytes(owners) == 4 * per_owner
        assert wide.owner_build_bytes(owners) > narrow.owner_build_bytes(owners)
        assert wide.owner_bytes(owners) > narrow.owner_bytes(owners)
    # one owner of a directed graph: the CSR and the shuffled copy it is built from
    directed = [GraphSize(rows=10**6, n=10**5, directed=True, weighted=True, weight_itemsize=b)
                for b in (8, 4)]
    assert directed[0].owner_build_bytes(1) - directed[1].owner_build_bytes(1) == 2 * 4 * 10**6
    footers = build.footer_size(type("F", (), {"rows": 10**6, "low": 0, "high": 10**5 - 1, "strings": False})(),
                                  False, True, weight_itemsize=4)
    assert footers.weight_bytes == 4


def test_an_owners_estimate_drops_by_four_bytes_per_stored_weight():
    edges = weighted_edges("small-int", n=300, m=1200)
    estimates = {}
    for asked in ("float32", "float64"):
        graph = gpipe.Graph.from_edges(edges, directed=False, weight="weight", weight_dtype=asked)
        estimates[asked] = graph.engine.built.owner_build_estimate
    assert estimates["float64"] - estimates["float32"] == 4 * 2 * len(edges)


def test_graph_too_large_counts_the_chosen_width(monkeypatch):
    """The same graph refused with float64 weights fits with float32 ones."""
    from gpipe.partitioning import sizing

    edges = weighted_edges("small-int", n=300, m=1200)
    need = {}
    for asked in ("float32", "float64"):
        graph = gpipe.Graph.from_edges(edges, directed=False, weight="weight", weight_dtype=asked)
        need[asked] = graph.engine.built.owner_build_estimate
    budget = (need["float32"] + need["float64"]) // 2  # between the two, at the full fraction
    monkeypatch.setattr(execution.InProcess, "memory", lambda self, backend: [
        sizing.WorkerMemory(sizing.IN_PROCESS, budget, "host")])
    with dask.config.set({sizing.FRACTION_KEY: 1.0}):
        assert gpipe.Graph.from_edges(edges, directed=False, weight="weight",
                                      weight_dtype="float32").weight_dtype == "float32"
        with pytest.raises(gpipe.GraphTooLarge):
            gpipe.Graph.from_edges(edges, directed=False, weight="weight", weight_dtype="float64")
