"""Every exercise in the workbook is honest: its check fails on the stub, passes on the solution.

Each notebook with exercises runs in a fresh kernel, as the grader runs it, in two versions:
the complete one from notebooks/ and the student one generated from it. The grader re-runs
every check itself at the end, so this holds whatever the check cells print.

A run that also has nbval run notebooks/ (`make test`) runs each complete notebook once:
nbval's run ends with the grader's cell (`notebooks/NN_name.ipynb::grading`, added by the
root conftest.py), and the complete-version test here is skipped as done there.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import nbformat
import pytest

from raglab.workbook.conventions import normalise_notebook
from raglab.workbook.exercises import notebook_text
from raglab.workbook.grading import declared_exercises, read_grades, run_notebook

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
EXERCISES = ROOT / "exercises"
WITH_EXERCISES = [
    path
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    if declared_exercises(nbformat.read(path, as_version=4))
]


def grades_of(nb) -> dict[str, bool]:
    """exercise -> passed, as the grader sees `nb` (run in place, every cell, errors kept)."""
    executed = run_notebook(nb, declared_exercises(nb), cwd=NOTEBOOKS, timeout=120)
    grades = read_grades(executed)
    assert grades is not None, "the grading cell printed nothing"
    return {exercise: passed for exercise, (passed, _) in grades.items()}


def stops_run_all(executed) -> list[str]:
    """The cells of a run notebook where Run All would have stopped: each cell that raised
    and is not tagged `raises-exception`, as "cell N: ErrorName"."""
    return [
        f"cell {i}: {output['ename']}"
        for i, cell in enumerate(executed.cells)
        if "raises-exception" not in cell.metadata.get("tags", [])
        for output in cell.get("outputs", [])
        if output["output_type"] == "error"
    ]


def test_the_workbook_has_exercises():
    assert len(WITH_EXERCISES) >= 1


def graded_by_nbval(request: pytest.FixtureRequest, path: Path) -> bool:
    """Whether this run's nbval grades the complete notebook `path` (see the root conftest.py)."""
    return any(
        type(item).__name__ == "GradingCell" and item.path == path for item in request.session.items
    )


@pytest.mark.parametrize("path", WITH_EXERCISES, ids=lambda p: p.name)
def test_every_check_passes_on_the_solution(path, request):
    if graded_by_nbval(request, path):
        pytest.skip(f"graded at the end of nbval's run of {path.name}")
    complete = nbformat.read(path, as_version=4)
    exercises = [item["exercise"] for item in declared_exercises(complete)]
    assert grades_of(complete) == {exercise: True for exercise in exercises}


@pytest.mark.parametrize("path", sorted(EXERCISES.glob("[0-9][0-9]_*.ipynb")), ids=lambda p: p.name)
def test_run_all_on_the_student_version_reaches_the_last_cell_and_every_check_fails(path):
    """The learner's exercises/ notebook, untouched, run top to bottom: no cell stops the run
    (a cell that needs the learner's work says so and lets the rest run), and every check
    fails. One run of each student notebook serves both."""
    student = nbformat.read(path, as_version=4)
    exercises = [item["exercise"] for item in declared_exercises(student)]
    assert grades_of(student) == {exercise: False for exercise in exercises}
    assert stops_run_all(student) == []


# --- the notebook conventions (ARCHITECTURE.md), checked on every notebook ---------------------

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


def is_solution(cell) -> bool:
    return "exercise" in cell.metadata.get("raglab", {})


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda p: p.name)
def test_imports_sit_in_the_first_code_cell_and_the_reference_after_the_exercises(path):
    cells = cells_of(path)
    code = [cell for cell in cells if cell.cell_type == "code"]
    assert IMPORT_LINE.search(code[0].source)
    last_exercise = max((i for i, cell in enumerate(cells) if is_solution(cell)), default=-1)
    for i, cell in enumerate(cells):
        if cell.cell_type != "code" or cell is code[0]:
            continue
        for line in IMPORT_LINE_FULL.findall(cell.source):
            # The one import allowed later: the reference, once the learner's work is done.
            assert "reference" in line and i > last_exercise, f"a late import: {line}"
    first_imports = IMPORT_LINE_FULL.findall(code[0].source)
    if last_exercise >= 0:
        assert not [line for line in first_imports if "reference" in line], (
            "the reference before the exercises"
        )


