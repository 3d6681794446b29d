"""Evaluation: how good are the rankings and the answers, measured over a labelled question set.

Two halves:

- **Metrics** over one ranked list of document ids with binary relevance (a document is
  relevant or it is not): `recall_at_k`, `mrr`, `ndcg_at_k`, `hit_rate_at_k`. Each is a
  small function with its reference, cross-checked against ranx in the tests.
- **The runner**: `load_questions` reads a JSONL question set, `evaluate` asks every question
  through a `search` and (optionally) an `answer` callable and averages the results into an
  `EvalReport`; `format_table` prints it.

Two rules shared by every metric:

- An empty relevant set raises `ValueError`: recall is undefined without a relevant document.
  The runner leaves such (unanswerable) questions out of these averages and scores them by
  abstention instead.
- A repeated id in `ranked` counts once, at its first rank; later repeats are dropped before
  scoring, so the documents behind them move up.

The runner scores documents, not chunks: a search returns chunks, and several chunks of one
document become one entry at the rank of its best chunk (`rank_documents`). It searches deep
enough to fill the cut-off with distinct documents, so a document cut into three chunks takes
one of the top k places, not three.
"""

from __future__ import annotations

import codecs
import difflib
import json
import math
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import Any

from raglab.records import DEFAULT_TENANT, Answer, Hit, Principal
from raglab.validation import check_int

# nDCG is always reported at 10, whatever k is: the depth most IR benchmarks (BEIR, MS MARCO)
# report, so figures stay comparable when k changes. Documents are therefore ranked to max(k, 10).
NDCG_DEPTH = 10

# The first search asks for this many chunks per document wanted; it goes deeper (twice as
# deep each time) only while the chunks found hold too few distinct documents. Only speed
# depends on it, not the figures (see `rank_documents`).
CHUNKS_PER_DOCUMENT = 3


# --- metrics over one ranked list --------------------------------------------------------------


def _check(relevant: Collection[str]) -> frozenset[str]:
    """Validate the relevant ids and return them as a set."""
    if isinstance(relevant, str):
        # A bare string is a collection of characters: almost certainly a mistake.
        raise TypeError(f"relevant must be a collection of ids, not a string (got {relevant!r})")
    relevant_set = frozenset(relevant)
    if not relevant_set:
        raise ValueError(
            "relevant must not be empty: recall is undefined without a relevant document "
            "(leave such questions out and score them by abstention)"
        )
    return relevant_set


def unique_in_order(ids: Iterable[str]) -> list[str]:
    """Drop repeated ids, keeping each at its first position.

    >>> unique_in_order(["a", "b", "a", "c", "b"])
    ['a', 'b', 'c']
    """
    return list(dict.fromkeys(ids))  # dicts keep insertion order


def recall_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """Share of the relevant documents found in the top k: |top k ∩ relevant| / |relevant|.

    Manning, Raghavan & Schütze, *Introduction to Information Retrieval* (2008), §8.3.

    >>> recall_at_k(["a", "b", "c"], {"b", "d"}, k=2)
    0.5
    """
    k = check_int("k", k, minimum=1)
    relevant_set = _check(relevant)
    top = unique_in_order(ranked)[:k]
    return sum(doc in relevant_set for doc in top) / len(relevant_set)


def hit_rate_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """1.0 when at least one relevant document is in the top k, else 0.0 (also "success@k").

    Averaged over questions it is the share of questions the retriever did not miss outright.

    >>> hit_rate_at_k(["a", "b", "c"], {"c"}, k=2)
    0.0
    """
    k = check_int("k", k, minimum=1)
    relevant_set = _check(relevant)
    top = unique_in_order(ranked)[:k]
    return 1.0 if any(doc in relevant_set for doc in top) else 0.0


