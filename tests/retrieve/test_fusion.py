"""Weighted fusion: RRF as its special case, the weight's two ends, choosing it on questions."""

from __future__ import annotations

import pytest

from raglab import (
    Chunk,
    Hit,
    Index,
    Principal,
    Retriever,
    load_questions,
    reciprocal_rank_fusion,
    sample_corpus,
    sample_questions,
)
from raglab.retrieve.fusion import (
    CurvePoint,
    Fusion,
    choose,
    collect_rankings,
    fused_search,
    fusion_curve,
    min_max,
    min_max_fusion,
    weighted_rrf,
)


def hits(*pairs: tuple[str, float]) -> list[Hit]:
    return [Hit(Chunk(doc, 0, doc, 0, len(doc)), score) for doc, score in pairs]


DENSE = hits(("a", 0.9), ("b", 0.8), ("c", 0.1))
KEYWORD = hits(("c", 12.0), ("d", 11.0), ("a", 2.0))


def ids(found: list[Hit]) -> list[str]:
    return [h.chunk.doc_id for h in found]


def test_weights_of_one_are_reciprocal_rank_fusion_exactly():
    assert weighted_rrf([DENSE, KEYWORD], [1, 1], 4) == reciprocal_rank_fusion([DENSE, KEYWORD], 4)
    assert Fusion().fuse(DENSE, KEYWORD, 4) == reciprocal_rank_fusion([DENSE, KEYWORD], 4)


def test_the_ends_of_the_weight_are_the_single_rankings():
    assert ids(Fusion("rrf", 0.0).fuse(DENSE, KEYWORD, 3)) == ["c", "d", "a"]
    assert ids(Fusion("rrf", 1.0).fuse(DENSE, KEYWORD, 3)) == ["a", "b", "c"]
    assert ids(Fusion("minmax", 0.0).fuse(DENSE, KEYWORD, 3)) == ["c", "d", "a"]
    assert ids(Fusion("minmax", 1.0).fuse(DENSE, KEYWORD, 2)) == ["a", "b"]


def test_min_max_keeps_how_far_apart_scores_are():
    assert min_max(KEYWORD) == {"c#0": 1.0, "d#0": 0.9, "a#0": 0.0}
    assert min_max(hits(("x", 3.0), ("y", 3.0))) == {"x#0": 1.0, "y#0": 1.0}
    assert min_max([]) == {}
    # a: 0.5·1 + 0.5·0 = 0.5, c: 0.5·0 + 0.5·1 = 0.5 (a tie: by id), d: 0.5·0.9 = 0.45,
    # b: 0.5·0.875 = 0.4375. d, close behind BM25's best, passes b.
    fused = min_max_fusion([DENSE, KEYWORD], [0.5, 0.5], 4)
    assert ids(fused) == ["a", "c", "d", "b"]
    assert [h.score for h in fused] == pytest.approx([0.5, 0.5, 0.45, 0.4375])


def test_ties_are_broken_by_chunk_id():
    assert ids(weighted_rrf([hits(("b", 1)), hits(("a", 1))], [1, 1], 2)) == ["a", "b"]


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: Fusion("max"), "unknown fusion 'max'; choose from: rrf, minmax"),
        (lambda: Fusion("rrf", 1.5), "dense_weight must be a finite number from 0 to 1"),
        (lambda: weighted_rrf([DENSE], [1, 2], 3), r"one weight per ranking \(got 2 weights for 1"),
        (lambda: weighted_rrf([DENSE], [-1], 3), "weight must be a finite number >= 0"),
        (lambda: min_max_fusion([DENSE], [1], 0), "k must be an integer >= 1"),
        (lambda: choose([]), "nothing to choose|no fusion to choose"),
    ],
)
def test_bad_arguments_are_refused_by_name(call, match):
    with pytest.raises(ValueError, match=match):
        call()


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


def test_the_retriever_fuses_with_the_fusion_it_is_given(sample):
    index, questions, _ = sample
    ann = Principal("ann", "acme")
    plain = Retriever(index.store, index.embedder, "hybrid")
    same = Retriever(index.store, index.embedder, "hybrid", fusion=Fusion())
    keyword_only = Retriever(index.store, index.embedder, "hybrid", fusion=Fusion("rrf", 0.0))
    for q in questions[:10]:
        assert same.search(q.question, ann, 5) == plain.search(q.question, ann, 5)
        bm25 = [h.chunk.id for h in plain.keyword(q.question, ann, 5)]
        assert [h.chunk.id for h in keyword_only.search(q.question, ann, 5)][: len(bm25)] == bm25


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
