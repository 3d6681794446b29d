"""The SQLite index's vector files beside it: written whole or not at all, only raglab's own
files ever deleted, and a full disk an error the store survives (issue: derived files)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from raglab.records import Principal
from raglab.store import sqlite_vectors
from raglab.store.access import can_read
from raglab.store.memory import MemoryStore
from raglab.store.sqlite_store import SQLiteStore
from tests.store.test_sqlite_postings import assert_same_searches, random_chunks, vectors_for


def build(tmp_path, seed=3, n=12):
    rng = np.random.default_rng(seed)
    chunks = random_chunks(rng, n)
    memory = MemoryStore()
    memory.add(chunks, vectors := vectors_for(chunks, rng))
    with SQLiteStore.writing(tmp_path / "i.db") as store:
        store.add(chunks, vectors)
    return chunks, memory, rng


def test_a_users_own_files_beside_the_index_survive_every_write(tmp_path):
    mine = ["i.db.backup.old.npy", "i.db.2024.final.npy", "i.db.notes.rows.npy"]
    for name in mine:
        (tmp_path / name).write_bytes(b"the user's own data")
    chunks, memory, rng = build(tmp_path)
    with SQLiteStore.writing(tmp_path / "i.db") as store:  # a new generation: old files go
        store.delete_document(chunks[0].doc_id)
    memory.delete_document(chunks[0].doc_id)
    assert_same_searches(SQLiteStore.open(tmp_path / "i.db"), memory, rng)
    for name in mine:
        assert (tmp_path / name).read_bytes() == b"the user's own data"
    ours = [p for p in tmp_path.glob("i.db.*.npy") if p.name not in mine]
    assert len(ours) == 2  # only the current generation's vectors and rows


def test_both_files_are_renamed_into_place_never_written_under_their_final_name(
    tmp_path, monkeypatch
):
    renamed = []
    real_replace = sqlite_vectors.os.replace

    def replace(source, target):
        renamed.append(str(target))
        real_replace(source, target)

    monkeypatch.setattr(sqlite_vectors.os, "replace", replace)
    build(tmp_path)
    assert any(t.endswith(".rows.npy") for t in renamed)
    assert any(t.endswith(".vectors.npy") for t in renamed)
    assert not list(tmp_path.glob(".i.db.*"))  # no temporary file left behind


def test_no_room_for_the_vector_file_is_no_failure_the_rows_are_read_into_memory(
    tmp_path, monkeypatch
):
    _, memory, rng = build(tmp_path)
    for path in tmp_path.glob("i.db.*.npy"):
        path.unlink()  # as after a copy of the index file alone

    class Full:
        free = 0

    monkeypatch.setattr(sqlite_vectors.shutil, "disk_usage", lambda folder: Full)
    assert_same_searches(SQLiteStore.open(tmp_path / "i.db"), memory, rng)
    assert not list(tmp_path.glob("*.npy")) and not list(tmp_path.glob(".i.db.*"))


# -- the files never decide who reads what (issue: derived files)

ACME, GLOBEX = Principal("u", "acme"), Principal("u", "globex")
PRINCIPALS = [ACME, GLOBEX, Principal("u", "acme", {"hr"}), Principal("u", "globex", {"eng"})]


def rows_file(folder: Path) -> Path:
    (path,) = folder.glob("i.db.*.rows.npy")
    return path


def parts_of(folder: Path) -> dict[tuple[str, str], int]:
    with sqlite3.connect(folder / "i.db") as con:
        return {(t, g): part for part, t, g in con.execute("SELECT id, tenant, groups FROM parts")}


def assert_only_what_each_may_read(folder: Path, memory: MemoryStore):
    """Each chunk's own vector as the question, for every principal: the hits are the
    in-memory store's, so none is a chunk the asker may not read."""
    store = SQLiteStore.open(folder / "i.db")
    for principal in PRINCIPALS:
        for query in memory.vectors():
            hits = store.search(query, principal, 4)
            assert all(can_read(principal, hit.chunk) for hit in hits), principal
            assert hits == memory.search(query, principal, 4)
    store.close()


