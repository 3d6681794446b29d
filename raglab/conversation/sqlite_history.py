"""The history as the `turns` table of the SQLite index file (`raglab.store.sqlite_schema`).

The same file as the documents, a separate table: a conversation travels with its index
and never mixes with the chunks (no turn is ever a row a document search can score).
Every statement names the owner in its WHERE clause, so SQLite hands back no other
user's row to be filtered later. Forgetting is for real: `PRAGMA secure_delete` makes
SQLite overwrite a deleted row's bytes (text and vector) with zeros, so the file keeps
no trace of it (`tests/conversation/test_history.py` reads the bytes to check).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

import numpy as np

from raglab.conversation.history import groups_key, ranked, summaries
from raglab.conversation.turns import ConversationSummary, Turn, TurnHit
from raglab.records import Principal
from raglab.store.errors import StoreError
from raglab.store.sqlite_schema import check_schema, connect, read_meta, sqlite_errors
from raglab.store.sqlite_vectors import carry_over, change_counter
from raglab.validation import check_int

_TURN = "conversation, n, question, standalone, answer, cited, items, time"
_OWNER = "tenant = ? AND user = ?"


class SQLiteHistory:
    """The turns of an index file. Open it with `SQLiteHistory.open(path)`."""

    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        self.path = path
        self._con = connection

    @classmethod
    def open(cls, path: str | Path) -> SQLiteHistory:
        """The history of the index file at `path` (made by `raglab index`)."""
        path = Path(path)
        if not path.exists():
            raise StoreError(f"index file {str(path)!r} does not exist")
        con = connect(path, mode="rw")
        try:
            check_schema(con, path)
            con.execute("PRAGMA secure_delete = ON")  # a deleted turn's bytes are zeroed
        except BaseException:
            con.close()
            raise
        return cls(con, path)

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """One transaction; the documents' vector files are carried over to the file's new
        change counter, since a turn changes no chunk (`sqlite_vectors.carry_over`)."""
        with sqlite_errors(self.path):
            self._con.execute("BEGIN IMMEDIATE")
            generation = read_meta(self._con, self.path).get("generation", "")
            before = change_counter(self.path)
            try:
                yield
            except BaseException:
                self._con.execute("ROLLBACK")
                raise
            self._con.execute("COMMIT")
        carry_over(self.path, generation, before, change_counter(self.path))

    def _read(self, sql: str, *params: Any) -> list[Any]:
        with sqlite_errors(self.path):
            return self._con.execute(sql, params).fetchall()

    def add(self, owner: Principal, turn: Turn, vector: np.ndarray) -> None:
        row = (
            owner.tenant, owner.user, groups_key(owner), turn.conversation, turn.n,
            turn.question, turn.standalone, turn.answer, json.dumps(list(turn.cited)),
            json.dumps(list(turn.items)), turn.time,
            np.asarray(vector, dtype="<f4").tobytes(),
        )  # fmt: skip
        with self._writing():
            self._con.execute(
                f"INSERT INTO turns (tenant, user, groups, {_TURN}, vector) "
                f"VALUES ({', '.join('?' * len(row))})",
                row,
            )

    def search(
        self, owner: Principal, query: np.ndarray, k: int, *, conversation: str | None = None
    ) -> list[TurnHit]:
        check_int("k", k, minimum=1)
        sql = f"SELECT {_TURN}, vector FROM turns WHERE {_OWNER} AND groups = ?"
        params: list[Any] = [owner.tenant, owner.user, groups_key(owner)]
        if conversation is not None:
            sql += " AND conversation = ?"
            params.append(conversation)
        rows = self._read(sql + " ORDER BY id", *params)
        vectors = [np.frombuffer(row[-1], dtype="<f4").astype(np.float32) for row in rows]
        return ranked([_turn(row) for row in rows], vectors, query, k)

    def turns(self, owner: Principal, conversation: str) -> list[Turn]:
        rows = self._read(
            f"SELECT {_TURN} FROM turns WHERE {_OWNER} AND conversation = ? ORDER BY n",
            owner.tenant, owner.user, conversation,
        )  # fmt: skip
        return [_turn(row) for row in rows]

    def conversations(self, owner: Principal) -> list[ConversationSummary]:
        rows = self._read(f"SELECT {_TURN} FROM turns WHERE {_OWNER}", owner.tenant, owner.user)
        return summaries([_turn(row) for row in rows])

    def forget(self, owner: Principal, conversation: str | None = None) -> int:
        sql, params = f"DELETE FROM turns WHERE {_OWNER}", [owner.tenant, owner.user]
        if conversation is not None:
            sql += " AND conversation = ?"
            params.append(conversation)
        with self._writing():
            deleted: int = self._con.execute(sql, params).rowcount
        return deleted


def _turn(row: tuple[Any, ...]) -> Turn:
    conversation, n, question, standalone, answer, cited, items, time = row[:8]
    return Turn(
        conversation, n, question, standalone, answer,
        tuple(json.loads(cited)), tuple(json.loads(items)), time,
    )  # fmt: skip
