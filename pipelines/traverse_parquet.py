"""Pipeline: Parquet edge list -> BFS or SSSP -> Parquet result, written atomically.

Meant to run unattended (cron, Airflow, a batch scheduler)::

    python -m pipelines.traverse_parquet --config conf/pipelines/bfs.yaml
    python pipelines/traverse_parquet.py --config conf/pipelines/bfs.yaml
    gpipe run conf/pipelines/bfs.yaml

A thin job over gpipe's public API: :mod:`gpipe.pipeline` loads the YAML file (its docstring
and ``conf/pipelines/*.yaml`` list every key), connects to the cluster it names, reads the
edges, builds the graph, traverses, writes the result atomically and logs each step's time.

Exit status: 0 on success; 2 with a one-line message on stderr when the configuration or
the data is unusable (:class:`gpipe.InputError`); 1 with a one-line message for other gpipe
errors (a negative cycle) and for memory running out; 130 for Ctrl-C.
"""

from __future__ import annotations

import argparse
import sys

from gpipe import pipeline


def main(argv=None):
    """Command line: ``traverse_parquet --config FILE``; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m pipelines.traverse_parquet",
        description="Run a BFS or SSSP over a Parquet edge list and write the result atomically.",
    )
    parser.add_argument("--config", required=True, help="pipeline YAML file (see conf/pipelines/)")
    args = parser.parse_args(argv)
    pipeline.configure_logging()
    return pipeline.run_file(args.config)


if __name__ == "__main__":
    sys.exit(main())
