"""Citation markers as a reader sees them: where a text writes "[2]", in any disguise.

An answer cites source 2 as "[2]". A text can write a mark that looks the same on screen in
many ways: full-width or other square brackets ("［２］", "【2】", "〔2〕"), digits from other
blocks ("[²]", "[𝟐]"), invisible characters inside ("[2\u200b]"), markdown or HTML around
the number ("[**2**]", "[`2`]", "[<b>2</b>]"), an entity or a backslash for a bracket
("&#91;2&#93;", "\\[2\\]"). A list of such spellings is never complete, so the text is read
as a reader sees it instead (`_reader_view`), character by character, and the one pattern
is matched there. The source cleaner (`raglab.ingest.sentences`) and the citation parser
(`raglab.generate.citations`) both ask `marker_spans`, so they cannot disagree.
"""

from __future__ import annotations

import bisect
import html
import re
import unicodedata
from functools import lru_cache
from typing import NamedTuple


class MarkerSpan(NamedTuple):
    """A citation mark in a text: where it is, and the inside of its brackets as seen."""

    start: int  # offsets into the text as written: text[start:end] is the whole mark
    end: int
    inside: str  # what a reader sees between the brackets: "2", "1, 3", "1-3", "^2"


# Markup a reader does not see (an HTML tag, markdown emphasis or code marks), a bracket
# escaped with a backslash, an HTML entity, a run of plain ASCII (seen as written: the fast
# path), and any other single character.
_SEEN_TOKEN = re.compile(
    r"(?P<hidden></?[A-Za-z][^<>\n]{0,80}>|[*_`~])"
    r"|(?P<escaped>\\[\[\]])"
    r"|(?P<entity>&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});)"
    r"|(?P<plain>[^*_`~<&\\\x80-\U0010ffff]+)"
    r"|(?P<other>.)",
    re.DOTALL,
)
# A pair of square brackets around numbers: one, a list ("1, 3"), a range ("1-3"), or a
# footnote's "^2". What counts as a citation among these is the parser's business.
_SEEN_MARKER = re.compile(r"\[\s*(\^?\s*-?\d+(?:\s*[,;-]\s*-?\d+)*)\s*\]")
# Opening and closing punctuation that is not a square bracket to the eye.
_NOT_SQUARE = ("PARENTHESIS", "CURLY", "ANGLE", "QUOTATION", "THAN")


@lru_cache(maxsize=4096)
def _seen(char: str) -> str:
    """One character as a reader sees it: its compatibility form (NFKC: "［" is "[", "²" is
    "2"), without invisible format characters and combining marks, any square-looking
    bracket as "[" or "]", any dash or minus sign as "-"."""
    seen = []
    for c in unicodedata.normalize("NFKC", char):
        category = unicodedata.category(c)
        if category in ("Cf", "Mn", "Me"):
            continue
        square = not any(word in unicodedata.name(c, "") for word in _NOT_SQUARE)
        if category == "Ps" and square:
            c = "["
        elif category == "Pe" and square:
            c = "]"
        elif category == "Pd" or c == "\u2212":
            c = "-"
        seen.append(c)
    return "".join(seen)


def _reader_view(text: str) -> tuple[str, list[tuple[int, int, int, bool]]]:
    """`text` as a reader sees it, and where each piece of that view came from.

    The pieces are (offset in the view, start and end in `text`, whether it is a plain run
    copied as written); a piece that is not plain maps as a whole to its start and end.
    """
    view: list[str] = []
    pieces: list[tuple[int, int, int, bool]] = []
    length = 0
    for token in _SEEN_TOKEN.finditer(text):
        kind, written = token.lastgroup, token.group()
        if kind == "hidden":
            continue
        if kind == "plain":
            seen = written
        elif kind == "escaped":
            seen = written[1]
        elif kind == "entity":
            seen = "".join(map(_seen, html.unescape(written)))
        else:
            seen = _seen(written)
        if seen:
            pieces.append((length, token.start(), token.end(), kind == "plain"))
            view.append(seen)
            length += len(seen)
    return "".join(view), pieces


def marker_spans(text: str) -> list[MarkerSpan]:
    """Every mark in `text` that a reader takes for a citation marker, in order.

    >>> [(s.start, s.end, s.inside) for s in marker_spans("25 days [1], see ［２］ and [**3**].")]
    [(8, 11, '1'), (17, 20, '2'), (25, 32, '3')]
    >>> marker_spans("No mark (1), {2}, [a1] or [2.5] here.")
    []
    """
    if text.isascii() and "[" not in text and "&" not in text:
        return []  # the common case: no bracket can be seen in this text
    view, pieces = _reader_view(text)
    offsets = [piece[0] for piece in pieces]

    def written(at: int, edge: int) -> int:
        """Where in `text` the view's character `at` starts (edge 0) or ends (edge 1)."""
        offset, start, end, plain = pieces[bisect.bisect_right(offsets, at) - 1]
        return start + (at - offset) + edge if plain else (end if edge else start)

    spans = []
    for found in _SEEN_MARKER.finditer(view):
        start, end = written(found.start(), 0), written(found.end() - 1, 1)
        wrap = _wrapping(text[max(0, start - WRAP) : start], text[end : end + WRAP])
        spans.append(MarkerSpan(start - wrap, end + wrap, found[1]))
    return spans


WRAP = 3
"""The most emphasis or code marks looked for around a mark: "***" is markdown's most."""


def _wrapping(before: str, after: str) -> int:
    """How many emphasis or code marks close around a mark as they open ("**[2]**": 2)."""
    opening = before[len(before.rstrip("*_`~")) :]
    closing = after[: len(after) - len(after.lstrip("*_`~"))]
    size = 0
    while size < min(len(opening), len(closing)) and opening[-1 - size] == closing[size]:
        size += 1
    return size


def without_markers(text: str, replacement: str = "") -> str:
    """`text` with every citation mark (`marker_spans`) replaced by `replacement`.

    >>> without_markers("Staff get 25 days [`2`] of leave【3】.")
    'Staff get 25 days  of leave.'
    """
    kept, start = [], 0
    for span in marker_spans(text):
        kept += [text[start : span.start], replacement]
        start = span.end
    return "".join(kept) + text[start:]
