"""One dtype convention for every result (issue 23, item 5), and the Dask operations it is for.

``gpipe.bfs``, ``gpipe.sssp``, ``bfs_each`` and ``sssp_each`` (with and without ``targets``)
give ``distance`` as float64 (NaN where unreached in pandas, null in cuDF) and ``parent`` in the
vertex dtype with nulls (pandas: its Arrow twin, ``int64[pyarrow]``; cuDF: ``int64``), so that
Dask's ``describe``, ``quantile``, ``mean``, ``value_counts`` and merges work on them (pandas'
``Int64``/``Int32``/``Float64``, the dtypes before, made ``describe`` and ``quantile`` raise
``TypeError: Cannot interpret 'Int64Dtype()' as a data type``). Each operation's answer is
compared with the same statistic of SciPy's distances (tests/reference.py), not with gpipe's
own computed frame. Runs with no client, on a 2-worker cluster and (marked ``gpu``) on cuDF.
"""

from __future__ import annotations

import warnings

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import gpipe
import reference

pytestmark = pytest.mark.timeout(180)

CALLS = ["bfs", "sssp", "bfs_each", "sssp_each", "bfs_each-targets", "sssp_each-targets"]


@pytest.fixture(scope="module")
def edges():
    """Weighted (integers 1..9 as weights: every distance exact in float64), sparse ids, two
    components, so that some vertices are unreached from any source."""
    frame = reference.random_edges(n=120, m=360, seed=23, weights="integer", ids="sparse", components=2)
    return frame.astype({"weight": np.float64})


def sources_of(edges, count):
    return [int(v) for v in reference.pick_sources(edges, count, seed=5)]


def expected_rows(edges, call, sources, targets):
    """SciPy's distances laid out as the call's rows: ``vertex, distance`` (single source:
    every vertex, NaN where unreached) or ``source, vertex, distance`` (per source: the
    reached vertices, or every target with NaN where unreached or absent)."""
    kind = call.split("_")[0].split("-")[0]

    def one(source):
        if kind == "bfs":
            return reference.expected_bfs(edges, [source], directed=True)
        return reference.expected_sssp(edges, [source], directed=True)

    if call in ("bfs", "sssp"):
        dist = one(sources[0])
        return pd.DataFrame({"vertex": dist.index.to_numpy(), "distance": dist.to_numpy()})
    pieces = []
    for s in sources:
        dist = one(s)
        if targets is None:
            dist = dist.dropna()
            pieces.append(pd.DataFrame({"source": s, "vertex": dist.index.to_numpy(),
                                        "distance": dist.to_numpy()}))
        else:
            pieces.append(pd.DataFrame({"source": s, "vertex": targets,
                                        "distance": dist.reindex(targets).to_numpy()}))
    return pd.concat(pieces, ignore_index=True)


def query(engine, edges, call, sources, targets):
    frame = engine.frame(edges)
    with_targets = call.endswith("-targets")
    name = call.removesuffix("-targets")
    weight = None if name.startswith("bfs") else "weight"
    if name == "bfs":
        return gpipe.bfs(frame, sources[0])
    if name == "sssp":
        return gpipe.sssp(frame, sources[0])
    graph = gpipe.Graph.from_edges(frame, directed=True, weight=weight)
    method = graph.bfs_each if name == "bfs_each" else graph.sssp_each
    return method(sources, targets=targets if with_targets else None, parents=True)


def pandas_of(value):
    """A computed Dask answer (pandas or cuDF) as pandas."""
    return value.to_pandas() if hasattr(value, "to_pandas") else value


