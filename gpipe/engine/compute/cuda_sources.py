"""What gpipe's CUDA kernels are made of: the sources, their entry points, how they compile.

One table (:data:`MODULES`) lists every ``kernels/*.cu`` file with the templated kernels it
defines; the loader (:mod:`gpipe.engine.compute.cuda`) and the ahead-of-time build
(:mod:`gpipe.engine.compute.cuda_build`) both read it, so a kernel added to a source and to this table
is compiled, shipped and loaded with no other change. This module imports neither CuPy nor
NVRTC: it is read on machines without a GPU too (the build, and the CPU test that checks the
shipped binaries against their sources).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2]  # the gpipe package's folder: the sources' anchor


# -std=c++17 for every source; the JIT fallback and the ahead-of-time build pass the same.
COMPILE_OPTIONS = ("-std=c++17",)

# C++ index type of each dtype `indices` may have (ARCHITECTURE.md: int32, int64 if n >= 2**31).
INDEX_TYPES = {"int32": "int", "int64": "long long"}
# C++ type of each dtype a graph's `weights` may have (gpipe.partitioning.weights): the kernels
# that read weights are templates on it too, instantiated ``<Index, Weight>`` for both.
WEIGHT_TYPES = {"float64": "double", "float32": "float"}

BINARY_DIR = "bin"  # <source folder>/bin: the ahead-of-time binaries and their manifest
MANIFEST = "manifest.json"


# The C++ types of one element width (the copies of kernels/util.cu move bits, whatever the dtype).
WIDTH_TYPES = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long long"}
# The C++ type of each NumPy integer dtype (kernels/util.cu converts between them).
INTEGER_TYPES = {"int8": "signed char", "int16": "short", "int32": "int", "int64": "long long",
                 "uint8": "unsigned char", "uint16": "unsigned short", "uint32": "unsigned int",
                 "uint64": "unsigned long long"}


@dataclass(frozen=True)
class Module:
    """One CUDA source: its templated entry points, each instantiated for every index type
    unless ``template_arguments`` names its own (the kernels that read weights: every index
    type with every weight type, :data:`WEIGHT_TYPES`).

    ``template_arguments``: ``((kernel, (arguments, ...)), ...)``, each ``arguments`` the text
    between the angle brackets of one instantiation (``"double"``, ``"long long, int"``).
    """

    entry_points: tuple
    cooperative: bool = False  # launched with cuLaunchCooperativeKernel (grid-wide syncs)
    template_arguments: tuple = ()

    def arguments(self, kernel: str) -> tuple:
        """The template arguments ``kernel`` is instantiated for."""
        return dict(self.template_arguments).get(kernel, tuple(INDEX_TYPES.values()))


def _by_index(types) -> tuple:
    """``"T, I"`` for every T of ``types`` and every index type I."""
    return tuple(f"{t}, {i}" for t in types for i in INDEX_TYPES.values())


def _weighted(kernels) -> tuple:
    """``(kernel, ("I, W", ...))`` for each of ``kernels``: every index type with every weight type."""
    arguments = tuple(f"{i}, {w}" for i in INDEX_TYPES.values() for w in WEIGHT_TYPES.values())
    return tuple((kernel, arguments) for kernel in kernels)


_WIDTHS = tuple(WIDTH_TYPES.values())
_WIDE = INTEGER_TYPES["int64"]


MODULES = {
    "bfs.cu": Module(("bfs_expand_edges",)),
    "bfs_batch.cu": Module(("bfs_batch_seed", "bfs_batch_settle", "bfs_batch_top_down",
                            "bfs_batch_bottom_up", "bfs_batch_dist", "bfs_batch_parents_pull",
                            "bfs_batch_parents_push")),
    "bfs_owners.cu": Module(("bfs_owner_edge_end", "bfs_owner_top_down", "bfs_owner_claim",
                             "bfs_owner_bottom_up", "frontier_to_bitmap", "bitmap_to_frontier",
                             "bfs_owner_level_begin", "bfs_owner_mark", "bfs_owner_mark_rows",
                             "bfs_owner_resolve", "bfs_owner_pairs",
                             "bfs_owner_claim_pairs")),
    "bfs_persistent.cu": Module(("bfs_persistent",), cooperative=True),
    "csr.cu": Module(("csr_count", "csr_scatter"), template_arguments=_weighted(("csr_scatter",))),
    "sssp.cu": Module(("sssp_relax_edges", "sssp_settle_parents"),
                      template_arguments=_weighted(("sssp_relax_edges", "sssp_settle_parents"))),
    "sssp_batch.cu": Module(("sssp_batch_prepare", "sssp_batch_relax", "sssp_batch_split",
                             "sssp_batch_check", "sssp_batch_repair_pull", "sssp_batch_repair_push",
                             "sssp_batch_transpose", "sssp_batch_prepare_shared",
                             "sssp_batch_relax_shared", "sssp_batch_split_shared"),
                            template_arguments=_weighted(("sssp_batch_relax", "sssp_batch_check",
                                                          "sssp_batch_repair_pull", "sssp_batch_repair_push",
                                                          "sssp_batch_relax_shared"))),
    "sssp_nearfar.cu": Module(("sssp_near_far", "sssp_check_parents", "sssp_repair_scan",
                               "sssp_repair_rows", "sssp_settle_tree"), cooperative=True,
                              template_arguments=_weighted(("sssp_near_far", "sssp_check_parents",
                                                            "sssp_repair_rows", "sssp_settle_tree"))),
    "sssp_owners.cu": Module(("sssp_owner_frontier", "sssp_owner_relax_edges",
                              "sssp_owner_settle_edges", "sssp_owner_merge_lower",
                              "sssp_owner_merge_settle", "sssp_owner_split", "sssp_owner_pack"),
                             template_arguments=_weighted(("sssp_owner_relax_edges", "sssp_owner_settle_edges"))),
    "util.cu": Module(
        ("fill", "iota", "take", "scatter_value", "convert", "zero_test", "pack_bits_little",
         "nonzero_count", "nonzero_write", "run_starts"),
        template_arguments=(
            ("fill", _WIDTHS),
            ("iota", tuple(INDEX_TYPES.values())),
            ("take", _by_index(_WIDTHS)),
            ("scatter_value", _by_index(_WIDTHS)),
            # every integer type to and from int64 (other pairs go through int64), int64 to itself
            ("convert", tuple(f"{a}, {b}" for t in INTEGER_TYPES.values()
                              for a, b in ((t, _WIDE), (_WIDE, t)) if t != _WIDE) + (f"{_WIDE}, {_WIDE}",)),
            ("zero_test", ("unsigned char", "int", "long long", "double")),
            ("pack_bits_little", ("unsigned char",)),
            ("nonzero_count", ("unsigned char",)),
            ("nonzero_write", ("unsigned char",)),
            ("run_starts", _WIDTHS),
        ),
    ),
}


def instantiations(source: str) -> list[str]:
    """The C++ names ``kernel<template arguments>`` compiled from ``source``, every entry point
    of it (:meth:`Module.arguments`: the index types unless the module names others). The one
    place that spells them: the build names them to NVRTC, the loader looks them up."""
    module = MODULES[source]
    return [f"{kernel}<{arguments}>" for kernel in module.entry_points
            for arguments in module.arguments(kernel)]


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
    candidates = (PACKAGE / "_cuda", PACKAGE.parent / "kernels")
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
    would have it. Inlined rather than passed as an include path, so that what is compiled,
    hashed for the shipped binaries' manifest and keyed in CuPy's compile cache is one text
    that changes whenever a header does.
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


def fingerprint(source: str) -> str:
    """SHA-256 of what compiling ``source`` depends on here: its text with the headers inlined,
    the options and the instantiated names. A shipped binary is stale when this differs from
    the fingerprint recorded beside it."""
    digest = hashlib.sha256()
    for part in (source_text(source), " ".join(COMPILE_OPTIONS), " ".join(instantiations(source))):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def binary_dir() -> Path:
    """The folder of the ahead-of-time binaries (it may not exist: then nothing was shipped)."""
    return source_dir() / BINARY_DIR


def read_manifest(folder: Path | None = None) -> dict | None:
    """The manifest of the shipped binaries, or None where there is none.

    ``{"nvrtc": "13.0", "targets": [...], "sources": {source: {"fingerprint": ..., "names":
    {"kernel<int>": lowered name}, "binaries": {target: file name}}}}``.
    """
    path = (folder or binary_dir()) / MANIFEST
    if not path.is_file():
        return None
    return json.loads(path.read_text())


def stale_sources(manifest: dict | None = None) -> list[str]:
    """The sources whose shipped binaries are missing or were built from another text."""
    manifest = read_manifest() if manifest is None else manifest
    shipped = (manifest or {}).get("sources", {})
    return [s for s in MODULES if shipped.get(s, {}).get("fingerprint") != fingerprint(s)]


def shipped_binary(source: str, major: int, minor: int, manifest: dict | None):
    """``(path, lowered names)`` of the shipped binary of ``source`` that an ``sm_<major><minor>``
    device runs best, or None.

    A cubin runs on its own major architecture at the same or a higher minor: the one of the
    highest such minor wins. Else a PTX of an architecture at most the device's, which the
    driver compiles (and caches) for it. None where neither exists, or where the binaries are
    stale (built from another text of the source than the one here).
    """
    entry = (manifest or {}).get("sources", {}).get(source)
    if entry is None or entry["fingerprint"] != fingerprint(source):
        return None
    best = None
    for target, file_name in entry["binaries"].items():
        kind, version = target.split("_")
        target_major, target_minor = int(version[:-1]), int(version[-1])
        if kind == "sm" and target_major == major and target_minor <= minor:
            rank = (1, target_minor)
        elif kind == "compute" and (target_major, target_minor) <= (major, minor):
            rank = (0, 10 * target_major + target_minor)
        else:
            continue
        if best is None or rank > best[0]:
            best = (rank, file_name)
    return None if best is None else (binary_dir() / best[1], entry["names"])
