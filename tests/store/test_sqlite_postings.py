"""The SQLite index's stored BM25, stems and memory-mapped vectors against the in-memory engine.

Random corpora and principals: every keyword hit must be exactly (same chunks, same
order, bit-identical scores) what `raglab.retrieve.bm25.BM25` fitted on the principal's readable
chunks returns, every dense hit what the memory store returns, and the stems a
principal's documents are known to use what `raglab.generate.abstention.vocabulary` collects from
their chunks; after edits and deletions too.
"""

from __future__ import annotations

import numpy as np
import pytest

from raglab.generate.abstention import vocabulary
from raglab.ingest.stems import content_stems
from raglab.records import Chunk, Hit, Principal
from raglab.retrieve.bm25 import BM25
from raglab.store.memory import MemoryStore
from raglab.store.sqlite_store import SQLiteStore

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "refund",
    "policy",
    "vacation",
    "error",
    "the",
    "a",
    "of",
    "to",
    "data",
    "key",
]
HEADINGS = ["", "Refunds", "Travel costs", "Security keys"]  # titles too: their stems count
TENANTS = ("acme", "globex")
GROUPS = ("hr", "eng", "ops")


def random_chunks(rng: np.random.Generator, n_docs: int, prefix: str = "") -> list[Chunk]:
    chunks = []
    for d in range(n_docs):
        tenant = TENANTS[rng.integers(len(TENANTS))]
        groups = tuple(rng.choice(GROUPS, size=rng.integers(0, 3), replace=False).tolist())
        for i in range(int(rng.integers(1, 4))):
            n_words = int(rng.integers(0, 12))  # 0: a chunk with no words at all
            text = " ".join(rng.choice(WORDS, size=n_words).tolist())
            title, heading = rng.choice(HEADINGS, size=2).tolist()
            chunks.append(
                Chunk(
                    f"{prefix}d{d:03d}.md",
                    i,
                    text,
                    0,
                    len(text),
                    heading=heading,
                    title=title,
                    tenant=tenant,
                    groups=groups,
                )
            )
    return chunks


def random_principals(rng: np.random.Generator, n: int) -> list[Principal]:
    return [
        Principal(
            "u",
            TENANTS[rng.integers(len(TENANTS))],
            set(rng.choice(GROUPS, size=rng.integers(0, 3), replace=False).tolist()),
        )
        for _ in range(n)
    ]


def random_question(rng: np.random.Generator) -> str:
    words = rng.choice(WORDS + ["unknown"], size=rng.integers(1, 6)).tolist()  # repeats too
    return " ".join(words).upper() if rng.random() < 0.2 else " ".join(words)


def in_memory_bm25(store, question: str, principal: Principal, k: int) -> list[Hit]:
    """What raglab's retriever did before the postings: fit BM25 on the readable chunks."""
    chunks = store.chunks(principal)
    if not chunks:
        return []
    rows, scores = BM25().fit([c.text for c in chunks]).search(question, k)
    return [Hit(chunks[r], float(s)) for r, s in zip(rows, scores, strict=True) if s > 0]


def vectors_for(chunks: list[Chunk], rng: np.random.Generator) -> np.ndarray:
    return rng.normal(size=(len(chunks), 8)).astype(np.float32)


def assert_same_searches(sqlite: SQLiteStore, memory: MemoryStore, rng: np.random.Generator):
    for principal in random_principals(rng, 8):
        for _ in range(5):
            question, k = random_question(rng), int(rng.integers(1, 12))
            expected = in_memory_bm25(memory, question, principal, k)
            assert sqlite.keyword_search(question, principal, k) == expected, (question, principal)
            query = rng.normal(size=8).astype(np.float32)
            assert sqlite.search(query, principal, k) == memory.search(query, principal, k)
        asked = content_stems(" ".join(WORDS + HEADINGS + ["unknown"]))
        expected_words = vocabulary(memory.chunks(principal)) & asked
        assert sqlite.known_stems(principal, asked) == expected_words, principal


@pytest.mark.parametrize("seed", range(6))
def test_stored_bm25_and_mapped_vectors_match_the_in_memory_engine(tmp_path, seed):
    rng = np.random.default_rng(seed)
    chunks = random_chunks(rng, int(rng.integers(1, 40)))
    vectors = vectors_for(chunks, rng)
    memory = MemoryStore()
    memory.add(chunks, vectors)
    with SQLiteStore.writing(tmp_path / "i.db") as sqlite:
        sqlite.add(chunks, vectors)
    reopened = SQLiteStore.open(tmp_path / "i.db")  # a cold process: nothing cached
    assert_same_searches(reopened, memory, rng)


