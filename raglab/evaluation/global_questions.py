"""Corpus-wide questions: GraphRAG's global search against chunk retrieval, same budget.

Each question's key points are its `must_contain` strings, scored one by one
(`holds_key_fact`): a broad question ("which tools ...?") has many right parts, and an
answer that names four of seven is better than one that names one. Per question:

- **graph**: the lines `raglab.graph.search.global_search` quotes within `max_tokens`;
- **chunks**: what chunk retrieval gives a model within the same budget: the chunks of
  `Index.search` (k = `DEPTH`), in rank order, each whole, as many as fit;
- **ask**: the answer `raglab.pipeline.ask` gives (its own budget), for reference.

Every text is counted with the same `count` (WordPiece for the figures), and every source
is checked against the asker: a document they may not read is a leak.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from raglab.embed.tokens import TokenCount
from raglab.evaluation.metrics import holds_key_fact
from raglab.evaluation.questions import Question
from raglab.graph.reader import GraphIndex
from raglab.graph.search import DEFAULT_TOKENS, global_search
from raglab.pipeline import Index, ask
from raglab.records import Chunk
from raglab.store.access import can_read

__all__ = ["DEPTH", "GlobalRow", "chunks_within", "compare_global", "key_points"]

DEPTH = 20
"""Chunks retrieval ranks for the budget to choose from (more than ever fit in it)."""


@dataclass(frozen=True, slots=True)
class GlobalRow:
    """One question's figures: key points covered, documents cited, tokens, leaks, for
    the graph, chunk retrieval and `ask`."""

    id: str
    key_points: int
    graph: int
    chunks: int
    ask: int
    ask_abstained: bool
    graph_docs: int
    chunk_docs: int
    graph_tokens: int
    chunk_tokens: int
    leaks: int


def key_points(text: str, points: Sequence[str]) -> int:
    """How many of `points` `text` holds, each scored on its own.

    >>> key_points("Berlin and Leeds [1].", ["Berlin", "Leeds", "Lisbon"])
    2
    """
    return sum(holds_key_fact(text, [point]) for point in points)


def chunks_within(chunks: Sequence[Chunk], count: TokenCount, max_tokens: int) -> list[Chunk]:
    """The chunks, in order, that fit in `max_tokens` together (a chunk that does not fit
    is skipped, a shorter one after it may still fit)."""
    kept, used = [], 0
    for chunk in chunks:
        cost = count(chunk.text)
        if used + cost <= max_tokens:
            kept.append(chunk)
            used += cost
    return kept


def compare_global(
    index: Index,
    graphs: GraphIndex,
    questions: Sequence[Question],
    *,
    count: TokenCount,
    max_tokens: int = DEFAULT_TOKENS,
) -> list[GlobalRow]:
    """The figures of every question (see the module's docstring)."""
    rows = []
    for q in questions:
        answer = global_search(q.question, graphs.view(q.asker), count=count, max_tokens=max_tokens)
        hits = index.search(q.question, q.asker, k=DEPTH)
        context = chunks_within([hit.chunk for hit in hits], count, max_tokens)
        asked = ask(q.question, index, q.asker)
        sources = [hit.chunk for hit in answer.retrieved] + context
        leaks = sum(not can_read(q.asker, c) or c.doc_id in q.leak_docs for c in sources)
        rows.append(
            GlobalRow(
                q.id,
                len(q.must_contain),
                key_points(answer.text, q.must_contain),
                key_points("\n".join(c.text for c in context), q.must_contain),
                key_points(asked.text, q.must_contain),
                asked.abstained,
                len({hit.chunk.doc_id for hit in answer.retrieved}),
                len({c.doc_id for c in context}),
                0 if answer.abstained else count(answer.text),
                sum(count(c.text) for c in context),
                leaks,
            )
        )
    return rows
