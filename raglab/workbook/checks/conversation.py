"""Checks for notebook 12 (a conversation, not one question).

Exercise `make_standalone`: the learner writes

    make_standalone(question, previous) -> str

the question to search for `question`, given the conversation's earlier turns
(`previous`, a list of `raglab.conversation.turns.Turn`, oldest first): rewritten when it
leans on them, the question itself when it stands alone. Checked on hand-worked turns,
then on the held-back follow-ups of data/conversations.jsonl (split "heldout", played as
their principal over the sample corpus): every one that must not be rewritten comes back
unchanged, and those that must reach `REQUIRED_RECALL` recall@5 on average.

Exercise `conversation_prompt`: the learner writes

    conversation_prompt(question, documents, history, max_chars, history_chars, code) -> str

the user message with two labelled blocks, each with its own budget: the documents that
fit `max_chars` (whole, in rank order, stopping at the first that does not fit), the past
turns that fit `history_chars` (the same rule). History never displaces a document.

Exercise `test_history_is_private`: a test taking an empty history store; it must pass on
the real store and fail on each broken one (`raglab.workbook.broken_history`), as
notebook 08 grades tests.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from functools import cache, partial
from typing import Any

from raglab.conversation.allocation import (
    HISTORY_LABEL,
    SOURCES_LABEL,
    build_conversation_prompt,
    conversation_message,
    fit_history,
    history_block,
)
from raglab.conversation.conversations import load_conversations
from raglab.conversation.history import MemoryHistory
from raglab.conversation.rewrite import Rewrite, listed_items, standalone
from raglab.conversation.turns import Turn, TurnHit
from raglab.generate.prompting import fit_budget, source_block
from raglab.records import Chunk, Hit, Principal
from raglab.workbook.broken_history import BROKEN_HISTORIES
from raglab.workbook.checks.core import (
    NOT_IMPLEMENTED_CASE,
    SEED,
    Case,
    CheckResult,
    Outcome,
    call,
    problem,
    run_cases,
    show,
    show_outcome,
    verdict,
)
from raglab.workbook.testrunner import run_test

__all__ = [
    "check_conversation_prompt",
    "check_make_standalone",
    "check_test_history_is_private",
    "held_back_follow_ups",
    "reference_conversation_prompt",
    "reference_make_standalone",
]

REQUIRED_RECALL = 0.9
"""Mean recall@5 the rewrites of the held-back follow-ups must reach. The offline rules
(`raglab.conversation.rewrite`) reach 0.947, the gold standalone questions 0.974, the
questions searched as asked 0.842 (`benchmarks/results/conversation.json`)."""


def reference_make_standalone(question: str, previous: list[Turn]) -> str:
    return standalone(question, previous).standalone


def _turn(n: int, question: str, answer: str) -> Turn:
    """A turn as the engine keeps it: what its answer listed in `items`."""
    return Turn("1", n, question, question, answer, items=tuple(listed_items(answer)))


LEAVE = _turn(1, "How many vacation days do I get?", "You get 25 working days a year [1].")
SKUS = _turn(
    1,
    "Which thermostats do you sell?",
    "The GX-T100 Thermo Lite and the GX-T200-PRO Thermo Pro [1].",
)


def _unchanged(case: Case, outcome: Outcome) -> str | None:
    if outcome.error is not None or outcome.value == case.args[0]:
        return None if outcome.error is None else ""
    return "it stands alone: search it as asked, unchanged"


def _mentions(word: str) -> Callable[[Case, Outcome], str | None]:
    def judge(case: Case, outcome: Outcome) -> str | None:
        if outcome.error is not None:
            return ""
        if not isinstance(outcome.value, str):
            return f"expected a str, got a {type(outcome.value).__name__}"
        return None if word.lower() in outcome.value.lower() else f"it should mention {word!r}"

    return judge


STANDALONE_CASES: list[tuple[Case, Callable[[Case, Outcome], str | None]]] = [
    (Case("first turn", ("How many vacation days do I get?", [])), _unchanged),
    (Case("topic switch", ("How do I reset my password?", [LEAVE])), _unchanged),
    (
        Case(
            "a pronoun in a self-contained question",
            ("Is it OK to accept a bottle of wine from a supplier?", [LEAVE]),
        ),
        _unchanged,
    ),
    (Case("pronoun", ("Can they be carried over?", [LEAVE])), _mentions("vacation")),
    (Case("the second one", ("How much is the second one?", [SKUS])), _mentions("GX-T200-PRO")),
]


@cache
def held_back_follow_ups() -> tuple[
    tuple[str, tuple[Turn, ...], bool, Principal, tuple[str, ...]], ...
]:
    """Each held-back follow-up: (question, the turns before it, must it be rewritten,
    its asker, its relevant documents). The turns before it are played by the engine with
    the gold standalone questions, so every learner's rewrite meets the same history."""
    from raglab.conversation.chat import ChatSession
    from raglab.samples import sample_conversations

    index = _sample_index()
    found = []
    for conversation in load_conversations(sample_conversations()):
        if conversation.split != "heldout":
            continue
        gold = {t.question: t.standalone for t in conversation.turns}
        session = ChatSession(
            index, MemoryHistory(), conversation.principal, conversation.id,
            rewriter=partial(_gold, gold),
            clock=lambda: "",
        )  # fmt: skip
        for n, labelled in enumerate(conversation.turns, start=1):
            if n > 1:
                found.append(
                    (labelled.question, tuple(session.turns()), labelled.must_rewrite,
                     conversation.principal, labelled.relevant_docs)
                )  # fmt: skip
            session.ask(labelled.question)
    return tuple(found)


