"""The SQLite index file's tables and rows, and how a file is opened, checked and its errors
reported.

Split from `raglab.store.sqlite_store`, which reads and writes through these. Besides documents and
chunks, the file holds what a cold `raglab ask` needs without reading every chunk:
BM25 postings per access partition (`raglab.store.sqlite_postings`) and the content stems each
partition uses (`raglab.store.sqlite_stems`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from raglab.records import Chunk, DocRecord
from raglab.store.errors import NoSpace, StoreError
from raglab.store.writes import StoredDocument, empty_meta

SCHEMA_VERSION = 5
"""Bumped whenever the tables change; a file with another version is refused, not guessed at.
2: chunk ids, access partitions and BM25 postings. 3: each partition's content stems.
4: each chunk's context header (contextual chunks). 5: conversation turns (`turns`)."""

LOCK_WAIT_SECONDS = 10.0
"""How long a reader or writer waits for another process's write to finish before giving up."""

FORMAT = "raglab-index"
"""Written into every index's meta table, so any other SQLite file is recognised as foreign."""

# Chunk ids never come back once deleted (AUTOINCREMENT): postings and the vector file
# name chunks by id, so an id must always mean the same chunk.
_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);  -- values are JSON
CREATE TABLE documents (
    id TEXT PRIMARY KEY, version TEXT NOT NULL, hash TEXT NOT NULL,
    tenant TEXT NOT NULL, groups TEXT NOT NULL, title TEXT NOT NULL
);
CREATE TABLE chunks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    doc_id TEXT NOT NULL REFERENCES documents(id), idx INTEGER NOT NULL,
    text TEXT NOT NULL, start_char INTEGER NOT NULL, end_char INTEGER NOT NULL,
    heading TEXT NOT NULL, title TEXT NOT NULL, tenant TEXT NOT NULL, groups TEXT NOT NULL,
    doc_version TEXT NOT NULL, context TEXT NOT NULL,
    vector BLOB NOT NULL,  -- little-endian float32, dim * 4 bytes
    UNIQUE (doc_id, idx)
);
-- One row per access partition: the chunks of one tenant with one set of groups.
CREATE TABLE parts (
    id INTEGER PRIMARY KEY, tenant TEXT NOT NULL, groups TEXT NOT NULL,
    n_chunks INTEGER NOT NULL, n_tokens INTEGER NOT NULL, UNIQUE (tenant, groups)
);
-- A word's postings in one partition: packed (chunk id, count, chunk length) records.
CREATE TABLE postings (
    term TEXT NOT NULL, part INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (term, part)
) WITHOUT ROWID;
-- How many chunks of a partition use a content stem in their title, heading or text.
CREATE TABLE stems (
    stem TEXT NOT NULL, part INTEGER NOT NULL, chunks INTEGER NOT NULL, PRIMARY KEY (stem, part)
) WITHOUT ROWID;
-- Conversation history (raglab.conversation.sqlite_history), apart from the documents: one
-- row per turn, owned by a tenant and a user, and every read names both. JSON lists in
-- cited and items, and the vector is the index's embedder's, little-endian float32.
CREATE TABLE turns (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant TEXT NOT NULL, user TEXT NOT NULL, groups TEXT NOT NULL,
    conversation TEXT NOT NULL, n INTEGER NOT NULL,
    question TEXT NOT NULL, standalone TEXT NOT NULL, answer TEXT NOT NULL,
    cited TEXT NOT NULL, items TEXT NOT NULL, time TEXT NOT NULL, vector BLOB NOT NULL,
    UNIQUE (tenant, user, conversation, n)
)
"""


def connect(path: Path, *, mode: str) -> sqlite3.Connection:
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
def sqlite_errors(path: Path) -> Iterator[None]:
    """Turn SQLite's exceptions into a `StoreError` that names the file and says what to do."""
    try:
        yield
    except sqlite3.DatabaseError as error:
        raise _store_error(path, error) from None


