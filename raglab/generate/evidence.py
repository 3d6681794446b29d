"""How well does a sentence answer the question? By its words, and by its meaning.

The second step of the extractive answerer: every candidate sentence (`raglab.ingest.sentences`)
gets two scores against the question, and a blend of them.

- `support` (words): the idf-weighted share of the question's content stems the sentence
  contains; a stem found only in its heading or document title counts half, and a code or
  number the question names ("E-4417", "CHK-408") counts IDENTIFIER_WEIGHT times. Exact and
  explainable, but blind to paraphrase: "vacation days" never meets "annual leave".
- `similarity` (meaning): the cosine of the question's and the sentence's vectors, made
  by the index's own embedder. With MiniLM it sees that "vacation" means "annual leave";
  with the hashing embedder it is still a measure of shared words and word parts.
- `score`: SEMANTIC_WEIGHT · similarity + (1 − SEMANTIC_WEIGHT) · support, plus a small
  bonus for a better-ranked source. Without an embedder, the score is the support alone.

Read it in two steps: words and stems, then the scores.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from raglab.embed.embedders import Embedder
from raglab.ingest.sentences import Sentence
from raglab.ingest.stems import content_stems, stem
from raglab.text import STOPWORDS, tokenize

__all__ = ["Evidence", "score_evidence"]


# --- words and stems ---------------------------------------------------------------------


IDENTIFIER_WEIGHT = 3.0
"""How much more a question word with a digit in it weighs ("E-4417", "CHK-408", "2025").
A code names one thing, and the sentence that names it is about it: the table row of
E-4417 must outweigh an introduction that restates two or three of the question's
setting words ("The ward desk printer shows a code")."""


def is_identifier(stem_: str) -> bool:
    """A word with a digit in it: a code, a version or a number.

    >>> is_identifier("4417"), is_identifier("printer")
    (True, False)
    """
    return any(c.isdigit() for c in stem_)


def question_weights(wanted: frozenset[str], df: Counter[str], n: int) -> dict[str, float]:
    """Each question stem's weight: its `smooth_idf` over the `n` candidate sentences,
    times IDENTIFIER_WEIGHT for a code or number. Sorted, so sums add in one order."""
    return {
        t: smooth_idf(df[t], n) * (IDENTIFIER_WEIGHT if is_identifier(t) else 1.0)
        for t in sorted(wanted)
    }


def smooth_idf(df: int, n: int) -> float:
    """ln((1 + n) / (1 + df)) + 1: scikit-learn's smooth idf, always > 0.

    A stem found in few sentences weighs more; a question stem found in none weighs the
    most, so a question about something the sources never mention gets low support.
    """
    return math.log((1 + n) / (1 + df)) + 1.0


# --- the scores ----------------------------------------------------------------------------

CONTEXT_WEIGHT = 0.5
"""A question word found only in the sentence's heading or document title counts half:
under "Password rules", "At least 14 characters." is about passwords without saying so."""

SEMANTIC_WEIGHT = 0.5
"""The share of meaning (cosine) in a sentence's score; the rest is word support. Half and
half: either alone can be fooled (a shared rare word; a sentence on the same topic that
answers another question), and both lie between 0 and 1, so neither drowns the other."""

RANK_BONUS = 0.05
"""Added to a sentence's score as RANK_BONUS / n for source [n]: between two sentences
that score alike, the one from the better-ranked source wins (the retriever saw the
whole chunk; we see one sentence). Small, so it only breaks near-ties."""


@dataclass(frozen=True, slots=True)
class Evidence:
    """A candidate sentence and how well it answers the question.

    `n` is its source's number (quoted as `[n]`), `position` its place in reading order,
    `about` its document title and heading. `stems` are its content stems; `context` the
    stems of `about` not already in it. `matched` / `matched_context`: the question stems found in each.
    `support` in [0, 1]: word support; `similarity` in [-1, 1]: the cosine with the
    question (0.0 without an embedder); `score`: the blend used to rank (see the module).
    `unit`: the paragraph, row or list item it belongs to (`Sentence.unit`).
    """

    n: int
    position: int
    text: str
    stems: frozenset[str] = field(repr=False)
    about: str = field(default="", repr=False)
    context: frozenset[str] = field(default=frozenset(), repr=False)
    matched: tuple[str, ...] = ()
    matched_context: tuple[str, ...] = ()
    support: float = 0.0
    similarity: float = 0.0
    score: float = 0.0
    unit: int = field(default=-1, repr=False)


def word_support(
    idf: dict[str, float], stems: frozenset[str], context: frozenset[str], total_idf: float
) -> tuple[tuple[str, ...], tuple[str, ...], float]:
    """(matched, matched in context, support) of one sentence for the question stems in `idf`.

    support = (Σ idf of question stems in the sentence
               + CONTEXT_WEIGHT · Σ idf of question stems only in its heading or title)
              / Σ idf of all question stems (`total_idf`).
    A sentence sharing no word with the question has no support, whatever its heading.

    subtle: the matches are looked up from the sentence's side, so one sentence costs time
    in proportion to its own length, never to the question's (which may be long).
    """
    matched = tuple(sorted(stems.intersection(idf)))
    in_context = tuple(sorted(context.intersection(idf)))
    if not matched:
        return matched, in_context, 0.0
    weight = sum(idf[t] for t in matched) + CONTEXT_WEIGHT * sum(idf[t] for t in in_context)
    return matched, in_context, weight / total_idf


def similarities(question: str, texts: Sequence[str], embedder: Embedder | None) -> np.ndarray:
    """The cosine of `question` with each text, by `embedder` (zeros without one).

    Unrelated texts score near 0, not exactly 0: hashed features can share a bucket.

    >>> from raglab.embed.embedders import HashingEmbedder
    >>> [round(float(s), 2) for s in similarities("refund", ["refund", "parking"], HashingEmbedder())]
    [1.0, -0.04]
    """
    if embedder is None or not texts:
        return np.zeros(len(texts))
    vectors = embed_cached(embedder, [question, *texts])
    cosines: np.ndarray = vectors[1:] @ vectors[0]  # unit rows (or all zero): dot = cosine
    return cosines  # rows have length 1 (or are all zero): dot = cosine


CACHE_SIZE = 20_000
"""Sentence vectors kept between questions: the same chunks come back for many questions,
and a neural embedder is the slow part of answering. Cleared when full (memory stays bounded)."""

_VECTORS: dict[tuple[str, str], np.ndarray] = {}


def embed_cached(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """`embedder.embed(texts)` as float64, reusing vectors already made by the same model.

    Keyed by the embedder's `version`, which changes whenever its vectors would.
    """
    missing = sorted({t for t in texts if (embedder.version, t) not in _VECTORS})
    if missing:
        if len(_VECTORS) + len(missing) > CACHE_SIZE:
            _VECTORS.clear()
            missing = sorted(set(texts))  # subtle: the ones we had are gone too
        for text, vector in zip(missing, embedder.embed(missing).astype(np.float64)):
            _VECTORS[(embedder.version, text)] = vector
    return np.array([_VECTORS[(embedder.version, t)] for t in texts])


def embedded_text(sentence: Sentence) -> str:
    """What the embedder reads for a sentence: its heading and title, then the sentence.

    The context tells the model what a terse sentence is about ("Password rules. At least
    14 characters."); quoting still uses the sentence alone.
    """
    return f"{sentence.context}. {sentence.text}" if sentence.context else sentence.text


def score_evidence(
    question: str, sentences: Sequence[Sentence], embedder: Embedder | None = None
) -> list[Evidence]:
    """Every sentence scored for `question`, best first (ties: source number, position).

    idf is counted over the candidate sentences: the prompt is the whole collection the
    answerer sees (see `smooth_idf`). With `embedder`, meaning counts too (`similarity`).

    >>> from raglab.ingest.sentences import Sentence
    >>> found = [Sentence(1, 0, "The VPN needs a code."), Sentence(2, 1, "Staff get 25 days of leave.")]
    >>> [(e.n, e.matched, round(e.support, 2)) for e in score_evidence("How many days of leave?", found)]
    [(2, ('day', 'leav'), 1.0), (1, (), 0.0)]
    """
    if not sentences:
        return []
    wanted = content_stems(question)
    stems = [content_stems(s.text) for s in sentences]
    contexts = [content_stems(s.context) - own for s, own in zip(sentences, stems)]
    df = Counter(t for own in stems for t in own & wanted)  # sentences holding each stem
    idf = question_weights(wanted, df, len(stems))
    total_idf = sum(idf.values())
    cosines = similarities(question, [embedded_text(s) for s in sentences], embedder)
    weight = 0.0 if embedder is None else SEMANTIC_WEIGHT
    scored = []
    for s, own, context, cosine in zip(sentences, stems, contexts, cosines):
        matched, in_context, support = word_support(idf, own, context, total_idf)
        similarity = float(cosine)
        score = weight * similarity + (1 - weight) * support + RANK_BONUS / s.n
        scored.append(
            Evidence(
                s.n,
                s.position,
                s.text,
                own,
                s.context,
                context,
                matched,
                in_context,
                support,
                similarity,
                score,
                s.unit,
            )
        )
    return sorted(scored, key=lambda e: (-e.score, e.n, e.position))


def key_words(text: str) -> list[str]:
    """The distinct content words of `text`, sorted: what `weakest_term` compares.

    >>> key_words("Is there a gym in the Harbourside building?")
    ['building', 'gym', 'harbourside']
    """
    return sorted({w for w in tokenize(text) if w not in STOPWORDS and (len(w) > 1 or w.isdigit())})


def weakest_term(question: str, evidence: Evidence, embedder: Embedder | None = None) -> float:
    """How well the question's worst-matched word is matched by the sentence (or its heading).

    For each content word of the question, its best cosine with any word of the sentence
    and its context; the lowest of these. An answer must speak of everything the question
    asks about: "Is there a gym in the Harbourside building?" finds "Harbourside" and
    "building" in a sentence about the workspace, but nothing near "gym". Without an
    embedder a word matches only itself (same stem): 1.0 or 0.0.

    >>> e = Evidence(1, 0, "The workspace has showers.", frozenset({"workspac", "shower"}))
    >>> weakest_term("Are there showers in the workspace?", e), weakest_term("Is there a gym?", e)
    (1.0, 0.0)
    """
    wanted = key_words(question)
    offered = key_words(f"{evidence.about} {evidence.text}")
    if not wanted or not offered:
        return 0.0
    if embedder is None:
        have = {stem(w) for w in offered}
        return 1.0 if all(stem(w) in have for w in wanted) else 0.0
    best = embed_cached(embedder, wanted) @ embed_cached(embedder, offered).T
    return float(best.max(axis=1).min())
