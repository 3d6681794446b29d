"""The notebook conventions (ARCHITECTURE.md) as code: put a notebook written by hand into shape.

    python scripts/nbtools.py normalise notebooks/05_x.ipynb

A notebook written the simple way — `# NBVAL_CHECK_OUTPUT` comments, a solution cell
with `{"raglab": {"exercise": ..., "function": ..., "points": ...}}`, its check cell right
after it — becomes one whose test plumbing is metadata, not text a learner reads:

- `# NBVAL_*` comment lines become nbval's cell tags (`nbval-check-output`, ...);
- a solution cell is hidden (tag `hide-input`), labelled on its first line (JupyterLab
  shows only that line) and carries nbgrader's solution metadata;
- its check cell is an nbgrader autograded test cell worth the exercise's points, tagged
  `check`, with no output committed: the learner has not tried yet;
- markdown cells are nbgrader's locked (read-only) cells;
- the sample data is found through the package (`sample_corpus()`), not `../data`:
  nbgrader and instructors run notebooks from other folders.

Running it twice changes nothing.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from raglab.workbook.exercises import BEGIN, CHECK_TAG, HIDE_TAG, SOLUTION_LABEL, is_check_cell

NBVAL_TAGS = {
    "NBVAL_CHECK_OUTPUT": "nbval-check-output",
    "NBVAL_IGNORE_OUTPUT": "nbval-ignore-output",
    "NBVAL_RAISES_EXCEPTION": "raises-exception",
    "NBVAL_SKIP": "nbval-skip",
}
NBVAL_LINE = re.compile(r"^#\s*(NBVAL_\w+)[ \t]*(\n|$)", re.MULTILINE)
NBGRADER_SCHEMA = 3  # nbgrader 0.9's cell metadata version
DEFAULT_POINTS = 1
# Paths relative to notebooks/ -> the package's own way to find the sample data.
DATA_PATHS = (
    (
        re.compile(r"""Path\(["']\.\./data/corpus/?["']\)|["']\.\./data/corpus/?["']"""),
        "sample_corpus",
    ),
    (
        re.compile(
            r"""Path\(["']\.\./data/questions\.jsonl["']\)|["']\.\./data/questions\.jsonl["']"""
        ),
        "sample_questions",
    ),
)
# Imports from before the teaching machinery moved to raglab.workbook.
OLD_IMPORTS = (
    (re.compile(r"\bfrom raglab import checks\b"), "from raglab.workbook import checks"),
    (re.compile(r"\braglab\.checks\b"), "raglab.workbook.checks"),
)


def _nbgrader(
    grade_id: str,
    *,
    solution: bool = False,
    grade: bool = False,
    locked: bool = False,
    points: int | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "grade": grade,
        "grade_id": grade_id,
        "locked": locked,
        "schema_version": NBGRADER_SCHEMA,
        "solution": solution,
        "task": False,
    }
    if points is not None:
        meta["points"] = points
    return meta


def _add_tags(cell: dict, *tags: str) -> None:
    current = list(cell["metadata"].get("tags", []))
    current += [tag for tag in tags if tag not in current]
    cell["metadata"]["tags"] = current


def _drop_tag(cell: dict, tag: str) -> None:
    tags = [t for t in cell["metadata"].get("tags", []) if t != tag]
    if tags:
        cell["metadata"]["tags"] = tags
    else:
        cell["metadata"].pop("tags", None)


def nbval_comments_to_tags(cell: dict) -> None:
    """`# NBVAL_CHECK_OUTPUT` at the top of a code cell -> the tag `nbval-check-output`."""
    found = NBVAL_LINE.findall(cell["source"])
    if not found:
        return
    unknown = [name for name, _ in found if name not in NBVAL_TAGS]
    if unknown:
        raise ValueError(f"unknown nbval marker {unknown[0]} (known: {', '.join(NBVAL_TAGS)})")
    cell["source"] = NBVAL_LINE.sub("", cell["source"])
    _add_tags(cell, *(NBVAL_TAGS[name] for name, _ in found))


def _hide_solution(cell: dict, exercise: dict) -> None:
    if not cell["source"].startswith(SOLUTION_LABEL):
        cell["source"] = f"{SOLUTION_LABEL}\n{cell['source']}"
    cell["metadata"].setdefault("jupyter", {})["source_hidden"] = True
    _add_tags(cell, HIDE_TAG)
    exercise.setdefault("points", DEFAULT_POINTS)
    cell["metadata"]["nbgrader"] = _nbgrader(exercise["exercise"], solution=True)


def _grade_check(cell: dict, exercise: dict) -> None:
    _add_tags(cell, CHECK_TAG)
    _drop_tag(cell, "nbval-check-output")  # its output is not committed: nothing to compare
    cell["metadata"]["nbgrader"] = _nbgrader(
        f"check-{exercise['exercise']}", grade=True, locked=True, points=exercise["points"]
    )
    cell["metadata"]["raglab"] = {"check": exercise["exercise"]}
    cell["outputs"] = []
    cell["execution_count"] = None


def _sample_data_through_the_package(cells: list[dict]) -> None:
    """`Path("../data/corpus")` -> `sample_corpus()`, imported in the first code cell."""
    code = [cell for cell in cells if cell["cell_type"] == "code"]
    needed = set()
    for cell in code:
        for pattern, function in DATA_PATHS:
            cell["source"], found = pattern.subn(f"{function}()", cell["source"])
            if found:
                needed.add(function)
    first = code[0] if code else None
    missing = sorted(
        f for f in needed if first and not re.search(rf"import .*\b{f}\b", first["source"])
    )
    if first is not None and missing:
        first["source"] = f"from raglab import {', '.join(missing)}\n" + first["source"]


def normalise_notebook(nb: dict) -> dict:
    """The notebook in the workbook's shape (a new notebook; the argument is left unchanged)."""
    nb = copy.deepcopy(nb)
    _sample_data_through_the_package(nb["cells"])
    exercise: dict | None = None  # the solution cell just seen, waiting for its check cell
    for i, cell in enumerate(nb["cells"]):
        cell.setdefault("metadata", {})
        if cell["cell_type"] == "markdown":
            cell["metadata"]["nbgrader"] = _nbgrader(f"text-{cell.get('id', i)}", locked=True)
            continue
        if cell["cell_type"] != "code":
            continue
        nbval_comments_to_tags(cell)
        for pattern, replacement in OLD_IMPORTS:
            cell["source"] = pattern.sub(replacement, cell["source"])
        raglab = cell["metadata"].get("raglab", {})
        if "exercise" in raglab and BEGIN in cell["source"]:
            _hide_solution(cell, raglab)
            exercise = raglab
        elif exercise is not None and is_check_cell(cell):
            _grade_check(cell, exercise)
            exercise = None
    return nb
