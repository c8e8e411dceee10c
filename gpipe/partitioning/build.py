"""From an edge DataFrame to partitions on their owners: survey, number, shuffle, build.

1. *Survey* each input partition where it lies: row count, id range, weight range, and the
   data checks of :func:`gpipe.io.validate.check_partition`. The id range settles the id
   dtype when the two id columns differ (uint64 and int64: the one that holds every id), the
   weight range the width the weights are stored in (:mod:`gpipe.partitioning.weights`).
2. *Number* the vertices ``0..n-1``. Ids that are already small non-negative integers are kept
   as they are (no sort; ids that never occur are masked out later). Other ids (string ids
   always, through the backend's ``strings``: Arrow or cuDF strings) are renumbered: on a
   cluster, each owner numbers the ids of its hash buckets and the edges are relabelled
   before the shuffle (:mod:`gpipe.partitioning.numbering`); one owner, or no cluster, takes
   their rank in the sorted array of distinct ids.
3. *Shuffle*: each input partition cuts its edges (both directions when undirected, self-loops
   dropped) into one bucket per owner of the source vertex. Vertices with a self-loop of
   negative weight, a negative cycle of one edge, go to their owner as a list of their own.
4. *Build*: each owner writes its CSR from its buckets as they are (:func:`gpipe.engine.partition.build_partition`).
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass, replace

import numpy as np

from gpipe.engine import backend as backends
from gpipe.engine import in_memory
from gpipe.engine.owners import nccl
from gpipe.engine.partition import Layout, build_partition
from gpipe.errors import GraphTooLarge, InputError
from gpipe.io import footers, validate
from gpipe.partitioning import numbering, sizing
from gpipe.partitioning import weights as weight_widths

# Keep ids as they are while max id + 1 <= IDENTITY_SLACK * rows + IDENTITY_EXTRA: then the
# arrays indexed by id stay within a small multiple of the edge list.
IDENTITY_SLACK = 2
IDENTITY_EXTRA = 1024

# Two threads' first batch calls on one graph make its copies once.
_COPYING = threading.Lock()


@dataclass(frozen=True)
class Columns:
    """The edge columns to read, the dtype both id columns are read as and the dtype the
    weights are read as (None: as they are); ``strings``: the ids are strings."""

    src: str
    dst: str
    weight: str | None
    id_dtype: object = None
    strings: bool = False
    weight_dtype: str | None = None


@dataclass
class Survey:
    rows: int
    low: int
    high: int
    negative: bool
    weights: tuple | None = None  # (least, largest) weight; None without weights or rows


@dataclass
class Built:
    """What :func:`build` hands to :class:`gpipe.Graph`."""

    backend: str
    layout: Layout
    parts: list  # handles to Partition, one per owner
    # Handle to the sorted distinct input ids of a one-owner graph whose ids were renumbered;
    # None when ids are kept as they are, or when each owner numbered its own (``owner_ids``).
    ids: object
    executor: object  # runs owner p's work on its worker (gpipe.engine.execution.Executor)
    # Per owner, its vertices' presence in the edge list as host bits (np.packbits, little bit
    # order), so that sources are checked here; None when ids are renumbered (all present).
    present_bits: list | None
    rows: list  # per owner, its result rows: the vertices of its range that occur in the edge list
    vertex_dtype: object  # NumPy dtype, or the input's pandas extension dtype
    n_edges_input: int
    negative_weights: bool
    string_ids: bool = False  # ids are strings (always renumbered)
    weight_dtype: str | None = None  # the stored weights' width, "float32" or "float64"; None unweighted
    # A one-owner graph on a cluster: the workers chosen to hold a copy of its partition, the
    # owner first, over which per-source batches spread (gpipe.each); else None.
    replica_workers: list | None = None
    replica_size: sizing.GraphSize | None = None  # what a copy needs, checked again when made
    # Handles to those copies (parts[0] first), made by the first batch call (:func:`copies`).
    replicas: list | None = None
    # A multi-owner GPU graph whose owners talk over NCCL: the key of its communicator on the
    # owners' workers (gpipe.engine.owners.nccl); None where they use Dask's comms.
    nccl_group: str | None = None
    # Several owners with renumbered ids: per owner, a handle on its worker to the input ids of
    # its own vertices (gpipe.engine.sources.OwnerIds; gpipe.partitioning.numbering). A
    # result's parents are named by asking their owners (gpipe.engine.owners.parent_ids).
    # None otherwise.
    owner_ids: list | None = None
    # The bytes the sizing expected an owner's build to peak at (gpipe.partitioning.sizing.owner_need).
    owner_build_estimate: int | None = None
    # The workers that held the input partitions when they were split: read them there (a
    # one-owner graph's files: sizing.readers) or held them persisted; 0 in this process.
    input_workers: int = 0

    @property
    def renumbered(self) -> bool:
        """Whether the input ids were renumbered (``ids`` or ``owner_ids`` hold them)."""
        return self.ids is not None or self.owner_ids is not None


def build(executor, edges, *, directed, src, dst, weight, partitions=None, replicas=None,
          weight_dtype=None) -> Built:
    """Validate, number, shuffle and build ``edges`` into one partition per owner.

    ``partitions``: the number of owners, or None for the fewest workers whose memory holds
    the graph (:mod:`gpipe.partitioning.sizing`). Raises GraphTooLarge, before any partition is built, when
    the owners' memory cannot hold it. ``weight_dtype``: the width the weights are stored in,
    ``"float32"``, ``"float64"`` or None/``"auto"`` (:mod:`gpipe.partitioning.weights`).
    """
    asked = validate.weight_dtype(weight_dtype)
    requested = sizing.requested_partitions(partitions)
    requested_replicas = sizing.requested_replicas(replicas)
    from_footers = footers.of(edges)
    persisted = executor.holds(edges)  # a persisted read_edges frame is not read by the build
    edges = validate.edge_frame(edges, src, dst, weight)
    backend_name = backends.name_of_frame(edges)
    strings = backends.is_string_dtype(edges.dtypes[src])  # then dst's too (validate.edge_frame)
    columns = Columns(src, dst, weight, strings=strings)
    memory, inputs = None, None
    narrowest = weight_widths.narrowest(asked, edges.dtypes[weight]) if weight is not None else None
    early = footer_size(from_footers, directed, weight is not None, resident=persisted,
                        weight_itemsize=narrowest.itemsize if narrowest is not None else 8,
                        row_bytes=_row_bytes(edges, columns))
    if early is not None:  # GraphTooLarge before anything is read
        memory = executor.memory(backend_name)
        try:
            chosen = sizing.choose_owners(early, memory, requested)
        except GraphTooLarge:
            if not early.renumbered:
                raise
            # Its vertex count is a bound until the ids are counted: refuse now only what
            # the fewest vertices would not fit either.
            sizing.choose_owners(early.with_fewest_vertices(), memory, requested)
            chosen = None
        if chosen is not None and len(chosen) == 1 and not persisted:  # one owner even at the bound
            # Read by the workers of every GPU (CPU: host) when the input pays for it, each
            # sending its share to the owner, else by the owner alone (sizing.readers).
            readers = sizing.readers(early, memory, chosen[0], edges.npartitions)
            executor = executor.for_owners(chosen)
            inputs = executor.partitions(edges, readers=readers)
    if inputs is None:  # where Dask puts them (a persisted frame's: where they are)
        inputs = executor.partitions(edges)
    executor.wait(inputs)
    holders = executor.holders(inputs)  # each partition's survey and split run where it is
    surveys = executor.gather([executor.submit(_survey, backend_name, p, columns, at=at)
                               for p, at in zip(inputs, holders)])
    surveys = [s for s in surveys if s.rows]
    if not surveys:
        raise InputError("the edge list is empty: it has no rows")
    rows = sum(s.rows for s in surveys)
    stored_weights = None
    if weight is not None:
        ranges = [s.weights for s in surveys if s.weights is not None]
        stored_weights = weight_widths.choose(asked, edges.dtypes[weight], min(r[0] for r in ranges),
                                              max(r[1] for r in ranges), weight)
        columns = replace(columns, weight_dtype=stored_weights.name)
    if strings:
        vertex_dtype = _string_dtype(edges.dtypes[src], edges.dtypes[dst])
        identity, n_bound = _vertex_bound(rows)
    else:
        low, high = min(s.low for s in surveys), max(s.high for s in surveys)
        vertex_dtype = result_id_dtype(columns, edges.dtypes[src], edges.dtypes[dst], low, high)
        columns = replace(columns, id_dtype=validate.numpy_dtype(vertex_dtype))
        identity, n_bound = _vertex_bound(rows, low, high)
    ids = buckets = None
    if not identity and executor.n_owners > 1:  # counted before the owners are chosen, as below
        buckets = numbering.spread(executor, backend_name, functools.partial(id_arrays, columns=columns),
                                   inputs, holders, strings)
        n_bound = sum(buckets.counts)
    elif not identity:  # counted before the owners are chosen: the sizing gets the vertex count
        ids = _distinct_ids(executor, backend_name, inputs, columns)
        n_bound = executor.gather([executor.submit(len, ids)])[0]
    size = sizing.GraphSize(rows=rows, n=n_bound, directed=directed, weighted=weight is not None,
                            weight_itemsize=stored_weights.itemsize if stored_weights is not None else 8,
                            input_row_bytes=_row_bytes(edges, columns),
                            input_resident=persisted or (from_footers is None and in_memory.held_frames(edges) is None),
                            renumbered=not identity,
                            partition_rows=max(s.rows for s in surveys))
    memory = memory or executor.memory(backend_name)
    if size.input_resident:
        shares = executor.held_shares(inputs)
        memory = [replace(m, input_share=min(1.0, shares.get(m.address, 0.0))) if shares else m for m in memory]
    owners = sizing.choose_owners(size, memory, requested)
    executor = executor.for_owners(owners)
    build_estimate = sizing.owner_need(size, len(owners), owners[0], build_only=True)

    n = n_bound  # exact by now: the kept ids' high + 1, or the count of the renumbered ones
    layout = Layout(n=n, n_owners=min(executor.n_owners, n))
    owner_ids = None
    relabels = [ids] * len(inputs)
    if buckets is not None and layout.n_owners == 1:
        ids = numbering.merged(executor, backend_name, buckets, strings)
        relabels = [ids] * len(inputs)
    elif buckets is not None:
        layout = numbering.spread_layout(buckets, layout.n_owners)
        owner_ids = numbering.owner_ids(executor, backend_name, buckets, layout, strings)
        relabels = numbering.relabels(executor, backend_name, buckets, owner_ids, layout, holders, strings)
    del buckets  # the partitions' distinct ids: each relabel holds what it needs
    track_presence = not size.renumbered
    negative_weights = any(s.negative for s in surveys)
    # Each input partition is split, and its split cut per owner, on the worker that holds it:
    # left to the scheduler, a cut could run elsewhere and fetch the whole split (every
    # owner's buckets) there first.
    shuffled = [
        executor.submit(_split, backend_name, p, relabel, columns, layout, directed, track_presence,
                        negative_weights, at=at)
        for p, relabel, at in zip(inputs, relabels, holders)
    ]
    del relabels, inputs  # each input partition is freed once its split is made
    parts = [
        executor.submit(
            build_partition, backend_name, layout, owner, directed, track_presence,
            ids if layout.n_owners == 1 else None,
            *[executor.item(s, owner, at=at) for s, at in zip(shuffled, holders)],
            owner=owner,
        )
        for owner in range(layout.n_owners)
    ]
    del shuffled  # held here, the splits would outlive their cuts until the build returns
    present_bits = None
    if track_presence:  # also waits for the partitions, and raises their errors
        present_bits = executor.gather([
            executor.submit(_packed_presence, part, owner=owner) for owner, part in enumerate(parts)])
    else:
        executor.wait(parts)
    replica_workers = nccl_group = None
    if layout.n_owners > 1:
        _release_build_memory(executor, backend_name, [*holders, *executor.holders(parts)])
        nccl_group = nccl.make_group(executor, layout, backend_name)
    elif set(holders) - {None, *getattr(executor, "workers", ())}:  # others read (or held) input for the owner
        _release_build_memory(executor, backend_name, list(set(holders) - {None, *executor.workers}))
    if layout.n_owners == 1 and hasattr(executor, "replicate"):
        replica_workers = sizing.choose_replicas(size, memory, executor.workers[0], requested_replicas)
    executor.unpin()  # the graph's queries need its owners' workers alone
    return Built(
        backend=backend_name,
        layout=layout,
        parts=parts,
        ids=ids,
        executor=executor,
        present_bits=present_bits,
        rows=([layout.used(p) for p in range(layout.n_owners)] if present_bits is None
              else [int(np.unpackbits(bits).sum()) for bits in present_bits]),
        vertex_dtype=vertex_dtype,
        n_edges_input=rows,
        negative_weights=negative_weights,
        string_ids=strings,
        weight_dtype=stored_weights.name if stored_weights is not None else None,
        replica_workers=replica_workers,
        replica_size=size if replica_workers else None,
        nccl_group=nccl_group,
        owner_ids=owner_ids,
        owner_build_estimate=build_estimate,
        input_workers=len({at for at in holders if at is not None}),
    )


def _release_build_memory(executor, backend_name, workers) -> None:
    """Have each of ``workers`` (those that split input or built a partition) give its device
    the blocks that CuPy's pool kept from the build's splits and buckets, two to four times
    the partition it keeps. Kept, they would serve CuPy alone: not cuDF, not Dask's transfers
    (RMM), not another process on the same GPU, such as a client gathering a result."""
    where = sorted({w for w in workers if w is not None}) or [None]  # None: this process
    executor.wait([executor.submit(_release_cached, backend_name, at=worker) for worker in where])


def _release_cached(backend_name) -> None:
    backends.get(backend_name).release_cached()


def copies(built: Built) -> list:
    """Handles to the partitions that per-source batches may run on: a one-owner graph's copies
    on its ``replica_workers`` (the owner's own first), made by the first call and kept; else
    ``parts``.

    The copies are made here, not by :func:`build`, so that a graph that is only traversed
    from one source at a time is built on a cluster in the time it takes on one worker; the
    first ``bfs_each``/``sssp_each`` waits for them. The workers chosen at the build are asked
    again for their memory first: one that has left, or has no room for a copy any more, gets
    none (``replica_workers`` then names those that do).
    """
    if built.replica_workers is None or len(built.replica_workers) < 2:
        return built.parts
    with _COPYING:
        if built.replicas is None:
            owner = built.replica_workers[0]
            memory = built.executor.memory_of(built.backend, built.replica_workers)
            built.replica_workers = sizing.choose_replicas(built.replica_size, memory, owner,
                                                           len(built.replica_workers))
            built.replicas = (built.executor.replicate(built.parts[0], built.replica_workers)
                              if len(built.replica_workers) > 1 else list(built.parts))
    return built.replicas


def _row_bytes(edges, columns) -> int:
    """Bytes of one input row's edge columns (16 for each string id: a guess at its text and
    offset)."""
    names = [columns.src, columns.dst] + ([columns.weight] if columns.weight else [])
    return sum(16 if backends.is_string_dtype(edges.dtypes[name]) else validate.numpy_dtype(edges.dtypes[name]).itemsize
               for name in names)


def _vertex_bound(rows: int, low: int | None = None, high: int | None = None) -> tuple:
    """``(identity, n_bound)`` for ``rows`` edges whose integer ids lie in ``low..high`` (string
    ids: neither given): whether the ids are kept as they are, and the vertex count's bound."""
    if low is None:
        return False, 2 * rows
    identity = low >= 0 and high + 1 <= IDENTITY_SLACK * rows + IDENTITY_EXTRA
    return identity, high + 1 if identity else min(2 * rows, high - low + 1)


