"""When a direction-optimizing BFS switches direction: the thresholds every BFS of gpipe uses.

Beamer's rule [1], as GAPBS states it, with one more guard of ours: a level goes from
top-down to bottom-up when the frontier's out-edges ``m_f`` exceed ``1/ALPHA`` of the edges
still unexplored (``m_f * ALPHA > m_u``) and, on the GPU kernels and the several-owner loops,
``m_f * GAMMA > n`` (a bottom-up level reads every unvisited vertex, too dear for a small
frontier of a large graph); it comes back top-down once the frontier shrinks and holds at
most ``n/BETA`` vertices (``n_f * BETA <= n``). ``ALPHA = 0`` keeps every level top-down;
``ALPHA = BETA = GAMMA = inf`` makes every level after the first bottom-up.

The one-owner kernels (:mod:`~gpipe.engine.compute.cpu`, :mod:`~gpipe.engine.compute.cpu_batch`,
:mod:`~gpipe.engine.compute.gpu_bfs`, :mod:`~gpipe.engine.compute.gpu_batch`) take them as
their defaults, and :class:`gpipe.engine.owners.bfs.Thresholds` (Dask config
``gpipe.bfs-direction``) as its own.

[1] S. Beamer, K. Asanović, D. Patterson, "Direction-Optimizing Breadth-First Search",
    SC 2012 (GAPBS: alpha = 15, beta = 18).
"""

ALPHA = 15.0
BETA = 18.0
GAMMA = 8.0
