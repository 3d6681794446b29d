"""raglab.longcontext.whole_corpus: the long prompt holds exactly what its reader may read, whole."""

from __future__ import annotations

import doctest
import itertools

import pytest

from raglab.generate.prompting import ABSTENTION
from raglab.ingest.loaders import load_folder
from raglab.longcontext import whole_corpus
from raglab.longcontext.whole_corpus import (
    OverBudget,
    ask_long_context,
    long_context_prompt,
    long_context_sources,
    readable_documents,
)
from raglab.records import Document, Principal
from raglab.store.access import can_read
from tests.conftest import CORPUS

WORDS = len  # a stand-in token counter for hand-worked budgets: one token per character


@pytest.fixture(scope="module")
def documents():
    return load_folder(CORPUS).documents


def test_doctests_pass():
    assert doctest.testmod(whole_corpus).failed == 0


def test_access_then_versions_decide_the_documents():
    docs = [
        Document("a/old.md", "Leave is 20 days.", tenant="a"),
        Document("a/new.md", "Leave is 25 days.", tenant="a", supersedes=("a/old.md",)),
        Document("a/hr.md", "Pay bands.", tenant="a", groups=("hr",)),
        Document("b/other.md", "Another tenant.", tenant="b"),
    ]
    staff = [d.id for d in readable_documents(docs, Principal("u", "a"))]
    hr = [d.id for d in readable_documents(docs, Principal("h", "a", {"hr"}))]
    assert staff == ["a/new.md"]  # the superseded version and hr's document left out
    assert hr == ["a/hr.md", "a/new.md"]
    assert readable_documents(docs, Principal("x", "c")) == ()


def test_a_version_superseded_only_by_an_unreadable_one_stays():
    docs = [
        Document("a/old.md", "Old.", tenant="a"),
        Document("a/new.md", "New.", tenant="a", groups=("hr",), supersedes=("a/old.md",)),
    ]
    assert [d.id for d in readable_documents(docs, Principal("u", "a"))] == ["a/old.md"]


PRINCIPALS = [
    Principal("p", tenant, groups)
    for tenant in ("acme", "globex", "default", "nobody")
    for groups in ((), ("hr",), ("managers", "finance"), ("partners", "support-staff"))
]


@pytest.mark.parametrize(
    "principal", PRINCIPALS, ids=lambda p: f"{p.tenant}-{'+'.join(sorted(p.groups))}"
)
def test_the_long_prompt_never_holds_a_document_its_reader_may_not_read(documents, principal):
    sources = long_context_sources(documents, principal)
    assert all(can_read(principal, hit.chunk) for hit in sources)
    # and nothing readable is missing but superseded versions
    readable = {d.id for d in documents if can_read(principal, d)}
    assert {hit.chunk.doc_id for hit in sources} <= readable
    assert len(sources) >= len(readable) - 1  # the sample corpus supersedes one document


def test_documents_go_in_whole_in_id_order(documents):
    sources = long_context_sources(documents, Principal("u", "acme"))
    texts = {d.id: d.text for d in documents}
    assert [h.chunk.doc_id for h in sources] == sorted(h.chunk.doc_id for h in sources)
    assert all(h.chunk.text == texts[h.chunk.doc_id] for h in sources)


def test_the_budget_is_counted_on_the_whole_prompt_and_refused_over_it():
    sources = long_context_sources([Document("a.md", "Staff get 25 days.")], Principal("u"))
    long = long_context_prompt("How many days?", sources, count_tokens=WORDS)
    assert long.tokens == len(long.prompt.system) + len(long.prompt.user)
    assert long_context_prompt(
        "How many days?", sources, max_tokens=long.tokens, count_tokens=WORDS
    )
    with pytest.raises(OverBudget, match=r"over the budget of max_tokens=\d+ by 1: retrieve"):
        long_context_prompt(
            "How many days?", sources, max_tokens=long.tokens - 1, count_tokens=WORDS
        )
    with pytest.raises(ValueError, match="max_tokens"):
        long_context_prompt("How many days?", sources, max_tokens=0)


def test_the_sample_corpus_fits_the_rule_of_thumb_for_every_tenant(documents):
    for tenant in ("acme", "globex", "default"):
        long = long_context_prompt("Q?", long_context_sources(documents, Principal("u", tenant)))
        assert 500 < long.tokens < whole_corpus.DEFAULT_MAX_TOKENS


def test_it_answers_with_the_same_answer_record_citations_verified(documents):
    answer = ask_long_context("How many vacation days do I get?", documents, Principal("u", "acme"))
    assert "25 working days" in answer.text
    assert answer.verified and not answer.invalid_citations
    assert [c.hit.chunk.doc_id for c in answer.citations] == ["acme/policies/leave.md"]
    assert len(answer.retrieved) == len(long_context_sources(documents, Principal("u", "acme")))


def test_a_reader_with_nothing_to_read_gets_an_abstention(documents):
    answer = ask_long_context("How many vacation days?", documents, Principal("u", "nobody"))
    assert answer.abstained and answer.text == ABSTENTION and answer.retrieved == ()


def test_a_forbidden_fact_is_not_answered_from_the_filtered_prompt(documents):
    # the salary band (hr only) is in the corpus; a reader outside hr cannot be given it
    question = "What is the salary band for a senior engineer?"
    outsider = ask_long_context(question, documents, Principal("u", "acme", {"managers"}))
    insider = ask_long_context(question, documents, Principal("h", "acme", {"hr"}))
    assert "€66,000" in insider.text
    assert "€66,000" not in outsider.text
    assert all(h.chunk.doc_id != "acme/hr/salary-bands.md" for h in outsider.retrieved)


def test_every_pair_of_tenants_is_kept_apart(documents):
    tenants = sorted({d.tenant for d in documents})
    for reader, other in itertools.permutations(tenants, 2):
        ids = {h.chunk.doc_id for h in long_context_sources(documents, Principal("u", reader))}
        assert not ids & {d.id for d in documents if d.tenant == other}