def _gold(gold: dict[str, str], question: str, previous: Sequence[Turn]) -> Rewrite:
    return Rewrite(question, gold[question], "gold")


@cache
def _sample_index() -> Any:
    from raglab.pipeline import Index
    from raglab.samples import sample_corpus

    return Index.from_folder(sample_corpus())


def recall_at_5(question: str, asker: Principal, relevant: tuple[str, ...]) -> float:
    from raglab.evaluation.metrics import recall_at_k, unique_in_order

    hits = _sample_index().search(question, asker, k=20)
    return recall_at_k(unique_in_order(h.chunk.doc_id for h in hits), relevant, 5)


def check_make_standalone(fn: Any) -> CheckResult:
    """Check a learner's `make_standalone(question, previous) -> str`."""
    name = "make_standalone"
    if not callable(fn):
        return verdict(name, "callable", [f"expected a function, got {show(fn)}"])
    for case, judge in STANDALONE_CASES:
        outcome = call(fn, case.args, case.kwargs)
        if isinstance(outcome.error, NotImplementedError):
            return verdict(name, NOT_IMPLEMENTED_CASE, [])
        why = problem(case, outcome, judge)
        if why is not None:
            question, previous = case.args
            return verdict(name, case.name, [
                f"input:    {show(question)}, after {show([t.question for t in previous])}",
                f"got:      {show_outcome(outcome)}",
                *([f"why:      {why}"] if why else []),
            ])  # fmt: skip
    recalls = []
    for question, previous, must_rewrite, asker, relevant in held_back_follow_ups():
        outcome = call(fn, (question, list(previous)), {})
        if outcome.error is not None or not isinstance(outcome.value, str):
            got = (
                f"raised {outcome.error!r}" if outcome.error else f"returned {show(outcome.value)}"
            )
            return verdict(name, f"held back: {question}", [f"make_standalone {got}"])
        if not must_rewrite and outcome.value != question:
            return verdict(name, f"held back: {question}", [
                f"got:      {show(outcome.value)}",
                "this follow-up stands alone (a new topic, or its own words name it): "
                "search it as asked",
            ])  # fmt: skip
        if must_rewrite:
            recalls.append(recall_at_5(outcome.value, asker, relevant))
    mean = sum(recalls) / len(recalls)
    if mean < REQUIRED_RECALL:
        return verdict(name, "held-back follow-ups", [
            f"your rewrites find the right documents with recall@5 {mean:.3f} on average, "
            f"below {REQUIRED_RECALL}: carry more of the earlier turn's topic",
        ])  # fmt: skip
    kept = len(held_back_follow_ups()) - len(recalls)
    return verdict(name, None, [
        f"{len(STANDALONE_CASES)} hand-worked turns, and {len(held_back_follow_ups())} held-back "
        f"follow-ups: {kept} left as asked, the others found at recall@5 {mean:.3f}",
    ])  # fmt: skip


# --- conversation_prompt


def reference_conversation_prompt(
    question: str,
    documents: list[Hit],
    history: list[TurnHit],
    max_chars: int,
    history_chars: int,
    code: str,
) -> str:
    return conversation_message(
        question, fit_budget(documents, max_chars), fit_history(history, history_chars), code
    )


def _doc(i: int, size: int, score: float) -> Hit:
    text = (f"Fact {i}. " * size)[:size]
    return Hit(Chunk(f"doc{i}.md", 0, text, 0, size), score)


def _past(n: int, size: int, score: float) -> TurnHit:
    return TurnHit(Turn("1", n, f"q{n}", f"question {n}", "a" * size), score)