@pytest.mark.parametrize("call", CALLS)
def test_dtypes_and_dask_statistics_of_every_call(engine, edges, call):
    sources = sources_of(edges, 3)
    absent = int(edges[["src", "dst"]].max().max()) + 1000
    targets = [int(v) for v in edges["dst"].drop_duplicates().iloc[:6]] + [absent]
    result = query(engine, edges, call, sources, targets)
    want = expected_rows(edges, call, sources, targets if call.endswith("-targets") else None)
    reached = want["distance"].dropna()
    assert len(reached) and want["distance"].isna().any() == (call in ("bfs", "sssp") or "targets" in call)

    # The convention, in the meta and in the partitions as they are.
    id_dtype = edges["src"].dtype
    parent = id_dtype if engine.gpu else pd.ArrowDtype(pa.from_numpy_dtype(id_dtype))
    computed = engine.compute(result)
    for frame in (result._meta, computed):
        assert frame["vertex"].dtype == id_dtype
        assert frame["distance"].dtype == np.float64
        assert frame["parent"].dtype == parent
    if engine.gpu:  # cuDF: the unreached are nulls (a NaN would not count as one)
        assert computed["distance"].null_count == int(want["distance"].isna().sum())

    # describe: count, mean, min, max and std of the reached distances, as SciPy's.
    described = pandas_of(result.describe().compute())
    stats = described["distance"]
    assert stats["count"] == len(reached)
    np.testing.assert_allclose([stats["mean"], stats["min"], stats["max"], stats["std"]],
                               [reached.mean(), reached.min(), reached.max(), reached.std()], rtol=1e-12)
    assert described["parent"]["count"] == int(pandas_of(computed["parent"]).notna().sum())

    # quantile (Dask's is approximate over partitions), mean and value_counts.
    median = float(result["distance"].quantile(0.5).compute())
    assert reached.min() <= median <= reached.max()
    assert float(result["distance"].mean().compute()) == pytest.approx(reached.mean(), rel=1e-12)
    counts = pandas_of(result["distance"].value_counts().compute()).sort_index()
    expected_counts = reached.value_counts().sort_index()
    np.testing.assert_array_equal(counts.index.to_numpy(dtype=np.float64), expected_counts.index.to_numpy())
    np.testing.assert_array_equal(counts.to_numpy(dtype=np.int64), expected_counts.to_numpy())
    assert pandas_of(result["parent"].value_counts().compute()).sum() == described["parent"]["count"]

    # A merge on vertex with another frame of the engine's kind: every row finds its label.
    ids = np.unique(np.concatenate([edges["src"].to_numpy(), edges["dst"].to_numpy(), [absent]]))
    labels = engine.frame(pd.DataFrame({"vertex": ids.astype(id_dtype), "label": ids * 10}), 2)
    merged = pandas_of(result.merge(labels, on="vertex", how="inner").compute())
    assert len(merged) == len(computed)
    assert (merged["label"].to_numpy() == merged["vertex"].to_numpy() * 10).all()
    keys = ["vertex"] if "source" not in want else ["source", "vertex"]
    got = merged.sort_values(keys).reset_index(drop=True)
    want_sorted = want.sort_values(keys).reset_index(drop=True)
    np.testing.assert_array_equal(got["vertex"].to_numpy(), want_sorted["vertex"].to_numpy())
    np.testing.assert_array_equal(got["distance"].to_numpy(dtype=np.float64, na_value=np.nan),
                                  want_sorted["distance"].to_numpy())


@pytest.mark.parametrize("call", ["bfs", "bfs_each", "bfs_each-targets"])
def test_the_parent_tree_as_a_dask_merge(engine, edges, call):
    """The README's rule ``distance[parent] + 1 == distance[vertex]`` checked with a Dask merge
    of the result on itself (``parent`` against ``vertex``): what a user writes."""
    sources = sources_of(edges, 3)
    targets = [int(v) for v in edges["dst"].drop_duplicates().iloc[:6]]
    result = query(engine, edges, call, sources, targets)
    keys = ["source"] if "each" in call else []
    if "targets" in call:  # a distance table holds no parents' rows: join the full result
        graph = gpipe.Graph.from_edges(engine.frame(edges), directed=True, weight=None)
        tree = graph.bfs_each(sources, parents=True)
    else:
        tree = result
    up = tree[keys + ["vertex", "distance"]].rename(columns={"vertex": "parent", "distance": "parent_distance"})
    with warnings.catch_warnings():  # Dask notes parent's (nullable) and vertex's dtypes differ
        warnings.simplefilter("ignore")
        joined = pandas_of(result.merge(up, on=keys + ["parent"], how="inner").compute())
    has_parent = int(pandas_of(engine.compute(result)["parent"]).notna().sum())
    assert len(joined) == has_parent > 0
    np.testing.assert_array_equal(joined["distance"].to_numpy(dtype=np.float64),
                                  joined["parent_distance"].to_numpy(dtype=np.float64) + 1)


def test_string_ids_follow_the_convention(cpu_engine, edges):
    """String ids: ``vertex`` and ``parent`` stay strings (null parents as that dtype has
    them); ``distance`` float64; describe and a merge on vertex work."""
    names = edges.assign(src="v" + edges["src"].astype(str), dst="v" + edges["dst"].astype(str))
    names = names.astype({"src": "string[pyarrow]", "dst": "string[pyarrow]"})
    source = sources_of(edges, 1)[0]
    result = gpipe.bfs(dd.from_pandas(names, npartitions=2, sort=False), f"v{source}")
    computed = cpu_engine.compute(result)
    assert computed["distance"].dtype == np.float64 and result._meta["distance"].dtype == np.float64
    assert computed["parent"].dtype == computed["vertex"].dtype == names["src"].dtype
    assert str(result._meta["parent"].dtype) == str(computed["parent"].dtype)
    want = reference.expected_bfs(edges, [source], directed=True)
    stats = result.describe().compute()["distance"]
    assert stats["count"] == want.notna().sum() and stats["max"] == want.max()
    got = computed.set_index(computed["vertex"].str[1:].astype(np.int64))
    assert got.loc[got["distance"].isna(), "parent"].isna().all()
    assert (got["parent"].isna() == (got["distance"].isna() | (got["distance"] == 0))).all()
    labels = dd.from_pandas(pd.DataFrame({"vertex": names["src"].unique(), "x": 1}), npartitions=1)
    assert len(result.merge(labels, on="vertex").compute()) == names["src"].nunique()
