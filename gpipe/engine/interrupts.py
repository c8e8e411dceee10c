"""Ctrl-C (SIGINT) in gpipe's commands: cleanup that runs whole, and the phases a test interrupts.

A command ends on Ctrl-C with the one line ``gpipe: interrupted`` and exit status 130, whatever
it was doing (:mod:`gpipe.tools.cli`). ``KeyboardInterrupt`` unwinds it, and the ``finally`` blocks on
its way remove the output's temporary directory and close the cluster; within
:func:`deferred_interrupt`, a Ctrl-C waits for such a cleanup to end rather than cut it short.

:func:`phase` is the hook by which tests send SIGINT at a chosen moment of a command: with
``GPIPE_PHASES`` set in the environment, each phase that begins writes ``gpipe: phase NAME`` to
stderr, and the phase that ``GPIPE_PHASES`` names pauses there (60 s, or until interrupted).
Phases: ``imports``, ``cluster`` (a local cluster starts), ``read``, ``traverse``, ``write``
(the result is in its temporary directory, not yet moved into place) and ``done`` (after the
summary).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time

__all__ = ["deferred_interrupt", "phase", "PHASES_ENV"]

PHASES_ENV = "GPIPE_PHASES"


def phase(name: str) -> None:
    """Mark the start of a command's phase `name` for a test (module docstring); else nothing."""
    wanted = os.environ.get(PHASES_ENV)
    if not wanted:
        return
    try:
        print(f"gpipe: phase {name}", file=sys.stderr, flush=True)
    except (OSError, ValueError):  # stderr is a pipe nobody reads any more: pause all the same
        pass
    if wanted == name:
        time.sleep(60)


@contextlib.contextmanager
def deferred_interrupt():
    """Ctrl-C within the block takes effect at its end: the block runs whole, then SIGINT's
    handler runs (``KeyboardInterrupt``, by default).

    For cleanup that must not stop half-way: closing a cluster (its workers would outlive the
    command), moving an output into place or removing a temporary one. Outside the main thread,
    where Python runs no signal handler, and where SIGINT is ignored, the block runs as it is.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous):  # SIG_IGN, SIG_DFL, or not set from Python
        yield
        return
    received = []
    signal.signal(signal.SIGINT, lambda signum, frame: received.append(frame))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if received:
            previous(signal.SIGINT, received[0])
