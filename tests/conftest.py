"""Fixtures shared by the test modules."""

from pathlib import Path

import pytest

try:
    import qdrant_client  # noqa: F401  (only whether it is installed matters here)

    QDRANT_MISSING = ""
except ImportError:
    QDRANT_MISSING = "qdrant-client not installed (pip install raglab[qdrant])"

STORES = [
    "memory",
    "sqlite",
    pytest.param("qdrant", marks=pytest.mark.skipif(bool(QDRANT_MISSING), reason=QDRANT_MISSING)),
]
"""Every store kind the shared store tests run against; qdrant skipped when not installed."""

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "data" / "corpus"
QUESTIONS = ROOT / "data" / "questions.jsonl"


@pytest.fixture(scope="session")
def corpus_index():
    """The sample corpus indexed in memory with the default settings (built once)."""
    from raglab.pipeline import Index

    return Index.from_folder(CORPUS)


@pytest.fixture
def references_reachable(monkeypatch):
    """Let a test pass the reference (or a variation of it) to a check as a learner's code.

    Checks hide every reference while they run the learner's function; the tests of a
    check's logic use the reference as the model of a correct learner.
    """
    from raglab.workbook.checks import core

    monkeypatch.setattr(core, "_references", lambda fn=None: {})
