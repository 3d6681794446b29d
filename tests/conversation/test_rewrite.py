"""The offline standalone rewrite: hand-worked follow-ups, and what it must leave alone."""

from __future__ import annotations

import pytest

from raglab.conversation.rewrite import (
    antecedent,
    entities,
    listed_items,
    reason_to_rewrite,
    standalone,
)
from raglab.conversation.turns import Turn


def turn(n: int, question: str, answer: str, standalone: str | None = None) -> Turn:
    return Turn("c", n, question, standalone or question, answer)


LEAVE = turn(1, "How many vacation days do I get?", "You get 25 days of annual leave [1].")
SKUS = turn(
    1,
    "Which thermostats do you sell?",
    "We sell the GX-T100 Thermo Lite and the GX-T200-PRO Thermo Pro [1].",
)
HOTEL = turn(2, "What is the hotel limit per night?", "The hotel limit is 180 EUR [1].")


@pytest.mark.parametrize(
    "question",
    [
        "How do I reset my password?",  # a topic switch names its own topic
        "Is it OK to accept a bottle of wine from a supplier?",  # a pronoun, but a full topic
        "What time should I show up on the first day?",  # "the first day" is no ordinal
        "Is there an allowance for courses and conferences?",  # "there" points nowhere
    ],
)
def test_a_question_that_stands_alone_is_searched_as_asked(question):
    rewrite = standalone(question, [LEAVE])
    assert (rewrite.standalone, rewrite.reason, rewrite.rewritten) == (
        question,
        "self-contained",
        False,
    )


def test_the_first_turn_is_never_rewritten():
    assert standalone("Can they be carried over?", []).reason == "first turn"


@pytest.mark.parametrize(
    ("question", "reason"),
    [
        ("Can they be carried over to next year?", "pronoun"),
        ("Can they be carried over?", "short"),
        ("And for part-time staff?", "ellipsis"),
        ("What about Paris?", "ellipsis"),
        ("Why?", "short"),
        ("What does the second one mean?", "ordinal"),
        ("And the last?", "ordinal"),
    ],
)
def test_a_follow_up_is_recognised_by_its_shape(question, reason):
    assert reason_to_rewrite(question) == reason


def test_a_pronoun_follow_up_carries_the_previous_topic():
    rewrite = standalone("Can they be carried over?", [LEAVE])
    assert rewrite.reason == "short" and rewrite.antecedent == 1
    assert rewrite.carried[:2] == ("vacation", "days")
    assert rewrite.standalone == "Can they be carried over? (vacation days)"


def test_the_second_one_is_the_second_item_the_last_answer_listed():
    rewrite = standalone("How much is the second one?", [SKUS])
    assert rewrite.standalone.startswith("How much is GX-T200-PRO?")
    assert standalone("How much is the first one?", [SKUS]).standalone.startswith(
        "How much is GX-T100?"
    )
    assert standalone("And the last one?", [SKUS]).standalone.startswith("And Thermo Pro?")


def test_an_ordinal_beyond_the_list_is_left_and_the_topic_carried():
    rewrite = standalone("What about the fifth one?", [SKUS])
    assert "the fifth one" in rewrite.standalone and rewrite.carried


def test_a_follow_up_that_names_an_earlier_turn_leans_on_it_not_on_the_last():
    back = "Back to vacation: can they be carried over?"
    assert antecedent(back, [LEAVE, HOTEL]) is LEAVE
    assert antecedent("And what about breakfast?", [LEAVE, HOTEL]) is HOTEL
    assert standalone(back, [LEAVE, HOTEL]).antecedent == 1


def test_a_chain_of_follow_ups_keeps_its_topic():
    second = turn(
        2,
        "Can they be carried over?",
        "Up to 5 days [1].",
        "Can they be carried over? (vacation days)",
    )
    rewrite = standalone("Until when must they be taken?", [LEAVE, second])
    assert "vacation" in rewrite.carried


def test_entities_and_list_items():
    assert entities("Update the GX-T100 to 4.3.1 in the Globex Home app.") == [
        "GX-T100",
        "Globex Home",
    ]
    assert listed_items("1. Thermo Lite\n2. Thermo Pro") == ["Thermo Lite", "Thermo Pro"]
    assert listed_items("Errors E-101 and E-204 [1].") == ["E-101", "E-204"]


def test_the_rewrite_is_deterministic():
    assert standalone("Can they be carried over?", [LEAVE]) == standalone(
        "Can they be carried over?", [LEAVE]
    )
