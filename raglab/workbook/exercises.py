"""Student notebooks: build exercises/ from notebooks/, and check they are current.

The workbook in notebooks/ is complete: each exercise's solution sits between nbgrader's
markers in a hidden cell. The student version replaces every solution with a stub, so
the two never drift apart by hand-editing:

    notebooks/04_implement_chunking.ipynb          exercises/04_implement_chunking.ipynb
    # ▶ Reference solution — click to reveal   ->  # ✏️ Your turn — write your solution here
    def chunk(text, size=800, overlap=100):        def chunk(text, size=800, overlap=100):
        ### BEGIN SOLUTION                             # YOUR CODE HERE
        ...                                            raise NotImplementedError()
        ### END SOLUTION

An answer written at the top of a cell (`FLAWS = {...}`) becomes just "# YOUR CODE HERE",
so the cell keeps the empty value its first line gives and Run All goes on past it.
In markdown cells a marked block becomes "YOUR ANSWER HERE". Outputs of exercise cells
and of check cells (tag `check`, or any cell calling `checks.check_...`) are cleared.
The notebooks are first put into shape by `conventions.normalise_notebook`. Everything else — hints, figures, the
other outputs — is kept. The files are written byte-for-byte deterministically (the
nbformat layout Jupyter itself writes), so "out of date" is a plain byte comparison.
"""

from __future__ import annotations

import argparse
import copy
import re
import reprlib
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

NOTEBOOKS = Path("notebooks")
EXERCISES = Path("exercises")
NOTEBOOK_NAME = re.compile(r"^\d\d_.+\.ipynb$")  # NN_topic.ipynb

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
CODE_STUB = ("# YOUR CODE HERE", "raise NotImplementedError()")
# An answer written at the top of a cell (`FLAWS = {...}`) keeps the empty value the line
# before it gives, and its check reports it not done yet: a raise there would stop Run All.
VALUE_STUB = ("# YOUR CODE HERE",)
ANSWER_STUB = "YOUR ANSWER HERE"
SOLUTION_LABEL = "# ▶ Reference solution — click to reveal"
EXERCISE_LABEL = "# ✏️ Your turn — write your solution here"
HIDE_TAG = "hide-input"
CHECK_TAG = "check"
CHECK_CALL = re.compile(r"\bchecks\.check_\w+\(")


class ExerciseError(ValueError):
    """A notebook whose solution markers cannot be turned into a student version."""


# --- one cell -------------------------------------------------------------------------


def replace_solutions(
    source: str,
    stub: Sequence[str],
    *,
    top_level: Sequence[str] | None = None,
    where: str = "<cell>",
) -> str:
    """Replace each BEGIN/END SOLUTION block by `stub`, indented like the BEGIN line; a block
    at the top level of the cell (not indented) by `top_level`, when given.

    >>> source = "def f():\\n    ### BEGIN SOLUTION\\n    return 1\\n    ### END SOLUTION"
    >>> print(replace_solutions(source, CODE_STUB))
    def f():
        # YOUR CODE HERE
        raise NotImplementedError()
    >>> print(replace_solutions("FLAWS = set()\\n### BEGIN SOLUTION\\nFLAWS = {'D2'}\\n### END SOLUTION",
    ...                         CODE_STUB, top_level=VALUE_STUB))
    FLAWS = set()
    # YOUR CODE HERE
    """
    out: list[str] = []
    inside = False
    for number, line in enumerate(source.split("\n"), start=1):
        marker = line.strip()
        if marker == BEGIN:
            if inside:
                raise ExerciseError(
                    f"{where}: line {number}: {BEGIN} inside another solution block"
                )
            inside = True
            indent = line[: len(line) - len(line.lstrip())]
            lines = top_level if top_level is not None and not indent else stub
            out.extend(indent + stub_line for stub_line in lines)
        elif marker == END:
            if not inside:
                raise ExerciseError(f"{where}: line {number}: {END} without a {BEGIN} before it")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ExerciseError(f"{where}: {BEGIN} is never closed by {END}")
    return "\n".join(out)


