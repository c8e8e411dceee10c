"""The engine: BFS and SSSP over built partitions, on one owner or several, and where it runs.

One owner and the drivers: :mod:`~gpipe.engine.traverse`, :mod:`~gpipe.engine.outcome` (what
every traversal does at its end), :mod:`~gpipe.engine.result` (a traversal's rows),
:mod:`~gpipe.engine.sources` (a query's sources as global ids), :mod:`~gpipe.engine.partition`
(an owner's CSR: what the build makes and the engine walks). Several owners and their
transports: :mod:`gpipe.engine.owners`. The kernels: :mod:`~gpipe.engine.backend` (the one
place that picks CPU or GPU), ``strings_cpu``/``strings_gpu`` (string vertex ids) and
:mod:`gpipe.engine.compute`. Where work runs: :mod:`~gpipe.engine.execution`,
:mod:`~gpipe.engine.direct`, :mod:`~gpipe.engine.tasks`, :mod:`~gpipe.engine.computed` and
:mod:`~gpipe.engine.in_memory` (Dask collections over frames that exist already),
:mod:`~gpipe.engine.threads`, :mod:`~gpipe.engine.interrupts` (Ctrl-C).

Below it lies only :mod:`gpipe.watch`, which it reports to.
"""
