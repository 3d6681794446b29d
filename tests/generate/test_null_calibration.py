"""Per-index calibration: null questions, percentiles, and the rule that reads them."""

import pytest

from raglab.generate.abstention import FEATURES, AnswerFeatures, Example, fit_rule
from raglab.generate.extractive import ExtractiveGenerator
from raglab.generate.null_calibration import (
    CALIBRATED,
    NullCalibration,
    null_questions,
    pooled,
    shipped_calibration,
)
from raglab.generate.prompting import build_prompt
from raglab.ingest.stems import chunk_stems, content_stems
from raglab.records import Chunk, Hit


def _chunk(doc: str, text: str, title: str) -> Chunk:
    return Chunk(doc, 0, text, 0, len(text), title=title)


CHUNKS = [
    _chunk("returns.md", "Unused parts can be returned within 30 days of delivery.", "Returns"),
    _chunk("ship.md", "Parcels up to 5 kg ship to the mainland for a flat price.", "Shipping"),
    _chunk("hours.md", "The depot counter opens at eight and closes at six on weekdays.", "Depot"),
]


def test_a_null_question_swaps_a_word_for_one_the_corpus_never_uses():
    vocabulary = frozenset().union(*map(chunk_stems, CHUNKS))
    questions = null_questions(CHUNKS)
    assert len(questions) == len(CHUNKS)
    for question in questions:
        unknown = content_stems(question) - vocabulary
        assert len(unknown) == 1, question  # the stand-in, and nothing else new


def test_null_questions_are_the_same_for_the_same_chunks():
    assert null_questions(CHUNKS) == null_questions(list(reversed(CHUNKS)))
    assert len(null_questions(CHUNKS, n=2)) == 2


def test_a_corpus_that_uses_every_stand_in_gets_no_null_questions():
    from raglab.generate.null_calibration import STAND_INS

    every = _chunk("all.md", " ".join(STAND_INS) + ".", "All")
    assert null_questions([every, *CHUNKS]) == []


def test_percentiles_count_ties_half_and_need_values():
    null = NullCalibration({"best_score": (0.1, 0.5, 0.5, 0.9)})
    assert null.percentile("best_score", 0.5) == 0.5
    assert null.percentile("best_score", 0.0) == 0.0
    assert null.percentile("best_score", 1.0) == 1.0
    assert null.percentile("best_similarity", 0.3) == 0.5  # no values: no information


def test_relative_fills_every_calibrated_percentile():
    null = NullCalibration({raw: (0.2, 0.4) for raw in CALIBRATED})
    found = null.relative(AnswerFeatures(0.3, 0.5, 0.1, 0, 0, 0, 0, 0))
    assert (found.score_percentile, found.similarity_percentile, found.support_percentile) == (
        0.5,
        1.0,
        0.0,
    )


def test_a_calibration_survives_json():
    null = NullCalibration({raw: (0.25, 0.5) for raw in CALIBRATED})
    assert NullCalibration.from_json(null.as_json()) == null


def test_pooling_weighs_each_distribution_the_same():
    small = NullCalibration({raw: (0.0,) for raw in CALIBRATED})
    large = NullCalibration({raw: tuple([1.0] * 100) for raw in CALIBRATED})
    assert pooled([small, large]).percentile("best_score", 0.5) == pytest.approx(0.5, abs=0.03)


def test_the_answerer_reads_scores_against_its_calibration():
    text = "# Leave\n\nStaff get 25 days of annual leave."
    prompt = build_prompt("How many days of annual leave?", [Hit(_chunk("l.md", text, ""), 1.0)])
    low = NullCalibration({raw: (0.0, 0.0) for raw in CALIBRATED})
    high = NullCalibration({raw: (2.0, 2.0) for raw in CALIBRATED})
    above = ExtractiveGenerator(calibration=low).decide(prompt).features
    below = ExtractiveGenerator(calibration=high).decide(prompt).features
    assert (above.score_percentile, below.score_percentile) == (1.0, 0.0)


def test_without_an_index_the_shipped_null_distribution_stands_in():
    assert shipped_calibration("words") is not None
    text = "# Leave\n\nStaff get 25 days of annual leave."
    prompt = build_prompt("How many days of annual leave?", [Hit(_chunk("l.md", text, ""), 1.0)])
    features = ExtractiveGenerator().decide(prompt).features
    assert features.score_percentile == shipped_calibration("words").percentile(
        "best_score", features.best_score
    )


def test_fit_rule_gives_ignored_features_no_weight():
    def example(i: int, good: bool) -> Example:
        values = [0.9 if good else 0.1] * len(FEATURES)
        values[-1] = i / 10
        return Example(f"q{i}", AnswerFeatures(*values), good, good)

    examples = [example(i, i % 2 == 0) for i in range(10)]
    rule = fit_rule(examples, profile="demo", ignore=tuple(CALIBRATED))
    for raw in CALIBRATED:
        assert rule.weights[FEATURES.index(raw)] == 0.0
    assert rule.weights[FEATURES.index("coverage")] != 0.0
    with pytest.raises(ValueError, match="unknown features"):
        fit_rule(examples, profile="demo", ignore=("nonsense",))
