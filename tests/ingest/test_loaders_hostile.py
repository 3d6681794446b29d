"""A hostile corpus folder: links that loop, folders too deep to walk, names that would take
over a terminal. Each costs the offending file or folder, never the run (raglab.ingest.loaders)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from raglab.ingest.loaders import MAX_DEPTH, SYMLINK_LOOP, load_file, load_folder

AWS = "AKIAIOSFODNN7EXAMPLE"  # AWS's own documentation example key


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def symlink(target: str, link: Path) -> None:
    try:
        os.symlink(target, link)
    except (OSError, NotImplementedError):
        pytest.skip("symbolic links not available")


def errors_by_id(result) -> dict[str, str]:
    return {error.path: error.reason for error in result.errors}


# ---------------------------------------------------------------------------- links and depth


def test_a_symbolic_link_loop_costs_its_files_not_the_run(tmp_path):
    write(tmp_path, "ok.md", "Parking is free.")
    symlink("b.md", tmp_path / "a.md")
    symlink("a.md", tmp_path / "b.md")
    symlink("self.md", tmp_path / "self.md")
    result = load_folder(tmp_path)
    assert [doc.id for doc in result.documents] == ["ok.md"]
    assert errors_by_id(result) == {name: SYMLINK_LOOP for name in ("a.md", "b.md", "self.md")}


def test_load_file_on_a_link_loop_is_a_document_error(tmp_path):
    symlink("loop.md", tmp_path / "loop.md")
    with pytest.raises(ValueError, match=f"^loop.md: {SYMLINK_LOOP}$"):
        load_file(tmp_path / "loop.md", root=tmp_path)


def test_a_linked_folder_loop_is_not_followed(tmp_path):
    write(tmp_path, "sub/ok.md", "Parking is free.")
    symlink("..", tmp_path / "sub" / "up")
    result = load_folder(tmp_path)
    assert [doc.id for doc in result.documents] == ["sub/ok.md"] and not result.errors


@pytest.fixture
def deep_corpus():
    """A corpus folder holding ok.md and a chain of 1,100 folders named d, deep.md at its
    bottom. Built and removed one level at a time: pathlib, os.makedirs and shutil.rmtree
    recurse once per level and would fail; outside pytest's tmp_path, so that even a killed
    run leaves nothing pytest's own clean-up would trip on."""
    corpus = Path(tempfile.mkdtemp(prefix="raglab-deep-"))
    write(corpus, "ok.md", "Parking is free.")
    levels = [os.path.join(corpus, *["d"] * n) for n in range(1, 1_101)]
    for folder in levels:
        os.mkdir(folder)
    Path(levels[-1], "deep.md").write_text("Deep.", encoding="utf-8")
    yield corpus
    for folder in reversed(levels):
        for name in os.listdir(folder):
            os.unlink(os.path.join(folder, name))
        os.rmdir(folder)
    shutil.rmtree(corpus)


def test_a_very_deep_folder_costs_what_lies_too_deep_not_the_run(deep_corpus):
    """1,100 levels once exhausted the walk's recursion: nothing was indexed."""
    lowest = "d/" * MAX_DEPTH + "lowest.md"
    write(deep_corpus, lowest, "As deep as is read.")
    result = load_folder(deep_corpus)
    assert [doc.id for doc in result.documents] == [lowest, "ok.md"]
    too_deep = "d/" * (MAX_DEPTH + 1)
    assert errors_by_id(result) == {
        too_deep: f"not read: a folder more than {MAX_DEPTH} levels deep (move its files up)"
    }


@pytest.mark.skipif(os.mkdir not in os.supports_dir_fd, reason="needs mkdir relative to a folder")
def test_a_folder_whose_path_is_too_long_to_open_costs_that_folder(tmp_path):
    """Folder names of 250 characters: by the 17th level the path outgrows what Linux opens."""
    write(tmp_path, "ok.md", "Parking is free.")
    name = "n" * 250
    parent = os.open(tmp_path, os.O_RDONLY)
    try:
        for _ in range(20):
            os.mkdir(name, dir_fd=parent)
            child = os.open(name, os.O_RDONLY, dir_fd=parent)
            os.close(parent)
            parent = child
    finally:
        os.close(parent)
    result = load_folder(tmp_path)
    assert [doc.id for doc in result.documents] == ["ok.md"]
    [(folder, reason)] = errors_by_id(result).items()
    assert folder.startswith(name + "/") and folder.endswith("/")
    assert reason.startswith("not read: the folder cannot be opened (")


# ---------------------------------------------------------------------------- names


FORGED = "a\nraglab: warning: all clear\x1b[2J\u202e.md"
"""A file name that would print a fake warning line, clear the screen and reverse the text."""


def test_a_hostile_file_name_is_escaped_in_every_message(tmp_path):
    write(tmp_path, FORGED, f"key {AWS}\n")
    write(tmp_path, "ok.md", "Parking is free.")
    [error] = load_folder(tmp_path).errors
    assert error.path == FORGED  # the id itself is kept as it is
    message = str(error)
    assert message.startswith("a\\nraglab: warning: all clear\\x1b[2J\\u202e.md: refused:")
    assert message.isprintable()


def test_a_hostile_tenant_folder_name_is_escaped_in_the_reason(tmp_path):
    tenant = "ev\x1b[31mil"
    write(tmp_path, f"{tenant}/a.md", f'---\ntenant: "{tenant}"\n---\nA')
    write(tmp_path, f"{tenant}/b.md", "---\ntenant: other\n---\nB")
    [error] = load_folder(tmp_path).errors
    assert str(error).isprintable()
    assert "folder 'ev\\x1b[31mil/'" in error.reason
