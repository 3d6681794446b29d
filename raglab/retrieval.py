"""Retrieval: from a question to a ranked list of hits the principal may read.

Three ways to rank, all behind one function:
- dense:  embed the question, exact cosine top-k over the store's vectors;
- bm25:   keyword scores (raglab.bm25.BM25) over the same chunks;
- hybrid: both rankings fused by reciprocal rank fusion (RRF).

Access is decided first, every time: the store scores only the chunks the principal may
read, and BM25 is fitted on those chunks alone, so a chunk the principal may not read
cannot even shift another chunk's score (its words would otherwise change BM25's idf).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from raglab.bm25 import BM25
from raglab.embedders import Embedder
from raglab.records import Chunk, Hit, Principal
from raglab.stores import VectorStore

RETRIEVERS = ("dense", "bm25", "hybrid")

RRF_K = 60
"""The constant in 1 / (k + rank) from Cormack, Clarke & Büttcher (SIGIR 2009): it damps
the head of each list so one ranker's first place cannot outvote agreement lower down."""

CANDIDATES_PER_RANKER = 4
"""Hybrid search asks each ranker for k * 4 candidates, so a chunk ranked just below k by
one ranker can still be rescued by the other."""


def reciprocal_rank_fusion(rankings: Sequence[Sequence[Hit]], k: int, *, rrf_k: int = RRF_K) -> list[Hit]:
    """Fuse rankings: each chunk scores sum(1 / (rrf_k + rank)) over the lists it is in.

    Ranks start at 1. Ties are broken by chunk id, so the fusion is deterministic.

    >>> from raglab.records import Chunk, Hit
    >>> a, b = Chunk("a.md", 0, "x", 0, 1), Chunk("b.md", 0, "y", 0, 1)
    >>> [h.chunk.doc_id for h in reciprocal_rank_fusion([[Hit(a, 9)], [Hit(b, 5), Hit(a, 1)]], 2)]
    ['a.md', 'b.md']
    """
    fused: dict[str, float] = {}
    chunks: dict[str, Chunk] = {}
    for ranking in rankings:
        for rank, hit in enumerate(ranking, start=1):
            fused[hit.chunk.id] = fused.get(hit.chunk.id, 0.0) + 1.0 / (rrf_k + rank)
            chunks[hit.chunk.id] = hit.chunk
    order = sorted(fused, key=lambda chunk_id: (-fused[chunk_id], chunk_id))
    return [Hit(chunks[chunk_id], fused[chunk_id]) for chunk_id in order[:k]]


@dataclass
class Retriever:
    """Ranks the chunks of one store for a principal, by `method` (dense, bm25 or hybrid).

    `min_score` drops hits scoring below it (cosine for dense, BM25 score for bm25; for
    hybrid it applies to the dense candidates, since RRF scores are ranks, not evidence).
    """

    store: VectorStore
    embedder: Embedder
    method: str = "hybrid"
    min_score: float | None = None
    _bm25_cache: dict[tuple[str, ...], tuple[BM25, list[Chunk]]] = field(
        default_factory=dict, init=False, repr=False
    )

    def __post_init__(self) -> None:
        if self.method not in RETRIEVERS:
            choices = ", ".join(RETRIEVERS)
            raise ValueError(f"unknown retriever {self.method!r}; choose from: {choices}")

    def search(self, question: str, principal: Principal, k: int = 5) -> list[Hit]:
        """The top-k hits for `question` among the chunks `principal` may read."""
        if k <= 0:
            raise ValueError(f"k must be > 0 (got k={k})")
        if self.method == "dense":
            return self.dense(question, principal, k, min_score=self.min_score)
        if self.method == "bm25":
            return self.keyword(question, principal, k, min_score=self.min_score)
        depth = k * CANDIDATES_PER_RANKER
        dense = self.dense(question, principal, depth, min_score=self.min_score)
        keyword = self.keyword(question, principal, depth)
        return reciprocal_rank_fusion([dense, keyword], k)

    def dense(self, question: str, principal: Principal, k: int, *, min_score: float | None = None) -> list[Hit]:
        query = self.embedder.embed([question])[0]
        return self.store.search(query, principal, k, min_score=min_score)

    def keyword(self, question: str, principal: Principal, k: int, *, min_score: float | None = None) -> list[Hit]:
        bm25, chunks = self._bm25_for(principal)
        if not chunks:
            return []
        rows, scores = bm25.search(question, k)
        threshold = 0.0 if min_score is None else min_score
        # A BM25 score of 0 means no query word occurs in the chunk: not a match at all.
        return [Hit(chunks[r], float(s)) for r, s in zip(rows, scores) if s > threshold]

    def _bm25_for(self, principal: Principal) -> tuple[BM25, list[Chunk]]:
        """BM25 fitted on exactly the chunks this principal may read (cached per chunk set)."""
        chunks = self.store.chunks(principal)
        key = tuple(chunk.id for chunk in chunks)
        if key not in self._bm25_cache:
            self._bm25_cache[key] = (BM25().fit([c.text for c in chunks]), chunks)
        return self._bm25_cache[key]
