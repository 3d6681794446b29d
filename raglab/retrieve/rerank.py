"""Reranking: retrieve many, keep few, in an order a second, closer look decides.

Hybrid search ranks by two signals. A reranker reads the top `DEPTH` candidates again with
more of them — the question's words in the chunk's title, how many of its terms the chunk
holds and how close together — and keeps the best k. Offline, the second look is a learned
linear model (learning to rank, pointwise): one row of `FEATURES` per (question, chunk), a
logistic regression fitted on one half of the labelled questions to tell chunks of a
relevant document from the rest (`raglab.evaluation.tuning.fit_reranker`, scikit-learn),
judged on the other half. Its weights ship as numbers in `rerank_weights.json`, so
ranking needs no scikit-learn.

Every reranker has one verb, `rerank(question, candidates, k)`; a language model can play
the part too (`raglab.generate.llm_rerank`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from typing import Any, Protocol

import numpy as np

from raglab.ingest.stems import content_stems, stem
from raglab.records import Hit
from raglab.retrieve.fusion import Fusion, Rankings
from raglab.text import tokenize
from raglab.validation import check_int

__all__ = [
    "DEPTH",
    "FEATURES",
    "Candidate",
    "LinearReranker",
    "Reranker",
    "candidates",
    "default_reranker",
    "features",
    "load_reranker",
    "proximity",
    "shortest_span",
]

DEPTH = 30
"""Candidates a reranker reads (retrieve 30, keep k): deep enough to rescue a relevant chunk
ranked 20th, shallow enough that reading each again stays cheap."""

WEIGHTS_FILE = "rerank_weights.json"

FEATURES = (
    "bm25",  # BM25 score / the best BM25 score among the candidates (0 when absent)
    "dense",  # cosine of question and chunk (the dense list's lowest when absent)
    "bm25_rank",  # 1 / rank in the keyword list (0 when absent)
    "dense_rank",  # 1 / rank in the dense list (0 when absent)
    "fused_rank",  # 1 / rank in the fused list the candidates came from
    "title_match",  # share of the question's content stems in the title and heading
    "coverage",  # share of the question's content stems in the chunk
    "proximity",  # stems found / the shortest stretch of the chunk holding them all
)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A chunk hybrid search found, with what each ranker said about it (rank 0: absent)."""

    hit: Hit
    fused_rank: int
    dense_score: float
    dense_rank: int
    bm25_score: float
    bm25_rank: int


class Reranker(Protocol):
    """Reorders candidates for a question and keeps the best k (>= 1: the query plan's)."""

    def rerank(self, question: str, candidates: Sequence[Candidate], k: int) -> list[Hit]: ...


def candidates(rankings: Rankings, fusion: Fusion, depth: int = DEPTH) -> list[Candidate]:
    """The top `depth` of the fused rankings, each with its place in both lists."""
    depth = check_int("depth", depth, minimum=1)
    dense = {hit.chunk.id: (rank, hit.score) for rank, hit in enumerate(rankings.dense, 1)}
    bm25 = {hit.chunk.id: (rank, hit.score) for rank, hit in enumerate(rankings.keyword, 1)}
    lowest = rankings.dense[-1].score if rankings.dense else 0.0
    fused = fusion.fuse(rankings.dense, rankings.keyword, depth)
    return [
        Candidate(
            hit,
            rank,
            dense.get(hit.chunk.id, (0, lowest))[1],
            dense.get(hit.chunk.id, (0, 0.0))[0],
            bm25.get(hit.chunk.id, (0, 0.0))[1],
            bm25.get(hit.chunk.id, (0, 0.0))[0],
        )
        for rank, hit in enumerate(fused, 1)
    ]


# --- the features --------------------------------------------------------------------------


def shortest_span(terms: set[str], tokens: Sequence[str]) -> int:
    """Length of the shortest stretch of `tokens` holding every term of `terms` that occurs.

    0 when none occurs. A sliding window: grow on the right, shrink on the left while the
    window still holds every term found.

    >>> shortest_span({"annual", "leave"}, ["annual", "pay", "and", "leave", "annual"])
    2
    """
    wanted = terms & set(tokens)
    if not wanted:
        return 0
    counts: dict[str, int] = {}
    best = len(tokens)
    left = 0
    for right, token in enumerate(tokens):
        if token in wanted:
            counts[token] = counts.get(token, 0) + 1
        while len(counts) == len(wanted):
            best = min(best, right - left + 1)
            gone = tokens[left]
            if gone in counts:
                counts[gone] -= 1
                if counts[gone] == 0:
                    del counts[gone]
            left += 1
    return best


CACHED_TEXTS = 4096
"""Chunk texts whose stems are kept: a chunk is a candidate for many questions."""


