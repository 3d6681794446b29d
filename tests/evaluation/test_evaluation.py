"""Tests for raglab.evaluation: hand-worked metrics, edges, the question-set loader, the runner,
and a cross-check against ranx (`pytest -m reference`)."""

from __future__ import annotations

import dataclasses
import doctest
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import raglab.evaluation.runner as evaluation
from raglab.evaluation import (
    EvalReport,
    Question,
    QuestionSetError,
    evaluate,
    format_table,
    hit_rate_at_k,
    load_questions,
    mrr,
    ndcg_at_k,
    rank_documents,
    recall_at_k,
)
from raglab.evaluation.metrics import holds_key_fact
from raglab.records import Answer, Chunk, Citation, Hit

LOG2_3 = math.log2(3)  # the discount denominator at rank 2
LOG2_4 = 2.0  # ... at rank 3


def test_doctests_pass():
    assert doctest.testmod(evaluation).failed == 0


# --- hand-worked examples ----------------------------------------------------------------------


def test_worked_example_from_the_brief():
    ranked, relevant = ["a", "b", "c"], {"b", "d"}
    # recall@2: top 2 = {a, b}; 1 of the 2 relevant documents -> 1/2.
    assert recall_at_k(ranked, relevant, 2) == 0.5
    # rr: first relevant (b) at rank 2 -> 1/2.
    assert mrr(ranked, relevant) == 0.5
    # ndcg@3: DCG = b at rank 2 -> 1/log2(3) = 0.6309;
    # ideal: min(3, |{b, d}|) = 2 hits at ranks 1, 2 -> 1/log2(2) + 1/log2(3) = 1.6309;
    # nDCG = 0.6309 / 1.6309 = 0.3869.
    assert ndcg_at_k(ranked, relevant, 3) == pytest.approx((1 / LOG2_3) / (1 + 1 / LOG2_3))
    assert ndcg_at_k(ranked, relevant, 3) == pytest.approx(0.386853, abs=1e-6)
    assert hit_rate_at_k(ranked, relevant, 2) == 1.0
    assert hit_rate_at_k(ranked, relevant, 1) == 0.0


def test_perfect_ranking_scores_one():
    ranked = ["x", "y", "z", "w"]
    assert recall_at_k(ranked, {"x", "y"}, 2) == 1.0
    assert mrr(ranked, {"x", "y"}) == 1.0
    assert ndcg_at_k(ranked, {"x", "y"}, 4) == 1.0
    assert hit_rate_at_k(ranked, {"x", "y"}, 1) == 1.0


def test_ndcg_two_hits_at_ranks_1_and_3():
    # relevant {a, c, e}, k = 3: DCG = 1 + 1/log2(4) = 1.5; ideal = 1 + 1/log2(3) + 1/log2(4).
    expected = (1 + 1 / LOG2_4) / (1 + 1 / LOG2_3 + 1 / LOG2_4)
    assert ndcg_at_k(["a", "b", "c", "d"], {"a", "c", "e"}, 3) == pytest.approx(expected)


def test_k_equal_one():
    assert recall_at_k(["a", "b"], {"a", "b"}, 1) == 0.5
    assert ndcg_at_k(["a", "b"], {"a", "b"}, 1) == 1.0  # ideal DCG@1 = one hit at rank 1
    assert ndcg_at_k(["b", "a"], {"a"}, 1) == 0.0
    assert hit_rate_at_k(["b", "a"], {"a"}, 1) == 0.0


def test_relevant_beyond_k_counts_for_mrr_only_without_a_cut_off():
    ranked = ["a", "b", "c", "d", "e"]
    assert recall_at_k(ranked, {"e"}, 3) == 0.0
    assert hit_rate_at_k(ranked, {"e"}, 3) == 0.0
    assert ndcg_at_k(ranked, {"e"}, 3) == 0.0
    assert mrr(ranked, {"e"}, 3) == 0.0
    assert mrr(ranked, {"e"}, 5) == pytest.approx(1 / 5)  # the cut-off includes rank k
    assert mrr(ranked, {"e"}) == pytest.approx(1 / 5)  # k=None: the whole list counts


