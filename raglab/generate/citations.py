"""Parse the `[n]` markers in an answer and check each against what was retrieved.

A citation is only worth something if it points at a source the model was actually
shown. `verify_citations` splits the markers of an answer into valid ones (resolved to
the retrieved hit, `raglab.records.Citation`) and invalid ones: 0, negative, or beyond
the number of sources — a fabricated reference, which the answer must not pass off.

Marker forms (decided here, once):
- `[3]` one source; `[1][2]` two adjacent markers; `[1, 2]` or `[1;2]` a list in one
  pair of brackets. Spaces inside the brackets are allowed: `[ 2 ]`.
- `[-1]` and `[0]` are markers too, so they can be reported as invalid.
- Not markers: ranges like `[1-3]`, words (`[citation needed]`, `[^1]`), empty `[]`.
  A range is left out on purpose: expanding `[1-999999]` would turn one typo into a
  million citations.
- A marker is read as a reader sees it (`raglab.ingest.markers.marker_spans`): `［２］`, `【2】`,
  `[**2**]` or `&#91;2&#93;` look like `[2]` on screen, so they are `[2]` here too, and a
  made-up one is flagged like any other.
A number in brackets that is not meant as a citation (a year such as `[2024]`) is read
as one and will be reported invalid: in an answer, brackets around a number cite.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from raglab.ingest.markers import marker_spans
from raglab.records import Citation, Hit

# The inside of a pair of brackets that cites: integers separated by commas or semicolons.
_NUMBERS = re.compile(r"-?\d+(?:\s*[,;]\s*-?\d+)*")
_NUMBER = re.compile(r"-?\d+")

MARKER_DIGITS = 20
"""Digits of a marker's number read exactly. A longer number points at no source either,
so it is kept as a marker (and flagged), read as 10**MARKER_DIGITS: converting or printing
a number of thousands of digits, which a hostile model can write, fails in Python."""


def marker_number(digits: str) -> int:
    """The number a marker cites, as `int`, capped at MARKER_DIGITS digits.

    >>> marker_number("7"), marker_number("-1"), marker_number("9" * 5000) == 10**MARKER_DIGITS
    (7, -1, True)
    """
    sign = -1 if digits.startswith("-") else 1
    digits = digits.lstrip("-")
    return sign * (int(digits) if len(digits) <= MARKER_DIGITS else 10**MARKER_DIGITS)


def parse_citations(text: str) -> list[int]:
    """Every cited number in `text`, in order of appearance, duplicates kept.

    Duplicates are kept so the list is a faithful record of the text (how often each
    source is cited); `verify_citations` de-duplicates.

    >>> parse_citations("Leave is 25 days [1]. Carry-over is 5 [2][1], see also [1, 3].")
    [1, 2, 1, 1, 3]
    >>> parse_citations("No markers [1-3] [note] [] here.")
    []
    >>> parse_citations("Look-alikes cite too: ［２］, 【3】, [**4**].")
    [2, 3, 4]
    """
    return [
        marker_number(n)
        for marker in marker_spans(text)
        if _NUMBERS.fullmatch(marker.inside)
        for n in _NUMBER.findall(marker.inside)
    ]


@dataclass(frozen=True, slots=True)
class CitationReport:
    """The markers of one answer, checked against the sources of its prompt.

    `citations`: the valid markers, de-duplicated, in order of first appearance, each
    with the hit it points to (`sources[n - 1]`).
    `invalid`: markers pointing at no retrieved source, de-duplicated, same order.
    """

    citations: tuple[Citation, ...]
    invalid: tuple[int, ...]

    @property
    def ok(self) -> bool:
        """True when no marker points outside the retrieved sources.

        An answer without any marker is ok by this measure: whether its claims are
        supported is a question for evaluation (faithfulness), not for the markers.
        """
        return not self.invalid


def verify_citations(text: str, sources: Sequence[Hit]) -> CitationReport:
    """Check each `[n]` in `text` against `sources` (source `[n]` is `sources[n - 1]`).

    >>> from raglab.records import Chunk
    >>> hits = [Hit(Chunk(f"d{i}.md", 0, "t", 0, 1), 1.0) for i in (1, 2, 3)]
    >>> report = verify_citations("True [2]. Made up [7]. Again [2][0].", hits)
    >>> [(c.n, c.hit.chunk.doc_id) for c in report.citations], report.invalid, report.ok
    ([(2, 'd2.md')], (7, 0), False)
    """
    valid: list[Citation] = []
    invalid: list[int] = []
    seen: set[int] = set()
    for n in parse_citations(text):
        if n in seen:
            continue
        seen.add(n)
        if 1 <= n <= len(sources):
            valid.append(Citation(n, sources[n - 1]))
        else:
            invalid.append(n)
    return CitationReport(tuple(valid), tuple(invalid))
