"""Text rules written once: words, stopwords, markdown structure, stable hashes, safe names.

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

import hashlib
import re
import unicodedata
from collections.abc import Iterator, Sequence
from typing import Literal, NamedTuple

__all__ = [
    "STOPWORDS",
    "MarkdownLine",
    "content_hash",
    "fingerprint",
    "markdown_lines",
    "stable_hash",
    "tokenize",
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


HEADING_SEPARATOR = " > "
"""Joins a heading path, the enclosing headings of a place in a document: "Leave > Carry-over"."""


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
