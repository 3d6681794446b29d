"""The improvement table: each question's scores kept, steps compared question by question."""

from __future__ import annotations

import pytest

from raglab import ABSTENTION, Answer, Chunk, Citation, Hit, Question
from raglab.evaluation.improvement import METRICS, by_kind, format_steps, measure, step

DOCS = {d: Chunk(d, 0, f"{d} says 25 days.", 0, 16) for d in ("a.md", "b.md", "c.md")}
QUESTIONS = [
    Question("q1", "one?", relevant_docs=["a.md"], answerable=True, kind="exact"),
    Question("q2", "two?", relevant_docs=["b.md"], answerable=True, kind="paraphrase"),
    Question("q3", "none?", answerable=False, kind="unanswerable"),
]


def searcher(order: dict[str, list[str]]):
    def search(q: Question, depth: int) -> list[Hit]:
        return [Hit(DOCS[d], 1.0) for d in order[q.id]][:depth]

    return search


def answerer(q: Question, hits) -> Answer:
    if not q.answerable:
        return Answer(ABSTENTION, abstained=True, retrieved=tuple(hits))
    text = f"{hits[0].chunk.doc_id} says 25 days [1]."
    return Answer(text, citations=(Citation(1, hits[0]),), retrieved=tuple(hits))


GOOD = {"q1": ["a.md", "b.md"], "q2": ["b.md", "a.md"], "q3": ["c.md"]}
WORSE = {"q1": ["b.md", "a.md"], "q2": ["b.md", "a.md"], "q3": ["c.md"]}


def test_measure_keeps_each_questions_scores_apart_by_metric():
    m = measure("good", QUESTIONS, search=searcher(GOOD), answer=answerer)
    assert m.values("recall@5") == [1.0, 1.0]  # answerable questions only
    assert m.values("mrr@5") == [1.0, 1.0]
    assert m.values("answered_with_citation") == [1.0, 1.0]
    assert m.values("abstention") == [1.0]  # unanswerable questions only
    assert m.values("faithfulness") == [1.0, 1.0, 1.0]  # an abstention claims nothing
    assert m.latency_ms >= 0.0
    with pytest.raises(ValueError, match="unknown metric 'recall'; choose from"):
        m.values("recall")


def test_retrieval_only_leaves_the_answer_metrics_empty():
    m = measure("search", QUESTIONS, search=searcher(GOOD))
    assert m.values("ndcg@10") == [1.0, 1.0]
    assert all(m.values(metric) == [] for metric in METRICS[3:])


def test_a_step_holds_paired_differences_and_the_table_marks_none_for_noise():
    good = measure("good", QUESTIONS, search=searcher(GOOD), answer=answerer)
    worse = measure("worse", QUESTIONS, search=searcher(WORSE), answer=answerer)
    first, second = step(good), step(worse, good)
    assert first.deltas == dict.fromkeys(METRICS) and first.before is None
    assert second.before == "good"
    assert second.deltas["mrr@5"].mean == pytest.approx(-0.25)  # q1: 1 -> 1/2
    assert second.deltas["answered_with_citation"].mean == pytest.approx(-0.5)  # q1 cites b.md
    table = format_steps([first, second]).splitlines()
    assert table[0].split() == [
        "step",
        "recall@5",
        "MRR@5",
        "nDCG@10",
        "cited",
        "abstain",
        "faithful",
        "latency",
    ]
    assert table[1].split()[:3] == ["good", "1.000", "1.000"]
    assert table[2].split()[:5] == ["worse", "1.000", "+0.000", "0.750", "-0.250"]
    assert table[2].endswith(" ms")


def test_steps_compare_only_the_same_questions():
    a = measure("a", QUESTIONS, search=searcher(GOOD))
    b = measure("b", QUESTIONS[:2], search=searcher(GOOD))
    with pytest.raises(ValueError, match="measured on different questions"):
        step(b, a)


def test_by_kind_gives_an_interval_per_kind_the_metric_applies_to():
    m = measure("good", QUESTIONS, search=searcher(GOOD), answer=answerer)
    assert sorted(by_kind(m, "recall@5")) == ["exact", "paraphrase"]
    assert list(by_kind(m, "abstention")) == ["unanswerable"]
    assert by_kind(m, "abstention")["unanswerable"].mean == 1.0
