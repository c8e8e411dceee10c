"""Running out of memory says where (issue 22, item 5): device or host, the step, the
partition and worker, and the bytes asked for."""

import numpy as np
import pytest

from gpipe.engine.partition import Partition
from gpipe.engine.tasks import run_task
from gpipe.errors import OutOfMemory, bytes_asked, memory_kind


def cupy_error(text):
    kind = type("OutOfMemoryError", (MemoryError,), {"__module__": "cupy.cuda.memory"})
    return kind(text)


# The two messages issue 22 saw on 4 x H100 (kron28), and the usual host ones.
RMM_DEVICE = ("std::bad_alloc: out_of_memory: CUDA error (failed to allocate 34359685776 bytes) "
              "at: /rmm/cuda_memory_resource.hpp")
CASES = [
    (MemoryError(RMM_DEVICE), False, "device", 34359685776),
    (MemoryError("std::bad_alloc"), True, "device", None),  # cuDF on a GPU worker: RMM's
    (MemoryError("std::bad_alloc"), False, "host", None),
    (cupy_error("Out of memory allocating 8,589,934,592 bytes (allocated so far: 0 bytes)."),
     False, "device", 8589934592),
    (MemoryError("Unable to allocate 8.00 GiB for an array with shape (1073741824,)"), False,
     "host", 8 * 2**30),
    (MemoryError("Allocation failed (probably too large)."), False, "host", None),
]


@pytest.mark.parametrize("error, on_gpu, kind, asked", CASES)
def test_kind_and_bytes_of_an_out_of_memory_error(error, on_gpu, kind, asked):
    assert memory_kind(error, on_gpu) == kind
    assert bytes_asked(error) == asked


def test_the_cause_of_a_wrapped_error_decides():
    try:
        try:
            raise MemoryError(RMM_DEVICE)
        except MemoryError as cause:
            raise RuntimeError("shuffle failed") from cause
    except RuntimeError as error:
        assert memory_kind(error) == "device"


def partition(backend):
    return Partition(backend, 1, 64, 64, 128, np.zeros(65, dtype=np.int64),
                     np.zeros(0, dtype=np.int32), None, None)


def test_a_task_out_of_memory_names_step_partition_kind_and_bytes(monkeypatch):
    def build_partition(part):
        raise MemoryError(RMM_DEVICE)

    with pytest.raises(OutOfMemory) as raised:
        run_task(build_partition, partition("gpu"))
    line = str(raised.value)
    assert line.startswith("gpipe-build on partition 1 (64 vertices, 0 stored edges")
    assert "ran out of device memory asking for 34,359,685,776 bytes (32.00 GiB)" in line
    assert line.endswith("(build it over more workers with partitions=, or lower Dask config "
                         "gpipe.memory-fraction so that the sizing leaves more room)")


def test_a_traversal_out_of_memory_says_what_to_do_there():
    def _bfs_one_owner(part):
        raise MemoryError(RMM_DEVICE)

    with pytest.raises(OutOfMemory, match=r"^gpipe-bfs on partition 1 .*\(free memory on the worker, or "
                                          r"build the graph over more workers with partitions=\)$"):
        run_task(_bfs_one_owner, partition("gpu"))


def test_a_gpu_shuffle_out_of_memory_is_device_memory():
    def _split(backend_name, frame):
        raise MemoryError("std::bad_alloc")

    with pytest.raises(OutOfMemory, match=r"^gpipe-shuffle ran out of device memory: std::bad_alloc"):
        run_task(_split, "gpu", None)
    with pytest.raises(OutOfMemory, match=r"^gpipe-shuffle ran out of host memory"):
        run_task(_split, "cpu", None)
