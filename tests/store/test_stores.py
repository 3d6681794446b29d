"""The stores (memory, SQLite, Qdrant) through the same tests; sync, access, files.

A fake embedder and a fake chunker are defined here, so these tests do not depend on
raglab.embed.embedders or raglab.ingest.chunking; one test at the end uses the real ones.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from raglab.records import Chunk, DocRecord, Document, Partition, Principal
from raglab.store.errors import DimensionMismatch, EmbedderMismatch, StoreError
from raglab.store.indexing import check_embedder, partition_embedder, sync
from raglab.store.memory import MemoryStore
from raglab.store.sqlite_store import SCHEMA_VERSION, SQLiteStore
from tests.conftest import STORES

DIM = 4
CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"


# ---------------------------------------------------------------------------- fakes


@dataclasses.dataclass(frozen=True)
class FakeEmbedder:
    """Deterministic vectors from a hash of the text; counts what it embeds."""

    name: str = "fake"
    dim: int = DIM
    version: str = "1"
    calls: list = dataclasses.field(default_factory=list, compare=False)
    fail: bool = False

    def embed(self, texts):
        if self.fail:
            raise RuntimeError("embedder crashed")
        self.calls.append(list(texts))
        rows = []
        for text in texts:
            digest = hashlib.blake2b(text.encode(), digest_size=self.dim).digest()
            rows.append([b - 127.5 for b in digest])
        matrix = np.array(rows, dtype=np.float32).reshape(len(texts), self.dim)
        return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)

    @property
    def embedded(self) -> list[str]:
        return [text for call in self.calls for text in call]


@dataclasses.dataclass(frozen=True)
class FakeFittable(FakeEmbedder):
    """Like LSA: must be fitted; the fitted version names the corpus it saw."""

    name: str = "fake-fit"
    version: str = "unfitted"
    fitted_on: tuple = ()

    def fit(self, texts):
        digest = hashlib.blake2b("\n".join(texts).encode(), digest_size=4).hexdigest()
        return dataclasses.replace(
            self, version=f"fit-{digest}", fitted_on=tuple(texts), calls=self.calls
        )

    def embed(self, texts):
        if self.version == "unfitted":
            raise RuntimeError("fit first")
        return super().embed(texts)


@dataclasses.dataclass(frozen=True)
class FakeChunker:
    """Cuts the text into windows of `size` characters, recording offsets."""

    size: int = 10

    def split(self, doc: Document) -> list[Chunk]:
        return [
            Chunk(
                doc.id,
                i,
                doc.text[start : start + self.size],
                start,
                min(start + self.size, len(doc.text)),
                title=doc.title,
                tenant=doc.tenant,
                groups=doc.groups,
                doc_version=doc.version,
            )
            for i, start in enumerate(range(0, len(doc.text), self.size))
        ]

    def params(self) -> dict:
        return {"kind": "fake", "size": self.size}


def make_chunk(doc_id, index=0, tenant="acme", groups=(), text=None) -> Chunk:
    text = text if text is not None else f"{doc_id} {index}"
    return Chunk(doc_id, index, text, 0, len(text), tenant=tenant, groups=groups)


def unit(*values) -> np.ndarray:
    v = np.array(values, dtype=np.float32)
    return v / np.linalg.norm(v)


ANN = Principal("ann", "acme")
HR = Principal("hana", "acme", {"hr"})
EVE = Principal("eve", "globex")


@pytest.fixture(params=STORES)
def make_store(request, tmp_path):
    """A factory of empty stores of the parametrised kind (a new file or folder per store)."""
    opened = []

    def factory(dim: int | None = DIM):
        if request.param == "memory":
            return MemoryStore(dim)
        if request.param == "qdrant":
            from raglab.store.qdrant_store import QdrantStore

            store = QdrantStore.create(tmp_path / f"qdrant{len(opened)}", dim=dim)
        else:
            store = SQLiteStore.create(tmp_path / f"index{len(opened)}.db", dim=dim)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


def ids(hits) -> list[str]:
    return [hit.chunk.id for hit in hits]


# ------------------------------------------------------------------------ both stores, same tests


def test_add_and_search_hand_worked(make_store):
    store = make_store()
    chunks = [make_chunk("a.md", 0), make_chunk("a.md", 1), make_chunk("b.md", 0)]
    store.add(chunks, np.array([[1, 0, 0, 0], [0, 1, 0, 0], [3, 4, 0, 0]], dtype=np.float32))
    hits = store.search(np.array([1, 0, 0, 0], dtype=np.float32), ANN, k=2)
    assert ids(hits) == ["a.md#0", "b.md#0"]
    assert [round(h.score, 6) for h in hits] == [1.0, 0.6]  # vectors are stored unit length
    assert len(store) == 3
    assert store.dim == DIM


def test_store_order_is_doc_id_then_index_whatever_the_insert_order(make_store):
    store = make_store()
    store.add([make_chunk("b.md", 1), make_chunk("b.md", 0)], np.eye(DIM)[:2])
    store.add([make_chunk("a.md", 0)], np.eye(DIM)[2:3])
    assert [c.id for c in store.chunks()] == ["a.md#0", "b.md#0", "b.md#1"]
    assert list(store.documents()) == ["a.md", "b.md"]


def test_ties_are_broken_by_chunk_order(make_store):
    store = make_store()
    same = np.tile(unit(1, 1, 0, 0), (5, 1))
    store.add([make_chunk(f"{name}.md") for name in "edcba"], same)
    hits = store.search(unit(1, 1, 0, 0), ANN, k=3)
    assert ids(hits) == ["a.md#0", "b.md#0", "c.md#0"]


def test_ties_inside_a_filtered_view_keep_store_order(make_store):
    store = make_store()
    tenants = ["globex", "acme"] * 6
    chunks = [make_chunk(f"{i:02}.md", tenant=t) for i, t in enumerate(tenants)]
    store.add(chunks, np.tile(unit(1, 2, 3, 4), (12, 1)))
    hits = store.search(unit(1, 2, 3, 4), ANN, k=4)
    assert ids(hits) == ["01.md#0", "03.md#0", "05.md#0", "07.md#0"]
    assert len({hit.score for hit in hits}) == 1  # identical rows, identical scores


def test_filtered_views_kept_for_reuse_stay_within_one_matrix_of_rows(make_store):
    store = make_store()
    if not hasattr(store, "_current"):
        pytest.skip("only the snapshot stores keep filtered views")
    chunks = [make_chunk(f"{g}{i}.md", groups=(g,)) for g in "abcd" for i in range(3)]
    chunks += [make_chunk(f"open{i}.md") for i in range(3)]
    store.add(chunks, np.random.default_rng(0).normal(size=(len(chunks), DIM)))
    for groups in ["a", "b", "ab", "abc", "abcd", "cd", "d"]:
        principal = Principal("u", "acme", set(groups))
        expected = [c.id for c in chunks if not c.groups or c.groups[0] in groups]
        assert sorted(ids(store.search(unit(1, 1, 1, 1), principal, k=50))) == sorted(expected)
        snapshot = store._current()
        assert sum(len(block) for block in snapshot._blocks.values()) <= len(store)


def test_delete_document(make_store):
    store = make_store()
    store.add([make_chunk("a.md", 0), make_chunk("a.md", 1), make_chunk("b.md")], np.eye(DIM)[:3])
    assert store.delete_document("a.md") == 2
    assert store.delete_document("a.md") == 0  # deleting twice is harmless
    assert [c.id for c in store.chunks()] == ["b.md#0"]
    assert list(store.documents()) == ["b.md"]
    assert ids(store.search(unit(1, 0, 0, 0), ANN, k=5)) == ["b.md#0"]
    store.add([make_chunk("a.md", 0)], np.eye(DIM)[:1])  # and can come back
    assert ids(store.search(unit(1, 0, 0, 0), ANN, k=1)) == ["a.md#0"]


def test_query_of_wrong_dimension_is_refused(make_store):
    store = make_store()
    store.add([make_chunk("a.md")], np.eye(DIM)[:1])
    with pytest.raises(
        DimensionMismatch, match="query has dimension 3 but the store holds vectors of dimension 4"
    ):
        store.search(np.ones(3, dtype=np.float32), ANN, k=1)
    with pytest.raises(
        ValueError, match=r"query must be one vector \(a 1-D array\), got shape \(1, 4\)"
    ):
        store.search(np.ones((1, DIM)), ANN, k=1)


def test_vectors_of_wrong_dimension_are_refused(make_store):
    store = make_store()
    with pytest.raises(
        DimensionMismatch, match="vectors have dimension 3 but the store holds dimension 4"
    ):
        store.add([make_chunk("a.md")], np.ones((1, 3)))
    assert len(store) == 0


def test_dim_is_set_by_the_first_vectors_when_not_given(make_store):
    store = make_store(dim=None)
    assert store.dim is None
    assert store.search(np.ones(7), ANN, k=3) == []  # nothing to search yet
    store.add([make_chunk("a.md")], np.ones((1, 7)))
    assert store.dim == 7
    with pytest.raises(DimensionMismatch):
        store.search(np.ones(4), ANN, k=1)


@pytest.mark.parametrize(
    ("k", "error"), [(0, ValueError), (-1, ValueError), (1.5, TypeError), (True, TypeError)]
)
def test_k_must_be_a_positive_whole_number(make_store, k, error):
    store = make_store()
    store.add([make_chunk("a.md")], np.eye(DIM)[:1])
    with pytest.raises(error, match=re.escape(f"k must be an integer >= 1 (got k={k!r})")):
        store.search(unit(1, 0, 0, 0), ANN, k=k)


def test_min_score_drops_weak_hits(make_store):
    store = make_store()
    store.add(
        [make_chunk("a.md"), make_chunk("b.md")], np.array([unit(1, 0, 0, 0), unit(1, 1, 0, 0)])
    )
    hits = store.search(unit(1, 0, 0, 0), ANN, k=5, min_score=0.9)
    assert ids(hits) == ["a.md#0"]


def test_empty_store(make_store):
    store = make_store()
    assert len(store) == 0
    assert store.chunks() == [] and store.documents() == {}
    assert store.search(unit(1, 0, 0, 0), ANN, k=3) == []


def test_add_validation(make_store):
    store = make_store()
    with pytest.raises(ValueError, match="got 2 chunks but 1 vectors"):
        store.add([make_chunk("a.md", 0), make_chunk("a.md", 1)], np.ones((1, DIM)))
    with pytest.raises(ValueError, match="chunk 'a.md#0' is given twice"):
        store.add([make_chunk("a.md", 0), make_chunk("a.md", 0)], np.ones((2, DIM)))
    with pytest.raises(ValueError, match="vectors contain NaN or infinity"):
        store.add([make_chunk("a.md")], np.full((1, DIM), np.nan))
    with pytest.raises(ValueError, match="chunk 'a.md#1' has tenant 'globex'"):
        store.add(
            [make_chunk("a.md", 0), make_chunk("a.md", 1, tenant="globex")], np.ones((2, DIM))
        )
    store.add([make_chunk("a.md")], np.ones((1, DIM)))
    with pytest.raises(
        ValueError, match="document 'a.md' is already in the store; delete_document it first"
    ):
        store.add([make_chunk("a.md", 5)], np.ones((1, DIM)))
    assert [c.id for c in store.chunks()] == ["a.md#0"]


def test_documents_records_and_empty_documents(make_store):
    store = make_store()
    record = DocRecord("empty.md", "3", "abc", "acme", ("hr",), "Empty")
    store.add([make_chunk("a.md")], np.ones((1, DIM)), documents=[record])
    docs = store.documents()
    assert docs["empty.md"] == record  # a document with no chunks is still remembered
    assert docs["a.md"] == DocRecord("a.md", "1", "", "acme", (), "")  # "" hash: unknown content
    assert store.delete_document("empty.md") == 0
    assert list(store.documents()) == ["a.md"]


def test_chunks_for_a_principal(make_store):
    store = make_store()
    store.add(
        [
            make_chunk("a.md"),
            make_chunk("b.md", groups=("hr",)),
            make_chunk("c.md", tenant="globex"),
        ],
        np.eye(DIM)[:3],
    )
    assert [c.id for c in store.chunks(ANN)] == ["a.md#0"]
    assert [c.id for c in store.chunks(HR)] == ["a.md#0", "b.md#0"]
    assert [c.id for c in store.chunks(EVE)] == ["c.md#0"]
    assert len(store.chunks()) == 3


def test_chunks_round_trip_every_field(make_store):
    store = make_store()
    chunk = Chunk(
        "dir/ü.md",
        3,
        "héllo",
        5,
        10,
        heading="H",
        title="T",
        tenant="acme",
        groups=("a", "b"),
        doc_version="7",
    )
    store.add([chunk], np.ones((1, DIM)))
    assert store.chunks() == [chunk]


def test_every_store_has_every_method_of_the_protocol(make_store):
    from raglab.store.protocol import VectorStore

    members = [name for name in vars(VectorStore) if not name.startswith("_")] + ["__len__"]
    assert {"keyword_search", "known_stems", "search", "chunks"} <= set(members)
    store = make_store()
    assert [name for name in members if not hasattr(store, name)] == []


def test_keyword_search_and_known_stems_answer_alike_in_every_store(make_store):
    """BM25 fitted on the chunks the asker may read; the words of those chunks only."""
    from raglab.generate.abstention import vocabulary
    from raglab.ingest.stems import content_stems
    from raglab.retrieve.bm25 import BM25

    store = make_store()
    chunks = [
        make_chunk("a.md", text="refund policy for a laptop bought online"),
        make_chunk("b.md", text="refund refund within thirty days"),
        make_chunk("c.md", text="the kitchen has a printer"),
        make_chunk("h.md", groups=("hr",), text="refund laptop refund laptop salary"),
        make_chunk("x.md", tenant="globex", text="refund laptop refund laptop"),
    ]
    store.add(chunks, np.eye(len(chunks), DIM, dtype=np.float32) + 0.1)
    readable = chunks[:3]  # ANN: acme, no groups
    scores = BM25().fit([c.text for c in readable]).scores("refund laptop")
    hits = store.keyword_search("refund laptop", ANN, 5)
    assert ids(hits) == ["a.md#0", "b.md#0"]  # c.md holds neither word: no match at all
    assert [h.score for h in hits] == pytest.approx([float(scores[0]), float(scores[1])])
    assert ids(store.keyword_search("refund laptop", ANN, 1)) == ["a.md#0"]
    assert ids(store.keyword_search("salary", HR, 5)) == ["h.md#0"]
    asked = content_stems("refund laptop kitchen salary thermostat")
    assert store.known_stems(ANN, asked) == vocabulary(readable) & asked
    assert "salary" in store.known_stems(HR, asked) and "salary" not in store.known_stems(
        ANN, asked
    )


# ---------------------------------------------------------------------------- access attacks


def attack_store(make_store):
    store = make_store()
    chunks = [
        make_chunk("acme/open.md", tenant="acme"),
        make_chunk("acme/payroll.md", tenant="acme", groups=("hr",)),
        make_chunk("globex/secret.md", tenant="globex"),
        make_chunk("globex/hr.md", tenant="globex", groups=("hr",)),
    ]
    vectors = np.array([unit(1, 0, 0, 0), unit(0, 1, 0, 0), unit(0, 0, 1, 0), unit(0, 0, 0, 1)])
    store.add(chunks, vectors)
    return store, chunks, vectors


def test_other_tenant_chunk_never_returned_even_for_its_exact_vector(make_store):
    store, _, vectors = attack_store(make_store)
    for principal in (ANN, HR, Principal("x", "acme", {"hr", "it"})):
        hits = store.search(vectors[2], principal, k=10)  # the exact vector of globex/secret.md
        assert all(hit.chunk.tenant == "acme" for hit in hits)
        assert "globex/secret.md#0" not in ids(hits)


def test_group_restricted_chunk_never_reaches_a_user_outside_the_group(make_store):
    store, _, vectors = attack_store(make_store)
    assert "acme/payroll.md#0" not in ids(store.search(vectors[1], ANN, k=10))
    assert ids(store.search(vectors[1], HR, k=1)) == ["acme/payroll.md#0"]
    # groups count only within the principal's own tenant
    globex_hr = Principal("g", "globex", {"hr"})
    assert "acme/payroll.md#0" not in ids(store.search(vectors[1], globex_hr, k=10))
    assert store.search(vectors[1], Principal("z", "nobody", {"hr"}), k=10) == []


def test_filtered_chunks_do_not_change_eligible_scores_or_ranking(make_store):
    rng = np.random.default_rng(1)
    mine = [make_chunk(f"acme/{i:02}.md") for i in range(20)]
    theirs = [make_chunk(f"b{i:02}.md", tenant="globex") for i in range(20)]
    mine_v, theirs_v = rng.normal(size=(20, DIM)), rng.normal(size=(20, DIM))
    alone, mixed = make_store(), make_store()
    alone.add(mine, mine_v)
    mixed.add(mine + theirs, np.vstack([mine_v, theirs_v]))
    for query in rng.normal(size=(10, DIM)):
        expected = alone.search(query, ANN, k=5)
        assert mixed.search(query, ANN, k=5) == expected  # same chunks, same scores


# ---------------------------------------------------------------------------- SQLite against memory


def random_corpus(rng, n_docs=40):
    chunks = []
    for d in range(n_docs):
        tenant = str(rng.choice(["acme", "globex"]))
        groups = tuple(
            sorted(set(rng.choice(["hr", "it", "ops"], size=rng.integers(0, 3)).tolist()))
        )
        for i in range(int(rng.integers(0, 5))):
            chunks.append(make_chunk(f"doc{d:03}.md", i, tenant=tenant, groups=groups))
    vectors = rng.normal(size=(len(chunks), DIM)).astype(np.float32)
    vectors[::7] = vectors[0]  # plant exact ties
    order = rng.permutation(len(chunks))  # insertion order must not matter
    return [chunks[i] for i in order], vectors[order]


def test_sqlite_store_matches_memory_store_on_random_data(tmp_path):
    rng = np.random.default_rng(7)
    chunks, vectors = random_corpus(rng)
    memory = MemoryStore(DIM)
    with SQLiteStore.create(tmp_path / "i.db", dim=DIM) as sqlite_store:
        for store in (memory, sqlite_store):
            store.add(chunks, vectors)
            store.delete_document("doc005.md")
        assert sqlite_store.chunks() == memory.chunks()
        assert sqlite_store.documents() == memory.documents()
        principals = [
            Principal("p", t, g)
            for t in ("acme", "globex", "x")
            for g in ({}, {"hr"}, {"it", "ops"})
        ]
        for query in [vectors[0], *rng.normal(size=(15, DIM))]:
            for principal in principals:
                for k in (1, 3, 50):
                    assert sqlite_store.search(query, principal, k) == memory.search(
                        query, principal, k
                    )


# ---------------------------------------------------------------------------- persistence


def test_sqlite_persists_across_reopen(tmp_path):
    path = tmp_path / "i.db"
    store = SQLiteStore.create(path)
    report = sync(store, corpus(), chunker=FakeChunker(), embedder=FakeEmbedder())
    before = (
        store.chunks(),
        store.documents(),
        store.meta,
        store.search(unit(1, 2, 3, 4), ANN, k=3),
    )
    store.close()
    with SQLiteStore.open(path) as again:
        after = (
            again.chunks(),
            again.documents(),
            again.meta,
            again.search(unit(1, 2, 3, 4), ANN, k=3),
        )
        assert after == before
        assert again.dim == DIM
        assert again.meta == {
            "embedder_name": "fake",
            "embedder_dim": DIM,
            "embedder_version": "1",
            "chunker": {"kind": "fake", "size": 10},
            "superseded": {},
            "profile": None,  # built without a model profile
            "calibration": None,  # sync alone computes none (Index.from_folder does)
        }
        check_embedder(again, FakeEmbedder())
        second = sync(again, corpus(), chunker=FakeChunker(), embedder=FakeEmbedder())
        assert second.unchanged == report.added and second.embedded == 0


def test_sqlite_sees_writes_made_through_another_connection(tmp_path):
    path = tmp_path / "i.db"
    with SQLiteStore.create(path, dim=DIM) as writer, SQLiteStore.open(path) as reader:
        assert reader.search(unit(1, 0, 0, 0), ANN, k=1) == []
        writer.add([make_chunk("a.md")], np.eye(DIM)[:1])
        assert ids(reader.search(unit(1, 0, 0, 0), ANN, k=1)) == ["a.md#0"]


def test_open_or_create(tmp_path):
    path = tmp_path / "i.db"
    with SQLiteStore.open_or_create(path) as store:
        store.add([make_chunk("a.md")], np.ones((1, DIM)))
    with SQLiteStore.open_or_create(path) as store:
        assert len(store) == 1


# ---------------------------------------------------------------------------- corrupt files


def test_open_missing_file(tmp_path):
    with pytest.raises(StoreError, match=r"index file '.*missing\.db' does not exist"):
        SQLiteStore.open(tmp_path / "missing.db")
    assert not (tmp_path / "missing.db").exists()  # opening never creates


def test_open_a_folder(tmp_path):
    with pytest.raises(StoreError, match="is not a file"):
        SQLiteStore.open(tmp_path)


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (bytes(range(256)) * 20, r"not a raglab index \(not a SQLite database"),
        (b"just some notes\n" * 100, r"not a raglab index \(not a SQLite database"),
        (b"", r"incomplete \(its first build did not finish.*run raglab index again"),
    ],
)
def test_open_non_index_files(tmp_path, content, reason):
    path = tmp_path / "bad.db"
    path.write_bytes(content)
    with pytest.raises(StoreError, match=rf"index file '.*bad\.db' is {reason}"):
        SQLiteStore.open(path)


def test_open_sqlite_database_without_raglab_tables(tmp_path):
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE people (name TEXT)")
    con.close()
    with pytest.raises(
        StoreError, match=r"not a raglab index \(missing tables: chunks, documents, meta\)"
    ):
        SQLiteStore.open(path)


def write_meta(path: Path, key: str, value: str) -> None:
    con = sqlite3.connect(path)
    with con:
        con.execute("UPDATE meta SET value = ? WHERE key = ?", (value, key))
    con.close()


def test_open_newer_schema_is_refused(tmp_path):
    path = tmp_path / "i.db"
    SQLiteStore.create(path).close()
    write_meta(path, "schema_version", str(SCHEMA_VERSION + 1))
    with pytest.raises(
        StoreError, match=rf"schema version {SCHEMA_VERSION + 1}, newer than this raglab reads"
    ):
        SQLiteStore.open(path)


def test_open_without_format_marker_or_with_broken_meta(tmp_path):
    path = tmp_path / "i.db"
    SQLiteStore.create(path).close()
    write_meta(path, "format", '"something-else"')
    with pytest.raises(StoreError, match="no 'raglab-index' marker"):
        SQLiteStore.open(path)
    write_meta(path, "format", "{not json")
    rebuild = "delete it and run raglab index again"
    with pytest.raises(StoreError, match=rf"is corrupt \(unreadable meta table.*{rebuild}"):
        SQLiteStore.open(path)


def test_truncated_vector_blob_is_reported(tmp_path):
    path = tmp_path / "i.db"
    with SQLiteStore.create(path, dim=DIM) as store:
        store.add([make_chunk("a.md")], np.ones((1, DIM)))
    con = sqlite3.connect(path)
    with con:
        con.execute("UPDATE chunks SET vector = x'0000'")
    con.close()
    with (
        SQLiteStore.open(path) as store,
        pytest.raises(StoreError, match=r"corrupt \(vector blobs do not match dim=4\): delete it"),
    ):
        store.search(unit(1, 0, 0, 0), ANN, k=1)


def test_create_refuses_an_existing_file(tmp_path):
    path = tmp_path / "i.db"
    path.write_text("precious")
    with pytest.raises(StoreError, match="already exists"):
        SQLiteStore.create(path)
    assert path.read_text() == "precious"


def test_dim_must_be_positive():
    with pytest.raises(ValueError, match=r"dim must be an integer >= 1 \(got dim=0\)"):
        MemoryStore(0)


# ---------------------------------------------------------------------------- sync


def corpus(**changes: Document) -> list[Document]:
    docs = {
        "a.md": Document("a.md", "Alpha text that is long enough for three.", tenant="acme"),
        "b.md": Document("b.md", "Bravo text.", tenant="acme", groups=("hr",)),
        "c.md": Document("c.md", "Charlie text here.", tenant="globex"),
    }
    docs.update(changes)
    return [doc for doc in docs.values() if doc is not None]


def test_first_sync_adds_everything(make_store):
    store, embedder = make_store(dim=None), FakeEmbedder()
    report = sync(store, corpus(), chunker=FakeChunker(), embedder=embedder)
    assert (report.added, report.updated, report.removed, report.unchanged) == (
        ("a.md", "b.md", "c.md"),
        (),
        (),
        (),
    )
    assert report.embedded == len(store) == 5 + 2 + 2
    assert len(embedder.calls) == 1  # one batch
    assert store.documents()["b.md"] == DocRecord.of(corpus()[1])
    assert report.embedder is embedder


def test_incremental_sync_re_embeds_only_what_changed(make_store):
    store = make_store()
    sync(store, corpus(), chunker=FakeChunker(), embedder=FakeEmbedder())
    embedder = FakeEmbedder()
    changed = corpus(
        **{
            "a.md": Document("a.md", "Alpha text, edited.", tenant="acme", version="2"),
            "c.md": None,
            "d.md": Document("d.md", "Delta.", tenant="acme"),
        }
    )
    report = sync(store, changed, chunker=FakeChunker(), embedder=embedder)
    assert report.added == ("d.md",)
    assert report.updated == ("a.md",)
    assert report.removed == ("c.md",)
    assert report.unchanged == ("b.md",)
    assert report.rebuilt == ""
    # a.md's first chunk kept its text: its stored vector is reused, not embedded again
    assert embedder.embedded == [", edited.", "Delta."]
    assert (report.embedded, report.reused) == (3, 1)
    assert [c.id for c in store.chunks()] == ["a.md#0", "a.md#1", "b.md#0", "b.md#1", "d.md#0"]
    assert "c.md" not in store.documents()
    # and the result is what a fresh sync of the same corpus gives
    fresh = make_store()
    sync(fresh, changed, chunker=FakeChunker(), embedder=FakeEmbedder())
    assert store.chunks() == fresh.chunks()
    assert store.search(unit(1, 1, 1, 1), HR, k=5) == fresh.search(unit(1, 1, 1, 1), HR, k=5)


def test_second_sync_of_the_same_corpus_embeds_nothing(make_store):
    store, embedder = make_store(), FakeEmbedder()
    sync(store, corpus(), chunker=FakeChunker(), embedder=FakeEmbedder())
    report = sync(store, corpus(), chunker=FakeChunker(), embedder=embedder)
    assert report.unchanged == ("a.md", "b.md", "c.md")
    assert report.embedded == 0 and embedder.calls == []


def test_access_change_without_text_change_is_re_indexed(make_store):
    store = make_store()
    sync(store, corpus(), chunker=FakeChunker(), embedder=FakeEmbedder())
    opened = corpus(**{"b.md": Document("b.md", "Bravo text.", tenant="acme", groups=())})
    report = sync(store, opened, chunker=FakeChunker(), embedder=FakeEmbedder())
    assert report.updated == ("b.md",)
    assert "b.md#0" in ids(store.search(unit(1, 1, 1, 1), ANN, k=10))


def test_changed_chunker_params_rebuild_everything(make_store):
    store = make_store()
    sync(store, corpus(), chunker=FakeChunker(10), embedder=FakeEmbedder())
    report = sync(store, corpus(), chunker=FakeChunker(20), embedder=FakeEmbedder())
    assert report.updated == ("a.md", "b.md", "c.md") and report.unchanged == ()
    assert report.rebuilt.startswith("chunker params changed")
    assert store.meta["chunker"] == {"kind": "fake", "size": 20}


def test_changed_embedder_version_rebuilds_everything(make_store):
    store = make_store()
    sync(store, corpus(), chunker=FakeChunker(), embedder=FakeEmbedder(version="1"))
    report = sync(store, corpus(), chunker=FakeChunker(), embedder=FakeEmbedder(version="2"))
    assert report.updated == ("a.md", "b.md", "c.md")
    assert report.rebuilt == "embedder version changed ('1' -> '2')"
    assert store.meta["embedder_version"] == "2"


def test_sync_refuses_another_embedder(make_store):
    store = make_store()
    sync(store, corpus(), chunker=FakeChunker(), embedder=FakeEmbedder())
    with pytest.raises(
        EmbedderMismatch,
        match=r"built with embedder 'fake' \(dim=4, version='1'\) but sync was given 'other'",
    ):
        sync(store, corpus(), chunker=FakeChunker(), embedder=FakeEmbedder(name="other"))
    with pytest.raises(EmbedderMismatch, match=r"but sync was given 'fake' \(dim=8"):
        sync(store, corpus(), chunker=FakeChunker(), embedder=FakeEmbedder(dim=8))


def fitted_versions(store) -> dict[str, dict[str, str]]:
    """What each partition's fit should be: FakeFittable fitted, in store order, on the
    partition's chunks and its tenant's public ones (tenant -> groups as JSON -> version)."""
    chunks = store.chunks()
    versions: dict[str, dict[str, str]] = {}
    for part in {Partition.of(c) for c in chunks}:
        public = Partition(part.tenant)
        texts = [c.text for c in chunks if Partition.of(c) in (part, public)]
        versions.setdefault(part.tenant, {})[part.groups_json] = FakeFittable().fit(texts).version
    return versions


def test_fittable_embedder_is_fitted_per_partition_in_store_order(make_store):
    store = make_store()
    report = sync(store, list(reversed(corpus())), chunker=FakeChunker(), embedder=FakeFittable())
    assert store.meta["embedder_version"] == fitted_versions(store)
    assert {t: set(v) for t, v in fitted_versions(store).items()} == {
        "acme": {"[]", '["hr"]'},
        "globex": {"[]"},
    }
    assert report.embedder.version == "unfitted"  # the one given: each partition has its fit
    hr = Partition("acme", ("hr",))
    learned = [c.text for c in store.chunks() if c.tenant == "acme"]  # a.md (public), b.md (hr)
    fitted = partition_embedder(store, FakeFittable(), hr, learned)  # how a query is embedded
    assert fitted.fitted_on == tuple(learned)
    public = [c.text for c in store.chunks() if c.doc_id == "a.md"]
    assert partition_embedder(store, FakeFittable(), Partition("acme"), public).fitted_on == tuple(
        public
    )
    check_embedder(store, FakeFittable())  # without a partition: name and dim only
    mismatch = r"\(tenant 'acme', groups \['hr'\]\) was built with embedder 'fake-fit'"
    with pytest.raises(EmbedderMismatch, match=mismatch):
        partition_embedder(store, FakeFittable(), hr, learned[:-1])


def test_fittable_embedder_unchanged_corpus_embeds_nothing(make_store):
    store = make_store()
    sync(store, corpus(), chunker=FakeChunker(), embedder=FakeFittable())
    embedder = FakeFittable()
    report = sync(store, corpus(), chunker=FakeChunker(), embedder=embedder)
    assert report.embedded == 0 and embedder.calls == []


def test_fittable_embedder_public_change_refits_its_tenant_only(make_store):
    store = make_store()
    sync(store, corpus(), chunker=FakeChunker(), embedder=FakeFittable())
    globex_before = store.search(unit(1, 2, 3, 4), EVE, k=5)
    embedder = FakeFittable()
    report = sync(
        store,
        corpus(**{"d.md": Document("d.md", "Delta.", tenant="acme")}),
        chunker=FakeChunker(),
        embedder=embedder,
    )
    assert report.added == ("d.md",) and report.updated == ("a.md", "b.md")
    assert report.unchanged == ("c.md",)
    # every partition of acme learns its public chunks: a new public document refits them all
    assert (
        report.rebuilt == "embedder refitted on the chunks of partition(s) 'acme' [], 'acme' ['hr']"
    )
    assert len(embedder.embedded) == len(store.chunks(HR)) == 8
    assert store.meta["embedder_version"] == fitted_versions(store)
    assert store.search(unit(1, 2, 3, 4), EVE, k=5) == globex_before


def test_fittable_embedder_restricted_change_refits_its_partition_only(make_store):
    store = make_store()
    sync(store, corpus(), chunker=FakeChunker(), embedder=FakeFittable())
    public_before = store.search(unit(1, 2, 3, 4), ANN, k=5)
    embedder = FakeFittable()
    edited = corpus(**{"b.md": Document("b.md", "Bravo, edited.", tenant="acme", groups=("hr",))})
    report = sync(store, edited, chunker=FakeChunker(), embedder=embedder)
    assert report.updated == ("b.md",) and report.unchanged == ("a.md", "c.md")
    assert report.rebuilt == "embedder refitted on the chunks of partition(s) 'acme' ['hr']"
    assert embedder.embedded == [c.text for c in store.chunks() if c.doc_id == "b.md"]
    assert store.meta["embedder_version"] == fitted_versions(store)
    assert store.search(unit(1, 2, 3, 4), ANN, k=5) == public_before  # the public fit stands


def test_fittable_embedder_group_change_re_indexes_that_document_only(make_store):
    store = make_store()
    sync(store, corpus(), chunker=FakeChunker(), embedder=FakeFittable())
    embedder = FakeFittable()
    moved = corpus(**{"b.md": Document("b.md", "Bravo text.", tenant="acme", groups=("staff",))})
    report = sync(store, moved, chunker=FakeChunker(), embedder=embedder)
    assert report.updated == ("b.md",) and report.rebuilt == ""  # a.md's public fit stands
    # the new partition's fit learned the same texts as the old one: the same model, whose
    # stored vectors are still right
    assert embedder.embedded == [] and report.reused == 2
    assert store.meta["embedder_version"] == fitted_versions(store)


@pytest.mark.parametrize(
    "older",
    [{"acme": "fit-of-acme", "globex": "fit-of-globex"}, "fit-of-every-tenant"],
    ids=["per-tenant", "one-fit"],
)
def test_an_index_not_fitted_per_partition_is_refused_then_rebuilt(make_store, older):
    store = make_store()
    sync(store, corpus(), chunker=FakeChunker(), embedder=FakeFittable())
    store.set_meta({"embedder_version": older})  # as an older raglab wrote it
    texts = [c.text for c in store.chunks() if c.doc_id == "a.md"]
    with pytest.raises(EmbedderMismatch, match="'fake-fit' fit that is not per access partition"):
        partition_embedder(store, FakeFittable(), Partition("acme"), texts)
    report = sync(store, corpus(), chunker=FakeChunker(), embedder=FakeFittable())
    assert report.updated == ("a.md", "b.md", "c.md")
    assert report.rebuilt.startswith("the index's embedder fits are not per access partition")
    assert store.meta["embedder_version"] == fitted_versions(store)


def test_empty_document_is_recorded_and_then_unchanged(make_store):
    store = make_store()
    docs = corpus(**{"e.md": Document("e.md", "", tenant="acme")})
    assert sync(store, docs, chunker=FakeChunker(), embedder=FakeEmbedder()).added[-1] == "e.md"
    assert "e.md" in store.documents()
    assert sync(store, docs, chunker=FakeChunker(), embedder=FakeEmbedder()).unchanged[-1] == "e.md"


def test_sync_of_nothing(make_store):
    store = make_store(dim=None)
    report = sync(store, [], chunker=FakeChunker(), embedder=FakeEmbedder())
    assert report.added == () and len(store) == 0
    assert store.dim == DIM  # recorded from the embedder


def test_sync_rejects_duplicate_ids_and_bad_chunkers(make_store):
    store = make_store()
    with pytest.raises(ValueError, match="document id 'a.md' appears twice"):
        sync(store, corpus() + corpus()[:1], chunker=FakeChunker(), embedder=FakeEmbedder())

    class LeakyChunker(FakeChunker):  # forgets to copy the access metadata
        def split(self, doc):
            return [dataclasses.replace(c, tenant="default", groups=()) for c in super().split(doc)]

    with pytest.raises(
        ValueError, match="chunks must carry their document's id and access metadata"
    ):
        sync(store, corpus(), chunker=LeakyChunker(), embedder=FakeEmbedder())

    class ShiftedChunker(FakeChunker):
        def split(self, doc):
            return [dataclasses.replace(c, start=c.start + 1) for c in super().split(doc)]

    with pytest.raises(ValueError, match=r"whose text is not doc.text\[1:10\]"):
        sync(store, corpus(), chunker=ShiftedChunker(), embedder=FakeEmbedder())
    assert len(store) == 0


def test_embedder_returning_the_wrong_shape_is_refused(make_store):
    class Short(FakeEmbedder):
        def embed(self, texts):
            return super().embed(texts)[:-1]

    with pytest.raises(ValueError, match=r"embedder 'fake' returned shape \(8, 4\) for 9 texts"):
        sync(make_store(), corpus(), chunker=FakeChunker(), embedder=Short())


# ---------------------------------------------------------------------------- interrupted sync


def state(store):
    return store.chunks(), store.documents(), store.meta, store.search(unit(1, 2, 3, 4), HR, k=5)


def test_embedder_failure_leaves_the_index_intact(make_store):
    store = make_store()
    sync(store, corpus(), chunker=FakeChunker(), embedder=FakeEmbedder())
    before = state(store)
    changed = corpus(**{"a.md": Document("a.md", "New text.", tenant="acme"), "c.md": None})
    with pytest.raises(RuntimeError, match="embedder crashed"):
        sync(store, changed, chunker=FakeChunker(), embedder=FakeEmbedder(fail=True))
    assert state(store) == before


def test_failure_midway_through_the_writes_rolls_back(make_store, monkeypatch):
    store = make_store()
    sync(store, corpus(), chunker=FakeChunker(), embedder=FakeEmbedder())
    before = state(store)

    def broken_add(*args, **kwargs):  # the deletes have already happened when this runs
        raise OSError("disk full")

    monkeypatch.setattr(store, "add", broken_add)
    changed = corpus(**{"a.md": Document("a.md", "New text.", tenant="acme"), "c.md": None})
    with pytest.raises(OSError, match="disk full"):
        sync(store, changed, chunker=FakeChunker(), embedder=FakeEmbedder())
    monkeypatch.undo()
    assert state(store) == before


def test_interrupted_sync_leaves_the_file_intact_after_reopen(tmp_path):
    path = tmp_path / "i.db"
    with SQLiteStore.create(path) as store:
        sync(store, corpus(), chunker=FakeChunker(), embedder=FakeEmbedder())
        before = state(store)
        original = store.set_meta

        def crash(meta):
            original(meta)  # the last write of the sync lands, then the process "dies"
            raise KeyboardInterrupt

        store.set_meta = crash
        with pytest.raises(KeyboardInterrupt):
            sync(
                store,
                corpus(**{"c.md": None}),
                chunker=FakeChunker(),
                embedder=FakeEmbedder(version="2"),
            )
    with SQLiteStore.open(path) as reopened:
        assert state(reopened) == before


# ---------------------------------------------------------------------------- check_embedder


def test_check_embedder(make_store):
    store = make_store()
    sync(store, corpus(), chunker=FakeChunker(), embedder=FakeEmbedder())
    check_embedder(store, FakeEmbedder())  # the same one passes
    for other, shown in [
        (FakeEmbedder(name="hashing"), r"'hashing' \(dim=4, version='1'\)"),
        (FakeEmbedder(dim=8), r"'fake' \(dim=8, version='1'\)"),
        (FakeEmbedder(version="2"), r"'fake' \(dim=4, version='2'\)"),
    ]:
        message = (
            rf"built with embedder 'fake' \(dim=4, version='1'\) but the given embedder is {shown}"
        )
        with pytest.raises(EmbedderMismatch, match=message):
            check_embedder(store, other)


def test_check_embedder_names_the_index_file(tmp_path):
    with SQLiteStore.create(tmp_path / "i.db") as store:
        sync(store, corpus(), chunker=FakeChunker(), embedder=FakeEmbedder())
        with pytest.raises(EmbedderMismatch, match=r"index '.*i\.db' was built with"):
            check_embedder(store, FakeEmbedder(version="9"))


def test_check_embedder_without_recorded_embedder_checks_dim(make_store):
    store = make_store()
    store.add([make_chunk("a.md")], np.ones((1, DIM)))
    check_embedder(store, FakeEmbedder())
    with pytest.raises(
        EmbedderMismatch, match="holds vectors of dimension 4 but embedder 'fake' makes dimension 8"
    ):
        check_embedder(store, FakeEmbedder(dim=8))


# ---------------------------------------------------------------------------- with the real modules


@pytest.mark.skipif(not CORPUS.is_dir(), reason="sample corpus not present")
def test_real_corpus_chunker_and_embedder_in_both_stores(tmp_path):
    chunking = pytest.importorskip("raglab.ingest.chunking")
    embedders = pytest.importorskip("raglab.embed.embedders")
    from raglab.ingest.loaders import load_folder

    docs = load_folder(CORPUS).documents
    embedder = embedders.embedder("hashing")
    memory = MemoryStore()
    with SQLiteStore.create(tmp_path / "i.db") as sqlite_store:
        for store in (memory, sqlite_store):
            report = sync(store, docs, chunker=chunking.Chunker(), embedder=embedder)
            assert len(report.added) == len(docs)
        query = embedder.embed(["How many vacation days do I get?"])[0]
        tenant = docs[0].tenant
        hits = sqlite_store.search(query, Principal("u", tenant), k=5)
        assert hits == memory.search(query, Principal("u", tenant), k=5)
        assert hits and all(hit.chunk.tenant == tenant for hit in hits)
        again = sync(sqlite_store, docs, chunker=chunking.Chunker(), embedder=embedder)
        assert again.embedded == 0