@pytest.mark.parametrize("seed", range(4))
def test_edits_and_deletions_update_the_postings(tmp_path, seed):
    rng = np.random.default_rng(100 + seed)
    chunks = random_chunks(rng, 30)
    vectors = vectors_for(chunks, rng)
    memory = MemoryStore()
    memory.add(chunks, vectors)
    with SQLiteStore.writing(tmp_path / "i.db") as sqlite:
        # The same raw vectors: the memory store's are normalised already, and normalising
        # a float32 unit vector again may move its last bit.
        sqlite.add(chunks, vectors)
    for _ in range(3):  # rounds of sync-like writes: delete some documents, rewrite others
        doc_ids = sorted({c.doc_id for c in memory.chunks()})
        touched = rng.choice(doc_ids, size=min(8, len(doc_ids)), replace=False).tolist()
        new = [c for c in random_chunks(rng, 5, prefix="new-")]
        rewritten = [c for c in random_chunks(rng, 40) if c.doc_id in touched[:4]]
        new_vectors = vectors_for(new + rewritten, rng)
        with SQLiteStore.writing(tmp_path / "i.db") as writer:
            for store in (memory, writer):
                for doc_id in touched:
                    store.delete_document(doc_id)
                for doc_id in {c.doc_id for c in new}:
                    store.delete_document(doc_id)
                store.add(new + rewritten, new_vectors)
        reopened = SQLiteStore.open(tmp_path / "i.db")
        assert reopened.chunks() == memory.chunks()
        assert_same_searches(reopened, memory, rng)


def test_postings_hold_no_trace_of_deleted_chunks(tmp_path):
    rng = np.random.default_rng(7)
    chunks = random_chunks(rng, 10)
    with SQLiteStore.writing(tmp_path / "i.db") as store:
        store.add(chunks, vectors_for(chunks, rng))
    with SQLiteStore.writing(tmp_path / "i.db") as store:
        for doc_id in {c.doc_id for c in chunks}:
            store.delete_document(doc_id)
    con = SQLiteStore.open(tmp_path / "i.db")._con
    assert con.execute("SELECT COUNT(*) FROM postings").fetchone() == (0,)
    assert con.execute("SELECT SUM(n_chunks), SUM(n_tokens) FROM parts").fetchone() == (0, 0)


def test_a_search_inside_a_write_sees_what_it_wrote(tmp_path):
    rng = np.random.default_rng(8)
    chunks = random_chunks(rng, 10)
    memory = MemoryStore()
    memory.add(chunks, vectors := vectors_for(chunks, rng))
    with SQLiteStore.writing(tmp_path / "i.db") as store:
        store.add(chunks, vectors)
        assert_same_searches(store, memory, rng)


def test_a_stale_or_missing_vector_file_is_never_read(tmp_path):
    rng = np.random.default_rng(9)
    chunks = random_chunks(rng, 12)
    memory = MemoryStore()
    memory.add(chunks, vectors := vectors_for(chunks, rng))
    with SQLiteStore.writing(tmp_path / "i.db") as store:
        store.add(chunks, vectors)
    files = sorted(p.name for p in tmp_path.glob("i.db.*.npy"))
    assert len(files) == 2  # vectors and rows of the one current generation
    for path in tmp_path.glob("i.db.*.npy"):
        path.unlink()  # as after a crash between commit and writing them
    assert_same_searches(SQLiteStore.open(tmp_path / "i.db"), memory, rng)
    with SQLiteStore.writing(tmp_path / "i.db") as store:
        store.delete_document(chunks[0].doc_id)
    memory.delete_document(chunks[0].doc_id)
    assert len(list(tmp_path.glob("i.db.*.npy"))) == 2  # the old generation's files are gone
    assert_same_searches(SQLiteStore.open(tmp_path / "i.db"), memory, rng)


def forbid_reading_every_chunk(monkeypatch):
    def read_everything(self):
        raise AssertionError("a search read every chunk of the index")

    monkeypatch.setattr(SQLiteStore, "_load_snapshot", read_everything)


def test_a_cold_search_reads_no_chunk_it_does_not_return(tmp_path, monkeypatch):
    """The defect: every cold `raglab ask` read every chunk (and refitted BM25 on them)."""
    from raglab.pipeline import Index
    from tests.conftest import CORPUS

    Index.from_folder(CORPUS, path=tmp_path / "i.db")
    question = "What does error E-204 mean?"
    expected = {
        m: Index.open(tmp_path / "i.db").search(question, GLOBEX, method=m) for m in METHODS
    }
    forbid_reading_every_chunk(monkeypatch)
    for method in METHODS:
        index = Index.open(tmp_path / "i.db")  # a fresh process's view: nothing cached
        assert index.search(question, GLOBEX, method=method) == expected[method]


def test_a_cold_ask_reads_no_chunk_it_does_not_return(tmp_path, monkeypatch):
    from raglab.pipeline import Index, ask
    from tests.conftest import CORPUS

    Index.from_folder(CORPUS, path=tmp_path / "i.db")
    forbid_reading_every_chunk(monkeypatch)
    assert ask("What does error E-204 mean?", Index.open(tmp_path / "i.db"), GLOBEX).retrieved


METHODS = ("dense", "bm25", "hybrid")
GLOBEX = Principal("cli", "globex")


def test_thousands_of_ties_come_in_store_order(tmp_path):
    chunks = [Chunk(f"d{n:05d}.md", 0, "alpha beta", 0, 10) for n in range(1500)]
    memory = MemoryStore()
    memory.add(chunks, np.ones((len(chunks), 8), np.float32))
    with SQLiteStore.writing(tmp_path / "i.db") as store:
        store.add(chunks, np.ones((len(chunks), 8), np.float32))
    store = SQLiteStore.open(tmp_path / "i.db")
    principal = Principal("u", "default")
    expected = in_memory_bm25(memory, "alpha", principal, 3)
    assert store.keyword_search("alpha", principal, 3) == expected
    assert [hit.chunk.doc_id for hit in expected] == ["d00000.md", "d00001.md", "d00002.md"]
