"""`Graph`: an edge list built once into per-owner partitions and queried many times."""

from __future__ import annotations

import numpy as np

from gpipe import backend as backends
from gpipe import build as builder
from gpipe import execution, result, traverse, validate
from gpipe.errors import InputError


class Graph:
    """A graph whose CSR partitions live on the Dask workers (or in this process).

    Build it with :meth:`from_edges`; every :meth:`bfs` and :meth:`sssp` reuses the same
    partitions, so the cost of reading, renumbering and partitioning is paid once.
    """

    def __init__(self, built, executor, *, directed: bool, weight: str | None):
        self._built = built
        self._executor = executor
        self.directed = directed
        self.weight = weight

    @classmethod
    def from_edges(cls, edges, *, directed=True, src="src", dst="dst", weight=None) -> "Graph":
        """Build a graph from an edge DataFrame.

        Parameters
        ----------
        edges : dask.dataframe.DataFrame
            One row per edge, pandas- or cuDF-backed (a pandas or cuDF DataFrame is wrapped).
        directed : bool
            True follows ``src -> dst`` only; False follows both directions.
        src, dst : str
            Columns of integer vertex ids, any integer dtype and any values.
        weight : str or None
            Column of finite edge weights; needed for :meth:`sssp`.

        Returns
        -------
        Graph
            Partitioned over the workers of the active Dask client (one owner per worker),
            or held in this process when no client is active.

        Raises
        ------
        InputError
            A missing column, non-integer ids, null ids, NaN or infinite weights, no edges.

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
        executor = execution.current()
        built = builder.build(executor, edges, directed=directed, src=src, dst=dst, weight=weight)
        return cls(built, executor, directed=directed, weight=weight)

    @property
    def num_vertices(self) -> int:
        """Number of distinct vertex ids in the edge list (either end)."""
        if self._built.ids is not None:
            return self._built.layout.n
        counts = [self._executor.submit(_present_count, part, owner=p) for p, part in enumerate(self._built.parts)]
        return int(sum(self._executor.gather(counts)))

    @property
    def num_partitions(self) -> int:
        """Number of owners the vertices are split among (one per Dask worker)."""
        return self._built.layout.n_owners

    @property
    def backend(self) -> str:
        """``"gpu"`` when the partitions hold cuDF/CuPy data, else ``"cpu"``."""
        return self._built.backend

    def bfs(self, source, *, depth_limit=None):
        """Breadth-first search from ``source``: hop distances and a BFS tree.

        Parameters
        ----------
        source : int or list of int
            Vertex id(s) of the input; with several, each vertex's distance is to the nearest.
        depth_limit : int or None
            Only vertices at most this many hops away are reached.

        Returns
        -------
        dask.dataframe.DataFrame
            ``vertex`` (input ids and dtype), ``distance`` (integer hops), ``parent`` (a vertex
            one hop closer along an existing edge), one row per vertex of the edge list.
            Sources have distance 0 and a null parent; unreached vertices null distance and
            parent. Partitions are cuDF when the input was, else pandas.

        Raises
        ------
        InputError
            A source that is not in the graph, or a negative ``depth_limit``.
        """
        depth_limit = validate.depth_limit(depth_limit)
        sources = self._global_sources(source)
        frames = traverse.bfs(self._executor, self._built, sources, depth_limit)
        return self._frame(frames, result.BFS)

    def sssp(self, source):
        """Single-source shortest paths from ``source`` by edge weight.

        Non-negative weights take the fast path; negative weights are handled by
        Bellman-Ford-style relaxation. Parallel edges count with their lightest weight.
        With several sources, each distance is the shortest from any of them: a source that
        another source reaches by a negative path gets that (negative) distance and a parent.

        Parameters
        ----------
        source : int or list of int
            Vertex id(s) of the input; with several, each distance is to the nearest.

        Returns
        -------
        dask.dataframe.DataFrame
            ``vertex``, ``distance`` (float64), ``parent`` (``distance[parent] + weight ==
            distance[vertex]`` along an existing edge); nulls for unreached vertices.

        Raises
        ------
        InputError
            The graph was built without a weight column, or a source is not in the graph.
        NegativeCycleError
            A cycle of negative total weight is reachable from a source.
        """
        if self.weight is None:
            raise InputError("sssp needs edge weights: build the graph with weight='<column>'")
        sources = self._global_sources(source)
        frames = traverse.sssp(self._executor, self._built, sources)
        return self._frame(frames, result.SSSP)

    def _frame(self, frames, kind):
        built = self._built
        return self._executor.to_frame(frames, result.meta(built.backend, kind, built.vertex_dtype))

    def _global_sources(self, source) -> np.ndarray:
        """Global ids of the input ids in ``source``; InputError naming the first one not in the graph."""
        values = validate.sources(source)
        built, executor = self._built, self._executor
        if built.ids is not None:
            found = executor.gather([executor.submit(_locate, built.backend, built.ids, values)])[0]
        else:
            found = np.array([v if 0 <= v < built.layout.n else -1 for v in values], dtype=np.int64)
            owners = built.layout.owner_of(found)
            checks = {
                p: executor.submit(_present_at, built.parts[p], found[(owners == p) & (found >= 0)], owner=p)
                for p in np.unique(owners[found >= 0]).tolist()
            }
            for p, present in zip(checks, executor.gather(list(checks.values()))):
                found[np.flatnonzero((owners == p) & (found >= 0))[~present]] = -1
        missing = np.flatnonzero(found < 0)
        if missing.size:
            raise InputError(f"source vertex {values[missing[0]]} is not in the graph")
        return found

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
        count = "vertices" if built.ids is not None else "vertex_ids"
        return (
            f"Graph({count}={built.layout.n}, edges={built.n_edges_input}, partitions={self.num_partitions}, "
            f"backend={self.backend!r}, weighted={self.weight is not None}, directed={self.directed})"
        )


def _present_count(part) -> int:
    return part.n_local if part.present is None else int(part.present.sum())


def _present_at(part, global_ids) -> np.ndarray:
    if part.present is None:
        return np.ones(len(global_ids), dtype=bool)
    local = part.xp.asarray(global_ids - part.offset)
    return backends.get(part.backend).to_host(part.present[local])


def _locate(backend_name, ids, values) -> np.ndarray:
    """Rank of each value in the sorted ``ids``, -1 where absent."""
    be = backends.get(backend_name)
    info = np.iinfo(ids.dtype)
    inside = np.array([info.min <= v <= info.max for v in values])
    keys = np.array([v if ok else 0 for v, ok in zip(values, inside)], dtype=ids.dtype)
    pos = be.to_host(be.xp.searchsorted(ids, be.xp.asarray(keys))).astype(np.int64)
    pos = np.minimum(pos, len(ids) - 1)
    hit = be.to_host(ids[be.xp.asarray(pos)]) == keys
    return np.where(inside & hit, pos, -1)