def footer_size(survey, directed: bool, weighted: bool, resident: bool = False, weight_itemsize: int = 8,
                row_bytes: int = 16):
    """The :class:`sizing.GraphSize` that a read_edges frame's Parquet footers give
    (:mod:`gpipe.io.footers`), as the survey of its rows would; None where they cannot tell the
    vertex count (integer ids without statistics) or there are none. ``resident``: the frame
    was persisted, so the build does not read it. ``weight_itemsize``: bytes per stored
    weight, the narrowest the weights' values may allow (:func:`weights.narrowest`).
    ``row_bytes``: bytes of an input row's edge columns as the build holds them."""
    if survey is None or survey.rows == 0 or (not survey.strings and survey.low is None):
        return None
    identity, n_bound = _vertex_bound(survey.rows, survey.low, survey.high)
    return sizing.GraphSize(rows=survey.rows, n=n_bound, directed=directed, weighted=weighted,
                            weight_itemsize=weight_itemsize, input_row_bytes=row_bytes,
                            input_resident=resident, renumbered=not identity)


def _packed_presence(part):
    be = backends.get(part.backend)
    if part.present is None:
        return np.packbits(np.ones(part.n_local, dtype=bool), bitorder="little")
    return be.to_host(be.kernels.packbits_little(part.present))


