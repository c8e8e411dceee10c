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


def test_a_graph_built_without_a_client_never_imports_distributed():
    """A process with no cluster (a notebook, a script on pandas frames) does not pay
    distributed's import (0.5 s) in its first build or query; a client's process registers
    the partitions' serializers when its first executor is made."""
    import subprocess
    import sys

    script = (
        "import sys, pandas as pd, gpipe\n"
        "edges = pd.DataFrame({'src': [0, 1, 2], 'dst': [1, 2, 3], 'w': [1.0, 2.0, 3.0]})\n"
        "g = gpipe.Graph.from_edges(edges, directed=False, weight='w')\n"
        "assert len(g.bfs(0)) == 4 and len(g.sssp(0)) == 4\n"
        "print('distributed' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
