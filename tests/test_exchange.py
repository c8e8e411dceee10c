"""Pruning and merging of frontier candidates between owners."""

import numpy as np

from gpipe import exchange
from gpipe.partition import Layout


def test_prune_keeps_one_candidate_per_target_and_groups_by_owner():
    layout = Layout(n=300, n_owners=3)  # chunk 128: owners hold 0-127, 128-255, 256-299
    targets = np.array([290, 1, 130, 1, 290, 128])
    parents = np.array([0, 1, 2, 3, 4, 5])
    buckets = exchange.prune("cpu", layout, targets, parents)
    assert [b[0].tolist() for b in buckets] == [[1], [128, 130], [290]]
    assert [b[1].tolist() for b in buckets] == [[1], [5, 2], [0]]


def test_prune_by_key_keeps_the_smallest_distance():
    layout = Layout(n=4, n_owners=1)
    targets = np.array([2, 2, 3, 2])
    dists = np.array([5.0, 1.0, 7.0, 1.0])
    parents = np.array([10, 11, 12, 13])
    (bucket,) = exchange.prune("cpu", layout, targets, dists, parents, key=dists)
    assert bucket[0].tolist() == [2, 3]
    assert bucket[1].tolist() == [1.0, 7.0]
    assert bucket[2].tolist() == [11, 12]  # the first of the tied minima


def test_merge_reduces_across_senders():
    a = (np.array([3, 6]), np.array([2.0, 9.0]), np.array([0, 1]))
    b = (np.array([6, 7]), np.array([4.0, 1.0]), np.array([2, 3]))
    targets, dists, parents = exchange.merge("cpu", [a, b], key_column=1)
    assert targets.tolist() == [3, 6, 7]
    assert dists.tolist() == [2.0, 4.0, 1.0]
    assert parents.tolist() == [0, 2, 3]
