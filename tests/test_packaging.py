"""The package as a new user gets it: sdist, then a wheel built from the sdist, installed
with its declared dependencies into a fresh virtual environment, run from another folder.

Why: the tests run against an editable install, which hides whatever the wheel leaves
out. `pip install .` once left out `raglab.checks` and `ipykernel`, so `raglab grade`
failed in every normal install while every other test passed.

The fresh venv sees nothing of this environment (no system site-packages, no PYTHONPATH).
Its dependencies come from a wheelhouse kept between runs, so the install runs offline;
the wheelhouse is filled from PyPI the first time, and again whenever the declared
dependencies change. Set RAGLAB_WHEELHOUSE to keep it elsewhere.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.packaging

ROOT = Path(__file__).resolve().parent.parent
WHEELHOUSE = Path(os.environ.get("RAGLAB_WHEELHOUSE", Path(sys.prefix) / "raglab-wheelhouse"))
NOTEBOOK = ROOT / "notebooks" / "04_implement_chunking.ipynb"  # complete: every exercise solved
# What a fresh clone does not have: build leftovers can hide a file missing from the sdist.
NOT_IN_A_CLONE = shutil.ignore_patterns(".*", "__pycache__", "*.egg-info", "build", "dist")


def clean_env(**extra: str) -> dict[str, str]:
    """This environment minus what would let the checkout's raglab leak into the venv."""
    leaks = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
    return {k: v for k, v in os.environ.items() if k not in leaks} | extra


def run(args: list[str | Path], *, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(a) for a in args], cwd=cwd, env=clean_env(**env), capture_output=True, text=True
    )


def offline(args: list[str | Path], *, cwd: Path, needs: list[str]) -> None:
    """Run a pip-using command with the wheelhouse as the only index; fill it once if short."""
    no_index = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(WHEELHOUSE)}
    if run(args, cwd=cwd, **no_index).returncode == 0:
        return
    download = run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--dest", WHEELHOUSE, *needs], cwd=cwd
    )
    if download.returncode != 0:  # offline, or PyPI lacks a declared dependency: pip says which
        reason = download.stderr.strip().splitlines()[-1:] or ["no message"]
        pytest.skip(f"cannot fill the wheelhouse {WHEELHOUSE} with {needs}: {reason[0]}")
    for built_here in WHEELHOUSE.glob("raglab-*"):  # only dependencies are kept
        built_here.unlink()
    result = run(args, cwd=cwd, **no_index)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """A folder holding the sdist and the wheel built from it (`python -m build`)."""
    source = tmp_path_factory.mktemp("clone") / "raglab"
    shutil.copytree(ROOT, source, ignore=NOT_IN_A_CLONE)
    out = tmp_path_factory.mktemp("dist")
    build_requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]
    offline(
        [sys.executable, "-m", "build", "--outdir", out, source],
        cwd=source,
        needs=build_requires["requires"],
    )
    return out


@pytest.fixture(scope="module")
def wheel(dist: Path) -> Path:
    (found,) = dist.glob("raglab-*.whl")
    return found


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory) -> Path:
    """A fresh venv with the wheel and its declared dependencies; returns its bin folder."""
    root = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", root], check=True)
    bin_dir = root / "bin"
    # This environment's pip installs into the venv (--python); --no-compile: the .pyc files
    # of scipy and friends take longer to write than everything else here.
    install = [sys.executable, "-m", "pip", "--python", bin_dir / "python", "install"]
    offline([*install, "--quiet", "--no-compile", wheel], cwd=root, needs=[str(wheel)])
    return bin_dir


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    """A working directory with no checkout around it."""
    return tmp_path


def test_the_wheel_holds_every_module_of_the_source_tree_and_no_other(wheel: Path):
    in_wheel = {n for n in zipfile.ZipFile(wheel).namelist() if n.endswith(".py")}
    modules = {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "raglab").rglob("*.py")
        if "__pycache__" not in p.parts
    }
    assert any(m.count("/") >= 2 for m in modules)  # the subpackages are in the source tree
    assert sorted(modules - in_wheel) == []
    assert sorted(in_wheel - modules) == []


