"""Driver-level behaviour: the parent-cycle check behind NegativeCycleError."""

import numpy as np

from gpipe.traverse import _cycle_check_due, _has_parent_cycle


def test_forest_has_no_parent_cycle():
    parent = np.array([-1, 0, 1, 1, -1, 4])
    assert not _has_parent_cycle("cpu", parent)


def test_a_loop_anywhere_is_found_also_across_owners():
    parent = np.array([-1, 0, 3, 4, 2, 2])  # 2 -> 3 -> 4 -> 2
    assert _has_parent_cycle("cpu", parent)
    assert _has_parent_cycle("cpu", parent[:3], parent[3:])


def test_cycle_checks_run_at_powers_of_two():
    assert [r for r in range(1, 200) if _cycle_check_due(r)] == [16, 32, 64, 128]
