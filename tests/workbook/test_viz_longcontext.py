"""raglab.workbook.viz_longcontext: the curve's points read right, the budget marked, the figure drawn (Agg)."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")

import pytest
from matplotlib.figure import Figure

from raglab.workbook import viz_longcontext
from raglab.workbook.viz_longcontext import (
    first_over_budget,
    growth_points,
    plot_cost_quality,
    repriced,
)


def row(tokens: float, fits: bool) -> dict:
    method = {"input_tokens": tokens, "output_tokens": 0, "cost_per_1000": tokens * 3 / 1000}
    rag = {"input_tokens": 850, "output_tokens": 40, "cost_per_1000": 2.6, "key_fact": 0.5}
    method["key_fact"] = 0.6
    return {"copies": int(tokens // 10_000), "fits": fits, "long": method, "rag": rag}


def results() -> dict:
    """A small growth curve: the two bigger corpora over a budget of 100,000 tokens."""
    return {
        "max_tokens": 100_000,
        "prices_per_million": {"input_per_million": 3.0, "output_per_million": 15.0},
        "growth": [row(200_000, False), row(9_000, True), row(50_000, True), row(400_000, False)],
    }


def test_points_are_read_smallest_corpus_first():
    points = growth_points(results())
    assert [p.corpus_tokens for p in points] == [9_000, 50_000, 200_000, 400_000]
    assert points[0].long_cost == pytest.approx(27.0) and points[0].rag_cost == 2.6


def test_the_first_corpus_over_the_budget_is_found():
    assert first_over_budget(growth_points(results())).corpus_tokens == 200_000
    fitting = {"growth": [row(9_000, True)]}
    assert first_over_budget(growth_points(fitting)) is None


def test_a_row_missing_a_field_is_named():
    broken = {"growth": [row(9_000, True), {"fits": True, "long": {}, "rag": {}}]}
    with pytest.raises(ValueError, match=r"growth\[1\] has no 'input_tokens'"):
        growth_points(broken)


def test_the_figure_draws_both_methods_and_the_budget():
    fig = plot_cost_quality(results())
    assert isinstance(fig, Figure)
    cost, quality = fig.axes
    assert cost.get_xscale() == cost.get_yscale() == "log"
    assert quality.get_ylim() == (0, 1)
    labels = [t.get_text() for t in cost.get_legend().get_texts()]
    assert labels == ["long context", "RAG (top 5 chunks)"]
    assert any(line.get_xdata()[0] == 100 for line in cost.get_lines())  # the budget, in thousands
    fig.savefig(io.BytesIO(), format="png")


def test_the_module_lists_what_it_offers():
    assert viz_longcontext.__all__


def test_repriced_recomputes_costs_and_the_budget_and_keeps_the_measurements():
    cheap = repriced(results(), input_price=1.0, output_price=2.0, budget=300_000)
    points = growth_points(cheap)
    assert [p.fits for p in points] == [True, True, True, False]
    assert points[0].long_cost == pytest.approx(1000 * 9_000 / 1e6)
    assert points[0].rag_cost == pytest.approx(1000 * (850 + 40 * 2) / 1e6)
    assert [p.long_key_fact for p in points] == [0.6] * 4
    assert cheap["max_tokens"] == 300_000
    assert cheap["prices_per_million"] == {"input_per_million": 1.0, "output_per_million": 2.0}
    assert results()["max_tokens"] == 100_000  # the original is left as it was
