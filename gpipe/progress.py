"""Progress of a traversal while it runs: log records and Dask worker events.

Owner tasks call :func:`level` after each level (or relaxation round) and :func:`done` at the
end. Each call becomes a ``logging`` record under the ``gpipe.progress`` logger of the process
that runs the owner (the worker's log, or this process without a cluster) and, on a Dask
worker, an event on the topic :data:`TOPIC` (``distributed.Worker.log_event``), which the
scheduler keeps and forwards to subscribed clients: :func:`follow` subscribes, and the Dask
dashboard lists the events. Levels are reported at most every :data:`EVERY_S` seconds per
owner (and always the last), so a traversal of many short levels sends few events.

An event is a dict: ``traversal`` (the id of one call), ``algorithm`` (``"bfs"``/``"sssp"``),
``owner``, ``owners``, ``level``, ``frontier`` (vertices active on this owner), ``reached``
(vertices this owner has reached so far, where known, else None), ``elapsed_s``, and ``done``.

What ``level`` counts depends on the algorithm and on ``done``. BFS: while running, the level
being expanded (the distance of its frontier); at the end, the deepest level reached (the
largest distance of this owner's vertices: levels that found nothing do not count). SSSP
(:func:`describe` says "step"): while running, the step (message round between owners)
under way, from 0; at the end, the number of steps; None when the kernel counts none (one
owner: the whole search is one kernel call).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

TOPIC = "gpipe-progress"
EVERY_S = 0.5
DONE_DELAY_S = 0.005  # how long after its call an owner's "done" event leaves a worker

log = logging.getLogger("gpipe.progress")


@dataclass
class Reporter:
    """One owner's progress in one traversal; made by the driver, used in the owner's task."""

    traversal: str
    algorithm: str
    owner: int = 0
    owners: int = 1
    _start: float = field(default=0.0, repr=False)
    _last: float = field(default=0.0, repr=False)

    @property
    def enabled(self) -> bool:
        """Whether anyone can see a report: a Dask worker (events), or a log handler here."""
        return log.isEnabledFor(logging.INFO) or _on_worker()

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

    def _emit(self, level, frontier, reached, done):
        event = {"traversal": self.traversal, "algorithm": self.algorithm, "owner": self.owner,
                 "owners": self.owners, "level": None if level is None else int(level),
                 "frontier": int(frontier),
                 "reached": None if reached is None else int(reached),
                 "elapsed_s": time.monotonic() - self._start, "done": done}
        log.info("%s", describe(event), extra={"gpipe_progress": event})
        worker = _on_worker()
        if worker is None:
            return
        if done:
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
    if not event["done"]:
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
