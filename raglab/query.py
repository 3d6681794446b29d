"""The query path, composed once: from a question to the hits a prompt is built from.

    question ─► expand ─► retrieve (dense, BM25) ─► fuse ─► rerank ─► diversify ─► hits

`Retriever.search` decides everything at the entry: it checks `k`, and `QueryPlan`
decides how deep each step searches. Then each step runs once, in that order, and none
calls back into the step that called it. What `raglab.pipeline.ask` does with the hits
(prompt, generate, verify the citations) is in `raglab.pipeline`. The steps themselves
are in `raglab.retrieve` (how to rank, fuse, rerank, diversify, rewrite) and the store
(`raglab.store`: which chunks may be scored); this module ties the two, so it sits above
both.

Three methods of ranking:
- dense:  embed the question, exact cosine top-k over the store's vectors;
- bm25:   keyword scores (raglab.retrieve.bm25.BM25) over the same chunks;
- hybrid: both rankings fused (`raglab.retrieve.fusion`: reciprocal rank fusion, RRF).

Access is decided first, every time: the store scores only the chunks the principal may
read (less the superseded versions: `raglab.store.eligibility`), and BM25 is fitted on
the readable chunks alone, so a chunk the principal may not read
cannot even shift another chunk's score (its words would otherwise change BM25's idf).
A learned embedder such as LSA is fitted per access partition, on what every reader of the
partition may read (`raglab.store.indexing`): a question is embedded once per partition the
principal may read, and each partition's chunks are scored with their own fit's vector
(`Retriever.dense`). So for every method, no document a user may not read can change
their hits or scores, whether it belongs to another tenant or to another group.

What is fitted on chunks (a learned embedder per partition here; BM25 per set of readable
chunks, in the store) is cached, and reused only while those chunks are unchanged in
content, not just in ids: a document rewritten under the same chunk ids gets a new model.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from raglab.embed.embedders import Embedder, is_fittable
from raglab.records import Chunk, Hit, Partition, Principal
from raglab.retrieve.diversity import Diversity
from raglab.retrieve.fusion import CANDIDATES_PER_RANKER, Fusion, Rankings, reciprocal_rank_fusion
from raglab.retrieve.query_expansion import QueryExpansion, feedback_terms
from raglab.retrieve.rerank import DEPTH, Reranker, candidates
from raglab.store.access import can_read
from raglab.store.indexing import fit_chunks, partition_embedder
from raglab.store.protocol import VectorStore
from raglab.validation import check_int, check_number

METHODS = ("dense", "bm25", "hybrid")
"""The ways a `Retriever` ranks chunks."""

Model = TypeVar("Model")

CACHE_SIZE = 64
"""Models a cache keeps before it starts afresh: memory stays bounded even when every
question comes from another set of groups."""


class FitCache(Generic[Model]):
    """Models fitted on lists of chunks, one per key, reused while the key's chunks are equal.

    Subtle: equal chunks (id, text, access metadata), never only equal ids. A document
    rewritten under the same chunk ids must get a new model, or its old words would go on
    shaping the space its new text is searched in.
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


@dataclass(frozen=True, slots=True)
class Depth:
    """How deep one ranking searches: each ranker's list, what a reranker reads, what is kept."""

    keep: int  # hits the ranking returns
    per_ranker: int  # hits each ranker (dense, BM25) returns before they are fused
    reranked: int = 0  # fused candidates the reranker reads (0: no reranker)


def ranking_depth(n: int, method: str, *, reranked: bool) -> Depth:
    """The depth of a ranking that keeps `n` hits: `n` for one ranker alone; for hybrid
    search `CANDIDATES_PER_RANKER` times as many from each ranker, and with a reranker
    each ranker's list is as deep as that for the `rerank.DEPTH` candidates it reads."""
    if method != "hybrid":
        return Depth(n, n)
    if not reranked:
        return Depth(n, n * CANDIDATES_PER_RANKER)
    read = max(DEPTH, n)
    return Depth(n, read * CANDIDATES_PER_RANKER, read)


