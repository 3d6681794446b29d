"""Long context against RAG on labelled questions, and what fine-tuning cannot do here.

Four measurements over a question set (`raglab.longcontext` builds the prompts):

- `compare`: each question answered from the whole readable corpus in one prompt and from
  the retrieved chunks (`raglab.ask`): tokens in and out, the cost of 1,000 questions at the
  learner's prices, latency, answered with a relevant citation, abstention on the
  unanswerable, the key fact, leaks;
- `position_sweep`: the relevant document moved through the long prompt (lost in the middle);
- `leak_demo`: the whole corpus pasted for every reader, against the principal's own documents;
- `fine_tune_demo`: a model trained on the questions' answers: who it tells, what it cites,
  and what it says after a document changes.
"""

from __future__ import annotations

import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from raglab.embed.embedders import embedder as make_embedder
from raglab.embed.tokens import TokenCount, wordpiece_counter
from raglab.evaluation.metrics import holds_key_fact
from raglab.evaluation.questions import Question
from raglab.generate.generation import Generator
from raglab.generate.llm_env import model_from_env
from raglab.generate.prompting import Prompt, build_prompt
from raglab.ingest.chunking import Chunker
from raglab.longcontext.cost import Prices, cost_per_question
from raglab.longcontext.finetuned import fine_tune
from raglab.longcontext.growth import grown
from raglab.longcontext.leaks import leak_count, pasted_whole_corpus
from raglab.longcontext.position import DEFAULT_POSITIONS, move_to
from raglab.longcontext.whole_corpus import (
    DEFAULT_MAX_TOKENS,
    answer_long_prompt,
    default_generator,
    long_context_prompt,
    long_context_sources,
)
from raglab.pipeline import Index, ask
from raglab.records import Answer, Document, Hit, Principal
from raglab.store.indexing import sync
from raglab.store.memory import MemoryStore

LONG, RAG = "long context", "rag"


# --- one question, two ways ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Outcome:
    """One question answered one way: its tokens, its time and its answer."""

    question: Question
    method: str
    input_tokens: int
    output_tokens: int
    seconds: float
    answer: Answer

    @property
    def cited_docs(self) -> set[str]:
        return {c.hit.chunk.doc_id for c in self.answer.citations}

    @property
    def answered_relevant(self) -> bool | None:
        """Answerable: answered (not abstained) with a citation to a relevant document."""
        if not self.question.answerable:
            return None
        return not self.answer.abstained and bool(
            self.cited_docs & set(self.question.relevant_docs)
        )

    @property
    def abstained_right(self) -> bool | None:
        """Unanswerable: did it abstain?"""
        return None if self.question.answerable else self.answer.abstained

    @property
    def key_fact(self) -> bool | None:
        """Answerable with a key fact: answered with a relevant citation and stating the fact."""
        if not self.question.answerable or not self.question.must_contain:
            return None
        return bool(self.answered_relevant) and holds_key_fact(
            self.answer.text, self.question.must_contain
        )

    @property
    def leaked(self) -> int:
        """The question's `leak_docs` that reached the prompt."""
        shown = {hit.chunk.doc_id for hit in self.answer.retrieved}
        return len(shown & set(self.question.leak_docs))


def prompt_tokens(prompt: Prompt, count: TokenCount) -> int:
    """What a model reads: the system and the user message."""
    return count(prompt.system) + count(prompt.user)


def rag_outcome(question: Question, index: Index, count: TokenCount, **options: object) -> Outcome:
    """`question` through `raglab.ask` (its defaults, or `options`), timed."""
    start = time.perf_counter()
    answer = ask(question.question, index, question.asker, **options)  # type: ignore[arg-type]
    seconds = time.perf_counter() - start
    prompt = build_prompt(question.question, answer.retrieved)  # the prompt ask built: it fit
    tokens = prompt_tokens(prompt, count)
    return Outcome(question, RAG, tokens, count(answer.text), seconds, answer)


def long_outcome(
    question: Question,
    documents: Sequence[Document],
    count: TokenCount,
    *,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    generator: Generator | None = None,
) -> Outcome:
    """`question` answered from every document its asker may read, timed (budget check included)."""
    start = time.perf_counter()
    sources = long_context_sources(documents, question.asker)
    long = long_context_prompt(
        question.question, sources, max_tokens=max_tokens, count_tokens=count
    )
    answer = answer_long_prompt(long, generator or default_generator())
    seconds = time.perf_counter() - start
    return Outcome(question, LONG, long.tokens, count(answer.text), seconds, answer)