def result_id_dtype(columns: Columns, src_dtype, dst_dtype, low: int, high: int):
    """The dtype of result ids, which holds every id exactly.

    The input's own when both columns share it (pandas extension dtypes such as ``Int64``
    included); else the NumPy integer dtype that holds both columns' dtypes (uint8 and int16:
    int16); where none does (uint64 with a signed dtype, which NumPy widens to float64), int64
    when the ids ``low .. high`` all fit it, else uint64 when none is negative.

    Raises InputError, naming both columns and their dtypes, when no integer dtype holds them.
    """
    if src_dtype == dst_dtype:
        return src_dtype
    common = np.promote_types(validate.numpy_dtype(src_dtype), validate.numpy_dtype(dst_dtype))
    if common.kind in "iu":
        return common
    for candidate in (np.dtype("int64"), np.dtype("uint64")):
        if np.iinfo(candidate).min <= low and high <= np.iinfo(candidate).max:
            return candidate
    raise InputError(
        f"vertex id columns {columns.src!r} ({src_dtype}) and {columns.dst!r} ({dst_dtype}) have "
        f"no integer dtype in common: their ids run from {low} (below uint64's range) to {high} "
        f"(above int64's)"
    )


def _string_dtype(src_dtype, dst_dtype):
    """The dtype of result ids when they are strings: the input's when both columns share it,
    else pandas' default string dtype."""
    if src_dtype == dst_dtype:
        return src_dtype
    import pandas as pd

    return pd.Series([], dtype=str).dtype


