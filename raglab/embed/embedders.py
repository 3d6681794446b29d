"""Embedders: from texts to unit-length vectors, so that cosine similarity is a dot product.

Three embedders share one protocol (`Embedder`, here), picked by name from the registry
(`embedder(name)`, here):

- `hashing` (`raglab.embed.hashing`) — written from scratch with numpy: words, word pairs
  and pieces of words hashed into a fixed number of buckets; no training, and it matches
  shared words and shared word *parts* ("refund" and "refunds"), not meanings.
- `lsa` (`raglab.embed.lsa`) — latent semantic analysis with scikit-learn, learned from a
  corpus (`fit`): it can match a paraphrase the corpus itself connects.
- `minilm` — a small neural sentence encoder (`raglab.embed.minilm`), loaded only on request.

Every embedder has `.name`, `.dim`, `.version` and `.embed(texts)`. The version string
travels with an index: a changed setting or a different fit changes it, and the index
refuses to compare vectors made by different versions. A fittable embedder (LSA) also
has `.fit(texts)`, which returns a new, fitted embedder; an index fits one per access
partition, on what every reader of the partition may read (`raglab.store.indexing`).

>>> vectors = embedder("hashing", dim=64).embed(["refund policy", "refunds"])
>>> vectors.shape, vectors.dtype.name
((2, 64), 'float32')
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from raglab.embed.hashing import HashingEmbedder, content_words
from raglab.embed.lsa import LSAEmbedder

__all__ = [
    "Embedder",
    "HashingEmbedder",
    "LSAEmbedder",
    "available_embedders",
    "content_words",
    "embedder",
    "is_fittable",
]


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
    query vectors share a space (an index fits one per access partition for you).

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
