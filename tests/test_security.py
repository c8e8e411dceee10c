"""Secure clusters: a job through a TLS-only scheduler (``tls://``, certificates under the cluster
file's ``dask:`` section), checked against SciPy, and every misconfiguration ending in one line
with exit 2 that names the scheduler and the setting to give, with nothing written and no key's
contents in any output. The certificates are made here with the ``openssl`` command (a CA and
one certificate it signs, for the scheduler, the workers and the client alike)."""

from __future__ import annotations

import copy
import shutil
import subprocess
from pathlib import Path

import dask
import pandas as pd
import pytest
import yaml

from gpipe.io import report as job
from gpipe.tools.cli import main
from reference import expected_bfs, random_edges, result_distances

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def make_certificates(folder: Path, name: str) -> dict:
    """A CA and a certificate it signs (with its key), as files in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}-ca.key",
            "-out", f"{name}-ca.pem", "-days", "2", "-subj", f"/CN=gpipe-test-{name}-ca", cwd=folder)
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
            "-subj", "/CN=localhost", cwd=folder)
    openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{name}-ca.pem", "-CAkey", f"{name}-ca.key",
            "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", cwd=folder)
    return {"ca": folder / f"{name}-ca.pem", "cert": folder / f"{name}.pem", "key": folder / f"{name}.key"}


@pytest.fixture(scope="module")
def certificates(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tls")
    return {"good": make_certificates(folder, "cluster"), "other": make_certificates(folder, "other")}


@pytest.fixture(scope="module")
def tls_scheduler(certificates):
    """A TLS-only scheduler with two worker processes."""
    from distributed import LocalCluster
    from distributed.security import Security

    good = certificates["good"]
    security = Security(tls_ca_file=str(good["ca"]), require_encryption=True,
                        **{f"tls_{role}_{part}": str(good[part])
                           for role in ("scheduler", "worker", "client") for part in ("cert", "key")})
    with LocalCluster(n_workers=2, threads_per_worker=1, protocol="tls", security=security,
                      dashboard_address=None) as cluster:
        yield cluster.scheduler_address


@pytest.fixture
def restore_dask_config():
    """A cluster file's ``dask:`` section is set for the rest of the process (the command's);
    in-process tests put Dask's configuration back after each."""
    saved = copy.deepcopy(dask.config.config)
    yield
    dask.config.config.clear()
    dask.config.config.update(saved)


@pytest.fixture(scope="module")
def edges(tmp_path_factory):
    frame = random_edges(50, 160, seed=9, components=2)
    folder = tmp_path_factory.mktemp("tls-edges") / "edges"
    folder.mkdir()
    frame.to_parquet(folder / "part.0.parquet", index=False)
    return frame, folder


def tls_settings(files: dict) -> dict:
    return {"distributed": {"comm": {"require-encryption": True, "tls": {
        "ca-file": str(files["ca"]),
        "client": {"cert": str(files["cert"]), "key": str(files["key"])}}}}}


def cluster_file(tmp_path, address, dask_settings=None) -> Path:
    config = {"kind": "remote", "scheduler_address": address, "timeout": "5s"}
    if dask_settings is not None:
        config["dask"] = dask_settings
    path = tmp_path / "remote.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def run_bfs(edges, tmp_path, cluster):
    frame, folder = edges
    out = tmp_path / "results" / "out"
    out.parent.mkdir(exist_ok=True)
    status = main(["bfs", str(folder), "--source", str(int(frame["src"].iloc[0])), "--out", str(out),
                   "--cluster", str(cluster)])
    return status, out


def assert_no_key(certificates, *texts):
    for files in certificates.values():
        secret = Path(files["key"]).read_text().strip().splitlines()[1]  # a line of the key itself
        assert all(secret not in text for text in texts)


def test_a_job_through_a_tls_scheduler_matches_scipy(edges, tmp_path, tls_scheduler, certificates,
                                                    capsys, restore_dask_config):
    frame, _ = edges
    assert tls_scheduler.startswith("tls://")
    cluster = cluster_file(tmp_path, tls_scheduler, tls_settings(certificates["good"]))
    status, out = run_bfs(edges, tmp_path, cluster)
    captured = capsys.readouterr()
    assert status == 0, captured.err
    source = int(frame["src"].iloc[0])
    got = result_distances(pd.read_parquet(out))
    pd.testing.assert_series_equal(got, expected_bfs(frame, [source], directed=True).sort_index(),
                                   check_exact=False)
    report = (out / job.REPORT_NAME).read_text()
    assert_no_key(certificates, captured.out, captured.err, report)


def one_line(err):
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("how", ["no certificates", "another CA", "a plain address"])
def test_a_misconfigured_secure_connection_is_one_line(edges, tmp_path, tls_scheduler, certificates,
                                                       capsys, restore_dask_config, how):
    address, settings, words = {
        "no certificates": (tls_scheduler, None, ["distributed.comm.tls.ca-file",
                                                  "distributed.comm.tls.client.cert"]),
        "another CA": (tls_scheduler, tls_settings(certificates["other"]),
                       ["distributed.comm.tls.ca-file"]),
        "a plain address": (tls_scheduler.replace("tls://", "tcp://"), None, ["tls://"]),
    }[how]
    status, out = run_bfs(edges, tmp_path, cluster_file(tmp_path, address, settings))
    captured = capsys.readouterr()
    line = one_line(captured.err)
    assert status == 2, line
    assert line.startswith(f"gpipe: error: cannot connect to the Dask scheduler {address!r}")
    assert all(word in line for word in words), line
    assert not out.exists() and list(out.parent.iterdir()) == []
    assert_no_key(certificates, captured.out, captured.err)


def test_a_key_given_inline_never_reaches_the_report(edges, tmp_path, tls_scheduler, certificates,
                                                    capsys, restore_dask_config):
    """distributed takes PEM text in place of a file's path; a job whose cluster mapping holds
    its key so still runs, and its report, output and logs do not hold the key."""
    frame, folder = edges
    settings = tls_settings(certificates["good"])
    settings["distributed"]["comm"]["tls"]["client"]["key"] = certificates["good"]["key"].read_text()
    config = {"algorithm": "bfs", "source": int(frame["src"].iloc[0]),
              "cluster": {"kind": "remote", "scheduler_address": tls_scheduler, "timeout": "5s",
                          "dask": settings},
              "edges": {"path": str(folder)}, "output": {"path": str(tmp_path / "out")}}
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(config))
    assert main(["run", str(tmp_path / "job.yaml")]) == 0
    captured = capsys.readouterr()
    report = (tmp_path / "out" / job.REPORT_NAME).read_text()
    assert "(PEM text, not shown)" in report
    assert_no_key(certificates, captured.out, captured.err, report)
