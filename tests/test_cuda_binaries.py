"""The CUDA kernels shipped compiled (kernels/bin): present for every architecture gpipe
promises, built from the sources as they are now, and chosen right for a device.

These run without a GPU: a stale binary fails here, in CI, before any GPU sees it. After
editing a ``kernels/*.cu`` file, rebuild them: ``python -m gpipe.engine.compute.cuda_build`` (README).
"""

import pytest

from gpipe.engine.compute import cuda_build, cuda_sources

PROMISED = ("sm_80", "sm_90", "sm_100", "sm_120")  # issue 14: at least these, plus PTX


@pytest.fixture(scope="module")
def manifest():
    manifest = cuda_sources.read_manifest()
    assert manifest is not None, "kernels/bin/manifest.json is missing: run python -m gpipe.engine.compute.cuda_build"
    return manifest


def test_every_promised_architecture_and_a_ptx_is_built(manifest):
    for arch in PROMISED:
        assert arch in manifest["targets"]
    assert any(t.startswith("compute_") for t in manifest["targets"])
    assert manifest["nvrtc"].startswith("13.0"), "binaries for every CUDA 13 driver need NVRTC 13.0"


def test_no_binary_is_stale_or_missing(manifest):
    stale = cuda_sources.stale_sources(manifest)
    assert not stale, f"stale CUDA binaries for {stale}: run python -m gpipe.engine.compute.cuda_build"
    folder = cuda_sources.binary_dir()
    for source, entry in manifest["sources"].items():
        assert set(entry["binaries"]) == set(manifest["targets"]), source
        assert set(entry["names"]) == set(cuda_sources.instantiations(source)), source
        for target, name in entry["binaries"].items():
            data = (folder / name).read_bytes()
            if target.startswith("sm_"):
                assert data[:4] == b"\x7fELF", name
            else:
                assert f".target {target.replace('compute_', 'sm_')}".encode() in data, name


def test_an_edited_source_makes_its_binaries_stale(manifest, tmp_path, monkeypatch):
    for name in cuda_sources.MODULES:
        (tmp_path / name).write_text(cuda_sources.source_text(name))
    (tmp_path / "bfs.cu").write_text(cuda_sources.source_text("bfs.cu") + "\n// edited\n")
    monkeypatch.setattr(cuda_sources, "source_dir", lambda source="bfs.cu": tmp_path)
    assert cuda_sources.stale_sources(manifest) == ["bfs.cu"]
    assert cuda_sources.shipped_binary("bfs.cu", 9, 0, manifest) is None  # compiled at first use instead
    assert cuda_sources.shipped_binary("csr.cu", 9, 0, manifest) is not None


@pytest.mark.parametrize("capability,expected", [
    ((9, 0), "sm_90"),      # H100, H200
    ((8, 0), "sm_80"),      # A100
    ((8, 9), "sm_80"),      # L4, L40: an sm_80 cubin runs on 8.9
    ((10, 3), "sm_100"),    # B300
    ((12, 1), "sm_120"),    # a newer minor of a shipped major
    ((13, 0), "compute_75"),  # a GPU newer than every cubin: the PTX, compiled by the driver
    ((7, 0), None),         # older than every binary: compiled at first use
])
def test_the_device_gets_the_best_binary_it_runs(manifest, capability, expected):
    chosen = cuda_sources.shipped_binary("sssp_nearfar.cu", *capability, manifest)
    if expected is None:
        assert chosen is None
        return
    path, names = chosen
    assert path.name == manifest["sources"]["sssp_nearfar.cu"]["binaries"][expected]
    assert set(names) == set(cuda_sources.instantiations("sssp_nearfar.cu"))


def test_the_build_writes_its_manifest_last(tmp_path, monkeypatch):
    """A build that fails part way leaves no manifest vouching for binaries that are missing."""
    def fail(source, arch):
        raise RuntimeError("NVRTC failed")

    monkeypatch.setattr(cuda_build, "compile_source", fail)
    monkeypatch.setattr(cuda_build, "nvrtc_version", lambda: "13.0")  # no NVRTC needed here
    with pytest.raises(RuntimeError):
        cuda_build.build(tmp_path, log=lambda line: None)
    assert not (tmp_path / cuda_sources.MANIFEST).exists()


def test_headers_are_inlined_once_and_nested(tmp_path, monkeypatch):
    (tmp_path / "a.cu").write_text('#include "b.cuh"\n#include "c.cuh"\nA\n')
    (tmp_path / "b.cuh").write_text('#include "c.cuh"\nB\n')
    (tmp_path / "c.cuh").write_text("C\n")
    monkeypatch.setattr(cuda_sources, "source_dir", lambda source="bfs.cu": tmp_path)
    # c.cuh once, inside b.cuh where it is first included; its second #include an empty line
    assert cuda_sources.source_text("a.cu") == "C\n\nB\n\n\nA\n"
