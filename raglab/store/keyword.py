"""Keyword search and the asker's words, for a store that holds its chunks in memory.

`raglab.retrieve.bm25.BM25` is fitted on the chunks the asker may read, so that no chunk
they may not read shifts idf or the average length; then the chunks they are answered
from (`raglab.store.eligibility`) are ranked. The answerer asks which of a question's
words occur anywhere the asker may read (`known_stems`). Both read every readable chunk
once, so each is kept per access partition until the store changes (a store builds a new
`ChunkKeywords` with every new state of its chunks).

The SQLite store answers both from its stored postings and stems instead
(`raglab.store.sqlite_postings`, `raglab.store.sqlite_stems`), with the same results.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from raglab.ingest.stems import chunk_stems
from raglab.records import Hit, Principal
from raglab.retrieve.bm25 import BM25
from raglab.retrieve.vectors import select_top_k
from raglab.store.eligibility import Eligibility

CACHE_SIZE = 64
"""Access partitions whose model and words are kept; past this the cache starts afresh."""


class ChunkKeywords:
    """BM25 and the vocabulary of each principal's readable chunks, from one `Eligibility`."""

    __slots__ = ("_bm25s", "_words", "eligibility")

    def __init__(self, eligibility: Eligibility) -> None:
        self.eligibility = eligibility
        self._bm25s: dict[tuple[str, tuple[str, ...]], BM25] = {}  # by `access.key`
        self._words: dict[tuple[str, tuple[str, ...]], frozenset[str]] = {}

    def search(
        self, question: str, principal: Principal, k: int, *, min_score: float = 0.0
    ) -> list[Hit]:
        """The top-k chunks `principal` is answered from by BM25 score, scoring above
        `min_score`; equal scores in store order. A score of 0 means no query word occurs."""
        readable, rows = self.eligibility.readable(principal), self.eligibility.rows(principal)
        if not len(rows):
            return []
        scores = self._bm25(principal, readable).scores(question)  # one per readable row
        if len(rows) < len(readable):  # some documents are hidden: rank the others only
            scores = scores[readable.searchsorted(rows)]
        chunks = self.eligibility.chunks
        found = select_top_k(scores, min(k, len(rows)))
        return [
            Hit(chunks[rows[i]], float(s))
            for i, s in zip(found.indices.tolist(), found.scores, strict=True)
            if s > min_score
        ]

    def known_stems(self, principal: Principal, stems: Iterable[str]) -> frozenset[str]:
        """Those of the content `stems` that a chunk `principal` may read uses (in its title,
        heading or text: `raglab.ingest.stems.chunk_stems`)."""
        key = self.eligibility.access.key(principal)
        if key not in self._words:
            chunks = self.eligibility.chunks
            rows = self.eligibility.readable(principal).tolist()
            if len(self._words) >= CACHE_SIZE:
                self._words.clear()
            self._words[key] = frozenset().union(*(chunk_stems(chunks[r]) for r in rows))
        return frozenset(stems) & self._words[key]

    def _bm25(self, principal: Principal, readable: np.ndarray) -> BM25:
        key = self.eligibility.access.key(principal)
        if key not in self._bm25s:
            chunks = self.eligibility.chunks
            if len(self._bm25s) >= CACHE_SIZE:
                self._bm25s.clear()
            self._bm25s[key] = BM25().fit([chunks[r].indexed_text for r in readable.tolist()])
        return self._bm25s[key]
