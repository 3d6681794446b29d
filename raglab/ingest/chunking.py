"""Cut documents into chunks: the seed's character windows, structure-aware and semantic chunks.

Two tools live here:

- `chunk(text, size, overlap)` is the seed's character chunker, ported exactly. It
  returns plain strings and is what the first notebook builds by hand.
- `Chunker(kind, size, overlap)` is what the engine uses. Its `.split(doc)` returns
  `Chunk` records that remember where they came from. Offsets are recorded while
  cutting, never recovered afterwards with `str.find` (which is wrong as soon as a
  piece of text repeats). The invariant, for every chunk `c` of a document `doc`:

      doc.text[c.start:c.end] == c.text

`size` and `overlap` are always counted in characters (Python `str` code points).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from raglab.ingest.contextual import ContextWriter, with_context
from raglab.ingest.semantic import PERCENTILE, WINDOW, SentenceEmbedding, adjacent_similarities
from raglab.ingest.semantic import boundaries as semantic_boundaries
from raglab.ingest.sentences import sentence_spans
from raglab.records import Chunk, Document
from raglab.text import HEADING_SEPARATOR, markdown_lines
from raglab.validation import check_int

# Bumped whenever the cutting rules change, so an index built by an older chunker is
# detected as stale (it is stored with the index through `Chunker.params()`).
CHUNKER_VERSION = 1

Span = tuple[int, int]  # (start, end) character offsets, end exclusive


# ---------------------------------------------------------------------------
# The seed's character chunker
# ---------------------------------------------------------------------------


def _check_window(size: int, overlap: int) -> tuple[int, int]:
    """Validate `size` and `overlap` (characters) and return them as plain ints.

    A float or a string would otherwise fail much later, deep inside a slice.
    """
    size = check_int("size", size, minimum=1)
    overlap = check_int("overlap", overlap, minimum=0)
    # Subtle: overlap == size would give a step of 0, an endless loop; it is refused too.
    if overlap >= size:
        raise ValueError(f"overlap must be < size (got overlap={overlap}, size={size})")
    return size, overlap


def _window_starts(length: int, size: int, overlap: int) -> range:
    """Start offsets of the windows over a text of `length` characters.

    Windows start every `size - overlap` characters; the last one is the first window
    that reaches the end. A window starting at `s` reaches the end when
    `s + size >= length`, so a start is still needed while the previous window
    (at `s - step`) did not: `s - step + size < length`, i.e. `s < length - overlap`.
    The first window is always needed, hence the `max(..., 1)`.
    """
    if length == 0:
        return range(0)
    return range(0, max(length - overlap, 1), size - overlap)


def chunk(text: str, size: int = 800, overlap: int = 100) -> list[str]:
    """Split `text` into windows of `size` characters, each starting `size - overlap` later.

    It stops after the first window that reaches the end of the text, so the last
    window may be shorter than `size`. Empty text gives `[]`.

    >>> chunk("abcdefghij", size=4, overlap=1)
    ['abcd', 'defg', 'ghij']
    >>> chunk("abcdefgh", size=4, overlap=1)
    ['abcd', 'defg', 'gh']
    >>> chunk("", size=4, overlap=1)
    []
    """
    size, overlap = _check_window(size, overlap)
    # One list comprehension over precomputed starts: as fast as slicing gets in Python.
    return [text[start : start + size] for start in _window_starts(len(text), size, overlap)]


def _windows(start: int, end: int, size: int, overlap: int) -> Iterator[Span]:
    """The seed's character windows over `[start, end)`, as absolute spans."""
    for s in _window_starts(end - start, size, overlap):
        yield start + s, min(start + s + size, end)


# ---------------------------------------------------------------------------
# Structure: headings, paragraphs, sentences
# ---------------------------------------------------------------------------

# Paragraphs are separated by one or more blank lines (lines of whitespace only).
_BLANK_LINES = re.compile(r"\n(?:[^\S\n]*\n)+")
# The end of a sentence: . ! ? or … (maybe followed by a closing quote or bracket) before
# whitespace, or a line break inside a paragraph (lists, addresses). A sentence is cut
# just after it; the whitespace that follows is trimmed, so no visible character is lost.
# (Written to start with one character class, which lets the regex engine skip ahead.)
_SENTENCE_END = re.compile(r"[.!?…\n](?:(?<=\n)|[\"'”’)\]]?(?=\s))")


