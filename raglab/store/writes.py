"""What every store checks before it writes: whole documents, finite vectors, known settings.

`prepare_documents` validates an `add` and splits it per document (`StoredDocument`);
`checked_meta` the settings a store records (`raglab.store.protocol.META_KEYS`). The
memory, SQLite and Qdrant stores all write through these, so they refuse the same input
with the same message.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from raglab.records import Chunk, DocRecord
from raglab.retrieve.vectors import normalise
from raglab.store.errors import DimensionMismatch
from raglab.store.protocol import META_KEYS
from raglab.validation import check_int


@dataclass(frozen=True, slots=True)
class StoredDocument:
    """One document as a store keeps it: its record, chunks (by index) and unit vectors."""

    record: DocRecord
    chunks: tuple[Chunk, ...]
    vectors: np.ndarray


def prepare_documents(
    chunks: Sequence[Chunk],
    vectors: np.ndarray,
    records: Iterable[DocRecord],
    dim: int | None,
    existing: set[str],
) -> tuple[int | None, list[StoredDocument]]:
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
        stored.append(StoredDocument(record, doc_chunks, block))
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


def check_dim(dim: int | None) -> int | None:
    """`dim` may be left out (None): the first vectors set it."""
    return None if dim is None else check_int("dim", dim, minimum=1)


def checked_meta(meta: Mapping[str, Any], current: dict[str, Any]) -> dict[str, Any]:
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


def empty_meta() -> dict[str, Any]:
    return dict.fromkeys(META_KEYS)


def dim_from_meta(meta: dict[str, Any], dim: int | None) -> int | None:
    """The store's dim once meta names an embedder dim (they must agree)."""
    given = meta.get("embedder_dim")
    if given is None:
        return dim
    if dim is not None and given != dim:
        raise DimensionMismatch(
            f"embedder_dim={given} but the store holds vectors of dimension {dim}"
        )
    return check_dim(given)
