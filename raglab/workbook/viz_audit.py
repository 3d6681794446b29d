"""The same questions through two pipelines, side by side: answers, citations, leaks.

Notebook 10 ends by asking the assistant's pipeline and raglab the same labelled
questions (leak probes included) as the same users. `compare` computes what each did, as
plain data: the answer, the documents its valid markers cite, its markers that point at
no source, and the documents the asker must never see (`leak_docs`) that reached the
prompt anyway. `comparison_table` prints it; `summarise` counts it; `plot_comparison`
draws the counts, in the style of `raglab.workbook.viz` (Okabe & Ito's palette, PNG via `viz.show`).
matplotlib is imported inside the function that draws.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from raglab.evaluation.runner import Question
from raglab.records import Answer, Principal
from raglab.workbook.viz import OKABE_ITO, _figure

__all__ = ["Compared", "compare", "comparison_table", "plot_comparison", "summarise"]

Ask = Callable[[str, Principal], Answer]
"""A pipeline, as the comparison sees it: (question, asker) -> Answer."""

ANSWER_WIDTH = 60  # characters of an answer shown in the table


@dataclass(frozen=True, slots=True)
class Compared:
    """What one pipeline did with one question."""

    pipeline: str
    question: Question
    answer: str
    abstained: bool
    cited: tuple[str, ...]  # documents the valid markers point at, in order, once each
    invalid: tuple[int, ...]  # markers pointing at no source the model was given
    leaked: tuple[str, ...]  # the question's leak_docs that reached the prompt

    @property
    def asker(self) -> str:
        groups = ",".join(self.question.groups)
        return f"{self.question.tenant}" + (f" [{groups}]" if groups else "")


def _asker(question: Question) -> Principal:
    return Principal("u", question.tenant, frozenset(question.groups))


def compare(questions: Sequence[Question], pipelines: dict[str, Ask]) -> list[Compared]:
    """Each question through each pipeline, as its own asker; question-major order.

    >>> from raglab.records import Chunk, Citation, Hit
    >>> hit = Hit(Chunk("hr/pay.md", 0, "Pay is secret.", 0, 14), 1.0)
    >>> q = Question("q1", "What is my pay?", tenant="acme", answerable=False, leak_docs=("hr/pay.md",))
    >>> leaky = lambda text, asker: Answer("Secret [1]. [2]", (Citation(1, hit),), (hit,))
    >>> row = compare([q], {"leaky": leaky})[0]
    >>> row.cited, row.invalid, row.leaked
    (('hr/pay.md',), (2,), ('hr/pay.md',))
    """
    from raglab.generate.citations import verify_citations

    rows = []
    for question in questions:
        for name, ask in pipelines.items():
            answer = ask(question.question, _asker(question))
            report = verify_citations(answer.text, answer.retrieved)
            cited = tuple(dict.fromkeys(c.hit.chunk.doc_id for c in report.citations))
            seen = {hit.chunk.doc_id for hit in answer.retrieved}
            leaked = tuple(doc for doc in question.leak_docs if doc in seen)
            rows.append(
                Compared(
                    name, question, answer.text, answer.abstained, cited, report.invalid, leaked
                )
            )
    return rows


def _short(text: str, width: int = ANSWER_WIDTH) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def comparison_table(rows: Sequence[Compared]) -> str:
    """The rows as a plain-text table: one block per question, one line per pipeline.

    >>> q = Question("q1", "What is my pay?", tenant="acme", answerable=False)
    >>> print(comparison_table([Compared("a", q, "Secret.", False, ("pay.md",), (), ())]))
    q1 What is my pay?  (acme)
      a   Secret.
          cites pay.md
    """
    width = max((len(row.pipeline) for row in rows), default=0) + 2
    lines: list[str] = []
    previous = None
    for row in rows:
        if row.question.id != previous:
            lines += [""] if lines else []
            lines.append(f"{row.question.id} {row.question.question}  ({row.asker})")
            previous = row.question.id
        lines.append(f"  {row.pipeline:<{width}} {_short(row.answer)}")
        notes = [f"cites {', '.join(row.cited)}" if row.cited else "cites nothing"]
        notes += [f"markers pointing nowhere {list(row.invalid)}"] if row.invalid else []
        notes += [f"LEAKED {', '.join(row.leaked)}"] if row.leaked else []
        lines.append(f"  {'':<{width}} {'; '.join(notes)}")
    return "\n".join(lines)


COUNTS = (
    "answered",
    "answered, citing a relevant document",
    "answered with a marker pointing nowhere",
    "leak probes leaked",
)


def summarise(rows: Sequence[Compared]) -> dict[str, dict[str, int]]:
    """Per pipeline, in first-seen order: how many questions each count holds.

    >>> q = Question("q1", "?", answerable=False, leak_docs=("x.md",))
    >>> summarise([Compared("a", q, "No.", False, (), (3,), ("x.md",))])["a"]["leak probes leaked"]
    1
    """
    table: dict[str, dict[str, int]] = {}
    for row in rows:
        counts = table.setdefault(row.pipeline, dict.fromkeys(COUNTS, 0))
        counts["answered"] += not row.abstained
        relevant = set(row.cited) & set(row.question.relevant_docs)
        counts["answered, citing a relevant document"] += bool(relevant) and not row.abstained
        counts["answered with a marker pointing nowhere"] += bool(row.invalid)
        counts["leak probes leaked"] += bool(row.leaked)
    return table


def plot_comparison(rows: Sequence[Compared], *, title: str = "") -> Any:
    """Horizontal grouped bars: for each count of `summarise`, one bar per pipeline."""
    table = summarise(rows)
    if not table:
        raise ValueError("nothing to draw: no rows were compared")
    fig, ax = _figure()
    height = 0.8 / len(table)
    y = np.arange(len(COUNTS))
    for i, (name, colour) in enumerate(zip(table, OKABE_ITO)):
        values = [table[name][count] for count in COUNTS]
        offsets = y + (i - (len(table) - 1) / 2) * height
        ax.barh(offsets, values, height, color=colour, label=name)
        for yi, value in zip(offsets, values):
            ax.text(value + 0.2, yi, str(value), va="center", fontsize=8)
    ax.set_yticks(y, list(COUNTS))
    ax.invert_yaxis()
    ax.set_xlabel(f"questions (of {len({row.question.id for row in rows})})")
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title(title, fontsize=10)
    return fig