def _store_error(path: Path, error: sqlite3.DatabaseError) -> StoreError:
    """What went wrong, in words: only a file SQLite found damaged is called corrupt, since
    that message tells the user to delete it."""
    name, code = str(path), getattr(error, "sqlite_errorname", "")
    if code.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return StoreError(
            f"index file {name!r} is being written by another process (waited "
            f"{LOCK_WAIT_SECONDS:g} s): try again when it has finished"
        )
    if code.startswith("SQLITE_NOTADB"):  # maybe the user's own file: never say "delete it"
        return StoreError(f"index file {name!r} is not a raglab index (not a SQLite database)")
    if code.startswith("SQLITE_FULL"):
        return NoSpace(path, str(error))
    if code == "SQLITE_READONLY_ROLLBACK":  # a reader finds a write cut short, and may not undo it
        return StoreError(
            f"index file {name!r} cannot be read: a write to it was cut short, and only a "
            f"user who may write it can undo that ({error}): run any raglab command on it "
            "once as such a user"
        )
    if code.startswith("SQLITE_READONLY"):
        where = "its folder is" if code == "SQLITE_READONLY_DIRECTORY" else "it is"
        return StoreError(
            f"index file {name!r} cannot be written: {where} read-only for this user ({error})"
        )
    if code.startswith(("SQLITE_IOERR", "SQLITE_CANTOPEN", "SQLITE_PERM")):
        return StoreError(f"index file {name!r} could not be read or written ({error})")
    return StoreError(f"index file {name!r} is corrupt ({error}): {REBUILD}")


CHUNK_COLUMNS = (
    "doc_id, idx, text, start_char, end_char, heading, title, tenant, groups, doc_version, context, "
    "vector"
)
READ_COLUMNS = CHUNK_COLUMNS.removesuffix(", vector")  # what a Chunk is made of


def chunk_of(row: Sequence[Any], parsed: dict[str, tuple[str, ...]] | None = None) -> Chunk:
    """The Chunk of a row read in READ_COLUMNS (or CHUNK_COLUMNS) order.

    The first eight columns are Chunk's own first eight fields, then groups, doc_version
    and context. `parsed` remembers the
    groups lists already parsed, when many rows are read at once.
    """
    parsed = {} if parsed is None else parsed
    if row[8] not in parsed:
        parsed[row[8]] = tuple(json.loads(row[8]))
    doc_id, index, text, start, end, heading, title, tenant = row[:8]
    groups = parsed[row[8]]
    return Chunk(doc_id, index, text, start, end, heading, title, tenant, groups, row[9], row[10])


def chunk_row(chunk: Chunk, vector: np.ndarray) -> tuple[Any, ...]:
    """A chunk as a row, in CHUNK_COLUMNS order."""
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
        chunk.context,
        vector.astype("<f4").tobytes(),
    )


REBUILD = "delete it and run raglab index again"

BATCH = 500
"""Values per `IN (...)` list: SQLite caps the parameters of one statement."""


def read_documents(con: sqlite3.Connection) -> dict[str, DocRecord]:
    """Document id -> record, sorted by id."""
    rows = con.execute("SELECT id, version, hash, tenant, groups, title FROM documents ORDER BY id")
    return {
        doc_id: DocRecord(doc_id, version, hash_, tenant, tuple(json.loads(groups)), title)
        for doc_id, version, hash_, tenant, groups, title in rows
    }


def insert_documents(con: sqlite3.Connection, stored: Sequence[StoredDocument]) -> range:
    """Write the documents' records and their chunks' rows; returns the chunk ids given,
    in the order of the documents' chunks (ids are never reused: see the chunks table)."""
    con.executemany(
        "INSERT INTO documents VALUES (?, ?, ?, ?, ?, ?)",
        [
            (r.id, r.version, r.hash, r.tenant, json.dumps(list(r.groups)), r.title)
            for r in (d.record for d in stored)
        ],
    )
    pairs = [(c, v) for d in stored for c, v in zip(d.chunks, d.vectors)]
    first = 1 + con.execute("SELECT COALESCE(MAX(seq), 0) FROM sqlite_sequence").fetchone()[0]
    ids = range(first, first + len(pairs))
    marks = ", ".join("?" * 13)
    con.executemany(
        f"INSERT INTO chunks (id, {CHUNK_COLUMNS}) VALUES ({marks})",
        [(i, *chunk_row(chunk, vector)) for i, (chunk, vector) in zip(ids, pairs)],
    )
    return ids


