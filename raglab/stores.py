"""Where vectors live: the `VectorStore` protocol, an in-memory store and a SQLite file.

A store holds chunks, one unit-length float32 vector per chunk, a record per document
(version, content hash, tenant, groups) and the index's settings (`meta`: the embedder's
name, dim and version, the chunker's parameters). Both stores keep the same order —
by document id, then chunk index — so they return the same hits, ties included.

Search filters first and scores second: only the rows the principal may read
(`raglab.access`) are taken out of the matrix and scored, so a chunk the principal may
not read can neither be returned nor push a readable chunk out of the top-k.

`sync` brings a store up to date with a corpus, re-embedding only what changed, and
`check_embedder` refuses to query an index with an embedder other than the one that built it.

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
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, Self

import numpy as np

from raglab.access import AccessIndex
from raglab.records import Chunk, Document, Hit, Principal
from raglab.vectors import normalise, top_k

if TYPE_CHECKING:
    from raglab.embedders import Embedder

META_KEYS = ("embedder_name", "embedder_dim", "embedder_version", "chunker")
"""What `store.meta` holds; each is None until the first `sync` records it."""


class StoreError(ValueError):
    """An index file cannot be used: missing, corrupt, not a raglab index, or a newer schema."""


class DimensionMismatch(ValueError):
    """A vector's length differs from the store's dimension."""


class EmbedderMismatch(ValueError):
    """An index is used with an embedder other than the one that built it."""


@dataclass(frozen=True, slots=True)
class DocRecord:
    """What a store remembers about a document, to tell later whether it changed."""

    id: str
    version: str
    hash: str
    tenant: str
    groups: tuple[str, ...]
    title: str = ""

    @classmethod
    def of(cls, doc: Document) -> DocRecord:
        """The record of a loaded document."""
        return cls(doc.id, doc.version, doc.hash, doc.tenant, tuple(doc.groups), doc.title)


@dataclass(frozen=True, slots=True)
class SyncReport:
    """What `sync` did, by document id (each tuple sorted).

    `embedder` is the one actually used: for a fittable embedder, the fitted one — query
    the store with it. `embedded` counts the chunks embedded; `rebuilt` says why every
    document was re-embedded ("" when only changed documents were).
    """

    added: tuple[str, ...]
    updated: tuple[str, ...]
    removed: tuple[str, ...]
    unchanged: tuple[str, ...]
    embedder: Embedder
    embedded: int = 0
    rebuilt: str = ""


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
    if dim is not None and (
        not isinstance(dim, (int, np.integer)) or isinstance(dim, bool) or dim <= 0
    ):
        raise ValueError(f"dim must be a positive whole number (got dim={dim!r})")
    return None if dim is None else int(dim)


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

    Searching one principal's rows means copying them out of the matrix (`matrix[rows]`).
    The copies are kept per (tenant, groups) — while their rows add up to at most one
    matrix, so memory stays bounded at twice the vectors — and a principal who may read
    every row uses the matrix itself.
    """

    __slots__ = ("_blocks", "access", "chunks", "matrix")

    def __init__(self, chunks: tuple[Chunk, ...], matrix: np.ndarray) -> None:
        self.chunks = chunks
        self.matrix = matrix
        self.access = AccessIndex(chunks)
        self._blocks: dict[tuple, np.ndarray] = {}

    def eligible(self, principal: Principal) -> tuple[np.ndarray, np.ndarray]:
        """The rows `principal` may read and their vectors (the only ones that get scored)."""
        rows = self.access.eligible_rows(principal)
        if len(rows) == len(self.chunks):
            return rows, self.matrix
        key = self.access.key(principal)
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
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k <= 0:
        raise ValueError(f"k must be a positive whole number (got k={k!r})")
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
        return [snapshot.chunks[row] for row in snapshot.access.eligible_rows(principal)]

    def search(
        self, query: np.ndarray, principal: Principal, k: int, *, min_score: float | None = None
    ) -> list[Hit]:
        return _search(self._current(), self._dim, query, principal, k, min_score)


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
            self._snapshot = _Snapshot(chunks, matrix)
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


# ---------------------------------------------------------------------------- SQLite

SCHEMA_VERSION = 1
"""Bumped whenever the tables change; a file with another version is refused, not guessed at."""

