"""A hostile class: what one learner's submission may do to `raglab grade`, and what it may not.

The course here is one tiny notebook ("05_tiny", one exercise: cosine, 2 points) so that each
graded notebook costs one kernel start. The class is graded once per module: ann solves it and
claims 100 points, bob solves it under malformed metadata, cat hands in nothing of 05, dan
hands in a wrong copy and a right one.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
from pathlib import Path

import nbformat
import pytest

from raglab.workbook import grading
from raglab.workbook.gradebook import (
    ExerciseGrade,
    GradeReport,
    format_summary,
    format_table,
    write_csv,
    write_summary_csv,
)
from raglab.workbook.grading import grade, grade_command, grade_notebook, read_grades

COSINE = """import numpy as np


def cosine(a, b) -> float:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.size == 0 or b.size == 0 or a.size != b.size:
        raise ValueError(f"cosine needs non-empty vectors of equal length ({a.size}, {b.size})")
    norms = np.linalg.norm(a) * np.linalg.norm(b)
    return 0.0 if norms == 0 else float(np.clip(a @ b / norms, -1.0, 1.0))
"""
WRONG = "def cosine(a, b):\n    return 1.0\n"
TINY = "05_tiny.ipynb"


def notebook(source: str, **metadata) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source, metadata={"raglab": metadata} if metadata else {})
    return nbformat.v4.new_notebook(cells=[cell])


def save(nb, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("course")
    handed_out = notebook("# ✏️ Your turn", exercise="cosine", function="cosine", points=2)
    handed_out.metadata["raglab"] = {
        "exercises": [{"exercise": "cosine", "function": "cosine", "points": 2}]
    }
    save(handed_out, folder / TINY)
    save(notebook("print('welcome')"), folder / "00_start_here.ipynb")
    return folder


@pytest.fixture(scope="module")
def graded(course, tmp_path_factory) -> GradeReport:
    class_ = tmp_path_factory.mktemp("class")
    greedy = notebook(COSINE, exercise="cosine", function="cosine", points=100)
    greedy.metadata["raglab"] = {
        "exercises": [
            {"exercise": "cosine", "function": "cosine", "points": 100},
            {"exercise": "chunk", "function": "cosine", "points": 100},  # not this notebook's
        ]
    }
    save(greedy, class_ / "ann" / TINY)
    malformed = notebook(COSINE, exercise=["cosine"], points="ten")
    malformed.metadata["raglab"] = ["not", "an", "object"]
    save(malformed, class_ / "bob" / TINY)
    save(notebook("print('hi')"), class_ / "cat" / "00_start_here.ipynb")
    save(notebook(WRONG), class_ / "dan" / TINY)
    save(notebook(COSINE), class_ / "dan" / "05_tiny (1).ipynb")
    return grade([class_], course=course, jobs=2, timeout=60)


def rows(report: GradeReport, learner: str) -> list[tuple]:
    return [(g.notebook, g.exercise, g.points, g.max_points, g.graded) for g in report.of(learner)]


def test_points_come_from_the_course_never_from_the_submission(graded):
    assert rows(graded, "ann") == [(TINY, "cosine", 2, 2, True)]


def test_malformed_metadata_in_a_course_notebook_is_not_even_read(graded):
    assert rows(graded, "bob") == [(TINY, "cosine", 2, 2, True)]


def test_every_learner_is_graded_out_of_the_same_total(graded):
    assert rows(graded, "cat") == [
        ("00_start_here.ipynb", "-", 0, 0, False),
        (TINY, "cosine", 0, 2, True),
    ]
    assert graded.of("cat")[1].message == "not handed in"
    assert format_summary(graded).splitlines()[1:] == [
        "ann      2       2           100.0    1                 1          1                    1",
        "bob      2       2           100.0    1                 1          1                    1",
        "cat      0       2           0.0      0                 1          0                    1",
        "dan      2       2           100.0    1                 1          1                    1",
    ]


def test_the_total_is_the_courses_even_when_nobody_handed_in_a_notebook(course, tmp_path):
    """A course of two notebooks with exercises (2 + 1 points); the class hands in 05 alone,
    solved: 2 of the course's 3 points, not 2 of 2, and the table says what was handed in."""
    bigger = tmp_path / "course"
    bigger.mkdir()
    for handed_out in course.iterdir():
        (bigger / handed_out.name).write_bytes(handed_out.read_bytes())
    more = notebook("# ✏️ Your turn", exercise="top_k", function="top_k", points=1)
    save(more, bigger / "06_more.ipynb")
    save(notebook(COSINE), tmp_path / "class" / "ann" / TINY)
    report = grade([tmp_path / "class"], course=bigger, jobs=1, timeout=60)
    assert [
        (g.notebook, g.exercise, g.points, g.max_points, g.handed_in) for g in report.grades
    ] == [
        (TINY, "cosine", 2, 2, True),
        ("06_more.ipynb", "top_k", 0, 1, False),
    ]
    table = format_table(report).splitlines()
    assert " ".join(table[3].split()) == "ann 06_more.ipynb (notebook) 0/1 FAIL not handed in"
    assert " ".join(table[4].split()) == "ann (total) 2/3 67% handed in 1 of 2 notebooks"
    assert format_summary(report).splitlines()[1].split() == [
        "ann",
        "2",
        "3",
        "66.7",
        "1",
        "2",
        "1",
        "2",
    ]


