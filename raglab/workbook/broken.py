"""The engines notebook 08's tests run against: the real one, and broken ones with one flaw each.

A test is worth what it catches. Each exercise of notebook 08 is a test the learner
writes; its check runs the test on `Engine` (the real raglab: the test must pass) and on
the broken engines below (the test must fail on each). A test that passes on a broken
engine cannot tell it from a working one, so it is graded as a fail.

Where an exercise's promise has two halves (no other tenant's hits, *and* hits; `add`
refuses a wrong length, *and* a query does), one broken engine breaks each half alone, and
its `unchecked` names that half: a test that checks one half passes on the engine that
breaks the other, and the check says which half it never checked.

Every engine offers the same five verbs, so a test can reach every boundary through the
`engine` it is given:

    engine.chunk(text, size=800, overlap=100, kind="structure") -> [Chunk, ...]
    engine.embed(texts) -> float32 array, one unit row per text (`engine.dim` columns)
    engine.store(dim) -> an empty VectorStore for vectors of `dim` numbers
    engine.retrieve(question, principal, k=5, documents=None) -> [Hit, ...]
    engine.ask(question, principal, k=5, documents=None) -> Answer

`documents` defaults to the sample corpus (`raglab.sample_corpus()`), indexed once.

>>> engine = Engine()
>>> [c.text for c in engine.chunk("# Leave\\n\\n25 days.")]
['# Leave\\n\\n25 days.']
>>> EmptyChunkForEmptyDocument().chunk("")
[Chunk(doc_id='doc.md', index=0, text='', start=0, end=0, heading='', title='', tenant='default', groups=(), doc_version='1')]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

import numpy as np

from raglab.embed.embedders import HashingEmbedder
from raglab.generate.extractive import ExtractiveGenerator
from raglab.generate.generation import Generator, is_abstention
from raglab.generate.prompting import Prompt
from raglab.ingest.chunking import Chunker
from raglab.ingest.loaders import load_folder
from raglab.pipeline import Index, ask
from raglab.records import Answer, Chunk, Citation, Document, Hit, Principal
from raglab.samples import sample_corpus
from raglab.store.indexing import sync
from raglab.store.memory import MemoryStore

__all__ = [
    "BROKEN",
    "AddAcceptsAnyDimension",
    "AnswersUncited",
    "CitesUnretrievedSource",
    "CitesWhileAbstaining",
    "DropsTheLastWindow",
    "EmptyChunkForEmptyDocument",
    "Engine",
    "NeverAbstains",
    "NoAccessFilter",
    "OffsetsFoundWithFind",
    "OverlapAboveSizeAccepted",
    "OverlapEqualToSizeAccepted",
    "OverlapNotChecked",
    "QueryAcceptsAnyDimension",
    "RetrievesNothing",
    "StoreAcceptsAnyDimension",
]

DOC_ID = "doc.md"  # the id `engine.chunk` gives the text it cuts


@cache
def _sample_documents() -> tuple[Document, ...]:
    return tuple(load_folder(sample_corpus()).documents)


@cache
def _index(documents: tuple[Document, ...]) -> Index:
    """The real engine's index of `documents`, built once (hashing embedder: quick, offline)."""
    store = MemoryStore()
    report = sync(store, documents, chunker=Chunker(), embedder=HashingEmbedder())
    return Index(store, report.embedder)


