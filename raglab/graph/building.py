"""Chunks -> the entity graph: one extraction per access partition, one graph per reader.

Sentences are extracted per access partition (`raglab.records.Partition`), as the LSA
embedder is fitted per partition (`raglab.store.indexing.fit_chunks`): every sentence of
a partition has the same readers. A reader's graph is built from the partitions they may
read, and within them only from the chunks they are answered from (a superseded version
is left out as search leaves it out), so it holds nothing they may not read: its
entities, its edges, and so its communities and their summaries depend only on readable
text.

Entities are the named things of `raglab.graph.entities`; two entities are related when
they are named in one sentence (the edge's `weight` counts such sentences), and an edge
carries the kinds a pattern named between them ("fixes", "replaces", ...).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

from raglab.graph.entities import Candidate, candidates, relation_kind
from raglab.ingest.sentences import candidate_sentences
from raglab.records import Chunk, Hit, Partition

__all__ = [
    "Entity",
    "EntityGraph",
    "Evidence",
    "GraphSentence",
    "Relation",
    "build_graph",
    "partition_sentences",
    "sentences_of",
]

HUB_SHARE = 0.75
"""An entity named in more than this share of a reader's documents (the company's own
name) says nothing about any one topic and would join every community: it is left out,
as a stopword is left out of a keyword search. Applied from `HUB_MIN_DOCUMENTS` on."""
HUB_MIN_DOCUMENTS = 4


@dataclass(frozen=True, slots=True)
class GraphSentence:
    """A quotable sentence of a chunk and the named things it mentions."""

    chunk: Chunk
    text: str
    mentions: tuple[Candidate, ...]


@dataclass(frozen=True, slots=True)
class Evidence:
    """A sentence of the graph: where it comes from and the entities (keys) it names."""

    chunk: Chunk
    text: str
    entities: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Entity:
    """A node: its key (lower case), the name as most often written, its kind, and the
    documents that name it."""

    key: str
    name: str
    kind: str
    doc_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Relation:
    """An edge between entity keys `a` < `b`: how many sentences name both, and the kinds
    of relation patterns named between them (empty: co-occurrence only)."""

    a: str
    b: str
    weight: int
    kinds: tuple[str, ...] = ()


@dataclass(frozen=True)
class EntityGraph:
    """A reader's entity graph: entities by key, relations by (a, b), and the sentences it
    was built from (a summary quotes only these)."""

    entities: Mapping[str, Entity]
    relations: Mapping[tuple[str, str], Relation]
    sentences: tuple[Evidence, ...]

    def weights(self) -> dict[tuple[str, str], float]:
        """The edges as `label_propagation` takes them: (a, b) -> weight."""
        return {pair: float(r.weight) for pair, r in self.relations.items()}

    def degree(self, key: str) -> int:
        """The summed weight of `key`'s edges."""
        return sum(r.weight for r in self.relations.values() if key in (r.a, r.b))

    def doc_ids(self) -> list[str]:
        """The documents the graph was built from, sorted."""
        return sorted({s.chunk.doc_id for s in self.sentences})


def sentences_of(chunks: Iterable[Chunk]) -> list[GraphSentence]:
    """Every quotable sentence of `chunks` with its mentions, in the order given.

    The sentences are the extractive answerer's (`raglab.ingest.sentences`): markdown
    cleaned, tables as "Header: cell" sentences, and a paragraph that addresses a model
    ("Ignore all previous instructions ...") left out, so no summary can quote it.
    """
    found = []
    for chunk in chunks:
        for sentence in candidate_sentences([Hit(chunk, 0.0)]):
            found.append(GraphSentence(chunk, sentence.text, tuple(candidates(sentence.text))))
    return found


