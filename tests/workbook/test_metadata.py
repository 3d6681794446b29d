"""Exercise metadata is a learner's to edit: read, it is checked, and a malformed notebook gets
one clear line naming it and the reason (`raglab progress`, the course, the grader)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import nbformat
import pytest

from raglab.workbook.exercises import (
    ExerciseError,
    exercise_entry,
    exercise_list,
    listed_exercises,
)
from raglab.workbook.progress import progress_command

EXERCISES = Path(__file__).resolve().parents[2] / "exercises"
CHUNKING = "04_implement_chunking.ipynb"


@pytest.mark.parametrize(
    ("meta", "message"),
    [
        ("chunk", "cell 3: an exercise must be an object (got 'chunk')"),
        ({"exercise": ["chunk"]}, "cell 3: exercise must be a Python name (got ['chunk'])"),
        ({"exercise": ""}, "cell 3: exercise must be a Python name (got '')"),
        ({"exercise": "a b"}, "cell 3: exercise must be a Python name (got 'a b')"),
        ({"exercise": "chunk", "function": 7}, "cell 3: function must be a Python name (got 7)"),
        ({"exercise": "chunk", "points": "2"}, "cell 3: points must be a whole number >= 0"),
        ({"exercise": "chunk", "points": 2.5}, "cell 3: points must be a whole number >= 0"),
        ({"exercise": "chunk", "points": -1}, "cell 3: points must be a whole number >= 0"),
        ({"exercise": "chunk", "points": False}, "cell 3: points must be a whole number >= 0"),
    ],
)
def test_an_exercise_entry_is_checked(meta, message):
    with pytest.raises(ExerciseError, match="^" + re.escape(message)):
        exercise_entry(meta, where="cell 3")


def test_a_long_value_is_shown_briefly():
    with pytest.raises(ExerciseError) as raised:
        exercise_entry({"exercise": list(range(10_000))}, where="cell 0")
    assert len(str(raised.value)) < 120


@pytest.mark.parametrize(
    ("nb", "message"),
    [
        ({"cells": "nope"}, "the notebook's cells must be a list of objects"),
        ({"cells": [1]}, "the notebook's cells must be a list of objects"),
        ({"cells": [{"metadata": []}]}, "cell 0: raglab metadata must be an object"),
        ({"cells": [{"metadata": {"raglab": ["x"]}}]}, "cell 0: raglab metadata must be an object"),
    ],
)
def test_the_cells_are_checked(nb, message):
    with pytest.raises(ExerciseError, match=f"^{message}"):
        exercise_list(nb)


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ({"raglab": "x"}, "the notebook's metadata: raglab metadata must be an object"),
        ({"raglab": {"exercises": {}}}, "the notebook's raglab.exercises must be a list"),
        ({"raglab": {"exercises": [None]}}, "the notebook's exercise 0: an exercise must be"),
    ],
)
def test_the_notebooks_own_list_is_checked(metadata, message):
    with pytest.raises(ExerciseError, match=f"^{message}"):
        listed_exercises({"cells": [], "metadata": metadata})


def test_well_formed_metadata_reads_as_before():
    nb = json.loads((EXERCISES / CHUNKING).read_text(encoding="utf-8"))
    assert exercise_list(nb) == listed_exercises(nb) == nb["metadata"]["raglab"]["exercises"]


# --- raglab progress -------------------------------------------------------------------------


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