FORMAT = "raglab-index"
"""Written into every index's meta table, so any other SQLite file is recognised as foreign."""

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);  -- values are JSON
CREATE TABLE documents (
    id TEXT PRIMARY KEY, version TEXT NOT NULL, hash TEXT NOT NULL,
    tenant TEXT NOT NULL, groups TEXT NOT NULL, title TEXT NOT NULL
);
CREATE TABLE chunks (
    doc_id TEXT NOT NULL REFERENCES documents(id), idx INTEGER NOT NULL,
    text TEXT NOT NULL, start_char INTEGER NOT NULL, end_char INTEGER NOT NULL,
    heading TEXT NOT NULL, title TEXT NOT NULL, tenant TEXT NOT NULL, groups TEXT NOT NULL,
    doc_version TEXT NOT NULL,
    vector BLOB NOT NULL,  -- little-endian float32, dim * 4 bytes
    PRIMARY KEY (doc_id, idx)
);
"""

_CHUNK_COLUMNS = (
    "doc_id, idx, text, start_char, end_char, heading, title, tenant, groups, doc_version, vector"
)


class SQLiteStore(_SnapshotReads):
    """A store in one SQLite file: documents, chunks, float32 vectors and the index settings.

    Make one with `SQLiteStore.create(path)`, reopen it with `SQLiteStore.open(path)`.
    Searches load every vector into one numpy matrix once and reuse it until the next
    write (here or by another process), instead of reading rows one by one.
    Order is by document id, then chunk index: SQLite compares text as UTF-8 bytes,
    which sorts exactly like Python compares str.
    """

    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        """Use `create`, `open` or `open_or_create`; this wraps an already checked connection."""
        self.path = path
        self._con = connection
        self._depth = 0  # transaction nesting: only the outermost one commits
        self._snapshot: _Snapshot | None = None
        self._data_version = -1
        self._load_settings()

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self.path)!r}, dim={self._dim}, chunks={len(self)})"

    # -- opening

    @classmethod
    def create(cls, path: str | Path, *, dim: int | None = None) -> SQLiteStore:
        """A new, empty index file at `path` (refused if the file exists)."""
        path = Path(path)
        dim = _check_dim(dim)
        if path.exists():
            raise StoreError(
                f"index file {str(path)!r} already exists; open it, or remove it first"
            )
        con = _connect(path, mode="rwc")
        meta = {"format": FORMAT, "schema_version": SCHEMA_VERSION, "dim": dim, **_empty_meta()}
        try:
            con.executescript("BEGIN;" + _SCHEMA)  # tables and meta land together, or not at all
            con.executemany(
                "INSERT INTO meta VALUES (?, ?)", [(k, json.dumps(v)) for k, v in meta.items()]
            )
            con.execute("COMMIT")
        except BaseException:
            con.close()
            path.unlink(missing_ok=True)
            raise
        return cls(con, path)

    @classmethod
    def open(cls, path: str | Path) -> SQLiteStore:
        """An existing index file; `StoreError` if it is missing, corrupt or not a raglab index."""
        path = Path(path)
        if not path.exists():
            raise StoreError(f"index file {str(path)!r} does not exist")
        if not path.is_file():
            raise StoreError(f"index file {str(path)!r} is not a file")
        con = _connect(path, mode="rw")
        try:
            _check_schema(con, path)
            return cls(con, path)
        except BaseException:
            con.close()
            raise

    @classmethod
    def open_or_create(cls, path: str | Path, *, dim: int | None = None) -> SQLiteStore:
        """Open the index at `path`, or create it when there is no file yet."""
        return cls.open(path) if Path(path).exists() else cls.create(path, dim=dim)

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading

    @property
    def dim(self) -> int | None:
        self._refresh()
        return self._dim

    @property
    def meta(self) -> dict[str, Any]:
        self._refresh()
        return json.loads(json.dumps(self._meta))

    def __len__(self) -> int:
        return self._con.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]

    def documents(self) -> dict[str, DocRecord]:
        rows = self._con.execute(
            "SELECT id, version, hash, tenant, groups, title FROM documents ORDER BY id"
        )
        return {
            doc_id: DocRecord(doc_id, version, hash_, tenant, tuple(json.loads(groups)), title)
            for doc_id, version, hash_, tenant, groups, title in rows
        }

    # -- writing

    def add(
        self, chunks: Sequence[Chunk], vectors: np.ndarray, *, documents: Iterable[DocRecord] = ()
    ) -> None:
        self._refresh()
        existing = {row[0] for row in self._con.execute("SELECT id FROM documents")}
        dim, stored = _prepare_documents(chunks, vectors, documents, self._dim, existing)
        with self.transaction():
            if dim != self._dim:
                self._write_meta({"dim": dim})
                self._dim = dim
            self._con.executemany(
                "INSERT INTO documents VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (r.id, r.version, r.hash, r.tenant, json.dumps(list(r.groups)), r.title)
                    for r in (d.record for d in stored)
                ],
            )
            self._con.executemany(
                f"INSERT INTO chunks ({_CHUNK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    _chunk_row(chunk, vector)
                    for doc in stored
                    for chunk, vector in zip(doc.chunks, doc.vectors)
                ],
            )

    def delete_document(self, doc_id: str) -> int:
        with self.transaction():
            removed = self._con.execute("DELETE FROM chunks WHERE doc_id = ?", (doc_id,)).rowcount
            self._con.execute("DELETE FROM documents WHERE id = ?", (doc_id,))
        return removed

    def set_meta(self, meta: Mapping[str, Any]) -> None:
        self._refresh()
        updated = _checked_meta(meta, self._meta)
        dim = _dim_from_meta(updated, self._dim)
        with self.transaction():
            self._write_meta({**{key: updated[key] for key in META_KEYS}, "dim": dim})
            self._meta, self._dim = updated, dim

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One SQLite transaction: on an exception everything written inside is rolled back."""
        if self._depth:  # already inside one: the outermost transaction decides
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        self._con.execute("BEGIN IMMEDIATE")  # take the write lock now, not halfway through
        self._depth = 1
        try:
            yield
        except BaseException:
            self._con.execute("ROLLBACK")
            raise
        else:
            self._con.execute("COMMIT")
        finally:
            self._depth = 0
            self._snapshot = None
            self._load_settings()  # after a rollback, forget settings that never landed

    # -- internals

    def _write_meta(self, values: Mapping[str, Any]) -> None:
        self._con.executemany(
            "INSERT OR REPLACE INTO meta VALUES (?, ?)",
            [(k, json.dumps(v)) for k, v in values.items()],
        )

    def _load_settings(self) -> None:
        stored = _read_meta(self._con, self.path)
        self._dim = stored.get("dim")
        self._meta = {key: stored.get(key) for key in META_KEYS}
        self._data_version = self._con.execute("PRAGMA data_version").fetchone()[0]

    def _refresh(self) -> None:
        """Drop what is cached if another connection has written to the file since."""
        if self._depth:
            return
        if self._con.execute("PRAGMA data_version").fetchone()[0] != self._data_version:
            self._snapshot = None
            self._load_settings()

    def _current(self) -> _Snapshot:
        self._refresh()
        if self._snapshot is None:
            self._snapshot = self._load_snapshot()
        return self._snapshot

    def _load_snapshot(self) -> _Snapshot:
        """Every chunk and vector in store order, the vectors as one matrix."""
        rows = self._con.execute(
            f"SELECT {_CHUNK_COLUMNS} FROM chunks ORDER BY doc_id, idx"
        ).fetchall()
        parsed: dict[str, tuple[str, ...]] = {}

        def groups_of(text: str) -> tuple[str, ...]:  # few distinct group lists: parse each once
            if text not in parsed:
                parsed[text] = tuple(json.loads(text))
            return parsed[text]

        # Columns in _CHUNK_COLUMNS order: the first eight are Chunk's own first eight fields.
        chunks = tuple(Chunk(*row[:8], groups_of(row[8]), row[9]) for row in rows)
        dim = self._dim or 0
        blob = b"".join(row[-1] for row in rows)
        if len(blob) != len(rows) * dim * 4:
            raise StoreError(
                f"index file {str(self.path)!r} is corrupt: vector blobs do not match dim={dim}"
            )
        # .astype copies into an aligned, native-endian array (frombuffer only views the bytes).
        matrix = np.frombuffer(blob, dtype="<f4").astype(np.float32).reshape(len(rows), dim)
        matrix.setflags(write=False)
        return _Snapshot(chunks, matrix)


