"""Edges in and results out: reading and validating input, writing results.

:mod:`~gpipe.io.read` (``gpipe.read_edges``) reads Parquet edge lists, checking every file's
footer at the door; :mod:`~gpipe.io.footers` says what those footers tell of a graph's size;
:mod:`~gpipe.io.origin` remembers where a frame's rows came from; :mod:`~gpipe.io.validate`
checks every input, so the layers below can trust it; :mod:`~gpipe.io.write`
(``gpipe.to_parquet``) writes results so that readers see the old output or the new one,
whole, and puts back an overwrite cut short, which a read of that path does first.
"""
