"""What a conversation keeps of each turn, and a turn retrieved for a later question."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Turn:
    """One question of a conversation and what answered it.

    `standalone` is the question as it was searched (the follow-up rewritten, or the
    question itself); `cited` the ids of the documents the answer cited, in citation
    order; `items` what the answer listed, in order (what "the second one" points at);
    `time` an ISO 8601 UTC timestamp. The owner (tenant, user) and the conversation are
    the store's keys, never part of what a reader is handed.
    """

    conversation: str
    n: int  # 1 for the conversation's first turn
    question: str
    standalone: str
    answer: str
    cited: tuple[str, ...] = ()
    items: tuple[str, ...] = ()
    time: str = ""

    @property
    def text(self) -> str:
        """What history retrieval embeds and a prompt shows: the question as searched, and
        the answer."""
        return f"Q: {self.standalone}\nA: {self.answer}"


@dataclass(frozen=True, slots=True)
class TurnHit:
    """A past turn retrieved for a new question, and the cosine that ranked it."""

    turn: Turn
    score: float


@dataclass(frozen=True, slots=True)
class ConversationSummary:
    """One conversation of a user, as `History.conversations` lists it."""

    conversation: str
    turns: int
    first_question: str
    started: str
    last: str
