"""Fixtures shared by the test modules."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "data" / "corpus"
QUESTIONS = ROOT / "data" / "questions.jsonl"


@pytest.fixture(scope="session")
def corpus_index():
    """The sample corpus indexed in memory with the default settings (built once)."""
    from raglab.pipeline import Index

    return Index.from_folder(CORPUS)
