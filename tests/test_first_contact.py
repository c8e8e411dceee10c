"""gpipe.tools.first_contact: one scenario's figures for each input form, in this process."""

import pytest

from gpipe.tools import first_contact


@pytest.mark.parametrize("form", first_contact.INPUTS)
def test_a_scenario_times_the_build_and_both_queries_for_each_input(form):
    figures = first_contact.child(6, ["bfs", "sssp"], "cpu", form)
    for step in ("wrap", "build", "bfs", "sssp"):
        assert figures[step]["first_s"] >= 0 and figures[step]["compiles"] >= 0, step
    for step in ("build", "bfs", "sssp"):
        assert figures[step]["second_s"] > 0, step
    text = first_contact.table({"cold": figures})
    assert "input made in" in text and "first BFS + first SSSP over warm" in text
