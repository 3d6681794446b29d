"""What the SQLite store says when the file cannot be written: every failure one line naming
the file and the reason, and an index that could not be changed left as it was
(issue: derived files; read-only files, a full disk).

Root ignores file modes, so a read-only file is a connection opened `mode=ro`, and a full
disk is SQLite's own `max_page_count` (the file may grow no further: SQLite reports
SQLITE_FULL, exactly as on a full disk); tests/store/test_index_file_attacks.py and
scripts/attacks/derived_files.py do both for real.
"""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from raglab import cli
from raglab.records import Principal
from raglab.store import sqlite_store
from raglab.store.errors import StoreError
from raglab.store.memory import MemoryStore
from raglab.store.sqlite_schema import connect
from raglab.store.sqlite_store import SQLiteStore
from tests.store.test_sqlite_postings import assert_same_searches, random_chunks, vectors_for
from tests.store.test_sqlite_vectors import build

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "data" / "corpus"
QUESTION = ["ask", "How many vacation days do I get?", "--tenant", "acme", "--json"]


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGLAB_CACHE_DIR", str(tmp_path / "cache"))


def one_line_error(capsys, index: Path) -> str:
    err = capsys.readouterr().err
    assert err.startswith(f"raglab: error: index file {str(index)!r} "), err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def corpus_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    shutil.copytree(CORPUS, folder)
    return folder


def changed(folder: Path) -> None:
    """A removed document (the path that once ran SQL outside the error wrapper), an edited
    one and a new one: an update touches every kind of write."""
    (folder / "acme" / "benefits.md").unlink()
    with (folder / "acme" / "onboarding.md").open("a") as file:
        file.write("\nNew hires meet the team on day two.\n")
    (folder / "new.md").write_text("# Parking\n\nThe car park opens at seven.\n")


def answer(capsys, index: Path) -> str:
    capsys.readouterr()
    assert cli.main([*QUESTION, "--index", str(index)]) == 0
    return capsys.readouterr().out


# ------------------------------------------------------------------- read-only


def read_only(monkeypatch) -> None:
    """Every index file opened from now on is opened as SQLite opens a read-only file."""
    monkeypatch.setattr(sqlite_store, "connect", lambda path, mode: connect(path, mode="ro"))


def test_raglab_index_into_a_read_only_index_says_it_cannot_write_it(tmp_path, monkeypatch, capsys):
    folder, index = corpus_copy(tmp_path), tmp_path / "i.sqlite"
    assert cli.main(["index", str(folder), "--index", str(index)]) == 0
    before = answer(capsys, index)
    changed(folder)
    read_only(monkeypatch)
    assert cli.main(["index", str(folder), "--index", str(index)]) == 1
    err = one_line_error(capsys, index)
    assert "cannot be written: it is read-only" in err
    assert answer(capsys, index) == before  # reading a read-only index just works


class Statements:
    """Counts the statements of every connection; the `fail_at`-th fails as on a read-only
    file (0: none does)."""

    def __init__(self, fail_at: int = 0) -> None:
        self.count, self.fail_at = 0, fail_at

    def next(self) -> None:
        self.count += 1
        if self.count == self.fail_at:
            error = sqlite3.OperationalError("attempt to write a readonly database")
            error.sqlite_errorname = "SQLITE_READONLY"
            raise error


class CountedConnection:
    def __init__(self, con: sqlite3.Connection, statements: Statements) -> None:
        self._con, self._statements = con, statements

    def execute(self, *args):
        self._statements.next()
        return self._con.execute(*args)

    def executemany(self, *args):
        self._statements.next()
        return self._con.executemany(*args)

    def __getattr__(self, name):
        return getattr(self._con, name)


def counted(monkeypatch, statements: Statements) -> None:
    monkeypatch.setattr(
        sqlite_store,
        "connect",
        lambda path, mode: CountedConnection(connect(path, mode=mode), statements),
    )


def every_use(path: Path) -> None:
    """Every way the store reaches SQLite: writes of each kind, then each kind of read."""
    rng = np.random.default_rng(0)
    chunks = random_chunks(rng, 12)
    with SQLiteStore.writing(path) as store:
        store.add(chunks, vectors_for(chunks, rng))
        store.delete_document(chunks[0].doc_id)
        store.set_meta({"superseded": {chunks[-1].doc_id: [chunks[1].doc_id]}})
        store.search(np.ones(8, np.float32), Principal("u", "acme"), 3)  # inside the write
        store.keyword_search("refund policy", Principal("u", "acme"), 3)
    with SQLiteStore.open(path) as store:
        principal = Principal("u", "acme", {"hr"})
        store.search(np.ones(8, np.float32), principal, 3)
        store.keyword_search("refund policy", principal, 3)
        store.known_stems(principal, ["refund", "polici"])
        store.chunks(principal), store.documents(), len(store), store.meta


