"""A query's sources: the input ids a user names, as the graph's global ids.

Where a graph kept its input ids (small non-negative integers), a source's global id is the id
itself, checked against the owners' presence bits on the client. Where ids were renumbered,
the global id is the id's rank in the sorted distinct ids, which live on a worker: a one-owner
graph's traversal looks its sources up itself (:class:`InputIds`), so that a query costs no
extra round trip; several owners need them on the client first, to hand each its own. String
ids are always renumbered, and looked up the same way (a hash lookup in the backend's
``strings``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpipe.engine import backend as backends
from gpipe.errors import InputError, plain


@dataclass(frozen=True)
class OwnerIds:
    """The input ids of one owner's vertices where each owner numbered its own
    (:mod:`gpipe.partitioning.numbering`): ``values``, sorted distinct (integers, or the
    backend's strings), the ``k``-th being global id ``offset + k``."""

    values: object
    offset: int

    def __len__(self) -> int:
        return len(self.values)


@dataclass(frozen=True)
class InputIds:
    """Sources as input ids (``values``, from :func:`gpipe.io.validate.sources`), to be looked up
    in the sorted ids where the traversal runs."""

    values: np.ndarray


def global_ids_of(built, executor, values, what: str | None = "source", *, on_owner: bool = False):
    """The input ids ``values`` (Python ints or strs, or an int64/uint64 array) as global ids of
    the graph ``built`` (:class:`gpipe.partitioning.build.Built`, its work run by ``executor``):
    the one road from input ids to global ids, for every query.

    Raises InputError naming the first value not in the graph (a ``what``: source, target);
    with ``what=None``, -1 stands for each such value instead. With ``on_owner``, a one-owner
    graph whose ids were renumbered gets the values back as :class:`InputIds`, which its
    traversal looks up where it runs (no extra round trip; :func:`global_ids` there).
    """
    values = np.array(np.asarray(values).tolist(), dtype=object)  # as locate compares them
    if values.size == 0:
        return np.empty(0, dtype=np.int64)
    if not built.renumbered:
        found = present(built.layout, built.present_bits, values)
    elif on_owner and built.layout.n_owners == 1:
        return InputIds(values)
    elif built.owner_ids is not None:  # each owner looks them up in its own ids
        return locate_on_owners(executor, built.backend, built.owner_ids, values, what)
    else:
        located = executor.submit(locate, built.backend, built.ids, values)
        found = np.asarray(executor.gather([located])[0], dtype=np.int64)
    return found if what is None else checked(values, found, what)


def global_ids(backend_name, ids, sources, what: str = "source") -> np.ndarray:
    """``sources`` as global ids: as they are, or :class:`InputIds` looked up in the sorted
    ``ids``. Raises InputError naming the first one (a ``what``) that is not in the graph."""
    if not isinstance(sources, InputIds):
        return sources
    return checked(sources.values, locate(backend_name, ids, sources.values), what)


def checked(values, found, what: str = "source") -> np.ndarray:
    """``found``, the global ids of ``values`` (-1 where absent); InputError naming the first
    value not in the graph (a ``what``: source, target)."""
    missing = np.flatnonzero(found < 0)
    if missing.size:
        raise InputError(f"{what} vertex {plain(values[missing[0]])!r} is not in the graph")
    return found


def locate(backend_name, ids, values) -> np.ndarray:
    """Rank of each value in the sorted ``ids``, -1 where absent; for :class:`OwnerIds`, the
    global id of each value that the owner holds."""
    if isinstance(ids, OwnerIds):
        found = locate(backend_name, ids.values, values) if len(ids) else np.full(len(values), -1)
        return np.where(found >= 0, found + ids.offset, -1)
    be = backends.get(backend_name)
    if be.strings.holds(ids):
        return be.strings.find(ids, values)
    info = np.iinfo(ids.dtype)
    inside = np.array([info.min <= v <= info.max for v in values])
    keys = np.array([v if ok else 0 for v, ok in zip(values, inside)], dtype=ids.dtype)
    pos = be.to_host(be.xp.searchsorted(ids, be.xp.asarray(keys))).astype(np.int64)
    pos = np.minimum(pos, len(ids) - 1)
    hit = be.to_host(ids[be.xp.asarray(pos)]) == keys
    return np.where(inside & hit, pos, -1)


def locate_on_owners(executor, backend_name, owner_ids: list, values, what: str | None = None) -> np.ndarray:
    """Global ids of ``values`` where every owner holds its own ids (handles to
    :class:`OwnerIds`, one per owner): each owner looks them up in its own, -1 where none
    holds it. With ``what``, InputError names the first value not in the graph (a ``what``)."""
    asked = [executor.submit(locate, backend_name, ids, values, owner=q) for q, ids in enumerate(owner_ids)]
    found = np.max(np.vstack([np.asarray(f, dtype=np.int64) for f in executor.gather(asked)]), axis=0)
    return found if what is None else checked(values, found, what)


def input_id(backend_name, ids, position):
    """The input id (a Python int or str) of global id ``position`` in the sorted ``ids`` (or
    held by the owner whose :class:`OwnerIds` ``ids`` are)."""
    if isinstance(ids, OwnerIds):
        ids, position = ids.values, position - ids.offset
    strings = backends.get(backend_name).strings
    return strings.at(ids, position) if strings.holds(ids) else ids[position].item()


def present(layout, present_bits, values) -> np.ndarray:
    """``values`` as global ids where a graph kept its input ids as they are, -1 for those not
    in the edge list (out of the ids' range, or no edge's end): ``present_bits`` are the
    owners' packed presence bits (``Built.present_bits``)."""
    inside = np.array([0 <= v < layout.n for v in values], dtype=bool)
    found = np.where(inside, np.array([v if ok else 0 for v, ok in zip(values, inside)], dtype=np.int64), -1)
    owners = layout.owner_of(np.maximum(found, 0))
    for p in np.unique(owners[inside]).tolist():
        at = np.flatnonzero(inside & (owners == p))
        local = found[at] - layout.offset(p)
        bits = (present_bits[p][local >> 3] >> (local & 7)) & 1
        found[at[bits == 0]] = -1
    return found
