"""Per-index calibration: what the answerer's scores look like when the answer is not there.

A best sentence scoring 0.6 means one thing on a corpus of short policy notes and another
on long technical manuals, and another again to MiniLM than to the hashing embedder. A rule
fitted on raw scores learns one corpus's scale. So when an index is built, raglab asks it
questions it cannot answer ("null questions") and keeps how the answerer's scores fall for
them: the index's own *null distribution*. At ask time a score is read as its percentile in
that distribution ("higher than 90% of the unanswerable questions here"), which means the
same on any corpus (`NullCalibration.relative`).

A null question is made from one of the corpus's own sentences: its rarest words that are
not in its title or heading, the rarest swapped for a common word the corpus never uses
("Unused parts can be returned within 30 days of delivery." becomes "What is the warranty
of within 30 days?"). It reads like the corpus, retrieves the right document and shares a
few words with a sentence, yet what it asks is not stated: the near miss the rule must
refuse.

Who may read the calibration (`raglab.pipeline.calibrate`): it is computed per tenant from
the chunks *every* reader of the tenant may read (those with no groups), never from a
group's documents, so it holds nothing a reader of the tenant could not read themselves.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from raglab.generate.abstention import AnswerFeatures, _stored_rules
from raglab.ingest.sentences import split_sentences, text_units
from raglab.ingest.stems import chunk_stems, content_stems, stem
from raglab.records import Chunk
from raglab.text import STOPWORDS, content_hash, tokenize

__all__ = [
    "CALIBRATED",
    "NULL_QUESTIONS",
    "NullCalibration",
    "null_questions",
    "shipped_calibration",
]

NULL_QUESTIONS = 40
"""Null questions per tenant: enough for percentiles in steps of 2.5%, cheap at index time
(each is one search and one answer, a few milliseconds with the hashing embedder)."""

KEPT_WORDS = 4
"""A null question keeps this many of its sentence's rarest words (one of them swapped): a
question shares a few words with the sentence that would answer it, not all of them."""

CALIBRATED = {
    "best_score": "score_percentile",
    "best_similarity": "similarity_percentile",
    "best_support": "support_percentile",
}
"""Raw feature -> the feature that holds its percentile in the index's null distribution."""

STAND_INS = (
    "warranty", "pension", "helmet", "passport", "vaccine", "mortgage", "tractor", "violin",
    "glacier", "lottery", "harbour", "satellite", "orchard", "cathedral", "submarine",
    "tournament", "volcano", "saxophone", "asteroid", "carnival", "lighthouse", "meadow",
)  # fmt: skip
"""Common words a null question's key term is swapped for: the first the corpus never uses."""


@dataclass(frozen=True, slots=True)
class NullCalibration:
    """One tenant's null distribution: for each raw feature in `CALIBRATED`, its values
    over the null questions, sorted.

    >>> c = NullCalibration({"best_score": (0.2, 0.4, 0.6, 0.8)})
    >>> c.percentile("best_score", 0.5), c.percentile("best_score", 0.9), c.percentile("best_score", 0.4)
    (0.5, 1.0, 0.375)
    """

    values: Mapping[str, tuple[float, ...]]

    def percentile(self, name: str, value: float) -> float:
        """The share of null values below `value` (ties count half); 0.5 without any."""
        null = self.values.get(name, ())
        if not null:
            return 0.5
        below = bisect.bisect_left(null, value)
        ties = bisect.bisect_right(null, value) - below
        return (below + ties / 2) / len(null)

    def relative(self, features: AnswerFeatures) -> AnswerFeatures:
        """`features` with each `CALIBRATED` percentile filled in from this distribution."""
        return replace(
            features,
            **{
                pct: self.percentile(raw, getattr(features, raw)) for raw, pct in CALIBRATED.items()
            },
        )

    @classmethod
    def of(cls, null_features: Iterable[AnswerFeatures]) -> NullCalibration:
        """The distribution of the null questions' features."""
        found = list(null_features)
        return cls({raw: tuple(sorted(getattr(f, raw) for f in found)) for raw in CALIBRATED})

    def as_json(self) -> dict[str, list[float]]:
        return {name: [round(v, 6) for v in values] for name, values in self.values.items()}

    @classmethod
    def from_json(cls, stored: Mapping[str, Any]) -> NullCalibration:
        return cls({name: tuple(sorted(map(float, values))) for name, values in stored.items()})


