"""Helpers for the workbook's notebooks: put them into shape, execute them deterministically.

    .venv/bin/python scripts/nbtools.py normalise notebooks/05_x.ipynb
    .venv/bin/python scripts/nbtools.py execute notebooks/04_implement_chunking.ipynb

`normalise` turns a notebook written in the simple pattern (`# NBVAL_*` comments, a
solution cell with raglab metadata, its check cell after it) into the workbook's shape:
tags, nbgrader metadata, a hidden and labelled solution (raglab.workbook.conventions).
`execute` does the same after running the notebook.

Runs every cell in a fresh kernel of this environment's Python (cwd = the notebook's
folder, as nbval does), stops at the first error unless the cell is tagged
`raises-exception`, drops the widget state Jupyter stores in the notebook's metadata,
and writes the file in the exact layout Jupyter uses — so a re-run that changes nothing
changes no byte.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

# The same single-thread BLAS as the test run (conftest.py), so printed numbers agree.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def execute(path: Path, *, timeout: int = 300) -> None:
    """Execute the notebook at `path` and write it back with its outputs."""
    import nbformat

    from raglab.workbook.conventions import normalise_notebook
    from raglab.workbook.exercises import notebook_text
    from raglab.workbook.grading import execute as run_cells

    nb = nbformat.from_dict(normalise_notebook(nbformat.read(path, as_version=4)))
    run_cells(nb, cwd=path.parent.resolve(), timeout=timeout, allow_errors=False)
    nb.metadata.pop("widgets", None)  # widget state: large, and different on every run
    for cell in nb.cells:
        cell.metadata.pop("execution", None)  # timestamps of an earlier run
        if cell.cell_type == "code":
            # A widget's view names a random model id and cannot show without the state
            # dropped above: the learner sees the live widget when running the cell.
            cell.outputs = [o for o in cell.outputs if WIDGET_VIEW not in o.get("data", {})]
            cell.outputs = merged_streams(cell.outputs)
    # Again, now that it ran: a check cell's saved pass would greet a learner who has not tried.
    path.write_text(notebook_text(normalise_notebook(nb)), encoding="utf-8")


def normalise(path: Path) -> bool:
    """Put the notebook at `path` into the workbook's shape; True when that changed it."""
    import nbformat

    from raglab.workbook.conventions import normalise_notebook
    from raglab.workbook.exercises import notebook_text

    before = path.read_text(encoding="utf-8")
    after = notebook_text(normalise_notebook(nbformat.read(path, as_version=4)))
    if after != before:
        path.write_text(after, encoding="utf-8")
    return after != before


def merged_streams(outputs: list) -> list:
    """Consecutive prints to the same stream as one output.

    The kernel flushes stdout on a timer, so the same prints can arrive as one output or
    several depending on speed; merging them makes the written bytes the same every run.
    """
    merged: list = []
    for output in outputs:
        previous = merged[-1] if merged else None
        if (
            output.get("output_type") == "stream"
            and previous is not None
            and previous.get("output_type") == "stream"
            and previous.get("name") == output.get("name")
        ):
            previous["text"] += output["text"]
        else:
            merged.append(output)
    return merged


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("execute", help="execute notebooks in place")
    run.add_argument("paths", nargs="+", type=Path)
    run.add_argument("--timeout", type=int, default=300, help="seconds per cell")
    shape = commands.add_parser(
        "normalise", help="put notebooks into the workbook's shape, in place"
    )
    shape.add_argument("paths", nargs="+", type=Path)
    args = parser.parse_args(argv)
    for path in args.paths:
        if args.command == "execute":
            execute(path, timeout=args.timeout)
            print(f"executed {path}")
        else:
            print(f"{'normalised' if normalise(path) else 'already in shape:'} {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
