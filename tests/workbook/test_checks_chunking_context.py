"""Notebook 04's context-header exercise: its check on hand-worked cases and hidden documents."""

from __future__ import annotations

import pytest

from raglab.workbook.checks import check_context_header, reference_context_header
from raglab.workbook.checks.chunking import HIDDEN_DOCUMENTS, hidden_document_cases

pytestmark = pytest.mark.usefixtures("references_reachable")


def learners_header(title, heading, summary):
    """A solution written from the exercise's words alone."""
    path = heading
    if title and heading != title and not heading.startswith(title + " > "):
        path = f"{title} > {heading}" if heading else title
    lines = [line for line in (path, summary) if line]
    return "\n".join(lines)


def test_the_check_passes_the_reference_and_a_learners_solution(capsys):
    assert check_context_header(reference_context_header).passed
    assert check_context_header(learners_header).passed
    assert "✅ context_header: all 8 cases and the 11 chunks of hidden documents pass" in (
        capsys.readouterr().out
    )


def always_joined(title, heading, summary):
    return " > ".join(p for p in (title, heading) if p) + "\n" + summary


def title_always_first(title, heading, summary):
    path = " > ".join(p for p in (title, heading) if p)
    return "\n".join(p for p in (path, summary) if p)


def prefix_without_separator(title, heading, summary):
    path = heading if heading.startswith(title) else " > ".join(p for p in (title, heading) if p)
    return "\n".join(p for p in (path, summary) if p)


def hidden_only_wrong(title, heading, summary):
    """Right on every hand-worked case, wrong on the hidden documents' chunks (a summary
    of a single word would be dropped, say): the hidden cases still catch a shortcut."""
    if summary.startswith("Claims"):
        summary = ""
    return reference_context_header(title, heading, summary)


@pytest.mark.parametrize(
    ("fn", "case"),
    [
        (always_joined, "nothing"),  # an empty summary still leaves its line break
        (title_always_first, "heading is the title"),
        (prefix_without_separator, "a longer word is not the title"),
        (hidden_only_wrong, "hidden document fin/claims.md, chunk 1"),
    ],
)
def test_the_check_fails_typical_mistakes_naming_the_case(fn, case, capsys):
    result = check_context_header(fn)
    assert not result.passed and result.case == case
    assert f"case {case!r}" in capsys.readouterr().out


def test_the_hidden_cases_are_the_contextual_chunkers_own_headers():
    cases = hidden_document_cases()
    assert len(cases) == 11 and {doc.id for doc in HIDDEN_DOCUMENTS} == {
        c.name.split()[2].rstrip(",") for c in cases
    }
    for case in cases:
        assert reference_context_header(*case.args) == case.expected
