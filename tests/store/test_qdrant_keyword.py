"""The Qdrant store's keyword search in the server (`keyword="server"`): BM25 as sparse
vectors, and hybrid search fused in Qdrant (`raglab.store.qdrant_search`).

The shared store tests (test_stores.py) and the cross-tenant attacks (test_isolation.py)
run here again with every Qdrant store in server mode.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from raglab import Index, Principal, StoreError, ask, embedder, sync
from raglab.cli import main
from raglab.evaluation import load_questions
from raglab.generate.abstention import vocabulary
from raglab.ingest.chunking import Chunker
from raglab.ingest.loaders import load_folder
from raglab.ingest.stems import content_stems
from raglab.records import Chunk
from raglab.retrieve.bm25 import BM25
from raglab.retrieve.fusion import reciprocal_rank_fusion
from raglab.samples import sample_corpus, sample_questions
from tests.conftest import QDRANT_MISSING
from tests.store import test_isolation, test_stores
from tests.store.test_qdrant_store import Recorder

pytestmark = [
    pytest.mark.integration,  # the heavy matrix: make test-all
    pytest.mark.skipif(bool(QDRANT_MISSING), reason=QDRANT_MISSING),
]

DIM = test_stores.DIM
ANN = Principal("ann", "acme")
QUESTION = "refund laptop"


@pytest.fixture
def server_mode(monkeypatch):
    """Every QdrantStore made while the test runs ranks keywords in the server."""
    from raglab.store.qdrant_store import QdrantStore

    init = QdrantStore.__init__

    def in_server_mode(self, *args, keyword="exact", **kwargs):
        init(self, *args, keyword="server", **kwargs)

    monkeypatch.setattr(QdrantStore, "__init__", in_server_mode)


@pytest.fixture
def make_store(tmp_path, server_mode):
    """The shared store tests' factory, giving Qdrant stores in server mode only."""
    from raglab.store.qdrant_store import QdrantStore

    opened = []

    def factory(dim: int | None = DIM):
        opened.append(QdrantStore.create(tmp_path / f"qdrant{len(opened)}", dim=dim))
        assert opened[-1].keyword_search is not None
        return opened[-1]

    yield factory
    for store in opened:
        store.close()


# The shared store tests, collected again here with the `make_store` above.
globals().update(
    {
        name: test
        for name, test in vars(test_stores).items()
        if name.startswith("test_")
        and callable(test)
        and "make_store" in test.__code__.co_varnames[: test.__code__.co_argcount]
    }
)


@pytest.mark.parametrize(
    "attack",
    [test_isolation._secret_document, test_isolation._rewritten_document],
    ids=["secret", "rewrite"],
)
@pytest.mark.parametrize("name", ["hashing", "lsa"])
def test_tenant_b_cannot_change_tenant_a_results_in_server_mode(
    tmp_path, server_mode, name, attack
):
    folder, path = tmp_path / "corpus", tmp_path / "qdrant"
    shutil.copytree(sample_corpus(), folder)
    index = Index.from_folder(folder, embedder=name, path=path, backend="qdrant")
    before = test_isolation._results(index)
    assert any(before.values())

    attack(folder)
    report = sync(
        index.store, load_folder(folder).documents, chunker=Chunker(), embedder=embedder(name)
    )
    assert report.added or report.updated, "the attack must reach the index"
    assert test_isolation._changed(before, test_isolation._results(index)) == []
    index.store.close()
    reopened = Index.open(path, backend="qdrant")
    assert test_isolation._changed(before, test_isolation._results(reopened)) == []
    reopened.store.close()


# ---------------------------------------------------------------------------- keyword search


def chunk(doc_id: str, text: str, tenant: str = "acme", groups: tuple = ()) -> Chunk:
    return Chunk(doc_id, 0, text, 0, len(text), tenant=tenant, groups=groups)


def store_with(tmp_path, name: str, chunks: list[Chunk]):
    from raglab.store.qdrant_store import QdrantStore

    store = QdrantStore.create(tmp_path / name, dim=DIM)
    store.add(chunks, np.tile(test_stores.unit(1, 0, 0, 0), (len(chunks), 1)))
    store.keyword = "server"
    return store


