"""Embedders: from texts to unit-length vectors, so that cosine similarity is a dot product.

Three embedders share one protocol (`Embedder`), picked by name from a registry:

- `hashing` — written from scratch with numpy: words, word pairs and pieces of words
  are hashed into a fixed number of buckets. Needs no training, so any text can be
  embedded at once; it matches shared words and shared word *parts* ("refund" and
  "refunds"), not meanings.
- `lsa` — latent semantic analysis with scikit-learn: TF-IDF, then a truncated SVD
  learned from a corpus (`fit`). Words that occur in the same documents end up near
  each other, so it can match a paraphrase the corpus itself connects.
- `minilm` — a small neural sentence encoder (`raglab.embed.minilm`), loaded only on request.

Every embedder has `.name`, `.dim`, `.version` and `.embed(texts)`. The version string
travels with an index: a changed setting or a different fit changes it, and the index
refuses to compare vectors made by different versions. A fittable embedder (LSA) also
has `.fit(texts)`, which returns a new, fitted embedder; an index fits one per tenant,
on that tenant's chunks alone (`raglab.store.indexing`).

>>> vectors = embedder("hashing", dim=64).embed(["refund policy", "refunds"])
>>> vectors.shape, vectors.dtype.name
((2, 64), 'float32')
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import pairwise
from typing import Any, Protocol, cast, runtime_checkable

import numpy as np

from raglab.text import STOPWORDS, fingerprint, stable_hash, tokenize
from raglab.validation import check_int, check_texts

# --------------------------------------------------------------------------- protocols


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns texts into vectors for the index.

    `embed(texts)` returns a float32 array of shape `(len(texts), dim)` whose rows have
    length 1, so the cosine of two rows is their dot product. One exception: a text
    with no features at all (the empty string, only punctuation, or — for a fitted
    embedder — only words never seen in its corpus) gets an all-zero row, which has
    cosine 0 with everything (see `raglab.retrieve.vectors.cosine`).

    The attributes are read-only: embedders are frozen, so an index can trust that
    the embedder it stored a version for is still the same model.
    """

    @property
    def name(self) -> str:
        """The registry name, e.g. "hashing"."""
        ...

    @property
    def dim(self) -> int:
        """The width of every vector `embed` returns."""
        ...

    @property
    def version(self) -> str:
        """Identifies the exact model: any change that changes a vector changes this."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for `texts`, one unit-length float32 row per text."""
        ...


def is_fittable(embedder: Embedder) -> bool:
    """True for an embedder that learns its space from a corpus: it has `fit(texts)`.

    `fit` returns a new, fitted embedder and is deterministic (the same texts in the same
    order give the same vectors and version), so a fit can be made again at query time.

    >>> is_fittable(LSAEmbedder()), is_fittable(HashingEmbedder())
    (True, False)
    """
    return callable(getattr(embedder, "fit", None))


# --------------------------------------------------------------------- shared helpers


ZERO_NORM = 1e-12
"""Below this length a row counts as all-zero: far above float64 rounding noise, far
below the length of any real row (a hashed feature weighs at least 1; an LSA row is a
projection of a unit-length TF-IDF vector)."""


