"""Progress while a traversal runs: log records in this process, Dask worker events from a
cluster's owners (gpipe/watch/progress.py), and the command line's progress lines."""

import logging
import time

import dask
import dask.dataframe as dd
import pytest

import gpipe
import reference
from gpipe.watch import progress


def test_an_in_process_traversal_logs_its_end_with_levels_and_reached(caplog):
    edges = reference.random_edges(n=200, m=600, seed=41)
    source = int(edges["src"].iloc[0])
    graph = gpipe.Graph.from_edges(dd.from_pandas(edges, npartitions=2), directed=False)
    with caplog.at_level(logging.INFO, logger="gpipe.progress"):
        out = graph.bfs(source).compute()
    events = [r.gpipe_progress for r in caplog.records if hasattr(r, "gpipe_progress")]
    assert [e["done"] for e in events] == [False, True]  # its start, at once, and its end
    assert events[0]["level"] == 0 and events[0]["frontier"] == 1
    assert all(e["algorithm"] == "bfs" for e in events)
    assert events[1]["reached"] == int(out["distance"].notna().sum())
    assert events[1]["level"] == int(out["distance"].max())  # the deepest level reached
    message = caplog.records[-1].getMessage()
    assert f"bfs: done, deepest level {int(out['distance'].max())}," in message


def test_an_in_process_sssp_says_done_without_steps_or_levels(caplog):
    edges = reference.random_edges(n=200, m=600, seed=45, weights="positive")
    source = int(edges["src"].iloc[0])
    graph = gpipe.Graph.from_edges(dd.from_pandas(edges, npartitions=2), weight="weight")
    with caplog.at_level(logging.INFO, logger="gpipe.progress"):
        out = graph.sssp(source).compute()
    events = [r.gpipe_progress for r in caplog.records if hasattr(r, "gpipe_progress")]
    assert [e["done"] for e in events] == [False, True] and events[1]["level"] is None
    reached = int(out["distance"].notna().sum())
    assert events[1]["reached"] == reached
    assert caplog.records[-1].getMessage().startswith(f"sssp: done, {reached:,} reached")


def test_no_one_listening_costs_no_report(caplog):
    edges = reference.random_edges(n=50, m=100, seed=42)
    graph = gpipe.Graph.from_edges(dd.from_pandas(edges, npartitions=1))
    with caplog.at_level(logging.WARNING, logger="gpipe.progress"):
        graph.bfs(int(edges["src"].iloc[0])).compute()
    assert not [r for r in caplog.records if hasattr(r, "gpipe_progress")]


def two_owner_bfs_and_sssp(client, edges, source):
    """BFS and SSSP from ``source`` over two owners, undirected: the progress events the client
    received (waiting up to 10 s for the four owners' ends) and both computed results."""
    seen = []
    stop = progress.follow(client, seen.append)
    try:
        with client.as_current(), dask.config.set({"gpipe.partitions": 2}):
            graph = gpipe.Graph.from_edges(dd.from_pandas(edges, npartitions=2), directed=False,
                                           weight="weight")
            bfs = graph.bfs(source).compute()
            sssp = graph.sssp(source).compute()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and sum(e["done"] for e in seen) < 4:
            time.sleep(0.1)
    finally:
        stop()
    return seen, bfs, sssp


def test_owners_on_a_cluster_send_progress_events(dask_client2):
    edges = reference.random_edges(n=400, m=1600, seed=43, weights="positive")
    source = int(edges["src"].iloc[0])
    seen, _, _ = two_owner_bfs_and_sssp(dask_client2, edges, source)
    done = {(e["algorithm"], e["owner"]) for e in seen if e["done"]}
    assert done == {("bfs", 0), ("bfs", 1), ("sssp", 0), ("sssp", 1)}
    assert all(e["owners"] == 2 and e["elapsed_s"] >= 0 for e in seen)
    assert any(not e["done"] and e["level"] >= 0 for e in seen)  # a level while running (from 0)


def test_two_owners_report_the_deepest_level_and_sssp_steps(dask_client2):
    """The owners' last levels, which found their frontiers empty, do not count: the deepest
    level the owners report is the largest distance, each owner's that of its own vertices."""
    edges = reference.random_edges(n=300, m=450, seed=46, weights="positive")
    source = int(edges["src"].iloc[0])
    seen, bfs, sssp = two_owner_bfs_and_sssp(dask_client2, edges, source)
    expected = reference.expected_bfs(edges, [source], directed=False)
    deepest = int(expected.max())
    assert deepest >= 3 and int(bfs["distance"].max()) == deepest
    ends = {(e["algorithm"], e["owner"]): e for e in seen if e["done"]}
    bfs_levels = [ends["bfs", p]["level"] for p in (0, 1)]
    assert max(bfs_levels) == deepest and all(level <= deepest for level in bfs_levels)
    assert sum(ends["bfs", p]["reached"] for p in (0, 1)) == int(expected.notna().sum())
    assert "deepest level" in progress.describe(ends["bfs", 0])
    steps = {ends["sssp", p]["level"] for p in (0, 1)}
    assert len(steps) == 1 and steps.pop() >= 1  # every owner stops at the same step
    assert sum(ends["sssp", p]["reached"] for p in (0, 1)) == int(sssp["distance"].notna().sum())
    assert " steps, " in progress.describe(ends["sssp", 1])
    running = [e for e in seen if not e["done"]]
    assert all(e["level"] <= deepest for e in running if e["algorithm"] == "bfs")
    assert all("step" in progress.describe(e) for e in running if e["algorithm"] == "sssp")


def test_the_command_line_logs_progress_lines(tmp_path, capsys):
    from gpipe.tools.cli import main

    edges = reference.random_edges(n=100, m=300, seed=44)
    edges.to_parquet(tmp_path / "edges.parquet")
    source = str(int(edges["src"].iloc[0]))
    assert main(["bfs", str(tmp_path / "edges.parquet"), "--source", source, "--out",
                 str(tmp_path / "out"), "--backend", "cpu"]) == 0
    assert "gpipe.progress bfs: done, deepest level" in capsys.readouterr().err


@pytest.mark.parametrize("done", [False, True])
def test_a_terminal_gets_one_line_rewritten_in_place(monkeypatch, request, done):
    import io
    import sys

    from gpipe.pipeline import configure_logging

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    for logger in (logging.getLogger("gpipe"), progress.log):  # as they were, after the test
        monkeypatch.setattr(logger, "handlers", [])
        monkeypatch.setattr(logger, "propagate", logger.propagate)
        request.addfinalizer(lambda logger=logger, level=logger.level: logger.setLevel(level))
    configure_logging()
    event = {"traversal": "t", "algorithm": "sssp", "owner": 1, "owners": 2, "level": 7,
             "frontier": 3, "reached": 1234, "elapsed_s": 1.5, "done": done}
    progress.log.info("%s", progress.describe(event), extra={"gpipe_progress": event})  # as gpipe logs it
    err = terminal.getvalue()
    assert err.startswith("\r\033[K") and "1,234 reached on owner 1/2" in err
    assert ("done after 7 steps" if done else "at step 7") in err
    assert err.endswith("\n") == done
