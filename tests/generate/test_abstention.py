"""The abstention rule: features, the logistic rule, fitting it, the curve, the split."""

from __future__ import annotations

import dataclasses
import json
import math
from importlib import resources

import pytest

from raglab.embed.embedders import HashingEmbedder, available_embedders
from raglab.evaluation import Question, load_questions
from raglab.evaluation.calibration import split_questions
from raglab.generate.abstention import (
    FEATURES,
    RULES_FILE,
    WORDS_PROFILE,
    AbstentionRule,
    AnswerFeatures,
    Example,
    answer_features,
    fit_rule,
    load_rule,
    precision_abstention_curve,
    profile_of,
    together,
    vocabulary,
)
from raglab.generate.evidence import Evidence
from raglab.ingest.stems import content_stems
from raglab.samples import sample_questions


def features(support: float, coverage: float = 1.0) -> AnswerFeatures:
    return AnswerFeatures(support, 0.0, support, 0.0, coverage, 1.0, coverage, 1.0)


def support_rule(threshold: float = 0.5) -> AbstentionRule:
    """p = sigmoid(10 · support − 5): 0.5 at a support of 0.5."""
    weights = tuple(10.0 if name == "best_support" else 0.0 for name in FEATURES)
    return AbstentionRule("demo", weights, -5.0, threshold)


# --- the rule ------------------------------------------------------------------------------


def test_probability_is_the_logistic_of_the_weighted_sum():
    rule = support_rule()
    assert rule.probability(features(0.5)) == pytest.approx(0.5)
    assert rule.probability(features(0.8)) == pytest.approx(1 / (1 + math.exp(-3)))
    assert rule.answers(features(0.5)) and not rule.answers(features(0.49))


def test_a_threshold_given_to_answers_overrides_the_fitted_one():
    rule = support_rule(threshold=0.5)
    assert not rule.answers(features(0.6), threshold=0.9)
    assert rule.answers(features(0.3), threshold=0.1)


def test_a_rule_needs_one_weight_per_feature():
    with pytest.raises(ValueError, match=r"weights must have one number per feature .*got 2"):
        AbstentionRule("demo", (1.0, 2.0), 0.0, 0.5)


def test_every_registered_embedder_and_words_have_a_shipped_rule():
    stored = json.loads(resources.files("raglab.generate").joinpath(RULES_FILE).read_text("utf-8"))
    for profile in [WORDS_PROFILE, *available_embedders()]:
        rule = load_rule(profile)
        assert rule.profile == profile
        assert stored["rules"][profile]["features"] == list(FEATURES)
        assert 0.0 < rule.threshold < 1.0
        assert any(w != 0 for w in rule.weights)


def test_an_embedder_without_a_rule_gets_the_words_rule():
    assert load_rule("word2vec").profile == WORDS_PROFILE
    assert profile_of(None) == WORDS_PROFILE
    assert profile_of(HashingEmbedder()) == "hashing"


# --- features ------------------------------------------------------------------------------


def test_features_of_no_evidence_are_all_zero():
    assert answer_features("How many days?", []) == AnswerFeatures(*(0.0,) * len(FEATURES))


def test_coverage_counts_question_words_found_anywhere_in_the_sources():
    one = Evidence(1, 0, "Staff get 25 days.", frozenset({"staff", "day"}), score=0.6)
    two = Evidence(2, 1, "Parking is free.", frozenset({"park", "free"}), score=0.1)
    f = answer_features("How many days of parking for cars?", [one, two])
    assert f.coverage == pytest.approx(2 / 3)  # "day" and "park" found, "car" nowhere
    assert f.gap == pytest.approx(0.5)
    assert f.weakest_term == 0.0  # without an embedder: a word matches only itself
    assert f.known == f.coverage  # without the asker's words, the sources stand in


def test_known_counts_question_words_found_anywhere_the_asker_may_read():
    # The sources speak of days; the asker's documents also of parking, never of cars.
    one = Evidence(1, 0, "Staff get 25 days.", frozenset({"staff", "day"}), score=0.6)
    words = frozenset({"staff", "day", "park", "free"})
    f = answer_features("How many days of parking for cars?", [one], known_words=words)
    assert f.coverage == pytest.approx(1 / 3) and f.known == pytest.approx(2 / 3)


