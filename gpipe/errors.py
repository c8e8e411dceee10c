"""Exceptions raised by gpipe."""


class GpipeError(Exception):
    """Base class of every error gpipe raises on purpose."""


class InputError(GpipeError, ValueError):
    """The edges, a column, a source or an option is not usable; the message names which."""


class NegativeCycleError(GpipeError):
    """A cycle of negative total weight is reachable from a source, so shortest paths are undefined."""


class GraphTooLarge(InputError):
    """The graph cannot fit the memory of the workers that would own it; raised before building.

    The message names the bytes each owner would need and the bytes the workers have.
    """


class GraphLost(GpipeError):
    """Partitions of a graph were lost with their worker and cannot be rebuilt from its input.

    The message names the partition and the worker; build the graph again from its edges.
    """


class OutOfMemory(MemoryError, GpipeError):
    """A worker ran out of memory (host or device) building or traversing a graph.

    The message names the worker or partition and, where known, the sizes involved.
    """
