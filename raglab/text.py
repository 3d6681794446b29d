"""Text rules written once: words, stopwords, markdown structure, stable hashes.

Several modules read the same text, and they must agree on what they see in it: BM25,
the embedders and the extractive answerer on what a word is; the loader, the chunker and
the answerer on where a heading or a code block is; everything that names a text on its
fingerprint. Three copies of a regex drift apart, so each rule lives here, once.

>>> tokenize("Carry-over: 5 days!")
['carry', 'over', '5', 'days']
>>> [line.kind for line in markdown_lines("# Leave\\n```\\n# code\\n```\\nTen days.")]
['heading', 'fence', 'code', 'fence', 'text']
>>> content_hash("hello")
'a7b6eda801e5347d'
"""

from __future__ import annotations

import bisect
import hashlib
import html
import re
import unicodedata
from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import Literal, NamedTuple

__all__ = [
    "STOPWORDS",
    "MarkdownLine",
    "MarkerSpan",
    "content_hash",
    "fingerprint",
    "markdown_lines",
    "marker_spans",
    "stable_hash",
    "tokenize",
    "without_markers",
]

# ----------------------------------------------------------------------------- words

_WORD = re.compile(r"\w+")


def tokenize(text: str) -> list[str]:
    """Lowercase word tokens (`\\w+`): one-letter words are kept, no stopword list.

    A word is a run of letters, digits or underscores, so punctuation and hyphens split
    words. BM25 indexes exactly these tokens; the embedders start from them too.

    >>> tokenize("Carry-over: 5 days, a maximum!")
    ['carry', 'over', '5', 'days', 'a', 'maximum']
    """
    return _WORD.findall(text.lower())


STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    else few for from further get gets got had has have having he her here hers herself
    him himself his how i if in into is it its itself just let many may me might more most
    much must my myself no nor not now of off on once only or other our ours ourselves out
    over own per please same shall she should so some such than that the their theirs
    them themselves then there these they this those through to too under until up us
    very was we were what when where which while who whom why will with would you your
    yours yourself yourselves""".split()  # noqa: SIM905 (a paragraph reads better)
)
"""Words that say little about what a text is about: function words, question words
("what", "how", "many") and a few verbs every question uses ("get", "let", "please").

The hashing embedder drops them before hashing (it has no corpus, so no idf, to tell it
that "the" says nothing) and the extractive answerer ignores them when it measures how
much of a question a sentence covers. BM25 keeps every word: its idf does this job.

