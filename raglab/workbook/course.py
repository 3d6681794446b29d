"""The course as handed out: which exercises each student notebook holds, and their points.

The grader learns a notebook's exercises from the notebook itself (`declared_exercises`).
A submission can lose them: a file that no longer opens, or a notebook whose exercise
cells and metadata were deleted. Then the course says what the notebook should have held,
so each missing exercise is graded as failed at its full points, instead of the notebook
counting for nothing and a learner's percentage going up. The course is the folder of
student notebooks the instructor handed out (`raglab exercises build` writes it:
exercises/ in this repository); a submission is matched to a course notebook by its
two-digit number, so "04_implement_chunking (1).ipynb" is still notebook 04.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

COURSE = Path(__file__).resolve().parents[2] / "exercises"
"""The student notebooks of this repository: the default course (absent from a bare install)."""

_NUMBER = re.compile(r"^(\d\d)_")


def course_exercises(name: str, course: Path | None = COURSE) -> list[dict]:
    """The exercises (`{"exercise", "function", "points"}`) that the course notebook with
    the number of file `name` holds; none when no course notebook has that number.

    >>> [e["exercise"] for e in course_exercises("04_implement_chunking (1).ipynb")]
    ['chunk', 'split_sections']
    >>> course_exercises("notes.ipynb"), course_exercises("04_x.ipynb", course=None)
    ([], [])
    """
    number = _NUMBER.match(name)
    if course is None or not number:
        return []
    return [dict(item) for item in _catalogue(Path(course).resolve()).get(number[1], [])]


@cache
def _catalogue(course: Path) -> dict[str, list[dict]]:
    """Notebook number -> the exercises its student notebook lists in its metadata."""
    found: dict[str, list[dict]] = {}
    for path in sorted(course.glob("[0-9][0-9]_*.ipynb")) if course.is_dir() else []:
        meta = json.loads(path.read_text(encoding="utf-8")).get("metadata", {})
        found[path.name[:2]] = list(meta.get("raglab", {}).get("exercises", []))
    return found
