"""Every history store through the same tests: one owner's turns, nobody else's."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from raglab.conversation.history import MemoryHistory
from raglab.conversation.sqlite_history import SQLiteHistory
from raglab.conversation.turns import Turn
from raglab.records import Principal
from raglab.store.sqlite_store import SQLiteStore

ALICE = Principal("alice", "acme")
STRANGERS = [
    Principal("bob", "acme"),  # same tenant
    Principal("alice", "globex"),  # the same name in another tenant
]
SECRET = "kestrelwing"


def unit(*values: float) -> np.ndarray:
    vector = np.array(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def make_turn(conversation: str, n: int, text: str) -> Turn:
    return Turn(conversation, n, text, text, f"answer to {text}", ("a.md",), ("x",), f"t{n}")


@pytest.fixture(params=["memory", "sqlite", "qdrant"])
def history(request, tmp_path):
    if request.param == "memory":
        yield MemoryHistory()
        return
    if request.param == "qdrant":
        pytest.importorskip("qdrant_client")
        from raglab.conversation.qdrant_history import QdrantHistory
        from raglab.store.qdrant_store import QdrantStore

        store = QdrantStore.create(tmp_path / "index.qdrant", dim=2)
        yield QdrantHistory.of(store)
        store.close()
        return
    SQLiteStore.create(tmp_path / "index.sqlite", dim=2).close()
    with SQLiteHistory.open(tmp_path / "index.sqlite") as opened:
        yield opened


def fill(history) -> None:
    history.add(ALICE, make_turn("1", 1, f"{SECRET} one"), unit(1, 0))
    history.add(ALICE, make_turn("1", 2, "two"), unit(1, 1))
    history.add(ALICE, make_turn("2", 1, "three"), unit(0, 1))


def test_the_owner_finds_their_turns_best_first(history):
    fill(history)
    hits = history.search(ALICE, unit(1, 0), 2)
    assert [(h.turn.conversation, h.turn.n) for h in hits] == [("1", 1), ("1", 2)]
    assert hits[0].score == pytest.approx(1.0)
    assert history.turns(ALICE, "1") == [
        make_turn("1", 1, f"{SECRET} one"),
        make_turn("1", 2, "two"),
    ]
    only_2 = history.search(ALICE, unit(1, 0), 5, conversation="2")
    assert [h.turn.question for h in only_2] == ["three"]


@pytest.mark.parametrize("stranger", STRANGERS, ids=["same tenant", "other tenant"])
def test_nobody_else_finds_lists_reads_or_forgets_them(history, stranger):
    fill(history)
    assert history.search(stranger, unit(1, 0), 10) == []
    assert history.conversations(stranger) == []
    assert history.turns(stranger, "1") == []
    assert history.forget(stranger) == 0
    assert len(history.search(ALICE, unit(1, 0), 10)) == 3


def test_the_owner_with_other_groups_lists_but_does_not_find_them(history):
    fill(history)
    regrouped = Principal("alice", "acme", {"board"})
    assert history.search(regrouped, unit(1, 0), 10) == []
    assert [c.conversation for c in history.conversations(regrouped)] == ["1", "2"]


def test_conversations_are_listed_oldest_first(history):
    fill(history)
    listed = history.conversations(ALICE)
    assert [(c.conversation, c.turns, c.first_question) for c in listed] == [
        ("1", 2, f"{SECRET} one"),
        ("2", 1, "three"),
    ]


def test_forget_one_conversation_then_everything(history):
    fill(history)
    assert history.forget(ALICE, "1") == 2
    assert [c.conversation for c in history.conversations(ALICE)] == ["2"]
    assert history.forget(ALICE) == 1
    assert history.conversations(ALICE) == [] and history.search(ALICE, unit(1, 0), 5) == []


def test_k_must_be_positive(history):
    with pytest.raises(ValueError, match=r"k must be an integer >= 1 \(got k=0\)"):
        history.search(ALICE, unit(1, 0), 0)


def test_forgetting_leaves_no_bytes_in_the_index_file(tmp_path):
    path = tmp_path / "index.sqlite"
    SQLiteStore.create(path, dim=2).close()
    with SQLiteHistory.open(path) as history:
        fill(history)
        assert SECRET.encode() in path.read_bytes()
        assert history._con.execute("PRAGMA secure_delete").fetchone() == (1,)
        history.forget(ALICE)
    with sqlite3.connect(path) as con:
        assert con.execute("SELECT COUNT(*) FROM turns").fetchone() == (0,)
    leftovers = [p.name for p in tmp_path.iterdir() if SECRET.encode() in p.read_bytes()]
    assert leftovers == []


def test_every_history_query_names_the_owner_in_sql(tmp_path):
    """Isolation by construction: SQLite itself returns no other owner's row."""
    path = tmp_path / "index.sqlite"
    SQLiteStore.create(path, dim=2).close()
    with SQLiteHistory.open(path) as history:
        fill(history)
        statements: list[str] = []
        history._con.set_trace_callback(statements.append)
        history.search(ALICE, unit(1, 0), 3)
        history.turns(ALICE, "1")
        history.conversations(ALICE)
        history.forget(ALICE, "2")
    reads = [s for s in statements if "turns" in s]
    assert len(reads) == 4
    assert all("tenant = 'acme' AND user = 'alice'" in s for s in reads)


def test_a_turn_does_not_make_the_next_search_write_every_vector_again(tmp_path):
    # A turn moves the index file's change counter; the documents' vector files beside it are
    # carried over to the new counter (renamed), not written again from SQLite.
    from raglab.pipeline import Index
    from raglab.samples import sample_corpus

    path = tmp_path / "index.sqlite"
    Index.from_folder(sample_corpus(), path=path).store.close()
    index = Index.open(path)
    ann = Principal("ann", "acme")
    before = index.search("vacation days", ann, k=3)
    [vectors] = tmp_path.glob("index.sqlite.*.vectors.npy")
    written = vectors.stat().st_ino
    with SQLiteHistory.open(path) as history:
        history.add(ann, make_turn("1", 1, "vacation days"), np.zeros(256, np.float32))
    index.store.close()
    again = Index.open(path)
    assert again.search("vacation days", ann, k=3) == before
    [carried] = tmp_path.glob("index.sqlite.*.vectors.npy")
    assert (
        carried.name != vectors.name and carried.stat().st_ino == written
    )  # renamed, not rewritten
    again.store.close()
