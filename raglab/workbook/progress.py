"""`raglab progress [FOLDER]`: the exercises a learner has passed so far, across the workbook.

Read from the learner's own saved notebooks, without running anything: each check cell's
saved output says ✅ (passed), ❌ or an error (not yet), or nothing (not run yet). Save
the notebook (Ctrl+S) after running a check so that its verdict is on disk. A notebook that
cannot be read, or whose exercise metadata is malformed, gets one line saying why; the
others are still shown.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from raglab.text import shown
from raglab.workbook.checks.core import FAIL, PASS
from raglab.workbook.exercises import (
    EXERCISES,
    ExerciseError,
    _notebooks_in,
    _read,
    exercise_list,
    raglab_metadata,
)

PASSED, NOT_YET, NOT_RUN = "passed", "not yet", "not run"


@dataclass(frozen=True, slots=True)
class ExerciseProgress:
    notebook: str
    exercise: str
    points: int
    status: str  # PASSED, NOT_YET or NOT_RUN


def check_status(cell: dict) -> str:
    """What a check cell's saved output says: PASSED, NOT_YET or NOT_RUN."""
    texts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            return NOT_YET  # nbgrader's raising check, or the learner's code crashed
        texts.append(output.get("text", ""))
    text = "".join(texts)
    if FAIL in text:
        return NOT_YET
    return PASSED if PASS in text else NOT_RUN


def notebook_progress(nb: dict, name: str) -> list[ExerciseProgress]:
    """One entry per exercise the notebook declares, from its check cell's saved output.

    Raises ExerciseError when the notebook's exercise metadata is malformed.
    """
    exercises = exercise_list(nb)  # checks the cells too
    checks: dict[str, dict] = {}
    for i, cell in enumerate(nb["cells"]):
        check = raglab_metadata(cell, where=f"cell {i}").get("check")
        if isinstance(check, str):
            checks.setdefault(check, cell)
    return [
        ExerciseProgress(
            name,
            item["exercise"],
            item["points"],
            check_status(checks[item["exercise"]]) if item["exercise"] in checks else NOT_RUN,
        )
        for item in exercises
    ]


def folder_progress(folder: Path) -> tuple[list[ExerciseProgress], list[str]]:
    """Every notebook's progress, and one line per notebook that could not be read (why)."""
    if not folder.is_dir():
        raise ExerciseError(f"no such folder: {folder}")
    entries: list[ExerciseProgress] = []
    problems: list[str] = []
    for path in _notebooks_in(folder):
        try:
            entries += notebook_progress(_read(path), path.name)
        except ExerciseError as error:  # _read's message names the file already
            problems.append(str(error) if str(error).startswith(str(path)) else f"{path}: {error}")
    return entries, problems


def format_progress(entries: list[ExerciseProgress]) -> str:
    marks = {PASSED: PASS, NOT_YET: FAIL, NOT_RUN: "·"}
    width = max((len(shown(e.notebook)) for e in entries), default=0)
    lines = [
        f"{shown(e.notebook):<{width}}  {marks[e.status]} {shown(e.exercise)} ({e.status})"
        for e in entries
    ]
    done = [e for e in entries if e.status == PASSED]
    lines.append(
        f"{len(done)} of {len(entries)} exercises passed, "
        f"{sum(e.points for e in done)} of {sum(e.points for e in entries)} points"
    )
    return "\n".join(lines)


def progress_command(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="raglab progress",
        description="Show which exercises you have passed so far, read from your saved "
        "notebooks (save after running a check).",
    )
    parser.add_argument(
        "folder",
        nargs="?",
        type=Path,
        default=EXERCISES,
        help=f"your notebooks (default {EXERCISES}/)",
    )
    args = parser.parse_args(argv)
    try:
        entries, problems = folder_progress(args.folder)
    except ExerciseError as error:
        print(f"raglab progress: error: {shown(str(error))}", file=sys.stderr)
        return 1
    print(format_progress(entries))
    for problem in problems:
        print(f"raglab progress: error: {shown(problem)}", file=sys.stderr)
    return 1 if problems else 0
