"""One turn of a conversation, end to end: rewrite, search both stores apart, answer, keep.

    question ─► standalone (rewrite.py, or a model) ─► documents top-k (the query path, as
    `ask` searches) and history top-k (the asker's own turns only) ─► one prompt, two
    labelled blocks, two budgets (allocation.py) ─► generate ─► verify citations (documents
    only) ─► the turn is kept in the history, embedded with the index's embedder

An answer that cites no document is not grounded, whatever the history said: the text
says so (`NOT_GROUNDED`), and `ChatTurn.grounded` is False.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

import numpy as np

from raglab.conversation.allocation import (
    DEFAULT_HISTORY_CHARS,
    DEFAULT_HISTORY_K,
    build_conversation_prompt,
    fit_history,
)
from raglab.conversation.history import History
from raglab.conversation.llm_standalone import LLMStandalone
from raglab.conversation.rewrite import Rewrite, listed_items, standalone
from raglab.conversation.turns import Turn, TurnHit
from raglab.embed.embedders import Embedder
from raglab.generate.generation import Generator
from raglab.generate.prompting import DEFAULT_MAX_CHARS, check_question
from raglab.pipeline import (
    DEFAULT_K,
    DEFAULT_METHOD,
    Index,
    answer_embedder,
    answer_prompt,
    profile_answerer,
)
from raglab.records import Answer, Principal
from raglab.retrieve.diversity import Diversity
from raglab.retrieve.query_expansion import QueryExpansion
from raglab.validation import check_int

NOT_GROUNDED = "(Not grounded: this answer cites no document. Earlier turns are not sources.)"

Rewriter = Callable[[str, Sequence[Turn]], Rewrite]


@dataclass(frozen=True, slots=True)
class ChatTurn:
    """What one question of a conversation gave: the rewrite, the documents' answer, the
    past turns that were shown as context, and the turn as kept."""

    rewrite: Rewrite
    answer: Answer
    history: tuple[TurnHit, ...]
    turn: Turn
    messages: tuple[dict[str, str], ...] = ()  # the rewrite's prompt, when a model wrote it

    @property
    def grounded(self) -> bool:
        """True when the answer abstained or cites at least one document, all valid."""
        return self.answer.verified


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def next_conversation(history: History, owner: Principal) -> str:
    """A new conversation id for `owner`: one more than the largest number in use."""
    numbers = [
        int(c.conversation) for c in history.conversations(owner) if c.conversation.isdigit()
    ]
    return str(max(numbers, default=0) + 1)


@dataclass
class ChatSession:
    """A conversation of `principal` with `index`, its turns kept in `history`.

    `k` document chunks and `history_k` past turns (of this owner, any conversation) are
    searched apart; `max_chars` and `history_chars` are their separate budgets. `rewriter`
    makes a follow-up standalone (default: the offline rules). `generator`: default the
    offline extractive answerer, as `ask`'s.
    """

    index: Index
    history: History
    principal: Principal
    conversation: str = ""
    k: int = DEFAULT_K
    history_k: int = DEFAULT_HISTORY_K
    method: str = DEFAULT_METHOD
    max_chars: int = DEFAULT_MAX_CHARS
    history_chars: int = DEFAULT_HISTORY_CHARS
    generator: Generator | None = None
    rewriter: Rewriter = standalone
    model_rewriter: LLMStandalone | None = None  # a model writes the rewrite instead
    diversity: Diversity | None = None  # as `Index.search`'s
    expansion: QueryExpansion | None = None
    clock: Callable[[], str] = utc_now
    _embedder: Embedder | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        check_int("history_k", self.history_k, minimum=1)
        if not self.conversation:
            self.conversation = next_conversation(self.history, self.principal)

    def embed(self, text: str) -> np.ndarray:
        """`text` as the history stores it: the index's embedder (for LSA, the tenant's
        public fit, the space every user of the tenant shares)."""
        if self._embedder is None:
            found = answer_embedder(self.index, self.principal, self.method)
            self._embedder = found if found is not None else self.index.embedder
        vector: np.ndarray = self._embedder.embed([text])[0]
        return vector

    def turns(self) -> list[Turn]:
        return self.history.turns(self.principal, self.conversation)

    def ask(self, question: str) -> ChatTurn:
        """Answer `question` as the next turn of this conversation, and keep the turn."""
        check_question(question)
        previous = self.turns()
        rewrite, messages = self._rewrite(question, previous)
        documents = self.index.search(
            rewrite.standalone, self.principal, k=self.k, method=self.method,
            diversity=self.diversity, expansion=self.expansion,
        )  # fmt: skip
        history = self.history.search(
            self.principal, self.embed(rewrite.standalone), self.history_k
        )
        prompt = build_conversation_prompt(
            rewrite.standalone, documents, history,
            max_chars=self.max_chars, history_chars=self.history_chars,
        )  # fmt: skip
        generator = self.generator or profile_answerer(self.index, self.principal, self.method)
        answer = answer_prompt(prompt, generator)
        if not answer.verified:
            answer = replace(answer, text=f"{answer.text}\n{NOT_GROUNDED}".strip())
        shown = fit_history(history, self.history_chars)  # the turns the prompt holds
        turn = Turn(
            self.conversation, len(previous) + 1, question, rewrite.standalone, answer.text,
            tuple(dict.fromkeys(c.hit.chunk.doc_id for c in answer.citations)),
            tuple(listed_items(answer.text)), self.clock(),
        )  # fmt: skip
        self.history.add(self.principal, turn, self.embed(turn.text))
        return ChatTurn(rewrite, answer, shown, turn, messages)

    def _rewrite(
        self, question: str, previous: Sequence[Turn]
    ) -> tuple[Rewrite, tuple[dict[str, str], ...]]:
        if self.model_rewriter is None:
            return self.rewriter(question, previous), ()
        made = self.model_rewriter.standalone(question, previous)
        return made.rewrite, made.messages

    def forget(self) -> int:
        """Forget this conversation (its turns and their vectors); the next turn starts a new one."""
        deleted = self.history.forget(self.principal, self.conversation)
        self.conversation = next_conversation(self.history, self.principal)
        return deleted