def _arrays(backend_name, frame, columns: Columns):
    """The id and weight arrays of one input partition, with its data checks; both id arrays
    of ``columns.id_dtype`` when it is set, the backend's string arrays when the ids are
    strings, the weights of ``columns.weight_dtype`` when it is set (else as the column holds
    them). Returns ``(xp, src, dst, weights, weight_range)``, ``weight_range`` from
    :func:`gpipe.io.validate.check_partition`."""
    be = backends.get(backend_name)
    src_name, dst_name, weight_name = columns.src, columns.dst, columns.weight
    for name in (src_name, dst_name):
        if _has_nulls(frame[name]):
            raise InputError(f"vertex id column {name!r} holds null values")
    if columns.strings:
        src = be.strings.column(frame, src_name)
        dst = be.strings.column(frame, dst_name)
    else:
        src = be.column(frame, src_name, columns.id_dtype)
        dst = be.column(frame, dst_name, columns.id_dtype)
    weights = None
    if weight_name is not None:
        if _has_nulls(frame[weight_name]):
            raise InputError(f"weight column {weight_name!r} holds NaN or null values")
        weights = be.column(frame, weight_name, columns.weight_dtype)
    weight_range = validate.check_partition(be.xp, src, dst, weights, src_name, dst_name, weight_name)
    return be.xp, src, dst, weights, weight_range


