"""No dangling references: every repository file or module the repository's text names exists.

The text is what a reader follows: README.md, ARCHITECTURE.md, data/README.md, the
notebooks' markdown cells, and the docstrings and comments of raglab/, scripts/ and
benchmarks/ (tests/ is left out: its comments tell the history of bugs, by their old
names). Two kinds of reference are checked:

- a path from the repository's root (`raglab/store/access.py`, `tests/notebooks/`,
  `benchmarks/results/*.json`, `ARCHITECTURE.md`) must name a file or folder that exists
  (a glob at least one);
- a dotted name under the package (`raglab.store.versions`, `raglab.retrieve.fusion.fusion_curve`)
  must import: a module, or a name one defines.

Prose stays out: a path counts only when it starts at one of the repository's top-level
folders or is a top-level file, and not inside another path or a URL, so a corpus
document id (`acme/policies/leave.md`) or `https://…/raglab/…` is not a reference.
Placeholders in examples (`notebooks/NN_name.ipynb`, `benchmarks/NAME.py`, `raglab.NAME`)
are skipped.
"""

from __future__ import annotations

import ast
import importlib
import io
import re
import tokenize
from itertools import pairwise
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]

TOP_FOLDERS = ("raglab", "tests", "scripts", "benchmarks", "notebooks", "exercises", "data", "lab")
PATH = re.compile(
    r"(?<![\w./-])"  # not the tail of another path, a URL or a dotted name
    rf"((?:{'|'.join(TOP_FOLDERS)}|\.ci)/[\w./*?-]*[\w*?/]"  # a path under a top folder
    r"|[A-Z][A-Z_]*\.md)"  # or a top-level document: README.md, ARCHITECTURE.md, ...
    r"(?![\w/<-])"  # nor the head of a longer one, or of a placeholder: `test_<module>.py`
)
DOTTED = re.compile(r"(?<![\w./-])raglab(?:\.\w+)+")
PLACEHOLDER = re.compile(
    r"\.\.\.|…|<|\{"  # elided: `tests/...`, `raglab/<wing>/`
    r"|(?:^|[/.])(?:NN_|\d\d_x\b)"  # a notebook's name: `notebooks/NN_topic.ipynb`
    r"|(?:^|[/.])(?:NAME|x|y)(?:[./]|$)"  # `benchmarks/NAME.py`, `raglab/x/y.py`, `raglab.NAME`
)
"""Shapes in examples, not files."""

GENERATED = {"raglab/sample_data"}
"""Made by the build (setup.py copies data/ into the wheel there), so absent from a checkout."""


def _python_prose(path: Path) -> str:
    """The comments and docstrings of a Python file (a string right after an assignment
    documents it too: `CACHE_SIZE = 64` then a docstring)."""
    source = path.read_text(encoding="utf-8")
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    parts = [token.string for token in tokens if token.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for before, statement in pairwise([None, *body]):
            documents = before is None or isinstance(before, ast.Assign | ast.AnnAssign)
            if documents and _is_string(statement):
                parts.append(statement.value.value)
    return "\n".join(parts)


def _is_string(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _notebook_prose(path: Path) -> str:
    cells = nbformat.read(path, as_version=4).cells
    return "\n".join(cell.source for cell in cells if cell.cell_type == "markdown")


def texts() -> dict[str, str]:
    """Each text a reader follows, by its path from the root."""
    found = {
        name: (ROOT / name).read_text(encoding="utf-8")
        for name in ("README.md", "ARCHITECTURE.md", "data/README.md")
    }
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        found[str(path.relative_to(ROOT))] = _notebook_prose(path)
    for folder in ("raglab", "scripts", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            found[str(path.relative_to(ROOT))] = _python_prose(path)
    return found


def paths_in(text: str) -> set[str]:
    """The repository paths a text names (placeholders left out).

    >>> sorted(paths_in("see DESIGN.md, `raglab/store/access.py`; tests/notebooks/."))
    ['DESIGN.md', 'raglab/store/access.py', 'tests/notebooks/']
    >>> sorted(paths_in("acme/policies/leave.md, https://x.org/raglab/a.py, notebooks/NN_x.ipynb"))
    []
    >>> sorted(paths_in("scripts/nbtools.py execute notebooks/05_x.ipynb; raglab/x/y.py"))
    ['scripts/nbtools.py']
    >>> sorted(paths_in("tests/workbook/test_checks_<module>.py, raglab/store/<name>_store.py"))
    []
    """
    return {p for p in PATH.findall(text) if not PLACEHOLDER.search(p)}


def exists(path: str) -> bool:
    if path.rstrip("/") in GENERATED:
        return True
    if any(char in path for char in "*?"):
        return any(ROOT.glob(path))
    return (ROOT / path).exists()


def dotted_names_in(text: str) -> set[str]:
    """The `raglab.…` names a text uses (placeholders left out).

    >>> sorted(dotted_names_in("`raglab.store.versions` and raglab.chunk(...); raglab.NAME"))
    ['raglab.chunk', 'raglab.store.versions']
    """
    return {name for name in DOTTED.findall(text) if not PLACEHOLDER.search(name)}


def resolves(name: str) -> bool:
    """True when `name` is a module, or a name defined by the longest module it starts with."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(value, attribute):
                return False
            value = getattr(value, attribute)
        return True
    return False


TEXTS = texts()


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_every_path_named_exists(name):
    missing = sorted(path for path in paths_in(TEXTS[name]) if not exists(path))
    assert missing == [], f"{name} names files that do not exist: {missing}"


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_every_dotted_name_imports(name):
    missing = sorted(dotted for dotted in dotted_names_in(TEXTS[name]) if not resolves(dotted))
    assert missing == [], f"{name} names modules or attributes that do not exist: {missing}"


def test_the_references_that_once_dangled_are_caught():
    """What the text once named and the repository never held, or no longer does."""
    once = (
        "The rule (DESIGN.md): ...",  # the design notes, outside the repository
        "shipped in `raglab/abstention_rules.json`",  # before the wings
        "# raglab.checks.CHECKS merges every notebook's",  # the same
    )
    assert [sorted(paths_in(text)) for text in once] == [
        ["DESIGN.md"],
        ["raglab/abstention_rules.json"],
        [],
    ]
    assert not exists("DESIGN.md") and not exists("raglab/abstention_rules.json")
    assert dotted_names_in(once[2]) == {"raglab.checks.CHECKS"}
    assert not resolves("raglab.checks.CHECKS")
