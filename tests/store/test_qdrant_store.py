"""What is particular to the Qdrant store; the shared store tests (test_stores.py) and the
cross-tenant attacks (test_isolation.py) run against it too.

Everything here uses qdrant-client's local mode (a folder, no server).
"""

from __future__ import annotations

import json
import shutil
import sys

import numpy as np
import pytest

from raglab import Index, Principal, StoreError, ask
from raglab.cli import main
from raglab.evaluation import load_questions
from raglab.samples import sample_corpus, sample_questions
from raglab.store.memory import MemoryStore
from tests.conftest import QDRANT_MISSING
from tests.store.test_stores import DIM, random_corpus, unit

pytestmark = [
    pytest.mark.integration,  # the heavy matrix: make test-all
    pytest.mark.skipif(bool(QDRANT_MISSING), reason=QDRANT_MISSING),
]


@pytest.fixture(scope="module")
def both_indexes(tmp_path_factory):
    """The sample corpus indexed once into SQLite and once into a Qdrant folder."""
    folder = tmp_path_factory.mktemp("indexes")
    sqlite = Index.from_folder(sample_corpus(), path=folder / "index.sqlite")
    qdrant = Index.from_folder(sample_corpus(), path=folder / "qdrant", backend="qdrant")
    yield sqlite, qdrant
    qdrant.store.close()


def test_qdrant_answers_the_sample_questions_exactly_as_sqlite(both_indexes):
    sqlite, qdrant = both_indexes
    assert qdrant.store.chunks() == sqlite.store.chunks()
    assert qdrant.store.documents() == sqlite.store.documents()
    calibration = qdrant.store.meta["calibration"]  # kept in Qdrant's meta point
    assert calibration is not None and calibration == sqlite.store.meta["calibration"]
    for q in load_questions(sample_questions()):
        principal = Principal("u", q.tenant, q.groups)
        for method in ("dense", "hybrid"):
            expected = ask(q.question, sqlite, principal, method=method)
            got = ask(q.question, qdrant, principal, method=method)
            assert got == expected, (q.id, method)  # answer, citations, hits and their scores


def test_random_data_gives_the_memory_store_hits_ties_included(tmp_path):
    from raglab.store.qdrant_store import QdrantStore

    rng = np.random.default_rng(7)
    chunks, vectors = random_corpus(rng)
    memory = MemoryStore(DIM)
    with QdrantStore.create(tmp_path / "q", dim=DIM) as qdrant:
        for store in (memory, qdrant):
            store.add(chunks, vectors)
            store.delete_document("doc005.md")
        principals = [Principal("p", t, g) for t in ("acme", "x") for g in ({}, {"hr", "it"})]
        for query in [vectors[0], *rng.normal(size=(6, DIM))]:  # vectors[0] is planted 6 times
            for principal in principals:
                for k in (1, 3, 50):
                    assert qdrant.search(query, principal, k) == memory.search(query, principal, k)


class Recorder:
    """Wraps a qdrant client and records the calls made through it."""

    def __init__(self, client):
        self.client, self.calls = client, []

    def __getattr__(self, name):
        method = getattr(self.client, name)

        def record(*args, **kwargs):
            self.calls.append((name, args, kwargs))
            return method(*args, **kwargs)

        return record