IMPORT_LINE_FULL = re.compile(r"^(?:import \w.*|from [\w.]+ import .*)$", re.MULTILINE)


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
        # Markdown is not rendered inside <summary>: a backtick would show as itself.
        assert "`" not in lines[1], f"use <code>…</code> in a hint's title: {lines[1]}"
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
    checks = [cell for cell in code if "check" in cell.metadata.get("raglab", {})]
    lessons = [cell for cell in code if cell not in checks]
    assert all(cell.execution_count is not None for cell in lessons), (
        "execute the notebook before committing"
    )
    # A check's saved pass would greet a learner who has not tried yet.
    assert all(cell.outputs == [] for cell in checks)
    for cell in code:
        for output in cell.outputs:
            assert "image/svg+xml" not in output.get("data", {}), "PNG figures, never SVG"


# --- the plumbing is metadata; the data comes through the package -------------------------


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda p: p.name)
def test_notebooks_are_in_the_workbook_shape(path):
    """`scripts/nbtools.py normalise` would change nothing (tags, nbgrader metadata, hidden solutions)."""
    nb = nbformat.read(path, as_version=4)
    assert notebook_text(normalise_notebook(nb)) == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("path", sorted(EXERCISES.glob("[0-9][0-9]_*.ipynb")), ids=lambda p: p.name)
def test_no_student_cell_shows_test_plumbing(path):
    for cell in cells_of(path):
        assert "NBVAL" not in cell.source, cell.source[:80]


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda p: p.name)
def test_data_is_found_through_the_package(path):
    for cell in cells_of(path):
        if cell.cell_type == "code":
            assert "../data" not in cell.source, "use raglab.sample_corpus() / sample_questions()"


NEXT_TITLE = re.compile(r"\*\*(\d\d) · ")


def next_notebooks(path: Path) -> list[str]:
    """The numbers of the notebooks a notebook's "What comes next" announces."""
    closing = "\n".join(cell.source for cell in cells_of(path) if cell.cell_type == "markdown")
    closing = closing[closing.rfind("What comes next") :]
    numbers = NEXT_TITLE.findall(closing)
    if "next notebook" in closing.lower():
        numbers.append(f"{int(path.name[:2]) + 1:02d}")
    return numbers


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda p: p.name)
def test_what_comes_next_names_a_notebook_that_exists(path):
    existing = {p.name[:2] for p in ALL_NOTEBOOKS}
    missing = [number for number in next_notebooks(path) if number not in existing]
    assert missing == [], f"{path.name} announces notebook {missing[0]}, which does not exist"


def test_a_link_to_a_missing_notebook_is_caught(tmp_path):
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_markdown_cell("## What comes next\n**99 · Nowhere** ...")]
    )
    path = tmp_path / "98_last.ipynb"
    nbformat.write(nb, path)
    assert next_notebooks(path) == ["99"]


# --- raglab progress ------------------------------------------------------------------------


def test_progress_reads_the_learners_saved_check_outputs(tmp_path, capsys):
    from raglab.workbook.progress import progress_command

    shutil.copy(EXERCISES / "01_understand.ipynb", tmp_path)  # never run: no output saved
    nb = nbformat.read(EXERCISES / "04_implement_chunking.ipynb", as_version=4)
    verdicts = {
        "chunk": "✅ chunk: all 15 cases pass\n",
        "split_sections": "❌ split_sections: case 'x'\n",
        "context_header": "❌ context_header: not implemented yet\n",
    }
    for cell in nb.cells:
        check = cell.metadata.get("raglab", {}).get("check")
        if check:
            cell.outputs = [nbformat.v4.new_output("stream", text=verdicts[check])]
    nbformat.write(nb, tmp_path / "04_implement_chunking.ipynb")
    assert progress_command([str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[1:] == ["·", "understand_lifecycle", "(not", "run)"]
    assert lines[2].split()[1:] == ["✅", "chunk", "(passed)"]
    assert lines[3].split()[1:] == ["❌", "split_sections", "(not", "yet)"]
    assert lines[4].split()[1:] == ["❌", "context_header", "(not", "yet)"]
    assert lines[-1] == "1 of 5 exercises passed, 2 of 9 points"
    assert progress_command([str(tmp_path / "nowhere")]) == 1
    assert "no such folder" in capsys.readouterr().err
