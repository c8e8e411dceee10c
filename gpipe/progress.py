"""The public name of :mod:`gpipe.watch.progress`: what users import as ``gpipe.progress``.

README.md tells users to call ``gpipe.progress.follow(client, callback)`` and
``gpipe.progress.bar()``; the ``gpipe.progress`` logger keeps its name. The module itself lives
with what a user watches, in ``gpipe/watch/progress.py``.
"""

from gpipe.watch.progress import (add_listener, bar, current_query, describe, DONE_DELAY_S,
                                  ending_on_error, EVERY_S, follow, log, query, remove_listener,
                                  Reporter, set_query, TOPIC)

__all__ = ["add_listener", "bar", "current_query", "describe", "DONE_DELAY_S", "ending_on_error",
           "EVERY_S", "follow", "log", "query", "remove_listener", "Reporter", "set_query", "TOPIC"]
