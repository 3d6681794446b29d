"""A model writes contextual chunks' sentences (raglab.generate.llm_context), against a
scripted local server: what it is sent, what is kept, the cache, what the index records."""

from __future__ import annotations

import json
import sqlite3

import pytest

from raglab.cli import main
from raglab.generate.llm_context import (
    PROMPT_VERSION,
    LLMContextWriter,
    context_writer_from_env,
)
from raglab.generate.openai_http import OpenAIChatGenerator
from raglab.ingest.chunking import Chunker
from raglab.ingest.contextual import SUMMARY_CHARS
from raglab.pipeline import Index
from raglab.records import Document
from raglab.store.sqlite_store import SQLiteStore
from tests.generate.test_openai_http import server  # noqa: F401  (the fixture)

DOC = Document(
    id="leave.md",
    title="Leave policy",
    text="# Leave policy\n\nStaff get 25 days of paid leave.\n\n## Approval\n\n"
    "It must be approved by your manager within 5 days.\n",
)


def writer(url: str, folder) -> LLMContextWriter:
    return LLMContextWriter(OpenAIChatGenerator(url, "scripted"), "scripted", folder)


def sent(request: dict) -> str:
    return json.loads(request["body"])["messages"][1]["content"]


def test_each_chunk_gets_the_models_sentence_and_keeps_its_own_text(server, tmp_path):  # noqa: F811
    server.answer("This chunk is about approving leave requests.\nA second line is dropped.")
    chunker = Chunker(
        size=60, overlap=0, contextual=True, context_writer=writer(server.url, tmp_path)
    )
    chunks = chunker.split(DOC)
    plain = Chunker(size=60, overlap=0).split(DOC)
    assert [c.text for c in chunks] == [c.text for c in plain]  # quoted text unchanged
    approval = chunks[-1]
    assert (
        approval.context == "Leave policy > Approval\nThis chunk is about approving leave requests."
    )
    assert len(server.requests) == len(chunks)
    assert "<document>\n# Leave policy" in sent(server.requests[-1])
    assert f"<chunk>\n{approval.text}\n</chunk>" in sent(server.requests[-1])
    assert chunker.params()["context"] == f"llm:scripted:{PROMPT_VERSION}"


def test_a_long_reply_is_cut_to_the_headers_length(server, tmp_path):  # noqa: F811
    server.answer("word " * 200)
    [first, *_] = Chunker(contextual=True, context_writer=writer(server.url, tmp_path)).split(DOC)
    sentence = first.context.splitlines()[-1]
    assert len(sentence) <= SUMMARY_CHARS and sentence.endswith("\u2026")


def test_each_chunk_is_asked_once_then_read_from_the_cache(server, tmp_path):  # noqa: F811
    server.answer("About leave.")
    chunker = Chunker(
        size=60, overlap=0, contextual=True, context_writer=writer(server.url, tmp_path)
    )
    first = chunker.split(DOC)
    asked = len(server.requests)
    server.answer("Another model's wording.")
    again = Chunker(
        size=60, overlap=0, contextual=True, context_writer=writer(server.url, tmp_path)
    )
    assert again.split(DOC) == first and [c.context for c in again.split(DOC)] == [
        c.context for c in first
    ]
    assert len(server.requests) == asked
    edited = Document(id=DOC.id, title=DOC.title, text=DOC.text + "\nA new paragraph here.\n")
    again.split(edited)  # the document changed: every chunk's sentence is asked again
    assert len(server.requests) > asked


def test_a_damaged_cache_entry_is_asked_again(server, tmp_path):  # noqa: F811
    server.answer("About leave.")
    chunker = Chunker(kind="chars", contextual=True, context_writer=writer(server.url, tmp_path))
    chunker.split(DOC)
    [path] = tmp_path.glob("context-*.sqlite")
    with sqlite3.connect(path) as db:
        db.execute("UPDATE vectors SET vector = x'ff'")  # not UTF-8
    db.close()
    asked = len(server.requests)
    [chunk] = chunker.split(DOC)
    assert chunk.context.endswith("About leave.") and len(server.requests) == asked + 1


def test_the_index_records_the_writer_and_an_offline_update_rebuilds(server, tmp_path):  # noqa: F811
    server.answer("About leave.")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "leave.md").write_text(DOC.text, encoding="utf-8")
    path = tmp_path / "index.sqlite"
    llm = Chunker(contextual=True, context_writer=writer(server.url, tmp_path / "cache"))
    Index.from_folder(docs, chunker=llm, path=path)
    assert SQLiteStore.open(path).meta["chunker"]["context"] == f"llm:scripted:{PROMPT_VERSION}"
    offline = Index.from_folder(docs, chunker=Chunker(contextual=True), path=path)
    assert "chunker params changed" in offline.report.rebuilt


def test_offline_there_is_no_writer_and_a_url_needs_a_model(monkeypatch):
    monkeypatch.delenv("RAGLAB_LLM_URL", raising=False)
    assert context_writer_from_env() is None
    monkeypatch.setenv("RAGLAB_LLM_URL", "http://127.0.0.1:1/v1")
    monkeypatch.delenv("RAGLAB_LLM_MODEL", raising=False)
    with pytest.raises(ValueError, match="RAGLAB_LLM_MODEL is not"):
        context_writer_from_env()


def test_raglab_index_contextual_asks_the_configured_model(server, tmp_path, monkeypatch, capsys):  # noqa: F811
    server.answer("About leave.")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "leave.md").write_text(DOC.text, encoding="utf-8")
    monkeypatch.setenv("RAGLAB_LLM_URL", server.url)
    monkeypatch.setenv("RAGLAB_LLM_MODEL", "scripted")
    path = tmp_path / "index.sqlite"
    assert main(["index", str(docs), "--index", str(path), "--contextual", "--quiet"]) == 0
    assert "context by llm:scripted" in capsys.readouterr().out
    store = SQLiteStore.open(path)
    assert all(chunk.context.endswith("About leave.") for chunk in store.chunks())
    assert server.requests
