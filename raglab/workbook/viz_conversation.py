"""Notebook 12's picture: a conversation's turns, and what each read from the documents and
from the history.

One row per turn. Left, the documents: a column per document any turn retrieved, a filled
square where the answer cited it, a hollow one where it was only retrieved. Right, the
history: a column per earlier turn, a dot where it was shown as context. The data is
computed first (`turn_views`) and printed as text too (`conversation_table`), so the
figure is never the only way to read it. matplotlib is imported inside `plot_conversation`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from raglab.conversation.chat import ChatTurn
from raglab.workbook.viz import OKABE_ITO, _figure

__all__ = ["TurnView", "conversation_table", "plot_conversation", "turn_views"]

CITED, RETRIEVED, CONTEXT = OKABE_ITO[4], OKABE_ITO[1], OKABE_ITO[3]  # vermillion, sky, blue


@dataclass(frozen=True, slots=True)
class TurnView:
    """One turn as drawn: its question, what was searched, the documents it retrieved
    (doc id, cited?) in rank order, and the numbers of the earlier turns shown as context."""

    n: int
    question: str
    standalone: str
    documents: tuple[tuple[str, bool], ...]
    history: tuple[int, ...]


def turn_views(turns: Sequence[ChatTurn]) -> list[TurnView]:
    """What to draw of each turn: one entry per document (its best chunk), cited or not."""
    views = []
    for turn in turns:
        cited = {c.hit.chunk.doc_id for c in turn.answer.citations}
        documents = dict.fromkeys(hit.chunk.doc_id for hit in turn.answer.retrieved)
        views.append(
            TurnView(
                turn.turn.n,
                turn.rewrite.question,
                turn.rewrite.standalone,
                tuple((doc, doc in cited) for doc in documents),
                tuple(h.turn.n for h in turn.history),
            )
        )
    return views


def conversation_table(views: Sequence[TurnView]) -> str:
    """The figure as text: each turn, what it searched, its documents (* cited) and history.

    >>> print(conversation_table([TurnView(2, "And?", "And? (leave)", (("a.md", True),), (1,))]))
    turn 2: And?
      searched: And? (leave)
      documents: a.md*
      history:   turn 1
    """
    lines = []
    for view in views:
        lines.append(f"turn {view.n}: {view.question}")
        if view.standalone != view.question:
            lines.append(f"  searched: {view.standalone}")
        docs = ", ".join(f"{doc}{'*' if cited else ''}" for doc, cited in view.documents)
        lines.append(f"  documents: {docs or '(none)'}")
        lines.append(f"  history:   {', '.join(f'turn {n}' for n in view.history) or '(none)'}")
    return "\n".join(lines)


def plot_conversation(views: Sequence[TurnView], *, title: str = "") -> Any:
    """The turns as rows; documents retrieved (■ cited, □ only retrieved) and history shown."""
    from matplotlib.lines import Line2D

    documents = sorted({doc for v in views for doc, _ in v.documents})
    earlier = sorted({n for v in views for n in v.history})
    fig, (left, right) = _figure(2, width_ratios=[max(len(documents), 1), max(len(earlier), 1) + 1])
    rows = {v.n: i for i, v in enumerate(views)}
    for view in views:
        y = rows[view.n]
        for doc, cited in view.documents:
            x = documents.index(doc)
            left.scatter([x], [y], marker="s", s=140, color=CITED if cited else "white",
                         edgecolors=CITED if cited else RETRIEVED, linewidths=2)  # fmt: skip
        right.scatter([earlier.index(n) for n in view.history], [y] * len(view.history),
                      marker="o", s=120, color=CONTEXT)  # fmt: skip
    labels = [f"{v.n}: {_short(v.question, 34)}" for v in views]
    for ax, columns in ((left, documents), (right, [f"turn {n}" for n in earlier])):
        ax.set_yticks(range(len(views)), labels if ax is left else [""] * len(views), fontsize=8)
        ax.set_xticks(range(len(columns)), [_short(c, 28) for c in columns], rotation=40,
                      ha="right", fontsize=7)  # fmt: skip
        ax.set_xlim(-0.7, max(len(columns), 1) - 0.3)
        ax.set_ylim(len(views) - 0.5, -0.5)  # the first turn on top
        ax.grid(alpha=0.3)
    left.set_title("documents (the sources)", fontsize=9)
    right.set_title("history (context, never cited)", fontsize=9)
    left.legend(
        handles=[
            Line2D([], [], marker="s", ls="", color=CITED, markersize=9, label="cited"),
            Line2D(
                [],
                [],
                marker="s",
                ls="",
                markerfacecolor="white",
                markeredgecolor=RETRIEVED,
                markeredgewidth=2,
                markersize=9,
                label="retrieved, not cited",
            ),
        ],
        fontsize=7,
        loc="lower left",
    )
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
