"""Pictures of the answer side: the context budget, the abstention trade-off, faithfulness.

What is drawn is computed first, as plain data, and tested (the answerer's
`precision_abstention_curve`, `sentences_html`); the drawing functions only draw it, in the style of `raglab.workbook.viz`
(white, 7 × 4.5 in, Okabe & Ito's colour-blind-safe palette, PNG via `viz.show`).
Supported and unsupported sentences differ by mark (✓ / ✗) and line style as well as by
colour. matplotlib is imported inside the functions that draw.
"""

from __future__ import annotations

import html
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from raglab.generate.abstention import CurvePoint
from raglab.generate.faithfulness import FaithfulnessReport
from raglab.workbook.viz import OKABE_ITO, _figure

__all__ = [
    "SentencesView",
    "plot_abstention_curve",
    "plot_budget",
    "plot_sentences",
    "plot_transfer",
    "sentences_html",
]

SUPPORTED_COLOUR = OKABE_ITO[3]  # blue
UNSUPPORTED_COLOUR = OKABE_ITO[4]  # vermillion
MARKS = {True: "✓", False: "✗"}


# --- the context budget --------------------------------------------------------------------


def plot_budget(
    ks: Sequence[int],
    wanted: ArrayLike,
    kept: ArrayLike,
    budget: int,
    *,
    title: str = "",
    unit: str = "tokens",
) -> Any:
    """Source text against k: what the top-k would take, what the budget keeps.

    `wanted[i, j]` and `kept[i, j]`: the `unit`s of question i's top `ks[j]` chunks, all of
    them and those kept within `budget`. Thin lines: one question; bold: the mean.
    """
    wanted, kept = np.asarray(wanted, dtype=np.float64), np.asarray(kept, dtype=np.float64)
    for name, values in (("wanted", wanted), ("kept", kept)):
        if values.ndim != 2 or values.shape[1] != len(ks):
            raise ValueError(f"{name} must have shape (questions, {len(ks)}), got {values.shape}")
    fig, ax = _figure()
    series = (
        ("all top-k chunks", wanted, OKABE_ITO[0]),
        ("kept within budget", kept, OKABE_ITO[3]),
    )
    for label, values, colour in series:
        for row in values:
            ax.plot(ks, row, color=colour, lw=0.5, alpha=0.15)
        ax.plot(ks, values.mean(axis=0), color=colour, lw=2.5, marker="o", label=f"{label} (mean)")
    ax.axhline(budget, color="black", ls="--", lw=1.2, label=f"budget: {budget:,} {unit}")
    ax.set_xlabel("k (chunks retrieved)")
    ax.set_ylabel(f"source text in the prompt ({unit})")
    ax.set_xticks(list(ks))
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title(title, fontsize=10)
    return fig


# --- the abstention trade-off ---------------------------------------------------------------


def plot_abstention_curve(curve: Sequence[CurvePoint], now: CurvePoint, *, title: str = "") -> Any:
    """What moving the answerer's threshold does, with the threshold `now` marked.

    `curve`: `raglab.precision_abstention_curve` over a grid of thresholds; `now`: the
    same at one threshold (e.g. the rule's). Left: the shares against the threshold —
    a higher threshold declines more, so the answers given are more often right and more
    unanswerable questions are refused, but fewer answerable ones are answered. Right:
    precision against the share of questions declined, the trade-off in one line.
    """
    if not curve:
        raise ValueError("curve must hold at least one point")
    fig, (left, right) = _figure(2)
    x = [p.threshold for p in curve]
    lines = (
        ("precision of the answers given", "precision", OKABE_ITO[3], "-", "o"),
        ("answerable, answered right", "answered_correctly", OKABE_ITO[2], "--", "^"),
        ("unanswerable, declined", "abstention_on_unanswerable", OKABE_ITO[4], ":", "s"),
    )
    for label, name, colour, style, marker in lines:
        y = [_share(getattr(p, name)) for p in curve]
        left.plot(x, y, color=colour, ls=style, lw=2, label=label)
        left.plot([now.threshold], [_share(getattr(now, name))], marker, color=colour, ms=8)
    left.axvline(now.threshold, color="black", lw=1)
    left.set_xlabel("threshold (answer when probability >= it)")
    left.set_ylabel("share")
    left.set_ylim(-0.02, 1.05)
    declined = [1 - p.answered for p in curve]
    right.plot(declined, [_share(p.precision) for p in curve], color=OKABE_ITO[3], lw=2)
    right.plot([1 - now.answered], [_share(now.precision)], "*", color="black", ms=14)
    right.set_xlabel("share of all questions declined")
    right.set_ylabel("precision of the answers given")
    right.set_xlim(-0.02, 1.02)
    right.set_ylim(-0.02, 1.05)
    precision = "-" if now.precision is None else f"{now.precision:.2f}"
    summary = (
        f"threshold {now.threshold:.2f}: precision {precision}, answerable answered right "
        f"{now.answered_correctly:.2f}, unanswerable declined "
        f"{_share(now.abstention_on_unanswerable):.2f}"
    )
    fig.suptitle(f"{title}\n{summary}" if title else summary, fontsize=10)
    fig.legend(loc="outside lower center", ncols=3, fontsize=8)  # below both panels: covers no line
    return fig


