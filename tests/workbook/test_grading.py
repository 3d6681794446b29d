"""Grading: run notebooks in a fresh kernel, then run every exercise's check inside it.

The notebooks run once per module (a kernel start and the chunking notebook take about a
second each): the complete notebook, its generated student version, and a learner's
partial notebook (one exercise stubbed, the other's check cell deleted). The course handed
out is notebook 04 alone (the workbook fixture's exercises/), unless a test says otherwise.
"""

from __future__ import annotations

import contextlib
import csv
import io
import shutil
from pathlib import Path

import nbformat
import pytest

from raglab.workbook.checks.core import one_line
from raglab.workbook.course import graded_notebooks, not_handed_in, read_course
from raglab.workbook.exercises import build_exercises, is_check_cell, student_cell
from raglab.workbook.gradebook import (
    CSV_COLUMNS,
    ExerciseGrade,
    GradeReport,
    format_summary,
    format_table,
    total,
    write_csv,
)
from raglab.workbook.grading import (
    declared_exercises,
    grade,
    grade_command,
    grade_in_kernel,
    learner_of,
    read_grades,
    run_notebook,
    submissions,
)

ROOT = Path(__file__).resolve().parents[2]
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
    """A workbook folder away from the repository (the data comes through the package):
    notebooks/ (the complete notebook), exercises/, and a learner's notebook."""
    root = tmp_path_factory.mktemp("workbook")
    (root / "notebooks").mkdir()
    shutil.copy(COMPLETE, root / "notebooks")
    build_exercises(root / "notebooks", root / "exercises")
    # A learner's notebook: chunk solved (its check cell deleted), split_sections untouched,
    # context_header solved.
    nb = read(COMPLETE)
    cells = []
    for cell in nb.cells:
        if cell.id == "ex1-check":
            continue
        cells.append(student_cell(cell) if cell.id == "ex2-solution" else cell)
    nb.cells = cells
    (root / "class" / "learner").mkdir(parents=True)
    nbformat.write(nb, root / "class" / "learner" / NAME)
    # A notebook without exercises, in the same learner's folder.
    shutil.copy(ROOT / "notebooks" / "00_start_here.ipynb", root / "class" / "learner")
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
    """`raglab grade class/ --csv FILE`: its exit code, printed table, CSV file and progress lines."""
    csv_path = workbook / "grades.csv"
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = grade_command(
            [str(workbook / "class"), "--csv", str(csv_path), "--timeout", "60"]
            + ["--course", str(workbook / "exercises")]
        )
    return code, out.getvalue(), csv_path, err.getvalue()


def test_every_check_passes_on_the_complete_notebook(executed):
    assert check_outputs(executed["notebooks"]) == [
        "✅ chunk: all 15 cases and 200 random texts pass\n",
        "✅ split_sections: all 9 cases and 200 random texts pass\n",
        "✅ context_header: all 8 cases and the 11 chunks of hidden documents pass\n",
    ]
    grades = read_grades(executed["notebooks"])
    assert {exercise: passed for exercise, (passed, _) in grades.items()} == {
        "chunk": True,
        "split_sections": True,
        "context_header": True,
    }


def test_every_check_fails_on_the_student_stub(executed):
    outputs = check_outputs(executed["exercises"])
    assert outputs == [
        "❌ chunk: not implemented yet — write your solution in the cell above\n",
        "❌ split_sections: not implemented yet — write your solution in the cell above\n",
        "❌ context_header: not implemented yet — write your solution in the cell above\n",
    ]
    grades = read_grades(executed["exercises"])
    assert [(exercise, passed) for exercise, (passed, _) in grades.items()] == [
        ("chunk", False),
        ("split_sections", False),
        ("context_header", False),
    ]
    assert all(message.startswith("not implemented yet") for _, message in grades.values())


def test_the_rest_of_the_student_notebook_runs_on_the_reference(executed):
    errors = [
        (cell.id, output.ename)
        for cell in executed["exercises"].cells
        for output in cell.get("outputs", [])
        if output.output_type == "error"
    ]
    assert errors == []  # the stubs are defined, never called outside the checks


