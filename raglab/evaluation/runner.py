"""Evaluation: how good are the rankings and the answers, measured over a labelled question set.

Three parts, in three modules:

- **Metrics** over one ranked list of document ids with binary relevance (`raglab.evaluation.metrics`:
  `recall_at_k`, `mrr`, `ndcg_at_k`, `hit_rate_at_k`), cross-checked against ranx in the tests,
  and one over an answer's text (`holds_key_fact`: does it state the asked-for fact?).
- **The question set** (`raglab.evaluation.questions`): `load_questions` reads a checked JSONL file.
- **The runner** (here): `evaluate` asks every question through a `search` and
  (optionally) an `answer` callable and averages the results into an `EvalReport`;
  `format_table` prints it.

The runner scores documents, not chunks: a search returns chunks, and several chunks of one
document become one entry at the rank of its best chunk (`rank_documents`). It searches deep
enough to fill the cut-off with distinct documents, so a document cut into three chunks takes
one of the top k places, not three. Questions without a relevant document (unanswerable) are
left out of the retrieval averages and scored by abstention instead.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from raglab.evaluation.metrics import (
    hit_rate_at_k,
    holds_key_fact,
    mrr,
    ndcg_at_k,
    recall_at_k,
    unique_in_order,
)
from raglab.evaluation.questions import Question, QuestionSetError, load_questions
from raglab.progress import Progress, Reporter
from raglab.records import Answer, Hit
from raglab.validation import check_int

# The metrics and the question set live in their own modules; their names stay importable here.
__all__ = [
    "ANSWER_METRICS",
    "EvalReport",
    "Question",
    "QuestionResult",
    "QuestionSetError",
    "evaluate",
    "format_table",
    "hit_rate_at_k",
    "holds_key_fact",
    "load_questions",
    "mrr",
    "ndcg_at_k",
    "rank_documents",
    "recall_at_k",
    "unanswerable_by_refusal",
    "unique_in_order",
]

# nDCG is always reported at 10, whatever k is: the depth most IR benchmarks (BEIR, MS MARCO)
# report, so figures stay comparable when k changes. Documents are therefore ranked to max(k, 10).
NDCG_DEPTH = 10

# The first search asks for this many chunks per document wanted; it goes deeper (twice as
# deep each time) only while the chunks found hold too few distinct documents. Only speed
# depends on it, not the figures (see `rank_documents`).
CHUNKS_PER_DOCUMENT = 3


# --- the runner --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QuestionResult:
    """What one question scored, kept for drill-down.

    The retrieval figures are None when the question is not scored by retrieval (it is
    unanswerable, or has no relevant document). `ranked_doc_ids` are the first max(k, 10)
    distinct documents of the search, each at its best chunk's rank; `rr` is cut at k;
    `leaked` the question's `leak_docs` that reached the search results or the answer.
    `answer`, `abstained`, `citations_verified` and `cited_relevant` are None when no
    answer was generated; `cited_relevant` is True when the answer (not an abstention)
    cites at least one of the question's relevant documents. `key_fact` is True when it
    does and its text also states the question's key fact (`must_contain`); None when no
    answer was generated or the question has no key fact.
    """

    question: Question
    ranked_doc_ids: tuple[str, ...]
    recall_at_k: float | None
    rr: float | None
    ndcg_at_10: float | None
    hit: bool | None
    abstained: bool | None
    leaked: tuple[str, ...]
    citations_verified: bool | None
    answer: Answer | None
    cited_relevant: bool | None = None
    key_fact: bool | None = None


@dataclass(frozen=True, slots=True)
class EvalReport:
    """Averages over a question set. An average with nothing to average over is None.

    Retrieval averages (recall@k, MRR@k, nDCG@10, hit rate@k) are over documents, and cover
    only the answerable questions with relevant documents. `recall_at_k_by_kind` holds (kind,
    mean recall@k) pairs, sorted by kind, for the scored questions that have a kind.
    `answered` is False when no answer was generated (retrieval only): the answer metrics
    (abstention, false abstention, citations verified, answered with a relevant citation)
    are then None, and left out of `as_dict` and the table. `answered_with_relevant_citation`:
    the share of answerable questions answered with a citation to a relevant document —
    an answer that cites only the wrong documents does not count.
    `unanswerable_by_refusal` counts the questions labelled answerable whose every relevant
    document was refused at load: the index cannot answer them, so they are scored as
    unanswerable (abstaining is right) and counted here, apart from retrieval's misses.
    `answered_with_key_fact`: the share of the answerable questions that have a key fact
    (`Question.must_contain`) answered with a relevant citation and a text stating it — an
    answer that quotes the right document but not the asked-for fact does not count.
    """

    questions: int
    answerable: int
    unanswerable: int
    k: int
    recall_at_k: float | None
    mrr: float | None
    ndcg_at_10: float | None
    hit_rate_at_k: float | None
    abstention_on_unanswerable: float | None
    false_abstention: float | None
    leaks: int
    citations_verified: float | None
    retriever: str
    embedder: str
    recall_at_k_by_kind: tuple[tuple[str, float], ...]
    per_question: tuple[QuestionResult, ...]
    answered: bool = True
    answered_with_relevant_citation: float | None = None
    unanswerable_by_refusal: int = 0
    answered_with_key_fact: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """The summary as plain JSON-ready values (per_question left out), in a fixed order."""
        summary = {
            "questions": self.questions,
            "answerable": self.answerable,
            "unanswerable": self.unanswerable,
            "unanswerable_by_refusal": self.unanswerable_by_refusal,
            "k": self.k,
            "recall@k": self.recall_at_k,
            "mrr": self.mrr,
            "ndcg@10": self.ndcg_at_10,
            "hit_rate@k": self.hit_rate_at_k,
            "abstention_on_unanswerable": self.abstention_on_unanswerable,
            "false_abstention": self.false_abstention,
            "answered_with_relevant_citation": self.answered_with_relevant_citation,
            "answered_with_key_fact": self.answered_with_key_fact,
            "leaks": self.leaks,
            "citations_verified": self.citations_verified,
            "retriever": self.retriever,
            "embedder": self.embedder,
            "recall@k_by_kind": dict(self.recall_at_k_by_kind),
        }
        if not self.answered:
            for key in ANSWER_METRICS:
                del summary[key]
        return summary


ANSWER_METRICS = (
    "abstention_on_unanswerable",
    "false_abstention",
    "answered_with_relevant_citation",
    "answered_with_key_fact",
    "citations_verified",
)
"""The report's figures that need a generated answer (left out when retrieval only)."""


