"""Query transformation (raglab.retrieve.query_expansion): feedback terms, rewrites, fusion."""

from __future__ import annotations

import pytest

from raglab.generate.llm_rewrite import LLMRewriter
from raglab.generate.prompting import Prompt
from raglab.pipeline import Index
from raglab.records import Chunk, Document, Principal
from raglab.retrieve.query_expansion import (
    QueryExpansion,
    content_words,
    expanded,
    feedback_terms,
)
from raglab.store.memory import MemoryStore


def chunk(doc_id: str, text: str) -> Chunk:
    return Chunk(doc_id, 0, text, 0, len(text))


def test_feedback_terms_are_weighty_words_of_the_feedback_not_the_question():
    collection = [
        chunk("a", "Expense claims are reimbursed by bank transfer within ten days."),
        chunk("b", "Bank holidays: the office is closed."),
        chunk("c", "Claims need a receipt."),
    ]
    terms = feedback_terms("expense claims", collection[:1], collection, n_terms=10)
    assert "expense" not in terms and "claims" not in terms  # asked already
    assert ("by" not in terms and "ten" not in terms) or "ten" in terms  # stopwords out
    assert "by" not in terms
    # "reimbursed" occurs in one chunk of three, "bank" in two: rarer words weigh more.
    assert terms.index("reimbursed") < terms.index("bank")
    assert feedback_terms("x", [], collection) == []
    assert feedback_terms("x", collection[:1], collection, n_terms=0) == []


def test_later_feedback_chunks_count_less():
    first, second = chunk("a", "alpha alpha"), chunk("b", "omega omega")
    assert feedback_terms("q", [first, second], [first, second]) == ["alpha", "omega"]
    assert feedback_terms("q", [second, first], [first, second]) == ["omega", "alpha"]


def test_content_words_and_expanded():
    assert content_words("What is the limit, the LIMIT?") == ["limit"]
    assert expanded("hotel limit", ["night", "euros"]) == "hotel limit night euros"
    assert expanded("hotel limit", []) == "hotel limit"


def test_settings_are_validated():
    with pytest.raises(
        ValueError, match=r"unknown expansion mode 'rm3'; choose from: expand, multi"
    ):
        QueryExpansion("rm3")
    with pytest.raises(ValueError, match=r"feedback must be an integer >= 1 \(got feedback=0\)"):
        QueryExpansion(feedback=0)


def two_tenant_index() -> Index:
    docs = [
        Document("a/refunds.md", "Expense claims are reimbursed by bank transfer.", tenant="acme"),
        Document("a/canteen.md", "The canteen serves lunch from noon.", tenant="acme"),
        Document(
            "g/refunds.md",
            "Refunds for a returned thermostat arrive by zorblax voucher.",
            tenant="globex",
        ),
    ]
    from raglab.embed.embedders import embedder
    from raglab.ingest.chunking import Chunker
    from raglab.store.indexing import sync

    store = MemoryStore()
    sync(store, docs, chunker=Chunker(), embedder=embedder("hashing"))
    return Index(store, embedder("hashing"))


def test_rewrites_draw_only_on_what_the_asker_may_read():
    index = two_tenant_index()
    acme = Principal("ana", "acme")
    retriever = index.retriever("hybrid", expansion=QueryExpansion())
    queries = retriever.expand("refunds", acme, retriever.plan(5))
    assert queries[0] == "refunds"
    assert not any("zorblax" in q or "thermostat" in q for q in queries)
    globex = Principal("gus", "globex")
    theirs = retriever.expand("refunds", globex, retriever.plan(5))
    assert any("zorblax" in q for q in theirs)


@pytest.mark.parametrize("mode", ["expand", "multi"])
def test_expanded_search_returns_only_readable_chunks(mode):
    index = two_tenant_index()
    hits = index.search(
        "refunds voucher", Principal("ana", "acme"), k=5, expansion=QueryExpansion(mode)
    )
    assert hits and {h.chunk.tenant for h in hits} == {"acme"}


class FakeModel:
    """A generator that answers from a script and records what it was sent."""

    def __init__(self, replies: list[str]) -> None:
        self.replies, self.prompts = list(replies), []

    def generate(self, prompt: Prompt) -> str:
        self.prompts.append(prompt)
        return self.replies.pop(0)


def test_multi_query_with_a_rewriter_fuses_its_rewrites():
    index = two_tenant_index()
    model = FakeModel(["canteen lunch"])
    expansion = QueryExpansion(rewriter=LLMRewriter(model, n=1))
    retriever = index.retriever("bm25", expansion=expansion)
    queries = retriever.expand("when is food served", Principal("a", "acme"), retriever.plan(1))
    assert queries[-1] == "canteen lunch"
    hits = index.search(
        "when is food served",
        Principal("a", "acme"),
        k=1,
        method="bm25",
        expansion=QueryExpansion(rewriter=LLMRewriter(FakeModel(["canteen lunch"]), n=1)),
    )
    assert [h.chunk.doc_id for h in hits] == ["a/canteen.md"]
