"""Citations: every [n] marker parsed, and checked against what was retrieved."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from raglab.generate import citations
from raglab.generate.citations import CitationReport, parse_citations, verify_citations
from raglab.generate.prompting import ABSTENTION
from raglab.records import Answer, Chunk, Citation, Hit


def hits(count: int) -> list[Hit]:
    return [Hit(Chunk(f"doc{i}.md", 0, f"text {i}", 0, 6), 1.0 / i) for i in range(1, count + 1)]


# --- parse_citations -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("No markers at all.", []),
        ("One [1].", [1]),
        ("Adjacent [1][2].", [1, 2]),
        ("A list [1, 2] and [3,4].", [1, 2, 3, 4]),
        ("Semicolons [1; 3].", [1, 3]),
        ("Spaces [ 2 ] inside.", [2]),
        ("Leading zero [02].", [2]),
        ("Zero [0] and negative [-1].", [0, -1]),
        ("Order of appearance [3] then [1].", [3, 1]),
        ("Duplicates kept [1] and [1, 1].", [1, 1, 1]),
        ("Big [99999999999999999999].", [99999999999999999999]),
    ],
)
def test_parse_citations_forms(text, expected):
    assert parse_citations(text) == expected


@pytest.mark.parametrize(
    "text", ["[1-3]", "[citation needed]", "[^1]", "[]", "[1,]", "[ , 2]", "[a1]", "(1)"]
)
def test_parse_citations_ignores_what_is_not_a_marker(text):
    assert parse_citations(text) == []


@pytest.mark.parametrize(
    "marker",
    [
        "\uff3b\uff12\uff3d",  # full-width brackets and digit
        "\u30102\u3011",  # lenticular brackets
        "\u30142\u3015",  # tortoise-shell brackets
        "[**2**]",
        "[`2`]",
        "[<sup>2</sup>]",
        "&#91;2&#93;",
        "\\[2\\]",
        "[2\u200b]",  # a zero-width space inside
        "[\u00b2]",  # a superscript two
    ],
)
def test_a_marker_is_read_as_a_reader_sees_it(marker):
    """What looks like [2] on screen cites source 2, and a made-up one is flagged."""
    assert parse_citations(f"Leave is 25 days {marker}.") == [2]
    report = verify_citations(f"Leave is 25 days {marker}.", hits(1))
    assert report.invalid == (2,) and not report.ok


def test_an_enormous_marker_is_flagged_not_a_crash():
    """A hostile model can write a number of thousands of digits: Python refuses to convert
    one that long (ValueError), and printing it would flood the screen."""
    answer = f"Leave is 25 days [1]. Also [{'9' * 5000}] and [-{'7' * 5000}]."
    largest = 10 ** getattr(citations, "MARKER_DIGITS", 0)
    assert parse_citations(answer) == [1, largest, -largest]
    report = verify_citations(answer, hits(2))
    assert [c.n for c in report.citations] == [1]
    assert report.invalid == (largest, -largest)


@given(st.lists(st.integers(min_value=-5, max_value=50), max_size=12))
def test_parse_citations_reads_back_markers_written_in_any_form(numbers):
    # Write the numbers as single markers, then as one list: both read back the same.
    singles = " word ".join(f"[{n}]" for n in numbers)
    grouped = f"claim [{', '.join(map(str, numbers))}]." if numbers else "claim."
    assert parse_citations(singles) == numbers
    assert parse_citations(grouped) == numbers


# --- verify_citations ------------------------------------------------------------------


def test_fabricated_citation_is_flagged():
    sources = hits(3)
    report = verify_citations("Leave is 25 days [1]. Made up claim [7].", sources)
    assert report.citations == (Citation(1, sources[0]),)
    assert report.invalid == (7,)
    assert not report.ok


def test_zero_and_negative_markers_are_invalid():
    report = verify_citations("A [0]. B [-1]. C [2].", hits(3))
    assert report.invalid == (0, -1)
    assert [c.n for c in report.citations] == [2]


def test_boundaries_last_source_valid_one_past_invalid():
    sources = hits(3)
    report = verify_citations("[3] [4]", sources)
    assert report.citations == (Citation(3, sources[2]),)
    assert report.invalid == (4,)


def test_citations_deduplicated_in_first_appearance_order():
    sources = hits(3)
    report = verify_citations("X [2][1]. Y [2]. Z [1, 3]. W [9] [9].", sources)
    assert [c.n for c in report.citations] == [2, 1, 3]
    assert [c.hit for c in report.citations] == [sources[1], sources[0], sources[2]]
    assert report.invalid == (9,)


def test_no_sources_makes_every_marker_invalid():
    report = verify_citations("Claim [1].", [])
    assert report == CitationReport((), (1,))
    assert not report.ok


def test_text_without_markers_is_ok_and_empty():
    for sources in (hits(0), hits(1), hits(2)):
        report = verify_citations("I can't answer that from the provided sources.", sources)
        assert report.ok and report.citations == () and report.invalid == ()


def test_report_is_frozen():
    report = verify_citations("[1]", hits(1))
    with pytest.raises(AttributeError):
        report.invalid = (5,)  # type: ignore[misc]


@given(
    st.lists(st.integers(min_value=-3, max_value=8), max_size=15),
    st.integers(min_value=0, max_value=5),
)
def test_every_marker_is_either_valid_or_invalid_never_both(numbers, n_sources):
    sources = hits(n_sources)
    report = verify_citations(" ".join(f"claim [{n}]." for n in numbers), sources)
    valid = [c.n for c in report.citations]
    assert set(valid) | set(report.invalid) == set(numbers)
    assert not set(valid) & set(report.invalid)
    assert all(1 <= n <= n_sources for n in valid)
    assert all(c.hit is sources[c.n - 1] for c in report.citations)
    assert len(valid) == len(set(valid)) and len(report.invalid) == len(set(report.invalid))
    assert report.ok == all(1 <= n <= n_sources for n in numbers)


def test_an_answer_is_verified_only_when_it_cites_retrieved_sources():
    hit = Hit(Chunk("leave.md", 0, "Leave is 25 days.", 0, 17), 1.0)
    cited = Answer("Leave is 25 days [1].", (Citation(1, hit),), (hit,))
    assert cited.verified
    assert not Answer("Leave is 25 days.", retrieved=(hit,)).verified  # cites nothing
    assert not Answer("", retrieved=(hit,)).verified  # says nothing
    assert not Answer(
        "25 [1], 30 [7].", (Citation(1, hit),), (hit,), invalid_citations=(7,)
    ).verified
    assert Answer(ABSTENTION, retrieved=(hit,), abstained=True).verified  # claims nothing
