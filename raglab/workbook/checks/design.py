"""Checks for notebook 03 (design): spot the flaws in a proposed design, and search eligible-first.

Exercise `design_flaws`: the learner reads a proposed design (`PROPOSED_DESIGN`, statements
D1..D10, printed in the notebook) and fills `FLAWS`, the set of ids they judge flawed. The
check says how many flawed statements are missing and how many sound ones were flagged,
and points at the principle to re-read for the first wrong judgement. It never says which
statement is wrong, nor what the answer is.

Exercise `search_readable`: the learner writes

    search_readable(question, principal, chunks, vectors, embedder, k) -> list[Hit]

which keeps the chunks `principal` may read (`raglab.store.access.can_read`) BEFORE scoring, then
ranks them by cosine with `raglab.retrieve.vectors.top_k`. The crafted cases are the ones where
filtering after the top-k gives a different answer: fewer than k hits, none at all, or a
different chunk at a tie.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from raglab.records import Chunk, Hit, Principal
from raglab.workbook.checks.core import (
    NOT_IMPLEMENTED_CASE,
    CheckResult,
    Outcome,
    call,
    show,
    show_outcome,
    verdict,
)

__all__ = [
    "PROPOSED_DESIGN",
    "WordCountEmbedder",
    "check_design_flaws",
    "check_search_readable",
    "reference_search_readable",
]

# --- exercise 1: spot the flaws in a proposed design ---------------------------------------

# What to re-read for each kind of mistake: a section of notebook 03 and the principle it
# shows (ARCHITECTURE.md, "Principles"). Named so that it guides without giving the answer away.
PRINCIPLES: dict[str, str] = {
    "metadata": "section 2: who may read a chunk is decided by metadata attached at indexing "
    "time (tenant, groups), checked in code, never by text or by a model",
    "before-scoring": "section 2: where the access filter sits, and what goes wrong (a), (b), (c) "
    "when forbidden chunks take part in scoring",
    "offsets": "section 1: the Chunk record, and what a chunk must carry to be cited",
    "embedder": "section 1: the store's meta, and why vectors from two embedders must never "
    "be compared",
    "data": "section 3: the prompt, and how retrieved text is kept apart from instructions",
    "budget": "section 3: the budget, and which sources make it into the prompt",
    "citations": "section 3: why source ids must survive into the answer",
}


@dataclass(frozen=True, slots=True)
class Statement:
    """One statement of the proposed design, with the verdict and the principle behind it."""

    id: str
    text: str
    flawed: bool
    principle: str  # a key of PRINCIPLES


PROPOSED_DESIGN: tuple[Statement, ...] = (
    Statement(
        "D1",
        "Each document's tenant and groups are read from its front matter when it is loaded, "
        "and copied onto every one of its chunks.",
        False,
        "metadata",
    ),
    Statement(
        "D2",
        "To keep queries fast, the store scores every chunk, keeps the top 20, and then "
        "drops those the user may not read.",
        True,
        "before-scoring",
    ),
    Statement(
        "D3",
        "A chunk stores its document id, its position in the document, and its start and "
        "end offsets, so that `document.text[start:end] == chunk.text`.",
        False,
        "offsets",
    ),
    Statement(
        "D4",
        "The system prompt tells the model to ignore any source the user is not allowed to see.",
        True,
        "metadata",
    ),
    Statement(
        "D5",
        "BM25's statistics (document frequencies, average length) are computed once over the "
        "whole corpus and shared by every tenant.",
        True,
        "before-scoring",
    ),
    Statement(
        "D6",
        "The index file records the embedder's name, dimension and version; opening it with "
        "a different embedder is refused with an error.",
        False,
        "embedder",
    ),
    Statement(
        "D7",
        "Retrieved chunks are appended to the system instructions as plain paragraphs, so "
        "the prompt reads naturally.",
        True,
        "data",
    ),
    Statement(
        "D8",
        "The embedder for queries is chosen at query time from a configuration file, so it "
        "can be upgraded without re-indexing.",
        True,
        "embedder",
    ),
    Statement(
        "D9",
        "Sources enter the prompt in rank order until the next one would exceed `max_chars`; "
        "each keeps its chunk id and offsets.",
        False,
        "budget",
    ),
    Statement(
        "D10",
        "Every `[n]` in the answer is checked against the sources of this question's prompt; "
        "a marker that points at no source is reported, never silently dropped.",
        False,
        "citations",
    ),
)

_IDS = tuple(s.id for s in PROPOSED_DESIGN)
EMPTY = "FLAWS is empty: add the ids of the statements you judge flawed, like {'D1', 'D2'}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _ids_of(answer: Any) -> set[str] | str:
    """The answer as a set of ids, or a message saying why it is not one."""
    if isinstance(answer, str):
        return f"expected a set of ids like {{'D1', 'D2'}}, got one string {show(answer)}"
    if not isinstance(answer, (set, frozenset, list, tuple)):
        return f"expected a set of ids like {{'D1', 'D2'}}, got a {type(answer).__name__}"
    not_str = [item for item in answer if not isinstance(item, str)]
    if not_str:
        return f"every id must be a string like 'D3' (got {show(not_str[0])})"
    return set(answer)


def check_design_flaws(flaws: Any) -> CheckResult:
    """Check a learner's `FLAWS`: the ids of the flawed statements of `PROPOSED_DESIGN`."""
    name = "design_flaws"
    if flaws is None or flaws is Ellipsis:
        return verdict(name, NOT_IMPLEMENTED_CASE, [])
    ids = _ids_of(flaws)
    if isinstance(ids, str):
        return verdict(name, "not a set of ids", [ids])
    if not ids:
        return verdict(name, "empty", [EMPTY])
    unknown = sorted(ids - set(_IDS))
    if unknown:
        return verdict(
            name,
            "unknown id",
            [f"{show(unknown[0])} is not a statement: the ids run from D1 to D{len(_IDS)}"],
        )
    missing = [s for s in PROPOSED_DESIGN if s.flawed and s.id not in ids]
    flagged = [s for s in PROPOSED_DESIGN if not s.flawed and s.id in ids]
    if not missing and not flagged:
        flawed = sum(s.flawed for s in PROPOSED_DESIGN)
        summary = (
            f"all {len(_IDS)} statements judged right ({flawed} flawed, {len(_IDS) - flawed} sound)"
        )
        return verdict(name, None, [summary])
    # Point at the principle behind the first wrong judgement, never at the statement itself.
    first = next(s for s in PROPOSED_DESIGN if s in missing or s in flagged)
    counts = (
        f"{_plural(len(missing) + len(flagged), 'judgement')} to change: "
        f"{_plural(len(missing), 'flawed statement')} not in FLAWS, "
        f"{_plural(len(flagged), 'sound statement')} in FLAWS"
    )
    return verdict(
        name,
        "judgement",
        [counts, f"re-read {PRINCIPLES[first.principle]}"],
    )


