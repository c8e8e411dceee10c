"""Frontier exchange between owners: prune what leaves, merge what arrives.

Before candidates leave an owner they are sorted by target and reduced to one per target
(sort/unique pruning: BFS keeps any parent, SSSP the smallest distance), which also groups
them by owner, since owners hold consecutive id ranges. Arriving buckets from several senders
are merged by the same rule.
"""

from __future__ import annotations

from gpipe import backend as backends
from gpipe.partition import Layout


def first_per_target(backend_name, targets, *values, key=None):
    """Keep one entry per target: the first, or the one with the smallest ``key``.

    Returns ``(targets, *values)`` sorted by target.
    """
    be = backends.get(backend_name)
    if key is not None:
        order = be.argsort_stable(key)
        targets = targets[order]
        values = tuple(v[order] for v in values)
    targets, first = be.xp.unique(targets, return_index=True)
    return (targets, *(v[first] for v in values))


def split_by_owner(backend_name, layout: Layout, targets, *values) -> list:
    """Cut target-sorted columns into one tuple per owner, in owner order."""
    be = backends.get(backend_name)
    starts = be.to_host(be.xp.searchsorted(targets, be.xp.arange(layout.n_owners + 1) * layout.chunk)).tolist()
    return [
        tuple(column[starts[q]:starts[q + 1]] for column in (targets, *values))
        for q in range(layout.n_owners)
    ]


def prune(backend_name, layout: Layout, targets, *values, key=None) -> list:
    """Reduce outgoing candidates to one per target and cut them by owner."""
    return split_by_owner(backend_name, layout, *first_per_target(backend_name, targets, *values, key=key))


def merge(backend_name, buckets, key_column=None):
    """Concatenate arriving buckets column-wise and keep one entry per target."""
    xp = backends.get(backend_name).xp
    columns = [xp.concatenate(parts) for parts in zip(*buckets)]
    key = columns[key_column] if key_column is not None else None
    return first_per_target(backend_name, columns[0], *columns[1:], key=key)
