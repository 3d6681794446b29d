"""Checks for notebook 02: the contracts of the pipeline's boundaries.

Two exercises:

- `chunk_violations(doc, chunks, size) -> list[str]`: which of the chunker's invariants
  (`CHUNK_INVARIANTS`) a list of chunks breaks. Checked on crafted chunk lists, then on
  seeded random documents whose chunks were damaged in random ways, against
  `reference_chunk_violations`.
- `failure_prevented() -> dict[str, str]`: match each invariant (`INVARIANTS`) with the
  failure it prevents (`FAILURES`). The check says how many answers are wrong and which
  invariant to look at again, never the right failure.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import Any

from raglab.records import Chunk, Document
from raglab.text import content_hash
from raglab.workbook.checks.core import (
    NOT_IMPLEMENTED_CASE,
    RANDOM_CASES,
    SEED,
    CheckResult,
    Outcome,
    call,
    show,
    show_outcome,
    verdict,
)

__all__ = [
    "check_chunk_violations",
    "check_failure_prevented",
    "reference_chunk_violations",
]

# --- exercise 1: the chunker's contract, as code ---------------------------------------------

CHUNK_INVARIANTS = {
    "offsets": "0 <= start <= end <= len(doc.text) and doc.text[c.start:c.end] == c.text",
    "size": "no chunk is longer than `size` characters",
    "order": "the chunks' `index` runs 0, 1, 2, ... in list order, and each chunk starts "
    "after the previous one starts",
    "coverage": "every non-whitespace character of the document lies inside some chunk's "
    "[start, end)",
    "metadata": "every chunk carries its document's id, tenant, groups and version",
}
"""The invariant ids `chunk_violations` returns, and what each one demands."""


def _offsets_ok(doc: Document, c: Chunk) -> bool:
    return 0 <= c.start <= c.end <= len(doc.text) and doc.text[c.start : c.end] == c.text


def _covered(doc: Document, chunks: Sequence[Chunk]) -> bool:
    """True when every visible character of `doc` is inside a chunk's recorded span."""
    inside = [False] * len(doc.text)
    for c in chunks:
        for i in range(max(c.start, 0), min(c.end, len(doc.text))):
            inside[i] = True
    return all(inside[i] or ch.isspace() for i, ch in enumerate(doc.text))


def _in_order(chunks: Sequence[Chunk]) -> bool:
    indexes_ok = all(c.index == i for i, c in enumerate(chunks))
    starts_ok = all(a.start < b.start for a, b in pairwise(chunks))
    return indexes_ok and starts_ok


def _same_metadata(doc: Document, c: Chunk) -> bool:
    return (c.doc_id, c.tenant, set(c.groups), c.doc_version) == (
        doc.id,
        doc.tenant,
        set(doc.groups),
        doc.version,
    )


def reference_chunk_violations(doc: Document, chunks: Sequence[Chunk], size: int) -> list[str]:
    """The ids of the invariants in `CHUNK_INVARIANTS` that `chunks` break, in that order.

    >>> doc = Document("a.md", "Ten days. Ask HR.")
    >>> good = [Chunk("a.md", 0, "Ten days.", 0, 9), Chunk("a.md", 1, "Ask HR.", 10, 17)]
    >>> reference_chunk_violations(doc, good, size=10)
    []
    >>> reference_chunk_violations(doc, good[:1], size=5)
    ['size', 'coverage']
    """
    broken = {
        "offsets": not all(_offsets_ok(doc, c) for c in chunks),
        "size": any(len(c.text) > size for c in chunks),
        "order": not _in_order(chunks),
        "coverage": not _covered(doc, chunks),
        "metadata": not all(_same_metadata(doc, c) for c in chunks),
    }
    return [name for name in CHUNK_INVARIANTS if broken[name]]


@dataclass(frozen=True, slots=True)
class ChunkCase:
    """A document, a list of chunks cut from it (maybe damaged), and the size limit."""

    name: str
    doc: Document
    chunks: tuple[Chunk, ...]
    size: int

    @property
    def expected(self) -> list[str]:
        return reference_chunk_violations(self.doc, self.chunks, self.size)


