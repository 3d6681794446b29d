"""What a question costs: tokens times a price per million tokens, input and output apart.

Providers price the tokens a model reads (input: instructions, sources, question) and the
tokens it writes (output: the answer) separately, output usually several times dearer. A
long prompt pays for the whole corpus on every question; RAG pays for a few chunks. Prices
change and differ by provider: the learner sets them, raglab never assumes one.

>>> prices = Prices(input_per_million=3.0, output_per_million=15.0)
>>> round(cost_per_question(10_000, 50, prices), 6)
0.03075
>>> long_context_cost(9_000, 30, 50, questions=1_000, budget=200_000, input_price=3.0, output_price=15.0)
27.84
"""

from __future__ import annotations

from dataclasses import dataclass

from raglab.longcontext.whole_corpus import OverBudget
from raglab.validation import check_int, check_number

PER_MILLION = 1_000_000


@dataclass(frozen=True, slots=True)
class Prices:
    """Dollars (or any currency) per million input tokens and per million output tokens."""

    input_per_million: float
    output_per_million: float

    def __post_init__(self) -> None:
        check_number("input_per_million", self.input_per_million, minimum=0)
        check_number("output_per_million", self.output_per_million, minimum=0)


def cost_per_question(input_tokens: float, output_tokens: float, prices: Prices) -> float:
    """The price of one question that reads `input_tokens` and writes `output_tokens`."""
    return (
        input_tokens * prices.input_per_million + output_tokens * prices.output_per_million
    ) / PER_MILLION


def long_context_cost(
    corpus_tokens: int,
    question_tokens: int,
    answer_tokens: int,
    *,
    questions: int,
    budget: int,
    input_price: float,
    output_price: float,
) -> float:
    """The price of `questions` questions, each answered from the whole corpus in its prompt.

    Each prompt is the corpus and the question (`corpus_tokens + question_tokens`); it must fit
    `budget` (at most `budget` tokens), or `OverBudget` is raised: a corpus that does not
    fit cannot be pasted, whatever it would cost. Each answer writes `answer_tokens`.
    Prices are per million tokens. The reference of notebook 13's exercise (3).
    """
    for name, value in (
        ("corpus_tokens", corpus_tokens),
        ("question_tokens", question_tokens),
        ("answer_tokens", answer_tokens),
        ("questions", questions),
    ):
        check_int(name, value, minimum=0)
    check_int("budget", budget, minimum=1)
    prompt = corpus_tokens + question_tokens
    if prompt > budget:
        raise OverBudget(
            f"a prompt of {prompt:,} tokens (corpus {corpus_tokens:,} + question "
            f"{question_tokens:,}) is over the budget of {budget:,} tokens"
        )
    prices = Prices(input_price, output_price)
    return questions * cost_per_question(prompt, answer_tokens, prices)