# --- the table ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MethodRow:
    """One method's figures over a question set (means per question; None: nothing to average)."""

    method: str
    questions: int
    input_tokens: float
    output_tokens: float
    cost_per_1000: float
    latency_ms: float
    answered_with_relevant_citation: float | None
    abstention_on_unanswerable: float | None
    key_fact: float | None
    leaks: int


def share(values: Sequence[bool | None]) -> float | None:
    """The share of True among the values that are not None."""
    scored = [v for v in values if v is not None]
    return sum(scored) / len(scored) if scored else None


def summarise(outcomes: Sequence[Outcome], prices: Prices) -> MethodRow:
    """The figures of one method's outcomes; cost = mean tokens in and out × 1,000 questions."""
    if not outcomes:
        raise ValueError("outcomes must not be empty")
    tokens_in = statistics.fmean(o.input_tokens for o in outcomes)
    tokens_out = statistics.fmean(o.output_tokens for o in outcomes)
    return MethodRow(
        method=outcomes[0].method,
        questions=len(outcomes),
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        cost_per_1000=1000 * cost_per_question(tokens_in, tokens_out, prices),
        latency_ms=1000 * statistics.median(o.seconds for o in outcomes),
        answered_with_relevant_citation=share([o.answered_relevant for o in outcomes]),
        abstention_on_unanswerable=share([o.abstained_right for o in outcomes]),
        key_fact=share([o.key_fact for o in outcomes]),
        leaks=sum(o.leaked for o in outcomes),
    )


def compare(
    questions: Sequence[Question],
    index: Index,
    documents: Sequence[Document],
    *,
    prices: Prices,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    count_tokens: TokenCount | None = None,
    generator: Generator | None = None,
) -> tuple[MethodRow, MethodRow]:
    """Long context and RAG on every question: (long context row, RAG row).

    `index` holds the same `documents` (RAG retrieves from it); `count_tokens` defaults to
    MiniLM's WordPiece; `generator` answers the long prompts (default: the offline answerer
    scoring with the hashing embedder; RAG's answerer uses the index's embedder, as `ask` does).
    """
    count = count_tokens or wordpiece_counter()
    generator = generator or default_generator()
    long = [
        long_outcome(q, documents, count, max_tokens=max_tokens, generator=generator)
        for q in questions
    ]
    rag = [rag_outcome(q, index, count) for q in questions]
    return summarise(long, prices), summarise(rag, prices)


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def format_table(rows: Sequence[MethodRow], prices: Prices) -> str:
    """The comparison as a plain-text table, the prices in its title."""
    title = (
        f"per question, and per 1,000 questions at {prices.input_per_million:g} per million "
        f"input tokens and {prices.output_per_million:g} per million output tokens"
    )
    header = (
        f"{'method':<13}{'tokens in':>10}{'out':>6}{'cost/1000':>11}{'latency':>10}"
        f"{'cited':>8}{'abstain':>9}{'key fact':>9}{'leaks':>7}"
    )
    lines = [title, header]
    for r in rows:
        lines.append(
            f"{r.method:<13}{r.input_tokens:>10,.0f}{r.output_tokens:>6.0f}{r.cost_per_1000:>11.2f}"
            f"{r.latency_ms:>8.1f}ms{_percent(r.answered_with_relevant_citation):>8}"
            f"{_percent(r.abstention_on_unanswerable):>9}{_percent(r.key_fact):>9}{r.leaks:>7}"
        )
    return "\n".join(lines)


# --- as the corpus grows -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GrowthPoint:
    """Long context and RAG on one grown corpus: `copies` of the filler added, `documents`
    in all, and whether the long prompt fits the budget (`fits`: its mean over the questions,
    which differ by a question's few tokens). Over the budget a model could not read it; the
    offline answerer can, so its quality is still shown."""

    copies: int
    documents: int
    fits: bool
    long: MethodRow
    rag: MethodRow


