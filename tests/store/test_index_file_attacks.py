"""Attacks on an index file, run as a user would: `raglab` in subprocesses.

Racing writers, a first build killed halfway, a corrupt page, a locked file, a reader that
closes the pipe. Each must end in the index being whole (or refused with a clear message),
never in a lost index, a mixed one or a traceback.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from raglab import cli
from raglab.store import sqlite_store
from raglab.store.errors import StoreError
from raglab.store.sqlite_store import SQLiteStore

pytestmark = pytest.mark.integration  # races and attacks on the file: make test-all

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "data" / "corpus"
QUESTIONS = ROOT / "data" / "questions.jsonl"
COMMAND = [sys.executable, "-m", "raglab"]


def raglab(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run([*COMMAND, *map(str, args)], capture_output=True, text=True, timeout=300)


def doc_ids(index: Path) -> set[str]:
    with sqlite3.connect(index) as con:
        return {row[0] for row in con.execute("SELECT id FROM documents")}


def files_in(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def assert_clear_error(result: subprocess.CompletedProcess, *phrases: str) -> None:
    assert result.returncode != 0
    assert "Traceback" not in result.stderr, result.stderr
    assert result.stderr.startswith("raglab: error: index file "), result.stderr
    for phrase in phrases:
        assert phrase in result.stderr, result.stderr


# ---------------------------------------------------------------- racing writers


def test_racing_index_runs_leave_exactly_one_folders_index(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(CORPUS / "acme", a)
    shutil.copytree(CORPUS / "globex", b)
    expected = [files_in(a), files_in(b)]
    for round_ in range(6):
        index = tmp_path / f"index{round_}.sqlite"
        # Round 0-2 race on a new file; 3-5 on a file that already holds folder a.
        if round_ >= 3:
            assert raglab("index", a, "--index", index).returncode == 0
        runs = [
            subprocess.Popen(
                [*COMMAND, "index", str(folder), "--index", str(index)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for folder in (a, b)
        ]
        results = [(run.communicate(timeout=300), run.returncode) for run in runs]
        for (_, stderr), code in results:
            assert "Traceback" not in stderr, stderr
            assert code == 0 or "is being written by another process" in stderr, stderr
        assert any(code == 0 for _, code in results)
        assert index.exists(), f"round {round_}: the index was deleted"
        assert doc_ids(index) in expected, f"round {round_}: the index matches neither folder"


def test_a_second_writer_is_refused_with_a_clear_message_and_nothing_is_deleted(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(sqlite_store, "LOCK_WAIT_SECONDS", 0.1)
    path = tmp_path / "new.sqlite"
    with SQLiteStore.writing(path) as first:
        with pytest.raises(StoreError, match="is being written by another process"):
            with SQLiteStore.writing(path):
                pass
        assert path.exists()
    assert len(first) == 0 and path.exists()
    first.close()


# ------------------------------------------------------ a first build cut short

_KILLED_BUILD = """
import os, signal, subprocess, sys
from raglab.embed.embedders import HashingEmbedder
from raglab.pipeline import Index

folder, index = sys.argv[1], sys.argv[2]

