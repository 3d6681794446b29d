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
state. `CHECKS` maps each exercise id to its check; the grader uses it.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import zip_longest
from typing import Any

PASS, FAIL = "✅", "❌"
NOT_IMPLEMENTED = "not implemented yet — write your solution in the cell above"
NOT_IMPLEMENTED_CASE = "not implemented"

# Lines of Python a single call may execute before it is called endless. The reference
# needs a few thousand on the largest random input; a learner's slower but correct
# loop has plenty of room, and an endless one is stopped in well under a second.
STEP_BUDGET = 200_000

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


class _Endless(BaseException):
    # A BaseException, so a learner's `except Exception:` inside the loop cannot swallow it.
    pass


@contextmanager
def _step_budget(limit: int) -> Iterator[None]:
    """Stop the code run inside this block after `limit` executed lines (an endless loop).

    Works in any thread and on every platform, unlike an alarm signal. Raising from a
    trace function raises inside the traced frame, and Python then removes the tracer.
    """
    steps = 0

    def count(frame, event, arg):
        nonlocal steps
        if event == "line":
            steps += 1
            if steps > limit:
                raise _Endless
        return count

    previous = sys.gettrace()
    sys.settrace(count)
    try:
        yield
    finally:
        sys.settrace(previous)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a call did: returned `value`, or raised (`error` is the exception)."""

    value: Any = None
    error: BaseException | None = None
    endless: bool = False


def call(fn: Callable[..., Any], args: tuple, kwargs: dict) -> Outcome:
    try:
        with _step_budget(STEP_BUDGET):
            return Outcome(value=fn(*args, **kwargs))
    except _Endless:
        return Outcome(endless=True)
    except Exception as error:  # the learner's code may raise anything; report it, never crash
        return Outcome(error=error)


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
        return f"raised {one_line(outcome.error)}"
    return show(outcome.value)


def one_line(error: BaseException) -> str:
    message = str(error).strip().split("\n")[0]
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


# --- a verdict ----------------------------------------------------------------------------


def _verdict(name: str, case: str | None, lines: list[str]) -> CheckResult:
    """Print the verdict and return it as a CheckResult."""
    if case is None:
        message = f"{PASS} {name}: {lines[0]}"
        result = CheckResult(name, True, None, message)
    else:
        header = f"{FAIL} {name}: case {case!r}" if lines else f"{FAIL} {name}: {NOT_IMPLEMENTED}"
        message = "\n".join([header] + [f"   {line}" for line in lines])
        result = CheckResult(name, False, case, message)
    print(result.message)
    return result


# A judge compares a returned value with the case: None when right, else why not.
Judge = Callable[[Case, Outcome], "str | None"]


def _expects_error(case: Case) -> bool:
    return isinstance(case.expected, type) and issubclass(case.expected, Exception)


def _problem(case: Case, outcome: Outcome, judge: Judge) -> str | None:
    """None when `outcome` is right for `case`, else why not ("" when the values say it all)."""
    if _expects_error(case):
        return None if isinstance(outcome.error, case.expected) else ""
    if outcome.error is not None or outcome.endless:
        return ""
    return judge(case, outcome)


def _failure(fn_name: str, case: Case, outcome: Outcome, why: str) -> list[str]:
    expected = case.expected.__name__ if _expects_error(case) else show(case.expected)
    lines = [
        f"input:    {show_call(fn_name, case.args, case.kwargs)}",
        f"expected: {expected}",
        f"got:      {show_outcome(outcome)}",
    ]
    if why:
        lines.append(f"why:      {why}")
    return lines


def _run_cases(
    name: str, fn_name: str, fn: Callable, cases: list[Case], judge: Judge, summary: str
) -> CheckResult:
    """Run every case in order and report the first one that fails."""
    if not callable(fn):
        return _verdict(name, "callable", [f"expected a function, got {show(fn)}"])
    for case in cases:
        outcome = call(fn, case.args, case.kwargs)
        if isinstance(outcome.error, NotImplementedError):
            return _verdict(name, NOT_IMPLEMENTED_CASE, [])
        why = _problem(case, outcome, judge)
        if why is not None:
            return _verdict(name, case.name, _failure(fn_name, case, outcome, why))
    return _verdict(name, None, [summary])


def _equal(case: Case, outcome: Outcome) -> str | None:
    if outcome.value == case.expected:
        return None
    if type(outcome.value) is not type(case.expected):
        return f"expected a {type(case.expected).__name__}, got a {type(outcome.value).__name__}"
    return ""  # wrong value: expected and got say it all


# --- exercise 1: the seed's character chunker ----------------------------------------------

# The contract (DESIGN.md): windows of `size` characters starting every `size - overlap`;
# stop after the window that reaches the end; ValueError if size <= 0, overlap < 0 or
# overlap >= size; empty text gives [].
DIGITS = "0123456789" * 100  # 1,000 characters whose windows are easy to tell apart

CHUNK_CASES = [
    Case("no overlap", ("abcdefghij",), {"size": 5, "overlap": 0}, ["abcde", "fghij"]),
    Case("overlap", ("abcdefghijk",), {"size": 4, "overlap": 1}, ["abcd", "defg", "ghij", "jk"]),
    Case("last window shorter", ("abcdefghij",), {"size": 4, "overlap": 0}, ["abcd", "efgh", "ij"]),
    Case("text shorter than size", ("abc",), {"size": 10, "overlap": 2}, ["abc"]),
    Case("stopping rule", ("abcdefg",), {"size": 4, "overlap": 1}, ["abcd", "defg"]),
    Case("stopping rule, exact fit", ("abcd",), {"size": 4, "overlap": 1}, ["abcd"]),
    Case("size 1", ("abc",), {"size": 1, "overlap": 0}, ["a", "b", "c"]),
    Case("large overlap", ("abcdef",), {"size": 3, "overlap": 2}, ["abc", "bcd", "cde", "def"]),
    Case("empty text", ("",), {"size": 4, "overlap": 1}, []),
    Case("defaults", (DIGITS,), {}, [DIGITS[:800], DIGITS[700:]]),
    Case("size 0", ("abc",), {"size": 0, "overlap": 0}, ValueError),
    Case("negative size", ("abc",), {"size": -5, "overlap": 0}, ValueError),
    Case("negative overlap", ("abcdef",), {"size": 3, "overlap": -1}, ValueError),
    Case("overlap equal to size", ("abcdef",), {"size": 3, "overlap": 3}, ValueError),
    Case("overlap larger than size", ("abcdef",), {"size": 3, "overlap": 5}, ValueError),
]

_ALPHABET = "abcdefgh  \n.é🙂"  # spaces, newlines, accents and an emoji: all one character each


def random_chunk_cases(n: int = RANDOM_CASES, seed: int = SEED) -> list[Case]:
    """Seeded random texts and settings, expected results from `raglab.chunking.chunk`."""
    from raglab.chunking import chunk as reference

    rng = random.Random(seed)
    cases = []
    for i in range(n):
        text = "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 60)))
        size = rng.randint(1, 20)
        overlap = rng.randint(0, size - 1)
        cases.append(
            Case(
                f"random text #{i}",
                (text,),
                {"size": size, "overlap": overlap},
                reference(text, size=size, overlap=overlap),
            )
        )
    return cases


def check_chunk(fn: Callable[..., list[str]]) -> CheckResult:
    """Check a learner's `chunk(text, size=800, overlap=100) -> list[str]`."""
    random_cases = random_chunk_cases()
    summary = f"all {len(CHUNK_CASES)} cases and {len(random_cases)} random texts pass"
    return _run_cases("chunk", "chunk", fn, CHUNK_CASES + random_cases, _equal, summary)


