"""Pictures of notebook 09: each step's change with its interval, and fusion curves.

What is drawn is computed first, as plain data (`raglab.evaluation.improvement.step`,
`raglab.evaluation.tuning.fusion_curve`); these functions only draw it, in the style of `raglab.workbook.viz`
(white, Okabe & Ito's colour-blind-safe palette, PNG via `viz.show`). A change whose
interval excludes 0 is drawn filled, one whose interval holds 0 hollow: the difference
does not rest on colour alone. matplotlib is imported inside the functions that draw.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from raglab.evaluation.improvement import METRICS, SHORT, Step
from raglab.evaluation.tuning import CurvePoint, choose
from raglab.workbook.viz import OKABE_ITO, _figure

__all__ = ["delta_rows", "plot_fusion_curves", "plot_steps"]


def delta_rows(steps: Sequence[Step]) -> list[tuple[str, str, float, float, float]]:
    """(step, metric, change, low, high) for every compared step and metric, in table order."""
    return [
        (s.name, metric, d.mean, d.low, d.high)
        for s in steps
        for metric in METRICS
        if (d := s.deltas[metric]) is not None
    ]


def plot_steps(steps: Sequence[Step], *, title: str = "") -> Any:
    """One panel per metric: each compared step's change (after − before) and its 95 % interval.

    Raises ValueError when no step was compared with another (nothing to draw).
    """
    rows = delta_rows(steps)
    if not rows:
        raise ValueError("no step has a 'before' to compare with: nothing to draw")
    names = list(dict.fromkeys(name for name, *_ in rows))
    fig, axes = _figure(len(METRICS))
    fig.set_size_inches(2.0 * len(METRICS), 0.45 * len(names) + 1.6)
    for ax, metric in zip(axes, METRICS):
        ax.axvline(0.0, color="grey", lw=1)
        for y, name in enumerate(names):
            found = [r for r in rows if r[0] == name and r[1] == metric]
            if not found:
                continue
            _, _, mean, low, high = found[0]
            colour = OKABE_ITO[y % len(OKABE_ITO)]
            real = not (low <= 0.0 <= high)
            ax.plot([low, high], [y, y], color=colour, lw=2)
            ax.plot(mean, y, "o", color=colour, markersize=7, mfc=colour if real else "white")
        ax.set_title(SHORT[metric], fontsize=9)
        ax.set_ylim(len(names) - 0.5, -0.5)
        ax.set_yticks(range(len(names)), names if ax is axes[0] else [""] * len(names))
        ax.tick_params(labelsize=7)
    fig.supxlabel("change from the step before (95 % interval; hollow: holds 0)", fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def plot_fusion_curves(
    curves: Mapping[str, Sequence[CurvePoint]], *, title: str = "nDCG@10 against the dense weight"
) -> Any:
    """nDCG@10 against the dense weight w, one line per curve (e.g. embedder × half).

    w = 0 is BM25 alone, w = 1 dense alone, w = 0.5 plain RRF; each line's best weight is
    starred.
    """
    if not curves:
        raise ValueError("curves is empty: nothing to draw")
    fig, ax = _figure()
    for (label, points), colour in zip(curves.items(), OKABE_ITO):
        w = [p.fusion.dense_weight for p in points]
        y = [p.ndcg_at_10 for p in points]
        style = "--" if "held" in label else "-"
        ax.plot(w, y, style, color=colour, lw=2, marker="o", markersize=3, label=label)
        best = choose(points)  # the same rule that picks the weight
        (star,) = [p for p in points if p.fusion == best]
        ax.plot(star.fusion.dense_weight, star.ndcg_at_10, "*", color=colour, markersize=14)
    ax.axvline(0.5, color="grey", lw=0.8, ls=":")
    ax.set_xlabel("dense weight w   (0: BM25 alone · 0.5: plain RRF · 1: dense alone)")
    ax.set_ylabel("nDCG@10")
    ax.legend(loc="lower center", fontsize=8)
    ax.set_title(title, fontsize=10)
    return fig
