"""The one-call entry points: ``gpipe.bfs`` and ``gpipe.sssp`` on an edge DataFrame."""

from __future__ import annotations

from gpipe.graph import Graph
from gpipe.io import validate


def bfs(edges, source, *, directed=True, depth_limit=None, src=None, dst=None, partitions=None,
        parents=True):
    """Breadth-first search over an edge list: hop distance and parent of every vertex.

    Parameters
    ----------
    edges : dask.dataframe.DataFrame
        One row per edge, pandas- or cuDF-backed; ids in columns ``src`` and ``dst`` may be of
        any integer dtype and any values (negative, sparse), or strings in both; they are
        renumbered internally.
    source : int or str, or a list of them
        Start vertex id(s); with several, distances are to the nearest source.
    directed : bool, default True
        True follows ``src -> dst``; False follows edges both ways.
    depth_limit : int or None
        Reach only vertices at most this many hops from a source.
    src, dst : str or None
        Names of the id columns. None: those given to :func:`gpipe.read_edges` when ``edges``
        is its frame, else ``"src"`` and ``"dst"``.
    partitions : int or None
        Owners of the graph on a Dask cluster; None: the fewest workers whose memory holds it
        (see :meth:`gpipe.Graph.from_edges`).
    parents : bool, default True
        False: distances only, no ``parent`` column (see :meth:`gpipe.Graph.bfs`).

    Returns
    -------
    dask.dataframe.DataFrame
        Columns ``vertex`` (the input ids, same dtype), ``distance`` (hops, float64 as every
        gpipe distance: README, "The result") and ``parent`` (the vertex it was reached from,
        in the ids' dtype with nulls: the edge ``parent -> vertex`` exists and
        ``distance[parent] + 1 == distance[vertex]``), one row per vertex appearing in the edge
        list. Sources have distance 0 and a null parent; unreached vertices (or beyond
        ``depth_limit``) have null distance (NaN in pandas) and parent. cuDF partitions when
        ``edges`` is cuDF-backed, pandas otherwise.

    Raises
    ------
    InputError
        Missing or non-integer id columns, null ids, an empty edge list, a source not in the
        graph, a ``depth_limit`` that is not an integer from 0 to ``2**31 - 1`` (checked
        before the graph is built).

    Notes
    -----
    Runs on the active Dask client (on as few workers as hold the graph), or in this process
    without one.
    Self-loops are ignored and duplicate edges are harmless. Time O(V + E) per query plus the
    graph build; use :class:`gpipe.Graph` to build once and query many times.

    Examples
    --------
    >>> import pandas as pd, dask.dataframe as dd, gpipe
    >>> edges = dd.from_pandas(pd.DataFrame({"src": [10, 20, 30], "dst": [20, 30, 40]}), npartitions=1)
    >>> res = gpipe.bfs(edges, 20).compute().sort_values("vertex")
    >>> res["distance"].tolist()
    [nan, 0.0, 1.0, 2.0]
    >>> res["parent"].tolist()
    [<NA>, <NA>, 20, 30]
    """
    depth_limit = validate.depth_limit(depth_limit)  # before the build, which may take long
    graph = Graph.from_edges(edges, directed=directed, src=src, dst=dst, weight=False,
                             partitions=partitions)
    return graph.bfs(source, depth_limit=depth_limit, parents=parents)


def sssp(edges, source, *, directed=True, src=None, dst=None, weight=None, partitions=None,
         max_distance=None, parents=True, weight_dtype=None):
    """Single-source shortest paths over a weighted edge list.

    Parameters
    ----------
    edges : dask.dataframe.DataFrame
        One row per edge with integer (or string) ids in ``src``/``dst`` and finite numbers in
        ``weight``.
    source : int or str, or a list of them
        Start vertex id(s); with several, distances are to the nearest source.
    directed : bool, default True
        True follows ``src -> dst``; False follows edges both ways.
    src, dst, weight : str or None
        Column names. None: those :func:`gpipe.read_edges` was given (the weight column it
        read) when ``edges`` is its frame, else ``"src"``, ``"dst"`` and ``"weight"``.
    partitions : int or None
        Owners of the graph on a Dask cluster; None: the fewest workers whose memory holds it
        (see :meth:`gpipe.Graph.from_edges`).
    max_distance : float or None
        Dijkstra's cutoff: a candidate distance above it is never accepted, so farther
        vertices are unreached and the traversal stops there (see :meth:`gpipe.Graph.sssp`,
        also for negative weights).
    parents : bool, default True
        False: distances only, no ``parent`` column.
    weight_dtype : {None, "auto", "float32", "float64"}
        The width the weights are stored in (see :meth:`gpipe.Graph.from_edges`): float32
        halves their memory, and is the automatic choice where it is exact. Distances are
        float64 either way.

    Returns
    -------
    dask.dataframe.DataFrame
        ``vertex``, ``distance`` (float64, null when unreachable) and ``parent`` (as in
        :func:`bfs`; the edge
        ``parent -> vertex`` exists and ``distance[parent] + weight == distance[vertex]``).

    Raises
    ------
    InputError
        Missing columns (the weight column included), non-integer ids, NaN or infinite
        weights, an empty edge list, a source not in the graph, a negative or NaN
        ``max_distance``.
    NegativeCycleError
        A negative-weight cycle is reachable from a source (in an undirected graph any
        reachable negative edge is one, and so is a self-loop of negative weight).
        Self-loops of non-negative weight are ignored.

    Notes
    -----
    Non-negative weights use Dijkstra (CPU, one partition) or frontier relaxation; negative
    weights use Bellman-Ford-style rounds. Parallel edges count with their lightest weight.

    Examples
    --------
    >>> import pandas as pd, dask.dataframe as dd, gpipe
    >>> edges = dd.from_pandas(pd.DataFrame({"src": [0, 0, 1], "dst": [1, 2, 2], "weight": [1.0, 5.0, 1.5]}), npartitions=1)
    >>> gpipe.sssp(edges, 0).compute().sort_values("vertex")["distance"].tolist()
    [0.0, 1.0, 2.5]
    """
    src, dst, weight = _weighted_columns(edges, src, dst, weight, "sssp")
    validate.max_distance(max_distance)  # before the build
    graph = Graph.from_edges(edges, directed=directed, src=src, dst=dst, weight=weight,
                             partitions=partitions, weight_dtype=weight_dtype)
    return graph.sssp(source, max_distance=max_distance, parents=parents)


