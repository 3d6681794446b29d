"""The SQLite store: one index file holding documents, chunks, float32 vectors and settings.

It reads through the same code as the in-memory store (`raglab.stores`), so both return
the same hits, ties included; only where the rows live differs.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

import numpy as np

from raglab.records import Chunk

# The reading path and the settings checks are shared with the memory store.
from raglab.stores import (
    META_KEYS,
    DocRecord,
    StoreError,
    _check_dim,
    _checked_meta,
    _dim_from_meta,
    _empty_meta,
    _prepare_documents,
    _Snapshot,
    _SnapshotReads,
)

SCHEMA_VERSION = 1
"""Bumped whenever the tables change; a file with another version is refused, not guessed at."""

LOCK_WAIT_SECONDS = 10.0
"""How long a reader or writer waits for another process's write to finish before giving up."""

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

    Make one with `SQLiteStore.create(path)`, reopen it with `SQLiteStore.open(path)`;
    `SQLiteStore.writing(path)` is the one way to write a file another process may use.
    Searches load every vector into one numpy matrix once and reuse it until the next
    write (here or by another process), instead of reading rows one by one.
    Order is by document id, then chunk index: SQLite compares text as UTF-8 bytes,
    which sorts exactly like Python compares str.
    """

    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        """Use `create`, `open` or `writing`; this wraps an already checked connection."""
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
        return cls.open_or_create(path, dim=dim)

    @classmethod
    def open(cls, path: str | Path) -> SQLiteStore:
        """An existing index file; `StoreError` if it is missing, corrupt or not a raglab index."""
        path = Path(path)
        if not path.exists():
            raise StoreError(f"index file {str(path)!r} does not exist")
        con = _connect(path, mode="rw")
        try:
            _check_schema(con, path)
            return cls(con, path)
        except BaseException:
            con.close()
            raise

    @classmethod
    def open_or_create(cls, path: str | Path, *, dim: int | None = None) -> SQLiteStore:
        """Open the index at `path`, or create an empty one when there is no file yet."""
        with cls.writing(path, dim=dim) as store:
            return store

    @classmethod
    @contextmanager
    def writing(cls, path: str | Path, *, dim: int | None = None) -> Iterator[SQLiteStore]:
        """The index at `path` (created if missing) for one writer, locked for the whole block.

        Everything written inside the block lands together when it ends, or not at all:
        a first build cut short (even by kill -9) leaves an empty file that readers call
        incomplete, never half an index. A second writer waits up to `LOCK_WAIT_SECONDS`
        for the lock and then fails with a clear message, instead of mixing its corpus
        into ours. The store stays open for reading after the block.
        """
        path = Path(path)
        con = _connect(path, mode="rwc")
        try:
            with _sqlite_errors(path):
                con.execute("BEGIN IMMEDIATE")  # the write lock, held until COMMIT below
                if _tables(con):
                    _check_schema(con, path)
                    _check_pages(con, path)
                else:  # a new file, or one whose first build never finished
                    _create_schema(con, _check_dim(dim))
            store = cls(con, path)
        except BaseException:
            con.close()
            raise
        store._depth = 1  # store.transaction() blocks inside this one nest into it
        try:
            yield store
        except BaseException:
            store.close()  # closing inside a transaction rolls it back
            raise
        store._end("COMMIT")

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
        return self._run("SELECT COUNT(*) FROM chunks")[0][0]

    def documents(self) -> dict[str, DocRecord]:
        rows = self._run(
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
        existing = {row[0] for row in self._run("SELECT id FROM documents")}
        dim, stored = _prepare_documents(chunks, vectors, documents, self._dim, existing)
        with self.transaction():
            if dim != self._dim:
                self._write_meta({"dim": dim})
                self._dim = dim
            self._run_many(
                "INSERT INTO documents VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (r.id, r.version, r.hash, r.tenant, json.dumps(list(r.groups)), r.title)
                    for r in (d.record for d in stored)
                ],
            )
            self._run_many(
                f"INSERT INTO chunks ({_CHUNK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    _chunk_row(chunk, vector)
                    for doc in stored
                    for chunk, vector in zip(doc.chunks, doc.vectors)
                ],
            )

    def delete_document(self, doc_id: str) -> int:
        with self.transaction():
            removed = self._run("SELECT COUNT(*) FROM chunks WHERE doc_id = ?", (doc_id,))[0][0]
            self._run("DELETE FROM chunks WHERE doc_id = ?", (doc_id,))
            self._run("DELETE FROM documents WHERE id = ?", (doc_id,))
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
        self._run("BEGIN IMMEDIATE")  # take the write lock now, not halfway through
        self._depth = 1
        try:
            yield
        except BaseException:
            self._end("ROLLBACK")
            raise
        self._end("COMMIT")

    # -- internals

    def _run(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        """Every statement goes through here, so every SQLite failure becomes one clear error."""
        with _sqlite_errors(self.path):
            return self._con.execute(sql, params).fetchall()

    def _run_many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        with _sqlite_errors(self.path):
            self._con.executemany(sql, rows)

    def _end(self, statement: str) -> None:
        """COMMIT or ROLLBACK the outermost transaction, then forget what may not have landed."""
        try:
            self._run(statement)
        except StoreError:  # a COMMIT refused (say, busy) leaves the transaction open: end it
            if self._con.in_transaction:
                self._con.execute("ROLLBACK")
            raise
        finally:
            self._depth = 0
            self._snapshot = None
        self._load_settings()

    def _write_meta(self, values: Mapping[str, Any]) -> None:
        self._run_many(
            "INSERT OR REPLACE INTO meta VALUES (?, ?)",
            [(k, json.dumps(v)) for k, v in values.items()],
        )

    def _load_settings(self) -> None:
        stored = _read_meta(self._con, self.path)
        self._dim = stored.get("dim")
        self._meta = {key: stored.get(key) for key in META_KEYS}
        self._data_version = self._run("PRAGMA data_version")[0][0]

    def _refresh(self) -> None:
        """Drop what is cached if another connection has written to the file since."""
        if self._depth:
            return
        if self._run("PRAGMA data_version")[0][0] != self._data_version:
            self._snapshot = None
            self._load_settings()

    def _current(self) -> _Snapshot:
        self._refresh()
        if self._snapshot is None:
            self._snapshot = self._load_snapshot()
        return self._snapshot

    def _load_snapshot(self) -> _Snapshot:
        """Every chunk and vector in store order, the vectors as one matrix."""
        rows = self._run(f"SELECT {_CHUNK_COLUMNS} FROM chunks ORDER BY doc_id, idx")
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
                f"index file {str(self.path)!r} is corrupt (vector blobs do not "
                f"match dim={dim}): {_REBUILD}"
            )
        # .astype copies into an aligned, native-endian array (frombuffer only views the bytes).
        matrix = np.frombuffer(blob, dtype="<f4").astype(np.float32).reshape(len(rows), dim)
        matrix.setflags(write=False)
        return _Snapshot(chunks, matrix)


def _chunk_row(chunk: Chunk, vector: np.ndarray) -> tuple:
    """A chunk as a row, in _CHUNK_COLUMNS order."""
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
    if path.exists() and not path.is_file():
        raise StoreError(f"index file {str(path)!r} is not a file")
    uri = f"{path.resolve().as_uri()}?mode={mode}"
    try:
        return sqlite3.connect(uri, uri=True, isolation_level=None, timeout=LOCK_WAIT_SECONDS)
    except sqlite3.Error as error:
        raise StoreError(f"index file {str(path)!r} cannot be opened ({error})") from None


@contextmanager
def _sqlite_errors(path: Path) -> Iterator[None]:
    """Turn SQLite's exceptions into a `StoreError` that names the file and says what to do."""
    try:
        yield
    except sqlite3.DatabaseError as error:
        raise _store_error(path, error) from None


