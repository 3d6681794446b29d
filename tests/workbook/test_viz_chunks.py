"""Notebook 04's semantic-chunking figure draws what the engine's rule decides."""

import numpy as np
import pytest

from raglab.ingest.chunking import Chunker
from raglab.ingest.semantic import SentenceEmbedding
from raglab.records import Document
from raglab.workbook.viz_chunks import plot_similarity_curve, similarity_curve

TEXT = (
    "Leave is 25 days. Leave carries over. Leave needs approval. "
    "Laptops are replaced every four years. Laptops are insured. Laptops stay at work."
)


def by_topic(texts):
    rows = np.array([[float("Leave" in t), float("Laptop" in t), 0.1] for t in texts])
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_the_curve_finds_the_change_of_topic_where_the_chunker_cuts():
    embedding = SentenceEmbedding(by_topic)
    curve = similarity_curve(TEXT, embedding)
    assert len(curve.sentences) == 6 and len(curve.similarities) == 5
    assert curve.boundaries == (2,)  # between "Leave needs approval." and "Laptops are ..."
    assert curve.similarities[2] < curve.threshold
    chunks = Chunker(kind="semantic", embedding=embedding).split(Document(id="a.md", text=TEXT))
    assert chunks[1].text.startswith("Laptops are replaced")
    fig = plot_similarity_curve(curve)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()][3] == "Laptops are replaced ev\u2026"
    assert ax.get_title() == "1 boundary (vertical lines)"


def test_a_single_sentence_has_no_curve():
    with pytest.raises(ValueError, match="1 sentence\\(s\\): no gap to measure"):
        similarity_curve("Only one.", SentenceEmbedding(by_topic))
