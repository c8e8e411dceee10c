"""gpipe.bench_inputs: every form of a small graph builds, and builds the same BFS."""

from gpipe import bench_inputs


def test_every_form_builds_the_same_graph(capsys):
    assert bench_inputs.main(["--scale", "8", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert out.count("same BFS") == len(bench_inputs.FORMS)