Subtle: this is the union of the two lists those modules used to keep. The embedder's
list gained "against also because else get gets got let many may might much must no
nor not now per please shall us"; the answerer's gained "few herself himself myself
ourselves themselves yourself yourselves". Measured with `raglab eval` on
data/questions.jsonl, the union changed no figure for the worse and raised some (hashing
dense mrr 0.833 -> 0.852, LSA dense false abstention 0.458 -> 0.446). "no", "not" and
"nor" go too, though the embedder used to keep them: a bag of words cannot tell what a
"not" negates, it only makes any two negated texts look alike (keeping them lowered
hashing hybrid mrr from 0.880 to 0.871)."""


# ------------------------------------------------------------------ markdown structure

LineKind = Literal["heading", "fence", "code", "text"]


class MarkdownLine(NamedTuple):
    """One line of a markdown text, as `markdown_lines` classifies it."""

    kind: LineKind  # a heading, a code fence, a line inside a fenced block, or other text
    start: int  # offset of the line's first character in the text
    text: str  # the line itself, without its "\n"
    level: int = 0  # 1 to 6 for a heading ("#" to "######"), else 0
    title: str = ""  # a heading's text, without its "#"s


# CommonMark's ATX heading: up to 3 spaces, 1 to 6 "#", then a space or tab (or nothing).
_HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?\s*")
# An optional closing sequence of "#"s after a heading title ("## Title ##").
_CLOSING_HASHES = re.compile(r"(?:^|[ \t]+)#+$")
# A code fence: up to 3 spaces, then 3 or more backticks or tildes (then, say, "python").
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")


def _fence(line: str) -> str:
    """The fence a line starts with ("```", "~~~~", ...), or "" if it is not a fence line."""
    m = _FENCE.match(line)
    return m.group(1) if m else ""


def _closes(opening: str, line: str) -> bool:
    """True if `line` closes the code block that the fence `opening` opened.

    CommonMark's rule: the same character, at least as many times. So a block opened by
    four backticks holds a "```" line as code, and one opened by ``` holds a ~~~ line.
    (Simpler than CommonMark in one way: text after a closing fence is allowed, as in
    the workbook's exercise, where every line starting with ``` opens or closes.)

    >>> _closes("````", "```"), _closes("````", "`````"), _closes("```", "~~~")
    (False, True, False)
    """
    fence = _fence(line)
    return fence[:1] == opening[0] and len(fence) >= len(opening)


def markdown_lines(text: str) -> Iterator[MarkdownLine]:
    """Each line of `text`, classified: heading, code fence, code, or text.

    A fenced code block runs from an opening fence to the fence that closes it (or to
    the end of the text): a "# comment" inside it is code, not a heading. Lines are
    split at "\\n" only, so `text[line.start:line.start + len(line.text)] == line.text`.

    >>> for line in markdown_lines("## Leave ##\\n````\\n```\\n````\\nTen days."):
    ...     print(line.kind, line.start, repr(line.title))
    heading 0 'Leave'
    fence 12 ''
    code 17 ''
    fence 21 ''
    text 26 ''
    """
    opening = ""  # the fence that opened the code block we are in, else ""
    start = 0
    for line in text.split("\n"):
        if opening:
            closed = _closes(opening, line)
            opening = "" if closed else opening
            yield MarkdownLine("fence" if closed else "code", start, line)
        elif opening := _fence(line):
            yield MarkdownLine("fence", start, line)
        elif m := _HEADING.fullmatch(line):
            title = _CLOSING_HASHES.sub("", (m.group(2) or "").strip()).strip()
            yield MarkdownLine("heading", start, line, len(m.group(1)), title)
        else:
            yield MarkdownLine("text", start, line)
        start += len(line) + 1


# ------------------------------------------------------- citation markers, as a reader sees them
# An answer cites source 2 as "[2]". A text can write a mark that looks the same on screen in
# many ways: full-width or other square brackets ("［２］", "【2】", "〔2〕"), digits from other
# blocks ("[²]", "[𝟐]"), invisible characters inside ("[2\u200b]"), markdown or HTML around
# the number ("[**2**]", "[`2`]", "[<b>2</b>]"), an entity or a backslash for a bracket
# ("&#91;2&#93;", "\[2\]"). A list of such spellings is never complete, so the text is read
# as a reader sees it instead (`_reader_view`), character by character, and the one pattern
# is matched there. The source cleaner (`raglab.ingest.sentences`) and the citation parser
# (`raglab.generate.citations`) both ask `marker_spans`, so they cannot disagree.


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


# -------------------------------------------------------------------- stable hashes
# Python's built-in `hash()` is salted per process (PYTHONHASHSEED): an id or a vector
# made with it would change on restart. blake2b gives the same digest everywhere; 8
# bytes (64 bits) make an accidental collision among millions of texts negligible.


def _blake2b(data: bytes = b"") -> hashlib.blake2b:
    return hashlib.blake2b(data, digest_size=8)


def content_hash(text: str) -> str:
    """A stable fingerprint of a text (blake2b, 16 hex digits), the same on every machine.

    >>> content_hash("hello")
    'a7b6eda801e5347d'
    """
    return _blake2b(text.encode("utf-8")).hexdigest()


def stable_hash(text: str) -> int:
    """The same 64-bit digest as a number (little-endian), e.g. to pick a bucket.

    >>> stable_hash("w:refund")
    6440476109161390336
    """
    return int.from_bytes(_blake2b(text.encode("utf-8")).digest(), "little")


def fingerprint(texts: Sequence[str]) -> str:
    """A fingerprint of a list of texts, in order (blake2b, 16 hex digits).

    Each text is prefixed by its length in bytes, so ["ab", "c"] and ["a", "bc"]
    differ even though their concatenations do not.

    >>> fingerprint(["ab", "c"]) != fingerprint(["a", "bc"])
    True
    """
    h = _blake2b()
    for text in texts:
        data = text.encode("utf-8")
        h.update(f"{len(data)}:".encode("ascii"))
        h.update(data)
    return h.hexdigest()


# --- stems: the words a question and a source share, whatever their endings ---------------


def stem(word: str) -> str:
    """A light suffix stripper, so "days" matches "day" and "requested" matches "request".

    Rules in order: Harman's S-stemmer (1991: -ies -> -y, else a final s dropped unless
    the word ends in -us or -ss), then -ied -> -y, -ing / -ed dropped (not after e: "need"
    stays), then a final -e dropped, so "leave", "leaves" and "leaving" all become "leav".
    Crude next to Porter's stemmer, but every rule fits on one line and can be checked by hand.

    >>> [stem(w) for w in ["days", "policies", "employees", "requested", "leaving", "need"]]
    ['day', 'policy', 'employe', 'request', 'leav', 'need']
    """
    w = word
    if len(w) > 3:
        if w.endswith("ies") and not w.endswith(("eies", "aies")):
            w = w[:-3] + "y"
        elif w.endswith("s") and not w.endswith(("us", "ss")):
            w = w[:-1]  # Harman's -es -> -e and -s -> drop are the same cut: the final s
    if w.endswith("ied") and len(w) > 4:
        w = w[:-3] + "y"
    else:
        for suffix in ("ing", "ed"):
            if w.endswith(suffix) and len(w) - len(suffix) >= 3 and not w.endswith("e" + suffix):
                w = w[: -len(suffix)]
                break
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]
    return w


def content_stems(text: str) -> frozenset[str]:
    """The stems of the words of `text` that carry meaning (no `STOPWORDS`, no 1-letter words).

    >>> sorted(content_stems("How many days of annual leave do I get?"))
    ['annual', 'day', 'leav']
    """
    words = set(tokenize(text))  # each word once: a chunk repeats many of its words
    return frozenset(
        _cached_stem(w) for w in words if w not in STOPWORDS and (len(w) > 1 or w.isdigit())
    )


# Indexing stems every chunk (`raglab.ingest.stems`): a corpus uses far fewer distinct
# words than it holds, so each is stemmed once.
_cached_stem = lru_cache(maxsize=1 << 16)(stem)


# --- names shown to a person ----------------------------------------------------------------


def shown(name: str) -> str:
    """`name` safe to print on one terminal line: control and format characters escaped.

    A file name may hold a newline (which could forge a "raglab: warning" line), an escape
    sequence (which could take over the asker's terminal) or bidi controls (which reorder
    what the reader sees). Every name the engine prints goes through here; a plain name
    comes back unchanged.

    >>> shown("policies/leave.md")
    'policies/leave.md'
    >>> shown("a\\nraglab: warning: fake.md")
    'a\\\\nraglab: warning: fake.md'
    >>> shown("\\x1b[2Jevil.md"), shown("rtl\\u202etxt.md"), shown("caf\\udce9.md")
    ('\\\\x1b[2Jevil.md', 'rtl\\\\u202etxt.md', 'caf\\\\udce9.md')
    """
    return "".join(_escaped(c) if _unsafe(c) else c for c in name)


def _unsafe(char: str) -> bool:
    # Cc: control characters (newline, escape, bell...); Cf: format characters (bidi
    # overrides, zero-width); Zl/Zp: line and paragraph separators, which also break a line;
    # Cs: lone surrogates, how Python keeps a file name's bytes that are not UTF-8, which
    # would make printing it fail.
    return unicodedata.category(char) in {"Cc", "Cf", "Zl", "Zp", "Cs"}


def _escaped(char: str) -> str:
    escaped = char.encode("unicode_escape").decode("ascii")
    return escaped if escaped != char else f"\\u{ord(char):04x}"
