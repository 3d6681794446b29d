"""Grade learners' notebooks: run each one, then run every exercise's check on it.

Each notebook runs top to bottom in a fresh Python kernel (this environment's Python),
with a time limit per cell; a cell that fails or times out does not stop the run, as
in a learner's own session. Then the grader runs the checks itself, inside that same
kernel, on the functions the notebook defined — so a learner who deleted or edited a
check cell is graded all the same. Which function belongs to which exercise, and what it
is worth, comes from the course handed out (`raglab.workbook.course`), whose solution cells
carry it, never from the submission, whose metadata a learner can edit:

    {"raglab": {"exercise": "chunk", "function": "chunk", "points": 2}}

Grading runs the learners' code: run it on a machine (or in a container) where that
is acceptable. Every process a notebook starts is ended with it (`raglab.workbook.strays`),
and one learner's notebook, however broken, costs that learner, never the class's run. It
is feedback at scale, not proof against cheating: code in the notebook runs in the same
kernel as the checks and could patch them.
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
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from raglab.text import shown
from raglab.workbook import strays
from raglab.workbook.checks.core import one_line
from raglab.workbook.course import (
    COURSE,
    best_copies,
    course_notebook,
    graded_notebooks,
    not_handed_in,
    number_of,
    read_course,
)
from raglab.workbook.exercises import (
    NOTEBOOK_NAME,
    ExerciseError,
    exercise_list,
    listed_exercises,
)
from raglab.workbook.gradebook import (
    NO_EXERCISE,
    ExerciseGrade,
    GradeReport,
    format_summary,
    format_table,
    handed_in_text,
    total,
    write_csv,
    write_summary_csv,
)

DEFAULT_TIMEOUT = 60  # seconds per cell
DEFAULT_POINTS = 1  # each exercise, when there is no course to take points from
MARKER = "RAGLAB-GRADES "  # starts the line that carries the grades out of the kernel
CHECKPOINTS = ".ipynb_checkpoints"  # Jupyter's autosave copies: not submissions
NO_COURSE = (
    "no course to take exercises and points from (pass --course DIR: the student notebooks "
    f"you handed out); each exercise a notebook declares counts {DEFAULT_POINTS} point"
)
POLL = 0.5  # seconds: the longest single wait for a kernel message (see kernel_manager)


# --- inside the learner's kernel -----------------------------------------------------------


def grade_in_kernel(exercises: list[dict[str, Any]], namespace: dict[str, Any]) -> None:
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


def declared_exercises(nb: dict) -> list[dict[str, Any]]:
    """The exercises a notebook declares, from its solution cells and its own metadata, each
    once and worth DEFAULT_POINTS: what is graded when there is no course to take them from.

    The student version also lists them for the whole notebook, so an exercise whose cell
    the learner deleted is still graded (as failed), not silently skipped. Raises
    ExerciseError when the metadata is malformed.
    """
    unique: dict[str, dict[str, Any]] = {}
    for item in [*exercise_list(nb), *listed_exercises(nb)]:
        unique.setdefault(item["exercise"], {**item, "points": DEFAULT_POINTS})
    return list(unique.values())


def kernel_manager(env: dict[str, str] | None = None):
    """A kernel running this very Python, whatever kernels Jupyter has registered, with `env`
    added to its environment, talked to by a client that waits for its messages in short
    polls."""
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
                env=env or {},
                **ipykernel.kernelspec.get_kernel_dict(),
            )

    class PolledChannel(AsyncZMQSocketChannel):
        # One long wait on the socket can miss a message's arrival and sleep out its whole
        # timeout (jupyter/nbclient#312): a few runs in a hundred of a cell that draws a
        # widget stalled for the full time a cell is allowed, though the kernel had replied.
        # (jupyter_client declares the async channel's get_msg with the sync return type)
        async def get_msg(self, timeout: float | None = None) -> dict[str, Any]:  # type: ignore[override]
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
    nb: Any, exercises: list[dict[str, Any]], *, cwd: Path, timeout: int = DEFAULT_TIMEOUT
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
    Every process the notebook started is ended with it (`raglab.workbook.strays`).
    """
    from nbclient import NotebookClient

    label = strays.new_label()
    client = NotebookClient(
        nb,
        km=kernel_manager(label),
        timeout=timeout,
        allow_errors=allow_errors,
        interrupt_on_timeout=True,
        record_timing=False,
        resources={"metadata": {"path": str(cwd)}},
        shutdown_kernel="immediate",  # nothing is left to run in it
    )
    # nbclient leaves running a kernel whose manager it was given; cleanup_kc=True shuts this
    # one down as soon as the notebook is done (else each kernel waits for the process to end),
    # and every process the notebook started ends with it. stderr: the kernel's own log.
    try:
        client.execute(cleanup_kc=True, stderr=subprocess.DEVNULL)
    finally:
        strays.ending_labelled(label)
    return nb


