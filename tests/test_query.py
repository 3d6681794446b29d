"""The query path (raglab.query): dense, BM25 and hybrid rankings, always filtered by access first."""

import pytest

from raglab import (
    Chunker,
    Document,
    HashingEmbedder,
    Index,
    LSAEmbedder,
    MemoryStore,
    Principal,
    Retriever,
    load_questions,
    sample_corpus,
    sample_questions,
    sync,
)
from raglab.records import Partition
from raglab.retrieve.fusion import Fusion

DOCS = [
    Document(
        "acme/refunds.md", "Refunds are paid within 14 days to the original card.", tenant="acme"
    ),
    Document("acme/leave.md", "Employees get 25 vacation days a year.", tenant="acme"),
    Document(
        "acme/salaries.md",
        "Salary band for senior engineers: 80k to 95k.",
        tenant="acme",
        groups=("hr",),
    ),
    Document(
        "globex/refunds.md",
        "Globex refunds thermostats within 30 days of purchase.",
        tenant="globex",
    ),
]


@pytest.fixture(scope="module")
def store():
    store = MemoryStore()
    sync(store, DOCS, chunker=Chunker(), embedder=HashingEmbedder())
    return store


@pytest.mark.parametrize("method", ["dense", "bm25", "hybrid"])
def test_each_method_finds_the_matching_document(store, method):
    retriever = Retriever(store, HashingEmbedder(), method)
    hits = retriever.search("how many vacation days", Principal("u", "acme"), k=2)
    assert hits[0].chunk.doc_id == "acme/leave.md"
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


@pytest.mark.parametrize("method", ["dense", "bm25", "hybrid"])
def test_access_is_applied_before_ranking(store, method):
    retriever = Retriever(store, HashingEmbedder(), method)
    # The exact text of another tenant's page, asked by an acme user without groups.
    acme_hits = retriever.search(
        "Globex refunds thermostats within 30 days", Principal("u", "acme"), k=10
    )
    assert {h.chunk.doc_id for h in acme_hits} <= {"acme/refunds.md", "acme/leave.md"}
    hr_only = retriever.search("salary band senior engineers", Principal("u", "acme"), k=10)
    assert "acme/salaries.md" not in {h.chunk.doc_id for h in hr_only}
    with_group = retriever.search(
        "salary band senior engineers", Principal("u", "acme", {"hr"}), k=1
    )
    assert with_group[0].chunk.doc_id == "acme/salaries.md"


def test_bm25_statistics_ignore_chunks_the_principal_cannot_read(store):
    # idf comes from the readable chunks only: adding another tenant's pages that repeat
    # a word must not change an acme user's BM25 scores.
    retriever = Retriever(store, HashingEmbedder(), "bm25")
    before = retriever.search("refunds days", Principal("u", "acme"), k=5)
    bigger = MemoryStore()
    extra = [Document(f"globex/r{i}.md", "refunds refunds days", tenant="globex") for i in range(5)]
    sync(bigger, DOCS + extra, chunker=Chunker(), embedder=HashingEmbedder())
    after = Retriever(bigger, HashingEmbedder(), "bm25").search(
        "refunds days", Principal("u", "acme"), k=5
    )
    assert [(h.chunk.id, h.score) for h in before] == [(h.chunk.id, h.score) for h in after]


def test_bm25_model_follows_a_rewrite_under_the_same_chunk_ids():
    store = MemoryStore()
    sync(store, DOCS, chunker=Chunker(), embedder=HashingEmbedder())
    retriever, asker = Retriever(store, HashingEmbedder(), "bm25"), Principal("u", "acme")
    assert [h.chunk.doc_id for h in retriever.search("vacation", asker, k=5)] == ["acme/leave.md"]
    rewritten = Document("acme/leave.md", "Employees get 25 holiday days a year.", tenant="acme")
    sync(store, [*DOCS[:1], rewritten, *DOCS[2:]], chunker=Chunker(), embedder=HashingEmbedder())
    assert retriever.search("vacation", asker, k=5) == []
    (hit,) = retriever.search("holiday", asker, k=5)
    assert (hit.chunk.id, hit.chunk.text) == ("acme/leave.md#0", rewritten.text)


