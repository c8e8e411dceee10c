"""Progress of a traversal while it runs: log records and Dask worker events.

Users know this module as ``gpipe.progress``: ``gpipe/__init__.py`` registers it under that
name too (the same module object, not a copy).

Owner tasks call :func:`level` after each level (or relaxation round) and :func:`done` at the
end. Each call becomes a ``logging`` record under the ``gpipe.progress`` logger of the process
that runs the owner (the worker's log, or this process without a cluster) and, on a Dask
worker, an event on the topic :data:`TOPIC` (``distributed.Worker.log_event``), which the
scheduler keeps and forwards to subscribed clients: :func:`follow` subscribes, and gpipe's
page on the Dask dashboard (:mod:`gpipe.watch.dashboard`) lists them. Levels are reported at
most every :data:`EVERY_S` seconds per owner (and always the last), so a traversal of many
short levels sends few events.

An event is a dict: ``traversal`` (the id of one call), ``algorithm`` (``"bfs"``/``"sssp"``),
``owner``, ``owners``, ``level``, ``frontier`` (vertices active on this owner), ``reached``
(vertices this owner has reached so far, where known, else None), ``elapsed_s``, and ``done``;
``at`` (the wall-clock time of the event, ``time.time()``), ``query`` (what the driver said
about the query through :func:`query`: graph, sources, span; None where it said nothing),
``worker`` (the address of the owner's worker, on a cluster) and, in the end event of an
owner whose traversal raised, ``failed`` (the error's type).
A traversal reports its start at once (:meth:`Reporter.start`, level 0), so a watcher sees it
begin. :func:`bar` draws the events where a person waits. Without a worker, the events also go to the listeners of this
process (:func:`add_listener`).

What ``level`` counts depends on the algorithm and on ``done``. BFS: while running, the level
being expanded (the distance of its frontier); at the end, the deepest level reached (the
largest distance of this owner's vertices: levels that found nothing do not count). SSSP
(:func:`describe` says "step"): while running, the step (message round between owners)
under way, from 0; at the end, the number of steps; None when the kernel counts none (one
owner: the whole search is one kernel call).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import sys
import time
from dataclasses import dataclass, field

# What gpipe.progress, the public name of this module, hands out.
__all__ = ["add_listener", "bar", "current_query", "describe", "DONE_DELAY_S", "ending_on_error",
           "EVERY_S", "follow", "log", "query", "remove_listener", "Reporter", "set_query", "TOPIC"]

TOPIC = "gpipe-progress"
EVERY_S = 0.5
DONE_DELAY_S = 0.005  # how long after its call an owner's "done" event leaves a worker

log = logging.getLogger("gpipe.progress")
_query = contextvars.ContextVar("gpipe_progress_query", default=None)
_listeners: list = []  # callables given every event of this process's own traversals
_started = contextvars.ContextVar("gpipe_progress_started", default=None)


@contextlib.contextmanager
def query(info: dict | None):
    """Within this context, traversals started here report ``info`` as their ``query`` (a
    small msgpack-able dict: ``graph``, ``sources``, ``span``)."""
    token = _query.set(info)
    try:
        yield
    finally:
        _query.reset(token)


def set_query(info: dict | None) -> None:
    """Make ``info`` the :func:`current_query` of this context from now on (a thread that runs
    a query another process started: its context is its own copy)."""
    _query.set(info)


def current_query() -> dict | None:
    """The ``info`` of the innermost :func:`query` context, else None."""
    return _query.get()


@contextlib.contextmanager
def ending_on_error():
    """Within it, reporters started here that have not reported their end report a failed one
    (``failed``: the error's type) when the block raises; gpipe runs every task in one."""
    started = []
    token = _started.set(started)
    try:
        yield
    except BaseException as error:
        for reporter in started:
            reporter.failed(error)
        raise
    finally:
        _started.reset(token)


def add_listener(callback) -> None:
    """Call ``callback(event)`` for every event of a traversal that runs in this process
    without a Dask worker (a graph built without a client); :func:`remove_listener` stops it."""
    _listeners.append(callback)


def remove_listener(callback) -> None:
    with contextlib.suppress(ValueError):
        _listeners.remove(callback)


@dataclass
class Reporter:
    """One owner's progress in one traversal; made by the driver, used in the owner's task."""

    traversal: str
    algorithm: str
    owner: int = 0
    owners: int = 1
    query: dict | None = field(default_factory=current_query, repr=False)
    _start: float = field(default=0.0, repr=False)
    _last: float = field(default=0.0, repr=False)
    _ended: bool = field(default=False, repr=False)
    _level: int = field(default=0, repr=False)  # the last one reported

    @property
    def enabled(self) -> bool:
        """Whether anyone can see a report: a Dask worker (events), a log handler or a
        listener here."""
        return log.isEnabledFor(logging.INFO) or bool(_listeners) or _on_worker() is not None

    def start(self, frontier: int = 0) -> None:
        """Report the start of this owner's traversal (level 0, ``frontier`` sources) now: one
        event, sent from the worker's event loop, so the caller does not wait for it."""
        self._start = time.monotonic()  # the first level is reported as before, at once
        started = _started.get()
        if started is not None:
            started.append(self)
        if self.enabled:
            self._emit(0, frontier, None, done=False, later=True)

    def level(self, level: int, frontier: int, reached: int | None = None) -> None:
        """Report level ``level`` if :data:`EVERY_S` passed since the last report."""
        now = time.monotonic()
        if not self._start:
            self._start = now
        if now - self._last < EVERY_S:
            return
        self._last = now
        self._emit(level, frontier, reached, done=False)

    def done(self, level: int | None, reached: int | None = None) -> None:
        """Report the end of this owner's traversal: BFS, the deepest level reached; SSSP, the
        steps taken, or None where they are not counted (the module docstring)."""
        if not self._start:
            self._start = time.monotonic()
        self._emit(level, 0, reached, done=True)

    def failed(self, error: BaseException) -> None:
        """Report the end of a traversal that raised ``error`` (unless its end was reported)."""
        if not self._ended and self.enabled:
            self._emit(self._level, 0, None, done=True, failed=type(error).__name__)

    def _emit(self, level, frontier, reached, done, later=False, failed=None):
        self._ended, self._level = self._ended or done, level
        event = {"traversal": self.traversal, "algorithm": self.algorithm, "owner": self.owner,
                 "owners": self.owners, "level": None if level is None else int(level),
                 "frontier": int(frontier),
                 "reached": None if reached is None else int(reached),
                 "elapsed_s": time.monotonic() - self._start, "done": done,
                 "at": time.time(), "query": self.query}
        if failed is not None:
            event["failed"] = failed
        log.info("%s", describe(event), extra={"gpipe_progress": event})
        worker = _on_worker()
        if worker is None:
            for listener in list(_listeners):
                listener(event)
            return
        event["worker"] = worker.address
        if later:  # from the loop's thread, as soon as it gets to it
            worker.loop.add_callback(worker.log_event, TOPIC, event)
        elif done:
            # The owner's task ends right after this report. The worker sends the scheduler at
            # most one batch of messages per 2 ms, so an event sent now would hold the task's
            # end back by up to that: it goes after it instead.
            # (add_callback is the loop's thread-safe door; call_later must run on the loop.)
            worker.loop.add_callback(worker.loop.call_later, DONE_DELAY_S, worker.log_event, TOPIC,
                                     event)
        else:
            worker.log_event(TOPIC, event)


def _on_worker():
    """The Dask worker running this code, or None."""
    if "distributed" not in sys.modules:  # no worker without it; importing it costs ~0.3 s
        return None
    try:
        from distributed import get_worker

        return get_worker()
    except (ImportError, ValueError):
        return None


def describe(event: dict) -> str:
    """One line for a progress event.

    Examples
    --------
    >>> event = {"algorithm": "bfs", "owner": 0, "owners": 2, "level": 12, "frontier": 9,
    ...          "reached": 4096, "elapsed_s": 1.5, "done": False}
    >>> describe(event)
    'bfs: at level 12, 4,096 reached on owner 0/2, 1.5 s'
    >>> describe({**event, "done": True})
    'bfs: done, deepest level 12, 4,096 reached on owner 0/2, 1.5 s'
    >>> describe({**event, "algorithm": "sssp", "done": True, "level": 7, "owners": 1})
    'sssp: done after 7 steps, 4,096 reached, 1.5 s'
    """
    where = f" on owner {event['owner']}/{event['owners']}" if event["owners"] > 1 else ""
    reached = "" if event["reached"] is None else f", {event['reached']:,} reached"
    level, bfs = event["level"], event["algorithm"] == "bfs"
    if event.get("failed"):
        state = f"failed ({event['failed']})"
    elif not event["done"]:
        state = f"at {'level' if bfs else 'step'} {level}"
    elif level is None:
        state = "done"
    elif bfs:
        state = f"done, deepest level {level}"
    else:
        state = f"done after {level} step{'' if level == 1 else 's'}"
    return f"{event['algorithm']}: {state}{reached}{where}, {event['elapsed_s']:.1f} s"


def follow(client, callback):
    """Call ``callback(event)`` on this client for every progress event from now on.

    Returns a function that stops following. The callback runs on the client's event loop:
    keep it short (print, update a widget).
    """
    def handler(event):
        _, payload = event
        callback(payload)

    client.subscribe_topic(TOPIC, handler)
    return lambda: client.unsubscribe_topic(TOPIC)


def bar(client=None, out=None, widget=None):
    """A live progress bar of the traversals run within it, like ``dask.diagnostics.ProgressBar``.

    Each traversal gets a line on ``out`` (stderr by default), rewritten in place while it
    runs: one bar per owner, its level (BFS) or step (SSSP), the vertices it reached where
    known, and the seconds so far. In a Jupyter notebook with ipywidgets installed it shows a
    widget row per owner instead.

    Parameters
    ----------
    client : distributed.Client, optional
        The client whose cluster runs the traversals; default: the active client, if any.
        Traversals that run in this process (graphs built without a client) are drawn too.
    out : text stream, optional
        Where the terminal bar goes (default ``sys.stderr``).
    widget : bool, optional
        Draw an ipywidgets widget (True) or a terminal line (False); default: a widget in a
        Jupyter kernel where ipywidgets is installed.

    Returns
    -------
    gpipe.watch.progress_bar.ProgressBar
        A context manager; on leaving it waits up to half a second for the last traversal's
        end to arrive from the workers.

    Examples
    --------
    >>> import gpipe, pandas as pd
    >>> g = gpipe.Graph.from_edges(pd.DataFrame({"src": [0, 1], "dst": [1, 2], "w": [1.0, 1.0]}), weight="w")
    >>> with gpipe.progress.bar():  # doctest: +SKIP
    ...     g.sssp(0).compute()
    sssp from 0: [####################] 3 reached done, 0.0 s
    """
    import sys

    from gpipe.watch.progress_bar import ProgressBar

    return ProgressBar(sys.modules[__name__], client=client, out=out, widget=widget)