def test_access_is_a_filter_inside_the_query_on_keyword_indexed_fields(tmp_path):
    from qdrant_client import models

    from raglab.store.qdrant_store import QdrantStore

    store = QdrantStore.create(tmp_path / "q", dim=DIM)
    store._client = recorder = Recorder(store._client)
    store.add(  # a nearer chunk of another tenant, and one of a group the asker is not in
        [make("mine.md"), make("theirs.md", tenant="globex"), make("hr.md", groups=("hr",))],
        np.array([unit(1, 1, 0, 0), unit(1, 0, 0, 0), unit(1, 0.1, 0, 0)]),
    )
    indexed = {
        (args[1], kw["field_schema"]) for name, args, kw in recorder.calls if "payload" in name
    }
    keyword = models.PayloadSchemaType.KEYWORD
    assert {("tenant", keyword), ("groups", keyword)} <= indexed

    hits = store.search(unit(1, 0, 0, 0), Principal("ann", "acme"), k=1)
    assert [hit.chunk.doc_id for hit in hits] == ["mine.md"]
    (query,) = [kw for name, _, kw in recorder.calls if name == "query_points"]
    readable = query["query_filter"]
    assert readable.must == [
        models.FieldCondition(key="tenant", match=models.MatchValue(value="acme"))
    ]
    assert readable.should == [models.IsEmptyCondition(is_empty=models.PayloadField(key="groups"))]
    store.close()


def make(doc_id, tenant="acme", groups=()):
    from raglab.records import Chunk

    return Chunk(doc_id, 0, doc_id, 0, len(doc_id), tenant=tenant, groups=groups)


def test_a_commit_cut_short_hides_the_documents_it_was_writing(tmp_path, monkeypatch):
    from raglab.store import qdrant_commit
    from raglab.store.qdrant_store import QdrantStore

    path = tmp_path / "q"
    with QdrantStore.create(path, dim=DIM) as store:
        store.add([make("a.md"), make("b.md")], np.array([unit(1, 0, 0, 0), unit(0, 1, 0, 0)]))
        original = qdrant_commit.upsert

        def die_after_the_chunks(client, collection, points):  # the records never land
            if collection.endswith("_records") and len(points) > 1:
                raise KeyboardInterrupt
            original(client, collection, points)

        monkeypatch.setattr(qdrant_commit, "upsert", die_after_the_chunks)
        with pytest.raises(KeyboardInterrupt):
            with store.transaction():
                store.delete_document("a.md")
                store.add([make("a.md"), make("c.md")], np.array([unit(0, 0, 1, 0)] * 2))
                store.add([make("d.md")], np.array([unit(0, 0, 0, 1)]))
    with QdrantStore.open(path) as reopened:
        # a.md, c.md and d.md were half-written: none of them shows, b.md is untouched
        assert list(reopened.documents()) == ["b.md"]
        assert [c.id for c in reopened.chunks()] == ["b.md#0"] and len(reopened) == 1
        hits = reopened.search(unit(1, 0, 1, 1), Principal("ann", "acme"), k=10)
        assert [hit.chunk.id for hit in hits] == ["b.md#0"]
        reopened.add([make("a.md")], np.array([unit(1, 0, 0, 0)]))  # the next sync re-adds
        assert list(reopened.documents()) == ["a.md", "b.md"]
        assert [c.id for c in reopened.chunks()] == ["a.md#0", "b.md#0"]


def test_opening_what_is_not_an_index_says_so_and_writes_nothing(tmp_path):
    from raglab.store.qdrant_store import QdrantStore

    with pytest.raises(StoreError, match=r"index folder '.*missing' does not exist"):
        QdrantStore.open(tmp_path / "missing")
    assert not (tmp_path / "missing").exists()
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(StoreError, match=r"notes\.txt' is not a folder"):
        QdrantStore.open(tmp_path / "notes.txt")
    shutil.copytree(sample_corpus(), tmp_path / "docs")
    before = sorted(p.name for p in (tmp_path / "docs").iterdir())
    with pytest.raises(StoreError, match="is not a raglab index .not a Qdrant folder"):
        QdrantStore.open_or_create(tmp_path / "docs")
    assert sorted(p.name for p in (tmp_path / "docs").iterdir()) == before
    QdrantStore.create(tmp_path / "q").close()
    with pytest.raises(StoreError, match="already exists"):
        QdrantStore.create(tmp_path / "q")