# A policy page where "Ask HR." appears twice: recovering offsets with str.find goes wrong.
POLICY = Document(
    "acme/leave.md",
    "# Leave\n\nTen days a year.\n\nAsk HR.\n\n## Sick leave\n\nCall in. Ask HR.\n",
    tenant="acme",
    groups=("hr",),
    version="2",
)
SIZE = 20  # characters: small, so every case fits on a screen


def _cut(doc: Document, spans: Sequence[tuple[int, int]]) -> tuple[Chunk, ...]:
    """Chunks of `doc` at the given spans, with the right text and metadata."""
    return tuple(
        Chunk(doc.id, i, doc.text[s:e], s, e, "", doc.title, doc.tenant, doc.groups, doc.version)
        for i, (s, e) in enumerate(spans)
    )


def _crafted_cases() -> list[ChunkCase]:
    text = POLICY.text
    good = _cut(POLICY, [(0, 7), (9, 25), (27, 34), (36, 49), (51, 67)])
    # A chunker that split "Call in. Ask HR." in two, then found "Ask HR." with str.find.
    found = list(_cut(POLICY, [(0, 7), (9, 25), (27, 34), (36, 49), (51, 59)]))
    first_ask = text.find("Ask HR.")
    found.append(replace(found[1], index=5, text="Ask HR.", start=first_ask, end=first_ask + 7))
    stripped = POLICY.text.strip()
    return [
        ChunkCase("good chunks", POLICY, good, SIZE),
        ChunkCase("empty document, no chunks", Document("empty.md", ""), (), SIZE),
        ChunkCase("a chunk exactly `size` long", POLICY, good, 16),
        ChunkCase(
            "chunks that keep the blank lines",
            POLICY,
            _cut(POLICY, [(0, 9), (9, 27), (27, 36), (36, 51), (51, 68)]),
            SIZE,
        ),
        ChunkCase(
            "one chunk too long",
            POLICY,
            _cut(POLICY, [(0, 25), (27, 34), (36, 49), (51, 67)]),
            SIZE,
        ),
        ChunkCase(
            "end off by one",
            POLICY,
            good[:2] + (replace(good[2], end=good[2].end + 1),) + good[3:],
            SIZE,
        ),
        ChunkCase(
            "text does not match the offsets",
            POLICY,
            good[:1] + (replace(good[1], text="Twenty days a year."),) + good[2:],
            SIZE,
        ),
        ChunkCase(
            "offsets past the end",
            POLICY,
            good[:4] + (replace(good[4], end=len(text) + 5),),
            SIZE,
        ),
        ChunkCase("offsets found with str.find", POLICY, tuple(found), SIZE),
        ChunkCase(
            "a gap: one chunk missing, indexes renumbered",
            POLICY,
            tuple(replace(c, index=i) for i, c in enumerate(good[:2] + good[3:])),
            SIZE,
        ),
        ChunkCase("the last chunk missing", POLICY, good[:4], SIZE),
        ChunkCase("no chunks at all", POLICY, (), SIZE),
        ChunkCase(
            "indexes start at 1", POLICY, tuple(replace(c, index=c.index + 1) for c in good), SIZE
        ),
        ChunkCase(
            "two chunks swapped", POLICY, (good[0], good[2], good[1], good[3], good[4]), SIZE
        ),
        ChunkCase(
            "indexes in order, starts not",
            POLICY,
            tuple(
                replace(c, index=i)
                for i, c in enumerate((good[0], good[2], good[1], good[3], good[4]))
            ),
            SIZE,
        ),
        ChunkCase(
            "the same chunk twice",
            POLICY,
            good[:2]
            + (replace(good[1], index=2),)
            + tuple(replace(c, index=c.index + 1) for c in good[2:]),
            SIZE,
        ),
        ChunkCase(
            "tenant lost",
            POLICY,
            good[:3] + (replace(good[3], tenant="default"),) + good[4:],
            SIZE,
        ),
        ChunkCase("groups lost", POLICY, tuple(replace(c, groups=()) for c in good), SIZE),
        ChunkCase(
            "groups in another order",
            replace(POLICY, groups=("hr", "managers")),
            tuple(replace(c, groups=("managers", "hr")) for c in good),
            SIZE,
        ),
        ChunkCase(
            "stale document version",
            POLICY,
            tuple(replace(c, doc_version="1") for c in good),
            SIZE,
        ),
        ChunkCase(
            "another document's id",
            POLICY,
            good[:1] + (replace(good[1], doc_id="acme/leave-old.md"),) + good[2:],
            SIZE,
        ),
        ChunkCase(
            "whole document in one chunk",
            POLICY,
            (
                Chunk(
                    POLICY.id,
                    0,
                    stripped,
                    0,
                    len(stripped),
                    tenant="acme",
                    groups=("hr",),
                    doc_version="2",
                ),
            ),
            SIZE,
        ),
        ChunkCase(
            "everything wrong",
            POLICY,
            (Chunk("other.md", 3, "Ten days a year, every year.", 9, 25),),
            SIZE,
        ),
    ]


