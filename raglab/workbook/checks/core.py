"""Learner-facing checks: one per exercise, with a short, friendly verdict.

Each `check_xxx(fn)` runs the learner's function through the contract's cases, then
through seeded random inputs compared with the reference in the package, and prints
one verdict:

    ✅ chunk: all 14 cases and 200 random texts pass

or the first case that failed, with its input, what was expected and what came back:

    ❌ chunk: case 'overlap'
       input:    chunk('abcdefghijk', size=4, overlap=1)
       expected: ['abcd', 'defg', 'ghij', 'jk']
       got:      ['abcd', 'efgh', 'ijk']

A stub that still raises `NotImplementedError` gets "not implemented yet"; any other
exception is shown as one line (type and message), never a traceback. An endless loop
is stopped after a budget of executed lines. Checks can be rerun freely: they have no
state.

This module is the shared machinery; each notebook's checks live in their own module
of this package (`raglab.workbook.checks.chunking`, ...).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from raglab.workbook.step_budget import Endless, step_budget

PASS, FAIL = "✅", "❌"
NOT_IMPLEMENTED = "not implemented yet — write your solution in the cell above"
NOT_IMPLEMENTED_CASE = "not implemented"

# Lines of Python a single call may execute before it is called endless. The reference
# needs a few thousand on the largest random input; a learner's slower but correct
# loop has plenty of room, and an endless one is stopped in well under a second.
STEP_BUDGET = 200_000

# nbgrader sets this while it runs a notebook (autograde, validate). It counts an autograded
# cell as passed when the cell does not raise, so under nbgrader a failing check raises.
NBGRADER = "NBGRADER_EXECUTION"

RANDOM_CASES = 200  # random inputs compared with the reference, per check
SEED = 2024  # the same random inputs on every run, so a failure can be reproduced


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The outcome of one check. `case` names the first failing case (None if passed)."""

    name: str
    passed: bool
    case: str | None = None
    message: str = field(default="", repr=False)

    def _ipython_display_(self) -> None:
        """Show nothing as a cell's value: the check has already printed its verdict."""


@dataclass(frozen=True, slots=True)
class Case:
    """One input and the expected result, or the exception type it must raise."""

    name: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    expected: Any = None


# --- running a learner's function safely ----------------------------------------------


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a call did: returned `value`, or raised (`error` is the exception)."""

    value: Any = None
    error: BaseException | None = None
    endless: bool = False


def call(fn: Callable[..., Any], args: tuple, kwargs: dict) -> Outcome:
    """Call the learner's `fn` with the references hidden and a budget of executed lines."""
    name = _reference_name(fn)
    if name is not None:  # `chunk = reference.chunk`: the reference itself
        return Outcome(error=ReferenceHidden(_HIDDEN.format(name=name)))
    try:
        with references_hidden(fn), step_budget(STEP_BUDGET):
            return Outcome(value=fn(*args, **kwargs))
    except Endless:
        return Outcome(endless=True)
    except Exception as error:  # the learner's code may raise anything; report it, never crash
        return Outcome(error=error)


# --- the learner's code is what is checked -----------------------------------------------

_HIDDEN = "the reference `{name}` is not available while checking: write your own"


class ReferenceHidden(RuntimeError):
    """Raised by the stand-in that replaces a reference while a learner's function runs."""


@dataclass(frozen=True)
class Hidden:
    """What a check hides while a learner's function runs: every exercise's reference,
    except those the exercise builds on (by the function's name)."""

    references: tuple[Callable[..., Any], ...] = ()
    builds_on: Mapping[str, tuple[Callable[..., Any], ...]] = field(default_factory=dict)


# Filled once by `raglab.workbook.checks` (its REFERENCES and BUILDS_ON) when the package is
# imported, which happens before any check module can run: they live inside it. Registered
# rather than imported, because the registry is built from the check modules, which use this.
_hidden = Hidden()


def hide_references(
    references: tuple[Callable[..., Any], ...],
    builds_on: Mapping[str, tuple[Callable[..., Any], ...]],
) -> None:
    """Register the references every check hides (see `Hidden`)."""
    global _hidden
    _hidden = Hidden(references, builds_on)


def _references(fn: Callable[..., Any] | None = None) -> dict[int, str]:
    """id -> name of every reference implementation hidden while `fn` runs."""
    allowed = {id(ref) for ref in _hidden.builds_on.get(getattr(fn, "__name__", ""), ())}
    return {id(ref): ref.__name__ for ref in _hidden.references if id(ref) not in allowed}


