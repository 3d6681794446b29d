"""Checks for notebook 06: exact top-k, BM25, reciprocal rank fusion, the access filter.

Four exercises, each compared with the engine's own implementation:

- `top_k(query, vectors, k) -> (indices, scores)`: exact cosine top-k, best first, equal
  scores in the order of the lower index, k > n gives all, k <= 0 a ValueError
  (reference: `raglab.retrieve.vectors.top_k`);
- `bm25_scores(query, texts, k1=1.5, b=0.75) -> array`: one Lucene BM25 score per text
  (reference: `raglab.BM25(k1, b).fit(texts).scores(query)`);
- `rrf(rankings, k, rrf_k=60) -> [(id, score), ...]`: reciprocal rank fusion of ranked id
  lists, ties by id (reference: `raglab.reciprocal_rank_fusion`);
- `filtered_top_k(query, vectors, chunks, principal, k) -> [row, ...]`: the best k rows
  among the chunks the principal may read — filtered *before* scoring.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

# Public names from `raglab` itself: they stay put when engine modules are renamed.
from raglab import BM25, Chunk, Hit, Principal, eligible_rows, reciprocal_rank_fusion
from raglab import top_k as reference_top_k
from raglab.workbook.checks.core import (
    RANDOM_CASES,
    SEED,
    Case,
    CheckResult,
    Outcome,
    run_cases,
    show,
    show_outcome,
)

__all__ = [
    "check_bm25_scores",
    "check_filtered_top_k",
    "check_rrf",
    "check_top_k",
    "reference_filtered_top_k",
    "reference_rrf",
]

SCORE_TOLERANCE = 1e-5


def _rows_of(value: Any) -> list[int] | str:
    """`value` as a list of Python ints, or why it is not a list of row numbers."""
    try:
        rows = [int(r) for r in np.asarray(value).ravel()]
    except (TypeError, ValueError):
        return f"expected row numbers, got {show(value)}"
    if any(float(r) != float(v) for r, v in zip(rows, np.asarray(value).ravel())):
        return f"row numbers must be whole numbers, got {show(value)}"
    return rows


def _brief(value: Any) -> str:
    """A short repr of a vector or matrix: its shape, or its values when small."""
    if isinstance(value, np.ndarray) and value.size > 12:
        return f"<array {value.shape}>"
    if isinstance(value, np.ndarray):
        return show(np.round(value, 4).tolist())
    return show(value)


def _explain(name: str) -> Callable[[Case, Outcome, str], list[str]]:
    def explain(case: Case, outcome: Outcome, why: str) -> list[str]:
        keywords = [f"{k}={v!r}" for k, v in case.kwargs.items()]
        args = ", ".join([_brief(a) for a in case.args] + keywords)
        expected = case.expected
        shown = expected.__name__ if isinstance(expected, type) else _brief(expected)
        raised = outcome.error is not None or outcome.endless
        got = show_outcome(outcome) if raised else _brief(outcome.value)
        lines = [f"input:    {name}({args})", f"expected: {shown}", f"got:      {got}"]
        if why:
            lines.append(f"why:      {why}")
        return lines

    return explain


# --- exercise 1: exact top-k --------------------------------------------------------------


def _judge_top_k(case: Case, outcome: Outcome) -> str | None:
    try:
        indices, scores = outcome.value
    except (TypeError, ValueError):
        return "expected a pair (indices, scores)"
    rows = _rows_of(indices)
    if isinstance(rows, str):
        return rows
    want_rows, want_scores = case.expected
    try:
        got = np.asarray(scores, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        return "the scores must be numbers"
    right_scores = got.shape == (len(want_scores),) and np.allclose(
        got, want_scores, atol=SCORE_TOLERANCE
    )
    if rows != want_rows:
        if right_scores:
            return "equal scores must come in the order of the lower index"
        if sorted(rows) == sorted(want_rows):
            return "the right rows in the wrong order: best first"
        return f"expected rows {want_rows}, got {rows}"
    if not right_scores:
        return f"the scores should be the cosines {[round(s, 4) for s in want_scores]}"
    return None


def _top_k_case(
    name: str, query: Sequence[float], vectors: Sequence[Sequence[float]], k: int
) -> Case:
    q = np.array(query, dtype=np.float64)
    m = np.array(vectors, dtype=np.float64)
    if k <= 0:
        return Case(name, (q, m, k), {}, ValueError)
    rows, scores = reference_top_k(q, m, k)
    return Case(name, (q, m, k), {}, (rows.tolist(), scores.astype(np.float64).tolist()))


TOP_K_CASES = [
    _top_k_case("best first", [1, 0], [[0, 1], [1, 0], [1, 1]], 2),
    _top_k_case("cosine, not dot product", [1, 0], [[10, 10], [1, 0.1], [0, 5]], 2),
    _top_k_case("ties by lower index", [1, 0], [[0, 1], [2, 0], [0, 1], [1, 0]], 3),
    _top_k_case("a tie at the cut", [0, 1], [[1, 0], [0, 3], [1, 0], [1, 0]], 2),
    _top_k_case("k = 1", [1, 2, 3], [[3, 2, 1], [1, 2, 3], [1, 2, 2]], 1),
    _top_k_case("k larger than n", [1, 0], [[0, 1], [1, 0]], 5),
    _top_k_case("zero row", [1, 1], [[0, 0], [-1, -1], [1, 0]], 3),
    _top_k_case("negative scores", [1, 0], [[-1, 0], [-1, 1], [-1, -2]], 3),
    _top_k_case("k = 0", [1, 0], [[0, 1]], 0),
    _top_k_case("k negative", [1, 0], [[0, 1]], -2),
]


def random_top_k_cases(n: int = RANDOM_CASES, seed: int = SEED) -> list[Case]:
    """Seeded random rows drawn from a few distinct directions: exact duplicates make ties."""
    rng = random.Random(seed)
    cases = []
    for i in range(n):
        dim = rng.randint(2, 6)
        pool = [[rng.uniform(-1, 1) for _ in range(dim)] for _ in range(rng.randint(1, 5))]
        rows = [rng.choice(pool) for _ in range(rng.randint(1, 12))]
        query = [rng.uniform(-1, 1) for _ in range(dim)]
        cases.append(_top_k_case(f"random vectors #{i}", query, rows, rng.randint(1, 14)))
    return cases


def check_top_k(fn: Callable[..., Any]) -> CheckResult:
    """Check a learner's `top_k(query, vectors, k) -> (indices, scores)`."""
    random_cases = random_top_k_cases()
    summary = f"all {len(TOP_K_CASES)} cases and {len(random_cases)} random searches pass"
    return run_cases(
        "top_k",
        "top_k",
        fn,
        TOP_K_CASES + random_cases,
        _judge_top_k,
        summary,
        explain=_explain("top_k"),
    )