class Engine:
    """The real raglab behind the five verbs a test calls: every promise holds."""

    unchecked = ""
    """In a broken engine that breaks one half of a promise: that half, as what a test
    passing on this engine never checks ("" for a flaw that is the whole promise)."""

    def chunker(self, *, size: int = 800, overlap: int = 100, kind: str = "structure") -> Any:
        """What cuts documents: anything with `split(doc)` and `params()` (a `Chunker`)."""
        return Chunker(kind=kind, size=size, overlap=overlap)

    def chunk(
        self, text: str, *, size: int = 800, overlap: int = 100, kind: str = "structure"
    ) -> list[Chunk]:
        """The chunks of `text` (as document `doc.md`); `text[c.start:c.end] == c.text`."""
        return self.chunker(size=size, overlap=overlap, kind=kind).split(Document(DOC_ID, text))

    @property
    def dim(self) -> int:
        """How many numbers `embed` gives per text."""
        return HashingEmbedder().dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One unit-length row per text."""
        return HashingEmbedder().embed(list(texts))

    def store(self, dim: int) -> Any:
        """An empty store for vectors of `dim` numbers: `add(chunks, vectors)`, `search(...)`."""
        return MemoryStore(dim=dim)

    def retrieve(
        self,
        question: str,
        principal: Principal,
        *,
        k: int = 5,
        documents: Sequence[Document] | None = None,
    ) -> list[Hit]:
        """The top-k chunks of `documents` that `principal` may read, best first (hybrid)."""
        return self.searcher(documents).search(question, principal, k=k)

    def ask(
        self,
        question: str,
        principal: Principal,
        *,
        k: int = 5,
        documents: Sequence[Document] | None = None,
    ) -> Answer:
        """The answer with its verified citations, or an abstention (`answer.abstained`)."""
        return ask(question, self.searcher(documents), principal, k=k, generator=self.generator())

    # --- the parts a broken engine swaps -----------------------------------------------------

    def searcher(self, documents: Sequence[Document] | None = None) -> Any:
        """What `retrieve` and `ask` search: anything with `search(question, principal, k=..)`."""
        docs = _sample_documents() if documents is None else tuple(documents)
        return _index(docs)

    def generator(self) -> Generator:
        """What writes the answer from the prompt."""
        return ExtractiveGenerator()

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


# --- 1. empty documents -------------------------------------------------------------------


@dataclass(frozen=True)
class _KeepsBlankDocuments:
    chunker: Chunker

    def split(self, doc: Document) -> list[Chunk]:
        if not doc.text.strip():  # the flaw: one chunk of nothing
            return [
                Chunk(doc.id, 0, doc.text, 0, len(doc.text), tenant=doc.tenant, groups=doc.groups)
            ]
        return self.chunker.split(doc)

    def params(self) -> dict[str, object]:
        return self.chunker.params()


class EmptyChunkForEmptyDocument(Engine):
    """Its chunker returns one chunk holding the text of an empty (or blank) document.

    An empty chunk gets a vector of zeros, matches nothing and fills a place in the top-k.
    """

    def chunker(self, *, size: int = 800, overlap: int = 100, kind: str = "structure") -> Any:
        return _KeepsBlankDocuments(super().chunker(size=size, overlap=overlap, kind=kind))


# --- 2. overlap -----------------------------------------------------------------------------


class OverlapNotChecked(Engine):
    """Its chunker accepts any overlap: `overlap >= size` is quietly cut to `size - 1`.

    The caller asked for something impossible and never hears of it (a step of 0 would
    loop forever, so the chunker "repairs" it instead of refusing).
    """

    def chunker(self, *, size: int = 800, overlap: int = 100, kind: str = "structure") -> Any:
        return super().chunker(size=size, overlap=max(0, min(overlap, size - 1)), kind=kind)


class OverlapEqualToSizeAccepted(Engine):
    """Its chunker refuses `overlap > size` but takes `overlap == size`, quietly cut to
    `size - 1`: the check was written `overlap > size` where it meant `>=`."""

    unchecked = "that `overlap == size` is refused too"

    def chunker(self, *, size: int = 800, overlap: int = 100, kind: str = "structure") -> Any:
        repaired = size - 1 if overlap == size else overlap  # the flaw; a larger one still raises
        return super().chunker(size=size, overlap=repaired, kind=kind)


class OverlapAboveSizeAccepted(Engine):
    """Its chunker refuses `overlap == size` (windows that would never move) but takes a
    larger overlap, quietly cut to `size - 1`."""

    unchecked = "that an `overlap` larger than `size` is refused too"

    def chunker(self, *, size: int = 800, overlap: int = 100, kind: str = "structure") -> Any:
        repaired = size - 1 if overlap > size else overlap  # the flaw; `overlap == size` raises
        return super().chunker(size=size, overlap=repaired, kind=kind)


# --- 3. embedding dimensions --------------------------------------------------------------


def _fit_width(vectors: Any, dim: int) -> np.ndarray:
    """Cut or zero-pad the last axis to `dim` numbers: the flaw of `StoreAcceptsAnyDimension`."""
    array = np.asarray(vectors, dtype=np.float32)
    width = array.shape[-1] if array.ndim else 0
    if width >= dim:
        return array[..., :dim]
    padding = [(0, 0)] * (array.ndim - 1) + [(0, dim - width)]
    return np.pad(array, padding)


class _AnyWidthStore(MemoryStore):
    """A store that fits vectors of any width to its own, in `add`, in `search`, or both."""

    def __init__(self, dim: int, *, adds: bool = True, searches: bool = True) -> None:
        super().__init__(dim=dim)
        self._fits = {"add": adds, "search": searches}

    def add(self, chunks: Sequence[Chunk], vectors: Any, **options: Any) -> None:
        if self.dim is not None and self._fits["add"]:
            vectors = _fit_width(vectors, self.dim)
        super().add(chunks, vectors, **options)

    def search(self, query: Any, principal: Principal, k: int, **options: Any) -> list[Hit]:
        if self.dim is not None and self._fits["search"]:
            query = _fit_width(query, self.dim)
        return super().search(query, principal, k, **options)


class StoreAcceptsAnyDimension(Engine):
    """Its store cuts or zero-pads a vector of the wrong length to fit, instead of refusing.

    Vectors from two different embedders then get compared number by number: scores that
    mean nothing, and no error anywhere.
    """

    def store(self, dim: int) -> Any:
        return _AnyWidthStore(dim=dim)


class AddAcceptsAnyDimension(Engine):
    """Its store refuses a query of the wrong length, but `add` cuts or zero-pads the
    vectors it is given to fit: another embedder's vectors get in, and are searched."""

    unchecked = "that `add` refuses vectors of the wrong length"

    def store(self, dim: int) -> Any:
        return _AnyWidthStore(dim=dim, searches=False)


