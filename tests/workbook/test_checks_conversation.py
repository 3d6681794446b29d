"""Notebook 12's checks: each fails on the stub and on plausible mistakes, passes on the solution."""

from __future__ import annotations

import numpy as np
import pytest

from raglab.conversation.history import MemoryHistory
from raglab.conversation.turns import Turn
from raglab.records import Principal
from raglab.workbook import checks
from raglab.workbook.broken_history import BROKEN_HISTORIES
from raglab.workbook.checks import CHECKS
from raglab.workbook.checks.conversation import (
    check_conversation_prompt,
    check_make_standalone,
    check_test_history_is_private,
    reference_conversation_prompt,
    reference_make_standalone,
)
from raglab.workbook.checks.core import NOT_IMPLEMENTED

pytestmark = pytest.mark.usefixtures("references_reachable")


def test_the_checks_are_registered():
    assert CHECKS["make_standalone"] is check_make_standalone
    assert CHECKS["conversation_prompt"] is check_conversation_prompt
    assert CHECKS["test_history_is_private"] is check_test_history_is_private
    assert reference_make_standalone in checks.REFERENCES


def stub(*args):
    raise NotImplementedError()


@pytest.mark.parametrize(
    "check", [check_make_standalone, check_conversation_prompt, check_test_history_is_private]
)
def test_the_stub_fails_as_not_implemented(check, capsys):
    assert not check(stub).passed
    assert NOT_IMPLEMENTED in capsys.readouterr().out


# -- make_standalone


def test_the_reference_rewrite_passes_on_the_held_back_follow_ups(capsys):
    assert check_make_standalone(reference_make_standalone).passed
    assert "held-back follow-ups: 7 left as asked" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("mistake", "case"),
    [
        (lambda q, previous: q, "pronoun"),  # never rewrites
        (
            lambda q, previous: f"{q} {' '.join(t.standalone for t in previous)}".strip() + " ",
            "first turn",
        ),
        (  # always carries the last question, even across a topic switch
            lambda q, previous: f"{q} ({previous[-1].standalone})" if previous else q,
            "topic switch",
        ),
    ],
)
def test_plausible_mistakes_fail(mistake, case):
    result = check_make_standalone(mistake)
    assert (result.passed, result.case) == (False, case)


def test_rules_that_pass_by_hand_but_never_carry_enough_fail_on_the_held_back():
    """Right on the five hand-worked turns (they are special-cased), wrong in general."""

    def lucky(question, previous):
        if question == "Can they be carried over?":
            return "Can vacation days be carried over?"
        if question == "How much is the second one?":
            return "How much is the GX-T200-PRO?"
        return question

    result = check_make_standalone(lucky)
    assert (result.passed, result.case) == (False, "held-back follow-ups")


# -- conversation_prompt


def test_the_reference_prompt_passes():
    assert check_conversation_prompt(reference_conversation_prompt).passed


def test_a_shared_budget_where_history_displaces_documents_fails(capsys):
    def shared(question, documents, history, max_chars, history_chars, code):
        from raglab.conversation.allocation import conversation_message, fit_history
        from raglab.generate.prompting import fit_budget

        turns = fit_history(history, history_chars)
        used = sum(len(t.turn.text) for t in turns)
        return conversation_message(
            question, fit_budget(documents, max(1, max_chars - used)), turns, code
        )

    result = check_conversation_prompt(shared)
    assert (result.passed, result.case) == (False, "history outscores the documents")
    assert "whatever the history" in capsys.readouterr().out


def test_an_unlabelled_prompt_fails():
    def unlabelled(question, documents, history, max_chars, history_chars, code):
        return reference_conversation_prompt(
            question, documents, history, max_chars, history_chars, code
        ).replace("Sources (cite these by number):", "")

    assert not check_conversation_prompt(unlabelled).passed


# -- test_history_is_private


def solution(history):
    """The notebook's solution."""
    alice, bob, other_alice = (
        Principal("alice", "acme"),
        Principal("bob", "acme"),
        Principal("alice", "globex"),
    )
    question = np.array([1.0, 0.0], dtype=np.float32)
    for n in (1, 2, 3):
        history.add(alice, Turn("1", n, f"alice {n}", f"alice {n}", "a"), np.array([0.6, 0.8]))
    history.add(bob, Turn("1", 1, "bob", "bob", "b"), question)
    history.add(other_alice, Turn("1", 1, "other", "other", "c"), question)
    assert [h.turn.question for h in history.search(alice, question, 3)] == [
        "alice 1",
        "alice 2",
        "alice 3",
    ]
    assert [h.turn.question for h in history.search(bob, question, 10)] == ["bob"]


def test_the_reference_test_passes_and_catches_every_broken_store(capsys):
    assert check_test_history_is_private(solution).passed
    assert "fails on SharedWithinTenant, KeyedByUserNameOnly" in capsys.readouterr().out


def test_a_test_that_checks_only_strangers_is_caught_by_finds_nothing(capsys):
    def strangers_only(history):
        question = np.array([1.0, 0.0], dtype=np.float32)
        history.add(Principal("alice", "acme"), Turn("1", 1, "a", "a", "a"), question)
        assert history.search(Principal("bob", "acme"), question, 5) == []
        assert history.search(Principal("alice", "globex"), question, 5) == []

    result = check_test_history_is_private(strangers_only)
    assert (result.passed, result.case) == (False, "FiltersAfterRanking")
    assert "it never checks that the owner still finds" in capsys.readouterr().out


def test_a_test_that_fails_on_the_real_store_is_refused():
    def wrong(history):
        assert history.search(Principal("a", "b"), np.array([1.0, 0.0]), 1) == ["x"]

    assert check_test_history_is_private(wrong).case == "the real store"


@pytest.mark.parametrize("store", BROKEN_HISTORIES, ids=lambda s: s.__name__)
def test_each_broken_store_has_one_flaw_the_real_store_has_not(store):
    with pytest.raises(AssertionError):
        solution(store())
    solution(MemoryHistory())