def _reference_name(value: Any, fn: Callable[..., Any] | None = None) -> str | None:
    return _references(fn).get(id(value))


def _stand_in(name: str) -> Callable[..., Any]:
    def unavailable(*args: Any, **kwargs: Any) -> Any:
        raise ReferenceHidden(_HIDDEN.format(name=name))

    return unavailable


# Where references were found last time: (fn, number of modules loaded) -> places. Finding
# them scans every loaded module; a check calls the same function hundreds of times.
_places_cache: dict[tuple[int, int], list[tuple[dict, str, str]]] = {}


def _places(fn: Callable[..., Any]) -> list[tuple[dict, str, str]]:
    """(namespace, key, reference name) for every name bound to a reference that `fn` can reach.

    Namespaces: every loaded module (so `import raglab.ingest.chunking as other` inside the
    function finds the stand-in too) and the function's own globals (the notebook's).
    """
    key = (id(fn), len(sys.modules))
    if key not in _places_cache:
        references = _references(fn)
        namespaces = [vars(m) for m in list(sys.modules.values()) if hasattr(m, "__dict__")]
        namespaces.append(getattr(fn, "__globals__", {}))
        _places_cache.clear()
        _places_cache[key] = [
            (ns, name, references[id(value)])
            for ns in namespaces
            for name, value in list(ns.items())
            if id(value) in references
        ]
    return _places_cache[key]


@contextmanager
def references_hidden(fn: Callable[..., Any]) -> Iterator[None]:
    """While the block runs, every reference `fn` could reach is a stand-in that raises.

    A wrapper (`return reference.chunk(...)`), an alias in the notebook, or a re-import
    under another name all meet the stand-in. The check computes its expected values
    outside this block, with the real references.
    """
    places = _places(fn)
    closure = [
        cell
        for cell in (getattr(fn, "__closure__", None) or ())
        if _reference_name(_cell_value(cell), fn) is not None
    ]
    saved = [(ns, key, ns[key]) for ns, key, _ in places]
    saved_cells = [(cell, cell.cell_contents) for cell in closure]
    try:
        for ns, key, name in places:
            ns[key] = _stand_in(name)
        for cell, value in saved_cells:
            cell.cell_contents = _stand_in(_reference_name(value) or "?")
        yield
    finally:
        for ns, key, value in saved:
            ns[key] = value
        for cell, value in saved_cells:
            cell.cell_contents = value