CHUNK_CASES = _crafted_cases()

_WORDS = ("leave", "days", "Ask", "HR", "sick", "policy", "VPN", "refund", "a", "year")


def _random_document(rng: random.Random, n: int) -> Document:
    """A small markdown document with headings, paragraphs and repeated sentences."""
    lines = []
    for _ in range(rng.randint(0, 9)):
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 6)))
        kind = rng.choice(("heading", "text", "text", "blank", "repeat"))
        if kind == "heading":
            lines.append("#" * rng.randint(1, 3) + " " + words)
        elif kind == "text":
            lines.append(words + ".")
        elif kind == "repeat":
            lines.append("Ask HR.")
        else:
            lines.append("")
    return Document(
        f"doc{n}.md",
        "\n".join(lines),
        tenant=rng.choice(("acme", "globex")),
        groups=rng.choice(((), ("hr",), ("hr", "managers"))),
        version=str(rng.randint(1, 3)),
    )


def _damage(rng: random.Random, doc: Document, chunks: list[Chunk]) -> list[Chunk]:
    """`chunks` with one random kind of damage (or none)."""
    kind = rng.choice(("none", "none", "shift", "drop", "swap", "merge", "meta", "find"))
    if not chunks or kind == "none":
        return chunks
    i = rng.randrange(len(chunks))
    c = chunks[i]
    if kind == "shift":
        return chunks[:i] + [replace(c, start=c.start + rng.choice((-1, 1)))] + chunks[i + 1 :]
    if kind == "drop":
        return chunks[:i] + chunks[i + 1 :]
    if kind == "swap" and len(chunks) > 1:
        j = rng.randrange(len(chunks))
        swapped = list(chunks)
        swapped[i], swapped[j] = swapped[j], swapped[i]
        return swapped
    if kind == "merge" and i + 1 < len(chunks):
        nxt = chunks[i + 1]
        merged = replace(c, text=doc.text[c.start : nxt.end], end=nxt.end)
        rest = [replace(x, index=x.index - 1) for x in chunks[i + 2 :]]
        return chunks[:i] + [merged] + rest
    if kind == "meta":
        field = rng.choice(("tenant", "groups", "doc_version", "doc_id"))
        value: dict[str, Any] = {
            "tenant": "default",
            "groups": ("all",),
            "doc_version": "0",
            "doc_id": "x.md",
        }
        return chunks[:i] + [replace(c, **{field: value[field]})] + chunks[i + 1 :]
    if kind == "find":
        start = doc.text.find(c.text)
        return chunks[:i] + [replace(c, start=start, end=start + len(c.text))] + chunks[i + 1 :]
    return chunks


def random_chunk_cases(n: int = RANDOM_CASES, seed: int = SEED) -> list[ChunkCase]:
    """Seeded random documents, chunked by the engine's Chunker, then maybe damaged."""
    from raglab.ingest.chunking import Chunker

    rng = random.Random(seed)
    cases = []
    for i in range(n):
        doc = _random_document(rng, i)
        size = rng.randint(5, 40)
        chunker = Chunker(
            kind=rng.choice(("chars", "structure")), size=size, overlap=rng.randint(0, size - 1)
        )
        chunks = _damage(rng, doc, chunker.split(doc))
        cases.append(ChunkCase(f"random document #{i}", doc, tuple(chunks), size))
    return cases


SHOWN_CHUNKS = 6  # chunks listed in a failure message; the rest are counted


