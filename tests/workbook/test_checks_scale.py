"""Notebook 11's check: fails on the stub and on plausible wrong answers, passes on the solution."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

from raglab.workbook import checks
from raglab.workbook.checks import CHECKS, scale
from raglab.workbook.checks.core import NOT_IMPLEMENTED
from raglab.workbook.checks.scale import check_knn_recall, reference_knn_recall

# These tests use the reference (and variations of it) as a learner's function.
pytestmark = pytest.mark.usefixtures("references_reachable")


def test_doctests_pass():
    assert doctest.testmod(scale).failed == 0


def test_the_check_is_registered_under_its_exercise_id():
    assert CHECKS["knn_recall"] is check_knn_recall
    assert checks.check_knn_recall is check_knn_recall
    assert reference_knn_recall in checks.REFERENCES


def test_the_reference_passes(capsys):
    assert check_knn_recall(reference_knn_recall).passed
    assert "random searches pass" in capsys.readouterr().out


def test_the_stub_fails_as_not_implemented(capsys):
    def knn_recall(approximate, exact):
        raise NotImplementedError()

    result = check_knn_recall(knn_recall)
    assert not result.passed
    assert NOT_IMPLEMENTED in capsys.readouterr().out


def by_position(approximate, exact):
    """Counts a hit only where both rows hold the same number at the same place."""
    return float((np.asarray(approximate) == np.asarray(exact)).mean())


def per_returned_row(approximate, exact):
    """Divides by what the search returned (its -1 padding left out), not by k."""
    shares = []
    for a, e in zip(np.asarray(approximate), np.asarray(exact)):
        valid = [x for x in a.tolist() if x != -1]
        shares.append(len(set(valid) & set(e.tolist())) / max(len(valid), 1))
    return float(np.mean(shares))


def repeats_count_twice(approximate, exact):
    """np.isin counts every returned entry, so a row number returned three times counts 3x."""
    a, e = np.asarray(approximate), np.asarray(exact)
    if a.shape != e.shape:
        raise ValueError("shapes differ")
    return float(np.mean([np.isin(row, truth).mean() for row, truth in zip(a, e)]))


def silent_on_shapes(approximate, exact):
    """The right count, but rows of different widths are compared anyway."""
    a, e = np.asarray(approximate), np.asarray(exact)
    return sum(len(set(x.tolist()) & set(y.tolist())) for x, y in zip(a, e)) / e.size


def pooled_as_fraction(approximate, exact):
    """Returns a (hits, total) pair instead of a number."""
    a, e = np.asarray(approximate), np.asarray(exact)
    return sum(len(set(x.tolist()) & set(y.tolist())) for x, y in zip(a, e)), e.size


@pytest.mark.parametrize(
    ("wrong", "case"),
    [
        (by_position, "another order"),
        (per_returned_row, "padded with -1"),
        (repeats_count_twice, "a repeat counts once"),
        (silent_on_shapes, "shapes differ"),
        (pooled_as_fraction, "all found"),
    ],
)
def test_plausible_wrong_answers_fail_on_the_case_that_shows_why(wrong, case):
    result = check_knn_recall(wrong)
    assert not result.passed
    assert result.case == case


def test_the_reference_agrees_with_a_count_by_hand():
    approximate = np.array([[4, 2, 9], [1, -1, -1], [7, 7, 8]])
    exact = np.array([[2, 4, 7], [1, 5, 6], [7, 8, 0]])
    assert reference_knn_recall(approximate, exact) == pytest.approx((2 + 1 + 2) / 9)
    with pytest.raises(ValueError, match=r"same shape.*\(1, 2\) and \(1, 3\)"):
        reference_knn_recall([[1, 2]], [[1, 2, 3]])