def mrr(ranked: Sequence[str], relevant: Collection[str], k: int | None = None) -> float:
    """Reciprocal rank (1/rank, ranks from 1) of the first relevant document in the top k.

    0.0 when no relevant document is in the top k.

    This is one question's share of the Mean Reciprocal Rank (Voorhees, TREC-8 QA track, 1999);
    `evaluate` takes the mean, at its k. With `k=None` the whole list counts, as in ranx's
    "mrr"; with k, as in ranx's "mrr@k". Without a cut-off the figure depends on how deep the
    search happened to go, so the runner always gives one.

    >>> mrr(["a", "b", "c"], {"b", "d"})
    0.5
    >>> mrr(["a", "b", "c"], {"b", "d"}, k=1)
    0.0
    """
    relevant_set = _check(relevant)
    if k is not None:
        k = check_int("k", k, minimum=1)
    for rank, doc in enumerate(unique_in_order(ranked)[:k], start=1):
        if doc in relevant_set:
            return 1.0 / rank
    return 0.0


def _discount(rank: int) -> float:
    """The log2 position discount of DCG: a hit at rank r is worth 1 / log2(r + 1)."""
    return 1.0 / math.log2(rank + 1)


def ndcg_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """Normalised discounted cumulative gain at k, binary relevance, log2 discount.

    DCG@k = Σ over ranks r ≤ k holding a relevant document of 1 / log2(r + 1); the ideal DCG
    puts every relevant document first, so it sums the same discount over ranks
    1 .. min(k, |relevant|). nDCG@k = DCG@k / ideal DCG@k, between 0 and 1.
    Järvelin & Kekäläinen, "Cumulated gain-based evaluation of IR techniques", TOIS 2002
    (the formulation ranx calls "ndcg"; with 0/1 relevance Burges' 2^rel - 1 gives the same).

    >>> round(ndcg_at_k(["a", "b", "c"], {"b", "d"}, k=3), 4)
    0.3869
    """
    k = check_int("k", k, minimum=1)
    relevant_set = _check(relevant)
    top = unique_in_order(ranked)[:k]
    dcg = sum(_discount(r) for r, doc in enumerate(top, start=1) if doc in relevant_set)
    ideal = sum(_discount(r) for r in range(1, min(k, len(relevant_set)) + 1))
    return dcg / ideal


# --- the question set --------------------------------------------------------------------------


class QuestionSetError(ValueError):
    """A question-set file is malformed; the message names the file, the line and the reason."""

    def __init__(self, path: str | Path, line: int, reason: str) -> None:
        super().__init__(f"{path}, line {line}: {reason}")
        self.path = str(path)
        self.line = line
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Question:
    """One labelled question, as one line of a question-set JSONL file.

    `tenant` and `groups` say who asks (the principal the search runs as). `relevant_docs`
    are the ids of the documents that answer it ([] when it is unanswerable for this user);
    `leak_docs` are ids that must never reach this user. `kind` labels the question for the
    per-kind breakdown (e.g. "lookup", "multi-hop", "forbidden").
    Everything after `question` is keyword-only, because `answerable` has no default.
    """

    id: str
    question: str
    _: KW_ONLY
    tenant: str = DEFAULT_TENANT
    groups: tuple[str, ...] = ()
    relevant_docs: tuple[str, ...] = ()
    answerable: bool
    answer: str | None = None
    kind: str | None = None
    leak_docs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # Accept lists (as JSON gives them) but store tuples, so a Question stays immutable.
        for name in ("groups", "relevant_docs", "leak_docs"):
            object.__setattr__(self, name, tuple(getattr(self, name)))

    @property
    def asker(self) -> Principal:
        """The user this question is asked as: its tenant and groups, user id "eval:<id>"."""
        return Principal(f"eval:{self.id}", self.tenant, frozenset(self.groups))


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


# Field name -> (required?, the check, what the message says it must be).
_FIELDS: dict[str, tuple[bool, Callable[[Any], bool], str]] = {
    "id": (True, lambda v: isinstance(v, str) and v != "", "a non-empty string"),
    "question": (True, lambda v: isinstance(v, str) and v.strip() != "", "a non-empty string"),
    "tenant": (False, lambda v: isinstance(v, str) and v != "", "a non-empty string"),
    "groups": (False, _is_str_list, "a list of strings"),
    "relevant_docs": (False, _is_str_list, "a list of strings"),
    # subtle: bool is checked exactly, so 1/0 or "true" are refused rather than guessed at.
    "answerable": (True, lambda v: isinstance(v, bool), "true or false"),
    "answer": (False, lambda v: v is None or isinstance(v, str), "a string or null"),
    "kind": (False, lambda v: v is None or isinstance(v, str), "a string or null"),
    "leak_docs": (False, _is_str_list, "a list of strings"),
}


