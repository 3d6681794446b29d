"""Tuning on labelled questions (raglab.evaluation.tuning): fusion curves, the learned reranker."""

from __future__ import annotations

import numpy as np
import pytest

from raglab import Index, Retriever, load_questions, sample_corpus, sample_questions
from raglab.evaluation.tuning import (
    CurvePoint,
    choose,
    collect_rankings,
    fit_reranker,
    fused_search,
    fusion_curve,
)
from raglab.retrieve.fusion import Fusion
from raglab.retrieve.rerank import FEATURES


def test_choose_takes_the_best_and_on_a_tie_the_weight_nearest_the_middle():
    points = [
        CurvePoint(Fusion("rrf", w), s) for w, s in [(0.0, 0.8), (0.3, 0.9), (0.6, 0.9), (1, 0.7)]
    ]
    assert choose(points) == Fusion("rrf", 0.6)


@pytest.fixture(scope="module")
def sample():
    index = Index.from_folder(sample_corpus(), embedder="hashing")
    questions = load_questions(sample_questions())[:40]
    retriever = index.retriever("hybrid")
    rankings = collect_rankings(retriever.dense, retriever.keyword, questions, depth=100)
    return index, questions, rankings


def test_fused_search_on_stored_rankings_is_the_retrievers_own_search(sample):
    index, questions, rankings = sample
    for fusion in (Fusion(), Fusion("minmax", 0.3)):
        search = fused_search(rankings, fusion)
        retriever = Retriever(index.store, index.embedder, "hybrid", fusion=fusion)
        for q in questions[:10]:
            assert search(q, 5) == retriever.search(q.question, q.asker, 5)


def test_a_curve_has_one_point_per_weight_and_its_ends_are_the_single_rankers(sample):
    _, questions, rankings = sample
    curve = fusion_curve(rankings, questions, weights=[0.0, 0.5, 1.0])
    assert [p.fusion.dense_weight for p in curve] == [0.0, 0.5, 1.0]
    assert all(0.0 <= p.ndcg_at_10 <= 1.0 for p in curve)
    # The chosen fusion is never below either end on the questions it was chosen on.
    best = max(p.ndcg_at_10 for p in curve)
    assert [p.ndcg_at_10 for p in curve if p.fusion == choose(curve)] == [best]


def test_choose_refuses_an_empty_curve():
    with pytest.raises(ValueError, match="no fusion to choose"):
        choose([])


def test_fitting_learns_the_feature_that_tells_relevant_chunks_apart():
    rng = np.random.default_rng(0)
    x = rng.random((200, len(FEATURES)))
    relevant = x[:, FEATURES.index("title_match")] > 0.7
    reranker = fit_reranker(x, relevant, profile="toy")
    weights = dict(zip(FEATURES, reranker.weights))
    assert max(weights, key=weights.get) == "title_match"
    assert reranker.profile == "toy" and len(reranker.mean) == len(FEATURES)
    with pytest.raises(ValueError, match="both True and False"):
        fit_reranker(x, np.ones(200, bool))
    with pytest.raises(ValueError, match="x must have shape"):
        fit_reranker(x[:, :3], relevant)
