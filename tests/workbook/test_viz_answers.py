"""raglab.workbook.viz_answers: the data behind each figure is right, and each figure draws (Agg)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from matplotlib.figure import Figure

from raglab.generate.abstention import CurvePoint
from raglab.generate.faithfulness import FaithfulnessReport, SentenceCheck
from raglab.workbook import viz_answers

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


def point(t: float, answered: float, precision: float | None) -> CurvePoint:
    return CurvePoint(t, answered, precision, answered * 0.9, 1 - answered, 1 - answered)


CURVE = [point(0.0, 1.0, 0.6), point(0.5, 0.5, 0.8), point(1.0, 0.0, None)]


def test_plot_abstention_curve_draws_each_share_and_marks_the_threshold():
    fig = viz_answers.plot_abstention_curve(CURVE, point(0.7, 0.4, 0.9), title="sample")
    left, right = fig.axes
    precision = next(line for line in left.get_lines() if line.get_label().startswith("precision"))
    np.testing.assert_allclose(precision.get_ydata(), [0.6, 0.8, np.nan])  # None: a gap
    assert any(list(line.get_xdata()) == [0.7, 0.7] for line in left.get_lines())
    star = [line for line in right.get_lines() if line.get_marker() == "*"]
    assert len(star) == 1 and star[0].get_xydata().tolist() == [[pytest.approx(0.6), 0.9]]
    assert "threshold 0.70: precision 0.90" in fig._suptitle.get_text()


def test_plot_abstention_curve_refuses_an_empty_curve():
    with pytest.raises(ValueError, match="curve must hold at least one point"):
        viz_answers.plot_abstention_curve([], point(0.5, 0.5, 0.5))


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


# --- one rule on several corpora ----------------------------------------------------------------


def transfer_point(t: float, false_abstention: float, refused: float) -> CurvePoint:
    return CurvePoint(t, 0.5, 0.8, 1 - false_abstention, refused, false_abstention)


def test_plot_transfer_draws_one_line_per_corpus_and_marks_each_operating_point():
    curves = {
        "sample": [transfer_point(0.0, 0.0, 0.0), transfer_point(1.0, 1.0, 1.0)],
        "transfer": [transfer_point(0.0, 0.0, 0.0), transfer_point(0.5, 0.4, 0.6)],
    }
    now = {"sample": transfer_point(0.7, 0.1, 0.9), "transfer": transfer_point(0.7, 0.4, 0.6)}
    fig = viz_answers.plot_transfer(curves, now, title="t")
    (ax,) = fig.axes
    lines = [line for line in ax.get_lines() if not line.get_label().startswith("_")]
    assert [line.get_xydata().tolist() for line in lines] == [
        [[0, 0], [1, 1]],
        [[0, 0], [0.4, 0.6]],
    ]
    marks = [
        line.get_xydata().tolist() for line in ax.get_lines() if line.get_label().startswith("_")
    ]
    assert marks == [[[0.1, 0.9]], [[0.4, 0.6]]]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[1] == "transfer: false abstention 0.40, unanswerable refused 0.60"


def test_plot_transfer_refuses_corpora_without_an_operating_point():
    with pytest.raises(ValueError, match="curves and now must name the same corpora"):
        viz_answers.plot_transfer({"sample": [transfer_point(0, 0, 0)]}, {})
