"""Shared pytest set-up for tests/ and the notebooks run by nbval."""

import os

# One BLAS thread: on a small shared machine threads make small matrix products slower,
# and the notebooks' printed numbers must not depend on how the work was split.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("MPLBACKEND", "Agg")


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


try:  # nbval compares every stream; a library's new warning on stderr must not fail CI.
    from nbval.plugin import IPyNbCell
except ImportError:  # nbval is a test extra; unit tests run without it
    pass
else:
    _compare_outputs = IPyNbCell.compare_outputs

    def _compare_without_stderr(self, test, ref, skip_compare=None):
        return _compare_outputs(self, _drop_stderr(test), _drop_stderr(ref), skip_compare)

    IPyNbCell.compare_outputs = _compare_without_stderr
