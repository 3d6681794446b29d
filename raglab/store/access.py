"""Who may read what, decided before any scoring.

Why access is metadata, decided at indexing time:
    A document's tenant and groups come from its front matter when it is loaded, and are
    copied onto every chunk. Nothing the retriever reads (the chunk's text, its score, a
    user's question) can change them, so a document cannot talk its way past the filter.

Why before scoring:
    The store keeps only the rows the principal may read and scores those alone. A chunk
    the principal may not read never gets a score, so it cannot appear in the results,
    push a readable chunk out of the top-k, or shift a corpus statistic (BM25's idf).

The rule (ARCHITECTURE.md): a `Principal(user, tenant, groups)` may read an item when the item's
tenant equals the principal's, and the item has no groups or shares at least one group
with the principal. Groups count only within the principal's own tenant: being in "hr" of
tenant acme opens nothing of tenant globex.

An access partition is one tenant's items with one set of groups (`raglab.records.Partition`):
every item of a partition has the same readers.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from raglab.records import Chunk, DocRecord, Document, Partition, Principal

CACHE_SIZE = 64
"""Principals remembered per AccessIndex; past this the cache starts afresh, so memory
stays bounded even when every question comes from a different set of groups."""


def can_read(principal: Principal, item: Chunk | Document | DocRecord | Partition) -> bool:
    """True when `principal` may read `item` (a chunk, a whole document, a store's record of
    one, or every item of an access partition).

    >>> from raglab.records import Document, Principal
    >>> payroll = Document("pay.md", "...", tenant="acme", groups=("hr",))
    >>> can_read(Principal("ann", "acme", {"hr"}), payroll)
    True
    >>> can_read(Principal("bob", "acme"), payroll)  # not in the group
    False
    >>> can_read(Principal("eve", "globex", {"hr"}), payroll)  # groups count only in one's tenant
    False
    """
    if item.tenant != principal.tenant:
        return False
    return not item.groups or not principal.groups.isdisjoint(item.groups)


def eligible_rows(principal: Principal, chunks: Sequence[Chunk]) -> np.ndarray:
    """Ascending int64 row numbers of the `chunks` that `principal` may read.

    Builds an `AccessIndex` for this one call; a store that answers many queries keeps
    its `AccessIndex` and asks it instead.

    >>> from raglab.records import Chunk, Principal
    >>> chunks = [Chunk("a.md", 0, "x", 0, 1, tenant="acme"),
    ...           Chunk("b.md", 0, "y", 0, 1, tenant="acme", groups=("hr",)),
    ...           Chunk("c.md", 0, "z", 0, 1, tenant="globex")]
    >>> eligible_rows(Principal("bob", "acme"), chunks).tolist()
    [0]
    >>> eligible_rows(Principal("ann", "acme", {"hr"}), chunks).tolist()
    [0, 1]
    """
    return AccessIndex(chunks).eligible_rows(principal)


class AccessIndex:
    """The access metadata of a list of chunks, arranged so a query is a few array unions.

    Built once per state of a store (one pass over the chunks). For each tenant it keeps
    the rows open to every user of that tenant, and for each (tenant, group) the rows
    restricted to that group. Eligible rows for a principal are then the open rows of
    their tenant plus the rows of each of their groups in that tenant: the cost depends
    on how many rows come back, not on the size of the store. Answers are cached per
    (tenant, groups), since the same few principals ask again and again.
    """

    __slots__ = ("_cache", "_open", "_partitions", "_restricted", "n_rows")

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        open_rows: dict[str, list[int]] = {}
        restricted: dict[tuple[str, str], list[int]] = {}
        partitions: dict[Partition, list[int]] = {}
        for row, chunk in enumerate(chunks):
            if not chunk.groups:
                open_rows.setdefault(chunk.tenant, []).append(row)
            for group in chunk.groups:
                restricted.setdefault((chunk.tenant, group), []).append(row)
            partitions.setdefault(Partition(chunk.tenant, chunk.groups), []).append(row)
        self.n_rows = len(chunks)
        self._open = {tenant: _frozen_rows(rows) for tenant, rows in open_rows.items()}
        self._restricted = {key: _frozen_rows(rows) for key, rows in restricted.items()}
        self._partitions = {key: _frozen_rows(rows) for key, rows in partitions.items()}
        self._cache: dict[tuple[str, tuple[str, ...]], np.ndarray] = {}

    def key(self, principal: Principal) -> tuple[str, tuple[str, ...]]:
        """What decides a principal's rows: the tenant and the groups that matter in it."""
        groups = tuple(
            sorted(g for g in principal.groups if (principal.tenant, g) in self._restricted)
        )
        return principal.tenant, groups

    def eligible_rows(self, principal: Principal) -> np.ndarray:
        """Ascending int64 rows `principal` may read (a read-only array; copy to modify)."""
        key = self.key(principal)
        if key not in self._cache:
            tenant, groups = key
            parts = [self._open.get(tenant, _NO_ROWS)] + [
                self._restricted[(tenant, g)] for g in groups
            ]
            # A chunk with groups [a, b] is listed under both: np.unique drops the repeat
            # and sorts, which keeps store order (and so tie-breaking) intact.
            rows = parts[0] if len(parts) == 1 else _frozen_rows(np.unique(np.concatenate(parts)))
            if len(self._cache) >= CACHE_SIZE:
                self._cache.clear()
            self._cache[key] = rows
        return self._cache[key]

    def partition_rows(self, part: Partition) -> np.ndarray:
        """Ascending int64 rows of the access partition `part` (a read-only array)."""
        return self._partitions.get(part, _NO_ROWS)


def _frozen_rows(rows: ArrayLike) -> np.ndarray:
    """An int64 array nobody can modify in place (it is shared through the cache)."""
    array = np.array(rows, dtype=np.int64)
    array.setflags(write=False)
    return array


_NO_ROWS = _frozen_rows([])