def _sections(text: str) -> Iterator[tuple[int, int, str]]:
    """Split a markdown text at its headings: `(start, end, heading path)` for each section.

    A section starts at its heading line (which stays in the text) and runs to the next
    heading. The path lists the enclosing headings, e.g. "Leave policy > Carry-over";
    text before the first heading has the path "".
    """
    path: list[tuple[int, str]] = []  # (level, title) of the enclosing headings
    start, heading = 0, ""
    # A "# comment" line inside a fenced code block is code: markdown_lines says which.
    for line in markdown_lines(text):
        if line.kind != "heading":
            continue
        yield start, line.start, heading
        # A heading closes every open heading at its level or deeper.
        while path and path[-1][0] >= line.level:
            path.pop()
        path.append((line.level, line.title))
        start, heading = line.start, HEADING_SEPARATOR.join(t for _, t in path if t)
    yield start, len(text), heading


def split_sections(text: str) -> list[tuple[str, int, int]]:
    """Markdown sections in order: `(heading path, start, end)`, empty ones left out.

    The first step of the structure-aware chunker, and the reference for notebook 04's
    exercise. Together the sections cover the text: joined, they give it back.

    >>> split_sections("# Leave\\nTen days.\\n## Carry-over\\nFive days.\\n")
    [('Leave', 0, 18), ('Leave > Carry-over', 18, 43)]
    """
    return [(heading, start, end) for start, end, heading in _sections(text) if start < end]


def _trim(text: str, start: int, end: int) -> Span | None:
    """Shrink `[start, end)` to exclude surrounding whitespace; None when nothing is left."""
    piece = text[start:end]
    stripped = piece.strip()
    if not stripped:
        return None
    start += len(piece) - len(piece.lstrip())
    return start, start + len(stripped)


def _split_at(
    pattern: re.Pattern[str], text: str, start: int, end: int, *, keep: bool
) -> list[Span]:
    """Cut `text[start:end]` at each match of `pattern`, as a list of spans.

    With `keep=True` the match stays at the end of the span before it (a sentence keeps
    its full stop); otherwise the match is dropped (a blank line between paragraphs).
    Spans are not trimmed: whitespace is removed once per chunk, not once per piece.
    """
    spans = []
    for m in pattern.finditer(text, start, end):
        spans.append((start, m.end() if keep else m.start()))
        start = m.end()
    spans.append((start, end))
    return spans


def _pack(
    spans: list[Span], size: int, too_long: Callable[[int, int], Iterator[Span]]
) -> Iterator[Span]:
    """Greedily join consecutive spans while the joined span stays within `size` characters.

    A joined span runs from its first piece's start to its last piece's end, separators
    included, so it is still one contiguous slice of the text. A span longer than `size`
    is handed to `too_long`, which cuts it finer.
    """
    current: Span | None = None
    for start, end in spans:
        if end - start > size:
            if current:
                yield current
                current = None
            yield from too_long(start, end)
        elif current and end - current[0] <= size:
            current = (current[0], end)
        else:
            if current:
                yield current
            current = (start, end)
    if current:
        yield current


Cut = tuple[int, int, str, str]  # (start, end, text, heading) of one chunk-to-be


def _structure_cuts(text: str, size: int, overlap: int) -> Iterator[Cut]:
    """Heading-, paragraph- and sentence-aware chunks, trimmed of surrounding whitespace."""

    def windows(start: int, end: int) -> Iterator[Span]:
        # A sentence longer than `size`: the seed's windows over its trimmed text.
        trimmed = _trim(text, start, end)
        return _windows(*trimmed, size, overlap) if trimmed else iter(())

    def sentences(start: int, end: int) -> Iterator[Span]:
        return _pack(_split_at(_SENTENCE_END, text, start, end, keep=True), size, windows)

    pending: Cut | None = None
    for s_start, s_end, heading in _sections(text):
        if s_end - s_start <= size:  # a short section is one chunk: no need to cut it
            paragraphs = [(s_start, s_end)]
        else:
            paragraphs = _split_at(_BLANK_LINES, text, s_start, s_end, keep=False)
        for start, end in _pack(paragraphs, size, sentences):
            piece = text[start:end]
            stripped = piece.strip()
            if not stripped:  # skip whitespace-only pieces
                continue
            start += len(piece) - len(piece.lstrip())
            cut = (start, start + len(stripped), stripped, heading)
            # Subtle: trimming the spaces off two overlapping windows (" a" and "aa") can
            # make them start at the same character; the first then lies inside the
            # second, which is kept alone.
            if pending is not None and pending[0] != cut[0]:
                yield pending
            pending = cut
    if pending is not None:
        yield pending


