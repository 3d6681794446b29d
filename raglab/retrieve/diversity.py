"""Diversity: drop near-duplicate chunks, then choose a varied top-k (MMR).

A ranked list of chunks has two habits that waste a prompt's room:

- near duplicates: the same paragraph twice (boilerplate copied into many pages, a
  document stored twice, sliding windows that overlap by half) — `dedup` keeps the
  better-ranked copy. Two chunks are near duplicates when the Jaccard similarity of their
  word shingles (runs of `SHINGLE_WORDS` words) reaches a threshold;
- one document filling every place: its five chunks all resemble the question, so they
  all rank high — `mmr` (maximal marginal relevance) picks each next chunk for being
  relevant *and* unlike the chunks already picked.

`Diversity` bundles both for the query path (`raglab.query.Retriever`): it retrieves
`candidates * k` chunks, drops the duplicates, and keeps k by MMR. The hits keep their
retrieval scores, so after MMR the scores need not fall in rank order.

>>> from raglab.records import Chunk, Hit
>>> hits = [Hit(Chunk("a.md", 0, "Claims are paid within ten days.", 0, 32), 2.0),
...         Hit(Chunk("b.md", 0, "Claims are paid within ten days.", 0, 32), 1.9),
...         Hit(Chunk("c.md", 0, "Hotels cost at most 180 euros.", 0, 30), 1.0)]
>>> [hit.chunk.doc_id for hit in dedup(hits)]
['a.md', 'c.md']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from raglab.records import Hit
from raglab.text import tokenize
from raglab.validation import check_int, check_number

if TYPE_CHECKING:
    from raglab.store.protocol import VectorStore

SHINGLE_WORDS = 3
"""Words per shingle: three-word runs tell "paid within ten days" from "ten days of leave",
which single words (a bag of words) would call alike."""

DEDUP_THRESHOLD = 0.7
"""Jaccard similarity from which two chunks count as the same text: a copy with a changed
word or two in fifty stays above it, two paragraphs on one topic stay far below."""

MMR_LAMBDA = 0.7
"""Weight of relevance against novelty in MMR: 1 is the plain ranking, 0 picks for
novelty alone. 0.7 leans on relevance, as Carbonell & Goldstein's experiments did."""

CANDIDATES = 4
"""A diversified search draws k * 4 candidates, so MMR has chunks of other documents to
choose from when one document fills the first k places."""


def shingles(text: str, n: int = SHINGLE_WORDS) -> frozenset[tuple[str, ...]]:
    """The set of runs of `n` consecutive words of `text` (lowercase `\\w+` words).

    A text shorter than `n` words is one shingle of all its words; an empty text none.

    >>> sorted(shingles("Paid within ten days", 3))
    [('paid', 'within', 'ten'), ('within', 'ten', 'days')]
    """
    return _shingles(text, check_int("n", n, minimum=1))


@lru_cache(maxsize=4096)  # the same chunks come back question after question
def _shingles(text: str, n: int) -> frozenset[tuple[str, ...]]:
    words = tokenize(text)
    if len(words) < n:
        return frozenset([tuple(words)]) if words else frozenset()
    return frozenset(tuple(words[i : i + n]) for i in range(len(words) - n + 1))


def jaccard(a: frozenset[object], b: frozenset[object]) -> float:
    """|a ∩ b| / |a ∪ b|: 1 for equal sets, 0 for disjoint ones (and for two empty sets).

    >>> jaccard(frozenset("abc"), frozenset("bcd"))
    0.5
    """
    shared = len(a & b)
    union = len(a) + len(b) - shared
    return shared / union if union else 0.0


def near_duplicates(a: str, b: str, *, threshold: float = DEDUP_THRESHOLD) -> bool:
    """True when the Jaccard similarity of the texts' word shingles is >= `threshold`."""
    x, y = shingles(a), shingles(b)
    # Jaccard is at most min size / max size: most pairs are ruled out without a set operation.
    return min(len(x), len(y)) >= threshold * max(len(x), len(y)) and jaccard(x, y) >= threshold


def dedup(
    hits: Sequence[Hit], *, threshold: float = DEDUP_THRESHOLD, limit: int | None = None
) -> list[Hit]:
    """`hits` in order, without each hit whose text is a near duplicate of a kept one.

    The first (best-ranked) copy is kept; with `limit`, the walk stops once that many are
    kept. Exact pairwise comparison, fine for the tens of hits a prompt takes; MinHash
    would estimate the same Jaccard similarity for millions of chunks.
    """
    threshold = check_number("threshold", threshold, minimum=0, maximum=1)
    kept: list[Hit] = []
    for hit in hits:
        if limit is not None and len(kept) >= limit:
            break
        if not any(
            near_duplicates(hit.chunk.text, k.chunk.text, threshold=threshold) for k in kept
        ):
            kept.append(hit)
    return kept