def test_mrr_cut_off_counts_distinct_documents():
    # [a, a, a, b]: the repeats of a are dropped first, so b is at rank 2, inside k = 2.
    assert mrr(["a", "a", "a", "b"], {"b"}, 2) == 0.5


def test_no_hit_scores_zero():
    for value in (
        recall_at_k(["a", "b"], {"z"}, 2),
        mrr(["a", "b"], {"z"}),
        ndcg_at_k(["a", "b"], {"z"}, 2),
        hit_rate_at_k(["a", "b"], {"z"}, 2),
    ):
        assert value == 0.0


def test_empty_ranking_scores_zero():
    assert recall_at_k([], {"a"}, 3) == 0.0
    assert mrr([], {"a"}) == 0.0
    assert ndcg_at_k([], {"a"}, 3) == 0.0
    assert hit_rate_at_k([], {"a"}, 3) == 0.0


def test_k_larger_than_the_ranking():
    # Ideal DCG uses min(k, |relevant|) = 1, so one hit at rank 1 is perfect even for k = 10.
    assert ndcg_at_k(["a"], {"a"}, 10) == 1.0
    assert recall_at_k(["a"], {"a", "b"}, 10) == 0.5


def test_duplicates_count_once_at_first_rank():
    # [a, a, b]: the repeat of a is dropped, so b moves up to rank 2.
    ranked = ["a", "a", "b"]
    assert recall_at_k(ranked, {"a", "b"}, 2) == 1.0
    assert recall_at_k(ranked, {"b"}, 2) == 1.0
    assert mrr(ranked, {"b"}) == 0.5
    assert ndcg_at_k(ranked, {"a"}, 3) == 1.0  # a repeated relevant id earns gain once
    assert ndcg_at_k(ranked, {"a", "b"}, 2) == 1.0
    # A relevant document listed twice is still one document found: recall can't exceed 1.
    assert recall_at_k(["b", "b"], {"b", "c"}, 2) == 0.5


def test_relevant_may_be_any_collection():
    assert recall_at_k(["a", "b"], ["b", "b"], 2) == 1.0  # repeats in relevant collapse
    assert recall_at_k(["a", "b"], frozenset({"b"}), 2) == 1.0


@pytest.mark.parametrize(
    "metric", [recall_at_k, ndcg_at_k, hit_rate_at_k, lambda r, rel, k: mrr(r, rel)]
)
def test_empty_relevant_is_refused(metric):
    with pytest.raises(ValueError, match="relevant must not be empty: recall is undefined"):
        metric(["a"], set(), 3)


@pytest.mark.parametrize("metric", [recall_at_k, ndcg_at_k, hit_rate_at_k, mrr])
@pytest.mark.parametrize(
    ("k", "error"), [(0, ValueError), (-1, ValueError), (1.5, TypeError), (True, TypeError)]
)
def test_bad_k_is_refused(metric, k, error):
    with pytest.raises(error, match=re.escape(f"k must be an integer >= 1 (got k={k!r})")):
        metric(["a"], {"a"}, k)


def test_relevant_as_a_bare_string_is_refused():
    with pytest.raises(TypeError, match="relevant must be a collection of ids, not a string"):
        recall_at_k(["abc"], "abc", 1)


# --- properties --------------------------------------------------------------------------------

ids = st.sampled_from("abcdefgh")
rankings = st.lists(ids, max_size=12)
relevant_sets = st.sets(ids, min_size=1)
ks = st.integers(min_value=1, max_value=12)


@given(rankings, relevant_sets, ks)
def test_metrics_lie_between_zero_and_one(ranked, relevant, k):
    for value in (
        recall_at_k(ranked, relevant, k),
        mrr(ranked, relevant),
        mrr(ranked, relevant, k),
        ndcg_at_k(ranked, relevant, k),
        hit_rate_at_k(ranked, relevant, k),
    ):
        assert 0.0 <= value <= 1.0 + 1e-12


@given(rankings, relevant_sets, ks)
def test_metrics_ignore_repeats(ranked, relevant, k):
    unique = list(dict.fromkeys(ranked))
    assert recall_at_k(ranked, relevant, k) == recall_at_k(unique, relevant, k)
    assert ndcg_at_k(ranked, relevant, k) == ndcg_at_k(unique, relevant, k)
    assert mrr(ranked, relevant) == mrr(unique, relevant)
    assert mrr(ranked, relevant, k) == mrr(unique, relevant, k)