def _normalise_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1; rows that are (numerically) zero become exactly zero.

    >>> _normalise_rows(np.array([[3.0, 4.0], [0.0, 0.0]])).tolist()
    [[0.6, 0.8], [0.0, 0.0]]
    """
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    # Subtle: a row of rounding noise (norm ~1e-17) would blow up into a random unit
    # vector; treat it as "no features" instead.
    safe = np.where(norms > ZERO_NORM, norms, np.inf)
    return matrix / safe


# -------------------------------------------------------------------------- hashing

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
        return _normalise_rows(np.stack(rows)).astype(np.float32)

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


# ------------------------------------------------------------------------------ LSA


@dataclass(frozen=True, slots=True)
class _LSAModel:
    """What `LSAEmbedder.fit` learned: the TF-IDF vocabulary and the SVD directions.

    Two models compare equal when they were fitted on the same texts by the same
    scikit-learn release: fitting is deterministic, so they compute the same vectors.
    """

    fit_digest: str  # fingerprint of the fit texts
    sklearn_version: str  # major.minor: another release may compute another SVD
    vectorizer: Any = field(repr=False, compare=False)  # sklearn TfidfVectorizer, fitted
    svd: Any = field(repr=False, compare=False)  # sklearn TruncatedSVD, fitted


@dataclass(frozen=True, slots=True)
class LSAEmbedder:
    """Latent semantic analysis: TF-IDF vectors projected onto their top SVD directions.

    TF-IDF uses word unigrams and bigrams of `raglab.text.tokenize` (BM25's words)
    with sublinear tf; `TruncatedSVD(random_state=seed)` keeps the strongest `dim`
    directions. Terms that co-occur in the corpus share directions, so a query can
    match a passage it shares few words with — if the corpus links those words.

    Fit it first: `LSAEmbedder().fit(corpus)` returns a new, fitted embedder, whose
    vectors for a corpus and for later queries live in one space. An unfitted one asked
    to embed a batch learns its space from that batch alone (`fit(texts).embed(texts)`):
    the vectors compare with each other, but not with those of another call.

    Width: `.dim` is always the width `embed` returns. A small corpus supports fewer
    than `dim` directions (at most one per text, and at most one per distinct term);
    the missing columns are padded with zeros. Zero columns change no dot product, so
    `dim` stays fixed and known before fitting, whatever the corpus.

    A text with no word from the fitted vocabulary gets an all-zero row.

    >>> lsa = LSAEmbedder(dim=4).fit(["refund policy", "refund window", "parking permit"])
    >>> lsa.embed(["refund"]).shape
    (1, 4)
    """

    dim: int = 128
    seed: int = 0
    model: _LSAModel | None = None

    def __post_init__(self) -> None:
        check_int("dim", self.dim, minimum=1)
        check_int("seed", self.seed)

    @property
    def name(self) -> str:
        return "lsa"

    @property
    def fitted(self) -> bool:
        return self.model is not None

    @property
    def version(self) -> str:
        """Settings plus what it was fitted on (and the scikit-learn release that did it)."""
        base = f"lsa-v1:dim={self.dim}:seed={self.seed}"
        if self.model is None:
            return f"{base}:unfitted"
        return f"{base}:fit={self.model.fit_digest}:sklearn={self.model.sklearn_version}"

    def fit(self, texts: Sequence[str]) -> LSAEmbedder:
        """A new LSAEmbedder fitted on `texts`; this one is left unfitted and unchanged.

        Deterministic: the same texts in the same order give bit-identical vectors.
        """
        import sklearn
        from sklearn.decomposition import TruncatedSVD

        texts = check_texts("texts", texts)
        vectorizer = _tfidf()
        try:
            tfidf = vectorizer.fit_transform(texts)
        except ValueError as error:  # sklearn: "empty vocabulary"
            raise ValueError(
                f"LSA cannot fit: the {len(texts)} text(s) contain no words"
            ) from error
        n_texts, n_terms = tfidf.shape
        if n_terms < 2:
            raise ValueError(
                f"LSA needs at least 2 distinct terms to fit (got {n_terms} from {n_texts} text(s))"
            )
        # The SVD of an n_texts x n_terms matrix has at most min(n_texts, n_terms) directions.
        svd = TruncatedSVD(n_components=min(self.dim, n_texts, n_terms), random_state=self.seed)
        # One text has no variance: sklearn's explained-variance ratio (which no vector
        # uses) is then 0 / 0. Common with one fit per tenant: a tenant of one chunk.
        with np.errstate(invalid="ignore"):
            svd.fit(tfidf)
        release = ".".join(sklearn.__version__.split(".")[:2])
        model = _LSAModel(fingerprint(texts), release, vectorizer, svd)
        return LSAEmbedder(dim=self.dim, seed=self.seed, model=model)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = check_texts("texts", texts)
        if self.model is None:
            return self.fit(texts).embed(texts) if texts else np.zeros((0, self.dim), np.float32)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if texts:
            projected = self.model.svd.transform(self.model.vectorizer.transform(texts))
            out[:, : projected.shape[1]] = _normalise_rows(projected)
        return out


def _tfidf() -> Any:
    """The TF-IDF settings of `LSAEmbedder` (changing one means bumping "lsa-v1")."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(
        tokenizer=tokenize,  # raglab's words, as in BM25: it lowercases, one letter is a word
        lowercase=False,
        token_pattern=None,
        ngram_range=(1, 2),
        sublinear_tf=True,
        dtype=np.float64,
    )


# ------------------------------------------------------------------------- registry


def _minilm(**options: Any) -> Embedder:
    # Imported here so `import raglab.embed.embedders` never loads the neural weights.
    from raglab.embed.minilm import MiniLMEmbedder

    return MiniLMEmbedder(**options)


_REGISTRY: dict[str, Callable[..., Embedder]] = {
    "hashing": HashingEmbedder,
    "lsa": LSAEmbedder,
    "minilm": _minilm,
}


def available_embedders() -> list[str]:
    """Registered embedder names, sorted.

    >>> available_embedders()
    ['hashing', 'lsa', 'minilm']
    """
    return sorted(_REGISTRY)


def embedder(name: str, **options: Any) -> Embedder:
    """A new embedder by registry name; `options` go to its constructor.

    An "lsa" embedder comes back unfitted: `.fit(corpus)` gives one whose corpus and
    query vectors share a space (an index fits one per tenant for you).

    >>> embedder("hashing", dim=32).version
    'hash-v2:dim=32:char=3-5:bigrams=1:stop=en'
    >>> embedder("word2vec")
    Traceback (most recent call last):
    ...
    ValueError: unknown embedder 'word2vec'; choose from: hashing, lsa, minilm
    """
    factory = _REGISTRY.get(name)
    if factory is None:
        choices = ", ".join(available_embedders())
        raise ValueError(f"unknown embedder {name!r}; choose from: {choices}")
    return factory(**options)
