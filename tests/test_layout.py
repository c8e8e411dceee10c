"""The package's structure, read from its own imports (ARCHITECTURE.md, "Where things are"):
no import circle among gpipe's modules, imports run down the layers (at most MAX_UPWARD run
up), the library never imports its tools (gpipe/tools/) nor the package ``gpipe`` itself, no
module uses another gpipe module's private names, no module is over MAX_LINES lines, and the
map in ARCHITECTURE.md names every folder and module of the layers."""

from __future__ import annotations

import ast
import functools
import pathlib
import re

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "gpipe"
MAX_LINES = 700


def modules() -> dict:
    """``{dotted name: path}`` of every module of the package (a package by its __init__)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = modules()


@functools.cache
def imports(name: str) -> list:
    """``(module imported, names taken from it)`` for every gpipe import in module ``name``,
    at any depth of the code (a function's own imports too)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names if a.name.split(".")[0] == "gpipe"]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package
                for _ in range(node.level - 1):
                    parent = parent.rpartition(".")[0]
                base = f"{parent}.{base}" if base else parent
            if base.split(".")[0] != "gpipe":
                continue
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                found.append((submodule, []) if submodule in MODULES else (base, [alias.name]))
    return found


@functools.cache
def edges() -> dict:
    return {name: {target for target, _ in imports(name) if target in MODULES and target != name}
            for name in MODULES}


def test_no_import_circle():
    graph, order, low, stack, on_stack, circles = edges(), {}, {}, [], set(), []

    def visit(v):
        order[v] = low[v] = len(order)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in order:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], order[w])
        if low[v] == order[v]:
            circle = []
            while not circle or circle[-1] != v:
                circle.append(stack.pop())
                on_stack.discard(circle[-1])
            if len(circle) > 1:
                circles.append(sorted(circle))

    for name in graph:
        if name not in order:
            visit(name)
    assert circles == []


def test_the_library_imports_neither_its_tools_nor_the_package():
    library = [n for n in MODULES if not n.startswith(("gpipe.tools", "gpipe.__main__")) and n != "gpipe"]
    upward = sorted((n, t) for n in library for t in edges()[n]
                    if t == "gpipe" or t.startswith("gpipe.tools"))
    assert upward == []


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_module_takes_another_modules_private_names(name):
    taken = [(target, names) for target, names in imports(name) if target != name]
    private = [f"{target}.{n}" for target, names in taken for n in names
               if n.startswith("_") and not n.startswith("__")]
    aliases = {}
    for node in ast.walk(ast.parse(MODULES[name].read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "gpipe":
            for alias in node.names:
                if f"{node.module}.{alias.name}" in MODULES:
                    aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    for node in ast.walk(ast.parse(MODULES[name].read_text())):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in aliases and node.attr.startswith("_")
                and not node.attr.startswith("__") and aliases[node.value.id] != name):
            private.append(f"{aliases[node.value.id]}.{node.attr}")
    assert private == []


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_module_is_over_the_line_limit(name):
    assert len(MODULES[name].read_text().splitlines()) <= MAX_LINES


# Folders name the layers, top to bottom (ARCHITECTURE.md, "Where things are"): a module imports
# its own layer and those below it. gpipe.errors imports nothing and lies beneath them all.
LAYERS = ("gpipe.tools", "gpipe", "gpipe.partitioning", "gpipe.io", "gpipe.engine", "gpipe.watch")
BENEATH_ALL = ("gpipe.errors",)
MAX_UPWARD = 2  # the issues' bound (issue 24: 3, issue 35: 2); ARCHITECTURE.md names the ones there are


def layer(name: str) -> str:
    """The layer of module ``name``: the longest of :data:`LAYERS` it lies in."""
    if name == "gpipe.__main__":  # python -m gpipe: the command line
        return "gpipe.tools"
    return max((p for p in LAYERS if name == p or name.startswith(p + ".")), key=len)


def upward_imports() -> list:
    rank = {name: i for i, name in enumerate(LAYERS)}
    return sorted((n, t) for n, targets in edges().items() for t in targets
                  if t not in BENEATH_ALL and rank[layer(t)] < rank[layer(n)])


def test_imports_run_down_the_layers():
    assert len(upward_imports()) <= MAX_UPWARD, upward_imports()


def test_what_lies_beneath_all_layers_imports_nothing_of_gpipe():
    assert {name: edges()[name] for name in BENEATH_ALL} == {name: set() for name in BENEATH_ALL}


def test_the_architecture_map_names_every_folder_and_module_of_the_layers():
    text = (PACKAGE.parent / "ARCHITECTURE.md").read_text()
    where = text.split("## Where things are", 1)[1].split("\n## ", 1)[0]
    folders = [p for p in sorted(PACKAGE.iterdir()) if (p / "__init__.py").is_file()]
    unnamed = [f"gpipe/{p.name}/" for p in folders if f"`gpipe/{p.name}/`" not in where]
    for folder in [PACKAGE] + [p for p in folders if p.name != "tools"]:
        unnamed += [str(f.relative_to(PACKAGE.parent)) for f in sorted(folder.glob("*.py"))
                    if f.name != "__init__.py" and f"`{f.name}`" not in where]
    assert unnamed == []


def test_the_gpipe_paths_the_documents_name_exist():
    root = PACKAGE.parent
    missing = sorted({(doc, path) for doc in ("README.md", "ARCHITECTURE.md")
                      for path in re.findall(r"(?<![\w./-])gpipe/[\w./-]*[\w/]", (root / doc).read_text())
                      if not path.startswith("gpipe/_cuda") and not (root / path).exists()})
    assert missing == []
