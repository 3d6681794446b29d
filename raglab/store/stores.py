"""Where vectors live: the in-memory store (the `VectorStore` protocol: `raglab.store.protocol`).

The SQLite file store is in `raglab.store.sqlite_store`; the indexing step (`sync`) that fills
either store is in `raglab.store.indexing`.

A store holds chunks, one unit-length float32 vector per chunk, a record per document
(version, content hash, tenant, groups) and the index's settings (`meta`: the embedder's
name, dim and version, the chunker's parameters). Both stores keep the same order —
by document id, then chunk index — so they return the same hits, ties included.

Search filters first and scores second: only the rows the principal may read
(`raglab.store.access`) are taken out of the matrix and scored, so a chunk the principal may
not read can neither be returned nor push a readable chunk out of the top-k.

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
from dataclasses import dataclass
from typing import Any

import numpy as np

from raglab.records import Chunk, DocRecord, Hit, Principal
from raglab.retrieve.vectors import normalise, top_k
from raglab.store.eligibility import Eligibility
from raglab.store.keyword import ChunkKeywords
from raglab.store.protocol import META_KEYS
from raglab.validation import check_int


class StoreError(ValueError):
    """An index file cannot be used: missing, corrupt, not a raglab index, or a newer schema."""


class DimensionMismatch(ValueError):
    """A vector's length differs from the store's dimension."""


class EmbedderMismatch(ValueError):
    """An index is used with an embedder other than the one that built it."""


# ---------------------------------------------------------------------------- shared pieces


@dataclass(frozen=True, slots=True)
class _StoredDocument:
    """One document as a store keeps it: its record, chunks (by index) and unit vectors."""

    record: DocRecord
    chunks: tuple[Chunk, ...]
    vectors: np.ndarray


def _prepare_documents(
    chunks: Sequence[Chunk],
    vectors: np.ndarray,
    records: Iterable[DocRecord],
    dim: int | None,
    existing: set[str],
) -> tuple[int | None, list[_StoredDocument]]:
    """Validate an `add` and split it per document. Returns (dim, documents to store)."""
    matrix = _checked_matrix(chunks, vectors, dim)
    if len(chunks):
        dim = matrix.shape[1]
    given = _records_by_id(records)
    rows_of: dict[str, list[int]] = {}
    for row, chunk in enumerate(chunks):
        rows_of.setdefault(chunk.doc_id, []).append(row)
    stored = []
    for doc_id in sorted(set(rows_of) | set(given)):
        if doc_id in existing:
            raise ValueError(
                f"document {doc_id!r} is already in the store; delete_document it first "
                "(a document's chunks are added all at once)"
            )
        rows = sorted(rows_of.get(doc_id, []), key=lambda r: chunks[r].index)
        doc_chunks = tuple(chunks[r] for r in rows)
        record = given.get(doc_id) or _record_from_chunk(doc_chunks[0])
        _check_chunks_match(doc_chunks, record)
        block = normalise(matrix[rows]) if rows else np.zeros((0, dim or 0), np.float32)
        block.setflags(write=False)
        stored.append(_StoredDocument(record, doc_chunks, block))
    return dim, stored


def _checked_matrix(chunks: Sequence[Chunk], vectors: np.ndarray, dim: int | None) -> np.ndarray:
    """`vectors` as a float32 matrix with one finite row per chunk and `dim` columns."""
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.size == 0 and not len(chunks):
        return matrix.reshape(0, dim or 0)
    if matrix.ndim != 2:
        raise ValueError(
            f"vectors must be a 2-D array, one row per chunk (got shape {matrix.shape})"
        )
    if matrix.shape[0] != len(chunks):
        raise ValueError(f"got {len(chunks)} chunks but {matrix.shape[0]} vectors")
    if dim is not None and matrix.shape[1] != dim:
        raise DimensionMismatch(
            f"vectors have dimension {matrix.shape[1]} but the store holds dimension {dim}"
        )
    if not np.isfinite(matrix).all():
        raise ValueError("vectors contain NaN or infinity")
    return matrix


def _records_by_id(records: Iterable[DocRecord]) -> dict[str, DocRecord]:
    by_id: dict[str, DocRecord] = {}
    for record in records:
        if record.id in by_id:
            raise ValueError(f"document {record.id!r} is given twice")
        by_id[record.id] = record
    return by_id


def _record_from_chunk(chunk: Chunk) -> DocRecord:
    """A record for chunks added without one; the empty hash marks the content as unknown."""
    return DocRecord(
        chunk.doc_id,
        chunk.doc_version,
        "",
        chunk.tenant,
        tuple(sorted(set(chunk.groups))),
        chunk.title,
    )


def _check_chunks_match(chunks: tuple[Chunk, ...], record: DocRecord) -> None:
    """Every chunk carries its document's access metadata, and no chunk id repeats."""
    seen: set[int] = set()
    for chunk in chunks:
        if chunk.index in seen:
            raise ValueError(f"chunk {chunk.id!r} is given twice")
        seen.add(chunk.index)
        if chunk.tenant != record.tenant or set(chunk.groups) != set(record.groups):
            raise ValueError(
                f"chunk {chunk.id!r} has tenant {chunk.tenant!r} and groups {chunk.groups} but its "
                f"document has tenant {record.tenant!r} and groups {record.groups}"
            )