class QueryAcceptsAnyDimension(Engine):
    """Its store refuses vectors of the wrong length in `add`, but cuts or zero-pads a
    query to fit: a question embedded by another model is searched as if it were comparable."""

    unchecked = "that a query (`store.search`) of the wrong length is refused"

    def store(self, dim: int) -> Any:
        return _AnyWidthStore(dim=dim, adds=False)


# --- 4. tenants --------------------------------------------------------------------------


@dataclass(frozen=True)
class _EveryTenant:
    """Searches as the principal in every tenant and keeps the best hits: no tenant filter."""

    index: Index

    def search(self, question: str, principal: Principal, *, k: int = 5, **options: Any):
        tenants = sorted({chunk.tenant for chunk in self.index.store.chunks()})
        hits = [
            hit
            for tenant in tenants
            for hit in self.index.search(
                question, replace(principal, tenant=tenant), k=k, **options
            )
        ]
        return sorted(hits, key=lambda hit: (-hit.score, hit.chunk.doc_id, hit.chunk.index))[:k]

    def __getattr__(self, name: str) -> Any:
        # Everything but `search` is the index's own (`ask` reads its profile and method).
        return getattr(self.index, name)


class NoAccessFilter(Engine):
    """It searches every tenant's chunks for every asker: a user can retrieve another
    company's documents (and an answer can quote them)."""

    unchecked = "that the asker gets no other tenant's chunk"

    def searcher(self, documents: Sequence[Document] | None = None) -> Any:
        return _EveryTenant(super().searcher(documents))


class RetrievesNothing(Engine):
    """Its `retrieve` filters on the asker's user name where it means their tenant: no chunk
    matches, so every search comes back empty. It leaks nothing, and finds nothing."""

    unchecked = "that the asker still gets hits (their own tenant's pages)"

    def retrieve(
        self,
        question: str,
        principal: Principal,
        *,
        k: int = 5,
        documents: Sequence[Document] | None = None,
    ) -> list[Hit]:
        # The flaw: the tenant compared is the user's name, which no chunk carries.
        misread = replace(principal, tenant=principal.user)
        return super().retrieve(question, misread, k=k, documents=documents)


# --- 5. abstention ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _AlwaysAnswers:
    inner: Generator

    def generate(self, prompt: Prompt) -> str:
        text = self.inner.generate(prompt)
        if not is_abstention(text):
            return text
        if not prompt.sources:
            return "Most likely yes."  # nothing to quote, so it makes something up
        # The flaw: quote the top source whatever it says, rather than admit it does not know.
        words = prompt.sources[0].chunk.text.replace("[", "(").replace("]", ")").split()
        return " ".join(words[:25]).rstrip(".") + " [1]."


class NeverAbstains(Engine):
    """Its answerer never says "I can't answer that": with no good evidence it quotes the
    top source anyway, cited as if it answered the question."""

    def generator(self) -> Generator:
        return _AlwaysAnswers(super().generator())


@dataclass(frozen=True)
class _GuessesUncited:
    inner: Generator

    def generate(self, prompt: Prompt) -> str:
        text = self.inner.generate(prompt)
        return "Most likely yes." if is_abstention(text) else text  # the flaw: a guess, no source


