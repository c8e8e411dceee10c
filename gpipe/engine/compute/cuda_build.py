"""Compile ``kernels/*.cu`` ahead of time, for every GPU architecture gpipe ships, with NVRTC.

Run it after changing a CUDA source (a CPU test fails while a shipped binary is stale)::

    pip install -e '.[kernels]'          # NVRTC 13.0 and its Python binding; no GPU needed
    python -m gpipe.engine.compute.cuda_build   # writes kernels/bin/*.cubin, *.ptx and manifest.json

For each source of :data:`gpipe.engine.compute.cuda_sources.MODULES` it writes one cubin per real
architecture of :data:`CUBIN_ARCHS` and one PTX of :data:`PTX_ARCH` (the driver compiles that
for GPUs newer than every cubin), and records in ``manifest.json`` each kernel's lowered
(mangled) name and the source's fingerprint. The loader (:mod:`gpipe.engine.compute.cuda`) picks the
binary for the device; a device none of them serves falls back to compiling at first use.

NVRTC 13.0 is the oldest of CUDA 13, so the binaries load on every CUDA 13 driver (580+):
a newer NVRTC would write PTX that older drivers refuse.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from gpipe.engine.compute import cuda_sources

# A cubin runs on its own major architecture at the same or a higher minor (sm_80 on sm_86
# and sm_89, sm_100 on sm_103, sm_120 on sm_121): one per major generation gpipe supports.
CUBIN_ARCHS = ("sm_75", "sm_80", "sm_90", "sm_100", "sm_120")
PTX_ARCH = "compute_75"  # the driver compiles it, once, for any newer GPU


def _check(result, program=None, what=""):
    from cuda.bindings import nvrtc

    status, *values = result if isinstance(result, tuple) else (result,)
    if status != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        log = ""
        if program is not None:
            _, size = nvrtc.nvrtcGetProgramLogSize(program)
            buffer = b" " * size
            nvrtc.nvrtcGetProgramLog(program, buffer)
            log = buffer.decode(errors="replace")
        raise RuntimeError(f"NVRTC failed {what}: {status.name}\n{log}")
    return values[0] if len(values) == 1 else values


def cuda_include_dirs() -> list[str]:
    """Folders of CUDA's own headers (``<cooperative_groups.h>`` and the libcu++ it includes):
    the CUDA 13 runtime and CCCL wheels' (the ``kernels`` extra brings them), else a toolkit's
    (``CUDA_HOME``, /usr/local/cuda)."""
    import importlib.util

    roots = []
    spec = importlib.util.find_spec("nvidia")
    roots += [Path(root) / "cu13" / "include" for root in (spec.submodule_search_locations if spec else [])]
    roots.append(Path(os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda") / "include")
    for root in roots:
        if (root / "cooperative_groups.h").is_file():
            return [str(root)] + [str(root / "cccl")] * (root / "cccl").is_dir()
    return []


def compile_source(source: str, arch: str) -> tuple[bytes, dict]:
    """``source`` compiled for ``arch`` (``sm_XY``: a cubin; ``compute_XY``: PTX), and the
    lowered name of each instantiated kernel."""
    from cuda.bindings import nvrtc

    text = cuda_sources.source_text(source).encode()
    program = _check(nvrtc.nvrtcCreateProgram(text, source.encode(), 0, [], []), what="creating")
    try:
        names = cuda_sources.instantiations(source)
        for name in names:
            _check(nvrtc.nvrtcAddNameExpression(program, name.encode()), program, f"naming {name}")
        options = [*cuda_sources.COMPILE_OPTIONS, f"-arch={arch}"]
        options += [f"-I{folder}" for folder in cuda_include_dirs()]
        options = [o.encode() for o in options]
        _check(nvrtc.nvrtcCompileProgram(program, len(options), options), program,
               f"compiling {source} for {arch}")
        lowered = {name: _check(nvrtc.nvrtcGetLoweredName(program, name.encode())).decode()
                   for name in names}
        if arch.startswith("sm_"):
            size = _check(nvrtc.nvrtcGetCUBINSize(program))
            binary = b" " * size
            _check(nvrtc.nvrtcGetCUBIN(program, binary))
        else:
            size = _check(nvrtc.nvrtcGetPTXSize(program))
            binary = b" " * size
            _check(nvrtc.nvrtcGetPTX(program, binary))
            binary = binary.rstrip(b"\0")
        return binary, lowered
    finally:
        nvrtc.nvrtcDestroyProgram(program)


def nvrtc_version() -> str:
    """``major.minor`` of the NVRTC the binaries are compiled with."""
    from cuda.bindings import nvrtc

    major, minor = _check(nvrtc.nvrtcVersion())
    return f"{major}.{minor}"


def build(folder: Path | None = None, archs=CUBIN_ARCHS, ptx_arch=PTX_ARCH, log=print) -> dict:
    """Compile every source for ``archs`` and ``ptx_arch`` into ``folder`` (default: the
    sources' ``bin``); write the manifest last, so that a failed build leaves no manifest that
    vouches for binaries that are not there. Returns the manifest."""
    folder = folder or cuda_sources.source_dir() / cuda_sources.BINARY_DIR
    folder.mkdir(parents=True, exist_ok=True)
    manifest = {"nvrtc": nvrtc_version(), "targets": [*archs, ptx_arch], "sources": {}}
    for source in cuda_sources.MODULES:
        stem = source.removesuffix(".cu")
        entry = {"fingerprint": cuda_sources.fingerprint(source), "names": None, "binaries": {}}
        for arch in (*archs, ptx_arch):
            started = time.perf_counter()
            binary, lowered = compile_source(source, arch)
            suffix = "cubin" if arch.startswith("sm_") else "ptx"
            name = f"{stem}.{arch}.{suffix}"
            (folder / name).write_bytes(binary)
            if entry["names"] not in (None, lowered):
                raise RuntimeError(f"{source}: lowered names differ between architectures")
            entry["names"] = lowered
            entry["binaries"][arch] = name
            log(f"{name:<36} {len(binary) / 1024:8.1f} KiB  {time.perf_counter() - started:5.2f} s")
        manifest["sources"][source] = entry
    temporary = folder / (cuda_sources.MANIFEST + ".tmp")
    temporary.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    temporary.replace(folder / cuda_sources.MANIFEST)
    return manifest


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpipe.engine.compute.cuda_build", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, help="folder to write (default: the sources' bin/)")
    args = parser.parse_args(argv)
    try:
        import cuda.bindings.nvrtc  # noqa: F401
    except ImportError:
        print("NVRTC's Python binding is missing: pip install -e '.[kernels]'", file=sys.stderr)
        return 2
    build(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
