"""The pipeline notebook 10 audits: as an AI assistant might write it, flaws and all.

It was written for the notebook, on purpose, to look like the real thing: short, readable,
typed, built from good parts (raglab's chunker, embedder and `top_k`), and it answers the
demo question well. It also has six flaws, each a classic of generated RAG code:

    retrieve  ranks every chunk, then keeps the asker's company's: access after ranking,
              and groups never checked
    prompt    pastes the sources into the prompt as plain text, with no budget
    ask       passes the model's `[n]` markers through unchecked
    update    keeps the old vectors when a document's text changes
    save/load stores no model, and loads vectors with whatever embedder it is given

Its methods are the ones its tests call (`retrieve`, `prompt`, `ask`, `update`, `add`,
`save`, `load`); notebook 10 fixes them one subclass method at a time. The model behind
it is `ScriptedModel`, a stand-in that behaves as real models do where it matters here.

>>> pipeline = AssistantPipeline()
>>> print(pipeline.ask("How many vacation days do I get?", Principal("ann", "acme")).text)
Every full-time employee receives 25 working days of annual leave (vacation) per calendar year [1]. The full policy has more details [5].
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from functools import cache
from pathlib import Path

import numpy as np

from raglab.embed.embedders import Embedder, HashingEmbedder
from raglab.generate.citations import parse_citations
from raglab.generate.generation import Generator, is_abstention
from raglab.generate.prompting import Prompt
from raglab.ingest.chunking import Chunker
from raglab.ingest.loaders import load_folder
from raglab.records import Answer, Chunk, Citation, Document, Hit, Principal
from raglab.retrieve.vectors import top_k
from raglab.samples import sample_corpus

__all__ = ["AssistantPipeline", "sample_documents"]

SYSTEM_PROMPT = (
    "You are a helpful assistant for company documents. Answer the user's question using "
    "the context below, and cite the sources you use like [1]."
)


@cache
def sample_documents() -> tuple[Document, ...]:
    """The sample corpus's documents, loaded once."""
    return tuple(load_folder(sample_corpus()).documents)


@cache
def _embedded(documents: tuple[Document, ...], embedder: Embedder) -> tuple[tuple, np.ndarray]:
    """(chunks, vectors) of `documents`, computed once per corpus and embedder."""
    chunks = tuple(c for doc in documents for c in Chunker().split(doc))
    vectors = embedder.embed([c.text for c in chunks]) if chunks else None
    vectors = np.zeros((0, embedder.dim), np.float32) if vectors is None else vectors
    vectors.flags.writeable = False  # shared between pipelines: each copies before changing
    return chunks, vectors


class AssistantPipeline:
    """Retrieval-augmented question answering over a set of documents.

    Usage:
        rag = AssistantPipeline(documents)
        answer = rag.ask("How many vacation days do I get?", Principal("ann", "acme"))
    """

    def __init__(
        self,
        documents: Iterable[Document] | None = None,
        *,
        embedder: Embedder | None = None,
        model: Generator | None = None,
    ) -> None:
        from raglab.workbook.scripted_model import ScriptedModel

        self.embedder = embedder or HashingEmbedder()
        self.model = model or ScriptedModel()
        self.chunker = Chunker()
        docs = sample_documents() if documents is None else tuple(documents)
        chunks, vectors = _embedded(docs, self.embedder)
        self.chunks: list[Chunk] = list(chunks)
        self.vectors: np.ndarray = vectors.copy()

    # --- indexing -------------------------------------------------------------------

    def add(self, documents: Iterable[Document]) -> None:
        """Chunk, embed and index new documents."""
        self.add_chunks([chunk for doc in documents for chunk in self.chunker.split(doc)])

    def update(self, document: Document) -> None:
        """Apply an edit to a document that is already indexed."""
        new_chunks = self.chunker.split(document)
        rows = [row for row, chunk in enumerate(self.chunks) if chunk.doc_id == document.id]
        # Reuse the document's rows (its vectors are already computed), add any extra chunks.
        for row, chunk in zip(rows, new_chunks):
            self.chunks[row] = chunk
        self.add_chunks(new_chunks[len(rows) :])

    def add_chunks(self, chunks: Sequence[Chunk]) -> None:
        """Embed and index chunks."""
        if chunks:
            self.chunks.extend(chunks)
            self.vectors = np.vstack([self.vectors, self.embedder.embed([c.text for c in chunks])])

    def save(self, path: str | Path) -> None:
        """Write the index to a folder, to load it later without embedding again."""
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        np.save(folder / "vectors.npy", self.vectors)
        chunks = [asdict(chunk) for chunk in self.chunks]
        (folder / "chunks.json").write_text(json.dumps(chunks), encoding="utf-8")

    def load(self, path: str | Path, *, embedder: Embedder | None = None) -> AssistantPipeline:
        """A pipeline with the index saved in `path` (embedder: the one to query it with)."""
        folder = Path(path)
        loaded = type(self)([], embedder=embedder or self.embedder, model=self.model)
        rows = json.loads((folder / "chunks.json").read_text(encoding="utf-8"))
        loaded.chunks = [Chunk(**{**row, "groups": tuple(row["groups"])}) for row in rows]
        loaded.vectors = np.load(folder / "vectors.npy")
        return loaded

    # --- answering ------------------------------------------------------------------

    def retrieve(self, question: str, principal: Principal, k: int = 5) -> list[Hit]:
        """The k chunks most similar to the question, from the user's own company."""
        query = self.embedder.embed([question])[0]
        rows, scores = top_k(query, self.vectors, min(k, len(self.chunks)))
        hits = [Hit(self.chunks[row], float(score)) for row, score in zip(rows, scores)]
        return [hit for hit in hits if hit.chunk.tenant == principal.tenant]

    def prompt(self, question: str, hits: Sequence[Hit]) -> Prompt:
        """The messages for the model: instructions, then the context and the question."""
        context = "\n\n".join(f"[{n}] {hit.chunk.text}" for n, hit in enumerate(hits, 1))
        user = f"Context:\n{context}\n\nQuestion: {question}"
        return Prompt(question, tuple(hits), SYSTEM_PROMPT, user, boundary="")

    def ask(self, question: str, principal: Principal, k: int = 5) -> Answer:
        """Answer the question from the documents, with citations."""
        hits = self.retrieve(question, principal, k)
        prompt = self.prompt(question, hits)
        text = self.model.generate(prompt)
        cited = dict.fromkeys(parse_citations(text))  # each number once, in order
        citations = [Citation(n, hits[n - 1]) for n in cited if 0 < n <= len(hits)]
        return Answer(text, tuple(citations), prompt.sources, abstained=is_abstention(text))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self.chunks)} chunks)"
