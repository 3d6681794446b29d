"""Measure, then change one thing at a time: one configuration's scores, and steps between them.

`measure` asks every labelled question through a configuration — a `search` and an
`answer` — and keeps each question's scores, so that two configurations measured on the
same questions can be compared question by question (`step`, with a paired bootstrap
interval for each difference, `raglab.evaluation.bootstrap`). Retrieval and answers are kept apart:

- retrieval: recall@5, MRR@5 and nDCG@10 over the answerable questions (`raglab.evaluation.runner`);
- answers: answered with a citation to a relevant document (answerable questions),
  abstention (unanswerable ones), faithfulness (the share of an answer's sentences its
  cited text supports, `raglab.generate.faithfulness`; 1.0 for an abstention, which claims nothing).

Latency is the wall time per question of search and answer together, in milliseconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from raglab.evaluation.bootstrap import Interval, bootstrap_ci, paired_difference
from raglab.evaluation.runner import Question, QuestionResult, evaluate
from raglab.generate.faithfulness import check_faithfulness
from raglab.records import Answer, Hit

RETRIEVAL_METRICS = ("recall@5", "mrr@5", "ndcg@10")
ANSWER_METRICS = ("answered_with_citation", "abstention", "faithfulness")
METRICS = RETRIEVAL_METRICS + ANSWER_METRICS
K = 5

Search = Callable[[Question, int], Sequence[Hit]]
Answerer = Callable[[Question, Sequence[Hit]], Answer]


@dataclass(frozen=True, slots=True)
class QuestionScores:
    """One question's scores; a metric that does not apply to it is None."""

    id: str
    kind: str
    values: dict[str, float | None]
    latency_ms: float


@dataclass(frozen=True, slots=True)
class Measurement:
    """Every question's scores under one configuration, named for the table."""

    name: str
    questions: tuple[QuestionScores, ...]

    def values(self, metric: str) -> list[float]:
        """The metric's value for every question it applies to, in question order."""
        if metric not in METRICS:
            raise ValueError(f"unknown metric {metric!r}; choose from: {', '.join(METRICS)}")
        return [v for q in self.questions if (v := q.values[metric]) is not None]

    def interval(self, metric: str) -> Interval:
        return bootstrap_ci(self.values(metric))

    @property
    def latency_ms(self) -> float:
        return sum(q.latency_ms for q in self.questions) / len(self.questions)


def _values(result: QuestionResult, answer: Answer | None) -> dict[str, float | None]:
    question: Question = result.question
    scored = result.recall_at_k is not None
    return {
        "recall@5": result.recall_at_k,
        "mrr@5": result.rr,
        "ndcg@10": result.ndcg_at_10,
        "answered_with_citation": (
            float(result.cited_relevant) if scored and result.cited_relevant is not None else None
        ),
        "abstention": float(answer.abstained) if answer and not question.answerable else None,
        "faithfulness": check_faithfulness(answer.text, answer.retrieved).score if answer else None,
    }


def measure(
    name: str, questions: Sequence[Question], *, search: Search, answer: Answerer | None = None
) -> Measurement:
    """Ask every question through `search` (and `answer`, given the top 5 hits) and score it.

    `search(question, depth)` returns the top `depth` hits for the question's own user;
    `answer(question, hits)` the answer to those hits. Without `answer` the answer metrics
    are None (retrieval only).
    """
    latency: dict[str, float] = {}
    answers: dict[str, Answer] = {}

    def timed_answer(q: Question) -> Answer:
        start = time.perf_counter()
        reply = answer(q, search(q, K))  # type: ignore[misc]
        latency[q.id] = (time.perf_counter() - start) * 1000
        answers[q.id] = reply
        return reply

    report = evaluate(questions, search=search, answer=timed_answer if answer else None, k=K)
    if answer is None:  # retrieval only: time the search alone
        for q in questions:
            start = time.perf_counter()
            search(q, K)
            latency[q.id] = (time.perf_counter() - start) * 1000
    return Measurement(
        name,
        tuple(
            QuestionScores(
                r.question.id,
                r.question.kind or "",
                _values(r, answers.get(r.question.id)),
                latency[r.question.id],
            )
            for r in report.per_question
        ),
    )


# --- steps: before and after ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Step:
    """One change, measured: its configuration's scores and the differences from `before`.

    `deltas[metric]` is the mean difference (after − before) with its paired interval;
    None for the first row (nothing before it) or a metric neither measured.
    """

    name: str
    after: Measurement
    before: str | None
    deltas: dict[str, Interval | None]


def step(after: Measurement, before: Measurement | None = None) -> Step:
    """The row for `after`, compared with `before` on the same questions."""
    deltas: dict[str, Interval | None] = dict.fromkeys(METRICS)
    if before is not None:
        if [q.id for q in before.questions] != [q.id for q in after.questions]:
            raise ValueError(
                f"{before.name!r} and {after.name!r} were measured on different questions"
            )
        for metric in METRICS:
            a, b = before.values(metric), after.values(metric)
            if a and len(a) == len(b):
                deltas[metric] = paired_difference(a, b)
    return Step(after.name, after, before.name if before else None, deltas)


def _cell(step: Step, metric: str) -> str:
    values = step.after.values(metric)
    if not values:
        return "-"
    delta = step.deltas[metric]
    if delta is None:
        return f"{sum(values) / len(values):.3f}"
    mark = "" if delta.holds_zero() else "*"  # the interval of the difference misses 0
    return f"{sum(values) / len(values):.3f} {delta.mean:+.3f}{mark}"


SHORT = {
    "recall@5": "recall@5",
    "mrr@5": "MRR@5",
    "ndcg@10": "nDCG@10",
    "answered_with_citation": "cited",
    "abstention": "abstain",
    "faithfulness": "faithful",
}


def format_steps(steps: Sequence[Step]) -> str:
    """The improvement table: one row per step, each metric's mean and its change from the
    step it was compared with (* when the 95 % interval of that change excludes 0);
    latency last (a timing, different on every run)."""
    header = ["step", *(SHORT[m] for m in METRICS), "latency"]
    rows = [
        [s.name, *(_cell(s, m) for m in METRICS), f"{s.after.latency_ms:.1f} ms"] for s in steps
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]

    def line(cells: list[str]) -> str:
        first = cells[0].ljust(widths[0])
        middle = [c.rjust(w) for c, w in zip(cells[1:-1], widths[1:])]
        return "  ".join([first, *middle, cells[-1]])  # latency unpadded: its width varies

    return "\n".join(line(r) for r in [header, *rows])


# --- by kind of question ---------------------------------------------------------------------


def by_kind(m: Measurement, metric: str) -> dict[str, Interval]:
    """The metric's mean and interval for each kind of question it applies to, by kind."""
    kinds = sorted({q.kind for q in m.questions})
    out = {}
    for kind in kinds:
        values = [v for q in m.questions if q.kind == kind and (v := q.values[metric]) is not None]
        if values:
            out[kind] = bootstrap_ci(values)
    return out
