"""Superseded documents (raglab.store.versions): checked at load, honoured at retrieval."""

from __future__ import annotations

from pathlib import Path

import pytest

from raglab.ingest.loaders import DocumentError, load_folder, parse_front_matter
from raglab.ingest.supersedes import supersedes_problems
from raglab.pipeline import Index
from raglab.records import Document, Principal
from raglab.store.sqlite_store import SQLiteStore
from raglab.store.versions import hidden_documents, supersession

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
OLD, NEW = "acme/policies/expenses-2023.md", "acme/policies/expenses-2025.md"


def write(root: Path, relative: str, content: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content, encoding="utf-8")


def front(tenant: str, *, supersedes: str = "", groups: str = "[]") -> str:
    line = f"supersedes: {supersedes}\n" if supersedes else ""
    return f"---\ntenant: {tenant}\ngroups: {groups}\n{line}---\n"


# ---------------------------------------------------------------------------- front matter


def test_supersedes_takes_one_id_or_a_list():
    assert parse_front_matter("---\nsupersedes: a/old.md\n---\n")[0] == {
        "supersedes": ("a/old.md",)
    }
    fields, _ = parse_front_matter("---\nsupersedes: [b.md, 'a.md', b.md]\n---\n")
    assert fields == {"supersedes": ("a.md", "b.md")}


@pytest.mark.parametrize("value", ["/etc/passwd", "../other/x.md", "[a.md, '']", "''", "a\\b.md"])
def test_supersedes_refuses_what_is_not_a_document_id(value):
    with pytest.raises(
        DocumentError, match=r"front matter line 2: supersedes must name document ids"
    ):
        parse_front_matter(f"---\nsupersedes: {value}\n---\n", "x.md")


# ---------------------------------------------------------------------------- at load


def test_the_sample_corpus_says_the_2025_expenses_policy_supersedes_the_2023_one():
    loaded = load_folder(CORPUS)
    assert not loaded.errors
    docs = {doc.id: doc for doc in loaded.documents}
    assert docs[NEW].supersedes == (OLD,)
    assert supersession(loaded.documents) == {OLD: [NEW]}


def test_load_refuses_a_supersedes_of_no_file_of_itself_or_of_another_tenant(tmp_path):
    write(tmp_path, "acme/old.md", front("acme") + "Old.")
    write(tmp_path, "globex/old.md", front("globex") + "Theirs.")
    write(tmp_path, "acme/self.md", front("acme", supersedes="acme/self.md") + "Me.")
    write(tmp_path, "acme/grab.md", front("acme", supersedes="globex/old.md") + "Mine now.")
    write(tmp_path, "acme/good.md", front("acme", supersedes="acme/old.md") + "New.")
    loaded = load_folder(tmp_path)
    reasons = {error.path: error.reason for error in loaded.errors}
    assert "supersedes names the document itself" in reasons["acme/self.md"]
    assert "of tenant 'globex', but this document is of tenant 'acme'" in reasons["acme/grab.md"]
    # One bad file loses nothing else.
    assert sorted(doc.id for doc in loaded.documents) == [
        "acme/good.md",
        "acme/old.md",
        "globex/old.md",
    ]


def test_a_supersedes_naming_no_file_loads_with_a_warning(tmp_path):
    """The old version deleted (or a typo): nothing to hide, so the new one is not lost."""
    write(tmp_path, "acme/new.md", front("acme", supersedes="acme/odl.md") + "New.")
    write(tmp_path, "acme/old.md", front("acme") + "Old.")
    loaded = load_folder(tmp_path)
    assert not loaded.errors
    assert [doc.id for doc in loaded.documents] == ["acme/new.md", "acme/old.md"]
    [warning] = loaded.warnings
    assert warning.path == "acme/new.md"
    assert "'acme/odl.md', which is no document of this corpus" in warning.reason
    assert "the version it meant still answers" in warning.reason


def test_deleting_the_superseded_file_keeps_the_new_one(tmp_path):
    """Notebook 06's edit: the 2023 policy deleted; the 2025 policy must still load."""
    import shutil

    corpus = tmp_path / "corpus"
    shutil.copytree(CORPUS, corpus)
    (corpus / OLD).unlink()
    loaded = load_folder(corpus)
    assert NEW in {doc.id for doc in loaded.documents} and not loaded.errors


def test_load_refuses_every_document_on_a_supersedes_cycle(tmp_path):
    write(tmp_path, "a.md", front("t", supersedes="b.md") + "A")
    write(tmp_path, "b.md", front("t", supersedes="c.md") + "B")
    write(tmp_path, "c.md", front("t", supersedes="a.md") + "C")
    write(tmp_path, "d.md", front("t", supersedes="a.md") + "D")  # points into the cycle only
    loaded = load_folder(tmp_path)
    assert sorted(error.path for error in loaded.errors) == ["a.md", "b.md", "c.md"]
    assert all("comes back to itself" in error.reason for error in loaded.errors)
    assert [doc.id for doc in loaded.documents] == ["d.md"]


