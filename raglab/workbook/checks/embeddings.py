"""Checks for notebook 05: cosine similarity and a hashing embedder written from scratch.

Two exercises:

- `cosine(a, b) -> float`, to the contract in ARCHITECTURE.md: ValueError for empty vectors or
  vectors of unequal length (the message names both lengths), 0.0 when either vector is
  all zeros (never NaN), symmetric, within [-1, 1], cosine(v, v) == 1 up to rounding.
- `hash_embed(text, dim=64) -> array`: lowercase `\\w+` words, each hashed with blake2b
  (8 bytes, little-endian) to bucket `h % dim` with sign + if the top bit of h is 0, else
  −; counts add up; the vector is scaled to length 1 (all zeros stays all zeros);
  ValueError if dim < 1. `reference_hash_embed` is that recipe, written once, here.
"""

from __future__ import annotations

import hashlib
import math
import numbers
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from raglab.retrieve.vectors import cosine as reference_cosine
from raglab.workbook.checks.core import (
    NOT_IMPLEMENTED_CASE,
    RANDOM_CASES,
    SEED,
    Case,
    CheckResult,
    Outcome,
    call,
    expects_error,
    failure,
    problem,
    show_call,
    show_outcome,
    verdict,
)

__all__ = ["check_cosine", "check_hash_embed", "reference_hash_embed"]


@dataclass(frozen=True, slots=True)
class Raises:
    """An expected exception whose message must name each of `words`."""

    error: type[Exception]
    words: tuple[str, ...]

    @property
    def __name__(self) -> str:  # how `failure` shows an expected exception
        return f"{self.error.__name__} naming {' and '.join(self.words)}"


def _judge_raises(case: Case, outcome: Outcome) -> str | None:
    expected: Raises = case.expected
    if not isinstance(outcome.error, expected.error):
        return ""
    missing = [w for w in expected.words if w not in str(outcome.error)]
    if missing:
        return f"the message should name both lengths ({', '.join(expected.words)})"
    return None


def run_checks(
    name: str, cases: list[Case], fn: Callable, judge, summary: str, *, explain=None
) -> CheckResult:
    """`core.run_cases`, plus cases that expect an error message naming given words.

    `explain(case, outcome, why)` gives the failure's lines when the standard ones would
    not read well (a vector of 64 numbers as "expected").
    """
    if not callable(fn):
        return verdict(name, "callable", [f"expected a function, got {fn!r:.60}"])
    for case in cases:
        outcome = call(fn, case.args, case.kwargs)
        if isinstance(outcome.error, NotImplementedError):
            return verdict(name, NOT_IMPLEMENTED_CASE, [])
        if isinstance(case.expected, Raises):
            why = _judge_raises(case, outcome)
        else:
            why = problem(case, outcome, judge)
        if why is not None:
            plain_value = not (expects_error(case) or isinstance(case.expected, Raises))
            if explain is not None and plain_value:
                lines = explain(case, outcome, why)
            else:
                lines = failure(name, case, outcome, why)
            if isinstance(case.expected, Raises):
                lines[1] = f"expected: {case.expected.__name__}"
            return verdict(name, case.name, lines)
    return verdict(name, None, [summary])


# --- exercise 1: cosine similarity ----------------------------------------------------------

TOLERANCE = 1e-6


def _as_number(value: Any) -> float | str:
    """The value as a float, or why it is not a usable number."""
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value.item()
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        return f"expected a number, got a {type(value).__name__}"
    value = float(value)
    if math.isnan(value):
        return "NaN: a zero vector has no direction, so the contract says 0.0"
    if not -1.0 <= value <= 1.0:
        return f"{value!r} is outside [-1, 1]: rounding can push a·b / (|a| |b|) past 1, clip it"
    return value


def _cosine_judge(fn: Callable) -> Callable[[Case, Outcome], str | None]:
    """Right value, in range, and the same with the arguments swapped (symmetry)."""

    def judge(case: Case, outcome: Outcome) -> str | None:
        value = _as_number(outcome.value)
        if isinstance(value, str):
            return value
        if abs(value - case.expected) > TOLERANCE:
            return ""
        swapped = call(fn, case.args[::-1], case.kwargs)
        other = _as_number(swapped.value) if swapped.error is None and not swapped.endless else ""
        if isinstance(other, str) or abs(other - value) > TOLERANCE:
            return f"cosine(b, a) gave {show_outcome(swapped)}: it must equal cosine(a, b)"
        return None

    return judge


