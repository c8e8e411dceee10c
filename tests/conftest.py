"""Shared fixtures: the three execution paths every API test runs on, and the Dask clusters.

Paths (the ``engine`` fixture, parametrized):

- ``local``: no Dask client anywhere; gpipe runs its traversal in-process.
- ``cluster``: a 2-worker ``LocalCluster`` (processes, one thread each), shared by the whole
  session; its client is made current only for the tests that ask for it, so ``local`` tests
  never see it. Graphs are split over both workers (Dask config ``gpipe.partitions`` = 2),
  which runs the multi-owner path; left to itself, gpipe would put these small graphs on one.
- ``gpu``: no client, cuDF partitions (``to_backend("cudf")``); marked ``gpu``.

Markers: ``gpu`` tests are skipped unless CuPy sees a device and cuDF and dask_cudf import;
``multigpu`` tests are skipped unless there are at least two devices and dask_cuda imports.
``GPIPE_TEST_CUDA_DEVICES`` (default ``0,1``) names the devices of the two workers; ``0,0`` puts
both on one GPU, so a one-GPU machine runs the multi-worker CUDA path too.
"""

from __future__ import annotations

import functools
import os
import sys

import dask
import dask.dataframe as dd
import pandas as pd
import pytest

sys.path.insert(0, os.path.dirname(__file__))  # lets tests import the `reference` helpers
# The suite tests gpipe's own kernels: first queries wait for Numba rather than have SciPy
# answer while it compiles (tests/test_cpu_scipy.py turns that path on where it tests it).
# Set before any worker process starts, so the test clusters' workers inherit it.
os.environ.setdefault("GPIPE_FIRST_QUERIES", "numba")


# ---------------------------------------------------------------------------------------------
# Markers and skips.


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs one CUDA device with cuDF and dask_cudf")
    config.addinivalue_line("markers", "multigpu: needs two CUDA devices and dask_cuda")


@functools.cache
def gpu_count():
    """CUDA devices CuPy can see; 0 when CuPy is missing or no device works."""
    try:
        import cupy

        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:
        return 0


def cupy_or_skip():
    """CuPy, for a module of GPU kernel tests: the whole module is skipped where CuPy or a CUDA
    device is missing."""
    cupy = pytest.importorskip("cupy", exc_type=ImportError)
    if gpu_count() == 0:
        pytest.skip("no CUDA device", allow_module_level=True)
    return cupy


@functools.cache
def gpu_available():
    if gpu_count() < 1:
        return False
    try:
        import cudf  # noqa: F401
        import dask_cudf  # noqa: F401
    except Exception:
        return False
    return True


def multigpu_devices():
    """The CUDA device of each multi-GPU test worker, as ``GPIPE_TEST_CUDA_DEVICES`` says."""
    return [int(d) for d in os.environ.get("GPIPE_TEST_CUDA_DEVICES", "0,1").split(",")]


@functools.cache
def multigpu_available():
    if gpu_count() <= max(multigpu_devices()) or not gpu_available():
        return False
    try:
        import dask_cuda  # noqa: F401
    except Exception:
        return False
    return True


def pytest_collection_modifyitems(config, items):
    skip_gpu = pytest.mark.skip(reason="needs a CUDA device with cupy, cudf and dask_cudf")
    skip_multi = pytest.mark.skip(reason="needs 2 CUDA devices and dask_cuda")
    for item in items:
        if "multigpu" in item.keywords:
            if not multigpu_available():
                item.add_marker(skip_multi)
        elif "gpu" in item.keywords and not gpu_available():
            item.add_marker(skip_gpu)


@pytest.fixture(autouse=True)
def gpipe_config_restored():
    """gpipe's Dask configuration (``gpipe.*``) as each test found it: a command run in this
    process (``main([...])`` with a cluster file's ``dask:`` section) sets it for good, as a
    command's own process should. (Only gpipe's keys: the libraries imported during a test add
    their defaults to the rest.)"""
    import copy

    saved = copy.deepcopy(dask.config.config.get("gpipe"))
    yield
    if saved is None:
        dask.config.config.pop("gpipe", None)
    else:
        dask.config.config["gpipe"] = saved


# ---------------------------------------------------------------------------------------------
# Clusters.


@pytest.fixture(scope="session")
def dask_client2():
    """A 2-worker process LocalCluster and its Client, for the whole session.

    The client is not made the global default (``set_as_default=False``); tests that want it
    enter ``client.as_current()`` (the ``engine`` fixture does), which is what
    ``distributed.get_client()``, ``default_client()`` and ``dask.compute`` all consult.
    """
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=None, env={"NUMBA_NUM_THREADS": "1"})
    client = Client(cluster, set_as_default=False)
    client.wait_for_workers(2)
    yield client
    client.close()
    cluster.close()


