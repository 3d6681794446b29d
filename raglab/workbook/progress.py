"""`raglab progress [FOLDER]`: the exercises a learner has passed so far, across the workbook.

Read from the learner's own saved notebooks, without running anything: each check cell's
saved output says ✅ (passed), ❌ or an error (not yet), or nothing (not run yet). Save
the notebook (Ctrl+S) after running a check so that its verdict is on disk.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from raglab.workbook.checks.core import FAIL, PASS
from raglab.workbook.exercises import EXERCISES, ExerciseError, _notebooks_in, _read, exercise_list

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
    """One entry per exercise the notebook declares, from its check cell's saved output."""
    checks = {
        cell["metadata"]["raglab"]["check"]: cell
        for cell in nb["cells"]
        if "check" in cell.get("metadata", {}).get("raglab", {})
    }
    return [
        ExerciseProgress(
            name,
            item["exercise"],
            item["points"],
            check_status(checks[item["exercise"]]) if item["exercise"] in checks else NOT_RUN,
        )
        for item in exercise_list(nb)
    ]


def folder_progress(folder: Path) -> list[ExerciseProgress]:
    if not folder.is_dir():
        raise ExerciseError(f"no such folder: {folder}")
    return [
        entry
        for path in _notebooks_in(folder)
        for entry in notebook_progress(_read(path), path.name)
    ]


def format_progress(entries: list[ExerciseProgress]) -> str:
    marks = {PASSED: PASS, NOT_YET: FAIL, NOT_RUN: "·"}
    width = max((len(e.notebook) for e in entries), default=0)
    lines = [f"{e.notebook:<{width}}  {marks[e.status]} {e.exercise} ({e.status})" for e in entries]
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
        entries = folder_progress(args.folder)
    except ExerciseError as error:
        print(f"raglab progress: error: {error}", file=sys.stderr)
        return 1
    print(format_progress(entries))
    return 0