def _describe_case(case: ChunkCase) -> list[str]:
    doc = case.doc
    lines = [
        f"document: id={doc.id!r} tenant={doc.tenant!r} groups={doc.groups} version={doc.version!r}",
        f"text:     {show(doc.text)}",
        f"size:     {case.size}",
        f"chunks:   {len(case.chunks)}" + (":" if case.chunks else ""),
    ]
    for c in case.chunks[:SHOWN_CHUNKS]:
        meta = ""
        if not _same_metadata(doc, c):
            meta = (
                f" id={c.doc_id!r} tenant={c.tenant!r} groups={c.groups} version={c.doc_version!r}"
            )
        lines.append(f"  index={c.index} start={c.start} end={c.end} text={show(c.text)}{meta}")
    if len(case.chunks) > SHOWN_CHUNKS:
        lines.append(f"  … and {len(case.chunks) - SHOWN_CHUNKS} more")
    return lines


def _violations_problem(expected: list[str], got: Any) -> str | None:
    """Why `got` is not the right list of violated invariant ids (None when it is)."""
    if not isinstance(got, (list, tuple)):
        return f"expected a list of invariant ids, got a {type(got).__name__}"
    unknown = [g for g in got if g not in CHUNK_INVARIANTS]
    if unknown:
        return f"{show(unknown[0])} is not an invariant id (use: {', '.join(CHUNK_INVARIANTS)})"
    repeated = sorted({g for g in got if list(got).count(g) > 1})
    if repeated:
        return f"{show(repeated[0])} is listed more than once"
    missing = [name for name in expected if name not in got]
    extra = [name for name in got if name not in expected]
    if missing:
        return f"{show(missing[0])} is violated: {CHUNK_INVARIANTS[missing[0]]}"
    if extra:
        return f"{show(extra[0])} holds here: {CHUNK_INVARIANTS[extra[0]]}"
    return None


def check_chunk_violations(fn: Callable[..., list[str]]) -> CheckResult:
    """Check a learner's `chunk_violations(doc, chunks, size) -> list[str]`."""
    name = "chunk_violations"
    if not callable(fn):
        return verdict(name, "callable", [f"expected a function, got {show(fn)}"])
    random_cases = random_chunk_cases()
    for case in CHUNK_CASES + random_cases:
        outcome: Outcome = call(fn, (case.doc, list(case.chunks), case.size), {})
        if isinstance(outcome.error, NotImplementedError):
            return verdict(name, NOT_IMPLEMENTED_CASE, [])
        expected = case.expected
        why: str | None
        if outcome.error is not None or outcome.endless:
            why = ""
        else:
            why = _violations_problem(expected, outcome.value)
            if why is None:
                continue
        lines = _describe_case(case) + [
            f"expected: {expected}",
            f"got:      {show_outcome(outcome)}",
        ]
        if why:
            lines.append(f"why:      {why}")
        return verdict(name, case.name, lines)
    summary = f"all {len(CHUNK_CASES)} crafted chunk lists and {len(random_cases)} random ones pass"
    return verdict(name, None, [summary])


# --- exercise 2: which failure does each invariant prevent? -----------------------------------

INVARIANTS = {
    "chunk-step": "The chunker refuses overlap >= size.",
    "chunk-offsets": "Every chunk satisfies doc.text[c.start:c.end] == c.text.",
    "embed-stable": "The embedder hashes with blake2, never Python's hash(): the same text "
    "gets the same vector in every run.",
    "unit-rows": "Every row the embedder returns has length 1.",
    "index-embedder": "The index stores the embedder's name, dim and version, and refuses "
    "a query embedder that differs.",
    "doc-version": "The index stores each document's version and content hash.",
    "access-first": "The store keeps only the chunks the principal may read, before scoring.",
    "ties": "Equal scores are ordered by store order (document id, then chunk index).",
    "cite-given": "Every [n] in an answer must point at a source that was in the prompt.",
    "abstain": "When no sentence supports the question well enough, the generator replies "
    "with the abstention sentence.",
}
"""Invariant id -> the invariant, in pipeline order (the keys of the learner's dict)."""

