"""Ingestion limits: file count (loader), chunks per document (raglab.ingest.limits), and the CLI flags."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from raglab.ingest.chunking import Chunker
from raglab.ingest.limits import within_chunk_limit
from raglab.ingest.loaders import CorpusError, load_folder
from raglab.pipeline import Index, Limits
from raglab.records import Document

AWS = "AKIAIOSFODNN7EXAMPLE"


def write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_too_many_files_is_refused_before_the_walk_ends(tmp_path):
    for i in range(6):
        write(tmp_path, f"d{i}.md", "x")
    assert len(load_folder(tmp_path, max_files=6).documents) == 6
    with pytest.raises(CorpusError, match=r"holds more than max_files=5 \.md/\.txt files"):
        load_folder(tmp_path, max_files=5)


def test_a_document_over_the_chunk_limit_is_refused_by_name():
    docs = [Document("big.md", "word " * 200), Document("small.md", "word")]
    kept, refused = within_chunk_limit(docs, Chunker("chars", 100, 0), 5)
    assert [doc.id for doc in kept] == ["small.md"]
    assert [str(error) for error in refused] == [
        "big.md: refused: it makes 10 chunks, more than max_chunks=5 "
        "(split it into smaller documents, or raise --max-chunks)"
    ]
    assert within_chunk_limit(docs, Chunker("chars", 100, 0), 10)[0] == docs  # the edge: 10 ok
    with pytest.raises(
        ValueError, match=r"max_chunks must be an integer >= 1 \(got max_chunks=0\)"
    ):
        within_chunk_limit(docs, Chunker(), 0)


def test_index_from_folder_applies_every_limit_and_indexes_the_rest(tmp_path):
    write(tmp_path, "big.md", "word " * 400)
    write(tmp_path, "huge.md", "y" * 5000)
    write(tmp_path, "key.md", f"key {AWS}\n")
    write(tmp_path, "ok.md", "Fine.")
    limits = Limits(max_bytes=3000, max_chunks=3)
    index = Index.from_folder(tmp_path, chunker=Chunker("chars", 200, 0), limits=limits)
    assert sorted(index.store.documents()) == ["ok.md"]
    reasons = {error.path: error.reason for error in index.load_errors}
    assert sorted(reasons) == ["big.md", "huge.md", "key.md"]
    assert "more than max_chunks=3" in reasons["big.md"]
    assert "file too large (5000 bytes > max_bytes=3000)" in reasons["huge.md"]
    redacting = Index.from_folder(tmp_path, limits=Limits(secrets="redact"))
    assert "key.md" in redacting.store.documents()
    assert [notice.path for notice in redacting.warnings] == ["key.md"]
    assert "key.md" not in {error.path for error in redacting.load_errors}
    assert all(AWS not in chunk.text for chunk in redacting.store.chunks())


def raglab(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "raglab", *args], capture_output=True, text=True, timeout=300
    )


def test_cli_limit_flags(tmp_path):
    write(tmp_path, "a.md", "Hotels cost 180 euros per night. " * 40)
    write(tmp_path, "b.md", f"Deploy key {AWS}.\n")
    write(tmp_path, "c.md", "Parking costs 5 euros.")
    result = raglab(
        "index", str(tmp_path), "--index", str(tmp_path / "i.sqlite"), "--json",
        "--chunker", "chars", "--chunk-size", "200", "--overlap", "0", "--max-chunks", "3",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["added"] == ["c.md"]
    assert "raglab: skipped a.md: refused: it makes 7 chunks" in result.stderr
    assert (
        "raglab: skipped b.md: refused: line 1 holds what looks like a credential" in result.stderr
    )
    assert AWS not in result.stderr + result.stdout
    result = raglab("ask", "deploy key", "--docs", str(tmp_path), "--secrets", "redact", "--json")
    assert result.returncode == 0, result.stderr
    assert "raglab: warning: b.md: redacted: line 1" in result.stderr
    assert AWS not in result.stdout
    result = raglab("ask", "x", "--docs", str(tmp_path), "--max-files", "2")
    assert result.returncode != 0 and "more than max_files=2" in result.stderr
    assert "Traceback" not in result.stderr


def test_cli_selection_flags(tmp_path):
    write(tmp_path, "a.md", "# Hotels\n\nHotels cost 180 euros per night.\n")
    write(tmp_path, "b.md", "# Parking\n\nParking costs 5 euros a day.\n")
    result = raglab(
        "ask", "hotel per night", "--docs", str(tmp_path), "--mmr", "0.5", "--dedup", "0.8",
        "--expand", "multi", "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["retrieved"][0]["doc_id"] == "a.md"
    for bad, message in [
        (["--mmr", "1.5"], "--mmr/--dedup: lambda_ must be a finite number from 0 to 1"),
        (["--hyde"], "--hyde needs --expand multi"),
        (["--expand", "multi", "--hyde"], "--hyde needs a language model"),
    ]:
        result = raglab("ask", "x", "--docs", str(tmp_path), *bad)
        assert result.returncode != 0 and message in result.stderr, result.stderr
        assert "Traceback" not in result.stderr
