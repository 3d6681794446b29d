"""Tests for raglab.ingest.chunking: the seed's chunk() and the Chunker that makes Chunk records."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raglab.ingest.chunking import Chunker, chunk
from raglab.records import Chunk, Document

# ---------------------------------------------------------------------------
# chunk(): the contract examples
# ---------------------------------------------------------------------------


def test_windows_start_every_size_minus_overlap():
    assert chunk("abcdefghij", size=4, overlap=1) == ["abcd", "defg", "ghij"]


def test_stops_after_the_window_that_reaches_the_end():
    # "defg" ends exactly at the end of the text: no extra window "g" after it.
    assert chunk("abcdefg", size=4, overlap=1) == ["abcd", "defg"]
    # The last window may be shorter than size.
    assert chunk("abcdefgh", size=4, overlap=1) == ["abcd", "defg", "gh"]


def test_text_shorter_than_size_is_one_chunk():
    assert chunk("abc", size=800, overlap=100) == ["abc"]
    assert chunk("abc") == ["abc"]


def test_text_shorter_than_overlap_is_one_chunk():
    assert chunk("ab", size=10, overlap=5) == ["ab"]


def test_no_overlap():
    assert chunk("abcdef", size=2, overlap=0) == ["ab", "cd", "ef"]


def test_empty_text_gives_no_chunks():
    assert chunk("", size=4, overlap=1) == []


def test_defaults_are_800_and_100():
    text = "x" * 1500
    assert [len(c) for c in chunk(text)] == [800, 800]  # starts 0 and 700; 700+800 >= 1500


@pytest.mark.parametrize(
    ("size", "overlap", "message"),
    [
        (0, 0, r"size must be an integer >= 1 \(got size=0\)"),
        (-5, 1, r"size must be an integer >= 1 \(got size=-5\)"),
        (10, -1, r"overlap must be an integer >= 0 \(got overlap=-1\)"),
        (800, 800, r"overlap must be < size \(got overlap=800, size=800\)"),
        (10, 11, r"overlap must be < size \(got overlap=11, size=10\)"),
    ],
)
def test_bad_size_or_overlap_is_a_clear_value_error(size, overlap, message):
    with pytest.raises(ValueError, match=message):
        chunk("some text", size=size, overlap=overlap)


def test_bad_settings_are_refused_even_for_empty_text():
    with pytest.raises(ValueError, match="overlap must be"):
        chunk("", size=5, overlap=5)


def test_non_integer_size_is_a_type_error():
    with pytest.raises(TypeError):
        chunk("some text", size=4.5, overlap=1)


# ---------------------------------------------------------------------------
# chunk(): properties
# ---------------------------------------------------------------------------

windows = st.integers(min_value=1, max_value=40).flatmap(
    lambda size: st.tuples(st.just(size), st.integers(min_value=0, max_value=size - 1))
)


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=200), window=windows)
def test_chunk_properties(text, window):
    size, overlap = window
    chunks = chunk(text, size=size, overlap=overlap)
    assert chunks == chunk(text, size=size, overlap=overlap)  # deterministic
    if not text:
        assert chunks == []
        return
    assert all(0 < len(c) <= size for c in chunks)
    assert all(len(c) == size for c in chunks[:-1])  # only the last may be short
    for left, right in itertools.pairwise(chunks):
        # Consecutive windows share exactly `overlap` characters.
        assert left[len(left) - overlap :] == right[:overlap]
    # Dropping each later window's overlap reassembles the text.
    assert chunks[0] + "".join(c[overlap:] for c in chunks[1:]) == text
    # Stopping rule: only the last window reaches the end of the text.
    step = size - overlap
    assert [i * step + len(c) >= len(text) for i, c in enumerate(chunks)] == [False] * (
        len(chunks) - 1
    ) + [True]


# ---------------------------------------------------------------------------
# Chunker: settings
# ---------------------------------------------------------------------------


def test_chunker_defaults():
    chunker = Chunker()
    assert (chunker.kind, chunker.size, chunker.overlap) == ("structure", 800, 100)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"kind": "words"},
            r"kind must be one of 'chars', 'structure', 'semantic' \(got kind='words'\)",
        ),
        ({"size": 0}, r"size must be an integer >= 1 \(got size=0\)"),
        (
            {"size": 100, "overlap": 100},
            r"overlap must be < size \(got overlap=100, size=100\)",
        ),
        ({"overlap": -1}, r"overlap must be an integer >= 0 \(got overlap=-1\)"),
    ],
)
def test_chunker_is_validated_at_construction(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Chunker(**kwargs)


def test_chunker_is_frozen():
    with pytest.raises(AttributeError):
        Chunker().size = 10  # type: ignore[misc]


def test_params_are_json_safe_and_change_with_the_settings():
    params = Chunker("chars", 300, 30).params()
    assert json.loads(json.dumps(params)) == params
    assert params["kind"] == "chars" and params["size"] == 300 and params["overlap"] == 30
    assert Chunker().params() != Chunker(size=500).params()
    assert Chunker().params() != Chunker(kind="chars").params()


# ---------------------------------------------------------------------------
# Chunker: records and offsets
# ---------------------------------------------------------------------------


def _doc(text: str) -> Document:
    return Document(
        id="handbook/leave.md", text=text, title="Leave", tenant="acme", groups=("hr",), version="3"
    )


def test_chunks_carry_the_document_metadata():
    chunks = Chunker("structure", 40, 5).split(_doc("# Leave\n\nTen days.\n\n## Sick\n\nAsk HR."))
    assert [c.index for c in chunks] == list(range(len(chunks)))
    for c in chunks:
        assert isinstance(c, Chunk)
        assert (c.doc_id, c.title, c.tenant, c.groups, c.doc_version) == (
            "handbook/leave.md",
            "Leave",
            "acme",
            ("hr",),
            "3",
        )
    assert chunks[1].id == "handbook/leave.md#1"


def test_chars_kind_is_the_seed_chunker_with_offsets():
    text = "abcdefghij"
    chunks = Chunker("chars", 4, 1).split(_doc(text))
    assert [c.text for c in chunks] == chunk(text, 4, 1)
    assert [(c.start, c.end) for c in chunks] == [(0, 4), (3, 7), (6, 10)]
    assert all(c.heading == "" for c in chunks)


def test_chars_kind_skips_whitespace_only_windows():
    text = "abcd" + " " * 8 + "efgh"
    chunks = Chunker("chars", 4, 0).split(_doc(text))
    assert [c.text for c in chunks] == ["abcd", "efgh"]
    assert [c.index for c in chunks] == [0, 1]
    assert (chunks[1].start, chunks[1].end) == (12, 16)


def test_offsets_are_right_for_repeated_text():
    # A `find`-based chunker would give the first copy's offsets to every copy.
    text = "Same words here.\n\nSame words here.\n\nSame words here."
    chunks = Chunker("structure", 20, 0).split(_doc(text))
    assert [c.text for c in chunks] == ["Same words here."] * 3
    assert [c.start for c in chunks] == [0, 18, 36]


@pytest.mark.parametrize("kind", ["chars", "structure"])
def test_empty_and_blank_documents_give_no_chunks(kind):
    assert Chunker(kind, 10, 2).split(_doc("")) == []
    assert Chunker(kind, 10, 2).split(_doc(" \n\n \t\n")) == []


# ---------------------------------------------------------------------------
# Chunker(kind="structure"): headings, paragraphs, sentences
# ---------------------------------------------------------------------------

HANDBOOK = """Welcome to the handbook.

