"""raglab.viz_answers: the data behind each figure is right, and each figure draws (Agg)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from matplotlib.figure import Figure

from raglab import viz_answers
from raglab.faithfulness import FaithfulnessReport, SentenceCheck

# --- the budget --------------------------------------------------------------------------------


def test_plot_budget_draws_the_means_and_the_budget_line():
    wanted = np.array([[100, 200, 300], [120, 260, 380]])
    kept = np.minimum(wanted, 250)
    fig = viz_answers.plot_budget([1, 2, 3], wanted, kept, 250, title="t")
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    bold = [line for line in ax.get_lines() if line.get_linewidth() == 2.5]
    np.testing.assert_allclose(bold[0].get_ydata(), [110, 230, 340])
    np.testing.assert_allclose(bold[1].get_ydata(), [110, 225, 250])
    assert any(list(line.get_ydata()) == [250, 250] for line in ax.get_lines())  # the budget
    assert "budget: 250 tokens" in [t.get_text() for t in ax.get_legend().get_texts()]


def test_plot_budget_refuses_a_table_of_the_wrong_shape():
    with pytest.raises(ValueError, match=r"kept must have shape \(questions, 3\)"):
        viz_answers.plot_budget([1, 2, 3], np.ones((2, 3)), np.ones((2, 2)), 5)


# --- the abstention trade-off -------------------------------------------------------------------


def test_abstention_curve_by_hand():
    # Two answerable (one answered right with confidence 0.9), one unanswerable (0.2).
    curve = viz_answers.abstention_curve([0.9, 0.2, 0.6], [True, False, False], [True, False, True])
    assert curve.thresholds.tolist() == [0.2, 0.6, 0.9, np.inf]
    np.testing.assert_allclose(curve.abstained, [0, 1 / 3, 2 / 3, 1])
    np.testing.assert_allclose(curve.precision[:3], [1 / 3, 1 / 2, 1])
    assert np.isnan(curve.precision[3])  # nothing answered: no precision
    np.testing.assert_allclose(curve.coverage, [0.5, 0.5, 0.5, 0])
    np.testing.assert_allclose(curve.refused, [0, 1, 1, 1])
    assert (
        curve.at(0.5)
        == curve.at(0.6)
        == {
            "abstained": pytest.approx(1 / 3),
            "precision": 0.5,
            "coverage": 0.5,
            "refused": 1.0,
        }
    )


def test_abstention_curve_is_monotone_where_it_must_be():
    rng = np.random.default_rng(0)
    conf = rng.random(50)
    answerable = rng.random(50) < 0.7
    correct = answerable & (rng.random(50) < conf)
    curve = viz_answers.abstention_curve(conf, correct, answerable)
    assert np.all(np.diff(curve.abstained) >= 0) and np.all(np.diff(curve.refused) >= 0)
    assert np.all(np.diff(curve.coverage) <= 0)


def test_abstention_curve_refuses_inconsistent_labels():
    with pytest.raises(ValueError, match="correct must be False for every unanswerable"):
        viz_answers.abstention_curve([0.5], [True], [False])
    with pytest.raises(ValueError, match="of one length"):
        viz_answers.abstention_curve([0.5, 0.1], [True], [True])


def test_plot_abstention_curve_marks_the_threshold_and_says_the_shares():
    curve = viz_answers.abstention_curve([0.9, 0.2, 0.6], [True, False, False], [True, False, True])
    fig = viz_answers.plot_abstention_curve(curve, 0.5, title="sample")
    ax = fig.axes[0]
    assert "threshold 0.50: precision 0.50" in ax.get_title()
    assert any(list(line.get_xdata()) == [0.5, 0.5] for line in ax.get_lines())


# --- faithfulness --------------------------------------------------------------------------------

REPORT = FaithfulnessReport(
    (
        SentenceCheck("Leave is 25 days [1].", (1,), 1.0, True),
        SentenceCheck(
            "It is <b>30</b> days [1].", (1,), 0.8, False, "states 30, which [1] does not"
        ),
    )
)


def test_sentences_html_marks_each_sentence_and_escapes_the_text():
    page = viz_answers.sentences_html(REPORT)
    assert page.count("✓") == 1 and page.count("✗") == 1
    assert "&lt;b&gt;30&lt;/b&gt;" in page and "<b>30</b>" not in page
    assert "line-through" in page and "states 30, which [1] does not" in page


def test_sentences_view_has_a_plain_text_fallback():
    bundle = viz_answers.SentencesView(REPORT)._repr_mimebundle_()
    assert bundle["text/plain"].splitlines() == [
        "✓ Leave is 25 days [1].",
        "✗ It is <b>30</b> days [1].   ← states 30, which [1] does not",
    ]


def test_plot_sentences_draws_one_box_per_sentence_under_its_label():
    fig = viz_answers.plot_sentences({"model": REPORT, "extractive": FaithfulnessReport(())})
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts[0] == "model" and texts[-1] == "extractive"
    boxes = [t for t in fig.axes[0].texts if t.get_bbox_patch() is not None]
    assert len(boxes) == 2 and boxes[1].get_bbox_patch().get_linestyle() == "--"