def chunks_by_id(con: sqlite3.Connection, ids: np.ndarray) -> dict[int, Chunk]:
    """The chunks with these ids, read a few hundred at a time."""
    found: dict[int, Chunk] = {}
    for start in range(0, len(ids), BATCH):
        batch = ids[start : start + BATCH].tolist()
        marks = ", ".join("?" * len(batch))
        rows = con.execute(f"SELECT id, {READ_COLUMNS} FROM chunks WHERE id IN ({marks})", batch)
        found.update((row[0], chunk_of(row[1:])) for row in rows)
    return found


def chunk_ids_of(con: sqlite3.Connection, doc_ids: Sequence[str]) -> np.ndarray:
    """The ids of the chunks of these documents (int64)."""
    ids: list[int] = []
    for start in range(0, len(doc_ids), BATCH):
        batch = list(doc_ids[start : start + BATCH])
        marks = ", ".join("?" * len(batch))
        ids += [
            row[0] for row in con.execute(f"SELECT id FROM chunks WHERE doc_id IN ({marks})", batch)
        ]
    return np.array(ids, dtype=np.int64)


def every_chunk(
    con: sqlite3.Connection, path: Path, dim: int
) -> tuple[tuple[Chunk, ...], np.ndarray]:
    """Every chunk in store order, and their vectors as one read-only float32 matrix."""
    rows = con.execute(f"SELECT {CHUNK_COLUMNS} FROM chunks ORDER BY doc_id, idx").fetchall()
    parsed: dict[str, tuple[str, ...]] = {}  # few distinct group lists: parse each once
    chunks = tuple(chunk_of(row, parsed) for row in rows)
    blob = b"".join(row[-1] for row in rows)
    if len(blob) != len(rows) * dim * 4:
        raise StoreError(
            f"index file {str(path)!r} is corrupt (vector blobs do not match dim={dim}): {REBUILD}"
        )
    # .astype copies into an aligned, native-endian array (frombuffer only views the bytes).
    matrix = np.frombuffer(blob, dtype="<f4").astype(np.float32).reshape(len(rows), dim)
    matrix.setflags(write=False)
    return chunks, matrix


def tables(con: sqlite3.Connection) -> set[str]:
    return {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def create_schema(con: sqlite3.Connection, dim: int | None) -> None:
    """The tables and settings of a new index, written inside the caller's transaction."""
    meta = {"format": FORMAT, "schema_version": SCHEMA_VERSION, "dim": dim, **empty_meta()}
    for statement in _SCHEMA.split(";"):  # not executescript: it would COMMIT the caller's BEGIN
        con.execute(statement)
    con.executemany("INSERT INTO meta VALUES (?, ?)", [(k, json.dumps(v)) for k, v in meta.items()])


def check_schema(con: sqlite3.Connection, path: Path) -> None:
    """Refuse anything that is not a complete raglab index of this schema version."""
    name = str(path)
    with sqlite_errors(path):
        names = tables(con)
    if not names:  # a first build holds its tables back until it has finished
        raise StoreError(
            f"index file {name!r} is incomplete (its first build did not finish, or is still "
            "running): run raglab index again"
        )
    missing = sorted({"meta", "documents", "chunks"} - names)  # a raglab file has these
    if missing:
        raise StoreError(
            f"index file {name!r} is not a raglab index (missing tables: {', '.join(missing)})"
        )
    meta = read_meta(con, path)
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


def check_pages(con: sqlite3.Connection, path: Path) -> None:
    """Read every page once before writing: an incremental run skips unchanged documents,
    so without this it would report success on a damaged file."""
    problems = [row[0] for row in con.execute("PRAGMA quick_check(3)")]
    if problems != ["ok"]:
        raise StoreError(f"index file {str(path)!r} is corrupt ({'; '.join(problems)}): {REBUILD}")


def read_meta(con: sqlite3.Connection, path: Path) -> dict[str, Any]:
    with sqlite_errors(path):
        rows = con.execute("SELECT key, value FROM meta").fetchall()
    try:
        return {key: json.loads(value) for key, value in rows}
    except (json.JSONDecodeError, TypeError) as error:
        raise StoreError(
            f"index file {str(path)!r} is corrupt (unreadable meta table: {error}): {REBUILD}"
        ) from None
