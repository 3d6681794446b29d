"""Checks for notebook 09, sections 4 and 5: the number rule of faithfulness, and MMR.

Two exercises, each compared with the engine's own implementation:

- `unsupported_numbers(sentence, cited_text) -> set[str]`: the numbers a sentence states
  that its cited text does not (reference: `raglab.generate.faithfulness.unsupported_numbers`);
- `mmr_select(relevance, similarity, k, lambda_=0.7) -> [index, ...]`: the greedy pick of
  maximal marginal relevance (reference: `raglab.retrieve.diversity.mmr`).

Section 7's exercise (versions) has its own module, `improve_versions`.

Each judge recognises the plausible wrong versions (a substring test, a number split at
its separator, the redundancy term forgotten, λ swapped, ...) by computing them, and says
which one the learner wrote.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from raglab.generate.faithfulness import unsupported_numbers
from raglab.retrieve.diversity import mmr
from raglab.workbook.checks.core import (
    RANDOM_CASES,
    SEED,
    Case,
    CheckResult,
    Outcome,
    run_cases,
    show,
)

__all__ = [
    "check_mmr_select",
    "check_unsupported_numbers",
    "reference_mmr_select",
]


# --- exercise 4: numbers the cited text does not state ----------------------------------------

_DIGITS = re.compile(r"\d+")
_BRACKETS = re.compile(r"\[[^\]]*\]")


def _numbers_as_substrings(sentence: str, cited_text: str) -> set[str]:
    return {n for n in _DIGITS.findall(_BRACKETS.sub(" ", sentence)) if n not in cited_text}


def _numbers_split_at_separators(sentence: str, cited_text: str) -> set[str]:
    sentence = _BRACKETS.sub(" ", sentence)
    return set(_DIGITS.findall(sentence)) - set(_DIGITS.findall(cited_text))


def _markers_counted(sentence: str, cited_text: str) -> set[str]:
    return unsupported_numbers(sentence.replace("[", " ").replace("]", " "), cited_text)


def _numbers_of_the_source(sentence: str, cited_text: str) -> set[str]:
    return unsupported_numbers(cited_text, sentence)


# Plausible wrong versions, and what to tell a learner whose answer matches one of them.
NUMBER_MISTAKES: tuple[tuple[Callable[[str, str], set[str]], str], ...] = (
    (
        _numbers_as_substrings,
        "compare whole numbers, not pieces of text: '25' in '250 days' is True, yet 250 is not 25",
    ),
    (
        _numbers_split_at_separators,
        "a number with a thousands separator or a decimal point is one number: "
        "'10,000' is 10000, '2.5' is not 2 and 5",
    ),
    (
        _markers_counted,
        "a citation marker such as [2] is no number the sentence states: remove the markers first",
    ),
    (
        _numbers_of_the_source,
        "the other way round: the numbers of the *sentence* that the cited text lacks",
    ),
)


def _judge_numbers(case: Case, outcome: Outcome) -> str | None:
    value = outcome.value
    if not isinstance(value, (set, frozenset)):
        return f"expected a set of strings, got {show(value)}"
    if not all(isinstance(v, str) for v in value):
        return "expected the numbers as strings, as written without separators: {'10000', '2.5'}"
    if value == case.expected:
        return None
    if ragged := sorted(v for v in value if v[-1:] in ".," or v[:1] in ".,"):
        return (
            f"{ragged[0]!r} is not a number: a comma or full stop belongs to a number only "
            "between two digits (the full stop ending a sentence does not)"
        )
    for mistake, why in NUMBER_MISTAKES:
        if value == mistake(*case.args):
            return why
    return ""


def _numbers_case(name: str, sentence: str, cited_text: str) -> Case:
    return Case(name, (sentence, cited_text), {}, unsupported_numbers(sentence, cited_text))


NUMBER_CASES = [
    _numbers_case("the number is there", "Staff get 25 days of leave.", "25 days of annual leave"),
    _numbers_case("a changed number", "Staff get 30 days of leave.", "25 days of annual leave"),
    _numbers_case("25 is not 250", "The limit is 25 euros.", "The limit is 250 euros."),
    _numbers_case("no numbers at all", "Ask your manager.", "Managers approve leave."),
    _numbers_case("a marker is no number", "Leave is 25 days [2].", "25 days of leave"),
    _numbers_case("thousands separators", "Requests per day: 10,000 [1].", "10000 requests a day"),
    _numbers_case("a decimal point", "Allow 2.5 days.", "Allow 2 or 5 days."),
    _numbers_case("the full stop after a number", "The limit is 60.", "a limit of 60 per minute"),
    _numbers_case("only the sentence's numbers", "Leave is 25 days.", "25 days, 5 carried over"),
    _numbers_case("two missing", "From 9 to 17, 3 breaks [1][2].", "From 9 to 5."),
]


def random_numbers_cases(n: int = RANDOM_CASES // 4, seed: int = SEED) -> list[Case]:
    rng = random.Random(seed)
    pool = ["5", "25", "250", "10,000", "10000", "2.5", "60", "1,500.75", "2025"]
    words = ["days", "leave", "euros", "per", "night", "limit"]

    def text(markers: bool) -> str:
        parts = [rng.choice(pool + words + words) for _ in range(rng.randint(0, 8))]
        if markers and rng.random() < 0.5:
            parts.append(f"[{rng.randint(1, 5)}]")
        return " ".join(parts) + "."

    return [_numbers_case(f"random sentence #{i}", text(True), text(False)) for i in range(n)]


def check_unsupported_numbers(fn: Callable[..., Any]) -> CheckResult:
    """Check a learner's `unsupported_numbers(sentence, cited_text) -> set[str]`."""
    cases = NUMBER_CASES + random_numbers_cases()
    summary = (
        f"all {len(NUMBER_CASES)} cases and {len(cases) - len(NUMBER_CASES)} random sentences pass"
    )
    return run_cases(
        "unsupported_numbers", "unsupported_numbers", fn, cases, _judge_numbers, summary
    )