# --- exercise 2: BM25 -------------------------------------------------------------------------


def _judge_bm25(case: Case, outcome: Outcome) -> str | None:
    try:
        got = np.asarray(outcome.value, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        return f"expected one number per text, got {show(outcome.value)}"
    want = np.asarray(case.expected)
    if got.shape != want.shape:
        return f"expected {want.size} scores (one per text), got {got.size}"
    if not np.allclose(got, want, rtol=1e-4, atol=1e-6):
        wrong = int(np.flatnonzero(~np.isclose(got, want, rtol=1e-4, atol=1e-6))[0])
        return f"text {wrong}: expected {want[wrong]:.4f}, got {got[wrong]:.4f}"
    return None


def _bm25_case(name: str, query: str, texts: list[str], **params: float) -> Case:
    expected = BM25(**params).fit(texts).scores(query).astype(np.float64).round(6)
    return Case(name, (query, texts), params, expected)


CORPUS = ["the cat sat on the mat", "the dog sat", "a cat and a cat and a cat", "dogs and cats"]

BM25_CASES = [
    _bm25_case("one text, one word", "cat", ["the cat sat"]),
    _bm25_case("rare words weigh more", "cat dog", CORPUS),
    _bm25_case("unknown word", "zebra", CORPUS),
    _bm25_case("empty query", "", CORPUS),
    _bm25_case("repeated query word counts twice", "cat cat", CORPUS),
    _bm25_case("lowercase words, no punctuation", "The CAT, sat!", CORPUS),
    _bm25_case("a word in every text", "the", ["the a", "the b", "the c"]),
    _bm25_case("long texts are penalised", "cat", ["cat", "cat " + "word " * 20]),
    _bm25_case("b = 0: no length penalty", "cat", ["cat", "cat " + "word " * 20], b=0.0),
    _bm25_case("k1 = 0: only whether the word occurs", "cat", CORPUS, k1=0.0),
    _bm25_case("other k1 and b", "cat sat", CORPUS, k1=0.9, b=0.4),
]

_WORDS = ("leave", "days", "vpn", "E-204", "refund", "the", "a", "carry", "over", "Lisbon")


def random_bm25_cases(n: int = RANDOM_CASES // 2, seed: int = SEED) -> list[Case]:
    rng = random.Random(seed)
    cases = []
    for i in range(n):
        texts = [
            " ".join(rng.choice(_WORDS) for _ in range(rng.randint(0, 12)))
            for _ in range(rng.randint(1, 6))
        ]
        query = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 4)))
        params = {"k1": rng.choice((0.5, 1.2, 1.5, 2.0)), "b": rng.choice((0.0, 0.5, 0.75, 1.0))}
        cases.append(_bm25_case(f"random texts #{i}", query, texts, **params))
    return cases


