"""Checks for notebook 08: tests the learner writes, graded by what they catch.

Each exercise is a test function taking the engine under test as its one argument. Its
check runs it first on the real engine, where it must pass (the promise holds), then on
each broken engine of its exercise (`raglab.workbook.broken`), where it must fail: a test
that passes on a broken engine cannot tell it from a working one, so it checks nothing.

    ✅ test_empty_documents_produce_no_chunks: passes on the real engine and fails on
       EmptyChunkForEmptyDocument (assert engine.chunk("") == [])

or, for `assert True`:

    ❌ test_empty_documents_produce_no_chunks: case 'EmptyChunkForEmptyDocument'
       your test passed on a broken engine, EmptyChunkForEmptyDocument: ...

A promise of two halves has a broken engine per half; a test that catches one and not the
other checks only part of the promise, and the check names the half it never checks:

    ❌ test_no_cross_tenant_retrieval: case 'RetrievesNothing'
       your test checks only part of the promise: it passed on a broken engine, ...
       it never checks that the asker still gets hits (their own tenant's pages)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from raglab.workbook.broken import BROKEN, Engine
from raglab.workbook.checks.core import NOT_IMPLEMENTED_CASE, CheckResult, show, verdict
from raglab.workbook.testrunner import TestResult, run_test

__all__ = [
    "check_test_chunk_offsets_cover_the_text",
    "check_test_empty_documents_produce_no_chunks",
    "check_test_every_citation_refers_to_a_retrieved_source",
    "check_test_no_cross_tenant_retrieval",
    "check_test_overlap_must_be_smaller_than_chunk_size",
    "check_test_unanswerable_question_gets_no_answer",
    "check_test_wrong_embedding_dimensions_are_rejected",
    "reference_tests",
]

MAX_MESSAGE = 80  # characters of the failure shown in a passing verdict
CORRECT = "the real engine"  # the case named when a test fails where every promise holds


def _flaw(engine: type[Engine]) -> str:
    """The first sentence of a broken engine's docstring: what is wrong with it."""
    return " ".join((engine.__doc__ or "").split()).split(". ")[0].rstrip(".")


def check_catches(name: str, test: Any, broken: Sequence[type[Engine]]) -> CheckResult:
    """Pass when `test` passes on the real engine and fails on every engine in `broken`."""
    if not callable(test):
        return verdict(name, "callable", [f"expected a test function, got {show(test)}"])
    on_real = run_test(test, Engine())
    if on_real.not_implemented:
        return verdict(name, NOT_IMPLEMENTED_CASE, [])
    if not on_real.passed:
        return verdict(name, CORRECT, _fails_on_the_real_engine(on_real))
    results = [(engine, run_test(test, engine())) for engine in broken]
    caught = [(engine, result) for engine, result in results if not result.passed]
    missed = [engine for engine, result in results if result.passed]
    if missed and not caught:
        return verdict(name, missed[0].__name__, _let_through(missed[0]))
    if missed:
        return verdict(name, missed[0].__name__, _checks_part(missed[0]))
    first = caught[0][1].message.split("\n")[0]
    first = first if len(first) <= MAX_MESSAGE else first[: MAX_MESSAGE - 1] + "…"
    names = _and([engine.__name__ for engine, _ in caught])
    return verdict(name, None, [f"passes on the real engine and fails on {names} ({first})"])


