"""``gpipe bench``: an owner's build peak, phase by phase.

The build is a chain of Dask tasks (:mod:`gpipe.partitioning.build`): the input read, its survey
and distinct ids, the split of each input partition into per-owner buckets, the cuts that take
one owner's buckets out of a split, the buckets received from the other workers, and the CSR
written from them. Dask's task stream says when each ran on which worker;
:mod:`gpipe.tools.bench_memory` samples each worker's memory with the time of each sample. A
phase's peak on a worker is the highest sample taken there while one of its tasks ran (or, for
a task shorter than the sampling period, the sample just before it ended), less the memory in
use when sampling began. Phases overlap where tasks do: a worker may split its input while its
peers' buckets arrive.
"""

from __future__ import annotations

from dask.utils import key_split

# Task names (gpipe.engine.tasks.task_name, gpipe.io.read.READ_LABEL) -> phase, in build order.
PHASES = {
    "gpipe-read-edges": "read",
    "gpipe-survey": "survey",
    "gpipe-ids": "ids",
    "gpipe-shuffle": "split",
    "gpipe-shuffle-part": "cut",
    "gpipe-build": "csr",
}
# Where the dependencies a task fetched from other workers arrived (Dask's "transfer" spans).
RECEIVED = {"gpipe-shuffle-part": "cut", "gpipe-build": "receive"}
ORDER = ("read", "survey", "ids", "split", "cut", "receive", "csr")


def spans(stream) -> dict:
    """``{worker: {phase: [(start, stop), ...]}}`` of the build's tasks in ``stream`` (the
    records of :func:`distributed.get_task_stream`); tasks of no phase are left out."""
    found = {}
    for task in stream:
        name = key_split(task["key"])
        for span in task.get("startstops", ()):
            phase = PHASES.get(name) if span["action"] == "compute" else \
                RECEIVED.get(name) if span["action"] == "transfer" else None
            if phase is not None:
                found.setdefault(task["worker"], {}).setdefault(phase, []).append((span["start"], span["stop"]))
    return found


def phase_peaks(timeline, phase_spans) -> dict:
    """``{phase: bytes}`` on one worker, in build order: the highest sample of ``timeline``
    (:func:`gpipe.tools.bench_memory.stop_timeline`) within the phase's spans, less the memory
    in use at its start."""
    samples = timeline["samples"]
    peaks = {}
    for phase in ORDER:
        highest = None
        for start, stop in phase_spans.get(phase, ()):
            inside = [used for t, used in samples if start <= t <= stop]
            if not inside:
                before = [used for t, used in samples if t <= stop]
                inside = before[-1:]
            if inside:
                highest = max(inside) if highest is None else max(highest, *inside)
        if highest is not None:
            peaks[phase] = highest - timeline["start"]
    return peaks


def owner_phase_peaks(timelines: dict, stream, owners: list) -> list:
    """Per owner (``owners``: their workers' addresses, in owner order), ``{phase: bytes}``;
    an owner whose worker left no samples gets None."""
    by_worker = spans(stream)
    return [None if timelines.get(address) is None else
            phase_peaks(timelines[address], by_worker.get(address, {})) for address in owners]