# --- exercise 2: eligible-first search --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WordCountEmbedder:
    """A tiny embedder for readable checks: one dimension per word of `vocabulary`.

    A text's vector counts each vocabulary word in it (lowercase, whole words), scaled to
    length 1; a text without any of them gets a zero row. Cosines are easy to work out
    by hand, and identical texts give identical vectors: exact ties.

    >>> e = WordCountEmbedder(("refund", "leave"))
    >>> e.embed(["refund leave", "leave"]).round(3)
    array([[0.707, 0.707],
           [0.   , 1.   ]], dtype=float32)
    """

    vocabulary: tuple[str, ...] = ("refund", "days", "leave", "salary", "price", "vpn")

    @property
    def name(self) -> str:
        return "words"

    @property
    def dim(self) -> int:
        return len(self.vocabulary)

    @property
    def version(self) -> str:
        return "words-v1:" + ",".join(self.vocabulary)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if isinstance(texts, str):  # the same refusal as the real embedders
            raise TypeError(
                f"texts must be a sequence of strings, not one string (got {texts[:40]!r}); "
                "wrap it in a list: embed([text])"
            )
        rows = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                if word in self.vocabulary:
                    rows[i, self.vocabulary.index(word)] += 1.0
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        return np.divide(rows, norms, out=rows, where=norms > 0)


