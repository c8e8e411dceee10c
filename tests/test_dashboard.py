"""Watching a traversal: gpipe's page on the Dask dashboard (gpipe/watch/dashboard.py), its data
endpoint and spans, and ``gpipe.progress.bar()`` (gpipe/watch/progress_bar.py)."""

import io
import json
import time
import urllib.request

import dask
import dask.dataframe as dd
import pandas as pd
import pytest

import gpipe
import reference
from gpipe.watch import dashboard


def _queries(client) -> list:
    with urllib.request.urlopen(gpipe.dashboard_link(client) + "/api/queries", timeout=10) as answer:
        assert answer.headers["Content-Type"].startswith("application/json")
        return json.load(answer)["traversals"]


def _listed(client, graph, count, deadline_s=10.0) -> list:
    """The endpoint's finished traversals of ``graph``, once ``count`` of them are listed."""
    deadline = time.monotonic() + deadline_s
    while True:
        found = [t for t in _queries(client) if t["graph"] == repr(graph) and t["done"]]
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def test_the_data_endpoint_lists_each_traversal_with_its_owners(dask_client2):
    edges = reference.random_edges(n=300, m=900, seed=51, weights="positive")
    source = int(edges["src"].iloc[0])
    with dask_client2.as_current():
        one = gpipe.Graph.from_edges(dd.from_pandas(edges, npartitions=2), directed=False,
                                     weight="weight", partitions=1)
        with dask.config.set({"gpipe.partitions": 2}):
            two = gpipe.Graph.from_edges(dd.from_pandas(edges, npartitions=2), directed=False,
                                         weight="weight")
        assert (one.num_partitions, two.num_partitions) == (1, 2)
        bfs_one = one.bfs(source).compute()
        two.bfs(source).compute()
        two.sssp(source).compute()
    expected = reference.expected_bfs(edges, [source], directed=False)
    deepest = int(expected.max())
    assert int(bfs_one["distance"].max()) == deepest

    [listed] = _listed(dask_client2, one, 1)
    assert listed["algorithm"] == "bfs" and listed["owners"] == 1 and listed["sources"] == str(source)
    [owner] = listed["owner"]
    assert owner["done"] and owner["level"] == deepest
    assert owner["reached"] == int(expected.notna().sum())

    both = _listed(dask_client2, two, 2)
    assert sorted(t["algorithm"] for t in both) == ["bfs", "sssp"]
    for traversal in both:
        assert [o["owner"] for o in traversal["owner"]] == [0, 1]
        assert all(o["done"] for o in traversal["owner"]) and traversal["elapsed_s"] >= 0
    [bfs_two] = [t for t in both if t["algorithm"] == "bfs"]
    assert all(o["level"] >= deepest for o in bfs_two["owner"])  # levels run, or the deepest


def test_direct_queries_are_listed_under_their_dask_spans(dask_client2):
    def spans(dask_scheduler):
        return {s.id: (s.name, s.start, s.stop, s.done)
                for s in dask_scheduler.extensions["spans"].spans.values()}

    before = dask_client2.run_on_scheduler(spans)
    edges = reference.random_edges(n=100, m=300, seed=52, weights="positive")
    with dask_client2.as_current():
        graph = gpipe.Graph.from_edges(dd.from_pandas(edges, npartitions=1), weight="weight",
                                       partitions=1)
        graph.sssp(int(edges["src"].iloc[0])).compute()
    _listed(dask_client2, graph, 1)
    after = dask_client2.run_on_scheduler(spans)
    [sssp] = [s for i, s in after.items() if i not in before and s[0] == ("gpipe-sssp",)]
    _, start, stop, done = sssp
    assert done and 0 < start <= stop