def has_solution(cell: dict) -> bool:
    return any(line.strip() == BEGIN for line in cell["source"].split("\n"))


def is_check_cell(cell: dict) -> bool:
    """A code cell that runs a learner-facing check (tagged `check` or calling one)."""
    tags = cell.get("metadata", {}).get("tags", [])
    return cell["cell_type"] == "code" and (
        CHECK_TAG in tags or bool(CHECK_CALL.search(cell["source"]))
    )


def _relabel(source: str) -> str:
    # JupyterLab shows a hidden cell's first line: in notebooks/ it invites a reveal,
    # in exercises/ the cell is open and the label invites the learner to write.
    first, _, rest = source.partition("\n")
    if first.strip() == SOLUTION_LABEL:
        return f"{EXERCISE_LABEL}\n{rest}" if rest else EXERCISE_LABEL
    return source


def _show_cell(cell: dict) -> None:
    """Drop what hid the solution: the student must see (and type into) this cell."""
    metadata = cell["metadata"]
    jupyter = metadata.get("jupyter", {})
    jupyter.pop("source_hidden", None)
    if not jupyter:
        metadata.pop("jupyter", None)
    tags = [tag for tag in metadata.get("tags", []) if tag != HIDE_TAG]
    if tags:
        metadata["tags"] = tags
    else:
        metadata.pop("tags", None)


def _clear_outputs(cell: dict) -> None:
    cell["outputs"] = []
    cell["execution_count"] = None


def student_cell(cell: dict, *, where: str = "<cell>") -> dict:
    """The student version of one cell (a new cell; the argument is left unchanged)."""
    cell = copy.deepcopy(cell)
    cell.get("metadata", {}).pop("execution", None)  # run timestamps: noise, not content
    if cell["cell_type"] == "markdown" and has_solution(cell):
        cell["source"] = replace_solutions(cell["source"], (ANSWER_STUB,), where=where)
    elif cell["cell_type"] == "code" and has_solution(cell):
        cell["source"] = _relabel(
            replace_solutions(cell["source"], CODE_STUB, top_level=VALUE_STUB, where=where)
        )
        _show_cell(cell)
        _clear_outputs(cell)
    elif is_check_cell(cell):
        _clear_outputs(cell)
    return cell


# --- one notebook ---------------------------------------------------------------------


def exercise_list(nb: dict) -> list[dict[str, Any]]:
    """The exercises a notebook declares: `{"exercise", "function", "points"}` from solution cells.

    A solution cell carries `{"raglab": {"exercise": "chunk", "function": "chunk", "points": 2}}`
    in its metadata; the grader uses it to know which function to check and what it is worth.
    Raises ExerciseError naming the cell when that metadata is malformed (a learner can edit it).
    """
    found = []
    for i, cell in enumerate(_cells(nb)):
        meta = raglab_metadata(cell, where=f"cell {i}")
        if "exercise" in meta:
            found.append(exercise_entry(meta, where=f"cell {i}"))
    return found


def listed_exercises(nb: dict) -> list[dict[str, Any]]:
    """The exercises a student notebook lists for itself (`student_notebook` writes them), checked."""
    listed = raglab_metadata(nb, where="the notebook's metadata").get("exercises", [])
    if not isinstance(listed, list):
        raise ExerciseError(
            f"the notebook's raglab.exercises must be a list (got {_brief(listed)})"
        )
    return [
        exercise_entry(item, where=f"the notebook's exercise {i}") for i, item in enumerate(listed)
    ]


