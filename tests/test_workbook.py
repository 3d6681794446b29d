"""Every exercise in the workbook is honest: its check fails on the stub, passes on the solution.

Each notebook with exercises runs twice in a fresh kernel, as the grader runs it: the
complete version from notebooks/ and the student version generated from it. The grader
re-runs every check itself at the end, so this holds whatever the check cells print.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from raglab.exercises import student_notebook
from raglab.grading import declared_exercises, read_grades, run_notebook

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
