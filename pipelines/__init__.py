"""Ready-made gpipe jobs, driven by a YAML file under ``conf/pipelines/``.

Run one from a checkout with ``python -m pipelines.traverse_parquet --config FILE``; any
installed gpipe runs the same job as ``gpipe run FILE`` (:mod:`gpipe.pipeline`).
"""