def sentence(n: int, text: str, score: float = 0.5) -> Evidence:
    return Evidence(n, n, text, content_stems(text), score=score)


def test_together_counts_question_word_pairs_found_in_one_chosen_sentence():
    # Every word of the question is in the sources, but never two in the same sentence:
    # the sources speak of a bicycle shed and a travel allowance, not a bicycle allowance.
    apart = [
        sentence(1, "A bicycle shed is at the back."),
        sentence(2, "The allowance covers trains."),
    ]
    question = "Is there a bicycle allowance?"
    assert answer_features(question, apart, chosen=apart).coverage == 1.0
    assert answer_features(question, apart, chosen=apart).together == 0.0
    one = [sentence(1, "Staff who cycle get a bicycle allowance.")]
    assert together(question, one) == 1.0
    assert together(question, apart[:1] + one) == 1.0
    assert together("Do staff get a bicycle allowance?", apart + one) == 1.0  # all three pairs


def test_together_of_a_one_word_question_is_whether_a_chosen_sentence_has_it():
    assert together("What is E-612?", [sentence(1, "E-612 means the sensor is offline.")]) == 1.0
    assert together("What is E-612?", [sentence(1, "E-317 means the sensor is offline.")]) == 0.0
    assert together("Is it?", [sentence(1, "Yes it is.")]) == 0.0  # no content words at all


def test_together_reads_the_chosen_sentences_defaulting_to_the_best_one():
    best, second = sentence(1, "Staff get 25 days.", 0.6), sentence(2, "Annual leave rules.", 0.3)
    question = "How many days of annual leave?"
    assert answer_features(question, [best, second]).together == 0.0  # "day" alone
    both = answer_features(question, [best, second], chosen=[best, second])
    assert both.together == pytest.approx(1 / 3)  # "annual leave" together, "day" apart


def test_vocabulary_is_the_stems_of_the_chunks_text_heading_and_title():
    from raglab.records import Chunk

    chunk = Chunk("a.md", 0, "Staff get 25 days.", 0, 18, heading="Annual leave", title="HR")
    assert vocabulary([chunk]) == frozenset({"staff", "25", "day", "annual", "leav", "hr"})
    assert vocabulary([]) == frozenset()


# --- fitting -------------------------------------------------------------------------------


def examples_by_support(right: list[float], wrong: list[float]) -> list[Example]:
    good = [Example(f"r{i}", features(s), True, True) for i, s in enumerate(right)]
    bad = [Example(f"w{i}", features(s), False, False) for i, s in enumerate(wrong)]
    return good + bad


def test_fit_rule_refuses_every_unanswerable_fitting_question_when_they_are_few():
    examples = examples_by_support([0.6, 0.7, 0.8, 0.9, 0.5], [0.1, 0.2, 0.3, 0.55])
    rule = fit_rule(examples, profile="demo")
    assert rule.profile == "demo" and rule.weights[FEATURES.index("best_support")] > 0
    probabilities = {e.question_id: rule.probability(e.features) for e in examples}
    assert all(p < rule.threshold for q, p in probabilities.items() if q.startswith("w"))
    assert [q for q, p in probabilities.items() if p >= rule.threshold] == ["r0", "r1", "r2", "r3"]


def test_fit_rule_may_answer_a_twentieth_of_many_unanswerable_questions():
    wrong = [i / 100 for i in range(40)] + [0.95]  # 41: 5 % of them is 2.05 questions
    rule = fit_rule(examples_by_support([0.6 + i / 100 for i in range(40)], wrong), profile="demo")
    assert rule.probability(features(0.95)) >= rule.threshold  # the two highest answered
    assert rule.probability(features(0.39)) >= rule.threshold
    assert rule.probability(features(0.38)) < rule.threshold  # the other 39 refused


def test_fit_rule_needs_right_and_wrong_answers():
    with pytest.raises(ValueError, match="both right and wrong answers"):
        fit_rule(examples_by_support([0.5, 0.6], []), profile="demo")


# --- the curve -----------------------------------------------------------------------------