def reference_search_readable(
    question: str,
    principal: Principal,
    chunks: Sequence[Chunk],
    vectors: np.ndarray,
    embedder: Any,
    k: int,
) -> list[Hit]:
    """The top-k chunks `principal` may read, by cosine with `question`: filter, then score.

    The reference answer of the exercise, the same rule the engine's stores apply.

    >>> e = WordCountEmbedder(("refund", "leave"))
    >>> chunks = [Chunk("globex/r.md", 0, "refund", 0, 6, tenant="globex"),
    ...           Chunk("acme/l.md", 0, "leave refund", 0, 12, tenant="acme")]
    >>> hits = reference_search_readable("refund", Principal("ann", "acme"), chunks,
    ...                                  e.embed([c.text for c in chunks]), e, k=1)
    >>> [(h.chunk.id, round(h.score, 3)) for h in hits]
    [('acme/l.md#0', 0.707)]
    """
    from raglab.retrieve.vectors import top_k
    from raglab.store.access import can_read

    readable = [row for row, chunk in enumerate(chunks) if can_read(principal, chunk)]
    if not readable:
        return []
    query = embedder.embed([question])[0]
    positions, scores = top_k(query, np.asarray(vectors)[readable], k)
    return [Hit(chunks[readable[p]], float(s)) for p, s in zip(positions, scores)]


@dataclass(frozen=True, slots=True)
class SearchCase:
    """One store and one question; `expected` is computed by the reference."""

    name: str
    question: str
    principal: Principal
    chunks: tuple[Chunk, ...]
    k: int
    embedder: Any = WordCountEmbedder()

    @property
    def vectors(self) -> np.ndarray:
        return self.embedder.embed([c.text for c in self.chunks])

    def args(self) -> tuple:
        return (
            self.question,
            self.principal,
            list(self.chunks),
            self.vectors,
            self.embedder,
            self.k,
        )


def _chunk(
    doc_id: str, text: str, tenant: str, groups: tuple[str, ...] = (), index: int = 0
) -> Chunk:
    return Chunk(doc_id, index, text, 0, len(text), tenant=tenant, groups=groups)


ANN = Principal("ann", "acme")  # an acme employee in no group
HANA = Principal("hana", "acme", frozenset({"hr"}))  # acme, in hr
GINA = Principal("gina", "globex")  # a globex customer
GLOBEX_HR = Principal("gus", "globex", frozenset({"hr"}))  # in a group called hr, but of globex

# The other tenant's refund page outranks everything acme has: filtering the top-k
# afterwards leaves an acme user with nothing.
REFUND_STORE = (
    _chunk("globex/returns.md", "refund days refund", "globex"),
    _chunk("globex/returns.md", "refund days", "globex", index=1),
    _chunk("globex/billing.md", "refund price", "globex"),
    _chunk("acme/expenses.md", "refund salary price vpn", "acme"),
    _chunk("acme/leave.md", "leave days", "acme"),
    _chunk("acme/it.md", "vpn", "acme"),
)

SALARY_STORE = (
    _chunk("acme/hr/salary.md", "salary days", "acme", ("hr",)),
    _chunk("acme/hr/salary.md", "salary price", "acme", ("hr",), index=1),
    _chunk("acme/leave.md", "leave days", "acme"),
    _chunk("acme/benefits.md", "salary leave price vpn", "acme"),
    _chunk("globex/plans.md", "price", "globex"),
)

# Equal texts, equal vectors, equal scores: the lower row wins the tie. The forbidden
# chunk at row 0 would take a place at the top-k boundary if it were scored.
TIE_STORE = (
    _chunk("globex/a.md", "leave days", "globex"),
    _chunk("acme/b.md", "leave", "acme"),
    _chunk("acme/c.md", "leave days", "acme"),
    _chunk("acme/d.md", "leave days", "acme"),
    _chunk("acme/e.md", "leave days", "acme"),
)

# Real words through the engine's own hashing embedder, as in the notebook.
HASHING_STORE = (
    _chunk(
        "globex/policies/returns-refunds.md",
        "Refunds are paid within 5 to 7 business days after we inspect the returned product.",
        "globex",
    ),
    _chunk(
        "globex/policies/returns-refunds.md",
        "Products may be returned within 30 days of delivery for a full refund.",
        "globex",
        index=1,
    ),
    _chunk(
        "acme/policies/expenses-2025.md",
        "Approved expense claims are refunded by bank transfer within 10 working days.",
        "acme",
    ),
    _chunk("acme/policies/leave.md", "Every employee gets 25 days of annual leave.", "acme"),
    _chunk(
        "acme/hr/salary-bands.md", "Salary bands are reviewed every year in March.", "acme", ("hr",)
    ),
)


