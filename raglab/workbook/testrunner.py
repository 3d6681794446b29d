"""A small test runner for notebooks: pytest-style test functions, run and reported in a cell.

A test is a function whose name starts with `test_`; it passes when it returns and fails
when it raises (an `assert`, `pytest.raises` that saw nothing, any exception). A test
that takes an argument is given the engine under test, so the same test can be run on
the real engine and on broken ones (`raglab.workbook.broken`):

    def test_empty_documents_produce_no_chunks(engine):
        assert engine.chunk("") == []

    run_tests(engine=Engine())      # every test_* function of the notebook, in order
    run_tests(test_empty_documents_produce_no_chunks, engine=OverlapNotChecked())

One line per test, as `pytest -v` prints it, then a summary:

    test_empty_documents_produce_no_chunks PASSED
    ======================== 1 passed ========================

A failure shows the assertion's message, or the `assert` line itself when it has none
(pytest rewrites asserts to show their values; this runner shows the line), and the
notes a library adds to an exception (hypothesis's falsifying example). There are no
fixtures: the engine is the one argument a test can ask for. An endless loop in a test
is stopped after a budget of executed lines of the test's own code.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import sys
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raglab.workbook.step_budget import Endless, step_budget

PASSED, FAILED = "PASSED", "FAILED"
NOT_IMPLEMENTED = "not implemented yet"
SUMMARY_WIDTH = 60  # the width of the "=== 5 passed ===" line

# Lines of the test's own code (not the engine's, not a library's) a test may run. A test
# runs a few dozen; hypothesis calls a property test about a hundred times.
STEP_BUDGET = 1_000_000

# Code from these folders is library code: its lines do not count against the budget.
_LIBRARY = tuple(
    str(Path(p).resolve())
    for p in {sys.prefix, sys.base_prefix, sys.exec_prefix, str(Path(__file__).parents[1])}
)


@dataclass(frozen=True, slots=True)
class TestResult:
    """How one test went: `passed`, or why not in `message` (one line, then any notes)."""

    __test__ = False  # a result, not a test: pytest must not collect this class

    name: str
    passed: bool
    message: str = ""
    not_implemented: bool = False

    def line(self) -> str:
        """The test's line in the report, e.g. `test_x FAILED — AssertionError: ...`."""
        if self.passed:
            return f"{self.name} {PASSED}"
        first, *notes = self.message.split("\n")
        return "\n".join([f"{self.name} {FAILED} — {first}"] + [f"    {n}" for n in notes])


@dataclass(frozen=True, slots=True)
class TestReport:
    """The results of one `run_tests`, in the order the tests ran."""

    __test__ = False

    results: tuple[TestResult, ...]

    @property
    def passed(self) -> bool:
        return all(result.passed for result in self.results)

    def summary(self) -> str:
        """`=== 1 failed, 5 passed ===`, as pytest ends its report."""
        failed = sum(not r.passed for r in self.results)
        parts = [f"{failed} failed"] if failed else []
        parts += [f"{len(self.results) - failed} passed"] if len(self.results) > failed else []
        return f" {', '.join(parts) or 'no tests ran'} ".center(SUMMARY_WIDTH, "=")

    def _ipython_display_(self) -> None:
        """Show nothing as a cell's value: `run_tests` has already printed the report."""


def run_tests(
    *tests: Callable[..., Any], engine: Any = None, namespace: dict[str, Any] | None = None
) -> TestReport:
    """Run `tests` (default: every `test_*` function defined in `namespace`), print a report.

    `namespace` defaults to the caller's globals: in a notebook, the notebook's own
    functions, in the order they were defined. A test with a parameter gets `engine`
    (the real `Engine` when none is given).
    """
    if not tests:
        found = sys._getframe(1).f_globals if namespace is None else namespace
        tests = tuple(discover(found))
    if engine is None:
        from raglab.workbook.broken import Engine

        engine = Engine()
    report = TestReport(tuple(run_test(test, engine) for test in tests))
    for result in report.results:
        print(result.line())
    print(report.summary())
    return report


def discover(namespace: dict[str, Any]) -> Iterator[Callable[..., Any]]:
    """The `test_*` functions defined in `namespace` itself (not imported into it), in order."""
    module = namespace.get("__name__")
    for name, value in list(namespace.items()):
        own = getattr(value, "__module__", module) == module
        if name.startswith("test_") and callable(value) and own:
            yield value


def run_test(test: Callable[..., Any], engine: Any) -> TestResult:
    """Run one test on `engine` (if it takes an argument); never raises, prints nothing.

    What the test prints is captured and dropped, as pytest does for a passing test;
    hypothesis reports its falsifying example on the exception, which is kept.
    """
    name = getattr(test, "__name__", repr(test))
    if not callable(test):
        return TestResult(name, False, f"expected a test function, got {test!r}")
    args = (engine,) if _takes_an_argument(test) else ()
    try:
        with (
            contextlib.redirect_stdout(io.StringIO()),
            step_budget(STEP_BUDGET, counted=_is_own_code),
        ):
            test(*args)
    except Endless:
        return TestResult(
            name, False, f"did not finish (over {STEP_BUDGET:,} lines of the test run)"
        )
    except NotImplementedError:
        return TestResult(name, False, NOT_IMPLEMENTED, not_implemented=True)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as error:  # pytest.fail and pytest.raises raise a BaseException
        return TestResult(name, False, describe(error))
    return TestResult(name, True)


def _takes_an_argument(test: Callable[..., Any]) -> bool:
    try:
        parameters = inspect.signature(test).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: call it bare
        return False
    return any(
        p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        for p in parameters
    )


def describe(error: BaseException) -> str:
    """The failure in a line (the type and message, or the failing line), then any notes.

    An `assert` without a message says nothing by itself, so the line that failed is
    shown instead: `assert engine.chunk('') == []`.
    """
    if isinstance(error, BaseExceptionGroup):  # hypothesis found several distinct failures
        more = len(error.exceptions) - 1
        return describe(error.exceptions[0]) + f"\n(and {more} more failure{'s' * (more > 1)})"
    message = str(error).strip()
    if isinstance(error, AssertionError) and not message:
        line = failing_line(error)
        head = (
            line
            if line.startswith("assert")
            else f"AssertionError at: {line}"
            if line
            else "AssertionError"
        )
    else:
        head = (
            f"{type(error).__name__}: {message.splitlines()[0]}"
            if message
            else type(error).__name__
        )
    notes = [n for note in getattr(error, "__notes__", ()) for n in str(note).splitlines()]
    return "\n".join([head] + notes)


def failing_line(error: BaseException) -> str:
    """The last line of the test's own code in the traceback ("" when the source is unknown)."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if not _is_library(f.filename)]
    return (frames[-1].line or "").strip() if frames else ""


def _is_library(filename: str) -> bool:
    """True for code the test did not write: installed packages, raglab, generated code.

    Generated code ("<string>": a dataclass's `__init__`) runs on every record made; a
    notebook cell is a real file (ipykernel) or "<ipython-input-…>" (older IPython).
    """
    if filename.startswith("<"):
        return not filename.startswith("<ipython-input")
    try:
        path = str(Path(filename).resolve())
    except (OSError, ValueError):
        return False
    return path.startswith(_LIBRARY)


def _is_own_code(filename: str) -> bool:
    """Lines the step budget counts: the test's own, not the engine's or hypothesis's."""
    return not _is_library(filename)
