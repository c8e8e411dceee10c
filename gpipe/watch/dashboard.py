"""gpipe's page on the Dask dashboard: the traversals running now and the recent ones.

Traversals of a graph that fits one worker run as direct queries (:mod:`gpipe.engine.direct`), not
as tasks, so Dask's task stream and progress bars never see them. Their owners send progress
events (:mod:`gpipe.progress`) to the scheduler all the same: :class:`Traversals`, a scheduler
plugin that gpipe installs when it first runs on a client, keeps the last :data:`KEEP` of them
and serves, from the dashboard's own web server:

- ``/gpipe``: a page (plain HTML and JavaScript, nothing fetched from elsewhere) that reads
  the endpoint below every :data:`POLL_MS` milliseconds and shows one row per traversal: the
  graph and sources, each owner's level (BFS) or step (SSSP), frontier and vertices reached,
  elapsed time, running or done. It is listed among the dashboard's pages.
- ``/gpipe/api/queries``: the same as JSON (:func:`Traversals.summary`).

It also lists each query under its Dask span (``gpipe-bfs``, ``gpipe-sssp``), which the
dashboard's span filter (Fine Performance Metrics) offers with the query's time: Dask builds
a span from the tasks annotated with it, and a direct query has none, so the plugin adds to
the span a task group of its own that starts and stops with the query's events, and the
owners' seconds as the span's ``execute`` time. These are Dask internals (``Span``,
``TaskGroup``); where they change, the spans are left out and the page still works.
"""

from __future__ import annotations

import json
import logging
import time
from collections import OrderedDict
from importlib import resources

from distributed.diagnostics.plugin import SchedulerPlugin

from gpipe.watch.progress import TOPIC

PATH = "/gpipe"
API_PATH = "/gpipe/api/queries"
KEEP = 50  # traversals the page remembers, running or not
POLL_MS = 250

logger = logging.getLogger(__name__)


def dashboard_link(client) -> str | None:
    """The address of gpipe's page on the dashboard of ``client``'s scheduler.

    Parameters
    ----------
    client : distributed.Client
        A client of a cluster whose scheduler serves the dashboard.

    Returns
    -------
    str or None
        e.g. ``http://127.0.0.1:8787/gpipe``; None when the scheduler serves no dashboard.

    Examples
    --------
    >>> gpipe.dashboard_link(client)  # doctest: +SKIP
    'http://127.0.0.1:8787/gpipe'
    """
    link = getattr(client, "dashboard_link", None)
    if not link:
        return None
    base = link[: -len("/status")] if link.endswith("/status") else link.rstrip("/")
    return base + PATH


def install(client) -> None:
    """Install :class:`Traversals` on ``client``'s scheduler, once per client. A scheduler that
    cannot load it (gpipe not installed there) is logged and left without the page."""
    if getattr(client, "_gpipe_dashboard", False):
        return
    client._gpipe_dashboard = True
    try:
        client.register_plugin(Traversals())
    except Exception as error:  # the queries run all the same
        logger.warning("gpipe's dashboard page is not installed on the scheduler (%s: %s)",
                       type(error).__name__, error)