def test_a_folder_in_use_waits_then_fails_clearly(tmp_path, monkeypatch):
    from raglab.store import _qdrant_points
    from raglab.store.qdrant_store import QdrantStore

    monkeypatch.setattr(_qdrant_points, "LOCK_WAIT_SECONDS", 0.2)
    with QdrantStore.create(tmp_path / "q"):
        with pytest.raises(StoreError, match="is in use by another process .waited 0.2 s"):
            QdrantStore.open(tmp_path / "q")
    QdrantStore.open(tmp_path / "q").close()  # free again once the first one closed


def test_without_qdrant_client_the_error_says_what_to_install(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "qdrant_client", None)  # import fails as if not installed
    code = main(
        ["index", str(sample_corpus()), "--store", "qdrant", "--index", str(tmp_path / "q")]
    )
    assert code == 1
    assert "pip install raglab[qdrant]" in capsys.readouterr().err


def test_cli_index_ask_and_eval_on_qdrant_match_sqlite(tmp_path, capsys):
    corpus = tmp_path / "corpus"
    shutil.copytree(sample_corpus() / "globex", corpus / "globex")
    questions = tmp_path / "q.jsonl"
    rows = [json.loads(line) for line in sample_questions().read_text().splitlines()]
    mentioned = ("relevant_docs", "leak_docs")
    globex = [
        row
        for row in rows
        if row.get("tenant") == "globex"
        and all(doc.startswith("globex/") for key in mentioned for doc in row.get(key, []))
    ]
    questions.write_text("".join(json.dumps(row) + "\n" for row in globex))
    outputs = {}
    for store, index in (("sqlite", tmp_path / "i.sqlite"), ("qdrant", tmp_path / "q")):
        where = ["--store", store, "--index", str(index)]
        assert main(["index", str(corpus), *where, "--json"]) == 0
        built = json.loads(capsys.readouterr().out)
        ask_args = ["ask", "What does error E-204 mean?", *where, "--tenant", "globex", "--json"]
        assert main(ask_args) == 0
        answer = capsys.readouterr().out
        assert main(["eval", *where, "--questions", str(questions), "--json"]) == 0
        outputs[store] = (built["added"], answer, capsys.readouterr().out)
    assert outputs["qdrant"] == outputs["sqlite"]
    assert "E-204" in outputs["qdrant"][1]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--store", "qdrant", "--docs", "."], "--store and --qdrant-url apply to --index"),
        (["--store", "sqlite", "--qdrant-url", "http://x", "--index", "i"], "needs --store qdrant"),
        (["--qdrant-url", "http://127.0.0.1:9", "--index", "i"], "cannot reach the Qdrant server"),
    ],
)
def test_cli_store_flags_are_checked(args, message, capsys):
    assert main(["ask", "q", *args]) == 1
    assert message in capsys.readouterr().err


# ---------------------------------------------------------------------------- ordinary states

SMALL = {  # three access partitions of two tenants
    "acme/open.md": "---\ntenant: acme\n---\nParking is free for staff. The refund desk opens at nine.",
    "acme/hr.md": "---\ntenant: acme\ngroups: [hr]\n---\nSalaries are reviewed each March.",
    "globex/faq.md": "---\ntenant: globex\n---\nError E-204 means the licence has expired.",
}


def write_folder(folder, files):
    shutil.rmtree(folder, ignore_errors=True)
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)


def index_folder(folder, path):
    """`raglab index FOLDER --store qdrant --index PATH`, in this process."""
    assert main(["index", str(folder), "--store", "qdrant", "--index", str(path)]) == 0


def what_is_indexed(path) -> tuple:
    """Everything a reader of the index at `path` can tell apart: documents, chunks, vectors,
    and the keyword scores each kind of asker gets in server mode."""
    from raglab.store.qdrant_store import QdrantStore

    askers = [Principal("a", "acme"), Principal("h", "acme", {"hr"}), Principal("g", "globex")]
    with QdrantStore.open(path, keyword="server") as store:
        searched = [store.keyword_search("refund salaries error", p, 10) for p in askers]
        return store.documents(), store.chunks(), store.vectors().tolist(), searched