def mmr(
    relevance: ArrayLike,
    similarity: np.ndarray,
    k: int,
    *,
    lambda_: float = MMR_LAMBDA,
    keep: Callable[[int, list[int]], bool] | None = None,
) -> list[int]:
    """Indices of k items chosen greedily by maximal marginal relevance.

    Each step takes the item i maximising λ · relevance[i] − (1 − λ) · max_j similarity[i, j]
    over the items j already chosen (Carbonell & Goldstein, SIGIR 1998); the first pick is
    the most relevant item. Ties go to the lower index, so the choice is deterministic.
    An item picked while `keep(item, chosen)` is False is dropped for good (a near duplicate
    of a chosen item, say): only picks are checked, never every pair.

    >>> sim = np.array([[1.0, 0.9, 0.1], [0.9, 1.0, 0.2], [0.1, 0.2, 1.0]])
    >>> mmr([1.0, 0.95, 0.5], sim, 2, lambda_=0.5)
    [0, 2]
    """
    k = check_int("k", k, minimum=1)
    lambda_ = check_number("lambda_", lambda_, minimum=0, maximum=1)
    relevance = np.asarray(relevance, dtype=np.float64)
    similarity = np.asarray(similarity, dtype=np.float64)
    if similarity.shape != (len(relevance), len(relevance)):
        raise ValueError(
            f"similarity must be {len(relevance)} x {len(relevance)} (got {similarity.shape})"
        )
    chosen: list[int] = []
    # closest[i]: the highest similarity of item i to any item chosen so far.
    closest = np.full(len(relevance), -np.inf)
    left = np.ones(len(relevance), dtype=bool)
    while left.any() and len(chosen) < k:
        penalty = np.where(np.isfinite(closest), closest, 0.0)
        gain = np.where(left, lambda_ * relevance - (1 - lambda_) * penalty, -np.inf)
        best = int(np.argmax(gain))  # argmax returns the first maximum: the lower index
        left[best] = False
        if keep is not None and not keep(best, chosen):
            continue
        chosen.append(best)
        closest = np.maximum(closest, similarity[:, best])
    return chosen


def relevance_of(hits: Sequence[Hit]) -> list[float]:
    """Retrieval scores rescaled to [0, 1] (best 1, worst 0), comparable with a cosine.

    Scores of dense, BM25 and RRF have different ranges; MMR weighs relevance against a
    similarity between 0 and 1, so the scores are min-max rescaled. All equal: all 1.
    """
    scores = [hit.score for hit in hits]
    if not scores:
        return []
    low, high = min(scores), max(scores)
    if high == low:
        return [1.0] * len(scores)
    return [(score - low) / (high - low) for score in scores]


@dataclass(frozen=True, slots=True)
class Diversity:
    """How a retriever diversifies: k chosen by MMR, no two of them near duplicates.

    `lambda_`: MMR's weight of relevance (None: no MMR, the ranking is only cut at k).
    `dedup`: the Jaccard threshold for near duplicates (None: duplicates are kept).
    `candidates`: how many times k chunks are retrieved before choosing.
    """

    lambda_: float | None = MMR_LAMBDA
    dedup: float | None = DEDUP_THRESHOLD
    candidates: int = CANDIDATES

    def __post_init__(self) -> None:
        if self.lambda_ is not None:
            check_number("lambda_", self.lambda_, minimum=0, maximum=1)
        if self.dedup is not None:
            check_number("dedup", self.dedup, minimum=0, maximum=1)
        check_int("candidates", self.candidates, minimum=1)

    def depth(self, k: int) -> int:
        """How many chunks to retrieve before choosing k."""
        return k * self.candidates

    def select(self, hits: Sequence[Hit], k: int, store: VectorStore) -> list[Hit]:
        """k of `hits` (best first): duplicates dropped, then MMR over the chunks' cosines.

        The cosines come from the vectors `store` holds for the hits (`stored_vectors`):
        the chunks are not embedded again. `lambda_` None keeps the ranking as it is.
        `k` >= 1 comes from the query plan that drew the hits (`raglab.query.QueryPlan`).
        """
        threshold = self.dedup
        if self.lambda_ is None or len(hits) <= 1:
            return (
                list(hits[:k]) if threshold is None else dedup(hits, threshold=threshold, limit=k)
            )

        keep: Callable[[int, list[int]], bool] | None = None
        if threshold is not None:

            def new(i: int, chosen: list[int]) -> bool:  # not a near duplicate of a chosen hit
                text = hits[i].chunk.text
                return not any(
                    near_duplicates(text, hits[j].chunk.text, threshold=threshold) for j in chosen
                )

            keep = new

        vectors = stored_vectors(store, hits)  # unit rows
        similarity = vectors @ vectors.T
        order = mmr(relevance_of(hits), similarity, k, lambda_=self.lambda_, keep=keep)
        return [hits[i] for i in order]


def stored_vectors(store: VectorStore, hits: Sequence[Hit]) -> np.ndarray:
    """The vectors `store` holds for the hits' chunks, one row per hit.

    Subtle: looked up by chunk id in store order, the order of `store.vectors()`' rows.
    """
    rows = {chunk.id: row for row, chunk in enumerate(store.chunks())}
    return np.asarray(store.vectors()[[rows[hit.chunk.id] for hit in hits]], dtype=np.float64)
