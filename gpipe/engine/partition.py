"""The per-owner piece of a graph: a CSR of the edges whose source the owner holds.

1-D partitioning: global vertex ids ``0..n-1`` are cut into ``P`` consecutive ranges of
``chunk`` ids (``ceil(n / P)``, rounded up to a multiple of 64 when ``P > 1``); owner ``p`` holds
``offset = p * chunk`` up to ``offset + n_local`` and every edge whose source lies in that range.
Since every offset is a multiple of 64, an owner's share of a bitmap over the global ids is a
whole number of 32- or 64-bit words (BFS exchanges its frontier that way), and owners past
``ceil(n / chunk)`` hold no vertex. Neighbours are stored as global ids, so a traversal can
tell local targets (claimed in place) from remote ones (sent to their owner).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from dask.sizeof import sizeof

from gpipe.engine import backend as backends

WORD_ALIGN = 64  # owners' offsets are multiples of this: bitmap words never straddle two owners


@dataclass
class Layout:
    """How ``n`` global vertex ids are split among ``n_owners`` owners.

    ``counts``: where each owner numbered its own ids (:mod:`gpipe.partitioning.numbering`),
    how many of its range's first ids each owner uses (the rest are absent); else None.
    """

    n: int
    n_owners: int
    counts: tuple | None = None

    @property
    def chunk(self) -> int:
        """Ids per owner: ``ceil(n / n_owners)``, rounded up to a multiple of ``WORD_ALIGN``
        when there are several owners (so the last owners may hold fewer ids, or none)."""
        chunk = max(1, -(-self.n // self.n_owners))
        if self.n_owners > 1:
            chunk = -(-chunk // WORD_ALIGN) * WORD_ALIGN
        return chunk

    def offset(self, owner: int) -> int:
        return min(self.n, owner * self.chunk)

    def size(self, owner: int) -> int:
        return min(self.n, self.offset(owner) + self.chunk) - self.offset(owner)

    def owner_of(self, vertex):
        """Owner of each id in ``vertex`` (an array of any ``xp``, or an int)."""
        return vertex // self.chunk

    def used(self, owner: int) -> int:
        """The ids of ``owner``'s range that may be vertices: its ``counts`` entry, else all."""
        return self.size(owner) if self.counts is None else self.counts[owner]

    def index_dtype(self):
        return "int32" if self.n < 2**31 else "int64"


@dataclass
class Partition:
    """CSR of the out-edges of the vertices ``offset .. offset + n_local - 1``.

    ``indptr``: int64[n_local + 1]; ``indices``: global target ids (int32 when ``n < 2**31``);
    ``weights``: float64 or float32 (the graph's ``weight_dtype``) parallel to ``indices``, or
    None; ``present``: bool[n_local] marking the ids that occur in the edge list (None when
    every id does). ``symmetric``: the graph is
    undirected and held by one owner, so the CSR is also the CSR of the in-edges.
    ``negative_loops``: sorted int64 local ids of the vertices with a self-loop of negative
    weight, a negative cycle that the CSR (which keeps no self-loop) does not show; None when
    the graph has no negative weight. ``rows``: what every result frame of this owner shares
    (:class:`gpipe.engine.result.Rows`), kept here by the first query. ``ids``: the graph's sorted
    distinct input ids when they were renumbered and this is the graph's only owner (None
    otherwise), so that a query needs nothing but this partition (:mod:`gpipe.engine.direct`).
    ``undirected``: the graph is undirected, whatever the number of owners, so the owner's rows
    are also the in-edges of its vertices (what a bottom-up BFS step of several owners reads).
    """

    backend: str
    owner: int
    offset: int
    n_local: int
    n: int
    indptr: object
    indices: object
    weights: object
    present: object
    symmetric: bool = False
    negative_loops: object = None
    rows: object = field(default=None, repr=False, compare=False)
    undirected: bool = False
    ids: object = field(default=None, repr=False, compare=False)

    @property
    def xp(self):
        return backends.get(self.backend).xp

    @property
    def n_edges(self) -> int:
        return int(self.indices.shape[0])

    @property
    def nbytes(self) -> int:
        """Bytes of the CSR, weights and presence mask."""
        arrays = (self.indptr, self.indices, self.weights, self.present)
        return sum(int(a.nbytes) for a in arrays if a is not None)


