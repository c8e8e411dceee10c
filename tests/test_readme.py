"""The README runs: its Python snippets, its command-line synopsis and its figures.

The snippets are executed in order, in one namespace, in a folder holding ``edges/``: the
graph that ``gpipe demo`` writes (Kronecker scale 16, edge factor 16, seed 0, weights), so
every id the README uses is one of the demo's. Names the README leaves to the reader
(``flagged``, a frame of accounts; ``g`` and ``source`` in the progress-bar snippet) are
given here (:data:`GIVEN`). The cluster snippet runs with ``__name__ == "__main__"`` on a
one-worker, in-process ``LocalCluster`` standing in for ``start_local_cluster`` (spawning
worker processes would take most of this test's time). Snippets that need a GPU would be
skipped where none is usable (:func:`needs_gpu`): none of them does today.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pandas as pd
import pytest

import gpipe
from conftest import gpu_available

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
BENCHMARKS = (ROOT / "BENCHMARKS.md").read_text()


def python_snippets(text=README) -> list:
    """The ```python blocks of ``text``, dedented (list items indent theirs), in order."""
    blocks = re.findall(r"^( *)```python\n(.*?)^\1```", text, flags=re.S | re.M)
    return [textwrap.dedent(code) for _, code in blocks]


def needs_gpu(code) -> bool:
    """A snippet that only runs on a GPU: it asks for the GPU backend or a CUDA cluster."""
    return 'backend="gpu"' in code or "LocalCUDACluster(" in code


@pytest.fixture(scope="module")
def demo_folder(tmp_path_factory):
    """A folder whose ``edges/`` is the demo's graph, written as ``gpipe demo`` writes it."""
    import dask.dataframe as dd

    from gpipe.generators import kronecker_edges
    from gpipe.io.write import write_parquet

    folder = tmp_path_factory.mktemp("readme")
    edges = kronecker_edges(16, 16, seed=0, weights=True)
    write_parquet(dd.from_pandas(edges, npartitions=2), folder / "edges")
    return folder


def given(namespace) -> dict:
    """The names the README leaves to the reader, made from what its snippets made so far."""
    import dask.dataframe as dd

    return {
        "flagged": dd.from_pandas(pd.DataFrame({"account": [0, 7, 17]}), npartitions=1),
        "g": namespace.get("graph"),
        "source": 0,
    }


@pytest.fixture
def small_cluster(monkeypatch):
    """``gpipe.cluster.start_local_cluster`` made a one-worker, in-process LocalCluster."""
    import gpipe.cluster
    from distributed import Client, LocalCluster

    started = []

    def start_local_cluster(*args, **kwargs):
        cluster = LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0")
        started.append((cluster, Client(cluster)))
        return started[-1]

    monkeypatch.setattr(gpipe.cluster, "start_local_cluster", start_local_cluster)
    yield started
    for cluster, client in started:
        client.close()
        cluster.close()


def test_the_readme_has_its_snippets():
    snippets = python_snippets()
    assert len(snippets) >= 5
    assert any("gpipe.to_parquet(" in code for code in snippets[:1])  # the Quick start writes safely


def test_every_python_snippet_runs_against_the_demo_graph(demo_folder, monkeypatch, small_cluster):
    monkeypatch.chdir(demo_folder)
    namespace = {"__name__": "readme"}
    ran = 0
    for i, code in enumerate(python_snippets()):
        if needs_gpu(code) and not gpu_available():
            continue  # explicitly: the GPU backend cannot run without a GPU
        namespace.update({k: v for k, v in given(namespace).items() if namespace.get(k) is None})
        if "__main__" in code:
            namespace["__name__"] = "__main__"  # the cluster snippet, on small_cluster
        try:
            exec(compile(code, f"README.md python snippet {i + 1}", "exec"), namespace)
        finally:
            namespace["__name__"] = "readme"
            for cluster, client in small_cluster:  # later snippets run without a cluster
                client.close()
                cluster.close()
            small_cluster.clear()
        ran += 1
    assert ran == len(python_snippets())
    # What the snippets wrote is there, and the edges they read are untouched.
    assert (demo_folder / "out" / "bfs").is_dir() and (demo_folder / "out" / "two-hop").is_dir()
    assert len(gpipe.read_edges(demo_folder / "edges", backend="cpu")) == 16 * 2**16


def test_the_readme_ids_are_in_the_demo_graph(demo_folder):
    edges = pd.read_parquet(demo_folder / "edges")
    present = set(edges["src"]) | set(edges["dst"])
    for source in (0, 7, 12, 17, 19, 99):  # the ids of the snippets
        assert source in present


def synopsis() -> dict:
    """Option strings of each command in the README's command-line synopsis."""
    section = README[README.index("## Command line"):]
    block = section[section.index("```\n") + 4:]
    block = block[:block.index("```")]
    commands, current = {}, None
    for line in block.splitlines():
        words = line.split()
        if words[:1] == ["gpipe"]:
            current = words[1] if len(words) > 1 and words[1].isalpha() else ""
            commands[current] = set()
        if current is not None:
            commands[current] |= set(re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", line))
    return commands


def parser_options() -> dict:
    from gpipe.tools.cli import make_parser

    parser = make_parser()
    found = {"": {o for a in parser._actions for o in a.option_strings if o.startswith("-")}}
    commands = next(a for a in parser._actions if a.choices and hasattr(a, "_name_parser_map"))
    for name, sub in commands.choices.items():
        found[name] = {o for a in sub._actions for o in a.option_strings}
    return found


def test_the_cli_synopsis_matches_the_parser():
    written, real = synopsis(), parser_options()
    assert set(written) == set(real), "a command is missing from the synopsis, or is not a command"
    for command, options in real.items():
        if command == "bench":  # the synopsis points to its own section and --help
            continue
        expected = {o for o in options if o not in ("-h", "--help")}
        # A long and short form of one option (-q/--quiet): the synopsis may give either.
        pairs = {("-q", "--quiet")}
        for short, long in pairs:
            if short in expected and long in expected:
                expected.discard(long)
        assert written[command] == expected, f"gpipe {command}".strip()


# Figures in seconds or milliseconds that the README may state without BENCHMARKS.md: Dask's
# own constants, not measurements.
NOT_MEASURED = {"10 ms"}  # Dask's client sends the scheduler one batch of messages per 10 ms


def test_figures_the_readme_quotes_are_in_benchmarks():
    """Every time (``N s``, ``N ms``) in a README paragraph that cites BENCHMARKS.md is there."""
    paragraphs = re.split(r"\n\s*\n|\n- ", README)
    checked = 0
    for paragraph in paragraphs:
        if "BENCHMARKS.md" not in paragraph:
            continue
        text = " ".join(paragraph.split())
        for figure in re.findall(r"(?<![\w.])(\d+(?:\.\d+)?) ?(ms|s)\b", text):
            quoted = f"{figure[0]} {figure[1]}"
            if quoted in NOT_MEASURED:
                continue
            checked += 1
            assert re.search(rf"(?<![\w.]){re.escape(figure[0])} ?{figure[1]}\b", BENCHMARKS), \
                f"README quotes {quoted} ({text[:80]}...), which BENCHMARKS.md does not have"
    assert checked >= 2  # the warmup and first-contact figures at least


def test_the_first_screen_gives_the_two_commands_and_ci_runs_the_second():
    """A newcomer's first screen (30 lines) says how to install and run the demo, and how to
    run the tests; CI's entry point runs exactly that test command."""
    first_screen = "\n".join(README.splitlines()[:30])
    demo = "pip install -e '.[test]' && gpipe demo"
    tests = ("python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[test]' && "
             "python -m pytest -q")
    assert demo in first_screen and tests in first_screen
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert tests in ci