def bfs_each(edges, sources, *, directed=True, depth_limit=None, targets=None, parents=False,
             src=None, dst=None, partitions=None, replicas=None):
    """Breadth-first search from each of ``sources`` on its own, over an edge list.

    Parameters
    ----------
    edges : dask.dataframe.DataFrame
        One row per edge, pandas- or cuDF-backed (see :func:`bfs`).
    sources : list, array, Series, or a Dask Series / one-column frame
        Start vertex ids, each traversed on its own (a Dask collection is computed once).
    directed, depth_limit, src, dst, partitions
        As in :func:`bfs`.
    targets : list, array or Series of ids, optional
        One row per source and target (null distance where unreached or not in the graph).
    parents : bool, default False
        Add a ``parent`` column.
    replicas : int or None
        See :meth:`gpipe.Graph.from_edges`.

    Returns
    -------
    dask.dataframe.DataFrame
        Lazy, one partition per batch of sources: ``source``, ``vertex``, ``distance``
        (float64, as :func:`bfs`) and ``parent`` when asked for (see :meth:`gpipe.Graph.bfs_each`).

    Raises
    ------
    InputError
        As :func:`bfs`; a source given twice.

    Examples
    --------
    >>> import pandas as pd, gpipe
    >>> edges = pd.DataFrame({"src": [10, 20, 30], "dst": [20, 30, 40]})
    >>> gpipe.bfs_each(edges, [20, 10], targets=[40]).compute()["distance"].tolist()
    [2.0, 3.0]
    """
    validate.depth_limit(depth_limit)  # before the build, which may take long
    graph = Graph.from_edges(edges, directed=directed, src=src, dst=dst, weight=False,
                             partitions=partitions, replicas=replicas)
    return graph.bfs_each(sources, depth_limit=depth_limit, targets=targets, parents=parents)


def sssp_each(edges, sources, *, directed=True, max_distance=None, targets=None, parents=False,
              src=None, dst=None, weight=None, partitions=None, replicas=None, weight_dtype=None):
    """Shortest paths by weight from each of ``sources`` on its own, over an edge list.

    Parameters
    ----------
    edges : dask.dataframe.DataFrame
        One row per edge with finite numbers in ``weight``.
    sources, targets, parents, replicas
        As in :func:`bfs_each`.
    directed, src, dst, weight, partitions, weight_dtype
        As in :func:`sssp`.
    max_distance : float or None
        Dijkstra's cutoff per source (see :meth:`gpipe.Graph.sssp_each`).

    Returns
    -------
    dask.dataframe.DataFrame
        ``source``, ``vertex``, ``distance`` (float64) and ``parent`` when asked for (see
        :meth:`gpipe.Graph.sssp_each`).

    Raises
    ------
    InputError
        As :func:`sssp`; a source given twice.
    NegativeCycleError
        When computed: a negative cycle is reachable from a source.

    Examples
    --------
    >>> import pandas as pd, gpipe
    >>> edges = pd.DataFrame({"src": [0, 0, 1], "dst": [1, 2, 2], "weight": [1.0, 5.0, 1.5]})
    >>> gpipe.sssp_each(edges, [0, 1], targets=[2]).compute()["distance"].tolist()
    [2.5, 1.5]
    """
    src, dst, weight = _weighted_columns(edges, src, dst, weight, "sssp_each")
    validate.max_distance(max_distance)  # before the build, which may take long
    graph = Graph.from_edges(edges, directed=directed, src=src, dst=dst, weight=weight,
                             partitions=partitions, replicas=replicas, weight_dtype=weight_dtype)
    return graph.sssp_each(sources, max_distance=max_distance, targets=targets, parents=parents)


def _weighted_columns(edges, src, dst, weight, call):
    """``(src, dst, weight)`` of a weighted call: as given, else as :func:`gpipe.read_edges`
    was given them for ``edges``, else ``"src"``, ``"dst"``, ``"weight"``. ``weight=False``
    is an InputError: the call needs weights."""
    from gpipe.errors import InputError
    from gpipe.io import origin

    if weight is False:
        raise InputError(f"{call} needs a weight column: pass weight='<column>'")
    return origin.columns(edges, src, dst, weight, default_weight="weight")
