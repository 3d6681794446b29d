"""Fusion: reciprocal rank fusion, weighted RRF and min-max fusion, the weight's two ends."""

from __future__ import annotations

import pytest

from raglab import Chunk, Hit, reciprocal_rank_fusion
from raglab.retrieve.fusion import RRF_K, Fusion, min_max, min_max_fusion, weighted_rrf


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
    ],
)
def test_bad_arguments_are_refused_by_name(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def _hit(name: str, score: float = 1.0) -> Hit:
    return Hit(Chunk(name, 0, name, 0, len(name)), score)


def test_rrf_sums_reciprocal_ranks():
    a, b, c = _hit("a"), _hit("b"), _hit("c")
    fused = reciprocal_rank_fusion([[a, b], [b, c]], k=3)
    assert [h.chunk.doc_id for h in fused] == ["b", "a", "c"]
    assert fused[0].score == pytest.approx(1 / (RRF_K + 2) + 1 / (RRF_K + 1))
    assert fused[1].score == pytest.approx(1 / (RRF_K + 1))


def test_rrf_breaks_ties_by_chunk_id_and_cuts_at_k():
    fused = reciprocal_rank_fusion([[_hit("z")], [_hit("a")]], k=1)
    assert [h.chunk.doc_id for h in fused] == ["a"]
    assert reciprocal_rank_fusion([], k=3) == []
