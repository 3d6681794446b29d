from dataclasses import replace

import pytest

from raglab.ingest.chunking import Chunker, split_sections
from raglab.ingest.contextual import SUMMARY_CHARS, context_header, document_summary, with_context
from raglab.records import Chunk, Document

LEAVE = Document(
    id="hr/leave.md",
    title="Leave policy",
    text=(
        "# Leave policy\n\nStaff get 25 days of paid leave a year.\n\n"
        "## Approval\n\nRequests go through the portal.\n\n"
        "It must be approved by your manager within 5 days.\n"
    ),
)


@pytest.mark.parametrize("kind", ["chars", "structure"])
def test_contextual_chunks_keep_their_text_and_offsets(kind):
    plain = Chunker(kind=kind, size=60, overlap=10)
    contextual = replace(plain, contextual=True)
    before, after = plain.split(LEAVE), contextual.split(LEAVE)
    assert [replace(c, context="") for c in after] == before
    for chunk in after:
        assert LEAVE.text[chunk.start : chunk.end] == chunk.text
        assert chunk.indexed_text == f"{chunk.context}\n\n{chunk.text}"


def test_the_orphaned_sentence_gets_its_subject_back():
    chunks = Chunker(size=60, overlap=10, contextual=True).split(LEAVE)
    orphan = next(c for c in chunks if c.text.startswith("It must be approved"))
    assert orphan.context == ("Leave policy > Approval\nStaff get 25 days of paid leave a year.")
    assert "leave" not in orphan.text.lower() and "leave" in orphan.indexed_text.lower()


def test_the_character_chunker_gets_the_heading_path_where_each_chunk_starts():
    chunks = Chunker(kind="chars", size=50, overlap=0, contextual=True).split(LEAVE)
    approval = LEAVE.text.index("## Approval")
    for chunk in chunks:
        assert chunk.context.startswith(
            "Leave policy > Approval" if chunk.start >= approval else "Leave policy"
        )


def test_the_summary_is_left_out_of_a_chunk_that_holds_it():
    [first, *_] = Chunker(size=60, overlap=10, contextual=True).split(LEAVE)
    assert "Staff get 25 days" in first.text and first.context == "Leave policy"


def test_a_document_without_title_headings_or_prose_gets_no_header():
    doc = Document(id="a.md", text="Ok.")
    [chunk] = Chunker(contextual=True).split(doc)
    assert chunk.context == "" and chunk.indexed_text == "Ok."


def test_summary_is_the_first_sentence_of_prose_cut_at_a_word():
    assert document_summary("# T\n\n```\ncode here now.\n```\nHi.\n\nA real first one. Next.") == (
        "A real first one."
    )
    long = "word " * 100 + "end."
    summary = document_summary(long)
    assert len(summary) <= SUMMARY_CHARS and summary.endswith("word\u2026")


@pytest.mark.parametrize(
    ("title", "heading", "summary", "expected"),
    [
        ("Leave", "Approval", "S.", "Leave > Approval\nS."),
        ("Leave", "Leave", "", "Leave"),
        ("Leave", "Leave > Approval", "", "Leave > Approval"),
        ("Leave", "Leaves > Approval", "", "Leave > Leaves > Approval"),
        ("", "Approval", "S.", "Approval\nS."),
        ("Leave", "", "", "Leave"),
        ("", "", "S.", "S."),
    ],
)
def test_context_header(title, heading, summary, expected):
    assert context_header(title, heading, summary) == expected


def test_with_context_before_any_heading():
    doc = Document(id="a.md", text="Intro text here.\n\n# Later\n\nMore words here.", title="")
    chunks = [Chunk("a.md", 0, "Intro text here.", 0, 16)]
    [chunk] = with_context(doc, chunks, split_sections(doc.text))
    assert chunk.context == ""


def test_contextual_is_recorded_and_validated():
    assert Chunker(contextual=True).params()["contextual"] is True
    assert "contextual" not in Chunker().params()  # indexes made before the option stay current
    with pytest.raises(ValueError, match="contextual must be True or False"):
        Chunker(contextual="yes")  # type: ignore[arg-type]
