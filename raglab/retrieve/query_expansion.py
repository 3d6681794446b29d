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

With a language model (`LLMRewriter`, through `raglab.generate.openai_http`), the model writes the
rewrites, and HyDE adds a passage the model imagines as the answer, searched as a query.
The model sees only the question, never the documents.

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
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from raglab.records import Chunk, Hit, Principal
from raglab.store.versions import current_chunks
from raglab.text import STOPWORDS, tokenize
from raglab.validation import check_int

if TYPE_CHECKING:
    from raglab.generate.generation import Generator
    from raglab.retrieve.retrieval import Retriever

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
    weight: Counter[str] = Counter()
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
    """How a retriever transforms a question (`raglab.retrieve.retrieval.Retriever.expansion`).

    `mode` "expand": search with the question plus `n_terms` feedback terms. "multi":
    search with the question, its content words and the expanded question (and, with a
    `rewriter`, its rewrites too) and fuse the rankings by reciprocal rank fusion.
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

    def queries(self, question: str, retriever: Retriever, principal: Principal) -> list[str]:
        """The queries searched for `question`, the question itself first, without repeats."""
        readable = current_chunks(retriever.store, principal)
        top = retriever.search(question, principal, self.feedback)  # by its own method
        terms = feedback_terms(question, [hit.chunk for hit in top], readable, n_terms=self.n_terms)
        if self.mode == "expand":
            return [expanded(question, terms)]
        found = [question, " ".join(content_words(question)), expanded(question, terms)]
        if self.rewriter is not None:
            found += self.rewriter.rewrites(question)
        return list(dict.fromkeys(query for query in found if query.strip()))

    def search(
        self, retriever: Retriever, question: str, principal: Principal, k: int
    ) -> list[Hit]:
        """The top-k hits for the transformed question; `retriever` searches each query."""
        from raglab.retrieve.retrieval import CANDIDATES_PER_RANKER, reciprocal_rank_fusion

        plain = replace(retriever, expansion=None)
        queries = self.queries(question, plain, principal)
        if len(queries) == 1:
            return plain.search(queries[0], principal, k)
        depth = k * CANDIDATES_PER_RANKER
        return reciprocal_rank_fusion([plain.search(q, principal, depth) for q in queries], k)


# ---------------------------------------------------------------------------- with a model

MAX_QUERY_CHARS = 1000
"""The longest rewrite used: a model that rambles cannot make a query of a whole page."""

REWRITE_INSTRUCTIONS = (
    "You rewrite search questions. Reply with {n} different rewrites of the user's question, "
    "one per line, no numbering, no commentary. Use other words a policy or manual might use."
)
HYDE_INSTRUCTIONS = (
    "Write one short paragraph, as it might appear in a company handbook or product manual, "
    "that answers the user's question. Plain text, no preamble."
)


@dataclass(frozen=True, slots=True)
class LLMRewriter:
    """Rewrites (and a HyDE passage) written by a language model (`raglab.generate.generation.Generator`).

    `n` rewrites are asked for; `hyde` adds the model's imagined answer as one more query
    (Gao et al. 2022: it reads like the documents, so it lands near them). Only the
    question is sent. At most `n` lines are used, each cut to `MAX_QUERY_CHARS`.
    """

    generator: Generator
    n: int = 3
    hyde: bool = False

    def rewrites(self, question: str) -> list[str]:
        lines = self._ask(REWRITE_INSTRUCTIONS.format(n=self.n), question).splitlines()
        found = [line.strip(" -*\t0123456789.)") for line in lines]
        queries = [line[:MAX_QUERY_CHARS] for line in found if line][: self.n]
        if self.hyde:
            queries.append(self._ask(HYDE_INSTRUCTIONS, question).strip()[:MAX_QUERY_CHARS])
        return queries

    def _ask(self, instructions: str, question: str) -> str:
        from raglab.generate.prompting import Prompt

        prompt = Prompt(question, (), instructions, question, boundary="")
        return self.generator.generate(prompt)


def rewriter_from_env(*, hyde: bool = False) -> LLMRewriter | None:
    """An `LLMRewriter` for the server in RAGLAB_LLM_URL (model RAGLAB_LLM_MODEL, key
    RAGLAB_API_KEY), or None when RAGLAB_LLM_URL is not set: offline, rules only."""
    url = os.environ.get("RAGLAB_LLM_URL")
    if not url:
        return None
    from raglab.generate.openai_http import OpenAIChatGenerator

    model = os.environ.get("RAGLAB_LLM_MODEL", "")
    if not model:
        raise ValueError("RAGLAB_LLM_URL is set but RAGLAB_LLM_MODEL is not: name the model")
    generator = OpenAIChatGenerator(url, model, os.environ.get("RAGLAB_API_KEY"))
    return LLMRewriter(generator, hyde=hyde)