def _mean(values: Sequence[float]) -> float | None:
    """Arithmetic mean, None when there is nothing to average (never a misleading 0)."""
    return math.fsum(values) / len(values) if values else None


def _doc_ids(hits: Iterable[Hit]) -> list[str]:
    return [hit.chunk.doc_id for hit in hits]


def rank_documents(search: Callable[[int], Sequence[Hit]], n: int) -> tuple[str, ...]:
    """The first `n` distinct documents of a chunk ranking, each at its best chunk's rank.

    `search(depth)` returns the top `depth` chunks. A document cut into several chunks can
    fill several of those places, so the search starts `CHUNKS_PER_DOCUMENT` chunks deep
    per document wanted and goes twice as deep again while the chunks hold fewer than `n`
    documents and the search may have more (it returned as many as were asked for). Fewer
    than `n` come back only when the search has no more. For a ranking whose top `d` chunks
    are the first `d` of a deeper search (dense, bm25) the result is exact; hybrid fuses
    candidate lists whose length grows with the depth, so its order can shift slightly.

    >>> from raglab.records import Chunk, Hit
    >>> chunks = [Chunk("a.md", i, "x", i, i + 1) for i in range(3)] + [Chunk("b.md", 0, "y", 0, 1)]
    >>> rank_documents(lambda depth: [Hit(c, 1.0) for c in chunks[:depth]], 2)
    ('a.md', 'b.md')
    """
    depth = n * CHUNKS_PER_DOCUMENT
    while True:
        hits = search(depth)
        docs = unique_in_order(_doc_ids(hits))
        if len(docs) >= n or len(hits) < depth:
            return tuple(docs[:n])
        depth *= 2


def _leaked(question: Question, searched: Sequence[str], answer: Answer | None) -> tuple[str, ...]:
    """The question's leak_docs that reached the user: in the search results or the answer."""
    reached = set(searched)
    if answer is not None:
        reached.update(_doc_ids(answer.retrieved))
        reached.update(_doc_ids(citation.hit for citation in answer.citations))
    return tuple(doc for doc in unique_in_order(question.leak_docs) if doc in reached)