@dataclass(frozen=True, slots=True)
class QueryPlan:
    """Everything a search decides before it starts: `k`, and how deep each step searches.

    `pool`: the hits retrieved before diversifying (k itself without diversity).
    `alone`: the ranking of the question searched alone (it keeps `pool` hits).
    `each`: the ranking of each of several rewrites, fused to `pool` afterwards.
    `feedback`: the first look query expansion draws its words from (None: no expansion).
    """

    k: int
    pool: int
    alone: Depth
    each: Depth
    feedback: Depth | None

    @classmethod
    def decide(
        cls,
        k: int,
        *,
        method: str,
        reranked: bool,
        diversity: Diversity | None,
        expansion: QueryExpansion | None,
    ) -> QueryPlan:
        """The plan for a top-k search; `k` is checked here, and only here.

        >>> plan = QueryPlan.decide(5, method="hybrid", reranked=False, diversity=None,
        ...                         expansion=None)
        >>> plan.alone  # each ranker 20 deep, fused, 5 kept
        Depth(keep=5, per_ranker=20, reranked=0)
        >>> QueryPlan.decide(5, method="hybrid", reranked=True, diversity=Diversity(),
        ...                  expansion=None).alone  # 20 to diversify; 30 reranked of 120 each
        Depth(keep=20, per_ranker=120, reranked=30)
        """
        k = check_int("k", k, minimum=1)
        pool = k if diversity is None else diversity.depth(k)
        return cls(
            k,
            pool,
            alone=ranking_depth(pool, method, reranked=reranked),
            # Several rewrites: each searched 4 times deeper, so that RRF has room to agree.
            each=ranking_depth(pool * CANDIDATES_PER_RANKER, method, reranked=reranked),
            feedback=None
            if expansion is None
            else ranking_depth(expansion.feedback, method, reranked=reranked),
        )


