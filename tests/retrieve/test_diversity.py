"""Near-duplicate removal and MMR (raglab.retrieve.diversity), alone and inside a Retriever."""

from __future__ import annotations

import numpy as np
import pytest

from raglab.embed.embedders import HashingEmbedder
from raglab.ingest.chunking import Chunker
from raglab.query import Retriever
from raglab.records import Chunk, Document, Hit, Principal
from raglab.retrieve.diversity import Diversity, dedup, jaccard, mmr, relevance_of, shingles
from raglab.store.indexing import sync
from raglab.store.memory import MemoryStore

BOILERPLATE = (
    "Questions about this page? Write to the people team at people@acme.example "
    "or call extension 4400 between nine and five."
)


def hit(doc_id: str, text: str, score: float, index: int = 0) -> Hit:
    return Hit(Chunk(doc_id, index, text, 0, len(text)), score)


def test_shingles_are_word_runs_and_short_texts_are_one_shingle():
    assert shingles("a b c d", 3) == {("a", "b", "c"), ("b", "c", "d")}
    assert shingles("Hello, World", 3) == {("hello", "world")}
    assert shingles("  ", 3) == frozenset()


def test_jaccard_edges():
    assert jaccard(frozenset(), frozenset()) == 0.0
    assert jaccard(frozenset("ab"), frozenset("ab")) == 1.0
    assert jaccard(frozenset("ab"), frozenset("cd")) == 0.0


def test_dedup_drops_repeated_boilerplate_and_keeps_the_best_ranked_copy():
    hits = [
        hit("leave.md", BOILERPLATE, 0.9),
        hit("pay.md", "Salaries are paid on the last working day of the month.", 0.8),
        hit("benefits.md", BOILERPLATE.replace("4400", "4401"), 0.7),  # one word changed
    ]
    assert [h.chunk.doc_id for h in dedup(hits)] == ["leave.md", "pay.md"]
    # A threshold of 1 drops exact copies only: the changed one stays.
    assert len(dedup(hits, threshold=1.0)) == 3


def test_dedup_catches_half_overlapping_windows_only_below_the_default_threshold():
    words = " ".join(f"w{i}" for i in range(40))
    first, second = words[: len(words) // 2 + 40], words[len(words) // 2 - 40 :]
    hits = [hit("a.md", first, 1.0, 0), hit("a.md", second, 0.9, 1)]
    assert len(dedup(hits)) == 2  # a 30% overlap is not a duplicate at 0.7
    assert len(dedup(hits, threshold=0.1)) == 1


def test_dedup_validates_the_threshold():
    with pytest.raises(
        ValueError, match=r"threshold must be a finite number from 0 to 1 \(got threshold=1.5\)"
    ):
        dedup([], threshold=1.5)


def test_mmr_with_lambda_one_is_the_ranking_and_with_less_prefers_novelty():
    relevance = [1.0, 0.9, 0.8, 0.1]
    similarity = np.array(
        [[1, 0.95, 0.9, 0], [0.95, 1, 0.9, 0], [0.9, 0.9, 1, 0], [0, 0, 0, 1]], dtype=float
    )
    assert mmr(relevance, similarity, 3, lambda_=1.0) == [0, 1, 2]
    assert mmr(relevance, similarity, 3, lambda_=0.5) == [0, 3, 1]


def test_mmr_edges_and_ties():
    assert mmr([], np.zeros((0, 0)), 3) == []
    assert mmr([0.5], np.ones((1, 1)), 3) == [0]  # fewer items than k
    assert mmr([0.5, 0.5], np.eye(2), 2) == [0, 1]  # a tie goes to the lower index
    with pytest.raises(ValueError, match=r"similarity must be 2 x 2"):
        mmr([0.5, 0.5], np.eye(3), 2)
    with pytest.raises(ValueError, match=r"lambda_ must be a finite number from 0 to 1"):
        mmr([0.5], np.eye(1), 1, lambda_=-0.1)


def slow_mmr(relevance, similarity, k: int, lam: float) -> list[int]:
    """MMR as the formula reads: each step, the best gain among the items left."""
    chosen: list[int] = []
    for _ in range(min(k, len(relevance))):
        gains = {
            i: lam * relevance[i] - (1 - lam) * max((similarity[i, j] for j in chosen), default=0)
            for i in range(len(relevance))
            if i not in chosen
        }
        chosen.append(max(gains, key=lambda i: (gains[i], -i)))
    return chosen


def test_mmr_against_a_slow_obvious_reference():
    rng = np.random.default_rng(7)
    for _ in range(20):
        n = int(rng.integers(1, 9))
        relevance = rng.random(n)
        vectors = rng.normal(size=(n, 4))
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        similarity = vectors @ vectors.T
        lam, k = float(rng.random()), int(rng.integers(1, n + 1))
        assert mmr(relevance, similarity, k, lambda_=lam) == slow_mmr(relevance, similarity, k, lam)


def test_relevance_is_min_max_rescaled():
    hits = [hit("a", "x", 3.0), hit("b", "y", 2.0), hit("c", "z", 1.0)]
    assert relevance_of(hits) == [1.0, 0.5, 0.0]
    assert relevance_of(hits[:1]) == [1.0]
    assert relevance_of([]) == []


def test_diversity_settings_are_validated():
    with pytest.raises(
        ValueError, match=r"candidates must be an integer >= 1 \(got candidates=0\)"
    ):
        Diversity(candidates=0)
    with pytest.raises(ValueError, match=r"lambda_ must be a finite number from 0 to 1"):
        Diversity(lambda_=2)


def one_document_store() -> tuple[MemoryStore, HashingEmbedder]:
    """One long document on expenses in five sections, and two short ones on expenses too."""
    sections = "\n\n".join(
        f"## Expense rule {i}\n\nExpense claims for travel costs, rule {i}: receipts and limits "
        f"for the expense claim number {i} apply to every trip."
        for i in range(5)
    )
    docs = [
        Document("policy.md", sections),
        Document("faq.md", "## FAQ\n\nExpense claims are paid back by bank transfer."),
        Document("travel.md", "## Travel\n\nBook travel costs through the travel desk."),
    ]
    store, embedder = MemoryStore(), HashingEmbedder()
    sync(store, docs, chunker=Chunker(size=200, overlap=0), embedder=embedder)
    return store, embedder


def test_mmr_lets_other_documents_into_a_top_k_one_document_filled():
    store, embedder = one_document_store()
    ann = Principal("ann")
    question = "expense claims travel costs"
    plain = Retriever(store, embedder, "dense").search(question, ann, k=4)
    assert {h.chunk.doc_id for h in plain} == {"policy.md"}
    diverse = Retriever(store, embedder, "dense", diversity=Diversity(lambda_=0.5))
    picked = diverse.search(question, ann, k=4)
    assert len(picked) == 4
    assert picked[0] == plain[0]  # MMR's first pick is the most relevant chunk
    assert {"faq.md", "travel.md"} & {h.chunk.doc_id for h in picked}


def test_diversity_with_lambda_one_and_no_dedup_changes_nothing():
    store, embedder = one_document_store()
    ann = Principal("ann")
    for method in ("dense", "bm25", "hybrid"):
        plain = Retriever(store, embedder, method).search("expense travel", ann, k=3)
        same = Retriever(
            store, embedder, method, diversity=Diversity(lambda_=1.0, dedup=None)
        ).search("expense travel", ann, k=3)
        assert [h.chunk.id for h in same] == [h.chunk.id for h in plain]
