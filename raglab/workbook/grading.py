"""Grade learners' notebooks: run each one, then run every exercise's check on it.

Each notebook runs top to bottom in a fresh Python kernel (this environment's Python),
with a time limit per cell; a cell that fails or times out does not stop the run, as
in a learner's own session. Then the grader runs the checks itself, inside that same
kernel, on the functions the notebook defined — so a learner who deleted or edited a
check cell is graded all the same. Which function belongs to which exercise comes from
the solution cells' metadata, kept in the student version:

    {"raglab": {"exercise": "chunk", "function": "chunk"}}

Grading runs the learners' code: run it on a machine (or in a container) where that
is acceptable. It is feedback at scale, not proof against cheating: code in the notebook
runs in the same kernel as the checks and could patch them.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_TIMEOUT = 60  # seconds per cell
MARKER = "RAGLAB-GRADES "  # starts the line that carries the grades out of the kernel
CSV_COLUMNS = ("notebook", "exercise", "passed", "message")
NO_EXERCISE = "-"  # the exercise column when a whole notebook could not be graded
LABEL_PADDING = re.compile(r"^(\w+):\s+")
TABLE_MESSAGE = 100  # characters of the message shown in the table (the CSV has it all)


@dataclass(frozen=True, slots=True)
class ExerciseGrade:
    """One exercise of one notebook: passed or not, and the check's verdict in one line."""

    notebook: str
    exercise: str
    passed: bool
    message: str


@dataclass(frozen=True, slots=True)
class GradeReport:
    """Every exercise of every graded notebook, in the order given."""

    grades: tuple[ExerciseGrade, ...]

    @property
    def passed(self) -> int:
        return sum(g.passed for g in self.grades)

    @property
    def total(self) -> int:
        return len(self.grades)

    def for_notebook(self, name: str) -> list[ExerciseGrade]:
        return [g for g in self.grades if g.notebook == name]


# --- inside the learner's kernel -----------------------------------------------------------


def grade_in_kernel(exercises: list[dict[str, str]], namespace: dict[str, Any]) -> None:
    """Run each exercise's check on the notebook's function; print the grades as JSON.

    Called by the cell the grader appends to the notebook. The checks' own printing is
    captured, so the only output is one line: MARKER followed by the JSON list.
    """
    from raglab.workbook.checks import CHECKS

    grades = []
    for item in exercises:
        exercise, function = item["exercise"], item["function"]
        fn = namespace.get(function)
        if exercise not in CHECKS:
            passed, message = False, f"no check named {exercise!r} in raglab.workbook.checks"
        elif fn is None:
            passed, message = (
                False,
                f"`{function}` is not defined — did its cell run without an error?",
            )
        elif callable(fn) and getattr(fn, "__module__", None) != "__main__":
            # The reference imported under the exercise's name is not the learner's work.
            # (An answer exercise's value — a dict, a set — has no module to ask.)
            passed, message = (
                False,
                f"`{function}` is not defined in the notebook (it comes from {fn.__module__})",
            )
        else:
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    result = CHECKS[exercise](fn)
                passed, message = result.passed, one_line(result.message)
            except Exception as error:  # a bug in a check must not hide the other grades
                passed, message = (
                    False,
                    f"the check itself failed ({type(error).__name__}: {error})",
                )
        grades.append({"exercise": exercise, "passed": passed, "message": message})
    print(MARKER + json.dumps(grades, ensure_ascii=False))


def one_line(message: str) -> str:
    """A check's verdict on one line, without its ✅/❌ and name (the table has those).

    >>> one_line("❌ chunk: case 'overlap'\\n   input:    chunk('abc')\\n   got:      []")
    "case 'overlap'; input: chunk('abc'); got: []"
    """
    # "   expected: [...]" -> "expected: [...]"; the values themselves are left untouched.
    lines = [LABEL_PADDING.sub(r"\1: ", line.strip()) for line in message.strip().split("\n")]
    first = lines[0].split(": ", 1)[-1] if lines[0][:1] in ("✅", "❌") else lines[0]
    return "; ".join([first] + lines[1:])


# --- running a notebook --------------------------------------------------------------------


def declared_exercises(nb: dict) -> list[dict[str, str]]:
    """The exercises of a notebook, from its solution cells and its own metadata.

    The student version also lists them for the whole notebook, so an exercise whose
    cell the learner deleted is still graded (as failed), not silently skipped.
    """
    from raglab.workbook.exercises import exercise_list

    found = exercise_list(nb) + list(nb.get("metadata", {}).get("raglab", {}).get("exercises", []))
    unique: dict[str, dict[str, str]] = {}
    for item in found:
        unique.setdefault(
            item["exercise"], {"exercise": item["exercise"], "function": item["function"]}
        )
    return list(unique.values())


def kernel_manager():
    """A kernel running this very Python, whatever kernels Jupyter has registered."""
    import ipykernel.kernelspec
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager

    class CurrentPython(KernelSpecManager):
        def get_kernel_spec(self, kernel_name: str) -> KernelSpec:
            return KernelSpec(
                resource_dir=ipykernel.kernelspec.RESOURCES,
                **ipykernel.kernelspec.get_kernel_dict(),
            )

    return AsyncKernelManager(kernel_name="python3", kernel_spec_manager=CurrentPython())


def run_notebook(
    nb: Any, exercises: list[dict[str, str]], *, cwd: Path, timeout: int = DEFAULT_TIMEOUT
):
    """Execute `nb` (a NotebookNode, changed in place) with a grading cell appended.

    Returns the executed notebook. Errors in cells are kept as outputs and the run goes
    on; a cell running longer than `timeout` seconds is interrupted.
    """
    import nbformat

    source = (
        "from raglab.workbook.grading import grade_in_kernel\ngrade_in_kernel("
        + json.dumps(exercises)
        + ", globals())"
    )
    nb.cells.append(nbformat.v4.new_code_cell(source, id="raglab-grading"))
    return execute(nb, cwd=cwd, timeout=timeout, allow_errors=True)


