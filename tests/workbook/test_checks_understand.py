"""Notebook 01's checks: fail on the stub and on plausible wrong answers, pass on the solution."""

from __future__ import annotations

import re

import pytest

from raglab.generate.prompting import ABSTENTION
from raglab.workbook import checks
from raglab.workbook.checks import CHECKS
from raglab.workbook.checks.core import NOT_IMPLEMENTED
from raglab.workbook.checks.understand import (
    CITED_CASES,
    STEPS,
    UNKNOWN_STEP,
    describe,
    make_answer,
)

# These tests use the reference (and variations of it) as a learner's function.
pytestmark = pytest.mark.usefixtures("references_reachable")

# --- exercise 1: lifecycle_of -----------------------------------------------------------------

INDEXING = {
    "read each file and its front matter",
    "cut each document into chunks",
    "copy the document's tenant and groups onto each chunk",
    "embed every chunk",
    "record the embedder's name and version with the vectors",
    "delete the chunks of a document that was removed",
}


def lifecycle_of(step):
    """The solution, written independently of the check's answer key."""
    if step not in STEPS:
        raise ValueError(f"unknown step {step!r}")
    return "indexing" if step in INDEXING else "query"


def lifecycle_stub(step):
    raise NotImplementedError()


def embedding_is_indexing(step):
    """Every step that embeds is put in indexing, the question's embedding too."""
    return "indexing" if "embed" in step else lifecycle_of(step)


def access_is_indexing(step):
    """Applying access at query time mistaken for attaching it at indexing time."""
    if step == "keep only the chunks the asker may read":
        return "indexing"
    return lifecycle_of(step)


def capitalised(step):
    return lifecycle_of(step).capitalize()


def guesses_unknown_steps(step):
    return "indexing" if step in INDEXING else "query"


def test_lifecycle_key_splits_the_steps_in_two_halves():
    assert len(STEPS) == 12 and len(set(STEPS)) == 12
    assert set(STEPS) > INDEXING
    assert UNKNOWN_STEP not in STEPS


def test_lifecycle_passes_on_the_solution(capsys):
    result = checks.check_lifecycle_of(lifecycle_of)
    assert result.passed and result.case is None
    assert capsys.readouterr().out.startswith("✅ lifecycle_of: all 12 steps")


def test_lifecycle_stub_is_not_implemented(capsys):
    result = checks.check_lifecycle_of(lifecycle_stub)
    assert not result.passed
    assert NOT_IMPLEMENTED in capsys.readouterr().out


@pytest.mark.parametrize(
    "fn, case, wrong",
    [
        (embedding_is_indexing, "step: embed the question", 1),
        (access_is_indexing, "step: keep only the chunks the asker may read", 1),
        (lambda step: "query", "step: read each file and its front matter", 6),
    ],
)
def test_lifecycle_counts_and_names_the_first_wrong_step(fn, case, wrong, capsys):
    result = checks.check_lifecycle_of(fn)
    out = capsys.readouterr().out
    assert not result.passed and result.case == case
    assert f"{wrong} of 12 steps are in the wrong lifecycle" in out


def test_lifecycle_verdict_never_reveals_the_right_lifecycle(capsys):
    checks.check_lifecycle_of(embedding_is_indexing)
    out = capsys.readouterr().out
    assert "query" not in out.replace("for every question", "")
    assert "indexing" not in out


def test_lifecycle_return_values_must_be_exact(capsys):
    result = checks.check_lifecycle_of(capitalised)
    out = capsys.readouterr().out
    assert result.case == f"step: {STEPS[0]}"
    assert "got:      'Query'" in out


def test_lifecycle_unknown_step_must_be_refused(capsys):
    result = checks.check_lifecycle_of(guesses_unknown_steps)
    assert result.case == "unknown step"
    assert "expected: ValueError" in capsys.readouterr().out


def test_lifecycle_not_a_function(capsys):
    assert checks.check_lifecycle_of({"embed the question": "query"}).case == "callable"


# --- exercise 2: cited_doc_ids -----------------------------------------------------------------