def _prompt_cases() -> list[Case]:
    docs = [_doc(i, 300, 1.0 - i / 10) for i in range(1, 5)]
    loud = [_past(n, 200, 0.99) for n in range(1, 6)]  # every turn outscores every document
    cases = [
        Case("no history", ("What is it?", docs, [], 1000, 500, "C0DE")),
        Case("history outscores the documents", ("What is it?", docs, loud, 1000, 500, "C0DE")),
        Case("history over its budget", ("What is it?", docs[:2], loud, 1000, 300, "C0DE")),
        Case("documents over their budget", ("What is it?", docs, loud[:1], 700, 500, "C0DE")),
        Case("no documents", ("What is it?", [], loud[:2], 700, 500, "C0DE")),
    ]
    rng = random.Random(SEED)
    for i in range(40):
        d = [_doc(j, rng.randint(50, 400), 1 - j / 100) for j in range(rng.randint(0, 6))]
        h = [_past(n, rng.randint(20, 300), 0.5) for n in range(1, rng.randint(1, 6))]
        budget = rng.randint(d[0].chunk.end if d else 1, 1500)  # the first document fits
        cases.append(Case(f"random {i}", ("Why?", d, h, budget, rng.randint(1, 900), f"c{i}")))
    return cases


def _prompt_judge(case: Case, outcome: Outcome) -> str | None:
    if outcome.error is not None:
        return ""
    text = outcome.value
    if not isinstance(text, str):
        return f"expected a str, got a {type(text).__name__}"
    question, documents, history, max_chars, history_chars, code = case.args
    sources = fit_budget(documents, max_chars)
    turns = fit_history(history, history_chars)
    if text.count(f"<source-{code} ") != len(sources):
        return f"expected {len(sources)} source blocks (the documents that fit max_chars, whatever the history)"
    if text.count(f"<history-{code} ") != len(turns):
        return f"expected {len(turns)} history blocks (the turns that fit history_chars)"
    places = [text.find(source_block(n, h, code)) for n, h in enumerate(sources, start=1)]
    if -1 in places or places != sorted(places):
        return "each source block as source_block(n, hit, code) makes it, numbered from 1, in rank order"
    spots = [text.find(history_block(t, code)) for t in turns]
    if -1 in spots or spots != sorted(spots):
        return "each past turn as history_block(turn_hit, code) makes it, in rank order"
    if SOURCES_LABEL not in text or (places and text.find(SOURCES_LABEL) > places[0]):
        return "the documents' block starts with SOURCES_LABEL"
    if (HISTORY_LABEL in text) != bool(turns) or (turns and text.find(HISTORY_LABEL) > spots[0]):
        return "the history block starts with HISTORY_LABEL, and there is none without a turn"
    if not text.rstrip().endswith(f"Question: {question}"):
        return "end with the question: 'Question: ...'"
    return None


def check_conversation_prompt(fn: Any) -> CheckResult:
    """Check a learner's `conversation_prompt(question, documents, history, max_chars,
    history_chars, code) -> str`."""
    cases = _prompt_cases()
    return run_cases(
        "conversation_prompt", "conversation_prompt", fn, cases, _prompt_judge,
        f"all {len(cases)} prompts: every document that fits is there whatever the history, "
        "each block labelled and within its own budget",
        explain=lambda case, outcome, why: [
            f"input:    {case.name}: {len(case.args[1])} documents, {len(case.args[2])} turns, "
            f"max_chars={case.args[3]}, history_chars={case.args[4]}",
            f"problem:  {why}" if why else f"got:      {show(outcome.value if outcome.error is None else outcome.error)}",
        ],
    )  # fmt: skip


# --- test_history_is_private


def check_test_history_is_private(test: Any) -> CheckResult:
    """Check a learner's test: it passes on `MemoryHistory` and fails on each broken store."""
    name = "test_history_is_private"
    if not callable(test):
        return verdict(name, "callable", [f"expected a test function, got {show(test)}"])
    on_real = run_test(test, MemoryHistory())
    if on_real.not_implemented:
        return verdict(name, NOT_IMPLEMENTED_CASE, [])
    if not on_real.passed:
        return verdict(name, "the real store", [
            f"your test fails on the real store: {on_real.message.splitlines()[0]}",
            "there every owner finds their own turns and nobody else's: is the test asking "
            "for something the store never promised?",
        ])  # fmt: skip
    for store in BROKEN_HISTORIES:
        if run_test(test, store()).passed:
            flaw = " ".join((store.__doc__ or "").split()).split(". ")[0]
            return verdict(name, store.__name__, [
                f"your test passed on a broken store, {store.__name__}: {flaw}",
                f"it never checks {store.unchecked}",  # type: ignore[attr-defined]
            ])  # fmt: skip
    names = ", ".join(s.__name__ for s in BROKEN_HISTORIES)
    return verdict(name, None, [f"passes on the real store and fails on {names}"])


REFERENCES: tuple[Callable[..., Any], ...] = (
    standalone,
    reference_make_standalone,
    reference_conversation_prompt,
    conversation_message,
    build_conversation_prompt,
    fit_history,
)
"""Hidden while a learner's function runs: the rewrite and the prompt are the exercises."""

CHECKS: dict[str, Callable[[Any], CheckResult]] = {
    "make_standalone": check_make_standalone,
    "conversation_prompt": check_conversation_prompt,
    "test_history_is_private": check_test_history_is_private,
}