def test_a_notebook_handed_in_twice_counts_once_its_best_copy(graded):
    assert rows(graded, "dan") == [
        ("05_tiny (1).ipynb", "cosine", 2, 2, True),
        (TINY, "-", 0, 0, False),
    ]
    assert graded.of("dan")[1].message == "another copy of notebook 05: 05_tiny (1).ipynb counts"


def test_a_notebook_the_course_does_not_hold_is_not_graded(course, tmp_path):
    save(notebook(COSINE, exercise="cosine", points=100), tmp_path / "notes.ipynb")
    [row] = grade_notebook(tmp_path / "notes.ipynb", course=course)
    assert (row.exercise, row.max_points, row.graded) == ("-", 0, False)
    assert row.message == "not a notebook of the course (nothing to grade)"


# --- without a course: the notebook's own metadata, checked -----------------------------------


@pytest.mark.parametrize(
    ("metadata", "reason"),
    [
        ({"exercise": "cosine", "points": "ten"}, "cell 0: points must be a whole number >= 0"),
        ({"exercise": ["cosine"]}, "cell 0: exercise must be a Python name (got ['cosine'])"),
        ({"exercise": "cosine", "function": {}}, "cell 0: function must be a Python name"),
        ({"exercise": "cosine", "points": True}, "cell 0: points must be a whole number"),
    ],
)
def test_malformed_metadata_costs_that_notebook_a_failed_row_never_the_class(
    tmp_path, metadata, reason
):
    save(notebook("x = 1", **metadata), tmp_path / "ann" / "mine.ipynb")
    save(notebook("x = 1"), tmp_path / "bob" / "fine.ipynb")
    report = grade([tmp_path], course=None)
    [bad] = report.of("ann")
    assert (bad.notebook, bad.passed, bad.graded) == ("mine.ipynb", False, True)
    assert bad.message.startswith(f"malformed exercise metadata: {reason}")
    assert rows(report, "bob") == [("fine.ipynb", "-", 0, 0, False)]  # no exercises: not failed


def test_wrong_types_anywhere_in_the_metadata_are_one_line_each(tmp_path):
    cases = {
        "cells.ipynb": {"cells": {"not": "a list"}},
        "cell.ipynb": {"cells": [["not", "a", "cell"]]},
        "cell_metadata.ipynb": {"cells": [{"cell_type": "code", "metadata": {"raglab": 5}}]},
        "notebook_metadata.ipynb": {"cells": [], "metadata": {"raglab": {"exercises": "chunk"}}},
        "listed.ipynb": {"cells": [], "metadata": {"raglab": {"exercises": [7]}}},
    }
    for name, content in cases.items():
        save({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, **content}, tmp_path / name)
    report = grade([tmp_path / name for name in cases], course=None)
    assert [(g.notebook, g.passed, g.graded) for g in report.grades] == [
        (name, False, True) for name in cases
    ]
    assert all("\n" not in g.message for g in report.grades)


def test_whatever_goes_wrong_in_grading_a_notebook_costs_only_its_rows(
    course, tmp_path, monkeypatch
):
    def boom(*args, **kwargs):
        raise RuntimeError("something no rule foresaw")

    monkeypatch.setattr(grading, "_grade", boom)
    [ann] = grade_notebook(save(notebook(COSINE), tmp_path / "ann" / TINY), course=course)
    assert (ann.exercise, ann.max_points, ann.passed) == ("cosine", 2, False)
    assert ann.message == "could not grade the notebook (RuntimeError: something no rule foresaw)"


