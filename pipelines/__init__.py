"""Ready-made gpipe jobs, driven by a YAML file under ``conf/pipelines/``.

Run one from a checkout with ``python -m pipelines.traverse_parquet --config FILE``, or from
any installed gpipe with ``gpipe run FILE`` (installed wheels carry this package as
``gpipe.pipelines``).
"""