def execute(nb: Any, *, cwd: Path, timeout: int, allow_errors: bool) -> Any:
    """Run every cell of `nb` (changed in place) in a fresh kernel of this Python, in `cwd`.

    A cell running longer than `timeout` seconds is interrupted. With `allow_errors`, an
    error is kept as the cell's output and the run goes on; without, it stops the run.
    """
    from nbclient import NotebookClient

    client = NotebookClient(
        nb,
        km=kernel_manager(),
        timeout=timeout,
        allow_errors=allow_errors,
        interrupt_on_timeout=True,
        record_timing=False,
        resources={"metadata": {"path": str(cwd)}},
    )
    client.execute(stderr=subprocess.DEVNULL)  # the kernel process's own log, not cell output
    return nb


def read_grades(executed: Any, notebook: str) -> list[ExerciseGrade] | None:
    """The grades printed by the grading cell, or None when it printed none."""
    for output in executed.cells[-1].get("outputs", []):
        for line in output.get("text", "").split("\n"):
            if line.startswith(MARKER):
                return [
                    ExerciseGrade(notebook, g["exercise"], g["passed"], g["message"])
                    for g in json.loads(line[len(MARKER) :])
                ]
    return None


def grade_notebook(path: Path, *, timeout: int = DEFAULT_TIMEOUT) -> list[ExerciseGrade]:
    """Grade one notebook; a notebook that cannot be run gets one failed row saying why."""
    import nbformat

    path = Path(path)
    name = str(path)  # the path as given: learners' notebooks share file names
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as error:  # a missing file, bad JSON, or not a notebook at all
        return [ExerciseGrade(name, NO_EXERCISE, False, f"could not read the notebook: {error}")]
    exercises = declared_exercises(nb)
    if not exercises:
        return [
            ExerciseGrade(
                name, NO_EXERCISE, False, "no exercises found (no cell has raglab metadata)"
            )
        ]
    try:
        grades = read_grades(
            run_notebook(nb, exercises, cwd=path.parent.resolve(), timeout=timeout), name
        )
        reason = "the grading cell printed nothing"
    except Exception as error:  # the kernel died or could not start
        grades, reason = None, f"the notebook could not be run ({type(error).__name__}: {error})"
    if grades is None:
        return [ExerciseGrade(name, item["exercise"], False, reason) for item in exercises]
    return grades


def grade(paths: Sequence[Path], *, timeout: int = DEFAULT_TIMEOUT) -> GradeReport:
    """Run every notebook in `paths` in a fresh kernel and grade each exercise in it."""
    if timeout <= 0:
        raise ValueError(f"timeout must be > 0 seconds (got timeout={timeout})")
    grades: list[ExerciseGrade] = []
    for path in paths:
        grades.extend(grade_notebook(Path(path), timeout=timeout))
    return GradeReport(tuple(grades))


# --- reporting -------------------------------------------------------------------------------


def format_table(report: GradeReport) -> str:
    """A plain, aligned table: one row per exercise, and a total."""
    header = ("notebook", "exercise", "result", "message")
    rows = [
        (g.notebook, g.exercise, "pass" if g.passed else "FAIL", _cut(g.message, TABLE_MESSAGE))
        for g in report.grades
    ]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(3)]
    lines = [
        "  ".join([*(cell.ljust(w) for cell, w in zip(row[:3], widths)), row[3]]).rstrip()
        for row in [header, *rows]
    ]
    lines.append(f"{report.passed} of {report.total} exercises pass")
    return "\n".join(lines)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def write_csv(report: GradeReport, path: Path) -> None:
    """One row per exercise: notebook, exercise, passed (true/false), message."""
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(CSV_COLUMNS)
        for g in report.grades:
            writer.writerow([g.notebook, g.exercise, "true" if g.passed else "false", g.message])


def grade_command(argv: list[str]) -> int:
    """`raglab grade PATH... [--csv FILE] [--timeout S]`: exit 0 when every exercise passes."""
    parser = argparse.ArgumentParser(
        prog="raglab grade",
        description="Run learners' notebooks in a fresh kernel and check every exercise "
        "(the checks run even if a check cell was deleted).",
    )
    parser.add_argument(
        "paths", nargs="+", type=Path, metavar="PATH", help="notebooks (.ipynb) or folders of them"
    )
    parser.add_argument(
        "--csv", type=Path, metavar="FILE", help="also write the grades to this CSV file"
    )
    parser.add_argument(
        "--timeout",
        type=int,
        default=DEFAULT_TIMEOUT,
        metavar="S",
        help=f"seconds allowed per cell (default {DEFAULT_TIMEOUT})",
    )
    args = parser.parse_args(argv)
    if args.timeout <= 0:
        parser.error(f"--timeout must be > 0 seconds (got {args.timeout})")
    paths = []
    for path in args.paths:
        if path.is_dir():
            paths.extend(sorted(path.glob("*.ipynb")))
        elif path.exists():
            paths.append(path)
        else:
            print(f"raglab grade: error: no such notebook: {path}", file=sys.stderr)
            return 1
    if not paths:
        print(
            "raglab grade: error: no notebooks (.ipynb) found in "
            + ", ".join(map(str, args.paths)),
            file=sys.stderr,
        )
        return 1
    report = grade(paths, timeout=args.timeout)
    print(format_table(report))
    if args.csv:
        write_csv(report, args.csv)
        print(f"wrote {args.csv}")
    return 0 if report.passed == report.total else 1
