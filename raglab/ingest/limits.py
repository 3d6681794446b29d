"""Ingestion limits that need the chunker: how many chunks one document may become.

The loader bounds what it reads (`raglab.ingest.loaders`: file size `DEFAULT_MAX_BYTES`, file
count `DEFAULT_MAX_FILES`); this bounds what one document costs to index. A document that
would become more than `max_chunks` chunks is refused before anything is embedded: one
pasted log or data dump would otherwise take the embedding time, the index's room and,
at question time, most of the top-k places of everything it resembles.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from raglab.ingest.front_matter import DocumentError
from raglab.progress import Progress, Reporter
from raglab.records import Chunk, Document
from raglab.validation import check_int

DEFAULT_MAX_CHUNKS = 1_000
"""Most chunks per document: about 800 KB of text at the default chunk size, more than
any policy or manual page; a larger document is better split into files of its own."""


class _Splitter(Protocol):
    def split(self, doc: Document) -> list[Chunk]: ...


def within_chunk_limit(
    documents: Sequence[Document],
    chunker: _Splitter,
    max_chunks: int = DEFAULT_MAX_CHUNKS,
    progress: Reporter | None = None,
) -> tuple[list[Document], list[DocumentError]]:
    """The documents that `chunker` cuts into at most `max_chunks` chunks, and an error
    naming each of the others and its chunk count (those are not indexed). `progress`
    hears after each document how many are cut (a semantic or a model-written contextual
    chunker takes a while: `raglab.progress`).

    >>> from raglab.ingest.chunking import Chunker
    >>> kept, refused = within_chunk_limit([Document("a.md", "x" * 50)], Chunker("chars", 10, 0), 3)
    >>> kept, str(refused[0])
    ([], 'a.md: refused: it makes 5 chunks, more than max_chunks=3 (split it into smaller documents, or raise --max-chunks)')
    """
    max_chunks = check_int("max_chunks", max_chunks, minimum=1)
    kept: list[Document] = []
    refused: list[DocumentError] = []
    for doc in documents:
        n = len(chunker.split(doc))
        if n <= max_chunks:
            kept.append(doc)
        else:
            reason = (
                f"refused: it makes {n} chunks, more than max_chunks={max_chunks} "
                "(split it into smaller documents, or raise --max-chunks)"
            )
            refused.append(DocumentError(doc.id, reason))
        if progress is not None:
            done = len(kept) + len(refused)
            progress(Progress("chunking", done, len(documents), "documents"))
    return kept, refused