def partition_sentences(chunks: Iterable[Chunk]) -> dict[Partition, tuple[GraphSentence, ...]]:
    """The sentences of `chunks`, per access partition (in the order the chunks come)."""
    parts: dict[Partition, list[Chunk]] = defaultdict(list)
    for chunk in chunks:
        parts[Partition.of(chunk)].append(chunk)
    return {
        part: tuple(sentences_of(members))
        for part, members in sorted(parts.items(), key=_by_partition)
    }


def _by_partition(item: tuple[Partition, object]) -> tuple[str, tuple[str, ...]]:
    return item[0].tenant, item[0].groups


def build_graph(sentences: Sequence[GraphSentence]) -> EntityGraph:
    """The entity graph of `sentences` (a reader's: see the module's docstring).

    A name met only as a sentence's first word ("Submit", "Customers") is not an entity;
    one also met inside a sentence ("Ledgerly") is. Hubs (`HUB_SHARE`) are left out.
    """
    inside = {c.key for s in sentences for c in s.mentions if not c.initial}
    named = [[r for c in s.mentions if (r := _resolved(c, inside))] for s in sentences]
    hubs = _hubs(sentences, named)
    evidence: list[Evidence] = []
    weights: Counter[tuple[str, str]] = Counter()
    typed: dict[tuple[str, str], set[str]] = defaultdict(set)
    spellings: dict[str, Counter[str]] = defaultdict(Counter)
    kinds: dict[str, str] = {}
    docs: dict[str, set[str]] = defaultdict(set)
    for sentence, mentions in zip(sentences, named, strict=True):
        first: dict[str, Candidate] = {}  # each entity's first mention in the sentence
        for c in mentions:
            if c.key in hubs:
                continue
            first.setdefault(c.key, c)
            spellings[c.key][c.name] += 1
            kinds.setdefault(c.key, c.kind)
            docs[c.key].add(sentence.chunk.doc_id)
        evidence.append(Evidence(sentence.chunk, sentence.text, keys_in_order(first)))
        for a, b in combinations(sorted(first), 2):
            weights[(a, b)] += 1
            left, right = sorted((first[a], first[b]), key=lambda c: c.start)
            kind = relation_kind(sentence.text[left.start + len(left.name) : right.start])
            if kind != "co-occurs":
                typed[(a, b)].add(kind)
    entities = {
        key: Entity(key, _most_common(spellings[key]), kinds[key], tuple(sorted(docs[key])))
        for key in sorted(spellings)
    }
    relations = {
        (a, b): Relation(a, b, weights[(a, b)], tuple(sorted(typed.get((a, b), ()))))
        for a, b in sorted(weights)
    }
    return EntityGraph(entities, relations, tuple(evidence))


def _resolved(mention: Candidate, inside: set[str]) -> Candidate | None:
    """The mention as an entity: itself unless it is a name met only at a sentence's start;
    then its tail if that is met inside a sentence ("Use Ledgerly" -> "Ledgerly"), else None."""
    if mention.kind != "name" or not mention.initial or mention.key in inside:
        return mention
    tail = mention.tail()
    return tail if tail is not None and tail.key in inside else None


def keys_in_order(first: Mapping[str, Candidate]) -> tuple[str, ...]:
    """The keys of a sentence's entities in the order the sentence names them."""
    return tuple(sorted(first, key=lambda key: first[key].start))


def _hubs(sentences: Sequence[GraphSentence], named: Sequence[list[Candidate]]) -> set[str]:
    documents = {s.chunk.doc_id for s in sentences}
    if len(documents) < HUB_MIN_DOCUMENTS:
        return set()
    naming: dict[str, set[str]] = defaultdict(set)
    for sentence, mentions in zip(sentences, named, strict=True):
        for c in mentions:
            naming[c.key].add(sentence.chunk.doc_id)
    return {key for key, docs in naming.items() if len(docs) > HUB_SHARE * len(documents)}


def _most_common(spellings: Counter[str]) -> str:
    """The spelling used most often; among equals, the first in sorted order."""
    return min(spellings, key=lambda name: (-spellings[name], name))
