"""The checks of notebook 02: fail on the stub and on plausible mistakes, pass on the solution."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raglab.ingest.chunking import Chunker
from raglab.records import Chunk, Document
from raglab.workbook import checks
from raglab.workbook.checks.contracts import (
    CHUNK_CASES,
    CHUNK_INVARIANTS,
    FAILURES,
    INVARIANTS,
    POLICY,
    check_chunk_violations,
    check_failure_prevented,
    random_chunk_cases,
    reference_chunk_violations,
)
from raglab.workbook.checks.core import NOT_IMPLEMENTED

# These tests use the reference (and variations of it) as a learner's function.
pytestmark = pytest.mark.usefixtures("references_reachable")

# --- the reference, by hand ----------------------------------------------------------------


def test_reference_on_hand_worked_chunks():
    doc = Document("a.md", "Ten days. Ask HR.", tenant="acme", version="2")
    good = [
        Chunk("a.md", 0, "Ten days.", 0, 9, tenant="acme", doc_version="2"),
        Chunk("a.md", 1, "Ask HR.", 10, 17, tenant="acme", doc_version="2"),
    ]
    assert reference_chunk_violations(doc, good, 9) == []
    assert reference_chunk_violations(doc, good, 8) == ["size"]
    assert reference_chunk_violations(doc, good[::-1], 9) == ["order"]
    assert reference_chunk_violations(doc, good[:1], 9) == ["coverage"]
    assert reference_chunk_violations(doc, [good[0], replace(good[1], end=18)], 9) == ["offsets"]
    assert reference_chunk_violations(doc, [good[0], replace(good[1], tenant="x")], 9) == [
        "metadata"
    ]
    assert reference_chunk_violations(Document("e.md", ""), [], 1) == []
    assert reference_chunk_violations(Document("w.md", " \n "), [], 1) == []  # nothing visible


def test_crafted_cases_cover_every_invariant_and_the_clean_case():
    seen = {name for case in CHUNK_CASES for name in case.expected}
    assert seen == set(CHUNK_INVARIANTS)
    assert any(case.expected == [] for case in CHUNK_CASES)
    find_case = next(c for c in CHUNK_CASES if c.name == "offsets found with str.find")
    assert find_case.expected == ["order", "coverage"]  # the text matches; the place does not


def test_random_cases_are_seeded_and_varied():
    first, again = random_chunk_cases(50), random_chunk_cases(50)
    assert [c.expected for c in first] == [c.expected for c in again]
    kinds = {name for case in random_chunk_cases() for name in case.expected}
    assert kinds == set(CHUNK_INVARIANTS)


@settings(max_examples=60, deadline=None)
@given(
    st.text(alphabet="ab .\n#", max_size=80),
    st.integers(1, 30),
    st.data(),
    st.sampled_from(["chars", "structure"]),
)
def test_the_engine_chunker_keeps_every_invariant(text, size, data, kind):
    overlap = data.draw(st.integers(0, size - 1))
    doc = Document("d.md", text, tenant="acme", groups=("hr",), version="3")
    chunks = Chunker(kind=kind, size=size, overlap=overlap).split(doc)
    assert reference_chunk_violations(doc, chunks, size) == []


# --- exercise 1: chunk_violations ----------------------------------------------------------


def violations_stub(doc, chunks, size):
    raise NotImplementedError()


def violations_no_coverage(doc, chunks, size):
    """Forgets coverage: a missing chunk goes unnoticed."""
    return [name for name in reference_chunk_violations(doc, chunks, size) if name != "coverage"]


def violations_index_only(doc, chunks, size):
    """Checks order by index alone, so chunks with find-recovered offsets look in order."""
    found = reference_chunk_violations(doc, chunks, size)
    indexes_ok = all(c.index == i for i, c in enumerate(chunks))
    if "order" in found and indexes_ok:
        found.remove("order")
    return found


def violations_size_inclusive(doc, chunks, size):
    """Off by one: a chunk of exactly `size` characters counted as too long."""
    found = [n for n in reference_chunk_violations(doc, chunks, size) if n != "size"]
    if any(len(c.text) >= size for c in chunks):
        found.insert(1 if "offsets" in found else 0, "size")
    return found


def violations_text_only(doc, chunks, size):
    """Checks `text in doc.text` instead of the slice: a shifted chunk passes."""
    found = [n for n in reference_chunk_violations(doc, chunks, size) if n != "offsets"]
    if any(c.text not in doc.text for c in chunks):
        found.insert(0, "offsets")
    return found


def violations_as_set(doc, chunks, size):
    return set(reference_chunk_violations(doc, chunks, size))


def test_chunk_violations_passes_on_the_reference(capsys):
    result = check_chunk_violations(reference_chunk_violations)
    assert result.passed
    assert capsys.readouterr().out.startswith("✅ chunk_violations: all 23 crafted")


def test_chunk_violations_accepts_any_order():
    result = check_chunk_violations(lambda d, c, s: reference_chunk_violations(d, c, s)[::-1])
    assert result.passed


def test_chunk_violations_fails_on_the_stub(capsys):
    result = check_chunk_violations(violations_stub)
    assert not result.passed
    assert NOT_IMPLEMENTED in capsys.readouterr().out


@pytest.mark.parametrize(
    ("fn", "case", "why"),
    [
        (violations_no_coverage, "offsets found with str.find", "'coverage' is violated"),
        (violations_index_only, "offsets found with str.find", "'order' is violated"),
        (violations_size_inclusive, "a chunk exactly `size` long", "'size' holds here"),
        (violations_text_only, "end off by one", "'offsets' is violated"),
        (violations_as_set, "good chunks", "expected a list of invariant ids, got a set"),
        (lambda d, c, s: ["offset"], "good chunks", "'offset' is not an invariant id"),
        (lambda d, c, s: ["size", "size"], "good chunks", "'size' is listed more than once"),
    ],
)
def test_chunk_violations_names_the_failing_case(fn, case, why, capsys):
    result = check_chunk_violations(fn)
    out = capsys.readouterr().out
    assert not result.passed
    assert result.case == case
    assert why in out
    assert "Traceback" not in out


def test_chunk_violations_reports_an_exception_in_one_line(capsys):
    def crashes(doc, chunks, size):
        return [chunks[0].text]

    result = check_chunk_violations(crashes)
    out = capsys.readouterr().out
    assert result.case == "good chunks"
    assert "expected a list" not in out and "raised" not in out  # returned text, wrong id
    result = check_chunk_violations(lambda d, c, s: [c[0].start // 0])
    assert "raised ZeroDivisionError" in capsys.readouterr().out


def test_chunk_violations_refuses_a_non_function(capsys):
    assert check_chunk_violations(["offsets"]).case == "callable"


# --- exercise 2: failure_prevented -------------------------------------------------------------

SOLUTION = {
    "chunk-step": "C",
    "chunk-offsets": "E",
    "embed-stable": "F",
    "unit-rows": "J",
    "index-embedder": "H",
    "doc-version": "B",
    "access-first": "A",
    "ties": "G",
    "cite-given": "I",
    "abstain": "D",
}


def test_the_solution_uses_every_id_once():
    assert set(SOLUTION) == set(INVARIANTS)
    assert sorted(SOLUTION.values()) == sorted(FAILURES)


def test_failure_prevented_passes_on_the_solution(capsys):
    assert check_failure_prevented(lambda: dict(SOLUTION)).passed
    assert check_failure_prevented(dict(SOLUTION)).passed  # a plain dict works too
    assert check_failure_prevented({k: f" {v.lower()}" for k, v in SOLUTION.items()}).passed
    assert "✅ failure_prevented: all 10" in capsys.readouterr().out


def test_failure_prevented_fails_on_the_stub_and_the_empty_answer(capsys):
    def stub():
        raise NotImplementedError()

    assert not check_failure_prevented(stub).passed
    assert NOT_IMPLEMENTED in capsys.readouterr().out

    def empty() -> dict[str, str]:
        return {}  # the student version's starting point

    result = check_failure_prevented(empty)
    assert (result.passed, result.case) == (False, "empty")


@pytest.mark.parametrize(
    ("answer", "case", "count"),
    [
        # offsets and stable hashing confused with each other
        ({**SOLUTION, "chunk-offsets": "F", "embed-stable": "E"}, "chunk-offsets", "2 of 10"),
        # the embedder record blamed for a restart, and the restart for the model switch
        ({**SOLUTION, "embed-stable": "H", "index-embedder": "F"}, "embed-stable", "2 of 10"),
        # ties blamed for stale answers, stale answers for ties, access for the model switch
        (
            {**SOLUTION, "doc-version": "G", "ties": "B", "index-embedder": "A"},
            "index-embedder",
            "3 of 10",
        ),
    ],
)
def test_failure_prevented_counts_wrong_answers_without_revealing_them(answer, case, count, capsys):
    result = check_failure_prevented(lambda: answer)
    out = capsys.readouterr().out
    assert not result.passed and result.case == case
    assert f"{count} answers are wrong" in out
    # The verdict never names the right failure, in any form.
    letter = SOLUTION[case]
    assert f"'{letter}'" not in out and f"-> {letter}" not in out
    assert FAILURES[letter] not in out


@pytest.mark.parametrize(
    ("answer", "case", "why"),
    [
        ([("ties", "G")], "shape", "expected a dict"),
        ({**SOLUTION, "speed": "A"}, "keys", "'speed' is not an invariant id"),
        ({k: v for k, v in SOLUTION.items() if k != "ties"}, "ties", "1 invariant(s) have no"),
        ({**SOLUTION, "abstain": "K"}, "abstain", "not a failure id"),
        ({**SOLUTION, "abstain": 4}, "abstain", "not a failure id"),
    ],
)
def test_failure_prevented_explains_a_malformed_answer(answer, case, why, capsys):
    result = check_failure_prevented(answer)
    assert (result.passed, result.case) == (False, case)
    assert why in capsys.readouterr().out


# --- wiring ------------------------------------------------------------------------------------


def test_checks_are_registered_under_unique_exercise_ids():
    assert checks.CHECKS["contract_chunks"] is check_chunk_violations
    assert checks.CHECKS["contract_failures"] is check_failure_prevented
    assert checks.check_chunk_violations is check_chunk_violations
    assert checks.reference_chunk_violations is reference_chunk_violations


def test_policy_fixture_repeats_a_sentence():
    assert POLICY.text.count("Ask HR.") == 2
