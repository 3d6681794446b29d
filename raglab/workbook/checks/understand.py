"""Checks for notebook 01: the two lifecycles, and the documents an answer cites.

from raglab.workbook import checks
checks.check_lifecycle_of(lifecycle_of)    # ✅ lifecycle_of: all 12 steps ...
checks.check_cited_doc_ids(cited_doc_ids)  # ✅ cited_doc_ids: all 8 cases pass
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from raglab.generate.citations import verify_citations
from raglab.generate.generation import is_abstention
from raglab.generate.prompting import ABSTENTION
from raglab.records import Answer, Chunk, Hit
from raglab.workbook.checks.core import (
    NOT_IMPLEMENTED_CASE,
    Case,
    CheckResult,
    Outcome,
    call,
    equal,
    expects_error,
    run_cases,
    show,
    show_outcome,
    verdict,
)

__all__ = ["check_cited_doc_ids", "check_lifecycle_of"]

# --- exercise 1: which lifecycle runs each step -----------------------------------------------

LIFECYCLES = ("indexing", "query")

# The answer key. Mixed up on purpose: the notebook shows STEPS in this order, and two
# pairs look alike ("embed every chunk" / "embed the question", and attaching access
# metadata / applying it) but run in different lifecycles.
_LIFECYCLE: dict[str, str] = {
    "embed the question": "query",
    "read each file and its front matter": "indexing",
    "keep only the chunks the asker may read": "query",
    "cut each document into chunks": "indexing",
    "put the best chunks into delimited source blocks": "query",
    "copy the document's tenant and groups onto each chunk": "indexing",
    "rank chunks by how well they match the question": "query",
    "embed every chunk": "indexing",
    "check every [n] in the answer against the sources": "query",
    "record the embedder's name and version with the vectors": "indexing",
    "quote sentences from the sources, each with its [n]": "query",
    "delete the chunks of a document that was removed": "indexing",
}

STEPS: tuple[str, ...] = tuple(_LIFECYCLE)
"""The steps of the engine, in the order the notebook lists them."""

UNKNOWN_STEP = "make the coffee"  # not a step of the engine: must be refused, not guessed


def check_lifecycle_of(fn: Callable[[str], str]) -> CheckResult:
    """Check a learner's `lifecycle_of(step) -> "indexing" | "query"`.

    The verdict says how many steps are in the wrong lifecycle and names the first one,
    never which lifecycle is right (with two choices, the learner should reason it out).
    """
    name = "lifecycle_of"
    if not callable(fn):
        return verdict(name, "callable", [f"expected a function, got {show(fn)}"])
    wrong = []
    for step in STEPS:
        outcome = call(fn, (step,), {})
        if isinstance(outcome.error, NotImplementedError):
            return verdict(name, NOT_IMPLEMENTED_CASE, [])
        if outcome.error is not None or outcome.endless or outcome.value not in LIFECYCLES:
            return verdict(
                name,
                f"step: {step}",
                [
                    f"input:    lifecycle_of({step!r})",
                    'expected: "indexing" or "query", exactly (lower case)',
                    f"got:      {show_outcome(outcome)}",
                ],
            )
        if outcome.value != _LIFECYCLE[step]:
            wrong.append(step)
    if wrong:
        return verdict(
            name,
            f"step: {wrong[0]}",
            [
                f"{len(wrong)} of {len(STEPS)} steps are in the wrong lifecycle; first: {wrong[0]!r}",
                "ask of each: does it run when a document changes, or for every question?",
            ],
        )
    outcome = call(fn, (UNKNOWN_STEP,), {})
    if not isinstance(outcome.error, ValueError):
        return verdict(
            name,
            "unknown step",
            [
                f"input:    lifecycle_of({UNKNOWN_STEP!r})",
                "expected: ValueError (it is not one of STEPS: refuse it, do not guess)",
                f"got:      {show_outcome(outcome)}",
            ],
        )
    return verdict(
        name, None, [f"all {len(STEPS)} steps in the right lifecycle, and an unknown step refused"]
    )


# --- exercise 2: the documents an answer cites ----------------------------------------------


def make_answer(text: str, retrieved: list[str]) -> Answer:
    """An Answer as the engine builds it: `text` checked against hits for `retrieved`.

    `retrieved` lists chunk ids in prompt order (source [n] is `retrieved[n - 1]`), e.g.
    `["policies/travel.md#2", "it/vpn.md#0"]`; the citations come from the engine's own
    `verify_citations`, so a made-up [7] lands in `invalid_citations`.

    >>> answer = make_answer("Hotels: €180 a night [2].", ["a.md#0", "b.md#3"])
    >>> [(c.n, c.hit.chunk.id) for c in answer.citations]
    [(2, 'b.md#3')]
    """
    hits = []
    for rank, chunk_id in enumerate(retrieved):
        doc_id, _, index = chunk_id.partition("#")
        chunk = Chunk(doc_id, int(index or 0), f"text of {chunk_id}", 0, 10 + len(chunk_id))
        hits.append(Hit(chunk, round(1.0 - 0.1 * rank, 2)))
    report = verify_citations(text, hits)
    return Answer(
        text=text,
        citations=report.citations,
        retrieved=tuple(hits),
        abstained=is_abstention(text),
        invalid_citations=report.invalid,
    )


def describe(answer: Answer) -> list[str]:
    """An Answer in a few short lines: its text, its citations, what was retrieved."""
    cites = ", ".join(f"[{c.n}] {c.hit.chunk.id}" for c in answer.citations) or "none"
    retrieved = ", ".join(f"[{n}] {hit.chunk.id}" for n, hit in enumerate(answer.retrieved, 1))
    lines = [f"text       {show(answer.text)}", f"citations  {cites}"]
    if answer.invalid_citations:
        lines.append(f"invalid    {list(answer.invalid_citations)} (point at no source)")
    return lines + [f"retrieved  {retrieved or 'nothing'}"]


def reference_cited_doc_ids(answer: Answer) -> list[str]:
    """The reference answer: cited documents ordered by source number [n], each once.

    >>> reference_cited_doc_ids(make_answer("A [3]. B [1]. C [2].", ["a.md#0", "b.md#0", "a.md#4"]))
    ['a.md', 'b.md']
    """
    ids: list[str] = []
    for citation in sorted(answer.citations, key=lambda c: c.n):
        if citation.hit.chunk.doc_id not in ids:
            ids.append(citation.hit.chunk.doc_id)
    return ids


def _case(name: str, text: str, retrieved: list[str], expected: list[str]) -> Case:
    return Case(name, (make_answer(text, retrieved),), {}, expected)


CITED_CASES = [
    _case("one citation", "Hotels: €180 a night [1].", ["expenses.md#2"], ["expenses.md"]),
    _case("abstention", ABSTENTION, ["leave.md#0", "vpn.md#1"], []),
    _case("nothing retrieved", ABSTENTION, [], []),
    _case(
        "cited, not just retrieved",
        "Claims within 30 days [2].",
        ["travel.md#0", "expenses.md#1", "leave.md#4"],
        ["expenses.md"],
    ),
    _case(
        "ordered by [n]",
        "Use the VPN [3]. Book by train [1].",
        ["travel.md#1", "leave.md#0", "it/vpn.md#2"],
        ["travel.md", "it/vpn.md"],
    ),
    _case(
        "one document, two sources",
        "Meals €55 [3]. Hotels €180 [1]. Taxis [2].",
        ["expenses.md#2", "travel.md#1", "expenses.md#3"],
        ["expenses.md", "travel.md"],
    ),
    _case(
        "one source cited twice",
        "25 days [1]. Carry over 5 [1][2].",
        ["leave.md#1", "holidays.md#0"],
        ["leave.md", "holidays.md"],
    ),
    _case(
        "a made-up marker",
        "Band L3 [2]. Bonus 10% [7].",
        ["hr/bands.md#0", "hr/bands.md#1"],
        ["hr/bands.md"],
    ),
]


def _failure(case: Case, outcome: Outcome, why: str) -> list[str]:
    expected = case.expected.__name__ if expects_error(case) else show(case.expected)
    lines = [
        "input:    cited_doc_ids(answer), where answer has",
        *(f"            {line}" for line in describe(case.args[0])),
        f"expected: {expected}",
        f"got:      {show_outcome(outcome)}",
    ]
    return lines + ([f"why:      {why}"] if why else [])


def check_cited_doc_ids(fn: Callable[[Answer], list[str]]) -> CheckResult:
    """Check a learner's `cited_doc_ids(answer) -> list[str]`: the documents an answer
    cites, ordered by source number [n], each once."""
    summary = f"all {len(CITED_CASES)} cases pass"
    return run_cases(
        "cited_doc_ids", "cited_doc_ids", fn, CITED_CASES, equal, summary, explain=_failure
    )


# Exercise id -> check, for this notebook; raglab.workbook.checks.CHECKS merges every notebook's.
CHECKS: dict[str, Callable[[Any], CheckResult]] = {
    "understand_lifecycle": check_lifecycle_of,
    "understand_cited_docs": check_cited_doc_ids,
}
