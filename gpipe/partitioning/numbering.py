"""Renumbering ids across the workers: each owner numbers the distinct ids of its hash buckets.

Sparse integer ids and string ids become global ids without any worker holding them all:

1. *Buckets*: each input partition's distinct ids are cut, where the partition lies, into one
   piece per worker by a hash of the id (:func:`bucket_of`); worker ``b`` merges bucket ``b``'s
   pieces from every partition into its sorted distinct ids. The buckets' lengths add up to
   the vertex count, which the sizing needs before it chooses the owners.
2. *Owners*: with ``P`` owners chosen, owner ``q`` takes the buckets ``b`` with
   ``b % P == q`` (bucket ``q`` alone where every worker owns), sorted (:class:`OwnerIds`):
   its ``k``-th id is global id ``q * chunk + k``, ``chunk`` the largest owner's count rounded
   up to 64 (:func:`spread_layout`). Owner ``q``'s vertices are exactly the ids of its
   buckets, so the ``vertex`` column of its result rows is its own ids; the ids of its range
   past its count are unused (its partition marks them absent).
3. *Relabel*: each input partition asks each owner for the global ids of its pieces of that
   owner's buckets (:func:`numbers`, run on the owner), and relabels both ends of its edges
   by a lookup in its own distinct ids (:class:`Relabel`), before the shuffle to the owners.

What travels is each partition's distinct ids, to their owners and back as global ids; no
worker receives more than its buckets' ids. One owner gets the buckets merged into one sorted
array instead (:func:`merged`): its global ids are the ranks there, as without a cluster.
A result's parents, global ids of any owner, are named by input id where the traversal ends,
each owner asking its peers for theirs (:mod:`gpipe.engine.owners.parent_ids`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gpipe.engine import backend as backends
from gpipe.engine.partition import WORD_ALIGN, Layout
from gpipe.engine.sources import OwnerIds

# Fibonacci hashing: the high bits of the id times 2**64 / golden ratio spread any id pattern
# (strides, ranges) over the buckets.
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_HIGH = np.uint64(32)


@dataclass
class Buckets:
    """Handles of step 1: per input partition, its pieces (one per bucket: distinct ids, sorted)
    and its :class:`Cut`; per bucket, its merged ids on its worker and their count."""

    pieces: list  # per input partition, per bucket: a handle to that piece
    cuts: list  # per input partition: a handle to its Cut, on its worker
    merged: list  # per bucket
    counts: list  # per bucket, ints


@dataclass
class Cut:
    """One input partition's distinct ids (``distinct``, in any order), and how they were cut
    into buckets: bucket ``b``'s piece is ``distinct[order[bounds[b]:bounds[b + 1]]]``."""

    distinct: object
    order: object
    bounds: list


def merge_distinct(backend_name, strings: bool, *arrays):
    """The sorted distinct ids of ``arrays`` (integer arrays, or the backend's strings)."""
    be = backends.get(backend_name)
    if strings:
        return be.strings.distinct(be.strings.concat(arrays))
    return be.xp.unique(be.xp.concatenate(arrays))


def bucket_of(backend_name, strings: bool, ids, n_buckets: int):
    """The bucket (0 .. ``n_buckets - 1``, int64 array of the backend's ``xp``) of each id: the
    same id always gets the same bucket, whatever the partition it is seen in."""
    be = backends.get(backend_name)
    if strings:
        return be.strings.bucket(ids, n_buckets)
    spread = (ids.astype(np.uint64) * _GOLDEN) >> _HIGH
    return (spread % np.uint64(n_buckets)).astype(np.int64)


def spread(executor, backend_name, read_ids, inputs, holders, strings: bool) -> Buckets:
    """Step 1 over ``executor``'s workers, one bucket each: ``read_ids(backend_name, frame)``
    gives an input partition's ``(src, dst)``; ``holders`` are the partitions' workers."""
    n_buckets = executor.n_owners
    cuts = [executor.submit(_pieces, backend_name, read_ids, p, strings, n_buckets, at=at)
            for p, at in zip(inputs, holders)]
    pieces = [[executor.item(cut, b, at=at) for b in range(n_buckets)] for cut, at in zip(cuts, holders)]
    kept = [executor.item(cut, n_buckets, at=at) for cut, at in zip(cuts, holders)]
    del cuts  # each piece keeps what it needs
    merged = [executor.submit(merge_distinct, backend_name, strings, *[p[b] for p in pieces], owner=b)
              for b in range(n_buckets)]
    counts = executor.gather([executor.submit(len, m, owner=b) for b, m in enumerate(merged)])
    return Buckets(pieces, kept, merged, [int(c) for c in counts])


def _pieces(backend_name, read_ids, frame, strings: bool, n_buckets: int) -> list:
    """The distinct ids of one input partition, cut into one piece per bucket, and last their
    :class:`Cut`."""
    be = backends.get(backend_name)
    src, dst = read_ids(backend_name, frame)
    if strings:
        distinct = merge_distinct(backend_name, strings, src, dst)
    else:  # a hash's distinct ids, in any order: each piece is sorted where it is merged
        distinct = be.frames.Index(be.xp.concatenate([src, dst])).unique().values
    del src, dst
    bucket = bucket_of(backend_name, strings, distinct, n_buckets)
    if n_buckets < 2**15:
        bucket = bucket.astype(np.int16)  # NumPy's stable sort of 16-bit keys is a radix sort
    order = be.xp.argsort(bucket, kind="stable")
    bounds = be.to_host(be.xp.searchsorted(bucket[order], be.xp.arange(n_buckets + 1, dtype=bucket.dtype))).tolist()
    pieces = [_take(be, strings, distinct, order[bounds[b]:bounds[b + 1]]) for b in range(n_buckets)]
    return [*pieces, Cut(distinct, order, bounds)]


