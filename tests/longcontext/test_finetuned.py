"""raglab.longcontext.finetuned: a learned question -> answer model, deterministic, and blind to access."""

from __future__ import annotations

import doctest
import inspect

import numpy as np
import pytest

from raglab.longcontext import finetuned
from raglab.longcontext.finetuned import FineTuned, fine_tune, softmax

PAIRS = [
    ("How many vacation days do I get?", "25 working days."),
    ("What is the salary band for a senior engineer?", "€66,000 to €84,000."),
    ("Which laptop do engineers get?", "Lumen 16 Pro."),
]


def test_doctests_pass():
    assert doctest.testmod(finetuned).failed == 0


def test_it_learns_its_training_pairs_and_is_deterministic():
    model = fine_tune(PAIRS)
    assert [model.answer(q) for q, _ in PAIRS] == [a for _, a in PAIRS]
    again = fine_tune(PAIRS)
    assert np.array_equal(model.weights, again.weights)


def test_it_has_no_way_to_know_who_asks_nor_where_a_fact_came_from():
    # the whole of its interface: a question in, a string out (no principal, no sources)
    assert list(inspect.signature(FineTuned.answer).parameters) == ["self", "question"]
    assert "[1]" not in fine_tune(PAIRS).answer("salary band senior engineer")


def test_softmax_rows_sum_to_one_without_overflow():
    p = softmax(np.array([[1000.0, 1000.0], [0.0, np.log(3.0)]]))
    assert p == pytest.approx(np.array([[0.5, 0.5], [0.25, 0.75]]))


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="at least one"):
        fine_tune([])
    with pytest.raises(ValueError, match="epochs"):
        fine_tune(PAIRS, epochs=0)
