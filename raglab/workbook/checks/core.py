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

import functools
import itertools
import numbers
import os
import re
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import CodeType, FrameType, FunctionType
from typing import Any

import numpy as np

from raglab.workbook.step_budget import Endless, step_budget
from raglab.workbook.testrunner import _is_library  # what counts as the learner's own code

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
    """Call the learner's `fn` with the references hidden and a budget of executed lines.

    Hidden means unreachable however `fn` holds them (see "the learner's code is what is
    checked" below), and a returned value that would run code later is refused.
    """
    name = _reference_name(fn)
    if name is not None:  # `chunk = reference.chunk`: the reference itself
        return Outcome(error=ReferenceHidden(_HIDDEN.format(name=name)))
    reached: list[str] = []
    try:
        with (
            references_hidden(fn, everything=True) as hidden,
            step_budget(STEP_BUDGET),
            _watching(hidden, reached),
        ):
            value = fn(*args, **kwargs)
        outcome = _settled(value)
    except Endless:
        return Outcome(endless=True)
    except Exception as error:  # the learner's code may raise anything; report it, never crash
        outcome = Outcome(error=error)
    if reached:  # its code ran, whatever the function did next
        return Outcome(error=ReferenceHidden(_HIDDEN.format(name=reached[0])))
    return outcome


# --- the learner's code is what is checked -----------------------------------------------
#
# While a check runs the learner's function, no reference implementation it may not use can
# run for it, however the learner holds it: by a name in any module, a closure, a default
# argument, functools.partial, a class attribute, a bound method, in another thread, or in a
# value computed later. Three mechanisms, one for each way in:
#
# - the guard: each hidden function's code is swapped for a guard that refuses the call when
#   the learner's code made it (`references_hidden`), so every way of holding the function
#   object meets it;
# - the watch: a copy made from a reference's code (or its module reloaded) is a function
#   object the guard never saw; while `call` runs, a trace notes whenever hidden code runs;
# - the settling: a returned value that would run the learner's code after their function
#   returned (a generator, an object with an __eq__ of its own) is refused (`_deferred`).
#
# What stays out of reach: code in the same kernel can patch the checks themselves, and a
# copy made from a reference's code (not the function) runs unseen in a thread that was
# already running before the check. Grading is feedback at scale, not proof against a
# determined cheat.

_HIDDEN = "the reference `{name}` is not available while checking: write your own"


class ReferenceHidden(RuntimeError):
    """Raised when the learner's function reaches a reference implementation during a check."""


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


def _hidden_functions(fn: Callable[..., Any]) -> list[FunctionType]:
    """The functions whose code is a reference hidden while `fn` runs: each function, and
    each method a class reference defines in its own source; in both versions when its
    module was reloaded since (the registry holds the first, the module the second)."""
    hidden = _references(fn)
    return [
        f
        for ref in _hidden.references
        if id(ref) in hidden
        for version in _versions(ref)
        for f in _functions_of(version)
    ]


def _versions(reference: Any) -> list[Any]:
    """The reference, and what its module binds to its name now if that is another object."""
    module = sys.modules.get(getattr(reference, "__module__", ""))
    now = getattr(module, getattr(reference, "__name__", ""), reference)
    return [reference] if now is reference else [reference, now]


@functools.cache  # a reference's methods do not change; it is looked at on every call
def _functions_of(reference: Any) -> list[FunctionType]:
    if isinstance(reference, FunctionType):
        return [reference] if _guardable(reference) else []
    members = vars(reference).values() if isinstance(reference, type) else ()
    unwrapped = [getattr(m, "__func__", getattr(m, "fget", m)) for m in members]
    return [f for f in unwrapped if isinstance(f, FunctionType) and _guardable(f)]


def _guardable(function: FunctionType) -> bool:
    # A guard has no closure, and a code's free variables must match its function's; code
    # generated at run time ("<string>": a dataclass's __init__) is no lesson of the course.
    code = _own_code(function)
    return not code.co_freevars and not code.co_filename.startswith("<")


def _own_code(function: FunctionType) -> CodeType:
    """`function`'s own code, even while a guard stands in for it."""
    return _guards[id(function)][1] if id(function) in _guards else function.__code__


# --- the guard ---

# The code a hidden function runs instead of its own. It runs with the reference module's
# globals, which know nothing of the checks: it finds them by import.
_GUARD = """def guard(*args, **kwargs):
    from raglab.workbook.checks.core import _through_guard

    return _through_guard({key}, args, kwargs)
"""


