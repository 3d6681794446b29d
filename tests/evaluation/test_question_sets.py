"""The two shipped question sets agree with their corpora: every label can be checked.

data/questions.jsonl is asked of data/corpus; data/transfer/questions.jsonl of a second,
unrelated corpus (data/transfer/corpus), kept for judging what was fitted on the first.
"""

from __future__ import annotations

import pytest

from raglab.evaluation import load_questions
from raglab.evaluation.metrics import holds_key_fact
from raglab.ingest.credentials import find_secrets
from raglab.ingest.loaders import load_folder
from raglab.samples import (
    sample_corpus,
    sample_global_questions,
    sample_questions,
    transfer_corpus,
    transfer_questions,
)
from raglab.store.access import can_read

SETS = {
    "sample": (sample_corpus(), sample_questions()),
    "global": (sample_corpus(), sample_global_questions()),
    "transfer": (transfer_corpus(), transfer_questions()),
}


@pytest.fixture(scope="module", params=sorted(SETS))
def labelled(request):
    corpus, path = SETS[request.param]
    documents = {doc.id: doc for doc in load_folder(corpus).documents}
    return request.param, documents, load_questions(path, doc_ids=documents)


def test_relevant_documents_are_readable_by_the_asker_and_leak_documents_are_not(labelled):
    _, documents, questions = labelled
    for q in questions:
        assert all(can_read(q.asker, documents[d]) for d in q.relevant_docs), q.id
        assert not any(can_read(q.asker, documents[d]) for d in q.leak_docs), q.id


def test_every_key_fact_is_stated_in_a_relevant_document(labelled):
    _, documents, questions = labelled
    for q in questions:
        if q.must_contain:
            text = "\n".join(documents[d].text for d in q.relevant_docs)
            assert holds_key_fact(text, q.must_contain), q.id


def test_the_reference_answers_hold_their_key_facts(labelled):
    _, _, questions = labelled
    for q in questions:
        if q.must_contain:
            assert q.answer is not None and holds_key_fact(q.answer, q.must_contain), q.id


def test_the_transfer_set_is_as_data_readme_describes_it():
    result = load_folder(transfer_corpus())
    assert result.errors == () and len(result.documents) == 45
    assert sorted({doc.tenant for doc in result.documents}) == [
        "default",
        "kestrel",
        "northbrook",
        "willowmere",
    ]
    questions = load_questions(transfer_questions())
    answerable = [q for q in questions if q.answerable]
    assert (len(questions), len(answerable)) == (111, 68)
    assert all(q.must_contain for q in answerable)
    kinds = [q.kind for q in questions if not q.answerable]
    assert (kinds.count("near_miss"), kinds.count("leak_probe"), kinds.count("off_topic")) == (
        22,
        6,
        15,
    )


def test_the_transfer_corpus_holds_no_secret():
    for path in sorted(transfer_corpus().rglob("*.*")):
        assert find_secrets(path.read_text(encoding="utf-8")) == [], path
