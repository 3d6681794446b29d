"""Notebook 13's long-context check: fails on the stub and on plausible wrong answers, passes on the solution."""

from __future__ import annotations

import doctest

import pytest

from raglab.longcontext import cost
from raglab.workbook import checks
from raglab.workbook.checks import CHECKS, longcontext
from raglab.workbook.checks.core import NOT_IMPLEMENTED
from raglab.workbook.checks.longcontext import check_long_context_cost, long_context_cost

# These tests use the reference (and variations of it) as a learner's function.
pytestmark = pytest.mark.usefixtures("references_reachable")


def test_doctests_pass():
    assert doctest.testmod(longcontext).failed == 0


def test_the_check_is_registered_under_its_exercise_id():
    assert CHECKS["long_context_cost"] is check_long_context_cost
    assert checks.check_long_context_cost is check_long_context_cost
    assert long_context_cost is cost.long_context_cost  # the library's own, written once
    assert long_context_cost in checks.REFERENCES


def test_the_reference_passes(capsys):
    assert check_long_context_cost(long_context_cost).passed
    assert "random corpora pass" in capsys.readouterr().out


def test_a_solution_written_as_the_notebook_asks_passes():
    def solution(
        corpus_tokens,
        question_tokens,
        answer_tokens,
        *,
        questions,
        budget,
        input_price,
        output_price,
    ):
        prompt = corpus_tokens + question_tokens
        if prompt > budget:
            raise ValueError(f"{prompt} tokens is over the budget of {budget}")
        per_question = prompt * input_price + answer_tokens * output_price
        return questions * per_question / 1_000_000

    assert check_long_context_cost(solution).passed


def test_the_stub_fails_as_not_implemented(capsys):
    def stub(*args, **kwargs):
        raise NotImplementedError()

    result = check_long_context_cost(stub)
    assert not result.passed
    assert NOT_IMPLEMENTED in capsys.readouterr().out


def made(*, per=1_000_000, strict=False, question_in_budget=True, one_price=False, times=True):
    """A learner's function with one mistake switched on."""

    def wrong(
        corpus_tokens,
        question_tokens,
        answer_tokens,
        *,
        questions,
        budget,
        input_price,
        output_price,
    ):
        prompt = corpus_tokens + question_tokens
        checked = prompt if question_in_budget else corpus_tokens
        if checked >= budget if strict else checked > budget:
            raise ValueError("over budget")
        out_price = input_price if one_price else output_price
        each = (prompt * input_price + answer_tokens * out_price) / per
        return questions * each if times else each

    return wrong


@pytest.mark.parametrize(
    ("wrong", "case"),
    [
        (made(per=1_000), "the sample corpus, 1,000 questions"),
        (made(one_price=True), "the sample corpus, 1,000 questions"),
        (made(times=False), "the sample corpus, 1,000 questions"),
        (made(strict=True), "exactly the budget fits"),
        (made(question_in_budget=False), "one token over the budget"),
    ],
)
def test_plausible_wrong_answers_fail_on_the_case_that_shows_why(wrong, case):
    result = check_long_context_cost(wrong)
    assert not result.passed
    assert result.case == case


def test_a_price_per_thousand_is_named(capsys):
    check_long_context_cost(made(per=1_000))
    assert "per million tokens, not per thousand" in capsys.readouterr().out


def test_a_string_is_not_a_price():
    def as_text(*args, **kwargs):
        return f"${long_context_cost(*args, **kwargs):.2f}"

    assert not check_long_context_cost(as_text).passed