def _parse_question(line: str) -> Question:
    """One JSONL line -> Question. Raises ValueError with the reason only (no file, no line)."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as err:
        raise ValueError(f"bad JSON: {err.msg} (column {err.colno})") from None
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
    unknown = sorted(set(obj) - set(_FIELDS))
    if unknown:
        # Refused rather than ignored: a typo such as "leak_doc" would silently drop a check.
        raise ValueError(f"unknown field {unknown[0]!r} (known fields: {', '.join(_FIELDS)})")
    for name, (required, is_valid, must_be) in _FIELDS.items():
        if name not in obj:
            if required:
                raise ValueError(f"missing field {name!r}")
        elif not is_valid(obj[name]):
            raise ValueError(f"field {name!r} must be {must_be} (got {obj[name]!r})")
    if obj["answerable"] and not obj.get("relevant_docs"):
        raise ValueError(
            f"question {obj['id']!r} is answerable but has no relevant_docs "
            "(list the documents that answer it, or set answerable to false)"
        )
    return Question(**obj)


def load_questions(path: str | Path, *, doc_ids: Collection[str] | None = None) -> list[Question]:
    """Read a question set: JSONL, one question object a line, blank lines skipped.

    Raises `QuestionSetError` naming the file, the line number and the reason for bytes
    that are not UTF-8, bad JSON, a missing or unknown field, a wrong type, an answerable
    question with no relevant_docs, or a duplicate id. With `doc_ids` (the corpus's
    document ids, once it is known), a `relevant_docs` or `leak_docs` entry naming a
    document not among them is an error too: a typo would otherwise score a silent 0.
    """
    questions: list[Question] = []
    first_line_of: dict[str, int] = {}
    for number, line in _numbered_lines(path):
        if not line.strip():
            continue
        try:
            question = _parse_question(line)
            if doc_ids is not None:
                _check_doc_ids(question, doc_ids)
        except ValueError as err:
            raise QuestionSetError(path, number, str(err)) from None
        if question.id in first_line_of:
            first = first_line_of[question.id]
            reason = f"duplicate id {question.id!r} (first seen on line {first})"
            raise QuestionSetError(path, number, reason)
        first_line_of[question.id] = number
        questions.append(question)
    return questions


def _numbered_lines(path: str | Path) -> Iterable[tuple[int, str]]:
    """(line number, text) for each line of the file, each checked to be UTF-8 on its own."""
    data = Path(path).read_bytes().removeprefix(codecs.BOM_UTF8)
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            yield number, raw.decode("utf-8")
        except UnicodeDecodeError as err:
            reason = f"not valid UTF-8 (byte 0x{raw[err.start]:02x} at column {err.start + 1})"
            raise QuestionSetError(path, number, reason) from None


def _check_doc_ids(question: Question, doc_ids: Collection[str]) -> None:
    """Refuse a relevant_docs or leak_docs entry that names no document of the corpus."""
    for name in ("relevant_docs", "leak_docs"):
        for doc in getattr(question, name):
            if doc not in doc_ids:
                close = difflib.get_close_matches(doc, list(doc_ids), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ValueError(
                    f"{name} names {doc!r}, which is not a document of the corpus{hint}"
                )


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
    cites at least one of the question's relevant documents.
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

    def as_dict(self) -> dict[str, Any]:
        """The summary as plain JSON-ready values (per_question left out), in a fixed order."""
        summary = {
            "questions": self.questions,
            "answerable": self.answerable,
            "unanswerable": self.unanswerable,
            "k": self.k,
            "recall@k": self.recall_at_k,
            "mrr": self.mrr,
            "ndcg@10": self.ndcg_at_10,
            "hit_rate@k": self.hit_rate_at_k,
            "abstention_on_unanswerable": self.abstention_on_unanswerable,
            "false_abstention": self.false_abstention,
            "answered_with_relevant_citation": self.answered_with_relevant_citation,
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
        cited_relevant=None if reply is None else _cites_relevant(reply, relevant),
    )


def _cites_relevant(answer: Answer, relevant: Sequence[str]) -> bool:
    """True when `answer` answers (no abstention) and cites a document in `relevant`."""
    cited = _doc_ids(citation.hit for citation in answer.citations)
    return not answer.abstained and any(doc in relevant for doc in cited)


def _share(flags: Sequence[bool | None]) -> float | None:
    return _mean([1.0 if flag else 0.0 for flag in flags])


def _recall_by_kind(results: Sequence[QuestionResult]) -> tuple[tuple[str, float], ...]:
    by_kind: dict[str, list[float]] = {}
    for r in results:
        if r.recall_at_k is not None and r.question.kind is not None:
            by_kind.setdefault(r.question.kind, []).append(r.recall_at_k)
    return tuple((kind, math.fsum(v) / len(v)) for kind, v in sorted(by_kind.items()))


def _summarise(
    results: Sequence[QuestionResult], *, k: int, retriever: str, embedder: str
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
        leaks=sum(len(r.leaked) for r in results),
        citations_verified=_share([r.citations_verified for r in answered if not r.abstained]),
        retriever=retriever,
        embedder=embedder,
        recall_at_k_by_kind=_recall_by_kind(results),
        per_question=tuple(results),
        answered=bool(answered),
    )


def evaluate(
    questions: Sequence[Question],
    *,
    search: Callable[[Question, int], Sequence[Hit]],
    answer: Callable[[Question], Answer] | None = None,
    k: int = 5,
    retriever: str = "",
    embedder: str = "",
) -> EvalReport:
    """Ask every question and average the scores.

    `search(question, depth)` returns the top `depth` chunk hits for the question's principal
    (its tenant and groups). The runner ranks documents, not chunks: each document at its
    best chunk's rank, searched deep enough for max(k, 10) distinct documents, so recall@k,
    hit rate@k and MRR@k count k documents and nDCG@10 ten (`rank_documents`).
    `answer(question)` returns an Answer; without it (retrieval only) no answer is
    generated and the answer metrics are None. Every question is searched, answerable or
    not, so a leak is caught wherever it happens. `retriever` and `embedder` are labels
    copied into the report.
    """
    k = check_int("k", k, minimum=1)
    if not questions:
        raise ValueError("questions is empty: there is nothing to evaluate")
    results = [_score_question(q, search=search, answer=answer, k=k) for q in questions]
    return _summarise(results, k=k, retriever=retriever, embedder=embedder)


# --- the terminal table ------------------------------------------------------------------------


def _cell(value: float | int | None) -> str:
    """3 decimals for shares and means, integers as they are, n/a for an undefined average."""
    if value is None:
        return "n/a"
    if isinstance(value, int):
        return str(value)
    return f"{value:.3f}"


def format_table(report: EvalReport) -> str:
    """The report as aligned plain text: one metric a line, values right-aligned, 3 decimals."""
    k = report.k
    rows: list[tuple[str, str]] = [
        ("retriever", report.retriever or "-"),
        ("embedder", report.embedder or "-"),
        ("questions", _cell(report.questions)),
        ("  answerable", _cell(report.answerable)),
        ("  unanswerable", _cell(report.unanswerable)),
        (f"recall@{k}", _cell(report.recall_at_k)),
        (f"mrr@{k}", _cell(report.mrr)),
        (f"ndcg@{NDCG_DEPTH}", _cell(report.ndcg_at_10)),
        (f"hit_rate@{k}", _cell(report.hit_rate_at_k)),
        ("abstention_on_unanswerable", _cell(report.abstention_on_unanswerable)),
        ("false_abstention", _cell(report.false_abstention)),
        ("answered_with_relevant_citation", _cell(report.answered_with_relevant_citation)),
        ("citations_verified", _cell(report.citations_verified)),
        ("leaks", _cell(report.leaks)),
    ]
    if not report.answered:
        rows = [row for row in rows if row[0] not in ANSWER_METRICS]
    rows += [(f"  recall@{k} [{kind}]", _cell(value)) for kind, value in report.recall_at_k_by_kind]
    label_width = max(len(label) for label, _ in rows)
    value_width = max(len(value) for _, value in rows)
    return "\n".join(f"{label:<{label_width}}  {value:>{value_width}}" for label, value in rows)
