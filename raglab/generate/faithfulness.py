"""Faithfulness: does the text an answer cites say what the answer says, sentence by sentence?

A verified citation (`raglab.generate.citations`) proves only where an answer points. A model can
cite source [1] for a sentence that [1] never states: a changed number, an added claim.
`check_faithfulness` reads each sentence of an answer against the text of the sources it
cites, offline and without a model. A sentence is **supported** when

1. it cites at least one source, and every one of its markers points at a retrieved source;
2. every number it states occurs in the cited text (numbers are the facts most often
   changed, and one changed digit leaves the words the same);
3. at least `MIN_COVERAGE` of its content words (stems, stopwords left out) occur in the
   cited text.

This is a lexical judge: it catches a wrong number, a fabricated marker and a claim in
words the source never uses; it is fooled by a negation ("not 25 days") and may reject a
faithful paraphrase in other words. The field's stronger judges are models (an NLI
cross-encoder, or an LLM asked for a verdict per sentence, `raglab.generate.llm_judge`), which need
weights or a server.

>>> from raglab.records import Chunk, Hit
>>> source = Hit(Chunk("leave.md", 0, "Staff get 25 days of annual leave.", 0, 34), 1.0)
>>> report = check_faithfulness("Staff get 25 days of leave [1]. They get 30 days [1].", [source])
>>> [(s.supported, s.reason) for s in report.sentences]
[(True, ''), (False, 'states 30, which [1] does not')]
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from raglab.generate.citations import parse_citations
from raglab.generate.extractive import without_caution
from raglab.generate.generation import is_abstention
from raglab.ingest.markers import without_markers
from raglab.ingest.stems import content_stems
from raglab.records import Hit
from raglab.validation import check_number

MIN_COVERAGE = 0.5
"""Share of a sentence's content words that its cited text must contain. Half: a faithful
paraphrase keeps the key words (names, numbers, the topic) but may reword the rest."""

# A sentence ends at . ! or ? before a space and a capital, digit or bracket; a run of
# markers just after the full stop ("... leave. [1]") belongs to the sentence before it.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")
_LEADING_MARKERS = re.compile(r"^(?:\[[^\]]*\]\s*)+")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


@dataclass(frozen=True, slots=True)
class SentenceCheck:
    """One sentence of an answer and the verdict on it.

    `cited`: its markers, in order; `support`: the share of its content words found in
    the cited text (0 to 1); `reason`: why it is not supported ("" when it is).
    """

    text: str
    cited: tuple[int, ...]
    support: float
    supported: bool
    reason: str = ""


@dataclass(frozen=True, slots=True)
class FaithfulnessReport:
    """Every sentence of one answer, checked against the sources it cites."""

    sentences: tuple[SentenceCheck, ...]

    @property
    def score(self) -> float:
        """The share of sentences supported; 1.0 for an answer with none (an abstention
        claims nothing, so nothing in it is unfaithful)."""
        if not self.sentences:
            return 1.0
        return sum(s.supported for s in self.sentences) / len(self.sentences)


def answer_sentences(answer: str) -> list[str]:
    """The sentences of an answer, each with the markers that follow it.

    >>> answer_sentences("Leave is 25 days [1]. Carry over 5. [2] Ask HR e.g. today [1].")
    ['Leave is 25 days [1].', 'Carry over 5. [2]', 'Ask HR e.g. today [1].']
    """
    sentences: list[str] = []
    for piece in _SENTENCE_END.split(answer.strip()):
        markers = _LEADING_MARKERS.match(piece)
        if markers and sentences:  # "... leave. [1] Next" -> "[1]" ends the sentence before
            sentences[-1] += " " + markers[0].strip()
            piece = piece[markers.end() :]
        if piece.strip():
            sentences.append(piece.strip())
    return sentences


def numbers(text: str) -> set[str]:
    """The numbers written in `text`, thousands separators dropped: {"1000", "2.5"}."""
    return {n.replace(",", "") for n in _NUMBER.findall(text)}


def unsupported_numbers(sentence: str, cited_text: str) -> set[str]:
    """The numbers `sentence` states that `cited_text` does not (rule 2 of the module doc).

    Whole numbers are compared, never substrings ("25" is not in "250"); thousands
    separators are dropped ("10,000" is "10000"); a citation marker is no number.

    >>> sorted(unsupported_numbers("25 days, 10,000 requests [2].", "250 days, 10000 requests"))
    ['25']
    """
    return numbers(without_markers(sentence, " ")) - numbers(cited_text)


def citation_problem(cited: Sequence[int], n_sources: int) -> str:
    """Why a sentence citing `cited` cannot be supported by `n_sources` sources ("" if it can).

    >>> citation_problem([], 2), citation_problem([3], 2), citation_problem([2], 2)
    ('cites no source', 'cites [3], which is no retrieved source', '')
    """
    invalid = [n for n in cited if not 1 <= n <= n_sources]
    if not cited:
        return "cites no source"
    if invalid:
        return f"cites [{invalid[0]}], which is no retrieved source"
    return ""


@dataclass(frozen=True, slots=True)
class SourceFacts:
    """What one source states, as the checks compare it: its content stems and numbers.

    Read once per source, not once per sentence that cites it, so checking an answer costs
    time in proportion to its length. The source's own footnote marks (`[3]`, `［３］`, ...)
    are taken out first: a footnote number is no fact the source states.
    """

    stems: frozenset[str]
    numbers: frozenset[str]

    @classmethod
    def of(cls, hit: Hit) -> SourceFacts:
        text = without_markers(hit.chunk.text, " ")
        return cls(content_stems(text), frozenset(numbers(text)))


def check_sentence(
    sentence: str, facts: Sequence[SourceFacts], min_coverage: float
) -> SentenceCheck:
    """The verdict on one sentence against the sources it cites (source [n] is facts[n-1])."""
    cited = tuple(parse_citations(sentence))
    claim = without_markers(sentence, " ")
    if problem := citation_problem(cited, len(facts)):
        return SentenceCheck(sentence, cited, 0.0, False, problem)
    evidence = [facts[n - 1] for n in dict.fromkeys(cited)]
    words = content_stems(claim)
    found = {w for w in words if any(w in e.stems for e in evidence)}
    support = len(found) / len(words) if words else 0.0
    markers = "".join(f"[{n}]" for n in dict.fromkeys(cited))
    missing = sorted(n for n in numbers(claim) if not any(n in e.numbers for e in evidence))
    if missing:
        return SentenceCheck(
            sentence, cited, support, False, f"states {missing[0]}, which {markers} does not"
        )
    if support < min_coverage:
        return SentenceCheck(
            sentence,
            cited,
            support,
            False,
            f"only {support:.0%} of its words are in {markers}",
        )
    return SentenceCheck(sentence, cited, support, True)


def check_faithfulness(
    answer: str, sources: Sequence[Hit], *, min_coverage: float = MIN_COVERAGE
) -> FaithfulnessReport:
    """Check every sentence of `answer` against the sources it cites (see the module doc).

    `sources` are the prompt's sources in prompt order: marker `[n]` is `sources[n - 1]`.
    An abstention has no sentences to check.
    """
    min_coverage = check_number("min_coverage", min_coverage, minimum=0, maximum=1)
    if is_abstention(answer):
        return FaithfulnessReport(())
    answer = without_caution(answer)  # a cautious answer's first line claims no fact
    facts = [SourceFacts.of(hit) for hit in sources]
    return FaithfulnessReport(
        tuple(check_sentence(s, facts, min_coverage) for s in answer_sentences(answer))
    )
