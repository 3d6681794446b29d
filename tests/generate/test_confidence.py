"""How sure the answerer is: sure, cautious (a stated caution) or abstained, on the Answer."""

import json

import pytest

from raglab.cli.answers import answer_as_dict, format_answer
from raglab.generate.abstention import FEATURES, AbstentionRule
from raglab.generate.extractive import ExtractiveGenerator, without_caution
from raglab.generate.faithfulness import check_faithfulness
from raglab.pipeline import answer_from
from raglab.records import Chunk, Confidence, Hit

TEXT = "# Valves\n\nThe GripLite valve set fits rims up to 30 mm deep. It weighs 9 g."
HIT = Hit(Chunk("valves.md", 0, TEXT, 0, len(TEXT), title="GripLite valves"), 1.0)


def rule(threshold: float, caution: float | None) -> AbstentionRule:
    # probability 0.5 for every question: the thresholds alone decide the level
    return AbstentionRule("words", (0.0,) * len(FEATURES), 0.0, threshold, caution)


@pytest.mark.parametrize(
    ("threshold", "caution", "level"),
    [
        (0.4, None, "sure"),
        (0.6, 0.4, "cautious"),
        (0.6, None, "abstained"),
        (0.7, 0.6, "abstained"),
    ],
)
def test_the_answer_carries_its_level_and_probability(threshold, caution, level):
    answer = answer_from(
        "How deep a rim do GripLite valves fit?",
        [HIT],
        ExtractiveGenerator(rule=rule(threshold, caution)),
    )
    assert answer.confidence == Confidence(level, 0.5)
    assert answer.abstained == (level == "abstained")  # a cautious answer is no abstention


def test_a_cautious_answer_says_so_and_every_quote_is_still_cited_and_faithful():
    answer = answer_from(
        "What is the warranty on GripLite valves?", [HIT], ExtractiveGenerator(rule=rule(0.6, 0.4))
    )
    first, rest = answer.text.split("\n", 1)
    assert first == "The sources mention GripLite and valves but may not answer this question."
    assert without_caution(answer.text) == rest and "[1]" in rest
    assert answer.verified
    assert check_faithfulness(answer.text, answer.retrieved).score == 1.0


def test_json_and_text_show_the_confidence():
    answer = answer_from(
        "How deep a rim do GripLite valves fit?", [HIT], ExtractiveGenerator(rule=rule(0.4, None))
    )
    shown = json.loads(json.dumps(answer_as_dict(answer)))
    assert shown["confidence"] == {"level": "sure", "probability": 0.5}
    assert "Confidence: sure (50% likely to answer the question)" in format_answer(answer)


def test_a_generator_that_does_not_say_gives_no_confidence():
    class Quoting:
        def generate(self, prompt):
            return "The GripLite valve set fits rims up to 30 mm deep [1]."

    answer = answer_from("How deep?", [HIT], Quoting())
    assert answer.confidence is None and answer_as_dict(answer)["confidence"] is None


@pytest.mark.parametrize(
    ("caution", "message"), [(0.7, "caution must be >= 0 and <= threshold"), (-0.1, "caution")]
)
def test_caution_is_checked(caution, message):
    with pytest.raises(ValueError, match=message):
        rule(0.6, caution)


def test_a_confidence_level_is_checked():
    with pytest.raises(ValueError, match="level must be one of sure, cautious, abstained"):
        Confidence("maybe", 0.5)