class AnswersUncited(Engine):
    """Its answerer never abstains: with no good evidence it guesses "Most likely yes.",
    citing nothing, instead of saying it cannot answer."""

    unchecked = "that the answer abstains (`answer.abstained`)"

    def generator(self) -> Generator:
        return _GuessesUncited(super().generator())


class CitesWhileAbstaining(Engine):
    """It abstains, but keeps the top source among the answer's citations: the answer says
    it cannot answer, and still points the reader at a source as if it supported something."""

    unchecked = "that an abstention cites nothing (`answer.citations == ()`)"

    def ask(
        self,
        question: str,
        principal: Principal,
        *,
        k: int = 5,
        documents: Sequence[Document] | None = None,
    ) -> Answer:
        answer = super().ask(question, principal, k=k, documents=documents)
        if answer.abstained and answer.retrieved:  # the flaw: the citation outlives the answer
            return replace(answer, citations=(Citation(1, answer.retrieved[0]),))
        return answer


# --- 6. citations ------------------------------------------------------------------------


@dataclass(frozen=True)
class _CitesOneMore:
    inner: Generator

    def generate(self, prompt: Prompt) -> str:
        text = self.inner.generate(prompt)
        if is_abstention(text):
            return text
        return f"{text} See also [{len(prompt.sources) + 1}]."  # the flaw: a source it never had


class CitesUnretrievedSource(Engine):
    """Its answerer adds a citation `[n]` beyond the sources it was given: the answer
    points at a source that was never retrieved (the engine flags it, but says it)."""

    def generator(self) -> Generator:
        return _CitesOneMore(super().generator())


# --- the chunker's offsets (the property test) ------------------------------------------------


@dataclass(frozen=True)
class _OffsetsByFind:
    chunker: Chunker

    def split(self, doc: Document) -> list[Chunk]:
        # The flaw: positions recovered from the text, not recorded while cutting.
        return [
            replace(c, start=doc.text.find(c.text), end=doc.text.find(c.text) + len(c.text))
            for c in self.chunker.split(doc)
        ]

    def params(self) -> dict[str, object]:
        return self.chunker.params()


class OffsetsFoundWithFind(Engine):
    """Its chunker finds each chunk's start with `text.find(chunk)`: right until a piece of
    text repeats, then two chunks claim the same place and the order is lost."""

    def chunker(self, *, size: int = 800, overlap: int = 100, kind: str = "structure") -> Any:
        return _OffsetsByFind(super().chunker(size=size, overlap=overlap, kind=kind))


@dataclass(frozen=True)
class _WholeWindowsOnly:
    chunker: Chunker

    def split(self, doc: Document) -> list[Chunk]:
        chunks = self.chunker.split(doc)
        # The flaw: a last window shorter than `size` is taken for a leftover and dropped.
        if len(chunks) > 1 and len(chunks[-1].text) < self.chunker.size:
            return chunks[:-1]
        return chunks

    def params(self) -> dict[str, object]:
        return self.chunker.params()


class DropsTheLastWindow(Engine):
    """Its character chunker (`kind="chars"`) drops a last window shorter than `size`: the
    end of a text is never indexed."""

    def chunker(self, *, size: int = 800, overlap: int = 100, kind: str = "structure") -> Any:
        chunker = super().chunker(size=size, overlap=overlap, kind=kind)
        return _WholeWindowsOnly(chunker) if kind == "chars" else chunker


# Each exercise of notebook 08 (its test function's name) -> the broken engines it must catch:
# the one the notebook shows first, then one per half of a two-part promise.
BROKEN: dict[str, tuple[type[Engine], ...]] = {
    "test_empty_documents_produce_no_chunks": (EmptyChunkForEmptyDocument,),
    "test_overlap_must_be_smaller_than_chunk_size": (
        OverlapNotChecked,
        OverlapEqualToSizeAccepted,
        OverlapAboveSizeAccepted,
    ),
    "test_wrong_embedding_dimensions_are_rejected": (
        StoreAcceptsAnyDimension,
        AddAcceptsAnyDimension,
        QueryAcceptsAnyDimension,
    ),
    "test_no_cross_tenant_retrieval": (NoAccessFilter, RetrievesNothing),
    "test_unanswerable_question_gets_no_answer": (
        NeverAbstains,
        AnswersUncited,
        CitesWhileAbstaining,
    ),
    "test_every_citation_refers_to_a_retrieved_source": (CitesUnretrievedSource,),
    "test_chunk_offsets_cover_the_text": (OffsetsFoundWithFind, DropsTheLastWindow),
}
