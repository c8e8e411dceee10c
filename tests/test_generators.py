"""gpipe.generators: Kronecker (Graph500) and 3-D grid edge lists."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gpipe.generators import grid_centre, grid_edges, kronecker_edges


# ---------------------------------------------------------------------------------------------
# Kronecker.


@pytest.mark.parametrize("scale, edge_factor", [(0, 1), (1, 4), (5, 16), (10, 8)])
def test_kronecker_counts_and_id_range(scale, edge_factor):
    edges = kronecker_edges(scale, edge_factor)
    assert isinstance(edges, pd.DataFrame)
    assert list(edges.columns) == ["src", "dst"]
    assert len(edges) == edge_factor * 2**scale
    assert edges["src"].dtype == np.int64 and edges["dst"].dtype == np.int64
    ids = edges[["src", "dst"]].to_numpy()
    assert ids.min() >= 0 and ids.max() < 2**scale


def test_kronecker_is_deterministic_by_seed():
    first = kronecker_edges(8, seed=3, weights=True)
    pd.testing.assert_frame_equal(first, kronecker_edges(8, seed=3, weights=True))
    assert not first.equals(kronecker_edges(8, seed=4, weights=True))


def test_kronecker_weights_are_integers_1_to_255_as_float64():
    weight = kronecker_edges(10, weights=True)["weight"]
    assert weight.dtype == np.float64
    assert weight.min() >= 1 and weight.max() <= 255
    assert (weight == np.round(weight)).all()
    assert weight.nunique() > 200  # the whole range is used, not a constant


def test_kronecker_degrees_are_skewed_and_ids_permuted():
    scale = 12
    edges = kronecker_edges(scale)
    degree = np.bincount(np.concatenate([edges["src"], edges["dst"]]), minlength=2**scale)
    assert degree.max() > 20 * degree.mean()  # power-law-like hubs
    assert (degree == 0).any()  # isolated ids, as in Graph500
    # Without the relabelling the hub would be vertex 0 (a = 0.57 favours low bits of 0).
    assert np.argmax(degree) != 0


def test_kronecker_probabilities_shape_the_quadrants():
    # a = 1 - tiny: nearly every edge is in the top-left quadrant at every level, so nearly
    # every edge joins the same two (relabelled) vertices: vertex 0 before relabelling.
    edges = kronecker_edges(6, 8, a=0.97, b=0.01, c=0.01)
    top = edges[["src", "dst"]].value_counts().iloc[0]
    assert top > 0.5 * len(edges) * 0.97**6


@pytest.mark.parametrize(
    "kwargs", [{"scale": -1}, {"scale": 63}, {"scale": 4, "edge_factor": 0}, {"scale": 4, "a": 0.6, "b": 0.3, "c": 0.2}]
)
def test_kronecker_rejects_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        kronecker_edges(**kwargs)


def test_kronecker_explicit_numpy_module():
    pd.testing.assert_frame_equal(kronecker_edges(5, xp=np), kronecker_edges(5, xp="numpy"))
    with pytest.raises(ValueError, match="numpy or cupy"):
        kronecker_edges(5, xp="torch")


# ---------------------------------------------------------------------------------------------
# 3-D grid.


@pytest.mark.parametrize("side", [1, 2, 3, 5])
def test_grid_edge_count_and_each_edge_once(side):
    edges = grid_edges(side)
    assert len(edges) == 3 * side**2 * (side - 1)
    assert edges["src"].dtype == np.int64 and edges["dst"].dtype == np.int64
    assert (edges["src"] < edges["dst"]).all()
    assert not edges.duplicated().any()
    if side > 1:
        assert edges[["src", "dst"]].to_numpy().max() == side**3 - 1


def test_grid_interior_degree_is_six_and_neighbours_are_unit_steps():
    side = 5
    edges = grid_edges(side)
    degree = np.bincount(np.concatenate([edges["src"], edges["dst"]]), minlength=side**3)
    coords = np.stack(np.unravel_index(np.arange(side**3), (side, side, side)), axis=1)  # z, y, x
    interior = ((coords > 0) & (coords < side - 1)).all(axis=1)
    assert (degree[interior] == 6).all()
    assert degree[0] == 3  # a corner
    # Every edge joins vertices one step apart along exactly one axis.
    a = np.stack(np.unravel_index(edges["src"].to_numpy(), (side,) * 3), axis=1)
    b = np.stack(np.unravel_index(edges["dst"].to_numpy(), (side,) * 3), axis=1)
    assert (np.abs(a - b).sum(axis=1) == 1).all()


def test_grid_ids_follow_x_plus_side_times_y_plus_side_times_z():
    side = 4
    edges = grid_edges(side)
    vid = lambda x, y, z: x + side * (y + side * z)  # noqa: E731
    pairs = set(map(tuple, edges[["src", "dst"]].to_numpy().tolist()))
    assert (vid(1, 2, 3), vid(2, 2, 3)) in pairs  # x step
    assert (vid(1, 2, 3), vid(1, 3, 3)) in pairs  # y step
    assert (vid(1, 2, 2), vid(1, 2, 3)) in pairs  # z step
    assert (vid(3, 2, 3), vid(0, 3, 3)) not in pairs  # no wrap-around


@pytest.mark.parametrize("side, centre", [(1, 0), (3, 13), (4, 42), (5, 62)])
def test_grid_centre(side, centre):
    assert grid_centre(side) == centre
    middle = side // 2
    assert grid_centre(side) == middle + side * (middle + side * middle)


def test_grid_weights_and_seed():
    edges = grid_edges(4, weights=True, seed=7)
    assert edges["weight"].dtype == np.float64
    assert edges["weight"].between(1, 255).all()
    pd.testing.assert_frame_equal(edges, grid_edges(4, weights=True, seed=7))
    assert not edges["weight"].equals(grid_edges(4, weights=True, seed=8)["weight"])


def test_grid_rejects_bad_side():
    with pytest.raises(ValueError):
        grid_edges(0)
    with pytest.raises(ValueError):
        grid_centre(0)


def test_kronecker_shares_make_one_graph_of_the_same_scale():
    from gpipe.generators import kronecker_share

    scale, shares, factor = 9, 3, 4
    parts = [kronecker_share(scale, k, shares, factor, seed=5, weights=True) for k in range(shares)]
    m = factor * 2**scale
    assert [len(p) for p in parts] == [m // shares + (k < m % shares) for k in range(shares)]
    whole = pd.concat(parts, ignore_index=True)
    assert whole[["src", "dst"]].to_numpy().min() >= 0 and whole[["src", "dst"]].to_numpy().max() < 2**scale
    assert whole["weight"].between(1, 255).all()
    again = kronecker_share(scale, 1, shares, factor, seed=5, weights=True)
    assert again.equals(parts[1])  # each share on its own, the same on any worker
    assert not parts[0].head(50).reset_index(drop=True).equals(parts[1].head(50).reset_index(drop=True))
    # R-MAT's skew survives the split: the busiest id of the whole has far more than the mean.
    degree = pd.concat([whole["src"], whole["dst"]]).value_counts()
    assert degree.iloc[0] > 10 * (2 * m / 2**scale)
    assert kronecker_share(scale, 0, 1, factor, seed=5).equals(kronecker_edges(scale, factor, seed=5))
    with pytest.raises(ValueError, match="share"):
        kronecker_share(scale, 3, 3)