def _check_dim(dim: int | None) -> int | None:
    """`dim` may be left out (None): the first vectors set it."""
    return None if dim is None else check_int("dim", dim, minimum=1)


def _checked_meta(meta: Mapping[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    """`current` updated with `meta`, after checking the keys and that values survive JSON."""
    unknown = sorted(set(meta) - set(META_KEYS))
    if unknown:
        raise ValueError(f"unknown meta keys {unknown} (expected some of: {', '.join(META_KEYS)})")
    try:
        # Stored as JSON in SQLite: round-trip here too, so both stores compare alike
        # (a tuple in chunker params comes back as a list in both).
        clean = json.loads(json.dumps(dict(meta), sort_keys=True))
    except TypeError as error:
        raise ValueError(f"meta values must be JSON-serialisable ({error})") from None
    return {**current, **clean}


def _empty_meta() -> dict[str, Any]:
    return dict.fromkeys(META_KEYS)


# ---------------------------------------------------------------------------- search


class _Snapshot:
    """A store's chunks and vectors as one matrix, rebuilt after every write.

    Who is answered from which rows is its `eligibility` (access, then versions); keyword
    search and the asker's words come from its `keywords`. Searching one principal's rows
    means copying them out of the matrix (`matrix[rows]`). The copies are kept per asker
    while their rows add up to at most one matrix, so memory stays bounded at twice the
    vectors, and a principal who may read every row uses the matrix itself.
    """

    __slots__ = ("_blocks", "eligibility", "keywords", "matrix")

    def __init__(
        self,
        chunks: tuple[Chunk, ...],
        matrix: np.ndarray,
        superseded: Mapping[str, Sequence[str]] | None,
        documents: Mapping[str, DocRecord],
    ) -> None:
        self.matrix = matrix
        self.eligibility = Eligibility(chunks, superseded, documents)
        self.keywords = ChunkKeywords(self.eligibility)
        self._blocks: dict[tuple, np.ndarray] = {}

    @property
    def chunks(self) -> tuple[Chunk, ...]:
        return self.eligibility.chunks

    def eligible(self, principal: Principal) -> tuple[np.ndarray, np.ndarray]:
        """The rows `principal` is answered from and their vectors (the only ones scored)."""
        rows = self.eligibility.rows(principal)
        if len(rows) == len(self.chunks):
            return rows, self.matrix
        key = self.eligibility.key(principal)
        if key not in self._blocks:
            self._make_room(len(rows))
            self._blocks[key] = self.matrix[rows]
        return rows, self._blocks[key]

    def _make_room(self, n_rows: int) -> None:
        """Drop the oldest copies until `n_rows` more fit in one matrix's worth of rows."""
        while self._blocks and sum(map(len, self._blocks.values())) + n_rows > len(self.chunks):
            del self._blocks[next(iter(self._blocks))]


def _search(
    snapshot: _Snapshot,
    dim: int | None,
    query: np.ndarray,
    principal: Principal,
    k: int,
    min_score: float | None,
) -> list[Hit]:
    """Filter, then score: cosine of `query` with the eligible rows only, top-k, best first."""
    k = check_int("k", k, minimum=1)
    q = _checked_query(query, dim)
    rows, block = snapshot.eligible(principal)
    if not len(rows):
        return []
    # Rows are stored unit length, so cosine is one dot product per eligible row; ties
    # go to the lower position, which is store order because `rows` is ascending.
    positions, scores = top_k(q, block, k, normalised=True)
    hits = [Hit(snapshot.chunks[rows[p]], float(s)) for p, s in zip(positions, scores)]
    return hits if min_score is None else [hit for hit in hits if hit.score >= min_score]


def _checked_query(query: np.ndarray, dim: int | None) -> np.ndarray:
    q = np.asarray(query, dtype=np.float32)
    if q.ndim != 1:
        raise ValueError(f"query must be one vector (a 1-D array), got shape {q.shape}")
    if dim is not None and q.shape[0] != dim:
        raise DimensionMismatch(
            f"query has dimension {q.shape[0]} but the store holds vectors of dimension {dim}"
        )
    if not np.isfinite(q).all():
        raise ValueError("query contains NaN or infinity")
    return q


class _SnapshotReads:
    """Reading, shared by both stores: each keeps a `_Snapshot` of its chunks and vectors."""

    _dim: int | None

    def _current(self) -> _Snapshot:
        raise NotImplementedError  # each store builds its snapshot its own way

    def chunks(self, principal: Principal | None = None) -> list[Chunk]:
        snapshot = self._current()
        if principal is None:
            return list(snapshot.chunks)
        return [snapshot.chunks[row] for row in snapshot.eligibility.rows(principal)]

    def vectors(self) -> np.ndarray:
        return self._current().matrix

    def search(
        self, query: np.ndarray, principal: Principal, k: int, *, min_score: float | None = None
    ) -> list[Hit]:
        return _search(self._current(), self._dim, query, principal, k, min_score)

    def keyword_search(
        self, question: str, principal: Principal, k: int, *, min_score: float = 0.0
    ) -> list[Hit]:
        k = check_int("k", k, minimum=1)
        return self._current().keywords.search(question, principal, k, min_score=min_score)

    def known_stems(self, principal: Principal, stems: Iterable[str]) -> frozenset[str]:
        return self._current().keywords.known_stems(principal, stems)


# ---------------------------------------------------------------------------- memory


class MemoryStore(_SnapshotReads):
    """A store in a Python dict: nothing persists, everything is quick to inspect.

    `dim` may be left out: the first vectors added (or the first `sync`) set it.
    """

    def __init__(self, dim: int | None = None) -> None:
        self._dim = _check_dim(dim)
        self._docs: dict[str, _StoredDocument] = {}
        self._meta = _empty_meta()
        self._snapshot: _Snapshot | None = None

    def __repr__(self) -> str:
        return f"MemoryStore(dim={self._dim}, documents={len(self._docs)}, chunks={len(self)})"

    @property
    def dim(self) -> int | None:
        return self._dim

    @property
    def meta(self) -> dict[str, Any]:
        return json.loads(json.dumps(self._meta))  # a deep copy: callers cannot edit the store

    def __len__(self) -> int:
        return sum(len(doc.chunks) for doc in self._docs.values())

    def add(
        self, chunks: Sequence[Chunk], vectors: np.ndarray, *, documents: Iterable[DocRecord] = ()
    ) -> None:
        dim, stored = _prepare_documents(chunks, vectors, documents, self._dim, set(self._docs))
        for doc in stored:
            self._docs[doc.record.id] = doc
        self._dim = dim
        self._snapshot = None

    def delete_document(self, doc_id: str) -> int:
        doc = self._docs.pop(doc_id, None)
        self._snapshot = None
        return 0 if doc is None else len(doc.chunks)

    def set_meta(self, meta: Mapping[str, Any]) -> None:
        updated = _checked_meta(meta, self._meta)
        self._dim = _dim_from_meta(updated, self._dim)
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

    def _current(self) -> _Snapshot:
        if self._snapshot is None:
            docs = [self._docs[doc_id] for doc_id in sorted(self._docs)]
            chunks = tuple(chunk for doc in docs for chunk in doc.chunks)
            blocks = [doc.vectors for doc in docs if doc.chunks]
            matrix = np.concatenate(blocks) if blocks else np.zeros((0, self._dim or 0), np.float32)
            records = {doc_id: self._docs[doc_id].record for doc_id in sorted(self._docs)}
            self._snapshot = _Snapshot(chunks, matrix, self._meta["superseded"], records)
        return self._snapshot


def _dim_from_meta(meta: dict[str, Any], dim: int | None) -> int | None:
    """The store's dim once meta names an embedder dim (they must agree)."""
    given = meta.get("embedder_dim")
    if given is None:
        return dim
    if dim is not None and given != dim:
        raise DimensionMismatch(
            f"embedder_dim={given} but the store holds vectors of dimension {dim}"
        )
    return _check_dim(given)
