"""The learner-facing checks: pass on the reference, fail on wrong code naming the case."""

from __future__ import annotations

import re
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raglab.ingest.chunking import chunk as reference_chunk
from raglab.workbook import checks
from raglab.workbook.checks import (
    CHECKS,
    CheckResult,
    check_chunk,
    check_split_sections,
    reference_sections,
)
from raglab.workbook.checks.chunking import CHUNK_CASES, SECTION_CASES, section_problem
from raglab.workbook.checks.core import NOT_IMPLEMENTED, show

# These tests use the reference (and variations of it) as a learner's function.
pytestmark = pytest.mark.usefixtures("references_reachable")


def _valid(size, overlap):
    if size <= 0 or overlap < 0 or overlap >= size:
        raise ValueError(f"bad size={size} or overlap={overlap}")


# --- plausible wrong chunkers --------------------------------------------------------------


def chunk_stub(text, size=800, overlap=100):
    raise NotImplementedError()


def chunk_tail_window(text, size=800, overlap=100):
    """Off by one: loops while the start is in the text, so a covered tail gets its own window."""
    _valid(size, overlap)
    return [text[i : i + size] for i in range(0, len(text), size - overlap)]


def chunk_strict_stop(text, size=800, overlap=100):
    """Off by one: stops only once a window goes *past* the end (> instead of >=)."""
    _valid(size, overlap)
    out, start = [], 0
    while start < len(text):
        out.append(text[start : start + size])
        if start + size > len(text):
            break
        start += size - overlap
    return out


def chunk_overlap_ignored(text, size=800, overlap=100):
    _valid(size, overlap)
    return [text[i : i + size] for i in range(0, len(text), size)]


def chunk_unvalidated(text, size=800, overlap=100):
    """Right windows, no checks: size=0 loops forever."""
    out, start = [], 0
    while start < len(text):
        out.append(text[start : start + size])
        if start + size >= len(text):
            break
        start += size - overlap
    return out


def chunk_half_validated(text, size=800, overlap=100):
    """Refuses a bad size but lets any overlap through."""
    if size <= 0:
        raise ValueError("size")
    return chunk_unvalidated(text, size, max(overlap, 0) if overlap < size else 0)


def chunk_tuple(text, size=800, overlap=100):
    return tuple(reference_chunk(text, size, overlap))


def chunk_typo(text, size=800, overlap=100):
    return [text[start:stop]]  # noqa: F821 - the learner's NameError


@pytest.mark.parametrize(
    ("fn", "case"),
    [
        (chunk_tail_window, "stopping rule"),
        (chunk_strict_stop, "stopping rule"),
        (chunk_overlap_ignored, "overlap"),
        (chunk_unvalidated, "size 0"),
        (chunk_half_validated, "negative overlap"),
        (chunk_tuple, "no overlap"),
        (chunk_typo, "no overlap"),
        (chunk_stub, "not implemented"),
    ],
)
def test_check_chunk_fails_wrong_code_on_the_expected_case(fn, case, capsys):
    result = check_chunk(fn)
    assert (result.passed, result.case) == (False, case)
    assert capsys.readouterr().out == result.message + "\n"


def test_check_chunk_passes_the_reference(capsys):
    result = check_chunk(reference_chunk)
    assert result == CheckResult("chunk", True, None, result.message)
    assert (
        capsys.readouterr().out
        == f"✅ chunk: all {len(CHUNK_CASES)} cases and 200 random texts pass\n"
    )


def test_a_failure_shows_case_input_expected_and_got(capsys):
    check_chunk(chunk_overlap_ignored)
    assert capsys.readouterr().out == (
        "❌ chunk: case 'overlap'\n"
        "   input:    chunk('abcdefghijk', size=4, overlap=1)\n"
        "   expected: ['abcd', 'defg', 'ghij', 'jk']\n"
        "   got:      ['abcd', 'efgh', 'ijk']\n"
    )


def test_a_stub_is_not_implemented_yet_and_errors_take_one_line(capsys):
    assert check_chunk(chunk_stub).message == f"❌ chunk: {NOT_IMPLEMENTED}"
    message = check_chunk(chunk_typo).message
    assert "got:      raised NameError: name 'start' is not defined" in message
    assert "Traceback" not in capsys.readouterr().out


def test_a_wrong_type_is_named(capsys):
    assert "why:      expected a list, got a tuple" in check_chunk(chunk_tuple).message


def test_an_endless_loop_is_stopped_and_the_tracer_restored():
    before = sys.gettrace()
    message = check_chunk(chunk_unvalidated).message
    assert "expected: ValueError" in message and "did not finish" in message
    assert sys.gettrace() is before


def test_an_endless_loop_cannot_be_swallowed_by_except_exception():
    def stubborn(text, size=800, overlap=100):
        while True:
            try:
                pass
            except Exception:
                pass

    assert "did not finish" in check_chunk(stubborn).message


def test_not_a_function():
    assert check_chunk(None).case == "callable"


