"""The in-memory store: a Python dict of documents, nothing persists (`VectorStore`).

The protocol every store follows is in `raglab.store.protocol`; the SQLite file store is
`raglab.store.sqlite_store`, the Qdrant one `raglab.store.qdrant_store`; the indexing step
(`sync`) that fills any of them is `raglab.store.indexing`.

A store holds chunks, one unit-length float32 vector per chunk, a record per document
(version, content hash, tenant, groups) and the index's settings (`meta`: the embedder's
name, dim and version, the chunker's parameters). Every store keeps the same order —
by document id, then chunk index — so they return the same hits, ties included.

>>> import numpy as np
>>> from raglab.records import Chunk, Principal
>>> store = MemoryStore(dim=2)
>>> store.add([Chunk("a.md", 0, "cats", 0, 4), Chunk("b.md", 0, "dogs", 0, 4)],
...           np.array([[1.0, 0.0], [0.0, 1.0]]))
>>> [(hit.chunk.id, hit.score) for hit in store.search(np.array([1.0, 0.2]), Principal("ann"), k=1)]
[('a.md#0', 0.9805806875228882)]
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from raglab.records import Chunk, DocRecord
from raglab.store.snapshot import Snapshot, SnapshotReads
from raglab.store.writes import (
    StoredDocument,
    check_dim,
    checked_meta,
    dim_from_meta,
    empty_meta,
    prepare_documents,
)


class MemoryStore(SnapshotReads):
    """A store in a Python dict: nothing persists, everything is quick to inspect.

    `dim` may be left out: the first vectors added (or the first `sync`) set it.
    """

    def __init__(self, dim: int | None = None) -> None:
        self._dim = check_dim(dim)
        self._docs: dict[str, StoredDocument] = {}
        self._meta = empty_meta()
        self._snapshot: Snapshot | None = None

    def __repr__(self) -> str:
        return f"MemoryStore(dim={self._dim}, documents={len(self._docs)}, chunks={len(self)})"

    @property
    def dim(self) -> int | None:
        return self._dim

    @property
    def meta(self) -> dict[str, Any]:
        copy: dict[str, Any] = json.loads(json.dumps(self._meta))  # a deep copy: callers
        return copy  # cannot edit the store

    def __len__(self) -> int:
        return sum(len(doc.chunks) for doc in self._docs.values())

    def add(
        self, chunks: Sequence[Chunk], vectors: np.ndarray, *, documents: Iterable[DocRecord] = ()
    ) -> None:
        dim, stored = prepare_documents(chunks, vectors, documents, self._dim, set(self._docs))
        for doc in stored:
            self._docs[doc.record.id] = doc
        self._dim = dim
        self._snapshot = None

    def delete_document(self, doc_id: str) -> int:
        doc = self._docs.pop(doc_id, None)
        self._snapshot = None
        return 0 if doc is None else len(doc.chunks)

    def set_meta(self, meta: Mapping[str, Any]) -> None:
        updated = checked_meta(meta, self._meta)
        self._dim = dim_from_meta(updated, self._dim)
        self._meta = updated
        self._snapshot = None  # who supersedes whom may have changed

    def documents(self) -> dict[str, DocRecord]:
        return {doc_id: self._docs[doc_id].record for doc_id in sorted(self._docs)}

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Writes inside happen together: on an exception the store is put back as it was."""
        # The stored documents are immutable, so a shallow copy of the dict is a full backup.
        saved = (dict(self._docs), self._meta, self._dim)
        try:
            yield
        except BaseException:
            self._docs, self._meta, self._dim = saved
            self._snapshot = None
            raise

    def _current(self) -> Snapshot:
        if self._snapshot is None:
            docs = [self._docs[doc_id] for doc_id in sorted(self._docs)]
            chunks = tuple(chunk for doc in docs for chunk in doc.chunks)
            blocks = [doc.vectors for doc in docs if doc.chunks]
            matrix = np.concatenate(blocks) if blocks else np.zeros((0, self._dim or 0), np.float32)
            records = {doc_id: self._docs[doc_id].record for doc_id in sorted(self._docs)}
            self._snapshot = Snapshot(chunks, matrix, self._meta["superseded"], records)
        return self._snapshot
