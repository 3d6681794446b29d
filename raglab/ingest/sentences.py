"""From retrieved chunks to quotable sentences: the first step of the extractive answerer.

A chunk is markdown. Before a sentence can be quoted, its syntax must go (headings become
the context of the sentences under them, tables become "Header: cell" sentences, code and
rules are skipped) and so must anything that would mislead: a `[3]` that would read as our
citation, a paragraph that addresses a model ("Ignore all previous instructions ...").

`candidate_sentences(sources)` does all of it and numbers each sentence by its source, so
`Sentence(n=2, ...)` is quoted with the marker `[2]`. It reads only the sources it is given
(the retrieved, access-filtered chunks), so it can never quote text the asker may not read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from raglab.ingest.instructions import looks_like_instruction
from raglab.ingest.markers import without_markers
from raglab.records import Hit
from raglab.text import markdown_lines

__all__ = [
    "Sentence",
    "Unit",
    "candidate_sentences",
    "clean_inline",
    "looks_like_instruction",
    "sentence_spans",
    "split_sentences",
    "table_sentences",
    "text_units",
]

_RULE = re.compile(r"^\s*([-*_=]\s*){3,}$")  # ---, ***, === : rules and front-matter fences
_TABLE_ROW = re.compile(r"^\s*\|")
_TABLE_SEPARATOR = re.compile(r"^:?-+:?$")  # a cell of the |---|:--:| line under a header
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_QUOTE = re.compile(r"^\s*>\s?")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")  # [text](url) and ![alt](url) -> text
_EMPHASIS = re.compile(r"\*\*|__|`")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\u201c])")
MIN_WORDS = 3
"""A sentence needs at least this many words to be quoted: "Thanks." answers nothing."""


@dataclass(frozen=True, slots=True)
class Unit:
    """A paragraph, list item or table row of prose, and the heading it sits under.

    `whole`: a table row or list item, one fact however many sentences it holds ("E-4417;
    Ribbon out; Replace the ribbon cassette. Keep spares in the drawer."): quoted whole,
    never cut between its code and its fix.
    """

    text: str
    heading: str = ""
    whole: bool = False


def text_units(text: str, heading: str = "") -> list[Unit]:
    """Split markdown into paragraphs, list items and table rows, each under its heading.

    Markdown syntax is dropped so it cannot end up inside a quoted sentence: heading lines
    become the `heading` of the units below them, code blocks and rules are skipped, a
    paragraph's wrapped lines are joined, and a table row becomes "Header: cell; ...".
    `heading` is the heading in force where `text` starts (a chunk's `heading`).

    >>> text = "# Leave\\nYou get 25\\ndays.\\n\\n| Type | Weeks |\\n|---|---|\\n| Parental | 20 |"
    >>> for u in text_units(text):
    ...     print(repr(u.heading), u.text, u.whole)
    'Leave' You get 25 days. False
    'Leave' Type: Parental; Weeks: 20. True
    """
    units: list[Unit] = []
    lines: list[str] = []  # the paragraph or list item being built
    item = False  # whether `lines` is a list item
    rows: list[list[str]] = []  # the table being built
    for md in markdown_lines(text):  # each line, classified: heading, fence, code or text
        line = md.text
        if rows and not _TABLE_ROW.match(line):
            units += [Unit(row, heading, whole=True) for row in table_sentences(rows)]
            rows = []
        if md.kind in ("fence", "code"):
            lines = _close(lines, heading, units, item)
        elif md.kind == "heading":
            lines = _close(lines, heading, units, item)
            heading = clean_inline(md.title)
        elif _TABLE_ROW.match(line):
            lines = _close(lines, heading, units, item)
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif not line.strip() or _RULE.match(line):
            lines = _close(lines, heading, units, item)
        else:
            if _LIST_ITEM.match(line):
                lines = _close(lines, heading, units, item)
                line = _LIST_ITEM.sub("", line, count=1)
                item = True
            elif not lines:
                item = False
            lines.append(_QUOTE.sub("", line, count=1).strip())
    _close(lines, heading, units, item)
    units += [Unit(row, heading, whole=True) for row in table_sentences(rows)]
    return units


def _close(lines: list[str], heading: str, units: list[Unit], item: bool) -> list[str]:
    """Add the unit being built (if any) to `units`; return a fresh empty one."""
    if lines:
        units.append(Unit(" ".join(lines), heading, whole=item))
    return []


def table_sentences(rows: list[list[str]]) -> list[str]:
    """A markdown table's data rows as sentences, "Header: cell; Header: cell."

    The facts in a table are worth quoting; its pipes and dashes are not. Without a
    header row (a chunk that starts inside a table) the cells are joined with "; ".

    >>> table_sentences([["Type", "Length"], ["---", "---"], ["Parental leave", "20 weeks"]])
    ['Type: Parental leave; Length: 20 weeks.']
    """
    header: list[str] = []
    if len(rows) >= 2 and all(_TABLE_SEPARATOR.match(cell) for cell in rows[1] if cell):
        header, rows = rows[0], rows[2:]
    sentences = []
    for cells in rows:
        if header:
            parts = [f"{h}: {c}" if h else c for h, c in zip(header, cells) if c]
        else:
            parts = [c for c in cells if c]
        if parts:
            sentences.append("; ".join(parts).rstrip(".") + ".")
    return sentences


def clean_inline(text: str) -> str:
    """Remove inline markdown and anything that would read as a citation marker.

    A `[3]` inside a source is the document's own footnote; copied into an answer it
    would become a citation of our source 3, or (`[9]` of five sources) make the answer
    look fabricated. So every mark a reader would take for a marker is removed before
    quoting, however it is written: `[**3**]`, `［３］`, `【3】`, `&#91;3&#93;`, ...
    (`raglab.ingest.markers.marker_spans`).

    >>> clean_inline("Read the **[guide](http://x)** first [2][`3`]［４］.")
    'Read the guide first.'
    """
    text = _LINK.sub(r"\1", text)
    text = without_markers(text)
    text = _EMPHASIS.sub("", text)
    text = re.sub(r"\s+([.,;:!?])", r"\1", text)  # no space left before punctuation
    return " ".join(text.split())


def split_sentences(unit: str) -> list[str]:
    """Split at . ! or ? followed by a space and a capital, digit or quote.

    >>> split_sentences("Leave is 25 days. Ask HR first! e.g. today.")
    ['Leave is 25 days.', 'Ask HR first! e.g. today.']
    """
    return [unit[start:end] for start, end in sentence_spans(unit)]


def sentence_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Where `split_sentences`'s sentences of `text[start:end]` are: `(start, end)` offsets
    into `text`, each trimmed of surrounding whitespace (the semantic chunker cuts there).

    >>> text = "Leave is 25 days. Ask HR first!"
    >>> [text[s:e] for s, e in sentence_spans(text)]
    ['Leave is 25 days.', 'Ask HR first!']
    """
    end = len(text) if end is None else end
    spans, at = [], start
    for m in [*_SENTENCE_END.finditer(text, start, end), None]:
        stop = end if m is None else m.start()
        piece = text[at:stop]
        if piece.strip():
            first = at + len(piece) - len(piece.lstrip())
            spans.append((first, first + len(piece.strip())))
        at = end if m is None else m.end()
    return spans


@dataclass(frozen=True, slots=True)
class Sentence:
    """A quotable sentence of source `[n]`: its text, and the words around it.

    `position` counts the quotable sentences of all sources in reading order (a tie
    breaker). `context` is the document title and the heading the sentence sits under:
    under "Password rules", "At least 14 characters." is about passwords without saying so.
    `unit` numbers the paragraph, row or list item it belongs to, over all sources: two
    sentences with the same `unit` are neighbours in one paragraph. A table row or list
    item is one sentence, however many it holds (`Unit.whole`).
    """

    n: int
    position: int
    text: str
    context: str = ""
    unit: int = -1


def numbered_heading(heading: str, chunk_text: str) -> str:
    """The heading to quote before each sentence under it: one that holds a number ("3.3.2
    (3 March 2025)", "2025 holidays") and stands in the chunk itself; else "".

    Under a numbered heading the number is part of every fact below it: "Fixed LIB-815:
    the login loop." answers "which version fixed it?" only with "3.3.2" before it. The
    heading must be in the chunk's own text, so the quote is still the cited text's.

    >>> numbered_heading("3.3.2 (3 March 2025)", "## 3.3.2 (3 March 2025)\\n\\n- Fixed LIB-815.")
    '3.3.2 (3 March 2025)'
    >>> numbered_heading("Returns", "## Returns\\n\\nWithin 30 days.")
    ''
    """
    last = heading.rsplit(" > ", 1)[-1]  # a chunk's heading path ends with its own heading
    if not any(c.isdigit() for c in last) or last not in clean_inline(chunk_text):
        return ""
    return last


def candidate_sentences(sources: Sequence[Hit]) -> list[Sentence]:
    """Every quotable sentence of every source, numbered by source (`[n]`, from 1).

    Paragraphs that look like instructions to a model are skipped whole (the sentences
    after "Ignore all previous instructions." carry the payload). A chunk that begins in
    the middle of a sentence (lower-case first letter) has that fragment marked with "…".

    >>> from raglab.records import Chunk
    >>> text = "# Leave\\nThanks!\\n\\nStaff get 25 days. Ask HR first."
    >>> [(s.n, s.text, s.context) for s in candidate_sentences([Hit(Chunk("a.md", 0, text, 0, 9), 1.0)])]
    [(1, 'Staff get 25 days.', 'Leave'), (1, 'Ask HR first.', 'Leave')]
    """
    found: list[Sentence] = []
    units = 0  # units numbered over all sources, so a unit number names one paragraph
    for n, hit in enumerate(sources, start=1):
        chunk = hit.chunk
        # subtle: a lower-case first letter means the chunker cut inside a sentence, so the
        # first sentence of the first unit is a tail; quote it honestly, as "…tail".
        fragment = chunk.start > 0 and chunk.text[:1].islower()
        for u, unit in enumerate(text_units(chunk.text, chunk.heading)):
            units += 1
            if looks_like_instruction(unit.text):
                continue
            context = " ".join(part for part in (chunk.title, unit.heading) if part)
            text = clean_inline(unit.text)
            label = numbered_heading(unit.heading, chunk.text)
            for s, sentence in enumerate([text] if unit.whole else split_sentences(text)):
                if len(sentence.split()) < MIN_WORDS or sentence.endswith("?"):
                    continue  # too short to answer anything, or a question (an FAQ's)
                if fragment and u == 0 and s == 0:
                    sentence = "\u2026" + sentence
                if label:
                    sentence = f"{label}: {sentence}"
                found.append(Sentence(n, len(found), sentence, context, units))
    return found
