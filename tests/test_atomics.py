"""Numba atomics (gpipe/engine/compute/atomics.py): exact under contention from parallel threads."""

import numba
import numpy as np
import pytest

from gpipe.engine.compute.atomics import compare_and_swap, fetch_add, fetch_or, try_lock, unlock


@numba.njit(parallel=True)
def _tickets(n, counter, tickets):
    for i in numba.prange(n):
        tickets[i] = fetch_add(counter, 0, 1)


@numba.njit(parallel=True)
def _locked_sums(n, locks, sums):
    for i in numba.prange(n):
        k = i % sums.size
        while not try_lock(locks, k):
            pass
        sums[k] += 1.0  # a plain read-modify-write: only the lock keeps it exact
        unlock(locks, k)


@numba.njit(parallel=True)
def _claims(n, slots, winners):
    for i in numba.prange(n):
        if compare_and_swap(slots, i % slots.size, -1, i):
            winners[i] = 1


@numba.njit(parallel=True)
def _set_bits(n, words):
    for i in numba.prange(n):
        fetch_or(words, i % words.size, np.int64(1) << (i // words.size))


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_compare_and_swap_has_one_winner_per_slot(dtype):
    n = 300_000
    slots = np.full(7, -1, dtype=dtype)
    winners = np.zeros(n, dtype=np.int8)
    _claims(n, slots, winners)
    assert winners.sum() == slots.size
    np.testing.assert_array_equal(np.sort(np.flatnonzero(winners)), np.sort(slots))  # each wrote itself
    np.testing.assert_array_equal(slots % slots.size, np.arange(slots.size))


def test_fetch_or_keeps_every_bit():
    words = np.zeros(5000, dtype=np.int64)
    _set_bits(5000 * 64, words)
    np.testing.assert_array_equal(words, -1)  # all 64 bits of every word


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_fetch_add_hands_out_every_ticket_once(dtype):
    n = 200_000
    counter = np.zeros(1, dtype=dtype)
    tickets = np.empty(n, dtype=np.int64)
    _tickets(n, counter, tickets)
    assert counter[0] == n
    np.testing.assert_array_equal(np.sort(tickets), np.arange(n))


@pytest.mark.parametrize("lock_dtype", [np.uint8, np.int32])
def test_lock_makes_updates_exclusive(lock_dtype):
    n = 400_000
    locks = np.zeros(3, dtype=lock_dtype)
    sums = np.zeros(3)
    _locked_sums(n, locks, sums)
    np.testing.assert_array_equal(sums, [n // 3 + 1, n // 3, n // 3])
    np.testing.assert_array_equal(locks, 0)


def test_try_lock_fails_while_held():
    @numba.njit
    def twice(locks):
        first = try_lock(locks, np.int32(1))
        second = try_lock(locks, 1)
        unlock(locks, 1)
        return first, second, try_lock(locks, 1)

    assert twice(np.zeros(2, dtype=np.uint8)) == (True, False, True)
