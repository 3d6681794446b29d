"""Checks for notebook 04: the seed's character chunker, markdown sections, and the context
header of a contextual chunk."""

from __future__ import annotations

import random
from collections.abc import Callable
from itertools import zip_longest
from typing import Any

from raglab.ingest.chunking import Chunker
from raglab.ingest.chunking import split_sections as reference_sections  # the engine's own splitter
from raglab.ingest.contextual import context_header as reference_context_header  # noqa: F401 (hidden)
from raglab.ingest.contextual import document_summary
from raglab.ingest.sentences import clean_inline
from raglab.records import Document
from raglab.workbook.checks.core import (
    RANDOM_CASES,
    SEED,
    Case,
    CheckResult,
    Outcome,
    equal,
    run_cases,
    show,
)

# --- exercise 1: the seed's character chunker ----------------------------------------------

# The contract (ARCHITECTURE.md): windows of `size` characters starting every `size - overlap`;
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
    """Seeded random texts and settings, expected results from `raglab.ingest.chunking.chunk`."""
    from raglab.ingest.chunking import chunk as reference

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
    return run_cases("chunk", "chunk", fn, CHUNK_CASES + random_cases, equal, summary)


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
    return run_cases(
        "split_sections",
        "split_sections",
        fn,
        SECTION_CASES + random_cases,
        _judge_sections,
        summary,
    )


check_chunk_sections = check_split_sections  # the structure-aware exercise, by its topic


# --- exercise 3: the context header of a contextual chunk ----------------------------------

# The exercise: context_header(title, heading, summary) -> str
# - the path: "title > heading", the title left out when the heading path already is it
#   or starts with it followed by " > ";
# - then the summary on a line of its own; empty parts left out (no empty lines), so no
#   header at all is "".
HEADER_CASES = [
    Case(
        "all three",
        ("Leave", "Approval", "Staff get 25 days."),
        {},
        "Leave > Approval\nStaff get 25 days.",
    ),
    Case("nothing", ("", "", ""), {}, ""),
    Case("title only", ("Leave", "", ""), {}, "Leave"),
    Case("summary only", ("", "", "Staff get 25 days."), {}, "Staff get 25 days."),
    Case("heading is the title", ("Leave", "Leave", "S."), {}, "Leave\nS."),
    Case(
        "heading path starts with the title",
        ("Leave", "Leave > Approval", ""),
        {},
        "Leave > Approval",
    ),
    Case(
        "a longer word is not the title",
        ("Leave", "Leaves > Approval", ""),
        {},
        "Leave > Leaves > Approval",
    ),
    Case("no title", ("", "Approval", "S."), {}, "Approval\nS."),
]

# Documents the notebook never shows: the check cuts them with the engine's contextual
# chunker and asks for each chunk's header from its title, heading and summary.
HIDDEN_DOCUMENTS = [
    Document(
        id="it/vpn.md",
        title="VPN access",
        text="# VPN access\n\nThe VPN connects you to the office network from home.\n\n"
        "## Setup\n\nInstall the client from the portal. Sign in with your badge number.\n\n"
        "## Problems\n\nRestart the client first. It must be updated every month.\n",
    ),
    Document(
        id="fin/claims.md",
        title="Expense claims",
        text="Claims are paid within ten days of approval.\n\n# Receipts\n\n"
        "Keep every receipt. They are checked at random.\n\n### Lost receipts\n\n"
        "Write a short note instead; it counts as a receipt.\n",
    ),
    Document(id="notes.txt", title="", text="Short note.\n\n# Only\n\nTwo words here, then more."),
]


def hidden_document_cases(size: int = 70) -> list[Case]:
    """One case per chunk of the hidden documents: (title, heading, summary) -> the header
    the engine's contextual chunker gave that chunk."""
    cases = []
    for doc in HIDDEN_DOCUMENTS:
        summary = document_summary(doc.text)
        for chunk in Chunker(size=size, overlap=10, contextual=True).split(doc):
            own = "" if summary in clean_inline(chunk.text) else summary
            name = f"hidden document {doc.id}, chunk {chunk.index}"
            cases.append(Case(name, (doc.title, chunk.heading, own), {}, chunk.context))
    return cases


def check_context_header(fn: Callable[[str, str, str], str]) -> CheckResult:
    """Check a learner's `context_header(title, heading, summary) -> str`."""
    hidden = hidden_document_cases()
    summary = f"all {len(HEADER_CASES)} cases and the {len(hidden)} chunks of hidden documents pass"
    return run_cases("context_header", "context_header", fn, HEADER_CASES + hidden, equal, summary)


# Exercise id -> check, for this notebook; raglab.workbook.checks.CHECKS merges every notebook's.
CHECKS: dict[str, Callable[[Callable], CheckResult]] = {
    "chunk": check_chunk,
    "split_sections": check_split_sections,
    "context_header": check_context_header,
}
