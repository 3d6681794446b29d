"""Notebook 03's checks: fail on the stub and on plausible wrong answers, pass on the solution."""

from __future__ import annotations

import doctest
import json
import re
from pathlib import Path

import numpy as np
import pytest

from raglab.records import Chunk, Hit, Principal
from raglab.retrieve.vectors import top_k
from raglab.store.access import can_read
from raglab.workbook import checks
from raglab.workbook.checks import CHECKS, design
from raglab.workbook.checks.core import NOT_IMPLEMENTED
from raglab.workbook.checks.design import (
    PROPOSED_DESIGN,
    WordCountEmbedder,
    check_design_flaws,
    check_search_readable,
    crafted_cases,
    random_search_cases,
    reference_search_readable,
)

# These tests use the reference (and variations of it) as a learner's function.
pytestmark = pytest.mark.usefixtures("references_reachable")

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "03_design.ipynb"
SOLUTION = {"D2", "D4", "D5", "D7", "D8"}


def test_doctests_pass():
    assert doctest.testmod(design).failed == 0


def test_the_checks_are_registered_under_their_exercise_ids():
    assert CHECKS["design_flaws"] is check_design_flaws
    assert CHECKS["search_readable"] is check_search_readable
    assert checks.check_design_flaws is check_design_flaws
    assert set(design.__all__) <= set(dir(checks))


# --- exercise 1: spot the flaws ---------------------------------------------------------------


def test_the_solution_passes(capsys):
    result = check_design_flaws(SOLUTION)
    assert result.passed and result.case is None
    assert "all 10 statements judged right" in capsys.readouterr().out


@pytest.mark.parametrize("answer", [frozenset(SOLUTION), sorted(SOLUTION), tuple(SOLUTION)])
def test_any_collection_of_ids_is_accepted(answer):
    assert check_design_flaws(answer).passed


def test_the_stub_fails():
    # The student cell sets FLAWS = set() before its `raise NotImplementedError()`.
    result = check_design_flaws(set())
    assert not result.passed and result.case == "empty"
    assert check_design_flaws(None).message.endswith(NOT_IMPLEMENTED)


@pytest.mark.parametrize(
    ("answer", "case", "words"),
    [
        ("D2", "not a set of ids", "one string"),
        (5, "not a set of ids", "got a int"),
        ({2, 4}, "not a set of ids", "must be a string"),
        ({"D2", "D11"}, "unknown id", "'D11' is not a statement"),
        ({"d2"}, "unknown id", "'d2' is not a statement"),
    ],
)
def test_malformed_answers_say_what_is_wrong(answer, case, words):
    result = check_design_flaws(answer)
    assert not result.passed and result.case == case
    assert words in result.message


@pytest.mark.parametrize(
    ("answer", "missing", "flagged", "section"),
    [
        # Sees the access problems but trusts the configuration file for the embedder.
        (SOLUTION - {"D8"}, 1, 0, "section 1: the store's meta"),
        # Flags everything about access, including the sound metadata statement D1.
        (SOLUTION | {"D1"}, 0, 1, "section 2: who may read a chunk"),
        # Believes a shared BM25 is harmless and that the model can enforce access.
        (SOLUTION - {"D4", "D5"}, 2, 0, "section 2: who may read a chunk"),
        # Everything flagged.
        ({s.id for s in PROPOSED_DESIGN}, 0, 5, "section 2: who may read a chunk"),
    ],
)
def test_a_wrong_judgement_names_counts_and_a_section_not_the_statement(
    answer, missing, flagged, section
):
    result = check_design_flaws(answer)
    assert not result.passed and result.case == "judgement"
    assert f"{missing} flawed statement" in result.message
    assert f"{flagged} sound statement" in result.message
    assert f"re-read {section}" in result.message
    # The verdict never names a statement: that would be the answer.
    assert not re.search(r"\bD\d+\b", result.message)


def test_half_of_the_statements_are_flawed_and_each_points_at_a_principle():
    assert [s.id for s in PROPOSED_DESIGN] == [f"D{i}" for i in range(1, 11)]
    assert {s.id for s in PROPOSED_DESIGN if s.flawed} == SOLUTION
    assert all(s.principle in design.PRINCIPLES for s in PROPOSED_DESIGN)


def test_the_notebook_shows_exactly_the_statements_the_check_judges():
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    markdown = "\n".join(
        "".join(cell["source"]) for cell in nb["cells"] if cell["cell_type"] == "markdown"
    )
    listed = re.findall(r"^- \*\*(D\d+)\.\*\* (.+)$", markdown, flags=re.MULTILINE)
    assert listed == [(s.id, s.text) for s in PROPOSED_DESIGN]


# --- exercise 2: search eligible-first --------------------------------------------------------


def stub(question, principal, chunks, vectors, embedder, k):
    raise NotImplementedError()


def filter_after(question, principal, chunks, vectors, embedder, k):
    """The flawed design: top-k over every chunk, then the filter."""
    rows, scores = top_k(embedder.embed([question])[0], vectors, k)
    return [
        Hit(chunks[r], float(s)) for r, s in zip(rows, scores) if can_read(principal, chunks[r])
    ]


def positions_not_rows(question, principal, chunks, vectors, embedder, k):
    """Filters first, but reads top_k's positions as rows of the full list."""
    readable = [i for i, c in enumerate(chunks) if can_read(principal, c)]
    if not readable:
        return []
    rows, scores = top_k(embedder.embed([question])[0], vectors[readable], k)
    return [Hit(chunks[r], float(s)) for r, s in zip(rows, scores)]