@pytest.fixture(scope="session")
def dask_cuda_client2():
    """A 2-worker CUDA cluster and its Client, for the whole session.

    Distinct devices in :func:`multigpu_devices`: a LocalCUDACluster, one worker per GPU. One
    device named twice: two worker processes sharing that GPU.
    """
    from dask_cuda import LocalCUDACluster
    from distributed import Client, LocalCluster

    devices = multigpu_devices()
    if len(set(devices)) > 1:
        cluster = LocalCUDACluster(n_workers=len(devices), dashboard_address=None,
                                   CUDA_VISIBLE_DEVICES=",".join(map(str, devices)))
    else:
        # dask-cuda names workers by device, so it cannot put two on one; plain worker
        # processes pinned to that device run the same code path.
        cluster = LocalCluster(n_workers=len(devices), threads_per_worker=1, processes=True,
                               dashboard_address=None,
                               env={"CUDA_VISIBLE_DEVICES": str(devices[0])})
    client = Client(cluster, set_as_default=False)
    client.wait_for_workers(len(devices))
    yield client
    client.close()
    cluster.close()


@pytest.fixture
def multigpu(dask_cuda_client2):
    """The 2-GPU cluster's client, current for the duration of the test."""
    with dask_cuda_client2.as_current():
        yield dask_cuda_client2


# ---------------------------------------------------------------------------------------------
# Execution paths.


class Engine:
    """One execution path: makes input frames of its kind and reads results back.

    ``frame(pdf, npartitions)`` turns a pandas edge list into the Dask DataFrame the test
    passes to gpipe; ``compute(result)`` computes a gpipe result and asserts its partitions
    are of the input's frame type; ``pandas(frame)`` converts a computed frame to pandas.
    """

    def __init__(self, name, client=None):
        self.name = name
        self.client = client
        self.gpu = name in ("gpu", "multigpu")

    def __repr__(self):
        return f"Engine({self.name})"

    def frame(self, pdf, npartitions=3):
        ddf = dd.from_pandas(pdf, npartitions=npartitions, sort=False)
        if self.gpu:
            ddf = ddf.to_backend("cudf")
        return ddf

    @property
    def frame_type(self):
        if self.gpu:
            import cudf

            return cudf.DataFrame
        return pd.DataFrame

    def compute(self, result):
        """Computed result (pandas or cuDF, unconverted), checked for its frame type."""
        assert isinstance(result, dd.DataFrame), f"expected a Dask DataFrame, got {type(result)}"
        assert isinstance(result._meta, self.frame_type), (
            f"result meta is {type(result._meta)}, expected {self.frame_type}")
        computed = result.compute()
        assert isinstance(computed, self.frame_type), (
            f"result partitions are {type(computed)}, expected {self.frame_type}")
        return computed

    def pandas(self, computed):
        """pandas from pandas or cuDF; cuDF columns become nullable pandas dtypes, so integer
        columns with nulls stay exact instead of turning into float64."""
        if isinstance(computed, pd.DataFrame):
            return computed
        return computed.to_pandas(nullable=True)

    def run(self, result):
        """Compute a result and return it as pandas."""
        return self.pandas(self.compute(result))


def engine_params(*names):
    marks = {"gpu": [pytest.mark.gpu], "multigpu": [pytest.mark.multigpu]}
    return [pytest.param(name, marks=marks.get(name, []), id=name) for name in names]


ENGINES = ("local", "cluster", "gpu")


def _engine(request):
    """The Engine of path ``request.param``; the cluster's is current (2 partitions) meanwhile."""
    name = request.param
    if name == "cluster":
        client = request.getfixturevalue("dask_client2")
        with client.as_current(), dask.config.set({"gpipe.partitions": 2}):
            yield Engine(name, client)
    else:
        yield Engine(name)


@pytest.fixture(params=engine_params(*ENGINES))
def engine(request):
    """Each API test runs once per path: no client, 2-worker LocalCluster, GPU (cuDF)."""
    yield from _engine(request)


@pytest.fixture(params=engine_params("local", "cluster"))
def cpu_engine(request):
    """The two CPU paths only (no client, 2-worker LocalCluster)."""
    yield from _engine(request)


@pytest.fixture
def multigpu_engine(multigpu):
    """cuDF partitions on the 2-GPU LocalCUDACluster, graphs split over both workers."""
    with dask.config.set({"gpipe.partitions": 2}):
        yield Engine("multigpu", multigpu)
