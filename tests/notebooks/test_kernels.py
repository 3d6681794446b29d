"""No notebook kernel outlives its notebook.

The grader and the workbook tests run one kernel per notebook: a class of thirty learners
is hundreds of notebooks, and each idle kernel holds about a hundred megabytes. Each test
here runs a notebook whose first cell prints its kernel's process id, then asks the
system whether that process still runs.
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient.exceptions import CellExecutionError

from raglab.workbook.grading import execute, run_notebook

PRINT_PID = "import os\nprint(os.getpid())"


def notebook(*sources: str):
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])


def kernel_pid(executed) -> int:
    return int(executed.cells[0].outputs[0]["text"])


def is_running(pid: int) -> bool:
    """Whether process `pid` still runs (a finished child not yet waited for does not)."""
    try:
        finished, _ = os.waitpid(pid, os.WNOHANG)
        return finished == 0
    except ChildProcessError:  # not a child of this process, or already waited for
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


def test_the_kernel_stops_when_the_notebook_is_done(tmp_path: Path):
    executed = run_notebook(notebook(PRINT_PID), [], cwd=tmp_path, timeout=30)
    assert not is_running(kernel_pid(executed))


def test_the_kernel_stops_after_a_cell_ran_out_of_time(tmp_path: Path):
    nb = notebook(PRINT_PID, "while True:\n    pass")
    executed = run_notebook(nb, [], cwd=tmp_path, timeout=2)
    assert executed.cells[1].outputs[0]["ename"] == "KeyboardInterrupt"  # interrupted, not hung
    assert not is_running(kernel_pid(executed))


def test_the_kernel_stops_when_an_error_stops_the_run(tmp_path: Path):
    nb = notebook(PRINT_PID, "1 / 0", "never = 'run'")
    with pytest.raises(CellExecutionError, match="ZeroDivisionError"):
        execute(nb, cwd=tmp_path, timeout=30, allow_errors=False)
    assert not is_running(kernel_pid(nb))  # `execute` changed `nb` in place before it raised
