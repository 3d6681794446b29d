"""Keyword search with BM25: score texts by the query words they contain.

BM25 rewards a document for each query word it contains, more for rare words (idf),
with diminishing returns for repeats (k1) and less credit in long documents (b).
raglab uses the Lucene form (see ARCHITECTURE.md), for a query q and a document d:

    score(d, q) = Σ over query tokens t (a repeated token counts each time) of
                  idf(t) · tf / (tf + k1 · (1 − b + b · |d| / avgdl))
    idf(t)      = ln(1 + (N − df + 0.5) / (df + 0.5))

tf is how often t occurs in d, |d| the number of tokens in d, avgdl the mean of |d|,
N the number of documents and df how many of them contain t. The textbook form
multiplies by (k1 + 1): a constant factor that changes no ranking.

Speed comes from doing the per-word work once, at fit time: every (word, document)
weight is precomputed into a sparse word x document table, so scoring a query only
adds up a few rows of that table.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import chain

import numpy as np

from raglab.retrieve.vectors import select_top_k
from raglab.text import tokenize  # lowercase \w+ words, one-letter words kept
from raglab.validation import check_number, check_texts

__all__ = ["BM25", "lucene_idf", "term_saturation", "tokenize"]


def lucene_idf(df: np.ndarray, n_docs: int) -> np.ndarray:
    """Inverse document frequency, Lucene's form: ln(1 + (N − df + 0.5) / (df + 0.5)).

    Always positive, even for a word in every document; the classic Robertson–Spärck
    Jones idf, ln((N − df + 0.5) / (df + 0.5)), goes negative for words in more than
    half of the documents (and is 0 for a word in one of two documents).
    Reference: Lucene BM25Similarity; Kamphuis et al., "Which BM25 Do You Mean?" (ECIR 2020).

    >>> lucene_idf(np.array([1, 2]), 2).round(4)
    array([0.6931, 0.1823])
    """
    df = np.asarray(df, dtype=np.float64)
    return np.log1p((n_docs - df + 0.5) / (df + 0.5))


def term_saturation(
    tf: np.ndarray, doc_len: np.ndarray, avgdl: float, k1: float, b: float
) -> np.ndarray:
    """How much a word's count tf in a document counts.

        tf / (tf + k1 · (1 − b + b · |d| / avgdl))

    Grows with tf but saturates below 1 (k1 sets how fast); b scales the document's
    length against the average, so a long document needs more repeats for the same credit.
    Reference: Robertson & Zaragoza, "The Probabilistic Relevance Framework: BM25 and
    Beyond" (2009), without the constant (k1 + 1) factor, as in Lucene.

    >>> term_saturation(np.array([1, 2]), np.array([10, 10]), 10.0, k1=1.5, b=0.75).round(4)
    array([0.4   , 0.5714])
    """
    tf = np.asarray(tf, dtype=np.float64)
    length_ratio = np.asarray(doc_len, dtype=np.float64) / avgdl
    return tf / (tf + k1 * (1.0 - b + b * length_ratio))


class BM25:
    """BM25 keyword retrieval over a fixed list of texts (the Lucene form).

    `fit(texts)` learns the vocabulary and the per-word weights and returns the model;
    `scores(query)` gives one float32 score per fitted text; `search(query, k)` the k
    best as (indices, scores), higher first, equal scores in the order of the lower
    index (the same rule as `raglab.retrieve.vectors.top_k`). `search` returns min(k, N) texts,
    including texts that score 0 when fewer than k contain a query word.

    Fitting no texts gives an empty model (useful when an access filter leaves nothing):
    its scores are an empty array and its searches return nothing. Unknown query words
    contribute 0.

    >>> bm25 = BM25().fit(["the cat sat", "the dog sat down", "a cat and a cat"])
    >>> bm25.search("cat", 2)
    TopK(indices=array([2, 0]), scores=array([0.24859697, 0.21183263], dtype=float32))
    """

    def __init__(
        self, k1: float = 1.5, b: float = 0.75, *, tokenizer: Callable[[str], list[str]] = tokenize
    ) -> None:
        self.k1 = check_number("k1", k1, minimum=0)
        self.b = check_number("b", b, minimum=0, maximum=1)
        self.tokenizer = tokenizer

    def __repr__(self) -> str:
        return f"BM25(k1={self.k1}, b={self.b})"

    # -- learning ---------------------------------------------------------------------

    def fit(self, texts: Iterable[str]) -> BM25:
        """Learn the vocabulary, idf and word x document weights of `texts`; returns self."""
        texts = check_texts("texts", texts)  # one string would fit one "text" per letter
        docs = [self.tokenizer(text) for text in texts]
        n_docs = len(docs)
        lengths = np.fromiter(map(len, docs), dtype=np.int64, count=n_docs)
        tokens = list(chain.from_iterable(docs))
        # A sorted vocabulary: the same word ids on every run and machine.
        self.vocabulary_: dict[str, int] = {w: i for i, w in enumerate(sorted(set(tokens)))}
        word_ids = np.fromiter(map(self.vocabulary_.__getitem__, tokens), np.int64, len(tokens))
        doc_ids = np.repeat(np.arange(n_docs, dtype=np.int64), lengths)
        words, postings, tf = _count_pairs(word_ids, doc_ids, n_docs)

        self.n_docs_ = n_docs
        self.doc_lengths_ = lengths
        self.avgdl_ = float(lengths.mean()) if n_docs else 0.0
        df = np.bincount(words, minlength=len(self.vocabulary_))
        self.idf_ = lucene_idf(df, n_docs)
        # The word x document table in compressed-row form: word w's postings (documents
        # that contain it) and weights are the slice indptr[w]:indptr[w + 1].
        self._indptr = np.concatenate(([0], np.cumsum(df)))
        self._postings = postings.astype(np.int32 if n_docs < 2**31 else np.int64)
        saturation = term_saturation(tf, lengths[postings], self.avgdl_, self.k1, self.b)
        self._weights = (self.idf_[words] * saturation).astype(np.float32)
        return self

    # -- querying ---------------------------------------------------------------------

    def scores(self, query: str) -> np.ndarray:
        """The BM25 score of every fitted text for `query`: float32, one per text, in order."""
        self._check_fitted()
        ids = [self.vocabulary_[t] for t in self.tokenizer(query) if t in self.vocabulary_]
        if not ids:
            return np.zeros(self.n_docs_, dtype=np.float32)
        # Each query token (repeats included) adds its row of the word x document table.
        rows = [slice(self._indptr[i], self._indptr[i + 1]) for i in ids]
        docs = np.concatenate([self._postings[r] for r in rows])
        weights = np.concatenate([self._weights[r] for r in rows])
        return np.bincount(docs, weights=weights, minlength=self.n_docs_).astype(np.float32)

    def search(self, query: str, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The `k` best texts for `query`: (indices as int64, float32 scores), best first."""
        return select_top_k(self.scores(query), k)

    def _check_fitted(self) -> None:
        if not hasattr(self, "vocabulary_"):
            raise RuntimeError("this BM25 is not fitted yet: call .fit(texts) first")


def _count_pairs(
    word_ids: np.ndarray, doc_ids: np.ndarray, n_docs: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Count each distinct (word, document) pair: (words, documents, counts), word-major.

    Each pair becomes one integer key, word * N + document; sorting the keys groups equal
    pairs together (ordered by word, then document), and a run of equal keys is one
    pair whose length is its count. All of it runs in compiled code.
    """
    base = max(n_docs, 1)
    keys = word_ids * base + doc_ids
    keys.sort()
    first = np.flatnonzero(np.diff(keys, prepend=-1))  # where each run of equal keys starts
    counts = np.diff(first, append=keys.size)
    words, docs = np.divmod(keys[first], base)
    return words, docs, counts