def _char_cuts(text: str, size: int, overlap: int) -> Iterator[Cut]:
    """The seed's character windows with their offsets, skipping whitespace-only ones."""
    for start in _window_starts(len(text), size, overlap):
        piece = text[start : start + size]
        if not piece.isspace():
            yield start, start + len(piece), piece, ""


# The chunking strategies that need nothing but the text, by name.
CUTTERS: dict[str, Callable[[str, int, int], Iterator[Cut]]] = {
    "chars": _char_cuts,
    "structure": _structure_cuts,
}
KINDS = (*CUTTERS, "semantic")
"""`Chunker(kind=...)` chooses from exactly these; "semantic" also needs the embedder."""


# ---------------------------------------------------------------------------
# Semantic: boundaries where neighbouring sentences stop meaning the same thing
# ---------------------------------------------------------------------------

Piece = tuple[int, int, str]  # (start, end, heading): a sentence, or a window of a long one


def _readable_pieces(
    text: str, span: Span, size: int, overlap: int, embedding: SentenceEmbedding
) -> list[Span]:
    """`span` itself when it fits (`size` characters, the embedder's tokens), else cut finer:
    character windows, each halved until the embedder reads all of it."""
    if span[1] - span[0] <= size and embedding.fits(text[span[0] : span[1]]):
        return [span]
    if span[1] - span[0] > size:
        return [
            p
            for w in _windows(*span, size, overlap)
            for p in _readable_pieces(text, w, size, overlap, embedding)
        ]
    middle = (
        span[0] + span[1]
    ) // 2  # subtle: a window within `size` that still has too many tokens
    return [
        *_readable_pieces(text, (span[0], middle), size, 0, embedding),
        *_readable_pieces(text, (middle, span[1]), size, 0, embedding),
    ]


def _sentence_pieces(
    text: str, size: int, overlap: int, embedding: SentenceEmbedding
) -> list[Piece]:
    """The document's sentences (`raglab.ingest.sentences`), section by section, as pieces
    within the size limits."""
    return [
        (start, end, heading)
        for heading, s_start, s_end in split_sections(text)
        for sentence in sentence_spans(text, s_start, s_end)
        for start, end in _readable_pieces(text, sentence, size, overlap, embedding)
    ]


def semantic_cuts(
    text: str, size: int, overlap: int, embedding: SentenceEmbedding
) -> Iterator[Cut]:
    """Consecutive sentences joined until the meaning changes, the section changes, or the
    next sentence would take the chunk past `size` characters or the embedder's tokens.

    Deterministic: the same embedder gives the same vectors, hence the same boundaries.
    """
    pieces = _sentence_pieces(text, size, overlap, embedding)
    if not pieces:
        return
    vectors = embedding.embed([text[start:end] for start, end, _ in pieces])
    gaps = set(semantic_boundaries(adjacent_similarities(vectors, WINDOW), PERCENTILE))
    start, end, heading = pieces[0]
    for gap, (p_start, p_end, p_heading) in enumerate(pieces[1:]):
        joined = text[start:p_end]
        if (
            gap in gaps
            or p_heading != heading
            or p_end - start > size
            or not embedding.fits(joined)
        ):
            yield start, end, text[start:end], heading
            start, heading = p_start, p_heading
        end = p_end
    yield start, end, text[start:end], heading


