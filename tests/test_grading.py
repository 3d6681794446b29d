"""Grading: run notebooks in a fresh kernel, then run every exercise's check inside it.

The notebooks run once per module (a kernel start and the chunking notebook take about a
second each): the complete notebook, its generated student version, and a learner's
partial notebook (one exercise stubbed, the other's check cell deleted).
"""

from __future__ import annotations

import contextlib
import csv
import io
import shutil
from pathlib import Path

import nbformat
import pytest

from raglab.workbook.exercises import build_exercises, is_check_cell, student_cell
from raglab.workbook.grading import (
    CSV_COLUMNS,
    ExerciseGrade,
    GradeReport,
    declared_exercises,
    format_table,
    grade,
    grade_command,
    grade_in_kernel,
    one_line,
    read_grades,
    run_notebook,
    write_csv,
)

ROOT = Path(__file__).resolve().parents[1]
NAME = "04_implement_chunking.ipynb"
COMPLETE = ROOT / "notebooks" / NAME


def read(path: Path):
    return nbformat.read(path, as_version=4)


def check_outputs(executed) -> list[str]:
    """What each check cell of an executed notebook printed."""
    return [
        "".join(o.get("text", "") for o in cell.outputs)
        for cell in executed.cells
        if is_check_cell(cell)
    ]


@pytest.fixture(scope="module")
def workbook(tmp_path_factory) -> Path:
    """A workbook folder: data/ (linked), notebooks/ (the complete notebook), exercises/."""
    root = tmp_path_factory.mktemp("workbook")
    (root / "data").symlink_to(ROOT / "data", target_is_directory=True)
    (root / "notebooks").mkdir()
    shutil.copy(COMPLETE, root / "notebooks")
    build_exercises(root / "notebooks", root / "exercises")
    # A learner's notebook: chunk solved (its check cell deleted), split_sections untouched.
    nb = read(COMPLETE)
    cells = []
    for cell in nb.cells:
        if cell.id == "ex1-check":
            continue
        cells.append(student_cell(cell) if cell.id == "ex2-solution" else cell)
    nb.cells = cells
    (root / "learner").mkdir()
    nbformat.write(nb, root / "learner" / NAME)
    return root


@pytest.fixture(scope="module")
def executed(workbook):
    """The complete and the student notebook, executed with the grading cell appended."""
    runs = {}
    for folder in ("notebooks", "exercises"):
        nb = read(workbook / folder / NAME)
        runs[folder] = run_notebook(nb, declared_exercises(nb), cwd=workbook / folder, timeout=60)
    return runs


@pytest.fixture(scope="module")
def graded_by_command(workbook):
    """`raglab grade learner/NAME --csv FILE`: its exit code, printed table and CSV file."""
    csv_path = workbook / "grades.csv"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = grade_command(
            [str(workbook / "learner" / NAME), "--csv", str(csv_path), "--timeout", "60"]
        )
    return code, out.getvalue(), csv_path


def test_every_check_passes_on_the_complete_notebook(executed):
    assert check_outputs(executed["notebooks"]) == [
        "✅ chunk: all 15 cases and 200 random texts pass\n",
        "✅ split_sections: all 9 cases and 200 random texts pass\n",
    ]
    grades = read_grades(executed["notebooks"], "complete")
    assert [(g.exercise, g.passed) for g in grades] == [("chunk", True), ("split_sections", True)]


def test_every_check_fails_on_the_student_stub(executed):
    outputs = check_outputs(executed["exercises"])
    assert outputs == [
        "❌ chunk: not implemented yet — write your solution in the cell above\n",
        "❌ split_sections: not implemented yet — write your solution in the cell above\n",
    ]
    grades = read_grades(executed["exercises"], "student")
    assert [(g.exercise, g.passed) for g in grades] == [("chunk", False), ("split_sections", False)]
    assert all(g.message.startswith("not implemented yet") for g in grades)


def test_the_rest_of_the_student_notebook_runs_on_the_reference(executed):
    errors = [
        (cell.id, output.ename)
        for cell in executed["exercises"].cells
        for output in cell.get("outputs", [])
        if output.output_type == "error"
    ]
    assert errors == []  # the stubs are defined, never called outside the checks


def test_a_partial_notebook_is_graded_even_without_its_check_cell(graded_by_command):
    code, table, _ = graded_by_command
    assert code == 1  # not every exercise passes
    lines = table.splitlines()
    assert lines[0].split() == ["notebook", "exercise", "result", "message"]
    assert lines[1].split()[1:4] == ["chunk", "pass", "all"]
    assert lines[2].split()[1:5] == ["split_sections", "FAIL", "not", "implemented"]
    assert lines[3] == "1 of 2 exercises pass"
    assert lines[0].index("result") == lines[1].index("pass") == lines[2].index("FAIL")  # aligned