# --- exercise 2: sections with their heading path and offsets ------------------------------

# The exercise: split_sections(text) -> [(heading path, start, end), ...]
# - a heading is a line of 1 to 6 '#' then a space and the title; its level is the count;
# - a section runs from the start of its heading line to the start of the next heading
#   line (or the end); text before the first heading is a section with heading "";
# - the heading path joins the titles of the enclosing headings with " > "; a heading
#   closes every open heading at its level or deeper;
# - lines inside a fenced code block (between ``` lines) are never headings;
# - no empty sections: empty text gives [].
LEAVE = (
    "# Leave\nTen days.\n## Carry-over\nFive days.\n## Sick leave\nCall in.\n# Travel\nTrains.\n"
)

SECTION_CASES = [
    Case("empty text", ("",), {}, []),
    Case("no headings", ("Just text.\n",), {}, [("", 0, 11)]),
    Case("one heading", ("# Leave\nTen days.\n",), {}, [("Leave", 0, 18)]),
    Case("text before the first heading", ("Intro\n# A\nx\n",), {}, [("", 0, 6), ("A", 6, 12)]),
    Case("no newline at the end", ("# A\nbody",), {}, [("A", 0, 8)]),
    Case(
        "heading path",
        (LEAVE,),
        {},
        [
            ("Leave", 0, 18),
            ("Leave > Carry-over", 18, 43),
            ("Leave > Sick leave", 43, 66),
            ("Travel", 66, 83),
        ],
    ),
    Case(
        "skipped level",
        ("# A\n### C\n## B\n",),
        {},
        [("A", 0, 4), ("A > C", 4, 10), ("A > B", 10, 15)],
    ),
    Case("not a heading", ("# A\n#hashtag\n####### seven\n",), {}, [("A", 0, 27)]),
    Case(
        "code block",
        ("# Install\n```\n# a comment\n```\n## Check\n",),
        {},
        [("Install", 0, 30), ("Install > Check", 30, 39)],
    ),
]

