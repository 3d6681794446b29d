"""The store protocol: what every store of chunk vectors does, and what its meta holds.

`MemoryStore` (`raglab.store.stores`), `SQLiteStore` and `QdrantStore` implement it; the
query path (`raglab.query`) and the indexing step (`raglab.store.indexing`) use nothing
else. Like every protocol module it imports only the records, so any wing may import it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from raglab.records import Chunk, DocRecord, Hit, Principal

META_KEYS = ("embedder_name", "embedder_dim", "embedder_version", "chunker", "superseded")
"""What `store.meta` holds; each is None until the first `sync` records it. `superseded`
maps a document id to the ids superseding it (`raglab.store.versions.supersession`)."""


class VectorStore(Protocol):
    """Chunks and their vectors, searchable per principal: MemoryStore and SQLiteStore."""

    @property
    def dim(self) -> int | None:
        """Length of every stored vector (None until the first vectors arrive)."""
        ...

    @property
    def meta(self) -> dict[str, Any]:
        """A copy of the index settings, keyed by META_KEYS."""
        ...

    def add(
        self, chunks: Sequence[Chunk], vectors: np.ndarray, *, documents: Iterable[DocRecord] = ()
    ) -> None:
        """Store whole documents: their chunks, one vector per chunk, and optional records."""
        ...

    def delete_document(self, doc_id: str) -> int:
        """Remove a document with its chunks and vectors; return how many chunks went."""
        ...

    def search(
        self, query: np.ndarray, principal: Principal, k: int, *, min_score: float | None = None
    ) -> list[Hit]:
        """The k chunks `principal` may read that are most similar to `query`, best first."""
        ...

    def chunks(self, principal: Principal | None = None) -> list[Chunk]:
        """Every chunk in store order, or only those `principal` may read."""
        ...

    def vectors(self) -> np.ndarray:
        """Every vector in store order, one read-only row per chunk of `chunks()`."""
        ...

    def documents(self) -> dict[str, DocRecord]:
        """Document id -> record, sorted by id."""
        ...

    def set_meta(self, meta: Mapping[str, Any]) -> None:
        """Record index settings (keys from META_KEYS)."""
        ...

    def transaction(self) -> Any:
        """A context manager: every write inside it happens, or none does."""
        ...

    def __len__(self) -> int:
        """Number of chunks."""
        ...