def _score_question(
    question: Question,
    *,
    search: Callable[[Question, int], Sequence[Hit]],
    answer: Callable[[Question], Answer] | None,
    k: int,
) -> QuestionResult:
    ranked = rank_documents(lambda depth: search(question, depth), max(k, NDCG_DEPTH))
    reply = None if answer is None else answer(question)
    scored = question.answerable and bool(question.relevant_docs)
    relevant = question.relevant_docs
    cited_relevant = None if reply is None else _cites_relevant(reply, relevant)
    return QuestionResult(
        question=question,
        ranked_doc_ids=ranked,
        recall_at_k=recall_at_k(ranked, relevant, k) if scored else None,
        rr=mrr(ranked, relevant, k) if scored else None,
        ndcg_at_10=ndcg_at_k(ranked, relevant, NDCG_DEPTH) if scored else None,
        hit=hit_rate_at_k(ranked, relevant, k) == 1.0 if scored else None,
        abstained=None if reply is None else reply.abstained,
        leaked=_leaked(question, ranked, reply),
        citations_verified=None if reply is None else reply.verified,
        answer=reply,
        cited_relevant=cited_relevant,
        key_fact=_states_key_fact(question, reply, cited_relevant),
    )


def _cites_relevant(answer: Answer, relevant: Sequence[str]) -> bool:
    """True when `answer` answers (no abstention) and cites a document in `relevant`."""
    cited = _doc_ids(citation.hit for citation in answer.citations)
    return not answer.abstained and any(doc in relevant for doc in cited)


def _states_key_fact(
    question: Question, answer: Answer | None, cited_relevant: bool | None
) -> bool | None:
    """True when `answer` cites a relevant document and its text holds the key fact."""
    if answer is None or not question.must_contain:
        return None
    return bool(cited_relevant) and holds_key_fact(answer.text, question.must_contain)


def _share(flags: Sequence[bool | None]) -> float | None:
    return _mean([1.0 if flag else 0.0 for flag in flags])


def _recall_by_kind(results: Sequence[QuestionResult]) -> tuple[tuple[str, float], ...]:
    by_kind: dict[str, list[float]] = {}
    for r in results:
        if r.recall_at_k is not None and r.question.kind is not None:
            by_kind.setdefault(r.question.kind, []).append(r.recall_at_k)
    return tuple((kind, math.fsum(v) / len(v)) for kind, v in sorted(by_kind.items()))


def unanswerable_by_refusal(
    questions: Sequence[Question], refused_docs: Collection[str]
) -> tuple[list[Question], int]:
    """The questions with every answerable one whose relevant documents were all refused at
    load relabelled unanswerable (the index cannot hold its answer), and how many those were.
    A question that keeps one loadable relevant document is left as it is."""
    relabelled, count = [], 0
    for question in questions:
        relevant = question.relevant_docs
        if question.answerable and relevant and all(doc in refused_docs for doc in relevant):
            question = replace(question, answerable=False, relevant_docs=(), must_contain=())
            count += 1
        relabelled.append(question)
    return relabelled, count


def _summarise(
    results: Sequence[QuestionResult],
    *,
    k: int,
    retriever: str,
    embedder: str,
    by_refusal: int = 0,
) -> EvalReport:
    scored = [r for r in results if r.recall_at_k is not None]
    answerable = [r for r in results if r.question.answerable]
    unanswerable = [r for r in results if not r.question.answerable]
    answered = [r for r in results if r.answer is not None]  # all, or none when retrieval only
    return EvalReport(
        questions=len(results),
        answerable=len(answerable),
        unanswerable=len(unanswerable),
        k=k,
        recall_at_k=_mean([r.recall_at_k for r in scored]),  # type: ignore[misc]
        mrr=_mean([r.rr for r in scored]),  # type: ignore[misc]
        ndcg_at_10=_mean([r.ndcg_at_10 for r in scored]),  # type: ignore[misc]
        hit_rate_at_k=_share([bool(r.hit) for r in scored]),
        abstention_on_unanswerable=_share(
            [r.abstained for r in answered if not r.question.answerable]
        ),
        false_abstention=_share([r.abstained for r in answered if r.question.answerable]),
        answered_with_relevant_citation=_share(
            [r.cited_relevant for r in answered if r.question.answerable]
        ),
        answered_with_key_fact=_share(
            [r.key_fact for r in answered if r.question.answerable and r.key_fact is not None]
        ),
        leaks=sum(len(r.leaked) for r in results),
        citations_verified=_share([r.citations_verified for r in answered if not r.abstained]),
        retriever=retriever,
        embedder=embedder,
        recall_at_k_by_kind=_recall_by_kind(results),
        per_question=tuple(results),
        answered=bool(answered),
        unanswerable_by_refusal=by_refusal,
    )


