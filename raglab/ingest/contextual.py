"""Contextual chunks: a short header about the document, read by retrieval before each chunk.

Cut from its document, "It must be approved by your manager within 5 days." has lost its
subject: approved, what? Neither the embedder nor BM25 can tell that it is about leave.
A contextual chunker gives each chunk a header — the document's title, the heading path
the chunk sits under, and the document's first sentence (a one-line extractive summary)
— and retrieval reads the header and then the chunk (`Chunk.indexed_text`):

    Leave policy > Approval
    Staff get 25 days of paid leave a year.

    It must be approved by your manager within 5 days.

Only what is *indexed* changes. The chunk's own text, offsets and citations stay exactly
as they were: an answer quotes and cites the chunk, never the header.

Offline, the header's sentence is the document's first one, the same for every chunk. A
`ContextWriter` writes one per chunk instead: with a language model configured,
`raglab.generate.llm_context` asks it for a short sentence situating the chunk in its
document. The index records the writer's `name` (`Chunker.params()`), so chunks whose
headers were written another way are never mixed with these.
"""

from __future__ import annotations

import bisect
from dataclasses import replace
from typing import Protocol

from raglab.ingest.sentences import MIN_WORDS, clean_inline, split_sentences, text_units
from raglab.records import Chunk, Document
from raglab.text import HEADING_SEPARATOR

__all__ = [
    "SUMMARY_CHARS",
    "ContextWriter",
    "context_header",
    "document_summary",
    "with_context",
]

SUMMARY_CHARS = 200
"""The summary is cut (at a word) to this many characters: a header should stay a small
part of the chunk, and MiniLM reads only its first 256 word pieces."""


def document_summary(text: str, *, max_chars: int = SUMMARY_CHARS) -> str:
    """The document's first sentence of prose (at least `MIN_WORDS` words), markdown removed.

    >>> document_summary("# Leave\\n\\nStaff get 25 days of paid leave a year. Ask HR.")
    'Staff get 25 days of paid leave a year.'
    >>> document_summary("# Only a heading")
    ''
    """
    for unit in text_units(text):
        for sentence in split_sentences(clean_inline(unit.text)):
            if len(sentence.split()) >= MIN_WORDS:
                return _shortened(sentence, max_chars)
    return ""


def _shortened(sentence: str, max_chars: int) -> str:
    """`sentence` cut at the last whole word that fits in `max_chars`, marked with "…"."""
    if len(sentence) <= max_chars:
        return sentence
    return sentence[: max_chars - 1].rsplit(" ", 1)[0] + "\u2026"


def context_header(title: str, heading: str, summary: str) -> str:
    """The header: the path "title > heading", then the summary on a line of its own.

    The title is left out when the heading path already starts with it (a document whose
    first heading is its title); empty parts are left out, so no header is "".

    >>> context_header("Leave policy", "Approval", "Staff get 25 days.")
    'Leave policy > Approval\\nStaff get 25 days.'
    >>> context_header("Leave policy", "Leave policy > Approval", "")
    'Leave policy > Approval'
    >>> context_header("", "", "")
    ''
    """
    path = heading
    if title and not (heading == title or heading.startswith(title + HEADING_SEPARATOR)):
        path = HEADING_SEPARATOR.join(part for part in (title, heading) if part)
    return "\n".join(part for part in (path, summary) if part)


class ContextWriter(Protocol):
    """Writes a chunk's context sentence; `name` says how (recorded in the index)."""

    @property
    def name(self) -> str: ...

    def situate(self, doc: Document, chunk: Chunk) -> str: ...


Section = tuple[str, int, int]  # (heading path, start, end), as `split_sections` gives them


def with_context(
    doc: Document,
    chunks: list[Chunk],
    sections: list[Section],
    writer: ContextWriter | None = None,
) -> list[Chunk]:
    """`chunks` of `doc`, each given its context header (`Chunk.context`).

    `sections` are the document's (`raglab.ingest.chunking.split_sections`): the heading
    path is the one in force where the chunk starts, whatever chunker cut it (the
    character chunker records none). The sentence is `writer`'s for each chunk, else the
    document's summary, left out of a chunk that already holds it, such as the first one.
    """
    starts = [start for _, start, _ in sections]
    summary = document_summary(doc.text) if writer is None else ""
    contextual = []
    for chunk in chunks:
        at = bisect.bisect_right(starts, chunk.start) - 1
        heading = sections[at][0] if at >= 0 else ""
        if writer is not None:
            own = _shortened(" ".join(writer.situate(doc, chunk).split()), SUMMARY_CHARS)
        else:
            own = "" if summary in clean_inline(chunk.text) else summary
        contextual.append(replace(chunk, context=context_header(doc.title, heading, own)))
    return contextual