MINE = [
    chunk("a.md", "refund policy for a laptop bought online"),
    chunk("b.md", "refund refund within thirty days"),
    chunk("c.md", "the office has a laptop desk and a kitchen and a printer"),
    chunk("d.md", "holiday calendar"),
]
THEIRS = [  # better matches than any of mine: they must never reach acme, nor weigh on it
    chunk("x.md", "refund laptop refund laptop", tenant="globex"),
    chunk("y.md", "laptop " * 40, tenant="globex"),
    chunk("z.md", "refund laptop", groups=("hr",)),
]


def test_server_keyword_search_never_returns_a_chunk_the_asker_may_not_read(tmp_path):
    store = store_with(tmp_path, "q", MINE + THEIRS)
    store._client = recorder = Recorder(store._client)
    # k=1: a search that filtered after ranking would find the best chunk unreadable and
    # return nothing; the filter inside the query returns the best readable one.
    assert [h.chunk.doc_id for h in store.keyword_search(QUESTION, ANN, 1)] == ["a.md"]
    hits = store.keyword_search(QUESTION, ANN, 10)
    assert {h.chunk.doc_id for h in hits} == {"a.md", "b.md", "c.md"}
    (query,) = [kw for name, _, kw in recorder.calls if name == "query_points"][-1:]
    readable = query["query_filter"]
    assert readable.must[0].match.value == "acme"
    assert "search_params" not in query  # no idf of the server's: raglab weighs the words
    # idf's N and df, counted here under the same filter: N, then one count a question word
    counts = [kw["count_filter"] for name, _, kw in recorder.calls if name == "count"][-3:]
    assert all(readable in (f, *(f.must or [])) for f in counts)
    hr = store.keyword_search(QUESTION, Principal("hana", "acme", {"hr"}), 10)
    assert {h.chunk.doc_id for h in hr} == {"a.md", "b.md", "c.md", "z.md"}
    store.close()


def test_server_keyword_scores_are_raglab_bm25_over_the_readable_chunks_only(tmp_path):
    """idf over what the asker may read: another tenant's (or group's) chunks change no
    score; and for an asker without groups the scores are raglab's BM25 itself."""
    alone = store_with(tmp_path, "alone", MINE)
    crowded = store_with(tmp_path, "crowded", MINE + THEIRS)
    expected = BM25().fit([c.text for c in MINE]).scores(QUESTION)
    for store in (alone, crowded):
        hits = store.keyword_search(QUESTION, ANN, 10)
        got = {h.chunk.doc_id: h.score for h in hits}
        want = {c.doc_id: float(s) for c, s in zip(MINE, expected) if s > 0}
        assert got.keys() == want.keys()
        assert [got[d] for d in sorted(got)] == pytest.approx([want[d] for d in sorted(want)])
    assert alone.keyword_search(QUESTION, ANN, 10) == crowded.keyword_search(QUESTION, ANN, 10)
    alone.close()
    crowded.close()


def test_sparse_vectors_follow_their_partitions_avgdl_through_adds_and_deletes(tmp_path):
    """A commit that moves a partition's mean chunk length rewrites its sparse vectors."""
    store = store_with(tmp_path, "q", MINE[:2])
    store.add([MINE[2]], test_stores.unit(1, 0, 0, 0)[None])  # much longer: avgdl moves
    store.delete_document("b.md")
    kept = [MINE[0], MINE[2]]
    expected = BM25().fit([c.text for c in kept]).scores(QUESTION)
    hits = {h.chunk.doc_id: h.score for h in store.keyword_search(QUESTION, ANN, 10)}
    assert [hits[c.doc_id] for c in kept] == pytest.approx(expected.tolist())
    store.close()


def test_server_mode_knows_exactly_the_words_the_asker_may_read(tmp_path):
    """The answerer's vocabulary, counted in the server with the access filter inside."""
    store = store_with(tmp_path, "q", MINE + THEIRS)
    asked = content_stems("refund laptop kitchen holiday printer online thirty unknown")
    hana = Principal("hana", "acme", {"hr"})
    for principal in (ANN, hana, Principal("gil", "globex")):
        expected = vocabulary(store.chunks(principal)) & asked
        assert store.known_stems(principal, asked) == expected, principal
    assert "kitchen" in store.known_stems(ANN, asked)
    store.delete_document("c.md")  # the only chunk with "kitchen" and "printer"
    assert store.known_stems(ANN, asked) == vocabulary(store.chunks(ANN)) & asked
    assert "kitchen" not in store.known_stems(ANN, asked)
    store.keyword = "exact"  # exact BM25 reads the chunks anyway: the words come from them
    assert store.known_stems(ANN, asked) == vocabulary(store.chunks(ANN)) & asked
    store.close()