def test_lsa_questions_are_embedded_by_the_fit_of_each_readable_partition():
    store = MemoryStore()
    sync(store, DOCS, chunker=Chunker(), embedder=LSAEmbedder(dim=8))
    retriever = Retriever(store, LSAEmbedder(dim=8), "dense")
    acme = [c.text for c in store.chunks() if c.tenant == "acme"]  # in store order
    public = [c.text for c in store.chunks() if c.tenant == "acme" and not c.groups]
    public_fit = LSAEmbedder(dim=8).fit(public)
    assert retriever.embedders_for(Principal("u", "acme")) == {Partition("acme"): public_fit}
    assert retriever.embedders_for(Principal("u", "acme", {"hr"})) == {
        Partition("acme"): public_fit,  # a public chunk is scored with the public fit, by all
        Partition("acme", ("hr",)): LSAEmbedder(dim=8).fit(acme),
    }
    assert retriever.embedder_for("acme") == public_fit  # the answerer's: every user's
    assert retriever.embedders_for(Principal("u", "initech")) == {}  # nothing to fit
    assert retriever.embedder_for("initech") is None
    assert retriever.search("vacation days", Principal("u", "initech"), k=5) == []
    top = retriever.search("vacation days", Principal("u", "acme"), k=1)
    assert top[0].chunk.doc_id == "acme/leave.md"
    top = retriever.search("salary band senior engineers", Principal("u", "acme", {"hr"}), k=1)
    assert top[0].chunk.doc_id == "acme/salaries.md"


def test_min_score_drops_weak_hits(store):
    retriever = Retriever(store, HashingEmbedder(), "dense", min_score=0.99)
    assert retriever.search("vacation days", Principal("u", "acme"), k=5) == []


def test_bm25_returns_nothing_when_no_word_matches(store):
    retriever = Retriever(store, HashingEmbedder(), "bm25")
    assert retriever.search("xylophone", Principal("u", "acme"), k=5) == []


def test_unknown_method_and_bad_k_are_refused(store):
    with pytest.raises(
        ValueError, match="unknown retrieval method 'sparse'; choose from: dense, bm25, hybrid"
    ):
        Retriever(store, HashingEmbedder(), "sparse")
    with pytest.raises(ValueError, match=r"k must be an integer >= 1 \(got k=0\)"):
        Retriever(store, HashingEmbedder()).search("q", Principal("u"), k=0)


@pytest.fixture(scope="module")
def sample_index():
    return Index.from_folder(sample_corpus(), embedder="hashing")


def test_the_retriever_fuses_with_the_fusion_it_is_given(sample_index):
    index, questions = sample_index, load_questions(sample_questions())[:10]
    ann = Principal("ann", "acme")
    plain = Retriever(index.store, index.embedder, "hybrid")
    same = Retriever(index.store, index.embedder, "hybrid", fusion=Fusion())
    keyword_only = Retriever(index.store, index.embedder, "hybrid", fusion=Fusion("rrf", 0.0))
    for q in questions[:10]:
        assert same.search(q.question, ann, 5) == plain.search(q.question, ann, 5)
        bm25 = [h.chunk.id for h in plain.keyword(q.question, ann, 5)]
        assert [h.chunk.id for h in keyword_only.search(q.question, ann, 5)][: len(bm25)] == bm25


def test_a_negative_min_score_is_refused_for_bm25(store):
    """A BM25 score is never below 0, and 0 means no word of the question occurs."""
    with pytest.raises(
        ValueError, match=r"min_score must be a finite number >= 0 \(got min_score=-1"
    ):
        Retriever(store, HashingEmbedder(), "bm25", min_score=-1)
    assert Retriever(store, HashingEmbedder(), "dense", min_score=-0.5).min_score == -0.5
