"""Which chunks a principal is answered from: the access rule, then versions, before scoring.

Two visibility rules decide it, in this order, and both are applied by the store before
any chunk is scored:

- access (`raglab.store.access`): the chunks the principal may read;
- versions (`raglab.store.versions`): less the chunks of documents hidden from them, those
  superseded by a document they may read.

A search scores only the rows `Eligibility.rows` gives, so a hidden or forbidden chunk can
neither be returned nor push another out of the top k, and no step after the store has to
search deeper to make up for chunks it drops.

What the principal may read still counts in the statistics a ranking learns from the
readable chunks (BM25's idf and average length, `raglab.store.keyword`): a superseded
document is readable, only never returned.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from raglab.records import Chunk, DocRecord, Partition, Principal
from raglab.store.access import AccessIndex
from raglab.store.versions import hidden_from

CACHE_SIZE = 64
"""Principals remembered; past this the cache starts afresh (as `raglab.store.access`)."""


class Eligibility:
    """The rows of a store's chunks each principal is answered from, computed once per asker.

    `chunks` in store order; `superseded` maps a document id to the ids superseding it
    (the store's meta); `documents` holds every document's record (access metadata), so
    that a document without chunks can still hide the one it supersedes.
    """

    __slots__ = ("_cache", "_documents", "_superseded", "access", "chunks")

    def __init__(
        self,
        chunks: Sequence[Chunk],
        superseded: Mapping[str, Sequence[str]] | None,
        documents: Mapping[str, DocRecord],
    ) -> None:
        self.chunks = chunks
        self.access = AccessIndex(chunks)
        self._superseded = superseded or {}
        self._documents = documents
        self._cache: dict[tuple[str, tuple[str, ...]], np.ndarray] = {}

    def readable(self, principal: Principal) -> np.ndarray:
        """Ascending rows `principal` may read (the access rule alone)."""
        return self.access.eligible_rows(principal)

    def key(self, principal: Principal) -> tuple[str, tuple[str, ...]]:
        """What decides `rows(principal)`: principals with equal keys get equal rows."""
        if not self._superseded:
            return self.access.key(principal)  # the tenant and the groups that matter in it
        # subtle: then every group of the principal counts: a document without chunks (so
        # unknown to the AccessIndex) may still hide the one it supersedes.
        return principal.tenant, tuple(sorted(principal.groups))

    def rows(self, principal: Principal) -> np.ndarray:
        """Ascending rows `principal` is answered from: readable, and not of a hidden document."""
        readable = self.readable(principal)
        if not self._superseded:  # the common case: no document supersedes another
            return readable
        key = self.key(principal)
        if key not in self._cache:
            hidden = hidden_from(principal, self._superseded, self._documents)
            kept = [row for row in readable.tolist() if self.chunks[row].doc_id not in hidden]
            if len(self._cache) >= CACHE_SIZE:
                self._cache.clear()
            rows = np.array(kept, dtype=np.int64)
            rows.setflags(write=False)
            self._cache[key] = rows
        return self._cache[key]

    def rows_in(self, principal: Principal, part: Partition) -> np.ndarray:
        """Ascending rows `principal` is answered from within the access partition `part`."""
        return np.intersect1d(self.rows(principal), self.access.partition_rows(part))