def test_a_cold_ask_in_server_mode_reads_no_chunk_listing(tmp_path, monkeypatch):
    from raglab.store.qdrant_store import QdrantStore

    Index.from_folder(sample_corpus(), path=tmp_path / "q", backend="qdrant").store.close()
    index = Index.open(tmp_path / "q", backend="qdrant", qdrant_keyword="server")

    def read_everything(self, *args, **kwargs):
        raise AssertionError("the ask read every chunk the asker may read")

    monkeypatch.setattr(QdrantStore, "chunks", read_everything)
    answer = ask("What does error E-204 mean?", index, Principal("cli", "globex"))
    assert answer.citations and not answer.abstained
    index.store.close()


def test_exact_mode_fits_bm25_on_the_readable_chunks_as_every_store(tmp_path):
    store = store_with(tmp_path, "q", MINE + THEIRS)
    store.keyword = "exact"
    readable = store.chunks(ANN)
    expected = BM25().fit([c.text for c in readable]).scores(QUESTION)
    hits = {h.chunk.id: h.score for h in store.keyword_search(QUESTION, ANN, 10)}
    assert hits == {c.id: float(s) for c, s in zip(readable, expected) if s > 0}
    store.close()
    from raglab.store.qdrant_store import QdrantStore

    with pytest.raises(ValueError, match="unknown keyword mode 'bm42'; choose from: exact"):
        QdrantStore.open(tmp_path / "q", keyword="bm42")


def test_an_index_of_the_previous_schema_is_refused(tmp_path, monkeypatch):
    from raglab.store import qdrant_store

    monkeypatch.setattr(qdrant_store, "SCHEMA_VERSION", 1)
    qdrant_store.QdrantStore.create(tmp_path / "q", dim=DIM).close()
    monkeypatch.undo()
    with pytest.raises(StoreError, match="schema version 1; this raglab reads 5: rebuild"):
        qdrant_store.QdrantStore.open(tmp_path / "q")


# ---------------------------------------------------------------------------- on the samples


@pytest.fixture(scope="module")
def both_indexes(tmp_path_factory):
    folder = tmp_path_factory.mktemp("indexes")
    sqlite = Index.from_folder(sample_corpus(), path=folder / "index.sqlite")
    Index.from_folder(sample_corpus(), path=folder / "qdrant", backend="qdrant").store.close()
    qdrant = Index.open(folder / "qdrant", backend="qdrant", qdrant_keyword="server")
    yield sqlite, qdrant
    qdrant.store.close()


QUESTIONS = load_questions(sample_questions())


def test_server_mode_hybrid_answers_the_sample_questions_exactly_as_sqlite(both_indexes):
    sqlite, qdrant = both_indexes
    for q in QUESTIONS:
        principal = Principal("u", q.tenant, q.groups)
        expected = ask(q.question, sqlite, principal, method="hybrid")
        assert ask(q.question, qdrant, principal, method="hybrid") == expected, q.id
        bm25 = [h.chunk.id for h in sqlite.search(q.question, principal, method="bm25")]
        assert [h.chunk.id for h in qdrant.search(q.question, principal, method="bm25")] == bm25


def test_hybrid_fused_in_qdrant_is_rrf_of_the_two_rankings(both_indexes):
    """The same chunks as raglab's RRF; a fused score may differ by one rank's worth, where
    Qdrant orders equal scores inside a prefetch its own way (one sample question)."""
    _, qdrant = both_indexes
    retriever = qdrant.retriever("bm25")
    for q in QUESTIONS:
        principal = Principal("u", q.tenant, q.groups)
        query = qdrant.embedder.embed([q.question])[0]
        got = qdrant.store.hybrid_search(query, q.question, principal, 5)
        dense = retriever.dense(q.question, principal, 20)
        expected = reciprocal_rank_fusion([dense, retriever.keyword(q.question, principal, 20)], 5)
        assert [h.chunk.id for h in got] == [h.chunk.id for h in expected], q.id
        one_rank = 1 / (61 * 62)  # 1 / (60 + 1) - 1 / (60 + 2): the largest one-place move
        assert [h.score for h in got] == pytest.approx([h.score for h in expected], abs=one_rank)
        assert all(h.chunk.tenant == q.tenant for h in got)


