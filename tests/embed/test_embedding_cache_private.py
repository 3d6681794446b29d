"""The embedding cache keeps its secrets and its sanity (raglab.embed.embedding_cache).

Private: a vector is filed under its text's digest, so a readable file confirms a guessed
text; folder 0700, files 0600, also when the folder was there before. Sane: an entry that
is not a finite vector of the model's width is embedded again, never handed on.
"""

from __future__ import annotations

import dataclasses
import os
import sqlite3
import stat
from pathlib import Path

import numpy as np
import pytest

from raglab.embed.embedders import HashingEmbedder
from raglab.embed.embedding_cache import cached
from raglab.pipeline import Index
from raglab.records import Principal
from tests.embed.test_embedding_cache_disk import Counting  # records what it embeds

TEXTS = ["Refunds take ten days.", "Reset your password here."]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def open_umask():
    """The most permissive umask a user can have: whatever the cache makes, it made itself."""
    old = os.umask(0)
    yield
    os.umask(old)


# ---------------------------------------------------------------------------- private


def test_a_new_cache_is_private(tmp_path, open_umask):
    folder = tmp_path / "cache"
    wrapped = cached(Counting(), folder)
    wrapped.embed(TEXTS)
    assert mode(folder) == 0o700
    assert [mode(p) for p in folder.iterdir()] == [0o600]


def test_an_existing_cache_left_readable_is_made_private(tmp_path, open_umask):
    folder = tmp_path / "cache"
    cached(Counting(), folder).embed(TEXTS)
    folder.chmod(0o755)
    for path in folder.iterdir():
        path.chmod(0o644)
    counting = Counting()
    cached(counting, folder).embed(TEXTS)
    assert counting.texts == []  # still used
    assert mode(folder) == 0o700 and [mode(p) for p in folder.iterdir()] == [0o600]


def test_a_readable_folder_holding_other_files_is_left_alone_and_not_used(tmp_path, open_umask):
    """RAGLAB_CACHE_DIR=$HOME: its permissions are not the cache's to change."""
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    (home / "notes.txt").write_text("mine")
    counting = Counting()
    with pytest.warns(UserWarning, match=r"can be read by other users \(mode 755\).*chmod 700"):
        vectors = cached(counting, home).embed(TEXTS)
    assert counting.texts == TEXTS and vectors.shape == (2, 32)
    assert mode(home) == 0o755 and sorted(p.name for p in home.iterdir()) == ["notes.txt"]


# ---------------------------------------------------------------------------- sane


def stored(path: Path, value: object) -> None:
    with sqlite3.connect(path) as db:
        db.execute("UPDATE vectors SET vector = ?", (value,))
    db.close()


NAN = np.full(32, np.nan, dtype=np.float32).tobytes()
BAD_ENTRIES = {
    "NaN": NAN,
    "infinity": np.full(32, np.inf, dtype=np.float32).tobytes(),
    "float64": np.ones(32, dtype=np.float64).tobytes(),  # twice the width
    "short": b"\x00" * 8,
    "an integer": 5,
    "text": "a vector",
    "NULL": None,
}


@pytest.mark.parametrize("value", BAD_ENTRIES.values(), ids=BAD_ENTRIES.keys())
def test_a_bad_entry_is_embedded_again_and_replaced(tmp_path, value):
    wrapped = cached(Counting(), tmp_path)
    expected = wrapped.embed(TEXTS)
    stored(wrapped.path, value)
    counting = Counting()
    assert cached(counting, tmp_path).embed(TEXTS).tobytes() == expected.tobytes()
    assert counting.texts == TEXTS
    again = Counting()
    cached(again, tmp_path).embed(TEXTS)
    assert again.texts == []  # replaced by the good vectors


def test_indexing_over_a_cache_holding_nan_works(tmp_path):
    """It once stopped with "vectors contain NaN or infinity"."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("Parking is free for visitors.", encoding="utf-8")
    cache = tmp_path / "cache"
    wrapped = cached(HashingEmbedder(), cache)
    Index.from_folder(docs, embedder=wrapped)
    stored(wrapped.path, np.full(wrapped.dim, np.nan, dtype=np.float32).tobytes())
    index = Index.from_folder(docs, embedder=cached(HashingEmbedder(), cache))
    [hit] = index.search("Is parking free?", Principal("ann"), k=1)
    assert hit.chunk.doc_id == "a.md" and np.isfinite(hit.score)


def test_a_non_finite_vector_from_the_model_is_not_stored(tmp_path):
    @dataclasses.dataclass(frozen=True)
    class Broken(Counting):
        def embed(self, texts):
            self.texts.extend(texts)
            return np.full((len(texts), 32), np.nan, dtype=np.float32)

    cached(Broken(), tmp_path).embed(TEXTS)
    broken = Broken()
    cached(broken, tmp_path).embed(TEXTS)
    assert broken.texts == TEXTS  # nothing was kept to hand back


def test_a_link_in_place_of_the_cache_file_is_not_followed(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    folder = tmp_path / "cache"
    wrapped = cached(Counting(), folder)
    folder.mkdir(mode=0o700)
    wrapped.path.symlink_to(victim)
    with pytest.warns(UserWarning, match="going on without it"):
        wrapped.embed(TEXTS)
    assert victim.read_text() == "keep me" and mode(victim) != 0o600
