"""Pictures of the answer side: the context budget, the abstention trade-off, faithfulness.

What is drawn is computed first, as plain data, and tested (`AbstentionCurve`,
`sentences_html`); the drawing functions only draw it, in the style of `raglab.viz`
(white, 7 × 4.5 in, Okabe & Ito's colour-blind-safe palette, PNG via `viz.show`).
Supported and unsupported sentences differ by mark (✓ / ✗) and line style as well as by
colour. matplotlib is imported inside the functions that draw.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from raglab.faithfulness import FaithfulnessReport
from raglab.viz import OKABE_ITO, _figure

__all__ = [
    "AbstentionCurve",
    "SentencesView",
    "abstention_curve",
    "plot_abstention_curve",
    "plot_budget",
    "plot_sentences",
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


@dataclass(frozen=True, slots=True, eq=False)
class AbstentionCurve:
    """What answering only when `confidence >= threshold` does, for every threshold.

    `thresholds` ascending; at each: `abstained`, the share of all questions declined;
    `precision`, the share of the answers given that are right (nan when none is given);
    `coverage`, the share of answerable questions answered right; `refused`, the share of
    unanswerable questions declined.
    """

    thresholds: np.ndarray
    abstained: np.ndarray
    precision: np.ndarray
    coverage: np.ndarray
    refused: np.ndarray

    def at(self, threshold: float) -> dict[str, float]:
        """The four shares when answering only at `confidence >= threshold`."""
        i = int(np.searchsorted(self.thresholds, threshold, side="left"))
        i = min(i, len(self.thresholds) - 1)
        return {
            "abstained": float(self.abstained[i]),
            "precision": float(self.precision[i]),
            "coverage": float(self.coverage[i]),
            "refused": float(self.refused[i]),
        }


def abstention_curve(
    confidence: ArrayLike, correct: ArrayLike, answerable: ArrayLike
) -> AbstentionCurve:
    """The trade-off of every threshold on `confidence`.

    One entry per question: `confidence`, the score an abstention rule compares with its
    threshold; `correct`, whether the answer given would be right (always False for an
    unanswerable question); `answerable`, whether the sources hold an answer. The
    thresholds are the distinct confidences plus one above them all (answer nothing).

    >>> c = abstention_curve([0.9, 0.2, 0.6], [True, False, False], [True, False, True])
    >>> c.thresholds.tolist(), c.precision.round(2).tolist()
    ([0.2, 0.6, 0.9, inf], [0.33, 0.5, 1.0, nan])
    """
    conf = np.asarray(confidence, dtype=np.float64)
    right = np.asarray(correct, dtype=bool)
    has_answer = np.asarray(answerable, dtype=bool)
    if not conf.shape == right.shape == has_answer.shape or conf.ndim != 1:
        raise ValueError(
            "confidence, correct and answerable must be 1-D and of one length "
            f"(got {conf.shape}, {right.shape}, {has_answer.shape})"
        )
    if np.any(right & ~has_answer):
        raise ValueError("correct must be False for every unanswerable question")
    thresholds = np.append(np.unique(conf), np.inf)
    answered = conf[None, :] >= thresholds[:, None]  # (thresholds, questions)
    given = answered.sum(axis=1)
    hits = (answered & right).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(given > 0, hits / np.maximum(given, 1), np.nan)
    n_answerable, n_unanswerable = has_answer.sum(), (~has_answer).sum()
    return AbstentionCurve(
        thresholds=thresholds,
        abstained=1 - given / max(len(conf), 1),
        precision=precision,
        coverage=hits / max(n_answerable, 1),
        refused=(~answered & ~has_answer).sum(axis=1) / max(n_unanswerable, 1),
    )


def plot_abstention_curve(curve: AbstentionCurve, threshold: float, *, title: str = "") -> Any:
    """The three shares against the threshold, with the chosen threshold marked.

    Moving the threshold right declines more questions: the answers given get more
    precise and more unanswerable questions are refused, but fewer answerable ones
    are answered.
    """
    fig, ax = _figure()
    x = curve.thresholds[:-1]  # the last threshold (inf) answers nothing: not drawable
    lines = (
        ("precision of the answers given", curve.precision, OKABE_ITO[3], "-"),
        ("answerable questions answered right", curve.coverage, OKABE_ITO[2], "--"),
        ("unanswerable questions declined", curve.refused, OKABE_ITO[4], ":"),
    )
    now = curve.at(threshold)
    for label, values, colour, style in lines:
        ax.step(x, values[:-1], where="post", color=colour, ls=style, lw=2, label=label)
    ax.axvline(threshold, color="black", lw=1.2)
    for key, colour in (("precision", OKABE_ITO[3]), ("coverage", OKABE_ITO[2])):
        ax.plot([threshold], [now[key]], "o", color=colour, ms=7)
    ax.plot([threshold], [now["refused"]], "s", color=OKABE_ITO[4], ms=7)
    ax.set_xlabel("threshold on the confidence (answer when confidence >= threshold)")
    ax.set_ylabel("share")
    ax.set_ylim(-0.02, 1.05)
    ax.legend(loc="lower left", fontsize=8)
    summary = (
        f"threshold {threshold:.2f}: precision {now['precision']:.2f}, "
        f"answered right {now['coverage']:.2f}, declined {now['refused']:.2f} of unanswerable"
    )
    ax.set_title(f"{title}\n{summary}" if title else summary, fontsize=10)
    return fig


# --- faithfulness, sentence by sentence -----------------------------------------------------


def sentences_html(report: FaithfulnessReport) -> str:
    """The answer's sentences as HTML: ✓ on blue for supported, ✗ struck through on
    vermillion for unsupported, the reason in a tooltip and after the sentence.

    >>> from raglab.faithfulness import SentenceCheck
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
