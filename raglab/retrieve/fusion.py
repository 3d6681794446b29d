"""Fusion: one ranking from several, and how much the dense and keyword rankings each say.

Reciprocal rank fusion (`reciprocal_rank_fusion`) gives each ranking one vote: a chunk
scores Σ 1 / (60 + its rank) over the lists it is in. With two rankers it gives both one
vote each. That helps when both are good and hurts when one is weak (`default_fusion`
draws the conclusion from `benchmarks/bench_beir.py`). Two ways to give the votes a
weight `w` (the dense side's share):

- **weighted RRF**: score = 2w / (rrf_k + dense rank) + 2(1 - w) / (rrf_k + keyword rank);
  w = 0.5 is plain RRF, exactly; w = 0 is BM25's order, w = 1 the dense order.
- **min-max fusion**: each list's scores scaled to [0, 1] (its best 1, its worst 0), then
  w · dense + (1 - w) · keyword; a chunk missing from a list gets 0 there. It keeps how
  far apart scores are, which ranks throw away.

The weight is chosen on labelled questions, on one half of them, and judged on the other
(`raglab.evaluation.tuning`: `fusion_curve`, `choose`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from raglab.records import Chunk, Hit
from raglab.validation import check_int, check_number

RRF_K = 60
"""The constant in 1 / (k + rank) from Cormack, Clarke & Büttcher (SIGIR 2009): it damps
the head of each list so one ranker's first place cannot outvote agreement lower down."""

CANDIDATES_PER_RANKER = 4
"""Hybrid search asks each ranker for k * 4 candidates, so a chunk ranked just below k by
one ranker can still be rescued by the other."""

FUSIONS = ("rrf", "minmax")
"""The ways `Fusion` combines the two rankings."""


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[Hit]], k: int, *, rrf_k: int = RRF_K
) -> list[Hit]:
    """Fuse rankings: each chunk scores sum(1 / (rrf_k + rank)) over the lists it is in.

    Ranks start at 1. Ties are broken by chunk id, so the fusion is deterministic.

    >>> from raglab.records import Chunk, Hit
    >>> a, b = Chunk("a.md", 0, "x", 0, 1), Chunk("b.md", 0, "y", 0, 1)
    >>> [h.chunk.doc_id for h in reciprocal_rank_fusion([[Hit(a, 9)], [Hit(b, 5), Hit(a, 1)]], 2)]
    ['a.md', 'b.md']
    """
    k = check_int("k", k, minimum=1)
    rrf_k = check_int("rrf_k", rrf_k, minimum=0)
    fused: dict[str, float] = {}
    chunks: dict[str, Chunk] = {}
    for ranking in rankings:
        for rank, hit in enumerate(ranking, start=1):
            fused[hit.chunk.id] = fused.get(hit.chunk.id, 0.0) + 1.0 / (rrf_k + rank)
            chunks[hit.chunk.id] = hit.chunk
    order = sorted(fused, key=lambda chunk_id: (-fused[chunk_id], chunk_id))
    return [Hit(chunks[chunk_id], fused[chunk_id]) for chunk_id in order[:k]]


def _fuse(scores: Sequence[dict[str, float]], chunks: dict[str, Chunk], k: int) -> list[Hit]:
    """Sum each chunk's scores over the lists; best first, ties by chunk id (deterministic)."""
    fused: dict[str, float] = {}
    for list_scores in scores:
        for chunk_id, score in list_scores.items():
            fused[chunk_id] = fused.get(chunk_id, 0.0) + score
    order = sorted(fused, key=lambda chunk_id: (-fused[chunk_id], chunk_id))
    return [Hit(chunks[chunk_id], fused[chunk_id]) for chunk_id in order[:k]]


def _weights(rankings: Sequence[Sequence[Hit]], weights: Sequence[float]) -> list[float]:
    if len(weights) != len(rankings):
        raise ValueError(
            f"one weight per ranking (got {len(weights)} weights for {len(rankings)} rankings)"
        )
    return [check_number("weight", w, minimum=0) for w in weights]


def weighted_rrf(
    rankings: Sequence[Sequence[Hit]], weights: Sequence[float], k: int, *, rrf_k: int = RRF_K
) -> list[Hit]:
    """Each chunk scores Σ weight / (rrf_k + rank) over the lists it is in (ranks from 1).

    Weights of 1 give `reciprocal_rank_fusion` exactly.

    >>> from raglab.records import Chunk, Hit
    >>> a, b = Chunk("a.md", 0, "x", 0, 1), Chunk("b.md", 0, "y", 0, 1)
    >>> [h.chunk.doc_id for h in weighted_rrf([[Hit(a, 9)], [Hit(b, 5)]], [1, 3], 2)]
    ['b.md', 'a.md']
    """
    k = check_int("k", k, minimum=1)
    rrf_k = check_int("rrf_k", rrf_k, minimum=0)
    chunks = {hit.chunk.id: hit.chunk for ranking in rankings for hit in ranking}
    scores = [
        {hit.chunk.id: w / (rrf_k + rank) for rank, hit in enumerate(ranking, start=1)}
        for ranking, w in zip(rankings, _weights(rankings, weights))
    ]
    return _fuse(scores, chunks, k)