@lru_cache(maxsize=CACHED_TEXTS)
def _stems(text: str) -> tuple[str, ...]:
    return tuple(stem(w) for w in tokenize(text))


@lru_cache(maxsize=CACHED_TEXTS)
def _content(text: str) -> frozenset[str]:
    return content_stems(text)


def proximity(question_stems: frozenset[str], text: str) -> float:
    """Distinct question stems found / the shortest span holding them: 1.0 when they stand
    side by side, near 0 when they are scattered; 0.0 when none occurs.

    >>> proximity(frozenset({"annual", "leav"}), "Annual leave: 25 days; leave is paid.")
    1.0
    """
    tokens = _stems(text)
    span = shortest_span(set(question_stems), tokens)
    return len(question_stems & set(tokens)) / span if span else 0.0


def _share(question_stems: frozenset[str], text: str) -> float:
    if not question_stems:
        return 0.0
    return len(question_stems & _content(text)) / len(question_stems)


def features(question: str, cands: Sequence[Candidate]) -> np.ndarray:
    """One row of `FEATURES` per candidate (a (len(cands), len(FEATURES)) float array)."""
    stems = content_stems(question)
    best_bm25 = max((c.bm25_score for c in cands), default=0.0) or 1.0
    rows = [
        [
            c.bm25_score / best_bm25,
            c.dense_score,
            1.0 / c.bm25_rank if c.bm25_rank else 0.0,
            1.0 / c.dense_rank if c.dense_rank else 0.0,
            1.0 / c.fused_rank,
            _share(stems, f"{c.hit.chunk.title} {c.hit.chunk.heading}"),
            _share(stems, c.hit.chunk.text),
            proximity(stems, c.hit.chunk.text),
        ]
        for c in cands
    ]
    return np.array(rows, dtype=np.float64).reshape(len(cands), len(FEATURES))


# --- the learned reranker ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LinearReranker:
    """score = Σ weight · (feature − mean) / scale; best first, ties by the fused order.

    `mean` and `scale` standardise each feature as it was when fitted.
    """

    weights: tuple[float, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    profile: str = ""

    def __post_init__(self) -> None:
        for name in ("weights", "mean", "scale"):
            if len(getattr(self, name)) != len(FEATURES):
                raise ValueError(f"{name} must hold {len(FEATURES)} numbers, one per feature")

    def scores(self, question: str, cands: Sequence[Candidate]) -> np.ndarray:
        x = (features(question, cands) - np.array(self.mean)) / np.array(self.scale)
        scores: np.ndarray = x @ np.array(self.weights)
        return scores

    def rerank(self, question: str, cands: Sequence[Candidate], k: int) -> list[Hit]:
        scores = self.scores(question, cands)
        # subtle: a stable sort keeps the fused order among equal scores (deterministic).
        order = sorted(range(len(cands)), key=lambda i: -scores[i])
        return [Hit(cands[i].hit.chunk, float(scores[i])) for i in order[:k]]

    def as_dict(self) -> dict[str, Any]:
        return {
            "profile": self.profile,
            "features": list(FEATURES),
            "weights": [round(w, 6) for w in self.weights],
            "mean": [round(m, 6) for m in self.mean],
            "scale": [round(s, 6) for s in self.scale],
        }


@cache
def _stored() -> dict[str, Any]:
    text = resources.files("raglab.retrieve").joinpath(WEIGHTS_FILE).read_text("utf-8")
    stored: dict[str, Any] = json.loads(text)
    return stored


def stored_figures(profile: str) -> dict[str, Any]:
    """The shipped reranker's entry for `profile`: weights, held-out figures, `enabled`."""
    entries = _stored()["rerankers"]
    if profile not in entries:
        raise KeyError(f"no reranker fitted for {profile!r}; fitted: {', '.join(sorted(entries))}")
    entry: dict[str, Any] = entries[profile]
    return entry


def load_reranker(profile: str) -> LinearReranker:
    """The shipped reranker for an embedder profile (`scripts/fit_rerank.py` wrote it)."""
    entry = stored_figures(profile)
    return LinearReranker(
        tuple(entry["weights"]), tuple(entry["mean"]), tuple(entry["scale"]), profile
    )


def default_reranker(profile: str) -> LinearReranker | None:
    """The shipped reranker for `profile` if its held-out figures let it on, else None.

    `scripts/fit_rerank.py` enables a reranker only when, on the questions it was not
    fitted on (`raglab.evaluation.tuning`), it lowers none of nDCG@10, MRR@5, recall@5,
    answered with a relevant citation and abstention (a reranker must never make things worse, answers included)
    and its nDCG@10 gain is shown to be real (its paired bootstrap interval lies above 0):
    a change that is only noise is not worth its cost.
    """
    entries = _stored()["rerankers"]
    if not entries.get(profile, {}).get("enabled", False):
        return None
    return load_reranker(profile)