def crafted_cases() -> list[SearchCase]:
    from raglab.embed.embedders import HashingEmbedder

    return [
        SearchCase("filter before the top-k", "refund days", ANN, REFUND_STORE, 2),
        SearchCase("fewer than k readable", "refund days", ANN, REFUND_STORE, 5),
        SearchCase("another tenant's question", "refund price", GINA, REFUND_STORE, 2),
        SearchCase("restricted group, not a member", "salary price", ANN, SALARY_STORE, 2),
        SearchCase("restricted group, a member", "salary price", HANA, SALARY_STORE, 2),
        SearchCase("group of another tenant", "salary", GLOBEX_HR, SALARY_STORE, 3),
        SearchCase("nothing readable", "refund", Principal("ivy", "initech"), REFUND_STORE, 3),
        SearchCase("k = 1", "vpn", ANN, REFUND_STORE, 1),
        SearchCase("tie order", "leave days", ANN, TIE_STORE, 2),
        SearchCase("ties to the end", "leave days", ANN, TIE_STORE, 4),
        SearchCase(
            "real embedder", "When is my refund paid?", ANN, HASHING_STORE, 2, HashingEmbedder()
        ),
    ]


_TENANTS = ("acme", "globex")
_GROUPS = ("hr", "managers")
_WORDS = WordCountEmbedder().vocabulary
TIE_TOLERANCE = 1e-5  # scores may differ by rounding (float32 vs float64 cosine), no more


def _near_ties(case: SearchCase) -> bool:
    """True when two readable chunks score *almost* the same: their order would then depend
    on float rounding (a learner may compute cosine in float64, the reference in float32),
    not on the tie rule. Exact ties (equal in both precisions) are kept: they test the rule."""
    from raglab.store.access import can_read

    rows = [r for r, chunk in enumerate(case.chunks) if can_read(case.principal, chunk)]
    if len(rows) < 2:
        return False
    vectors = case.vectors[rows]
    query = case.embedder.embed([case.question])[0]
    wide = vectors.astype(np.float64) @ query.astype(np.float64)
    narrow = np.einsum("ij,j->i", vectors, query)
    for i in range(len(rows)):
        for j in range(i + 1, len(rows)):
            d64, d32 = abs(wide[i] - wide[j]), abs(float(narrow[i]) - float(narrow[j]))
            if (0 < d64 < 10 * TIE_TOLERANCE) or ((d64 == 0) != (d32 == 0)):
                return True
    return False


def random_search_cases(n: int = 100, seed: int = 2024) -> list[SearchCase]:
    """Seeded random stores (tenants, groups, texts from a small vocabulary: many exact ties)."""
    rng = random.Random(seed)
    cases: list[SearchCase] = []
    while len(cases) < n:
        chunks = []
        for row in range(rng.randint(0, 9)):
            tenant = rng.choice(_TENANTS)
            groups = (
                tuple(sorted(set(rng.sample(_GROUPS, rng.randint(0, 2)))))
                if rng.random() < 0.3
                else ()
            )
            text = " ".join(rng.choice(_WORDS[:4]) for _ in range(rng.randint(1, 2)))
            chunks.append(_chunk(f"{tenant}/doc{row}.md", text, tenant, groups))
        principal = Principal(
            "u", rng.choice(_TENANTS), frozenset(rng.sample(_GROUPS, rng.randint(0, 1)))
        )
        question = " ".join(rng.choice(_WORDS[:4]) for _ in range(rng.randint(1, 2)))
        case = SearchCase(
            f"random store #{len(cases)}", question, principal, tuple(chunks), rng.randint(1, 5)
        )
        if not _near_ties(case):
            cases.append(case)
    return cases


# --- judging a search result ---------------------------------------------------------------


def _show_principal(p: Principal) -> str:
    groups = f", groups={{{', '.join(repr(g) for g in sorted(p.groups))}}}" if p.groups else ""
    return f"Principal({p.user!r}, {p.tenant!r}{groups})"


def _show_chunks(chunks: Sequence[Chunk]) -> str:
    items = [
        f"{c.id} [{c.tenant}{'/' + ','.join(c.groups) if c.groups else ''}] {c.text!r}"
        for c in chunks
    ]
    return "[" + "; ".join(items) + "]" if items else "[]"


def _show_hits(value: Any) -> str:
    if isinstance(value, list) and all(isinstance(h, Hit) for h in value):
        return "[" + ", ".join(f"({h.chunk.id!r}, {h.score:.3f})" for h in value) + "]"
    return show(value)