def exercise_entry(meta: Any, *, where: str) -> dict[str, Any]:
    """One exercise's metadata, checked: `{"exercise", "function", "points"}` (function defaults
    to the exercise's name, points to 1).

    >>> exercise_entry({"exercise": "chunk", "points": 2}, where="cell 7")
    {'exercise': 'chunk', 'function': 'chunk', 'points': 2}
    >>> exercise_entry({"exercise": "chunk", "points": "ten"}, where="cell 7")
    Traceback (most recent call last):
    ...
    raglab.workbook.exercises.ExerciseError: cell 7: points must be a whole number >= 0 (got 'ten')
    """
    if not isinstance(meta, dict):
        raise ExerciseError(f"{where}: an exercise must be an object (got {_brief(meta)})")
    exercise = meta.get("exercise")
    function = meta.get("function", exercise)
    points = meta.get("points", 1)
    for key, name in (("exercise", exercise), ("function", function)):
        if not (isinstance(name, str) and name.isidentifier()):
            raise ExerciseError(f"{where}: {key} must be a Python name (got {_brief(name)})")
    if type(points) is not int or points < 0:  # not bool, float or text
        raise ExerciseError(f"{where}: points must be a whole number >= 0 (got {_brief(points)})")
    return {"exercise": exercise, "function": function, "points": points}


def _cells(nb: dict) -> list[dict]:
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list) or not all(isinstance(cell, dict) for cell in cells):
        raise ExerciseError("the notebook's cells must be a list of objects")
    return cells


def raglab_metadata(item: dict, *, where: str) -> dict:
    """The metadata under "raglab" of a cell or notebook ({} when it has none); ExerciseError
    naming `where` when it is not an object."""
    metadata = item.get("metadata", {})
    meta = metadata.get("raglab", {}) if isinstance(metadata, dict) else None
    if not isinstance(meta, dict):
        raise ExerciseError(f"{where}: raglab metadata must be an object (got {_brief(meta)})")
    return meta


def _brief(value: Any) -> str:
    """A value as a short repr: a learner's metadata can hold anything, of any size."""
    return reprlib.repr(value)


def student_notebook(nb: dict, *, name: str = "<notebook>") -> dict:
    """The student version of a whole notebook."""
    student = copy.deepcopy(nb)
    student["cells"] = [
        student_cell(cell, where=f"{name}, cell {i}") for i, cell in enumerate(nb["cells"])
    ]
    student["metadata"].pop("widgets", None)  # widget state is large and changes on every run
    exercises = exercise_list(nb)
    if exercises:
        # Also recorded for the whole notebook, so the grader still knows every exercise
        # when a learner deletes a cell.
        student["metadata"]["raglab"] = {"exercises": exercises}
    return student


def notebook_text(nb: dict) -> str:
    """The exact text Jupyter writes: sorted keys, 1-space indent, trailing newline."""
    import nbformat

    return nbformat.writes(nbformat.from_dict(nb)) + "\n"


def _read(path: Path) -> dict:
    import nbformat

    try:
        return nbformat.read(path, as_version=4)
    except Exception as error:  # nbformat raises several unrelated types for a bad file
        raise ExerciseError(
            f"{path}: not a readable notebook ({type(error).__name__}: {error})"
        ) from None


