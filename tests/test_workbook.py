"""Every exercise in the workbook is honest: its check fails on the stub, passes on the solution.

Each notebook with exercises runs twice in a fresh kernel, as the grader runs it: the
complete version from notebooks/ and the student version generated from it. The grader
re-runs every check itself at the end, so this holds whatever the check cells print.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from raglab.workbook.exercises import student_notebook
from raglab.workbook.grading import declared_exercises, read_grades, run_notebook

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
WITH_EXERCISES = [
    path for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    if declared_exercises(nbformat.read(path, as_version=4))
]


def grades_of(nb) -> dict[str, bool]:
    executed = run_notebook(nb, declared_exercises(nb), cwd=NOTEBOOKS, timeout=120)
    grades = read_grades(executed, "notebook")
    assert grades is not None, "the grading cell printed nothing"
    return {grade.exercise: grade.passed for grade in grades}


def test_the_workbook_has_exercises():
    assert len(WITH_EXERCISES) >= 1


@pytest.mark.parametrize("path", WITH_EXERCISES, ids=lambda p: p.name)
def test_every_check_passes_on_the_solution_and_fails_on_the_stub(path):
    complete = nbformat.read(path, as_version=4)
    exercises = [item["exercise"] for item in declared_exercises(complete)]
    assert grades_of(complete) == {exercise: True for exercise in exercises}
    assert grades_of(student_notebook(complete, name=path.name)) == {exercise: False for exercise in exercises}


# --- the notebook conventions (DESIGN.md), checked on every notebook ---------------------

ALL_NOTEBOOKS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
HINT_SUMMARY = re.compile(r"<summary>Hint (\d+) of (\d+) — .+</summary>")
IMPORT_LINE = re.compile(r"^(import \w|from [\w.]+ import )", re.MULTILINE)
SOLUTION_LABEL = "# ▶ Reference solution — click to reveal"


def cells_of(path: Path):
    return nbformat.read(path, as_version=4).cells


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda p: p.name)
def test_opens_with_objectives_and_closes_with_key_points(path):
    cells = cells_of(path)
    assert cells[0].cell_type == "markdown" and "You will learn" in cells[0].source
    assert "Before you start" in cells[0].source
    closing = "\n".join(cell.source for cell in cells[-3:] if cell.cell_type == "markdown")
    assert "Key points" in closing and "What comes next" in closing


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda p: p.name)
def test_imports_sit_in_the_first_code_cell(path):
    code = [cell for cell in cells_of(path) if cell.cell_type == "code"]
    assert IMPORT_LINE.search(code[0].source)
    late = [cell.source.splitlines()[0] for cell in code[1:] if IMPORT_LINE.search(cell.source)]
    assert late == []


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda p: p.name)
def test_solution_cells_are_hidden_and_labelled(path):
    for cell in cells_of(path):
        if "### BEGIN SOLUTION" in cell.source and cell.cell_type == "code":
            assert cell.source.startswith(SOLUTION_LABEL)
            assert cell.metadata["jupyter"]["source_hidden"] is True
            assert "hide-input" in cell.metadata["tags"]
            assert cell.metadata["raglab"]["exercise"] and cell.metadata["raglab"]["function"]


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda p: p.name)
def test_hints_open_one_at_a_time_after_a_pause(path):
    cells = cells_of(path)
    paused = False
    series: list[tuple[int, int]] = []
    for cell in cells:
        text = cell.source
        if cell.cell_type != "markdown":
            continue
        if "Pause. Try it yourself first." in text:
            paused, series = True, []
        if "<details>" not in text:
            continue
        lines = text.strip().splitlines()
        assert lines[0] == "<details>" and lines[-1] == "</details>", text[:60]
        summary = HINT_SUMMARY.fullmatch(lines[1])
        assert summary and lines[2] == "", text[:80]
        assert paused, f"a hint before any 'Pause. Try it yourself first.': {lines[1]}"
        assert text.count("<details>") == 1  # one hint per cell
        series.append((int(summary[1]), int(summary[2])))
        number, total = series[-1]
        assert number == len(series) and total >= 2
    if declared_exercises(nbformat.read(path, as_version=4)):
        assert paused


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda p: p.name)
def test_outputs_are_committed_and_free_of_widget_state(path):
    nb = nbformat.read(path, as_version=4)
    assert "widgets" not in nb.metadata
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert all(cell.execution_count is not None for cell in code), "execute the notebook before committing"
    for cell in code:
        if "NBVAL_RAISES_EXCEPTION" in cell.source:
            assert "raises-exception" in cell.metadata.get("tags", [])
        for output in cell.outputs:
            assert "image/svg+xml" not in output.get("data", {}), "PNG figures, never SVG"