@dataclass(frozen=True, slots=True, eq=False)
class _Block:
    """One `references_hidden` block: the functions it hides (by id), the frame that opened
    it, its thread, and whether all that runs in it runs for the learner (`call`)."""

    hidden: frozenset[int]
    frame: FrameType
    thread: int
    everything: bool


_lock = threading.Lock()
_blocks: list[_Block] = []
_guards: dict[int, tuple[FunctionType, CodeType, CodeType]] = {}  # id -> function, own code, guard


@contextmanager
def references_hidden(
    fn: Callable[..., Any], *, everything: bool = False
) -> Iterator[list[FunctionType]]:
    """While the block runs, every reference `fn` may not use refuses to run for it.

    Each such function (and each method of such a class) runs a guard instead of its code.
    The guard raises ReferenceHidden when the call comes from the learner's code: a frame of
    code outside the installed packages and raglab between the guard and this block (or
    any call at all, with `everything`: `call` runs nothing but the learner's function, so
    even `partial(reference)` handed in as the function is refused), or from another thread
    (which may be working for the learner). Otherwise the check itself is computing an
    expected value, and the real code runs. Blocks nest; each function is itself again when
    the last block hiding it ends. The block is given the list of hidden functions.
    """
    functions = _hidden_functions(fn)
    # subtle: frame 0 is this generator, 1 contextlib's __enter__, 2 the `with` statement's
    block = _Block(
        frozenset(map(id, functions)), sys._getframe(2), threading.get_ident(), everything
    )
    with _lock:
        _blocks.append(block)
        for function in functions:
            if function.__code__ is not _guard_of(function):
                function.__code__ = _guard_of(function)
    try:
        yield functions
    finally:
        with _lock:
            _blocks.remove(block)
            still_hidden = set().union(*(b.hidden for b in _blocks))
            for function in functions:
                if id(function) not in still_hidden:
                    function.__code__ = _guards[id(function)][1]


def _guard_of(function: FunctionType) -> CodeType:
    """The guard's code for `function` (made once; its own code is kept beside it)."""
    if id(function) not in _guards:
        namespace: dict[str, Any] = {}
        where = f"<guard of {function.__qualname__}>"
        exec(compile(_GUARD.format(key=id(function)), where, "exec"), namespace)
        code = namespace["guard"].__code__.replace(
            co_name=function.__name__, co_qualname=function.__qualname__
        )
        _guards[id(function)] = (function, function.__code__, code)
    return _guards[id(function)][2]


def _through_guard(key: int, args: tuple, kwargs: dict) -> Any:
    """What a guarded function does when called: refuse, or run its own code."""
    function, code, _ = _guards[key]
    if _refused(key, sys._getframe(2)):  # 0: here, 1: the guard, 2: whoever called it
        raise ReferenceHidden(_HIDDEN.format(name=function.__name__))
    own = FunctionType(
        code, function.__globals__, function.__name__, function.__defaults__, function.__closure__
    )
    own.__kwdefaults__ = function.__kwdefaults__
    return own(*args, **kwargs)


def _refused(key: int, caller: FrameType | None) -> bool:
    hiding = [b for b in list(_blocks) if key in b.hidden]
    here = [b for b in hiding if b.thread == threading.get_ident()]
    if hiding and not here:  # another thread's check hides it: this call may be the learner's
        return True
    return any(b.everything or _learner_between(caller, b.frame) for b in here)


def _learner_between(frame: FrameType | None, base: FrameType) -> bool:
    """True when the learner's code lies on the stack between `frame` and `base`."""
    while frame is not None and frame is not base:
        if not _is_library(frame.f_code.co_filename):
            return True
        frame = frame.f_back
    return frame is None  # `base` is not below: not the block's own work


# --- the watch ---


@contextmanager
def _watching(hidden: list[FunctionType], reached: list[str]) -> Iterator[None]:
    """While the block runs, note in `reached` the name of each `hidden` function whose own
    code runs all the same (a copy made from its code, its module reloaded): in this thread,
    and in threads started meanwhile. Noted, not raised: a tracer that raises is switched off,
    and a learner's `except` would catch it."""
    codes: dict[int, str] = {}
    places: dict[tuple[str, int], str] = {}
    for function in hidden:
        own = _own_code(function)
        codes[id(own)] = places[(own.co_filename, own.co_firstlineno)] = function.__name__

    def note(frame: FrameType) -> None:
        code = frame.f_code
        name = codes.get(id(code)) or places.get((code.co_filename, code.co_firstlineno))
        if name is not None:
            reached.append(name)

    def watch_threads(frame: FrameType, event: str, arg: Any) -> None:
        note(frame)  # a call event: the only kind a global trace function is given

    previous, previous_threads = sys.gettrace(), threading.gettrace()

    def watch(frame: FrameType, event: Any, arg: Any) -> Any:
        note(frame)
        return previous(frame, event, arg) if previous else None

    sys.settrace(watch)
    threading.settrace(watch_threads)
    try:
        yield
    finally:
        sys.settrace(previous)
        threading.settrace(previous_threads)


