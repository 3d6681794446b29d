"""An embedding cache on disk: a text embedded once by a model is never embedded again.

`cached(embedder)` wraps an embedder in one that behaves exactly like it (same name, dim,
version and vectors) but first looks each text up in a SQLite file, one file per model,
so that a second process — the next notebook, the next `raglab ask --docs` — embeds only
the texts it has never seen. MiniLM takes ~20 s for the sample corpus; a warm cache, a
fraction of a second.

- The key is the text's blake2b digest; the file's name comes from the model's name,
  dim and version, and the file records them in full (`identity`): a vector made by
  another model or version, or for another text, can never come back.
- A fittable embedder (LSA) is not cached: its vectors depend on the corpus it was fit
  on, which the key does not capture. `cached` returns it unchanged.
- The file's discipline (where, private, owner, bounded, corrupt files rebuilt) is
  `raglab.embed.cache_files`. Each model's file keeps at most `DEFAULT_MAX_BYTES` of
  vectors (256 MiB: ~170,000 MiniLM vectors); past it the oldest written are evicted.
- An entry that is not a vector of the model's width (another size, another type, a NaN
  or an infinity) is discarded: its text is embedded again and the entry replaced.
- A cached vector is the one the text got the first time. For MiniLM, a text embedded in
  another batch can differ in the last float bits (padding); the cache keeps one of them.

>>> import tempfile
>>> from raglab.embed.embedders import embedder
>>> folder = tempfile.mkdtemp()
>>> hashing = cached(embedder("hashing", dim=64), folder)
>>> hashing.embed(["refund policy"]).shape, hashing.name
((1, 64), 'hashing')
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from raglab.embed.cache_files import CACHE_DIR_VARIABLE, CacheFile, default_folder
from raglab.embed.embedders import Embedder, is_fittable
from raglab.text import content_hash
from raglab.validation import check_texts

__all__ = ["CACHE_DIR_VARIABLE", "CacheCounts", "CachedEmbedder", "cached", "default_folder"]

DEFAULT_MAX_BYTES = 256 * 2**20
"""The most vector bytes one model's file keeps (past it, the oldest entries are evicted)."""

ENTRY_OVERHEAD = 64
"""Bytes an entry takes beyond its vector: the 32-byte key and SQLite's bookkeeping."""


def text_key(text: str) -> bytes:
    """The cache key of a text: its 32-byte blake2b digest (collisions: never, in practice)."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=32).digest()


def identity(embedder: Embedder) -> str:
    """What a vector depends on besides its text: the model's name, version and dim."""
    return f"{embedder.name}\n{embedder.version}\n{embedder.dim}"


def cache_file(embedder: Embedder, folder: Path) -> Path:
    """The model's own file: readable name and dim, plus a digest of name, version and dim.

    >>> from raglab.embed.embedders import embedder
    >>> cache_file(embedder("hashing", dim=64), Path("c")).name
    'hashing-64-565d58eb9085d376.sqlite'
    """
    readable = re.sub(r"[^A-Za-z0-9_.-]", "_", embedder.name)
    return folder / f"{readable}-{embedder.dim}-{content_hash(identity(embedder))}.sqlite"


def cached(
    embedder: Embedder, folder: str | Path | None = None, *, max_bytes: int = DEFAULT_MAX_BYTES
) -> Embedder:
    """`embedder` with a cache on disk in `folder` (default: `default_folder()`), keeping at
    most `max_bytes` of vectors; a fittable one is returned unchanged."""
    if is_fittable(embedder):
        return embedder
    where = Path(folder) if folder is not None else default_folder()
    return CachedEmbedder(embedder, where, max_bytes=max_bytes)


@dataclass(slots=True)
class CacheCounts:
    """How many vectors a `CachedEmbedder` found in its file, and how many it embedded."""

    found: int = 0
    embedded: int = 0


@dataclass(frozen=True, slots=True)
class CachedEmbedder:
    """An `Embedder` that embeds with `inner` only the texts its cache file lacks."""

    inner: Embedder
    folder: Path
    max_bytes: int = DEFAULT_MAX_BYTES
    counts: CacheCounts = field(default_factory=CacheCounts, compare=False)

    def __post_init__(self) -> None:
        if callable(getattr(self.inner, "fit", None)):
            raise ValueError(
                f"a fittable embedder ({self.inner.name!r}) cannot be cached: its vectors "
                "depend on the corpus it is fit on"
            )

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def version(self) -> str:
        return self.inner.version

    @property
    def path(self) -> Path:
        return cache_file(self.inner, self.folder)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = check_texts("texts", texts)
        keys = [text_key(t) for t in texts]
        found = self._read(keys)
        missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in found}
        if missing:  # one batch, each distinct text once
            new = self.inner.embed(list(missing.values()))
            fresh = dict(zip(missing, np.asarray(new, dtype=np.float32), strict=True))
            self._file().write({k: v.tobytes() for k, v in fresh.items() if np.isfinite(v).all()})
            found.update(fresh)
        from_file = sum(key not in missing for key in keys)
        self.counts.found += from_file
        self.counts.embedded += len(keys) - from_file
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, key in enumerate(keys):
            out[row] = found[key]
        return out

    def _read(self, keys: list[bytes]) -> dict[bytes, np.ndarray]:
        """The cached vectors among `keys`; an entry that is not one is left out (embedded
        again, and the entry replaced)."""
        width = self.dim * 4  # float32 bytes
        vectors = {key: _vector(blob, width) for key, blob in self._file().read(keys).items()}
        return {key: vector for key, vector in vectors.items() if vector is not None}

    def _file(self) -> CacheFile:
        entries = max(1, self.max_bytes // (self.dim * 4 + ENTRY_OVERHEAD))
        return CacheFile(self.path, identity(self.inner), entries)


def _vector(blob: bytes, width: int) -> np.ndarray | None:
    """The stored vector, or None when the entry is not one: not `width` bytes, or not finite."""
    if len(blob) != width:
        return None
    vector = np.frombuffer(blob, dtype=np.float32)
    return vector if np.isfinite(vector).all() else None