def test_a_traversal_that_raises_is_listed_as_failed(dask_client2):
    edges = pd.DataFrame({"src": [0, 1, 2], "dst": [1, 2, 1], "weight": [1.0, -3.0, 1.0]})
    with dask_client2.as_current():
        graph = gpipe.Graph.from_edges(dd.from_pandas(edges, npartitions=1), weight="weight",
                                       partitions=1)
        with pytest.raises(gpipe.NegativeCycleError):
            graph.sssp(0).compute()
    [listed] = _listed(dask_client2, graph, 1)
    assert listed["failed"] == "NegativeCycleError" and listed["owner"][0]["failed"]


def test_the_page_is_served_and_listed_among_the_dashboards_pages():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        with client.as_current():
            gpipe.Graph.from_edges(reference.random_edges(n=20, m=40, seed=53))  # installs it
        with urllib.request.urlopen(gpipe.dashboard_link(client), timeout=10) as answer:
            page = answer.read().decode()
        with urllib.request.urlopen(client.dashboard_link, timeout=10) as answer:
            status = answer.read().decode()
    assert "/api/queries" in page and "<script" in page and "://" not in page  # nothing fetched
    assert 'href="gpipe"' in status


def test_an_owner_whose_worker_left_is_listed_as_failed():
    plugin = dashboard.Traversals()
    start = {"traversal": "t", "algorithm": "sssp", "owners": 2, "level": 0, "frontier": 1,
             "reached": None, "elapsed_s": 0.0, "done": False, "at": time.time(), "query": None}
    plugin.record({**start, "owner": 0, "worker": "tcp://a:1"})
    plugin.record({**start, "owner": 1, "worker": "tcp://b:1", "level": 7})
    plugin.remove_worker(None, "tcp://b:1")
    [listed] = plugin.summary()["traversals"]
    assert not listed["done"] and listed["failed"] == "worker left"
    assert [(o["done"], o.get("failed"), o["level"]) for o in listed["owner"]] == [
        (False, None, 0), (True, "worker left", 7)]


def test_dashboard_link_is_next_to_the_dask_dashboard():
    class Client:
        dashboard_link = "http://10.0.0.1:8787/status"

    assert gpipe.dashboard_link(Client()) == "http://10.0.0.1:8787/gpipe"
    Client.dashboard_link = None
    assert gpipe.dashboard_link(Client()) is None


def test_the_bar_draws_an_in_process_traversal_on_a_terminal():
    edges = reference.random_edges(n=200, m=600, seed=54, weights="positive")
    source = int(edges["src"].iloc[0])
    graph = gpipe.Graph.from_edges(edges, directed=False, weight="weight")
    out = io.StringIO()
    with gpipe.progress.bar(out=out, widget=False):
        result = graph.sssp(source).compute()
    reached = int(result["distance"].notna().sum())
    lines = out.getvalue().split("\n")
    assert lines[-1] == "" and len(lines) == 2  # one traversal, one line, ended
    frames = lines[0].split("\r")[1:]  # each redraw starts at the line's beginning
    assert frames[0].startswith(f"sssp from {source}: [") and "step 0" in frames[0]
    assert f"[{'#' * 20}] {reached:,} reached done" in frames[-1]  # one owner's SSSP counts no steps


def test_the_bar_draws_each_owner_of_a_cluster_traversal(dask_client2):
    edges = reference.random_edges(n=300, m=900, seed=55)
    source = int(edges["src"].iloc[0])
    out = io.StringIO()
    with dask_client2.as_current(), dask.config.set({"gpipe.partitions": 2}):
        graph = gpipe.Graph.from_edges(dd.from_pandas(edges, npartitions=2), directed=False)
        with gpipe.progress.bar(out=out, widget=False):
            graph.bfs(source).compute()
    last = out.getvalue().split("\n")[0].split("\r")[-1]
    assert last.startswith(f"bfs from {source}: owner 0/2 [")
    assert last.count(" done") == 2 and "owner 1/2" in last


def test_the_bar_without_traversals_draws_nothing():
    out = io.StringIO()
    with gpipe.progress.bar(out=out, widget=False):
        pass
    assert out.getvalue() == ""


