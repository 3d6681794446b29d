"""Each broken engine of notebook 08 really has its flaw, and only that one: the package's
reference tests fail on exactly the engines their exercise names, and pass on the real one."""

from __future__ import annotations

import numpy as np
import pytest

from raglab import DimensionMismatch, Principal
from raglab.workbook import broken
from raglab.workbook.broken import BROKEN, Engine
from raglab.workbook.checks.testing import CHECKS, reference_tests
from raglab.workbook.testrunner import run_test

TESTS = {test.__name__: test for test in reference_tests()}
ENGINES = sorted(
    {engine for engines in BROKEN.values() for engine in engines}, key=lambda e: e.__name__
)
ACME = Principal("ann", "acme")


def test_every_exercise_has_a_reference_test_a_check_and_broken_engines():
    assert list(TESTS) == list(BROKEN) == list(CHECKS)
    assert all(BROKEN.values())


def test_every_broken_engine_is_named_in_the_module():
    assert {engine.__name__ for engine in ENGINES} <= set(broken.__all__)
    assert all(engine.__doc__ for engine in ENGINES)  # the check quotes its flaw


@pytest.mark.parametrize("name", list(TESTS))
def test_the_reference_tests_pass_on_the_real_engine(name):
    result = run_test(TESTS[name], Engine())
    assert result.passed, result.message


@pytest.mark.parametrize("engine", ENGINES, ids=lambda e: e.__name__)
def test_each_flaw_is_caught_by_exactly_its_own_tests(engine):
    failing = [name for name, test in TESTS.items() if not run_test(test, engine()).passed]
    assert failing == [name for name, engines in BROKEN.items() if engine in engines]


# --- each flaw, shown directly --------------------------------------------------------------


def test_empty_chunk_for_empty_document():
    (piece,) = broken.EmptyChunkForEmptyDocument().chunk("")
    assert piece.text == "" and (piece.start, piece.end) == (0, 0)
    assert broken.EmptyChunkForEmptyDocument().chunk(" \n")[0].text == " \n"
    assert Engine().chunk("") == [] and Engine().chunk(" \n") == []


def test_overlap_not_checked_repairs_instead_of_refusing():
    text = "abcdefghij"
    quiet = broken.OverlapNotChecked().chunk(text, size=4, overlap=4, kind="chars")
    assert quiet == Engine().chunk(text, size=4, overlap=3, kind="chars")
    with pytest.raises(ValueError, match="overlap"):
        Engine().chunk(text, size=4, overlap=4)
    with pytest.raises(ValueError, match="size"):  # size itself is still checked
        broken.OverlapNotChecked().chunk(text, size=0, overlap=0)


def test_store_accepts_any_dimension():
    engine = broken.StoreAcceptsAnyDimension()
    chunks = engine.chunk("Staff get 25 days of annual leave.")
    store = engine.store(dim=4)
    store.add(chunks, np.ones((len(chunks), 3)))  # padded with a zero, no error
    hits = store.search(np.ones(7), ACME, k=1)  # cut to 4 numbers, no error
    assert [hit.chunk for hit in hits] == []  # acme cannot read doc.md's default tenant
    assert store.search(np.ones(7), Principal("u"), k=1)[0].chunk == chunks[0]
    real = Engine().store(dim=4)
    with pytest.raises(DimensionMismatch):
        real.add(chunks, np.ones((len(chunks), 3)))


def test_no_access_filter_retrieves_other_tenants():
    question = "What does error E-204 mean?"
    leaked = {hit.chunk.tenant for hit in broken.NoAccessFilter().retrieve(question, ACME)}
    assert "globex" in leaked
    answer = broken.NoAccessFilter().ask(question, ACME)
    assert any(hit.chunk.tenant == "globex" for hit in answer.retrieved)
    assert {hit.chunk.tenant for hit in Engine().retrieve(question, ACME)} == {"acme"}


def test_never_abstains_quotes_the_top_source():
    question = "What is the airspeed velocity of an unladen swallow?"
    answer = broken.NeverAbstains().ask(question, ACME)
    assert not answer.abstained and [c.n for c in answer.citations] == [1]
    assert answer.verified  # its citations are real: only the abstention is missing
    assert Engine().ask(question, ACME).abstained


def test_never_abstains_makes_something_up_without_sources():
    answer = broken.NeverAbstains().ask("Anything?", Principal("zed", "initech"))
    assert answer.retrieved == () and not answer.abstained


