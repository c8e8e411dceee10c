"""What a user watches while a traversal runs: its progress, a progress bar, gpipe's dashboard page.

:mod:`~gpipe.watch.progress` turns the owners' levels into log records and Dask events
(``gpipe.progress`` is its public name), :mod:`~gpipe.watch.progress_bar` draws them where a
person waits, and :mod:`~gpipe.watch.dashboard` serves them on the Dask dashboard
(``dashboard.html``). The lowest layer: it imports no other layer of gpipe.
"""