# Leave policy

Everyone gets 25 days of leave a year.

## Carry-over

Up to five days carry over to the next year.

## Sick leave ##

Tell your manager before ten o'clock.

# Expenses

```bash
# this is a shell comment, not a heading
echo receipts
```

Keep every receipt.
"""


def test_headings_give_each_chunk_its_section_path():
    chunks = Chunker("structure", 200, 20).split(_doc(HANDBOOK))
    assert [(c.heading, c.text) for c in chunks] == [
        ("", "Welcome to the handbook."),
        ("Leave policy", "# Leave policy\n\nEveryone gets 25 days of leave a year."),
        (
            "Leave policy > Carry-over",
            "## Carry-over\n\nUp to five days carry over to the next year.",
        ),
        ("Leave policy > Sick leave", "## Sick leave ##\n\nTell your manager before ten o'clock."),
        (
            "Expenses",
            (
                "# Expenses\n\n```bash\n# this is a shell comment, not a heading\n"
                "echo receipts\n```\n\nKeep every receipt."
            ),
        ),
    ]


def test_deeper_heading_levels_nest_and_shallower_ones_close_them():
    text = "# A\n\n### C\n\nx\n\n## B\n\ny\n\n# D\n\nz"
    headings = [c.heading for c in Chunker("structure", 8, 0).split(_doc(text))]
    assert headings == ["A", "A > C", "A > B", "D"]


def test_not_a_heading_without_a_space_or_with_seven_hashes():
    text = "#hashtag is text\n\n####### seven is text"
    chunks = Chunker("structure", 100, 0).split(_doc(text))
    assert [c.heading for c in chunks] == [""]


def test_paragraphs_are_packed_whole_up_to_size():
    text = "aaaa aaaa.\n\nbbbb bbbb.\n\ncccc cccc."  # paragraphs of 10 characters
    chunks = Chunker("structure", 22, 0).split(_doc(text))
    assert [c.text for c in chunks] == ["aaaa aaaa.\n\nbbbb bbbb.", "cccc cccc."]


def test_a_long_paragraph_is_cut_at_sentence_ends():
    text = "One two three. Four five six! Seven eight nine? Ten."
    chunks = Chunker("structure", 30, 5).split(_doc(text))
    assert [c.text for c in chunks] == ["One two three. Four five six!", "Seven eight nine? Ten."]


def test_a_long_sentence_falls_back_to_overlapping_windows():
    text = "abcdefghijklmnopqrstuvwxyz"
    chunks = Chunker("structure", 10, 3).split(_doc(text))
    assert [c.text for c in chunks] == chunk(text, 10, 3)
    assert [c.start for c in chunks] == [0, 7, 14, 21]


def test_whitespace_around_chunks_is_trimmed_with_exact_offsets():
    text = "   indented paragraph   \n\n\n  \n  next one  "
    chunks = Chunker("structure", 20, 0).split(_doc(text))
    assert [c.text for c in chunks] == ["indented paragraph", "next one"]
    for c in chunks:
        assert text[c.start : c.end] == c.text


def test_windows_line_endings_separate_paragraphs():
    text = "First paragraph.\r\n\r\nSecond paragraph."
    chunks = Chunker("structure", 20, 0).split(_doc(text))
    assert [c.text for c in chunks] == ["First paragraph.", "Second paragraph."]


# ---------------------------------------------------------------------------
# Chunker: properties over markdown-like text
# ---------------------------------------------------------------------------

# Few letters and many structural characters, so headings, blank lines, sentence ends
# and fences turn up often.
markdown_like = st.text(alphabet="ab #.!?\n\t`~é", max_size=400)


def _check_chunks(text: str, chunks: list[Chunk], size: int) -> None:
    covered = [False] * len(text)
    for i, c in enumerate(chunks):
        assert c.index == i
        assert text[c.start : c.end] == c.text  # the offset invariant
        assert 0 < len(c.text) <= size
        assert not c.text.isspace()
        for j in range(c.start, c.end):
            covered[j] = True
    # Every visible character of the document is in some chunk.
    assert all(covered[j] for j, ch in enumerate(text) if not ch.isspace())


@settings(max_examples=300, deadline=None)
@given(text=markdown_like, window=windows, kind=st.sampled_from(["chars", "structure"]))
def test_chunker_properties(text, window, kind):
    size, overlap = window
    chunker = Chunker(kind, size, overlap)
    chunks = chunker.split(_doc(text))
    _check_chunks(text, chunks, size)
    assert chunks == chunker.split(_doc(text))  # deterministic
    if kind == "structure":
        # Chunks come in document order.
        assert [c.start for c in chunks] == sorted(c.start for c in chunks)


def test_trimmed_windows_never_nest():
    # " a" and "aa" (windows 1 and 2 of "a aa") both start at the second "a" once trimmed:
    # the first would lie inside the second and repeat its text.
    chunks = Chunker(kind="structure", size=2, overlap=1).split(Document("d.md", "a aa"))
    assert [(c.start, c.end, c.text) for c in chunks] == [(0, 1, "a"), (2, 4, "aa")]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab .\n#", max_size=80), st.integers(1, 30), st.data())
def test_structure_chunks_start_strictly_in_order(text, size, data):
    overlap = data.draw(st.integers(0, size - 1))
    chunks = Chunker(kind="structure", size=size, overlap=overlap).split(Document("d.md", text))
    starts = [c.start for c in chunks]
    assert starts == sorted(set(starts))
    assert [c.index for c in chunks] == list(range(len(chunks)))