def test_naming_a_file_that_failed_to_load_is_not_an_error(tmp_path):
    (tmp_path / "old.md").write_bytes(b"\xff\xfe not utf-8")
    write(tmp_path, "new.md", "---\nsupersedes: old.md\n---\nNew.")
    loaded = load_folder(tmp_path)
    assert [error.path for error in loaded.errors] == ["old.md"]
    assert [doc.id for doc in loaded.documents] == ["new.md"]


def test_supersession_follows_chains():
    docs = [
        Document("v1.md", "1"),
        Document("v2.md", "2", supersedes=("v1.md",)),
        Document("v3.md", "3", supersedes=("v2.md",)),
    ]
    assert supersession(docs) == {"v1.md": ["v2.md", "v3.md"], "v2.md": ["v3.md"]}
    assert supersedes_problems(docs) == {}
    # Someone who reads v1 and v3 but not v2 still gets only the newest.
    assert hidden_documents(supersession(docs), readable={"v1.md", "v3.md"}) == {"v1.md"}


# ---------------------------------------------------------------------------- at retrieval

ANA = Principal("ana", "acme")
EXPENSE_QUESTIONS = [
    "What is the hotel limit per night?",
    "How many days do I have to submit an expense claim?",
    "When will I get the refund for an approved expense claim?",
    "Do I need a receipt for a taxi ride?",
]


def doc_ids(index: Index, question: str, method: str, k: int = 10) -> list[str]:
    return [hit.chunk.doc_id for hit in index.search(question, ANA, k=k, method=method)]


@pytest.fixture(scope="module")
def sample_index() -> Index:
    return Index.from_folder(CORPUS)


@pytest.mark.parametrize("method", ["dense", "bm25", "hybrid"])
def test_the_superseded_policy_never_answers_but_k_hits_still_come_back(sample_index, method):
    for question in EXPENSE_QUESTIONS:
        found = doc_ids(sample_index, question, method)
        assert OLD not in found
        assert NEW in found
        assert len(found) == 10


def test_without_the_supersedes_line_the_old_policy_answered(sample_index):
    """The regression: before `supersedes`, the 2023 policy reached the top 5."""
    docs = [
        Document(d.id, d.text, d.title, d.tenant, d.groups, d.version)  # supersedes dropped
        for d in load_folder(CORPUS).documents
    ]
    from raglab.embed.embedders import embedder
    from raglab.ingest.chunking import Chunker
    from raglab.store.indexing import sync
    from raglab.store.memory import MemoryStore

    store = MemoryStore()
    sync(store, docs, chunker=Chunker(), embedder=embedder("hashing"))
    before = Index(store, embedder("hashing"))
    assert any(OLD in doc_ids(before, q, "hybrid", k=5) for q in EXPENSE_QUESTIONS)
    # Superseded hits are dropped and the rest keep their order: the old ranking minus OLD
    # (BM25 is still fitted on every readable chunk, so its scores do not move either).
    for method in ("dense", "bm25"):
        for question in EXPENSE_QUESTIONS:
            old = before.search(question, ANA, k=40, method=method)
            new = sample_index.search(question, ANA, k=10, method=method)
            assert new == [hit for hit in old if hit.chunk.doc_id != OLD][:10]


def test_an_index_file_remembers_supersession(tmp_path, sample_index):
    path = tmp_path / "index.sqlite"
    Index.from_folder(CORPUS, path=path)
    opened = Index.open(path)
    assert opened.store.meta["superseded"] == {OLD: [NEW]}
    assert doc_ids(opened, EXPENSE_QUESTIONS[0], "hybrid") == doc_ids(
        sample_index, EXPENSE_QUESTIONS[0], "hybrid"
    )
    assert isinstance(opened.store, SQLiteStore)


def test_removing_the_supersedes_line_brings_the_old_version_back(tmp_path):
    corpus = tmp_path / "corpus"
    write(corpus, "t/old.md", front("t") + "Hotels cost at most 150 euros per night.")
    write(corpus, "t/new.md", front("t", supersedes="t/old.md") + "Hotels: 180 euros per night.")
    path = tmp_path / "i.sqlite"
    Index.from_folder(corpus, path=path)
    asker = Principal("u", "t")
    hits = Index.open(path).search("hotel euros per night", asker, k=5, method="bm25")
    assert [h.chunk.doc_id for h in hits] == ["t/new.md"]
    write(corpus, "t/new.md", front("t") + "Hotels: 180 euros per night.")
    Index.from_folder(corpus, path=path)
    hits = Index.open(path).search("hotel euros per night", asker, k=5, method="bm25")
    assert sorted(h.chunk.doc_id for h in hits) == ["t/new.md", "t/old.md"]


def test_a_document_the_asker_cannot_read_hides_nothing(tmp_path):
    """Access first: a restricted new version does not take the old one from everyone."""
    write(tmp_path, "t/old.md", front("t") + "Parking costs 5 euros a day.")
    write(
        tmp_path,
        "t/new.md",
        front("t", supersedes="t/old.md", groups="[managers]") + "Parking costs 7 euros a day.",
    )
    index = Index.from_folder(tmp_path)
    for method in ("dense", "bm25", "hybrid"):
        staff = index.search("parking euros", Principal("s", "t"), k=5, method=method)
        boss = index.search("parking euros", Principal("b", "t", {"managers"}), k=5, method=method)
        assert [h.chunk.doc_id for h in staff] == ["t/old.md"]
        assert [h.chunk.doc_id for h in boss] == ["t/new.md"]