@pytest.mark.parametrize(
    "printed",
    [
        'RAGLAB-GRADES [{"exercise": "cosine", "passed": "yes", "message": "x"}]',
        "RAGLAB-GRADES {}",
        "RAGLAB-GRADES [1]",
        "RAGLAB-GRADES not json",
        'RAGLAB-GRADES [{"exercise": "cosine", "passed": true}]',
    ],
)
def test_a_grades_line_of_another_shape_counts_as_none(printed):
    cell = nbformat.v4.new_code_cell(outputs=[nbformat.v4.new_output("stream", text=printed)])
    assert read_grades(nbformat.v4.new_notebook(cells=[cell])) is None


# --- the course itself ----------------------------------------------------------------------


def test_a_malformed_course_is_one_error_line_before_any_kernel(tmp_path, capsys):
    broken = notebook("", exercise="cosine", points="2")
    save(broken, tmp_path / "course" / TINY)
    save(notebook("x = 1"), tmp_path / "class" / "ann" / TINY)
    assert grade_command([str(tmp_path / "class"), "--course", str(tmp_path / "course")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("raglab grade: error: course notebook ")
    assert "05_tiny.ipynb: cell 0: points must be a whole number >= 0 (got '2')" in err


def test_a_course_folder_without_notebooks_is_refused(tmp_path, capsys):
    (tmp_path / "course").mkdir()
    with pytest.raises(SystemExit):
        grade_command([str(tmp_path), "--course", str(tmp_path / "course")])
    assert "holds no student notebooks" in capsys.readouterr().err


def test_without_a_course_the_command_says_points_are_one_each(tmp_path, monkeypatch):
    monkeypatch.setattr(grading, "COURSE", tmp_path / "no_course_here")
    save(notebook("x = 1"), tmp_path / "ann" / "notes.ipynb")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert grade_command([str(tmp_path / "ann")]) == 0
    assert "raglab grade: warning: no course to take exercises and points from" in err.getvalue()


def test_the_course_reads_the_complete_notebooks_as_well():
    from raglab.workbook.course import read_course

    root = Path(__file__).resolve().parents[2]
    assert read_course(root / "notebooks") == read_course(root / "exercises")


# --- what the instructor reads: CSV cells and printed names ------------------------------------

FORMULAS = ["=1+2", '=HYPERLINK("http://evil.example","x")', "+1", "-1", "@SUM(A1)", "\tx", "\rx"]


def test_no_csv_cell_starts_a_spreadsheet_formula(tmp_path):
    report = GradeReport(
        tuple(
            ExerciseGrade(name, "=notebook.ipynb", "-", False, 0, 1, "@message")
            for name in FORMULAS
        )
    )
    write_csv(report, tmp_path / "grades.csv")
    write_summary_csv(report, tmp_path / "totals.csv")
    cells = [
        cell
        for name in ("grades.csv", "totals.csv")
        for row in csv.reader((tmp_path / name).open(encoding="utf-8", newline=""))
        for cell in row
    ]
    assert [c for c in cells if len(c) > 1 and c[0] in "=+-@\t\r"] == []
    assert {f"'{name}" for name in FORMULAS[:5]} <= set(cells)  # quoted, not lost
    assert {"\\tx", "\\rx"} <= set(cells)  # escaped: a cell can be printed too
    assert "-" in cells  # the exercise column's lone "-" is no formula


def test_printed_names_cannot_forge_a_line_or_take_over_the_terminal():
    forged = "x\x1b[2J\nraglab: warning: forged\u202e"
    report = GradeReport((ExerciseGrade(forged, f"{forged}.ipynb", "-", False, 0, 1, forged),))
    for printed in (format_table(report), format_summary(report)):
        assert "\x1b" not in printed and "\u202e" not in printed
        assert not any(line.startswith("raglab: warning") for line in printed.splitlines())
        assert "x\\x1b[2J\\nraglab: warning: forged\\u202e" in printed


def test_a_name_that_is_not_utf8_is_printed_and_written_escaped(tmp_path):
    name = b"caf\xe9".decode("utf-8", "surrogateescape")  # a Latin-1 folder name, as Path reads it
    report = GradeReport((ExerciseGrade(name, "a.ipynb", "-", False, 0, 1, "no"),))
    assert format_table(report).splitlines()[1].startswith("caf\\udce9")
    write_csv(report, tmp_path / "grades.csv")
    assert (
        (tmp_path / "grades.csv")
        .read_text(encoding="utf-8")
        .splitlines()[1]
        .startswith("caf\\udce9,")
    )


def test_the_csv_escapes_names_as_the_table_does(tmp_path):
    report = GradeReport((ExerciseGrade("x\x1b[2J", "a.ipynb", "-", False, 0, 1, "no"),))
    write_csv(report, tmp_path / "grades.csv")
    assert "\x1b" not in (tmp_path / "grades.csv").read_text(encoding="utf-8")
