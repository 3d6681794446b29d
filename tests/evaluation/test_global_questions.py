"""The corpus-wide comparison: key points one by one, the budget, and leaks counted."""

from __future__ import annotations

import doctest

import pytest

from raglab import Index, sample_corpus
from raglab.embed.tokens import approx_tokens
from raglab.evaluation import global_questions
from raglab.evaluation.global_questions import chunks_within, compare_global, key_points
from raglab.evaluation.questions import load_questions
from raglab.graph.reader import GraphIndex
from raglab.records import Chunk
from raglab.samples import sample_global_questions


def test_doctests_pass():
    assert doctest.testmod(global_questions).failed == 0


def test_each_key_point_counts_on_its_own():
    assert key_points("Berlin [1] and **Leeds**.", ["berlin", "Leeds", "Lisbon"]) == 2
    assert key_points("", ["Berlin"]) == 0


def test_chunks_within_keeps_the_order_and_skips_what_does_not_fit():
    chunks = [Chunk(f"{n}.md", 0, "x" * size, 0, size) for n, size in enumerate([40, 400, 20])]
    kept = chunks_within(chunks, approx_tokens, 20)
    assert [c.doc_id for c in kept] == ["0.md", "2.md"]


@pytest.fixture(scope="module")
def rows():
    index = Index.from_folder(sample_corpus())
    questions = load_questions(sample_global_questions())
    return compare_global(index, GraphIndex(index), questions, count=approx_tokens, max_tokens=400)


def test_the_comparison_has_every_question_no_leak_and_keeps_the_budget(rows):
    assert len(rows) == 20 and sum(r.leaks for r in rows) == 0
    assert all(r.graph_tokens <= 400 and r.chunk_tokens <= 400 for r in rows)
    assert all(0 <= r.graph <= r.key_points and 0 <= r.chunks <= r.key_points for r in rows)