def _cell_value(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell: a name not yet bound
        return None


# --- showing values briefly -------------------------------------------------------------

MAX_STR = 100  # longer strings are shown by their first SHOWN_STR characters and length
SHOWN_STR = 40
MAX_ITEMS = 8  # longer lists are shown by their first items and length


def show(value: Any) -> str:
    """A short repr: long strings and lists are cut, with their length.

    >>> show("0123456789" * 20)
    "'0123456789012345678901234567890123456789…' (200 chars)"
    >>> show(list(range(10)))
    '[0, 1, 2, 3, 4, 5, 6, 7, … (10 items)]'
    """
    if isinstance(value, str):
        if len(value) <= MAX_STR:
            return repr(value)
        start = repr(value[:SHOWN_STR])
        return f"{start[:-1]}…{start[-1]} ({len(value)} chars)"
    if isinstance(value, (list, tuple)):
        items = [show(v) for v in value[:MAX_ITEMS]]
        if len(value) > MAX_ITEMS:
            items.append(f"… ({len(value)} items)")
        if isinstance(value, tuple):
            return "(" + ", ".join(items) + ("," if len(value) == 1 else "") + ")"
        return "[" + ", ".join(items) + "]"
    return repr(value)


def show_call(name: str, args: tuple, kwargs: dict) -> str:
    """`chunk('abc', size=2, overlap=0)`"""
    parts = [show(a) for a in args] + [f"{k}={show(v)}" for k, v in kwargs.items()]
    return f"{name}({', '.join(parts)})"


def show_outcome(outcome: Outcome) -> str:
    if outcome.endless:
        return f"did not finish (over {STEP_BUDGET:,} lines run) — does every loop move forward?"
    if outcome.error is not None:
        return f"raised {show_error(outcome.error)}"
    return show(outcome.value)


def show_error(error: BaseException) -> str:
    """An exception as one line: its type and the first line of its message."""
    message = str(error).strip().split("\n")[0]
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


LABEL_PADDING = re.compile(r"^(\w+):\s+")


def one_line(message: str) -> str:
    """A verdict on one line, without its ✅/❌ and name (a table has those).

    >>> one_line("❌ chunk: case 'overlap'\\n   input:    chunk('abc')\\n   got:      []")
    "case 'overlap'; input: chunk('abc'); got: []"
    """
    # "   expected: [...]" -> "expected: [...]"; the values themselves are left untouched.
    lines = [LABEL_PADDING.sub(r"\1: ", line.strip()) for line in message.strip().split("\n")]
    first = lines[0].split(": ", 1)[-1] if lines[0][:1] in (PASS, FAIL) else lines[0]
    return "; ".join([first] + lines[1:])


# --- a verdict ----------------------------------------------------------------------------


def verdict(name: str, case: str | None, lines: list[str]) -> CheckResult:
    """Print the verdict and return it as a CheckResult."""
    if case is None:
        message = f"{PASS} {name}: {lines[0]}"
        result = CheckResult(name, True, None, message)
    else:
        header = f"{FAIL} {name}: case {case!r}" if lines else f"{FAIL} {name}: {NOT_IMPLEMENTED}"
        message = "\n".join([header] + [f"   {line}" for line in lines])
        result = CheckResult(name, False, case, message)
    if not result.passed and os.environ.get(NBGRADER):
        _show_check_failures_briefly()
        raise CheckFailed(result.message)
    print(result.message)
    return result


class CheckFailed(AssertionError):
    """A failed check under nbgrader, which gives a cell its points when it does not raise."""


def check_failed_traceback(
    shell: Any, etype: type, value: BaseException, tb: Any, tb_offset: int | None = None
) -> list[str]:
    """IPython shows a CheckFailed as its message alone: the verdict, not raglab's insides."""
    return [str(value)]


def _show_check_failures_briefly() -> None:
    try:
        from IPython import get_ipython
    except ImportError:  # not in IPython: Python prints the exception with its message
        return
    shell = get_ipython()
    if shell is not None:
        shell.set_custom_exc((CheckFailed,), check_failed_traceback)


# A judge compares a returned value with the case: None when right, else why not.
Judge = Callable[[Case, Outcome], "str | None"]


def expects_error(case: Case) -> bool:
    return isinstance(case.expected, type) and issubclass(case.expected, Exception)


def problem(case: Case, outcome: Outcome, judge: Judge) -> str | None:
    """None when `outcome` is right for `case`, else why not ("" when the values say it all)."""
    if expects_error(case):
        return None if isinstance(outcome.error, case.expected) else ""
    if outcome.error is not None or outcome.endless:
        return ""
    return judge(case, outcome)


def failure(fn_name: str, case: Case, outcome: Outcome, why: str) -> list[str]:
    expected = case.expected.__name__ if expects_error(case) else show(case.expected)
    lines = [
        f"input:    {show_call(fn_name, case.args, case.kwargs)}",
        f"expected: {expected}",
        f"got:      {show_outcome(outcome)}",
    ]
    if why:
        lines.append(f"why:      {why}")
    return lines


def run_cases(
    name: str,
    fn_name: str,
    fn: Callable,
    cases: list[Case],
    judge: Judge,
    summary: str,
    *,
    explain: Callable[[Case, Outcome, str], list[str]] | None = None,
) -> CheckResult:
    """Run every case in order and report the first one that fails.

    `explain(case, outcome, why)` gives the failure's lines when the standard
    input / expected / got lines would not read well (e.g. a large record as input).
    """
    if not callable(fn):
        return verdict(name, "callable", [f"expected a function, got {show(fn)}"])
    for case in cases:
        outcome = call(fn, case.args, case.kwargs)
        if isinstance(outcome.error, NotImplementedError):
            return verdict(name, NOT_IMPLEMENTED_CASE, [])
        why = problem(case, outcome, judge)
        if why is not None:
            lines = explain(case, outcome, why) if explain else failure(fn_name, case, outcome, why)
            return verdict(name, case.name, lines)
    return verdict(name, None, [summary])


def equal(case: Case, outcome: Outcome) -> str | None:
    if outcome.value == case.expected:
        return None
    if type(outcome.value) is not type(case.expected):
        return f"expected a {type(case.expected).__name__}, got a {type(outcome.value).__name__}"
    return ""  # wrong value: expected and got say it all
