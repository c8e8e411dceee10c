"""gpipe's tools, above the library (which never imports them): the command line (``cli``),
``gpipe bench`` (``bench`` and its ``bench_*`` parts), ``gpipe demo``, ``gpipe warmup``, the
first-contact check of a fresh machine, and ``verify``, which checks a traversal's result
against the graph."""
