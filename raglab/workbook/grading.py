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
import io
import json
import os
import queue
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from raglab.workbook.checks.core import one_line
from raglab.workbook.course import COURSE, course_exercises
from raglab.workbook.exercises import NOTEBOOK_NAME
from raglab.workbook.gradebook import (
    NO_EXERCISE,
    ExerciseGrade,
    GradeReport,
    format_summary,
    format_table,
    write_csv,
    write_summary_csv,
)

DEFAULT_TIMEOUT = 60  # seconds per cell
DEFAULT_POINTS = 1  # an exercise that declares no points
MARKER = "RAGLAB-GRADES "  # starts the line that carries the grades out of the kernel
CHECKPOINTS = ".ipynb_checkpoints"  # Jupyter's autosave copies: not submissions
POLL = 0.5  # seconds: the longest single wait for a kernel message (see kernel_manager)


# --- inside the learner's kernel -----------------------------------------------------------


def grade_in_kernel(exercises: list[dict[str, str]], namespace: dict[str, Any]) -> None:
    """Run each exercise's check on the notebook's function; print the grades as JSON.

    Called by the cell the grader appends to the notebook. The checks' own printing is
    captured, so the only output is one line: MARKER followed by the JSON list.
    """
    from raglab.workbook.checks import CHECKS, CheckFailed

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
            except CheckFailed as failed:  # NBGRADER_EXECUTION was set: the same verdict
                passed, message = False, one_line(str(failed))
            except Exception as error:  # a bug in a check must not hide the other grades
                passed, message = (
                    False,
                    f"the check itself failed ({type(error).__name__}: {error})",
                )
        grades.append({"exercise": exercise, "passed": passed, "message": message})
    print(MARKER + json.dumps(grades, ensure_ascii=False))


# --- running a notebook --------------------------------------------------------------------


def declared_exercises(nb: dict, expected: Sequence[dict] = ()) -> list[dict[str, str]]:
    """The exercises of a notebook, from its solution cells and its own metadata, and
    the `expected` ones (the course's, `raglab.workbook.course`).

    The student version also lists them for the whole notebook, so an exercise whose
    cell the learner deleted is still graded (as failed), not silently skipped.
    """
    from raglab.workbook.exercises import exercise_list

    listed = nb.get("metadata", {}).get("raglab", {}).get("exercises", [])
    found = [*exercise_list(nb), *listed, *expected]
    unique: dict[str, dict[str, str]] = {}
    for item in found:
        unique.setdefault(
            item["exercise"],
            {
                "exercise": item["exercise"],
                "function": item["function"],
                "points": int(item.get("points", DEFAULT_POINTS)),
            },
        )
    return list(unique.values())


def kernel_manager():
    """A kernel running this very Python, whatever kernels Jupyter has registered, talked
    to by a client that waits for the kernel's messages in short polls."""
    import ipykernel.kernelspec
    from jupyter_client.asynchronous.client import AsyncKernelClient
    from jupyter_client.channels import AsyncZMQSocketChannel
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import Type

    class CurrentPython(KernelSpecManager):
        def get_kernel_spec(self, kernel_name: str) -> KernelSpec:
            return KernelSpec(
                resource_dir=ipykernel.kernelspec.RESOURCES,
                **ipykernel.kernelspec.get_kernel_dict(),
            )

    class PolledChannel(AsyncZMQSocketChannel):
        # One long wait on the socket can miss a message's arrival and sleep out its whole
        # timeout (jupyter/nbclient#312): a few runs in a hundred of a cell that draws a
        # widget stalled for the full time a cell is allowed, though the kernel had replied.
        async def get_msg(self, timeout: float | None = None) -> dict[str, Any]:  # type: ignore[override]  # as its parent's
            deadline = None if timeout is None else time.monotonic() + timeout
            while True:
                left = POLL if deadline is None else max(0.0, deadline - time.monotonic())
                try:
                    return await super().get_msg(timeout=min(POLL, left))
                except queue.Empty:
                    if deadline is not None and time.monotonic() >= deadline:
                        raise

    class PolledClient(AsyncKernelClient):
        shell_channel_class = Type(PolledChannel)
        iopub_channel_class = Type(PolledChannel)

    return AsyncKernelManager(
        kernel_name="python3", kernel_spec_manager=CurrentPython(), client_factory=PolledClient
    )


def run_notebook(
    nb: Any, exercises: list[dict[str, str]], *, cwd: Path, timeout: int = DEFAULT_TIMEOUT
):
    """Execute `nb` (a NotebookNode, changed in place) with a grading cell appended.

    Returns the executed notebook. Errors in cells are kept as outputs and the run goes
    on; a cell running longer than `timeout` seconds is interrupted.
    """
    import nbformat

    nb.cells.append(nbformat.v4.new_code_cell(grading_source(exercises), id="raglab-grading"))
    return execute(nb, cwd=cwd, timeout=timeout, allow_errors=True)