def test_cites_unretrieved_source_adds_one_marker_past_the_last():
    answer = broken.CitesUnretrievedSource().ask("How many vacation days do I get?", ACME)
    assert answer.invalid_citations == (len(answer.retrieved) + 1,)
    assert not answer.verified
    unanswerable = broken.CitesUnretrievedSource().ask("Who won the 1954 World Cup?", ACME)
    assert unanswerable.abstained and unanswerable.invalid_citations == ()


def test_offsets_found_with_find_lose_the_order_when_text_repeats():
    pieces = broken.OffsetsFoundWithFind().chunk("aaaa", size=2, overlap=0, kind="chars")
    assert [(c.start, c.text) for c in pieces] == [(0, "aa"), (0, "aa")]
    real = Engine().chunk("aaaa", size=2, overlap=0, kind="chars")
    assert [c.start for c in real] == [0, 2]


def test_drops_the_last_window_loses_the_end_of_a_text():
    pieces = broken.DropsTheLastWindow().chunk("abcde", size=2, overlap=0, kind="chars")
    assert [c.text for c in pieces] == ["ab", "cd"]
    assert [c.text for c in Engine().chunk("abcde", size=2, overlap=0, kind="chars")][-1] == "e"
    # Only the character chunker has the flaw: the structure-aware one is the engine's own.
    text = "# A\n\nOne two.\n\n# B\n\nThree."
    assert broken.DropsTheLastWindow().chunk(text, size=12, overlap=2) == Engine().chunk(
        text, size=12, overlap=2
    )


def test_documents_can_be_given_instead_of_the_sample_corpus():
    from raglab import Document

    docs = [
        Document("acme/leave.md", "Staff get 25 days of annual leave.", tenant="acme"),
        Document("globex/leave.md", "Staff get 30 days of annual leave.", tenant="globex"),
    ]
    hits = Engine().retrieve("How many days of annual leave?", ACME, documents=docs)
    assert [hit.chunk.doc_id for hit in hits] == ["acme/leave.md"]
    leaked = broken.NoAccessFilter().retrieve(
        "How many days of annual leave?", ACME, documents=docs
    )
    assert sorted(hit.chunk.doc_id for hit in leaked) == ["acme/leave.md", "globex/leave.md"]


# --- the engines that break one half of a promise, and keep the other -------------------------


def test_each_overlap_engine_accepts_one_side_of_the_limit_and_refuses_the_other():
    text = "abcdefghij"
    for engine, accepted, refused in (
        (broken.OverlapEqualToSizeAccepted(), 4, 5),
        (broken.OverlapAboveSizeAccepted(), 5, 4),
    ):
        quiet = engine.chunk(text, size=4, overlap=accepted, kind="chars")
        assert quiet == Engine().chunk(text, size=4, overlap=3, kind="chars")
        with pytest.raises(ValueError, match="overlap"):
            engine.chunk(text, size=4, overlap=refused)


def test_each_dimension_engine_fits_one_call_and_refuses_the_other():
    for engine, fits_add in (
        (broken.AddAcceptsAnyDimension(), True),
        (broken.QueryAcceptsAnyDimension(), False),
    ):
        chunks = engine.chunk("Staff get 25 days of annual leave.")
        store = engine.store(dim=4)
        if fits_add:
            store.add(chunks, np.ones((len(chunks), 3)))
            with pytest.raises(DimensionMismatch):
                store.search(np.ones(7), Principal("u"), k=1)
        else:
            with pytest.raises(DimensionMismatch):
                store.add(chunks, np.ones((len(chunks), 3)))
            store.add(chunks, np.ones((len(chunks), 4)))
            assert store.search(np.ones(7), Principal("u"), k=1)[0].chunk == chunks[0]


def test_retrieves_nothing_finds_nothing_for_anyone():
    question = "What does error E-204 mean?"
    assert broken.RetrievesNothing().retrieve(question, ACME, k=10) == []
    assert broken.RetrievesNothing().retrieve(question, Principal("bo", "globex")) == []
    assert Engine().retrieve(question, Principal("bo", "globex"))


def test_the_abstention_engines_break_one_half_each():
    question = "What is the airspeed velocity of an unladen swallow?"
    uncited = broken.AnswersUncited().ask(question, ACME)
    assert (uncited.abstained, uncited.citations, uncited.text) == (False, (), "Most likely yes.")
    cites = broken.CitesWhileAbstaining().ask(question, ACME)
    assert cites.abstained and [c.n for c in cites.citations] == [1]
    assert cites.citations[0].hit == cites.retrieved[0]
