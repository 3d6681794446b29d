"""The course loop with nbgrader 0.9, unchanged, on notebook 04 (make test-reference, in
its own environment .venv-nbgrader).

generate_assignment turns the complete notebook into the release; autograde gives a
solved submission every point and an untouched one none (a failing check raises under
nbgrader, so an autograded cell that only printed its verdict cannot earn points);
generate_feedback writes the learner's report.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.reference

ROOT = Path(__file__).resolve().parents[2]
NAME = "04_implement_chunking.ipynb"


def nbgrader(course: Path, *args: str) -> None:
    # nbgrader runs `alembic` from its own environment's bin/ to set up its database.
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    done = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=course,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def solutions() -> dict[str, str]:
    """exercise -> the complete notebook's solution cell, without its label and markers."""
    found = {}
    for cell in nbformat.read(ROOT / "notebooks" / NAME, as_version=4).cells:
        exercise = cell.metadata.get("raglab", {}).get("exercise")
        if exercise:
            lines = cell.source.split("\n")[1:]
            found[exercise] = "\n".join(
                line
                for line in lines
                if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION")
            )
    return found


def test_generate_autograde_and_feedback_on_notebook_04(tmp_path):
    pytest.importorskip("nbgrader", reason="make test-reference runs this in .venv-nbgrader")
    course = tmp_path / "course"
    (course / "source" / "ps04").mkdir(parents=True)
    shutil.copy(ROOT / "notebooks" / NAME, course / "source" / "ps04")
    (course / "nbgrader_config.py").write_text(
        f"c = get_config()\nc.CourseDirectory.root = {str(course)!r}\n", encoding="utf-8"
    )
    nbgrader(course, "generate_assignment", "ps04", "--force")
    release = course / "release" / "ps04" / NAME
    released = release.read_text(encoding="utf-8")
    assert "### BEGIN SOLUTION" not in released and "raise NotImplementedError()" in released

    answers = solutions()
    for learner, solved in (("solved", True), ("untouched", False)):
        nb = nbformat.read(release, as_version=4)
        for cell in nb.cells:
            exercise = cell.metadata.get("raglab", {}).get("exercise")
            if solved and exercise:
                cell.source = answers[exercise]
        folder = course / "submitted" / learner / "ps04"
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / NAME)
    nbgrader(course, "autograde", "ps04", "--create", "--force")
    nbgrader(course, "generate_feedback", "ps04", "--force")
    nbgrader(course, "export", "--to", str(tmp_path / "grades.csv"))

    with open(tmp_path / "grades.csv", newline="", encoding="utf-8") as file:
        scores = {
            row["student_id"]: (float(row["score"]), float(row["max_score"]))
            for row in csv.DictReader(file)
        }
    course_nb = json.loads((ROOT / "exercises" / NAME).read_text(encoding="utf-8"))
    points = float(sum(e["points"] for e in course_nb["metadata"]["raglab"]["exercises"]))
    assert scores == {"solved": (points, points), "untouched": (0.0, points)}
    feedback = (
        course / "feedback" / "untouched" / "ps04" / NAME.replace(".ipynb", ".html")
    ).read_text("utf-8")
    assert "not implemented yet" in feedback  # the friendly message, in the learner's report
    assert "checks/core.py" not in feedback  # ... without a traceback into raglab's insides
