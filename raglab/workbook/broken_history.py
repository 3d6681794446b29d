"""The history stores notebook 12's isolation test runs against: a correct one, and four
with one flaw each (the history twin of `raglab.workbook.broken`).

Each is a `raglab.conversation.history.History`, empty when made. A learner's test gets
a fresh one, adds turns for some owners, and checks what each owner can find. It must
pass on `MemoryHistory` (the real store) and fail on every store below; the last, which
finds nothing at all, catches a test that only checks what strangers do not see.
"""

from __future__ import annotations

import numpy as np

from raglab.conversation.history import MemoryHistory, groups_key, ranked
from raglab.conversation.turns import TurnHit
from raglab.records import Principal

__all__ = [
    "BROKEN_HISTORIES",
    "FiltersAfterRanking",
    "FindsNothing",
    "KeyedByUserNameOnly",
    "SharedWithinTenant",
]


class SharedWithinTenant(MemoryHistory):
    """It searches every user's turns in the asker's tenant. A colleague's question, with
    its answer, reaches another colleague's prompt."""

    unchecked = "that another user of the same tenant finds none of the owner's turns"

    def search(
        self, owner: Principal, query: np.ndarray, k: int, *, conversation: str | None = None
    ) -> list[TurnHit]:
        rows = [r for (tenant, _), rs in self._rows.items() if tenant == owner.tenant for r in rs]
        return ranked([r.turn for r in rows], [r.vector for r in rows], query, k)


class KeyedByUserNameOnly(MemoryHistory):
    """It keys turns by the user name alone. "alice" of one company finds the turns of
    "alice" of another."""

    unchecked = "that the same user name in another tenant finds none of the owner's turns"

    def search(
        self, owner: Principal, query: np.ndarray, k: int, *, conversation: str | None = None
    ) -> list[TurnHit]:
        rows = [r for (_, user), rs in self._rows.items() if user == owner.user for r in rs]
        rows = [r for r in rows if r.groups == groups_key(owner)]
        return ranked([r.turn for r in rows], [r.vector for r in rows], query, k)


class FiltersAfterRanking(MemoryHistory):
    """It ranks everyone's turns, keeps the top k, then drops other owners' turns. Nothing
    foreign is returned, but other users' turns take the owner's places: the owner gets
    fewer turns than they have, and which ones depends on what others asked."""

    unchecked = "that the owner still finds their own k turns when others' turns score higher"

    def search(
        self, owner: Principal, query: np.ndarray, k: int, *, conversation: str | None = None
    ) -> list[TurnHit]:
        everyone = [(key, r) for key, rs in self._rows.items() for r in rs]
        top = ranked([r.turn for _, r in everyone], [r.vector for _, r in everyone], query, k)
        mine = {id(r.turn) for key, r in everyone if key == (owner.tenant, owner.user)}
        return [hit for hit in top if id(hit.turn) in mine]


class FindsNothing(MemoryHistory):
    """It never finds anything. No stranger sees a turn, and neither does the owner."""

    unchecked = "that the owner finds their own turns"

    def search(
        self, owner: Principal, query: np.ndarray, k: int, *, conversation: str | None = None
    ) -> list[TurnHit]:
        return []


BROKEN_HISTORIES: tuple[type[MemoryHistory], ...] = (
    SharedWithinTenant,
    KeyedByUserNameOnly,
    FiltersAfterRanking,
    FindsNothing,
)
