"""raglab.longcontext.cost: tokens × price per million, input and output apart, within a budget."""

from __future__ import annotations

import doctest

import pytest

from raglab.longcontext import cost
from raglab.longcontext.cost import Prices, cost_per_question, long_context_cost
from raglab.longcontext.whole_corpus import OverBudget


def test_doctests_pass():
    assert doctest.testmod(cost).failed == 0


def test_input_and_output_are_priced_apart():
    prices = Prices(input_per_million=2.0, output_per_million=10.0)
    assert cost_per_question(1_000_000, 0, prices) == 2.0
    assert cost_per_question(0, 1_000_000, prices) == 10.0
    assert cost_per_question(500_000, 100_000, prices) == pytest.approx(2.0)


def test_a_thousand_questions_over_a_corpus():
    # (100,000 + 20) × 1 + 200 × 4 = 100,820 per question; × 1,000 / 1,000,000
    got = long_context_cost(
        100_000, 20, 200, questions=1_000, budget=200_000, input_price=1.0, output_price=4.0
    )
    assert got == pytest.approx(100.82)


def test_the_budget_is_inclusive_and_refused_one_over():
    kwargs = {"questions": 10, "input_price": 1.0, "output_price": 1.0}
    assert long_context_cost(990, 10, 5, budget=1_000, **kwargs) == pytest.approx(10 * 1005 / 1e6)
    with pytest.raises(OverBudget, match="a prompt of 1,001 tokens .* over the budget of 1,000"):
        long_context_cost(991, 10, 5, budget=1_000, **kwargs)


def test_no_questions_cost_nothing_and_bad_arguments_are_named():
    assert long_context_cost(5, 1, 1, questions=0, budget=10, input_price=3, output_price=3) == 0
    with pytest.raises(ValueError, match="corpus_tokens"):
        long_context_cost(-1, 1, 1, questions=1, budget=10, input_price=1, output_price=1)
    with pytest.raises(ValueError, match="input_per_million"):
        Prices(-1.0, 1.0)