def test_hybrid_fused_in_qdrant_filters_inside_every_prefetch(tmp_path):
    store = store_with(tmp_path, "q", MINE + THEIRS)
    store._client = recorder = Recorder(store._client)
    hits = store.hybrid_search(test_stores.unit(1, 0, 0, 0), QUESTION, ANN, 3)
    assert {h.chunk.doc_id for h in hits} <= {"a.md", "b.md", "c.md", "d.md"}
    assert len(hits) == 3
    (call,) = [kw for name, _, kw in recorder.calls if name == "query_points"]
    filters = [call["query_filter"], *(p.filter for p in call["prefetch"])]
    assert len(filters) == 3
    assert all(f is not None and f.must[0].match.value == "acme" for f in filters)
    store.close()


def test_cli_qdrant_keyword_flag(tmp_path, capsys):
    where = ["--store", "qdrant", "--index", str(tmp_path / "q")]
    assert main(["index", str(sample_corpus() / "globex"), *where]) == 0
    capsys.readouterr()
    answers = {}
    for mode in ("exact", "server"):
        question = ["ask", "What does error E-204 mean?", "--tenant", "globex", "--json"]
        assert main([*question, *where, "--qdrant-keyword", mode]) == 0
        answers[mode] = json.loads(capsys.readouterr().out)
    assert answers["server"] == answers["exact"]
    assert main(["ask", "q", "--docs", ".", "--qdrant-keyword", "server"]) == 1
    assert "--qdrant-keyword applies to a Qdrant --index" in capsys.readouterr().err


# ---------------------------------------------------------------------------- no oracle

HR_ONLY = [  # a tenant whose every chunk is restricted to a group
    chunk("h1.md", "refund policy for a laptop bought online", groups=("hr",)),
    chunk("h2.md", "refund requests go to finance with the receipt", groups=("hr",)),
]
GLOBEX = [
    chunk("g1.md", "refund laptop returns", tenant="globex"),
    chunk("g2.md", "holiday calendar for the year", tenant="globex"),
]
BOARD = chunk("board.md", "zyxwv refund " + "quarterly " * 60, groups=("board",))
RARE = "refund laptop zyxwv"  # zyxwv: a word only the board document holds


def what_each_asker_sees(store) -> dict:
    query = test_stores.unit(1, 0, 0, 0)
    askers = [Principal("hana", "acme", {"hr"}), ANN, Principal("gil", "globex")]
    return {
        asker.user: (
            store.keyword_search(RARE, asker, 10),
            store.hybrid_search(query, RARE, asker, 10),
        )
        for asker in askers
    }


@pytest.fixture
def global_idf(monkeypatch):
    """Qdrant counting idf over the whole collection, as a server ignoring the corpus filter
    would: raglab must not depend on the server to keep idf within what the asker may read."""
    from qdrant_client.local.local_collection import LocalCollection

    monkeypatch.setattr(LocalCollection, "_idf_corpus_of", staticmethod(lambda params: None))


@pytest.mark.parametrize("idf", ["corpus filter", "whole collection"])
def test_a_document_the_asker_may_not_read_moves_no_server_keyword_score(tmp_path, request, idf):
    """Adding a [board] document with a word no one else uses changes nothing for a user
    outside [board], in the same tenant or another: not a score, not a rank (failed before:
    the avgdl of a tenant whose chunks all have groups counted the board's chunks, and idf
    was whatever Qdrant counted)."""
    if idf == "whole collection":
        request.getfixturevalue("global_idf")
    store = store_with(tmp_path, "q", HR_ONLY + GLOBEX)
    before = what_each_asker_sees(store)
    assert before["hana"][0] and before["gil"][0] and not before["ann"][0]
    store.add([BOARD], test_stores.unit(1, 0, 0, 0)[None])
    board = Principal("bo", "acme", {"board"})
    assert [h.chunk.doc_id for h in store.keyword_search(RARE, board, 1)] == ["board.md"]
    assert what_each_asker_sees(store) == before
    store.close()