def _notebooks_in(folder: Path) -> list[Path]:
    """The workbook's `NN_*.ipynb` files in `folder`, sorted (none if it does not exist)."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if NOTEBOOK_NAME.match(p.name))


def source_notebooks(src: Path) -> list[Path]:
    if not src.is_dir():
        raise ExerciseError(f"notebooks folder not found: {src}")
    return _notebooks_in(src)


def _expected(src: Path) -> dict[str, str]:
    """Student file name -> the exact text it should have."""
    return {
        p.name: notebook_text(student_notebook(_read(p), name=str(p)))
        for p in source_notebooks(src)
    }


def _orphans(dst: Path, expected: Iterable[str]) -> list[Path]:
    wanted = set(expected)
    return [p for p in _notebooks_in(dst) if p.name not in wanted]


# --- the folder -----------------------------------------------------------------------


def build_exercises(src: Path = NOTEBOOKS, dst: Path = EXERCISES) -> list[Path]:
    """Write the student version of every `NN_*.ipynb` in `src` into `dst`.

    Returns the files written. A student notebook whose source is gone is deleted:
    exercises/ is generated, never edited by hand.
    """
    src, dst = Path(src), Path(dst)
    expected = _expected(src)
    dst.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in expected.items():
        target = dst / name
        target.write_bytes(text.encode("utf-8"))
        written.append(target)
    for orphan in _orphans(dst, expected):
        orphan.unlink()
    return written


def stale_exercises(src: Path = NOTEBOOKS, dst: Path = EXERCISES) -> list[str]:
    """What `build_exercises` would change, one line per file (empty when current)."""
    src, dst = Path(src), Path(dst)
    expected = _expected(src)
    stale = []
    for name, text in expected.items():
        target = dst / name
        if not target.exists():
            stale.append(f"{target} (missing)")
        elif target.read_bytes() != text.encode("utf-8"):
            stale.append(f"{target} (out of date)")
    stale.extend(f"{orphan} (no source notebook)" for orphan in _orphans(dst, expected))
    return stale


def _cell_texts(cell: dict) -> list[str]:
    texts = [cell["source"]]
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            texts.append(output.get("text", ""))
        for value in output.get("data", {}).values():
            if isinstance(value, str):
                texts.append(value)
    return texts


def _solution_lines(nb: dict) -> set[str]:
    """Lines that appear in a solution block and nowhere else in the notebook."""
    inside_lines: set[str] = set()
    outside_lines: set[str] = set()
    for cell in nb["cells"]:
        inside = False
        for line in cell["source"].split("\n"):
            marker = line.strip()
            if marker in (BEGIN, END):
                inside = marker == BEGIN
            elif marker:
                (inside_lines if inside else outside_lines).add(marker)
    # Very short lines ("else:", "break") say nothing about the solution.
    return {line for line in inside_lines - outside_lines if len(line) >= 8}


def find_solution_leaks(dst: Path = EXERCISES, src: Path | None = NOTEBOOKS) -> list[str]:
    """Solution text left in the student notebooks, one line per finding.

    Looks for nbgrader's markers and the reference-solution label in every cell of
    every `NN_*.ipynb` in `dst`; with `src`, also for any line that appears only inside
    a solution block of the matching source notebook.
    """
    leaks = []
    for path in _notebooks_in(Path(dst)):
        nb = _read(path)
        secret: set[str] = set()
        if src is not None and (Path(src) / path.name).exists():
            secret = _solution_lines(_read(Path(src) / path.name))
        for i, cell in enumerate(nb["cells"]):
            text = "\n".join(_cell_texts(cell))
            for marker in (BEGIN, END, SOLUTION_LABEL):
                if marker in text:
                    leaks.append(f"{path}, cell {i}: contains {marker!r}")
            lines = {line.strip() for line in text.split("\n")}
            leaks.extend(
                f"{path}, cell {i}: solution line {line!r}" for line in sorted(lines & secret)
            )
    return leaks


# --- command line ---------------------------------------------------------------------


def exercises_command(argv: list[str]) -> int:
    """`raglab exercises build [--src DIR] [--dst DIR]` and `raglab exercises check`."""
    parser = argparse.ArgumentParser(
        prog="raglab exercises",
        description="Student notebooks: exercises/ is generated from notebooks/, "
        "each solution replaced by a stub.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, help_text in (
        ("build", "write the student notebooks"),
        ("check", "exit 1 when a student notebook is missing, out of date or leaks a solution"),
    ):
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.add_argument(
            "--src", type=Path, default=NOTEBOOKS, metavar="DIR", help="default notebooks/"
        )
        sub.add_argument(
            "--dst", type=Path, default=EXERCISES, metavar="DIR", help="default exercises/"
        )
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            for path in build_exercises(args.src, args.dst):
                print(f"wrote {path}")
            problems = find_solution_leaks(args.dst, args.src)
        else:
            problems = stale_exercises(args.src, args.dst) + find_solution_leaks(args.dst, args.src)
    except (ExerciseError, OSError) as error:
        print(f"raglab exercises: error: {error}", file=sys.stderr)
        return 1
    for problem in problems:
        print(problem)
    if problems and args.command == "check":
        print("run `raglab exercises build` to regenerate exercises/", file=sys.stderr)
    if not problems and args.command == "check":
        print(f"{args.dst} is up to date")
    return 1 if problems else 0