def _input_lines(case: SearchCase) -> list[str]:
    return [
        (
            f"input:    search_readable({case.question!r}, {_show_principal(case.principal)}, "
            f"chunks, vectors, embedder, k={case.k})"
        ),
        f"chunks:   {_show_chunks(case.chunks)}",
    ]


def _hits_problem(case: SearchCase, expected: list[Hit], got: Any) -> str | None:
    """None when `got` matches `expected`, else why not (the first difference, in words)."""
    from raglab.store.access import can_read

    if not isinstance(got, list):
        return f"expected a list of Hit, got a {type(got).__name__}"
    for i, hit in enumerate(got):
        if not isinstance(hit, Hit):
            return f"item {i} is a {type(hit).__name__}, not a Hit(chunk, score)"
    ids = {c.id: c for c in case.chunks}
    for hit in got:
        if not can_read(case.principal, hit.chunk):
            return (
                f"{hit.chunk.id!r} is a chunk this principal may not read "
                f"(tenant {hit.chunk.tenant!r}, groups {list(hit.chunk.groups)})"
            )
        if ids.get(hit.chunk.id) != hit.chunk:
            return (
                f"hit {hit.chunk.id!r} does not carry the store's Chunk: return chunks[row] itself"
            )
    got_ids = [h.chunk.id for h in got]
    want_ids = [h.chunk.id for h in expected]
    if len(got) > case.k:
        return f"{len(got)} hits for k={case.k}: return at most k"
    if len(set(got_ids)) < len(got_ids):
        return "the same chunk is returned twice"
    if len(got) < len(expected):
        return (
            f"only {len(got)} hits, but {len(expected)} readable chunks could fill the k={case.k} "
            "places: is the filter applied after taking the top k?"
        )
    if got_ids != want_ids:
        if sorted(got_ids) == sorted(want_ids):
            return (
                "the right chunks in the wrong order: higher score first, and equal scores "
                "in store order (the lower row first)"
            )
        i = next(i for i, (a, b) in enumerate(zip(got_ids, want_ids)) if a != b)
        if _close(got[i].score, expected[i].score):
            return (
                f"hit {i} ties with the expected one (same score): equal scores come in "
                "store order, the lower row of `chunks` first"
            )
        return (
            f"hit {i} is not the one expected: are the positions from top_k mapped back "
            "to the rows of `chunks` they came from?"
        )
    for i, (mine, right) in enumerate(zip(got, expected)):
        if not _close(mine.score, right.score):
            return (
                f"hit {i} has score {show(mine.score)}, expected {right.score:.6f}: the cosine of "
                "the question's vector with the chunk's vector"
            )
    return None


def _close(score: Any, expected: float) -> bool:
    """True when `score` is a number within rounding of `expected`."""
    return isinstance(score, (float, int, np.floating)) and math.isclose(
        float(score), expected, abs_tol=TIE_TOLERANCE
    )


def check_search_readable(fn: Callable[..., list[Hit]]) -> CheckResult:
    """Check a learner's `search_readable(question, principal, chunks, vectors, embedder, k)`."""
    name = "search_readable"
    if not callable(fn):
        return verdict(name, "callable", [f"expected a function, got {show(fn)}"])
    cases = crafted_cases()
    randoms = random_search_cases()
    for case in cases + randoms:
        expected = reference_search_readable(*case.args())
        outcome: Outcome = call(fn, case.args(), {})
        if isinstance(outcome.error, NotImplementedError):
            return verdict(name, NOT_IMPLEMENTED_CASE, [])
        returned = outcome.error is None and not outcome.endless
        why = _hits_problem(case, expected, outcome.value) if returned else None
        if returned and why is None:
            continue
        got = _show_hits(outcome.value) if returned else show_outcome(outcome)
        lines = [*_input_lines(case), f"expected: {_show_hits(expected)}", f"got:      {got}"]
        if why:
            lines.append(f"why:      {why}")
        return verdict(name, case.name, lines)
    return verdict(name, None, [f"all {len(cases)} cases and {len(randoms)} random stores pass"])


# Exercise id -> check, for this notebook; raglab.workbook.checks.CHECKS merges every notebook's.
CHECKS: dict[str, Callable[[Any], CheckResult]] = {
    "design_flaws": check_design_flaws,
    "search_readable": check_search_readable,
}