def _take(be, strings: bool, ids, positions):
    return be.strings.take(ids, positions) if strings else ids[positions]


def owners_of_buckets(n_buckets: int, n_owners: int) -> list:
    """Per owner, the buckets it takes: ``b % n_owners == q``."""
    return [list(range(q, n_buckets, n_owners)) for q in range(n_owners)]


def spread_layout(buckets: Buckets, n_owners: int) -> Layout:
    """The layout of ``n_owners`` owners that each take their buckets' ids: every owner's range
    is ``chunk`` ids, the largest owner's count rounded up to a multiple of 64, and
    ``counts`` says how many of them each owner uses."""
    counts = [sum(buckets.counts[b] for b in taken) for taken in owners_of_buckets(len(buckets.counts), n_owners)]
    chunk = max(WORD_ALIGN, -(-max(counts) // WORD_ALIGN) * WORD_ALIGN)
    return Layout(n=n_owners * chunk, n_owners=n_owners, counts=tuple(counts))


def owner_ids(executor, backend_name, buckets: Buckets, layout: Layout, strings: bool) -> list:
    """Step 2: per owner of ``executor`` (``layout``'s), a handle to its :class:`OwnerIds`,
    made on its worker from its buckets."""
    taken = owners_of_buckets(len(buckets.merged), layout.n_owners)
    return [executor.submit(_owner_ids, backend_name, strings, layout.offset(q),
                            *[buckets.merged[b] for b in taken[q]], owner=q)
            for q in range(layout.n_owners)]


def _owner_ids(backend_name, strings: bool, offset: int, *merged) -> OwnerIds:
    values = merged[0] if len(merged) == 1 else merge_distinct(backend_name, strings, *merged)
    return OwnerIds(values, offset)


def merged(executor, backend_name, buckets: Buckets, strings: bool):
    """A handle, on owner 0, to the sorted distinct ids of every bucket: one owner's ids."""
    return executor.submit(merge_distinct, backend_name, strings, *buckets.merged, owner=0)


@dataclass
class Relabel:
    """One input partition's distinct ids (``keys``, in any order) and their global ids
    (``values``, the layout's index dtype). Ids are found among the keys by a hash lookup
    (``strings.rank``; integers: the frame library's ``Index.get_indexer``, its hash table
    built at the first lookup and kept for the next, as the split looks up both ends)."""

    keys: object
    values: object
    strings: bool
    index: object = field(default=None, repr=False)

    def apply(self, backend_name, ids):
        """The global ids of ``ids`` (every one of them is among the keys)."""
        be = backends.get(backend_name)
        if self.strings:
            positions = be.strings.rank(self.keys, ids)
        else:
            if self.index is None:
                self.index = be.frames.Index(self.keys)
            positions = self.index.get_indexer(ids)
        return be.kernels.take(self.values, be.xp.asarray(positions))


def relabels(executor, backend_name, buckets: Buckets, owner_id_handles: list, layout: Layout,
             holders: list, strings: bool) -> list:
    """Step 3: per input partition, a handle on its worker to its :class:`Relabel`."""
    taken = owners_of_buckets(len(buckets.merged), layout.n_owners)
    result = []
    for pieces, cut, at in zip(buckets.pieces, buckets.cuts, holders):
        answers = [executor.submit(numbers, backend_name, strings, layout.index_dtype(), owner_id_handles[q],
                                   *[pieces[b] for b in taken[q]], owner=q) for q in range(layout.n_owners)]
        result.append(executor.submit(_relabel, backend_name, strings, taken, cut, *answers, at=at))
    return result


def numbers(backend_name, strings: bool, index_dtype, ids: OwnerIds, *pieces):
    """The global ids (``index_dtype``) of the ids of ``pieces`` end to end, every one of them
    among the owner's ``ids``."""
    be = backends.get(backend_name)
    wanted = be.strings.concat(pieces) if strings else be.xp.concatenate(pieces)
    local = be.strings.rank(ids.values, wanted) if strings else be.xp.searchsorted(ids.values, wanted)
    return be.kernels.astype(be.kernels.astype(local, "int64"), index_dtype, offset=ids.offset)


def _relabel(backend_name, strings: bool, taken: list, cut: Cut, *answers) -> Relabel:
    """The :class:`Relabel` of a partition's ``cut`` from each owner's answers (the global
    ids of its pieces of the buckets ``taken[q]``, end to end): each bucket's answer scattered
    back to its ids' places among the partition's distinct ids, no sort."""
    be = backends.get(backend_name)
    values = be.xp.empty(len(cut.distinct), dtype=answers[0].dtype if answers else np.int64)
    for q, answer in enumerate(answers):
        start = 0
        for b in taken[q]:
            low, high = cut.bounds[b], cut.bounds[b + 1]
            values[cut.order[low:high]] = answer[start:start + high - low]
            start += high - low
    return Relabel(cut.distinct, values, strings)
