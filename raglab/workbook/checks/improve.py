"""Checks for notebook 09: a bootstrap interval, weighted fusion, a reranking feature.

Three exercises, each compared with the engine's own implementation:

- `bootstrap_interval(values, resamples=2000, seed=0) -> (low, high)`: the percentile
  bootstrap's 95 % interval of the mean, drawn with `numpy.random.default_rng(seed)`
  (reference: `raglab.evaluation.bootstrap.bootstrap_ci`);
- `weighted_rrf(rankings, weights, k, rrf_k=60) -> [(id, score), ...]`: reciprocal rank
  fusion with a weight per list (reference: `raglab.retrieve.fusion.weighted_rrf`);
- `shortest_span(terms, tokens) -> int`: the shortest stretch of tokens holding every
  term that occurs (reference: `raglab.retrieve.rerank.shortest_span`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from raglab.evaluation.bootstrap import bootstrap_ci
from raglab.records import Chunk, Hit
from raglab.retrieve.fusion import weighted_rrf
from raglab.retrieve.rerank import shortest_span
from raglab.workbook.checks.core import (
    RANDOM_CASES,
    SEED,
    Case,
    CheckResult,
    Outcome,
    run_cases,
    show,
)
from raglab.workbook.checks.retrieval import fused_judge

__all__ = [
    "check_bootstrap_interval",
    "check_shortest_span",
    "check_weighted_rrf",
    "reference_bootstrap_interval",
    "reference_weighted_rrf",
]

TOLERANCE = 1e-9


# --- exercise 1: a bootstrap interval ------------------------------------------------------


def reference_bootstrap_interval(
    values: Sequence[float], resamples: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """The engine's interval as a plain pair (low, high).

    >>> reference_bootstrap_interval([1.0, 1.0])
    (1.0, 1.0)
    """
    ci = bootstrap_ci(values, resamples=resamples, seed=seed)
    return (ci.low, ci.high)


def _judge_interval(case: Case, outcome: Outcome) -> str | None:
    try:
        low, high = (float(v) for v in outcome.value)
    except (TypeError, ValueError):
        return f"expected a pair (low, high), got {show(outcome.value)}"
    want_low, want_high = case.expected
    if abs(low - want_low) <= TOLERANCE and abs(high - want_high) <= TOLERANCE:
        return None
    mean = float(np.mean(case.args[0]))
    if low > high:
        return "low must not be above high"
    if want_low < want_high and abs(high - low) <= TOLERANCE:
        return (
            "an interval of width 0: are the draws made *with* replacement? A permutation "
            "of the same values always has the same mean"
        )
    if not low <= mean <= high:
        return f"the interval should hold the mean {mean:.4f}"
    if high - low < want_high - want_low:
        return (
            f"too narrow ({high - low:.4f} wide, expected {want_high - want_low:.4f}): "
            "the 2.5th and 97.5th percentiles of the resampled means"
        )
    return (
        f"expected ({want_low:.4f}, {want_high:.4f}): rng = np.random.default_rng(seed), "
        "rng.integers(0, n, size=(resamples, n)), then the percentiles 2.5 and 97.5"
    )


def _interval_case(name: str, values: list[float], **kwargs: int) -> Case:
    if not values:
        return Case(name, (values,), kwargs, ValueError)
    return Case(name, (values,), kwargs, reference_bootstrap_interval(values, **kwargs))


INTERVAL_CASES = [
    _interval_case("all values equal", [0.5, 0.5, 0.5, 0.5]),
    _interval_case("hits and misses", [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0]),
    _interval_case("one value", [0.25]),
    _interval_case("another seed", [1.0, 0.0, 1.0, 1.0, 0.0, 1.0], seed=7),
    _interval_case("fewer resamples", [0.2, 0.9, 0.4, 0.7, 1.0], resamples=50),
    _interval_case("no values", []),
]


def random_interval_cases(n: int = RANDOM_CASES // 10, seed: int = SEED) -> list[Case]:
    rng = random.Random(seed)
    cases = []
    for i in range(n):
        values = [rng.choice((0.0, 1.0, rng.random())) for _ in range(rng.randint(2, 60))]
        cases.append(_interval_case(f"random scores #{i}", values, seed=rng.randint(0, 99)))
    return cases


def check_bootstrap_interval(fn: Callable[..., Any]) -> CheckResult:
    """Check a learner's `bootstrap_interval(values, resamples=2000, seed=0) -> (low, high)`."""
    cases = INTERVAL_CASES + random_interval_cases()
    summary = f"all {len(INTERVAL_CASES)} cases and {len(cases) - len(INTERVAL_CASES)} random score lists pass"
    return run_cases(
        "bootstrap_interval", "bootstrap_interval", fn, cases, _judge_interval, summary
    )


# --- exercise 2: weighted reciprocal rank fusion ------------------------------------------------


def reference_weighted_rrf(
    rankings: Sequence[Sequence[str]], weights: Sequence[float], k: int, rrf_k: int = 60
) -> list[tuple[str, float]]:
    """The engine's weighted fusion, on plain id lists: [(id, fused score), ...], best first.

    >>> reference_weighted_rrf([["a"], ["b"]], [1, 2], 2)
    [('b', 0.03278688524590164), ('a', 0.01639344262295082)]
    """
    as_hits = [[Hit(Chunk(doc_id, 0, "", 0, 0), 0.0) for doc_id in ranking] for ranking in rankings]
    fused = weighted_rrf(as_hits, weights, k, rrf_k=rrf_k)
    return [(hit.chunk.doc_id, hit.score) for hit in fused]


