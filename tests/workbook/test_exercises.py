"""Student notebooks: solutions replaced by stubs, everything else kept, bytes deterministic."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest

from raglab.workbook.conventions import normalise_notebook
from raglab.workbook.exercises import (
    CODE_STUB,
    EXERCISE_LABEL,
    SOLUTION_LABEL,
    ExerciseError,
    build_exercises,
    exercise_list,
    exercises_command,
    find_solution_leaks,
    is_check_cell,
    notebook_text,
    replace_solutions,
    stale_exercises,
    student_cell,
)

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
CHUNKING = NOTEBOOKS / "04_implement_chunking.ipynb"


@pytest.fixture()
def built(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the chunking notebook in src/, and its student version built into dst/."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.mkdir()
    shutil.copy(CHUNKING, src)
    build_exercises(src, dst)
    return src, dst


def read(path: Path):
    return nbformat.read(path, as_version=4)


def cells_by_id(nb) -> dict:
    return {cell.id: cell for cell in nb.cells}


# --- one cell -----------------------------------------------------------------------------


def test_replace_solutions_keeps_the_indentation_of_the_begin_line():
    source = (
        "def f(x):\n    '''Doc.'''\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION\n"
    )
    assert replace_solutions(source, CODE_STUB) == (
        "def f(x):\n    '''Doc.'''\n    # YOUR CODE HERE\n    raise NotImplementedError()\n"
    )


def test_replace_solutions_handles_several_blocks_and_leaves_other_lines():
    source = (
        "a = 1\n### BEGIN SOLUTION\nb = 2\n### END SOLUTION\n"
        "c = 3\n  ### BEGIN SOLUTION\n  d\n  ### END SOLUTION"
    )
    assert replace_solutions(source, ("X",)) == "a = 1\nX\nc = 3\n  X"


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("### BEGIN SOLUTION\nx", "### BEGIN SOLUTION is never closed"),
        ("x\n### END SOLUTION", "line 2: ### END SOLUTION without"),
        ("### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION", "line 2: .* inside another"),
    ],
)
def test_broken_markers_are_errors_naming_the_cell(source, message):
    with pytest.raises(ExerciseError, match=f"nb.ipynb, cell 3: {message}"):
        replace_solutions(source, CODE_STUB, where="nb.ipynb, cell 3")


def test_markdown_answer_becomes_your_answer_here():
    cell = nbformat.v4.new_markdown_cell(
        "Why?\n\n### BEGIN SOLUTION\nBecause.\n### END SOLUTION\n", id="q"
    )
    assert student_cell(cell).source == "Why?\n\nYOUR ANSWER HERE\n"


def test_solution_cell_is_shown_relabelled_and_cleared():
    cell = nbformat.v4.new_code_cell(
        f"{SOLUTION_LABEL}\ndef f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION",
        id="s",
    )
    cell.metadata.update(
        jupyter={"source_hidden": True}, tags=["hide-input", "keep"], raglab={"exercise": "f"}
    )
    cell.execution_count = 3
    cell.outputs = [nbformat.v4.new_output("stream", text="1\n")]
    student = student_cell(cell)
    assert student.source.split("\n")[0] == EXERCISE_LABEL
    assert "return 1" not in student.source and "raise NotImplementedError()" in student.source
    assert student.metadata == {"tags": ["keep"], "raglab": {"exercise": "f"}}
    assert student.outputs == [] and student.execution_count is None
    assert cell.metadata["jupyter"] == {"source_hidden": True}  # the original is untouched


def test_an_answer_at_the_top_of_a_cell_keeps_its_empty_value_and_raises_nothing():
    # A top-level raise would stop Run All at this cell; inside a function it stops nothing.
    cell = nbformat.v4.new_code_cell(
        f"{SOLUTION_LABEL}\nFLAWS: set[str] = set()\n### BEGIN SOLUTION\nFLAWS = {{'D2'}}\n"
        "### END SOLUTION\ndef f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION",
        id="v",
    )
    student = student_cell(cell).source
    assert student.split("\n")[1:] == [
        "FLAWS: set[str] = set()",
        "# YOUR CODE HERE",
        "def f():",
        "    # YOUR CODE HERE",
        "    raise NotImplementedError()",
    ]
    namespace: dict = {}
    exec(student, namespace)
    assert namespace["FLAWS"] == set()


def test_check_cells_are_found_by_tag_or_by_call():
    assert is_check_cell(nbformat.v4.new_code_cell("checks.check_chunk(chunk)"))
    assert is_check_cell(nbformat.v4.new_code_cell("x", metadata={"tags": ["check"]}))
    assert not is_check_cell(nbformat.v4.new_code_cell("print(checks)"))
    assert not is_check_cell(nbformat.v4.new_markdown_cell("checks.check_chunk(chunk)"))


def old_pattern_notebook():
    """A notebook written as 04 once was: nbval comments, a visible solution, a saved pass."""
    solution = nbformat.v4.new_code_cell(
        "def chunk(text, size=800, overlap=100):\n    ### BEGIN SOLUTION\n    return []\n    ### END SOLUTION",
        metadata={"raglab": {"exercise": "chunk", "function": "chunk", "points": 2}},
    )
    check = nbformat.v4.new_code_cell(
        "# NBVAL_CHECK_OUTPUT\nfrom raglab import checks\nchecks.check_chunk(chunk)",
        outputs=[nbformat.v4.new_output("stream", text="✅ chunk: all pass\n")],
        execution_count=3,
    )
    widget = nbformat.v4.new_code_cell("# NBVAL_IGNORE_OUTPUT\n# NBVAL_RAISES_EXCEPTION\nx = 1")
    imports = nbformat.v4.new_code_cell("from pathlib import Path")
    data = nbformat.v4.new_code_cell(
        'CORPUS = Path("../data/corpus")\nqs = load_questions("../data/questions.jsonl")'
    )
    return nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_markdown_cell("# Title"), imports, data, solution, check, widget]
    )


def test_normalise_turns_an_old_pattern_notebook_into_the_workbook_shape():
    nb = normalise_notebook(old_pattern_notebook())
    title, imports, data, solution, check, widget = nb.cells
    assert (
        imports.source
        == "from raglab import sample_corpus, sample_questions\nfrom pathlib import Path"
    )
    assert data.source == "CORPUS = sample_corpus()\nqs = load_questions(sample_questions())"
    assert solution.source.startswith(SOLUTION_LABEL + "\ndef chunk(")
    assert solution.metadata["jupyter"] == {"source_hidden": True} and solution.metadata[
        "tags"
    ] == ["hide-input"]
    assert solution.metadata["nbgrader"] == {
        "grade": False,
        "grade_id": "chunk",
        "locked": False,
        "schema_version": 3,
        "solution": True,
        "task": False,
    }
    assert check.source == "from raglab.workbook import checks\nchecks.check_chunk(chunk)"
    assert check.metadata["tags"] == ["check"]
    assert check.metadata["nbgrader"]["grade"] is True and check.metadata["nbgrader"]["points"] == 2
    assert check.metadata["nbgrader"]["locked"] is True and check.metadata["raglab"] == {
        "check": "chunk"
    }
    assert check.outputs == [] and check.execution_count is None  # no saved pass
    assert widget.source == "x = 1" and widget.metadata["tags"] == [
        "nbval-ignore-output",
        "raises-exception",
    ]
    assert title.metadata["nbgrader"]["locked"] is True
    assert normalise_notebook(nb) == nb  # running it again changes nothing


def test_normalise_refuses_an_unknown_nbval_marker():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("# NBVAL_CHECK_OUTPUTS\nx = 1")])
    with pytest.raises(ValueError, match="unknown nbval marker NBVAL_CHECK_OUTPUTS"):
        normalise_notebook(nb)


# --- the real notebook ----------------------------------------------------------------------


def test_student_notebook_has_stubs_and_no_solution(built):
    src, dst = built
    student = read(dst / CHUNKING.name)
    text = (dst / CHUNKING.name).read_text(encoding="utf-8")
    assert "BEGIN SOLUTION" not in text and "END SOLUTION" not in text
    assert SOLUTION_LABEL not in text
    assert "start += size - overlap" not in text  # a line of the chunk solution
    assert "path.pop()" not in text  # a line of the split_sections solution
    assert 'heading.startswith(title + " > ")' not in text  # a line of context_header's
    exercises = [cell for cell in student.cells if "exercise" in cell.metadata.get("raglab", {})]
    assert [cell.metadata["raglab"]["exercise"] for cell in exercises] == [
        "chunk",
        "split_sections",
        "context_header",
    ]
    for cell in exercises:
        assert cell.source.startswith(EXERCISE_LABEL)
        assert "    # YOUR CODE HERE\n    raise NotImplementedError()" in cell.source
        assert "jupyter" not in cell.metadata and "hide-input" not in cell.metadata.get("tags", [])
        assert cell.outputs == [] and cell.execution_count is None
    assert find_solution_leaks(dst, src) == []


def test_only_exercise_and_check_cells_change(built):
    src, dst = built
    source, student = read(src / CHUNKING.name), read(dst / CHUNKING.name)
    assert [c.id for c in source.cells] == [c.id for c in student.cells]
    changed = [c.id for c, s in zip(source.cells, student.cells) if c != s]
    # check cells carry no output already
    assert changed == ["ex1-solution", "ex2-solution", "ex3-solution"]
    checks = [s for s in student.cells if is_check_cell(s)]
    assert len(checks) == 3 and all(c.outputs == [] and c.execution_count is None for c in checks)
    # Hints and the other outputs are kept, e.g. the drawing of the chunks.
    assert sum("<details>" in c.source for c in student.cells) >= 6
    assert (
        cells_by_id(student)["draw-chars-code"].outputs
        == cells_by_id(source)["draw-chars-code"].outputs
    )
    assert student.metadata["raglab"] == {"exercises": exercise_list(source)}


def test_build_is_byte_for_byte_deterministic(built, tmp_path):
    src, dst = built
    first = (dst / CHUNKING.name).read_bytes()
    build_exercises(src, tmp_path / "again")
    assert (tmp_path / "again" / CHUNKING.name).read_bytes() == first
    assert first.decode("utf-8") == notebook_text(read(dst / CHUNKING.name))  # Jupyter's own layout
    assert (
        first.endswith(b"}\n") and b'\n "cells": [\n  {\n' in first
    )  # 1-space indent, sorted keys


def test_stale_lists_missing_changed_and_orphaned_files(built):
    src, dst = built
    assert stale_exercises(src, dst) == []
    target = dst / CHUNKING.name
    target.write_text(
        target.read_text(encoding="utf-8").replace("Your turn", "My turn"), encoding="utf-8"
    )
    shutil.copy(target, dst / "99_gone.ipynb")
    assert stale_exercises(src, dst) == [
        f"{target} (out of date)",
        f"{dst / '99_gone.ipynb'} (no source notebook)",
    ]
    target.unlink()
    assert stale_exercises(src, dst)[0] == f"{target} (missing)"
    build_exercises(src, dst)
    assert stale_exercises(src, dst) == [] and not (dst / "99_gone.ipynb").exists()


def test_leaks_are_found_when_a_solution_is_copied(built):
    src, dst = built
    shutil.copy(src / CHUNKING.name, dst / CHUNKING.name)  # the complete notebook, by mistake
    leaks = find_solution_leaks(dst, src)
    assert any("'### BEGIN SOLUTION'" in leak for leak in leaks)
    assert any("solution line 'start += size - overlap'" in leak for leak in leaks)


def test_command_build_then_check(built, capsys):
    src, dst = built
    assert exercises_command(["check", "--src", str(src), "--dst", str(dst)]) == 0
    (dst / CHUNKING.name).unlink()
    assert exercises_command(["check", "--src", str(src), "--dst", str(dst)]) == 1
    assert f"{dst / CHUNKING.name} (missing)" in capsys.readouterr().out
    assert exercises_command(["build", "--src", str(src), "--dst", str(dst)]) == 0
    assert f"wrote {dst / CHUNKING.name}" in capsys.readouterr().out


def test_command_reports_a_missing_folder(tmp_path, capsys):
    assert (
        exercises_command(["build", "--src", str(tmp_path / "nope"), "--dst", str(tmp_path)]) == 1
    )
    assert "notebooks folder not found" in capsys.readouterr().err


def test_committed_exercises_are_current():
    """exercises/ is generated: rebuild it (`raglab exercises build`) after editing notebooks/."""
    assert stale_exercises(NOTEBOOKS, ROOT / "exercises") == []
    assert find_solution_leaks(ROOT / "exercises", NOTEBOOKS) == []
