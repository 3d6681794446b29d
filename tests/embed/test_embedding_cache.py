"""The embedding cache in raglab.store.indexing.sync: stored vectors are reused, never misused.

A chunk whose text is already in the store, embedded by the same model, takes the stored
vector; anything else (another text, another embedder version, another tenant's fit) is
embedded again. Real loaders, chunker and embedders on a copy of the sample corpus.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import numpy as np
import pytest

from raglab.embed.embedders import HashingEmbedder, LSAEmbedder
from raglab.ingest.chunking import Chunker
from raglab.ingest.loaders import load_folder
from raglab.records import Document
from raglab.store.indexing import sync
from raglab.store.memory import MemoryStore
from raglab.store.sqlite_store import SQLiteStore
from tests.conftest import STORES

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
LEAVE = "acme/policies/leave.md"


@dataclasses.dataclass(frozen=True)
class Counting:
    """Wraps an embedder and records every text it is asked to embed."""

    inner: object
    texts: list = dataclasses.field(default_factory=list, compare=False)
    version_suffix: str = ""

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def version(self) -> str:
        return self.inner.version + self.version_suffix

    def embed(self, texts):
        self.texts.extend(texts)
        return self.inner.embed(texts)


@dataclasses.dataclass(frozen=True)
class CountingFittable(Counting):
    """A counting LSA: `fit` returns a counting fit that shares the record of texts."""

    def fit(self, texts):
        return dataclasses.replace(self, inner=self.inner.fit(texts))


@pytest.fixture(params=STORES)
def store(request, tmp_path):
    if request.param == "memory":
        yield MemoryStore()
    elif request.param == "qdrant":
        from raglab.store.qdrant_store import QdrantStore

        with QdrantStore.create(tmp_path / "index.qdrant") as created:
            yield created
    else:
        yield SQLiteStore.create(tmp_path / "index.sqlite")


@pytest.fixture
def folder(tmp_path) -> Path:
    shutil.copytree(CORPUS, tmp_path / "corpus")
    return tmp_path / "corpus"


def index(store, folder: Path, embedder, chunker: Chunker | None = None):
    docs = load_folder(folder).documents
    return sync(store, docs, chunker=chunker or Chunker(), embedder=embedder)


def edit(folder: Path, doc_id: str, old: str, new: str) -> None:
    path = folder / doc_id
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")


def texts_of(store, doc_id: str) -> list[str]:
    return [chunk.text for chunk in store.chunks() if chunk.doc_id == doc_id]


def test_re_index_of_unchanged_files_embeds_nothing(store, folder):
    first = Counting(HashingEmbedder())
    index(store, folder, first)
    assert len(first.texts) == len(store) > 100
    again = Counting(HashingEmbedder())
    report = index(store, folder, again)
    assert again.texts == [] and report.embedded == report.reused == 0


def test_after_an_edit_only_the_changed_chunks_are_embedded(store, folder):
    index(store, folder, Counting(HashingEmbedder()))
    before = texts_of(store, LEAVE)
    edit(folder, LEAVE, "25 working days", "27 working days")
    embedder = Counting(HashingEmbedder())
    report = index(store, folder, embedder)
    after = texts_of(store, LEAVE)
    changed = [text for text in after if text not in before]
    assert report.updated == (LEAVE,)
    assert embedder.texts == changed and 0 < len(changed) < len(after)
    assert (report.embedded, report.reused) == (len(after), len(after) - len(changed))
    # and every vector is what a build from scratch gives
    fresh = MemoryStore()
    index(fresh, folder, HashingEmbedder())
    assert store.chunks() == fresh.chunks()
    np.testing.assert_array_equal(store.vectors(), fresh.vectors())


def test_a_new_chunker_reuses_the_chunks_that_came_out_the_same(store, folder):
    index(store, folder, Counting(HashingEmbedder()), Chunker(size=800))
    old_texts = {chunk.text for chunk in store.chunks()}
    embedder = Counting(HashingEmbedder())
    report = index(store, folder, embedder, Chunker(size=900))
    assert report.rebuilt.startswith("chunker params changed")
    new_texts = [chunk.text for chunk in store.chunks()]
    assert embedder.texts == [text for text in new_texts if text not in old_texts]
    assert report.reused == sum(text in old_texts for text in new_texts) > 0  # short docs


def test_another_embedder_version_re_embeds_everything(store, folder):
    index(store, folder, Counting(HashingEmbedder()))
    embedder = Counting(HashingEmbedder(), version_suffix=":retrained")
    report = index(store, folder, embedder)
    assert report.rebuilt.startswith("embedder version changed")
    assert sorted(embedder.texts) == sorted(chunk.text for chunk in store.chunks())
    assert report.reused == 0


def test_a_vector_is_only_reused_for_the_same_text(store):
    embedder = HashingEmbedder()
    doc = Document("a.md", "Refunds are paid within 30 days.", tenant="acme")
    sync(store, [doc], chunker=Chunker(), embedder=embedder)
    counting = Counting(embedder)
    moved = Document("b.md", doc.text, tenant="acme")  # renamed: same text, reused
    edited = Document("a.md", "Refunds are paid within 31 days.", tenant="acme")
    report = sync(store, [edited, moved], chunker=Chunker(), embedder=counting)
    assert counting.texts == [edited.text] and report.reused == 1
    vectors = {chunk.doc_id: row for chunk, row in zip(store.chunks(), store.vectors())}
    np.testing.assert_array_equal(vectors["a.md"], embedder.embed([edited.text])[0])
    np.testing.assert_array_equal(vectors["b.md"], embedder.embed([doc.text])[0])


def test_a_tenants_fitted_vectors_never_serve_another_tenant(store):
    pytest.importorskip("sklearn")
    shared = "Passwords are reset from the account page. " * 3
    docs = [
        Document("acme/a.md", shared + "Acme sells anvils and rockets.", tenant="acme"),
        Document("acme/b.md", "Acme ships rockets by rail. Anvils go by road.", tenant="acme"),
        Document("globex/a.md", shared + "Globex makes gadgets.", tenant="globex"),
        Document("globex/b.md", "Globex gadgets are sold online only.", tenant="globex"),
    ]
    chunker = Chunker(kind="chars", size=60, overlap=0)
    sync(store, docs, chunker=chunker, embedder=CountingFittable(LSAEmbedder(dim=2)))
    fits = store.meta["embedder_version"]
    assert fits["acme"] != fits["globex"]  # each tenant's LSA has its own version
    # globex changes: its fit changes, and every globex chunk is embedded by the new fit,
    # even those whose text acme also has; acme's vectors stay as they were
    acme_before = store.vectors()[[c.tenant == "acme" for c in store.chunks()]].copy()
    docs[3] = Document("globex/b.md", "Globex gadgets are sold in shops too.", tenant="globex")
    embedder = CountingFittable(LSAEmbedder(dim=2))
    report = sync(store, docs, chunker=chunker, embedder=embedder)
    globex = [chunk.text for chunk in store.chunks() if chunk.tenant == "globex"]
    assert sorted(embedder.texts) == sorted(globex) and report.reused == 0
    assert any(text in shared for text in globex)  # a text both tenants hold
    acme_after = store.vectors()[[c.tenant == "acme" for c in store.chunks()]]
    np.testing.assert_array_equal(acme_before, acme_after)
