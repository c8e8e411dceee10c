"""The package's structure, read from its own imports (ARCHITECTURE.md, "Where things are"):
no import circle among gpipe's modules, the library never imports its tools (gpipe/tools/) nor
the package ``gpipe`` itself, no module uses another gpipe module's private names, and no
module is over MAX_LINES lines."""

from __future__ import annotations

import ast
import functools
import pathlib

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
