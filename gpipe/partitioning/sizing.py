"""How many owners a graph gets: its estimated bytes against the memory of the workers.

A graph that fits one worker is built and traversed there, as one owner, with the one-owner
kernels: splitting it would only add a message round per level. A larger one is split over the
fewest workers whose memory holds it with headroom, largest memories first. A graph that cannot
fit even across every worker is refused before anything is built (:class:`GraphTooLarge`).

The estimate is an owner's peak, the larger of two moments: its build (the CSR, with the edge
buckets it is written from) and a traversal (the CSR, with the traversal's per-vertex arrays and
result frame and, with several owners, its exchange buffers). The budget of a worker is
``gpipe.memory-fraction`` (Dask config, default 0.8) of what it has free: device memory on GPU
workers (CUDA's free memory plus what CuPy's pool holds unused), the Dask memory limit less the
process's current use on CPU workers (the machine's memory when the worker has no limit).

For a graph that one worker holds, :func:`readers` also says which workers read its files: one
per GPU (per host of CPU workers) when the input is large enough to pay for sending it to the
owner, else the owner alone (Dask config ``gpipe.read-on``).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, replace

import dask

from gpipe.errors import GraphTooLarge, InputError

PARTITIONS_KEY = "gpipe.partitions"
REPLICAS_KEY = "gpipe.replicas"
FRACTION_KEY = "gpipe.memory-fraction"
DEFAULT_FRACTION = 0.8
# Where a one-owner graph's input is read (:func:`readers`): "auto", "owner" or "all".
READ_ON_KEY = "gpipe.read-on"
# "auto" reads an input at least this large (as the build holds it) with several workers. Below
# it, spreading could save less than its fixed costs: at the ~1.3 GB/s that one H200 worker
# reads Parquet (kron28), 64 MiB take 50 ms, while every partition sent to the owner adds a
# transfer round (a few ms) on top of the tasks' round trips (~8 ms, ARCHITECTURE.md).
SPREAD_READ_BYTES = 2**26

IN_PROCESS = "in-process"  # the address of the one "worker" of a graph built without a client

# Bytes per vertex of an owner's traversal: dist and parent (4 + 8 BFS, 8 + 8 SSSP), frontier
# queues and flags, and the result frame (vertex, distance, parent and their null masks).
TRAVERSAL_BYTES_PER_VERTEX = 48
# Bytes per global vertex id of a multi-owner traversal's exchange state: the sent bitmap or
# the best distance sent, and the per-peer candidate queues.
EXCHANGE_BYTES_PER_VERTEX = 32
# Rows of an input partition that the shuffle's split (gpipe.partitioning.build) cuts at a
# time, and the bytes per row it holds for them besides the buckets: its masks, one int64
# index array, and the ids cast to the index dtype.
SPLIT_ROWS = 2**26
SPLIT_BYTES_PER_ROW = 24
# Bytes per distinct id of an input partition while its ids are renumbered over several owners
# (gpipe.partitioning.numbering): the id, its global id and a sort's order, held where the
# partition is split.
RELABEL_BYTES_PER_ID = 24


@dataclass(frozen=True)
class GraphSize:
    """The figures of an edge list that its memory needs follow from."""

    rows: int  # input edges
    n: int  # vertex ids (an upper bound before renumbering)
    directed: bool
    weighted: bool
    weight_itemsize: int = 8  # bytes of a stored weight: 8 as float64, 4 as float32 (gpipe.partitioning.weights)
    input_row_bytes: int = 16  # bytes of an input row's columns as the build holds them
    # The input is in the workers' memory before the build (a persisted frame: their free
    # memory has it already), not read or sent to them by it (read_edges, a pandas frame).
    input_resident: bool = True
    # The ids are renumbered (8 bytes an integer id; strings take more). One owner holds the
    # sorted distinct ids; several owners each hold the ids of their own vertices, and each
    # worker that splits input a lookup of its partition's distinct ids.
    renumbered: bool = False
    partition_rows: int | None = None  # rows of the largest input partition (None: unknown)

    @property
    def stored_edges(self) -> int:
        return self.rows if self.directed else 2 * self.rows

    @property
    def index_bytes(self) -> int:
        return 4 if self.n < 2**31 else 8

    @property
    def input_bytes(self) -> int:
        return self.rows * self.input_row_bytes

    def owner_bytes(self, owners: int, input_share: float = 1.0) -> int:
        """Peak bytes on each of ``owners`` owners (estimate): the larger of its build's peak
        (:meth:`owner_build_bytes`) and a traversal's, the CSR with the traversal's per-vertex
        arrays and, with several owners, the exchange state. The two do not meet: the build's
        buckets and cursors are freed before the first traversal (and, with several owners,
        given back to the device, :func:`gpipe.partitioning.build._release_build_memory`);
        measured on 4 H100s, kron28's owners peaked in the build, 37 GiB, while a BFS needs 20."""
        vertices = -(-self.n // owners)
        traversal = vertices * TRAVERSAL_BYTES_PER_VERTEX
        exchange = self.n * EXCHANGE_BYTES_PER_VERTEX if owners > 1 else 0
        traversing = self.csr_bytes(owners) + traversal + exchange + self.owner_ids_bytes(owners)
        return max(self.owner_build_bytes(owners, input_share), traversing)

    @property
    def weight_bytes(self) -> int:
        """Bytes of one stored edge's weight (``weight_itemsize``: 8 as float64, 4 as
        float32), 0 when unweighted."""
        return self.weight_itemsize if self.weighted else 0

    @property
    def ids_bytes(self) -> int:
        """Bytes of the sorted distinct ids of a renumbered graph (0 if kept)."""
        return 8 * self.n if self.renumbered else 0

    def owner_ids_bytes(self, owners: int) -> int:
        """Bytes of the input ids that each of ``owners`` owners keeps: all of them for one
        owner, its own vertices' share for several (0 if kept)."""
        return -(-self.ids_bytes // owners)

    def relabel_bytes(self, owners: int) -> int:
        """Bytes of the lookup that a worker splitting an input partition holds while several
        owners renumber: the partition's distinct ids (at most both ends of its rows, and at
        most the vertex count) with their global ids (0 if kept, or for one owner)."""
        if not self.renumbered or owners == 1:
            return 0
        rows = self.partition_rows if self.partition_rows is not None else -(-self.rows // owners)
        return min(2 * rows, self.n) * RELABEL_BYTES_PER_ID

    def with_fewest_vertices(self) -> GraphSize:
        """This size with the fewest vertices that its edges can have (``n * n >= rows``).
        Where ``n`` is only a bound (ids not yet counted), a graph that does not fit at this
        size fits at none."""
        return replace(self, n=max(1, math.isqrt(max(self.rows - 1, 0)) + 1))

    def csr_bytes(self, owners: int) -> int:
        """Bytes of each of ``owners`` owners' CSR: row pointers, neighbours, weights."""
        edges = -(-self.stored_edges // owners)
        vertices = -(-self.n // owners)
        return 8 * (vertices + 1) + edges * (self.index_bytes + self.weight_bytes)

    def owner_build_bytes(self, owners: int, input_share: float = 1.0) -> int:
        """Peak bytes on each of ``owners`` owners while it builds its CSR (estimate).

        One owner of an undirected graph builds its CSR from the input's own id arrays (no
        shuffled copy). With several owners, each owner's worker holds, at the build's peak,
        the buckets it cut its input partitions into for every owner (id pairs of the index
        dtype, both directions of an undirected edge; its own bucket stays), the buckets its
        peers sent it, and the CSR it writes from its pieces as they are
        (``build_csr_pieces``: no joined copy), and the split's few arrays of at most
        :data:`SPLIT_ROWS` rows. Its share of the input partitions counts too unless the input
        was in memory before the build (``input_resident``); so does, for one owner, the part
        of a resident input that other workers hold (``input_share``: the fraction already on
        this one), which comes to the owner to be built.
        """
        edges = -(-self.stored_edges // owners)
        vertices = -(-self.n // owners)
        builder = 16 * vertices  # degree counts and scatter cursors
        pair = 2 * self.index_bytes + self.weight_bytes
        if owners > 1:
            cut = edges * pair  # this worker's input, cut for every owner
            received = (owners - 1) * edges * pair // owners  # peers' buckets for this owner
            split = min(SPLIT_ROWS, -(-self.rows // owners)) * SPLIT_BYTES_PER_ROW
            builder += cut + received + split + self.relabel_bytes(owners)
        elif self.directed:
            builder += edges * pair
        if not self.input_resident:
            builder += -(-self.input_bytes // owners)
        elif owners == 1:
            builder += int(self.input_bytes * (1.0 - input_share))
        return self.csr_bytes(owners) + builder + self.owner_ids_bytes(owners)


@dataclass(frozen=True)
class WorkerMemory:
    """What one worker can give a partition."""

    address: str
    free_bytes: int
    kind: str  # "device" or "host"
    input_share: float = 1.0  # the fraction of a resident input that this worker holds already
    # What a read on this worker runs on: its GPU (host name and PCI bus id) or, on CPU, its
    # host's cores, which a CPU worker's Parquet reads already spread over (pyarrow's
    # threads). None: unknown, its own.
    reads_on: str | None = None


def requested_partitions(partitions):
    """``partitions`` as given, else Dask config ``gpipe.partitions``; None means automatic.

    Raises InputError unless it is None, ``"auto"`` or a positive integer.
    """
    return _requested_count("partitions", partitions, PARTITIONS_KEY)


def check_workers_for(requested: int, workers: int, in_process: bool = False) -> None:
    """InputError unless ``workers`` workers (or, ``in_process``, this process alone) can own
    ``requested`` partitions; programs call it before reading the edges."""
    if requested <= workers:
        return
    if in_process:
        raise InputError(f"partitions={requested} needs a Dask client with {requested} workers; "
                         "without one the graph is held in this process, as one partition")
    raise InputError(f"partitions={requested} needs {requested} Dask workers; the cluster has {workers}")


def choose_owners(size: GraphSize, workers: list, requested: int | None) -> list:
    """The workers that own the graph's partitions, in owner order.

    ``workers``: :class:`WorkerMemory` of every worker. ``requested``: a forced owner count, or
    None for the fewest workers whose budget holds the graph.

    Raises
    ------
    InputError
        ``requested`` is more than there are workers.
    GraphTooLarge
        The graph does not fit the owners' budgets (the requested ones, or all workers).
    """
    fraction = float(dask.config.get(FRACTION_KEY, DEFAULT_FRACTION))
    ranked = sorted(workers, key=lambda w: (-w.free_bytes, w.address))
    if requested is not None:
        check_workers_for(requested, len(ranked), in_process=ranked[0].address == IN_PROCESS)
    counts = [requested] if requested is not None else range(1, len(ranked) + 1)
    for count in counts:
        chosen = ranked[:count]
        if count == 1:  # the most room left once the input that is elsewhere has come
            chosen = [min(ranked, key=lambda w: (owner_need(size, 1, w) - fraction * w.free_bytes, w.address))]
        if all(owner_need(size, count, w) <= fraction * w.free_bytes for w in chosen):
            return sorted(chosen, key=lambda w: w.address)
    count = counts[-1]
    chosen = ranked[:count]
    raise GraphTooLarge(
        f"the graph needs about {_gib(max(owner_need(size, count, w) for w in chosen))} on each of "
        f"{count} owner(s) "
        f"({size.rows:,} edges, {size.n:,} vertex ids); the {'requested' if requested else 'available'} "
        f"worker(s) have {', '.join(_gib(w.free_bytes) for w in chosen)} of free {chosen[0].kind} "
        f"memory, of which gpipe uses {fraction:g} (Dask config {FRACTION_KEY!r}). "
        "Add workers or memory, or raise the fraction")


def owner_need(size: GraphSize, owners: int, worker: WorkerMemory, build_only: bool = False) -> int:
    """Peak bytes on ``worker`` as one of ``owners`` owners (:meth:`GraphSize.owner_bytes`;
    ``build_only``: while it builds, :meth:`GraphSize.owner_build_bytes`)."""
    estimate = size.owner_build_bytes if build_only else size.owner_bytes
    return estimate(owners, worker.input_share)


def requested_replicas(replicas):
    """``replicas`` as given, else Dask config ``gpipe.replicas``; None means as many as have room.

    Raises InputError unless it is None, ``"auto"`` or a positive integer.
    """
    return _requested_count("replicas", replicas, REPLICAS_KEY)


def _requested_count(name, value, key):
    """``value`` as given, else Dask config ``key``, as a positive integer; None for None or
    ``"auto"``. Raises InputError, naming the setting ``name``, for anything else."""
    if value is None:
        value = dask.config.get(key, None)
    if value is None or value == "auto":
        return None
    count = 0
    if isinstance(value, (int, str)) and not isinstance(value, bool):
        try:
            count = int(value)
        except ValueError:
            pass
    if count < 1:
        raise InputError(f"{name} must be a positive integer or None, not {value!r}")
    return count


def choose_replicas(size: GraphSize, workers: list, owner: str, requested: int | None) -> list:
    """The workers that hold a copy of a one-owner graph's partition, the owner first.

    ``workers``: :class:`WorkerMemory` of every worker. A worker takes a copy when its budget
    holds what the owner needs (:meth:`GraphSize.owner_bytes` of one owner), most free memory
    first; ``requested`` caps the count (the owner included), None takes every such worker.
    Never an error: a cluster with less room gives fewer replicas.
    """
    fraction = float(dask.config.get(FRACTION_KEY, DEFAULT_FRACTION))
    need = size.owner_bytes(1)
    others = sorted((w for w in workers if w.address != owner and need <= fraction * w.free_bytes),
                    key=lambda w: (-w.free_bytes, w.address))
    count = len(others) + 1 if requested is None else min(requested, len(others) + 1)
    return [owner] + [w.address for w in others[:count - 1]]


def readers(size: GraphSize, workers: list, owner: WorkerMemory, partitions: int) -> list:
    """The addresses of the workers that read the input of a one-owner graph, ``owner`` first.

    Dask config ``gpipe.read-on``: ``"owner"`` reads on the owner alone; ``"all"`` on every
    worker whose budget holds its share of the partitions (round-robin, ``ceil(partitions /
    k)`` of ``k`` readers), most free memory first; ``"auto"`` (the default) on one such worker
    per read resource (``reads_on``: each GPU, or each host of CPU workers, the owner's own
    taken by the owner) when the input is at least :data:`SPREAD_READ_BYTES` as the build
    holds it, else on the owner alone. Either way one input partition, or one worker, is
    read on the owner. The files are then read at the speed of all the readers, and the
    owner builds from what they send: its estimate (:meth:`GraphSize.owner_build_bytes`)
    counts the whole input on it either way, never twice (its own share and what arrives).

    Raises InputError for another ``gpipe.read-on``.
    """
    mode = str(dask.config.get(READ_ON_KEY, "auto"))
    if mode not in ("auto", "owner", "all"):
        raise InputError(f"Dask config {READ_ON_KEY!r} must be 'auto', 'owner' or 'all', not {mode!r}")
    others = sorted((w for w in workers if w.address != owner.address), key=lambda w: (-w.free_bytes, w.address))
    if mode == "auto":
        if size.input_bytes < SPREAD_READ_BYTES:
            return [owner.address]
        taken, distinct = {owner.reads_on or owner.address}, []
        for w in others:  # one worker per read resource, the one with the most room
            if (w.reads_on or w.address) not in taken:
                taken.add(w.reads_on or w.address)
                distinct.append(w)
        others = distinct
    if mode == "owner" or not others or partitions < 2:
        return [owner.address]
    fraction = float(dask.config.get(FRACTION_KEY, DEFAULT_FRACTION))
    per_partition = -(-size.input_bytes // partitions)
    for count in range(min(len(others) + 1, partitions), 1, -1):
        share = -(-partitions // count) * per_partition
        room = [w.address for w in others if share <= fraction * w.free_bytes]
        if len(room) >= count - 1:
            return [owner.address, *room[:count - 1]]
    return [owner.address]


def in_process_memory(backend_name) -> WorkerMemory:
    """This process's memory budget, for a graph built without a Dask client."""
    return WorkerMemory(IN_PROCESS, free_bytes_here(backend_name), _kind(backend_name))


def cluster_memory(client, backend_name) -> list:
    """:class:`WorkerMemory` of every worker of ``client``, asked of each worker (one round trip)."""
    found = client.run(_memory_here, backend_name)
    return [WorkerMemory(address, int(bytes_), _kind(backend_name), reads_on=reads_on)
            for address, (bytes_, reads_on) in found.items()]


def _memory_here(backend_name) -> tuple:
    """``(free bytes, reads_on)`` of this worker (:class:`WorkerMemory`)."""
    import socket

    where = socket.gethostname()
    if backend_name == "gpu":
        import cupy

        where += f"/{cupy.cuda.Device().pci_bus_id}"
    return free_bytes_here(backend_name), where


def _kind(backend_name) -> str:
    return "device" if backend_name == "gpu" else "host"


def free_bytes_here(backend_name) -> int:
    """Bytes this process can still take: device memory on GPU, host memory on CPU."""
    if backend_name == "gpu":
        import cupy

        free, _ = cupy.cuda.runtime.memGetInfo()
        return int(free) + int(cupy.get_default_memory_pool().free_bytes())
    import psutil

    limit = None
    if "distributed" in sys.modules:  # else this is no worker, and the import costs 0.5 s
        from distributed import get_worker

        try:
            limit = get_worker().memory_manager.memory_limit
        except (ValueError, AttributeError):
            pass
    process = psutil.Process().memory_info().rss
    if limit:
        return max(0, int(limit) - process)
    return int(psutil.virtual_memory().available)


def _gib(value: int) -> str:
    return f"{value / 2**30:.2f} GiB"
