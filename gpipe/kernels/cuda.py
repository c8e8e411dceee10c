"""Finding, compiling and launching the CUDA C++ in ``kernels/*.cu`` (one small loader).

The ``.cu`` files are real CUDA sources, found by :func:`source_dir`, compiled once per device
by NVRTC through :class:`cupy.RawModule` with ``-std=c++17``, and instantiated for both index
types of ``indices`` (``int`` and ``long long``) through ``name_expressions``: dtype choices are
template parameters, never pasted into the source. Only GPU code paths import this module.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import cupy

import gpipe

COMPILE_OPTIONS = ("-std=c++17",)
BLOCK = 256  # threads per block; a multiple of 32 (the kernels' warp-wide ballots need it)
BLOCKS_PER_SM = 16  # grid-stride cap: a few waves of resident blocks, then each thread loops

# C++ index type of each dtype `indices` may have (ARCHITECTURE.md: int32, int64 if n >= 2**31).
INDEX_TYPES = {cupy.dtype(cupy.int32): "int", cupy.dtype(cupy.int64): "long long"}


def source_dir(source: str = "bfs.cu") -> Path:
    """The folder that holds the CUDA source ``source``.

    Returns
    -------
    pathlib.Path
        ``<package>/_cuda`` in an installed wheel (the build force-includes ``kernels`` there),
        else ``<repo root>/kernels`` in a source checkout or an editable install.

    Raises
    ------
    FileNotFoundError
        Neither folder holds the source: the installation is incomplete.
    """
    package = Path(gpipe.__file__).resolve().parent
    candidates = (package / "_cuda", package.parent / "kernels")
    for folder in candidates:
        if (folder / source).is_file():
            return folder
    raise FileNotFoundError(
        f"gpipe's CUDA source {source} is in none of: "
        + ", ".join(str(c) for c in candidates)
        + "; reinstall gpipe, or run from a source checkout"
    )


_LOCAL_INCLUDE = re.compile(r'^#include "([^"]+)"$', re.MULTILINE)


def source_text(source: str) -> str:
    """The text of ``source`` with its local ``#include "x.cuh"`` lines replaced by the headers.

    Headers that include headers are inlined in turn, depth first; each header goes in once,
    where it is first included (later ``#include`` lines of it become empty), as ``#pragma once``
    would have it. Inlined rather than passed as an include path, so that CuPy's compile cache,
    which keys on the source text, sees a change of a header too.
    """
    folder = source_dir(source)
    inlined = set()

    def include(match: re.Match) -> str:
        header = match.group(1)
        if header in inlined:
            return ""
        inlined.add(header)
        return _LOCAL_INCLUDE.sub(include, (folder / header).read_text())

    return _LOCAL_INCLUDE.sub(include, (folder / source).read_text())


@functools.lru_cache(maxsize=None)
def _module(source: str, entry_points: tuple, device_id: int) -> cupy.RawModule:
    # device_id is only the cache key: a module is compiled and loaded for the current device.
    del device_id
    names = [f"{kernel}<{ctype}>" for kernel in entry_points for ctype in INDEX_TYPES.values()]
    code = source_text(source)
    module = cupy.RawModule(code=code, options=COMPILE_OPTIONS, name_expressions=names)
    module.compile()
    return module


def function(source: str, entry_points: tuple, name: str, indices: cupy.ndarray):
    """The entry point ``name<index type of indices>`` of ``source``, compiled for this device.

    ``entry_points`` lists every templated kernel of ``source``, so that one compilation
    instantiates them all.
    """
    device_id = cupy.cuda.runtime.getDevice()
    return _module(source, entry_points, device_id).get_function(f"{name}<{INDEX_TYPES[indices.dtype]}>")


@functools.lru_cache(maxsize=None)
def _max_blocks(device_id: int) -> int:
    return BLOCKS_PER_SM * cupy.cuda.Device(device_id).attributes["MultiProcessorCount"]


def grid(n_items_bound: int) -> tuple[int]:
    """A grid-stride launch shape for up to ``n_items_bound`` items."""
    blocks = -(-n_items_bound // BLOCK)
    return (max(1, min(blocks, _max_blocks(cupy.cuda.runtime.getDevice()))),)


def edge_end(indptr: cupy.ndarray, frontier: cupy.ndarray) -> cupy.ndarray:
    """Inclusive prefix sum of the frontier's out-degrees (int64[k])."""
    return cupy.cumsum(indptr[frontier + 1] - indptr[frontier])


def empty(dtype=cupy.int64) -> cupy.ndarray:
    return cupy.empty(0, dtype=dtype)