class Traversals(SchedulerPlugin):
    """Keeps the scheduler's recent traversals from their progress events and serves them."""

    name = "gpipe-dashboard"
    idempotent = True

    def __init__(self):
        self.traversals: OrderedDict[str, dict] = OrderedDict()
        self._spans: dict[str, object] = {}

    async def start(self, scheduler) -> None:
        self.scheduler = scheduler
        application = getattr(scheduler, "http_application", None)
        if application is not None:
            application.add_handlers(r".*", [
                (PATH, _PageHandler),
                (API_PATH, _ApiHandler, {"plugin": self}),
            ])
            _list_among_pages(scheduler)

    def log_event(self, topic: str, msg) -> None:
        if topic == TOPIC and isinstance(msg, dict):
            self.record(msg)

    def record(self, event: dict) -> None:
        """Take one progress event into the traversal it belongs to."""
        key = str(event["traversal"])
        traversal = self.traversals.get(key)
        if traversal is None:
            query = event.get("query") or {}
            at = event.get("at") or time.time()
            traversal = {"id": key, "algorithm": event["algorithm"], "owners": event["owners"],
                         "query": event.get("query"),
                         "graph": query.get("graph"), "vertices": query.get("vertices"),
                         "sources": query.get("sources"),
                         "started": at - event.get("elapsed_s", 0.0), "owner": {}}
            self.traversals[key] = traversal
            while len(self.traversals) > KEEP:
                self.traversals.popitem(last=False)
        owner = traversal["owner"].setdefault(event["owner"], {"owner": event["owner"]})
        if owner.get("done"):
            return  # a late event of a finished owner
        if event.get("failed"):
            owner["failed"] = event["failed"]
        if event.get("worker"):
            owner["worker"] = event["worker"]
        owner.update(level=event["level"], frontier=event["frontier"],
                     elapsed_s=event["elapsed_s"], done=bool(event["done"]))
        if event.get("reached") is not None:
            owner["reached"] = event["reached"]
        self._track_span(traversal, event)

    def remove_worker(self, scheduler, worker, **kwargs) -> None:
        """End the running owners of a worker that left (killed, crashed): no event will."""
        for traversal in list(self.traversals.values()):
            for owner in list(traversal["owner"].values()):
                if owner.get("worker") == worker and not owner["done"]:
                    elapsed = max(time.time() - traversal["started"], 0.0)
                    self.record({"traversal": traversal["id"], "algorithm": traversal["algorithm"],
                                 "owner": owner["owner"], "owners": traversal["owners"],
                                 "level": owner["level"], "frontier": 0, "reached": None,
                                 "elapsed_s": elapsed, "done": True, "at": time.time(),
                                 "failed": "worker left", "query": traversal.get("query")})

    def summary(self) -> dict:
        """What the page shows: ``{"now": time, "traversals": [...]}``, newest first.

        Each traversal: ``id``, ``algorithm``, ``graph``, ``vertices`` (its vertex ids'
        range) and ``sources`` (where the driver told them), ``owners``, ``started`` (wall
        clock), ``elapsed_s``, ``done``, ``failed`` (the type of the error it raised, else
        None), and ``owner``: one dict per owner heard from, in owner order, with ``level``
        (the BFS level or SSSP step), ``frontier``, ``reached`` (where known), ``elapsed_s``,
        ``done`` and ``failed`` (where it raised).
        """
        now = time.time()
        out = []
        for traversal in reversed(self.traversals.values()):
            owners = [traversal["owner"][p] for p in sorted(traversal["owner"])]
            # An owner that failed ends the traversal even where another never reported (it
            # may have failed before its start, or its worker died first).
            done = all(o["done"] for o in owners) and (
                len(owners) == traversal["owners"] or any(o.get("failed") for o in owners))
            elapsed = (max(o["elapsed_s"] for o in owners) if done
                       else max(now - traversal["started"], 0.0))
            failed = next((o["failed"] for o in owners if o.get("failed")), None)
            out.append({**{k: v for k, v in traversal.items() if k not in ("owner", "query")},
                        "elapsed_s": elapsed, "done": done, "failed": failed, "owner": owners})
        return {"now": now, "traversals": out}

    def _track_span(self, traversal, event) -> None:
        """Keep the Dask span of a direct query (see the module's docstring) up to date."""
        span_info = (event.get("query") or {}).get("span")
        if not span_info:
            return
        try:
            self._update_span(traversal, event, span_info)
        except Exception:  # Dask's internals moved: no span, the page goes on
            logger.debug("gpipe could not record the span of a query", exc_info=True)

    def _update_span(self, traversal, event, span_info) -> None:
        from distributed.scheduler import TaskGroup, TaskPrefix

        extension = self.scheduler.extensions.get("spans")
        if extension is None:
            return
        name, ids = tuple(span_info["name"]), tuple(span_info["ids"])
        group, span = self._spans.get(traversal["id"], (None, None))
        if group is None:
            span = extension._ensure_span(name, ids)
            if span.groups:
                return  # tasks of its own (gpipe.direct-queries: false) time it already
            group = TaskGroup(f"{name[-1]}-direct", TaskPrefix(name[-1]))
            group.span_id = span.id
            group.states["processing"] = traversal["owners"]  # running until each owner is done
            group.start = traversal["started"]
            span.groups.add(group)
            self._spans[traversal["id"]] = group, span
            while len(self._spans) > KEEP:
                self._spans.pop(next(iter(self._spans)))
        if event["done"] and group.states["processing"] > 0:
            at = event.get("at") or time.time()
            group.states["processing"] -= 1
            group.states["memory"] += 1
            group.add_duration("compute", at - event["elapsed_s"], at)
            metrics = span._cumulative_worker_metrics
            metrics[("execute", name[-1], "thread-noncpu", "seconds")] += event["elapsed_s"]


def _list_among_pages(scheduler) -> None:
    """Add ``gpipe`` to the dashboard's list of pages (its top bar), where Dask keeps one."""
    try:
        from distributed.dashboard.scheduler import template_variables

        pages = template_variables(scheduler)["pages"]
        if "gpipe" not in pages:
            pages.append("gpipe")
    except Exception:  # no Bokeh, or Dask keeps its pages elsewhere now
        logger.debug("gpipe is not listed among the dashboard's pages", exc_info=True)


def _page() -> str:
    return (resources.files("gpipe.watch") / "dashboard.html").read_text().replace(
        "{{POLL_MS}}", str(POLL_MS))


try:
    from tornado import web

    class _PageHandler(web.RequestHandler):
        def get(self):
            self.set_header("Content-Type", "text/html; charset=utf-8")
            self.write(_page())

    class _ApiHandler(web.RequestHandler):
        def initialize(self, plugin):
            self.plugin = plugin

        def get(self):
            self.set_header("Content-Type", "application/json")
            self.set_header("Cache-Control", "no-store")
            self.write(json.dumps(self.plugin.summary()))
except ImportError:  # pragma: no cover - distributed always brings tornado
    pass