def cited_doc_ids(answer):
    """The solution: citations by source number, each document once."""
    ids = []
    for citation in sorted(answer.citations, key=lambda c: c.n):
        doc_id = citation.hit.chunk.doc_id
        if doc_id not in ids:
            ids.append(doc_id)
    return ids


def cited_stub(answer):
    raise NotImplementedError()


def from_retrieved(answer):
    return list(dict.fromkeys(hit.chunk.doc_id for hit in answer.retrieved))


def in_order_of_appearance(answer):
    return list(dict.fromkeys(c.hit.chunk.doc_id for c in answer.citations))


def duplicates_kept(answer):
    return [c.hit.chunk.doc_id for c in sorted(answer.citations, key=lambda c: c.n)]


def alphabetical(answer):
    return sorted({c.hit.chunk.doc_id for c in answer.citations})


def parses_the_text(answer):
    """Reads markers from the text itself: a made-up [7] points past the sources."""
    numbers = sorted({int(n) for n in re.findall(r"\[(\d+)\]", answer.text)})
    return list(dict.fromkeys(answer.retrieved[n - 1].chunk.doc_id for n in numbers))


def as_tuple(answer):
    return tuple(cited_doc_ids(answer))


def test_cited_passes_on_the_solution(capsys):
    result = checks.check_cited_doc_ids(cited_doc_ids)
    assert result.passed
    assert capsys.readouterr().out == f"✅ cited_doc_ids: all {len(CITED_CASES)} cases pass\n"


def test_cited_stub_is_not_implemented(capsys):
    assert not checks.check_cited_doc_ids(cited_stub).passed
    assert NOT_IMPLEMENTED in capsys.readouterr().out


@pytest.mark.parametrize(
    "fn, case",
    [
        (from_retrieved, "abstention"),
        (in_order_of_appearance, "ordered by [n]"),
        (duplicates_kept, "one document, two sources"),
        (alphabetical, "ordered by [n]"),
        (parses_the_text, "a made-up marker"),
        (as_tuple, "one citation"),
    ],
)
def test_cited_names_the_failing_case(fn, case, capsys):
    result = checks.check_cited_doc_ids(fn)
    out = capsys.readouterr().out
    assert not result.passed and result.case == case
    assert f"case {case!r}" in out and "input:    cited_doc_ids(answer)" in out


def test_cited_failure_shows_the_answer_briefly(capsys):
    checks.check_cited_doc_ids(in_order_of_appearance)
    out = capsys.readouterr().out
    assert "citations  [3] it/vpn.md#2, [1] travel.md#1" in out
    assert "expected: ['travel.md', 'it/vpn.md']" in out
    assert "Traceback" not in out and "Chunk(" not in out


def test_cited_an_exception_is_one_line(capsys):
    checks.check_cited_doc_ids(parses_the_text)
    assert "got:      raised IndexError: tuple index out of range" in capsys.readouterr().out


def test_make_answer_builds_answers_like_the_engine():
    answer = make_answer("Band L3 [2]. Bonus [7]. Again [2][1].", ["a.md#0", "b.md#4"])
    assert [(c.n, c.hit.chunk.id) for c in answer.citations] == [(2, "b.md#4"), (1, "a.md#0")]
    assert answer.invalid_citations == (7,) and not answer.verified
    assert [hit.chunk.id for hit in answer.retrieved] == ["a.md#0", "b.md#4"]
    abstained = make_answer(ABSTENTION, ["a.md#0"])
    assert abstained.abstained and abstained.citations == ()


def test_describe_names_invalid_markers():
    lines = describe(make_answer("x [3].", ["a.md#0"]))
    assert lines == [
        "text       'x [3].'",
        "citations  none",
        "invalid    [3] (point at no source)",
        "retrieved  [1] a.md#0",
    ]


def test_exercise_ids_are_registered():
    assert CHECKS["understand_lifecycle"] is checks.check_lifecycle_of
    assert CHECKS["understand_cited_docs"] is checks.check_cited_doc_ids