def one_row_each(rows: np.ndarray, folder: Path) -> tuple[int, int]:
    """A row of tenant acme's public partition and one of tenant globex's."""
    parts = parts_of(folder)
    public, other = parts["acme", "[]"], parts["globex", "[]"]
    return int(np.flatnonzero(rows[:, 1] == public)[0]), int(np.flatnonzero(rows[:, 1] == other)[0])


def every_row_made_public(rows: np.ndarray, folder: Path) -> None:
    rows[:, 1] = parts_of(folder)["acme", "[]"]


def two_rows_swap_partitions(rows: np.ndarray, folder: Path) -> None:
    """Every partition keeps its row count: only a check of each hit can tell."""
    a, b = one_row_each(rows, folder)
    rows[[a, b], 1] = rows[[b, a], 1]


def two_rows_swap_chunk_ids(rows: np.ndarray, folder: Path) -> None:
    a, b = one_row_each(rows, folder)
    rows[[a, b], 0] = rows[[b, a], 0]


def a_row_repeats_a_chunk(rows: np.ndarray, folder: Path) -> None:
    rows[1:, 0] = rows[0, 0]


def a_row_names_no_chunk(rows: np.ndarray, folder: Path) -> None:
    rows[:, 0] += 10_000


@pytest.mark.parametrize(
    "tamper",
    [
        every_row_made_public,
        two_rows_swap_partitions,
        two_rows_swap_chunk_ids,
        a_row_repeats_a_chunk,
        a_row_names_no_chunk,
    ],
)
def test_an_edited_rows_file_never_hands_out_a_chunk_the_asker_may_not_read(tmp_path, tamper):
    _, memory, _ = build(tmp_path, seed=5, n=30)
    path = rows_file(tmp_path)
    rows = np.load(path)
    tamper(rows, tmp_path)
    np.save(path, rows)
    assert_only_what_each_may_read(tmp_path, memory)
    assert np.load(rows_file(tmp_path)).tolist() != rows.tolist()  # written again, from SQLite


def test_a_rows_file_edited_while_mapped_is_caught_by_the_check_of_each_hit(tmp_path):
    _, memory, _ = build(tmp_path, seed=5, n=30)
    store = SQLiteStore.open(tmp_path / "i.db")
    store.search(memory.vectors()[0], ACME, 1)  # the files are mapped and found to fit
    mapped = np.load(rows_file(tmp_path), mmap_mode="r+")
    two_rows_swap_partitions(mapped, tmp_path)  # edited in place: the store's map sees it
    mapped.flush()
    for query in memory.vectors():
        assert store.search(query, ACME, 3) == memory.search(query, ACME, 3)
    store.close()


def test_another_indexs_vector_files_swapped_in_are_not_used(tmp_path):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    ours.mkdir(), theirs.mkdir()
    _, memory, _ = build(ours, seed=5, n=30)
    build(theirs, seed=6, n=30)
    for kind in ("rows", "vectors"):
        (target,) = ours.glob(f"i.db.*.{kind}.npy")
        (source,) = theirs.glob(f"i.db.*.{kind}.npy")
        shutil.copyfile(source, target)
    assert_only_what_each_may_read(ours, memory)


@pytest.mark.parametrize("content", [b"", b"not a numpy file", b"\x93NUMPY\x01\x00"])
def test_a_vector_file_that_is_no_npy_file_is_written_again(tmp_path, content):
    _, memory, _ = build(tmp_path, seed=5, n=30)
    rows_file(tmp_path).write_bytes(content)
    assert_only_what_each_may_read(tmp_path, memory)


def test_files_that_fit_the_index_are_used_as_they_are(tmp_path):
    _, memory, _ = build(tmp_path, seed=5, n=30)
    before = {p.name: p.stat().st_ino for p in tmp_path.glob("i.db.*.npy")}
    assert_only_what_each_may_read(tmp_path, memory)
    assert {p.name: p.stat().st_ino for p in tmp_path.glob("i.db.*.npy")} == before