def _fusion_case(
    name: str, rankings: list[list[str]], weights: list[float], k: int, **kwargs: int
) -> Case:
    if len(weights) != len(rankings):
        return Case(name, (rankings, weights, k), kwargs, ValueError)
    return Case(
        name, (rankings, weights, k), kwargs, reference_weighted_rrf(rankings, weights, k, **kwargs)
    )


FUSION_CASES = [
    _fusion_case("weights of 1 are plain RRF", [["a", "b"], ["b", "c"]], [1, 1], 3),
    _fusion_case("a heavier list wins", [["a", "b"], ["b", "a"]], [1, 3], 2),
    _fusion_case("weight 0 silences a list", [["a", "b"], ["c", "d"]], [1, 0], 4),
    _fusion_case("ranks start at 1", [["a"]], [2], 1),
    _fusion_case("ties by id", [["b", "a"], ["a", "b"]], [1, 1], 2),
    _fusion_case("only the top k", [["a", "b", "c"], ["c", "b", "a"]], [0.2, 1.8], 2),
    _fusion_case("other rrf_k", [["a", "b"], ["b", "a", "c"]], [1, 0.5], 3, rrf_k=1),
    _fusion_case("one weight per list", [["a"], ["b"]], [1], 2),
]


def random_fusion_cases(n: int = RANDOM_CASES // 2, seed: int = SEED) -> list[Case]:
    rng = random.Random(seed)
    cases = []
    for i in range(n):
        ids = [f"d{j}" for j in range(rng.randint(1, 9))]
        lists = rng.randint(1, 3)
        rankings = [rng.sample(ids, rng.randint(0, len(ids))) for _ in range(lists)]
        weights = [rng.choice((0.0, 0.5, 1.0, 1.5, rng.random())) for _ in range(lists)]
        cases.append(_fusion_case(f"random lists #{i}", rankings, weights, rng.randint(1, 10)))
    return cases


def check_weighted_rrf(fn: Callable[..., Any]) -> CheckResult:
    """Check a learner's `weighted_rrf(rankings, weights, k, rrf_k=60) -> [(id, score), ...]`."""
    cases = FUSION_CASES + random_fusion_cases()
    summary = (
        f"all {len(FUSION_CASES)} cases and {len(cases) - len(FUSION_CASES)} random fusions pass"
    )
    return run_cases(
        "weighted_rrf", "weighted_rrf", fn, cases, fused_judge("Σ weight / (rrf_k + rank)"), summary
    )


# --- exercise 3: the proximity feature's span ------------------------------------------------


def _judge_span(case: Case, outcome: Outcome) -> str | None:
    value = outcome.value
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        return f"expected a whole number, got {show(value)}"
    if int(value) == case.expected:
        return None
    terms, tokens = case.args
    present = set(terms) & set(tokens)
    if case.expected and int(value) == 0 and present != set(terms):
        return f"{sorted(present)} occur: count the terms that do, not all of them"
    if int(value) == case.expected - 1:
        return "one short: a stretch from position i to j holds j - i + 1 tokens"
    return ""


def _span_case(name: str, terms: set[str], tokens: list[str]) -> Case:
    return Case(name, (terms, tokens), {}, shortest_span(terms, tokens))


SPAN_CASES = [
    _span_case("side by side", {"annual", "leave"}, ["annual", "leave", "policy"]),
    _span_case("one term", {"vpn"}, ["the", "vpn", "client"]),
    _span_case("no term occurs", {"gym"}, ["annual", "leave"]),
    _span_case("no tokens", {"gym"}, []),
    _span_case("a later, closer pair", {"a", "b"}, ["a", "x", "x", "b", "x", "a", "b"]),
    _span_case("only the terms that occur", {"leave", "days", "gym"}, ["days", "of", "leave"]),
    _span_case("repeats inside the window", {"a", "b"}, ["a", "a", "a", "b"]),
    _span_case("the whole text", {"a", "b", "c"}, ["a", "x", "b", "x", "c"]),
]


def random_span_cases(n: int = RANDOM_CASES, seed: int = SEED) -> list[Case]:
    rng = random.Random(seed)
    words = ["a", "b", "c", "d", "e", "x"]
    cases = []
    for i in range(n):
        tokens = [rng.choice(words) for _ in range(rng.randint(0, 15))]
        terms = set(rng.sample(words[:5], rng.randint(1, 4)))
        cases.append(_span_case(f"random tokens #{i}", terms, tokens))
    return cases


def check_shortest_span(fn: Callable[..., Any]) -> CheckResult:
    """Check a learner's `shortest_span(terms, tokens) -> int`."""
    cases = SPAN_CASES + random_span_cases()
    summary = f"all {len(SPAN_CASES)} cases and {len(cases) - len(SPAN_CASES)} random texts pass"
    return run_cases("shortest_span", "shortest_span", fn, cases, _judge_span, summary)


CHECKS: dict[str, Callable[[Callable], CheckResult]] = {
    "bootstrap_interval": check_bootstrap_interval,
    "weighted_rrf": check_weighted_rrf,
    "shortest_span": check_shortest_span,
}
