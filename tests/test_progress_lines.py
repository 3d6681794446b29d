"""Progress of long work (raglab.progress): redrawn on a terminal, silent on a pipe or --quiet,
and the counts the engine reports are right (every batch of embedding, every question)."""

from __future__ import annotations

import io
import sys

import pytest

from raglab.cli import main
from raglab.embed.embedders import HashingEmbedder
from raglab.embed.embedding_cache import cached
from raglab.evaluation.runner import evaluate, load_questions
from raglab.ingest.chunking import Chunker
from raglab.pipeline import Index
from raglab.progress import Progress, TerminalProgress
from raglab.records import Document
from raglab.store.indexing import PROGRESS_BATCH, sync
from raglab.store.memory import MemoryStore
from tests.conftest import CORPUS, QUESTIONS


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def documents(n: int) -> list[Document]:
    return [
        Document(id=f"d{i:04}.md", text=f"Document number {i} is about topic {i}.")
        for i in range(n)
    ]


def heard(events: list[Progress]):
    return events.append


def test_a_terminal_gets_one_line_redrawn_and_kept_when_done():
    terminal = Terminal()
    report = TerminalProgress(terminal, every=0.0, clock=iter(range(10)).__next__)
    for done in (0, 5, 10):
        report(Progress("embedding", done, 10, "chunks"))
    lines = terminal.getvalue()
    assert lines.count("\r") == 3 and lines.endswith("\n") and lines.count("\n") == 1
    assert lines.split("\r")[-1].startswith("embedding 10/10 chunks, 5.0/s, done in 0:02")


def test_redraws_are_spaced_but_the_last_always_shows():
    terminal = Terminal()
    report = TerminalProgress(terminal, every=1.0, clock=iter([0.0, 0.1, 0.2, 0.3]).__next__)
    for done in (1, 2, 3, 4):
        report(Progress("evaluating", done, 4, "questions"))
    assert terminal.getvalue().count("\r") == 2  # the first, and the finished one


def test_a_pipe_gets_nothing():
    piped = io.StringIO()
    report = TerminalProgress(piped, every=0.0)
    for done in range(5):
        report(Progress("embedding", done, 4, "chunks"))
    assert piped.getvalue() == ""


def test_sync_reports_every_batch_of_embedding(tmp_path):
    events: list[Progress] = []
    n = 2 * PROGRESS_BATCH + 10
    sync(
        MemoryStore(),
        documents(n),
        chunker=Chunker(),
        embedder=HashingEmbedder(),
        progress=heard(events),
    )
    assert [e.done for e in events] == [0, PROGRESS_BATCH, 2 * PROGRESS_BATCH, n]
    assert {(e.total, e.unit, e.cached) for e in events} == {(n, "chunks", 0)}


def test_the_cached_count_says_how_many_vectors_were_not_embedded(tmp_path):
    cache = tmp_path / "cache"
    sync(MemoryStore(), documents(30), chunker=Chunker(), embedder=cached(HashingEmbedder(), cache))
    events: list[Progress] = []
    sync(
        MemoryStore(),
        documents(50),  # 30 known to the cache, 20 new
        chunker=Chunker(),
        embedder=cached(HashingEmbedder(), cache),
        progress=heard(events),
    )
    assert (events[-1].done, events[-1].total, events[-1].cached) == (50, 50, 30)


def test_an_update_counts_the_vectors_the_index_already_held(tmp_path):
    store = MemoryStore()
    sync(store, documents(10), chunker=Chunker(), embedder=HashingEmbedder())
    events: list[Progress] = []
    sync(
        store,
        documents(10),
        chunker=Chunker(size=500),
        embedder=HashingEmbedder(),
        progress=heard(events),
    )
    assert (events[-1].done, events[-1].cached) == (10, 10)  # re-chunked, same text: reused


def test_evaluate_reports_each_question():
    index = Index.from_folder(CORPUS)
    questions = load_questions(QUESTIONS)[:7]
    events: list[Progress] = []
    evaluate(
        questions,
        search=lambda q, depth: index.search(q.question, q.asker, k=depth),
        progress=heard(events),
    )
    assert [(e.done, e.total) for e in events] == [(i, 7) for i in range(1, 8)]


@pytest.mark.parametrize("quiet", [False, True])
def test_the_command_draws_on_a_terminal_unless_quiet(tmp_path, monkeypatch, capsys, quiet):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    args = ["index", str(CORPUS), "--index", str(tmp_path / "i.sqlite")]
    assert main(args + ["--quiet"] * quiet) == 0
    drawn = terminal.getvalue()
    if quiet:
        assert drawn == ""
    else:
        assert "\rembedding" in drawn and drawn.rstrip().split("\r")[-1].startswith("embedding ")
    assert "\r" not in capsys.readouterr().out  # the result on stdout stays clean


def test_the_command_draws_nothing_on_a_pipe(tmp_path, capsys):
    assert (
        main(["eval", "--docs", str(CORPUS), "--questions", str(QUESTIONS), "--retrieval-only"])
        == 0
    )
    assert "\r" not in capsys.readouterr().err


def test_no_cache_writes_no_cache_file(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGLAB_CACHE_DIR", str(tmp_path / "cache"))
    main(["index", str(CORPUS), "--index", str(tmp_path / "a.sqlite"), "--no-cache", "--quiet"])
    assert not (tmp_path / "cache").exists()
    main(["index", str(CORPUS), "--index", str(tmp_path / "b.sqlite"), "--quiet"])
    assert [p.suffix for p in (tmp_path / "cache").iterdir()] == [".sqlite"]  # on by default


def test_from_folder_reports_the_documents_cut_then_the_chunks_embedded():
    events: list[Progress] = []
    Index.from_folder(CORPUS, progress=heard(events))
    chunking = [e for e in events if e.task == "chunking"]
    assert [e.done for e in chunking] == list(range(1, len(chunking) + 1))
    assert chunking[-1].unit == "documents" and chunking[-1].done == chunking[-1].total == 38
    assert events[-1].task == "embedding" and events[-1].done == events[-1].total


def test_collect_rankings_reports_each_question():
    from raglab.evaluation.tuning import collect_rankings

    retriever = Index.from_folder(CORPUS).retriever("dense")
    events: list[Progress] = []
    questions = load_questions(QUESTIONS)[:4]
    collect_rankings(retriever.dense, retriever.keyword, questions, depth=5, progress=heard(events))
    assert [(e.task, e.done, e.total) for e in events] == [("searching", i, 4) for i in range(1, 5)]