@cache
def shipped_calibration(profile: str) -> NullCalibration | None:
    """The null distribution shipped with the rule for `profile` (pooled over the corpora
    it was fitted on): what an answerer without an index's own calibration reads its
    scores against. None when the rule has none.

    >>> shipped_calibration("hashing").percentile("best_score", 2.0)
    1.0
    """
    stored = _stored_rules()["rules"].get(profile, {}).get("null")
    return None if stored is None else NullCalibration.from_json(stored)


def pooled(calibrations: Iterable[NullCalibration], points: int = 41) -> NullCalibration:
    """One distribution from several, each weighing the same, kept as `points` quantiles."""
    found = list(calibrations)
    values = {}
    for raw in CALIBRATED:
        columns = [c.values[raw] for c in found if c.values.get(raw)]
        values[raw] = _quantiles(
            sorted(v for column in columns for v in _quantiles(column, points)), points
        )
    return NullCalibration(values)


def _quantiles(values: Sequence[float], points: int) -> tuple[float, ...]:
    """`points` values of sorted `values`, evenly spaced by rank (none from none)."""
    if not values:
        return ()
    return tuple(values[round(i * (len(values) - 1) / (points - 1))] for i in range(points))


def null_questions(chunks: Sequence[Chunk], n: int = NULL_QUESTIONS) -> list[str]:
    """Up to `n` questions `chunks` cannot answer, made from their own sentences.

    Sentences are taken in a fixed pseudo-random order (a hash of the chunk id and the
    sentence), so the same chunks give the same questions on every machine.

    >>> text = "# Returns\\n\\nUnused parts can be returned within 30 days of delivery."
    >>> null_questions([Chunk("r.md", 0, text, 0, len(text), title="Returns")])
    ['What is the warranty of within 30 days?']
    """
    vocabulary = frozenset().union(*map(chunk_stems, chunks)) if chunks else frozenset()
    stand_ins = [w for w in STAND_INS if stem(w) not in vocabulary]
    df = Counter(s for chunk in chunks for s in chunk_stems(chunk))
    candidates = sorted(
        (content_hash(f"{chunk.id}:{sentence}"), sentence, chunk)
        for chunk in chunks
        for sentence in _sentences(chunk)
    )
    questions: list[str] = []
    for _, sentence, chunk in candidates:
        if len(questions) >= n or not stand_ins:
            break
        entity = content_stems(f"{chunk.title} {chunk.heading}")
        question = _swapped(sentence, entity, df, stand_ins[len(questions) % len(stand_ins)])
        if question is not None:
            questions.append(question)
    return questions


def _sentences(chunk: Chunk) -> list[str]:
    """The chunk's prose sentences of at least four content words."""
    return [
        sentence
        for unit in text_units(chunk.text, chunk.heading)
        for sentence in split_sentences(unit.text)
        if len(content_stems(sentence)) >= 4
    ]


def _swapped(sentence: str, entity: frozenset[str], df: Counter[str], stand_in: str) -> str | None:
    """A question made of `sentence`'s rarest words that are not the entity's, the rarest
    swapped for `stand_in`; None when fewer than `KEPT_WORDS` such words remain."""
    words = [w.strip(".,;:!?*()\"'") for w in sentence.split()]
    keys = sorted(
        (df[s], -i, i)
        for i, word in enumerate(words)
        for s in [_stem_of(word)]
        if s and s not in entity
    )
    if len(keys) < KEPT_WORDS:
        return None
    kept = sorted(i for _, _, i in keys[1:KEPT_WORDS])  # the rarest is the one swapped
    return f"What is the {stand_in} of {' '.join(words[i] for i in kept)}?"


def _stem_of(word: str) -> str:
    """The content stem of one whitespace-separated word ("" for a stopword or punctuation)."""
    tokens = [t for t in tokenize(word) if t not in STOPWORDS and (len(t) > 1 or t.isdigit())]
    return stem(tokens[0]) if len(tokens) == 1 else ""