def later_row_wins_ties(question, principal, chunks, vectors, embedder, k):
    """Scores right, but sorts equal scores by the higher row."""
    readable = [i for i, c in enumerate(chunks) if can_read(principal, c)]
    query = embedder.embed([question])[0]
    scored = sorted(((float(vectors[i] @ query), i) for i in readable), reverse=True)[:k]
    return [Hit(chunks[i], s) for s, i in scored]


def empty_matrix_crash(question, principal, chunks, vectors, embedder, k):
    """Builds the readable matrix row by row: a 1-D empty array when nothing is readable."""
    readable = [i for i, c in enumerate(chunks) if can_read(principal, c)]
    rows, scores = top_k(embedder.embed([question])[0], np.array([vectors[i] for i in readable]), k)
    return [Hit(chunks[readable[r]], float(s)) for r, s in zip(rows, scores)]


def tenant_only(question, principal, chunks, vectors, embedder, k):
    """Checks the tenant but forgets the groups."""
    readable = [i for i, c in enumerate(chunks) if c.tenant == principal.tenant]
    if not readable:
        return []
    rows, scores = top_k(embedder.embed([question])[0], vectors[readable], k)
    return [Hit(chunks[readable[r]], float(s)) for r, s in zip(rows, scores)]


def as_tuple(*args):
    return tuple(reference_search_readable(*args))


def test_the_reference_passes(capsys):
    result = check_search_readable(reference_search_readable)
    assert result.passed
    assert "all 11 cases and 100 random stores pass" in capsys.readouterr().out


def test_the_stub_fails_as_not_implemented():
    result = check_search_readable(stub)
    assert not result.passed and result.message.endswith(NOT_IMPLEMENTED)


def test_a_value_instead_of_a_function_fails():
    assert check_search_readable(None).case == "callable"


@pytest.mark.parametrize(
    ("fn", "case", "why"),
    [
        (filter_after, "filter before the top-k", "only 0 hits, but 2 readable chunks"),
        (positions_not_rows, "filter before the top-k", "may not read"),
        (later_row_wins_ties, "tie order", "equal scores come in store order"),
        (empty_matrix_crash, "nothing readable", "raised ValueError"),
        (tenant_only, "restricted group, not a member", "may not read"),
        (as_tuple, "filter before the top-k", "expected a list of Hit, got a tuple"),
    ],
)
def test_plausible_wrong_searches_fail_on_the_case_that_shows_why(fn, case, why):
    result = check_search_readable(fn)
    assert not result.passed and result.case == case
    assert why in result.message
    assert "Traceback" not in result.message


def test_a_failure_shows_the_input_and_both_results(capsys):
    check_search_readable(filter_after)
    out = capsys.readouterr().out
    assert (
        "search_readable('refund days', Principal('ann', 'acme'), chunks, vectors, embedder, k=2)"
        in out
    )
    assert "globex/returns.md#0 [globex] 'refund days refund'" in out
    assert "expected: [('acme/leave.md#0', 0.500), ('acme/expenses.md#0', 0.354)]" in out
    assert "got:      []" in out


def test_filter_after_differs_from_the_reference_on_every_crafted_store_it_targets():
    differs = {
        case.name
        for case in crafted_cases()
        if filter_after(*case.args()) != reference_search_readable(*case.args())
    }
    assert {"filter before the top-k", "fewer than k readable", "tie order"} <= differs


def test_random_cases_are_seeded_and_full_of_exact_ties():
    first, again = random_search_cases(20), random_search_cases(20)
    assert [c.args()[:2] for c in first] == [c.args()[:2] for c in again]
    assert [c.chunks for c in first] == [c.chunks for c in again]
    ties = 0
    for case in random_search_cases():
        scores = [h.score for h in reference_search_readable(*case.args())]
        ties += len(scores) - len(set(scores))
    assert ties > 20


def test_word_count_embedder():
    e = WordCountEmbedder(("refund", "leave"))
    rows = e.embed(["Refund leave refund", "nothing here", "leave"])
    assert rows.dtype == np.float32 and rows.shape == (3, 2)
    np.testing.assert_allclose(rows[0], [2 / 5**0.5, 1 / 5**0.5], rtol=1e-6)
    assert not rows[1].any()  # no vocabulary word: a zero row
    assert rows[2].tolist() == [0.0, 1.0]
    with pytest.raises(TypeError, match=r"not one string .*embed\(\[text\]\)"):
        e.embed("refund")


def test_reference_on_a_hand_worked_store():
    e = WordCountEmbedder(("refund", "leave"))
    chunks = [
        Chunk("globex/r.md", 0, "refund", 0, 6, tenant="globex"),
        Chunk("acme/a.md", 0, "leave", 0, 5, tenant="acme"),
        Chunk("acme/b.md", 0, "refund leave", 0, 12, tenant="acme"),
        Chunk("acme/hr.md", 0, "refund", 0, 6, tenant="acme", groups=("hr",)),
    ]
    vectors = e.embed([c.text for c in chunks])
    ann, hana = Principal("ann", "acme"), Principal("hana", "acme", {"hr"})
    found = reference_search_readable("refund", ann, chunks, vectors, e, 5)
    assert [(h.chunk.id, round(h.score, 4)) for h in found] == [
        ("acme/b.md#0", 0.7071),
        ("acme/a.md#0", 0.0),
    ]
    assert [
        h.chunk.id for h in reference_search_readable("refund", hana, chunks, vectors, e, 1)
    ] == ["acme/hr.md#0"]
    assert (
        reference_search_readable("refund", Principal("x", "initech"), chunks, vectors, e, 3) == []
    )