def _store_error(path: Path, error: sqlite3.DatabaseError) -> StoreError:
    name, code = str(path), getattr(error, "sqlite_errorname", "")
    if code.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return StoreError(
            f"index file {name!r} is being written by another process (waited "
            f"{LOCK_WAIT_SECONDS:g} s): try again when it has finished"
        )
    if code.startswith("SQLITE_NOTADB"):  # maybe the user's own file: never say "delete it"
        return StoreError(f"index file {name!r} is not a raglab index (not a SQLite database)")
    return StoreError(f"index file {name!r} is corrupt ({error}): {_REBUILD}")


_REBUILD = "delete it and run raglab index again"


def _tables(con: sqlite3.Connection) -> set[str]:
    return {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _create_schema(con: sqlite3.Connection, dim: int | None) -> None:
    """The tables and settings of a new index, written inside the caller's transaction."""
    meta = {"format": FORMAT, "schema_version": SCHEMA_VERSION, "dim": dim, **_empty_meta()}
    for statement in _SCHEMA.split(";"):  # not executescript: it would COMMIT the caller's BEGIN
        con.execute(statement)
    con.executemany("INSERT INTO meta VALUES (?, ?)", [(k, json.dumps(v)) for k, v in meta.items()])


def _check_schema(con: sqlite3.Connection, path: Path) -> None:
    """Refuse anything that is not a complete raglab index of this schema version."""
    name = str(path)
    with _sqlite_errors(path):
        tables = _tables(con)
    if not tables:  # a first build holds its tables back until it has finished
        raise StoreError(
            f"index file {name!r} is incomplete (its first build did not finish, or is still "
            "running): run raglab index again"
        )
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
    if version != SCHEMA_VERSION:
        newer = isinstance(version, int) and version > SCHEMA_VERSION
        fix = (
            "newer than this raglab reads ({}): upgrade raglab"
            if newer
            else ("this raglab reads {}: rebuild the index")
        )
        raise StoreError(
            f"index file {name!r} has schema version {version!r}, " + fix.format(SCHEMA_VERSION)
        )


def _check_pages(con: sqlite3.Connection, path: Path) -> None:
    """Read every page once before writing: an incremental run skips unchanged documents,
    so without this it would report success on a damaged file."""
    problems = [row[0] for row in con.execute("PRAGMA quick_check(3)")]
    if problems != ["ok"]:
        raise StoreError(f"index file {str(path)!r} is corrupt ({'; '.join(problems)}): {_REBUILD}")


def _read_meta(con: sqlite3.Connection, path: Path) -> dict[str, Any]:
    with _sqlite_errors(path):
        rows = con.execute("SELECT key, value FROM meta").fetchall()
    try:
        return {key: json.loads(value) for key, value in rows}
    except (json.JSONDecodeError, TypeError) as error:
        raise StoreError(
            f"index file {str(path)!r} is corrupt (unreadable meta table: {error}): {_REBUILD}"
        ) from None