@given(rankings, relevant_sets, ks)
def test_hit_rate_agrees_with_recall_and_rr(ranked, relevant, k):
    hit = hit_rate_at_k(ranked, relevant, k)
    assert hit == (1.0 if recall_at_k(ranked, relevant, k) > 0 else 0.0)
    assert hit == (1.0 if mrr(ranked, relevant) >= 1 / k else 0.0)
    assert hit == (1.0 if mrr(ranked, relevant, k) > 0 else 0.0)


@given(rankings, relevant_sets, ks)
def test_recall_never_falls_as_k_grows(ranked, relevant, k):
    assert recall_at_k(ranked, relevant, k) <= recall_at_k(ranked, relevant, k + 1)


@given(relevant_sets, rankings, ks)
def test_relevant_first_gives_ndcg_one(relevant, rest, k):
    ranked = sorted(relevant) + [doc for doc in rest if doc not in relevant]
    assert ndcg_at_k(ranked, relevant, k) == pytest.approx(1.0)


# --- holds_key_fact ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "must_contain", "held"),
    [
        ("Claims within **30 days** [1].", ["30 days"], True),
        ("E-4417 [2] Ribbon out:\n  REPLACE the   ribbon.", ["e-4417", "replace the ribbon"], True),
        ("E-4417 Ribbon out [1]", ["E-4417", "replace the ribbon"], False),  # the fix dropped
        ("Within 3 days.", ["30 days"], False),
        ("", ["30 days"], False),
    ],
)
def test_holds_key_fact_needs_every_string_whatever_the_case_markers_and_emphasis(
    text, must_contain, held
):
    assert holds_key_fact(text, must_contain) is held


def test_holds_key_fact_refuses_no_fact_and_a_bare_string():
    with pytest.raises(ValueError, match="must not be empty"):
        holds_key_fact("anything", [])
    with pytest.raises(TypeError, match="not a string"):
        holds_key_fact("30 days", "30 days")


# --- load_questions ----------------------------------------------------------------------------