def test_every_sql_statement_failing_is_one_clear_error(tmp_path, monkeypatch):
    statements = Statements()
    counted(monkeypatch, statements)
    every_use(tmp_path / "count.sqlite")
    assert statements.count > 50
    for fail_at in range(1, statements.count + 1):
        path = tmp_path / f"{fail_at}.sqlite"
        counted(monkeypatch, Statements(fail_at))
        with pytest.raises(StoreError) as raised:  # anything else fails the test
            every_use(path)
        assert str(raised.value).startswith(f"index file {str(path)!r} cannot be written: ")


# ------------------------------------------------------------------- a full disk


def grown(folder: Path) -> None:
    """An update that needs hundreds of new pages: 40 documents of 600 words each."""
    changed(folder)
    for i in range(40):
        words = " ".join(f"word{i}x{j}" for j in range(600))
        (folder / f"bulk{i:02}.md").write_text(f"# Bulk {i}\n\n{words}\n")


def room_for(monkeypatch, pages: int) -> None:
    """Every index file opened from now on may grow by `pages` pages, no more: SQLite then
    fails as on a full disk (SQLITE_FULL, "database or disk is full")."""

    def connecting(path, mode):
        con = connect(path, mode=mode)
        current = con.execute("PRAGMA page_count").fetchone()[0]
        con.execute(f"PRAGMA max_page_count = {current + pages}")
        return con

    monkeypatch.setattr(sqlite_store, "connect", connecting)


def index_files(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.glob("i.sqlite*"))}


# The disk fills at different points of this update (it needs about 740 pages): while its
# rows are inserted (0), while the postings (450) and the stems (690) are merged before the
# commit. The commit itself: the next test.
@pytest.mark.parametrize("pages", [0, 450, 690])
def test_a_full_disk_during_an_update_says_so_and_leaves_the_index_as_it_was(
    tmp_path, monkeypatch, capsys, pages
):
    folder, index = corpus_copy(tmp_path), tmp_path / "i.sqlite"
    assert cli.main(["index", str(folder), "--index", str(index)]) == 0
    before, files = answer(capsys, index), index_files(tmp_path)
    grown(folder)
    room_for(monkeypatch, pages)
    assert cli.main(["index", str(folder), "--index", str(index)]) == 1
    err = one_line_error(capsys, index)
    assert "was not changed: no space left on its device (database or disk is full" in err
    assert f"free in {str(tmp_path)!r}" in err and "Free space there" in err
    assert "corrupt" not in err and "delete" not in err
    assert index_files(tmp_path) == files  # no journal left behind, the vector files kept
    monkeypatch.setattr(sqlite_store, "connect", connect)
    assert answer(capsys, index) == before


class RefusedCommit(CountedConnection):
    """The first COMMIT of a write fails for want of space."""

    writing = False

    def execute(self, sql, *args):
        self.writing = self.writing or sql == "BEGIN IMMEDIATE"
        if sql == "COMMIT" and self.writing:
            error = sqlite3.OperationalError("database or disk is full")
            error.sqlite_errorname = "SQLITE_FULL"
            raise error
        return self._con.execute(sql, *args)


def test_a_commit_refused_for_want_of_space_leaves_the_index_as_it_was(tmp_path, monkeypatch):
    rng = np.random.default_rng(1)
    chunks = random_chunks(rng, 20)
    memory = MemoryStore()
    memory.add(chunks, vectors := vectors_for(chunks, rng))
    path = tmp_path / "i.sqlite"
    with SQLiteStore.writing(path) as store:
        store.add(chunks, vectors)
    files = index_files(tmp_path)
    monkeypatch.setattr(
        sqlite_store, "connect", lambda p, mode: RefusedCommit(connect(p, mode=mode), Statements())
    )
    with pytest.raises(StoreError, match="was not changed: no space left on its device"):
        with SQLiteStore.writing(path) as store:
            store.delete_document(chunks[0].doc_id)
    assert index_files(tmp_path) == files
    monkeypatch.setattr(sqlite_store, "connect", connect)
    assert_same_searches(SQLiteStore.open(path), memory, rng)


def no_space(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


# The update itself has landed when the vector files are written: a full disk then costs
# speed (the rows are read into memory), never the update nor a right answer.
@pytest.mark.parametrize(
    "where", [(np.lib.format, "open_memmap"), (np, "save"), (os, "fsync"), (os, "replace")]
)
def test_a_full_disk_while_the_vector_files_are_written_loses_nothing(tmp_path, monkeypatch, where):
    chunks, memory, rng = build(tmp_path)
    monkeypatch.setattr(*where, no_space)
    with SQLiteStore.writing(tmp_path / "i.db") as store:
        store.delete_document(chunks[0].doc_id)
    memory.delete_document(chunks[0].doc_id)
    assert_same_searches(SQLiteStore.open(tmp_path / "i.db"), memory, rng)
    assert not list(tmp_path.glob(".i.db.*"))  # no temporary file left behind
