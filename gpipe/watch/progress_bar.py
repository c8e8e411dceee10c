"""A live progress bar of gpipe's traversals where a person waits (``gpipe.progress.bar()``).

It draws the :mod:`gpipe.progress` events: from a Dask cluster's workers through the client
(:func:`gpipe.progress.follow`), and from traversals that run in this process without a
cluster (:func:`gpipe.progress.add_listener`). In a terminal it rewrites one line on stderr
per traversal (carriage returns), one bar per owner; in a Jupyter notebook with ipywidgets
installed, one widget row per owner.
"""

from __future__ import annotations

import sys
import threading
import time


WIDTH = 20  # characters of one owner's bar in a terminal
FLUSH_S = 0.5  # how long the end of a ``with`` block waits for the last traversal's end events
SUBSCRIBE_S = 2.0  # how long its start waits for the scheduler to take the subscription


class ProgressBar:
    """The context manager behind :func:`gpipe.progress.bar` (see there): ``events`` is the
    module whose events it draws (:mod:`gpipe.progress`, which hands itself over: its
    ``add_listener``, ``remove_listener``, ``follow`` and ``TOPIC``)."""

    def __init__(self, events, client=None, out=None, widget=None):
        self.events = events
        self.client = client
        self.out = out
        self.widget = widget
        self.traversals: dict[str, dict] = {}  # id -> {"event": first event, "owner": {p: last}}
        self._lock = threading.Lock()
        self._stop_following = None
        self._view = None

    def __enter__(self):
        client = self.client if self.client is not None else _active_client()
        use_widget = self.widget if self.widget is not None else _in_notebook()
        self._view = _Widget() if use_widget else _Terminal(self.out or sys.stderr)
        self.events.add_listener(self._event)
        if client is not None:
            self._stop_following = self.events.follow(client, self._event)
            _wait_subscribed(client, self.events.TOPIC)
        return self

    def __exit__(self, *exc):
        deadline = time.monotonic() + FLUSH_S
        while time.monotonic() < deadline and not self._all_done():
            time.sleep(0.01)
        self.events.remove_listener(self._event)
        if self._stop_following is not None:
            self._stop_following()
        with self._lock:
            self._view.close()
        return False

    def _all_done(self) -> bool:
        with self._lock:
            return all(_done(t) for t in self.traversals.values())

    def _event(self, event: dict) -> None:
        with self._lock:
            traversal = self.traversals.setdefault(event["traversal"], {"event": event, "owner": {}})
            last = traversal["owner"].get(event["owner"])
            if last is not None and last["done"]:
                return
            traversal["owner"][event["owner"]] = event
            self._view.draw(event["traversal"], traversal)


def _done(traversal) -> bool:
    owners = traversal["owner"]
    return all(e["done"] for e in owners.values()) and (
        len(owners) == traversal["event"]["owners"] or any(e.get("failed") for e in owners.values()))


def _share(event, owners) -> float | None:
    """How much of its own vertices an owner has reached: 1 when done, None when unknown."""
    if event["done"]:
        return 0.0 if event.get("failed") else 1.0
    vertices = (event.get("query") or {}).get("vertices")
    if not vertices or event.get("reached") is None:
        return None
    return min(1.0, event["reached"] * owners / vertices)


def _owner_text(event) -> str:
    word = "step" if event["algorithm"] == "sssp" else "level"
    reached = "" if event.get("reached") is None else f", {event['reached']:,} reached"
    end = f" failed ({event['failed']})" if event.get("failed") else " done" if event["done"] else ""
    level = "" if event["level"] is None else f"{word} {event['level']}"  # one owner's SSSP counts no steps
    return f"{level}{reached}{end}".lstrip(", ")


def _title(traversal) -> str:
    first = traversal["event"]
    query = first.get("query") or {}
    sources = f" from {query['sources']}" if query.get("sources") else ""
    return f"{first['algorithm']}{sources}"


class _Terminal:
    """One line per traversal on a text stream, rewritten in place until the traversal ends."""

    def __init__(self, out):
        self.out = out
        self.current = None  # the traversal whose line is being rewritten

    def draw(self, key, traversal):
        if self.current is not None and self.current != key:
            self.out.write("\n")
        self.current = key
        owners = traversal["event"]["owners"]
        parts = []
        for p in sorted(traversal["owner"]):
            event = traversal["owner"][p]
            share = _share(event, owners)
            filled = 0 if share is None else round(share * WIDTH)
            bar = "#" * filled + "-" * (WIDTH - filled)
            who = f"owner {p}/{owners} " if owners > 1 else ""
            parts.append(f"{who}[{bar}] {_owner_text(event)}")
        elapsed = max(e["elapsed_s"] for e in traversal["owner"].values())
        self.out.write(f"\r{_title(traversal)}: {' | '.join(parts)}, {elapsed:.1f} s\x1b[K")
        if _done(traversal):
            self.out.write("\n")
            self.current = None
        self.out.flush()

    def close(self):
        if self.current is not None:
            self.out.write("\n")
            self.out.flush()
        self.current = None


class _Widget:
    """One ipywidgets row per owner of each traversal, shown in the notebook's output."""

    def __init__(self):
        import ipywidgets
        from IPython.display import display

        self.widgets = ipywidgets
        self.box = ipywidgets.VBox([])
        self.rows: dict = {}
        display(self.box)

    def draw(self, key, traversal):
        owners = traversal["event"]["owners"]
        for p, event in sorted(traversal["owner"].items()):
            row = self.rows.get((key, p))
            if row is None:
                who = f" owner {p}/{owners}" if owners > 1 else ""
                label = self.widgets.Label(f"{_title(traversal)}{who}")
                bar = self.widgets.FloatProgress(min=0.0, max=1.0, value=0.0)
                text = self.widgets.Label("")
                row = self.rows[(key, p)] = (bar, text)
                self.box.children = (*self.box.children, self.widgets.HBox([label, bar, text]))
            bar, text = row
            share = _share(event, owners)
            bar.value = 0.0 if share is None else share
            bar.bar_style = "success" if event["done"] else ""
            text.value = f"{_owner_text(event)}, {event['elapsed_s']:.1f} s"

    def close(self):
        pass


def _subscribed(dask_scheduler, client_id, topic):
    try:
        return client_id in dask_scheduler._broker._topics[topic].subscribers
    except AttributeError:  # Dask keeps them elsewhere now: do not wait
        return True


def _wait_subscribed(client, topic, timeout=SUBSCRIBE_S):
    """Wait until the scheduler has taken this client's subscription (sent without an answer),
    so that the first traversal's start is not published before it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if client.run_on_scheduler(_subscribed, client_id=client.id, topic=topic):
                return
        except Exception:  # a scheduler without gpipe cannot run the check: do not wait
            return
        time.sleep(0.01)


def _active_client():
    if "distributed" not in sys.modules:  # no client without it
        return None
    try:
        from distributed import get_client

        return get_client()
    except (ImportError, ValueError):
        return None


def _in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel that can show ipywidgets."""
    try:
        from IPython import get_ipython

        shell = get_ipython()
        if shell is None or type(shell).__name__ != "ZMQInteractiveShell":
            return False
        import ipywidgets  # noqa: F401
    except ImportError:
        return False
    return True
