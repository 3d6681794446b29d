"""The offline planner: decomposition rules, the sufficiency check, refined queries.

No model: a question's shape is read with a few rules, the common multi-step shapes:

- **X and Y**: "How soon must I report it, and how long before it is wiped?" — two
  questions in one, split at ", and how/what/when...": each part needs its own evidence;
- **comparisons**: "Which has a longer warranty, the GX-T100 or the GX-T200-PRO?" — the
  shared question asked of each option;
- **chains**, "the … of the … that …": "the warranty of the part the troubleshooting guide
  says to install" — first find the thing the clause describes (the part: GX-PA24), then
  ask the rest about it. The second search depends on what the first found.

The first step always searches the question as asked: many questions need nothing more,
and the sufficiency check (`raglab.agent.sufficiency`) then stops at once. After each step
the check runs on everything gathered; for the first part still missing, the next query is
refined with what earlier steps found (codes, product and place names from the passage
that answered the part it depends on). The planner stops when every part is met, or when
its next query would repeat one already searched, or when the last search found nothing
new.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from raglab.agent.sufficiency import Need, meets, missing, passage_words
from raglab.agent.tools import Action
from raglab.agent.trace import Step
from raglab.ingest.sentences import candidate_sentences
from raglab.ingest.stems import content_stems
from raglab.records import Hit
from raglab.text import STOPWORDS

# Where a question holds two questions: ", and how ...", " and when ...".
_SECOND_QUESTION = re.compile(
    r",?\s+and\s+(?=(?:how|what|when|which|who|where|why|is|are|does|do|can|for)\b)", re.I
)
# Two options sharing one question: "..., the A or the B", "between A and B".
_OPTIONS = re.compile(
    r"^(?P<pre>.*?(?:\bbetween|\bof|\bfor|,))\s+(?:the\s+)?(?P<a>[\w-]+(?:\s+[\w-]+){0,2}?)"
    r"\s+(?:and|or|versus|vs\.?)\s+(?:the\s+)?(?P<b>[\w-]+(?:\s+[\w-]+){0,2})(?P<post>\W*)$",
    re.I,
)
# What starts a clause that describes the thing before it: "the office that ...", "the
# part the guide says ...", "the account I use ...".
_CLAUSE_STARTS = frozenset(
    {"that", "which", "who", "whose", "where", "when", "with", "i", "you", "we", "the"}
)
_NOT_A_HEAD = frozenset({"of", "for", "in", "on", "to", "at", "by", "from", "a", "an", "the", "is"})
_WORD = re.compile(r"[\w-]+")

# Names a passage can hand the next search: codes (GX-PA24, E-402, L4), versions (4.4.2),
# CamelCase products (TripDesk) and capitalised names inside a sentence (Lisbon, Pro).
_CODE = re.compile(r"\b[A-Z][A-Za-z]*-[A-Z0-9][A-Z0-9-]*\b|\b[A-Z]\d\b|\b\d+\.\d+\.\d+\b")
_NUMBER = re.compile(r"(?<![\w.,-])\d+(?![\w.,-]\d)")
_NAME = re.compile(
    r"(?<=[a-z,;:(]\s)[A-Z][A-Za-z]+(?:\s[A-Z][A-Za-z]+)*(?![\w-])"  # inside a sentence
    r"|\b[A-Z][a-z]+[A-Z]\w+"  # CamelCase
    r"|^\s*[A-Z][A-Za-z]+(?=:)"  # a table cell's column name ("Pro: 25 months")
)
MAX_ANCHORS = 3
MIN_CLAUSE_WORDS = 3
"""The content words a clause needs to describe a thing worth a search of its own."""


@dataclass(frozen=True, slots=True)
class Part:
    """One part of a question: its text, and the part it depends on (a chain's clause)."""

    text: str
    depends_on: int | None = None


@dataclass(frozen=True, slots=True)
class Plan:
    """A question's parts and the shape they were read from."""

    shape: str  # "single", "and", "comparison" or "chain" (the last rule that applied)
    parts: tuple[Part, ...]


def decompose(question: str) -> Plan:
    """Split a question into parts by the rules above.

    >>> [p.text for p in decompose("How long is probation, and how much is the allowance?").parts]
    ['How long is probation', 'how much is the allowance']
    >>> plan = decompose("What is the warranty of the part the guide says to install?")
    >>> plan.shape, [(p.text, p.depends_on) for p in plan.parts]
    ('chain', [('part the guide says to install', None), ('What is the warranty of the part', 0)])
    """
    text = question.strip().rstrip("?.! ")
    pieces = [p.strip() for p in _SECOND_QUESTION.split(text) if p.strip()]
    shape = "and" if len(pieces) > 1 else "single"
    if len(pieces) == 1 and (options := _OPTIONS.match(text)):
        pre, post = options["pre"].rstrip(","), options["post"]
        pieces = [f"{pre} {options['a']}{post}", f"{pre} {options['b']}{post}"]
        shape = "comparison"
    parts: list[Part] = []
    for piece in pieces:
        chain = _chain(piece)
        if chain is None:
            parts.append(Part(piece))
        else:
            shape = "chain"
            parts += [Part(chain[0]), Part(chain[1], depends_on=len(parts))]
    return Plan(shape, tuple(parts))


def _chain(text: str) -> tuple[str, str] | None:
    """(the clause describing a thing, the rest asked about it), or None.

    The last "the HEAD <clause start>" in the text, HEAD being one to three words; the
    clause runs to the next comma, and what follows the comma belongs to the rest."""
    words = _WORD.findall(text)
    # the index of the first word after each comma: where a clause must end
    commas = {len(_WORD.findall(text[: m.start()])) for m in re.finditer(",", text)}
    lowered = [w.lower() for w in words]
    found = None
    for i, word in enumerate(lowered):
        if word != "the":
            continue
        for size in (1, 2, 3):
            head = lowered[i + 1 : i + 1 + size]
            after = i + 1 + size
            if len(head) < size or any(w in _NOT_A_HEAD for w in head) or after >= len(words):
                break
            if _CODE.search(" ".join(words[i + 1 : after])):  # "the GX-T200-PRO": already named
                break
            if lowered[after] in _CLAUSE_STARTS and after + 1 < len(words):
                found = (i, after)
                break
    if found is None:
        return None
    the, clause = found
    end = min([c for c in commas if c > clause] or [len(words)])
    inner = " ".join(words[the + 1 : end])
    outer = " ".join(words[:clause] + words[end:])
    if len(content_stems(inner)) < MIN_CLAUSE_WORDS:  # "the doctor when I'm ill": no chain
        return None
    return inner, outer


def names_in(text: str) -> list[str]:
    """The codes and names in `text`, codes first, then names, then bare numbers, each once.

    >>> names_in("If your system has no C-wire, install the GX-PA24 adapter from Lisbon.")
    ['GX-PA24', 'Lisbon']
    >>> names_in("An employee rated 3 or higher moves toward the midpoint.")
    ['3']
    >>> names_in(" Pro: 25 months")
    ['Pro', '25']
    """
    codes = [m.group() for m in _CODE.finditer(text)]
    names = [m.group().strip() for m in _NAME.finditer(text)]
    names = [name for name in names if name.lower() not in STOPWORDS]
    numbers = [m.group() for m in _NUMBER.finditer(text)]
    return [n for n in dict.fromkeys([*codes, *names, *numbers]) if n != "C-wire"]


def passage(hit: Hit) -> str:
    """What the sufficiency check reads of a hit: its title and headings, then its text
    (the heading says "Troubleshooting > E-101" where the text only says what to do)."""
    chunk = hit.chunk
    return f"{chunk.title} > {chunk.heading}\n{chunk.text}"


def bridge(part: Part, hits: Sequence[Hit], question: str) -> tuple[str, ...]:
    """What the passage meeting `part` names that the question does not: the thing the
    next part asks about (`MAX_ANCHORS` at most). From the clause of its sentences that
    shares the most words with the part (a table row's cell "Pro: 25 months" names Pro);
    sentences written as instructions to a model are never read (`candidate_sentences`)."""
    need = need_of(part)
    asked = {word.lower() for word in _WORD.findall(question)}
    for hit in hits:
        if not meets(need, passage(hit)):
            continue
        clauses = [c for s in candidate_sentences([hit]) for c in s.text.split(";") if c.strip()]
        ranked = sorted(clauses, key=lambda clause: -len(need.words & passage_words(clause)))
        found = [[n for n in names_in(clause) if n.lower() not in asked] for clause in ranked[:3]]
        named = [names for names in found if any(not n.isdigit() for n in names)]
        if named or any(found):  # a clause with a name beats a better one with a number
            best = named[0] if named else next(names for names in found if names)
            return tuple(best[:MAX_ANCHORS])
    return ()


def need_of(part: Part, anchors: tuple[str, ...] = ()) -> Need:
    return Need(content_stems(part.text), anchors)


def needs(plan: Plan, hits: Sequence[Hit], question: str) -> list[Need | None]:
    """Each part's `Need`; None for a part whose clause has not been answered yet (it
    cannot be met: the thing it asks about is still unknown)."""
    result: list[Need | None] = []
    for part in plan.parts:
        if part.depends_on is None:
            result.append(need_of(part))
            continue
        anchors = bridge(plan.parts[part.depends_on], hits, question)
        result.append(need_of(part, anchors) if anchors else None)
    return result


def parts_missing(plan: Plan, hits: Sequence[Hit], question: str) -> list[int]:
    """The parts no gathered passage meets yet, in order (`raglab.agent.sufficiency.missing`)."""
    known = needs(plan, hits, question)
    passages = [passage(hit) for hit in hits]
    checkable = [(i, n) for i, n in enumerate(known) if n is not None]
    unmet = {checkable[j][0] for j in missing([n for _, n in checkable], passages)}
    return sorted(unmet | {i for i, n in enumerate(known) if n is None})


@dataclass(frozen=True, slots=True)
class RulePlanner:
    """The offline planner: the whole question first, then one refined search per missing
    part; `k` hits a search."""

    k: int = 5

    def decide(self, question: str, steps: Sequence[Step]) -> Action:
        if not steps:
            return Action("search", question, k=self.k, why="first look: the question as asked")
        hits = gathered(steps)
        plan = decompose(question)
        unmet = parts_missing(plan, hits, question)
        if not unmet:
            return Action("stop", why=f"enough evidence for every part ({len(plan.parts)})")
        if steps[-1].new == 0:
            return Action("stop", why="the last search found nothing new")
        part = plan.parts[unmet[0]]
        query, why = self.refined(plan, part, hits, question)
        if content_stems(query) in {content_stems(s.action.query) for s in steps}:
            return Action("stop", why=f"no new query for part {unmet[0] + 1}: {part.text!r}")
        return Action("search", query, k=self.k, why=why)

    def refined(
        self, plan: Plan, part: Part, hits: Sequence[Hit], question: str
    ) -> tuple[str, str]:
        """The next query for a missing part, and why: with what its clause found."""
        if part.depends_on is not None:
            anchors = bridge(plan.parts[part.depends_on], hits, question)
            if anchors:
                found = ", ".join(anchors)
                return f"{part.text} {' '.join(anchors)}", f"the clause found {found}: ask about it"
        return part.text, f"no passage answers {part.text!r} yet"


def gathered(steps: Sequence[Step]) -> list[Hit]:
    """Every distinct chunk the steps returned, in the order first found."""
    seen: dict[str, Hit] = {}
    for step in steps:
        for hit in step.hits:
            seen.setdefault(hit.chunk.id, hit)
    return list(seen.values())
