"""Atomic operations on NumPy array elements for Numba-compiled CPU kernels.

Numba offers atomics only on CUDA (numba/numba#2988), so these emit LLVM's ``atomicrmw``,
``cmpxchg`` and atomic ``store`` directly. Each takes an array and an index and acts on that
one element, sequentially consistent unless the name says otherwise; no bounds check.
"""

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


def _integer_array(array):
    return isinstance(array, types.Array) and isinstance(array.dtype, types.Integer)


def _element(context, builder, signature, args):
    """Pointer to ``args[0][args[1]]`` and the LLVM integer type of the array's elements."""
    array_type, index_type = signature.args[:2]
    data = context.make_array(array_type)(context, builder, args[0])
    index = context.cast(builder, args[1], index_type, types.intp)
    pointer = cgutils.get_item_pointer(context, builder, array_type, data, [index], wraparound=False)
    return pointer, ir.IntType(array_type.dtype.bitwidth)


def _fetch_and(operation):
    """An intrinsic ``(array, index, value)`` that applies LLVM's ``atomicrmw <operation>`` to
    ``array[index]`` and returns the value it held before (integer arrays)."""

    @intrinsic
    def fetch(typingctx, array, index, value):
        if not _integer_array(array):
            return None

        def codegen(context, builder, signature, args):
            array_type, _, value_type = signature.args
            pointer, _ = _element(context, builder, signature, args)
            value = context.cast(builder, args[2], value_type, array_type.dtype)
            return builder.atomic_rmw(operation, pointer, value, "seq_cst")

        return array.dtype(array, index, value), codegen

    return fetch


fetch_add = _fetch_and("add")  # old = array[index]; array[index] += value; return old
fetch_or = _fetch_and("or")  # old = array[index]; array[index] |= value; return old


@intrinsic
def compare_and_swap(typingctx, array, index, expected, value):
    """If ``array[index] == expected``, store ``value`` there; return whether it did, atomically
    (integer arrays)."""
    if not _integer_array(array):
        return None

    def codegen(context, builder, signature, args):
        array_type, _, expected_type, value_type = signature.args
        pointer, _ = _element(context, builder, signature, args)
        old = context.cast(builder, args[2], expected_type, array_type.dtype)
        new = context.cast(builder, args[3], value_type, array_type.dtype)
        pair = builder.cmpxchg(pointer, old, new, "seq_cst", "seq_cst")
        return builder.extract_value(pair, 1)

    return types.boolean(array, index, expected, value), codegen


def _on_element(array, index, result, emit):
    """What an intrinsic ``(array, index)`` returns: its signature, ``result(array, index)``, and
    a codegen that hands ``emit(context, builder, pointer, width)`` the element's pointer and
    LLVM integer type; None (no match) unless `array` is an integer array."""
    if not _integer_array(array):
        return None

    def codegen(context, builder, signature, args):
        pointer, width = _element(context, builder, signature, args)
        return emit(context, builder, pointer, width)

    return result(array, index), codegen


@intrinsic
def try_lock(typingctx, array, index):
    """Set ``array[index]`` from 0 to 1 if it is 0 (acquire); return whether it was set."""

    def emit(context, builder, pointer, width):
        pair = builder.cmpxchg(pointer, width(0), width(1), "acquire", "monotonic")
        return builder.extract_value(pair, 1)

    return _on_element(array, index, types.boolean, emit)


@intrinsic
def unlock(typingctx, array, index):
    """Store 0 into ``array[index]`` with release ordering: writes before it are seen first."""

    def emit(context, builder, pointer, width):
        builder.store_atomic(width(0), pointer, "release", width.width // 8)
        return context.get_dummy_value()

    return _on_element(array, index, types.none, emit)
