"""The hashing embedder, written from scratch with numpy: no training, the same vectors
on every machine.

Words, word pairs and pieces of words are hashed into a fixed number of buckets, so any
text can be embedded at once; it matches shared words and shared word *parts* ("refund"
and "refunds"), not meanings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise
from typing import cast

import numpy as np

from raglab.embed.unit_rows import ZERO_NORM, unit_rows
from raglab.text import STOPWORDS, stable_hash, tokenize
from raglab.validation import check_int, check_texts

BLOCK_WEIGHTS = {"word": 1.0, "bigram": 0.5, "char": 1.5}
"""How much each kind of feature counts. Each block is scaled to length 1 first, so the
weights are the blocks' shares regardless of how many features each produced (a word
yields one unigram but a dozen character n-grams). Character n-grams count most: they
also reward exact word matches, and they alone connect "refunded" with "refunds". Word
pairs count half: they reward matching phrases ("sick leave") without drowning out
single words. Picked on a small hand-made set of support questions, not tuned further.
Changing these (or `raglab.text.STOPWORDS`) changes every vector: bump HASHING_VERSION."""

HASHING_VERSION = "hash-v2"
"""The feature recipe's version, the first part of `HashingEmbedder.version`.
v2: the one stopword list of `raglab.text` (v1 kept "no", "not", "get", ... as features)."""


@lru_cache(maxsize=2**16)
def _word_hash(word: str) -> int:
    return stable_hash(f"w:{word}")


@lru_cache(maxsize=2**16)
def _bigram_hash(first: str, second: str) -> int:
    return stable_hash(f"b:{first} {second}")


@lru_cache(maxsize=2**16)
def _char_hashes(word: str, low: int, high: int) -> np.ndarray:
    """Hashes of the character n-grams of `<word>`, for every n from low to high.

    The marks `<` and `>` make prefixes and suffixes features of their own ("<re",
    "ds>"), so "refund" and "refunds" share all n-grams but the last few.
    """
    marked = f"<{word}>"
    grams = [marked[i : i + n] for n in range(low, high + 1) for i in range(len(marked) - n + 1)]
    if not grams:  # a word of fewer than low - 2 letters has no low-gram: use it whole
        grams = [marked]
    hashes = np.array([stable_hash(f"c:{g}") for g in grams], dtype=np.uint64)
    hashes.setflags(write=False)  # cached and shared between calls: must never change
    return hashes


def content_words(text: str, *, stopwords: bool = True) -> list[str]:
    """Lowercase words of `text` (`tokenize`), without `STOPWORDS` when `stopwords` is True.

    A text made only of function words keeps them all, so "what is it?" still has
    features rather than none.

    >>> content_words("How do I get a Refund?")
    ['refund']
    >>> content_words("What is it?")
    ['what', 'is', 'it']
    """
    words = tokenize(text)
    if not stopwords:
        return words
    kept = [w for w in words if w not in STOPWORDS]
    return kept or words


def _block_vector(hashes: np.ndarray, dim: int) -> np.ndarray:
    """One block of features, hashed into `dim` signed buckets and scaled to length 1.

    Each distinct feature weighs 1 + ln(count) (sublinear tf: the tenth "leave" adds
    less than the second). The top bit of its hash picks a sign, so two features that
    collide in a bucket cancel out on average instead of always adding up
    (Weinberger et al., "Feature hashing for large scale multitask learning", 2009).
    """
    if hashes.size == 0:
        return np.zeros(dim)
    features, counts = np.unique(hashes, return_counts=True)
    weights = 1.0 + np.log(counts)
    signs = np.where(features >> np.uint64(63), -1.0, 1.0)
    buckets = (features % np.uint64(dim)).astype(np.intp)
    vector = np.bincount(buckets, weights=signs * weights, minlength=dim)
    norm = np.linalg.norm(vector)
    # Subtle: features can cancel out exactly (+1 and -1 in one bucket): a zero block.
    return vector / norm if norm > ZERO_NORM else vector


@dataclass(frozen=True, slots=True)
class HashingEmbedder:
    """Feature hashing from scratch: no training, the same vectors on every machine.

    Features of a text (after lowercasing and dropping function words, see
    `content_words`):
    - word unigrams ("refund"),
    - word bigrams of consecutive content words ("refund policy"),
    - character n-grams of each word with boundary marks, n in `char_ngrams`
      ("<re", "ref", ..., "nds>"), which catch plurals, tenses and typos.

    Each feature is hashed with blake2b into one of `dim` buckets with a ± sign; the
    three blocks are weighted by `BLOCK_WEIGHTS` and the sum is scaled to length 1.
    A text with no words ("", "?!") gets an all-zero row.

    >>> e = HashingEmbedder(dim=128)
    >>> e.version
    'hash-v2:dim=128:char=3-5:bigrams=1:stop=en'
    >>> a, b, c = e.embed(["refund policy", "refunds", "parking permit"])
    >>> bool(a @ b > a @ c)
    True
    """

    dim: int = 384
    char_ngrams: tuple[int, int] = (3, 5)
    bigrams: bool = True
    stopwords: bool = True

    def __post_init__(self) -> None:
        check_int("dim", self.dim, minimum=1)
        ngrams = tuple(self.char_ngrams) if isinstance(self.char_ngrams, tuple | list) else ()
        if not (
            len(ngrams) == 2 and all(type(n) is int for n in ngrams) and 1 <= ngrams[0] <= ngrams[1]
        ):
            raise ValueError(
                f"char_ngrams must be (low, high) with 1 <= low <= high "
                f"(got char_ngrams={self.char_ngrams!r})"
            )
        # Accept a list such as [3, 5] but store a tuple, so the object stays hashable.
        object.__setattr__(self, "char_ngrams", ngrams)

    @property
    def name(self) -> str:
        return "hashing"

    @property
    def version(self) -> str:
        """Every setting that changes a vector, so a changed setting is detected."""
        low, high = self.char_ngrams
        return (
            f"{HASHING_VERSION}:dim={self.dim}:char={low}-{high}:bigrams={int(self.bigrams)}"
            f":stop={'en' if self.stopwords else 'none'}"
        )

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = [self._embed_one(text) for text in check_texts("texts", texts)]
        if not rows:
            return np.zeros((0, self.dim), dtype=np.float32)
        return unit_rows(np.stack(rows)).astype(np.float32)

    def _embed_one(self, text: str) -> np.ndarray:
        words = content_words(text, stopwords=self.stopwords)
        low, high = self.char_ngrams
        blocks = {
            "word": np.array([_word_hash(w) for w in words], dtype=np.uint64),
            "bigram": np.array(
                [_bigram_hash(a, b) for a, b in pairwise(words)] if self.bigrams else [],
                dtype=np.uint64,
            ),
            "char": (
                np.concatenate([_char_hashes(w, low, high) for w in words])
                if words
                else np.zeros(0, dtype=np.uint64)
            ),
        }
        weighted = sum(
            BLOCK_WEIGHTS[kind] * _block_vector(hashes, self.dim) for kind, hashes in blocks.items()
        )
        return cast(np.ndarray, weighted)  # a sum of arrays (never the empty sum's 0)