@pytest.mark.browser
def test_a_running_traversal_appears_on_the_page_in_a_browser(tmp_path):
    """Headless Chromium on the page while a two-owner BFS of a long path runs (each hop crosses
    owners: one message round per level); GPIPE_SCREENSHOT=1 saves docs/watching-a-traversal.png."""
    import os
    import pathlib
    import threading

    import numpy as np
    import pandas as pd

    playwright = pytest.importorskip("playwright.sync_api")
    chromium = os.environ.get("GPIPE_CHROMIUM", "/usr/bin/chromium")
    if not os.path.exists(chromium):
        pytest.skip(f"no Chromium at {chromium}")
    from distributed import Client, LocalCluster

    n = 12000
    path = np.empty(n, dtype=np.int64)
    path[0::2], path[1::2] = np.arange(n // 2), np.arange(n // 2) + n // 2
    edges = pd.DataFrame({"src": path[:-1], "dst": path[1:], "weight": 1.0})
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        with dask.config.set({"gpipe.partitions": 2}):
            graph = gpipe.Graph.from_edges(dd.from_pandas(edges, npartitions=2), directed=False,
                                           weight="weight")
            graph.bfs(int(path[-1]), depth_limit=50).compute()  # recent ones, for the picture
        gpipe.Graph.from_edges(edges, directed=False, partitions=1).bfs(int(path[n // 2])).compute()
        results = {}
        running = threading.Thread(target=lambda: results.update(
            sssp=graph.sssp(int(path[0])).compute()))
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=[
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync"])
            try:
                page = browser.new_page(viewport={"width": 1100, "height": 420})
                page.goto(gpipe.dashboard_link(client))
                page.wait_for_selector("#recent tr.traversal[data-state=done]", timeout=10_000)
                running.start()
                row = page.wait_for_selector(
                    "#running tr.traversal[data-algorithm=sssp] div.owner[data-owner='1']",
                    timeout=10_000)
                assert "step" in row.inner_text()
                page.wait_for_timeout(1000)  # its steps advance
                if os.environ.get("GPIPE_SCREENSHOT") == "1":
                    target = pathlib.Path(__file__).parent.parent / "docs" / "watching-a-traversal.png"
                    target.parent.mkdir(exist_ok=True)
                    page.screenshot(path=str(target))
                running.join()
                page.wait_for_selector("#recent tr.traversal[data-algorithm=sssp][data-state=done]",
                                       timeout=10_000)
            finally:
                browser.close()
        running.join()
    assert results["sssp"]["distance"].max() == n - 1


def test_the_bar_in_a_notebook_is_a_widget_row_per_owner(monkeypatch):
    """ipywidgets is not a dependency: a stand-in with its names records what the bar sets."""
    import sys
    import types

    class Widget:
        def __init__(self, value=None, **options):
            self.bar_style = ""
            self.children = tuple(value) if isinstance(value, list) else ()
            self.value = options.get("value") if isinstance(value, list) or value is None else value

    shown = []
    fake = types.SimpleNamespace(Label=Widget, FloatProgress=Widget, HBox=Widget, VBox=Widget)
    display = types.ModuleType("IPython.display")
    display.display = shown.append
    monkeypatch.setitem(sys.modules, "ipywidgets", fake)
    ipython = types.ModuleType("IPython")
    ipython.display = display
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    monkeypatch.setitem(sys.modules, "IPython.display", display)
    edges = reference.random_edges(n=100, m=300, seed=56)
    graph = gpipe.Graph.from_edges(edges, directed=False)
    with gpipe.progress.bar(widget=True):
        result = graph.bfs(int(edges["src"].iloc[0])).compute()
    [box] = shown
    [row] = box.children
    label, bar, text = row.children
    assert label.value.startswith("bfs from ") and bar.value == 1.0 and bar.bar_style == "success"
    assert text.value.startswith(f"level {int(result['distance'].max())}, "
                                 f"{int(result['distance'].notna().sum()):,} reached done")
