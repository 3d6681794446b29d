"""Helpers for the workbook's notebooks: execute one in place, deterministically.

    .venv/bin/python scripts/nbtools.py execute notebooks/04_implement_chunking.ipynb

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

    from raglab.workbook.exercises import notebook_text
    from raglab.workbook.grading import execute as run_cells

    nb = nbformat.read(path, as_version=4)
    run_cells(nb, cwd=path.parent.resolve(), timeout=timeout, allow_errors=False)
    nb.metadata.pop("widgets", None)  # widget state: large, and different on every run
    for cell in nb.cells:
        cell.metadata.pop("execution", None)  # timestamps of an earlier run
        if cell.cell_type == "code":
            # A widget's view names a random model id and cannot show without the state
            # dropped above: the learner sees the live widget when running the cell.
            cell.outputs = [o for o in cell.outputs if WIDGET_VIEW not in o.get("data", {})]
            cell.outputs = merged_streams(cell.outputs)
    path.write_text(notebook_text(nb), encoding="utf-8")


def merged_streams(outputs: list) -> list:
    """Consecutive prints to the same stream as one output.

    The kernel flushes stdout on a timer, so the same prints can arrive as one output or
    several depending on speed; merging them makes the written bytes the same every run.
    """
    merged: list = []
    for output in outputs:
        previous = merged[-1] if merged else None
        if (output.get("output_type") == "stream" and previous is not None
                and previous.get("output_type") == "stream" and previous.get("name") == output.get("name")):
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
    args = parser.parse_args(argv)
    for path in args.paths:
        execute(path, timeout=args.timeout)
        print(f"executed {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
