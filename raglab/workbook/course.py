"""The course as handed out: which exercises each student notebook holds, and their points.

Points come from the course, never from a submission. A learner can edit the metadata of the
notebook they hand in (set an exercise to 100 points, list another notebook's exercises,
break it), so the grader takes a submission's exercises, functions and points from the course
notebook with the same two-digit number ("04_implement_chunking (1).ipynb" is still notebook
04) and reads nothing of the submission but its code. The course is the folder of student
notebooks the instructor handed out (`raglab exercises build` writes it: exercises/ in this
repository; the complete notebooks/ serve as well).

Every learner is graded out of the course's total: the points of every exercise of every
course notebook. An exercise a submission lost, or a notebook a learner did not hand in,
fails at its full points instead of raising their percentage (the table says how many
notebooks each learner handed in); a notebook handed in twice counts once (its best copy).
To grade one assignment alone, pass its notebooks as the course (`raglab grade --course`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from raglab.workbook.exercises import ExerciseError, exercise_list, listed_exercises
from raglab.workbook.gradebook import NO_EXERCISE, NOT_HANDED_IN, ExerciseGrade

COURSE = Path(__file__).resolve().parents[2] / "exercises"
"""The student notebooks of this repository: the default course (absent from a bare install)."""

_NUMBER = re.compile(r"^(\d\d)_")


@dataclass(frozen=True, slots=True)
class CourseNotebook:
    """A notebook of the course: its file name and its exercises (`{"exercise", "function",
    "points"}`, in the order the notebook holds them)."""

    name: str
    exercises: tuple[dict[str, Any], ...]


def number_of(name: str) -> str | None:
    """The two-digit number a notebook's file name starts with, if any.

    >>> number_of("04_implement_chunking (1).ipynb"), number_of("notes.ipynb")
    ('04', None)
    """
    number = _NUMBER.match(name)
    return number[1] if number else None


def read_course(course: Path | None = COURSE) -> dict[str, CourseNotebook]:
    """Notebook number -> the course notebook; {} when there is no course (None, or no folder).

    Raises ExerciseError naming a course notebook that cannot be read or whose exercise
    metadata is malformed: the instructor's own files, so the run stops before any kernel.

    >>> course = read_course()
    >>> course["04"].name, [e["points"] for e in course["04"].exercises]
    ('04_implement_chunking.ipynb', [2, 3, 2])
    """
    return {} if course is None else _catalogue(Path(course).resolve())


def course_notebook(name: str, course: Path | None = COURSE) -> CourseNotebook | None:
    """The course notebook with the number of file `name`; None when the course has none.

    >>> [e["exercise"] for e in course_notebook("04_implement_chunking (1).ipynb").exercises]
    ['chunk', 'split_sections', 'context_header']
    >>> course_notebook("notes.ipynb"), course_notebook("04_x.ipynb", course=None)
    (None, None)
    """
    number = number_of(name)
    return read_course(course).get(number) if number else None


@cache
def _catalogue(course: Path) -> dict[str, CourseNotebook]:
    found: dict[str, CourseNotebook] = {}
    for path in sorted(course.glob("[0-9][0-9]_*.ipynb")) if course.is_dir() else []:
        try:
            nb = json.loads(path.read_text(encoding="utf-8"))
            exercises = _each_once([*exercise_list(nb), *listed_exercises(nb)])
        except (OSError, ValueError) as error:  # ExerciseError and bad JSON are ValueErrors
            raise ExerciseError(f"course notebook {path}: {error}") from None
        found[path.name[:2]] = CourseNotebook(path.name, exercises)
    return found


def _each_once(exercises: Iterable[dict[str, Any]]) -> tuple[dict[str, Any], ...]:
    unique: dict[str, dict[str, Any]] = {}
    for item in exercises:
        unique.setdefault(item["exercise"], item)
    return tuple(unique.values())


# --- a class ------------------------------------------------------------------------------------


def graded_notebooks(course: Mapping[str, CourseNotebook]) -> list[str]:
    """The numbers of the course notebooks with exercises, sorted: every learner is graded
    on each of them, handed in or not."""
    return sorted(n for n, notebook in course.items() if notebook.exercises)


def not_handed_in(
    learner: str,
    paths: Iterable[Path],
    numbers: Iterable[str],
    course: Mapping[str, CourseNotebook],
) -> list[ExerciseGrade]:
    """A failed row at full points for each exercise of the notebooks of `numbers` that
    `learner` did not hand in (none of `paths` has its number)."""
    handed_in = {number_of(Path(path).name) for path in paths}
    return [
        ExerciseGrade(
            learner,
            course[n].name,
            e["exercise"],
            False,
            0,
            e["points"],
            NOT_HANDED_IN,
            handed_in=False,
        )
        for n in numbers
        if n not in handed_in
        for e in course[n].exercises
    ]


def best_copies(
    graded: Mapping[Path, list[ExerciseGrade]], course: Mapping[str, CourseNotebook]
) -> list[ExerciseGrade]:
    """Every notebook's rows, except that a course notebook handed in more than once counts
    once: its copy with the most points (the first, on a tie); each other copy gets one row
    saying so, worth nothing and no failure."""
    copies: dict[str, list[Path]] = {}
    for path in graded:
        number = number_of(path.name)
        if number is not None and number in course:
            copies.setdefault(number, []).append(path)
    rows: list[ExerciseGrade] = []
    for path, grades in graded.items():
        same = copies.get(number_of(path.name) or "", [path])
        best = max(same, key=lambda p: sum(g.points for g in graded[p]))  # first of the best
        if path is best:
            rows += grades
        elif grades:
            message = f"another copy of notebook {number_of(path.name)}: {best.name} counts"
            rows.append(
                ExerciseGrade(
                    grades[0].learner, path.name, NO_EXERCISE, False, 0, 0, message, False
                )
            )
    return rows