def read_grades(executed: Any) -> dict[str, tuple[bool, str]] | None:
    """exercise -> (passed, message), as printed by the grading cell; None when it printed none
    (or a line of another shape: the learner's code runs in that kernel too)."""
    lines = [
        line[len(MARKER) :]
        for output in executed.cells[-1].get("outputs", [])
        for line in str(output.get("text", "")).split("\n")
        if line.startswith(MARKER)
    ]
    try:
        grades = json.loads(lines[-1]) if lines else None
        if not isinstance(grades, list):
            return None
        return {g["exercise"]: _verdict(g["passed"], g["message"]) for g in grades}
    except (ValueError, TypeError, KeyError):
        return None


def _verdict(passed: Any, message: Any) -> tuple[bool, str]:
    if type(passed) is not bool or not isinstance(message, str):
        raise TypeError("not a verdict")
    return passed, message


def grade_notebook(
    path: Path, *, learner: str = "", timeout: int = DEFAULT_TIMEOUT, course: Path | None = COURSE
) -> list[ExerciseGrade]:
    """Grade one notebook: a row per exercise, or one row saying why there is nothing to grade.

    With a course (`raglab.workbook.course`) the exercises, their functions and their points
    are those of the course notebook of the same number, whatever the submission's metadata
    says: one it lost fails at its full points, and a notebook the course does not hold is
    not graded. Without one, the notebook's own exercises count DEFAULT_POINTS each.
    Whatever the submission holds costs its own rows, never the class's run.
    """
    path = Path(path)
    learner = learner or learner_of(path)
    handed_out = course_notebook(path.name, course)
    expected = list(handed_out.exercises) if handed_out else None

    def row(exercise: str, passed: bool, message: str, points: int = 0, graded: bool = True):
        return ExerciseGrade(
            learner, path.name, exercise, passed, points if passed else 0, points, message, graded
        )

    def failed(reason: str) -> list[ExerciseGrade]:
        """Each exercise it should hold fails at its full points (or one row, without a course)."""
        if expected:
            return [row(e["exercise"], False, reason, e["points"]) for e in expected]
        return [row(NO_EXERCISE, False, reason)]

    if expected is None and read_course(course):
        return [
            row(NO_EXERCISE, False, "not a notebook of the course (nothing to grade)", graded=False)
        ]
    try:
        with strays.adopting():
            return _grade(path, expected, row, failed, timeout)
    except Exception as error:  # a submission nothing above foresaw: it fails, the class goes on
        return failed(
            f"could not grade the notebook ({type(error).__name__}: {one_line(str(error))})"
        )


