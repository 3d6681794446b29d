"""Notebook 13's check: fails on the stub and on plausible wrong answers, passes on the solution."""

from __future__ import annotations

import math
import re

import pytest

from raglab.agent.sufficiency import SHARE, passage_words
from raglab.workbook import checks
from raglab.workbook.checks import CHECKS
from raglab.workbook.checks.agent import check_missing_parts, reference_missing_parts
from raglab.workbook.checks.core import NOT_IMPLEMENTED

# These tests use the reference (and variations of it) as a learner's function.
pytestmark = pytest.mark.usefixtures("references_reachable")


def test_the_check_is_registered_under_its_exercise_id():
    assert CHECKS["missing_parts"] is check_missing_parts
    assert checks.check_missing_parts is check_missing_parts
    assert reference_missing_parts in checks.REFERENCES


def test_the_reference_passes(capsys):
    assert check_missing_parts(reference_missing_parts).passed
    assert "held-back traces" in capsys.readouterr().out


def test_the_stub_fails_as_not_implemented(capsys):
    def missing_parts(needs, passages):
        raise NotImplementedError()

    assert not check_missing_parts(missing_parts).passed
    assert NOT_IMPLEMENTED in capsys.readouterr().out


def learner(*, whole_word=True, one_passage=True, rounding=math.ceil, ordered=True):
    """A learner's function, right by default, with one typical mistake switched on."""

    def named(anchor, passage):
        if whole_word:
            return re.search(rf"(?<![\w-]){re.escape(anchor)}(?![\w-])", passage, re.I)
        return anchor.lower() in passage.lower()

    def meets(need, words, passage):
        if need.anchors and not any(named(a, passage) for a in need.anchors):
            return False
        return len(need.words & words) >= rounding(SHARE * len(need.words))

    def missing_parts(needs, passages):
        if one_passage:
            found = [i for i, n in enumerate(needs)
                     if not any(meets(n, passage_words(p), p) for p in passages)]  # fmt: skip
        else:  # every passage's words pooled: evidence that never meets counts
            pooled = frozenset().union(*map(passage_words, passages)) if passages else frozenset()
            text = " ".join(passages)
            found = [i for i, n in enumerate(needs) if not (passages and meets(n, pooled, text))]
        return found if ordered else sorted(found, reverse=True)

    return missing_parts


def test_a_right_learner_passes():
    assert check_missing_parts(learner()).passed


@pytest.mark.parametrize(
    ("mistake", "case"),
    [
        ({"whole_word": False}, "an anchor inside a longer code"),
        ({"one_passage": False}, "the words spread over two passages"),
        ({"rounding": math.floor}, "one of three words is not"),
        ({"ordered": False}, "nothing retrieved: every part missing"),
    ],
)
def test_each_typical_mistake_fails_on_its_trace(mistake, case, capsys):
    result = check_missing_parts(learner(**mistake))
    assert not result.passed and result.case == case
