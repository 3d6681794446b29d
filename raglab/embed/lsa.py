"""The LSA embedder: latent semantic analysis with scikit-learn.

TF-IDF, then a truncated SVD learned from a corpus (`fit`). Words that occur in the same
documents end up near each other, so it can match a paraphrase the corpus itself
connects. An index fits one per access partition (one tenant, one set of groups), on
what every reader of the partition may read (`raglab.store.indexing`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from raglab.embed.unit_rows import unit_rows
from raglab.text import fingerprint, tokenize
from raglab.validation import check_int, check_texts


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
        # uses) is then 0 / 0. Common with one fit per access partition: a partition of one chunk.
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
            out[:, : projected.shape[1]] = unit_rows(projected)
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