def growth_curve(
    questions: Sequence[Question],
    documents: Sequence[Document],
    filler: Sequence[Document],
    *,
    tenant: str,
    copies: Sequence[int],
    prices: Prices,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    count_tokens: TokenCount | None = None,
) -> list[GrowthPoint]:
    """The questions of `tenant`'s users on the corpus grown by each number of `copies`."""
    count = count_tokens or wordpiece_counter()
    generator = default_generator()
    asked = [q for q in questions if q.tenant == tenant]
    points = []
    for n in copies:
        docs = grown(documents, filler, copies=n, tenant=tenant)
        store = MemoryStore()
        report = sync(store, docs, chunker=Chunker(), embedder=make_embedder("hashing"))
        index = Index(store, report.embedder, report)
        long = [
            long_outcome(q, docs, count, max_tokens=sys.maxsize, generator=generator) for q in asked
        ]
        rag = [rag_outcome(q, index, count) for q in asked]
        row = summarise(long, prices)
        fits = row.input_tokens <= max_tokens
        points.append(GrowthPoint(n, len(docs), fits, row, summarise(rag, prices)))
    return points


# --- lost in the middle -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PositionRow:
    """At one relative position of the relevant document: how many questions, and the shares
    answered with a relevant citation and with the key fact."""

    position: float
    questions: int
    answered_with_relevant_citation: float | None
    key_fact: float | None


def single_document_questions(questions: Sequence[Question]) -> list[Question]:
    """The answerable questions that one document answers: the ones a position can move."""
    return [q for q in questions if q.answerable and len(q.relevant_docs) == 1]


def position_sweep(
    questions: Sequence[Question],
    documents: Sequence[Document],
    *,
    positions: Sequence[float] = DEFAULT_POSITIONS,
    generator: Generator | None = None,
    count_tokens: TokenCount | None = None,
    max_tokens: int = DEFAULT_MAX_TOKENS,
) -> list[PositionRow]:
    """Each single-document question asked with its document moved to each position."""
    count = count_tokens or wordpiece_counter()
    generator = generator or default_generator()
    asked = single_document_questions(questions)
    rows = []
    for position in positions:
        outcomes = []
        for q in asked:
            sources = move_to(
                long_context_sources(documents, q.asker), q.relevant_docs[0], position
            )
            long = long_context_prompt(
                q.question, sources, max_tokens=max_tokens, count_tokens=count
            )
            answer = answer_long_prompt(long, generator)
            outcomes.append(Outcome(q, LONG, long.tokens, 0, 0.0, answer))
        rows.append(
            PositionRow(
                position,
                len(outcomes),
                share([o.answered_relevant for o in outcomes]),
                share([o.key_fact for o in outcomes]),
            )
        )
    return rows


def configured_model() -> Generator | None:
    """The model in RAGLAB_LLM_URL (model RAGLAB_LLM_MODEL, key RAGLAB_API_KEY), as every
    model step reads it; None offline, so a caller skips the model's run cleanly."""
    return model_from_env()


# --- access: what you paste is what the model can see --------------------------------------


@dataclass(frozen=True, slots=True)
class LeakRow:
    """One way of building the long prompt, over the questions asked: forbidden documents and
    sentences shown (totals over the questions), and answers citing a forbidden document."""

    prompt: str
    questions: int
    forbidden_documents: int
    forbidden_sentences: int
    answers_citing_forbidden: int


def leak_demo(
    questions: Sequence[Question],
    documents: Sequence[Document],
    *,
    generator: Generator | None = None,
    count_tokens: TokenCount | None = None,
) -> tuple[LeakRow, LeakRow]:
    """The whole corpus pasted for every asker, against each asker's own documents."""
    count = count_tokens or wordpiece_counter()
    generator = generator or default_generator()
    ways: dict[str, Callable[[Principal], tuple[Hit, ...]]] = {
        "whole corpus pasted": lambda _: pasted_whole_corpus(documents),
        "principal-filtered": lambda principal: long_context_sources(documents, principal),
    }
    rows = []
    for name, sources_for in ways.items():
        counts = []
        for q in questions:
            sources = sources_for(q.asker)
            long = long_context_prompt(q.question, sources, count_tokens=count)
            answer = answer_long_prompt(long, generator)
            counts.append(leak_count(answer, q.asker))
        rows.append(
            LeakRow(
                name,
                len(questions),
                sum(c.documents for c in counts),
                sum(c.sentences for c in counts),
                sum(c.cited > 0 for c in counts),
            )
        )
    return rows[0], rows[1]