def _has_nulls(series) -> bool:
    nulls = getattr(series, "has_nulls", None)  # cuDF knows without a pass
    if nulls is not None:
        return bool(nulls)
    if isinstance(series.dtype, np.dtype) and series.dtype.kind in "iu":
        return False  # plain NumPy integers cannot hold nulls
    return bool(series.isna().any())


def _survey(backend_name, frame, columns) -> Survey:
    xp, src, dst, weights, weight_range = _arrays(backend_name, frame, columns)
    if len(src) == 0:
        return Survey(0, 0, 0, False)
    negative = weight_range is not None and weight_range[0] < 0
    if columns.strings:  # no id range: string ids are always renumbered
        return Survey(len(src), 0, 0, negative, weight_range)
    low = min(int(src.min()), int(dst.min()))
    high = max(int(src.max()), int(dst.max()))
    return Survey(int(src.size), low, high, negative, weight_range)


def _distinct_ids(executor, backend_name, inputs, columns):
    """Handle to the sorted distinct ids of all partitions, merged pairwise as a tree."""
    level = [executor.submit(_unique_ids, backend_name, p, columns) for p in inputs]
    while len(level) > 1:
        pairs = [level[i:i + 2] for i in range(0, len(level), 2)]
        level = [executor.submit(_merge_unique, backend_name, columns.strings, *pair) for pair in pairs]
    return level[0]


