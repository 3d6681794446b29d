"""Retrieval: from a question to a ranked list of hits the principal may read.

Three methods of ranking, all behind one function:
- dense:  embed the question, exact cosine top-k over the store's vectors;
- bm25:   keyword scores (raglab.retrieve.bm25.BM25) over the same chunks;
- hybrid: both rankings fused (`raglab.retrieve.fusion`: reciprocal rank fusion, RRF).

It ties the steps of `raglab.retrieve` to a store (`raglab.store`), so it sits above both.

Access is decided first, every time: the store scores only the chunks the principal may
read, and BM25 is fitted on those chunks alone, so a chunk the principal may not read
cannot even shift another chunk's score (its words would otherwise change BM25's idf).
A question is embedded by its tenant's embedder (`Retriever.embedder_for`): for a learned
embedder such as LSA, the fit on that tenant's chunks alone (see `raglab.store.indexing`). So
for every method, no tenant's documents can change another tenant's hits or scores.

What is fitted on chunks (BM25 per set of readable chunks, a learned embedder per
tenant) is cached, and reused only while those chunks are unchanged in content, not
just in ids: a document rewritten under the same chunk ids gets a new model.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, replace
from typing import Generic, TypeVar

from raglab.embed.embedders import Embedder, is_fittable
from raglab.records import Chunk, Hit, Principal
from raglab.retrieve.bm25 import BM25
from raglab.retrieve.diversity import Diversity
from raglab.retrieve.fusion import CANDIDATES_PER_RANKER, Fusion, Rankings, reciprocal_rank_fusion
from raglab.retrieve.query_expansion import QueryExpansion, feedback_terms
from raglab.retrieve.rerank import DEPTH, Reranker, candidates
from raglab.store.indexing import tenant_embedder
from raglab.store.protocol import VectorStore
from raglab.store.versions import (
    current_chunks,
    current_keyword_search,
    current_search,
    without_hidden,
)
from raglab.validation import check_int

METHODS = ("dense", "bm25", "hybrid")
"""The ways a `Retriever` ranks chunks."""

Model = TypeVar("Model")

CACHE_SIZE = 64
"""Models a cache keeps before it starts afresh: memory stays bounded even when every
question comes from another set of groups."""


class FitCache(Generic[Model]):
    """Models fitted on lists of chunks, one per key, reused while the key's chunks are equal.

    Subtle: equal chunks (id, text, access metadata), never only equal ids. A document
    rewritten under the same chunk ids must get a new model, or BM25 would go on
    scoring the old words while dense search sees the new ones.
    """

    def __init__(self) -> None:
        self._entries: dict[Hashable, tuple[list[Chunk], Model]] = {}

    def get(self, key: Hashable, chunks: list[Chunk], fit: Callable[[], Model]) -> Model:
        entry = self._entries.get(key)
        if entry is None or entry[0] != chunks:
            if len(self._entries) >= CACHE_SIZE:
                self._entries.clear()
            entry = (chunks, fit())
        # Keep the newest list: comparing the same chunk objects next time is quickest.
        self._entries[key] = (chunks, entry[1])
        return entry[1]


@dataclass
class Retriever:
    """Ranks the chunks of one store for a principal, by `method` (dense, bm25 or hybrid).

    `embedder` is the one the index was built with; for a fittable one (LSA), each
    tenant's questions are embedded by its fit on that tenant's chunks (`embedder_for`).
    `min_score` drops hits scoring below it (cosine for dense, BM25 score for bm25; for
    hybrid it applies to the dense candidates, since RRF scores are ranks, not evidence).
    `fusion` weighs the two rankings of hybrid search (`raglab.retrieve.fusion`; None: plain RRF);
    `reranker` reorders hybrid search's top `raglab.retrieve.rerank.DEPTH` and keeps k (None: off).
    `diversity` (`raglab.retrieve.diversity`): near duplicates dropped and k kept by MMR.
    `expansion` (`raglab.retrieve.query_expansion`): the question rewritten, the rankings fused.
    A document superseded by one the principal may read is never returned
    (`raglab.store.versions`).
    """

    store: VectorStore
    embedder: Embedder
    method: str = "hybrid"
    min_score: float | None = None
    # Models fitted on chunks, reused while those chunks are equal. An Index hands the same
    # caches to all its retrievers, so dense, bm25 and hybrid fit each model once.
    bm25s: FitCache[BM25] = field(default_factory=FitCache, kw_only=True, repr=False)
    fits: FitCache[Embedder] = field(default_factory=FitCache, kw_only=True, repr=False)
    fusion: Fusion | None = field(default=None, kw_only=True)
    reranker: Reranker | None = field(default=None, kw_only=True)
    diversity: Diversity | None = field(default=None, kw_only=True)
    expansion: QueryExpansion | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            choices = ", ".join(METHODS)
            raise ValueError(f"unknown retrieval method {self.method!r}; choose from: {choices}")
        if self.reranker is not None and self.method != "hybrid":
            raise ValueError(
                f"a reranker reads both rankings: method must be 'hybrid' (got {self.method!r})"
            )

    def search(self, question: str, principal: Principal, k: int = 5) -> list[Hit]:
        """The top-k hits for `question` among the chunks `principal` may read."""
        k = check_int("k", k, minimum=1)
        if self.diversity is not None:
            return self.diverse(question, principal, k, self.diversity)
        if self.expansion is not None:
            return self.expanded(question, principal, k, self.expansion)
        if self.method == "dense":
            return self.dense(question, principal, k, min_score=self.min_score)
        if self.method == "bm25":
            return self.keyword(question, principal, k, min_score=self.min_score)
        if self.reranker is not None:
            return self.reranked(question, principal, k, self.reranker)
        depth = k * CANDIDATES_PER_RANKER
        dense = self.dense(question, principal, depth, min_score=self.min_score)
        keyword = self.keyword(question, principal, depth)
        if self.fusion is None:
            return reciprocal_rank_fusion([dense, keyword], k)
        return self.fusion.fuse(dense, keyword, k)

    def reranked(
        self, question: str, principal: Principal, k: int, reranker: Reranker
    ) -> list[Hit]:
        """Hybrid search's top `rerank.DEPTH` (at least k), reordered by the reranker."""
        depth = max(DEPTH, k)
        dense = self.dense(question, principal, depth * CANDIDATES_PER_RANKER)
        keyword = self.keyword(question, principal, depth * CANDIDATES_PER_RANKER)
        found = candidates(Rankings(tuple(dense), tuple(keyword)), self.fusion or Fusion(), depth)
        return reranker.rerank(question, found, k)

    def expanded(
        self, question: str, principal: Principal, k: int, expansion: QueryExpansion
    ) -> list[Hit]:
        """The top-k hits for the transformed question: each query searched, then fused."""
        plain = replace(self, expansion=None)
        queries = plain.queries(question, principal, expansion)
        if len(queries) == 1:
            return plain.search(queries[0], principal, k)
        depth = k * CANDIDATES_PER_RANKER
        return reciprocal_rank_fusion([plain.search(q, principal, depth) for q in queries], k)

    def queries(self, question: str, principal: Principal, expansion: QueryExpansion) -> list[str]:
        """The queries `expansion` searches for `question`, its feedback drawn from this
        retriever's top hits among the chunks `principal` may read."""
        readable = current_chunks(self.store, principal)
        top = self.search(question, principal, expansion.feedback)  # by its own method
        terms = feedback_terms(
            question, [hit.chunk for hit in top], readable, n_terms=expansion.n_terms
        )
        return expansion.queries(question, terms)

    def dense(
        self, question: str, principal: Principal, k: int, *, min_score: float | None = None
    ) -> list[Hit]:
        embedder = self.embedder_for(principal.tenant)
        if embedder is None:
            return []
        query = embedder.embed([question])[0]
        return current_search(self.store, query, principal, k, min_score=min_score)

    def keyword(
        self, question: str, principal: Principal, k: int, *, min_score: float | None = None
    ) -> list[Hit]:
        stored = getattr(self.store, "keyword_search", None)  # BM25 kept in the index file
        if stored is not None and (min_score is None or min_score >= 0):
            return current_keyword_search(
                self.store, question, principal, k, min_score=min_score or 0.0
            )
        chunks = self.store.chunks(principal)
        if not chunks:
            return []
        key = (principal.tenant, tuple(sorted(principal.groups)))
        bm25 = self.bm25s.get(key, chunks, lambda: BM25().fit([c.text for c in chunks]))
        threshold = 0.0 if min_score is None else min_score

        def ranked(depth: int) -> list[Hit]:
            rows, scores = bm25.search(question, min(depth, len(chunks)))
            # A BM25 score of 0 means no query word occurs in the chunk: not a match at all.
            return [
                Hit(chunks[r], float(s)) for r, s in zip(rows, scores, strict=True) if s > threshold
            ]

        return without_hidden(self.store, principal, k, ranked)  # superseded: searched past

    def diverse(
        self, question: str, principal: Principal, k: int, diversity: Diversity
    ) -> list[Hit]:
        """`diversity.depth(k)` candidates by this retriever's method, then k chosen by it."""
        plain = replace(self, diversity=None)  # the same store and caches, no diversity
        hits = plain.search(question, principal, diversity.depth(k))
        return diversity.select(hits, k, self.store)

    def embedder_for(self, tenant: str) -> Embedder | None:
        """The embedder for questions of `tenant` (`raglab.store.indexing.tenant_embedder`).

        The index's embedder, or for a fittable one its fit on the tenant's chunks (in
        store order); None when the tenant has no chunk a fit could learn from.
        """
        if not is_fittable(self.embedder):
            return self.embedder
        chunks = [chunk for chunk in self.store.chunks() if chunk.tenant == tenant]
        if not chunks:
            return None
        return self.fits.get(
            tenant,
            chunks,
            lambda: tenant_embedder(self.store, self.embedder, tenant, [c.text for c in chunks]),
        )