def test_a_partial_notebook_is_graded_even_without_its_check_cell(graded_by_command):
    code, table, _, progress = graded_by_command
    assert code == 1  # not every exercise passes
    lines = table.splitlines()
    assert lines[0].split() == ["learner", "notebook", "exercise", "points", "result", "message"]
    assert lines[1].split()[:5] == [
        "learner",
        "00_start_here.ipynb",
        "-",
        "—",
        "not",
    ]  # not a failure: "not a notebook of the course (nothing to grade)"
    assert lines[2].split()[1:6] == [NAME, "chunk", "2/2", "pass", "all"]
    assert lines[3].split()[1:6] == [NAME, "split_sections", "0/3", "FAIL", "not"]
    assert lines[4].split()[1:6] == [NAME, "context_header", "2/2", "pass", "all"]
    assert " ".join(lines[5].split()) == "learner (total) 4/7 57% handed in 1 of 1 notebook"
    assert lines[6] == "2 of 3 exercises pass, 4 of 7 points (1 learners)"
    assert lines[0].index("result") == lines[2].index("pass") == lines[3].index("FAIL")  # aligned
    assert progress.strip().startswith("[1/1] learner: 4/7 points, handed in 1 of 1 notebook (")


def test_csv_has_one_row_per_learner_and_exercise(graded_by_command):
    _, _, csv_path, _ = graded_by_command
    with open(csv_path, newline="", encoding="utf-8") as file:
        rows = list(csv.reader(file))
    assert (
        tuple(rows[0])
        == CSV_COLUMNS
        == ("learner", "notebook", "exercise", "points", "max_points", "passed", "message")
    )
    assert [row[:6] for row in rows[1:]] == [
        ["learner", "00_start_here.ipynb", "-", "0", "0", "false"],
        ["learner", NAME, "chunk", "2", "2", "true"],
        ["learner", NAME, "split_sections", "0", "3", "false"],
        ["learner", NAME, "context_header", "2", "2", "true"],
    ]


def test_a_class_is_graded_in_parallel_and_a_notebook_without_exercises_is_no_failure(
    workbook, capsys
):
    # Two learners: one hands in the complete notebook (and 00), one the untouched student copy.
    root = workbook / "two"
    for learner, source in (
        ("ada", workbook / "notebooks" / NAME),
        ("bob", workbook / "exercises" / NAME),
    ):
        (root / learner).mkdir(parents=True)
        shutil.copy(source, root / learner / NAME)
    shutil.copy(ROOT / "notebooks" / "00_start_here.ipynb", root / "ada")
    assert (
        grade_command(
            [str(root / "ada"), "--summary", "--jobs", "2", "--course", str(workbook / "exercises")]
        )
        == 0
    )  # every exercise passes
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == [
        "learner",
        "points",
        "max_points",
        "percent",
        "exercises_passed",
        "exercises",
        "notebooks_handed_in",
        "notebooks",
    ]
    assert out[1].split() == ["ada", "7", "7", "100.0", "3", "3", "1", "1"]
    report = grade(submissions([root]), jobs=2, timeout=60, course=workbook / "exercises")
    assert [line.split() for line in format_summary(report).splitlines()[1:]] == [
        ["ada", "7", "7", "100.0", "3", "3", "1", "1"],
        ["bob", "0", "7", "0.0", "0", "3", "1", "1"],
    ]


# --- without a kernel ------------------------------------------------------------------------


def learner_namespace(**functions) -> dict:
    for fn in functions.values():
        fn.__module__ = "__main__"  # as if defined in a notebook cell
    return functions


def test_grade_in_kernel_checks_the_notebooks_functions(capsys):
    from tests.workbook.test_checks_hidden import reference_copy as chunk

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
    assert read_grades(executed) == {
        "chunk": (True, "all 15 cases and 200 random texts pass"),
        "split_sections": (
            False,
            "`split_sections` is not defined — did its cell run without an error?",
        ),
        "nope": (False, "no check named 'nope' in raglab.workbook.checks"),
    }


def test_the_imported_reference_is_not_the_learners_work(capsys):
    from raglab.ingest.chunking import chunk

    grade_in_kernel([{"exercise": "chunk", "function": "chunk"}], {"chunk": chunk})
    assert (
        "not defined in the notebook (it comes from raglab.ingest.chunking)"
        in capsys.readouterr().out
    )


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
        {"exercise": "chunk", "function": "chunk", "points": 1},
        {"exercise": "split_sections", "function": "split_sections", "points": 1},
    ]


