"""Checks for notebook 13's long-context exercise: the budget and the cost of pasting a corpus.

Exercise `long_context_cost`: the learner writes

    long_context_cost(corpus_tokens, question_tokens, answer_tokens, *,
                      questions, budget, input_price, output_price) -> float

the price of `questions` questions, each answered from the whole corpus in its prompt: every
prompt reads the corpus and the question (`corpus_tokens + question_tokens` input tokens)
and writes `answer_tokens` output tokens; prices are per million tokens, input and output
apart. A prompt over `budget` tokens cannot be sent: raise ValueError (a prompt of exactly
`budget` tokens fits). The reference is `raglab.longcontext.cost.long_context_cost`.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any

import numpy as np

from raglab.longcontext.cost import long_context_cost
from raglab.workbook.checks.core import (
    RANDOM_CASES,
    SEED,
    Case,
    CheckResult,
    Outcome,
    run_cases,
)

__all__ = ["check_long_context_cost", "long_context_cost"]


def _case(name: str, corpus: int, question: int, answer: int, **kwargs: Any) -> Case:
    args = (corpus, question, answer)
    try:
        expected: Any = long_context_cost(*args, **kwargs)
    except ValueError:
        expected = ValueError
    return Case(name, args, kwargs, expected=expected)


def _prices(
    questions: int = 1_000,
    budget: int = 200_000,
    input_price: float = 3.0,
    output_price: float = 15.0,
) -> dict[str, Any]:
    return {
        "questions": questions,
        "budget": budget,
        "input_price": input_price,
        "output_price": output_price,
    }


CASES: list[Case] = [
    _case("the sample corpus, 1,000 questions", 9_000, 30, 50, **_prices()),
    _case("input only", 100_000, 0, 0, **_prices(input_price=2.0, output_price=0.0)),
    _case(
        "output dearer than input", 1_000, 0, 1_000, **_prices(input_price=1.0, output_price=10.0)
    ),
    _case("one question", 10_000, 20, 40, **_prices(questions=1)),
    _case("no questions", 10_000, 20, 40, **_prices(questions=0)),
    _case("exactly the budget fits", 199_980, 20, 100, **_prices()),
    _case("one token over the budget", 199_981, 20, 100, **_prices()),  # the question counts too
    _case("a million-token corpus", 1_000_000, 25, 60, **_prices()),
    _case("a bigger budget", 1_000_000, 25, 60, **_prices(budget=2_000_000)),
]


def random_cases(n: int = RANDOM_CASES, seed: int = SEED) -> list[Case]:
    """Random corpora around the budget, random prices and question counts."""
    rng = random.Random(seed)
    cases = []
    for i in range(n):
        budget = rng.choice([8_000, 32_000, 128_000, 200_000, 1_000_000])
        corpus = rng.randint(budget // 2, budget + budget // 10)
        prices = _prices(
            questions=rng.randint(0, 10_000),
            budget=budget,
            input_price=rng.choice([0.1, 0.5, 1.25, 3.0, 5.0]),
            output_price=rng.choice([0.4, 2.0, 10.0, 15.0]),
        )
        cases.append(
            _case(f"random {i}", corpus, rng.randint(5, 60), rng.randint(0, 400), **prices)
        )
    return cases


def _judge(case: Case, outcome: Outcome) -> str | None:
    value = outcome.value
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
        return f"expected a number (a price), got a {type(value).__name__}"
    if math.isclose(float(value), case.expected, rel_tol=1e-9, abs_tol=1e-12):
        return None
    ratio = float(value) / case.expected if case.expected else None
    if ratio is not None and math.isclose(ratio, 1000, rel_tol=1e-6):
        return "prices are per million tokens, not per thousand"
    return ""  # expected and got say it all


def check_long_context_cost(fn: Callable[..., float]) -> CheckResult:
    """Check a learner's `long_context_cost(corpus_tokens, question_tokens, answer_tokens, *, ...)`."""
    randoms = random_cases()
    summary = f"all {len(CASES)} cases and {len(randoms)} random corpora pass"
    return run_cases("long_context_cost", "long_context_cost", fn, CASES + randoms, _judge, summary)


# Exercise id -> check, for this notebook; raglab.workbook.checks.CHECKS merges every notebook's.
CHECKS: dict[str, Callable[[Callable], CheckResult]] = {
    "long_context_cost": check_long_context_cost
}