def grading_source(exercises: list[dict[str, Any]]) -> str:
    """The grading cell's code: `grade_in_kernel` on the notebook's own functions."""
    names = [{"exercise": e["exercise"], "function": e["function"]} for e in exercises]
    return (
        "from raglab.workbook.grading import grade_in_kernel\n"
        f"grade_in_kernel({json.dumps(names)}, globals())"
    )


def execute(nb: Any, *, cwd: Path, timeout: int, allow_errors: bool) -> Any:
    """Run every cell of `nb` (changed in place) in a fresh kernel of this Python, in `cwd`;
    the kernel is shut down when the last cell has run (or the run stopped).

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
        shutdown_kernel="immediate",  # nothing is left to run in it
    )
    # nbclient leaves running a kernel whose manager it was given; cleanup_kc=True shuts this
    # one down as soon as the notebook is done (else each kernel waits for the process to end).
    # stderr: the kernel process's own log, not cell output.
    client.execute(cleanup_kc=True, stderr=subprocess.DEVNULL)
    return nb


def read_grades(executed: Any) -> dict[str, tuple[bool, str]] | None:
    """exercise -> (passed, message), as printed by the grading cell; None when it printed none."""
    for output in executed.cells[-1].get("outputs", []):
        for line in output.get("text", "").split("\n"):
            if line.startswith(MARKER):
                return {
                    g["exercise"]: (g["passed"], g["message"])
                    for g in json.loads(line[len(MARKER) :])
                }
    return None


def grade_notebook(
    path: Path, *, learner: str = "", timeout: int = DEFAULT_TIMEOUT, course: Path | None = COURSE
) -> list[ExerciseGrade]:
    """Grade one notebook: a row per exercise, or one row saying why there is nothing to grade.

    The exercises are the notebook's own and those `course`'s notebook of the same number
    holds (`raglab.workbook.course`): one the submission lost is failed, at its full points.
    """
    import nbformat

    path = Path(path)
    learner = learner or learner_of(path)

    def row(exercise: str, passed: bool, message: str, points: int = 0, graded: bool = True):
        return ExerciseGrade(
            learner, path.name, exercise, passed, points if passed else 0, points, message, graded
        )

    expected = course_exercises(path.name, course)
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as error:  # a missing file, bad JSON, or not a notebook at all
        unread = f"could not read the notebook: {one_line(str(error))}"
        if expected:  # each exercise it should hold fails, at its full points
            return [row(e["exercise"], False, unread, int(e["points"])) for e in expected]
        return [row(NO_EXERCISE, False, unread)]
    exercises = declared_exercises(nb, expected)
    if not exercises:
        return [
            row(
                NO_EXERCISE, False, "no exercises in this notebook (nothing to grade)", graded=False
            )
        ]
    try:
        results = read_grades(
            run_notebook(nb, exercises, cwd=path.parent.resolve(), timeout=timeout)
        )
        reason = "the grading cell printed nothing (did the kernel die?)"
    except Exception as error:  # the kernel died or could not start
        results, reason = (
            None,
            f"the notebook could not be run ({type(error).__name__}: {one_line(str(error))})",
        )
    return [
        row(
            item["exercise"],
            *(results or {}).get(item["exercise"], (False, reason)),
            item["points"],
        )
        for item in exercises
    ]


# --- a class ----------------------------------------------------------------------------------


def learner_of(path: Path, folder: Path | None = None) -> str:
    """Who submitted `path`: the first folder below `folder` it sits in, else its own folder
    when it has a workbook name (`alice/04_implement_chunking.ipynb`), else its file name.

    >>> learner_of(Path("class/alice/ps1/04_implement_chunking.ipynb"), Path("class"))
    'alice'
    >>> learner_of(Path("class/bob.ipynb"), Path("class")), learner_of(Path("carol/01_understand.ipynb"))
    ('bob', 'carol')
    """
    if folder is not None:
        parts = path.relative_to(folder).parts
        if len(parts) > 1:
            return parts[0]
    if NOTEBOOK_NAME.match(path.name):
        return path.resolve().parent.name
    return path.stem


def submissions(paths: Sequence[Path]) -> dict[str, list[Path]]:
    """learner -> their notebooks, from notebooks and folders (searched to any depth).

    Raises FileNotFoundError naming a path that does not exist.
    """
    found: dict[str, list[Path]] = {}
    for path in map(Path, paths):
        if path.is_dir():
            notebooks = sorted(p for p in path.rglob("*.ipynb") if CHECKPOINTS not in p.parts)
            for notebook in notebooks:
                found.setdefault(learner_of(notebook, path), []).append(notebook)
        elif path.exists():
            found.setdefault(learner_of(path), []).append(path)
        else:
            raise FileNotFoundError(f"no such notebook or folder: {path}")
    return found


def grade(
    work: dict[str, list[Path]] | Sequence[Path],
    *,
    timeout: int = DEFAULT_TIMEOUT,
    jobs: int | None = None,
    progress: Callable[[str], None] | None = None,
    course: Path | None = COURSE,
) -> GradeReport:
    """Grade every learner's notebooks, `jobs` learners at a time (default: the core count).

    `course`: the folder of student notebooks handed out (see `grade_notebook`); None to
    grade each notebook by what it declares alone.

    Each notebook runs in its own kernel, so one learner's endless loop or crash costs that
    learner a failed row (a timeout, a dead kernel), never the others' grades.
    """
    if timeout <= 0:
        raise ValueError(f"timeout must be > 0 seconds (got timeout={timeout})")
    if not isinstance(work, dict):
        work = submissions(work)
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(work) or 1))

    def one_learner(learner: str) -> list[ExerciseGrade]:
        return [
            g
            for path in work[learner]
            for g in grade_notebook(path, learner=learner, timeout=timeout, course=course)
        ]

    results: dict[str, list[ExerciseGrade]] = {}
    start = time.monotonic()
    # Threads are enough: the work happens in the kernels, one process per notebook.
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(one_learner, learner): learner for learner in work}
        for done, future in enumerate(as_completed(futures), start=1):
            learner = futures[future]
            results[learner] = future.result()
            if progress is not None:
                passed = [g for g in results[learner] if g.graded]
                points = sum(g.points for g in passed)
                most = sum(g.max_points for g in passed)
                progress(
                    f"[{done}/{len(work)}] {learner}: {points}/{most} points "
                    f"({time.monotonic() - start:.0f} s)"
                )
    return GradeReport(tuple(g for learner in work for g in results[learner]))


# --- the command ------------------------------------------------------------------------------


def grade_command(argv: list[str]) -> int:
    """`raglab grade PATH... [--csv FILE] [--summary] [--summary-csv FILE] [--timeout S] [--jobs N]
    [--course DIR]`.

    Exit 0 when every graded exercise passes.
    """
    parser = argparse.ArgumentParser(
        prog="raglab grade",
        description="Run learners' notebooks in a fresh kernel and check every exercise "
        "(the checks run even if a check cell was deleted). A folder is searched to any "
        "depth; the learner is the first folder below it (or the notebook's file name).",
    )
    parser.add_argument(
        "paths", nargs="+", type=Path, metavar="PATH", help="notebooks (.ipynb) or folders of them"
    )
    parser.add_argument(
        "--csv",
        type=Path,
        metavar="FILE",
        help="write one row per learner × exercise to this CSV file",
    )
    parser.add_argument(
        "--summary",
        action="store_true",
        help="print one row per learner (total, percentage) instead of every exercise",
    )
    parser.add_argument(
        "--summary-csv",
        type=Path,
        metavar="FILE",
        help="write one row per learner to this CSV file",
    )
    parser.add_argument(
        "--timeout",
        type=int,
        default=DEFAULT_TIMEOUT,
        metavar="S",
        help=f"seconds allowed per cell (default {DEFAULT_TIMEOUT})",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=None,
        metavar="N",
        help="learners graded at once (default: the number of cores)",
    )
    parser.add_argument(
        "--course",
        type=Path,
        default=None,
        metavar="DIR",
        help="the student notebooks handed out: an exercise a submission lost is failed at "
        "its full points (default: this repository's exercises/)",
    )
    args = parser.parse_args(argv)
    if args.course is not None and not args.course.is_dir():
        parser.error(f"--course {args.course} is not a folder of student notebooks")
    if args.timeout <= 0:
        parser.error(f"--timeout must be > 0 seconds (got {args.timeout})")
    if args.jobs is not None and args.jobs <= 0:
        parser.error(f"--jobs must be > 0 (got {args.jobs})")
    try:
        work = submissions(args.paths)
    except FileNotFoundError as error:
        print(f"raglab grade: error: {error}", file=sys.stderr)
        return 1
    if not work:
        print(
            "raglab grade: error: no notebooks (.ipynb) found in "
            + ", ".join(map(str, args.paths)),
            file=sys.stderr,
        )
        return 1
    report = grade(
        work,
        timeout=args.timeout,
        jobs=args.jobs,
        progress=lambda line: print(line, file=sys.stderr, flush=True),
        course=args.course or COURSE,
    )
    print(format_summary(report) if args.summary else format_table(report))
    for path, write in ((args.csv, write_csv), (args.summary_csv, write_summary_csv)):
        if path:
            write(report, path)
            print(f"wrote {path}")
    return 0 if report.all_pass else 1