@dataclass
class Retriever:
    """Ranks the chunks of one store for a principal, by `method` (dense, bm25 or hybrid).

    `embedder` is the one the index was built with; for a fittable one (LSA), a question is
    embedded by the fit of each access partition the principal may read (`embedders_for`).
    `min_score` drops hits scoring below it (cosine for dense, BM25 score for bm25; for
    hybrid it applies to the dense candidates, since RRF scores are ranks, not evidence).
    `fusion` weighs the two rankings of hybrid search (`raglab.retrieve.fusion`; None: plain RRF);
    `reranker` reorders hybrid search's top `raglab.retrieve.rerank.DEPTH` and keeps k (None: off).
    `diversity` (`raglab.retrieve.diversity`): near duplicates dropped and k kept by MMR.
    `expansion` (`raglab.retrieve.query_expansion`): the question rewritten, the rankings fused.
    The store decides which chunks are scored: those the principal may read, less the
    documents superseded by one they may read (`raglab.store.eligibility`).
    """

    store: VectorStore
    embedder: Embedder
    method: str = "hybrid"
    min_score: float | None = None
    # A learned embedder's fits, reused while their partition's chunks are equal. An Index
    # hands the same cache to all its retrievers, so dense and hybrid fit each partition once.
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
        if self.method == "bm25" and self.min_score is not None:
            # a BM25 score is never below 0, and 0 means no word of the question occurs
            check_number("min_score", self.min_score, minimum=0)

    def plan(self, k: int) -> QueryPlan:
        """How a top-k search with this retriever's settings goes (`k` checked here)."""
        return QueryPlan.decide(
            k,
            method=self.method,
            reranked=self.reranker is not None,
            diversity=self.diversity,
            expansion=self.expansion,
        )

    def search(self, question: str, principal: Principal, k: int = 5) -> list[Hit]:
        """The top-k hits for `question` among the chunks `principal` may read."""
        plan = self.plan(k)
        queries = self.expand(question, principal, plan)
        if len(queries) == 1:
            hits = self.ranked(queries[0], principal, plan.alone)
        else:  # several rewrites: one ranking each, fused
            rankings = [self.ranked(query, principal, plan.each) for query in queries]
            hits = reciprocal_rank_fusion(rankings, plan.pool)
        return self.diversify(hits, plan.k)

    def expand(self, question: str, principal: Principal, plan: QueryPlan) -> list[str]:
        """The queries to search for `question`: the question alone, or its rewrites
        (`expansion`), their words drawn from this retriever's first look among the chunks
        `principal` may read."""
        if self.expansion is None or plan.feedback is None:
            return [question]
        readable = self.store.chunks(principal)
        top = self.ranked(question, principal, plan.feedback)
        feedback = [hit.chunk for hit in top]
        terms = feedback_terms(question, feedback, readable, n_terms=self.expansion.n_terms)
        return self.expansion.queries(question, terms)

    def ranked(self, question: str, principal: Principal, depth: Depth) -> list[Hit]:
        """One ranking of `question`: retrieve by `method`, then fuse and rerank (hybrid)."""
        if self.method == "dense":
            return self.dense(question, principal, depth.keep, min_score=self.min_score)
        if self.method == "bm25":
            return self.keyword(question, principal, depth.keep, min_score=self.min_score)
        # A reranker reads the candidates' own scores: none is dropped below min_score.
        floor = None if self.reranker is not None else self.min_score
        dense = self.dense(question, principal, depth.per_ranker, min_score=floor)
        keyword = self.keyword(question, principal, depth.per_ranker)
        fusion = self.fusion or Fusion()  # plain RRF
        if self.reranker is None:
            return fusion.fuse(dense, keyword, depth.keep)
        found = candidates(Rankings(tuple(dense), tuple(keyword)), fusion, depth.reranked)
        return self.reranker.rerank(question, found, depth.keep)

    def diversify(self, hits: list[Hit], k: int) -> list[Hit]:
        """k of `hits` chosen by `diversity` (None: the hits as they are, k or fewer)."""
        if self.diversity is None:
            return hits
        return self.diversity.select(hits, k, self.store)

    def dense(
        self, question: str, principal: Principal, k: int, *, min_score: float | None = None
    ) -> list[Hit]:
        """The dense ranker: the k chunks nearest the question's vector.

        With a learned embedder, the chunks of each access partition the principal may read
        are scored with that partition's fit's vector of the question, and the rankings
        merged by score (equal scores in store order, as within one store search).
        """
        hits = [
            hit
            for part, embedder in self.embedders_for(principal).items()
            for hit in self.store.search(
                embedder.embed([question])[0], principal, k, min_score=min_score, partition=part
            )
        ]
        hits.sort(key=lambda hit: (-hit.score, hit.chunk.doc_id, hit.chunk.index))
        return hits[:k]

    def keyword(
        self, question: str, principal: Principal, k: int, *, min_score: float | None = None
    ) -> list[Hit]:
        """The keyword ranker: the k chunks with the best BM25 scores above `min_score` (0)."""
        return self.store.keyword_search(question, principal, k, min_score=min_score or 0.0)

    def embedders_for(self, principal: Principal) -> dict[Partition | None, Embedder]:
        """The embedder of each access partition `principal` may read, to embed their question.

        {None: the index's embedder} (one vector for every chunk), unless it is fittable:
        then each readable partition's fit (`raglab.store.indexing.partition_embedder`).
        """
        if not is_fittable(self.embedder):
            return {None: self.embedder}
        chunks = self._tenant_chunks(principal.tenant)
        parts = sorted({Partition.of(chunk) for chunk in chunks})
        return {part: self._fit(part, chunks) for part in parts if can_read(principal, part)}

    def embedder_for(self, tenant: str) -> Embedder | None:
        """The embedder every user of `tenant` shares, for the answerer's sentence scores.

        The index's embedder, or for a fittable one the fit of the tenant's public
        partition, which learned only what every user of the tenant may read; None when
        the tenant has no public chunk to learn from.
        """
        if not is_fittable(self.embedder):
            return self.embedder
        public = Partition(tenant)
        chunks = self._tenant_chunks(tenant)
        if not any(Partition.of(chunk) == public for chunk in chunks):
            return None
        return self._fit(public, chunks)

    def _tenant_chunks(self, tenant: str) -> list[Chunk]:
        return [chunk for chunk in self.store.chunks() if chunk.tenant == tenant]

    def _fit(self, part: Partition, tenant_chunks: list[Chunk]) -> Embedder:
        """The fit of partition `part`, made from `tenant_chunks` (in store order) and cached."""
        learned = fit_chunks(tenant_chunks, part)
        return self.fits.get(
            part,
            learned,
            lambda: partition_embedder(
                self.store, self.embedder, part, [c.indexed_text for c in learned]
            ),
        )
