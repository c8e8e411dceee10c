"""`Graph`: an edge list built once into per-owner partitions and queried many times."""

from __future__ import annotations

import numpy as np

from gpipe import paths as path_rows
from gpipe.engine import backend as backends
from gpipe.engine import execution, result, traverse
from gpipe.engine import sources as source_ids
from gpipe.engine.view import EngineView
from gpipe.errors import GraphLost, InputError, NegativeCycleError, NoPath, on_undirected, plain
from gpipe.io import validate
from gpipe.partitioning import build
from gpipe.watch import progress


class Graph:
    """A graph whose CSR partitions live on the Dask workers (or in this process).

    Build it with :meth:`from_edges`; every :meth:`bfs` and :meth:`sssp` reuses the same
    partitions, so the cost of reading, renumbering and partitioning is paid once.
    """

    def __init__(self, built, *, directed: bool, weight: str | None, rebuild=None, inputs=()):
        self._built = built
        self._executor = built.executor
        self._rebuild = rebuild  # () -> Built, from the same input; None: cannot be rebuilt
        self.directed = directed
        self.weight = weight
        self.inputs = tuple(inputs)  # the edge paths it was built from, as far as known

    @classmethod
    def from_edges(cls, edges, *, directed=True, src=None, dst=None, weight=None,
                   partitions=None, replicas=None, weight_dtype=None) -> "Graph":
        """Build a graph from an edge DataFrame.

        Parameters
        ----------
        edges : dask.dataframe.DataFrame
            One row per edge, pandas- or cuDF-backed (a pandas or cuDF DataFrame is wrapped).
        directed : bool
            True follows ``src -> dst`` only; False follows both directions.
        src, dst : str or None
            Columns of vertex ids: integers of any dtype and any values (when their dtypes
            differ, result ids take the integer dtype that holds every id), or strings in
            both (pandas object, ``string``, ``str`` or Arrow strings, cuDF strings), given
            back in the input's string dtype. None (default): the columns given to
            :func:`gpipe.read_edges` when ``edges`` is its frame, else ``"src"`` and ``"dst"``.
        weight : str, None or False
            Column of finite edge weights; needed for :meth:`sssp`. None (default): the weight
            column that :func:`gpipe.read_edges` read when ``edges`` is its frame (its
            ``weight=``, or a column named ``weight`` it found), as :func:`gpipe.sssp` takes it;
            else no weights. False: no weights even then (a BFS-only graph, less memory).
        weight_dtype : {None, "auto", "float32", "float64"}
            The width the owners store the weights in (:attr:`weight_dtype` tells the choice):
            4 bytes per stored edge as float32, 8 as float64, counted by the sizing. None
            (default): the ``weight_dtype`` given to :func:`gpipe.read_edges` when ``edges``
            is its frame, else ``"auto"``: float32 where that is exact, a float32 column or an
            integer column whose weights all lie strictly between -2**24 and 2**24; else
            float64. ``"float32"`` stores any weights as float32, rounded to the nearest
            float32. Distances are float64 either way, each weight added in float64
            (:mod:`gpipe.partitioning.weights`).
        partitions : int or None
            How many workers own a part of the graph. None (the default, or Dask config
            ``gpipe.partitions``): the fewest workers whose memory holds it, so a graph that
            fits one worker is traversed there with the one-owner kernels, without messages
            between workers (:mod:`gpipe.partitioning.sizing` has the rule). An integer forces that many
            owners, at most the number of workers.
        replicas : int or None
            A graph with one owner on a cluster: how many workers hold a copy of its partition
            (the owner included), so that the batches of :meth:`bfs_each` and
            :meth:`sssp_each` run on all of them. None (the default, or Dask config
            ``gpipe.replicas``): every worker with room for it (:mod:`gpipe.partitioning.sizing`); 1: the
            owner only. The workers are chosen here; the first :meth:`bfs_each` or
            :meth:`sssp_each` copies the partition to them and waits for the copies.
            Single-source queries run on the owner either way.

        Returns
        -------
        Graph
            Partitioned over ``num_partitions`` workers of the active Dask client, or held in
            this process when no client is active.

        Raises
        ------
        InputError
            A missing column, ids that are neither integers nor strings, one string column
            with one integer column, null ids, NaN or infinite weights, no edges,
            or ids that no one integer dtype holds (uint64 ids above ``2**63 - 1`` in one
            column, negative ids in the other); ``partitions`` not a positive integer or more
            than the workers; ``replicas`` not a positive integer; ``weight_dtype`` none of
            the above, or ``"float32"`` with a weight beyond float32's range (about 3.4e38;
            the message names the column and the value).
        GraphTooLarge
            Before anything is built: the graph needs more memory than its owners have (the
            message gives both figures).

        Examples
        --------
        >>> import pandas as pd, dask.dataframe as dd, gpipe
        >>> edges = dd.from_pandas(pd.DataFrame({"src": [1, 2], "dst": [2, 3], "w": [0.5, 2.0]}), npartitions=1)
        >>> g = gpipe.Graph.from_edges(edges, weight="w")
        >>> g.num_vertices
        3
        >>> g.sssp(1).compute().sort_values("vertex")["distance"].tolist()
        [0.0, 0.5, 2.5]
        """
        from gpipe.io import origin

        if weight is False:
            src, dst, _ = origin.columns(edges, src, dst)
            weight = None
        else:
            src, dst, weight = origin.columns(edges, src, dst, weight)
        weight_dtype = validate.weight_dtype(origin.weight_dtype(edges, weight_dtype))

        def build_graph():
            executor = execution.current()
            with executor.span("gpipe-build"):
                return build.build(executor, edges, directed=directed, src=src, dst=dst,
                                   weight=weight, partitions=partitions, replicas=replicas,
                                   weight_dtype=weight_dtype)

        return cls(build_graph(), directed=directed, weight=weight, rebuild=build_graph,
                   inputs=origin.input_paths(edges))

    @property
    def num_vertices(self) -> int:
        """Number of distinct vertex ids in the edge list (either end)."""
        return sum(self._built.rows)

    @property
    def num_partitions(self) -> int:
        """Number of owners the vertices are split among, each on its own Dask worker."""
        return self._built.layout.n_owners

    @property
    def transport(self) -> str:
        """What carries the traffic between the owners of a traversal: ``"nccl"`` (GPU owners,
        one per device), ``"dask"`` (Dask's worker-to-worker comms) or ``"none"`` (one owner)."""
        if self.num_partitions < 2:
            return "none"
        return "nccl" if self._built.nccl_group is not None else "dask"

    @property
    def weight_dtype(self) -> str | None:
        """The width the owners store the edge weights in, ``"float32"`` or ``"float64"``
        (:meth:`from_edges`'s ``weight_dtype``, or its automatic choice); None without
        weights. Distances are float64 either way."""
        return self._built.weight_dtype

    @property
    def replicas(self) -> int:
        """Workers over which :meth:`bfs_each` and :meth:`sssp_each` spread a one-owner graph's
        batches: its owner and the workers chosen at the build to hold a copy of its partition,
        which the first such call makes (1 without a cluster, or with several owners)."""
        workers = self._built.replica_workers
        return 1 if not workers else len(workers)

    @property
    def backend(self) -> str:
        """``"gpu"`` when the partitions hold cuDF/CuPy data, else ``"cpu"``."""
        return self._built.backend

    @property
    def engine(self) -> EngineView:
        """The graph as its engine holds it (:class:`gpipe.engine.view.EngineView`: the build,
        the executor, traversals up to the owners' frames): the interface of gpipe's tools and
        tests below the queries, not for users; made anew on each access."""
        return EngineView(self._built, self._executor)

    def bfs(self, source, *, depth_limit=None, parents=True):
        """Breadth-first search from ``source``: hop distances and a BFS tree.

        Parameters
        ----------
        source : int or str, or a list of them
            Vertex id(s) of the input (strings when the graph's ids are strings); with several,
            each vertex's distance is to the nearest.
        depth_limit : int or None
            Only vertices at most this many hops away are reached: an integer from 0 to
            ``2**31 - 1`` (distances are 32-bit), the same with any number of owners.
        parents : bool, default True
            False: distances only. The result has no ``parent`` column, and a graph on one
            owner allocates no parent array for the traversal (8 bytes per vertex less on
            its device); over several owners the parents are still exchanged while the
            levels run and only left out of the result.

        Returns
        -------
        dask.dataframe.DataFrame
            ``vertex`` (input ids and dtype), ``distance`` (hops, float64 as every gpipe
            distance: README, "The result"), ``parent`` (a vertex one hop closer along an
            existing edge, in the ids' dtype with nulls), one row per vertex of the edge list.
            Sources have distance 0 and a null parent; unreached vertices null distance (NaN
            in pandas) and parent. Partitions are cuDF when the input was, else pandas.

        Raises
        ------
        InputError
            A source that is not in the graph or not of the ids' kind (an integer for string
            ids, a string for integer ids), or a ``depth_limit`` that is negative, above
            ``2**31 - 1`` or no integer (a bool, a float).
        """
        depth_limit = validate.depth_limit(depth_limit)
        parents = validate.flag(parents, "parents")
        frames = self._query("gpipe-bfs", source, lambda built, sources: traverse.bfs_frames(
            self._executor, built, sources, depth_limit, parents=parents))
        return self._frame(frames, result.BFS, parents)

    def sssp(self, source, *, max_distance=None, parents=True):
        """Single-source shortest paths from ``source`` by edge weight.

        Non-negative weights take the fast path; negative weights are handled by
        Bellman-Ford-style relaxation. Parallel edges count with their lightest weight.
        With several sources, each distance is the shortest from any of them: a source that
        another source reaches by a negative path gets that (negative) distance and a parent.

        Parameters
        ----------
        source : int or str, or a list of them
            Vertex id(s) of the input (strings when the graph's ids are strings); with several,
            each distance is to the nearest.
        max_distance : float or None
            Dijkstra's cutoff: the search never extends a path beyond it (a candidate
            distance greater than it is never accepted), so farther vertices are unreached
            (null distance and parent), as ``scipy.sparse.csgraph.dijkstra(limit=...)``
            leaves them, and the traversal stops there. With negative weights a vertex whose
            only short paths climb above it on the way is unreached too (``0 -> 1`` (2.0),
            ``1 -> 3`` (-1.0), ``max_distance=1.0``: neither 1 nor 3), so every reached
            vertex's parent is reached.
        parents : bool, default True
            False: distances only, no ``parent`` column. On one owner with non-negative
            weights no parent array is allocated (on the GPU, no parent, parent-edge or
            pass-stamp array: 20 bytes per vertex less); otherwise the traversal keeps its
            parents (it needs them to detect negative cycles, or exchanges them between
            owners) and the column is left out of the result.

        Returns
        -------
        dask.dataframe.DataFrame
            ``vertex``, ``distance`` (float64), ``parent`` (``distance[parent] + weight ==
            distance[vertex]`` along an existing edge); nulls for unreached vertices.

        Raises
        ------
        InputError
            The graph was built without a weight column, a source is not in the graph, or
            ``max_distance`` is negative or NaN.
        NegativeCycleError
            A cycle of negative total weight is reachable from a source; a self-loop of
            negative weight is one. With ``max_distance``, only one that the search bounded
            by it reaches (it never passes above the cutoff to go round a cycle).
        """
        if self.weight is None:
            raise InputError("sssp needs edge weights: build the graph with weight='<column>'")
        max_distance = validate.max_distance(max_distance)
        parents = validate.flag(parents, "parents")
        frames = self._query("gpipe-sssp", source, lambda built, sources: traverse.sssp_frames(
            self._executor, built, sources, parents=parents, max_distance=max_distance))
        return self._frame(frames, result.SSSP, parents)

    def path(self, source, target, *, unweighted=False) -> list:
        """One shortest path from ``source`` to ``target``, as a list of input ids.

        A graph built with a weight column is searched by weight (SSSP), else by hops (BFS);
        ``unweighted=True`` counts hops on a weighted graph too. On a graph held by one owner
        the traversal stops as soon as the target is settled (BFS: after the level that
        reaches it; SSSP with non-negative weights: once its distance is final) and the
        parents are followed where they lie; a graph over several owners is traversed to the
        end by the multi-owner path and its parent column gathered on the client.

        Parameters
        ----------
        source, target : int or str
            Input ids (strings when the graph's ids are strings).
        unweighted : bool, default False
            Count hops even when the graph has weights.

        Returns
        -------
        list
            ``[source, ..., target]``: consecutive ids are joined by an edge and the path is
            shortest (by hops, or by total weight). ``[source]`` when ``target == source``.

        Raises
        ------
        NoPath
            ``target`` is not reachable from ``source`` (as NetworkX's ``NetworkXNoPath``).
        InputError
            ``source`` or ``target`` is not in the graph, or is not of the ids' kind.
        NegativeCycleError
            A negative cycle is reachable from the source (weighted search).

        Examples
        --------
        >>> import pandas as pd, gpipe
        >>> edges = pd.DataFrame({"src": [1, 2, 1], "dst": [2, 3, 3], "w": [1.0, 1.0, 5.0]})
        >>> g = gpipe.Graph.from_edges(edges, weight="w")
        >>> g.path(1, 3)
        [1, 2, 3]
        >>> g.path(1, 3, unweighted=True)
        [1, 3]
        """
        path = self._paths(source, [target], unweighted, as_list=True)
        if not path:
            raise NoPath(f"no path from source {plain(source)!r} to target {plain(target)!r}")
        return path

    def paths(self, source, targets, *, unweighted=False):
        """Shortest paths from ``source`` to each of ``targets``, as rows.

        The same search as :meth:`path` (by weight when the graph has one, unless
        ``unweighted``); the traversal stops early only when all targets are one vertex. The
        paths are followed for all targets at once (one gather per hop of the longest path).

        Parameters
        ----------
        source : int or str
            Input id of the source.
        targets : int or str, or a list of them
            Input ids; repeats give repeated rows.
        unweighted : bool, default False
            Count hops even when the graph has weights.

        Returns
        -------
        dask.dataframe.DataFrame
            One partition, one row per ``(target, step, vertex)``: step 0 is the source, the
            last step of each target is the target itself, and consecutive steps are joined
            by an edge. Targets not reachable from the source have no rows. Ordered by the
            targets as given, then by step. cuDF partitions when the graph is on the GPU.

        Raises
        ------
        InputError
            The source or a target is not in the graph.
        NegativeCycleError
            A negative cycle is reachable from the source (weighted search).

        Examples
        --------
        >>> import pandas as pd, gpipe
        >>> g = gpipe.Graph.from_edges(pd.DataFrame({"src": [1, 2, 2], "dst": [2, 3, 4]}))
        >>> g.paths(1, [3, 4]).compute().values.tolist()
        [[3, 0, 1], [3, 1, 2], [3, 2, 3], [4, 0, 1], [4, 1, 2], [4, 2, 4]]
        """
        import dask.dataframe as dd

        rows = self._paths(source, targets, unweighted)
        return dd.from_pandas(rows, npartitions=1, sort=False)

    def _paths(self, source, targets, unweighted, as_list=False):
        """The paths frame (pandas or cuDF, computed) of :meth:`paths`; with ``as_list``, the
        one target's path as a list of input ids (empty when unreached)."""
        unweighted = validate.flag(unweighted, "unweighted")
        kind = result.BFS if self.weight is None or unweighted else result.SSSP
        values = validate.sources(source, strings=self._built.string_ids)
        if values.size != 1:
            raise InputError(f"a path starts at one source, got {values.size}")
        wanted = validate.sources(targets, strings=self._built.string_ids, what="target")
        if self._built.layout.n_owners == 1:
            task = path_rows.owner_path if as_list else path_rows.owner_paths

            def run(built, sources):
                return [self._executor.query(
                    task, built.parts[0], kind, sources, self._query_sources(wanted, "target"),
                    built.negative_weights, built.vertex_dtype, owner=0)]

            return self._executor.gather(self._query(f"gpipe-paths-{kind}", source, run))[0]

        def traversal(built, sources):
            self._query_sources(wanted, "target")  # InputError for a target not in the graph
            if kind == result.BFS:
                return traverse.bfs_frames(self._executor, built, sources, None)
            return traverse.sssp_frames(self._executor, built, sources)

        frames = self._executor.gather(self._query(f"gpipe-paths-{kind}", source, traversal))
        whole = backends.get(self._built.backend).frames.concat(frames)
        rows = path_rows.from_result(whole, values[0], list(wanted), type(frames[0]))
        if as_list:
            vertices = rows["vertex"]
            return (vertices.to_arrow().to_pylist() if hasattr(vertices, "to_arrow")
                    else vertices.tolist())
        return rows

    def bfs_each(self, sources, *, depth_limit=None, targets=None, parents=False):
        """Breadth-first search from each of ``sources`` on its own: hops per source and vertex.

        Parameters
        ----------
        sources : list, array, Series, or a Dask Series / one-column frame
            Input ids (strings when the graph's ids are strings), each traversed on its own,
            in the order given. A Dask collection (e.g. a column of another frame) is computed
            once, now, to learn the sources.
        depth_limit : int or None
            Only vertices at most this many hops from their source are reached.
        targets : list, array or Series of input ids, optional
            Return one row per source and target (a distance table) instead of one per reached
            vertex; the distance is null where the target is unreached or not in the graph.
        parents : bool, default False
            Add a ``parent`` column: a vertex one hop closer to the row's source.

        Returns
        -------
        dask.dataframe.DataFrame
            Lazy, one partition per batch of sources (:data:`BFS_BATCH_WIDTH` of the backend's
            kernels, 64 on the CPU), each traversed when it is computed, as a task named
            ``gpipe-bfs-each``. Columns ``source``, ``vertex`` (input ids and dtype),
            ``distance`` (float64, as :meth:`bfs`; NaN in pandas, null in cuDF, for a target
            not reached) and ``parent`` when asked for (the ids' dtype with nulls, as :meth:`bfs`). Without ``targets``, one row per source and vertex it reaches (the
            source itself at distance 0), sources in the order given.

        Raises
        ------
        InputError
            A source not in the graph, given twice, or of the wrong kind; a negative
            ``depth_limit``.

        Notes
        -----
        Each batch holds ``k x n`` int32 distances (``k`` sources, ``n`` vertices of the
        graph) and, with ``parents``, ``k x n`` int64 parents, plus its rows, while it is
        computed. On a cluster a one-owner graph's batches run on every replica of its
        partition (``replicas`` of :meth:`from_edges`). Keep the graph referenced while
        the frame is computed.

        Examples
        --------
        >>> import pandas as pd, gpipe
        >>> g = gpipe.Graph.from_edges(pd.DataFrame({"src": [1, 2, 3], "dst": [2, 3, 4]}))
        >>> rows = g.bfs_each([1, 3]).compute()
        >>> rows[["source", "vertex"]].values.tolist()
        [[1, 1], [1, 2], [1, 3], [1, 4], [3, 3], [3, 4]]
        >>> rows["distance"].tolist()
        [0.0, 1.0, 2.0, 3.0, 0.0, 1.0]
        """
        from gpipe import each

        depth_limit = validate.depth_limit(depth_limit)
        parents = validate.flag(parents, "parents")
        self._ready()
        return self._recorded(each.frame(self._built, self._executor, result.BFS, sources,
                                         directed=self.directed,
                                         limit=-1 if depth_limit is None else depth_limit,
                                         targets=targets, parents=parents))

    def sssp_each(self, sources, *, max_distance=None, targets=None, parents=False):
        """Shortest paths by weight from each of ``sources`` on its own.

        Parameters
        ----------
        sources : list, array, Series, or a Dask Series / one-column frame
            As in :meth:`bfs_each`.
        max_distance : float or None
            Dijkstra's cutoff, as in :meth:`sssp`: a candidate distance greater than it is
            never accepted, so vertices farther from a source are unreached for it (no row,
            or a null distance with ``targets``) and the traversal stops early. With negative
            weights a vertex whose only short paths climb above it on the way is unreached
            too, so every row's parent is a row of the same source.
        targets : list, array or Series of input ids, optional
            As in :meth:`bfs_each`.
        parents : bool, default False
            Add a ``parent`` column (``distance[parent] + weight == distance[vertex]``).

        Returns
        -------
        dask.dataframe.DataFrame
            As :meth:`bfs_each` (``distance`` float64 likewise), tasks named
            ``gpipe-sssp-each``.

        Raises
        ------
        InputError
            No weights, a source not in the graph or given twice, a negative or NaN
            ``max_distance``.
        NegativeCycleError
            When computed: a negative cycle is reachable from a source (named by its id);
            with ``max_distance``, only one that the search bounded by it reaches.

        Notes
        -----
        Each batch holds ``k x n`` float64 distances and int64 parents while it is computed.

        Examples
        --------
        >>> import pandas as pd, gpipe
        >>> edges = pd.DataFrame({"src": [1, 2], "dst": [2, 3], "w": [0.5, 2.0]})
        >>> g = gpipe.Graph.from_edges(edges, weight="w")
        >>> g.sssp_each([1, 2], targets=[3]).compute()["distance"].tolist()
        [2.5, 2.0]
        """
        from gpipe import each

        if self.weight is None:
            raise InputError("sssp_each needs edge weights: build the graph with weight='<column>'")
        max_distance = validate.max_distance(max_distance)
        parents = validate.flag(parents, "parents")
        self._ready()
        return self._recorded(each.frame(self._built, self._executor, result.SSSP, sources,
                                         directed=self.directed, limit=max_distance,
                                         targets=targets, parents=parents))

    def _ready(self) -> None:
        """Rebuild the graph first when its partitions were lost (as a query does)."""
        self._executor.check_open()
        if self._lost():
            self._rebuild_from_input()

    def _query(self, name, source, run) -> list:
        """``run(built, global sources)``'s frame handles, waited for, under the span ``name``.

        A graph whose partitions were lost with a worker (before or during the query) is
        rebuilt from its input and the query run once more; GraphLost when that fails too.
        ClientClosed, at once, when the client the graph was built on is closed. A graph
        built without a client runs its queries in this process, where its partitions are,
        whatever client is active now.
        """
        self._executor.check_open()
        for attempt in range(2):
            if attempt or self._lost():
                self._rebuild_from_input()
            sources = self._query_sources(source)
            try:
                with self._executor.span(name), progress.query(self._query_info(name, source)):
                    frames = run(self._built, sources)
                self._executor.wait(frames)
                return frames
            except GraphLost:
                if attempt:
                    raise
            except NegativeCycleError as error:
                if self.directed:
                    raise
                raise on_undirected(error) from None
        raise AssertionError("unreachable")

    def _query_info(self, name, source) -> dict:
        """What a query's progress events say of it (:func:`gpipe.progress.query`): the graph
        (its repr, and its vertex ids' range), the sources as given (the first few), and the
        Dask span it runs under."""
        import dask

        sources = list(source) if isinstance(source, (list, tuple, np.ndarray)) else [source]
        shown = ", ".join(str(s) for s in sources[:3]) + (", …" if len(sources) > 3 else "")
        return {"name": name, "graph": repr(self), "vertices": self._built.layout.n,
                "sources": shown, "span": dask.get_annotations().get("span")}

    def _lost(self) -> bool:
        """Whether a partition's data is gone as far as this client knows (no round trip)."""
        handles = [*self._built.parts, self._built.ids, *(self._built.owner_ids or [])]
        return any(getattr(h, "status", "finished") != "finished" for h in handles if h is not None)

    def _rebuild_from_input(self) -> None:
        if self._rebuild is None:
            raise GraphLost("the graph's partitions were lost and it keeps no input to rebuild them from")
        self._executor.wait_for_workers(self.num_partitions)  # a nanny restarts killed workers
        try:
            self._built = self._rebuild()
        except InputError:
            raise
        except Exception as error:  # GraphLost of the rebuild itself included
            raise GraphLost(
                f"the graph's partitions were lost with their worker and its input edges cannot "
                f"be read again ({type(error).__name__}: {error}); build the graph anew from "
                "re-readable edges (a lazy read_edges(...) frame, not one persisted on a lost "
                "worker)") from error
        self._executor = self._built.executor

    def _frame(self, frames, kind, parents=True):
        return self._recorded(self.engine.result_frame(frames, kind, parents))

    def _recorded(self, frame):
        """``frame``, a result, with the graph's input paths recorded for it (:mod:`gpipe.io.origin`),
        so that :func:`gpipe.to_parquet` refuses to write it over them."""
        if self.inputs:
            from gpipe.io import origin

            origin.record(frame, origin.Origin(paths=self.inputs))
        return frame

    def _query_sources(self, source, what="source"):
        """What a query's traversal takes as its sources (:mod:`gpipe.engine.sources`): global ids, or
        for a one-owner graph with renumbered ids the input ids, which its traversal looks up
        where it runs (no extra round trip; a source not in the graph fails the query with
        InputError all the same)."""
        values = validate.sources(source, strings=self._built.string_ids, what=what)
        return source_ids.global_ids_of(self._built, self._executor, values, what, on_owner=True)

    def __repr__(self) -> str:
        """One line of what the build knows already; it computes nothing and asks no worker.

        ``vertices`` is the number of distinct ids when they were renumbered. When the ids
        were kept as they are (small non-negative integers), counting the ones that occur
        would ask every owner, so ``vertex_ids=n`` says the ids lie in ``0..n-1`` instead
        (:attr:`num_vertices` counts exactly). ``edges`` is the rows of the input edge list.

        Examples
        --------
        >>> import pandas as pd, gpipe
        >>> edges = pd.DataFrame({"src": [-10, 20], "dst": [20, 30], "w": [0.5, 2.0]})
        >>> gpipe.Graph.from_edges(edges, weight="w")
        Graph(vertices=3, edges=2, partitions=1, backend='cpu', weighted=True, directed=True)
        """
        built = self._built
        count = "vertices" if built.renumbered else "vertex_ids"
        return (
            f"Graph({count}={sum(built.rows) if built.renumbered else built.layout.n}, edges={built.n_edges_input}, partitions={self.num_partitions}, "
            f"backend={self.backend!r}, weighted={self.weight is not None}, directed={self.directed})"
        )