def _write(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "questions.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _line(**fields) -> str:
    obj = {
        "id": "q1",
        "question": "How many leave days?",
        "answerable": True,
        "relevant_docs": ["hr/leave.md"],
    }
    obj.update(fields)
    return json.dumps({key: value for key, value in obj.items() if value is not ...})


def test_load_questions_reads_every_field_with_defaults(tmp_path):
    path = _write(
        tmp_path,
        _line(),
        "",
        "   ",
        _line(
            id="q2",
            tenant="acme",
            groups=["hr"],
            answerable=False,
            relevant_docs=[],
            answer=None,
            kind="forbidden",
            leak_docs=["acme/pay.md"],
        ),
    )
    q1, q2 = load_questions(path)
    assert q1 == Question(
        id="q1", question="How many leave days?", answerable=True, relevant_docs=("hr/leave.md",)
    )
    assert (q1.tenant, q1.groups, q1.answer, q1.kind) == ("default", (), None, None)
    assert q1.leak_docs == ()
    assert q2.tenant == "acme" and q2.groups == ("hr",) and q2.kind == "forbidden"
    assert q2.leak_docs == ("acme/pay.md",) and q2.answerable is False


def test_must_contain_is_read_as_a_tuple_and_defaults_to_empty(tmp_path):
    path = _write(tmp_path, _line(must_contain=["E-4417", "replace the ribbon"]), _line(id="q2"))
    q1, q2 = load_questions(path)
    assert q1.must_contain == ("E-4417", "replace the ribbon") and q2.must_contain == ()


def test_unanswerable_question_may_omit_relevant_docs(tmp_path):
    [q] = load_questions(_write(tmp_path, _line(answerable=False, relevant_docs=...)))
    assert q.relevant_docs == ()


def test_empty_file_gives_no_questions(tmp_path):
    assert load_questions(_write(tmp_path, "")) == []


def test_question_is_frozen_and_stores_tuples():
    q = Question("q1", "why?", answerable=False, groups=["a", "b"], leak_docs=["x"])
    assert q.groups == ("a", "b") and q.leak_docs == ("x",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        q.id = "q2"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("bad_line", "reason"),
    [
        ("{not json", r"line 2: bad JSON: .* \(column 2\)"),
        ("[1, 2]", "line 2: expected a JSON object, got list"),
        (_line(question=...), "line 2: missing field 'question'"),
        (_line(answerable=...), "line 2: missing field 'answerable'"),
        (_line(id=3), r"line 2: field 'id' must be a non-empty string \(got 3\)"),
        (_line(id=""), "line 2: field 'id' must be a non-empty string"),
        (_line(answerable="yes"), "line 2: field 'answerable' must be true or false"),
        (_line(answerable=1), "line 2: field 'answerable' must be true or false"),
        (_line(groups="hr"), r"line 2: field 'groups' must be a list of strings \(got 'hr'\)"),
        (_line(relevant_docs=[1]), "line 2: field 'relevant_docs' must be a list of strings"),
        (_line(leak_docs=None), "line 2: field 'leak_docs' must be a list of strings"),
        (_line(kind=5), "line 2: field 'kind' must be a string or null"),
        (_line(leak_doc=["x"]), "line 2: unknown field 'leak_doc'"),
        (_line(relevant_docs=[]), "line 2: question 'q1' is answerable but has no relevant_docs"),
        (_line(relevant_docs=...), "line 2: question 'q1' is answerable but has no relevant_docs"),
        (_line(must_contain="30 days"), "line 2: field 'must_contain' must be a list of non-blank"),
        (_line(must_contain=[30]), "line 2: field 'must_contain' must be a list of non-blank"),
        (_line(must_contain=["30 days", " "]), "line 2: field 'must_contain' must be a list of"),
        (_line(must_contain=None), "line 2: field 'must_contain' must be a list of non-blank"),
        (
            _line(answerable=False, relevant_docs=[], must_contain=["x"]),
            "line 2: question 'q1' is unanswerable but has must_contain",
        ),
    ],
)
def test_load_questions_errors_name_file_line_and_reason(tmp_path, bad_line, reason):
    path = _write(tmp_path, _line(id="q0"), bad_line)
    with pytest.raises(QuestionSetError, match=reason) as info:
        load_questions(path)
    assert str(info.value).startswith(f"{path}, line 2: ")
    assert info.value.line == 2 and info.value.path == str(path)


def test_duplicate_id_names_both_lines(tmp_path):
    path = _write(tmp_path, _line(), "", _line(question="Again?"))
    reason = r"line 3: duplicate id 'q1' \(first seen on line 1\)"
    with pytest.raises(QuestionSetError, match=reason):
        load_questions(path)


def test_bytes_that_are_not_utf8_name_the_file_and_line(tmp_path):
    path = tmp_path / "questions.jsonl"
    latin1 = json.dumps(json.loads(_line(question="Café?")), ensure_ascii=False).encode("latin-1")
    path.write_bytes(_line(id="q0").encode() + b"\n" + latin1)
    with pytest.raises(QuestionSetError, match=r"line 2: not valid UTF-8 \(byte 0xe9 at column"):
        load_questions(path)


def test_a_bom_and_a_line_separator_inside_a_string_are_read(tmp_path):
    path = tmp_path / "questions.jsonl"
    text = _line(question="Leave\u2028days?", relevant_docs=["a.md"])
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(json.loads(text), ensure_ascii=False).encode())
    [q] = load_questions(path)
    assert q.question == "Leave\u2028days?"


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        (
            {"relevant_docs": ["hr/leav.md"]},
            r"line 2: relevant_docs names 'hr/leav.md', which is not a document of the corpus "
            r"\(did you mean 'hr/leave.md'\?\)",
        ),
        (
            {"answerable": False, "relevant_docs": [], "leak_docs": ["zzz.txt"]},
            r"line 2: leak_docs names 'zzz.txt', which is not a document of the corpus$",
        ),
    ],
)
def test_a_doc_id_not_in_the_corpus_is_an_error_once_the_corpus_is_known(tmp_path, fields, reason):
    path = _write(tmp_path, _line(id="q0"), _line(**fields))
    assert len(load_questions(path)) == 2  # without the corpus, ids cannot be checked
    with pytest.raises(QuestionSetError, match=reason):
        load_questions(path, doc_ids={"hr/leave.md", "hr/pay.md"})


