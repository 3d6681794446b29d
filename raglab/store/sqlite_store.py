"""The SQLite store: one index file holding documents, chunks, float32 vectors and settings.

It returns the same hits as the in-memory store (`raglab.store.memory`), ties included; only
where the rows live differs. A search reads no more than it needs, so that a cold
`raglab ask` does not grow with the corpus: dense search maps the vectors from a file
beside the index (`raglab.store.sqlite_vectors`), keyword search reads the postings of the
question's words (`raglab.store.sqlite_postings`), and only the hits' chunks are read back;
the answerer looks the question's stems up in each partition's stems (`raglab.store.sqlite_stems`).
The tables and file checks are in `raglab.store.sqlite_schema`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext, suppress
from pathlib import Path
from typing import Any, Self
from uuid import uuid4

import numpy as np

from raglab.records import Chunk, DocRecord, Hit, Partition, Principal
from raglab.store.access import can_read
from raglab.store.errors import StoreError
from raglab.store.protocol import META_KEYS

# The reading path and the settings checks are shared with the memory store.
from raglab.store.snapshot import Snapshot, SnapshotReads, checked_query
from raglab.store.sqlite_postings import Postings, part_key
from raglab.store.sqlite_schema import (
    LOCK_WAIT_SECONDS,
    READ_COLUMNS,
    REBUILD,
    SCHEMA_VERSION,
    check_pages,
    check_schema,
    chunk_ids_of,
    chunk_of,
    chunks_by_id,
    connect,
    create_schema,
    every_chunk,
    insert_documents,
    read_documents,
    read_meta,
    sqlite_errors,
    tables,
)
from raglab.store.sqlite_stems import Stems
from raglab.store.sqlite_vectors import VectorFile, change_counter, vector_file
from raglab.store.versions import hidden_from
from raglab.store.writes import check_dim, checked_meta, dim_from_meta, prepare_documents
from raglab.validation import check_int

__all__ = ["LOCK_WAIT_SECONDS", "SCHEMA_VERSION", "SQLiteStore"]


class SQLiteStore(SnapshotReads):
    """A store in one SQLite file: documents, chunks, float32 vectors and the index settings.

    Make one with `SQLiteStore.create(path)`, reopen it with `SQLiteStore.open(path)`;
    `SQLiteStore.writing(path)` is the one way to write a file another process may use.
    A search maps the vectors and reads postings as they are after the last write (here or
    by another process); `chunks()` and `vectors()` read every row into memory once.
    Order is by document id, then chunk index: SQLite compares text as UTF-8 bytes,
    which sorts exactly like Python compares str.
    """

    _meta: dict[str, Any]  # the settings as last read (`_load_settings`) or written

    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        """Use `create`, `open` or `writing`; this wraps an already checked connection."""
        self.path = path
        self._con = connection
        self._depth = 0  # transaction nesting: only the outermost one commits
        self._snapshot: Snapshot | None = None
        self._data_version = -1
        self._postings = Postings(connection)
        self._stems = Stems(connection)
        self._changed = False  # chunks written in this transaction: a new vector file is due
        self._vector_file: VectorFile | None = None
        self._load_settings()

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self.path)!r}, dim={self._dim}, chunks={len(self)})"

    # -- opening

    @classmethod
    def create(cls, path: str | Path, *, dim: int | None = None) -> SQLiteStore:
        """A new, empty index file at `path` (refused if the file exists)."""
        path = Path(path)
        dim = check_dim(dim)
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
        con = connect(path, mode="rw")
        try:
            check_schema(con, path)
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
        con = connect(path, mode="rwc")
        try:
            with sqlite_errors(path):
                con.execute("BEGIN IMMEDIATE")  # the write lock, held until COMMIT below
                if tables(con):
                    check_schema(con, path)
                    check_pages(con, path)
                else:  # a new file, or one whose first build never finished
                    create_schema(con, check_dim(dim))
            store = cls(con, path)
        except BaseException:
            con.close()
            raise
        store._depth = 1  # store.transaction() blocks inside this one nest into it
        try:
            yield store
        except BaseException:
            store._roll_back()
            store.close()
            raise
        store._end(commit=True)

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
        copy: dict[str, Any] = json.loads(json.dumps(self._meta))
        return copy

    def __len__(self) -> int:
        count: int = self._run("SELECT COUNT(*) FROM chunks")[0][0]
        return count

    def documents(self) -> dict[str, DocRecord]:
        with sqlite_errors(self.path):
            return read_documents(self._con)

    def search(
        self,
        query: np.ndarray,
        principal: Principal,
        k: int,
        *,
        min_score: float | None = None,
        partition: Partition | None = None,
    ) -> list[Hit]:
        """The top-k chunks `principal` may see, by cosine: the vector files beside the index
        propose them (`raglab.store.sqlite_vectors`), SQLite decides.

        Each hit is checked against its chunk's tenant and groups as the index holds them
        (`_readable_chunks`) before it leaves the store. A hit that fails shows that the files
        lie (edited, or another index's): they are written again from the index and searched
        once more. So no file beside the index can hand anyone a chunk they may not read.
        """
        self._refresh()
        if self._depth or not self._generation:  # inside a write: read the rows as they stand
            return super().search(query, principal, k, min_score=min_score, partition=partition)
        k = check_int("k", k, minimum=1)
        q = checked_query(query, self._dim)
        with self._reading():  # one view of the file: no write lands between the reads
            parts = set(self._postings.readable_parts(principal, partition))
            hidden = self._hidden_chunk_ids(principal)
            _, ids, scores = self._vectors().search(q, parts, k, hidden=hidden)
            chunks = self._readable_chunks(ids, principal)
            if chunks is None:  # the files beside the index lie: written again from it
                _, ids, scores = self._vectors(rewrite=True).search(q, parts, k, hidden=hidden)
                chunks = self._readable_chunks(ids, principal)
        if chunks is None:  # files just written from the index: it contradicts itself
            raise StoreError(
                f"index file {str(self.path)!r} is corrupt (its chunks and access partitions "
                f"disagree): {REBUILD}"
            )
        hits = [Hit(chunk, float(s)) for chunk, s in zip(chunks, scores, strict=True)]
        return hits if min_score is None else [hit for hit in hits if hit.score >= min_score]

    def keyword_search(
        self, question: str, principal: Principal, k: int, *, min_score: float = 0.0
    ) -> list[Hit]:
        """The top-k chunks `principal` is answered from by BM25 fitted on the chunks they may
        read, scoring above `min_score` (>= 0): the hits of `raglab.retrieve.bm25.BM25`, read
        from the stored postings."""
        k = check_int("k", k, minimum=1)
        self._refresh()
        # Inside a write, count what it wrote so far; outside, read one state of the file.
        with nullcontext() if self._depth else self._reading(), sqlite_errors(self.path):
            if self._depth:
                self._postings.flush()
            ids, scores = self._postings.scores(question, principal)
            keep = (scores > min_score) & ~np.isin(ids, self._hidden_chunk_ids(principal))
            ids, scores = ids[keep], scores[keep]
            if len(scores) > k:  # only the k-th best score and above can be hits (ties too)
                keep = scores >= -np.partition(-scores, k - 1)[k - 1]
                ids, scores = ids[keep], scores[keep]
            chunks = self._readable_chunks(ids, principal)
        if chunks is None:
            raise StoreError(
                f"index file {str(self.path)!r} is corrupt (its keyword postings and chunks "
                f"disagree): {REBUILD}"
            )
        found = [(float(s), chunk) for chunk, s in zip(chunks, scores, strict=True)]
        # Best first; equal scores in store order (document id, then chunk index), as BM25.
        found.sort(key=lambda hit: (-hit[0], hit[1].doc_id, hit[1].index))
        return [Hit(chunk, score) for score, chunk in found[:k]]

    def known_stems(self, principal: Principal, stems: Iterable[str]) -> frozenset[str]:
        """Those of the content `stems` that a chunk `principal` may read uses: what
        `raglab.generate.abstention.vocabulary(self.chunks(principal))` holds of them, read from
        the stored stems instead of every chunk."""
        wanted = sorted(set(stems))
        self._refresh()
        with nullcontext() if self._depth else self._reading(), sqlite_errors(self.path):
            if self._depth:
                self._stems.flush()
            return self._stems.known(wanted, list(self._postings.readable_parts(principal)))

    # -- writing

    def add(
        self, chunks: Sequence[Chunk], vectors: np.ndarray, *, documents: Iterable[DocRecord] = ()
    ) -> None:
        self._refresh()
        existing = {row[0] for row in self._run("SELECT id FROM documents")}
        dim, stored = prepare_documents(chunks, vectors, documents, self._dim, existing)
        with self.transaction(), sqlite_errors(self.path):
            if dim != self._dim:
                self._write_meta({"dim": dim})
                self._dim = dim
            ids = insert_documents(self._con, stored)
            new = [c for doc in stored for c in doc.chunks]
            parts = self._postings.part_ids([part_key(c.tenant, c.groups) for c in new])
            self._postings.add(ids, [c.indexed_text for c in new], parts)
            self._stems.add(new, parts)
            self._changed = True

    def delete_document(self, doc_id: str) -> int:
        with self.transaction(), sqlite_errors(self.path):
            rows = self._run(f"SELECT id, {READ_COLUMNS} FROM chunks WHERE doc_id = ?", (doc_id,))
            chunks = [chunk_of(row[1:]) for row in rows]
            parts = self._postings.part_ids([part_key(c.tenant, c.groups) for c in chunks])
            self._postings.remove([r[0] for r in rows], [c.indexed_text for c in chunks], parts)
            self._stems.remove(chunks, parts)
            self._run("DELETE FROM chunks WHERE doc_id = ?", (doc_id,))
            self._changed = self._changed or bool(rows)
            removed = len(rows)
            self._run("DELETE FROM documents WHERE id = ?", (doc_id,))
        return removed

    def set_meta(self, meta: Mapping[str, Any]) -> None:
        self._refresh()
        updated = checked_meta(meta, self._meta)
        dim = dim_from_meta(updated, self._dim)
        with self.transaction():
            self._write_meta({**{key: updated[key] for key in META_KEYS}, "dim": dim})
            self._meta, self._dim = updated, dim
            self._snapshot = None  # who supersedes whom may have changed

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
            self._end(commit=False)
            raise
        self._end(commit=True)

    # -- internals

    def _run(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """One statement. Every SQLite call runs inside `sqlite_errors` (here, or around a whole
        write or read), so every SQLite failure becomes one clear error naming the file."""
        with sqlite_errors(self.path):
            return self._con.execute(sql, params).fetchall()

    def _run_many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        with sqlite_errors(self.path):
            self._con.executemany(sql, rows)

    def _end(self, *, commit: bool) -> None:
        """Commit or roll back the outermost transaction, then forget what may not have landed."""
        changed = self._changed and commit
        try:
            if commit:
                self._commit(changed)
            else:
                self._roll_back()
        except BaseException:  # a COMMIT refused (busy, disk full): the file stays as it was
            self._roll_back()
            changed = False
            raise
        finally:
            self._depth = 0
            self._snapshot = None
            self._changed = False
            self._postings.discard()
            self._stems.discard()
        self._load_settings()
        if changed and self._dim:
            with self._reading():  # written now, so the first question finds them ready
                self._vectors()

    def _commit(self, changed: bool) -> None:
        with sqlite_errors(self.path):
            if changed:  # postings, stems and the vectors' generation land with the chunks
                self._postings.flush()
                self._stems.flush()
                self._write_meta({"generation": uuid4().hex})
            self._con.execute("COMMIT")

    def _roll_back(self) -> None:
        """End a failed write so that the file is as it was before it began.

        On some errors (a full disk, an I/O error) SQLite has already rolled back in memory
        and leaves its journal for the next reader to play back; one read plays it back now,
        so the journal's space is freed and no reader without write access ever meets it.
        If even that fails, the first error is the one to report: the journal stays, and
        SQLite plays it back when the file is next opened.
        """
        with suppress(sqlite3.Error):
            if self._con.in_transaction:
                self._con.execute("ROLLBACK")
            self._con.execute("SELECT 1 FROM meta LIMIT 1")

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """A read transaction: while it lasts, no other process can commit a write. Any SQLite
        error inside becomes a `StoreError`."""
        self._run("BEGIN")
        try:
            self._run("SELECT 1 FROM meta LIMIT 1")  # BEGIN is lazy: this takes the read lock
            with sqlite_errors(self.path):
                yield
        finally:
            self._run("COMMIT")

    def _write_meta(self, values: Mapping[str, Any]) -> None:
        self._run_many(
            "INSERT OR REPLACE INTO meta VALUES (?, ?)",
            [(k, json.dumps(v)) for k, v in values.items()],
        )

    def _load_settings(self) -> None:
        stored = read_meta(self._con, self.path)
        self._dim = stored.get("dim")
        self._meta = {key: stored.get(key) for key in META_KEYS}
        self._generation = stored.get("generation", "")
        self._vector_file = None
        self._data_version = self._run("PRAGMA data_version")[0][0]

    def _refresh(self) -> None:
        """Drop what is cached if another connection has written to the file since."""
        if self._depth:
            return
        if self._run("PRAGMA data_version")[0][0] != self._data_version:
            self._snapshot = None
            self._load_settings()

    def _vectors(self, *, rewrite: bool = False) -> VectorFile:
        """The vectors file of the index as it is now (call inside `_reading`); `rewrite`:
        written again from the index, whatever the files beside it hold.

        Named by the generation raglab wrote and by SQLite's change counter, which any
        commit moves, so an index changed by other software is never read stale.
        """
        if self._vector_file is None or rewrite:
            generation = f"{self._generation}-{change_counter(self.path)}"
            self._vector_file = vector_file(
                self._con, self.path, generation, self._dim or 0, rewrite=rewrite
            )
        return self._vector_file

    def _hidden_chunk_ids(self, principal: Principal) -> np.ndarray:
        """The ids of the chunks of documents hidden from `principal` (`raglab.store.versions`).

        Only the small documents table is read, and only when a document supersedes another.
        """
        superseded = self._meta["superseded"]
        hidden = sorted(hidden_from(principal, superseded, self.documents())) if superseded else []
        with sqlite_errors(self.path):
            return chunk_ids_of(self._con, hidden)

    def _readable_chunks(self, ids: np.ndarray, principal: Principal) -> list[Chunk] | None:
        """The hits' chunks as the index holds them, in the order of `ids`; None unless each
        one is there, once, and `principal` may read it (call inside a read).

        Whatever proposed the ids (the vector files beside the index, the postings), the
        last word on who reads a hit is the chunk's own tenant and groups in SQLite: a
        search can return no chunk its asker may not read. It costs k row reads.
        """
        chunks = chunks_by_id(self._con, ids)
        found = [chunks[i] for i in ids.tolist() if i in chunks]
        if len(found) == len(ids) == len(chunks) and all(can_read(principal, c) for c in found):
            return found
        return None

    def _current(self) -> Snapshot:
        self._refresh()
        if self._snapshot is None:
            self._snapshot = self._load_snapshot()
        return self._snapshot

    def _load_snapshot(self) -> Snapshot:
        """Every chunk and vector in store order, the vectors as one matrix."""
        with sqlite_errors(self.path):
            chunks, matrix = every_chunk(self._con, self.path, self._dim or 0)
        return Snapshot(chunks, matrix, self._meta["superseded"], self.documents())
