"""Start-up: `import raglab` and a cold `raglab ask` load only what they use.

The command line answers one question per process, so every module a command imports is
paid on every question. Each test runs a fresh interpreter, as a user's shell would, and
reads the modules it loaded from `sys.modules`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import import_module
from pathlib import Path

import pytest

import raglab
from raglab.pipeline import Index

CORPUS = Path(__file__).resolve().parent.parent / "data" / "corpus"

NOT_ON_THE_QUERY_PATH = (
    "raglab.evaluation.calibration",  # fitting the abstention rule
    "raglab.ingest.credentials",  # scanning files being loaded
    "raglab.embed.embedding_cache",
    "raglab.evaluation",  # the question-set runner
    "raglab.evaluation.metrics",  # and its metrics
    "raglab.evaluation.questions",  # and the question set
    "raglab.embed.minilm",  # the neural embedder
    "raglab.embed.minilm_network",
    "raglab.generate.openai_http",  # a remote generator
    "raglab.generate.llm_rerank",  # a language model's steps, when one is set
    "raglab.generate.llm_rewrite",
    "raglab.evaluation.tuning",  # choosing settings on labelled questions
    "raglab.samples",
    "raglab.embed.tokens",  # a token budget
    "raglab.workbook.viz",
    "raglab.embed.wordpiece",  # and its tokenizer
    "raglab.workbook",  # the teaching machinery
    "difflib",
    "matplotlib",
    "qdrant_client",
    "sklearn",
)
"""Modules a cold `raglab ask --index FILE` (hashing embedder, offline answer) never uses."""


def modules_after(code: str) -> set[str]:
    """The modules loaded once `code` has run in a fresh interpreter (stdout is not read)."""
    report = "import json, sys; print(json.dumps(sorted(sys.modules)), file=sys.stderr)"
    done = subprocess.run(
        [sys.executable, "-c", f"{code}\n{report}"], capture_output=True, text=True, check=True
    )
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


def test_import_raglab_loads_no_engine_module_and_not_numpy() -> None:
    loaded = modules_after("import raglab")
    assert sorted(m for m in loaded if m.startswith("raglab.")) == []
    assert "numpy" not in loaded


def test_every_public_name_is_importable_from_the_package() -> None:
    for module, names in raglab.PUBLIC.items():
        home = import_module(f"raglab.{module}")
        for name in names:
            assert getattr(raglab, name) is getattr(home, name), name
    assert set(raglab.__all__) <= set(dir(raglab))
    with pytest.raises(AttributeError, match="module 'raglab' has no attribute 'chunks'"):
        raglab.chunks  # noqa: B018 — a misspelt name fails as it does for any module


def test_a_cold_ask_from_an_index_file_loads_only_the_query_path(tmp_path) -> None:
    index = tmp_path / "corpus.sqlite"
    Index.from_folder(CORPUS, path=index)
    argv = ["raglab", "ask", "What does error E-204 mean?", "--index", str(index)]
    ask = (
        f"import runpy, sys; sys.argv = {argv + ['--tenant', 'globex']!r}\n"
        "try:\n    runpy.run_module('raglab', run_name='__main__')\n"
        "except SystemExit as end:\n    assert not end.code, end.code"
    )
    loaded = modules_after(ask)
    assert "raglab.pipeline" in loaded  # it did ask
    assert sorted(set(NOT_ON_THE_QUERY_PATH) & loaded) == []


def test_a_cold_ask_starts_numpy_with_one_blas_thread_unless_the_user_chose():
    probe = (
        "import os, sys; from raglab.cli import one_blas_thread_for_ask; "
        "one_blas_thread_for_ask(sys.argv[1:]); print(os.environ.get('OPENBLAS_NUM_THREADS'))"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}

    def threads(*argv: str, **extra: str) -> str:
        done = subprocess.run(
            [sys.executable, "-c", probe, *argv],
            env={**env, **extra},
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip()

    assert threads("ask", "q") == "1"
    assert threads("index", "docs") == "None"  # indexing embeds in batches: BLAS threads help
    assert threads("ask", "q", OPENBLAS_NUM_THREADS="2") == "2"
