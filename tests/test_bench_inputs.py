"""gpipe.tools.bench_inputs: every form of a small graph builds, and builds the same BFS."""

from gpipe.tools import bench_inputs


def test_every_form_builds_the_same_graph(capsys):
    assert bench_inputs.main(["--scale", "8", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert out.count("same BFS") == len(bench_inputs.FORMS)


def test_forms_agree_when_parents_differ_but_both_trees_are_valid():
    import pandas as pd

    edges = pd.DataFrame({"src": [0, 0, 1, 2], "dst": [1, 2, 3, 3]})
    def bfs(parent_of_3):
        return pd.DataFrame({"vertex": [0, 1, 2, 3], "distance": pd.array([0, 1, 1, 2], dtype="Int32"),
                             "parent": pd.array([None, 0, 0, parent_of_3], dtype="Int64")})
    assert bench_inputs.same_bfs(edges, bfs(1), bfs(2), 0)
    assert not bench_inputs.same_bfs(edges, bfs(1), bfs(0), 0), "3's parent 0 is no edge one level up"
