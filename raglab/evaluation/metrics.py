"""Metrics over one ranked list of document ids with binary relevance, and one over an answer.

A document is relevant or it is not. Each metric is a small function with its reference,
cross-checked against ranx in the tests. Two rules shared by every metric:

- An empty relevant set raises `ValueError`: recall is undefined without a relevant document.
  The evaluation runner (`raglab.evaluation.runner`) leaves such (unanswerable) questions out of
  these averages and scores them by abstention instead.
- A repeated id in `ranked` counts once, at its first rank; later repeats are dropped before
  scoring, so the documents behind them move up.

`holds_key_fact` judges an answer's text instead: does it state the asked-for fact (a
question's `must_contain` strings)? Citing the right document is not enough: an answer
that quotes the symptom from a table row and drops the fix cites the right document too.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Sequence

from raglab.validation import check_int

__all__ = ["hit_rate_at_k", "holds_key_fact", "mrr", "ndcg_at_k", "recall_at_k", "unique_in_order"]


def _check(relevant: Collection[str]) -> frozenset[str]:
    """Validate the relevant ids and return them as a set."""
    if isinstance(relevant, str):
        # A bare string is a collection of characters: almost certainly a mistake.
        raise TypeError(f"relevant must be a collection of ids, not a string (got {relevant!r})")
    relevant_set = frozenset(relevant)
    if not relevant_set:
        raise ValueError(
            "relevant must not be empty: recall is undefined without a relevant document "
            "(leave such questions out and score them by abstention)"
        )
    return relevant_set


def unique_in_order(ids: Iterable[str]) -> list[str]:
    """Drop repeated ids, keeping each at its first position.

    >>> unique_in_order(["a", "b", "a", "c", "b"])
    ['a', 'b', 'c']
    """
    return list(dict.fromkeys(ids))  # dicts keep insertion order


def recall_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """Share of the relevant documents found in the top k: |top k ∩ relevant| / |relevant|.

    Manning, Raghavan & Schütze, *Introduction to Information Retrieval* (2008), §8.3.

    >>> recall_at_k(["a", "b", "c"], {"b", "d"}, k=2)
    0.5
    """
    k = check_int("k", k, minimum=1)
    relevant_set = _check(relevant)
    top = unique_in_order(ranked)[:k]
    return sum(doc in relevant_set for doc in top) / len(relevant_set)


def hit_rate_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """1.0 when at least one relevant document is in the top k, else 0.0 (also "success@k").

    Averaged over questions it is the share of questions the retriever did not miss outright.

    >>> hit_rate_at_k(["a", "b", "c"], {"c"}, k=2)
    0.0
    """
    k = check_int("k", k, minimum=1)
    relevant_set = _check(relevant)
    top = unique_in_order(ranked)[:k]
    return 1.0 if any(doc in relevant_set for doc in top) else 0.0


def mrr(ranked: Sequence[str], relevant: Collection[str], k: int | None = None) -> float:
    """Reciprocal rank (1/rank, ranks from 1) of the first relevant document in the top k.

    0.0 when no relevant document is in the top k.

    This is one question's share of the Mean Reciprocal Rank (Voorhees, TREC-8 QA track, 1999);
    `evaluate` takes the mean, at its k. With `k=None` the whole list counts, as in ranx's
    "mrr"; with k, as in ranx's "mrr@k". Without a cut-off the figure depends on how deep the
    search happened to go, so the runner always gives one.

    >>> mrr(["a", "b", "c"], {"b", "d"})
    0.5
    >>> mrr(["a", "b", "c"], {"b", "d"}, k=1)
    0.0
    """
    relevant_set = _check(relevant)
    if k is not None:
        k = check_int("k", k, minimum=1)
    for rank, doc in enumerate(unique_in_order(ranked)[:k], start=1):
        if doc in relevant_set:
            return 1.0 / rank
    return 0.0


def _discount(rank: int) -> float:
    """The log2 position discount of DCG: a hit at rank r is worth 1 / log2(r + 1)."""
    return 1.0 / math.log2(rank + 1)


def ndcg_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """Normalised discounted cumulative gain at k, binary relevance, log2 discount.

    DCG@k = Σ over ranks r ≤ k holding a relevant document of 1 / log2(r + 1); the ideal DCG
    puts every relevant document first, so it sums the same discount over ranks
    1 .. min(k, |relevant|). nDCG@k = DCG@k / ideal DCG@k, between 0 and 1.
    Järvelin & Kekäläinen, "Cumulated gain-based evaluation of IR techniques", TOIS 2002
    (the formulation ranx calls "ndcg"; with 0/1 relevance Burges' 2^rel - 1 gives the same).

    >>> round(ndcg_at_k(["a", "b", "c"], {"b", "d"}, k=3), 4)
    0.3869
    """
    k = check_int("k", k, minimum=1)
    relevant_set = _check(relevant)
    top = unique_in_order(ranked)[:k]
    dcg = sum(_discount(r) for r, doc in enumerate(top, start=1) if doc in relevant_set)
    ideal = sum(_discount(r) for r in range(1, min(k, len(relevant_set)) + 1))
    return dcg / ideal


_MARKUP = re.compile(r"\[\d+\]|[*`]")
"""Citation markers ([2]) and markdown emphasis (**30 days**): what an answer may put inside
a fact without changing it."""


def _plain(text: str) -> str:
    """Case folded, markers and emphasis dropped, every run of white space one space."""
    return " ".join(_MARKUP.sub("", text).casefold().split())


def holds_key_fact(text: str, must_contain: Collection[str]) -> bool:
    """True when `text` contains every one of the `must_contain` strings.

    Case-insensitive; citation markers, `*` and backticks are ignored and white space is
    collapsed, on both sides, so "**30** days [1]" holds "30 days".
    An empty `must_contain` is refused: it would call every answer right.

    >>> holds_key_fact("E-4417 Ribbon out: replace the ribbon [1].", ["e-4417", "Replace the ribbon"])
    True
    >>> holds_key_fact("E-4417 Ribbon out [1]", ["E-4417", "replace the ribbon"])
    False
    """
    if isinstance(must_contain, str):
        raise TypeError(
            f"must_contain must be a collection of strings, not a string ({must_contain!r})"
        )
    if not must_contain:
        raise ValueError("must_contain must not be empty: every answer would hold it")
    plain = _plain(text)
    return all(_plain(fact) in plain for fact in must_contain)
