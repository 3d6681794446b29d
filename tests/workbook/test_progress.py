"""`raglab progress` on a learner's folder: a malformed or unreadable notebook is one line naming
it and the reason, the others are still shown; names are printed escaped."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat

from raglab.workbook.progress import progress_command

EXERCISES = Path(__file__).resolve().parents[2] / "exercises"
CHUNKING = "04_implement_chunking.ipynb"


def malformed(tmp_path: Path) -> Path:
    nb = nbformat.read(EXERCISES / CHUNKING, as_version=4)
    for cell in nb.cells:
        if cell.get("id") == "ex1-solution":
            cell.metadata["raglab"] = {"exercise": ["chunk"], "points": "2"}
        if cell.get("id") == "ex1-check":
            cell.metadata["raglab"] = ["chunk"]
    nbformat.write(nb, tmp_path / CHUNKING)
    return tmp_path / CHUNKING


def test_progress_names_a_malformed_notebook_and_shows_the_others(tmp_path, capsys):
    path = malformed(tmp_path)
    shutil.copy(EXERCISES / "05_implement_embeddings.ipynb", tmp_path)
    (tmp_path / "06_broken.ipynb").write_text("{not json", encoding="utf-8")
    assert progress_command([str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert [line.split()[2] for line in out.splitlines()[:2]] == ["cosine", "hash_embed"]
    assert out.splitlines()[-1] == "0 of 2 exercises passed, 0 of 2 points"
    assert err.splitlines() == [
        f"raglab progress: error: {path}: cell 7: exercise must be a Python name (got ['chunk'])",
        f"raglab progress: error: {tmp_path / '06_broken.ipynb'}: not a readable notebook "
        "(NotJSONError: Notebook does not appear to be JSON: '{not json')",
    ]


def test_progress_prints_names_escaped(tmp_path, capsys):
    name = "04_\x1b[31mred\u202e.ipynb"
    shutil.copy(EXERCISES / CHUNKING, tmp_path / name)
    (tmp_path / "07_\x1b[2J.ipynb").write_text("{not json", encoding="utf-8")
    assert progress_command([str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert "\x1b" not in out + err and "\u202e" not in out + err
    assert out.startswith("04_\\x1b[31mred\\u202e.ipynb  · chunk (not run)")
