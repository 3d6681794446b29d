"""Exercise metadata is a learner's to edit: read, it is checked, and a malformed notebook gets
one clear line naming it and the reason (`raglab progress`, the course, the grader)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from raglab.workbook.exercises import (
    ExerciseError,
    exercise_entry,
    exercise_list,
    listed_exercises,
)

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