def _chunk_row(chunk: Chunk, vector: np.ndarray) -> tuple:
    return (
        chunk.doc_id,
        chunk.index,
        chunk.text,
        chunk.start,
        chunk.end,
        chunk.heading,
        chunk.title,
        chunk.tenant,
        json.dumps(list(chunk.groups)),
        chunk.doc_version,
        vector.astype("<f4").tobytes(),
    )


def _connect(path: Path, *, mode: str) -> sqlite3.Connection:
    """A connection in autocommit mode: `SQLiteStore.transaction` issues BEGIN/COMMIT itself."""
    # mode=rw never creates a file, so opening a mistyped path cannot leave an empty index behind.
    uri = f"{path.resolve().as_uri()}?mode={mode}"
    try:
        return sqlite3.connect(uri, uri=True, isolation_level=None)
    except sqlite3.Error as error:
        raise StoreError(f"index file {str(path)!r} cannot be opened ({error})") from None


def _check_schema(con: sqlite3.Connection, path: Path) -> None:
    """Refuse anything that is not a raglab index of this schema version."""
    name = str(path)
    try:
        tables = {
            row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
    except sqlite3.DatabaseError as error:
        raise StoreError(
            f"index file {name!r} is not a raglab index (not a SQLite database: {error})"
        ) from None
    missing = sorted({"meta", "documents", "chunks"} - tables)
    if missing:
        raise StoreError(
            f"index file {name!r} is not a raglab index (missing tables: {', '.join(missing)})"
        )
    meta = _read_meta(con, path)
    if meta.get("format") != FORMAT:
        raise StoreError(
            f"index file {name!r} is not a raglab index (no {FORMAT!r} marker in its meta table)"
        )
    version = meta.get("schema_version")
    if isinstance(version, int) and version > SCHEMA_VERSION:
        raise StoreError(
            f"index file {name!r} has schema version {version}, newer than this raglab reads "
            f"({SCHEMA_VERSION}): upgrade raglab"
        )
    if version != SCHEMA_VERSION:
        raise StoreError(
            f"index file {name!r} has schema version {version!r}, this raglab reads "
            f"{SCHEMA_VERSION}: rebuild the index"
        )


def _read_meta(con: sqlite3.Connection, path: Path) -> dict[str, Any]:
    try:
        return {key: json.loads(value) for key, value in con.execute("SELECT key, value FROM meta")}
    except (sqlite3.DatabaseError, json.JSONDecodeError, TypeError) as error:
        raise StoreError(
            f"index file {str(path)!r} is corrupt: unreadable meta table ({error})"
        ) from None


# ---------------------------------------------------------------------------- embedder check


def check_embedder(store: VectorStore, embedder: Embedder) -> None:
    """Refuse to query `store` with an embedder other than the one that built it.

    Name, dim and version must all match what the index recorded: vectors from two
    different models are not comparable, even when their lengths agree. An index with no
    embedder recorded (filled by hand with `add`) is checked on its dim alone.
    """
    meta = store.meta
    given = (embedder.name, embedder.dim, embedder.version)
    where = f"index {str(store.path)!r}" if hasattr(store, "path") else "the index"
    if meta["embedder_name"] is None:
        if store.dim is not None and embedder.dim != store.dim:
            raise EmbedderMismatch(
                f"{where} holds vectors of dimension {store.dim} but embedder {embedder.name!r} "
                f"makes dimension {embedder.dim}"
            )
        return
    stored = (meta["embedder_name"], meta["embedder_dim"], meta["embedder_version"])
    if stored != given:
        raise EmbedderMismatch(
            f"{where} was built with embedder {_describe(*stored)} but the given embedder is "
            f"{_describe(*given)}; query with the embedder that built the index, or rebuild it"
        )


def _describe(name: str, dim: int, version: str) -> str:
    return f"{name!r} (dim={dim}, version={version!r})"


# ---------------------------------------------------------------------------- sync


class _Chunker(Protocol):
    def split(self, doc: Document) -> list[Chunk]: ...

    def params(self) -> dict[str, Any]: ...


def sync(
    store: VectorStore, documents: Iterable[Document], *, chunker: _Chunker, embedder: Embedder
) -> SyncReport:
    """Bring `store` up to date with `documents`, embedding only what changed.

    Each document's record (version, content hash, tenant, groups, title) is compared with
    the stored one: new documents are added, changed ones re-chunked and re-embedded,
    documents no longer present deleted with their chunks and vectors, and the rest left
    untouched. Access metadata counts as a change: a document moved to another group is
    re-indexed even when its text did not change.

    Everything is re-chunked and re-embedded when the chunker's params changed, or when
    the embedder's version differs from the stored one. A fittable embedder (one with
    `.fit`) is first fitted on every chunk text of the new corpus, in store order: a
    fitted model changes with its corpus, so when the fit gives a new version, every
    stored vector is out of date and every chunk is re-embedded.

    Chunking and embedding happen before the store is touched, and the writes run in one
    transaction: if anything fails, the previous index stays as it was.
    An embedder with another name or dim than the index's is refused (`EmbedderMismatch`).
    """
    docs = _unique_documents(documents)
    stored, meta = store.documents(), store.meta
    params = _checked_meta({"chunker": chunker.params()}, {})["chunker"]
    split: dict[str, list[Chunk]] = {}
    if hasattr(embedder, "fit"):
        split = {doc.id: _split_checked(chunker, doc) for doc in docs.values()}
        embedder = embedder.fit([chunk.text for doc_id in docs for chunk in split[doc_id]])
    _refuse_other_embedder(store, meta, embedder)
    rebuilt = _rebuild_reason(meta, params, embedder) if stored else ""

    records = {doc_id: DocRecord.of(doc) for doc_id, doc in docs.items()}
    added = [doc_id for doc_id in records if doc_id not in stored]
    kept = [doc_id for doc_id in records if doc_id in stored]
    updated = [doc_id for doc_id in kept if rebuilt or stored[doc_id] != records[doc_id]]
    unchanged = [doc_id for doc_id in kept if not rebuilt and stored[doc_id] == records[doc_id]]
    removed = sorted(set(stored) - set(records))

    to_write = sorted(added + updated)
    chunks = [
        chunk
        for doc_id in to_write
        for chunk in split.get(doc_id) or _split_checked(chunker, docs[doc_id])
    ]
    vectors = _embed_checked(embedder, [chunk.text for chunk in chunks])
    with store.transaction():
        for doc_id in removed + updated:
            store.delete_document(doc_id)
        store.add(chunks, vectors, documents=[records[doc_id] for doc_id in to_write])
        store.set_meta(
            {
                "embedder_name": embedder.name,
                "embedder_dim": embedder.dim,
                "embedder_version": embedder.version,
                "chunker": params,
            }
        )
    return SyncReport(
        tuple(added),
        tuple(updated),
        tuple(removed),
        tuple(unchanged),
        embedder,
        len(chunks),
        rebuilt,
    )


def _unique_documents(documents: Iterable[Document]) -> dict[str, Document]:
    """Documents by id, sorted by id (store order); a repeated id is an error."""
    by_id: dict[str, Document] = {}
    for doc in documents:
        if doc.id in by_id:
            raise ValueError(f"document id {doc.id!r} appears twice in the corpus")
        by_id[doc.id] = doc
    return {doc_id: by_id[doc_id] for doc_id in sorted(by_id)}


def _split_checked(chunker: _Chunker, doc: Document) -> list[Chunk]:
    """The chunker's chunks for `doc`, checked: right document, access metadata, offsets."""
    chunks = list(chunker.split(doc))
    for chunk in chunks:
        if (
            chunk.doc_id != doc.id
            or chunk.tenant != doc.tenant
            or set(chunk.groups) != set(doc.groups)
        ):
            raise ValueError(
                f"chunker returned chunk {chunk.id!r} (tenant {chunk.tenant!r}, groups "
                f"{chunk.groups}) for document {doc.id!r} (tenant {doc.tenant!r}, groups "
                f"{doc.groups}): chunks must carry "
                "their document's id and access metadata"
            )
        if doc.text[chunk.start : chunk.end] != chunk.text:
            raise ValueError(
                f"chunker returned chunk {chunk.id!r} whose text is not "
                f"doc.text[{chunk.start}:{chunk.end}]"
            )
    return chunks


def _refuse_other_embedder(store: VectorStore, meta: dict[str, Any], embedder: Embedder) -> None:
    """An index holds one embedder's vectors: another name or dim is refused, never mixed in."""
    name_differs = meta["embedder_name"] is not None and meta["embedder_name"] != embedder.name
    dim_differs = store.dim is not None and store.dim != embedder.dim
    if name_differs or dim_differs:
        stored = _describe(meta["embedder_name"], store.dim, meta["embedder_version"])
        raise EmbedderMismatch(
            f"the index was built with embedder {stored} but sync was given "
            f"{_describe(embedder.name, embedder.dim, embedder.version)}; "
            "build a new index for another embedder"
        )


def _rebuild_reason(meta: dict[str, Any], params: dict[str, Any], embedder: Embedder) -> str:
    """Why every stored chunk is out of date, or "" when only changed documents are."""
    if meta["embedder_version"] is None:
        return "the index records no embedder"
    if meta["embedder_version"] != embedder.version:
        return f"embedder version changed ({meta['embedder_version']!r} -> {embedder.version!r})"
    if meta["chunker"] != params:
        return f"chunker params changed ({meta['chunker']} -> {params})"
    return ""


def _embed_checked(embedder: Embedder, texts: list[str]) -> np.ndarray:
    """The embedder's vectors for `texts`, checked to be one row of `embedder.dim` per text."""
    if not texts:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
    if vectors.shape != (len(texts), embedder.dim):
        raise ValueError(
            f"embedder {embedder.name!r} returned shape {vectors.shape} for {len(texts)} texts "
            f"(expected ({len(texts)}, {embedder.dim}))"
        )
    return vectors
