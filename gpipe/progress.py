"""The public name of :mod:`gpipe.watch.progress`: what users import as ``gpipe.progress``.

README.md tells users to call ``gpipe.progress.follow(client, callback)`` and
``gpipe.progress.bar()``; the ``gpipe.progress`` logger keeps its name. The module itself lives
with what a user watches, in ``gpipe/watch/progress.py``.
"""

from gpipe.watch.progress import *  # noqa: F401,F403 (its __all__: the public names)
from gpipe.watch.progress import __all__  # noqa: F401