def check_bm25_scores(fn: Callable[..., Any]) -> CheckResult:
    """Check a learner's `bm25_scores(query, texts, k1=1.5, b=0.75) -> one score per text`."""
    random_cases = random_bm25_cases()
    summary = f"all {len(BM25_CASES)} cases and {len(random_cases)} random corpora pass"
    return run_cases(
        "bm25_scores",
        "bm25_scores",
        fn,
        BM25_CASES + random_cases,
        _judge_bm25,
        summary,
        explain=_explain("bm25_scores"),
    )


# --- exercise 3: reciprocal rank fusion --------------------------------------------------------


def reference_rrf(
    rankings: Sequence[Sequence[str]], k: int, rrf_k: int = 60
) -> list[tuple[str, float]]:
    """The engine's fusion, on plain id lists: [(id, fused score), ...], best first.

    >>> reference_rrf([["a", "b"], ["b", "c"]], 2)
    [('b', 0.03252247488101534), ('a', 0.01639344262295082)]
    """
    as_hits = [[Hit(Chunk(doc_id, 0, "", 0, 0), 0.0) for doc_id in ranking] for ranking in rankings]
    fused = reciprocal_rank_fusion(as_hits, k, rrf_k=rrf_k)
    return [(hit.chunk.doc_id, hit.score) for hit in fused]


def fused_judge(formula: str) -> Callable[[Case, Outcome], str | None]:
    """A judge of fused rankings, [(id, score), ...] best first; `formula` names the score."""

    def judge(case: Case, outcome: Outcome) -> str | None:
        try:
            got = [(str(item[0]), float(item[1])) for item in outcome.value]
        except (TypeError, ValueError, IndexError):
            return "expected a list of (id, score) pairs"
        want = case.expected
        if [i for i, _ in got] != [i for i, _ in want]:
            if sorted(i for i, _ in got) == sorted(i for i, _ in want):
                return "the right ids in the wrong order: higher fused score first, ties by id"
            return f"expected the ids {[i for i, _ in want]}, got {[i for i, _ in got]}"
        for (i, score), (_, right) in zip(got, want):
            if abs(score - right) > 1e-9:
                return f"{i!r} should score {right:.6f} ({formula}, ranks from 1), got {score:.6f}"
        return None

    return judge


def _rrf_case(name: str, rankings: list[list[str]], k: int, **kwargs: int) -> Case:
    return Case(name, (rankings, k), kwargs, reference_rrf(rankings, k, **kwargs))


RRF_CASES = [
    _rrf_case("one list keeps its order", [["a", "b", "c"]], 3),
    _rrf_case("ranks start at 1", [["a"]], 1),
    _rrf_case("agreement wins", [["a", "b", "c"], ["c", "b", "a"], ["b", "d"]], 2),
    _rrf_case("in both lists beats first in one", [["x", "y"], ["z", "y"]], 3),
    _rrf_case("ties by id", [["b", "a"], ["a", "b"]], 2),
    _rrf_case("only the top k", [["a", "b", "c", "d"]], 2),
    _rrf_case("k larger than the ids", [["a"], ["b"]], 5),
    _rrf_case("other rrf_k", [["a", "b"], ["b", "a", "c"]], 3, rrf_k=1),
    _rrf_case("no lists", [], 3),
]


