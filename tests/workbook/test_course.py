"""The six tests of the course this workbook follows, against the real engine."""

import numpy as np
import pytest

from raglab import Chunker, Document, MemoryStore, Principal, ask, chunk
from raglab.store.errors import DimensionMismatch


def test_empty_documents_produce_no_chunks():
    assert chunk("") == []
    assert Chunker().split(Document("empty.md", "")) == []
    assert Chunker(kind="chars").split(Document("blank.md", "  \n\n  ")) == []


def test_overlap_must_be_smaller_than_chunk_size():
    with pytest.raises(ValueError, match="overlap"):
        chunk("some text", size=100, overlap=100)
    with pytest.raises(ValueError, match="overlap"):
        Chunker(size=100, overlap=150)


def test_wrong_embedding_dimensions_are_rejected(corpus_index):
    wrong = np.ones(corpus_index.embedder.dim + 1, dtype=np.float32)
    with pytest.raises(DimensionMismatch, match=str(corpus_index.embedder.dim)):
        corpus_index.store.search(wrong, Principal("u", "acme"), 3)
    # Vectors of the wrong width never get into a store either.
    store = MemoryStore(dim=4)
    doc = Document("a.md", "alpha")
    with pytest.raises(DimensionMismatch, match="4"):
        store.add(Chunker().split(doc), np.ones((1, 3), dtype=np.float32), documents=[doc])


def test_a_user_cannot_retrieve_another_tenants_document(corpus_index):
    # The question names globex's product; an acme user must still see only acme pages.
    question = "What does error E-204 mean on the GX-T100 thermostat?"
    for method in ("dense", "bm25", "hybrid"):
        hits = corpus_index.search(question, Principal("mallory", "acme"), k=20, method=method)
        assert hits, method
        assert {hit.chunk.tenant for hit in hits} == {"acme"}, method
    answer = ask(question, corpus_index, Principal("mallory", "acme"))
    assert all(hit.chunk.tenant == "acme" for hit in answer.retrieved)
    assert "globex" not in answer.text.lower()


def test_an_unanswerable_question_may_get_no_answer(corpus_index):
    answer = ask(
        "What is the airspeed velocity of an unladen swallow?", corpus_index, Principal("u", "acme")
    )
    assert answer.abstained
    assert answer.citations == ()


def test_every_returned_citation_refers_to_an_actual_retrieved_source(corpus_index):
    questions = [
        ("How many vacation days do I get per year?", "acme"),
        ("What does error E-204 mean?", "globex"),
        ("What is the meal allowance when travelling?", "acme"),
    ]
    answered = 0
    for question, tenant in questions:
        answer = ask(question, corpus_index, Principal("u", tenant))
        retrieved_ids = {hit.chunk.id for hit in answer.retrieved}
        assert answer.verified
        for citation in answer.citations:
            assert answer.retrieved[citation.n - 1] == citation.hit
            assert citation.hit.chunk.id in retrieved_ids
        answered += not answer.abstained
    assert answered >= 2