class AskThenDie:
    # Asks while the first build is halfway (its lock held), then dies as kill -9 would.
    base = HashingEmbedder()
    name, dim, version = base.name, base.dim, base.version

    def embed(self, texts):
        self.base.embed(texts)
        ask = subprocess.run([sys.executable, "-m", "raglab", "ask", "refunds?", "--index", index],
                             capture_output=True, text=True)
        print(ask.returncode, ask.stderr, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

Index.from_folder(folder, embedder=AskThenDie(), path=index)
"""


def test_a_first_build_killed_halfway_is_refused_as_incomplete_then_rebuilt(tmp_path):
    index = tmp_path / "index.sqlite"
    build = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_KILLED_BUILD), CORPUS, index],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == -9, build.stderr
    code, during = build.stdout.split(" ", 1)
    assert int(code) != 0 and "Traceback" not in during, during
    assert "incomplete" in during and "run raglab index again" in during, during
    assert index.exists()

    after = raglab("ask", "How long do refunds take?", "--index", index)
    assert_clear_error(after, "is incomplete", "run raglab index again")

    again = raglab("index", CORPUS, "--index", index, "--json")
    assert again.returncode == 0, again.stderr
    assert doc_ids(index) == files_in(CORPUS)
    assert raglab("ask", "How long do refunds take?", "--index", index).returncode == 0


def test_a_failed_first_build_leaves_no_half_index(tmp_path):
    from raglab.embed.embedders import HashingEmbedder
    from raglab.pipeline import Index

    class Failing:
        name, dim, version = "hashing", 384, HashingEmbedder().version

        def embed(self, texts):
            raise OSError("the embedder's disk went away")

    index = tmp_path / "index.sqlite"
    with pytest.raises(OSError, match="disk went away"):
        Index.from_folder(CORPUS, embedder=Failing(), path=index)
    with pytest.raises(StoreError, match="is incomplete .*run raglab index again"):
        Index.open(index)


def test_an_index_that_records_no_embedder_is_refused_as_incomplete(tmp_path):
    # What a first build killed halfway left behind before builds became one transaction.
    index = tmp_path / "index.sqlite"
    SQLiteStore.create(index).close()
    result = raglab("ask", "q", "--index", index)
    assert_clear_error(result, "is incomplete", "run raglab index again")


# ------------------------------------------------------------ a corrupt page


def test_a_corrupt_page_is_reported_by_ask_and_index_with_how_to_rebuild(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(400):
        (folder / f"d{i:03}.md").write_text(f"# Doc {i}\n\nRefunds take {i} days. " + "word " * 60)
    index = tmp_path / "index.sqlite"
    assert raglab("index", folder, "--index", index).returncode == 0
    data = bytearray(index.read_bytes())
    page = 4096 * (len(data) // 4096 // 2)  # a page in the middle: chunk rows, not the schema
    data[page : page + 4096] = b"\xa5" * 4096
    index.write_bytes(bytes(data))

    for args in (
        ["ask", "How long do refunds take?", "--index", index],
        ["index", folder, "--index", index],
    ):
        result = raglab(*args)
        assert_clear_error(result, "is corrupt", "delete it and run raglab index again")
        assert result.stdout == ""
    assert index.read_bytes() == bytes(data)  # refused, not written to


# ------------------------------------------------------------ a locked file


def test_a_file_locked_past_the_wait_gives_a_clear_message(tmp_path, monkeypatch, capsys):
    index = tmp_path / "index.sqlite"
    assert raglab("index", CORPUS / "shared", "--index", index).returncode == 0
    monkeypatch.setattr(sqlite_store, "LOCK_WAIT_SECONDS", 0.1)
    holder = sqlite3.connect(index, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process in the middle of a commit
    try:
        for argv in (
            ["ask", "q", "--index", str(index)],
            ["index", str(CORPUS / "shared"), "--index", str(index)],
        ):
            assert cli.main(argv) == 1
            err = capsys.readouterr().err
            assert err.startswith("raglab: error: index file ")
            assert "is being written by another process" in err and "try again" in err
    finally:
        holder.execute("ROLLBACK")
        holder.close()


# ------------------------------------------------------------ a closed pipe


@pytest.mark.parametrize(
    "args",
    [
        ["ask", "What does error E-204 mean?", "--docs", CORPUS, "--json"],
        ["eval", "--docs", CORPUS, "--questions", QUESTIONS, "--retriever", "bm25"],
    ],
    ids=["ask-json", "eval"],
)
def test_a_reader_closing_the_pipe_ends_raglab_quietly(args):
    # As `raglab ... | head -c 10`: the reader is gone before raglab writes its first byte.
    run = subprocess.Popen(
        [*COMMAND, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    run.stdout.close()
    stderr = run.stderr.read().decode()
    assert run.wait(timeout=300) in (0, 141)
    assert stderr == ""