def random_rrf_cases(n: int = RANDOM_CASES // 2, seed: int = SEED) -> list[Case]:
    rng = random.Random(seed)
    cases = []
    for i in range(n):
        ids = [f"d{j}" for j in range(rng.randint(1, 9))]
        rankings = [rng.sample(ids, rng.randint(0, len(ids))) for _ in range(rng.randint(1, 3))]
        cases.append(_rrf_case(f"random lists #{i}", rankings, rng.randint(1, 10)))
    return cases


def check_rrf(fn: Callable[..., Any]) -> CheckResult:
    """Check a learner's `rrf(rankings, k, rrf_k=60) -> [(id, score), ...]`."""
    random_cases = random_rrf_cases()
    summary = f"all {len(RRF_CASES)} cases and {len(random_cases)} random fusions pass"
    return run_cases(
        "rrf", "rrf", fn, RRF_CASES + random_cases, fused_judge("Σ 1 / (rrf_k + rank)"), summary
    )


# --- exercise 4: the access filter before scoring ----------------------------------------------


def reference_filtered_top_k(
    query: Any, vectors: Any, chunks: Sequence[Chunk], principal: Principal, k: int
) -> list[int]:
    """Rows of the k best chunks `principal` may read: filter first, then score."""
    rows = eligible_rows(principal, chunks)
    if rows.size == 0:
        return []
    picked, _ = reference_top_k(query, np.asarray(vectors)[rows], k)
    return rows[picked].tolist()


def _chunk(i: int, tenant: str, groups: tuple[str, ...] = ()) -> Chunk:
    return Chunk(f"{tenant}/doc{i}.md", 0, f"text {i}", 0, 6, tenant=tenant, groups=groups)


# Five acme chunks the question matches best, then two globex ones, one for acme's hr.
ACCESS_CHUNKS = [
    _chunk(0, "globex"),
    _chunk(1, "globex"),
    _chunk(2, "globex"),
    _chunk(3, "acme"),
    _chunk(4, "acme", ("hr",)),
    _chunk(5, "acme"),
    _chunk(6, "globex", ("hr",)),
    _chunk(7, "acme"),
]
ACCESS_VECTORS = np.array(
    [[1, 0], [0.99, 0.1], [0.98, 0.2], [0.9, 0.4], [0.95, 0.3], [0.5, 0.8], [1, 0.05], [0, 1]]
)
QUERY = np.array([1.0, 0.0])


def _access_case(
    name: str, principal: Principal, k: int, chunks=ACCESS_CHUNKS, vectors=ACCESS_VECTORS
) -> Case:
    return Case(
        name,
        (QUERY, vectors, chunks, principal, k),
        {},
        reference_filtered_top_k(QUERY, vectors, chunks, principal, k),
    )


ACCESS_CASES = [
    _access_case("another tenant's chunks score higher", Principal("ann", "acme"), 2),
    _access_case("k readable chunks, not fewer", Principal("ann", "acme"), 3),
    _access_case("a group opens a chunk", Principal("hana", "acme", {"hr"}), 2),
    _access_case("groups count only in one's tenant", Principal("gus", "globex", {"hr"}), 4),
    _access_case("fewer readable chunks than k", Principal("ann", "acme"), 10),
    _access_case("nothing readable", Principal("zed", "initech"), 3),
]


def _judge_access(case: Case, outcome: Outcome) -> str | None:
    rows = _rows_of(outcome.value)
    if isinstance(rows, str):
        return rows
    principal: Principal = case.args[3]
    chunks: Sequence[Chunk] = case.args[2]
    leaked = [r for r in rows if 0 <= r < len(chunks) and not _may_read(principal, chunks[r])]
    if leaked:
        return f"rows {leaked} belong to chunks {principal.user!r} may not read: a leak"
    if rows != case.expected:
        if len(rows) < len(case.expected):
            return (
                f"only {len(rows)} rows: filtering after top-k leaves holes where the "
                "hidden chunks were — filter first, then take the top k"
            )
        return f"expected rows {case.expected}, got {rows}"
    return None


def _may_read(principal: Principal, chunk: Chunk) -> bool:
    return eligible_rows(principal, [chunk]).size == 1


def check_filtered_top_k(fn: Callable[..., Any]) -> CheckResult:
    """Check a learner's `filtered_top_k(query, vectors, chunks, principal, k) -> [row, ...]`."""
    summary = f"all {len(ACCESS_CASES)} cases pass: no leak, and k readable chunks when there are k"
    return run_cases(
        "filtered_top_k",
        "filtered_top_k",
        fn,
        ACCESS_CASES,
        _judge_access,
        summary,
        explain=_explain_access,
    )


def _explain_access(case: Case, outcome: Outcome, why: str) -> list[str]:
    principal: Principal = case.args[3]
    where = "over the 8 chunks of checks.retrieval.ACCESS_CHUNKS"
    lines = [
        f"input:    {principal}, k={case.args[4]}, {where}",
        f"expected: {case.expected}",
        f"got:      {show_outcome(outcome)}",
    ]
    if why:
        lines.append(f"why:      {why}")
    return lines


# Exercise id -> check, for this notebook; raglab.workbook.checks.CHECKS merges every notebook's.
CHECKS: dict[str, Callable[[Callable], CheckResult]] = {
    "top_k": check_top_k,
    "bm25_scores": check_bm25_scores,
    "rrf": check_rrf,
    "filtered_top_k": check_filtered_top_k,
}