def test_an_unreadable_notebook_fails_and_one_without_exercises_does_not(tmp_path):
    """Without a course (with one, neither is a notebook of the course: not graded)."""
    (tmp_path / "bad.ipynb").write_text("{not json", encoding="utf-8")
    nbformat.write(nbformat.v4.new_notebook(), tmp_path / "empty.ipynb")
    report = grade([tmp_path / "bad.ipynb", tmp_path / "empty.ipynb"], course=None)
    bad, empty = report.grades
    assert (bad.learner, bad.exercise, bad.passed, bad.graded) == ("bad", "-", False, True)
    assert bad.message.startswith("could not read the notebook")
    assert (empty.learner, empty.graded, empty.message) == (
        "empty",
        False,
        "no exercises in this notebook (nothing to grade)",
    )
    assert not report.all_pass
    assert GradeReport((empty,)).all_pass


def test_a_lost_course_notebook_still_counts_its_exercises_at_full_points(workbook, tmp_path):
    """An unreadable 04 and a 04 stripped of its exercises: each course exercise fails at its
    points, so the learner's total is out of the same maximum as everyone else's."""
    (tmp_path / "ann").mkdir()
    (tmp_path / "ann" / "04_implement_chunking.ipynb").write_text("{not json", encoding="utf-8")
    (tmp_path / "bob").mkdir()
    nbformat.write(nbformat.v4.new_notebook(), tmp_path / "bob" / "04_implement_chunking (1).ipynb")
    report = grade([tmp_path], jobs=1, timeout=30, course=workbook / "exercises")
    rows = {(g.learner, g.exercise): (g.passed, g.points, g.max_points) for g in report.grades}
    assert rows == {
        ("ann", "chunk"): (False, 0, 2),
        ("ann", "split_sections"): (False, 0, 3),
        ("ann", "context_header"): (False, 0, 2),
        ("bob", "chunk"): (False, 0, 2),
        ("bob", "split_sections"): (False, 0, 3),
        ("bob", "context_header"): (False, 0, 2),
    }
    assert all(g.graded for g in report.grades)
    assert next(g for g in report.grades if g.learner == "ann").message.startswith(
        "could not read the notebook"
    )


def test_a_learner_who_handed_in_05_to_11_is_graded_out_of_the_whole_course():
    """The issue's learner: every exercise of 05-11 passed, the other notebooks (01-04, and
    any after 11) never handed in. The total is the course's, not that of what was handed in."""
    course = read_course()
    graded = graded_notebooks(course)
    later = [n for n in graded if "05" <= n <= "11"]
    passed = [
        ExerciseGrade("ann", course[n].name, e["exercise"], True, e["points"], e["points"], "ok")
        for n in later
        for e in course[n].exercises
    ]
    handed_in = [Path(course[n].name) for n in later]
    missing = not_handed_in("ann", handed_in, graded, course)
    report = GradeReport(tuple(passed + missing))
    earned = sum(g.points for g in passed)
    whole = sum(e["points"] for n in course.values() for e in n.exercises)
    assert earned < whole and {g.notebook[:2] for g in missing} == set(graded) - set(later)
    assert {"01", "02", "03", "04"} <= {g.notebook[:2] for g in missing}
    t = total(report.grades)
    handed, every = len(later), len(graded_notebooks(course))  # 7 of 11 when this was written
    assert (t.points, t.max_points, t.handed_in, t.notebooks) == (earned, whole, handed, every)
    assert " ".join(format_table(report).splitlines()[-2].split()) == (
        f"ann (total) {earned}/{whole} {100 * earned / whole:.0f}% handed in {handed} of {every} notebooks"
    )


def test_without_a_course_a_lost_notebook_is_one_failed_row(tmp_path):
    (tmp_path / "04_implement_chunking.ipynb").write_text("{not json", encoding="utf-8")
    [row] = grade([tmp_path / "04_implement_chunking.ipynb"], course=None).grades
    assert (row.exercise, row.max_points, row.graded) == ("-", 0, True)


def test_the_grade_command_refuses_a_course_that_is_no_folder(tmp_path, capsys):
    with pytest.raises(SystemExit):
        grade_command([str(tmp_path), "--course", str(tmp_path / "nope")])
    assert "is not a folder of student notebooks" in capsys.readouterr().err