# Vectors for which a·b / (|a| |b|) in floating point comes out as 1.0000000000000002.
OVERSHOOT = [-1.86, 0.65]

COSINE_CASES = [
    Case("same direction", ([1.0, 0.0], [2.0, 0.0]), {}, 1.0),
    Case("45 degrees", ([1.0, 0.0], [1.0, 1.0]), {}, 1 / math.sqrt(2)),
    Case("orthogonal", ([1.0, 0.0], [0.0, 3.0]), {}, 0.0),
    Case("opposite", ([1.0, 2.0, 3.0], [-1.0, -2.0, -3.0]), {}, -1.0),
    Case("integers", ([1, 2, 3], [4, 5, 6]), {}, reference_cosine([1, 2, 3], [4, 5, 6])),
    Case("numpy arrays", (np.array([3.0, 4.0]), np.array([4.0, 3.0])), {}, 0.96),
    Case("cosine(v, v) is 1", ([0.3, -1.7, 2.2, 0.01],) * 2, {}, 1.0),
    Case("kept within [-1, 1]", (OVERSHOOT, [7 * x for x in OVERSHOOT]), {}, 1.0),
    Case("cosine(v, v) within [-1, 1]", (OVERSHOOT, OVERSHOOT), {}, 1.0),
    Case("zero vector", ([0.0, 0.0, 0.0], [1.0, 2.0, 3.0]), {}, 0.0),
    Case("zero vector second", ([1.0, 2.0], [0.0, 0.0]), {}, 0.0),
    Case("both zero", ([0.0, 0.0], [0.0, 0.0]), {}, 0.0),
    Case("unequal lengths", ([1.0, 2.0, 3.0], [1.0, 2.0]), {}, Raises(ValueError, ("3", "2"))),
    Case(
        "unequal lengths, other way",
        ([1.0], [1.0, 2.0, 3.0, 4.0]),
        {},
        Raises(ValueError, ("1", "4")),
    ),
    Case("empty vectors", ([], []), {}, ValueError),
]


def random_cosine_cases(n: int = RANDOM_CASES, seed: int = SEED) -> list[Case]:
    """Seeded random vector pairs (some with a zero vector), expected from `raglab.cosine`."""
    rng = random.Random(seed)
    cases = []
    for i in range(n):
        dim = rng.randint(1, 12)
        a = [rng.choice((0.0, rng.uniform(-3, 3))) for _ in range(dim)]
        b = [rng.uniform(-3, 3) for _ in range(dim)]
        if i % 10 == 0:
            b = [0.0] * dim
        cases.append(Case(f"random vectors #{i}", (a, b), {}, reference_cosine(a, b)))
    return cases


def check_cosine(fn: Callable[[Any, Any], float]) -> CheckResult:
    """Check a learner's `cosine(a, b) -> float`."""
    random_cases = random_cosine_cases()
    summary = f"all {len(COSINE_CASES)} cases and {len(random_cases)} random pairs pass"
    return run_checks("cosine", COSINE_CASES + random_cases, fn, _cosine_judge(fn), summary)


# --- exercise 2: a hashing embedder -----------------------------------------------------------

_WORD = re.compile(r"\w+")


def reference_hash_embed(text: str, dim: int = 64) -> np.ndarray:
    """The exercise's recipe: signed word buckets from blake2b, scaled to unit length.

    >>> v = reference_hash_embed("Refund, refund policy!", dim=8)
    >>> round(float(np.linalg.norm(v)), 6), v.shape
    (1.0, (8,))
    """
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
        raise ValueError(f"dim must be an integer >= 1 (got dim={dim!r})")
    vector = np.zeros(dim, dtype=np.float64)
    for word in _WORD.findall(text.lower()):
        h = int.from_bytes(hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest(), "little")
        vector[h % dim] += 1.0 if h >> 63 == 0 else -1.0
    norm = np.linalg.norm(vector)
    return (vector / norm if norm > 0 else vector).astype(np.float32)


