"""Query transformation: rewrite the question before searching, then fuse what each finds.

A question and the passage that answers it often use different words ("refund" against
"reimbursement"). Two offline, rule-based remedies, both drawing only on the chunks the
asker may read (so no other tenant's vocabulary can steer, or show through, a rewrite):

- expansion by pseudo-relevance feedback (`feedback_terms`): search once, assume the top
  chunks are relevant, and add the words that weigh most in them (RM3's idea, Lavrenko &
  Croft 2001, with idf so that common words do not win);
- multi-query (`QueryExpansion(mode="multi")`): search with several rewrites — the
  question, its content words, the expanded question — and fuse the rankings by RRF, so
  no single rewrite decides alone.

With a language model (`raglab.generate.llm_rewrite.LLMRewriter`), the model writes the
rewrites, and HyDE adds a passage the model imagines as the answer, searched as a query.
The model sees only the question, never the documents. The query path searches each
rewrite and fuses the rankings (`raglab.query`).

Where it hurts: an expansion drawn from wrong feedback drifts away from the question
(a question whose first hits are off topic gets off-topic words), and exact terms (error
codes, SKUs) gain nothing from synonyms while their rankings get diluted.

>>> from raglab.records import Chunk
>>> chunks = [Chunk("a", 0, "Expense claims are reimbursed by bank transfer.", 0, 47),
...           Chunk("b", 0, "The cafeteria opens at noon.", 0, 28)]
>>> feedback_terms("expense claims", chunks[:1], chunks, n_terms=2)
['bank', 'reimbursed']
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from raglab.records import Chunk
from raglab.text import STOPWORDS, tokenize
from raglab.validation import check_int

FEEDBACK_CHUNKS = 5
"""Chunks assumed relevant for feedback: enough to outvote one off-topic hit, few enough
that the tail of the ranking (mostly off topic) does not speak."""

EXPANSION_TERMS = 5
"""Words added to the question: about as many as a question has content words, so the
question keeps at least half the weight."""

MODES = ("expand", "multi")
"""How a `QueryExpansion` searches: with the expanded question alone, or with several
rewrites fused."""


def content_words(text: str) -> list[str]:
    """The words of `text` that carry meaning: no stopwords, no repeats, in order.

    >>> content_words("How many days do I have to submit an expense claim?")
    ['days', 'submit', 'expense', 'claim']
    """
    seen: dict[str, None] = {}
    for word in tokenize(text):
        if word not in STOPWORDS and word not in seen:
            seen[word] = None
    return list(seen)


def feedback_terms(
    question: str,
    feedback: Sequence[Chunk],
    collection: Sequence[Chunk],
    *,
    n_terms: int = EXPANSION_TERMS,
) -> list[str]:
    """The `n_terms` words that weigh most in the `feedback` chunks, not already asked.

    `feedback` is in rank order. A word's weight: Σ over feedback chunks of its share of
    the chunk's words divided by the chunk's rank (RM1, with 1 / rank standing in for how
    likely the chunk is relevant), times its idf ln(1 + N / df) over `collection` (the
    chunks the asker may read; the 1 keeps a word of a one-chunk collection above zero). Stopwords, numbers, one- and two-letter words and the question's own words
    are left out. Ties are broken alphabetically.
    """
    n_terms = check_int("n_terms", n_terms, minimum=0)
    asked = set(tokenize(question))
    df = Counter(word for chunk in collection for word in set(tokenize(chunk.text)))
    weight: defaultdict[str, float] = defaultdict(float)  # a Counter holds ints
    for rank, chunk in enumerate(feedback, start=1):
        words = tokenize(chunk.text)
        for word, count in Counter(words).items():
            if word in asked or word in STOPWORDS or len(word) < 3 or word.isdigit():
                continue
            weight[word] += count / len(words) / rank * math.log(1 + len(collection) / df[word])
    ranked = sorted(weight, key=lambda w: (-weight[w], w))
    return ranked[:n_terms]


def expanded(question: str, terms: Sequence[str]) -> str:
    """The question with the expansion terms appended (the question's words stay first)."""
    return " ".join([question, *terms]) if terms else question


class Rewriter(Protocol):
    """Writes rewrites of a question (a language model, say); the question is not included."""

    def rewrites(self, question: str) -> list[str]: ...


@dataclass(frozen=True, slots=True)
class QueryExpansion:
    """How the query path transforms a question (`raglab.query.Retriever.expansion`).

    `mode` "expand": search with the question plus `n_terms` feedback terms, drawn from
    its first `feedback` hits. "multi": search with the question, its content words and the
    expanded question (and, with a `rewriter`, its rewrites too) and fuse the rankings by
    reciprocal rank fusion.
    """

    mode: str = "multi"
    n_terms: int = EXPANSION_TERMS
    feedback: int = FEEDBACK_CHUNKS
    rewriter: Rewriter | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(
                f"unknown expansion mode {self.mode!r}; choose from: {', '.join(MODES)}"
            )
        check_int("n_terms", self.n_terms, minimum=0)
        check_int("feedback", self.feedback, minimum=1)

    def queries(self, question: str, terms: Sequence[str]) -> list[str]:
        """The queries searched for `question`, given its feedback `terms`: the question
        itself first (in "multi" mode), without repeats.

        >>> QueryExpansion().queries("What is the refund window?", ["days"])
        ['What is the refund window?', 'refund window', 'What is the refund window? days']
        """
        if self.mode == "expand":
            return [expanded(question, terms)]
        found = [question, " ".join(content_words(question)), expanded(question, terms)]
        if self.rewriter is not None:
            found += self.rewriter.rewrites(question)
        return list(dict.fromkeys(query for query in found if query.strip()))