_WORDS = ("leave", "days", "carry", "over", "travel", "trains", "sick", "policy", "VPN", "Lisbon")


def _random_markdown(rng: random.Random) -> str:
    """A small markdown text of headings, paragraphs, blank lines and code fences."""
    lines = []
    for _ in range(rng.randint(0, 10)):
        kind = rng.choice(("heading", "heading", "text", "text", "blank", "fence", "hashtag"))
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 4)))
        if kind == "heading":
            lines.append("#" * rng.randint(1, 4) + " " + words.capitalize())
        elif kind == "text":
            lines.append(words + ".")
        elif kind == "blank":
            lines.append("")
        elif kind == "fence":
            lines.append(rng.choice(("```", "```python")))
        else:
            lines.append("#" + words.replace(" ", ""))
    return "\n".join(lines) + rng.choice(("", "\n"))


def reference_sections(text: str) -> list[tuple[str, int, int]]:
    """The reference answer, from the engine's own section splitter in raglab.chunking."""
    from raglab.chunking import _sections

    return [(heading, start, end) for start, end, heading in _sections(text) if start < end]


def random_section_cases(n: int = RANDOM_CASES, seed: int = SEED) -> list[Case]:
    rng = random.Random(seed)
    cases = []
    for i in range(n):
        text = _random_markdown(rng)
        cases.append(Case(f"random text #{i}", (text,), {}, reference_sections(text)))
    return cases


def section_problem(text: str, sections: Any) -> str | None:
    """What is wrong with `sections` as a split of `text`, whatever the headings (None: fine).

    The invariants: a list of (heading, start, end); no empty section; the first starts
    at 0, each starts where the previous one ended, the last ends at len(text).
    """
    if not isinstance(sections, list):
        return f"expected a list of (heading, start, end), got a {type(sections).__name__}"
    position = 0
    for i, item in enumerate(sections):
        if not (isinstance(item, (tuple, list)) and len(item) == 3):
            return f"item {i} is {show(item)}, not (heading, start, end)"
        heading, start, end = item
        if not (isinstance(heading, str) and isinstance(start, int) and isinstance(end, int)):
            return f"item {i} is {show(item)}: heading must be a str, start and end ints"
        if start != position:
            where = "the text starts at 0" if i == 0 else f"section {i - 1} ended at {position}"
            return (
                f"section {i} starts at {start}, but {where}: "
                "sections must cover the text with no gap or overlap"
            )
        if end <= start:
            return f"section {i} is empty or backwards (start={start}, end={end})"
        position = end
    if position != len(text):
        return f"the sections end at {position}, but the text has {len(text)} characters"
    return None


def _judge_sections(case: Case, outcome: Outcome) -> str | None:
    problem = section_problem(case.args[0], outcome.value)
    if problem:
        return problem
    got = [tuple(item) for item in outcome.value]
    if got == case.expected:
        return None
    i, (mine, right) = next(
        (i, pair) for i, pair in enumerate(zip_longest(got, case.expected)) if pair[0] != pair[1]
    )
    if right is None:
        return f"section {i} {show(mine)} should not be there"
    return f"section {i} should be {show(right)}" + (
        f", not {show(mine)}" if mine is not None else ""
    )


def check_split_sections(fn: Callable[[str], list[tuple[str, int, int]]]) -> CheckResult:
    """Check a learner's `split_sections(text) -> [(heading path, start, end), ...]`."""
    random_cases = random_section_cases()
    summary = f"all {len(SECTION_CASES)} cases and {len(random_cases)} random texts pass"
    return _run_cases(
        "split_sections",
        "split_sections",
        fn,
        SECTION_CASES + random_cases,
        _judge_sections,
        summary,
    )


check_chunk_sections = check_split_sections  # the structure-aware exercise, by its topic


# Exercise id -> check. The grader calls CHECKS[id](the learner's function).
CHECKS: dict[str, Callable[[Callable], CheckResult]] = {
    "chunk": check_chunk,
    "split_sections": check_split_sections,
}