# --- fine-tuning: what it cannot do here --------------------------------------------------


@dataclass(frozen=True, slots=True)
class FineTuneDemo:
    """A model fine-tuned on the answerable questions' answers, against long context.

    `learned`: training questions whose key fact it states. `forbidden_told`: questions
    whose documents are restricted to groups, asked by a user of the tenant in none of them,
    answered with the key fact (by the model, by long context as that user). `cited`: answers that cite a source.
    `stale`: after each edited fact, answers still stating the old one; `fresh`: the new one.
    """

    trained_on: int
    learned: int
    restricted: int
    forbidden_told_model: int
    forbidden_told_long: int
    cited_model: int
    cited_long: int
    edited: int
    stale_model: int
    fresh_long: int


_NUMBER = re.compile(r"\d+")


def edited_fact(fact: str) -> str:
    """The fact with its first number one higher: "25 working days" -> "26 working days"."""
    return _NUMBER.sub(lambda m: str(int(m.group()) + 1), fact, count=1)


def editable(question: Question, documents: Sequence[Document]) -> Document | None:
    """The relevant document that states the question's one key fact verbatim, once, if that
    fact holds a number (so it can be changed); None otherwise."""
    if len(question.must_contain) != 1 or not _NUMBER.search(question.must_contain[0]):
        return None
    fact = question.must_contain[0]
    holders = [d for d in documents if d.id in question.relevant_docs and d.text.count(fact) == 1]
    return holders[0] if len(holders) == 1 else None


def restricted_to_groups(question: Question, documents: Sequence[Document]) -> bool:
    """True when every document that answers `question` is restricted to groups."""
    groups = {d.id: d.groups for d in documents}
    return bool(question.relevant_docs) and all(groups.get(i) for i in question.relevant_docs)


def fine_tune_demo(
    questions: Sequence[Question],
    documents: Sequence[Document],
    *,
    generator: Generator | None = None,
    count_tokens: TokenCount | None = None,
) -> FineTuneDemo:
    """Train on (question, answer) of the answerable questions; then ask what it cannot do."""
    count = count_tokens or wordpiece_counter()
    generator = generator or default_generator()
    taught = [q for q in questions if q.answerable and q.answer and q.must_contain]
    model = fine_tune([(q.question, q.answer or "") for q in taught])

    def long_answer(q: Question, principal: Principal, docs: Sequence[Document]) -> Answer:
        sources = long_context_sources(docs, principal)
        return answer_long_prompt(
            long_context_prompt(q.question, sources, count_tokens=count), generator
        )

    learned = sum(holds_key_fact(model.answer(q.question), q.must_contain) for q in taught)
    restricted = [q for q in taught if restricted_to_groups(q, documents)]
    told_model = told_long = 0
    for q in restricted:  # asked by a user of the tenant in none of the groups
        outsider = Principal(f"outsider:{q.id}", q.tenant)
        told_model += holds_key_fact(model.answer(q.question), q.must_contain)
        told_long += holds_key_fact(long_answer(q, outsider, documents).text, q.must_contain)
    cited_long = sum(bool(long_answer(q, q.asker, documents).citations) for q in taught)
    edited = stale = fresh = 0
    for q in taught:
        doc = editable(q, documents)
        if doc is None:
            continue
        old, new = q.must_contain[0], edited_fact(q.must_contain[0])
        changed = [
            replace(d, text=d.text.replace(old, new)) if d.id == doc.id else d for d in documents
        ]
        edited += 1
        stale += holds_key_fact(model.answer(q.question), [old])
        fresh += holds_key_fact(long_answer(q, q.asker, changed).text, [new])
    return FineTuneDemo(
        trained_on=len(taught),
        learned=learned,
        restricted=len(restricted),
        forbidden_told_model=told_model,
        forbidden_told_long=told_long,
        cited_model=0,  # its answer is text alone: there is nothing to cite
        cited_long=cited_long,
        edited=edited,
        stale_model=stale,
        fresh_long=fresh,
    )
