"""Named things in a sentence, found without a model, and the relation a pattern names.

What counts as an entity here (GraphRAG asks a language model; these rules are what a
model would mostly find in a handbook or a product site):

- a **code**: capitals and digits joined by hyphens, `E-204`, `GX-T200-PRO`, `AC-12`;
- an **acronym**: two to five capitals, `HR`, `VPN`, `MFA`;
- a **team**: a word or two before "team" or "desk", `security team`, `IT desk`;
- a **name**: a run of capitalised words, `Globex Home`, `Acme Authenticator`, `Berlin`.
  A capitalised word at the start of a sentence may just be the sentence's first word, so
  it is a `Candidate` with `initial=True`: it becomes an entity only if the same name also
  appears capitalised inside some sentence (`raglab.graph.building` decides, over the
  reader's own sentences).

Relations are co-occurrence in one sentence; `relation_kind` types one when the words
between two mentions match a pattern ("E-204 ... fixed in 4.3.1" -> "fixes").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from raglab.text import STOPWORDS

__all__ = ["Candidate", "candidates", "relation_kind"]

_CODE = re.compile(r"\b[A-Z][A-Z0-9]{0,5}(?:-[A-Z0-9]+)+\b")
_ACRONYM = re.compile(r"\b[A-Z]{2,5}\b")
_TEAM = re.compile(r"(?<!['\u2019])\b((?:[A-Za-z]+ )?[A-Za-z]+) (team|desk)\b")
_PART = r"[A-Z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*\+?"
_NAME = re.compile(rf"{_PART}(?: (?:of |de |do )?{_PART})*")
_WORD_BEFORE = re.compile(r"[A-Za-z0-9]$")
_AFTER_NAME = re.compile(r"(?<![.:;!?] )(?<!^)\b[A-Z][a-z][A-Za-z]* $")

CALENDAR = frozenset(
    [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
    ]
)
"""Month and day names are capitalised but name no thing: they would join every date."""

NOT_NAMES = STOPWORDS | CALENDAR | frozenset({"fix", "cause", "note", "step", "see"})
"""Capitalised words that are never a name on their own (a label such as "Fix:")."""

RELATIONS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("fixes", re.compile(r"\b(fix(es|ed)?|resolves?|adds?)\b", re.IGNORECASE)),
    ("replaces", re.compile(r"\b(replac(es|ed)|supersedes?|instead of)\b", re.IGNORECASE)),
    ("approves", re.compile(r"\bapprov(es|ed|al)\b", re.IGNORECASE)),
    ("reports to", re.compile(r"\b(report\w* (\w+ )?to|escalat\w* to|contact)\b", re.IGNORECASE)),
    ("needs", re.compile(r"\b(needs?|requires?|must use)\b", re.IGNORECASE)),
    ("part of", re.compile(r"\b(part of|includes?|included in)\b", re.IGNORECASE)),
)
"""A relation's kind, by the words between two mentions; the first pattern that matches wins."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """A mention in a sentence: its text, its kind, where it starts, and whether it is the
    sentence's first word (then it may be an ordinary word, capitalised by position)."""

    name: str
    kind: str  # "code", "acronym", "team" or "name"
    start: int
    initial: bool = False

    def tail(self) -> Candidate | None:
        """A sentence-initial name without its first word ("Use Ledgerly" -> "Ledgerly"),
        for when the whole is never met inside a sentence; None for one word."""
        words = self.name.split(" ", 1)
        if len(words) == 1:
            return None
        return Candidate(words[1], self.kind, self.start + len(words[0]) + 1)

    @property
    def key(self) -> str:
        """One entity however it is written: "Security team" and "security team" are one."""
        return " ".join(self.name.lower().split())


def candidates(sentence: str) -> list[Candidate]:
    """The named things of `sentence`, in order of their first character, each span once.

    Codes first, then teams, acronyms and names outside them, so `GX-T200-PRO` is one
    code, never the acronym `GX` and the name `T200`.

    >>> [(c.name, c.kind) for c in candidates("On the GX-T100, E-204 means the Wi-Fi failed.")]
    [('GX-T100', 'code'), ('E-204', 'code'), ('Wi-Fi', 'name')]
    >>> [(c.name, c.initial) for c in candidates("Report it to the security team in Berlin.")]
    [('Report', True), ('security team', False), ('Berlin', False)]
    """
    found: list[Candidate] = []
    taken: list[tuple[int, int]] = []

    def free(start: int, end: int) -> bool:
        return all(end <= a or start >= b for a, b in taken)

    for m in _CODE.finditer(sentence):
        found.append(Candidate(m[0], "code", m.start()))
        taken.append(m.span())
    for m in _TEAM.finditer(sentence):
        words = [w for w in m[1].split() if w.isupper() or w.lower() not in STOPWORDS]
        if not words or not free(m.start(), m.end()):
            continue
        name = " ".join([*words, m[2]])
        found.append(Candidate(name, "team", m.end() - len(name)))
        taken.append((m.end() - len(name), m.end()))
    for m in _ACRONYM.finditer(sentence):
        if _AFTER_NAME.search(sentence[: m.start()]):
            continue  # "Acme ID", "AcmeConnect VPN": the end of a name, found below
        if free(*m.span()):
            found.append(Candidate(m[0], "acronym", m.start()))
            taken.append(m.span())
    masked = list(sentence)  # a name never runs into a code or a team found above
    for a, b in taken:
        masked[a:b] = "#" * (b - a)
    for m in _NAME.finditer("".join(masked)):
        start, end = m.span()
        if not free(start, end) or (start and _WORD_BEFORE.search(sentence[:start])):
            continue
        if sentence[end : end + 1] == ":":  # a label ("Fix:", a table's "Meaning:")
            continue
        name = _without_leading_stopwords(m[0].rstrip())
        if len(name) < 2:  # "C", "W1"'s letter: a wire label, not a name
            continue
        start = end - len(name)
        found.append(Candidate(name, "name", start, initial=_is_first_word(sentence, start)))
        taken.append((start, end))
    return sorted(found, key=lambda c: c.start)


def _without_leading_stopwords(name: str) -> str:
    """ "The Globex Home app" -> "Globex Home"; "If" -> ""."""
    words = name.split()
    while words and words[0].lower() in NOT_NAMES:
        words = words[1:]
    while words and words[-1].lower() in NOT_NAMES:
        words = words[:-1]
    return " ".join(words)


_CLAUSE_START = re.compile(r"(?:^|[.:;!?(\u2026])[\s*\"'\u201c-]*$")


def _is_first_word(sentence: str, start: int) -> bool:
    """True when `start` opens the sentence or a clause of it (after ":", ";", "." ...):
    a table row "Time: 10:00; What happens: Collect your laptop" opens four clauses."""
    return bool(_CLAUSE_START.search(sentence[:start]))


def relation_kind(between: str) -> str:
    """The kind of relation the words `between` two mentions name, or "co-occurs".

    >>> relation_kind(" was fixed in firmware ")
    'fixes'
    >>> relation_kind(" and ")
    'co-occurs'
    """
    for kind, pattern in RELATIONS:
        if pattern.search(between):
            return kind
    return "co-occurs"
