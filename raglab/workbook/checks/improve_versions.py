"""Checks for notebook 09, section 7: the versions a reader no longer sees.

- `hidden_versions(supersedes, readable) -> set[str]`: the documents a reader must not be
  answered from, superseded (directly or through a chain) by a newer version that reader
  may read (reference: `raglab.store.versions.hidden_documents` over `supersession`).

The judge recognises the plausible wrong versions (the newer one hidden, readability
ignored, chains not followed) by computing them, and says which one the learner wrote.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from raglab.records import Document
from raglab.store.versions import hidden_documents, supersession
from raglab.workbook.checks.core import (
    RANDOM_CASES,
    SEED,
    Case,
    CheckResult,
    Outcome,
    run_cases,
    show,
)

__all__ = ["check_hidden_versions", "reference_hidden_versions"]


# --- exercise 6: versions a reader no longer sees ------------------------------------------


def reference_hidden_versions(supersedes: dict[str, list[str]], readable: set[str]) -> set[str]:
    """The engine's rule on plain ids: `supersedes` maps a document to the ids it replaces.

    >>> sorted(reference_hidden_versions({"c": ["b"], "b": ["a"]}, {"a", "c"}))
    ['a']
    """
    documents = [Document(new, "", supersedes=tuple(olds)) for new, olds in supersedes.items()]
    return set(hidden_documents(supersession(documents), readable=readable))


def _newer(supersedes: dict[str, list[str]], *, chains: bool = True) -> dict[str, set[str]]:
    """old id -> every id superseding it (through chains unless `chains` is False)."""
    direct: dict[str, set[str]] = {}
    for new, olds in supersedes.items():
        for old in olds:
            direct.setdefault(old, set()).add(new)
    if not chains:
        return direct
    closed = {}
    for old in direct:
        seen, todo = set(), list(direct[old])
        while todo:
            doc_id = todo.pop()
            if doc_id not in seen:
                seen.add(doc_id)
                todo.extend(direct.get(doc_id, ()))
        closed[old] = seen
    return closed


def _hidden_variant(
    supersedes: dict[str, list[str]],
    readable: set[str],
    *,
    chains: bool = True,
    newer_readable: bool = True,
    old_readable: bool = True,
    swapped: bool = False,
) -> set[str]:
    """The rule with one thing changed, to recognise a learner's mistake by its output."""
    pairs = [
        (old, new)
        for old, newer in _newer(supersedes, chains=chains).items()
        for new in newer
        if (new in readable or not newer_readable)
    ]
    hidden = {new if swapped else old for old, new in pairs}
    return {doc for doc in hidden if doc in readable or not old_readable}


VERSION_MISTAKES: tuple[tuple[dict[str, Any], str], ...] = (
    (
        {"swapped": True},
        "the other way round: the *older* document (the one named in `supersedes`) is hidden",
    ),
    (
        {"newer_readable": False},
        "a document is hidden only by a newer version the reader may read; otherwise the "
        "reader would lose the only version they can see (and learn that another exists)",
    ),
    (
        {"old_readable": False},
        "return only documents in `readable`: the others never reach this reader anyway",
    ),
    (
        {"chains": False},
        "follow the chains: if c supersedes b and b supersedes a, c hides a too — even "
        "when the reader may not read b",
    ),
)


def _judge_hidden(case: Case, outcome: Outcome) -> str | None:
    value = outcome.value
    if not isinstance(value, (set, frozenset)):
        return f"expected a set of document ids, got {show(value)}"
    if value == case.expected:
        return None
    for change, why in VERSION_MISTAKES:
        if value == _hidden_variant(*case.args, **change):
            return why
    return ""


def _versions_case(name: str, supersedes: dict[str, list[str]], readable: set[str]) -> Case:
    return Case(name, (supersedes, readable), {}, reference_hidden_versions(supersedes, readable))


VERSION_CASES = [
    _versions_case(
        "the newer version hides the older", {"2025.md": ["2023.md"]}, {"2025.md", "2023.md"}
    ),
    _versions_case("nothing supersedes", {}, {"a.md", "b.md"}),
    _versions_case("the reader may not read the newer one", {"2025.md": ["2023.md"]}, {"2023.md"}),
    _versions_case("only readable documents are hidden", {"2025.md": ["2023.md"]}, {"2025.md"}),
    _versions_case("one replaces two", {"new.md": ["a.md", "b.md"]}, {"new.md", "a.md", "b.md"}),
    _versions_case(
        "a chain through a page the reader may not read",
        {"c.md": ["b.md"], "b.md": ["a.md"]},
        {"a.md", "c.md"},
    ),
    _versions_case("a name that is no document", {"new.md": ["gone.md"]}, {"new.md"}),
    _versions_case(
        "two readers, two answers",
        {"hr-2025.md": ["hr-2023.md"], "all-2025.md": ["all-2023.md"]},
        {"all-2025.md", "all-2023.md", "hr-2023.md"},
    ),
]


def random_versions_cases(n: int = RANDOM_CASES // 2, seed: int = SEED) -> list[Case]:
    rng = random.Random(seed)
    cases = []
    for i in range(n):
        ids = [f"d{j}.md" for j in range(rng.randint(1, 7))]
        # A document supersedes only older ones (lower numbers): no cycles, as the loader ensures.
        supersedes = {
            new: rng.sample(ids[:j], rng.randint(0, min(2, j)))
            for j, new in enumerate(ids)
            if j and rng.random() < 0.6
        }
        readable = {doc for doc in ids if rng.random() < 0.7}
        cases.append(_versions_case(f"random corpus #{i}", supersedes, readable))
    return cases


def check_hidden_versions(fn: Callable[..., Any]) -> CheckResult:
    """Check a learner's `hidden_versions(supersedes, readable) -> set[str]`."""
    cases = VERSION_CASES + random_versions_cases()
    summary = (
        f"all {len(VERSION_CASES)} cases and {len(cases) - len(VERSION_CASES)} random corpora pass"
    )
    return run_cases("hidden_versions", "hidden_versions", fn, cases, _judge_hidden, summary)


CHECKS: dict[str, Callable[[Callable], CheckResult]] = {
    "hidden_versions": check_hidden_versions,
}
