"""An index's entity graphs: extracted once per access partition, assembled per reader.

`GraphIndex(index)` reads the index's chunks once and extracts the sentences of each
access partition (`raglab.graph.building.partition_sentences`). `view(principal)` builds
the reader's graph from the partitions they may read (`raglab.store.access.can_read`),
keeping only the chunks a search answers them from (`VectorStore.chunks(principal)`:
access, then versions), and then its communities and their summaries. Two readers with
the same tenant and groups share one view.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from raglab.graph.building import EntityGraph, GraphSentence, build_graph, partition_sentences
from raglab.graph.communities import Community, communities
from raglab.graph.summaries import CommunitySummary, summarise
from raglab.pipeline import Index
from raglab.records import Partition, Principal
from raglab.store.access import can_read

__all__ = ["GraphIndex", "ReaderGraph"]


@dataclass(frozen=True)
class ReaderGraph:
    """What one reader's graph holds: the graph, its communities, their summaries."""

    principal: Principal
    graph: EntityGraph
    communities: tuple[Community, ...]
    summaries: tuple[CommunitySummary, ...]

    def doc_ids(self) -> list[str]:
        """The documents the graph was built from, sorted."""
        return self.graph.doc_ids()


@dataclass
class GraphIndex:
    """The entity graphs of `index`: one extraction per access partition, a view per reader."""

    index: Index
    _partitions: dict[Partition, tuple[GraphSentence, ...]] | None = field(
        default=None, init=False, repr=False
    )
    _views: dict[tuple[str, tuple[str, ...]], ReaderGraph] = field(
        default_factory=dict, init=False, repr=False
    )

    def partitions(self) -> dict[Partition, tuple[GraphSentence, ...]]:
        """Access partition -> its sentences with their mentions (extracted on first use)."""
        if self._partitions is None:
            self._partitions = partition_sentences(self.index.store.chunks())
        return self._partitions

    def sentences_for(self, principal: Principal) -> list[GraphSentence]:
        """The sentences `principal` may read: their partitions', of the chunks they are
        answered from, in store order."""
        answered_from = {chunk.id for chunk in self.index.store.chunks(principal)}
        return [
            sentence
            for part, sentences in self.partitions().items()
            if can_read(principal, part)
            for sentence in sentences
            if sentence.chunk.id in answered_from
        ]

    def view(self, principal: Principal) -> ReaderGraph:
        """The reader's graph, communities and summaries (built once per tenant and groups)."""
        key = (principal.tenant, tuple(sorted(principal.groups)))
        if key not in self._views:
            graph = build_graph(self.sentences_for(principal))
            found = tuple(communities(graph))
            summaries = tuple(summarise(graph, c) for c in found)
            self._views[key] = ReaderGraph(principal, graph, found, summaries)
        view = self._views[key]
        return view if view.principal == principal else _as(view, principal)


def _as(view: ReaderGraph, principal: Principal) -> ReaderGraph:
    return ReaderGraph(principal, view.graph, view.communities, view.summaries)
