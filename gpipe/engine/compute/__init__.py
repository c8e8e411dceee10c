"""Traversal kernels: `cpu` (Numba) and `gpu` (CUDA C++ in kernels/*.cu, loaded by CuPy).

Batch kernels (issue 16: per-source queries, ``Graph.bfs_each`` / ``Graph.sssp_each``)
----------------------------------------------------------------------------------------
Both modules offer the same names with the same promises; the driver (gpipe/each.py) never
asks which one it holds. Arrays are of the backend's array module (NumPy or CuPy). All run on
one owner's CSR (offset 0, ``indices`` global = local ids, int32 or int64), ``n`` vertices.

``BFS_BATCH_WIDTH`` : int
    The most sources one call of ``bfs_batch`` serves (CPU: 64, one uint64 word of bits per
    vertex; the GPU may take more). The driver cuts the sources into batches of this width
    (or a multiple it loops over), one Dask task per batch.

``bfs_batch(indptr, indices, sources, depth_limit, *, symmetric, in_indptr=None, in_indices=None) -> dist``
    ``sources``: int64[k], k <= BFS_BATCH_WIDTH distinct local ids. ``depth_limit``: int, -1 =
    none. Returns ``dist`` int32[k, n] (C order): ``dist[i, v]`` = hops from ``sources[i]`` to
    ``v``, -1 where unreached (or beyond ``depth_limit``). Bit-parallel multi-source BFS
    (MS-BFS, Then et al., VLDB 2015): per vertex, bit sets over the batch's sources (seen, this
    level, next level); one scan of an edge serves every source whose bit is set.
    Direction-optimizing (Beamer et al., SC 2012): top-down over the vertices whose frontier
    set is non-empty while they have few out-edges, bottom-up over the in-edges (every vertex
    whose seen set is not full ORs its in-neighbours' frontier sets) when they have many. The
    in-edges are the CSR itself when ``symmetric`` (undirected, one owner), else
    ``in_indptr``/``in_indices`` when given; without either, top-down only.

``bfs_batch_parents(indptr, indices, dist, sources) -> parent``
    ``dist`` as returned by ``bfs_batch`` for ``sources``. Returns int64[k, n]: for each reached
    non-source ``v``, some ``u`` with an edge ``u -> v`` and ``dist[i, u] == dist[i, v] - 1``
    (which ``u`` is not fixed); -1 for sources and unreached vertices. One scan of the edges
    serves all k sources.

``sssp_batch(indptr, indices, weights, sources, *, symmetric, negative_weights=False, max_distance=None) -> (dist, parent)``
    ``weights`` float64[nnz] or float32[nnz] (distances float64 either way); ``sources`` int64[k] distinct local ids (any k: the driver sends
    BFS_BATCH_WIDTH per call). Returns ``dist`` float64[k, n] (+inf unreached) and ``parent``
    int64[k, n] (-1 for sources and unreached), each row a shortest-path tree from
    ``sources[i]``: ``dist[i, parent] + w(parent -> v) == dist[i, v]`` for an existing edge.
    ``max_distance`` (float or None): Dijkstra's cutoff, whatever the weights' signs: a
    candidate distance above it is never accepted, so farther vertices are unreached (+inf,
    -1), every reached vertex's parent is reached, and the traversal may stop once nothing
    nearer is left; with negative weights only a negative cycle this bounded search reaches
    is raised. ``negative_weights=False`` promises
    every weight is >= 0 (CPU: delta-stepping once per source; how a batch shares the work is
    each backend's choice). ``negative_weights=True``: frontier Bellman-Ford per source; a negative
    cycle reachable from ``sources[i]`` raises :class:`gpipe.errors.NegativeCycleError` whose
    ``source_index`` attribute is ``i`` (the driver names the source by its input id).
    Negative self-loops are not in the CSR: the driver checks ``Partition.negative_loops``.
"""