def test_the_learner_comes_from_the_folder_or_the_file_name():
    assert learner_of(Path("class/ann/ps1/04_implement_chunking.ipynb"), Path("class")) == "ann"
    assert learner_of(Path("class/ann.ipynb"), Path("class")) == "ann"
    assert learner_of(Path("class/ann/04_implement_chunking.ipynb")) == "ann"
    assert learner_of(Path("submissions/ann_04.ipynb")) == "ann_04"


def test_format_table_and_csv_without_running_anything(tmp_path):
    report = GradeReport(
        (
            ExerciseGrade("ann", "a.ipynb", "chunk", True, 2, 2, "ok"),
            ExerciseGrade("ann", "b.ipynb", "split_sections", False, 0, 3, "x" * 300),
            ExerciseGrade("bo", "a.ipynb", "chunk", False, 0, 2, "no"),
        )
    )
    table = format_table(report).splitlines()
    assert table[1] == "ann      a.ipynb   chunk           2/2     pass    ok"
    assert table[2] == "ann      a.ipynb   (notebook)      2/2"
    assert table[3].endswith("…") and len(table[3].split("FAIL    ")[1]) == 90
    assert (
        table[5] == "ann      (total)                   2/5     40%     handed in 2 of 2 notebooks"
    )
    assert table[-1] == "1 of 3 exercises pass, 2 of 7 points (2 learners)"
    write_csv(report, tmp_path / "g.csv")
    assert (tmp_path / "g.csv").read_text(encoding="utf-8").splitlines()[:2] == [
        "learner,notebook,exercise,points,max_points,passed,message",
        "ann,a.ipynb,chunk,2,2,true,ok",
    ]


def test_grade_command_errors(tmp_path, capsys):
    assert grade_command([str(tmp_path / "missing.ipynb")]) == 1
    assert "no such notebook or folder" in capsys.readouterr().err
    assert grade_command([str(tmp_path)]) == 1
    assert "no notebooks (.ipynb) found" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        grade_command([str(tmp_path), "--timeout", "0"])
    with pytest.raises(ValueError, match=r"timeout must be > 0 seconds \(got timeout=0\)"):
        grade([], timeout=0)


def test_a_crash_or_an_endless_cell_costs_only_that_learner(workbook):
    root = workbook / "risky"
    complete = read(workbook / "notebooks" / NAME)
    for learner, source in (("crash", "import os\nos._exit(1)"), ("loop", "while True:\n    pass")):
        nb = read(workbook / "notebooks" / NAME)
        nb.cells.insert(3, nbformat.v4.new_code_cell(source))
        (root / learner).mkdir(parents=True)
        nbformat.write(nb, root / learner / NAME)
    (root / "fine").mkdir()
    nbformat.write(complete, root / "fine" / NAME)
    # 10 s a cell: long enough that a well-behaved cell never hits it on a loaded machine
    # (3 s did, under the whole suite on 2 cores), short enough to wait for the endless one.
    report = grade(submissions([root]), timeout=10, jobs=2, course=workbook / "exercises")
    points = {learner: sum(g.points for g in report.of(learner)) for learner in report.learners()}
    # The endless cell is interrupted after 10 s and the run goes on: its exercises still count.
    assert points == {"crash": 0, "fine": 7, "loop": 7}
    assert {g.message for g in report.of("crash")} == {
        "the notebook could not be run (DeadKernelError: Kernel died)"
    }


def test_a_notebook_named_alone_is_graded_out_of_its_own_points(workbook, tmp_path, capsys):
    """`raglab grade 04_….ipynb` is a learner asking how they did on 04: out of 04's points.
    The same notebook in a folder is a learner's workbook: out of the whole course."""
    course = tmp_path / "course"
    shutil.copytree(workbook / "exercises", course)
    later = sorted((ROOT / "exercises").glob("05_*.ipynb"))[0]
    shutil.copy(later, course / later.name)
    learner = tmp_path / "ann"
    learner.mkdir()
    shutil.copy(workbook / "notebooks" / NAME, learner / NAME)

    assert grade_command([str(learner / NAME), "--course", str(course), "--summary"]) == 0
    assert "handed in 1 of 1 notebook (" in capsys.readouterr().err
    assert grade_command([str(learner), "--course", str(course), "--summary"]) == 1
    assert "handed in 1 of 2 notebooks (" in capsys.readouterr().err