def test_raglab_eval_refuses_a_labelled_doc_missing_from_the_corpus(tmp_path):
    """Through the CLI runner, which knows both the corpus and the question file."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "leave.md").write_text("Staff get twenty leave days a year.\n")
    path = _write(
        tmp_path, _line(relevant_docs=["leave.md"]), _line(id="q2", relevant_docs=["Leave.md"])
    )
    result = subprocess.run(
        [sys.executable, "-m", "raglab", "eval", "--docs", str(corpus), "--questions", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip() == (
        f"raglab: error: {path}, line 2: relevant_docs names 'Leave.md', which is not a "
        "document of the corpus (did you mean 'leave.md'?)"
    )


def test_question_set_error_is_a_value_error(tmp_path):
    with pytest.raises(ValueError, match="questions.jsonl, line 1"):
        load_questions(_write(tmp_path, "oops"))


# --- the runner --------------------------------------------------------------------------------


def _hit(doc_id: str, index: int = 0, score: float = 1.0) -> Hit:
    return Hit(Chunk(doc_id=doc_id, index=index, text="...", start=0, end=3), score)


# Fake search results per question id: chunk doc ids in rank order.
SEARCH = {
    "q1": ["a", "a", "x", "b"],  # relevant {a, b}: a at 1 (twice), b at 3 after de-duplication
    "q2": ["x", "y", "c"],  # relevant {c}: at rank 3, beyond k = 2 (but within nDCG@10)
    "q3": ["secret", "z"],  # unanswerable; leaks "secret" through search
    "q4": ["z"],  # unanswerable; leaks "pay" only through the answer's citations
}


def _search(question: Question, depth: int) -> list[Hit]:
    return [_hit(doc, i) for i, doc in enumerate(SEARCH[question.id])][:depth]


def _answer(question: Question) -> Answer:
    if question.id == "q1":
        return Answer("Yes [1].", citations=(Citation(1, _hit("a")),), retrieved=(_hit("a"),))
    if question.id == "q2":  # answerable but abstained: a false abstention
        return Answer("I don't know.", abstained=True)
    if question.id == "q3":  # unanswerable and abstained: right
        return Answer("I don't know.", abstained=True)
    # q4: unanswerable, answered anyway, citing a forbidden document and a bad marker.
    return Answer(
        "Pay is 5 [1] [7].",
        citations=(Citation(1, _hit("pay")),),
        retrieved=(_hit("pay"),),
        invalid_citations=(7,),
    )


QUESTIONS = [
    Question("q1", "?", relevant_docs=("a", "b"), answerable=True, kind="lookup"),
    Question("q2", "?", relevant_docs=("c",), answerable=True, kind="multi"),
    Question("q3", "?", answerable=False, kind="forbidden", leak_docs=("secret", "nope")),
    Question("q4", "?", answerable=False, leak_docs=("pay",)),
]


@pytest.fixture(scope="module")
def report() -> EvalReport:
    return evaluate(
        QUESTIONS, search=_search, answer=_answer, k=2, retriever="bm25", embedder="hashing"
    )


def test_runner_per_question_records(report):
    r1, r2, r3, r4 = report.per_question
    assert r1.ranked_doc_ids == ("a", "x", "b")
    assert (r1.recall_at_k, r1.rr, r1.hit) == (0.5, 1.0, True)
    # ndcg@10: hits at 1 and 3 over ideal hits at 1 and 2.
    assert r1.ndcg_at_10 == pytest.approx((1 + 1 / LOG2_4) / (1 + 1 / LOG2_3))
    # c is at rank 3, beyond k = 2: no reciprocal rank either (MRR is cut at k).
    assert (r2.recall_at_k, r2.rr, r2.hit, r2.abstained) == (0.0, 0.0, False, True)
    assert (r3.recall_at_k, r3.rr, r3.ndcg_at_10, r3.hit) == (None, None, None, None)
    assert r3.leaked == ("secret",) and r4.leaked == ("pay",)
    assert r1.citations_verified and not r4.citations_verified


def test_runner_averages_only_answerable_questions(report):
    assert (report.questions, report.answerable, report.unanswerable, report.k) == (4, 2, 2, 2)
    assert report.recall_at_k == pytest.approx((0.5 + 0.0) / 2)
    assert report.mrr == pytest.approx((1 + 0) / 2)
    assert report.hit_rate_at_k == 0.5
    ndcg_q2 = (1 / LOG2_4) / 1.0  # c at rank 3, ideal one hit at rank 1
    assert report.ndcg_at_10 == pytest.approx(((1 + 1 / LOG2_4) / (1 + 1 / LOG2_3) + ndcg_q2) / 2)


def test_runner_counts_abstentions_leaks_and_citations(report):
    assert report.abstention_on_unanswerable == 0.5  # q3 abstained, q4 did not
    assert report.false_abstention == 0.5  # q2 abstained although answerable
    assert report.leaks == 2  # "secret" via search (q3), "pay" via the answer (q4)
    assert report.citations_verified == 0.5  # of the answered q1 and q4, only q1 verifies


def test_answered_with_relevant_citation_needs_an_answer_citing_a_relevant_document(report):
    r1, r2, *_ = report.per_question
    assert (r1.cited_relevant, r2.cited_relevant) == (True, False)  # q2 abstained
    assert report.answered_with_relevant_citation == 0.5  # of the answerable q1 and q2
    assert report.as_dict()["answered_with_relevant_citation"] == 0.5
    assert "answered_with_relevant_citation    0.500" in format_table(report)


def test_answered_with_key_fact_needs_a_relevant_citation_and_the_fact_in_the_text():
    def ask(q: Question) -> Answer:
        cited = "x" if q.id == "q4" else "a"
        return Answer(
            {"q1": "Ribbon out: replace the ribbon [1].", "q2": "Ribbon out [1]."}.get(
                q.id, "Replace the ribbon [1]."
            ),
            citations=(Citation(1, _hit(cited)),),
            retrieved=(_hit(cited),),
        )

    fact = ("ribbon out", "replace the ribbon")
    questions = [
        Question("q1", "?", relevant_docs=("a",), answerable=True, must_contain=fact),
        Question(
            "q2", "?", relevant_docs=("a",), answerable=True, must_contain=fact
        ),  # fix dropped
        Question("q3", "?", relevant_docs=("a",), answerable=True),  # no key fact: not counted
        Question("q4", "?", relevant_docs=("a",), answerable=True, must_contain=("replace",)),
    ]
    report = evaluate(questions, search=lambda q, d: [_hit("a")], answer=ask)
    assert [r.key_fact for r in report.per_question] == [True, False, None, False]  # q4: wrong doc
    assert report.answered_with_key_fact == pytest.approx(1 / 3)
    assert re.search(r"^answered_with_key_fact +0.333$", format_table(report), re.M)
    assert report.as_dict()["answered_with_key_fact"] == pytest.approx(1 / 3)


def test_without_key_facts_answered_with_key_fact_is_undefined(report):
    assert (
        report.answered_with_key_fact is None and report.as_dict()["answered_with_key_fact"] is None
    )


def test_an_answer_citing_only_other_documents_is_not_answered_with_a_relevant_citation():
    question = Question("q1", "?", relevant_docs=("a",), answerable=True)
    wrong = Answer("No [1].", citations=(Citation(1, _hit("x")),), retrieved=(_hit("x"),))
    report = evaluate([question], search=lambda q, d: [_hit("a")], answer=lambda q: wrong)
    assert report.false_abstention == 0.0  # it answered ...
    assert report.answered_with_relevant_citation == 0.0  # ... but from the wrong document


def test_report_as_dict_has_the_contract_keys(report):
    d = report.as_dict()
    for key in (
        "questions",
        "k",
        "recall@k",
        "mrr",
        "ndcg@10",
        "hit_rate@k",
        "abstention_on_unanswerable",
        "false_abstention",
        "leaks",
        "citations_verified",
        "retriever",
        "embedder",
        "answerable",
        "unanswerable",
    ):
        assert key in d
    assert (d["retriever"], d["embedder"], d["leaks"]) == ("bm25", "hashing", 2)
    assert d["recall@k_by_kind"] == {"lookup": 0.5, "multi": 0.0}  # unscored kinds left out
    json.dumps(d)  # JSON-ready


def test_undefined_averages_are_none():
    only_unanswerable = [Question("q3", "?", answerable=False)]
    report = evaluate(only_unanswerable, search=lambda q, d: [], answer=lambda q: Answer("no"))
    assert report.recall_at_k is None and report.mrr is None and report.false_abstention is None
    assert report.abstention_on_unanswerable == 0.0
    assert report.citations_verified == 0.0  # "no" cites nothing: an uncited answer is not verified
    assert "n/a" in format_table(report)


def test_answerable_question_without_relevant_docs_is_not_scored():
    q = Question("q", "?", answerable=True)  # possible when built by hand, not from a file
    report = evaluate([q], search=lambda q, d: [_hit("a")], answer=lambda q: Answer("a"))
    assert report.recall_at_k is None and report.answerable == 1
    assert report.false_abstention == 0.0


def test_runner_refuses_bad_k_and_no_questions():
    with pytest.raises(ValueError, match=r"k must be an integer >= 1 \(got k=0\)"):
        evaluate(QUESTIONS, search=_search, answer=_answer, k=0)
    with pytest.raises(ValueError, match="questions is empty"):
        evaluate([], search=_search, answer=_answer)


def test_search_starts_deep_enough_for_max_k_ten_documents():
    depths = []

    def search(question, depth):
        depths.append(depth)
        return []

    evaluate(QUESTIONS[:1], search=search, answer=lambda q: Answer("x"), k=25)
    assert depths == [25 * evaluation.CHUNKS_PER_DOCUMENT]
    depths.clear()
    evaluate(QUESTIONS[:1], search=search, answer=lambda q: Answer("x"), k=2)
    assert depths == [10 * evaluation.CHUNKS_PER_DOCUMENT]


def _chunk_ranking(*docs_and_chunks: tuple[str, int]) -> list[Hit]:
    """A ranked chunk list: ("a", 3) puts three chunks of document a, one after the other."""
    return [_hit(doc, i) for doc, n in docs_and_chunks for i in range(n)]


# Document "big" is cut into three chunks, all ranked first; then one chunk each of d1..d9.
# Ranked by chunks, "big" fills 3 of the top 10 places and d9 (relevant) is chunk 12;
# ranked by documents, "big" takes one place and d9 is document 10.
THREE_CHUNK_RANKING = _chunk_ranking(("big", 3), *((f"d{i}", 1) for i in range(1, 10)))


def test_a_document_with_three_chunks_takes_one_place_not_three():
    """Regression: the runner used to cut at 10 chunks, so d9 fell outside nDCG@10."""
    question = Question("q", "?", relevant_docs=("d9",), answerable=True)
    report = evaluate([question], search=lambda q, depth: THREE_CHUNK_RANKING[:depth], k=10)
    [result] = report.per_question
    assert result.ranked_doc_ids == ("big", *(f"d{i}" for i in range(1, 10)))
    assert result.recall_at_k == 1.0 and result.hit is True
    assert result.rr == pytest.approx(1 / 10)
    assert result.ndcg_at_10 == pytest.approx(1 / math.log2(11))


def test_rank_documents_searches_deeper_until_it_has_n_documents():
    # One document of 40 chunks, then two more: 10 * 3 = 30 chunks hold one document,
    # 60 hold all three.
    ranking = _chunk_ranking(("long", 40), ("b", 1), ("c", 1))
    depths = []

    def search(depth):
        depths.append(depth)
        return ranking[:depth]

    assert rank_documents(search, 3) == ("long", "b", "c")
    assert depths == [9, 18, 36, 72]  # 72 > 42 chunks: the search ran out, so it stops
    depths.clear()
    assert rank_documents(search, 10) == ("long", "b", "c")  # fewer exist: all of them
    assert depths == [30, 60]


def test_rank_documents_keeps_each_document_at_its_best_chunk():
    ranking = [_hit("a", 0), _hit("b", 0), _hit("a", 1), _hit("c", 0), _hit("b", 1)]
    assert rank_documents(lambda depth: ranking[:depth], 3) == ("a", "b", "c")
    assert rank_documents(lambda depth: ranking[:depth], 2) == ("a", "b")


def test_retrieval_only_generates_no_answer_and_reports_no_answer_metrics():
    report = evaluate(QUESTIONS, search=_search, k=2, retriever="bm25")
    assert report.answered is False
    assert all(r.answer is None and r.abstained is None for r in report.per_question)
    assert (report.abstention_on_unanswerable, report.false_abstention) == (None, None)
    assert report.citations_verified is None
    d = report.as_dict()
    for key in evaluation.ANSWER_METRICS:
        assert key not in d and key not in format_table(report)
    assert "answered_with_relevant_citation" in evaluation.ANSWER_METRICS
    assert "answered_with_key_fact" in evaluation.ANSWER_METRICS
    # Retrieval figures are the same as with answers; leaks are those of the search alone.
    with_answers = evaluate(QUESTIONS, search=_search, answer=_answer, k=2, retriever="bm25")
    for key in ("recall@k", "mrr", "ndcg@10", "hit_rate@k", "recall@k_by_kind"):
        assert d[key] == with_answers.as_dict()[key]
    assert d["leaks"] == 1  # "secret" via search; "pay" came only through q4's answer


def test_format_table_is_aligned_and_deterministic(report):
    table = format_table(report)
    assert table == format_table(report)
    lines = table.splitlines()
    assert len({len(line) for line in lines}) == 1  # every value right-aligned to one column
    assert "recall@2" in table and "ndcg@10" in table and "mrr@2" in table and "0.250" in table
    assert lines[0].split() == ["retriever", "bm25"]
    assert any(line.split() == ["recall@2", "[lookup]", "0.500"] for line in lines)


# --- cross-check against ranx ------------------------------------------------------------------


@pytest.mark.reference
@pytest.mark.filterwarnings("ignore:unsafe cast:Warning")  # numba, inside ranx
def test_metrics_agree_with_ranx():
    """Random runs and qrels: recall@k, mrr and ndcg@k equal ranx's to 1e-6.

    Matched definitions: ranx's "mrr" has no cut-off (like ours with k=None), "mrr@k" cuts at
    k (like ours with k); its "ndcg" is Järvelin's
    (rel / log2(rank + 1)), ideal DCG over min(k, |relevant|). Differences that the test
    steers around: ranx returns 0 for a query with no relevant document (we raise), reads
    k = 0 as "the whole run" (we raise), and a run is a dict, so it cannot hold repeats.
    """
    import numpy as np
    from ranx import Qrels, Run
    from ranx import evaluate as ranx_evaluate

    rng = np.random.default_rng(7)
    pool = [f"d{i}" for i in range(30)]
    qrels, run, ranked_of = {}, {}, {}
    for q in range(300):
        ranked = list(rng.choice(pool, size=int(rng.integers(1, 21)), replace=False))
        relevant = rng.choice(pool, size=int(rng.integers(1, 9)), replace=False)
        qrels[f"q{q}"] = {str(doc): 1 for doc in relevant}
        # Strictly falling scores, so ranx's sort by score reproduces our order exactly.
        run[f"q{q}"] = {str(doc): float(len(ranked) - i) for i, doc in enumerate(ranked)}
        ranked_of[f"q{q}"] = [str(doc) for doc in ranked]

    ks = (1, 3, 5, 10)
    metrics = ["mrr"] + [f"{m}@{k}" for k in ks for m in ("recall", "ndcg", "hit_rate", "mrr")]
    ranx_run = Run(run)
    ranx_evaluate(Qrels(qrels), ranx_run, metrics)
    for qid, ranked in ranked_of.items():
        relevant = set(qrels[qid])
        assert mrr(ranked, relevant) == pytest.approx(ranx_run.scores["mrr"][qid], abs=1e-6)
        for k in ks:
            theirs = {
                m: ranx_run.scores[f"{m}@{k}"][qid] for m in ("recall", "ndcg", "hit_rate", "mrr")
            }
            assert mrr(ranked, relevant, k) == pytest.approx(theirs["mrr"], abs=1e-6)
            assert recall_at_k(ranked, relevant, k) == pytest.approx(theirs["recall"], abs=1e-6)
            assert ndcg_at_k(ranked, relevant, k) == pytest.approx(theirs["ndcg"], abs=1e-6)
            assert hit_rate_at_k(ranked, relevant, k) == pytest.approx(theirs["hit_rate"], abs=1e-6)
