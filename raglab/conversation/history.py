"""The history store: each user's past turns, kept apart from the documents and from
every other user.

Isolation is by construction, not by a filter after the fact: every read and every
delete names its owner (tenant and user), and a store looks only at that owner's rows
before it scores anything (SQL `WHERE tenant = ? AND user = ?` in
`raglab.conversation.sqlite_history`, one list per owner here). A search also needs the
asker's groups to be the ones the turn was asked with: a turn may quote a document of a
group, and leaving the group must take that text out of reach too. So no other user, of
the same tenant or another, can read a turn, find it, or have their ranking moved by it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from raglab.conversation.turns import ConversationSummary, Turn, TurnHit
from raglab.records import Principal
from raglab.retrieve.vectors import top_k
from raglab.validation import check_int


class History(Protocol):
    """Where conversation turns live. Every method takes the owner as a `Principal`."""

    def add(self, owner: Principal, turn: Turn, vector: np.ndarray) -> None:
        """Keep `turn` (with its unit `vector`) for `owner`."""
        ...

    def search(
        self, owner: Principal, query: np.ndarray, k: int, *, conversation: str | None = None
    ) -> list[TurnHit]:
        """The `k` turns of `owner` (asked with `owner`'s groups) most similar to `query`,
        best first, ties to the older turn; only one conversation's with `conversation`."""
        ...

    def turns(self, owner: Principal, conversation: str) -> list[Turn]:
        """The turns of one conversation of `owner`, in order."""
        ...

    def conversations(self, owner: Principal) -> list[ConversationSummary]:
        """`owner`'s conversations, oldest first."""
        ...

    def forget(self, owner: Principal, conversation: str | None = None) -> int:
        """Delete one conversation of `owner` (or all of them, vectors too); returns the
        number of turns deleted."""
        ...


def owner_key(owner: Principal) -> tuple[str, str]:
    """Who owns a turn: the tenant and the user (a user name means nothing across tenants)."""
    return owner.tenant, owner.user


def groups_key(owner: Principal) -> str:
    """The groups a turn was asked with, as stored: sorted, comma-separated."""
    return ",".join(sorted(owner.groups))


@dataclass(frozen=True, slots=True)
class _Row:
    groups: str
    turn: Turn
    vector: np.ndarray


@dataclass
class MemoryHistory:
    """The history in memory: one list of turns per owner (for `--docs`, tests, notebooks)."""

    _rows: dict[tuple[str, str], list[_Row]] = field(default_factory=dict, repr=False)

    def add(self, owner: Principal, turn: Turn, vector: np.ndarray) -> None:
        row = _Row(groups_key(owner), turn, np.asarray(vector, dtype=np.float32))
        self._rows.setdefault(owner_key(owner), []).append(row)

    def search(
        self, owner: Principal, query: np.ndarray, k: int, *, conversation: str | None = None
    ) -> list[TurnHit]:
        check_int("k", k, minimum=1)
        mine = [  # only the owner's rows, asked with the same groups, are ever scored
            row
            for row in self._rows.get(owner_key(owner), [])
            if row.groups == groups_key(owner)
            and (conversation is None or row.turn.conversation == conversation)
        ]
        return ranked([row.turn for row in mine], [row.vector for row in mine], query, k)

    def turns(self, owner: Principal, conversation: str) -> list[Turn]:
        rows = self._rows.get(owner_key(owner), [])
        return sorted((r.turn for r in rows if r.turn.conversation == conversation), key=_order)

    def conversations(self, owner: Principal) -> list[ConversationSummary]:
        return summaries([row.turn for row in self._rows.get(owner_key(owner), [])])

    def forget(self, owner: Principal, conversation: str | None = None) -> int:
        rows = self._rows.get(owner_key(owner), [])
        kept = [r for r in rows if conversation is not None and r.turn.conversation != conversation]
        self._rows[owner_key(owner)] = kept
        return len(rows) - len(kept)


def ranked(
    turns: Sequence[Turn], vectors: Sequence[np.ndarray], query: np.ndarray, k: int
) -> list[TurnHit]:
    """`turns` ranked by cosine with `query` (exact top-k: ties go to the earlier turn)."""
    if not turns:
        return []
    found = top_k(query, np.stack(vectors), k)
    return [TurnHit(turns[i], float(s)) for i, s in zip(found.indices.tolist(), found.scores)]


def _order(turn: Turn) -> tuple[str, int]:
    return turn.conversation, turn.n


def summaries(turns: Sequence[Turn]) -> list[ConversationSummary]:
    """One summary per conversation, oldest first (by the time of its first turn, then id)."""
    by_conversation: dict[str, list[Turn]] = {}
    for turn in sorted(turns, key=_order):
        by_conversation.setdefault(turn.conversation, []).append(turn)
    found = [
        ConversationSummary(name, len(ts), ts[0].question, ts[0].time, ts[-1].time)
        for name, ts in by_conversation.items()
    ]
    return sorted(found, key=lambda s: (s.started, s.conversation))