# --- exercise 5: maximal marginal relevance ----------------------------------------------------


def reference_mmr_select(
    relevance: Sequence[float], similarity: Any, k: int, lambda_: float = 0.7
) -> list[int]:
    """The engine's MMR, called as the exercise is.

    >>> reference_mmr_select([1.0, 0.95, 0.5], [[1, 0.9, 0.1], [0.9, 1, 0.2], [0.1, 0.2, 1]], 2, 0.5)
    [0, 2]
    """
    return mmr(relevance, np.asarray(similarity, dtype=np.float64), k, lambda_=lambda_)


def _mmr_variant(
    relevance: Sequence[float],
    similarity: Any,
    k: int,
    lambda_: float,
    *,
    penalty: str = "max",
    swapped: bool = False,
    later_ties: bool = False,
) -> list[int]:
    """MMR with one thing changed, to recognise a learner's mistake by its output."""
    sim = np.asarray(similarity, dtype=np.float64)
    weight, other = (1 - lambda_, lambda_) if swapped else (lambda_, 1 - lambda_)
    chosen: list[int] = []
    while len(chosen) < min(k, len(relevance)):
        best, best_gain = -1, -np.inf
        for i, rel in enumerate(relevance):
            if i in chosen:
                continue
            seen = [sim[i, j] for j in chosen]
            if penalty == "none" or not seen:
                cost = 0.0
            elif penalty == "sum":
                cost = sum(seen)
            else:  # "last": only the item chosen last
                cost = seen[-1] if penalty == "last" else max(seen)
            gain = weight * rel - other * cost
            if gain > best_gain or (later_ties and gain == best_gain):
                best, best_gain = i, gain
        chosen.append(best)
    return chosen


MMR_MISTAKES: tuple[tuple[dict[str, Any], str], ...] = (
    (
        {"penalty": "none"},
        "that is the plain ranking by relevance: after the first pick, each candidate pays "
        "(1 − λ) × its highest similarity to the items already chosen",
    ),
    (
        {"swapped": True},
        "λ weighs relevance and 1 − λ the redundancy: λ · relevance − (1 − λ) · similarity",
    ),
    (
        {"penalty": "sum"},
        "the penalty is the *highest* similarity to an item already chosen (max), "
        "not the sum over all of them",
    ),
    (
        {"penalty": "last"},
        "the penalty is the highest similarity to *any* item chosen so far, "
        "not only to the one chosen last",
    ),
    (
        {"later_ties": True},
        "equal scores go to the lower index: keep the first best (`>`), not the last (`>=`)",
    ),
)


