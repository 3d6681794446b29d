"""The multi-hop question set: hops checked as they are read, each readable by its asker."""

from __future__ import annotations

import json

import pytest

from raglab.evaluation import load_questions
from raglab.evaluation.questions import QuestionSetError
from raglab.ingest.loaders import load_folder
from raglab.store.access import can_read
from tests.conftest import CORPUS, ROOT

MULTIHOP = ROOT / "data" / "questions_multihop.jsonl"


def test_the_set_loads_with_twenty_answerable_multi_hop_questions():
    documents = {doc.id: doc for doc in load_folder(CORPUS).documents}
    questions = load_questions(MULTIHOP, doc_ids=documents)
    answerable = [q for q in questions if q.answerable]
    assert len(answerable) >= 20 and all(q.kind == "multi-hop" for q in questions)
    for q in answerable:
        assert len(q.hops) >= 2 and q.must_contain
        # every hop's documents are the asker's to read, the leak docs never
        assert all(can_read(q.asker, documents[d]) for hop in q.hops for d in hop), q.id
    for q in questions:
        assert not any(can_read(q.asker, documents[d]) for d in q.leak_docs), q.id


def line(**fields) -> str:
    base = {"id": "m1", "question": "Q?", "answerable": True, "relevant_docs": ["a.md", "b.md"]}
    return json.dumps({**base, **fields})


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"hops": ["a.md"]}, "has one hop"),
        ({"hops": ["a.md", "c.md"]}, "hop document 'c.md' is not in its relevant_docs"),
        ({"hops": ["a.md", []]}, "field 'hops' must be a list of document ids or lists of ids"),
        ({"hops": "a.md"}, "field 'hops' must be"),
        (
            {"answerable": False, "relevant_docs": [], "hops": ["a.md", "b.md"]},
            "unanswerable but has hops",
        ),
    ],
)
def test_bad_hops_are_refused_with_the_file_and_line(tmp_path, fields, reason):
    path = tmp_path / "q.jsonl"
    path.write_text(line(id="m0") + "\n" + line(**fields) + "\n", encoding="utf-8")
    with pytest.raises(QuestionSetError, match=f"q.jsonl, line 2: .*{reason}"):
        load_questions(path)


def test_a_hop_may_be_one_id_or_several_that_would_serve(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text(line(relevant_docs=["a.md", "b.md", "c.md"], hops=[["a.md", "c.md"], "b.md"]))
    (question,) = load_questions(path)
    assert question.hops == (("a.md", "c.md"), ("b.md",))
