"""The embedding cache on disk (raglab.embed.embedding_cache): unchanged text is embedded once.

A new `CachedEmbedder` on the same folder stands for another process. Every test writes
to its own tmp folder, never to ~/.cache.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from raglab.embed.embedders import HashingEmbedder, LSAEmbedder, is_fittable
from raglab.embed.embedding_cache import CACHE_DIR_VARIABLE, CachedEmbedder, cached, default_folder

TEXTS = ["Refunds take ten days.", "Reset your password here.", "Unpaid leave in Lisbon."]


@dataclasses.dataclass(frozen=True)
class Counting:
    """A hashing embedder that records every text it is asked to embed."""

    version: str = "v1"
    name: str = "counting"
    texts: list = dataclasses.field(default_factory=list, compare=False)
    dim: int = 32

    def embed(self, texts):
        self.texts.extend(texts)
        return HashingEmbedder(dim=self.dim).embed(texts)


def test_a_second_process_embeds_nothing(tmp_path):
    first, second = Counting(), Counting()
    cold = cached(first, tmp_path).embed(TEXTS)
    warm = cached(second, tmp_path).embed(TEXTS)
    assert first.texts == TEXTS
    assert second.texts == []
    assert warm.tobytes() == cold.tobytes()


def test_only_new_texts_are_embedded_in_one_batch_in_order(tmp_path):
    cached(Counting(), tmp_path).embed(TEXTS[:2])
    counting = Counting()
    texts = [TEXTS[2], TEXTS[0], "A new text.", TEXTS[2]]
    vectors = cached(counting, tmp_path).embed(texts)
    assert counting.texts == [TEXTS[2], "A new text."]  # each missing text once
    assert vectors.tobytes() == Counting().embed(texts).tobytes()


def test_same_vectors_and_protocol_as_the_inner_embedder(tmp_path):
    inner = HashingEmbedder(dim=64)
    wrapped = cached(inner, tmp_path)
    for _ in range(2):  # cold, then from the file
        vectors = wrapped.embed(TEXTS + [""])
        assert vectors.dtype == np.float32 and vectors.shape == (4, 64)
        assert vectors.tobytes() == inner.embed(TEXTS + [""]).tobytes()
    assert (wrapped.name, wrapped.dim, wrapped.version) == (inner.name, inner.dim, inner.version)
    assert wrapped.embed([]).shape == (0, 64)
    with pytest.raises(TypeError, match="texts must be a list of strings"):
        wrapped.embed("one string")


@pytest.mark.parametrize("other", [Counting(version="v2"), Counting(name="other")])
def test_another_model_or_version_gets_its_own_entries(tmp_path, other):
    cached(Counting(), tmp_path).embed(TEXTS)
    cached(other, tmp_path).embed(TEXTS)
    assert other.texts == TEXTS
    assert len(list(tmp_path.glob("*.sqlite"))) == 2


def test_a_corrupt_file_is_rebuilt_with_a_warning(tmp_path):
    wrapped = cached(Counting(), tmp_path)
    wrapped.path.parent.mkdir(parents=True, exist_ok=True)
    wrapped.path.write_bytes(b"not a database at all" * 100)
    with pytest.warns(UserWarning, match="unusable .*rebuilding it"):
        vectors = wrapped.embed(TEXTS)
    assert vectors.tobytes() == Counting().embed(TEXTS).tobytes()
    again = Counting()
    cached(again, tmp_path).embed(TEXTS)
    assert again.texts == []  # rebuilt and filled


def test_an_unopenable_folder_only_warns(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the folder should be")
    counting = Counting()
    with pytest.warns(UserWarning, match="going on without it"):
        vectors = cached(counting, blocker / "cache").embed(TEXTS)
    assert counting.texts == TEXTS and vectors.shape == (3, 32)


def test_rows_of_the_wrong_size_are_ignored(tmp_path):
    wrapped = cached(Counting(), tmp_path)
    wrapped.embed(TEXTS)
    with sqlite3.connect(wrapped.path) as db:
        db.execute("UPDATE vectors SET vector = x'00'")
    db.close()
    counting = Counting()
    cached(counting, tmp_path).embed(TEXTS)
    assert counting.texts == TEXTS


def test_a_fittable_embedder_is_never_cached(tmp_path):
    lsa = LSAEmbedder()
    assert is_fittable(lsa)
    assert cached(lsa, tmp_path) is lsa
    with pytest.raises(ValueError, match="fittable embedder .*cannot be cached"):
        CachedEmbedder(lsa, tmp_path)
    assert not list(tmp_path.iterdir())


def test_the_default_folder_comes_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(tmp_path))
    assert default_folder() == tmp_path
    assert cached(Counting()).path.parent == tmp_path
    monkeypatch.delenv(CACHE_DIR_VARIABLE)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert default_folder() == Path.home() / ".cache" / "raglab"  # on Linux


def _fill(folder: str, start: int) -> None:
    texts = [f"text number {i}" for i in range(start, start + 300)]
    for _ in range(3):
        cached(Counting(), folder).embed(texts)


def test_two_processes_writing_at_once(tmp_path):
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_fill, args=(str(tmp_path), s)) for s in (0, 150)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert [w.exitcode for w in workers] == [0, 0]
    counting = Counting()
    texts = [f"text number {i}" for i in range(450)]
    assert cached(counting, tmp_path).embed(texts).tobytes() == Counting().embed(texts).tobytes()
    assert counting.texts == []