def test_curve_answers_less_and_more_precisely_as_the_threshold_rises():
    examples = examples_by_support([0.5, 0.7, 0.9], [0.3, 0.6])
    curve = precision_abstention_curve(examples, support_rule())
    assert [p.threshold for p in curve] == [i / 20 for i in range(21)]
    answered = [p.answered for p in curve]
    assert answered == sorted(answered, reverse=True)
    assert curve[0].answered == 1.0 and curve[0].precision == pytest.approx(3 / 5)
    assert curve[-1].answered == 0.0 and curve[-1].precision is None
    (at_half,) = precision_abstention_curve(examples, support_rule(), [0.5])
    assert (at_half.answered, at_half.precision) == (pytest.approx(4 / 5), pytest.approx(3 / 4))
    assert (at_half.answered_correctly, at_half.abstention_on_unanswerable) == (1.0, 0.5)


def test_curve_needs_examples():
    with pytest.raises(ValueError, match="at least one example"):
        precision_abstention_curve([], support_rule())


# --- the split -----------------------------------------------------------------------------


def test_split_is_disjoint_complete_deterministic_and_balanced_by_kind():
    questions = load_questions(sample_questions())
    fit, held_out = split_questions(questions)
    ids = [q.id for q in fit + held_out]
    assert sorted(ids) == sorted(q.id for q in questions) and len(set(ids)) == len(ids)
    assert split_questions(list(reversed(questions))) == (fit, held_out)
    for kind in {q.kind for q in questions}:
        counts = [sum(q.kind == kind for q in half) for half in (fit, held_out)]
        assert abs(counts[0] - counts[1]) <= 1, (kind, counts)


def test_split_depends_on_the_salt_not_on_the_order_of_the_file():
    questions = [Question(f"q{i}", "?", answerable=False) for i in range(20)]
    assert split_questions(questions) != split_questions(questions, salt="other")


def test_rule_is_a_frozen_record():
    with pytest.raises(dataclasses.FrozenInstanceError):
        support_rule().threshold = 0.1  # type: ignore[misc]


def test_fit_rule_cautions_between_its_two_shares_of_refused_questions():
    wrong = [i / 10 for i in range(8)]  # 0.0 ... 0.7
    rule = fit_rule(
        examples_by_support([0.5, 0.7, 0.8, 0.9], wrong),
        profile="demo",
        min_abstention=0.5,
        sure_abstention=1.0,
    )
    levels = [rule.level(rule.probability(features(s))) for s in wrong]
    assert levels.count("abstained") == 4  # half refused outright
    assert levels.count("cautious") == 4 and "sure" not in levels  # the rest only with a caution


def test_fit_rule_holds_its_share_on_average_over_the_corpora_not_pooled():
    # corpus "big" has 8 unanswerable questions, easy to refuse; "small" has 2, both hard.
    big = examples_by_support([0.9, 0.95], [0.05 * i for i in range(8)])
    small = [Example(f"s{i}", features(s), False, False) for i, s in enumerate([0.6, 0.65])]
    corpora = ["big"] * len(big) + ["small"] * len(small)
    pooled = fit_rule(big + small, profile="demo", min_abstention=0.8)
    balanced = fit_rule(big + small, profile="demo", min_abstention=0.8, corpora=corpora)
    refused = lambda rule: [rule.level(rule.probability(e.features)) == "abstained" for e in small]  # noqa: E731
    assert refused(pooled) == [False, False]  # 8 of 10 pooled: the small corpus is left out
    assert any(refused(balanced))  # 0.8 on average over the two corpora reaches into it


def test_focus_is_what_the_question_asks_beyond_the_thing_it_is_about():
    from raglab.generate.abstention import focus
    from raglab.generate.evidence import Evidence

    valves = Evidence(
        1,
        0,
        "It fits rims up to 30 mm.",
        frozenset({"fit", "rim", "30", "mm"}),
        context=frozenset({"griplit", "valv"}),
    )
    assert focus("Which rims do GripLite valves fit?", [valves], [valves]) == 1.0
    assert focus("How long is the warranty on GripLite valves?", [valves], [valves]) == 0.0
