"""The SQLite index's vector files beside it: written whole or not at all, only raglab's own
files ever deleted, and a full disk an error the store survives (issue: derived files)."""

from __future__ import annotations

import numpy as np

from raglab.store import sqlite_vectors
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