def test_another_tenant_cannot_hide_a_document_even_in_a_hand_built_store():
    """Even if a forged index said so, hiding needs a superseding document the asker reads."""
    from raglab.embed.embedders import embedder
    from raglab.ingest.chunking import Chunker
    from raglab.store.indexing import sync
    from raglab.store.memory import MemoryStore

    docs = [
        Document("a/policy.md", "Refunds take ten days.", tenant="acme"),
        Document(
            "g/policy.md", "Refunds take two days.", tenant="globex", supersedes=("a/policy.md",)
        ),
    ]
    store = MemoryStore()
    sync(store, docs, chunker=Chunker(), embedder=embedder("hashing"))
    assert store.meta["superseded"] == {"a/policy.md": ["g/policy.md"]}
    index = Index(store, embedder("hashing"))
    for method in ("dense", "bm25", "hybrid"):
        hits = index.search("refunds days", Principal("ana", "acme"), k=3, method=method)
        assert [h.chunk.doc_id for h in hits] == ["a/policy.md"]


# ---------------------------------------------------------------------------- in the store


def hand_built(kind: str, tmp_path: Path):
    """A store of three documents of tenant t: old.md superseded by new.md, and other.md."""
    from raglab.embed.embedders import embedder
    from raglab.ingest.chunking import Chunker
    from raglab.store.indexing import sync
    from raglab.store.memory import MemoryStore

    docs = [
        Document("t/old.md", "Hotels cost at most 150 euros per night.", tenant="t"),
        Document("t/new.md", "Hotels cost 180 euros.", tenant="t", supersedes=("t/old.md",)),
        Document("t/other.md", "Taxis are paid by card.", tenant="t"),
    ]
    store = MemoryStore() if kind == "memory" else SQLiteStore.create(tmp_path / "i.sqlite")
    sync(store, docs, chunker=Chunker(), embedder=embedder("hashing"))
    return store, embedder("hashing")


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_the_store_hides_superseded_chunks_before_scoring(kind, tmp_path):
    store, hashing = hand_built(kind, tmp_path)
    asker = Principal("u", "t")
    current = {"t/new.md", "t/other.md"}
    assert {c.doc_id for c in store.chunks(asker)} == current
    # Asked for more than there are, each search returns every current chunk: a hidden
    # chunk takes no place, so no step has to search deeper to make up for it.
    query = hashing.embed(["hotels euros per night"])[0]
    assert {h.chunk.doc_id for h in store.search(query, asker, 10)} == current
    assert [h.chunk.doc_id for h in store.keyword_search("hotels euros night", asker, 10)] == [
        "t/new.md"
    ]
    (best,) = store.search(query, asker, 1)
    assert best.chunk.doc_id == "t/new.md"
    # The old version is still readable: its words are the asker's, and BM25 counts it.
    assert store.known_stems(asker, {"150", "night", "taxi"}) == {"150", "night", "taxi"}
    from raglab.retrieve.bm25 import BM25

    readable = [c for c in store.chunks() if c.tenant == "t"]  # all three, in store order
    scores = BM25().fit([c.text for c in readable]).scores("hotels euros night")
    (hit,) = store.keyword_search("hotels euros night", asker, 1)
    expected = float(scores[[c.doc_id for c in readable].index("t/new.md")])
    assert hit.score == pytest.approx(expected, rel=1e-6)


def test_a_document_without_chunks_hides_only_from_those_who_may_read_it():
    """The rows a principal is answered from are decided per principal, not per partition
    of chunks: here managers and staff read the same chunks, yet only managers may read
    the (empty) document that supersedes old.md."""
    import numpy as np

    from raglab.records import Chunk, DocRecord
    from raglab.store.memory import MemoryStore

    store = MemoryStore(dim=2)
    old = Chunk("t/old.md", 0, "Parking costs 5 euros.", 0, 22, tenant="t")
    store.add(
        [old],
        np.array([[1.0, 0.0]]),
        documents=[
            DocRecord("t/old.md", "1", "", "t", ()),
            DocRecord("t/new.md", "2", "", "t", ("managers",)),
        ],
    )
    store.set_meta({"superseded": {"t/old.md": ["t/new.md"]}})
    staff, boss = Principal("s", "t"), Principal("b", "t", {"managers"})
    for _ in range(2):  # the second time from the cache
        assert [c.doc_id for c in store.chunks(staff)] == ["t/old.md"]
        assert store.chunks(boss) == []
        assert store.search(np.array([1.0, 0.0]), boss, 3) == []
        assert store.keyword_search("parking", boss, 3) == []
        assert [h.chunk.doc_id for h in store.keyword_search("parking", staff, 3)] == ["t/old.md"]