def _judge_mmr(case: Case, outcome: Outcome) -> str | None:
    value = outcome.value
    try:
        picks = [int(i) for i in value]
    except (TypeError, ValueError):
        return f"expected a list of indices, got {show(value)}"
    if picks == case.expected:
        return None
    if len(set(picks)) != len(picks):
        twice = next(i for i in picks if picks.count(i) > 1)
        return f"index {twice} is picked twice: once chosen, an item is no longer a candidate"
    relevance, similarity, k = case.args
    lambda_ = case.kwargs.get("lambda_", 0.7)
    for change, why in MMR_MISTAKES:
        if picks == _mmr_variant(relevance, similarity, k, lambda_, **change):
            return why
    if len(picks) != len(case.expected):
        return f"expected {len(case.expected)} picks: k of them, or every item when k is larger"
    return ""


def _mmr_case(
    name: str, relevance: list[float], similarity: list[list[float]], k: int, lambda_: float = 0.7
) -> Case:
    args = (relevance, similarity, k)
    return Case(name, args, {"lambda_": lambda_}, reference_mmr_select(*args, lambda_))


def _identity_plus(n: int, pairs: dict[tuple[int, int], float]) -> list[list[float]]:
    sim = [[1.0 if i == j else 0.0 for j in range(n)] for i in range(n)]
    for (i, j), s in pairs.items():
        sim[i][j] = sim[j][i] = s
    return sim


MMR_CASES = [
    _mmr_case("the first pick is the most relevant", [0.2, 0.9, 0.5], _identity_plus(3, {}), 1),
    _mmr_case(
        "a near copy gives way",
        [1.0, 0.95, 0.5],
        _identity_plus(3, {(0, 1): 0.9, (0, 2): 0.1, (1, 2): 0.2}),
        2,
        0.5,
    ),
    _mmr_case(
        "λ = 1 is the plain ranking", [0.3, 0.9, 0.6], _identity_plus(3, {(1, 2): 1.0}), 3, 1.0
    ),
    _mmr_case(
        "redundant with an earlier pick",
        [1.0, 0.9, 0.85, 0.5],
        _identity_plus(4, {(0, 1): 0.8}),
        3,
        0.5,
    ),
    _mmr_case(
        "like two chosen items, a little each",
        [1.0, 0.9, 0.85, 0.8],
        _identity_plus(4, {(0, 1): 0.0, (0, 2): 0.3, (1, 2): 0.3, (0, 3): 0.5, (1, 3): 0.0}),
        3,
        0.5,
    ),
    _mmr_case("ties go to the lower index", [0.5, 0.5, 0.5], _identity_plus(3, {}), 2, 0.5),
    _mmr_case("k larger than the items", [0.4, 0.8], _identity_plus(2, {(0, 1): 0.5}), 5),
    _mmr_case(
        "λ weighs relevance",
        [1.0, 0.9, 0.2],
        _identity_plus(3, {(0, 1): 0.6, (0, 2): 0.0, (1, 2): 0.5}),
        2,
        0.8,
    ),
]


def random_mmr_cases(n: int = RANDOM_CASES // 2, seed: int = SEED) -> list[Case]:
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(n):
        items = int(rng.integers(1, 9))
        vectors = rng.normal(size=(items, 4))
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        similarity = (vectors @ vectors.T).round(6).tolist()
        relevance = rng.random(items).round(6).tolist()
        lambda_ = float(rng.choice([0.0, 0.3, 0.5, 0.7, 1.0]))
        k = int(rng.integers(1, items + 2))
        cases.append(_mmr_case(f"random items #{i}", relevance, similarity, k, lambda_))
    return cases


def check_mmr_select(fn: Callable[..., Any]) -> CheckResult:
    """Check a learner's `mmr_select(relevance, similarity, k, lambda_=0.7) -> [index, ...]`."""
    cases = MMR_CASES + random_mmr_cases()
    summary = f"all {len(MMR_CASES)} cases and {len(cases) - len(MMR_CASES)} random item sets pass"
    return run_cases("mmr_select", "mmr_select", fn, cases, _judge_mmr, summary)


CHECKS: dict[str, Callable[[Callable], CheckResult]] = {
    "unsupported_numbers": check_unsupported_numbers,
    "mmr_select": check_mmr_select,
}
