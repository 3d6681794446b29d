"""The cache's files (raglab.embed.cache_files): where they go, whom they trust, how big they get.

Attacks on the embedding cache: a truncated file, another model's file under this model's
name, a folder of another user or open to every user's writes. Each must end with the
right vectors and no crash.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from raglab.embed.cache_files import CACHE_DIR_VARIABLE, default_folder, user_cache_folder
from raglab.embed.embedding_cache import DEFAULT_MAX_BYTES, cached
from tests.embed.test_embedding_cache_disk import TEXTS, Counting


def test_the_tests_never_write_into_the_users_cache():
    assert Path(os.environ[CACHE_DIR_VARIABLE]).name.startswith("raglab-test-cache-")


@pytest.mark.parametrize(
    ("system", "env", "expected"),
    [
        ("linux", {}, Path.home() / ".cache" / "raglab"),
        ("linux", {"XDG_CACHE_HOME": "/x/cache"}, Path("/x/cache/raglab")),
        ("linux", {"XDG_CACHE_HOME": "relative"}, Path.home() / ".cache" / "raglab"),
        ("darwin", {}, Path.home() / "Library" / "Caches" / "raglab"),
        ("win32", {"LOCALAPPDATA": "/w/Local"}, Path("/w/Local/raglab/Cache")),
    ],
)
def test_the_platforms_user_cache_folder(monkeypatch, system, env, expected):
    for name in ("XDG_CACHE_HOME", "LOCALAPPDATA"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert user_cache_folder(system) == expected


def test_raglab_cache_dir_wins(monkeypatch, tmp_path):
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(tmp_path))
    assert default_folder() == tmp_path
    monkeypatch.delenv(CACHE_DIR_VARIABLE)
    assert default_folder() == user_cache_folder()


def test_the_default_cap_is_documented_and_the_oldest_entries_go(tmp_path):
    assert DEFAULT_MAX_BYTES == 256 * 2**20
    entry = 32 * 4 + 64  # Counting's vectors are 32 floats, plus the entry's overhead
    first = cached(Counting(), tmp_path, max_bytes=3 * entry)
    first.embed(["a", "b", "c"])
    first.embed(["d", "e"])  # over the cap: "a" and "b", the oldest, are evicted
    again = Counting()
    cached(again, tmp_path, max_bytes=3 * entry).embed(["a", "b", "c", "d", "e"])
    assert again.texts == ["a", "b"]


def test_counts_say_how_many_vectors_came_from_the_file(tmp_path):
    cached(Counting(), tmp_path).embed(TEXTS[:2])
    wrapped = cached(Counting(), tmp_path)
    wrapped.embed(TEXTS)
    assert (wrapped.counts.found, wrapped.counts.embedded) == (2, 1)


def test_a_truncated_file_is_rebuilt_and_the_vectors_are_right(tmp_path):
    first = cached(Counting(), tmp_path)
    first.embed([f"text {i}" for i in range(400)] + TEXTS)
    data = first.path.read_bytes()
    first.path.write_bytes(data[: len(data) // 2])
    counting = Counting()
    with pytest.warns(UserWarning, match="unusable"):
        vectors = cached(counting, tmp_path).embed(TEXTS)
    assert vectors.tobytes() == Counting().embed(TEXTS).tobytes()


def test_another_models_file_under_this_models_name_is_never_read(tmp_path):
    other = cached(Counting(name="other"), tmp_path)
    other.embed(TEXTS)
    mine = cached(Counting(dim=32, version="v1"), tmp_path)
    mine.path.unlink(missing_ok=True)
    shutil.copy(other.path, mine.path)  # same width, another model's vectors
    counting = Counting()
    with pytest.warns(UserWarning, match="holds the entries of 'other"):
        cached(counting, tmp_path).embed(TEXTS)
    assert counting.texts == TEXTS  # embedded, not taken from the other model's file


def test_a_folder_others_may_write_to_is_not_trusted(tmp_path):
    folder = tmp_path / "cache"
    cached(Counting(), folder).embed(TEXTS)
    folder.chmod(0o777)
    counting = Counting()
    with pytest.warns(UserWarning, match=r"written by other users \(mode 777\): not trusted"):
        cached(counting, folder).embed(TEXTS)
    assert counting.texts == TEXTS
    assert stat.S_IMODE(folder.stat().st_mode) == 0o777  # not ours to change


def test_a_folder_of_another_user_is_not_trusted(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    cached(Counting(), folder).embed(TEXTS)
    monkeypatch.setattr(os, "getuid", lambda: folder.stat().st_uid + 1)
    counting = Counting()
    with pytest.warns(UserWarning, match="belongs to another user: not trusted"):
        cached(counting, folder).embed(TEXTS)
    assert counting.texts == TEXTS
