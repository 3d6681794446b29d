"""Notebook 09's figures draw what the tested data says, and refuse to draw nothing."""

from __future__ import annotations

import pytest

from raglab.evaluation.bootstrap import Interval
from raglab.evaluation.improvement import METRICS, Measurement, Step
from raglab.evaluation.tuning import CurvePoint
from raglab.retrieve.fusion import Fusion
from raglab.workbook.viz_improve import delta_rows, plot_fusion_curves, plot_steps

EMPTY = Measurement("m", ())


def test_delta_rows_list_each_compared_metric_in_table_order():
    deltas = dict.fromkeys(METRICS) | {"mrr@5": Interval(0.1, -0.05, 0.2, 30)}
    steps = [
        Step("base", EMPTY, None, dict.fromkeys(METRICS)),
        Step("rerank", EMPTY, "base", deltas),
    ]
    assert delta_rows(steps) == [("rerank", "mrr@5", 0.1, -0.05, 0.2)]
    fig = plot_steps(steps, title="t")
    assert len(fig.axes) == len(METRICS)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["rerank"]


def test_plot_steps_refuses_a_table_with_nothing_compared():
    with pytest.raises(ValueError, match="nothing to draw"):
        plot_steps([Step("base", EMPTY, None, dict.fromkeys(METRICS))])


def test_fusion_curves_draw_a_line_per_curve_and_star_the_chosen_weight():
    points = [CurvePoint(Fusion("rrf", w), s) for w, s in [(0.0, 0.8), (0.5, 0.9), (1.0, 0.85)]]
    fig = plot_fusion_curves({"fit": points, "held out": points})
    lines = fig.axes[0].get_lines()
    stars = [line for line in lines if line.get_marker() == "*"]
    assert [tuple(s.get_xydata()[0]) for s in stars] == [(0.5, 0.9), (0.5, 0.9)]
    with pytest.raises(ValueError, match="nothing to draw"):
        plot_fusion_curves({})
