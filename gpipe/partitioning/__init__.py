"""Building partitions: from an edge DataFrame to one CSR per owner, on the owner's worker.

:mod:`~gpipe.partitioning.build` surveys the edges, numbers the vertices and shuffles each
edge to the owner of its source, which builds its :class:`~gpipe.engine.partition.Partition`;
:mod:`~gpipe.partitioning.sizing` says how many owners a graph gets, and refuses one that no
workers hold (``GraphTooLarge``). It reads its input through the io layer (``gpipe/io/``) and
runs on the engine (``gpipe/engine/``), both below it.
"""
