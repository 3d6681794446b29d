"""How long the whole workbook takes to execute, top to bottom, in fresh kernels.

The target: notebooks 00-06 together in under 60 s on a 2-core machine. The embedding
cache starts empty, as on a fresh machine: notebook 05 embeds, 06 reads the vectors back.
Each notebook runs as nbval runs it (its own kernel, cwd = notebooks/); the kernel
start-up is included, since a learner pays it too.

    .venv/bin/python benchmarks/bench_notebooks.py
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import nbformat
from _util import print_table

from raglab.workbook.grading import execute as run_cells

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def execute(path: Path) -> float:
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    run_cells(nb, cwd=NOTEBOOKS, timeout=300, allow_errors=False)
    return time.perf_counter() - start


def main() -> None:
    with tempfile.TemporaryDirectory() as cache:
        os.environ["RAGLAB_CACHE_DIR"] = cache  # inherited by each notebook's kernel
        paths = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
        times = {path.name: execute(path) for path in paths}
    first = sum(seconds for name, seconds in times.items() if name[:2] <= "06")
    rows = [(name, f"{seconds:.1f} s") for name, seconds in times.items()]
    rows.append(("00-06", f"{first:.1f} s ({first / 60:.0%} of the 60 s budget)"))
    rows.append(("all notebooks", f"{sum(times.values()):.1f} s"))
    print_table(["notebook", "execution time"], rows)


if __name__ == "__main__":
    main()
