"""A community's summary: extractive and cited, quoted from the reader's own graph.

GraphRAG asks a language model to write each community's report. Offline, the summary is
the community's most telling sentences, quoted: those that name the most of its entities
(then the best-connected ones), at most `PER_DOCUMENT` from one document so that a
community spread over several documents is summarised from several. Each sentence keeps
its chunk, so a summary cites where every line comes from, and it quotes only sentences
of the graph it was built from: the reader's.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from raglab.graph.building import EntityGraph, Evidence
from raglab.graph.communities import Community

__all__ = ["PER_DOCUMENT", "CommunitySummary", "summarise"]

PER_DOCUMENT = 4
"""Sentences of one document a summary may quote."""


@dataclass(frozen=True, slots=True)
class CommunitySummary:
    """A community, its title (its three best-connected entities) and its quoted sentences."""

    community: Community
    title: str
    sentences: tuple[Evidence, ...]

    def doc_ids(self) -> list[str]:
        """The documents the summary quotes, sorted."""
        return sorted({s.chunk.doc_id for s in self.sentences})

    def text(self) -> str:
        """The summary as one text: its title, then each sentence with its document."""
        lines = [self.title] + [f"- {s.text} ({s.chunk.doc_id})" for s in self.sentences]
        return "\n".join(lines)


def summarise(graph: EntityGraph, community: Community, *, size: int = 24) -> CommunitySummary:
    """The summary of `community` of `graph`: up to `size` of its sentences, the ones
    naming most of its entities first, in the order they come in the graph."""
    members = set(community.entities)
    rank = {key: i for i, key in enumerate(community.entities)}  # best connected first
    in_chunk: dict[str, set[str]] = defaultdict(set)  # chunk id -> its entities
    for sentence in graph.sentences:
        in_chunk[sentence.chunk.id].update(sentence.entities)
    scored = []
    for position, sentence in enumerate(graph.sentences):
        named = members.intersection(sentence.entities)
        around = members & in_chunk[sentence.chunk.id]  # its chunk names the community
        if around:
            best = min(rank[key] for key in named or around)
            scored.append((-len(named), best, position, sentence))
    chosen: list[Evidence] = []
    per_document: Counter[str] = Counter()
    seen: set[str] = set()
    for *_, sentence in sorted(scored, key=lambda item: item[:3]):
        doc = sentence.chunk.doc_id
        if per_document[doc] >= PER_DOCUMENT or sentence.text in seen:
            continue
        chosen.append(sentence)
        per_document[doc] += 1
        seen.add(sentence.text)
        if len(chosen) == size:
            break
    title = ", ".join(graph.entities[key].name for key in community.entities[:3])
    return CommunitySummary(community, title, tuple(chosen))