def plot_transfer(
    curves: Mapping[str, Sequence[CurvePoint]], now: Mapping[str, CurvePoint], *, title: str = ""
) -> Any:
    """One rule on several corpora: abstention on unanswerable against false abstention.

    `curves[name]`: `raglab.precision_abstention_curve` over a grid of thresholds on the
    corpus `name`; `now[name]`: the same at the rule's threshold, marked. Each line is the
    rule's whole range on one corpus (a higher threshold moves up and to the right); a rule
    that transfers draws the same line everywhere, toward the top left corner (refuses the
    unanswerable questions, answers the answerable ones).
    """
    if not curves or set(curves) != set(now):
        raise ValueError("curves and now must name the same corpora, at least one")
    fig, ax = _figure()
    styles = zip(OKABE_ITO[3:] + OKABE_ITO[:3], ("-", "--", ":", "-."), ("o", "s", "^", "D"))
    for name, (colour, style, marker) in zip(sorted(curves), itertools.cycle(styles)):
        x = [_share(p.false_abstention) for p in curves[name]]
        y = [_share(p.abstention_on_unanswerable) for p in curves[name]]
        point = now[name]
        label = (
            f"{name}: false abstention {_share(point.false_abstention):.2f}, "
            f"unanswerable refused {_share(point.abstention_on_unanswerable):.2f}"
        )
        ax.plot(x, y, color=colour, ls=style, lw=2, label=label)
        ax.plot(
            [_share(point.false_abstention)],
            [_share(point.abstention_on_unanswerable)],
            marker,
            color=colour,
            ms=10,
            markeredgecolor="black",
        )
    ax.set_xlabel("false abstention (answerable questions refused)")
    ax.set_ylabel("abstention on unanswerable questions")
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.05)
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title(title, fontsize=10)
    return fig


def _share(value: float | None) -> float:
    """A share for plotting: None (nothing to measure) becomes a gap in the line."""
    return float("nan") if value is None else value


# --- faithfulness, sentence by sentence -----------------------------------------------------


def sentences_html(report: FaithfulnessReport) -> str:
    """The answer's sentences as HTML: ✓ on blue for supported, ✗ struck through on
    vermillion for unsupported, the reason in a tooltip and after the sentence.

    >>> from raglab.generate.faithfulness import SentenceCheck
    >>> sentences_html(FaithfulnessReport((SentenceCheck("A [1].", (1,), 1.0, True),)))[:60]
    '<div style="line-height:1.8"><span title="supported (100% of'
    """
    spans = []
    for s in report.sentences:
        colour = SUPPORTED_COLOUR if s.supported else UNSUPPORTED_COLOUR
        why = "supported" if s.supported else s.reason
        line = "none" if s.supported else "line-through"
        note = "" if s.supported else f' <i style="color:{colour}">({html.escape(s.reason)})</i>'
        spans.append(
            f'<span title="{html.escape(why, quote=True)} ({s.support:.0%} of its words cited)" '
            f'style="border-bottom:3px solid {colour};padding:1px 3px;text-decoration:{line}">'
            f"{MARKS[s.supported]} {html.escape(s.text)}</span>{note}"
        )
    return '<div style="line-height:1.8">' + " ".join(spans) + "</div>"


def sentences_text(report: FaithfulnessReport) -> str:
    """The same verdicts as plain text, one sentence a line (where HTML does not render)."""
    return "\n".join(
        f"{MARKS[s.supported]} {s.text}" + ("" if s.supported else f"   ← {s.reason}")
        for s in report.sentences
    )


@dataclass(frozen=True, slots=True)
class SentencesView:
    """A report shown in a notebook: HTML where it renders, plain text elsewhere."""

    report: FaithfulnessReport

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/html": sentences_html(self.report), "text/plain": sentences_text(self.report)}


def plot_sentences(reports: dict[str, FaithfulnessReport], *, width: int = 85) -> Any:
    """A static figure of several answers: each sentence boxed, ✓ in a solid blue frame or
    ✗ in a dashed vermillion one with the reason below it.

    `reports`: label -> report; the label heads its row. Long sentences wrap at `width`
    characters.
    """
    import textwrap

    fig, ax = _figure()
    ax.set_axis_off()
    y = 0.98
    step = 0.055
    for label, report in reports.items():
        ax.text(0.0, y, label, fontsize=9, fontweight="bold", va="top", transform=ax.transAxes)
        y -= step
        for s in report.sentences:
            colour = SUPPORTED_COLOUR if s.supported else UNSUPPORTED_COLOUR
            body = textwrap.fill(f"{MARKS[s.supported]} {s.text}", width)
            if not s.supported:
                body += "\n   (" + s.reason + ")"
            lines = body.count("\n") + 1
            box = {
                "boxstyle": "round,pad=0.25",
                "facecolor": "white",
                "edgecolor": colour,
                "linewidth": 1.5,
                "linestyle": "-" if s.supported else "--",
            }
            ax.text(
                0.02, y, body, fontsize=8, va="top", color="black", bbox=box, transform=ax.transAxes
            )
            y -= step * lines + 0.02
        y -= 0.02
    return fig