FAILURES = {
    "A": "A user of tenant globex reads a sentence from acme's salary bands in an answer.",
    "B": "After a typo in the leave policy is fixed, answers keep quoting the old text.",
    "C": "Indexing a folder never finishes.",
    "D": "The engine gives a confident answer to a question the corpus does not cover.",
    "E": "A citation highlights a passage that does not contain the quoted sentence.",
    "F": "After restarting Python, the same question finds different chunks in a saved index.",
    "G": "Two runs of the same evaluation list equally scored chunks in different orders, so "
    "their reports differ.",
    "H": "After switching to a new embedding model, questions against an old index return "
    "near-random chunks.",
    "I": "An answer cites [6] when only 5 sources were retrieved.",
    "J": "Long chunks win searches because they are long, not because they are on topic.",
}
"""Failure id -> what a user would see (the values of the learner's dict)."""

# The right answers are stored as fingerprints of "invariant->failure", so reading this
# file does not give the exercise away (a learner who wants the answer can open the
# notebook's hidden solution cell instead).
_ANSWER_PRINTS = {
    "chunk-step": "224db06c8d22165a",
    "chunk-offsets": "d1b688b6bdcbaaf9",
    "embed-stable": "4eb44e1cfee0898f",
    "unit-rows": "054e96e4add828ec",
    "index-embedder": "77437b9c4b668a3b",
    "doc-version": "170e52cdeaa913e8",
    "access-first": "80ee892e3bf5a5bf",
    "ties": "d1345da82f5b08bf",
    "cite-given": "cef890d44e9bbaeb",
    "abstain": "83426c1ff1cf272a",
}


def _fingerprint(invariant: str, failure: str) -> str:
    return content_hash(f"{invariant}->{failure}")


def _right(invariant: str, failure: str) -> bool:
    return _fingerprint(invariant, failure) == _ANSWER_PRINTS[invariant]


def _answer_of(value: Any) -> Outcome:
    """The learner's answer: the dict itself, or what their function returns."""
    if callable(value):
        return call(value, (), {})
    return Outcome(value=value)


def _answer_problem(answer: Any) -> tuple[str, str] | None:
    """(case, why) for an answer with the wrong shape; None when it is a complete dict."""
    if not isinstance(answer, dict):
        return "shape", f"expected a dict of invariant id -> failure id, got {show(answer)}"
    unknown = [key for key in answer if key not in INVARIANTS]
    if unknown:
        return (
            "keys",
            f"{show(unknown[0])} is not an invariant id (they are: {', '.join(INVARIANTS)})",
        )
    missing = [key for key in INVARIANTS if key not in answer]
    if len(missing) == len(INVARIANTS):
        return "empty", "no answers yet: fill in one failure id for each invariant id"
    if missing:
        return missing[0], f"{len(missing)} invariant(s) have no answer yet, e.g. {missing[0]!r}"
    for key in INVARIANTS:
        value = answer[key]
        if not (isinstance(value, str) and value.strip().upper() in FAILURES):
            return key, (
                f"{key!r} -> {show(value)}: not a failure id (use one letter of "
                f"{', '.join(FAILURES)})"
            )
    return None


def check_failure_prevented(answer: Callable[[], dict[str, str]] | dict[str, str]) -> CheckResult:
    """Check the learner's matching of invariants to failures (a dict, or a function returning it).

    Says how many answers are wrong and names the first wrong invariant, never its failure.
    """
    name = "failure_prevented"
    outcome = _answer_of(answer)
    if isinstance(outcome.error, NotImplementedError):
        return verdict(name, NOT_IMPLEMENTED_CASE, [])
    if outcome.error is not None or outcome.endless:
        return verdict(name, "runs", [f"got: {show_outcome(outcome)}"])
    shape = _answer_problem(outcome.value)
    if shape:
        return verdict(name, shape[0], [shape[1]])
    given = {key: value.strip().upper() for key, value in outcome.value.items()}
    wrong = [key for key in INVARIANTS if not _right(key, given[key])]
    if not wrong:
        return verdict(
            name, None, [f"all {len(INVARIANTS)} invariants matched with the failure they prevent"]
        )
    first = wrong[0]
    return verdict(
        name,
        first,
        [
            f"{len(wrong)} of {len(INVARIANTS)} answers are wrong; look again at {first!r}:",
            f"  {INVARIANTS[first]}",
            "  what would a user see if this invariant did not hold?",
        ],
    )


# Exercise id -> check, for this notebook; raglab.workbook.checks.CHECKS merges every notebook's.
CHECKS: dict[str, Callable[[Any], CheckResult]] = {
    "contract_chunks": check_chunk_violations,
    "contract_failures": check_failure_prevented,
}