@dataclass(frozen=True, slots=True)
class Chunker:
    """Cut a `Document` into `Chunk`s; settings are checked when the chunker is made.

    - `kind="chars"`: the seed's windows of `size` characters overlapping by `overlap`.
    - `kind="structure"` (default): split at markdown headings (`#` .. `######`, not
      inside fenced code) into sections, then pack whole paragraphs (blank-line
      separated) into chunks of at most `size` characters. A paragraph longer than
      `size` is cut at sentence ends; a sentence longer than `size` falls back to
      character windows overlapping by `overlap`. Each chunk's `heading` is its
      section's heading path, e.g. "Leave policy > Carry-over" ("" before any heading).
    - `kind="semantic"`: within each section, consecutive sentences joined until the
      meaning changes (`raglab.ingest.semantic`), within `size` characters and the
      tokens the embedder reads; needs `embedding` (`Index.from_folder` gives it).

    `contextual=True` gives every chunk a context header (title, heading path, the
    document's first sentence, or `context_writer`'s sentence for the chunk), which
    retrieval reads before the chunk's text (`raglab.ingest.contextual`); the chunk's
    text and offsets do not change.

    Whitespace-only pieces are skipped, so every chunk has visible text, and chunk
    indexes run 0..n-1. Invariant: `doc.text[c.start:c.end] == c.text` for every chunk.

    >>> doc = Document(id="a.md", text="# Leave\\n\\n25 days.\\n\\n## Carry-over\\n\\nUp to 5.")
    >>> for c in Chunker(size=40, overlap=5).split(doc):
    ...     print(c.index, repr(c.heading), repr(c.text), c.start, c.end)
    0 'Leave' '# Leave\\n\\n25 days.' 0 17
    1 'Leave > Carry-over' '## Carry-over\\n\\nUp to 5.' 19 42
    """

    kind: str = "structure"
    size: int = 800
    overlap: int = 100
    contextual: bool = False
    # Semantic chunking's embedder: not a setting (the index records its embedder apart).
    embedding: SentenceEmbedding | None = field(default=None, compare=False, repr=False)
    # Who writes a contextual chunk's sentence (default: the document's first sentence);
    # `params()` records its name.
    context_writer: ContextWriter | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            choices = ", ".join(repr(k) for k in KINDS)
            raise ValueError(f"kind must be one of {choices} (got kind={self.kind!r})")
        if not isinstance(self.contextual, bool):
            raise ValueError(f"contextual must be True or False (got {self.contextual!r})")
        size, overlap = _check_window(self.size, self.overlap)
        object.__setattr__(self, "size", size)
        object.__setattr__(self, "overlap", overlap)

    def split(self, doc: Document) -> list[Chunk]:
        """The chunks of `doc`, in order, carrying its id, title, tenant, groups and version;
        with `contextual`, each also carries its context header (`Chunk.context`)."""
        chunks = self._cut(doc)
        if not self.contextual:
            return chunks
        return with_context(doc, chunks, split_sections(doc.text), self.context_writer)

    def _cut(self, doc: Document) -> list[Chunk]:
        if self.kind != "semantic":
            cuts = CUTTERS[self.kind](doc.text, self.size, self.overlap)
        elif self.embedding is None:
            raise ValueError(
                "kind='semantic' needs the index's embedder: Chunker(kind='semantic', "
                "embedding=SentenceEmbedding(embedder.embed)); Index.from_folder gives it"
            )
        else:
            cuts = semantic_cuts(doc.text, self.size, self.overlap, self.embedding)
        return [
            Chunk(
                doc_id=doc.id,
                index=i,
                text=text,
                start=start,
                end=end,
                heading=heading,
                title=doc.title,
                tenant=doc.tenant,
                groups=doc.groups,
                doc_version=doc.version,
            )
            for i, (start, end, text, heading) in enumerate(cuts)
        ]

    def params(self) -> dict[str, object]:
        """The settings that shape the chunks (JSON-safe), stored with an index.

        A setting left at a value older indexes could not have (no context header, no
        semantic boundaries) is left out, so those indexes stay current.

        >>> Chunker().params()
        {'kind': 'structure', 'size': 800, 'overlap': 100, 'version': 1}
        >>> Chunker(kind="semantic", contextual=True).params()["contextual"]
        True
        """
        params: dict[str, object] = {
            "kind": self.kind,
            "size": self.size,
            "overlap": self.overlap,
            "version": CHUNKER_VERSION,
        }
        if self.kind == "semantic":
            params.update(window=WINDOW, percentile=PERCENTILE)
        if self.contextual:
            params["contextual"] = True
            if self.context_writer is not None:
                params["context"] = self.context_writer.name
        return params