def test_the_wheel_holds_the_sample_data(wheel: Path):
    in_wheel = set(zipfile.ZipFile(wheel).namelist())
    data = ROOT / "data"
    files = {
        f"raglab/sample_data/{p.relative_to(data).as_posix()}"
        for p in data.rglob("*")
        if p.is_file()
    }
    assert "raglab/sample_data/questions.jsonl" in files
    assert sorted(files - in_wheel) == []


def test_the_wheel_holds_the_fitted_abstention_rules(wheel: Path):
    shipped = zipfile.ZipFile(wheel).read("raglab/generate/abstention_rules.json")
    assert shipped == (ROOT / "raglab" / "generate" / "abstention_rules.json").read_bytes()


def test_the_license_travels_with_the_package(dist: Path, wheel: Path):
    (sdist,) = dist.glob("raglab-*.tar.gz")
    metadata = zipfile.ZipFile(wheel)
    (license_file,) = [n for n in metadata.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
    assert metadata.read(license_file).decode() == (ROOT / "LICENSE").read_text()
    (meta,) = [n for n in metadata.namelist() if n.endswith(".dist-info/METADATA")]
    assert "License-Expression: MIT" in metadata.read(meta).decode().splitlines()
    assert sdist.stat().st_size > 0


def test_the_installed_package_comes_from_the_venv_and_has_one_version(venv: Path, elsewhere: Path):
    script = (
        "import importlib.metadata, json, raglab; print(json.dumps([raglab.__file__, "
        "raglab.__version__, importlib.metadata.version('raglab'), str(raglab.sample_corpus())]))"
    )
    result = run([venv / "python", "-c", script], cwd=elsewhere)
    assert result.returncode == 0, result.stderr
    module, version, distribution_version, corpus = json.loads(result.stdout)
    venv_root = venv.parent
    assert Path(module).is_relative_to(venv_root)  # not the checkout
    assert version == distribution_version
    assert Path(corpus).is_relative_to(venv_root)  # the packaged copy, not data/
    assert Path(corpus).name == "corpus" and Path(corpus).is_dir()


def test_raglab_help_runs(venv: Path, elsewhere: Path):
    result = run([venv / "raglab", "--help"], cwd=elsewhere)
    assert result.returncode == 0, result.stderr
    for command in ("ask", "index", "eval", "grade"):
        assert command in result.stdout


def test_raglab_ask_answers_from_the_packaged_sample_corpus(venv: Path, elsewhere: Path):
    corpus = run(
        [venv / "python", "-c", "import raglab; print(raglab.sample_corpus())"], cwd=elsewhere
    )
    assert corpus.returncode == 0, corpus.stderr
    question = "How many vacation days do I get?"
    result = run(
        [venv / "raglab", "ask", question, "--docs", corpus.stdout.strip(), "--tenant", "acme"],
        cwd=elsewhere,
    )
    assert result.returncode == 0, result.stderr
    assert "25" in result.stdout and "acme/policies/leave.md" in result.stdout


def test_raglab_grade_passes_a_complete_notebook(venv: Path, elsewhere: Path):
    submission = elsewhere / "submission.ipynb"  # as an instructor gets it: outside the repo
    shutil.copy(NOTEBOOK, submission)
    result = run(
        [venv / "raglab", "grade", submission, "--csv", elsewhere / "grades.csv"], cwd=elsewhere
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "FAIL" not in result.stdout
    with open(elsewhere / "grades.csv", newline="", encoding="utf-8") as file:
        rows = list(csv.DictReader(file))
    handed_out = ROOT / "exercises" / NOTEBOOK.name  # the course lists the exercises
    course = json.loads(handed_out.read_text(encoding="utf-8"))["metadata"]["raglab"]
    assert [row["exercise"] for row in rows] == [e["exercise"] for e in course["exercises"]]
    assert all(row["passed"] == "true" for row in rows), rows
