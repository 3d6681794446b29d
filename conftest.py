"""Shared pytest set-up for tests/ and the notebooks run by nbval."""

import atexit
import os
import shutil
import tempfile
from collections import defaultdict
from pathlib import Path

# One BLAS thread: on a small shared machine threads make small matrix products slower,
# and the notebooks' printed numbers must not depend on how the work was split.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

# The embedding cache is on by default, in the user's cache folder: the tests, and the
# notebooks' kernels (they inherit this environment), write into a folder of their own.
_TEST_CACHE = tempfile.mkdtemp(prefix="raglab-test-cache-")
os.environ["RAGLAB_CACHE_DIR"] = _TEST_CACHE
atexit.register(shutil.rmtree, _TEST_CACHE, ignore_errors=True)


try:  # hypothesis is a test extra
    from hypothesis import settings
except ImportError:
    pass
else:
    # The same examples on every run, so CI cannot fail by chance; search wider on purpose
    # with `pytest --hypothesis-profile=explore` (new random examples, ten times as many).
    settings.register_profile("default", derandomize=True)
    settings.register_profile("explore", derandomize=False, max_examples=1000)
    settings.load_profile("default")


def _drop_stderr(outputs):
    return [
        o for o in outputs if not (o.get("output_type") == "stream" and o.get("name") == "stderr")
    ]


# The complete notebooks, graded where nbval runs them. Every check must pass on the complete
# notebook (tests/notebooks/test_workbook.py holds the other half: every check fails on the
# student version). nbval already runs each complete notebook top to bottom, so the grader's
# cell runs in that same kernel as one more item, `notebooks/NN_name.ipynb::grading`, instead
# of a second run of the whole notebook.
COMPLETE_NOTEBOOKS = Path(__file__).resolve().parent / "notebooks"

try:
    import nbformat
    from nbval.plugin import IPyNbCell, IPyNbFile
except ImportError:  # nbval is a test extra; unit tests run without it
    pass
else:
    _compare_outputs = IPyNbCell.compare_outputs
    _collect_cells = IPyNbFile.collect

    def _compare_without_stderr(self, test, ref, skip_compare=None):
        """nbval compares every stream; a library's new warning on stderr must not fail CI."""
        return _compare_outputs(self, _drop_stderr(test), _drop_stderr(ref), skip_compare)

    class GradingCell(IPyNbCell):
        """The grader's cell (as `raglab.workbook.grading.run_notebook` appends it): it runs
        every exercise's check on the notebook's own functions; each must pass."""

        def runtest(self):
            from raglab.workbook.grading import read_grades

            super().runtest()  # an error in the cell fails it here, as in any cell
            printed = nbformat.v4.new_code_cell(outputs=self.test_outputs)
            grades = read_grades(nbformat.v4.new_notebook(cells=[printed]))
            if grades is None:
                self.raise_cell_error("the grading cell printed nothing")
            failed = [f"{e}: {message}" for e, (passed, message) in grades.items() if not passed]
            if failed or list(grades) != self.exercises:
                self.raise_cell_error(
                    "not every check passes on the complete notebook",
                    "\n".join(failed) or f"graded {list(grades)}, declared {self.exercises}",
                )

    def _collect_cells_then_grading(self):
        from raglab.workbook.grading import declared_exercises, grading_source

        cells = list(_collect_cells(self))
        yield from cells
        exercises = declared_exercises(self.nb)
        if Path(self.fspath).parent != COMPLETE_NOTEBOOKS or not exercises:
            return
        item = GradingCell.from_parent(
            self,
            name="grading",
            cell_num=len(cells),
            cell=nbformat.v4.new_code_cell(grading_source(exercises)),
            options=defaultdict(bool),
        )
        item.exercises = [e["exercise"] for e in exercises]
        yield item

    IPyNbCell.compare_outputs = _compare_without_stderr
    IPyNbFile.collect = _collect_cells_then_grading