def _unique_ids(backend_name, frame, columns):
    return _merge_unique(backend_name, columns.strings, *id_arrays(backend_name, frame, columns))


def _merge_unique(backend_name, strings, *arrays):
    """:func:`numbering.merge_distinct` under a build step's own task name (``ids``,
    :data:`gpipe.engine.tasks.TASK_NAMES`)."""
    return numbering.merge_distinct(backend_name, strings, *arrays)


def id_arrays(backend_name, frame, columns) -> tuple:
    """``(src, dst)`` of one input partition, checked as :func:`_arrays` checks them."""
    _, src, dst, _, _ = _arrays(backend_name, frame, columns)
    return src, dst


def _split(backend_name, frame, ids, columns, layout: Layout, directed: bool, track_presence: bool,
           negative_weights: bool):
    """Cut one input partition into one list of buckets per owner of the source.

    ``ids``: None where ids are kept as they are, the sorted distinct ids of a renumbered
    one-owner graph, or this partition's :class:`gpipe.partitioning.numbering.Relabel` where
    several owners numbered their own.

    Returns, per owner, a list of ``(src, dst, weights, present_ids, as_given, negative_loops)``
    of global ids. ``present_ids`` carries the ids whose presence the owner could not see from
    its own out-edges: self-loop vertices, and targets of directed edges. ``negative_loops``
    carries the vertices with a self-loop of negative weight when the graph has negative
    weights (else None): the CSR keeps no self-loop, and such a loop is a negative cycle. Both
    ride on an owner's first bucket. Ids are of the layout's index dtype (int32 while
    ``n < 2**31``). A graph with one owner is passed on as it is (one bucket, ``as_given``:
    self-loops kept, each undirected edge once; ``build_csr`` leaves the loops out and stores
    both directions of an undirected edge), so neither a filtered nor a doubled list is ever
    made (nor a kernel that CuPy would compile at its first use). Otherwise self-loops are
    dropped and undirected edges doubled here, :data:`gpipe.partitioning.sizing.SPLIT_ROWS`
    rows at a time, an owner's piece of them at a time: besides the buckets (which the owner
    builds from as they are, never joined), the split holds a few masks and one index array of
    at most SPLIT_ROWS, and the distinct ids seen so far whose presence it carries.
    """
    xp, src, dst, weights, _ = _arrays(backend_name, frame, columns)
    relabel = isinstance(ids, numbering.Relabel)
    if columns.strings:  # global ids of the whole partition: string columns are not cut in chunks
        if relabel:
            src, dst = ids.apply(backend_name, src), ids.apply(backend_name, dst)
        else:
            strings = backends.get(backend_name).strings
            src, dst = strings.rank(ids, src), strings.rank(ids, dst)
    if layout.n_owners == 1:
        if ids is not None and not columns.strings:
            src, dst = xp.searchsorted(ids, src), xp.searchsorted(ids, dst)
        negative_loops = _negative_loops(src, dst == src, weights) if negative_weights else None
        return [[(src, dst, weights, None, True, negative_loops)]]  # ids of any integer width: no copy
    arrays = backends.get(backend_name).kernels
    buckets = [[] for _ in range(layout.n_owners)]
    present, loops_below_zero = None, []
    for start in range(0, max(len(src), 1), sizing.SPLIT_ROWS):
        chunk = slice(start, start + sizing.SPLIT_ROWS)
        s, d = src[chunk], dst[chunk]
        w = weights[chunk] if weights is not None else None
        if relabel and not columns.strings:
            s, d = ids.apply(backend_name, s), ids.apply(backend_name, d)
        elif ids is not None and not columns.strings:
            s, d = xp.searchsorted(ids, s), xp.searchsorted(ids, d)
        # Ids travel in the index dtype (int32 while n < 2**31): half the bytes of int64 pairs,
        # in the split and in every owner's share of the shuffle.
        s = s.astype(layout.index_dtype(), copy=False)
        d = d.astype(layout.index_dtype(), copy=False)
        loops = s == d
        if track_presence:  # merged chunk by chunk: at most the distinct ids, never all targets
            seen = [s[loops], d] if directed else [s[loops]]
            present = xp.unique(xp.concatenate(seen if present is None else [present, *seen]))
        if negative_weights:
            loops_below_zero.append(_negative_loops(s, loops, w))
        keep = ~loops
        del loops
        # Owner q's edges by two masks over the chunk (forward, and backward when each
        # undirected edge is stored both ways): no doubled list, no sort, no owner array.
        ends = [(s, d)] if directed else [(s, d), (d, s)]
        for q in range(layout.n_owners):
            buckets[q] += [(*_owned_by(arrays, layout, q, keep, rows, targets, w), None, False, None)
                           for rows, targets in ends]
    backends.get(backend_name).release_cached()  # the chunks' masks and indices, freed above
    present = _by_owner(backend_name, present, layout)
    negative_loops = _by_owner(backend_name, xp.concatenate(loops_below_zero) if negative_weights else None,
                               layout)
    for q, bucket in enumerate(buckets):
        bucket[0] = (*bucket[0][:3], present[q], False, negative_loops[q])
    return buckets