def test_hand_worked_chunk_cases_agree_with_the_reference():
    for case in CHUNK_CASES:
        if isinstance(case.expected, type):
            with pytest.raises(case.expected):
                reference_chunk(*case.args, **case.kwargs)
        else:
            assert reference_chunk(*case.args, **case.kwargs) == case.expected, case.name


# --- split_sections -------------------------------------------------------------------------

HEADING = re.compile(r"(#{1,6}) (.*)")


def make_split_sections(*, keepends=True, fences=True, path=True, pop_all=True, skip_empty=True):
    """The notebook's solution, with one thing switched off to make a plausible wrong version."""

    def split_sections(text):
        sections, stack, heading, start, in_code, offset = [], [], "", 0, False, 0
        lines = text.splitlines(keepends=True) if keepends else text.splitlines()
        for line in lines:
            if fences and line.startswith("```"):
                in_code = not in_code
            match = None if in_code else HEADING.match(line)
            if match:
                if offset > start or not skip_empty:
                    sections.append((heading, start, offset))
                level = len(match.group(1))
                while stack and stack[-1][0] >= level:
                    stack.pop()
                    if not pop_all:
                        break
                stack.append((level, match.group(2).strip()))
                titles = [t for _, t in stack] if path else [stack[-1][1]]
                heading, start = " > ".join(titles), offset
            offset += len(line)
        if offset > start:
            sections.append((heading, start, offset))
        return sections

    return split_sections


def test_check_split_sections_passes_the_reference_and_a_learners_solution(capsys):
    assert check_split_sections(reference_sections).passed
    assert check_split_sections(make_split_sections()).passed
    assert (
        capsys.readouterr().out.count("✅ split_sections: all 9 cases and 200 random texts pass")
        == 2
    )


@pytest.mark.parametrize(
    ("options", "case", "why"),
    [
        (
            {"keepends": False},
            "no headings",
            "the sections end at 10, but the text has 11 characters",
        ),
        ({"skip_empty": False}, "one heading", "section 0 is empty or backwards (start=0, end=0)"),
        (
            {"path": False},
            "heading path",
            "section 1 should be ('Leave > Carry-over', 18, 43), not ('Carry-over', 18, 43)",
        ),
        ({"pop_all": False}, "heading path", "section 3 should be ('Travel', 66, 83)"),
        (
            {"fences": False},
            "code block",
            "section 0 should be ('Install', 0, 30), not ('Install', 0, 14)",
        ),
    ],
)
def test_check_split_sections_fails_wrong_code_on_the_expected_case(options, case, why, capsys):
    result = check_split_sections(make_split_sections(**options))
    assert (result.passed, result.case) == (False, case)
    assert f"why:      {why}" in capsys.readouterr().out


def test_check_split_sections_on_a_stub_and_on_a_wrong_shape():
    def stub(text):
        raise NotImplementedError()

    assert check_split_sections(stub).case == "not implemented"
    result = check_split_sections(lambda text: {"": (0, len(text))})
    assert (
        result.case == "empty text"
        and "expected a list of (heading, start, end), got a dict" in result.message
    )


def test_hand_worked_section_cases_agree_with_the_reference():
    for case in SECTION_CASES:
        assert reference_sections(*case.args) == case.expected, case.name


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="#ab \n`"))
def test_reference_sections_cover_any_text_exactly(text):
    assert section_problem(text, reference_sections(text)) is None


def test_section_problem_names_gaps_and_overlaps():
    assert section_problem("abcd", [("", 0, 2), ("", 3, 4)]) == (
        "section 1 starts at 3, but section 0 ended at 2: "
        "sections must cover the text with no gap or overlap"
    )
    assert section_problem("ab", [("", 1, 2)]).startswith(
        "section 0 starts at 1, but the text starts at 0"
    )
    assert (
        section_problem("ab", [("", 0, 2, 9)])
        == "item 0 is ('', 0, 2, 9), not (heading, start, end)"
    )


# --- the result and the registry ------------------------------------------------------------


def test_check_result_is_frozen_with_a_short_repr():
    result = CheckResult("chunk", False, "overlap", "❌ a long message\n" * 20)
    assert repr(result) == "CheckResult(name='chunk', passed=False, case='overlap')"
    assert result._ipython_display_() is None  # shows nothing as a cell's value
    with pytest.raises(AttributeError):
        result.passed = True


def test_registry_names_every_exercise():
    assert CHECKS["chunk"] is check_chunk
    assert CHECKS["split_sections"] is check_split_sections
    assert checks.check_chunk_sections is check_split_sections


def test_show_cuts_long_values():
    assert show("ab") == "'ab'"
    assert show(["x" * 200]) == "['" + "x" * 40 + "…' (200 chars)]"
    assert show(("a",)) == "('a',)"


def test_exercise_ids_are_unique_across_the_workbook():
    # CHECKS merges every notebook's registry; a repeated id would silently replace a check.
    import importlib
    import pkgutil

    names = [m.name for m in pkgutil.iter_modules(checks.__path__) if m.name != "core"]
    registries = [
        importlib.import_module(f"raglab.workbook.checks.{name}").CHECKS for name in names
    ]
    assert len(names) >= 2
    assert sum(len(registry) for registry in registries) == len(CHECKS)
