"""A result's parents named by input id where each owner holds only its own vertices' ids.

When several owners numbered their own ids (:mod:`gpipe.partitioning.numbering`), an owner's
parents are global ids of any owner, and only their owner knows their input ids. At the end of
a traversal every owner asks each peer, in one message round over the owners' channel (Dask's
comms, whatever carried the traversal's steps), for the input ids of the parents in that
peer's range (their local ids), and each peer answers with them in the order asked: two
rounds, one array each way per peer, at most one entry per row of the asking owner. Nothing
goes through the client or the scheduler.
"""

from __future__ import annotations

from gpipe.engine import backend as backends

ASK = "parent-ids-ask"
ANSWER = "parent-ids-answer"


def input_parents(channel, layout, ids, backend_name, parent):
    """The input ids of ``parent`` (global ids, -1 for none; this owner's result rows), asked
    of their owners over ``channel``; ``ids`` is this owner's :class:`gpipe.engine.sources.OwnerIds`.

    Returns ``(values, missing)``: integer ids (``ids``' dtype) with ``missing`` the bool array
    of rows without a parent, or the backend's strings with nulls there and ``missing`` None.
    Every owner must call it at the same point, as a step of the traversal.
    """
    be = backends.get(backend_name)
    arrays, strings = be.kernels, be.strings.holds(ids.values)
    me = channel.owner
    owner_of = parent // layout.chunk  # -1 (no parent) stays -1
    rows = [arrays.flatnonzero(owner_of == q) for q in range(layout.n_owners)]
    asked = [arrays.take(parent, rows[q]) - layout.offset(q) for q in range(layout.n_owners)]
    received = channel.exchange(ASK, [be.host_copy(a) if q != me else None for q, a in enumerate(asked)])
    received.insert(me, None)
    answers = [None if q == me else _answer(be, strings, _ids_at(be, strings, ids, be.xp.asarray(local)))
               for q, local in enumerate(received)]
    answered = channel.exchange(ANSWER, answers)
    answered.insert(me, _ids_at(be, strings, ids, asked[me]))
    order = be.xp.concatenate(rows)  # the rows that have a parent, by the parent's owner
    missing = arrays.negative(parent)
    if strings:
        found = be.strings.concat(answered)
        position = be.xp.zeros(parent.size, dtype="int64")
        position[order] = be.xp.arange(order.size, dtype="int64")
        if order.size == 0:  # no parent anywhere: every row null, taken from any id
            found = be.strings.concat([ids.values, *answered])
        return be.strings.take(found, position, missing), None
    values = be.xp.zeros(parent.size, dtype=ids.values.dtype)
    if order.size:
        values[order] = be.xp.concatenate([be.xp.asarray(a) for a in answered])
    return values, missing


def _answer(be, strings: bool, found):
    """``found`` fit to travel: integers as a host copy (no device copy made by the comms)."""
    return found if strings else be.host_copy(found)


def _ids_at(be, strings: bool, ids, local):
    """The input ids of this owner's local ids ``local``."""
    return be.strings.take(ids.values, local) if strings else be.kernels.take(ids.values, local)
