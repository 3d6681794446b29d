"""The cost/quality curve of long context against RAG as the corpus grows (notebook 13).

Drawn from `benchmarks/results/longcontext.json` (`growth`: the sample corpus with copies
of the transfer corpus added, measured by `raglab.evaluation.longcontext.growth_curve`), or
from a small curve the notebook measures itself when that file is missing. What is drawn is
computed first, as plain data (`growth_points`, `first_over_budget`), and tested; the drawing
function only draws it, in the style of `raglab.workbook.viz`. matplotlib is imported inside it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any, NamedTuple

from raglab.longcontext.cost import Prices, cost_per_question
from raglab.workbook.viz import OKABE_ITO, _figure
from raglab.workbook.viz_scale import _log_axes

__all__ = ["CurvePoint", "first_over_budget", "growth_points", "plot_cost_quality", "repriced"]

LONG_COLOUR, RAG_COLOUR = OKABE_ITO[4], OKABE_ITO[3]


class CurvePoint(NamedTuple):
    """One corpus size: the long prompt's tokens per question, each method's cost per 1,000
    questions and share of key facts stated, and whether the long prompt fits the budget."""

    corpus_tokens: float
    long_cost: float
    rag_cost: float
    long_key_fact: float
    rag_key_fact: float
    fits: bool


def growth_points(results: Mapping[str, Any]) -> list[CurvePoint]:
    """The curve's points from a results mapping (`growth`: rows with `long`, `rag`, `fits`),
    smallest corpus first. A row without a field is refused, naming it."""
    points = []
    for i, row in enumerate(results["growth"]):
        try:
            long, rag = row["long"], row["rag"]
            points.append(
                CurvePoint(
                    float(long["input_tokens"]),
                    float(long["cost_per_1000"]),
                    float(rag["cost_per_1000"]),
                    float(long["key_fact"]),
                    float(rag["key_fact"]),
                    bool(row["fits"]),
                )
            )
        except (KeyError, TypeError) as error:
            raise ValueError(f"longcontext.json: growth[{i}] has no {error}") from None
    return sorted(points)


def first_over_budget(points: Sequence[CurvePoint]) -> CurvePoint | None:
    """The smallest corpus whose long prompt does not fit the budget (None: all fit)."""
    return next((p for p in points if not p.fits), None)


def repriced(
    results: Mapping[str, Any], *, input_price: float, output_price: float, budget: int
) -> dict[str, Any]:
    """`results` at other prices and another budget: each growth row's cost of 1,000
    questions recomputed from its tokens in and out, and `fits` from its long prompt's
    tokens (the mean over the questions: they differ by a question's few tokens only).
    What the notebook's sliders call; the measured tokens and answers stay as they are."""
    prices = Prices(input_price, output_price)

    def priced(method: Mapping[str, Any]) -> dict[str, Any]:
        tokens_in, tokens_out = method["input_tokens"], method["output_tokens"]
        return {**method, "cost_per_1000": 1000 * cost_per_question(tokens_in, tokens_out, prices)}

    rows = [
        {**row, "long": priced(row["long"]), "rag": priced(row["rag"]),
         "fits": row["long"]["input_tokens"] <= budget}
        for row in results["growth"]
    ]  # fmt: skip
    return {**results, "growth": rows, "max_tokens": budget, "prices_per_million": asdict(prices)}


def plot_cost_quality(results: Mapping[str, Any]) -> Any:
    """Two panels against the corpus's size in tokens: the cost of 1,000 questions (left) and
    the share of questions answered with their key fact (right). Long context's points over
    the budget are hollow: a model could not read that prompt."""
    points = growth_points(results)
    budget = results.get("max_tokens")
    fig, (cost, quality) = _figure(2)
    x = [p.corpus_tokens / 1000 for p in points]  # thousands: short tick labels
    for ax, long, rag in (
        (cost, [p.long_cost for p in points], [p.rag_cost for p in points]),
        (quality, [p.long_key_fact for p in points], [p.rag_key_fact for p in points]),
    ):
        ax.plot(x, long, color=LONG_COLOUR, lw=2, label="long context")
        ax.plot(x, rag, color=RAG_COLOUR, lw=2, label="RAG (top 5 chunks)")
        for p, y in zip(points, long):
            ax.plot(
                p.corpus_tokens / 1000,
                y,
                "o",
                color=LONG_COLOUR,
                mfc=LONG_COLOUR if p.fits else "white",
            )
        ax.plot(x, rag, "s", color=RAG_COLOUR, ms=4)
        if budget:
            ax.axvline(budget / 1000, color="grey", lw=1, ls="--")
        ax.set_xlabel("corpus pasted, thousand tokens (log)")
    _log_axes(cost)
    _log_axes(quality, y=False)
    if budget:
        cost.annotate(
            f"budget {budget:,} tokens",
            (budget / 1000, 0.5),
            xycoords=("data", "axes fraction"),
            rotation=90,
            ha="right",
            va="center",
            fontsize=8,
        )
    cost.set_ylabel("cost of 1,000 questions (log scale)")
    quality.set_ylabel("answered with the key fact")
    quality.set_ylim(0, 1)
    cost.legend(loc="upper left", fontsize=8)
    prices = results.get("prices_per_million", {})
    if prices:
        cost.set_title(
            f"at {prices['input_per_million']:g} in / {prices['output_per_million']:g} out "
            "per million tokens",
            fontsize=9,
        )
    asked = results.get("growth_questions")
    quality.set_title(
        f"{asked} questions; hollow: over the budget" if asked else "hollow: over the budget",
        fontsize=9,
    )
    return fig
