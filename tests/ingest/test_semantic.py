import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raglab.ingest.chunking import Chunker
from raglab.ingest.semantic import SentenceEmbedding, adjacent_similarities, boundaries
from raglab.records import Document

TOPICS = ("leave", "expenses", "laptop")


def topic_vectors(texts):
    """A toy embedder: one axis per topic word, so a change of topic is exact."""
    rows = np.array([[float(topic in text.lower()) for topic in TOPICS] + [0.1] for text in texts])
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


TOPICAL = SentenceEmbedding(topic_vectors)
TEXT = (
    "Leave is 25 days. Leave carries over. Leave needs approval. Leave starts in January. "
    "Expenses are paid monthly. Expenses need receipts. Expenses go to finance. "
    "Expenses over 100 euros need approval."
)


def test_similarities_and_boundaries_by_hand():
    v = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    assert adjacent_similarities(v, window=1) == pytest.approx([1.0, 0.0, 1.0])
    # window 2: gap 0 compares row 0 with rows 1-2, gap 1 rows 0-1 with rows 2-3
    assert adjacent_similarities(v, window=2) == pytest.approx([2**-0.5, 0.0, 2**-0.5])
    assert boundaries([1.0, 0.0, 1.0], percentile=25) == [1]
    assert boundaries([]) == [] and boundaries([0.3]) == [] and boundaries([0.2, 0.2]) == []
    assert adjacent_similarities(np.zeros((1, 3))).shape == (0,)


def test_a_boundary_falls_where_the_topic_changes():
    doc = Document(id="a.md", text=TEXT)
    chunks = Chunker(kind="semantic", size=1000, overlap=0, embedding=TOPICAL).split(doc)
    assert [c.text.split()[0] for c in chunks] == ["Leave", "Expenses"]
    assert chunks[1].text.startswith("Expenses are paid monthly.")


def test_sections_are_boundaries_and_headings_recorded():
    doc = Document(id="a.md", text="# Leave\n\nLeave is 25 days.\n\n# Leave too\n\nLeave again.")
    chunks = Chunker(kind="semantic", embedding=TOPICAL).split(doc)
    assert [c.heading for c in chunks] == ["Leave", "Leave too"]


def test_no_chunk_exceeds_the_size_or_the_embedders_tokens():
    words = SentenceEmbedding(topic_vectors, lambda text: len(text.split()), 6)
    doc = Document(id="a.md", text=TEXT + " " + "x" * 130)
    chunks = Chunker(kind="semantic", size=60, overlap=10, embedding=words).split(doc)
    for chunk in chunks:
        assert chunk.end - chunk.start <= 60 and len(chunk.text.split()) <= 6
        assert doc.text[chunk.start : chunk.end] == chunk.text


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.sampled_from(["Leave is long.", "Expenses paid.", "Laptop lost. ", "\n\n"]), max_size=30
    ),
    st.integers(min_value=15, max_value=200),
)
def test_offsets_hold_and_chunks_follow_in_order(parts, size):
    doc = Document(id="a.md", text=" ".join(parts))
    chunker = Chunker(kind="semantic", size=size, overlap=5, embedding=TOPICAL)
    chunks = chunker.split(doc)
    assert chunks == chunker.split(doc)  # deterministic
    for before, after in itertools.pairwise(chunks):
        assert before.end <= after.start
    for chunk in chunks:
        assert doc.text[chunk.start : chunk.end] == chunk.text and chunk.text.strip() == chunk.text
        assert 0 < chunk.end - chunk.start <= size


def test_semantic_needs_the_embedder_and_records_its_rule():
    with pytest.raises(ValueError, match="kind='semantic' needs the index's embedder"):
        Chunker(kind="semantic").split(Document(id="a.md", text=TEXT))
    assert Chunker(kind="semantic").params() == {
        "kind": "semantic",
        "size": 800,
        "overlap": 100,
        "version": 1,
        "window": 2,
        "percentile": 25,
    }
