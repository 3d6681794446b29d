"""The store protocol: what every store of chunk vectors does, and what its meta holds.

`MemoryStore` (`raglab.store.memory`), `SQLiteStore` and `QdrantStore` implement it; the
query path (`raglab.query`) and the indexing step (`raglab.store.indexing`) use nothing
else. Like every protocol module it imports only the records, so any wing may import it.

Every reading method answers for one principal by the two visibility rules, applied
before anything is scored (`raglab.store.eligibility`): a principal is answered from the
chunks they may read (`raglab.store.access`), less those of documents superseded by one
they may read (`raglab.store.versions`). Statistics that describe what the principal may
read (BM25's idf and average length, the words they know) count every readable chunk.

Every store has every method: keyword search and the answerer's word lookup are part of
the protocol, not abilities found by probing. A store that keeps its chunks in memory
gets both from `raglab.store.keyword.ChunkKeywords`; a store may answer them faster from
its own indexes (the SQLite store's postings and stems), with the same results.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from raglab.records import Chunk, DocRecord, Hit, Partition, Principal

META_KEYS = (
    "embedder_name",
    "embedder_dim",
    "embedder_version",
    "chunker",
    "superseded",
    "profile",
    "calibration",
)
"""What `store.meta` holds; each is None until the first `sync` records it. `superseded`
maps a document id to the ids superseding it (`raglab.store.versions.supersession`);
`profile`, the model profile the index was built with and what overrode it (`raglab.profiles`;
None for an index built without one, as every index written before profiles).
`calibration`: the answerer's null distributions per tenant and the documents they were
computed on (`raglab.pipeline.calibrate`); `sync` drops it whenever a document changes, so
a stale one is never read."""


class VectorStore(Protocol):
    """Chunks and their vectors, searchable per principal: MemoryStore, SQLiteStore, QdrantStore."""

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
        self,
        query: np.ndarray,
        principal: Principal,
        k: int,
        *,
        min_score: float | None = None,
        partition: Partition | None = None,
    ) -> list[Hit]:
        """The k chunks `principal` is answered from that are most similar to `query` (by
        cosine, at least `min_score`), best first; equal scores in store order. With
        `partition`, only the chunks of that access partition: a learned embedder's
        question vector is compared with its own fit's chunks alone (`raglab.query`)."""
        ...

    def keyword_search(
        self, question: str, principal: Principal, k: int, *, min_score: float = 0.0
    ) -> list[Hit]:
        """The k chunks `principal` is answered from with the best BM25 scores for
        `question` above `min_score` (>= 0), best first; equal scores in store order. BM25
        is fitted on the chunks `principal` may read (`raglab.retrieve.bm25.BM25`)."""
        ...

    def known_stems(self, principal: Principal, stems: Iterable[str]) -> frozenset[str]:
        """Those of the content `stems` that a chunk `principal` may read uses in its title,
        heading or text (`raglab.ingest.stems.chunk_stems`): the answerer's vocabulary,
        asked about a question's words instead of read whole."""
        ...

    def chunks(self, principal: Principal | None = None) -> list[Chunk]:
        """Every chunk in store order, or those `principal` is answered from (the chunks a
        search for them ranks)."""
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