def build_partition(backend_name: str, layout: Layout, owner: int, directed: bool, track_presence: bool,
                    ids, *bucket_lists):
    """Assemble owner ``owner``'s :class:`Partition` from the edge buckets sent to it, a list of
    them from each input partition (and ``ids``, the graph's sorted ids, which it keeps: None
    but for a one-owner graph whose ids were renumbered).

    Each bucket is ``(src, dst, weights, present_ids, as_given, negative_loops)`` of global
    ids: edges whose source this owner holds; when ``track_presence``, ids of this owner's
    vertices that occur in the edge list but may have no out-edge here; and, when the graph has
    negative weights, this owner's vertices with a negative self-loop (else None).
    ``as_given`` buckets (one owner) hold the input's edges as they are: self-loops kept
    (``build_csr`` leaves them out), each undirected edge once (``build_csr`` stores both
    directions), ids of any integer width; the others hold every stored direction, self-loops
    dropped, ids of the layout's index dtype.
    """
    be = backends.get(backend_name)
    xp = be.xp
    buckets = [bucket for buckets in bucket_lists for bucket in buckets]
    offset, n_local = layout.offset(owner), layout.size(owner)
    as_given = any(b[4] for b in buckets)
    pieces = [(b[0], b[1], b[2]) for b in buckets]  # empty ones too: they say whether it is weighted
    indptr, indices, csr_weights = be.kernels.build_csr_pieces(  # degree count + scatter, no sort
        pieces, n_local, layout.index_dtype(), offset=offset,
        symmetric=as_given and not directed, skip_loops=as_given,
    )

    present = None
    if track_presence:
        present = xp.zeros(n_local, dtype=bool)
        for src, dst, _ in pieces:  # one piece's local ids at a time
            be.kernels.scatter(present, src - offset if offset else src, True)
            if as_given:  # every target is present too (one owner: dst are local ids)
                be.kernels.scatter(present, dst, True)
        present_ids = [b[3] for b in buckets if b[3] is not None]
        if present_ids:
            extra = _concat(xp, present_ids, "int64")
            be.kernels.scatter(present, extra - offset if offset else extra, True)
    elif layout.used(owner) < n_local:  # ids numbered per owner: those past its count are unused
        present = xp.arange(n_local) < layout.used(owner)
    return Partition(backend_name, owner, offset, n_local, layout.n, indptr, indices, csr_weights,
                     present, symmetric=not directed and layout.n_owners == 1,
                     undirected=not directed, negative_loops=_negative_loops(xp, buckets, offset),
                     ids=ids)


def _negative_loops(xp, buckets, offset):
    """Sorted distinct local ids of the negative self-loops the buckets carry; None if none do."""
    loops = [b[5] for b in buckets if b[5] is not None]
    if not loops:
        return None
    return xp.unique(_concat(xp, loops, "int64") - offset)


def _concat(xp, arrays, dtype):
    """One array of ``dtype`` from ``arrays`` (Nones skipped); no copy for a lone array of that dtype."""
    arrays = [xp.asarray(a).astype(dtype, copy=False) for a in arrays if a is not None]
    if not arrays:
        return xp.empty(0, dtype=dtype)
    return arrays[0] if len(arrays) == 1 else xp.concatenate(arrays)


def register_with_dask() -> None:
    """Tell Dask a :class:`Partition`'s size, its arrays' bytes (the scheduler weighs moving a
    task to other data by it: as a small object, a batch of ``bfs_each`` would be stolen by
    an idle worker that then copies the whole graph), and let Dask move it as its arrays:
    straight from device to device (``cuda`` serializers, over UCX) or as buffers (``dask``),
    never pickled whole through the host (a replica of a one-owner graph is a copy of it).

    Done once per process: when this module is imported in a process that has imported
    ``distributed`` (a worker, a client's process), else by the first client's executor
    (:class:`gpipe.engine.execution.OnCluster`). A process without a client moves no
    partition, and its first build does not pay distributed's import (0.5 s).
    """
    global _REGISTERED
    if _REGISTERED:
        return
    from distributed.protocol import dask_deserialize, dask_serialize, register_generic
    from distributed.protocol.cuda import cuda_deserialize, cuda_serialize

    register_generic(Partition, "cuda", cuda_serialize, cuda_deserialize)
    register_generic(Partition, "dask", dask_serialize, dask_deserialize)
    _REGISTERED = True


_REGISTERED = False
sizeof.register(Partition)(lambda part: part.nbytes + 1024)
if "distributed" in sys.modules:
    register_with_dask()
