"""Answering through the graph: global search over community summaries, local search from
the entities a question names. Both return the `Answer` that `raglab.pipeline.ask` returns.

**Global search** (GraphRAG's map-reduce): *map*: each community summary is scored
against the question (its share of the question's words, each weighted by how rare it is
among the reader's sentences) and its sentences are ranked by the same weights; *reduce*:
the matching communities are read in turn, best first, one sentence from each per turn,
until the token budget is spent. A broad question ("what recurs across ...?") gets one
line from many parts of the corpus, where chunk retrieval spends the same budget on the
few chunks nearest the question.

**Local search**: the entities the question names, by name; then their sentences, and
those of their neighbours that share the question's words.

Every line is quoted from the reader's graph and cited `[n]`, source n being the chunk it
comes from (`Answer.retrieved[n - 1]`); the markers are verified as `ask`'s are
(`raglab.generate.citations.verify_citations`). No match: the abstention sentence.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from raglab.embed.tokens import TokenCount
from raglab.generate.citations import verify_citations
from raglab.generate.generation import ABSTENTION
from raglab.generate.prompting import check_question
from raglab.graph.building import Evidence
from raglab.graph.reader import GraphIndex, ReaderGraph
from raglab.ingest.stems import content_stems
from raglab.records import Answer, Chunk, Hit, Principal
from raglab.store.access import can_read

__all__ = ["MODES", "answer_of", "global_search", "graph_ask", "local_search", "named_entities"]

MODES = ("global", "local")
SPREAD = 0.5
"""In the reduce step, each further line of one community counts this much less."""
DEFAULT_TOKENS = 400
"""The token budget of a graph answer's quoted lines (and of the chunks it is compared with)."""


def graph_ask(
    question: str,
    graphs: GraphIndex,
    principal: Principal,
    *,
    mode: str = "global",
    count: TokenCount,
    max_tokens: int = DEFAULT_TOKENS,
) -> Answer:
    """Answer `question` for `principal` through their graph: `mode` "global" or "local"."""
    check_question(question)
    if mode not in MODES:
        raise ValueError(f"unknown graph search {mode!r}; choose from: {', '.join(MODES)}")
    search = global_search if mode == "global" else local_search
    return search(question, graphs.view(principal), count=count, max_tokens=max_tokens)


def global_search(
    question: str, view: ReaderGraph, *, count: TokenCount, max_tokens: int = DEFAULT_TOKENS
) -> Answer:
    """Answer a broad `question` from the community summaries of `view`, within `max_tokens`."""
    weights = _weights(view.graph.sentences)
    asked = content_stems(question)
    partials = []
    for summary in view.summaries:
        # map: the summary's lines that share the question's words, scored by those words
        scored = [(_overlap(asked, content_stems(s.text), weights), s) for s in summary.sentences]
        partials.append([(score, s) for score, s in scored if score > 0])
    picked = _reduce(partials)
    return answer_of(picked, view, count=count, max_tokens=max_tokens)


def local_search(
    question: str, view: ReaderGraph, *, count: TokenCount, max_tokens: int = DEFAULT_TOKENS
) -> Answer:
    """Answer `question` from the sentences around the entities it names, within `max_tokens`."""
    seeds = named_entities(question, view)
    if not seeds:
        return answer_of([], view, count=count, max_tokens=max_tokens)
    graph = view.graph
    neighbours = {
        other
        for r in graph.relations.values()
        for key, other in ((r.a, r.b), (r.b, r.a))
        if key in seeds and other not in seeds
    }
    weights = _weights(graph.sentences)
    asked = content_stems(question)
    scored = []
    for position, s in enumerate(graph.sentences):
        named, near = seeds.intersection(s.entities), neighbours.intersection(s.entities)
        overlap = _overlap(asked, content_stems(s.text), weights)
        if named or (near and overlap > 0):
            scored.append((-len(named), -overlap, -len(near), position, s))
    return answer_of(
        [s for *_, s in sorted(scored, key=lambda item: item[:4])],
        view,
        count=count,
        max_tokens=max_tokens,
    )


def named_entities(question: str, view: ReaderGraph) -> set[str]:
    """The keys of the entities of `view` that `question` names (whole words, any case)."""
    asked = question.lower()
    return {
        key
        for key in view.graph.entities
        if re.search(rf"(?<![\w-]){re.escape(key)}(?![\w-])", asked)
    }


def answer_of(
    lines: Sequence[Evidence], view: ReaderGraph, *, count: TokenCount, max_tokens: int
) -> Answer:
    """The cited answer quoting `lines` in order, as many as fit in `max_tokens`.

    Source n is the chunk of the first line citing it. Every source is checked readable
    by the view's reader before it is cited: a graph built wrong fails loudly here rather
    than quote a document its reader may not read.
    """
    sources: list[Chunk] = []
    quoted: list[str] = []
    used = 0
    for line in lines:
        chunk = line.chunk
        if not can_read(view.principal, chunk):
            raise PermissionError(f"graph line from {chunk.doc_id!r} is not readable by its reader")
        n = sources.index(chunk) + 1 if chunk in sources else len(sources) + 1
        text = _cited(line.text, n)
        if text in quoted:
            continue
        cost = count(text)
        if used + cost > max_tokens:
            continue  # a shorter line further on may still fit
        if n > len(sources):
            sources.append(chunk)
        quoted.append(text)
        used += cost
    if not quoted:
        return Answer(ABSTENTION, abstained=True)
    text = "\n".join(quoted)
    retrieved = tuple(Hit(chunk, 1.0) for chunk in sources)
    report = verify_citations(text, retrieved)
    return Answer(text, report.citations, retrieved, False, report.invalid)


def _cited(sentence: str, n: int) -> str:
    body = sentence.rstrip().rstrip(".!?:;, ")
    return f"{body} [{n}]."


def _reduce(partials: Sequence[Sequence[tuple[float, Evidence]]]) -> list[Evidence]:
    """Every community's lines in one ranking: a line's score, halved for each line already
    taken from its community, so that many communities speak before any one says it all."""
    queue = [
        (score * SPREAD**rank, c, rank, line)
        for c, partial in enumerate(partials)
        for rank, (score, line) in enumerate(sorted(partial, key=lambda item: -item[0]))
    ]
    return [line for *_, line in sorted(queue, key=lambda item: (-item[0], item[1], item[2]))]


def _weights(sentences: Sequence[Evidence]) -> dict[str, float]:
    """stem -> ln(N / df) over the reader's sentences: a rare word says more."""
    df: Counter[str] = Counter()
    for s in sentences:
        df.update(content_stems(s.text))
    n = len(sentences)
    return {stem: math.log(n / d) for stem, d in df.items()}


def _overlap(asked: frozenset[str], stems: frozenset[str], weights: dict[str, float]) -> float:
    return sum(weights.get(stem, 0.0) for stem in asked & stems)
