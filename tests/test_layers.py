"""The import graph of raglab/: no circles, and no wing importing a later one.

The wings in the pipeline's order, lowest first (ARCHITECTURE.md draws them):

    base (records, text, validation, samples, _threads, __init__) -> ingest -> embed
    -> retrieve -> store -> generate -> pipeline (pipeline.py, query.py, profiles.py) -> evaluation
    -> workbook -> cli (cli, __main__)

A module may import its own wing and the wings before it. The one exception is a protocol
module (`protocol.py` in a wing, e.g. `raglab.store.protocol`): any wing may import it,
and it imports only the base, so it cannot carry a later wing's code into an earlier one.

Every import counts, wherever it stands in a module: at the top, inside a function, under
`if TYPE_CHECKING:`. An import hidden inside a function is still a dependency, and the
circles such imports hide are what this test is for.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import raglab

PACKAGE = Path(raglab.__file__).parent

ORDER = (
    "base",
    "ingest",
    "embed",
    "retrieve",
    "store",
    "generate",
    "pipeline",
    "conversation",
    "graph",
    "agent",
    "longcontext",
    "evaluation",
    "workbook",
    "cli",
)
TOP_LEVEL = {
    "records": "base",
    "text": "base",
    "validation": "base",
    "samples": "base",
    "_threads": "base",
    "progress": "base",
    "pipeline": "pipeline",
    "query": "pipeline",
    "profiles": "pipeline",
    "cli": "cli",
    "__main__": "cli",
}
"""The wing of each module directly in raglab/ (a folder is a wing of its own name)."""


def module_names() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    names = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def wing(module: str) -> str:
    """The wing `module` belongs to."""
    parts = module.split(".")[1:]
    if not parts:
        return "base"  # raglab/__init__.py: the public names, imported lazily
    if parts[0] in TOP_LEVEL:
        return TOP_LEVEL[parts[0]]
    if parts[0] in ORDER:
        return parts[0]
    raise AssertionError(f"{module} is in no wing: add it to TOP_LEVEL or ORDER")


def is_protocol(module: str) -> bool:
    return module.rsplit(".", 1)[-1] == "protocol"


def imported(module: str, path: Path, known: set[str]) -> Iterator[str]:
    """The raglab modules `module` imports, at any depth of its code.

    `from raglab import Name` counts as an import of Name's home module (raglab.PUBLIC),
    since that is what the lazy package loads.
    """
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's own package upwards
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
            if base == "raglab":
                homes = raglab._HOME
                targets += [f"raglab.{homes[a.name]}" for a in node.names if a.name in homes]
        else:
            continue
        for target in targets:
            if target in known and target not in (module, "raglab"):
                yield target


def import_graph() -> dict[str, set[str]]:
    names = module_names()
    return {module: set(imported(module, path, set(names))) for module, path in names.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph()


def test_every_module_is_in_a_wing(graph):
    assert all(wing(module) in ORDER for module in graph)


def test_no_wing_imports_a_later_one_except_through_a_protocol(graph):
    upward = [
        f"{a} ({wing(a)}) imports {b} ({wing(b)})"
        for a in sorted(graph)
        for b in sorted(graph[a])
        if ORDER.index(wing(b)) > ORDER.index(wing(a)) and not is_protocol(b)
    ]
    assert upward == []


def test_a_protocol_module_imports_only_the_base(graph):
    protocols = [module for module in graph if is_protocol(module)]
    assert protocols, "the store protocol lives in raglab/store/protocol.py"
    beyond = [f"{p} imports {b}" for p in protocols for b in sorted(graph[p]) if wing(b) != "base"]
    assert beyond == []


def test_the_engine_has_no_import_circles(graph):
    engine = {
        module: {b for b in targets if wing(b) != "workbook"}
        for module, targets in graph.items()
        if wing(module) != "workbook"
    }
    assert circles(engine) == []


def test_the_workbook_has_no_import_circles(graph):
    assert circles(graph) == []


def test_the_checker_sees_imports_hidden_in_functions_and_type_checking(tmp_path):
    code = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from raglab.store.memory import MemoryStore\n"
        "def f():\n    from raglab import Index\n    import raglab.evaluation.runner\n"
    )
    path = tmp_path / "m.py"
    path.write_text(code)
    known = {"raglab.store.memory", "raglab.pipeline", "raglab.evaluation.runner"}
    assert set(imported("raglab.retrieve.m", path, known)) == known
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
