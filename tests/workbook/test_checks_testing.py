"""Notebook 08's checks pass on the reference tests and fail, naming the broken engine a test
let through (or the real engine it fails on), on stubs and on plausible wrong tests."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import Phase, assume, given, settings
from hypothesis import strategies as st

from raglab import Principal, parse_citations
from raglab.workbook import checks
from raglab.workbook.broken import BROKEN
from raglab.workbook.checks.testing import CHECKS, reference_tests

pytestmark = pytest.mark.usefixtures("references_reachable")

REFERENCE = {test.__name__: test for test in reference_tests()}
ACME = Principal("ann", "acme")
# Few examples: these wrong tests find nothing wherever they run, so each run is a full one.
QUICK = settings(
    derandomize=True,
    database=None,
    deadline=None,
    phases=[Phase.generate, Phase.shrink],
    max_examples=25,
)


def _check(name: str, test):
    return CHECKS[name](test)


@pytest.mark.parametrize("name", list(REFERENCE))
def test_every_check_passes_on_its_reference_test(name, capsys):
    result = _check(name, REFERENCE[name])
    assert result.passed, result.message
    out = capsys.readouterr().out
    assert out.startswith(f"✅ {name}: passes on the real engine and fails on ")


def _assert_true(engine):
    assert True


def _pass(engine):
    pass


def _never_uses_the_engine(engine):
    from raglab import chunk

    assert chunk("") == []


def _stub(engine):
    raise NotImplementedError()


@pytest.mark.parametrize("name", list(REFERENCE))
@pytest.mark.parametrize("test", [_assert_true, _pass, _never_uses_the_engine])
def test_a_test_that_cannot_fail_fails_naming_the_engine_it_let_through(name, test, capsys):
    result = _check(name, test)
    assert not result.passed and result.case == BROKEN[name][0].__name__
    out = capsys.readouterr().out
    assert f"your test passed on a broken engine, {result.case}: " in out
    assert "a test that cannot fail checks nothing" in out


@pytest.mark.parametrize("name", list(REFERENCE))
def test_a_stub_is_not_implemented_yet(name, capsys):
    result = _check(name, _stub)
    assert not result.passed and result.case == "not implemented"
    assert "not implemented yet" in capsys.readouterr().out


def test_a_value_that_is_not_a_function_is_refused():
    result = _check("test_empty_documents_produce_no_chunks", None)
    assert not result.passed and result.case == "callable"


# --- plausible wrong tests, one or two per exercise -------------------------------------------


def empty_only_non_empty_text(engine):
    """Tests the other side: real text gives chunks. True, and no help with empty ones."""
    assert engine.chunk("Some text.")


def empty_at_most_one(engine):
    assert len(engine.chunk("")) <= 1


def empty_expects_an_empty_string(engine):
    assert [c.text for c in engine.chunk("")] == [""]


def overlap_tests_size_instead(engine):
    with pytest.raises(ValueError):
        engine.chunk("text", size=0, overlap=0)


def overlap_refuses_a_valid_overlap(engine):
    with pytest.raises(ValueError):
        engine.chunk("text", size=100, overlap=99)


def dimensions_only_the_embedder(engine):
    assert engine.embed(["a"]).shape == (1, engine.dim)


def dimensions_refuses_the_right_width(engine):
    chunks = engine.chunk("alpha")
    with pytest.raises(ValueError):
        engine.store(dim=engine.dim).add(chunks, engine.embed([c.text for c in chunks]))


def tenants_only_some_hits(engine):
    assert engine.retrieve("What does error E-204 mean?", ACME)


def tenants_filtered_by_the_test_itself(engine):
    hits = engine.retrieve("What does error E-204 mean?", ACME)
    mine = [hit for hit in hits if hit.chunk.tenant == "acme"]
    assert all(hit.chunk.tenant == "acme" for hit in mine)


def abstention_on_an_answerable_question(engine):
    assert engine.ask("How many vacation days do I get per year?", ACME).abstained


def abstention_only_some_text(engine):
    assert engine.ask("What is the airspeed velocity of an unladen swallow?", ACME).text


def citations_only_the_checked_list(engine):
    answer = engine.ask("How many vacation days do I get per year?", ACME)
    for citation in answer.citations:  # already verified by the engine: cannot fail
        assert citation.hit in answer.retrieved


def citations_on_an_abstention(engine):
    answer = engine.ask("What is the airspeed velocity of an unladen swallow?", ACME)
    assert all(1 <= n <= len(answer.retrieved) for n in parse_citations(answer.text))


@QUICK
@given(
    text=st.text(alphabet="ab \n", max_size=20), size=st.integers(1, 6), overlap=st.integers(0, 5)
)
def offsets_only_text_at_offsets(engine, text, size, overlap):
    """`find` returns a place where the text is, so this holds for it too."""
    assume(overlap < size)
    for c in engine.chunk(text, size=size, overlap=overlap, kind="chars"):
        assert text[c.start : c.end] == c.text


@QUICK
@given(
    text=st.text(alphabet="ab \n", max_size=20), size=st.integers(1, 6), overlap=st.integers(0, 5)
)
def offsets_only_order(engine, text, size, overlap):
    assume(overlap < size)
    starts = [c.start for c in engine.chunk(text, size=size, overlap=overlap, kind="chars")]
    assert starts == sorted(set(starts))


def offsets_one_example(engine):
    """An example without repeats: the last window is caught, `find` is not."""
    text = "abcdefgh"
    chunks = engine.chunk(text, size=3, overlap=1, kind="chars")
    assert "".join(c.text for c in chunks).replace("c", "").endswith("h")
    assert [c.start for c in chunks] == sorted({c.start for c in chunks})


@QUICK
@given(
    text=st.text(alphabet="ab \n", max_size=20), size=st.integers(1, 6), overlap=st.integers(0, 5)
)
def offsets_whole_text_covered(engine, text, size, overlap):
    """Wrong: whitespace-only windows are skipped, so blank stretches are not covered."""
    assume(overlap < size)
    chunks = engine.chunk(text, size=size, overlap=overlap, kind="chars")
    covered = {i for c in chunks for i in range(c.start, c.end)}
    assert covered == set(range(len(text)))


@pytest.mark.parametrize(
    ("name", "test", "case"),
    [
        (
            "test_empty_documents_produce_no_chunks",
            empty_only_non_empty_text,
            "EmptyChunkForEmptyDocument",
        ),
        ("test_empty_documents_produce_no_chunks", empty_at_most_one, "EmptyChunkForEmptyDocument"),
        (
            "test_empty_documents_produce_no_chunks",
            empty_expects_an_empty_string,
            "the real engine",
        ),
        (
            "test_overlap_must_be_smaller_than_chunk_size",
            overlap_tests_size_instead,
            "OverlapNotChecked",
        ),
        (
            "test_overlap_must_be_smaller_than_chunk_size",
            overlap_refuses_a_valid_overlap,
            "the real engine",
        ),
        (
            "test_wrong_embedding_dimensions_are_rejected",
            dimensions_only_the_embedder,
            "StoreAcceptsAnyDimension",
        ),
        (
            "test_wrong_embedding_dimensions_are_rejected",
            dimensions_refuses_the_right_width,
            "the real engine",
        ),
        ("test_no_cross_tenant_retrieval", tenants_only_some_hits, "NoAccessFilter"),
        ("test_no_cross_tenant_retrieval", tenants_filtered_by_the_test_itself, "NoAccessFilter"),
        (
            "test_unanswerable_question_gets_no_answer",
            abstention_on_an_answerable_question,
            "the real engine",
        ),
        ("test_unanswerable_question_gets_no_answer", abstention_only_some_text, "NeverAbstains"),
        (
            "test_every_citation_refers_to_a_retrieved_source",
            citations_only_the_checked_list,
            "CitesUnretrievedSource",
        ),
        (
            "test_every_citation_refers_to_a_retrieved_source",
            citations_on_an_abstention,
            "CitesUnretrievedSource",
        ),
        ("test_chunk_offsets_cover_the_text", offsets_only_text_at_offsets, "OffsetsFoundWithFind"),
        ("test_chunk_offsets_cover_the_text", offsets_only_order, "DropsTheLastWindow"),
        ("test_chunk_offsets_cover_the_text", offsets_one_example, "OffsetsFoundWithFind"),
        ("test_chunk_offsets_cover_the_text", offsets_whole_text_covered, "the real engine"),
    ],
    ids=lambda value: getattr(value, "__name__", None),
)
def test_a_plausible_wrong_test_fails_the_check(name, test, case):
    result = _check(name, test)
    assert not result.passed and result.case == case, result.message


# --- half a promise: a test that checks one half is caught by the engine breaking the other ---


def tenants_no_leak_only(engine):
    hits = engine.retrieve("What does error E-204 mean?", ACME, k=10)
    assert [hit for hit in hits if hit.chunk.tenant != "acme"] == []


def dimensions_add_only(engine):
    chunks = engine.chunk("Staff get 25 days of annual leave.")
    with pytest.raises(ValueError):
        engine.store(dim=engine.dim).add(chunks, np.ones((len(chunks), engine.dim - 1)))


def dimensions_query_only(engine):
    chunks = engine.chunk("Staff get 25 days of annual leave.")
    store = engine.store(dim=engine.dim)
    store.add(chunks, engine.embed([c.text for c in chunks]))
    with pytest.raises(ValueError):
        store.search(np.ones(engine.dim + 1, dtype=np.float32), Principal("ann"), k=1)


def overlap_above_size_only(engine):
    with pytest.raises(ValueError, match="overlap"):
        engine.chunk("Some text to cut.", size=100, overlap=150)


def overlap_equal_to_size_only(engine):
    with pytest.raises(ValueError, match="overlap"):
        engine.chunk("Some text to cut.", size=100, overlap=100)


def abstention_flag_only(engine):
    assert engine.ask("What is the airspeed velocity of an unladen swallow?", ACME).abstained


def abstention_no_citations_only(engine):
    answer = engine.ask("What is the airspeed velocity of an unladen swallow?", ACME)
    assert answer.citations == ()


@pytest.mark.parametrize(
    ("name", "test", "case", "missing"),
    [
        (
            "test_no_cross_tenant_retrieval",
            tenants_no_leak_only,
            "RetrievesNothing",
            "that the asker still gets hits",
        ),
        (
            "test_no_cross_tenant_retrieval",
            tenants_only_some_hits,
            "NoAccessFilter",
            "that the asker gets no other tenant's chunk",
        ),
        (
            "test_wrong_embedding_dimensions_are_rejected",
            dimensions_add_only,
            "QueryAcceptsAnyDimension",
            "that a query (`store.search`) of the wrong length is refused",
        ),
        (
            "test_wrong_embedding_dimensions_are_rejected",
            dimensions_query_only,
            "AddAcceptsAnyDimension",
            "that `add` refuses vectors of the wrong length",
        ),
        (
            "test_overlap_must_be_smaller_than_chunk_size",
            overlap_above_size_only,
            "OverlapEqualToSizeAccepted",
            "that `overlap == size` is refused too",
        ),
        (
            "test_overlap_must_be_smaller_than_chunk_size",
            overlap_equal_to_size_only,
            "OverlapAboveSizeAccepted",
            "that an `overlap` larger than `size` is refused too",
        ),
        (
            "test_unanswerable_question_gets_no_answer",
            abstention_flag_only,
            "CitesWhileAbstaining",
            "that an abstention cites nothing (`answer.citations == ()`)",
        ),
        (
            "test_unanswerable_question_gets_no_answer",
            abstention_no_citations_only,
            "AnswersUncited",
            "that the answer abstains (`answer.abstained`)",
        ),
    ],
    ids=lambda value: getattr(value, "__name__", None),
)
def test_a_test_of_half_the_promise_is_incomplete_naming_the_other_half(
    name, test, case, missing, capsys
):
    result = _check(name, test)
    assert not result.passed and result.case == case, result.message
    out = capsys.readouterr().out
    assert (
        f"your test checks only part of the promise: it passed on a broken engine, {case}: " in out
    )
    assert f"it never checks {missing}" in out


def test_a_test_that_fails_on_the_real_engine_is_told_so(capsys):
    _check("test_empty_documents_produce_no_chunks", empty_expects_an_empty_string)
    out = capsys.readouterr().out
    assert "your test fails on the real engine: AssertionError" in out
    assert "a test of it must pass" in out


def test_a_hypothesis_test_that_finds_nothing_names_the_engine(capsys):
    _check("test_chunk_offsets_cover_the_text", offsets_only_text_at_offsets)
    out = capsys.readouterr().out
    assert (
        "OffsetsFoundWithFind: Its chunker finds each chunk's start with `text.find(chunk)`" in out
    )


def test_the_passing_verdict_names_every_engine_caught(capsys):
    _check("test_chunk_offsets_cover_the_text", REFERENCE["test_chunk_offsets_cover_the_text"])
    out = capsys.readouterr().out
    assert "fails on OffsetsFoundWithFind and DropsTheLastWindow (AssertionError: " in out


def test_under_nbgrader_a_failing_check_raises(monkeypatch):
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    with pytest.raises(checks.CheckFailed, match="EmptyChunkForEmptyDocument"):
        _check("test_empty_documents_produce_no_chunks", _assert_true)


def test_the_checks_are_registered_with_the_workbook():
    assert {name: checks.CHECKS[name] for name in REFERENCE} == CHECKS
    assert checks.check_test_no_cross_tenant_retrieval is CHECKS["test_no_cross_tenant_retrieval"]
    wrong = np.zeros(3)  # a check refuses anything that is not a test function
    assert not checks.check_test_no_cross_tenant_retrieval(wrong).passed