def _grade(
    path: Path, expected: list[dict] | None, row: Callable, failed: Callable, timeout: int
) -> list[ExerciseGrade]:
    import nbformat

    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as error:  # a missing file, bad JSON, or not a notebook at all
        return failed(f"could not read the notebook: {one_line(str(error))}")
    try:
        exercises = declared_exercises(nb) if expected is None else expected
    except ExerciseError as error:
        return failed(f"malformed exercise metadata: {error}")
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
    only: Collection[str] | None = None,
) -> GradeReport:
    """Grade every learner's notebooks, `jobs` learners at a time (default: the core count).

    `course`: the folder of student notebooks handed out (see `grade_notebook`); None to
    grade each notebook by what it declares alone. Every learner is graded out of the
    course's total: every exercise of every course notebook (a notebook a learner did not
    hand in fails at its full points; one handed in twice counts its best copy). `only`:
    the numbers ("04") of the course notebooks to grade out of, instead of all of them.

    Each notebook runs in its own kernel, so one learner's endless loop or crash costs that
    learner a failed row (a timeout, a dead kernel), never the others' grades.
    """
    if timeout <= 0:
        raise ValueError(f"timeout must be > 0 seconds (got timeout={timeout})")
    if not isinstance(work, dict):
        work = submissions(work)
    handed_out = read_course(course)  # a malformed course stops here, before any kernel
    numbers = [n for n in graded_notebooks(handed_out) if only is None or n in only]
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(work) or 1))

    def one_learner(learner: str) -> list[ExerciseGrade]:
        graded = {
            path: grade_notebook(path, learner=learner, timeout=timeout, course=course)
            for path in work[learner]
        }
        missing = not_handed_in(learner, work[learner], numbers, handed_out)
        return best_copies(graded, handed_out) + missing

    results: dict[str, list[ExerciseGrade]] = {}
    start = time.monotonic()
    # Threads are enough: the work happens in the kernels, one process per notebook.
    with strays.adopting(), ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(one_learner, learner): learner for learner in work}
        for done, future in enumerate(as_completed(futures), start=1):
            learner = futures[future]
            results[learner] = future.result()
            if progress is not None:
                t = total(results[learner])
                progress(
                    f"[{done}/{len(work)}] {shown(learner)}: {t.points}/{t.max_points} points, "
                    f"{handed_in_text(t)} ({time.monotonic() - start:.0f} s)"
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
        help="the student notebooks handed out: exercises and points come from them, never from "
        "a submission, and one a submission lost fails at its full points (default: this "
        "repository's exercises/)",
    )
    args = parser.parse_args(argv)
    if args.course is not None and not args.course.is_dir():
        parser.error(f"--course {args.course} is not a folder of student notebooks")
    if args.timeout <= 0:
        parser.error(f"--timeout must be > 0 seconds (got {args.timeout})")
    if args.jobs is not None and args.jobs <= 0:
        parser.error(f"--jobs must be > 0 (got {args.jobs})")
    course: Path | None = args.course or COURSE
    try:
        course = course if read_course(course) else None
    except ExerciseError as error:  # the instructor's course itself is malformed
        print(f"raglab grade: error: {shown(str(error))}", file=sys.stderr)
        return 1
    if course is None and args.course is not None:
        parser.error(f"--course {args.course} holds no student notebooks (NN_name.ipynb)")
    if course is None:
        print(f"raglab grade: warning: {NO_COURSE}", file=sys.stderr)
    try:
        work = submissions(args.paths)
    except FileNotFoundError as error:
        print(f"raglab grade: error: {shown(str(error))}", file=sys.stderr)
        return 1
    if not work:
        print(
            "raglab grade: error: no notebooks (.ipynb) found in "
            + ", ".join(shown(str(path)) for path in args.paths),
            file=sys.stderr,
        )
        return 1
    # Notebooks named one by one are graded out of those notebooks; a folder (a class, a
    # learner's whole workbook) out of the whole course.
    named = all(path.is_file() for path in args.paths)
    report = grade(
        work,
        timeout=args.timeout,
        jobs=args.jobs,
        progress=lambda line: print(line, file=sys.stderr, flush=True),
        course=course,
        only={str(number_of(path.name)) for path in args.paths} if named else None,
    )
    print(format_summary(report) if args.summary else format_table(report))
    for path, write in ((args.csv, write_csv), (args.summary_csv, write_summary_csv)):
        if path:
            write(report, path)
            print(f"wrote {path}")
    return 0 if report.all_pass else 1
