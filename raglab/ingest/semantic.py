"""Semantic chunking: cut where the meaning changes, not every so many characters.

Each sentence is embedded with the index's own embedder. Between two neighbouring
sentences, compare what comes before with what comes after: the mean vector of the
`window` sentences ending at the gap against the mean of the `window` sentences starting
after it. Where that similarity drops below the `percentile`-th percentile of the
document's own similarities, the topic changed: a boundary goes there. A threshold
taken from the document itself suits every document and every embedder, whose
similarities sit at very different levels (hashing's around 0.1, MiniLM's around 0.4).

This module says *where* the boundaries are; `raglab.ingest.chunking` cuts the text
there, keeps each chunk within its size in characters and in the embedder's tokens,
and records the offsets. ingest sits below embed in the layer order, so the embedder
arrives as a `SentenceEmbedding`: a function, not an import.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["PERCENTILE", "WINDOW", "SentenceEmbedding", "adjacent_similarities", "boundaries"]

WINDOW = 2
"""Sentences on each side of a gap: one sentence alone is a noisy witness of its topic."""

PERCENTILE = 25
"""A gap is a boundary when its similarity is below this percentile of the document's:
roughly the least similar quarter of the gaps (before the size limits add their own)."""


@dataclass(frozen=True, slots=True)
class SentenceEmbedding:
    """What semantic chunking needs from the index's embedder.

    `embed` makes one unit row per text (the embedder's `embed`). `count_tokens` and
    `max_tokens`: how many tokens the embedder reads at most, and how to count them; a
    chunk is kept below it, so no part of it is silently ignored. None: no limit.
    """

    embed: Callable[[Sequence[str]], np.ndarray]
    count_tokens: Callable[[str], int] | None = None
    max_tokens: int | None = None

    def fits(self, text: str) -> bool:
        """True when the embedder reads all of `text`."""
        if self.count_tokens is None or self.max_tokens is None:
            return True
        return self.count_tokens(text) <= self.max_tokens


def adjacent_similarities(vectors: np.ndarray, window: int = WINDOW) -> np.ndarray:
    """Cosine similarity across each gap between consecutive sentences (n rows: n - 1 gaps).

    Gap i lies between sentences i and i + 1; it compares the mean of rows
    `i - window + 1 .. i` with the mean of rows `i + 1 .. i + window` (fewer at the ends).

    >>> v = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    >>> adjacent_similarities(v, window=1).round(3).tolist()
    [1.0, 0.0, 1.0]
    """
    sims = np.zeros(max(len(vectors) - 1, 0))
    for gap in range(len(sims)):
        before = vectors[max(gap - window + 1, 0) : gap + 1].mean(axis=0)
        after = vectors[gap + 1 : gap + 1 + window].mean(axis=0)
        norms = float(np.linalg.norm(before) * np.linalg.norm(after))
        sims[gap] = float(before @ after) / norms if norms > 0 else 0.0
    return sims


def boundaries(
    similarities: Sequence[float] | np.ndarray, percentile: float = PERCENTILE
) -> list[int]:
    """The gaps whose similarity is strictly below the `percentile`-th percentile of all.

    A document whose gaps are all alike (or that has a single gap) has no boundary:
    nothing stands out as a change of topic.

    >>> boundaries([0.9, 0.2, 0.8, 0.85, 0.1], percentile=50)
    [1, 4]
    >>> boundaries([0.5, 0.5, 0.5])
    []
    """
    if len(similarities) == 0:
        return []
    threshold = float(np.percentile(np.asarray(similarities, dtype=float), percentile))
    return [gap for gap, similarity in enumerate(similarities) if similarity < threshold]
