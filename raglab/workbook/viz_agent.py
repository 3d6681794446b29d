"""The agent's trace as a picture: each step's query, what it found, why it stopped.

What is drawn is computed first, as plain data (`trace_rows`), and tested; `plot_trace`
only draws it, in the style of `raglab.workbook.viz` (white, Okabe & Ito's palette, PNG
via `viz.show`): one row per step, the call and the planner's reason on the left, the
documents it found on the right (filled: new to the run; hollow: found before; a thick
frame: a document the question needs, when the caller says which), and the stop reason
last. `TraceView` shows the same rows as HTML, with plain text where HTML does not render.
matplotlib is imported inside the functions that draw.
"""

from __future__ import annotations

import html
import textwrap
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from raglab.agent.trace import AgentRun
from raglab.workbook.viz import OKABE_ITO, _figure

__all__ = ["TraceRow", "TraceView", "plot_trace", "trace_rows", "trace_text"]

NEW_COLOUR = OKABE_ITO[1]  # sky blue: found for the first time
NEEDED_COLOUR = OKABE_ITO[2]  # bluish green: a document the question needs
STOP_COLOUR = "black"
LEGEND = "filled: new to the run · white: found before · green frame: needed"


@dataclass(frozen=True, slots=True)
class TraceRow:
    """One step as drawn: the call, why, and each document found (id, new?, needed?)."""

    n: int
    call: str
    why: str
    found: tuple[tuple[str, bool, bool], ...]


def trace_rows(run: AgentRun, needed: Collection[str] = ()) -> list[TraceRow]:
    """The steps of `run` as rows; a document is new at the first step that found it."""
    seen: set[str] = set()
    rows = []
    for step in run.steps:
        a = step.action
        call = "documents()" if a.tool == "documents" else f"{a.tool}({a.argument!r})"
        found = tuple((doc, doc not in seen, doc in needed) for doc in step.found)
        seen.update(step.found)
        rows.append(TraceRow(step.n, call, a.why, found))
    return rows


def trace_text(run: AgentRun, needed: Collection[str] = ()) -> str:
    """The trace as plain text: `+` new, `=` found before, `*` needed."""
    lines = []
    for row in trace_rows(run, needed):
        lines.append(f"{row.n}. {row.call}  ({row.why})")
        for doc, new, need in row.found:
            lines.append(f"   {'+' if new else '='}{'*' if need else ' '} {doc}")
    lines.append(f"stopped: {run.stop_reason}")
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class TraceView:
    """A trace shown in a notebook: HTML where it renders, plain text elsewhere."""

    run: AgentRun
    needed: tuple[str, ...] = ()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        items = []
        for row in trace_rows(self.run, self.needed):
            docs = "".join(
                f'<li style="color:{NEEDED_COLOUR if need else "inherit"}">'
                f"{'new' if new else 'again'}: {html.escape(doc)}</li>"
                for doc, new, need in row.found
            )
            items.append(
                f"<li><code>{html.escape(row.call)}</code> — {html.escape(row.why)}<ul>{docs}</ul></li>"
            )
        stop = f"<p><b>stopped:</b> {html.escape(self.run.stop_reason)}</p>"
        return {
            "text/html": f"<ol>{''.join(items)}</ol>{stop}",
            "text/plain": trace_text(self.run, self.needed),
        }


def plot_trace(run: AgentRun, needed: Collection[str] = (), *, title: str = "") -> Any:
    """The trace as a figure: a row per step (call and reason | documents found), then the
    stop reason."""
    rows = trace_rows(run, needed)
    fig, ax = _figure()
    ax.set_axis_off()
    height = len(rows) + 1
    for i, row in enumerate(rows):
        y = 1 - (i + 0.5) / height
        call = textwrap.fill(f"{row.n}. {row.call}", 46)
        ax.text(0.0, y + 0.02, call, fontsize=7.5, va="center", family="monospace",
                transform=ax.transAxes)  # fmt: skip
        ax.text(0.0, y - 0.06, textwrap.shorten(row.why, 70), fontsize=7, va="center",
                style="italic", color="#555555", transform=ax.transAxes)  # fmt: skip
        line = 1 / height / 4  # three lines of two documents fit in a row
        for j, (doc, new, need) in enumerate(row.found[:6]):
            box = {
                "boxstyle": "round,pad=0.2",
                "facecolor": NEW_COLOUR if new else "white",
                "edgecolor": NEEDED_COLOUR if need else "#777777",
                "linewidth": 2.5 if need else 0.8,
            }
            ax.text(0.56 + 0.23 * (j % 2), y + line * (1 - j // 2), doc.rsplit("/", 1)[-1],
                    fontsize=6.5, va="center", bbox=box, transform=ax.transAxes)  # fmt: skip
    ax.text(0.0, 0.5 / height, textwrap.fill(f"stopped: {run.stop_reason}", 90), fontsize=8,
            fontweight="bold", color=STOP_COLOUR, va="center", transform=ax.transAxes)  # fmt: skip
    ax.text(0.56, 0.5 / height - 0.06, LEGEND, fontsize=6.5, color="#555555", va="center",
            transform=ax.transAxes)  # fmt: skip
    ax.set_title(title or textwrap.shorten(run.question, 90), fontsize=9)
    return fig
