"""Contextual chunks in every store: both retrievers read the header, the answer the chunk."""

import numpy as np
import pytest

from raglab.embed.embedders import embedder
from raglab.ingest.chunking import Chunker
from raglab.records import Document, Principal
from raglab.store.indexing import sync
from raglab.store.memory import MemoryStore
from raglab.store.sqlite_store import SQLiteStore
from tests.conftest import STORES

DOCS = [
    Document(
        id="hr/leave.md",
        title="Leave policy",
        text="# Leave policy\n\nStaff get 25 days of paid leave a year.\n\n"
        "## Approval\n\nIt must be approved by your manager within 5 days.\n",
    ),
    Document(
        id="it/laptops.md",
        title="Laptops",
        text="# Laptops\n\nA laptop is replaced every 4 years.\n",
    ),
    Document(
        id="fin/travel.md", title="Travel", text="# Travel\n\nTrains are booked by the office.\n"
    ),
]
ANYONE = Principal("ann")


@pytest.fixture(params=STORES)
def make_store(request, tmp_path):
    """A new, empty store of the parametrised kind."""
    opened = []

    def factory(dim):
        if request.param == "memory":
            return MemoryStore(dim)
        if request.param == "qdrant":
            from raglab.store.qdrant_store import QdrantStore

            store = QdrantStore.create(tmp_path / "qdrant", dim=dim)
        else:
            store = SQLiteStore.create(tmp_path / "index.db", dim=dim)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


@pytest.mark.parametrize("contextual", [False, True])
def test_bm25_and_the_embedder_read_the_header_only_when_contextual(make_store, contextual):
    hashing = embedder("hashing")
    store = make_store(hashing.dim)
    chunker = Chunker(size=60, overlap=10, contextual=contextual)
    sync(store, DOCS, chunker=chunker, embedder=hashing)
    [orphan] = [c for c in store.chunks() if c.text.startswith("It must")]
    assert orphan.text == "It must be approved by your manager within 5 days."
    assert bool(orphan.context) is contextual  # stored and read back
    # BM25: "leave" is in the orphan's header only.
    found = [hit.chunk.id for hit in store.keyword_search("leave", ANYONE, k=5)]
    assert (orphan.id in found) is contextual
    # Dense: the stored vector is the embedding of the indexed text.
    row = [c.id for c in store.chunks()].index(orphan.id)
    expected = hashing.embed([orphan.indexed_text])[0]
    assert np.allclose(store.vectors()[row], expected, atol=1e-6)


def test_switching_context_on_re_embeds_every_chunk(make_store):
    hashing = embedder("hashing")
    store = make_store(hashing.dim)
    sync(store, DOCS, chunker=Chunker(size=60, overlap=10), embedder=hashing)
    report = sync(
        store, DOCS, chunker=Chunker(size=60, overlap=10, contextual=True), embedder=hashing
    )
    assert "chunker params changed" in report.rebuilt
    # Subtle: a chunk's text did not change, but what is embedded did: no stored plain
    # vector may stand in for a contextual one.
    with_header = [c for c in store.chunks() if c.context]
    assert with_header and report.reused == len(store.chunks()) - len(with_header)