# --- the settling ---

PLAIN = (int, float, complex, str, bytes, list, tuple, dict, set, frozenset)
HARMLESS = {"__init__", "__new__", "__post_init__", "__init_subclass__", "__repr__", "__del__"}
SETTLE_LIMIT = 100_000  # values looked at in one result; checks' results are far smaller
IMMUTABLE_TYPE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE: a type whose attributes cannot be set


def _settled(value: Any) -> Outcome:
    """`value` as the outcome, or a TypeError saying why it is refused (`_deferred`)."""
    why = _deferred(value)
    if why is None:
        return Outcome(value=value)
    return Outcome(error=TypeError(f"returned {why}: return plain values (lists, numbers, text)"))


def _deferred(value: Any) -> str | None:
    """What in a returned value would run code after the learner's function returned (when no
    reference is hidden any more), or decide a comparison by the learner's own rule; None when
    the value is plain data: numbers, strings, containers, numpy arrays, raglab's records, and
    the learner's own classes without behaviour of their own (a NamedTuple, a dataclass)."""
    seen: set[int] = set()
    todo = [value]
    while todo and len(seen) < SETTLE_LIMIT:
        item = todo.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if why := _not_plain(type(item)):
            return why
        todo.extend(_parts(item))
    return None


def _not_plain(kind: type) -> str | None:
    if kind.__flags__ & IMMUTABLE_TYPE:  # str, list, numpy's: nothing can be added to them
        return _not_plain_immutable(kind)
    return _not_plain_now(kind)


@functools.cache
def _not_plain_immutable(kind: type) -> str | None:
    return _not_plain_now(kind)


def _not_plain_now(kind: type) -> str | None:
    if any("__next__" in vars(k) for k in kind.__mro__):
        return f"an iterator ({kind.__name__}), not the values themselves"
    for k in kind.__mro__:
        for name, member in vars(k).items():
            code = _code_of(name, member)
            if code is not None and not _is_library(code.co_filename):
                return f"a {kind.__name__}, whose {name} is code of its own"
    module = sys.modules.get(kind.__module__)
    if (
        kind.__module__.split(".")[0] in ("builtins", "numpy", "raglab")
        or issubclass(kind, (*PLAIN, numbers.Number))
        or not _is_library(getattr(module, "__file__", None) or "<unknown>")  # the learner's
        or kind.__module__ == "__main__"
    ):
        return None
    return f"a {kind.__name__} (from {kind.__module__}), not plain values"


def _code_of(name: str, member: Any) -> CodeType | None:
    """The code a class member runs when a check compares, converts or reads the value: a
    special method's (but construction's and repr's) or a property's; None for the rest."""
    if isinstance(member, property):
        member = member.fget
    elif isinstance(member, functools.cached_property):
        member = member.func
    elif not name.startswith("__") or name in HARMLESS:
        return None
    return getattr(getattr(member, "__func__", member), "__code__", None)


def _parts(item: Any) -> list[Any]:
    """What `item` holds, read without running any method of its class (it has none of its own)."""
    if isinstance(item, (str, bytes)):
        return []
    if isinstance(item, dict):
        return _first([*dict.keys(item), *dict.values(item)])
    if isinstance(item, (list, tuple, set, frozenset)) or type(item).__module__ == "builtins":
        return _first(item) if hasattr(type(item), "__iter__") else []  # range, dict views too
    if isinstance(item, np.ndarray):
        return _first(item.flat) if item.dtype == object else []
    try:
        fields = dict(object.__getattribute__(item, "__dict__"))
    except AttributeError:
        fields = {}
    slots = [s for k in type(item).__mro__ for s in getattr(k, "__slots__", ()) if s != "__dict__"]
    return [*fields.values(), *(getattr(item, s) for s in slots if hasattr(item, s))]


def _first(items: Iterable[Any]) -> list[Any]:
    return list(itertools.islice(items, SETTLE_LIMIT))  # range(10**12) is a value too


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
