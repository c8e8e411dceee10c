"""``python -m gpipe``: the same as the ``gpipe`` command."""

from gpipe.tools.cli import command

if __name__ == "__main__":  # spawned Dask workers import this module too; they must not rerun it
    command()
