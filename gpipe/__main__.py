"""``python -m gpipe``: the same as the ``gpipe`` command."""

import sys

from gpipe.cli import main

if __name__ == "__main__":  # spawned Dask workers import this module too; they must not rerun it
    sys.exit(main())
