"""Loading and launching the CUDA C++ in ``kernels/*.cu`` (one small loader).

Each source is compiled ahead of time (:mod:`gpipe.engine.compute.cuda_build`) for the architectures
gpipe ships: a cubin per major architecture and one PTX, beside a manifest of the kernels'
lowered names. :func:`function` loads the cubin built for this device's major architecture and
the highest minor it runs (or the PTX, which the driver compiles once for a newer GPU), so a
first call compiles nothing. Only where no shipped binary serves this device, or the binaries
are stale against their sources (a source checkout with an edited ``.cu``), is the source
compiled at first use by NVRTC through :class:`cupy.RawModule`, as it was before binaries were
shipped. Every kernel is a template on the index type of ``indices`` (``int`` and ``long
long``), and every kernel that reads weights on their type too (``double`` and ``float``):
dtype choices are template parameters, never pasted into the source. Only GPU code
paths import this module.
"""

from __future__ import annotations

import functools
import logging

import cupy

from gpipe.engine.compute import cuda_sources
from gpipe.engine.compute.cuda_sources import COMPILE_OPTIONS, source_dir, source_text  # noqa: F401

BLOCK = 256  # threads per block (kBlock in util.cu); a multiple of 32 (the kernels' warp-wide ballots need it)
BLOCKS_PER_SM = 16  # grid-stride cap: a few waves of resident blocks, then each thread loops

# C++ index type of each dtype `indices` may have (ARCHITECTURE.md: int32, int64 if n >= 2**31).
INDEX_TYPES = {cupy.dtype(name): ctype for name, ctype in cuda_sources.INDEX_TYPES.items()}
# C++ weight type of each dtype `weights` may have (float64, float32: gpipe.partitioning.weights).
WEIGHT_TYPES = {cupy.dtype(name): ctype for name, ctype in cuda_sources.WEIGHT_TYPES.items()}

logger = logging.getLogger("gpipe.compute")


def function(source: str, name: str, indices: cupy.ndarray) -> cupy.cuda.function.Function:
    """The kernel ``name<index type of indices>`` of ``source``, loaded for the current device.

    Launch it as ``kernel(grid, block, args)``; a cooperative kernel of
    :data:`gpipe.engine.compute.cuda_sources.MODULES` with ``enable_cooperative_groups=True``.
    """
    return typed_function(source, name, INDEX_TYPES[indices.dtype])


def weighted_function(source: str, name: str, indices: cupy.ndarray,
                      weights: cupy.ndarray) -> cupy.cuda.function.Function:
    """The kernel ``name<index type of indices, weight type of weights>`` of ``source``, loaded
    for the current device: the kernels that read weights, instantiated for both widths."""
    return typed_function(source, name, f"{INDEX_TYPES[indices.dtype]}, {WEIGHT_TYPES[weights.dtype]}")


def typed_function(source: str, name: str, arguments: str) -> cupy.cuda.function.Function:
    """The kernel ``name<arguments>`` of ``source``, loaded for the current device.

    ``arguments`` is the text between the angle brackets, spelled as
    :func:`gpipe.engine.compute.cuda_sources.instantiations` lists it (``"long long, int"``): the
    instantiations of a module with its own template arguments (``kernels/util.cu``).
    """
    device_id = cupy.cuda.runtime.getDevice()
    return loaded_module(source, device_id)(f"{name}<{arguments}>")


@functools.lru_cache(maxsize=None)
def loaded_module(source: str, device_id: int):
    """A lookup ``C++ name -> Function`` of ``source`` on device ``device_id``."""
    major, minor = device_capability(device_id)
    shipped = cuda_sources.shipped_binary(source, major, minor, binary_manifest())
    if shipped is not None:
        path, names = shipped
        module = cupy.cuda.function.Module()
        module.load_file(str(path))
        return lambda name: module.get_function(names[name])
    logger.info("compiling %s for sm_%d%d at first use: no shipped binary serves it", source, major, minor)
    jit = cupy.RawModule(code=source_text(source), options=COMPILE_OPTIONS,
                         name_expressions=cuda_sources.instantiations(source),
                         enable_cooperative_groups=cuda_sources.MODULES[source].cooperative)
    jit.compile()
    return lambda name: jit.get_function(name).kernel


def device_capability(device_id: int) -> tuple[int, int]:
    capability = int(cupy.cuda.Device(device_id).compute_capability)
    return capability // 10, capability % 10


@functools.lru_cache(maxsize=None)
def binary_manifest():
    return cuda_sources.read_manifest()


def warmup() -> list[str]:
    """Load every kernel of every source on the current device (compiling those no shipped
    binary serves); returns the sources loaded. ``gpipe warmup`` calls it where a GPU is usable."""
    device_id = cupy.cuda.runtime.getDevice()
    for source in cuda_sources.MODULES:
        lookup = loaded_module(source, device_id)
        for name in cuda_sources.instantiations(source):
            lookup(name)
    return list(cuda_sources.MODULES)


@functools.lru_cache(maxsize=None)
def _max_blocks(device_id: int) -> int:
    return BLOCKS_PER_SM * cupy.cuda.Device(device_id).attributes["MultiProcessorCount"]


def grid(n_items_bound: int) -> tuple[int]:
    """A grid-stride launch shape for up to ``n_items_bound`` items."""
    blocks = -(-n_items_bound // BLOCK)
    return (max(1, min(blocks, _max_blocks(cupy.cuda.runtime.getDevice()))),)


def empty(dtype=cupy.int64) -> cupy.ndarray:
    return cupy.empty(0, dtype=dtype)