def _and(names: list[str]) -> str:
    """`a`, `a and b`, `a, b and c`."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _fails_on_the_real_engine(result: TestResult) -> list[str]:
    return [
        f"your test fails on the real engine: {result.message.splitlines()[0]}",
        "there the promise holds, so a test of it must pass: is the test asking for "
        "something the engine never promised?",
    ]


def _let_through(engine: type[Engine]) -> list[str]:
    return [
        f"your test passed on a broken engine, {engine.__name__}: {_flaw(engine)}",
        "a test that cannot fail checks nothing: make it fail on this flaw (and call "
        "the `engine` it is given, not raglab directly)",
    ]


def _checks_part(engine: type[Engine]) -> list[str]:
    """The test caught another engine of its exercise, and let this one through."""
    missing = (
        f"it never checks {engine.unchecked}"
        if engine.unchecked
        else "make it fail on this flaw too"
    )
    return [
        "your test checks only part of the promise: it passed on a broken engine, "
        f"{engine.__name__}: {_flaw(engine)}",
        missing,
    ]


def _check(test_name: str, broken: Sequence[type[Engine]]) -> Callable[[Any], CheckResult]:
    def check(test: Any) -> CheckResult:
        return check_catches(test_name, test, broken)

    check.__name__ = f"check_{test_name}"
    check.__doc__ = (
        f"Check a learner's `{test_name}(engine)`: it passes on the real engine and "
        f"fails on {', '.join(engine.__name__ for engine in broken)}."
    )
    return check


# --- the reference tests: the solutions, and what tests/workbook/test_broken.py runs on every engine ---


def reference_tests() -> list[Callable[[Any], None]]:
    """The seven tests of notebook 08 as the package writes them, in the notebook's order.

    Imported lazily: pytest and hypothesis are needed only by whoever runs the tests.
    """
    import numpy as np
    import pytest
    from hypothesis import Phase, assume, given, settings
    from hypothesis import strategies as st

    from raglab import Principal, parse_citations

    quick = [Phase.explicit, Phase.generate, Phase.shrink]  # no slow "explain" after a failure

    def test_empty_documents_produce_no_chunks(engine):
        assert engine.chunk("") == []
        assert engine.chunk("  \n\n  ") == []  # blank is empty too

    def test_overlap_must_be_smaller_than_chunk_size(engine):
        for overlap in (100, 150):
            with pytest.raises(ValueError, match="overlap"):
                engine.chunk("Some text to cut.", size=100, overlap=overlap)

    def test_wrong_embedding_dimensions_are_rejected(engine):
        chunks = engine.chunk("Staff get 25 days of annual leave.")
        store = engine.store(dim=engine.dim)
        too_short = np.ones((len(chunks), engine.dim - 1), dtype=np.float32)
        with pytest.raises(ValueError):
            store.add(chunks, too_short)
        store.add(chunks, engine.embed([c.text for c in chunks]))
        with pytest.raises(ValueError):
            store.search(np.ones(engine.dim + 1, dtype=np.float32), Principal("ann"), k=1)

    def test_no_cross_tenant_retrieval(engine):
        question = "What does error E-204 mean?"  # only globex's pages answer it
        hits = engine.retrieve(question, Principal("ann", "acme"), k=10)
        assert hits, "an acme user should still get acme's pages"
        leaked = [hit.chunk.id for hit in hits if hit.chunk.tenant != "acme"]
        assert leaked == [], f"acme's user retrieved {leaked}"

    def test_unanswerable_question_gets_no_answer(engine):
        question = "What is the airspeed velocity of an unladen swallow?"
        answer = engine.ask(question, Principal("ann", "acme"))
        assert answer.abstained, f"answered {answer.text!r}"
        assert answer.citations == ()

    def test_every_citation_refers_to_a_retrieved_source(engine):
        answer = engine.ask("How many vacation days do I get per year?", Principal("ann", "acme"))
        cited = parse_citations(answer.text)
        assert cited, f"expected a cited answer, got {answer.text!r}"
        beyond = [n for n in cited if not 1 <= n <= len(answer.retrieved)]
        assert beyond == [], (
            f"{answer.text!r} cites {beyond}, but {len(answer.retrieved)} sources were retrieved"
        )

    @settings(derandomize=True, database=None, deadline=None, phases=quick, max_examples=50)
    @given(text=st.text(max_size=60), size=st.integers(1, 12), overlap=st.integers(0, 11))
    def test_chunk_offsets_cover_the_text(engine, text, size, overlap):
        assume(overlap < size)
        chunks = engine.chunk(text, size=size, overlap=overlap, kind="chars")
        covered = set()
        for c in chunks:
            assert text[c.start : c.end] == c.text
            covered.update(range(c.start, c.end))
        lost = [i for i, char in enumerate(text) if not char.isspace() and i not in covered]
        assert lost == [], f"characters at {lost} are in no chunk"
        starts = [c.start for c in chunks]
        assert starts == sorted(set(starts)), f"chunks out of order: starts {starts}"

    return [
        test_empty_documents_produce_no_chunks,
        test_overlap_must_be_smaller_than_chunk_size,
        test_wrong_embedding_dimensions_are_rejected,
        test_no_cross_tenant_retrieval,
        test_unanswerable_question_gets_no_answer,
        test_every_citation_refers_to_a_retrieved_source,
        test_chunk_offsets_cover_the_text,
    ]


# Exercise id (the test's name) -> check; raglab.workbook.checks.CHECKS merges every notebook's.
CHECKS: dict[str, Callable[[Callable], CheckResult]] = {
    name: _check(name, engines) for name, engines in BROKEN.items()
}
check_test_empty_documents_produce_no_chunks = CHECKS["test_empty_documents_produce_no_chunks"]
check_test_overlap_must_be_smaller_than_chunk_size = CHECKS[
    "test_overlap_must_be_smaller_than_chunk_size"
]
check_test_wrong_embedding_dimensions_are_rejected = CHECKS[
    "test_wrong_embedding_dimensions_are_rejected"
]
check_test_no_cross_tenant_retrieval = CHECKS["test_no_cross_tenant_retrieval"]
check_test_unanswerable_question_gets_no_answer = CHECKS[
    "test_unanswerable_question_gets_no_answer"
]
check_test_every_citation_refers_to_a_retrieved_source = CHECKS[
    "test_every_citation_refers_to_a_retrieved_source"
]
check_test_chunk_offsets_cover_the_text = CHECKS["test_chunk_offsets_cover_the_text"]