def _rounded(values: np.ndarray) -> list[float]:
    return [round(float(v), 4) for v in values]


def _judge_embed(case: Case, outcome: Outcome) -> str | None:
    value = outcome.value
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        return f"expected an array of numbers, got a {type(value).__name__}"
    if array.shape != case.expected.shape:
        return f"expected shape {case.expected.shape} (one number per bucket), got {array.shape}"
    if not np.isfinite(array).all():
        return "the vector has NaN or infinity: an all-zero vector must stay all zeros"
    norm = float(np.linalg.norm(array))
    expected_norm = float(np.linalg.norm(case.expected))
    if abs(norm - expected_norm) > 1e-5:
        return f"its length is {norm:.4f}, expected {expected_norm:.0f}"
    if not np.allclose(array, case.expected, atol=1e-5):
        wrong = np.flatnonzero(~np.isclose(array, case.expected, atol=1e-5))
        return (
            f"buckets {wrong[:6].tolist()} differ: expected "
            f"{_rounded(case.expected[wrong[:3]])}, got {_rounded(array[wrong[:3]])}"
        )
    return None


def _explain_embed(case: Case, outcome: Outcome, why: str) -> list[str]:
    """Input and why; the vectors themselves only when short enough to read."""
    lines = [f"input:    {show_call('hash_embed', case.args, case.kwargs)}"]
    if case.expected.size <= 8:
        lines.append(f"expected: {np.round(case.expected, 4).tolist()}")
        lines.append(f"got:      {show_outcome(outcome)}")
    elif outcome.error is not None or outcome.endless:
        lines.append(f"got:      {show_outcome(outcome)}")
    if why:
        lines.append(f"why:      {why}")
    return lines


def _embed_case(name: str, text: str, dim: int | None = None) -> Case:
    kwargs = {} if dim is None else {"dim": dim}
    return Case(name, (text,), kwargs, reference_hash_embed(text, **kwargs))


HASH_CASES = [
    _embed_case("one word", "refund", 8),
    _embed_case("default dim", "refund policy"),
    _embed_case("lowercase first", "Refund POLICY", 16),
    _embed_case("a repeated word counts twice", "leave leave policy", 16),
    _embed_case("words, not punctuation", "refund: policy, (refund)!", 16),
    _embed_case("signs", "how do i reset my password", 4),
    _embed_case("digits and accents are words", "café E-204 déjà 2024", 32),
    _embed_case("empty text", "", 8),
    _embed_case("no words", "?! ...", 8),
    Case("dim 0", ("refund",), {"dim": 0}, ValueError),
    Case("negative dim", ("refund",), {"dim": -3}, ValueError),
]

_VOCABULARY = ("leave", "Leave", "days", "refund", "VPN", "e-204", "policy", "ça", "2024", "a")


def random_embed_cases(n: int = RANDOM_CASES, seed: int = SEED) -> list[Case]:
    rng = random.Random(seed)
    cases = []
    for i in range(n):
        words = [rng.choice(_VOCABULARY) for _ in range(rng.randint(0, 8))]
        text = rng.choice((" ", ", ", "\n")).join(words)
        cases.append(_embed_case(f"random text #{i}", text, rng.choice((1, 2, 8, 64, 384))))
    return cases


def check_hash_embed(fn: Callable[..., np.ndarray]) -> CheckResult:
    """Check a learner's `hash_embed(text, dim=64) -> array of dim numbers`."""
    random_cases = random_embed_cases()
    summary = f"all {len(HASH_CASES)} cases and {len(random_cases)} random texts pass"
    return run_checks(
        "hash_embed", HASH_CASES + random_cases, fn, _judge_embed, summary, explain=_explain_embed
    )


# Exercise id -> check, for this notebook; raglab.workbook.checks.CHECKS merges every notebook's.
CHECKS: dict[str, Callable[[Callable], CheckResult]] = {
    "cosine": check_cosine,
    "hash_embed": check_hash_embed,
}