@pytest.mark.parametrize(
    "removed",
    [("acme/open.md", "acme/hr.md", "globex/faq.md"), ("globex/faq.md",), ("acme/hr.md",)],
    ids=["every-document", "a-tenant", "a-group"],
)
def test_an_update_that_empties_a_partition_leaves_the_index_indexable(tmp_path, removed):
    """Documents removed (every one: the folder left with an empty file), indexed, then put
    back: each `raglab index` succeeds and the index is what a fresh one of the folder is
    (failed before with every document removed: reading the vectors of an index holding no
    chunk raised "cannot reshape array of size 0")."""
    folder, path = tmp_path / "docs", tmp_path / "q"
    write_folder(folder, SMALL)
    index_folder(folder, path)
    emptied = {name: text for name, text in SMALL.items() if name not in removed}
    write_folder(folder, emptied or {"empty.md": ""})
    index_folder(folder, path)
    write_folder(folder, SMALL)
    index_folder(folder, path)
    index_folder(folder, tmp_path / "fresh")
    assert what_is_indexed(path) == what_is_indexed(tmp_path / "fresh")


WRITES = {"create_collection", "create_payload_index", "delete", "set_payload", "update_vectors"}
WRITES |= {"upsert"}


@pytest.fixture
def crash_at(monkeypatch):
    """crash_at(n): every Qdrant client opened from then on dies before the n-th write made
    through any of them (KeyboardInterrupt; nothing after it reaches Qdrant, as with kill -9).
    Returns a list that holds the number of writes attempted."""
    from raglab.store import _qdrant_points

    opened = _qdrant_points._local_client

    def arm(n: int) -> list[int]:
        writes = [0]

        class Dying:
            def __init__(self, client):
                self.client = client

            def __getattr__(self, name):
                method = getattr(self.client, name)
                if name not in WRITES:
                    return method

                def write(*args, **kwargs):
                    writes[0] += 1
                    if writes[0] == n:
                        raise KeyboardInterrupt
                    return method(*args, **kwargs)

                return write

        monkeypatch.setattr(_qdrant_points, "_local_client", lambda *a: Dying(opened(*a)))
        return writes

    yield arm


UPDATED = {  # one document changed, one removed, one added, the hr partition longer
    "acme/open.md": SMALL["acme/open.md"] + " Bicycles go in the yard.",
    "acme/hr.md": SMALL["acme/hr.md"] + " " + "Payroll questions go to hr. " * 20,
    "acme/new.md": "---\ntenant: acme\n---\nThe canteen serves lunch from noon.",
}


@pytest.mark.parametrize("before", [{}, SMALL], ids=["first-build", "update"])
def test_an_index_cut_short_at_any_write_is_indexed_again_whole(
    tmp_path, crash_at, monkeypatch, before
):
    """`raglab index` dies before each of its writes in turn (a first build, then an update
    that changes, removes and adds documents and moves an avgdl); the next `raglab index`
    succeeds and gives the index a fresh build of the folder gives: no chunk of a removed
    document, none lost of the others (failed before: a crash in the first build's commit
    left every later `raglab index` failing with "cannot reshape array of size 0")."""
    folder, built = tmp_path / "docs", tmp_path / "built"
    if before:
        write_folder(folder, before)
        index_folder(folder, built)
    write_folder(folder, UPDATED)
    index_folder(folder, tmp_path / "fresh")
    expected = what_is_indexed(tmp_path / "fresh")
    n = 0
    while True:
        n += 1
        path = tmp_path / f"cut{n}"
        if built.exists():
            shutil.copytree(built, path)
        writes = crash_at(n)
        try:
            index_folder(folder, path)
        except KeyboardInterrupt:
            pass
        monkeypatch.undo()
        if writes[0] < n:  # the whole index ran: every write has been cut once
            break
        index_folder(folder, path)
        assert what_is_indexed(path) == expected, f"cut before write {n}"
    assert n > 10