def test_csv_has_one_row_per_exercise(graded_by_command, workbook):
    _, _, csv_path = graded_by_command
    with open(csv_path, newline="", encoding="utf-8") as file:
        rows = list(csv.reader(file))
    assert tuple(rows[0]) == CSV_COLUMNS == ("notebook", "exercise", "passed", "message")
    notebook = str(workbook / "learner" / NAME)
    assert [row[:3] for row in rows[1:]] == [
        [notebook, "chunk", "true"],
        [notebook, "split_sections", "false"],
    ]


# --- without a kernel ------------------------------------------------------------------------


def learner_namespace(**functions) -> dict:
    for fn in functions.values():
        fn.__module__ = "__main__"  # as if defined in a notebook cell
    return functions


def test_grade_in_kernel_checks_the_notebooks_functions(capsys):
    from raglab.chunking import chunk as reference

    def chunk(text, size=800, overlap=100):
        return reference(text, size, overlap)

    exercises = [
        {"exercise": "chunk", "function": "chunk"},
        {"exercise": "split_sections", "function": "split_sections"},
        {"exercise": "nope", "function": "f"},
    ]
    grade_in_kernel(exercises, learner_namespace(chunk=chunk))
    printed = capsys.readouterr().out
    assert printed.count("\n") == 1 and "✅" not in printed  # only the grades line
    executed = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(outputs=[nbformat.v4.new_output("stream", text=printed)])]
    )
    grades = read_grades(executed, "nb")
    assert grades == [
        ExerciseGrade("nb", "chunk", True, "all 15 cases and 200 random texts pass"),
        ExerciseGrade(
            "nb",
            "split_sections",
            False,
            "`split_sections` is not defined — did its cell run without an error?",
        ),
        ExerciseGrade("nb", "nope", False, "no check named 'nope' in raglab.workbook.checks"),
    ]


def test_the_imported_reference_is_not_the_learners_work(capsys):
    from raglab.chunking import chunk

    grade_in_kernel([{"exercise": "chunk", "function": "chunk"}], {"chunk": chunk})
    assert "not defined in the notebook (it comes from raglab.chunking)" in capsys.readouterr().out


def test_one_line_keeps_values_intact():
    message = "❌ chunk: case 'x'\n   input:    chunk('a  b', size=2)\n   got:      ['a ', ' b']"
    assert one_line(message) == "case 'x'; input: chunk('a  b', size=2); got: ['a ', ' b']"


def test_declared_exercises_come_from_cells_and_the_notebook():
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(
                "def f(): ...", metadata={"raglab": {"exercise": "chunk", "function": "chunk"}}
            )
        ]
    )
    nb.metadata["raglab"] = {
        "exercises": [
            {"exercise": "chunk", "function": "chunk"},
            {"exercise": "split_sections", "function": "split_sections"},
        ]
    }
    assert declared_exercises(nb) == [
        {"exercise": "chunk", "function": "chunk"},
        {"exercise": "split_sections", "function": "split_sections"},
    ]


def test_unreadable_and_exercise_free_notebooks_get_a_failed_row(tmp_path):
    (tmp_path / "bad.ipynb").write_text("{not json", encoding="utf-8")
    nbformat.write(nbformat.v4.new_notebook(), tmp_path / "empty.ipynb")
    report = grade([tmp_path / "bad.ipynb", tmp_path / "empty.ipynb"])
    assert [(g.exercise, g.passed) for g in report.grades] == [("-", False), ("-", False)]
    assert report.grades[0].message.startswith("could not read the notebook")
    assert report.grades[1].message == "no exercises found (no cell has raglab metadata)"


def test_format_table_and_csv_without_running_anything(tmp_path):
    report = GradeReport(
        (
            ExerciseGrade("a.ipynb", "chunk", True, "ok"),
            ExerciseGrade("bb.ipynb", "split_sections", False, "x" * 300),
        )
    )
    table = format_table(report).splitlines()
    assert table[1] == "a.ipynb   chunk           pass    ok"
    assert (
        table[2].endswith("…") and len(table[2]) == len("bb.ipynb  split_sections  FAIL    ") + 100
    )
    assert table[-1] == "1 of 2 exercises pass"
    write_csv(report, tmp_path / "g.csv")
    assert (tmp_path / "g.csv").read_text(encoding="utf-8").splitlines()[:2] == [
        "notebook,exercise,passed,message",
        "a.ipynb,chunk,true,ok",
    ]


def test_grade_command_errors(tmp_path, capsys):
    assert grade_command([str(tmp_path / "missing.ipynb")]) == 1
    assert "no such notebook" in capsys.readouterr().err
    assert grade_command([str(tmp_path)]) == 1
    assert "no notebooks (.ipynb) found" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        grade_command([str(tmp_path), "--timeout", "0"])
    with pytest.raises(ValueError, match=r"timeout must be > 0 seconds \(got timeout=0\)"):
        grade([], timeout=0)