def min_max(ranking: Sequence[Hit]) -> dict[str, float]:
    """Each hit's score scaled to [0, 1] within its list: best 1, worst 0 (all equal: all 1).

    >>> from raglab.records import Chunk, Hit
    >>> min_max([Hit(Chunk("a.md", 0, "x", 0, 1), 4.0), Hit(Chunk("b.md", 0, "y", 0, 1), 2.0)])
    {'a.md#0': 1.0, 'b.md#0': 0.0}
    """
    if not ranking:
        return {}
    low = min(hit.score for hit in ranking)
    spread = max(hit.score for hit in ranking) - low
    return {hit.chunk.id: (hit.score - low) / spread if spread else 1.0 for hit in ranking}


def min_max_fusion(
    rankings: Sequence[Sequence[Hit]], weights: Sequence[float], k: int
) -> list[Hit]:
    """Each chunk scores Σ weight · (its min-max scaled score in each list; 0 when absent)."""
    k = check_int("k", k, minimum=1)
    chunks = {hit.chunk.id: hit.chunk for ranking in rankings for hit in ranking}
    scores = [
        {chunk_id: w * s for chunk_id, s in min_max(ranking).items()}
        for ranking, w in zip(rankings, _weights(rankings, weights))
    ]
    return _fuse(scores, chunks, k)


@dataclass(frozen=True, slots=True)
class Fusion:
    """How hybrid search fuses its dense and keyword rankings: `method` and the dense weight.

    `Fusion()` is plain RRF (weighted RRF at w = 0.5); the fusion an index's hybrid search
    uses by default depends on its embedder (`default_fusion`).
    """

    method: str = "rrf"
    dense_weight: float = 0.5

    def __post_init__(self) -> None:
        if self.method not in FUSIONS:
            raise ValueError(f"unknown fusion {self.method!r}; choose from: {', '.join(FUSIONS)}")
        check_number("dense_weight", self.dense_weight, minimum=0, maximum=1)

    def fuse(self, dense: Sequence[Hit], keyword: Sequence[Hit], k: int) -> list[Hit]:
        """The top k of the two rankings, fused."""
        w = self.dense_weight
        if self.method == "rrf":
            return weighted_rrf([dense, keyword], [2 * w, 2 * (1 - w)], k)
        return min_max_fusion([dense, keyword], [w, 1 - w], k)

    def __str__(self) -> str:
        return f"{self.method} w={self.dense_weight:.1f}"


# --- the default: how hybrid search fuses, embedder by embedder --------------------------------

KEYWORD_LED = Fusion("rrf", 0.0)
"""BM25's ranking exactly, and after it the chunks only the dense side found (score 0, by id)."""

SCORE_LED = Fusion("minmax", 0.5)
"""Each list's scores scaled to [0, 1], then averaged: the dense side's confidence counts."""

LEXICAL_EMBEDDERS = frozenset({"hashing", "lsa"})
"""Embedders whose vectors are made of the text's own words: hashed words and character
n-grams (hashing), a low-rank projection of word counts (LSA). They see what BM25 sees,
blurred, and add little that BM25 lacks but noise."""


def default_fusion(embedder_name: str) -> Fusion:
    """The fusion hybrid search uses by default with the embedder named `embedder_name`.

    A default must not lose to its better half on a corpus nobody has measured:
    - a lexical embedder (`LEXICAL_EMBEDDERS`): `KEYWORD_LED`, so hybrid search ranks as
      BM25 does and can never fall below it: on a public benchmark every fusion that gave
      the lexical side a say fell below BM25 alone, or held level only until the
      documents were chunked;
    - any other embedder (MiniLM, a neural model you plug in): `SCORE_LED`, min-max fusion
      with equal weights (no weight fitted), which beat both of its halves there and on
      the sample questions, where rank fusion, which throws away how far ahead a
      confident hit is, stayed lower.
    The figures: `benchmarks/bench_beir.py` (BEIR SciFact, `benchmarks/results/beir.json`)
    and the README's Benchmarks section.
    Your own labelled questions decide better than any default (`raglab.evaluation.tuning`).

    >>> default_fusion("hashing") == KEYWORD_LED, default_fusion("minilm") == SCORE_LED
    (True, True)
    """
    return KEYWORD_LED if embedder_name in LEXICAL_EMBEDDERS else SCORE_LED


@dataclass(frozen=True, slots=True)
class Rankings:
    """One question's dense and keyword rankings, searched once, deep; best first."""

    dense: tuple[Hit, ...]
    keyword: tuple[Hit, ...]
