"""A follow-up made standalone, offline and deterministic: the rules, from the shapes.

Retrieval sees one question at a time. "What about the second one?" or "How much does it
cost?" retrieve nothing useful alone: the words that say what they are about were in
earlier turns. The rewrite puts them back, and leaves alone a question that needs no help:

1. **Does it stand alone?** A follow-up shows itself by its shape, not its topic
   (`reason_to_rewrite`): it points at a listed item ("the second one"), opens with an
   ellipsis ("and ...", "what about ...", "how about ..."), is too short to name a topic
   (fewer than 2 content words), or leans on a pronoun ("it", "they", "that", ...) while
   naming fewer than `SELF_CONTAINED` content words of its own. Anything else is
   self-contained, and a topic switch is just that: a question that names its own topic.
   It is searched as asked.
2. **Which turn does it lean on?** The last one, unless the follow-up shares a word with
   an earlier turn and none with the last: "back to the laptops, ..." reaches two turns back.
3. **What does it carry?** That turn's standalone question's topic words (itself
   rewritten, so a topic lives on through a chain of follow-ups) and the entities its
   answer named (product codes, error codes, capitalised names: `entities`). "The second
   one" becomes the second item the answer listed (`listed_items`).

No rule names a corpus word: the same rules hold for conversations never seen.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from raglab.conversation.turns import Turn
from raglab.ingest.stems import stem
from raglab.text import STOPWORDS, tokenize

SELF_CONTAINED = 4
"""Content words a question with a pronoun needs to stand alone: "Is it OK to accept a
bottle of wine from a supplier?" names its topic (5); "Can they be carried over?" does
not (1)."""

MAX_CARRIED = 6
"""At most this many words are carried: enough for a topic, too few to drown the question."""

REFERENCES = frozenset(
    [
        "it",
        "its",
        "they",
        "them",
        "their",
        "theirs",
        "that",
        "those",
        "this",
        "these",
        "he",
        "she",
        "him",
        "her",
        "his",
        "one",
        "ones",
        "former",
        "latter",
        "same",
    ]
)
"""Words that point at something said before ("there" is not one: "is there ..." points nowhere)."""

OPENERS = ("and ", "what about ", "how about ", "what if ", "also ", "or ", "but ", "same ")
"""How an elliptical follow-up begins: "And for part-timers?", "What about Paris?"."""

ORDINALS = {"first": 0, "1st": 0, "second": 1, "2nd": 1, "third": 2, "3rd": 2, "fourth": 3,
            "fifth": 4, "last": -1}  # fmt: skip
# "the second one", "the last of them", "the third?" -- never "the first day" (a noun follows).
_ORDINAL = re.compile(
    r"\bthe ("
    + "|".join(ORDINALS)
    + r")(?: (?:one|ones|item|option|of them|of those)\b|(?=\s*[?.!,;]|$))",
    re.IGNORECASE,
)
_CODE = re.compile(r"\b[A-Za-z]{1,5}(?:-[A-Za-z0-9]+)*-?\d[A-Za-z0-9.]*(?:-[A-Za-z0-9]+)*\b")
# A capitalised name inside a sentence: after a word and a space, never before a hyphen.
_NAME = re.compile(r"(?<=[^.!?\s] )[A-Z][a-z]+(?: [A-Z][a-z]+)*(?![-\w])")


@dataclass(frozen=True, slots=True)
class Rewrite:
    """A question and the standalone form retrieval searches.

    `reason`: why it was rewritten ("ordinal", "ellipsis", "short", "pronoun"), or
    "self-contained" / "first turn" when `standalone == question`; `antecedent`: the
    number of the turn it leans on (0 if none); `carried`: the words taken from it.
    """

    question: str
    standalone: str
    reason: str
    antecedent: int = 0
    carried: tuple[str, ...] = ()

    @property
    def rewritten(self) -> bool:
        return self.standalone != self.question


def content_words(text: str) -> list[str]:
    """The words of `text` that say what it is about: no stopwords, no pointing words.

    >>> content_words("Can they be carried over to next year?")
    ['carried', 'next', 'year']
    """
    return [w for w in tokenize(text) if w not in STOPWORDS and w not in REFERENCES]


def reason_to_rewrite(question: str) -> str | None:
    """Why `question` cannot be searched alone, or None when it stands alone.

    >>> reason_to_rewrite("What about the second one?")
    'ordinal'
    >>> reason_to_rewrite("And for part-time staff?")
    'ellipsis'
    >>> reason_to_rewrite("Can they be carried over to next year?")
    'pronoun'
    >>> print(reason_to_rewrite("Is it OK to accept a bottle of wine from a supplier?"))
    None
    """
    lowered = " ".join(tokenize(question))
    words = content_words(question)
    if _ORDINAL.search(question):
        return "ordinal"
    if (lowered + " ").startswith(OPENERS):
        return "ellipsis"
    if len(words) < 2:
        return "short"
    if REFERENCES.intersection(tokenize(question)) and len(words) < SELF_CONTAINED:
        return "pronoun"
    return None


def entities(text: str) -> list[str]:
    """Named things in `text`, in order of first mention: codes (GX-T100, E-204, 4.3.1),
    then capitalised names not opening a sentence.

    >>> entities("Error E-204 means Wi-Fi failed. Update the GX-T100 in the Globex Home app.")
    ['E-204', 'GX-T100', 'Globex Home']
    """
    codes = [m.group(0) for m in _CODE.finditer(text) if any(c.isalpha() for c in m.group(0))]
    names = [m.group(0) for m in _NAME.finditer(text) if m.group(0).lower() not in STOPWORDS]
    return list(dict.fromkeys(codes + names))


def listed_items(answer: str) -> list[str]:
    """What an answer listed, in order: its list lines if it has some, else its entities.

    >>> listed_items("- Thermo Lite\\n- Thermo Pro")
    ['Thermo Lite', 'Thermo Pro']
    """
    lines = [re.sub(r"^\s*(?:[-*•]|\d+[.)])\s+", "", line) for line in answer.splitlines()]
    listed = [
        line.strip()
        for line, raw in zip(lines, answer.splitlines())
        if line != raw and line.strip()
    ]
    return listed or entities(re.sub(r"\[\d+\]", "", answer))


def antecedent(question: str, turns: Sequence[Turn]) -> Turn:
    """The turn `question` leans on: the last one, unless it shares no word with the question
    and an earlier turn does (the most recent such)."""
    asked = {stem(w) for w in content_words(question)}

    def shares(turn: Turn) -> bool:
        return bool(asked & {stem(w) for w in content_words(turn.standalone)})

    if shares(turns[-1]):
        return turns[-1]
    return next((t for t in reversed(turns[:-1]) if shares(t)), turns[-1])


def carried_words(question: str, turn: Turn) -> tuple[str, ...]:
    """The topic of `turn` the question lacks: its standalone question's content words, then
    the entities its answer named; words the question already has are left out."""
    have = {stem(w) for w in content_words(question)}
    found: list[str] = []
    for word in [*content_words(turn.standalone), *entities(re.sub(r"\[\d+\]", "", turn.answer))]:
        key = stem(word.lower())
        if key not in have and word.lower() not in question.lower():
            have.add(key)
            found.append(word)
    return tuple(found[:MAX_CARRIED])


def standalone(question: str, turns: Sequence[Turn]) -> Rewrite:
    """`question` rewritten to be searched without `turns` (the conversation so far, oldest
    first), or left as it is when it stands alone.

    >>> first = Turn("c1", 1, "Which thermostats do you sell?", "Which thermostats do you sell?",
    ...              "We sell the GX-T100 Thermo Lite and the GX-T200-PRO Thermo Pro [1].")
    >>> standalone("How much is the second one?", [first]).standalone
    'How much is GX-T200-PRO? (thermostats sell GX-T100 Thermo Lite Thermo Pro)'
    >>> standalone("How do I reset my password?", [first]).reason
    'self-contained'
    """
    if not turns:
        return Rewrite(question, question, "first turn")
    reason = reason_to_rewrite(question)
    if reason is None:
        return Rewrite(question, question, "self-contained")
    turn = antecedent(question, turns)
    text = question
    match = _ORDINAL.search(question)
    if match:
        items = list(turn.items) or listed_items(turn.answer)
        position = ORDINALS[match.group(1).lower()]
        if -len(items) <= position < len(items):
            text = question[: match.start()] + items[position] + question[match.end() :]
    carried = carried_words(text, turn)
    context = f" ({' '.join(carried)})" if carried else ""
    return Rewrite(question, text.rstrip(" ?") + "?" + context, reason, turn.n, carried)