def evaluate(
    questions: Sequence[Question],
    *,
    search: Callable[[Question, int], Sequence[Hit]],
    answer: Callable[[Question], Answer] | None = None,
    k: int = 5,
    retriever: str = "",
    embedder: str = "",
    refused_docs: Collection[str] = (),
    progress: Reporter | None = None,
) -> EvalReport:
    """Ask every question and average the scores.

    `search(question, depth)` returns the top `depth` chunk hits for the question's principal
    (its tenant and groups). The runner ranks documents, not chunks: each document at its
    best chunk's rank, searched deep enough for max(k, 10) distinct documents, so recall@k,
    hit rate@k and MRR@k count k documents and nDCG@10 ten (`rank_documents`).
    `answer(question)` returns an Answer; without it (retrieval only) no answer is
    generated and the answer metrics are None. Every question is searched, answerable or
    not, so a leak is caught wherever it happens. `retriever` and `embedder` are labels
    copied into the report. `refused_docs` are the ids of documents the loader refused: a
    question that can only be answered from them counts as unanswerable by refusal.
    `progress` hears after each question how many are done (`raglab.progress`).
    """
    k = check_int("k", k, minimum=1)
    if not questions:
        raise ValueError("questions is empty: there is nothing to evaluate")
    questions, by_refusal = unanswerable_by_refusal(questions, refused_docs)
    results = []
    for q in questions:
        results.append(_score_question(q, search=search, answer=answer, k=k))
        if progress is not None:
            progress(Progress("evaluating", len(results), len(questions), "questions"))
    return _summarise(results, k=k, retriever=retriever, embedder=embedder, by_refusal=by_refusal)


# --- the terminal table ------------------------------------------------------------------------


def _cell(value: float | int | None) -> str:
    """3 decimals for shares and means, integers as they are, n/a for an undefined average."""
    if value is None:
        return "n/a"
    if isinstance(value, int):
        return str(value)
    return f"{value:.3f}"


def _refusal_row(report: EvalReport) -> list[tuple[str, str]]:
    """The count of questions unanswerable by refusal, as a row only when there are some."""
    count = report.unanswerable_by_refusal
    return [("    of which by refusal at load", _cell(count))] if count else []


def format_table(report: EvalReport) -> str:
    """The report as aligned plain text: one metric a line, values right-aligned, 3 decimals."""
    k = report.k
    rows: list[tuple[str, str]] = [
        ("retriever", report.retriever or "-"),
        ("embedder", report.embedder or "-"),
        ("questions", _cell(report.questions)),
        ("  answerable", _cell(report.answerable)),
        ("  unanswerable", _cell(report.unanswerable)),
        *_refusal_row(report),
        (f"recall@{k}", _cell(report.recall_at_k)),
        (f"mrr@{k}", _cell(report.mrr)),
        (f"ndcg@{NDCG_DEPTH}", _cell(report.ndcg_at_10)),
        (f"hit_rate@{k}", _cell(report.hit_rate_at_k)),
        ("abstention_on_unanswerable", _cell(report.abstention_on_unanswerable)),
        ("false_abstention", _cell(report.false_abstention)),
        ("answered_with_relevant_citation", _cell(report.answered_with_relevant_citation)),
        ("answered_with_key_fact", _cell(report.answered_with_key_fact)),
        ("citations_verified", _cell(report.citations_verified)),
        ("leaks", _cell(report.leaks)),
    ]
    if not report.answered:
        rows = [row for row in rows if row[0] not in ANSWER_METRICS]
    rows += [(f"  recall@{k} [{kind}]", _cell(value)) for kind, value in report.recall_at_k_by_kind]
    label_width = max(len(label) for label, _ in rows)
    value_width = max(len(value) for _, value in rows)
    return "\n".join(f"{label:<{label_width}}  {value:>{value_width}}" for label, value in rows)