def _owned_by(arrays, layout: Layout, owner: int, keep, rows, targets, weights) -> tuple:
    """``(rows, targets, weights)`` of the kept edges whose row ``owner`` holds (``arrays``:
    the backend's array operations)."""
    low = layout.offset(owner)
    where = arrays.flatnonzero((rows >= low) & (rows < low + layout.size(owner)) & keep)
    return (arrays.take(rows, where), arrays.take(targets, where),
            arrays.take(weights, where) if weights is not None else None)


def _negative_loops(src, loops, weights):
    """The sources of the self-loops (``loops`` marks them) whose weight is negative."""
    return src[loops & (weights < 0)]


def _by_owner(backend_name, vertices, layout: Layout) -> list:
    """``vertices`` (global ids, or None) as one sorted distinct array per owner (or Nones)."""
    if vertices is None:
        return [None] * layout.n_owners
    vertices = backends.get(backend_name).xp.unique(vertices)  # sorted: owners' ranges are contiguous
    bounds = _bounds(backend_name, layout.owner_of(vertices), layout.n_owners)
    return [vertices[bounds[q]:bounds[q + 1]] for q in range(layout.n_owners)]


def _bounds(backend_name, sorted_owner, n_owners) -> list:
    """Start of each owner's run in ``sorted_owner``, plus the end: ``n_owners + 1`` ints."""
    be = backends.get(backend_name)
    starts = be.xp.searchsorted(sorted_owner, be.xp.arange(n_owners + 1, dtype=sorted_owner.dtype))
    return be.to_host(starts).tolist()
